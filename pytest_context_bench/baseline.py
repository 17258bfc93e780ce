"""Baselines: save a run's rows to a reviewable file, load it back, compare a run to it.

A baseline is meant to be committed and reviewed in pull requests, so the file is
diff-friendly: strict JSON, a fixed top-level key order, nested keys sorted, **one row
per line** inside ``"rows"``, and nothing in a row that changes from run to run
without the behaviour changing (no timestamp, no latency). Shape::

    {
      "schema_version": 1,
      "kind": "pytest-context-bench baseline",
      "plugin": {"name": "pytest-context-bench", "version": "0.1.0"},
      "git_commit": "0123abc..." | null,
      "datasets": {tag: fingerprint},
      "systems": [name, ...],
      "options": {...the run's options...},
      "summary": {suite: {metric: value}},
      "suites": [{label, origin, system, datasets, score_field, threshold, limits, strict}],
      "rows": [
        {"suite": ..., "dataset": ..., "example_id": ..., "system": ..., "status": ..., "scores": {...}, ...,
         "answer": {"response": ..., "tool_calls": ...}},
        ...
      ]
    }

Each row keeps its ``answer`` (what the evaluators read, capped:
:mod:`pytest_context_bench.answers`) unless the run said
``--ctxbench-baseline-responses=off``: it is scored again without the System when
the evaluators change (``ctxbench rescore``, and the gate, docs/gating.md).

:func:`compare` matches the current run's rows to the baseline's by
``(suite, dataset, example_id)`` (an id is unique within its dataset only) and tests
each metric with the paired tests of :mod:`pytest_context_bench.stats`.
"""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ._files import atomic_write_text, not_regular
from .answers import answer_problem
from ._json import JSONValueError, strict_loads
from .errors import ConfigError
from .metrics import row_score
from .metrics.scores import primary_field, score_passes
from .report.money import MoneyCheck
from .report.rows import row_problem, status_problem
from .report.run import Record, RunReport
from .results import EvalRow, from_json_safe, json_safe
from .stats import _p as _p_text  # the comparison's one p-value format
from .stats import (
    format_number,
    N_RESAMPLES,
    DropVerdict,
    PairedResult,
    describe_test,
    drop_verdict,
    one_sample_test,
    paired_ratio_test,
    paired_test,
)

__all__ = [
    "BASELINE_KIND",
    "BASELINE_SCHEMA_VERSION",
    "DROP_METRICS",
    "Baseline",
    "Comparison",
    "MetricComparison",
    "SuiteComparison",
    "Tolerance",
    "baseline_document",
    "check_datasets",
    "compare",
    "git_commit",
    "load_baseline",
    "parse_tolerance",
    "render_baseline",
    "write_baseline",
]

BASELINE_SCHEMA_VERSION = 1
BASELINE_KIND = "pytest-context-bench baseline"

#: Metrics a max-drop gate may name → ``True`` when higher is better.
DROP_METRICS: dict[str, bool] = {
    "pass_rate": True,
    "mean_score": True,
    "cost_of_pass": False,
    "latency_mean": False,
    "cost_of_pass_usd": False,
}

_TOP_KEYS = (
    "schema_version",
    "kind",
    "plugin",
    "git_commit",
    "datasets",
    "systems",
    "options",
    "summary",
    "suites",
    "rows",
)
# Row keys in reading order: where the row belongs first, then what it scored.
_ROW_KEYS = (
    "suite",
    "dataset",
    "example_id",
    "system",
    "status",
    "scores",
    "input_tokens",
    "output_tokens",
    "error",
    "metadata",
    "answer",
)
#: Row keys written only when the row has them.
_ROW_OPTIONAL = ("answer",)
_STATUSES = ("pass", "below", "error", "unscored")
_FIX = "re-create it with --ctxbench-save-baseline"


# --------------------------------------------------------------------------- tolerance


@dataclass(frozen=True)
class Tolerance:
    """How much a metric may worsen: ``amount`` in the metric's units, or a fraction
    of the baseline value when ``relative`` (``"10%"`` → ``Tolerance(0.1, True)``)."""

    amount: float
    relative: bool = False

    def __str__(self) -> str:
        return f"{self.amount * 100:g}%" if self.relative else f"{self.amount:g}"


def parse_tolerance(spec: str) -> tuple[str, Tolerance]:
    """Parse one ``--ctxbench-max-drop`` value, ``METRIC:AMOUNT``.

    :param spec: e.g. ``"pass_rate:0.02"`` (absolute) or ``"cost_of_pass:10%"``
        (relative to the baseline's value).
    :return: ``(metric, Tolerance)``.
    :raises ConfigError: naming the spec and the known metrics, for an unknown
        metric, a missing colon, or an amount that is not a number ``>= 0``.
    """
    known = ", ".join(DROP_METRICS)
    example = "e.g. pass_rate:0.02 or cost_of_pass:10%"
    metric, sep, amount = str(spec).partition(":")
    metric, amount = metric.strip(), amount.strip()
    if not sep or not metric or not amount:
        raise ConfigError(f"--ctxbench-max-drop {spec!r}: expected METRIC:AMOUNT ({example}); known metrics: {known}.")
    if metric not in DROP_METRICS:
        raise ConfigError(f"--ctxbench-max-drop {spec!r}: unknown metric {metric!r}; known metrics: {known}.")
    relative = amount.endswith("%")
    number = amount[:-1].strip() if relative else amount
    try:
        value = float(number)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value < 0:
        raise ConfigError(
            f"--ctxbench-max-drop {spec!r}: the amount {amount!r} must be a number >= 0 or a percentage ({example})."
        )
    return metric, Tolerance(value / 100.0 if relative else value, relative)


# ------------------------------------------------------------------------------ write


def git_commit(cwd: str | os.PathLike[str] | None = None) -> str | None:
    """``git rev-parse HEAD`` in ``cwd``, or ``None`` when it is not a git work tree,
    git is not installed, or git does not answer within 10 s."""
    try:
        proc = subprocess.run(
            ["git", "rev-parse", "HEAD"],
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    sha = proc.stdout.strip()
    return sha if proc.returncode == 0 and sha else None


def _sorted(value: Any) -> Any:
    """A copy with every dict's keys sorted (a stable order for diffs)."""
    if isinstance(value, dict):
        return {str(k): _sorted(value[k]) for k in sorted(value, key=str)}
    if isinstance(value, (list, tuple)):
        return [_sorted(v) for v in value]
    return value


def _baseline_row(row: Mapping[str, Any], answers: bool = True) -> dict[str, Any]:
    # Latency (and anything not in _ROW_KEYS, e.g. a future timestamp) is dropped:
    # it changes on every run and would make every re-saved baseline a diff.
    return {
        k: _sorted(row.get(k))
        for k in _ROW_KEYS
        if k not in _ROW_OPTIONAL or (row.get(k) is not None and (answers or k != "answer"))
    }


def baseline_document(
    report_doc: Mapping[str, Any],
    *,
    git_commit: str | None = None,
    dataset_fingerprints: Mapping[str, str] | None = None,
    answers: bool = True,
) -> dict[str, Any]:
    """The baseline dict built from a JSON report dict (``to_json_dict`` output).

    :param report_doc: the JSON report (its ``created``, ``run``, ``gates`` and
        ``lost`` are not kept; ``run.options`` becomes ``options``).
    :param git_commit: the commit, see :func:`git_commit`.
    :param dataset_fingerprints: ``{tag: fingerprint}`` of the run's datasets.
    :param answers: keep each row's ``answer`` (what the System returned, capped:
        :mod:`~pytest_context_bench.answers`); ``False`` with
        ``--ctxbench-baseline-responses=off``.
    :return: a dict in the file's key order (see the module docstring).
    """
    run = report_doc.get("run") or {}
    options = run.get("options", report_doc.get("options", {})) if isinstance(run, dict) else {}
    suites = list(report_doc.get("suites", []))
    systems = list(dict.fromkeys(str(s.get("system")) for s in suites if isinstance(s, dict)))
    plugin = report_doc.get("plugin") or {"name": "pytest-context-bench", "version": "unknown"}
    datasets = dataset_fingerprints if dataset_fingerprints is not None else report_doc.get("datasets", {})
    doc = {
        "schema_version": BASELINE_SCHEMA_VERSION,
        "kind": BASELINE_KIND,
        "plugin": _sorted(dict(plugin)),
        "git_commit": git_commit if git_commit is not None else report_doc.get("git_commit"),
        "datasets": _sorted(dict(datasets)),
        "systems": systems,
        "options": _sorted(dict(options)),
        "summary": _sorted(dict(report_doc.get("summary", {}))),
        "suites": _sorted(suites),
        "rows": [_baseline_row(r, answers) for r in report_doc.get("rows", [])],
    }
    return json_safe(doc)  # type: ignore[no-any-return]


def _dump(value: Any, indent: int | None = None) -> str:
    return json.dumps(value, indent=indent, allow_nan=False, ensure_ascii=False)


def render_baseline(doc: Mapping[str, Any]) -> str:
    """The file text of a baseline dict: indented JSON, one row per line."""
    parts = []
    for key in _TOP_KEYS:
        value = doc.get(key)
        if key == "rows":
            rows = [_dump(r) for r in value or []]
            text = "[\n" + ",\n".join("    " + r for r in rows) + "\n  ]" if rows else "[]"
        else:
            text = _dump(value, indent=2).replace("\n", "\n  ")
        parts.append(f"  {_dump(key)}: {text}")
    return "{\n" + ",\n".join(parts) + "\n}\n"


def write_baseline(
    path: str | os.PathLike[str],
    doc: Mapping[str, Any],
    *,
    git_commit: str | None = None,
    dataset_fingerprints: Mapping[str, str] | None = None,
    answers: bool = True,
) -> None:
    """Write the baseline of a run to ``path`` atomically (temporary file + ``os.replace``).

    :param path: the baseline file; its directory is created if needed.
    :param doc: the JSON report dict (``to_json_dict`` output), or a baseline dict
        (``kind`` set), written as is (but its answers, with ``answers=False``).
    :param git_commit: see :func:`baseline_document`.
    :param dataset_fingerprints: see :func:`baseline_document`.
    :param answers: see :func:`baseline_document`.
    :raises OSError: when the file cannot be written (nothing is left behind).
    """
    if doc.get("kind") == BASELINE_KIND and git_commit is None and dataset_fingerprints is None:
        base = dict(doc)
        if not answers:
            base["rows"] = [_baseline_row(r, False) for r in base.get("rows", [])]
    else:
        base = baseline_document(
            doc, git_commit=git_commit, dataset_fingerprints=dataset_fingerprints, answers=answers
        )
    text = render_baseline(base)
    atomic_write_text(path, text)


# ------------------------------------------------------------------------------- load


@dataclass
class Baseline:
    """A loaded, validated baseline.

    :param path: the file it came from.
    :param plugin_version: the plugin version that wrote it.
    :param git_commit: the commit it was saved at, or ``None``.
    :param datasets: ``{tag: fingerprint}``.
    :param systems: the system names.
    :param options: the run's options when it was saved.
    :param summary: ``{suite: {metric: value}}`` (non-finite values restored).
    :param suites: the suite descriptions (label, origin, system, threshold, ...).
    :param records: the rows as :class:`~pytest_context_bench.report.run.Record`
        (suite, origin, order = file position, status, :class:`EvalRow` with latency 0).
    :param notes: why some rows' money counts as unknown (``null``): it could not be
        recomputed from their calls and the run's prices here
        (:class:`~pytest_context_bench.report.money.MoneyCheck`).
    """

    path: Path
    plugin_version: str
    git_commit: str | None
    datasets: dict[str, str]
    systems: list[str]
    options: dict[str, Any]
    summary: dict[str, dict[str, float]]
    suites: list[dict[str, Any]]
    records: list[Record] = field(default_factory=list)
    #: why some rows' money counts as unknown (it could not be recomputed here)
    notes: list[str] = field(default_factory=list)

    @property
    def rows(self) -> dict[tuple[str, str, str], list[Record]]:
        """Records per ``(suite, dataset, example_id)`` (several with repeated trials)."""
        out: dict[tuple[str, str, str], list[Record]] = {}
        for rec in self.records:
            out.setdefault((rec.suite, rec.row.dataset, rec.row.example_id), []).append(rec)
        return out

    def suite(self, label: str) -> dict[str, Any] | None:
        """The suite description with this label, or ``None``."""
        return next((s for s in self.suites if s.get("label") == label), None)


def _bad(path: Path, what: str) -> ConfigError:
    return ConfigError(f"baseline {path}: {what}; {_FIX}.")


def load_baseline(path: str | os.PathLike[str]) -> Baseline:
    """Read and validate a baseline file.

    :param path: the file written by :func:`write_baseline`.
    :return: the :class:`Baseline`.
    :raises ConfigError: naming the file, what is wrong and how to fix it, when the
        file is missing, unreadable, not JSON, of another schema version or kind, or
        lacks a key or has a malformed row, or a row whose money is not what its
        calls cost at the run's prices (``options.prices``;
        :class:`~pytest_context_bench.report.money.MoneyCheck`). Money that cannot
        be recomputed here counts as unknown, said in :attr:`Baseline.notes`.
    """
    p = Path(path)
    if not p.exists():
        raise ConfigError(
            f"baseline {p}: the file does not exist; create it with --ctxbench-save-baseline={p} "
            "(e.g. on the main branch) or fix the path."
        )
    problem = not_regular(p)
    if problem is not None:
        raise ConfigError(f"baseline {p}: {problem}.")
    try:
        text = p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise ConfigError(f"baseline {p}: cannot be read ({reason}); check the path and its permissions.") from exc
    try:
        doc = strict_loads(text)
    except json.JSONDecodeError as exc:
        raise _bad(p, f"is not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})") from exc
    except JSONValueError as exc:
        raise _bad(p, f"cannot be used: {exc}") from None
    if not isinstance(doc, dict):
        raise _bad(p, f"must hold a JSON object, found {type(doc).__name__}")
    if "kind" not in doc and "created" in doc and "gates" in doc:
        raise _bad(p, "is a JSON report (--ctxbench-json), not a baseline")
    version = doc.get("schema_version")
    if version != BASELINE_SCHEMA_VERSION:
        raise _bad(
            p,
            f"has schema_version {version!r}, this version of pytest-context-bench reads "
            f"schema_version {BASELINE_SCHEMA_VERSION}",
        )
    missing = [k for k in _TOP_KEYS if k not in doc]
    if missing:
        raise _bad(p, f"is missing the key{'s' if len(missing) > 1 else ''} {', '.join(missing)}")
    if doc["kind"] != BASELINE_KIND:
        raise _bad(p, f"has kind {doc['kind']!r}, expected {BASELINE_KIND!r}")
    for key, kind in (("datasets", dict), ("options", dict), ("summary", dict), ("plugin", dict), ("systems", list), ("suites", list), ("rows", list)):
        if not isinstance(doc[key], kind):
            raise _bad(p, f"{key!r} must be a JSON {'object' if kind is dict else 'array'}")
    try:
        summary = {
            str(s): {str(k): from_json_safe(v) for k, v in m.items()} for s, m in doc["summary"].items()
        }
    except (AttributeError, ValueError) as exc:
        raise _bad(p, f"'summary' is malformed ({exc})") from exc
    suites = [s for s in doc["suites"] if isinstance(s, dict)]
    if len(suites) != len(doc["suites"]) or any("label" not in s for s in suites):
        raise _bad(p, "every entry of 'suites' must be an object with a 'label'")
    origins = {str(s["label"]): str(s.get("origin", "")) for s in suites}
    by_label = {str(s["label"]): s for s in suites}
    records: list[Record] = []
    seen: dict[tuple[Any, ...], int] = {}
    # Each row's money against its calls and the run's prices (``options.prices``).
    money = MoneyCheck(doc["options"], where="options.prices")
    if money.problem is not None:
        raise _bad(p, money.problem)
    for i, raw in enumerate(doc["rows"]):
        where = f"rows[{i}]"
        if not isinstance(raw, dict):
            raise _bad(p, f"{where} must be an object")
        if not isinstance(raw.get("suite"), str):
            raise _bad(p, f"{where} has no 'suite'")
        if raw.get("status") not in _STATUSES:
            raise _bad(p, f"{where} has status {raw.get('status')!r}, expected one of {', '.join(_STATUSES)}")
        try:
            row = EvalRow.from_dict(raw)
        except (ValueError, TypeError) as exc:
            raise _bad(p, f"{where} is malformed ({exc})") from exc
        problem = row_problem(raw, set(origins), seen, i)
        described = by_label[raw["suite"]] if problem is None else {}
        threshold = described.get("threshold")
        if problem is None and type(threshold) in (int, float):
            # The status follows from the scores and the threshold: an edited
            # score (or status) is refused, as ``load_report`` refuses it.
            problem = status_problem(raw, described)
        if problem is None:
            problem = money.row({"metadata": row.metadata})
            if problem is None and "answer" in raw:
                problem = answer_problem(raw["answer"])
            if problem is not None:
                problem = f"(suite {raw['suite']!r}, example_id {raw['example_id']!r}) {problem}"
        if problem is not None:
            raise _bad(p, f"{where} {problem}")
        suite = raw["suite"]
        io = {"answer": raw["answer"]} if "answer" in raw else None
        records.append(Record(suite, origins.get(suite, ""), (i,), str(raw["status"]), row, io))
    plugin = doc["plugin"]
    commit = doc["git_commit"]
    return Baseline(
        path=p,
        plugin_version=str(plugin.get("version", "unknown")),
        git_commit=None if commit is None else str(commit),
        datasets={str(k): str(v) for k, v in doc["datasets"].items()},
        systems=[str(s) for s in doc["systems"]],
        options=dict(doc["options"]),
        summary=summary,
        suites=suites,
        records=records,
        notes=money.notes(f"baseline {p}"),
    )


def check_datasets(baseline: Baseline, fingerprints: Mapping[str, str]) -> None:
    """Refuse a baseline whose datasets changed since it was saved.

    :param baseline: the loaded baseline.
    :param fingerprints: ``{tag: fingerprint}`` of the datasets this run uses.
    :raises ConfigError: when a dataset present in both has another fingerprint
        (its examples changed, so example ids no longer mean the same thing).
    """
    changed = sorted(t for t, fp in fingerprints.items() if t in baseline.datasets and baseline.datasets[t] != fp)
    if changed:
        raise ConfigError(
            f"baseline {baseline.path}: the dataset{'s' if len(changed) > 1 else ''} {', '.join(changed)} "
            f"changed since the baseline was saved (other fingerprint); {_FIX} on the new data."
        )


# ---------------------------------------------------------------------------- compare


@dataclass(frozen=True)
class MetricComparison:
    """One metric of one suite, baseline vs now.

    :param metric: ``pass_rate``, ``mean_score``, ``cost_of_pass`` or ``latency_mean``.
    :param then: the baseline's value over the matched examples.
    :param now: the current value over the same examples.
    :param result: the paired test (``diff`` = now − then, its interval and p-value).
    :param tolerance: the max-drop gate on it, or ``None`` (reported, not gated).
    :param verdict: the gate's verdict, or ``None`` without a gate.
    """

    suite: str
    metric: str
    then: float
    now: float
    result: PairedResult
    tolerance: Tolerance | None = None
    verdict: DropVerdict | None = None
    #: ``(level, adjusted p)`` under ``--ctxbench-familywise=holm``, else ``None``
    holm: tuple[float, float] | None = None
    #: why the max-drop gate is reported but not enforced (a judge that agrees too
    #: little with people's labels), else ``None``
    not_enforced: str | None = None

    @property
    def failed(self) -> bool:
        return self.verdict is not None and self.verdict.failed


@dataclass(frozen=True)
class SuiteComparison:
    """A suite present in both the baseline and the run.

    Example ids are ``example_id``, or ``dataset/example_id`` when the suite has
    several datasets; each list is sorted.
    """

    suite: str
    metrics: list[MetricComparison]
    flipped_to_fail: list[str]
    flipped_to_pass: list[str]
    new: list[str]
    missing: list[str]
    n_matched: int
    #: trials set aside to pair as many per example (:func:`balance_trials`)
    trials_left_out: dict[str, int] = field(default_factory=dict)
    #: what the reader should know about how the suite was compared
    notes: list[str] = field(default_factory=list)
    #: the evaluators the baseline was scored again with (its own differed from
    #: the run's: rescore.apply_rescored); empty when it was not
    rescored_with: list[str] = field(default_factory=list)


@dataclass
class Comparison:
    """The run compared with a baseline.

    :param suites: the suites in both, in the run's order.
    :param only_current: suite labels not in the baseline (reported, not failed).
    :param only_baseline: baseline suite labels not in this run (reported, not failed).
    """

    baseline_path: str
    git_commit: str | None
    confidence: float
    suites: list[SuiteComparison]
    only_current: list[str]
    only_baseline: list[str]
    #: ``--ctxbench-familywise``
    familywise: str = "none"

    @property
    def breaches(self) -> list[MetricComparison]:
        """The gated metrics that failed (and are enforced)."""
        return [m for s in self.suites for m in s.metrics if m.failed and m.not_enforced is None]

    @property
    def passed(self) -> bool:
        return not self.breaches

    def lines(self) -> list[str]:
        """A readable report section, one string per line (no markup)."""
        commit = f" (commit {self.git_commit[:12]})" if self.git_commit else ""
        out = [
            f"baseline {self.baseline_path}{commit}, confidence {self.confidence * 100:g}%"
            " (intervals two-sided, gates one-sided)"
            + (", gates adjusted together (Holm)" if self.familywise == "holm" else "")
        ]
        for s in self.suites:
            out.append(f"{s.suite}: {s.n_matched} examples matched")
            if s.trials_left_out:
                left = " and ".join(f"{n} of the {side}'s" for side, n in s.trials_left_out.items())
                out.append(
                    f"  paired on as many trials per example on each side: {left} trials left out"
                )
            out += [f"  {note}" for note in s.notes]
            for m in s.metrics:
                r = m.result
                line = (
                    f"  {m.metric}: now {_fmt(m.now)}, then {_fmt(m.then)}, change {_signed(r.diff)}"
                    f" [{_fmt(r.ci_low)}, {_fmt(r.ci_high)}]"
                )
                # Each number once: the interval is on the line, the test's
                # evidence without it (the verdict's full sentence is in the JSON
                # report and in the ctxbench::max_drop test's failure text).
                if m.verdict is None:
                    out.append(f"{line}; {describe_test(r, interval=False)}")
                else:
                    verdict = "FAILED" if m.failed else "passed"
                    if m.not_enforced is not None:
                        verdict = f"{'failed' if m.failed else 'passed'} (not enforced: {m.not_enforced})"
                    out.append(
                        f"{line}; gate max-drop {m.tolerance}: {verdict}, {self._why(m)}"
                    )
            for label, ids in (
                ("flipped pass → fail", s.flipped_to_fail),
                ("flipped fail → pass", s.flipped_to_pass),
                ("new since the baseline", s.new),
                ("missing from this run", s.missing),
            ):
                if ids:
                    out.append(f"  {label} ({len(ids)}): {' '.join(ids)}")
        if self.only_current:
            out.append(f"not in the baseline (not compared): {', '.join(self.only_current)}")
        if self.only_baseline:
            out.append(f"in the baseline but not run (not compared): {', '.join(self.only_baseline)}")
        n = len(self.breaches)
        out.append(f"baseline gates: {n} failed" if n else "baseline gates: passed")
        return out

    def _why(self, m: MetricComparison) -> str:
        return _short_why(m, self.confidence)


def _fmt(x: float) -> str:
    return format_number(x)


def _short_why(m: MetricComparison, confidence: float) -> str:
    """Why a max-drop gate decided so, in a few words (its numbers are on the line)."""
    v, r = m.verdict, m.result
    assert v is not None
    evidence = describe_test(r, interval=False)
    if r.n == 0 or math.isnan(r.diff):
        return "no paired example to compare"
    holm = ""
    if m.holm is not None:
        level, adjusted = m.holm
        confidence = 1.0 - level if level > 0 else confidence
        holm = f", Holm-adjusted p = {_p_text(adjusted)}"
    if v.failed:
        return (
            f"significantly worse ({evidence}{holm}; one-sided {confidence * 100:.4g}% bound"
            f" on the drop {_fmt(v.bound)} > {_fmt(v.tolerance)})"
        )
    if not v.drop > v.tolerance:
        return "not worse" if v.drop <= 0 else f"within the tolerance {_fmt(v.tolerance)}"
    if m.holm is not None and m.holm[0] == 0.0:
        return f"not significant after Holm's adjustment ({evidence}{holm})"
    if not r.p_worse(DROP_METRICS[m.metric]) <= 1 - confidence:
        return f"not significant ({evidence}{holm})"
    return (
        f"significant ({evidence}{holm}) but not beyond the tolerance: bound"
        f" {_fmt(v.bound)} <= {_fmt(v.tolerance)}"
    )


def _signed(x: float) -> str:
    return _fmt(x) if math.isnan(x) or x < 0 else "+" + _fmt(x)


@dataclass
class _Example:
    """One example of one side, trials averaged."""

    score: float | None
    passed: float | None  # share of trials passing; None when never scored
    tokens: float
    latency: float | None
    #: the System's calls' cost in US dollars (nan: a call without a price), and
    #: whether any of its rows measured LLM usage (:class:`~.metrics.MoneyCost`'s rules)
    money: float = 0.0
    metered: bool = False


def _row_money(row: EvalRow) -> float:
    """A row's ``cost_usd`` as MoneyCost counts it: 0 without a measured call, nan
    for a call without a price."""
    if "llm_usage" not in row.metadata:
        return 0.0
    value = row.metadata.get("cost_usd")
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    return math.nan


def _examples(records: Iterable[Record], suite: Mapping[str, Any]) -> dict[tuple[str, str], _Example]:
    threshold = float(suite.get("threshold", 0.7))
    field_ = suite.get("score_field")
    groups: dict[tuple[str, str], list[EvalRow]] = {}
    for rec in records:
        groups.setdefault((rec.row.dataset, rec.row.example_id), []).append(rec.row)
    out: dict[tuple[str, str], _Example] = {}
    for key, rows in groups.items():
        scores = [s for s in (row_score(r, field_) for r in rows) if s is not None]
        # As PassRate: an errored row is a scored failure, an unscored row is left out.
        passes = [1.0 if r.error is None and score_passes(r.scores, primary_field(r, field_), threshold) else 0.0
                  for r in rows if row_score(r, field_) is not None]
        lat = [r.latency for r in rows if r.error is None]
        out[key] = _Example(
            score=math.fsum(scores) / len(scores) if scores else None,
            passed=math.fsum(passes) / len(passes) if passes else None,
            tokens=math.fsum(r.output_tokens for r in rows) / len(rows),
            latency=math.fsum(lat) / len(lat) if lat else None,
            money=math.fsum(_row_money(r) for r in rows) / len(rows),
            metered=any("llm_usage" in r.metadata for r in rows),
        )
    return out


def _ids(keys: Iterable[tuple[str, str]], several: bool) -> list[str]:
    """The flipped examples' ids in natural order (``HumanEval/2`` before
    ``HumanEval/12``)."""
    return sorted((f"{d}/{e}" if several else e for d, e in keys), key=natural_key)


def natural_key(text: str) -> tuple[tuple[int, int | str], ...]:
    """Sort key reading runs of digits as numbers: ``q-2`` < ``q-10``."""
    return tuple(
        (0, int(part)) if part.isdigit() else (1, part)
        for part in re.split(r"(\d+)", text)
        if part
    )


def compare(
    baseline: Baseline,
    current: RunReport,
    max_drops: Mapping[str, Tolerance],
    *,
    confidence: float = 0.95,
    seed: int = 0,
    n_resamples: int = N_RESAMPLES,
    extra_metrics: Iterable[str] = (),
    familywise: str = "none",
) -> Comparison:
    """Compare a run with a baseline, suite by suite, example by example.

    Per suite in both: ``pass_rate`` and ``mean_score`` always (plus
    ``cost_of_pass``, ``latency_mean`` and ``cost_of_pass_usd`` when ``max_drops``
    names them), each over
    the examples matched by ``(dataset, example_id)``: then, now, the paired
    difference with its interval and p-value, and the max-drop verdict when gated.
    ``pass_rate`` pairs each example's pass outcome (primary score ``>=`` the
    suite's threshold and no error; exact McNemar for single trials), ``mean_score``
    its :func:`~pytest_context_bench.metrics.row_score` (sign-flip test),
    ``cost_of_pass`` the ratio of output tokens to passes (paired bootstrap),
    ``cost_of_pass_usd`` the ratio of the rows' ``cost_usd`` to passes (the same
    test; when either side's money is unknown its max-drop gate fails), and
    ``latency_mean`` bootstraps the current latencies against the baseline summary's
    mean (a baseline keeps no per-row latency). Every metric pairs, per example, as
    many trials of each side (:func:`balance_trials`): the first ``k`` of each, ``k``
    the fewer of the two sides' trials, averaged; so an unchanged System's difference
    is as likely to have either sign whatever its trials share (a temperature-0
    answer, a drifting provider), which is what the tests assume.

    :param baseline: the loaded baseline.
    :param current: this run's report.
    :param max_drops: ``{metric: Tolerance}`` from :func:`parse_tolerance`.
    :param confidence: the required confidence (``--ctxbench-confidence``).
    :param seed: the seed of every resampling; same inputs, same comparison.
    :param n_resamples: bootstrap / sign-flip resamples per test.
    :param extra_metrics: ``cost_of_pass``, ``latency_mean`` and/or
        ``cost_of_pass_usd`` to compare without a gate (``ctxbench compare``).
    :param familywise: ``"none"`` (each gate at ``1 - confidence``) or ``"holm"``
        (``--ctxbench-familywise=holm``: the max-drop gates of every suite adjusted
        together by Holm's step-down, so the run cries wolf at most ``1 - confidence``
        of the time in all).
    :raises ConfigError: for a metric in ``max_drops`` that is not in
        :data:`DROP_METRICS`.
    """
    unknown = sorted(set(max_drops) - set(DROP_METRICS))
    if unknown:
        raise ConfigError(f"unknown max-drop metric {', '.join(unknown)}; known metrics: {', '.join(DROP_METRICS)}.")
    cur_by_suite: dict[str, list[Record]] = {}
    for rec in current.records:
        cur_by_suite.setdefault(rec.suite, []).append(rec)
    base_by_suite: dict[str, list[Record]] = {}
    for rec in baseline.records:
        base_by_suite.setdefault(rec.suite, []).append(rec)
    cur_labels = list(dict.fromkeys([*(str(s["label"]) for s in current.suites), *cur_by_suite]))
    base_labels = list(dict.fromkeys([*(str(s["label"]) for s in baseline.suites), *base_by_suite]))
    suites: list[SuiteComparison] = []
    for label in cur_labels:
        if label not in base_labels:
            continue
        cur_info = next((s for s in current.suites if s.get("label") == label), {})
        base_info = baseline.suite(label) or cur_info
        cur_recs, base_recs, left_out = balance_trials(
            cur_by_suite.get(label, []), base_by_suite.get(label, [])
        )
        now = _examples(cur_recs, cur_info)
        then = _examples(base_recs, base_info)
        several = len({d for d, _ in [*now, *then]}) > 1
        matched = [k for k in then if k in now]
        metrics: list[MetricComparison] = []
        extra = set(extra_metrics)
        wanted = ["pass_rate", "mean_score"] + [
            m
            for m in ("cost_of_pass", "latency_mean", "cost_of_pass_usd")
            if m in max_drops or m in extra
        ]
        for metric in wanted:
            result = _test(metric, matched, then, now, baseline.summary.get(label, {}), confidence, seed, n_resamples)
            tol = max_drops.get(metric)
            verdict = None
            if tol is not None and metric == "cost_of_pass_usd" and _money_unknown(matched, then, now):
                # An unmeasured cost never passes a gate (as --ctxbench-max-cost-usd).
                verdict = DropVerdict(
                    True,
                    f"{label} {metric} FAILED: the money of this run or of the baseline is"
                    " unknown (a call to a model without a price, or no priced call);"
                    " price every model with --ctxbench-price, in both runs.",
                    math.nan,
                )
            elif tol is not None:
                verdict = drop_verdict(
                    result, tol.amount, DROP_METRICS[metric], tol.relative, confidence, name=f"{label} {metric}"
                )
            metrics.append(MetricComparison(label, metric, result.mean_before, result.mean_after, result, tol, verdict))
        to_fail = [k for k in matched if (then[k].passed or 0.0) >= 1.0 and now[k].passed == 0.0]
        to_pass = [k for k in matched if then[k].passed == 0.0 and (now[k].passed or 0.0) >= 1.0]
        suites.append(
            SuiteComparison(
                suite=label,
                metrics=metrics,
                flipped_to_fail=_ids(to_fail, several),
                flipped_to_pass=_ids(to_pass, several),
                new=_ids((k for k in now if k not in then), several),
                missing=_ids((k for k in then if k not in now), several),
                n_matched=len(matched),
                trials_left_out=left_out,
                notes=_adaptive_notes(cur_by_suite.get(label, [])),
            )
        )
    if familywise == "holm":
        _holm(suites, confidence)
    return Comparison(
        baseline_path=str(baseline.path),
        git_commit=baseline.git_commit,
        confidence=confidence,
        suites=suites,
        only_current=[s for s in cur_labels if s not in base_labels],
        only_baseline=[s for s in base_labels if s not in cur_labels],
        familywise=familywise,
    )


def _trial(rec: Record) -> int:
    value = rec.row.metadata.get("trial", 1)
    return value if isinstance(value, int) and not isinstance(value, bool) else 1


def _adaptive_notes(current: Iterable[Record]) -> list[str]:
    """The adaptive plan's note, when it bought no trial (a deterministic System)."""
    for rec in current:
        spec = rec.row.metadata.get("adaptive")
        if isinstance(spec, dict) and spec.get("deterministic") is True:
            return [
                "adaptive trials: the baseline's trials of every example agree (a"
                " deterministic System), so a second answer would repeat the first: no"
                " example was asked again"
            ]
    return []


def balance_trials(
    current: Iterable[Record], base: Iterable[Record]
) -> tuple[list[Record], list[Record], dict[str, int]]:
    """Each example's trials, as many on each side: ``(current, base, left_out)``.

    An example in both keeps its first ``k`` trials on each side (in trial order),
    ``k`` the fewer of the two; one on a single side keeps all its trials (it is new
    or missing, never compared). ``left_out`` counts the trials set aside, per side
    (``{"run": ..., "baseline": ...}``, absent when none).

    Why: under an unchanged System the comparison's unit is the example, and its
    difference must be as likely to have either sign. That holds for ``k`` trials
    against ``k`` whatever the trials of one run share (one answer per day at
    temperature 0, a provider that drifts from day to day); it fails for 1 trial
    against the mean of 16, whose difference is skewed near pass rates of 0 and 1
    and whose day-to-day part the 16 cannot average away (docs/gating.md).
    """

    def by_key(recs: Iterable[Record]) -> dict[tuple[str, str], list[Record]]:
        out: dict[tuple[str, str], list[Record]] = {}
        for rec in recs:
            out.setdefault((rec.row.dataset, rec.row.example_id), []).append(rec)
        for rows in out.values():
            rows.sort(key=_trial)
        return out

    now, then = by_key(current), by_key(base)
    cur_out: list[Record] = []
    base_out: list[Record] = []
    left = {"run": 0, "baseline": 0}
    for key, rows in now.items():
        other = then.get(key)
        k = len(rows) if other is None else min(len(rows), len(other))
        cur_out += rows[:k]
        left["run"] += len(rows) - k
    for key, rows in then.items():
        other = now.get(key)
        k = len(rows) if other is None else min(len(rows), len(other))
        base_out += rows[:k]
        left["baseline"] += len(rows) - k
    return cur_out, base_out, {side: n for side, n in left.items() if n}


def holm_levels(p_values: Iterable[float], alpha: float) -> list[tuple[float, float]]:
    """Holm's step-down for one family of one-sided p-values: per p-value (in the
    order given), ``(level, adjusted p)``. ``level`` is the significance level its
    gate is decided at, ``alpha / (m - j + 1)`` for the ``j``-th smallest while every
    smaller one is below its own level, 0 after the first that is not (the step-down
    stops: no later gate can fail); ``adjusted p`` is Holm's adjusted p-value
    (``max over i <= j of min(1, (m - i + 1) p_(i))``), which is below ``alpha``
    exactly when ``level`` is positive and the p-value is below it."""
    ps = list(p_values)
    m = len(ps)
    order = sorted(range(m), key=lambda i: (math.isnan(ps[i]), ps[i]))
    out: list[tuple[float, float]] = [(0.0, 1.0)] * m
    going, running = True, 0.0
    for j, i in enumerate(order):
        p = ps[i]
        level = alpha / (m - j)
        adjusted = 1.0 if math.isnan(p) else min(1.0, (m - j) * p)
        running = max(running, adjusted)
        out[i] = (level if going else 0.0, running)
        if not (p <= level):
            going = False
    return out


def _holm(suites: list[SuiteComparison], confidence: float) -> None:
    """Re-decide every gated metric of ``suites`` at its Holm level (in place)."""
    gated = [
        (s, i, m)
        for s in suites
        for i, m in enumerate(s.metrics)
        if m.tolerance is not None and m.verdict is not None and not math.isnan(m.verdict.tolerance)
    ]
    if len(gated) < 2:
        return
    alpha = 1.0 - confidence
    levels = holm_levels([m.result.p_worse(DROP_METRICS[m.metric]) for _, _, m in gated], alpha)
    for (s, i, m), (level, adjusted) in zip(gated, levels):
        tol = m.tolerance
        assert tol is not None
        note = f"Holm-adjusted p = {_p_text(adjusted)} over {len(gated)} gates"
        if level > 0.0:
            verdict = drop_verdict(
                m.result, tol.amount, DROP_METRICS[m.metric], tol.relative, 1.0 - level,
                name=f"{m.suite} {m.metric}",
            )
            verdict = DropVerdict(
                verdict.failed, f"{verdict.reason} ({note}, level {_p_text(level)})",
                verdict.tolerance, verdict.drop, verdict.bound,
            )
        else:
            base = m.verdict
            assert base is not None
            verdict = DropVerdict(
                False,
                f"{m.suite} {m.metric} passed: not significant after Holm's adjustment ({note}).",
                base.tolerance, base.drop, base.bound,
            )
        s.metrics[i] = MetricComparison(m.suite, m.metric, m.then, m.now, m.result, m.tolerance, verdict, holm=(level, adjusted))



def adaptive_design(spec: Mapping[str, Any], base: list[Record]) -> Any:
    """The :class:`~pytest_context_bench.adaptive.Design` of ``spec`` (a row's
    ``metadata.adaptive``: ``max_trials``, ``budget``) against the baseline
    records ``base`` of its suite.

    :raises ConfigError: when the baseline has too few trials per example.
    """
    from .adaptive import Design

    counts: dict[tuple[str, str], int] = {}
    for rec in base:
        key = (rec.row.dataset, rec.row.example_id)
        counts[key] = counts.get(key, 0) + 1
    tally: dict[int, int] = {}
    for n in counts.values():
        tally[n] = tally.get(n, 0) + 1
    # The baseline's trials per example: its most common count (a lost row aside).
    trials = max(tally, key=lambda n: (tally[n], n)) if tally else 0
    return Design(int(spec["max_trials"]), float(spec["budget"]), trials)


def _outcome(row: EvalRow, field_: Any, threshold: float) -> int | None:
    """A trial's pass outcome as PassRate counts it: an error fails, an unscored row
    is ``None``."""
    score = row_score(row, field_)
    if score is None:
        return None
    return 1 if row.error is None and score_passes(row.scores, primary_field(row, field_), threshold) else 0


def trial_values(recs: Iterable[Record], info: Mapping[str, Any]) -> dict[tuple[str, str], list[tuple[int | None, float | None]]]:
    """``(dataset, example id)`` → its trials' ``(pass outcome, primary score)``, in
    trial order, judged by the suite ``info``'s threshold and score field (an error
    fails, an unscored row is ``None``): two trials that differ in either are
    answers that vary."""
    threshold = float(info.get("threshold", 0.7))
    field_ = info.get("score_field")
    out: dict[tuple[str, str], list[tuple[int, tuple[int | None, float | None]]]] = {}
    for rec in recs:
        out.setdefault((rec.row.dataset, rec.row.example_id), []).append(
            (_trial(rec), (_outcome(rec.row, field_, threshold), row_score(rec.row, field_)))
        )
    return {k: [o for _, o in sorted(v, key=lambda x: x[0])] for k, v in out.items()}


def _money_unknown(
    keys: list[tuple[str, str]],
    then: Mapping[tuple[str, str], _Example],
    now: Mapping[tuple[str, str], _Example],
) -> bool:
    """True when a side measured no priced call, or a call had no price: the
    money of the comparison is unknown (as :class:`~.metrics.MoneyCost`'s nan)."""
    if not keys:
        return False
    if not any(then[k].metered for k in keys) or not any(now[k].metered for k in keys):
        return True
    return any(math.isnan(side[k].money) for side in (then, now) for k in keys)


def _test(
    metric: str,
    matched: list[tuple[str, str]],
    then: Mapping[tuple[str, str], _Example],
    now: Mapping[tuple[str, str], _Example],
    base_summary: Mapping[str, float],
    confidence: float,
    seed: int,
    n_resamples: int,
) -> PairedResult:
    higher = DROP_METRICS[metric]
    kw: dict[str, Any] = {"confidence": confidence, "seed": seed, "n_resamples": n_resamples, "higher_is_better": higher}
    if metric in ("pass_rate", "mean_score"):
        attr = "passed" if metric == "pass_rate" else "score"
        pairs = [(getattr(then[k], attr), getattr(now[k], attr)) for k in matched]
        kept = [(b, a) for b, a in pairs if b is not None and a is not None]
        return paired_test([b for b, _ in kept], [a for _, a in kept], **kw)
    if metric in ("cost_of_pass", "cost_of_pass_usd"):
        keys = [k for k in matched]
        if metric == "cost_of_pass_usd" and _money_unknown(keys, then, now):
            return paired_ratio_test([], [], [], [], **kw)  # nothing to test: n = 0
        usd = metric == "cost_of_pass_usd"
        return paired_ratio_test(
            [then[k].money if usd else then[k].tokens for k in keys],
            [then[k].passed or 0.0 for k in keys],
            [now[k].money if usd else now[k].tokens for k in keys],
            [now[k].passed or 0.0 for k in keys],
            **kw,
        )
    values = [v for v in (now[k].latency for k in matched) if v is not None]
    return one_sample_test(values, float(base_summary.get("latency_mean", math.nan)), **kw)
