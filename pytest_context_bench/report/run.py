"""Rows → per-suite metrics → gates: the run report.

A *suite* is one origin (the command-line run, or one marked test function) × one
system. Metrics and gates are computed per suite; Pareto rank compares the systems of
one origin. Rows are sorted by (system position, dataset position, example index)
before anything is computed, so the result does not depend on the order in which
xdist workers delivered them: in-process, ``-n 0`` and ``-n 2`` give the same numbers.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Iterable

from ..gate import GateResult, check_gates, gates_from_limits
from ..metrics import PerQATypeMetric, default_metrics, row_score, summarize
from ..metrics.assertions import AssertionBreakdown
from ..metrics.scores import ASSERT_SCORE, primary_field, score_passes
from ..stats import summary_interval
from ..repeats import fold_trials, repeat_summary
from ..results import EvalRow

__all__ = ["SuiteInfo", "Record", "RunReport", "build_run_report", "CLI_ORIGIN"]

CLI_ORIGIN = "cli"


@dataclass(frozen=True)
class SuiteInfo:
    """How an origin is scored and gated (what the marker or the options said)."""

    origin: str
    threshold: float = 0.7
    score_field: str | None = None
    limits: dict[str, float | None] = field(default_factory=dict)
    strict: bool = False
    datasets: tuple[str, ...] = ()
    fingerprints: dict[str, str] = field(default_factory=dict)
    #: The suite labels the origin is expected to produce (one per System known up
    #: front); empty when the System comes from a fixture and is named by its rows.
    labels: dict[str, str] = field(default_factory=dict)  # suite label -> system
    #: dataset tag → its evaluators' identities (evaluators.identity.evaluator_identity): what
    #: tells a baseline scored by other evaluators; empty when unknown
    evaluators: dict[str, list[dict[str, str]]] = field(default_factory=dict)

    @classmethod
    def from_wire(cls, data: dict[str, Any]) -> SuiteInfo:
        evaluators = data.get("evaluators")
        return cls(
            origin=str(data["origin"]),
            threshold=float(data.get("threshold", 0.7)),
            score_field=data.get("score_field"),
            limits={str(k): (None if v is None else float(v)) for k, v in data.get("limits", {}).items()},
            strict=bool(data.get("strict", False)),
            datasets=tuple(data.get("datasets", ())),
            fingerprints={str(k): str(v) for k, v in (data.get("fingerprints") or {}).items()},
            labels={str(k): str(v) for k, v in (data.get("labels") or {}).items()},
            evaluators={
                str(tag): [{str(k): str(v) for k, v in e.items()} for e in evs if isinstance(e, dict)]
                for tag, evs in evaluators.items()
                if isinstance(evs, list)
            } if isinstance(evaluators, dict) else {},
        )


@dataclass(frozen=True, slots=True)
class Record:
    """One row as received, with where it belongs."""

    suite: str
    origin: str
    order: tuple[int, ...]
    status: str
    row: EvalRow
    #: ``{"response", "reference"}`` (clipped) when the plugin kept them, with
    #: ``"answer"`` (what the evaluators read: answers.py), else None
    io: dict[str, Any] | None = None


@dataclass
class RunReport:
    summary: dict[str, dict[str, float]]
    suites: list[dict[str, Any]]
    gates: list[GateResult]
    records: list[Record]
    lost: list[str] = field(default_factory=list)
    #: suite → {"mean_score": [low, high], "pass_rate": [low, high]}: 95% intervals
    intervals: dict[str, dict[str, list[float]]] = field(default_factory=dict)
    #: suite → pass@1, pass@k, pass^k and flaky examples, for repeated trials
    repeats: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: expected vs received rows per suite, and whether the run was partial or
    #: interrupted (see the JSON report's ``completeness``); empty when unknown
    completeness: dict[str, Any] = field(default_factory=dict)

    @property
    def breaches(self) -> list[GateResult]:
        """The gates that failed and are enforced (a gate reported but not enforced,
        ``GateResult.enforced`` false, breaches nothing)."""
        return [g for g in self.gates if g.breached]

    @property
    def status_counts(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for r in self.records:
            counts[r.status] = counts.get(r.status, 0) + 1
        return counts


def build_run_report(
    records: Iterable[Record], infos: dict[str, SuiteInfo], lost: Iterable[str] = ()
) -> RunReport:
    """Aggregate records per origin and suite, then apply each suite's gates."""
    by_origin: dict[str, list[Record]] = {}
    for rec in records:
        by_origin.setdefault(rec.origin, []).append(rec)
    origins = sorted(by_origin, key=lambda o: (o != CLI_ORIGIN, o))
    summary: dict[str, dict[str, float]] = {}
    suites: list[dict[str, Any]] = []
    gates: list[GateResult] = []
    ordered: list[Record] = []
    intervals: dict[str, dict[str, list[float]]] = {}
    repeats: dict[str, dict[str, Any]] = {}
    for origin in origins:
        info = infos.get(origin, SuiteInfo(origin))
        recs = sorted(by_origin[origin], key=lambda r: (r.order, r.suite))
        # Repeated trials: every trial is a row (metrics are means over trials, so
        # the pass rate is pass@1); the intervals and pass@k fold them per example.
        repeated = any("trial" in r.row.metadata for r in recs)
        folded = _fold(recs, info) if repeated else None
        ordered.extend(recs)
        # suite label -> its System, first-seen in order. A System has one suite per
        # origin, or one per prompt of a promptfoo config (docs/assertions.md): the
        # metrics are computed per suite label.
        labels: dict[str, str] = {}
        for r in recs:
            labels.setdefault(r.suite, r.row.system)
        rows = [r.row for r in recs]
        datasets = list(dict.fromkeys(r.dataset for r in rows))
        split = len(set(labels.values())) != len(labels)
        per_suite_rows = (
            [replace(r.row, system=r.suite) for r in recs] if split
            else [r.row for r in recs]
        )
        key_of = (lambda label, system: label) if split else (lambda label, system: system)
        metrics = default_metrics(
            info.score_field,
            info.threshold,
            n_datasets=len(datasets),
            n_systems=len(labels),
            money=_money(rows, info),
        )
        if any(ASSERT_SCORE in r.scores for r in rows):
            # Examples judged by their own assertions: named metrics, per-type rates.
            metrics.append(AssertionBreakdown())
        if any("qa_type" in r.metadata for r in rows):
            # Memory questions: the breakdown by question type, as evaluate_memory.
            metrics.append(PerQATypeMetric(info.score_field))
        per_system = summarize(
            per_suite_rows, metrics, [key_of(label, system) for label, system in labels.items()]
        )
        suite_gates = gates_from_limits(info.limits)
        for label, system in labels.items():
            key = key_of(label, system)
            mine_recs = [r for r in recs if r.suite == label]
            summary[label] = per_system[key]
            entry: dict[str, Any] = {
                "label": label,
                "origin": origin,
                "system": system,
                "datasets": list(dict.fromkeys(r.row.dataset for r in mine_recs)) if split else datasets,
                "score_field": info.score_field,
                "threshold": info.threshold,
                "limits": {k: v for k, v in info.limits.items() if v is not None},
                "strict": info.strict,
            }
            if info.evaluators:
                # Which evaluators scored each dataset: a baseline scored by others is
                # scored again before it is compared (docs/gating.md).
                entry["evaluators"] = {
                    tag: info.evaluators[tag] for tag in entry["datasets"] if tag in info.evaluators
                }
            suites.append(entry)
            gates.extend(check_gates(label, per_system[key], suite_gates))
            if folded is None:
                intervals[label] = _intervals(
                    [r.row for r in mine_recs], info.score_field, info.threshold
                )
            else:
                mine = [row for suite, row in folded if suite == label]
                intervals[label] = _folded_intervals(mine, info.score_field)
                repeats[label] = repeat_summary(mine)
    for origin in sorted(infos, key=lambda o: (o != CLI_ORIGIN, o)):
        # A configured gate with nothing to measure is decided, and fails: a suite
        # whose every example crashed, errored before scoring or was never selected
        # does not make its gates vanish.
        info = infos[origin]
        suite_gates = gates_from_limits(info.limits)
        if not suite_gates:
            continue
        seen = {s["label"] for s in suites if s["origin"] == origin}
        expected = dict(info.labels) or ({} if seen else {origin: origin})
        for label, system in expected.items():
            if label in seen or label in summary:
                continue
            entry = {
                "label": label,
                "origin": origin,
                "system": system,
                "datasets": list(info.datasets),
                "score_field": info.score_field,
                "threshold": info.threshold,
                "limits": {k: v for k, v in info.limits.items() if v is not None},
                "strict": info.strict,
            }
            if info.evaluators:
                # as a suite with rows says it (a shard that got none of its
                # examples describes it as the others do)
                entry["evaluators"] = {
                    tag: info.evaluators[tag] for tag in info.datasets if tag in info.evaluators
                }
            suites.append(entry)
            gates.extend(check_gates(label, {}, suite_gates))
    return RunReport(summary, suites, gates, ordered, sorted(set(lost)), intervals, repeats)


_MONEY_GATES = ("max_cost_usd", "max_cost_of_pass_usd", "max_llm_tokens_per_pass")


def _money(rows: list[EvalRow], info: SuiteInfo) -> bool:
    """Money metrics apply when calls were measured or a money gate is set."""
    return any(info.limits.get(g) is not None for g in _MONEY_GATES) or any(
        "llm_usage" in r.metadata or "judge_usage" in r.metadata for r in rows
    )


def _fold(recs: list[Record], info: SuiteInfo) -> list[tuple[str, EvalRow]]:
    """One row per (suite, dataset, example): the mean over its trials, with its
    suite label."""
    groups: dict[tuple[str, str, str], list[EvalRow]] = {}
    for rec in recs:  # in (order, suite) order; the trial is the last of order
        groups.setdefault((rec.suite, rec.row.dataset, rec.row.example_id), []).append(rec.row)
    return [(key[0], fold_trials(rows, info.score_field, info.threshold)) for key, rows in groups.items()]


def _folded_intervals(rows: list[EvalRow], field: str | None) -> dict[str, list[float]]:
    """Intervals over examples, not trials: the trials of one example are not
    independent, so each example contributes its mean score and its share of passing
    trials (a cluster bootstrap)."""
    scores = [s for s in (row_score(r, field) for r in rows) if s is not None]
    passes = [r.metadata["trials"]["passed"] / r.metadata["trials"]["n"] for r in rows
              if row_score(r, field) is not None]
    return {
        "mean_score": list(summary_interval(scores)),
        "pass_rate": list(summary_interval(passes)),
    }


def _intervals(rows: list[EvalRow], field: str | None, threshold: float) -> dict[str, list[float]]:
    """95% intervals of the mean score and the pass rate (see stats.summary_interval)."""
    scores = [s for s in (row_score(r, field) for r in rows) if s is not None]
    passes = [1.0 if r.error is None and score_passes(r.scores, primary_field(r, field), threshold) else 0.0
              for r in rows if row_score(r, field) is not None]
    return {
        "mean_score": list(summary_interval(scores)),
        "pass_rate": list(summary_interval(passes)),
    }
