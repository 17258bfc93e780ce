"""SummarizationQuality: identical to rouge-score (rougeL, rougeLsum), and fast."""

from __future__ import annotations

import random
from typing import Any

import pytest

from pytest_context_bench.evaluators import summarization as summ
from pytest_context_bench.evaluators.summarization import (
    SummarizationQuality,
    rouge_l,
    rouge_lsum,
)
from pytest_context_bench.types import Evaluator

KEYS = [
    "rouge_l_precision",
    "rouge_l_recall",
    "rouge_l_f1",
    "rouge_lsum_precision",
    "rouge_lsum_recall",
    "rouge_lsum_f1",
]
ZEROS = dict.fromkeys(KEYS, 0.0)
TOL = 1e-9


def score(answer: Any, response: Any) -> dict[str, float]:
    return SummarizationQuality().score({"answer": answer}, {"response": response})


# --------------------------------------------------------------------------- generators

_UNICODE_WORDS = [
    "café", "naïve", "İstanbul", "straße", "ΣΑΣ", "\u212aelvin", "ﬁne", "２０２４",
    "x²", "日本語", "🙂ok", "Ω", "über-cool", "résumé", "ǅemal", "ΟΔΟΣ", "i̇",
]  # fmt: skip
_SEPARATORS = [
    " ", " ", " ", " ", "  ", "\n", "\n", "\r\n", "\n\n", ", ", ". ", ".\n", "\t",
    " - ", "'", "\u00a0", "\u2028", "\x0b", "!!", "",
]  # fmt: skip


def _vocabulary(rng: random.Random) -> list[str]:
    kind = rng.choice(["tiny", "small", "large", "unicode", "mixed"])
    if kind == "tiny":
        return ["a", "b", "c"][: rng.randint(1, 3)]
    if kind == "small":
        return ["the", "The", "CAT", "sat", "on", "mat", "3", "x1", "dog's", "a.b"]
    if kind == "large":
        letters = "abcdefghijklmnopqrstuvwxyz0123456789"
        return ["".join(rng.choices(letters, k=rng.randint(1, 7))) for _ in range(2000)]
    if kind == "unicode":
        return _UNICODE_WORDS
    return [f"w{i}" for i in range(40)] + _UNICODE_WORDS + ["A", "b", "C"]


def _text(rng: random.Random, vocab: list[str], max_len: int) -> str:
    n = rng.randint(0, max_len)
    # A Zipf-like pick so that some tokens repeat a lot and others rarely.
    weights = [1.0 / (i + 1) for i in range(len(vocab))]
    words = rng.choices(vocab, weights, k=n)
    parts: list[str] = []
    if rng.random() < 0.1:
        parts.append(rng.choice(["\n", " ", "..."]))
    for w in words:
        parts.append(w)
        parts.append(rng.choice(_SEPARATORS))
    return "".join(parts)


def _pairs(seed: int, count: int) -> list[tuple[str, str]]:
    rng = random.Random(seed)
    out: list[tuple[str, str]] = []
    for k in range(count):
        vocab = _vocabulary(rng)
        # Mostly short texts (many sentence pairs, many ties); one in ten up to 500
        # tokens.
        max_len = 500 if k % 10 == 0 else rng.choice([0, 3, 10, 40, 120])
        target = _text(rng, vocab, max_len)
        if rng.random() < 0.4:
            # A prediction derived from the target: shared subsequences, reordered
            # lines.
            lines = target.split("\n")
            rng.shuffle(lines)
            words = "\n".join(lines).split(" ")
            words = [w for w in words if rng.random() < 0.8]
            prediction = " ".join(words) + " " + _text(rng, vocab, 10)
        else:
            prediction = _text(rng, vocab, max_len)
        out.append((target, prediction))
    return out


def _assert_same(ours: tuple[float, ...], theirs: Any, context: object) -> None:
    assert len(ours) == 3
    theirs_t = (theirs.precision, theirs.recall, theirs.fmeasure)
    for a, b in zip(ours, theirs_t, strict=True):
        assert abs(a - b) <= TOL, context


# --------------------------------------------------------------------------- oracle
# agreement


@pytest.fixture(scope="module")
def oracle() -> Any:
    rouge_scorer = pytest.importorskip("rouge_score.rouge_scorer")
    return rouge_scorer.RougeScorer(["rougeL", "rougeLsum"])


def test_agrees_with_rouge_score_on_random_pairs(oracle: Any) -> None:
    ev = SummarizationQuality()
    for target, prediction in _pairs(seed=20240611, count=300):
        ref = oracle.score(target, prediction)
        out = ev.score({"answer": target}, {"response": prediction})
        ctx = (target, prediction)
        _assert_same(tuple(out[k] for k in KEYS[:3]), ref["rougeL"], ctx)
        _assert_same(tuple(out[k] for k in KEYS[3:]), ref["rougeLsum"], ctx)
        # In fact bit-identical: same integers, same float expressions.
        assert (out["rouge_l_f1"], out["rouge_lsum_f1"]) == (
            ref["rougeL"].fmeasure,
            ref["rougeLsum"].fmeasure,
        ), ctx


def test_argument_order_matches_rouge_score(oracle: Any) -> None:
    # rouge-score is score(target, prediction); so are rouge_l and rouge_lsum.
    for target, prediction in _pairs(seed=7, count=60):
        ref = oracle.score(target, prediction)
        _assert_same(rouge_l(target, prediction), ref["rougeL"], (target, prediction))
        _assert_same(
            rouge_lsum(target, prediction), ref["rougeLsum"], (target, prediction)
        )


def test_blocked_and_checkpointed_paths_agree(
    oracle: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Tiny blocks and chunks force the code paths that huge inputs take: the rougeL
    # vector split in blocks with carries, reference sentences split across blocks, and
    # the rougeLsum backtrack recomputing columns from checkpoints.
    for block, min_chunk in [(5, 1), (17, 3), (64, 7)]:
        monkeypatch.setattr(summ, "_BLOCK_BITS", block)
        monkeypatch.setattr(summ, "_LSUM_COLUMN_BUDGET", 0)
        monkeypatch.setattr(summ, "_LSUM_MIN_CHUNK", min_chunk)
        monkeypatch.setattr(summ, "_DIRECT_BITS", block // 2)
        for target, prediction in _pairs(seed=block, count=60):
            ref = oracle.score(target, prediction)
            _assert_same(
                rouge_l(target, prediction), ref["rougeL"], (block, target, prediction)
            )
            _assert_same(
                rouge_lsum(target, prediction),
                ref["rougeLsum"],
                (block, target, prediction),
            )


def test_multiple_references_match_score_multi(oracle: Any) -> None:
    rouge_scorer = pytest.importorskip("rouge_score.rouge_scorer")
    multi = rouge_scorer.RougeScorer(["rougeL", "rougeLsum"])
    rng = random.Random(3)
    pairs = _pairs(seed=11, count=90)
    for i in range(0, 90, 3):
        targets = [pairs[i][0], pairs[i + 1][0], pairs[i + 2][1]]
        prediction = pairs[i][1] if rng.random() < 0.5 else pairs[i + 2][1]
        ref = multi.score_multi(targets, prediction)
        out = score(targets, prediction)
        _assert_same(
            tuple(out[k] for k in KEYS[:3]), ref["rougeL"], (targets, prediction)
        )
        _assert_same(
            tuple(out[k] for k in KEYS[3:]), ref["rougeLsum"], (targets, prediction)
        )


def test_multiple_references_first_wins_ties() -> None:
    # Both references give F1 = 2/3 (P 0.5, R 1 against P 1, R 0.5): the first is kept,
    # as numpy.argmax does in rouge-score's score_multi.
    first = score(["a b", "a b c d e f x y"], "a b c d")
    assert (first["rouge_l_precision"], first["rouge_l_recall"]) == (0.5, 1.0)
    second = score(["a b c d e f x y", "a b"], "a b c d")
    assert (second["rouge_l_precision"], second["rouge_l_recall"]) == (1.0, 0.5)
    assert first["rouge_l_f1"] == second["rouge_l_f1"]


def _lcs_table(a: list[str], b: list[str]) -> int:
    row = [0] * (len(b) + 1)
    for x in a:
        prev_diag = 0
        for j, y in enumerate(b, 1):
            keep = row[j]
            row[j] = prev_diag + 1 if x == y else max(row[j], row[j - 1])
            prev_diag = keep
    return row[-1]


def test_bit_parallel_lcs_length_against_plain_dp() -> None:
    # Needs no oracle package: the LCS length itself against the textbook table.
    rng = random.Random(5)
    for _ in range(400):
        alphabet = "abcdefgh"[: rng.randint(1, 8)]
        a = rng.choices(alphabet, k=rng.randint(0, 70))
        b = rng.choices(alphabet, k=rng.randint(0, 70))
        assert summ._lcs_length(a, b) == _lcs_table(a, b), (a, b)


# --------------------------------------------------------------------------- hand cases


def test_seed_case_precision_is_against_the_response() -> None:
    # Reference "the cat on the mat" (5 tokens), response "the cat sat on the mat" (6):
    # the LCS has 5 tokens, so precision 5/6 and recall 1.
    out = score("the cat on the mat", "the cat sat on the mat")
    assert out["rouge_l_precision"] == pytest.approx(5 / 6, abs=TOL)
    assert out["rouge_l_recall"] == 1.0
    assert out["rouge_l_f1"] == pytest.approx(2 * (5 / 6) / (5 / 6 + 1), abs=TOL)
    # One sentence on each side: the summary level equals the sentence level.
    assert [out[k] for k in KEYS[3:]] == [out[k] for k in KEYS[:3]]
    swapped = score("the cat sat on the mat", "the cat on the mat")
    assert swapped["rouge_l_precision"] == 1.0
    assert swapped["rouge_l_recall"] == pytest.approx(5 / 6, abs=TOL)


def test_keys_types_name_and_protocol() -> None:
    ev = SummarizationQuality()
    assert ev.name == "summarization_quality"
    assert isinstance(ev, Evaluator)
    out = ev.score({"answer": "a b c"}, {"response": "a c"})
    assert list(out) == KEYS
    assert all(type(v) is float for v in out.values())


def test_tokenizer_is_rouge_scores_default() -> None:
    # Lower-cased, punctuation splits, no stemming.
    assert score("The CAT.", "the cat")["rouge_l_f1"] == 1.0
    assert score("dog's", "dog s")["rouge_l_f1"] == 1.0
    assert score("running", "run")["rouge_l_f1"] == 0.0
    # Non-ASCII letters separate tokens; the Kelvin sign lower-cases to an ASCII "k".
    assert summ._tokenize("café \u212aelvin ５ x²") == ["caf", "kelvin", "x"]


def test_summary_level_uses_sentences_and_union() -> None:
    # Sentence order does not matter at the summary level, but it does for the LCS.
    out = score("a\nb", "b\na")
    assert [out["rouge_l_precision"], out["rouge_l_recall"]] == [0.5, 0.5]
    assert [out["rouge_lsum_precision"], out["rouge_lsum_recall"]] == [1.0, 1.0]
    # Union of the LCSs of one reference sentence with each candidate sentence.
    out = score("x y z", "x\ny z")
    assert out["rouge_lsum_recall"] == 1.0
    assert out["rouge_lsum_precision"] == 1.0


@pytest.mark.parametrize(
    ("target", "prediction", "expected"),
    [
        # rouge-score's backtrack takes one particular LCS (match first, then up on
        # ties); another, equally long LCS would give 1.0 / 0.667 here.
        ("a\na b", "b a", (0.5, 1 / 3, 0.4)),
        ("a c", "c\nc a", (2 / 3, 1.0, 0.8)),
    ],
)
def test_summary_level_follows_rouge_scores_tie_breaking(
    target: str, prediction: str, expected: tuple[float, float, float]
) -> None:
    assert rouge_lsum(target, prediction) == pytest.approx(expected, abs=TOL)


# --------------------------------------------------------------------------- empty and
# bad input


@pytest.mark.parametrize(
    "original", [{}, {"answer": None}, {"answer": []}, {"answer": [None]}]
)
def test_no_reference_cannot_judge(original: dict[str, Any]) -> None:
    assert SummarizationQuality().score(original, {"response": "anything"}) == {}


@pytest.mark.parametrize(
    ("answer", "response"),
    [
        (
            "",
            "a summary",
        ),  # rouge-score gives 0 for an empty target (upstream gave 1.0)
        ("a summary", ""),
        ("", ""),
        ("!!! ...", "a summary"),  # no token
        ("a summary", "\n\n  \n"),
        ("a summary", None),
    ],
)
def test_empty_sides_score_zero_like_rouge_score(answer: Any, response: Any) -> None:
    assert score(answer, response) == ZEROS


def test_empty_sides_agree_with_oracle(oracle: Any) -> None:
    for target, prediction in [
        ("", "a"),
        ("a", ""),
        ("", ""),
        ("?", "a"),
        ("a\n\n", "\n"),
    ]:
        ref = oracle.score(target, prediction)
        out = score(target, prediction)
        _assert_same(
            tuple(out[k] for k in KEYS[:3]), ref["rougeL"], (target, prediction)
        )
        _assert_same(
            tuple(out[k] for k in KEYS[3:]), ref["rougeLsum"], (target, prediction)
        )


def test_missing_response_key_is_empty() -> None:
    assert SummarizationQuality().score({"answer": "a b"}, {}) == ZEROS


@pytest.mark.parametrize(
    ("response", "as_text"),
    [
        (42, "42"),
        (3.5, "3.5"),
        ({"k": "v"}, "{'k': 'v'}"),
        (["a", "b"], "['a', 'b']"),
        (True, "True"),
    ],
)
def test_non_string_response_is_scored_as_text(response: Any, as_text: str) -> None:
    assert score("k v 42 3 5 a b true", response) == score(
        "k v 42 3 5 a b true", as_text
    )


def test_non_string_answer_is_scored_as_text() -> None:
    assert score(2024, "in 2024") == score("2024", "in 2024")
    assert score(2024, "in 2024")["rouge_l_recall"] == 1.0


# --------------------------------------------------------------------------- speed


def _natural_text(rng: random.Random, n_words: int) -> str:
    vocab = [f"w{i}" for i in range(5000)]
    weights = [1.0 / (i + 1) for i in range(5000)]
    words = rng.choices(vocab, weights, k=n_words)
    return "".join(w + ("\n" if rng.random() < 0.05 else " ") for w in words)


# rouge-score would need hours (about 2,000 x 160,000 table cells); measured here
# about 0.15 s and 1 s. The timeout only catches a hang; the speed is measured in
# benchmarks/large_inputs.py and benchmarks/rouge.py.
@pytest.mark.timeout(300)
def test_one_megabyte_response_in_bounded_time() -> None:
    rng = random.Random(1)
    reference = _natural_text(rng, 2000)
    # About 1 MB: the reference repeated, so the expected scores are known exactly.
    response = "\n".join([reference] * (1_000_000 // len(reference) + 1))
    assert len(response) >= 1_000_000
    p, r, f = rouge_l(reference, response)
    out = score(reference, response)
    assert r == 1.0 and out["rouge_lsum_recall"] == 1.0
    n_ref = len(summ._tokenize(reference))
    assert p == pytest.approx(n_ref / len(summ._tokenize(response)), abs=TOL)


def test_same_as_rouge_score_on_long_texts(oracle: Any) -> None:
    # How much faster: benchmarks/rouge.py (several hundred times), not a timed test.
    rouge_scorer = pytest.importorskip("rouge_score.rouge_scorer")
    single = rouge_scorer.RougeScorer(["rougeL"])
    rng = random.Random(2)
    target, prediction = _natural_text(rng, 600), _natural_text(rng, 600)
    ref = single.score(target, prediction)["rougeL"]
    _assert_same(rouge_l(target, prediction), ref, "long texts")
