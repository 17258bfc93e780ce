"""Baselines: write/load round trip, diff-friendliness, every bad file, compare()."""

from __future__ import annotations

import json
import math
import os
import random
import subprocess
from pathlib import Path
from typing import Any

import pytest

from pytest_context_bench import baseline as bl
from pytest_context_bench.baseline import (
    Baseline,
    Tolerance,
    check_datasets,
    compare,
    git_commit,
    load_baseline,
    parse_tolerance,
    write_baseline,
)
from pytest_context_bench.errors import ConfigError
from pytest_context_bench.plugin.recording import row_status
from pytest_context_bench.report.json_report import to_json_dict
from pytest_context_bench.report.run import Record, RunReport, SuiteInfo, build_run_report
from pytest_context_bench.results import EvalRow

ERR = {"type": "RuntimeError", "message": "boom", "where": "system"}
FAST = 399


def make_report(
    scores: dict[str, list[float | None]],
    *,
    ids: list[str] | None = None,
    threshold: float = 0.7,
    errors: set[tuple[str, int]] = frozenset(),  # type: ignore[assignment]
    tokens: dict[str, int] | None = None,
    dataset: str = "qa",
    latency: float = 0.25,
) -> RunReport:
    """A CLI run: one suite per system, ``scores[system][i]`` for example ``ids[i]``
    (``None``: the row has no f1)."""
    records = []
    repeated = ids is not None and len(set(ids)) < len(ids)
    for s_pos, (system, values) in enumerate(scores.items()):
        for i, value in enumerate(values):
            eid = ids[i] if ids is not None else f"ex{i:03d}"
            # Repeated ids are trials, numbered from 1 as the plugin does.
            trial = {"trial": ids[: i + 1].count(eid)} if ids is not None and repeated else {}
            err = ERR if (system, i) in errors else None
            row = EvalRow(
                system=system,
                example_id=eid,
                scores={} if err or value is None else {"f1": value, "exact_match": float(value == 1.0)},
                input_tokens=100,
                output_tokens=(tokens or {}).get(system, 40),
                metadata={"score_field": "f1", "z": 1, "a": [1, 2], **trial},
                latency=latency + i * 1e-3,
                dataset=dataset,
                error=err,
            )
            records.append(Record(f"cli::{system}", "cli", (s_pos, 0, i), row_status(row, threshold), row))
    return build_run_report(records, {"cli": SuiteInfo("cli", threshold=threshold, datasets=(dataset,))})


def report_doc(report: RunReport) -> dict[str, Any]:
    run = {"python": "3.11", "options": {"threshold": 0.7, "datasets": ["qa.jsonl"], "systems": ["m:S"]}}
    return to_json_dict(report, run=run, gates_enforced=True, version="0.1.0")


def save(tmp_path: Path, report: RunReport, name: str = "base.json") -> Path:
    path = tmp_path / name
    write_baseline(path, report_doc(report), git_commit="a" * 40, dataset_fingerprints={"qa": "fp1"})
    return path


# ----------------------------------------------------------------------- round trip


def test_round_trip(tmp_path: Path) -> None:
    report = make_report({"s": [1.0, 0.5, None, 0.9], "t": [0.2, 0.8, 1.0, 0.0]}, errors={("s", 3)})
    loaded = load_baseline(save(tmp_path, report))
    assert loaded.plugin_version == "0.1.0"
    assert loaded.git_commit == "a" * 40
    assert loaded.datasets == {"qa": "fp1"}
    assert loaded.systems == ["s", "t"]
    assert loaded.options == {"datasets": ["qa.jsonl"], "systems": ["m:S"], "threshold": 0.7}
    assert loaded.suites == report.suites
    # cost_of_pass of s is finite, and summary keys/values survive (inf included).
    assert loaded.summary.keys() == report.summary.keys()
    for suite, metrics in report.summary.items():
        for key, value in metrics.items():
            got = loaded.summary[suite][key]
            assert (math.isnan(got) and math.isnan(value)) or got == value, key
    assert [(r.suite, r.origin, r.status) for r in loaded.records] == [
        (r.suite, r.origin, r.status) for r in report.records
    ]
    for got_rec, want_rec in zip(loaded.records, report.records):
        want = want_rec.row
        assert got_rec.row.latency == 0.0  # not stored
        assert (got_rec.row.system, got_rec.row.example_id, got_rec.row.dataset) == (
            want.system,
            want.example_id,
            want.dataset,
        )
        assert got_rec.row.scores == want.scores
        assert got_rec.row.metadata == want.metadata
        assert got_rec.row.error == want.error
        assert got_rec.row.output_tokens == want.output_tokens
    assert loaded.rows[("cli::s", "qa", "ex003")][0].status == "error"
    assert loaded.suite("cli::t") is not None and loaded.suite("nope") is None


def test_infinite_cost_of_pass_survives(tmp_path: Path) -> None:
    report = make_report({"s": [0.1, 0.2]})
    assert math.isinf(report.summary["cli::s"]["cost_of_pass"])
    path = save(tmp_path, report)
    assert '"cost_of_pass": "inf"' in path.read_text()
    assert math.isinf(load_baseline(path).summary["cli::s"]["cost_of_pass"])


# ---------------------------------------------------------------- diff-friendliness


def test_one_row_per_line_and_no_latency_or_timestamps(tmp_path: Path) -> None:
    report = make_report({"s": [1.0, 0.5, 0.9], "t": [0.2, 0.8, 1.0]})
    text = save(tmp_path, report).read_text(encoding="utf-8")
    json.loads(text)  # strict JSON
    lines = text.splitlines()
    start = lines.index('  "rows": [')
    end = lines.index("  ]", start)
    row_lines = lines[start + 1 : end]
    assert len(row_lines) == 6
    for line in row_lines:
        row = json.loads(line.strip().rstrip(","))
        assert "latency" not in row
        assert list(row)[:5] == ["suite", "dataset", "example_id", "system", "status"]
        assert list(row["metadata"]) == sorted(row["metadata"])
    assert "latency\"" not in "\n".join(row_lines)
    assert '"created"' not in text and '"gates"' not in text
    top = list(json.loads(text))
    assert top == list(bl._TOP_KEYS)


def test_writing_twice_gives_identical_bytes(tmp_path: Path) -> None:
    report = make_report({"s": [1.0, 0.5, 0.9]})
    doc1 = report_doc(report)
    doc2 = report_doc(report)
    doc2["created"] = "1999-01-01T00:00:00+00:00"  # another run time
    for r in doc2["rows"]:
        r["latency"] = 99.0  # another speed
        r["metadata"] = dict(reversed(list(r["metadata"].items())))  # another key order
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    write_baseline(a, doc1, git_commit=None, dataset_fingerprints={"qa": "x"})
    write_baseline(b, doc2, git_commit=None, dataset_fingerprints={"qa": "x"})
    assert a.read_bytes() == b.read_bytes()
    # Re-writing a loaded baseline's own dict is stable too.
    write_baseline(b, json.loads(a.read_text()))
    assert a.read_bytes() == b.read_bytes()


def test_empty_rows(tmp_path: Path) -> None:
    path = tmp_path / "b.json"
    doc = report_doc(make_report({"s": [1.0]}))
    doc["rows"] = []
    write_baseline(path, doc)
    assert '"rows": []' in path.read_text()
    assert load_baseline(path).records == []


def test_write_is_atomic(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "sub" / "b.json"
    doc = report_doc(make_report({"s": [1.0]}))
    write_baseline(path, doc)
    before = path.read_bytes()

    def boom(src: str, dst: str) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", boom)
    doc["rows"] = []
    with pytest.raises(OSError):
        write_baseline(path, doc)
    assert path.read_bytes() == before  # the old file is intact
    assert os.listdir(path.parent) == ["b.json"]  # no temporary left behind


# ------------------------------------------------------------------------ bad files


def _write(tmp_path: Path, content: Any) -> Path:
    p = tmp_path / "bad.json"
    p.write_text(content if isinstance(content, str) else json.dumps(content), encoding="utf-8")
    return p


def _good(tmp_path: Path) -> dict[str, Any]:
    return json.loads(save(tmp_path, make_report({"s": [1.0, 0.2]})).read_text())  # type: ignore[no-any-return]


def test_missing_file(tmp_path: Path) -> None:
    p = tmp_path / "nope.json"
    with pytest.raises(ConfigError) as exc:
        load_baseline(p)
    msg = str(exc.value)
    assert str(p) in msg and "does not exist" in msg and "--ctxbench-save-baseline" in msg


def test_unreadable_file(tmp_path: Path) -> None:
    d = tmp_path / "dir.json"
    d.mkdir()
    with pytest.raises(ConfigError, match="cannot be read") as exc:
        load_baseline(d)
    assert str(d) in str(exc.value)


def test_not_utf8(tmp_path: Path) -> None:
    p = tmp_path / "b.json"
    p.write_bytes(b"\xff\xfe{")
    with pytest.raises(ConfigError, match="cannot be read"):
        load_baseline(p)


@pytest.mark.parametrize(
    ("mutate", "expected"),
    [
        (lambda d: "{not json", r"is not valid JSON \(line 1, column 2"),
        (lambda d: [1, 2], "must hold a JSON object, found list"),
        (lambda d: {**d, "schema_version": 2}, "has schema_version 2, .* reads schema_version 1"),
        (lambda d: {k: v for k, v in d.items() if k != "schema_version"}, "has schema_version None"),
        (lambda d: {k: v for k, v in d.items() if k not in ("rows", "summary")}, "missing the keys summary, rows"),
        (lambda d: {k: v for k, v in d.items() if k != "datasets"}, "missing the key datasets"),
        (lambda d: {**d, "kind": "other"}, "has kind 'other'"),
        (lambda d: {**d, "rows": {}}, "'rows' must be a JSON array"),
        (lambda d: {**d, "summary": {"s": {"mean_score": "high"}}}, "'summary' is malformed"),
        (lambda d: {**d, "suites": [{"origin": "cli"}]}, "'suites' must be an object with a 'label'"),
        (lambda d: {**d, "rows": [1]}, r"rows\[0\] must be an object"),
        (lambda d: {**d, "rows": [{**d["rows"][0], "status": "great"}]}, r"rows\[0\] has status 'great'"),
        (lambda d: {**d, "rows": [d["rows"][0], {k: v for k, v in d["rows"][1].items() if k != "suite"}]}, r"rows\[1\] has no 'suite'"),
        (lambda d: {**d, "rows": [{k: v for k, v in d["rows"][0].items() if k != "example_id"}]}, r"rows\[0\] is malformed \(row is missing example_id\)"),
        (lambda d: {"schema_version": 1, "created": "x", "gates": [], "rows": []}, "is a JSON report"),
    ],
)
def test_bad_contents(tmp_path: Path, mutate: Any, expected: str) -> None:
    p = _write(tmp_path, mutate(_good(tmp_path)))
    with pytest.raises(ConfigError, match=expected) as exc:
        load_baseline(p)
    msg = str(exc.value)
    assert msg.startswith(f"baseline {p}: ")
    assert "re-create it with --ctxbench-save-baseline" in msg


def test_check_datasets(tmp_path: Path) -> None:
    loaded = load_baseline(save(tmp_path, make_report({"s": [1.0]})))
    check_datasets(loaded, {"qa": "fp1", "other": "zzz"})  # same, or new: fine
    with pytest.raises(ConfigError, match="the dataset qa changed since the baseline was saved"):
        check_datasets(loaded, {"qa": "fp2"})


# ------------------------------------------------------------------ git, tolerances


def test_git_commit(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    calls: list[Any] = []

    def fake(args: list[str], **kw: Any) -> subprocess.CompletedProcess[str]:
        calls.append((args, kw.get("cwd")))
        return subprocess.CompletedProcess(args, 0, "abc123\n", "")

    monkeypatch.setattr(subprocess, "run", fake)
    assert git_commit(tmp_path) == "abc123"
    assert calls == [(["git", "rev-parse", "HEAD"], tmp_path)]

    monkeypatch.setattr(subprocess, "run", lambda a, **k: subprocess.CompletedProcess(a, 128, "", "fatal: not a git repository"))
    assert git_commit(tmp_path) is None

    def missing(args: list[str], **kw: Any) -> Any:
        raise FileNotFoundError(2, "No such file", "git")

    monkeypatch.setattr(subprocess, "run", missing)
    assert git_commit() is None

    def slow(args: list[str], **kw: Any) -> Any:
        raise subprocess.TimeoutExpired(args, 10)

    monkeypatch.setattr(subprocess, "run", slow)
    assert git_commit() is None


@pytest.mark.parametrize(
    ("spec", "metric", "tol"),
    [
        ("pass_rate:0.02", "pass_rate", Tolerance(0.02)),
        ("mean_score: 0.01 ", "mean_score", Tolerance(0.01)),
        ("cost_of_pass:10%", "cost_of_pass", Tolerance(0.1, True)),
        ("latency_mean:0", "latency_mean", Tolerance(0.0)),
    ],
)
def test_parse_tolerance(spec: str, metric: str, tol: Tolerance) -> None:
    assert parse_tolerance(spec) == (metric, tol)


def test_tolerance_str() -> None:
    assert str(Tolerance(0.1, True)) == "10%"
    assert str(Tolerance(0.02)) == "0.02"


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("pass_rate", "expected METRIC:AMOUNT"),
        (":0.1", "expected METRIC:AMOUNT"),
        ("pass_rate:", "expected METRIC:AMOUNT"),
        ("f1:0.1", "unknown metric 'f1'; known metrics: pass_rate, mean_score, cost_of_pass, latency_mean"),
        ("pass_rate:-0.1", "must be a number >= 0"),
        ("pass_rate:abc", "must be a number >= 0"),
        ("pass_rate:nan", "must be a number >= 0"),
        ("cost_of_pass:x%", "must be a number >= 0"),
    ],
)
def test_parse_tolerance_errors(spec: str, expected: str) -> None:
    with pytest.raises(ConfigError) as exc:
        parse_tolerance(spec)
    assert repr(spec) in str(exc.value) and expected in str(exc.value)


# --------------------------------------------------------------------------- compare


def _load(tmp_path: Path, report: RunReport) -> Baseline:
    return load_baseline(save(tmp_path, report))


def test_compare_flips_new_missing_and_suites(tmp_path: Path) -> None:
    base = make_report(
        {"s": [1.0, 1.0, 0.2, 0.3, 0.9], "old": [1.0]},
        ids=["a", "b", "c", "d", "e"],
    )
    cur = make_report(
        {"s": [0.1, 1.0, 0.9, 0.3, 0.8], "fresh": [1.0]},
        ids=["a", "b", "c", "d", "f"],
        errors={("s", 1)},
    )
    cmp = compare(_load(tmp_path, base), cur, {}, n_resamples=FAST)
    assert [s.suite for s in cmp.suites] == ["cli::s"]
    s = cmp.suites[0]
    assert s.n_matched == 4
    assert s.flipped_to_fail == ["a", "b"]  # b passes then, errors now
    assert s.flipped_to_pass == ["c"]
    assert s.new == ["f"] and s.missing == ["e"]
    assert cmp.only_current == ["cli::fresh"] and cmp.only_baseline == ["cli::old"]
    assert cmp.breaches == [] and cmp.passed
    pr = next(m for m in s.metrics if m.metric == "pass_rate")
    assert pr.result.test == "mcnemar-exact" and pr.result.discordant == (2, 1)
    assert (pr.then, pr.now) == (0.5, 0.25)
    ms = next(m for m in s.metrics if m.metric == "mean_score")
    assert ms.then == pytest.approx((1.0 + 1.0 + 0.2 + 0.3) / 4)
    assert ms.now == pytest.approx((0.1 + 0.0 + 0.9 + 0.3) / 4)
    text = "\n".join(cmp.lines())
    assert "flipped pass → fail (2): a b" in text
    assert "flipped fail → pass (1): c" in text
    assert "new since the baseline (1): f" in text and "missing from this run (1): e" in text
    assert "not in the baseline (not compared): cli::fresh" in text
    assert "in the baseline but not run (not compared): cli::old" in text
    assert "exact McNemar test" in text and "baseline gates: passed" in text


def test_compare_real_drop_fails_the_gate(tmp_path: Path) -> None:
    rng = random.Random(7)
    n = 400
    base_scores: list[float | None] = [1.0 if rng.random() < 0.75 else 0.0 for _ in range(n)]
    cur_scores = list(base_scores)
    passing = [i for i, v in enumerate(base_scores) if v == 1.0]
    for i in rng.sample(passing, 20):  # 5 points worse
        cur_scores[i] = 0.0
    base = make_report({"s": base_scores})
    cur = make_report({"s": cur_scores})
    drops = dict([parse_tolerance("pass_rate:0.02"), parse_tolerance("mean_score:0.01")])
    cmp = compare(_load(tmp_path, base), cur, drops, n_resamples=FAST)
    assert {m.metric for m in cmp.breaches} == {"pass_rate", "mean_score"}
    assert not cmp.passed
    s = cmp.suites[0]
    assert len(s.flipped_to_fail) == 20 and s.flipped_to_pass == []
    lines = cmp.lines()
    assert any("gate max-drop 0.02: FAILED" in line for line in lines)
    # Said once: the metric's line has the numbers, the verdict and its evidence.
    assert any(
        line.startswith("  pass_rate: now")
        and "gate max-drop 0.02: FAILED, significantly worse (exact McNemar" in line
        for line in lines
    )
    assert not any(line.lstrip().startswith("cli::s pass_rate") for line in lines)
    assert lines[-1] == "baseline gates: 2 failed"


def test_compare_noise_passes_the_gate(tmp_path: Path) -> None:
    rng = random.Random(11)
    quality = [rng.random() for _ in range(300)]
    base = make_report({"s": [min(1.0, max(0.0, q + rng.gauss(0, 0.1))) for q in quality]})
    cur = make_report({"s": [min(1.0, max(0.0, q + rng.gauss(0, 0.1))) for q in quality]})
    drops = dict([parse_tolerance("pass_rate:0.02"), parse_tolerance("mean_score:0.01")])
    cmp = compare(_load(tmp_path, base), cur, drops, n_resamples=FAST)
    assert cmp.passed, cmp.lines()
    ms = next(m for m in cmp.suites[0].metrics if m.metric == "mean_score")
    assert ms.result.test == "paired-bootstrap" and ms.verdict is not None
    assert "passed" in ms.verdict.reason


def test_compare_is_deterministic(tmp_path: Path) -> None:
    rng = random.Random(2)
    base = make_report({"s": [rng.random() for _ in range(100)]})
    cur = make_report({"s": [rng.random() for _ in range(100)]})
    loaded = _load(tmp_path, base)
    drops = {"mean_score": Tolerance(0.0)}
    assert compare(loaded, cur, drops, seed=3, n_resamples=FAST).lines() == compare(
        loaded, cur, drops, seed=3, n_resamples=FAST
    ).lines()


def test_compare_cost_of_pass_must_not_rise(tmp_path: Path) -> None:
    scores: list[float | None] = [1.0 if i % 5 else 0.0 for i in range(200)]
    base = make_report({"s": scores}, tokens={"s": 40})
    cheaper = make_report({"s": scores}, tokens={"s": 30})
    dearer = make_report({"s": scores}, tokens={"s": 50})
    loaded = _load(tmp_path, base)
    drops = dict([parse_tolerance("cost_of_pass:10%")])
    up = compare(loaded, dearer, drops, n_resamples=FAST)
    assert [m.metric for m in up.breaches] == ["cost_of_pass"]
    cop = up.breaches[0]
    assert cop.then == pytest.approx(50.0) and cop.now == pytest.approx(62.5)
    assert cop.result.test == "paired-bootstrap-ratio"
    assert compare(loaded, cheaper, drops, n_resamples=FAST).passed


def test_compare_latency_against_the_baseline_summary(tmp_path: Path) -> None:
    scores: list[float | None] = [0.9] * 50
    loaded = _load(tmp_path, make_report({"s": scores}, latency=0.2))
    drops = dict([parse_tolerance("latency_mean:20%")])
    slow = compare(loaded, make_report({"s": scores}, latency=0.4), drops, n_resamples=FAST)
    assert [m.metric for m in slow.breaches] == ["latency_mean"]
    assert slow.breaches[0].result.test == "bootstrap-vs-reference"
    same = compare(loaded, make_report({"s": scores}, latency=0.2), drops, n_resamples=FAST)
    assert same.passed
    # Without a latency gate the metric is not even computed.
    names = [m.metric for m in compare(loaded, make_report({"s": scores}), {}).suites[0].metrics]
    assert names == ["pass_rate", "mean_score"]


def test_compare_several_datasets_qualifies_ids(tmp_path: Path) -> None:
    a = make_report({"s": [1.0, 1.0]}, ids=["1", "2"], dataset="qa")
    b = make_report({"s": [1.0, 0.0]}, ids=["1", "2"], dataset="mc")
    base = RunReport(a.summary, a.suites, [], [*a.records, *b.records])
    cur_b = make_report({"s": [0.0, 0.0]}, ids=["1", "2"], dataset="mc")
    cur = RunReport(a.summary, a.suites, [], [*a.records, *cur_b.records])
    cmp = compare(_load(tmp_path, base), cur, {}, n_resamples=50)
    assert cmp.suites[0].n_matched == 4
    assert cmp.suites[0].flipped_to_fail == ["mc/1"]


def test_compare_no_overlap_is_reported_not_failed(tmp_path: Path) -> None:
    loaded = _load(tmp_path, make_report({"s": [1.0, 1.0]}, ids=["a", "b"]))
    cur = make_report({"s": [0.0, 0.0]}, ids=["c", "d"])
    cmp = compare(loaded, cur, {"pass_rate": Tolerance(0.0)}, n_resamples=50)
    assert cmp.passed
    pr = cmp.suites[0].metrics[0]
    assert pr.verdict is not None and "no paired examples" in pr.verdict.reason
    assert cmp.suites[0].new == ["c", "d"] and cmp.suites[0].missing == ["a", "b"]


def test_compare_repeated_trials_are_averaged(tmp_path: Path) -> None:
    # Two trials per example: ids repeat within the suite.
    base = make_report({"s": [1.0, 1.0, 1.0, 1.0]}, ids=["a", "a", "b", "b"])
    cur = make_report({"s": [1.0, 0.0, 0.0, 0.0]}, ids=["a", "a", "b", "b"])
    cmp = compare(_load(tmp_path, base), cur, {}, n_resamples=50)
    s = cmp.suites[0]
    assert s.n_matched == 2
    pr = s.metrics[0]
    assert (pr.then, pr.now) == (1.0, 0.25)
    assert pr.result.test == "paired-bootstrap"  # shares of trials are not 0/1
    assert s.flipped_to_fail == ["b"]  # a is flaky now, not failed


def test_compare_rejects_unknown_metric(tmp_path: Path) -> None:
    loaded = _load(tmp_path, make_report({"s": [1.0]}))
    with pytest.raises(ConfigError, match="unknown max-drop metric f1"):
        compare(loaded, make_report({"s": [1.0]}), {"f1": Tolerance(0.1)})


def test_flipped_ids_are_listed_in_natural_order() -> None:
    """HumanEval/2 before HumanEval/12 before HumanEval/102 (issue 39: they sorted
    as strings), in one dataset and across several."""
    from pytest_context_bench.baseline import _ids

    keys = [("he", "HumanEval/102"), ("he", "HumanEval/12"), ("he", "HumanEval/2")]
    assert _ids(keys, several=False) == ["HumanEval/2", "HumanEval/12", "HumanEval/102"]
    assert _ids([("d10", "q-1"), ("d9", "q-10"), ("d9", "q-9")], several=True) == [
        "d9/q-9", "d9/q-10", "d10/q-1"]
