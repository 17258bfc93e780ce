"""A fast check that a JSON report's row fits ``report.schema.json`` (``$defs/row``).

Validating every row with :mod:`jsonschema` costs about 1.7 ms a row (17 s for
10,000 rows), which ``ctxbench rescore``, ``merge`` and ``compare`` would pay on every
read. :func:`row_fits` checks the same constraints in plain Python; it is
*conservative*: ``True`` only for a row the schema accepts, ``False`` for anything
it does not recognise (a float token count ``3.0``, a call source with a line break,
a key it does not know), which the reader then validates with :mod:`jsonschema`, so
that a bad row gets the schema's own error. tests/test_answers.py checks the
implication against jsonschema on generated and mutated rows.
"""

from __future__ import annotations

import math
from typing import Any

__all__ = ["row_fits"]

_ROW_REQUIRED = frozenset(
    {"system", "example_id", "dataset", "scores", "input_tokens", "output_tokens",
     "latency", "metadata", "error", "suite", "status"}
)
_ROW_KEYS = _ROW_REQUIRED | {
    "response", "tool_calls", "reference", "answer", "order", "calls", "calls_omitted",
}
_STATUSES = frozenset({"pass", "below", "error", "unscored"})
_NONFINITE = frozenset({"inf", "-inf", "nan"})
_ANSWER_KEYS = frozenset({"response", "tool_calls", "trajectory", "cut"})
_ANSWER_FIELDS = frozenset({"response", "tool_calls", "trajectory"})
_CALL_KEYS = frozenset(
    {"source", "url", "model", "params", "messages", "reply", "finish_reason", "usage",
     "latency", "cache", "attempts", "error"}
)
_CACHE = frozenset({"hit", "miss", "off"})


def _int(value: Any, minimum: int) -> bool:
    return type(value) is int and value >= minimum


def _number(value: Any) -> bool:
    """The schema's ``$defs/number``: a JSON number, or ``inf``/``-inf``/``nan``."""
    kind = type(value)
    if kind is int:
        return True
    if kind is float:
        return math.isfinite(value)
    return kind is str and value in _NONFINITE


def _str_or_none(value: Any) -> bool:
    return value is None or type(value) is str


def _call(call: Any) -> bool:
    if type(call) is not dict:
        return False
    keys = call.keys()
    if not (keys >= _CALL_KEYS and keys <= _CALL_KEYS | {"attempts_omitted"}):
        return False
    source = call["source"]
    if type(source) is not str or "\n" in source:
        return False
    if not (source == "system" or source.startswith("evaluator:")):
        return False
    if type(call["url"]) is not str or not _str_or_none(call["model"]):
        return False
    if type(call["params"]) is not dict:
        return False
    messages = call["messages"]
    if type(messages) is not list:
        return False
    for m in messages:
        if type(m) is not dict or m.keys() != {"role", "text"}:
            return False
        if type(m["role"]) is not str or type(m["text"]) is not str:
            return False
    if not _str_or_none(call["reply"]) or not _str_or_none(call["finish_reason"]):
        return False
    usage = call["usage"]
    if usage is not None:
        if type(usage) is not dict or not all(_int(v, 0) for v in usage.values()):
            return False
    if not _number(call["latency"]) or type(call["cache"]) is not str or call["cache"] not in _CACHE:
        return False
    attempts = call["attempts"]
    if type(attempts) is not list:
        return False
    for a in attempts:
        if type(a) is not dict or a.keys() != {"status", "error"}:
            return False
        if not (a["status"] is None or type(a["status"]) is int) or not _str_or_none(a["error"]):
            return False
    if "attempts_omitted" in call and not _int(call["attempts_omitted"], 1):
        return False
    return _str_or_none(call["error"])


def _metadata(md: Any) -> bool:
    if type(md) is not dict:
        return False
    if "trial" in md and not _int(md["trial"], 0):
        return False
    if "adaptive" in md:
        a = md["adaptive"]
        if type(a) is not dict or not a.keys() >= {"max_trials", "budget", "reasked", "trials"}:
            return False
        if not _int(a["max_trials"], 2) or not _int(a["trials"], 1):
            return False
        if type(a["budget"]) not in (int, float) or type(a["reasked"]) is not bool:
            return False
        if type(a["budget"]) is float and not math.isfinite(a["budget"]):
            return False
    return True


def _answer(answer: Any) -> bool:
    if type(answer) is not dict or not answer.keys() <= _ANSWER_KEYS:
        return False
    if "response" in answer and type(answer["response"]) is not str:
        return False
    cut = answer.get("cut", [])
    return type(cut) is list and all(type(c) is str and c in _ANSWER_FIELDS for c in cut)


def row_fits(row: Any) -> bool:
    """True only when ``row`` fits the schema's ``$defs/row`` (see the module
    docstring: ``False`` does not mean it does not)."""
    if type(row) is not dict:
        return False
    keys = row.keys()
    if not (keys >= _ROW_REQUIRED and keys <= _ROW_KEYS):
        return False
    system = row["system"]
    if type(system) is not str or not system:
        return False
    for key in ("example_id", "dataset", "suite"):
        if type(row[key]) is not str:
            return False
    scores = row["scores"]
    if type(scores) is not dict or not all(_number(v) for v in scores.values()):
        return False
    if not _int(row["input_tokens"], 0) or not _int(row["output_tokens"], 0):
        return False
    if not _number(row["latency"]) or not _metadata(row["metadata"]):
        return False
    error = row["error"]
    if error is not None:
        if type(error) is not dict:
            return False
        for key in ("type", "message", "where"):
            if type(error.get(key)) is not str:
                return False
    if type(row["status"]) is not str or row["status"] not in _STATUSES:
        return False
    for key in ("response", "tool_calls", "reference"):
        if key in row and type(row[key]) is not str:
            return False
    if "answer" in row and not _answer(row["answer"]):
        return False
    if "order" in row:
        order = row["order"]
        if type(order) is not list or not all(type(x) is int for x in order):
            return False
    if "calls" in row:
        calls = row["calls"]
        if type(calls) is not list or not all(_call(c) for c in calls):
            return False
    if "calls_omitted" in row and not _int(row["calls_omitted"], 0):
        return False
    return True
