"""Adaptive trials (``--ctxbench-trials=adaptive``): how many examples to ask again,
and which. Pure standard library.

The design (docs/gating.md, "Adaptive trials", gives the argument and the
measurements)
-----------------------------------------------------------------------------
The baseline holds ``R`` trials of every example (saved with
``--ctxbench-repeat=R``, ``R >= K``). The run asks each example once, and asks a
share of the examples again, so that the run spends ``budget`` calls per example:

* **Only when it can pay.** When every example's baseline trials agree (the same
  pass outcome and the same score: a temperature-0 System, a cache inside the
  System), a second answer of the day is the first one again and carries no
  information: nothing is asked again, and the report says so.
* **How many more.** One more trial each for as many examples as the budget pays
  for; when it pays for more than one per example, ``e`` more each, up to ``K - 1``
  (``K`` = ``--ctxbench-max-trials``).
* **Which.** The examples with the smallest seeded hash of their identity (a coin
  that is the same in every process, mode, shard and replay). Never the baseline's
  or the run's outcomes: a choice that reads one side's outcomes makes the two sides
  unlike (an example re-asked because its baseline trials passed regresses to its
  mean on the run's day), which is how the first design of this mode cried wolf on
  Systems whose answers drift from day to day.

The comparison then pairs each example on as many trials of each side
(:func:`pytest_context_bench.baseline.balance_trials`): ``k`` run trials against the
baseline's first ``k``. Under an unchanged System the two are alike whatever the
trials of one day share, so the paired sign-flip test (exact McNemar when every
example has one trial) keeps its false-alarm rate.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from .errors import ConfigError

__all__ = ["Design", "allocation", "any_varies", "coin", "varies"]


@dataclass(frozen=True)
class Design:
    """The constants of one suite's adaptive design, fixed before any outcome.

    :param max_trials: ``K``, the most trials one example gets (``>= 2``).
    :param budget: calls per example, in passes over the examples (``> 1``).
    :param baseline_trials: ``R``, the baseline's trials per example (``>= K``: each
        example is compared on as many baseline trials as it got in the run).
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
                f" --ctxbench-repeat={self.max_trials} or more); it has"
                f" {self.baseline_trials}."
            )


def varies(trials: Sequence[object]) -> bool:
    """True when an example's baseline trials (pass outcomes or scores) differ: its
    answers vary within a run, so asking it again can tell more."""
    seen = [t for t in trials if t is not None]
    return any(t != seen[0] for t in seen[1:])


def any_varies(examples: Iterable[Sequence[object]]) -> bool:
    """True when some example's trials vary (:func:`varies`): the System is not
    deterministic within a run, and re-asking can pay."""
    return any(varies(t) for t in examples)


def allocation(design: Design, examples: int, pool: int) -> tuple[int, int]:
    """``(extra, chosen)``: how many more trials each chosen example gets, and how
    many pool examples are chosen, so that ``examples + extra * chosen`` calls stay
    within ``budget * examples``.

    :param examples: the suite's examples (each costs its first call).
    :param pool: those of them that may be asked again.
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
