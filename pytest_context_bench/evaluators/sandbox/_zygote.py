"""The pre-started parent ("zygote") that forks one sandboxed child per program.

This file is run as a script, ``python -I -B _zygote.py``, never imported by the
package: it must stay standard-library only, so that every child it forks starts
from a clean interpreter that holds nothing of the caller (no pytest, no System,
no API key, no environment beyond a minimal one).

Protocol (over the zygote's stdin/stdout): frames of a 4-byte big-endian length
followed by UTF-8 JSON. The client sends an ``init`` frame; the zygote sets up its
isolation and answers ``ready`` with what it could set up. Then, for each ``run``
frame, it forks a child, supervises it and answers with the verdict. End of input
ends the zygote.

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
scanning ``/proc``.

Each child: own session and process group, fresh temporary working directory,
minimal environment, stdin on ``/dev/null``, stdout/stderr into one capped pipe,
resource limits (CPU, address space, file size, open files, processes), no new
privileges. The program's solution and its tests are compiled separately (so the
solution cannot swallow the tests, e.g. with an unclosed string) and run in that
order, the tests with pristine builtins. The child receives a per-run secret
through a pipe that it reads and closes before the program runs; only the harness
writes it back, after the tests have run to their end. The program text, its
environment, its arguments and its files never contain it.
"""

from __future__ import annotations

import builtins
import ctypes
import ctypes.util
import gc
import json
import math
import os
import random
import resource
import select
import shutil
import signal
import struct
import sys
import tempfile
import time
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

# Child file descriptors.
REPORT_FD = 3
SECRET_FD = 4

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
        _libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
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


def probe_uid(uid: int, paths: list[str]) -> bool:
    """Whether a child switched to ``uid`` can still read the interpreter's files."""
    pid = os.fork()
    if pid == 0:
        try:
            os.setgroups([])
            os.setresgid(uid, uid, uid)
            os.setresuid(uid, uid, uid)
            for path in paths:
                os.listdir(path)
            os.stat(os.path.join(os.path.dirname(os.__file__), "os.py"))
            os._exit(0)
        except BaseException:  # noqa: BLE001 (any failure means no)
            os._exit(1)
    _, status = os.waitpid(pid, 0)
    return os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0


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
    """As root, children switch to an unused uid when it can still run Python."""
    if os.geteuid() == 0 and not setup.userns:
        span = pick_uid_range()
        if span is not None:
            base, size = span
            if probe_uid(base + random.randrange(size), needed_paths()):
                setup.uid_base, setup.uid_span = base, size
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


class Forker:
    def __init__(self, setup: Setup) -> None:
        self.setup = setup
        self.pristine = dict(builtins.__dict__)
        self.pidfd = hasattr(os, "pidfd_open")

    def run(self, req: dict[str, Any]) -> dict[str, Any]:
        setup = self.setup
        uid = None
        if setup.uid_base is not None:
            uid = setup.uid_base + random.randrange(setup.uid_span)
        tmp = tempfile.mkdtemp(prefix="ctxbench-", dir=setup.work)
        try:
            for name, stage in (("solution.py", "solution"), ("test.py", "test")):
                with open(os.path.join(tmp, name), "w", encoding="utf-8") as f:
                    f.write(req[stage])
            if uid is not None:
                for path in (tmp, os.path.join(tmp, "solution.py"),
                             os.path.join(tmp, "test.py")):
                    os.chown(path, uid, uid)
            return self._supervise(req, tmp, uid)
        finally:
            remove_tree(tmp)
            if setup.namespaces:
                for directory in setup.private_dirs:
                    wipe(directory, setup.keep)

    def _supervise(self, req: dict[str, Any], tmp: str, uid: int | None) -> dict[str, Any]:
        rep_r, rep_w = os.pipe()
        out_r, out_w = os.pipe()
        sec_r, sec_w = os.pipe()
        started = time.monotonic()
        forker_pid = os.getpid()
        pid = os.fork()
        if pid == 0:
            os.close(rep_r)
            os.close(out_r)
            os.close(sec_w)
            child(req, tmp, uid, self.setup, self.pristine, rep_w, out_w, sec_r,
                  forker_pid)
        os.close(rep_w)
        os.close(out_w)
        os.close(sec_r)
        # Made only now, after the fork: no child ever had it in its memory before
        # reading it from the pipe.
        secret = os.urandom(16).hex()
        os.write(sec_w, secret.encode("ascii"))
        os.close(sec_w)

        timeout = float(req["timeout"])
        cap = int(req["output_cap"])
        deadline = started + timeout
        out = bytearray()
        out_total = 0
        verdicts: list[str] = []
        rep_tail = b""
        token = secret.encode("ascii") + b" "
        poller = select.poll()
        pidfd = -1
        if self.pidfd:
            try:
                pidfd = os.pidfd_open(pid)
                poller.register(pidfd, select.POLLIN)
            except OSError:
                pidfd = -1
        for fd in (rep_r, out_r):
            set_cloexec_nonblock(fd)
            poller.register(fd, select.POLLIN)
        # The request pipe: the caller writes nothing during a run, so the only
        # event it can report is a hang-up, when every writer is gone: the caller
        # died (Ctrl-C, SIGKILL, a crashed xdist worker). Nobody will read the
        # verdict, and the program must not outlive the run.
        poller.register(0, 0)
        open_fds = {rep_r, out_r}
        status: int | None = None
        timed_out = False

        setup_error: list[str] = []

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
            else:
                lines = (rep_tail + data).split(b"\n")
                rep_tail = lines.pop()
                if len(rep_tail) > 65536:
                    rep_tail = b""
                for line in lines:
                    if line.startswith(token):
                        verdicts.append(line[len(token):].decode("utf-8", "replace"))
                    elif line.startswith(b"setup-failed ") and not setup_error:
                        setup_error.append(line[13:].decode("utf-8", "replace"))
            return True

        while status is None:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                timed_out = True
                break
            wait_ms = remaining * 1000 if pidfd >= 0 else min(remaining * 1000, 5)
            for fd, _event in poller.poll(max(1, math.ceil(wait_ms))):
                if fd == 0:
                    abandon(pid, self.setup.namespaces)
                if fd == pidfd:
                    status = os.waitpid(pid, 0)[1]
                elif fd in open_fds and take(fd) is False:
                    poller.unregister(fd)
                    open_fds.discard(fd)
            if status is None and pidfd < 0:
                done, st = os.waitpid(pid, os.WNOHANG)
                if done:
                    status = st
        duration = time.monotonic() - started
        for target in (-pid, pid):
            try:
                os.kill(target, signal.SIGKILL)
            except OSError:
                pass
        if status is None:
            status = os.waitpid(pid, 0)[1]
        if pidfd >= 0:
            os.close(pidfd)
        if self.setup.namespaces:
            sweep_namespace()
        else:
            sweep_basic(pid, pid)
        for fd in open_fds:  # every writer is gone: drain what is left
            for _ in range(1024):  # at most 64 MiB, should a writer have survived
                if take(fd) is not True:
                    break
        for fd in (rep_r, out_r):
            os.close(fd)
        answer = verdict(status, timed_out, duration, verdicts, bytes(out), out_total)
        if setup_error and not verdicts:
            answer["reason"] = "sandbox_error"
            answer["message"] = "the sandbox could not be set up: " + setup_error[0]
        return answer


def abandon(pid: int, namespaces: bool) -> NoReturn:
    """The caller is gone: kill the program's process group and everything it left,
    then end the zygote (in a PID namespace, the forker's exit ends every process
    left in it; its parent outside then exits too)."""
    for target in (-pid, pid):
        try:
            os.kill(target, signal.SIGKILL)
        except OSError:
            pass
    try:
        os.waitpid(pid, 0)
        if namespaces:
            sweep_namespace()
        else:
            sweep_basic(pid, pid)
    finally:
        os._exit(0)


def verdict(status: int, timed_out: bool, duration: float, verdicts: list[str],
            output: bytes, output_total: int) -> dict[str, Any]:
    """Turn the child's exit status and its harness lines into the answer."""
    text = output.decode("utf-8", "replace")
    result: dict[str, Any] = {
        "op": "result",
        "passed": False,
        "duration": round(duration, 6),
        "output": text,
        "output_bytes": output_total,
        "exit_code": os.WEXITSTATUS(status) if os.WIFEXITED(status) else None,
        "signal": os.WTERMSIG(status) if os.WIFSIGNALED(status) else None,
    }
    reports = []
    for line in verdicts:
        kind, _, payload = line.partition(" ")
        try:
            body = json.loads(payload) if payload else {}
        except ValueError:
            body = {}
        reports.append((kind, body if isinstance(body, dict) else {}))
    final = reports[-1] if reports else None
    clean = os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
    if timed_out:
        result["reason"] = "timeout"
        result["message"] = f"still running after {duration:.3g} s (wall clock)"
        return result
    if final is not None and final[0] == "PASS":
        if clean:
            result["passed"] = True
            result["reason"] = "passed"
        else:
            result["reason"] = "crashed"
            result["message"] = "the tests passed but the process did not exit cleanly"
        return result
    if final is not None:
        kind, body = final
        result.update({k: v for k, v in body.items() if isinstance(k, str)})
        result["reason"] = {
            "SYNTAX": "syntax_error",
            "ASSERT": "assertion",
            "MEMORY": "memory",
            "EXIT": "exited_early",
            "REFUSED": "untrusted_return",
            "SETUP": "sandbox_error",
        }.get(kind, "exception")
        return result
    sig = result["signal"]
    if sig == signal.SIGXCPU:
        result["reason"] = "timeout"
        result["message"] = "CPU time limit exceeded"
    elif sig is not None:
        if "MemoryError" in text or "Cannot allocate memory" in text:
            result["reason"] = "memory"
        else:
            result["reason"] = "crashed"
        try:
            name = signal.Signals(sig).name
        except ValueError:
            name = str(sig)
        result["message"] = f"killed by signal {name}"
    else:
        result["reason"] = "exited_early"
        result["message"] = (
            f"the process exited with status {result['exit_code']} before the tests "
            "finished")
    return result


# ------------------------------------------------------------------ the child


def child(req: dict[str, Any], tmp: str, uid: int | None, setup: Setup,
          pristine: dict[str, Any], rep_w: int, out_w: int, sec_r: int,
          forker_pid: int) -> NoReturn:
    """Set the child up, then run the harness; never returns."""
    try:
        os.setsid()
        os.chdir(tmp)
        # Move the three pipes out of the way, then onto 1/2, 3 and 4.
        high = [os.dup(fd) for fd in (out_w, rep_w, sec_r)]
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.dup2(high[0], 1)
        os.dup2(high[0], 2)
        os.dup2(high[1], REPORT_FD)
        os.dup2(high[2], SECRET_FD)
        os.closerange(SECRET_FD + 1, max(resource.getrlimit(resource.RLIMIT_NOFILE)[0],
                                         1024))
        for sig in (signal.SIGPIPE, signal.SIGXFSZ):
            signal.signal(sig, signal.SIG_IGN)  # write errors become exceptions
        for sig in (signal.SIGTERM, signal.SIGCHLD, signal.SIGALRM, signal.SIGHUP):
            signal.signal(sig, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)

        env = {
            "PATH": "/usr/local/bin:/usr/bin:/bin",
            "HOME": tmp,
            "TMPDIR": tmp,
            "LANG": "C.UTF-8",
            "PYTHONDONTWRITEBYTECODE": "1",
            "PYTHONIOENCODING": "utf-8",
            "OMP_NUM_THREADS": "1",
            "OPENBLAS_NUM_THREADS": "1",
            "MKL_NUM_THREADS": "1",
            "USER": "sandbox",
            "LOGNAME": "sandbox",
        }
        os.environ.clear()
        os.environ.update(env)
        tempfile.tempdir = tmp

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
            n = setup.nproc_base + limits["processes"]
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
        elif setup.userns or os.geteuid() == 0:
            # Root without a uid of its own keeps root's files and may signal
            # root's processes, but without capabilities it can no longer read
            # other processes' memory or environment, mount, or change limits.
            drop_capabilities()
        if sys.platform.startswith("linux"):
            # The program dies with its forker, whatever kills the forker (set only
            # now: a change of uid clears it). The forker is single-threaded, so
            # "parent" here is the forker itself, not a thread that could end first.
            prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
            if os.getppid() != forker_pid:
                os._exit(1)  # the forker died before the line above
            prctl(PR_SET_NO_NEW_PRIVS, 1)
            # The forker is not dumpable (see main); the child may read its own
            # /proc entries again: the only secret in its memory is its own.
            prctl(PR_SET_DUMPABLE, 1)

        secret = b""
        while len(secret) < 32:
            chunk = os.read(SECRET_FD, 32 - len(secret))
            if not chunk:
                break
            secret += chunk
        os.close(SECRET_FD)
        # Handed over in a box the harness empties: no frame on the program's stack
        # (this one included) keeps the secret.
        box = [secret.decode("ascii")]
        del secret, chunk
    except BaseException as exc:  # noqa: BLE001 (nothing untrusted has run yet)
        try:
            os.write(REPORT_FD, f"setup-failed {type(exc).__name__}: {exc}\n".encode())
        finally:
            os._exit(70)
    harness(req, box, pristine)


def harness(req: dict[str, Any], box: list[str], pristine: dict[str, Any]) -> NoReturn:
    """Run solution, tests and the check call; report through the secret channel.

    Everything the harness uses after the program started was bound before it: the
    program may replace ``print``, ``sys.stdout``, ``os.write``, ``builtins``,
    ``json`` or ``check`` without changing what is reported. The ``builtins``
    module is restored to its pristine state before the tests run and again before
    each report, so the standard library the tests and the harness call works as
    documented whatever the program did to it.

    The values the tests receive from the program's functions (the entry point and
    the names in ``keep``) must be of exact builtin types, recursively (see
    :func:`make_guard`): an object whose ``__eq__`` always returns True, or an
    ``int``/``str``/``list`` subclass overriding it, cannot pass an ``assert
    candidate(x) == y``. A refused value fails the run with ``REFUSED`` even if the
    tests catch the exception it raises.
    """
    write, exit_now = os.write, os._exit
    audit, gc_disable = sys.audit, gc.disable
    # The secret goes straight from the box into the audit hook that writes the
    # reports (see install_reporter): it is never a variable of this frame.
    install_reporter(box.pop())
    if sys.platform.startswith("linux"):
        # From now on no other process (one the program starts, without our audit
        # hooks) may read this one's memory through /proc/<pid>/mem or ptrace.
        try:
            prctl(PR_SET_DUMPABLE, 0)
        except OSError:
            pass
    set_recursion = sys.setrecursionlimit
    recursion = sys.getrecursionlimit()
    modules = sys.modules
    saved_modules = dict(modules)
    AssertionError_, MemoryError_, SystemExit_ = AssertionError, MemoryError, SystemExit
    SyntaxError_, BaseException_, ValueError_ = SyntaxError, BaseException, ValueError
    type_, str_, isinstance_ = type, str, isinstance
    dict_, getattr_, set_, list_ = dict, getattr, set, list
    NameError_ = NameError
    compile_, exec_ = compile, exec
    ModuleType = type(sys)

    streams = (sys.stdout, sys.stderr)
    real_builtins = builtins.__dict__
    restore_clear, restore_update = real_builtins.clear, real_builtins.update
    pristine_copy = dict_(pristine)
    encode = make_encoder()
    refused: list[str] = []
    guard, Refused = make_guard(refused)
    FunctionType_ = type_(make_guard)

    def restore_builtins() -> None:
        try:
            restore_clear()
            restore_update(pristine_copy)
        except BaseException_:
            pass

    def report(kind: str, **body: Any) -> None:
        restore_builtins()
        gc_disable()  # no finalizer of the program runs while reporting
        for stream in streams:  # the program's output, for the diagnostics
            try:
                stream.flush()
            except BaseException_:
                pass
        try:
            audit(REPORT_EVENT, f"{kind} {encode(body)}")
        except BaseException_:
            pass

    def describe(exc: BaseException, stage: str) -> dict[str, Any]:
        try:
            name = type_.__dict__["__name__"].__get__(type_(exc))
        except BaseException_:
            name = "?"
        try:
            message = str_(exc)[:2000]
        except BaseException_:
            message = "<the exception could not be printed>"
        body: dict[str, Any] = {"stage": stage, "exception": name, "message": message}
        tb = getattr_(exc, "__traceback__", None)
        line = None
        while tb is not None:
            if tb.tb_frame.f_code.co_filename in ("solution.py", "test.py"):
                line = (tb.tb_frame.f_code.co_filename, tb.tb_lineno)
            tb = tb.tb_next
        if line is not None:
            body["where"] = f"{line[0]}:{line[1]}"
        return body

    def failed(exc: BaseException, stage: str) -> NoReturn:
        if refused:
            report("REFUSED", stage="test", exception="UntrustedReturn", message=refused[0])
            exit_now(1)
        body = describe(exc, stage)
        if isinstance_(exc, SystemExit_):
            code = getattr_(exc, "code", None)
            if code is not None and not isinstance_(code, (int, str_)):
                code = "<object>"
            report("EXIT", stage=stage, exception="SystemExit",
                   message=f"SystemExit({code!r}) raised before the tests finished")
        elif isinstance_(exc, MemoryError_):
            report("MEMORY", **body)
        elif isinstance_(exc, AssertionError_):
            report("ASSERT", **body)
        else:
            report("ERROR", **body)
        exit_now(1)

    try:
        code = compile_(req["solution"], "solution.py", "exec", dont_inherit=True)
    except (SyntaxError_, ValueError_, MemoryError_) as exc:
        body = describe(exc, "solution")
        lineno = getattr_(exc, "lineno", None)
        if isinstance_(lineno, int):
            body["where"] = f"solution.py:{lineno}"
        report("SYNTAX", **body)
        exit_now(1)
    try:
        test_code = compile_(req["test"], "test.py", "exec", dont_inherit=True)
    except (SyntaxError_, ValueError_, MemoryError_) as exc:
        report("ERROR", **describe(exc, "test"),
               note="the example's test code does not compile")
        exit_now(1)

    install_guard()
    module = ModuleType("solution")
    namespace = module.__dict__
    namespace["__builtins__"] = dict_(pristine)
    namespace["__file__"] = "solution.py"
    modules["solution"] = module
    try:
        exec_(code, namespace)
    except BaseException_ as exc:
        failed(exc, "solution")

    # The tests run with what the program cannot have tampered with: the recursion
    # limit, the modules and the builtins as they were (a trace or profile function
    # the guard never let it set).
    restore_builtins()
    try:
        set_recursion(recursion)
        for name, mod in saved_modules.items():
            if modules.get(name) is not mod:
                modules[name] = mod
    except BaseException_ as exc:
        failed(exc, "solution")
    keep = set_(req.get("keep", ()))
    tests = dict_(namespace)
    for name in list_(tests):
        if name in pristine and name not in keep and tests[name] is not pristine[name]:
            del tests[name]  # e.g. a global ``abs`` that always returns 0
    # What the tests call of the program returns only values of exact builtin types.
    for name in keep:
        if name in tests and type_(tests[name]) is FunctionType_:
            tests[name] = guard(tests[name], name)
    tests["__builtins__"] = dict_(pristine)
    tests["__file__"] = "test.py"
    tests["__name__"] = "test"
    try:
        exec_(test_code, tests)
        call = req.get("call")
        if call:
            function, argument = call
            if argument not in namespace:
                raise NameError_(f"name {argument!r} is not defined: the solution does "
                                f"not define the entry point {argument!r}")
            tests[function](guard(namespace[argument], argument))
    except BaseException_ as exc:
        failed(exc, "test")
    if refused:  # the tests caught the refusal: it still fails the run
        report("REFUSED", stage="test", exception="UntrustedReturn", message=refused[0])
        exit_now(1)
    report("PASS")
    exit_now(0)


#: When this interpreter (the sandbox's zygote) started, before any program ran:
#: native code written later is never loaded (see install_guard).
STARTED_NS = time.time_ns()

#: The audit event by which the harness reports (see install_reporter).
REPORT_EVENT = "ctxbench.sandbox.report"

#: Audit events refused to the program (install_guard): they reach other threads'
#: frames, trace or profile frames, other objects' references, or raw memory, and
#: through them the audit hook holding the secret.
GUARDED_EVENTS = frozenset({
    "sys._current_frames", "sys._current_exceptions", "sys.settrace",
    "sys.setprofile", "sys._settraceallthreads", "sys._setprofileallthreads",
    "sys.monitoring.register_callback", "gc.get_objects", "gc.get_referrers",
    "gc.get_referents",
})


def install_reporter(secret: str) -> None:
    """Install the audit hook that alone writes reports (``secret kind body``) to
    the report pipe, and only for a ``REPORT_EVENT`` raised by the harness's own
    frame (the caller of this function) through ``report``: every frame between
    the event and that frame must run ``report`` or ``failed``. The program can
    raise the event, or call ``report``, but from a stack that holds a frame of its
    own. The secret lives only in this hook's closure; nothing lists audit hooks,
    and :func:`install_guard` refuses the ways to the hook (``gc``, frames of other
    threads, trace functions, ``ctypes``, ``/proc/self/mem``)."""
    harness_frame = sys._getframe(1)
    getframe, write, encode_ = sys._getframe, os.write, str.encode
    type_, str_, tuple_, BaseException_ = type, str, tuple, BaseException
    args_count = tuple.__len__
    event_name = REPORT_EVENT
    allowed: list[Any] = []  # code objects of report and failed, set below

    def reporter(event: str, args: tuple[Any, ...]) -> None:
        if event != event_name:
            return
        # Only names bound above: the program may have replaced any builtin.
        try:
            frame: Any = getframe(1)  # what raised the event
            while frame is not None and frame is not harness_frame:
                code = frame.f_code
                if code is not allowed[0] and code is not allowed[1]:
                    return  # raised by the program, or through it
                frame = frame.f_back
            if frame is None or type_(args) is not tuple_ or args_count(args) != 1:
                return
            if type_(args[0]) is not str_:
                return
            line = encode_(f"{secret} {args[0]}\n", "utf-8", "replace")
            while line:
                line = line[write(REPORT_FD, line):]
        except BaseException_:
            pass

    for const in harness.__code__.co_consts:
        if type(const) is type(harness.__code__) and const.co_name in ("report", "failed"):
            allowed.append(const)
    if len(allowed) != 2:  # the harness changed shape: report nothing, never a pass
        allowed[:] = [None, None]
    sys.addaudithook(reporter)


def install_guard() -> None:
    """Install the audit hook that refuses :data:`GUARDED_EVENTS`, every ``ctypes``
    event, opening ``/proc/*/mem`` (resolved, so a symlink does not help), and
    loading native code that was not on disk, unchanged, before the sandbox
    started: an extension module (the ``import`` event with a file name, raised
    by ``_imp.create_dynamic``) must be a regular file whose inode changed last
    before :data:`STARTED_NS`. A program that writes a shared object (a copy, a
    ``memfd``, a hard link: each gives the inode a new change time, which no
    unprivileged process can set back) cannot load it, so it cannot read the
    process's memory with native code either."""
    blocked = GUARDED_EVENTS
    startswith, endswith = str.startswith, str.endswith
    type_, str_, bytes_, len_ = type, str, bytes, len
    decode, realpath, stat_, is_regular = bytes.decode, os.path.realpath, os.stat, S_ISREG
    started = STARTED_NS
    PermissionError_, BaseException_ = PermissionError, BaseException

    def refuse(what: str) -> NoReturn:
        raise PermissionError_(f"{what} is not allowed in the sandbox")

    def text(path: Any) -> Any:
        return decode(path, "utf-8", "replace") if type_(path) is bytes_ else path

    def guard(event: str, args: tuple[Any, ...]) -> None:
        if event in blocked or startswith(event, "ctypes."):
            refuse(event)
        if event == "open" and args:
            path = text(args[0])
            if type_(path) is str_:
                try:
                    real = realpath(path)
                except BaseException_:
                    refuse("open")
                if startswith(real, "/proc/") and endswith(real, "/mem"):
                    refuse(f"open({path!r})")
        if event == "import" and len_(args) > 1 and args[1] is not None:
            path = text(args[1])
            what = f"loading native code from {path!r} (written after the sandbox started)"
            if type_(path) is not str_:
                refuse(what)
            try:
                st = stat_(realpath(path))
            except BaseException_:
                refuse(what)
            if not is_regular(st.st_mode) or st.st_ctime_ns >= started:
                refuse(what)

    sys.addaudithook(guard)


#: The types a value the tests receive from the program may be made of. Their
#: comparisons are the interpreter's own: the program cannot change them.
EXACT_TYPES = frozenset({
    type(None), bool, int, float, complex, str, bytes, list, tuple, dict, set,
    frozenset, range, type(Ellipsis),
})


def make_guard(refused: list[str]) -> tuple[Callable[[Any, str], Any], type]:
    """``guard(function, name)``: ``function`` whose return values are checked to be
    made only of :data:`EXACT_TYPES` (containers walked without recursion, cycles
    allowed). A refused value is recorded in ``refused`` and raises ``Refused`` (a
    ``BaseException``, so ``except Exception`` in the tests does not hide it).
    Everything used here is bound now, before the program runs."""
    type_, id_, set_, issubclass_ = type, id, set, issubclass
    BaseException_ = BaseException
    dict_values, dict_keys = dict.values, dict.keys
    append, pop, add = list.append, list.pop, set.add
    # Compared by identity: a metaclass may override __eq__ and __hash__.
    exact = frozenset(id(t) for t in EXACT_TYPES)
    containers = frozenset(id(t) for t in (list, tuple, set, frozenset))
    dict_id = id(dict)
    bases = tuple((t, t.__name__) for t in (bool, int, float, complex, str, bytes,
                                            list, tuple, dict, set, frozenset))
    name_of = type.__dict__["__qualname__"].__get__
    module_of = type.__dict__["__module__"].__get__

    class Refused(BaseException):
        pass

    def problem(value: Any) -> str | None:
        seen: set[int] = set_()
        stack = [value]
        while stack:
            item = pop(stack)
            kind = type_(item)
            kind_id = id_(kind)
            if kind_id not in exact:
                try:
                    where = f"{module_of(kind)}.{name_of(kind)}"
                except BaseException_:
                    where = "?"
                what = "not a builtin type"
                for base, base_name in bases:
                    try:
                        if issubclass_(kind, base):
                            what = f"a subclass of {base_name}"
                            break
                    except BaseException_:
                        break
                return f"an object of type {where} ({what})"
            if kind_id in containers or kind_id == dict_id:
                if id_(item) in seen:
                    continue
                add(seen, id_(item))
                if kind_id == dict_id:
                    for key in dict_keys(item):
                        append(stack, key)
                    for child in dict_values(item):
                        append(stack, child)
                else:
                    for child in item:
                        append(stack, child)
        return None

    def guard(function: Any, name: str) -> Any:
        def guarded(*args: Any, **kwargs: Any) -> Any:
            value = function(*args, **kwargs)
            found = problem(value)
            if found is not None:
                message = (f"{name}() returned {found}; the tests compare only values"
                           " of exact builtin types (int, float, str, list, dict...)")
                if not refused:
                    append(refused, message)
                raise Refused(message)
            return value

        return guarded

    return guard, Refused


def make_encoder() -> Callable[[dict[str, Any]], str]:
    """A JSON encoder for the harness's reports (flat objects of str, int, None),
    bound now: the program may replace ``json`` and its internals."""
    type_, str_, int_repr = type, str, int.__repr__
    translate, join = str.translate, str.join
    table = {i: f"\\u{i:04x}" for i in range(32)}
    table.update({ord('"'): '\\"', ord("\\"): "\\\\"})

    def text(value: str) -> str:
        return '"' + translate(value, table) + '"'

    def encode(body: dict[str, Any]) -> str:
        parts = []
        for key, value in body.items():
            kind = type_(value)
            if value is None:
                out = "null"
            elif kind is bool:
                out = "true" if value else "false"
            elif kind is int:
                out = int_repr(value)
            else:
                out = text(value if kind is str_ else "<?>")
            parts.append(text(key) + ":" + out)
        return "{" + join(",", parts) + "}"

    return encode


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
    setup_identity(config, setup)
    if sys.platform.startswith("linux"):
        # The forker holds each run's secret until it is sent: a process of the
        # same user must not read it from /proc/<pid>/mem.
        prctl(PR_SET_DUMPABLE, 0)
    forker = Forker(setup)
    # Children inherit every object; frozen, the collector in a child never walks
    # (and so never copies) the pages they live on.
    gc.collect()
    gc.freeze()
    write_frame(1, setup.report())
    serve(forker)


if __name__ == "__main__":
    main()
