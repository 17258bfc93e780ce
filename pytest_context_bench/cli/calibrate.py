"""``ctxbench calibrate REPORT LABELS``: how far a run's judge agrees with people.

REPORT is a JSON report (``--ctxbench-json``) of a run whose rows a judge scored
(a rubric, the 1-5 judge, MemoryJudge, llm-rubric assertions); LABELS a JSONL file
of people's labels, ``{"example_id": ..., "label": "pass" | "fail" | <score>}`` per
line (:func:`pytest_context_bench.agreement.read_labels`). Per suite it prints the
number of labelled examples the judge scored, the raw agreement, Cohen's kappa
(quadratic-weighted kappa and Spearman's rank correlation too for scores), the
confusion matrix (people × judge) and the examples where they disagree;
``--json OUT`` writes the same as a JSON document.

Exit status: 0; 1 with ``--min-kappa K`` when a suite's kappa (quadratic-weighted
for scores) is below K or undefined; 4 for a bad argument, an unreadable report or
labels file (one line naming the file and line), or when no labelled example was
judged (nothing to measure).
"""

from __future__ import annotations

import argparse
import json
import math
import shutil
import sys
from pathlib import Path

from .._text import inert

__all__ = ["add_parser", "run"]

USAGE_ERROR = 4
#: disagreeing examples printed per suite (all of them are in --json)
_SHOWN = 20


def add_parser(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("report", metavar="REPORT.json", help="the run's JSON report (--ctxbench-json)")
    parser.add_argument(
        "labels",
        metavar="LABELS.jsonl",
        help='people\'s labels, one {"example_id": ..., "label": ...} per line',
    )
    parser.add_argument("--json", dest="json_path", metavar="OUT", help="also write the result as JSON to OUT")
    parser.add_argument(
        "--min-kappa",
        metavar="K",
        help="exit 1 when a suite's kappa (quadratic-weighted for scores) is below K",
    )


def _fail(message: str) -> int:
    print(f"ctxbench calibrate: error: {' '.join(message.split())}", file=sys.stderr)
    return USAGE_ERROR


def _show(*parts: object) -> None:
    """Print, the data's control and direction characters escaped, wrapped."""
    from ..report.terminal import wrap_line

    text = " ".join(inert(str(p)) for p in parts)
    for line in wrap_line(text, shutil.get_terminal_size().columns):
        print(line)


def _f(x: float | None) -> str:
    if x is None:
        return ""
    return "undefined" if math.isnan(x) else f"{x:.3f}"


def run(args: argparse.Namespace) -> int:
    from ..agreement import LabelsError, calibrate, read_labels, summary_line
    from ..errors import ConfigError
    from ..report import load_report
    from ..report.terminal import fit_table

    min_kappa = None
    if args.min_kappa is not None:
        try:
            min_kappa = float(args.min_kappa)
        except ValueError:
            min_kappa = math.nan
        if not -1.0 <= min_kappa <= 1.0:
            return _fail(f"--min-kappa must be a number in [-1, 1], given: {args.min_kappa!r}")
    if args.json_path is not None:
        out = Path(args.json_path)
        if out.is_dir():
            return _fail(f"--json must be a file path, given a directory: {args.json_path!r}")
        if out.resolve() in (Path(args.report).resolve(), Path(args.labels).resolve()):
            return _fail(f"--json would overwrite a file it reads: {args.json_path!r}")
    try:
        doc = load_report(args.report)
        labels = read_labels(args.labels)
    except (ConfigError, LabelsError) as exc:
        return _fail(str(exc))
    thresholds = {str(s["label"]): float(s.get("threshold", 0.7)) for s in doc.get("suites", [])}
    results = calibrate(doc.get("rows", []), labels, thresholds)
    matched = sum(c.n for c in results)
    if not matched:
        judged = sum(c.n + c.unlabelled + c.errors for c in results)
        why = (
            "no row of the report was scored by a judge (a rubric, the 1-5 judge,"
            " MemoryJudge or an llm-rubric assertion)"
            if not judged
            else f"none of the {judged} judged row(s) has a label (labels are matched by"
            " example_id, and dataset or system when the labels give them)"
        )
        problems = [p for c in results for p in c.problems]
        if problems:
            why += f"; {problems[0]}"
        return _fail(f"nothing to measure in {args.report} against {args.labels}: {why}")
    _show(f"report {args.report}; labels {args.labels} ({labels.kind}: {len(labels.items)} label(s))")
    below: list[str] = []
    for cal in results:
        _show()
        _show(f"{cal.suite}: {summary_line(cal)}")
        if cal.n:
            measure = "quadratic-weighted kappa" if cal.kind == "score" else "Cohen's kappa"
            _show(f"  raw agreement {_f(cal.agreement)}; Cohen's kappa {_f(cal.kappa)}"
                  + (f"; quadratic-weighted kappa {_f(cal.weighted_kappa)}; Spearman {_f(cal.spearman)}"
                     if cal.kind == "score" else ""))
            names = ["pass" if c is True else "fail" if c is False else str(c) for c in cal.categories]
            rows = [[f"people: {name}", *map(str, cal.matrix[i])] for i, name in enumerate(names)]
            for text in fit_table(["", *[f"judge: {n}" for n in names]], rows, shutil.get_terminal_size().columns):
                print(text)
            if min_kappa is not None and (math.isnan(cal.gate_kappa) or cal.gate_kappa < min_kappa):
                below.append(f"{cal.suite} ({measure} {_f(cal.gate_kappa)})")
        for problem in cal.problems[:_SHOWN]:
            _show(f"  not compared: {problem}")
        if cal.disagreements:
            _show(f"  disagreements ({len(cal.disagreements)}):")
            for d in cal.disagreements[:_SHOWN]:
                line = f"    {d['example']}: people {d['label']}, judge {d['judge']}"
                if "judge_rating" in d:
                    line += f" (rating {d['judge_rating']:g})"
                if d.get("judge_reason"):
                    reason = d["judge_reason"]
                    line += f": {reason[:200]}{'…' if len(reason) > 200 else ''}"
                _show(line)
            if len(cal.disagreements) > _SHOWN:
                _show(f"    ... and {len(cal.disagreements) - _SHOWN} more" + (" (in --json)" if args.json_path else ""))
    if args.json_path is not None:
        from .._files import atomic_write_text
        from ..results import json_safe

        body = {
            "report": str(args.report),
            "labels": str(args.labels),
            "kind": labels.kind,
            "suites": [c.to_dict() for c in results],
        }
        try:
            atomic_write_text(args.json_path, json.dumps(json_safe(body), indent=1, ensure_ascii=False) + "\n")
        except OSError as exc:
            return _fail(f"could not write {args.json_path}: {exc.strerror or exc}")
        _show(f"written: {args.json_path}")
    if below:
        print()
        _show(f"judge agreement below --min-kappa {min_kappa:g}: {', '.join(below)}")
        return 1
    return 0
