"""The ``ctxbench`` command: work on reports and caches outside a pytest run.

Each subcommand is a module of this package with two functions,
``add_parser(subparsers)`` (registers its arguments) and ``run(args) -> int`` (the
exit status). :data:`COMMANDS` lists them: a subcommand is one entry there and one
module here.

``ctxbench --version`` prints the installed version (exit 0).

Exit statuses follow pytest's: 0 all good, 1 a gate failed or a difference was
found, 4 a usage error (a bad argument or an unreadable file, said in one line).
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

__all__ = ["COMMANDS", "main"]

#: subcommand name → (module under this package, one-line help).
COMMANDS: dict[str, tuple[str, str]] = {
    "compare": ("compare", "Compare two JSON reports: per suite and metric, the paired change, and the flipped examples."),
    "cache": ("cache", "Look at or clear the LLM response cache."),
    "merge": ("merge", "Merge the JSON reports of --ctxbench-shard jobs into one report and one gate."),
    "calibrate": ("calibrate", "Measure a run's LLM judge against people's labels: agreement, Cohen's kappa, the confusion matrix, the disagreements."),
    "rescore": ("rescore", "Score a report's or a baseline's saved answers again, without the System."),
    "history": ("history", "Show the runs of a folder of reports or baselines over time, as one offline HTML page."),
}

USAGE_ERROR = 4


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ctxbench",
        description="Work on pytest-context-bench reports and caches.",
    )
    from .. import __version__

    parser.add_argument(
        "--version",
        action="version",
        version=f"ctxbench (pytest-context-bench) {__version__}",
    )
    subs = parser.add_subparsers(dest="command", metavar="COMMAND")
    subs.required = True
    for name, (module, help_text) in COMMANDS.items():
        mod = importlib.import_module(f"{__name__}.{module}")
        sub = subs.add_parser(name, help=help_text, description=help_text)
        mod.add_parser(sub)
        sub.set_defaults(_run=mod.run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``ctxbench`` with ``argv`` (default: the process arguments)."""
    parser = _parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse exits 2 on bad usage; we say 4, like pytest
        code = exc.code if isinstance(exc.code, int) else USAGE_ERROR
        return USAGE_ERROR if code == 2 else code
    # What the command was given: ``ctxbench merge`` names itself in its report.
    args._argv = list(sys.argv[2:] if argv is None else argv[1:])
    status: int = args._run(args)
    return status


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
