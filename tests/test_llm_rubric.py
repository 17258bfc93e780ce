"""The llm-rubric assertion: promptfoo's verdicts and prompts, case by case.

tests/oracles/promptfoo/rubric_cases.json holds 55 cases (each an output, its
assertions and the grader's reply); rubric_expected.json what promptfoo 0.121.20
itself decided for each, grading through its own OpenAI provider pointed at a
scripted endpoint, and the messages it sent (record_rubric.mjs, see the README).
Here each case runs through our Assertions with FakeLLM answering the same reply:
the same pass/fail, score and named scores, and the same grading messages sent.
The cases of :data:`DIFFERENCES` are where a reply that gives no verdict is the
row's error here (docs/differences.md), never a silent pass or 0.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from pytest_context_bench.errors import ExampleDataError, LLMError
from pytest_context_bench.evaluators.assertions import Assertions
from pytest_context_bench.evaluators.judges import JudgeError, LLMJudge
from pytest_context_bench.evaluators.llm_rubric import grading_output, read_grading
from pytest_context_bench.testing import FakeLLM, Reply

ORACLE = Path(__file__).parent / "oracles" / "promptfoo"
CASES = {c["id"]: c for c in json.loads((ORACLE / "rubric_cases.json").read_text("utf-8"))}
EXPECTED = json.loads((ORACLE / "rubric_expected.json").read_text("utf-8"))["cases"]

#: case → how we differ from promptfoo (docs/differences.md, "llm-rubric"):
#: "error": the row is an error where promptfoo gives a verdict; "verdict": a null
#: score is no score (the verdict's 1 or 0) where promptfoo reads it as 0.
DIFFERENCES: dict[str, str] = {
    "rubric-d1": "error",  # no JSON object: promptfoo fails it, score 0
    "rubric-d2": "error",  # score "NaN": promptfoo takes the pass as the score
    "rubric-d3": "error",  # score "11/10": likewise
    "rubric-d4": "error",  # score 7: promptfoo keeps 7
    "rubric-d5": "error",  # score -0.5: promptfoo keeps it
    "rubric-d6": "error",  # pass "maybe": promptfoo reads false
    "rubric-d7": "error",  # pass 1: promptfoo reads false
    "rubric-d8": "error",  # {}: promptfoo passes it, score 1
    "rubric-d9": "error",  # a reason, no verdict: promptfoo passes it
    "rubric-d10": "verdict",  # score null: 0 for promptfoo, here the pass's 1
    "rubric-d11": "error",  # the grader answered HTTP 400: promptfoo fails, score 0
    "rubric-d12": "error",  # a JSON array: promptfoo fails it
    "rubric-d13": "error",  # score "": promptfoo reads 0
    "rubric-d14": "error",  # score true: promptfoo reads 1
    "rubric-d15": "error",  # "Score: 5 out of 5 but actually 1": no JSON
}


@pytest.fixture(scope="module")
def grader():
    with FakeLLM() as server:
        yield server


def _reply(grader: Any) -> Reply:
    if isinstance(grader, dict):
        return Reply(grader["error"], status=grader["status"])
    return Reply(grader)


def run_case(case: dict[str, Any], server: FakeLLM) -> dict[str, Any]:
    example: dict[str, Any] = {"id": case["id"], **(case.get("vars") or {}), "assert": case["assert"]}
    if case.get("threshold") is not None:
        example["threshold"] = case["threshold"]
    server.set_handler(lambda request: _reply(case["grader"]))
    before = len(server.requests)
    judge = LLMJudge(server.base_url, "grader", max_retries=0, timeout=5.0)
    checks = Assertions(base_dir=str(ORACLE), judge=judge)
    try:
        scores, details = checks.score_details(example, {"response": case["output"]})
    except (ExampleDataError, JudgeError, LLMError) as exc:
        return {"error": str(exc), "requests": [r.messages for r in server.requests[before:]]}
    named = {k: v for k, v in scores.items() if k not in ("assert_score", "assert_pass")}
    return {
        "pass": scores["assert_pass"] == 1.0,
        "score": scores["assert_score"],
        "named": named,
        "details": details,
        "requests": [r.messages for r in server.requests[before:]],
    }


@pytest.mark.parametrize("case_id", sorted(CASES))
def test_same_verdict_and_prompt_as_promptfoo(case_id: str, grader: FakeLLM) -> None:
    case, expected = CASES[case_id], EXPECTED[case_id]
    ours = run_case(case, grader)
    # The judge is asked what promptfoo asks its grader, message for message.
    assert ours["requests"] == expected["requests"]
    how = DIFFERENCES.get(case_id)
    if how == "error":
        assert "error" in ours and "error" not in expected, (ours, expected)
        return
    if how == "verdict":
        assert ours["pass"] is not expected["pass"], (ours, expected)
        return
    assert "error" not in ours, ours
    assert ours["pass"] is expected["pass"], (ours, expected)
    assert math.isclose(ours["score"], expected["score"], abs_tol=1e-9), (ours, expected)
    for name, value in (expected.get("namedScores") or {}).items():
        assert math.isclose(ours["named"][name], value, abs_tol=1e-9), (name, ours, expected)


def test_the_rubric_oracle_covers_both_polarities_and_every_difference_is_documented() -> None:
    kinds = {a["type"] for c in CASES.values() for a in c["assert"]}
    assert {"llm-rubric", "not-llm-rubric"} <= kinds
    assert len(CASES) >= 50 and set(EXPECTED) == set(CASES)
    assert set(DIFFERENCES) == {k for k in CASES if k.startswith("rubric-d")}
    text = (Path(__file__).parents[1] / "docs" / "differences.md").read_text("utf-8")
    for needle in ('"NaN"', '"11/10"', "no JSON object", '"maybe"', "score null", "HTTP"):
        assert needle in text, needle


def test_errors_say_what_the_reply_lacked(grader: FakeLLM) -> None:
    said = {cid: run_case(CASES[cid], grader)["error"] for cid, how in DIFFERENCES.items() if how == "error"}
    assert "has no JSON object" in said["rubric-d1"]
    assert "gives 'score' as \"NaN\", not a number from 0 to 1" in said["rubric-d2"]
    assert '"11/10"' in said["rubric-d3"] and "outside 0 to 1" in said["rubric-d4"]
    assert "'pass' as \"maybe\"" in said["rubric-d6"]
    assert "neither 'pass' nor 'score'" in said["rubric-d8"]
    assert "HTTP 400" in said["rubric-d11"]
    assert "has no JSON object" in said["rubric-d12"]  # promptfoo reads objects only


def test_grading_output_is_what_promptfoos_template_writes() -> None:
    assert grading_output('{"b": 1, "a": [1, 2.0], "1": true}') == '{"1":true,"b":1,"a":[1,2]}'
    assert grading_output('[1, "x", {"k": null}, null, [2, 3]]') == '1,x,{"k":null},,[2,3]'
    assert grading_output('"quoted"') == "quoted"
    assert grading_output("null") == ""
    assert grading_output("1.50") == "1.5"
    assert grading_output("NaN") == "NaN"  # not JSON for JSON.parse: the text itself
    assert grading_output("plain text") == "plain text"


@pytest.mark.parametrize(
    ("reply", "threshold", "inverse", "want"),
    [
        ('{"pass": true, "score": 0.9, "reason": "ok"}', None, False, (True, 0.9, "ok")),
        ('{"pass": true, "score": 0.9}', 0.95, False, (False, 0.9, "Score 0.9 below threshold 0.95")),
        ('{"pass": "TRUE"}', None, False, (True, 1.0, "Grading passed")),
        ('{"pass": false, "score": 0.25, "reason": "r"}', None, True, (True, 0.75, "r")),
        ('noise {"pass": true, "score": "1e-1", "reason": "x"} more', None, False, (True, 0.1, "x")),
    ],
)
def test_read_grading_rules(reply: str, threshold: float | None, inverse: bool, want: tuple) -> None:
    assert read_grading(reply, threshold, inverse) == want


def test_hostile_grader_replies_are_errors_or_inert(grader: FakeLLM) -> None:
    long = '{"pass": false, "score": 0, "reason": "' + "\\u001b[2J<b>" * 7_000 + '"}'
    case = {"id": "long", "output": "o", "assert": [{"type": "llm-rubric", "value": "r"}], "grader": long}
    got = run_case(case, grader)
    assert got["pass"] is False  # the verdict stands; the reason is capped in the details
    assert len(json.dumps(got["details"])) < 10_000
    # A 1 MB object is past the 100,000 characters promptfoo reads an object in: no
    # verdict, the row's error (promptfoo: a fail with score 0).
    huge = '{"pass": true, "score": 1, "reason": "' + "x" * 1_000_000 + '"}'
    assert "has no JSON object" in run_case({**case, "grader": huge}, grader)["error"]
    for bad in ('{"pass": true, "score": "NaN"}', '{"score": Infinity}', "5 out of 5 but actually 1",
                '{"pass": true, "score": 1e999}'):
        case = {**case, "grader": bad}
        assert "error" in run_case(case, grader), bad


def test_without_a_judge_the_row_is_an_error_naming_the_option() -> None:
    checks = Assertions()
    with pytest.raises(ExampleDataError, match="--ctxbench-judge-url"):
        checks.score_details({"assert": [{"type": "llm-rubric", "value": "polite"}]}, {"response": "hi"})


def test_repeats_take_the_majority_and_the_mean_each_its_own_call(grader: FakeLLM) -> None:
    answers = iter(['{"pass": true, "score": 1, "reason": "a"}', '{"pass": false, "score": 0.2, "reason": "b"}',
                    '{"pass": true, "score": 0.9, "reason": "c"}'])
    grader.set_handler(lambda request: next(answers))
    judge = LLMJudge(grader.base_url, "g", max_retries=0, repeat=3)
    checks = Assertions(judge=judge)
    before = len(grader.requests)
    scores, details = checks.score_details(
        {"assert": [{"type": "llm-rubric", "value": "polite"}]}, {"response": "hi"})
    assert len(grader.requests) - before == 3
    assert scores["assert_pass"] == 1.0 and scores["assert_score"] == pytest.approx(0.7)
    answers = iter(['{"pass": false, "score": 0.1, "reason": "rude"}', '{"pass": true, "score": 1}'])
    judge2 = LLMJudge(grader.base_url, "g", max_retries=0, repeat=2)
    grader.set_handler(lambda request: next(answers))
    scores, details = Assertions(judge=judge2).score_details(
        {"assert": [{"type": "llm-rubric", "value": "polite"}]}, {"response": "hi"})
    assert scores["assert_pass"] == 0.0  # one of two: a tie fails
    assert "rude [1 of 2 answers passed (a tie fails); scores 0.1, 1]" in details["1. llm-rubric"]
