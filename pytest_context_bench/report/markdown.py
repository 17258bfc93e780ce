"""The Markdown view of a JSON report: for a CI step summary or a pull-request comment.

It shows, in this order: a verdict line, the gates with their verdicts, the summary
table, the baseline comparison and the flipped examples (when there is one), and the
worst examples (errors first, then the lowest scores) with a reason each. It is sized
for a comment: at most :data:`WORST_SHOWN` examples and :data:`FLIPPED_SHOWN` ids per
list, cells clipped, the whole kept under GitHub's 65,536-character comment limit.

Everything that comes from a dataset, a System or a model is escaped: Markdown's
own characters are backslash-escaped and ``<``, ``>``, ``&`` become entities, so an
id or a response can neither format the page nor inject HTML.

Pure: reads the document :func:`~pytest_context_bench.report.to_json_dict` returns
(or a JSON report read back from disk).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

from .._text import inert
from .rows import below_text
from .llm_section import report_llm_lines
from .terminal import COLUMNS, fmt_value, summary_legend

__all__ = [
    "FLIPPED_SHOWN",
    "MAX_CHARS",
    "WORST_SHOWN",
    "md_escape",
    "render_compare_markdown",
    "render_markdown",
]

WORST_SHOWN = 10
FLIPPED_SHOWN = 20
#: GitHub refuses longer comments; the summary stays below this.
MAX_CHARS = 60_000
_CELL = 120
_REASON = 600  # characters of a worst example's reason (with its details)

_SPECIAL = re.compile(r"([\\`*_\[\]|~$])")
# An @ that GitHub could read as a mention of a user or a team (@name, @org/team).
_MENTION = re.compile(r"(?<!\w)@(?=[A-Za-z0-9])")


def md_escape(value: Any, limit: int | None = _CELL) -> str:
    """``value`` as inert Markdown text for one table cell or line: no formatting,
    no HTML, no terminal control or direction character (shown as ``\\x1b``,
    ``\\u202e``), and no ``@mention`` (a zero-width space follows the ``@``, as
    Dependabot writes them, so GitHub notifies nobody; the text still reads
    ``@name``)."""
    text = " ".join(str(value).split())  # no newline may end a table row
    if limit is not None and len(text) > limit:
        text = text[: limit - 1] + "…"
    text = inert(text)
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    text = _MENTION.sub("@\u200b", text)
    return _SPECIAL.sub(r"\\\1", text)


def _num(value: Any, kind: str = "score") -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        try:
            value = float(value)
        except ValueError:
            return md_escape(value)
    return fmt_value(float(value), kind)


def _table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    out = [
        "| " + " | ".join(headers) + " |",
        "|" + "|".join("---" for _ in headers) + "|",
    ]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return out


def _float(x: Any) -> float:
    try:
        return float(x)
    except (TypeError, ValueError):
        return math.nan


def _row_score(row: Mapping[str, Any]) -> float | None:
    if row.get("error"):
        return 0.0
    field = (row.get("metadata") or {}).get("score_field")
    value = (row.get("scores") or {}).get(field)
    return None if value is None else _float(value)


def row_reason(row: Mapping[str, Any], threshold: float) -> str:
    """One line: the error, or the score against the threshold and the evaluators'
    details (docs/evaluators.md): the reason, the message, then ``key: value``
    pairs, the evaluator of the primary score first."""
    err = row.get("error")
    if err:
        where = err.get("where")
        return f"{err.get('type')}: {err.get('message')}" + (
            f" (in {where})" if where else ""
        )
    meta = row.get("metadata") or {}
    field = meta.get("score_field") or "score"
    score = _row_score(row)
    parts = [
        below_text(row.get("scores") or {}, field, threshold, _num)
        if score is not None
        else f"no {field} score"
    ]
    from ..details import explain_lines

    for level, text in explain_lines(meta, meta.get("score_field"), limit=120):
        if level == 0:
            parts.append(text)
        else:  # the message and the other keys, after their evaluator's reason
            parts[-1] += " · " + text
    return "; ".join(parts)


def _verdict_line(doc: Mapping[str, Any]) -> str:
    # A partial suite's gates (beside complete suites) are shown, not applied.
    partial = (doc.get("completeness") or {}).get("partial_suites") or {}
    gates = [g for g in doc.get("gates", []) if g.get("suite") not in partial]
    skipped = len(doc.get("gates", [])) - len(gates)
    line = _gates_line(doc, gates)
    if skipped:
        line += f" ({skipped} gate(s) of partial suites not applied)"
    return line


def _gates_line(doc: Mapping[str, Any], gates: list[Any]) -> str:
    drops = [
        m
        for m in (doc.get("baseline_comparison") or {}).get("metrics", [])
        if m.get("tolerance")
    ]
    # A gate not enforced (its judge disagrees with people's labels) is shown in the
    # table, not counted here.
    unenforced = sum(g.get("enforced") is False for g in gates) + sum(
        m.get("enforced") is False for m in drops)
    gates = [g for g in gates if g.get("enforced") is not False]
    drops = [m for m in drops if m.get("enforced") is not False]
    line = _applied_line(doc, gates, drops)
    if unenforced:
        line += f" ({unenforced} gate(s) not enforced: the judge's agreement with the labels is too low)"
    return line


def _applied_line(doc: Mapping[str, Any], gates: list[Any], drops: list[Any]) -> str:
    failed = sum(not g.get("passed") for g in gates) + sum(
        not m.get("passed") for m in drops
    )
    extra = len((doc.get("baseline_comparison") or {}).get("unevaluated", [])) + len(
        (doc.get("baseline_comparison") or {}).get("changed_examples", [])
    )
    failed += extra
    total = len(gates) + len(drops) + extra
    enforced = doc.get("gates_enforced", True)
    if not total:
        return "**No gate configured.**"
    if failed:
        note = "" if enforced else " (not enforced: `--ctxbench-no-gate`)"
        return f"❌ **{failed} of {total} gate(s) breached**{note}"
    return f"✅ **All {total} gate(s) met**"


def _gate_verdict(g: Mapping[str, Any]) -> str:
    """A gate's verdict cell; one not enforced says why (the reason is data: the
    labels file's name)."""
    if g.get("enforced") is False:
        would = "would pass" if g.get("passed") else "would fail"
        return f"⚠️ not enforced ({would}): {md_escape(g.get('not_enforced'))}"
    return "✅ met" if g.get("passed") else "❌ breached"


def _agreement_lines(doc: Mapping[str, Any]) -> list[str]:
    """The judge's agreement with people's labels (``judge_agreement``)."""
    agreement = doc.get("judge_agreement")
    if not isinstance(agreement, Mapping):
        return []
    import os

    kappa = agreement.get("min_kappa")
    head = f"### Judge agreement with {md_escape(os.path.basename(str(agreement.get('labels'))))}"
    out = [head, ""]
    if kappa is not None:
        out += [md_escape(f"Judge-scored gates need kappa >= {kappa} (quadratic-weighted for scores)."), ""]
    rows = []
    for s in agreement.get("suites", []):
        rows.append([
            md_escape(s.get("suite")),
            str(s.get("n", 0)),
            _num(s.get("agreement")),
            _num(s.get("kappa")),
            _num(s.get("weighted_kappa")) if "weighted_kappa" in s else "",
            "⚠️ not enforced: " + md_escape(s["not_enforced"]) if s.get("not_enforced")
            else ("enforced" if s.get("judge_scored") else "not judge-scored"),
        ])
    out += _table(["suite", "n", "agreement", "kappa", "weighted kappa", "gates"], rows)
    out.append("")
    return out


def render_markdown(doc: Mapping[str, Any], *, title: str = "ctxbench") -> str:
    """The Markdown summary of a JSON report document.

    :param doc: the JSON report (``to_json_dict`` output, or read from a file).
    :param title: the heading.
    """
    out: list[str] = [f"## {md_escape(title)}", "", _verdict_line(doc), ""]
    run = doc.get("run") or {}
    datasets = ", ".join(
        f"{d.get('tag')} ({d.get('selected', d.get('examples'))} of {d.get('examples')})"
        for d in run.get("datasets", [])
    )
    systems = ", ".join(s.get("system", "") for s in doc.get("suites", []))
    facts = [
        f"datasets: {datasets}" if datasets else "",
        f"systems: {systems}" if systems else "",
        f"pytest-context-bench {(doc.get('plugin') or {}).get('version', '?')}",
        str(doc.get("created", "")),
    ]
    out += [md_escape(" · ".join(f for f in facts if f), limit=400), ""]
    rescored = run.get("rescored")
    if isinstance(rescored, dict):
        names = sorted({
            str(e.get("name")) for evs in (rescored.get("evaluators") or {}).values()
            for e in evs if isinstance(e, dict)
        })
        skipped = rescored.get("not_rescored") or []
        out += [
            md_escape(
                f"re-scored from {rescored.get('from')} ({rescored.get('kind')}) with:"
                f" {', '.join(names) or 'no evaluator'}"
                + (f"; {len(skipped)} row(s) not re-scored (answer not kept whole)" if skipped else ""),
                limit=400,
            ),
            "",
        ]

    gates = list(doc.get("gates", []))
    comparison = doc.get("baseline_comparison") or {}
    drops = [m for m in comparison.get("metrics", []) if m.get("tolerance")]
    if gates or drops:
        out.append("### Gates")
        out.append("")
        rows = [
            [
                _gate_verdict(g),
                md_escape(g.get("suite")),
                md_escape(g.get("gate")),
                _num(g.get("value")),
                f"{md_escape(g.get('op'))} {_num(g.get('limit'))}",
            ]
            for g in gates
        ]
        rows += [
            [
                _gate_verdict(m),
                md_escape(m.get("suite")),
                md_escape(f"max drop of {m.get('metric')}"),
                _num(m.get("now")),
                md_escape(
                    f"{m.get('tolerance')} below the baseline's {_num(m.get('then'))}"
                ),
            ]
            for m in drops
        ]
        out += _table(["verdict", "suite", "gate", "value", "limit"], rows)
        out.append("")
    out += _agreement_lines(doc)

    summary = doc.get("summary") or {}
    intervals = doc.get("intervals") or {}
    if summary:
        keys = [c for c in COLUMNS if any(c[0] in m for m in summary.values())]
        headers = ["suite"] + [
            h + (" [95% CI]" if k in ("mean_score", "pass_rate") else "")
            for k, h, _ in keys
        ]
        rows = []
        for label, metrics in summary.items():
            cells = [md_escape(label)]
            for key, _, kind in keys:
                cell = _num(metrics.get(key), kind)
                ci = (intervals.get(label) or {}).get(key)
                if ci and all(math.isfinite(_float(x)) for x in ci):
                    cell += f" [{_float(ci[0]):.2f}, {_float(ci[1]):.2f}]"
                cells.append(cell)
            rows.append(cells)
        out.append("### Summary")
        out.append("")
        out += _table(headers, rows)
        out.append("")
        legend = summary_legend(summary)
        if legend:
            out.append("<sub>" + "<br>".join(md_escape(t, None) for t in legend) + "</sub>")
            out.append("")
        for prefix, title in (
            ("metric:", "Named metrics (mean per example)"),
            ("assert_type:", "Assertions passed, by type"),
        ):
            keys = sorted({k for m in summary.values() for k in m if k.startswith(prefix)})
            if not keys:
                continue
            out.append(f"### {title}")
            out.append("")
            out += _table(
                ["suite"] + [md_escape(k[len(prefix):]) for k in keys],
                [[md_escape(label)] + [_num(m.get(k)) if k in m else "" for k in keys]
                 for label, m in summary.items() if any(k in m for k in keys)],
            )
            out.append("")

    llm = report_llm_lines(doc)
    if llm:
        out.append("### LLM calls")
        out.append("")
        mark = {"bad": "❌ ", "warn": "⚠️ ", "": ""}
        out += [f"- {mark[level]}{md_escape(text, 600)}" for text, level in llm]
        out.append("")

    if comparison:
        out.append(
            f"### Compared with the baseline {md_escape(comparison.get('baseline'), 200)}"
        )
        out.append("")
        rows = [
            [
                md_escape(m.get("suite")),
                md_escape(m.get("metric")),
                _num(m.get("then")),
                _num(m.get("now")),
                f"{_num(m.get('change'))} [{_num(m.get('ci_low'))}, {_num(m.get('ci_high'))}]",
                _num(m.get("p_value")),
            ]
            for m in comparison.get("metrics", [])
        ]
        out += _table(
            ["suite", "metric", "baseline", "now", "change [two-sided CI]", "one-sided p (worse)"], rows
        )
        out.append("")
        for s in comparison.get("suites", []):
            # How the suite was compared (the baseline scored again by this run's
            # evaluators, an adaptive run that bought no trial).
            for note in s.get("notes", []):
                out.append(f"- **{md_escape(s.get('suite'))}**: {md_escape(note, 600)}")
            for key, what in (
                ("flipped_to_fail", "pass → fail"),
                ("flipped_to_pass", "fail → pass"),
            ):
                ids = list(s.get(key, []))
                if ids:
                    shown = ", ".join(md_escape(i, 80) for i in ids[:FLIPPED_SHOWN])
                    more = (
                        f" and {len(ids) - FLIPPED_SHOWN} more"
                        if len(ids) > FLIPPED_SHOWN
                        else ""
                    )
                    out.append(
                        f"- **{md_escape(s.get('suite'))}**, flipped {what} ({len(ids)}): {shown}{more}"
                    )
        for line in list(comparison.get("unevaluated", [])):
            out.append(
                f"- ❌ {md_escape(line)}: the max-drop gates compared no example"
            )
        for line in list(comparison.get("changed_examples", [])):
            out.append(f"- ❌ {md_escape(line)}")
        out.append("")

    thresholds = {
        s.get("label"): _float(s.get("threshold", 0.7)) for s in doc.get("suites", [])
    }
    bad = [r for r in doc.get("rows", []) if r.get("status") in ("error", "below")]
    bad.sort(
        key=lambda r: (
            r.get("status") != "error",
            _row_score(r) if _row_score(r) is not None else 0.0,
        )
    )
    if bad:
        out.append(f"### Worst examples ({len(bad)} below threshold or in error)")
        out.append("")
        rows = [
            [
                md_escape(r.get("suite")),
                f"{md_escape(r.get('dataset'), 40)}/{md_escape(r.get('example_id'), 60)}",
                md_escape(r.get("status")),
                _num(_row_score(r)),
                md_escape(row_reason(r, thresholds.get(r.get("suite"), 0.7)), _REASON),
                md_escape(_shown_response(r), 80),
            ]
            for r in bad[:WORST_SHOWN]
        ]
        out += _table(
            ["suite", "example", "status", "score", "reason", "response"], rows
        )
        if len(bad) > WORST_SHOWN:
            out.append("")
            out.append(f"… and {len(bad) - WORST_SHOWN} more in the JSON report.")
        out.append("")
    lost = list(doc.get("lost", []))
    if lost:
        out.append(
            f"**{len(lost)} example(s) produced no row** (crashed or failed before scoring)."
        )
        out.append("")
    text = "\n".join(out)
    if len(text) > MAX_CHARS:
        text = (
            text[:MAX_CHARS].rsplit("\n", 1)[0]
            + "\n\n… (cut to fit a comment; see the JSON report)\n"
        )
    return text.rstrip("\n") + "\n"


def render_compare_markdown(comparison: Any) -> str:
    """The Markdown of ``ctxbench compare`` (a
    :class:`~pytest_context_bench.report.compare.ReportComparison`)."""
    c = comparison
    worse = c.worse
    out = [f"## ctxbench compare: {md_escape(c.b)} against {md_escape(c.a)}", ""]
    if worse:
        out.append(
            f"❌ **{len(worse)} metric(s) significantly worse in B** (confidence {c.confidence * 100:g}%)"
        )
    else:
        out.append(
            f"✅ **No metric significantly worse in B** (confidence {c.confidence * 100:g}%)"
        )
    out.append("")
    out.append(md_escape(c.scope_line(), limit=600))
    out.append("")
    rows = [
        [
            md_escape(m["suite"]),
            md_escape(m["metric"]),
            _num(m["then"]),
            _num(m["now"]),
            _num(m["change"]),
            f"[{_num(m['ci_low'])}, {_num(m['ci_high'])}]",
            _num(m["p_value"]),
            ("slower" if m["metric"] == "latency_mean" else "❌ worse")
            if m["worse"]
            else "",
        ]
        for m in c.metrics
    ]
    out += _table(
        ["suite", "metric", "A", "B", "change", "two-sided 95% CI", "one-sided p (B worse)", "verdict"],
        rows,
    )
    out.append("")
    for s in c.suites:
        line = f"- **{md_escape(s['suite'])}**: {s['n_matched']} example(s) in both"
        if s["only_a"] or s["only_b"]:
            line += f", {len(s['only_a'])} only in A, {len(s['only_b'])} only in B"
        out.append(line)
        for key, what in (
            ("flipped_to_fail", "pass → fail"),
            ("flipped_to_pass", "fail → pass"),
        ):
            ids = list(s[key])
            if ids:
                shown = ", ".join(md_escape(i, 80) for i in ids[:FLIPPED_SHOWN])
                more = (
                    f" and {len(ids) - FLIPPED_SHOWN} more"
                    if len(ids) > FLIPPED_SHOWN
                    else ""
                )
                out.append(f"  - flipped {what} ({len(ids)}): {shown}{more}")
    flipped = [f for f in c.flipped if f["after"] == "fail"][:WORST_SHOWN]
    judged = any("pairwise" in f for f in c.flipped)
    if judged and getattr(c, "pairwise", None):
        p = c.pairwise
        rate = p.get("position_inconsistency")
        out += ["", md_escape(
            f"Pairwise judge ({p['model']}), each flipped example asked in both orders: B better"
            f" in {p['b_better']}, A better in {p['a_better']}, tie in {p['ties']}"
            + (f"; position-inconsistent in {rate:.0%} (counted as ties)" if rate is not None else ""),
            limit=400)]
    if flipped:
        out += ["", "### Flipped pass → fail", ""]
        out += _table(
            ["suite", "example", "A response", "B response", "reference"]
            + (["pairwise judge"] if judged else []),
            [
                [
                    md_escape(f["suite"]),
                    md_escape(f"{f['dataset']}/{f['example_id']}"),
                    md_escape(f["response_before"] or "", 80),
                    md_escape(f["response_after"] or "", 80),
                    md_escape(f["reference"] or "", 60),
                ]
                + ([md_escape((f.get("pairwise") or {}).get("error")
                              or (f.get("pairwise") or {}).get("verdict") or "not judged", 120)]
                   if judged else [])
                for f in flipped
            ],
        )
    text = "\n".join(out)
    if len(text) > MAX_CHARS:
        text = text[:MAX_CHARS].rsplit("\n", 1)[0] + "\n\n… (cut to fit a comment)\n"
    return text.rstrip("\n") + "\n"


def _shown_response(row: dict[str, Any]) -> str:
    """A row's response, and the tool calls it made (``[tool calls] name(args)``)."""
    text = str(row.get("response", "") or "")
    calls = row.get("tool_calls")
    if calls:
        text = f"{text} [tool calls] {calls}" if text else f"[tool calls] {calls}"
    return text
