"""Adaptive trials in the run (``--ctxbench-trials=adaptive``): each command-line
item asks its example once, then, when :mod:`pytest_context_bench.adaptive` says
so, asks it again (up to ``--ctxbench-max-trials`` trials in all) in the same item.

The choice depends only on the baseline (whether its trials of any example
differ) and a seeded hash of the example's identity, so it is made where the item runs (any xdist worker, any shard) and is
the same in every mode; each trial is a row of its own
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
    #: how many more trials a chosen example gets
    extra: int
    #: (dataset, example id) of the examples asked again
    chosen: set[tuple[str, str]] = field(default_factory=set)
    #: the baseline's trials of every example agree: nothing is asked again
    deterministic: bool = False


class AdaptivePlan:
    """Per process: for each baseline suite, its design and the examples it asks
    again (from the baseline and the seed only: the same in every process)."""

    def __init__(self, baseline: Any, max_trials: int, budget: float, seed: int) -> None:
        from ..adaptive import allocation, any_varies, coin
        from ..baseline import adaptive_design, trial_values

        self.max_trials, self.budget, self.seed = max_trials, budget, seed
        self.suites: dict[str, _Suite] = {}
        by_suite: dict[str, list[Any]] = {}
        for rec in baseline.records:
            by_suite.setdefault(rec.suite, []).append(rec)
        marker = {"max_trials": max_trials, "budget": budget}
        for label, recs in by_suite.items():
            trials = trial_values(recs, baseline.suite(label) or {})
            design = adaptive_design(marker, recs)  # raises: too few trials
            if not any_varies(trials.values()):
                # Every example's trials agree: a deterministic System, whose second
                # answer is its first again. Nothing is bought.
                self.suites[label] = _Suite(design, 0, set(), deterministic=True)
                continue
            order = sorted((coin(seed, label, *key), key) for key in trials)
            extra, chosen = allocation(design, len(order), len(order))
            self.suites[label] = _Suite(design, extra, {key for _, key in order[:chosen]})

    def more_trials(self, suite: str, dataset: str, example_id: str) -> int:
        """How many more trials this example gets (0: none)."""
        entry = self.suites.get(suite)
        if entry is None or (dataset, example_id) not in entry.chosen:
            return 0
        return int(entry.extra)


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
    plan = plan_for(state)
    recorder = case.recorder
    if plan is None or recorder is None:
        return
    marker = {"max_trials": plan.max_trials, "budget": plan.budget}
    spec = case.ref.spec
    systems = list(system) if isinstance(system, (list, tuple)) else [system]
    first_rows = list(recorder.rows)
    chosen: list[tuple[int, int, Any]] = []
    for sys_pos, row in first_rows:
        row.metadata["trial"] = 1
        suite = spec.suite_label(row.system, case.ref.ds_pos)
        more = plan.more_trials(suite, row.dataset, row.example_id) if case.ref.qa < 0 else 0
        row.metadata["adaptive"] = {**marker, "reasked": more > 0, "trials": 1 + more}
        entry = plan.suites.get(suite)
        if entry is not None and entry.deterministic:
            row.metadata["adaptive"]["deterministic"] = True
        target = next((s for s in systems if getattr(s, "name", None) == row.system), None)
        if more and target is not None:
            chosen.append((sys_pos, more, target))
    raised: BaseException | None = None
    for sys_pos, more, target in chosen:
        for trial in range(2, more + 2):
            ref = ExampleRef(spec, case.ref.ds_pos, case.ref.index, case.ref.qa, trial)
            extra = state.recorder(ref, None)
            try:
                extra.run(target)
            except (Exception, pytest.fail.Exception) as exc:  # noqa: BLE001 (every trial runs)
                raised = raised or exc
            for _, r in extra.rows:
                r.metadata["adaptive"] = {**marker, "reasked": True, "trials": 1 + more}
                recorder.io[id(r)] = extra.io.get(id(r))
                recorder.rows.append((sys_pos, r))
    if raised is not None:
        raise raised
