"""The status line: calls in flight, calls done and an ETA, on a terminal only.

    ctxbench: 12 in flight · 88/200 calls done · ETA 0:07

Who shows it: the one pytest process that runs the items and owns the terminal,
when all of these hold (:func:`status_off_reason` says which does not):

* calls are started ahead (``--ctxbench-concurrency=N``, N > 1, with the System named
  on the command line: see running.py);
* pytest's terminal reporter writes to a TTY, and ``TERM`` is not ``dumb``. A CI log,
  a pipe, a file or pytester never gets a byte of it (whatever ``--color`` says);
* output is captured (not ``-s``: the System's own prints would cross the line; pytest
  also drops its progress figures under ``-s``);
* not under xdist: a worker does not own the terminal, and the controller hears from
  a worker only between its items (docs/concurrency.md, "The status line");
* ``--ctxbench-no-status`` / ``ctxbench_no_status`` is not set.

How it shares the terminal with pytest. The line lives on the row *below* pytest's
cursor (pytest's dots, or its ``-v`` line, stay where they are); it is drawn with
``\\n``, erase-line and cursor-up, then the cursor goes back to pytest's column. Only
pytest's main thread writes it, never a background thread, and never while pytest
writes: each reporting hook (``pytest_runtest_logstart``, ``_logreport``,
``_logfinish``) is wrapped, the line is erased before pytest writes and drawn again
right after, in the same hook call (no flicker). While an item waits for its own call
(running.py ``Calls.take``) the line is refreshed with pytest's capture suspended for
the write, as pytest's live logging does. Its figures change at most ten times a
second. It is erased for good before pytest's closing output.
"""

from __future__ import annotations

import math
import os
import shutil
import time
from collections.abc import Callable, Generator, Sequence
from typing import Any, Protocol

import pytest

from .running import Calls, calls_ahead

__all__ = [
    "StatusLine",
    "estimate_eta",
    "format_eta",
    "format_status",
    "status_off_reason",
]

#: seconds after the first call started before the line shows: a short run never
#: flashes it
SHOW_AFTER = 0.5
#: the figures are recomputed at most this often (seconds)
REFRESH = 0.1
#: the completion rate is measured over at most this many recent seconds
RATE_WINDOW = 10.0


class Writer(Protocol):
    """What the status line needs of pytest's TerminalWriter."""

    @property
    def fullwidth(self) -> int: ...

    @property
    def width_of_current_line(self) -> int: ...

    def write_raw(self, msg: str, *, flush: bool = False) -> None: ...


# --- the figures (pure) ----------------------------------------------------------


def estimate_eta(
    remaining: int,
    done_at: Sequence[float],
    now: float,
    since: float,
    window: float = RATE_WINDOW,
) -> float | None:
    """Seconds until ``remaining`` more calls are done, at the recent completion rate.

    The rate is the number of calls done in the last ``window`` seconds (or since the
    latest call finished, if that is longer ago: slow calls finish in bursts) over
    that time, never counting time before ``since`` (when the first call started:
    calls in flight finish in a burst, and a rate measured from the first completion
    would be far too fast). Measured up to ``now``, so a stall makes the ETA grow.

    :param done_at: when calls finished (monotonic seconds, oldest first), at least
        those of the window and the latest.
    :returns: 0 when nothing remains; None when no call has finished.
    """
    if remaining <= 0:
        return 0.0
    start = now - window
    if done_at:
        start = min(start, done_at[-1])
    start = max(since, start)
    span = now - start
    finished = sum(1 for t in done_at if t >= start)
    if finished == 0 or span <= 0:
        return None
    return remaining * span / finished


def format_eta(seconds: float) -> str:
    """``m:ss``, or ``h:mm:ss`` from an hour (rounded up: never ``0:00`` too early)."""
    if not math.isfinite(seconds):
        return "?"
    total = max(0, math.ceil(seconds))
    hours, rest = divmod(total, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


def format_status(
    in_flight: int,
    done: int,
    total: int,
    eta: float | None,
    width: int,
    sep: str = " · ",
    budget: tuple[int, int, int] | None = None,
) -> str:
    """The longest form of the line that fits in ``width - 1`` columns ('' if none).

    The last column stays free: a terminal that wraps when it is written would move
    the cursor to another row, and the erase would miss the line.

    :param budget: the endpoints' adaptive budget, its ceiling and the 429s so far
        (``None``: no endpoint called through the LLM client).
    """
    later = f"ETA {format_eta(eta)}" if eta is not None else ""
    adaptive = refused = ""
    if budget is not None:
        adaptive = f"budget {budget[0]}/{budget[1]}"
        refused = f"{budget[2]}×429" if budget[2] else ""
    forms = (
        (
            f"ctxbench: {in_flight} in flight",
            adaptive,
            refused,
            f"{done}/{total} calls done",
            later,
        ),
        (f"ctxbench: {in_flight} in flight", adaptive, f"{done}/{total} done", later),
        (f"ctxbench: {in_flight} in flight", f"{done}/{total} calls done", later),
        (f"ctxbench: {in_flight} in flight", f"{done}/{total} done", later),
        (f"{in_flight} in flight", f"{done}/{total} done", later),
        (f"{done}/{total} done", later),
        (f"{done}/{total}",),
    )
    for parts in forms:
        line = sep.join(p for p in parts if p)
        if len(line) <= width - 1:
            return line
    return ""


def adaptive_budget() -> tuple[int, int, int] | None:
    """The adaptive budget of this process's tightest endpoint, its ceiling, and the
    429s of all of them: (budget, ceiling, 429s); None when no endpoint was called."""
    from ..concurrency import endpoint_budgets

    figures = list(endpoint_budgets().values())
    if not figures:
        return None
    tightest = min(figures, key=lambda f: f["budget"] / f["ceiling"])
    return (
        tightest["budget"],
        tightest["ceiling"],
        sum(f["refused_429"] for f in figures),
    )


# --- whether it shows ------------------------------------------------------------


def status_off_reason(
    config: pytest.Config, reporter: Any, calls: Calls | None, no_status: bool
) -> str | None:
    """Why this process shows no status line, or None when it shows one.

    :param reporter: pytest's terminal reporter (``terminalreporter``), or None.
    :param calls: this process's calls (running.py), or None.
    :param no_status: ``--ctxbench-no-status`` / ``ctxbench_no_status``.
    """
    if no_status:
        return "turned off (--ctxbench-no-status)"
    if hasattr(config, "workerinput") or getattr(config.option, "dist", "no") != "no":
        return "under xdist"
    if calls is None or not calls.prefetching:
        return "no call is started ahead"
    if getattr(config.option, "collectonly", False):
        return "nothing runs (--collect-only)"
    if reporter is None:
        return "no terminal reporter"
    # A bool in older pytest, a callable bool in newer ones: bool() reads both.
    if not bool(getattr(reporter, "isatty", False)):
        return "not a terminal"
    if os.environ.get("TERM", "") == "dumb":
        return "TERM=dumb"
    if getattr(config.option, "capture", "no") == "no":
        return "output not captured (-s)"
    return None


# --- the line on the terminal ----------------------------------------------------


class StatusLine:
    """The status line of one run (a pytest plugin, registered by :meth:`start`).

    :param writer: pytest's terminal writer.
    :param calls: this process's calls (their counts and the budget in use).
    :param suspend_capture: a context manager factory that suspends pytest's capture
        while the line is written from inside an item (``None``: not written then).
    :param clock: monotonic seconds (tests pass their own).
    """

    def __init__(
        self,
        writer: Writer,
        calls: Calls,
        suspend_capture: Callable[[], Any] | None = None,
        *,
        clock: Callable[[], float] = time.monotonic,
        show_after: float = SHOW_AFTER,
        sep: str = " · ",
    ) -> None:
        self.writer = writer
        self.calls = calls
        self.suspend_capture = suspend_capture
        self.clock = clock
        self.show_after = show_after
        self.sep = sep
        #: calls this run starts ahead (set when the run loop starts)
        self.total = 0
        self.text = ""
        self.on_screen = False
        self.width = self._measure()
        self._computed = -math.inf
        self._finished = False

    @classmethod
    def start(
        cls, config: pytest.Config, calls: Calls | None, no_status: bool
    ) -> StatusLine | None:
        """Register the status line of this run, or return None if it has none."""
        reporter = config.pluginmanager.get_plugin("terminalreporter")
        if status_off_reason(config, reporter, calls, no_status) is not None:
            return None
        assert calls is not None
        writer = config.get_terminal_writer()
        capman = config.pluginmanager.get_plugin("capturemanager")
        suspend = getattr(capman, "global_and_fixture_disabled", None)
        encoding = getattr(getattr(writer, "_file", None), "encoding", None) or "ascii"
        try:
            "·".encode(encoding)
            sep = " · "
        except (LookupError, UnicodeEncodeError):
            sep = " | "
        status = cls(writer, calls, suspend, sep=sep)
        config.pluginmanager.register(status, "ctxbench-status")
        return status

    # -- drawing --------------------------------------------------------------------

    def _measure(self) -> int:
        """The terminal's width: pytest's, unless the terminal is narrower (pytest
        takes one of fewer than 40 columns for 80, and lets its lines wrap).

        Measured outside the items only: while pytest captures, file descriptor 1
        is not the terminal, and both sizes fall back to 80 columns.
        """
        full = self.writer.fullwidth
        real = shutil.get_terminal_size((full, 24)).columns
        return min(full, real) if real > 0 else full

    def _column(self) -> int | None:
        """pytest's cursor column, or None when it cannot be put back safely (a line
        as wide as the terminal has wrapped or is about to)."""
        col = self.writer.width_of_current_line
        return col if 0 <= col < self.width else None

    @staticmethod
    def _back_to(col: int) -> str:
        # Up to pytest's row, then its column (CUF with 0 would still move by one).
        return "\x1b[1A\r" + (f"\x1b[{col}C" if col else "")

    def hide(self, flush: bool = True) -> None:
        """Erase the line (before pytest writes)."""
        if not self.on_screen:
            return
        self.on_screen = False
        col = max(0, min(self.writer.width_of_current_line, self.width - 1))
        self.writer.write_raw("\n\r\x1b[2K" + self._back_to(col), flush=flush)

    def _wanted(self, now: float) -> bool:
        first = self.calls.first_start
        return (
            not self._finished
            and self.total > 1
            and first is not None
            and now - first >= self.show_after
        )

    def compose(self, now: float) -> str:
        """The line for the figures now."""
        calls = self.calls
        done, done_at = calls.progress()
        since = calls.first_start if calls.first_start is not None else now
        if done > len(done_at) and done_at:  # older completions were dropped
            since = max(since, done_at[0])
        total = max(self.total, done)
        eta = estimate_eta(total - done, done_at, now, since)
        in_flight = calls.budget.in_use
        return format_status(
            in_flight, done, total, eta, self.width, self.sep, adaptive_budget()
        )

    def _pending(self) -> str | None:
        """What to write to show the line with fresh figures, or None."""
        now = self.clock()
        if not self._wanted(now):
            return None
        if now - self._computed >= REFRESH:
            text = self.compose(now)
            self._computed = now
            if self.on_screen and text == self.text:
                return None
            self.text = text
        elif self.on_screen:
            return None
        col = self._column()
        if col is None or not self.text:
            return None
        return "\n\r\x1b[2K" + self.text + self._back_to(col)

    def show(self) -> None:
        """Draw the line if it is due (outside an item's capture); flush what was
        written, an erase included."""
        out = self._pending()
        self.writer.write_raw(out or "", flush=True)
        if out is not None:
            self.on_screen = True

    def tick(self) -> None:
        """Refresh the line while an item waits for its call (pytest's capture is on:
        it is suspended for the write)."""
        if self.suspend_capture is None:
            return
        out = self._pending()
        if out is None:
            return
        with self.suspend_capture():
            self.writer.write_raw(out, flush=True)
        self.on_screen = True

    def finish(self) -> None:
        """Erase the line for good."""
        self.hide()
        self._finished = True
        if self.calls.on_wait == self.tick:
            self.calls.on_wait = None

    # -- hooks ----------------------------------------------------------------------

    @pytest.hookimpl(wrapper=True, trylast=True)
    def pytest_runtestloop(
        self, session: pytest.Session
    ) -> Generator[None, object, object]:
        # trylast: the innermost wrapper, so the line is gone before the other
        # wrappers write after the loop (the terminal reporter's closing "[100%]").
        self.total = calls_ahead(session.items)
        self.calls.on_wait = self.tick
        try:
            return (yield)
        finally:
            self.finish()

    def _around(self) -> Generator[None, object, object]:
        # Erased before the hook's other implementations write, drawn again after;
        # when nobody wrote, both reach the terminal in one write (show() flushes).
        self.hide(flush=False)
        self.width = self._measure()  # (a resized terminal)
        try:
            return (yield)
        finally:
            self.show()

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_logstart(self) -> Generator[None, object, object]:
        return (yield from self._around())

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_logreport(self) -> Generator[None, object, object]:
        return (yield from self._around())

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_logfinish(self) -> Generator[None, object, object]:
        return (yield from self._around())

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self) -> None:
        self.finish()

    @pytest.hookimpl(tryfirst=True)
    def pytest_internalerror(self) -> None:
        self.finish()

    @pytest.hookimpl(tryfirst=True)
    def pytest_keyboard_interrupt(self) -> None:
        self.finish()
