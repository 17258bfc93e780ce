"""Paired statistics for regression gates: bootstrap intervals, paired tests, verdicts.

Pure standard library. Every random draw comes from one ``random.Random(seed)`` and
only through :meth:`random.Random.randrange` and :meth:`random.Random.getrandbits`,
which are defined on integers (Mersenne Twister output), so the same seed gives the
same numbers on every machine and on every supported Python version. Sums use
:func:`math.fsum`, which is exactly rounded, so they do not depend on summation order
or platform either.

The tests
---------
``paired_test(before, after)`` compares two systems on the *same* examples
(``before[i]`` and ``after[i]`` are the scores of example ``i``):

* **0/1 outcomes** (pass/fail): the exact McNemar test, i.e. a one-sided binomial
  test on the discordant pairs. With ``b`` examples that went pass → fail and ``c``
  that went fail → pass, under "no change" each discordant pair is a fair coin, so
  ``p = P(X >= b)`` for ``X ~ Binomial(b + c, 1/2)``. Computed exactly with integers.
* **other scores**: the paired sign-flip (randomisation) test. Under "no change" the
  per-example difference ``after - before`` is as likely to have either sign, so the
  observed mean difference is compared with the mean differences obtained by flipping
  each sign at random; ``p = (1 + #{flipped mean <= observed}) / (1 + n_resamples)``,
  which is a valid p-value at any number of resamples (the ``+1`` counts the observed
  assignment itself).

Both report the percentile **paired bootstrap** interval of the mean difference:
examples (pairs) are resampled with replacement, the mean of ``after - before`` is
taken on each resample, and the ``(1 - confidence) / 2`` and ``(1 + confidence) / 2``
quantiles are the interval.

The gate (:func:`drop_verdict`)
-------------------------------
A drop fails the gate only when it is **larger than the tolerance and statistically
significant** at ``confidence``, which here means both of:

1. the one-sided p-value of "after is worse than before" (McNemar or sign-flip) is
   at most ``1 - confidence``; and
2. the one-sided ``confidence`` paired-bootstrap bound on the drop exceeds the
   tolerance: we are ``confidence`` sure the true drop is larger than the tolerance,
   not merely that the observed one is. This is the bootstrap test of the shifted
   hypothesis "the drop is at most the tolerance", by the duality of percentile
   bounds and tests.

With a tolerance of 0 the two conditions ask the same question with two tests; with
a positive tolerance the second is the stricter one. Noise alone (identical systems)
trips condition 1 with probability at most ``1 - confidence``, so the false alarm
rate is bounded by it.
"""

from __future__ import annotations

import bisect
import math
import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from statistics import NormalDist

from .errors import ConfigError
from .metrics.stats import mean, percentile

__all__ = [
    "DropVerdict",
    "PairedResult",
    "N_RESAMPLES",
    "bootstrap_mean_ci",
    "describe_test",
    "drop_verdict",
    "mcnemar_exact",
    "one_sample_test",
    "paired_ratio_test",
    "paired_p_values",
    "paired_test",
    "summary_interval",
    "t_quantile",
    "wilson_interval",
]

#: Default number of bootstrap / permutation resamples.
N_RESAMPLES = 2000


def _check_confidence(confidence: float) -> None:
    if isinstance(confidence, bool) or not 0.0 < float(confidence) < 1.0:
        raise ConfigError(
            f"confidence must be a number strictly between 0 and 1 (e.g. 0.95), got {confidence!r}."
        )


def _check_resamples(n_resamples: int) -> None:
    if isinstance(n_resamples, bool) or not isinstance(n_resamples, int) or n_resamples < 1:
        raise ConfigError(f"n_resamples must be a positive integer, got {n_resamples!r}.")


def _interval(sorted_stats: Sequence[float], confidence: float) -> tuple[float, float]:
    alpha = 1.0 - confidence
    return percentile(sorted_stats, alpha / 2.0), percentile(sorted_stats, 1.0 - alpha / 2.0)


def _draws(rng: random.Random, n: int) -> list[int]:
    """``[rng.randrange(n) for _ in range(n)]``: the same numbers, drawn the same way
    from the same stream (randrange's rejection sampling on ``getrandbits``), without
    its per-call checks (about 3x faster; a bootstrap makes millions of draws)."""
    k = n.bit_length()
    getrandbits = rng.getrandbits
    out: list[int] = []
    append = out.append
    for _ in range(n):
        r = getrandbits(k)
        while r >= n:
            r = getrandbits(k)
        append(r)
    return out


#: Values with at most this many distinct numbers are resampled by their counts.
_FEW_VALUES = 16


def _binomial_cdf(m: int, num: int, den: int) -> list[float]:
    """The CDF of ``Binomial(m, num / den)`` on ``0 .. m``, from the mode outwards by
    the ratio of successive probabilities: only IEEE-754 ``+ - * /``, which are
    correctly rounded, so the same table on every machine (no ``exp`` or
    ``lgamma`` from the platform's maths library)."""
    if num <= 0:
        return [1.0] * (m + 1)
    if num >= den:
        return [0.0] * m + [1.0]
    p = num / den
    odds = num / (den - num)
    mode = min(m, int((m + 1) * p))
    pmf = [0.0] * (m + 1)
    pmf[mode] = 1.0
    x = 1.0
    for k in range(mode, m):  # pmf(k + 1) = pmf(k) (m - k) / (k + 1) * odds
        x = x * (m - k) / (k + 1) * odds
        if x < 1e-300:
            break
        pmf[k + 1] = x
    x = 1.0
    for k in range(mode, 0, -1):  # pmf(k - 1) = pmf(k) k / (m - k + 1) / odds
        x = x * k / (m - k + 1) / odds
        if x < 1e-300:
            break
        pmf[k - 1] = x
    total = math.fsum(pmf)
    out, acc = [], 0.0
    for q in pmf:
        acc += q
        out.append(acc / total)
    out[-1] = 1.0
    return out


def _bootstrap_means(values: Sequence[float], n_resamples: int, rng: random.Random) -> list[float]:
    """Sorted means of ``n_resamples`` resamples (with replacement) of ``values``.

    When the values take few distinct numbers (pass outcomes, their differences, the
    means of a few trials) a resample is drawn by its counts: how many of the ``n``
    draws land on each number is multinomial, drawn as successive binomials by
    inversion of exact tables. The same distribution as drawing ``n`` indices, at a
    few draws per resample instead of ``n``.
    """
    n = len(values)
    counts: dict[float, int] = {}
    for v in values:
        counts[v] = counts.get(v, 0) + 1
        if len(counts) > _FEW_VALUES:
            break
    if len(counts) > _FEW_VALUES:
        out = [
            math.fsum([values[i] for i in _draws(rng, n)]) / n for _ in range(n_resamples)
        ]
        out.sort()
        return out
    items = sorted(counts.items())
    tables: list[dict[int, list[float]]] = [{} for _ in items]
    getrandbits = rng.getrandbits
    scale = 1.0 / (1 << 53)
    out = []
    for _ in range(n_resamples):
        left, left_count = n, n
        parts = []
        for j, (v, c) in enumerate(items[:-1]):
            cdf = tables[j].get(left)
            if cdf is None:
                cdf = tables[j][left] = _binomial_cdf(left, c, left_count)
            k = min(bisect.bisect_right(cdf, getrandbits(53) * scale), left)
            parts.append(v * k)
            left -= k
            left_count -= c
            if left == 0:
                break
        parts.append(items[-1][0] * left)
        out.append(math.fsum(parts) / n)
    out.sort()
    return out


def bootstrap_mean_ci(
    values: Sequence[float],
    confidence: float = 0.95,
    n_resamples: int = N_RESAMPLES,
    seed: int = 0,
) -> tuple[float, float]:
    """Percentile bootstrap confidence interval of the mean.

    :param values: the per-example numbers (e.g. scores, or 0/1 pass outcomes).
    :param confidence: the two-sided coverage, in ``(0, 1)``.
    :param n_resamples: how many resamples to draw.
    :param seed: the seed of the ``random.Random`` used; same seed, same interval.
    :return: ``(low, high)``; ``(nan, nan)`` for no values; ``(v, v)`` for one value
        (a single example has no spread to resample).
    :raises ConfigError: for a confidence outside ``(0, 1)`` or a non-positive
        ``n_resamples``.
    """
    _check_confidence(confidence)
    _check_resamples(n_resamples)
    data = [float(v) for v in values]
    if not data:
        return math.nan, math.nan
    if len(data) == 1 or min(data) == max(data):
        m = mean(data)
        return m, m
    return _interval(_bootstrap_means(data, n_resamples, random.Random(seed)), confidence)


@dataclass(frozen=True)
class PairedResult:
    """The outcome of :func:`paired_test` (or :func:`paired_ratio_test`,
    :func:`one_sample_test`).

    :param test: ``"mcnemar-exact"`` (0/1 outcomes), ``"paired-bootstrap"`` (other
        scores; p-value from the sign-flip test), ``"paired-bootstrap-ratio"`` or
        ``"bootstrap-vs-reference"``.
    :param n: the number of pairs.
    :param mean_before: the statistic on the ``before`` side.
    :param mean_after: the statistic on the ``after`` side.
    :param diff: ``mean_after - mean_before``.
    :param ci_low: low end of the bootstrap interval of ``diff`` at ``confidence``.
    :param ci_high: high end of that interval.
    :param p_value: one-sided p-value of "after is worse than before" (lower when
        ``higher_is_better``, higher otherwise); ``nan`` with no pairs.
    :param confidence: the interval's coverage.
    :param higher_is_better: the direction ``p_value`` was computed for.
    :param p_lower: one-sided p-value of "after is lower than before".
    :param p_higher: one-sided p-value of "after is higher than before".
    :param discordant: McNemar only: ``(pass → fail, fail → pass)`` counts.
    :param boot_diffs: the sorted bootstrap replicates of ``diff`` (used by
        :func:`drop_verdict` for the one-sided bound).
    """

    test: str
    n: int
    mean_before: float
    mean_after: float
    diff: float
    ci_low: float
    ci_high: float
    p_value: float
    confidence: float
    higher_is_better: bool = True
    p_lower: float = math.nan
    p_higher: float = math.nan
    discordant: tuple[int, int] | None = None
    boot_diffs: tuple[float, ...] = field(default=(), repr=False, compare=False)

    def p_worse(self, higher_is_better: bool) -> float:
        """The one-sided p-value of "after is worse" for the given direction."""
        return self.p_lower if higher_is_better else self.p_higher


def _is_binary(values: Sequence[float]) -> bool:
    return all(v == 0.0 or v == 1.0 for v in values)


def mcnemar_exact(worse: int, better: int) -> float:
    """One-sided exact McNemar p-value: ``P(X >= worse)``, ``X ~ Bin(worse + better, 1/2)``.

    :param worse: the discordant pairs that changed in the tested direction
        (pass → fail when testing for a drop).
    :param better: the discordant pairs that changed the other way.
    :return: the p-value, ``1.0`` when there is no discordant pair.
    """
    m = worse + better
    if m == 0:
        return 1.0
    # Exact integer arithmetic, one division at the end: no float underflow for
    # large m, and the same bits everywhere.
    tail = sum(math.comb(m, k) for k in range(worse, m + 1))
    return min(1.0, tail / (1 << m))


def _sign_flip_p(diffs: Sequence[float], n_resamples: int, rng: random.Random) -> tuple[float, float]:
    """Monte Carlo sign-flip p-values ``(p_lower, p_higher)`` of the mean difference.

    The differences are grouped by magnitude: flipping the ``c`` signs of a group of
    equal magnitudes ``m`` at random adds ``m (2 X - c)`` with ``X ~ Binomial(c, 1/2)``,
    the number of set bits of ``c`` random bits. The same distribution as flipping
    each sign, drawn once per group: pass-rate differences take a handful of
    magnitudes, so a resample costs a few draws, not one per example.
    """
    groups: dict[float, list[int]] = {}
    for d in diffs:
        if d != 0.0:
            g = groups.setdefault(abs(d), [0, 0])
            g[0] += 1
            g[1] += d > 0.0
    if not groups:
        return 1.0, 1.0
    items = sorted(groups.items())
    # fsum is exactly rounded and each term is computed alike for the observed
    # signs and for a draw, so a draw with the observed signs reproduces `observed`
    # exactly and ties are counted on both sides, as they must be.
    observed = math.fsum([m * (2 * pos - c) for m, (c, pos) in items])
    getrandbits = rng.getrandbits
    at_most = at_least = 0
    for _ in range(n_resamples):
        total = math.fsum([m * (2 * getrandbits(c).bit_count() - c) for m, (c, _) in items])
        if total <= observed:
            at_most += 1
        if total >= observed:
            at_least += 1
    return (1 + at_most) / (1 + n_resamples), (1 + at_least) / (1 + n_resamples)


def paired_p_values(
    before: Sequence[float],
    after: Sequence[float],
    *,
    n_resamples: int = N_RESAMPLES,
    seed: int = 0,
    binary: bool | None = None,
) -> tuple[str, float, float, tuple[int, int] | None]:
    """The test of :func:`paired_test` without its interval: ``(test, p_lower,
    p_higher, discordant)``, the same numbers :func:`paired_test` reports for the
    same arguments (the sign flips draw from a stream of their own, seeded by
    ``seed``). A gate decides on these first: when they are not significant no
    interval can fail it."""
    b = [float(v) for v in before]
    a = [float(v) for v in after]
    if len(a) != len(b):
        raise ConfigError(
            f"paired_test needs one 'after' value per 'before' value, got {len(b)} and {len(a)}."
        )
    if binary is None:
        binary = _is_binary(b) and _is_binary(a)
    elif binary and not (_is_binary(b) and _is_binary(a)):
        raise ConfigError("paired_test(binary=True) needs every value to be 0 or 1.")
    if binary:
        down = sum(1 for x, y in zip(b, a) if x == 1.0 and y == 0.0)
        up = sum(1 for x, y in zip(b, a) if x == 0.0 and y == 1.0)
        return "mcnemar-exact", mcnemar_exact(down, up), mcnemar_exact(up, down), (down, up)
    rng = random.Random(f"ctxbench-sign-flip|{seed}")
    p_lower, p_higher = _sign_flip_p([y - x for x, y in zip(b, a)], n_resamples, rng)
    return "paired-bootstrap", p_lower, p_higher, None


def _empty(test: str, confidence: float, higher_is_better: bool) -> PairedResult:
    nan = math.nan
    return PairedResult(test, 0, nan, nan, nan, nan, nan, nan, confidence, higher_is_better, nan, nan)


def paired_test(
    before: Sequence[float],
    after: Sequence[float],
    *,
    confidence: float = 0.95,
    n_resamples: int = N_RESAMPLES,
    seed: int = 0,
    binary: bool | None = None,
    higher_is_better: bool = True,
) -> PairedResult:
    """Compare two systems on the same examples (see the module docstring).

    :param before: per-example values of the reference (baseline) system.
    :param after: per-example values of the current system, same order and length.
    :param confidence: the coverage of the interval, in ``(0, 1)``.
    :param n_resamples: bootstrap (and sign-flip) resamples.
    :param seed: seed of the ``random.Random``; same inputs and seed, same result.
    :param binary: ``True`` for 0/1 outcomes (McNemar), ``False`` for scores
        (sign-flip); ``None`` detects it (every value is 0 or 1).
    :param higher_is_better: which way is "worse" for :attr:`PairedResult.p_value`.
    :return: a :class:`PairedResult`; with no pairs every number is ``nan``.
    :raises ConfigError: for sequences of different lengths, or a bad
        ``confidence`` / ``n_resamples``.
    """
    _check_confidence(confidence)
    _check_resamples(n_resamples)
    test, p_lower, p_higher, discordant = paired_p_values(
        before, after, n_resamples=n_resamples, seed=seed, binary=binary
    )
    b = [float(v) for v in before]
    a = [float(v) for v in after]
    n = len(b)
    if n == 0:
        return _empty(test, confidence, higher_is_better)
    rng = random.Random(seed)
    diffs = [y - x for x, y in zip(b, a)]
    mean_b, mean_a = mean(b), mean(a)
    diff = mean(diffs)
    if n == 1 or min(diffs) == max(diffs):
        # Nothing to resample: every replicate equals the observed difference.
        boot = [diff] * n_resamples
    else:
        boot = _bootstrap_means(diffs, n_resamples, rng)
    ci_low, ci_high = _interval(boot, confidence)
    return PairedResult(
        test=test,
        n=n,
        mean_before=mean_b,
        mean_after=mean_a,
        diff=diff,
        ci_low=ci_low,
        ci_high=ci_high,
        p_value=p_lower if higher_is_better else p_higher,
        confidence=confidence,
        higher_is_better=higher_is_better,
        p_lower=p_lower,
        p_higher=p_higher,
        discordant=discordant,
        boot_diffs=tuple(boot),
    )


def _bootstrap_p(sorted_boot: Sequence[float]) -> tuple[float, float]:
    """Percentile-bootstrap p-values ``(p_lower, p_higher)`` for a difference of 0.

    ``p_lower`` (evidence that the difference is below 0) is the share of replicates
    at or above 0, with the ``+1`` correction that keeps it away from exactly 0.
    """
    b = len(sorted_boot)
    at_or_above = sum(1 for d in sorted_boot if d >= 0.0)
    at_or_below = sum(1 for d in sorted_boot if d <= 0.0)
    return (1 + at_or_above) / (1 + b), (1 + at_or_below) / (1 + b)


def _ratio(num: float, den: float) -> float:
    return num / den if den else math.inf


def _ratio_diff(after: float, before: float) -> float:
    # inf - inf would be nan (and nan breaks sorting); two "no passing example"
    # sides are equal.
    if math.isinf(after) and math.isinf(before):
        return 0.0
    return after - before


def _swap_p(cols: list[list[float]], n_resamples: int, rng: random.Random) -> tuple[float, float]:
    """Randomisation p-values ``(p_lower, p_higher)`` of the ratio difference: under
    "no change" an example's two sides are alike, so swapping them (each example
    with probability 1/2) leaves the distribution unchanged; ``(1 + #{T* <= T}) /
    (1 + B)`` is then a valid p-value at any ``B``, at any number of examples (the
    percentile bootstrap it replaces cried wolf 8-9% of the time at 10 examples)."""
    bn, bd, an, ad = cols
    n = len(bn)
    tbn, tbd, tan, tad = (math.fsum(c) for c in cols)
    dnum = [a - b for a, b in zip(an, bn)]
    dden = [a - b for a, b in zip(ad, bd)]

    def diff(snum: float, sden: float) -> float:
        return _ratio_diff(_ratio(tan - snum, tad - sden), _ratio(tbn + snum, tbd + sden))

    observed = diff(0.0, 0.0)
    getrandbits = rng.getrandbits
    at_most = at_least = 0
    for _ in range(n_resamples):
        bits = getrandbits(n)
        picked = [i for i in range(n) if (bits >> i) & 1]
        t = diff(math.fsum([dnum[i] for i in picked]), math.fsum([dden[i] for i in picked]))
        at_most += t <= observed
        at_least += t >= observed
    return (1 + at_most) / (1 + n_resamples), (1 + at_least) / (1 + n_resamples)


def paired_ratio_test(
    before_num: Sequence[float],
    before_den: Sequence[float],
    after_num: Sequence[float],
    after_den: Sequence[float],
    *,
    confidence: float = 0.95,
    n_resamples: int = N_RESAMPLES,
    seed: int = 0,
    higher_is_better: bool = False,
) -> PairedResult:
    """Paired bootstrap of a ratio of sums, e.g. cost of pass = tokens / passes.

    The statistic of a side is ``sum(num) / sum(den)`` (``inf`` when the denominator
    sums to 0). The p-values are those of the paired swap test (each example's two
    sides swapped at random, :func:`_swap_p`), exact under "no change"; the interval
    is the percentile paired bootstrap of the ratio difference (example indices
    resampled with replacement, the same indices on both sides).

    :param before_num: per-example numerators of the reference side.
    :param before_den: per-example denominators of the reference side.
    :param after_num: per-example numerators of the current side.
    :param after_den: per-example denominators of the current side.
    :param higher_is_better: the direction of :attr:`PairedResult.p_value`; a cost
        is lower-is-better, the default.
    :return: a :class:`PairedResult` with ``test="paired-bootstrap-ratio"``.
    :raises ConfigError: when the four sequences differ in length.
    """
    _check_confidence(confidence)
    _check_resamples(n_resamples)
    cols = [[float(v) for v in s] for s in (before_num, before_den, after_num, after_den)]
    n = len(cols[0])
    if any(len(c) != n for c in cols):
        raise ConfigError("paired_ratio_test needs four sequences of the same length.")
    test = "paired-bootstrap-ratio"
    if n == 0:
        return _empty(test, confidence, higher_is_better)
    bn, bd, an, ad = cols
    rb = _ratio(math.fsum(bn), math.fsum(bd))
    ra = _ratio(math.fsum(an), math.fsum(ad))
    rng = random.Random(seed)
    boot: list[float] = []
    for _ in range(n_resamples):
        idx = _draws(rng, n)
        boot.append(
            _ratio_diff(
                _ratio(math.fsum([an[i] for i in idx]), math.fsum([ad[i] for i in idx])),
                _ratio(math.fsum([bn[i] for i in idx]), math.fsum([bd[i] for i in idx])),
            )
        )
    boot.sort()
    ci_low, ci_high = _interval(boot, confidence)
    p_lower, p_higher = _swap_p(cols, n_resamples, random.Random(f"ctxbench-swap|{seed}"))
    return PairedResult(
        test=test,
        n=n,
        mean_before=rb,
        mean_after=ra,
        diff=_ratio_diff(ra, rb),
        ci_low=ci_low,
        ci_high=ci_high,
        p_value=p_lower if higher_is_better else p_higher,
        confidence=confidence,
        higher_is_better=higher_is_better,
        p_lower=p_lower,
        p_higher=p_higher,
        boot_diffs=tuple(boot),
    )


def one_sample_test(
    values: Sequence[float],
    reference: float,
    *,
    confidence: float = 0.95,
    n_resamples: int = N_RESAMPLES,
    seed: int = 0,
    higher_is_better: bool = False,
) -> PairedResult:
    """Bootstrap the mean of ``values`` against a fixed ``reference`` mean.

    For a metric whose per-example values only exist on one side (a baseline keeps
    the mean latency in its summary but no per-row latency, which would make every
    re-saved baseline differ). Not paired: the reference is treated as exact.

    :param values: the current per-example values.
    :param reference: the baseline's mean (``mean_before`` of the result).
    :param higher_is_better: the direction of :attr:`PairedResult.p_value`; latency
        is lower-is-better, the default.
    :return: a :class:`PairedResult` with ``test="bootstrap-vs-reference"``.
    """
    _check_confidence(confidence)
    _check_resamples(n_resamples)
    data = [float(v) for v in values]
    test = "bootstrap-vs-reference"
    if not data or math.isnan(reference):
        return _empty(test, confidence, higher_is_better)
    m = mean(data)
    if len(data) == 1 or min(data) == max(data):
        boot = [m - reference] * n_resamples
    else:
        boot = [x - reference for x in _bootstrap_means(data, n_resamples, random.Random(seed))]
    ci_low, ci_high = _interval(boot, confidence)
    p_lower, p_higher = _bootstrap_p(boot)
    return PairedResult(
        test=test,
        n=len(data),
        mean_before=float(reference),
        mean_after=m,
        diff=m - reference,
        ci_low=ci_low,
        ci_high=ci_high,
        p_value=p_lower if higher_is_better else p_higher,
        confidence=confidence,
        higher_is_better=higher_is_better,
        p_lower=p_lower,
        p_higher=p_higher,
        boot_diffs=tuple(boot),
    )


@dataclass(frozen=True)
class DropVerdict:
    """Whether a change fails a max-drop gate, and one sentence saying why.

    :param failed: ``True`` when the drop is larger than the tolerance and
        significant (see :func:`drop_verdict`).
    :param reason: a readable sentence naming the test, the p-value, the interval and
        the decision.
    :param tolerance: the tolerance in the metric's units (a relative tolerance
        already multiplied by the baseline value).
    :param drop: the observed worsening in the metric's units (negative when it
        improved).
    :param bound: the one-sided ``confidence`` bootstrap lower bound on the drop.
    """

    failed: bool
    reason: str
    tolerance: float = math.nan
    drop: float = math.nan
    bound: float = math.nan


def format_number(x: float) -> str:
    """``inf``/``-inf``/``nan`` or 4 significant digits (the comparison's numbers)."""
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return f"{x:.4g}"


def _p(p: float) -> str:
    return "nan" if math.isnan(p) else (f"{p:.2g}" if p < 0.001 else f"{p:.3f}")


_TEST_NAMES: dict[str, str] = {
    "mcnemar-exact": "exact McNemar test",
    "paired-bootstrap": "sign-flip test (paired bootstrap interval)",
    "paired-bootstrap-ratio": "swap test of the ratio (paired bootstrap interval)",
    "bootstrap-vs-reference": "bootstrap against the baseline's mean",
}


def describe_test(result: PairedResult, *, interval: bool = True) -> str:
    """``"exact McNemar test one-sided p = 0.003 (20 pass→fail, 2 fail→pass),
    two-sided 95% interval of the change [-0.07, -0.02]"``: the evidence part of a verdict's reason (without
    the interval when ``interval`` is false: a line that shows it already)."""
    name = _TEST_NAMES.get(result.test, result.test)
    # The p-value the gate used: one-sided, "worse" in the metric's direction.
    text = f"{name} one-sided p = {_p(result.p_value)}"
    if result.discordant is not None:
        text += f" ({result.discordant[0]} pass→fail, {result.discordant[1]} fail→pass)"
    if not interval:
        return text
    pct = f"{result.confidence * 100:g}%"
    return text + f", two-sided {pct} interval of the change [{format_number(result.ci_low)}, {format_number(result.ci_high)}]"


def drop_verdict(
    result: PairedResult,
    tolerance: float,
    higher_is_better: bool = True,
    relative: bool = False,
    confidence: float = 0.95,
    *,
    name: str = "the metric",
) -> DropVerdict:
    """Decide a max-drop gate on a :class:`PairedResult`.

    The change fails the gate exactly when all of these hold (module docstring):

    * the observed drop is larger than the tolerance;
    * the one-sided p-value of "worse" (:meth:`PairedResult.p_worse`) is at most
      ``1 - confidence``;
    * the one-sided ``confidence`` bootstrap bound on the drop (the
      ``1 - confidence`` quantile of the bootstrap drops) is larger than the
      tolerance.

    With no pairs (``result.n == 0``) nothing can be tested and the gate passes,
    saying so.

    :param result: the test's outcome.
    :param tolerance: the largest acceptable drop, ``>= 0``: in the metric's units,
        or a fraction of the baseline value when ``relative`` (0.1 = 10%).
    :param higher_is_better: ``True`` for quality (must not fall), ``False`` for cost
        and latency (must not rise).
    :param relative: read ``tolerance`` as a fraction of ``|result.mean_before|``.
    :param confidence: the required confidence, in ``(0, 1)``.
    :param name: the metric's name, used in the reason.
    :return: a :class:`DropVerdict`.
    :raises ConfigError: for a negative or nan tolerance or a bad confidence.
    """
    _check_confidence(confidence)
    if math.isnan(tolerance) or tolerance < 0:
        raise ConfigError(f"a drop tolerance must be a number >= 0, got {tolerance!r}.")
    tol = tolerance * abs(result.mean_before) if relative else float(tolerance)
    if relative and math.isnan(tol):
        tol = math.inf
    tol_text = f"{format_number(tolerance * 100)}% of {format_number(result.mean_before)} = {format_number(tol)}" if relative else format_number(tol)
    if result.n == 0 or math.isnan(result.diff):
        return DropVerdict(False, f"{name} passed: no paired examples to compare, nothing was tested.", tol)
    sign = 1.0 if higher_is_better else -1.0
    drop = -sign * result.diff  # > 0 means worse
    drops = sorted(-sign * d for d in result.boot_diffs) or [drop]
    bound = percentile(drops, 1.0 - confidence)
    p = result.p_worse(higher_is_better)
    alpha = 1.0 - confidence
    verb_worse = "fell" if higher_is_better else "rose"
    verb_better = "rose" if higher_is_better else "fell"
    change = f"({format_number(result.mean_before)} → {format_number(result.mean_after)}, n = {result.n})"
    evidence = describe_test(result)
    pct = f"{confidence * 100:g}%"
    if not drop > tol:
        if drop <= 0:
            what = f"{verb_better} by {format_number(-drop)}" if drop < 0 else "did not change"
            reason = f"{name} passed: it {what} {change}; {evidence}."
        else:
            reason = (
                f"{name} passed: it {verb_worse} by {format_number(drop)} {change}, within the tolerance "
                f"{tol_text}; {evidence}."
            )
        return DropVerdict(False, reason, tol, drop, bound)
    head = f"{name} {verb_worse} by {format_number(drop)} {change}, more than the tolerance {tol_text}"
    if not p <= alpha:
        reason = f"{name} passed: it {verb_worse} by {format_number(drop)} {change} but not significantly: {evidence}, p > {_p(alpha)}."
        return DropVerdict(False, reason, tol, drop, bound)
    if not bound > tol:
        reason = (
            f"{name} passed: it {verb_worse} significantly by {format_number(drop)} {change} ({evidence}), but the drop"
            f" is not significantly larger than the tolerance: its one-sided {pct} bound {format_number(bound)} <= {format_number(tol)}."
        )
        return DropVerdict(False, reason, tol, drop, bound)
    reason = (
        f"{head}: FAILED, significant at {pct} ({evidence}; one-sided {pct} bound on the drop"
        f" {format_number(bound)} > {format_number(tol)})."
    )
    return DropVerdict(True, reason, tol, drop, bound)


def wilson_interval(
    successes: float, n: float, confidence: float = 0.95, *, z: float | None = None
) -> tuple[float, float]:
    """The Wilson score interval of a proportion, with continuity correction
    (Newcombe 1998, method 4): ``successes`` of ``n`` (``n`` may be an effective,
    fractional size).

    Never a point, not at 0 of n nor at n of n (where the percentile bootstrap and the
    Wald interval collapse: a 20/20 run's "95%" interval [1, 1] covers a true rate of
    0.98 a third of the time); the correction keeps its coverage at or above the
    nominal level for small ``n`` and rates near 0 or 1, where the plain Wilson
    interval dips to 0.90 (``benchmarks/intervals.py``).

    :param z: the critical value; default the normal one for ``confidence``.
    """
    _check_confidence(confidence)
    if not n > 0:
        return math.nan, math.nan
    if z is None:
        z = NormalDist().inv_cdf(1.0 - (1.0 - confidence) / 2.0)
    p = min(1.0, max(0.0, successes / n))
    a, b = 2.0 * n * p + z * z, 2.0 * (n + z * z)
    low = 0.0 if p == 0.0 else max(
        0.0, (a - 1.0 - z * math.sqrt(max(0.0, z * z - 2.0 - 1.0 / n + 4.0 * p * (n * (1.0 - p) + 1.0)))) / b
    )
    high = 1.0 if p == 1.0 else min(
        1.0, (a + 1.0 + z * math.sqrt(max(0.0, z * z + 2.0 - 1.0 / n + 4.0 * p * (n * (1.0 - p) - 1.0)))) / b
    )
    return low, high


def t_quantile(p: float, df: float) -> float:
    """The ``p`` quantile of Student's t with ``df`` degrees of freedom: exact for
    1 and 2, else the Cornish-Fisher expansion around the normal quantile (within
    0.3% of the exact value from 3 degrees of freedom on)."""
    if df <= 0:
        raise ValueError(f"degrees of freedom must be > 0, got {df}")
    if df == 1:
        return math.tan(math.pi * (p - 0.5))
    if df == 2:
        return (2.0 * p - 1.0) / math.sqrt(2.0 * p * (1.0 - p))
    z = NormalDist().inv_cdf(p)
    z3, z5, z7, z9 = z**3, z**5, z**7, z**9
    return (
        z
        + (z3 + z) / (4 * df)
        + (5 * z5 + 16 * z3 + 3 * z) / (96 * df**2)
        + (3 * z7 + 19 * z5 + 17 * z3 - 15 * z) / (384 * df**3)
        + (79 * z9 + 776 * z7 + 1482 * z5 - 1920 * z3 - 945 * z) / (92160 * df**4)
    )


def summary_interval(
    values: Sequence[float], confidence: float = 0.95, seed: int = 0
) -> tuple[float, float]:
    """The confidence interval of a mean shown in the summary table.

    - Values in [0, 1] (pass outcomes, and the scores of every built-in evaluator):
      the continuity-corrected Wilson interval (:func:`wilson_interval`) of the mean,
      on ``n`` examples for 0/1 values (or all equal ones: 20 scores of 1.0 are no
      proof the next scores 1), and on the effective size ``n m (1 - m) / s^2`` with
      Student's t critical value for other scores. It is never a point, stays in
      [0, 1], and is skewed the way the mean's distribution is near 0 and 1. Its
      coverage at 20 to 80 examples is 0.945 or more on the rates and score mixtures
      of ``benchmarks/intervals.py``, where the percentile bootstrap it replaces
      covered 0.19 (a rate of 0.99 at 20 examples) to 0.92.
    - Other values (a judge's 1 to 5): Student's t interval,
      ``mean ± t(n-1) s / sqrt(n)``; a point when they are all equal.

    :param seed: unused (no draw is made); kept for callers.
    :return: ``(low, high)``; ``(nan, nan)`` for no values.
    """
    _check_confidence(confidence)
    data = [float(v) for v in values]
    if not data:
        return math.nan, math.nan
    n = len(data)
    m = math.fsum(data) / n
    alpha = 1.0 - confidence
    z = t_quantile(1.0 - alpha / 2.0, n - 1) if n > 1 else None
    if all(0.0 <= x <= 1.0 for x in data):
        if _is_binary(data) or min(data) == max(data) or m in (0.0, 1.0):
            # a rate: Newcombe's interval as published (the normal critical value)
            return wilson_interval(m * n, n, confidence)
        variance = math.fsum((x - m) ** 2 for x in data) / (n - 1)
        size = max(1.0, n * m * (1.0 - m) / variance)
        return wilson_interval(m * size, size, confidence, z=z)
    if min(data) == max(data) or z is None:
        return data[0], data[0]
    sd = math.sqrt(math.fsum((x - m) ** 2 for x in data) / (n - 1))
    half = z * sd / math.sqrt(n)
    return m - half, m + half
