"""Which example a System call belongs to, for code far below the runner.

The runner wraps every System call (and every LLM-judged evaluator call) in
:func:`call_scope`. Code deep in the call path, such as an HTTP transport that caches
responses or counts usage, reads :func:`current_call` to learn the example, the system
and the trial it is serving, and appends what it measured to the scope, without the
System having to pass anything along.

The scope lives in a :class:`contextvars.ContextVar`: it follows ``await`` and
``asyncio`` tasks by itself; a runner that moves a call to another thread must run it
with :func:`contextvars.copy_context` so the scope goes with it.

A System may not: work it hands to its own ``ThreadPoolExecutor`` (or to
``loop.run_in_executor``) runs in an empty context. :func:`call_owner` then decides
who the request belongs to from the calls *in flight* in this process (each
:func:`call_scope` block, and each System call while it runs, see :func:`serving`):
exactly one in flight owns it; with several, the owner is unknown: its usage is
counted for the run (:func:`unattributed_usage`), and its trial is known only when
all the calls in flight share one (docs/cache.md, "Systems that call from their own
threads").
"""

from __future__ import annotations

import contextlib
import contextvars
import threading
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from .urls import redact_secrets

__all__ = [
    "ATTEMPT_FIGURES",
    "IO_CLIP",
    "RECORDS_PER_ROW",
    "TRANSCRIPT_MODES",
    "CallLog",
    "CallOwner",
    "CallScope",
    "add_attempts",
    "attempt_outcome",
    "call_owner",
    "call_scope",
    "current_call",
    "current_repeat",
    "current_source",
    "evaluator_source",
    "judge_repeat",
    "keep_io",
    "record_attempt",
    "record_io",
    "record_unattributed",
    "run_reports_unattributed",
    "serving",
    "take_attempts",
    "take_unattributed",
    "transcripts_mode",
    "unattributed_usage",
]


#: ``--ctxbench-transcripts``: which rows keep the records of their LLM calls.
TRANSCRIPT_MODES = ("failing", "all", "off")
#: Call records kept per row at most: the first half and the last half of them
#: (the rest are counted in the row's ``calls_omitted``).
RECORDS_PER_ROW = 20

# Outside a pytest run that asks for them, no call is recorded.
_TRANSCRIPTS: list[str] = ["off"]


def transcripts_mode(mode: str | None = None) -> str:
    """Which rows keep their call records (:data:`TRANSCRIPT_MODES`; ``"off"``:
    none are made). ``mode`` sets it (the plugin, at configure and unconfigure)
    and the value before is returned (to be restored)."""
    before = _TRANSCRIPTS[0]
    if mode is not None:
        if mode not in TRANSCRIPT_MODES:
            raise ValueError(f"transcripts mode must be one of {TRANSCRIPT_MODES}")
        _TRANSCRIPTS[0] = mode
    return before


class CallLog:
    """The call records of one :class:`CallScope`, bounded: the first
    ``cap - cap // 2`` and the last ``cap // 2`` are kept, the others counted.

    A record stays a mutable dict until :meth:`take`: the transport completes it
    when its reply arrives, and a retried request (the same request again after a
    failed attempt) adds an attempt to it (:meth:`reopen`) rather than a record.
    """

    __slots__ = ("_cap", "_head", "_lock", "_open", "_seen", "_tail")

    def __init__(self, cap: int = RECORDS_PER_ROW) -> None:
        self._cap = max(0, cap)
        self._head: list[dict[str, Any]] = []
        self._tail: deque[dict[str, Any]] = deque(maxlen=self._cap // 2)
        self._seen = 0
        self._open: dict[str, dict[str, Any]] = {}
        self._lock = threading.Lock()

    def add(self, record: dict[str, Any]) -> None:
        """Keep ``record`` (or count it, past the cap)."""
        with self._lock:
            self._seen += 1
            if len(self._head) < self._cap - self._cap // 2:
                self._head.append(record)
            elif self._tail.maxlen:
                self._tail.append(record)

    def reopen(self, signature: str) -> dict[str, Any] | None:
        """The record whose last attempt of the request ``signature`` failed, if
        any: a retry of it joins it."""
        with self._lock:
            return self._open.get(signature)

    def set_open(self, signature: str, record: dict[str, Any], failed: bool) -> None:
        """Note whether the request ``signature``'s latest attempt failed."""
        with self._lock:
            if failed:
                self._open[signature] = record
            elif self._open.get(signature) is record:
                del self._open[signature]

    def take(self) -> tuple[list[dict[str, Any]], int]:
        """The records kept (their private ``_`` keys dropped) and how many were
        not kept; the log is empty afterwards."""
        with self._lock:
            kept = [*self._head, *self._tail]
            omitted = self._seen - len(kept)
            self._head, self._seen = [], 0
            self._tail.clear()
            self._open.clear()
        # Copies: a thread the System left running cannot change a taken record.
        return [
            {
                k: list(v) if isinstance(v, list) else v
                for k, v in list(r.items())
                if not k.startswith("_")
            }
            for r in kept
        ], omitted


# Which evaluator is running in this context (its LLM calls are its own).
_SOURCE: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "ctxbench_source", default=None
)


def current_source() -> str:
    """``"evaluator:<name>"`` inside :func:`evaluator_source`, else ``"system"``."""
    return _SOURCE.get() or "system"


class evaluator_source:  # noqa: N801
    """The LLM calls made in the block are evaluator ``name``'s."""

    __slots__ = ("_name", "_token")

    def __init__(self, name: str) -> None:
        self._name = name

    def __enter__(self) -> None:
        self._token = _SOURCE.set(f"evaluator:{self._name}")

    def __exit__(self, *exc: object) -> None:
        _SOURCE.reset(self._token)


# Which repeat of a judge's question this context asks (--ctxbench-judge-repeat):
# part of the cache key, so that N repeats are N entries, not one answer read N times.
_REPEAT: contextvars.ContextVar[int] = contextvars.ContextVar(
    "ctxbench_judge_repeat", default=1
)


def current_repeat() -> int:
    """The repeat (1-based) of the judge's question being asked in this context;
    ``1`` outside :func:`judge_repeat`."""
    return _REPEAT.get()


@contextlib.contextmanager
def judge_repeat(index: int) -> Iterator[None]:
    """The LLM calls made in the block ask a judge's question for the ``index``-th
    time (1-based): the cache keys them apart (docs/cache.md, "Judge repeats"); the
    first repeat has the key the question had without repeats."""
    token = _REPEAT.set(int(index))
    try:
        yield
    finally:
        _REPEAT.reset(token)


@dataclass
class CallScope:
    """One System (or judge) call made for one example.

    :param system: the System's name.
    :param dataset: the example's dataset tag.
    :param example_id: the example's id.
    :param trial: the trial index under ``--ctxbench-repeat`` (1-based), else ``1``.
    :param usage: what the layers below recorded during the call (one dict per HTTP
        response, e.g. token usage); the runner copies it into the row.
    """

    system: str
    dataset: str
    example_id: str
    trial: int = 1
    usage: list[dict[str, Any]] = field(default_factory=list)
    #: how many of ``usage`` the System's own call produced (the rest came from the
    #: evaluators); set by the runner when the System returns, ``None`` before.
    system_calls: int | None = None
    #: the records of the LLM calls made during the call (``--ctxbench-transcripts``)
    log: CallLog = field(default_factory=CallLog)


_CURRENT: contextvars.ContextVar[CallScope | None] = contextvars.ContextVar(
    "ctxbench_call", default=None
)


def current_call() -> CallScope | None:
    """The scope of the call in progress in this context, or ``None`` outside one."""
    return _CURRENT.get()


# The calls in flight in this process: id(scope) -> [scope, how many blocks hold it].
_LIVE: dict[int, list[Any]] = {}
_LIVE_LOCK = threading.Lock()


def _enter(scope: CallScope) -> None:
    with _LIVE_LOCK:
        held = _LIVE.get(id(scope))
        if held is None:
            _LIVE[id(scope)] = [scope, 1]
        else:
            held[1] += 1


def _leave(scope: CallScope) -> None:
    with _LIVE_LOCK:
        held = _LIVE.get(id(scope))
        if held is not None:
            held[1] -= 1
            if held[1] <= 0:
                del _LIVE[id(scope)]


class call_scope:  # noqa: N801 (used as a function: ``with call_scope(scope):``)
    """Make ``scope`` the current call for the duration of the ``with`` block (and
    count it in flight meanwhile).

    A class rather than a generator: it is entered several times on every example's
    path."""

    __slots__ = ("_scope", "_token")

    def __init__(self, scope: CallScope) -> None:
        self._scope = scope

    def __enter__(self) -> CallScope:
        self._token = _CURRENT.set(self._scope)
        _enter(self._scope)
        return self._scope

    def __exit__(self, *exc: object) -> None:
        _leave(self._scope)
        _CURRENT.reset(self._token)


class serving:  # noqa: N801
    """Count the current call in flight for the ``with`` block: wraps a System call
    (and the judges started after it) where a runner runs it, in a thread or a task
    that carries the scope in its context but not inside a :func:`call_scope`."""

    __slots__ = ("_scope",)

    def __enter__(self) -> None:
        self._scope = _CURRENT.get()
        if self._scope is not None:
            _enter(self._scope)

    def __exit__(self, *exc: object) -> None:
        if self._scope is not None:
            _leave(self._scope)


@dataclass(frozen=True)
class CallOwner:
    """Who an LLM request belongs to (:func:`call_owner`).

    :param scope: the call its usage goes to; ``None``: the run (unattributed) when
        ``how == "unknown"``, nobody when ``how == "outside"``.
    :param trial: the trial index its cache key takes; ``None``: unknown (the
        request is neither looked up nor stored).
    :param how: ``"context"`` (its own context names a call in flight),
        ``"only"`` (made outside any call's context while exactly one call was in
        flight: that one), ``"unknown"`` (several in flight), ``"outside"`` (none in
        flight: a session fixture, a plain test).
    :param in_flight: how many calls were in flight.
    """

    scope: CallScope | None
    trial: int | None
    how: str
    in_flight: int = 0


def call_owner() -> CallOwner:
    """The call an LLM request made here and now belongs to.

    The scope of this context when it is in flight; else, the one call in flight in
    this process; else (several in flight) nobody knows: the trial is the one all of
    them share, or unknown. A scope in this context that is no longer in flight (a
    context captured by a long-lived thread or loop during an earlier call) is not
    trusted.
    """
    scope = _CURRENT.get()
    with _LIVE_LOCK:
        if scope is not None and id(scope) in _LIVE:
            return CallOwner(scope, scope.trial, "context", len(_LIVE))
        live = [held[0] for held in _LIVE.values()]
    if not live:
        return CallOwner(None, 1, "outside", 0)
    if len(live) == 1:
        return CallOwner(live[0], live[0].trial, "only", 1)
    trials = {s.trial for s in live}
    return CallOwner(None, trials.pop() if len(trials) == 1 else None, "unknown", len(live))


# Usage of the requests whose owner was unknown (counted for the run), and how many
# of them could not use the cache (their trial was unknown too).
_UNATTRIBUTED: list[dict[str, Any]] = []
_UNATTRIBUTED_LOCK = threading.Lock()


_RUN_REPORTS: list[bool] = [False]


def run_reports_unattributed(on: bool | None = None) -> bool:
    """Whether a pytest run reports (and warns about) the unattributed usage itself.

    ``on`` sets it (the plugin, at configure and unconfigure), forgets what was
    counted so far (the unattributed usage and the endpoints' requests,
    :func:`take_attempts`), and returns the value before (to be restored)."""
    before = _RUN_REPORTS[0]
    if on is not None:
        _RUN_REPORTS[0] = on
        take_unattributed()
        take_attempts()
    return before


def record_unattributed(entry: dict[str, Any]) -> bool:
    """Count one request's usage for the run; True for the process's first."""
    with _UNATTRIBUTED_LOCK:
        _UNATTRIBUTED.append(entry)
        return len(_UNATTRIBUTED) == 1


def unattributed_usage() -> list[dict[str, Any]]:
    """The usage entries counted for the run in this process so far (a copy)."""
    with _UNATTRIBUTED_LOCK:
        return [dict(e) for e in _UNATTRIBUTED]


def take_unattributed() -> list[dict[str, Any]]:
    """:func:`unattributed_usage`, emptied (a run reads it once, at its end)."""
    with _UNATTRIBUTED_LOCK:
        out = list(_UNATTRIBUTED)
        _UNATTRIBUTED.clear()
        return out


# The requests the transports sent to each endpoint in this process, and how each
# was answered: the report's llm.endpoints, there whenever a request was sent, even
# when none was answered (an endpoint refusing everything).

#: the figures of :func:`take_attempts`, per endpoint: ``requests`` sent (retries
#: included, cache hits not), of which ``answered`` (2xx), ``refused_429``,
#: ``unavailable_503``, ``other_status`` (any other status) and ``no_answer`` (no
#: HTTP answer: a refused connection, a timeout, a dropped connection); and
#: ``cut_short``: answered streams whose body ended before their end event.
ATTEMPT_FIGURES = (
    "requests",
    "answered",
    "refused_429",
    "unavailable_503",
    "other_status",
    "no_answer",
    "cut_short",
)
#: endpoints counted apart at most; the requests to any further one are counted
#: under :data:`OTHER_ENDPOINTS`.
ENDPOINTS_KEPT = 50
OTHER_ENDPOINTS = "(other endpoints)"
_ATTEMPTS: dict[str, dict[str, int]] = {}
_ATTEMPTS_LOCK = threading.Lock()


def attempt_outcome(status: int | None) -> str:
    """The figure a request answered with ``status`` counts in (``None``: no
    answer)."""
    if status is None:
        return "no_answer"
    if 200 <= status < 300:
        return "answered"
    return {429: "refused_429", 503: "unavailable_503"}.get(status, "other_status")


def record_attempt(endpoint: str, outcome: str) -> None:
    """Count one request sent to ``endpoint`` (``scheme://host:port``) under
    ``outcome`` (one of :data:`ATTEMPT_FIGURES` but ``requests``; ``cut_short``
    counts no new request: that stream's request was counted as answered)."""
    with _ATTEMPTS_LOCK:
        figures = _ATTEMPTS.get(endpoint)
        if figures is None:
            if len(_ATTEMPTS) >= ENDPOINTS_KEPT:
                endpoint = OTHER_ENDPOINTS
            figures = _ATTEMPTS.setdefault(
                endpoint, dict.fromkeys(ATTEMPT_FIGURES, 0)
            )
        if outcome != "cut_short":
            figures["requests"] += 1
        figures[outcome] += 1


def take_attempts() -> dict[str, dict[str, int]]:
    """Each endpoint's figures (:data:`ATTEMPT_FIGURES`) counted in this process
    so far, emptied (a run reads them once, at its end)."""
    with _ATTEMPTS_LOCK:
        out = {k: dict(v) for k, v in _ATTEMPTS.items()}
        _ATTEMPTS.clear()
        return out


def add_attempts(
    total: dict[str, dict[str, int]], figures: Any
) -> dict[str, dict[str, int]]:
    """Add one process's :func:`take_attempts` (as read back: anything else is
    ignored) to ``total``, figure by figure; returns ``total``."""
    if not isinstance(figures, dict):
        return total
    for endpoint, counts in figures.items():
        if not isinstance(counts, dict):
            continue
        sums = total.setdefault(str(endpoint), dict.fromkeys(ATTEMPT_FIGURES, 0))
        for name in ATTEMPT_FIGURES:
            value = counts.get(name)
            if isinstance(value, int) and not isinstance(value, bool) and value > 0:
                sums[name] += value
    return total


# What the reports show next to the scores: the response and the reference of each
# scored example. The plugin opens a sink around the examples it runs; the engine
# drops (response, reference) into it when it scores one. Without a sink (the
# Python API), nothing is kept.
_IO: contextvars.ContextVar[list[dict[str, str]] | None] = contextvars.ContextVar(
    "ctxbench_io", default=None
)

#: Characters kept of a response and of a reference (the reports are for reading).
IO_CLIP = 2000


def _clip(value: Any, secrets: bool = False) -> str:
    text = value if isinstance(value, str) else ("" if value is None else repr(value))
    if secrets:  # before the cut, which could leave a piece of one
        text = redact_secrets(text, bearer=False)
    return text if len(text) <= IO_CLIP else text[:IO_CLIP] + f"… [{len(text) - IO_CLIP} more characters]"


class keep_io:  # noqa: N801
    """Collect ``{"response", "reference"}`` of each example scored in the block
    (and ``"tool_calls"``, their ``name(args)`` rendering, when it made some; and
    ``"answer"``, what the evaluators read, :func:`~.answers.keep_answer`)."""

    __slots__ = ("_token",)

    def __enter__(self) -> list[dict[str, str]]:
        sink: list[dict[str, str]] = []
        self._token = _IO.set(sink)
        return sink

    def __exit__(self, *exc: object) -> None:
        _IO.reset(self._token)


#: answers.keep_answer, imported by the first record_io (on every example's path)
_keep_answer: Any = None


def record_io(original: dict[str, Any], processed: dict[str, Any] | None) -> None:
    """Called by the engine for each scored example; a no-op without :func:`keep_io`."""
    sink = _IO.get()
    if sink is None:
        return
    response = None if processed is None else processed.get("response")
    # A registered secret (an API key, a credential header) the model echoed is not
    # shown: the reports write what is kept here.
    kept = {"response": _clip(response, True), "reference": _clip(original.get("answer"))}
    calls = None if processed is None else processed.get("tool_calls")
    if isinstance(calls, list) and calls:
        # The calls the model made, as "name(args); ...": capped like a response.
        from .tool_use import show_calls

        kept["tool_calls"] = _clip(show_calls(calls), True)
    if processed is not None:
        # What the evaluators read, as the System returned it: scored again
        # without the System (answers.py; ``ctxbench rescore``).
        global _keep_answer
        if _keep_answer is None:
            from .answers import keep_answer as _keep_answer
        kept["answer"] = _keep_answer(processed)
    sink.append(kept)
