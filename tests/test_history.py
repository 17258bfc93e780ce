"""``ctxbench history`` (issue 37): runs in time order, one point per run and metric,
runs significantly worse than the one before flagged by the gate's own test,
chronically flaky examples, one offline page (checked in Chromium)."""

from __future__ import annotations

import json
import random
import re
from pathlib import Path
from typing import Any

import pytest
from browser import open_report

from pytest_context_bench.baseline import Baseline, Tolerance, compare, write_baseline
from pytest_context_bench.cli import main
from pytest_context_bench.history import build_history, load_history, worse_than
from pytest_context_bench.report import build_run_report, to_json_dict, write_json
from pytest_context_bench.report.rows import row_status
from pytest_context_bench.report.run import Record, SuiteInfo
from pytest_context_bench.results import EvalRow

EVIL = "evil<script>alert(1)</script>\x1b[31m\u202e"
#: examples that pass in one run and fail in the next, every run
FLAKY = {"q-3", "q-7"}
#: the run whose answers got worse
DROP = 6


def _run_doc(run: int, n_rows: int, rng: random.Random, *, continuous: bool = False) -> dict[str, Any]:
    records = []
    for s_pos, suite in enumerate(("reader", EVIL)):
        for i in range(n_rows):
            eid = f"q-{i}"
            if eid in FLAKY:
                ok = (run + i) % 2 == 0
            elif run == DROP and suite == "reader":
                ok = i % 3 != 0  # a third of the examples fail in this run
            else:
                ok = i % 10 != 9  # stable: the same examples fail every run
            score = (0.7 + 0.3 * rng.random() if ok else 0.5 * rng.random()) if continuous else float(ok)
            row = EvalRow(suite, eid, {"f1": score}, 20, 20, {"score_field": "f1"}, 0.01, "qa")
            records.append(Record(suite, "cli", (s_pos, 0, i, -1, 0), row_status(None, row.scores, "f1", 0.7), row))
    report = build_run_report(records, {"cli": SuiteInfo("cli", datasets=("qa",))})
    doc = to_json_dict(report, run={"options": {}}, gates_enforced=True, version="0.1.0")
    doc["created"] = f"2026-01-{run + 1:02d}T00:00:00+00:00"
    return doc


def make_runs(folder: Path, n_runs: int = 10, n_rows: int = 60, *, seed: int = 0, continuous: bool = False) -> list[Path]:
    """Reports whose file names run backwards in time: the history must sort by
    ``created``, not by name."""
    rng = random.Random(seed)
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for run in range(n_runs):
        path = folder / f"report-{n_runs - run:03d}.json"
        write_json(_run_doc(run, n_rows, rng, continuous=continuous), path)
        paths.append(path)
    return paths


def test_runs_in_time_order_one_point_each(tmp_path: Path) -> None:
    make_runs(tmp_path / "runs")
    runs = load_history([tmp_path / "runs"])
    assert [r.created[:10] for r in runs] == [f"2026-01-{d:02d}" for d in range(1, 11)]
    assert [r.name for r in runs] == [f"report-{n:03d}.json" for n in range(10, 0, -1)]
    history = build_history(runs)
    assert history.suites == ["reader", EVIL]
    series = history.series["reader"]
    assert set(series) >= {"pass_rate", "mean_score", "error_rate", "cost_of_pass"}
    assert series["pass_rate"] == [r.summary["reader"]["pass_rate"] for r in runs]
    assert len(series["pass_rate"]) == 10


def test_the_drop_and_only_it_is_flagged(tmp_path: Path) -> None:
    make_runs(tmp_path / "runs")
    history = build_history(load_history([tmp_path / "runs"]))
    assert {(f.run, f.suite, f.metric) for f in history.flags} == {
        (DROP, "reader", "pass_rate"), (DROP, "reader", "mean_score"),
    }
    flag = next(f for f in history.flags if f.metric == "pass_rate")
    assert flag.then > flag.now and "McNemar" in flag.reason
    # The flaky examples flip in every run, the others never do (but at the drop).
    assert {(s, e) for s, e, _, _ in history.flaky} == {(s, f"qa/{e}") for s in ("reader", EVIL) for e in FLAKY}
    assert all(flips == 9 for _, _, flips, _ in history.flaky)


@pytest.mark.parametrize("continuous", [False, True])
def test_the_flag_is_the_gate_decision(tmp_path: Path, continuous: bool) -> None:
    """worse_than decides as compare() decides --ctxbench-max-drop=METRIC:0 with
    the earlier run as the baseline (it only skips the bound when the p-value
    cannot fail), pair by pair and metric by metric."""
    make_runs(tmp_path / "runs", n_runs=8, n_rows=80, seed=3, continuous=continuous)
    runs = load_history([tmp_path / "runs"])
    decided = 0
    for prev, cur in zip(runs, runs[1:]):
        base = Baseline(prev.path, "0", None, {}, [], {}, prev.summary, list(prev.suites.values()),
                        [r for recs in prev.records.values() for r in recs])
        report = build_run_report([r for recs in cur.records.values() for r in recs], {"cli": SuiteInfo("cli")})
        comparison = compare(base, report, {"pass_rate": Tolerance(0), "mean_score": Tolerance(0)})
        for s in comparison.suites:
            for m in s.metrics:
                worse, then, now, _ = worse_than(
                    prev.records[s.suite], prev.suites[s.suite], cur.records[s.suite], cur.suites[s.suite], m.metric
                )
                assert worse == m.failed, (cur.name, s.suite, m.metric)
                assert then == pytest.approx(m.then) and now == pytest.approx(m.now)
                decided += worse
    assert decided >= 2  # the drop was among them


def test_runs_scored_by_other_evaluators_are_not_compared(tmp_path: Path) -> None:
    paths = make_runs(tmp_path / "runs", n_runs=3)
    for n, path in enumerate(paths):
        doc = json.loads(path.read_text())
        for suite in doc["suites"]:
            suite["evaluators"] = {"qa": [{"name": "answer_quality" if n < 2 else "strict", "class": "m:X", "config": "c"}]}
        path.write_text(json.dumps(doc))
    history = build_history(load_history([tmp_path / "runs"]))
    assert [(i, s) for i, s, _ in history.not_compared] == [(2, "reader"), (2, EVIL)]
    assert "answer_quality then, strict now" in history.not_compared[0][2]


def test_baselines_are_ordered_by_name(tmp_path: Path) -> None:
    rng = random.Random(1)
    for run in range(3):
        write_baseline(tmp_path / f"base-{run + 1}.json", _run_doc(run, 20, rng), dataset_fingerprints={})
    runs = load_history([tmp_path / f"base-{n}.json" for n in (3, 1, 2)])
    assert [r.name for r in runs] == ["base-1.json", "base-2.json", "base-3.json"]
    assert all(r.kind == "baseline" and r.created is None for r in runs)


def _cli(tmp_path: Path, *args: str) -> int:
    return main(["history", *args])


def test_the_command_writes_one_offline_page_and_a_summary(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    make_runs(tmp_path / "runs")
    page, md = tmp_path / "history.html", tmp_path / "history.md"
    assert _cli(tmp_path, str(tmp_path / "runs"), "--html", str(page), "--markdown", str(md)) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "10 run(s), 2026-01-01T00:00:00+00:00 to 2026-01-10T00:00:00+00:00" in out
    assert f"run {DROP + 1} (report-{10 - DROP:03d}.json) reader: pass_rate significantly worse than run {DROP}" in out
    assert "chronically flaky examples (flipped at least 3 times): 4" in out
    assert "\x1b" not in out and "\u202e" not in out  # the hostile suite name, inert
    text = page.read_text()
    # No script, no request: only the page's own styles.
    assert "<script" not in text.lower() and "http://" not in text and "https://" not in text
    assert "default-src 'none'" in text
    # Hostile text is inert: escaped, its controls shown as escapes.
    assert "<script>alert" not in text and "&lt;script&gt;alert(1)&lt;/script&gt;\\x1b[31m\\u202e" in text
    assert text.count("<svg") == 2 * 4  # 2 suites x pass rate, mean score, error rate, cost of pass
    assert text.count('class="pt bad"') == 2  # the drop, on both tested metrics
    summary = md.read_text()
    assert "### reader" in summary and f"| {DROP + 1} | report-{10 - DROP:03d}.json | ❌" in summary
    assert "<script>" not in summary


def test_the_page_does_not_grow_with_the_rows(tmp_path: Path) -> None:
    sizes = {}
    for rows in (60, 600):
        make_runs(tmp_path / f"r{rows}", n_rows=rows)
        assert _cli(tmp_path, str(tmp_path / f"r{rows}"), "--html", str(tmp_path / f"h{rows}.html")) == 0
        sizes[rows] = (tmp_path / f"h{rows}.html").stat().st_size
    # Ten times the rows: the same page but for the numbers in it.
    assert abs(sizes[600] - sizes[60]) < 0.02 * sizes[60], sizes
    assert sizes[600] < 100_000


@pytest.mark.parametrize(
    ("setup", "args", "message"),
    [
        ("none", ["runs", "--html", "runs/report-001.json"], "--html=runs/report-001.json is one of the runs read"),
        ("none", ["runs", "--html", "h.html", "--markdown", "h.html"], "--markdown and --html name the same file"),
        ("none", ["runs", "--html", "h.html", "--min-flips", "0"], "--min-flips must be an integer >= 1"),
        ("truncate", ["runs", "--html", "h.html"], "report-002.json: is not valid JSON"),
        ("other", ["runs", "--html", "h.html"], "report-002.json: holds a JSON list, not a pytest-context-bench report"),
        ("empty", ["empty", "--html", "h.html"], "the folder holds no .json file"),
        ("none", ["runs/missing.json", "--html", "h.html"], "missing.json: no such file"),
    ],
)
def test_bad_input_is_one_line_and_exit_4(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
    setup: str, args: list[str], message: str,
) -> None:
    monkeypatch.chdir(tmp_path)
    make_runs(tmp_path / "runs", n_runs=3)
    (tmp_path / "empty").mkdir()
    if setup == "truncate":
        text = (tmp_path / "runs" / "report-002.json").read_text()
        (tmp_path / "runs" / "report-002.json").write_text(text[: len(text) // 3])
    elif setup == "other":
        (tmp_path / "runs" / "report-002.json").write_text("[1, 2]")
    before = sorted(p.name for p in tmp_path.rglob("*"))
    assert main(["history", *args]) == 4
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("ctxbench history: error: ") and message in lines[0], err
    assert sorted(p.name for p in tmp_path.rglob("*")) == before


def test_the_page_in_chromium(browser: Any, tmp_path: Path) -> None:
    """Opened from disk in headless Chromium: nothing fetched, nothing logged, no
    script run, the hostile suite name shown as text, every chart drawn, the
    flagged point red; a screenshot is kept for a person to look at."""
    make_runs(tmp_path / "runs", n_runs=12, continuous=True)
    page_path = tmp_path / "history.html"
    assert main(["history", str(tmp_path / "runs"), "--html", str(page_path)]) == 0
    opened = open_report(browser, page_path, width=1280, height=900)
    page = opened.page
    opened.assert_clean()
    assert all(url.startswith("file://") for url in opened.requests)
    assert page.evaluate("document.scripts.length") == 0
    headings = page.locator("section.suite h2").all_inner_texts()
    assert headings == ["reader", "evil<script>alert(1)</script>\\x1b[31m\\u202e"]
    assert page.locator("svg").count() == 8
    # Each chart is laid out with a real size, and the drop's point is red.
    boxes = page.evaluate("Array.from(document.querySelectorAll('svg')).map(s => s.getBoundingClientRect().width)")
    assert all(w > 200 for w in boxes)
    red = page.locator("circle.bad").first
    assert page.evaluate("e => getComputedStyle(e).fill", red.element_handle()) == "rgb(207, 34, 46)"
    assert red.get_attribute("data-run") == str(DROP + 1)
    assert "significantly worse" in (red.locator("title").text_content() or "")
    assert page.locator("#flaky tbody tr").count() == 4
    page.screenshot(path=str(tmp_path / "history.png"), full_page=True)
    assert re.search(r"rgb\(207, 34, 46\)", page.evaluate("getComputedStyle(document.querySelector('#flags p')).color"))
