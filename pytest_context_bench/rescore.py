"""Saved answers scored again, without the System. Pure (no pytest).

A JSON report and a baseline keep each row's answer (:mod:`.answers`): what the
evaluators read of what the System returned. :func:`rescore_row` runs evaluators on
it again, as the run would have on that answer: the same processed example
(``{**original, **answer}``), the same facts for latency, cost and token
assertions (the row's own), the evaluators' LLM calls (judges) under the row's call
scope, so through the run's cache and priced as the run priced them. What the
System did (its error, tokens, latency, its calls and their money) is kept as
the run measured it; only what the evaluators said changes.

Used by ``ctxbench rescore`` (:func:`rescore_saved`) and by the baseline gate when
the run's evaluators differ from the baseline's (docs/gating.md, "When the
evaluators changed").
"""

from __future__ import annotations

import contextlib
import json
import math
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from .answers import processed_from, rescore_problem
from .evaluators.identity import describe_evaluators, evaluator_identity
from .errors import ConfigError
from .report.run import Record, RunReport, SuiteInfo, build_run_report
from .results import ROW_FIELDS, ROW_OPTIONAL, EvalRow

__all__ = [
    "RUN_FACTS",
    "Rescored",
    "SavedRun",
    "describe_evaluators",
    "evaluator_identity",
    "load_saved",
    "needs_rescore",
    "rescore_row",
    "rescore_saved",
    "row_rescore_problem",
]

#: What a row's ``metadata`` says of the System's call, not of the evaluators:
#: kept as the run measured it. Every other key is an evaluator's explanation
#: (under its name) and is said again by the evaluators that score the answer.
RUN_FACTS = (
    "score_field",
    "prompt_tokens",
    "completion_tokens",
    "trial",
    "adaptive",
    "trials",
    "llm_usage",
    "cost_usd",
    "saved_usd",
    "refused_connections",
    "bypassed_connections",
    "qa_type",
    "ingest_latency",
    "query_latency",
    "conversation_id",
    "turn_count",
)
#: Kept in this order before the evaluators' explanations (as the run writes them).
_FIRST = ("score_field", "prompt_tokens", "completion_tokens")


# ------------------------------------------------------------------ evaluator identity
# In evaluators/identity.py: every run describes its suites' evaluators, and only a
# run with a baseline to score again needs the rest of this module.

def _names(identities: Iterable[Mapping[str, Any]]) -> str:
    return ", ".join(str(e.get("name")) for e in identities) or "none"


def needs_rescore(
    base_suite: Mapping[str, Any] | None,
    evaluators: Mapping[str, Sequence[Mapping[str, Any]]],
    score_field: str | None,
) -> str | None:
    """Why a baseline suite must be scored again before this run is compared with
    it (``None``: it need not): the evaluators of a dataset both have differ (a
    name, a class or a setting: :func:`evaluator_identity`), or the suite's score
    field does. A baseline suite that does not say which evaluators scored it
    (saved before they were recorded) is compared as it is.

    :param base_suite: the baseline's entry of the suite (``evaluators``,
        ``score_field``).
    :param evaluators: dataset tag → the run's evaluators' identities.
    :param score_field: the run suite's score field (``None``: each example's own).
    """
    if not base_suite or not isinstance(base_suite.get("evaluators"), Mapping):
        return None
    why: list[str] = []
    before: Mapping[str, Any] = base_suite["evaluators"]
    for tag in sorted(set(before) & set(evaluators)):
        then, now = list(before[tag] or []), list(evaluators[tag])
        key = lambda e: (str(e.get("name")), str(e.get("class")), str(e.get("config")))  # noqa: E731
        if sorted(map(key, then)) == sorted(map(key, now)):
            continue
        if [e.get("name") for e in then] == [e.get("name") for e in now]:
            why.append(f"{tag}: {_names(now)} (other settings)")
        else:
            why.append(f"{tag}: {_names(then)} then, {_names(now)} now")
    if (base_suite.get("score_field") or None) != (score_field or None):
        own = "each example's own"
        why.append(
            f"score field {base_suite.get('score_field') or own} then, {score_field or own} now"
        )
    return "; ".join(why) or None


# -------------------------------------------------------------------------- one row


def _latency_assertion(asserts: Any) -> bool:
    """True when an ``assert`` list has a ``latency`` assertion (an assert-set's
    included)."""
    if not isinstance(asserts, list):
        return False
    for a in asserts:
        if not isinstance(a, Mapping):
            continue
        kind = str(a.get("type", ""))
        if kind.removeprefix("not-") == "latency":
            return True
        if kind == "assert-set" and _latency_assertion(a.get("assert")):
            return True
    return False


def row_rescore_problem(
    answer: Any,
    row: EvalRow,
    original: Mapping[str, Any] | None,
    *,
    latency_known: bool = True,
) -> str | None:
    """Why a row cannot be scored again (``None``: it can): no answer kept, a cut
    answer, a memory question, or a latency assertion on a row whose latency was
    not kept (a baseline keeps none)."""
    problem = rescore_problem(answer, row.error, row.metadata)
    if problem is not None:
        return problem
    if (
        not latency_known
        and original is not None
        and not _system_failed(row)
        and _latency_assertion(original.get("assert"))
    ):
        return "a latency assertion, and a baseline keeps no latency"
    return None


def _system_failed(row: EvalRow) -> bool:
    return row.error is not None and str(row.error.get("where", "")).startswith("system")


def _facts(original: Mapping[str, Any], row: EvalRow) -> Any:
    """The latency, cost and tokens assertions read, from the row (as
    :func:`~pytest_context_bench.engine.assertion_facts` reads them from the call)."""
    if "assert" not in original:
        return contextlib.nullcontext()
    from .evaluators.assertions import call_facts

    md = row.metadata
    usage = md.get("llm_usage")
    tokens = None
    if isinstance(usage, Mapping) and not usage.get("bad_usage"):
        tokens = int(usage.get("prompt_tokens", 0)) + int(usage.get("completion_tokens", 0))
    cost = md.get("cost_usd") if isinstance(usage, Mapping) else None
    return call_facts(latency_ms=row.latency * 1000.0, cost=cost, tokens=tokens)


def rescore_row(
    row: EvalRow,
    answer: Mapping[str, Any] | None,
    original: dict[str, Any],
    evaluators: Sequence[Any],
    *,
    score_field: str,
) -> tuple[EvalRow, BaseException | None]:
    """``row`` scored again by ``evaluators`` from its kept ``answer``.

    Check :func:`row_rescore_problem` first. A row whose System failed keeps its
    error (there is no answer to score). Never raises for an evaluator's failure:
    it is the new row's error, and returned second.

    :param original: the example, as the dataset has it.
    :param score_field: the example's primary score field in the run that scores.
    """
    from .calls import CallScope, call_scope
    from .engine import attach_usage, run_evaluators

    first = {"score_field": score_field}
    first.update({k: row.metadata[k] for k in _FIRST[1:] if k in row.metadata})
    rest = {
        k: v
        for k, v in row.metadata.items()
        if k in RUN_FACTS and k not in _FIRST
    }
    system_calls = [c for c in row.calls if c.get("source") == "system"]
    new = EvalRow(
        system=row.system,
        example_id=row.example_id,
        scores={},
        input_tokens=row.input_tokens,
        output_tokens=row.output_tokens,
        metadata=first,
        latency=row.latency,
        dataset=row.dataset,
        error=None,
        calls=list(system_calls),
        calls_omitted=row.calls_omitted,
    )
    if _system_failed(row) or answer is None:
        new.error = None if row.error is None else dict(row.error)
        new.metadata.update(rest)
        return new, None
    processed = processed_from(original, answer, row.metadata)
    trial = row.metadata.get("trial", 1)
    scope = CallScope(
        system=row.system,
        dataset=row.dataset,
        example_id=row.example_id,
        trial=trial if isinstance(trial, int) and not isinstance(trial, bool) else 1,
    )
    scope.system_calls = 0  # every call made here is an evaluator's
    with call_scope(scope), _facts(original, row):
        new.error, raised = run_evaluators(original, processed, evaluators, new.scores, new.metadata)
    new.metadata.update(rest)
    before = new.calls
    bad = attach_usage(new, scope)
    if new.calls is not before:  # the evaluators' call records, after the System's
        new.calls = [*system_calls, *new.calls]
        new.calls_omitted += row.calls_omitted
    return new, raised or bad


# ---------------------------------------------------------------------- saved runs


@dataclass
class SavedRun:
    """A JSON report or a baseline, read for scoring again.

    :param kind: ``"report"`` or ``"baseline"``.
    :param records: its rows (``io["answer"]`` the kept answer, when there is one).
    :param suites: its suite entries (label, origin, threshold, score field...).
    :param run: the report's ``run`` (a baseline's: ``{"options": ...}``).
    :param fingerprints: ``{dataset tag: fingerprint}`` it was run on, when known.
    :param sources: ``{dataset tag: file or spec}`` it was run on, when known.
    :param families: ``{dataset tag: family}``, when known.
    """

    path: Path
    kind: str
    records: list[Record]
    suites: list[dict[str, Any]]
    run: dict[str, Any]
    fingerprints: dict[str, str] = field(default_factory=dict)
    sources: dict[str, str] = field(default_factory=dict)
    families: dict[str, str] = field(default_factory=dict)
    llm: dict[str, Any] | None = None
    version: str = "unknown"
    git_commit: str | None = None
    notes: list[str] = field(default_factory=list)
    #: node ids of the items that produced no row of their own (a report's)
    lost: list[str] = field(default_factory=list)
    #: its summary per suite (non-finite numbers as the strings the file has)
    summary: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: when its run wrote it (a report's ``created``; a baseline has none)
    created: str | None = None

    @property
    def latency_known(self) -> bool:
        return self.kind == "report"

    @property
    def options(self) -> dict[str, Any]:
        options = self.run.get("options")
        return options if isinstance(options, dict) else {}


def load_saved(path: str | os.PathLike[str]) -> SavedRun:
    """Read a JSON report or a baseline (told apart by its ``kind``), through the
    readers that check them (:func:`~.report.json_report.load_report`,
    :func:`~.baseline.load_baseline`).

    :raises ConfigError: one line naming the file and what is wrong with it.
    """
    from ._json import JSONValueError, strict_loads
    from .baseline import BASELINE_KIND, load_baseline
    from .report.json_report import load_report

    p = Path(path)
    kind = "report"
    try:  # the kind is near the top of a baseline: its first 4 KB tell
        with p.open("rb") if p.is_file() else open(os.devnull, "rb") as fh:
            head = fh.read(4096).decode("utf-8", "replace")
    except OSError:
        head = ""
    if f'"kind": "{BASELINE_KIND}"' in head or f'"kind":"{BASELINE_KIND}"' in head:
        kind = "baseline"
    elif head and '"kind"' in head:
        try:
            kind = "baseline" if strict_loads(p.read_text(encoding="utf-8")).get("kind") == BASELINE_KIND else "report"
        except (ValueError, JSONValueError, AttributeError, OSError):
            kind = "report"
    notes: list[str] = []
    if kind == "baseline":
        base = load_baseline(p)
        # A baseline keeps no latency: unknown (nan), never a measured 0.
        unknown = [
            Record(r.suite, r.origin, r.order, r.status, replace(r.row, latency=math.nan), r.io)
            for r in base.records
        ]
        return SavedRun(
            path=p,
            kind="baseline",
            records=unknown,
            suites=[dict(s) for s in base.suites],
            run={"options": dict(base.options)},
            fingerprints=dict(base.datasets),
            sources={},
            version=base.plugin_version,
            git_commit=base.git_commit,
            notes=list(base.notes),
            summary={k: dict(v) for k, v in base.summary.items()},
        )
    doc = load_report(
        p,
        fix="pass a JSON report (--ctxbench-json) or a baseline (--ctxbench-save-baseline)",
        notes=notes,
    )
    records = []
    for i, row in enumerate(doc["rows"]):
        suite = next(s for s in doc["suites"] if s["label"] == row["suite"])
        io = {k: row[k] for k in ("response", "reference", "tool_calls", "answer") if k in row}
        records.append(
            Record(
                suite=str(row["suite"]),
                origin=str(suite["origin"]),
                order=tuple(int(x) for x in row.get("order", [i])),
                status=str(row["status"]),
                row=EvalRow.from_dict({k: row[k] for k in (*ROW_FIELDS, *ROW_OPTIONAL) if k in row}),
                io=io or None,
            )
        )
    datasets = doc["run"].get("datasets") or []
    return SavedRun(
        path=p,
        kind="report",
        records=records,
        suites=[dict(s) for s in doc["suites"]],
        run=json.loads(json.dumps(doc["run"])),
        fingerprints={str(d["tag"]): str(d["fingerprint"]) for d in datasets if isinstance(d, dict) and d.get("fingerprint")},
        sources={str(d["tag"]): str(d["source"]) for d in datasets if isinstance(d, dict) and d.get("source")},
        families={str(d["tag"]): str(d["family"]) for d in datasets if isinstance(d, dict) and d.get("family")},
        llm=doc.get("llm") if isinstance(doc.get("llm"), dict) else None,
        version=str(doc["plugin"]["version"]),
        notes=notes,
        lost=[str(n) for n in doc.get("lost", [])],
        summary={str(k): dict(v) for k, v in doc["summary"].items()},
        created=str(doc["created"]),
    )


@dataclass
class Rescored:
    """What :func:`rescore_saved` made."""

    report: RunReport
    #: ``"suite: dataset/id (why)"`` of the rows not scored again (left out)
    not_rescored: list[str]
    #: the evaluators per dataset tag (:func:`describe_evaluators`)
    evaluators: dict[str, list[dict[str, str]]]
    #: the run's ``llm`` section, its evaluators' part made again
    llm: dict[str, Any] | None


def _lookup(datasets: Mapping[str, Any]) -> dict[str, dict[str, int]]:
    return {tag: {str(i): n for n, i in enumerate(ds.ids)} for tag, ds in datasets.items()}


def rescore_saved(
    saved: SavedRun,
    datasets: Mapping[str, Any],
    evaluators_for: Callable[[Any], Sequence[Any]],
    *,
    score_field: str | None = None,
) -> Rescored:
    """Every row of ``saved`` scored again (:func:`rescore_row`), then the
    summaries, intervals and gates made again from the new rows, as the run made
    them (:func:`~.report.run.build_run_report`).

    :param datasets: ``{tag: loaded dataset}``; every row's dataset must be there.
    :param evaluators_for: a dataset → its evaluators (built once per dataset).
    :param score_field: overrides every suite's score field (``None``: each
        suite's own, else each example's primary).
    :raises ConfigError: a row whose dataset is not given, or whose example is not
        in it.
    """
    from .inputs import primary_score_field
    from .report.rows import row_status

    index = _lookup(datasets)
    missing_ds = sorted({r.row.dataset for r in saved.records} - set(datasets))
    if missing_ds:
        raise ConfigError(
            f"{saved.path}: its rows are of the dataset(s) {', '.join(map(repr, missing_ds))},"
            " whose examples were not given; pass each with --dataset SPEC (the file the"
            " run read)"
        )
    missing = [
        f"{r.row.dataset}/{r.row.example_id}"
        for r in saved.records
        if r.row.example_id not in index[r.row.dataset]
    ]
    if missing:
        shown = ", ".join(missing[:3]) + (f" and {len(missing) - 3} more" if len(missing) > 3 else "")
        raise ConfigError(
            f"{saved.path}: {len(missing)} row(s) name examples that the dataset given"
            f" does not have ({shown}); pass the dataset the run read (--dataset)"
        )
    by_label = {str(s["label"]): s for s in saved.suites}
    evs: dict[str, list[Any]] = {}
    out: list[Record] = []
    skipped: list[str] = []
    for rec in saved.records:
        tag = rec.row.dataset
        ds = datasets[tag]
        if tag not in evs:
            evs[tag] = list(evaluators_for(ds))
        original = ds[index[tag][rec.row.example_id]]
        answer = (rec.io or {}).get("answer")
        problem = row_rescore_problem(answer, rec.row, original, latency_known=saved.latency_known)
        if problem is not None:
            skipped.append(f"{rec.suite}: {tag}/{rec.row.example_id} ({problem})")
            continue
        suite = by_label.get(rec.suite, {})
        field_ = score_field or suite.get("score_field") or primary_score_field(original, ds)
        row, _ = rescore_row(rec.row, answer, original, evs[tag], score_field=str(field_))
        status = row_status(row.error, row.scores, row.metadata.get("score_field"), float(suite.get("threshold", 0.7)))
        io = dict(rec.io or {})
        out.append(Record(rec.suite, rec.origin, rec.order, status, row, io or None))
    infos = _infos(saved.suites, score_field)
    described = {tag: describe_evaluators(e) for tag, e in evs.items()}
    infos = {origin: replace(info, evaluators=dict(described)) for origin, info in infos.items()}
    report = build_run_report(out, infos, saved.lost)
    if skipped:
        report.completeness = {
            "complete": False,
            "interrupted": False,
            "partial": f"{len(skipped)} row(s) could not be scored again (their answer was not kept whole)",
            "planned": len(saved.records),
            "selected": len(saved.records),
            "ran": len(out),
            "gates_skipped": None,
            "partial_suites": {},
            "lost": [],
            "not_run": [],
            "suites": {},
        }
    return Rescored(report, skipped, described, _llm_again(saved, out))


def _infos(suites: Iterable[Mapping[str, Any]], score_field: str | None) -> dict[str, SuiteInfo]:
    infos: dict[str, SuiteInfo] = {}
    for s in suites:
        origin = str(s.get("origin", ""))
        if origin in infos:
            continue
        infos[origin] = SuiteInfo(
            origin=origin,
            threshold=float(s.get("threshold", 0.7)),
            score_field=score_field or s.get("score_field"),
            limits={str(k): float(v) for k, v in (s.get("limits") or {}).items()},
            strict=bool(s.get("strict", False)),
            datasets=tuple(s.get("datasets", ())),
        )
    return infos


_PARTS = (
    ("llm_usage", "cost_usd", "saved_usd"),
    ("judge_usage", "judge_cost_usd", "judge_saved_usd"),
)
_COUNTS = ("calls", "cache_hits", "prompt_tokens", "completion_tokens", "cached_tokens", "saved_tokens")


def _sums(rows: Iterable[EvalRow]) -> dict[str, dict[str, Any]]:
    """Per part of the rows' usage (the System's, the evaluators'): token and call
    counts, money (NaN when a part is unknown) and whether any row measured it."""
    rows = list(rows)
    out: dict[str, dict[str, Any]] = {}
    for usage_key, cost_key, saved_key in _PARTS:
        counts = dict.fromkeys(_COUNTS, 0)
        cost = saved = 0.0
        models: dict[str, None] = {}
        seen = False
        for row in rows:
            usage = row.metadata.get(usage_key)
            if not isinstance(usage, dict):
                continue
            seen = True
            for k in _COUNTS:
                counts[k] += int(usage.get(k, 0) or 0)
            models.update(dict.fromkeys(str(m) for m in usage.get("models", ())))
            for key, into in ((cost_key, "cost"), (saved_key, "saved")):
                if key not in row.metadata:
                    continue
                value = row.metadata.get(key)
                part = float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else math.nan
                if into == "cost":
                    cost += part
                else:
                    saved += part
        out[usage_key] = {"counts": counts, "cost": cost, "saved": saved, "models": models, "seen": seen}
    return out


def _llm_again(saved: SavedRun, rows: list[Record]) -> dict[str, Any] | None:
    """The report's ``llm`` section with the rows' part made again from the new
    rows: what the rows left out and the old evaluators measured taken out, what
    the new evaluators measured put in; what no row owns (``unattributed``) as the
    run measured it. ``None`` when no call was measured."""
    before = _sums(r.row for r in saved.records)
    after = _sums(r.row for r in rows)
    llm = json.loads(json.dumps(saved.llm)) if saved.llm is not None else None
    if llm is None and not after["judge_usage"]["seen"]:
        return None
    if llm is None:
        from .cache import active_cache

        cache = active_cache()
        llm = {
            "cache": {
                "mode": cache.mode if cache is not None else "off",
                "path": str(cache.path) if cache is not None else None,
                "unusable": cache.broken if cache is not None else None,
                "hits": 0, "misses": 0, "replay_misses": 0,
                "refused_connections": 0, "bypassed_connections": 0, "refused_examples": 0,
                "bypass_addresses": [],
            },
            "calls_sent": 0,
            "tokens": {"prompt_tokens": 0, "completion_tokens": 0, "cached_tokens": 0},
            "saved_tokens": 0,
            "models": [],
        }
        from .pricing import active_prices

        if active_prices():
            llm["money"] = {"cost_usd": 0.0, "judge_cost_usd": 0.0, "total_cost_usd": 0.0,
                            "saved_usd": 0.0, "unpriced_models": [], "prices_unused": []}

    def delta(key: str) -> int:
        return sum(after[p]["counts"][key] - before[p]["counts"][key] for p in after)

    for k in ("prompt_tokens", "completion_tokens", "cached_tokens"):
        llm["tokens"][k] = int(llm["tokens"].get(k, 0)) + delta(k)
    llm["calls_sent"] = int(llm.get("calls_sent", 0)) + delta("calls")
    llm["saved_tokens"] = int(llm.get("saved_tokens", 0)) + delta("saved_tokens")
    cache_section = llm.get("cache")
    if isinstance(cache_section, dict):
        cache_section["hits"] = int(cache_section.get("hits", 0)) + delta("cache_hits")
        cache_section["misses"] = int(cache_section.get("misses", 0)) + delta("calls")
    llm["models"] = list(
        dict.fromkeys([*llm.get("models", []), *(m for p in after.values() for m in p["models"])])
    )
    money = llm.get("money")
    if isinstance(money, dict):

        def moved(total: Any, part: str, what: str) -> float | None:
            if not isinstance(total, (int, float)) or isinstance(total, bool):
                return None
            value = float(total) + after[part][what] - before[part][what]
            return None if math.isnan(value) else max(0.0, value)

        money["cost_usd"] = moved(money.get("cost_usd"), "llm_usage", "cost")
        money["judge_cost_usd"] = moved(money.get("judge_cost_usd", 0.0), "judge_usage", "cost")
        saved_total = moved(money.get("saved_usd"), "llm_usage", "saved")
        money["saved_usd"] = None if saved_total is None else moved(saved_total, "judge_usage", "saved")
        money["total_cost_usd"] = (
            None
            if money["cost_usd"] is None or money["judge_cost_usd"] is None
            else money["cost_usd"] + money["judge_cost_usd"]
        )
    return llm


# ------------------------------------------------------- the baseline, scored again


def _has_answers(records: Iterable[Record]) -> bool:
    """Whether the rows that need an answer to be scored again kept one."""
    needing = [r for r in records if not _system_failed(r.row)]
    return not needing or any((r.io or {}).get("answer") is not None for r in needing)


def no_answers_problem(baseline: Any, label: str, why: str) -> str:
    """The one error of a baseline suite scored by other evaluators that keeps no
    answer to score again, with the fixes."""
    return (
        f"baseline {baseline.path}: suite {label!r} was scored by other evaluators or"
        f" another score field ({why}) and keeps no answers to score again (saved with"
        " --ctxbench-baseline-responses=off, or by an older pytest-context-bench); save"
        " the baseline again with this run's evaluators (--ctxbench-save-baseline, answers"
        " kept), or run with the baseline's evaluators and score field"
    )


def blocked(baseline: Any, origin: str, evaluators: Mapping[str, Sequence[Mapping[str, Any]]], score_field: str | None) -> str | None:
    """The error of :func:`no_answers_problem` for the first baseline suite of
    ``origin`` that needs scoring again and cannot be (``None``: none): checked
    before any example runs for the command line's suites."""
    for suite in baseline.suites:
        if str(suite.get("origin")) != origin:
            continue
        why = needs_rescore(suite, evaluators, score_field)
        label = str(suite.get("label"))
        if why is not None and not _has_answers(r for r in baseline.records if r.suite == label):
            return no_answers_problem(baseline, label, why)
    return None


@dataclass
class BaselineRescore:
    """What :func:`apply_rescored` made of the baseline."""

    baseline: Any
    #: suite label → the lines the comparison says first ("baseline re-scored with: ...")
    notes: dict[str, list[str]] = field(default_factory=dict)
    #: suite label → the evaluators' names the baseline was re-scored with
    rescored_with: dict[str, list[str]] = field(default_factory=dict)
    #: why the baseline cannot be compared (no answers), or None
    error: str | None = None


def apply_rescored(baseline: Any, suites: Iterable[Mapping[str, Any]], entries: Iterable[Mapping[str, Any]]) -> BaselineRescore:
    """The baseline to compare this run with: each suite whose evaluators or score
    field differ from the run's (:func:`needs_rescore`) has its rows replaced by
    those scored again where the run's examples ran (``entries``: one per baseline
    row, ``{"suite", "dataset", "example_id", "row", "status", "order"}`` or
    ``{..., "problem"}`` when it could not be scored again), and its entry says the
    run's score field and evaluators. A baseline row of an example the run did not
    run stays as it was (it only counts as missing); one that could not be scored
    again is left out, and said.

    :param suites: the run report's suite entries (``label``, ``evaluators``,
        ``score_field``).
    """
    out = BaselineRescore(baseline)
    by_suite: dict[str, list[Mapping[str, Any]]] = {}
    for e in entries:
        by_suite.setdefault(str(e.get("suite")), []).append(e)
    records = list(baseline.records)
    base_suites = [dict(s) for s in baseline.suites]
    changed = False
    for run_suite in suites:
        label = str(run_suite.get("label"))
        base_suite = baseline.suite(label)
        why = needs_rescore(base_suite, run_suite.get("evaluators") or {}, run_suite.get("score_field"))
        if why is None:
            continue
        mine = [r for r in records if r.suite == label]
        if not _has_answers(mine):
            out.error = no_answers_problem(baseline, label, why)
            return out
        got = by_suite.get(label, [])
        done: dict[tuple[str, str], list[Record]] = {}
        failed: dict[tuple[str, str], str] = {}
        for e in got:
            key = (str(e["dataset"]), str(e["example_id"]))
            if e.get("problem"):
                failed.setdefault(key, str(e["problem"]))
                continue
            row = EvalRow.from_dict(e["row"])
            base = next((r for r in mine if (r.row.dataset, r.row.example_id) == key), None)
            done.setdefault(key, []).append(
                Record(label, base.origin if base else str(run_suite.get("origin", "")),
                       tuple(int(x) for x in e.get("order", [0])), str(e["status"]), row, None)
            )
        kept: list[Record] = []
        for r in mine:
            key = (r.row.dataset, r.row.example_id)
            if key in done or key in failed:
                continue
            kept.append(r)  # not run here: only counts as missing
        new = [rec for recs in done.values() for rec in sorted(recs, key=lambda x: _trial_of(x.row))]
        records = [r for r in records if r.suite != label] + new + kept
        changed = True
        for s in base_suites:
            if s.get("label") == label:
                s["score_field"] = run_suite.get("score_field")
                s["evaluators"] = run_suite.get("evaluators")
        names = sorted({str(e.get("name")) for evs in (run_suite.get("evaluators") or {}).values() for e in evs})
        out.rescored_with[label] = names
        line = (
            f"baseline re-scored with: {', '.join(names) or 'no evaluator'} ({why});"
            f" {len(new)} baseline row(s) scored again from their kept answers, no System call"
        )
        notes = [line]
        if failed:
            shown = ", ".join(f"{d}/{i} ({p})" for (d, i), p in sorted(failed.items())[:5])
            more = f" and {len(failed) - 5} more" if len(failed) > 5 else ""
            notes.append(f"not re-scored, left out of the comparison ({len(failed)}): {shown}{more}")
        out.notes[label] = notes
    if changed:
        out.baseline = replace(baseline, records=records, suites=base_suites)
    return out


def _trial_of(row: EvalRow) -> int:
    trial = row.metadata.get("trial", 1)
    return trial if isinstance(trial, int) and not isinstance(trial, bool) else 1
