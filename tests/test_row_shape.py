"""The fast row check of the JSON report's reader (report/row_shape.py) against the
oracle it stands in for, jsonschema on ``report.schema.json``: it may say "fits" only
of a row the schema accepts (its "no" sends the row to jsonschema)."""

from __future__ import annotations

import copy
import random
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from pytest_context_bench.report.json_report import load_schema
from pytest_context_bench.report.row_shape import row_fits

CALL = {
    "source": "evaluator:judge", "url": "http://127.0.0.1:1/v1/chat/completions", "model": "m",
    "params": {"temperature": 0}, "messages": [{"role": "user", "text": "q"}], "reply": "a",
    "finish_reason": "stop", "usage": {"prompt_tokens": 3, "completion_tokens": 1}, "latency": 0.1,
    "cache": "miss", "attempts": [{"status": 200, "error": None}], "error": None,
}
ROWS: list[dict[str, Any]] = [
    {"system": "s", "example_id": "q-1", "dataset": "qa", "scores": {"f1": 1.0, "x": "nan"},
     "input_tokens": 3, "output_tokens": 3, "latency": 0.5, "metadata": {"score_field": "f1"},
     "error": None, "suite": "s", "status": "pass"},
    {"system": "s", "example_id": "q-2", "dataset": "qa", "scores": {}, "input_tokens": 0,
     "output_tokens": 0, "latency": "nan",
     "metadata": {"trial": 2, "adaptive": {"max_trials": 2, "budget": 1.5, "reasked": True, "trials": 2}},
     "error": {"type": "E", "message": "m", "where": "system", "extra": 1}, "suite": "s",
     "status": "error", "order": [0, 0, 1, -1, 2], "response": "", "reference": "r",
     "tool_calls": "f()", "answer": {"response": "x", "tool_calls": [{"a": [1]}], "trajectory": None, "cut": ["response"]},
     "calls": [CALL, {**CALL, "source": "system", "usage": None, "reply": None, "attempts_omitted": 3}],
     "calls_omitted": 0},
]

_VALUES: list[Any] = [None, "", "x", "system", "evaluator:\n", "inf", 0, -1, 1, 2, 3.0, 1.5, True, False, [], {}, [1], {"a": 1}, ["response"], ["cut"]]


def _paths(value: Any, at: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [at]
    if isinstance(value, dict):
        for k, v in value.items():
            out += _paths(v, (*at, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out += _paths(v, (*at, i))
    return out


def _mutate(row: dict[str, Any], rng: random.Random) -> Any:
    row = copy.deepcopy(row)
    for _ in range(rng.randint(1, 3)):
        paths = [p for p in _paths(row) if p]
        path = rng.choice(paths)
        parent: Any = row
        for part in path[:-1]:
            parent = parent[part]
        how = rng.random()
        if how < 0.2 and isinstance(parent, dict):
            del parent[path[-1]]
        elif how < 0.3 and isinstance(parent, dict):
            parent[rng.choice(["zzz", "answer", "order", "calls", "cut", "trial", "attempts_omitted"])] = rng.choice(_VALUES)
        else:
            parent[path[-1]] = copy.deepcopy(rng.choice(_VALUES))
    return row


@pytest.fixture(scope="module")
def row_validator() -> Draft202012Validator:
    schema = load_schema()
    return Draft202012Validator({"$defs": schema["$defs"], "$ref": "#/$defs/row"})


def test_the_rows_written_fit(row_validator: Draft202012Validator) -> None:
    for row in ROWS:
        assert row_validator.is_valid(row)
        assert row_fits(row)


def test_fits_only_what_the_schema_accepts(row_validator: Draft202012Validator) -> None:
    rng = random.Random(37)
    said_yes = said_no = 0
    for i in range(6000):
        row = _mutate(ROWS[i % len(ROWS)], rng)
        if row_fits(row):
            said_yes += 1
            assert row_validator.is_valid(row), row
        else:
            said_no += 1
    # Both answers were exercised (the mutations keep some rows valid).
    assert said_yes > 300 and said_no > 3000
