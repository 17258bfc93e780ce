"""The views of a run history (``ctxbench history``): one HTML file, one Markdown
summary. Pure: reads a :class:`~pytest_context_bench.history.History`.

The HTML page is drawn here, not in the browser: inline SVG charts, inline CSS, and no
script at all; a Content-Security-Policy ``<meta>`` forbids every fetch
(``default-src 'none'``), so the file works offline and cannot load anything. Every
text that comes from a file (suite names, example ids, file names, the reasons) is
made inert (:func:`~pytest_context_bench._text.inert`: control and direction
characters shown as escapes) and HTML-escaped, in text and in attributes alike. The
page holds no row: its size depends on the runs, suites and flaky examples shown,
not on the examples (50 runs of 5,000 rows: benchmarks/history.py).
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from typing import Any

from .._text import inert
from ..stats import format_number
from .markdown import md_escape

__all__ = ["FLAKY_SHOWN", "render_history_html", "render_history_markdown"]

#: Flaky examples listed at most (the rest are counted).
FLAKY_SHOWN = 200
_RATES = ("pass_rate", "mean_score", "error_rate")
_W, _H = 380, 170
_LEFT, _RIGHT, _TOP, _BOTTOM = 56, 14, 14, 30


def _t(value: Any) -> str:
    """Text from a file, inert and escaped for HTML text or a quoted attribute."""
    return html.escape(inert(str(value)), quote=True)


def _fmt(x: float) -> str:
    return "n/a" if math.isnan(x) else format_number(x)


def _chart(history: Any, suite: str, metric: str, values: Sequence[float]) -> str:
    n = len(values)
    finite = [v for v in values if math.isfinite(v)]
    if metric in _RATES:
        lo, hi = 0.0, 1.0
    elif finite:
        lo, hi = min(finite), max(finite)
        if hi == lo:
            pad = abs(hi) * 0.1 or 1.0
            lo, hi = lo - pad, hi + pad
    else:
        lo, hi = 0.0, 1.0
    pw, ph = _W - _LEFT - _RIGHT, _H - _TOP - _BOTTOM

    def x(i: int) -> float:
        return _LEFT + (pw * i / (n - 1) if n > 1 else pw / 2)

    def y(v: float) -> float:
        return _TOP + ph * (1 - (v - lo) / (hi - lo))

    flagged = {f.run: f for f in history.flags if f.suite == suite and f.metric == metric}
    parts = [
        f'<svg viewBox="0 0 {_W} {_H}" width="{_W}" height="{_H}" role="img"'
        f' aria-label="{_t(suite)}: {_t(metric)} per run">',
        f'<rect x="{_LEFT}" y="{_TOP}" width="{pw}" height="{ph}" class="frame"/>',
        f'<text x="{_LEFT - 6}" y="{_TOP + 4}" class="axis" text-anchor="end">{_t(_fmt(hi))}</text>',
        f'<text x="{_LEFT - 6}" y="{_TOP + ph + 4}" class="axis" text-anchor="end">{_t(_fmt(lo))}</text>',
        f'<text x="{x(0):.1f}" y="{_H - 10}" class="axis" text-anchor="middle">1</text>',
    ]
    if n > 1:
        parts.append(f'<text x="{x(n - 1):.1f}" y="{_H - 10}" class="axis" text-anchor="middle">{n}</text>')
    line: list[str] = []
    lines: list[list[str]] = []
    for i, v in enumerate(values):
        if math.isfinite(v):
            line.append(f"{x(i):.1f},{y(v):.1f}")
        elif line:
            lines.append(line)
            line = []
    if line:
        lines.append(line)
    for pts in lines:
        if len(pts) > 1:
            parts.append(f'<polyline points="{" ".join(pts)}" class="line"/>')
    for i, v in enumerate(values):
        if not math.isfinite(v):
            continue
        run = history.runs[i]
        tip = f"run {i + 1} ({run.name}): {metric} = {_fmt(v)}"
        cls, r = "pt", 3
        if i in flagged:
            f = flagged[i]
            tip += f"; significantly worse than the run before ({_fmt(f.then)} → {_fmt(f.now)}; {f.reason})"
            cls, r = "pt bad", 5.5
        parts.append(
            f'<circle cx="{x(i):.1f}" cy="{y(v):.1f}" r="{r}" class="{cls}"'
            f' data-run="{i + 1}"><title>{_t(tip)}</title></circle>'
        )
    parts.append("</svg>")
    unknown = n - len(finite)
    note = f'<p class="note">{unknown} run(s) without a finite value</p>' if unknown else ""
    return (
        f'<figure class="chart"><figcaption>{_t(metric)}</figcaption>{"".join(parts)}{note}</figure>'
    )


_CSS = """
:root{--ok:#1a7f37;--bad:#cf222e;--mut:#57606a;--line:#d0d7de;--bg:#f6f8fa}
*{box-sizing:border-box}
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:0;color:#1f2328}
header,main,footer{padding:0 24px}
header{background:var(--bg);border-bottom:1px solid var(--line);padding-bottom:10px}
h1{font-size:22px;margin:0;padding:14px 0 4px}
h2{font-size:17px;margin:24px 0 8px;overflow-wrap:anywhere}
table{border-collapse:collapse;width:100%}
th,td{border-bottom:1px solid var(--line);padding:4px 8px;text-align:left;vertical-align:top;unicode-bidi:isolate;overflow-wrap:anywhere}
th{background:var(--bg)}
.scroll{overflow-x:auto}
.charts{display:flex;flex-wrap:wrap;gap:12px}
.chart{margin:0;border:1px solid var(--line);border-radius:6px;padding:6px;background:#fff}
.chart figcaption{font-weight:600;margin:0 0 2px 4px}
.chart svg{display:block;max-width:100%;height:auto}
.frame{fill:#fff;stroke:var(--line)}
.line{fill:none;stroke:#0969da;stroke-width:1.6}
.pt{fill:#0969da}
.pt.bad{fill:var(--bad);stroke:#fff;stroke-width:1.5}
.axis{font-size:11px;fill:var(--mut)}
.bad{color:var(--bad)}.ok{color:var(--ok)}
.note{color:var(--mut);margin:4px 0}
.seq span{display:inline-block;width:9px;height:14px;margin-right:1px;border-radius:2px;background:#eaeef2}
.seq .pass{background:var(--ok)}.seq .fail{background:var(--bad)}.seq .mixed{background:#bf8700}
code{font-size:12px}
"""


def render_history_html(history: Any, *, title: str = "ctxbench history") -> str:
    """The history as one self-contained HTML page (no script, no request)."""
    from ..history import flag_lines, runs_line

    runs = history.runs
    csp = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'"
    out = [
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n',
        f'<meta http-equiv="Content-Security-Policy" content="{csp}">\n',
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n',
        '<meta name="referrer" content="no-referrer">\n',
        f"<title>{_t(title)}</title>\n<style>{_CSS}</style>\n</head>\n",
        '<body data-ready="1">\n',
        f"<header><h1>{_t(title)}</h1><div>{_t(runs_line(history))}</div></header>\n<main>\n",
    ]
    flagged = list(flag_lines(history))
    out.append('<section id="flags"><h2>Runs significantly worse than the run before</h2>')
    if history.flags:
        out.append(f'<p class="bad">{len(history.flags)} flag(s): pass rate or mean score lower than the'
                   " previous run's, significantly, by the baseline gate's own paired test"
                   f" (a max drop of 0 at {history.confidence * 100:g}% confidence).</p>")
    else:
        out.append(f'<p class="ok">None: no run is significantly worse than the run before it'
                   f" (the baseline gate's paired test, {history.confidence * 100:g}% confidence).</p>")
    if flagged:
        out.append("<ul>" + "".join(f"<li>{_t(line)}</li>" for line in flagged) + "</ul>")
    out.append("</section>\n")
    for suite in history.suites:
        out.append(f'<section class="suite"><h2>{_t(suite)}</h2><div class="charts">')
        for metric, values in history.series.get(suite, {}).items():
            out.append(_chart(history, suite, metric, values))
        out.append("</div></section>\n")
    out.append(f'<section id="flaky"><h2>Chronically flaky examples</h2><p class="note">Examples whose pass'
               f" outcome changed at least {history.min_flips} times between the runs they were in:"
               f" {len(history.flaky)}. Each square is a run (green pass, red fail, amber some trials"
               " passed, grey absent).</p>")
    if history.flaky:
        rows = []
        for suite, example, flips, outcomes in history.flaky[:FLAKY_SHOWN]:
            seq = "".join(
                f'<span class="{o or "none"}" title="run {i + 1}: {o or "absent"}"></span>'
                for i, o in enumerate(outcomes)
            )
            rows.append(f"<tr><td>{_t(suite)}</td><td>{_t(example)}</td><td>{flips}</td>"
                        f'<td class="seq">{seq}</td></tr>')
        out.append('<div class="scroll"><table><thead><tr><th>suite</th><th>example</th><th>flips</th>'
                   "<th>outcome per run</th></tr></thead><tbody>" + "".join(rows) + "</tbody></table></div>")
        if len(history.flaky) > FLAKY_SHOWN:
            out.append(f'<p class="note">… and {len(history.flaky) - FLAKY_SHOWN} more.</p>')
    out.append("</section>\n")
    out.append('<section id="runs"><h2>Runs</h2><div class="scroll"><table><thead><tr><th>#</th><th>file</th>'
               "<th>created</th><th>commit</th><th>plugin</th><th>rows</th><th>flags</th></tr></thead><tbody>")
    per_run: dict[int, int] = {}
    for f in history.flags:
        per_run[f.run] = per_run.get(f.run, 0) + 1
    for i, run in enumerate(runs):
        mark = f'<span class="bad">{per_run[i]}</span>' if i in per_run else ""
        out.append(
            f"<tr><td>{i + 1}</td><td>{_t(run.name)}</td><td>{_t(run.created or '')}</td>"
            f"<td><code>{_t((run.git_commit or '')[:12])}</code></td><td>{_t(run.version)}</td>"
            f"<td>{run.rows}</td><td>{mark}</td></tr>"
        )
    out.append("</tbody></table></div></section>\n</main>\n")
    out.append('<footer><p class="note">One file: no script, no request. Written by'
               " <code>ctxbench history</code> (pytest-context-bench).</p></footer>\n</body>\n</html>\n")
    return "".join(out)


def render_history_markdown(history: Any, *, title: str = "ctxbench history") -> str:
    """The history as a Markdown summary: per suite, a table of the runs and their
    metrics (❌ where significantly worse than the run before), then the flags and
    the chronically flaky examples."""
    from ..history import flag_lines, runs_line

    out = [f"## {md_escape(title)}", "", md_escape(runs_line(history), 400), ""]
    marks = {(f.run, f.suite, f.metric) for f in history.flags}
    for suite in history.suites:
        series = history.series.get(suite, {})
        if not series:
            continue
        out += [f"### {md_escape(suite)}", ""]
        metrics = list(series)
        out.append("| run | file | " + " | ".join(md_escape(m) for m in metrics) + " |")
        out.append("|---|---|" + "---|" * len(metrics))
        for i, run in enumerate(history.runs):
            cells = []
            for m in metrics:
                v = series[m][i]
                cell = _fmt(v)
                if (i, suite, m) in marks:
                    cell = f"❌ {cell}"
                cells.append(cell)
            out.append(f"| {i + 1} | {md_escape(run.name, 80)} | " + " | ".join(cells) + " |")
        out.append("")
    lines = list(flag_lines(history))
    out += ["### Runs significantly worse than the run before", ""]
    out += [f"- {md_escape(line, 600)}" for line in lines] or ["None."]
    out.append("")
    out += [f"### Chronically flaky examples (flipped at least {history.min_flips} times): {len(history.flaky)}", ""]
    for suite, example, flips, outcomes in history.flaky[:50]:
        seq = "".join({"pass": "✓", "fail": "✗", "mixed": "~"}.get(o or "", "·") for o in outcomes)
        out.append(f"- **{md_escape(suite)}** {md_escape(example, 120)}: {flips} flips `{seq}`")
    if len(history.flaky) > 50:
        out.append(f"- … and {len(history.flaky) - 50} more (in the HTML page)")
    out.append("")
    return "\n".join(out)
