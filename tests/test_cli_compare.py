"""``ctxbench compare A.json B.json``: the numbers, the flips, the views, bad input."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from browser import open_report
from helpers import qa_lines
from markdown_it import MarkdownIt

from pytest_context_bench.baseline import natural_key
from pytest_context_bench.cli import main

WORSE = """
class Echo:
    name = "echo"
    def process(self, e):
        n = int(e["id"].split("-")[1])
        return {**e, "response": "no idea" if n % 3 == 0 else e["answer"]}
echo = Echo()
"""


@pytest.fixture
def two_runs(project: pytest.Pytester) -> tuple[Path, Path]:
    project.makefile(".jsonl", big=qa_lines(30))
    project.makepyfile(worse=WORSE)
    a, b = project.path / "a.json", project.path / "b.json"
    project.runpytest(
        "--ctxbench-dataset=big.jsonl",
        "--ctxbench-system=systems:echo",
        "--ctxbench-system=systems:half",
        f"--ctxbench-json={a}",
    )
    project.runpytest(
        "--ctxbench-dataset=big.jsonl",
        "--ctxbench-system=worse:echo",
        "--ctxbench-system=systems:compressor",
        f"--ctxbench-json={b}",
    )
    return a, b


def test_compare_prints_the_paired_change_and_the_flips(
    two_runs: tuple[Path, Path], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    a, b = two_runs
    md, html = tmp_path / "diff.md", tmp_path / "diff.html"
    status = main(
        ["compare", str(a), str(b), "--markdown", str(md), "--html", str(html)]
    )
    out = capsys.readouterr().out
    assert status == 1  # 10 of 30 examples went pass -> fail: significantly worse
    assert (
        "compared 1 of 3 suite(s) (those in both reports); only in A: half; only in B: compressor"
        in out
    )
    assert "echo: 30 example(s) in both" in out
    lines = {
        line.split()[0]: line.split()
        for line in out.splitlines()
        if line.startswith(("pass_rate", "mean_score"))
    }
    assert lines["pass_rate"][1:4] == ["1", "0.6667", "-0.3333"]
    assert lines["pass_rate"][-1] == "WORSE"
    flipped = [f"q-{i}" for i in range(3, 31, 3)]
    # in natural order: q-3 before q-12 (issue 39)
    assert f"flipped pass → fail (10): {' '.join(sorted(flipped, key=natural_key))}" in out
    assert (
        "3 metric(s) significantly worse in B: echo pass_rate, echo mean_score, echo cost_of_pass\n"
        in out
    )
    text = md.read_text()
    assert "❌ **" in text and "### Flipped pass → fail" in text
    rendered = MarkdownIt("commonmark").enable("table").render(text)
    assert rendered.count("<table>") == 2
    assert "<td>q-3</td>" not in rendered and "big/q-3" in rendered
    assert "<td>no idea</td>" in rendered.replace("\n", "")
    assert html.read_text().startswith("<!DOCTYPE html>")


def test_compare_html_shows_both_responses_in_chromium(
    browser: Any, two_runs: tuple[Path, Path], tmp_path: Path
) -> None:
    a, b = two_runs
    html = tmp_path / "diff.html"
    assert main(["compare", str(a), str(b), "--html", str(html)]) == 1
    opened = open_report(browser, html)
    page = opened.page
    rows = page.eval_on_selector_all(
        "#flipped-table tbody tr",
        "rs => rs.map(r => Array.from(r.cells).map(c => c.textContent))",
    )
    assert len(rows) == 10
    first = rows[0]
    assert first[2] == "pass → fail"
    assert (
        first[3].endswith("city 3")  # the first flipped, in natural order
        and first[4].endswith("no idea")
        and first[5] == "city 3"
    )
    metrics = page.eval_on_selector_all(
        "#diff-table tbody tr",
        "rs => rs.map(r => Array.from(r.cells).map(c => c.textContent))",
    )
    assert ["echo", "pass_rate", "1.0000", "0.6667", "-0.3333"] == metrics[0][:5]
    opened.assert_clean()


def test_compare_same_run_is_0(
    two_runs: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    a, _ = two_runs
    assert main(["compare", str(a), str(a)]) == 0
    assert "WORSE" not in capsys.readouterr().out


def _bad(tmp_path: Path, name: str, text: str) -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


def test_bad_reports_are_one_line_and_exit_4(
    two_runs: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a, b = two_runs
    full = a.read_text()
    doc = json.loads(full)
    cases = {
        "truncated": (
            _bad(tmp_path, "t.json", full[: len(full) // 2]),
            "not valid JSON (line ",
        ),
        "other schema": (
            _bad(tmp_path, "v.json", json.dumps({**doc, "schema_version": 99})),
            "has schema_version 99",
        ),
        "not a report": (
            _bad(tmp_path, "x.json", json.dumps({**doc, "rows": "nope"})),
            "is not a valid pytest-context-bench report (rows: ",
        ),
        "a list": (_bad(tmp_path, "l.json", "[1, 2]"), "holds a JSON list"),
        "missing": (tmp_path / "nope.json", "no such file"),
        "no common suite": (
            _bad(
                tmp_path,
                "o.json",
                json.dumps(
                    {
                        **doc,
                        "suites": [
                            {**s, "label": "z" + s["label"]} for s in doc["suites"]
                        ],
                        "rows": [],
                    }
                ),
            ),
            "have no suite in common",
        ),
    }
    out_md = tmp_path / "never.md"
    for what, (path, message) in cases.items():
        status = main(["compare", str(path), str(b), "--markdown", str(out_md)])
        err = capsys.readouterr().err
        assert status == 4, what
        assert err.count("\n") == 1 and message in err and str(path) in err, (what, err)
        assert not out_md.exists(), what  # nothing half-written
    assert main(["compare", str(a), str(b), "--html", str(tmp_path)]) == 4
    assert "must be a file path" in capsys.readouterr().err
    assert main(["compare", str(a), str(b), "--markdown", str(b)]) == 4
    assert "would overwrite the report it reads" in capsys.readouterr().err
    assert json.loads(b.read_text())


def test_console_script(two_runs: tuple[Path, Path]) -> None:
    a, b = two_runs
    script = Path(sys.executable).parent / "ctxbench"  # the console script
    done = subprocess.run(
        [str(script), "compare", str(a), str(b)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 1 and "echo: 30 example(s) in both" in done.stdout


def test_compare_html_when_no_example_passed(
    project: pytest.Pytester, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # cost_of_pass is infinite in both runs (nothing passed): the page carries it as
    # "inf", as the JSON report does, instead of crashing on a non-JSON float.
    a, b = project.path / "a.json", project.path / "b.json"
    for out in (a, b):
        result = project.runpytest(
            "--ctxbench-dataset=qa.jsonl", "--ctxbench-system=systems:wrong",
            f"--ctxbench-json={out}", "--ctxbench-no-gate",
        )
        assert out.exists(), result.stdout.str()
    html, md = tmp_path / "diff.html", tmp_path / "diff.md"
    status = main(
        ["compare", str(a), str(b), "--html", str(html), "--markdown", str(md)]
    )
    out = capsys.readouterr()
    assert status == 0, out
    assert "Traceback" not in out.err
    page = html.read_text()
    assert page.startswith("<!DOCTYPE html>")
    data = page.split('id="ctxbench-data">', 1)[1].split("</script>", 1)[0]
    embedded = json.loads(data)
    costs = [
        m for m in embedded["diff"]["metrics"] if m["metric"] == "cost_of_pass"
    ]
    assert costs and costs[0]["then"] == "inf" and costs[0]["now"] == "inf"
