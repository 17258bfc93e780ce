"""Adaptive trials against fixed trials: false alarms, power and calls, simulated.

Each run draws 400 examples with pass probabilities p ~ Beta(2, 1.2), a baseline
(every trial a fresh draw), and a pull request's run of the same examples
(fresh draws again), then gates ``--ctxbench-max-drop=pass_rate:0`` at 95% with the
plugin's own code: ``pytest_context_bench.baseline.compare`` (which runs the
adaptive test for adaptive rows), and, for adaptive runs, the plugin's own choice
of the examples to ask again (``plugin.trials.AdaptivePlan``). Nothing of the test
is re-implemented here.

Scenarios: an unchanged System (false alarm), every example 5 points worse
(``p - 0.05``, floored at 0: "uniform"), and 10% of the examples 50 points worse,
chosen among those with p >= 0.5 (a 5-point drop of the mean, "concentrated").

Configurations, each with its baseline saved the way docs/gating.md recommends:

* fixed 1: one trial per example, the baseline one trial;
* fixed 3: ``--ctxbench-repeat=3`` on both sides;
* adaptive: ``--ctxbench-trials=adaptive`` at the defaults
  (``--ctxbench-trial-budget=1.5``, ``--ctxbench-max-trials=4``), the baseline
  ``--ctxbench-repeat=16`` as recommended (and 8, 12 and 20, to show what the
  baseline buys).

Run: ``python benchmarks/adaptive_trials.py`` (500 runs per cell; ``--runs N``,
``--jobs J`` for J processes, ``--resamples B`` for the fixed configurations'
sign-flip and bootstrap resamples, default 199: the sign-flip p-value is valid at
any number of resamples).
"""

from __future__ import annotations

import argparse
import math
import random
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

from pytest_context_bench.baseline import Baseline, Tolerance, compare
from pytest_context_bench.plugin.trials import AdaptivePlan
from pytest_context_bench.report.run import Record, RunReport
from pytest_context_bench.results import EvalRow

N_EXAMPLES = 400
SUITE, DATASET = "sys", "qa"
SCENARIOS = ("unchanged", "uniform", "concentrated")
#: name → (current trials or ("adaptive", K), baseline trials)
CONFIGS: dict[str, tuple[Any, int]] = {
    "fixed 1": (1, 1),
    "fixed 3": (3, 3),
    "adaptive (baseline 16)": (("adaptive", 4), 16),
    "adaptive (baseline 8)": (("adaptive", 4), 8),
    "adaptive (baseline 12)": (("adaptive", 4), 12),
    "adaptive (baseline 20)": (("adaptive", 4), 20),
}
SUITE_INFO = {"label": SUITE, "origin": "cli", "system": SUITE, "threshold": 0.5,
              "score_field": "pass", "limits": {}, "strict": False, "datasets": [DATASET]}


def _row(example: int, trial: int | None, passed: bool, extra: dict[str, Any] | None = None) -> Record:
    metadata: dict[str, Any] = {"score_field": "pass"}
    if trial is not None:
        metadata["trial"] = trial
    if extra:
        metadata.update(extra)
    row = EvalRow(SUITE, f"e{example}", {"pass": 1.0 if passed else 0.0}, 10, 10, metadata,
                  dataset=DATASET)
    return Record(SUITE, "cli", (example, trial or 0), "pass" if passed else "below", row)


def _probabilities(rng: random.Random, scenario: str) -> tuple[list[float], list[float]]:
    ps = [rng.betavariate(2.0, 1.2) for _ in range(N_EXAMPLES)]
    if scenario == "unchanged":
        return ps, ps
    if scenario == "uniform":
        return ps, [max(p - 0.05, 0.0) for p in ps]
    high = [i for i, p in enumerate(ps) if p >= 0.5]
    hit = set(rng.sample(high, N_EXAMPLES // 10))
    return ps, [p - 0.5 if i in hit else p for i, p in enumerate(ps)]


def one_run(config: str, scenario: str, seed: int, resamples: int) -> tuple[bool, float]:
    """(did the gate fail?, calls per example) of one simulated pull request."""
    current, base_trials = CONFIGS[config]
    rng = random.Random(f"{config}|{scenario}|{seed}")
    ps, qs = _probabilities(rng, scenario)
    repeated = base_trials > 1
    base_records = [
        _row(i, t if repeated else None, rng.random() < p)
        for i, p in enumerate(ps)
        for t in range(1, base_trials + 1)
    ]
    baseline = Baseline(Path("baseline.json"), "bench", None, {}, [SUITE], {}, {}, [SUITE_INFO],
                        base_records)
    records: list[Record] = []
    if isinstance(current, tuple):
        k = current[1]
        plan = AdaptivePlan(baseline, k, 1.5, seed)
        marker = {"max_trials": k, "budget": 1.5}
        for i, q in enumerate(qs):
            more = plan.more_trials(SUITE, DATASET, f"e{i}")
            info = {"adaptive": {**marker, "reasked": more > 0, "trials": 1 + more}}
            records.extend(_row(i, t, rng.random() < q, info) for t in range(1, more + 2))
    else:
        records = [
            _row(i, t if current > 1 else None, rng.random() < q)
            for i, q in enumerate(qs)
            for t in range(1, current + 1)
        ]
    report = RunReport({}, [SUITE_INFO], [], records)
    comparison = compare(baseline, report, {"pass_rate": Tolerance(0.0)}, confidence=0.95,
                         seed=seed, n_resamples=resamples)
    (metric,) = [m for m in comparison.suites[0].metrics if m.metric == "pass_rate"]
    return metric.failed, len(records) / N_EXAMPLES


def _cell(args: tuple[str, str, int, int, int]) -> tuple[str, str, float, float]:
    config, scenario, runs, first_seed, resamples = args
    results = [one_run(config, scenario, first_seed + s, resamples) for s in range(runs)]
    return (config, scenario, sum(f for f, _ in results) / runs,
            math.fsum(c for _, c in results) / runs)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=500)
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--resamples", type=int, default=199)
    parser.add_argument("--configs", nargs="*", default=list(CONFIGS))
    parser.add_argument("--scenarios", nargs="*", default=list(SCENARIOS))
    args = parser.parse_args(argv)
    started = time.perf_counter()
    # Chunks of 50 runs per task, so that --jobs shares the work evenly.
    chunk = 50
    tasks = [
        (config, scenario, min(chunk, args.runs - start), start, args.resamples)
        for config in args.configs
        for scenario in args.scenarios
        for start in range(0, args.runs, chunk)
    ]
    totals: dict[tuple[str, str], list[float]] = {}
    with ProcessPoolExecutor(args.jobs) as pool:
        for (config, scenario, rate, calls), task in zip(pool.map(_cell, tasks), tasks):
            cell = totals.setdefault((config, scenario), [0.0, 0.0, 0.0])
            cell[0] += rate * task[2]
            cell[1] += calls * task[2]
            cell[2] += task[2]
    print(f"{args.runs} runs per cell, {N_EXAMPLES} examples, p ~ Beta(2, 1.2),"
          " gate --ctxbench-max-drop=pass_rate:0 at 95%,"
          f" {args.resamples} resamples for the fixed configurations")
    names = {"unchanged": "false alarm", "uniform": "power, uniform -5",
             "concentrated": "power, concentrated"}
    header = ("configuration", *(names[s] for s in args.scenarios), "calls/example")
    rows = []
    for config in args.configs:
        cells = {s: totals[(config, s)] for s in args.scenarios}
        calls = math.fsum(c[1] for c in cells.values()) / math.fsum(c[2] for c in cells.values())
        rows.append((config, *(f"{cells[s][0] / cells[s][2]:.3f}" for s in args.scenarios),
                     f"{calls:.2f}"))
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(header)]
    print("| " + " | ".join(h.ljust(w) for h, w in zip(header, widths)) + " |")
    print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for r in rows:
        print("| " + " | ".join(v.ljust(w) for v, w in zip(r, widths)) + " |")
    print(f"({time.perf_counter() - started:.0f} s)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
