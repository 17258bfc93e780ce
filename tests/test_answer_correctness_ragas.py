"""AnswerCorrectness agrees with Ragas, case by case: the conformance suite.

The 17 cases and their scripted endpoint are in ``answer_correctness_cases.py``; the
Ragas values are in ``oracles/answer_correctness_ragas.json``, computed with Ragas
0.4.3 (legacy ``ragas.metrics._answer_correctness.AnswerCorrectness``) by
``oracles/ragas_answer_correctness.py`` against the same script on a loopback server.
Ragas is never installed here: the values are recorded, the versions written next to
them. Each case runs our evaluator against a real HTTP server on 127.0.0.1 answering
the same script, and our score must equal Ragas': bit for bit in 10 cases, to 1e-12 in
4 (``LAST_BIT_DIFFERS``: the cosine is computed in another order), and in 3 we differ
on purpose; those carry our value, and docs/differences.md a row with both.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from answer_correctness_cases import CASES, RAGAS_VERSION, Case, ScriptedEndpoint

from pytest_context_bench.evaluators.judges import AnswerCorrectness
from pytest_context_bench.testing import FakeLLM, Reply

RECORDED = json.loads(
    (Path(__file__).parent / "oracles" / "answer_correctness_ragas.json").read_text()
)
FAST = {"retry_base_delay": 0.001, "timeout": 5.0, "max_retries": 0}
TOLERANCE = 1e-12
# Equal to 1e-12 but not to the last bit (1 ulp): Ragas' legacy metric normalises
# each vector with numpy and then takes their dot product, we divide the dot product
# by the product of the norms; the other 10 are bit for bit. Ragas' newer
# collections metric divides as we do, and gives our value to the last bit where it
# scores as the legacy one (with statements on both sides).
LAST_BIT_DIFFERS = {
    "weights_0.5_0.5",
    "weights_0_1",
    "no_true_positive",
    "no_statements_in_response",
}

# Ragas 0.4.3's answer_correctness on each case, as recorded in the JSON file above.
RAGAS_0_4_3 = {
    "all_tp": 0.9765072200097966,
    "tp2_fp1_fn1": 0.7265072200097966,
    "beta_0.5_tp2_fp1_fn2": 0.6952572200097966,
    "beta_1_tp2_fp1_fn2": 0.6550786485812252,
    "beta_2_tp2_fp1_fn2": 0.6212440621150598,
    "weights_1_0": 0.6666666666666666,
    "weights_0.5_0.5": 0.7863477733529266,
    "weights_0_1": 0.9060288800391866,
    "no_true_positive": 0.22650722000979664,
    "no_statements_either_side": 0.95,
    "no_statements_in_response": 0.22650722000979664,
    "empty_response": 0.22650722000979664,
    "identical_texts": 1.0,
    "negative_cosine": 0.6,
    "negative_cosine_weights_0_1": -0.6,
    "malformed_statements_then_good": 0.6550786485812252,
    "malformed_classification_then_good": 0.6550786485812252,
}


def test_recorded_values_are_ragas_0_4_3_for_every_case() -> None:
    assert RECORDED["ragas"] == RAGAS_VERSION == "0.4.3"
    assert len(CASES) == 17
    assert [c.id for c in CASES] == list(RECORDED["cases"]) == list(RAGAS_0_4_3)
    for case in CASES:
        value = RECORDED["cases"][case.id]["ragas"]
        assert isinstance(value, float) and math.isfinite(value), case.id
        assert value == RAGAS_0_4_3[case.id], case.id  # bit for bit


def _run(case: Case) -> tuple[dict[str, float], ScriptedEndpoint, FakeLLM]:
    endpoint = ScriptedEndpoint(case, Reply)
    with FakeLLM(handler=endpoint) as server:
        ac = AnswerCorrectness(
            server.base_url,
            model="m",
            embedding_model="e",
            weights=case.weights,
            beta=case.beta,
            **FAST,
        )
        out = ac.score(
            {"question": case.question, "answer": case.reference},
            {"response": case.response},
        )
    return out, endpoint, server


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_answer_correctness_equals_ragas(case: Case) -> None:
    ragas = RAGAS_0_4_3[case.id]
    out, endpoint, server = _run(case)
    if case.ours is None and case.id in LAST_BIT_DIFFERS:
        assert out["answer_correctness"] == pytest.approx(
            ragas, rel=0, abs=TOLERANCE
        ), f"Ragas {RAGAS_VERSION}: {ragas!r}, ours: {out['answer_correctness']!r}"
        if case.response_statements and case.reference_statements:
            newer = RECORDED["cases"][case.id]["ragas_collections"]
            assert out["answer_correctness"] == newer  # to the last bit
    elif case.ours is None:
        assert out["answer_correctness"] == ragas, f"Ragas {RAGAS_VERSION}: {ragas!r}"
    else:
        # A documented difference (docs/differences.md): our value, and Ragas' really
        # is another one.
        assert out["answer_correctness"] == case.ours
        assert abs(ragas - case.ours) > 0.1

    # What we send: temperature 0, one batched embeddings request of both texts,
    # and nothing for a component whose weight is 0.
    chats = [r for r in server.requests if r.path.endswith("/chat/completions")]
    embeds = [r for r in server.requests if r.path.endswith("/embeddings")]
    assert all(r.json["temperature"] == 0 for r in chats)
    if case.id == "empty_response":
        assert server.requests == []
        return
    assert [r.json["input"] for r in embeds] == (
        [[case.response, case.reference]] if case.weights[1] else []
    )
    if not case.weights[0]:
        assert chats == [] and "answer_factuality" not in out
        return
    expected = {
        kind: 2 if kind in case.malformed else 1  # a malformed reply: asked again
        for kind in ("response", "reference", "classification")
    }
    if not (case.response_statements or case.reference_statements):
        expected["classification"] = 0
    if case.response == case.reference:  # the script cannot tell the two apart
        expected["response"] += expected.pop("reference")
    assert {k: endpoint.calls[k] for k in expected} == expected


def test_no_statements_on_either_side_is_factuality_one_without_classifier() -> None:
    (case,) = [c for c in CASES if c.id == "no_statements_either_side"]
    out, endpoint, _server = _run(case)
    assert endpoint.calls["classification"] == 0
    assert endpoint.calls["response"] == endpoint.calls["reference"] == 1
    assert out == {
        "answer_correctness": pytest.approx(0.95, abs=TOLERANCE),
        "answer_factuality": 1.0,
        "answer_similarity": pytest.approx(0.8, abs=TOLERANCE),
    }
    assert RECORDED["cases"][case.id]["classifier_called"] is False  # Ragas neither


def test_negative_cosine_is_clamped_and_ragas_is_not() -> None:
    (case,) = [c for c in CASES if c.id == "negative_cosine"]
    out, _endpoint, _server = _run(case)
    assert out["answer_similarity"] == 0.0
    assert out["answer_factuality"] == 1.0
    # Ragas: 0.75 * 1.0 + 0.25 * (-0.6); ours 0.75 * 1.0 + 0.25 * 0.0
    assert RECORDED["cases"][case.id]["ragas"] == pytest.approx(0.6, abs=TOLERANCE)
    assert out["answer_correctness"] == 0.75


def test_empty_response_scores_zero_without_a_call_and_ragas_scores_cosine() -> None:
    (case,) = [c for c in CASES if c.id == "empty_response"]
    out, _endpoint, server = _run(case)
    assert out == {
        "answer_correctness": 0.0,
        "answer_factuality": 0.0,
        "answer_similarity": 0.0,
    }
    assert server.requests == []
    # Ragas ran the whole pipeline (factuality 0) and embedded " " for the empty
    # response: 0.25 * cosine(" ", reference).
    recorded = RECORDED["cases"][case.id]
    assert recorded["chat_requests"] == 3 and " " in recorded["embedded_texts"]
    a, b = case.response_vector, case.reference_vector
    cosine = sum(x * y for x, y in zip(a, b)) / math.sqrt(
        sum(x * x for x in a) * sum(y * y for y in b)
    )
    assert recorded["ragas"] == pytest.approx(0.25 * cosine, abs=TOLERANCE)


def test_ragas_requests_recorded_differ_as_documented() -> None:
    # docs/llm.md: Ragas sends temperature 0.01 and one embeddings request per text.
    for case in CASES:
        recorded = RECORDED["cases"][case.id]
        assert recorded["temperatures"] == [0.01], case.id
        if recorded["embedding_requests"]:
            assert recorded["texts_per_embedding_request"] == [1], case.id
            assert recorded["embedding_requests"] == 2, case.id
