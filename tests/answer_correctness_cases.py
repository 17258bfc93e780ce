"""The 17 AnswerCorrectness cases we compare with Ragas, and their scripted endpoint.

Shared by the conformance suite (``tests/test_answer_correctness_ragas.py``) and the
oracle script that computes the Ragas values (``tests/oracles/ragas_answer_correctness
.py``, run by hand in a separate virtualenv with Ragas installed). Standard library
only: the oracle imports it without pytest-context-bench installed.

Each case scripts what an LLM and an embedding model would say: the statements of the
response and of the reference, the TP/FP/FN classification, one vector per text, and
which prompt (if any) first gets a malformed reply. :class:`ScriptedEndpoint` answers
both our prompts and Ragas' from that script, recognising a request by its content
(never by its order, since Ragas makes calls we skip):

- a prompt containing one of the case's statements is the classification prompt;
- else a prompt containing the (non-empty) response is the response's statements
  prompt, else one containing the reference is the reference's, else (an empty
  response) the response's;
- Ragas' "fix the output format" prompt (its re-ask after a malformed reply) carries
  the original prompt; it is answered ``{"text": <the good reply>}``, as Ragas expects.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

# The values in oracles/answer_correctness_ragas.json were computed with this version.
RAGAS_VERSION = "0.4.3"

TP, FP, FN = "TP", "FP", "FN"


@dataclass(frozen=True)
class Case:
    id: str
    question: str
    response: str
    reference: str
    response_statements: tuple[str, ...]
    reference_statements: tuple[str, ...]
    classification: dict[str, tuple[str, ...]]
    response_vector: tuple[float, ...]
    reference_vector: tuple[float, ...]
    weights: tuple[float, float] = (0.75, 0.25)
    beta: float = 1.0
    # prompts ("response", "reference", "classification") whose FIRST reply is bad
    malformed: frozenset[str] = field(default_factory=frozenset)
    # Set when we differ from Ragas on purpose (docs/differences.md): our value.
    ours: float | None = None

    def statements(self, kind: str) -> tuple[str, ...]:
        return self.response_statements if kind == "response" else (
            self.reference_statements
        )

    def good_reply(self, kind: str) -> str:
        if kind == "classification":
            return json.dumps(
                {
                    key: [
                        {"statement": s, "reason": f"scripted as {key}"}
                        for s in self.classification.get(key, ())
                    ]
                    for key in (TP, FP, FN)
                }
            )
        return json.dumps({"statements": list(self.statements(kind))})

    def bad_reply(self, kind: str) -> str:
        if kind == "classification":
            # Parses as JSON, but "TP" is not a list.
            return json.dumps({TP: "two of them", FP: [], FN: []})
        return "Sure! The statements are: the answer is correct."  # no JSON at all


# -- the script's pieces ----------------------------------------------------------------

Q_CURIE = "Who was Marie Curie?"
CURIE_RESP = "Marie Curie was a Polish physicist; she won two Nobel Prizes and ran a lab in Lyon."
CURIE_REF = (
    "Marie Curie, born in Warsaw, was a physicist and chemist who won two Nobel Prizes"
    " and discovered polonium."
)
S_POLISH = "Marie Curie was Polish."
S_PHYSICIST = "Marie Curie was a physicist."
S_NOBEL = "Marie Curie won two Nobel Prizes."
S_LYON = "Marie Curie ran a laboratory in Lyon."
S_CHEMIST = "Marie Curie was a chemist."
S_POLONIUM = "Marie Curie discovered polonium."
S_WARSAW = "Marie Curie was born in Warsaw."

# Generic, non-normalised vectors: the cosine is not a round number.
V_A = (0.3, -1.2, 2.5, 0.7, 0.05)
V_B = (0.4, -0.9, 2.2, -0.3, 0.6)

# TP2 / FP1 / FN1
TP2_FP1_FN1 = dict(
    question=Q_CURIE,
    response=CURIE_RESP,
    reference="Marie Curie was a physicist who won two Nobel Prizes and was a chemist.",
    response_statements=(S_PHYSICIST, S_NOBEL, S_LYON),
    reference_statements=(S_PHYSICIST, S_NOBEL, S_CHEMIST),
    classification={TP: (S_PHYSICIST, S_NOBEL), FP: (S_LYON,), FN: (S_CHEMIST,)},
    response_vector=V_A,
    reference_vector=V_B,
)
# TP2 / FP1 / FN2
TP2_FP1_FN2 = dict(
    TP2_FP1_FN1,
    reference=CURIE_REF,
    reference_statements=(S_WARSAW, S_PHYSICIST, S_CHEMIST, S_NOBEL),
    classification={
        TP: (S_PHYSICIST, S_NOBEL),
        FP: (S_LYON,),
        FN: (S_CHEMIST, S_WARSAW),
    },
)
ALL_TP = dict(
    question="What powers the sun?",
    response="The sun shines because hydrogen nuclei fuse into helium in its core.",
    reference="Nuclear fusion of hydrogen into helium in the core powers the sun.",
    response_statements=(
        "Hydrogen nuclei fuse into helium in the core of the sun.",
        "Nuclear fusion makes the sun shine.",
    ),
    reference_statements=(
        "Nuclear fusion powers the sun.",
        "In the core of the sun, hydrogen fuses into helium.",
    ),
    classification={
        TP: (
            "Hydrogen nuclei fuse into helium in the core of the sun.",
            "Nuclear fusion makes the sun shine.",
        ),
        FP: (),
        FN: (),
    },
    response_vector=V_A,
    reference_vector=V_B,
)
NEGATIVE = dict(ALL_TP, response_vector=(1.0, 0.0), reference_vector=(-0.6, 0.8))

CASES: tuple[Case, ...] = (
    Case("all_tp", **ALL_TP),
    Case("tp2_fp1_fn1", **TP2_FP1_FN1),
    Case("beta_0.5_tp2_fp1_fn2", **TP2_FP1_FN2, beta=0.5),
    Case("beta_1_tp2_fp1_fn2", **TP2_FP1_FN2, beta=1.0),
    Case("beta_2_tp2_fp1_fn2", **TP2_FP1_FN2, beta=2.0),
    Case("weights_1_0", **TP2_FP1_FN1, weights=(1.0, 0.0)),
    Case("weights_0.5_0.5", **TP2_FP1_FN1, weights=(0.5, 0.5)),
    Case("weights_0_1", **TP2_FP1_FN1, weights=(0.0, 1.0)),
    Case(
        "no_true_positive",
        **dict(
            TP2_FP1_FN1,
            classification={
                TP: (),
                FP: (S_PHYSICIST, S_NOBEL, S_LYON),
                FN: (S_PHYSICIST, S_NOBEL, S_CHEMIST),
            },
        ),
    ),
    Case(
        "no_statements_either_side",
        question="How are you today?",
        response="Hmm, hard to say, really.",
        reference="No comment at this time.",
        response_statements=(),
        reference_statements=(),
        classification={TP: (), FP: (), FN: ()},
        response_vector=(1.0, 0.0),
        reference_vector=(0.8, 0.6),
    ),
    Case(
        "no_statements_in_response",
        **dict(
            TP2_FP1_FN1,
            response="I am not sure about that one.",
            response_statements=(),
            classification={TP: (), FP: (), FN: (S_PHYSICIST, S_NOBEL, S_CHEMIST)},
        ),
    ),
    Case(
        "empty_response",
        **dict(
            TP2_FP1_FN1,
            response="",
            response_statements=(),
            classification={TP: (), FP: (), FN: (S_PHYSICIST, S_NOBEL, S_CHEMIST)},
        ),
        ours=0.0,
    ),
    Case(
        "identical_texts",
        **dict(
            ALL_TP,
            response=ALL_TP["reference"],
            response_statements=ALL_TP["reference_statements"],
            classification={TP: ALL_TP["reference_statements"], FP: (), FN: ()},
            response_vector=V_B,
        ),
    ),
    Case("negative_cosine", **NEGATIVE, ours=0.75),
    Case("negative_cosine_weights_0_1", **NEGATIVE, weights=(0.0, 1.0), ours=0.0),
    Case(
        "malformed_statements_then_good",
        **TP2_FP1_FN2,
        malformed=frozenset({"response", "reference"}),
    ),
    Case(
        "malformed_classification_then_good",
        **TP2_FP1_FN2,
        malformed=frozenset({"classification"}),
    ),
)


def check_case(case: Case) -> None:
    """The script's own consistency: fail loudly rather than answer the wrong prompt."""
    texts = [t for t in (case.response, case.reference) if t]
    for text in texts:
        assert text not in case.question, case.id
        assert '"' not in text and "\\" not in text, case.id  # JSON-escaped by Ragas
    if case.response and case.response != case.reference:
        assert case.response not in case.reference, case.id
        assert case.reference not in case.response, case.id
    if case.response == case.reference:
        assert case.response_statements == case.reference_statements, case.id
        assert case.response_vector == case.reference_vector, case.id
    every = case.response_statements + case.reference_statements
    for s in every:
        assert s not in case.response and s not in case.reference, (case.id, s)
    for key, items in case.classification.items():
        assert set(items) <= set(every), (case.id, key)


class ScriptedEndpoint:
    """A FakeLLM handler answering one case's script (see the module docstring).

    ``calls`` counts the requests per kind: ``"response"``, ``"reference"``,
    ``"classification"`` (each including a re-ask), ``"fix"`` (Ragas' re-ask prompt),
    ``"embeddings"`` (requests) and ``"embedded"`` (texts).

    :param case: the script.
    :param reply: the ``Reply`` class of the FakeLLM in use.
    """

    def __init__(self, case: Case, reply: Any) -> None:
        check_case(case)
        self.case = case
        self.reply = reply
        self.calls: Counter[str] = Counter()

    def kind(self, prompt: str) -> str:
        case = self.case
        every = case.response_statements + case.reference_statements
        if any(s in prompt for s in every):
            return "classification"
        if case.response and case.response in prompt:
            return "response"
        if case.reference in prompt:
            return "reference"
        return "response"

    def __call__(self, request: Any) -> Any:
        if request.path.endswith("/embeddings"):
            return self._embed(request)
        prompt = "\n".join(str(m.get("content", "")) for m in request.messages)
        kind = self.kind(prompt)
        self.calls[kind] += 1
        if '"output_string"' in prompt:  # Ragas' re-ask after a malformed reply
            self.calls["fix"] += 1
            return self.reply(json.dumps({"text": self.case.good_reply(kind)}))
        if kind in self.case.malformed and self.calls[kind] == 1:
            return self.reply(self.case.bad_reply(kind))
        return self.reply(self.case.good_reply(kind))

    def _embed(self, request: Any) -> Any:
        case = self.case
        raw = request.json.get("input", [])
        texts = [raw] if isinstance(raw, str) else list(raw)
        self.calls["embeddings"] += 1
        self.calls["embedded"] += len(texts)
        vectors = []
        for text in texts:
            if text == case.response or (not case.response and not text.strip()):
                vectors.append(list(case.response_vector))
            elif text == case.reference:
                vectors.append(list(case.reference_vector))
            else:
                return self.reply(f"unscripted text to embed: {text!r}", status=400)
        return self.reply(embeddings=vectors)
