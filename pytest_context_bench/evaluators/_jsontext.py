"""JSON found in a model's text, as promptfoo finds it (pure).

:func:`iter_json_objects` (the objects of a reply, brace counting, YAML's relaxed
syntax) and :func:`_strict_json` (``JSON.parse``): what ``contains-json``,
``is-json`` and the ``llm-rubric`` grading read a reply with. Kept apart from the
assertions so that the judges can read a grading without importing them.
"""

from __future__ import annotations

import json
import re
from typing import Any, Final, Iterator

from ..errors import ExampleDataError

__all__ = ["extract_json_values", "iter_json_objects"]


def _strict_json(text: str) -> Any:
    """``JSON.parse``: no NaN or Infinity; raises ValueError (not JSON) or
    :class:`ExampleDataError` (JSON nested deeper than Python's parser reads: neither
    a pass nor a fail can be given, so the row is an error that says why)."""

    def refuse(name: str) -> Any:
        raise ValueError(f"{name} is not JSON")

    try:
        return json.loads(text, parse_constant=refuse)
    except RecursionError:
        raise ExampleDataError(
            "the output nests JSON deeper than Python's parser reads (about 1,000"
            " levels); it cannot be checked"
        ) from None


#: Characters :func:`extract_json_values` may step over in all: an output of a
#: million ``{`` would otherwise cost 10^11 steps (promptfoo's scan restarts at
#: every brace); past it, the objects found so far are the answer.
_SCAN_BUDGET: Final = 2_000_000
#: The longest span, and the deepest nesting, read as YAML when it is not JSON.
_YAML_SPAN: Final = 20_000
_YAML_DEPTH: Final = 64


def extract_json_values(text: str) -> list[Any]:
    """Every object :func:`iter_json_objects` finds, in order."""
    return list(iter_json_objects(text))


def iter_json_objects(text: str) -> Iterator[Any]:
    """The JSON objects found in ``text``, in order, as promptfoo finds them: from
    each ``{``, braces are counted (inside strings too) up to the point where they
    balance, or the end of the text, where the missing ``}`` are added (a cut-off
    reply still counts); that span is read as YAML in JSON mode (so ``{a: 1}`` and
    ``// comments`` are accepted); the scan goes on after a span that held an
    object, else from the next ``{``. Spans are at most 100,000 characters."""
    n = len(text)
    i = 0
    budget = _SCAN_BUDGET
    while i < n and budget > 0:
        if text[i] != "{":
            i += 1
            continue
        opened, closed, j = 1, 0, i + 1
        limit = min(i + 100_000, n)
        resume = i + 1
        while j < limit and opened > closed:
            budget -= 1
            if text[j] == "{":
                opened += 1
            elif text[j] == "}":
                closed += 1
            j += 1
            if opened == closed or j == n or j == i + 100_000:
                budget -= j - i
                value = _lenient_object(text[i:j] + "}" * (opened - closed), opened - closed)
                if value is not None:
                    yield value
                    resume = j
                    break
                if opened == closed:
                    break
        i = resume


def _lenient_object(span: str, unclosed: int = 0) -> dict[str, Any] | list[Any] | None:
    """``span`` read as promptfoo reads it (JSON, else YAML with ``//`` comments),
    when it is an object; else ``None``."""
    try:
        value = _strict_json(span)
    except (ValueError, RecursionError):
        if len(span) > _YAML_SPAN or unclosed > _YAML_DEPTH or span.count("{") > 4 * _YAML_DEPTH:
            return None
        value = _yaml_json(_slash_comments(span))
    return value if isinstance(value, (dict, list)) else None


def _slash_comments(text: str) -> str:
    """``// comment`` → ``# comment`` outside quotes (a ``://`` stays)."""
    out = []
    for line in text.split("\n"):
        quote = ""
        for k, ch in enumerate(line):
            if quote:
                if ch == quote:
                    quote = ""
            elif ch in "\"'":
                quote = ch
            elif line.startswith("//", k) and not line[:k].endswith(":"):
                line = line[:k] + "#" + line[k + 2:]
                break
        out.append(line)
    return "\n".join(out)


_yaml_loader: Any = None


def _yaml_json(text: str) -> Any:
    """``text`` parsed as YAML 1.2's core schema (``yes`` stays a string), or
    ``None`` when it does not parse or PyYAML is not installed."""
    global _yaml_loader
    try:
        import yaml
    except ImportError:
        return None
    if _yaml_loader is None:
        class CoreLoader(yaml.SafeLoader):
            pass

        bool_tag = "tag:yaml.org,2002:bool"
        CoreLoader.yaml_implicit_resolvers = {
            key: [(tag, rx) for tag, rx in resolvers if tag != bool_tag]
            for key, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
        }
        CoreLoader.add_implicit_resolver(
            bool_tag, re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF")
        )
        _yaml_loader = CoreLoader
    try:
        return yaml.load(text, Loader=_yaml_loader)  # a SafeLoader: no object tags
    except Exception:
        return None
