"""The pre-started parent ("zygote") that forks one sandboxed child per program.

This file is run as a script, never imported by the package: it must stay
standard-library only, so that every child it forks starts from a clean interpreter
that holds nothing of the caller (no pytest, no System, no API key, no environment
beyond a minimal one). The caller runs ``python -I -S -B -c <bootstrap>
.../_zygote.py`` and sends this file's code object, compiled once in the caller and
marshalled, as a first length-prefixed frame: the bootstrap runs it as ``__main__``
(compiling this file took each start-up about 40 ms of CPU).

Protocol (over the zygote's stdin/stdout): frames of a 4-byte big-endian length
followed by UTF-8 JSON. The client sends an ``init`` frame; the zygote sets up its
isolation and answers ``ready`` with what it could set up. Then, for each ``run``
frame (followed on the same pipe by ``judge_bytes`` raw bytes: the judge's part, JSON
with ``test``, ``prompt``, ``keep`` and ``call``), it forks the two children,
supervises them and answers with the verdict. End of input ends the zygote.

Isolation is set up once, in the zygote, where Linux allows it (root with
CAP_SYS_ADMIN, or an unprivileged user namespace): new mount, PID, IPC and
(unless ``network="allow"``) network namespaces; the zygote's forker becomes PID 1
of the new PID namespace, so ``kill(-1)`` after each run removes every process the
program left, and nothing can address a process outside. The root becomes an
allow-list (:func:`setup_filesystem`): an empty read-only tmpfs holding, bound
read-only, only the interpreter, the standard library (site-packages hidden), the
shared libraries they load (read from the ELF headers), the declared packages and a
few files of ``/etc``; five devices; a private ``/proc``; private ``noexec`` ``/tmp``
and ``/dev/shm``. As root, each child also switches to an unused uid. Elsewhere
("basic" mode) the forker is a child subreaper and sweeps escaped processes by
scanning ``/proc``; as root there, children switch to unused uids too, reaching the
interpreter through directories the forker holds open (``/proc/self/fd/<n>``, see
:func:`reach_through`) where the uid cannot enter them by path, and where no unused
uid can run Python the zygote refuses to run programs at all (:func:`root_refusal`).

Each run forks two children: the program's (first) and the judge's. Both get their
own session and process group, a minimal environment, stdin on ``/dev/null``,
stdout/stderr into one capped pipe, resource limits (CPU, address space, file size,
open files, processes) and no new privileges. The program's child compiles and runs
the solution in a fresh temporary directory, then answers the judge's calls (see
:class:`Peer`). The judge's part of the request (tests, prompt, names) is read from
the request pipe only after the program's child was forked, into a mapping unmapped
once the judge is forked; the judge is not dumpable, runs under another uid where
uids are switched, ignores the signals it can, runs the tests with the prompt's own
helpers and the program's functions as stand-ins, rebuilds every returned value from
data, and alone writes the verdict, on a pipe only it and the forker hold.
"""

from __future__ import annotations

import array
import binascii
import builtins
import collections
import ctypes
import datetime
import decimal
import fcntl
import fractions
import functools
import gc
import itertools
import json
import math
import mmap
import os
import random
import re
import resource
import select
import shutil
import signal
import struct
import sys
import tempfile
import time
import types
from collections.abc import Callable
from stat import S_ISLNK, S_ISREG
from typing import Any, NoReturn

# Kernel constants (Linux).
CLONE_NEWNS = 0x00020000
CLONE_NEWIPC = 0x08000000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000
MS_RDONLY = 1
MS_NOSUID = 2
MS_NODEV = 4
MS_NOEXEC = 8
MS_REMOUNT = 32
MS_NOATIME = 1024
MS_NODIRATIME = 2048
MS_BIND = 4096
MS_MOVE = 8192
MS_REC = 16384
MS_PRIVATE = 1 << 18
MS_RELATIME = 1 << 21
MS_STRICTATIME = 1 << 24
PR_SET_PDEATHSIG = 1
PR_SET_DUMPABLE = 4
PR_CAPBSET_DROP = 24
PR_SET_CHILD_SUBREAPER = 36
PR_SET_NO_NEW_PRIVS = 38

# Modules imported once here so that children do not pay for them.
PRELOAD = [
    "bisect", "collections", "copy", "dataclasses", "datetime", "decimal",
    "fractions", "functools", "hashlib", "heapq", "itertools", "json", "math",
    "operator", "random", "re", "statistics", "string", "typing", "unicodedata",
]

_OPTION_FLAGS = {
    "nosuid": MS_NOSUID,
    "nodev": MS_NODEV,
    "noexec": MS_NOEXEC,
    "noatime": MS_NOATIME,
    "nodiratime": MS_NODIRATIME,
    "relatime": MS_RELATIME,
    "strictatime": MS_STRICTATIME,
}

_libc: Any = None


def libc() -> Any:
    global _libc
    if _libc is None:
        # The process's own symbols, libc's among them: ctypes.util.find_library
        # would import subprocess and run ldconfig at every start-up.
        _libc = ctypes.CDLL(None, use_errno=True)
    return _libc


def _check(result: int, what: str) -> None:
    if result != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def unshare(flags: int) -> None:
    _check(libc().unshare(ctypes.c_int(flags)), "unshare")


def mount(source: str | None, target: str, fstype: str | None, flags: int,
          data: str | None = None) -> None:
    def enc(s: str | None) -> bytes | None:
        return None if s is None else os.fsencode(s)

    _check(
        libc().mount(enc(source), enc(target), enc(fstype), ctypes.c_ulong(flags),
                     enc(data)),
        f"mount {target}",
    )


def prctl(option: int, arg: int) -> int:
    result: int = libc().prctl(ctypes.c_int(option), ctypes.c_ulong(arg),
                               ctypes.c_ulong(0), ctypes.c_ulong(0), ctypes.c_ulong(0))
    return result


def drop_capabilities() -> None:
    """Empty the bounding, effective, permitted and inheritable capability sets."""
    for cap in range(64):
        if prctl(PR_CAPBSET_DROP, cap) != 0 and ctypes.get_errno() == 22:  # EINVAL
            break

    class Header(ctypes.Structure):
        _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]

    class Data(ctypes.Structure):
        _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32),
                    ("inheritable", ctypes.c_uint32)]

    header = Header(0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3
    data = (Data * 2)()
    _check(libc().capset(ctypes.byref(header), ctypes.byref(data)), "capset")


# ------------------------------------------------------------------ framing


def read_exact(fd: int, n: int) -> bytes | None:
    chunks = []
    while n:
        chunk = os.read(fd, n)
        if not chunk:
            return None
        chunks.append(chunk)
        n -= len(chunk)
    return b"".join(chunks)


def read_frame(fd: int) -> dict[str, Any] | None:
    head = read_exact(fd, 4)
    if head is None:
        return None
    body = read_exact(fd, struct.unpack(">I", head)[0])
    if body is None:
        return None
    frame: dict[str, Any] = json.loads(body.decode("utf-8"))
    return frame


def write_frame(fd: int, frame: dict[str, Any]) -> None:
    body = json.dumps(frame).encode("utf-8")
    data = struct.pack(">I", len(body)) + body
    while data:
        data = data[os.write(fd, data):]


# ------------------------------------------------------------------ isolation


class Setup:
    """What the zygote managed to set up; sent to the client as ``ready``."""

    def __init__(self) -> None:
        self.namespaces = False
        self.userns = False
        self.network = "shared"
        self.filesystem = "basic"
        self.proc = "host"
        self.uid: int | None = None  # the uid children switch to (root only)
        self.uid_base: int | None = None
        self.uid_span = 0
        #: (directory, descriptor of the forker): the interpreter's directories a
        #: switched uid cannot reach by their paths (basic level, e.g. pyenv's Python
        #: under /root); children reach them through /proc/self/fd (see reach_through)
        self.reach: list[tuple[str, int]] = []
        #: (a path the import system holds, what it becomes in a child): see reach_through
        self.aliases: list[tuple[str, str]] = []
        self.work = tempfile.gettempdir()
        self.private_dirs: list[str] = []  # private tmpfs, wiped after each run
        self.keep: set[str] = set()  # the view's mounts inside those (not wiped)
        self.view: list[str] = []  # what the file-system view binds from the host
        self.nproc_base = 0  # tasks already counted against RLIMIT_NPROC
        self.notes: list[str] = []

    def report(self) -> dict[str, Any]:
        return {
            "op": "ready",
            "pid": os.getpid(),
            "level": self.level(),
            "namespaces": self.namespaces,
            "user_namespace": self.userns,
            "network": self.network,
            "filesystem": self.filesystem,
            "proc": self.proc,
            "uid_switch": self.uid_base is not None,
            "process_limit": self.nproc_base >= 0,
            "view": self.view,
            "notes": self.notes,
        }

    def level(self) -> str:
        """``namespaces``: the allow-list view, private PID, IPC and (unless
        allowed) network namespaces; ``basic``: none of them."""
        return "namespaces" if self.filesystem == "isolated" else "basic"


def needed_paths() -> list[str]:
    """Directories the interpreter reads from: prefixes and sys.path entries."""
    found: set[str] = set()
    for path in (sys.prefix, sys.exec_prefix, sys.base_prefix, sys.base_exec_prefix,
                 os.path.dirname(sys.executable), *sys.path):
        if path and os.path.isdir(path):
            found.add(os.path.realpath(path))
    top = sorted(found)
    return [p for p in top if not any(p != q and p.startswith(q.rstrip("/") + "/")
                                      for q in top)]


def under(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def mountpoints() -> list[tuple[str, int]]:
    """(mount point, flags to keep) of every mount, from /proc/self/mountinfo."""
    result = []
    with open("/proc/self/mountinfo", encoding="utf-8", errors="surrogateescape") as f:
        for line in f:
            fields = line.split()
            point = fields[4].encode("utf-8", "surrogateescape").decode(
                "unicode_escape").encode("latin-1").decode("utf-8", "replace")
            flags = 0
            for option in fields[5].split(","):
                flags |= _OPTION_FLAGS.get(option, 0)
            result.append((point, flags))
    return result


def write_file(path: str, text: str) -> None:
    with open(path, "w", encoding="ascii") as f:
        f.write(text)


def pick_uid_range() -> tuple[int, int] | None:
    """A range of uids nobody uses, inside this user namespace's map."""
    try:
        with open("/proc/self/uid_map", encoding="ascii") as f:
            ranges = [tuple(int(x) for x in line.split()) for line in f if line.strip()]
    except OSError:
        ranges = [(0, 0, 2**32 - 1)]
    for inside, _outside, count in ranges:
        lo, hi = max(inside, 2_000_000_000), min(inside + count - 1, 2**31 - 2)
        if hi - lo >= 1_000_000:
            return lo, 1_000_000
    for inside, _outside, count in ranges:
        lo, hi = max(inside, 200_000), min(inside + count - 1, 2**31 - 2)
        if hi - lo >= 10_000:
            return lo, hi - lo
    return None


#: In every child, the directories of :attr:`Setup.reach` are held open from this
#: descriptor on (program and judge alike): ``/proc/self/fd/<n>`` stands for each.
REACH_FD = 10


def under_any(path: str, pairs: list[tuple[str, str]]) -> str:
    """``path`` with the first of ``pairs`` (prefix, replacement) it lies under
    replaced; unchanged when none."""
    for prefix, replacement in pairs:
        if under(path, prefix):
            return replacement + path[len(prefix):]
    return path


def alias_pairs(reach: list[tuple[str, int]], numbers: list[int]) -> list[tuple[str, str]]:
    """(path, what a child sees instead) for the directories of ``reach`` held at
    descriptors ``numbers``, and for the non-real spellings of the interpreter's
    paths (a ``sys.path`` entry through a symbolic link) that lie under them."""
    pairs = [(path, f"/proc/self/fd/{n}") for (path, _), n in zip(reach, numbers)]
    extra = []
    for path in (sys.prefix, sys.exec_prefix, sys.base_prefix, sys.base_exec_prefix,
                 os.path.dirname(sys.executable), *sys.path):
        if isinstance(path, str) and path:
            real = os.path.realpath(path)
            moved = under_any(real, pairs)
            if real != path and moved != real:
                extra.append((path, moved))
    return sorted(set(pairs + extra), key=lambda pair: -len(pair[0]))


def probe_uid(uid: int, paths: list[str],
              reach: list[tuple[str, int]] | None = None) -> list[str] | None:
    """Whether a child switched to ``uid`` can still read the interpreter's files:
    the directories of ``paths`` it can reach only through the descriptors of
    ``reach`` (path, descriptor: the forker's, held open), or None when it cannot
    read them even so."""
    fds = dict(reach or [])
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(read_end)
            os.setgroups([])
            os.setresgid(uid, uid, uid)
            os.setresuid(uid, uid, uid)
            needs = []
            for path in paths:
                try:
                    os.listdir(path)
                except PermissionError:
                    if path not in fds:
                        raise
                    os.listdir(f"/proc/self/fd/{fds[path]}")
                    needs.append(path)
            pairs = alias_pairs([(p, fds[p]) for p in needs], [fds[p] for p in needs])
            with open(under_any(os.path.join(os.path.dirname(os.__file__), "os.py"),
                                pairs), "rb") as f:
                f.read(1)
            os.write(write_end, json.dumps(needs).encode())
            os._exit(0)
        except BaseException:  # noqa: BLE001 (any failure means no)
            os._exit(1)
    os.close(write_end)
    message = b""
    while chunk := os.read(read_end, 65536):
        message += chunk
    os.close(read_end)
    _, status = os.waitpid(pid, 0)
    if not (os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0):
        return None
    needs: list[str] = json.loads(message.decode("utf-8"))
    return needs


def reach_through(aliases: list[tuple[str, str]]) -> None:
    """In a child switched to a uid that cannot reach the interpreter's directories
    by their paths: the paths the import system holds (``sys.path``, packages'
    ``__path__``, modules' ``__file__`` and specs) go through the descriptors
    instead, so that importing a module not yet loaded still works."""
    def move(path: Any) -> Any:
        return under_any(path, aliases) if type(path) is str else path

    sys.path[:] = [move(p) for p in sys.path]
    sys.path_importer_cache.clear()
    for module in list(sys.modules.values()):
        attrs = getattr(module, "__dict__", None)
        if type(attrs) is not dict:
            continue
        search = attrs.get("__path__")
        if type(search) is list:
            search[:] = [move(p) for p in search]
        for key in ("__file__", "__cached__"):
            if type(attrs.get(key)) is str:
                attrs[key] = move(attrs[key])
        spec = attrs.get("__spec__")
        if spec is not None:
            try:
                spec.origin = move(spec.origin)
                if type(spec.submodule_search_locations) is list:
                    spec.submodule_search_locations[:] = [
                        move(p) for p in spec.submodule_search_locations]
                if type(getattr(spec, "cached", None)) is str:
                    spec.cached = move(spec.cached)
            except (AttributeError, TypeError):
                pass


def count_tasks(uid: int) -> int:
    """Tasks (threads) that run under ``uid``: what RLIMIT_NPROC counts."""
    total = 0
    try:
        names = os.listdir("/proc")
    except OSError:
        return 0
    for name in names:
        if name.isdigit():
            try:
                if os.stat(f"/proc/{name}").st_uid == uid:
                    total += len(os.listdir(f"/proc/{name}/task"))
            except OSError:
                pass
    return total


def kernel_at_least(major: int, minor: int) -> bool:
    try:
        parts = os.uname().release.split(".")
        return (int(parts[0]), int(parts[1].split("-")[0])) >= (major, minor)
    except (ValueError, IndexError):
        return False


def probe_namespaces(enter: Callable[[], None]) -> None:
    """Run ``enter`` and a tmpfs mount in a child; raise its OSError here."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(read_end)
            enter()
            mount(None, "/", None, MS_REC | MS_PRIVATE)
            mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "size=4k")
            os._exit(0)
        except BaseException as exc:  # noqa: BLE001 (any failure means no)
            error = getattr(exc, "errno", None) or 1
            os.write(write_end, f"{error} {getattr(exc, 'strerror', exc)}".encode())
            os._exit(1)
    os.close(write_end)
    message = b""
    while chunk := os.read(read_end, 4096):
        message += chunk
    os.close(read_end)
    _, status = os.waitpid(pid, 0)
    if not (os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0):
        code, _, text = message.decode("utf-8", "replace").partition(" ")
        raise OSError(int(code) if code.isdigit() else 1, text or "refused")


def setup_namespaces(config: dict[str, Any], setup: Setup) -> bool:
    """Enter new namespaces; True when this process must fork the PID-1 forker."""
    if not sys.platform.startswith("linux") or config.get("namespaces") is False:
        return False
    uid, gid = os.getuid(), os.getgid()
    flags = CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC
    if config["network"] != "allow":
        flags |= CLONE_NEWNET
    userns = os.geteuid() != 0

    def enter() -> None:
        if userns:
            unshare(CLONE_NEWUSER)
            write_file("/proc/self/setgroups", "deny")
            write_file("/proc/self/uid_map", f"0 {uid} 1")
            write_file("/proc/self/gid_map", f"0 {gid} 1")
        unshare(flags)

    try:
        if config.get("simulate_no_namespaces"):
            raise OSError(1, "refused for a test (CTXBENCH_SANDBOX_NAMESPACES=0)")
        if userns:
            # A user namespace cannot be left: try in a child first, so that a
            # refusal half-way (AppArmor on Ubuntu 24.04 lets unshare pass, then
            # refuses the uid map or the mounts) leaves this process as it was.
            probe_namespaces(enter)
        enter()
        setup.userns = userns
    except OSError as exc:
        setup.notes.append(f"namespaces unavailable ({exc.strerror}); basic mode")
        setup.userns = False
        return False
    setup.namespaces = True
    if flags & CLONE_NEWNET:
        setup.network = "isolated"
    return True


# ------------------------------------------------------------------ the view

PT_LOAD, PT_DYNAMIC, PT_INTERP = 1, 2, 3
DT_NEEDED, DT_STRTAB, DT_RPATH, DT_RUNPATH = 1, 5, 15, 29
MNT_DETACH = 2
#: pivot_root(2) has no libc wrapper: its system call number per machine. Elsewhere
#: the view is entered with MS_MOVE and chroot (the old root stays mounted beneath).
PIVOT_ROOT = {"x86_64": 155, "aarch64": 41, "arm64": 41, "riscv64": 41,
              "loongarch64": 41, "ppc64le": 203, "ppc64": 203, "s390x": 217,
              "i386": 217, "i686": 217, "armv7l": 218, "armv8l": 218}
#: The device files of the view (bound from the host); /dev holds nothing else but
#: a private /dev/shm and the links to /proc/self/fd.
DEVICES = ("null", "zero", "full", "random", "urandom")
#: Files outside Python the view holds when they exist: the dynamic loader's cache
#: (a Python the program starts finds its libraries as the host's does) and the
#: time zone data (``time.localtime``, ``zoneinfo``).
EXTRA_FILES = ("/etc/ld.so.cache", "/etc/localtime", "/usr/share/zoneinfo")
#: Directories inside the standard library's that hold installed packages: they are
#: hidden behind an empty file system unless a package was declared.
SITE_DIRS = ("site-packages", "dist-packages")
#: Where the view is assembled before it becomes the root (the first that exists
#: and holds nothing the view binds).
STAGES = ("/mnt", "/media", "/srv", "/opt", "/run", "/var/tmp", "/tmp", "/dev/shm",
          "/home", "/boot")


def elf_info(path: str) -> tuple[bytes, str | None, list[str], list[str]]:
    """(kind, program interpreter, DT_NEEDED names, run paths) of an ELF file.

    ``kind`` (class, byte order and machine) is empty when ``path`` is not an ELF
    file or cannot be read: the libraries a dependency resolves to must match it.
    """
    try:
        with open(path, "rb") as f:
            head = f.read(64)
            if len(head) < 52 or head[:4] != b"\x7fELF" or head[4] not in (1, 2):
                return b"", None, [], []
            wide, end = head[4] == 2, "<" if head[5] == 1 else ">"
            kind = head[4:6] + head[18:20]
            if wide:
                phoff = struct.unpack_from(end + "Q", head, 32)[0]
                phentsize, phnum = struct.unpack_from(end + "HH", head, 54)
                ph_fmt, dyn_fmt = end + "IIQQQQ", end + "qQ"
            else:
                phoff = struct.unpack_from(end + "I", head, 28)[0]
                phentsize, phnum = struct.unpack_from(end + "HH", head, 42)
                ph_fmt, dyn_fmt = end + "IIIII", end + "iI"
            f.seek(phoff)
            table = f.read(phentsize * phnum)
            loads, dynamic, interp_at = [], None, None
            for i in range(phnum):
                fields = struct.unpack_from(ph_fmt, table, i * phentsize)
                if wide:
                    ptype, offset, vaddr, filesz = fields[0], fields[2], fields[3], fields[5]
                else:
                    ptype, offset, vaddr, filesz = fields[0], fields[1], fields[2], fields[4]
                if ptype == PT_LOAD:
                    loads.append((vaddr, offset, filesz))
                elif ptype == PT_DYNAMIC:
                    dynamic = (offset, filesz)
                elif ptype == PT_INTERP:
                    interp_at = (offset, filesz)
            interp = None
            if interp_at is not None:
                f.seek(interp_at[0])
                interp = f.read(interp_at[1]).split(b"\0")[0].decode("utf-8", "replace")
            if dynamic is None:
                return kind, interp, [], []
            f.seek(dynamic[0])
            data = f.read(dynamic[1])
            step = struct.calcsize(dyn_fmt)
            strtab, needed, paths = None, [], []
            for i in range(0, len(data) - step + 1, step):
                tag, value = struct.unpack_from(dyn_fmt, data, i)
                if tag == 0:
                    break
                if tag == DT_STRTAB:
                    strtab = value
                elif tag == DT_NEEDED:
                    needed.append(value)
                elif tag in (DT_RPATH, DT_RUNPATH):
                    paths.append(value)
            base = next((off + strtab - va for va, off, size in loads
                         if strtab is not None and va <= strtab < va + size), None)
            if base is None:
                return kind, interp, [], []

            def string(at: int) -> str:
                f.seek(base + at)
                raw = b""
                while b"\0" not in raw and len(raw) < 65536:
                    chunk = f.read(256)
                    if not chunk:
                        break
                    raw += chunk
                return raw.split(b"\0")[0].decode("utf-8", "replace")

            runpath = [p for at in paths for p in string(at).split(":") if p]
            return kind, interp, [string(at) for at in needed], runpath
    except (OSError, struct.error, ValueError):
        return b"", None, [], []


def expand(pattern: str) -> list[str]:
    """The files ``pattern`` names (``/etc/ld.so.conf.d/*.conf``); without
    :mod:`glob` for the common one-star case (its regular expressions cost more
    than the rest of the view)."""
    folder, name = os.path.split(pattern)
    if name.count("*") == 1 and not any(c in pattern for c in "?[") and \
            "*" not in folder:
        head, tail = name.split("*")
        try:
            names = os.listdir(folder)
        except OSError:
            return []
        return sorted(os.path.join(folder, n) for n in names
                      if n.startswith(head) and n.endswith(tail)
                      and len(n) >= len(head) + len(tail))
    import glob

    return sorted(glob.glob(pattern))


def library_dirs() -> list[str]:
    """Where the dynamic loader looks for a library, after an object's run paths:
    ``LD_LIBRARY_PATH``, the directories of ``/etc/ld.so.conf`` (what its cache
    lists) and the default ones."""
    dirs = [d for d in os.environ.get("LD_LIBRARY_PATH", "").split(":") if d]
    todo, seen = ["/etc/ld.so.conf"], set()
    while todo:
        conf = todo.pop(0)
        if conf in seen:
            continue
        seen.add(conf)
        try:
            with open(conf, encoding="utf-8", errors="replace") as f:
                lines = f.read().splitlines()
        except OSError:
            continue
        for line in lines:
            line = line.split("#", 1)[0].strip()
            if line.startswith("include"):
                pattern = line[len("include"):].strip()
                if not pattern.startswith("/"):
                    pattern = os.path.join(os.path.dirname(conf), pattern)
                todo.extend(expand(pattern))
            elif line.startswith("/"):
                dirs.append(line)
    arch = getattr(sys.implementation, "_multiarch", "") or ""
    for top in ("/lib", "/usr/lib"):
        if arch:
            dirs.append(f"{top}/{arch}")
    dirs += ["/lib64", "/usr/lib64", "/lib", "/usr/lib"]
    return list(dict.fromkeys(dirs))


def elf_kind(path: str) -> bytes:
    """Class, byte order and machine of an ELF file (empty: not one)."""
    try:
        with open(path, "rb") as f:
            head = f.read(20)
    except OSError:
        return b""
    return head[4:6] + head[18:20] if head[:4] == b"\x7fELF" and len(head) == 20 else b""


def shared_libraries(roots: list[str]) -> list[str]:
    """The shared libraries (and program interpreter) the ELF files ``roots`` load,
    transitively, as the dynamic loader would find them."""
    dirs = library_dirs()
    exists = {d for d in dirs if os.path.isdir(d)}
    dirs = [d for d in dirs if d in exists]
    found: dict[str, None] = {}
    resolved: dict[tuple[str, bytes, tuple[str, ...]], str | None] = {}
    todo = list(roots)
    seen: set[str] = set()
    while todo:
        path = todo.pop()
        if path in seen:
            continue
        seen.add(path)
        kind, interp, needed, runpath = elf_info(path)
        if not kind:
            continue
        origin = ""
        if any("ORIGIN" in p for p in runpath):
            origin = os.path.dirname(os.path.realpath(path))
        if interp and interp not in found:
            found[interp] = None
            todo.append(interp)
        search = [p.replace("${ORIGIN}", origin).replace("$ORIGIN", origin)
                  for p in runpath] + dirs
        for name in needed:
            key = (name, kind, tuple(search[:len(search) - len(dirs)]))
            if key not in resolved:
                resolved[key] = None
                for candidate in [name] if "/" in name else [os.path.join(d, name)
                                                              for d in search]:
                    if os.path.isfile(candidate) and elf_kind(candidate) == kind:
                        resolved[key] = candidate
                        break
            library = resolved[key]
            if library is not None and library not in found:
                found[library] = None
                todo.append(library)
    return list(found)


def python_files(packages: list[str]) -> tuple[list[str], list[str], list[str]]:
    """(paths, native files, hidden directories) of the interpreter's view:
    the interpreter, its standard library (``sys.path`` of this ``-S`` process)
    without the installed-packages directories in it, the declared ``packages``
    (paths given by the client), and every ELF file among them."""
    stdlib = [os.path.realpath(p) for p in sys.path if p and os.path.isdir(p)]
    stdlib = [p for p in stdlib if os.path.basename(p) not in SITE_DIRS]
    executable = sys.executable
    paths = [executable, *stdlib, *packages]
    hidden = []
    for top in stdlib:
        for name in SITE_DIRS:
            if os.path.isdir(os.path.join(top, name)):
                hidden.append(os.path.join(top, name))
    native = [os.path.realpath(executable)]
    for top in stdlib:  # extension modules sit at the top (lib-dynload): no walk
        try:
            names = os.listdir(top)
        except OSError:
            continue
        native.extend(os.path.join(top, n) for n in names if n.endswith(".so"))
    for top in packages:
        if os.path.isfile(top):
            native.append(top)
            continue
        for folder, _subdirs, files in os.walk(top):
            native.extend(os.path.join(folder, n) for n in files if ".so" in n)
    return paths, native, [h for h in hidden
                           if not any(under(p, h) for p in packages)]


def copy_links(root: str, path: str) -> str | None:
    """Recreate under ``root`` the symbolic links met on the way to ``path`` on the
    host; its real path (None when it does not exist)."""
    path = os.path.abspath(path)
    for _ in range(40):
        parts = [p for p in path.split("/") if p]
        current = "/"
        restart = None
        for i, part in enumerate(parts):
            step = os.path.join(current, part)
            try:
                info = os.lstat(step)
            except OSError:
                return None
            if S_ISLNK(info.st_mode):
                target = os.readlink(step)
                link = root + step
                if not os.path.lexists(link):
                    os.makedirs(root + current, 0o755, exist_ok=True)
                    os.symlink(target, link)
                restart = os.path.normpath(os.path.join(current, target, *parts[i + 1:]))
                break
            current = step
        if restart is None:
            return current
        path = restart
    return None


def bind(source: str, target: str, locked: int, *, readonly: bool = True) -> None:
    """Bind ``source`` (a directory or a file) at ``target``, read-only."""
    if os.path.isdir(source):
        os.makedirs(target, 0o755, exist_ok=True)
    else:
        os.makedirs(os.path.dirname(target), 0o755, exist_ok=True)
        if not os.path.lexists(target):
            os.close(os.open(target, os.O_CREAT | os.O_WRONLY, 0o644))
    mount(source, target, None, MS_BIND)
    if readonly:
        mount(None, target, None,
              MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV | locked)


def mount_flags(path: str, points: list[tuple[str, int]]) -> int:
    """The flags of the mount ``path`` is on (a bind must keep them, as they may be
    locked in a user namespace)."""
    best, flags = "", 0
    for point, keep in points:
        if under(path, point) and len(point) >= len(best):
            best, flags = point, keep
    return flags


def enter_root(root: str) -> None:
    """Make ``root`` (a mount point) this process's ``/``, the old root gone."""
    os.chdir(root)
    number = PIVOT_ROOT.get(os.uname().machine)
    if number is not None:
        os.mkdir(".old", 0o700)
        _check(libc().syscall(ctypes.c_long(number), b".", b".old"), "pivot_root")
        os.chdir("/")
        _check(libc().umount2(b"/.old", ctypes.c_int(MNT_DETACH)), "umount /.old")
        os.rmdir("/.old")
    else:
        mount(".", "/", None, MS_MOVE)
        os.chroot(".")
        os.chdir("/")


def setup_filesystem(config: dict[str, Any], setup: Setup) -> None:
    """In the new mount namespace, make the root an allow-list: an empty read-only
    file system holding only, read-only, the interpreter, the standard library (its
    installed-packages directories hidden), the declared packages, the shared
    libraries all of them load, the files of :data:`EXTRA_FILES`; a private
    ``/proc``; the devices of :data:`DEVICES`; private ``/tmp`` and ``/dev/shm``."""
    packages = [p for p in config.get("packages", {}).get("paths", []) if p]
    paths, native, hidden = python_files(packages)
    paths += shared_libraries(native)
    paths += [p for p in EXTRA_FILES if os.path.exists(p)]
    points = mountpoints()
    mount(None, "/", None, MS_REC | MS_PRIVATE)
    stage = next((s for s in STAGES if os.path.isdir(s) and not os.path.islink(s)
                  and not any(under(os.path.realpath(p), s) for p in paths)), None)
    if stage is None:
        raise OSError(0, "no directory to assemble the view in")
    mount("tmpfs", stage, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=16m")
    root = stage
    # /tmp first: what the view binds under it then sits on the private one.
    os.mkdir(root + "/tmp", 0o1777)
    mount("tmpfs", root + "/tmp", "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC,
          "mode=1777,size=256m,nr_inodes=65536")
    real: list[str] = []
    for path in paths:
        resolved = copy_links(root, path)
        if resolved is not None:
            real.append(resolved)
    real = sorted(set(real))
    real = [p for p in real if not any(p != q and under(p, q) for q in real)]
    for path in real:
        bind(path, root + path, mount_flags(path, points))
    for path in hidden:
        if os.path.isdir(root + path):
            mount("tmpfs", root + path, "tmpfs",
                  MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, "mode=0755,size=4k")
    os.makedirs(root + "/dev", 0o755, exist_ok=True)
    mount("tmpfs", root + "/dev", "tmpfs", MS_NOSUID | MS_NOEXEC, "mode=0755,size=64k")
    for name in DEVICES:
        if os.path.exists("/dev/" + name):
            bind("/dev/" + name, f"{root}/dev/{name}", 0, readonly=False)
    for name, target in (("fd", "/proc/self/fd"), ("stdin", "/proc/self/fd/0"),
                         ("stdout", "/proc/self/fd/1"), ("stderr", "/proc/self/fd/2")):
        os.symlink(target, f"{root}/dev/{name}")
    os.mkdir(root + "/dev/shm", 0o1777)
    mount("tmpfs", root + "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC,
          "mode=1777,size=64m,nr_inodes=4096")
    mount(None, root + "/dev", None, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NOEXEC)
    os.makedirs(root + "/proc", 0o555, exist_ok=True)
    try:
        mount("proc", root + "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
        setup.proc = "private"
    except OSError as exc:
        mount("/proc", root + "/proc", None, MS_BIND | MS_REC)
        setup.notes.append(f"/proc shows the host's processes ({exc.strerror})")
    enter_root(root)
    try:
        mount(None, "/", None, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV)
    except OSError as exc:
        setup.notes.append(f"the view's root stays writable ({exc.strerror})")
    sys.path[:] = [p for p in sys.path if os.path.isdir(p)]
    sys.path.extend(config.get("packages", {}).get("sys_path", []))
    setup.filesystem = "isolated"
    setup.work = "/tmp"
    setup.private_dirs = ["/tmp", "/dev/shm"]
    # The view's own entries under /tmp (Python living there) survive the wipes.
    setup.keep = {p for p in real if under(p, "/tmp") and p != "/tmp"}
    setup.view = real + [f"/dev/{name}" for name in DEVICES]


def setup_identity(config: dict[str, Any], setup: Setup) -> None:
    """As root, children switch to an unused uid when it can still run Python: by
    the interpreter's paths, or (Linux) through descriptors of its directories the
    forker holds open for the children, where the uid cannot reach them by path
    (pyenv's Python under a ``/root`` of mode 0700, at the basic level)."""
    if os.geteuid() == 0 and not setup.userns:
        span = pick_uid_range()
        if config.get("simulate_no_uid"):
            setup.notes.append("children stay root: no unused uid can read the "
                               "interpreter (CTXBENCH_SANDBOX_UID_SWITCH=0, for tests)")
        elif span is not None:
            base, size = span
            uid = base + random.randrange(size)
            paths = needed_paths()
            reach: list[tuple[str, int]] = []
            if sys.platform.startswith("linux") and os.path.isdir("/proc/self/fd"):
                for path in paths:
                    try:
                        reach.append((path, os.open(
                            path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)))
                    except OSError:
                        pass
            needs = probe_uid(uid, paths, reach)
            for path, fd in reach:
                if needs is None or path not in needs:
                    os.close(fd)
            if needs is not None:
                setup.uid_base, setup.uid_span = base, size
                setup.reach = [(p, fd) for p, fd in reach if p in needs]
                setup.aliases = alias_pairs(
                    setup.reach, [REACH_FD + i for i in range(len(setup.reach))])
            else:
                setup.notes.append(
                    "children stay root: an unused uid cannot read the interpreter")
        else:
            setup.notes.append("children stay root: no unused uid is mapped")
    if setup.uid_base is not None:
        setup.nproc_base = 0  # a fresh uid owns no task yet
    elif os.geteuid() == 0 and not setup.userns:
        setup.nproc_base = -1  # root ignores RLIMIT_NPROC
        setup.notes.append("no process limit: children run as root")
    elif setup.userns and kernel_at_least(5, 14):
        setup.nproc_base = 4  # counted per user namespace
    else:
        setup.nproc_base = count_tasks(os.getuid())


def root_refusal(setup: Setup) -> str | None:
    """Why the zygote refuses to run programs (None: it runs them): as root at the
    basic level, a child that keeps uid 0 could read every file (``/etc/shadow``),
    write the plugin, the standard library and the virtual environment that later
    runs load, and signal the caller; there is no view to confine it."""
    if os.geteuid() != 0 or setup.userns or setup.uid_base is not None or \
            setup.filesystem == "isolated":
        return None
    why = "; ".join(n for n in setup.notes if not n.startswith("no process limit"))
    return ("the code sandbox will not run generated code as root without namespaces "
            f"({why}): it could read and write every file and signal every process; "
            "fix: run pytest as a non-root user, or let the sandbox create namespaces "
            "(a container with CAP_SYS_ADMIN and unshare allowed: docker run "
            "--cap-add SYS_ADMIN --security-opt seccomp=unconfined --security-opt "
            "apparmor=unconfined, or --privileged), or install Python where any user "
            "can read it")


# ------------------------------------------------------------------ supervision


def set_cloexec_nonblock(fd: int) -> None:
    os.set_blocking(fd, False)


def sweep_namespace() -> None:
    """PID 1 of the sandbox's PID namespace: kill and reap everything else."""
    try:
        os.kill(-1, signal.SIGKILL)
    except ProcessLookupError:
        pass
    while True:
        try:
            os.waitpid(-1, 0)
        except ChildProcessError:
            return


def last_pid() -> int | None:
    try:
        with open("/proc/loadavg", encoding="ascii") as f:
            return int(f.read().split()[4])
    except (OSError, ValueError, IndexError):
        return None


def sweep_basic(first: int, active: int) -> None:
    """Kill processes that escaped the child's process group (basic mode).

    This process is a child subreaper, so an escaped process is re-parented to it
    once its ancestors in the sandbox are gone. Only pids allocated since the child
    was forked can be the sandbox's.
    """
    me = os.getpid()
    for _ in range(10_000):
        end = last_pid()
        if end is None:
            return
        if end >= first:
            window = list(range(first, end + 1))
        else:  # pids wrapped around
            window = list(range(first, 1 << 22)) + list(range(2, end + 1))
        strays = []
        for pid in window:
            if pid == active:
                continue
            try:
                with open(f"/proc/{pid}/stat", "rb") as f:
                    data = f.read()
            except OSError:
                continue
            fields = data[data.rfind(b")") + 2:].split()
            if int(fields[1]) == me:
                strays.append(pid)
        if not strays:
            break
        for pid in strays:
            for target in (-pid, pid):
                try:
                    os.kill(target, signal.SIGKILL)
                except OSError:
                    pass
        for pid in strays:
            try:
                os.waitpid(pid, 0)
            except ChildProcessError:
                pass
    while True:  # zombies re-parented to us
        try:
            if os.waitpid(-1, os.WNOHANG)[0] == 0:
                return
        except ChildProcessError:
            return


def remove_tree(path: str) -> None:
    def fix(function: Callable[..., Any], failed: str, _exc: Any) -> None:
        try:
            os.chmod(os.path.dirname(failed), 0o700)
            if os.path.isdir(failed) and not os.path.islink(failed):
                os.chmod(failed, 0o700)
                shutil.rmtree(failed, ignore_errors=True)
            else:
                os.unlink(failed)
        except OSError:
            pass

    if os.path.lexists(path):
        shutil.rmtree(path, onerror=fix)


def wipe(directory: str, keep: set[str]) -> None:
    """Empty ``directory``, but for the view's mounts in ``keep`` (Python living
    under /tmp): the directories leading to them are wiped around them."""
    try:
        entries = os.listdir(directory)
    except OSError:
        return
    for name in entries:
        path = os.path.join(directory, name)
        if path in keep:
            continue
        if any(under(k, path) for k in keep):
            wipe(path, keep)
            continue
        if os.path.isdir(path) and not os.path.islink(path):
            remove_tree(path)
        else:
            try:
                os.unlink(path)
            except OSError:
                pass


def read_payload(fd: int, size: int) -> mmap.mmap | None:
    """Read ``size`` bytes of ``fd`` into a fresh anonymous mapping (None at end of
    input). The judge's part of a request (the tests, the prompt) lives only there,
    never in a Python object of the forker: the mapping is unmapped once the judge
    is forked, so no program forked later inherits a trace of it."""
    buf = mmap.mmap(-1, max(size, 1))
    view = memoryview(buf)
    got = 0
    try:
        while got < size:
            n = os.readv(fd, [view[got:size]])
            if n == 0:
                view.release()
                buf.close()
                return None
            got += n
    finally:
        if not buf.closed:
            view.release()
    return buf


class Forker:
    def __init__(self, setup: Setup) -> None:
        self.setup = setup
        self.pidfd = hasattr(os, "pidfd_open")
        self.unread = 0  # bytes of the judge's part still in the request pipe
    def run(self, req: dict[str, Any]) -> dict[str, Any]:
        setup = self.setup
        self.unread = int(req.get("judge_bytes", 0))
        uids: tuple[int, int] | None = None
        if setup.uid_base is not None:
            first = random.randrange(setup.uid_span)
            second = (first + 1 + random.randrange(setup.uid_span - 1)) % setup.uid_span
            uids = (setup.uid_base + first, setup.uid_base + second)
        tmp = tempfile.mkdtemp(prefix="ctxbench-", dir=setup.work)
        try:
            with open(os.path.join(tmp, "solution.py"), "w", encoding="utf-8") as f:
                f.write(req["solution"])
            if uids is not None:
                for path in (tmp, os.path.join(tmp, "solution.py")):
                    os.chown(path, uids[0], uids[0])
            return self._supervise(req, tmp, uids)
        finally:
            if self.unread:  # keep the request stream in step whatever happened
                payload = read_payload(0, self.unread)
                if payload is not None:
                    payload.close()
                self.unread = 0
            remove_tree(tmp)
            if setup.namespaces:
                for directory in setup.private_dirs:
                    wipe(directory, setup.keep)

    def _supervise(self, req: dict[str, Any], tmp: str,
                   uids: tuple[int, int] | None) -> dict[str, Any]:
        out_r, out_w = os.pipe()  # stdout and stderr of both processes
        j2p_r, j2p_w = os.pipe()  # judge -> program
        p2j_r, p2j_w = os.pipe()  # program -> judge
        started = time.monotonic()
        forker_pid = os.getpid()
        setup = self.setup
        # The program first, before the judge's part of the request is even read:
        # no byte of the tests is in its memory.
        pid = os.fork()
        if pid == 0:
            for fd in (out_r, j2p_w, p2j_r):
                os.close(fd)
            program_child(req, tmp, uids[0] if uids else None, setup,
                          [out_w, j2p_r, p2j_w], forker_pid)
        size, self.unread = self.unread, 0
        payload = read_payload(0, size)
        if payload is None:
            abandon([pid], setup.namespaces)
        rep_r, rep_w = os.pipe()  # judge -> forker: the verdict; nobody else has it
        jpid = os.fork()
        if jpid == 0:
            for fd in (rep_r, out_r, j2p_r, p2j_w):
                os.close(fd)
            judge_child(req, payload, size, tmp, uids[1] if uids else None, setup,
                        [out_w, rep_w, p2j_r, j2p_w], forker_pid)
        payload.close()
        for fd in (out_w, j2p_r, j2p_w, p2j_r, p2j_w, rep_w):
            os.close(fd)

        timeout = float(req["timeout"])
        cap = int(req["output_cap"])
        deadline = started + timeout
        out = bytearray()
        out_end = bytearray()  # the last OUTPUT_TAIL bytes, past the cap
        out_total = 0
        reports: list[str] = []
        rep_tail = b""
        poller = select.poll()
        pidfds: dict[int, int] = {}  # pidfd -> pid
        if self.pidfd:
            for target in (pid, jpid):
                try:
                    fd = os.pidfd_open(target)
                except OSError:
                    continue
                pidfds[fd] = target
                poller.register(fd, select.POLLIN)
        for fd in (rep_r, out_r):
            set_cloexec_nonblock(fd)
            poller.register(fd, select.POLLIN)
        # The request pipe: the caller writes nothing during a run, so the only
        # event it can report is a hang-up, when every writer is gone: the caller
        # died (Ctrl-C, SIGKILL, a crashed xdist worker). Nobody will read the
        # verdict, and the program must not outlive the run.
        poller.register(0, 0)
        open_fds = {rep_r, out_r}
        statuses: dict[int, int] = {}  # pid -> wait status, for those that ended
        timed_out = False

        def take(fd: int) -> bool | None:
            """Read once: True (data), False (end of file) or None (nothing yet)."""
            nonlocal out_total, rep_tail
            try:
                data = os.read(fd, 65536)
            except BlockingIOError:
                return None
            except OSError:
                data = b""
            if not data:
                return False
            if fd == out_r:
                out_total += len(data)
                if len(out) < cap:
                    out.extend(data[: cap - len(out)])
                if out_total > cap:
                    out_end.extend(data[-OUTPUT_TAIL:])
                    del out_end[:-OUTPUT_TAIL]
            else:
                lines = (rep_tail + data).split(b"\n")
                rep_tail = lines.pop()
                for line in lines:
                    reports.append(line.decode("utf-8", "replace"))
            return True

        def decided() -> bool:
            """The judge reported a verdict that needs no exit status."""
            return bool(reports) and not reports[-1].startswith("GONE")

        def ended(target: int, status: int) -> None:
            statuses[target] = status
            if target == pid:
                # The program's processes go with it: the judge then reads the
                # end of the program's channel at once.
                try:
                    os.kill(-pid, signal.SIGKILL)
                except OSError:
                    pass

        while jpid not in statuses and not decided():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                timed_out = True
                break
            wait_ms = remaining * 1000 if len(pidfds) == 2 else min(remaining * 1000, 5)
            for fd, _event in poller.poll(max(1, math.ceil(wait_ms))):
                if fd == 0:
                    abandon([pid, jpid], setup.namespaces)
                if fd in pidfds:
                    target = pidfds.pop(fd)
                    poller.unregister(fd)
                    os.close(fd)
                    ended(target, os.waitpid(target, 0)[1])
                elif fd in open_fds and take(fd) is False:
                    poller.unregister(fd)
                    open_fds.discard(fd)
            if len(pidfds) < 2:
                for target in (pid, jpid):
                    if target not in statuses and target not in pidfds.values():
                        done, st = os.waitpid(target, os.WNOHANG)
                        if done:
                            ended(target, st)
        duration = time.monotonic() - started
        program_alone = pid in statuses  # the program ended before we killed it
        for target in (-pid, pid, -jpid, jpid):
            try:
                os.kill(target, signal.SIGKILL)
            except OSError:
                pass
        for fd in pidfds:
            os.close(fd)
        for target in (pid, jpid):
            if target not in statuses:
                statuses[target] = os.waitpid(target, 0)[1]
        if setup.namespaces:
            sweep_namespace()
        else:
            sweep_basic(pid, jpid)
        for fd in open_fds:  # every writer is gone: drain what is left
            for _ in range(1024):  # at most 64 MiB, should a writer have survived
                if take(fd) is not True:
                    break
        for fd in (rep_r, out_r):
            os.close(fd)
        if decided():  # killed after its report: the judge's status says nothing
            return verdict(None, None, timed_out, duration, reports, bytes(out),
                           out_total, bytes(out_end))
        program: int | None = statuses[pid]
        if not program_alone and os.WIFSIGNALED(statuses[pid]) and \
                os.WTERMSIG(statuses[pid]) == signal.SIGKILL:
            program = None  # our SIGKILL: it was still running
        # Otherwise it had ended on its own (a closed channel reaches the judge while
        # the program's exit is under way, before the forker can reap it).
        return verdict(statuses[jpid], program, timed_out, duration, reports,
                       bytes(out), out_total, bytes(out_end))


def abandon(pids: list[int], namespaces: bool) -> NoReturn:
    """The caller is gone: kill the run's processes and everything they left, then
    end the zygote (in a PID namespace, the forker's exit ends every process left
    in it; its parent outside then exits too)."""
    for pid in pids:
        for target in (-pid, pid):
            try:
                os.kill(target, signal.SIGKILL)
            except OSError:
                pass
    try:
        for pid in pids:
            os.waitpid(pid, 0)
        if namespaces:
            sweep_namespace()
        else:
            sweep_basic(pids[0], pids[-1])
    finally:
        os._exit(0)


def signal_name(sig: int) -> str:
    try:
        return signal.Signals(sig).name
    except ValueError:
        return str(sig)


#: Bytes kept of the end of a program's output, past ``output_cap``.
OUTPUT_TAIL = 4096


def verdict(judge: int | None, program: int | None, timed_out: bool, duration: float,
            lines: list[str], output: bytes, output_total: int,
            output_end: bytes = b"") -> dict[str, Any]:
    """The answer, from the judge's reports and the two processes' exit statuses.

    ``program`` is the program's wait status when it ended on its own (None when
    the forker killed it), ``judge`` the judge's (None when it was killed after its
    report). Only the judge writes reports, and ``PASS`` is the last thing it does
    after the tests ran to their end: a run passes when its last report is
    ``PASS``."""
    text = output.decode("utf-8", "replace")
    result: dict[str, Any] = {
        "op": "result",
        "passed": False,
        "duration": round(duration, 6),
        "output": text,
        "output_bytes": output_total,
        "output_tail": output_end.decode("utf-8", "replace"),
        "exit_code": None,
        "signal": None,
    }
    reports = []
    for line in lines:
        kind, _, payload = line.partition(" ")
        try:
            body = json.loads(payload) if payload else {}
        except ValueError:
            body = {}
        reports.append((kind, body if isinstance(body, dict) else {}))
    final = reports[-1] if reports else None
    if program is not None:
        if os.WIFEXITED(program):
            result["exit_code"] = os.WEXITSTATUS(program)
        elif os.WIFSIGNALED(program):
            result["signal"] = os.WTERMSIG(program)
    if timed_out:
        result["reason"] = "timeout"
        result["message"] = f"still running after {duration:.3g} s (wall clock)"
        return result
    if final is not None and final[0] == "PASS":
        result["passed"] = True
        result["reason"] = "passed"
        result["exit_code"] = 0
        return result
    if final is not None and final[0] != "GONE":
        kind, body = final
        result.update({k: v for k, v in body.items()
                       if k in ("message", "exception", "stage", "where")})
        # The judge's own findings, never relayed from the program: the line of
        # the tests that failed, and whether the program raised the exception.
        if type(body.get("test_line")) is int:
            result["test_line"] = body["test_line"]
        if body.get("raised_by") in ("program", "tests"):
            result["raised_by"] = body["raised_by"]
        result["reason"] = REPORT_REASONS.get(kind, "exception")
        return result
    if final is not None:  # GONE: the program stopped answering the tests
        body = final[1]
        stage = body.get("stage") if isinstance(body.get("stage"), str) else "test"
        result["stage"] = stage
        when = ("before the tests started" if stage == "solution"
                else "while the tests ran")
        sig = result["signal"]
        if sig == signal.SIGXCPU:
            result["reason"] = "timeout"
            result["message"] = "CPU time limit exceeded"
        elif sig is not None:
            memory = "MemoryError" in text or "Cannot allocate memory" in text
            result["reason"] = "memory" if memory else "crashed"
            result["message"] = (f"the program was killed by signal {signal_name(sig)} "
                                 f"{when}")
        elif result["exit_code"] is not None:
            result["reason"] = "exited_early"
            result["message"] = ("the program exited with status "
                                 f"{result['exit_code']} {when}")
        else:
            result["reason"] = "crashed"
            result["message"] = f"the program stopped answering {when}"
        return result
    # No report: the judge itself did not finish (killed by a limit, or by the
    # program where both run as the same user).
    judge = 0 if judge is None else judge
    if os.WIFSIGNALED(judge) and os.WTERMSIG(judge) == signal.SIGXCPU:
        result["reason"] = "timeout"
        result["message"] = "CPU time limit exceeded"
    else:
        how = (f"was killed by signal {signal_name(os.WTERMSIG(judge))}"
               if os.WIFSIGNALED(judge) else
               f"exited with status {os.WEXITSTATUS(judge)}")
        result["reason"] = "crashed"
        result["message"] = (f"the process running the tests {how} before it gave a "
                             "verdict")
        if "MemoryError" in text:
            result["reason"] = "memory"
    return result


#: The judge's report kinds and the reasons they give.
REPORT_REASONS = {
    "SYNTAX": "syntax_error",
    "ASSERT": "assertion",
    "MEMORY": "memory",
    "EXIT": "exited_early",
    "REFUSED": "untrusted_return",
    "SETUP": "sandbox_error",
    "ERROR": "exception",
}

# ------------------------------------------------------------------ the two children


#: Every child's environment, but for ``HOME`` and ``TMPDIR`` (its directory):
#: nothing of the caller's. :func:`main` makes it the forker's own.
CHILD_ENV = {
    "PATH": "/usr/local/bin:/usr/bin:/bin",
    "HOME": "/",
    "TMPDIR": "/",
    "LANG": "C.UTF-8",
    "PYTHONDONTWRITEBYTECODE": "1",
    "PYTHONIOENCODING": "utf-8",
    "OMP_NUM_THREADS": "1",
    "OPENBLAS_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "USER": "sandbox",
    "LOGNAME": "sandbox",
}


def confine(req: dict[str, Any], cwd: str, home: str, uid: int | None, setup: Setup,
            fds: list[int], forker_pid: int) -> None:
    """Set a freshly forked child up: session, directory, descriptors (``fds[0]``
    on stdout and stderr, the others on 3, 4, 5...), environment, limits, identity.
    The child stays non-dumpable (inherited from the forker)."""
    os.setsid()
    os.chdir(cwd)
    high = [fcntl.fcntl(fd, fcntl.F_DUPFD, 64) for fd in fds]
    reach = [fcntl.fcntl(fd, fcntl.F_DUPFD, 64) for _, fd in setup.reach]
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.dup2(high[0], 1)
    os.dup2(high[0], 2)
    for i, fd in enumerate(high[1:]):
        os.dup2(fd, 3 + i)
    for i, fd in enumerate(reach):  # the interpreter's directories (reach_through)
        os.dup2(fd, REACH_FD + i, inheritable=False)
    top = max(resource.getrlimit(resource.RLIMIT_NOFILE)[0], 1024)
    if reach:
        os.closerange(2 + len(fds), REACH_FD)
        os.closerange(REACH_FD + len(reach), top)
    else:
        os.closerange(2 + len(fds), top)
    for sig in (signal.SIGPIPE, signal.SIGXFSZ):
        signal.signal(sig, signal.SIG_IGN)  # write errors become exceptions
    for sig in (signal.SIGTERM, signal.SIGCHLD, signal.SIGALRM, signal.SIGHUP):
        signal.signal(sig, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler)

    # The rest of the environment (CHILD_ENV) was set once in the forker: clearing
    # and filling os.environ here wrote to a hundred pages shared with the forker
    # (a copy-on-write page fault each).
    if os.environ.get("ZYGOTE_ENV_SET") != "1":  # the forker did not: do it here
        os.environ.clear()
        os.environ.update(CHILD_ENV)
    os.environ.pop("ZYGOTE_ENV_SET", None)
    os.environ["HOME"] = home
    os.environ["TMPDIR"] = home
    tempfile.tempdir = home

    limits = req["limits"]
    cpu = max(1, math.ceil(float(req["timeout"]))) + 1
    wanted = [
        (resource.RLIMIT_CPU, cpu, cpu + 1),
        (resource.RLIMIT_CORE, 0, 0),
    ]
    if limits.get("memory_bytes"):
        wanted.append((resource.RLIMIT_AS, limits["memory_bytes"],
                       limits["memory_bytes"]))
    if limits.get("file_bytes"):
        wanted.append((resource.RLIMIT_FSIZE, limits["file_bytes"],
                       limits["file_bytes"]))
    if limits.get("open_files"):
        wanted.append((resource.RLIMIT_NOFILE, limits["open_files"],
                       limits["open_files"]))
    if limits.get("processes") and setup.nproc_base >= 0:
        n = setup.nproc_base + limits["processes"] + 1  # the judge, where it counts
        wanted.append((resource.RLIMIT_NPROC, n, n))
    for which, soft, hard in wanted:
        try:
            _, current_hard = resource.getrlimit(which)
            if current_hard != resource.RLIM_INFINITY:
                soft, hard = min(soft, current_hard), min(hard, current_hard)
            resource.setrlimit(which, (soft, hard))
        except (ValueError, OSError):
            pass  # e.g. RLIMIT_AS on macOS; the wall-clock timeout still holds

    if uid is not None:
        os.setgroups([])
        os.setresgid(uid, uid, uid)
        os.setresuid(uid, uid, uid)
        if setup.aliases:
            reach_through(setup.aliases)
    elif setup.userns or os.geteuid() == 0:
        # Root without a uid of its own keeps root's files and may signal root's
        # processes, but without capabilities it can no longer read other
        # processes' memory or environment, mount, or change limits.
        drop_capabilities()
    if sys.platform.startswith("linux"):
        # The child dies with its forker, whatever kills the forker (set only now:
        # a change of uid clears it). The forker is single-threaded, so "parent"
        # here is the forker itself, not a thread that could end first.
        prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
        if os.getppid() != forker_pid:
            os._exit(1)  # the forker died before the line above
        prctl(PR_SET_NO_NEW_PRIVS, 1)
        # A change of uid resets the dumpable flag: set it again.
        prctl(PR_SET_DUMPABLE, 0)


def program_child(req: dict[str, Any], tmp: str, uid: int | None, setup: Setup,
                  fds: list[int], forker_pid: int) -> NoReturn:
    """The program's process: run the solution, then answer the judge's calls."""
    try:
        confine(req, tmp, tmp, uid, setup, fds, forker_pid)
        if sys.platform.startswith("linux"):
            # The program may read its own /proc entries: its memory holds nothing
            # of the judge's (the tests were read after it was forked).
            prctl(PR_SET_DUMPABLE, 1)
        peer = PEERS.get(False) or Peer(PROGRAM_IN_FD, PROGRAM_OUT_FD, judge=False)
    except BaseException as exc:  # noqa: BLE001 (nothing untrusted has run yet)
        try:
            print(f"the sandbox could not set the program up: {exc}", file=sys.stderr)
        finally:
            os._exit(70)
    try:
        program_main(req["solution"], peer)
    finally:
        os._exit(1)


def judge_child(req: dict[str, Any], payload: mmap.mmap, size: int, tmp: str,
                uid: int | None, setup: Setup, fds: list[int],
                forker_pid: int) -> NoReturn:
    """The judge's process: the tests, the prompt's helpers and the verdict."""
    try:
        spec = json.loads(payload[:size].decode("utf-8"))
        payload.close()
        confine(req, "/", tmp, uid, setup, fds, forker_pid)
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT,
                    signal.SIGUSR1, signal.SIGUSR2, signal.SIGALRM, signal.SIGTSTP,
                    signal.SIGTTIN, signal.SIGTTOU):
            # A signal from the program changes nothing.
            signal.signal(sig, signal.SIG_IGN)
        if setup.filesystem != "isolated":
            install_judge_guard()
        peer = PEERS.get(True) or Peer(JUDGE_IN_FD, JUDGE_OUT_FD, judge=True)
    except BaseException as exc:  # noqa: BLE001
        try:
            os.write(JUDGE_REPORT_FD, ("SETUP " + json.dumps(
                {"message": f"the sandbox could not be set up: {type(exc).__name__}: "
                            f"{exc}"}) + "\n").encode())
        finally:
            os._exit(70)
    try:
        judge_main(spec, peer)
    finally:
        os._exit(1)


# ------------------------------------------------------------------ values between them

# Program: 3 = from the judge, 4 = to the judge. Judge: 3 = reports to the forker,
# 4 = from the program, 5 = to the program.
PROGRAM_IN_FD, PROGRAM_OUT_FD = 3, 4
JUDGE_REPORT_FD, JUDGE_IN_FD, JUDGE_OUT_FD = 3, 4, 5

#: Bytes of one message between the two processes: what its 4-byte length can say.
#: Nothing smaller caps it: a value as large as the memory limit allows crosses (the
#: sender reports a larger one as too large, the receiver fails cleanly on memory).
MAX_MESSAGE = (1 << 32) - 1
SMALL_MESSAGE = 1 << 20  # larger messages are read into a mapping, not a list of chunks
MAX_DEPTH = 400  # nesting of one value
BIG_INT_BITS = 12_000  # larger ints travel in hex (the decimal parser has a limit)

#: What decides how a value behaves in a test: comparison, hashing, iteration,
#: length, truth, item access.
BEHAVIOUR = ("__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__", "__hash__",
             "__iter__", "__next__", "__len__", "__bool__", "__getitem__",
             "__contains__")
_MISSING = object()
MRO = type.__dict__["__mro__"].__get__
BASES = type.__dict__["__bases__"].__get__
TYPE_DICT = type.__dict__["__dict__"].__get__
OBJECT_DICT = object.__getattribute__


def resolve(cls: type, name: str) -> Any:
    for klass in MRO(cls):
        attrs = TYPE_DICT(klass)
        if name in attrs:
            return attrs[name]
    return _MISSING


def behaviour(cls: type) -> tuple[Any, ...]:
    return tuple(resolve(cls, name) for name in BEHAVIOUR)


def differs(cls: type, base: type, recorded: tuple[Any, ...]) -> str | None:
    """The first slot of BEHAVIOUR where ``cls`` does not behave as ``base`` (whose
    method objects are ``recorded``), or None."""
    for slot, mine, theirs in zip(BEHAVIOUR, behaviour(cls), recorded):
        if mine is not theirs:
            return slot
    return None


#: The classes whose values cross to the judge (as what they are), and the method
#: objects that make their behaviour, taken now: before any program ran.
VALUE_CLASSES: dict[type, tuple[Any, ...]] = {
    cls: behaviour(cls) for cls in (
        object, type, bool, int, float, complex, str, bytes, bytearray, list, tuple,
        dict, set, frozenset, range, collections.Counter, collections.OrderedDict,
        collections.defaultdict, collections.deque, fractions.Fraction, decimal.Decimal,
        collections.ChainMap, types.SimpleNamespace, types.MappingProxyType,
        memoryview, array.array, datetime.date, datetime.datetime, datetime.time,
        datetime.timedelta, datetime.timezone, re.Pattern, re.Match,
    )
}
STDLIB_NAMES = {cls: f"{cls.__module__}.{cls.__qualname__}" for cls in VALUE_CLASSES}
#: Classes that cross by name (``int`` as an argument, ``return str``): the builtins'
#: and the value classes', as they were before any program ran.
TYPE_BY_NAME: dict[str, type] = {
    **{name: cls for cls, name in STDLIB_NAMES.items()},
    **{f"types.{name}": value for name, value in vars(types).items()
       if isinstance(value, type)},
    **{name: value for name, value in builtins.__dict__.items()
       if isinstance(value, type)},
}
TYPE_NAMES: dict[int, str] = {id(cls): name for name, cls in TYPE_BY_NAME.items()}


def _getter(cls: type, name: str) -> Callable[[Any], Any]:
    getter: Callable[[Any], Any] = TYPE_DICT(cls)[name].__get__
    return getter


# The fields of the standard library's values, read through their classes' own
# descriptors (a subclass's property of the same name changes nothing).
DATE_FIELDS = tuple(_getter(datetime.date, n) for n in ("year", "month", "day"))
TIME_FIELDS = tuple(_getter(datetime.time, n) for n in (
    "hour", "minute", "second", "microsecond", "tzinfo", "fold"))
DATETIME_FIELDS = DATE_FIELDS + tuple(_getter(datetime.datetime, n) for n in (
    "hour", "minute", "second", "microsecond", "tzinfo", "fold"))
DELTA_FIELDS = tuple(_getter(datetime.timedelta, n)
                     for n in ("days", "seconds", "microseconds"))
TIMEZONE_ARGS = TYPE_DICT(datetime.timezone)["__getinitargs__"]
PATTERN_FIELDS = tuple(_getter(re.Pattern, n) for n in ("pattern", "flags"))
MATCH_FIELDS = tuple(_getter(re.Match, n)
                     for n in ("re", "string", "pos", "endpos", "regs"))
ARRAY_TYPECODE = _getter(array.array, "typecode")
ARRAY_BYTES = TYPE_DICT(array.array)["tobytes"]
VIEW_FIELDS = tuple(_getter(memoryview, n)
                    for n in ("format", "itemsize", "shape", "readonly"))
VIEW_BYTES = TYPE_DICT(memoryview)["tobytes"]
PROXY_COPY = TYPE_DICT(types.MappingProxyType)["copy"]
EXCEPTION_ARGS = _getter(BaseException, "args")
#: memoryview formats a view can be cast to again (native, single items).
VIEW_FORMATS = frozenset("bBhHiIlLqQnNfd?cP")


def b64(data: Any) -> str:
    return binascii.b2a_base64(data, newline=False).decode("ascii")


def unb64(text: Any) -> bytes:
    if type(text) is not str:
        raise ValueError("binary data travels as base64 text")
    return binascii.a2b_base64(text)


def _iterator_types() -> frozenset[type]:
    def gen() -> Any:
        yield 1

    samples: list[Any] = [
        iter([]), iter(()), iter(""), iter(b""), iter(bytearray()), iter(range(0)),
        iter(range(1 << 70)), iter(set()), iter({}), iter({}.values()),
        iter({}.items()),
        reversed([]), reversed(range(0)), reversed({}), reversed({}.values()),
        reversed({}.items()), gen(), map(id, ()), filter(None, ()), zip(),
        enumerate(()), iter(collections.deque()), reversed(collections.deque()),
        iter(int, 1), itertools.tee(())[0], next(itertools.groupby([1]))[1],
        iter(collections.OrderedDict()), reversed(collections.OrderedDict()),
        iter(collections.OrderedDict().values()),
        iter(collections.OrderedDict().items()),
    ]
    found = {type(s) for s in samples}
    for value in vars(itertools).values():
        if isinstance(value, type) and "__next__" in value.__dict__:
            found.add(value)
    return frozenset(found)


ITERATOR_TYPES = _iterator_types()
VIEW_TAGS: dict[type, str] = {
    type({}.keys()): "dk", type({}.values()): "dv", type({}.items()): "di",
    type(collections.OrderedDict().keys()): "dk",
    type(collections.OrderedDict().values()): "dv",
    type(collections.OrderedDict().items()): "di",
}
CALLABLE_TYPES = frozenset({
    types.FunctionType, types.BuiltinFunctionType, types.MethodType, functools.partial,
    types.BuiltinMethodType, type(str.join), type(dict.__dict__["fromkeys"]),
})


class PeerGone(BaseException):
    """The other process stopped answering."""


class Unreadable(PeerGone):
    """The other process sent what the sandbox never sends."""


class Refused(BaseException):
    """A value the program returned cannot be given to the tests."""


class TooLarge(BaseException):
    """A value that does not fit in one message, or in the memory that encodes or
    rebuilds it."""


class ProgramExit(BaseException):
    """The program raised ``SystemExit`` (or another ``BaseException``) in a call."""


class ProgramError(Exception):
    """An exception of a class the program defined, raised in a call."""


#: The attribute of an exception rebuilt in the judge that holds the program's
#: ``str(exc)`` (shown by the classes the judge builds for the program's classes).
MESSAGE_ATTR = "_ctx_message"


def _mirror_str(self: BaseException) -> str:
    """``str()`` of an exception of a class the judge built for one of the
    program's: the program's own text, as its ``__str__`` gave it."""
    try:
        message = OBJECT_DICT(self, "__dict__").get(MESSAGE_ATTR)
    except AttributeError:
        message = None
    if type(message) is str:
        return message
    for klass in MRO(type(self)):
        method = TYPE_DICT(klass).get("__str__")
        if method is not None and method is not _mirror_str:
            return str(method(self))
    return ""


class Record:
    """An object of a class the tests defined, as the program receives it: its
    attributes, without its methods."""

    def __init__(self, name: str, attrs: dict[str, Any]) -> None:
        self.__dict__.update(attrs)
        self.__dict__["__class_name__"] = name

    def __repr__(self) -> str:
        fields = ", ".join(f"{k}={v!r}" for k, v in vars(self).items()
                           if k != "__class_name__")
        return f"{vars(self).get('__class_name__', 'Record')}({fields})"


class RemoteFunction:
    """A function of the other process: calling it asks that process to call it.

    In the judge, a function (or class) of the program: its attributes are read in
    the program's process too (``Solution.twoSum``, a class's static and class
    methods), each crossing as a value does."""

    def __init__(self, peer: Peer, target: str | int, name: str = "") -> None:
        self._ctx_peer, self._ctx_target = peer, target
        self.__name__ = self.__qualname__ = name or str(target)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._ctx_peer.call(self._ctx_target, args, kwargs)

    def __getattr__(self, name: str) -> Any:
        if not forwarded(name) or "_ctx_peer" not in self.__dict__ or \
                not self._ctx_peer.judge:
            # The program never reads an attribute of the tests' functions.
            raise AttributeError(name)
        return self._ctx_peer.get(self._ctx_target, name)

    def __copy__(self) -> RemoteFunction:
        return self

    def __deepcopy__(self, memo: Any) -> RemoteFunction:
        return self

    def __repr__(self) -> str:
        return f"<function {self.__name__} of the program>"


class RemoteIterator:
    """An iterator of the other process; each item is fetched (and checked) as the
    tests consume it."""

    def __init__(self, peer: Peer, handle: int) -> None:
        self._ctx_peer, self._ctx_handle = peer, handle

    def __iter__(self) -> RemoteIterator:
        return self

    def __next__(self) -> Any:
        return self._ctx_peer.next(self._ctx_handle)


class RemoteObject:
    """An object of the program that is no value the tests can compare (an instance
    of a class of the program): its identity is its own, and reading or setting an
    attribute (``Solution().twoSum``, ``node.val``) asks the program's process, where
    its methods run; what they return crosses as values do. Its comparisons, hashing,
    iteration, length and truth are never the program's (they could lie)."""

    __slots__ = ("_ctx_peer", "_ctx_handle", "__weakref__")

    def __init__(self, peer: Peer, handle: int) -> None:
        object.__setattr__(self, "_ctx_peer", peer)
        object.__setattr__(self, "_ctx_handle", handle)

    def __getattr__(self, name: str) -> Any:
        if not forwarded(name):
            raise AttributeError(name)
        return self._ctx_peer.get(self._ctx_handle, name)

    def __setattr__(self, name: str, value: Any) -> None:
        if not forwarded(name) or name in FORWARDED_SPECIAL:
            raise AttributeError(f"the tests cannot set {name!r} of the program's "
                                 "objects")
        self._ctx_peer.set(self._ctx_handle, name, value)

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"the tests cannot delete attributes of the program's "
                             f"objects ({name!r})")

    def __copy__(self) -> RemoteObject:
        return self

    def __deepcopy__(self, memo: Any) -> RemoteObject:
        return self

    def __repr__(self) -> str:
        return f"<object {self._ctx_handle} of the program>"


class RemoteCallable(RemoteObject):
    """An object of the program that is callable (its class defines ``__call__``):
    calling it calls it in the program's process."""

    __slots__ = ()

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._ctx_peer.call(self._ctx_handle, args, kwargs)


REMOTE_TYPES = frozenset({RemoteFunction, RemoteIterator, RemoteObject, RemoteCallable})
#: The special attributes the judge asks the program for (``vars(obj)``). No other:
#: the libraries the tests use read special attributes with powers no value has
#: (numpy's ``__array_interface__`` holds a raw address it would read).
FORWARDED_SPECIAL = frozenset({"__dict__", "__name__", "__qualname__",
                               "__annotations__"})


def forwarded(name: str) -> bool:
    """Whether the judge asks the program for the attribute ``name``."""
    if name.startswith("_ctx_"):
        return False
    return not (name.startswith("__") and name.endswith("__")) or \
        name in FORWARDED_SPECIAL

#: The builtins module's dict as it was before any program ran, copied once in the
#: forker (:func:`main`, after ``site``'s additions); every child shares it.
BUILTINS: dict[str, Any] = {}
#: Each child's end of the channel (key: ``judge``), built once in the forker, empty
#: (no handle, no name, nothing of any run): a child uses its copy as it is, instead
#: of building one, which wrote to a hundred pages it shares with the forker.
PEERS: dict[bool, Peer] = {}


class Peer:
    """One end of the channel between the program's process and the judge's.

    Messages are frames (4-byte big-endian length, then JSON) of plain data: a
    value is rebuilt on arrival from its data alone, by the receiving process's own
    classes. What the judge builds from the program's answers is therefore made of
    genuine builtin and standard-library objects whatever the program's process
    did to itself; functions, lazily consumed iterators and objects that are no
    value cross as handles that call back to their process. An object met twice in
    one message (the same list twice in a tuple, two references to one NaN) is sent
    once and referred to after (``{"=": [n, value]}``, then ``{"@": n}``), so the
    rebuilt value shares it as the original did; a value that contains itself is
    refused.

    Requests: ``["call", target, args, kwargs]`` (target: a name of the program's
    globals, or a handle), ``["next", handle]``, and, from the judge only, ``["get",
    target, name]`` and ``["set", target, name, value]`` (an attribute of an object
    of the program). Replies: ``["ret", value, changed_args]``, ``["stop"]``,
    ``["exc", class_names, message, where, details]`` and ``["refused", message,
    kind]``. While waiting for its reply, a process serves the other's requests (a
    test's function passed to the program calls back)."""

    def __init__(self, rfd: int, wfd: int, judge: bool) -> None:
        self.rfd, self.wfd, self.judge = rfd, wfd, judge
        self.objects: dict[int, Any] = {}  # handle -> our object the other side holds
        self.handles: dict[int, int] = {}  # id(object) -> handle
        self.proxies: dict[int, Any] = {}  # handle -> our proxy of the other side's
        self.classes: dict[int, type] = {}  # handle -> our class for the other's class
        self.mirrors: dict[int, int] = {}  # id(one of those classes) -> its handle
        self.methods: dict[tuple[Any, str], int] = {}  # (target, name) -> handle
        self.namespace: dict[str, Any] = {}
        #: Judge: the exception classes the prompt defines (the program's class of
        #: the same name, raised, is caught by ``except`` of the prompt's).
        self.prompt_classes: dict[str, type] = {}
        self.failure: list[tuple[str, dict[str, Any]]] = []  # judge: sticky failures
        self.streams = (sys.stdout, sys.stderr)
        self._nodes: dict[int, Any] = {}  # id(value) -> its node, in one message
        self._alive: list[Any] = []  # those values (their ids stay theirs)
        self._marks: dict[int, int] = {}  # id(node) -> its number, for nodes met twice
        self._defs: dict[int, Any] = {}  # number -> value, while a message is read
        # Bound now: the program may replace json, os or builtins in its process.
        self._read, self._write, self._readv = os.read, os.write, os.readv
        self._join = "".join
        self._modules = sys.modules
        self._import = builtins.__import__
        encoder = json.encoder.c_make_encoder  # type: ignore[attr-defined]
        if encoder is not None:
            self._dumps = encoder(None, self._no_default,
                                  json.encoder.encode_basestring_ascii,
                                  None, ":", ",", False, False, True)
        else:  # pragma: no cover (CPython always has the C encoder)
            self._dumps = None
            self._dumps_py = json.JSONEncoder(separators=(",", ":")).encode
        # Each NaN is a float of its own (json's is one shared object): two NaN keys
        # of a set stay two; one NaN met twice is a reference (see encode).
        self._scan = getattr(json.JSONDecoder(object_hook=self._decode_object,
                                              parse_constant=float), "scan_once")
        self._to_bytes, self._from_bytes = int.to_bytes, int.from_bytes
        real = builtins.__dict__
        # The forker's copy (see BUILTINS): copying the module's dict here would
        # write the reference count of every builtin, a copy-on-write page fault
        # each (about a hundred per process).
        self._builtins = (BUILTINS or dict(real), real.clear, real.update)

    def restore_builtins(self) -> None:
        """Put the builtins module back as it was before the program ran (the
        program's process only: what this side's own code calls must work)."""
        saved, clear, update = self._builtins
        try:
            clear()
            update(saved)
        except BaseException:  # noqa: BLE001
            pass

    @staticmethod
    def _no_default(value: Any) -> Any:
        raise TypeError("not data")

    # ---------------------------------------------------------------- framing

    def frame(self, message: list[Any]) -> bytes:
        """The body of ``message`` (its length goes first, see send)."""
        if self._dumps is not None:
            text = self._join(self._dumps(message, 0))
        else:  # pragma: no cover
            text = self._dumps_py(message)
        body: bytes = text.encode("ascii")
        del text
        if len(body) > MAX_MESSAGE:
            raise TooLarge(f"a value of {len(body)} bytes as data, more than one "
                           f"message carries ({MAX_MESSAGE} bytes)")
        return body

    def send(self, message: list[Any] | bytes) -> None:
        body = message if type(message) is bytes else self.frame(message)
        try:
            for data in (self._to_bytes(len(body), 4, "big"), body):
                view = memoryview(data)
                while view:
                    view = view[self._write(self.wfd, view):]
        except OSError as exc:
            raise PeerGone(f"the other process closed the channel ({exc.strerror})") \
                from None

    def _read_exact(self, n: int) -> bytes:
        chunks = []
        while n:
            try:
                chunk = self._read(self.rfd, min(n, 1 << 20))
            except OSError:
                chunk = b""
            if not chunk:
                raise PeerGone("the other process closed the channel")
            chunks.append(chunk)
            n -= len(chunk)
        return b"".join(chunks)

    def _read_large(self, n: int) -> str:
        """A large message's text, read into a fresh mapping (only the pages the
        sender filled are touched) and decoded from there: about twice its size in
        memory at most, where chunks and their join took three times."""
        buf = mmap.mmap(-1, n)
        view = memoryview(buf)
        try:
            got = 0
            while got < n:
                try:
                    count = self._readv(self.rfd, [view[got:]])
                except OSError:
                    count = 0
                if not count:
                    raise PeerGone("the other process closed the channel")
                got += count
            return str(view, "ascii")
        finally:
            view.release()
            buf.close()

    def receive(self) -> Any:
        size = self._from_bytes(self._read_exact(4), "big")
        try:
            if size > SMALL_MESSAGE:
                text = self._read_large(size)
            else:
                text = self._read_exact(size).decode("ascii")
            self._defs = {}
            message, end = self._scan(text, 0)
            if end != len(text) or type(message) is not list or not message \
                    or type(message[0]) is not str:
                raise ValueError("not a message")
        except PeerGone:
            raise
        except (MemoryError, OverflowError, OSError) as exc:
            # mmap refuses a size beyond the address-space limit with OSError
            raise TooLarge(f"a message of {size} bytes as data, more than the memory "
                           f"limit lets the receiving process rebuild "
                           f"({type(exc).__name__})") from None
        except BaseException as exc:  # noqa: BLE001 (malformed: the sender lies)
            raise Unreadable(f"a message that cannot be read ({type(exc).__name__}: "
                             f"{exc})") from None
        finally:
            self._defs = {}
        return message

    # ---------------------------------------------------------------- values

    def handle(self, value: Any) -> int:
        key = id(value)
        found = self.handles.get(key)
        if found is None or self.objects.get(found) is not value:
            found = len(self.objects) + 1
            self.objects[found] = value
            self.handles[key] = found
        return found

    def encode(self, value: Any) -> Any:
        """``value`` as data (see encode_all)."""
        return self.encode_all([value])[0]

    def encode_all(self, values: list[Any]) -> list[Any]:
        """The values of one message as data, sharing what they share."""
        saved = self._nodes, self._marks, self._alive
        self._nodes, self._marks, self._alive = {}, {}, []
        try:
            nodes = [self._enc(v, 0) for v in values]
            if self._marks:
                self._define(nodes)
            return nodes
        finally:
            self._nodes, self._marks, self._alive = saved

    def _define(self, top: list[Any]) -> None:
        """Wrap each node met again later (see _enc) in its definition, where it
        first appears: the document order is the order values were met in."""
        marks = self._marks
        todo: list[Any] = [top]
        while todo and marks:
            node = todo.pop()
            items = enumerate(node) if type(node) is list else list(node.items())
            for key, child in items:
                number = marks.pop(id(child), None)
                if number is not None:
                    node[key] = {"=": [number, child]}
                if type(child) is list or type(child) is dict:
                    todo.append(child)

    def _enc(self, value: Any, depth: int) -> Any:
        if depth > MAX_DEPTH:
            raise Refused(f"a value nested more than {MAX_DEPTH} levels deep")
        t = type(value)
        if value is None or t is str or t is bool:
            return value
        if t is int:
            if value.bit_length() > BIG_INT_BITS:
                return {"I": hex(value)}
            return value
        if t is float and value == value:
            return value
        d = depth + 1
        if t is tuple:  # immutable: what it shares is in what it holds
            return {"t": [self._enc(v, d) for v in value]}
        # Anything else (a container, a NaN, an object) is met once per message;
        # met again, it is a reference to its first node.
        key = id(value)
        nodes = self._nodes
        if key in nodes:
            node = nodes[key]
            if node is _MISSING:
                raise Refused("a value that contains itself")
            if type(node) is list or type(node) is dict or node is value:
                number = self._marks.get(id(node))
                if number is None:
                    number = self._marks[id(node)] = len(self._marks) + 1
                return {"@": number}
            return node  # an immutable scalar (the int of an IntEnum...)
        nodes[key] = _MISSING
        self._alive.append(value)  # its id stays its own until the message is sent
        enc = self._enc
        if t is list:
            node = [enc(v, d) for v in value]
        elif t is dict:
            node = {"d": [[enc(k, d), enc(v, d)] for k, v in value.items()]}
        elif t is float:
            node = value  # a NaN: its identity is all that tells two apart
        else:
            node = self._enc_new(value, t, d)
        nodes[key] = node
        return node

    def _enc_new(self, value: Any, t: type, d: int) -> Any:
        enc = self._enc
        if t is set:
            return {"s": [enc(v, d) for v in value]}
        if t is frozenset:
            return {"f": [enc(v, d) for v in value]}
        if t in ITERATOR_TYPES:
            return {"it": self.handle(value)}
        if t is RemoteFunction and value._ctx_peer is self:
            return {"ref": value._ctx_target}
        if t in CALLABLE_TYPES:
            return {"fn": self.handle(value)}
        if t in REMOTE_TYPES and value._ctx_peer is self:
            return {"ref": value._ctx_handle}
        if value is ...:
            return {"E": 0}
        if t in VIEW_TAGS:
            tag = VIEW_TAGS[t]
            if tag == "di":
                return {tag: [[enc(k, d), enc(v, d)] for k, v in value]}
            return {tag: [enc(v, d) for v in value]}
        return self.encode_other(value, t, d)

    def encode_other(self, value: Any, t: type, d: int) -> Any:
        """A value of any other class: judged by behaviour (see VALUE_CLASSES)."""
        enc = self._enc
        numpy = self._modules.get("numpy")
        if numpy is not None and type(numpy) is types.ModuleType:
            node = self.encode_numpy(value, t, d, numpy)
            if node is not None:
                return node
        base = None
        for klass in MRO(t):
            if klass in VALUE_CLASSES:
                base = klass
                break
        name = STDLIB_NAMES.get(t) or self.class_name(t)
        if base is None:  # pragma: no cover (object is in every MRO)
            raise Refused(f"an object of type {name}")
        slot = differs(t, base, VALUE_CLASSES[base])
        if slot is not None and not (self.judge and base is object):
            # (the tests' own objects travel as their attributes)
            if t is base:
                what = f"{name}.{slot} was replaced by the program"
            else:
                what = f"{name} (a subclass of {base.__name__}) defines its own {slot}"
            raise Refused(f"an object of type {name}: {what}")
        if base is type:
            known = TYPE_NAMES.get(id(value))
            if known is not None and TYPE_BY_NAME[known] is value:
                return {"T": known}
            if BaseException in MRO(value):
                return self.encode_class(value, d)
            return {"fn": self.handle(value)}
        if base is object:
            if self.judge:
                try:
                    attrs = OBJECT_DICT(value, "__dict__")
                except AttributeError:
                    raise TypeError(f"the tests cannot give the program an object of "
                                    f"type {name}") from None
                return {"o": [name, [[k, enc(v, d)] for k, v in attrs.items()]]}
            if resolve(t, "__call__") is not _MISSING:
                return {"hc": self.handle(value)}
            return {"h": self.handle(value)}
        if base is bool:
            return bool(int.__pos__(value))
        if base is int:
            return enc(int.__pos__(value), d)
        if base is float:
            return float.__pos__(value)
        if base is str:
            return str.__str__(value)
        if base is complex:
            c = complex.__pos__(value)
            return {"c": [c.real, c.imag]}
        if base is bytes:
            return {"b": bytes.hex(value)}
        if base is bytearray:
            return {"ba": bytearray.hex(value)}
        if base is range:
            return {"r": [range.start.__get__(value), range.stop.__get__(value),
                          range.step.__get__(value)]}
        if base is tuple:
            items = [enc(v, d) for v in tuple.__iter__(value)]
            fields = resolve(t, "_fields")
            if t is not tuple and type(fields) is tuple and all(
                    type(f) is str for f in fields) and len(fields) == len(items):
                name = self.class_name(t, qualified=False)
                return {"nt": [name, list(fields), items]}
            return {"t": items}
        if base is list:
            return [enc(v, d) for v in list.__iter__(value)]
        if base is set:
            return {"s": [enc(v, d) for v in set.__iter__(value)]}
        if base is frozenset:
            return {"f": [enc(v, d) for v in frozenset.__iter__(value)]}
        if base is collections.deque:
            maxlen = collections.deque.maxlen.__get__(value)
            return {"dq": [[enc(v, d) for v in collections.deque.__iter__(value)],
                           maxlen]}
        if base is fractions.Fraction:
            return {"Q": [enc(FRACTION_NUM(value), d), enc(FRACTION_DEN(value), d)]}
        if base is decimal.Decimal:
            return {"D": DECIMAL_STR(value)}
        if base in STDLIB_ENCODERS:
            node: Any = STDLIB_ENCODERS[base](self, value, d)
            return node
        pairs = [[enc(k, d), enc(v, d)] for k, v in dict.items(value)]
        if base is collections.Counter:
            return {"C": pairs}
        if base is collections.OrderedDict:
            return {"od": pairs}
        if base is collections.defaultdict:
            factory = DEFAULT_FACTORY(value)
            known = next((n for n, f in DEFAULT_FACTORIES.items() if f is factory),
                         None)
            return {"dd": [known, pairs]}
        return {"d": pairs}

    def encode_class(self, cls: type, d: int) -> Any:
        """An exception class that is no builtin: its handle, module, qualified name
        and exception bases (the receiver builds a class of its own for it, once,
        or finds the one it means; see decode_class)."""
        origin = self.mirrors.get(id(cls))
        if origin is not None and self.classes.get(origin) is cls:
            return {"ref": origin}  # the other side's own class, back to it
        bases = [b for b in BASES(cls) if BaseException in MRO(b)]
        module = TYPE_DICT(cls).get("__module__")
        return {"X": [self.handle(cls), module if type(module) is str else "?",
                      self.class_name(cls, qualified=None),
                      [self._enc(b, d) for b in bases]]}

    def encode_numpy(self, value: Any, t: type, d: int, numpy: Any) -> Any:
        """A numpy array or scalar as its dtype, shape and bytes (items, for an
        array of objects); None for anything else. Read in the sender's process:
        whatever it sends is data, rebuilt by the receiver's own numpy."""
        ndarray, generic = getattr(numpy, "ndarray", None), getattr(numpy, "generic", None)
        if type(ndarray) is not type or type(generic) is not type:
            return None
        mro = MRO(t)
        if ndarray in mro:
            base = ndarray
        elif generic in mro:
            base = TYPE_DICT(ndarray)["dtype"].__get__(numpy.asarray(value)).type
        else:
            return None
        if t is not base:
            slot = differs(t, base, behaviour(base))
            if slot is not None:
                name = self.class_name(t)
                raise Refused(f"an object of type {name}: {name} (a subclass of "
                              f"{self.class_name(base)}) defines its own {slot}")
        array_ = value if base is ndarray else numpy.asarray(value)
        dtype = TYPE_DICT(ndarray)["dtype"].__get__(array_)
        spec: Any = dtype.str if dtype.fields is None else self._enc(dtype.descr, d)
        if dtype.hasobject:
            if dtype.fields is not None or base is not ndarray:
                raise Refused("a numpy array of records that hold objects")
            shape = list(TYPE_DICT(ndarray)["shape"].__get__(array_))
            items = [self._enc(v, d) for v in ndarray.ravel(array_).tolist()]
            return {"nd": [spec, shape, items, 1]}
        data = b64(ndarray.tobytes(array_))
        if base is not ndarray:
            return {"npv": [spec, data]}
        shape = list(TYPE_DICT(ndarray)["shape"].__get__(array_))
        return {"nd": [spec, shape, data, 0]}

    @staticmethod
    def class_name(t: type, qualified: bool | None = True) -> str:
        """``module.qualname`` of ``t``; ``qualified=False``: its name; ``None``:
        its qualname."""
        try:
            name = type.__dict__["__qualname__"].__get__(t)
            if qualified is None:
                return str(name)
            if not qualified:
                return str(type.__dict__["__name__"].__get__(t))
            return f"{type.__dict__['__module__'].__get__(t)}.{name}"
        except BaseException:  # noqa: BLE001
            return "?"

    def _decode_object(self, obj: dict[str, Any]) -> Any:
        if len(obj) != 1:
            raise ValueError("a tagged value has one key")
        ((tag, data),) = obj.items()
        if tag == "t":
            return tuple(data)
        if tag == "d":
            return {k: v for k, v in data}
        if tag == "s":
            return set(data)
        if tag == "f":
            return frozenset(data)
        if tag == "=":
            number, value = data
            if type(number) is not int or number in self._defs:
                raise ValueError("a definition is numbered once")
            self._defs[number] = value
            return value
        if tag == "@":
            return self._defs[data]
        if tag == "I":
            return int(data, 16)
        if tag == "b":
            return bytes.fromhex(data)
        if tag == "ba":
            return bytearray.fromhex(data)
        if tag == "c":
            return complex(data[0], data[1])
        if tag == "r":
            return range(data[0], data[1], data[2])
        if tag == "nt":
            return make_namedtuple(data[0], tuple(data[1]))(*data[2])
        if tag == "dq":
            return collections.deque(data[0], data[1])
        if tag == "Q":
            return fractions.Fraction(data[0], data[1])
        if tag == "D":
            return decimal.Decimal(data)
        if tag == "C":
            return collections.Counter({k: v for k, v in data})
        if tag == "od":
            return collections.OrderedDict(data)
        if tag == "dd":
            factory = DEFAULT_FACTORIES[data[0]] if data[0] is not None else None
            return collections.defaultdict(factory, data[1])
        if tag == "dk":
            return dict.fromkeys(data).keys()
        if tag == "dv":
            return dict(enumerate(data)).values()
        if tag == "di":
            return dict(data).items()
        if tag == "E":
            return ...
        if tag == "T":
            return TYPE_BY_NAME[data]
        if tag in STDLIB_DECODERS:
            return STDLIB_DECODERS[tag](self, data)
        if tag == "X":
            return self.decode_class(data)
        if tag in ("nd", "npv"):
            return decode_numpy(self._import("numpy"), tag, data)
        if tag in ("fn", "it", "h", "hc"):
            handle = data
            if type(handle) is not int:
                raise ValueError("a handle is an int")
            proxy = self.proxies.get(handle)
            if proxy is None:
                if tag == "fn":
                    proxy = RemoteFunction(self, handle)
                elif tag == "it":
                    proxy = RemoteIterator(self, handle)
                elif self.judge:
                    proxy = (RemoteCallable if tag == "hc" else RemoteObject)(self, handle)
                else:
                    raise ValueError("the tests send no opaque object")
                self.proxies[handle] = proxy
            return proxy
        if tag == "ref":
            if type(data) is str and not self.judge:
                return self.namespace[data]
            return self.objects[data]
        if tag == "o" and not self.judge:
            return Record(str(data[0]), {str(k): v for k, v in data[1]})
        raise ValueError(f"unknown tag {tag!r}")

    def decode_class(self, data: Any) -> type:
        """Our class for an exception class of the other process (see
        encode_class): built once per class, a subclass of the bases it names. The
        program's class of a name the prompt defines is the prompt's (the tests
        catch it with ``except``); a class of a module the judge imported is that
        module's (``json.JSONDecodeError``); any other is built here, of the
        program's name, and shows the program's message."""
        handle, module, qualname, bases = data
        if type(handle) is not int or type(module) is not str or \
                type(qualname) is not str or type(bases) is not list:
            raise ValueError("a class is a handle, a module, a name and its bases")
        found = self.classes.get(handle)
        if found is not None:
            return found
        for base in bases:
            if type(base) is not type or BaseException not in MRO(base):
                raise ValueError("an exception class's bases are exception classes")
        cls: type | None = None
        if module == "solution" and qualname in self.prompt_classes:
            cls = self.prompt_classes[qualname]
        elif module not in ("__main__", "builtins", "solution", "test", "prompt"):
            cls = self.module_class(module, qualname)
        if cls is None:
            name = qualname.rpartition(".")[2]
            if not name.isidentifier():
                name = "ProgramError"
            attrs = {"__module__": module, "__qualname__": qualname,
                     "__str__": _mirror_str}
            for chosen in (tuple(bases) or (Exception,), tuple(bases[:1]), (Exception,)):
                try:
                    cls = type(name, chosen or (Exception,), dict(attrs))
                    break
                except BaseException:  # noqa: BLE001 (a layout conflict...)
                    continue
            assert cls is not None
        self.classes[handle] = cls
        self.mirrors[id(cls)] = handle
        return cls

    def module_class(self, module: str, qualname: str) -> type | None:
        """``module.qualname`` when this process imported ``module`` already and it
        names an exception class there (read from the dicts: no module code runs)."""
        value: Any = self._modules.get(module)
        if type(value) is not types.ModuleType:
            return None
        for part in qualname.split("."):
            if type(value) is types.ModuleType:
                scope: Any = OBJECT_DICT(value, "__dict__")
            elif isinstance(value, type):
                scope = TYPE_DICT(value)
            else:
                return None
            value = scope.get(part)
        if isinstance(value, type) and Exception in MRO(value):
            return value
        return None

    # ---------------------------------------------------------------- calls

    def flush(self) -> None:
        for stream in self.streams:
            try:
                stream.flush()
            except BaseException:  # noqa: BLE001
                pass

    def request(self, message: list[Any]) -> list[Any]:
        if self.failure:
            kind, body = self.failure[0]
            raise (Refused if kind in ("REFUSED", "MEMORY") else PeerGone)(
                body.get("message", ""))
        if not self.judge:
            self.flush()
        try:
            self.send(message)
            while True:
                reply: list[Any] = self.receive()
                kind = reply[0]
                if kind in ("ret", "stop", "exc", "refused"):
                    return reply
                if kind in ("call", "next", "get", "set"):
                    self.serve(reply)
                    continue
                raise Unreadable(f"an unexpected message {kind!r}")
        except Unreadable as exc:
            if self.judge and not self.failure:
                self.failure.append(("REFUSED", {
                    "stage": "test", "exception": "UntrustedReturn",
                    "message": f"the program's process sent {exc}"}))
            raise
        except PeerGone as exc:
            if self.judge and not self.failure:
                self.failure.append(("GONE", {"stage": "test", "message": str(exc)}))
            raise
        except TooLarge as exc:
            if self.judge and not self.failure:
                self.failure.append(("MEMORY", {
                    "stage": "test", "exception": "MemoryError",
                    "message": f"a value could not cross between the program and the "
                               f"tests: {exc}"}))
            raise

    def call(self, target: str | int, args: tuple[Any, ...],
             kwargs: dict[str, Any]) -> Any:
        nodes = self.encode_all([*args, *kwargs.values()])
        message = ["call", target, nodes[:len(args)],
                   [[k, v] for k, v in zip(kwargs, nodes[len(args):])]]
        reply = self.request(message)
        value = self.outcome(reply)
        if self.judge and len(reply) > 2:
            self.copy_back(args, reply[2])
        return value

    def next(self, handle: int) -> Any:
        reply = self.request(["next", handle])
        if reply[0] == "stop":
            raise StopIteration
        return self.outcome(reply)

    def get(self, target: str | int, name: str) -> Any:
        """The attribute ``name`` of an object of the program (the judge only)."""
        return self.outcome(self.request(["get", target, name]))

    def set(self, target: str | int, name: str, value: Any) -> None:
        """Set the attribute ``name`` of an object of the program (the judge only)."""
        self.outcome(self.request(["set", target, name, self.encode(value)]))

    def outcome(self, reply: list[Any]) -> Any:
        kind = reply[0]
        if kind == "ret":
            return reply[1]
        if kind == "refused":
            message = str(reply[1])
            too_large = len(reply) > 2 and reply[2] == "MEMORY"
            if self.judge and not self.failure:
                self.failure.append(("MEMORY", {
                    "stage": "test", "exception": "MemoryError", "message": message})
                    if too_large else ("REFUSED", {
                        "stage": "test", "exception": "UntrustedReturn",
                        "message": message}))
            raise Refused(message)
        if kind == "exc":
            raise self.exception(reply)
        raise Unreadable(f"an unexpected reply {kind!r}")

    def exception(self, reply: list[Any]) -> BaseException:
        names = ([n for n in reply[1] if type(n) is str]
                 if type(reply[1]) is list else [])
        message = reply[2] if type(reply[2]) is str else ""
        where = reply[3] if len(reply) > 3 and type(reply[3]) is str else None
        details = reply[4] if len(reply) > 4 and type(reply[4]) is list and \
            len(reply[4]) == 3 else [None, None, None]
        first = names[0] if names else "?"
        if "Exception" not in names:  # SystemExit, KeyboardInterrupt...
            exc: BaseException = ProgramExit(message)
            if self.judge and not self.failure:
                body = {"stage": "test", "exception": first, "message": message}
                if first == "SystemExit":
                    body["message"] = (f"SystemExit({message}) raised before the "
                                       "tests finished")
                if where:
                    body["where"] = where
                kind = "EXIT" if first == "SystemExit" else "ERROR"
                self.failure.append((kind, body))
            exc.ctx_name = first  # type: ignore[attr-defined]
            exc.ctx_where = where  # type: ignore[attr-defined]
            return exc
        cls: type[BaseException] = ProgramError
        given, args, attrs = details
        if type(given) is type and Exception in MRO(given):
            cls = given  # the program's class as the judge knows it (decode_class)
        else:
            for name in names:
                found = getattr(builtins, name, None)
                if isinstance(found, type) and issubclass(found, Exception):
                    cls = found
                    break
        if issubclass(cls, (StopIteration, StopAsyncIteration)):
            # As PEP 479 does for generators: a call that raises StopIteration must
            # not end the tests' loop (``all(map(candidate, xs))``) as if exhausted.
            cls = RuntimeError
            message = f"the program raised {first}: {message}"
            args = None
        if type(args) is not tuple:
            args = (message,)
        try:
            exc = cls(*args)
        except BaseException:  # noqa: BLE001 (a class whose __init__ wants more)
            try:
                exc = cls.__new__(cls, *args)
            except BaseException:  # noqa: BLE001
                exc = ProgramError(message)
        if type(attrs) is list:
            for pair in attrs:
                if type(pair) is list and len(pair) == 2 and type(pair[0]) is str \
                        and not pair[0].startswith(("__", "ctx_", "_ctx_")):
                    try:
                        setattr(exc, pair[0], pair[1])
                    except BaseException:  # noqa: BLE001
                        pass
        if resolve(type(exc), "__str__") is _mirror_str:
            OBJECT_DICT(exc, "__dict__")[MESSAGE_ATTR] = message
        exc.ctx_name = first  # type: ignore[attr-defined]
        exc.ctx_where = where  # type: ignore[attr-defined]
        return exc

    def exception_details(self, exc: BaseException) -> list[Any] | None:
        """What the judge rebuilds the program's exception from: its class, its
        ``args`` and its attributes, each as data (None for one that cannot be)."""
        if self.judge:
            return None  # the tests' exceptions reach the program by name only
        details: list[Any] = [None, None, []]
        try:
            details[0] = self.encode(type(exc))
        except BaseException:  # noqa: BLE001
            pass
        try:
            details[1] = self.encode(EXCEPTION_ARGS(exc))
        except BaseException:  # noqa: BLE001
            pass
        try:
            attrs = list(OBJECT_DICT(exc, "__dict__").items())
        except BaseException:  # noqa: BLE001
            attrs = []
        for key, value in attrs[:100]:
            if type(key) is str and not key.startswith("__"):
                try:
                    details[2].append([key, self.encode(value)])
                except BaseException:  # noqa: BLE001
                    pass
        return details

    def copy_back(self, args: tuple[Any, ...], changed: Any) -> None:
        """The program changed a list, dict or set argument in place: so do we."""
        if type(changed) is not list:
            return
        for item in changed:
            if type(item) is not list or len(item) != 2 or type(item[0]) is not int \
                    or not 0 <= item[0] < len(args):
                continue
            mine, theirs = args[item[0]], item[1]
            if type(mine) is not type(theirs) or mine == theirs:
                continue
            if type(mine) is list:
                mine[:] = theirs
            elif type(mine) in (dict, set):
                mine.clear()
                mine.update(theirs)
            elif type(mine) is bytearray:
                mine[:] = theirs

    def target(self, target: Any) -> Any:
        if type(target) is str and not self.judge:
            return self.namespace[target]
        return self.objects[target]

    def same_method(self, target: Any, name: str, value: Any) -> Any:
        """The bound method ``value`` read as ``target.name`` again: the one the
        judge holds already, when it is the same (one handle, not one per read)."""
        if type(value) is not types.MethodType:
            return value
        key = (target, name)
        known = self.methods.get(key)
        if known is not None:
            old = self.objects.get(known)
            if type(old) is types.MethodType and old.__func__ is value.__func__ \
                    and old.__self__ is value.__self__:
                return old
        self.methods[key] = self.handle(value)
        return value

    def exception_reply(self, exc: BaseException) -> list[Any]:
        return ["exc", exception_names(exc), exception_message(exc),
                innermost(exc, "solution.py" if not self.judge else "test.py"),
                self.exception_details(exc)]

    def serve(self, message: list[Any]) -> None:
        """Answer one request of the other process."""
        kind = message[0]
        target = message[1] if len(message) > 1 else None
        what = (f"{target}()" if kind == "call" and type(target) is str
                else "a function of the program" if kind == "call"
                else "an attribute of an object of the program" if kind in ("get", "set")
                else "an iterator of the program")
        encoding = False  # the request was answered; its answer is being encoded
        try:
            if kind == "call" and len(message) == 4:
                target, args, kwargs = message[1], message[2], message[3]
                function = self.target(target)
                value = function(*args, **{k: v for k, v in kwargs})
                if not self.judge:
                    self.restore_builtins()
                encoding = True
                reply = ["ret", self.encode(value), []]
                if not self.judge:
                    reply[2] = [[i, self.encode(a)] for i, a in enumerate(args)
                                if type(a) in (list, dict, set, bytearray)]
            elif kind == "next" and len(message) == 2:
                iterator = self.objects[message[1]]
                stopped = False
                try:
                    value = next(iterator)
                except StopIteration:
                    stopped = True
                if not self.judge:
                    self.restore_builtins()
                encoding = True
                reply = ["stop"] if stopped else ["ret", self.encode(value)]
            elif kind in ("get", "set") and not self.judge and \
                    len(message) == (3 if kind == "get" else 4) and \
                    type(message[2]) is str:
                target, name = message[1], message[2]
                obj = self.target(target)
                if kind == "set":
                    setattr(obj, name, message[3])
                    value = None
                else:
                    value = self.same_method(target, name, getattr(obj, name))
                self.restore_builtins()
                encoding = True
                reply = ["ret", self.encode(value)]
            else:
                # Attributes are read only in the program's process: the judge
                # never lets the program read one of the tests' objects.
                raise Unreadable(f"an unexpected request {kind!r}")
            body = self.frame(reply)
        except PeerGone:
            raise
        except Refused as exc:
            body = self.frame(["refused", f"{what} returned {exc}; the tests take only "
                               "values that behave as builtin or standard-library ones"])
        except TooLarge as exc:
            body = self.frame(["refused", f"{what} returned {exc}", "MEMORY"])
        except BaseException as exc:  # noqa: BLE001 (the function's own exception)
            if not self.judge:
                self.restore_builtins()
            if encoding and isinstance(exc, MemoryError):
                body = self.frame(["refused", f"{what} returned a value too large to "
                                   "encode as data within the memory limit", "MEMORY"])
            else:
                reply = self.exception_reply(exc)
                try:
                    body = self.frame(reply)
                except BaseException:  # noqa: BLE001 (its details are too large)
                    body = self.frame(reply[:4] + [None])
        if not self.judge:
            self.flush()
        self.send(body)

    def serve_forever(self) -> None:
        while True:
            try:
                message = self.receive()
            except PeerGone:
                return
            except TooLarge as exc:  # the tests' arguments, too large to rebuild here
                self.send(["refused", f"the program's process received {exc}",
                           "MEMORY"])
                continue
            self.serve(message)


# ------------------------------------------------------------------ standard-library values
# Each value crosses as its fields, read through its class's own descriptors, and is
# rebuilt by the receiver's class from them (STDLIB_DECODERS).


def _tzinfo(peer: Peer, tz: Any, d: int) -> Any:
    if tz is None or type(tz) is datetime.timezone:
        return peer._enc(tz, d)
    zoneinfo = peer._modules.get("zoneinfo")
    zone = getattr(zoneinfo, "ZoneInfo", None) if type(zoneinfo) is types.ModuleType \
        else None
    if zone is not None and type(tz) is zone and type(tz.key) is str:
        return {"Dzi": tz.key}
    raise Refused(f"a datetime whose tzinfo is an object of type "
                  f"{peer.class_name(type(tz))} (a datetime.timezone or a "
                  "zoneinfo.ZoneInfo of a key crosses)")


def _enc_datetime(peer: Peer, value: Any, d: int) -> Any:
    fields = [f(value) for f in DATETIME_FIELDS]
    fields[7] = _tzinfo(peer, fields[7], d)
    return {"Dt": fields}


def _enc_time(peer: Peer, value: Any, d: int) -> Any:
    fields = [f(value) for f in TIME_FIELDS]
    fields[4] = _tzinfo(peer, fields[4], d)
    return {"Dm": fields}


def _enc_match(peer: Peer, value: Any, d: int) -> Any:
    pattern, string, pos, endpos, regs = (f(value) for f in MATCH_FIELDS)
    return {"Rm": [peer._enc(pattern, d), peer._enc(string, d), pos, endpos,
                   [list(span) for span in regs]]}


def _enc_memoryview(peer: Peer, value: Any, d: int) -> Any:
    fmt, _itemsize, shape, readonly = (f(value) for f in VIEW_FIELDS)
    if fmt not in VIEW_FORMATS:
        raise Refused(f"a memoryview of format {fmt!r} (a view of native single items "
                      f"crosses: {''.join(sorted(VIEW_FORMATS))})")
    return {"mv": [fmt, list(shape), bool(readonly), b64(VIEW_BYTES(value))]}


def _enc_chainmap(peer: Peer, value: Any, d: int) -> Any:
    maps = OBJECT_DICT(value, "__dict__").get("maps")
    if type(maps) is not list:
        raise Refused("a ChainMap whose maps are not a list")
    return {"cm": [peer._enc(m, d) for m in maps]}


def _enc_namespace(peer: Peer, value: Any, d: int) -> Any:
    attrs = OBJECT_DICT(value, "__dict__")
    if not all(type(k) is str for k in attrs):
        raise Refused("a SimpleNamespace with an attribute that is no str")
    return {"ns": [[k, peer._enc(v, d)] for k, v in attrs.items()]}


STDLIB_ENCODERS: dict[type, Callable[[Peer, Any, int], Any]] = {
    datetime.date: lambda peer, v, d: {"Dd": [f(v) for f in DATE_FIELDS]},
    datetime.datetime: _enc_datetime,
    datetime.time: _enc_time,
    datetime.timedelta: lambda peer, v, d: {"Dl": [f(v) for f in DELTA_FIELDS]},
    datetime.timezone: lambda peer, v, d: {"Dz": [peer._enc(a, d)
                                                  for a in TIMEZONE_ARGS(v)]},
    re.Pattern: lambda peer, v, d: {"Rp": [peer._enc(PATTERN_FIELDS[0](v), d),
                                           PATTERN_FIELDS[1](v)]},
    re.Match: _enc_match,
    array.array: lambda peer, v, d: {"A": [ARRAY_TYPECODE(v), b64(ARRAY_BYTES(v))]},
    memoryview: _enc_memoryview,
    types.MappingProxyType: lambda peer, v, d: {"mp": peer._enc(PROXY_COPY(v), d)},
    collections.ChainMap: _enc_chainmap,
    types.SimpleNamespace: _enc_namespace,
}
#: The mappings a ChainMap or a mappingproxy is rebuilt over.
MAPPING_TYPES = frozenset({dict, collections.Counter, collections.OrderedDict,
                           collections.defaultdict, types.MappingProxyType,
                           collections.ChainMap})


def _dec_datetime(peer: Peer, data: Any) -> Any:
    year, month, day, hour, minute, second, micro, tz, fold = data
    return datetime.datetime(year, month, day, hour, minute, second, micro, tz,
                             fold=fold)


def _dec_time(peer: Peer, data: Any) -> Any:
    hour, minute, second, micro, tz, fold = data
    return datetime.time(hour, minute, second, micro, tz, fold=fold)


def _dec_delta(peer: Peer, data: Any) -> Any:
    days, seconds, micro = data
    return datetime.timedelta(days, seconds, micro)


def _dec_pattern(peer: Peer, data: Any) -> Any:
    pattern, flags = data
    if type(pattern) not in (str, bytes) or type(flags) is not int:
        raise ValueError("a pattern is its text and flags")
    return re.compile(pattern, flags)


def _dec_match(peer: Peer, data: Any) -> Any:
    """The match again, found by the pattern itself in the string: a genuine
    ``re.Match``, which must span what the program's did."""
    pattern, string, pos, endpos, regs = data
    if type(pattern) is not re.Pattern or type(string) not in (str, bytes, bytearray) \
            or type(pos) is not int or type(endpos) is not int or type(regs) is not list \
            or not regs or not all(type(r) is list and len(r) == 2 and
                                   all(type(i) is int for i in r) for r in regs):
        raise ValueError("a match is its pattern, string, bounds and spans")
    spans = tuple(tuple(r) for r in regs)
    start, end = spans[0]
    for again in (lambda: pattern.match(string, start, endpos),
                  lambda: pattern.fullmatch(string, start, endpos),
                  lambda: pattern.fullmatch(string, start, end),
                  lambda: pattern.search(string, pos, endpos)):
        found = again()
        if found is not None and found.regs == spans:
            return found
    raise ValueError("a re.Match its pattern does not find in its string")


def _dec_array(peer: Peer, data: Any) -> Any:
    typecode, payload = data
    if type(typecode) is not str:
        raise ValueError("an array's typecode is a str")
    value = array.array(typecode)
    value.frombytes(unb64(payload))
    return value


def _dec_memoryview(peer: Peer, data: Any) -> Any:
    fmt, shape, readonly, payload = data
    if fmt not in VIEW_FORMATS or type(shape) is not list or type(readonly) is not bool:
        raise ValueError("a memoryview is its format, shape and bytes")
    raw = unb64(payload)
    view = memoryview(raw if readonly else bytearray(raw))
    if fmt != "B" or len(shape) != 1:
        view = view.cast(fmt, shape)
    elif shape != [len(raw)]:
        raise ValueError("a memoryview's shape is its length")
    return view


def _dec_proxy(peer: Peer, data: Any) -> Any:
    if type(data) not in MAPPING_TYPES:
        raise ValueError("a mappingproxy is over a mapping")
    return types.MappingProxyType(data)


def _dec_chainmap(peer: Peer, data: Any) -> Any:
    if type(data) is not list or not all(type(m) in MAPPING_TYPES for m in data):
        raise ValueError("a ChainMap is over mappings")
    return collections.ChainMap(*data)


def _dec_namespace(peer: Peer, data: Any) -> Any:
    return types.SimpleNamespace(**{k: v for k, v in data})


STDLIB_DECODERS: dict[str, Callable[[Peer, Any], Any]] = {
    "Dd": lambda peer, data: datetime.date(*data),
    "Dt": _dec_datetime,
    "Dm": _dec_time,
    "Dl": _dec_delta,
    "Dz": lambda peer, data: datetime.timezone(*data),
    "Dzi": lambda peer, data: peer._import("zoneinfo").ZoneInfo(data),
    "Rp": _dec_pattern,
    "Rm": _dec_match,
    "A": _dec_array,
    "mv": _dec_memoryview,
    "mp": _dec_proxy,
    "cm": _dec_chainmap,
    "ns": _dec_namespace,
}


def decode_numpy(numpy: Any, tag: str, data: Any) -> Any:
    """A numpy array (``nd``) or scalar (``npv``) rebuilt by this process's numpy
    from its dtype, shape and bytes (or items)."""
    if tag == "npv":
        spec, payload = data
        dtype = numpy.dtype(spec)
        raw = unb64(payload)
        if dtype.hasobject or len(raw) != dtype.itemsize:
            raise ValueError("a numpy scalar is its dtype and bytes")
        if not dtype.itemsize:
            return numpy.zeros((), dtype)[()]
        return numpy.frombuffer(raw, dtype=dtype)[0]
    spec, shape, payload, objects = data
    dtype = numpy.dtype(spec)
    if type(shape) is not list or not all(type(n) is int and n >= 0 for n in shape):
        raise ValueError("a numpy array's shape is a list of sizes")
    count = math.prod(shape)
    if objects:
        if dtype != numpy.dtype(object) or type(payload) is not list or \
                len(payload) != count:
            raise ValueError("an array of objects is its items")
        flat = numpy.empty(count, dtype=object)
        for i, item in enumerate(payload):
            flat[i] = item
        return flat.reshape(shape)
    if dtype.hasobject:
        raise ValueError("an array of objects crosses item by item")
    raw = unb64(payload)
    if len(raw) != count * dtype.itemsize:
        raise ValueError("a numpy array's bytes are its items")
    if not raw:
        return numpy.zeros(shape, dtype)
    return numpy.frombuffer(raw, dtype=dtype, count=count).reshape(shape).copy()


def exception_names(exc: BaseException) -> list[str]:
    names = []
    try:
        for klass in type.__dict__["__mro__"].__get__(type(exc)):
            names.append(str(type.__dict__["__name__"].__get__(klass)))
    except BaseException:  # noqa: BLE001
        pass
    return names or ["?"]


def exception_message(exc: BaseException) -> str:
    try:
        return str(exc)[:2000]
    except BaseException:  # noqa: BLE001
        return "<the exception could not be printed>"


def innermost(exc: BaseException, filename: str) -> str | None:
    """``file:line`` of the innermost frame of ``filename`` in the traceback."""
    where = None
    tb = getattr(exc, "__traceback__", None)
    try:
        while tb is not None:
            if tb.tb_frame.f_code.co_filename == filename:
                where = f"{filename}:{tb.tb_lineno}"
            tb = tb.tb_next
    except BaseException:  # noqa: BLE001
        pass
    return where


_NAMEDTUPLES: dict[tuple[str, tuple[str, ...]], type] = {}


def make_namedtuple(name: str, fields: tuple[str, ...]) -> type:
    key = (name, fields)
    if key not in _NAMEDTUPLES:
        _NAMEDTUPLES[key] = collections.namedtuple(name, fields)
    return _NAMEDTUPLES[key]


FRACTION_NUM = fractions.Fraction.__dict__["numerator"].__get__
DEFAULT_FACTORY = collections.defaultdict.__dict__["default_factory"].__get__
FRACTION_DEN = fractions.Fraction.__dict__["denominator"].__get__
DECIMAL_STR = decimal.Decimal.__str__
DEFAULT_FACTORIES: dict[str, Any] = {
    "int": int, "float": float, "str": str, "list": list, "dict": dict, "set": set,
    "tuple": tuple, "frozenset": frozenset, "bool": bool, "bytes": bytes,
    "Counter": collections.Counter, "deque": collections.deque,
    "OrderedDict": collections.OrderedDict, "defaultdict": collections.defaultdict,
}


def describe(exc: BaseException, stage: str, filename: str) -> dict[str, Any]:
    name = getattr(exc, "ctx_name", None) or exception_names(exc)[0]
    body: dict[str, Any] = {"stage": stage, "exception": name,
                            "message": exception_message(exc)}
    where = getattr(exc, "ctx_where", None) or innermost(exc, filename)
    if stage == "test" and not getattr(exc, "ctx_where", None):
        where = innermost(exc, "test.py") or where
    if where:
        body["where"] = where
    return body


def failure_kind(exc: BaseException) -> str:
    if isinstance(exc, SystemExit):
        return "EXIT"
    if isinstance(exc, MemoryError):
        return "MEMORY"
    if isinstance(exc, AssertionError):
        return "ASSERT"
    return "ERROR"


def program_main(solution: str, peer: Peer) -> NoReturn:
    """Run the solution, tell the judge its names, then answer its calls. Nothing
    here decides anything: a program that subverts this code only changes what it
    answers, and answers are data."""
    try:
        code = compile(solution, "solution.py", "exec", dont_inherit=True)
    except (SyntaxError, ValueError, MemoryError, RecursionError) as exc:
        body = describe(exc, "solution", "solution.py")
        lineno = getattr(exc, "lineno", None)
        if isinstance(lineno, int):
            body["where"] = f"solution.py:{lineno}"
        peer.send(["failed", "SYNTAX", peer.encode(body)])
        os._exit(1)
    install_guard()
    module = types.ModuleType("solution")
    namespace = module.__dict__
    namespace["__file__"] = "solution.py"
    sys.modules["solution"] = module
    exit_now = os._exit
    try:
        exec(code, namespace)
    except BaseException as exc:  # noqa: BLE001 (the program's failure)
        peer.restore_builtins()
        body = describe(exc, "solution", "solution.py")
        if isinstance(exc, SystemExit):
            code_ = getattr(exc, "code", None)
            if code_ is not None and not isinstance(code_, (int, str)):
                code_ = "<object>"
            body["message"] = f"SystemExit({code_!r}) raised before the tests finished"
        peer.flush()
        try:
            peer.send(["failed", failure_kind(exc), peer.encode(body)])
        finally:
            exit_now(1)
    peer.restore_builtins()
    peer.namespace = namespace
    try:
        names = [n for n, v in list(namespace.items())
                 if type(n) is str and not n.startswith("__") and callable(v)]
        # The exception classes among them cross as classes (the tests ``except``
        # them); the others are functions the tests call.
        classes = []
        for name in names:
            value = namespace.get(name)
            if isinstance(value, type) and BaseException in MRO(value):
                try:
                    classes.append([name, peer.encode(value)])
                except BaseException:  # noqa: BLE001
                    pass
        peer.flush()
        peer.send(["ready", names, classes])
        peer.serve_forever()
    except BaseException:  # noqa: BLE001
        exit_now(1)
    exit_now(0)


def judge_main(spec: dict[str, Any], peer: Peer) -> NoReturn:
    """Run the tests against the program's functions and report the verdict.

    The judge never runs the program's code: the names the tests call of the
    program are :class:`RemoteFunction` objects, what they return is rebuilt from
    data, and the prompt's other definitions (helpers such as ``encode_cyclic``)
    are the prompt's own, run here."""
    write, exit_now = os.write, os._exit

    def report(kind: str, body: dict[str, Any] | None = None) -> NoReturn:
        peer.flush()
        line = f"{kind} {json.dumps(body or {})}\n".encode("utf-8", "replace")
        while line:
            line = line[write(JUDGE_REPORT_FD, line):]
        exit_now(0 if kind == "PASS" else 1)

    def fail(exc: BaseException, stage: str) -> NoReturn:
        # The line of the tests that was running, from this process's own
        # traceback (the program's reply can name any line in "where").
        line = innermost(exc, "test.py")
        found: dict[str, Any] = {}
        if line is not None:
            found["test_line"] = int(line.rpartition(":")[2])
        if peer.failure:
            kind, body = peer.failure[0]
            if kind in ("EXIT", "ERROR"):  # the program's exception
                found["raised_by"] = "program"
            report(kind, {**body, **found})
        found["raised_by"] = "program" if getattr(exc, "ctx_name", None) else "tests"
        report(failure_kind(exc), {**describe(exc, stage, "test.py"), **found})

    try:
        test_code = compile(spec["test"], "test.py", "exec", dont_inherit=True)
    except (SyntaxError, ValueError, MemoryError, RecursionError) as exc:
        body = describe(exc, "test", "test.py")
        body["message"] = "the example's test code does not compile: " + body["message"]
        report("ERROR", body)
    # The prompt's definitions first, while the program's process starts: the
    # tests call these, whatever the program defines under the same names.
    namespace: dict[str, Any] = {"__name__": "test", "__file__": "test.py",
                                 "__builtins__": builtins}
    prompt = spec.get("prompt") or ""
    prompt_error: dict[str, Any] | None = None
    if prompt:
        prompt_code = None
        for text in (prompt, prompt.rstrip("\n") + "\n    pass\n"):
            try:
                prompt_code = compile(text, "prompt.py", "exec", dont_inherit=True)
                break
            except (SyntaxError, ValueError, MemoryError, RecursionError):
                continue
        if prompt_code is not None:
            try:
                exec(prompt_code, namespace)
            except BaseException as exc:  # noqa: BLE001
                prompt_error = describe(exc, "test", "prompt.py")
                prompt_error["message"] = ("the prompt's definitions could not run for "
                                           "the tests: " + prompt_error["message"])
    # The prompt's exception classes: the program's class of the same name, raised
    # in a call, is caught by the tests' ``except`` of the prompt's.
    peer.prompt_classes = {n: v for n, v in namespace.items()
                           if isinstance(v, type) and issubclass(v, BaseException)
                           and v.__module__ == "test"}
    try:
        first = peer.receive()
    except Unreadable as exc:
        report("REFUSED", {"stage": "solution", "exception": "UntrustedReturn",
                           "message": f"the program's process sent {exc}"})
    except PeerGone:
        report("GONE", {"stage": "solution"})
    except TooLarge as exc:
        report("MEMORY", {"stage": "solution", "exception": "MemoryError",
                          "message": f"the program's process sent {exc}"})
    if first[0] == "failed" and len(first) == 3 and type(first[2]) is dict:
        kind = (first[1] if first[1] in ("SYNTAX", "MEMORY", "EXIT", "ERROR")
                else "ERROR")
        body = {k: v for k, v in first[2].items()
                if k in ("stage", "exception", "message", "where") and type(v) is str}
        body["stage"] = "solution"
        report(kind, body)
    if first[0] != "ready" or len(first) != 3 or type(first[1]) is not list or \
            type(first[2]) is not list:
        report("REFUSED", {"stage": "solution", "exception": "UntrustedReturn",
                           "message": "the program's process sent what the sandbox "
                                      "never sends"})
    if prompt_error is not None:
        report("ERROR", prompt_error)
    names = {n for n in first[1] if type(n) is str}
    classes = {item[0]: item[1] for item in first[2]
               if type(item) is list and len(item) == 2 and type(item[0]) is str
               and isinstance(item[1], type) and issubclass(item[1], BaseException)}
    keep = [n for n in spec.get("keep") or () if type(n) is str]
    for name in names:
        # What the prompt defines stays the prompt's; a builtin the program shadows
        # (``def abs(x): return 0``) stays the builtin. The program's exception
        # classes are classes the judge built (see Peer.decode_class).
        if name not in keep and name not in namespace and not hasattr(builtins, name):
            namespace[name] = classes.get(name) or RemoteFunction(peer, name, name)
    for name in keep:
        if name in names:
            namespace[name] = classes.get(name) or RemoteFunction(peer, name, name)
        else:
            namespace.pop(name, None)
    try:
        exec(test_code, namespace)
        call = spec.get("call")
        if call:
            function, argument = call
            # An entry point is a name, or an expression of one (LeetCode's
            # ``Solution().twoSum``), evaluated here over the program's stand-ins.
            head = re.match(r"[^\d\W]\w*", argument)
            if head is None or head.group() not in names:
                raise NameError(f"name {argument!r} is not defined: the solution does "
                                f"not define the entry point {argument!r}")
            if argument.isidentifier():
                candidate = namespace[argument]
            else:
                candidate = eval(compile(argument, "<entry point>", "eval",
                                         dont_inherit=True), namespace)
            namespace[function](candidate)
    except BaseException as exc:  # noqa: BLE001
        fail(exc, "test")
    if peer.failure:  # the tests caught a refusal, or the program's end
        report(*peer.failure[0])
    report("PASS")


def install_judge_guard() -> None:
    """The judge reads no file written after the sandbox started: a module the
    program planted over a writable installation is never imported by the tests.
    Only where the file systems are not isolated (basic mode): elsewhere the
    program can write only to private directories the judge never imports from."""
    started = STARTED_NS
    startswith = str.startswith

    def guard(event: str, args: tuple[Any, ...]) -> None:
        if event != "open" or not args:
            return
        path = args[0]
        if isinstance(path, bytes):
            path = os.fsdecode(path)
        if not isinstance(path, str) or startswith(path, "/dev/") or \
                startswith(path, "/proc/"):
            return
        try:
            st = os.stat(path)
        except OSError:
            return
        if S_ISREG(st.st_mode) and st.st_ctime_ns >= started:
            raise PermissionError(f"the tests may not read {path!r}: it was written "
                                  "after the sandbox started")

    sys.addaudithook(guard)


#: When this interpreter (the sandbox's zygote) started, before any program ran:
#: native code written later is never loaded (see install_guard).
STARTED_NS = time.time_ns()


#: Audit events refused to the program (install_guard): they reach other threads'
#: frames, trace or profile frames, other objects' references, or raw memory. Nothing
#: that decides the verdict is in the program's process any more; this stays as
#: defence in depth (and keeps the program's failures readable).
GUARDED_EVENTS = frozenset({
    "sys._current_frames", "sys._current_exceptions", "sys.settrace",
    "sys.setprofile", "sys._settraceallthreads", "sys._setprofileallthreads",
    "sys.monitoring.register_callback", "gc.get_objects", "gc.get_referrers",
    "gc.get_referents",
})


def install_guard() -> None:
    """Install the audit hook that refuses :data:`GUARDED_EVENTS`, every ``ctypes``
    event, opening the process's memory (``/proc/*/mem``), and loading native code
    that was not on disk, unchanged, before the sandbox started: an extension
    module (the ``import`` event with a file name, raised by ``_imp.create_dynamic``)
    must be a regular file whose inode changed last before :data:`STARTED_NS`. A
    program that writes a shared object (a copy, a ``memfd``, a hard link: each
    gives the inode a new change time, which no unprivileged process can set back)
    cannot load it, so it cannot read the process's memory with native code either.

    The ``open`` event carries the path but not the directory descriptor an
    ``openat`` is relative to (``os.open('mem', dir_fd=...)`` on ``/proc/self``),
    so no resolution of the path alone can tell where a relative one leads, and a
    directory on the way can be swapped for a link between the check and the open.
    What every way to the memory has in common is its last step: the name ``mem``
    (a link to it is a link whose target ends in ``mem``; the ``/proc/self/fd``
    links lead only to what is already open). So the hook refuses opening any path
    whose last component is ``mem``, creating a symbolic link whose target's is, a
    path that resolves into ``/proc`` and ends in ``/mem`` (a link made otherwise,
    by a process the program started), and a path object that is neither ``str``,
    ``bytes`` nor a descriptor (``io.FileIO`` audits the object, whose
    ``__fspath__`` may answer differently the second time)."""
    blocked = GUARDED_EVENTS
    startswith, endswith, rstrip, rpartition = (str.startswith, str.endswith,
                                                str.rstrip, str.rpartition)
    type_, str_, bytes_, int_, len_ = type, str, bytes, int, len
    decode, realpath, stat_, is_regular = bytes.decode, os.path.realpath, os.stat, S_ISREG
    started = STARTED_NS
    PermissionError_, BaseException_ = PermissionError, BaseException

    def refuse(what: str) -> NoReturn:
        raise PermissionError_(f"{what} is not allowed in the sandbox")

    def text(path: Any) -> Any:
        return decode(path, "utf-8", "surrogateescape") if type_(path) is bytes_ else path

    def named_mem(path: str) -> bool:
        return rpartition(rstrip(path, "/"), "/")[2] == "mem"

    def guard(event: str, args: tuple[Any, ...]) -> None:
        if event in blocked or startswith(event, "ctypes."):
            refuse(event)
        if event == "open" and args:
            path = text(args[0])
            if type_(path) is str_:
                if named_mem(path):
                    refuse(f"opening a file named mem ({path!r})")
                try:
                    real = realpath(path)
                except BaseException_:
                    refuse("open")
                if startswith(real, "/proc/") and endswith(real, "/mem"):
                    refuse(f"open({path!r})")
            elif type_(path) is not int_:
                refuse(f"opening a {type_(path).__name__} object as a path (pass a str)")
        if event == "os.symlink" and args:
            target = text(args[0])
            if type_(target) is not str_ or named_mem(target):
                refuse(f"a symbolic link to {target!r}")
        if event == "import" and len_(args) > 1 and args[1] is not None:
            path = text(args[1])
            what = f"loading native code from {path!r} (written after the sandbox started)"
            if type_(path) is not str_:
                refuse(what)
            try:
                # stat follows links itself, /proc/self/fd ones too (reach_through):
                # realpath would spell those as paths the uid cannot reach.
                st = stat_(path)
            except BaseException_:
                refuse(what)
            if not is_regular(st.st_mode) or st.st_ctime_ns >= started:
                refuse(what)

    sys.addaudithook(guard)


# ------------------------------------------------------------------ main


def serve(forker: Forker) -> None:
    while True:
        req = read_frame(0)
        if req is None:
            return
        try:
            answer = forker.run(req)
        except Exception as exc:  # noqa: BLE001 (a fault of ours, not the program's)
            answer = {"op": "result", "passed": False, "reason": "sandbox_error",
                      "message": f"{type(exc).__name__}: {exc}"}
        write_frame(1, answer)


def main() -> None:
    config = read_frame(0)
    if config is None:
        return
    if sys.flags.no_site:
        # Started with -S, so that no .pth file of an installed package ran and no
        # site-packages is on sys.path; the builtins ``site`` adds still exist.
        import site

        site.setquit()
        site.setcopyright()
        site.sethelper()
    for name in PRELOAD:
        try:
            __import__(name)
        except ImportError:
            pass
    setup = Setup()
    if setup_namespaces(config, setup):
        pid = os.fork()
        if pid:
            # Outside the namespaces: wait for the forker (PID 1 inside) and leave.
            os.close(0)
            os.close(1)
            while True:
                try:
                    _, status = os.waitpid(pid, 0)
                    break
                except InterruptedError:
                    continue
            os._exit(os.WEXITSTATUS(status) if os.WIFEXITED(status) else 1)
        prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
        try:
            setup_filesystem(config, setup)
        except OSError as exc:
            setup.notes.append(f"filesystem isolation failed ({exc})")
    else:
        if config["network"] == "deny":
            write_frame(1, {"op": "error", "message": (
                "network isolation was required (network='deny') but this system "
                "does not let this process create a network namespace: "
                + "; ".join(setup.notes or ["not Linux"]))})
            return
        if sys.platform.startswith("linux"):
            prctl(PR_SET_CHILD_SUBREAPER, 1)
    if setup.filesystem != "isolated":
        # No view: the declared packages are imported from where they are installed
        # (their site-packages directory, whose other packages are importable too).
        sys.path.extend(p for p in config.get("packages", {}).get("sys_path", [])
                        if p not in sys.path)
    setup_identity(config, setup)
    refusal = root_refusal(setup)
    if refusal is not None:
        write_frame(1, {"op": "error", "message": refusal})
        return
    if sys.platform.startswith("linux"):
        # The forker holds each run's tests while it forks the judge, and the
        # judge inherits this flag: a process of the same user must not read
        # either's memory through /proc/<pid>/mem or ptrace.
        prctl(PR_SET_DUMPABLE, 0)
    forker = Forker(setup)
    BUILTINS.update(builtins.__dict__)
    PEERS[False] = Peer(PROGRAM_IN_FD, PROGRAM_OUT_FD, judge=False)
    PEERS[True] = Peer(JUDGE_IN_FD, JUDGE_OUT_FD, judge=True)
    # The forker runs nothing that reads its environment any more (the dynamic
    # loader read LD_LIBRARY_PATH when the interpreter started): the children's.
    os.environ.clear()
    os.environ.update(CHILD_ENV, ZYGOTE_ENV_SET="1")
    # Children inherit every object; frozen, the collector in a child never walks
    # (and so never copies) the pages they live on.
    gc.collect()
    gc.freeze()
    write_frame(1, setup.report())
    serve(forker)


if __name__ == "__main__":
    main()
