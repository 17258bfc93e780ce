"""NLILabelMatch: label sets, aliases per set, negation, last-wins, bad input."""

from __future__ import annotations

from typing import Any

import pytest

from pytest_context_bench.evaluators.nli import (
    CONTRACT_NLI_LABELS,
    NLI_LABELS,
    SCIFACT_LABELS,
    NLILabelMatch,
    extract_label,
)
from pytest_context_bench.types import Evaluator

C = CONTRACT_NLI_LABELS  # entailment / contradiction / not mentioned
S = SCIFACT_LABELS  # supports / refutes / not enough info
G = NLI_LABELS  # entailment / neutral / contradiction
RTE = ("entailment", "not_entailment")
TWO = ("entailment", "contradiction")

# (response, label set, expected label or None). Each row is one reading decision;
# the comment says which rule it pins.
TABLE: list[tuple[object, tuple[str, ...], str | None]] = [
    # --- upstream's conformance cases (UPSTREAM.md §6) ---
    ("Yes", C, "entailment"),
    ("The answer is: supports", S, "supports"),
    ("neutral", C, "not mentioned"),
    ("Based on the evidence, I conclude this is a contradiction.", C, "contradiction"),
    ("The answer is: Not mentioned.", C, "not mentioned"),
    ("Entailment", C, "entailment"),
    ("Contradiction", G, "contradiction"),
    # --- bare labels: case, punctuation, separators, camel case, markup ---
    ("ENTAILMENT.", G, "entailment"),
    ("  contradiction!\n", G, "contradiction"),
    ("Neutral", G, "neutral"),
    ("SUPPORTS", S, "supports"),
    ("Refutes.", S, "refutes"),
    ("NOT_ENOUGH_INFO", S, "not enough info"),
    ("not-enough-info", S, "not enough info"),
    ("NotMentioned", C, "not mentioned"),
    ("not_mentioned", C, "not mentioned"),
    ('"Not mentioned"', C, "not mentioned"),
    ("**Contradiction**", C, "contradiction"),
    ("`entailment`", G, "entailment"),
    ("Label: NEI", S, "not enough info"),
    # --- yes/no/true/false map into the example's own set ---
    ("Yes", S, "supports"),
    ("Yes", G, "entailment"),
    ("No.", C, "contradiction"),
    ("No", S, "refutes"),
    ("no", G, "contradiction"),
    ("True", S, "supports"),
    ("False.", C, "contradiction"),
    ("Yes, this is true.", G, "entailment"),
    ("The claim is true.", S, "supports"),
    ("The hypothesis is false.", G, "contradiction"),
    ("Correct.", S, "supports"),
    ("The answer is no", S, "refutes"),
    # ... and answer words in prose are not answers
    ("There is no evidence either way. Cannot be determined.", S, "not enough info"),
    ("This is a true statement about dates; it is neutral.", G, "neutral"),
    # --- aliases of each role, in the set's own names ---
    ("The premise entails the hypothesis.", G, "entailment"),
    ("The abstract supports the claim.", S, "supports"),
    ("The contract supports the hypothesis.", C, "entailment"),
    ("The abstract contradicts the claim.", S, "refutes"),
    ("The evidence refutes it.", G, "contradiction"),
    ("The findings disprove the claim.", S, "refutes"),
    ("The contract does not mention this.", C, "not mentioned"),
    ("The contract doesn't mention it at all.", C, "not mentioned"),
    ("The hypothesis is not explicitly mentioned.", C, "not mentioned"),
    ("There is insufficient evidence.", S, "not enough info"),
    ("Unknown", C, "not mentioned"),
    ("It cannot be determined from the premise.", G, "neutral"),
    ("I can't tell from the abstract.", S, "not enough info"),
    ("It is impossible to determine.", S, "not enough info"),
    ("Inconclusive.", S, "not enough info"),
    ("Neither.", C, "not mentioned"),
    # --- negation ---
    ("The premise does not entail the hypothesis.", C, None),
    ("It is not entailment.", G, None),
    ("The claim is not supported by the abstract.", S, None),
    ("The abstract doesn't support the claim.", S, None),
    ("This is not a contradiction.", C, None),
    ("There is no evidence that the contract contradicts the hypothesis.", C, None),
    ("It is neither entailed nor contradicted.", G, "neutral"),
    ("The abstract neither supports nor refutes the claim.", S, "not enough info"),
    ("It does not support the claim, and it does not refute it.", S, "not enough info"),
    ("It does not entail it; it contradicts it.", C, "contradiction"),
    ("This is entailment, not contradiction.", G, "entailment"),
    ("Not entailment but contradiction.", G, "contradiction"),
    ("No contradiction here; the premise entails it.", G, "entailment"),
    ("I do not think this is a contradiction; it is neutral.", G, "neutral"),
    ("Nothing in the abstract contradicts the claim.", S, None),
    ("It is not neutral. It is not a contradiction.", G, "entailment"),
    ("Entailment is not correct.", G, None),
    # negation on a two-way set leaves the other label
    ("The premise does not entail the hypothesis.", RTE, "not_entailment"),
    ("not entailment", RTE, "not_entailment"),
    ("Contradiction.", RTE, "not_entailment"),
    ("It is not a contradiction.", TWO, "entailment"),
    # a label outside the set is no answer
    ("It's neutral.", TWO, None),
    # --- hypotheticals and questions are not statements ---
    (
        "There is not enough evidence to support or refute the claim.",
        S,
        "not enough info",
    ),
    ("I cannot determine whether it entails.", G, "neutral"),
    ("The abstract appears to support the claim.", S, "supports"),
    (
        (
            "Does the contract entail, contradict, or not mention: X? "
            "The contract does not mention X."
        ),
        C,
        "not mentioned",
    ),
    ("Is it a contradiction? Yes.", G, "entailment"),
    # --- explicit statements first, the last one wins ---
    (
        (
            "Answer: Entailment\n\nExplanation: the contract says X, "
            "which rules out a contradiction and anything else."
        ),
        C,
        "entailment",
    ),
    (
        "Contradiction. The contract does not mention anything about the rest.",
        C,
        "contradiction",
    ),
    (
        "The answer is entailment. On reflection, the answer is contradiction.",
        G,
        "contradiction",
    ),
    ("Label: contradiction. I do not think this is entailment.", G, "contradiction"),
    ("Final answer: **REFUTES**", S, "refutes"),
    ("Answer:\n\nNot mentioned", C, "not mentioned"),
    (
        "The relationship between them is neutral, though it may look like entailment.",
        G,
        "neutral",
    ),
    ("Therefore, the hypothesis is entailed.", C, "entailment"),
    ("I would classify this as not enough info.", S, "not enough info"),
    ("The label is **neutral** even though some words contradict.", G, "neutral"),
    ("So the answer is yes.", S, "supports"),
    ("I'd say contradiction.", G, "contradiction"),
    (
        "In conclusion, although it looks like entailment, it is a contradiction.",
        G,
        "contradiction",
    ),
    (
        (
            "Step 1: the contract covers it.\nStep 2: the clause says so.\n"
            "Final: entailment\nNote: a contradiction would need a conflicting clause."
        ),
        C,
        "entailment",
    ),
    # --- without explicit statements the last mention wins ---
    (
        "It looks like entailment at first, but it is really a contradiction",
        G,
        "contradiction",
    ),
    (
        "Contradiction or entailment? Hard to say; I lean towards entailment",
        G,
        "entailment",
    ),
    ("It might be neutral; the premise supports it though", G, "entailment"),
    # --- nothing to read ---
    ("", G, None),
    ("   \n", C, None),
    ("I have no idea.", S, None),
    ("Paris", C, None),
    (None, G, None),
    (42, S, None),
    (3.5, C, None),
    ({"label": "maybe"}, C, None),
    (["entail"], G, "entailment"),  # read as its str()
]


@pytest.mark.parametrize(("response", "labels", "expected"), TABLE)
def test_extract_label_table(
    response: object, labels: tuple[str, ...], expected: str | None
) -> None:
    assert extract_label(response, labels) == expected


def test_table_is_large_and_covers_every_set() -> None:
    assert len(TABLE) >= 50
    for label_set in (C, S, G):
        assert sum(1 for _, lab, _ in TABLE if lab == label_set) >= 15


def test_extract_returns_labels_as_given() -> None:
    labels = ["Entailment", "Contradiction", "NotMentioned"]
    assert extract_label("not mentioned", labels) == "NotMentioned"
    assert extract_label("Yes", labels) == "Entailment"
    assert extract_label("neutral", labels) == "NotMentioned"


def test_repeated_labels_are_one_label() -> None:
    labels = ["Entailment", "entailment", "contradiction"]
    assert extract_label("Yes", labels) == "Entailment"
    assert extract_label("entailment", labels) == "Entailment"


def test_custom_labels_match_literally() -> None:
    labels = ("weird", "odd")
    assert extract_label("It is weird.", labels) == "weird"
    assert extract_label("Weird, or rather odd", labels) == "odd"
    assert extract_label("It is not weird.", labels) == "odd"
    assert extract_label("entailment", labels) is None


def test_extract_label_rejects_bad_label_sets() -> None:
    with pytest.raises(ValueError, match="labels"):
        extract_label("yes", "entailment")
    with pytest.raises(ValueError, match="labels"):
        extract_label("yes", [])


# --------------------------------------------------------------------------- score


def score(original: dict[str, Any], processed: dict[str, Any]) -> dict[str, float]:
    return NLILabelMatch().score(original, processed)


def test_seed_example_and_protocol() -> None:
    ev = NLILabelMatch()
    assert ev.name == "nli_label_match"
    assert isinstance(ev, Evaluator)
    out = ev.score({"answer": "Entailment"}, {"response": "Yes, this is true."})
    assert out == {"nli_accuracy": 1.0}
    assert type(out["nli_accuracy"]) is float


@pytest.mark.parametrize(
    ("gold", "response", "expected"),
    [
        # upstream's test file, where its behaviour is right
        ("Entailment", "Entailment", 1.0),
        ("SUPPORTS", "supports", 1.0),
        ("Entailment", "Yes", 1.0),
        (
            "Contradiction",
            "Based on the evidence, I conclude this is a contradiction.",
            1.0,
        ),
        ("SUPPORTS", "The answer is: supports", 1.0),
        ("Entailment", "Contradiction", 0.0),
        ("SUPPORTS", "", 0.0),
        ("Not mentioned", "The answer is: Not mentioned.", 1.0),
        ("Not mentioned", "neutral", 1.0),
        # what upstream gets wrong (UPSTREAM.md §2.5, §7.1 item 9)
        ("SUPPORTS", "Yes", 1.0),  # yes maps into SciFact's own set
        ("REFUTES", "No.", 1.0),
        ("Contradiction", "It is not entailment.", 0.0),  # negation understood
        ("Entailment", "It is not entailment.", 0.0),
        ("NOT ENOUGH INFO", "Not enough info", 1.0),
        ("SUPPORTS", "The claim is supported.", 1.0),
        ("Not mentioned", "The contract does not mention it.", 1.0),
        # SciFact's raw labels (SUPPORT / CONTRADICT)
        ("SUPPORT", "supports", 1.0),
        ("CONTRADICT", "The abstract refutes the claim.", 1.0),
        ("neutral", "unknown", 1.0),
    ],
)
def test_score_with_inferred_label_set(
    gold: str, response: str, expected: float
) -> None:
    assert score({"answer": gold}, {"response": response}) == {"nli_accuracy": expected}


def test_yes_maps_into_the_examples_own_labels() -> None:
    scifact = {
        "answer": "supports",
        "labels": ["supports", "refutes", "not enough info"],
    }
    assert score(scifact, {"response": "Yes"}) == {"nli_accuracy": 1.0}
    contract = {
        "answer": "Entailment",
        "labels": ["Entailment", "Contradiction", "Not mentioned"],
    }
    assert score(contract, {"response": "Yes"}) == {"nli_accuracy": 1.0}
    yes_no = {"answer": "no", "labels": ["yes", "no"]}
    assert score(yes_no, {"response": "No."}) == {"nli_accuracy": 1.0}
    assert score(yes_no, {"response": "Yes."}) == {"nli_accuracy": 0.0}


def test_labels_field_names_and_aliases_of_the_gold() -> None:
    labels = ["entailment", "not_entailment"]
    assert score(
        {"answer": "not_entailment", "labels": labels},
        {"response": "It does not follow: the premise does not entail it."},
    ) == {"nli_accuracy": 1.0}
    # a gold given by an alias of its role, or by index (Hugging Face ClassLabel)
    assert score(
        {"answer": "neutral", "labels": list(C)}, {"response": "Not mentioned."}
    ) == {"nli_accuracy": 1.0}
    assert score({"answer": 2, "labels": list(G)}, {"response": "Contradiction."}) == {
        "nli_accuracy": 1.0
    }
    # custom labels score on exact (normalised) equality, which upstream never did
    assert score(
        {"answer": "weird", "labels": ["weird", "odd"]}, {"response": "Weird"}
    ) == {"nli_accuracy": 1.0}


@pytest.mark.parametrize(
    "original",
    [
        {},
        {"answer": None},
        {"answer": ""},  # upstream scored an empty gold as 1.0
        {"answer": "   "},
        {"answer": []},
        {"labels": list(C)},
        # no label set, and the gold is in none of the known ones: cannot judge
        {"answer": "Paris"},
        {"answer": "weird"},
        {"answer": 1},
    ],
)
def test_cannot_judge_gives_empty(original: dict[str, Any]) -> None:
    assert score(original, {"response": "entailment"}) == {}


@pytest.mark.parametrize(
    "original",
    [
        {"answer": "maybe", "labels": ["entailment", "contradiction"]},
        {"answer": "neutral", "labels": ["entailment", "contradiction"]},
        {"answer": 7, "labels": ["entailment", "contradiction"]},
    ],
)
def test_gold_outside_its_own_labels_is_an_error(original: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match="not in the example's labels"):
        score(original, {"response": "entailment"})


@pytest.mark.parametrize(
    "labels",
    ["entailment,contradiction", b"ab", [], ["entailment", None], ["", "x"], {"a": 1}],
)
def test_malformed_labels_is_an_error(labels: object) -> None:
    with pytest.raises(ValueError, match="'labels'"):
        score({"answer": "entailment", "labels": labels}, {"response": "entailment"})


@pytest.mark.parametrize(
    "processed",
    [
        {},
        {"response": None},
        {"response": 0},
        {"response": 1.5},
        {"response": {"x": 1}},
        {"response": ["a"]},
        {"response": "   "},
    ],
)
def test_odd_responses_score_zero(processed: dict[str, Any]) -> None:
    assert score({"answer": "entailment"}, processed) == {"nli_accuracy": 0.0}


def test_list_gold_means_any() -> None:
    original = {"answer": ["entailment", "neutral"]}
    assert score(original, {"response": "neutral"}) == {"nli_accuracy": 1.0}
    assert score(original, {"response": "contradiction"}) == {"nli_accuracy": 0.0}


@pytest.mark.timeout(300)  # a hang only; the speed: benchmarks/large_inputs.py
def test_huge_responses_in_bounded_time() -> None:
    # Each of these takes well under a second of CPU; a quadratic step would take
    # minutes.
    texts = [
        "The contract does not mention it, yet the premise entails it. " * 16000,
        "**Entailment** and **no** " * 40000,
        "Answer: yes. " * 80000,
        "\n" * 1_000_000,
    ]
    for text in texts:
        assert extract_label(text[:1_000_000] + "\nAnswer: refutes.", S) == "refutes"
    last = "yes " * 250_000 + "\nFinal answer: refutes."
    assert extract_label(last, S) == "refutes"
