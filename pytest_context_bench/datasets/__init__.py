"""Datasets: local files, named (registered) datasets, families and their schemas.

:func:`resolve_dataset` turns what a user writes (``data/qa.jsonl``, ``gsm8k``,
``mmlu:anatomy``) into a :class:`Dataset`: an indexable, lazy sequence of example
dicts with a tag, a family and a fingerprint.
"""

from __future__ import annotations

import difflib
import os
from typing import Any, Protocol, runtime_checkable

from ..errors import DatasetError
from .families import FAMILIES, PRIMARY_SCORE, primary_score
from .local import SUPPORTED_SUFFIXES, LocalDataset, load_local
from .registry import available, load_registered, lookup, register_dataset

__all__ = [
    "Dataset",
    "LocalDataset",
    "FAMILIES",
    "PRIMARY_SCORE",
    "SUPPORTED_SUFFIXES",
    "primary_score",
    "load_local",
    "register_dataset",
    "available",
    "resolve_dataset",
    "resolve_datasets",
]

#: How many registered names an "unknown dataset" message lists at most.
_LISTED_NAMES = 20


@runtime_checkable
class Dataset(Protocol):
    """What every dataset offers, local or registered.

    ``dataset[i]`` returns a new example dict on every call (callers may mutate it)
    with ``id`` (a string, unique within the dataset) and ``dataset`` (the tag, unless
    the example carries its own) set. ``ids`` gives every id without reading the
    examples; ``location(i)`` gives the file (or source name) and 1-based line (or
    record number) of example ``i``, for error messages and pytest's report.
    ``fingerprint`` changes whenever the examples may have changed (for a local file,
    the sha256 of its bytes).
    """

    @property
    def tag(self) -> str: ...

    @property
    def family(self) -> str: ...

    @property
    def primary_score(self) -> str: ...

    @property
    def fingerprint(self) -> str: ...

    @property
    def ids(self) -> list[str]: ...

    def __len__(self) -> int: ...

    def __getitem__(self, index: int) -> dict[str, Any]: ...

    def location(self, index: int) -> tuple[str, int]: ...


def _local_path(spec: str, base_dir: str | os.PathLike[str] | None) -> str:
    path = os.path.expanduser(spec)
    if base_dir is not None and not os.path.isabs(path):
        path = os.path.join(os.fspath(base_dir), path)
    return path


def _looks_local(spec: str, base_dir: str | os.PathLike[str] | None) -> bool:
    if spec.lower().endswith(SUPPORTED_SUFFIXES):
        return True
    separators = {"/", os.sep} | ({os.altsep} if os.altsep else set())
    if any(sep in spec for sep in separators):
        return True
    return os.path.isfile(_local_path(spec, base_dir))


#: the suffixes a promptfoo config or tests file may have (promptfoo._looks_like)
_PROMPTFOO_SUFFIXES = (".csv", ".json", ".yaml", ".yml")


def _may_be_promptfoo(path: str) -> bool:
    """:func:`~.promptfoo.looks_like_promptfoo`, without importing the promptfoo
    reader for a file whose suffix no promptfoo config or tests file has (a
    ``.jsonl`` dataset: the reader's import costs more than reading the file)."""
    if os.path.splitext(path)[1].lower() not in _PROMPTFOO_SUFFIXES:
        return False
    from .promptfoo import looks_like_promptfoo

    return looks_like_promptfoo(path)


def resolve_datasets(
    spec: str,
    *,
    base_dir: str | os.PathLike[str] | None = None,
    family: str | None = None,
) -> list[Dataset]:
    """Like :func:`resolve_dataset`, for a spec that may name several datasets: a
    promptfoo config (docs/assertions.md) gives one dataset per prompt."""
    if isinstance(spec, str) and spec.strip() and _looks_local(spec, base_dir):
        path = _local_path(spec, base_dir)
        if _may_be_promptfoo(path):
            from .promptfoo_suites import load_promptfoo_datasets

            return list(load_promptfoo_datasets(path, family))
    return [resolve_dataset(spec, base_dir=base_dir, family=family)]


def resolve_dataset(
    spec: str,
    *,
    base_dir: str | os.PathLike[str] | None = None,
    family: str | None = None,
) -> Dataset:
    """Turn a dataset spec into a :class:`Dataset`.

    A spec that ends in ``.jsonl``, ``.json``, ``.csv``, ``.parquet``, ``.yaml`` or
    ``.yml``, contains a path separator, or names an existing file is a local file,
    read by :func:`load_local` (a promptfoo config or tests file by
    :func:`~.promptfoo_suites.load_promptfoo_datasets`: see :func:`resolve_datasets`). Anything
    else is ``name`` or ``name:config``, looked up among the registered datasets.

    :param spec: a file path, ``name`` or ``name:config``.
    :param base_dir: the directory a relative file path is resolved against (e.g. the
        pytest rootdir); default: the current directory.
    :param family: the family of a local file's examples (``qa``, ``math``, ...),
        when the examples do not say it with a ``task`` field. Named datasets have
        their own family and ignore it.
    :raises DatasetError: when the file cannot be loaded, or no file and no registered
        dataset go by that name (the message suggests close names).
    """
    if not isinstance(spec, str) or not spec.strip():
        raise DatasetError(
            f"the dataset spec {spec!r} is empty. Give a path to a .jsonl, .json or "
            ".csv file, or a registered name."
        )
    if _looks_local(spec, base_dir):
        path = _local_path(spec, base_dir)
        if _may_be_promptfoo(path):
            from .promptfoo_suites import load_promptfoo_datasets

            found = load_promptfoo_datasets(path, family)
            if len(found) != 1:
                raise DatasetError(
                    f"this promptfoo config has {len(found)} prompts, one dataset each"
                    f" ({', '.join(d.tag for d in found)}); run it with"
                    " --ctxbench-dataset, or take them all with resolve_datasets().",
                    path=path,
                )
            return found[0]
        return load_local(path, family=family)
    name, colon, config = spec.partition(":")
    if lookup(name) is None:
        raise _unknown(name, spec)
    return load_registered(name, config if colon else None)


def _unknown(name: str, spec: str) -> DatasetError:
    names = available()
    shown = repr(name) if name == spec else f"{name!r} (in {spec!r})"
    message = (
        f"unknown dataset {shown}: no file of that name exists and no dataset is "
        "registered under it."
    )
    close = difflib.get_close_matches(name, names, n=1)
    if close:
        message += f" Did you mean {close[0]!r}?"
    message += " Give a path to a .jsonl, .json, .csv or .parquet file, or a registered name"
    if not names:
        message += " (none are registered yet)."
    else:
        listed = ", ".join(names[:_LISTED_NAMES])
        more = len(names) - _LISTED_NAMES
        if more > 0:
            listed += f" and {more} more"
        message += f": {listed}."
    return DatasetError(message)
