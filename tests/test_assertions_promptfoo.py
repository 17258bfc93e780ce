"""Assertion verdicts equal promptfoo's own, case by case.

tests/oracles/promptfoo/cases.json holds 340 cases constructed by hand (both
polarities of every type, weights, metrics, test thresholds, edge cases);
expected.json holds what promptfoo 0.121.20 itself decided for each (recorded once
by record.mjs, see its README). Each case here runs through our engine and must
give the same pass/fail and score, and for ``error`` cases an error of ours.

The cases in :data:`DIFFERENCES` are deliberate differences, each a row of
docs/differences.md; their test checks that we differ exactly as documented.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from pytest_context_bench.errors import ExampleDataError
from pytest_context_bench.evaluators.assertions import (
    AssertionError_,
    Assertions,
    call_facts,
)

ORACLE = Path(__file__).parent / "oracles" / "promptfoo"
CASES = {c["id"]: c for c in json.loads((ORACLE / "cases.json").read_text("utf-8"))}
EXPECTED = json.loads((ORACLE / "expected.json").read_text("utf-8"))["cases"]

#: case id → what we do instead of promptfoo's verdict (docs/differences.md).
#: "error": we refuse the assertion or the row (an error row, or exit 4 at load)
#: where promptfoo records a failure.
DIFFERENCES: dict[str, str] = {
    # An invalid regular expression: promptfoo fails the assertion when it runs; we
    # stop the run before its first example (exit 4), naming the file and line.
    "regex-9": "error",
    "regex-11": "error",
    "not-regex-3": "error",
    # A python assertion that raises, names a missing function or does not compile:
    # promptfoo fails it with score 0 (a weight of 0 may even hide it); here the
    # row is an error with the exception's message (a bug in a check is not a
    # verdict on the System), and an unloadable check stops the run before it starts.
    "python-14": "error",
    "python-24": "error",
    "python-30": "error",
    "not-python-7": "error",
    "multi-28": "error",
    "multi-30": "error",
    "multi-31": "error",
}


def run_case(case: dict[str, Any]) -> dict[str, Any]:
    """Our verdict on one case: ``{"pass", "score", "named"}`` or ``{"error"}``."""
    example: dict[str, Any] = {"id": case["id"], **(case.get("vars") or {}), "assert": case["assert"]}
    if case.get("threshold") is not None:
        example["threshold"] = case["threshold"]
    checks = Assertions(base_dir=str(ORACLE))
    facts = {"latency_ms": case.get("latency_ms"), "cost": case.get("cost")}
    try:
        with call_facts(**facts):
            scores, details = checks.score_details(example, {"response": case["output"]})
    except (AssertionError_, ExampleDataError) as exc:
        return {"error": str(exc)}
    named = {k: v for k, v in scores.items() if k not in ("assert_score", "assert_pass")}
    return {"pass": scores["assert_pass"] == 1.0, "score": scores["assert_score"], "named": named, "details": details}


@pytest.mark.parametrize("case_id", sorted(CASES))
def test_same_verdict_as_promptfoo(case_id: str) -> None:
    case, expected = CASES[case_id], EXPECTED[case_id]
    ours = run_case(case)
    if case_id in DIFFERENCES:
        how = DIFFERENCES[case_id]
        if how == "error":
            assert "error" in ours and "error" not in expected, (ours, expected)
        return
    if "error" in expected:
        assert "error" in ours, f"promptfoo refused this case ({expected['error']!r}); we gave {ours}"
        return
    assert "error" not in ours, f"we refused a case promptfoo judged {expected}: {ours['error']}"
    assert ours["pass"] is expected["pass"], (ours, expected)
    assert math.isclose(ours["score"], expected["score"], abs_tol=1e-9), (ours, expected)
    for name, value in (expected.get("namedScores") or {}).items():
        assert math.isclose(ours["named"].get(name, math.nan), value, abs_tol=1e-9), (name, ours, expected)


def test_the_oracle_is_big_enough_and_covers_every_type() -> None:
    from pytest_context_bench.evaluators.assertions import CHECKS, JUDGED_TYPES, OWN_TYPES

    assert len(CASES) >= 150
    used = {a["type"] for c in CASES.values() for a in c["assert"]}
    for kind in CHECKS:
        # ours, not promptfoo's: the agent budgets are tested in test_assertions.py,
        # tool-call against BFCL's checker (test_tool_calls_bfcl.py)
        if kind in OWN_TYPES:
            continue
        # llm-rubric asks a grader: its oracle records promptfoo's verdicts against
        # a scripted one (test_llm_rubric.py, rubric_cases.json)
        if kind in JUDGED_TYPES:
            continue
        assert kind in used and f"not-{kind}" in used, kind
    assert set(EXPECTED) == set(CASES)


def test_every_difference_is_documented() -> None:
    text = (Path(__file__).parents[1] / "docs" / "differences.md").read_text("utf-8")
    for case_id in DIFFERENCES:
        kind = CASES[case_id]["assert"][0]["type"]
        assert kind.removeprefix("not-") in text, case_id
