"""Strict JSON: what every reader of a file (datasets, baselines, reports) accepts.

Python's ``json`` module reads more than JSON (``NaN``, ``Infinity``, ``1e999`` as
infinity, lone UTF-16 surrogates from ``\\ud800`` escapes) and can fail with errors
that are not about the text (``RecursionError`` on deep nesting, ``ValueError`` for
an integer of more than 4,300 digits). :func:`strict_loads` turns every one of these
into a :class:`JSONValueError` with a one-line reason; :func:`value_problem` checks an
already decoded value (a Parquet row, an example) the same way.
"""

from __future__ import annotations

import json
import math
import re
import sys
from typing import Any, Final

__all__ = [
    "MAX_DEPTH",
    "JSONValueError",
    "js_number",
    "strict_decoder",
    "strict_loads",
    "value_problem",
]

#: The deepest nesting of lists and objects accepted (a value at the top is depth 1).
MAX_DEPTH: Final = 100


class JSONValueError(ValueError):
    """Valid-looking text whose value is not JSON we accept; ``str()`` is the reason."""


def _reject_constant(name: str) -> Any:
    raise JSONValueError(
        f"it holds {name}, which is not JSON (write a number, or null)"
    )


#: A decoder that refuses NaN, Infinity and -Infinity (``raw_decode`` for walkers).
strict_decoder: Final = json.JSONDecoder(parse_constant=_reject_constant)

# A \uD800-\uDFFF escape: the only way a lone surrogate gets into decoded UTF-8 text.
_SURROGATE_ESCAPE: Final = re.compile(r"\\u[dD][89a-fA-F]")


def _digits_limit() -> int:
    get = getattr(sys, "get_int_max_str_digits", None)
    return int(get()) if get is not None else 4300


def decode_error(exc: BaseException) -> JSONValueError | None:
    """The :class:`JSONValueError` for an exception a decoder raised that is not a
    syntax error (``None`` for a ``json.JSONDecodeError``, which callers report
    with its line and column)."""
    if isinstance(exc, json.JSONDecodeError):
        return None
    if isinstance(exc, JSONValueError):
        return exc
    if isinstance(exc, RecursionError):
        return JSONValueError(
            f"it is nested too deeply to read (lists or objects more than {MAX_DEPTH}"
            " levels deep)"
        )
    if isinstance(exc, ValueError) and "digits" in str(exc):
        return JSONValueError(
            f"it holds an integer of more than {_digits_limit()} digits (write it as"
            " a string)"
        )
    return JSONValueError(f"it cannot be read ({exc})")


def strict_loads(text: str) -> Any:
    """Decode ``text``; raise ``json.JSONDecodeError`` for bad syntax and
    :class:`JSONValueError` for everything else :mod:`json` would accept or choke on."""
    try:
        value = strict_decoder.decode(text)
    except json.JSONDecodeError:
        raise
    except (ValueError, RecursionError) as exc:
        raise decode_error(exc) from None  # type: ignore[misc]
    # Most text holds no \u escape at all: the substring test is much cheaper.
    strings = "\\u" in text and _SURROGATE_ESCAPE.search(text) is not None
    if type(value) is dict and not strings and _flat(value):
        return value  # the common example: a flat object of strings and numbers
    problem = value_problem(value, strings=strings)
    if problem is not None:
        raise JSONValueError(problem)
    return value


def _flat(value: dict[Any, Any]) -> bool:
    """True when no value of ``value`` is a container or a float (nothing to check
    but its strings)."""
    for child in value.values():
        kind = type(child)
        if kind is dict or kind is list or kind is float:
            return False
    return True


def _where(path: tuple[Any, ...]) -> str:
    if not path:
        return "it"
    return "field " + "".join(
        f"[{p}]" if isinstance(p, int) else (repr(p) if i == 0 else f"[{p!r}]")
        for i, p in enumerate(path)
    )


def value_problem(value: Any, *, strings: bool = True) -> str | None:
    """Why ``value`` (decoded JSON, or a row made of builtin values) is not JSON we
    accept: nesting deeper than :data:`MAX_DEPTH`, a float that is NaN or infinite,
    (``strings``) a string or key holding a lone surrogate. ``None`` when it is fine.

    Iterative: any depth is walked without recursion."""
    stack: list[tuple[Any, int, tuple[Any, ...]]] = [(value, 1, ())]
    while stack:
        item, depth, path = stack.pop()
        kind = type(item)
        if kind is dict or kind is list:
            if depth > MAX_DEPTH:
                return (
                    f"{_where(path[:1])} is nested more than {MAX_DEPTH} levels deep"
                    " (lists or objects inside each other)"
                )
            if kind is dict:
                for key, child in item.items():
                    if strings and isinstance(key, str) and _lone_surrogate(key):
                        return (
                            f"the key {key!r} holds a lone UTF-16 surrogate (not text)"
                        )
                    if type(child) in (dict, list, float) or (
                        strings and type(child) is str
                    ):
                        stack.append(
                            (child, depth + 1, path + (key,) if len(path) < 3 else path)
                        )
            else:
                for i, child in enumerate(item):
                    if type(child) in (dict, list, float) or (
                        strings and type(child) is str
                    ):
                        stack.append(
                            (child, depth + 1, path + (i,) if len(path) < 3 else path)
                        )
        elif kind is float:
            if not math.isfinite(item):
                return (
                    f"{_where(path)} is {item!r}, which is not JSON (NaN and infinite"
                    " numbers are refused; write a finite number, or null)"
                )
        elif kind is str and strings and _lone_surrogate(item):
            return f"{_where(path)} holds a lone UTF-16 surrogate (a \\ud800-\\udfff escape that is not text)"
    return None


def _lone_surrogate(text: str) -> bool:
    if text.isascii():
        return False
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def js_number(value: float) -> str:
    """A number as JavaScript's ``String(value)`` prints it (``1.0`` -> ``1``,
    ``1e21`` -> ``1e+21``): how promptfoo writes numbers in its texts."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if float(value).is_integer() and abs(value) < 1e21:
        return str(int(value))
    return re.sub(r"e([+-])0*(\d)", r"e\1\2", repr(float(value)))
