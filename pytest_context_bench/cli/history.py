"""``ctxbench history``: the runs of a folder of JSON reports (or baselines), in
time order, as one offline HTML page (and a Markdown summary).

::

    ctxbench history DIR|FILES... --html OUT.html [--markdown OUT.md]
        [--min-flips N] [--confidence X]

Per suite and metric, one point per run (inline SVG); each run whose pass rate or
mean score is significantly worse than the previous run's is flagged, by the baseline
gate's own paired test (:func:`pytest_context_bench.history.worse_than`); the
examples whose pass outcome flipped at least ``--min-flips`` times (default 3) are
listed as chronically flaky. Every file is read with the checks of ``ctxbench
compare`` and ``merge`` (a baseline with those of ``--ctxbench-baseline``).

Exit status: 0; 4 for a bad argument, a file that is not a readable, valid report or
baseline, a folder without one, or an output that would overwrite an input or
another output (one line on stderr; nothing is written).
"""

from __future__ import annotations

import argparse
import shutil
import sys

from .._text import inert
from ..errors import CtxBenchError

__all__ = ["add_parser", "run"]

USAGE_ERROR = 4


class _Usage(Exception):
    pass


def add_parser(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("paths", nargs="+", metavar="DIR|FILE", help="A folder of JSON reports or baselines (its *.json files), or the files")
    parser.add_argument("--html", dest="html_path", metavar="PATH", required=True, help="Write the history as one offline HTML page")
    parser.add_argument("--markdown", dest="markdown_path", metavar="PATH", help="Also write it as a Markdown summary")
    parser.add_argument("--min-flips", type=int, default=3, metavar="N",
                        help="An example whose pass outcome changed at least N times is chronically flaky. Default: 3")
    parser.add_argument("--confidence", type=float, default=0.95, metavar="X",
                        help="Confidence of the test that flags a run worse than the run before. Default: 0.95")


def run(args: argparse.Namespace) -> int:
    try:
        return _run(args)
    except (_Usage, CtxBenchError) as exc:
        print(f"ctxbench history: error: {inert(' '.join(str(exc).split()))}", file=sys.stderr)
        return USAGE_ERROR


def _run(args: argparse.Namespace) -> int:
    from .._files import atomic_write_text
    from ..history import _files, build_history, flag_lines, load_history, runs_line
    from ..report.history_view import render_history_html, render_history_markdown
    from ..report.terminal import wrap_line

    if args.min_flips < 1:
        raise _Usage(f"--min-flips must be an integer >= 1, given: {args.min_flips}")
    if not 0 < args.confidence < 1:
        raise _Usage(f"--confidence must be a number in (0, 1), given: {args.confidence!r}")
    from ._outputs import OutputClash, check_outputs

    inputs = {p.resolve(): f"one of the runs read ({p})" for p in _files(args.paths)}
    try:
        check_outputs([("--html", args.html_path), ("--markdown", args.markdown_path)], inputs)
    except OutputClash as exc:
        raise _Usage(str(exc)) from None
    runs = load_history(args.paths)
    history = build_history(runs, min_flips=args.min_flips, confidence=args.confidence)
    page = render_history_html(history)
    markdown = render_history_markdown(history) if args.markdown_path is not None else None
    width = shutil.get_terminal_size().columns
    lines = [runs_line(history)]
    lines += list(flag_lines(history)) or ["no run is significantly worse than the run before it"]
    lines.append(f"chronically flaky examples (flipped at least {history.min_flips} times): {len(history.flaky)}")
    status = 0
    for what, out, text in (("HTML history", args.html_path, page), ("Markdown history", args.markdown_path, markdown)):
        if out is None or text is None:
            continue
        try:
            atomic_write_text(out, text)
        except OSError as exc:
            lines.append(f"could not write the {what} to {out}: {exc.strerror or exc}")
            status = 1
        else:
            lines.append(f"{what}: {out} ({len(text.encode('utf-8')):,} bytes)")
    print("\n".join(o for line in lines for o in wrap_line(inert(line), width)))
    return status
