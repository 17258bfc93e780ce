"""The xdist boundary: rows ride on the test report as ``report.ctxbench``.

pytest-xdist serialises each report's ``__dict__`` with execnet, which dispatches on
the *exact* type of every value: an enum, a ``Path``, a ``numpy.float64`` or a str
subclass anywhere inside crashes the whole run with ``DumpError`` under ``-n`` while
passing in-process (pytest-xdist#1157). So everything we attach goes through
:func:`ensure_wire_safe` first, and in-process runs take the very same path.
"""

from __future__ import annotations

import math
from typing import Any

__all__ = ["WIRE_VERSION", "REPORT_ATTR", "ensure_wire_safe", "read_payload"]

WIRE_VERSION = 1
REPORT_ATTR = "ctxbench"


def ensure_wire_safe(value: Any, _depth: int = 0) -> Any:
    """Return a copy of ``value`` made only of exact builtins.

    bool/int/float/str/None pass (subclasses are converted to the base type); dicts
    get str keys; tuples and sets become lists; anything else becomes its ``repr``.
    """
    if _depth > 50:
        return repr(value)
    if value is None or type(value) in (bool, int, float, str):
        return value
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


def finite_or_none(x: float) -> float | None:
    return x if math.isfinite(x) else None
