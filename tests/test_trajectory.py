"""TrajectoryMatch (issue 35): agentevals' trajectory match, explained.

* Conformance: the verdicts agentevals 0.0.9 recorded (tests/oracles/
  agentevals_record.py) on 224 generated trajectories, each in the 16 combinations
  of trajectory mode and argument mode: ours are identical but on an exact, listed
  set of cases (docs/differences.md, "Trajectories and agentevals").
* Each mode's mismatch is explained: which step, which tool, which argument.
* Wiring: an example carrying ``expected_trajectory`` is scored by TrajectoryMatch,
  its primary score ``trajectory_match``; a bad one is exit 4 naming file:line.
* Attacks: 100,000 steps, arguments that are not JSON, deep nesting, control
  characters in tool names.
"""

from __future__ import annotations

import gzip
import importlib.util
import json
from pathlib import Path
from typing import Any

import pytest
from helpers import read_json, usage_line

from pytest_context_bench import evaluate
from pytest_context_bench.errors import ConfigError, ExampleDataError
from pytest_context_bench.evaluators.trajectory import (
    ARGS_MATCH_MODES,
    TRAJECTORY_MATCH_MODES,
    TrajectoryError,
    TrajectoryMatch,
    check_example,
)

ORACLES = Path(__file__).parent / "oracles"
COMBOS = [f"{t}/{a}" for t in TRAJECTORY_MATCH_MODES for a in ARGS_MATCH_MODES]
NOT_IGNORE = [c for c in COMBOS if not c.endswith("/ignore")]


def _oracle() -> dict[str, Any]:
    with gzip.open(ORACLES / "agentevals_verdicts.json.gz", "rt", encoding="utf-8") as f:
        return json.load(f)


def _ours(case: dict[str, Any], combo: str) -> bool | str:
    mode, args = combo.split("/")
    ev = TrajectoryMatch(mode, args, case.get("overrides"))
    try:
        scores, _ = ev.score_details(
            {"expected_trajectory": case["reference"]}, {"trajectory": case["outputs"]}
        )
    except Exception as exc:  # noqa: BLE001 - compared with agentevals' "error: ..."
        return f"error: {type(exc).__name__}"
    return scores["trajectory_match"] == 1.0


# --- conformance -----------------------------------------------------------------------

#: Cases where a call of the System's has arguments that are not a JSON object
#: ("not json", "", "[1, 2]", "null"): agentevals raises (in every mode, even when
#: arguments are ignored); TrajectoryMatch reads such a call as one that matches
#: nothing (or, arguments ignored, by its name alone).
UNREADABLE_ARGUMENTS = {"o022", "o042", "t012", "t050", "t060", "t063", "t152"}

#: Cases where an argument is ``true``/``false`` on one side and ``1``/``0`` on the
#: other: agentevals compares with Python's ``==`` (``True == 1``), TrajectoryMatch
#: as JSON (a boolean is not a number). Case → the combinations whose verdict
#: differs (agentevals: match; ours: no match); the others fail or pass for other
#: reasons on both sides.
PYTHON_EQUALITY = {
    **{f"p{n:03d}": NOT_IGNORE for n in (0, 1, 3, 4, 6, 7, 8, 9, 10, 11, 12, 13, 15)},
    "p002": ["superset/exact", "superset/subset", "superset/superset"],
    "p014": ["strict/superset", "subset/subset", "superset/superset"],
}


def test_conformance_with_agentevals() -> None:
    doc = _oracle()
    assert doc["versions"]["agentevals"] == "0.0.9"
    cases = doc["cases"]
    per_combo: dict[str, list[Any]] = {c: [] for c in COMBOS}
    differ: dict[str, set[str]] = {}
    for case in cases:
        for combo in COMBOS:
            theirs = doc["verdicts"][case["id"]][combo]
            per_combo[combo].append(theirs)
            ours = _ours(case, combo)
            assert not isinstance(ours, str), (case["id"], combo, ours)  # we never raise here
            if ours != theirs:
                differ.setdefault(case["id"], set()).add(combo)
                if case["id"] in UNREADABLE_ARGUMENTS:
                    assert str(theirs).startswith("error: "), (case["id"], combo, theirs)
                else:  # Python's True == 1: agentevals matched, JSON says no
                    assert theirs is True and ours is False, (case["id"], combo)
    expected = {
        **{k: set(COMBOS) for k in UNREADABLE_ARGUMENTS},
        **{k: set(v) for k, v in PYTHON_EQUALITY.items()},
    }
    assert differ == expected
    # at least 50 trajectories per mode, each mode with both verdicts
    for combo, verdicts in per_combo.items():
        assert len(verdicts) >= 50, combo
        assert verdicts.count(True) >= 20 and verdicts.count(False) >= 20, combo
    total = len(cases) * len(COMBOS)
    different = sum(len(v) for v in differ.values())
    assert (total, different) == (3584, 274)  # 92.4% identical; every difference listed


def test_the_recorded_cases_are_the_generators() -> None:
    """The oracle's cases are what the seeded generator beside it makes (nothing
    edited by hand)."""
    spec = importlib.util.spec_from_file_location("_ae_record", ORACLES / "agentevals_record.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert json.loads(json.dumps(module.generate())) == _oracle()["cases"]


# --- explanations ----------------------------------------------------------------------


def tc(name: str, args: Any, ident: str = "c") -> dict[str, Any]:
    text = args if isinstance(args, str) else json.dumps(args)
    return {"id": ident, "type": "function", "function": {"name": name, "arguments": text}}


def ai(*calls: dict[str, Any], content: str = "") -> dict[str, Any]:
    return {"role": "assistant", "content": content, "tool_calls": list(calls)} if calls else {
        "role": "assistant", "content": content}


USER = {"role": "user", "content": "What is the weather in Paris?"}
TOOL = {"role": "tool", "content": "sunny", "tool_call_id": "c"}
EXPECTED = [
    USER,
    ai(tc("get_weather", {"city": "Paris", "units": "metric"})),
    TOOL,
    ai(tc("send_email", {"to": "ada@example.com"})),
    TOOL,
    ai(content="Done."),
]


def judge(system: Any, expected: Any = EXPECTED, **kwargs: Any) -> tuple[float, dict[str, Any]]:
    example = {"expected_trajectory": expected, **{k: v for k, v in kwargs.items() if k != "ev"}}
    ev = kwargs.get("ev") or TrajectoryMatch()
    processed = {"trajectory": system} if not isinstance(system, dict) else system
    scores, details = ev.score_details(example, processed)
    return scores["trajectory_match"], details


def test_strict_match_and_what_it_ignores() -> None:
    same = json.loads(json.dumps(EXPECTED))
    same[1]["content"] = "Let me look."  # text, ids and key order are not compared
    same[1]["tool_calls"][0] = tc("get_weather", '{"units": "metric",  "city": "Paris"}', "x9")
    score, details = judge(same)
    assert score == 1.0
    assert details["reason"] == "the trajectory matches (strict, arguments exact): 6 steps, 2 tool calls"


@pytest.mark.parametrize(
    ("system", "reason", "where"),
    [
        (EXPECTED[:3] + EXPECTED[4:], 'step 4: role "tool", expected "assistant"', {"step": 4}),
        (
            [USER, ai(tc("get_weather", {"city": "Lyon", "units": "metric"})), *EXPECTED[2:]],
            'step 2: the call to "get_weather": argument "city" is "Lyon", expected "Paris"',
            {"step": 2, "tool": "get_weather", "argument": "city"},
        ),
        (
            [USER, ai(tc("get_weather", {"city": "Paris"})), *EXPECTED[2:]],
            'step 2: the call to "get_weather": argument "units" is missing (expected "metric")',
            {"step": 2, "tool": "get_weather", "argument": "units"},
        ),
        (
            [USER, ai(tc("get_weather", {"city": "Paris", "units": "metric", "days": 3})), *EXPECTED[2:]],
            'step 2: the call to "get_weather": argument "days" (3) is not expected',
            {"argument": "days"},
        ),
        (
            [USER, ai(tc("get_forecast", {"city": "Paris"})), *EXPECTED[2:]],
            'step 2: the call to "get_forecast" is not expected there (expected 1 tool call ("get_weather") still unmatched)',
            {"tool": "get_forecast"},
        ),
        (
            [USER, ai(content="It is sunny."), *EXPECTED[2:]],
            'step 2: the assistant made no tool call, expected 1 tool call ("get_weather")',
            {"step": 2},
        ),
        (
            [USER, ai(tc("get_weather", {"city": "Paris", "units": "metric"}), tc("log", {})), *EXPECTED[2:]],
            'step 2: the assistant made 2 tool calls ("get_weather", "log"), expected 1 tool call ("get_weather")',
            {"step": 2},
        ),
        (
            [*EXPECTED, ai(content="Anything else?")],
            "the trajectory has 7 steps, the expected one 6: step 7 (assistant) is extra",
            {"step": 7},
        ),
        (
            EXPECTED[:4],
            "the trajectory has 4 steps, the expected one 6: expected step 5 (tool) is missing",
            {"expected_step": 5},
        ),
        (
            [USER, ai(tc("get_weather", "{'city': 'Paris'}")), *EXPECTED[2:]],
            'step 2: the call to "get_weather": its arguments are not JSON (Expecting property name'
            " enclosed in double quotes at character 2)",
            {"tool": "get_weather"},
        ),
    ],
)
def test_strict_explains_the_first_mismatch(system: Any, reason: str, where: dict[str, Any]) -> None:
    score, details = judge(system)
    assert score == 0.0
    assert details["reason"] == reason
    assert {k: details[k] for k in where} == where


WEATHER = tc("get_weather", {"city": "Paris", "units": "metric"})
EMAIL = tc("send_email", {"to": "ada@example.com"})


def test_unordered_subset_superset() -> None:
    reordered = [USER, ai(EMAIL), TOOL, ai(WEATHER), TOOL, ai(content="Done.")]
    assert judge(reordered)[0] == 0.0
    assert judge(reordered, trajectory_match_mode="unordered")[0] == 1.0
    # one call in one step, no tool messages: roles and text are not compared
    assert judge([ai(WEATHER, EMAIL)], trajectory_match_mode="unordered")[0] == 1.0
    more = [USER, ai(WEATHER, EMAIL, tc("log", {"x": 1}))]
    score, details = judge(more, trajectory_match_mode="unordered")
    assert score == 0.0
    assert details["reason"] == (
        'the trajectory\'s call 3 to "log" (step 2) is not expected: the expected trajectory calls "log" nowhere'
    )
    assert judge(more, trajectory_match_mode="superset")[0] == 1.0
    assert judge(more, trajectory_match_mode="subset")[0] == 0.0
    fewer = [USER, ai(EMAIL)]
    assert judge(fewer, trajectory_match_mode="subset")[0] == 1.0
    score, details = judge(fewer, trajectory_match_mode="superset")
    assert score == 0.0
    assert details["reason"] == (
        'expected call 1 to "get_weather" (expected step 2) was not made: the trajectory calls "get_weather" nowhere'
    )
    assert details["expected_step"] == 2 and details["tool"] == "get_weather"
    # a duplicate call is one call too many for unordered, fine for superset
    twice = [ai(WEATHER, WEATHER, EMAIL)]
    score, details = judge(twice, trajectory_match_mode="unordered")
    assert score == 0.0 and "calls \"get_weather\" 1 time, each already matched" in details["reason"]
    assert judge(twice, trajectory_match_mode="superset")[0] == 1.0
    once = [ai(EMAIL)]
    score, details = judge(once + [ai(tc("get_weather", {"city": "Rome"}))], trajectory_match_mode="superset")
    assert details["reason"] == (
        'expected call 1 to "get_weather" (expected step 2) was not made: the trajectory\'s first'
        ' unmatched call to "get_weather" (step 2): argument "city" is "Rome", expected "Paris"'
    )


def test_argument_modes_and_overrides() -> None:
    fewer_args = [USER, ai(tc("get_weather", {"city": "Paris"})), TOOL, ai(EMAIL), TOOL, ai(content="Done.")]
    assert judge(fewer_args)[0] == 0.0
    assert judge(fewer_args, tool_args_match_mode="subset")[0] == 1.0  # the System's among the expected
    assert judge(fewer_args, tool_args_match_mode="superset")[0] == 0.0
    assert judge(fewer_args, tool_args_match_mode="ignore")[0] == 1.0
    assert judge(fewer_args, tool_args_match_overrides={"get_weather": ["city"]})[0] == 1.0
    assert judge(fewer_args, tool_args_match_overrides={"get_weather": "superset"})[0] == 0.0
    more_args = [USER, ai(tc("get_weather", {"city": "Paris", "units": "metric", "days": 2})), *EXPECTED[2:]]
    assert judge(more_args, tool_args_match_mode="superset")[0] == 1.0
    # nested paths: a missing key and null are the same (agentevals' lookup)
    nested = [{"role": "assistant", "tool_calls": [tc("search", {"filters": {"city": "Paris"}, "q": None})]}]
    expected = [{"role": "assistant", "tool_calls": [tc("search", {"filters": {"city": "Paris", "x": 1}})]}]
    assert judge(nested, expected, tool_args_match_overrides={"search": ["filters.city", "q"]})[0] == 1.0
    score, details = judge(nested, expected, tool_args_match_overrides={"search": ["filters.x"]})
    assert details["reason"] == 'step 1: the call to "search": argument "filters.x" is null, expected 1'
    # a function, from Python
    ev = TrajectoryMatch(tool_args_match_overrides={
        "get_weather": lambda mine, want: mine["city"].lower() == want["city"].lower()})
    lower = [USER, ai(tc("get_weather", {"city": "PARIS"})), *EXPECTED[2:]]
    assert judge(lower, ev=ev)[0] == 1.0
    score, details = judge([USER, ai(tc("get_weather", {"city": "Rome"})), *EXPECTED[2:]], ev=ev)
    assert details["reason"] == 'step 2: the call to "get_weather": the argument matcher for "get_weather" returned false'
    # the example's settings win over the constructor's
    ev = TrajectoryMatch("unordered", "ignore")
    assert judge(fewer_args, ev=ev, tool_args_match_mode="exact")[0] == 0.0
    assert judge(EXPECTED[::-1], ev=ev)[0] == 1.0
    # true is not 1 (JSON), 1 is 1.0
    flag = [{"role": "assistant", "tool_calls": [tc("f", {"a": True, "b": 1.0})]}]
    assert judge(flag, [{"role": "assistant", "tool_calls": [tc("f", {"a": True, "b": 1})]}])[0] == 1.0
    assert judge(flag, [{"role": "assistant", "tool_calls": [tc("f", {"a": 1, "b": 1})]}])[1]["reason"] == (
        'step 1: the call to "f": argument "a" is true, expected 1')


def test_subset_mode_swaps_the_argument_rule_as_agentevals_does() -> None:
    """In ``subset`` mode each of the System's calls looks for an expected one, and
    agentevals then applies the argument rule with the sides swapped: ``subset``
    arguments there ask the System's to hold the expected ones."""
    expected = [{"role": "assistant", "tool_calls": [tc("f", {"a": 1})]}]
    more = [{"role": "assistant", "tool_calls": [tc("f", {"a": 1, "b": 2})]}]
    assert judge(more, expected, trajectory_match_mode="subset", tool_args_match_mode="subset")[0] == 1.0
    assert judge(more, expected, trajectory_match_mode="superset", tool_args_match_mode="subset")[0] == 0.0
    assert judge(more, expected, trajectory_match_mode="superset", tool_args_match_mode="superset")[0] == 1.0
    assert judge(more, expected, trajectory_match_mode="subset", tool_args_match_mode="superset")[0] == 0.0


def test_langchain_messages_and_other_shapes() -> None:
    langchain = [
        {"type": "human", "content": "What is the weather in Paris?"},
        {"type": "ai", "content": "", "tool_calls": [
            {"name": "get_weather", "args": {"city": "Paris", "units": "metric"}, "id": "1"}]},
        {"type": "tool", "content": "sunny", "tool_call_id": "1"},
        {"role": "ai", "content": "", "tool_calls": [{"name": "send_email", "args": {"to": "ada@example.com"}}]},
        {"role": "tool", "content": "sent"},
        {"role": "ai", "content": "Done."},
    ]
    assert judge(langchain)[0] == 1.0
    assert judge({"trajectory": {"messages": langchain}})[0] == 1.0

    class Message:  # duck-typed LangChain message objects
        def __init__(self, type: str, tool_calls: Any = None) -> None:
            self.type, self.content, self.tool_calls = type, "", tool_calls or []

    objects = [Message("human"), Message("ai", langchain[1]["tool_calls"]), Message("tool"),
               Message("ai", langchain[3]["tool_calls"]), Message("tool"), Message("ai")]
    assert judge(objects)[0] == 1.0
    # arguments as an object rather than JSON text; an empty tool_calls list or null is none
    as_dict = json.loads(json.dumps(EXPECTED))
    for m in as_dict:
        for c in m.get("tool_calls") or []:
            c["function"]["arguments"] = json.loads(c["function"]["arguments"])
    as_dict[-1]["tool_calls"] = []
    assert judge(as_dict)[0] == 1.0
    # tool calls on a user message are not read (LangChain drops them)
    assert judge([{"role": "user", "content": "", "tool_calls": [WEATHER]}], [{"role": "user", "content": ""}])[0] == 1.0


def test_a_reply_without_trajectory_is_one_assistant_step() -> None:
    expected = [{"role": "assistant", "tool_calls": [WEATHER]}]
    score, details = judge({"response": "", "tool_calls": [WEATHER]}, expected)
    assert score == 1.0
    assert details["trajectory"] == "no 'trajectory' returned: the reply was taken as one assistant step"
    score, details = judge({"response": "It is sunny."}, expected)
    assert score == 0.0 and "made no tool call" in details["reason"]
    score, details = judge({}, expected)
    assert score == 0.0 and details["trajectory"].startswith("no 'trajectory' returned, and no reply")


@pytest.mark.parametrize(
    ("trajectory", "message"),
    [
        ("a string", "the System's trajectory: a trajectory must be a list of messages, got the string"),
        ([{"content": "hi"}], "the System's trajectory: step 1 has no role"),
        (["hi"], "the System's trajectory: step 1 must be a message object"),
        ([{"role": "robot"}], 'step 1 has role "robot"; a role is one of user, human, assistant'),
        ([{"role": "assistant", "tool_calls": {"name": "f"}}], "step 1: 'tool_calls' must be a list"),
        ([{"role": "assistant", "tool_calls": [{"function": {"arguments": "{}"}}]}],
         "step 1, tool call 1 has no tool name"),
    ],
)
def test_a_malformed_system_trajectory_is_the_rows_error(trajectory: Any, message: str) -> None:
    with pytest.raises(ExampleDataError) as info:
        TrajectoryMatch().score_details({"expected_trajectory": EXPECTED}, {"trajectory": trajectory})
    assert message in str(info.value)


@pytest.mark.parametrize(
    ("example", "message"),
    [
        ({"expected_trajectory": "call get_weather"}, "field 'expected_trajectory' must be a list of message objects"),
        ({"expected_trajectory": [["user", "hi"]]}, "got a list holding a list"),
        ({"expected_trajectory": [{"role": "assistant", "tool_calls": [tc("f", "not json")]}]},
         "step 1, tool call 1: its arguments are not JSON"),
        ({"expected_trajectory": [{"role": "assistant", "tool_calls": [tc("f", "[1]")]}]},
         "its arguments must be a JSON text of an object, got a list"),
        ({"expected_trajectory": [], "trajectory_match_mode": "fuzzy"},
         "field 'trajectory_match_mode' is \"fuzzy\"; use one of strict, unordered, subset, superset"),
        ({"expected_trajectory": [], "tool_args_match_mode": "loose"}, "field 'tool_args_match_mode'"),
        ({"expected_trajectory": [], "tool_args_match_overrides": {"f": "fuzzy"}},
         "unknown argument match mode \"fuzzy\""),
        ({"expected_trajectory": [], "tool_args_match_overrides": {"f": []}}, "one or more non-empty strings"),
        ({"expected_trajectory": [], "tool_args_match_overrides": ["f"]}, "must be an object mapping"),
    ],
)
def test_check_example_refuses(example: dict[str, Any], message: str) -> None:
    with pytest.raises(TrajectoryError) as info:
        check_example(example)
    assert message in str(info.value)


def test_constructor_refuses_unknown_modes() -> None:
    with pytest.raises(ConfigError, match="trajectory_match_mode must be one of"):
        TrajectoryMatch("loose")
    with pytest.raises(ConfigError, match="tool_args_match_mode must be one of"):
        TrajectoryMatch("strict", "fuzzy")
    with pytest.raises(ConfigError, match="unknown argument match mode"):
        TrajectoryMatch(tool_args_match_overrides={"f": "fuzzy"})


def test_evaluate_wires_it_by_the_field() -> None:
    class Agent:
        name = "agent"

        def process(self, example: dict[str, Any]) -> dict[str, Any]:
            city = "Paris" if example["id"] == "right" else "Lyon"
            steps = [USER, ai(tc("get_weather", {"city": city, "units": "metric"})), *EXPECTED[2:]]
            return {**example, "response": "Done.", "trajectory": steps}

    examples = [
        {"id": "right", "question": "weather?", "expected_trajectory": EXPECTED},
        {"id": "wrong", "question": "weather?", "expected_trajectory": EXPECTED},
        {"id": "plain", "question": "capital?", "answer": "Done."},
    ]
    result = evaluate(Agent(), examples, progress=False)
    rows = {r.example_id: r for r in result.rows}
    assert rows["right"].scores["trajectory_match"] == 1.0
    assert rows["right"].metadata["score_field"] == "trajectory_match"
    assert rows["wrong"].scores["trajectory_match"] == 0.0
    assert rows["wrong"].metadata["trajectory_match"]["argument"] == "city"
    assert "trajectory_match" not in rows["plain"].scores
    assert rows["plain"].metadata["score_field"] == "f1"
    assert result.summary["agent"]["pass_rate"] == pytest.approx(2 / 3)
    # one given with modes of its own is not doubled by the default one
    result = evaluate(Agent(), examples[:2], evaluators=[TrajectoryMatch("unordered", "ignore")], progress=False)
    assert [r.scores for r in result.rows] == [{"trajectory_match": 1.0}] * 2


# --- through pytest --------------------------------------------------------------------

AGENT = '''
import json

def tc(name, args, ident="c"):
    return {"id": ident, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}

class Agent:
    name = "agent"

    def process(self, example):
        city = example["question"].split()[-1].rstrip("?")
        name = "get\\x1b[2J\\x1b[32mweather\\u202e" if example["id"] == "evil" else "get_weather"
        steps = [{"role": "user", "content": example["question"]},
                 {"role": "assistant", "content": "", "tool_calls": [tc(name, {"city": city.title()})]},
                 {"role": "tool", "content": "sunny", "tool_call_id": "c"},
                 {"role": "assistant", "content": "Sunny."}]
        return {**example, "response": "Sunny.", "trajectory": steps}

agent = Agent()
'''


def _expected(city: str) -> list[dict[str, Any]]:
    return [
        {"role": "user", "content": "q"},
        {"role": "assistant", "tool_calls": [tc("get_weather", {"city": city})]},
        {"role": "tool", "content": "sunny", "tool_call_id": "c"},
        {"role": "assistant", "content": "Sunny."},
    ]


def _project(pytester: pytest.Pytester, examples: list[dict[str, Any]], name: str = "agent.jsonl") -> None:
    pytester.makepyfile(agentsys=AGENT)
    (pytester.path / name).write_text("".join(json.dumps(e) + "\n" for e in examples))
    pytester.makeini("[pytest]\npythonpath = .\n")


def _run(pytester: pytest.Pytester, *args: str, dataset: str = "agent.jsonl") -> pytest.RunResult:
    return pytester.runpytest(f"--ctxbench-dataset={dataset}", "--ctxbench-system=agentsys:agent",
                              "--ctxbench-json=out.json", "-p", "no:randomly", *args)


def test_a_dataset_with_expected_trajectories(pytester: pytest.Pytester) -> None:
    _project(pytester, [
        {"id": "paris", "question": "Weather in paris?", "expected_trajectory": _expected("Paris")},
        {"id": "lyon", "question": "Weather in lyon?", "expected_trajectory": _expected("Paris")},
        {"id": "any", "question": "Weather in rome?", "expected_trajectory": _expected("Paris"),
         "tool_args_match_mode": "ignore"},
        {"id": "plain", "question": "Capital of France?", "answer": "Sunny."},
    ])
    result = _run(pytester)
    doc = read_json(pytester.path / "out.json")
    rows = {r["example_id"]: r for r in doc["rows"]}
    assert {k: r["status"] for k, r in rows.items()} == {
        "paris": "pass", "lyon": "below", "any": "pass", "plain": "pass"}
    assert rows["lyon"]["metadata"]["score_field"] == "trajectory_match"
    assert rows["lyon"]["metadata"]["trajectory_match"]["reason"] == (
        'step 2: the call to "get_weather": argument "city" is "Lyon", expected "Paris"')
    out = result.stdout.str()
    assert "argument \"city\" is \"Lyon\", expected \"Paris\"" in out, out
    # a gate on the score, named on the command line
    gated = _run(pytester, "--ctxbench-score-field=trajectory_match", "--ctxbench-min-mean-score=0.9")
    assert gated.ret == 1
    assert "trajectory_match" in gated.stdout.str()


def test_control_characters_in_a_tool_name_stay_inert(pytester: pytest.Pytester) -> None:
    _project(pytester, [{"id": "evil", "question": "Weather in paris?", "expected_trajectory": _expected("Paris")}])
    result = _run(pytester, "--ctxbench-markdown=out.md")
    out = result.stdout.str() + result.stderr.str()
    assert "\x1b[2J" not in out and "\u202e" not in out
    assert "get\\u001b[2J\\u001b[32mweather\\u202e" in out, out  # shown, escaped
    reason = read_json(pytester.path / "out.json")["rows"][0]["metadata"]["trajectory_match"]["reason"]
    assert "\x1b" not in reason and "\u202e" not in reason
    assert "get\\u001b[2J\\u001b[32mweather\\u202e" in reason, reason
    assert "\x1b" not in (pytester.path / "out.md").read_text()


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ('"expected_trajectory": {"role": "assistant"}', "field 'expected_trajectory' must be a list of message objects"),
        ('"expected_trajectory": ["call f"]', "got a list holding the string"),
        ('"expected_trajectory": [{"role": "assistant", "tool_calls": [{"function": {"name": "f", "arguments": "{oops"}}]}]',
         "step 1, tool call 1: its arguments are not JSON"),
        ('"expected_trajectory": [{"role": "bot"}]', 'step 1 has role "bot"'),
        ('"expected_trajectory": [], "trajectory_match_mode": "loose"', "field 'trajectory_match_mode' is \"loose\""),
    ],
)
def test_a_bad_expected_trajectory_is_exit_4_naming_the_line(
    pytester: pytest.Pytester, value: str, expected: str
) -> None:
    pytester.makepyfile(agentsys=AGENT)
    pytester.makeini("[pytest]\npythonpath = .\n")
    good = json.dumps({"id": "ok", "question": "Weather in paris?", "expected_trajectory": _expected("Paris")})
    (pytester.path / "agent.jsonl").write_text(good + "\n" + '{"id": "bad", "question": "q", ' + value + "}\n")
    line = usage_line(_run(pytester))
    assert "agent.jsonl:2:" in line and expected in line, line
    assert not (pytester.path / "out.json").exists()


def test_a_bad_expected_trajectory_in_json_and_csv(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(agentsys=AGENT)
    pytester.makeini("[pytest]\npythonpath = .\n")
    (pytester.path / "agent.json").write_text(json.dumps(
        [{"id": "ok", "question": "q", "expected_trajectory": _expected("Paris")},
         {"id": "bad", "question": "q", "expected_trajectory": "f(x)"}], indent=1))
    line = usage_line(_run(pytester, dataset="agent.json"))
    assert "agent.json:" in line and "expected_trajectory" in line, line
    import csv
    import io

    buf = io.StringIO()
    csv.writer(buf).writerows([
        ["id", "question", "expected_trajectory", "trajectory_match_mode"],
        ["paris", "Weather in paris?", json.dumps(_expected("Paris")), "unordered"],
        ["lyon", "Weather in lyon?", json.dumps(_expected("Paris")), "strict"],
    ])
    (pytester.path / "agent.csv").write_text(buf.getvalue())
    _run(pytester, dataset="agent.csv")
    rows = {r["example_id"]: r["status"] for r in read_json(pytester.path / "out.json")["rows"]}
    assert rows == {"paris": "pass", "lyon": "below"}
    (pytester.path / "agent.csv").write_text('id,question,expected_trajectory\nx,q,"[{""role"""\n')
    line = usage_line(_run(pytester, dataset="agent.csv"))
    assert "agent.csv:2" in line and "column 'expected_trajectory' must hold JSON" in line, line


def test_a_promptfoo_tests_file_with_expected_trajectories(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(agentsys=AGENT)
    pytester.makeini("[pytest]\npythonpath = .\n")
    tests = [
        {"description": "paris", "vars": {"question": "Weather in paris?", "expected_trajectory": _expected("Paris")}},
        {"description": "lyon", "vars": {"question": "Weather in lyon?", "expected_trajectory": _expected("Paris")}},
    ]
    (pytester.path / "tests.json").write_text(json.dumps(tests, indent=1))
    _run(pytester, dataset="tests.json")
    rows = {r["example_id"]: r for r in read_json(pytester.path / "out.json")["rows"]}
    assert {k: (r["status"], r["metadata"]["score_field"]) for k, r in rows.items()} == {
        "paris": ("pass", "trajectory_match"), "lyon": ("below", "trajectory_match")}
    tests[1]["vars"]["expected_trajectory"] = [{"role": "assistant", "tool_calls": "get_weather"}]
    (pytester.path / "tests.json").write_text(json.dumps(tests, indent=1))
    line = usage_line(_run(pytester, dataset="tests.json"))
    assert "tests.json:" in line and "'tool_calls' must be a list of tool calls" in line, line


# --- attacks ---------------------------------------------------------------------------


def test_a_trajectory_of_20000_steps() -> None:
    """20,000 steps (10,000 calls) of the System's against a short expected one:
    every mode answers (the matching scans calls by name, never all pairs of a
    long trajectory against a long one), and says where it went wrong."""
    calls = [ai(tc("search", {"q": i}, f"c{i}")) if i % 2 else TOOL for i in range(20_000)]
    expected = [ai(tc("search", {"q": 19_999}))]
    reasons = {}
    for mode in TRAJECTORY_MATCH_MODES:
        score, details = judge(calls, expected, trajectory_match_mode=mode)
        assert details["steps"] == 20_000 and details["tool_calls"] == 10_000
        assert score == (1.0 if mode == "superset" else 0.0), (mode, details["reason"])
        reasons[mode] = details["reason"]
    assert reasons["strict"] == 'step 1: role "tool", expected "assistant"'
    assert reasons["subset"] == (
        'the trajectory\'s call 1 to "search" (step 2) matches no expected call: against the first'
        ' unmatched expected call to "search" (expected step 1): argument "q" is 1, expected 19999')
    assert reasons["unordered"] == reasons["subset"]  # every expected call is there; not the converse


def test_arguments_that_are_not_json_are_a_call_that_matches_nothing() -> None:
    for text in ('{"city": "Paris"', "", "null", "[1]", '{"a": NaN}', "{'a': 1}", '{"a": 1} trailing'):
        system = [USER, ai(tc("get_weather", text)), *EXPECTED[2:]]
        score, details = judge(system)
        assert score == 0.0 and "its arguments" in details["reason"], (text, details)
        # arguments ignored: the name alone matches, the text is never read
        assert judge(system, tool_args_match_mode="ignore")[0] == 1.0


def test_deep_nesting() -> None:
    deep_text = "[" * 5000 + "]" * 5000
    system = [ai(tc("f", '{"a": ' + deep_text + "}"))]
    expected = [ai(tc("f", {"a": []}))]
    score, details = judge(system, expected)
    assert score == 0.0 and "nested too deeply" in details["reason"], details["reason"]
    deep: Any = 1
    for _ in range(5000):
        deep = {"k": deep}
    system = [{"role": "assistant", "tool_calls": [{"name": "f", "args": {"a": deep}}]}]
    score, details = judge(system, expected)
    assert score == 0.0 and "nested more than 100 levels" in details["reason"], details["reason"]
    with pytest.raises(TrajectoryError, match="nested more than 100 levels"):
        check_example({"expected_trajectory": system})
    # a deep trajectory value the matcher never reads (message text) costs nothing
    assert judge([{"role": "assistant", "content": deep, "tool_calls": expected[0]["tool_calls"]}], expected)[0] == 1.0


def test_a_long_tool_name_is_clipped_in_the_reason() -> None:
    name = "x" * 100_000
    score, details = judge([ai(tc(name, {}))], [ai(tc("f", {}))])
    assert score == 0.0 and len(details["reason"]) < 400, len(details["reason"])
