"""Two Systems for the example: a reader, with and without a context compressor.

No model and no network: the "reader" answers with the context sentence that
overlaps the question most, trimmed of the question's own words. It is a stand-in
for the LLM call a real System would make; what the benchmark measures (answer
quality, tokens sent, latency) is measured the same way.
"""

from __future__ import annotations

import re
from typing import Any

_WORD = re.compile(r"[A-Za-z0-9]+")
_STOP = {
    "a", "an", "the", "of", "is", "in", "what", "which", "who", "was", "does",
    "did", "how", "many", "its", "to", "and", "on", "for", "by", "with", "at",
    "often", "called", "about", "it", "on", "earth",
}


def _words(text: str) -> set[str]:
    return {w.lower() for w in _WORD.findall(text)} - _STOP


def _sentences(text: str) -> list[str]:
    return [s.strip() for s in re.split(r"(?<=[.!?])\s+", text) if s.strip()]


def _best_sentence(question: str, context: str) -> str:
    q = _words(question)
    sentences = _sentences(context)
    if not sentences:
        return ""
    # Ties go to the later sentence: openings tend to restate the subject.
    return max(reversed(sentences), key=lambda s: len(q & _words(s)))


def _answer(question: str, context: str) -> str:
    sentence = _best_sentence(question, context)
    q = _words(question)
    # Keep the words the question did not ask about: that is where the answer is.
    kept = [w for w in _WORD.findall(sentence) if w.lower() not in q and w.lower() not in _STOP]
    return " ".join(kept[:4])


class Reader:
    """Reads the whole context."""

    name = "full_context"

    def process(self, example: dict[str, Any]) -> dict[str, Any]:
        return {**example, "response": _answer(example["question"], example["context"])}


class CompressingReader:
    """Keeps only the context sentences that share a word with the question."""

    name = "compressor"

    def process(self, example: dict[str, Any]) -> dict[str, Any]:
        q = _words(example["question"])
        kept = [s for s in _sentences(example["context"]) if q & _words(s)]
        context = " ".join(kept[:2])
        return {**example, "context": context, "response": _answer(example["question"], context)}


full_context = Reader()
compressor = CompressingReader()
