"""One client for OpenAI-compatible endpoints: chat completions and embeddings.

:class:`LLMClient` is what :class:`~pytest_context_bench.systems.OpenAIProxy` and the
LLM judges use. It talks to any OpenAI-compatible base URL (vLLM, llama.cpp, Ollama,
LiteLLM, a compression proxy), with or without a trailing ``/v1``, and:

- retries HTTP 408, 429 and 5xx (except 501 and 505), connect and read timeouts and
  dropped connections, a bounded number of times, with exponential backoff and jitter;
  a ``Retry-After`` header (seconds or an HTTP date) is honoured up to a cap;
- does not retry any other 4xx, an invalid JSON body or a reply of the wrong shape;
- reads a streamed reply (``stream=True``: server-sent events) to its end and
  returns it as one completion (:func:`assemble_stream`), cached and metered as a
  stream by the transport;
- keeps one pooled :class:`httpx.Client` for all its calls; the run's call budget
  (``--ctxbench-concurrency``) bounds the requests in flight, and ``concurrency``,
  when given, only lowers that bound for this client;
- sends through :class:`~pytest_context_bench.transports.CacheTransport`: the run's
  record/replay cache answers repeated requests, and each reply's token usage is
  recorded for the row (a replay-mode miss raises
  :class:`~pytest_context_bench.cache.CacheMiss`, not retried);
- raises :class:`LLMError` for every failure, naming the URL (without credentials),
  the status and what was tried;
- never lets the API key reach an exception message, a ``repr``, a log line or a
  returned object (a server echoing the key back has it replaced with ``***``).
"""

from __future__ import annotations

import asyncio
import contextlib
import email.utils
import json
import logging
import math
import random
import re
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import timezone
from types import TracebackType
from typing import Any, TypeVar
from urllib.parse import urlsplit, urlunsplit

import httpx

from . import concurrency, transcripts
from ._pool import lean_pool
from .errors import LLMError
from .keys import clean_api_key, environment_key
from .tool_use import tool_calls_of
from .urls import redact_secrets, safe_url

__all__ = [
    "ChatResult",
    "LLMClient",
    "LLMError",
    "assemble_stream",
    "display_url",
    "normalize_base_url",
]

_log = logging.getLogger(__name__)

#: statuses worth another attempt: rate limits, request timeouts, transient 5xx.
_RETRY_STATUSES = frozenset({408, 429, 500, 502, 503, 504}) | frozenset(
    s for s in range(506, 600)
)
_SNIPPET = 300
#: idle connections kept at least (httpx's own default)
_KEEPALIVE = 20
_REDACTED = "***"

T = TypeVar("T")


@dataclass(frozen=True)
class ChatResult:
    """The outcome of one chat completion.

    :param text: ``choices[0].message.content`` (``""`` when the model sent none).
    :param usage: ``prompt_tokens`` and ``completion_tokens`` when reported, else ``{}``.
    :param raw: the whole JSON reply.
    :param tool_calls: the tool calls of the reply's message, in OpenAI's shape
        (:func:`~pytest_context_bench.tool_use.tool_calls_of`; ``[]``: none). Only a
        call made with ``accept_tool_calls=True`` returns a reply that has some.
    """

    text: str
    usage: dict[str, int] = field(default_factory=dict)
    raw: dict[str, Any] = field(default_factory=dict, repr=False)
    tool_calls: list[dict[str, Any]] = field(default_factory=list)


def normalize_base_url(base_url: str) -> str:
    """The API root of ``base_url``, always ending in a version segment (``/v1``).

    ``http://h:8000``, ``http://h:8000/`` and ``http://h:8000/v1`` all give
    ``http://h:8000/v1``; a base already ending in ``/vN`` is kept (upstream appended
    ``/v1`` blindly and produced ``/v1/v1``). A query string (``?api-version=...``,
    as Azure OpenAI asks) is kept, and every request URL carries it
    (:func:`endpoint_url`).

    :param base_url: the URL the user gave.
    :raises ValueError: when it is not an http(s) URL.
    """
    parts = urlsplit(base_url.strip())
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValueError(
            f"LLM base URL {display_url(base_url)!r} is not an http(s) URL;"
            " give e.g. 'http://localhost:8000' or 'https://api.openai.com/v1'."
        )
    path = parts.path.rstrip("/")
    if not re.search(r"/v\d+$", path):
        path += "/v1"
    return urlunsplit((parts.scheme, parts.netloc, path, parts.query, ""))


def endpoint_url(base_url: str, endpoint: str) -> str:
    """The URL of ``endpoint`` (``"chat/completions"``) under a normalised
    ``base_url``, its query string kept."""
    parts = urlsplit(base_url)
    path = f"{parts.path}/{endpoint.strip('/')}"
    return urlunsplit((parts.scheme, parts.netloc, path, parts.query, ""))


def display_url(url: str) -> str:
    """``url`` without user info, query string and fragment, safe to print
    (:func:`pytest_context_bench.urls.safe_url`, query dropped).

    :param url: any URL.
    """
    return safe_url(url).split("?", 1)[0]


def _parse_retry_after(value: str | None, now: float | None = None) -> float | None:
    """Seconds to wait from a ``Retry-After`` value (delta seconds or HTTP date)."""
    if value is None:
        return None
    value = value.strip()
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError, IndexError):
            return None
        if when is None:
            return None
        if when.tzinfo is None:
            when = when.replace(tzinfo=timezone.utc)
        current = now if now is not None else time.time()
        seconds = when.timestamp() - current
    if not math.isfinite(seconds):
        return None
    return max(0.0, seconds)


class _Secret:
    """Holds the API key; its repr never shows it."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def get(self) -> str:
        return self._value

    def __repr__(self) -> str:
        return _REDACTED


class _Retryable(Exception):
    """Internal: one attempt failed in a way worth retrying."""

    def __init__(
        self, reason: str, status: int | None, retry_after: float | None
    ) -> None:
        super().__init__(reason)
        self.reason = reason
        self.status = status
        self.retry_after = retry_after


class LLMClient:
    """A client of one OpenAI-compatible endpoint.

    :param base_url: the server root, with or without ``/v1``.
    :param api_key: the bearer token; ``None`` reads ``OPENAI_API_KEY``; no key sends
        no ``Authorization`` header.
    :param timeout: seconds per attempt (connect, read, write and pool).
    :param max_retries: retries after the first attempt (``0`` disables them).
    :param retry_base_delay: the first backoff delay in seconds; attempt ``n`` waits
        ``retry_base_delay * 2**n``, scaled by a random factor in [0.5, 1] (jitter),
        capped at ``max_retry_delay``.
    :param max_retry_delay: the longest backoff between two attempts.
    :param max_retry_after: the longest wait a ``Retry-After`` header may impose
        (longer values are clamped to it).
    :param concurrency: the most requests in flight at once through this client;
        ``None`` (the default): no bound of its own, the run's call budget
        (``--ctxbench-concurrency``) alone decides. A value only lowers the budget,
        never raises it (each request also takes a slot of the budget).
    :param headers: extra headers sent with every request.
    """

    def __init__(
        self,
        base_url: str,
        api_key: str | None = None,
        *,
        timeout: float = 60.0,
        max_retries: int = 3,
        retry_base_delay: float = 1.0,
        max_retry_delay: float = 30.0,
        max_retry_after: float = 60.0,
        concurrency: int | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        if max_retries < 0:
            raise ValueError(f"max_retries must be >= 0, got {max_retries}.")
        if concurrency is not None and (
            isinstance(concurrency, bool)
            or not isinstance(concurrency, int)
            or concurrency < 1
        ):
            raise ValueError(
                f"concurrency must be an integer >= 1 or None, got {concurrency!r}."
            )
        if not timeout > 0:
            raise ValueError(f"timeout must be > 0 seconds, got {timeout}.")
        self.base_url = normalize_base_url(base_url)
        # Stripped, checked (no control character) and registered for redaction.
        if api_key is not None:
            key = clean_api_key(api_key, "api_key") if api_key.strip() else None
        else:
            key = environment_key("OPENAI_API_KEY")
        self._key: _Secret | None = _Secret(key) if key else None
        self.timeout = float(timeout)
        self.max_retries = int(max_retries)
        self.retry_base_delay = float(retry_base_delay)
        self.max_retry_delay = float(max_retry_delay)
        self.max_retry_after = float(max_retry_after)
        self.concurrency = concurrency
        self._extra_headers = dict(headers or {})
        self._semaphore: threading.BoundedSemaphore | contextlib.nullcontext[None] = (
            threading.BoundedSemaphore(concurrency)
            if concurrency is not None
            else contextlib.nullcontext()
        )
        self._lock = threading.Lock()
        # Created on first use, so a client built before a fork (xdist) opens its
        # connections in the process that uses them.
        self._http: httpx.Client | None = None
        self._ahttp: tuple[asyncio.AbstractEventLoop, httpx.AsyncClient] | None = None

    def __repr__(self) -> str:
        key = _REDACTED if self._key is not None else "None"
        return f"LLMClient(base_url={display_url(self.base_url)!r}, api_key={key})"

    # -- lifecycle ---------------------------------------------------------------------
    def _limits(self) -> httpx.Limits:
        """The connection pool's limits: ``concurrency`` when given; else no bound
        of the pool's own (the run's call budget bounds the requests in flight), and
        idle connections kept for as many as the budget lets run at once."""
        if self.concurrency is not None:
            return httpx.Limits(
                max_connections=self.concurrency,
                max_keepalive_connections=self.concurrency,
            )
        budget, _ = concurrency.current_limits()
        keep = max(_KEEPALIVE, budget.size if budget is not None else 0)
        return httpx.Limits(max_connections=None, max_keepalive_connections=keep)

    def _client(self) -> httpx.Client:
        with self._lock:
            if self._http is None:
                from .transports import CacheTransport

                limits = self._limits()
                self._http = httpx.Client(
                    timeout=httpx.Timeout(self.timeout),
                    # The run's LLM cache and usage meter (transports.py); the
                    # limits go to the transport that really sends.
                    transport=CacheTransport(lean_pool(httpx.HTTPTransport(limits=limits))),
                    # Redirects could carry the key to another host.
                    follow_redirects=False,
                )
            return self._http

    def _async_client(self) -> httpx.AsyncClient:
        """The :class:`httpx.AsyncClient` of the running event loop.

        The one place the async client is built (a caching or counting transport
        plugs in here). An async client belongs to the loop it was first used on, so
        a call from another loop gets a client of its own; the previous one is
        closed when its loop is still running, else dropped.
        """
        loop = asyncio.get_running_loop()
        with self._lock:
            held = self._ahttp
            if held is not None and held[0] is loop:
                return held[1]
            from .transports import AsyncCacheTransport

            limits = self._limits()
            client = httpx.AsyncClient(
                # No pool timeout: the run's call budget, not the pool, decides
                # how many requests wait.
                timeout=httpx.Timeout(self.timeout, pool=None),
                # The run's LLM cache and usage meter (transports.py), as for the
                # sync client; the limits go to the transport that really sends.
                transport=AsyncCacheTransport(
                    lean_pool(httpx.AsyncHTTPTransport(limits=limits))
                ),
                follow_redirects=False,
            )
            self._ahttp = (loop, client)
        if held is not None and held[0].is_running() and not held[0].is_closed():
            with contextlib.suppress(RuntimeError):
                asyncio.run_coroutine_threadsafe(held[1].aclose(), held[0])
        return client

    def close(self) -> None:
        """Close the connection pool (the client reopens one if used again)."""
        with self._lock:
            http, self._http = self._http, None
            ahttp, self._ahttp = self._ahttp, None
        if http is not None:
            http.close()
        if ahttp is not None:
            loop, client = ahttp
            if loop.is_running() and not loop.is_closed():
                with contextlib.suppress(RuntimeError):
                    asyncio.run_coroutine_threadsafe(client.aclose(), loop)

    async def aclose(self) -> None:
        """Close both connection pools, from a coroutine on the async client's loop."""
        with self._lock:
            http, self._http = self._http, None
            ahttp, self._ahttp = self._ahttp, None
        if http is not None:
            http.close()
        if ahttp is not None:
            await ahttp[1].aclose()

    def __enter__(self) -> LLMClient:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # -- public calls ------------------------------------------------------------------
    def chat(
        self,
        messages: Sequence[dict[str, Any]],
        model: str,
        *,
        accept_tool_calls: bool = False,
        **params: Any,
    ) -> ChatResult:
        """One chat completion.

        :param messages: the OpenAI ``messages`` list.
        :param model: the model name sent to the server.
        :param accept_tool_calls: a reply whose message calls tools is an answer
            (:attr:`ChatResult.tool_calls`, its text possibly ``""``); by default
            it is an :class:`LLMError` (a judge needs text).
        :param params: further body fields (``temperature=0``, ``max_tokens=16``,
            ``tools=[...]``...).
        :raises LLMError: on any failure, after the retries when it is retryable.
        """
        body: dict[str, Any] = {"model": model, "messages": list(messages), **params}
        url = endpoint_url(self.base_url, "chat/completions")
        transcripts.forget_latest()
        try:
            data, attempts = self._post(url, body)
            return self._chat_result(url, data, attempts, accept_tool_calls)
        except LLMError as exc:
            transcripts.fail_latest(str(exc))  # the call record says why
            raise

    async def achat(
        self,
        messages: Sequence[dict[str, Any]],
        model: str,
        *,
        accept_tool_calls: bool = False,
        **params: Any,
    ) -> ChatResult:
        """:meth:`chat` for coroutines (one pooled :class:`httpx.AsyncClient` per
        event loop; the same retries, errors and redaction)."""
        body: dict[str, Any] = {"model": model, "messages": list(messages), **params}
        url = endpoint_url(self.base_url, "chat/completions")
        transcripts.forget_latest()
        try:
            data, attempts = await self._apost(url, body)
            return self._chat_result(url, data, attempts, accept_tool_calls)
        except LLMError as exc:
            transcripts.fail_latest(str(exc))
            raise

    def _chat_result(
        self, url: str, data: dict[str, Any], attempts: int, tools_ok: bool = False
    ) -> ChatResult:
        shown = display_url(url)
        try:
            choice = data["choices"][0]
            message = choice["message"]
            calls = tool_calls_of(message) if tools_ok else []
            # A message that calls tools may leave out "content" altogether.
            content = message.get("content") if calls else message["content"]
        except (KeyError, IndexError, TypeError, AttributeError):
            raise LLMError(
                f"POST {shown} returned a reply without choices[0].message.content:"
                f" {self._snippet(json.dumps(data))}",
                url=shown,
                status=200,
                attempts=attempts,
            ) from None
        if calls and not isinstance(content, str):
            # the calls are the answer (docs/llm.md, "Tool calls"); text blocks kept
            content = "".join(
                str(part.get("text") or "")
                for part in (content if isinstance(content, list) else ())
                if isinstance(part, dict) and part.get("type") == "text"
            )
        if content is None:
            # A refusal, a tool call or nothing: no text to score (docs/llm.md).
            raise LLMError(
                f"POST {shown} returned no text (choices[0].message.content is null):"
                f" {self._no_content_reason(choice)}",
                url=shown,
                status=200,
                attempts=attempts,
            )
        if not isinstance(content, str):
            raise LLMError(
                f"POST {shown} returned a {type(content).__name__} as"
                " choices[0].message.content; expected a string.",
                url=shown,
                status=200,
                attempts=attempts,
            )
        usage: dict[str, int] = {}
        raw_usage = data.get("usage")
        if isinstance(raw_usage, dict):
            for name in ("prompt_tokens", "completion_tokens"):
                value = raw_usage.get(name)
                if isinstance(value, int) and not isinstance(value, bool):
                    usage[name] = value
        return ChatResult(
            text=self._scrub(content),
            usage=usage,
            raw=self._scrub(data),
            tool_calls=self._scrub(calls),
        )

    def _no_content_reason(self, choice: Any) -> str:
        """Why a 200 reply's message has ``content: null``, for the error message."""
        message = choice.get("message") if isinstance(choice, dict) else None
        message = message if isinstance(message, dict) else {}
        finish = choice.get("finish_reason") if isinstance(choice, dict) else None
        refusal = message.get("refusal")
        if isinstance(refusal, str) and refusal.strip():
            return f"the model refused: {self._snippet(refusal)!r}"
        calls = message.get("tool_calls")
        if isinstance(calls, list) and calls:
            names = [
                str(c.get("function", {}).get("name", "?")) if isinstance(c, dict) else "?"
                for c in calls
            ]
            return (
                f"the model called tool(s) {', '.join(names)} instead of answering;"
                " a System that uses tools must handle them itself"
            )
        function = message.get("function_call")
        if isinstance(function, dict):
            return (
                f"the model called function {function.get('name', '?')!s} instead of"
                " answering"
            )
        reason = f" (finish_reason {finish!r})" if finish else ""
        return f"the reply is empty{reason}"

    def embeddings(self, texts: Sequence[str], model: str) -> list[list[float]]:
        """Embed ``texts`` in one request.

        :param texts: the texts, in order.
        :param model: the embedding model name.
        :returns: one vector per text, in the order of ``texts``.
        :raises LLMError: on any failure, or when the reply has not one vector per text.
        """
        url = endpoint_url(self.base_url, "embeddings")
        transcripts.forget_latest()
        try:
            data, attempts = self._post(url, {"model": model, "input": list(texts)})
            return self._vectors(url, data, attempts, len(texts))
        except LLMError as exc:
            transcripts.fail_latest(str(exc))
            raise

    async def aembeddings(self, texts: Sequence[str], model: str) -> list[list[float]]:
        """:meth:`embeddings` for coroutines."""
        url = endpoint_url(self.base_url, "embeddings")
        transcripts.forget_latest()
        try:
            data, attempts = await self._apost(
                url, {"model": model, "input": list(texts)}
            )
            return self._vectors(url, data, attempts, len(texts))
        except LLMError as exc:
            transcripts.fail_latest(str(exc))
            raise

    def _vectors(
        self, url: str, data: dict[str, Any], attempts: int, count: int
    ) -> list[list[float]]:
        shown = display_url(url)
        try:
            items = sorted(data["data"], key=lambda d: int(d.get("index", 0)))
            vectors = [[float(x) for x in item["embedding"]] for item in items]
        except (KeyError, TypeError, ValueError, AttributeError):
            raise LLMError(
                f"POST {shown} returned a reply without data[].embedding:"
                f" {self._snippet(json.dumps(data))}",
                url=shown,
                status=200,
                attempts=attempts,
            ) from None
        if len(vectors) != count:
            raise LLMError(
                f"POST {shown} returned {len(vectors)} embeddings for"
                f" {count} inputs.",
                url=shown,
                status=200,
                attempts=attempts,
            )
        return vectors

    # -- the retry loop ----------------------------------------------------------------
    def _headers(self) -> dict[str, str]:
        headers = {"Content-Type": "application/json", **self._extra_headers}
        if self._key is not None:
            headers["Authorization"] = f"Bearer {self._key.get()}"
        return headers

    def _post(self, url: str, body: dict[str, Any]) -> tuple[dict[str, Any], int]:
        shown = display_url(url)
        attempts = 1 + self.max_retries
        started = time.monotonic()
        last: _Retryable | None = None
        for attempt in range(attempts):
            try:
                return self._attempt(url, shown, body, attempt + 1), attempt + 1
            except _Retryable as exc:
                last = exc
            if attempt + 1 >= attempts:
                break
            time.sleep(self._retry_delay(shown, attempt, last))
        assert last is not None
        raise self._gave_up(shown, attempts, started, last)

    async def _apost(
        self, url: str, body: dict[str, Any]
    ) -> tuple[dict[str, Any], int]:
        shown = display_url(url)
        attempts = 1 + self.max_retries
        started = time.monotonic()
        last: _Retryable | None = None
        for attempt in range(attempts):
            try:
                return await self._aattempt(url, shown, body, attempt + 1), attempt + 1
            except _Retryable as exc:
                last = exc
            if attempt + 1 >= attempts:
                break
            await asyncio.sleep(self._retry_delay(shown, attempt, last))
        assert last is not None
        raise self._gave_up(shown, attempts, started, last)

    def _retry_delay(self, shown: str, attempt: int, last: _Retryable) -> float:
        delay = self._delay(attempt, last.retry_after)
        _log.warning(
            "POST %s: %s; retry %d of %d in %.2f s",
            shown,
            last.reason,
            attempt + 1,
            self.max_retries,
            delay,
        )
        return delay

    def _gave_up(
        self, shown: str, attempts: int, started: float, last: _Retryable
    ) -> LLMError:
        elapsed = time.monotonic() - started
        tried = f"{attempts} attempt{'s' if attempts != 1 else ''} over {elapsed:.1f} s"
        return LLMError(
            f"POST {shown} failed: {tried}; last: {last.reason}",
            url=shown,
            status=last.status,
            attempts=attempts,
        )

    def _delay(self, attempt: int, retry_after: float | None) -> float:
        if retry_after is not None:
            return min(retry_after, self.max_retry_after)
        backoff = self.retry_base_delay * float(2**attempt)
        # Jitter spreads the retries of parallel workers hitting the same limit.
        return min(backoff * random.uniform(0.5, 1.0), self.max_retry_delay)

    def _attempt(
        self, url: str, shown: str, body: dict[str, Any], number: int
    ) -> dict[str, Any]:
        client = self._client()
        try:
            # One slot of the run's call budget per attempt (a no-op outside a run
            # with --ctxbench-concurrency, and inside a System call that holds one).
            with concurrency.slot(self.timeout), self._semaphore:
                gate = concurrency.endpoint_budget(url)
                if gate is None:
                    response = client.post(url, json=body, headers=self._headers())
                else:
                    ticket, answered = gate.acquire(), None
                    try:
                        answered = client.post(url, json=body, headers=self._headers())
                    finally:
                        gate.release(ticket, *self._congestion(answered))
                    response = answered
        except httpx.HTTPError as exc:
            raise self._transport_error(exc, shown, number) from None
        return self._checked(response, shown, number)

    async def _aattempt(
        self, url: str, shown: str, body: dict[str, Any], number: int
    ) -> dict[str, Any]:
        client = self._async_client()
        try:
            async with concurrency.aslot(self.timeout):
                gate = concurrency.endpoint_budget(url)
                if gate is None:
                    response = await client.post(
                        url, json=body, headers=self._headers()
                    )
                else:
                    ticket, answered = await gate.acquire_async(), None
                    try:
                        answered = await client.post(
                            url, json=body, headers=self._headers()
                        )
                    finally:
                        gate.release(ticket, *self._congestion(answered))
                    response = answered
        except httpx.HTTPError as exc:
            raise self._transport_error(exc, shown, number) from None
        return self._checked(response, shown, number)

    def _congestion(
        self, response: httpx.Response | None
    ) -> tuple[int | None, float | None, bool]:
        """What the endpoint's adaptive budget learns from an attempt: its status
        (``None``: no answer), its ``Retry-After`` (capped), and whether it reached
        the endpoint (a cache hit did not)."""
        if response is None:
            return None, None, True
        if response.headers.get("x-ctxbench-cache") == "hit":
            return None, None, False
        after = _parse_retry_after(response.headers.get("retry-after"))
        return (
            response.status_code,
            min(after, self.max_retry_after) if after is not None else None,
            True,
        )

    def _transport_error(
        self, exc: httpx.HTTPError, shown: str, number: int
    ) -> Exception:
        """A failure before any response: retryable, or an LLMError."""
        if isinstance(exc, httpx.TimeoutException):
            kind = type(exc).__name__  # ConnectTimeout, ReadTimeout, ...
            return _Retryable(f"{kind} after {self.timeout:g} s", None, None)
        if isinstance(exc, httpx.ConnectError):
            return _Retryable(f"cannot connect ({self._snippet(str(exc))})", None, None)
        dropped = (httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError)
        if isinstance(exc, dropped):
            return _Retryable(
                f"connection dropped ({self._snippet(str(exc)) or type(exc).__name__})",
                None,
                None,
            )
        return LLMError(
            f"POST {shown} failed: {type(exc).__name__}: {self._snippet(str(exc))}",
            url=shown,
            attempts=number,
        )

    def _checked(
        self, response: httpx.Response, shown: str, number: int
    ) -> dict[str, Any]:
        miss = response.extensions.get("ctxbench_cache_miss")
        if isinstance(miss, Exception):
            raise miss  # a replay-mode cache miss: nothing was sent, never retried
        status = response.status_code
        text = response.text
        if status in _RETRY_STATUSES:
            retry_after = _parse_retry_after(response.headers.get("retry-after"))
            reason = f"HTTP {status}"
            if text.strip():
                reason += f": {self._snippet(text)}"
            raise _Retryable(reason, status, retry_after)
        if status >= 400 or status < 200:
            raise LLMError(
                f"POST {shown} failed with HTTP {status} (not retried):"
                f" {self._snippet(text)}",
                url=shown,
                status=status,
                attempts=number,
            )
        if "text/event-stream" in response.headers.get("content-type", "").lower():
            streamed = assemble_stream(text)
            if isinstance(streamed, str):
                raise LLMError(
                    f"POST {shown} streamed {self._snippet(streamed)}",
                    url=shown,
                    status=status,
                    attempts=number,
                )
            return streamed
        try:
            data = json.loads(text)
        except ValueError:
            raise LLMError(
                f"POST {shown} returned HTTP {status} with a body that is not JSON:"
                f" {self._snippet(text)!r}",
                url=shown,
                status=status,
                attempts=number,
            ) from None
        if not isinstance(data, dict):
            raise LLMError(
                f"POST {shown} returned a JSON {type(data).__name__}, expected an"
                f" object: {self._snippet(text)}",
                url=shown,
                status=status,
                attempts=number,
            )
        return data

    # -- redaction ---------------------------------------------------------------------
    def _redact(self, text: str) -> str:
        if self._key is not None:
            key = self._key.get()
            if key and key in text:
                text = text.replace(key, _REDACTED)
        return text

    def _snippet(self, text: str) -> str:
        # Redact before cutting: a cut could leave part of the key unmatched. Every
        # registered key (another client's too) and any Bearer token go as well.
        text = " ".join(redact_secrets(self._redact(text)).split())
        return text if len(text) <= _SNIPPET else text[:_SNIPPET] + "…"

    def _scrub(self, value: T) -> T:
        """``value`` with every occurrence of the key replaced (an echoing server)."""
        if self._key is None:
            return value
        if isinstance(value, str):
            return self._redact(value)  # type: ignore[return-value]
        if isinstance(value, dict):
            return {  # type: ignore[return-value]
                self._scrub(k): self._scrub(v) for k, v in value.items()
            }
        if isinstance(value, list):
            return [self._scrub(v) for v in value]  # type: ignore[return-value]
        return value


def assemble_stream(text: str) -> dict[str, Any] | str:
    """A streamed chat completion (OpenAI's ``chat.completion.chunk`` events) as
    the one ``chat.completion`` it adds up to: the deltas' content joined, the last
    ``finish_reason``, the ``usage`` of the usage chunk (none when the stream sent
    none) and the ``model``. Returns what went wrong instead (a string) when the
    stream reports an error or holds no chunk.

    :param text: the reply's body (server-sent events).
    """
    from .transports import sse_events

    content: list[str] = []
    calls: dict[int, dict[str, Any]] = {}
    seen = False
    out: dict[str, Any] = {"object": "chat.completion"}
    finish: Any = None
    for _, data in sse_events(text.encode("utf-8")):
        try:
            chunk = json.loads(data)
        except ValueError:
            continue  # [DONE]
        if not isinstance(chunk, dict):
            continue
        if chunk.get("error") is not None:
            return f"an error: {json.dumps(chunk['error'])}"
        seen = True
        for name in ("id", "model", "created"):
            if name in chunk:
                out[name] = chunk[name]
        if isinstance(chunk.get("usage"), dict):
            out["usage"] = chunk["usage"]
        for choice in chunk.get("choices") or ():
            if not isinstance(choice, dict) or choice.get("index", 0) != 0:
                continue
            delta = choice.get("delta")
            if isinstance(delta, dict) and isinstance(delta.get("content"), str):
                content.append(delta["content"])
            if isinstance(delta, dict) and isinstance(delta.get("tool_calls"), list):
                _add_call_deltas(calls, delta["tool_calls"])
            if choice.get("finish_reason") is not None:
                finish = choice["finish_reason"]
    if not seen:
        return f"no chat.completion.chunk: {text!r}"
    message: dict[str, Any] = {
        "role": "assistant",
        "content": "".join(content) if content else None,
    }
    if calls:
        message["tool_calls"] = [calls[i] for i in sorted(calls)]
    out["choices"] = [{"index": 0, "message": message, "finish_reason": finish}]
    return out


def _add_call_deltas(calls: dict[int, dict[str, Any]], deltas: list[Any]) -> None:
    """Fold one chunk's ``delta.tool_calls`` into ``calls`` (by their ``index``):
    the id and type kept from the first delta, the name and the arguments text
    joined piece by piece, as the OpenAI SDK assembles them."""
    for number, delta in enumerate(deltas):
        if not isinstance(delta, dict):
            continue
        index = delta.get("index", number)
        index = index if isinstance(index, int) and not isinstance(index, bool) else number
        call = calls.setdefault(
            index,
            {"id": "", "type": "function", "function": {"name": "", "arguments": ""}},
        )
        if isinstance(delta.get("id"), str) and not call["id"]:
            call["id"] = delta["id"]
        function = delta.get("function")
        if isinstance(function, dict):
            for part in ("name", "arguments"):
                if isinstance(function.get(part), str):
                    call["function"][part] += function[part]
