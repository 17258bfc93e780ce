"""The Markdown summary: what it says, that it renders (CommonMark, as GitHub), that
hostile text stays text, and $GITHUB_STEP_SUMMARY."""

from __future__ import annotations

import json

import pytest
from helpers import qa_lines
from markdown_it import MarkdownIt

from pytest_context_bench.report.markdown import (
    MAX_CHARS,
    WORST_SHOWN,
    md_escape,
    render_markdown,
)


def _html(text: str) -> str:
    return MarkdownIt("commonmark").enable("table").render(text)


def test_md_escape_is_inert() -> None:
    nasty = "<script>x</script> | *bold* [link](http://x) `code` \n second line"
    html = _html("| a |\n|---|\n| " + md_escape(nasty) + " |\n")
    assert (
        "<script>" not in html
        and "<a " not in html
        and "<em>" not in html
        and "<code>" not in html
    )
    assert html.count("<td>") == 1  # the pipe and the newline did not split the cell
    assert "&lt;script&gt;x&lt;/script&gt;" in html


def test_markdown_from_a_run_and_the_step_summary(
    project: pytest.Pytester, mode_args: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    project.makefile(".jsonl", big=qa_lines(30))
    step = project.path / "step_summary.md"
    step.write_text("earlier step\n")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(step))
    out = project.path / "summary.md"
    result = project.runpytest(
        "--ctxbench-dataset=big.jsonl",
        "--ctxbench-system=systems:half",
        "--ctxbench-system=systems:echo",
        "--ctxbench-min-pass-rate=0.8",
        f"--ctxbench-markdown={out}",
        "--ctxbench-json=r.json",
        *mode_args,
    )
    assert result.ret == 1
    result.stdout.fnmatch_lines([f"Markdown summary: {out}"])
    text = out.read_text()
    doc = json.loads((project.path / "r.json").read_text())
    assert text.startswith("## ctxbench\n\n❌ **1 of 2 gate(s) breached**")
    html = _html(text)
    # Three tables: gates, summary, worst examples; rendered as tables.
    assert html.count("<table>") == 3
    assert (
        "<td>❌ breached</td><td>half</td><td>min_pass_rate</td><td>0.5000</td><td>&gt;= 0.8000</td>"
        in html.replace("\n", "")
    )
    assert (
        f"<td>half</td><td>30</td><td>{float(doc['summary']['half']['mean_score']):.4f}"
        in html.replace("\n", "")
    )
    # The worst examples: the first ten of fifteen, then a count.
    assert text.count("| half | big/q-") == WORST_SHOWN
    assert "… and 5 more in the JSON report." in text
    assert len(text) < MAX_CHARS
    # Appended to GitHub's step summary, after what was there.
    assert step.read_text() == "earlier step\n" + text + "\n"
    if mode_args == ["-n", "2"]:
        # Under -n 2: the controller wrote the summary, and no worker did (above);
        # the option that turns it off is read by the controller as in-process.
        return

    step.write_text("")
    off = project.runpytest(
        "--ctxbench-dataset=qa.jsonl",
        "--ctxbench-system=systems:echo",
        "--ctxbench-no-step-summary",
        *mode_args,
    )
    assert off.ret == 0 and step.read_text() == ""


def test_markdown_with_a_baseline_names_the_flipped_examples(
    project: pytest.Pytester,
) -> None:
    base = project.path / "base.json"
    project.runpytest(
        "--ctxbench-dataset=qa.jsonl",
        "--ctxbench-system=systems:echo",
        f"--ctxbench-save-baseline={base}",
    )
    project.makepyfile(
        more="class Echo:\n    name = 'echo'\n    def process(self, e):\n"
        "        return {**e, 'response': 'nope' if e['id'] in ('q-2', 'q-5') else e['answer']}\necho = Echo()\n"
    )
    out = project.path / "s.md"
    result = project.runpytest(
        "--ctxbench-dataset=qa.jsonl",
        "--ctxbench-system=more:echo",
        f"--ctxbench-baseline={base}",
        "--ctxbench-max-drop=pass_rate:0.5",
        f"--ctxbench-markdown={out}",
    )
    assert result.ret == 0
    text = out.read_text()
    assert "### Compared with the baseline" in text
    assert (
        "- **echo**, flipped pass → fail (2): q\\-2, q\\-5" not in text
    )  # no needless escapes
    assert "- **echo**, flipped pass → fail (2): q-2, q-5" in text
    assert "| ✅ met | echo | max drop of pass\\_rate |" in text
    assert "<table>" in _html(text)


def test_unwritable_markdown_path_is_one_clear_line(project: pytest.Pytester) -> None:
    (project.path / "afile").write_text("")
    result = project.runpytest(
        "--ctxbench-dataset=qa.jsonl",
        "--ctxbench-system=systems:echo",
        "--ctxbench-markdown=afile/s.md",
    )
    assert result.ret == 4
    result.stderr.fnmatch_lines(
        ["ERROR: --ctxbench-markdown: */afile is not a directory"]
    )
    result = project.runpytest(
        "--ctxbench-dataset=qa.jsonl",
        "--ctxbench-system=systems:echo",
        f"--ctxbench-html={project.path}",
    )
    assert result.ret == 4
    result.stderr.fnmatch_lines(
        ["ERROR: --ctxbench-html must be a file path, given a directory: *"]
    )


def test_the_summary_has_the_terminals_legend_and_llm_lines_with_dollars_inert() -> None:
    """Issue 39: the Markdown summary says what its columns hold and carries the run's
    LLM section; a `$` never starts GitHub math; a hostile model name stays text."""
    doc = {
        "summary": {"app": {"num_examples": 2.0, "mean_input_tokens": 25.25, "llm_prompt_tokens": 10.0,
                            "llm_completion_tokens": 2.0, "llm_tokens_per_pass": 24.0,
                            "cost_usd": "nan", "cost_of_pass_usd": "nan"}},
        "llm": {
            "cache": {"mode": "off", "path": None, "hits": 0, "misses": 2, "replay_misses": 0},
            "calls_sent": 2, "tokens": {"prompt_tokens": 20, "completion_tokens": 4, "cached_tokens": 0},
            "saved_tokens": 0, "models": ["m"],
            "money": {"cost_usd": "nan", "judge_cost_usd": 0.0, "total_cost_usd": "nan",
                      "saved_usd": 0.0, "unpriced_models": ["<b>m$x$</b>"], "prices_unused": [],
                      "price_sources": {}},
        },
    }
    text = render_markdown(doc)
    html = _html(text)
    assert "| 25.2 |" in text  # as the terminal rounds
    assert "LLM prompt/completion = tokens of the System" in text
    assert "n/a money = a call" in text and "--ctxbench-price=MODEL=IN/OUT" in text
    assert "### LLM calls" in text and "2 calls sent" in text
    assert "System unknown" in text and "judge" not in text.split("LLM money")[1].split("\n")[0]
    assert "\\$x\\$" in text and "<b>" not in html
    assert "cost \\$ = US dollars" in text
