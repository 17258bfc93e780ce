"""Call records: what one LLM request of a row sent and got back, bounded.

The HTTP transports (:mod:`pytest_context_bench.transports`) build one record per
LLM call made during a row's System call or its evaluators (the built-in client,
``--ctxbench-proxy``, ``http_client()``), and add it to the call's
:class:`~pytest_context_bench.calls.CallLog`; the engine moves the records onto the
row (``EvalRow.calls``). One record (docs/reports.md, "Call records")::

    {"source": "system" | "evaluator:<name>", "url": ..., "model": ..., "params": {...},
     "repeat": 2 (only for a judge's repeated question, --ctxbench-judge-repeat),
     "messages": [{"role": ..., "text": ...}], "reply": ..., "finish_reason": ...,
     "usage": {...} | None, "latency": seconds, "cache": "hit" | "miss" | "off",
     "attempts": [{"status": 429, "error": ...}, ...], "error": None | "..."}

Never a header; every text goes through :func:`pytest_context_bench.urls.redact`
(registered API keys, ``Bearer`` tokens and credentials in URLs removed) before it is
capped (:func:`clip`); the URL is :func:`~pytest_context_bench.urls.safe_url`'s.
"""

from __future__ import annotations

import contextvars
import hashlib
import json
import time
from typing import Any

from .calls import CallLog, CallScope, current_repeat, current_source
from .tool_use import show_calls
from .urls import redact, safe_url

__all__ = [
    "ATTEMPT_CAP",
    "MESSAGE_CAP",
    "PARAM_CAP",
    "SAMPLING_PARAMS",
    "TEXT_CAP",
    "attempt",
    "begin",
    "clip",
    "fail_latest",
    "finish",
    "forget_latest",
    "message_texts",
    "reply_of",
    "signature",
]

#: Characters of one text (a message, a reply, an error) kept at most: the first
#: and the last half, with the number of characters left out between them.
TEXT_CAP = 4000
#: Messages of one record kept at most (the first quarter and the rest from the
#: end; one placeholder message says how many were left out).
MESSAGE_CAP = 40
#: Characters of all the messages of one record together, at most (each message then
#: gets an equal share, at least :data:`MIN_SHARE`).
RECORD_TEXT_CAP = 16000
MIN_SHARE = 200
#: Attempts of one record kept at most (the first half and the last half).
ATTEMPT_CAP = 10
#: Characters of one sampling parameter's JSON kept at most (a response_format
#: schema); a longer one is kept as its capped JSON text.
PARAM_CAP = 1000

#: The request body fields kept as ``params`` (nothing else of the body is: no
#: user field, no tool definition, no credential a body might carry).
SAMPLING_PARAMS = (
    "temperature",
    "top_p",
    "top_k",
    "min_p",
    "max_tokens",
    "max_completion_tokens",
    "max_output_tokens",
    "n",
    "stop",
    "stop_sequences",
    "seed",
    "presence_penalty",
    "frequency_penalty",
    "repetition_penalty",
    "logprobs",
    "top_logprobs",
    "response_format",
    "reasoning_effort",
    "stream",
)

_PLACEHOLDERS = {
    "image_url": "[image]",
    "image": "[image]",
    "input_image": "[image]",
    "input_audio": "[audio]",
    "audio": "[audio]",
    "file": "[file]",
    "input_file": "[file]",
    "document": "[file]",
    "video_url": "[video]",
}
_TEXT_PARTS = ("text", "input_text", "output_text")
# HTTP statuses a client retries (llm.py's, and the OpenAI SDK's): the same request
# sent again after one of these is an attempt of the same call.
_RETRIED = frozenset({408, 409, 429}) | frozenset(range(500, 600))


def clip(text: str, cap: int = TEXT_CAP) -> str:
    """``text`` redacted, then at most ``cap`` characters of it: the head and the
    tail, ``"<head>… [12,345 characters omitted] …<tail>"``."""
    text = redact(text)
    if len(text) <= cap:
        return text
    head = cap - cap // 2
    tail = cap // 2
    omitted = len(text) - head - tail
    end = text[len(text) - tail :] if tail else ""
    return f"{text[:head]}… [{omitted:,} characters omitted] …{end}"


def _part_text(part: Any) -> str:
    if isinstance(part, str):
        return part
    if not isinstance(part, dict):
        return "[content]"
    kind = str(part.get("type", ""))
    if kind in _TEXT_PARTS and isinstance(part.get("text"), str):
        return str(part["text"])
    if kind in _PLACEHOLDERS:
        return _PLACEHOLDERS[kind]
    if kind == "tool_use":
        shown = show_calls(
            [{"function": {"name": part.get("name"), "arguments": part.get("input")}}]
        )
        return f"[tool call: {shown}]"
    if kind == "tool_result":
        inner = part.get("content")
        return _content_text(inner) if inner is not None else "[tool result]"
    if isinstance(part.get("text"), str):
        return str(part["text"])
    return f"[{kind or 'content'}]"


def _content_text(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(_part_text(p) for p in content)
    return _part_text(content)


def _message(raw: Any) -> dict[str, str]:
    if not isinstance(raw, dict):
        return {"role": "user", "text": _content_text(raw)}
    text = _content_text(raw.get("content"))
    calls = raw.get("tool_calls")
    if isinstance(calls, list) and calls:
        # each call with its arguments (capped): what the model asked for
        text = "\n".join(filter(None, [text, f"[tool call: {show_calls(calls)}]"]))
    elif isinstance(raw.get("function_call"), dict):
        shown = show_calls([{"function": raw["function_call"]}])
        text = "\n".join(filter(None, [text, f"[tool call: {shown}]"]))
    return {"role": str(raw.get("role", "user")), "text": text}


def message_texts(body: Any) -> list[dict[str, str]]:
    """The messages of a request body, as ``{"role", "text"}`` (uncapped): chat
    ``messages`` (an Anthropic ``system`` first), a completion's ``prompt``, an
    embedding's or a Responses API request's ``input``."""
    if not isinstance(body, dict):
        return []
    out: list[dict[str, str]] = []
    system = body.get("system")
    if system is not None:
        out.append({"role": "system", "text": _content_text(system)})
    messages = body.get("messages")
    if isinstance(messages, list):
        out.extend(_message(m) for m in messages)
    for key in ("prompt", "input"):
        value = body.get(key)
        if value is None:
            continue
        if isinstance(value, list) and all(isinstance(v, dict) for v in value):
            out.extend(_message(m) for m in value)
        elif isinstance(value, list):
            out.extend({"role": key, "text": _content_text(v)} for v in value)
        else:
            out.append({"role": key, "text": _content_text(value)})
    return out


def _capped_messages(messages: list[dict[str, str]]) -> list[dict[str, str]]:
    if len(messages) > MESSAGE_CAP:
        first = MESSAGE_CAP // 4
        last = MESSAGE_CAP - first - 1
        left = len(messages) - first - last
        messages = [
            *messages[:first],
            {"role": "omitted", "text": f"[{left:,} messages omitted]"},
            *messages[len(messages) - last :],
        ]
    # The messages of one record share RECORD_TEXT_CAP: past it, each is cut to an
    # equal share (so 40 long messages make 16,000 characters, not 160,000).
    cap = TEXT_CAP
    if sum(min(len(m["text"]), TEXT_CAP) for m in messages) > RECORD_TEXT_CAP:
        cap = max(MIN_SHARE, RECORD_TEXT_CAP // len(messages))
    return [{"role": clip(m["role"], 100), "text": clip(m["text"], cap)} for m in messages]


def _param(value: Any) -> Any:
    try:
        text = json.dumps(value, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError):
        return clip(repr(value), PARAM_CAP)
    if len(text) > PARAM_CAP:
        return clip(text, PARAM_CAP)
    if isinstance(value, str):
        return redact(value)
    return json.loads(text)


def reply_of(data: Any) -> tuple[str | None, str | None]:
    """``(reply text, finish reason)`` of a parsed reply (uncapped): an OpenAI chat
    completion (a tool call or a refusal as a placeholder), a completion, an
    Anthropic message, a Responses API reply, embeddings (``"[3 embeddings]"``)."""
    if not isinstance(data, dict):
        return None, None
    choices = data.get("choices")
    if isinstance(choices, list) and choices and isinstance(choices[0], dict):
        choice = choices[0]
        finish = choice.get("finish_reason")
        finish = None if finish is None else str(finish)
        message = choice.get("message")
        if isinstance(message, dict):
            text = _content_text(message.get("content"))
            refusal = message.get("refusal")
            if isinstance(refusal, str) and refusal:
                text = "\n".join(filter(None, [text, f"[refusal] {refusal}"]))
            m = _message(
                {
                    "content": text,
                    "tool_calls": message.get("tool_calls"),
                    "function_call": message.get("function_call"),
                }
            )
            return m["text"], finish
        if isinstance(choice.get("text"), str):
            return str(choice["text"]), finish
        return None, finish
    content = data.get("content")
    if isinstance(content, list) and data.get("type") == "message":
        stop = data.get("stop_reason")
        return _content_text(content), None if stop is None else str(stop)
    output = data.get("output")
    if isinstance(output, list):
        texts = [
            _content_text(o.get("content"))
            for o in output
            if isinstance(o, dict) and o.get("type") == "message"
        ]
        status = data.get("status")
        return "\n".join(texts), None if status is None else str(status)
    vectors = data.get("data")
    if isinstance(vectors, list) and data.get("object") == "list":
        return f"[{len(vectors)} embedding{'s' if len(vectors) != 1 else ''}]", None
    return None, None


def signature(method: str, url: str, canonical: bytes | None) -> str:
    """What makes two requests the same request (a retry of it)."""
    h = hashlib.sha256(f"{method} {url}\n".encode())
    h.update(canonical or b"")
    return h.hexdigest()


def begin(
    scope: CallScope, method: str, url: str, canonical: bytes | None, parsed: Any
) -> dict[str, Any]:
    """The record of a request about to be answered, added to ``scope``'s log; a
    retry of a request whose last attempt failed gets that request's record."""
    log: CallLog = scope.log
    sig = signature(method, url, canonical)
    record = log.reopen(sig)
    if record is not None:
        _LATEST.set(record)
        return record
    body = parsed if isinstance(parsed, dict) else {}
    model = body.get("model")
    record = {
        "source": current_source(),
        "url": clip(safe_url(url), 500),
        "model": clip(model, 200) if isinstance(model, str) else None,
        "params": {k: _param(body[k]) for k in SAMPLING_PARAMS if k in body},
        "messages": _capped_messages(message_texts(body)),
        "reply": None,
        "finish_reason": None,
        "usage": None,
        "latency": 0.0,
        "cache": "off",
        "attempts": [],
        "error": None,
        "_t0": time.monotonic(),
        "_sig": sig,
        "_log": log,
    }
    repeat = current_repeat()
    if repeat > 1:  # a judge's question asked again (--ctxbench-judge-repeat)
        record["repeat"] = repeat
    log.add(record)
    _LATEST.set(record)
    return record


def attempt(
    record: dict[str, Any],
    status: int | None,
    *,
    error: str | None = None,
    cache: str = "off",
    data: Any = None,
    usage: dict[str, Any] | None = None,
    streamed: bool = False,
    final: bool = False,
) -> None:
    """Add one attempt's outcome to ``record``: its HTTP status (``None``: no
    response), its error, and for a 2xx reply its text, finish reason and usage.
    A failed attempt that a client retries (no response, HTTP 408, 409, 429, 5xx)
    leaves the record open: the same request sent again is its next attempt;
    ``final``: it will not be retried (a replay-mode cache miss)."""
    ok = status is not None and 200 <= status < 300 and error is None
    if error is None and status is not None and not ok:
        error = f"HTTP {status}"
    attempts: list[dict[str, Any]] = record["attempts"]
    entry = {"status": status, "error": None if error is None else clip(error, 500)}
    if len(attempts) >= ATTEMPT_CAP:
        # the first half stay; the last half move on
        record["attempts_omitted"] = record.get("attempts_omitted", 0) + 1
        del attempts[ATTEMPT_CAP - ATTEMPT_CAP // 2]
    attempts.append(entry)
    record["cache"] = cache if cache in ("hit", "miss") else "off"
    record["latency"] = max(0.0, time.monotonic() - float(record["_t0"]))
    if ok:
        text, finish = reply_of(data)
        record["reply"] = None if text is None else clip(text)
        if streamed and text is None:
            record["reply"] = "[streamed reply, not recorded]"
        record["finish_reason"] = None if finish is None else clip(finish, 100)
        record["usage"] = _usage(usage)
        record["error"] = None
    else:
        record["error"] = entry["error"]
    retried = not final and (status is None or status in _RETRIED)
    log: CallLog = record["_log"]
    log.set_open(str(record["_sig"]), record, failed=not ok and retried)


def finish(record: dict[str, Any], error: str) -> None:
    """The call failed for good with ``error`` (a client's last word on it): a
    request sent later is another call, even when it is the same request."""
    record["error"] = clip(error, 1000)
    log: CallLog = record["_log"]
    log.set_open(str(record["_sig"]), record, failed=False)


def _usage(usage: dict[str, Any] | None) -> dict[str, int] | None:
    if not usage:
        return None
    out = {
        k: int(usage[k])
        for k in ("prompt_tokens", "completion_tokens")
        if isinstance(usage.get(k), int)
    }
    if usage.get("cached_tokens"):
        out["cached_tokens"] = int(usage["cached_tokens"])
    return out or None


# The record of the latest request made in this context: a client that fails a
# call after its last attempt (a reply without text) says why on it.
_LATEST: contextvars.ContextVar[dict[str, Any] | None] = contextvars.ContextVar(
    "ctxbench_latest_record", default=None
)


def forget_latest() -> None:
    """A client call starts: no record is its own yet."""
    if _LATEST.get() is not None:
        _LATEST.set(None)


def fail_latest(error: str) -> None:
    """The client call in progress in this context failed for good with ``error``:
    said on the record of its latest request (no-op when it made none)."""
    record = _LATEST.get()
    if record is not None:
        finish(record, error)
