"""``ctxbench merge``: the shard reports of a CI matrix → one report, one gate.

::

    ctxbench merge shard-*.json --json merged.json [--html report.html]
        [--markdown summary.md] [--ctxbench-min-pass-rate=0.8 ...]
        [--ctxbench-baseline=base.json --ctxbench-max-drop=pass_rate:0.02]

Every metric, interval and gate is recomputed from the rows, as one unsharded run
would (see :mod:`pytest_context_bench.merge`); the gate options have the names and
meanings of the pytest options and replace the limits the shards ran with. The
HTML and Markdown views are those of a pytest run (``--ctxbench-html``,
``--ctxbench-markdown``), and the Markdown is appended to ``$GITHUB_STEP_SUMMARY``
when that is set, as a run does. Exit 0
when every gate passes, 1 when one fails, 4 (one line on stderr, nothing written)
when the shards do not make one run or an argument is bad.
"""

from __future__ import annotations

import argparse
import math
import os
import shutil
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from ..errors import CtxBenchError

__all__ = ["add_parser", "run"]

USAGE_ERROR = 4

#: gate name → (flag, lowest, highest, lowest excluded): as the pytest options.
_GATES: dict[str, tuple[str, float, float, bool]] = {
    "min_pass_rate": ("--ctxbench-min-pass-rate", 0.0, 1.0, False),
    "min_mean_score": ("--ctxbench-min-mean-score", -math.inf, math.inf, False),
    "max_cost_of_pass": ("--ctxbench-max-cost-of-pass", 0.0, math.inf, True),
    "max_error_rate": ("--ctxbench-max-error-rate", 0.0, 1.0, False),
    "max_cost_usd": ("--ctxbench-max-cost-usd", 0.0, math.inf, False),
    "max_cost_of_pass_usd": ("--ctxbench-max-cost-of-pass-usd", 0.0, math.inf, False),
    "max_llm_tokens_per_pass": ("--ctxbench-max-llm-tokens-per-pass", 0.0, math.inf, False),
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
    parser.add_argument(
        "--html",
        dest="html_path",
        metavar="PATH",
        help="Write the merged run's HTML report to PATH (as --ctxbench-html)",
    )
    parser.add_argument(
        "--markdown",
        dest="markdown_path",
        metavar="PATH",
        help="Write the merged run's Markdown summary to PATH (as --ctxbench-markdown)",
    )
    parser.add_argument(
        "--ctxbench-no-step-summary",
        "--no-step-summary",
        dest="no_step_summary",
        action="store_true",
        help="Do not append the Markdown summary to $GITHUB_STEP_SUMMARY",
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
    parser.add_argument(
        "--ctxbench-judge-labels",
        dest="judge_labels",
        metavar="PATH",
        help="People's labels, as the pytest option; default: the shards' own (the"
        " file they name must still be readable)",
    )
    parser.add_argument(
        "--ctxbench-min-judge-kappa",
        dest="min_judge_kappa",
        metavar="K",
        help="As the pytest option; default: the shards' own",
    )
    parser.add_argument(
        "--ctxbench-baseline-responses",
        dest="baseline_responses",
        choices=("on", "off"),
        default="on",
        help="Whether the saved baseline keeps the rows' answers, as the pytest option. Default: on",
    )


class _Usage(Exception):
    pass


_OUTPUTS = (
    ("json_path", "--json"),
    ("html_path", "--html"),
    ("markdown_path", "--markdown"),
    ("save_baseline", "--ctxbench-save-baseline"),
)


def _check_outputs(args: argparse.Namespace) -> None:
    """No output overwrites a shard, the baseline or another output, and each can be
    created: checked before anything is read or written."""
    inputs = {Path(p).resolve(): "one of the shards" for p in args.shards}
    if args.baseline is not None:
        inputs[Path(args.baseline).resolve()] = "the baseline (--ctxbench-baseline)"
    if getattr(args, "judge_labels", None) is not None:
        inputs[Path(args.judge_labels).resolve()] = "the labels (--ctxbench-judge-labels)"
    from ._outputs import OutputClash, check_outputs

    try:
        check_outputs(((flag, getattr(args, dest)) for dest, flag in _OUTPUTS), inputs)
    except OutputClash as exc:
        raise _Usage(str(exc)) from None


def _argv(args: argparse.Namespace) -> list[str]:
    """The arguments ``ctxbench merge`` was given (set by :func:`..main`), else
    the ones it understood."""
    given = getattr(args, "_argv", None)
    if given is not None:
        return [str(a) for a in given]
    return [str(p) for p in args.shards]


def _html(doc: dict[str, Any]) -> str:
    from ..report.html import render_html

    return render_html(doc)


def _append(path: Path, text: str) -> None:
    """GitHub's step summary is appended to, as its docs ask; never blocking, and
    only to a regular file."""
    from .._files import append_regular

    append_regular(path, text + "\n")


def _step_summary(args: argparse.Namespace) -> str | None:
    """``$GITHUB_STEP_SUMMARY``, unless ``--ctxbench-no-step-summary``, or unless it
    is not a regular file (a FIFO would block the merge forever; it is never
    opened) or names a shard, the baseline or an output: then one warning on
    stderr, and the merge goes on without it."""
    path = os.environ.get("GITHUB_STEP_SUMMARY")
    if not path or args.no_step_summary:
        return None
    from .._files import special_file

    named = f"$GITHUB_STEP_SUMMARY={path}"
    why = None
    kind = special_file(path)
    if kind is not None:
        why = f"{named} is {kind}, not a regular file"
    else:
        real = Path(path).resolve()
        files = [(p, "one of the shards") for p in args.shards]
        if args.baseline is not None:
            files.append((args.baseline, "the baseline (--ctxbench-baseline)"))
        files += [
            (getattr(args, dest), flag)
            for dest, flag in _OUTPUTS
            if getattr(args, dest) is not None
        ]
        why = next(
            (f"{named} is {what}" for p, what in files if Path(p).resolve() == real),
            None,
        )
    if why is None:
        return path
    print(
        f"ctxbench merge: warning: {why}; the Markdown summary is not appended to it"
        " (an output never overwrites an input). Point GITHUB_STEP_SUMMARY elsewhere"
        " or pass --ctxbench-no-step-summary",
        file=sys.stderr,
    )
    return None


def _judge_labels(args: argparse.Namespace, shards: Any) -> tuple[Any, float | None]:
    """The labels and minimum kappa the merged run's judge is held to: the options
    given, else the shards' own (each shard's ``judge_agreement``; shards that
    disagree are a usage error)."""
    from ..agreement import LabelsError, read_labels

    recorded = {
        (str(a.get("labels")), a.get("min_kappa"))
        for sh in shards
        if isinstance(a := sh.doc.get("judge_agreement"), dict)
    }
    path, kappa = args.judge_labels, None
    if args.min_judge_kappa is not None:
        kappa = _number(args.min_judge_kappa, "--ctxbench-min-judge-kappa", -1.0, 1.0, False)
        if path is None and not recorded:
            raise _Usage("--ctxbench-min-judge-kappa needs --ctxbench-judge-labels=PATH")
    if path is None and recorded:
        if len(recorded) > 1:
            raise _Usage(
                "the shards were held to different judge labels or minimum kappas"
                f" ({'; '.join(sorted(f'{p} >= {k}' for p, k in recorded))}); give"
                " --ctxbench-judge-labels and --ctxbench-min-judge-kappa"
            )
        path, shard_kappa = next(iter(recorded))
        if kappa is None:
            kappa = None if shard_kappa is None else float(shard_kappa)
        try:
            return read_labels(path), kappa
        except LabelsError as exc:
            raise _Usage(
                f"the shards measured their judge against {path}, which cannot be read"
                f" here ({exc}); give it with --ctxbench-judge-labels=PATH"
            ) from None
    if path is None:
        return None, None
    try:
        return read_labels(path), kappa
    except LabelsError as exc:
        raise _Usage(f"--ctxbench-judge-labels: {exc}") from None


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
    from .._files import atomic_write_text
    from ..baseline import load_baseline, parse_tolerance, write_baseline
    from ..merge import load_shard, merge_llm, merge_shards
    from ..results import json_safe
    from ..urls import redact
    from ..report import render_lines, to_json_dict, write_json
    from ..verdict import agreement_doc, comparison_doc, comparison_lines, judge

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
    _check_outputs(args)
    notes: list[str] = []
    shards = [load_shard(p, notes) for p in args.shards]
    baseline = load_baseline(args.baseline) if args.baseline is not None else None
    notes += baseline.notes if baseline is not None else []
    merged = merge_shards(shards, limits)
    if baseline is not None:
        # The shards were scored by other evaluators (or another score field) than
        # the baseline: the merge has neither the evaluators nor the examples to
        # score the baseline again.
        from ..rescore import needs_rescore

        for suite in merged.report.suites:
            why = needs_rescore(
                baseline.suite(str(suite["label"])), suite.get("evaluators") or {},
                suite.get("score_field"),
            )
            if why is not None:
                raise _Usage(
                    f"baseline {baseline.path}: suite {suite['label']!r} was scored by other"
                    f" evaluators or another score field ({why}); score it again with the"
                    " run's evaluators first (ctxbench rescore BASELINE --evaluator ..."
                    " --save-baseline NEW.json), then merge with --ctxbench-baseline=NEW.json"
                )
    from .._text import inert

    for note in notes:  # money that could not be recomputed here: unknown
        print(f"ctxbench merge: warning: {inert(note)}", file=sys.stderr)
    report = merged.report
    labels, min_kappa = _judge_labels(args, shards)
    verdict = judge(
        report,
        baseline,
        max_drops=max_drops,
        confidence=confidence,
        require_same_examples=args.require_same_examples,
        fingerprints=merged.fingerprints or None,
        # the shards' --ctxbench-seed: the merged verdict is the single run's
        seed=_shard_seed(merged.run),
        familywise=_shard_familywise(merged.run),
        labels=labels,
        min_kappa=min_kappa,
    )
    enforced = not args.no_gate
    run_info = dict(merged.run)
    # The header of every view names the merge, not shard 1's command line.
    run_info["invocation"] = ["ctxbench", "merge", *map(redact, _argv(args))]
    doc = to_json_dict(
        report, run=run_info, gates_enforced=enforced, version=merged.version
    )
    llm = merge_llm(shards)
    if llm is not None:
        doc["llm"] = json_safe(llm)
    comparison = comparison_doc(verdict)
    if comparison is not None:
        doc["baseline_comparison"] = comparison
    agreement = agreement_doc(verdict)
    if agreement is not None:
        doc["judge_agreement"] = agreement
    width = shutil.get_terminal_size().columns  # COLUMNS first, as pytest's
    lines = [
        text for text, _ in render_lines(report, gate_enforced=enforced, width=width)
    ]
    lines += [text for text, _ in comparison_lines(verdict, enforced)]
    if verdict.gating is not None:
        lines += verdict.gating.lines()
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
    # Every view is rendered before anything is written.
    step_summary = _step_summary(args)
    markdown = None
    if args.markdown_path is not None or step_summary is not None:
        from ..report.markdown import render_markdown

        markdown = render_markdown(doc)
    html = _html(doc) if args.html_path is not None else ""
    writes: list[tuple[str, str | None, Callable[[Path], None]]] = [
        ("JSON report", args.json_path, lambda path: write_json(doc, path)),
        ("HTML report", args.html_path, lambda path: atomic_write_text(path, html)),
        (
            "Markdown summary",
            args.markdown_path,
            lambda path: atomic_write_text(path, markdown or ""),
        ),
        ("step summary", step_summary, lambda path: _append(path, markdown or "")),
    ]
    for what, out, write in writes:
        if out is None:
            continue
        try:
            write(Path(out))
        except OSError as exc:
            lines.append(f"could not write the {what} to {out}: {exc.strerror or exc}")
            status = 1
        else:
            if what != "step summary":
                lines.append(f"{what}: {out}")
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
                args.save_baseline,
                doc,
                dataset_fingerprints=merged.fingerprints,
                answers=args.baseline_responses == "on",
            )
            lines.append(f"baseline saved: {args.save_baseline}")
    lines.append(
        f"merged {len(shards)} shards, {len(report.records)} rows (pytest-context-bench"
        f" {__version__}): {'gates failed' if status else 'ok'}"
    )
    from .._text import inert
    from ..report.terminal import wrap_line

    # Suite names, ids and messages come from the shards: shown, never acted on;
    # every line fits the terminal.
    print("\n".join(out for line in lines for out in wrap_line(inert(line), width)))
    return status


def _shard_seed(run: Mapping[str, Any]) -> int:
    """The ``--ctxbench-seed`` the shards ran with (0 when they did not say)."""
    options = run.get("options") if isinstance(run, Mapping) else None
    seed = options.get("seed") if isinstance(options, Mapping) else None
    return seed if isinstance(seed, int) and not isinstance(seed, bool) and seed >= 0 else 0


def _shard_familywise(run: Mapping[str, Any]) -> str:
    """The ``--ctxbench-familywise`` the shards ran with (``none`` when they did not
    say): the merged verdict adjusts its gates as the single run would."""
    options = run.get("options") if isinstance(run, Mapping) else None
    mode = options.get("familywise") if isinstance(options, Mapping) else None
    return mode if mode in ("none", "holm") else "none"
