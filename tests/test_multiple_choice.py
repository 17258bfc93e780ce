"""MultipleChoiceAccuracy and extract_choice: the phrasing table and the score rules.

The table is the contract of the extractor: every row is a way models answer (or
fail to answer) a lettered question. A row that changes its letter is a
regression, whatever the reason.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pytest_context_bench.evaluators.multiple_choice import (
    MAX_CHOICES,
    MultipleChoiceAccuracy,
    extract_choice,
)
from pytest_context_bench.types import Evaluator

LONG_REASONING = (
    "Let's think step by step. Option A describes mitosis, which is not what the "
    "question asks. Option B mentions a cell wall, but animal cells have none. "
    "Option C is tempting, yet it confuses transcription with translation. "
    "I considered each in turn, and a careful reading shows only one fits.\n\n"
    "Therefore, the answer is (D)."
)

# (response, n_choices, expected letter or None)
PHRASINGS: list[tuple[Any, int, str | None]] = [
    # --- the phrasings the issue names -------------------------------------
    ("The answer is (C)", 4, "C"),
    ("Answer: c", 4, "C"),
    ("**C**", 4, "C"),
    ("Final answer: C", 4, "C"),
    ("the correct option is C", 4, "C"),
    ("I choose option D", 4, "D"),  # upstream: "I"
    ("The answer is definitely C", 4, "C"),  # upstream: "D" (from "definitely")
    # --- upstream's own test cases -------------------------------------------
    ("(D)", 4, "D"),
    ("The answer is J.", 10, "J"),
    ("I pick (H) because it matches the definition.", 10, "H"),
    ("E", 10, "E"),
    ("F", 10, "F"),
    ("B", 4, "B"),
    ("b", 4, "B"),
    ("The answer is B.", 4, "B"),
    ("answer: c", 4, "C"),
    ("Answer is (D)", 4, "D"),
    ("The answer is: B", 4, "B"),
    ("I think the answer is: B", 4, "B"),  # upstream: "I"
    ("K", 10, None),
    # --- explicit answers ----------------------------------------------------
    ("ANSWER: C", 4, "C"),
    ("Answer - B", 4, "B"),
    ("My final answer is C.", 4, "C"),
    ("The answer would be C", 4, "C"),
    ("I believe the correct answer is B.", 4, "B"),
    ("The correct answer is option C.", 4, "C"),
    ("The answer to this question is B", 4, "B"),
    ("The answer, I think, is C.", 4, "C"),
    ("The answer is therefore D", 4, "D"),
    ("The answer is, therefore, D", 4, "D"),
    ("The answer is most likely B", 4, "B"),
    ("The best choice would be B", 4, "B"),
    ("Choice: B", 4, "B"),
    ("I'd say B", 4, "B"),
    ("I'm going with D", 4, "D"),
    ("Let's go with A.", 4, "A"),
    ("Between A and B, I'd go with B", 4, "B"),
    ("I wouldn't choose A; I'd choose D.", 4, "D"),
    ("It must be B.", 4, "B"),
    ("So it's B then.", 4, "B"),
    # "not" stops "it's not A" from being an answer; the later "it's C" is one.
    ("It's not A, it's C", 4, "C"),
    ("B is correct", 4, "B"),
    ("b is correct.", 4, "B"),
    ("(B) is the correct answer", 4, "B"),
    ("Option B is the best", 4, "B"),
    ("Options A and C are wrong; B is correct.", 4, "B"),
    ("$\\boxed{C}$", 4, "C"),
    ("The answer is $\\boxed{\\text{B}}$", 4, "B"),
    ("\\fbox{D}", 4, "D"),
    (LONG_REASONING, 4, "D"),
    # The last explicit answer wins: models revise themselves.
    ("The answer is A. Wait, actually the answer is C.", 4, "C"),
    ("Answer: B. Explanation: option A is wrong because it ignores friction.", 4, "B"),
    # --- markdown and TeX around the letter -----------------------------------
    ("**Answer:** C", 4, "C"),
    ("**Final Answer: B**", 4, "B"),
    ("The answer is **C**", 4, "C"),
    ("Answer: **C) Paris**", 4, "C"),
    ("The answer is $C$", 4, "C"),
    ("The answer is \\textbf{C}", 4, "C"),
    ("The answer is `B`.", 4, "B"),
    # Bold letters count only without an explicit phrase; then the last wins.
    ("**A)** Paris is wrong. **B)** London is right.", 4, "B"),
    ("The answer is C.\n\n**A**: a common mistake.", 4, "C"),
    # --- lone letters --------------------------------------------------------
    ("B.", 4, "B"),
    ("B)", 4, "B"),
    ("[B]", 4, "B"),
    ("'B'", 4, "B"),
    ('"B"', 4, "B"),
    ("  b  \n", 4, "B"),
    ("`B`", 4, "B"),
    ("Option B", 4, "B"),
    ("option b", 4, "B"),
    ("(\uff23)", 4, "C"),  # full-width letter
    # The words "I" and "a" are letters when they are the whole response.
    ("I", 10, "I"),
    ("a", 4, "A"),
    ("A", 4, "A"),
    ("i.", 10, "I"),
    # --- leading letters ------------------------------------------------------
    ("C) Paris", 4, "C"),
    ("(C) Paris", 4, "C"),
    ("C. Paris", 4, "C"),
    ("C: Paris", 4, "C"),
    ("C - Paris", 4, "C"),
    ("**C)** Paris", 4, "C"),
    ("C\n\nBecause Paris is the capital of France.", 4, "C"),
    ("A) Paris, the capital", 4, "A"),
    # --- "I" and "a" as words --------------------------------------------------
    ("I think the answer is C", 4, "C"),
    ("The answer is a bit unclear, but I'd go with C", 4, "C"),
    ("In a way, D", 4, "D"),  # upstream: "A"
    ("I think D", 10, "D"),  # upstream: "I"
    ("A good answer would be D", 4, "D"),
    ("The answer is I think C", 10, "C"),
    ("Answer: I think it's B", 10, "B"),
    ("I think a", 4, None),
    ("A dog is a mammal.", 4, None),
    ("I'm not sure.", 10, None),
    ("it is a good question", 4, None),
    ("answer a question, please", 4, None),
    # but a bare A that punctuation, a line end or "because" follows is a letter
    ("The answer is A.", 4, "A"),
    ("The answer is A because Paris is the capital.", 4, "A"),
    ("Answer: a", 4, "A"),
    ("Answer: I", 10, "I"),
    ("I think A", 4, "A"),
    # --- letters outside the range ---------------------------------------------
    ("The answer is E", 4, None),
    # E is ignored, so C is the only standalone letter left (rule 5)
    ("The answer is E, so C", 4, "C"),
    ("E", 4, None),
    ("J", 10, "J"),
    ("The answer is (E).", 5, "E"),
    ("I", 4, None),
    ("Answer: I", 4, None),
    # an out-of-range explicit answer says nothing; an in-range one still wins
    ("The answer is G. No, the answer is B.", 4, "B"),
    # --- hedges, lists and negations: no answer ----------------------------------
    ("(B) and (C)", 4, None),  # upstream: "B"
    ("The answer is A or B", 4, None),
    ("B or C", 4, None),
    ("The answer is (A, C)", 4, None),
    ("Both A and B are correct", 4, None),
    ("Neither A nor B is correct.", 4, None),
    ("A is incorrect, B is not correct either.", 4, None),
    ("The answer is not A.", 4, None),
    ("The answer is not C, but D", 4, "D"),
    ("Not A. C.", 4, "C"),
    # --- look-alikes that are not letters -------------------------------------
    ("Ph.D students know this", 4, None),
    ("i.e. the mitochondria", 10, None),
    ("e.g. the answer is b", 4, "B"),
    ("A/B testing shows C", 4, "C"),
    ("D-glucose", 4, None),
    ("Answer: E. coli", 4, None),
    # --- a single standalone capital (the last rule) ----------------------------
    ("Vitamin C deficiency causes scurvy.", 4, "C"),
    ("D, I think", 4, "D"),
    # --- nothing at all ----------------------------------------------------------
    ("", 4, None),
    ("   \n\t", 4, None),
    (None, 4, None),
    (42, 4, None),
    (3.5, 4, None),
    ({"answer": "maybe"}, 4, None),
    ("Paris is the capital of France.", 4, None),
    ("The answer choices are A, B, C and D.", 4, None),
    ("none of the above", 4, None),
]


IDS = [f"{str(response)[:40]!r}/{n}" for response, n, _ in PHRASINGS]


def test_the_table_is_large_and_has_no_duplicates() -> None:
    assert len(PHRASINGS) >= 60
    keys = [(repr(r), n) for r, n, _ in PHRASINGS]
    assert len(keys) == len(set(keys))


@pytest.mark.parametrize(("response", "n_choices", "expected"), PHRASINGS, ids=IDS)
def test_phrasing(response: Any, n_choices: int, expected: str | None) -> None:
    assert extract_choice(response, n_choices) == expected


@pytest.mark.parametrize(("response", "n_choices", "expected"), PHRASINGS, ids=IDS)
def test_score_follows_the_extracted_letter(
    response: Any, n_choices: int, expected: str | None
) -> None:
    ev = MultipleChoiceAccuracy()
    choices = [f"choice {i}" for i in range(n_choices)]
    for letter in "ABCDEFGHIJ"[:n_choices]:
        out = ev.score(
            {"correct_letter": letter, "choices": choices}, {"response": response}
        )
        assert out == {"mc_accuracy": 1.0 if letter == expected else 0.0}


# --- extract_choice: the range ------------------------------------------------


def test_default_range_is_a_to_j() -> None:
    assert extract_choice("The answer is J") == "J"
    assert extract_choice("The answer is K") is None
    assert MAX_CHOICES == 10


def test_choices_limit_the_range() -> None:
    three = ["red", "green", "blue"]
    assert extract_choice("D", choices=three) is None
    assert extract_choice("C", choices=three) == "C"
    # n_choices and choices together: the smaller bound holds.
    assert extract_choice("C", n_choices=2, choices=three) is None
    # An empty list is no list.
    assert extract_choice("G", choices=[]) == "G"


@pytest.mark.parametrize("n", [0, -1, 11])
def test_n_choices_out_of_bounds_is_an_error(n: int) -> None:
    with pytest.raises(ValueError, match="n_choices"):
        extract_choice("A", n)


@pytest.mark.parametrize("n", ["4", 4.0, True, None])
def test_n_choices_of_the_wrong_type_is_an_error(n: Any) -> None:
    with pytest.raises(TypeError, match="n_choices"):
        extract_choice("A", n)


def test_bytes_are_decoded() -> None:
    assert extract_choice(b"The answer is C", 4) == "C"


# --- extract_choice: choice texts -----------------------------------------------

CAPITALS = ["Paris", "London", "Berlin", "Madrid"]


@pytest.mark.parametrize(
    ("response", "expected"),
    [
        ("Berlin", "C"),
        ("berlin.", "C"),
        ('"MADRID"', "D"),
        ("The capital of Germany is Berlin.", "C"),
        ("It is  london,\n of course", "B"),
        # two choices quoted: no answer
        ("Paris or London", None),
        # whole words only
        ("Berliner Weisse", None),
        # a letter beats the text
        ("The answer is A, not Berlin", "A"),
        ("Rome", None),
    ],
)
def test_choice_text(response: str, expected: str | None) -> None:
    assert extract_choice(response, choices=CAPITALS) == expected


def test_choice_text_needs_choices() -> None:
    assert extract_choice("Berlin") is None


def test_choice_text_inside_a_longer_choice_does_not_count_alone() -> None:
    choices = ["Paris", "Paris, Texas", "Austin", "Dallas"]
    assert extract_choice("paris, texas", choices=choices) == "B"
    assert extract_choice("It's in Paris, Texas.", choices=choices) == "B"
    assert extract_choice("Paris, Texas, not Paris", choices=choices) is None
    assert extract_choice("Paris is in France", choices=choices) == "A"


def test_choice_text_whole_numbers() -> None:
    choices = ["1", "10", "100", "1000"]
    assert extract_choice("The result is 100.", choices=choices) == "C"
    assert extract_choice("It is 10 or 1000", choices=choices) is None


def test_choice_text_beats_a_letter_inside_a_choice() -> None:
    # Rule 4 comes before rule 5: the text of a choice is no standalone capital.
    choices = ["Vitamin C", "Vitamin D", "Iron", "Zinc"]
    assert extract_choice("vitamin c", choices=choices) == "A"
    assert extract_choice("Vitamin D deficiency", choices=choices) == "B"


def test_choice_text_limited_to_the_range() -> None:
    assert extract_choice("Madrid", n_choices=3, choices=CAPITALS) is None


def test_non_string_choices_and_responses() -> None:
    assert extract_choice(3, choices=[1, 2, 3, 4]) == "C"
    assert extract_choice(True, choices=["True", "False"]) == "A"
    assert extract_choice("x", choices=[None, "x"]) == "B"


# --- bounded time on huge responses ----------------------------------------------


@pytest.mark.parametrize(
    "response",
    [
        "The answer is maybe " * 50_000,
        "a I A " * 170_000,
        "*" * 1_000_000,
        "(" * 1_000_000 + "x",
        "A is " * 200_000,
        "answer" + " " * 1_000_000 + "x",
        "lorem ipsum dolor sit amet " * 40_000 + "The answer is C.",
        # a short choice inside a longer one, half a million times
        "1 " * 500_000,
    ],
    ids=["answers", "a-I-A", "stars", "parens", "A-is", "spaces", "prose", "1-1"],
)
@pytest.mark.timeout(300)  # linear: about a second here; a quadratic path takes hours
def test_one_megabyte_is_scored_in_bounded_time(response: str) -> None:
    assert len(response) >= 999_999
    extract_choice(response, choices=["1", "1 1", "x", "y"])


def test_one_megabyte_answer_at_the_end() -> None:
    response = LONG_REASONING * (1_000_000 // len(LONG_REASONING))
    assert extract_choice(response, 4) == "D"


# --- MultipleChoiceAccuracy -------------------------------------------------------


def score(original: dict[str, Any], processed: dict[str, Any]) -> dict[str, float]:
    return MultipleChoiceAccuracy().score(original, processed)


def test_seed_example_exactly() -> None:
    out = score({"correct_letter": "B"}, {"response": "The answer is B."})
    assert out == {"mc_accuracy": 1.0}
    assert type(out["mc_accuracy"]) is float


def test_name_and_protocol() -> None:
    ev = MultipleChoiceAccuracy()
    assert ev.name == "multiple_choice"
    assert isinstance(ev, Evaluator)


def test_wrong_letter_is_zero() -> None:
    out = score({"correct_letter": "B"}, {"response": "The answer is C."})
    assert out == {"mc_accuracy": 0.0}
    assert type(out["mc_accuracy"]) is float


@pytest.mark.parametrize(
    "original", [{}, {"correct_letter": None}, {"correct_letter": "  "}]
)
def test_no_correct_letter_cannot_judge(original: dict[str, Any]) -> None:
    assert score(original, {"response": "B"}) == {}


@pytest.mark.parametrize(
    "processed",
    [
        {},
        {"response": None},
        {"response": ""},
        {"response": "no idea"},
        {"response": 7},
    ],
)
def test_unparseable_response_is_wrong_not_missing(processed: dict[str, Any]) -> None:
    assert score({"correct_letter": "A"}, processed) == {"mc_accuracy": 0.0}


def test_dict_response_does_not_crash() -> None:
    out = score({"correct_letter": "A"}, {"response": {"text": "the answer is A"}})
    assert out == {"mc_accuracy": 1.0}


def test_correct_letter_is_normalised() -> None:
    assert score({"correct_letter": " b\n"}, {"response": "B"}) == {"mc_accuracy": 1.0}


@pytest.mark.parametrize("bad", ["K", "AB", "1", 2, "(B)"])
def test_malformed_correct_letter_is_an_error(bad: Any) -> None:
    with pytest.raises(ValueError, match="correct_letter"):
        score({"correct_letter": bad}, {"response": "B"})


def test_correct_letter_beyond_the_choices_is_an_error() -> None:
    with pytest.raises(ValueError, match="beyond the example's 4 choices"):
        score({"correct_letter": "E", "choices": CAPITALS}, {"response": "E"})


@pytest.mark.parametrize("bad", ["Paris London", {"A": "Paris"}, 4])
def test_choices_not_a_list_is_an_error(bad: Any) -> None:
    with pytest.raises(TypeError, match="choices must be a list"):
        score({"correct_letter": "A", "choices": bad}, {"response": "A"})


def test_choices_limit_the_letters_in_score() -> None:
    original = {"correct_letter": "B", "choices": ["x", "y"]}
    # "I" is out of range with two choices, so "I think" cannot be misread either.
    assert score(original, {"response": "B"}) == {"mc_accuracy": 1.0}
    assert score({"correct_letter": "B"}, {"response": "C"}) == {"mc_accuracy": 0.0}
    # Without choices the range is A-J.
    assert score({"correct_letter": "H"}, {"response": "(H)"}) == {"mc_accuracy": 1.0}


def test_tuple_and_empty_choices() -> None:
    assert score(
        {"correct_letter": "C", "choices": ("a", "b", "c")}, {"response": "c"}
    ) == {"mc_accuracy": 1.0}
    # An empty list is treated as absent: A-J.
    assert score({"correct_letter": "G", "choices": []}, {"response": "G"}) == {
        "mc_accuracy": 1.0
    }


def test_score_accepts_the_choice_text() -> None:
    original = {"correct_letter": "C", "choices": CAPITALS}
    assert score(original, {"response": "Berlin"}) == {"mc_accuracy": 1.0}
    assert score(original, {"response": "Madrid"}) == {"mc_accuracy": 0.0}


def test_mmlu_pro_ten_choices() -> None:
    original = {"correct_letter": "J", "choices": [str(i) for i in range(10)]}
    assert score(original, {"response": "The answer is (J)."}) == {"mc_accuracy": 1.0}
    assert score(original, {"response": "I think so."}) == {"mc_accuracy": 0.0}


def test_module_does_not_import_pytest() -> None:
    import pytest_context_bench.evaluators.multiple_choice as mod

    source = Path(mod.__file__).read_text(encoding="utf-8")
    assert "import pytest" not in source
