"""Do the baseline gates keep their 5% under the noise LLM Systems have? Simulated.

Every run draws a baseline day and a pull request's day of one System and gates
them as the plugin does, with a tolerance of 0 (the strictest) at 95%. The gates'
decisions are the plugin's own functions: ``stats.paired_p_values``,
``stats.paired_test``, ``stats.paired_ratio_test``, ``stats.one_sample_test``,
``stats.drop_verdict``, ``baseline.holm_levels``, and for adaptive trials
``adaptive.allocation``/``coin``/``any_varies``. What this script adds is the pairing
of trials that ``baseline.balance_trials`` does on rows (the first ``k`` trials of
each side, ``k`` the fewer), done here on lists; ``--check N`` runs ``N`` runs of
each cell through ``baseline.compare`` on real rows as well and stops at the first
verdict that differs (``tests/test_gate_validity.py`` runs it on a few).

A p-value is computed first and the interval only when it is significant: a gate
fails only when its one-sided p-value is at most 0.05 (``drop_verdict``), so this
skips work, never a failure.

The world (per example ``i``, a latent pass probability ``p_i ~ Beta(2, 1.2)``,
unless the scenario says otherwise):

* ``independent``: every trial of both days a fresh draw with probability ``p_i``;
* ``temperature 0``: one answer per example per day (all trials of a day equal),
  right with probability ``p_i``: the answers drift from day to day, not on average;
* ``logit drift s``: per day, ``p_i`` moved by ``s z`` on the logit scale
  (``z ~ N(0, 1)``), trials independent within the day;
* ``near 0 and 1``: ``p_i`` 0.97 or 0.03, trials independent;
* ``near 0``: every ``p_i`` 0.03 (a benchmark the System mostly fails);
* ``added/removed``: ``logit drift 0.6``, and the run has lost 10% of the examples
  and gained as many new ones.

Scores are 0.7 + 0.3u for a pass and 0.7u for a fail (``u`` uniform, drawn per
answer: per day at temperature 0); output tokens ``L_i (1 + 0.1 z)``; latency
``l_i f e^{0.2 z}`` seconds with a per-day load factor ``f = e^{0.1 z}`` (1 in
``independent``).

Gates (all ``--ctxbench-max-drop=METRIC:0``):

* ``1 trial``: one trial per example, paired with the baseline's first (McNemar);
* ``fixed 3``: ``--ctxbench-repeat=3``, 3 trials against the baseline's first 3;
* ``adaptive``: ``--ctxbench-trials=adaptive`` at its defaults (K 4, budget 1.5),
  a baseline of 4 trials;
* ``1 vs 16 (old)``: one trial against the mean of a 16-trial baseline, sign-flip
  test: the pairing before ``balance_trials`` (for comparison, not a gate of ours);
* ``mean score``, ``cost of pass``, ``latency``: one trial;
* ``any of 3``: any of pass rate (1 trial), mean score and cost of pass fails;
  ``any of 3, Holm``: the same three under ``--ctxbench-familywise=holm`` (latency
  is left out of both: it is a threshold, not a test).

Run: ``python benchmarks/gate_validity.py --jobs 2`` (the false-alarm table;
``--table power`` for power and interval coverage, ``--runs N``, ``--sizes``).
"""

from __future__ import annotations

import argparse
import math
import random
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from typing import Any

from pytest_context_bench.adaptive import Design, allocation, any_varies, coin
from pytest_context_bench.baseline import holm_levels
from pytest_context_bench.stats import (
    drop_verdict,
    one_sample_test,
    paired_p_values,
    paired_ratio_test,
    paired_test,
)

ALPHA = 0.05
CONF = 1.0 - ALPHA
BASE_TRIALS = 16
RUN_TRIALS = 4
SCENARIOS = (
    "independent",
    "temperature 0",
    "logit drift 0.3",
    "logit drift 0.6",
    "logit drift 1.0",
    "near 0 and 1",
    "near 0",
    "added/removed",
)
PASS_GATES = ("1 trial", "fixed 3", "adaptive", "1 vs 16 (old)")
OTHER_GATES = ("mean score", "cost of pass", "latency", "any of 3", "any of 3, Holm")
DROPS = ("none", "uniform -5", "concentrated")


def _expit(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x)) if x > -700 else 0.0


def _logit(p: float) -> float:
    p = min(1 - 1e-12, max(1e-12, p))
    return math.log(p / (1 - p))


@dataclass
class Day:
    """One day's trials of every example: outcome, score, tokens, latency."""

    outcomes: list[list[int]]
    scores: list[list[float]]
    tokens: list[list[float]]
    latency: list[list[float]]


def _latent(scenario: str, n: int, rng: random.Random) -> list[float]:
    if scenario == "near 0 and 1":
        return [0.97 if rng.random() < 0.5 else 0.03 for _ in range(n)]
    if scenario == "near 0":
        return [0.03] * n
    return [rng.betavariate(2.0, 1.2) for _ in range(n)]


def _day(scenario: str, probs: list[float], lengths: list[float], lat: list[float], trials: int,
         rng: random.Random) -> Day:
    sigma = {"logit drift 0.3": 0.3, "logit drift 0.6": 0.6, "logit drift 1.0": 1.0,
             "added/removed": 0.6}.get(scenario, 0.0)
    load = 1.0 if scenario == "independent" else math.exp(0.1 * rng.gauss(0.0, 1.0))
    day = Day([], [], [], [])
    for p, length, l0 in zip(probs, lengths, lat):
        q = _expit(_logit(p) + sigma * rng.gauss(0.0, 1.0)) if sigma else p
        if scenario == "temperature 0":
            o = int(rng.random() < q)
            u = rng.random()
            s = 0.7 + 0.3 * u if o else 0.7 * u
            t = max(1.0, length * (1 + 0.1 * rng.gauss(0.0, 1.0)))
            outs, scores, toks = [o] * trials, [s] * trials, [t] * trials
        else:
            outs = [int(rng.random() < q) for _ in range(trials)]
            scores = [0.7 + 0.3 * rng.random() if o else 0.7 * rng.random() for o in outs]
            toks = [max(1.0, length * (1 + 0.1 * rng.gauss(0.0, 1.0))) for _ in range(trials)]
        day.outcomes.append(outs)
        day.scores.append(scores)
        day.tokens.append(toks)
        day.latency.append([l0 * load * math.exp(0.2 * rng.gauss(0.0, 1.0)) for _ in range(trials)])
    return day


def _dropped(probs: list[float], drop: str, rng: random.Random) -> list[float]:
    if drop == "uniform -5":
        return [max(0.0, p - 0.05) for p in probs]
    if drop == "concentrated":
        high = [i for i, p in enumerate(probs) if p >= 0.5]
        hit = set(rng.sample(high, min(len(high), max(1, round(0.1 * len(probs))))))
        return [max(0.0, p - 0.5) if i in hit else p for i, p in enumerate(probs)]
    return list(probs)


def _mean(xs: list[float]) -> float:
    return math.fsum(xs) / len(xs)


def _gate(before: list[float], after: list[float], seed: int, level: float = ALPHA,
          higher: bool = True) -> tuple[bool, float, Any]:
    """(failed, one-sided p of worse, result or None): the max-drop gate at 0."""
    _, p_lower, p_higher, _ = paired_p_values(before, after, seed=seed)
    p = p_lower if higher else p_higher
    if not p <= level:
        return False, p, None
    result = paired_test(before, after, seed=seed, higher_is_better=higher)
    return drop_verdict(result, 0.0, higher, False, 1.0 - level).failed, p, result


@dataclass
class World:
    base: Day
    run: Day
    matched: list[tuple[int, int]]  # (baseline index, run index)
    true_change: float  # the expected pass-rate change over the matched examples


def _world(scenario: str, drop: str, n: int, rng: random.Random) -> World:
    probs = _latent(scenario, n, rng)
    lengths = [rng.uniform(50, 500) for _ in range(n)]
    lat = [rng.uniform(0.2, 2.0) for _ in range(n)]
    base = _day(scenario, probs, lengths, lat, BASE_TRIALS, rng)
    after = _dropped(probs, drop, rng)
    run_idx = list(range(n))
    if scenario == "added/removed":
        k = max(1, n // 10)
        new = _latent(scenario, k, rng)
        run_idx = run_idx[k:] + list(range(n, n + k))
        after = after[k:] + new
        lengths = lengths[k:] + [rng.uniform(50, 500) for _ in range(k)]
        lat = lat[k:] + [rng.uniform(0.2, 2.0) for _ in range(k)]
    run = _day(scenario, after, lengths, lat, RUN_TRIALS, rng)
    matched = [(b, j) for j, b in enumerate(run_idx) if b < n]
    true = _mean([after[j] - probs[b] for b, j in matched])
    return World(base, run, matched, true)


def _adaptive_trials(world: World, seed: int) -> list[int]:
    """Trials per matched example under the plugin's plan (K 4, budget 1.5)."""
    design = Design(RUN_TRIALS, 1.5, RUN_TRIALS)
    # The plan reads a baseline of RUN_TRIALS trials, scored (as in
    # through_compare) by the pass outcome alone.
    base_values = [world.base.outcomes[b][:RUN_TRIALS] for b in range(len(world.base.outcomes))]
    k = [1] * len(world.matched)
    if not any_varies(base_values):
        return k
    n = len(world.base.outcomes)
    order = sorted((coin(seed, "sys", "qa", str(b)), b) for b in range(n))
    extra, chosen = allocation(design, n, n)
    picked = {b for _, b in order[:chosen]}
    return [1 + extra if b in picked else 1 for b, _ in world.matched]


def evaluate(world: World, seed: int, coverage: bool, others: bool) -> dict[str, Any]:
    """Each gate's verdict on one world (and the 1-trial interval's coverage)."""
    out = _pass_gates(world, seed, coverage)
    if not others:
        return out
    base, run, m = world.base, world.run, world.matched
    b1 = [float(base.outcomes[b][0]) for b, _ in m]
    a1 = [float(run.outcomes[j][0]) for _, j in m]
    p_pass = out.pop("_p")
    sb = [base.scores[b][0] for b, _ in m]
    sa = [run.scores[j][0] for _, j in m]
    out["mean score"], p_score, _ = _gate(sb, sa, seed)
    cost = paired_ratio_test(
        [base.tokens[b][0] for b, _ in m], b1, [run.tokens[j][0] for _, j in m], a1, seed=seed,
    )
    out["cost of pass"] = drop_verdict(cost, 0.0, False, False, CONF).failed
    base_latency = _mean([base.latency[b][0] for b in range(len(base.latency))])
    lat = one_sample_test([run.latency[j][0] for _, j in m], base_latency, seed=seed)
    out["latency"] = drop_verdict(lat, 0.0, False, False, CONF).failed
    # The three tests (latency is a threshold: docs/gating.md).
    out["any of 3"] = any(out[g] for g in ("1 trial", "mean score", "cost of pass"))
    ps = [p_pass, p_score, cost.p_worse(False)]
    levels = holm_levels(ps, ALPHA)
    holm = False
    for (level, _), name in zip(levels, ("pass", "score", "cost")):
        if level <= 0.0:
            continue
        if name == "pass":
            holm |= _gate(b1, a1, seed, level)[0]
        elif name == "score":
            holm |= _gate(sb, sa, seed, level)[0]
        else:
            holm |= drop_verdict(cost, 0.0, False, False, 1.0 - level).failed
    out["any of 3, Holm"] = holm
    return out


def _cell(args: tuple[str, str, int, int, int, bool, bool]) -> dict[str, int]:
    scenario, drop, n, start, runs, coverage, others = args
    tally: dict[str, int] = {}
    for r in range(start, start + runs):
        rng = random.Random(f"gate-validity|{scenario}|{drop}|{n}|{r}")
        world = _world(scenario, drop, n, rng)
        res = evaluate(world, r, coverage, others)
        res.pop("_p", None)
        for k, v in res.items():
            tally[k] = tally.get(k, 0) + int(bool(v))
    tally["runs"] = runs
    return tally


def _pass_gates(world: World, seed: int, coverage: bool) -> dict[str, Any]:
    out: dict[str, Any] = {}
    base, run, m = world.base, world.run, world.matched

    def balanced(ks: list[int]) -> tuple[list[float], list[float]]:
        return (
            [_mean(base.outcomes[b][:k]) for (b, _), k in zip(m, ks)],
            [_mean(run.outcomes[j][:k]) for (_, j), k in zip(m, ks)],
        )

    b1, a1 = balanced([1] * len(m))
    out["1 trial"], out["_p"], res = _gate(b1, a1, seed)
    if coverage:
        res = res or paired_test(b1, a1, seed=seed)
        out["covered"] = res.ci_low <= world.true_change <= res.ci_high
    out["fixed 3"] = _gate(*balanced([3] * len(m)), seed)[0]
    out["adaptive"] = _gate(*balanced(_adaptive_trials(world, seed)), seed)[0]
    out["1 vs 16 (old)"] = _gate([_mean(base.outcomes[b]) for b, _ in m], a1, seed)[0]
    return out


def through_compare(world: World, seed: int) -> dict[str, bool]:
    """The pass-rate gates' verdicts on ``world`` through ``baseline.compare`` on real
    rows (and, for adaptive trials, ``plugin.trials.AdaptivePlan``): what the fast
    path above must equal."""
    from pathlib import Path

    from pytest_context_bench.baseline import Baseline, Tolerance, compare
    from pytest_context_bench.plugin.trials import AdaptivePlan
    from pytest_context_bench.report.run import Record, RunReport
    from pytest_context_bench.results import EvalRow

    info = {"label": "sys", "origin": "cli", "system": "sys", "threshold": 0.5,
            "score_field": "pass", "limits": {}, "strict": False, "datasets": ["qa"]}

    def row(example: int, trial: int, passed: int, extra: dict[str, Any] | None = None) -> Record:
        metadata: dict[str, Any] = {"score_field": "pass", "trial": trial, **(extra or {})}
        r = EvalRow("sys", str(example), {"pass": float(passed)}, 10, 10, metadata, dataset="qa")
        return Record("sys", "cli", (example, trial), "pass" if passed else "below", r)

    out: dict[str, bool] = {}
    ids = {j: b for b, j in world.matched}

    def verdict(base_trials: int, records: list[Record]) -> bool:
        base = [row(b, t + 1, o) for b, outs in enumerate(world.base.outcomes) for t, o in enumerate(outs[:base_trials])]
        baseline = Baseline(Path("b.json"), "bench", None, {}, ["sys"], {}, {}, [info], base)
        comparison = compare(baseline, RunReport({}, [info], [], records),
                             {"pass_rate": Tolerance(0.0)}, seed=seed)
        (m,) = [m for m in comparison.suites[0].metrics if m.metric == "pass_rate"]
        return m.failed

    def ident(j: int) -> int:
        return ids.get(j, 10**6 + j)

    for name, trials, base_trials in (("1 trial", 1, RUN_TRIALS), ("fixed 3", 3, RUN_TRIALS)):
        recs = [row(ident(j), t + 1, world.run.outcomes[j][t]) for j in range(len(world.run.outcomes)) for t in range(trials)]
        out[name] = verdict(base_trials, recs)
    base = [row(b, t + 1, o) for b, outs in enumerate(world.base.outcomes) for t, o in enumerate(outs[:RUN_TRIALS])]
    plan = AdaptivePlan(Baseline(Path("b.json"), "bench", None, {}, ["sys"], {}, {}, [info], base),
                        RUN_TRIALS, 1.5, seed)
    recs = []
    for j in range(len(world.run.outcomes)):
        more = plan.more_trials("sys", "qa", str(ident(j)))
        meta = {"adaptive": {"max_trials": RUN_TRIALS, "budget": 1.5, "reasked": more > 0, "trials": 1 + more}}
        recs += [row(ident(j), t + 1, world.run.outcomes[j][t], meta) for t in range(1 + more)]
    out["adaptive"] = verdict(RUN_TRIALS, recs)
    return out


def _run(cells: list[tuple[str, str, int]], runs: int, jobs: int, coverage: bool, others: bool
         ) -> dict[tuple[str, str, int], dict[str, int]]:
    chunk = max(1, runs // (4 * max(1, jobs)))
    work = [
        (s, d, n, start, min(chunk, runs - start), coverage, others)
        for s, d, n in cells
        for start in range(0, runs, chunk)
    ]
    totals: dict[tuple[str, str, int], dict[str, int]] = {c: {} for c in cells}
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        for (s, d, n, *_), tally in zip(work, pool.map(_cell, work)):
            acc = totals[(s, d, n)]
            for k, v in tally.items():
                acc[k] = acc.get(k, 0) + v
    return totals


def _rate(hits: int, runs: int) -> str:
    return f"{hits / runs:.3f}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--runs", type=int, default=2000)
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--table", choices=("false-alarm", "power"), default="false-alarm")
    ap.add_argument("--sizes", type=int, nargs="+", default=None)
    ap.add_argument("--scenarios", nargs="+", default=None)
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    if args.table == "false-alarm":
        sizes = args.sizes or [10, 30, 300]
        scenarios = args.scenarios or list(SCENARIOS)
        # the other gates' bootstraps cost O(n) per resample: at 300 examples only
        # the pass-rate gates run
        cells_small = [(s, "none", n) for s in scenarios for n in sizes if n <= 30]
        cells_big = [(s, "none", n) for s in scenarios for n in sizes if n > 30]
        totals = _run(cells_small, args.runs, args.jobs, False, True)
        totals.update(_run(cells_big, args.runs, args.jobs, False, False))
        cols = PASS_GATES + OTHER_GATES
        se = math.sqrt(ALPHA * (1 - ALPHA) / args.runs)
        print(
            f"False alarms of an unchanged System: {args.runs} runs per cell (Monte Carlo"
            f" error at a rate of 0.05: ±{se:.4f}), max-drop METRIC:0 at 95%; '-': not run"
        )
        print("| scenario | examples | " + " | ".join(cols) + " |")
        print("|---|---|" + "---|" * len(cols))
        for s in scenarios:
            for n in sizes:
                t = totals[(s, "none", n)]
                cells = [_rate(t[c], t["runs"]) if c in t else "-" for c in cols]
                print(f"| {s} | {n} | " + " | ".join(cells) + " |")
    else:
        sizes = args.sizes or [300]
        scenarios = args.scenarios or ["independent", "temperature 0", "logit drift 0.6"]
        cells = [(s, d, n) for s in scenarios for d in DROPS for n in sizes]
        totals = _run(cells, args.runs, args.jobs, True, False)
        cols = PASS_GATES
        print(
            f"Power of the pass-rate gates: {args.runs} runs per cell, max-drop pass_rate:0 at"
            " 95%; 'covered': the 1-trial comparison's 95% interval holds the true change"
        )
        print("| scenario | examples | drop | " + " | ".join(cols) + " | covered |")
        print("|---|---|---|" + "---|" * (len(cols) + 1))
        for s in scenarios:
            for n in sizes:
                for d in DROPS:
                    t = totals[(s, d, n)]
                    cells_ = [_rate(t[c], t["runs"]) for c in cols]
                    print(f"| {s} | {n} | {d} | " + " | ".join(cells_) + f" | {_rate(t['covered'], t['runs'])} |")
    print(f"({time.perf_counter() - t0:.0f} s)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
