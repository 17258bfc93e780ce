"""Adaptive trials in the run (``--ctxbench-trials=adaptive``): each command-line
item asks its example once, then, when :mod:`pytest_context_bench.adaptive` says
so, asks it again up to ``--ctxbench-max-trials`` times in the same item.

The choice depends only on the example's first trial, the baseline and a seeded
hash of the example's identity, so it is made where the item runs (any xdist
worker, any shard) and is the same in every mode; each trial is a row of its own
(``metadata.trial``), whose LLM calls use the trial's own cache entries.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from ..errors import CtxBenchError
from .collection import CliCase, ExampleRef

__all__ = ["AdaptivePlan", "plan_for", "run_more_trials"]


@dataclass
class _Suite:
    design: Any
    rho: float
    #: (dataset, example id) → the baseline's pass outcomes, in trial order
    outcomes: dict[tuple[str, str], list[int | None]] = field(default_factory=dict)


class AdaptivePlan:
    """Per process: for each baseline suite, its design, ``rho`` and outcomes."""

    def __init__(self, baseline: Any, max_trials: int, budget: float, seed: int) -> None:
        from ..adaptive import Design, reask_rate
        from ..baseline import _outcome, _trial, adaptive_design

        self.max_trials, self.budget, self.seed = max_trials, budget, seed
        self.suites: dict[str, _Suite] = {}
        by_suite: dict[str, list[Any]] = {}
        for rec in baseline.records:
            by_suite.setdefault(rec.suite, []).append(rec)
        marker = {"max_trials": max_trials, "budget": budget}
        for label, recs in by_suite.items():
            info = baseline.suite(label) or {}
            threshold = float(info.get("threshold", 0.7))
            field_ = info.get("score_field")
            trials: dict[tuple[str, str], list[tuple[int, int | None]]] = {}
            for rec in recs:
                trials.setdefault((rec.row.dataset, rec.row.example_id), []).append(
                    (_trial(rec), _outcome(rec.row, field_, threshold))
                )
            design: Design = adaptive_design(marker, recs)  # raises: too few trials
            outcomes = {k: [o for _, o in sorted(v, key=lambda x: x[0])] for k, v in trials.items()}
            eligible = [
                [o for o in v[: design.stage1] if o is not None]
                for v in outcomes.values()
                if len(v) >= design.baseline_trials
            ]
            rho = reask_rate(design, eligible, len(outcomes))
            self.suites[label] = _Suite(design, rho, outcomes)

    def reask(self, suite: str, dataset: str, example_id: str, first: int | None) -> bool:
        """Whether to ask this example again, from its first trial's outcome."""
        from ..adaptive import coin, informative

        entry = self.suites.get(suite)
        if entry is None or first is None:
            return False
        base = entry.outcomes.get((dataset, example_id))
        if base is None or len(base) < entry.design.baseline_trials:
            return False
        stage1 = base[: entry.design.stage1]
        if any(b is None for b in stage1):
            return False
        return informative(first, [int(b) for b in stage1 if b is not None]) and (
            coin(self.seed, suite, dataset, example_id) < entry.rho
        )


def plan_for(state: Any) -> AdaptivePlan | None:
    """The process's plan (built once), or None when the run is not adaptive."""
    settings = state.settings
    if settings.adaptive is None or settings.baseline is None:
        return None
    plan = getattr(state, "adaptive_plan", None)
    if plan is None:
        baseline = state.baseline
        if baseline is None:  # an xdist worker: the controller checked the file
            from ..baseline import load_baseline

            baseline = load_baseline(settings.baseline)
        plan = AdaptivePlan(baseline, settings.adaptive[0], settings.adaptive[1], settings.seed)
        state.adaptive_plan = plan
    return plan


def check_baseline(baseline: Any, settings: Any) -> None:
    """Refuse, before any example runs, a baseline with too few trials."""
    if settings.adaptive is None or baseline is None:
        return
    try:
        AdaptivePlan(baseline, settings.adaptive[0], settings.adaptive[1], settings.seed)
    except CtxBenchError as exc:
        raise pytest.UsageError(f"{settings.where['ctxbench_baseline']} {baseline.path}: {exc}") from None


def run_more_trials(case: CliCase, system: Any, state: Any) -> None:
    """After the first trial of ``case`` ran: mark its rows, and ask the example
    again (trials 2 .. K) for each System whose row the plan picks. Every chosen
    trial runs, whatever an earlier one raised; the first error is raised after."""
    from ..report.rows import row_status

    plan = plan_for(state)
    recorder = case.recorder
    if plan is None or recorder is None:
        return
    marker = {"max_trials": plan.max_trials, "budget": plan.budget}
    spec = case.ref.spec
    systems = list(system) if isinstance(system, (list, tuple)) else [system]
    first_rows = list(recorder.rows)
    chosen: list[tuple[int, Any, Any]] = []
    for sys_pos, row in first_rows:
        row.metadata["trial"] = 1
        status = row_status(row.error, row.scores, row.metadata.get("score_field"), spec.threshold)
        first = {"pass": 1, "below": 0, "error": 0}.get(status)
        suite = spec.suite_label(row.system)
        again = case.ref.qa < 0 and plan.reask(suite, row.dataset, row.example_id, first)
        row.metadata["adaptive"] = {**marker, "reasked": again, "trials": plan.max_trials if again else 1}
        target = next((s for s in systems if getattr(s, "name", None) == row.system), None)
        if again and target is not None:
            chosen.append((sys_pos, row, target))
    raised: BaseException | None = None
    for sys_pos, _row, target in chosen:
        for trial in range(2, plan.max_trials + 1):
            ref = ExampleRef(spec, case.ref.ds_pos, case.ref.index, case.ref.qa, trial)
            extra = state.recorder(ref, None)
            try:
                extra.run(target)
            except (Exception, pytest.fail.Exception) as exc:  # noqa: BLE001 (every trial runs)
                raised = raised or exc
            for _, r in extra.rows:
                r.metadata["adaptive"] = {**marker, "reasked": True, "trials": plan.max_trials}
                recorder.io[id(r)] = extra.io.get(id(r))
                recorder.rows.append((sys_pos, r))
    if raised is not None:
        raise raised
