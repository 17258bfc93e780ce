"""Tool calls as answers: the shapes that travel between a dataset, an endpoint and a row.

One contract (docs/llm.md, "Tool calls"): a processed example may carry
``tool_calls`` in OpenAI's shape::

    [{"id": "call_1", "type": "function",
      "function": {"name": "get_weather", "arguments": "{\\"city\\": \\"Paris\\"}"}}]

(``arguments`` is the model's JSON *text*, kept verbatim even when it is not JSON),
``response`` keeps any text the model sent with them (possibly ``""``).

- :func:`openai_tools`: an example's ``tools`` as the request's ``tools``: OpenAI's
  ``{"type": "function", "function": {...}}`` kept, a bare function document
  (BFCL's, APIGen's ``{name, description, parameters}``) wrapped, BFCL's ``"dict"``
  type read as JSON Schema's ``"object"``.
- :func:`tools_problem` / :func:`tool_choice_problem`: why a dataset's ``tools`` or
  ``tool_choice`` cannot be sent (exit 4 naming the line).
- :func:`tool_calls_of`: the calls of a reply's message (OpenAI ``tool_calls``,
  the legacy ``function_call``, Anthropic ``tool_use`` blocks), normalised.
- :func:`show_calls`: ``get_weather({"city": "Paris"})``, one line, capped, for the
  reports (each view escapes it as it escapes a response).
"""

from __future__ import annotations

import json
from typing import Any

__all__ = [
    "MAX_SHOWN_CALLS",
    "openai_tools",
    "show_calls",
    "tool_calls_of",
    "tool_choice_problem",
    "tools_problem",
]

#: calls named at most by :func:`show_calls` (the rest: "... and N more").
MAX_SHOWN_CALLS = 20
#: characters of one call's arguments shown at most by :func:`show_calls`.
ARGS_SHOWN = 200


def _function_doc(tool: Any) -> dict[str, Any] | None:
    """The function document of one tool (OpenAI's wrapped or a bare one)."""
    if not isinstance(tool, dict):
        return None
    if tool.get("type") == "function" and "function" in tool:
        inner = tool.get("function")
        return inner if isinstance(inner, dict) else None
    if "type" in tool and tool.get("type") != "function":
        return None
    return tool


def tools_problem(tools: Any) -> str | None:
    """Why ``tools`` is not a list of function schemas, or ``None`` when it is.

    Each item is OpenAI's ``{"type": "function", "function": {"name": ...,
    "parameters": {...}}}`` or a bare function document ``{"name", "description",
    "parameters"}``; the name a non-empty string, ``parameters`` (when given) an
    object.
    """
    example = '[{"type": "function", "function": {"name": "get_weather", "parameters": {...}}}]'
    if not isinstance(tools, list):
        return f"field 'tools' must be a list of function schemas, e.g. {example}; it is {_kind(tools)}"
    for number, tool in enumerate(tools, 1):
        doc = _function_doc(tool)
        if doc is None:
            return (
                f"tool {number} of field 'tools' is {_kind(tool)}, not a function schema"
                f" ({{\"type\": \"function\", \"function\": {{...}}}} or"
                f" {{\"name\", \"description\", \"parameters\"}})"
            )
        name = doc.get("name")
        if not isinstance(name, str) or not name.strip():
            return f"tool {number} of field 'tools' has no function name (a non-empty string)"
        params = doc.get("parameters")
        if params is not None and not isinstance(params, dict):
            return (
                f"tool {number} ({name!r}) of field 'tools' has parameters that are"
                f" {_kind(params)}, not a JSON Schema object"
            )
    return None


def tool_choice_problem(choice: Any) -> str | None:
    """Why ``tool_choice`` is not one OpenAI accepts, or ``None``."""
    if choice in ("auto", "none", "required"):
        return None
    if isinstance(choice, dict):
        function = choice.get("function")
        if (
            choice.get("type") == "function"
            and isinstance(function, dict)
            and isinstance(function.get("name"), str)
        ):
            return None
    return (
        "field 'tool_choice' must be 'auto', 'none', 'required' or"
        ' {"type": "function", "function": {"name": ...}};'
        f" it is {_kind(choice)}"
    )


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, str):
        return f"a string ({value[:40]!r})"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def _schema(value: Any) -> Any:
    """A parameters schema with BFCL's Python-ish type names read as JSON Schema's
    (``dict`` → ``object``, ``float`` → ``number``, ``tuple`` → ``array``...)."""
    if isinstance(value, list):
        return [_schema(v) for v in value]
    if not isinstance(value, dict):
        return value
    out = {k: _schema(v) for k, v in value.items()}
    kind = out.get("type")
    if kind == "any":  # any JSON value: no type constraint
        del out["type"]
    elif isinstance(kind, str) and kind in _TYPES:
        out["type"] = _TYPES[kind]
    return out


_TYPES = {
    "dict": "object",
    "float": "number",
    "tuple": "array",
    "list": "array",
    "int": "integer",
    "str": "string",
    "bool": "boolean",
}


def openai_tools(tools: list[Any]) -> list[dict[str, Any]]:
    """``tools`` as a chat completion request's ``tools`` (checked by
    :func:`tools_problem` first): OpenAI's items kept, bare function documents
    wrapped as ``{"type": "function", "function": doc}``, BFCL's type names in
    ``parameters`` read as JSON Schema's; a bare ``parameters`` that is a map of
    argument name to schema (APIGen's) becomes ``{"type": "object", "properties"}``."""
    out: list[dict[str, Any]] = []
    for tool in tools:
        doc = _function_doc(tool)
        if doc is None:  # tools_problem said so; send it untouched
            out.append(tool)
            continue
        wrapped = isinstance(tool, dict) and tool.get("type") == "function"
        params = doc.get("parameters")
        if isinstance(params, dict) and not wrapped:
            if "type" not in params and "properties" not in params and params and all(
                isinstance(v, dict) for v in params.values()
            ):
                params = {"type": "object", "properties": params}
            doc = {**doc, "parameters": _schema(params)}
        out.append(tool if wrapped else {"type": "function", "function": doc})
    return out


def _arguments_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        return str(value)


def _openai_call(call: Any, number: int) -> dict[str, Any]:
    call = call if isinstance(call, dict) else {}
    function = call.get("function")
    function = function if isinstance(function, dict) else {}
    ident = call.get("id")
    name = function.get("name")
    return {
        "id": ident if isinstance(ident, str) and ident else f"call_{number}",
        "type": "function",
        "function": {
            "name": name if isinstance(name, str) else _arguments_text(name),
            "arguments": _arguments_text(function.get("arguments")),
        },
    }


def tool_calls_of(message: Any) -> list[dict[str, Any]]:
    """The tool calls of a reply's message, in OpenAI's shape (``[]``: none).

    Reads OpenAI's ``tool_calls``, the legacy ``function_call`` (one call) and
    Anthropic's content blocks of type ``tool_use`` (``id``, ``name``, ``input``:
    ``input`` becomes the ``arguments`` JSON text). A call's id, when missing, is
    ``call_<n>``; ``arguments`` are kept as the model sent them, JSON or not.
    """
    if not isinstance(message, dict):
        return []
    calls = message.get("tool_calls")
    if isinstance(calls, list) and calls:
        return [_openai_call(c, n) for n, c in enumerate(calls)]
    function = message.get("function_call")
    if isinstance(function, dict):
        return [_openai_call({"function": function}, 0)]
    content = message.get("content")
    if isinstance(content, list):
        return [
            _openai_call(
                {
                    "id": block.get("id"),
                    "function": {"name": block.get("name"), "arguments": block.get("input")},
                },
                n,
            )
            for n, block in enumerate(
                b for b in content if isinstance(b, dict) and b.get("type") == "tool_use"
            )
        ]
    return []


def _one(call: Any) -> str:
    function = call.get("function") if isinstance(call, dict) else None
    if not isinstance(function, dict):
        function = call if isinstance(call, dict) else {}
    name = function.get("name")
    name = name if isinstance(name, str) else "?"
    raw = function.get("arguments")
    text = _arguments_text(raw)
    if isinstance(raw, str):
        try:  # one line, compact, whatever whitespace the model used
            text = json.dumps(json.loads(raw), ensure_ascii=False)
        except (ValueError, RecursionError):
            text = raw
    text = " ".join(text.split())
    if len(text) > ARGS_SHOWN:
        text = text[: ARGS_SHOWN - 1] + "…"
    return f"{name[:100]}({text})"


def show_calls(calls: Any, limit: int = MAX_SHOWN_CALLS) -> str:
    """``get_weather({"city": "Paris"}); get_time({})``: the calls on one line,
    each call's arguments cut to :data:`ARGS_SHOWN` characters, at most ``limit``
    calls (then ``"… and N more calls"``). Not escaped: each view escapes it."""
    if not isinstance(calls, list) or not calls:
        return ""
    shown = "; ".join(_one(c) for c in calls[:limit])
    if len(calls) > limit:
        shown += f"; … and {len(calls) - limit:,} more calls"
    return shown
