"""EvalResult: what :func:`~pytest_context_bench.evaluate` and
:func:`~pytest_context_bench.evaluate_memory` return.

The rows, the summary the run's metrics computed from them, and what was run. It
stands above :mod:`~pytest_context_bench.metrics`, which it uses to recompute a
summary (:meth:`EvalResult.filter`); the rows it holds are
:class:`~pytest_context_bench.results.EvalRow`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from .metrics import summarize
from .results import EvalRow, float_map, json_safe
from .types import Metric

__all__ = ["EvalResult"]


@dataclass
class EvalResult:
    """The outcome of :func:`pytest_context_bench.evaluate`.

    :param rows: one :class:`EvalRow` per (system, example), in system then example
        order.
    :param summary: ``{system: {metric_key: value}}``.
    :param timing: ``{system: wall seconds}`` for the whole system run.
    :param config: what was run (system, evaluator and metric names, counts).
    """

    rows: list[EvalRow]
    summary: dict[str, dict[str, float]]
    timing: dict[str, float] = field(default_factory=dict)
    config: dict[str, Any] = field(default_factory=dict)
    metrics: list[Metric] = field(default_factory=list, repr=False, compare=False)

    def filter(self, **criteria: Any) -> EvalResult:
        """Rows whose attributes equal every given value, with the summary recomputed.

        ``result.filter(dataset="qa")`` gives the rows of one dataset and the metrics
        computed on those rows only (upstream kept the whole-run summary).
        """
        rows = [
            r
            for r in self.rows
            if all(getattr(r, key, None) == value for key, value in criteria.items())
        ]
        systems = list(dict.fromkeys(r.system for r in rows))
        summary = summarize(rows, self.metrics, systems)
        timing = {s: t for s, t in self.timing.items() if s in systems}
        return EvalResult(rows, summary, timing, dict(self.config), self.metrics)

    def to_dict(self) -> dict[str, Any]:
        """Plain builtins (floats may be non-finite; see :func:`json_safe`)."""
        return {
            "rows": [r.to_dict() for r in self.rows],
            "summary": {s: dict(m) for s, m in self.summary.items()},
            "timing": dict(self.timing),
            "config": dict(self.config),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> EvalResult:
        """Inverse of :meth:`to_dict` (metrics objects are not restored)."""
        return cls(
            rows=[EvalRow.from_dict(r) for r in data.get("rows", [])],
            summary={
                str(s): float_map(m, f"summary[{s!r}]")
                for s, m in data.get("summary", {}).items()
            },
            timing=float_map(data.get("timing", {}), "timing"),
            config=dict(data.get("config", {})),
        )

    def to_json(self, indent: int | None = 2) -> str:
        """Strict JSON: ``inf`` is written as the string ``"inf"``, never ``Infinity``."""
        return json.dumps(json_safe(self.to_dict()), indent=indent, allow_nan=False)

    def to_dataframe(self) -> Any:
        """One flat record per row (needs pandas, imported lazily)."""
        try:
            import pandas as pd
        except ImportError as exc:  # pragma: no cover - depends on the environment
            raise ImportError(
                "EvalResult.to_dataframe() needs pandas: pip install pandas"
            ) from exc
        records: list[dict[str, Any]] = []
        for r in self.rows:
            rec: dict[str, Any] = {
                "system": r.system,
                "example_id": r.example_id,
                "dataset": r.dataset,
                "input_tokens": r.input_tokens,
                "output_tokens": r.output_tokens,
                "latency": r.latency,
                "error": None if r.error is None else r.error.get("type"),
            }
            rec.update({f"score.{k}": v for k, v in r.scores.items()})
            records.append(rec)
        return pd.DataFrame.from_records(records)
