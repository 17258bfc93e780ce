"""AnswerQuality: SQuAD-style overlap between a response and the gold answer."""

from __future__ import annotations

from collections import Counter
from typing import Any

from ..metrics.quality import normalize_answer, overlap_scores

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


#: Tokens listed per kind (matched, missing, extra) in the details.
_TOKENS_SHOWN = 30


def _tokens(counts: Counter[str], order: list[str]) -> list[str]:
    """The tokens of ``counts`` (a multiset), in their order in ``order``."""
    left = Counter(counts)
    out = []
    for token in order:
        if left[token] > 0:
            left[token] -= 1
            out.append(token)
    return out


def _token_details(answer: str, response: str | None, f1: float) -> dict[str, Any]:
    """Why ``response`` scored ``f1`` against one gold: the normalised tokens
    matched, missing (in the gold, not the response) and extra."""
    if response is None or not response.strip():
        return {"reason": "the response is empty"}
    pred = normalize_answer(response).split()
    ref = normalize_answer(answer).split()
    common = Counter(pred) & Counter(ref)
    matched = _tokens(common, ref)
    missing = _tokens(Counter(ref) - common, ref)
    extra = _tokens(Counter(pred) - common, pred)
    if not pred:
        reason = "the response has no token left after normalisation"
    elif not matched:
        reason = "the response shares no token with the gold answer"
    elif not missing and not extra:
        reason = "the gold's tokens in another order (not an exact match)"
    else:
        reason = (f"{len(matched)} of {len(ref)} gold token{'s' * (len(ref) != 1)} "
                  f"matched, {len(missing)} missing, {len(extra)} extra "
                  f"(F1 {f1:.3g})")
    details: dict[str, Any] = {"reason": reason}
    for key, tokens in (("matched", matched), ("missing", missing), ("extra", extra)):
        details[key] = tokens[:_TOKENS_SHOWN]
        if len(tokens) > _TOKENS_SHOWN:
            details[key].append(f"… {len(tokens) - _TOKENS_SHOWN} more")
    return details


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
        golds = self._golds(original)
        if golds is None:
            return {}
        raw_response = processed.get("response")
        response = None if raw_response is None else str(raw_response)
        per_gold = [_score_one(g, response) for g in golds]
        return {k: max(s[k] for s in per_gold) for k in _KEYS}

    def score_details(
        self, original: dict[str, Any], processed: dict[str, Any]
    ) -> tuple[dict[str, float], dict[str, Any]]:
        """Like :meth:`score`, also returning why (empty at full marks).

        The details compare the normalised tokens of the response with those of
        the gold that gave the best F1: ``matched``, ``missing`` (in the gold, not
        in the response) and ``extra``, each in text order (at most 30 listed),
        and a ``reason``; ``gold`` says which gold when there are several.
        """
        golds = self._golds(original)
        if golds is None:
            return {}, {}
        raw_response = processed.get("response")
        response = None if raw_response is None else str(raw_response)
        per_gold = [_score_one(g, response) for g in golds]
        scores = {k: max(s[k] for s in per_gold) for k in _KEYS}
        if scores["f1"] == 1.0 and scores["exact_match"] == 1.0:
            return scores, {}
        best = max(range(len(golds)), key=lambda i: per_gold[i]["f1"])
        details = _token_details(golds[best], response, scores["f1"])
        if len(golds) > 1:
            details["gold"] = f"{best + 1} of {len(golds)}: {golds[best]}"
        return scores, details

    @staticmethod
    def _golds(original: dict[str, Any]) -> list[str] | None:
        raw_answer = original.get("answer")
        if raw_answer is None:
            return None
        golds: list[str]
        if isinstance(raw_answer, (list, tuple)):
            golds = [str(a) for a in raw_answer]
            if not golds:
                return None
        else:
            golds = [str(raw_answer)]
        return golds
