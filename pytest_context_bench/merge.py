"""Shard reports → one run report, as if the run had not been split. Pure (no pytest).

A suite split across CI jobs with ``--ctxbench-shard=i/n`` gives ``n`` JSON reports.
:func:`merge_shards` checks that they are the ``n`` shards of one run and rebuilds
the report from their rows with the same code as the pytest run
(:func:`~pytest_context_bench.report.run.build_run_report`): every metric, interval
and gate is recomputed, never averaged from the shards' summaries. Each row carries
its place in the unsharded run (``order``), so the intervals' resampling sees the
rows in the same order as one run would.

Refused, each in one :class:`~pytest_context_bench.errors.ConfigError` line naming
the file: an unreadable, empty, truncated or non-JSON file; a baseline file; a
report of a newer schema; a report that is not a shard; shards of different runs
(datasets, options, selection, shard count, package version); a missing or a
duplicated shard; an example present in two shards; an interrupted or partial shard;
a row whose money is negative, not finite or not a number, rows whose money or
tokens do not add up to their shard's totals (an edited file: see
:func:`~pytest_context_bench.report.rows.money_total_problem`), a row whose money is
not what its calls cost at the run's prices
(:class:`~pytest_context_bench.report.money.MoneyCheck`), and shards priced
differently (the option ``prices``).
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .errors import ConfigError
from .pricing import add_mismatch
from .report.run import Record, RunReport, SuiteInfo, build_run_report
from .results import ROW_FIELDS, ROW_OPTIONAL, EvalRow

__all__ = ["MergedRun", "Shard", "load_shard", "merge_llm", "merge_shards"]

#: Row keys present only when set (the rows' LLM call records).

# Options that may differ between the shards of one run.
_PER_SHARD_OPTIONS = ("shard",)


@dataclass(frozen=True)
class Shard:
    """One shard report: where it came from and its document."""

    path: Path
    doc: dict[str, Any]

    @property
    def position(self) -> tuple[int, int]:
        i, n = str(self.doc["run"]["options"]["shard"]).split("/")
        return int(i), int(n)


@dataclass
class MergedRun:
    """What :func:`merge_shards` returns."""

    report: RunReport
    #: the ``run`` metadata of the merged report (the first shard's, unsharded)
    run: dict[str, Any]
    #: ``{dataset tag: fingerprint}`` of the run's datasets, when the shards say
    fingerprints: dict[str, str]
    version: str


def load_shard(
    path: str | os.PathLike[str], notes: list[str] | None = None
) -> Shard:
    """Read one shard report and check it is a complete, current JSON report
    (:func:`~pytest_context_bench.report.json_report.load_report`, the reader of
    every command) whose rows carry their place in the unsharded run. ``notes``,
    given, gets a line for the money that could not be recomputed here (it counts
    as unknown).

    :raises ConfigError: one line naming the file and what is wrong.
    """
    from .report.json_report import load_report

    p = Path(path)
    doc = load_report(p, role="shard", fix="re-run that job", notes=notes)
    if any("order" not in row for row in doc["rows"]):
        raise ConfigError(
            f"shard {p} has rows without their 'order' (written by an older"
            " pytest-context-bench); re-run that job with this version."
        )
    return Shard(p, doc)


def _differs(a: Any, b: Any) -> bool:
    return json.dumps(a, sort_keys=True) != json.dumps(b, sort_keys=True)


def _check_same_run(shards: Sequence[Shard]) -> None:
    first = shards[0]
    for shard in shards:
        run = shard.doc["run"]
        if not isinstance(run.get("options"), dict) or not run["options"].get("shard"):
            raise ConfigError(
                f"{shard.path} is not a shard (its run had no --ctxbench-shard=i/n);"
                " merge the reports of one --ctxbench-shard matrix."
            )
    n_first = first.position[1]
    for shard in shards[1:]:
        i, n = shard.position
        if n != n_first:
            raise ConfigError(
                f"shards from different shard counts: {first.path} is"
                f" {first.position[0]}/{n_first}, {shard.path} is {i}/{n}."
            )
        version_a = first.doc["plugin"]["version"]
        version_b = shard.doc["plugin"]["version"]
        if version_a != version_b:
            raise ConfigError(
                f"shards from different pytest-context-bench versions: {first.path} has"
                f" {version_a}, {shard.path} has {version_b}; run every job with one version."
            )
        opts_a, opts_b = first.doc["run"]["options"], shard.doc["run"]["options"]
        for key in sorted(set(opts_a) | set(opts_b)):
            if key in _PER_SHARD_OPTIONS:
                continue
            if _differs(opts_a.get(key), opts_b.get(key)):
                raise ConfigError(
                    f"shards from different runs: option {key!r} is {opts_a.get(key)!r} in"
                    f" {first.path} and {opts_b.get(key)!r} in {shard.path}."
                )
        ds_a = [
            {
                k: d.get(k)
                for k in ("tag", "family", "source", "examples", "fingerprint")
            }
            for d in first.doc["run"].get("datasets", [])
        ]
        ds_b = [
            {
                k: d.get(k)
                for k in ("tag", "family", "source", "examples", "fingerprint")
            }
            for d in shard.doc["run"].get("datasets", [])
        ]
        if _differs(ds_a, ds_b):
            raise ConfigError(
                f"shards from different datasets: {first.path} ran {_describe(ds_a)},"
                f" {shard.path} ran {_describe(ds_b)}."
            )


def _describe(datasets: list[dict[str, Any]]) -> str:
    return (
        ", ".join(
            f"{d['tag']} ({d['examples']} examples, {str(d.get('fingerprint') or '')[:12] or 'no fingerprint'})"
            for d in datasets
        )
        or "no dataset"
    )


def _check_positions(shards: Sequence[Shard]) -> list[Shard]:
    n = shards[0].position[1]
    seen: dict[int, Shard] = {}
    for shard in shards:
        i = shard.position[0]
        if i in seen:
            raise ConfigError(
                f"shard {i}/{n} given twice: {seen[i].path} and {shard.path}."
            )
        seen[i] = shard
    missing = [f"{i}/{n}" for i in range(1, n + 1) if i not in seen]
    if missing:
        got = ", ".join(f"{i}/{n}" for i in sorted(seen))
        raise ConfigError(
            f"shard {', '.join(missing)} {'is' if len(missing) == 1 else 'are'} missing"
            f" (given: {got}); pass every shard's report."
        )
    return [seen[i] for i in range(1, n + 1)]


def _check_complete(shard: Shard) -> None:
    c = shard.doc.get("completeness")
    if isinstance(c, dict) and (c.get("interrupted") or c.get("partial")):
        raise ConfigError(
            f"shard {shard.path} is incomplete ({c.get('partial') or 'interrupted'});"
            " re-run that job."
        )


def merge_shards(
    shards: Sequence[Shard], limits: Mapping[str, float | None] | None = None
) -> MergedRun:
    """Rebuild one run report from its shards.

    :param shards: every shard of one ``--ctxbench-shard=i/n`` run, in any order.
    :param limits: gate limits that replace the shards' own for every suite
        (``{"min_pass_rate": 0.8}``); ``None`` values leave a limit as it was.
    :raises ConfigError: see the module docstring.
    """
    if not shards:
        raise ConfigError(
            "no shard report given; pass the JSON reports of every shard."
        )
    _check_same_run(shards)
    ordered = _check_positions(shards)
    for shard in ordered:
        _check_complete(shard)
    suites: dict[str, dict[str, Any]] = {}
    owner: dict[str, Path] = {}
    for shard in ordered:
        for s in shard.doc["suites"]:
            label = str(s["label"])
            if label in suites and _differs(suites[label], s):
                raise ConfigError(
                    f"shards from different runs: suite {label!r} is configured differently"
                    f" in {owner[label]} and {shard.path}."
                )
            suites.setdefault(label, s)
            owner.setdefault(label, shard.path)
    records: list[Record] = []
    where: dict[tuple[str, str, str, Any], Path] = {}
    for shard in ordered:
        for row in shard.doc["rows"]:
            key = (
                str(row["suite"]),
                str(row["dataset"]),
                str(row["example_id"]),
                (row.get("metadata") or {}).get("trial"),
            )
            if key in where:
                raise ConfigError(
                    f"overlapping shards: example {key[1]}/{key[2]} of suite {key[0]!r} is"
                    f" in both {where[key]} and {shard.path}."
                )
            where[key] = shard.path
            suite = suites.get(str(row["suite"]))
            if suite is None:
                raise ConfigError(
                    f"shard {shard.path}: row of suite {row['suite']!r} has no entry in 'suites'."
                )
            records.append(
                Record(
                    suite=str(row["suite"]),
                    origin=str(suite["origin"]),
                    order=tuple(int(x) for x in row["order"]),
                    status=str(row["status"]),
                    row=EvalRow.from_dict(
                        {k: row[k] for k in (*ROW_FIELDS, *ROW_OPTIONAL) if k in row}
                    ),
                    io=(
                        {
                            **{
                                k: str(row[k])
                                for k in ("response", "reference", "tool_calls")
                                if k in row
                            },
                            **({"answer": row["answer"]} if "answer" in row else {}),
                        }
                        or None
                    ),
                )
            )
    infos: dict[str, SuiteInfo] = {}
    for s in suites.values():
        origin = str(s["origin"])
        if origin in infos:
            continue
        merged_limits: dict[str, float | None] = {
            k: float(v) for k, v in s.get("limits", {}).items()
        }
        for name, value in (limits or {}).items():
            if value is not None:
                merged_limits[name] = float(value)
        infos[origin] = SuiteInfo(
            origin=origin,
            threshold=float(s["threshold"]),
            score_field=s.get("score_field"),
            limits=merged_limits,
            strict=bool(s.get("strict", False)),
            datasets=tuple(s.get("datasets", ())),
            # which evaluators scored each dataset, over the origin's suites
            evaluators={
                str(tag): list(evs)
                for x in suites.values()
                if str(x["origin"]) == origin and isinstance(x.get("evaluators"), dict)
                for tag, evs in x["evaluators"].items()
            },
        )
    lost = [n for shard in ordered for n in shard.doc.get("lost", [])]
    report = build_run_report(records, infos, lost)
    report.completeness = _merge_completeness(ordered)
    first = ordered[0].doc
    run = json.loads(json.dumps(first["run"]))
    run["options"]["shard"] = None
    run["merged_from"] = [str(s.path) for s in ordered]
    fingerprints = {
        str(d["tag"]): str(d["fingerprint"])
        for d in run.get("datasets", [])
        if d.get("fingerprint")
    }
    for d in run.get("datasets", []):
        # The unsharded selection: the shard's own part is no longer the story.
        d["selected"] = sum(
            next(
                (
                    x.get("selected", 0)
                    for x in s.doc["run"].get("datasets", [])
                    if x.get("tag") == d["tag"]
                ),
                0,
            )
            for s in ordered
        )
        parts = [
            x
            for x in str(d.get("selection", "")).split(", ")
            if not x.startswith("shard ")
        ]
        d["selection"] = ", ".join(parts) or "all"
    return MergedRun(report, run, fingerprints, str(first["plugin"]["version"]))


def _merge_completeness(shards: Sequence[Shard]) -> dict[str, Any]:
    out: dict[str, Any] = {
        "complete": True,
        "interrupted": False,
        "partial": None,
        "planned": 0,
        "selected": 0,
        "ran": 0,
        "gates_skipped": None,
        "partial_suites": {},  # a partial shard is refused
        "lost": [],
        "not_run": [],
        "suites": {},
        "shards": [str(s.path) for s in shards],
    }
    for shard in shards:
        c = shard.doc.get("completeness")
        if not isinstance(c, dict):
            # A shard with no row at all writes no completeness: it expected nothing.
            continue
        out["complete"] = out["complete"] and bool(c.get("complete", True))
        for key in ("planned", "selected", "ran"):
            out[key] += int(c.get(key, 0))
        out["lost"] += list(c.get("lost", []))
        out["not_run"] += list(c.get("not_run", []))
        for label, counts in c.get("suites", {}).items():
            into = out["suites"].setdefault(
                label,
                {"expected": 0, "received": 0, "lost": [], "not_run": 0, "skipped": 0},
            )
            for key in ("expected", "received", "not_run", "skipped"):
                into[key] += int(counts.get(key, 0))
            into["lost"] += list(counts.get("lost", []))
    return out


def _money(value: Any) -> float:
    """A dollar figure of a shard's ``llm`` section; unknown (``None``, ``"nan"``)
    is NaN, so that a sum with an unknown part stays unknown, never too low."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    return math.nan


def _union(sections: Sequence[Mapping[str, Any]], key: str) -> list[str]:
    return list(dict.fromkeys(str(m) for sec in sections for m in sec.get(key) or ()))


def merge_llm(shards: Sequence[Shard]) -> dict[str, Any] | None:
    """The shards' ``llm`` sections as one run's: cache hits and misses, calls sent,
    tokens, money and the usage of requests no row owns (``unattributed``) summed;
    models listed once. ``None`` when no shard measured an LLM call.

    The rows carry their own usage and money; what only this section holds (the
    calls whose example was unknown, the replay misses) would be lost otherwise.
    """
    sections = [s.doc["llm"] for s in shards if isinstance(s.doc.get("llm"), dict)]
    if not sections:
        return None

    def total(get: Any) -> int:
        return sum(int(get(sec) or 0) for sec in sections)

    caches = [sec.get("cache") or {} for sec in sections]
    out: dict[str, Any] = {
        "cache": {
            "mode": caches[0].get("mode"),
            "path": caches[0].get("path"),
            "unusable": next(
                (c["unusable"] for c in caches if c.get("unusable")), None
            ),
            **{
                k: sum(int(c.get(k) or 0) for c in caches)
                for k in ("hits", "misses", "replay_misses", "refused_connections",
                          "bypassed_connections", "refused_examples")
            },
            "bypass_addresses": _union(caches, "bypass_addresses")[:10],
        },
        "calls_sent": total(lambda sec: sec.get("calls_sent")),
        "tokens": {
            k: total(lambda sec, k=k: (sec.get("tokens") or {}).get(k))
            for k in ("prompt_tokens", "completion_tokens", "cached_tokens")
        },
        "saved_tokens": total(lambda sec: sec.get("saved_tokens")),
        "models": _union(sections, "models"),
    }
    loose = [
        sec["unattributed"]
        for sec in sections
        if isinstance(sec.get("unattributed"), dict)
    ]
    if loose:
        merged: dict[str, Any] = {
            k: sum(int(u.get(k) or 0) for u in loose)
            for k in ("calls", "cache_hits", "prompt_tokens", "completion_tokens",
                      "cached_tokens", "saved_tokens")
        }
        merged["models"] = _union(loose, "models")
        for key in ("cost_usd", "saved_usd"):
            if any(key in u for u in loose):
                value = sum(_money(u.get(key)) for u in loose)
                merged[key] = None if math.isnan(value) else value
        for key in ("unpriced_models", "bad_usage"):
            if any(key in u for u in loose):
                merged[key] = [x for u in loose for x in u.get(key) or ()]
        out["unattributed"] = merged
    mismatch: dict[tuple[str, str], dict[str, Any]] = {}
    for sec in sections:  # replies that named another model: calls summed per pair
        add_mismatch(mismatch, sec.get("model_mismatch"))
    if mismatch:
        out["model_mismatch"] = list(mismatch.values())
    budgets: dict[str, dict[str, int]] = {}
    for sec in sections:  # each endpoint's adaptive budget: summed, like the workers'
        for endpoint, figures in (sec.get("budget") or {}).items():
            if isinstance(figures, dict):
                sums = budgets.setdefault(str(endpoint), {})
                for name, value in figures.items():
                    if isinstance(value, int) and not isinstance(value, bool):
                        sums[name] = sums.get(name, 0) + value
    if budgets:
        out["budget"] = dict(sorted(budgets.items()))
    from .calls import add_attempts

    sent: dict[str, dict[str, int]] = {}
    for sec in sections:  # the requests each endpoint was sent: summed
        add_attempts(sent, sec.get("endpoints"))
    if sent:
        out["endpoints"] = dict(sorted(sent.items()))
    moneys = [sec["money"] for sec in sections if isinstance(sec.get("money"), dict)]
    if moneys:
        out["money"] = {
            key: sum(_money(m.get(key)) for m in moneys)
            for key in ("cost_usd", "judge_cost_usd", "total_cost_usd", "saved_usd")
        }
        out["money"]["unpriced_models"] = _union(moneys, "unpriced_models")
        unused = [set(m.get("prices_unused") or ()) for m in moneys]
        out["money"]["prices_unused"] = [
            m
            for m in moneys[0].get("prices_unused") or ()
            if all(m in u for u in unused)
        ]
        sources: dict[str, Any] = {}
        for m in moneys:
            sources.update(m.get("price_sources") or {})
        if sources:
            out["money"]["price_sources"] = sources
        gp = [m["genai_prices"] for m in moneys if m.get("genai_prices")]
        if gp:
            out["money"]["genai_prices"] = gp[0]
    return out
