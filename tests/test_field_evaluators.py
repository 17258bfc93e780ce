"""The evaluators an example's own fields wire (``FIELD_EVALUATORS``): an
``expected_tool_calls`` adds ToolCallMatch, an ``expected_trajectory`` TrajectoryMatch,
by one mechanism on every path (command-line datasets, the marker, ``evaluate()``,
a promptfoo tests file's vars), each replaced by an evaluator of the same name given
by the user (the marker, ``evaluate()``, ``--ctxbench-evaluator``), and checked at
load by one function."""

from __future__ import annotations

import json
from typing import Any

import pytest

from helpers import read_json, usage_line
from pytest_context_bench import evaluate
from pytest_context_bench.evaluators import (
    FIELD_EVALUATORS,
    ToolCallMatch,
    TrajectoryMatch,
    example_fields,
    field_evaluators,
    field_primary_score,
    field_problem,
    field_score_keys,
)


def _tc(name: str, args: dict[str, Any], ident: str = "c") -> dict[str, Any]:
    return {"id": ident, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}


def _steps(city: str) -> list[dict[str, Any]]:
    return [
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": "", "tool_calls": [_tc("get_weather", {"city": city})]},
        {"role": "tool", "content": "sunny", "tool_call_id": "c"},
        {"role": "assistant", "content": "Sunny."},
    ]


def _calls(city: str) -> list[dict[str, Any]]:
    return [{"name": "get_weather", "arguments": {"city": city}}]


#: calls: judged by ToolCallMatch; steps: by TrajectoryMatch; both: by both (its
#: primary score is the table's first, tool_call_match); plain: by token F1.
EXAMPLES = [
    {"id": "calls", "question": "Weather in paris?", "expected_tool_calls": _calls("Paris")},
    {"id": "steps", "question": "Weather in lyon?", "expected_trajectory": _steps("Paris")},
    {"id": "both", "question": "Weather in rome?", "expected_tool_calls": _calls("Rome"),
     "expected_trajectory": _steps("Milan")},
    {"id": "plain", "question": "Capital of France?", "answer": "Sunny."},
]

AGENT = '''
import json

class Agent:
    name = "agent"

    def process(self, example):
        city = example["question"].split()[-1].rstrip("?").title()
        call = {"id": "c", "type": "function",
                "function": {"name": "get_weather", "arguments": json.dumps({"city": city})}}
        steps = [{"role": "user", "content": example["question"]},
                 {"role": "assistant", "content": "", "tool_calls": [call]},
                 {"role": "tool", "content": "sunny", "tool_call_id": "c"},
                 {"role": "assistant", "content": "Sunny."}]
        return {**example, "response": "Sunny.", "tool_calls": [call], "trajectory": steps}

agent = Agent()
'''

#: What each example gets from the agent above (which calls for its own city).
EXPECTED_SCORES = {
    "calls": ({"tool_call_match": 1.0}, "tool_call_match", "pass"),
    "steps": ({"trajectory_match": 0.0}, "trajectory_match", "below"),
    "both": ({"tool_call_match": 1.0, "trajectory_match": 0.0}, "tool_call_match", "pass"),
    "plain": ({}, "f1", "pass"),
}


def _own(scores: dict[str, float]) -> dict[str, float]:
    return {k: v for k, v in scores.items() if k in ("tool_call_match", "trajectory_match")}


def _check_rows(rows: list[dict[str, Any]]) -> None:
    got = {r["example_id"]: (_own(r["scores"]), r["metadata"]["score_field"], r["status"]) for r in rows}
    assert got == EXPECTED_SCORES


# --- the table -------------------------------------------------------------------------


def test_one_table_maps_each_field_to_its_evaluator_and_score() -> None:
    assert FIELD_EVALUATORS == {
        "expected_tool_calls": ("ToolCallMatch", "tool_call_match"),
        "expected_trajectory": ("TrajectoryMatch", "trajectory_match"),
        "rubric": ("LLMJudge", "judge_score"),  # the run's judge (test_rubric_judge.py)
    }
    assert example_fields(EXAMPLES[2]) == ["expected_tool_calls", "expected_trajectory"]
    assert [field_primary_score(e) for e in EXAMPLES] == [
        "tool_call_match", "trajectory_match", "tool_call_match", None]
    assert field_score_keys(["expected_tool_calls", "expected_trajectory"]) == {
        "tool_call_match", "tool_call_f1", "tool_call_name_f1", "trajectory_match"}
    both = field_evaluators(["expected_trajectory", "expected_tool_calls"])
    assert [type(e) for e in both] == [ToolCallMatch, TrajectoryMatch]  # the table's order
    assert field_evaluators(["expected_tool_calls"]) == [both[0]]  # shared per process
    # one of the same name beside them replaces only that one
    mine = ToolCallMatch(strings="exact")
    assert field_evaluators(["expected_tool_calls", "expected_trajectory"], [mine]) == [both[1]]
    # options by evaluator name, as for the family evaluators
    (strict,) = field_evaluators(["expected_tool_calls"], options={"tool_call_match": {"order": "strict"}})
    assert strict is not both[0] and "strict" in repr(strict)


def test_one_check_for_every_field() -> None:
    assert field_problem(EXAMPLES[2]) is None and field_problem(EXAMPLES[3]) is None
    assert "field 'expected_tool_calls' must be a list" in str(
        field_problem({"expected_tool_calls": {"name": "f", "arguments": {}}}))
    assert "field 'tools' must be a list of function schemas" in str(field_problem({"tools": {"name": "f"}}))
    assert "field 'expected_trajectory' must be a list of message objects" in str(
        field_problem({"expected_trajectory": "f(x)"}))


# --- evaluate() --------------------------------------------------------------------------


def _agent() -> Any:
    namespace: dict[str, Any] = {}
    exec(AGENT, namespace)
    return namespace["agent"]


def test_evaluate_wires_both() -> None:
    result = evaluate(_agent(), EXAMPLES, progress=False, tokenizer=lambda t: len(t.split()))
    assert {r.example_id: (_own(r.scores), r.metadata["score_field"]) for r in result.rows} == {
        k: v[:2] for k, v in EXPECTED_SCORES.items()}
    # an explicit evaluator of one name replaces that one only
    mine = evaluate(_agent(), EXAMPLES[:3], evaluators=[TrajectoryMatch("superset", "ignore")],
                    progress=False, tokenizer=lambda t: len(t.split()))
    assert {r.example_id: _own(r.scores) for r in mine.rows} == {
        "calls": {"tool_call_match": 1.0},
        "steps": {"trajectory_match": 1.0},
        "both": {"tool_call_match": 1.0, "trajectory_match": 1.0},
    }


# --- through pytest ----------------------------------------------------------------------


def _project(pytester: pytest.Pytester, examples: list[dict[str, Any]] = EXAMPLES) -> None:
    pytester.makepyfile(agentsys=AGENT)
    (pytester.path / "agent.jsonl").write_text("".join(json.dumps(e) + "\n" for e in examples))
    pytester.makeini("[pytest]\npythonpath = .\n")


def _run(pytester: pytest.Pytester, *args: str, dataset: str = "agent.jsonl") -> pytest.RunResult:
    return pytester.runpytest(f"--ctxbench-dataset={dataset}", "--ctxbench-system=agentsys:agent",
                              "--ctxbench-json=out.json", "-p", "no:randomly", *args)


def test_a_command_line_dataset_wires_both(pytester: pytest.Pytester) -> None:
    _project(pytester)
    result = _run(pytester)
    assert result.ret == 0, result.stdout.str()  # "steps" is below (no gate)
    _check_rows(read_json(pytester.path / "out.json")["rows"])
    # every score they produce may be named, none other
    assert _run(pytester, "--ctxbench-score-field=tool_call_name_f1").ret == 0
    line = usage_line(_run(pytester, "--ctxbench-score-field=tool_call_f2"))
    assert "tool_call_f1, tool_call_match, tool_call_name_f1, trajectory_match" in line, line


def test_ctxbench_evaluator_replaces_the_default_of_its_name(pytester: pytest.Pytester) -> None:
    # "YORK" is what the agent's "York" is under BFCL's string normalisation, not exactly
    _project(pytester, [*EXAMPLES, {"id": "york", "question": "Weather in york?",
                                    "expected_tool_calls": _calls("YORK")}])
    pytester.makepyfile(mine=(
        "from pytest_context_bench.evaluators import ToolCallMatch, TrajectoryMatch\n"
        "exact = ToolCallMatch(strings='exact')\n"
        "loose = TrajectoryMatch('superset', 'ignore')\n"))
    _run(pytester)
    rows = {r["example_id"]: _own(r["scores"]) for r in read_json(pytester.path / "out.json")["rows"]}
    assert rows["york"] == {"tool_call_match": 1.0} and rows["steps"] == {"trajectory_match": 0.0}
    _run(pytester, "--ctxbench-evaluator=mine:loose")
    rows = {r["example_id"]: _own(r["scores"]) for r in read_json(pytester.path / "out.json")["rows"]}
    assert rows["steps"] == {"trajectory_match": 1.0}
    assert rows["both"] == {"tool_call_match": 1.0, "trajectory_match": 1.0}
    assert rows["york"] == {"tool_call_match": 1.0}  # the default ToolCallMatch still runs
    _run(pytester, "--ctxbench-evaluator=mine:exact")
    rows = {r["example_id"]: r for r in read_json(pytester.path / "out.json")["rows"]}
    assert _own(rows["york"]["scores"]) == {"tool_call_match": 0.0}, rows["york"]  # no default beside it
    assert rows["york"]["status"] == "below"
    assert 'expected "YORK"' in rows["york"]["metadata"]["tool_call_match"]["misses"][0]
    assert _own(rows["steps"]["scores"]) == {"trajectory_match": 0.0}


MARKED = '''
import pytest
from pytest_context_bench.evaluators import TrajectoryMatch


@pytest.mark.ctxbench(dataset="agent.jsonl")
def test_marked(ctxbench_example, ctxbench_record):
    from agentsys import agent
    ctxbench_record.run(agent)


@pytest.mark.ctxbench(dataset="agent.jsonl", evaluators=[TrajectoryMatch("superset", "ignore")])
def test_own(ctxbench_example, ctxbench_record):
    from agentsys import agent
    ctxbench_record.run(agent)
'''


# In-process: a marker's evaluators are built by each process from the test module
# it imports, workers alike; trajectories and tool calls of marked tests under -n 2
# are test_equivalence.py's (its test_agent and test_marked, in every mode).
@pytest.mark.parametrize("workers", [[]])
def test_the_marker_wires_both(pytester: pytest.Pytester, workers: list[str]) -> None:
    _project(pytester)
    pytester.makepyfile(test_agent=MARKED)
    pytester.runpytest("--ctxbench-json=out.json", "-p", "no:randomly", *workers)
    rows = read_json(pytester.path / "out.json")["rows"]
    _check_rows([r for r in rows if r["suite"] == "test_agent.py::test_marked[agent]"])
    own = {r["example_id"]: _own(r["scores"]) for r in rows if r["suite"] == "test_agent.py::test_own[agent]"}
    # the marker's evaluators replace the family's, its TrajectoryMatch the default one;
    # ToolCallMatch is still wired by the field
    assert own == {"calls": {"tool_call_match": 1.0}, "steps": {"trajectory_match": 1.0},
                   "both": {"tool_call_match": 1.0, "trajectory_match": 1.0}, "plain": {}}


def test_a_promptfoo_tests_file_wires_both(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(agentsys=AGENT)
    pytester.makeini("[pytest]\npythonpath = .\n")
    tests = [{"description": e["id"], "vars": {k: v for k, v in e.items() if k != "id"}} for e in EXAMPLES[:3]]
    (pytester.path / "tests.json").write_text(json.dumps(tests, indent=1))
    _run(pytester, dataset="tests.json")
    rows = read_json(pytester.path / "out.json")["rows"]
    assert {r["example_id"]: (_own(r["scores"]), r["metadata"]["score_field"], r["status"]) for r in rows} == {
        k: v for k, v in EXPECTED_SCORES.items() if k != "plain"}
    tests[0]["vars"]["expected_tool_calls"] = [["get_weather", {}]]
    (pytester.path / "tests.json").write_text(json.dumps(tests, indent=1))
    line = usage_line(_run(pytester, dataset="tests.json"))
    assert "tests.json:" in line and "field 'expected_tool_calls[0]' must be an object" in line, line


def test_a_bad_field_of_either_kind_names_its_line(pytester: pytest.Pytester) -> None:
    _project(pytester, [*EXAMPLES, {"id": "bad", "question": "q", "expected_tool_calls": _calls("Paris"),
                                    "expected_trajectory": [{"role": "bot"}]}])
    line = usage_line(_run(pytester))
    assert "agent.jsonl:5:" in line and 'step 1 has role "bot"' in line, line
