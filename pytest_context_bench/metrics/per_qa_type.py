"""PerQATypeMetric: the mean score of each question type of a memory benchmark."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from .scores import _check_field, primary_field, row_score
from .stats import mean

if TYPE_CHECKING:
    from ..results import EvalRow

__all__ = ["PerQATypeMetric", "UNKNOWN_QA_TYPE"]

#: The type of a row whose metadata has no ``qa_type``.
UNKNOWN_QA_TYPE = "unknown"


@dataclass
class PerQATypeMetric:
    """Mean score per question type: ``{f"{field}_{type}": ..., f"{field}_mean": ...}``.

    Rows are grouped by ``metadata["qa_type"]`` (``"unknown"`` when absent), as
    :func:`~pytest_context_bench.memory.evaluate_memory` records it. Keys are sorted;
    ``{field}_mean`` is the mean over every scored row. No rows gives ``{}``.

    :param score_field: the field to average; ``None`` (the default) uses each row's
        primary field (``metadata["score_field"]``, else ``"f1"``), so a run whose
        rows name different primary fields gets one set of keys per field.

    Differences from upstream (``score_field="f1"`` there): rows without the field
    are left out instead of counted as 0, an errored row counts as 0.0 (as in
    :class:`~pytest_context_bench.metrics.MeanScore`), and a type with no scored row
    gives ``nan``. A question type literally named ``mean`` would share its key with
    the overall mean; the overall mean is the one reported.
    """

    score_field: str | None = None
    name = "per_qa_type"

    def __post_init__(self) -> None:
        _check_field(self.score_field)

    def compute(self, rows: list[EvalRow]) -> dict[str, float]:
        """:param rows: the rows of one system."""
        by_type: dict[tuple[str, str], list[float]] = {}
        overall: dict[str, list[float]] = {}
        for r in rows:
            field = primary_field(r, self.score_field)
            qa_type = str(r.metadata.get("qa_type") or UNKNOWN_QA_TYPE)
            # Every type seen gets a key, even when none of its rows is scored
            # (nan then), so a type never silently disappears from the table.
            group = by_type.setdefault((field, qa_type), [])
            totals = overall.setdefault(field, [])
            score = row_score(r, self.score_field)
            if score is not None:
                group.append(score)
                totals.append(score)
        out = {
            f"{field}_{qa_type}": mean(by_type[(field, qa_type)])
            for field, qa_type in sorted(by_type)
        }
        for field in sorted(overall):
            out[f"{field}_mean"] = mean(overall[field])
        return out
