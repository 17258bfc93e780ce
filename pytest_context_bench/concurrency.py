"""System and judge calls: how many run at once, how fast they start, how long they run.

One :class:`CallRunner` per process (a pytest process or an xdist worker) runs the
System calls the plugin hands it:

* an ``async def process`` runs as a task on the runner's one event loop (a daemon
  thread of its own), with no thread per call;
* a plain ``def process`` runs in a daemon thread of its own, started under a copy
  of the caller's :mod:`contextvars` context (so
  :func:`~pytest_context_bench.calls.current_call` works inside it);
* every call first takes a slot of the process's :class:`Budget` (and of its
  System's own budget when it declares ``concurrency = K``), then waits its turn
  under the :class:`RateLimit`;
* a call that outlives the per-call timeout becomes :class:`CallTimeout`; a task is
  cancelled, a thread is abandoned (daemon threads never keep the process alive).
  The timeout measures that call: the time the loop spent running *another* call's
  step (an ``async def process`` that blocks, ``time.sleep`` or sync I/O) is not
  charged to the calls waiting behind it, so the rows do not depend on how many
  calls were in flight. A System whose step blocks the loop is named, once, by a
  :class:`BlockingSystemWarning`.

The LLM judges and :class:`~pytest_context_bench.llm.LLMClient` take a slot of the
same budget through :func:`slot` / :func:`aslot` when they are not already inside a
System call that holds one (so a System that calls an LLM through the client counts
once, and cannot deadlock waiting for a second slot of its own).
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import contextvars
import inspect
import itertools
import math
import os
import threading
import time
from collections.abc import AsyncIterator, Callable, Coroutine, Iterator
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass
from typing import Any, TypeVar

from .errors import BlockingSystemWarning, CtxBenchError
from .urls import endpoint_of

__all__ = [
    "BLOCKING_STEP",
    "BlockingSystemWarning",
    "Budget",
    "CallRunner",
    "CallTimeout",
    "EndpointBudget",
    "Outcome",
    "RateLimit",
    "RateLimitTimeout",
    "aslot",
    "current_limits",
    "endpoint_budget",
    "endpoint_budgets",
    "fallback_runner",
    "install",
    "is_async_system",
    "parse_rate",
    "slot",
    "uninstall",
]

T = TypeVar("T")

#: True inside a System call that already holds a budget slot.
_HOLDING: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "ctxbench_holding_slot", default=False
)


#: how often a thread blocked on a call or a slot wakes up
_POLL = 0.2


def wait_for(future: Future[T]) -> T:
    """``future.result()``, waking up now and then: a signal (Ctrl-C) may be
    delivered to any thread, and a main thread blocked on a lock forever would not
    see it until the lock is released."""
    while True:
        try:
            return future.result(timeout=_POLL)
        except FutureTimeout:
            continue


class CallTimeout(Exception):
    """A System call took longer than the per-call timeout (``--ctxbench-timeout``)."""


#: A step of an async System's coroutine (the code between two ``await``s) that runs
#: this long (seconds) blocks the loop: the System is named by a warning.
BLOCKING_STEP = 0.25
#: Steps at least this long are remembered, so that the calls they held up are not
#: charged for them (shorter ones are the ordinary cost of sharing a loop).
_STALL = 0.002


class _Stalls:
    """The long steps of the async calls on one loop: (start, end, call) triples.

    Only the loop's thread touches it. A call's *own* time is its wall time minus
    the stalls of the other calls while it was in flight.
    """

    def __init__(self) -> None:
        self._spans: collections.deque[tuple[float, float, int]] = collections.deque()
        self._open: dict[int, float] = {}  # call -> when it started

    def begin(self, call: int, start: float) -> None:
        self._open[call] = start

    def end(self, call: int) -> None:
        self._open.pop(call, None)
        oldest = min(self._open.values(), default=float("inf"))
        while self._spans and self._spans[0][1] < oldest:
            self._spans.popleft()

    def add(self, start: float, end: float, call: int) -> None:
        if end - start >= _STALL:
            self._spans.append((start, end, call))

    def others(self, call: int, since: float, until: float) -> float:
        """Seconds in [since, until] the loop ran other calls' long steps."""
        total = 0.0
        for start, end, owner in self._spans:
            if owner != call:
                total += max(0.0, min(end, until) - max(start, since))
        return total


_WAIT_FDS = threading.local()


def queue_wait() -> float | None:
    """Seconds this thread has spent runnable but not running (waiting for a CPU
    that other processes held), from Linux's ``/proc/self/task/TID/schedstat``;
    ``None`` where the kernel does not say. A step that took long because the
    machine was loaded is not a step that blocked the loop: the difference is this
    wait. One ``pread`` of an open file (about 3 µs)."""
    fd = getattr(_WAIT_FDS, "fd", -2)
    if fd == -2:
        try:
            fd = os.open(f"/proc/self/task/{threading.get_native_id()}/schedstat", os.O_RDONLY)
        except OSError:
            fd = -1
        _WAIT_FDS.fd = fd
    if fd < 0:
        return None
    try:
        fields = os.pread(fd, 96, 0).split()
        return int(fields[1]) / 1e9
    except (OSError, IndexError, ValueError):
        return None


class _Timed:
    """Awaits a coroutine step by step, timing each step (see :class:`_Stalls`).
    ``on_step(start, end, waited_at_start)``: ``waited_at_start`` is
    :func:`queue_wait` when the step began."""

    __slots__ = ("_coro", "_on_step")

    def __init__(
        self, coro: Any, on_step: Callable[[float, float, float | None], None]
    ) -> None:
        self._coro = coro
        self._on_step = on_step

    def __await__(self) -> Any:
        coro, on_step = self._coro, self._on_step
        value: Any = None
        thrown: BaseException | None = None
        while True:
            waited = queue_wait()
            start = time.perf_counter()
            try:
                if thrown is not None:
                    yielded = coro.throw(thrown)
                else:
                    yielded = coro.send(value)
            except StopIteration as stop:
                on_step(start, time.perf_counter(), waited)
                return stop.value
            except BaseException:
                on_step(start, time.perf_counter(), waited)
                raise
            on_step(start, time.perf_counter(), waited)
            try:
                value, thrown = (yield yielded), None
            except GeneratorExit:
                coro.close()
                raise
            except BaseException as exc:  # a cancellation, handed to the coroutine
                value, thrown = None, exc


class RateLimitTimeout(CallTimeout):
    """A call's turn under the rate limit (``--ctxbench-rate-limit``) would come
    later than its timeout allows: it is not started (and takes no turn).

    :param wait: seconds until the turn.
    :param timeout: the call's timeout, in seconds.
    :param who: what was not started (``"the request"``, ``"System 'x'"``).
    :param limit: how the timeout is named (``"its timeout of 60s"``).
    """

    def __init__(
        self,
        wait: float,
        timeout: float,
        who: str = "the request",
        limit: str | None = None,
    ) -> None:
        self.wait, self.timeout = wait, timeout
        limit = limit or f"its timeout of {timeout:g}s"
        super().__init__(
            f"{who} was not started: its turn under --ctxbench-rate-limit would come"
            f" in {wait:.3g}s, later than {limit} allows (raise the rate limit or"
            " the timeout)"
        )


class Budget:
    """At most ``size`` slots taken at once, by threads or by event-loop tasks alike.

    Waiters are served first come, first served, whichever side they wait on.
    """

    def __init__(self, size: int) -> None:
        if size < 1:
            raise ValueError(f"a call budget needs at least 1 slot, got {size}.")
        self.size = size
        self._lock = threading.Lock()
        self._free = size
        self._waiters: collections.deque[Any] = collections.deque()
        #: the most slots ever taken at once (for tests and the status line)
        self.peak = 0

    @property
    def in_use(self) -> int:
        return self.size - self._free

    def _took(self) -> None:
        self.peak = max(self.peak, self.size - self._free)

    def acquire(self) -> None:
        """Take a slot, blocking this thread until one is free."""
        with self._lock:
            if self._free and not self._waiters:
                self._free -= 1
                self._took()
                return
            event = threading.Event()
            self._waiters.append(event)
        while not event.wait(_POLL):  # wakes up for Ctrl-C (see wait_for)
            pass

    async def acquire_async(self) -> None:
        """Take a slot, suspending this task until one is free."""
        loop = asyncio.get_running_loop()
        with self._lock:
            if self._free and not self._waiters:
                self._free -= 1
                self._took()
                return
            fut: asyncio.Future[None] = loop.create_future()
            self._waiters.append((loop, fut))
        try:
            await fut
        except asyncio.CancelledError:
            # Handed a slot just as we were cancelled: give it on.
            if fut.done() and not fut.cancelled():
                self.release()
            raise

    def release(self) -> None:
        """Give a slot back, to the longest waiter if any."""
        with self._lock:
            while self._waiters:
                waiter = self._waiters.popleft()
                if isinstance(waiter, threading.Event):
                    waiter.set()  # the slot passes to it: _free unchanged
                    return
                loop, fut = waiter
                if fut.done() or loop.is_closed():
                    continue  # a cancelled waiter
                loop.call_soon_threadsafe(self._hand, fut)
                return
            self._free += 1

    def _hand(self, fut: asyncio.Future[None]) -> None:
        if fut.done():  # cancelled between release() and now
            self.release()
        else:
            fut.set_result(None)


class RateLimit:
    """Starts at most ``per_second`` calls a second, evenly spaced."""

    def __init__(self, per_second: float) -> None:
        if not per_second > 0:
            raise ValueError(f"a rate limit must be > 0 per second, got {per_second}.")
        self.interval = 1.0 / per_second
        self._next = 0.0
        self._lock = threading.Lock()

    def reserve(self, within: float | None = None) -> float:
        """Seconds to wait before this call may start (the turn is taken).

        :param within: the longest wait the caller accepts (its timeout), or
            ``None``: any.
        :raises RateLimitTimeout: the turn would come later than ``within``; no turn
            is taken, so the calls after it are not pushed back.
        """
        with self._lock:
            now = time.monotonic()
            start = max(now, self._next)
            if within is not None and start - now > within:
                raise RateLimitTimeout(start - now, within)
            self._next = start + self.interval
            return start - now


#: the budget an endpoint starts with (below the ceiling): TCP's initial window
#: (RFC 6928); it doubles each round trip until the endpoint first refuses.
INITIAL_BUDGET = 10
#: past the budget at which the endpoint last refused, the budget grows this many
#: times slower (one more slot per PROBE budgets' worth of answers)
PROBE = 4


class EndpointBudget:
    """The adaptive budget of one endpoint in this process: requests in flight to it.

    ``--ctxbench-concurrency`` (this process's share of it) is the ceiling. The
    budget starts at :data:`INITIAL_BUDGET` (or the ceiling, if lower) and grows by
    one per answered request up to the first refusal (slow start: it doubles each
    round trip); from then on by one per budget's worth of answered requests
    (additive increase). A ``429`` or ``503`` halves it (multiplicative decrease;
    once per round: the other refusals of requests sent before the cut do not cut
    again) and a ``Retry-After`` holds every new request to the endpoint back until
    then. Back at the budget where it was last refused, it grows :data:`PROBE`
    times slower, and at full speed again once it is past it (the endpoint serves
    more). Threads and event-loop tasks wait alike, first come, first served.

    :param endpoint: ``scheme://host:port`` (for the report).
    :param ceiling: the most requests in flight it may ever allow.
    :param initial: the budget it starts with (an xdist worker's share of
        :data:`INITIAL_BUDGET`, so that the run starts at that many in all).
    """

    def __init__(
        self, endpoint: str, ceiling: int, initial: int = INITIAL_BUDGET
    ) -> None:
        if ceiling < 1:
            raise ValueError(
                f"an endpoint budget needs at least 1 slot, got {ceiling}."
            )
        self.endpoint = endpoint
        self.ceiling = ceiling
        self._limit = float(max(1, min(ceiling, initial)))
        self._threshold = float(ceiling)  # slow start until the first refusal
        self._refused_at = math.inf  # the budget at the latest cut
        self._lock = threading.Lock()
        self._waiters: collections.deque[Any] = collections.deque()
        self._epoch = 0
        self._paused_until = 0.0
        self._timer: threading.Timer | None = None
        self.in_flight = 0
        #: requests answered 429 / 503, and all requests sent
        self.refused = 0
        self.unavailable = 0
        self.sent = 0
        #: the lowest the budget went (the ceiling when never cut)
        self.lowest = int(self._limit)

    @property
    def limit(self) -> int:
        """Requests the endpoint may have in flight now."""
        return max(1, int(self._limit))

    def _may_start(self, now: float) -> bool:
        return self.in_flight < self.limit and now >= self._paused_until

    def _start(self) -> int:
        self.in_flight += 1
        self.sent += 1
        return self._epoch

    def acquire(self) -> int:
        """Wait (this thread) for a slot; returns the ticket :meth:`release` takes."""
        with self._lock:
            if not self._waiters and self._may_start(time.monotonic()):
                return self._start()
            event = threading.Event()
            box: list[int] = []
            self._waiters.append((event, box))
        while not event.wait(_POLL):  # wakes up for Ctrl-C (see wait_for)
            pass
        return box[0]

    async def acquire_async(self) -> int:
        """Wait (this task) for a slot; returns the ticket :meth:`release` takes."""
        loop = asyncio.get_running_loop()
        with self._lock:
            if not self._waiters and self._may_start(time.monotonic()):
                return self._start()
            fut: asyncio.Future[int] = loop.create_future()
            self._waiters.append((loop, fut))
        try:
            return await fut
        except asyncio.CancelledError:
            if fut.done() and not fut.cancelled():  # handed a slot as we were cancelled
                self.release(fut.result(), None, sent=False)
            raise

    def release(
        self,
        ticket: int,
        status: int | None,
        retry_after: float | None = None,
        sent: bool = True,
    ) -> None:
        """A request sent with ``ticket`` ended: answered ``status`` (``None``: no
        answer, or cancelled), with ``Retry-After`` of ``retry_after`` seconds;
        ``sent=False``: it never reached the endpoint (answered from the cache)."""
        with self._lock:
            self.in_flight -= 1
            if not sent:
                self.sent -= 1
                self._grant()
                return
            if status in (429, 503):
                if status == 429:
                    self.refused += 1
                else:
                    self.unavailable += 1
                if ticket == self._epoch:  # the first refusal since the last cut
                    self._epoch += 1
                    self._refused_at = float(self.limit)
                    self._limit = max(1.0, float(int(self._limit) // 2))
                    self._threshold = self._limit
                    self.lowest = min(self.lowest, self.limit)
                if retry_after is not None and retry_after > 0:
                    until = time.monotonic() + retry_after
                    if until > self._paused_until:
                        self._paused_until = until
                        self._arm(retry_after)
            elif status is not None and status < 500:
                if self._limit < self._threshold:  # slow start
                    self._limit += 1.0
                elif self._limit + 1.0 < self._refused_at:  # back towards it
                    self._limit += 1.0 / self._limit
                else:  # probing past where the endpoint refused: cautiously
                    self._limit += 1.0 / (PROBE * self._limit)
                    if self._limit >= self._refused_at + 1.0:
                        self._refused_at = math.inf  # it serves more now
                self._limit = min(self._limit, float(self.ceiling))
            self._grant()

    def _arm(self, delay: float) -> None:
        """Hand slots out again when a ``Retry-After`` pause ends."""
        if self._timer is not None:
            self._timer.cancel()
        timer = threading.Timer(delay, self._wake)
        timer.daemon = True
        self._timer = timer
        timer.start()

    def _wake(self) -> None:
        with self._lock:
            self._grant()

    def _grant(self) -> None:
        """Hand free slots to the longest waiters (the lock is held)."""
        now = time.monotonic()
        while self._waiters and self._may_start(now):
            waiter = self._waiters.popleft()
            first, second = waiter
            if isinstance(first, threading.Event):
                second.append(self._start())
                first.set()
                continue
            loop, fut = first, second
            if fut.done() or loop.is_closed():
                continue  # a cancelled waiter
            ticket = self._start()
            try:
                loop.call_soon_threadsafe(self._hand, fut, ticket)
            except RuntimeError:  # the loop closed meanwhile
                self.in_flight -= 1
                self.sent -= 1

    def _hand(self, fut: asyncio.Future[int], ticket: int) -> None:
        if fut.done():  # cancelled between _grant() and now
            self.release(ticket, None, sent=False)
        else:
            fut.set_result(ticket)

    def summary(self) -> dict[str, Any]:
        """What the report's ``llm.budget`` says of this endpoint."""
        with self._lock:
            return {
                "ceiling": self.ceiling,
                "budget": self.limit,
                "lowest": self.lowest,
                "requests": self.sent,
                "refused_429": self.refused,
                "unavailable_503": self.unavailable,
            }


def parse_rate(text: str) -> float:
    """``"10/s"``, ``"600/min"`` or ``"2.5/s"`` → calls per second.

    :raises ValueError: with a message saying what is expected.
    """
    raw = str(text).strip()
    number, sep, unit = raw.partition("/")
    units = {"s": 1.0, "sec": 1.0, "second": 1.0, "min": 60.0, "minute": 60.0}
    try:
        value = float(number.strip())
    except ValueError:
        value = float("nan")
    per = units.get(unit.strip().lower()) if sep else None
    if per is None or not (value > 0 and value != float("inf")):
        raise ValueError(
            f"must be a positive number of requests per second or per minute, such as"
            f" 10/s or 600/min, given: {text!r}"
        )
    return value / per


# --- the process-wide limits the LLM client reads --------------------------------

_LIMITS: tuple[Budget | None, RateLimit | None] = (None, None)


_ENDPOINTS: dict[str, EndpointBudget] = {}
_ENDPOINTS_LOCK = threading.Lock()
_INITIAL = INITIAL_BUDGET


def install(
    budget: Budget | None, rate: RateLimit | None, initial: int = INITIAL_BUDGET
) -> None:
    """Make ``budget`` and ``rate`` the limits every judge / client call takes (and
    start the endpoints' adaptive budgets afresh, at ``initial``)."""
    global _LIMITS, _INITIAL
    _LIMITS = (budget, rate)
    _INITIAL = initial
    with _ENDPOINTS_LOCK:
        _ENDPOINTS.clear()


def endpoint_budget(url: str) -> EndpointBudget | None:
    """The adaptive budget of ``url``'s endpoint (scheme, host and port), its
    ceiling the process's call budget; ``None`` outside a run with a budget."""
    budget = _LIMITS[0]
    if budget is None:
        return None
    key = endpoint_of(url)
    with _ENDPOINTS_LOCK:
        gate = _ENDPOINTS.get(key)
        if gate is None:
            gate = _ENDPOINTS[key] = EndpointBudget(key, budget.size, _INITIAL)
        return gate


def endpoint_budgets() -> dict[str, dict[str, Any]]:
    """Each endpoint's :meth:`EndpointBudget.summary` (this process's)."""
    with _ENDPOINTS_LOCK:
        gates = list(_ENDPOINTS.values())
    return {g.endpoint: g.summary() for g in gates}


def uninstall() -> None:
    install(None, None)


def current_limits() -> tuple[Budget | None, RateLimit | None]:
    return _LIMITS


@contextlib.contextmanager
def slot(timeout: float | None = None) -> Iterator[None]:
    """Hold a slot of the process's budget (and wait the rate limit) for one request.

    A no-op outside a run with limits, and inside a System call that holds a slot.

    :param timeout: the request's timeout: a turn of the rate limit further away
        raises :class:`RateLimitTimeout` instead of waiting.
    """
    budget, rate = _LIMITS
    if _HOLDING.get() or (budget is None and rate is None):
        yield
        return
    if budget is not None:
        budget.acquire()
    try:
        if rate is not None:
            delay = rate.reserve(timeout)
            if delay > 0:
                time.sleep(delay)
        token = _HOLDING.set(True)
        try:
            yield
        finally:
            _HOLDING.reset(token)
    finally:
        if budget is not None:
            budget.release()


@contextlib.asynccontextmanager
async def aslot(timeout: float | None = None) -> AsyncIterator[None]:
    """:func:`slot` for coroutines."""
    budget, rate = _LIMITS
    if _HOLDING.get() or (budget is None and rate is None):
        yield
        return
    if budget is not None:
        await budget.acquire_async()
    try:
        if rate is not None:
            delay = rate.reserve(timeout)
            if delay > 0:
                await asyncio.sleep(delay)
        token = _HOLDING.set(True)
        try:
            yield
        finally:
            _HOLDING.reset(token)
    finally:
        if budget is not None:
            budget.release()


def is_async_system(system: Any, method: str = "process") -> bool:
    """True when ``system.<method>`` is an ``async def``."""
    fn = getattr(system, method, None)
    return fn is not None and inspect.iscoroutinefunction(fn)


def system_concurrency(system: Any) -> int | None:
    """The System's own ``concurrency`` attribute, checked (``None``: no limit)."""
    value = getattr(system, "concurrency", None)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise CtxBenchError(
            f"System {getattr(system, 'name', system)!r} has concurrency = {value!r};"
            " it must be a positive integer (1 runs its calls one at a time) or None."
        )
    return value


@dataclass
class Outcome:
    """A finished call: its value or the exception it raised, and how long it ran
    (from the moment it had its slot)."""

    value: Any
    error: BaseException | None
    latency: float
    #: what the ``then`` step of :meth:`CallRunner.submit` returned, if it ran
    extra: Any = None
    #: the first time a System is found blocking the loop: the warning's text (the
    #: item that takes the outcome issues it, so pytest shows it with that test)
    warning: str | None = None

    def warn(self) -> None:
        """Issue :attr:`warning`, if any (in the thread that takes the outcome)."""
        if self.warning is not None:
            import warnings

            warnings.warn(BlockingSystemWarning(self.warning), stacklevel=3)

    def result(self) -> Any:
        if self.error is not None:
            raise self.error
        return self.value


class CallRunner:
    """Runs calls under the budget, the rate limit and the timeout (one per process).

    :param budget: the process's share of the run's call budget.
    :param rate: the process's share of the run's rate limit, or ``None``.
    :param timeout: seconds a call may last, or ``None``.
    """

    def __init__(
        self,
        budget: Budget,
        rate: RateLimit | None = None,
        timeout: float | None = None,
        *,
        name: str = "ctxbench-calls",
    ) -> None:
        self.name = name
        self.budget = budget
        self.rate = rate
        self.timeout = timeout
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._per_system: dict[int, asyncio.Semaphore] = {}
        self._pending: set[Future[Any]] = set()
        self._threads: set[threading.Thread] = set()
        self._closed = False
        self.done = 0
        self._stalls = _Stalls()
        self._calls = itertools.count()
        #: System name -> the longest step that blocked the loop (seconds)
        self.blocking: dict[str, float] = {}
        self._warned: set[str] = set()

    # -- the loop ------------------------------------------------------------------

    def _ensure_loop(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._closed:
                raise RuntimeError("the call runner is closed")
            if self._loop is None:
                loop = asyncio.new_event_loop()
                ready = threading.Event()

                def main() -> None:
                    asyncio.set_event_loop(loop)
                    loop.call_soon(ready.set)
                    loop.run_forever()

                thread = threading.Thread(target=main, name=self.name, daemon=True)
                thread.start()
                ready.wait()
                self._loop, self._thread = loop, thread
            return self._loop

    @property
    def in_flight(self) -> int:
        return self.budget.in_use

    def submit(
        self,
        fn: Callable[[], Any],
        *,
        system: Any,
        is_async: bool = False,
        context: contextvars.Context | None = None,
        then: Callable[[Any], Coroutine[Any, Any, Any]] | None = None,
    ) -> Future[Any]:
        """Start ``fn()`` (a System call: sync, or returning a coroutine when the
        System is async) when the limits allow; the future holds its result, or
        :class:`CallTimeout`, or what it raised.

        ``then(value)``, a coroutine, runs on the loop once the call has succeeded
        and given its slot back (the LLM judges of the example: each of their
        requests takes a slot of its own); its result is the outcome's ``extra``."""
        loop = self._ensure_loop()
        ctx = (context or contextvars.copy_context()).copy()
        ctx.run(_HOLDING.set, True)
        coro = self._run(fn, system, ctx, is_async, then)
        fut: Future[Any] = asyncio.run_coroutine_threadsafe(coro, loop)
        with self._lock:
            self._pending.add(fut)
        fut.add_done_callback(self._finished)
        return fut

    def _finished(self, fut: Future[Any]) -> None:
        with self._lock:
            self._pending.discard(fut)
            if not fut.cancelled():
                self.done += 1

    def call(
        self, fn: Callable[[], Any], *, system: Any, is_async: bool = False
    ) -> Outcome:
        """Run one call through the runner and wait for it (from a thread that runs
        no event loop)."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            pass
        else:
            raise CtxBenchError(
                f"System {getattr(system, 'name', system)!r} is called from inside a"
                " running event loop, where ctxbench cannot wait for it; call it from"
                " synchronous code (pytest items, evaluate()) instead."
            )
        outcome: Outcome = wait_for(self.submit(fn, system=system, is_async=is_async))
        return outcome

    async def _own_slot(self, system: Any) -> asyncio.Semaphore | None:
        limit = system_concurrency(system)
        if limit is None:
            return None
        sem = self._per_system.get(id(system))
        if sem is None:
            sem = self._per_system[id(system)] = asyncio.Semaphore(limit)
        await sem.acquire()
        return sem

    async def _run(
        self,
        fn: Callable[[], Any],
        system: Any,
        ctx: contextvars.Context,
        is_async: bool,
        then: Callable[[Any], Coroutine[Any, Any, Any]] | None = None,
    ) -> Outcome:
        outcome = await self._call(fn, system, ctx, is_async)
        if then is not None and outcome.error is None:
            after = ctx.copy()
            after.run(_HOLDING.set, False)  # the judges' requests take their own slots
            outcome.extra = await after.run(asyncio.ensure_future, then(outcome.value))
        return outcome

    async def _call(
        self,
        fn: Callable[[], Any],
        system: Any,
        ctx: contextvars.Context,
        is_async: bool,
    ) -> Outcome:
        __tracebackhide__ = True
        own = await self._own_slot(system)
        try:
            await self.budget.acquire_async()
            try:
                if self._closed:  # closing: start nothing more
                    raise asyncio.CancelledError
                if self.rate is not None:
                    # The timeout bounds the wait for a turn too: a turn further
                    # away fails now (no turn taken) rather than wait past it.
                    try:
                        delay = self.rate.reserve(self.timeout)
                    except RateLimitTimeout as exc:
                        late = RateLimitTimeout(
                            exc.wait,
                            exc.timeout,
                            f"System {getattr(system, 'name', system)!r}",
                            f"--ctxbench-timeout={exc.timeout:g}s",
                        )
                        return Outcome(None, late, 0.0)
                    if delay > 0:
                        await asyncio.sleep(delay)
                        if self._closed:
                            raise asyncio.CancelledError
                start = time.perf_counter()
                call = next(self._calls)
                try:
                    if is_async:
                        self._stalls.begin(call, start)
                        try:
                            value = await self._run_async(fn, ctx, system, call, start)
                        finally:
                            self._stalls.end(call)
                    else:
                        value = await self._run_thread(fn, ctx, system, start)
                except asyncio.TimeoutError:
                    took = time.perf_counter() - start
                    error: Exception = CallTimeout(
                        f"System {getattr(system, 'name', system)!r} did not answer"
                        f" within --ctxbench-timeout={self.timeout:g}s (abandoned after"
                        f" {took:.1f}s)"
                        + self._blocked_note(system)
                    )
                    return self._outcome(None, error, took, system)
                except Exception as exc:
                    return self._outcome(None, exc, time.perf_counter() - start, system)
                return self._outcome(value, None, time.perf_counter() - start, system)
            finally:
                self.budget.release()
        finally:
            if own is not None:
                own.release()

    def _outcome(
        self, value: Any, error: BaseException | None, took: float, system: Any
    ) -> Outcome:
        out = Outcome(value, error, took)
        name = str(getattr(system, "name", system))
        if name in self.blocking and name not in self._warned:
            self._warned.add(name)
            out.warning = (
                f"System {name!r} blocked the event loop for"
                f" {self.blocking[name]:.1f}s in one step of its async process(): its"
                " calls share one loop, so a blocking step (time.sleep, sync I/O, a"
                " sync HTTP client) stalls every call in flight. Run the blocking"
                " part with `await asyncio.to_thread(...)`, or make process() a plain"
                " def (it then runs in a thread of its own)."
            )
        return out

    def _blocked_note(self, system: Any) -> str:
        took = self.blocking.get(str(getattr(system, "name", system)))
        return (
            f"; it blocked the event loop for {took:.1f}s (see the"
            " BlockingSystemWarning)"
            if took is not None
            else ""
        )

    async def _run_async(
        self,
        fn: Callable[[], Any],
        ctx: contextvars.Context,
        system: Any,
        call: int,
        began: float,
    ) -> Any:
        __tracebackhide__ = True
        stalls = self._stalls
        name = str(getattr(system, "name", system))
        # The built-in Systems (the proxy) are never named: their first step builds
        # the HTTP client, which a loaded machine can stretch past the threshold.
        ours = type(system).__module__.startswith("pytest_context_bench.")

        def on_step(start: float, end: float, waited: float | None) -> None:
            stalls.add(start, end, call)
            if end - start >= BLOCKING_STEP and not ours:
                # The step's own time: the wall time less what the thread waited
                # for a CPU (another process's load is not the System blocking).
                now = queue_wait()
                took = end - start - (now - waited if now is not None and waited is not None else 0.0)
                if took >= BLOCKING_STEP:
                    self.blocking[name] = max(self.blocking.get(name, 0.0), took)

        async def timed(coro: Any) -> Any:
            __tracebackhide__ = True
            return await _Timed(coro, on_step)

        # The task is created inside ``ctx``, so it runs in (a copy of) it.
        def start() -> asyncio.Task[Any]:
            __tracebackhide__ = True
            result = fn()
            if inspect.iscoroutine(result):
                return asyncio.ensure_future(timed(result))
            if not inspect.isawaitable(result):

                async def done() -> Any:
                    return result

                return asyncio.ensure_future(done())
            return asyncio.ensure_future(result)

        task = ctx.run(start)
        if self.timeout is None:
            return await task
        timeout = self.timeout
        try:
            while True:
                # The call's own time: the loop's time minus the other calls' long
                # steps while it waited (they are theirs, whatever the concurrency).
                now = time.perf_counter()
                own = now - began - stalls.others(call, began, now)
                if task.done():
                    if own > timeout:  # finished, but past its time (blocking step)
                        raise asyncio.TimeoutError
                    return task.result()
                if own > timeout:
                    task.cancel()
                    await asyncio.gather(task, return_exceptions=True)
                    raise asyncio.TimeoutError
                await asyncio.wait({task}, timeout=timeout - own)
        except asyncio.CancelledError:
            task.cancel()  # the call's waiter was cancelled (closing): so is the call
            raise

    async def _run_thread(
        self, fn: Callable[[], Any], ctx: contextvars.Context, system: Any, began: float
    ) -> Any:
        __tracebackhide__ = True
        loop = asyncio.get_running_loop()
        out: asyncio.Future[Any] = loop.create_future()

        def deliver(ok: bool, value: Any, took: float) -> None:
            if out.done():
                return
            if self.timeout is not None and took > self.timeout:
                # Past its time in its own thread (the loop may have been too busy
                # to notice at the moment: the thread's clock decides).
                out.set_exception(asyncio.TimeoutError())
            elif ok:
                out.set_result(value)
            else:
                out.set_exception(value)

        def body() -> None:
            __tracebackhide__ = True
            try:
                value = ctx.run(fn)
            except BaseException as exc:  # handed to the waiting item
                ok, value = False, exc
            else:
                ok = True
            took = time.perf_counter() - began
            with contextlib.suppress(RuntimeError):  # loop closed: nobody waits
                loop.call_soon_threadsafe(deliver, ok, value, took)
            with self._lock:
                self._threads.discard(thread)

        name = f"ctxbench-call-{getattr(system, 'name', 'system')}"
        thread = threading.Thread(target=body, name=name, daemon=True)
        thread.start()
        with self._lock:
            if thread.is_alive():  # else it has already discarded itself
                self._threads.add(thread)
        if self.timeout is None:
            return await out
        while not out.done():
            # The thread's own clock: a loop held up by another call's blocking step
            # wakes late, and must not time out a thread that answered in time.
            left = self.timeout - (time.perf_counter() - began)
            if left <= 0:
                await asyncio.sleep(0)  # a delivery already queued comes first
                if out.done():
                    break
                raise asyncio.TimeoutError
            await asyncio.wait({out}, timeout=left)
        return out.result()

    # -- the end -------------------------------------------------------------------

    def close(self, wait: float | None = None) -> None:
        """Cancel the calls not started yet and the async calls in flight; wait up to
        ``wait`` seconds (``None``: the per-call timeout, else until they end) for
        the sync calls in flight; stop the loop."""
        with self._lock:
            self._closed = True
            loop, thread = self._loop, self._thread
            self._loop = self._thread = None
            pending = list(self._pending)
        if loop is None or thread is None:
            return
        for fut in pending:
            fut.cancel()

        async def drain() -> None:
            # On the loop, so that no task is between taking its slot and starting
            # its thread: after this, every call that started is in self._threads.
            tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

        with contextlib.suppress(Exception):
            asyncio.run_coroutine_threadsafe(drain(), loop).result(timeout=10)
        limit = wait if wait is not None else self.timeout
        deadline = None if limit is None else time.monotonic() + limit
        with self._lock:
            threads = list(self._threads)
        for t in threads:
            t.join(None if deadline is None else max(0.0, deadline - time.monotonic()))
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=10)
        if not thread.is_alive():
            loop.close()

    @property
    def running_threads(self) -> int:
        with self._lock:
            return sum(1 for t in self._threads if t.is_alive())


_FALLBACK: CallRunner | None = None
_FALLBACK_LOCK = threading.Lock()


def fallback_runner() -> CallRunner:
    """The runner of async Systems called outside a run with limits (``evaluate()``,
    a ``ctxbench_system`` fixture without ``--ctxbench-concurrency``): no budget to
    speak of, no timeout, one event loop for the process."""
    global _FALLBACK
    with _FALLBACK_LOCK:
        if _FALLBACK is None:
            _FALLBACK = CallRunner(Budget(1 << 30), name="ctxbench-async-systems")
        return _FALLBACK


def run_sync(coro_fn: Callable[[], Coroutine[Any, Any, T]], what: str) -> T:
    """Run a coroutine to completion from synchronous code (no loop running here)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro_fn())
    raise CtxBenchError(
        f"{what} is async and is called from inside a running event loop, where"
        " ctxbench cannot wait for it; call it from synchronous code instead."
    )
