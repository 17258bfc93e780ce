"""Quality and cost gates: thresholds on a suite's summary → verdicts. Pure.

A gate compares one summary metric with a limit. A value that is ``nan`` (no example
was scored) breaches every gate on it: an empty measurement never passes a check.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Iterable, Mapping

from .errors import ConfigError

__all__ = ["Gate", "GateResult", "GATE_KINDS", "gates_from_limits", "check_gates"]

#: limit name → (summary metric, comparison). ``>=``: the value must be at least the
#: limit; ``<=``: at most.
GATE_KINDS: dict[str, tuple[str, str]] = {
    "min_pass_rate": ("pass_rate", ">="),
    "min_mean_score": ("mean_score", ">="),
    "max_cost_of_pass": ("cost_of_pass", "<="),
    "max_error_rate": ("error_rate", "<="),
    "max_cost_usd": ("total_cost_usd", "<="),
    "max_cost_of_pass_usd": ("cost_of_pass_usd", "<="),
    "max_llm_tokens_per_pass": ("llm_tokens_per_pass", "<="),
}


@dataclass(frozen=True)
class Gate:
    """One check: ``metric op limit``; ``name`` is the limit's name (``min_pass_rate``)."""

    name: str
    metric: str
    op: str
    limit: float

    def describe(self) -> str:
        return f"{self.metric} {self.op} {_fmt(self.limit)}"


@dataclass(frozen=True)
class GateResult:
    """A gate applied to one suite.

    ``enforced`` is ``False`` for a gate shown but not applied: one that depends on a
    judge that agrees too little with people's labels (``--ctxbench-min-judge-kappa``);
    ``not_enforced`` says why. A gate not enforced is never a breach.
    """

    gate: Gate
    suite: str
    value: float
    passed: bool
    enforced: bool = True
    not_enforced: str | None = None

    @property
    def breached(self) -> bool:
        """Failed and enforced: what fails a run."""
        return not self.passed and self.enforced

    @property
    def reason(self) -> str:
        if math.isnan(self.value):
            if self.gate.metric.endswith("_usd"):
                why = "no LLM call was measured, or a model has no --ctxbench-price"
            elif self.gate.metric.startswith("llm_"):
                why = (
                    "no LLM call was measured: the System calls through neither"
                    " http_client() nor --ctxbench-proxy"
                )
            else:
                why = "no example was scored"
            return f"{self.gate.metric} could not be measured ({why})"
        verb = "meets" if self.passed else "breaches"
        return (
            f"{self.gate.metric} = {_fmt(self.value)} {verb} the limit"
            f" {self.gate.op} {_fmt(self.gate.limit)}"
        )

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "suite": self.suite,
            "gate": self.gate.name,
            "metric": self.gate.metric,
            "op": self.gate.op,
            "limit": self.gate.limit,
            "value": self.value,
            "passed": self.passed,
        }
        if not self.enforced:
            out["enforced"] = False
            out["not_enforced"] = self.not_enforced or "not enforced"
        return out


def _fmt(x: float) -> str:
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    if math.isnan(x):
        return "nan"
    return f"{x:.4g}" if abs(x) < 1e4 else f"{x:,.0f}"


def gates_from_limits(limits: Mapping[str, float | None]) -> list[Gate]:
    """Build gates from ``{"min_pass_rate": 0.8, "max_cost_of_pass": None, ...}``.

    ``None`` values are skipped; unknown names raise :class:`ConfigError`.
    """
    gates = []
    for name, limit in limits.items():
        if limit is None:
            continue
        if name not in GATE_KINDS:
            raise ConfigError(
                f"unknown gate {name!r}; known gates: {', '.join(sorted(GATE_KINDS))}."
            )
        metric, op = GATE_KINDS[name]
        gates.append(Gate(name, metric, op, float(limit)))
    return gates


def check_gates(
    suite: str, summary: Mapping[str, float], gates: Iterable[Gate]
) -> list[GateResult]:
    """Apply each gate to one suite's summary (a missing metric counts as nan)."""
    results = []
    for g in gates:
        value = float(summary.get(g.metric, math.nan))
        if math.isnan(value):
            passed = False
        elif g.op == ">=":
            passed = value >= g.limit
        else:
            passed = value <= g.limit
        results.append(GateResult(g, suite, value, passed))
    return results
