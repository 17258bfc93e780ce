"""Evaluator details: every evaluator that can fail an example says why, within
bounds, and the reports show it (terminal, Markdown, pytest's failure text)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from markdown_it import MarkdownIt

from pytest_context_bench.details import (
    DETAILS_CAP,
    TEXT_CAP,
    bounded,
    clip,
    explain_lines,
)
from pytest_context_bench.engine import score_processed
from pytest_context_bench.evaluators import (
    AnswerQuality,
    CodeExecution,
    IFEvalChecker,
    LLMJudge,
    MathEquivalence,
    MultipleChoiceAccuracy,
    NLILabelMatch,
)
from pytest_context_bench.report.markdown import render_markdown
from pytest_context_bench.testing import FakeLLM

FAST = {"retry_base_delay": 0.001, "timeout": 2.0}


# -- the caps -------------------------------------------------------------------------


def test_clip_keeps_head_and_tail_and_says_how_much_was_cut() -> None:
    text = "A" * 100 + "B" * 10_000 + "Z" * 100
    cut = clip(text, 200)
    assert cut.startswith("A" * 100) and cut.endswith("Z" * 100)
    assert "… [10,000 characters omitted] …" in cut
    assert clip(text, 50, keep="tail") == "[10,150 characters omitted] …" + "Z" * 50
    assert clip("short", 200) == "short"


def test_bounded_caps_strings_lists_depth_and_the_whole() -> None:
    huge = {
        "reason": "x" * 50_000,
        "missing": [str(i) for i in range(1000)],
        "deep": {"a": {"b": {"c": {"d": {"e": "f"}}}}},
        "n": 3,
        "ok": True,
    }
    out = bounded(huge)
    assert len(out["reason"]) < TEXT_CAP + 50
    assert len(out["missing"]) == 51 and out["missing"][-1] == "… 950 more"
    assert isinstance(out["deep"]["a"]["b"]["c"], str)  # four levels, then repr
    assert out["n"] == 3 and out["ok"] is True
    json.dumps(out)
    # Many long values: cut harder, then reduced to reason and message.
    many = {f"k{i}": "y" * 3000 for i in range(100)}
    many["reason"] = "why"
    small = bounded(many)
    assert len(json.dumps(small)) < DETAILS_CAP + 500
    assert small["reason"] == "why" and "omitted" in small


def test_the_engine_stores_details_bounded() -> None:
    row = score_processed(
        {"id": "1", "answer": "gold " * 5},
        {"response": " ".join(f"w{i}" for i in range(10_000))},
        [AnswerQuality()],
        system="s",
    )[0]
    details = row.metadata["answer_quality"]
    assert details["missing"] == ["gold"] * 5
    assert len(details["extra"]) == 31 and details["extra"][-1] == "… 9970 more"
    assert len(json.dumps(details)) < DETAILS_CAP


# -- per evaluator --------------------------------------------------------------------


def test_token_f1_lists_matched_missing_and_extra_normalised_tokens() -> None:
    ev = AnswerQuality()
    scores, details = ev.score_details(
        {"answer": "The Eiffel Tower, Paris"}, {"response": "a tower in Paris!"}
    )
    assert scores == ev.score(
        {"answer": "The Eiffel Tower, Paris"}, {"response": "a tower in Paris!"}
    )
    assert details["matched"] == ["tower", "paris"]
    assert details["missing"] == ["eiffel"]
    assert details["extra"] == ["in"]
    assert details["reason"].startswith(
        "2 of 3 gold tokens matched, 1 missing, 1 extra")
    assert ev.score_details({"answer": "Paris"}, {"response": "paris."}) == (
        {"f1": 1.0, "exact_match": 1.0, "recall": 1.0, "contains": 1.0}, {})
    _, empty = ev.score_details({"answer": "Paris"}, {"response": " "})
    assert empty == {"reason": "the response is empty"}
    # Several golds: the best one is named.
    _, several = ev.score_details(
        {"answer": ["Rome", "Paris city"]}, {"response": "Paris"})
    assert several["gold"] == "2 of 2: Paris city" and several["missing"] == ["city"]


def test_multiple_choice_names_the_choices_the_letter_given_and_the_right_one() -> None:
    ev = MultipleChoiceAccuracy()
    ex = {"correct_letter": "C", "choices": ["red", "green", "blue"]}
    scores, details = ev.score_details(ex, {"response": "The answer is B."})
    assert scores == {"mc_accuracy": 0.0}
    assert details == {
        "reason": "chose B, the answer is C",
        "given": "B",
        "expected": "C",
        "choices": {"A": "red", "B": "green", "C": "blue"},
    }
    _, none = ev.score_details(ex, {"response": "I cannot tell."})
    assert none["given"] == "none recognised"
    assert ev.score_details(ex, {"response": "C"}) == ({"mc_accuracy": 1.0}, {})


def test_math_shows_the_extracted_answer_and_the_gold() -> None:
    ev = MathEquivalence()
    scores, details = ev.score_details(
        {"answer": "reasoning... #### 72"}, {"response": "So it is \\boxed{70}."}
    )
    assert scores == {"math_equiv": 0.0}
    assert details == {"reason": "70 is not equivalent to 72", "extracted": "70",
                       "gold": "72"}
    assert ev.score_details({"answer": "1/2"}, {"response": "0.5"}) == (
        {"math_equiv": 1.0}, {})


def test_nli_shows_the_label_given_and_the_gold() -> None:
    ev = NLILabelMatch()
    _, details = ev.score_details(
        {"answer": "entailment"}, {"response": "No, this contradicts the premise."}
    )
    assert (details["given"], details["expected"]) == ("contradiction", "entailment")
    _, none = ev.score_details({"answer": "entailment"}, {"response": "hmm"})
    assert none["given"] == "none recognised"


def test_ifeval_names_the_instructions_that_failed_and_why() -> None:
    ev = IFEvalChecker()
    ex = {
        "instruction_id_list": [
            "punctuation:no_comma", "length_constraints:number_words",
            "keywords:existence",
        ],
        "kwargs": [{}, {"relation": "at least", "num_words": 30}, {"keywords": ["hi"]}],
    }
    scores, details = ev.score_details(ex, {"response": "hi, there"})
    assert scores == ev.score(ex, {"response": "hi, there"})
    assert details["failed"] == [
        "punctuation:no_comma", "length_constraints:number_words"]
    assert "failed_loose" not in details  # the same two
    assert details["why"] == [
        "punctuation:no_comma: the response has 1 commas",
        "length_constraints:number_words: asked relation='at least', num_words=30;"
        " the response has 2 words",
    ]
    assert details["reason"] == "2 of 3 instructions not followed"
    # The comma is on a first line the loose variants drop.
    _, loose = ev.score_details(
        {"instruction_id_list": ["punctuation:no_comma"]}, {"response": "Sure, ok\nno"}
    )
    assert loose["failed_loose"] == [] and "followed loosely" in loose["reason"]


def test_llm_judge_gives_its_verdict_and_rationale() -> None:
    with FakeLLM() as llm:
        llm.push("2 - the response names the wrong city", "5")
        judge = LLMJudge(llm.base_url, **FAST)
        ex = {"question": "Capital of France?", "answer": "Paris"}
        scores, details = judge.score_details(ex, {"response": "Lyon"})
        assert scores == {"judge_score": 0.25}
        assert details == {
            "reason": "the judge rated the response 2 of 5",
            "verdict": "rating 2 of 5",
            "rationale": "2 - the response names the wrong city",
        }
        assert judge.score_details(ex, {"response": "Paris"}) == (
            {"judge_score": 1.0}, {})
        assert judge.score_details(ex, {"response": " "})[1]["reason"].startswith(
            "the response is empty")


@pytest.fixture(scope="module")
def code_ev() -> Any:
    ev = CodeExecution(timeout=10.0)
    yield ev
    ev.close()


HUMANEVAL = {
    "context": "def add(a, b):\n",
    "test": "def check(c):\n    assert c(1, 2) == 3\n    assert c(2, 2) == 4, 'two'\n",
    "entry_point": "add",
}


def test_code_names_the_failing_assert_line_from_the_tests(code_ev: Any) -> None:
    scores, details = code_ev.score_details(HUMANEVAL, {"response": "    return 3\n"})
    assert scores == {"pass_at_1": 0.0}
    assert details["reason"] == "assertion"
    assert details["assert_line"] == "test.py:3: assert c(2, 2) == 4, 'two'"
    assert details["exception"] == "AssertionError" and details["message"] == "two"
    # MBPP style: the assert itself.
    _, mbpp = code_ev.score_details(
        {"test_list": ["assert sq(2) == 4", "assert sq(3) == 9"]},
        {"response": "def sq(x):\n    return 4\n"},
    )
    assert mbpp["assert_line"] == "test.py:2: assert sq(3) == 9"


def test_code_a_program_cannot_choose_the_assert_line_or_speak_as_us(
    code_ev: Any,
) -> None:
    # The program raises with a message of its choosing, from code it compiled as
    # "test.py" line 3 (the tests' other assert): the assert line still comes from
    # the judge's own traceback, and the message is marked as the program's.
    forged = (
        "    exec(compile('\\n\\nraise ValueError(\\'all tests passed\\')',"
        " 'test.py', 'exec'))\n"
    )
    _, details = code_ev.score_details(HUMANEVAL, {"response": forged})
    assert details["reason"] == "exception"
    assert details["where"].startswith("solution.py:")  # the program's own account
    assert details["assert_line"] == "test.py:2: assert c(1, 2) == 3"
    assert details["message"] == "from the program: all tests passed"


def test_code_keeps_the_tail_of_long_output(code_ev: Any) -> None:
    noisy = (
        "    for i in range(20000):\n"
        "        print('line', i)\n"
        "    print('THE END')\n"
        "    return 0\n"
    )
    _, details = code_ev.score_details(HUMANEVAL, {"response": noisy})
    assert details["output_bytes"] > 64 * 1024  # past the sandbox's output cap
    assert details["output"].startswith("line 0\n")
    assert details["output_tail"].endswith("line 19999\nTHE END\n")
    assert len(details["output_tail"]) <= 1000


# -- where the details are shown -------------------------------------------------------

HOSTILE = "Lyon \x1b[2J\x1b[32mPASSED\x1b[0m | *x* <b>y</b>"


def test_explain_lines_put_the_primary_evaluator_first() -> None:
    meta = {
        "score_field": "math_equiv",
        "answer_quality": {"reason": "tokens", "missing": ["a"]},
        "math_equivalence": {"reason": "70 is not 72", "message": "m",
                             "extracted": "70"},
        "trials": {"n": 2},  # not details: no reason
    }
    assert explain_lines(meta, "math_equiv") == [
        (0, "math_equivalence: 70 is not 72"),
        (1, "message: m"),
        (1, "extracted: 70"),
        (0, "answer_quality: tokens"),
        (1, "missing: a"),
    ]
    assert explain_lines(meta, "math_equiv", first_only=True, max_keys=1) == [
        (0, "math_equivalence: 70 is not 72"), (1, "message: m"),
        (1, "… 1 more (in the JSON report)"),
    ]


def test_markdown_worst_examples_show_the_details_escaped() -> None:
    row = {
        "suite": "s", "system": "s", "example_id": "e1", "dataset": "d",
        "status": "below", "error": None, "scores": {"f1": 0.0},
        "response": HOSTILE,
        "metadata": {"score_field": "f1", "answer_quality": {
            "reason": "the response shares no token with the gold answer",
            "matched": [], "missing": ["paris"], "extra": ["lyon", "<b>y</b>"],
        }},
    }
    doc = {"suites": [{"label": "s", "threshold": 0.7}], "rows": [row]}
    text = render_markdown(doc)
    line = next(x for x in text.splitlines() if x.startswith("| s |"))
    assert ("answer\\_quality: the response shares no token with the gold answer"
            " · missing: paris · extra: lyon, &lt;b&gt;y&lt;/b&gt;") in line
    html = MarkdownIt("commonmark").enable("table").render(text)
    assert "<b>" not in html and "\x1b" not in html
    assert html.count("<td>") == 6  # one row, its six cells


def test_strict_failure_text_and_terminal_show_the_reason(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    project.makepyfile(lyon='''
class Lyon:
    name = "lyon"
    def process(self, example):
        return {**example, "response": "Lyon \\x1b[2J city PASSED " + "w " * 200}
lyon = Lyon()
''')
    monkeypatch.setenv("COLUMNS", "80")
    result = project.runpytest(
        "--ctxbench-dataset=qa.jsonl", "--ctxbench-system=lyon:lyon",
        "--ctxbench-strict", "--ctxbench-limit=2", "-n", "2",
    )
    result.assert_outcomes(failed=2)
    out = result.stdout.str()
    # pytest's failure text: the score, then the evaluator's reason and details.
    result.stdout.fnmatch_lines([
        "*below threshold (--ctxbench-strict):",
        "*lyon: f1 = 0.0* < threshold 0.7",
        "*  answer_quality: 1 of 2 gold tokens matched, 1 missing, 203 extra (F1*",
        "*    matched: city",
        "*    missing: 1",
        "*    extra: lyon, \\x1b2j, passed, w, w, w, *",
    ])
    # The terminal's explanation under the example's line, fitted to 80 columns.
    result.stdout.fnmatch_lines([
        "examples below threshold (2):",
        "  BELOW q-1: f1 = * < 0.7; response 'Lyon \\x1b*2J city PASSED*",
        "      answer_quality: 1 of 2 gold tokens matched*",
        "        matched: city",
        "        missing: 1",
    ])
    assert "\x1b[2J" not in out
    section = out[out.index("examples below threshold"):]
    assert max(len(x) for x in section.splitlines()[:12]) <= 80


def test_answer_correctness_lists_the_unsupported_and_missed_claims() -> None:
    from pytest_context_bench.evaluators.judges import AnswerCorrectness

    classified = {
        "TP": [{"statement": "Paris is in France.", "reason": "stated"}],
        "FP": [{"statement": "Paris has 9 million people.", "reason": "not stated"}],
        "FN": [{"statement": "Paris is the capital.", "reason": "not covered"}],
    }
    with FakeLLM() as llm:
        llm.push(
            json.dumps({"statements": ["Paris is in France.",
                                       "Paris has 9 million people."]}),
            json.dumps({"statements": ["Paris is in France.",
                                       "Paris is the capital."]}),
            json.dumps(classified),
        )
        ac = AnswerCorrectness(llm.base_url, weights=(1.0, 0.0), **FAST)
        scores, details = ac.score_details(
            {"question": "Paris?", "answer": "Paris, capital of France."},
            {"response": "Paris is in France; 9 million live there."},
        )
    assert scores == {"answer_correctness": 0.5, "answer_factuality": 0.5}
    assert details == {
        "reason": "answer correctness 0.5 (factuality 0.5)",
        "verdict": "TP 1, FP 1, FN 1",
        "unsupported": ["Paris has 9 million people. (not stated)"],
        "missed": ["Paris is the capital. (not covered)"],
    }


def test_summarization_gives_the_common_subsequence_and_the_lengths() -> None:
    from pytest_context_bench.evaluators import SummarizationQuality

    ev = SummarizationQuality()
    ex = {"answer": ["x y", "the cat on the mat"]}
    scores, details = ev.score_details(ex, {"response": "the cat sat on the mat"})
    assert scores == ev.score(ex, {"response": "the cat sat on the mat"})
    assert details == {
        "reason": "the longest common subsequence has 5 tokens, of the reference's 5"
        " and the response's 6 (ROUGE-L F1 0.909)",
        "common_tokens": 5, "reference_tokens": 5, "response_tokens": 6,
    }
    assert ev.score_details(ex, {"response": "The cat on the mat."})[1] == {}
