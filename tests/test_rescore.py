"""``ctxbench rescore`` (issue 37): saved answers scored again without the System.

Reports and baselines are built in-process the way the plugin builds them (each row
scored by ``score_processed`` with its answer kept by ``record_io``); the command
runs in-process through ``ctxbench``'s ``main`` (one subprocess: the System module
that must never be imported).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from pytest_context_bench.baseline import load_baseline, write_baseline
from pytest_context_bench.calls import keep_io
from pytest_context_bench.cli import main
from pytest_context_bench.datasets import resolve_dataset
from pytest_context_bench.engine import score_processed
from pytest_context_bench.evaluators import wired_evaluators
from pytest_context_bench.report import build_run_report, load_report, to_json_dict, write_json
from pytest_context_bench.report.rows import row_status
from pytest_context_bench.report.run import Record, SuiteInfo
from pytest_context_bench.results import EvalRow
from pytest_context_bench.testing import FakeLLM

N = 9

STRICT_PY = '''
class Strict:
    """A stricter check than F1: the answer, exactly and alone."""
    name = "strict"
    def score(self, original, processed):
        return {"strict": float(str(processed.get("response", "")).strip() == original["answer"])}

strict = Strict()
'''


def _data(folder: Path) -> Path:
    path = folder / "qa.jsonl"
    path.write_text(
        "".join(
            json.dumps({"id": f"q-{i}", "context": f"The capital of country {i} is city {i}.",
                        "question": f"What is the capital of country {i}?", "answer": f"city {i}"}) + "\n"
            for i in range(1, N + 1)
        ),
        encoding="utf-8",
    )
    return path


def _answer(i: int) -> str:
    """Right for i % 3 == 1, right with a full stop for i % 3 == 2 (F1 1.0, not
    exactly the answer), wrong otherwise."""
    return [f"no idea {i}", f"city {i}", f"city {i}."][i % 3]


def build_report(
    folder: Path,
    *,
    answers: dict[int, Any] | None = None,
    evaluators: list[Any] | None = None,
    systems: list[str] | None = None,
    min_pass_rate: float | None = None,
    suite: str = "reader",
) -> Path:
    """A JSON report of a run on qa.jsonl, as the plugin writes it."""
    data = _data(folder)
    ds = resolve_dataset(str(data))
    evs = evaluators if evaluators is not None else wired_evaluators(ds)
    records = []
    for i in range(1, N + 1):
        original = ds[i - 1]
        response = (answers or {}).get(i, _answer(i))
        with keep_io() as io:
            row, _ = score_processed(original, {**original, "response": response}, evs,
                                     system=suite, latency=0.01 * i, score_field="f1")
        records.append(Record(suite, "cli", (0, 0, i - 1, -1, 0),
                              row_status(row.error, row.scores, "f1", 0.7), row, io[-1]))
    limits = {"min_pass_rate": min_pass_rate} if min_pass_rate is not None else {}
    report = build_run_report(records, {"cli": SuiteInfo("cli", datasets=(ds.tag,), limits=limits)})
    run = {
        "options": {"datasets": ["qa.jsonl"], "systems": systems or ["mysystems:reader"], "threshold": 0.7, "prices": None},
        "datasets": [{"tag": ds.tag, "family": ds.family, "source": str(data), "examples": N,
                      "fingerprint": ds.fingerprint, "selected": N, "selection": "all"}],
    }
    doc = to_json_dict(report, run=run, gates_enforced=True, version="0.1.0")
    path = folder / "report.json"
    write_json(doc, path)
    return path


def rescore(tmp_path: Path, *args: str) -> int:
    here = os.getcwd()
    os.chdir(tmp_path)
    try:
        return main(["rescore", *args, "--cache-dir", str(tmp_path / "cache")])
    finally:
        os.chdir(here)


def _rows(path: Path) -> list[tuple[str, str, dict[str, float]]]:
    return [(r["example_id"], r["status"], r["scores"]) for r in load_report(path)["rows"]]


def test_the_same_evaluators_give_the_same_report(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    report = build_report(tmp_path, min_pass_rate=0.5)
    assert rescore(tmp_path, str(report), "--json", "out.json") == 0
    before, after = load_report(report), load_report(tmp_path / "out.json")
    for key in ("summary", "intervals", "gates"):
        assert after[key] == before[key], key
    # The suites say which evaluators scored them now.
    assert [{k: v for k, v in x.items() if k != "evaluators"} for x in after["suites"]] == before["suites"]
    assert after["suites"][0]["evaluators"] == after["run"]["rescored"]["evaluators"]
    for a, b in zip(after["rows"], before["rows"]):
        assert {k: v for k, v in a.items()} == b
    assert after["run"]["rescored"] == {
        "from": str(report), "kind": "report", "not_rescored": [],
        "evaluators": {"qa": [{"name": "answer_quality", "class": "pytest_context_bench.evaluators.answer_quality:AnswerQuality",
                               "config": after["run"]["rescored"]["evaluators"]["qa"][0]["config"]}]},
    }
    out = capsys.readouterr().out
    assert f"re-scored 9 of 9 rows of {report} (report) with: answer_quality" in out


def test_an_added_evaluator_and_score_field_rescore_and_regate(tmp_path: Path) -> None:
    report = build_report(tmp_path, min_pass_rate=0.6)
    (tmp_path / "strictmod.py").write_text(STRICT_PY)
    status = rescore(tmp_path, str(report), "--evaluator", "strictmod:strict", "--score-field", "strict",
                     "--json", "out.json", "--markdown", "out.md", "--html", "out.html")
    # F1 passed 6 of 9 (min pass rate 0.6 met); exactly "city i" alone passes 3.
    assert status == 1
    doc = load_report(tmp_path / "out.json")
    assert [(e, s) for e, s, _ in _rows(tmp_path / "out.json")] == [
        (f"q-{i}", "pass" if i % 3 == 1 else "below") for i in range(1, N + 1)
    ]
    assert all(set(r["scores"]) == {"f1", "exact_match", "recall", "contains", "strict"} for r in doc["rows"])
    assert doc["summary"]["reader"]["pass_rate"] == pytest.approx(3 / 9)
    assert doc["suites"][0]["score_field"] == "strict"
    assert [(g["gate"], g["passed"]) for g in doc["gates"]] == [("min_pass_rate", False)]
    assert "re-scored" in (tmp_path / "out.md").read_text() and "strictmod" not in (tmp_path / "out.md").read_text()
    html = (tmp_path / "out.html").read_text()
    assert "strict" in html
    # Without the gate: reported, exit 0.
    assert rescore(tmp_path, str(report), "--evaluator", "strictmod:strict", "--score-field", "strict",
                   "--json", "out2.json", "--no-gate") == 0


def test_a_baseline_is_rescored_and_saved_again(tmp_path: Path) -> None:
    report = build_report(tmp_path)
    write_baseline(tmp_path / "base.json", load_report(report), dataset_fingerprints={"qa": resolve_dataset(str(tmp_path / "qa.jsonl")).fingerprint})
    (tmp_path / "strictmod.py").write_text(STRICT_PY)
    status = rescore(tmp_path, "base.json", "--evaluator", "strictmod:strict", "--json", "out.json",
                     "--save-baseline", "new-base.json")
    assert status == 0
    doc = load_report(tmp_path / "out.json")
    assert doc["run"]["rescored"]["kind"] == "baseline"
    assert doc["summary"]["reader"]["latency_mean"] == "nan"  # a baseline keeps no latency
    new = load_baseline(tmp_path / "new-base.json")
    assert [r.row.scores.get("strict") for r in new.records] == [float(i % 3 == 1) for i in range(1, N + 1)]
    assert all(r.io and r.io["answer"]["response"] == _answer(i) for i, r in enumerate(new.records, 1))


def test_the_system_is_never_imported(tmp_path: Path) -> None:
    """The run's System module raises on import (and leaves a mark): rescoring its
    report, in a fresh interpreter whose path finds the module, never imports it."""
    report = build_report(tmp_path, systems=["boom_system:reader"])
    (tmp_path / "boom_system.py").write_text(
        "import pathlib\npathlib.Path('IMPORTED').write_text('yes')\nraise RuntimeError('the System was imported')\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), *sys.path])}
    done = subprocess.run(
        [sys.executable, "-c", "import sys; from pytest_context_bench.cli import main; sys.exit(main())",
         "rescore", str(report), "--json", "out.json", "--cache", "off"],
        cwd=tmp_path, env=env, capture_output=True, text=True, check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert not (tmp_path / "IMPORTED").exists()
    assert "boom_system" not in done.stdout + done.stderr
    assert load_report(tmp_path / "out.json")["run"]["options"]["systems"] == ["boom_system:reader"]


def test_cut_answers_are_left_out_and_listed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    report = build_report(tmp_path, answers={4: "city 4 " + "x" * 3000})
    status = rescore(tmp_path, str(report), "--json", "out.json", "--save-baseline", "b.json")
    assert status == 1
    out = capsys.readouterr().out
    assert "re-scored 8 of 9 rows" in out
    assert "reader: qa/q-4 (its answer's response was cut" in " ".join(out.split())
    assert "baseline not saved to b.json: 1 row(s) could not be scored again" in out
    doc = load_report(tmp_path / "out.json")
    assert doc["complete"] is False and [r["example_id"] for r in doc["rows"]] == [f"q-{i}" for i in (1, 2, 3, 5, 6, 7, 8, 9)]
    assert not (tmp_path / "b.json").exists()


@pytest.mark.parametrize(
    ("setup", "args", "message"),
    [
        (None, ["report.json", "--json", "report.json"], "--json=report.json is the file scored again"),
        (None, ["report.json", "--json", "qa.jsonl"], "--json=qa.jsonl is the dataset 'qa'"),
        (None, ["report.json", "--json", "o.json", "--html", "o.json"], "--html and --json name the same file"),
        (None, ["report.json", "--json", "sub"], "--json must be a file path, given a directory"),
        (None, ["missing.json", "--json", "o.json"], "missing.json: no such file"),
        ("truncate", ["report.json", "--json", "o.json"], "is not valid JSON"),
        ("edit", ["report.json", "--json", "o.json"], "(were its scores edited?)"),
        ("dataset", ["report.json", "--json", "o.json"], "is not the one"),
        ("nodata", ["report.json", "--json", "o.json"], "pass the examples with --dataset SPEC"),
        (None, ["report.json", "--json", "o.json", "--evaluator", "nosuch:thing"], "--evaluator=nosuch:thing: cannot import module 'nosuch'"),
        (None, ["report.json", "--json", "o.json", "--cache", "sometimes"], None),
        ("noanswers", ["base.json", "--json", "o.json"], "keeps no answers"),
    ],
)
def test_bad_input_is_one_line_and_exit_4(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], setup: str | None, args: list[str], message: str | None
) -> None:
    report = build_report(tmp_path)
    (tmp_path / "sub").mkdir()
    text = report.read_text()
    if setup == "truncate":
        report.write_text(text[: len(text) // 2])
    elif setup == "edit":
        doc = json.loads(text)
        doc["rows"][2]["scores"]["f1"] = 1.0  # a failing row made to look passing
        report.write_text(json.dumps(doc))
    elif setup == "dataset":
        (tmp_path / "qa.jsonl").write_text((tmp_path / "qa.jsonl").read_text().replace("city 9.", "town 9."))
    elif setup == "nodata":
        (tmp_path / "qa.jsonl").unlink()
    elif setup == "noanswers":
        write_baseline(tmp_path / "base.json", load_report(report), dataset_fingerprints={}, answers=False)
    before = sorted(p.name for p in tmp_path.iterdir())
    assert rescore(tmp_path, *args) == 4
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip()]
    if message is not None:
        assert len(lines) == 1 and message in lines[0], err
        assert lines[0].startswith("ctxbench rescore: error: ")
    assert "Traceback" not in err
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # nothing written


def test_hostile_text_is_inert_in_the_terminal(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    report = build_report(tmp_path, suite="evil\x1b[2J\u202e")
    assert rescore(tmp_path, str(report), "--json", "out.json", "--html", "out.html") == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\u202e" not in out and "evil\\x1b[2J\\u202e" in out
    assert "\x1b" not in (tmp_path / "out.html").read_text().split("<script")[0]


JUDGE_PY = '''
import os
from pytest_context_bench.evaluators import LLMJudge

judge = LLMJudge(base_url=os.environ["JUDGE_URL"], model="judge-1", max_retries=0)
'''


def test_judges_are_called_through_the_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A judge added by --evaluator rates each answer through the LLM cache: the
    second rescore (--cache replay) sends nothing and gives the same scores; the
    judge's tokens are the report's own (it reads back)."""
    report = build_report(tmp_path)
    (tmp_path / "judgemod.py").write_text(JUDGE_PY)
    with FakeLLM(handler=lambda request: "4") as llm:
        monkeypatch.setenv("JUDGE_URL", llm.base_url)
        monkeypatch.syspath_prepend(str(tmp_path))
        assert rescore(tmp_path, str(report), "--evaluator", "judgemod:judge", "--json", "one.json") == 0
        sent = len(llm.requests)
        assert sent == N
        assert rescore(tmp_path, str(report), "--evaluator", "judgemod:judge", "--json", "two.json", "--cache", "replay") == 0
        assert len(llm.requests) == sent  # all replayed
    one, two = load_report(tmp_path / "one.json"), load_report(tmp_path / "two.json")
    assert [r["scores"]["judge_score"] for r in one["rows"]] == [0.75] * N
    assert [r["scores"] for r in one["rows"]] == [r["scores"] for r in two["rows"]]
    usage = [r["metadata"]["judge_usage"] for r in two["rows"]]
    assert all(u["cache_hits"] == 1 and u["calls"] == 0 for u in usage)
    assert one["llm"]["tokens"]["prompt_tokens"] == sum(r["metadata"]["judge_usage"]["prompt_tokens"] for r in one["rows"]) > 0


# ------------------------------------------------------------ the gate's pieces


def test_needs_rescore() -> None:
    from pytest_context_bench.rescore import needs_rescore

    aq = {"name": "answer_quality", "class": "m:AQ", "config": "a"}
    strict = {"name": "strict", "class": "s:S", "config": "b"}
    base = {"label": "s", "evaluators": {"qa": [aq]}, "score_field": None}
    assert needs_rescore(base, {"qa": [aq]}, None) is None
    assert needs_rescore(base, {"qa": [aq], "other": [strict]}, None) is None  # a new dataset
    assert needs_rescore(base, {"qa": [aq, strict]}, None) == "qa: answer_quality then, answer_quality, strict now"
    assert needs_rescore(base, {"qa": [{**aq, "config": "z"}]}, None) == "qa: answer_quality (other settings)"
    assert needs_rescore(base, {"qa": [aq]}, "exact_match") == "score field each example's own then, exact_match now"
    # A baseline saved before evaluators were recorded is compared as it is.
    assert needs_rescore({"label": "s", "score_field": None}, {"qa": [strict]}, "x") is None
    assert needs_rescore(None, {"qa": [strict]}, None) is None


def test_evaluator_identity_reads_plain_settings_only() -> None:
    import re

    from pytest_context_bench.rescore import evaluator_identity

    class Rx:
        name = "rx"

        def __init__(self, pattern: str, base_url: str = "http://127.0.0.1:1") -> None:
            self.pattern = re.compile(pattern)
            self.base_url = base_url  # where, not how: not part of it
            self._cache: dict[str, Any] = {}
            self.lock = object()  # not plain data: not part of it

        def score(self, original: Any, processed: Any) -> dict[str, float]:
            return {}

    a, b, c = Rx("^a$"), Rx("^a$", "http://127.0.0.1:2"), Rx("^a+$")
    assert evaluator_identity(a) == evaluator_identity(b)
    assert evaluator_identity(a)["config"] != evaluator_identity(c)["config"]
    assert evaluator_identity(a)["class"].endswith(":test_evaluator_identity_reads_plain_settings_only.<locals>.Rx")


def test_apply_rescored_replaces_only_what_was_scored_again(tmp_path: Path) -> None:
    from pytest_context_bench.baseline import load_baseline
    from pytest_context_bench.rescore import apply_rescored

    report = build_report(tmp_path)
    doc = load_report(report)
    doc["suites"][0]["evaluators"] = {"qa": [{"name": "answer_quality", "class": "x:AQ", "config": "a"}]}
    write_baseline(tmp_path / "b.json", doc, dataset_fingerprints={})
    base = load_baseline(tmp_path / "b.json")
    run_suites = [{**doc["suites"][0], "evaluators": {"qa": [{"name": "strict", "class": "s:S", "config": "b"}]}}]
    q1 = next(r for r in base.records if r.row.example_id == "q-1")
    row = {**q1.row.to_dict(), "scores": {"strict": 0.0}, "metadata": {"score_field": "strict"}}
    entries = [
        {"suite": "reader", "dataset": "qa", "example_id": "q-1", "status": "below", "order": [0], "row": row},
        {"suite": "reader", "dataset": "qa", "example_id": "q-2", "problem": "its answer was not kept"},
    ]
    applied = apply_rescored(base, run_suites, entries)
    assert applied.error is None
    ids = {r.row.example_id: r for r in applied.baseline.records}
    assert ids["q-1"].row.scores == {"strict": 0.0} and ids["q-1"].status == "below"
    assert "q-2" not in ids  # could not be scored again: out of the comparison
    q3 = next(r for r in base.records if r.row.example_id == "q-3")
    assert ids["q-3"] is q3  # not run here: as it was (it only counts as missing)
    assert applied.baseline.suite("reader")["evaluators"] == run_suites[0]["evaluators"]
    assert applied.rescored_with == {"reader": ["strict"]}
    assert applied.notes["reader"][0].startswith("baseline re-scored with: strict (qa: answer_quality then, strict now); 1 baseline row(s)")
    assert applied.notes["reader"][1] == "not re-scored, left out of the comparison (1): qa/q-2 (its answer was not kept)"
    # The same run's evaluators: nothing changes.
    same = apply_rescored(base, doc["suites"], entries)
    assert same.baseline is base and same.notes == {}
    # Without answers: the one error, with the fix.
    write_baseline(tmp_path / "off.json", doc, dataset_fingerprints={}, answers=False)
    off = apply_rescored(load_baseline(tmp_path / "off.json"), run_suites, [])
    assert off.error is not None and "keeps no answers to score again" in off.error
    assert "--ctxbench-save-baseline" in off.error


def test_the_html_views_say_re_scored(browser: Any, tmp_path: Path) -> None:
    """In Chromium: the rescored report's header names the file and the evaluators;
    a comparison with a baseline scored again leads with its note; hostile text in
    both stays text."""
    from browser import open_report

    from pytest_context_bench.report.html import render_html

    report = build_report(tmp_path, suite="evil<img src=x onerror=alert(1)>\u202e")
    (tmp_path / "strictmod.py").write_text(STRICT_PY)
    assert rescore(tmp_path, str(report), "--evaluator", "strictmod:strict", "--json", "out.json", "--html", "out.html") == 0
    opened = open_report(browser, tmp_path / "out.html")
    opened.assert_clean()
    header = opened.page.locator("#run").inner_text()
    assert f"re-scored from {report} (report) with: answer_quality, strict" in " ".join(header.split())
    doc = load_report(tmp_path / "out.json")
    label = doc["suites"][0]["label"]
    note = "baseline re-scored with: answer_quality, strict (qa: answer_quality then, answer_quality, strict now); 9 baseline row(s) scored again from their kept answers, no System call"
    doc["baseline_comparison"] = {
        "baseline": "base.json", "confidence": 0.95, "familywise": "none", "unevaluated": [], "changed_examples": [],
        "metrics": [{"suite": label, "metric": "pass_rate", "then": 0.7, "now": 0.7, "change": 0.0, "ci_low": 0.0,
                     "ci_high": 0.0, "test": "mcnemar-exact", "p_value": 1.0, "p_value_sided": "one-sided (worse)",
                     "holm_adjusted_p": None, "tolerance": "0.02", "passed": True}],
        "suites": [{"suite": label, "n_matched": 9, "trials_left_out": {}, "notes": [note],
                    "rescored_with": ["answer_quality", "strict"], "flipped_to_fail": [], "flipped_to_pass": [],
                    "new": [], "missing": []}],
    }
    (tmp_path / "cmp.html").write_text(render_html(doc))
    opened = open_report(browser, tmp_path / "cmp.html")
    opened.assert_clean()
    page = opened.page
    notes = page.locator("#comparison p.note").all_inner_texts()
    assert notes[0] == f"{label}: {note}".replace("\u202e", "[U+202E]")
    assert page.evaluate("document.querySelectorAll('img').length") == 0
    page.screenshot(path=str(tmp_path / "rescored-comparison.png"), full_page=True)


def test_a_suite_without_rows_names_its_evaluators_as_one_with_rows() -> None:
    """A shard that got none of a suite's examples describes the suite as the shards
    that did (else `ctxbench merge` would see two runs)."""
    evaluators = {"qa": [{"name": "answer_quality", "class": "m:AQ", "config": "a"}]}
    info = SuiteInfo("cli", datasets=("qa",), limits={"min_pass_rate": 0.5}, labels={"sys": "sys"},
                     evaluators=evaluators)
    row = EvalRow("sys", "q-1", {"f1": 1.0}, 1, 1, {"score_field": "f1"}, 0.1, "qa")
    with_rows = build_run_report([Record("sys", "cli", (0, 0, 0), "pass", row)], {"cli": info})
    without = build_run_report([], {"cli": info})
    assert with_rows.suites == without.suites
    assert without.suites[0]["evaluators"] == evaluators
