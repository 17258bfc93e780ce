"""``ctxbench compare A.json B.json``: two runs, suite by suite, example by example.

Prints, per suite and metric, A, B, the paired difference with its interval and
p-value (the statistics of the baseline gate) and the examples that flipped between
pass and fail; ``--html`` and ``--markdown`` write the same as a page or a summary.
Suites are matched by label; those in only one report are named and left out.

Exit status: 0, or 1 when pass rate, mean score or cost of pass is significantly
worse in B (its one-sided p-value at most ``1 - confidence``; latency is shown,
``slower``, but does not decide: it depends on the machine), or 4 for a bad argument or an unreadable
report (one line on stderr; nothing is written).
"""

from __future__ import annotations

import argparse
import math
import shutil
import sys
from pathlib import Path

from .._files import atomic_write_text
from .._text import inert
from ..errors import ConfigError
from ..stats import format_number

__all__ = ["add_parser", "run"]


def add_parser(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "a", metavar="A.json", help="the earlier run (its --ctxbench-json report)"
    )
    parser.add_argument("b", metavar="B.json", help="the later run, compared with A")
    parser.add_argument(
        "--html",
        metavar="PATH",
        help="also write the comparison as a self-contained page",
    )
    parser.add_argument(
        "--markdown", metavar="PATH", help="also write it as a Markdown summary"
    )
    parser.add_argument(
        "--confidence",
        type=float,
        default=0.95,
        metavar="X",
        help="confidence of the intervals and of 'significantly worse' (default 0.95)",
    )


def _fail(message: str) -> int:
    print(f"ctxbench compare: error: {message}", file=sys.stderr)
    return 4


def _signed(x: float) -> str:
    return format_number(x) if math.isnan(x) or x <= 0 else "+" + format_number(x)


def _width() -> int:
    """The terminal's width (``COLUMNS`` first, as pytest's)."""
    return shutil.get_terminal_size().columns


def _show(*parts: object) -> None:
    """Print, every control and direction character of the data shown as an escape
    (suite names and example ids come from the reports), wrapped to the terminal."""
    from ..report.terminal import wrap_line

    text = " ".join(inert(str(p)) for p in parts)
    for line in wrap_line(text, _width()):
        print(line)


def run(args: argparse.Namespace) -> int:
    from ..report import load_report
    from ..report.compare import compare_reports
    from ..report.compare import flag as verdict_of
    from ..report.terminal import fit_table

    if not 0 < args.confidence < 1:
        return _fail(
            f"--confidence must be a number in (0, 1), given: {args.confidence!r}"
        )
    for flag, out in (("--html", args.html), ("--markdown", args.markdown)):
        if out is None:
            continue
        target = Path(out)
        if target.is_dir():
            return _fail(f"{flag} must be a file path, given a directory: {out!r}")
        if target.parent.exists() and not target.parent.is_dir():
            return _fail(f"{flag}: {target.parent} is not a directory")
        if target.resolve() in (Path(args.a).resolve(), Path(args.b).resolve()):
            return _fail(f"{flag} would overwrite the report it reads: {out!r}")
    notes: list[str] = []
    try:
        a, b = load_report(args.a, notes=notes), load_report(args.b, notes=notes)
        result = compare_reports(
            a, b, a_name=args.a, b_name=args.b, confidence=args.confidence
        )
    except ConfigError as exc:
        return _fail(" ".join(str(exc).split()))
    for note in notes:  # money that could not be recomputed here: unknown
        print(f"ctxbench compare: warning: {inert(note)}", file=sys.stderr)

    # Everything is computed before anything is written.
    outputs: list[tuple[str, str]] = []
    if args.markdown:
        from ..report.markdown import render_compare_markdown

        outputs.append((args.markdown, render_compare_markdown(result)))
    if args.html:
        from ..report.html import render_html

        outputs.append(
            (
                args.html,
                render_html(
                    b,
                    diff=result.diff(),
                    title=f"ctxbench compare: {args.b} against {args.a}",
                ),
            )
        )

    _show(
        f"A = {args.a}; B = {args.b}; confidence {args.confidence * 100:g}% (intervals"
        " two-sided; p one-sided, of B worse)"
    )
    _show(result.scope_line())
    for s in result.suites:
        _show()
        line = f"{s['suite']}: {s['n_matched']} example(s) in both"
        if s["only_a"] or s["only_b"]:
            line += f" ({len(s['only_a'])} only in A, {len(s['only_b'])} only in B)"
        _show(line)
        rows = [
            [
                m["metric"],
                format_number(m["then"]),
                format_number(m["now"]),
                _signed(m["change"]),
                f"[{format_number(m['ci_low'])}, {format_number(m['ci_high'])}]",
                format_number(m["p_value"]),
                verdict_of(m),
            ]
            for m in result.metrics
            if m["suite"] == s["suite"]
        ]
        headers = ["metric", "A", "B", "change", "95% CI", "p (B worse)", "verdict"]
        for text in fit_table(headers, rows, _width()):  # names and numbers: no data
            print(text)
        for key, what in (
            ("flipped_to_fail", "pass → fail"),
            ("flipped_to_pass", "fail → pass"),
        ):
            if s[key]:
                shown = " ".join(s[key][:20]) + (
                    f" ... and {len(s[key]) - 20} more" if len(s[key]) > 20 else ""
                )
                _show(f"  flipped {what} ({len(s[key])}): {shown}")
    try:
        for path, text in outputs:
            atomic_write_text(path, text)
            _show(f"written: {path}")
    except OSError as exc:
        return _fail(f"could not write {exc.filename or path}: {exc.strerror or exc}")
    worse = result.worse
    if worse:
        print()
        _show(
            f"{len(worse)} metric(s) significantly worse in B: "
            + ", ".join(f"{m['suite']} {m['metric']}" for m in worse)
        )
        return 1
    return 0
