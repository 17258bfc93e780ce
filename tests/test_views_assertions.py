"""Assertion results as a person sees them: the terminal at 80 columns and wide, the
Markdown summary rendered, the HTML report in Chromium (DOM and a screenshot), with
metric names and outputs that try to control their viewer."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from browser import open_report
from helpers import read_json
from markdown_it import MarkdownIt

HOSTILE_METRIC = '<img src=x onerror="window.__pwned=1">|pipe\x1b[31m'

BOT = '''
class Bot:
    name = "bot"
    def process(self, example):
        return {**example, "response": example["reply"]}

bot = Bot()
'''


def _examples() -> list[dict[str, Any]]:
    out = []
    for i in range(6):
        good = i % 3 != 0
        out.append({
            "id": f"ex-{i}",
            "question": f"Order {i}?",
            "reply": json.dumps({"order": i, "status": "shipped"}) if good
            else "<script>window.__pwned=2</script> not json",
            "assert": [
                {"type": "is-json", "value": {"type": "object", "required": ["order"]}},
                {"type": "contains", "value": "shipped", "metric": HOSTILE_METRIC},
                {"type": "not-icontains", "value": "script", "metric": "safe"},
            ],
        })
    return out


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makepyfile(viewsbot=BOT)
    pytester.makeini("[pytest]\npythonpath = .\n")
    pytester.makefile(".jsonl", data="\n".join(json.dumps(e) for e in _examples()))
    return pytester


@pytest.mark.parametrize("columns", ["80", "200"])
def test_terminal(project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, columns: str) -> None:
    monkeypatch.setenv("COLUMNS", columns)
    result = project.runpytest("--ctxbench-dataset=data.jsonl", "--ctxbench-system=viewsbot:bot")
    out = result.stdout.str()
    assert "pipe\x1b" not in out  # the metric name's escape is made inert
    assert "named metrics" in out and "assertions passed, by type:" in out
    lines = result.stdout.lines
    start = lines.index("assertions passed, by type:")
    table = "\n".join(lines[start:start + 6])
    assert "is-json" in table and "not-icontains" in table and "0.6667" in table
    section = lines[next(i for i, ln in enumerate(lines) if "ctxbench summary" in ln):]
    for line in section:
        assert len(line) <= int(columns), line
    assert "BELOW ex-0: assert_score = 0, its assertions failed" in out


def test_markdown_and_html(project: pytest.Pytester, browser: Any, tmp_path: Path) -> None:
    result = project.runpytest(
        "--ctxbench-dataset=data.jsonl", "--ctxbench-system=viewsbot:bot",
        "--ctxbench-json=out.json", "--ctxbench-markdown=out.md", "--ctxbench-html=out.html",
    )
    assert result.ret == 0
    doc = read_json(project.path / "out.json")
    assert doc["summary"]["bot"][f"metric:{HOSTILE_METRIC}"] == pytest.approx(4 / 6)
    md = (project.path / "out.md").read_text("utf-8")
    html = MarkdownIt("commonmark").enable("table").render(md)
    assert "<img" not in html and "\x1b" not in md
    assert "Assertions passed, by type" in md and "Named metrics" in md
    # the hostile name is one cell: its pipe is escaped, the table keeps its columns
    (line,) = [ln for ln in md.splitlines() if ln.startswith("| suite") and "safe" in ln]
    assert line.count(" | ") == 2, line

    opened = open_report(browser, project.path / "out.html")
    page = opened.page
    assert page.is_visible("#assertions")
    rows = page.eval_on_selector_all(
        "#assertion-table tbody tr", "trs => trs.map(t => t.innerText.replace(/\\s+/g, ' ').trim())"
    )
    assert "bot metric safe 0.6667" in rows
    assert "bot is-json passed 0.6667" in rows
    assert any("onerror" in r for r in rows)  # shown as text
    assert page.evaluate("window.__pwned") is None
    cells = page.eval_on_selector_all(
        "#example-table tbody tr", "trs => trs.map(t => t.innerText.replace(/\\s+/g, ' '))"
    )
    (bad,) = [c for c in cells if "ex-3" in c]
    assert "assertions: 3 of 3 assertions failed; first: is-json: Expected output to be valid JSON" in bad
    page.locator("#assertions").scroll_into_view_if_needed()
    page.screenshot(path=str(tmp_path / "assertions.png"), full_page=True)
    shots = Path(__file__).parent.parent / "docs" / "img"
    if shots.is_dir() and __import__("os").environ.get("CTXBENCH_SAVE_SCREENSHOTS"):
        page.screenshot(path=str(shots / "assertions.png"), full_page=False)
    opened.assert_clean()
