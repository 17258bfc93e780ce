"""summarize() turns rows into ``{system: {key: value}}``; default_metrics() picks
the metrics a run uses when the user names none."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..errors import ConfigError
from .latency import Latency
from .scores import ErrorRate, MeanScore, PassRate, PerDatasetBreakdown
from .token_stats import CompressionRatio, CostOfPass, LLMTokens, MoneyCost, ParetoRank

if TYPE_CHECKING:
    from ..results import EvalRow
    from ..types import Metric

__all__ = ["default_metrics", "summarize"]


def _label(metric: object) -> str:
    name = getattr(metric, "name", None)
    return f"{name!r} ({type(metric).__name__})"


def _merge(
    target: dict[str, float],
    owners: dict[str, object],
    values: Mapping[str, Any],
    metric: object,
    system: str,
) -> None:
    """Add ``values`` to ``target``, refusing a key another metric already set."""
    for key, value in values.items():
        owner = owners.get(key)
        if owner is not None and owner is not metric:
            # Upstream let the later metric overwrite silently, which hid e.g. two
            # MeanScores on different fields behind one number.
            raise ConfigError(
                f"Metrics {_label(owner)} and {_label(metric)} both produce the "
                f"summary key {key!r} (system {system!r}); remove one of them or "
                "use a metric whose keys differ."
            )
        try:
            number = float(value)
        except (TypeError, ValueError) as exc:
            raise ConfigError(
                f"Metric {_label(metric)} returned {value!r} for key {key!r} "
                f"(system {system!r}); a metric must return numbers."
            ) from exc
        owners[key] = metric
        target[key] = number


def summarize(
    rows: Iterable[EvalRow],
    metrics: Sequence[Metric],
    systems: Sequence[str] | None = None,
) -> dict[str, dict[str, float]]:
    """Compute every metric on every system's rows.

    :param rows: the rows of the run, any order.
    :param metrics: the metrics; a metric with a ``compute_across(summary)`` method
        (e.g. :class:`ParetoRank`) also gets the finished per-system summary and
        adds its ``{system: {key: value}}`` output to it.
    :param systems: the systems to report, in this order; a listed system without
        rows is still computed (on ``[]``). Systems that have rows but are not listed
        follow, in first-seen order, so no row is dropped. ``None`` means first-seen
        order.
    :return: ``{system: {key: float}}``; every value is a plain :class:`float`.
    :raises ConfigError: when two different metrics produce the same key, or a metric
        returns something that is not a number.
    """
    groups: dict[str, list[EvalRow]] = {}
    for r in rows:
        groups.setdefault(r.system, []).append(r)
    order = list(dict.fromkeys([*(systems or ()), *groups]))
    # The same object listed twice is one metric, not a collision.
    unique = list({id(m): m for m in metrics}.values())

    summary: dict[str, dict[str, float]] = {}
    owners: dict[str, dict[str, object]] = {}
    for system in order:
        summary[system] = {}
        owners[system] = {}
        system_rows = groups.get(system, [])
        for metric in unique:
            _merge(
                summary[system],
                owners[system],
                metric.compute(system_rows),
                metric,
                system,
            )

    for metric in unique:
        across = getattr(metric, "compute_across", None)
        if not callable(across):
            continue
        # A copy, so a metric cannot change what the next one sees by mutating it.
        per_system = across({s: dict(v) for s, v in summary.items()})
        for system, values in per_system.items():
            # A name that is not a system of this run is ignored rather than
            # invented into the summary.
            if system in summary:
                _merge(summary[system], owners[system], values, metric, system)
    return summary


def default_metrics(
    score_field: str | None = None,
    threshold: float = 0.7,
    *,
    n_datasets: int = 1,
    n_systems: int = 1,
    money: bool = False,
) -> list[Metric]:
    """The metrics a run uses when none are given.

    :param score_field: the score field for the score metrics; ``None`` uses each
        row's primary field.
    :param threshold: the pass mark of :class:`PassRate` and :class:`CostOfPass`.
    :param n_datasets: the number of datasets; above 1 adds
        :class:`PerDatasetBreakdown`.
    :param n_systems: the number of systems; above 1 adds :class:`ParetoRank`.
    :param money: add :class:`MoneyCost` and :class:`LLMTokens` (when rows carry
        measured LLM usage).
    :return: MeanScore, PassRate, CompressionRatio, CostOfPass, Latency, ErrorRate,
        then PerDatasetBreakdown and ParetoRank when they apply.
    """
    metrics: list[Metric] = [
        MeanScore(score_field=score_field),
        PassRate(threshold=threshold, score_field=score_field),
        CompressionRatio(),
        CostOfPass(threshold=threshold, score_field=score_field),
        Latency(),
        ErrorRate(),
    ]
    if money:
        metrics.append(MoneyCost(threshold=threshold, score_field=score_field))
        metrics.append(LLMTokens(threshold=threshold, score_field=score_field))
    if n_datasets > 1:
        metrics.append(PerDatasetBreakdown(score_field=score_field))
    if n_systems > 1:
        metrics.append(ParetoRank())
    return metrics
