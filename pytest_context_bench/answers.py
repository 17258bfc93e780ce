"""The answer of a row: what the System returned that the evaluators read, kept so
that it can be scored again without the System (``ctxbench rescore``, and the
baseline gate across an evaluator change).

A row's ``answer`` (in a JSON report and in a baseline) holds the fields of the
processed example that evaluators read (:data:`ANSWER_FIELDS`), each as the System
returned it, when the System returned it::

    {"response": "Paris", "tool_calls": [...], "trajectory": [...], "cut": ["response"]}

Each is capped as the reports cap a response (:data:`ANSWER_CAP` characters: the
text of ``response``, the JSON text of the others), and a registered secret (an API
key the model echoed) is replaced by ``***`` as everywhere else. ``cut`` names the
fields whose kept value is not what the System returned: longer than the cap (the
response keeps its head, a structured field is left out), a secret redacted, or a
value that is not JSON (a non-finite number, an object of the System's own types,
text that is not Unicode). A field named in ``cut`` cannot be scored again, so its
row is not re-scored (:func:`rescore_problem`): never scored on a part of what the
System said.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

from .urls import redact_secrets

__all__ = [
    "ANSWER_CAP",
    "ANSWER_FIELDS",
    "answer_problem",
    "keep_answer",
    "processed_from",
    "rescore_problem",
]

#: The processed example's fields the evaluators read (docs/evaluators.md): the
#: text, the tool calls (ToolCallMatch, tool-call assertions) and the agent's steps
#: (TrajectoryMatch, max-steps, max-tool-calls).
ANSWER_FIELDS = ("response", "tool_calls", "trajectory")
#: Characters kept of each field: the reports' cap on a response
#: (``calls.IO_CLIP``, which imports this module: kept equal by a test).
ANSWER_CAP = 2000
#: Nesting kept of a structured field (deeper is not JSON a reader accepts).
_DEPTH = 50


class _Altered(Exception):
    """A value that is not plain JSON text as it stands."""


def _text(value: str) -> tuple[str, bool]:
    """``value`` redacted of secrets, and whether that changed it (a lone
    surrogate, which is not text, is replaced too)."""
    out = redact_secrets(value, bearer=False)
    try:
        out.encode("utf-8")
    except UnicodeEncodeError:
        out = out.encode("utf-8", "replace").decode("utf-8")
    return out, out != value


def _plain(value: Any, depth: int = 0) -> tuple[Any, bool]:
    """``value`` as strict JSON builtins (strings redacted), and whether anything
    had to change for that."""
    if depth > _DEPTH:
        raise _Altered
    if value is None or type(value) in (bool, int):
        return value, False
    if type(value) is float:
        if not math.isfinite(value):
            return str(value), True
        return value, False
    if type(value) is str:
        return _text(value)
    if isinstance(value, Mapping):
        out: dict[str, Any] = {}
        changed = False
        for k, v in value.items():
            if type(k) is not str:
                changed = True
            key, key_changed = _text(str(k))
            out[key], item_changed = _plain(v, depth + 1)
            changed = changed or key_changed or item_changed
        return out, changed or type(value) is not dict
    if isinstance(value, (list, tuple)):
        items = [_plain(v, depth + 1) for v in value]
        return [v for v, _ in items], any(c for _, c in items) or type(value) is not list
    # An object of the System's own (a pydantic model, a dataclass): its repr
    # is shown, never scored again.
    shown, _ = _text(repr(value))
    return shown, True


def keep_answer(processed: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The ``answer`` of a row from the processed example (``None``: the System
    returned none, e.g. it raised).

    :return: the fields of :data:`ANSWER_FIELDS` the processed example has, capped
        (see the module docstring), and ``cut`` when some are not whole.
    """
    if processed is None or not isinstance(processed, Mapping):
        return None
    out: dict[str, Any] = {}
    cut: list[str] = []
    for name in ANSWER_FIELDS:
        if name not in processed:
            continue
        value = processed[name]
        if name == "response" and isinstance(value, str):
            text, changed = _text(value)
            if len(text) > ANSWER_CAP:
                text = text[:ANSWER_CAP] + f"… [{len(text) - ANSWER_CAP} more characters]"
                changed = True
            out[name] = text
            if changed:
                cut.append(name)
            continue
        try:
            plain, changed = _plain(value)
            size = len(json.dumps(plain, ensure_ascii=False, allow_nan=False))
        except (_Altered, ValueError, RecursionError):
            cut.append(name)
            continue
        if size > ANSWER_CAP:
            cut.append(name)  # a part of a structure is not an answer: left out
            continue
        out[name] = plain
        if changed:
            cut.append(name)
    if cut:
        out["cut"] = cut
    return out


def answer_problem(answer: Any) -> str | None:
    """What is wrong with a row's ``answer`` read from a file (``None``: nothing):
    an object of :data:`ANSWER_FIELDS` (``response`` a string when present) and
    ``cut``, a list of those names."""
    if not isinstance(answer, dict):
        return "has an 'answer' that is not an object"
    unknown = sorted(set(answer) - {*ANSWER_FIELDS, "cut"})
    if unknown:
        return f"has an 'answer' with the unknown key(s) {', '.join(map(repr, unknown))}"
    if "response" in answer and not isinstance(answer["response"], str):
        return "has an 'answer' whose 'response' is not a string"
    cut = answer.get("cut", [])
    if not isinstance(cut, list) or not all(c in ANSWER_FIELDS for c in cut):
        return f"has an 'answer' whose 'cut' is not a list of {', '.join(ANSWER_FIELDS)}"
    return None


def rescore_problem(answer: Any, error: Any = None, metadata: Any = None) -> str | None:
    """Why a row cannot be scored again from its kept ``answer`` (``None``: it can).

    A row whose System failed (``error.where`` is ``system``...) keeps its error and
    needs no answer; any other row needs one, whole."""
    if isinstance(error, Mapping) and str(error.get("where", "")).startswith("system"):
        return None
    if isinstance(metadata, Mapping) and "conversation_id" in metadata:
        return "a memory question (its conversation is not kept)"
    if answer is None:
        return "its answer was not kept"
    cut = answer.get("cut") or []
    if cut:
        return f"its answer's {', '.join(cut)} was cut (longer than {ANSWER_CAP:,} characters, a secret, or not JSON)"
    return None


def processed_from(
    original: Mapping[str, Any], answer: Mapping[str, Any], metadata: Mapping[str, Any]
) -> dict[str, Any]:
    """The processed example the evaluators saw, rebuilt from the original example
    and the kept answer: ``{**original, **answer}``, with the System's
    ``api_usage`` when the row kept its counts (``max-tokens`` reads it)."""
    processed = {**original, **{k: v for k, v in answer.items() if k in ANSWER_FIELDS}}
    usage = {
        k: metadata[k]
        for k in ("prompt_tokens", "completion_tokens")
        if isinstance(metadata.get(k), int) and not isinstance(metadata.get(k), bool)
    }
    if usage:
        processed["api_usage"] = usage
    return processed
