"""Metrics: aggregate one system's rows into summary values.

Every metric has a ``name`` and ``compute(rows) -> dict[str, float]`` returning plain
floats. :func:`summarize` runs a list of them per system; :func:`default_metrics`
is the list used when the user gives none. :mod:`.quality` holds the SQuAD answer
scores used by :class:`~pytest_context_bench.evaluators.AnswerQuality`.
"""

from __future__ import annotations

from . import quality
from .assertions import AssertionBreakdown
from .latency import Latency
from .per_qa_type import PerQATypeMetric
from .scores import ErrorRate, MeanScore, PassRate, PerDatasetBreakdown, row_score
from .summary import default_metrics, summarize
from .token_stats import CompressionRatio, CostOfPass, LLMTokens, MoneyCost, ParetoRank

__all__ = [
    "AssertionBreakdown",
    "CompressionRatio",
    "CostOfPass",
    "ErrorRate",
    "Latency",
    "MeanScore",
    "LLMTokens",
    "MoneyCost",
    "ParetoRank",
    "PassRate",
    "PerDatasetBreakdown",
    "PerQATypeMetric",
    "default_metrics",
    "quality",
    "row_score",
    "summarize",
]
