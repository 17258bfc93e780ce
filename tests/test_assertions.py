"""The assertion engine beyond promptfoo's verdicts (tests/test_assertions_promptfoo.py):
hostile outputs cannot hang it, latency and cost read the call, a check cannot change
the example, and every bad list is refused with its position."""

from __future__ import annotations

import pytest

import pytest_context_bench.evaluators.assertions as A
from pytest_context_bench import evaluate
from pytest_context_bench.errors import ExampleDataError


def _run(asserts: list[dict], output: str, **facts: object) -> dict[str, float]:
    example = {"id": "x", "question": "q", "assert": asserts}
    with A.call_facts(**facts):
        return A.Assertions().score(example, {"response": output})


@pytest.mark.timeout(120)
def test_a_backtracking_regex_on_a_hostile_output_is_an_error_not_a_hang(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(A, "REGEX_TIMEOUT", 0.2)
    with pytest.raises(ExampleDataError, match="catastrophic backtracking"):
        _run([{"type": "regex", "value": "(x+x+)+y"}], "x" * 5000)
    assert _run([{"type": "regex", "value": "(x+x+)+y"}], "xxy")["assert_pass"] == 1.0


@pytest.mark.timeout(120)
@pytest.mark.parametrize("output", ["{" * 300_000, '{"a": ' * 50_000, "[" * 200_000])
def test_contains_json_scans_a_hostile_output_in_bounded_work(output: str) -> None:
    assert _run([{"type": "contains-json"}], output)["assert_pass"] == 0.0


def test_contains_json_stops_at_the_first_object_that_validates() -> None:
    output = "x {a: 1} " * 100_000
    schema = {"type": "object", "required": ["a"]}
    assert _run([{"type": "contains-json", "value": schema}], output)["assert_pass"] == 1.0


def test_an_unresolvable_schema_ref_is_the_rows_error_and_nothing_is_fetched() -> None:
    with pytest.raises(ExampleDataError, match="cannot be applied.*Unresolvable"):
        _run([{"type": "is-json", "value": {"$ref": "https://example.invalid/s.json"}}], "{}")


def test_latency_and_cost_read_the_call() -> None:
    fast = [{"type": "latency", "threshold": 500}, {"type": "cost", "threshold": 0.01}]
    assert _run(fast, "ok", latency_ms=120.0, cost=0.002)["assert_pass"] == 1.0
    assert _run(fast, "ok", latency_ms=900.0, cost=0.002)["assert_score"] == 0.5
    assert _run([{"type": "not-cost", "threshold": 0.01}], "ok", cost=0.5)["assert_pass"] == 1.0
    with pytest.raises(ExampleDataError, match="needs the call's cost"):
        _run(fast, "ok", latency_ms=1.0)


def test_latency_through_evaluate() -> None:
    class Slow:
        name = "slow"

        def process(self, example: dict) -> dict:
            return {**example, "response": "done"}

    examples = [{"id": "a", "question": "q", "assert": [{"type": "latency", "threshold": 60_000}]},
                {"id": "b", "question": "q", "assert": [{"type": "latency", "threshold": 0}]}]
    result = evaluate([Slow()], examples, progress=False)
    verdicts = {r.example_id: r.scores["assert_pass"] for r in result.rows}
    assert verdicts == {"a": 1.0, "b": 0.0}
    assert all(r.metadata["score_field"] == "assert_score" for r in result.rows)


def test_a_check_cannot_change_the_example() -> None:
    example = {"id": "x", "question": "q", "tags": ["a"],
               "assert": [{"type": "python", "value": "context['vars'].clear() or context['test']['assert'].clear() or True"}]}
    before = repr(example)
    A.Assertions().score(example, {"response": "r"})
    assert repr(example) == before


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ("contains", "field 'assert' must be a list"),
        ([{"value": "x"}], "assertion 1 has no 'type'"),
        ([{"type": "contains", "value": ""}], "needs a 'value': a non-empty string or a number"),
        ([{"type": "contains", "value": True}], "got a boolean"),
        ([{"type": "contains-any", "value": '"unclosed, b'}], "unterminated quoted field"),
        ([{"type": "contains", "value": "x", "weight": -1}], "'weight' must be a number >= 0"),
        ([{"type": "contains", "value": "x", "metric": "f1"}], "the name of a built-in score"),
        ([{"type": "contains", "value": "{{ name | upper }}"}], "it uses the filter 'upper'"),
        ([{"type": "contains", "value": "{% if x %}y{% endif %}"}], "assertion 1: "),
        ([{"type": "assert-set", "assert": []}], "non-empty list"),
        ([{"type": "assert-set", "assert": [{"type": "nope"}]}], "inner assertion 1 (nope): unknown"),
        ([{"type": "python", "value": "mod_that_is_not_there:f"}], "cannot import 'mod_that_is_not_there'"),
    ],
)
def test_bad_lists_are_refused_with_their_position(raw: object, message: str) -> None:
    with pytest.raises(A.AssertionError_, match=message.replace("(", r"\(").replace(")", r"\)")
                       .replace("{", r"\{").replace("}", r"\}").replace("|", r"\|")):
        A.compile_asserts(raw)


def test_test_threshold_must_be_a_number() -> None:
    with pytest.raises(A.AssertionError_, match="'threshold' must be a number"):
        A.compile_asserts([], threshold="high")
    assert A.check_threshold("0.5") == 0.5  # a CSV cell


def test_templates_read_the_example_never_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """{{field}} is the example's field; {{ env.X }} reads nothing in a check, so a
    key in the environment cannot be copied into a reason the reports print."""
    monkeypatch.setenv("CTXBENCH_TEST_SECRET", "sk-do-not-print")
    example = {"id": "x", "name": "Ada", "tags": ["a", "b"],
               "assert": [{"type": "equals", "value": "Hi {{name}} {{ tags | dump }} [{{ env.CTXBENCH_TEST_SECRET }}]"}]}
    scores, details = A.Assertions().score_details(example, {"response": "nope"})
    assert scores["assert_pass"] == 0.0
    text = repr(details)
    assert 'Hi Ada [\\"a\\",\\"b\\"] []' in text or 'Hi Ada ["a","b"] []' in text, text
    assert "sk-do-not-print" not in text


def test_json_nested_too_deep_to_read_is_an_error_not_a_verdict() -> None:
    """1,000 levels of arrays parse; 5,000 (valid JSON) cannot be read by Python's
    parser: the row says so instead of failing a valid answer or crashing."""
    assert _run([{"type": "is-json"}], "[" * 900 + "]" * 900)["assert_pass"] == 1.0
    deep = "[" * 5000 + "]" * 5000
    for kind in ({"type": "is-json"}, {"type": "equals", "value": [1]}):
        with pytest.raises(ExampleDataError, match="nests JSON deeper than"):
            _run([kind], deep)
    with pytest.raises(ExampleDataError, match=r"the python assertion raised ZeroDivisionError"):
        _run([{"type": "python", "value": "1 / 0"}], "x")


# --- agent budgets (issue 35) ----------------------------------------------------------


def _tc(name: str, ident: str = "") -> dict:
    return {"id": ident, "type": "function", "function": {"name": name, "arguments": "{}"}}


_STEPS = [
    {"role": "user", "content": "q"},
    {"role": "assistant", "content": "", "tool_calls": [_tc("search", "c1"), _tc("fetch", "c2")]},
    {"role": "tool", "content": "r", "tool_call_id": "c1"},
    {"role": "tool", "content": "r", "tool_call_id": "c2"},
    {"type": "ai", "content": "", "tool_calls": [{"name": "answer", "args": {}, "id": "c3"}]},
]


def _budget(asserts: list[dict], processed: dict, **facts: object) -> tuple[dict, dict]:
    example = {"id": "x", "question": "q", "assert": asserts}
    with A.call_facts(**facts):
        return A.Assertions().score_details(example, {"response": "r", **processed})


def test_max_steps_counts_the_assistant_steps() -> None:
    scores, details = _budget(
        [{"type": "max-steps", "value": 2}, {"type": "max-steps", "value": 1},
         {"type": "not-max-steps", "value": 1}, {"type": "not-max-steps", "value": 2}],
        {"trajectory": _STEPS})
    assert [details[f"{i}. {t}"] for i, t in enumerate(
        ["max-steps", "max-steps", "not-max-steps", "not-max-steps"], 1)] == [
        "pass",
        "FAIL: Assistant steps in the trajectory: 2, more than max-steps 1",
        "pass",
        "FAIL: Assistant steps in the trajectory: 2, within max-steps 2 (not-max-steps wants more)",
    ]
    assert scores["assert_score"] == 0.5
    # no trajectory: the steps are unknown, which is the row's error (never a pass)
    with pytest.raises(ExampleDataError, match="max-steps assertion needs the System's steps"):
        _budget([{"type": "max-steps", "value": 9}], {"tool_calls": [_tc("f")]})
    with pytest.raises(ExampleDataError, match="step 1 has no role"):
        _budget([{"type": "max-steps", "value": 9}], {"trajectory": [{"content": "x"}]})


def test_max_tool_calls_counts_the_trajectory_and_the_reply() -> None:
    def calls(processed: dict, limit: int) -> str:
        return _budget([{"type": "max-tool-calls", "value": limit}], processed)[1]["1. max-tool-calls"]

    assert calls({"trajectory": _STEPS}, 3) == "pass"
    assert calls({"trajectory": _STEPS}, 2) == "FAIL: Tool calls: 3, more than max-tool-calls 2"
    # the reply's tool_calls count too; one already in the trajectory (same id) once
    reply = [_tc("answer", "c3"), _tc("extra", "c4"), _tc("anonymous"), _tc("anonymous")]
    assert calls({"trajectory": _STEPS, "tool_calls": reply}, 5) == "FAIL: Tool calls: 6, more than max-tool-calls 5"
    assert calls({"tool_calls": reply}, 4) == "pass"
    assert calls({}, 0) == "pass"  # no call made, none reported
    with pytest.raises(ExampleDataError, match="'tool_calls' must be a list"):
        calls({"tool_calls": "search"}, 1)


def test_max_tokens_reads_the_calls_or_the_reported_usage() -> None:
    def tokens(processed: dict, limit: int, **facts: object) -> str:
        return _budget([{"type": "max-tokens", "value": limit}], processed, **facts)[1]["1. max-tokens"]

    assert tokens({}, 100, tokens=100) == "pass"
    assert tokens({}, 99, tokens=100) == "FAIL: LLM tokens (prompt + completion): 100, more than max-tokens 99"
    # measured calls first; the System's own api_usage when none was measured
    usage = {"api_usage": {"prompt_tokens": 70, "completion_tokens": 40}}
    assert tokens(usage, 100, tokens=100) == "pass"
    assert tokens(usage, 100) == "FAIL: LLM tokens (prompt + completion): 110, more than max-tokens 100"
    assert tokens({"api_usage": {"completion_tokens": 5}}, 5) == "pass"
    with pytest.raises(ExampleDataError, match="max-tokens assertion needs the tokens"):
        tokens({}, 100)
    with pytest.raises(ExampleDataError, match="not a token count"):
        tokens({"api_usage": {"prompt_tokens": -3}}, 100)


def test_max_tokens_through_evaluate_counts_the_systems_calls() -> None:
    """Tokens measured at the transport: prompt + completion of the System's LLM
    calls (the fake counts words), whatever the System reports."""
    import pytest_context_bench
    from pytest_context_bench.testing import FakeLLM, Reply

    with FakeLLM(handler=lambda request: Reply(text="one two three")) as server:

        class Agent:
            name = "agent"

            def process(self, example: dict) -> dict:
                with pytest_context_bench.http_client(timeout=30) as client:
                    for _ in range(2):  # two calls: (4 + 3) tokens each
                        client.post(server.base_url + "/v1/chat/completions", json={
                            "model": "m", "messages": [{"role": "user", "content": "a b c d"}]})
                return {**example, "response": "done", "api_usage": {"prompt_tokens": 1}}

        examples = [{"id": "a", "question": "q", "assert": [{"type": "max-tokens", "value": 14}]},
                    {"id": "b", "question": "q", "assert": [{"type": "max-tokens", "value": 13}]}]
        result = evaluate([Agent()], examples, progress=False)
    rows = {r.example_id: r for r in result.rows}
    assert rows["a"].scores["assert_pass"] == 1.0, rows["a"]
    assert rows["b"].metadata["assertions"]["1. max-tokens"] == (
        "FAIL: LLM tokens (prompt + completion): 14, more than max-tokens 13")


@pytest.mark.parametrize(
    "value", [-1, 2.5, "two", True, None, float("nan"), float("inf"), [3], "-1", "1e3"])
@pytest.mark.parametrize("kind", ["max-steps", "not-max-tool-calls", "max-tokens"])
def test_a_budget_needs_a_whole_number(kind: str, value: object) -> None:
    with pytest.raises(A.AssertionError_, match="needs a 'value': the most .*, a whole number >= 0"):
        A.compile_asserts([{"type": kind, "value": value}])


def test_a_budget_value_may_be_templated() -> None:
    compiled = A.compile_asserts([{"type": "max-steps", "value": "{{budget}}"}], variables={"budget": 3})
    assert compiled[0].prepared == 3
    assert A.compile_asserts([{"type": "max-tokens", "value": 2.0}])[0].prepared == 2


def test_budgets_count_100000_steps() -> None:
    steps = [{"role": "assistant", "content": "", "tool_calls": [_tc("search", f"c{i}")]}
             if i % 2 else {"role": "tool", "content": "r", "tool_call_id": f"c{i - 1}"}
             for i in range(100_000)]
    _, details = _budget([{"type": "max-steps", "value": 50_000}, {"type": "max-tool-calls", "value": 49_999}],
                         {"trajectory": steps})
    assert details["1. max-steps"] == "pass"
    assert details["2. max-tool-calls"] == "FAIL: Tool calls: 50,000, more than max-tool-calls 49,999"
