"""AnswerQuality: SQuAD-style overlap between a response and the gold answer."""

from __future__ import annotations

from typing import Any

from ..metrics.quality import overlap_scores

__all__ = ["AnswerQuality"]

_KEYS = ("f1", "exact_match", "recall", "contains")


def _score_one(answer: str, response: str | None) -> dict[str, float]:
    """All four scores against one gold answer (``response`` None means absent)."""
    # An empty gold is checked before an empty response, as upstream does: there is
    # nothing to miss, so every response is right.
    if not answer.strip():
        return dict.fromkeys(_KEYS, 1.0)
    if response is None or not response.strip():
        return dict.fromkeys(_KEYS, 0.0)
    # Surrounding whitespace of the gold is dropped so a gold read with a trailing
    # newline still matches; otherwise this is the raw, unnormalised substring test.
    contains = 1.0 if answer.strip().lower() in response.lower() else 0.0
    f1, em, recall = overlap_scores(response, answer)
    return {"f1": f1, "exact_match": em, "recall": recall, "contains": contains}


class AnswerQuality:
    """Token F1, exact match, recall and substring containment against the gold.

    Reads ``original["answer"]`` and ``processed["response"]`` and returns
    ``{"f1", "exact_match", "recall", "contains"}``. ``f1``, ``exact_match`` and
    ``recall`` use SQuAD v1.1 normalisation (see
    :mod:`pytest_context_bench.metrics.quality`); ``contains`` is ``1.0`` when the
    gold appears in the response as a case-insensitive raw substring (so ``"Paris"``
    is contained in ``"Parisian"``).

    Rules, in order:

    - no ``"answer"`` key, or ``None``, or an empty list of answers: ``{}`` (the
      evaluator cannot judge; it never invents a score; upstream scored a missing
      answer as a perfect 1.0);
    - a list (or tuple) of gold answers: each key is the maximum over the golds,
      each gold scored by the rules below, as the SQuAD script does;
    - a gold that is empty after ``str().strip()``: all four ``1.0``;
    - a response that is absent, ``None`` or blank: all four ``0.0``.

    Non-string answers and responses are coerced with :func:`str`.

    >>> AnswerQuality().score({"answer": "Paris"}, {"response": "The capital is Paris."})
    {'f1': 0.5, 'exact_match': 0.0, 'recall': 1.0, 'contains': 1.0}
    """

    name = "answer_quality"

    def score(
        self, original: dict[str, Any], processed: dict[str, Any]
    ) -> dict[str, float]:
        """Score one (original, processed) pair.

        :param original: the example; its ``"answer"`` is the gold (a string or a
            list of strings).
        :param processed: what the System returned; its ``"response"`` is judged.
        :return: ``{"f1", "exact_match", "recall", "contains"}``, or ``{}`` when the
            example has no gold answer.
        """
        raw_answer = original.get("answer")
        if raw_answer is None:
            return {}
        golds: list[str]
        if isinstance(raw_answer, (list, tuple)):
            golds = [str(a) for a in raw_answer]
            if not golds:
                return {}
        else:
            golds = [str(raw_answer)]
        raw_response = processed.get("response")
        response = None if raw_response is None else str(raw_response)
        per_gold = [_score_one(g, response) for g in golds]
        return {k: max(s[k] for s in per_gold) for k in _KEYS}
