"""Token metrics: CompressionRatio, CostOfPass, and the cross-system ParetoRank."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .scores import _check_field, _check_threshold, _passes
from .stats import mean

if TYPE_CHECKING:
    from ..results import EvalRow

__all__ = ["CompressionRatio", "CostOfPass", "LLMTokens", "MoneyCost", "ParetoRank"]


@dataclass
class CompressionRatio:
    """How much a System shrinks its prompt: ``1 - sum(output) / sum(input)``.

    Returns ``compression_ratio``, ``mean_input_tokens`` and ``mean_output_tokens``
    over the rows that did not error (an errored row has no meaningful output). A
    positive ratio is compression, a negative one expansion.

    Differences from upstream: errored rows are left out; an input sum of 0, or no
    rows, gives ``nan`` rather than 0.0 (which would read as "no compression").
    """

    name = "compression_ratio"

    def compute(self, rows: list[EvalRow]) -> dict[str, float]:
        """:param rows: the rows of one system."""
        ok = [r for r in rows if r.error is None]
        total_in = sum(r.input_tokens for r in ok)
        total_out = sum(r.output_tokens for r in ok)
        # A ratio of sums, not a mean of ratios: long examples weigh more, and a row
        # with 0 input tokens cannot blow it up.
        ratio = 1.0 - total_out / total_in if total_in else math.nan
        return {
            "compression_ratio": float(ratio),
            "mean_input_tokens": mean(r.input_tokens for r in ok),
            "mean_output_tokens": mean(r.output_tokens for r in ok),
        }


@dataclass
class CostOfPass:
    """Output tokens spent per passing example: ``cost_of_pass``, ``num_passing``.

    ``cost_of_pass = sum(output_tokens over every row) / num_passing``; errored rows
    count in the cost (their tokens were spent) and never pass. No passing row (or no
    row) gives ``inf``. Lower is better (arXiv:2504.13359).

    :param threshold: the inclusive pass mark, as :class:`~.scores.PassRate`.
    :param score_field: as in :class:`~.scores.MeanScore`; rows without the field
        never pass.

    Differences from upstream: ``num_passing`` is always a float (upstream returned
    int 0 with no rows) and the default field is each row's primary field.
    """

    threshold: float = 0.7
    score_field: str | None = None
    name = "cost_of_pass"

    def __post_init__(self) -> None:
        _check_threshold(self.threshold)
        _check_field(self.score_field)

    def compute(self, rows: list[EvalRow]) -> dict[str, float]:
        """:param rows: the rows of one system."""
        total_out = sum(r.output_tokens for r in rows)
        passing = sum(1 for r in rows if _passes(r, self.threshold, self.score_field))
        cost = total_out / passing if passing else math.inf
        return {"cost_of_pass": float(cost), "num_passing": float(passing)}


@dataclass
class MoneyCost:
    """Money spent, from the usage the HTTP transports measured and the price table.

    Returns ``cost_usd`` (the System's calls), ``judge_cost_usd`` (the evaluators'
    calls: LLM judges, embeddings), ``total_cost_usd`` (both), ``cost_of_pass_usd``
    (``cost_usd`` per passing example, as :class:`CostOfPass` does with tokens; no
    passing row gives ``inf``) and ``saved_usd`` (the part answered from the cache).
    A row whose calls used a model without a price makes the sums ``nan`` (unknown,
    which breaches a gate on them); a suite with no priced call gives ``nan``. Cache
    hits cost what the call would have: a replayed run reports what it would cost.
    ``judge_cost_usd`` is left out when no evaluator made a call.

    :param threshold: the inclusive pass mark, as :class:`~.scores.PassRate`.
    :param score_field: as in :class:`~.scores.MeanScore`.
    """

    threshold: float = 0.7
    score_field: str | None = None
    name = "cost_usd"

    def __post_init__(self) -> None:
        _check_threshold(self.threshold)
        _check_field(self.score_field)

    def compute(self, rows: list[EvalRow]) -> dict[str, float]:
        """:param rows: the rows of one system."""
        sums = {"cost_usd": 0.0, "judge_cost_usd": 0.0, "saved_usd": 0.0}
        seen = {"cost_usd": False, "judge_cost_usd": False, "saved_usd": False}
        for r in rows:
            md = r.metadata
            for key, usage in (
                ("cost_usd", "llm_usage"),
                ("judge_cost_usd", "judge_usage"),
                ("saved_usd", "llm_usage"),
            ):
                if usage not in md:
                    continue
                value = md.get(key)
                if isinstance(value, (int, float)) and not isinstance(value, bool):
                    sums[key] += float(value)
                    seen[key] = True
                else:
                    sums[key] = math.nan  # a call without a price: unknown
                    seen[key] = True
        out = {k: (v if seen[k] else math.nan) for k, v in sums.items()}
        judge = out["judge_cost_usd"] if seen["judge_cost_usd"] else 0.0
        if not seen["judge_cost_usd"]:
            del out["judge_cost_usd"]  # no judge call: no judge column
        out["total_cost_usd"] = (
            out["cost_usd"] + judge if seen["cost_usd"] or seen["judge_cost_usd"] else math.nan
        )
        if not seen["cost_usd"] and seen["judge_cost_usd"]:
            out["total_cost_usd"] = judge
        passing = sum(1 for r in rows if _passes(r, self.threshold, self.score_field))
        cost = out["cost_usd"]
        out["cost_of_pass_usd"] = (
            cost if math.isnan(cost) else cost / passing if passing else math.inf
        )
        return out


def _usage_tokens(row: EvalRow, key: str) -> float:
    """One of a row's measured System usage counts; 0 for a row that made no call."""
    usage = row.metadata.get("llm_usage")
    if not isinstance(usage, Mapping):
        return 0.0
    value = usage.get(key)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return 0.0
    return float(value) if math.isfinite(value) and value >= 0 else 0.0


@dataclass
class LLMTokens:
    """The LLM's own tokens, as its replies reported them (the usage the HTTP
    transport measured, cache hits included), not the text counts of
    :class:`CompressionRatio` and :class:`CostOfPass`.

    Returns ``llm_prompt_tokens`` and ``llm_completion_tokens`` (the System's calls,
    mean per example; a row that made no call counts 0, an errored row what it
    spent) and ``llm_tokens_per_pass`` (prompt plus completion tokens over every
    row, per passing example; ``inf`` when none passes). The evaluators' calls (LLM
    judges) are not counted: they are the benchmark's cost, not the System's. No
    row with measured usage gives no key (a gate on them sees ``nan`` and fails).

    :param threshold: the inclusive pass mark, as :class:`~.scores.PassRate`.
    :param score_field: as in :class:`~.scores.MeanScore`.
    """

    threshold: float = 0.7
    score_field: str | None = None
    name = "llm_tokens"

    def __post_init__(self) -> None:
        _check_threshold(self.threshold)
        _check_field(self.score_field)

    def compute(self, rows: list[EvalRow]) -> dict[str, float]:
        """:param rows: the rows of one system."""
        if not any("llm_usage" in r.metadata for r in rows):
            return {}  # nothing measured: no column, and a gate on it sees nan
        prompt = math.fsum(_usage_tokens(r, "prompt_tokens") for r in rows)
        completion = math.fsum(_usage_tokens(r, "completion_tokens") for r in rows)
        passing = sum(1 for r in rows if _passes(r, self.threshold, self.score_field))
        return {
            "llm_prompt_tokens": prompt / len(rows),
            "llm_completion_tokens": completion / len(rows),
            "llm_tokens_per_pass": (prompt + completion) / passing if passing else math.inf,
        }


def _point(
    values: Mapping[str, float], quality_field: str, cost_field: str
) -> tuple[float, float]:
    """(quality, cost) of one system; missing or nan is the worst possible value."""
    q = values.get(quality_field)
    c = values.get(cost_field)
    quality = -math.inf if q is None or math.isnan(float(q)) else float(q)
    cost = math.inf if c is None or math.isnan(float(c)) else float(c)
    return quality, cost


def _dominates(b: tuple[float, float], a: tuple[float, float]) -> bool:
    """True when ``b`` is at least as good as ``a`` on both axes and better on one."""
    return b[0] >= a[0] and b[1] <= a[1] and (b[0] > a[0] or b[1] < a[1])


@dataclass
class ParetoRank:
    """Pareto front of each system on (quality up, cost down).

    A ranking needs every system, so :meth:`compute` (one system's rows) returns
    ``{}``; :func:`~pytest_context_bench.metrics.summarize` calls
    :meth:`compute_across` on the finished summary, which adds ``pareto_rank``.

    :param quality_field: the summary key to maximise.
    :param cost_field: the summary key to minimise.

    Differences from upstream: the rank is the front number of non-dominated sorting
    (1 = the Pareto front, 2 = the front once rank 1 is removed, ...), not
    ``1 + the number of systems that dominate it``; a(0.9, 100), b(0.8, 50),
    c(0.7, 200) give a=1, b=1, c=2 (upstream: c=3). A missing or nan quality counts
    as ``-inf`` (upstream: 0) and a missing or nan cost as ``inf``. Identical points
    share a rank. The constructor's default quality field is ``"mean_score"``
    (upstream: ``"score"``, which no metric produces); :meth:`compute` returns ``{}``
    instead of a placeholder 0.0.
    """

    quality_field: str = "mean_score"
    cost_field: str = "cost_of_pass"
    name = "pareto_rank"

    def compute(self, rows: list[EvalRow]) -> dict[str, float]:
        """Always ``{}``: one system's rows cannot be ranked.

        :param rows: ignored.
        """
        return {}

    @staticmethod
    def rank_systems(
        summary: Mapping[str, Mapping[str, float]],
        quality_field: str = "mean_score",
        cost_field: str = "cost_of_pass",
    ) -> dict[str, int]:
        """Front number of every system, by non-dominated sorting.

        System B dominates A when ``q_B >= q_A`` and ``c_B <= c_A`` with at least one
        of them strict.

        :param summary: ``{system: {key: value}}``, e.g. ``EvalResult.summary``.
        :param quality_field: the key to maximise.
        :param cost_field: the key to minimise.
        :return: ``{system: rank}`` in the summary's order, ranks starting at 1.
        """
        points = {s: _point(v, quality_field, cost_field) for s, v in summary.items()}
        ranks: dict[str, int] = {}
        remaining = list(points)
        front = 0
        # O(n^2) per front; the number of systems in a run is small.
        while remaining:
            front += 1
            current = [
                s
                for s in remaining
                if not any(_dominates(points[o], points[s]) for o in remaining)
            ]
            for s in current:
                ranks[s] = front
            remaining = [s for s in remaining if s not in ranks]
        return {s: ranks[s] for s in points}

    def compute_across(
        self, summary: Mapping[str, Mapping[str, float]]
    ) -> dict[str, dict[str, float]]:
        """``{system: {"pareto_rank": float(rank)}}`` using this instance's fields.

        :param summary: ``{system: {key: value}}`` for every system of the run.
        """
        ranks = self.rank_systems(summary, self.quality_field, self.cost_field)
        return {s: {"pareto_rank": float(r)} for s, r in ranks.items()}
