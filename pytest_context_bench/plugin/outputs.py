"""Output files are checked once, before the first example runs.

Every option in :data:`~pytest_context_bench.plugin.options.OUTPUT_OPTIONS` names a
file the run writes at its end. Before anything runs, each one must

- not resolve (symlinks and ``..`` followed) to a file the run reads: a dataset
  file, the ``--ctxbench-baseline``, an existing file of the data directory, the
  tokenizer file;
- not resolve to the file of another output option;
- have a directory that exists (or can be created) and accepts a new file.

Otherwise the run stops with one ``pytest.UsageError`` (exit 4) naming both options.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest

from .options import BASELINE, DATA_DIR, DATASET, OUTPUT_OPTIONS, TOKENIZER, Settings

__all__ = ["check_outputs", "input_files", "other_outputs", "step_summary_clash"]


def _real(path: Path) -> str:
    return os.path.normcase(os.path.realpath(path))


def input_files(
    settings: Settings, datasets: Iterable[Any] = (), dataset_where: str | None = None
) -> list[tuple[str, Path]]:
    """(where it came from, path) of every file the run reads that has a path."""
    out: list[tuple[str, Path]] = []
    for ds in datasets:
        path = getattr(ds, "path", None)
        if isinstance(path, (str, os.PathLike)):
            where = dataset_where or settings.where.get(DATASET.dest, DATASET.flag)
            out.append((where, Path(path)))
    if settings.baseline is not None:
        out.append(
            (settings.where.get(BASELINE.dest, BASELINE.flag), settings.baseline)
        )
    tokenizer = settings.tokenizer
    if tokenizer and ("/" in tokenizer or tokenizer.endswith((".tiktoken", ".gz"))):
        out.append(
            (settings.where.get(TOKENIZER.dest, TOKENIZER.flag), Path(tokenizer))
        )
    return out


def _in_data_dir(settings: Settings, real: str) -> bool:
    data_dir = settings.data_dir
    if data_dir is None or not os.path.isfile(real):
        return False
    root = _real(data_dir)
    return os.path.commonpath([root, real]) == root


def _writable_dir(path: Path) -> str | None:
    """Why a new file cannot be created at ``path`` (None: it can).

    A real probe, never ``access()`` alone (it says yes to root on special
    filesystems such as ``/sys``): a temporary file in the directory when it
    exists; else the first missing directory is created, a temporary file made in
    it, and both removed again. Nothing is left behind.
    """
    parent = Path(os.path.realpath(path)).parent
    existing = parent
    missing: Path | None = None
    while not existing.exists():
        if existing.parent == existing:
            break
        missing, existing = existing, existing.parent
    if not existing.is_dir():
        return f"{existing} is not a directory"
    if missing is not None:
        try:
            os.mkdir(missing)
        except OSError as exc:
            at = "" if missing == parent else f" for {missing}"
            return (
                f"cannot create {parent} ({exc.strerror or exc}{at});"
                " choose a writable directory"
            )
    try:
        try:
            fd, probe = tempfile.mkstemp(
                prefix=".ctxbench-probe.", dir=missing or parent
            )
        except OSError as exc:
            where = parent if missing is None else f"{parent} (at {missing})"
            return (
                f"cannot create a file in {where} ({exc.strerror or exc}); choose a"
                " writable directory"
            )
        os.close(fd)
        os.unlink(probe)
    finally:
        if missing is not None:
            try:
                os.rmdir(missing)
            except OSError:
                pass
    return None


def other_outputs(config: pytest.Config) -> list[tuple[str, Path]]:
    """Files pytest itself writes that must not land on an input or on one of ours
    (``--junitxml``, pytest-reportlog's ``--report-log``), as (flag, path)."""
    out: list[tuple[str, Path]] = []
    invdir = config.invocation_params.dir
    for flag, dest in (("--junitxml", "xmlpath"), ("--report-log", "reportlog")):
        raw = getattr(config.option, dest, None)
        if isinstance(raw, (str, os.PathLike)) and str(raw):
            path = Path(os.path.expanduser(os.path.expandvars(str(raw))))
            out.append((flag, path if path.is_absolute() else invdir / path))
    return out


def check_outputs(
    settings: Settings,
    inputs: Iterable[tuple[str, Path]],
    *,
    writable: bool = True,
    others: Iterable[tuple[str, Path]] = (),
) -> None:
    """Raise one ``pytest.UsageError`` when an output would overwrite an input or
    another output, or (``writable``) cannot be written. ``others``: outputs that
    are not ours (:func:`other_outputs`), checked for collisions only."""
    known = [(where, _real(path)) for where, path in inputs]
    taken: dict[str, str] = {}
    ours = [
        (settings.where.get(opt.dest, opt.flag), settings.outputs[opt.dest], True)
        for opt in OUTPUT_OPTIONS
        if opt.dest in settings.outputs
    ]
    for where, path, mine in [*ours, *((w, p, False) for w, p in others)]:
        real = _real(path)
        for in_where, in_real in known:
            if real == in_real:
                raise pytest.UsageError(
                    f"{where}={path} is the input file of {in_where} ({in_real}); an output"
                    " never overwrites an input: write it to another path"
                )
        if _in_data_dir(settings, real):
            raise pytest.UsageError(
                f"{where}={path} is a file of {settings.where.get(DATA_DIR.dest, DATA_DIR.flag)}"
                f" ({settings.data_dir}), an input; an output never overwrites an input:"
                " write it to another path"
            )
        if real in taken:
            raise pytest.UsageError(
                f"{where} and {taken[real]} name the same file ({real}); give each"
                " output its own path"
            )
        taken[real] = where
        if not mine:
            continue  # its own plugin checks the rest
        if os.path.isdir(real):
            raise pytest.UsageError(
                f"{where} must be a file path, given a directory: {path}"
            )
        problem = _writable_dir(path) if writable else None
        if problem is not None:
            raise pytest.UsageError(f"{where}: {problem}")


def step_summary_clash(
    settings: Settings,
    inputs: Iterable[tuple[str, Path]],
    others: Iterable[tuple[str, Path]] = (),
) -> str | None:
    """Why the Markdown summary must not be appended to ``$GITHUB_STEP_SUMMARY``
    (None: it may): that file is an input of the run, or the file of an output.

    The variable is the environment's, not the user's flag: the caller warns and
    the run goes on without the step summary.
    """
    raw = os.environ.get("GITHUB_STEP_SUMMARY")
    if not raw or not settings.step_summary:
        return None
    real = _real(Path(raw))
    named = f"$GITHUB_STEP_SUMMARY={raw}"
    refused = (
        "; the Markdown summary is not appended to it (an output never overwrites an"
        " input). Point GITHUB_STEP_SUMMARY elsewhere or pass"
        " --ctxbench-no-step-summary"
    )
    for where, path in inputs:
        if _real(path) == real:
            return f"{named} is the input file of {where} ({real}){refused}"
    if _in_data_dir(settings, real):
        where = settings.where.get(DATA_DIR.dest, DATA_DIR.flag)
        return f"{named} is a file of {where} ({settings.data_dir}), an input{refused}"
    ours = [
        (settings.where.get(opt.dest, opt.flag), settings.outputs[opt.dest])
        for opt in OUTPUT_OPTIONS
        if opt.dest in settings.outputs
    ]
    for where, path in [*ours, *others]:
        if _real(path) == real:
            return (
                f"{named} is the file of {where} ({real}); the Markdown summary is not"
                " appended to it. Point GITHUB_STEP_SUMMARY elsewhere or pass"
                " --ctxbench-no-step-summary"
            )
    return None
