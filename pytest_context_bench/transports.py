"""httpx transports that cache LLM replies and meter their token usage.

:class:`CacheTransport` (sync) and :class:`AsyncCacheTransport` wrap another httpx
transport. For each request they first register the value of every credential
header (``Authorization``, ``api-key``, ``x-api-key``...;
:func:`~pytest_context_bench.urls.register_headers`) as a secret, before anything
can quote it, so that no report or message shows it; then they

1. look the request up in the run's :class:`~pytest_context_bench.cache.LLMCache`
   (keyed by what is sent and the trial index; see :mod:`pytest_context_bench.cache`)
   and answer from it on a hit, without sending anything;
2. on a miss, send the request (``once``, ``refresh``) or, under ``replay``, answer
   it without sending anything, streamed or not, with an HTTP 404 that SDKs do not
   retry (:func:`miss_response`: ``x-should-retry: false``, the
   :class:`~pytest_context_bench.cache.CacheMiss` message in the body; the example is
   an error row); store a 2xx JSON reply, or a 2xx streamed reply
   (``text/event-stream``) once the client has read it to its end;
3. append the reply's ``usage`` (prompt, completion and cached tokens, the model, and
   whether it came from the cache) to the current call's
   :class:`~pytest_context_bench.calls.CallScope`, from which the engine computes each
   row's tokens and money.

A streamed reply is passed on to the client event by event as it arrives, and
recorded meanwhile; its usage is read from its events (OpenAI's last usage chunk,
Anthropic's ``message_start`` and ``message_delta``), or counted with the run's
tokenizer and marked ``estimated`` when it reports none. A stream the client closes
before its end (``[DONE]``, ``message_stop`` or the end of the body) is metered
(estimated) but not stored. A stored stream is replayed as the same events, one
chunk each, in the same order (:func:`stream_usage`, :func:`sse_events`).

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

import itertools
import json
import logging
import re
import sys
import time
import warnings
from collections.abc import AsyncIterator, Iterator
from typing import TYPE_CHECKING, Any, Literal, overload

import httpx

if TYPE_CHECKING:
    import httpx2

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
    attempt_outcome,
    call_owner,
    current_repeat,
    record_attempt,
    record_unattributed,
    run_reports_unattributed,
    transcripts_mode,
)
from .netguard import ours
from .results import is_token_count
from .urls import endpoint_of, register_headers
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
    "httpx2_transports",
    "miss_response",
    "sse_events",
    "stream_usage",
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
    reported), ``model`` and, when the reply names another model than the request
    (a dated variant), ``reported_model``; ``None`` when the reply reports no usage.

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
    side = "prompt" if raw.get("prompt_tokens_details") is not None else "input"
    details = raw.get(f"{side}_tokens_details")  # input_: OpenAI's Responses API
    cached = 0
    if isinstance(details, dict):
        where = f"usage.{side}_tokens_details.cached_tokens"
        cached = _count(details.get("cached_tokens"), where, name)
    prompt = "prompt_tokens" if raw.get("prompt_tokens") is not None else "input_tokens"
    completion = (
        "completion_tokens"
        if raw.get("completion_tokens") is not None
        else "output_tokens"
    )
    out = {
        "model": name,
        "prompt_tokens": _count(raw.get(prompt), f"usage.{prompt}", name),
        "completion_tokens": _count(raw.get(completion), f"usage.{completion}", name),
        "cached_tokens": cached,
    }
    if prompt == "input_tokens":
        out.update(_anthropic_cache(raw, name))
    reported = data.get("model")
    if isinstance(reported, str) and reported and reported != name:
        out["reported_model"] = reported  # what the endpoint says it ran (pricing)
    return out


def _anthropic_cache(raw: dict[str, Any], name: str) -> dict[str, int]:
    """Anthropic's prompt cache: its ``input_tokens`` leave out the tokens read from
    (``cache_read_input_tokens``) and written to (``cache_creation_input_tokens``)
    its cache, so they are added to the prompt tokens; the read ones are the
    ``cached_tokens``, the written ones ``cache_write_tokens`` (priced apart)."""
    read = _count(
        raw.get("cache_read_input_tokens"), "usage.cache_read_input_tokens", name
    )
    written = _count(
        raw.get("cache_creation_input_tokens"),
        "usage.cache_creation_input_tokens",
        name,
    )
    if not read and not written:
        return {}
    prompt = _count(raw.get("input_tokens"), "usage.input_tokens", name)
    out = {"prompt_tokens": prompt + read + written, "cached_tokens": read}
    if written:
        out["cache_write_tokens"] = written
    return out


#: the status of a replay-mode miss: a 4xx that SDKs treat as final (the OpenAI and
#: Anthropic SDKs retry 408, 409, 429 and 5xx only, and obey ``x-should-retry``).
MISS_STATUS = 404
#: ``response.extensions`` key holding the :class:`CacheMiss` of a miss reply.
MISS_EXTENSION = "ctxbench_cache_miss"


def miss_response(
    request: httpx.Request, miss: CacheMiss, http: Any = httpx
) -> httpx.Response:
    """The answer to a request not in the cache under ``replay`` (nothing was sent):
    HTTP 404 with ``x-should-retry: false``, so that SDKs raise it at once instead of
    retrying it with back-off, and an OpenAI-style error body holding the miss's
    message (the SDK's exception shows it). The :class:`CacheMiss` itself is in
    ``response.extensions[MISS_EXTENSION]`` (the built-in client raises it).
    ``http`` is the module whose ``Response`` to build (``httpx`` or ``httpx2``)."""
    body = {
        "error": {
            "message": str(miss),
            "type": "ctxbench_cache_miss",
            "code": "cache_miss",
        }
    }
    response: httpx.Response = http.Response(
        MISS_STATUS,
        headers={
            "content-type": "application/json",
            "x-should-retry": "false",
            CACHE_HEADER: "miss",
        },
        content=json.dumps(body).encode("utf-8"),
        request=request,
        extensions={MISS_EXTENSION: miss},
    )
    return response


class _Core:
    """What the sync and async transports share: keys, lookups, stores, metering."""

    def __init__(self, cache: Any, http: Any = httpx) -> None:
        self._cache = cache
        self._said = False
        #: the httpx module the responses are made with (``httpx`` or ``httpx2``).
        self.http = http

    @property
    def caching(self) -> bool:
        """False for a transport built with ``cache=None`` (metering only): its
        requests bypass the cache, like a client that is not ours."""
        return self._cache is not None

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
        api_url = clean_url(str(request.url))
        facts: dict[str, Any] = {
            "model": None,
            "owner": owner,
            "api_url": api_url,  # the provider, for prices
            "endpoint": endpoint_of(api_url),  # the report's llm.endpoints
        }
        canonical = canonical_body(body)
        parsed: Any = None
        if canonical:
            parsed = json.loads(canonical)
            if isinstance(parsed, dict) and isinstance(parsed.get("model"), str):
                facts["model"] = parsed["model"]
        facts["request"] = parsed
        if owner.scope is not None and transcripts_mode() != "off":
            # The call record of the row (--ctxbench-transcripts; transcripts.py).
            facts["record"] = transcripts.begin(
                owner.scope, request.method, str(request.url), canonical, parsed
            )
        cache = self.cache()
        if cache is None:
            return None, None, facts
        if canonical is None:
            cache.count("uncacheable")
            if cache.mode == "replay":
                cache.count("misses")
                raise Unkeyable(request.method, clean_url(str(request.url)), cache.path)
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
        url = str(request.url)
        # A judge's question asked again (--ctxbench-judge-repeat) is an entry of
        # its own: each repeat is answered once, then replayed as it was.
        repeat = current_repeat()
        facts["hostless"] = cache_key(
            request.method, url, canonical, owner.trial, any_host=True, repeat=repeat
        )
        key = cache_key(request.method, url, canonical, owner.trial, repeat=repeat)
        return (cache, key, facts)

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
            if is_event_stream(entry.content_type):
                return self.replayed(entry, request, facts)
            response: httpx.Response = self.http.Response(
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
            try:
                others = cache.store.other_hosts(facts["hostless"])
            except CacheFileError:
                others = []
            miss = CacheMiss(
                request.method,
                clean_url(str(request.url)),
                key,
                facts["trial"],
                cache.path,
                others,
            )
            scope = facts["owner"].scope
            if scope is not None:
                scope.usage.append(
                    {"cache": "miss", "error": str(miss), "exception": miss}
                )
            self.note(facts, None, error=str(miss), cache="miss", final=True)
            raise miss
        return None

    def consult(
        self, request: httpx.Request, body: bytes
    ) -> tuple[LLMCache | None, str | None, dict[str, Any], httpx.Response | None]:
        """:meth:`plan` then :meth:`lookup`: (cache, key, facts, the reply to give
        without sending: a hit, or a replay miss as :func:`miss_response`)."""
        try:
            cache, key, facts = self.plan(request, body)
            hit = None
            if cache is not None and key is not None:
                hit = self.lookup(cache, key, request, facts)
        except CacheMiss as miss:
            return None, None, {}, miss_response(request, miss, self.http)
        return cache, key, facts, hit

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
            entry = CachedResponse(
                response.status_code, ctype, content, time.time(), __version__
            )
            self.store(cache, key, request.method, str(request.url), facts, entry)
        return self._passed_on(request, response, content=content)

    def store(
        self,
        cache: LLMCache,
        key: str,
        method: str,
        url: str,
        facts: dict[str, Any],
        entry: CachedResponse,
    ) -> None:
        """Store a reply (a JSON one, or a stream's events) under ``key``, with the
        key of the same request at any host (a replay miss names that host)."""
        try:
            cache.store.put(key, method, url, entry, facts.get("hostless"))
            cache.count("stored")
        except CacheFileError as exc:
            self.broken(cache, exc)

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
        if facts.get("estimated"):
            entry["estimated"] = True
        if facts.get("cut_short"):
            entry["cut_short"] = facts["cut_short"]  # the row's error names it
        entry["api_url"] = facts["api_url"]
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
        if isinstance(exc, Exception):  # not a cancelled call or Ctrl-C
            record_attempt(facts["endpoint"], "no_answer")
        self.note(facts, None, error=f"{name}: {text}" if text else name)

    @staticmethod
    def sent(facts: dict[str, Any], status: int) -> None:
        """A request sent and answered with ``status`` (the report's
        ``llm.endpoints``: counted even when no reply is ever read)."""
        record_attempt(facts["endpoint"], attempt_outcome(status))

    # -- streamed replies (server-sent events) ---------------------------------------
    def streamed(
        self,
        cache: LLMCache | None,
        key: str | None,
        request: httpx.Request,
        response: httpx.Response,
        facts: dict[str, Any],
    ) -> httpx.Response:
        """A reply not read here: a 2xx stream is passed on through a recorder
        (stored and metered when the client is done with it); anything else as is."""
        if not self._recordable(response):
            self.unread(facts, response)
            return response
        record = _Record(self, cache, key, request, response, facts)
        stream = _streams(self.http)[0](response, record)
        return self._passed_on(request, response, stream=stream)

    def astreamed(
        self,
        cache: LLMCache | None,
        key: str | None,
        request: httpx.Request,
        response: httpx.Response,
        facts: dict[str, Any],
    ) -> httpx.Response:
        """:meth:`streamed` for the async transport."""
        if not self._recordable(response):
            self.unread(facts, response)
            return response
        record = _Record(self, cache, key, request, response, facts)
        stream = _streams(self.http)[1](response, record)
        return self._passed_on(request, response, stream=stream)

    @staticmethod
    def _recordable(response: Any) -> bool:
        ctype = response.headers.get("content-type", "")
        return 200 <= response.status_code < 300 and is_event_stream(ctype)

    def _passed_on(
        self, request: httpx.Request, response: httpx.Response, **body: Any
    ) -> httpx.Response:
        """A fresh response of ``response``'s status and headers (less those that
        described the wire body) with ``body``: ``content=`` or ``stream=``."""
        headers = [
            (k, v)
            for k, v in response.headers.multi_items()
            if k.lower() not in _DROP_HEADERS
        ]
        passed: httpx.Response = self.http.Response(
            response.status_code,
            headers=headers,
            request=request,
            **body,
            extensions={
                k: v
                for k, v in response.extensions.items()
                if k in ("http_version", "reason_phrase")
            },
        )
        return passed

    def replayed(
        self, entry: CachedResponse, request: Any, facts: dict[str, Any]
    ) -> httpx.Response:
        """A stored stream, replayed as its events (one chunk each), metered."""
        self.meter_stream(entry.body, facts, "hit", complete=True)
        replay: httpx.Response = self.http.Response(
            entry.status,
            headers={"content-type": entry.content_type, CACHE_HEADER: "hit"},
            stream=_streams(self.http)[2](_event_chunks(entry.body)),
            request=request,
        )
        return replay

    def meter_stream(
        self, content: bytes, facts: dict[str, Any], how: str, complete: bool
    ) -> None:
        """Meter a streamed reply from its events (:func:`stream_usage`) through
        :meth:`meter`, so it counts as any other reply does."""
        self.meter_read(_read_stream(content), facts, how, complete)

    def meter_read(
        self,
        read: _Read,
        facts: dict[str, Any],
        how: str,
        complete: bool,
        cut: str | None = None,
    ) -> None:
        """:meth:`meter_stream` of a stream already read; ``cut``: why it was cut
        short (the call record's error)."""
        usage, estimated = _usage_of_read(read, facts.get("request"), complete)
        text, finish = usage.pop("text"), usage.pop("finish_reason")
        facts["estimated"], facts["cut_short"] = estimated, cut
        try:
            self.meter(json.dumps(usage).encode(), facts, how)
        finally:
            facts.pop("estimated", None)
            facts.pop("cut_short", None)
        # the row's call record (--ctxbench-transcripts): the text the events carried
        reply = {"choices": [{"message": {"content": text}, "finish_reason": finish}]}
        self.note(facts, 200, cache=how, data=reply, streamed=True, error=cut)


def is_event_stream(content_type: str) -> bool:
    """Whether a ``Content-Type`` is server-sent events."""
    return "text/event-stream" in content_type.lower()


class Unkeyable(CacheMiss):
    """A ``replay``-mode request whose body is not JSON: the cache never stores such
    a request, so it cannot be replayed, and nothing was sent."""

    def __init__(self, method: str, url: str, path: Any) -> None:
        self.method, self.url, self.key, self.trial, self.path = method, url, "", 0, path
        CtxBenchError.__init__(
            self,
            f"cache miss in replay mode: {method} {url} has a body that is not JSON,"
            " which the cache never stores; nothing was sent. Run it with"
            " --ctxbench-cache=once or off.",
        )


_EVENT_END = re.compile(rb"\r\n\r\n|\n\n|\r\r")


def _event_chunks(body: bytes) -> list[bytes]:
    """``body`` cut after each event's blank line (the pieces join to ``body``)."""
    chunks: list[bytes] = []
    start = 0
    for match in _EVENT_END.finditer(body):
        chunks.append(body[start : match.end()])
        start = match.end()
    if start < len(body):
        chunks.append(body[start:])
    return chunks


#: a blank line, the end of an event (each line ended by CR LF, LF or CR; a CR LF
#: is one line end, never a CR and an LF)
_BLANK_LINE = re.compile(
    rb"\r\n\r\n|\r\n\r|\r\n\n|\r\r\n|\r\r|\n\r\n|\n\r|\n\n"
)


def _blank_lines(body: bytes) -> Iterator[tuple[int, int]]:
    """The spans of the blank lines that end ``body``'s events. One kind of line end
    throughout (``\\n``, or ``\\r\\n``: the usual streams) is found with a
    plain search, many times faster than the pattern that allows any mix."""
    crs = body.count(b"\r")
    if crs == 0:
        blank = re.compile(rb"\n\n")
    elif crs == body.count(b"\r\n") == body.count(b"\n"):
        blank = re.compile(rb"\r\n\r\n")
    else:
        blank = _BLANK_LINE
    return (m.span() for m in blank.finditer(body))


def _raw_events(body: bytes) -> Iterator[tuple[str, str, list[tuple[int, int]]]]:
    """``(event, text, spans)`` for each event of ``body``, one at a time: its
    name, its text (line ends made ``\\n``) and where each ``data:`` value lies in
    it. Each event is decoded on its own and its values are not copied out, so a
    stream costs its body and about twice its largest event, not copies of the
    whole body."""
    view = memoryview(body)
    start = 0
    for begin, after in itertools.chain(_blank_lines(body), [(len(body), 0)]):
        if begin <= start:
            start = max(start, after)
            continue
        text = str(view[start:begin], "utf-8", "replace")
        start = after
        if "\r" in text:
            text = text.replace("\r\n", "\n").replace("\r", "\n")
        name, spans = "", []
        pos, size = 0, len(text)
        while pos <= size:
            end = text.find("\n", pos)
            end = size if end < 0 else end
            colon = text.find(":", pos, end)
            field_end = end if colon < 0 else colon
            at = end if colon < 0 else colon + 1  # a field name alone: value ""
            if text.startswith(" ", at, end):
                at += 1
            if field_end - pos == 4 and text.startswith("data", pos):
                spans.append((at, end))
            elif field_end - pos == 5 and text.startswith("event", pos):
                name = text[at:end]
            pos = end + 1
        yield name, text, spans
        del text


def _iter_events(body: bytes) -> Iterator[tuple[str, str]]:
    """The ``(event, data)`` pairs of ``body``, one event at a time."""
    for name, text, spans in _raw_events(body):
        if spans:
            yield name, "\n".join(text[a:b] for a, b in spans)


def sse_events(body: bytes) -> list[tuple[str, str]]:
    """The server-sent events of ``body`` as ``(event, data)`` pairs (``event``
    ``""`` when the event names none; several ``data:`` lines joined by newlines;
    comments and events without data left out)."""
    return list(_iter_events(body))


def _texts(value: Any) -> Iterator[str]:
    """The texts of a prompt: a string, content blocks' ``text``, messages'
    ``content`` (lists of them too)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, list):
        for item in value:
            yield from _texts(item)
    elif isinstance(value, dict):
        if isinstance(value.get("text"), str):
            yield value["text"]
        elif "content" in value:
            yield from _texts(value["content"])


#: the most characters of one text that the usage estimate of a stream tokenizes
#: (:func:`estimate_tokens`): about 0.2 s of cl100k_base at its slowest (CJK).
ESTIMATE_CHARS = 200_000
_WINDOWS = 8


def estimate_tokens(text: str) -> int:
    """The tokens of ``text`` by the run's tokenizer, for a usage estimate: counted
    exactly up to :data:`ESTIMATE_CHARS` characters; a longer text is counted on
    8 windows of ``ESTIMATE_CHARS / 8`` characters spread evenly over it, and the
    count scaled to its length (so that a 30 MB event costs the same few tenths of
    a second as a 200,000-character one, and memory for 200,000 characters' tokens,
    not 30 million's). The estimate is exact for text as uniform as the windows and
    off by the difference in tokens per character elsewhere."""
    from .tokens import count_tokens

    length = len(text)
    if length <= ESTIMATE_CHARS:
        return count_tokens(text)
    size = ESTIMATE_CHARS // _WINDOWS
    step = (length - size) / (_WINDOWS - 1)
    counted = 0
    for i in range(_WINDOWS):
        at = int(i * step)
        counted += count_tokens(text[at : at + size])
    return -(-counted * length // (size * _WINDOWS))  # rounded up


#: events that end a stream (besides OpenAI's ``data: [DONE]``): Anthropic's, and
#: the Responses API's three last ones.
_END_EVENTS = frozenset(
    ("message_stop", "response.completed", "response.incomplete", "response.failed")
)
_ANTHROPIC_EVENTS = frozenset(
    ("message_start", "content_block_start", "content_block_delta",
     "content_block_stop", "message_delta", "message_stop")
)


class _Read:
    """What the events of a streamed reply say (:func:`_read_stream`)."""

    __slots__ = ("raw", "model", "pieces", "finish", "end", "shape", "events", "error")

    def __init__(self) -> None:
        self.raw: dict[str, Any] = {}  # the usage reported
        self.model: Any = None
        self.pieces: list[str] = []  # the text of the deltas
        self.finish: Any = None  # finish_reason / stop_reason
        self.end = False  # an event that ends the stream was read
        self.shape: str | None = None  # "chat", "anthropic", "responses"
        self.events = 0
        self.error = False  # the stream reported an error

    def missing(self) -> str:
        """What a stream cut short lacks, in words."""
        if self.shape == "anthropic":
            stop = "" if self.finish is not None else "no stop_reason and "
            return f"{stop}no `message_stop` event"
        if self.shape == "responses":
            return "no `response.completed` event"
        finish = "" if self.finish is not None else "no finish_reason and "
        return f"{finish}no `data: [DONE]`"


_JSON = json.JSONDecoder()
_JSON_SPACE = " \t\n\r"


def _read_stream(body: bytes) -> _Read:
    """Read a streamed reply's events once: its usage, model, text, finish reason,
    whether it reached its end event, its shape and whether it reported an error."""
    read = _Read()
    for name, text, spans in _raw_events(body):
        if not spans:
            continue
        if len(spans) > 1:  # several data lines: one value, joined by newlines
            text = "\n".join(text[a:b] for a, b in spans)
            spans = [(0, len(text))]
        _read_event(read, name, text, *spans[0])
        del text  # a giant event is not held while the next one is read
    return read


def _json_in(text: str, start: int, end: int) -> Any:
    """``json.loads(text[start:end])``, without copying the slice (one event's data
    may be tens of megabytes)."""
    while start < end and text[start] in _JSON_SPACE:
        start += 1
    value, stop = _JSON.raw_decode(text, start)
    if stop > end or text[stop:end].strip(_JSON_SPACE):
        raise ValueError("extra data after the JSON value")
    return value


def _read_event(read: _Read, name: str, text: str, start: int, end: int) -> None:
    """What one event of a stream (its data: ``text[start:end]``) adds to
    ``read``."""
    read.events += 1
    if name == "error":
        read.error = True
    if end - start < 32 and text[start:end].strip() == "[DONE]":
        read.end = True
        return
    try:
        value = _json_in(text, start, end)
    except (ValueError, RecursionError):
        read.end = read.end or name in _END_EVENTS
        return
    if not isinstance(value, dict):
        return
    pieces = read.pieces
    kind = value.get("type", name)
    if not isinstance(kind, str):
        kind = ""  # a "type" of another kind names no event we know
    if value.get("error") is not None or kind in ("error", "response.failed"):
        read.error = True
    if kind in _END_EVENTS:
        read.end = True
    if kind in _ANTHROPIC_EVENTS:
        read.shape = "anthropic"
    elif kind.startswith("response."):
        read.shape = "responses"
    if kind == "response.completed" and isinstance(value.get("response"), dict):
        # OpenAI's Responses API: the usage comes with the whole response
        done = value["response"]
        read.model = done.get("model", read.model)
        if isinstance(done.get("usage"), dict):
            read.raw = dict(done["usage"])
        return
    if kind == "response.output_text.delta" and isinstance(value.get("delta"), str):
        pieces.append(value["delta"])
        return
    if kind == "message_start" and isinstance(value.get("message"), dict):
        message = value["message"]
        read.model = message.get("model", read.model)
        if isinstance(message.get("usage"), dict):
            read.raw.update(message["usage"])
        return
    if isinstance(value.get("model"), str):
        read.model = value["model"]
    if isinstance(value.get("usage"), dict):
        if kind == "message_delta":
            if isinstance(value.get("delta"), dict):
                read.finish = value["delta"].get("stop_reason", read.finish)
            read.raw.update({k: v for k, v in value["usage"].items() if v is not None})
        else:
            read.raw = dict(value["usage"])
    delta = value.get("delta")
    if kind == "content_block_delta" and isinstance(delta, dict):
        for part in ("text", "partial_json", "thinking"):
            if isinstance(delta.get(part), str):
                pieces.append(delta[part])
    choices = value.get("choices")
    if isinstance(choices, list):
        read.shape = read.shape or "chat"
    for choice in choices or ():
        step = choice.get("delta") if isinstance(choice, dict) else None
        if not isinstance(step, dict):
            continue
        read.finish = choice.get("finish_reason") or read.finish
        if isinstance(step.get("content"), str):
            pieces.append(step["content"])
        for call in step.get("tool_calls") or ():
            function = call.get("function") if isinstance(call, dict) else None
            if isinstance(function, dict):
                pieces.append(str(function.get("arguments") or ""))


def stream_usage(
    body: bytes, request: Any, complete: bool = True
) -> tuple[dict[str, Any], bool]:
    """``({"model", "usage", "text", "finish_reason"}, estimated)`` of a streamed
    reply (the first two for :func:`usage_of`; the text of its deltas and its finish
    or stop reason for the row's call record): the usage its events report (OpenAI:
    the last chunk with a ``usage``; Anthropic: ``message_start``'s, updated by
    ``message_delta``'s); when they report none, or the stream was not read to its
    end (``complete`` false), the prompt (the request's messages and system prompt)
    and completion (the text of the deltas) counted with the run's tokenizer
    (:func:`estimate_tokens`), ``estimated`` true.

    :param body: the stream's bytes.
    :param request: the parsed JSON request body.
    :param complete: whether the stream was read to its end.
    """
    return _usage_of_read(_read_stream(body), request, complete)


def _usage_of_read(
    read: _Read, request: Any, complete: bool
) -> tuple[dict[str, Any], bool]:
    """:func:`stream_usage` of a stream already read."""
    raw, model = read.raw, read.model
    said = {"text": "".join(read.pieces), "finish_reason": read.finish}
    if raw and complete:
        return {"model": model, "usage": raw, **said}, False
    asked = request if isinstance(request, dict) else {}
    prompt = [
        text
        # chat completions, Anthropic's messages, OpenAI's Responses API
        for name in ("system", "instructions", "messages", "input")
        for text in _texts(asked.get(name))
    ]
    counted: dict[str, Any] = {
        "prompt_tokens": sum(estimate_tokens(t) for t in prompt if t),
        "completion_tokens": estimate_tokens(said["text"]) if said["text"] else 0,
    }
    if raw:  # reported so far (an abandoned stream): the prompt side is known
        known = usage_of({"usage": raw}, None)
        if known is not None and known["prompt_tokens"]:
            counted["prompt_tokens"] = known["prompt_tokens"]
    return {"model": model, "usage": counted, **said}, True


class _Record:
    """What one streamed reply left so far; stored and metered once, when the
    client closes the stream (or it ends).

    A stream is complete when an event that ends it was read (OpenAI's
    ``data: [DONE]``, Anthropic's ``message_stop``, the Responses API's
    ``response.completed``): the end of the body is not enough, since a network or
    a proxy that cuts a stream may close the connection cleanly. A body that ends
    without it is cut short: the client gets an error naming what is missing
    (:meth:`cut_short`), and nothing is stored. An event stream that is not an LLM
    reply (no ``"stream": true`` in the request, no LLM event in it) ends with its
    body, as any other reply."""

    def __init__(
        self,
        core: _Core,
        cache: LLMCache | None,
        key: str | None,
        request: Any,
        response: Any,
        facts: dict[str, Any],
    ) -> None:
        self.core, self.cache, self.key, self.facts = core, cache, key, facts
        self.method, self.url = request.method, str(request.url)
        self.status = response.status_code
        self.ctype = response.headers.get("content-type", "text/event-stream")
        asked = facts.get("request")
        self.asked = isinstance(asked, dict) and asked.get("stream") is True
        self.parts: list[bytes] = []
        self.ended = False  # the body was read to its end
        self.failed = False  # reading it raised
        self.cut: str | None = None  # why the stream is cut short
        self.done = False
        self._read: tuple[bytes, _Read] | None = None

    def read(self) -> tuple[bytes, _Read]:
        """The body so far and what its events say (read once the body is whole)."""
        if self._read is None or len(self.parts) != 1 or self.parts[0] is not self._read[0]:
            body = b"".join(self.parts)
            self.parts = [body]  # one copy, not the chunks and their join
            self._read = (body, _read_stream(body))
        return self._read

    def llm_stream(self, read: _Read) -> bool:
        return self.asked or read.shape is not None

    def cut_short(self) -> str | None:
        """At the end of the body: ``None`` when the stream is whole, else the
        error the client gets, naming the URL and what is missing."""
        _, read = self.read()
        if read.end or read.error or not self.llm_stream(read):
            return None
        n = read.events
        self.cut = (
            f"the stream from {self.method} {self.facts.get('api_url') or self.url}"
            f" ended after {n} event{'' if n == 1 else 's'} with {read.missing()}:"
            " the network or a proxy cut it short (the connection closed before its"
            " end), so it is not stored in the LLM cache and is sent again next time"
        )
        return self.cut

    def close(self) -> None:
        if self.done:
            return
        self.done = True
        body, read = self.read()
        self.parts, self._read = [], None
        whole = read.end or (self.ended and not self.llm_stream(read))
        complete = not self.failed and self.cut is None and whole
        cache, key = self.cache, self.key
        how = "off" if cache is None else "uncached" if key is None else "miss"
        if self.cut is not None:
            record_attempt(self.facts["endpoint"], "cut_short")
        self.core.meter_read(read, self.facts, how, complete, self.cut)
        if cache is None or key is None or not complete or self.facts.get("bad_usage"):
            return
        if read.error:
            return  # an error reported inside the stream is not a reply to keep
        self.core.store(
            cache, key, self.method, self.url, self.facts,
            CachedResponse(self.status, self.ctype, body, time.time(), __version__),
        )


_STREAM_CLASSES: dict[str, tuple[Any, Any, Any]] = {}


def _streams(http: Any) -> tuple[Any, Any, Any]:
    """(sync recorder, async recorder, replay) byte streams of the ``http`` module
    (``httpx`` or ``httpx2``: a client checks its own stream classes). A recorder
    raises the module's ``RemoteProtocolError`` at the end of a stream cut short
    (:meth:`_Record.cut_short`), as it does for a connection dropped mid-chunk."""
    made = _STREAM_CLASSES.get(http.__name__)
    if made is not None:
        return made

    class Recorder(http.SyncByteStream):  # type: ignore[misc]
        def __init__(self, response: Any, record: _Record) -> None:
            self._response, self._record = response, record

        def __iter__(self) -> Iterator[bytes]:
            try:
                for chunk in self._response.iter_bytes():
                    self._record.parts.append(chunk)
                    yield chunk
            except (http.TransportError, http.DecodingError):  # a broken stream
                self._record.failed = True
                raise
            self._record.ended = True
            cut = self._record.cut_short()
            if cut is not None:
                raise http.RemoteProtocolError(cut)

        def close(self) -> None:
            try:
                self._response.close()
            finally:
                self._record.close()

    class AsyncRecorder(http.AsyncByteStream):  # type: ignore[misc]
        def __init__(self, response: Any, record: _Record) -> None:
            self._response, self._record = response, record

        async def __aiter__(self) -> AsyncIterator[bytes]:
            try:
                async for chunk in self._response.aiter_bytes():
                    self._record.parts.append(chunk)
                    yield chunk
            except (http.TransportError, http.DecodingError):  # a broken stream
                self._record.failed = True
                raise
            self._record.ended = True
            cut = self._record.cut_short()
            if cut is not None:
                raise http.RemoteProtocolError(cut)

        async def aclose(self) -> None:
            try:
                await self._response.aclose()
            finally:
                self._record.close()

    class Replay(http.SyncByteStream, http.AsyncByteStream):  # type: ignore[misc]
        def __init__(self, chunks: list[bytes]) -> None:
            self._chunks = chunks

        def __iter__(self) -> Iterator[bytes]:
            yield from self._chunks

        async def __aiter__(self) -> AsyncIterator[bytes]:
            for chunk in self._chunks:
                yield chunk

    made = _STREAM_CLASSES[http.__name__] = (Recorder, AsyncRecorder, Replay)
    return made


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
        # Before anything can quote them (httpx's "Illegal header value", an
        # error body echoing the request): every credential header is a secret.
        register_headers(request.headers.multi_items())
        body = request.read()
        cache, key, facts, answer = self._core.consult(request, body)
        if answer is not None:
            return answer
        try:
            # Our own connection (netguard): not one that bypasses the cache.
            with ours(self._core.caching):
                response = self.transport.handle_request(request)
        except BaseException as exc:
            self._core.failed(facts, exc)
            raise
        self._core.sent(facts, response.status_code)
        if not self._core.wants_body(response):
            return self._core.streamed(cache, key, request, response, facts)
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
        register_headers(request.headers.multi_items())  # as in CacheTransport
        body = await request.aread()
        # SQLite lookups take microseconds: run inline rather than in a thread.
        cache, key, facts, answer = self._core.consult(request, body)
        if answer is not None:
            return answer
        try:
            with ours(self._core.caching):
                response = await self.transport.handle_async_request(request)
        except BaseException as exc:
            self._core.failed(facts, exc)
            raise
        self._core.sent(facts, response.status_code)
        if not self._core.wants_body(response):
            return self._core.astreamed(cache, key, request, response, facts)
        try:
            content = await response.aread()
        finally:
            await response.aclose()
        return self._core.finish(cache, key, request, response, content, facts)

    async def aclose(self) -> None:
        await self.transport.aclose()


@overload
def http_client(
    cache: Any = ..., *, flavor: Literal["httpx"] = ..., **kwargs: Any
) -> httpx.Client: ...
@overload
def http_client(
    cache: Any = ..., *, flavor: Literal["httpx2"], **kwargs: Any
) -> httpx2.Client: ...
def http_client(cache: Any = _DEFAULT, *, flavor: str = "httpx", **kwargs: Any) -> Any:
    """An :class:`httpx.Client` whose requests go through the run's LLM cache.

    ``OpenAI(http_client=http_client())`` caches and meters a System's own OpenAI-SDK
    calls like the built-in ones.

    :param cache: as in :class:`CacheTransport` (default: the run's cache).
    :param flavor: ``"httpx"`` (default) or ``"httpx2"``: an ``httpx2.Client`` for
        SDKs built on ``httpx2`` (anthropic >= 2 refuses an ``httpx.Client``),
        through the same cache and meter (:func:`httpx2_transports`); ``httpx2`` is
        imported only then.
    :param kwargs: passed to the flavor's ``HTTPTransport`` when they configure it
        (``limits``, ``verify``, ``http2``, ``retries``...), else to its ``Client``
        (``timeout``, ``headers``...).
    :raises ValueError: an unknown ``flavor``.
    :raises ImportError: ``flavor="httpx2"`` without the ``httpx2`` package.
    """
    return _client(flavor, False, cache, kwargs)


@overload
def async_http_client(
    cache: Any = ..., *, flavor: Literal["httpx"] = ..., **kwargs: Any
) -> httpx.AsyncClient: ...
@overload
def async_http_client(
    cache: Any = ..., *, flavor: Literal["httpx2"], **kwargs: Any
) -> httpx2.AsyncClient: ...
def async_http_client(
    cache: Any = _DEFAULT, *, flavor: str = "httpx", **kwargs: Any
) -> Any:
    """The :class:`httpx.AsyncClient` twin of :func:`http_client`
    (``AsyncOpenAI(http_client=async_http_client())``;
    ``AsyncAnthropic(http_client=async_http_client(flavor="httpx2"))``)."""
    return _client(flavor, True, cache, kwargs)


def _client(
    flavor: str, asynchronous: bool, cache: Any, kwargs: dict[str, Any]
) -> Any:
    """The flavor's (async) ``Client`` over its ``HTTPTransport`` wrapped in our
    cache transport; ``kwargs`` split between the two (:func:`_split`)."""
    if flavor == "httpx":
        module: Any = httpx
        ours: tuple[Any, Any] = (CacheTransport, AsyncCacheTransport)
    else:
        ours = httpx2_transports(flavor)
        module = sys.modules["httpx2"]
    from ._pool import lean_pool  # httpcore's pool, its connection choice made cheap

    inner, outer = _split(kwargs)
    if asynchronous:
        raw = lean_pool(module.AsyncHTTPTransport(**inner))
        return module.AsyncClient(transport=ours[1](raw, cache), **outer)
    raw = lean_pool(module.HTTPTransport(**inner))
    return module.Client(transport=ours[0](raw, cache), **outer)


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


#: the ``flavor=`` values of :func:`http_client` and :func:`async_http_client`.
FLAVORS = ("httpx", "httpx2")
_HTTPX2: list[tuple[type[Any], type[Any]]] = []


def httpx2_transports(flavor: str = "httpx2") -> tuple[type[Any], type[Any]]:
    """(sync, async) cache transports for ``httpx2`` clients: :class:`CacheTransport`
    and :class:`AsyncCacheTransport` made ``httpx2`` transports, whose responses are
    ``httpx2`` ones (the same cache, keys, meter and streams). Built on first use,
    so ``httpx2`` is imported only when asked for.

    :raises ValueError: a flavor other than those of :data:`FLAVORS`.
    :raises ImportError: ``httpx2`` is not installed.
    """
    if flavor not in FLAVORS:
        raise ValueError(
            f"flavor must be one of {', '.join(map(repr, FLAVORS))}, given {flavor!r}:"
            " 'httpx2' for SDKs built on httpx2 (anthropic >= 2, openai >= 3),"
            " 'httpx' for the others."
        )
    if _HTTPX2:
        return _HTTPX2[0]
    try:
        import httpx2
    except ImportError:
        raise ImportError(
            "http_client(flavor='httpx2') needs the httpx2 package, which is not"
            " installed: pip install httpx2 (the anthropic and openai SDKs that need"
            " it install it)."
        ) from None

    class Httpx2CacheTransport(CacheTransport, httpx2.BaseTransport):  # type: ignore[misc]
        """:class:`CacheTransport` for ``httpx2.Client``."""

        def __init__(
            self, transport: Any = None, cache: Any = _DEFAULT
        ) -> None:
            # An httpx2 transport: used through the same calls (duck-typed).
            inner: Any = transport if transport is not None else httpx2.HTTPTransport()
            self.transport = inner
            self._core = _Core(cache, httpx2)

    class AsyncHttpx2CacheTransport(  # type: ignore[misc]
        AsyncCacheTransport, httpx2.AsyncBaseTransport
    ):
        """:class:`AsyncCacheTransport` for ``httpx2.AsyncClient``."""

        def __init__(
            self, transport: Any = None, cache: Any = _DEFAULT
        ) -> None:
            # An httpx2 transport: used through the same calls (duck-typed).
            inner: Any = transport if transport is not None else httpx2.AsyncHTTPTransport()
            self.transport = inner
            self._core = _Core(cache, httpx2)

    made = (Httpx2CacheTransport, AsyncHttpx2CacheTransport)
    _HTTPX2.append(made)
    return made
