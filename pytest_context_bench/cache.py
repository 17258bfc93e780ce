"""A record/replay cache of LLM responses, keyed by what is sent.

:class:`CacheStore` is one SQLite file (WAL journal) that many processes (xdist
workers) read and write at once. :class:`LLMCache` puts a mode on a store and counts
what happened; the HTTP transports of :mod:`pytest_context_bench.transports` consult
it for every request. The module promises:

- **never stale**: the key is a SHA-256 of the method, the whole URL (every query
  parameter, sorted; the port of a loopback host left out; :func:`key_url`), the
  JSON body in canonical form (keys sorted,
  no insignificant whitespace) and the trial index of the call (see
  :mod:`pytest_context_bench.transports`). A changed prompt, model, temperature,
  tool list or URL parameter is a different key;
- **no secret stored**: neither request headers nor the request body are stored (the
  key is a one-way hash); the URL column is :func:`clean_url` (no user info, no
  secret-named parameter); of the response, only its status, content type and body;
- **only good answers stored**: 2xx JSON replies, and 2xx streamed replies
  (``text/event-stream``) read to their end, as their events; errors, 429/5xx,
  non-JSON bodies and streams broken off or abandoned pass through uncached;
- **a bad file is one clear line**: a file that is not SQLite, a SQLite file of
  another program or one written by a newer schema raises :class:`CacheFileError`
  naming the file and the fix; every entry carries its creation time and the
  package version that wrote it. :meth:`CacheStore.remove` deletes such a file
  (``ctxbench cache clear``);
- **never written through a link**: a cache file (or its ``-wal``, ``-shm`` or
  ``-journal`` companion) that is a symbolic link raises :class:`CacheFileError`
  before SQLite opens it: SQLite would follow it, create a dangling link's target
  elsewhere, or turn the file it points to into a database.

Modes (:data:`MODES`) and their pytest-recording/vcrpy ``--record-mode`` twins:
``once`` (replay hits, record misses; vcrpy ``new_episodes``), ``replay`` (hits only;
a miss raises :class:`CacheMiss` and nothing is sent; vcrpy ``none``), ``refresh``
(send everything, overwrite; vcrpy ``all``), ``off`` (no cache).
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import sqlite3
import stat
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import SplitResult, parse_qsl, urlencode, urlsplit, urlunsplit

from . import __version__
from .errors import CtxBenchError
from .urls import secret_name

__all__ = [
    "CACHE_FILE",
    "MODES",
    "SCHEMA_VERSION",
    "CacheFileError",
    "CacheLinkError",
    "CacheMiss",
    "CacheStats",
    "CacheStore",
    "CachedResponse",
    "LLMCache",
    "active_cache",
    "cache_key",
    "canonical_body",
    "clean_url",
    "is_loopback",
    "key_url",
    "parse_age",
    "set_active_cache",
]

#: mode → what it does; see the module docstring.
MODES: dict[str, str] = {
    "once": "replay what is cached, call and record what is not",
    "replay": "replay what is cached; a miss is an error and nothing is called",
    "refresh": "call everything again and overwrite the cached replies",
    "off": "no cache",
}
#: the on-disk schema this version reads and writes (``PRAGMA user_version``).
SCHEMA_VERSION = 1
#: ``PRAGMA application_id`` of our files ("ctxb"): a SQLite file of another program
#: is told apart from ours.
APPLICATION_ID = 0x63747862
#: the file name inside the cache directory.
CACHE_FILE = "llm-cache.sqlite3"

class _Locked(Exception):
    """Internal: the file was locked while being set up; try again."""


class CacheFileError(CtxBenchError):
    """The cache file cannot be used (not SQLite, another program's, a newer schema,
    unwritable); the message names the file and the fix."""


class CacheLinkError(CacheFileError):
    """The cache file (or a companion of it) is a symbolic link: never followed."""


#: SQLite's companion files of a database (write-ahead log, shared memory, journal).
_COMPANIONS = ("", "-wal", "-shm", "-journal")


class CacheMiss(CtxBenchError):
    """A request not in the cache under ``--ctxbench-cache=replay`` (nothing was sent).

    :param method: the HTTP method.
    :param url: the URL, without credentials.
    :param key: the cache key (hex).
    :param trial: the trial index in the key.
    :param path: the cache file.
    """

    def __init__(
        self,
        method: str,
        url: str,
        key: str,
        trial: int,
        path: Path,
        other_hosts: Sequence[str] = (),
    ) -> None:
        self.method, self.url, self.key, self.trial, self.path = (
            method,
            url,
            key,
            trial,
            path,
        )
        self.other_hosts = list(other_hosts)
        said = (
            f"cache miss in replay mode: {method} {url} (trial {trial}, key"
            f" {key[:12]}) is not in {path}; nothing was sent."
        )
        if self.other_hosts:
            said += (
                " The same request was recorded for another host:"
                f" {', '.join(self.other_hosts)}; only the host differs (the key"
                " holds the scheme and host, and the port unless the host is"
                " loopback). Point the System at the recorded host, or record this"
                " one with --ctxbench-cache=once."
            )
        else:
            said += (
                " The request differs from every recorded one (a changed prompt,"
                " model or parameter); record it with --ctxbench-cache=once."
            )
        super().__init__(said)


def _split_url(url: str) -> tuple[SplitResult, str]:
    """(parts, netloc without user info, host and scheme lower case)."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    netloc = f"{host}:{parts.port}" if parts.port is not None else host
    return parts, netloc.lower()


def clean_url(url: str) -> str:
    """``url`` as the cache writes it (its ``url`` column, a :class:`CacheMiss`):
    without user info, fragment and query parameters whose names are secrets
    (:func:`~pytest_context_bench.urls.secret_name`: ``key``, ``api-key``,
    ``token``, ``sig``...); other parameters are kept, sorted.

    :param url: any URL.
    """
    parts, netloc = _split_url(url)
    query = urlencode(
        sorted(
            (k, v)
            for k, v in parse_qsl(parts.query, keep_blank_values=True)
            if not secret_name(k)
        )
    )
    return urlunsplit((parts.scheme.lower(), netloc, parts.path, query, ""))


@functools.lru_cache(maxsize=256)
def _sealed(name: str, value: str) -> str:
    """A credential's stand-in in :func:`key_url`: scrypt of ``value`` (salted with
    the parameter's name; 16 MiB, about 50 ms, once per distinct value and process).
    Two values give two stand-ins, and guessing a short secret from a cache key
    costs a slow, memory-hard hash per guess rather than one SHA-256."""
    digest = hashlib.scrypt(
        value.encode("utf-8"),
        salt=f"ctxbench-cache-credential/{name}".encode(),
        n=2**14,
        r=8,
        p=1,
        dklen=32,
    )
    return "sealed:" + digest.hex()


def is_loopback(host: str) -> bool:
    """``localhost`` (or a name under it), ``127.0.0.0/8`` or ``::1``."""
    import ipaddress

    host = host.strip("[]").lower().rstrip(".")
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def key_url(url: str, *, any_host: bool = False) -> str:
    """``url`` as the cache key sees it: every query parameter, sorted (the value
    of a secret-named one, and the user info, replaced by a slow salted hash of it,
    :func:`_sealed`); scheme and host in lower case; no fragment (it is never sent);
    no port when the host is loopback (:func:`is_loopback`: a local model server
    started on another free port replays the same entries). Two URLs a server can
    tell apart have two keys. Never written anywhere: only the SHA-256 of it, with
    the rest of the request, is (:func:`cache_key`).

    :param url: any URL.
    :param any_host: leave the host and port out (``*``): the key of the same
        request at any host, with which a replay miss finds the host it was recorded
        for.
    """
    parts, netloc = _split_url(url)
    if any_host:
        netloc = "*"
    elif parts.port is not None and is_loopback(parts.hostname or ""):
        netloc = netloc.rpartition(":")[0]
    query = urlencode(
        sorted(
            (k, _sealed(k, v) if secret_name(k) else v)
            for k, v in parse_qsl(parts.query, keep_blank_values=True)
        )
    )
    if "@" in parts.netloc:
        netloc = f"{_sealed('@', parts.netloc.rpartition('@')[0])}@{netloc}"
    return urlunsplit((parts.scheme.lower(), netloc, parts.path, query, ""))


def canonical_body(body: bytes) -> bytes | None:
    """The JSON ``body`` in canonical form (sorted keys, compact), or ``None`` when
    it is not JSON. An empty body stays empty.

    :param body: the request body.
    """
    if not body:
        return b""
    try:
        value = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        return None
    return json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=False
    ).encode("utf-8")


def cache_key(
    method: str,
    url: str,
    body: bytes,
    trial: int,
    *,
    any_host: bool = False,
    repeat: int = 1,
) -> str:
    """The cache key of a request: SHA-256 (hex) of the method, :func:`key_url` of
    the URL (every parameter, credentials included: only this one-way hash of it is
    stored), the canonical body, the trial index and the judge repeat.

    :param method: the HTTP method.
    :param url: the request URL.
    :param body: the canonical request body (:func:`canonical_body`).
    :param trial: the trial index (1-based).
    :param any_host: the key without host and port (stored beside each entry, so
        that a replay miss can say the request was recorded for another host).
    :param repeat: which repeat of a judge's question (``--ctxbench-judge-repeat``,
        1-based); the first has the key of a question asked once.
    """
    h = hashlib.sha256()
    for part in (
        f"ctxbench-cache/{SCHEMA_VERSION}",
        method.upper(),
        key_url(url, any_host=any_host),
        str(int(trial)) if repeat <= 1 else f"{int(trial)}/repeat {int(repeat)}",
    ):
        h.update(part.encode("utf-8"))
        h.update(b"\0")
    h.update(body)
    return h.hexdigest()


@dataclass(frozen=True)
class CachedResponse:
    """One stored reply.

    :param status: the HTTP status (2xx).
    :param content_type: the reply's ``Content-Type``.
    :param body: the decoded reply body.
    :param created: when it was recorded (seconds since the epoch).
    :param version: the package version that recorded it.
    """

    status: int
    content_type: str
    body: bytes
    created: float
    version: str


_SCHEMA = """
CREATE TABLE IF NOT EXISTS entries (
    key TEXT PRIMARY KEY,
    method TEXT NOT NULL,
    url TEXT NOT NULL,
    status INTEGER NOT NULL,
    content_type TEXT NOT NULL,
    body BLOB NOT NULL,
    created REAL NOT NULL,
    version TEXT NOT NULL,
    hostless TEXT
)
"""
#: the key of the same request at any host (:func:`cache_key` ``any_host``); added
#: to files created before it (an old reader writes NULL there: no harm).
_HOSTLESS = [
    "ALTER TABLE entries ADD COLUMN hostless TEXT",
    "CREATE INDEX IF NOT EXISTS entries_hostless ON entries (hostless)",
]


class CacheStore:
    """The entries of one SQLite file, shared by threads and processes.

    Opened lazily (nothing is created until the first lookup or store), reopened after
    a fork. Writers wait for each other (``busy_timeout``) rather than fail; each
    store is one autocommit ``INSERT OR REPLACE``, so concurrent writers lose nothing.

    :param path: the SQLite file.
    :raises CacheFileError: (on first use) when the file cannot be used.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None
        self._pid = -1

    def __repr__(self) -> str:
        return f"CacheStore({str(self.path)!r})"

    def _bad(self, what: str) -> CacheFileError:
        return CacheFileError(
            f"the LLM cache {self.path} {what}; the run goes on without the cache."
            f" Delete the file (or run `ctxbench cache clear --dir {self.path.parent}`)"
            " to start a new one, or point --ctxbench-cache-dir elsewhere."
        )

    def _files(self) -> list[Path]:
        """The cache file and its SQLite companions (which may not exist)."""
        return [Path(f"{self.path}{suffix}") for suffix in _COMPANIONS]

    def check_links(self) -> None:
        """Refuse a cache file, or a companion of it, that is a symbolic link.

        :raises CacheLinkError: naming the link and where it points.
        """
        for p in self._files():
            if p.is_symlink():
                raise CacheLinkError(
                    f"the LLM cache {p} is a symbolic link (to {os.readlink(p)});"
                    " a cache file is never written through a link; the run goes on"
                    " without the cache. Remove the link, or point"
                    " --ctxbench-cache-dir at a directory of its own."
                )

    def _connect(self) -> sqlite3.Connection:
        if self._conn is not None and self._pid == os.getpid():
            return self._conn
        self.check_links()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise CacheFileError(
                f"cannot create the LLM cache directory {self.path.parent}:"
                f" {exc.strerror or exc}; point --ctxbench-cache-dir at a writable"
                " directory."
            ) from None
        try:
            conn = sqlite3.connect(
                self.path, timeout=60.0, isolation_level=None, check_same_thread=False
            )
        except sqlite3.Error as exc:
            raise self._bad(f"cannot be opened ({exc})") from None
        try:
            for attempt in range(50):
                try:
                    self._check(conn)
                    break
                except _Locked:
                    # Two processes creating the file at once: switching to WAL
                    # can report "locked" without waiting for busy_timeout.
                    time.sleep(0.05 * (1 + attempt % 5))
            else:
                raise self._bad("stayed locked by another process for 10 s")
        except BaseException:
            conn.close()
            raise
        self._conn, self._pid = conn, os.getpid()
        return conn

    def _check(self, conn: sqlite3.Connection) -> None:
        try:
            conn.execute("PRAGMA busy_timeout = 60000")
            # One snapshot for the three reads: read one by one, another process
            # creating the file in between could show its table without its
            # application id ("another program's file").
            conn.execute("BEGIN")
            try:
                app = conn.execute("PRAGMA application_id").fetchone()[0]
                version = conn.execute("PRAGMA user_version").fetchone()[0]
                tables = [
                    r[0]
                    for r in conn.execute(
                        "SELECT name FROM sqlite_master WHERE type = 'table'"
                    )
                ]
            finally:
                if conn.in_transaction:
                    conn.execute("COMMIT")
        except sqlite3.DatabaseError as exc:
            if "locked" in str(exc) or "busy" in str(exc):
                raise _Locked() from None
            raise self._bad(f"is not a SQLite database or is damaged ({exc})") from None
        if app != APPLICATION_ID and (tables or version):
            raise self._bad(
                "belongs to another program (not a pytest-context-bench cache)"
            )
        if version > SCHEMA_VERSION:
            raise self._bad(
                f"was written by a newer pytest-context-bench (cache schema {version};"
                f" this version {__version__} reads schema {SCHEMA_VERSION})"
            )
        try:
            if conn.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
                conn.execute("PRAGMA journal_mode = WAL")
            conn.execute("PRAGMA synchronous = NORMAL")
            if app != APPLICATION_ID:
                conn.execute("BEGIN IMMEDIATE")
                try:
                    conn.execute(_SCHEMA)
                    conn.execute(_HOSTLESS[1])
                    conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
                    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
                    conn.execute("COMMIT")
                except BaseException:
                    conn.execute("ROLLBACK")
                    raise
            self._add_hostless(conn)
            # A damaged page shows here rather than in the middle of the run.
            conn.execute("SELECT count(*) FROM entries").fetchone()
        except sqlite3.OperationalError as exc:
            if "locked" in str(exc) or "busy" in str(exc):
                raise _Locked() from None
            if "readonly" in str(exc) or "read-only" in str(exc):
                raise self._bad(f"is read-only ({exc})") from None
            raise self._bad(f"cannot be used ({exc})") from None
        except sqlite3.DatabaseError as exc:
            raise self._bad(f"is damaged ({exc})") from None

    def _add_hostless(self, conn: sqlite3.Connection) -> None:
        """Add the ``hostless`` column to a file written before it (once)."""
        columns = [r[1] for r in conn.execute("PRAGMA table_info(entries)")]
        if "hostless" in columns:
            return
        conn.execute("BEGIN IMMEDIATE")
        try:
            columns = [r[1] for r in conn.execute("PRAGMA table_info(entries)")]
            if "hostless" not in columns:
                for statement in _HOSTLESS:
                    conn.execute(statement)
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise

    def other_hosts(self, hostless: str, limit: int = 3) -> list[str]:
        """The URLs (:func:`clean_url`) of entries recorded for the same request at
        another host: those whose ``hostless`` key is ``hostless``."""
        with self._lock:
            conn = self._connect()
            try:
                rows = conn.execute(
                    "SELECT DISTINCT url FROM entries WHERE hostless = ? LIMIT ?",
                    (hostless, limit),
                ).fetchall()
            except sqlite3.DatabaseError as exc:
                raise self._bad(f"cannot be read ({exc})") from None
        return [str(r[0]) for r in rows]

    def get(self, key: str) -> CachedResponse | None:
        """The entry stored under ``key``, or ``None``."""
        with self._lock:
            conn = self._connect()
            try:
                row = conn.execute(
                    "SELECT status, content_type, body, created, version FROM entries"
                    " WHERE key = ?",
                    (key,),
                ).fetchone()
            except sqlite3.DatabaseError as exc:
                raise self._bad(f"cannot be read ({exc})") from None
        if row is None:
            return None
        return CachedResponse(
            int(row[0]), str(row[1]), bytes(row[2]), float(row[3]), str(row[4])
        )

    def put(
        self,
        key: str,
        method: str,
        url: str,
        response: CachedResponse,
        hostless: str | None = None,
    ) -> None:
        """Store (or overwrite) ``response`` under ``key`` (``hostless``: the key of
        the same request at any host, :meth:`other_hosts`)."""
        with self._lock:
            conn = self._connect()
            try:
                conn.execute(
                    "INSERT OR REPLACE INTO entries (key, method, url, status,"
                    " content_type, body, created, version, hostless)"
                    " VALUES (?,?,?,?,?,?,?,?,?)",
                    (
                        key,
                        method.upper(),
                        clean_url(url),
                        response.status,
                        response.content_type,
                        response.body,
                        response.created,
                        response.version,
                        hostless,
                    ),
                )
            except sqlite3.DatabaseError as exc:
                raise self._bad(f"cannot be written ({exc})") from None

    def info(self) -> dict[str, Any]:
        """Entries, bytes on disk, oldest and newest entry, versions and endpoints."""
        self.check_links()
        size = sum(
            p.stat().st_size
            for p in (self.path, Path(f"{self.path}-wal"))
            if p.exists()
        )
        if not self.path.exists():
            return {"path": str(self.path), "entries": 0, "bytes": 0}
        with self._lock:
            conn = self._connect()
            n, oldest, newest = conn.execute(
                "SELECT count(*), min(created), max(created) FROM entries"
            ).fetchone()
            urls = conn.execute(
                "SELECT method, url, count(*) FROM entries GROUP BY method, url"
                " ORDER BY 3 DESC"
            ).fetchall()
            versions = conn.execute(
                "SELECT version, count(*) FROM entries GROUP BY version ORDER BY 1"
            ).fetchall()
        return {
            "path": str(self.path),
            "schema_version": SCHEMA_VERSION,
            "entries": int(n),
            "bytes": size,
            "oldest": oldest,
            "newest": newest,
            "endpoints": [{"method": m, "url": u, "entries": c} for m, u, c in urls],
            "versions": {v: c for v, c in versions},
        }

    def clear(self, older_than: float | None = None) -> int:
        """Delete every entry (or those older than ``older_than`` seconds); returns
        how many were deleted."""
        self.check_links()
        if not self.path.exists():
            return 0
        with self._lock:
            conn = self._connect()
            if older_than is None:
                cur = conn.execute("DELETE FROM entries")
            else:
                cur = conn.execute(
                    "DELETE FROM entries WHERE created < ?", (time.time() - older_than,)
                )
            deleted = cur.rowcount
            conn.execute("VACUUM")
        return int(deleted)

    def remove(self) -> list[Path]:
        """Delete the cache file and its SQLite companions, whatever they hold (a
        damaged file, another program's database at our path, a newer schema): what
        ``ctxbench cache clear`` does when the entries cannot be read. Only regular
        files named as our cache file are deleted; returns those deleted.

        :raises CacheFileError: a link (:class:`CacheLinkError`), something other
            than a regular file at that path, or a file that cannot be deleted.
        """
        self.check_links()
        self.close()
        removed: list[Path] = []
        for p in self._files():
            try:
                mode = p.lstat().st_mode
            except FileNotFoundError:
                continue
            except OSError as exc:
                raise CacheFileError(
                    f"cannot read {p}: {exc.strerror or exc}."
                ) from None
            if not stat.S_ISREG(mode):
                raise CacheFileError(
                    f"{p} is not a regular file (a directory, a FIFO, a device);"
                    " it is left alone: remove it yourself."
                )
            try:
                p.unlink()
            except FileNotFoundError:
                continue
            except OSError as exc:
                raise CacheFileError(
                    f"cannot delete {p}: {exc.strerror or exc}."
                ) from None
            removed.append(p)
        return removed

    def close(self) -> None:
        """Close the connection (reopened on next use)."""
        with self._lock:
            conn, self._conn = self._conn, None
            if conn is not None and self._pid == os.getpid():
                conn.close()


@dataclass
class CacheStats:
    """What a cache did in this process."""

    hits: int = 0
    misses: int = 0
    stored: int = 0
    uncacheable: int = 0

    def as_dict(self) -> dict[str, int]:
        return {
            "hits": self.hits,
            "misses": self.misses,
            "stored": self.stored,
            "uncacheable": self.uncacheable,
        }


@dataclass
class LLMCache:
    """A :class:`CacheStore` with a mode.

    :param path: the SQLite file (``<dir>/llm-cache.sqlite3``).
    :param mode: one of :data:`MODES` (``off`` is accepted: nothing is looked up).
    """

    path: Path
    mode: str = "once"
    stats: CacheStats = field(default_factory=CacheStats)
    #: set once the file turned out unusable: the message said, then no cache.
    broken: str | None = None

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ValueError(
                f"unknown cache mode {self.mode!r}; expected one of {', '.join(MODES)}."
            )
        self.path = Path(self.path)
        self.store = CacheStore(self.path)
        self._lock = threading.Lock()

    @classmethod
    def in_dir(cls, directory: str | os.PathLike[str], mode: str = "once") -> LLMCache:
        """The cache file of ``directory``."""
        return cls(Path(directory) / CACHE_FILE, mode)

    @property
    def enabled(self) -> bool:
        return self.mode != "off" and self.broken is None

    def count(self, what: str) -> None:
        with self._lock:
            setattr(self.stats, what, getattr(self.stats, what) + 1)


_ACTIVE: LLMCache | None = None


def active_cache() -> LLMCache | None:
    """The cache of the run in progress (set by the pytest plugin), or ``None``."""
    return _ACTIVE


def set_active_cache(cache: LLMCache | None) -> LLMCache | None:
    """Make ``cache`` the one the transports use when given none; returns the
    previous one."""
    global _ACTIVE
    previous, _ACTIVE = _ACTIVE, cache
    return previous


_AGE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhdw])\s*$")
_UNIT = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def parse_age(text: str) -> float:
    """Seconds in ``30d``, ``12h``, ``90m``, ``45s`` or ``2w``.

    :raises ValueError: for anything else.
    """
    m = _AGE.match(text)
    if not m:
        raise ValueError(
            f"{text!r} is not an age; give a number and a unit s, m, h, d or w, e.g. 30d."
        )
    return float(m.group(1)) * _UNIT[m.group(2)]
