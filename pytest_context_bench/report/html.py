"""The HTML view of a JSON report: one self-contained file that works offline.

What the page promises:

* **No request of any kind.** CSS, script and plots (inline SVG drawn by the script)
  are in the file; a Content-Security-Policy ``<meta>`` forbids every fetch
  (``default-src 'none'``) and lets only the page's own script run (by its SHA-256),
  so even a mistake in escaping could not load or run anything.
* **Everything from a dataset, a System or a model is text.** The report's data is
  embedded once, as JSON in a ``<script type="application/json">`` element with
  ``<``, ``>`` and ``&`` written as ``\\u003c`` ... (so no ``</script>`` can close
  it); the script puts it in the page only through ``textContent`` and attribute
  setters, never as markup. Unicode direction controls (U+202E ...) are shown as
  visible ``[U+202E]`` tags, and every cell is direction-isolated.
* **Large runs stay usable.** The example table renders one page of
  :data:`PAGE_SIZE` rows at a time from the embedded JSON; sorting, the status
  filter and the search work on the whole set. The footer states the file's size.

Layout: run information; the gates and their verdicts first (a breached gate links
to its suite's failing examples); the summary table (``cost $`` and ``$ per pass``
when prices were given); with a comparison, the metrics with a verdict column and
the flipped examples with both responses side by side (``ctxbench compare``: both
runs' call records too, and the page opens with the comparison's verdict); a Pareto
plot of quality (mean score) against cost (text tokens per pass) per suite; mean score
per dataset; the latency distribution per suite; then the per-example table (id,
suite, status, score, response next to reference, evaluator details, error), where
each row expands to its evaluators' details (reason first) and its LLM call records
(messages by role, reply, model and parameters, usage, latency, cache, attempts).
A link to ``#ex-N`` opens row ``N`` of ``doc["rows"]`` expanded, on its page.

Pure: reads the document :func:`~pytest_context_bench.report.to_json_dict` returns.
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
from collections.abc import Mapping
from typing import Any

from ..results import from_json_safe, json_safe
from .llm_section import report_llm_lines
from .terminal import COLUMNS, fmt_value, summary_legend

__all__ = ["PAGE_SIZE", "baseline_diff", "embed_json", "render_html"]

#: Rows of the example table rendered at a time.
PAGE_SIZE = 100


def embed_json(value: Any) -> str:
    """JSON that is inert inside a ``<script>`` element: no ``<``, ``>`` or ``&``
    (``</script>`` and ``<!--`` cannot occur), and no U+2028/U+2029."""
    text = json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    return (
        text.replace("<", "\\u003c")
        .replace(">", "\\u003e")
        .replace("&", "\\u0026")
        .replace("\u2028", "\\u2028")
        .replace("\u2029", "\\u2029")
    )


def _floats(summary: Any) -> dict[str, dict[str, Any]]:
    """A report's summary with its numbers as floats (``"inf"`` as inf)."""
    out: dict[str, dict[str, Any]] = {}
    if not isinstance(summary, Mapping):
        return out
    for label, metrics in summary.items():
        if not isinstance(metrics, Mapping):
            continue
        row: dict[str, Any] = {}
        for key, value in metrics.items():
            try:
                row[str(key)] = from_json_safe(value)
            except (TypeError, ValueError):
                continue
        out[str(label)] = row
    return out


def _summary_cells(doc: Mapping[str, Any]) -> dict[str, dict[str, list[str]]]:
    """label -> key -> [value text, interval text or ""], as the terminal prints them."""
    summary = _floats(doc.get("summary"))
    given = doc.get("intervals")
    intervals: Mapping[str, Any] = given if isinstance(given, Mapping) else {}
    out: dict[str, dict[str, list[str]]] = {}
    for label, metrics in summary.items():
        found = intervals.get(label)
        ci_of: Mapping[str, Any] = found if isinstance(found, Mapping) else {}
        row: dict[str, list[str]] = {}
        for key, _, kind in COLUMNS:
            if key not in metrics:
                continue
            ci = ci_of.get(key)
            ci_text = ""
            try:
                lo, hi = (from_json_safe(x) for x in ci)  # type: ignore[union-attr]
                if math.isfinite(lo) and math.isfinite(hi):
                    ci_text = f"[{lo:.2f}, {hi:.2f}]"
            except (TypeError, ValueError):
                pass
            row[key] = [fmt_value(metrics[key], kind), ci_text]
        out[label] = row
    return out


def render_html(
    doc: Mapping[str, Any],
    *,
    diff: Mapping[str, Any] | None = None,
    title: str = "ctxbench report",
) -> str:
    """The HTML page of a JSON report.

    :param doc: the JSON report document (strict JSON: non-finite numbers as strings).
    :param diff: optional comparison with another run, shown before the examples:
        ``{"base": label, "head": label, "metrics": [{suite, metric, then, now,
        change, ci_low, ci_high, p_value, flag ("WORSE", "slower" or ""), ...}],
        "flipped": [{suite, dataset, example_id, before, after, score_before,
        score_after, response_before, response_after, reference, row_index (of
        ``doc["rows"]``), calls_before, calls_after, details_before,
        details_after}], "notes": [str], "verdict": {"text": str, "worse": bool}}``;
        with a ``verdict`` (``ctxbench compare``) the page opens with it.
    :param title: the page title (escaped).
    """
    if diff is None:
        diff = baseline_diff(doc)
    # Non-finite numbers as the JSON report writes them ("inf"): cost_of_pass of a
    # suite with no passing example is infinite in a diff computed here.
    data = embed_json(
        json_safe(
            {
                "doc": doc,
                "diff": diff,
                "page_size": PAGE_SIZE,
                "columns": [list(c) for c in COLUMNS],
                # Formatted here, as the terminal and the Markdown format them
                # (JavaScript's toFixed rounds ties the other way: 25.25 -> 25.3).
                "cells": _summary_cells(doc),
                "legend": summary_legend(_floats(doc.get("summary"))),
                "llm_lines": report_llm_lines(doc),
            }
        )
    )
    digest = base64.b64encode(hashlib.sha256(_SCRIPT.encode("utf-8")).digest()).decode(
        "ascii"
    )
    csp = (
        "default-src 'none'; style-src 'unsafe-inline'; img-src data:;"
        f" script-src 'sha256-{digest}'; base-uri 'none'; form-action 'none'"
    )
    safe_title = (
        title.replace("&", "&amp;")
        .replace("<", "&lt;")
        .replace(">", "&gt;")
        .replace('"', "&quot;")
    )
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f'<meta http-equiv="Content-Security-Policy" content="{csp}">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        '<meta name="referrer" content="no-referrer">\n'
        f"<title>{safe_title}</title>\n<style>{_CSS}</style>\n</head>\n<body>\n"
        f'<header><h1>{safe_title}</h1><div id="run"></div></header>\n'
        '<noscript><p class="bad">This report is drawn by its own script (embedded,'
        " offline): enable JavaScript for this file, or read the JSON report.</p></noscript>\n"
        "<main>\n"
        '<section id="gates"><h2>Gates</h2><div id="verdict"></div><div id="gate-table" class="scroll"></div></section>\n'
        '<section id="summary"><h2>Summary</h2><div id="summary-table" class="scroll"></div>'
        '<p class="note" id="legend"></p></section>\n'
        '<section id="llm" hidden><h2>LLM calls</h2><ul id="llm-lines"></ul></section>\n'
        '<section id="comparison" hidden><h2>Compared with another run</h2>'
        '<div id="diff-table" class="scroll"></div><div id="flipped" class="scroll"></div></section>\n'
        '<section id="plots"><div class="plot"><h2>Quality against cost</h2><div id="pareto"></div></div>'
        '<div class="plot"><h2>Mean score per dataset</h2><div id="datasets" class="scroll"></div>'
        '<div id="assertions" hidden><h2>Assertions</h2><div id="assertion-grid" class="scroll"></div></div></div>'
        '<div class="plot"><h2>Latency</h2><div id="latency"></div></div></section>\n'
        '<section id="examples"><h2>Examples</h2>'
        '<div class="controls"><span id="status-filter" role="group" aria-label="status"></span>'
        '<input id="search" type="search" placeholder="Search ids, responses, references, errors"'
        ' aria-label="search"></div>'
        '<div class="pager"><button id="prev" type="button">&larr; previous</button>'
        '<span id="page-info"></span><button id="next" type="button">next &rarr;</button></div>'
        '<div class="scroll"><table id="example-table"><thead></thead><tbody></tbody></table></div>'
        '</section>\n</main>\n<footer id="footer"></footer>\n'
        f'<script type="application/json" id="ctxbench-data">{data}</script>\n'
        f"<script>{_SCRIPT}</script>\n</body>\n</html>\n"
    )


def baseline_diff(doc: Mapping[str, Any]) -> dict[str, Any] | None:
    """The comparison section of a run compared with a baseline (``--ctxbench-baseline``):
    its metrics, and the flipped examples with this run's response (a baseline file
    keeps scores, not responses)."""
    comparison = doc.get("baseline_comparison")
    if not comparison:
        return None
    by_key: dict[tuple[str, str], Mapping[str, Any]] = {}
    index: dict[int, int] = {}  # id(row) -> its place in doc["rows"]
    for i, row in enumerate(doc.get("rows", [])):
        index[id(row)] = i
        suite, ds, ex = (
            str(row.get("suite")),
            str(row.get("dataset")),
            str(row.get("example_id")),
        )
        by_key.setdefault((suite, ex), row)
        by_key.setdefault((suite, f"{ds}/{ex}"), row)
    flipped = []
    for s in comparison.get("suites", []):
        for key, before, after in (
            ("flipped_to_fail", "pass", "fail"),
            ("flipped_to_pass", "fail", "pass"),
        ):
            for ident in s.get(key, []):
                row = by_key.get((str(s.get("suite")), str(ident)), {})
                meta = row.get("metadata") or {}
                score = (row.get("scores") or {}).get(meta.get("score_field"))
                flipped.append(
                    {
                        "suite": s.get("suite"),
                        "dataset": row.get("dataset", ""),
                        "example_id": row.get("example_id", ident),
                        "before": before,
                        "after": after,
                        "score_before": None,
                        "score_after": 0.0 if row.get("error") else score,
                        "response_before": None,
                        "response_after": row.get("response"),
                        "reference": row.get("reference", ""),
                        # The row below, expanded: this run's calls and details.
                        "row_index": index.get(id(row)),
                    }
                )
    return {
        "base": f"the baseline {comparison.get('baseline')}",
        "base_label": "baseline",
        "head_label": "this run",
        "metrics": list(comparison.get("metrics", [])),
        "flipped": flipped,
        "notes": [
            f"{s.get('suite')}: {note}"
            for s in comparison.get("suites", [])
            for note in s.get("notes", [])
        ]
        + [
            (
                "The flipped examples show this run's response; the baseline's answers"
                " are in its file (each row's answer)."
            )
        ],
    }


_CSS = """
:root{--ok:#1a7f37;--bad:#cf222e;--warn:#9a6700;--mut:#57606a;--line:#d0d7de;--bg:#f6f8fa}
*{box-sizing:border-box}
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:0;color:#1f2328}
header,main,footer{padding:0 24px}
header{background:var(--bg);border-bottom:1px solid var(--line);padding-bottom:8px}
h1{font-size:22px;margin:0;padding:14px 0 4px}
h2{font-size:17px;margin:22px 0 8px}
#run{color:var(--mut);display:flex;flex-wrap:wrap;gap:4px 18px;overflow-wrap:anywhere}
#run b{color:#1f2328;font-weight:600}
table{border-collapse:collapse;width:100%}
th,td{border-bottom:1px solid var(--line);padding:4px 8px;text-align:left;vertical-align:top;unicode-bidi:isolate}
th{background:var(--bg);position:sticky;top:0;white-space:nowrap}
th.sortable{cursor:pointer;user-select:none}
th.sortable:hover{text-decoration:underline}
td.num,th.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
.scroll{overflow-x:auto}
#summary-grid{font-size:13px}
#summary-grid th,#summary-grid th.num{white-space:normal;vertical-align:bottom}
#summary-grid th,#summary-grid td{padding:4px 3px}
#summary-grid td:first-child{overflow-wrap:break-word}
.ci{color:var(--mut);font-size:12px}
#llm li{overflow-wrap:anywhere;margin:.2em 0}
.ok{color:var(--ok);font-weight:600}.bad{color:var(--bad);font-weight:600}.warn{color:var(--warn);font-weight:600}.mut{color:var(--mut)}
.banner{padding:8px 12px;border-radius:6px;margin-bottom:8px;font-weight:600}
#compare-verdict{margin-top:16px;font-size:16px}
.banner.ok{background:#dafbe1}.banner.bad{background:#ffebe9}.banner.none{background:var(--bg);color:var(--mut)}
.note{color:var(--mut);font-size:13px}
#plots{display:flex;flex-wrap:wrap;gap:8px 32px}
.plot{flex:1 1 320px;min-width:0}
svg{max-width:100%;height:auto;font:11px system-ui,sans-serif}
.controls{display:flex;flex-wrap:wrap;gap:8px;align-items:center;margin-bottom:6px}
.controls button{border:1px solid var(--line);background:#fff;border-radius:14px;padding:2px 10px;cursor:pointer}
.controls button[aria-pressed=true]{background:#0969da;color:#fff;border-color:#0969da}
#search{flex:1 1 240px;padding:4px 8px;border:1px solid var(--line);border-radius:6px;font:inherit}
.pager{display:flex;gap:12px;align-items:center;margin:6px 0}
.text{white-space:pre-wrap;word-break:break-word;min-width:12em;max-width:36em;font-family:ui-monospace,monospace;font-size:12px}
.ctl{background:#fff8c5;color:var(--bad);font-family:ui-monospace,monospace;font-size:11px}
.status-pass{color:var(--ok)}.status-below{color:var(--warn)}.status-error{color:var(--bad)}.status-unscored{color:var(--mut)}
#examples td:first-child{min-width:13em}
#datasets td:first-child{overflow-wrap:anywhere}
.side{display:grid;grid-template-columns:1fr 1fr;gap:8px}
.toggle{border:1px solid var(--line);background:#fff;border-radius:4px;padding:0 5px;margin-right:6px;cursor:pointer;font-size:12px}
.toggle::before{content:"\\25b8"}.toggle[aria-expanded=true]::before{content:"\\25be"}
tr.more>td{background:#fbfcfd;padding:6px 12px 12px}
.morebox{position:sticky;left:0;max-width:calc(100vw - 48px)}
tr.target>td{background:#fff8c5}
tr.worse>td{background:#ffebe9}
h4{font-size:13px;margin:10px 0 4px}
.calltext{white-space:pre-wrap;overflow-wrap:anywhere;font-family:ui-monospace,monospace;font-size:12px;min-width:0}
.evaluator,.call{border-left:3px solid var(--line);padding:2px 0 2px 8px;margin:4px 0 8px;min-width:0}
.evaluator .label,.callhead{font-weight:600;overflow-wrap:anywhere}
.reason{font-weight:600;color:var(--warn)}
.kv .key{color:var(--mut)}
.msg{display:grid;grid-template-columns:5.5em minmax(0,1fr);gap:6px;margin:3px 0}
.msg .role{color:var(--mut);font-size:12px;text-align:right}
.msg.reply .role{color:#0969da;font-weight:600}
.side-col{min-width:0}
#scope{color:var(--mut)}
a.failing{font-size:12px;font-weight:400}
footer{color:var(--mut);font-size:12px;border-top:1px solid var(--line);margin-top:24px;padding-top:8px;padding-bottom:16px}
@media (max-width:700px){header,main,footer{padding:0 10px}.side{grid-template-columns:1fr}.text{min-width:10em;max-width:22em}
#gate-table thead{display:none}
#gate-table table,#gate-table tbody,#gate-table tr{display:block}
#gate-table tr{border-bottom:1px solid var(--line);padding:4px 0}
#gate-table td{display:block;border:0;padding:1px 4px;text-align:left;white-space:normal}
#gate-table td:nth-child(n+3)::before{content:attr(data-label) ": ";color:var(--mut)}}
"""

# The page's only script. It reads the embedded JSON and builds the page with DOM
# calls (textContent, setAttribute): no data ever goes through innerHTML.
_SCRIPT = r"""
"use strict";
(function () {
  const DATA = JSON.parse(document.getElementById("ctxbench-data").textContent);
  const doc = DATA.doc || {};
  const diff = DATA.diff;
  const PAGE = DATA.page_size || 100;
  const SVGNS = "http://www.w3.org/2000/svg";
  // Control characters (not tab or newline: responses keep their lines) and
  // direction controls: shown as [U+XXXX], as the terminal shows them as escapes.
  const CONTROLS = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069\u061c]/g;

  function num(x) {
    if (x === null || x === undefined || x === "") return NaN;
    if (typeof x === "number") return x;
    if (x === "inf") return Infinity;
    if (x === "-inf") return -Infinity;
    return Number(x);
  }
  function fmt(x, kind) {
    const v = num(x);
    if (x === null || x === undefined) return "";
    if (Number.isNaN(v)) return "n/a";
    if (!Number.isFinite(v)) return v > 0 ? "inf" : "-inf";
    if (kind === "int") return v.toFixed(0);
    if (kind === "tokens") return v.toLocaleString("en-US", {minimumFractionDigits: 1, maximumFractionDigits: 1});
    if (kind === "seconds") return v >= 0.001 ? v.toFixed(3) + "s" : (v * 1e6).toFixed(0) + "\u00b5s";
    // As the terminal: cents above a dollar, fractions of a cent below.
    if (kind === "usd") return v >= 1 ? v.toLocaleString("en-US", {minimumFractionDigits: 2, maximumFractionDigits: 2}) : v.toFixed(6);
    return v.toFixed(4);
  }
  // Text with its control and direction characters made visible: it cannot
  // reorder what follows.
  function textNode(parent, value) {
    const text = value === null || value === undefined ? "" : String(value);
    let last = 0;
    text.replace(CONTROLS, function (ch, at) {
      if (at > last) parent.appendChild(document.createTextNode(text.slice(last, at)));
      const tag = el("span", "ctl", "[U+" + ch.charCodeAt(0).toString(16).toUpperCase().padStart(4, "0") + "]");
      parent.appendChild(tag);
      last = at + 1;
      return ch;
    });
    if (last < text.length) parent.appendChild(document.createTextNode(text.slice(last)));
    return parent;
  }
  function el(tag, cls, text) {
    const node = document.createElement(tag);
    if (cls) node.className = cls;
    if (text !== undefined && text !== null) textNode(node, text);
    return node;
  }
  function breakable(label) {  // an identifier may break after "::", "_", "/" or "."
    const span = el("span");
    label.split(/(?<=::|[_\/.])/).forEach(function (part, i) {
      if (i) span.appendChild(el("wbr"));
      textNode(span, part);
    });
    return span;
  }
  function svg(tag, attrs, text) {
    const node = document.createElementNS(SVGNS, tag);
    for (const k in attrs) node.setAttribute(k, String(attrs[k]));
    if (text !== undefined) node.textContent = String(text).replace(CONTROLS, "?");
    return node;
  }
  function table(headers, rows, numeric) {
    const t = el("table");
    const head = t.createTHead().insertRow();
    headers.forEach(function (h, i) {
      const th = el("th", numeric && numeric[i] ? "num" : "", h);
      head.appendChild(th);
    });
    const body = t.createTBody();
    rows.forEach(function (r) {
      const tr = body.insertRow();
      r.forEach(function (c, i) {
        const td = tr.insertCell();
        td.setAttribute("data-label", headers[i]);
        if (numeric && numeric[i]) td.className = "num";
        if (c instanceof Node) td.appendChild(c); else textNode(td, c);
      });
    });
    return t;
  }

  // ---- what explains a row: its evaluators' details and its LLM call records
  const CAP = 4000;  // characters of one value shown; the JSON report has it whole
  function capped(text) {
    const t = String(text);
    return t.length > CAP ? t.slice(0, CAP) + "\u2026 [" + (t.length - CAP).toLocaleString("en-US") + " more characters in the JSON report]" : t;
  }
  function plain(v) {
    if (v === null || v === undefined) return "";
    if (Array.isArray(v)) return v.map(function (x) { return typeof x === "object" && x !== null ? JSON.stringify(x) : String(x); }).join(", ");
    if (typeof v === "object") return Object.keys(v).map(function (k) { return k + ": " + plain(v[k]); }).join("; ");
    return String(v);
  }
  // Metadata dicts that are not an evaluator's details: the rows' measured usage.
  const USAGE = {llm_usage: "the System's LLM usage", judge_usage: "the judges' LLM usage", trials: "trials"};
  function evaluatorDetails(meta) {  // [[name, {reason, message, ...}]]: dict-valued metadata
    return Object.keys(meta || {}).filter(function (k) {
      const v = meta[k];
      if (k in USAGE) return false;
      return v && typeof v === "object" && !Array.isArray(v);
    }).map(function (k) { return [k, meta[k]]; });
  }
  function renderDetails(meta, into) {
    const found = evaluatorDetails(meta);
    found.forEach(function (pair) {
      const box = el("div", "evaluator");
      box.appendChild(el("div", "label", pair[0]));
      const d = pair[1];
      // The reason first, then the message, then the rest as "key: value".
      if (d.reason !== undefined) box.appendChild(el("div", "reason", capped(plain(d.reason))));
      if (d.message !== undefined && d.message !== null && d.message !== "") box.appendChild(el("div", "calltext", capped(plain(d.message))));
      Object.keys(d).forEach(function (k) {
        if (k === "reason" || k === "message") return;
        const line = el("div", "kv");
        line.appendChild(el("span", "key", k + ": "));
        line.appendChild(el("span", "calltext", capped(plain(d[k]))));
        box.appendChild(line);
      });
      into.appendChild(box);
    });
    return found.length;
  }
  function renderCalls(calls, omitted, into) {
    (calls || []).forEach(function (c, n) {
      const box = el("div", "call");
      box.setAttribute("data-call", String(n));
      const facts = ["call " + (n + 1), c.source || "", c.model || "(no model)"];
      const params = c.params || {};
      Object.keys(params).forEach(function (k) { facts.push(k + "=" + plain(params[k])); });
      if (c.latency !== undefined && c.latency !== null) facts.push(fmt(c.latency, "seconds"));
      if (c.cache) facts.push("cache " + c.cache);
      if (c.finish_reason) facts.push("finish " + c.finish_reason);
      const u = c.usage;
      if (u && typeof u === "object") {
        facts.push(Object.keys(u).map(function (k) { return k.replace(/_tokens$/, "") + " " + plain(u[k]); }).join(" + ") + " tokens");
      }
      const attempts = c.attempts || [];
      if (attempts.length) {
        facts.push((attempts.length === 1 ? "1 attempt: " : attempts.length + " attempts: ") + attempts.map(function (a) {
          return (a.status === null || a.status === undefined ? "no reply" : String(a.status)) + (a.error ? " (" + a.error + ")" : "");
        }).join(" \u2192 "));
      }
      box.appendChild(el("div", "callhead", facts.filter(function (f) { return f !== ""; }).join(" \u00b7 ")));
      if (c.url) box.appendChild(el("div", "note calltext", c.url));
      (c.messages || []).forEach(function (m) {
        const msg = el("div", "msg");
        msg.setAttribute("data-role", String(m.role));
        msg.appendChild(el("span", "role", m.role));
        msg.appendChild(el("div", "calltext", capped(m.text === undefined ? plain(m) : m.text)));
        box.appendChild(msg);
      });
      const reply = el("div", "msg reply");
      reply.setAttribute("data-role", "reply");
      reply.appendChild(el("span", "role", "reply"));
      reply.appendChild(el("div", "calltext", c.reply === null || c.reply === undefined ? "(no reply)" : capped(c.reply)));
      box.appendChild(reply);
      if (c.error) box.appendChild(el("div", "calltext bad", c.error));
      into.appendChild(box);
    });
    if (omitted) into.appendChild(el("p", "note", omitted + " more call record(s) not kept (the cap per row)."));
    return (calls || []).length;
  }

  // ---- run information
  const run = doc.run || {};
  const info = document.getElementById("run");
  function fact(label, value) {
    if (value === undefined || value === null || value === "") return;
    const span = el("span");
    span.appendChild(el("b", "", label + " "));
    textNode(span, value);
    info.appendChild(span);
  }
  const suites = doc.suites || [];
  fact("created", doc.created);
  fact("datasets", (run.datasets || []).map(function (d) {
    return d.tag + " (" + d.selected + " of " + d.examples + (d.selection && d.selection !== "all" ? ": " + d.selection : "") + ")";
  }).join(", ") || Array.from(new Set(suites.flatMap(function (s) { return s.datasets || []; }))).join(", "));
  fact("systems", Array.from(new Set(suites.map(function (s) { return s.system; }))).join(", "));
  fact("plugin", "pytest-context-bench " + ((doc.plugin || {}).version || "?"));
  fact("python", run.python);
  fact("pytest", run.pytest);
  fact("platform", run.platform);
  fact("xdist workers", run.xdist_workers);
  if (run.merged_from) fact("merged", run.merged_from.length + " shard report(s): " + run.merged_from.join(", "));
  if (run.invocation) fact(run.merged_from ? "merge command" : "invocation", run.invocation.join(" "));
  if (run.rescored) {
    const names = Array.from(new Set(Object.values(run.rescored.evaluators || {}).flatMap(function (evs) {
      return (evs || []).map(function (e) { return String(e.name); });
    }))).sort();
    const skipped = (run.rescored.not_rescored || []).length;
    fact("re-scored", "from " + run.rescored.from + " (" + run.rescored.kind + ") with: " + (names.join(", ") || "no evaluator")
      + (skipped ? "; " + skipped + " row(s) not re-scored (answer not kept whole)" : ""));
  }

  // ---- gates first
  const gates = doc.gates || [];
  const comparison = doc.baseline_comparison || null;
  const drops = comparison ? (comparison.metrics || []).filter(function (m) { return m.tolerance; }) : [];
  const extra = comparison ? (comparison.unevaluated || []).concat(comparison.changed_examples || []) : [];
  // A gate not enforced (its judge disagrees with people's labels) is shown, not counted.
  function applied(g) { return g.enforced !== false; }
  const unenforced = gates.filter(function (g) { return !applied(g); }).length
    + drops.filter(function (m) { return !applied(m); }).length;
  const failed = gates.filter(function (g) { return applied(g) && !g.passed; }).length
    + drops.filter(function (m) { return applied(m) && !m.passed; }).length + extra.length;
  const total = gates.length + drops.length + extra.length - unenforced;
  const banner = document.getElementById("verdict");
  const notApplied = unenforced ? " (" + unenforced + " gate(s) not enforced: the judge's agreement with the labels is too low)" : "";
  if (!total && !unenforced) {
    banner.appendChild(el("div", "banner none", "No gate configured."));
  } else if (failed) {
    banner.appendChild(el("div", "banner bad", failed + " of " + total + " gate(s) breached"
      + (doc.gates_enforced === false ? " (not enforced: --ctxbench-no-gate)" : ": the run fails") + notApplied));
  } else {
    banner.appendChild(el("div", "banner ok", "All " + total + " gate(s) met" + notApplied));
  }
  // A breached gate links to its suite's failing examples (one click: the example
  // table shows them, each row expands to its calls and details).
  function verdictCell(passed, suite, gate) {
    if (gate && gate.enforced === false) {
      const box = el("span");
      box.appendChild(el("span", "warn", "not enforced (" + (passed ? "would pass" : "would fail") + ")"));
      box.appendChild(el("br"));
      box.appendChild(el("span", "mut", String(gate.not_enforced || "")));
      return box;
    }
    const cell = el("span", passed ? "ok" : "bad", passed ? "met" : "breached");
    if (passed) return cell;
    const n = (doc.rows || []).filter(function (r) {
      return String(r.suite) === String(suite) && (r.status === "below" || r.status === "error");
    }).length;
    if (!n) return cell;
    const box = el("span");
    box.appendChild(cell);
    box.appendChild(el("br"));
    const a = el("a", "failing", n + " failing example" + (n === 1 ? "" : "s") + " \u2192");
    a.href = "#examples";
    a.setAttribute("data-failing", String(suite));
    box.appendChild(a);
    return box;
  }
  if (total || unenforced) {
    const rows = gates.map(function (g) {
      return [verdictCell(g.passed, g.suite, g), breakable(String(g.suite)), g.gate,
              fmt(g.value), g.op + " " + fmt(g.limit)];
    }).concat(drops.map(function (m) {
      return [verdictCell(m.passed, m.suite, m), breakable(String(m.suite)),
              "max drop of " + m.metric, fmt(m.now), m.tolerance + " below the baseline's " + fmt(m.then)];
    })).concat(extra.map(function (line) {
      return [el("span", "bad", "breached"), line, "baseline", "", ""];
    }));
    document.getElementById("gate-table").appendChild(
      table(["verdict", "suite", "gate", "value", "limit"], rows, [false, false, false, true, false]));
  }
  // ---- the judge's agreement with people's labels (--ctxbench-judge-labels)
  const agreement = doc.judge_agreement || null;
  if (agreement) {
    const box = document.getElementById("gate-table");
    const name = String(agreement.labels).split("/").pop();
    box.appendChild(el("h3", "", "Judge agreement with " + name
      + (agreement.min_kappa === null || agreement.min_kappa === undefined ? ""
         : " (judge-scored gates need kappa \u2265 " + agreement.min_kappa + ")")));
    box.appendChild(table(["suite", "n", "agreement", "kappa", "weighted kappa", "gates"],
      (agreement.suites || []).map(function (x) {
        return [breakable(String(x.suite)), String(x.n), fmt(x.agreement), fmt(x.kappa),
                x.weighted_kappa === undefined ? "" : fmt(x.weighted_kappa),
                x.not_enforced ? el("span", "warn", "not enforced: " + x.not_enforced)
                  : (x.judge_scored ? "enforced" : "not judge-scored")];
      }), [false, true, true, true, true, false]));
  }

  // ---- summary table
  // The terminal's and the Markdown's columns (cost $ and $ per pass when priced).
  const COLUMNS = DATA.columns || [];
  const CELLS = DATA.cells || {};
  const summary = doc.summary || {};
  const labels = Object.keys(summary);
  const present = COLUMNS.filter(function (c) { return labels.some(function (l) { return c[0] in summary[l]; }); });
  const intervals = doc.intervals || {};
  const summaryRows = labels.map(function (label) {
    return [breakable(label)].concat(present.map(function (c) {
      // The texts the terminal prints, formatted by the report's writer.
      const given = (CELLS[label] || {})[c[0]];
      const text = given ? given[0] : fmt(summary[label][c[0]], c[2]);
      const ci = given ? given[1] : "";
      if (!ci) return text;
      // The interval under the value, so that the table fits a laptop's width.
      const cell = el("span", "", text);
      cell.appendChild(el("br"));
      cell.appendChild(el("span", "ci", ci));
      return cell;
    }));
  });
  const st = table(["suite"].concat(present.map(function (c) {
    return c[1] + (c[0] === "mean_score" || c[0] === "pass_rate" ? " [95% CI]" : "");
  })), summaryRows, [false].concat(present.map(function () { return true; })));
  st.id = "summary-grid";
  st.querySelectorAll("tbody tr").forEach(function (tr, i) { tr.setAttribute("data-suite", labels[i]); });
  document.getElementById("summary-table").appendChild(st);
  document.getElementById("legend").textContent =
    ["pass = the primary score \u2265 the suite's threshold; intervals are 95% intervals of the mean"
     + " (Wilson for rates and scores in [0, 1], Student's t otherwise)"].concat(DATA.legend || []).join(". ") + ".";

  // ---- the run's LLM section (the terminal's lines)
  (function () {
    const given = DATA.llm_lines || [];
    if (!given.length) return;
    const list = document.getElementById("llm-lines");
    given.forEach(function (pair) {
      const li = el("li", pair[1] || "");
      textNode(li, pair[0]);
      list.appendChild(li);
    });
    document.getElementById("llm").hidden = false;
  })();

  // ---- Pareto plot: mean score (up) against tokens per pass (left is cheaper)
  (function () {
    const pts = labels.map(function (l) {
      return {label: l, q: num(summary[l].mean_score), c: num(summary[l].cost_of_pass), rank: num(summary[l].pareto_rank)};
    }).filter(function (p) { return Number.isFinite(p.q); });
    const box = document.getElementById("pareto");
    if (!pts.length) { box.appendChild(el("p", "note", "No scored suite.")); return; }
    const W = 420, H = 280, L = 52, R = 16, T = 14, B = 40;
    const finite = pts.filter(function (p) { return Number.isFinite(p.c); }).map(function (p) { return p.c; });
    let cmax = finite.length ? Math.max.apply(null, finite) : 1;
    if (cmax <= 0) cmax = 1;
    const xmax = cmax * 1.15;
    const s = svg("svg", {viewBox: "0 0 " + W + " " + H, width: W, height: H, role: "img", "aria-label": "mean score against text tokens per pass"});
    const x = function (c) { return L + (Number.isFinite(c) ? Math.max(c, 0) / xmax : 1) * (W - L - R); };
    const y = function (q) { return T + (1 - Math.min(Math.max(q, 0), 1)) * (H - T - B); };
    s.appendChild(svg("line", {x1: L, y1: H - B, x2: W - R, y2: H - B, stroke: "#8c959f"}));
    s.appendChild(svg("line", {x1: L, y1: T, x2: L, y2: H - B, stroke: "#8c959f"}));
    [0, 0.25, 0.5, 0.75, 1].forEach(function (v) {
      s.appendChild(svg("line", {x1: L - 4, y1: y(v), x2: W - R, y2: y(v), stroke: "#eaeef2"}));
      s.appendChild(svg("text", {x: L - 6, y: y(v) + 4, "text-anchor": "end", fill: "#57606a"}, v.toFixed(2)));
    });
    [0, 0.5, 1].forEach(function (f) {
      s.appendChild(svg("text", {x: L + f * (W - L - R) / 1.15, y: H - B + 14, "text-anchor": "middle", fill: "#57606a"}, fmt(f * cmax, "tokens")));
    });
    s.appendChild(svg("text", {x: (L + W - R) / 2, y: H - 6, "text-anchor": "middle", fill: "#1f2328"}, "text tokens per pass (cost of pass) \u2192"));
    s.appendChild(svg("text", {x: 12, y: (T + H - B) / 2, transform: "rotate(-90 12 " + (T + H - B) / 2 + ")", "text-anchor": "middle", fill: "#1f2328"}, "mean score (quality) \u2192"));
    const front = pts.filter(function (p) { return p.rank === 1; }).sort(function (a, b) { return a.c - b.c; });
    if (front.length > 1) {
      s.appendChild(svg("polyline", {points: front.map(function (p) { return x(p.c) + "," + y(p.q); }).join(" "), fill: "none", stroke: "#0969da", "stroke-dasharray": "4 3"}));
    }
    const placed = [];
    pts.slice().sort(function (a, b) { return b.q - a.q || a.c - b.c; }).forEach(function (p) {
      // Labels of nearby points are moved apart so they stay readable.
      const clash = function (at) {
        return placed.some(function (o) { return Math.abs(o.y - at) < 13 && Math.abs(o.x - x(p.c)) < 160; });
      };
      let ly = y(p.q) - 8;
      if (clash(ly)) ly = y(p.q) + 20;  // below its own point
      while (clash(ly)) ly += 13;
      placed.push({x: x(p.c), y: ly});
      p.ly = ly;
    });
    pts.forEach(function (p) {
      const g = svg("g", {"data-suite": p.label});
      g.appendChild(svg("circle", {cx: x(p.c), cy: y(p.q), r: 6, fill: p.rank === 1 ? "#0969da" : "#8c959f"}));
      const right = x(p.c) > W * 0.6;
      const short = p.label.length > 28 ? p.label.slice(0, 27) + "\u2026" : p.label;
      g.appendChild(svg("text", {x: x(p.c) + (right ? -8 : 8), y: p.ly, "text-anchor": right ? "end" : "start", fill: "#1f2328"},
        short + (Number.isFinite(p.c) ? "" : " (nothing passed: cost inf)")));
      g.appendChild(svg("title", {}, p.label + ": mean score " + fmt(p.q) + ", text tokens per pass " + fmt(p.c, "tokens")));
      s.appendChild(g);
    });
    box.appendChild(s);
    box.appendChild(el("p", "note", "Blue: the Pareto front (rank 1): no other suite is both better and cheaper."));
  })();

  // ---- mean score per dataset
  (function () {
    const box = document.getElementById("datasets");
    const keys = Array.from(new Set(labels.flatMap(function (l) {
      return Object.keys(summary[l]).filter(function (k) { return k.indexOf("dataset:") === 0; });
    }))).sort();
    let rows;
    if (keys.length) {
      rows = [];
      labels.forEach(function (l) {
        keys.forEach(function (k) { if (k in summary[l]) rows.push([l, k.slice(8), num(summary[l][k])]); });
      });
    } else {
      rows = labels.map(function (l) {
        const s = suites.find(function (x) { return x.label === l; }) || {};
        return [l, (s.datasets || []).join(", "), num(summary[l].mean_score)];
      });
    }
    const t = table(["suite", "dataset", "mean score", ""], rows.map(function (r) {
      const bar = el("div");
      const w = Number.isFinite(r[2]) ? Math.max(0, Math.min(1, r[2])) * 100 : 0;
      bar.setAttribute("style", "background:#0969da;height:10px;width:" + w.toFixed(1) + "%;min-width:1px");
      const cell = el("div"); cell.setAttribute("style", "width:90px;background:#eaeef2"); cell.appendChild(bar);
      return [breakable(String(r[0])), breakable(String(r[1])), fmt(r[2]), cell];
    }), [false, false, true, false]);
    t.id = "dataset-grid";
    box.appendChild(t);
  })();

  // ---- assertions: named metrics and the pass rate of each type, per suite
  (function () {
    const rows = [];
    labels.forEach(function (l) {
      Object.keys(summary[l]).sort().forEach(function (k) {
        if (k.indexOf("metric:") === 0) rows.push([l, "metric " + k.slice(7), num(summary[l][k])]);
      });
      Object.keys(summary[l]).sort().forEach(function (k) {
        if (k.indexOf("assert_type:") === 0) rows.push([l, k.slice(12) + " passed", num(summary[l][k])]);
      });
    });
    if (!rows.length) return;
    const box = document.getElementById("assertions");
    box.hidden = false;
    const t = table(["suite", "assertions", "value"], rows.map(function (r) {
      return [breakable(String(r[0])), breakable(String(r[1])), fmt(r[2])];
    }), [false, false, true]);
    t.id = "assertion-table";
    document.getElementById("assertion-grid").appendChild(t);
  })();

  // ---- latency distribution (per suite: a histogram over shared bins)
  const rowsAll = doc.rows || [];
  (function () {
    const box = document.getElementById("latency");
    const lat = rowsAll.filter(function (r) { return !r.error && Number.isFinite(num(r.latency)); });
    if (!lat.length) { box.appendChild(el("p", "note", "No latency measured.")); return; }
    const values = lat.map(function (r) { return num(r.latency); }).sort(function (a, b) { return a - b; });
    const top = values[Math.min(values.length - 1, Math.floor(values.length * 0.99))] || values[values.length - 1];
    const hi = top > 0 ? top * 1.05 : 1;
    const lo = Math.max(values[0], 1e-9);
    // Latencies spanning orders of magnitude (a local function next to an HTTP
    // endpoint) get logarithmic bins, else one suite would be a single bar.
    const logScale = hi / lo > 20;
    const pos = function (v) {
      if (!logScale) return v / hi;
      return (Math.log(Math.max(v, lo)) - Math.log(lo)) / (Math.log(hi) - Math.log(lo));
    };
    const BINS = 24, W = 420, rowH = 46, L = 110;
    const H = labels.length * rowH + 26;
    const s = svg("svg", {viewBox: "0 0 " + W + " " + H, width: W, height: H, role: "img", "aria-label": "latency distribution"});
    labels.forEach(function (label, i) {
      const mine = lat.filter(function (r) { return r.suite === label; }).map(function (r) { return num(r.latency); });
      const counts = new Array(BINS).fill(0);
      mine.forEach(function (v) { counts[Math.max(0, Math.min(BINS - 1, Math.floor(pos(v) * BINS)))] += 1; });
      const most = Math.max.apply(null, counts.concat([1]));
      const y0 = i * rowH + 8;
      s.appendChild(svg("text", {x: L - 6, y: y0 + 22, "text-anchor": "end", fill: "#1f2328"}, label.length > 16 ? label.slice(0, 15) + "\u2026" : label));
      counts.forEach(function (c, b) {
        if (!c) return;
        const h = c / most * (rowH - 14);
        const rect = svg("rect", {x: L + b * (W - L - 8) / BINS, y: y0 + (rowH - 14) - h, width: (W - L - 8) / BINS - 1, height: h, fill: "#54aeff"});
        rect.appendChild(svg("title", {}, c + " example(s)"));
        s.appendChild(rect);
      });
    });
    const yb = labels.length * rowH + 6;
    s.appendChild(svg("line", {x1: L, y1: yb - 4, x2: W - 8, y2: yb - 4, stroke: "#8c959f"}));
    s.appendChild(svg("text", {x: L, y: yb + 12, fill: "#57606a"}, logScale ? fmt(lo, "seconds") : "0"));
    s.appendChild(svg("text", {x: W - 8, y: yb + 12, "text-anchor": "end", fill: "#57606a"},
      fmt(hi, "seconds") + (logScale ? " (log scale)" : " (p99 + 5%)")));
    box.appendChild(s);
  })();

  // ---- comparison with another run: metrics, then the flipped examples side by side
  if (diff) {
    const sec = document.getElementById("comparison");
    sec.hidden = false;
    const head = sec.querySelector("h2");
    head.textContent = "";
    textNode(head, "Compared with " + (diff.base || "the baseline"));
    if (diff.verdict) {
      // ctxbench compare: the page opens with its verdict, the comparison first.
      const main = document.querySelector("main");
      main.insertBefore(sec, main.firstChild);
      const v = el("div", "banner " + (diff.verdict.worse ? "bad" : "ok"), diff.verdict.text);
      v.id = "compare-verdict";
      sec.insertBefore(v, head);
    }
    (diff.notes || []).forEach(function (n) { sec.insertBefore(el("p", "note", n), document.getElementById("diff-table")); });
    function flag(m) {  // the terminal's verdict column: WORSE (red), slower
      if (m.flag) return el("span", m.flag === "WORSE" ? "bad" : "warn", m.flag);
      if (m.tolerance) return el("span", m.passed ? "ok" : "bad", "max-drop " + m.tolerance + ": " + (m.passed ? "met" : "breached"));
      return "";
    }
    const dt = table(
      ["suite", "metric", diff.base_label || "before", diff.head_label || "after", "change", "two-sided 95% CI", "one-sided p (worse)", "verdict"],
      (diff.metrics || []).map(function (m) {
        return [breakable(String(m.suite)), m.metric, fmt(m.then), fmt(m.now), fmt(m.change),
                "[" + fmt(m.ci_low) + ", " + fmt(m.ci_high) + "]", fmt(m.p_value), flag(m)];
      }), [false, false, true, true, true, true, true, false]);
    dt.id = "diff-grid";
    dt.querySelectorAll("tbody tr").forEach(function (tr, i) {
      const m = diff.metrics[i];
      if (m.flag === "WORSE" || (m.tolerance && !m.passed)) tr.className = "worse";
    });
    document.getElementById("diff-table").appendChild(dt);
    const flipped = diff.flipped || [];
    const box = document.getElementById("flipped");
    box.appendChild(el("h3", "", "Flipped examples (" + flipped.length + ")"));
    if (!flipped.length) box.appendChild(el("p", "note", "No example changed between pass and fail."));
    const t = table(["suite", "example", "change", diff.base_label || "before", diff.head_label || "after", "reference"],
      flipped.map(function (f) {
        const a = el("div", "text"); textNode(a, f.response_before === null || f.response_before === undefined ? "(not kept)" : f.response_before);
        a.insertBefore(el("div", "note", f.before + ", score " + fmt(f.score_before)), a.firstChild);
        const b = el("div", "text"); textNode(b, f.response_after === null || f.response_after === undefined ? "(not kept)" : f.response_after);
        b.insertBefore(el("div", "note", f.after + ", score " + fmt(f.score_after)), b.firstChild);
        let name = breakable(f.dataset + "/" + f.example_id);
        if (typeof f.row_index === "number") {  // the example's row below: calls and details
          const link = el("a");
          link.href = "#ex-" + f.row_index;
          link.appendChild(name);
          name = link;
        }
        const change = el("div");
        change.appendChild(el("span", f.after === "pass" ? "ok" : "bad", f.before + " \u2192 " + f.after));
        if (f.pairwise) {  // ctxbench compare --judge-url: the pairwise judge's verdict
          change.appendChild(el("div", f.pairwise.consistent === false ? "note warn" : "note",
            "pairwise judge: " + String(f.pairwise.error || f.pairwise.verdict)));
        }
        return [breakable(String(f.suite)), name, change, a, b,
                el("div", "text", f.reference)];
      }));
    t.id = "flipped-table";
    // Both runs' call records (and evaluator details) side by side, under the example.
    const trs = Array.from(t.tBodies[0].rows);
    flipped.forEach(function (f, i) {
      const sides = [[diff.base_label || "before", f.calls_before, f.calls_omitted_before, f.details_before],
                     [diff.head_label || "after", f.calls_after, f.calls_omitted_after, f.details_after]];
      // When both reports kept the example's calls (else its row below has B's).
      if (!sides.every(function (x) { return (x[1] && x[1].length) || x[2]; })) return;
      const tr = t.tBodies[0].insertRow(trs[i].sectionRowIndex + 1);
      tr.className = "calls-side";
      const cell = tr.insertCell();
      cell.colSpan = 6;
      const grid = el("div", "side");
      sides.forEach(function (x) {
        const col = el("div", "side-col");
        col.appendChild(el("h4", "", x[0]));
        renderDetails(x[3], col);
        if (!renderCalls(x[1], x[2], col) && !x[2]) col.appendChild(el("p", "note", "No call record in this report."));
        grid.appendChild(col);
      });
      cell.appendChild(grid);
    });
    box.appendChild(t);
  }

  // ---- the examples: sortable, filtered by status, searchable, one page at a time
  const thresholds = {};
  suites.forEach(function (s) { thresholds[s.label] = num(s.threshold); });
  const rows = rowsAll.map(function (r, i) {
    const meta = r.metadata || {};
    const field = meta.score_field;
    const score = r.error ? 0 : (r.scores && field in r.scores ? num(r.scores[field]) : NaN);
    const details = [];  // every key: searched
    const brief = [];  // each evaluator's reason: shown in the column (the row expands to the rest)
    Object.keys(meta).forEach(function (k) {
      const v = meta[k];
      if (v && typeof v === "object" && !Array.isArray(v) && !(k in USAGE)) {
        const pairs = Object.keys(v).map(function (x) {
          const val = v[x];
          return x + "=" + (typeof val === "object" ? JSON.stringify(val) : String(val));
        });
        details.push(k + ": " + pairs.join(", "));
        let why = typeof v.reason === "string" && v.reason ? v.reason : pairs.slice(0, 2).join(", ");
        if (k === "adaptive" && typeof v.trials === "number") {  // adaptive trials: which trial of how many
          why = v.trials > 1 ? "trial " + (num(meta.trial) || 1) + " of " + v.trials + " (asked again)"
                             : "1 trial (not asked again)";
        }
        const line = k + ": " + why;
        brief.push(line.length > 160 ? line.slice(0, 159) + "…" : line);
      }
    });
    const err = r.error ? r.error.type + ": " + r.error.message + (r.error.where ? " (in " + r.error.where + ")" : "") : "";
    const haystack = [r.example_id, r.dataset, r.suite, r.system, r.status, r.response, r.tool_calls, r.reference, err, details.join(" ")]
      .join("\u0000").toLowerCase();
    return {i: i, r: r, score: score, field: field, details: brief.join("\n"), err: err, hay: haystack};
  });
  const STATUSES = ["pass", "below", "error", "unscored"];
  const counts = {};
  rows.forEach(function (x) { counts[x.r.status] = (counts[x.r.status] || 0) + 1; });
  const state = {status: "all", suite: null, query: "", sort: "order", dir: 1, page: 0, open: {}};
  const filter = document.getElementById("status-filter");
  ["all"].concat(STATUSES.filter(function (s) { return counts[s]; })).forEach(function (s) {
    const b = el("button", "", s + " (" + (s === "all" ? rows.length : counts[s]) + ")");
    b.type = "button";
    b.setAttribute("data-status", s);
    b.setAttribute("aria-pressed", s === state.status ? "true" : "false");
    b.addEventListener("click", function () {
      state.status = s; state.suite = null; state.page = 0;
      pressed();
      draw();
    });
    filter.appendChild(b);
  });
  function pressed() {
    filter.querySelectorAll("button").forEach(function (x) {
      x.setAttribute("aria-pressed", x.getAttribute("data-status") === state.status ? "true" : "false");
    });
  }
  // A gate's failing examples: that suite's rows below threshold or in error.
  const scope = el("span", "scope");
  scope.id = "scope";
  scope.hidden = true;
  filter.parentNode.insertBefore(scope, filter.nextSibling);
  function showFailing(suite) {
    state.status = "failing"; state.suite = suite; state.page = 0; state.query = "";
    search.value = "";
    pressed();
    draw();
    document.getElementById("examples").scrollIntoView();
  }
  const search = document.getElementById("search");
  search.addEventListener("input", function () { state.query = search.value.toLowerCase(); state.page = 0; draw(); });
  const COLS = [
    ["id", "example", function (x) { return x.r.dataset + "/" + x.r.example_id; }],
    ["suite", "suite", function (x) { return x.r.suite; }],
    ["status", "status", function (x) { return STATUSES.indexOf(x.r.status); }],
    ["score", "score", function (x) { return Number.isNaN(x.score) ? -Infinity : x.score; }],
    ["latency", "latency", function (x) { return num(x.r.latency); }],
    ["response", "response", null], ["reference", "reference", null], ["details", "evaluator details / error", null]];
  const ex = document.getElementById("example-table");
  const headRow = ex.tHead.insertRow();
  COLS.forEach(function (c) {
    const th = el("th", c[2] ? "sortable" : "", c[1]);
    th.setAttribute("data-col", c[0]);
    if (c[2]) {
      th.title = "sort by " + c[1];
      th.addEventListener("click", function () {
        state.dir = state.sort === c[0] ? -state.dir : 1;
        state.sort = c[0]; state.page = 0; draw();
      });
    }
    headRow.appendChild(th);
  });
  function statusMatches(x) {
    if (state.status === "failing") return x.r.status === "below" || x.r.status === "error";
    return state.status === "all" || x.r.status === state.status;
  }
  function selected() {
    let out = rows.filter(function (x) {
      return statusMatches(x) && (state.suite === null || String(x.r.suite) === state.suite)
        && (!state.query || x.hay.indexOf(state.query) >= 0);
    });
    if (state.sort !== "order") {
      const key = COLS.find(function (c) { return c[0] === state.sort; })[2];
      out = out.slice().sort(function (a, b) {
        const ka = key(a), kb = key(b);
        return (ka < kb ? -1 : ka > kb ? 1 : a.i - b.i) * state.dir;
      });
    }
    return out;
  }
  function draw() {
    const chosen = selected();
    const pages = Math.max(1, Math.ceil(chosen.length / PAGE));
    state.page = Math.min(state.page, pages - 1);
    const start = state.page * PAGE;
    const body = ex.tBodies[0];
    const fresh = document.createElement("tbody");
    chosen.slice(start, start + PAGE).forEach(function (x) {
      const tr = fresh.insertRow();
      tr.setAttribute("data-status", x.r.status);
      tr.id = "ex-" + x.i;
      const r = x.r;
      const trial = r.metadata && r.metadata.trial ? " @" + r.metadata.trial : "";
      const first = tr.insertCell();
      const open = !!state.open[x.i];
      // The arrow is drawn by CSS: the cell's text stays the example's id.
      const toggle = el("button", "toggle");
      toggle.type = "button";
      toggle.setAttribute("aria-expanded", open ? "true" : "false");
      toggle.setAttribute("aria-controls", "more-" + x.i);
      toggle.title = (open ? "hide" : "show") + " this example's LLM calls and evaluator details";
      toggle.setAttribute("aria-label", toggle.title);
      toggle.addEventListener("click", function () {
        if (state.open[x.i]) delete state.open[x.i]; else state.open[x.i] = true;
        draw();
      });
      first.appendChild(toggle);
      first.appendChild(breakable(r.dataset + "/" + r.example_id + trial));
      tr.insertCell().appendChild(breakable(String(r.suite)));
      tr.insertCell().appendChild(el("span", "status-" + r.status, r.status));
      const sc = tr.insertCell(); sc.className = "num";
      textNode(sc, (x.field ? x.field + " " : "") + fmt(x.score));
      const lt = tr.insertCell(); lt.className = "num"; textNode(lt, fmt(r.latency, "seconds"));
      const rc = tr.insertCell();
      rc.appendChild(el("div", "text", r.response === undefined ? "" : r.response));
      if (r.tool_calls) rc.appendChild(el("div", "text note", "tool calls: " + r.tool_calls));
      tr.insertCell().appendChild(el("div", "text", r.reference === undefined ? "" : r.reference));
      const d = tr.insertCell();
      if (x.err) d.appendChild(el("div", "text bad", x.err));
      if (x.details) d.appendChild(el("div", "text", x.details));
      if (r.calls && r.calls.length) d.appendChild(el("div", "note", r.calls.length + " LLM call(s): \u25b8 shows them"));
      if (open) {
        const more = fresh.insertRow();
        more.className = "more";
        more.id = "more-" + x.i;
        const cell = more.insertCell();
        cell.colSpan = COLS.length;
        expanded(x, cell);
      }
    });
    body.replaceWith(fresh);
    scope.hidden = state.suite === null && state.status !== "failing";
    scope.textContent = "";
    if (!scope.hidden) {
      textNode(scope, (state.status === "failing" ? "examples below threshold or in error" : state.status)
        + (state.suite === null ? "" : " of suite " + state.suite) + " ");
      const all = el("button", "", "show all");
      all.type = "button";
      all.addEventListener("click", function () { state.status = "all"; state.suite = null; state.page = 0; pressed(); draw(); });
      scope.appendChild(all);
    }
    document.getElementById("page-info").textContent = chosen.length
      ? "showing " + (start + 1).toLocaleString("en-US") + "\u2013" + Math.min(start + PAGE, chosen.length).toLocaleString("en-US")
        + " of " + chosen.length.toLocaleString("en-US") + " (page " + (state.page + 1) + " of " + pages + ")"
      : "no example matches";
    document.getElementById("prev").disabled = state.page === 0;
    document.getElementById("next").disabled = state.page >= pages - 1;
    ex.tHead.querySelectorAll("th").forEach(function (th) {
      th.setAttribute("aria-sort", th.getAttribute("data-col") === state.sort ? (state.dir > 0 ? "ascending" : "descending") : "none");
    });
  }
  // An expanded row: the evaluators' details (reason first), the error, the calls.
  function expanded(x, td) {
    const r = x.r;
    // Kept on the screen when the table is wider than it (a phone): it stays at
    // the left of the table's scrolling box, as wide as the screen.
    const cell = el("div", "morebox");
    td.appendChild(cell);
    cell.appendChild(el("h4", "", "Evaluator details"));
    if (!renderDetails(r.metadata, cell)) cell.appendChild(el("p", "note", "No evaluator detail for this example."));
    if (x.err) {
      cell.appendChild(el("h4", "", "Error"));
      cell.appendChild(el("div", "calltext bad", capped(x.err)));
    }
    const calls = r.calls || [];
    cell.appendChild(el("h4", "", "LLM calls (" + (calls.length + (r.calls_omitted || 0)) + ")"));
    ["llm_usage", "judge_usage"].forEach(function (k) {
      const v = (r.metadata || {})[k];
      if (v && typeof v === "object") cell.appendChild(el("p", "note", USAGE[k] + ": " + plain(v)));
    });
    if (!renderCalls(calls, r.calls_omitted, cell) && !r.calls_omitted) {
      cell.appendChild(el("p", "note", "No call record kept for this example (by default they are kept for failing"
        + " examples only: --ctxbench-transcripts=all keeps every example's)."));
    }
  }
  // A link to "#ex-N" (the flipped examples, a gate) opens row N of the report,
  // on its page, whatever the filter.
  function reveal() {
    const m = /^#ex-(\d+)$/.exec(window.location.hash);
    if (!m) return;
    const i = Number(m[1]);
    if (!(i >= 0 && i < rows.length)) return;
    state.status = "all"; state.suite = null; state.query = ""; search.value = "";
    pressed();
    const at = selected().findIndex(function (x) { return x.i === i; });
    state.page = Math.max(0, Math.floor(at / PAGE));
    state.open[i] = true;
    draw();
    const tr = document.getElementById("ex-" + i);
    if (tr) { tr.scrollIntoView(); tr.classList.add("target"); }
  }
  window.addEventListener("hashchange", reveal);
  document.getElementById("prev").addEventListener("click", function () { state.page -= 1; draw(); });
  document.getElementById("next").addEventListener("click", function () { state.page += 1; draw(); });
  draw();
  reveal();
  document.querySelectorAll("[data-failing]").forEach(function (a) {
    a.addEventListener("click", function (e) { e.preventDefault(); showFailing(a.getAttribute("data-failing")); });
  });
  if (doc.lost && doc.lost.length) {
    const sec = document.getElementById("examples");
    sec.appendChild(el("p", "bad", doc.lost.length + " example(s) produced no row (crashed or failed before scoring): "
      + doc.lost.slice(0, 20).join(", ") + (doc.lost.length > 20 ? " \u2026" : "")));
  }

  // ---- footer: what this file is
  const bytes = new TextEncoder().encode(document.documentElement.outerHTML).length;
  document.getElementById("footer").textContent = "Self-contained report: " + rows.length.toLocaleString("en-US")
    + " rows embedded as JSON, shown " + PAGE + " per page; about " + (bytes / 1024).toFixed(0)
    + " KiB; no network request. Generated by pytest-context-bench " + ((doc.plugin || {}).version || "") + ".";
  document.body.setAttribute("data-ready", "1");
})();
"""
