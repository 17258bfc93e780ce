"""Which example a System call belongs to, for code far below the runner.

The runner wraps every System call (and every LLM-judged evaluator call) in
:func:`call_scope`. Code deep in the call path, such as an HTTP transport that caches
responses or counts usage, reads :func:`current_call` to learn the example, the system
and the trial it is serving, and appends what it measured to the scope, without the
System having to pass anything along.

The scope lives in a :class:`contextvars.ContextVar`: it follows ``await`` and
``asyncio`` tasks by itself; a runner that moves a call to another thread must run it
with :func:`contextvars.copy_context` so the scope goes with it.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

__all__ = ["CallScope", "call_scope", "current_call", "keep_io", "record_io", "IO_CLIP"]


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


_CURRENT: contextvars.ContextVar[CallScope | None] = contextvars.ContextVar(
    "ctxbench_call", default=None
)


def current_call() -> CallScope | None:
    """The scope of the call in progress in this context, or ``None`` outside one."""
    return _CURRENT.get()


@contextlib.contextmanager
def call_scope(scope: CallScope) -> Iterator[CallScope]:
    """Make ``scope`` the current call for the duration of the ``with`` block."""
    token = _CURRENT.set(scope)
    try:
        yield scope
    finally:
        _CURRENT.reset(token)


# What the reports show next to the scores: the response and the reference of each
# scored example. The plugin opens a sink around the examples it runs; the engine
# drops (response, reference) into it when it scores one. Without a sink (the
# Python API), nothing is kept.
_IO: contextvars.ContextVar[list[dict[str, str]] | None] = contextvars.ContextVar(
    "ctxbench_io", default=None
)

#: Characters kept of a response and of a reference (the reports are for reading).
IO_CLIP = 2000


def _clip(value: Any) -> str:
    text = value if isinstance(value, str) else ("" if value is None else repr(value))
    return text if len(text) <= IO_CLIP else text[:IO_CLIP] + f"… [{len(text) - IO_CLIP} more characters]"


@contextlib.contextmanager
def keep_io() -> Iterator[list[dict[str, str]]]:
    """Collect ``{"response", "reference"}`` of each example scored in the block."""
    sink: list[dict[str, str]] = []
    token = _IO.set(sink)
    try:
        yield sink
    finally:
        _IO.reset(token)


def record_io(original: dict[str, Any], processed: dict[str, Any] | None) -> None:
    """Called by the engine for each scored example; a no-op without :func:`keep_io`."""
    sink = _IO.get()
    if sink is None:
        return
    response = None if processed is None else processed.get("response")
    sink.append({"response": _clip(response), "reference": _clip(original.get("answer"))})
