"""What tells an evaluator from another (:func:`evaluator_identity`): recorded with
each suite, so that a baseline scored by other evaluators is scored again before it
is compared (:mod:`pytest_context_bench.rescore`)."""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["describe_evaluators", "evaluator_identity"]


def _simple(value: Any, depth: int = 0) -> Any:
    """A public attribute's value as JSON, when it is plain data (a compiled
    regex as its pattern); ``None`` for anything else (a client, a lock)."""
    if depth > 5:
        return None
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, re.Pattern):
        return {"pattern": value.pattern, "flags": value.flags}
    if isinstance(value, (list, tuple, frozenset, set)):
        items = [_simple(v, depth + 1) for v in value]
        return sorted(items, key=repr) if isinstance(value, (set, frozenset)) else items
    if isinstance(value, Mapping):
        return {str(k): _simple(v, depth + 1) for k, v in value.items()}
    return None


#: Attributes that say where or how a judge is reached, not how it judges.
_NOT_IDENTITY = frozenset(
    {"client", "api_key", "base_url", "timeout", "max_retries", "sandbox", "base_dir"}
)


def evaluator_identity(ev: Any) -> dict[str, str]:
    """What tells an evaluator from another: its ``name``, its class
    (``module:QualName``) and a digest of its public attributes that are plain
    data (a rubric, a regex, a mode, a model; not a client, an URL or a timeout).
    Two evaluators with the same identity score an answer the same way, unless the
    code of their class changed: an evaluator whose logic changes says so with an
    attribute (``version = 2``), docs/gating.md."""
    cls = type(ev)
    state = {
        k: _simple(v)
        for k, v in sorted(vars(ev).items() if hasattr(ev, "__dict__") else ())
        if not k.startswith("_") and k not in _NOT_IDENTITY and _simple(v) is not None
    }
    for k in ("version",):
        v = getattr(ev, k, None)
        if v is not None and k not in state and _simple(v) is not None:
            state[k] = _simple(v)
    digest = hashlib.sha256(
        json.dumps(state, sort_keys=True, default=str).encode("utf-8")
    ).hexdigest()[:16]
    return {
        "name": str(getattr(ev, "name", cls.__name__)),
        "class": f"{cls.__module__}:{cls.__qualname__}",
        "config": digest,
    }


def describe_evaluators(evaluators: Iterable[Any]) -> list[dict[str, str]]:
    """:func:`evaluator_identity` of each, in order."""
    return [evaluator_identity(ev) for ev in evaluators]
