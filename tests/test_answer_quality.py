"""AnswerQuality: the seed contract plus our decisions on missing and list golds."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from pytest_context_bench.evaluators import AnswerQuality
from pytest_context_bench.types import Evaluator

ONES = {"f1": 1.0, "exact_match": 1.0, "recall": 1.0, "contains": 1.0}
ZEROS = {"f1": 0.0, "exact_match": 0.0, "recall": 0.0, "contains": 0.0}


def score(original: dict[str, Any], processed: dict[str, Any]) -> dict[str, float]:
    return AnswerQuality().score(original, processed)


def test_seed_example_exactly() -> None:
    out = score({"answer": "Paris"}, {"response": "The capital is Paris."})
    assert out == {"f1": 0.5, "exact_match": 0.0, "recall": 1.0, "contains": 1.0}
    assert list(out) == ["f1", "exact_match", "recall", "contains"]
    assert all(type(v) is float for v in out.values())


def test_name_and_protocol() -> None:
    ev = AnswerQuality()
    assert ev.name == "answer_quality"
    assert isinstance(ev, Evaluator)


@pytest.mark.parametrize(
    "original", [{}, {"answer": None}, {"answer": []}, {"answer": ()}]
)
def test_no_gold_cannot_judge(original: dict[str, Any]) -> None:
    assert score(original, {"response": "Paris"}) == {}


@pytest.mark.parametrize("answer", ["", "   ", "\n\t"])
def test_empty_gold_gives_ones(answer: str) -> None:
    assert score({"answer": answer}, {"response": "anything"}) == ONES
    # The gold check comes before the response check.
    assert score({"answer": answer}, {}) == ONES


@pytest.mark.parametrize(
    "processed", [{}, {"response": None}, {"response": ""}, {"response": "  \n"}]
)
def test_missing_or_blank_response_gives_zeros(processed: dict[str, Any]) -> None:
    assert score({"answer": "Paris"}, processed) == ZEROS


def test_contains_is_raw_case_insensitive_substring() -> None:
    out = score({"answer": "Paris"}, {"response": "PARISIAN food"})
    assert out["contains"] == 1.0
    assert out["f1"] == 0.0
    assert out["exact_match"] == 0.0


def test_contains_does_not_normalise_but_em_does() -> None:
    out = score({"answer": "1,000"}, {"response": "1000"})
    assert out["contains"] == 0.0
    assert out["exact_match"] == 1.0
    out = score({"answer": "The Beatles"}, {"response": "Beatles"})
    assert out == {"f1": 1.0, "exact_match": 1.0, "recall": 1.0, "contains": 0.0}


def test_contains_ignores_surrounding_whitespace_of_gold() -> None:
    assert score({"answer": "Paris\n"}, {"response": "Paris."})["contains"] == 1.0


def test_articles_only_gold_and_response() -> None:
    # Not empty after strip, so not the all-ones rule; both normalise to nothing.
    out = score({"answer": "the"}, {"response": "a"})
    assert out == {"f1": 0.0, "exact_match": 1.0, "recall": 0.0, "contains": 0.0}


def test_non_string_answer_and_response_are_coerced() -> None:
    out = score({"answer": 42}, {"response": "The answer is 42"})
    # "answer is 42" vs "42": P=1/3, R=1.
    assert out == {"f1": 0.5, "exact_match": 0.0, "recall": 1.0, "contains": 1.0}
    assert score({"answer": 42}, {"response": 42}) == ONES
    assert score({"answer": [42]}, {"response": "42"}) == ONES


def test_list_of_golds_takes_max_per_key() -> None:
    out = score(
        {"answer": ["Paris France", "paris"]}, {"response": "Paris is in France"}
    )
    # vs "Paris France": P=1/2, R=1, F1=2/3, contains 0.
    # vs "paris": P=1/4, R=1, F1=0.4, contains 1.
    assert out["f1"] == pytest.approx(2 / 3)
    assert out["recall"] == 1.0
    assert out["contains"] == 1.0
    assert out["exact_match"] == 0.0


def test_list_of_golds_exact_match_on_any() -> None:
    out = score({"answer": ["City of Paris", "Paris"]}, {"response": "paris"})
    assert out == ONES
    out = score(
        {"answer": ("Paris", "City of Paris")}, {"response": "the city of light"}
    )
    # Best gold is "City of Paris": [city,of,light] vs [city,of,paris], P=R=2/3.
    assert out["f1"] == pytest.approx(2 / 3)
    assert out["recall"] == pytest.approx(2 / 3)
    assert out["exact_match"] == 0.0
    assert out["contains"] == 0.0


def test_list_with_an_empty_gold_scores_like_a_single_empty_gold() -> None:
    assert score({"answer": ["", "Paris"]}, {"response": "London"}) == ONES


def test_list_of_golds_with_blank_response() -> None:
    assert score({"answer": ["Paris", "paris"]}, {"response": ""}) == ZEROS


def test_inputs_are_not_mutated() -> None:
    original = {"answer": ["Paris"]}
    processed = {"response": "Paris"}
    score(original, processed)
    assert original == {"answer": ["Paris"]}
    assert processed == {"response": "Paris"}


def test_core_does_not_import_pytest() -> None:
    code = (
        "import sys, pytest_context_bench.evaluators, pytest_context_bench.metrics;"
        "sys.exit(1 if 'pytest' in sys.modules else 0)"
    )
    import pytest_context_bench

    # The package's parent dir, so the child finds it whether installed or not.
    root = str(Path(pytest_context_bench.__file__).resolve().parent.parent)
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([root, os.environ.get("PYTHONPATH", "")]),
    }
    proc = subprocess.run(
        [sys.executable, "-c", code],
        check=False,
        capture_output=True,
        text=True,
        env=env,
    )
    assert proc.returncode == 0, proc.stderr
