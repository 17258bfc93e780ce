"""The building blocks of the named-dataset catalog: specs, mapping context, field
helpers and the deterministic helpers every loader shares.

A named dataset is a :class:`NamedSpec`: where its raw records come from (a file in
the data directory, the Hugging Face hub), and a **pure** mapping function from one
raw record to zero, one or several examples in our vocabulary (DESIGN.md §4). The
mapping functions never read files, the network, the clock or ``hash()``: given the
same record they return the same examples on every machine and Python version, which
is what lets every xdist worker collect the same items and a baseline stay valid.

A mapping function has the signature ``map_record(record, ctx) -> example | list |
None`` where

* ``record`` is one raw record, a dict in the dataset's published format;
* ``ctx`` is a :class:`Context` (the dataset name, its config, the record's 0-based
  index and the auxiliary tables the spec's ``prepare`` built);
* it returns one example dict, a list of them (one record, several questions), or
  ``None`` when the record is, by the dataset's own definition, not an example (never
  to hide a malformed record: raise :class:`RecordError` for that).

Every example it returns carries ``id`` (a string, unique within the dataset) and
``task`` (the family); the loader adds ``dataset`` (the tag, e.g. ``mmlu:anatomy``).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, TypeVar

__all__ = [
    "LETTERS",
    "PARQUET_CONVERSION",
    "Context",
    "HubSource",
    "MapResult",
    "NamedSpec",
    "RecordError",
    "as_text",
    "letter",
    "mc_context",
    "need",
    "need_list",
    "need_str",
    "optional",
    "stable_int",
    "stable_shuffle",
]

#: Option letters, A to J (MMLU-Pro has ten options).
LETTERS: Final = "ABCDEFGHIJ"

#: The revision of the hub's own Parquet conversion of a repository: what
#: ``datasets`` 4, which no longer runs loading scripts, can read of a script-based one.
PARQUET_CONVERSION: Final = "refs/convert/parquet"

T = TypeVar("T")

#: What a mapping function returns.
MapResult = dict[str, Any] | list[dict[str, Any]] | None


class RecordError(Exception):
    """A raw record that cannot be mapped: a field is missing or malformed.

    The loader turns it into a :class:`~pytest_context_bench.errors.DatasetError`
    naming the dataset, the record's number and the field (or, with
    ``--ctxbench-skip-bad-records``, skips and counts the record).

    :param field: the field at fault, dotted for nested ones (``"document.summary"``).
    :param message: what is wrong with it ("is missing", "must be a list of strings").
    """

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"field {field!r} {message}")
        self.field = field
        self.message = message


@dataclass(frozen=True)
class Context:
    """What a mapping function knows besides the record itself.

    :param name: the dataset's registered name (``mmlu``).
    :param config: the config in effect (the default one when the user gave none), or
        ``None`` for a dataset without configs.
    :param index: the record's 0-based position in its source.
    :param aux: what the spec's ``prepare`` returned (e.g. SciFact's corpus by doc
        id), or ``None``.
    """

    name: str
    config: str | None
    index: int
    aux: Any = None


@dataclass(frozen=True)
class HubSource:
    """A table on the Hugging Face hub.

    :param repo: the dataset repository (``openai/gsm8k``).
    :param config: its config (subset); ``"{config}"`` inside it is replaced by the
        user's config (``cais/mmlu`` with ``config="{config}"``).
    :param split: the split read (``"{config}"`` is replaced too: InfiniteBench's
        tasks are splits).
    :param revision: the commit the download is pinned to; ``None`` takes the
        repository's head at first download, whose commit is then recorded in the
        cache and the dataset's fingerprint.
    """

    repo: str
    config: str | None = None
    split: str = "test"
    revision: str | None = None

    def resolve(self, config: str | None) -> HubSource:
        """This source with ``{config}`` filled in."""
        value = config or ""
        return HubSource(
            self.repo,
            None if self.config is None else self.config.replace("{config}", value),
            self.split.replace("{config}", value),
            self.revision,
        )


@dataclass(frozen=True)
class NamedSpec:
    """One named dataset of the catalog.

    :param name: the name users type (``gsm8k``).
    :param family: the family of its examples (decides evaluators and primary score);
        a mapper may still set another ``task`` on some examples (BBH's lettered
        tasks are ``multiple_choice``), and the dataset's family is then the one of
        its default config (see ``config_family``).
    :param description: one line for ``--ctxbench-list-datasets``.
    :param map_record: the pure mapping function (see the module docstring).
    :param hub: where the hub holds the raw records, or ``None``.
    :param files: the authors' own file names (``claims_dev.jsonl``), looked for in
        the data directory before the default names (``<split>.jsonl``, ...), under
        ``<data-dir>/<name>/`` (and first ``<data-dir>/<name>/<config>/`` for a
        dataset with configs). ``"{config}"`` and ``"{split}"`` are filled in. A name
        may be a glob (``"test-*.parquet"``); shards found by one glob are read in
        sorted order.
    :param configs: the accepted configs; empty when the dataset takes none.
    :param default_config: the config used when the user gives none.
    :param any_config: accept configs outside ``configs`` (an open list).
    :param config_family: config → family, for configs whose family differs.
    :param aux: name → (hub source, file names) of auxiliary tables (SciFact's
        corpus, NoLiMa's haystack), read like the main table (but only under their
        own file names) and given to ``prepare``.
    :param prepare: ``prepare(tables) -> aux``: builds the lookup the mapping
        function receives as ``ctx.aux`` from the auxiliary tables (name → list of
        raw records). Pure.
    :param regroup: ``regroup(records) -> records``: for a published format that
        spreads one item over several rows (the hub's flat SciFact claims), merges
        them before mapping. Pure; the table is then held in memory.
    :param notes: what differs from upstream, for the docs.
    :param package: ``(import name, folder)``: an installed package that ships the
        data (``("bfcl_eval", "data")``), looked in after the data directory for
        the spec's own file names (and its auxiliary tables'); found without
        importing it.
    """

    name: str
    family: str
    description: str
    map_record: Callable[[dict[str, Any], Context], MapResult]
    hub: HubSource | None = None
    files: tuple[str, ...] = ()
    configs: tuple[str, ...] = ()
    default_config: str | None = None
    any_config: bool = False
    config_family: Mapping[str, str] = field(default_factory=dict)
    aux: Mapping[str, tuple[HubSource | None, tuple[str, ...]]] = field(
        default_factory=dict
    )
    prepare: Callable[[dict[str, list[dict[str, Any]]]], Any] | None = None
    regroup: Callable[[list[dict[str, Any]]], list[dict[str, Any]]] | None = None
    notes: str = ""
    package: tuple[str, str] | None = None

    def __post_init__(self) -> None:
        if isinstance(self.files, str) or isinstance(self.configs, str):
            raise TypeError(f"{self.name}: files and configs are tuples of strings")


# ------------------------------------------------------------------ field helpers


_MISSING: Final = object()


def _walk(record: Mapping[str, Any], dotted: str) -> Any:
    value: Any = record
    for part in dotted.split("."):
        if isinstance(value, Mapping) and part in value:
            value = value[part]
        else:
            return _MISSING
    return value


def need(record: Mapping[str, Any], dotted: str) -> Any:
    """The value at ``dotted`` (``"document.summary.text"``); :class:`RecordError`
    when it is absent or ``None``."""
    value = _walk(record, dotted)
    if value is _MISSING or value is None:
        raise RecordError(dotted, "is missing")
    return value


def need_str(record: Mapping[str, Any], dotted: str, *, allow_empty: bool = False) -> str:
    """The string at ``dotted``; numbers are turned into strings. :class:`RecordError`
    when it is absent, not text, or (unless ``allow_empty``) blank."""
    return as_text(need(record, dotted), dotted, allow_empty=allow_empty)


def as_text(value: Any, path: str, *, allow_empty: bool = False) -> str:
    """``value`` as a string (numbers allowed); :class:`RecordError` naming ``path``
    when it is ``None``, not text, or (unless ``allow_empty``) blank."""
    if value is None:
        raise RecordError(path, "is missing")
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise RecordError(path, f"must be a string, got {type(value).__name__}")
    text = str(value)
    if not allow_empty and not text.strip():
        raise RecordError(path, "is empty")
    return text


def need_list(
    record: Mapping[str, Any], dotted: str, *, min_len: int = 1, of: type | None = None
) -> list[Any]:
    """The list at ``dotted`` (a tuple is accepted), with at least ``min_len`` items,
    each an instance of ``of`` when given."""
    value = need(record, dotted)
    if not isinstance(value, list | tuple):
        raise RecordError(dotted, f"must be a list, got {type(value).__name__}")
    if len(value) < min_len:
        raise RecordError(dotted, f"must have at least {min_len} item(s), got {len(value)}")
    if of is not None:
        for position, item in enumerate(value):
            if not isinstance(item, of) or isinstance(item, bool):
                raise RecordError(
                    f"{dotted}[{position}]",
                    f"must be a {of.__name__}, got {type(item).__name__}",
                )
    return list(value)


def optional(record: Mapping[str, Any], dotted: str, default: T) -> Any | T:
    """The value at ``dotted``, or ``default`` when it is absent or ``None``."""
    value = _walk(record, dotted)
    return default if value is _MISSING or value is None else value


# ------------------------------------------------------------------ determinism


def stable_int(*parts: object) -> int:
    """A 64-bit integer from the sha256 of ``parts`` (joined by NUL): the same on
    every machine, process and Python version, unlike ``hash()``."""
    text = "\x00".join(str(p) for p in parts)
    return int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "big")


def stable_shuffle(items: Sequence[T], *key: object) -> list[T]:
    """``items`` in an order fixed by ``key`` alone (e.g. the example id): each item
    is ranked by the sha256 of (key, its position), so the permutation does not
    depend on the items' text, the process or the Python version."""
    ranked = sorted(range(len(items)), key=lambda i: (stable_int(*key, i), i))
    return [items[i] for i in ranked]


# ------------------------------------------------------------------ prompts


def letter(index: int, n_choices: int) -> str:
    """The letter of option ``index`` (0-based) of ``n_choices``; :class:`ValueError`
    outside the range."""
    if not 0 <= index < n_choices <= len(LETTERS):
        raise ValueError(f"option index {index} is outside 0..{n_choices - 1}")
    return LETTERS[index]


def mc_context(question: str, choices: Sequence[str], passage: str | None = None) -> str:
    """The prompt of a multiple-choice example: the passage (when there is one), the
    question, the lettered options one per line, and the instruction to answer with
    a letter.

    >>> print(mc_context("2 + 2 = ?", ["3", "4"]))
    2 + 2 = ?
    <BLANKLINE>
    A) 3
    B) 4
    <BLANKLINE>
    Answer with the letter of the correct option (A-B).
    """
    if not 1 <= len(choices) <= len(LETTERS):
        raise ValueError(f"a question needs 1 to {len(LETTERS)} options, got {len(choices)}")
    options = "\n".join(f"{LETTERS[i]}) {str(c).strip()}" for i, c in enumerate(choices))
    last = LETTERS[len(choices) - 1]
    parts = [passage.strip()] if passage and passage.strip() else []
    parts += [
        question.strip(),
        options,
        f"Answer with the letter of the correct option (A-{last}).",
    ]
    return "\n\n".join(parts)
