"""AssertionBreakdown: the named metrics and per-type pass rates of assertions.

Examples with an ``assert`` list (docs/assertions.md) give each row the scores of
their ``metric`` names and, in the ``assertions`` details, how many assertions of
each type passed. This metric adds to a suite's summary:

- ``metric:<name>``: the mean of the named score over the rows that have it (rows
  in error are left out: they count in the error rate and as failures of the
  primary score);
- ``assert_type:<type>``: the share of that type's assertions that passed, over
  every row (``not-contains`` is its own type);
- ``assert_examples``: how many rows were judged by assertions.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .scores import ASSERT_SCORE

if TYPE_CHECKING:
    from ..results import EvalRow

__all__ = ["AssertionBreakdown", "by_type_counts"]


def by_type_counts(metadata: Mapping[str, Any]) -> dict[str, tuple[int, int]]:
    """``type → (passed, total)`` read from a row's ``assertions`` details."""
    details = metadata.get("assertions")
    out: dict[str, tuple[int, int]] = {}
    if not isinstance(details, Mapping):
        return out
    counts = details.get("by_type")
    if not isinstance(counts, Mapping):
        return out
    for kind, text in counts.items():
        if isinstance(text, str):
            passed, _, total = text.partition("/")
            if passed.isdigit() and total.isdigit():
                out[str(kind)] = (int(passed), int(total))
    return out


@dataclass
class AssertionBreakdown:
    """Named assertion metrics and per-type pass rates (see the module docstring).

    :param metrics: the ``metric`` names to report (a dataset's
        ``assertion_metrics``); a name no row has is reported as NaN.
    """

    metrics: Iterable[str] = ()
    name = "assertion_breakdown"

    def compute(self, rows: list[EvalRow]) -> dict[str, float]:
        """:param rows: the rows of one system."""
        judged = [r for r in rows if r.error is None and ASSERT_SCORE in r.scores]
        out: dict[str, float] = {"assert_examples": float(len(judged))}
        for name in sorted(set(self.metrics) | {k for r in judged for k in r.scores if k in self._names(r)}):
            values = [r.scores[name] for r in judged if name in r.scores]
            out[f"metric:{name}"] = math.fsum(values) / len(values) if values else math.nan
        totals: dict[str, list[int]] = {}
        for r in judged:
            for kind, (passed, total) in by_type_counts(r.metadata).items():
                acc = totals.setdefault(kind, [0, 0])
                acc[0] += passed
                acc[1] += total
        for kind in sorted(totals):
            passed, total = totals[kind]
            out[f"assert_type:{kind}"] = passed / total
        return out

    @staticmethod
    def _names(row: EvalRow) -> set[str]:
        details = row.metadata.get("assertions")
        names = details.get("metrics") if isinstance(details, Mapping) else None
        return {str(n) for n in names} if isinstance(names, list) else set()
