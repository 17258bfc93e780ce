"""Coverage of the summary table's 95% intervals, measured.

An interval printed as 95% should contain the true value about 95% of the time. For
each scenario this draws ``--runs`` runs of ``n`` examples from a known distribution,
computes the summary table's interval (``stats.summary_interval``) and the one it
replaced (the percentile bootstrap, exact for 0/1 values), and prints how often each
contains the true mean, with the Monte Carlo standard error.

- pass rates: 0/1 outcomes with a true rate near 0.5, 0.9, 0.98, 0.99 and 1;
- mean scores: mixtures of 0, 1 and a uniform score (token F1 looks like this), and
  a score concentrated near 1.

    python benchmarks/intervals.py                # 4,000 runs per cell
    python benchmarks/intervals.py --runs 20000   # tighter
    python benchmarks/intervals.py --check        # exit 1 when a cell of ours is below 0.93

Seeded: the same runs every time.
"""

from __future__ import annotations

import argparse
import math
import random
import sys

from pytest_context_bench.stats import bootstrap_mean_ci, summary_interval


def _old(values: list[float]) -> tuple[float, float]:
    """The interval before issue 33: a point when all values are equal, the exact
    percentile bootstrap for 0/1 values, the resampled one otherwise."""
    if min(values) == max(values):
        return values[0], values[0]
    if set(values) <= {0.0, 1.0}:
        # the bootstrap of a 0/1 mean: binomial quantiles of k/n
        n, k = len(values), int(sum(values))
        p = k / n
        cdf, lo, hi = 0.0, None, None
        for j in range(n + 1):
            cdf += math.comb(n, j) * p**j * (1 - p) ** (n - j)
            if lo is None and cdf >= 0.025:
                lo = j
            if cdf >= 0.975 - 1e-12:
                hi = j
                break
        return lo / n, (n if hi is None else hi) / n
    return bootstrap_mean_ci(values, 0.95, 400, 0)


def _rate(p: float):
    def draw(rng: random.Random, n: int) -> list[float]:
        return [1.0 if rng.random() < p else 0.0 for _ in range(n)]
    return draw, p


def _mixture(p0: float, p1: float):
    def draw(rng: random.Random, n: int) -> list[float]:
        out = []
        for _ in range(n):
            u = rng.random()
            out.append(0.0 if u < p0 else 1.0 if u < p0 + p1 else rng.random())
        return out
    return draw, p1 + (1 - p0 - p1) * 0.5


def _near_one():
    def draw(rng: random.Random, n: int) -> list[float]:
        return [1.0 if rng.random() < 0.9 else rng.betavariate(8, 2) for _ in range(n)]
    return draw, 0.9 + 0.1 * 0.8


SCENARIOS = [
    ("pass rate 0.5", _rate(0.5)), ("pass rate 0.9", _rate(0.9)),
    ("pass rate 0.98", _rate(0.98)), ("pass rate 0.99", _rate(0.99)),
    ("pass rate 1", _rate(1.0)),
    ("scores 10% 0, 60% 1, rest uniform", _mixture(0.1, 0.6)),
    ("scores 30% 0, 30% 1, rest uniform", _mixture(0.3, 0.3)),
    ("scores 2% 0, 90% 1, rest uniform", _mixture(0.02, 0.9)),
    ("scores 90% 1, rest Beta(8, 2)", _near_one()),
]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=4000)
    parser.add_argument("--sizes", default="20,50,80")
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args()
    sizes = [int(x) for x in args.sizes.split(",")]
    se = math.sqrt(0.95 * 0.05 / args.runs)
    print(f"coverage of 95% intervals, {args.runs:,} runs per cell (Monte Carlo SE about {se:.3f})")
    print(f"{'scenario':36} {'n':>4}  {'ours':>6}  {'before':>6}")
    worst = 1.0
    for name, (draw, truth) in SCENARIOS:
        for n in sizes:
            rng = random.Random(f"{name}/{n}")
            ours = before = 0
            for _ in range(args.runs):
                values = draw(rng, n)
                lo, hi = summary_interval(values)
                ours += lo - 1e-12 <= truth <= hi + 1e-12
                lo, hi = _old(values)
                before += lo - 1e-12 <= truth <= hi + 1e-12
            worst = min(worst, ours / args.runs)
            print(f"{name:36} {n:>4}  {ours / args.runs:6.3f}  {before / args.runs:6.3f}")
    print(f"lowest coverage of ours: {worst:.3f}")
    return 1 if args.check and worst < 0.93 else 0


if __name__ == "__main__":
    sys.exit(main())
