"""Why did an example fail, as a person sees the page: a row of the HTML report
expands to its LLM call records and its evaluators' details (the shapes of the
JSON report's ``calls`` and ``metadata[<evaluator>]``, docs/reports.md), a breached
gate is one click from its failing examples, the flipped examples link to their
rows, ``ctxbench compare --html`` opens with its verdict and shows both runs' calls
side by side; the gate table reads at 390 px and no table scrolls sideways at
1280 px. One Chromium for the module; screenshots are kept in ``tmp_path``."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from browser import Opened, open_report

from pytest_context_bench.cli import main as ctxbench
from pytest_context_bench.report import build_run_report, to_json_dict
from pytest_context_bench.report.html import render_html
from pytest_context_bench.report.run import Record, SuiteInfo
from pytest_context_bench.results import EvalRow

LONG_SUITE = "retrieval_augmented_generation_with_prompt_compression_and_reranking_v2"
HOSTILE_REPLY = '</script><img src=x onerror="window.__pwned=1">\u202egnp.exe\x1b[2J'


def _call(source: str, question: str, reply: str | None, **extra: Any) -> dict[str, Any]:
    """One call record in the shape the ``calls`` branch writes (CONTRACT24)."""
    record: dict[str, Any] = {
        "source": source,
        "url": "http://127.0.0.1:8000/v1/chat/completions",
        "model": "gpt-4o-mini",
        "params": {"temperature": 0.0, "max_tokens": 256},
        "messages": [
            {"role": "system", "text": "Answer from the context only."},
            {"role": "user", "text": question},
        ],
        "reply": reply,
        "finish_reason": "stop",
        "usage": {"prompt_tokens": 31, "completion_tokens": 4},
        "latency": 0.25,
        "cache": "miss",
        "attempts": [{"status": 429, "error": None}, {"status": 200, "error": None}],
        "error": None,
    }
    record.update(extra)
    return record


def _doc(n: int = 12, *, variant: str = "a") -> dict[str, Any]:
    """A report of two suites (one with a long name), priced LLM usage, evaluator
    details on failing rows and call records on some rows; ``variant`` "b" fails
    more examples (for ``ctxbench compare``)."""
    records = []
    for suite in ("careful", LONG_SUITE):
        for i in range(n):
            fail = (i % 3 == 0) if variant == "a" else (i % 3 != 2)
            if suite == LONG_SUITE:
                fail = i % 2 == 0
            score = 0.2 if fail else 1.0
            meta: dict[str, Any] = {
                "score_field": "f1",
                "llm_usage": {
                    "calls": 1,
                    "cache_hits": 0,
                    "prompt_tokens": 31,
                    "completion_tokens": 4,
                    "cached_tokens": 0,
                    "saved_tokens": 0,
                    "models": ["gpt-4o-mini"],
                },
                "cost_usd": 0.000125,
            }
            if fail:
                meta["answer_quality"] = {
                    "reason": f"1 of 5 reference tokens matched ({variant})",
                    "matched": ["city"],
                    "missing": ["paris", "france"],
                    "extra": ["lyon"],
                }
            row = EvalRow(
                system=suite,
                example_id=f"q-{i}",
                dataset="qa",
                scores={"f1": score},
                input_tokens=31,
                output_tokens=4,
                latency=0.25,
                metadata=meta,
            )
            records.append(
                Record(
                    suite,
                    suite,
                    (0 if suite == "careful" else 1, 0, i),
                    "below" if fail else "pass",
                    row,
                    {
                        "response": "Lyon" if fail else "Paris",
                        "reference": "Paris, France",
                    },
                )
            )
    infos = {
        s: SuiteInfo(s, limits={"min_pass_rate": 0.6}) for s in ("careful", LONG_SUITE)
    }
    report = build_run_report(records, infos)
    doc = to_json_dict(report, run={"datasets": []}, gates_enforced=True, version="t")
    for row in doc["rows"]:
        if row["status"] != "pass":
            reply = HOSTILE_REPLY if row["example_id"] == "q-3" else "Lyon"
            row["calls"] = [
                _call("system", f"Where is {row['example_id']}? ({variant})", reply),
                _call(
                    "evaluator:judge",
                    "Grade the answer.",
                    None,
                    error="HTTP 500 from the judge",
                    cache="off",
                    attempts=[{"status": 500, "error": "server error"}],
                ),
            ]
            row["calls_omitted"] = 3 if row["example_id"] == "q-0" else 0
    return json.loads(json.dumps(doc))


def _row_index(doc: dict[str, Any], suite: str, example_id: str) -> int:
    return next(
        i
        for i, r in enumerate(doc["rows"])
        if r["suite"] == suite and r["example_id"] == example_id
    )


def _no_sideways_scroll(opened: Opened) -> list[Any]:
    """Every scrolling box (and the page) whose content is wider than the box."""
    result: list[Any] = opened.page.evaluate(
        """Array.from(document.querySelectorAll('.scroll')).concat([document.documentElement])
             .filter(b => b.offsetParent !== null || b === document.documentElement)
             .map(b => [b.id || b.parentNode.id || b.tagName, b.scrollWidth, b.clientWidth])
             .filter(x => x[1] > x[2])"""
    )
    return result


def test_a_row_expands_to_its_calls_and_details(
    browser: Any, tmp_path: Path
) -> None:
    doc = _doc()
    path = tmp_path / "report.html"
    path.write_text(render_html(doc), encoding="utf-8")
    opened = open_report(browser, path, width=1280)
    page = opened.page
    opened.assert_clean()

    # Money in the summary, as the terminal and the Markdown show it.
    headers = page.eval_on_selector_all(
        "#summary-grid thead th", "ths => ths.map(t => t.textContent)"
    )
    assert "cost $" in headers and "$ per pass" in headers
    careful = page.eval_on_selector_all(
        "#summary-grid tbody tr[data-suite=careful] td",
        "tds => tds.map(t => t.textContent)",
    )
    cost = float(doc["summary"]["careful"]["cost_usd"])
    assert careful[headers.index("cost $")] == f"{cost:.6f}"

    # A breached gate is one click from its failing examples.
    gate_rows = page.locator("#gate-table tbody tr")
    assert gate_rows.count() == 2
    long_gate = page.locator("#gate-table tbody tr", has_text=LONG_SUITE)
    failing = [r for r in doc["rows"] if r["suite"] == LONG_SUITE and r["status"] != "pass"]
    assert long_gate.locator("a.failing").inner_text() == f"{len(failing)} failing examples →"
    long_gate.locator("a.failing").click()
    shown = page.eval_on_selector_all(
        "#example-table tbody tr[id^=ex-]", "rs => rs.map(r => r.id)"
    )
    assert shown == [f"ex-{doc['rows'].index(r)}" for r in failing]
    assert "examples below threshold or in error of suite " + LONG_SUITE in page.inner_text(
        "#scope"
    )

    # The row of q-3 (hostile reply) expands: details (reason first), then calls.
    i = _row_index(doc, LONG_SUITE, "q-0")
    page.click(f"#ex-{i} button.toggle")
    more = page.locator(f"#more-{i}")
    assert page.get_attribute(f"#ex-{i} button.toggle", "aria-expanded") == "true"
    evaluator = more.locator(".evaluator").first
    lines = evaluator.inner_text().splitlines()
    assert lines[0] == "answer_quality"
    assert lines[1] == "1 of 5 reference tokens matched (a)"  # the reason first
    assert "missing: paris, france" in lines and "matched: city" in lines
    calls = more.locator(".call")
    assert calls.count() == 2
    head = calls.nth(0).locator(".callhead").inner_text()
    for part in (
        "call 1",
        "system",
        "gpt-4o-mini",
        "temperature=0",
        "max_tokens=256",
        "0.250s",
        "cache miss",
        "finish stop",
        "prompt 31 + completion 4 tokens",
        "2 attempts: 429 → 200",
    ):
        assert part in head, (part, head)
    roles = calls.nth(0).locator(".msg").evaluate_all(
        "ms => ms.map(m => [m.dataset.role, m.querySelector('.calltext').textContent])"
    )
    assert roles == [
        ["system", "Answer from the context only."],
        ["user", "Where is q-0? (a)"],
        ["reply", "Lyon"],
    ]
    judge = calls.nth(1).inner_text()
    assert "evaluator:judge" in judge and "(no reply)" in judge
    assert "HTTP 500 from the judge" in judge and "1 attempt: 500 (server error)" in judge
    assert "3 more call record(s) not kept" in more.inner_text()
    assert "LLM calls (5)" in more.inner_text()

    # Model text stays text: the hostile reply of q-3 shown, marked, never run.
    j = _row_index(doc, "careful", "q-3")
    page.evaluate("location.hash = '#ex-" + str(j) + "'")  # a link to the row
    page.wait_for_selector(f"#more-{j}")
    reply = page.locator(f"#more-{j} .call .msg.reply .calltext").first.inner_text()
    assert reply == '</script><img src=x onerror="window.__pwned=1">[U+202E]gnp.exe[U+001B][2J'
    assert page.locator("main img").count() == 0
    assert page.evaluate("typeof window.__pwned") == "undefined"

    # Collapsing hides it again.
    page.click(f"#ex-{i} button.toggle")
    assert page.locator(f"#more-{i}").count() == 0
    page.click(f"#ex-{i} button.toggle")

    # Expanded rows included, no table scrolls sideways at 1280 px.
    assert _no_sideways_scroll(opened) == []
    page.evaluate(f"document.getElementById('ex-{i}').scrollIntoView()")
    page.screenshot(path=str(tmp_path / "expanded.png"))
    opened.assert_clean()


def test_gate_table_at_390px_and_flipped_examples_link_to_their_rows(
    browser: Any, tmp_path: Path
) -> None:
    doc = _doc()
    i = _row_index(doc, "careful", "q-3")
    doc["baseline_comparison"] = {
        "baseline": "base.json",
        "metrics": [
            {
                "suite": "careful",
                "metric": "pass_rate",
                "then": 1.0,
                "now": 0.6667,
                "change": -0.3333,
                "ci_low": -0.6,
                "ci_high": -0.1,
                "p_value": 0.01,
                "tolerance": "0.02",
                "passed": False,
            }
        ],
        "suites": [
            {"suite": "careful", "flipped_to_fail": ["q-3"], "flipped_to_pass": []}
        ],
    }
    # A merged report (ctxbench merge): its header shows the merge.
    doc["run"] = {
        "datasets": [],
        "merged_from": ["s1.json", "s2.json"],
        "invocation": ["ctxbench", "merge", "s1.json", "s2.json", "--html=r.html"],
    }
    path = tmp_path / "narrow.html"
    path.write_text(render_html(doc), encoding="utf-8")
    opened = open_report(browser, path, width=390, height=844)
    page = opened.page
    header = page.inner_text("#run")
    assert "merged 2 shard report(s): s1.json, s2.json" in header
    assert "merge command ctxbench merge s1.json s2.json --html=r.html" in header
    # Each gate's value and limit are on the screen, with no sideways scroll.
    boxes = page.eval_on_selector_all(
        "#gate-table tbody td:nth-child(4), #gate-table tbody td:nth-child(5)",
        "tds => tds.map(t => { const r = t.getBoundingClientRect();"
        " return [t.textContent, r.left, r.right, r.width]; })",
    )
    assert len(boxes) == 2 * 3  # two gates and the max-drop gate
    for text, left, right, width in boxes:
        assert width > 0 and left >= 0 and right <= 390, (text, left, right)
    # Stacked, each number named (the header row is hidden at this width).
    labels = page.eval_on_selector_all(
        "#gate-table tbody tr:first-child td",
        "tds => tds.map(t => getComputedStyle(t, '::before').content)",
    )
    assert labels[3:] == ['"value: "', '"limit: "']
    scroller = page.eval_on_selector(
        "#gate-table", "b => [b.scrollWidth, b.clientWidth]"
    )
    assert scroller[0] <= scroller[1]
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    page.screenshot(path=str(tmp_path / "gates-390.png"))

    # The flipped example links to its row, which opens expanded.
    link = page.locator(f"#flipped-table a[href='#ex-{i}']")
    assert link.inner_text() == "qa/q-3"
    link.click()
    page.wait_for_selector(f"#more-{i}")
    reply = page.locator(f"#more-{i} .call .msg.reply .calltext").first.inner_text()
    assert reply.startswith("</script>")
    assert "target" in (page.get_attribute(f"#ex-{i}", "class") or "")
    # The opened row reads on the phone's screen, though its table is wider.
    right = page.eval_on_selector(
        f"#more-{i} .morebox", "b => b.getBoundingClientRect().right"
    )
    assert right <= 390
    page.screenshot(path=str(tmp_path / "expanded-390.png"))
    opened.assert_clean()


def test_compare_page_opens_with_its_verdict_and_both_runs_calls(
    browser: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a_doc = _doc(30, variant="a")
    # A kept q-4's call (it passed there); B kept every failing example's.
    a_doc["rows"][_row_index(a_doc, "careful", "q-4")]["calls"] = [
        _call("system", "Where is q-4? (a)", "Paris")
    ]
    a.write_text(json.dumps(a_doc))
    b.write_text(json.dumps(_doc(30, variant="b")))  # B fails twice as often
    html = tmp_path / "compare.html"
    status = ctxbench(["compare", str(a), str(b), f"--html={html}"])
    out = capsys.readouterr().out
    assert status == 1, out
    opened = open_report(browser, html, width=1280)
    page = opened.page
    opened.assert_clean()
    # The first thing on the page is the verdict, as the terminal's last line says.
    first = page.evaluate(
        "document.querySelector('main').firstElementChild.querySelector('.banner').textContent"
    )
    last = out[out.rindex("\n\n") :].split()  # "N metric(s) significantly worse in B"
    n = int(last[0])
    assert n >= 2 and first == f"{n} metrics significantly worse in B (confidence 95%)"
    assert "bad" in (page.get_attribute("#compare-verdict", "class") or "")
    # The verdict column, coloured like the terminal's WORSE.
    verdicts = page.eval_on_selector_all(
        "#diff-grid tbody tr",
        "rs => rs.map(r => [r.cells[0].textContent, r.cells[1].textContent,"
        " r.cells[7].textContent, (r.cells[7].firstChild || {}).className || '',"
        " getComputedStyle(r.cells[7].firstChild || r.cells[7]).color])",
    )
    worse = [v for v in verdicts if v[2] == "WORSE"]
    assert len(worse) == n and {v[0] for v in worse} == {"careful"}
    assert {v[1] for v in worse} >= {"pass_rate", "mean_score"}
    assert all(v[3] == "bad" and v[4] == "rgb(207, 34, 46)" for v in worse)  # --bad
    assert all(v[2] in ("", "WORSE", "slower") for v in verdicts)
    # Both runs' calls side by side under the flipped example.
    flipped = page.locator("#flipped-table tbody tr:not(.calls-side)", has_text="qa/q-4")
    side = flipped.locator("xpath=following-sibling::tr[1]")
    assert side.get_attribute("class") == "calls-side"
    cols = side.locator(".side-col")
    assert cols.count() == 2
    a_text, b_text = cols.nth(0).inner_text(), cols.nth(1).inner_text()
    assert a_text.startswith("A") and "Where is q-4? (a)" in a_text and "Paris" in a_text
    assert b_text.startswith("B") and "Where is q-4? (b)" in b_text
    assert "1 of 5 reference tokens matched (b)" in b_text
    # Side by side: B's column starts right of A's, on the same line.
    left = cols.evaluate_all("cs => cs.map(c => c.getBoundingClientRect().left)")
    top = cols.evaluate_all("cs => cs.map(c => c.getBoundingClientRect().top)")
    assert left[1] > left[0] and top[0] == top[1]
    # Only where both reports kept the calls: q-1's are in B's row, one click away.
    assert page.locator("#flipped-table tr.calls-side").count() == 1
    assert _no_sideways_scroll(opened) == []
    page.screenshot(path=str(tmp_path / "compare.png"))
    side.scroll_into_view_if_needed()
    page.screenshot(path=str(tmp_path / "compare-calls.png"))
    opened.assert_clean()


def test_compare_shows_both_sides_calls_when_both_reports_have_them(
    tmp_path: Path,
) -> None:
    """Without a browser: the comparison carries each side's records."""
    from pytest_context_bench.report.compare import compare_reports

    a, b = _doc(9, variant="a"), _doc(9, variant="b")
    ia = _row_index(a, "careful", "q-4")
    a["rows"][ia]["calls"] = [_call("system", "Where is q-4? (a)", "Paris")]
    result = compare_reports(copy.deepcopy(a), b)
    f = next(x for x in result.flipped if x["example_id"] == "q-4")
    assert f["calls_before"][0]["reply"] == "Paris"
    assert f["calls_after"][0]["messages"][1]["text"] == "Where is q-4? (b)"
    assert f["row_index"] == _row_index(b, "careful", "q-4")
    assert "llm_usage" not in f["details_after"]
    assert f["details_after"]["answer_quality"]["reason"].endswith("(b)")
    diff = result.diff()
    assert diff["verdict"]["worse"] is bool(result.worse)
