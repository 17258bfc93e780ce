"""Connections a System opens around the LLM cache, seen through Python's audit hooks.

A System whose client is not ours (``OpenAI(...)`` without ``http_client=``, its own
``httpx`` or ``requests`` session, a raw socket) sends past the cache: nothing is
cached or metered, and under ``--ctxbench-cache=replay`` it would reach the network.
While a System call runs (:func:`watching`, around ``process()``), every
``socket.connect`` audit event (``connect`` and ``connect_ex``), and every datagram
sent to an address (``socket.sendto``, ``socket.sendmsg``), of an ``AF_INET`` or
``AF_INET6`` socket is checked, unless our own transports make it (:func:`ours`) or
its address is allowed (:func:`allow`, ``--ctxbench-replay-allow``):

- in ``replay`` it is refused before anything is sent:
  :class:`ReplayConnectionRefused` is raised from the connect, and recorded on the
  call, so the example is an error row whatever the System made of the exception
  (``engine.attach_usage``);
- in ``once`` and ``refresh`` it goes ahead and is counted on the call (the run's
  summary says how many, once).

The hook is added once per process (audit hooks cannot be removed) and does nothing
but a set lookup outside a watched call. The watch is a :mod:`contextvars` variable:
it follows the call into the runner's thread or task and into the asyncio tasks the
System creates, not into threads the System starts itself (their connects are not
seen). A C extension that opens sockets without Python's ``socket`` module, a
subprocess, and a connection opened before the call and kept alive (a pooled
client used at import time) are not seen either (docs/cache.md).
"""

from __future__ import annotations

import contextlib
import contextvars
import sys
import threading
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from .errors import CtxBenchError

__all__ = [
    "REFUSED_TYPE",
    "ReplayConnectionRefused",
    "allow",
    "ours",
    "parse_address",
    "watching",
]

#: The flag that allows an address, named in messages.
ALLOW_FLAG = "--ctxbench-replay-allow"
#: ``EvalRow.error["type"]`` of a refused connection.
REFUSED_TYPE = "pytest_context_bench.netguard.ReplayConnectionRefused"

_EVENTS = frozenset({"socket.connect", "socket.sendto", "socket.sendmsg"})


class ReplayConnectionRefused(CtxBenchError):
    """A connection a System call opened itself, past the LLM cache, under
    ``--ctxbench-cache=replay``: refused before anything was sent.

    :param address: ``host:port`` (``[host]:port`` for IPv6).
    """

    def __init__(self, address: str) -> None:
        self.address = address
        super().__init__(
            f"replay mode refused a connection to {address} that did not go through"
            " the LLM cache; nothing was sent. The System's client is not ours (an"
            " SDK built without http_client=, its own HTTP session or socket):"
            " build the client with http_client() so that its calls go through the"
            " cache (OpenAI(http_client=pytest_context_bench.http_client()), or the"
            " ctxbench_http_client fixture), or allow the address with"
            f" {ALLOW_FLAG}={address} (a local service such as a vector store)."
        )


@dataclass(frozen=True)
class _Watch:
    usage: list[dict[str, Any]]  # the call's CallScope.usage
    refuse: bool


_WATCH: contextvars.ContextVar[_Watch | None] = contextvars.ContextVar(
    "ctxbench_netguard_watch", default=None
)
_OURS: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "ctxbench_netguard_ours", default=False
)
_INSTALLED: list[bool] = [False]
_LOCK = threading.Lock()
#: (host, port) allowed: IP addresses in their normal form, or lower-case names
_ALLOWED: list[tuple[str, int]] = []
#: name → its addresses, resolved on first need
_RESOLVED: dict[str, frozenset[str]] = {}
#: the watches in force in this process (id → watch): whose is a connection made
#: from a thread the System started (no context)
_LIVE: dict[int, _Watch] = {}


def _mode() -> str | None:
    """The active LLM cache's mode, without importing the cache module (a run that
    never activated one has not imported it)."""
    module = sys.modules.get("pytest_context_bench.cache")
    cache = None if module is None else module.active_cache()
    mode = None if cache is None else str(cache.mode)
    return mode if mode in ("replay", "once", "refresh") else None


class watching:  # noqa: N801 (used as a function: ``with watching(usage):``)
    """Watch the connections made in this context during the block (a System
    call), recording each one that bypasses the cache in ``usage`` (the call's
    ``CallScope.usage``) and refusing it in ``replay`` mode. A no-op without an
    active cache in ``replay``, ``once`` or ``refresh`` mode.

    A class rather than a generator: it wraps every System call."""

    __slots__ = ("_usage", "_watch", "_token")

    def __init__(self, usage: list[dict[str, Any]] | None) -> None:
        self._usage = usage
        self._watch: _Watch | None = None

    def __enter__(self) -> None:
        mode = _mode() if self._usage is not None else None
        if mode is None or self._usage is None:
            return
        _install()
        watch = _Watch(self._usage, mode == "replay")
        self._token = _WATCH.set(watch)
        with _LOCK:
            _LIVE[id(watch)] = watch
        self._watch = watch

    def __exit__(self, *exc: object) -> None:
        watch = self._watch
        if watch is None:
            return
        with _LOCK:
            _LIVE.pop(id(watch), None)
        _WATCH.reset(self._token)


@contextlib.contextmanager
def ours(yes: bool = True) -> Iterator[None]:
    """The connections made in this context during the block are the cache
    transport's own (``yes`` false: they are not, e.g. a transport built with
    ``cache=None``)."""
    token = _OURS.set(yes)
    try:
        yield
    finally:
        _OURS.reset(token)


def allow(addresses: Iterable[tuple[str, int]]) -> list[tuple[str, int]]:
    """Allow connections to ``addresses`` (``(host, port)``; a host name is
    resolved on first need) in every mode; returns the list before (to restore)."""
    with _LOCK:
        before = list(_ALLOWED)
        _ALLOWED[:] = [(_normal(h), int(p)) for h, p in addresses]
        _RESOLVED.clear()
    return before


def parse_address(text: str) -> tuple[str, int]:
    """``HOST:PORT`` (``[IPv6]:PORT``) → ``(host, port)``.

    :raises ValueError: anything else (no port, a port outside 1..65535, an IPv6
        address without brackets).
    """
    raw = text.strip()
    host, sep, port = raw.rpartition(":")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    elif ":" in host:
        host = ""  # an IPv6 address needs brackets: [::1]:8000
    if not (sep and host and port.isdigit() and 1 <= int(port) <= 65535):
        raise ValueError(
            "expected HOST:PORT (e.g. 127.0.0.1:6333, localhost:6333 or [::1]:6333,"
            f" the port in 1..65535), given: {text!r}"
        )
    return host, int(port)


def _normal(host: str) -> str:
    import ipaddress

    host = host.strip("[]").lower().rstrip(".")
    try:
        ip = ipaddress.ip_address(host.partition("%")[0])
    except ValueError:
        return host
    mapped = getattr(ip, "ipv4_mapped", None)
    return str(mapped or ip)


def _allowed(host: str, port: int) -> bool:
    with _LOCK:
        wanted = [h for h, p in _ALLOWED if p == port]
    if not wanted:
        return False
    ip = _normal(host)
    return any(ip == h or ip in _addresses(h) for h in wanted)


def _addresses(name: str) -> frozenset[str]:
    """The addresses a name in the allow-list resolves to (once per process)."""
    with _LOCK:
        known = _RESOLVED.get(name)
    if known is not None:
        return known
    import socket

    try:
        infos = socket.getaddrinfo(name, None)
        found = frozenset(_normal(str(info[4][0])) for info in infos)
    except (OSError, UnicodeError):
        found = frozenset()
    with _LOCK:
        _RESOLVED[name] = found
    return found


def _install() -> None:
    if not _INSTALLED[0]:
        with _LOCK:
            if not _INSTALLED[0]:
                sys.addaudithook(_hook)
                _INSTALLED[0] = True


def _hook(event: str, args: tuple[Any, ...]) -> None:
    # Called for every audit event of the process: a set lookup, then out.
    if event not in _EVENTS:
        return
    watch = _WATCH.get()
    if _OURS.get() or (watch is None and not _LIVE):
        return
    _check(watch, args)


def _owner() -> tuple[bool, _Watch | None]:
    """Whether a connection made outside any watched context is watched, and
    whose it is: a thread with an empty context (one the System started:
    ``threading.Thread``, an executor) while calls are watched is; it belongs to
    the one call watched in this process, or to none known (several: the run's).
    The main thread, or code running for an example outside its System call (an
    evaluator, a test body), is not watched."""
    from .calls import current_call

    if threading.current_thread() is threading.main_thread() or current_call():
        return False, None
    with _LOCK:
        live = list(_LIVE.values())
    return bool(live), live[0] if len(live) == 1 else None


def _check(watch: _Watch | None, args: tuple[Any, ...]) -> None:
    import socket

    sock, address = args[0], args[1]
    if getattr(sock, "family", None) not in (socket.AF_INET, socket.AF_INET6):
        return  # AF_UNIX and the others: nothing leaves the machine
    if not isinstance(address, tuple) or len(address) < 2:
        return  # sendmsg without an address (a connected socket: seen at connect)
    host, port = str(address[0]), int(address[1])
    if watch is not None and _LIVE.get(id(watch)) is not watch:
        watch = None  # a context kept from a call that has ended (a task left running)
    watched, owner = (True, watch) if watch is not None else _owner()
    if not watched or _allowed(host, port):
        return
    shown = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    refuse = _mode() == "replay" if owner is None else owner.refuse
    entry: dict[str, Any] = {"bypass": shown, "refused": refuse}
    if owner is None:
        # Several calls watched, none known to be this one's: counted for the run.
        from .calls import record_unattributed

        record_unattributed(entry)
    if not refuse:
        if owner is not None:
            owner.usage.append(entry)
        return
    refused = ReplayConnectionRefused(shown)
    if owner is not None:
        owner.usage.append({**entry, "exception": refused})
    raise refused
