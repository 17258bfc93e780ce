"""A scripted model for :class:`~pytest_context_bench.testing.FakeLLM`: prompts to replies.

A :class:`Script` is a list of rules; each request is answered by the first rule
whose ``match`` (a substring) or ``regex`` (:func:`re.search`) is found in the text
of the request's last user or tool message (so one rule answers a question, the next
one the tool result that follows it). A rule replies with text (``"reply"``), with
tool calls (``"tool_calls"``: ``[{"name", "arguments"}]``), or both, and may give the
token probabilities of its first number (``"logprobs": {"4": -0.1, "3": -2.4}``,
sent when the request asks for logprobs: :class:`Reply`); a request no rule matches
gets the fallback (FakeLLM's default reply)::

    [
      {"match": "order A17", "tool_calls": [{"name": "lookup_order", "arguments": {"order_id": "A17"}}]},
      {"regex": "\\"status\\": \\"shipped\\"", "reply": "Order A17 has shipped."}
    ]

A file holds that list as JSON (``.json``, also ``{"rules": [...]}``) or one rule
per line (``.jsonl``; blank lines skipped). ``python -m pytest_context_bench.testing
--script FILE`` serves it (docs/llm.md, "A fake endpoint").
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from .fake_llm import RecordedRequest, Reply

__all__ = ["Rule", "Script", "ScriptError", "last_prompt"]

_KEYS = {"match", "regex", "role", "reply", "tool_calls", "model", "logprobs"}


class ScriptError(ValueError):
    """A script that cannot be read, naming the file and line."""


@dataclass(frozen=True)
class Rule:
    """One rule: when ``pattern`` is found in the prompt, answer with ``reply``.

    :param pattern: the compiled regex (a ``match`` substring is escaped into one).
    :param reply: the reply sent (a fresh copy each time).
    :param role: only a last message of this role (``"user"`` or ``"tool"``)
        matches; ``None``: either.
    """

    pattern: re.Pattern[str]
    reply: Reply
    role: str | None = None

    def answers(self, role: str, text: str) -> bool:
        if self.role is not None and role != self.role:
            return False
        return self.pattern.search(text) is not None


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content blocks (OpenAI or Anthropic)
        parts = []
        for block in content:
            if isinstance(block, dict):
                if isinstance(block.get("text"), str):
                    parts.append(block["text"])
                elif block.get("type") == "tool_result":
                    parts.append(_text(block.get("content")))
            elif isinstance(block, str):
                parts.append(block)
        return "\n".join(parts)
    return "" if content is None else json.dumps(content)


def last_prompt(request: RecordedRequest) -> tuple[str, str]:
    """``(role, text)`` of the request's last user or tool message (an Anthropic
    user message made of ``tool_result`` blocks counts as ``"tool"``);
    ``("", "")`` when it has none."""
    for message in reversed(request.messages):
        if not isinstance(message, dict):
            continue
        role = message.get("role")
        content = message.get("content")
        if role == "user" and isinstance(content, list) and any(
            isinstance(b, dict) and b.get("type") == "tool_result" for b in content
        ):
            return "tool", _text(content)
        if role in ("user", "tool"):
            return str(role), _text(content)
    return "", ""


def _rule(raw: Any, where: str) -> Rule:
    if not isinstance(raw, dict):
        raise ScriptError(f"{where}: a rule must be a JSON object, got {type(raw).__name__}")
    unknown = sorted(set(raw) - _KEYS)
    if unknown:
        raise ScriptError(
            f"{where}: unknown key(s) {', '.join(map(repr, unknown))};"
            f" a rule has {', '.join(sorted(_KEYS))}"
        )
    has_match, has_regex = "match" in raw, "regex" in raw
    if has_match == has_regex:
        raise ScriptError(f"{where}: give exactly one of 'match' (a substring) or 'regex'")
    source = raw["match"] if has_match else raw["regex"]
    if not isinstance(source, str):
        raise ScriptError(f"{where}: 'match'/'regex' must be a string")
    try:
        pattern = re.compile(re.escape(source) if has_match else source)
    except re.error as exc:
        raise ScriptError(f"{where}: invalid regex {source!r}: {exc}") from None
    if "reply" not in raw and "tool_calls" not in raw:
        raise ScriptError(f"{where}: give 'reply' (a text), 'tool_calls', or both")
    text = raw.get("reply")
    if text is not None and not isinstance(text, str):
        raise ScriptError(f"{where}: 'reply' must be a string")
    calls = raw.get("tool_calls")
    if calls is not None:
        if not isinstance(calls, list) or not calls:
            raise ScriptError(f"{where}: 'tool_calls' must be a non-empty list")
        for number, call in enumerate(calls, 1):
            name = call.get("name") if isinstance(call, dict) else None
            if not isinstance(name, str) or not name:
                raise ScriptError(
                    f"{where}: tool call {number} must be"
                    ' {"name": "...", "arguments": {...}}'
                )
    role = raw.get("role")
    if role not in (None, "user", "tool"):
        raise ScriptError(f"{where}: 'role' must be 'user' or 'tool'")
    model = raw.get("model")
    logprobs = raw.get("logprobs")
    if logprobs is not None and not (
        isinstance(logprobs, dict)
        and all(
            isinstance(k, str) and isinstance(v, (int, float)) and not isinstance(v, bool)
            for k, v in logprobs.items()
        )
    ):
        raise ScriptError(
            f"{where}: 'logprobs' must map tokens to log probabilities,"
            ' e.g. {"4": -0.1, "3": -2.4}'
        )
    return Rule(
        pattern=pattern,
        reply=Reply(text=text, tool_calls=calls, model=model, logprobs=logprobs),
        role=role,
    )


class Script:
    """A :class:`FakeLLM` handler answering by rules (the module's docstring).

    :param rules: :class:`Rule` objects or rule dicts (``match``/``regex``,
        ``reply``, ``tool_calls``, ``role``, ``model``).
    :param fallback: the reply (or handler) when no rule matches; ``None``: a
        reply ``"OK"``.

    ``FakeLLM(handler=Script([...]))``; :attr:`hits` counts the requests each rule
    answered (and :attr:`misses` those none did).
    """

    def __init__(
        self,
        rules: Iterable[Rule | dict[str, Any]],
        fallback: Reply | str | Callable[[RecordedRequest], Reply | str] | None = None,
    ) -> None:
        self.rules = [
            r if isinstance(r, Rule) else _rule(r, f"rule {n}")
            for n, r in enumerate(rules, 1)
        ]
        self.fallback = fallback
        self.hits = [0] * len(self.rules)
        self.misses = 0

    @classmethod
    def load(
        cls,
        path: str | os.PathLike[str],
        fallback: Reply | str | Callable[[RecordedRequest], Reply | str] | None = None,
    ) -> Script:
        """Read a ``.json`` (a list of rules, or ``{"rules": [...]}``) or
        ``.jsonl`` (one rule per line) script.

        :raises ScriptError: naming the file and line of what is wrong.
        """
        name = os.fspath(path)
        try:
            with open(name, encoding="utf-8") as handle:
                text = handle.read()
        except (OSError, UnicodeDecodeError) as exc:
            raise ScriptError(f"{name}: cannot read the script: {exc}") from None
        rules: list[Rule] = []
        if name.endswith(".jsonl"):
            for number, line in enumerate(text.splitlines(), 1):
                if not line.strip():
                    continue
                try:
                    raw = json.loads(line)
                except ValueError as exc:
                    raise ScriptError(f"{name}:{number}: not JSON: {exc}") from None
                rules.append(_rule(raw, f"{name}:{number}"))
        else:
            try:
                raw = json.loads(text)
            except ValueError as exc:
                line = getattr(exc, "lineno", 1)
                raise ScriptError(f"{name}:{line}: not JSON: {exc}") from None
            if isinstance(raw, dict) and isinstance(raw.get("rules"), list):
                raw = raw["rules"]
            if not isinstance(raw, list):
                raise ScriptError(
                    f"{name}:1: a script is a list of rules (or {{\"rules\": [...]}})"
                )
            rules = [_rule(r, f"{name}: rule {n}") for n, r in enumerate(raw, 1)]
        if not rules:
            raise ScriptError(f"{name}: the script has no rule")
        return cls(rules, fallback)

    def __call__(self, request: RecordedRequest) -> Reply | str:
        role, text = last_prompt(request)
        for number, rule in enumerate(self.rules):
            if rule.answers(role, text):
                self.hits[number] += 1
                base = rule.reply
                return Reply(
                    text=base.text,
                    tool_calls=None if base.tool_calls is None else list(base.tool_calls),
                    model=base.model,
                    logprobs=None if base.logprobs is None else dict(base.logprobs),
                )
        self.misses += 1
        fallback = self.fallback
        if callable(fallback):
            return fallback(request)
        return Reply() if fallback is None else fallback
