"""Adaptive trials (``--ctxbench-trials=adaptive``): which examples to ask again, and
the pass-rate test a run with unequal trials per example is gated with. Pure
standard library.

The design (docs/gating.md, "Adaptive trials", gives the argument and the
measurements)
-----------------------------------------------------------------------------
The baseline holds ``R`` trials of every example (saved with
``--ctxbench-repeat=R``; 16 recommended). The run asks each example once, and asks
a share of the examples again, so that the run spends ``budget`` calls per example:

* **The pool.** Only an example the baseline saw pass at least once can show a drop;
  one that failed every baseline trial is never asked again (its share of the budget
  goes to the others).
* **How many more.** One more trial each for as many pool examples as the budget
  pays for; when it pays for more than one per pool example, ``e`` more each, up to
  ``K - 1`` (``K`` = ``--ctxbench-max-trials``). Spreading the trials is what the
  information of a shared drop asks for: per example it is concave in the trials.
* **Which.** The pool examples with the smallest seeded hash of their identity (a
  coin that is the same in every process, mode, shard and replay). The choice
  depends on the baseline and the seed only, never on the run's outcomes.

The test is **exact and conditional**, stratified by example: if the System did
not change, an example's trials of both runs are independent draws with one pass
probability, so given how many of them passed (``t``), which of them are the run's
is a uniform labelling, and the run's passes in it are hypergeometric (restricted,
for a pool example, to labellings that leave the baseline a pass: the pool was
chosen on that). The statistic weighs each example's run passes by
``1 / (p~ (1 - p~))``, ``p~ = (t + 1) / (n + 2)`` (a drop of a few points moves a
near-certain example's odds most), a function of what the test conditions on; its
null distribution is the convolution of the examples' weighted hypergeometric
counts, read from seeded Monte Carlo draws, and ``(1 + #{T* <= T}) / (B + 1)`` is a
valid p-value at any number of draws ``B``. The verdict's interval is the
test-based one (Miettinen): the estimate of the change (run − baseline pass rate,
per example, averaged) with the standard error the test's p-value implies, so the
interval and the test agree.
"""

from __future__ import annotations

import bisect
import hashlib
import math
import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from statistics import NormalDist

from .errors import ConfigError
from .stats import PairedResult

__all__ = [
    "ADAPTIVE_TEST",
    "REPLICATES",
    "Design",
    "Example",
    "adaptive_test",
    "allocation",
    "coin",
    "in_pool",
]

#: ``PairedResult.test`` of the adaptive pass-rate test.
ADAPTIVE_TEST = "adaptive-stratified"
#: Monte Carlo draws of the test's null distribution.
REPLICATES = 1999
#: The number of normal replicates standing for the estimate's distribution in
#: :attr:`PairedResult.boot_diffs` (read by ``drop_verdict``).
_NORMAL_REPLICATES = 2000
_N = NormalDist()


@dataclass(frozen=True)
class Design:
    """The constants of one suite's adaptive design, fixed before any outcome.

    :param max_trials: ``K``, the most trials one example gets (``>= 2``).
    :param budget: calls per example, in passes over the examples (``> 1``).
    :param baseline_trials: ``R``, the baseline's trials per example (``>= K``).
    """

    max_trials: int
    budget: float
    baseline_trials: int

    def __post_init__(self) -> None:
        if self.max_trials < 2:
            raise ConfigError(f"adaptive trials need max_trials >= 2, got {self.max_trials}.")
        if not self.budget > 1.0:
            raise ConfigError(f"adaptive trials need a budget > 1 call per example, got {self.budget}.")
        if self.baseline_trials < self.max_trials:
            raise ConfigError(
                f"adaptive trials with --ctxbench-max-trials={self.max_trials} need a"
                f" baseline with at least {self.max_trials} trials per example (saved with"
                f" --ctxbench-repeat={self.max_trials} or more; 16 recommended); it has"
                f" {self.baseline_trials}."
            )


def in_pool(baseline: Sequence[int | None]) -> bool:
    """True when an example's baseline trials (1, 0 or None) passed at least once:
    only such an example can show a drop, and only such one is asked again."""
    return any(b == 1 for b in baseline)


def allocation(design: Design, examples: int, pool: int) -> tuple[int, int]:
    """``(extra, chosen)``: how many more trials each chosen example gets, and how
    many pool examples are chosen, so that ``examples + extra * chosen`` calls stay
    within ``budget * examples``.

    :param examples: the suite's examples (each costs its first call).
    :param pool: those of them in the pool (:func:`in_pool`).
    """
    if pool <= 0 or examples <= 0:
        return 0, 0
    calls = (design.budget - 1.0) * examples
    extra = min(design.max_trials - 1, max(1, math.ceil(calls / pool - 1e-9)))
    return extra, min(pool, int(math.floor(calls / extra + 1e-9)))


def coin(seed: int, suite: str, dataset: str, example_id: str) -> float:
    """A uniform number in ``[0, 1)`` fixed by the example's identity and the seed:
    the same in every process, mode and replay."""
    text = "\x1f".join(("ctxbench-adaptive", str(seed), suite, dataset, example_id))
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()
    return int.from_bytes(digest[:7], "big") / float(1 << 56)


@dataclass(frozen=True)
class Example:
    """One matched example's pass outcomes (1, 0, or ``None`` when unscored).

    :param first: the run's first trial.
    :param extra: the run's later trials (empty when not asked again).
    :param baseline: the baseline's trials, in trial order.
    """

    first: int | None
    extra: tuple[int | None, ...]
    baseline: tuple[int | None, ...]


def _stratum(r: int, k: int, t: int, pooled: bool) -> list[float]:
    """The null pmf of the run's passes in one example: ``k`` run trials and ``r``
    baseline trials, ``t`` passes in all; index ``c`` (``c`` passes of the run).
    ``pooled``: only labellings that leave the baseline a pass."""
    top = min(k, t - 1) if pooled else min(k, t)
    pmf = [0.0] * (k + 1)
    for c in range(max(0, t - r), top + 1):
        pmf[c] = float(math.comb(r, t - c) * math.comb(k, c))
    total = math.fsum(pmf)
    return [x / total for x in pmf] if total > 0 else pmf


def _sum_cdf(pmf: list[float], m: int) -> list[float]:
    """The CDF of the sum of ``m`` independent draws from ``pmf`` (exact
    convolution)."""
    dist = [1.0]
    for _ in range(m):
        new = [0.0] * (len(dist) + len(pmf) - 1)
        for s, ps in enumerate(dist):
            if ps:
                for c, pc in enumerate(pmf):
                    if pc:
                        new[s + c] += ps * pc
        dist = new
    out, acc = [], 0.0
    for x in dist:
        acc += x
        out.append(acc)
    return out


@dataclass(frozen=True)
class _Group:
    """Examples with the same ``(r, k, t, pooled)``: one weight, one null pmf."""

    weight: float
    cdf: list[float]
    observed: int


def _groups(examples: Iterable[Example]) -> tuple[list[_Group], list[float], list[float]]:
    """The informative strata grouped, and every example's (difference, baseline
    mean)."""
    tally: dict[tuple[int, int, int, bool], list[int]] = {}
    diffs: list[float] = []
    before: list[float] = []
    for ex in examples:
        if ex.first is None:
            continue
        run = [x for x in (ex.first, *ex.extra) if x is not None]
        base = [b for b in ex.baseline if b is not None]
        if not base:
            continue
        diffs.append(sum(run) / len(run) - sum(base) / len(base))
        before.append(sum(base) / len(base))
        pooled = in_pool(base)
        if not pooled:  # every baseline trial failed: the run's passes are known
            continue
        key = (len(base), len(run), sum(run) + sum(base), pooled)
        tally.setdefault(key, []).append(sum(run))
    groups: list[_Group] = []
    for (r, k, t, pooled), observed in sorted(tally.items()):
        pmf = _stratum(r, k, t, pooled)
        if sum(1 for x in pmf if x > 0) < 2:
            continue  # one possible count: no information
        n = r + k
        p = (t + 1.0) / (n + 2.0)
        groups.append(_Group(1.0 / (p * (1.0 - p)), _sum_cdf(pmf, len(observed)), sum(observed)))
    return groups, diffs, before


def _p_values(groups: list[_Group], seed: int, replicates: int) -> tuple[float, float]:
    """Monte Carlo ``(P(T* <= T), P(T* >= T))`` of the weighted statistic, each
    ``(1 + hits) / (B + 1)``."""
    if not groups:
        return 1.0, 1.0
    observed = math.fsum(g.weight * g.observed for g in groups)
    eps = 1e-9 * max(1.0, abs(observed))
    rng = random.Random(f"ctxbench-adaptive-test|{seed}")
    low = high = 0
    for _ in range(replicates):
        total = math.fsum(
            g.weight * min(bisect.bisect_right(g.cdf, rng.random()), len(g.cdf) - 1) for g in groups
        )
        low += total <= observed + eps
        high += total >= observed - eps
    return (1 + low) / (replicates + 1), (1 + high) / (replicates + 1)


def adaptive_test(
    examples: Sequence[Example],
    *,
    confidence: float = 0.95,
    seed: int = 0,
    replicates: int = REPLICATES,
) -> PairedResult:
    """The adaptive pass-rate test of a run against its baseline.

    The test holds for any trials per example chosen without the run's outcomes (the
    plan's pool, which it conditions on, aside), so it needs no design constant.

    :param examples: the matched examples; one whose first trial is unscored, or
        whose baseline trials are all unscored, is left out.
    :param confidence: the level of the interval.
    :param seed: the seed of the Monte Carlo draws.
    :param replicates: the Monte Carlo draws.
    :return: a :class:`~pytest_context_bench.stats.PairedResult` (``test`` =
        :data:`ADAPTIVE_TEST`): ``p_lower``/``p_higher`` the one-sided p-values of
        a drop and of a rise, ``diff`` the mean per-example change of the pass rate
        (run − baseline), ``ci_low``/``ci_high`` its test-based interval and
        ``boot_diffs`` normal replicates of it, from which ``drop_verdict`` reads
        its bound; ``mean_before`` the baseline's pass rate over the examples,
        ``mean_after`` that plus ``diff``.
    """
    groups, diffs, before = _groups(examples)
    nan = math.nan
    if not diffs:
        return PairedResult(ADAPTIVE_TEST, 0, nan, nan, nan, nan, nan, nan, confidence, True, nan, nan)
    p_lower, p_higher = _p_values(groups, seed, replicates)
    n = len(diffs)
    diff = math.fsum(diffs) / n
    se = _test_based_se(diff, p_lower, p_higher, diffs)
    q = _N.inv_cdf((1.0 + confidence) / 2.0)
    mean_before = math.fsum(before) / n

    def change(x: float) -> float:  # a change of a pass rate lies in [-1, 1]
        return min(1.0, max(-1.0, x))

    replicas = tuple(
        change(diff + se * _N.inv_cdf((j + 0.5) / _NORMAL_REPLICATES)) for j in range(_NORMAL_REPLICATES)
    )
    return PairedResult(
        test=ADAPTIVE_TEST,
        n=n,
        mean_before=mean_before,
        mean_after=mean_before + diff,
        diff=diff,
        ci_low=change(diff - q * se),
        ci_high=change(diff + q * se),
        p_value=min(1.0, 2.0 * min(p_lower, p_higher)),
        confidence=confidence,
        higher_is_better=True,
        p_lower=p_lower,
        p_higher=p_higher,
        boot_diffs=replicas,
    )


def _test_based_se(diff: float, p_lower: float, p_higher: float, diffs: list[float]) -> float:
    """The standard error the test implies for ``diff`` (Miettinen's test-based
    interval: ``|diff| / |z|``, ``z`` the normal score of the one-sided p-value on
    ``diff``'s side); the plain standard error of the mean difference when the test
    leans the other way or not at all."""
    if diff < 0 and p_lower < 0.5:
        return -diff / -_N.inv_cdf(p_lower)
    if diff > 0 and p_higher < 0.5:
        return diff / -_N.inv_cdf(p_higher)
    n = len(diffs)
    if n < 2:
        return math.inf
    m = math.fsum(diffs) / n
    return math.sqrt(math.fsum((d - m) ** 2 for d in diffs) / (n - 1) / n)
