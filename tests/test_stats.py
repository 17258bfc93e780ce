"""Paired statistics for regression gates: intervals, tests, verdicts, and the
issue's proof (a real 5-point drop fails, seeded noise passes >= 95 times in 100)."""

from __future__ import annotations

import math
import random
from fractions import Fraction

import pytest

from pytest_context_bench.errors import ConfigError
from pytest_context_bench.stats import (
    PairedResult,
    bootstrap_mean_ci,
    drop_verdict,
    mcnemar_exact,
    one_sample_test,
    paired_ratio_test,
    paired_test,
)

# Fewer resamples than the default keep the repeated tests fast; the decisions
# below are far from the boundary at this resolution.
FAST = 399


# ---------------------------------------------------------------- bootstrap_mean_ci


def test_ci_empty_is_nan() -> None:
    lo, hi = bootstrap_mean_ci([])
    assert math.isnan(lo) and math.isnan(hi)


def test_ci_single_value_and_all_equal_are_degenerate() -> None:
    assert bootstrap_mean_ci([0.3]) == (0.3, 0.3)
    assert bootstrap_mean_ci([0.5] * 50) == (0.5, 0.5)


def test_ci_contains_mean_and_shrinks_with_n() -> None:
    rng = random.Random(3)
    small = [rng.random() for _ in range(30)]
    big = small * 20
    lo, hi = bootstrap_mean_ci(small)
    m = sum(small) / len(small)
    assert lo < m < hi
    blo, bhi = bootstrap_mean_ci(big)
    assert bhi - blo < (hi - lo) / 2


def test_ci_roughly_matches_normal_theory() -> None:
    values = [1.0] * 70 + [0.0] * 30
    lo, hi = bootstrap_mean_ci(values, n_resamples=4000)
    half = 1.96 * math.sqrt(0.7 * 0.3 / 100)
    assert lo == pytest.approx(0.7 - half, abs=0.02)
    assert hi == pytest.approx(0.7 + half, abs=0.02)


def test_ci_is_deterministic_per_seed() -> None:
    values = [i % 7 / 7 for i in range(60)]
    assert bootstrap_mean_ci(values, seed=5) == bootstrap_mean_ci(values, seed=5)
    assert bootstrap_mean_ci(values, seed=5) != bootstrap_mean_ci(values, seed=6)


def test_ci_known_numbers_pin_the_generator() -> None:
    # Pinned output: a change in the sampling scheme (or a platform-dependent draw)
    # would change these digits.
    values = [i % 7 / 7 for i in range(60)]
    lo, hi = bootstrap_mean_ci(values, n_resamples=500, seed=1)
    again = bootstrap_mean_ci(list(values), n_resamples=500, seed=1)
    assert (lo, hi) == again
    assert 0.33 < lo < 0.42 < hi < 0.52


@pytest.mark.parametrize("confidence", [0.0, 1.0, -0.5, 1.5, True])
def test_ci_rejects_bad_confidence(confidence: float) -> None:
    with pytest.raises(ConfigError, match="confidence"):
        bootstrap_mean_ci([1.0, 2.0], confidence=confidence)


def test_ci_rejects_bad_resamples() -> None:
    with pytest.raises(ConfigError, match="n_resamples"):
        bootstrap_mean_ci([1.0, 2.0], n_resamples=0)


# -------------------------------------------------------------------- McNemar exact


def _binom_tail(k: int, m: int) -> float:
    return float(sum(Fraction(math.comb(m, i), 2**m) for i in range(k, m + 1)))


@pytest.mark.parametrize(("worse", "better"), [(0, 0), (3, 0), (5, 5), (20, 0), (12, 3), (0, 9), (150, 130)])
def test_mcnemar_exact_is_the_binomial_tail(worse: int, better: int) -> None:
    expected = 1.0 if worse + better == 0 else _binom_tail(worse, worse + better)
    assert mcnemar_exact(worse, better) == pytest.approx(expected, rel=1e-12)


def test_mcnemar_known_values() -> None:
    assert mcnemar_exact(3, 0) == 0.125
    assert mcnemar_exact(5, 5) == pytest.approx(638 / 1024)


# ---------------------------------------------------------------------- paired_test


def test_binary_outcomes_use_mcnemar_with_discordant_counts() -> None:
    before = [1.0] * 10 + [0.0] * 10
    after = [0.0] * 6 + [1.0] * 4 + [1.0] * 1 + [0.0] * 9
    r = paired_test(before, after)
    assert r.test == "mcnemar-exact"
    assert r.discordant == (6, 1)
    assert r.n == 20
    assert r.mean_before == 0.5 and r.mean_after == 0.25
    assert r.diff == pytest.approx(-0.25)
    assert r.p_value == pytest.approx(_binom_tail(6, 7))
    assert r.p_higher == pytest.approx(_binom_tail(1, 7))
    assert r.ci_low <= r.diff <= r.ci_high


def test_binary_can_be_forced_off_and_is_checked_when_forced_on() -> None:
    assert paired_test([1.0, 0.0], [0.0, 1.0], binary=False).test == "paired-bootstrap"
    with pytest.raises(ConfigError, match="0 or 1"):
        paired_test([0.5], [1.0], binary=True)


def test_continuous_uses_sign_flip_p_value() -> None:
    # Three equal negative differences: only the all-negative sign assignment
    # (1 in 8) is as extreme, so p is about 1/8.
    r = paired_test([0.9, 0.8, 0.7], [0.6, 0.5, 0.4], n_resamples=4000)
    assert r.test == "paired-bootstrap"
    assert r.discordant is None
    assert r.p_value == pytest.approx(0.125, abs=0.02)
    assert r.p_higher == pytest.approx(1.0)


def test_direction_lower_is_better_swaps_the_p_value() -> None:
    before, after = [1.0] * 20, [0.0] * 20
    up = paired_test(before, after)
    down = paired_test(before, after, higher_is_better=False)
    assert up.p_value == up.p_lower < 1e-5
    assert down.p_value == down.p_higher == 1.0


def test_lengths_must_match() -> None:
    with pytest.raises(ConfigError, match="one 'after' value per 'before'"):
        paired_test([1.0, 2.0], [1.0])


def test_no_pairs_gives_nan_and_a_passing_verdict() -> None:
    r = paired_test([], [])
    assert r.n == 0 and math.isnan(r.diff) and math.isnan(r.p_value)
    v = drop_verdict(r, 0.0)
    assert not v.failed and "no paired examples" in v.reason


@pytest.mark.parametrize("values", [[1.0] * 30, [0.4] * 30, [0.2, 0.9, 0.5] * 10])
def test_all_ties_is_no_change(values: list[float]) -> None:
    r = paired_test(values, list(values))
    assert r.diff == 0.0
    assert (r.ci_low, r.ci_high) == (0.0, 0.0)
    assert r.p_value == 1.0
    assert not drop_verdict(r, 0.0).failed


def test_constant_shift_is_degenerate_but_decided() -> None:
    before = [0.8] * 50
    after = [0.7] * 50
    r = paired_test(before, after, n_resamples=FAST)
    assert r.ci_low == pytest.approx(-0.1) and r.ci_high == pytest.approx(-0.1)
    assert r.p_value < 0.01
    assert drop_verdict(r, 0.05, name="mean_score").failed


def test_single_pair_is_never_significant() -> None:
    r = paired_test([1.0], [0.0])
    assert r.p_value == 0.5
    assert not drop_verdict(r, 0.0).failed


def test_paired_test_is_deterministic() -> None:
    rng = random.Random(9)
    b = [rng.random() for _ in range(80)]
    a = [x - 0.02 + rng.gauss(0, 0.05) for x in b]
    r1 = paired_test(b, a, seed=4, n_resamples=FAST)
    r2 = paired_test(list(b), list(a), seed=4, n_resamples=FAST)
    assert r1 == r2 and r1.boot_diffs == r2.boot_diffs
    r3 = paired_test(b, a, seed=5, n_resamples=FAST)
    assert (r3.ci_low, r3.ci_high, r3.p_value) != (r1.ci_low, r1.ci_high, r1.p_value)


# --------------------------------------------------------------------- drop_verdict


def _binary_drop(seed: int, n: int = 400) -> tuple[list[float], list[float]]:
    """The current system truly 5 points worse: 5% of examples go pass → fail, plus
    symmetric noise (2% each way) that changes nothing on average."""
    rng = random.Random(seed)
    before = [1.0 if rng.random() < 0.7 else 0.0 for _ in range(n)]
    after = list(before)
    passing = [i for i, v in enumerate(before) if v == 1.0]
    failing = [i for i, v in enumerate(before) if v == 0.0]
    rng.shuffle(passing)
    rng.shuffle(failing)
    k, noise = n * 5 // 100, n * 2 // 100
    for i in passing[: k + noise]:
        after[i] = 0.0
    for i in failing[:noise]:
        after[i] = 1.0
    return before, after


def _continuous_drop(seed: int, n: int = 400, shift: float = 0.05) -> tuple[list[float], list[float]]:
    """Per-example difficulty shared by both systems, independent noise per system,
    and the current system ``shift`` lower on average."""
    rng = random.Random(seed)
    quality = [rng.random() for _ in range(n)]
    before = [q + rng.gauss(0, 0.1) for q in quality]
    after = [q - shift + rng.gauss(0, 0.1) for q in quality]
    return before, after


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("tolerance", [0.0, 0.01, 0.02])
def test_real_binary_drop_of_5_points_on_400_fails(seed: int, tolerance: float) -> None:
    before, after = _binary_drop(seed)
    r = paired_test(before, after, seed=seed, n_resamples=FAST)
    assert r.test == "mcnemar-exact"
    assert r.diff == pytest.approx(-0.05)
    v = drop_verdict(r, tolerance, name="pass_rate")
    assert v.failed, v.reason
    assert "McNemar" in v.reason and "FAILED" in v.reason and "pass→fail" in v.reason


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("tolerance", [0.0, 0.02])
def test_real_continuous_drop_of_5_points_on_400_fails(seed: int, tolerance: float) -> None:
    before, after = _continuous_drop(seed)
    r = paired_test(before, after, seed=seed, n_resamples=FAST)
    assert r.test == "paired-bootstrap"
    v = drop_verdict(r, tolerance, name="mean_score")
    assert v.failed, v.reason
    assert "sign-flip" in v.reason and "interval" in v.reason


def test_drop_within_tolerance_passes_and_says_so() -> None:
    before, after = _binary_drop(0)
    v = drop_verdict(paired_test(before, after, n_resamples=FAST), 0.06, name="pass_rate")
    assert not v.failed
    assert "within the tolerance 0.06" in v.reason and "McNemar" in v.reason


def test_significant_but_not_beyond_tolerance_passes() -> None:
    # A drop of 0.05 measured precisely, against a tolerance of 0.045: it is
    # significant, but we cannot be 95% sure it exceeds 0.045.
    before, after = _binary_drop(1)
    v = drop_verdict(paired_test(before, after, n_resamples=FAST), 0.045, name="pass_rate")
    assert not v.failed
    assert "not significantly larger than the tolerance" in v.reason


def test_large_but_insignificant_drop_passes() -> None:
    # 3 of 10 examples fail that passed: a 30-point drop, p = 1/8.
    before = [1.0] * 10
    after = [0.0] * 3 + [1.0] * 7
    v = drop_verdict(paired_test(before, after), 0.1, name="pass_rate")
    assert not v.failed
    assert "not significantly" in v.reason and "p = 0.125" in v.reason


def test_improvement_passes() -> None:
    before, after = _continuous_drop(2)
    v = drop_verdict(paired_test(after, before, n_resamples=FAST), 0.0, name="mean_score")
    assert not v.failed and "rose by" in v.reason


def test_lower_is_better_direction() -> None:
    # A cost that rises by 20% fails a 10% relative tolerance, and passes 30%.
    rng = random.Random(0)
    before = [100 + rng.gauss(0, 5) for _ in range(200)]
    after = [b * 1.2 for b in before]
    r = paired_test(before, after, n_resamples=FAST, higher_is_better=False)
    assert drop_verdict(r, 0.1, higher_is_better=False, relative=True, name="cost").failed
    ok = drop_verdict(r, 0.3, higher_is_better=False, relative=True, name="cost")
    assert not ok.failed and "30% of" in ok.reason
    # The same numbers read as quality: they rose, nothing to fail.
    assert not drop_verdict(r, 0.0, higher_is_better=True).failed


def test_verdict_rejects_negative_tolerance() -> None:
    r = paired_test([1.0, 0.0], [1.0, 0.0])
    with pytest.raises(ConfigError, match="tolerance"):
        drop_verdict(r, -0.1)


# --------------------------------------------- the false-alarm property (issue #7)


def test_identical_binary_systems_with_noise_pass_95_of_100() -> None:
    alarms = 0
    for seed in range(100):
        rng = random.Random(1000 + seed)
        p = [rng.random() for _ in range(400)]
        before = [1.0 if rng.random() < q else 0.0 for q in p]
        after = [1.0 if rng.random() < q else 0.0 for q in p]
        r = paired_test(before, after, seed=seed, n_resamples=199)
        alarms += drop_verdict(r, 0.0, name="pass_rate").failed
    assert alarms <= 5


def test_identical_continuous_systems_with_noise_pass_95_of_100() -> None:
    alarms = 0
    for seed in range(100):
        before, after = _continuous_drop(2000 + seed, n=400, shift=0.0)
        r = paired_test(before, after, seed=seed, n_resamples=199)
        alarms += drop_verdict(r, 0.0, name="mean_score").failed
    assert alarms <= 5


# -------------------------------------------------------- ratio and one-sample tests


def test_ratio_test_detects_a_cost_rise() -> None:
    n = 200
    tokens_b = [100.0] * n
    tokens_a = [130.0] * n
    passes = [1.0 if i % 4 else 0.0 for i in range(n)]
    r = paired_ratio_test(tokens_b, passes, tokens_a, passes, n_resamples=FAST)
    assert r.test == "paired-bootstrap-ratio"
    assert r.mean_before == pytest.approx(100 * n / sum(passes))
    assert r.diff == pytest.approx(30 * n / sum(passes))
    assert r.p_value < 0.01
    assert drop_verdict(r, 0.1, higher_is_better=False, relative=True).failed


def test_ratio_test_with_no_passes_is_infinite_not_nan() -> None:
    r = paired_ratio_test([5.0, 5.0], [0.0, 0.0], [5.0, 5.0], [0.0, 0.0], n_resamples=50)
    assert math.isinf(r.mean_before) and math.isinf(r.mean_after)
    assert r.diff == 0.0 and not drop_verdict(r, 0.0, higher_is_better=False).failed


def test_one_sample_against_reference() -> None:
    rng = random.Random(1)
    values = [1.0 + rng.gauss(0, 0.1) for _ in range(100)]
    slower = one_sample_test(values, 0.5, n_resamples=FAST)
    assert slower.test == "bootstrap-vs-reference"
    assert slower.p_value < 0.01
    assert drop_verdict(slower, 0.2, higher_is_better=False).failed
    same = one_sample_test(values, 1.0, n_resamples=FAST)
    assert not drop_verdict(same, 0.05, higher_is_better=False).failed
    assert math.isnan(one_sample_test([], 1.0).diff)


def test_result_is_a_plain_frozen_dataclass() -> None:
    r = paired_test([1.0, 0.0, 1.0], [1.0, 1.0, 0.0], n_resamples=20)
    assert isinstance(r, PairedResult)
    assert "boot_diffs" not in repr(r)
    with pytest.raises(AttributeError):
        r.n = 3  # type: ignore[misc]


def test_summary_interval_of_a_rate_is_wilsons_and_never_a_point() -> None:
    from pytest_context_bench.stats import summary_interval, wilson_interval

    # Newcombe's method 4 (continuity-corrected Wilson), his worked examples
    # (Statistics in Medicine 1998, table I): 81/263 -> 0.2535 to 0.3682, 0/20 -> 0
    # to 0.2005, 1/29 -> 0.0018 to 0.1963, 29/29 -> 0.8544 to 1
    for k, n, lo, hi in ((81, 263, 0.2535, 0.3682), (0, 20, 0.0, 0.2005),
                         (1, 29, 0.0018, 0.1963), (29, 29, 0.8544, 1.0)):
        got = wilson_interval(k, n)
        assert got == pytest.approx((lo, hi), abs=1e-4), (k, n, got)
    # the summary's rate interval: t(n-1)'s critical value, never a point at 20/20
    lo, hi = summary_interval([1.0] * 20)
    assert hi == 1.0 and lo == pytest.approx(wilson_interval(20, 20)[0])
    assert 0.79 < lo < 0.84
    lo, hi = summary_interval([0.0] * 20)
    assert lo == 0.0 and 0.16 < hi < 0.22
    assert summary_interval([1.0] * 30 + [0.0] * 10) == wilson_interval(30, 40)
    # scores all equal in [0, 1] read as a rate; outside [0, 1] a point
    assert summary_interval([1.0, 1.0]) == wilson_interval(2, 2)
    assert summary_interval([4.0, 4.0]) == (4.0, 4.0)
    assert all(math.isnan(x) for x in summary_interval([]))


def test_summary_interval_of_scores() -> None:
    import statistics

    from pytest_context_bench.stats import summary_interval, t_quantile, wilson_interval

    # scores in [0, 1]: Wilson on the effective size n m (1 - m) / s^2
    values = [0.5, 0.7, 0.9, 1.0, 0.0] * 4
    m, v = statistics.fmean(values), statistics.variance(values)
    size = 20 * m * (1 - m) / v
    assert summary_interval(values) == pytest.approx(
        wilson_interval(m * size, size, z=t_quantile(0.975, 19)))
    lo, hi = summary_interval([1.0] * 19 + [0.2])
    assert 0.7 < lo < 0.96 and hi == pytest.approx(1.0, abs=0.02)
    # judge scores (1 to 5): Student's t, not clipped
    values = [1.0, 5.0, 3.0]
    m, s = statistics.fmean(values), statistics.stdev(values)
    half = 4.302653 * s / math.sqrt(3)
    assert summary_interval(values) == pytest.approx((m - half, m + half), rel=1e-3)
    for df, exact in ((1, 12.7062), (2, 4.30265), (3, 3.18245), (5, 2.57058), (19, 2.09302), (120, 1.97993)):
        assert t_quantile(0.975, df) == pytest.approx(exact, rel=3e-3), df
    assert t_quantile(0.5, 7) == 0.0 and t_quantile(0.025, 9) == pytest.approx(-t_quantile(0.975, 9))


def test_the_fast_draws_are_randranges_own() -> None:
    # The bootstrap's draws are randrange's numbers from the same stream, and leave
    # the stream where randrange would: results stay the same, seed for seed.
    from pytest_context_bench.stats import _draws

    for n in (1, 2, 3, 7, 8, 9, 400, 1000, 1024, 1025):
        ours, theirs = random.Random(n), random.Random(n)
        assert _draws(ours, n) == [theirs.randrange(n) for _ in range(n)]
        assert ours.getrandbits(64) == theirs.getrandbits(64)
