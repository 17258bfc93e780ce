"""``ctxbench merge``: the shard reports of a CI matrix → one report, one gate.

::

    ctxbench merge shard-*.json --json merged.json [--ctxbench-min-pass-rate=0.8 ...]
        [--ctxbench-baseline=base.json --ctxbench-max-drop=pass_rate:0.02]

Every metric, interval and gate is recomputed from the rows, as one unsharded run
would (see :mod:`pytest_context_bench.merge`); the gate options have the names and
meanings of the pytest options and replace the limits the shards ran with. Exit 0
when every gate passes, 1 when one fails, 4 (one line on stderr, nothing written)
when the shards do not make one run or an argument is bad.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

from ..errors import CtxBenchError

__all__ = ["add_parser", "run"]

USAGE_ERROR = 4

#: gate name → (flag, lowest, highest, lowest excluded): as the pytest options.
_GATES: dict[str, tuple[str, float, float, bool]] = {
    "min_pass_rate": ("--ctxbench-min-pass-rate", 0.0, 1.0, False),
    "min_mean_score": ("--ctxbench-min-mean-score", -math.inf, math.inf, False),
    "max_cost_of_pass": ("--ctxbench-max-cost-of-pass", 0.0, math.inf, True),
    "max_error_rate": ("--ctxbench-max-error-rate", 0.0, 1.0, False),
}


def add_parser(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "shards",
        nargs="+",
        metavar="SHARD.json",
        help="The JSON reports (--ctxbench-json) of every shard of one run",
    )
    parser.add_argument(
        "--json",
        dest="json_path",
        metavar="PATH",
        help="Write the merged JSON report to PATH",
    )
    for name, (flag, *_rest) in _GATES.items():
        parser.add_argument(
            flag,
            dest=name,
            metavar="X",
            help=f"Gate, as the pytest option {flag}; replaces the shards' own limit",
        )
    parser.add_argument(
        "--ctxbench-no-gate",
        dest="no_gate",
        action="store_true",
        help="Report the gates without failing",
    )
    parser.add_argument(
        "--ctxbench-baseline",
        "--baseline",
        dest="baseline",
        metavar="PATH",
        help="Compare the merged run with this baseline",
    )
    parser.add_argument(
        "--ctxbench-max-drop",
        dest="max_drop",
        action="append",
        default=[],
        metavar="METRIC:AMOUNT",
        help="Baseline gate, as the pytest option",
    )
    parser.add_argument(
        "--ctxbench-confidence",
        dest="confidence",
        metavar="X",
        help="Confidence of the baseline gates. Default: 0.95",
    )
    parser.add_argument(
        "--ctxbench-require-same-examples",
        dest="require_same_examples",
        action="store_true",
        help="As the pytest option",
    )
    parser.add_argument(
        "--ctxbench-save-baseline",
        dest="save_baseline",
        metavar="PATH",
        help="Save the merged run as a baseline (refused when incomplete)",
    )


class _Usage(Exception):
    pass


def _number(raw: str, flag: str, lo: float, hi: float, open_lo: bool) -> float:
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if (
        not math.isfinite(value)
        or (value <= lo if open_lo else value < lo)
        or value > hi
    ):
        raise _Usage(f"{flag} must be a number in range, given: {raw!r}")
    return value


def run(args: argparse.Namespace) -> int:
    try:
        return _run(args)
    except (_Usage, CtxBenchError) as exc:
        print(f"ctxbench merge: error: {' '.join(str(exc).split())}", file=sys.stderr)
        return USAGE_ERROR


def _run(args: argparse.Namespace) -> int:
    from .. import __version__
    from ..baseline import load_baseline, parse_tolerance, write_baseline
    from ..merge import load_shard, merge_shards
    from ..report import render_lines, to_json_dict, write_json
    from ..verdict import comparison_doc, comparison_lines, judge

    limits: dict[str, float | None] = {}
    for name, (flag, lo, hi, open_lo) in _GATES.items():
        raw = getattr(args, name)
        limits[name] = None if raw is None else _number(raw, flag, lo, hi, open_lo)
    confidence = 0.95
    if args.confidence is not None:
        confidence = _number(args.confidence, "--ctxbench-confidence", 0.0, 1.0, True)
    max_drops = dict(parse_tolerance(spec) for spec in args.max_drop)
    if max_drops and args.baseline is None:
        raise _Usage("--ctxbench-max-drop needs --ctxbench-baseline=PATH")
    inputs = {Path(p).resolve() for p in args.shards}
    for out in (args.json_path, args.save_baseline):
        if out is not None and Path(out).resolve() in inputs:
            raise _Usage(
                f"{out} is one of the shards; write the merged report elsewhere"
            )
    shards = [load_shard(p) for p in args.shards]
    baseline = load_baseline(args.baseline) if args.baseline is not None else None
    merged = merge_shards(shards, limits)
    report = merged.report
    verdict = judge(
        report,
        baseline,
        max_drops=max_drops,
        confidence=confidence,
        require_same_examples=args.require_same_examples,
        fingerprints=merged.fingerprints or None,
    )
    enforced = not args.no_gate
    doc = to_json_dict(
        report, run=merged.run, gates_enforced=enforced, version=merged.version
    )
    comparison = comparison_doc(verdict)
    if comparison is not None:
        doc["baseline_comparison"] = comparison
    lines = [text for text, _ in render_lines(report, gate_enforced=enforced)]
    lines += [text for text, _ in comparison_lines(verdict, enforced)]
    for label, c in report.completeness.get("suites", {}).items():
        if c["received"] < c["expected"]:
            lines.append(
                f"{label}: {c['received']} of {c['expected']} expected rows arrived;"
                f" lost (counted as errors): {', '.join(c['lost'][:10])}"
            )
    status = 1 if verdict.breached and enforced else 0
    if verdict.baseline_error is not None:
        lines.append(verdict.baseline_error)
        status = 1
    if args.json_path is not None:
        write_json(doc, Path(args.json_path))
        lines.append(f"JSON report: {args.json_path}")
    if args.save_baseline is not None:
        if not report.completeness.get("complete", True):
            lines.append(
                f"baseline not saved to {args.save_baseline}: the run is incomplete"
                f" ({len(report.completeness.get('lost', []))} example(s) produced no row"
                " of their own); re-run the whole suite to record a baseline"
            )
            status = 1
        else:
            write_baseline(
                args.save_baseline, doc, dataset_fingerprints=merged.fingerprints
            )
            lines.append(f"baseline saved: {args.save_baseline}")
    lines.append(
        f"merged {len(shards)} shards, {len(report.records)} rows (pytest-context-bench"
        f" {__version__}): {'gates failed' if status else 'ok'}"
    )
    print("\n".join(lines))
    return status
