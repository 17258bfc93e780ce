"""The judge against people: labels, Cohen's kappa (scikit-learn's, as the oracle),
Spearman (SciPy's), calibration, gates not enforced, and ``ctxbench calibrate``."""

from __future__ import annotations

import json
import math
import os
import random
import warnings
from pathlib import Path
from typing import Any

import pytest

from pytest_context_bench.agreement import (
    JUDGED_METRICS,
    LabelsError,
    calibrate,
    cohen_kappa,
    judge_decides,
    judge_gating,
    judge_verdict,
    read_labels,
    spearman,
)
from pytest_context_bench.cli import main as ctxbench
from pytest_context_bench.gate import Gate, GateResult
from pytest_context_bench.report.run import Record, SuiteInfo, build_run_report
from pytest_context_bench.report.verdicts import gate_verdicts
from pytest_context_bench.results import EvalRow
from pytest_context_bench.verdict import agreement_doc, judge

sklearn_metrics = pytest.importorskip("sklearn.metrics")
scipy_stats = pytest.importorskip("scipy.stats")


# -- kappa: scikit-learn's cohen_kappa_score is the oracle -----------------------------


def _label_sets() -> list[tuple[str, list[Any], list[Any], list[Any] | None]]:
    """Constructed pairs of raters: (name, a, b, labels). Hand-made edge cases first,
    then seeded random ones over 2 to 6 categories and 1 to 60 items."""
    sets: list[tuple[str, list[Any], list[Any], list[Any] | None]] = [
        ("perfect", [1, 2, 3, 4, 5], [1, 2, 3, 4, 5], None),
        ("opposite-binary", [True, False, True, False], [False, True, False, True], None),
        ("one-off", [1, 2, 3, 4, 5, 5], [2, 3, 4, 5, 5, 4], None),
        ("pass-fail-strings", ["pass", "pass", "fail", "pass", "fail"], ["pass", "fail", "fail", "pass", "pass"], None),
        ("scale-with-unused-values", [1, 1, 2, 5], [1, 2, 2, 5], [1, 2, 3, 4, 5]),
        ("labels-leave-some-out", [1, 2, 3, 7], [1, 3, 3, 7], [1, 2, 3]),
        ("skewed", [1] * 18 + [0, 0], [1] * 17 + [0, 1, 0], None),
        ("far-apart", [0, 10, 0, 10], [10, 0, 10, 0], list(range(11))),
        ("single-item-agree", [3], [3], [1, 2, 3, 4, 5]),
        ("two-raters-one-label-each", [2, 2, 2], [4, 4, 4], None),
    ]
    rng = random.Random(36)
    for i in range(40):
        k = rng.randint(2, 6)
        n = rng.randint(1, 60)
        a = [rng.randint(1, k) for _ in range(n)]
        # a noisy copy: agreement somewhere between chance and perfect
        noise = rng.random()
        b = [x if rng.random() > noise else rng.randint(1, k) for x in a]
        labels = list(range(1, k + 1)) if i % 3 == 0 else None
        sets.append((f"random-{i}", a, b, labels))
    return sets


SETS = _label_sets()


@pytest.mark.parametrize(("name", "a", "b", "labels"), SETS, ids=[s[0] for s in SETS])
@pytest.mark.parametrize("weights", [None, "linear", "quadratic"])
def test_kappa_is_scikit_learns(name: str, a: list, b: list, labels: list | None, weights: str | None) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # 0/0 is a RuntimeWarning in numpy
        expected = float(sklearn_metrics.cohen_kappa_score(a, b, labels=labels, weights=weights))
    got = cohen_kappa(a, b, labels=labels, weights=weights)
    if math.isnan(expected):
        assert math.isnan(got)
    else:
        assert got == pytest.approx(expected, abs=1e-12)


def test_enough_label_sets_are_checked() -> None:
    assert len(SETS) >= 20
    assert any(len(set(a) | set(b)) > 2 for _, a, b, _ in SETS)  # weights matter


@pytest.mark.parametrize(("name", "a", "b", "labels"), [s for s in SETS if len(s[1]) > 1], ids=lambda x: x if isinstance(x, str) else "")
def test_spearman_is_scipys(name: str, a: list, b: list, labels: Any) -> None:
    if not all(isinstance(x, (int, float)) for x in a + b):
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # constant input
        expected = float(scipy_stats.spearmanr(a, b).statistic)
    got = spearman([float(x) for x in a], [float(x) for x in b])
    assert (math.isnan(expected) and math.isnan(got)) or got == pytest.approx(expected, abs=1e-12)


def test_kappa_refuses_bad_input() -> None:
    with pytest.raises(ValueError, match="2 and 3"):
        cohen_kappa([1, 2], [1, 2, 3])
    with pytest.raises(ValueError, match="weights"):
        cohen_kappa([1], [1], weights="cubic")
    assert math.isnan(cohen_kappa([], []))


# -- labels files ------------------------------------------------------------------------


def _write(tmp_path: Path, text: str, name: str = "labels.jsonl") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_read_labels_pass_fail_and_scores(tmp_path: Path) -> None:
    path = _write(tmp_path, '\ufeff{"example_id": "a", "label": "PASS", "note": "ok"}\n\n'
                            '{"example_id": 7, "label": false, "dataset": "qa"}\n'
                            '{"example_id": "a", "label": "fail", "system": "bot2"}\n')
    labels = read_labels(path)
    assert labels.kind == "binary" and len(labels.items) == 3
    assert labels.lookup("any", "a", "bot") == (True, 1)
    assert labels.lookup("any", "a", "bot2") == (False, 4)  # the System's own label wins
    assert labels.lookup("qa", "7", "bot") == (False, 3)
    assert labels.lookup("other", "7", "bot") is None
    scores = read_labels(_write(tmp_path, '{"example_id": "a", "label": 4}\n{"example_id": "b", "label": 2.0}\n', "s.jsonl"))
    assert scores.kind == "score" and [x[2] for x in scores.items] == [4, 2]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"example_id": "a", "label": "pass"}\n{oops\n', "line 2: not JSON"),
        ('[1, 2]\n', "line 1: holds a list, not a JSON object"),
        ('{"label": "pass"}\n', "line 1: has no 'example_id'"),
        ('{"example_id": "", "label": "pass"}\n', "'example_id' must be a non-empty string"),
        ('{"example_id": true, "label": "pass"}\n', "'example_id' must be a non-empty string or an integer, got a boolean"),
        ('{"example_id": "a"}\n', "line 1: has no 'label'"),
        ('{"example_id": "a", "label": "maybe"}\n', 'got the string "maybe"'),
        ('{"example_id": "a", "label": 3.5}\n', "got 3.5"),
        ('{"example_id": "a", "label": null}\n', "got null"),
        ('{"example_id": "a", "label": NaN}\n', "line 1: cannot be used"),
        ('{"example_id": "a", "label": 4}\n{"example_id": "b", "label": "pass"}\n', "line 2: a binary label in a file of score labels (line 1)"),
        ('{"example_id": "a", "label": 4}\n{"example_id": "a", "label": 5}\n', "line 2: example 'a' is labelled again (first on line 1)"),
        ('{"example_id": "a", "dataset": 3, "label": 5}\n', "'dataset' must be a string"),
        ("\n\n", "holds no label"),
    ],
)
def test_a_bad_labels_file_is_one_error_naming_file_and_line(tmp_path: Path, text: str, message: str) -> None:
    path = _write(tmp_path, text)
    with pytest.raises(LabelsError) as info:
        read_labels(path)
    assert str(path) in str(info.value) and message in str(info.value)


def test_labels_that_are_not_files(tmp_path: Path) -> None:
    with pytest.raises(LabelsError, match="no such file"):
        read_labels(tmp_path / "missing.jsonl")
    with pytest.raises(LabelsError, match="directory"):
        read_labels(tmp_path)
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(LabelsError, match="FIFO"):
        read_labels(fifo)  # refused before it is opened: never hangs
    (tmp_path / "latin1.jsonl").write_bytes(b'{"example_id": "\xe9", "label": "pass"}\n')
    with pytest.raises(LabelsError, match="cannot be read"):
        read_labels(tmp_path / "latin1.jsonl")


# -- what a judge said of a row ----------------------------------------------------------


def test_judge_verdict_of_each_judge() -> None:
    rubric = {"llm_judge": {"rating": 3.6, "scale": [1, 5]}}
    assert judge_verdict({"judge_score": 0.65, "judge_pass": 1.0}, rubric, 0.7) == (True, 3.6, (1, 5))
    assert judge_verdict({"judge_score": 0.75}, {}, 0.7) == (True, 4.0, (1, 5))  # the seeds' 1-5
    assert judge_verdict({"judge_score": 0.5}, {}, 0.7) == (False, 3.0, (1, 5))
    assert judge_verdict({"memory_judge": 1.0, "memory_judge_raw": 1.0}, {}, 0.7) == (True, 1.0, None)
    llm_rubric = {"assertions": {"by_type": {"not-llm-rubric": "1/1"}}}
    assert judge_verdict({"assert_pass": 0.0, "assert_score": 0.2}, llm_rubric, 0.7) == (False, 0.2, None)
    assert judge_verdict({"assert_pass": 1.0}, {"assertions": {"by_type": {"contains": "1/1"}}}, 0.7) is None
    assert judge_verdict({"f1": 1.0}, {}, 0.7) is None
    assert judge_decides({}, {"score_field": "judge_score"}, None)
    assert not judge_decides({}, {"score_field": "f1"}, None)
    assert judge_decides({}, {"score_field": "f1"}, "memory_judge")


def _row(ident: str, scores: dict, *, suite: str = "bot", error: Any = None, **meta: Any) -> dict:
    return {"suite": suite, "system": suite, "dataset": "qa", "example_id": ident, "scores": scores,
            "metadata": {"score_field": "judge_score", **meta}, "error": error}


def _rubric_row(ident: str, rating: int, passed: bool, **kw: Any) -> dict:
    return _row(ident, {"judge_score": (rating - 1) / 4, "judge_pass": 1.0 if passed else 0.0},
                llm_judge={"rating": float(rating), "scale": [1, 5], "judge_reason": f"why {ident}"}, **kw)


def test_calibrate_pairs_rows_and_labels(tmp_path: Path) -> None:
    labels = read_labels(_write(tmp_path, "".join(
        json.dumps({"example_id": i, "label": lab}) + "\n"
        for i, lab in [("a", "pass"), ("b", "fail"), ("c", "pass"), ("d", "fail"), ("z", "pass")])))
    rows = [_rubric_row("a", 5, True), _rubric_row("b", 4, True), _rubric_row("c", 2, False),
            _rubric_row("d", 1, False), _rubric_row("e", 5, True),
            _row("f", {}, error={"type": "X", "message": "m", "where": "system"}),
            {**_row("c", {"f1": 1.0}), "suite": "other", "system": "other"}]
    cal, other = calibrate(rows, labels, {"bot": 0.7})
    assert other.suite == "other" and other.unjudged == 1 and other.n == 0  # labelled, not judged
    assert (cal.n, cal.unlabelled, cal.errors) == (4, 1, 1)
    assert cal.agreement == 0.5 and cal.kappa == pytest.approx(0.0)
    assert cal.categories == [True, False] and cal.matrix == [[1, 1], [1, 1]]
    assert [d["example"] for d in cal.disagreements] == ["qa/b", "qa/c"]
    assert cal.disagreements[0] == {"example": "qa/b", "label": "fail", "judge": "pass", "judge_reason": "why b"}


def test_calibrate_scores_use_the_scale_weighted_kappa_and_spearman(tmp_path: Path) -> None:
    people = {"a": 5, "b": 4, "c": 2, "d": 1, "e": 3, "f": 9}
    labels = read_labels(_write(tmp_path, "".join(
        json.dumps({"example_id": i, "label": v}) + "\n" for i, v in people.items())))
    judge_ratings = {"a": 5, "b": 3, "c": 2, "d": 2, "e": 3, "f": 4}
    rows = [_rubric_row(i, r, r >= 3) for i, r in judge_ratings.items()]
    (cal,) = calibrate(rows, labels, {})
    assert cal.n == 5 and cal.categories == [1, 2, 3, 4, 5]
    assert "the label 9 (line 6) is outside the judge's scale 1-5" in cal.problems[0]
    a, b = [5, 4, 2, 1, 3], [5, 3, 2, 2, 3]
    assert cal.weighted_kappa == pytest.approx(
        sklearn_metrics.cohen_kappa_score(a, b, labels=[1, 2, 3, 4, 5], weights="quadratic"))
    assert cal.kappa == pytest.approx(sklearn_metrics.cohen_kappa_score(a, b, labels=[1, 2, 3, 4, 5]))
    assert cal.spearman == pytest.approx(scipy_stats.spearmanr(a, b).statistic)
    assert cal.gate_kappa == cal.weighted_kappa


# -- gates left not enforced -------------------------------------------------------------


def _report(rows: list[dict], limits: dict) -> Any:
    from pytest_context_bench.report.rows import row_status

    records = [Record(r["suite"], "cli", (i,),
                      row_status(r["error"], r["scores"], r["metadata"]["score_field"], 0.7),
                      EvalRow.from_dict({k: v for k, v in r.items() if k != "suite"}))
               for i, r in enumerate(rows)]
    return build_run_report(records, {"cli": SuiteInfo("cli", limits=limits)})


def test_a_judge_below_the_minimum_kappa_leaves_its_gates_not_enforced(tmp_path: Path) -> None:
    labels = read_labels(_write(tmp_path, "".join(
        json.dumps({"example_id": i, "label": lab}) + "\n"
        for i, lab in [("a", "fail"), ("b", "fail"), ("c", "pass"), ("d", "pass")])))
    rows = [_rubric_row("a", 5, True), _rubric_row("b", 4, True), _rubric_row("c", 1, False),
            _rubric_row("d", 2, False)]
    report = _report(rows, {"min_pass_rate": 0.9, "max_error_rate": 0.0})
    assert [g.gate.name for g in report.breaches] == ["min_pass_rate"]
    verdict = judge(report, labels=labels, min_kappa=0.4)
    gates = {g.gate.name: g for g in verdict.report.gates}
    assert not gates["min_pass_rate"].enforced and gates["max_error_rate"].enforced
    why = gates["min_pass_rate"].not_enforced
    assert why == "the judge's Cohen's kappa with labels.jsonl is -1 < 0.4 on 4 labelled example(s)"
    assert verdict.report.breaches == [] and not verdict.breached
    (v, _) = gate_verdicts(verdict.report.gates)
    assert v.not_enforced == why and not v.passed
    doc = agreement_doc(verdict)
    assert doc["suites"][0]["not_enforced"] == why and doc["min_kappa"] == 0.4
    assert gates["min_pass_rate"].to_dict()["enforced"] is False
    # agreement high enough: the gate is enforced and fails the run
    assert judge(_report(rows, {"min_pass_rate": 0.9}), labels=labels, min_kappa=-1.0).breached
    # measured only, without a minimum: nothing changes
    plain = judge(_report(rows, {"min_pass_rate": 0.9}), labels=labels)
    assert plain.breached and plain.gating.not_enforced == {}


def test_no_labelled_example_or_one_label_only_is_not_enough(tmp_path: Path) -> None:
    labels = read_labels(_write(tmp_path, '{"example_id": "zz", "label": "pass"}\n'))
    rows = [_rubric_row("a", 5, True)]
    gating = judge_gating(rows, [{"label": "bot", "threshold": 0.7}], labels, 0.2)
    assert gating.not_enforced == {"bot": "no labelled example of this suite was judged (labels.jsonl)"}
    labels = read_labels(_write(tmp_path, '{"example_id": "a", "label": "pass"}\n', "one.jsonl"))
    gating = judge_gating(rows, [{"label": "bot", "threshold": 0.7}], labels, 0.2)
    assert "undefined on 1 labelled example(s)" in gating.not_enforced["bot"]
    assert gating.reason("bot", "pass_rate") and gating.reason("bot", "error_rate") is None
    assert JUDGED_METRICS == {"pass_rate", "mean_score", "cost_of_pass", "cost_of_pass_usd"}
    # a suite its judge does not decide keeps its gates
    rows = [{**_rubric_row("a", 5, True), "metadata": {"score_field": "f1"}}]
    assert judge_gating(rows, [{"label": "bot"}], labels, 0.9).not_enforced == {}


def test_a_gate_result_not_enforced_is_no_breach() -> None:
    g = GateResult(Gate("min_pass_rate", "pass_rate", ">=", 0.9), "s", 0.5, False, False, "why")
    assert not g.breached and g.to_dict()["not_enforced"] == "why"


# -- ctxbench calibrate ------------------------------------------------------------------


def _report_file(tmp_path: Path, rows: list[dict]) -> Path:
    from pytest_context_bench.report import to_json_dict, write_json

    report = _report(rows, {})
    doc = to_json_dict(report, run={}, gates_enforced=True, version="test")
    path = tmp_path / "report.json"
    write_json(doc, path)
    return path


def test_ctxbench_calibrate(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rows = [_rubric_row("a", 5, True), _rubric_row("b", 4, True), _rubric_row("c", 1, False),
            _rubric_row("e\x1b[2J\u202e", 2, False)]
    rows[1]["metadata"]["llm_judge"]["judge_reason"] = "\x1b[31mfine\x1b[0m <b>ok</b>"
    report = _report_file(tmp_path, rows)
    labels = _write(tmp_path, "".join(json.dumps({"example_id": i, "label": lab}) + "\n"
                                      for i, lab in [("a", "pass"), ("b", "fail"), ("c", "fail"),
                                                     ("e\x1b[2J\u202e", "pass")]))
    out = tmp_path / "cal.json"
    assert ctxbench(["calibrate", str(report), str(labels), "--json", str(out)]) == 0
    text = capsys.readouterr().out
    assert "bot: n 4, agreement 0.5, kappa 0; 2 disagreement(s)" in text
    assert "people: pass  1              1" in text
    assert "qa/b: people fail, judge pass: \\x1b[31mfine\\x1b[0m <b>ok</b>" in text
    assert "\x1b" not in text and "\u202e" not in text and "qa/e\\x1b[2J\\u202e" in text
    doc = json.loads(out.read_text())
    (suite,) = doc["suites"]
    assert suite["confusion"] == [[1, 1], [1, 1]] and suite["kappa"] == 0.0 and suite["n"] == 4
    assert ctxbench(["calibrate", str(report), str(labels), "--min-kappa", "0.5"]) == 1
    assert "judge agreement below --min-kappa 0.5: bot (Cohen's kappa 0.000)" in capsys.readouterr().out


def test_ctxbench_calibrate_errors_exit_4(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    report = _report_file(tmp_path, [_rubric_row("a", 5, True)])
    bad = _write(tmp_path, '{"example_id": "a", "label": "pass"}\n{"example_id": "b"}\n', "bad.jsonl")
    assert ctxbench(["calibrate", str(report), str(bad)]) == 4
    err = capsys.readouterr().err
    assert f"labels file {bad}, line 2: has no 'label'" in err and err.count("\n") == 1
    none = _write(tmp_path, '{"example_id": "zzz", "label": "pass"}\n', "none.jsonl")
    assert ctxbench(["calibrate", str(report), str(none)]) == 4
    assert "nothing to measure" in capsys.readouterr().err
    assert ctxbench(["calibrate", str(report), str(none), "--json", str(report)]) == 4
    assert "would overwrite a file it reads" in capsys.readouterr().err
    assert ctxbench(["calibrate", str(report), str(none), "--min-kappa", "2"]) == 4
    assert ctxbench(["calibrate", str(tmp_path / "missing.json"), str(none)]) == 4
    assert "no such file" in capsys.readouterr().err
