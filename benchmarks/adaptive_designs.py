"""Which examples should adaptive trials ask again? Rules compared under one exact test.

docs/gating.md ("Adaptive trials") says the plugin spreads its extra trials over the
examples without looking at the run's answers, because rules that look did no better on
a drop shared by all examples. This script is that measurement. It is an exploration
written with numpy (the test extra), not the plugin's code: the plugin's own gate is
measured by ``benchmarks/adaptive_trials.py``.

Every rule asks each example once and asks a share of them once more (K = 2), so that
an unchanged System spends 1.5 calls per example. A rule may look at the first ``s``
baseline trials (the *selection* trials) and at the run's first answer; the test then
compares the run's trials with the other ``R - s`` baseline trials, exactly: given the
passes ``t`` of an example's pooled trials, the run's share is distributed as the
labellings allow, each weighted by the chance the rule had to pick that example
(``P(asked again | selection trials, first answer)``, known by design). The statistic
is the ``1 / (p~ (1 - p~))``-weighted sum of the run's passes, its null drawn by Monte
Carlo, as in the plugin. A rule's chance of picking an example is scaled from the
selection trials alone, so the test stays exact.

Rules:

* spread: every example alike (the plugin's choice; ``s = 0``, every baseline trial
  in the test);
* first failed: an example whose first answer failed is 2.5x as likely to be asked
  again (``s = 1``);
* flipped: an example whose first answer disagrees with its selection trial is 3x as
  likely (``s = 1``);
* baseline certain: an example whose two selection trials both passed is 3x as likely
  (``s = 2``);
* and, for reference, 3 fixed trials against a baseline of 3 under the same test.

Run: ``python benchmarks/adaptive_designs.py`` (500 runs per cell, 400 examples,
``p ~ Beta(2, 1.2)``, a baseline of 16 trials; ``--runs N``, ``--baseline R``).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from math import comb

import numpy as np

N, K, BUDGET = 400, 2, 1.5
Pref = Callable[[np.ndarray, int, np.ndarray], np.ndarray]

RULES: dict[str, tuple[int, Pref]] = {
    "spread": (0, lambda ssum, s, c1: np.ones(len(c1))),
    "first failed": (1, lambda ssum, s, c1: np.where(c1 == 0, 1.0, 0.4)),
    "flipped": (1, lambda ssum, s, c1: np.where(c1 != ssum, 1.0, 1 / 3)),
    "baseline certain": (2, lambda ssum, s, c1: np.where(ssum == s, 1.0, 1 / 3)),
}
#: For reference: the same test on 3 fixed trials against a baseline of 3.
FIXED3 = "fixed 3, baseline 3 (same test)"


def one_run(rng: np.random.Generator, rule: str, scenario: str, r_total: int, draws: int) -> tuple[bool, float]:
    fixed = rule == FIXED3
    s, pref = RULES["spread" if fixed else rule]
    trials = 3 if fixed else K
    if fixed:
        r_total = 3
    p = rng.beta(2.0, 1.2, N)
    if scenario == "uniform":
        q = np.maximum(p - 0.05, 0.0)
    elif scenario == "concentrated":
        q = p.copy()
        hit = rng.choice(np.flatnonzero(p >= 0.5), N // 10, replace=False)
        q[hit] -= 0.5
    else:
        q = p
    base = rng.random((N, r_total)) < p[:, None]
    ssum, hsum, h = base[:, :s].sum(1), base[:, s:].sum(1), r_total - s
    # Scale the rule to the budget from the selection trials alone (an unchanged
    # System's first answer passes about as often as they did).
    p_first = (ssum + 1.0) / (s + 2.0) if s else np.full(N, 0.5)
    pref1, pref0 = pref(ssum, s, np.ones(N, int)), pref(ssum, s, np.zeros(N, int))
    target = N if fixed else (BUDGET - 1.0) * N / (K - 1)
    lo, hi = 0.0, 1e6
    for _ in range(80):
        mid = (lo + hi) / 2
        spent = (p_first * np.minimum(1, mid * pref1) + (1 - p_first) * np.minimum(1, mid * pref0)).sum()
        lo, hi = (mid, hi) if spent < target else (lo, mid)
    pick1, pick0 = np.minimum(1, hi * pref1), np.minimum(1, hi * pref0)
    if fixed:
        pick1 = pick0 = np.ones(N)
    first = (rng.random(N) < q).astype(int)
    again = rng.random(N) < np.where(first == 1, pick1, pick0)
    k = np.where(again, trials, 1)
    runs = first + rng.binomial(k - 1, q)
    t = hsum + runs
    pmf = np.zeros((N, trials + 1))
    for i in range(N):
        for f in (0, 1):
            chance = (pick1[i] if f else pick0[i]) if k[i] == trials else 1 - (pick1[i] if f else pick0[i])
            for rest in range(k[i]):
                c = f + rest
                if 0 <= t[i] - c <= h:
                    pmf[i, c] += comb(h, t[i] - c) * comb(k[i] - 1, rest) * chance
        pmf[i] /= pmf[i].sum()
    pt = (ssum + t + 1.0) / (s + h + k + 2.0)
    w = 1.0 / (pt * (1.0 - pt))
    cdf = np.cumsum(pmf, 1)
    null = (rng.random((draws, N))[:, :, None] > cdf[None, :, :] - 1e-12).sum(2)
    stat, null_stats = (w * runs).sum(), (null * w).sum(1)
    p_value = (1 + (null_stats <= stat + 1e-9).sum()) / (draws + 1)
    return bool(p_value <= 0.05), float(k.mean())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=500)
    parser.add_argument("--baseline", type=int, default=16)
    parser.add_argument("--draws", type=int, default=999)
    args = parser.parse_args(argv)
    started = time.perf_counter()
    print(f"{args.runs} runs per cell, {N} examples, p ~ Beta(2, 1.2), baseline {args.baseline} trials,"
          f" K = {K}, budget {BUDGET}, exact weighted test at 95%")
    print("| rule | false alarm | power, uniform -5 | power, concentrated | calls/example |")
    print("|---|---|---|---|---|")
    for rule in [*RULES, FIXED3]:
        cells, calls = [], []
        for j, scenario in enumerate(("unchanged", "uniform", "concentrated")):
            rng = np.random.default_rng([2026, j])
            out = [one_run(rng, rule, scenario, args.baseline, args.draws) for _ in range(args.runs)]
            cells.append(np.mean([a for a, _ in out]))
            calls.extend(c for _, c in out)
        print(f"| {rule} | " + " | ".join(f"{x:.3f}" for x in cells) + f" | {np.mean(calls):.2f} |", flush=True)
    print(f"({time.perf_counter() - started:.0f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
