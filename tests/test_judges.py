"""LLMJudge, MemoryJudge and AnswerCorrectness against FakeLLM."""

from __future__ import annotations

import json
import socket

import pytest

from pytest_context_bench.engine import score_processed
from pytest_context_bench.errors import ConfigError
from pytest_context_bench.evaluators.judges import (
    AnswerCorrectness,
    JudgeError,
    LLMJudge,
    MemoryJudge,
    fbeta,
    parse_rating,
    parse_yes_no,
)
from pytest_context_bench.llm import LLMError
from pytest_context_bench.testing import FakeLLM, Reply

FAST = {"retry_base_delay": 0.001, "timeout": 2.0}
EX = {"question": "What is 2+2?", "answer": "4"}


@pytest.fixture
def llm():
    with FakeLLM() as server:
        yield server


# -- parse tables -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("reply", "rating"),
    [
        ("4", 4),
        (" 5\n", 5),
        ("**4**", 4),
        ("4.", 4),
        ("Rating: 4", 4),
        ("rating: **3**", 3),
        ("Score = 2", 2),
        ("I'd rate it 4/5.", 4),
        ("4 / 5", 4),
        ("3 out of 5", 3),
        ("The rating is 1", 1),
        ("4 - minor issues", 4),
        ("Rating: 4/5", 4),
        ("I give it **5**, excellent", 5),
        ("Rating: 4.", 4),
    ],
)
def test_parse_rating_accepts(reply: str, rating: int) -> None:
    assert parse_rating(reply) == rating


@pytest.mark.parametrize(
    "reply",
    [
        "Rating: 10",
        "10",
        "0",
        "3.5",
        "6",
        "",
        "good answer",
        "Rating: 3 or 4/5",
        "15/50",
        "score: 4.5",
    ],
)
def test_parse_rating_rejects(reply: str) -> None:
    with pytest.raises(JudgeError):
        parse_rating(reply)


@pytest.mark.parametrize(
    ("reply", "verdict"),
    [
        ("YES. Same city.", True),
        ("no, it says London", False),
        ("Yes", True),
        ("The answer: NO", False),
        ("NOTYES", None),
        ("maybe", None),
        ("", None),
        ("Yesterday... NO", False),
    ],
)
def test_parse_yes_no(reply: str, verdict: bool | None) -> None:
    assert parse_yes_no(reply) is verdict


# -- LLMJudge ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("reply", "score"), [("1", 0.0), ("2", 0.25), ("3", 0.5), ("4", 0.75), ("5", 1.0)]
)
def test_llm_judge_scores(llm: FakeLLM, reply: str, score: float) -> None:
    llm.push(reply)
    judge = LLMJudge(llm.base_url, "judge-m", **FAST)
    assert judge.score(EX, {"response": "The answer is 4."}) == {"judge_score": score}
    req = llm.requests[0]
    assert req.json["temperature"] == 0 and req.json["model"] == "judge-m"
    prompt = req.messages[0]["content"]
    assert "[Question]\nWhat is 2+2?" in prompt and "The answer is 4." in prompt


def test_llm_judge_unparsable_is_error_not_zero(llm: FakeLLM) -> None:
    llm.push("Rating: 10")
    with pytest.raises(JudgeError, match="no 1-5 rating"):
        LLMJudge(llm.base_url, **FAST).score(EX, {"response": "4"})


def test_llm_judge_unreachable_is_error(llm: FakeLLM) -> None:
    llm.set_handler(lambda r: Reply(status=503))
    with pytest.raises(LLMError, match="3 attempts"):
        LLMJudge(llm.base_url, max_retries=2, **FAST).score(EX, {"response": "4"})


def test_llm_judge_retries_transient(llm: FakeLLM) -> None:
    llm.push(Reply(status=429), Reply(drop=True), "5")
    assert LLMJudge(llm.base_url, **FAST).score(EX, {"response": "4"}) == {
        "judge_score": 1.0
    }


def test_llm_judge_missing_fields_and_empty(llm: FakeLLM) -> None:
    judge = LLMJudge(llm.base_url, **FAST)
    assert judge.score({"question": "q"}, {"response": "x"}) == {}
    assert judge.score({"answer": "a"}, {"response": "x"}) == {}
    assert judge.score(EX, {}) == {}
    assert judge.score(EX, {"response": None}) == {"judge_score": 0.0}
    assert judge.score(EX, {"response": "  "}) == {"judge_score": 0.0}
    assert llm.requests == []
    llm.push("4")
    # context stands in for a missing question; a number response is scored as text
    assert judge.score({"context": "c", "answer": 4}, {"response": 4}) == {
        "judge_score": 0.75
    }


def test_llm_judge_error_recorded_in_row(llm: FakeLLM) -> None:
    llm.push("excellent!")
    row, raised = score_processed(
        EX, {**EX, "response": "4"}, [LLMJudge(llm.base_url, **FAST)], system="sys"
    )
    assert row.error is not None and "judge_score" not in row.scores
    assert isinstance(raised, JudgeError)


# -- MemoryJudge ------------------------------------------------------------------------

MEM = {"question": "Where did Alice grow up?", "answer": "Paris"}


def test_memory_judge_yes_no(llm: FakeLLM) -> None:
    llm.push("YES. Same city.", "NO, London is not Paris.")
    judge = MemoryJudge(llm.base_url, **FAST)
    assert judge.score(MEM, {"response": "Alice grew up in Paris, France."}) == {
        "memory_judge": 1.0,
        "memory_judge_raw": 1.0,
    }
    scores, details = judge.score_details(MEM, {"response": "Alice grew up in London."})
    assert scores == {"memory_judge": 0.0, "memory_judge_raw": 0.0}
    assert details == {
        "reason": "the judge said NO: the answer lacks the gold's information",
        "verdict": "NO", "rationale": "NO, London is not Paris."}
    req = llm.requests[0]
    assert req.json["model"] == "claude-haiku-4-5-20251001"
    assert req.json["temperature"] == 0 and req.json["max_tokens"] == 64
    assert "[Gold Answer]\nParis" in req.messages[0]["content"]


def test_memory_judge_empty_response_then_empty_gold(llm: FakeLLM) -> None:
    judge = MemoryJudge(llm.base_url, **FAST)
    assert judge.score({"question": "q", "answer": ""}, {"response": ""}) == {
        "memory_judge": 0.0,
        "memory_judge_raw": 0.0,
    }
    assert judge.score({"question": "q", "answer": " "}, {"response": "x"}) == {
        "memory_judge": 0.5,
        "memory_judge_raw": 0.5,
    }
    assert judge.score({"answer": "a"}, {"response": "x"}) == {}
    assert judge.score(MEM, {}) == {}
    assert llm.requests == []


def test_memory_judge_failure_is_zero_with_judge_error(llm: FakeLLM) -> None:
    llm.set_handler(lambda r: Reply(status=500))
    judge = MemoryJudge(llm.base_url, max_retries=1, **FAST)
    scores, details = judge.score_details(MEM, {"response": "Paris"})
    assert scores == {"memory_judge": 0.0, "memory_judge_raw": 0.0}
    assert (
        "HTTP 500" in details["judge_error"] and "2 attempts" in details["judge_error"]
    )
    assert len(llm.requests) == 2


def test_memory_judge_unparsable_marks_error(llm: FakeLLM) -> None:
    llm.push("Perhaps.")
    scores, details = MemoryJudge(llm.base_url, **FAST).score_details(
        MEM, {"response": "Paris"}
    )
    assert scores["memory_judge"] == 0.0
    assert (
        "neither YES nor NO" in details["judge_error"]
        and details["reply"] == "Perhaps."
    )


def test_memory_judge_details_reach_row_metadata(llm: FakeLLM) -> None:
    llm.set_handler(lambda r: Reply(status=400))
    row, raised = score_processed(
        MEM,
        {**MEM, "response": "Paris"},
        [MemoryJudge(llm.base_url, **FAST)],
        system="sys",
    )
    assert raised is None and row.error is None
    assert row.scores["memory_judge"] == 0.0
    assert "HTTP 400" in row.metadata["memory_judge"]["judge_error"]


# -- MemoryJudge against its seed (the context-bench MemoryJudge page) -----------------
#
# The seed: YES if the system answer conveys the gold's essential information, else NO;
# 1.0 / 0.0 on both keys; a judge failure is 0.0, not an exception; an empty gold answer
# is a neutral 0.5. Upstream (UPSTREAM.md 2.9): an empty response is 0.0, checked before
# the gold; the first YES or NO found anywhere (whole words, any case) decides.

SEED_EX = {"question": "Where did Alice grow up?", "answer": "Paris"}
NO = {"reason": "the judge said NO: the answer lacks the gold's information",
      "verdict": "NO"}


@pytest.mark.parametrize(
    ("reply", "score", "details"),
    [
        ("YES. Alice grew up in Paris.", 1.0, {"verdict": "YES"}),
        ("NO - London is not Paris.", 0.0, {**NO,
                                            "rationale": "NO - London is not Paris."}),
        ("The system answer is correct, so: yes.", 1.0, {"verdict": "YES"}),  # embedded
        ("Verdict: **Yes** (same city)", 1.0, {"verdict": "YES"}),
        ("No. Although one could say yes.", 0.0, {  # the first wins
            **NO, "rationale": "No. Although one could say yes."}),
        ("Maybe", 0.0, {"reason": "the judge failed (scored 0.0)",
                         "judge_error": "the judge's reply has neither YES nor NO",
                         "reply": "Maybe"}),
        ("Yesterday, nobody knows.", 0.0, {
            "reason": "the judge failed (scored 0.0)",
            "judge_error": "the judge's reply has neither YES nor NO",
            "reply": "Yesterday, nobody knows.",
        }),  # "Yesterday" and "nobody" are not the words YES / NO
    ],
    ids=["yes", "no", "embedded-yes", "bold-yes", "first-wins", "maybe", "no-word"],
)
def test_memory_judge_seed_replies(
    llm: FakeLLM, reply: str, score: float, details: dict[str, str]
) -> None:
    llm.push(reply)
    judge = MemoryJudge(llm.base_url, **FAST)
    got = judge.score_details(SEED_EX, {"response": "Alice grew up in Paris, France."})
    assert got == ({"memory_judge": score, "memory_judge_raw": score}, details)
    (req,) = llm.requests
    assert req.path == "/v1/chat/completions"
    assert req.json["model"] == "claude-haiku-4-5-20251001"
    assert req.json["temperature"] == 0 and req.json["max_tokens"] == 64
    prompt = req.messages[0]["content"]
    for block in (
        "[Question]\nWhere did Alice grow up?",
        "[Gold Answer]\nParis",
        "[System Answer]\nAlice grew up in Paris, France.",
        "same essential information",
        "YES or NO",
    ):
        assert block in prompt


@pytest.mark.parametrize(
    ("gold", "response", "score"),
    [
        ("", "Paris", 0.5),  # blank gold: neutral
        ("  \n", "Paris", 0.5),
        (["", " "], "Paris", 0.5),  # several golds, all blank
        ("Paris", "", 0.0),  # blank response
        ("Paris", "   ", 0.0),
        ("Paris", None, 0.0),
        ("", "", 0.0),  # the blank response is checked first
    ],
)
def test_memory_judge_seed_blank_gold_or_response_needs_no_call(
    llm: FakeLLM, gold: object, response: object, score: float
) -> None:
    judge = MemoryJudge(llm.base_url, **FAST)
    scores, details = judge.score_details(
        {"question": "Where did Alice grow up?", "answer": gold}, {"response": response}
    )
    assert scores == {"memory_judge": score, "memory_judge_raw": score}
    assert details == (
        {"reason": "the gold answer is empty: a neutral 0.5",
         "note": "empty gold answer"}
        if score == 0.5
        else {"reason": "the response is empty (the judge was not asked)"}
    )
    assert llm.requests == []


def test_memory_judge_seed_unreachable_judge_is_zero_not_an_exception() -> None:
    with socket.socket() as sock:  # a port on which nobody listens
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    judge = MemoryJudge(f"http://127.0.0.1:{port}", max_retries=1, **FAST)
    scores, details = judge.score_details(SEED_EX, {"response": "Paris"})
    assert scores == {"memory_judge": 0.0, "memory_judge_raw": 0.0}
    message = details["judge_error"]
    assert f"http://127.0.0.1:{port}/v1/chat/completions" in message
    assert "2 attempts" in message
    assert judge.score(SEED_EX, {"response": "Paris"})["memory_judge"] == 0.0


# -- AnswerCorrectness ------------------------------------------------------------------


def test_fbeta() -> None:
    assert fbeta(0, 3, 3) == 0.0
    assert fbeta(2, 0, 0) == 1.0
    assert fbeta(1, 1, 1) == pytest.approx(0.5)
    # precision 2/3, recall 2/4: F1 = 4/7, F2 weights recall
    assert fbeta(2, 1, 2) == pytest.approx(4 / 7)
    p, r = 2 / 3, 1 / 2
    assert fbeta(2, 1, 2, beta=2.0) == pytest.approx(5 * p * r / (4 * p + r))


def _ac_handler(classification: dict, statements: dict[str, list[str]]):
    def handler(request):
        if request.path.endswith("/embeddings"):
            return Reply()  # fake_embedding of each input
        prompt = request.messages[0]["content"]
        if "Reference claims:" in prompt:
            return json.dumps(classification)
        for text, st in statements.items():
            if f"Answer: {text}" in prompt:
                return "```json\n" + json.dumps({"statements": st}) + "\n```"
        return "???"

    return handler


def test_answer_correctness_full(llm: FakeLLM) -> None:
    resp = "The sun is powered by nuclear fusion."
    ref = "The sun is powered by nuclear fusion, where hydrogen fuses to helium."
    llm.set_handler(
        _ac_handler(
            {
                "TP": [{"statement": "s", "reason": "r"}],
                "FP": [],
                "FN": [{"statement": "h", "reason": "r"}],
            },
            {
                resp: ["The sun is powered by nuclear fusion."],
                ref: [
                    "The sun is powered by nuclear fusion.",
                    "Hydrogen fuses to helium.",
                ],
            },
        )
    )
    ac = AnswerCorrectness(llm.base_url, "m", embedding_model="e", **FAST)
    out = ac.score(
        {"question": "What powers the sun?", "answer": ref}, {"response": resp}
    )
    from pytest_context_bench.testing import fake_embedding

    a, b = fake_embedding(resp), fake_embedding(ref)
    sim = sum(x * y for x, y in zip(a, b))
    fact = fbeta(1, 0, 1)
    assert out["answer_factuality"] == pytest.approx(2 / 3)
    assert out["answer_similarity"] == pytest.approx(sim)
    assert out["answer_correctness"] == pytest.approx(0.75 * fact + 0.25 * sim)
    chats = [r for r in llm.requests if r.path.endswith("/chat/completions")]
    assert len(chats) == 3 and all(r.json["temperature"] == 0 for r in chats)
    emb = [r for r in llm.requests if r.path.endswith("/embeddings")]
    assert emb[0].json == {"model": "e", "input": [resp, ref]}


def test_answer_correctness_malformed_retried_once_then_error(llm: FakeLLM) -> None:
    llm.push(
        "not json",
        json.dumps({"statements": ["a"]}),  # response: retried, ok
        "nope",
        "still nope",
    )  # reference: two bad replies
    ac = AnswerCorrectness(llm.base_url, weights=(1.0, 0.0), **FAST)
    with pytest.raises(JudgeError, match="malformed twice"):
        ac.score({"question": "q", "answer": "ref"}, {"response": "resp"})
    assert len(llm.requests) == 4


def test_answer_correctness_wrong_shape_retried(llm: FakeLLM) -> None:
    llm.push(
        json.dumps({"statements": "a"}),
        json.dumps({"statements": ["a"]}),
        json.dumps({"statements": ["b"]}),
        json.dumps({"TP": [], "FP": ["a"]}),
        json.dumps({"TP": [], "FP": ["a"], "FN": ["b"]}),
    )
    ac = AnswerCorrectness(llm.base_url, weights=(1.0, 0.0), **FAST)
    out = ac.score({"question": "q", "answer": "ref"}, {"response": "resp"})
    assert out == {"answer_correctness": 0.0, "answer_factuality": 0.0}
    assert len(llm.requests) == 5


def test_answer_correctness_similarity_only(llm: FakeLLM) -> None:
    ac = AnswerCorrectness(llm.base_url, weights=(0, 1), **FAST)
    out = ac.score({"answer": "paris france"}, {"response": "paris france"})
    assert out == {
        "answer_correctness": pytest.approx(1.0),
        "answer_similarity": pytest.approx(1.0),
    }
    assert [r.path for r in llm.requests] == ["/v1/embeddings"]


def test_answer_correctness_missing_and_empty(llm: FakeLLM) -> None:
    ac = AnswerCorrectness(llm.base_url, **FAST)
    assert ac.score({"question": "q"}, {"response": "x"}) == {}
    assert ac.score({"answer": ""}, {"response": "x"}) == {}
    assert ac.score({"answer": "a"}, {}) == {}
    assert ac.score({"answer": "a"}, {"response": None}) == {
        "answer_correctness": 0.0,
        "answer_factuality": 0.0,
        "answer_similarity": 0.0,
    }
    assert llm.requests == []


@pytest.mark.parametrize(
    "weights", [(0, 0), (-1, 1), (1,), (1, 2, 3), (float("nan"), 1)]
)
def test_answer_correctness_bad_weights(weights: tuple[float, ...]) -> None:
    with pytest.raises(ConfigError, match="weights"):
        AnswerCorrectness("http://h:1", weights=weights)


def test_answer_correctness_bad_beta() -> None:
    with pytest.raises(ConfigError, match="beta"):
        AnswerCorrectness("http://h:1", beta=0)


def test_judges_never_show_key(llm: FakeLLM) -> None:
    key = "sk-judge-SECRET-42"
    llm.set_handler(
        lambda r: Reply(f"echo {r.headers.get('authorization')}", status=401)
    )
    for judge in (
        LLMJudge(llm.base_url, api_key=key, **FAST),
        AnswerCorrectness(llm.base_url, api_key=key, **FAST),
    ):
        assert key not in repr(judge)
        with pytest.raises(LLMError) as info:
            judge.score(EX, {"response": "4"})
        assert key not in str(info.value)
    _scores, details = MemoryJudge(llm.base_url, api_key=key, **FAST).score_details(
        MEM, {"response": "x"}
    )
    assert key not in json.dumps(details) and "Bearer ***" in details["judge_error"]


@pytest.mark.parametrize(
    ("replies", "field", "prompt"),
    [
        (
            [{"statements": "one fact"}, {"statements": "one fact"}],
            '"statements" is not a list of strings (it is a str)',
            "statements (response)",
        ),
        (
            [{"statements": ["a", 3]}, {"statements": [{"s": "a"}]}],
            '"statements" is not a list of strings (item 0 is a dict)',
            "statements (response)",
        ),
        (
            [{"facts": []}, {"facts": []}],
            'the field "statements"',
            "statements (response)",
        ),
    ],
    ids=["not-a-list", "not-strings", "missing"],
)
def test_answer_correctness_bad_statements_name_the_field(
    llm: FakeLLM, replies: list[object], field: str, prompt: str
) -> None:
    llm.push(*(json.dumps(r) for r in replies))
    ac = AnswerCorrectness(llm.base_url, weights=(1.0, 0.0), **FAST)
    with pytest.raises(JudgeError) as info:
        ac.score({"question": "q", "answer": "ref"}, {"response": "resp"})
    message = str(info.value)
    assert field in message and f"the {prompt} prompt" in message
    assert "malformed twice" in message
    assert len(llm.requests) == 2  # asked once more, then the error


@pytest.mark.parametrize(
    ("bad", "field"),
    [
        ({"TP": [], "FP": [], "FN": 2}, '"FN" is not a list (it is an int)'),
        ({"TP": {"a": 1}, "FP": [], "FN": []}, '"TP" is not a list (it is a dict)'),
        ({"TP": [], "FP": None, "FN": []}, '"FP" is not a list (it is null)'),
        ({"TP": [], "FN": []}, '"FP" is missing (it must be a list)'),
        (["TP"], 'the fields "TP", "FP" and "FN"'),
    ],
)
def test_answer_correctness_bad_classification_names_the_field(
    llm: FakeLLM, bad: object, field: str
) -> None:
    llm.push(
        json.dumps({"statements": ["a"]}),
        json.dumps({"statements": ["b"]}),
        json.dumps(bad),
        json.dumps(bad),
    )
    ac = AnswerCorrectness(llm.base_url, weights=(1.0, 0.0), **FAST)
    with pytest.raises(JudgeError, match="classification prompt") as info:
        ac.score({"question": "q", "answer": "ref"}, {"response": "resp"})
    assert field in str(info.value)
    assert len(llm.requests) == 4


def test_answer_correctness_no_statements_skips_the_classifier(llm: FakeLLM) -> None:
    llm.push(json.dumps({"statements": []}), json.dumps({"statements": [" "]}))
    ac = AnswerCorrectness(llm.base_url, weights=(1.0, 0.0), **FAST)
    out = ac.score({"question": "q", "answer": "No comment."}, {"response": "Hmm."})
    assert out == {"answer_correctness": 1.0, "answer_factuality": 1.0}
    assert len(llm.requests) == 2  # the two statement prompts, no classification


def test_answer_correctness_prompts_ask_for_self_contained_statements(
    llm: FakeLLM,
) -> None:
    llm.push(
        json.dumps({"statements": ["Alice grew up in Paris."]}),
        json.dumps({"statements": ["Alice grew up in Paris."]}),
        json.dumps({"TP": [{"statement": "Alice grew up in Paris.", "reason": "r"}],
                    "FP": [], "FN": []}),
    )
    ac = AnswerCorrectness(llm.base_url, weights=(1.0, 0.0), **FAST)
    out = ac.score(
        {"question": "Where did Alice grow up?", "answer": "Paris"},
        {"response": "She grew up in Paris."},
    )
    assert out["answer_factuality"] == 1.0
    split, _ref, classify = (r.messages[0]["content"] for r in llm.requests)
    assert "Answer: She grew up in Paris." in split
    for asked in ("One fact per claim", "pronouns", "stands on its own", "JSON"):
        assert asked in split
    assert 'Answer claims: ["Alice grew up in Paris."]' in classify
    for asked in ('"TP"', '"FP"', '"FN"', "Example", "JSON"):
        assert asked in classify
    # Each prompt carries a worked example whose reply is valid for our reader.
    for prompt in (split, classify):
        example = prompt.split("Reply: ", 1)[1].split("\n", 1)[0]
        json.loads(example)


@pytest.mark.parametrize("beta", [-1.0, float("inf"), float("nan")])
def test_answer_correctness_beta_out_of_range(beta: float) -> None:
    with pytest.raises(ConfigError, match="beta"):
        AnswerCorrectness("http://h:1", beta=beta)


def test_answer_correctness_drops_blank_statements_and_reads_lowercase_keys(
    llm: FakeLLM,
) -> None:
    # docs/differences.md, the last two rows of "AnswerCorrectness and Ragas": a
    # whitespace-only statement is no claim (Ragas keeps it), and the classifier's
    # lowercase keys count as the uppercase ones (Ragas' parser refuses them).
    llm.push(
        json.dumps({"statements": [" ", "\n\t"]}),  # response
        json.dumps({"statements": ["  "]}),  # reference
    )
    ac = AnswerCorrectness(llm.base_url, weights=(1.0, 0.0), **FAST)
    out = ac.score({"question": "q", "answer": "ref"}, {"response": "resp"})
    assert out == {"answer_correctness": 1.0, "answer_factuality": 1.0}
    assert len(llm.requests) == 2  # neither side has a statement: no classifier

    llm.push(
        json.dumps({"statements": ["A", " "]}),
        json.dumps({"statements": ["A", "B"]}),
        json.dumps({"tp": [{"statement": "A"}], "fp": [], "fn": [{"statement": "B"}]}),
    )
    out = ac.score({"question": "q", "answer": "ref"}, {"response": "resp"})
    assert out["answer_factuality"] == pytest.approx(fbeta(1, 0, 1))
    assert len(llm.requests) == 5
