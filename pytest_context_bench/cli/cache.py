"""``ctxbench cache info|clear``: look at or empty the LLM response cache.

The cache file is ``<dir>/llm-cache.sqlite3``; ``--dir`` defaults to
``.pytest_cache/d/ctxbench`` under the current directory (where a pytest run from the
project root puts it, unless ``--ctxbench-cache-dir`` or pytest's ``cache_dir`` says
otherwise). ``clear`` on a file whose entries cannot be read (damaged, another
program's, a newer schema) deletes the file; a symbolic link is refused, never
followed.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
from pathlib import Path

from .._text import inert
from ..cache import CACHE_FILE, CacheFileError, CacheLinkError, CacheStore, parse_age

__all__ = ["add_parser", "run"]

DEFAULT_DIR = Path(".pytest_cache") / "d" / "ctxbench"


def _age(text: str) -> float:
    try:
        return parse_age(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def add_parser(parser: argparse.ArgumentParser) -> None:
    subs = parser.add_subparsers(dest="action", metavar="ACTION")
    subs.required = True
    for name, help_text in (
        ("info", "Show the cache file: entries, size, age, endpoints."),
        ("clear", "Delete the cache's entries (all, or those older than an age)."),
    ):
        sub = subs.add_parser(name, help=help_text, description=help_text)
        sub.add_argument(
            "--dir",
            type=Path,
            default=DEFAULT_DIR,
            help=f"The cache directory (default: {DEFAULT_DIR}).",
        )
        if name == "info":
            sub.add_argument("--json", action="store_true", help="Print JSON.")
        else:
            sub.add_argument(
                "--older-than",
                type=_age,
                default=None,
                metavar="AGE",
                help="Only entries older than AGE (30d, 12h, 90m, 2w).",
            )


def _when(ts: float | None) -> str:
    if ts is None:
        return "-"
    return dt.datetime.fromtimestamp(ts, dt.timezone.utc).strftime(
        "%Y-%m-%d %H:%M:%S UTC"
    )


def _message(exc: CacheFileError) -> str:
    return inert(
        f"ctxbench cache: {exc}".replace("; the run goes on without the cache.", ".")
    )


def _clear_unreadable(
    store: CacheStore, directory: Path, older_than: float | None, exc: CacheFileError
) -> int:
    """``clear`` of a cache file whose entries cannot be read: delete the file (all
    of it: nothing in it can be kept), or refuse ``--older-than``."""
    reason = str(exc).split("; the run goes on", 1)[0]
    if older_than is not None:
        print(
            f"ctxbench cache: {reason}; its entries cannot be told apart by age. Run"
            f" `ctxbench cache clear --dir {directory}` (without --older-than) to"
            " delete the whole file.",
            file=sys.stderr,
        )
        return 4
    try:
        removed = store.remove()
    except CacheFileError as err:
        print(_message(err), file=sys.stderr)
        return 4
    what = reason.replace(f"the LLM cache {store.path} ", "", 1)
    print(inert(f"deleted {', '.join(str(p) for p in removed)}: the file {what}"))
    return 0


def run(args: argparse.Namespace) -> int:
    directory: Path = args.dir
    if directory.exists() and not directory.is_dir():
        print(f"ctxbench cache: --dir {directory} is not a directory", file=sys.stderr)
        return 4
    path = directory / CACHE_FILE
    store = CacheStore(path)
    try:
        if args.action == "clear":
            try:
                deleted = store.clear(args.older_than)
            except CacheLinkError:
                raise
            except CacheFileError as exc:
                return _clear_unreadable(store, directory, args.older_than, exc)
            what = "" if args.older_than is None else " older than the given age"
            print(
                f"deleted {deleted} entr{'y' if deleted == 1 else 'ies'}{what} from"
                f" {inert(str(path))}"
            )
            return 0
        info = store.info()
    except CacheFileError as exc:
        print(_message(exc), file=sys.stderr)
        return 4
    finally:
        store.close()
    if args.json:
        print(json.dumps(info, indent=2, sort_keys=True))
        return 0
    # The file's contents (and its path) are data, shown, never acted on: an escape
    # sequence in a stored URL or version reaches a CI log as `\x1b`, not as ESC.
    shown = inert(str(path))
    if not path.exists():
        print(f"{shown}: no cache yet (0 entries)")
        return 0
    print(shown)
    print(
        f"  entries: {info['entries']}  size: {info['bytes'] / 1024:,.1f} KiB  schema: {info['schema_version']}"
    )
    print(f"  oldest: {_when(info['oldest'])}  newest: {_when(info['newest'])}")
    for version, n in info["versions"].items():
        print(f"  written by pytest-context-bench {inert(str(version))}: {n}")
    for e in info["endpoints"]:
        print(f"  {e['entries']:>8}  {inert(str(e['method']))} {inert(str(e['url']))}")
    return 0
