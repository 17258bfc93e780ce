"""The terminal section: summary table(s) and gate verdicts, as plain lines.

Returns ``(text, markup)`` pairs so the plugin only writes them (green/red/yellow
markup for pytest's TerminalWriter); a script can print the texts.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any


from .._text import inert
from .rows import below_text
from .run import RunReport

__all__ = [
    "render_lines",
    "fmt_value",
    "fit_table",
    "example_lines",
    "example_reason",
    "details_lines",
    "wrap_line",
    "summary_legend",
    "suite_aliases",
    "COLUMNS",
]

# (summary key, column header, kind): headers a newcomer can read without the docs.
COLUMNS: tuple[tuple[str, str, str], ...] = (
    ("num_examples", "examples", "int"),
    ("mean_score", "mean score", "score"),
    ("pass_rate", "pass rate", "score"),
    ("error_rate", "error rate", "score"),
    ("compression_ratio", "compression", "score"),
    ("mean_input_tokens", "text in", "tokens"),
    ("mean_output_tokens", "text out", "tokens"),
    ("cost_of_pass", "text per pass", "tokens"),
    ("llm_prompt_tokens", "LLM prompt", "tokens"),
    ("llm_completion_tokens", "LLM completion", "tokens"),
    ("llm_tokens_per_pass", "LLM per pass", "tokens"),
    ("cost_usd", "cost $", "usd"),
    ("cost_of_pass_usd", "$ per pass", "usd"),
    ("judge_cost_usd", "judge $", "usd"),
    ("latency_mean", "latency mean", "seconds"),
    ("latency_median", "latency p50", "seconds"),
    ("latency_p95", "latency p95", "seconds"),
    ("latency_p99", "latency p99", "seconds"),
    ("pareto_rank", "pareto rank", "int"),
)
_COLUMNS = COLUMNS

#: Examples named per status in the terminal without -v (pytest's short summary
#: habit); -v names them all.
EXAMPLES_SHOWN = 10


#: A table split into more blocks than this is stacked instead.
_MAX_BLOCKS = 4


def wrap_line(text: str, width: int | None) -> list[str]:
    """``text`` as lines of at most ``width`` columns: broken at spaces, each
    continuation indented two columns more than the first line. A word longer than
    a line (a long path) is kept whole on a line of its own: cut, it could not be
    copied. ``None`` (or a line that fits): ``[text]``."""
    if width is None or len(text) <= width:
        return [text]
    indent = text[: len(text) - len(text.lstrip(" "))]
    more = indent + "  "
    if len(more) >= width // 2:  # deep indents on a narrow terminal
        indent = more = ""
    out: list[str] = []
    line: str | None = None
    for word in text.split():
        if line is None:
            line = indent + word
        elif len(line) + 1 + len(word) <= width:
            line += " " + word
        else:
            out.append(line)
            line = more + word
    if line is not None:
        out.append(line)
    return out


def _stacked(headers: list[str], rows: list[list[str]], width: int | None = None) -> list[str]:
    out: list[str] = []
    for r in rows:
        out.extend(wrap_line(r[0], width))
        for i in range(1, len(headers)):
            if r[i]:
                out.extend(wrap_line(f"  {headers[i]}: {r[i]}", width))
    return out


def _render(headers: list[str], rows: list[list[str]], cols: list[int]) -> list[str]:
    # Imported here: an xdist worker, which never draws a table, does not pay for
    # tabulate's import (about 0.1 s of CPU).
    from tabulate import tabulate

    return tabulate(
        [[r[i] for i in cols] for r in rows],
        headers=[headers[i] for i in cols],
        tablefmt="simple",
        disable_numparse=True,
    ).splitlines()


def _wide(lines: list[str]) -> int:
    return max((len(line) for line in lines), default=0)


def fit_table(headers: list[str], rows: list[list[str]], width: int | None) -> list[str]:
    """A table that fits ``width`` columns: whole when it fits, else split into
    blocks of columns (each repeating the first column), else stacked (one block of
    ``header: value`` lines per row) when even one column beside the first does not
    fit, or the split needs more than four blocks of fewer than three columns each.
    """
    # Escaped before the columns are measured: a suite named with a control
    # character (shown as ``\x1b``) is wider than its raw text.
    headers = [inert(h) for h in headers]
    rows = [[inert(c) for c in r] for r in rows]
    everything = list(range(len(headers)))
    full = _render(headers, rows, everything)
    if width is None or _wide(full) <= width:
        return full
    blocks: list[list[str]] = []
    current: list[int] = []
    current_lines: list[str] = []
    for i in everything[1:]:
        trial = _render(headers, rows, [0, *current, i])
        if _wide(trial) <= width:
            current, current_lines = [*current, i], trial
            continue
        if not current:
            return _stacked(headers, rows, width)  # one column beside the first is too wide
        blocks.append(current_lines)
        current = [i]
        current_lines = _render(headers, rows, [0, i])
        if _wide(current_lines) > width:
            return _stacked(headers, rows, width)
    blocks.append(current_lines)
    if len(blocks) > _MAX_BLOCKS and (len(headers) - 1) / len(blocks) < 3:
        # Very narrow: blocks of one or two columns read worse than a list.
        return _stacked(headers, rows, width)
    out: list[str] = []
    for n, lines in enumerate(blocks):
        if n:
            out.append("")
        out.extend(lines)
    return out


def _one_line(text: str, width: int | None) -> str:
    indent = text[: len(text) - len(text.lstrip(" "))]
    text = indent + " ".join(str(text).split())
    if width is not None and len(text) > width:
        return text[: max(width - 1, 1)] + "…"
    return text


def _quote(text: str | None, n: int = 40) -> str:
    text = " ".join((text or "").split())
    return repr(text if len(text) <= n else text[: n - 1] + "…")


def example_reason(rec: Any, threshold: float) -> str:
    """Why an example is below its threshold or in error, in one line."""
    row = rec.row
    if row.error is not None:
        where = row.error.get("where", "")
        text = f"{row.error.get('type', 'Error')}: {row.error.get('message', '')}"
        return text + (f" (in {where})" if where else "")
    field = row.metadata.get("score_field") or "score"
    parts = [below_text(row.scores, field, threshold)]
    # The evaluators' own explanations follow on lines of their own
    # (example_lines, details_lines).
    if rec.io:
        shown = f"response {_quote(rec.io.get('response'))}"
        if rec.io.get("tool_calls"):
            shown += f", tool calls {_quote(rec.io.get('tool_calls'), 80)}"
        if rec.io.get("reference"):
            shown += f", expected {_quote(rec.io.get('reference'))}"
        parts.append(shown)
    return "; ".join(parts)


#: Lines of an evaluator's details shown per example without -v (after its reason).
DETAIL_KEYS_SHOWN = 4


def details_lines(rec: Any, *, width: int | None = None, verbose: int = 0) -> list[str]:
    """An example's evaluator details, indented under its line: the reason of the
    evaluator that produced the primary score, then its message and
    ``key: value`` lines (the first :data:`DETAIL_KEYS_SHOWN` without ``-v``; with
    ``-v`` every evaluator's, whole). Each line escaped, then fitted to ``width``."""
    from ..details import explain_lines

    row = rec.row
    if row.error is not None:
        return []
    lines = explain_lines(
        row.metadata,
        row.metadata.get("score_field"),
        first_only=verbose <= 0,
        max_keys=None if verbose > 0 else DETAIL_KEYS_SHOWN,
        limit=2000 if verbose > 0 else 300,
    )
    return [
        _one_line(" " * (6 + 2 * level) + inert(text), width) for level, text in lines
    ]


def example_lines(report: RunReport, *, width: int | None = None, verbose: int = 0) -> list[tuple[str, dict[str, Any]]]:
    """The examples below threshold or in error, one line each with the reason:
    the first :data:`EXAMPLES_SHOWN` per status, then ``and N more``; all with
    ``verbose``."""
    thresholds = {s["label"]: float(s["threshold"]) for s in report.suites}
    # Name only what tells examples apart: the suite and the dataset when several.
    several_suites = len(report.summary) > 1
    several_datasets = len({r.row.dataset for r in report.records}) > 1
    lines: list[tuple[str, dict[str, Any]]] = []
    for status, word, markup in (("error", "ERROR", {"red": True}), ("below", "BELOW", {"yellow": True})):
        recs = [r for r in report.records if r.status == status]
        if not recs:
            continue
        what = "in error" if status == "error" else "below threshold"
        lines.append((f"examples {what} ({len(recs)}):", {"bold": True}))
        shown = recs if verbose > 0 else recs[:EXAMPLES_SHOWN]
        for rec in shown:
            name = f"{rec.row.dataset}/{rec.row.example_id}" if several_datasets else rec.row.example_id
            if several_suites:
                name = f"{rec.suite}: {name}"
            reason = example_reason(rec, thresholds.get(rec.suite, 0.7))
            # Escaped before it is fitted: an escape is wider than the character.
            line = _one_line(inert(f"  {word} {name}: {reason}"), width)
            lines.append((line, markup))
            explained = details_lines(rec, width=width, verbose=verbose)
            lines.extend((text, {}) for text in explained)
        if len(shown) < len(recs):
            lines.append((f"  ... and {len(recs) - len(shown)} more (-v lists them all; the JSON report has every row)", {}))
    return lines


def summary_legend(summary: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """What the summary table's columns mean, as sentences: the same in the
    terminal, the Markdown summary and the HTML report. Only the columns present
    are explained."""
    keys = {k for m in summary.values() for k in m}
    out: list[str] = []
    if "mean_input_tokens" in keys or "cost_of_pass" in keys:
        out.append(
            "text in/out = tokens of the example's input text and of the System's"
            " output text (tiktoken counts, mean per example; not the LLM's usage);"
            " text per pass = output text tokens per passing example (cost of pass)"
        )
    if "llm_prompt_tokens" in keys:
        out.append(
            "LLM prompt/completion = tokens of the System's LLM calls as the replies"
            " reported them (cache hits included; judges not), mean per example;"
            " LLM per pass = both per passing example"
        )
    if "cost_usd" in keys:
        judge = "; judge $ = the evaluators' calls" if "judge_cost_usd" in keys else ""
        out.append(
            "cost $ = US dollars of the System's LLM calls (--ctxbench-price; cache"
            f" hits priced as calls); $ per pass = cost $ per passing example{judge}"
        )
        if any(_nan(m.get("cost_usd")) or _nan(m.get("judge_cost_usd")) for m in summary.values()):
            out.append(
                "n/a money = a call's model has no price: give"
                " --ctxbench-price=MODEL=IN/OUT (US dollars per million tokens) or"
                " --ctxbench-price=auto"
            )
    if any("assert_examples" in m for m in summary.values()):
        out.append(
            "an example with assertions passes when they all pass (or their weighted"
            " score reaches its own threshold); its primary score is assert_score"
        )
    return out


def _nan(value: Any) -> bool:
    if isinstance(value, str):
        return value == "nan"
    return isinstance(value, float) and math.isnan(value)


#: A suite name longer than this is shown by an alias when the table would not
#: fit the terminal whole.
_ALIAS_AFTER = 20


def suite_aliases(labels: list[str], width: int | None) -> dict[str, str]:
    """Short names for the suites whose names are too long for a table at
    ``width`` columns (a test's node id): the part after the last ``::`` (a proxy's
    name without ``openai_proxy_``), cut to :data:`_ALIAS_AFTER` characters,
    numbered when two would be the same. Empty when no width is given or every name
    is short."""
    if width is None or all(len(label) <= _ALIAS_AFTER for label in labels):
        return {}
    taken = {label for label in labels if len(label) <= _ALIAS_AFTER}
    out: dict[str, str] = {}
    for label in labels:
        if len(label) <= _ALIAS_AFTER:
            continue
        tail = label.rsplit("::", 1)[-1] or label
        tail = tail.removeprefix("openai_proxy_") or tail
        short = tail if len(tail) <= _ALIAS_AFTER else tail[: _ALIAS_AFTER - 1] + "…"
        alias, n = short, 2
        while alias in taken:
            alias = f"{short[: _ALIAS_AFTER - 3]}~{n}"
            n += 1
        taken.add(alias)
        out[label] = alias
    return out


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
    if kind == "usd":  # cents matter above a dollar; fractions of a cent below
        return f"{value:,.2f}" if value >= 1 else f"{value:.6f}"
    if kind == "seconds":
        return f"{value:.3f}s" if value >= 0.001 else f"{value * 1e6:.0f}µs"
    return f"{value:.4f}"


#: How many flaky example ids the terminal names per suite (the JSON has them all).
_FLAKY_SHOWN = 10


#: Summary keys shown as tables of their own: (key prefix, title).
_BREAKDOWNS = (
    ("metric:", "named metrics (assertions' metric names; mean per example):"),
    ("assert_type:", "assertions passed, by type:"),
)


def render_lines(
    report: RunReport,
    *,
    gate_enforced: bool = True,
    width: int | None = None,
    verbose: int = 0,
    why_not: str = "--ctxbench-no-gate",
    partial: dict[str, str] | None = None,
) -> list[tuple[str, dict[str, Any]]]:
    """The terminal section as ``(text, markup)`` lines.

    :param width: the terminal's width: tables wider than this are split into
        blocks of columns, or stacked (see :func:`fit_table`); ``None``: no limit.
    :param verbose: pytest's verbosity; above 0 every example below threshold or in
        error is named, else the first :data:`EXAMPLES_SHOWN` of each.
    :param why_not: why breached gates are not enforced, when ``gate_enforced`` is false.
    :param partial: suite label → why that suite's gates are not applied (a partial
        suite among complete ones).
    """
    lines: list[tuple[str, dict[str, Any]]] = []
    if not report.summary:
        lines.append(("no example was scored", {"yellow" if not report.gates else "red": True}))
        _lost_lines(report, lines)
        _gate_lines(report, lines, gate_enforced, why_not, partial)
        return lines
    labels = list(report.summary)
    present = [c for c in _COLUMNS if any(c[0] in report.summary[s] for s in labels)]
    def cell(label: str, key: str, kind: str) -> str:
        text = fmt_value(report.summary[label].get(key), kind)
        ci = report.intervals.get(label, {}).get(key)
        if ci and not any(math.isnan(x) for x in ci):
            text += f" [{ci[0]:.2f}, {ci[1]:.2f}]"
        return text

    headers = ["suite"] + [
        f"{h} [95% CI]" if key in ("mean_score", "pass_rate") else h for key, h, _ in present
    ]
    cells = {label: [cell(label, key, kind) for key, _, kind in present] for label in labels}
    # Long suite names (test node ids) take a table's width from every column:
    # the tables show them by a short name, explained above the first, when that
    # makes the table shorter (fewer blocks, or blocks instead of a list).
    aliases = suite_aliases(labels, width)
    if aliases:
        full = fit_table(headers, [[label, *cells[label]] for label in labels], width)
        short = fit_table(headers, [[aliases.get(label, label), *cells[label]] for label in labels], width)
        if len(short) + len(aliases) + 1 >= len(full):
            aliases = {}

    def show(label: str) -> str:
        return aliases.get(label, label)

    if aliases:
        lines.append(("suites by short name:", {}))
        for label, alias in aliases.items():
            lines.extend((text, {}) for text in wrap_line(inert(f"  {alias} = {label}"), width))
    table = [[show(label)] + cells[label] for label in labels]
    for text in fit_table(headers, table, width):
        lines.append((text, {}))

    ds_keys = sorted({k for s in labels for k in report.summary[s] if k.startswith("dataset:")})
    if ds_keys:
        lines.append(("", {}))
        lines.append(("mean score per dataset:", {"bold": True}))
        ds_table = [
            [show(label)] + [fmt_value(report.summary[label].get(k)) if k in report.summary[label] else "" for k in ds_keys]
            for label in labels
        ]
        ds_headers = ["suite"] + [k.split(":", 1)[1] for k in ds_keys]
        for text in fit_table(ds_headers, ds_table, width):
            lines.append((text, {}))

    for prefix, title in _BREAKDOWNS:
        keys = sorted({k for s in labels for k in report.summary[s] if k.startswith(prefix)})
        if not keys:
            continue
        lines.append(("", {}))
        lines.append((title, {"bold": True}))
        table = [
            [show(label)] + [fmt_value(report.summary[label].get(k)) if k in report.summary[label] else "" for k in keys]
            for label in labels
            if any(k in report.summary[label] for k in keys)  # suites with assertions
        ]
        # Metric names come from the dataset: inert like any text of it.
        for text in fit_table(["suite"] + [inert(k[len(prefix):]) for k in keys], table, width):
            lines.append((text, {}))

    if report.repeats:
        lines.append(("", {}))
        lines.append(("repeated trials:", {"bold": True}))
        rep_table = []
        for label, rep in report.repeats.items():
            k = rep.get("k", 0)
            rep_table.append([
                show(label), str(k), str(rep.get("examples", 0)),
                fmt_value(rep.get("pass_at_1")), fmt_value(rep.get("pass_at_k")),
                fmt_value(rep.get("pass_hat_k")), str(len(rep.get("flaky", []))),
            ])
        rep_headers = ["suite", "k", "examples", "pass@1", "pass@k", "pass^k", "flaky"]
        for text in fit_table(rep_headers, rep_table, width):
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
    lines.extend((text, {}) for text in summary_legend(report.summary))
    counts = report.status_counts
    if counts.get("below") or counts.get("error") or counts.get("unscored"):
        parts = [f"{counts[k]} {w}" for k, w in (("below", "below threshold"), ("error", "errored"), ("unscored", "not scored")) if counts.get(k)]
        lines.append(("examples: " + ", ".join(parts), {"yellow": True}))
    examples = example_lines(report, width=width, verbose=verbose)
    if examples:
        lines.append(("", {}))
        lines.extend(examples)
    _lost_lines(report, lines)
    _gate_lines(report, lines, gate_enforced, why_not, partial)
    return lines


def _lost_lines(report: RunReport, lines: list[tuple[str, dict[str, Any]]]) -> None:
    if report.lost:
        lines.append((f"{len(report.lost)} example(s) produced no row of their own (crashed or failed before scoring); each counts as an error:", {"red": True}))
        for nodeid in report.lost[:20]:
            lines.append((f"  {nodeid}", {"red": True}))
        if len(report.lost) > 20:
            lines.append((f"  ... and {len(report.lost) - 20} more", {"red": True}))


def _gate_lines(
    report: RunReport,
    lines: list[tuple[str, dict[str, Any]]],
    gate_enforced: bool,
    why_not: str = "--ctxbench-no-gate",
    partial: dict[str, str] | None = None,
) -> None:
    partial = partial or {}
    if report.gates:
        lines.append(("", {}))
        suffix = "" if gate_enforced else f" (not enforced: {why_not})"
        lines.append((f"gates{suffix}:", {"bold": True}))
        for g in report.gates:
            verdict = "PASS" if g.passed else "FAIL"
            applied = gate_enforced and g.suite not in partial and g.enforced
            markup = {"green": True} if g.passed and g.enforced else (
                {"red": True} if applied else {"yellow": True})
            note = " (not enforced: partial suite)" if gate_enforced and g.suite in partial else ""
            if not g.enforced:
                # A judge that disagrees with people's labels: shown, not applied.
                verdict = "NOT ENFORCED"
                note = f" ({'would pass' if g.passed else 'would fail'}; not enforced: {g.not_enforced})"
            lines.append((f"  {verdict} {g.suite}: {g.gate.name}: {g.reason}{note}", markup))
        breaches = [g for g in report.breaches if g.suite not in partial]
        if breaches and gate_enforced:
            lines.append((f"{len(breaches)} gate(s) breached: the run fails", {"red": True, "bold": True}))
