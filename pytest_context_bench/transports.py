"""httpx transports that cache LLM replies and meter their token usage.

:class:`CacheTransport` (sync) and :class:`AsyncCacheTransport` wrap another httpx
transport. For each request they:

1. look the request up in the run's :class:`~pytest_context_bench.cache.LLMCache`
   (keyed by what is sent and the trial index; see :mod:`pytest_context_bench.cache`)
   and answer from it on a hit, without sending anything;
2. on a miss, send the request (``once``, ``refresh``) or raise
   :class:`~pytest_context_bench.cache.CacheMiss` (``replay``), and store a 2xx JSON
   reply of a non-streaming request;
3. append the reply's ``usage`` (prompt, completion and cached tokens, the model, and
   whether it came from the cache) to the current call's
   :class:`~pytest_context_bench.calls.CallScope`, from which the engine computes each
   row's tokens and money.

The call a request belongs to is :func:`~pytest_context_bench.calls.call_owner`: the
one named by the request's context, or, for a request made from a thread the System
started (no context), the one call in flight. When several are in flight the owner
is unknown: the usage is counted for the run instead of a row, the request is keyed
by the trial all the calls in flight share, or neither looked up nor stored when they
differ (``replay`` then raises :class:`UnknownCaller`), and one warning per run names
the fix (``contextvars.copy_context().run``).

:func:`http_client` and :func:`async_http_client` return httpx clients built on them:
hand one to the OpenAI SDK (``OpenAI(http_client=http_client())``) and a System's
calls are cached like the built-in ones. A transport given no cache uses the run's
cache at request time (:func:`~pytest_context_bench.cache.active_cache`), so a client
built before the run starts (at import time of a conftest) is still covered; outside
a pytest run with no cache set, it only meters usage.

A cache file that turns out unusable during the run is said once (a warning naming
the file and the fix) and the run goes on without the cache.
"""

from __future__ import annotations

import json
import logging
import time
import warnings
from typing import Any

import httpx

from . import __version__
from .cache import (
    CachedResponse,
    CacheFileError,
    CacheMiss,
    LLMCache,
    active_cache,
    cache_key,
    canonical_body,
    clean_url,
)
from . import transcripts
from .calls import (
    CallOwner,
    call_owner,
    record_unattributed,
    run_reports_unattributed,
    transcripts_mode,
)
from .results import is_token_count
from .errors import CacheWarning, CtxBenchError, UnattributedCallWarning

__all__ = [
    "AsyncCacheTransport",
    "BadUsageError",
    "CacheTransport",
    "CacheWarning",
    "UnattributedCallWarning",
    "UnknownCaller",
    "async_http_client",
    "http_client",
    "usage_of",
]

_log = logging.getLogger(__name__)

#: response header set on replies served from the cache.
CACHE_HEADER = "x-ctxbench-cache"
_DROP_HEADERS = ("content-encoding", "content-length", "transfer-encoding")
_DEFAULT = object()


#: what the warning about requests of unknown owner says (once per run).
UNATTRIBUTED_FIX = (
    "LLM request(s) were made outside their System call's context (from a thread or"
    " executor the System started) while several example calls were in flight, so"
    " their example and trial were unknown: their token usage is counted for the run,"
    " not for a row, and when the calls in flight were of different trials they"
    " bypassed the cache. Run the work in the caller's context:"
    " executor.submit(contextvars.copy_context().run, fn, *args) (see docs/cache.md,"
    " 'Systems that call from their own threads')."
)


class UnknownCaller(CacheMiss):
    """A ``replay``-mode request whose trial is unknown (made outside its call's
    context while calls of several trials were in flight): it cannot be replayed
    under the right key, and nothing was sent."""

    def __init__(self, method: str, url: str, in_flight: int, path: Any) -> None:
        self.method, self.url, self.key, self.trial, self.path = (
            method,
            url,
            "",
            0,
            path,
        )
        CtxBenchError.__init__(
            self,
            f"cache miss in replay mode: {method} {url} was made outside its System"
            f" call's context (a thread the System started) while {in_flight} calls"
            " of different trials were in flight, so its trial, part of the cache"
            " key, is unknown; nothing was sent. Run the System's threads with"
            " contextvars.copy_context().run (docs/cache.md), or replay without"
            " --ctxbench-concurrency.",
        )


class BadUsageError(ValueError):
    """An LLM reply reports a token count that is not a whole number >= 0 (NaN,
    an infinity, a negative, a fraction, a string...): its tokens and money cannot
    be counted, so the example it belongs to is an error row."""

    __module__ = "pytest_context_bench.transports"


def _count(value: Any, where: str, model: str) -> int:
    """A reported token count; ``None`` (or absent) is 0."""
    if value is None:
        return 0
    if not is_token_count(value):
        shown = f" (model {model})" if model else ""
        raise BadUsageError(
            f"the LLM reply{shown} reports {where} = {value!r:.60}; a token count must"
            " be a whole number >= 0, so this example's tokens and money cannot be"
            " counted (a broken server or proxy, or a damaged cache entry: clear it"
            " with `ctxbench cache clear`)."
        )
    return int(value)


def usage_of(data: Any, request_model: str | None) -> dict[str, Any] | None:
    """The token usage of an OpenAI-style reply (or an Anthropic-style one, whose
    ``input_tokens`` and ``output_tokens`` are read as the prompt and completion
    tokens): ``prompt_tokens``, ``completion_tokens``, ``cached_tokens`` (0 when not
    reported) and ``model``; ``None`` when the reply reports no usage.

    :param data: the parsed JSON reply.
    :param request_model: the ``model`` the request asked for (preferred for pricing:
        servers often answer with a dated variant).
    :raises BadUsageError: a reported count that is not a whole number in
        ``[0, 2**53]`` (``NaN``, ``Infinity``, ``-3``, ``2.5``, ``"12"``, ``true``).
    """
    if not isinstance(data, dict):
        return None
    raw = data.get("usage")
    if not isinstance(raw, dict):
        return None
    model = request_model or data.get("model")
    name = str(model) if model else ""
    details = raw.get("prompt_tokens_details")
    cached = 0
    if isinstance(details, dict):
        where = "usage.prompt_tokens_details.cached_tokens"
        cached = _count(details.get("cached_tokens"), where, name)
    prompt = "prompt_tokens" if raw.get("prompt_tokens") is not None else "input_tokens"
    completion = (
        "completion_tokens"
        if raw.get("completion_tokens") is not None
        else "output_tokens"
    )
    return {
        "model": name,
        "prompt_tokens": _count(raw.get(prompt), f"usage.{prompt}", name),
        "completion_tokens": _count(raw.get(completion), f"usage.{completion}", name),
        "cached_tokens": cached,
    }


class _Core:
    """What the sync and async transports share: keys, lookups, stores, metering."""

    def __init__(self, cache: Any) -> None:
        self._cache = cache
        self._said = False

    def cache(self) -> LLMCache | None:
        cache = active_cache() if self._cache is _DEFAULT else self._cache
        if cache is None or not cache.enabled:
            return None
        return cache

    def broken(self, cache: LLMCache, exc: CacheFileError) -> None:
        if cache.broken is None:
            cache.broken = str(exc)
            warnings.warn(CacheWarning(str(exc)), stacklevel=2)

    def plan(
        self, request: httpx.Request, body: bytes
    ) -> tuple[LLMCache | None, str | None, dict[str, Any]]:
        """(cache, key, facts); key ``None``: not cacheable."""
        owner = call_owner()
        facts: dict[str, Any] = {"model": None, "owner": owner}
        canonical = canonical_body(body)
        parsed: Any = None
        if canonical:
            parsed = json.loads(canonical)
            if isinstance(parsed, dict) and isinstance(parsed.get("model"), str):
                facts["model"] = parsed["model"]
        if owner.scope is not None and transcripts_mode() != "off":
            # The call record of the row (--ctxbench-transcripts; transcripts.py).
            facts["record"] = transcripts.begin(
                owner.scope, request.method, str(request.url), canonical, parsed
            )
        cache = self.cache()
        if cache is None:
            return None, None, facts
        streaming = isinstance(parsed, dict) and bool(parsed.get("stream"))
        if canonical is None or streaming:
            cache.count("uncacheable")
            return cache, None, facts
        if owner.trial is None:
            # Calls of several trials in flight, none known to be this one's: no
            # other trial's reply may answer it, and it may not be stored as theirs.
            cache.count("uncacheable")
            if cache.mode == "replay":
                cache.count("misses")
                raise UnknownCaller(
                    request.method,
                    clean_url(str(request.url)),
                    owner.in_flight,
                    cache.path,
                )
            return cache, None, facts
        facts["trial"] = owner.trial
        return (
            cache,
            cache_key(request.method, str(request.url), canonical, owner.trial),
            facts,
        )

    def lookup(
        self, cache: LLMCache, key: str, request: httpx.Request, facts: dict[str, Any]
    ) -> httpx.Response | None:
        if cache.mode == "refresh":
            cache.count("misses")
            return None
        try:
            entry = cache.store.get(key)
        except CacheFileError as exc:
            self.broken(cache, exc)
            return None
        if entry is not None:
            cache.count("hits")
            response = httpx.Response(
                entry.status,
                headers={"content-type": entry.content_type, CACHE_HEADER: "hit"},
                content=entry.body,
                request=request,
            )
            data = self.meter(entry.body, facts, "hit")
            self.note(facts, entry.status, cache="hit", data=data)
            return response
        cache.count("misses")
        if cache.mode == "replay":
            miss = CacheMiss(
                request.method,
                clean_url(str(request.url)),
                key,
                facts["trial"],
                cache.path,
            )
            scope = facts["owner"].scope
            if scope is not None:
                scope.usage.append({"cache": "miss", "error": str(miss)})
            self.note(facts, None, error=str(miss), cache="miss", final=True)
            raise miss
        return None

    @staticmethod
    def wants_body(response: httpx.Response) -> bool:
        ctype = response.headers.get("content-type", "")
        return 200 <= response.status_code < 300 and "event-stream" not in ctype

    def finish(
        self,
        cache: LLMCache | None,
        key: str | None,
        request: httpx.Request,
        response: httpx.Response,
        content: bytes,
        facts: dict[str, Any],
    ) -> httpx.Response:
        """Store and meter a read reply; return a fresh response with its body."""
        ctype = response.headers.get("content-type", "application/json")
        how = "off" if cache is None else "uncached" if key is None else "miss"
        data = self.meter(content, facts, how)
        self.note(facts, response.status_code, cache=how, data=data)
        good = data is not None and not facts.get("bad_usage")
        if cache is not None and key is not None and good:
            try:
                cache.store.put(
                    key,
                    request.method,
                    str(request.url),
                    CachedResponse(
                        response.status_code, ctype, content, time.time(), __version__
                    ),
                )
                cache.count("stored")
            except CacheFileError as exc:
                self.broken(cache, exc)
        headers = [
            (k, v)
            for k, v in response.headers.multi_items()
            if k.lower() not in _DROP_HEADERS
        ]
        return httpx.Response(
            response.status_code,
            headers=headers,
            content=content,
            request=request,
            extensions={
                k: v
                for k, v in response.extensions.items()
                if k in ("http_version", "reason_phrase")
            },
        )

    def meter(self, content: bytes, facts: dict[str, Any], how: str) -> Any:
        """Parse the reply; append its usage to the current call. Returns the parsed
        JSON, or ``None`` when the body is not JSON."""
        try:
            data = json.loads(content)
        except (ValueError, UnicodeDecodeError):
            return None
        owner: CallOwner = facts["owner"]
        entry: dict[str, Any] = {"cache": how}
        try:
            usage = usage_of(data, facts.get("model"))
        except BadUsageError as exc:
            # Never 0 tokens and $0 in silence: the engine makes the example an
            # error row (engine.attach_usage), and the reply is not cached.
            entry["bad_usage"] = str(exc)
            usage = None
        facts["bad_usage"] = "bad_usage" in entry
        facts["usage"] = usage
        if owner.scope is None and owner.how != "unknown":
            return data  # outside any example call: nothing to count it for
        if usage is not None:
            entry.update(usage)
        elif facts.get("model"):
            entry["model"] = facts["model"]
        if owner.scope is not None:
            owner.scope.usage.append(entry)
        elif record_unattributed(entry) and not run_reports_unattributed():
            # Outside a pytest run (evaluate(max_workers=...)): said here, once per
            # process; a run says it once in its summary (plugin/session.py).
            warnings.warn(
                UnattributedCallWarning(UNATTRIBUTED_FIX),
                stacklevel=2,
            )
        return data

    @staticmethod
    def note(facts: dict[str, Any], status: int | None, **outcome: Any) -> None:
        """One attempt's outcome on the request's call record, if it has one."""
        record = facts.get("record")
        if record is not None:
            if "data" in outcome:
                outcome["usage"] = facts.get("usage")
            transcripts.attempt(record, status, **outcome)

    def unread(self, facts: dict[str, Any], response: httpx.Response) -> None:
        """A response passed on unread (an error status, a stream)."""
        self.note(facts, response.status_code, streamed=True)

    def failed(self, facts: dict[str, Any], exc: BaseException) -> None:
        """No response: the request failed (a timeout, a refused connection)."""
        name, text = type(exc).__name__, str(exc)
        self.note(facts, None, error=f"{name}: {text}" if text else name)


class CacheTransport(httpx.BaseTransport):
    """A sync httpx transport that caches replies and meters usage.

    :param transport: the transport that really sends (default
        :class:`httpx.HTTPTransport`).
    :param cache: the cache; default: the run's cache at request time
        (:func:`~pytest_context_bench.cache.active_cache`); ``None``: no cache, only
        metering.
    """

    def __init__(
        self, transport: httpx.BaseTransport | None = None, cache: Any = _DEFAULT
    ) -> None:
        self.transport = transport if transport is not None else httpx.HTTPTransport()
        self._core = _Core(cache)

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        body = request.read()
        cache, key, facts = self._core.plan(request, body)
        if cache is not None and key is not None:
            hit = self._core.lookup(cache, key, request, facts)
            if hit is not None:
                return hit
        try:
            response = self.transport.handle_request(request)
        except BaseException as exc:
            self._core.failed(facts, exc)
            raise
        if not self._core.wants_body(response):
            self._core.unread(facts, response)
            return response
        try:
            content = response.read()
        finally:
            response.close()
        return self._core.finish(cache, key, request, response, content, facts)

    def close(self) -> None:
        self.transport.close()


class AsyncCacheTransport(httpx.AsyncBaseTransport):
    """The async twin of :class:`CacheTransport` (for :class:`httpx.AsyncClient`).

    :param transport: the transport that really sends (default
        :class:`httpx.AsyncHTTPTransport`).
    :param cache: as in :class:`CacheTransport`.
    """

    def __init__(
        self, transport: httpx.AsyncBaseTransport | None = None, cache: Any = _DEFAULT
    ) -> None:
        self.transport = (
            transport if transport is not None else httpx.AsyncHTTPTransport()
        )
        self._core = _Core(cache)

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        body = await request.aread()
        # SQLite lookups take microseconds: run inline rather than in a thread.
        cache, key, facts = self._core.plan(request, body)
        if cache is not None and key is not None:
            hit = self._core.lookup(cache, key, request, facts)
            if hit is not None:
                return hit
        try:
            response = await self.transport.handle_async_request(request)
        except BaseException as exc:
            self._core.failed(facts, exc)
            raise
        if not self._core.wants_body(response):
            self._core.unread(facts, response)
            return response
        try:
            content = await response.aread()
        finally:
            await response.aclose()
        return self._core.finish(cache, key, request, response, content, facts)

    async def aclose(self) -> None:
        await self.transport.aclose()


def http_client(cache: Any = _DEFAULT, **kwargs: Any) -> httpx.Client:
    """An :class:`httpx.Client` whose requests go through the run's LLM cache.

    ``OpenAI(http_client=http_client())`` caches and meters a System's own OpenAI-SDK
    calls like the built-in ones.

    :param cache: as in :class:`CacheTransport` (default: the run's cache).
    :param kwargs: passed to :class:`httpx.HTTPTransport` when they configure it
        (``limits``, ``verify``, ``http2``, ``retries``...), else to
        :class:`httpx.Client` (``timeout``, ``headers``...).
    """
    inner, outer = _split(kwargs)
    return httpx.Client(
        transport=CacheTransport(httpx.HTTPTransport(**inner), cache), **outer
    )


def async_http_client(cache: Any = _DEFAULT, **kwargs: Any) -> httpx.AsyncClient:
    """The :class:`httpx.AsyncClient` twin of :func:`http_client`
    (``AsyncOpenAI(http_client=async_http_client())``)."""
    inner, outer = _split(kwargs)
    return httpx.AsyncClient(
        transport=AsyncCacheTransport(httpx.AsyncHTTPTransport(**inner), cache), **outer
    )


_TRANSPORT_ARGS = (
    "verify",
    "cert",
    "trust_env",
    "http1",
    "http2",
    "limits",
    "proxy",
    "retries",
)


def _split(kwargs: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    inner = {k: v for k, v in kwargs.items() if k in _TRANSPORT_ARGS}
    outer = {k: v for k, v in kwargs.items() if k not in _TRANSPORT_ARGS}
    if "trust_env" in inner:
        outer["trust_env"] = inner["trust_env"]
    return inner, outer
