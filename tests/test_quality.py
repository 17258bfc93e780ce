"""Conformance of the SQuAD v1.1 answer metrics (hand-computed expected values)."""

from __future__ import annotations

import pytest

from pytest_context_bench.metrics.quality import (
    exact_match,
    f1_score,
    normalize_answer,
    recall_score,
)

# (response, reference, f1, exact_match, recall); every value worked out by hand from
# the SQuAD rules: lowercase, drop ASCII punctuation, drop a/an/the, split.
CASES: list[tuple[object, object, float, float, float]] = [
    # Seed example: "capital is paris" vs "paris": P=1/3, R=1, F1=0.5.
    ("The capital is Paris.", "Paris", 0.5, 0.0, 1.0),
    ("Paris", "Paris", 1.0, 1.0, 1.0),
    ("paris!!!", "Paris", 1.0, 1.0, 1.0),
    ("US", "U.S.", 1.0, 1.0, 1.0),
    ("Beatles", "The Beatles", 1.0, 1.0, 1.0),
    # Both normalise to nothing: EM says equal, F1 has no overlap (SQuAD v1.1).
    ("a", "the", 0.0, 1.0, 0.0),
    ("An", "an", 0.0, 1.0, 0.0),
    ("", "", 0.0, 1.0, 0.0),
    ("", "Paris", 0.0, 0.0, 0.0),
    ("Paris", "", 0.0, 0.0, 0.0),
    # Repeated tokens count once each against the reference: P=1/3, R=1.
    ("cat cat cat", "cat", 0.5, 0.0, 1.0),
    # And the other way round: P=1, R=1/3.
    ("cat", "cat cat cat", 0.5, 0.0, 1 / 3),
    # "cat" vs ["cat","sat","on","mat"]: P=1, R=1/4, F1=0.4.
    ("the cat", "the cat sat on mat", 0.4, 0.0, 0.25),
    # SQuAD order: punctuation goes first, so "the-cat" is one word "thecat".
    ("the-cat", "thecat", 1.0, 1.0, 1.0),
    ("the-cat", "cat", 0.0, 0.0, 0.0),
    ("A.B.", "ab", 1.0, 1.0, 1.0),
    # Unicode punctuation is kept: "paris—france" is a single token.
    ("Paris\u2014France", "Paris France", 0.0, 0.0, 0.0),
    ("\u201cParis\u201d", "Paris", 0.0, 0.0, 0.0),
    ('"Paris"', "Paris", 1.0, 1.0, 1.0),
    # Non-strings are coerced with str().
    (42, "42", 1.0, 1.0, 1.0),
    (42, 42, 1.0, 1.0, 1.0),
    ("An apple a day", "apple day", 1.0, 1.0, 1.0),
    # Articles are whole words only.
    ("Theater", "theater", 1.0, 1.0, 1.0),
    ("another", "other", 0.0, 0.0, 0.0),
    # 3 vs 2 tokens, overlap 2: P=2/3, R=1, F1=0.8.
    ("New York City", "new york", 0.8, 0.0, 1.0),
    # F1 ignores order, EM does not.
    ("york new", "new york", 1.0, 0.0, 1.0),
    ("1,000", "1000", 1.0, 1.0, 1.0),
    ("  Paris \n", "paris", 1.0, 1.0, 1.0),
    # [cat,dog] vs [dog,cat,cat]: overlap 2, P=1, R=2/3, F1=0.8.
    ("cat dog", "dog cat cat", 0.8, 0.0, 2 / 3),
    # overlap 1, P=1/3, R=1/2, F1=0.4.
    ("red blue green", "blue yellow", 0.4, 0.0, 0.5),
    ("Mr. Smith's", "mr smiths", 1.0, 1.0, 1.0),
    ("\u00c9COLE", "\u00e9cole", 1.0, 1.0, 1.0),
    ("a b c d", "e", 0.0, 0.0, 0.0),
    ("the the the cat", "cat", 1.0, 1.0, 1.0),
]


@pytest.mark.parametrize(("response", "reference", "f1", "em", "recall"), CASES)
def test_conformance(
    response: object, reference: object, f1: float, em: float, recall: float
) -> None:
    assert f1_score(response, reference) == pytest.approx(f1, abs=1e-12)
    assert exact_match(response, reference) == em
    assert recall_score(response, reference) == pytest.approx(recall, abs=1e-12)


def test_table_is_large_enough() -> None:
    assert len(CASES) >= 25


@pytest.mark.parametrize(("response", "reference", "_f1", "_em", "_recall"), CASES)
def test_returns_plain_floats(
    response: object, reference: object, _f1: float, _em: float, _recall: float
) -> None:
    for fn in (f1_score, exact_match, recall_score):
        assert type(fn(response, reference)) is float


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # SQuAD removes punctuation before articles; upstream gives "cat" here.
        ("the-cat", "thecat"),
        ("a.b.", "ab"),
        ("The  Quick, brown fox!", "quick brown fox"),
        ("An apple\ta\nday", "apple day"),
        ("the", ""),
        ("Paris\u2014France", "paris\u2014france"),
        ("U.S.A.", "usa"),
        (3.5, "35"),
    ],
)
def test_normalize_answer(text: object, expected: str) -> None:
    assert normalize_answer(text) == expected


def test_f1_is_symmetric_in_its_arguments() -> None:
    assert f1_score("red blue green", "blue yellow") == f1_score(
        "blue yellow", "red blue green"
    )


@pytest.mark.parametrize(
    "response, reference",
    [
        ("The capital is Paris.", "Paris"),
        ("cat cat cat", "cat"),
        ("the", "a"),
        ("", "x"),
        ("x", ""),
        ("Paris", "paris!"),
        ("a b c d", "d c b a e"),
        ("U.S. army", "US Army corps"),
    ],
)
def test_overlap_scores_equals_the_three_functions(response: str, reference: str) -> None:
    from pytest_context_bench.metrics.quality import overlap_scores

    assert overlap_scores(response, reference) == (
        f1_score(response, reference),
        exact_match(response, reference),
        recall_score(response, reference),
    )
