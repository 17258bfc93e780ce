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
