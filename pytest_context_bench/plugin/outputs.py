"""Output files are checked once, before the first example runs.

Every option in :data:`~pytest_context_bench.plugin.options.OUTPUT_OPTIONS` names a
file the run writes at its end. Before anything runs, each one must

- not resolve (symlinks and ``..`` followed) to a file the run reads: a dataset
  file, the ``--ctxbench-baseline``, an existing file of the data directory, the
  tokenizer file;
- not resolve to the file of another output option;
- have a directory that exists (or can be created) and accepts a new file.

Otherwise the run stops with one ``pytest.UsageError`` (exit 4) naming both options.

``$GITHUB_STEP_SUMMARY`` (the environment's, not an option) is never appended to when
it names an input, an output, a file that is not a regular file (a FIFO would block
the run forever), or code and configuration the run reads (its ini file, a
``conftest.py``, the source of a module it imported: a System's, a test's): one
warning, and the run goes on (:func:`step_summary_clash`, :func:`code_clash`).
"""

from __future__ import annotations

import os
import sys
import tempfile
import types
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest

from .._files import special_file
from .options import BASELINE, DATA_DIR, DATASET, OUTPUT_OPTIONS, TOKENIZER, Settings

__all__ = [
    "STEP_SUMMARY_KEY",
    "check_outputs",
    "code_clash",
    "input_files",
    "other_outputs",
    "special_file",
    "step_summary_clash",
]


#: ``config.workeroutput`` key: why an xdist worker found that
#: ``$GITHUB_STEP_SUMMARY`` names code it imported (:func:`code_clash`).
STEP_SUMMARY_KEY = "ctxbench_step_summary"


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
    if settings.judge_labels is not None:
        from .options import JUDGE_LABELS

        out.append((JUDGE_LABELS.flag, settings.judge_labels))
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


_REFUSED = (
    "; the Markdown summary is not appended to it (an output never overwrites an"
    " input). Point GITHUB_STEP_SUMMARY elsewhere or pass --ctxbench-no-step-summary"
)


def step_summary_clash(
    settings: Settings,
    inputs: Iterable[tuple[str, Path]],
    others: Iterable[tuple[str, Path]] = (),
    config: pytest.Config | None = None,
) -> str | None:
    """Why the Markdown summary must not be appended to ``$GITHUB_STEP_SUMMARY``
    (None: it may): that path is not a regular file, or it is an input of the run,
    the file of an output, or (given ``config``) code or configuration the run
    reads (:func:`code_clash`).

    The variable is the environment's, not the user's flag: the caller warns and
    the run goes on without the step summary.
    """
    raw = os.environ.get("GITHUB_STEP_SUMMARY")
    if not raw or not settings.step_summary:
        return None
    named = f"$GITHUB_STEP_SUMMARY={raw}"
    kind = special_file(raw)
    if kind is not None:
        return (
            f"{named} is {kind}, not a regular file; the Markdown summary is not"
            " appended to it (it is never opened: a FIFO with no reader would block"
            " the run forever). Point GITHUB_STEP_SUMMARY at a file or pass"
            " --ctxbench-no-step-summary"
        )
    real = _real(Path(raw))
    for where, path in inputs:
        if _real(path) == real:
            return f"{named} is the input file of {where} ({real}){_REFUSED}"
    if _in_data_dir(settings, real):
        where = settings.where.get(DATA_DIR.dest, DATA_DIR.flag)
        return (
            f"{named} is a file of {where} ({settings.data_dir}), an input{_REFUSED}"
        )
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
    return code_clash(config, raw) if config is not None else None


def _same(a: str, b: os.stat_result) -> bool:
    try:
        st = os.stat(a)
    except OSError:
        return False
    return (st.st_dev, st.st_ino) == (b.st_dev, b.st_ino)


def code_clash(config: pytest.Config, raw: str) -> str | None:
    """Why ``$GITHUB_STEP_SUMMARY=raw`` is code or configuration this process's run
    reads (None: it is not): pytest's configuration file (``config.inipath``: a
    ``pytest.ini``, ``pyproject.toml``, ``tox.ini``, ``setup.cfg``), a
    ``conftest.py`` pytest loaded, or the source file of a module imported in this
    process (a ``--ctxbench-system`` module, the module of a marked test's or a
    fixture's System, a test module, a plugin).

    A path that does not exist is none of them. Files are compared by identity
    (device and inode, symlinks followed); a module is looked at only when its
    file's name is the summary's (or its target's), or when the summary has other
    hard links, so the check costs a few ``stat`` calls. Under xdist each worker
    checks its own imports at its session's finish and tells the controller
    (``workeroutput``).
    """
    try:
        target = os.stat(raw)
    except OSError:
        return None
    named = f"$GITHUB_STEP_SUMMARY={raw}"
    real = _real(Path(raw))
    inipath = config.inipath
    if inipath is not None and _same(str(inipath), target):
        return (
            f"{named} is pytest's configuration file ({real}), read by this run"
            f"{_REFUSED}"
        )
    names = {os.path.basename(raw), os.path.basename(real)}
    # A hard link to a module may have any name: then every module is looked at.
    any_name = target.st_nlink > 1
    for plugin in config.pluginmanager.get_plugins():
        file = getattr(plugin, "__file__", None)
        if (
            isinstance(plugin, types.ModuleType)
            and isinstance(file, str)
            and os.path.basename(file) == "conftest.py"
            and ("conftest.py" in names or any_name)
            and _same(file, target)
        ):
            return f"{named} is a conftest.py pytest loaded ({real}){_REFUSED}"
    for name, module in list(sys.modules.items()):
        file = getattr(module, "__file__", None)
        if (
            isinstance(file, str)
            and (any_name or os.path.basename(file) in names)
            and _same(file, target)
        ):
            return (
                f"{named} is the source of the module {name!r} ({real}), code"
                f" this run imported (a System's, a test's or a plugin's){_REFUSED}"
            )
    return None
