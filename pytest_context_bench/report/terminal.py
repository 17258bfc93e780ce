"""The terminal section: summary table(s) and gate verdicts, as plain lines.

Returns ``(text, markup)`` pairs so the plugin only writes them (green/red/yellow
markup for pytest's TerminalWriter); a script can print the texts.
"""

from __future__ import annotations

import math
from typing import Any

from tabulate import tabulate

from .run import RunReport

__all__ = ["render_lines", "fmt_value"]

# (summary key, column header, kind)
_COLUMNS: tuple[tuple[str, str, str], ...] = (
    ("num_examples", "n", "int"),
    ("mean_score", "mean score", "score"),
    ("pass_rate", "pass rate", "score"),
    ("error_rate", "errors", "score"),
    ("compression_ratio", "compression", "score"),
    ("mean_input_tokens", "in tok", "tokens"),
    ("mean_output_tokens", "out tok", "tokens"),
    ("cost_of_pass", "cost/pass", "tokens"),
    ("latency_mean", "lat mean", "seconds"),
    ("latency_median", "lat p50", "seconds"),
    ("latency_p95", "lat p95", "seconds"),
    ("latency_p99", "lat p99", "seconds"),
    ("pareto_rank", "pareto", "int"),
)


def fmt_value(value: float | None, kind: str = "score") -> str:
    """Format a summary value for the table: ``inf`` stays ``inf``, nan is ``n/a``."""
    if value is None:
        return ""
    if math.isnan(value):
        return "n/a"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    if kind == "int":
        return f"{value:.0f}"
    if kind == "tokens":
        return f"{value:,.1f}"
    if kind == "seconds":
        return f"{value:.3f}s" if value >= 0.001 else f"{value * 1e6:.0f}µs"
    return f"{value:.4f}"


#: How many flaky example ids the terminal names per suite (the JSON has them all).
_FLAKY_SHOWN = 10


def render_lines(
    report: RunReport, *, gate_enforced: bool = True, why_not: str = "--ctxbench-no-gate"
) -> list[tuple[str, dict[str, Any]]]:
    lines: list[tuple[str, dict[str, Any]]] = []
    if not report.summary:
        return [("no example was scored", {"yellow": True})]
    labels = list(report.summary)
    present = [c for c in _COLUMNS if any(c[0] in report.summary[s] for s in labels)]
    def cell(label: str, key: str, kind: str) -> str:
        text = fmt_value(report.summary[label].get(key), kind)
        ci = report.intervals.get(label, {}).get(key)
        if ci and not any(math.isnan(x) for x in ci):
            text += f" [{ci[0]:.2f}, {ci[1]:.2f}]"
        return text

    table = [[label] + [cell(label, key, kind) for key, _, kind in present] for label in labels]
    headers = ["suite"] + [
        f"{h} [95% CI]" if key in ("mean_score", "pass_rate") else h for key, h, _ in present
    ]
    for text in tabulate(table, headers=headers, tablefmt="simple", disable_numparse=True).splitlines():
        lines.append((text, {}))

    ds_keys = sorted({k for s in labels for k in report.summary[s] if k.startswith("dataset:")})
    if ds_keys:
        lines.append(("", {}))
        lines.append(("mean score per dataset:", {"bold": True}))
        ds_table = [
            [label] + [fmt_value(report.summary[label].get(k)) if k in report.summary[label] else "" for k in ds_keys]
            for label in labels
        ]
        ds_headers = ["suite"] + [k.split(":", 1)[1] for k in ds_keys]
        for text in tabulate(ds_table, headers=ds_headers, tablefmt="simple", disable_numparse=True).splitlines():
            lines.append((text, {}))

    if report.repeats:
        lines.append(("", {}))
        lines.append(("repeated trials:", {"bold": True}))
        rep_table = []
        for label, rep in report.repeats.items():
            k = rep.get("k", 0)
            rep_table.append([
                label, str(k), str(rep.get("examples", 0)),
                fmt_value(rep.get("pass_at_1")), fmt_value(rep.get("pass_at_k")),
                fmt_value(rep.get("pass_hat_k")), str(len(rep.get("flaky", []))),
            ])
        rep_headers = ["suite", "k", "examples", "pass@1", "pass@k", "pass^k", "flaky"]
        for text in tabulate(rep_table, headers=rep_headers, tablefmt="simple",
                             disable_numparse=True).splitlines():
            lines.append((text, {}))
        for label, rep in report.repeats.items():
            flaky = rep.get("flaky", [])
            if flaky:
                shown = ", ".join(flaky[:_FLAKY_SHOWN])
                more = f" and {len(flaky) - _FLAKY_SHOWN} more" if len(flaky) > _FLAKY_SHOWN else ""
                lines.append((f"flaky ({label}): {shown}{more}", {"yellow": True}))

    rules: dict[tuple[str, float], list[str]] = {}
    for suite in report.suites:
        rules.setdefault((suite["score_field"] or "", suite["threshold"]), []).append(suite["label"])
    lines.append(("", {}))
    for (field, threshold), suites in rules.items():
        what = f"score field {field}" if field else "each dataset's primary score"
        scope = "" if len(rules) == 1 else f" ({', '.join(suites)})"
        lines.append((f"pass{scope} = {what} >= {threshold:g}", {}))
    lines.append(("cost/pass = output tokens per passing example", {}))
    counts = report.status_counts
    if counts.get("below") or counts.get("error") or counts.get("unscored"):
        parts = [f"{counts[k]} {w}" for k, w in (("below", "below threshold"), ("error", "errored"), ("unscored", "not scored")) if counts.get(k)]
        lines.append(("examples: " + ", ".join(parts), {"yellow": True}))
    if report.lost:
        lines.append((f"{len(report.lost)} example(s) produced no row of their own (crashed or failed before scoring); each counts as an error:", {"red": True}))
        for nodeid in report.lost[:20]:
            lines.append((f"  {nodeid}", {"red": True}))
        if len(report.lost) > 20:
            lines.append((f"  ... and {len(report.lost) - 20} more", {"red": True}))

    if report.gates:
        lines.append(("", {}))
        suffix = "" if gate_enforced else f" (not enforced: {why_not})"
        lines.append((f"gates{suffix}:", {"bold": True}))
        for g in report.gates:
            verdict = "PASS" if g.passed else "FAIL"
            markup = {"green": True} if g.passed else ({"red": True} if gate_enforced else {"yellow": True})
            lines.append((f"  {verdict} {g.suite}: {g.gate.name}: {g.reason}", markup))
        breaches = report.breaches
        if breaches and gate_enforced:
            lines.append((f"{len(breaches)} gate(s) breached: the run fails", {"red": True, "bold": True}))
    return lines
