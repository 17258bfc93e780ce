"""Helpers for testing code that talks to LLMs: :class:`FakeLLM`, a scriptable server.

Pure standard library; importing this never imports pytest.
"""

from __future__ import annotations

from .fake_llm import MAX_BODY, FakeLLM, RecordedRequest, Reply, fake_embedding, fake_tokens
from .script import Rule, Script, ScriptError

__all__ = [
    "MAX_BODY",
    "FakeLLM",
    "RecordedRequest",
    "Reply",
    "Rule",
    "Script",
    "ScriptError",
    "fake_embedding",
    "fake_tokens",
]
