"""Score metrics: MeanScore, PassRate, PerDatasetBreakdown, ErrorRate, and row_score.

Every metric here reads one score field per row through :func:`row_score`, which
fixes two upstream mistakes: an errored row counts as a failure (0.0), and a row
whose evaluators did not produce the field is left out instead of counted as 0.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from numbers import Real
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from ..errors import ConfigError
from .stats import mean

if TYPE_CHECKING:
    from ..results import EvalRow

__all__ = [
    "ASSERT_PASS",
    "ASSERT_SCORE",
    "DEFAULT_SCORE_FIELD",
    "ErrorRate",
    "JUDGE_PASS",
    "JUDGE_SCORE",
    "MeanScore",
    "PassRate",
    "PerDatasetBreakdown",
    "VERDICT_KEYS",
    "primary_field",
    "row_score",
    "score_passes",
]

#: The field used when neither the metric nor the row names one.
DEFAULT_SCORE_FIELD = "f1"

#: A primary score whose evaluator decides pass or fail itself: score key → the key
#: of its verdict (1.0 pass, 0.0 fail). For such a row the suite's threshold does
#: not apply: an example's assertions pass or fail it (docs/assertions.md), and a
#: rubric judge's pass score does (docs/llm.md, "Rubrics"). A row with the score
#: but not the verdict (LLMJudge without a rubric) is held to the threshold.
ASSERT_SCORE = "assert_score"
ASSERT_PASS = "assert_pass"
JUDGE_SCORE = "judge_score"
JUDGE_PASS = "judge_pass"
_VERDICTS = {ASSERT_SCORE: ASSERT_PASS, JUDGE_SCORE: JUDGE_PASS}
VERDICT_KEYS: Mapping[str, str] = MappingProxyType(_VERDICTS)


def score_passes(scores: Mapping[str, Any], field: str | None, threshold: float) -> bool | None:
    """Whether a row without an error passes: its primary score ``field`` (``f1``
    when ``None``) against ``threshold``, or the verdict its evaluator gave
    (:data:`VERDICT_KEYS`). ``None`` when the row has no such score. The one rule
    every metric, status, gate and report uses."""
    name = field or DEFAULT_SCORE_FIELD
    score = scores.get(name)
    if score is None:
        return None
    verdict = _VERDICTS.get(name)  # VERDICT_KEYS's dict (asked of every row)
    if verdict is not None and verdict in scores:
        # A mean over trials (fold_trials) passes only when every trial passed.
        return float(scores[verdict]) >= 1.0
    return float(score) >= threshold


def primary_field(row: EvalRow, score_field: str | None = None) -> str:
    """The score field a metric reads from ``row``.

    :param row: the row.
    :param score_field: a field that overrides the row's own; ``None`` means the row's
        ``metadata["score_field"]``, else ``"f1"``.
    """
    if score_field is not None:
        return score_field
    field = row.metadata.get("score_field")
    if type(field) is str and field:
        return field  # the common case, without a copy
    return str(field or DEFAULT_SCORE_FIELD)


def row_score(row: EvalRow, score_field: str | None = None) -> float | None:
    """The score of one row for a metric, or ``None`` when the row has none.

    :param row: the row.
    :param score_field: the field to read; ``None`` means the row's primary field
        (see :func:`primary_field`).
    :return: ``0.0`` when the row errored (a crash is a failure, never missing data);
        the field's value when present; ``None`` when the evaluators did not produce
        the field (the row is excluded; upstream counted it as 0).
    """
    if row.error is not None:
        return 0.0
    if score_field is None:  # primary_field, inline: asked of every row by every metric
        field = row.metadata.get("score_field")
        score_field = field if type(field) is str and field else str(field or DEFAULT_SCORE_FIELD)
    value = row.scores.get(score_field)
    return None if value is None else float(value)


def _check_field(score_field: object) -> None:
    if score_field is not None and (
        not isinstance(score_field, str) or not score_field
    ):
        raise ConfigError(
            f"score_field must be a non-empty string or None, got {score_field!r}."
        )


def _check_threshold(threshold: object) -> None:
    # bool is a Real too; True as a threshold is always a mistake.
    if (
        isinstance(threshold, bool)
        or not isinstance(threshold, Real)
        or math.isnan(float(threshold))
    ):
        raise ConfigError(f"threshold must be a number, got {threshold!r}.")


def _passes(row: EvalRow, threshold: float, score_field: str | None) -> bool:
    """True when ``row`` did not error and its score is at least ``threshold``."""
    # An errored row never passes, even with threshold <= 0 where its 0.0 would.
    if row.error is not None:
        return False
    return bool(score_passes(row.scores, primary_field(row, score_field), threshold))


@dataclass
class MeanScore:
    """Mean of each row's score: ``{"mean_score": ...}``.

    :param score_field: the field to average; ``None`` (the default) uses each row's
        primary field (``metadata["score_field"]``, else ``"f1"``).

    Differences from upstream: the default field is the row's primary field, not
    ``"score"``; errored rows count as 0.0; rows without the field are excluded
    rather than counted as 0; no scored rows gives ``nan`` instead of 0.0.
    """

    score_field: str | None = None
    name = "mean_score"

    def __post_init__(self) -> None:
        _check_field(self.score_field)

    def compute(self, rows: list[EvalRow]) -> dict[str, float]:
        """:param rows: the rows of one system."""
        scores = [
            s for s in (row_score(r, self.score_field) for r in rows) if s is not None
        ]
        return {"mean_score": mean(scores)}


@dataclass
class PassRate:
    """Share of scored rows whose score is ``>= threshold``: ``{"pass_rate": ...}``.

    :param threshold: the pass mark (inclusive, as upstream's code; its docs said
        "exceeds").
    :param score_field: as in :class:`MeanScore`.

    Differences from upstream: rows without the field are left out of the
    denominator instead of counted as failures; an errored row always fails; no
    scored rows gives ``nan`` instead of 0.0.
    """

    threshold: float = 0.7
    score_field: str | None = None
    name = "pass_rate"

    def __post_init__(self) -> None:
        _check_threshold(self.threshold)
        _check_field(self.score_field)

    def compute(self, rows: list[EvalRow]) -> dict[str, float]:
        """:param rows: the rows of one system."""
        scored = [r for r in rows if row_score(r, self.score_field) is not None]
        if not scored:
            return {"pass_rate": math.nan}
        passing = sum(1 for r in scored if _passes(r, self.threshold, self.score_field))
        return {"pass_rate": passing / len(scored)}


@dataclass
class PerDatasetBreakdown:
    """Mean score per dataset tag: ``{"dataset:<tag>": ...}``, tags sorted.

    :param score_field: as in :class:`MeanScore`.

    Rows with an empty tag are reported as ``dataset:unknown``. Differences from
    upstream: rows without the field are excluded, errored rows count as 0.0, and a
    dataset with no scored row gives ``nan`` (upstream counted missing fields as 0).
    """

    score_field: str | None = None
    name = "per_dataset"

    def __post_init__(self) -> None:
        _check_field(self.score_field)

    def compute(self, rows: list[EvalRow]) -> dict[str, float]:
        """:param rows: the rows of one system."""
        groups: dict[str, list[float]] = {}
        for r in rows:
            scores = groups.setdefault(r.dataset or "unknown", [])
            score = row_score(r, self.score_field)
            if score is not None:
                scores.append(score)
        return {f"dataset:{tag}": mean(groups[tag]) for tag in sorted(groups)}


@dataclass
class ErrorRate:
    """How many examples raised: ``error_rate``, ``num_errors``, ``num_examples``.

    ``error_rate`` is ``num_errors / num_examples`` (``nan`` with no rows). Upstream
    had no error capture and so no such metric.
    """

    name = "error_rate"

    def compute(self, rows: list[EvalRow]) -> dict[str, float]:
        """:param rows: the rows of one system."""
        n = len(rows)
        errors = sum(1 for r in rows if r.error is not None)
        return {
            "error_rate": errors / n if n else math.nan,
            "num_errors": float(errors),
            "num_examples": float(n),
        }
