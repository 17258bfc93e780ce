"""A scriptable OpenAI- and Anthropic-compatible HTTP server on 127.0.0.1, for tests.

:class:`FakeLLM` serves ``POST /chat/completions``, ``POST /embeddings`` and
Anthropic's ``POST /messages``, with or without a ``/v1`` prefix, from a thread of the
test process. A chat or messages request with ``"stream": true`` is answered as the
real APIs stream (server-sent events: OpenAI's ``chat.completion.chunk`` objects
ending in ``data: [DONE]``, with a last usage chunk only when the request asks for it
with ``stream_options.include_usage``; Anthropic's ``message_start`` ...
``message_stop`` events). Each request takes the next :class:`Reply` of a queue, or
asks a handler callable, or falls back to a default reply; every request is
recorded. A reply can be a text, an HTTP status, a delay, a dropped connection, an
invalid JSON body or a ``Retry-After`` header, which covers the failures a real
endpoint shows in CI.

``python -m pytest_context_bench.testing --port 8000`` serves one from the command
line (:mod:`pytest_context_bench.testing.__main__`, docs/llm.md).

::

    with FakeLLM(["4"]) as llm:
        client = LLMClient(llm.base_url)
        client.chat([{"role": "user", "content": "hi"}], model="m").text  # "4"

A request body larger than ``max_body`` bytes (64 MiB by default) is answered
``413`` without being read into memory, and a body that is not JSON (or JSON nested
too deeply to parse) ``400``; neither is recorded nor takes a reply.

Pure standard library (and the package's own ``_text``); it never imports pytest.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import socket
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

from .._text import inert

__all__ = ["MAX_BODY", "FakeLLM", "RecordedRequest", "Reply", "fake_embedding", "fake_tokens"]

#: the largest request body the server reads (bytes); a larger one is answered 413.
MAX_BODY = 64 * 1024 * 1024


@dataclass
class Reply:
    """What the server does with one request.

    :param text: the assistant text of a chat reply (for an error status, the error
        message put in the JSON error body).
    :param status: the HTTP status code.
    :param delay: seconds to wait before answering (a read timeout in the client when
        longer than its timeout).
    :param drop: close the connection without sending anything.
    :param body: a raw body sent as is instead of the generated JSON (e.g. ``"{oops"``
        for invalid JSON).
    :param json_body: a JSON value sent instead of the generated one (a wrong shape).
    :param retry_after: the ``Retry-After`` header value (seconds, or an HTTP date).
    :param headers: further response headers.
    :param usage: the ``usage`` object of a chat reply; ``None`` gives counts made up
        from word counts, ``{}`` omits it.
    :param embeddings: the vectors of an embeddings reply; ``None`` gives
        :func:`fake_embedding` of each input.
    :param chunks: the pieces a streamed reply sends its text in, one event each;
        ``None``: word by word (each word with the space before it).
    :param stream_cut: a streamed reply drops the connection after this many events
        (a stream broken off midway); ``None``: the whole stream.
    :param model: the ``model`` a chat or messages reply names; ``None``: the one
        the request asked for (a reply naming another model: a proxy's fallback).
    :param cut_cleanly: with ``stream_cut``, the reply is a body that ends when the
        connection closes (no ``Content-Length``, not chunked: as HTTP/1.0 servers
        and some proxies send it), closed cleanly after the cut: HTTP sees a whole
        reply, only its last events are missing (a network or proxy cut that no
        HTTP error shows).
    :param tool_calls: the tool calls the reply makes, each ``{"name": ...,
        "arguments": {...}}`` (``arguments`` a JSON value, or a string sent as is,
        JSON or not) or already in OpenAI's shape (``{"id", "type": "function",
        "function": {"name", "arguments"}}``). A chat reply carries them as
        ``message.tool_calls`` (ids ``call_0``, ``call_1``... unless given;
        ``finish_reason`` ``"tool_calls"``; streamed as tool-call deltas), an
        Anthropic one as ``tool_use`` blocks. ``text`` then defaults to ``""``
        (``content: null``); a text given is sent alongside.
    :param logprobs: the token probabilities a chat reply sends when the request
        asks for them (``"logprobs": true``), as OpenAI sends them
        (``choices[0].logprobs.content``: one ``{token, logprob, top_logprobs}`` per
        token). A mapping ``{"4": -0.1, "3": -2.4}`` gives the alternatives (and
        their log probabilities) at the reply's first number token, every other
        token certain (the text is cut into tokens: a digit, a word, a space, a
        character; :func:`fake_tokens`); a list is sent as the ``content`` as it is
        (a malformed one, for tests). ``None``: none are sent.
    """

    text: str = None  # type: ignore[assignment]  # "OK", or "" with tool_calls
    status: int = 200
    delay: float = 0.0
    drop: bool = False
    body: str | bytes | None = None
    json_body: Any = None
    retry_after: str | float | None = None
    headers: dict[str, str] = field(default_factory=dict)
    usage: dict[str, int] | None = None
    embeddings: list[list[float]] | None = None
    chunks: list[str] | None = None
    stream_cut: int | None = None
    model: str | None = None
    cut_cleanly: bool = False
    tool_calls: list[dict[str, Any]] | None = None
    logprobs: dict[str, float] | list[Any] | None = None

    def __post_init__(self) -> None:
        if self.text is None:
            self.text = "" if self.tool_calls else "OK"

    def wire_calls(self) -> list[dict[str, Any]]:
        """:attr:`tool_calls` in OpenAI's shape (``[]``: none)."""
        out: list[dict[str, Any]] = []
        for number, call in enumerate(self.tool_calls or ()):
            call = call if isinstance(call, dict) else {}
            function = call.get("function") if isinstance(call.get("function"), dict) else call
            arguments = function.get("arguments", {})
            if not isinstance(arguments, str):
                arguments = json.dumps(arguments, ensure_ascii=False)
            out.append(
                {
                    "id": str(call.get("id") or f"call_{number}"),
                    "type": "function",
                    "function": {"name": str(function.get("name", "")), "arguments": arguments},
                }
            )
        return out


@dataclass
class RecordedRequest:
    """One request the server received.

    :param method: the HTTP method.
    :param path: the request path (``/v1/chat/completions``).
    :param headers: the request headers, names lower-cased.
    :param json: the parsed JSON body, or ``None`` when it was not JSON.
    :param client_port: the client's source port (one per pooled connection).
    :param query: the query string, without ``?`` (``""`` when there is none).
    """

    method: str
    path: str
    headers: dict[str, str]
    json: Any
    client_port: int
    query: str = ""

    @property
    def messages(self) -> list[dict[str, Any]]:
        """The ``messages`` of a chat request (``[]`` otherwise)."""
        if isinstance(self.json, dict) and isinstance(self.json.get("messages"), list):
            return list(self.json["messages"])
        return []


#: what a handler or the queue may hold: a Reply, or a bare string (a 200 text reply).
ReplyLike = Reply | str
Handler = Callable[[RecordedRequest], ReplyLike]

_CHAT_PATHS = ("/chat/completions", "/v1/chat/completions")
_EMBED_PATHS = ("/embeddings", "/v1/embeddings")
_MESSAGES_PATHS = ("/messages", "/v1/messages")
_MODELS_PATHS = ("/models", "/v1/models")


def fake_embedding(text: str, dim: int = 64) -> list[float]:
    """A deterministic unit vector for ``text``: a hashed bag of lower-cased words.

    Equal texts give cosine 1.0, texts without a common word give 0.0.

    :param text: the text to embed.
    :param dim: the vector length.
    """
    vec = [0.0] * dim
    for word in text.lower().split():
        digest = hashlib.sha256(word.encode("utf-8")).digest()
        vec[int.from_bytes(digest[:4], "big") % dim] += 1.0
    norm = math.sqrt(sum(v * v for v in vec))
    if norm == 0.0:
        # An empty text still gets a valid (non-zero) vector.
        vec[0] = 1.0
        return vec
    return [v / norm for v in vec]


class _Server(ThreadingHTTPServer):
    # The default listen backlog (5) resets connections when many clients connect
    # at once (a run with --ctxbench-concurrency=16).
    request_queue_size = 128


class FakeLLM:
    """An OpenAI-compatible server on ``127.0.0.1`` driven by a script.

    :param replies: replies served in order, one per request (a ``str`` is a 200 chat
        reply with that text).
    :param handler: called with each :class:`RecordedRequest` once the queue is empty;
        returns a :class:`Reply` or a text.
    :param default: the reply when the queue is empty and there is no handler.
    :param port: the port to listen on (``0``, the default: a free one).
    :param latency: seconds added to every reply's delay (a slow endpoint).
    :param log: called with one line per request served (method, path, model,
        whether streamed, status), e.g. ``print``; ``None``: no log. The path and
        the model are the client's: their control characters are shown escaped
        (``\\x1b``).
    :param max_body: the largest request body read, in bytes (default
        :data:`MAX_BODY`, 64 MiB); a larger one is answered ``413`` unread.
    :param models: the models ``GET /v1/models`` lists (OpenAI's list), default
        ``("fake",)``: a run given no ``--ctxbench-model`` sends the only one.
        That request takes no reply from the queue and is not in :attr:`requests`;
        :attr:`model_listings` counts it.

    Use it as a context manager (or call :meth:`start` and :meth:`stop`).
    :attr:`base_url` is ``http://127.0.0.1:PORT`` and :attr:`url_v1` the same with
    ``/v1``; :attr:`requests` lists what was received; :attr:`max_in_flight` is the
    largest number of requests served at the same time.
    """

    def __init__(
        self,
        replies: Iterable[ReplyLike] = (),
        *,
        handler: Handler | None = None,
        default: ReplyLike = "OK",
        port: int = 0,
        latency: float = 0.0,
        log: Callable[[str], Any] | None = None,
        max_body: int = MAX_BODY,
        models: Iterable[str] = ("fake",),
    ) -> None:
        if not (isinstance(max_body, int) and max_body >= 0):
            raise ValueError(f"max_body must be a number of bytes >= 0, got {max_body!r}.")
        if not (isinstance(port, int) and 0 <= port <= 65535):
            raise ValueError(f"port must be an integer in 0..65535, got {port!r}.")
        if not (isinstance(latency, (int, float)) and 0 <= latency < math.inf):
            raise ValueError(f"latency must be a number of seconds >= 0, got {latency!r}.")
        self._port = port
        self.latency = float(latency)
        self._log = log
        self.max_body = max_body
        self._queue: deque[ReplyLike] = deque(replies)
        self._handler = handler
        self._default = default
        self._lock = threading.Lock()
        self.requests: list[RecordedRequest] = []
        self.max_in_flight = 0
        self._in_flight = 0
        self.models = [str(m) for m in models]
        #: GET /v1/models requests answered
        self.model_listings = 0
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- scripting -------------------------------------------------------------------
    def push(self, *replies: ReplyLike) -> None:
        """Append replies to the queue.

        :param replies: replies served after those already queued.
        """
        with self._lock:
            self._queue.extend(replies)

    def set_handler(self, handler: Handler | None) -> None:
        """Replace the handler used once the queue is empty.

        :param handler: the new handler, or ``None`` for the default reply.
        """
        with self._lock:
            self._handler = handler

    @property
    def port(self) -> int:
        """The port the server listens on (it must be started)."""
        if self._server is None:
            raise RuntimeError("FakeLLM is not started; use it in a with block.")
        return int(self._server.server_address[1])

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT``, without ``/v1``."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def url_v1(self) -> str:
        """``http://127.0.0.1:PORT/v1``."""
        return self.base_url + "/v1"

    # -- lifecycle -------------------------------------------------------------------
    def start(self) -> FakeLLM:
        """Start serving in a daemon thread; returns ``self``."""
        if self._server is not None:
            return self
        server = _Server(("127.0.0.1", self._port), _make_handler(self))
        # A handler sleeping through a long delay must not hold up stop().
        server.daemon_threads = True
        server.block_on_close = False
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and close the listening socket."""
        server, self._server = self._server, None
        if server is not None:
            server.shutdown()
            server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> FakeLLM:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    # -- used by the request handler ---------------------------------------------------
    def _next_reply(self, request: RecordedRequest) -> Reply:
        with self._lock:
            self.requests.append(request)
            self._in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self._in_flight)
            if self._queue:
                item: ReplyLike = self._queue.popleft()
                handler = None
            else:
                item = self._default
                handler = self._handler
        if handler is not None:
            item = handler(request)
        return Reply(text=item) if isinstance(item, str) else item

    def _done(self) -> None:
        with self._lock:
            self._in_flight -= 1

    def _logged(self, request: RecordedRequest, status: int, events: int) -> None:
        if self._log is None:
            return
        body = request.json if isinstance(request.json, dict) else {}
        model = body.get("model")
        # The path and the model are the client's: shown, never acted on.
        line = f"{request.method} {inert(request.path)}"
        if model is not None:
            line += f" model={inert(str(model))}"
        if body.get("stream"):
            line += f" stream ({events} events)"
        self._log(f"{line} -> {status or 'dropped'}")

    def _refused(self, method: str, path: str, status: int, why: str) -> None:
        if self._log is not None:
            self._log(f"{method} {inert(path)} -> {status} ({why})")


def _chat_body(reply: Reply, request: RecordedRequest) -> dict[str, Any]:
    usage = reply.usage
    if usage is None:
        prompt = sum(
            len(str(m.get("content", "")).split())
            for m in request.messages
            if isinstance(m, dict)
        )
        completion = _completion_words(reply)
        usage = {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        }
    message: dict[str, Any] = {"role": "assistant", "content": reply.text}
    calls = reply.wire_calls()
    if calls:
        message["content"] = reply.text or None
        message["tool_calls"] = calls
    body: dict[str, Any] = {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": _model(request, reply),
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": "tool_calls" if calls else "stop",
            }
        ],
    }
    if usage:
        body["usage"] = usage
    asked = isinstance(request.json, dict) and request.json.get("logprobs") is True
    if asked and reply.logprobs is not None:
        content = (
            reply.logprobs
            if isinstance(reply.logprobs, list)
            else _token_logprobs(reply.text or "", reply.logprobs)
        )
        body["choices"][0]["logprobs"] = {"content": content}
    return body


_TOKEN = re.compile(r" ?[0-9]| ?[^\W\d_]+|\s|[\s\S]")


def fake_tokens(text: str) -> list[str]:
    """``text`` cut into the fake's tokens (a digit with the space before it, a word
    with the space before it, a space, any other character); they join back into
    ``text``."""
    return _TOKEN.findall(text)


def _token_logprobs(text: str, alternatives: dict[str, float]) -> list[dict[str, Any]]:
    """OpenAI's ``logprobs.content`` for ``text``: every token certain but the first
    number token, whose alternatives are ``alternatives``."""
    out: list[dict[str, Any]] = []
    placed = False
    for token in fake_tokens(text):
        if not placed and token.strip().isdigit():
            placed = True
            # An alternative is the same token with another digit: the same space
            # before it, as a real tokenizer's alternatives are.
            space = token[: len(token) - len(token.lstrip())]
            own = alternatives.get(token.strip(), alternatives.get(token, 0.0))
            tops = [{"token": space + t.lstrip(), "logprob": lp} for t, lp in alternatives.items()]
            out.append({"token": token, "logprob": own, "top_logprobs": tops})
        else:
            out.append({"token": token, "logprob": 0.0,
                        "top_logprobs": [{"token": token, "logprob": 0.0}]})
    return out


def _usage_counts(reply: Reply, request: RecordedRequest) -> tuple[int, int]:
    """(prompt, completion) made up from word counts (the fake's "tokens")."""
    body = request.json if isinstance(request.json, dict) else {}
    prompt = sum(
        len(str(m.get("content", "")).split())
        for m in request.messages
        if isinstance(m, dict)
    ) + len(str(body.get("system") or "").split())
    return prompt, _completion_words(reply)


def _completion_words(reply: Reply) -> int:
    """The reply's "tokens": the words of its text and of its calls' arguments."""
    calls = reply.wire_calls()
    return len(reply.text.split()) + sum(
        1 + len(c["function"]["arguments"].split()) for c in calls
    )


def _halves(text: str) -> list[str]:
    """``text`` in two pieces (a streamed call's arguments arrive in parts)."""
    middle = len(text) // 2
    return [p for p in (text[:middle], text[middle:]) if p] or [""]


def _model(request: RecordedRequest, reply: Reply | None = None) -> Any:
    if reply is not None and reply.model is not None:
        return reply.model
    if isinstance(request.json, dict):
        return request.json.get("model", "fake")
    return "fake"


def _pieces(reply: Reply) -> list[str]:
    if reply.chunks is not None:
        return list(reply.chunks)
    words = reply.text.split(" ")
    return [w if i == 0 else " " + w for i, w in enumerate(words)] if reply.text else []


def _sse(data: Any, event: str | None = None) -> bytes:
    head = f"event: {event}\n" if event else ""
    text = data if isinstance(data, str) else json.dumps(data)
    return f"{head}data: {text}\n\n".encode()


def _chat_stream(reply: Reply, request: RecordedRequest) -> list[bytes]:
    """OpenAI's ``chat.completion.chunk`` events for a streamed chat reply."""
    base = {
        "id": "chatcmpl-fake",
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": _model(request, reply),
    }

    def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
        choice = {"index": 0, "delta": delta, "finish_reason": finish}
        return _sse({**base, "choices": [choice]})

    events = [chunk({"role": "assistant", "content": ""})]
    events += [chunk({"content": piece}) for piece in _pieces(reply)]
    calls = reply.wire_calls()
    for index, call in enumerate(calls):
        head = {
            "index": index,
            "id": call["id"],
            "type": "function",
            "function": {"name": call["function"]["name"], "arguments": ""},
        }
        events.append(chunk({"tool_calls": [head]}))
        events += [
            chunk({"tool_calls": [{"index": index, "function": {"arguments": part}}]})
            for part in _halves(call["function"]["arguments"])
        ]
    events.append(chunk({}, "tool_calls" if calls else "stop"))
    body = request.json if isinstance(request.json, dict) else {}
    options = body.get("stream_options")
    if isinstance(options, dict) and options.get("include_usage"):
        usage = reply.usage
        if usage is None:
            prompt, completion = _usage_counts(reply, request)
            usage = {
                "prompt_tokens": prompt,
                "completion_tokens": completion,
                "total_tokens": prompt + completion,
            }
        if usage:
            events.append(_sse({**base, "choices": [], "usage": usage}))
    events.append(_sse("[DONE]"))
    return events


def _anthropic_usage(reply: Reply, request: RecordedRequest) -> dict[str, Any]:
    if reply.usage is not None:
        return dict(reply.usage)
    prompt, completion = _usage_counts(reply, request)
    return {
        "input_tokens": prompt,
        "output_tokens": completion,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
    }


def _messages_body(reply: Reply, request: RecordedRequest) -> dict[str, Any]:
    """An Anthropic ``/v1/messages`` reply."""
    body: dict[str, Any] = {
        "id": "msg_fake",
        "type": "message",
        "role": "assistant",
        "model": _model(request, reply),
        "content": [{"type": "text", "text": reply.text}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
    }
    calls = reply.wire_calls()
    if calls:
        blocks = [{"type": "text", "text": reply.text}] if reply.text else []
        blocks += [
            {
                "type": "tool_use",
                "id": call["id"].replace("call_", "toolu_", 1),
                "name": call["function"]["name"],
                "input": _input_of(call["function"]["arguments"]),
            }
            for call in calls
        ]
        body["content"] = blocks
        body["stop_reason"] = "tool_use"
    usage = _anthropic_usage(reply, request)
    if usage:
        body["usage"] = usage
    return body


def _input_of(arguments: str) -> Any:
    """A call's arguments as Anthropic's ``input`` (an object; text that is not
    JSON is kept under ``"_raw"``)."""
    try:
        value = json.loads(arguments)
    except ValueError:
        return {"_raw": arguments}
    return value if isinstance(value, dict) else {"_raw": value}


def _messages_stream(reply: Reply, request: RecordedRequest) -> list[bytes]:
    """Anthropic's streamed ``/v1/messages`` events."""
    usage = _anthropic_usage(reply, request)
    start_usage = {k: v for k, v in usage.items() if k != "output_tokens"}
    message = {**_messages_body(reply, request), "content": [], "stop_reason": None}
    message["usage"] = {**start_usage, "output_tokens": 1} if usage else {}
    events = [
        _sse({"type": "message_start", "message": message}, "message_start"),
        _sse(
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "text", "text": ""},
            },
            "content_block_start",
        ),
        _sse({"type": "ping"}, "ping"),
    ]
    for piece in _pieces(reply):
        delta = {"type": "text_delta", "text": piece}
        events.append(
            _sse(
                {"type": "content_block_delta", "index": 0, "delta": delta},
                "content_block_delta",
            )
        )
    events.append(
        _sse({"type": "content_block_stop", "index": 0}, "content_block_stop")
    )
    calls = reply.wire_calls()
    for index, call in enumerate(calls, 1):
        block = {
            "type": "tool_use",
            "id": call["id"].replace("call_", "toolu_", 1),
            "name": call["function"]["name"],
            "input": {},
        }
        events.append(
            _sse(
                {"type": "content_block_start", "index": index, "content_block": block},
                "content_block_start",
            )
        )
        for part in _halves(json.dumps(_input_of(call["function"]["arguments"]))):
            delta = {"type": "input_json_delta", "partial_json": part}
            events.append(
                _sse(
                    {"type": "content_block_delta", "index": index, "delta": delta},
                    "content_block_delta",
                )
            )
        events.append(
            _sse({"type": "content_block_stop", "index": index}, "content_block_stop")
        )
    end: dict[str, Any] = {
        "type": "message_delta",
        "delta": {
            "stop_reason": "tool_use" if calls else "end_turn",
            "stop_sequence": None,
        },
    }
    if usage:
        end["usage"] = {"output_tokens": usage.get("output_tokens", 0)}
    events.append(_sse(end, "message_delta"))
    events.append(_sse({"type": "message_stop"}, "message_stop"))
    return events


def _embed_body(reply: Reply, request: RecordedRequest) -> dict[str, Any]:
    vectors = reply.embeddings
    if vectors is None:
        raw = request.json.get("input", []) if isinstance(request.json, dict) else []
        texts = [raw] if isinstance(raw, str) else [str(t) for t in raw]
        vectors = [fake_embedding(t) for t in texts]
    return {
        "object": "list",
        "data": [
            {"object": "embedding", "index": i, "embedding": v}
            for i, v in enumerate(vectors)
        ],
        "model": "fake-embedding",
        "usage": {"prompt_tokens": 0, "total_tokens": 0},
    }


def _make_handler(owner: FakeLLM) -> type[BaseHTTPRequestHandler]:
    class _Handler(BaseHTTPRequestHandler):
        # HTTP/1.1 keeps connections alive, so a client's pool is really reused.
        protocol_version = "HTTP/1.1"
        # Headers and body go out in separate writes: without TCP_NODELAY, Nagle's
        # algorithm and the client's delayed ACK add ~40 ms to every reply.
        disable_nagle_algorithm = True

        def log_message(self, format: str, *args: Any) -> None:
            return  # keep test output clean

        def do_GET(self) -> None:
            self._serve()

        def do_POST(self) -> None:
            self._serve()

        def _serve(self) -> None:
            path, _, query = self.path.partition("?")
            raw = self._body(path)
            if raw is None:
                return  # refused (413, 400, 411): answered and logged
            try:
                parsed: Any = json.loads(raw) if raw else None
            except (ValueError, RecursionError) as exc:
                # Not JSON, not UTF-8, or nested too deeply for Python's parser
                why = (
                    "nested too deeply to parse"
                    if isinstance(exc, RecursionError)
                    else "not JSON"
                )
                self._refuse(path, 400, f"the request body is {why}", close=False)
                return
            if self.command == "GET" and path in _MODELS_PATHS:
                self._list_models()
                return
            request = RecordedRequest(
                method=self.command,
                path=path,
                headers={k.lower(): v for k, v in self.headers.items()},
                json=parsed,
                client_port=int(self.client_address[1]),
                query=query,
            )
            reply = owner._next_reply(request)
            self._counted = True
            try:
                self._answer(reply, request)
            except OSError:
                pass  # the client gave up (its timeout); nothing to do
            finally:
                self._finish()

        def _list_models(self) -> None:
            with owner._lock:
                owner.model_listings += 1
            payload = json.dumps(
                {
                    "object": "list",
                    "data": [
                        {"id": m, "object": "model", "created": 0, "owned_by": "fake"}
                        for m in owner.models
                    ],
                }
            ).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)
            if owner._log is not None:
                owner._log(f"GET /v1/models 200 ({len(owner.models)} model(s))")

        def _body(self, path: str) -> bytes | None:
            """The request body, or ``None`` once a bad one is answered: 411 for
            a body of unknown length (chunked), 400 for a bad Content-Length, 413
            for one larger than ``max_body`` (read and dropped in pieces when it
            is not much larger, so that the client reads the answer; else the
            connection is closed)."""
            if self.headers.get("Transfer-Encoding"):
                self._refuse(path, 411, "a body without Content-Length is not read")
                return None
            given = self.headers.get("Content-Length") or "0"
            try:
                length = int(given)
            except ValueError:
                length = -1
            if length < 0:
                self._refuse(path, 400, f"bad Content-Length {given[:40]!r}")
                return None
            if length > owner.max_body:
                if length <= 16 * max(owner.max_body, 1 << 20):
                    left = length
                    while left > 0:
                        piece = self.rfile.read(min(left, 1 << 16))
                        if not piece:
                            break
                        left -= len(piece)
                self._refuse(
                    path,
                    413,
                    f"the request body of {length:,} bytes is over the limit of"
                    f" {owner.max_body:,} bytes",
                )
                return None
            return self.rfile.read(length) if length else b""

        def _refuse(
            self, path: str, status: int, why: str, close: bool = True
        ) -> None:
            """Answer a request the server will not read or parse, and log it;
            ``close``: its body was not read (whole), so the connection cannot
            carry another request."""
            payload = json.dumps(
                {"error": {"message": why, "type": "invalid_request_error"}}
            ).encode()
            self.close_connection = close
            try:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                if self.close_connection:
                    self.send_header("Connection", "close")
                self.end_headers()
                self.wfile.write(payload)
                self.wfile.flush()
            except OSError:
                pass  # the client is gone
            owner._refused(self.command, path, status, why)

        def _finish(self) -> None:
            # Once, just before the reply goes out: a client that has its reply may
            # send its next request at once, and must not find this one still counted.
            if self._counted:
                self._counted = False
                owner._done()

        def _answer(self, reply: Reply, request: RecordedRequest) -> None:
            delay = reply.delay + owner.latency
            if delay > 0:
                time.sleep(delay)
            if reply.drop:
                self.close_connection = True
                self.connection.shutdown(socket.SHUT_RDWR)
                owner._logged(request, 0, 0)
                return
            streamed = (
                isinstance(request.json, dict)
                and request.json.get("stream") is True
                and request.method == "POST"
                and request.path in _CHAT_PATHS + _MESSAGES_PATHS
                and reply.body is None
                and reply.json_body is None
                and reply.status < 400
            )
            if streamed:
                self._stream(reply, request)
                return
            if (
                request.method != "POST"
                or request.path not in _CHAT_PATHS + _EMBED_PATHS + _MESSAGES_PATHS
            ):
                status = 404
                payload: bytes = json.dumps(
                    {
                        "error": {
                            "message": f"no route {request.path}",
                            "type": "not_found",
                        }
                    }
                ).encode()
            elif reply.body is not None:
                status = reply.status
                payload = (
                    reply.body.encode() if isinstance(reply.body, str) else reply.body
                )
            elif reply.json_body is not None:
                status = reply.status
                payload = json.dumps(reply.json_body).encode()
            elif reply.status >= 400:
                status = reply.status
                payload = json.dumps(
                    {"error": {"message": reply.text, "type": "fake_error"}}
                ).encode()
            elif request.path in _EMBED_PATHS:
                status = reply.status
                payload = json.dumps(_embed_body(reply, request)).encode()
            elif request.path in _MESSAGES_PATHS:
                status = reply.status
                payload = json.dumps(_messages_body(reply, request)).encode()
            else:
                status = reply.status
                payload = json.dumps(_chat_body(reply, request)).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            if reply.retry_after is not None:
                self.send_header("Retry-After", str(reply.retry_after))
            for name, value in reply.headers.items():
                self.send_header(name, value)
            self._finish()
            self.end_headers()
            self.wfile.write(payload)
            self.wfile.flush()
            owner._logged(request, status, 0)

        def _stream(self, reply: Reply, request: RecordedRequest) -> None:
            """Server-sent events, one HTTP chunk per event."""
            if request.path in _MESSAGES_PATHS:
                events = _messages_stream(reply, request)
            else:
                events = _chat_stream(reply, request)
            clean = reply.cut_cleanly and reply.stream_cut is not None
            self.send_response(reply.status)
            self.send_header("Content-Type", "text/event-stream; charset=utf-8")
            self.send_header("Cache-Control", "no-cache")
            if clean:
                # The body ends when the connection closes: nothing tells the client
                # that events are missing but the events themselves.
                self.send_header("Connection", "close")
            else:
                self.send_header("Transfer-Encoding", "chunked")
            for name, value in reply.headers.items():
                self.send_header(name, value)
            self._finish()
            self.end_headers()
            if clean:
                self.close_connection = True
                for event in events[: reply.stream_cut]:
                    self.wfile.write(event)
                self.wfile.flush()
                self.connection.shutdown(socket.SHUT_WR)
                owner._logged(request, reply.status, min(len(events), reply.stream_cut))
                return
            for number, event in enumerate(events):
                if reply.stream_cut is not None and number >= reply.stream_cut:
                    # Broken off: no terminating chunk, the connection dropped.
                    self.wfile.flush()
                    self.close_connection = True
                    self.connection.shutdown(socket.SHUT_RDWR)
                    owner._logged(request, reply.status, number)
                    return
                self.wfile.write(b"%x\r\n%s\r\n" % (len(event), event))
                self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
            owner._logged(request, reply.status, len(events))

    return _Handler
