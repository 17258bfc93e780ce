"""Adaptive trials (``--ctxbench-trials=adaptive``): which examples to ask again, and
a pass-rate test that keeps its false-alarm rate under that choice. Pure standard
library.

The design (docs/gating.md, "Adaptive trials", gives the argument in full)
-----------------------------------------------------------------------
The baseline holds ``R`` trials of every example (saved with
``--ctxbench-repeat=R``, ``R >= K``). The run asks each example once; an example is
asked ``K - 1`` more times (``K`` = ``--ctxbench-max-trials``) only when it is
*informative* and a seeded coin says so:

* **Stage 1**, every example: its first trial against the baseline's first
  ``R - (K - 1)`` trials (the *stage-1 trials*). The example is informative when
  these outcomes are mixed: the first trial disagrees with one of them.
* **Selection**: an informative example is asked again with probability ``rho``,
  the same for every example of a suite, set from the baseline's stage-1 trials so
  that an unchanged System spends ``budget`` calls per example on average. The coin
  is a hash of the example's identity: the same examples are chosen in-process,
  under ``-n``, in every shard and on every replay.
* **Stage 2**, the examples asked again: their ``K - 1`` new trials against the
  baseline's last ``K - 1`` trials (the *held-out trials*), which nothing before
  stage 2 looked at.

Each stage is an exact conditional test (Mantel-Haenszel: within an example, an
unchanged System makes its trials of both runs exchangeable, so given how many of
them passed, the number of the run's passes is hypergeometric; the null
distribution of the sum over examples is their exact convolution). Stage 2 is valid
conditionally on everything stage 1 saw, whatever the selection did with it, so the
inverse-normal combination of the two p-values with weights fixed in advance (by
``R``, ``K`` and the budget, never by outcomes) is a level-``alpha`` test: the
two-stage adaptive design of Bauer & Koehne (1994) and Lehmacher & Wassmer (1999).
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from statistics import NormalDist

from .errors import ConfigError
from .stats import PairedResult

__all__ = [
    "ADAPTIVE_TEST",
    "Design",
    "Example",
    "adaptive_test",
    "coin",
    "informative",
    "reask_rate",
]

#: ``PairedResult.test`` of the adaptive pass-rate test.
ADAPTIVE_TEST = "adaptive-two-stage"
#: The number of normal replicates standing for the combined estimate's
#: distribution in :attr:`PairedResult.boot_diffs` (read by ``drop_verdict``).
_REPLICATES = 2000
_N = NormalDist()


@dataclass(frozen=True)
class Design:
    """The constants of one suite's adaptive design, fixed before any outcome.

    :param max_trials: ``K``, trials of an example asked again (``>= 2``).
    :param budget: calls per example on average for an unchanged System (``> 1``).
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
                f" --ctxbench-repeat={self.max_trials} or more); it has {self.baseline_trials}."
            )

    @property
    def held_out(self) -> int:
        """Baseline trials kept for stage 2: ``K - 1``."""
        return self.max_trials - 1

    @property
    def stage1(self) -> int:
        """Baseline trials stage 1 compares the first trial with: ``R - (K - 1)``."""
        return self.baseline_trials - self.held_out

    def weights(self) -> tuple[float, float]:
        """The inverse-normal weights ``(w1, w2)``, ``w1**2 + w2**2 = 1``: each stage's
        planned information for a drop (per example, in units of its variance)."""
        k1, h = self.stage1, self.held_out
        info1 = k1 / (k1 + 1.0)  # 1 trial against k1
        info2 = (self.budget - 1.0) / h * (h / 2.0)  # h against h, (budget-1)/h of them
        total = info1 + info2
        return math.sqrt(info1 / total), math.sqrt(info2 / total)


def informative(first: int, stage1: Sequence[int]) -> bool:
    """True when the first trial's outcome and the baseline's stage-1 outcomes (all
    0 or 1) are mixed: the example has not settled."""
    total = first + sum(stage1)
    return 0 < total < len(stage1) + 1


def reask_rate(design: Design, stage1_outcomes: Iterable[Sequence[int]], examples: int) -> float:
    """``rho``: the chance an informative example is asked again.

    Set so that an unchanged System spends ``budget`` calls per example on average:
    how many examples become informative is bounded from above by the baseline's
    stage-1 trials alone (mixed ones already are; an unmixed one breaks with the
    chance that one more trial differs, bounded by the share of examples whose
    trials differ in exactly one place; with one stage-1 trial, every example is
    assumed to break), so ``rho`` errs on the side of fewer calls.

    :param stage1_outcomes: per eligible example, its baseline stage-1 outcomes.
    :param examples: the suite's examples (each costs its first call).
    """
    expected = 0.0
    for outcomes in stage1_outcomes:
        k, c = len(outcomes), sum(outcomes)
        if 0 < c < k:
            expected += 1.0
        if k == 1:
            expected += 1.0  # one trial says nothing about the next: assume it ties
        elif k > 1:
            # An all-pass example breaks with chance E[p^k (1-p)] <= E[p^(k-1) (1-p)],
            # which "k-1 passes, one failure" estimates without bias (1/k of them per
            # order); all-fail alike. An upper bound: the budget is not overspent.
            expected += ((c == k - 1) + (c == 1)) / k
    if expected <= 0.0:
        return 1.0
    extra = (design.budget - 1.0) * examples / design.held_out
    return min(1.0, extra / expected)


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


def _null_tail(tables: Sequence[tuple[int, int, int]], observed: int) -> float:
    """``P(S <= observed)`` for ``S`` the sum over tables of independent
    hypergeometric counts; a table ``(n, k, t)``: ``k`` of ``n`` trials are the
    run's, ``t`` of the ``n`` passed."""
    dist = [1.0]
    for n, k, t in tables:
        lo, hi = max(0, k - (n - t)), min(k, t)
        total = math.comb(n, k)
        pmf = [(o, math.comb(t, o) * math.comb(n - t, k - o) / total) for o in range(lo, hi + 1)]
        new = [0.0] * (len(dist) + hi)
        for s, ps in enumerate(dist):
            if ps:
                for o, po in pmf:
                    new[s + o] += ps * po
        dist = new
    return min(1.0, math.fsum(dist[: observed + 1]))


def _stage(pairs: list[tuple[list[int], list[int]]]) -> tuple[float, list[float]]:
    """One stage's exact conditional p-value of "the run passes less" and its
    per-example differences (run mean - baseline mean)."""
    tables: list[tuple[int, int, int]] = []
    observed = 0
    diffs: list[float] = []
    for run, base in pairs:
        n, k, t = len(run) + len(base), len(run), sum(run) + sum(base)
        diffs.append(sum(run) / len(run) - sum(base) / len(base))
        if 0 < t < n:  # a table whose trials all agree has a single outcome
            tables.append((n, k, t))
            observed += sum(run)
    if not tables:
        return 1.0, diffs
    # The expected count of the unmixed tables is their (fixed) count: leave out.
    return _null_tail(tables, observed), diffs


def _z(p: float) -> float:
    return _N.inv_cdf(min(max(1.0 - p, 1e-15), 1.0 - 1e-15))


def _mean_se(diffs: list[float]) -> tuple[float, float]:
    n = len(diffs)
    m = math.fsum(diffs) / n
    if n < 2:
        return m, math.inf
    var = math.fsum((d - m) ** 2 for d in diffs) / (n - 1)
    return m, math.sqrt(var / n)


def adaptive_test(
    design: Design,
    examples: Sequence[Example],
    *,
    confidence: float = 0.95,
) -> PairedResult:
    """The adaptive pass-rate test of a run against its baseline.

    :param design: the suite's :class:`Design`.
    :param examples: the matched examples; one whose first trial is unscored, or
        whose baseline has fewer trials than ``R``, is left out of the stage it
        cannot take part in.
    :param confidence: the level of the test and of the interval.
    :return: a :class:`~pytest_context_bench.stats.PairedResult` (``test`` =
        :data:`ADAPTIVE_TEST`): ``p_lower`` the combined one-sided p-value of a
        drop, ``diff`` the combined estimate of the change (the stage-1 difference
        and the stage-2 difference weighted as the test weighs them: the stage-2
        examples are the informative ones, so it reads a drop the same in them as
        in all), ``ci_low``/``ci_high`` its normal interval and ``boot_diffs``
        normal replicates of it, from which ``drop_verdict`` reads its bound;
        ``mean_before`` the baseline's pass rate over the stage-1 examples,
        ``mean_after`` that plus ``diff``.
    """
    k1, h = design.stage1, design.held_out
    stage1: list[tuple[list[int], list[int]]] = []
    stage2: list[tuple[list[int], list[int]]] = []
    then: list[float] = []
    for ex in examples:
        if ex.first is None:
            continue
        base = [b for b in ex.baseline if b is not None]
        if len(ex.baseline) >= design.baseline_trials:
            first_base = [b for b in ex.baseline[:k1] if b is not None]
            held = [b for b in ex.baseline[k1 : k1 + h] if b is not None]
        else:
            first_base, held = base, []
        if not first_base:
            continue
        stage1.append(([ex.first], first_base))
        then.append(sum(base) / len(base))
        if ex.extra:
            extra = [x for x in ex.extra if x is not None]
            if extra and held:
                stage2.append((extra, held))
    nan = math.nan
    if not stage1:
        return PairedResult(ADAPTIVE_TEST, 0, nan, nan, nan, nan, nan, nan, confidence, True, nan, nan)
    p1, d1 = _stage(stage1)
    p2, d2 = _stage(stage2) if stage2 else (1.0, [])
    w1, w2 = design.weights()
    z = w1 * _z(p1) + w2 * _z(p2)
    p_lower = 1.0 - _N.cdf(z)
    m1, se1 = _mean_se(d1)
    if len(d2) >= 2:
        m2, se2 = _mean_se(d2)
    else:
        m2, se2 = 0.0, math.inf
    a1 = w1 / se1 if se1 > 0 else 0.0
    a2 = w2 / se2 if 0 < se2 < math.inf else 0.0
    if a1 + a2 > 0:
        diff = (a1 * m1 + a2 * m2) / (a1 + a2)
        se = 1.0 / (a1 + a2)
    else:  # every difference is equal: no spread to weigh
        diff, se = m1, 0.0
    q = _N.inv_cdf((1.0 + confidence) / 2.0)
    before = math.fsum(then) / len(then)
    replicates = tuple(
        diff + se * _N.inv_cdf((j + 0.5) / _REPLICATES) for j in range(_REPLICATES)
    )
    return PairedResult(
        test=ADAPTIVE_TEST,
        n=len(stage1),
        mean_before=before,
        mean_after=before + diff,
        diff=diff,
        ci_low=diff - q * se,
        ci_high=diff + q * se,
        p_value=p_lower,
        confidence=confidence,
        higher_is_better=True,
        p_lower=p_lower,
        p_higher=_p_higher(stage1, stage2, w1, w2),
        boot_diffs=replicates,
    )


def _p_higher(
    stage1: list[tuple[list[int], list[int]]],
    stage2: list[tuple[list[int], list[int]]],
    w1: float,
    w2: float,
) -> float:
    """The combined one-sided p-value of "the run passes more" (the same test with
    the sides' roles swapped: the run's failures counted instead of its passes)."""

    def flipped(pairs: list[tuple[list[int], list[int]]]) -> list[tuple[list[int], list[int]]]:
        return [([1 - x for x in run], [1 - b for b in base]) for run, base in pairs]

    q1 = _stage(flipped(stage1))[0]
    q2 = _stage(flipped(stage2))[0] if stage2 else 1.0
    return 1.0 - _N.cdf(w1 * _z(q1) + w2 * _z(q2))
