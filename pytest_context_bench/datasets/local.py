"""Datasets kept in local files: ``.jsonl``, ``.json`` and ``.csv``.

:func:`load_local` reads a file once, checks every example against its family's JSON
Schema, and returns a :class:`LocalDataset`: an indexable, lazy view on the file.

- ``.jsonl``: one JSON object per line; blank lines are skipped but counted. Only each
  example's byte offset, line and id are kept; ``dataset[i]`` reads that line again
  (through one file descriptor per process, with ``os.pread``, so it also works after
  ``fork``). A 100,000-line file therefore keeps no 100,000 dicts alive.
- ``.json``: a top-level list of objects, or an object whose ``"examples"`` field is
  that list. The parsed list is kept.
- ``.csv``: a header row, then one example per row. Every value is a string; an empty
  cell is an absent field. The parsed rows are kept.

Files are read as UTF-8; a byte-order mark is tolerated. An example's id is its ``id``
field (as a string) when it has one, else the 1-based line number (``.jsonl``), the
1-based physical line the row starts on (``.csv``, where the header is line 1), or the
1-based position in the list (``.json``). Every problem found is a
:class:`~pytest_context_bench.errors.DatasetError` naming the file, the line and the
field.
"""

from __future__ import annotations

import contextlib
import csv
import difflib
import hashlib
import importlib
import io
import json
import os
import re
import threading
import weakref
from array import array
from collections.abc import Iterator
from typing import Any, Final

from .._json import (
    _SURROGATE_ESCAPE,
    JSONValueError,
    strict_decoder,
    strict_loads,
    value_problem,
)
from .._files import not_regular
from ..errors import ConfigError, DatasetError
from .families import (
    DatasetBase,
    DEFAULT_FAMILY,
    FAMILIES,
    PRIMARY_SCORE,
    describe_value,
    example_error,
    judged_by_field,
)

__all__ = [
    "DEFAULT_MAX_LINE_BYTES",
    "LocalDataset",
    "MAX_LINE_BYTES_ENV",
    "SUPPORTED_SUFFIXES",
    "load_local",
    "max_line_bytes",
]

#: The longest ``.jsonl`` line read (bytes, newline excluded) unless raised: far
#: above any real example (a 200,000-token context is about 1 MB), and low enough
#: that a file with no newline (a 2 GB dump, a sparse file) costs a bounded amount
#: of memory before its one-line error.
DEFAULT_MAX_LINE_BYTES: Final = 64 * 1024 * 1024

#: The environment variable that sets the cap (``--ctxbench-max-line-bytes`` sets
#: it for the run, in every xdist worker too).
MAX_LINE_BYTES_ENV: Final = "CTXBENCH_MAX_LINE_BYTES"


def max_line_bytes() -> int:
    """The cap on a ``.jsonl`` line: ``$CTXBENCH_MAX_LINE_BYTES``, else
    :data:`DEFAULT_MAX_LINE_BYTES`.

    :raises ConfigError: when the variable is set to anything but an integer >= 1.
    """
    raw = os.environ.get(MAX_LINE_BYTES_ENV, "").strip()
    if not raw:
        return DEFAULT_MAX_LINE_BYTES
    try:
        value = int(raw)
    except ValueError:
        value = 0
    if value < 1:
        raise ConfigError(
            f"{MAX_LINE_BYTES_ENV} must be an integer >= 1 (bytes), given: {raw!r}"
        )
    return value

def capped_lines(f: Any, path: str) -> Iterator[tuple[int, bytes]]:
    """``(line number, raw line)`` of a file opened in binary mode, none read past
    :func:`max_line_bytes` (``--ctxbench-max-line-bytes``): a longer line is a
    :class:`DatasetError` naming ``path`` and the line, so memory stays bounded."""
    cap = max_line_bytes()
    number = 0
    while raw := f.readline(cap + 1):
        number += 1
        if len(raw) > cap and not raw.endswith(b"\n"):
            raise DatasetError(
                f"the line is longer than {cap:,} bytes, the cap on one line"
                " (--ctxbench-max-line-bytes); raise it or fix the file.",
                path=path,
                line=number,
            )
        yield number, raw


#: The file extensions :func:`load_local` reads.
SUPPORTED_SUFFIXES: Final[tuple[str, ...]] = (
    ".jsonl", ".json", ".csv", ".parquet", ".yaml", ".yml",
)

_BOM: Final = b"\xef\xbb\xbf"
_HAS_PREAD: Final = hasattr(os, "pread")
_CSV_FIELD_LIMIT: Final = 2**31 - 1  # fits a C long everywhere


class LocalDataset(DatasetBase):
    """The examples of one local file; build one with :func:`load_local`.

    ``dataset[i]`` returns a new dict on every call (callers may mutate it), with
    ``id`` (a string) and ``dataset`` (the tag, unless the example has its own
    ``dataset`` field) set. Negative indexes count from the end.
    """

    def __init__(
        self,
        *,
        path: str,
        tag: str,
        family: str,
        fingerprint: str,
        ids: list[str],
        lines: array[int],
        records: list[dict[str, Any]] | None = None,
        flat: bool = False,
        spans: tuple[array[int], array[int]] | None = None,
        stat: os.stat_result | None = None,
        assert_metrics: set[str] | None = None,
        evaluator_fields: set[str] | None = None,
        judge_assertions: bool = False,
    ) -> None:
        self._path = path
        self.judge_assertions = judge_assertions
        self.assertion_metrics = (
            None if assert_metrics is None else frozenset(assert_metrics)
        )
        self.evaluator_fields = frozenset(evaluator_fields or ())
        self._tag = tag
        self._family = family
        self._fingerprint = fingerprint
        self._ids = ids
        self._lines = lines
        self._records = records
        self._flat = flat
        self._spans = spans
        self._reader: _ByteRangeReader | None = None
        if spans is not None:
            assert stat is not None
            self._reader = _ByteRangeReader(path, stat.st_size, stat.st_mtime_ns)

    @property
    def path(self) -> str:
        """The file, as given to :func:`load_local`."""
        return self._path

    def __getitem__(self, index: int) -> dict[str, Any]:
        i = self._position(index)
        if self._records is not None:
            record = self._records[i]
            example = dict(record) if self._flat else _copy_json(record)
        else:
            example = self._read_line(i)
        example["id"] = self._ids[i]
        if "dataset" not in example:
            example["dataset"] = self._tag
        return example

    def location(self, index: int) -> tuple[str, int]:
        """Return the file and the 1-based line example ``index`` starts on.

        For ``.json`` files this is the line where the example's object opens.
        """
        return self._path, self._lines[self._position(index)]

    def close(self) -> None:
        """Close this process's file descriptor (``.jsonl`` only; reopened on need)."""
        if self._reader is not None:
            self._reader.close()

    def __repr__(self) -> str:
        return (
            f"LocalDataset(path={self._path!r}, tag={self._tag!r}, "
            f"family={self._family!r}, examples={len(self._ids)})"
        )

    def _read_line(self, i: int) -> dict[str, Any]:
        assert self._spans is not None and self._reader is not None
        offsets, lengths = self._spans
        line = self._lines[i]
        raw = self._reader.read(offsets[i], lengths[i])
        try:
            example = json.loads(raw.decode("utf-8"))
        except (ValueError, RecursionError):
            example = None
        if not isinstance(example, dict):
            raise DatasetError(
                "the line no longer holds the example read at load time; the file "
                "was changed while the run was going on. Leave the file alone "
                "during a run, then run again.",
                path=self._path,
                line=line,
            )
        return example


def _copy_json(value: Any) -> Any:
    """A deep copy of parsed JSON (dicts and lists; other values are immutable)."""
    if type(value) is dict:
        return {key: _copy_json(item) for key, item in value.items()}
    if type(value) is list:
        return [_copy_json(item) for item in value]
    return value


class _ByteRangeReader:
    """Reads byte ranges of one file through one descriptor per process.

    The descriptor is opened on the first read in each process (so a forked worker
    opens its own) and checked against the size and modification time seen at load
    time. ``os.pread`` needs no shared file position, so threads need no lock; where
    it is missing (Windows, which has no ``fork`` either) seek and read run under a lock.
    """

    def __init__(self, path: str, size: int, mtime_ns: int) -> None:
        self._path = path
        self._size = size
        self._mtime_ns = mtime_ns
        self._fds: dict[int, int] = {}
        self._lock = threading.Lock()
        self._finalizer = weakref.finalize(self, _close_own_fds, self._fds)

    def __getstate__(self) -> tuple[str, int, int]:
        return self._path, self._size, self._mtime_ns

    def __setstate__(self, state: tuple[str, int, int]) -> None:
        self.__init__(*state)  # type: ignore[misc]

    def read(self, offset: int, length: int) -> bytes:
        fd = self._fds.get(os.getpid())
        if fd is None:
            fd = self._open()
        if _HAS_PREAD:
            return os.pread(fd, length, offset)
        with self._lock:
            os.lseek(fd, offset, os.SEEK_SET)
            return os.read(fd, length)

    def close(self) -> None:
        _close_own_fds(self._fds)

    def _open(self) -> int:
        try:
            fd = os.open(self._path, os.O_RDONLY | getattr(os, "O_BINARY", 0))
        except OSError as exc:
            raise DatasetError(
                f"the file can no longer be read ({exc.strerror}), although it "
                "was there when the dataset was loaded. Leave the file in place "
                "during a run, then run again.",
                path=self._path,
            ) from None
        stat = os.fstat(fd)
        if stat.st_size != self._size or stat.st_mtime_ns != self._mtime_ns:
            os.close(fd)
            raise DatasetError(
                "the file changed after the dataset was loaded (its size or "
                "modification time differ), so its examples can no longer be "
                "found. Leave the file alone during a run, then run again.",
                path=self._path,
            )
        winner = self._fds.setdefault(os.getpid(), fd)
        if winner != fd:  # another thread opened it first
            os.close(fd)
        return winner


def _close_own_fds(fds: dict[int, int]) -> None:
    """Close the descriptor this process opened (a forked child's copy of the
    parent's is the parent's business)."""
    fd = fds.pop(os.getpid(), None)
    if fd is not None:
        with contextlib.suppress(OSError):
            os.close(fd)


# ----------------------------------------------------------------------- loading


def load_local(
    path: str | os.PathLike[str],
    *,
    tag: str | None = None,
    family: str | None = None,
    max_line_bytes_cap: int | None = None,
) -> LocalDataset:
    """Read and validate a local ``.jsonl``, ``.json`` or ``.csv`` dataset.

    :param path: the file. A relative path is relative to the current directory.
    :param tag: the dataset tag set on examples without a ``dataset`` field;
        default: the file's stem (``"qa"`` for ``data/qa.jsonl``).
    :param family: the family of every example (see
        :data:`~pytest_context_bench.datasets.families.FAMILIES`). Default: the
        ``task`` field of the first example, else ``"qa"``. An example's own ``task``
        may not contradict it.
    :param max_line_bytes_cap: the longest ``.jsonl`` line read, in bytes (newline
        excluded); default: :func:`max_line_bytes`. A longer line is an error naming
        the file and the line, found after reading at most this many bytes of it.
    :returns: the dataset, validated: every example matches its family's schema and
        every id is unique.
    :raises DatasetError: when the file is missing, not a regular file (a FIFO, a
        device: symlinks are followed), unreadable, of another type,
        empty, not UTF-8, not parseable, or holds an invalid example, a duplicate id
        or an unknown or contradictory family. The message names the file, the line
        and the field.
    :raises ConfigError: when ``tag`` is given but is not a non-empty string.
    """
    name = os.fspath(path)
    if tag is not None and (not isinstance(tag, str) or not tag):
        raise ConfigError(f"tag= must be a non-empty string, got {tag!r}.")
    if family is not None and family not in PRIMARY_SCORE:
        raise DatasetError(
            f"family {family!r} is not a known family{_did_you_mean(family, FAMILIES)}"
            f" Use one of: {', '.join(FAMILIES)}.",
            path=name,
        )
    cap = max_line_bytes() if max_line_bytes_cap is None else max_line_bytes_cap
    # Before opening: a FIFO would block the open itself.
    problem = not_regular(name)
    if problem is not None:
        raise DatasetError(problem + ".", path=name)
    try:
        handle = open(name, "rb")
    except FileNotFoundError:
        where = ""
        if not os.path.isabs(name):
            where = (
                f" (a relative path is read from the current directory, {os.getcwd()})"
            )
        raise DatasetError(
            f"the file does not exist{where}. Check the path.", path=name
        ) from None
    except IsADirectoryError:
        raise DatasetError(
            "this is a directory, not a file. Give the path of a .jsonl, .json or "
            ".csv file.",
            path=name,
        ) from None
    except OSError as exc:
        raise DatasetError(
            f"the file cannot be read ({exc.strerror}). Check its permissions.",
            path=name,
        ) from None
    with handle:
        suffix = os.path.splitext(name)[1].lower()
        if suffix not in SUPPORTED_SUFFIXES:
            shown = f"'{suffix}'" if suffix else "no extension"
            raise DatasetError(
                f"a local dataset must be a .jsonl, .json, .csv, .parquet or .yaml file,"
                f" and this one has {shown}. Rename or convert the file.",
                path=name,
            )
        if tag is None:
            tag = os.path.splitext(os.path.basename(name))[0]
        if suffix == ".jsonl":
            stat = os.fstat(handle.fileno())
            collector = _Collector(name, family, _JSONL)
            fingerprint, spans = _read_jsonl(handle, collector, cap)
            return LocalDataset(
                path=name,
                tag=tag,
                family=collector.family_or_default(),
                fingerprint=fingerprint,
                ids=collector.ids,
                lines=collector.lines,
                spans=spans,
                stat=stat,
                assert_metrics=collector.assert_metrics,
                evaluator_fields=collector.evaluator_fields,
                judge_assertions=collector.judge_assertions,
            )
        data = handle.read()
    fingerprint = hashlib.sha256(data).hexdigest()
    if suffix == ".parquet":
        kind = _PARQUET
        collector = _Collector(name, family, kind)
        records = _read_parquet(name, collector)
    elif suffix in (".yaml", ".yml"):
        kind = _YAML
        collector = _Collector(name, family, kind)
        records = _read_yaml(name, collector)
    else:
        text = _decode_whole(name, data)
        kind = _JSON if suffix == ".json" else _CSV
        collector = _Collector(name, family, kind)
        reader = _read_json if kind is _JSON else _read_csv
        records = reader(name, text, collector)
    return LocalDataset(
        path=name,
        tag=tag,
        family=collector.family_or_default(),
        fingerprint=fingerprint,
        ids=collector.ids,
        lines=collector.lines,
        records=records,
        flat=kind is _CSV,
        assert_metrics=collector.assert_metrics,
        evaluator_fields=collector.evaluator_fields,
        judge_assertions=collector.judge_assertions,
    )


class _Kind:
    """How messages name the parts of one file format."""

    def __init__(self, suffix: str, unit: str, fallback_id: str) -> None:
        self.suffix = suffix
        self.unit = unit  # "line", "row", "example"
        self.fallback_id = fallback_id


_JSONL: Final = _Kind(".jsonl", "line", "its line number")
_JSON: Final = _Kind(".json", "example", "its position in the list")
_CSV: Final = _Kind(".csv", "row", "the line its row starts on")
_PARQUET: Final = _Kind(".parquet", "row", "its row number")
_YAML: Final = _Kind(".yaml", "example", "its position in the list")


class _Collector:
    """Checks examples one by one (object, family, schema, id) and keeps ids and lines."""

    def __init__(self, path: str, family: str | None, kind: _Kind) -> None:
        self.path = path
        self.kind = kind
        self.family: str | None = family
        self.family_reason = f"given as family={family!r}"
        self.ids: list[str] = []
        self.lines: array[int] = array("q")
        self.positions_only = False
        self._seen: dict[str, int] = {}
        #: check each example's values (nesting, NaN/infinite floats) here, and
        #: strings for lone surrogates: for the formats whose reader did not
        self.check_values = False
        self.check_strings = False
        #: the ``metric`` names of the examples' assertions; None: no example has any
        self.assert_metrics: set[str] | None = None
        #: the fields wiring an evaluator (``evaluators.FIELD_EVALUATORS``:
        #: expected_tool_calls, expected_trajectory) some example has
        self.evaluator_fields: set[str] = set()
        #: whether an example's assertions ask an LLM judge (llm-rubric)
        self.judge_assertions = False
        self.base_dir = os.path.dirname(os.path.abspath(path))

    def family_or_default(self) -> str:
        return self.family if self.family is not None else DEFAULT_FAMILY

    def where(self, index: int) -> str:
        """Name the ``index``-th example collected so far, for a message."""
        if self.kind is _JSON:
            if self.positions_only:
                return f"example {index + 1}"
            return f"example {index + 1} (line {self.lines[index]})"
        if self.kind is _CSV:
            return f"the row on line {self.lines[index]}"
        if self.kind is _PARQUET:
            return f"row {self.lines[index]}"
        return f"line {self.lines[index]}"

    def fail(self, message: str, line: int, label: str) -> DatasetError:
        unit = self.kind.unit
        return DatasetError(
            f"{label}{message}. Fix the {unit} or drop it.",
            path=self.path,
            line=None if self.positions_only else line,
        )

    def add(self, example: Any, line: int, fallback_id: int, label: str = "") -> None:
        """Check one example and record its id and line (``label`` prefixes messages)."""
        if self.check_values:
            problem = value_problem(example, strings=self.check_strings)
            if problem is not None:
                raise self.fail(f"this example cannot be used: {problem}", line, label)
        if type(example) is not dict:
            if self.kind is _JSON:
                what = (
                    f"this is {_json_kind(example)}, not a JSON object; the list of a "
                    ".json dataset holds one object per example"
                )
            else:
                what = (
                    f"the line holds {_json_kind(example)}, not a JSON object; each "
                    "line of a .jsonl file must be one object (one example)"
                )
            raise self.fail(what, line, label)
        task = example.get("task")
        family = self.family
        if family is None:  # the first example decides
            if type(task) is str:
                self._check_known(task, line, label)
                family = task
                self.family_reason = (
                    f"taken from the 'task' field of {self._here(line, fallback_id)}"
                )
            else:
                family = DEFAULT_FAMILY
                self.family_reason = (
                    f"the default, because the first example "
                    f"({self._here(line, fallback_id)}) has no 'task' field"
                )
            self.family = family
        elif type(task) is str and task != family:
            self._check_known(task, line, label)
            raise DatasetError(
                f"{label}field 'task' is {task!r}, but this file's family is "
                f"{family!r} ({self.family_reason}); all examples of one file are one "
                "family. Make the 'task' fields agree, or split the file.",
                path=self.path,
                line=None if self.positions_only else line,
            )
        if "assert" in example:
            self.check_asserts(example, line, label)
        if "tools" in example or judged_by_field(example):
            self.check_fields(example, line, label)
        if "tools" in example or "tool_choice" in example:
            self.check_tools(example, line, label)
        error = example_error(family, example)
        if error is not None:
            raise self.fail(error, line, label)
        ident = example.get("id")
        if ident is None:
            key = str(fallback_id)
        elif type(ident) is str:
            key = ident
        elif isinstance(ident, float):  # an integral float: the schema's "integer"
            key = str(int(ident))
        else:
            key = str(ident)
        index = len(self.ids)
        first = self._seen.setdefault(key, index)
        if first != index:
            raise DatasetError(
                f"{label}id {key!r} is already used by {self.where(first)}; ids must be "
                f"unique within a dataset (an example without an 'id' field gets "
                f"{self.kind.fallback_id} as id). Give one of the two another id.",
                path=self.path,
                line=None if self.positions_only else line,
            )
        self.ids.append(key)
        self.lines.append(line)

    def check_asserts(self, example: dict[str, Any], line: int, label: str) -> None:
        """Compile the example's ``assert`` list now, so that an unknown type, an
        invalid regex or schema stops the run before its first example."""
        from ..evaluators.assertions import (
            AssertionError_,
            compile_asserts,
            metric_names,
            uses_judge,
        )

        try:
            compiled = compile_asserts(
                example["assert"],
                base_dir=self.base_dir,
                threshold=example.get("threshold"),
                variables=example,
            )
        except AssertionError_ as exc:
            raise self.fail(str(exc), line, label) from None
        self.assert_metrics = (self.assert_metrics or set()) | metric_names(compiled)
        self.judge_assertions = self.judge_assertions or uses_judge(compiled)

    def check_fields(self, example: dict[str, Any], line: int, label: str) -> None:
        """Check the fields wiring an evaluator (``expected_tool_calls`` and the
        ``tools`` ToolCallMatch reads, ``expected_trajectory`` and its match
        settings) now, so that a bad one stops the run before its first example
        (docs/evaluators.md)."""
        from ..evaluators import example_fields, field_problem

        problem = field_problem(example)
        if problem is not None:
            raise self.fail(problem, line, label)
        self.evaluator_fields.update(example_fields(example))

    def check_tools(self, example: dict[str, Any], line: int, label: str) -> None:
        """The example's ``tools`` (a list of function schemas) and ``tool_choice``,
        checked now: ``--ctxbench-proxy`` sends them with the example."""
        from ..tool_use import tool_choice_problem, tools_problem

        problem = None
        if "tools" in example:
            problem = tools_problem(example["tools"])
        if problem is None and example.get("tool_choice") is not None:
            problem = tool_choice_problem(example["tool_choice"])
        if problem is not None:
            raise self.fail(problem, line, label)

    def _here(self, line: int, fallback_id: int) -> str:
        if self.kind is _JSON:
            return f"example {fallback_id}"
        if self.kind is _CSV:
            return f"the row on line {line}"
        return f"line {line}"

    def _check_known(self, task: str, line: int, label: str) -> None:
        if task not in PRIMARY_SCORE:
            raise DatasetError(
                f"{label}field 'task' is {task!r}, which is not a known family"
                f"{_did_you_mean(task, FAMILIES)} Use one of: {', '.join(FAMILIES)}, "
                "or drop the field.",
                path=self.path,
                line=None if self.positions_only else line,
            )


def _did_you_mean(word: str, choices: tuple[str, ...] | list[str]) -> str:
    """``". Did you mean 'qa'?"`` or ``"."``."""
    close = difflib.get_close_matches(word, choices, n=1)
    return f". Did you mean {close[0]!r}?" if close else "."


def _json_kind(value: Any) -> str:
    if isinstance(value, list):
        return "a list"
    if isinstance(value, str):
        return "a string"
    return describe_value(value)


def _utf8_error(
    path: str, data: bytes, exc: UnicodeDecodeError, base_line: int
) -> DatasetError:
    line = base_line + data.count(b"\n", 0, exc.start)
    line_start = data.rfind(b"\n", 0, exc.start) + 1
    return DatasetError(
        f"the file is not valid UTF-8: byte 0x{data[exc.start]:02x}, byte "
        f"{exc.start - line_start + 1} of the line, cannot be decoded "
        f"({exc.reason}). Save the file as UTF-8.",
        path=path,
        line=line,
    )


def _decode_whole(path: str, data: bytes) -> str:
    body = data.removeprefix(_BOM)
    try:
        return body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _utf8_error(path, body, exc, 1) from None


def _read_jsonl(
    handle: io.BufferedReader, collector: _Collector, cap: int = DEFAULT_MAX_LINE_BYTES
) -> tuple[str, tuple[array[int], array[int]]]:
    """Stream a .jsonl file: hash it, check each example, keep only where it lies.

    No line is read past ``cap`` bytes (plus its newline): memory stays bounded
    whatever the file holds."""
    path = collector.path
    hasher = hashlib.sha256()
    offsets: array[int] = array("q")
    lengths: array[int] = array("q")
    add = collector.add
    loads = strict_loads
    offset = 0
    line = 0
    readline = handle.readline
    # `cap` bytes and the newline (and, on line 1, a byte-order mark) are read at
    # most: a longer line is refused without reading the rest of it.
    while raw := readline(cap + 1 + (len(_BOM) if line == 0 else 0)):
        line += 1
        body = len(raw) - (len(_BOM) if line == 1 and raw.startswith(_BOM) else 0)
        if body > cap and not raw.endswith(b"\n"):
            raise DatasetError(
                f"the line is longer than {cap:,} bytes, the cap on one line"
                " (--ctxbench-max-line-bytes, ini ctxbench_max_line_bytes, or the"
                f" {MAX_LINE_BYTES_ENV} environment variable); raise it if the line"
                " really is one example, or fix the file (a missing newline?).",
                path=path,
                line=line,
            )
        hasher.update(raw)
        start = offset
        offset += len(raw)
        if line == 1 and raw.startswith(_BOM):
            raw = raw[len(_BOM) :]
            start += len(_BOM)
        if not raw or raw.isspace():
            continue
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise _utf8_error(path, raw, exc, line) from None
        try:
            example = loads(text)
        except json.JSONDecodeError as exc:
            raise DatasetError(
                f"the line is not valid JSON: {exc.msg} at column {exc.colno}. Fix the "
                "line or drop it (each line of a .jsonl file is one JSON object).",
                path=path,
                line=line,
            ) from None
        except JSONValueError as exc:
            raise DatasetError(
                f"the line cannot be used: {exc}. Fix the line or drop it.",
                path=path,
                line=line,
            ) from None
        add(example, line, line)
        offsets.append(start)
        lengths.append(len(raw))
    if not collector.ids:
        raise DatasetError(
            "the file holds no examples (it is empty or has only blank lines). "
            "Add at least one example, one JSON object per line.",
            path=path,
        )
    return hasher.hexdigest(), (offsets, lengths)


# ---------------------------------------------------------------------- .json


class _NotWalkable(Exception):
    """The quick walk of a .json document met something it does not handle."""


_WHITESPACE: Final = re.compile(r"[ \t\n\r]*")
_DECODER: Final = strict_decoder


def _skip(text: str, index: int) -> int:
    match = _WHITESPACE.match(text, index)
    assert match is not None
    return match.end()


def _walk_array(text: str, index: int) -> tuple[list[Any], list[int], int]:
    """Decode the array opening at ``index``; return items, item offsets, end."""
    items: list[Any] = []
    starts: list[int] = []
    index = _skip(text, index + 1)
    if text.startswith("]", index):
        return items, starts, index + 1
    while True:
        starts.append(index)
        item, index = _DECODER.raw_decode(text, index)
        items.append(item)
        index = _skip(text, index)
        if text.startswith(",", index):
            index = _skip(text, index + 1)
        elif text.startswith("]", index):
            return items, starts, index + 1
        else:
            raise _NotWalkable


def _walk_json(text: str) -> tuple[list[Any], list[int]]:
    """Decode a .json dataset, noting where each example starts.

    Handles a top-level list, or an object whose (last) ``"examples"`` field is a
    list. Raises :class:`_NotWalkable` for anything else, valid or not.
    """
    try:
        index = _skip(text, 0)
        found: tuple[list[Any], list[int]] | None = None
        if text.startswith("[", index):
            items, starts, index = _walk_array(text, index)
            found = items, starts
        elif text.startswith("{", index):
            index = _skip(text, index + 1)
            if text.startswith("}", index):
                raise _NotWalkable
            while True:
                if not text.startswith('"', index):
                    raise _NotWalkable
                key, index = _DECODER.raw_decode(text, index)
                index = _skip(text, index)
                if not text.startswith(":", index):
                    raise _NotWalkable
                index = _skip(text, index + 1)
                if key == "examples" and text.startswith("[", index):
                    items, starts, index = _walk_array(text, index)
                    found = items, starts
                else:
                    other, index = _DECODER.raw_decode(text, index)
                    if value_problem(other):  # the plain parse names it
                        raise _NotWalkable
                    if key == "examples":
                        found = None
                index = _skip(text, index)
                if text.startswith(",", index):
                    index = _skip(text, index + 1)
                elif text.startswith("}", index):
                    index += 1
                    break
                else:
                    raise _NotWalkable
        if found is None or _skip(text, index) != len(text):
            raise _NotWalkable
        return found
    except (ValueError, RecursionError):  # the plain parse names the problem
        raise _NotWalkable from None


def _json_examples(path: str, text: str) -> list[Any]:
    """Parse a .json dataset the plain way, for precise errors (no line per example)."""
    try:
        document = strict_loads(text)
    except JSONValueError as exc:
        raise DatasetError(f"the file cannot be used: {exc}. Fix the file.", path=path) from None
    except json.JSONDecodeError as exc:
        hint = ""
        if exc.msg == "Extra data":
            hint = " If it holds one JSON object per line, name it .jsonl."
        raise DatasetError(
            f"the file is not valid JSON: {exc.msg} at column {exc.colno}.{hint} "
            "Fix the file.",
            path=path,
            line=exc.lineno,
        ) from None
    shape = (
        "a .json dataset is a list of example objects, or an object whose "
        "'examples' field is that list"
    )
    if isinstance(document, list):
        return document
    if isinstance(document, dict):
        if "examples" not in document:
            raise DatasetError(
                f"the top-level object has no 'examples' field; {shape}. Fix the file.",
                path=path,
            )
        examples = document["examples"]
        if isinstance(examples, list):
            return examples
        raise DatasetError(
            f"the 'examples' field holds {_json_kind(examples)}, not a list; {shape}. "
            "Fix the file.",
            path=path,
        )
    raise DatasetError(
        f"the file holds {_json_kind(document)}; {shape}. Fix the file.", path=path
    )


def _read_json(path: str, text: str, collector: _Collector) -> list[dict[str, Any]]:
    if not text.strip():
        raise DatasetError(
            "the file is empty; a .json dataset is a list of example objects. Add "
            "at least one example.",
            path=path,
        )
    collector.check_values = True
    collector.check_strings = _SURROGATE_ESCAPE.search(text) is not None
    try:
        examples, starts = _walk_json(text)
    except _NotWalkable:
        examples = _json_examples(path, text)
        starts = []
        collector.positions_only = True
    if not examples:
        raise DatasetError(
            "the list of examples is empty. Add at least one example.", path=path
        )
    lines: list[int] = []
    line = 1
    previous = 0
    for start in starts:
        line += text.count("\n", previous, start)
        previous = start
        lines.append(line)
    for position, example in enumerate(examples, 1):
        at = lines[position - 1] if lines else position
        collector.add(example, at, position, label=f"example {position}: ")
    return examples


# -------------------------------------------------------------------------- .yaml


def _read_yaml(path: str, collector: _Collector) -> list[dict[str, Any]]:
    """A YAML list of examples (PyYAML, optional: the ``yaml`` extra)."""
    from .promptfoo import read_yaml_examples

    examples, lines = read_yaml_examples(path)
    collector.check_values = True
    collector.check_strings = True
    for position, (example, line) in enumerate(zip(examples, lines), 1):
        collector.add(example, line, position, label=f"example {position}: ")
    return examples


# ----------------------------------------------------------------------- .parquet


def _read_parquet(path: str, collector: _Collector) -> list[dict[str, Any]]:
    """Rows of a Parquet table (pyarrow, optional); nested columns stay nested."""
    try:
        parquet = importlib.import_module("pyarrow.parquet")
    except ImportError:
        raise DatasetError(
            "reading a .parquet dataset needs pyarrow: pip install "
            "'pytest-context-bench[parquet]' (or convert the file to .jsonl).",
            path=path,
        ) from None
    try:
        examples: list[Any] = parquet.read_table(path).to_pylist()
    except Exception as exc:  # noqa: BLE001 (pyarrow raises many types)
        raise DatasetError(
            f"the file is not a readable Parquet table ({exc}).", path=path
        ) from None
    if not examples:
        raise DatasetError("the table has no rows. Add at least one example.", path=path)
    collector.check_values = True  # NaN and infinite floats are valid Parquet
    for position, example in enumerate(examples, 1):
        # Parquet has no "absent": a column missing from a row reads as None.
        for key in [k for k, v in example.items() if v is None]:
            del example[key]
        collector.add(example, position, position, label=f"row {position}: ")
    return examples


# ----------------------------------------------------------------------- .csv


@contextlib.contextmanager
def _csv_field_limit() -> Iterator[None]:
    """Lift the csv module's 128 KiB cell limit for the parse (contexts are long)."""
    previous = csv.field_size_limit()
    csv.field_size_limit(max(previous, _CSV_FIELD_LIMIT))
    try:
        yield
    finally:
        csv.field_size_limit(previous)


def _read_csv(path: str, text: str, collector: _Collector) -> list[dict[str, Any]]:
    records: list[dict[str, Any]] = []
    header: list[str] | None = None
    header_line = 0
    reader = csv.reader(io.StringIO(text, newline=""))
    line_after = 0
    with _csv_field_limit():
        while True:
            start = line_after + 1
            try:
                row = next(reader)
            except StopIteration:
                break
            except csv.Error as exc:
                raise DatasetError(
                    f"the file is not valid CSV: {exc}. Fix the row.",
                    path=path,
                    line=reader.line_num,
                ) from None
            line_after = reader.line_num
            if not any(row):  # a blank line, or a row of empty cells
                continue
            if header is None:
                header = _csv_header(path, row, start)
                header_line = start
                continue
            example: dict[str, Any] = {}
            for column, cell in enumerate(row):
                if not cell:
                    continue
                name = header[column] if column < len(header) else ""
                if not name:
                    raise DatasetError(
                        f"the row has a value in column {column + 1}, which has no "
                        f"name in the header (line {header_line}). Name the column "
                        "in the header, or remove the value.",
                        path=path,
                        line=start,
                    )
                example[name] = cell
            for column in _CSV_JSON_COLUMNS:
                if column in example:
                    example[column] = _csv_json(path, start, column, example[column])
            collector.add(example, start, start)
            records.append(example)
    if header is None:
        raise DatasetError(
            "the file is empty; a .csv dataset needs a header row and one row per "
            "example. Add them.",
            path=path,
        )
    if not records:
        raise DatasetError(
            f"the file has a header row (line {header_line}) but no examples. Add at "
            "least one row.",
            path=path,
        )
    return records


#: CSV columns whose cells hold JSON, and what the JSON is (for the message).
_CSV_JSON_COLUMNS: Final = {
    "assert": 'a list of assertions, e.g. [{"type": "contains", "value": "refund"}]',
    "tools": 'a list of function schemas, e.g. [{"name": "get_weather", "parameters": {...}}]',
    "expected_tool_calls": 'a list of calls, e.g. [{"name": "get_weather", "arguments": {"city": "Paris"}}]',
    "expected_trajectory": 'a list of messages, e.g. [{"role": "assistant", "tool_calls": [...]}]',
    "tool_args_match_overrides": 'an object, e.g. {"search": "ignore"}',
}


def _csv_json(path: str, line: int, column: str, cell: str) -> Any:
    """A CSV cell that holds JSON (a column of :data:`_CSV_JSON_COLUMNS`:
    ``assert``, ``tools``, ``expected_tool_calls``...), parsed."""
    try:
        return strict_loads(cell)
    except (ValueError, RecursionError) as exc:
        raise DatasetError(
            f"column {column!r} must hold JSON ({_CSV_JSON_COLUMNS[column]}), and it"
            f" does not: {exc}. Fix the cell (double every quote inside a quoted CSV field).",
            path=path,
            line=line,
        ) from None


def _csv_header(path: str, row: list[str], line: int) -> list[str]:
    names = [cell.strip() for cell in row]
    seen: dict[str, int] = {}
    for column, name in enumerate(names, 1):
        if not name:
            continue
        if name in seen:
            raise DatasetError(
                f"the header names column {name!r} twice (columns {seen[name]} and "
                f"{column}). Rename one of them.",
                path=path,
                line=line,
            )
        seen[name] = column
    return names
