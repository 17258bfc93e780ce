"""Latency: mean, median, p95 and p99 of the System's per-example time."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .stats import mean, percentile

if TYPE_CHECKING:
    from ..results import EvalRow

__all__ = ["Latency"]


@dataclass
class Latency:
    """Seconds per example: ``latency_mean``, ``latency_median``, ``latency_p95``,
    ``latency_p99``.

    Computed over the rows that did not error (a crash's time says nothing about the
    System's speed); all four are ``nan`` when there is no such row.

    Differences from upstream: percentiles use linear interpolation (numpy's default;
    upstream indexed ``sorted[int(n * p)]``, so p95 was the maximum for n <= 20),
    errored rows are left out, and no rows gives ``nan`` instead of 0.0.
    """

    name = "latency"

    def compute(self, rows: list[EvalRow]) -> dict[str, float]:
        """:param rows: the rows of one system."""
        values = sorted(float(r.latency) for r in rows if r.error is None)
        if not values:
            return dict.fromkeys(
                ("latency_mean", "latency_median", "latency_p95", "latency_p99"),
                math.nan,
            )
        return {
            "latency_mean": mean(values),
            "latency_median": percentile(values, 0.5),
            "latency_p95": percentile(values, 0.95),
            "latency_p99": percentile(values, 0.99),
        }
