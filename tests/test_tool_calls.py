"""ToolCallMatch: the shapes of calls it reads, the spelling of expected calls, BFCL's
argument rules, order and modes, the scores, every miss explained, bad fields, and
hostile replies (arguments that are not an object, deep or huge JSON, NaN, repeated
keys, 10,000 calls, names with control characters)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from pytest_context_bench import evaluate
from pytest_context_bench.errors import ExampleDataError
from pytest_context_bench.evaluators.tool_calls import (
    MAX_CALLS,
    ToolCallMatch,
    ToolSpecError,
    match_tool_calls,
    parse_calls,
    parse_expected,
    parse_tools,
    standardize_string,
    tool_fields_problem,
)

WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "parameters": {
            "type": "object",
            "properties": {
                "city": {"type": "string"},
                "days": {"type": "integer"},
                "scale": {"type": "number"},
                "unit": {"type": "string"},
                "tags": {"type": "array", "items": {"type": "string"}},
                "where": {"type": "object"},
            },
            "required": ["city"],
        },
    },
}


def call(name: str, args: Any = None, *, shape: str = "openai") -> dict[str, Any]:
    args = {} if args is None else args
    if shape == "openai":
        text = args if isinstance(args, str) else json.dumps(args)
        return {"id": "call_1", "type": "function", "function": {"name": name, "arguments": text}}
    if shape == "decoded":
        return {"id": "call_1", "type": "function", "function": {"name": name, "arguments": args}}
    if shape == "flat":
        return {"name": name, "arguments": args}
    return {"type": "tool_use", "id": "toolu_1", "name": name, "input": args}


def judge(calls: list[Any], expected: list[Any], tools: list[Any] | None = None,
          **options: Any) -> tuple[dict[str, float], dict[str, Any]]:
    example: dict[str, Any] = {"id": "x", "expected_tool_calls": expected}
    if tools is not None:
        example["tools"] = tools
    scores, details = ToolCallMatch(**options).score_details(example, {"tool_calls": calls})
    assert details is not None
    return scores, details


def passes(calls: list[Any], expected: list[Any], tools: list[Any] | None = None, **options: Any) -> bool:
    scores, details = judge(calls, expected, tools, **options)
    assert (scores["tool_call_match"] == 1.0) == ("misses" not in details), details
    return scores["tool_call_match"] == 1.0


def misses(calls: list[Any], expected: list[Any], tools: list[Any] | None = None, **options: Any) -> list[str]:
    _, details = judge(calls, expected, tools, **options)
    return details.get("misses", [])


# ------------------------------------------------------------------ shapes


@pytest.mark.parametrize("shape", ["openai", "decoded", "flat", "anthropic"])
def test_every_call_shape_is_read(shape: str) -> None:
    expected = [{"name": "get_weather", "arguments": {"city": "Paris"}}]
    assert passes([call("get_weather", {"city": "Paris"}, shape=shape)], expected)
    assert not passes([call("get_weather", {"city": "Rome"}, shape=shape)], expected)


def test_no_tool_calls_field_is_no_call() -> None:
    ev = ToolCallMatch()
    example = {"expected_tool_calls": []}
    scores, details = ev.score_details(example, {"response": "It is sunny."})
    assert scores == {"tool_call_match": 1.0, "tool_call_f1": 1.0, "tool_call_name_f1": 1.0}
    assert details is not None and details["reason"] == "no call expected, none made"
    scores = ev.score({"expected_tool_calls": [{"name": "f", "arguments": {}}]}, {"response": "x"})
    assert scores == {"tool_call_match": 0.0, "tool_call_f1": 0.0, "tool_call_name_f1": 0.0}
    assert ev.score({"answer": "x"}, {"response": "x"}) == {}  # not its example


def test_a_tool_calls_value_that_is_not_a_list_is_the_rows_error() -> None:
    with pytest.raises(ValueError, match="tool_calls is an object; it must be a list"):
        ToolCallMatch().score({"expected_tool_calls": []}, {"tool_calls": {"name": "f"}})


# ------------------------------------------------------------------ spelling


def test_any_of_lists_accepted_values_and_empty_string_marks_optional() -> None:
    expected = [{"name": "get_weather",
                 "arguments": {"city": {"any_of": ["Paris", "Paris, France"]}, "unit": {"any_of": ["", "celsius"]}}}]
    assert passes([call("get_weather", {"city": "Paris"})], expected)
    assert passes([call("get_weather", {"city": "paris, france", "unit": "Celsius"})], expected)
    assert not passes([call("get_weather", {"city": "Paris", "unit": "kelvin"})], expected)
    # without "" the argument must be given
    expected[0]["arguments"]["unit"] = {"any_of": ["celsius"]}
    assert misses([call("get_weather", {"city": "Paris"})], expected)[0].endswith("missing argument \"unit\"")


def test_objects_lists_and_objects_in_lists() -> None:
    expected = [{"name": "f", "arguments": {
        "where": {"lat": 1.5, "label": {"any_of": ["", "home"]}},
        "pair": [3, 5],
        "rows": [{"k": "a"}, {"k": {"any_of": ["b", "B2"]}}],
    }}]
    good = {"where": {"lat": 1.5}, "pair": [3, 5], "rows": [{"k": "a"}, {"k": "b2"}]}
    assert passes([call("f", good)], expected)
    assert not passes([call("f", {**good, "pair": [5, 3]})], expected)
    assert not passes([call("f", {**good, "where": {"lat": 1.5, "extra": 1}})], expected)
    assert not passes([call("f", {**good, "where": {"label": "home"}})], expected)
    assert not passes([call("f", {**good, "rows": [{"k": "a"}]})], expected)
    # {"any_of": [X]} is exactly X: how an object that is itself {"any_of": ...} is written
    literal = [{"name": "f", "arguments": {"o": {"any_of": [{"any_of": [1]}]}}}]
    assert passes([call("f", {"o": {"any_of": [1]}})], literal)


def test_bad_expected_calls_and_tools_are_refused_with_the_field() -> None:
    cases = [
        ({"expected_tool_calls": {"name": "f"}}, "field 'expected_tool_calls' must be a list"),
        ({"expected_tool_calls": ["f"]}, "field 'expected_tool_calls[0]' must be an object"),
        ({"expected_tool_calls": [{"name": "", "arguments": {}}]}, "'expected_tool_calls[0].name' must be"),
        ({"expected_tool_calls": [{"name": "f"}]}, "'expected_tool_calls[0].arguments' is missing"),
        ({"expected_tool_calls": [{"name": "f", "arguments": [1]}]},
         "'expected_tool_calls[0].arguments' must be an object (argument → value), got a list"),
        ({"expected_tool_calls": [{"name": "f", "arguments": "{}"}]}, "must be an object"),
        ({"expected_tool_calls": [{"name": "f", "args": {}}]}, "has the key 'args'"),
        ({"expected_tool_calls": [{"name": "f", "arguments": {"x": {"any_of": []}}}]},
         "'expected_tool_calls[0].arguments.x.any_of' must be a non-empty list"),
        ({"tools": {"name": "f"}}, "field 'tools' must be a list of function schemas"),
        ({"tools": ["f"]}, "field 'tools[0]' must be a function schema"),
        ({"tools": [{"description": "no name"}]}, "field 'tools[0].name' must be the function's name"),
        ({"tools": [{"type": "function", "function": {"name": 3}}]}, "'tools[0].function.name'"),
        ({"tools": [{"name": "f", "parameters": "x"}]}, "'tools[0].parameters' must be an object"),
        ({"tools": [{"name": "f", "parameters": {"type": "object", "properties": {"a": 1}}}]},
         "'tools[0].parameters.properties' must be an object of parameter schemas"),
        ({"tools": [{"name": "f", "parameters": {"type": "object", "properties": {}, "required": "a"}}]},
         "'tools[0].parameters.required' must be a list of parameter names"),
    ]
    for example, message in cases:
        problem = tool_fields_problem(example)
        assert problem is not None and message in problem, (example, problem)
        with pytest.raises(ExampleDataError, match="field"):
            ToolCallMatch().score({"expected_tool_calls": [], **example}, {})
    assert tool_fields_problem({"tools": [WEATHER], "expected_tool_calls": []}) is None
    # xLAM's parameter tables and Anthropic's input_schema are function schemas too
    xlam = [{"name": "tides", "description": "", "parameters": {"type": {"type": "str", "description": ""}}}]
    assert parse_tools(xlam)["tides"].params is None
    anthropic = [{"name": "f", "input_schema": {"type": "object", "properties": {"a": {"type": "integer"}}}}]
    assert parse_tools(anthropic)["f"].params["a"].type == "integer"
    with pytest.raises(ToolSpecError):
        parse_expected([{"name": "f", "arguments": {}}] * 1001)


# ------------------------------------------------------------------ BFCL's rules


def test_strings_are_normalised_as_bfcl_does_unless_exact() -> None:
    assert standardize_string("April 1, 2024") == standardize_string("april 1 2024") == "april12024"
    assert standardize_string("it's") == 'it"s'
    expected = [{"name": "f", "arguments": {"d": "April 1, 2024", "tags": ["New York", "LA"]}}]
    got = [call("f", {"d": "april-1-2024", "tags": ["new_york", "l.a."]})]
    assert passes(got, expected)
    assert not passes(got, expected, strings="exact")
    assert passes([call("f", {"d": "April 1, 2024", "tags": ["New York", "LA"]})], expected, strings="exact")


def test_types_follow_the_schema_when_it_is_known() -> None:
    tools = [WEATHER]
    expected = [{"name": "get_weather", "arguments": {"city": "Paris", "days": 3, "scale": 2.0}}]
    assert passes([call("get_weather", {"city": "Paris", "days": 3, "scale": 2})], expected, tools)  # int for float
    assert passes([call("get_weather", {"city": "Paris", "days": 3, "scale": 2.0})], expected, tools)
    wrong = misses([call("get_weather", {"city": "Paris", "days": 3.0, "scale": 2.0})], expected, tools)
    assert 'wrong type for argument "days": expected integer, got float 3.0' in wrong[0]
    wrong = misses([call("get_weather", {"city": "Paris", "days": "3", "scale": 2.0})], expected, tools)
    assert 'wrong type for argument "days": expected integer, got string "3"' in wrong[0]
    # a bool is never a number
    assert not passes([call("get_weather", {"city": "Paris", "days": True, "scale": 2.0})],
                      [{"name": "get_weather", "arguments": {"city": "Paris", "days": 1, "scale": 2.0}}], tools)
    # required by the schema, even when the expected call says it may be omitted
    lenient = [{"name": "get_weather", "arguments": {"city": {"any_of": ["", "Paris"]}}}]
    assert 'missing required argument "city"' in misses([call("get_weather", {})], lenient, tools)[0]
    # an argument the schema does not declare is unexpected, even if expected
    odd = [{"name": "get_weather", "arguments": {"city": "Paris", "zip": "75001"}}]
    assert 'unexpected argument "zip"' in misses([call("get_weather", {"city": "Paris", "zip": "75001"})], odd, tools)[0]
    # array items are checked one level deep
    tagged = [{"name": "get_weather", "arguments": {"city": "Paris", "tags": ["a", "b"]}}]
    assert not passes([call("get_weather", {"city": "Paris", "tags": ["a", 2]})], tagged, tools)


def test_types_follow_the_accepted_values_without_a_schema() -> None:
    expected = [{"name": "f", "arguments": {"x": 1.5, "n": 2, "flag": True}}]
    assert passes([call("f", {"x": 1.5, "n": 2, "flag": True})], expected)
    assert passes([call("f", {"x": 2, "n": 2, "flag": True})],
                  [{"name": "f", "arguments": {"x": 2.0, "n": 2, "flag": True}}])  # int where float is expected
    assert 'expected integer, got float 2.0' in misses([call("f", {"x": 1.5, "n": 2.0, "flag": True})], expected)[0]
    assert 'expected boolean, got integer 1' in misses([call("f", {"x": 1.5, "n": 2, "flag": 1})], expected)[0]
    # both spellings accepted when both are listed
    both = [{"name": "f", "arguments": {"n": {"any_of": [1, 1.0]}}}]
    assert passes([call("f", {"n": 1})], both) and passes([call("f", {"n": 1.0})], both)


def test_a_dotted_name_may_come_back_with_underscores() -> None:
    expected = [{"name": "math.factorial", "arguments": {"number": 5}}]
    assert passes([call("math_factorial", {"number": 5})], expected)
    assert passes([call("math.factorial", {"number": 5})], expected)
    assert not passes([call("math-factorial", {"number": 5})], expected)
    assert not passes([call("math.factorial", {"number": 5})], [{"name": "math_factorial", "arguments": {"number": 5}}])


# ------------------------------------------------------------------ order and modes


A = {"name": "a", "arguments": {"x": 1}}
B = {"name": "b", "arguments": {"y": "two"}}
C = {"name": "c", "arguments": {}}


def calls_of(*expected: dict[str, Any]) -> list[dict[str, Any]]:
    return [call(e["name"], e["arguments"]) for e in expected]


@pytest.mark.parametrize(
    ("made", "order", "mode", "verdict"),
    [
        ((A, B), "any", "exact", True),
        ((B, A), "any", "exact", True),
        ((B, A), "strict", "exact", False),
        ((A, B), "strict", "exact", True),
        ((A,), "any", "exact", False),
        ((A,), "any", "subset", True),
        ((), "any", "subset", True),
        ((A, C), "any", "subset", False),
        ((A, B, C), "any", "superset", True),
        ((C, B, A), "any", "superset", True),
        ((C, B, A), "strict", "superset", False),
        ((A, C, B), "strict", "superset", True),
        ((A,), "any", "superset", False),
        ((B,), "strict", "subset", True),
        ((B, A), "strict", "subset", False),
    ],
)
def test_order_and_modes(made: tuple[dict[str, Any], ...], order: str, mode: str, verdict: bool) -> None:
    assert passes(calls_of(*made), [A, B], order=order, mode=mode) is verdict


def test_any_order_finds_a_pairing_where_the_first_fit_would_not() -> None:
    # the first call fits both expected calls, the second only the first: a maximum
    # matching pairs them crosswise (BFCL's checker pairs greedily and fails it;
    # docs/differences.md)
    expected = [{"name": "f", "arguments": {"x": {"any_of": [1, 2]}}}, {"name": "f", "arguments": {"x": 1}}]
    assert passes([call("f", {"x": 1}), call("f", {"x": 2})], expected)


def test_scores_are_f1_over_calls_and_over_names() -> None:
    scores, _ = judge(calls_of(A, {"name": "b", "arguments": {"y": "three"}}, C), [A, B])
    assert scores["tool_call_match"] == 0.0
    assert scores["tool_call_f1"] == pytest.approx(2 * 1 / 5)  # 1 paired of 3 made, 2 expected
    assert scores["tool_call_name_f1"] == pytest.approx(2 * 2 / 5)
    scores, _ = judge(calls_of(A, B), [A, B])
    assert scores == {"tool_call_match": 1.0, "tool_call_f1": 1.0, "tool_call_name_f1": 1.0}
    scores, _ = judge(calls_of(B, A), [A, B], order="strict")
    assert scores["tool_call_f1"] == 0.5  # one pair keeps the order


# ------------------------------------------------------------------ misses explained


def test_every_kind_of_miss_is_explained() -> None:
    expected = [{"name": "get_weather", "arguments": {"city": "Paris", "days": 3}},
                {"name": "get_time", "arguments": {"zone": "CET"}}]
    tools = [WEATHER]
    said = misses([call("get_weather", {"city": "Rome", "days": "3", "extra": 1}), call("get_date", {})],
                  expected, tools)
    text = "\n".join(said)
    assert 'wrong value for argument "city": got "Rome", expected "Paris"' in text
    assert 'wrong type for argument "days": expected integer, got string "3"' in text
    assert 'unexpected argument "extra"' in text
    assert 'wrong function: call 2 get_date() where expected call 2 get_time({"zone": "CET"}) was due' in text
    said = misses([call("get_weather", {"days": 3})], expected, tools)
    assert 'missing required argument "city"' in said[0]
    assert said[1].startswith('missing call: expected call 2 get_time(')
    said = misses(calls_of(*[{"name": e["name"], "arguments": e["arguments"]} for e in expected]) + [call("noise", {})],
                  expected)
    assert said == ["extra call 3 noise()"]
    said = misses([call("get_weather", "[1, 2]")], expected[:1])
    assert said == ["call 1 (get_weather) cannot be read for expected call 1: the arguments are a list, not a JSON object"]
    scores, details = judge([call("get_weather", {"city": "Rome", "days": 3})], expected[:1])
    assert details["reason"].startswith("1 miss (0 of 1 expected call paired, 1 made); first: call 1 get_weather(")
    assert details["expected"] == ['get_weather({"city": "Paris", "days": 3})']
    assert details["called"] == ['get_weather({"city": "Rome", "days": 3})']


# ------------------------------------------------------------------ hostile replies


@pytest.mark.parametrize(
    ("arguments", "why"),
    [
        ("[1, 2]", "the arguments are a list, not a JSON object"),
        ('"city"', "the arguments are the string"),
        ("5", "the arguments are a number, not a JSON object"),
        ("{oops", "the arguments are not valid JSON"),
        ('{"city": NaN}', "the arguments are not valid JSON (NaN is not JSON"),
        ('{"city": Infinity}', "not valid JSON (Infinity is not JSON"),
        ("[" * 100_000 + "]" * 100_000, "nested too deeply"),
        ('{"a": ' + "[" * 150 + "]" * 150 + "}", "nested more than 100 levels deep"),
        ('{"n": ' + "9" * 10_000 + "}", "the arguments are not valid JSON"),
    ],
)
def test_arguments_that_are_not_an_object_are_a_miss_not_a_crash(arguments: str, why: str) -> None:
    (parsed,), _ = parse_calls([call("get_weather", arguments)])
    assert parsed.arguments is None and parsed.problem is not None and why in parsed.problem, parsed.problem
    scores, details = judge([call("get_weather", arguments)], [{"name": "get_weather", "arguments": {"city": "Paris"}}])
    assert scores["tool_call_match"] == 0.0
    assert why in details["misses"][0]


def test_a_decoded_argument_object_with_nan_is_refused() -> None:
    (parsed,), _ = parse_calls([call("f", {"x": float("nan")}, shape="decoded")])
    assert parsed.problem is not None and "NaN" in parsed.problem


def test_a_repeated_argument_key_keeps_its_last_value_and_says_so() -> None:
    scores, details = judge([call("f", '{"x": 1, "x": 2}')], [{"name": "f", "arguments": {"x": 2}}])
    assert scores["tool_call_match"] == 1.0
    assert details["notes"] == ['call 1 (f) repeats the argument key "x"; its last value is used']


def test_ten_thousand_calls_are_bounded() -> None:
    many = [call("f", {"x": i}) for i in range(10_000)]
    expected = [{"name": "f", "arguments": {"x": 3}}]
    scores, details = judge(many, expected)
    assert scores["tool_call_match"] == 0.0
    assert scores["tool_call_f1"] == pytest.approx(2 / 10_001)
    assert details["notes"] == [f"the reply made 10,000 calls; the first {MAX_CALLS:,} are compared,"
                                " the others count as extra calls"]
    assert len(details["misses"]) == 21 and details["misses"][-1] == "… 980 more misses"
    assert details["called"][-1] == "… 9,980 more calls"
    # superset: the expected call is among the first ones, the rest are allowed
    assert passes(many, expected, mode="superset")
    # strict order over the compared calls: the same verdicts
    assert passes(many, expected, mode="superset", order="strict")
    result = match_tool_calls(parse_calls(many)[0], parse_expected(expected), explain=False)
    assert not result.passed and result.misses == []


def test_names_with_control_characters_are_inert_in_details() -> None:
    name = "evil\x1b[31m\u202e\nname"
    _, details = judge([call(name, {"x": "\x07"})], [{"name": "f", "arguments": {}}])
    text = json.dumps(details, ensure_ascii=False)
    for raw in ("\x1b", "\u202e", "\x07"):
        assert raw not in text
    assert "\\u001b[31m\\u202e\\nname" in details["misses"][0]


def test_evaluate_wires_it_by_the_field() -> None:
    class Caller:
        name = "caller"

        def process(self, example: dict[str, Any]) -> dict[str, Any]:
            if example["id"] == "calls":
                return {**example, "tool_calls": [call("get_weather", {"city": "paris"})]}
            return {**example, "response": "Paris"}

    examples = [
        {"id": "calls", "question": "Weather in Paris?", "tools": [WEATHER],
         "expected_tool_calls": [{"name": "get_weather", "arguments": {"city": "Paris"}}]},
        {"id": "text", "question": "Capital of France?", "answer": "Paris"},
    ]
    result = evaluate(Caller(), examples, progress=False, tokenizer=lambda t: len(t.split()))
    rows = {r.example_id: r for r in result.rows}
    assert rows["calls"].metadata["score_field"] == "tool_call_match"
    assert rows["calls"].scores["tool_call_match"] == 1.0
    assert rows["calls"].metadata["tool_call_match"]["reason"] == "the 1 call matches the expected call"
    assert rows["text"].metadata["score_field"] == "f1" and "tool_call_match" not in rows["text"].scores
    # a ToolCallMatch of the caller's own (other options) replaces the auto-wired one
    strict = evaluate(Caller(), examples, evaluators=[ToolCallMatch(strings="exact")], progress=False,
                      tokenizer=lambda t: len(t.split()))
    assert {r.example_id: r.scores.get("tool_call_match") for r in strict.rows} == {"calls": 0.0, "text": None}


def test_options_are_checked() -> None:
    with pytest.raises(ValueError, match="order must be one of 'any', 'strict'; got 'random'"):
        ToolCallMatch(order="random")
    with pytest.raises(ValueError, match="mode must be one of"):
        ToolCallMatch(mode="all")


# ------------------------------------------------------------------ the tool-call assertion


def test_the_tool_call_assertion() -> None:
    from pytest_context_bench.evaluators.assertions import Assertions

    def run(assertion: dict[str, Any], calls: list[Any]) -> tuple[dict[str, float], dict[str, Any]]:
        example = {"id": "a", "question": "q", "tools": [WEATHER], "assert": [assertion]}
        scores, details = Assertions().score_details(example, {"response": "", "tool_calls": calls})
        assert details is not None
        return scores, details

    value = [{"name": "get_weather", "arguments": {"city": "Paris"}}]
    good = [call("get_weather", {"city": "PARIS"})]
    scores, details = run({"type": "tool-call", "value": value}, good)
    assert scores["assert_pass"] == 1.0 and details["1. tool-call"] == "pass"
    scores, details = run({"type": "tool-call", "value": value}, [call("get_weather", {"city": 5})])
    assert scores["assert_pass"] == 0.0
    assert details["1. tool-call"].startswith("FAIL: Expected the tool calls to match: call 1 get_weather(")
    assert 'wrong type for argument "city": expected string, got integer 5' in details["1. tool-call"]
    # options per assertion; one expected call may be written without its list
    extra = [*good, call("get_time", {})]
    assert run({"type": "tool-call", "value": value[0]}, extra)[0]["assert_pass"] == 0.0
    assert run({"type": "tool-call", "value": value, "mode": "superset"}, extra)[0]["assert_pass"] == 1.0
    assert run({"type": "tool-call", "value": value, "strings": "exact"}, good)[0]["assert_pass"] == 0.0
    # a threshold on the call F1, which is then the score
    scores, details = run({"type": "tool-call", "value": value, "threshold": 0.6}, extra)
    assert scores["assert_pass"] == 1.0 and scores["assert_score"] == pytest.approx(2 / 3)
    # not-tool-call
    assert run({"type": "not-tool-call", "value": value}, good)[0]["assert_pass"] == 0.0
    assert run({"type": "not-tool-call", "value": value}, [])[0]["assert_pass"] == 1.0


@pytest.mark.parametrize(
    ("assertion", "message"),
    [
        ({"type": "tool-call"}, "field 'value' must be a list of expected calls"),
        ({"type": "tool-call", "value": [{"name": "f", "arguments": [1]}]},
         "field 'value[0].arguments' must be an object"),
        ({"type": "tool-call", "value": [{"name": "f", "arguments": {}}], "order": "random"},
         "order must be one of 'any', 'strict'"),
        ({"type": "tool-call", "value": [{"name": "f", "arguments": {}}], "threshold": 2},
         "'threshold' must be a number from 0 to 1"),
        ({"type": "tool-cal", "value": []}, "Did you mean 'tool-call'?"),
    ],
)
def test_a_bad_tool_call_assertion_is_refused(assertion: dict[str, Any], message: str) -> None:
    from pytest_context_bench.evaluators.assertions import AssertionError_, compile_asserts

    with pytest.raises(AssertionError_, match="assertion 1") as caught:
        compile_asserts([assertion])
    assert message in str(caught.value)


def test_a_decoded_argument_object_nested_10000_deep_is_refused_without_recursion() -> None:
    deep: dict[str, Any] = {}
    node = deep
    for _ in range(10_000):
        node["a"] = {}
        node = node["a"]
    (parsed,), _ = parse_calls([call("f", {"x": deep}, shape="decoded")])
    assert parsed.problem is not None and "nested more than 100 levels deep" in parsed.problem
    scores, details = judge([call("f", {"x": deep}, shape="decoded")], [{"name": "f", "arguments": {"x": 1}}])
    assert scores["tool_call_match"] == 0.0 and "cannot be read" in details["misses"][0]
