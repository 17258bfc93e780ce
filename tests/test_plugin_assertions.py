"""Assertions through pytest: an example's `assert` list decides its status (JSONL,
CSV), named metrics and per-type rates in the summary and the JSON report, bad
assertions are exit 4 before the first example, a raising python check is that
row's error, --ctxbench-evaluator, and the same verdicts under -n 2."""

from __future__ import annotations

import json

import pytest

from helpers import read_json, usage_line

BOT = '''
import json

class Bot:
    name = "bot"

    def process(self, example):
        answers = {
            "refund": "You can get a refund within 30 days.",
            "json-ok": json.dumps({"order": 7, "status": "shipped"}),
            "json-bad": json.dumps({"order": "seven"}),
            "greeting": "Hello Ada, welcome!",
            "plain": "Paris",
        }
        return {**example, "response": answers[example["id"]]}

bot = Bot()
'''

SCHEMA = {"type": "object", "required": ["order", "status"],
          "properties": {"order": {"type": "integer"}, "status": {"type": "string"}}}

EXAMPLES = [
    {"id": "refund", "question": "Can I get my money back?", "assert": [
        {"type": "icontains", "value": "refund", "metric": "policy"},
        {"type": "regex", "value": "\\d+ days", "metric": "policy"},
        {"type": "not-contains", "value": "guarantee"}]},
    {"id": "json-ok", "question": "Order 7?", "assert": [{"type": "is-json", "value": SCHEMA}]},
    {"id": "json-bad", "question": "Order 7?", "assert": [
        {"type": "is-json", "value": SCHEMA}, {"type": "contains", "value": "order", "weight": 3}]},
    {"id": "greeting", "question": "Greet {{name}}", "name": "Ada", "threshold": 0.5, "assert": [
        {"type": "starts-with", "value": "Hello {{name}}"},
        {"type": "python", "value": "file://assertchecks.py:short"}]},
    {"id": "plain", "question": "Capital of France?", "answer": "Paris"},
]

CHECKS = '''
def short(output, context):
    assert context["vars"]["name"] == "Ada"
    return {"pass": len(output) < 10, "score": 0.25, "reason": "length %d" % len(output)}

def boom(output, context):
    raise RuntimeError("the check itself is broken")

class Shouty:
    name = "shouty"

    def score(self, original, processed):
        return {"shout": 1.0 if processed["response"].isupper() else 0.0}
'''


def _project(pytester: pytest.Pytester, examples=EXAMPLES) -> None:
    pytester.makepyfile(assertbot=BOT, assertchecks=CHECKS)
    pytester.makefile(".jsonl", data="\n".join(json.dumps(e) for e in examples))
    pytester.makeini("[pytest]\npythonpath = .\n")


def _run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest("--ctxbench-dataset=data.jsonl", "--ctxbench-system=assertbot:bot",
                              "--ctxbench-json=out.json", "-p", "no:randomly", *args)


# In-process: assertions deciding examples under -n 2 (and replayed, and merged) are
# test_equivalence.py's regions, judged by their assertions in every mode.
@pytest.mark.parametrize("workers", [[]])
def test_assertions_decide_each_example(pytester: pytest.Pytester, workers: list[str]) -> None:
    _project(pytester)
    result = _run(pytester, *workers)
    doc = read_json(pytester.path / "out.json")
    rows = {r["example_id"]: r for r in doc["rows"]}
    # every assertion passed
    assert rows["refund"]["status"] == "pass"
    assert rows["refund"]["scores"]["assert_score"] == 1.0
    assert rows["refund"]["metadata"]["score_field"] == "assert_score"
    assert rows["json-ok"]["status"] == "pass"
    # the schema is broken: one failure makes the example fail, whatever its score
    assert rows["json-bad"]["status"] == "below"
    assert rows["json-bad"]["scores"]["assert_score"] == 0.75  # 3 of 4 by weight > 0.7
    details = rows["json-bad"]["metadata"]["assertions"]
    assert details["1. is-json"].startswith("FAIL: JSON does not conform to the provided schema")
    assert details["2. contains"] == "pass [weight 3]"
    # a test-level threshold: 0.625 >= 0.5 passes although the python check failed
    assert rows["greeting"]["status"] == "pass"
    assert rows["greeting"]["scores"]["assert_score"] == 0.625
    assert "FAIL: length 19 (score 0.25)" in rows["greeting"]["metadata"]["assertions"]["2. python"]
    # an example without assertions keeps its auto-wired evaluators
    assert rows["plain"]["metadata"]["score_field"] == "f1"
    assert rows["plain"]["status"] == "pass"
    summary = doc["summary"]["bot"]
    assert summary["pass_rate"] == 0.8
    assert summary["metric:policy"] == 1.0
    assert summary["assert_type:is-json"] == 0.5
    assert summary["assert_type:not-contains"] == 1.0
    assert summary["assert_examples"] == 4
    out = result.stdout.str()
    assert "named metrics" in out and "assertions passed, by type:" in out
    assert "BELOW json-bad: assert_score = 0.75, its assertions failed" in out
    assert result.ret == 0


def test_gate_on_a_named_metric(pytester: pytest.Pytester) -> None:
    _project(pytester)
    result = _run(pytester, "--ctxbench-score-field=policy", "--ctxbench-min-mean-score=0.9")
    assert result.ret == 0, result.stdout.str()
    doc = read_json(pytester.path / "out.json")
    assert doc["summary"]["bot"]["mean_score"] == 1.0  # only the rows that have it
    examples = [{**EXAMPLES[0], "assert": [{"type": "contains", "value": "never", "metric": "policy"}]}]
    _project(pytester, examples)
    failed = _run(pytester, "--ctxbench-score-field=policy", "--ctxbench-min-mean-score=0.9")
    assert failed.ret == 1
    failed.stdout.fnmatch_lines(["*FAIL bot: min_mean_score*"])


@pytest.mark.parametrize(
    ("assertion", "expected"),
    [
        ({"type": "contians", "value": "x"}, "unknown assertion type 'contians'. Did you mean 'contains'?"),
        ({"type": "regex", "value": "(unclosed"}, "invalid regular expression '(unclosed'"),
        ({"type": "is-json", "value": {"type": "objekt"}}, "invalid JSON Schema"),
        ({"type": "is-json", "value": {"type": "object", "requird": ["a"]}}, "unknown keyword 'requird'"),
        ({"type": "python", "value": "file://nope.py:f"}, "nope.py does not exist"),
        ({"type": "latency"}, "needs a 'threshold'"),
        ({"type": "max-steps", "value": -1}, "needs a 'value': the most assistant steps, a whole number >= 0; got -1"),
        ({"type": "not-max-tool-calls", "value": 1.5}, "the most tool calls, a whole number >= 0; got 1.5"),
        ({"type": "max-tokens"}, "the most LLM tokens, a whole number >= 0; got null"),
        ({"type": "max-step", "value": 3}, "Did you mean 'max-steps'?"),
        ({"type": "llm-rubric", "value": " "}, "needs a 'value': the rubric the judge applies"),
    ],
)
def test_a_bad_assertion_stops_the_run_before_it_starts(
    pytester: pytest.Pytester, assertion: dict, expected: str
) -> None:
    examples = [EXAMPLES[4], {"id": "refund", "question": "q", "assert": [assertion]}]
    _project(pytester, examples)
    result = _run(pytester)
    line = usage_line(result)
    assert "data.jsonl:2: assertion 1" in line and expected in line, line
    assert "Known types" in line or "unknown assertion type" not in line
    assert not (pytester.path / "out.json").exists()


def test_a_raising_python_check_is_that_rows_error(pytester: pytest.Pytester) -> None:
    examples = [
        {"id": "refund", "question": "q", "assert": [{"type": "python", "value": "file://assertchecks.py:boom"}]},
        EXAMPLES[4],
    ]
    _project(pytester, examples)
    result = _run(pytester)
    doc = read_json(pytester.path / "out.json")
    rows = {r["example_id"]: r for r in doc["rows"]}
    assert rows["refund"]["status"] == "error"
    assert "RuntimeError: the check itself is broken" in rows["refund"]["error"]["message"]
    assert rows["plain"]["status"] == "pass"  # nothing else is lost
    assert result.ret == 1  # max_error_rate 0 by default


def test_csv_column_holds_the_assertions(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(assertbot=BOT)
    pytester.syspathinsert()
    rows = [["id", "question", "assert"],
            ["refund", "q", json.dumps([{"type": "contains", "value": "30 days"}])],
            ["greeting", "q", json.dumps([{"type": "equals", "value": "Hi"}])]]
    import csv
    import io

    buf = io.StringIO()
    csv.writer(buf).writerows(rows)
    (pytester.path / "data.csv").write_text(buf.getvalue())
    result = pytester.runpytest("--ctxbench-dataset=data.csv", "--ctxbench-system=assertbot:bot",
                                "--ctxbench-json=out.json")
    doc = read_json(pytester.path / "out.json")
    status = {r["example_id"]: r["status"] for r in doc["rows"]}
    assert status == {"refund": "pass", "greeting": "below"}
    (pytester.path / "data.csv").write_text('id,question,assert\nx,q,"[{""type"": ""contains"""\n')
    line = usage_line(pytester.runpytest("--ctxbench-dataset=data.csv", "--ctxbench-system=assertbot:bot"))
    assert "data.csv:2" in line and "column 'assert' must hold JSON" in line
    assert result.ret == 0


def test_evaluator_option_adds_an_evaluator_to_every_suite(pytester: pytest.Pytester) -> None:
    _project(pytester)
    result = _run(pytester, "--ctxbench-evaluator=assertchecks:Shouty")
    doc = read_json(pytester.path / "out.json")
    assert all(r["scores"]["shout"] == 0.0 for r in doc["rows"])
    assert result.ret == 0
    bad = _run(pytester, "--ctxbench-evaluator=assertchecks:nothing")
    assert "--ctxbench-evaluator=assertchecks:nothing" in usage_line(bad)
    not_one = _run(pytester, "--ctxbench-evaluator=assertchecks:short")
    assert "not an Evaluator" in usage_line(not_one)
    pytester.makeini("[pytest]\npythonpath = .\nctxbench_evaluators =\n    assertchecks:Shouty\n")
    via_ini = _run(pytester)
    assert all("shout" in r["scores"] for r in read_json(pytester.path / "out.json")["rows"])
    assert via_ini.ret == 0
