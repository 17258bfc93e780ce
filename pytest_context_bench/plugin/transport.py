"""The xdist boundary: rows ride on the test report as ``report.ctxbench``.

pytest-xdist serialises each report's ``__dict__`` with execnet, which dispatches on
the *exact* type of every value: an enum, a ``Path``, a ``numpy.float64`` or a str
subclass anywhere inside crashes the whole run with ``DumpError`` under ``-n`` while
passing in-process (pytest-xdist#1157). So everything we attach goes through
:func:`ensure_wire_safe` first, and in-process runs take the very same path.

Between an xdist worker and the controller the payload travels as one JSON string
(:func:`pack` / :func:`unpack`, from the report (de)serialization hooks): execnet's
serializer walks every nested value in Python on both sides, about 90 µs each way for
one row, where ``json`` takes under 15 µs. The values are exact builtins already, so
the string gives back the very same payload (floats by their ``repr``, ``NaN``
included, keys as strings, lists as lists).
"""

from __future__ import annotations

import json
import math
from typing import Any

__all__ = ["WIRE_VERSION", "REPORT_ATTR", "ensure_wire_safe", "read_payload", "pack", "unpack"]

WIRE_VERSION = 1
REPORT_ATTR = "ctxbench"
#: what starts a payload packed as JSON for the trip from a worker
PACKED = "ctxbench-json:"
#: the exact builtin scalars, which pass as they are
_EXACT = frozenset((bool, int, float, str))


def ensure_wire_safe(value: Any, _depth: int = 0) -> Any:
    """Return a copy of ``value`` made only of exact builtins.

    bool/int/float/str/None pass (subclasses are converted to the base type); dicts
    get str keys; tuples and sets become lists; anything else becomes its ``repr``.
    """
    if _depth > 50:
        return repr(value)
    kind = type(value)
    if value is None or kind in _EXACT:
        return value
    if kind is dict and _depth < 50:
        # Every row's metadata and answer pass here: their scalar values and str
        # keys are taken as they are, without a call each (a scalar deeper than 50
        # levels is a repr, as below).
        return {
            (k if type(k) is str else str(k)): (
                v if v is None or type(v) in _EXACT else ensure_wire_safe(v, _depth + 1)
            )
            for k, v in value.items()
        }
    if kind is list and _depth < 50:
        return [
            v if v is None or type(v) in _EXACT else ensure_wire_safe(v, _depth + 1)
            for v in value
        ]
    if isinstance(value, bool):
        return bool(value)
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    if isinstance(value, str):
        return str(value)
    if hasattr(value, "item") and callable(value.item):  # numpy scalars
        try:
            return ensure_wire_safe(value.item(), _depth + 1)
        except Exception:
            return repr(value)
    if isinstance(value, dict):
        return {str(k): ensure_wire_safe(v, _depth + 1) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        items = sorted(value, key=repr) if isinstance(value, (set, frozenset)) else value
        return [ensure_wire_safe(v, _depth + 1) for v in items]
    if hasattr(value, "__fspath__"):
        return str(value.__fspath__())
    return repr(value)


def read_payload(report: Any) -> dict[str, Any] | None:
    """The ctxbench payload of a report, or None (other tests, other versions)."""
    payload = getattr(report, REPORT_ATTR, None)
    if not isinstance(payload, dict) or payload.get("v") != WIRE_VERSION:
        return None
    return payload


def pack(data: dict[str, Any]) -> None:
    """In a serialized report (``data``, a worker's), the payload as one JSON string."""
    payload = data.get(REPORT_ATTR)
    if isinstance(payload, dict):
        data[REPORT_ATTR] = PACKED + json.dumps(payload, separators=(",", ":"))


def unpack(report: Any) -> None:
    """The payload :func:`pack` sent, a dict again on the report rebuilt from it."""
    packed = getattr(report, REPORT_ATTR, None)
    if isinstance(packed, str) and packed.startswith(PACKED):
        try:
            setattr(report, REPORT_ATTR, json.loads(packed[len(PACKED):]))
        except ValueError:  # not ours after all: read_payload ignores a string
            pass


def finite_or_none(x: float) -> float | None:
    return x if math.isfinite(x) else None
