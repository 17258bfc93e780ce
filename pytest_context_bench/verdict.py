"""A run report held to its baseline: the one decision shared by the pytest run and
``ctxbench merge``. Pure (no pytest).

:func:`judge` takes a :class:`~pytest_context_bench.report.run.RunReport` (whose own
gates are already computed) and an optional baseline, and says whether the run
fails: a breached gate, a failed max-drop gate, a max-drop gate that compared no
example, examples that changed under ``--ctxbench-require-same-examples``, or a
baseline that shares no suite or no example with the run (one error naming both
sides, never a "passed" first). :func:`comparison_doc` and :func:`comparison_lines`
render the comparison for the JSON report and the terminal.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .errors import ConfigError
from .report.run import RunReport
from .results import json_safe

__all__ = ["Verdict", "agreement_doc", "comparison_doc", "comparison_lines", "judge"]


@dataclass
class Verdict:
    """What :func:`judge` decided."""

    report: RunReport
    comparison: Any = None
    #: why the baseline could not be compared, or ``None``
    baseline_error: str | None = None
    #: baseline suites a max-drop gate compared no example of
    unevaluated: list[str] = field(default_factory=list)
    #: per suite, how the examples differ (``--ctxbench-require-same-examples``)
    changed_examples: list[str] = field(default_factory=list)
    #: the judge's agreement with people's labels (``--ctxbench-judge-labels``), and
    #: the suites whose judge-scored gates it leaves not enforced
    gating: Any = None

    @property
    def breached(self) -> bool:
        """True when the gates (report and baseline) fail the run."""
        return (
            bool(self.report.breaches)
            or bool(self.comparison is not None and self.comparison.breaches)
            or bool(self.unevaluated)
            or bool(self.changed_examples)
            or self.baseline_error is not None
        )


def _disjoint(baseline: Any, report: RunReport, comparison: Any) -> str | None:
    """The error when the baseline and the run have nothing to compare."""
    base_suites = sorted(
        {str(s.get("label")) for s in baseline.suites}
        | {r.suite for r in baseline.records}
    )
    run_suites = [str(s["label"]) for s in report.suites]
    if not comparison.suites:
        return (
            f"baseline {baseline.path} shares no suite with this run: the baseline has"
            f" {', '.join(base_suites) or 'none'}; this run has {', '.join(run_suites) or 'none'}"
            " (a renamed System? give it a stable name, e.g. --ctxbench-proxy-name);"
            " re-create the baseline with --ctxbench-save-baseline if the change is intended"
        )
    if sum(s.n_matched for s in comparison.suites) == 0:

        def sample(records: Any, labels: set[str]) -> str:
            ids = sorted(
                {
                    f"{r.row.dataset}/{r.row.example_id}"
                    for r in records
                    if r.suite in labels
                }
            )
            return (
                ", ".join(ids[:3])
                + (f" and {len(ids) - 3} more" if len(ids) > 3 else "")
                or "none"
            )

        shared = {s.suite for s in comparison.suites}
        return (
            f"baseline {baseline.path} shares no example with this run in"
            f" {', '.join(sorted(shared))}: the baseline has {sample(baseline.records, shared)};"
            f" this run has {sample(report.records, shared)} (another dataset, selection"
            " or shard?); re-create the baseline with --ctxbench-save-baseline if the"
            " change is intended"
        )
    return None


def judge(
    report: RunReport,
    baseline: Any = None,
    *,
    max_drops: Mapping[str, Any] | None = None,
    confidence: float = 0.95,
    require_same_examples: bool = False,
    fingerprints: Mapping[str, str] | None = None,
    seed: int = 0,
    familywise: str = "none",
    labels: Any = None,
    min_kappa: float | None = None,
    rescored: Any = None,
    baseline_problem: str | None = None,
) -> Verdict:
    """Compare ``report`` with ``baseline`` (a loaded
    :class:`~pytest_context_bench.baseline.Baseline`, or ``None``) and decide.

    :param max_drops: ``{metric: Tolerance}`` (``--ctxbench-max-drop``).
    :param confidence: ``--ctxbench-confidence``.
    :param require_same_examples: ``--ctxbench-require-same-examples``.
    :param fingerprints: ``{dataset tag: fingerprint}`` of the run, checked against
        the baseline's (a changed dataset voids the comparison).
    :param seed: the seed of every draw of the comparison (``--ctxbench-seed``): the
        same rows and seed give the same verdict, bit for bit.
    :param familywise: ``--ctxbench-familywise`` (``"none"`` or ``"holm"``).
    :param labels: people's labels (:class:`~pytest_context_bench.agreement.Labels`,
        ``--ctxbench-judge-labels``): the judge's agreement is measured per suite.
    :param min_kappa: ``--ctxbench-min-judge-kappa``: a suite whose judge agrees less
        has its judge-scored gates (report and max-drop) reported, not enforced.
    :param rescored: a :class:`~pytest_context_bench.rescore.BaselineRescore`
        when ``baseline`` is the baseline scored again by the run's evaluators: its
        notes lead each suite's comparison.
    :param baseline_problem: why the baseline cannot be compared (a baseline scored
        by other evaluators that kept no answer), or ``None``.
    """
    verdict = Verdict(report)
    if labels is not None:
        _gate_on_agreement(verdict, labels, min_kappa)
    if baseline is None:
        return verdict
    from .baseline import check_datasets, compare

    if baseline_problem is not None:
        verdict.baseline_error = f"baseline not compared: {baseline_problem}"
        return verdict
    drops = dict(max_drops or {})
    try:
        if fingerprints is not None:
            check_datasets(baseline, fingerprints)
    except ConfigError as exc:
        verdict.baseline_error = f"baseline not compared: {exc}"
        return verdict
    try:
        comparison = compare(
            baseline, report, drops, confidence=confidence, seed=seed, familywise=familywise
        )
    except ConfigError as exc:  # e.g. adaptive trials against a baseline of 1 trial
        verdict.baseline_error = f"baseline not compared: {exc}"
        return verdict
    problem = _disjoint(baseline, report, comparison)
    if problem is not None:
        verdict.baseline_error = f"baseline not compared: {problem}"
        return verdict
    if verdict.gating is not None and verdict.gating.not_enforced:
        import dataclasses

        for suite in comparison.suites:
            suite.metrics[:] = [
                dataclasses.replace(m, not_enforced=verdict.gating.reason(m.suite, m.metric))
                if m.tolerance is not None and verdict.gating.reason(m.suite, m.metric)
                else m
                for m in suite.metrics
            ]
    if rescored is not None:
        from dataclasses import replace

        comparison.suites = [
            replace(
                s,
                notes=[*rescored.notes.get(s.suite, []), *s.notes],
                rescored_with=list(rescored.rescored_with.get(s.suite, [])),
            )
            for s in comparison.suites
        ]
    verdict.comparison = comparison
    if drops:
        # A max-drop gate that compared nothing must not pass silently: a renamed
        # dataset file or System would otherwise walk around it.
        verdict.unevaluated = sorted(
            [s.suite for s in comparison.suites if s.n_matched == 0]
            + list(comparison.only_baseline)
        )
    if require_same_examples:
        for s in comparison.suites:
            if s.new or s.missing:
                verdict.changed_examples.append(
                    f"{s.suite}: {len(s.new)} example(s) new since the baseline,"
                    f" {len(s.missing)} missing from this run"
                )
        verdict.changed_examples += [
            f"{label}: not in the baseline" for label in comparison.only_current
        ] + [
            f"{label}: in the baseline but not run"
            for label in comparison.only_baseline
        ]
    return verdict


def _gate_on_agreement(verdict: Verdict, labels: Any, min_kappa: float | None) -> None:
    """Measure the judge against ``labels`` and mark the report's judge-scored gates
    of a suite whose judge agrees less than ``min_kappa`` as not enforced."""
    import dataclasses

    from .agreement import judge_gating

    report = verdict.report
    rows = [{"suite": rec.suite, **rec.row.to_dict()} for rec in report.records]
    gating = judge_gating(rows, report.suites, labels, min_kappa)
    verdict.gating = gating
    report.gates = [
        dataclasses.replace(g, enforced=False, not_enforced=why)
        if (why := gating.reason(g.suite, g.gate.metric)) is not None
        else g
        for g in report.gates
    ]


def agreement_doc(verdict: Verdict) -> dict[str, Any] | None:
    """The JSON report's ``judge_agreement``, or ``None`` without labels."""
    if verdict.gating is None:
        return None
    return json_safe(verdict.gating.to_dict())  # type: ignore[no-any-return]


def comparison_doc(verdict: Verdict) -> dict[str, Any] | None:
    """The JSON report's ``baseline_comparison``, or ``None`` without a comparison."""
    c = verdict.comparison
    if c is None:
        return None
    return json_safe(  # type: ignore[no-any-return]
        {
            "baseline": str(c.baseline_path),
            "confidence": c.confidence,
            "familywise": c.familywise,
            "unevaluated": list(verdict.unevaluated),
            "changed_examples": list(verdict.changed_examples),
            "metrics": [
                {
                    "suite": m.suite,
                    "metric": m.metric,
                    "then": m.then,
                    "now": m.now,
                    "change": m.result.diff,
                    "ci_low": m.result.ci_low,
                    "ci_high": m.result.ci_high,
                    "test": m.result.test,
                    "p_value": m.result.p_value,
                    "p_value_sided": "one-sided (worse)",
                    "holm_adjusted_p": None if m.holm is None else m.holm[1],
                    "tolerance": None if m.tolerance is None else str(m.tolerance),
                    "passed": not m.failed,
                    **({"enforced": False, "not_enforced": m.not_enforced}
                       if m.not_enforced is not None else {}),
                }
                for s in c.suites
                for m in s.metrics
            ],
            "suites": [
                {
                    "suite": s.suite,
                    "n_matched": s.n_matched,
                    "trials_left_out": dict(s.trials_left_out),
                    "notes": list(s.notes),
                    "rescored_with": list(s.rescored_with),
                    "flipped_to_fail": list(s.flipped_to_fail),
                    "flipped_to_pass": list(s.flipped_to_pass),
                    "new": list(s.new),
                    "missing": list(s.missing),
                }
                for s in c.suites
            ],
        }
    )


def comparison_lines(
    verdict: Verdict, enforced: bool
) -> list[tuple[str, dict[str, Any]]]:
    """The terminal section of the comparison: ``(text, markup)`` lines."""
    c = verdict.comparison
    if c is None:
        return []
    red = {"red": True} if enforced else {}
    out: list[tuple[str, dict[str, Any]]] = [
        ("", {}),
        ("baseline comparison:", {"bold": True}),
    ]
    for text in c.lines():
        failed = "FAILED" in text or "breached" in text
        out.append((text, red if failed else {}))
    for text in verdict.changed_examples:
        out.append(
            (
                (
                    f"FAILED {text} (--ctxbench-require-same-examples); re-create the"
                    " baseline with --ctxbench-save-baseline if the change is intended"
                ),
                red,
            )
        )
    for suite in verdict.unevaluated:
        out.append(
            (
                (
                    f"FAILED {suite}: the max-drop gates compared no example of this"
                    " baseline suite (renamed dataset or System?); re-create the"
                    " baseline with --ctxbench-save-baseline if the change is intended"
                ),
                red,
            )
        )
    return out
