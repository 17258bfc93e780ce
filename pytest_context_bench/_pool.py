"""A cheaper connection choice for httpcore's connection pools.

httpx sends through an ``httpcore`` pool, which chooses a connection for every
request and again when every response is closed
(``_assign_requests_to_connections``). httpcore 1.0 does it by walking all its
connections each time: for each one it asks ``has_expired()`` (for an idle HTTP/1.1
connection: ``getpeername`` and a ``poll`` of its socket), and for each idle one it
counts the pool's connections again, so the cost of one request grows with the
square of the connections kept. With 64 calls in flight this is most of the CPU
time of a call (docs/overhead.md, "One call").

:func:`lean_pool` gives a transport's pool the same choice made cheaply:

- a connection is checked for expiry (its keep-alive over, or its socket closed by
  the server) when it is about to be reused, as httpcore checks it, unless it
  became idle less than :data:`FRESH_SECONDS` ago (an answer just read on it; the
  check costs two system calls and anyio's attribute lookups), and every idle
  connection at most once per :data:`SWEEP_SECONDS`, rather than all of them on
  every request. A server that closes idle connections sooner than that after an
  answer (without ``Connection: close``, which is always obeyed) can have one
  request sent on a connection it has just closed, which fails as a dropped
  connection: ``LLMClient`` retries it, as the OpenAI and Anthropic SDKs do;
- idle connections beyond ``max_keepalive_connections`` are closed, the oldest
  first (httpcore counts all connections there, idle or not, so a pool of more
  than that many busy connections closes each one that becomes idle);
- a connection handed to a request in one pass is not handed to the next queued
  request of the same pass (HTTP/1.1), which httpcore would then retry.

Requests still wait their turn, new connections are still opened while below
``max_connections``, and everything else is httpcore's own (the same connection
classes, timeouts, proxies, HTTP/2). Only the pools of httpcore 1.x whose class is
exactly ``httpcore.ConnectionPool`` or ``httpcore.AsyncConnectionPool`` are changed;
any other transport is left as it is.
"""

from __future__ import annotations

import time
from typing import Any

__all__ = ["FRESH_SECONDS", "SWEEP_SECONDS", "lean_pool"]

#: how often, at most, every idle connection is checked for expiry (seconds).
SWEEP_SECONDS = 1.0
#: a connection idle for less than this (and less than the pool's keep-alive
#: expiry) is reused without the expiry check (seconds).
FRESH_SECONDS = 0.25


class _LeanChoice:
    """``_assign_requests_to_connections`` of httpcore 1.x, without the walk over
    every connection per request (called under the pool's lock, as httpcore's)."""

    _connections: list[Any]
    _requests: list[Any]
    _max_connections: int
    _max_keepalive_connections: int
    _http2: bool
    _keepalive_expiry: float | None
    _lean_sweep_at = 0.0
    #: id of each idle connection -> when a pass first saw it idle (monotonic)
    _lean_idle: dict[int, float] = {}
    create_connection: Any  # httpcore's

    def _assign_requests_to_connections(self) -> list[Any]:
        closing: list[Any] = []
        now = time.monotonic()
        sweep = now >= self._lean_sweep_at
        if sweep:
            self._lean_sweep_at = now + SWEEP_SECONDS
        kept: list[Any] = []
        idle: list[Any] = []
        seen, since = self._lean_idle, {}
        for connection in self._connections:
            if connection.is_closed():
                continue
            if connection.is_idle():
                if sweep and connection.has_expired():
                    closing.append(connection)
                    continue
                idle.append(connection)
                key = id(connection)
                since[key] = seen.get(key, now)
            kept.append(connection)
        self._lean_idle = since
        surplus = len(idle) - self._max_keepalive_connections
        if surplus > 0:
            for connection in idle[:surplus]:
                kept.remove(connection)
                closing.append(connection)
            idle = idle[surplus:]
        self._connections = kept

        queued = [request for request in self._requests if request.is_queued()]
        if not queued:
            return closing
        handed: set[int] = set()
        for pool_request in queued:
            origin = pool_request.request.url.origin
            chosen = self._available(origin, handed, closing, now)
            if chosen is None:
                if len(self._connections) < self._max_connections:
                    chosen = self.create_connection(origin)
                    self._connections.append(chosen)
                else:
                    spare = next(
                        (
                            c
                            for c in self._connections
                            if c.is_idle() and id(c) not in handed
                        ),
                        None,
                    )
                    if spare is None:
                        continue  # every connection is busy: it waits
                    self._connections.remove(spare)
                    closing.append(spare)
                    chosen = self.create_connection(origin)
                    self._connections.append(chosen)
            if not self._http2:
                handed.add(id(chosen))
            pool_request.assign_to_connection(chosen)
        return closing

    def _available(
        self, origin: Any, handed: set[int], closing: list[Any], now: float
    ) -> Any:
        """The first connection that can take a request to ``origin`` now; one that
        turns out expired is closed and the next one tried."""
        fresh = FRESH_SECONDS
        if self._keepalive_expiry is not None:
            fresh = min(fresh, self._keepalive_expiry)
        for connection in list(self._connections):
            if id(connection) in handed:
                continue
            if not (connection.can_handle_request(origin) and connection.is_available()):
                continue
            if (
                connection.is_idle()
                and now - self._lean_idle.get(id(connection), 0.0) >= fresh
                and connection.has_expired()
            ):
                self._connections.remove(connection)
                closing.append(connection)
                continue
            return connection
        return None


_LEAN: dict[type, type] = {}


def _lean_classes() -> dict[type, type]:
    if not _LEAN:
        import httpcore

        if not httpcore.__version__.startswith("1."):
            _LEAN[object] = object  # another httpcore: leave its pools alone
            return _LEAN

        class LeanConnectionPool(_LeanChoice, httpcore.ConnectionPool):
            """httpcore's sync pool with :class:`_LeanChoice`."""

        class LeanAsyncConnectionPool(_LeanChoice, httpcore.AsyncConnectionPool):
            """httpcore's async pool with :class:`_LeanChoice`."""

        _LEAN[httpcore.ConnectionPool] = LeanConnectionPool
        _LEAN[httpcore.AsyncConnectionPool] = LeanAsyncConnectionPool
    return _LEAN


def lean_pool(transport: Any) -> Any:
    """Give ``transport``'s httpcore pool the cheap connection choice (in place);
    returns ``transport``. A transport whose pool is not exactly httpcore 1.x's
    ``ConnectionPool`` or ``AsyncConnectionPool`` (another library's, a subclass,
    an ``httpx.MockTransport``) is returned unchanged."""
    pool = getattr(transport, "_pool", None)
    lean = _lean_classes().get(type(pool))
    if lean is not None:
        # The same instance and state, only its connection choice replaced.
        pool.__class__ = lean
    return transport
