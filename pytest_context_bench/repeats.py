"""Repeated trials (``--ctxbench-repeat=K``): pass@k, pass^k, flaky examples, and one
row per example holding the mean over its trials.

An LLM System is not a function: the same example may pass on one call and fail on
the next. Running each example K times measures that:

* **pass@k**: the probability that at least one of k trials passes, estimated without
  bias from n trials with c passes as ``1 - C(n-c, k) / C(n, k)`` (Chen et al., 2021,
  the HumanEval paper);
* **pass^k**: the probability that all k trials pass, ``C(c, k) / C(n, k)`` (Yao et
  al., 2024, tau-bench): what a user who needs the System to be right every time
  gets;
* **flaky**: an example with some passing and some failing trials.

For the metrics and the gates, the trials of one example are folded into one row
(:func:`fold_trials`): each score is the mean over the trials, a trial that raised
counting as 0 (a crash is a failure, as everywhere else); tokens and latency are
means too. So the pass rate of a repeated run is the mean pass@1, and baselines
compare per-example means with the paired bootstrap.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from .metrics import row_score
from .metrics.scores import primary_field, score_passes
from .results import EvalRow

__all__ = ["pass_at_k", "pass_hat_k", "fold_trials", "repeat_summary"]


def pass_at_k(n: int, c: int, k: int) -> float:
    """The unbiased estimate of pass@k from ``n`` trials of which ``c`` passed."""
    _check(n, c, k)
    if n - c < k:
        return 1.0
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def pass_hat_k(n: int, c: int, k: int) -> float:
    """The unbiased estimate of pass^k (all k trials pass) from ``n`` trials, ``c``
    passing."""
    _check(n, c, k)
    return math.comb(c, k) / math.comb(n, k)


def _check(n: int, c: int, k: int) -> None:
    if not (0 <= c <= n and 1 <= k <= n):
        raise ValueError(f"need 0 <= c <= n and 1 <= k <= n, got n={n}, c={c}, k={k}")


def fold_trials(
    trials: Sequence[EvalRow], score_field: str | None, threshold: float
) -> EvalRow:
    """One row for the trials of one example: mean scores, tokens and latency.

    ``metadata["trials"]`` says what happened: ``n``, ``passed`` (how many trials
    reached the threshold), ``errors``, ``scores`` (each trial's primary score, in
    trial order; ``None`` when unscored) and ``flaky``. The row has an error only when
    every trial raised (the first trial's error).
    """
    if not trials:
        raise ValueError("fold_trials() needs at least one trial")
    first = trials[0]
    keys = list(dict.fromkeys(k for t in trials for k in t.scores))
    scores: dict[str, float] = {}
    for key in keys:
        values = [
            0.0 if t.error is not None else float(t.scores[key])
            for t in trials
            if t.error is not None or key in t.scores
        ]
        scores[key] = math.fsum(values) / len(values)
    primary = [row_score(t, score_field) for t in trials]
    passed = sum(1 for t, s in zip(trials, primary)
                 if t.error is None and s is not None
                 and score_passes(t.scores, primary_field(t, score_field), threshold))
    judged = sum(1 for s in primary if s is not None)
    errors = sum(1 for t in trials if t.error is not None)
    metadata: dict[str, Any] = {k: v for k, v in first.metadata.items() if k != "trial"}
    metadata["trials"] = {
        "n": len(trials),
        "passed": passed,
        "errors": errors,
        "scores": primary,
        "flaky": 0 < passed < judged,
    }
    n = len(trials)
    return EvalRow(
        system=first.system,
        example_id=first.example_id,
        dataset=first.dataset,
        scores=scores,
        input_tokens=round(math.fsum(t.input_tokens for t in trials) / n),
        output_tokens=round(math.fsum(t.output_tokens for t in trials) / n),
        latency=math.fsum(t.latency for t in trials) / n,
        metadata=metadata,
        error=first.error if errors == n else None,
    )


def repeat_summary(folded: Sequence[EvalRow]) -> dict[str, Any]:
    """pass@1, pass@k, pass^k over the folded rows of one suite, and its flaky ids.

    Rows whose trials were all unscored are left out. ``k`` is the smallest number of
    trials of any example (normally every example has K).
    """
    stats_rows = [
        (r, s)
        for r in folded
        if (s := r.metadata.get("trials")) is not None
        and (s["errors"] or any(x is not None for x in s["scores"]))
    ]
    if not stats_rows:
        return {"k": 0, "examples": 0}
    k = min(s["n"] for _, s in stats_rows)
    count = len(stats_rows)

    def mean(values: list[float]) -> float:
        return math.fsum(values) / count

    flaky = [f"{r.dataset}/{r.example_id}" for r, s in stats_rows if s["flaky"]]
    return {
        "k": k,
        "examples": count,
        "pass_at_1": mean([s["passed"] / s["n"] for _, s in stats_rows]),
        "pass_at_k": mean([pass_at_k(s["n"], s["passed"], k) for _, s in stats_rows]),
        "pass_hat_k": mean([pass_hat_k(s["n"], s["passed"], k) for _, s in stats_rows]),
        "flaky": flaky,
        "flaky_rate": len(flaky) / count,
    }
