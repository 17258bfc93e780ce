"""The application under test: retrieval-augmented question answering, two ways.

This is ordinary application code, written against the official ``openai`` SDK: it
knows nothing of pytest or of the benchmark. ``OpenAI()`` reads ``OPENAI_BASE_URL``
and ``OPENAI_API_KEY`` from the environment; offline, ``conftest.py`` points them at
the local model of ``local_llm.py``.

* :class:`RagApp` retrieves the passages of the context that best match the question
  and sends them with the question to the model.
* :class:`CompressedRagApp` is the same app with a prompt compressor in front: it
  keeps only the sentences that share a word with the question, so it sends fewer
  tokens. Is it as good? That is the question the benchmark answers.

Each reads one example (``context``, ``question``; a code task has its prompt in
``context``) and returns ``{**example, "response": text, "api_usage": usage}``: the
answer, and the model's own token count, which the benchmark uses for cost.
"""

from __future__ import annotations

import os
import re
from typing import Any

from openai import OpenAI

INSTRUCTIONS = {
    "qa": "Answer the question from the context below, in a few words.\n\n",
    "multiple_choice": "Read the context and reply with the letter of the correct"
    " option only.\n\n",
    "code": "You write a Python function that does what the user asks. Reply with"
    " the code only.",
    "orders": "Reply with a JSON object only: {\"order\": <the order number>,"
    " \"status\": <its status, one word>}, read from these records.\n\n",
}
_WORD = re.compile(r"[A-Za-z0-9]+")


def _words(text: str) -> set[str]:
    return {w.lower() for w in _WORD.findall(text) if len(w) > 2}


def _sentences(text: str) -> list[str]:
    return [s.strip() for s in re.split(r"(?<=[.!?])\s+", text) if s.strip()]


class RagApp:
    """Retrieve the best-matching passages, then ask the model."""

    name = "rag"
    top_k = 3

    def __init__(self, model: str | None = None, http_client: Any = None) -> None:
        self.model = model or os.environ.get("OPENAI_MODEL", "gpt-4o-mini")
        # The HTTP client under the SDK (a cache, a meter, a rate limit), or the SDK's
        # own when None.
        self.http_client = http_client
        self._client: OpenAI | None = None

    @property
    def client(self) -> OpenAI:
        # Built on first use, in the process (xdist worker) that makes the calls.
        if self._client is None:
            self._client = OpenAI(max_retries=2, timeout=60, http_client=self.http_client)
        return self._client

    def retrieve(self, question: str, context: str) -> str:
        """The ``top_k`` passages (sentences) that share most words with the question,
        in their original order."""
        q = _words(question)
        sentences = _sentences(context)
        ranked = sorted(
            range(len(sentences)), key=lambda i: -len(q & _words(sentences[i]))
        )
        return " ".join(sentences[i] for i in sorted(ranked[: self.top_k]))

    def prompt(self, example: dict[str, Any]) -> list[dict[str, str]]:
        task = example.get("task", "qa")
        if task == "code":
            return [
                {"role": "system", "content": INSTRUCTIONS["code"]},
                {"role": "user", "content": example["context"]},
            ]
        # A multiple-choice context ends with its lettered options: they go with
        # the question, and only the passage above them is retrieved from.
        passage, _, options = example["context"].partition("\n\nA. ")
        question = example["question"] + (f"\nA. {options}" if options else "")
        context = self.retrieve(example["question"], passage)
        return [
            {"role": "system", "content": INSTRUCTIONS[task] + context},
            {"role": "user", "content": question},
        ]

    def process(self, example: dict[str, Any]) -> dict[str, Any]:
        reply = self.client.chat.completions.create(
            model=self.model, messages=self.prompt(example), temperature=0
        )
        usage = reply.usage
        return {
            **example,
            "response": reply.choices[0].message.content or "",
            "api_usage": {
                "prompt_tokens": usage.prompt_tokens if usage else 0,
                "completion_tokens": usage.completion_tokens if usage else 0,
            },
        }


class CompressedRagApp(RagApp):
    """The same app with a prompt compressor: only the sentences that share a word
    with the question are sent (at most two)."""

    name = "rag_compressed"

    def retrieve(self, question: str, context: str) -> str:
        q = _words(question)
        kept = [s for s in _sentences(context) if q & _words(s)]
        return " ".join(kept[:2])
