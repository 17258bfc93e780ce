"""The JSON report: one versioned, strict-JSON document, written atomically.

Shape (validated by ``report.schema.json``, shipped with the package)::

    {
      "schema_version": 1,
      "plugin": {"name": "pytest-context-bench", "version": "..."},
      "created": "2026-11-22T03:00:00+00:00",
      "run": {...metadata: python, platform, pytest, workers, options...},
      "summary": {suite: {metric: value}},      # == EvalResult.summary for a CLI run
      "suites": [{label, origin, system, datasets, score_field, threshold, limits, strict}],
      "gates": [{suite, gate, metric, op, limit, value, passed}],
      "gates_enforced": true,
      "lost": [nodeid, ...],                    # examples that produced no row
      "complete": true,                         # false: partial, interrupted, lost rows
      "completeness": {...expected vs received rows per suite...},
      "rows": [EvalRow.to_dict() + {"suite", "status", "order", "response", "reference", "answer"}, ...]
    }

Non-finite numbers (``cost_of_pass`` with no passing example is infinite) are the
strings ``"inf"``, ``"-inf"``, ``"nan"``: never the bare ``Infinity`` token, which is
not JSON.
"""

from __future__ import annotations

import datetime as _dt
import importlib.resources
import json
import os
from pathlib import Path
from typing import Any

from .._files import atomic_write_text, not_regular
from .._json import JSONValueError, strict_loads
from ..errors import ConfigError
from ..results import json_safe
from .run import RunReport

__all__ = ["SCHEMA_VERSION", "load_report", "load_schema", "to_json_dict", "write_json"]

SCHEMA_VERSION = 1


def load_schema() -> dict[str, Any]:
    """The JSON Schema of the report (draft 2020-12)."""
    text = (importlib.resources.files(__package__) / "report.schema.json").read_text(
        "utf-8"
    )
    return json.loads(text)  # type: ignore[no-any-return]


def to_json_dict(
    report: RunReport, *, run: dict[str, Any], gates_enforced: bool, version: str
) -> dict[str, Any]:
    rows = []
    for rec in report.records:
        d = rec.row.to_dict()
        d["suite"] = rec.suite
        d["status"] = rec.status
        # Where the row sorts in one unsharded run: what lets ``ctxbench merge``
        # recompute every interval exactly as the whole run would.
        d["order"] = list(rec.order)
        if rec.io:
            d["response"] = rec.io.get("response", "")
            d["reference"] = rec.io.get("reference", "")
            if rec.io.get("tool_calls"):
                d["tool_calls"] = rec.io["tool_calls"]
            if rec.io.get("answer") is not None:
                # What the evaluators read, as the System returned it (capped):
                # ``ctxbench rescore`` scores it again (answers.py).
                d["answer"] = rec.io["answer"]
        rows.append(d)
    doc = {
        "schema_version": SCHEMA_VERSION,
        "plugin": {"name": "pytest-context-bench", "version": version},
        "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "run": run,
        "summary": report.summary,
        "intervals": report.intervals,
        "suites": report.suites,
        "gates": [g.to_dict() for g in report.gates],
        "gates_enforced": gates_enforced,
        "lost": list(report.lost),
        "rows": rows,
    }
    if report.repeats:
        doc["repeats"] = report.repeats
    if report.completeness:
        doc["complete"] = bool(report.completeness.get("complete", True))
        doc["completeness"] = report.completeness
    return json_safe(doc)  # type: ignore[no-any-return]


def write_json(doc: dict[str, Any], path: Path) -> None:
    """Write ``doc`` to ``path`` atomically (temporary file + ``os.replace``)."""
    text = json.dumps(doc, indent=2, allow_nan=False, ensure_ascii=False) + "\n"
    atomic_write_text(path, text)


def load_report(
    path: str | os.PathLike[str],
    *,
    role: str = "report",
    fix: str = "pass a file written by --ctxbench-json",
    notes: list[str] | None = None,
) -> dict[str, Any]:
    """Read a JSON report (``--ctxbench-json``) back: the one reader of every command
    that reads reports (``ctxbench compare``, ``ctxbench merge``).

    The file must be strict JSON (:func:`pytest_context_bench._json.strict_loads`:
    no NaN/Infinity, nesting, huge integers or lone surrogates), of this schema
    version, valid against ``report.schema.json``, and its rows must keep the
    invariants of :func:`pytest_context_bench.report.rows.row_problem` (each row's
    suite listed in ``suites``, non-empty string ids, finite scores, no duplicated
    row, money null or a finite number >= 0) and
    :func:`~pytest_context_bench.report.rows.status_problem` (each row's status is
    the one its error, scores and its suite's threshold give); the rows' money must
    add up to the run's total in ``llm.money``
    (:func:`~pytest_context_bench.report.rows.money_total_problem`), their tokens
    to ``llm.tokens`` (:func:`~pytest_context_bench.report.rows.token_total_problem`),
    and each row's money must be what its calls cost at the run's prices
    (:class:`~pytest_context_bench.report.money.MoneyCheck`). Money that cannot be
    recomputed here (a file of an older version; genai-prices prices without that
    genai-prices) is set to ``null`` (unknown) in the returned rows, and said in
    ``notes``.

    :param path: the file.
    :param role: what the file is to the caller, first in every message (``shard``).
    :param fix: what to do about a bad file, last in every message.
    :param notes: given, it gets one line per reason some rows' money counts as
        unknown.
    :raises ConfigError: one line naming the file and the row or field.
    """
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import best_match

    from ..baseline import BASELINE_KIND
    from .money import MoneyCheck
    from .row_shape import row_fits
    from .rows import money_total_problem, row_problem, status_problem, token_total_problem

    p = Path(path)

    def bad(what: str, then: str = fix) -> ConfigError:
        return ConfigError(f"{role} {p}: {what}; {then}.")

    problem = not_regular(p)
    if problem is not None:
        raise bad(problem, "give the path of a JSON report")
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise bad("no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise bad(f"cannot be read ({reason})") from None
    if not text.strip():
        raise bad("is empty (did its run die before writing it?)")
    try:
        doc = strict_loads(text)
    except json.JSONDecodeError as exc:
        raise bad(
            f"is not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg};"
            " truncated?)"
        ) from None
    except JSONValueError as exc:
        raise bad(f"cannot be used: {exc}") from None
    if not isinstance(doc, dict):
        raise bad(
            f"holds a JSON {type(doc).__name__}, not a pytest-context-bench report"
        )
    if doc.get("kind") == BASELINE_KIND:
        raise bad(
            "is a baseline file (--ctxbench-save-baseline), not a JSON report",
            "give a baseline with --ctxbench-baseline",
        )
    version = doc.get("schema_version")
    if isinstance(version, int) and not isinstance(version, bool):
        if version > SCHEMA_VERSION:
            raise bad(
                f"has schema_version {version}, newer than this pytest-context-bench"
                f" reads ({SCHEMA_VERSION})",
                "upgrade pytest-context-bench",
            )
    if version != SCHEMA_VERSION:
        raise bad(
            f"has schema_version {version!r}; this pytest-context-bench reads"
            f" schema_version {SCHEMA_VERSION}"
        )
    validator = Draft202012Validator(load_schema())
    rows = doc.get("rows")
    # Rows that fit the schema by the fast check (row_shape.py: it never says so of
    # a row the schema refuses) spare jsonschema's 1.7 ms a row; any other file is
    # validated whole, and its error is jsonschema's best.
    fast = isinstance(rows, list) and all(row_fits(r) for r in rows)
    error = best_match(validator.iter_errors({**doc, "rows": []} if fast else doc))
    if error is not None and fast:
        error = best_match(validator.iter_errors(doc))
    if error is not None:
        at = "".join(
            (x if i == 0 else f"[{x!r}]") if isinstance(x, str) else f"[{x}]"
            for i, x in enumerate(error.absolute_path)
        )
        message = " ".join(error.message.split())
        if len(message) > 200:
            message = message[:200] + "..."
        raise bad(
            f"is not a valid pytest-context-bench report ({at or 'the document'}:"
            f" {message})"
        )
    by_label = {str(s["label"]): s for s in doc["suites"]}
    suites = set(by_label)
    seen: dict[tuple[Any, ...], int] = {}
    for i, row in enumerate(doc["rows"]):
        problem = row_problem(row, suites, seen, i) or status_problem(
            row, by_label[row["suite"]]
        )
        if problem is not None:
            raise bad(f"rows[{i}] {problem}")
    problem = money_total_problem(doc["rows"], doc.get("llm")) or token_total_problem(
        doc["rows"], doc.get("llm")
    )
    if problem is not None:
        raise bad(problem)
    run = doc.get("run")
    check = MoneyCheck(run.get("options") if isinstance(run, dict) else None)
    if check.problem is not None:
        raise bad(check.problem)
    for i, row in enumerate(doc["rows"]):
        problem = check.row(row)
        if problem is not None:
            name = f"suite {row['suite']!r}, example_id {row['example_id']!r}"
            raise bad(f"rows[{i}] ({name}) {problem}")
    if notes is not None:
        notes.extend(check.notes(f"{role} {p}"))
    return doc
