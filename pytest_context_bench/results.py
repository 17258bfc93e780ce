"""EvalRow: the only shape that crosses a process boundary or the disk.

``EvalRow.to_dict()`` / ``EvalRow.from_dict()`` give plain builtins (str, int, float,
bool, None, list, dict). Floats may be ``inf`` or ``nan`` in memory; when written as
JSON they become the strings ``"inf"``, ``"-inf"`` and ``"nan"`` (see
:func:`json_safe`), so every file we write is strict JSON that any parser reads, and
:func:`from_json_safe` turns them back.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Iterable

__all__ = [
    "EvalRow",
    "json_safe",
    "from_json_safe",
    "float_map",
    "rows_by_system",
    "ROW_FIELDS",
    "ROW_OPTIONAL",
    "is_token_count",
]

#: The keys of ``EvalRow.to_dict()``, in order.
ROW_FIELDS = (
    "system",
    "example_id",
    "dataset",
    "scores",
    "input_tokens",
    "output_tokens",
    "latency",
    "metadata",
    "error",
)

#: Keys of ``EvalRow.to_dict()`` present only when set: the row's LLM call records
#: and how many were left out (docs/reports.md, "Call records").
ROW_OPTIONAL = ("calls", "calls_omitted")

_NONFINITE = {"inf": math.inf, "-inf": -math.inf, "nan": math.nan}


def json_safe(value: Any) -> Any:
    """Return ``value`` with every non-finite float replaced by a string.

    ``inf`` → ``"inf"``, ``-inf`` → ``"-inf"``, ``nan`` → ``"nan"``. Containers are
    copied; tuples become lists. Used before ``json.dumps(..., allow_nan=False)``.
    """
    if isinstance(value, float):
        if math.isfinite(value):
            return value
        if math.isnan(value):
            return "nan"
        return "inf" if value > 0 else "-inf"
    if isinstance(value, dict):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    return value


def from_json_safe(value: Any) -> float:
    """Read back a float written by :func:`json_safe` (number or ``"inf"``...)."""
    if isinstance(value, str) and value in _NONFINITE:
        return _NONFINITE[value]
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"expected a number or 'inf'/'-inf'/'nan', got {value!r}")
    try:
        return float(value)
    except OverflowError:  # an integer of more than ~308 digits
        digits = len(str(abs(int(value))))
        raise ValueError(
            f"expected a number a float can hold, got an integer of {digits} digits"
        ) from None


def float_map(mapping: Any, what: str) -> dict[str, float]:
    """A JSON object of numbers (as :func:`json_safe` writes them) read back as
    floats; :class:`ValueError` naming ``what`` when it is not one."""
    if not isinstance(mapping, dict):
        raise ValueError(f"{what} must be an object, got {type(mapping).__name__}")
    # Exact floats and str keys (every row a worker sends) are taken as they are.
    return {
        k if type(k) is str else str(k): v if type(v) is float else from_json_safe(v)
        for k, v in mapping.items()
    }


@dataclass(slots=True)
class EvalRow:
    """One scored example of one system.

    :param system: the System's name.
    :param example_id: the example's id, unique within its dataset (always a str).
    :param scores: every evaluator's scores merged; empty when the example errored.
    :param input_tokens: tokens of the original example's prompt fields.
    :param output_tokens: tokens of the processed example's prompt fields, or the
        System's reported ``api_usage.prompt_tokens``.
    :param metadata: plain-builtin extras (completion tokens, the primary score
        field, ...).
    :param latency: seconds spent in the System, ``process`` call only.
    :param dataset: the dataset tag.
    :param error: ``None``, or ``{"type", "message", "where"}`` when the System or an
        evaluator raised.
    :param calls: the records of the LLM calls the System and the evaluators made
        for the example (``--ctxbench-transcripts``; plain builtins), else empty.
    :param calls_omitted: call records not kept (past the cap on records per row).
    """

    system: str
    example_id: str
    scores: dict[str, float]
    input_tokens: int
    output_tokens: int
    metadata: dict[str, Any] = field(default_factory=dict)
    latency: float = 0.0
    dataset: str = ""
    error: dict[str, str] | None = None
    calls: list[dict[str, Any]] = field(default_factory=list)
    calls_omitted: int = 0

    @property
    def ok(self) -> bool:
        """True when neither the System nor an evaluator raised."""
        return self.error is None

    def to_dict(self) -> dict[str, Any]:
        """Plain builtins, keys in :data:`ROW_FIELDS` order, then
        :data:`ROW_OPTIONAL` when set."""
        out = {
            "system": self.system,
            "example_id": self.example_id,
            "dataset": self.dataset,
            "scores": {k: float(v) for k, v in self.scores.items()},
            "input_tokens": int(self.input_tokens),
            "output_tokens": int(self.output_tokens),
            "latency": float(self.latency),
            "metadata": dict(self.metadata),
            "error": None if self.error is None else dict(self.error),
        }
        if self.calls:
            out["calls"] = [dict(c) for c in self.calls]
        if self.calls_omitted:
            out["calls_omitted"] = int(self.calls_omitted)
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> EvalRow:
        """Inverse of :meth:`to_dict`; also reads the JSON-safe encoding."""
        missing = [k for k in ("system", "example_id", "scores") if k not in data]
        if missing:
            raise ValueError(f"row is missing {', '.join(missing)}")
        error = data.get("error")
        if error is not None and not isinstance(error, dict):
            raise ValueError("row 'error' must be null or an object")
        metadata = data.get("metadata") or {}
        if not isinstance(metadata, dict):
            raise ValueError("row 'metadata' must be an object")
        calls = data.get("calls") or []
        if not isinstance(calls, list) or not all(isinstance(c, dict) for c in calls):
            raise ValueError("row 'calls' must be a list of objects")
        omitted = data.get("calls_omitted", 0)
        if isinstance(omitted, bool) or not isinstance(omitted, int) or omitted < 0:
            raise ValueError("row 'calls_omitted' must be an integer >= 0")
        return cls(
            system=str(data["system"]),
            example_id=str(data["example_id"]),
            scores=float_map(data["scores"], "row 'scores'"),
            input_tokens=int(data.get("input_tokens", 0)),
            output_tokens=int(data.get("output_tokens", 0)),
            metadata=dict(metadata),
            latency=from_json_safe(data.get("latency", 0.0)),
            dataset=str(data.get("dataset", "")),
            error=None if error is None else {str(k): str(v) for k, v in error.items()},
            calls=[dict(c) for c in calls],
            calls_omitted=omitted,
        )


def rows_by_system(rows: Iterable[EvalRow]) -> dict[str, list[EvalRow]]:
    """Group rows by system name, keeping first-seen order."""
    out: dict[str, list[EvalRow]] = {}
    for r in rows:
        out.setdefault(r.system, []).append(r)
    return out


#: Above this a float cannot hold every whole number: no token count is that large.
MAX_TOKENS = 2**53


def is_token_count(value: Any) -> bool:
    """True for a whole number in ``[0, 2**53]`` (an ``int``, or a ``float`` such as
    ``12.0``); False for NaN, infinities, negatives, fractions, strings, booleans.
    One rule for the token counts a System reports (``api_usage``) and those an
    LLM reply reports (``usage``)."""
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return False
    try:
        return 0 <= value <= MAX_TOKENS and value == int(value)
    except (OverflowError, ValueError):  # inf, nan
        return False
