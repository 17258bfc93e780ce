"""LLMJudge with a rubric (G-Eval style), its strict score reader, the logprob
weighting and judge repeats, against FakeLLM on 127.0.0.1."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from pytest_context_bench.cache import LLMCache, cache_key, set_active_cache
from pytest_context_bench.calls import CallScope, call_scope
from pytest_context_bench.engine import score_processed
from pytest_context_bench.errors import ConfigError, ExampleDataError, LLMError
from pytest_context_bench.evaluators import field_problem, field_primary_score
from pytest_context_bench.evaluators.judges import JudgeError, LLMJudge, MemoryJudge
from pytest_context_bench.evaluators.rubric import (
    DEFAULT_STEPS,
    Rubric,
    RubricError,
    ScoreProblem,
    parse_score,
    rubric_of,
    weighted_rating,
)
from pytest_context_bench.metrics.scores import score_passes
from pytest_context_bench.testing import FakeLLM, Reply, Script

FAST = {"retry_base_delay": 0.001, "timeout": 5.0, "max_retries": 0}
EX = {"id": "refund-1", "question": "Can I get a refund?", "answer": "Within 30 days, yes."}
POLICY = "Polite; cites the 30-day refund policy; promises nothing beyond it."


@pytest.fixture
def llm():
    with FakeLLM() as server:
        yield server


# -- reading a score --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("reply", "score", "reason"),
    [
        ("Score: 4\nReason: polite and cites the policy.", 4, "polite and cites the policy."),
        ("**Score:** 5\n**Reason:** all there", 5, "all there"),
        ("Rating: 3/5\nReason: misses the policy", 3, "misses the policy"),
        ("score = 2 out of 5", 2, ""),
        ("4", 4, ""),
        ("**4**", 4, ""),
        ("Score: 4.\nReason: fine", 4, "fine"),
        ("The response is polite.\nScore: 4", 4, "The response is polite."),
        ("Score: 4\nScore: 4\nReason: said twice, the same", 4, "said twice, the same"),
        ("Score: 1\nReason: <script>alert(1)</script>\x1b[2J", 1, "<script>alert(1)</script>\x1b[2J"),
    ],
)
def test_parse_score_accepts(reply: str, score: int, reason: str) -> None:
    got = parse_score(reply, (1, 5))
    assert (got.rating, got.reason) == (score, reason)
    assert reply[got.offset] == str(score)


@pytest.mark.parametrize(
    ("reply", "scale", "problem"),
    [
        ("NaN", (1, 5), "has no 'Score: N' line"),
        ("Score: NaN", (1, 5), "has no number on its score line ('NaN' is not a score)"),
        ("Score: high", (1, 5), "has no number on its score line"),
        ("Score: 11/10", (0, 10), "gives 11, outside the scale 0 to 10"),
        ("Score: 11/10", (1, 5), "scores 11 out of 10; the scale is 1 to 5"),
        ("Score: 8/10", (1, 5), "scores 8 out of 10"),
        ("Score: 5 out of 5 but actually 1", (1, 5), "has 3 or more numbers on its score line (5, 5, 1): ambiguous"),
        ("Score: 3.5", (1, 5), "gives 3.5, not a whole number"),
        ("Score: 4\nScore: 2", (1, 5), "different scores on its score lines (2, 4)"),
        ("", (1, 5), "has no 'Score: N' line"),
        ("The answer is great.", (1, 5), "has no 'Score: N' line"),
        ("Score: 0", (1, 5), "gives 0, outside the scale 1 to 5"),
        ("Score: -1", (0, 10), "gives -1, outside the scale"),
        ("Score: 4, 5", (1, 5), "has 2 numbers"),
        ("6", (1, 5), "gives 6, outside the scale"),
        ("Score: 99999999999999999999999", (1, 5), "outside the scale"),
    ],
)
def test_parse_score_refuses(reply: str, scale: tuple[int, int], problem: str) -> None:
    with pytest.raises(ScoreProblem) as info:
        parse_score(reply, scale)
    assert problem in str(info.value)


def test_parse_score_of_a_huge_reply_is_linear() -> None:
    # 4 MB of one line and 200,000 lines: read once each (no backtracking blow-up).
    one_line = "Reason: " + "a, 1 " * 800_000 + "\nScore: 3"
    assert parse_score(one_line, (1, 5)).rating == 3
    many = "Score: 2\n" + "filler line\n" * 200_000
    assert parse_score(many, (1, 5)).rating == 2
    with pytest.raises(ScoreProblem, match="ambiguous"):
        parse_score("Score: " + "4 " * 1_000_000, (1, 5))


# -- rubrics ----------------------------------------------------------------------------


def test_rubric_of_a_string_and_an_object() -> None:
    r = rubric_of(POLICY)
    assert (r.criteria, r.scale, r.passing, r.steps) == (POLICY, (1, 5), 3.0, ())
    r = rubric_of({"criteria": POLICY, "steps": ["Check the days."], "scale": [0, 10], "pass_score": 7})
    assert (r.scale, r.passing, r.steps) == ((0, 10), 7.0, ("Check the days.",))
    assert rubric_of({"criteria": "c", "scale": [0, 1]}).passing == 1.0  # the middle, rounded up
    assert rubric_of("c", scale=(0, 10)).passing == 5.0
    assert Rubric("c", scale=(1, 5)).normalised(4) == 0.75


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("", "field 'rubric' is an empty string"),
        (None, "field 'rubric' must be a string (the criteria) or an object"),
        (3, "field 'rubric' must be a string (the criteria) or an object"),
        ({"criterion": "x"}, "unknown key(s) 'criterion'"),
        ({"steps": ["a"]}, "needs 'criteria'"),
        ({"criteria": " "}, "field 'rubric'.criteria: the criteria must be a non-empty string"),
        ({"criteria": "c", "scale": [5, 1]}, "field 'rubric'.scale: the scale must be two whole numbers"),
        ({"criteria": "c", "scale": [0, 11]}, "highest <= 10"),
        ({"criteria": "c", "scale": [1.0, 5]}, "the scale must be two whole numbers"),
        ({"criteria": "c", "scale": [1, 5], "pass_score": 6}, "pass_score: the pass score must be a number from 1 to 5"),
        ({"criteria": "c", "pass_score": float("nan")}, "the pass score must be a number"),
        ({"criteria": "c", "steps": "read it"}, "field 'rubric'.steps must be a list of non-empty strings"),
        ({"criteria": "c", "steps": ["", "x"]}, "steps must be a list of non-empty strings"),
    ],
)
def test_a_bad_rubric_field_is_named(value: object, message: str) -> None:
    with pytest.raises(RubricError) as info:
        rubric_of(value)
    assert message in str(info.value)
    # the loaders' one check of the fields wiring an evaluator says the same
    assert message in str(field_problem({"rubric": value}))


def test_the_rubric_field_makes_the_judge_score_primary() -> None:
    assert field_primary_score({"rubric": "x"}) == "judge_score"
    assert field_primary_score({"rubric": "x", "expected_tool_calls": []}) == "tool_call_match"


@pytest.mark.parametrize(
    "kwargs",
    [{"scale": (5, 1)}, {"pass_score": 9}, {"repeat": 0}, {"repeat": True}, {"rubric": ""},
     {"max_tokens": 0}, {"steps": [""]}],
)
def test_bad_judge_settings_are_config_errors(kwargs: dict) -> None:
    with pytest.raises(ConfigError):
        LLMJudge("http://127.0.0.1:9", **kwargs)


# -- the judge with a rubric ------------------------------------------------------------


def test_a_rubric_judge_sends_the_g_eval_prompt_and_its_verdict_decides(llm: FakeLLM) -> None:
    llm.push("Score: 2\nReason: it promises a refund after 60 days.")
    judge = LLMJudge(llm.base_url, "judge-m", rubric=POLICY, **FAST)
    scores, details = judge.score_details(EX, {"response": "Sure, any time within 60 days!"})
    assert scores == {"judge_score": 0.25, "judge_pass": 0.0}
    assert details == {
        "reason": "the judge scored 2 on 1-5 (pass >= 3): fail",
        "verdict": "fail",
        "rubric": POLICY,
        "rating": 2.0,
        "scale": [1, 5],
        "pass_score": 3.0,
        "judge_reason": "it promises a refund after 60 days.",
        "logprobs": "plain score: the endpoint sent no logprobs",
    }
    (req,) = llm.requests
    body = req.json
    assert body["temperature"] == 0 and body["logprobs"] is True and body["top_logprobs"] == 10
    prompt = req.messages[0]["content"]
    for part in (f"Evaluation criteria:\n{POLICY}", f"1. {DEFAULT_STEPS[0]}", "[Task]\nCan I get a refund?",
                 "[Reference answer]\nWithin 30 days, yes.", "[Response]\nSure, any time within 60 days!",
                 "Score: <one whole number from 1 to 5>"):
        assert part in prompt
    # the verdict, not the suite's threshold, decides the row (0.25 < 0.7 either way;
    # a passing 3 of 1-5 scores 0.5, below 0.7, and passes)
    assert score_passes({"judge_score": 0.5, "judge_pass": 1.0}, "judge_score", 0.7) is True
    assert score_passes({"judge_score": 0.75}, "judge_score", 0.7) is True  # no rubric: the threshold


def test_the_examples_rubric_wins_with_its_own_scale_and_steps(llm: FakeLLM) -> None:
    llm.push("Score: 7\nReason: good")
    judge = LLMJudge(llm.base_url, rubric="generic", logprobs=False, **FAST)
    example = {**EX, "rubric": {"criteria": "cites the policy", "steps": ["Find the days."],
                                "scale": [0, 10], "pass_score": 8}}
    scores, details = judge.score_details(example, {"response": "30 days"})
    assert scores == {"judge_score": 0.7, "judge_pass": 0.0}
    assert details["rubric"] == "cites the policy" and details["pass_score"] == 8
    body = llm.requests[0].json
    assert "logprobs" not in body and "1. Find the days." in body["messages"][0]["content"]
    assert "generic" not in body["messages"][0]["content"]


def test_without_a_rubric_the_judge_is_the_seeds_one(llm: FakeLLM) -> None:
    llm.push("4")
    scores, details = LLMJudge(llm.base_url, **FAST).score_details(EX, {"response": "30 days"})
    assert scores == {"judge_score": 0.75} and "judge_pass" not in scores
    assert "logprobs" not in llm.requests[0].json and llm.requests[0].json["max_tokens"] == 16


def test_a_rubric_needs_no_reference_and_a_blank_response_is_not_sent(llm: FakeLLM) -> None:
    judge = LLMJudge(llm.base_url, **FAST)
    assert judge.score_details({"rubric": "x"}, {"response": "  "}) == (
        {"judge_score": 0.0, "judge_pass": 0.0},
        {"reason": "the response is empty (the judge was not asked)", "rubric": "x"})
    assert judge.score({"rubric": "x"}, {}) == {}
    assert llm.requests == []
    llm.push("Score: 5\nReason: r")
    assert judge.score({"rubric": "x"}, {"response": "hello"}) == {"judge_score": 1.0, "judge_pass": 1.0}
    prompt = llm.requests[0].messages[0]["content"]
    assert "[Task]" not in prompt and "[Reference answer]" not in prompt


@pytest.mark.parametrize(
    "reply",
    ["NaN", "Score: NaN", "Score: 11/10", "Score: 5 out of 5 but actually 1", "Score: 6",
     "Score: 3.5", "Score: 2\nScore: 5", "I refuse to grade this.", "x" * 2_000_000],
)
def test_a_reply_outside_the_scale_is_the_rows_error_never_a_zero(llm: FakeLLM, reply: str) -> None:
    llm.push(reply)
    row, raised = score_processed(
        EX, {**EX, "response": "r"}, [LLMJudge(llm.base_url, rubric=POLICY, **FAST)], system="s")
    assert isinstance(raised, JudgeError)
    assert row.error is not None and row.error["where"] == "evaluator:llm_judge"
    assert "judge_score" not in row.scores and "judge_pass" not in row.scores
    assert row.error["message"].startswith("the judge's reply ")
    assert len(row.error["message"]) < 2_000


def test_a_bad_rubric_in_an_example_given_to_evaluate_is_its_error(llm: FakeLLM) -> None:
    with pytest.raises(ExampleDataError, match="unknown key"):
        LLMJudge(llm.base_url, **FAST).score({"rubric": {"crit": "x"}}, {"response": "r"})


def test_an_endpoint_refusing_logprobs_names_the_option(llm: FakeLLM) -> None:
    llm.push(Reply("Unrecognized request argument supplied: top_logprobs", status=400))
    with pytest.raises(LLMError) as info:
        LLMJudge(llm.base_url, rubric=POLICY, **FAST).score(EX, {"response": "r"})
    assert "--ctxbench-judge-no-logprobs" in str(info.value) and "HTTP 400" in str(info.value)


# -- G-Eval's weighting -----------------------------------------------------------------


def test_logprobs_weight_the_scale_values(llm: FakeLLM) -> None:
    llm.push(Reply("Score: 4\nReason: cites it", logprobs={"4": -0.2, "3": -1.8, "5": -3.0, "x": -0.5, "9": -1.0}))
    scores, details = LLMJudge(llm.base_url, rubric=POLICY, **FAST).score_details(EX, {"response": "r"})
    p = {4: math.exp(-0.2), 3: math.exp(-1.8), 5: math.exp(-3.0)}  # "x" and 9 are off the scale
    expected = sum(v * q for v, q in p.items()) / sum(p.values())
    assert details["rating"] == round(expected, 4)
    assert scores["judge_score"] == pytest.approx((expected - 1) / 4)
    assert details["probabilities"] == {str(v): round(q / sum(p.values()), 4) for v, q in sorted(p.items())}
    assert details["score_token"] == 4 and scores["judge_pass"] == 1.0


def test_a_weighted_score_below_the_pass_mark_fails(llm: FakeLLM) -> None:
    # The judge wrote 3 (a pass at 3), but was more likely to write 2: 2.4 fails.
    llm.push(Reply("Score: 3\nReason: hm", logprobs={"3": -1.0, "2": -0.6}))
    scores, details = LLMJudge(llm.base_url, rubric=POLICY, **FAST).score_details(EX, {"response": "r"})
    assert details["rating"] < 3 and scores["judge_pass"] == 0.0


@pytest.mark.parametrize(
    ("content", "why"),
    [
        ([{"token": "Score: 4"}], "the score is not one token of the reply"),
        ([{"token": "Score: 5"}], "do not spell the reply"),
        ([{"token": 4}], "malformed"),
        ("not a list", "no logprobs"),
        ([{"token": "Score:"}, {"token": " 4", "logprob": "NaN", "top_logprobs": [
            {"token": " 4", "logprob": float("nan")}, {"token": " 3", "logprob": 5.0},
            {"token": " 2", "logprob": True}, "junk"]}], "no value of the scale has a probability"),
    ],
)
def test_logprobs_that_do_not_fit_leave_the_plain_score(content: object, why: str) -> None:
    reply = "Score: 4"
    raw = {"choices": [{"logprobs": {"content": content}}]}
    reading = parse_score(reply, (1, 5))
    got = weighted_rating(raw, reply, reading, (1, 5))
    assert isinstance(got, str) and why in got


# -- repeats ------------------------------------------------------------------------------


def test_repeats_mean_majority_spread_and_one_cache_entry_each(llm: FakeLLM, tmp_path: Path) -> None:
    script = iter(["Score: 4\nReason: a", "Score: 2\nReason: b", "Score: 5\nReason: c"])
    llm.set_handler(lambda request: next(script))
    cache = LLMCache.in_dir(tmp_path, "once")
    previous = set_active_cache(cache)
    try:
        judge = LLMJudge(llm.base_url, rubric=POLICY, logprobs=False, repeat=3, **FAST)
        with call_scope(CallScope("s", "d", "refund-1", trial=1)):
            first = judge.score_details(EX, {"response": "r"})
        assert len(llm.requests) == 3
        assert cache.store.info()["entries"] == 3  # three answers, not one read thrice
        scores, details = first
        assert scores == {"judge_score": pytest.approx((11 / 3 - 1) / 4), "judge_pass": 1.0}
        assert details["repeats"] == {"n": 3, "ratings": [4.0, 2.0, 5.0], "min": 2.0, "max": 5.0,
                                      "stdev": 1.5275, "passed": "2 of 3"}
        assert details["judge_reasons"] == ["a", "b", "c"]
        # Replayed: the same three answers, nothing sent.
        replay = LLMCache.in_dir(tmp_path, "replay")
        set_active_cache(replay)
        with call_scope(CallScope("s", "d", "refund-1", trial=1)):
            again = judge.score_details(EX, {"response": "r"})
        assert again == first and len(llm.requests) == 3
    finally:
        set_active_cache(previous)
        cache.store.close()
    # the first repeat has the key the question had without repeats
    body, url = b"{}", "http://h/v1/chat/completions"
    assert cache_key("POST", url, body, 1, repeat=1) == cache_key("POST", url, body, 1)
    assert len({cache_key("POST", url, body, 1, repeat=r) for r in (1, 2, 3)}) == 3


def test_a_tie_fails_and_one_bad_answer_is_the_rows_error(llm: FakeLLM) -> None:
    llm.push("Score: 5\nReason: ok", "Score: 1\nReason: no")
    judge = LLMJudge(llm.base_url, rubric=POLICY, logprobs=False, repeat=2, **FAST)
    scores, details = judge.score_details(EX, {"response": "r"})
    assert scores["judge_pass"] == 0.0 and details["repeats"]["passed"] == "1 of 2 (a tie fails)"
    llm.push("Score: 5", "Score: 9")
    with pytest.raises(JudgeError, match="outside the scale"):
        judge.score(EX, {"response": "r"})


def test_repeated_calls_are_marked_in_their_call_records(llm: FakeLLM) -> None:
    llm.push("4", "5")
    judge = LLMJudge(llm.base_url, repeat=2, **FAST)
    scope = CallScope("s", "d", "e", trial=1)
    with call_scope(scope):
        scores, details = judge.score_details(EX, {"response": "r"})
    assert scores == {"judge_score": pytest.approx(0.875)}
    records, _ = scope.log.take()
    assert [r.get("repeat") for r in records] == [None, 2]
    assert details["repeats"]["ratings"] == [4.0, 5.0]


def test_memory_judge_repeats_take_the_majority(llm: FakeLLM) -> None:
    llm.push("YES", "NO, wrong", "YES")
    judge = MemoryJudge(llm.base_url, repeat=3, **FAST)
    scores, details = judge.score_details({"question": "q", "answer": "Paris"}, {"response": "Paris"})
    assert scores == {"memory_judge": 1.0, "memory_judge_raw": pytest.approx(2 / 3)}
    assert details["repeats"] == {"n": 3, "answers": ["YES", "NO", "YES"], "yes": "2 of 3"}
    llm.push("YES", "maybe")
    scores, details = MemoryJudge(llm.base_url, repeat=2, **FAST).score_details(
        {"question": "q", "answer": "Paris"}, {"response": "Paris"})
    assert scores["memory_judge"] == 0.0 and "reply 2 of 2 has neither YES nor NO" in details["judge_error"]


async def _ascore(judge: LLMJudge) -> tuple:
    return await judge.ascore_details(EX, {"response": "r"})


def test_the_async_path_gives_the_same_rows(llm: FakeLLM) -> None:
    import asyncio

    handler = Script([{"match": "Evaluation criteria", "reply": "Score: 4\nReason: r",
                       "logprobs": {"4": -0.1, "5": -2.5}}])
    llm.set_handler(handler)
    judge = LLMJudge(llm.base_url, rubric=POLICY, repeat=2, **FAST)
    sync = judge.score_details(EX, {"response": "r"})
    assert asyncio.run(_ascore(judge)) == sync
    assert json.dumps(sync)  # builtins only (the details cross xdist)


def test_evaluate_runs_rubrics_with_the_given_judge_and_refuses_without(llm: FakeLLM) -> None:
    from pytest_context_bench import evaluate

    class Bot:
        name = "bot"

        def process(self, example: dict) -> dict:
            return {**example, "response": "Refunds within 30 days."}

    examples = [
        {"id": "a", "question": "Refund?", "rubric": POLICY},
        {"id": "b", "question": "Hi", "assert": [{"type": "llm-rubric", "value": "Greets"}]},
    ]
    with pytest.raises(ConfigError, match="examples with a 'rubric' field .* need an LLM judge"):
        evaluate(Bot(), examples, progress=False)
    llm.set_handler(Script([
        {"match": "Evaluation criteria", "reply": "Score: 2\nReason: no greeting"},
        {"match": "<Rubric>", "reply": '{"pass": false, "score": 0, "reason": "no greeting"}'},
    ]))
    judge = LLMJudge(llm.base_url, "j", logprobs=False, **FAST)
    result = evaluate(Bot(), examples, evaluators=[judge], progress=False)
    a, b = result.rows
    assert a.scores == {"judge_score": 0.25, "judge_pass": 0.0} and a.metadata["score_field"] == "judge_score"
    assert a.metadata["llm_judge"]["judge_reason"] == "no greeting"
    assert b.scores["assert_pass"] == 0.0 and "no greeting [rubric: Greets]" in b.metadata["assertions"]["1. llm-rubric"]
    assert result.summary["bot"]["pass_rate"] == 0.0


def test_script_rules_send_logprobs_only_when_asked(llm: FakeLLM, tmp_path: Path) -> None:
    from pytest_context_bench.llm import LLMClient
    from pytest_context_bench.testing import ScriptError, fake_tokens

    path = tmp_path / "judge.jsonl"
    path.write_text('{"match": "grade", "reply": "Score: 4", "logprobs": {"4": -0.1, "3": -2.0}}\n')
    llm.set_handler(Script.load(path))
    client = LLMClient(llm.base_url, max_retries=0)
    plain = client.chat([{"role": "user", "content": "grade it"}], "m")
    assert "logprobs" not in plain.raw["choices"][0]  # not asked: none sent, as OpenAI
    asked = client.chat([{"role": "user", "content": "grade it"}], "m", logprobs=True, top_logprobs=5)
    content = asked.raw["choices"][0]["logprobs"]["content"]
    assert "".join(t["token"] for t in content) == "Score: 4" == "".join(fake_tokens("Score: 4"))
    (score,) = [t for t in content if t["token"] == " 4"]
    assert score["logprob"] == -0.1 and {t["token"] for t in score["top_logprobs"]} == {" 4", " 3"}
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"match": "x", "reply": "y", "logprobs": {"4": "high"}}\n')
    with pytest.raises(ScriptError, match=r"bad.jsonl:1: 'logprobs' must map tokens to log probabilities"):
        Script.load(bad)
