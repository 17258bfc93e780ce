"""Writing files atomically (the JSON report, baselines), appending to a regular file
without ever blocking (GitHub's step summary), and the one rule for every file the
plugin reads: a regular file (after following symlinks)."""

from __future__ import annotations

import errno
import os
import stat
import tempfile
import threading
from pathlib import Path

__all__ = ["append_regular", "atomic_write_text", "not_regular", "special_file"]


def atomic_write_text(path: str | os.PathLike[str], text: str) -> None:
    """Write ``text`` (UTF-8, ``\\n`` newlines) to ``path`` through a temporary file in
    the same directory and ``os.replace``: a reader never sees half a file, and a
    failed write leaves the old file in place. Parent directories are created."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        # mkstemp creates the file 0600; the final file gets the mode any other tool
        # would give it: 0666 minus the user's umask.
        os.fchmod(fd, 0o666 & ~_umask())
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as fh:
            fh.write(text)
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def append_regular(path: str | os.PathLike[str], text: str) -> None:
    """Append ``text`` (UTF-8) to the regular file ``path``, created when missing,
    as GitHub asks of its step summary file, and never block.

    The file is opened without blocking (``O_NONBLOCK``: a FIFO with no reader
    fails at once instead of waiting forever for one) and checked once open
    (``fstat``): anything but a regular file (a FIFO, a device such as
    ``/dev/zero``, a socket) is closed unwritten.

    :raises OSError: when it cannot be opened or written, or is not a regular file.
    """
    flags = (
        os.O_WRONLY
        | os.O_APPEND
        | os.O_CREAT
        | getattr(os, "O_NONBLOCK", 0)
        | getattr(os, "O_CLOEXEC", 0)
    )
    fd = os.open(path, flags, 0o666)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not a regular file (nothing was written)")
        fh = os.fdopen(fd, "a", encoding="utf-8", newline="\n")
    except BaseException:
        os.close(fd)
        raise
    with fh:
        fh.write(text)


_UMASK_LOCK = threading.Lock()


def _umask() -> int:
    """The process umask (read by setting and restoring it, under a lock)."""
    with _UMASK_LOCK:
        mask = os.umask(0o022)
        os.umask(mask)
    return mask


_KINDS = (
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def not_regular(path: str | os.PathLike[str]) -> str | None:
    """Why ``path`` must not be read as an input file, or None.

    Symlinks are followed (a link to a regular file is fine). A FIFO would hang the
    reader, ``/dev/zero`` would fill memory, a socket cannot be read at all: each
    is refused before it is opened. A missing path or a directory gives None (the
    caller's own message names those).

    :return: e.g. ``"it is a FIFO (named pipe), not a regular file"``.
    """
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return None
    if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
        return None
    kind = next((name for test, name in _KINDS if test(mode)), "not a regular file")
    return f"it is {kind}, not a regular file; give the path of a file"


def special_file(path: str | os.PathLike[str]) -> str | None:
    """What ``path`` is when it exists and is not a regular file (symlinks
    followed): ``"a FIFO (named pipe)"``, ``"a character device"``, ``"a
    directory"``...; ``None`` for a regular file or a missing path. Only ``stat``:
    nothing is opened (opening a FIFO for writing blocks until a reader comes).
    For an output the plugin appends to (GitHub's step summary)."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return None
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISDIR(mode):
        return "a directory"
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")
