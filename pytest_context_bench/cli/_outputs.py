"""The output files of a ``ctxbench`` command, checked before anything is read or
written: none overwrites an input or another output, none is a directory, and each
can be created (missing directories are; a file in the way is not)."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

__all__ = ["OutputClash", "check_outputs"]


class OutputClash(Exception):
    """An output that cannot be written where it was asked (the message says why)."""


def check_outputs(
    outputs: Iterable[tuple[str, str | Path | None]], inputs: dict[Path, str]
) -> None:
    """:param outputs: ``(flag, path)`` pairs; a ``None`` path is not asked for.
    :param inputs: resolved input path -> what it is (``"one of the shards"``).
    :raises OutputClash: the first output that cannot be written."""
    taken: dict[Path, str] = {}
    for flag, out in outputs:
        if out is None:
            continue
        real = Path(out).resolve()
        if real in inputs:
            raise OutputClash(f"{flag}={out} is {inputs[real]}; write the output elsewhere")
        if real in taken:
            raise OutputClash(
                f"{flag} and {taken[real]} name the same file ({out}); give each"
                " output its own path"
            )
        taken[real] = flag
        if real.is_dir():
            raise OutputClash(f"{flag} must be a file path, given a directory: {out}")
        existing = real.parent
        while not existing.exists() and existing.parent != existing:
            existing = existing.parent  # missing directories are created
        if not existing.is_dir():
            raise OutputClash(f"{flag}={out}: {existing} is not a directory")
