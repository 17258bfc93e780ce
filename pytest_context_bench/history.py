"""Runs over time: a folder of JSON reports (or baselines) in time order. Pure (no
pytest).

:func:`load_history` reads each file with the readers every command uses, and keeps
of it what the history shows: its summary per suite and, per example, its rows'
scores (compactly). :func:`build_history` then gives, per suite and metric, one point
per run; flags each run whose pass rate or mean score is **significantly worse than
the previous run's**, decided exactly as the baseline gate decides a max-drop of 0
(the same pairing of examples and trials, the same test, seed and confidence:
:func:`worse_than`); and lists the examples that flip between pass and fail often
over the runs (chronically flaky). :mod:`pytest_context_bench.report.history_view`
draws it.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .errors import ConfigError
from .report.run import Record
from .results import EvalRow

__all__ = [
    "CHARTED",
    "FLAGGED",
    "Flag",
    "History",
    "Run",
    "build_history",
    "load_history",
    "worse_than",
]

#: Metrics drawn per suite (those a run's summary has), in this order.
CHARTED = (
    "pass_rate",
    "mean_score",
    "error_rate",
    "cost_of_pass",
    "cost_of_pass_usd",
    "total_cost_usd",
)
#: Metrics whose drop from one run to the next is tested (higher is better).
FLAGGED = ("pass_rate", "mean_score")
#: Row metadata a history keeps (what pairing and pass outcomes read).
_KEPT = ("score_field", "trial")


@dataclass
class Run:
    """One file of the history."""

    path: Path
    kind: str
    created: str | None
    git_commit: str | None
    version: str
    summary: dict[str, dict[str, float]]
    suites: dict[str, dict[str, Any]]
    records: dict[str, list[Record]] = field(default_factory=dict)
    rows: int = 0

    @property
    def name(self) -> str:
        return self.path.name


def natural_key(text: str) -> tuple[tuple[int, int | str], ...]:
    """``run-2`` before ``run-10``."""
    return tuple(
        (0, int(part)) if part.isdigit() else (1, part) for part in re.split(r"(\d+)", text) if part
    )


def _files(paths: Sequence[str | os.PathLike[str]]) -> list[Path]:
    out: list[Path] = []
    for raw in paths:
        p = Path(raw)
        if p.is_dir():
            found = sorted((f for f in p.iterdir() if f.suffix == ".json" and not f.name.startswith(".")),
                           key=lambda f: natural_key(f.name))
            if not found:
                raise ConfigError(f"{p}: the folder holds no .json file; pass a folder of JSON reports or baselines, or the files")
            out += found
        else:
            out.append(p)
    seen: set[Path] = set()
    unique = []
    for f in out:
        real = f.resolve()
        if real not in seen:
            seen.add(real)
            unique.append(f)
    return unique


def _compact(rec: Record) -> Record:
    row = rec.row
    slim = EvalRow(
        system=row.system,
        example_id=row.example_id,
        scores=dict(row.scores),
        input_tokens=row.input_tokens,
        output_tokens=row.output_tokens,
        metadata={k: row.metadata[k] for k in _KEPT if k in row.metadata},
        latency=row.latency,
        dataset=row.dataset,
        error=None if row.error is None else {"type": str(row.error.get("type", "")), "message": "", "where": str(row.error.get("where", ""))},
    )
    return Record(rec.suite, rec.origin, rec.order, rec.status, slim, None)


def load_history(paths: Sequence[str | os.PathLike[str]]) -> list[Run]:
    """The runs of ``paths`` (files, or folders of ``*.json`` files), in time order:
    by each report's ``created`` when every file has one (a baseline has none), else
    by file name, digits read as numbers (``run-2`` before ``run-10``).

    :raises ConfigError: one line naming a file that is not a readable, valid JSON
        report or baseline (the readers' checks), or a folder without one.
    """
    from .rescore import load_saved

    runs: list[Run] = []
    for path in _files(paths):
        saved = load_saved(path)
        created = saved.created
        records: dict[str, list[Record]] = {}
        for rec in saved.records:
            records.setdefault(rec.suite, []).append(_compact(rec))
        runs.append(
            Run(
                path=path,
                kind=saved.kind,
                created=str(created) if created else None,
                git_commit=saved.git_commit,
                version=saved.version,
                summary={k: dict(v) for k, v in saved.summary.items()},
                suites={str(s["label"]): dict(s) for s in saved.suites},
                records=records,
                rows=len(saved.records),
            )
        )
    if runs and all(r.created for r in runs):
        runs.sort(key=lambda r: (str(r.created), natural_key(r.name)))
    else:
        runs.sort(key=lambda r: natural_key(r.name))
    return runs


# ----------------------------------------------------------------------- the test


@dataclass(frozen=True)
class Flag:
    """A run significantly worse than the previous one on one suite's metric."""

    run: int  # index in the history
    suite: str
    metric: str
    then: float
    now: float
    reason: str


def worse_than(
    previous: Sequence[Record],
    previous_suite: Mapping[str, Any],
    current: Sequence[Record],
    current_suite: Mapping[str, Any],
    metric: str,
    *,
    confidence: float = 0.95,
    seed: int = 0,
) -> tuple[bool, float, float, str]:
    """Is ``metric`` (``pass_rate`` or ``mean_score``) significantly worse in
    ``current`` than in ``previous``? Decided as the baseline gate decides
    ``--ctxbench-max-drop=METRIC:0`` with ``previous`` as the baseline (the same
    trials paired per example, the same test, seed and confidence, the same
    verdict, :func:`~pytest_context_bench.stats.drop_verdict`), computing the
    bootstrap bound only for a drop whose p-value is significant (otherwise no
    bound can fail it).

    :return: ``(worse, then, now, reason)``.
    """
    then, now = _paired(previous, previous_suite, current, current_suite)
    return _worse(then, now, metric, confidence, seed)


def _paired(
    previous: Sequence[Record],
    previous_suite: Mapping[str, Any],
    current: Sequence[Record],
    current_suite: Mapping[str, Any],
) -> tuple[dict[tuple[str, str], Any], dict[tuple[str, str], Any]]:
    """Each example of each side, its trials balanced as the gate balances them."""
    from .baseline import _examples, balance_trials

    cur, base, _ = balance_trials(current, previous)
    return _examples(base, previous_suite), _examples(cur, current_suite)


def _worse(
    then: Mapping[tuple[str, str], Any],
    now: Mapping[tuple[str, str], Any],
    metric: str,
    confidence: float,
    seed: int,
) -> tuple[bool, float, float, str]:
    from .stats import describe_test, drop_verdict, paired_p_values, paired_test

    attr = "passed" if metric == "pass_rate" else "score"
    pairs = [
        (getattr(then[k], attr), getattr(now[k], attr)) for k in then if k in now
    ]
    kept = [(b, a) for b, a in pairs if b is not None and a is not None]
    before, after = [b for b, _ in kept], [a for _, a in kept]
    if not kept:
        return False, math.nan, math.nan, "no example in both runs"
    mean_b, mean_a = math.fsum(before) / len(before), math.fsum(after) / len(after)
    test, p_lower, _, discordant = paired_p_values(before, after, seed=seed)
    if not mean_a < mean_b or not p_lower <= 1.0 - confidence:
        return False, mean_b, mean_a, "not significantly worse"
    result = paired_test(before, after, confidence=confidence, seed=seed, higher_is_better=True)
    verdict = drop_verdict(result, 0.0, True, False, confidence, name=metric)
    return verdict.failed, mean_b, mean_a, describe_test(result)


# ----------------------------------------------------------------------- the history


@dataclass
class History:
    """What :func:`build_history` made."""

    runs: list[Run]
    #: suite labels, first seen first
    suites: list[str]
    #: suite → metric → one value per run (``nan``: the run had no such value)
    series: dict[str, dict[str, list[float]]]
    flags: list[Flag]
    #: (run index, suite, why): consecutive runs not compared (other evaluators)
    not_compared: list[tuple[int, str, str]]
    #: (suite, "dataset/id", flips, outcomes per run: "pass", "fail", "mixed" or None)
    flaky: list[tuple[str, str, int, list[str | None]]]
    min_flips: int
    confidence: float


def _value(x: Any) -> float:
    if isinstance(x, (int, float)) and not isinstance(x, bool):
        return float(x)
    if isinstance(x, str):
        try:
            return float(x)
        except ValueError:
            return math.nan
    return math.nan


def _outcomes(examples: Mapping[tuple[str, str], Any]) -> dict[tuple[str, str], str | None]:
    out: dict[tuple[str, str], str | None] = {}
    for key, ex in examples.items():
        p = ex.passed
        out[key] = None if p is None else "pass" if p >= 1.0 else "fail" if p <= 0.0 else "mixed"
    return out


def _single_trial(records: Sequence[Record]) -> bool:
    """No example has several trials: the gate's pairing keeps every row."""
    seen: set[tuple[str, str]] = set()
    for r in records:
        key = (r.row.dataset, r.row.example_id)
        if key in seen:
            return False
        seen.add(key)
    return True


def build_history(
    runs: Sequence[Run], *, min_flips: int = 3, confidence: float = 0.95, seed: int = 0
) -> History:
    """Per suite and metric one point per run, the runs significantly worse than
    the previous one (:func:`worse_than`: a suite compared with its last earlier
    run that has it, unless their evaluators or score field differ, which is said
    instead), and the examples whose pass outcome changed at least ``min_flips``
    times between consecutive runs they were in."""
    from .baseline import _examples
    from .rescore import needs_rescore

    suites: list[str] = []
    for run in runs:
        for label in [*run.summary, *run.suites]:
            if label not in suites:
                suites.append(label)
    series: dict[str, dict[str, list[float]]] = {}
    for label in suites:
        present = {m for run in runs for m in run.summary.get(label, {}) if m in CHARTED}
        series[label] = {
            m: [_value(run.summary.get(label, {}).get(m)) for run in runs]
            for m in CHARTED
            if m in present
        }
    flags: list[Flag] = []
    not_compared: list[tuple[int, str, str]] = []
    flaky: list[tuple[str, str, int, list[str | None]]] = []
    for label in suites:
        last: int | None = None
        last_examples: dict[tuple[str, str], Any] | None = None
        seq: dict[tuple[str, str], list[str | None]] = {}
        for i, run in enumerate(runs):
            if label not in run.records:
                continue
            records, info = run.records[label], run.suites.get(label, {})
            # A run of one trial per example pairs as it is: its examples are
            # computed once, for both its comparisons and its outcomes.
            examples = _examples(records, info) if _single_trial(records) else None
            for key, outcome in _outcomes(examples if examples is not None else _examples(records, info)).items():
                seq.setdefault(key, [None] * len(runs))[i] = outcome
            if last is not None:
                prev = runs[last]
                why = needs_rescore(prev.suites.get(label), info.get("evaluators") or {}, info.get("score_field"))
                if why is not None:
                    not_compared.append((i, label, why))
                else:
                    if examples is not None and last_examples is not None:
                        pair = (last_examples, examples)
                    else:
                        pair = _paired(prev.records[label], prev.suites.get(label, {}), records, info)
                    for metric in FLAGGED:
                        worse, then, now, reason = _worse(pair[0], pair[1], metric, confidence, seed)
                        if worse:
                            flags.append(Flag(i, label, metric, then, now, reason))
            last, last_examples = i, examples
        for (dataset, example_id), outcomes in seq.items():
            seen = [o for o in outcomes if o is not None]
            flips = sum(1 for a, b in zip(seen, seen[1:]) if a != b)
            if flips >= min_flips:
                flaky.append((label, f"{dataset}/{example_id}", flips, outcomes))
    flaky.sort(key=lambda f: (-f[2], f[0], natural_key(f[1])))
    return History(list(runs), suites, series, flags, not_compared, flaky, min_flips, confidence)


def runs_line(history: History) -> str:
    runs = history.runs
    if not runs:
        return "no run"
    first, last = runs[0], runs[-1]
    when = f", {first.created} to {last.created}" if first.created and last.created else ""
    return f"{len(runs)} run(s){when}: {first.name} ... {last.name}" if len(runs) > 1 else f"1 run: {first.name}"


def flag_lines(history: History) -> Iterable[str]:
    from .stats import format_number

    for f in history.flags:
        run, prev = history.runs[f.run], _previous(history, f.run, f.suite)
        yield (
            f"run {f.run + 1} ({run.name}) {f.suite}: {f.metric} significantly worse than run"
            f" {prev + 1 if prev is not None else '?'}: {format_number(f.then)} → {format_number(f.now)} ({f.reason})"
        )
    for i, label, why in history.not_compared:
        yield f"run {i + 1} ({history.runs[i].name}) {label}: not compared with the run before (other evaluators or score field: {why})"


def _previous(history: History, index: int, label: str) -> int | None:
    for j in range(index - 1, -1, -1):
        if label in history.runs[j].records:
            return j
    return None
