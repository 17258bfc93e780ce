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
from typing import Any

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
    parser.add_argument(
        "--judge-url",
        metavar="URL",
        help="an OpenAI-compatible endpoint: a pairwise judge compares A's and B's"
        " answers to each flipped example, in both orders",
    )
    parser.add_argument(
        "--judge-model",
        metavar="MODEL",
        help="the pairwise judge's model (default: the endpoint's only model, GET /v1/models)",
    )
    parser.add_argument(
        "--judge-criteria",
        metavar="TEXT",
        help="what 'better' means to the pairwise judge (default: correct, complete,"
        " helpful)",
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


def _pairwise(args: argparse.Namespace, result: Any) -> str:
    """Ask the pairwise judge about every flipped example whose two answers the
    reports kept; each entry of ``result.flipped`` gets ``pairwise`` (the verdict,
    or the judge's error on that example). Returns the summary line.

    :raises LLMError: the judge cannot be reached (after its retries).
    """
    from ..evaluators.judges import JudgeError
    from ..evaluators.pairwise import PairwiseJudge, position_inconsistency, task_of

    judge = PairwiseJudge(
        args.judge_url, model=args.judge_model, criteria=args.judge_criteria
    )
    verdicts = []
    skipped = 0
    counts = {"a": 0, "b": 0, "tie": 0}
    for f in result.flipped:
        a, b = f.get("response_before"), f.get("response_after")
        if not isinstance(a, str) or not isinstance(b, str):
            skipped += 1  # a report that kept no answer for this row
            continue
        task = task_of(f.get("calls_before"), f.get("calls_after"))
        try:
            verdict = judge.compare(a, b, task=task, reference=f.get("reference") or None)
        except JudgeError as exc:
            f["pairwise"] = {"error": f"error: {exc}"}
            continue
        verdicts.append(verdict)
        counts[verdict.winner] += 1
        f["pairwise"] = {**verdict.to_dict(), "verdict": verdict.describe()}
    judge.client.close() if judge.client is not None else None
    n = len(verdicts)
    line = (
        f"pairwise judge ({judge.model}) on {n} flipped example(s), each asked in both"
        f" orders: B better in {counts['b']}, A better in {counts['a']}, tie in {counts['tie']}"
    )
    if n:
        rate = position_inconsistency(verdicts)
        inconsistent = sum(1 for v in verdicts if not v.consistent)
        line += f"; position-inconsistent in {inconsistent} of {n} ({rate:.0%}), counted as ties"
    errors = sum(1 for f in result.flipped if "error" in (f.get("pairwise") or {}))
    if errors:
        line += f"; {errors} unreadable verdict(s)"
    if skipped:
        line += f"; {skipped} without both answers in the reports (not judged)"
    result.pairwise = {
        "model": judge.model, "judged": n, "b_better": counts["b"], "a_better": counts["a"],
        "ties": counts["tie"], "position_inconsistency": position_inconsistency(verdicts) if n else None,
        "errors": errors, "not_judged": skipped, "summary": line,
    }
    return line


def run(args: argparse.Namespace) -> int:
    from ..report import load_report
    from ..report.compare import compare_reports
    from ..report.compare import flag as verdict_of
    from ..report.terminal import fit_table

    if not 0 < args.confidence < 1:
        return _fail(
            f"--confidence must be a number in (0, 1), given: {args.confidence!r}"
        )
    if args.judge_model is not None and args.judge_url is None:
        return _fail("--judge-model needs --judge-url (the pairwise judge's endpoint)")
    if args.judge_criteria is not None and args.judge_url is None:
        return _fail("--judge-criteria needs --judge-url (the pairwise judge's endpoint)")
    if args.judge_url is not None and not str(args.judge_url).startswith(("http://", "https://")):
        from ..llm import display_url

        return _fail(f"--judge-url must be an http(s) URL, given: {display_url(str(args.judge_url))!r}")
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
    judged = None
    if args.judge_url is not None:
        from ..errors import LLMError

        if args.judge_model is None:
            from ..systems.models import endpoint_model

            try:
                from ..keys import environment_key

                args.judge_model = endpoint_model(
                    args.judge_url,
                    flag="--judge-model",
                    url_flag="--judge-url",
                    api_key=environment_key("OPENAI_API_KEY"),
                )
            except ConfigError as exc:
                return _fail(" ".join(str(exc).split()))
        try:
            judged = _pairwise(args, result)
        except LLMError as exc:
            # The endpoint failed after its retries: one line, nothing written.
            return _fail(f"the pairwise judge failed: {exc}")

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
    if judged is not None:
        _show()
        _show(judged)
        for f in result.flipped:
            p = f.get("pairwise")
            if p is None:
                continue
            said = p.get("error") or p["verdict"]
            _show(f"  {f['suite']}: {f['dataset']}/{f['example_id']} ({f['before']} → {f['after']}): {said}")
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
