"""Two JSON reports compared, suite by suite and example by example. Pure.

:func:`compare_reports` (the reports read by
:func:`~pytest_context_bench.report.json_report.load_report`) matches the suites present in both by
label and the examples by ``(dataset, example_id)`` and applies the statistics of the
baseline gate (:func:`pytest_context_bench.baseline.compare`): per suite and metric,
A, B, the paired difference with its interval and its p-value, and the examples that
flipped between pass and fail. Suites in only one report are named, not compared.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from ..results import EvalRow, from_json_safe
from .run import Record, RunReport

__all__ = ["METRICS", "ReportComparison", "compare_reports", "flag"]

#: What ``ctxbench compare`` compares, in order (``cost_of_pass_usd`` when both
#: runs priced their LLM calls).
METRICS = ("pass_rate", "mean_score", "cost_of_pass", "latency_mean", "cost_of_pass_usd")


def flag(metric: dict[str, Any]) -> str:
    """The verdict of one metric, as the terminal, the Markdown and the page show
    it: ``WORSE`` (significantly worse in B), ``slower`` (latency: shown, does not
    decide) or ``""``."""
    if not metric["worse"]:
        return ""
    return "slower" if metric["metric"] == "latency_mean" else "WORSE"


@dataclass
class ReportComparison:
    """B compared with A.

    :param metrics: one dict per (suite, metric): ``suite, metric, then, now, change,
        ci_low, ci_high, p_value, test, worse`` (``worse``: B is significantly worse).
    :param suites: per suite compared: ``suite, n_matched, only_a, only_b,
        flipped_to_fail, flipped_to_pass``.
    :param flipped: the flipped examples with both responses.
    :param only_a: suite labels only in A; ``only_b`` only in B.
    """

    a: str
    b: str
    confidence: float
    metrics: list[dict[str, Any]] = field(default_factory=list)
    suites: list[dict[str, Any]] = field(default_factory=list)
    flipped: list[dict[str, Any]] = field(default_factory=list)
    only_a: list[str] = field(default_factory=list)
    only_b: list[str] = field(default_factory=list)
    #: ``ctxbench compare --judge-url``: the pairwise judge's counts (each flipped
    #: entry then has ``pairwise``), else ``None``
    pairwise: dict[str, Any] | None = None

    @property
    def worse(self) -> list[dict[str, Any]]:
        """The metrics significantly worse in B, latency aside: latency depends on
        the machine and its load as much as on the System, so it is shown (as
        ``slower``) but does not decide."""
        return [m for m in self.metrics if m["worse"] and m["metric"] != "latency_mean"]

    def verdict_line(self) -> str:
        """``3 metrics significantly worse in B`` (or none), with the confidence."""
        n = len(self.worse)
        what = f"{n} metric{'s' if n != 1 else ''}" if n else "No metric"
        return f"{what} significantly worse in B (confidence {self.confidence * 100:g}%)"

    def diff(self) -> dict[str, Any]:
        """The comparison section of the HTML view (:func:`~.html.render_html`)."""
        notes = []
        if self.only_a or self.only_b:
            notes.append(self.scope_line())
        if self.pairwise and self.pairwise.get("summary"):
            notes.append(str(self.pairwise["summary"]))
        return {
            "base": self.a,
            "base_label": "A",
            "head_label": "B",
            "metrics": [{**m, "flag": flag(m)} for m in self.metrics],
            "flipped": self.flipped,
            "verdict": {"text": self.verdict_line(), "worse": bool(self.worse)},
            "notes": [f"A = {self.a}; B = {self.b}; the page below shows B."] + notes,
        }

    def scope_line(self) -> str:
        compared = len(self.suites)
        total = compared + len(self.only_a) + len(self.only_b)
        text = f"compared {compared} of {total} suite(s) (those in both reports)"
        if self.only_a:
            text += f"; only in A: {', '.join(self.only_a)}"
        if self.only_b:
            text += f"; only in B: {', '.join(self.only_b)}"
        return text


def _records(doc: dict[str, Any]) -> list[Record]:
    origins = {str(s["label"]): str(s.get("origin", "")) for s in doc.get("suites", [])}
    out = []
    for i, raw in enumerate(doc.get("rows", [])):
        io = (
            {"response": raw["response"], "reference": raw.get("reference", "")}
            if "response" in raw
            else None
        )
        out.append(
            Record(
                str(raw["suite"]),
                origins.get(str(raw["suite"]), ""),
                (i,),
                str(raw["status"]),
                EvalRow.from_dict(raw),
                io,
            )
        )
    return out


def _summary(doc: dict[str, Any]) -> dict[str, dict[str, float]]:
    return {
        str(s): {str(k): from_json_safe(v) for k, v in m.items()}
        for s, m in doc.get("summary", {}).items()
    }


def compare_reports(
    a: dict[str, Any],
    b: dict[str, Any],
    *,
    a_name: str = "A",
    b_name: str = "B",
    confidence: float = 0.95,
) -> ReportComparison:
    """Compare report ``b`` with report ``a`` (see the module docstring).

    :raises ConfigError: when the two reports have no suite in common.
    """
    from ..baseline import Baseline, compare

    a_labels = [str(s["label"]) for s in a.get("suites", [])]
    b_labels = [str(s["label"]) for s in b.get("suites", [])]
    common = [label for label in b_labels if label in a_labels]
    if not common:
        raise ConfigError(
            f"{a_name} and {b_name} have no suite in common (A: {', '.join(a_labels) or 'none'};"
            f" B: {', '.join(b_labels) or 'none'}); suites are matched by label, the System's"
            " name for a command-line run."
        )
    a_records = _records(a)
    base = Baseline(
        path=Path(a_name),
        plugin_version=str((a.get("plugin") or {}).get("version", "?")),
        git_commit=None,
        datasets={},
        systems=sorted({s.get("system", "") for s in a.get("suites", [])}),
        options={},
        summary=_summary(a),
        suites=list(a.get("suites", [])),
        records=a_records,
    )
    b_records = _records(b)
    current = RunReport(
        summary=_summary(b),
        suites=list(b.get("suites", [])),
        gates=[],
        records=b_records,
    )
    # Money is compared when both runs priced their calls (--ctxbench-price).
    priced = all(
        any(isinstance(r.row.metadata.get("cost_usd"), (int, float)) for r in recs)
        for recs in (a_records, b_records)
    )
    result = compare(
        base,
        current,
        {},
        confidence=confidence,
        extra_metrics=("cost_of_pass", "latency_mean")
        + (("cost_of_pass_usd",) if priced else ()),
    )
    out = ReportComparison(
        a_name,
        b_name,
        confidence,
        only_a=[x for x in a_labels if x not in b_labels],
        only_b=[x for x in b_labels if x not in a_labels],
    )
    alpha = 1 - confidence
    for s in result.suites:
        for m in s.metrics:
            r = m.result
            out.metrics.append(
                {
                    "suite": m.suite,
                    "metric": m.metric,
                    "then": m.then,
                    "now": m.now,
                    "change": r.diff,
                    "ci_low": r.ci_low,
                    "ci_high": r.ci_high,
                    "p_value": r.p_value,
                    "test": r.test,
                    "n": r.n,
                    "worse": bool(
                        not math.isnan(r.p_value)
                        and r.p_value <= alpha
                        and not math.isnan(r.diff)
                        and r.diff != 0
                    ),
                }
            )
        out.suites.append(
            {
                "suite": s.suite,
                "n_matched": s.n_matched,
                "only_a": list(s.missing),
                "only_b": list(s.new),
                "flipped_to_fail": list(s.flipped_to_fail),
                "flipped_to_pass": list(s.flipped_to_pass),
            }
        )
    index: dict[tuple[str, str, str], Record] = {}
    for side, recs in (("a", a_records), ("b", b_records)):
        for rec in recs:
            index.setdefault((side, rec.suite, rec.row.example_id), rec)
            index.setdefault(
                (side, rec.suite, f"{rec.row.dataset}/{rec.row.example_id}"), rec
            )
    for entry in out.suites:
        label = str(entry["suite"])
        for key, before, after in (
            ("flipped_to_fail", "pass", "fail"),
            ("flipped_to_pass", "fail", "pass"),
        ):
            for ident in entry[key]:
                ra, rb = index.get(("a", label, ident)), index.get(("b", label, ident))
                either = rb or ra
                out.flipped.append(
                    {
                        "suite": label,
                        "dataset": either.row.dataset if either else "",
                        "example_id": either.row.example_id if either else ident,
                        "before": before,
                        "after": after,
                        "score_before": _score(ra),
                        "score_after": _score(rb),
                        "response_before": (ra.io or {}).get("response")
                        if ra
                        else None,
                        "response_after": (rb.io or {}).get("response") if rb else None,
                        "reference": (either.io or {}).get("reference", "")
                        if either
                        else "",
                        # B's row in the page (it shows B), expanded by a link.
                        "row_index": rb.order[0] if rb else None,
                        **_explained("before", a, ra),
                        **_explained("after", b, rb),
                    }
                )
    return out


#: Metadata dicts that are not an evaluator's details.
_NOT_DETAILS = ("llm_usage", "judge_usage", "trials")


def _explained(side: str, doc: dict[str, Any], rec: Record | None) -> dict[str, Any]:
    """A flipped example's call records and evaluator details on one side (the
    rows' own, when the report kept them)."""
    raw = doc["rows"][rec.order[0]] if rec is not None else {}
    return {
        f"calls_{side}": list(raw.get("calls") or []),
        f"calls_omitted_{side}": int(raw.get("calls_omitted") or 0),
        f"details_{side}": {
            k: v
            for k, v in (raw.get("metadata") or {}).items()
            if isinstance(v, dict) and k not in _NOT_DETAILS
        },
    }


def _score(rec: Record | None) -> float | None:
    if rec is None:
        return None
    if rec.row.error is not None:
        return 0.0
    value = rec.row.scores.get(str(rec.row.metadata.get("score_field", "")))
    return None if value is None else float(value)
