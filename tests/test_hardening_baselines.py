"""Baselines and reports that break their schema or invariants are refused, one line
naming the row (before: duplicated rows, example_id null and a score of Infinity were
compared as if fine)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any, Callable

import pytest
from test_baseline import _good

from pytest_context_bench.baseline import load_baseline
from pytest_context_bench.errors import ConfigError
from pytest_context_bench.report import load_report

Mutation = Callable[[dict[str, Any]], Any]


def _dup(doc: dict[str, Any]) -> None:
    doc["rows"].append(copy.deepcopy(doc["rows"][0]))


def _set(key: str, value: Any, row: int = 1) -> Mutation:
    def mutate(doc: dict[str, Any]) -> None:
        doc["rows"][row][key] = value

    return mutate


def _score(value: Any) -> Mutation:
    def mutate(doc: dict[str, Any]) -> None:
        doc["rows"][1]["scores"]["f1"] = value

    return mutate


CASES: list[tuple[Mutation, str]] = [
    (_dup, r"rows\[2\] \(suite 'cli::s', example_id 'ex000'\) repeats rows\[0\]"),
    (_set("example_id", None), r"rows\[1\] .*example_id None.*non-empty string"),
    (_set("example_id", ""), r"rows\[1\] .*example_id ''"),
    (_set("system", None), r"rows\[1\] .*system None"),
    (_score("inf"), r"rows\[1\] .*score 'f1' = 'inf'; expected a finite number"),
    (_score(True), r"rows\[1\] is malformed \(expected a number"),
    (_set("input_tokens", -3), r"rows\[1\] .*input_tokens -3"),
    (_set("suite", "cli::nope"), r"rows\[1\] .*suite that 'suites' does not list"),
    (_set("status", "error"), r"rows\[1\] .*status 'error' but error null"),
    # Issue 25: the status follows from the scores and the threshold; an edited score
    # (0.2 -> 0.9 under threshold 0.7) or status is refused, not compared.
    (_score(0.9), (r"rows\[1\] .*status 'below', but f1 = 0.9 against the threshold"
                   r" 0.7 makes it 'pass' \(were its scores edited\?\)")),
    (_set("status", "pass"), r"rows\[1\] .*status 'pass', but f1 = 0.2 .* 'below'"),
]


def _write(tmp_path: Path, doc: dict[str, Any], name: str) -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


@pytest.mark.parametrize(("mutate", "expected"), CASES)
def test_bad_baseline_rows_are_refused(
    tmp_path: Path, mutate: Mutation, expected: str
) -> None:
    doc = _good(tmp_path)
    mutate(doc)
    path = _write(tmp_path, doc, "bad.json")
    with pytest.raises(ConfigError, match=expected) as info:
        load_baseline(path)
    assert "\n" not in str(info.value) and str(path) in str(info.value)


def test_a_literal_infinity_score_is_refused(tmp_path: Path) -> None:
    doc = _good(tmp_path)
    doc["rows"][1]["scores"]["f1"] = "__X__"
    path = tmp_path / "inf.json"
    path.write_text(json.dumps(doc).replace('"__X__"', "Infinity"), encoding="utf-8")
    with pytest.raises(ConfigError, match="Infinity, which is not JSON"):
        load_baseline(path)


def test_a_good_baseline_still_loads(tmp_path: Path) -> None:
    base = load_baseline(_write(tmp_path, _good(tmp_path), "good.json"))
    assert len(base.records) == 2


def _report(pytester: pytest.Pytester) -> Path:
    from helpers import SYSTEMS_PY, qa_lines

    pytester.makefile(".jsonl", qa=qa_lines(3))
    pytester.makepyfile(systems=SYSTEMS_PY)
    pytester.makeini("[pytest]\npythonpath = .\n")
    result = pytester.runpytest(
        "--ctxbench-dataset=qa.jsonl",
        "--ctxbench-system=systems:half",
        "--ctxbench-json=r.json",
    )
    assert result.ret == 0
    return pytester.path / "r.json"


REPORT_CASES: list[tuple[Mutation, str]] = [
    (_dup, r"rows\[3\] .* repeats rows\[0\]"),
    (_set("example_id", None), r"report \(rows\[1\]\['example_id'\]: "),
    (_score("inf"), r"rows\[1\] .*score 'f1' = 'inf'"),
    (_set("suite", "nope"), r"rows\[1\] .*suite that 'suites' does not list"),
    (_set("status", "pass", 0), r"rows\[0\] .*status 'pass', but f1 = 0.0 .* 'below'"),
    (_score(0.0), r"rows\[1\] .*status 'pass', but f1 = 0.0 .* makes it 'below'"),
    (
        lambda d: [s.update(threshold=1.5) for s in d["suites"]],
        r"rows\[1\] .*status 'pass', but f1 = 1.0 against the threshold 1.5",
    ),
    (
        lambda d: d.pop("rows"),
        r"report \(the document: 'rows' is a required property",
    ),
]


@pytest.mark.parametrize(("mutate", "expected"), REPORT_CASES)
def test_bad_reports_are_refused(
    pytester: pytest.Pytester, mutate: Mutation, expected: str
) -> None:
    path = _report(pytester)
    assert load_report(path)["rows"]
    doc = json.loads(path.read_text())
    mutate(doc)
    path.write_text(json.dumps(doc))
    with pytest.raises(ConfigError, match=expected) as info:
        load_report(path)
    assert "\n" not in str(info.value)


def test_a_bad_baseline_stops_the_run_naming_the_row(project: pytest.Pytester) -> None:
    saved = project.runpytest(
        "--ctxbench-dataset=qa.jsonl",
        "--ctxbench-system=systems:echo",
        "--ctxbench-save-baseline=base.json",
    )
    assert saved.ret == 0
    base = project.path / "base.json"
    doc = json.loads(base.read_text())
    doc["rows"].append(copy.deepcopy(doc["rows"][2]))
    base.write_text(json.dumps(doc))
    result = project.runpytest(
        "--ctxbench-dataset=qa.jsonl",
        "--ctxbench-system=systems:echo",
        "--ctxbench-baseline=base.json",
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    lines = [line for line in result.stderr.lines if line.strip()]
    assert (
        len(lines) == 1 and "rows[6]" in lines[0] and "repeats rows[2]" in lines[0]
    ), lines
