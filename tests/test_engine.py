"""engine: one example → one row; evaluate() on top."""

from __future__ import annotations

import threading
import time

import pytest

from pytest_context_bench import ConfigError, SystemLoadError, evaluate, run_example
from pytest_context_bench.evaluators import AnswerQuality
from pytest_context_bench.metrics import MeanScore
from pytest_context_bench.tokens import count_fields, count_tokens

EXAMPLES = [
    {"id": "a", "context": "The capital of France is Paris.", "question": "Capital of France?", "answer": "Paris"},
    {"id": "b", "context": "The capital of Japan is Tokyo.", "question": "Capital of Japan?", "answer": "Tokyo"},
    {"id": "c", "context": "The capital of Peru is Lima.", "question": "Capital of Peru?", "answer": "Lima"},
]


class Echo:
    name = "echo"

    def process(self, example):
        return {**example, "response": example["answer"]}


class Squash:
    """A compressor: drops the context, answers wrong on 'c'."""

    name = "squash"

    def process(self, example):
        return {**example, "context": "", "response": "?" if example["id"] == "c" else example["answer"]}


def test_token_accounting_counts_prompt_fields_only() -> None:
    ex = EXAMPLES[0]
    row, exc = run_example(Squash(), ex, [AnswerQuality()])
    assert exc is None
    # input: context + question of the original; the answer and id are not prompt.
    assert row.input_tokens == count_tokens(ex["context"]) + count_tokens(ex["question"])
    # output: the same fields of the processed example (context emptied).
    assert row.output_tokens == count_tokens(ex["question"])
    assert row.scores["f1"] == 1.0
    assert row.metadata["score_field"] == "f1"


def test_api_usage_is_the_output_token_count() -> None:
    class Proxy:
        name = "proxy"

        def process(self, example):
            return {**example, "response": "Paris", "api_usage": {"prompt_tokens": 123, "completion_tokens": 4}}

    row, _ = run_example(Proxy(), EXAMPLES[0], [AnswerQuality()])
    assert row.output_tokens == 123
    assert row.metadata["completion_tokens"] == 4
    assert row.metadata["prompt_tokens"] == 123


def test_turns_count_their_contents() -> None:
    ex = {"turns": [{"role": "user", "content": "hello there"}, {"role": "assistant", "content": "hi"}]}
    assert count_fields(ex) == count_tokens("hello there") + count_tokens("hi")


def test_system_error_is_recorded_not_raised() -> None:
    class Boom:
        name = "boom"

        def process(self, example):
            raise KeyError("missing")

    row, exc = run_example(Boom(), EXAMPLES[0], [AnswerQuality()])
    assert isinstance(exc, KeyError)
    assert row.error == {"type": "KeyError", "message": "'missing'", "where": "system"}
    assert row.scores == {} and row.output_tokens == 0


def test_non_dict_result_and_bad_evaluators_are_errors() -> None:
    class Str:
        name = "str"

        def process(self, example):
            return "Paris"

    row, exc = run_example(Str(), EXAMPLES[0], [AnswerQuality()])
    assert isinstance(exc, TypeError) and "must return a dict" in row.error["message"]

    class Bad:
        name = "bad"

        def score(self, original, processed):
            return {"x": "high"}

    row, exc = run_example(Echo(), EXAMPLES[0], [Bad()])
    assert row.error["where"] == "evaluator:bad" and "must be numbers" in row.error["message"]

    row, exc = run_example(Echo(), EXAMPLES[0], [AnswerQuality(), AnswerQuality()])
    assert "both produce the score 'f1'" in row.error["message"]


def test_system_gets_a_copy() -> None:
    class Mutator:
        name = "mut"

        def process(self, example):
            example["answer"] = "tampered"
            return {**example, "response": "tampered"}

    ex = dict(EXAMPLES[0])
    row, _ = run_example(Mutator(), ex, [AnswerQuality()])
    assert ex["answer"] == "Paris"
    assert row.scores["f1"] == 0.0


def test_multi_turn_dispatch() -> None:
    class Chat:
        name = "chat"

        def process(self, example):  # pragma: no cover - must not be used
            raise AssertionError

        def process_conversation(self, turns):
            return [{"role": "assistant", "content": f"reply to {t['content']}"} for t in turns]

    ex = {"id": "m", "multi_turn": True, "turns": [{"role": "user", "content": "one"}, {"role": "user", "content": "two"}], "answer": "reply to two"}
    row, exc = run_example(Chat(), ex, [AnswerQuality()])
    assert exc is None and row.scores["exact_match"] == 1.0


def test_evaluate_summary_rows_and_config() -> None:
    res = evaluate([Echo(), Squash()], EXAMPLES, progress=False)
    assert [r.system for r in res.rows] == ["echo"] * 3 + ["squash"] * 3
    assert res.summary["echo"]["pass_rate"] == 1.0
    assert res.summary["squash"]["pass_rate"] == pytest.approx(2 / 3)
    assert res.summary["squash"]["compression_ratio"] > 0.5
    assert res.summary["echo"]["compression_ratio"] == 0.0
    assert {"pareto_rank", "latency_p95", "error_rate", "cost_of_pass"} <= set(res.summary["echo"])
    assert res.config["num_examples"] == 3 and res.config["evaluators"] == ["answer_quality"]
    only_c = res.filter(example_id="c")
    assert only_c.summary["squash"]["pass_rate"] == 0.0  # recomputed, not the whole-run value


def test_evaluate_threads_keep_order_and_equal_sequential() -> None:
    class Slow:
        name = "slow"

        def process(self, example):
            time.sleep(0.01 if example["id"] == "a" else 0)
            return {**example, "response": example["answer"], "thread": threading.get_ident()}

    seq = evaluate(Slow(), EXAMPLES, progress=False)
    par = evaluate(Slow(), EXAMPLES, progress=False, max_workers=3)
    assert [r.example_id for r in par.rows] == ["a", "b", "c"]
    strip = lambda res: [(r.example_id, r.scores, r.input_tokens, r.output_tokens) for r in res.rows]  # noqa: E731
    assert strip(seq) == strip(par)


def test_evaluate_validates_arguments() -> None:
    with pytest.raises(SystemLoadError, match="two systems are named 'echo'"):
        evaluate([Echo(), Echo()], EXAMPLES, progress=False)
    with pytest.raises(SystemLoadError, match="no process"):
        evaluate([object()], EXAMPLES, progress=False)
    with pytest.raises(ConfigError, match="max_workers"):
        evaluate(Echo(), EXAMPLES, progress=False, max_workers=0)
    with pytest.raises(ConfigError, match="examples must be dicts"):
        evaluate(Echo(), ["nope"], progress=False)


def test_custom_metrics_and_max_examples() -> None:
    res = evaluate(Echo(), EXAMPLES, metrics=[MeanScore(score_field="exact_match")], max_examples=2, progress=False)
    assert res.summary == {"echo": {"mean_score": 1.0}}
    assert len(res.rows) == 2


def test_progress_goes_to_stderr(capsys: pytest.CaptureFixture[str]) -> None:
    evaluate(Echo(), EXAMPLES, progress=True)
    captured = capsys.readouterr()
    assert "echo: 3/3" in captured.err and captured.out == ""


def test_auto_wiring_scores_each_family_with_its_own_primary_score() -> None:
    examples = [
        {"id": "q", "question": "Capital of France?", "answer": "Paris"},
        {"id": "m", "task": "multiple_choice", "question": "Pick", "context": "A) x\nB) y",
         "choices": ["x", "y"], "correct_letter": "B", "answer": "y"},
        {"id": "n", "task": "nli", "context": "p", "question": "h", "answer": "entailment"},
    ]

    class Sys:
        name = "sys"

        def process(self, example):
            response = {"q": "Paris", "m": "The answer is (B).", "n": "It is a contradiction."}[example["id"]]
            return {**example, "response": response}

    res = evaluate(Sys(), examples, progress=False)
    rows = {r.example_id: r for r in res.rows}
    assert res.config["evaluators"] == ["answer_quality", "multiple_choice", "nli_label_match"]
    # Each evaluator scores only the examples carrying its fields.
    assert "mc_accuracy" not in rows["q"].scores and "nli_accuracy" not in rows["q"].scores
    assert rows["m"].scores["mc_accuracy"] == 1.0 and rows["m"].metadata["score_field"] == "mc_accuracy"
    assert rows["n"].scores["nli_accuracy"] == 0.0 and rows["n"].metadata["score_field"] == "nli_accuracy"
    # pass rate over each row's primary score: q (f1 1.0) and m pass, n fails.
    assert res.summary["sys"]["pass_rate"] == pytest.approx(2 / 3)


def test_every_family_is_wired_to_its_evaluator() -> None:
    from pytest_context_bench.datasets import PRIMARY_SCORE
    from pytest_context_bench.evaluators import FAMILY_EVALUATORS, evaluators_for

    produced = {
        "summarization": "rouge_l_f1",
        "multiple_choice": "mc_accuracy",
        "math": "math_equiv",
        "code": "pass_at_1",
        "nli": "nli_accuracy",
        "ifeval": "ifeval_strict",
    }
    for family, key in produced.items():
        assert PRIMARY_SCORE[family] == key
        names = [e.name for e in evaluators_for({family})]
        assert names[0] == "answer_quality" and len(names) == 2, (family, names)
        assert FAMILY_EVALUATORS[family]
    # One instance per process and options: the code sandbox is reused.
    a = evaluators_for({"code"}, {"code_execution": {"timeout": 3.0}})[1]
    b = evaluators_for({"code", "qa"}, {"code_execution": {"timeout": 3.0}})[1]
    assert a is b and a.timeout == 3.0


def test_mixed_families_score_with_their_own_evaluators() -> None:
    examples = [
        {"id": "s", "task": "summarization", "context": "long text", "question": "Summarize.", "answer": "the cat sat on the mat"},
        {"id": "m", "task": "math", "question": "2+2?", "answer": "4"},
        {"id": "c", "task": "code", "context": "def add(a, b):\n", "test": "def check(c):\n    assert c(1, 2) == 3\n", "entry_point": "add", "answer": "    return a + b\n"},
    ]

    class Sys:
        name = "sys"

        def process(self, example):
            response = {"s": "the cat on the mat", "m": "The answer is $\\boxed{4}$.", "c": "    return a + b\n"}[example["id"]]
            return {**example, "response": response}

    res = evaluate(Sys(), examples, progress=False)
    rows = {r.example_id: r for r in res.rows}
    assert rows["s"].scores["rouge_l_precision"] == 1.0 and rows["s"].scores["rouge_l_recall"] == pytest.approx(5 / 6)
    assert rows["m"].scores["math_equiv"] == 1.0 and "rouge_l_f1" not in rows["m"].scores
    assert rows["c"].scores["pass_at_1"] == 1.0
    assert rows["c"].metadata["code_execution"]["reason"] == "passed"
    assert {r.metadata["score_field"] for r in res.rows} == {"rouge_l_f1", "math_equiv", "pass_at_1"}
