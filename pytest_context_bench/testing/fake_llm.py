"""A scriptable OpenAI-compatible HTTP server on 127.0.0.1, for tests.

:class:`FakeLLM` serves ``POST /chat/completions`` and ``POST /embeddings``, with or
without a ``/v1`` prefix, from a thread of the test process. Each request takes the
next :class:`Reply` of a queue, or asks a handler callable, or falls back to a default
reply; every request is recorded. A reply can be a text, an HTTP status, a delay, a
dropped connection, an invalid JSON body or a ``Retry-After`` header, which covers the
failures a real endpoint shows in CI.

::

    with FakeLLM(["4"]) as llm:
        client = LLMClient(llm.base_url)
        client.chat([{"role": "user", "content": "hi"}], model="m").text  # "4"

Pure standard library; it never imports pytest.
"""

from __future__ import annotations

import hashlib
import json
import math
import socket
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

__all__ = ["FakeLLM", "RecordedRequest", "Reply", "fake_embedding"]


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
    """

    text: str = "OK"
    status: int = 200
    delay: float = 0.0
    drop: bool = False
    body: str | bytes | None = None
    json_body: Any = None
    retry_after: str | float | None = None
    headers: dict[str, str] = field(default_factory=dict)
    usage: dict[str, int] | None = None
    embeddings: list[list[float]] | None = None


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
    ) -> None:
        self._queue: deque[ReplyLike] = deque(replies)
        self._handler = handler
        self._default = default
        self._lock = threading.Lock()
        self.requests: list[RecordedRequest] = []
        self.max_in_flight = 0
        self._in_flight = 0
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
        server = _Server(("127.0.0.1", 0), _make_handler(self))
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


def _chat_body(reply: Reply, request: RecordedRequest) -> dict[str, Any]:
    usage = reply.usage
    if usage is None:
        prompt = sum(
            len(str(m.get("content", "")).split())
            for m in request.messages
            if isinstance(m, dict)
        )
        usage = {
            "prompt_tokens": prompt,
            "completion_tokens": len(reply.text.split()),
            "total_tokens": prompt + len(reply.text.split()),
        }
    body: dict[str, Any] = {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": (request.json or {}).get("model", "fake")
        if isinstance(request.json, dict)
        else "fake",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": reply.text},
                "finish_reason": "stop",
            }
        ],
    }
    if usage:
        body["usage"] = usage
    return body


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
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            try:
                parsed: Any = json.loads(raw) if raw else None
            except ValueError:
                parsed = None
            path, _, query = self.path.partition("?")
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

        def _finish(self) -> None:
            # Once, just before the reply goes out: a client that has its reply may
            # send its next request at once, and must not find this one still counted.
            if self._counted:
                self._counted = False
                owner._done()

        def _answer(self, reply: Reply, request: RecordedRequest) -> None:
            if reply.delay > 0:
                time.sleep(reply.delay)
            if reply.drop:
                self.close_connection = True
                self.connection.shutdown(socket.SHUT_RDWR)
                return
            if (
                request.method != "POST"
                or request.path not in _CHAT_PATHS + _EMBED_PATHS
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

    return _Handler
