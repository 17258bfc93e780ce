"""The invariants of a row of a JSON report or a baseline, checked by their readers."""

from __future__ import annotations

import math
from typing import Any

from ..metrics.scores import VERDICT_KEYS, score_passes

__all__ = [
    "MONEY_KEYS",
    "below_text",
    "money_total_problem",
    "row_problem",
    "row_status",
    "status_problem",
    "token_total_problem",
]

#: A row's money (``metadata``): US dollars, ``None`` when unknown (a model without
#: a price, a reply whose usage could not be read), never negative.
MONEY_KEYS = ("cost_usd", "judge_cost_usd", "saved_usd", "judge_saved_usd")

#: How far a row's money may differ from what the file says it adds up to: the
#: rounding of a sum taken in another order.
_MONEY_REL_TOL = 1e-6
_MONEY_ABS_TOL = 1e-12

_EDITED = "(was the file edited or corrupted? re-run to write it again)"


def row_status(
    error: Any, scores: dict[str, Any], score_field: str | None, threshold: float
) -> str:
    """A row's status, decided by its error, its scores and the threshold alone:
    ``error`` (an error is set), ``unscored`` (the primary score ``score_field``,
    ``f1`` when ``None``, is absent), ``below`` (under ``threshold``) or ``pass``.
    ``--ctxbench-strict`` and repeated trials do not change it (strict changes the
    pytest outcome; each trial is a row of its own)."""
    if error is not None:
        return "error"
    passed = score_passes(scores, score_field, threshold)
    if passed is None:
        return "unscored"
    return "pass" if passed else "below"


def below_text(scores: dict[str, Any], field: str | None, threshold: float, num: Any = None) -> str:
    """Why a row without an error is not a pass, in a few words: ``f1 = 0.4 < 0.7``,
    or ``assert_score = 0.5, its assertions failed`` for a row whose evaluator gave
    the verdict itself (:data:`~pytest_context_bench.metrics.scores.VERDICT_KEYS`)."""
    name = field or "f1"
    score = scores.get(name)
    if score is None:
        return f"no {name} score"
    shown = num(score) if num is not None else f"{float(score):.3g}"
    if name in VERDICT_KEYS and VERDICT_KEYS[name] in scores:
        who = "its assertions" if name == "assert_score" else "the judge's verdict"
        return f"{name} = {shown}, {who} failed"
    return f"{name} = {shown} < {threshold:g}"


def status_problem(raw: dict[str, Any], suite: dict[str, Any]) -> str | None:
    """What contradicts the status of a row (already checked by :func:`row_problem`)
    in its ``suite`` entry (``None``: nothing): the status must be the one its error,
    its primary score (the suite's ``score_field``, else the row's own, as the
    metrics read it) and the suite's threshold give. A report whose scores were edited (turning a
    failing gate into a pass) fails here, as ``"(suite 's', example_id 'x') ..."``.
    """
    metadata = raw.get("metadata") or {}
    # The field the metrics read: the suite's, else the row's own.
    field = suite.get("score_field") or metadata.get("score_field")
    status = raw.get("status")
    threshold = float(suite["threshold"])
    expected = row_status(raw.get("error"), raw["scores"], field, threshold)
    if status != expected:
        name = field or "f1"
        score = raw["scores"].get(name)
        why = (
            "its error is set"
            if expected == "error"
            else f"it has no {name!r} score"
            if expected == "unscored"
            else f"{name} = {score!r} against the threshold {threshold:g}"
            if name not in VERDICT_KEYS
            else f"its {VERDICT_KEYS[name]!r} verdict is {raw['scores'].get(VERDICT_KEYS[name])!r}"
        )
        return (
            f"({_row_name(raw)}) has status {status!r}, but {why} makes it"
            f" {expected!r} (were its scores edited?)"
        )
    return None


def _row_name(raw: dict[str, Any]) -> str:
    return f"suite {raw.get('suite')!r}, example_id {raw.get('example_id')!r}"


def _count(value: Any) -> bool:
    return type(value) is int and value >= 0


def _finite(value: Any) -> bool:
    """A JSON number that is a finite float: not a bool, not NaN or infinite, and
    not an integer too large for a float (``10**400``, which ``float()`` and
    ``math.isfinite`` refuse with ``OverflowError``)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    try:
        return math.isfinite(float(value))
    except OverflowError:
        return False


def _shown(value: Any) -> str:
    """``repr(value)``, cut to 40 characters (an integer of 4,000 digits is named
    by its size)."""
    text = repr(value)
    if len(text) <= 40:
        return text
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{text[:12]}... (an integer of {len(text.lstrip('-'))} digits)"
    return text[:37] + "..."


def _dollars(value: Any) -> bool:
    """A dollar figure as this plugin writes it: a finite number >= 0 (not a bool)."""
    return _finite(value) and value >= 0


def _money_problem(metadata: dict[str, Any]) -> str | None:
    for key in MONEY_KEYS:
        value = metadata.get(key)
        if key in metadata and value is not None and not _dollars(value):
            what = "a negative amount" if _finite(value) else "not a finite number"
            return (
                f"has metadata.{key} {_shown(value)}, {what}; a row's money is US"
                f" dollars >= 0, or null when unknown {_EDITED}"
            )
    return None


def money_total_problem(rows: list[Any], llm: Any) -> str | None:
    """What contradicts the run's money in a JSON report (``None``: nothing): the
    rows' ``metadata.cost_usd`` (and ``judge_cost_usd``), over the rows that
    measured LLM usage, plus the requests no row owns (``llm.unattributed``), must
    add up to the ``llm.money`` total the run wrote, as the run computed it. A row
    whose money was lowered (to 0, say) without the total fails here.

    Nothing is checked when the file holds no total, or an unknown one (a model
    without a price); the rows are checked one by one by :func:`row_problem`.
    """
    money = llm.get("money") if isinstance(llm, dict) else None
    if not isinstance(money, dict):
        return None
    loose = llm.get("unattributed") if isinstance(llm, dict) else None
    for key, usage in (("cost_usd", "llm_usage"), ("judge_cost_usd", "judge_usage")):
        total: Any = money.get(key)
        if not _dollars(total):
            continue  # unknown (a model without a price): nothing to add up to
        parts: list[float] = []
        for row in rows:
            md = row.get("metadata") if isinstance(row, dict) else None
            if not isinstance(md, dict) or not isinstance(md.get(usage), dict):
                continue  # the run's total counts only rows that measured usage
            value: Any = md.get(key)
            if not _dollars(value):
                parts = []
                break  # an unknown part: the sum is unknown, so is the check
            parts.append(float(value))
        else:
            if key == "cost_usd" and isinstance(loose, dict) and "cost_usd" in loose:
                extra: Any = loose["cost_usd"]
                if not _dollars(extra):
                    continue
                parts.append(float(extra))
            found = math.fsum(parts)
            if not math.isclose(
                found, float(total), rel_tol=_MONEY_REL_TOL, abs_tol=_MONEY_ABS_TOL
            ):
                return (
                    f"its rows' metadata.{key} add up to ${found:.6g}, but"
                    f" llm.money.{key} (the run's total) is ${float(total):.6g}:"
                    f" money was changed after the run wrote it {_EDITED}"
                )
    return None


def token_total_problem(rows: list[Any], llm: Any) -> str | None:
    """What contradicts the run's tokens in a JSON report (``None``: nothing): the
    rows' ``llm_usage`` and ``judge_usage`` prompt, completion and cached tokens,
    plus those of the requests no row owns (``llm.unattributed``), must add up to
    ``llm.tokens``, exactly, as the run counted them. A row whose tokens were
    lowered together with its money, but not the total, fails here."""
    tokens = llm.get("tokens") if isinstance(llm, dict) else None
    if not isinstance(tokens, dict):
        return None
    loose = llm.get("unattributed")
    for key in ("prompt_tokens", "completion_tokens", "cached_tokens"):
        total = tokens.get(key)
        if not _count(total):
            continue
        parts = [loose] if isinstance(loose, dict) else []
        for row in rows:
            md = row.get("metadata") if isinstance(row, dict) else None
            if isinstance(md, dict):
                parts += [md.get(u) for u in ("llm_usage", "judge_usage")]
        found = 0
        for usage in parts:
            if not isinstance(usage, dict):
                continue
            value = usage.get(key, 0)
            if not _count(value):
                return (
                    f"has a {key} of {_shown(value)} in a row's usage, not an integer"
                    f" >= 0 {_EDITED}"
                )
            found += value
        if found != total:
            return (
                f"its rows' {key} (llm_usage, judge_usage) add up to {found:,}, but"
                f" llm.tokens.{key} (the run's total) is {total:,}: tokens were"
                f" changed after the run wrote them {_EDITED}"
            )
    return None


def row_problem(
    raw: dict[str, Any],
    suites: set[str] | None = None,
    seen: dict[tuple[Any, ...], int] | None = None,
    index: int = 0,
) -> str | None:
    """What is wrong with one row of a baseline or a JSON report (``None``: nothing),
    as ``"(suite 's', example_id 'x') <problem>"``.

    The invariants every row written by this plugin keeps: a non-empty string
    ``suite`` (one of ``suites`` when given), ``system`` and ``example_id``; a string
    ``dataset``; ``scores`` an object of finite numbers; token counts non-negative
    integers; ``error`` null or an object, set exactly when ``status`` is
    ``"error"``; ``metadata.trial`` (when present) an integer >= 0; the row's money
    (:data:`MONEY_KEYS`, when present) null or a finite number >= 0; and (with
    ``seen``, the keys of the rows before, filled in) no two rows of one suite, dataset,
    example id and trial.
    """
    problem = _problem(raw, suites)
    if problem is not None:
        return f"({_row_name(raw)}) {problem}"
    if seen is not None:
        key = (
            raw["suite"],
            raw.get("dataset", ""),
            raw["example_id"],
            (raw.get("metadata") or {}).get("trial"),
        )
        if key in seen:
            return (
                f"({_row_name(raw)}) repeats rows[{seen[key]}] (same suite, dataset,"
                " example id and trial)"
            )
        seen[key] = index
    return None


def _problem(raw: dict[str, Any], suites: set[str] | None) -> str | None:
    for key in ("suite", "system", "example_id"):
        value = raw.get(key)
        if not isinstance(value, str) or not value:
            return f"has {key} {value!r}; expected a non-empty string"
    if suites is not None and raw["suite"] not in suites:
        return "names a suite that 'suites' does not list"
    if not isinstance(raw.get("dataset", ""), str):
        return f"has dataset {raw.get('dataset')!r}; expected a string"
    scores = raw.get("scores")
    if not isinstance(scores, dict):
        return "has no 'scores' object"
    for name, value in scores.items():
        if not _finite(value):
            return f"has score {name!r} = {_shown(value)}; expected a finite number"
    for key in ("input_tokens", "output_tokens"):
        if key in raw and not _count(raw[key]):
            return f"has {key} {raw[key]!r}; expected an integer >= 0"
    error = raw.get("error")
    if error is not None and not isinstance(error, dict):
        return "has an 'error' that is neither null nor an object"
    status = raw.get("status")
    if status is not None and (status == "error") != (error is not None):
        return (
            f"has status {status!r} but error {'set' if error is not None else 'null'}"
        )
    metadata = raw.get("metadata")
    if metadata is not None and not isinstance(metadata, dict):
        return "has a 'metadata' that is not an object"
    if (
        isinstance(metadata, dict)
        and "trial" in metadata
        and not _count(metadata["trial"])
    ):
        return f"has trial {metadata['trial']!r}; expected an integer >= 0"
    if isinstance(metadata, dict):
        return _money_problem(metadata)
    return None
