"""The status line of --ctxbench-concurrency: on a terminal only, never in a log.

The terminal runs use a real pseudo-terminal (``os.openpty``) and a small emulator
of the escape sequences pytest and the status line write (``Screen``), to check what
a user finally sees. No assertion is about time: the Systems sleep, which bounds a
run's length from below only.
"""

from __future__ import annotations

import io
import os
import re
import select
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from helpers import INNER_ADDOPTS, qa_lines

from pytest_context_bench.plugin.running import Calls
from pytest_context_bench.plugin.status import (
    StatusLine,
    estimate_eta,
    format_eta,
    format_status,
    status_off_reason,
)

if sys.platform == "win32":  # pragma: no cover
    pytest.skip("pseudo-terminals are POSIX", allow_module_level=True)

import fcntl
import struct
import termios

SLOW_PY = """
import time


class Sleepy:
    name = "sleepy"

    def process(self, ex):
        time.sleep(0.2)
        return {**ex, "response": ex["answer"]}


sleepy = Sleepy()
"""

STATUS = re.compile(r"\d+ in flight")


class Screen:
    """Just enough of a VT100 to replay pytest's output: text, CR, LF (as CR LF, the
    tty's default ``onlcr``), erase-line, cursor up/down/forward/back/column, SGR
    colours and OSC sequences (ignored). No height: the screen grows, nothing
    scrolls off."""

    _CSI = re.compile(r"\x1b\[([0-9;?]*)([A-Za-z])")
    _OSC = re.compile(r"\x1b\].*?(?:\x1b\\|\x07)", re.DOTALL)

    def __init__(self, width: int) -> None:
        self.width = width
        self.rows: list[list[str]] = [[]]
        self.row = 0
        self.col = 0

    def _line(self) -> list[str]:
        while len(self.rows) <= self.row:
            self.rows.append([])
        return self.rows[self.row]

    def feed(self, data: str) -> Screen:
        i = 0
        while i < len(data):
            ch = data[i]
            if ch == "\x1b":
                osc = self._OSC.match(data, i)
                if osc:
                    i = osc.end()
                    continue
                csi = self._CSI.match(data, i)
                assert csi, f"unknown escape sequence at {data[i : i + 10]!r}"
                self._csi(csi.group(1), csi.group(2))
                i = csi.end()
                continue
            if ch == "\r":
                self.col = 0
            elif ch == "\n":
                self.row, self.col = self.row + 1, 0
            elif ch == "\x07":
                pass
            else:
                if self.col >= self.width:  # auto-wrap
                    self.row, self.col = self.row + 1, 0
                line = self._line()
                line.extend(" " * (self.col + 1 - len(line)))
                line[self.col] = ch
                self.col += 1
            i += 1
        return self

    def _csi(self, params: str, op: str) -> None:
        n = int(params) if params.isdigit() else None
        if op == "m":
            return
        if op == "K":  # erase to the end of the line (2: all of it)
            line = self._line()
            if n == 2:
                line.clear()
            else:
                del line[self.col :]
        elif op == "A":
            self.row = max(0, self.row - (n or 1))
        elif op == "B":
            self.row += n or 1
        elif op == "C":
            self.col = min(self.width - 1, self.col + (n or 1))
        elif op == "D":
            self.col = max(0, self.col - (n or 1))
        elif op == "G":
            self.col = (n or 1) - 1
        else:
            raise AssertionError(f"unexpected escape sequence ESC[{params}{op}")

    def lines(self) -> list[str]:
        return ["".join(r).rstrip() for r in self.rows]


# --- the figures -------------------------------------------------------------------


def test_the_line_reads_as_documented_at_80_columns() -> None:
    line = format_status(12, 88, 200, 6.2, 80)
    assert line == "ctxbench: 12 in flight · 88/200 calls done · ETA 0:07"
    no_eta = format_status(3, 0, 200, None, 80)
    assert no_eta == "ctxbench: 3 in flight · 0/200 calls done"


def test_the_line_shows_the_adaptive_budget_and_the_429s() -> None:
    line = format_status(12, 88, 200, 6.2, 120, budget=(12, 64, 7))
    assert line == (
        "ctxbench: 12 in flight · budget 12/64 · 7×429 · 88/200 calls done · ETA 0:07"
    )
    unrefused = format_status(12, 88, 200, 6.2, 120, budget=(20, 64, 0))
    assert unrefused == (
        "ctxbench: 12 in flight · budget 20/64 · 88/200 calls done · ETA 0:07"
    )
    # Narrower: the 429s go first, then the budget; never past the last column.
    assert format_status(12, 88, 200, 6.2, 70, budget=(12, 64, 7)) == (
        "ctxbench: 12 in flight · budget 12/64 · 88/200 done · ETA 0:07"
    )
    for width in range(0, 121):
        assert len(format_status(12, 88, 200, 6.2, width, budget=(12, 64, 7))) < max(
            1, width
        )


@pytest.mark.parametrize(
    "figures",
    [(12, 88, 200, 6.2), (0, 0, 1, None), (12345, 99999, 100000, 3600.0 * 400)],
)
def test_the_line_never_reaches_the_last_column(figures) -> None:
    forms = set()
    for width in range(0, 201):
        line = format_status(*figures, width)
        assert len(line) <= max(0, width - 1), (width, line)
        forms.add(line)
    # Narrow terminals get shorter forms, down to nothing at all.
    assert "" in forms and len(forms) >= 4
    assert format_status(12, 88, 200, 6.2, 40) == (
        "12 in flight · 88/200 done · ETA 0:07"
    )
    assert format_status(12, 88, 200, 6.2, 30) == "88/200 done · ETA 0:07"


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (0, "0:00"),
        (0.2, "0:01"),  # rounded up: never 0:00 while calls remain
        (7, "0:07"),
        (59.5, "1:00"),
        (754, "12:34"),
        (3600, "1:00:00"),
        (3725, "1:02:05"),
        (float("inf"), "?"),
    ],
)
def test_eta_format(seconds: float, text: str) -> None:
    assert format_eta(seconds) == text


def test_eta_from_the_recent_completion_rate() -> None:
    # Steady: one call every 0.5 s for 10 s (2/s): 10 more take 5 s.
    steady = [0.5 * i for i in range(1, 21)]
    assert estimate_eta(10, steady, now=10.0, since=0.0) == pytest.approx(5.0)
    # A burst (16 calls in flight finish together after 1 s): the rate is measured
    # from when the first call started, not from the first completion.
    burst = [1.0] * 16
    assert estimate_eta(184, burst, now=1.0, since=0.0) == pytest.approx(11.5)
    # Nothing finishes for another second: the ETA grows.
    assert estimate_eta(184, burst, now=2.0, since=0.0) == pytest.approx(23.0)
    # Only the last 10 s count: the early fast calls no longer speed it up.
    early_fast = [0.01 * i for i in range(1, 101)] + [20.0, 25.0]
    assert estimate_eta(4, early_fast, now=25.0, since=0.0) == pytest.approx(20.0)
    # Nothing finished in the window (slow calls): measured since the latest
    # completion (1 call in 28 s), not left out.
    assert estimate_eta(4, [1.0, 2.0], now=30.0, since=0.0) == pytest.approx(112.0)
    # Nothing finished yet: unknown. Nothing left: 0.
    assert estimate_eta(4, [], now=1.0, since=0.0) is None
    assert estimate_eta(0, [], now=1.0, since=0.0) == 0.0


# --- whether it shows (real config, real terminal reporter, real TTY) -------------


@pytest.fixture
def tty():
    """The slave end of a pseudo-terminal, as a text file (isatty() is true)."""
    master, slave = os.openpty()
    with open(slave, "w", encoding="utf-8", closefd=True) as f:
        yield f
    os.close(master)


def _configured(pytester: pytest.Pytester, *args: str) -> pytest.Config:
    """``pytester.parseconfigure``, without the full garbage collection pytest's
    unraisable-exception plugin makes when the config is unconfigured (twice: in its
    pytest_unconfigure and in its cleanup). In a worker of the whole suite the heap
    is large and each collection takes seconds: three configs cost a test 9 s at
    teardown, against 0.3 s alone. pytester's in-process runs turn it off the same
    way (inline_run). An unraisable exception is still reported: by the outer
    session's hook, which the inner config puts back when it is unconfigured."""
    from _pytest.unraisableexception import gc_collect_iterations_key

    config = pytester.parseconfigure(*args)
    config.stash[gc_collect_iterations_key] = 0
    return config


def _reason(pytester: pytest.Pytester, file, *args: str) -> str | None:
    from pytest_context_bench.plugin import STATE_KEY

    config = _configured(pytester, *args)
    reporter = pytest.TerminalReporter(config, file)
    state = config.stash[STATE_KEY]
    return status_off_reason(config, reporter, state.calls, state.settings.no_status)


def test_shows_on_a_tty_with_calls_started_ahead(
    pytester: pytest.Pytester, tty
) -> None:
    assert _reason(pytester, tty, "--ctxbench-concurrency=4") is None


@pytest.mark.parametrize("color", [[], ["--color=yes"]], ids=["plain", "color-yes"])
def test_never_shows_off_a_tty(
    pytester: pytest.Pytester, tmp_path: Path, color
) -> None:
    # A pipe and a file, with colours forced on or not: markup is not a terminal.
    read, write = os.pipe()
    with open(write, "w") as pipe, open(tmp_path / "log.txt", "w") as log:
        for file in (pipe, log, io.StringIO()):
            reason = _reason(pytester, file, "--ctxbench-concurrency=4", *color)
            assert reason == "not a terminal"
    os.close(read)


@pytest.mark.parametrize(
    ("args", "env", "reason"),
    [
        (["--ctxbench-no-status"], {}, "turned off (--ctxbench-no-status)"),
        (["-s"], {}, "output not captured (-s)"),
        ([], {"TERM": "dumb"}, "TERM=dumb"),
        # (pytest-xdist turns -n N into --dist=load in pytest_cmdline_main, which
        # parseconfigure does not run)
        (["-n", "2", "--dist=load"], {}, "under xdist"),
        (["--collect-only"], {}, "nothing runs (--collect-only)"),
    ],
)
def test_ways_it_stays_off(
    pytester: pytest.Pytester, tty, monkeypatch: pytest.MonkeyPatch, args, env, reason
) -> None:
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert _reason(pytester, tty, "--ctxbench-concurrency=4", *args) == reason


def test_off_without_calls_started_ahead(pytester: pytest.Pytester, tty) -> None:
    assert _reason(pytester, tty) == "no call is started ahead"
    one = _reason(pytester, tty, "--ctxbench-concurrency=1")
    assert one == "no call is started ahead"


def test_ini_turns_it_off(pytester: pytest.Pytester, tty) -> None:
    pytester.makeini("[pytest]\nctxbench_no_status = true\n")
    assert _reason(pytester, tty, "--ctxbench-concurrency=4") == (
        "turned off (--ctxbench-no-status)"
    )


# --- drawing and erasing (a real TerminalWriter, replayed on the emulator) -----------


@pytest.fixture
def calls():
    calls = Calls(4, None, None, explicit=True)
    yield calls
    calls.close()  # (it installed the process's call budget)


def _writer(pytester: pytest.Pytester) -> tuple[Any, io.StringIO]:
    """pytest's own TerminalWriter, writing into a buffer (then replayed)."""
    out = io.StringIO()
    return pytest.TerminalReporter(pytester.parseconfig(), out)._tw, out


def test_drawn_below_pytests_line_and_erased_without_a_trace(
    pytester: pytest.Pytester, calls: Calls
) -> None:
    writer, out = _writer(pytester)
    writer.fullwidth = 40
    now = [10.0]
    status = StatusLine(writer, calls, clock=lambda: now[0])
    status.total = 20
    calls.first_start = 9.0
    calls.done = 5
    calls.done_at.extend([9.5, 9.6, 9.7, 9.8, 9.9])

    writer.write("tests/a.py ")
    for _ in range(3):
        status.hide(flush=False)
        writer.write(".")  # pytest's letter
        status.show()
        now[0] += 0.01
    screen = Screen(40).feed(out.getvalue())
    # 5 calls done in the 1 s since the first started: 15 more take 3 s.
    assert screen.lines() == ["tests/a.py ...", "0 in flight · 5/20 done · ETA 0:03"]
    assert (screen.row, screen.col) == (0, 14)  # the cursor is back after the dots

    # pytest moves on to a new line: the line moves down with it.
    status.hide(flush=False)
    writer.line()
    writer.write("tests/b.py ")
    status.show()
    screen = Screen(40).feed(out.getvalue())
    assert screen.lines()[1:] == ["tests/b.py", "0 in flight · 5/20 done · ETA 0:03"]

    status.finish()
    writer.write("F")
    writer.line()
    final = Screen(40).feed(out.getvalue()).lines()
    assert final == ["tests/a.py ...", "tests/b.py F", ""]
    status.show()  # finished: never again
    assert not STATUS.search(Screen(40).feed(out.getvalue()).lines()[-1])


def test_not_drawn_before_the_run_has_lasted_a_moment(
    pytester: pytest.Pytester, calls: Calls
) -> None:
    writer, out = _writer(pytester)
    now = [100.0]
    status = StatusLine(writer, calls, clock=lambda: now[0])
    status.total = 20
    status.show()  # no call started yet
    calls.first_start = 100.0
    now[0] = 100.2
    status.show()  # started 0.2 s ago
    assert out.getvalue() == ""
    now[0] = 101.0
    status.show()
    assert STATUS.search(out.getvalue())


# --- whole runs: on a pseudo-terminal, and piped ----------------------------------


@pytest.fixture
def slow(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makefile(".jsonl", qa=qa_lines(24))
    pytester.makepyfile(slow=SLOW_PY)
    pytester.makeini("[pytest]\npythonpath = .\nctxbench_cache = off\n")
    return pytester


RUN = [
    "-p",
    "no:cacheprovider",
    "--ctxbench-system=slow:sleepy",
    "--ctxbench-dataset=qa.jsonl",
    "--ctxbench-concurrency=4",
]


def _env() -> dict[str, str]:
    env = dict(os.environ)
    # The terminal's size comes from the pty; an outer xdist run's variables are not
    # the inner run's.
    for name in (
        "COLUMNS",
        "LINES",
        "PYTEST_XDIST_WORKER",
        "PYTEST_XDIST_WORKER_COUNT",
        "PYTEST_ADDOPTS",
        "PYTEST_CURRENT_TEST",
    ):
        env.pop(name, None)
    env["PYTEST_ADDOPTS"] = INNER_ADDOPTS  # (the suite's own options are not the run's)
    env["TERM"] = "xterm"
    return env


def run_on_a_tty(cwd: Path, *args: str, columns: int = 50) -> tuple[int, str]:
    """Run pytest with its stdout and stderr on a pseudo-terminal; all it wrote."""
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, columns, 0, 0))
    proc = subprocess.Popen(
        [sys.executable, "-m", "pytest", *args],
        cwd=cwd,
        env=_env(),
        stdin=subprocess.DEVNULL,
        stdout=slave,
        stderr=slave,
    )
    os.close(slave)
    chunks = []
    deadline = time.monotonic() + 120
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 1.0)
            if not ready:
                if proc.poll() is not None:
                    break
                continue
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: the child closed its end
                break
            if not chunk:
                break
            chunks.append(chunk)
        code = proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(master)
    return code, b"".join(chunks).decode("utf-8", "replace")


@pytest.mark.parametrize("verbose", [[], ["-v"]], ids=["dots", "verbose"])
def test_on_a_terminal_it_shows_and_is_erased(slow: pytest.Pytester, verbose) -> None:
    code, raw = run_on_a_tty(slow.path, *RUN, "-rP", *verbose)
    assert code == 0, raw
    assert "Captured" not in raw  # written past pytest's capture, not into it
    drawn = re.findall(r"\x1b\[2K([^\x1b\r\n]*)\x1b\[1A", raw)
    shown = [t for t in drawn if t]
    assert shown, raw  # it appeared...
    # (at 50 columns, the shorter form "ctxbench: 4 in flight · 8/24 done · ETA 0:02")
    form = re.compile(r"ctxbench: \d in flight · \d+/24 done( · ETA \S+)?")
    assert all(form.fullmatch(t) for t in shown), shown
    # ...within the 50 columns (not the 80 a size lookup gives under capture)...
    assert all(len(t) <= 49 for t in shown), shown
    lines = Screen(50).feed(raw).lines()
    assert not [ln for ln in lines if STATUS.search(ln)], lines  # ...and is gone
    # pytest's own output is intact: every item, the progress, the closing line.
    if verbose:
        results = [ln for ln in lines if ln.startswith("ctxbench::example[")]
        assert len(results) == 24 and all("PASSED" in ln for ln in results), lines
        assert results[-1].endswith("[100%]")
    else:
        dots = [ln for ln in lines if re.match(r"ctxbench \.", ln)]
        assert len(dots) == 1 and len(dots[0]) == 49, lines
        assert re.fullmatch(r"ctxbench \.{24} +\[100%\]", dots[0]), lines
    assert re.fullmatch(r"=+ 24 passed in [\d.]+s =+", [ln for ln in lines if ln][-1])


# A whole run under -n 2 (no process draws it: the workers have no terminal). The
# other reasons (--ctxbench-no-status, its ini twin, -s, TERM=dumb) are decided by the
# same check a run makes (test_ways_it_stays_off, test_ini_turns_it_off).
@pytest.mark.parametrize("args", [["-n", "2"]], ids=["xdist"])
def test_on_a_terminal_it_can_be_off(slow: pytest.Pytester, args) -> None:
    code, raw = run_on_a_tty(slow.path, *RUN, *args)
    assert code == 0, raw
    assert "in flight" not in raw
    assert "24 passed" in raw


# Colours forced on: markup is not a terminal (plain output, and a pipe, a file or
# a string with and without colours, are test_never_shows_off_a_tty's).
@pytest.mark.parametrize("color", [["--color=yes"]], ids=["color-yes"])
def test_piped_output_has_no_status_and_no_carriage_return(
    slow: pytest.Pytester, color
) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", *RUN, *color],
        cwd=slow.path,
        env=_env(),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        timeout=120,
    )
    out = proc.stdout.decode()
    assert proc.returncode == 0, out
    assert "24 passed" in out
    assert "in flight" not in out and "calls done" not in out
    assert "\r" not in out and "\x1b[2K" not in out and "\x1b[1A" not in out
    assert proc.stderr == b""
