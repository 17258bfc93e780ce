"""Answers kept with the rows (issue 37): what the evaluators read, capped as the
reports cap a response, in JSON reports and baselines, and left out of a baseline
with --ctxbench-baseline-responses=off."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_context_bench.answers import (
    ANSWER_CAP,
    answer_problem,
    keep_answer,
    processed_from,
    rescore_problem,
)
from pytest_context_bench.baseline import load_baseline, write_baseline
from pytest_context_bench.calls import keep_io, record_io
from pytest_context_bench.errors import ConfigError
from pytest_context_bench.report.json_report import load_report, to_json_dict, write_json
from pytest_context_bench.report.run import Record, SuiteInfo, build_run_report
from pytest_context_bench.results import EvalRow
from pytest_context_bench.urls import register_secret

CALLS = [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": '{"a": 1}'}}]


def test_the_fields_evaluators_read_are_kept_as_returned() -> None:
    steps = [{"role": "assistant", "content": "looking", "tool_calls": CALLS}]
    answer = keep_answer(
        {"context": "c", "response": "Paris", "tool_calls": CALLS, "trajectory": steps, "other": 1}
    )
    assert answer == {"response": "Paris", "tool_calls": CALLS, "trajectory": steps}
    assert keep_answer({"context": "c"}) == {}  # the System returned no answer field
    assert keep_answer(None) is None  # it raised


def test_the_cap_is_the_reports_cap_on_a_response() -> None:
    from pytest_context_bench.calls import IO_CLIP

    assert ANSWER_CAP == IO_CLIP == 2000


def test_a_long_response_keeps_its_head_and_is_cut() -> None:
    answer = keep_answer({"response": "x" * (ANSWER_CAP + 500)})
    assert answer is not None
    assert answer["response"] == "x" * ANSWER_CAP + "… [500 more characters]"
    assert answer["cut"] == ["response"]
    # Exactly at the cap: whole.
    assert keep_answer({"response": "y" * ANSWER_CAP}) == {"response": "y" * ANSWER_CAP}


def test_a_structure_past_the_cap_is_left_out() -> None:
    big = [{"name": "f", "arguments": {"text": "z" * ANSWER_CAP}}]
    assert keep_answer({"response": "ok", "tool_calls": big}) == {"response": "ok", "cut": ["tool_calls"]}


def test_what_is_not_json_or_a_secret_is_named_in_cut() -> None:
    class Opaque:
        def __repr__(self) -> str:
            return "<Opaque>"

    answer = keep_answer(
        {"response": "a\ud800b", "tool_calls": [{"x": float("nan")}], "trajectory": [Opaque()]}
    )
    assert answer == {
        "response": "a?b",
        "tool_calls": [{"x": "nan"}],
        "trajectory": ["<Opaque>"],
        "cut": ["response", "tool_calls", "trajectory"],
    }
    json.dumps(answer, allow_nan=False).encode("utf-8")  # strict JSON, UTF-8
    deep: Any = []
    for _ in range(60):
        deep = [deep]
    assert keep_answer({"trajectory": deep}) == {"cut": ["trajectory"]}


def test_a_secret_the_model_echoed_is_redacted_and_cut() -> None:
    key = "sk-answers-test-0123456789abcdef"
    register_secret(key)
    answer = keep_answer({"response": f"the key is {key}", "tool_calls": [{"arguments": {"k": key}}]})
    assert answer is not None
    assert key not in json.dumps(answer)
    assert answer["cut"] == ["response", "tool_calls"]


def test_rescore_problem_and_processed_from() -> None:
    assert rescore_problem({"response": "x"}) is None
    assert rescore_problem(None) == "its answer was not kept"
    assert "cut" in (rescore_problem({"cut": ["response"]}) or "")
    # A System failure keeps its error: nothing to score again.
    assert rescore_problem(None, {"type": "E", "message": "m", "where": "system"}) is None
    assert rescore_problem(None, {"type": "E", "message": "m", "where": "evaluator:x"}) == "its answer was not kept"
    assert "memory" in (rescore_problem({"response": "x"}, None, {"conversation_id": "c"}) or "")
    processed = processed_from(
        {"id": "q", "answer": "Paris", "response": "stale"},
        {"response": "Rome", "cut": []},
        {"prompt_tokens": 12, "completion_tokens": 3, "score_field": "f1"},
    )
    assert processed == {"id": "q", "answer": "Paris", "response": "Rome",
                         "api_usage": {"prompt_tokens": 12, "completion_tokens": 3}}


@pytest.mark.parametrize(
    ("answer", "problem"),
    [
        ([], "not an object"),
        ({"reply": "x"}, "unknown key(s) 'reply'"),
        ({"response": 3}, "'response' is not a string"),
        ({"cut": ["context"]}, "'cut' is not a list"),
        ({"cut": "response"}, "'cut' is not a list"),
    ],
)
def test_answer_problem(answer: Any, problem: str) -> None:
    assert problem in (answer_problem(answer) or "")


def _report(tmp_path: Path, responses: list[Any]) -> dict[str, Any]:
    """A JSON report whose rows kept what ``record_io`` keeps of each response."""
    records = []
    for i, response in enumerate(responses):
        with keep_io() as io:
            record_io({"answer": "Paris"}, {"response": response})
        row = EvalRow("s", f"q-{i}", {"f1": 1.0}, 3, 3, {"score_field": "f1"}, 0.1, "qa")
        records.append(Record("s", "cli", (0, 0, i), "pass", row, io[-1]))
    report = build_run_report(records, {"cli": SuiteInfo("cli", datasets=("qa",))})
    doc = to_json_dict(report, run={"options": {}}, gates_enforced=True, version="0.1.0")
    write_json(doc, tmp_path / "r.json")
    return doc


def test_reports_and_baselines_keep_the_answers(tmp_path: Path) -> None:
    doc = _report(tmp_path, ["Paris", "p" * (ANSWER_CAP + 1)])
    read = load_report(tmp_path / "r.json")  # valid against the schema
    assert read["rows"][0]["answer"] == {"response": "Paris"}
    assert read["rows"][1]["answer"]["cut"] == ["response"]
    write_baseline(tmp_path / "b.json", doc, dataset_fingerprints={"qa": "fp"})
    text = (tmp_path / "b.json").read_text()
    lines = [line for line in text.splitlines() if '"example_id"' in line]
    assert len(lines) == 2 and lines[0].endswith('"answer": {"response": "Paris"}},')
    base = load_baseline(tmp_path / "b.json")
    assert [r.io for r in base.records] == [
        {"answer": {"response": "Paris"}},
        {"answer": read["rows"][1]["answer"]},
    ]
    # --ctxbench-baseline-responses=off: no answer is written, the rest is the same.
    write_baseline(tmp_path / "off.json", doc, dataset_fingerprints={"qa": "fp"}, answers=False)
    off = (tmp_path / "off.json").read_text()
    assert '"answer"' not in off and "Paris" not in off.split('"rows"')[1]
    assert [r.io for r in load_baseline(tmp_path / "off.json").records] == [None, None]
    assert off.replace("\n", "") != text.replace("\n", "")
    # A baseline dict written again without its answers.
    again = json.loads(text)
    write_baseline(tmp_path / "again.json", again, answers=False)
    assert (tmp_path / "again.json").read_text() == off


def test_a_baseline_with_a_bad_answer_is_refused(tmp_path: Path) -> None:
    doc = _report(tmp_path, ["Paris"])
    write_baseline(tmp_path / "b.json", doc, dataset_fingerprints={"qa": "fp"})
    data = json.loads((tmp_path / "b.json").read_text())
    data["rows"][0]["answer"] = {"response": ["not", "text"]}
    (tmp_path / "b.json").write_text(json.dumps(data))
    with pytest.raises(ConfigError, match=r"rows\[0\] \(suite 's', example_id 'q-0'\) has an 'answer' whose 'response' is not a string"):
        load_baseline(tmp_path / "b.json")


def test_a_report_with_a_bad_answer_is_refused(tmp_path: Path) -> None:
    _report(tmp_path, ["Paris"])
    data = json.loads((tmp_path / "r.json").read_text())
    data["rows"][0]["answer"] = {"reply": "x"}
    (tmp_path / "r.json").write_text(json.dumps(data))
    with pytest.raises(ConfigError, match=r"rows\[0\]\['answer'\]: Additional properties are not allowed"):
        load_report(tmp_path / "r.json")


BASE_SYSTEM = """
class S:
    name = "s"
    def process(self, example):
        return {**example, "response": example["answer"], "tool_calls": [{"name": "f", "arguments": {"id": example["id"]}}]}
s = S()
"""


def test_the_option_and_its_ini_twin(pytester: pytest.Pytester) -> None:
    """One inner run per form: answers kept by default (and under -n 2, as the
    report ships them from the workers), left out with the option, or its ini
    twin; a bad value is one usage error."""
    from helpers import qa_lines

    pytester.makefile(".jsonl", qa=qa_lines(4))
    pytester.makepyfile(bsys=BASE_SYSTEM)
    pytester.makeini("[pytest]\npythonpath = .\n")
    args = ["--ctxbench-dataset=qa.jsonl", "--ctxbench-system=bsys:s"]
    on = pytester.runpytest_subprocess(*args, "-n", "2", "--ctxbench-save-baseline=on.json")
    assert on.ret == 0, on.stdout.str()
    rows = json.loads((pytester.path / "on.json").read_text())["rows"]
    assert len(rows) == 4
    for r in rows:
        n = r["example_id"].split("-")[1]
        assert r["answer"] == {
            "response": f"city {n}",
            "tool_calls": [{"arguments": {"id": r["example_id"]}, "name": "f"}],
        }
    off = pytester.runpytest(*args, "--ctxbench-baseline-responses=off", "--ctxbench-save-baseline=off.json")
    assert off.ret == 0
    assert all("answer" not in r for r in json.loads((pytester.path / "off.json").read_text())["rows"])
    pytester.makeini("[pytest]\npythonpath = .\nctxbench_baseline_responses = off\n")
    ini = pytester.runpytest(*args, "--ctxbench-save-baseline=ini.json")
    assert ini.ret == 0
    assert all("answer" not in r for r in json.loads((pytester.path / "ini.json").read_text())["rows"])
    bad = pytester.runpytest(*args, "--ctxbench-baseline-responses=maybe")
    assert bad.ret == pytest.ExitCode.USAGE_ERROR
    bad.stderr.fnmatch_lines(["ERROR: --ctxbench-baseline-responses must be on or off, given: 'maybe'"])
