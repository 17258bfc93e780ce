"""System calls ahead of the items: the run's call budget, prefetching, the end.

pytest runs the items one after another; with ``--ctxbench-concurrency=N`` the
System calls of the command-line items that come next (in collection order, or in
the order an xdist worker was handed them) are started ahead, up to this process's
share of ``N`` in flight. Each item then waits for its own call and scores it
itself, so ids, statuses, rows and report order are those of a serial run. The
evaluators (sandbox, ROUGE, judges) run in the item, in the main thread, never in
the way of the calls in flight.

Only the command-line items whose System is known at collection time
(``--ctxbench-system`` / ``--ctxbench-proxy``) are prefetched. With a
``ctxbench_system`` fixture the item makes its call itself, one at a time, still
through the runner (budget, rate limit, timeout); a marked test's body makes its own
calls; memory datasets ask their questions in order, as before.
"""

from __future__ import annotations

import asyncio
import bisect
import collections
import threading
import time
from collections.abc import Callable, Coroutine, Iterable, Iterator
from concurrent.futures import Future
from concurrent.futures import wait as wait_any
from typing import Any

import pytest

from ..calls import call_scope, current_call, evaluator_source, serving
from ..concurrency import (
    INITIAL_BUDGET,
    Budget,
    CallRunner,
    Outcome,
    RateLimit,
    current_limits,
    endpoint_budgets,
    install,
    is_async_system,
    uninstall,
    wait_for,
)
from ..engine import SystemCall, call_function, record_call_outcome
from ..engine import _scope_for as scope_for
from .collection import CliCase, case_of

__all__ = ["Calls", "calls_ahead", "share_of", "worker_count"]


def worker_count(config: pytest.Config) -> int:
    """How many xdist workers the controller starts (0 without xdist)."""
    if getattr(config.option, "dist", "no") == "no":
        return 0
    total = 0
    for spec in getattr(config.option, "tx", None) or []:
        head, star, _ = str(spec).partition("*")
        total += int(head) if star and head.isdigit() else 1
    return total


def share_of(total: int, workers: int, index: int) -> int:
    """Worker ``index``'s share of ``total`` slots over ``workers`` workers (the
    shares add up to ``total``; the first ``total % workers`` get one more)."""
    return total // workers + (1 if index < total % workers else 0)


def _worker_queue(config: pytest.Config) -> Any:
    """xdist's WorkerInteractor in a worker (what it was handed to run), or None.

    Read defensively: it is xdist's internal state; without it a worker prefetches
    only the next item pytest names.
    """
    for plugin in config.pluginmanager.get_plugins():
        if hasattr(plugin, "torun") and hasattr(plugin, "nextitem_index"):
            return plugin
    return None


class Calls:
    """This process's System calls: the runner, and the calls started ahead.

    :param share: slots of the run's budget this process may fill.
    :param rate: this process's share of the rate limit (calls per second).
    :param timeout: seconds per System call.
    :param explicit: whether the user set a budget (else: one call at a time, with
        no runner unless a rate limit or a timeout needs one).
    :param initial: what each endpoint's adaptive budget starts at in this process
        (its share of :data:`~pytest_context_bench.concurrency.INITIAL_BUDGET`).
    """

    def __init__(
        self,
        share: int,
        rate: float | None,
        timeout: float | None,
        explicit: bool,
        initial: int = INITIAL_BUDGET,
    ) -> None:
        self.share = share
        self.budget = Budget(share)
        self.runner: CallRunner | None = None
        if explicit or rate is not None or timeout is not None:
            self.runner = CallRunner(
                self.budget, RateLimit(rate) if rate is not None else None, timeout
            )
            install(self.budget, self.runner.rate, initial)
        #: each endpoint's adaptive budget at the end (concurrency.EndpointBudget),
        #: kept by close()
        self.endpoints: dict[str, dict[str, Any]] = {}
        self._ahead: dict[int, tuple[Future[Any], SystemCall, dict[str, Any]]] = {}
        self._index: dict[int, int] | None = None
        #: the items' indices that have a call started ahead, and how far into
        #: them calls were started (``_advance_in_order``)
        self._positions: list[int] = []
        self._started = -1
        self._queue: Any = None
        self._stopped = False
        #: calls started ahead that have finished, and when the latest of them did
        #: (monotonic seconds; for the status line's ETA; see progress())
        self.done = 0
        self.done_at: collections.deque[float] = collections.deque(maxlen=512)
        self._done_lock = threading.Lock()
        #: when the first call was started ahead (monotonic), or None
        self.first_start: float | None = None
        #: called now and then, in the main thread, while an item waits for its call
        #: (the status line redraws itself; see status.py)
        self.on_wait: Callable[[], None] | None = None

    @property
    def prefetching(self) -> bool:
        return self.runner is not None and self.share > 1 and not self._stopped

    def _upcoming(
        self, session: pytest.Session, item: pytest.Item
    ) -> Iterator[pytest.Item]:
        """``item``, then the items this xdist worker was handed, in order."""
        items = session.items
        nxt = self._queue.nextitem_index
        with self._queue.torun.lock() as queued:
            indices = list(queued)
        yield item
        for i in [nxt, *indices]:
            if isinstance(i, int) and 0 <= i < len(items):
                yield items[i]

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_protocol(
        self, item: pytest.Item, nextitem: pytest.Item | None
    ) -> None:
        """Before each item: start the calls of the items ahead."""
        if self.prefetching:
            self.advance(item.session, item)

    def advance(self, session: pytest.Session, item: pytest.Item) -> None:
        """Start the calls of the items from ``item`` on, up to the window."""
        if not self.prefetching:
            return
        if session.shouldfail or session.shouldstop:
            self._stopped = True
            return
        window = 2 * self.share
        if self._queue is None:
            self._queue = _worker_queue(session.config) or False
        if not self._queue:
            self._advance_in_order(session.items, item, window)
            return
        seen = 0
        scanned = 0
        for nxt in self._upcoming(session, item):
            scanned += 1
            if seen >= window or scanned > 4 * window + 16:
                break
            case = _ahead_case(nxt)
            if case is None:
                continue
            seen += 1
            if id(case) not in self._ahead:
                self._start(case)

    def _advance_in_order(
        self, items: list[pytest.Item], item: pytest.Item, window: int
    ) -> None:
        """:meth:`advance` over the session's items in order (no xdist queue): the
        same calls started as a scan of the ``window`` cases from ``item`` on
        (looking no further than ``4 * window + 16`` items), without scanning the
        cases already started each time. The positions of the cases are found
        once; the cases up to :attr:`_started` have been started before."""
        if self._index is None:
            self._index = {id(it): i for i, it in enumerate(items)}
            self._positions = [
                i for i, it in enumerate(items) if _ahead_case(it) is not None
            ]
            self._started = -1
        start = self._index.get(id(item))
        if start is None:
            return
        positions = self._positions
        first = bisect.bisect_left(positions, start)
        last = min(first + window, len(positions))
        limit = start + 4 * window + 16  # items scanned: start .. limit - 1
        for k in range(max(first, self._started + 1), last):
            at = positions[k]
            if at >= limit:
                break
            self._started = k
            case = _ahead_case(items[at])
            if case is not None and id(case) not in self._ahead:
                self._start(case)

    def _start(self, case: CliCase) -> None:
        assert self.runner is not None
        system = case.system
        example = case.ref.load()
        scope = scope_for(system, example, case.ref.trial or 1)
        call = SystemCall(scope)
        fn, is_async = call_function(system, dict(example))
        evaluators = case.ref.spec.evaluators_for(case.ref.ds_pos)
        with call_scope(scope):
            future = self.runner.submit(
                fn,
                system=system,
                is_async=is_async,
                then=judges_ahead(evaluators, example),
            )
        if self.first_start is None:
            self.first_start = time.monotonic()
        future.add_done_callback(self._call_done)
        self._ahead[id(case)] = (future, call, example)

    def _call_done(self, future: Future[Any]) -> None:
        # On the runner's loop thread (or the main thread when cancelled).
        if not future.cancelled():
            with self._done_lock:
                self.done_at.append(time.monotonic())
                self.done += 1

    def progress(self) -> tuple[int, list[float]]:
        """Calls started ahead that have finished, and when the latest did."""
        with self._done_lock:
            return self.done, list(self.done_at)

    def take(self, case: CliCase) -> tuple[SystemCall, dict[str, Any]] | None:
        """The call started ahead for ``case`` once it has finished (this waits for
        it) and the example it was given a copy of; None if none was started."""
        entry = self._ahead.pop(id(case), None)
        if entry is None:
            return None
        future, call, example = entry
        while self.on_wait is not None and not future.done():
            self.on_wait()
            wait_any([future], timeout=0.1)  # wakes up for Ctrl-C (see wait_for)
        return record_call_outcome(call, wait_for(future)), example

    def close(self, wait: float | None = None) -> None:
        """Start nothing more; cancel what has not started; wait for the sync calls
        in flight (up to ``wait`` seconds, default the timeout); stop the loop."""
        self._stopped = True
        self._ahead.clear()
        if self.runner is not None:
            self.runner.close(wait)
            if current_limits()[0] is self.budget:
                self.endpoints = endpoint_budgets()
                uninstall()


def judges_ahead(
    evaluators: list[Any], example: dict[str, Any]
) -> Callable[[Any], Coroutine[Any, Any, dict[int, Outcome]]] | None:
    """The step awaited after a call started ahead: the evaluators that have an
    async ``ascore`` / ``ascore_details`` (the LLM judges), all at once; their
    results (or errors) wait for the item, which scores in order."""
    waiting = [
        (i, ev)
        for i, ev in enumerate(evaluators)
        if is_async_system(ev, "ascore_details") or is_async_system(ev, "ascore")
    ]
    if not waiting:
        return None

    async def one(ev: Any, processed: dict[str, Any]) -> Outcome:
        name = getattr(ev, "name", type(ev).__name__)
        try:
            with evaluator_source(name):  # its LLM calls are its own (a task each)
                if is_async_system(ev, "ascore_details"):
                    scores, details = await ev.ascore_details(example, processed)
                else:
                    scores, details = await ev.ascore(example, processed), None
        except Exception as exc:
            return Outcome(None, exc, 0.0)
        return Outcome((scores, details), None, 0.0)

    async def judge(processed: Any) -> dict[int, Outcome]:
        if not isinstance(processed, dict):
            return {}
        scope = current_call()
        if scope is not None and scope.system_calls is None:
            # What was measured so far is the System's; the judges' calls follow.
            scope.system_calls = len(scope.usage)
        with serving():  # the judges' requests belong to this call (calls.py)
            done = await asyncio.gather(*(one(ev, processed) for _, ev in waiting))
        return {i: outcome for (i, _), outcome in zip(waiting, done)}

    return judge


def calls_ahead(items: Iterable[pytest.Item]) -> int:
    """How many of ``items`` have their call started ahead (one call each)."""
    return sum(1 for item in items if _ahead_case(item) is not None)


def _ahead_case(item: pytest.Item) -> CliCase | None:
    """The item's case when its call is started ahead: a command-line item with
    its System named on the command line, not a memory question."""
    case = case_of(item)
    if case is None or case.system is None or case.ref.qa >= 0:
        return None
    return case


def make_scheduler(config: pytest.Config, log: Any, ahead: int) -> Any:
    """xdist's ``load`` scheduler, keeping each worker handed ``ahead`` items.

    The stock ``load`` scheduler hands a worker whose tests are slow only two items
    at a time, so the worker could start only two calls ahead whatever its share of
    the budget. This one tops each worker up to ``ahead`` (twice its share) items
    not yet run; the items still go out in collection order, in consecutive
    chunks, and a worker that finishes early still gets the rest.
    """
    from xdist.scheduler import LoadScheduling  # type: ignore[import-untyped]

    class CallAheadScheduling(LoadScheduling):  # type: ignore[misc]
        def _top_up(self, node: Any) -> bool:
            held = len(self.node2pending[node])
            if node.shutting_down or not self.pending or held >= ahead:
                return False
            self._send_tests(node, min(ahead - held, len(self.pending)))
            return True

        def check_schedule(self, node: Any, duration: float = 0) -> None:
            if not self._top_up(node):
                super().check_schedule(node, duration)

        def schedule(self) -> None:
            first = self.collection is None
            super().schedule()
            if first and self.collection:
                sent = [self._top_up(node) for node in self.nodes]
                if any(sent) and not self.pending:
                    for node in self.nodes:
                        node.shutdown()

    return CallAheadScheduling(config, log)
