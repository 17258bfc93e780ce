"""No process outlives the run: the sandbox dies with pytest (issue 19).

A real pytest subprocess runs code examples whose completion loops forever; once
the loops burn CPU, pytest is sent SIGINT (Ctrl-C, with the default handler restored
as a shell would) or SIGKILL. Every process of its tree seen mid-loop (the xdist
workers, the sandbox's zygotes, forkers, namespace inits and the looping programs)
must be gone 2 seconds after pytest itself has exited.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers import sigint_default

from pytest_context_bench.evaluators.sandbox import Sandbox

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="reads /proc (Linux only)"
)

LOOP_SYSTEM = '''
class Looper:
    name = "looper"
    def process(self, example):
        return {**example, "response": "    while True:\\n        pass\\n"}

looper = Looper()
'''

_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def _stat(pid: int) -> tuple[int, str, int, int] | None:
    """(parent, state, cpu ticks, start time) of a process, or None when gone."""
    try:
        data = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return None
    fields = data[data.rfind(b")") + 2 :].split()
    return int(fields[1]), fields[0].decode(), int(fields[11]) + int(fields[12]), int(fields[19])


def _tree(root: int) -> dict[int, tuple[int, str, int, int]]:
    """Every live descendant of ``root`` → its stat."""
    stats = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            st = _stat(int(name))
            if st is not None:
                stats[int(name)] = st
    found: dict[int, tuple[int, str, int, int]] = {}
    frontier = {root}
    while frontier:
        frontier = {p for p, st in stats.items() if st[0] in frontier and p not in found}
        found.update({p: stats[p] for p in frontier})
    return found


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ")
    except OSError:
        return b""


def _survivors(seen: dict[int, tuple[int, str, int, int]]) -> list[int]:
    """The processes of ``seen`` still running (same start time: not a reused pid;
    a zombie is dead, it only waits for its reaper)."""
    out = []
    for pid, (_, _, _, start) in seen.items():
        st = _stat(pid)
        if st is not None and st[3] == start and st[1] != "Z":
            out.append(pid)
    return out


def _survivors_after(seen: dict[int, tuple[int, str, int, int]], seconds: float = 2.0) -> list[int]:
    """The processes of ``seen`` still running ``seconds`` from now: polled, so that
    a tree gone sooner is known sooner (the bound is the same as sleeping it out)."""
    end = time.monotonic() + seconds
    left = _survivors(seen)
    while left and time.monotonic() < end:
        time.sleep(0.05)
        left = _survivors(seen)
    return left


@pytest.fixture
def code_project(pytester: pytest.Pytester) -> pytest.Pytester:
    lines = [
        {
            "id": f"c-{i}",
            "context": f"def f{i}():\n",
            "answer": "    return 1\n",
            "test": "def check(candidate):\n    assert candidate() == 1\n",
            "entry_point": f"f{i}",
        }
        for i in range(1, 3)
    ]
    pytester.makefile(".jsonl", code="\n".join(json.dumps(x) for x in lines) + "\n")
    pytester.makepyfile(looper=LOOP_SYSTEM)
    pytester.makeini("[pytest]\npythonpath = .\n")
    return pytester


# SIGKILL of a serial run's process (the sandboxes' caller) is the Python API's
# test_sandbox_dies_with_a_killed_caller (both modes): the same death signal.
@pytest.mark.parametrize(
    "sig, xdist",
    [
        (signal.SIGINT, []),
        (signal.SIGINT, ["-n", "2"]),
        (signal.SIGKILL, ["-n", "2"]),
    ],
    ids=["sigint", "sigint-xdist2", "sigkill-xdist2"],
)
def test_no_process_outlives_the_run(
    code_project: pytest.Pytester, sig: signal.Signals, xdist: list[str]
) -> None:
    Sandbox()  # skips nothing: fails loudly where no sandbox can run at all
    loops = 2 if xdist else 1
    proc = subprocess.Popen(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q",
         "--ctxbench-dataset=code.jsonl", "--ctxbench-task=code",
         "--ctxbench-system=looper:looper", "--ctxbench-code-timeout=300", *xdist],
        cwd=code_project.path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        preexec_fn=sigint_default,
    )
    seen: dict[int, tuple[int, str, int, int]] = {}
    children: set[int] = set()  # the xdist workers
    try:
        # Wait (bounded) until the programs loop: processes of the tree that have
        # burnt a second of CPU each (a zygote starting up uses far less).
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            tree = _tree(proc.pid)
            seen.update(tree)
            children.update(
                p for p, st in tree.items()
                if st[0] == proc.pid and b"_zygote" not in _cmdline(p)
            )
            if sum(1 for st in tree.values() if st[2] >= _TICKS) >= loops:
                break
            assert proc.poll() is None, "pytest ended before its programs looped"
            time.sleep(0.2)
        else:
            pytest.fail("the programs never started looping")
        proc.send_signal(sig)
        proc.wait(timeout=60)
        # Under xdist, SIGKILL of the controller leaves the workers to notice that
        # their channel closed (execnet interrupts them after 5 s); what matters is
        # that the sandbox follows its worker down, within 2 s of it.
        workers = [p for p in seen if p in children]
        end = time.monotonic() + 60
        while _survivors({p: seen[p] for p in workers}) and time.monotonic() < end:
            time.sleep(0.2)
        left = _survivors_after(seen, 2)
        assert left == [], [(p, _cmdline(p)[-60:]) for p in left]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for pid in _survivors(seen):
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass


@pytest.mark.parametrize("namespaces", [True, False], ids=["namespaces", "basic"])
def test_sandbox_dies_with_a_killed_caller(tmp_path: Path, namespaces: bool) -> None:
    """The Python API, in both modes: SIGKILL of the process using the Sandbox, from a
    thread, mid-loop (a program that also left a daemon behind)."""
    script = tmp_path / "caller.py"
    script.write_text(
        "import threading\n"
        "from pytest_context_bench.evaluators.sandbox import Sandbox\n"
        f"sb = Sandbox(timeout=300, namespaces={namespaces})\n"
        "code = ('import os\\nif os.fork() == 0:\\n    os.setsid()\\n'\n"
        "        '    while True:\\n        pass\\nwhile True:\\n    pass\\n')\n"
        "t = threading.Thread(target=sb.run, args=(code, ''))\n"
        "t.start()\n"
        "t.join()\n"
    )
    proc = subprocess.Popen([sys.executable, str(script)], cwd=tmp_path)
    seen: dict[int, tuple[int, str, int, int]] = {}
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            tree = _tree(proc.pid)
            seen.update(tree)
            if sum(1 for st in tree.values() if st[2] >= _TICKS) >= 2:
                break
            assert proc.poll() is None, "the caller ended before its program looped"
            time.sleep(0.2)
        else:
            pytest.fail("the program never started looping")
        proc.kill()
        proc.wait(timeout=60)
        left = _survivors_after(seen, 2)
        assert left == [], [(p, _cmdline(p)[-60:]) for p in left]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for pid in _survivors(seen):
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
