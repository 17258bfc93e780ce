"""SQuAD v1.1 answer-overlap scores: normalisation, token F1, exact match, recall.

These follow the official SQuAD v1.1 evaluation script exactly. Normalisation is,
in this order:

1. lowercase;
2. delete every ASCII :data:`string.punctuation` character (Unicode punctuation such
   as ``—`` or ``“`` is kept);
3. replace each whole word ``a``, ``an`` or ``the`` with a space;
4. collapse whitespace (``" ".join(s.split())``).

Upstream context-bench removes the articles *before* the punctuation, which differs
from SQuAD whenever punctuation glues an article to a word: SQuAD turns ``"the-cat"``
into ``"thecat"``, upstream into ``"cat"``. We follow SQuAD so our numbers compare with
published ones.

Every function coerces its arguments with :func:`str`, so ``f1_score(42, "42")`` works.
"""

from __future__ import annotations

import re
import string
from collections import Counter

__all__ = ["exact_match", "f1_score", "normalize_answer", "recall_score", "overlap_scores"]

# Built once: these run per example, and a translate table is the cheapest way to drop
# a fixed character set.
_PUNCT_TABLE = str.maketrans("", "", string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the)\b")


def normalize_answer(s: object) -> str:
    """Normalise an answer the way the SQuAD v1.1 script does.

    :param s: the text (coerced with :func:`str`).
    :return: lowercased text without ASCII punctuation or articles, with single
        spaces between words.
    """
    text = str(s).lower()
    text = text.translate(_PUNCT_TABLE)
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


def _common_count(response: object, reference: object) -> tuple[int, int, int]:
    """Return ``(overlap, len(response tokens), len(reference tokens))``."""
    pred = normalize_answer(response).split()
    ref = normalize_answer(reference).split()
    # Multiset intersection: a token repeated in the response only counts as many
    # times as it occurs in the reference.
    overlap = sum((Counter(pred) & Counter(ref)).values())
    return overlap, len(pred), len(ref)


def f1_score(response: object, reference: object) -> float:
    """Token-level F1 between ``response`` and ``reference`` after normalisation.

    As in SQuAD v1.1, no overlap gives ``0.0``, including when both sides normalise
    to no tokens at all (so ``f1_score("the", "a") == 0.0`` while
    ``exact_match("the", "a") == 1.0``).

    :param response: the model's answer.
    :param reference: the gold answer.
    :return: ``2PR / (P + R)`` in ``[0, 1]``.
    """
    overlap, n_pred, n_ref = _common_count(response, reference)
    if overlap == 0:
        return 0.0
    precision = overlap / n_pred
    recall = overlap / n_ref
    return 2 * precision * recall / (precision + recall)


def exact_match(response: object, reference: object) -> float:
    """``1.0`` when both normalised strings are equal, else ``0.0``.

    :param response: the model's answer.
    :param reference: the gold answer.
    """
    return 1.0 if normalize_answer(response) == normalize_answer(reference) else 0.0


def recall_score(response: object, reference: object) -> float:
    """Share of the reference's tokens found in the response (multiset overlap).

    :param response: the model's answer.
    :param reference: the gold answer.
    :return: ``overlap / len(reference tokens)``, or ``0.0`` when the reference has
        no tokens after normalisation.
    """
    overlap, _, n_ref = _common_count(response, reference)
    if n_ref == 0:
        return 0.0
    return overlap / n_ref


def overlap_scores(response: object, reference: object) -> tuple[float, float, float]:
    """``(f1, exact_match, recall)`` from one normalisation of each side.

    Identical to calling :func:`f1_score`, :func:`exact_match` and
    :func:`recall_score`, at a third of the cost (the evaluators' hot path).
    """
    norm_pred = normalize_answer(response)
    norm_ref = normalize_answer(reference)
    em = 1.0 if norm_pred == norm_ref else 0.0
    pred = norm_pred.split()
    ref = norm_ref.split()
    if not pred or not ref:
        return 0.0, em, 0.0
    if len(pred) == 1 and len(ref) == 1:  # the common short-answer case
        overlap = 1 if pred[0] == ref[0] else 0
    else:
        overlap = sum((Counter(pred) & Counter(ref)).values())
    if overlap == 0:
        return 0.0, em, 0.0
    precision = overlap / len(pred)
    recall = overlap / len(ref)
    return 2 * precision * recall / (precision + recall), em, recall
