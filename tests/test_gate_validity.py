"""The baseline gates keep their false-alarm rate under the noise LLM Systems have
(issue 33): trials of one day are not independent draws, and answers drift from
one day to the next.

The simulation at scale (2,000 runs per cell) is benchmarks/gate_validity.py; here:
its fast path equals the plugin's ``compare`` on real rows, the pairing of trials,
the sign-flip test against its exact distribution, Holm's adjustment, and real
pytest runs of a deterministic System whose answers change from day to day.
"""

from __future__ import annotations

import hashlib
import importlib.util
import itertools
import json
import math
import random
import sys
from pathlib import Path
from typing import Any

import pytest
from helpers import read_json

from pytest_context_bench.baseline import (
    Baseline,
    Tolerance,
    balance_trials,
    compare,
    holm_levels,
)
from pytest_context_bench.report.run import Record, RunReport
from pytest_context_bench.results import EvalRow
from pytest_context_bench.stats import _sign_flip_p, paired_p_values, paired_test

ROOT = Path(__file__).resolve().parents[1]


def _bench() -> Any:
    spec = importlib.util.spec_from_file_location("ctxbench_gate_validity", ROOT / "benchmarks" / "gate_validity.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


INFO = {"label": "sys", "origin": "cli", "system": "sys", "threshold": 0.5,
        "score_field": "pass", "limits": {}, "strict": False, "datasets": ["qa"]}


def _row(example: str, trial: int, passed: int, extra: dict[str, Any] | None = None) -> Record:
    metadata: dict[str, Any] = {"score_field": "pass", "trial": trial, **(extra or {})}
    row = EvalRow("sys", example, {"pass": float(passed)}, 10, 10, metadata, dataset="qa")
    return Record("sys", "cli", (example, trial), "pass" if passed else "below", row)


def _baseline(records: list[Record]) -> Baseline:
    return Baseline(Path("b.json"), "t", None, {}, ["sys"], {}, {}, [INFO], records)


# --- the pairing ---------------------------------------------------------------------


def test_each_example_is_paired_on_as_many_trials_of_each_side() -> None:
    base = [_row("a", t, 1) for t in (3, 1, 2, 4)] + [_row("b", t, 0) for t in (1, 2)] + [_row("gone", 1, 1)]
    run = [_row("a", 2, 0), _row("a", 1, 1)] + [_row("b", t, 1) for t in (1, 2, 3)] + [_row("new", 1, 0)]
    cur, then, left = balance_trials(run, base)
    key = lambda r: (r.row.example_id, r.row.metadata["trial"])  # noqa: E731
    assert sorted(map(key, cur)) == [("a", 1), ("a", 2), ("b", 1), ("b", 2), ("new", 1)]
    assert sorted(map(key, then)) == [("a", 1), ("a", 2), ("b", 1), ("b", 2), ("gone", 1)]
    assert left == {"run": 1, "baseline": 2}
    assert balance_trials(base, base)[2] == {}


def test_one_trial_against_a_16_trial_baseline_is_paired_with_its_first_trial() -> None:
    # Twenty examples the System almost never gets right: the baseline's 16 trials
    # passed once each (1/16), today's single trials all failed, as they do 36% of
    # the days at p = 1/20. Against the mean of 16 the differences are all -1/16
    # and the sign-flip test called that a significant drop (p = 1/2^20); paired
    # trial for trial there is nothing to see.
    base = [_row(f"e{i}", t, int(t == 16)) for i in range(20) for t in range(1, 17)]
    run = [_row(f"e{i}", 1, 0) for i in range(20)]
    comparison = compare(_baseline(base), RunReport({}, [INFO], [], run), {"pass_rate": Tolerance(0.0)})
    suite = comparison.suites[0]
    (metric,) = [m for m in suite.metrics if m.metric == "pass_rate"]
    assert not metric.failed and metric.result.test == "mcnemar-exact"
    assert metric.then == 0.0 and metric.now == 0.0
    assert suite.trials_left_out == {"baseline": 300}
    assert any("300 of the baseline's trials left out" in line for line in comparison.lines())


def test_the_flipped_lists_and_mean_score_compare_like_with_like() -> None:
    # An adaptive run: example a asked twice (1, 0), b once (0). The baseline's
    # first trials only, as many as the run's.
    base = [_row("a", t, o) for t, o in zip((1, 2, 3, 4), (1, 1, 0, 0))] + [_row("b", t, 1) for t in (1, 2, 3, 4)]
    meta = {"adaptive": {"max_trials": 4, "budget": 1.5, "reasked": True, "trials": 2}}
    run = [_row("a", 1, 1, meta), _row("a", 2, 0, meta), _row("b", 1, 0)]
    comparison = compare(_baseline(base), RunReport({}, [INFO], [], run), {})
    suite = comparison.suites[0]
    scores = {m.metric: (m.then, m.now) for m in suite.metrics}
    assert scores["pass_rate"] == (1.0, 0.25) and scores["mean_score"] == (1.0, 0.25)
    assert suite.flipped_to_fail == ["b"]


# --- the sign-flip test --------------------------------------------------------------


def _exact_sign_flip(diffs: list[float]) -> tuple[float, float]:
    observed = math.fsum(diffs)
    totals = [math.fsum(s * d for s, d in zip(signs, diffs)) for signs in itertools.product((1, -1), repeat=len(diffs))]
    low = sum(t <= observed + 1e-12 for t in totals) / len(totals)
    high = sum(t >= observed - 1e-12 for t in totals) / len(totals)
    return low, high


@pytest.mark.parametrize("diffs", [
    [-0.5, -0.5, -0.5, 0.5, -1.0, 0.0, -0.25, 0.25, -0.75, -0.5, 0.5, -1.0],
    [-1 / 3, -2 / 3, 1 / 3, -1 / 3, -1.0, -1 / 3, 0.0, 2 / 3, -1 / 3, -1 / 3, -2 / 3],
    [0.13, -0.41, -0.07, 0.29, -0.33, -0.18, 0.02, -0.26, -0.11, 0.05, -0.37],
])
def test_the_grouped_sign_flip_draws_the_exact_distribution(diffs: list[float]) -> None:
    exact_low, exact_high = _exact_sign_flip(diffs)
    low, high = _sign_flip_p(diffs, 40000, random.Random(5))
    # Monte Carlo error of 40,000 draws: at most 0.0025 (4 standard errors: 0.01).
    assert low == pytest.approx(exact_low, abs=0.01) and high == pytest.approx(exact_high, abs=0.01)
    assert 0.005 < exact_low < 0.5  # a tail in play


def test_the_p_value_without_the_interval_is_the_tests() -> None:
    rng = random.Random(1)
    before = [rng.random() for _ in range(50)]
    after = [b - 0.05 + 0.1 * rng.random() for b in before]
    result = paired_test(before, after, seed=7)
    test, low, high, discordant = paired_p_values(before, after, seed=7)
    assert (test, low, high, discordant) == (result.test, result.p_lower, result.p_higher, result.discordant)
    assert result.p_value == result.p_lower  # the gate's: one-sided, worse


# --- the benchmark's fast path is the plugin's compare ---------------------------------


def test_the_benchmarks_fast_path_equals_compare_on_real_rows() -> None:
    bench = _bench()
    failed = 0
    cases = [(s, "none") for s in bench.SCENARIOS]
    cases += [(s, "concentrated") for s in ("independent", "temperature 0", "logit drift 0.6")]
    for scenario, drop in cases:
        for run in range(2):
            n = 40 if drop == "none" else 200
            world = bench._world(scenario, drop, n, random.Random(f"check|{scenario}|{drop}|{run}"))
            fast = bench._pass_gates(world, run, False)
            slow = bench.through_compare(world, run)
            assert {k: fast[k] for k in slow} == slow, (scenario, drop, run)
            failed += sum(slow.values())
    assert failed >= 4  # the comparison saw gates fail, not only pass


def test_false_alarms_stay_at_alpha_under_day_to_day_drift_at_a_small_scale() -> None:
    # 200 seeded unchanged runs of a temperature-0 System whose answers drift from
    # day to day, and 200 with per-example logit drift: the pass-rate gates' alarms
    # stay within what 5% allows (P(Bin(200, 0.05) > 18) < 0.002).
    bench = _bench()
    for scenario in ("temperature 0", "logit drift 1.0", "near 0 and 1"):
        alarms = {"1 trial": 0, "fixed 3": 0, "adaptive": 0}
        for run in range(200):
            world = bench._world(scenario, "none", 30, random.Random(f"small|{scenario}|{run}"))
            res = bench._pass_gates(world, run, False)
            for k in alarms:
                alarms[k] += res[k]
        assert all(v <= 18 for v in alarms.values()), (scenario, alarms)


# --- Holm ----------------------------------------------------------------------------


def test_holm_levels_are_the_step_down() -> None:
    levels = holm_levels([0.04, 0.01, 0.03, 0.5], 0.05)
    # sorted: 0.01 (0.05/4 = 0.0125: rejected), 0.03 (0.05/3: not): the rest stop.
    assert levels[1] == (pytest.approx(0.0125), pytest.approx(0.04))
    assert levels[2] == (pytest.approx(0.05 / 3), pytest.approx(0.09))
    assert levels[0] == (0.0, pytest.approx(0.09))
    assert levels[3][0] == 0.0 and levels[3][1] == pytest.approx(0.5)
    assert holm_levels([], 0.05) == []
    assert holm_levels([math.nan, 0.001], 0.05)[1][0] == pytest.approx(0.025)


def test_holm_passes_a_drop_one_gate_alone_would_fail() -> None:
    # One suite 6 pass → fail and none back: McNemar p = 1/64 = 0.0156, a failure
    # at 5%. The other suites did not change (p = 1). Under Holm the family of k
    # gates tests the smallest p-value at 0.05 / k: with 3 gates 0.0167 (still a
    # failure), with 4 gates 0.0125 (passes).
    def run(n_suites: int) -> list[bool]:
        base: list[Record] = []
        cur: list[Record] = []
        infos = []
        for s in range(n_suites):
            label = f"s{s}"
            info = {**INFO, "label": label, "system": label}
            infos.append(info)
            for i in range(20):
                drop = s == 0 and i < 6
                for rec, passed in ((base, 1), (cur, 0 if drop else 1)):
                    row = EvalRow(label, f"e{i}", {"pass": float(passed)}, 10, 10,
                                  {"score_field": "pass", "trial": 1}, dataset="qa")
                    rec.append(Record(label, "cli", (i, 1), "pass" if passed else "below", row))
        baseline = Baseline(Path("b.json"), "t", None, {}, [i["label"] for i in infos], {}, {}, infos, base)
        report = RunReport({}, infos, [], cur)
        out = []
        for familywise in ("none", "holm"):
            c = compare(baseline, report, {"pass_rate": Tolerance(0.0)}, familywise=familywise)
            out.append(bool(c.breaches))
            if familywise == "holm":
                assert any("Holm" in line for line in c.lines())
        return out

    assert run(1) == [True, True]
    assert run(3) == [True, True]
    assert run(4) == [True, False]


# --- through pytest: a deterministic System whose answers drift between days -------------

DRIFT_PY = '''
import hashlib, os

def _u(*parts):
    digest = hashlib.sha256("|".join(map(str, parts)).encode()).digest()
    return int.from_bytes(digest[:7], "big") / float(1 << 56)

class Drifting:
    """Temperature 0: the same answer to an example all day, right with probability
    p_i; on another day (CTXBENCH_DAY) another draw. No change on average."""
    name = "drifting"
    def process(self, example):
        i = int(example["id"].split("-")[1])
        p = 0.55 + 0.4 * _u("p", i)
        right = _u(os.environ["CTXBENCH_DAY"], i) < p and i >= int(os.environ.get("CTXBENCH_SPOIL", "0"))
        return {**example, "response": example["answer"] if right else "no idea"}

drifting = Drifting()
'''

QA = "\n".join(
    json.dumps({"id": f"q-{i}", "context": f"c{i}", "question": f"Question {i}?", "answer": f"answer {i}"})
    for i in range(40)
)


def _day_u(day: int, i: int) -> float:
    digest = hashlib.sha256(f"{day}|{i}".encode()).digest()
    return int.from_bytes(digest[:7], "big") / float(1 << 56)


# (baseline day, run day): before issue 33 the adaptive gate failed (12, 3) (the run
# 0.725 against 0.875; the stratified test p < 0.05), and (13, 4) (0.675 against
# 0.75) the same way, and it failed every one of days 1 to 6 against the baseline of
# day 12. One pair is run: (13, 4) took the same path (the same gate, test and
# System) to the same verdict. In-process runs: the System reads its day from the
# environment when called, and imports nothing a later run could miss.
@pytest.mark.parametrize(("base_day", "day"), [(12, 3)])
def test_a_deterministic_drifting_system_stays_green_on_unchanged_days(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, base_day: int, day: int
) -> None:
    pytester.makefile(".jsonl", qa=QA)
    pytester.makepyfile(ctxbench_drift_sys=DRIFT_PY)
    pytester.makeini("[pytest]\npythonpath = .\n")
    run = ["--ctxbench-dataset=qa.jsonl", "--ctxbench-system=ctxbench_drift_sys:drifting", "-p", "no:cacheprovider"]
    monkeypatch.setenv("CTXBENCH_DAY", str(base_day))
    saved = pytester.runpytest(*run, "--ctxbench-repeat=4", "--ctxbench-save-baseline=base.json")
    assert saved.ret == 0, saved.stdout.str()
    monkeypatch.setenv("CTXBENCH_DAY", str(day))
    gate = ["--ctxbench-baseline=base.json", "--ctxbench-max-drop=pass_rate:0"]
    adaptive = pytester.runpytest(*run, *gate, "--ctxbench-trials=adaptive", "--ctxbench-json=a.json")
    assert adaptive.ret == 0, adaptive.stdout.str()
    doc = read_json(pytester.path / "a.json")
    # Nothing bought: the baseline showed one answer per example per day.
    assert len(doc["rows"]) == 40 and not any(r["metadata"]["adaptive"]["reasked"] for r in doc["rows"])
    adaptive.stdout.fnmatch_lines(["*no example was asked again*"])
    (metric,) = [m for m in doc["baseline_comparison"]["metrics"] if m["metric"] == "pass_rate"]
    assert metric["test"] == "mcnemar-exact" and metric["passed"]
    # The answers did change, both ways: the gate saw flips and kept its head.
    suite = doc["baseline_comparison"]["suites"][0]
    assert suite["flipped_to_fail"] and suite["flipped_to_pass"]
    if base_day == 12:
        # One trial against the 4-trial baseline: paired with its first trial.
        single = pytester.runpytest(*run, *gate, "--ctxbench-json=s.json")
        assert single.ret == 0, single.stdout.str()
        single.stdout.fnmatch_lines(["*120 of the baseline's trials left out*"])


def test_the_p_value_shown_is_the_one_the_gate_used(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    pytester.makefile(".jsonl", qa=QA)
    pytester.makepyfile(ctxbench_drift_sys2=DRIFT_PY)
    pytester.makeini("[pytest]\npythonpath = .\n")
    run = ["--ctxbench-dataset=qa.jsonl", "--ctxbench-system=ctxbench_drift_sys2:drifting", "-p", "no:cacheprovider"]
    # The baseline's day, and the same day with the first 10 examples spoiled.
    monkeypatch.setenv("CTXBENCH_DAY", "0")
    assert pytester.runpytest(*run, "--ctxbench-save-baseline=base.json").ret == 0
    monkeypatch.setenv("CTXBENCH_SPOIL", "10")
    result = pytester.runpytest(*run, "--ctxbench-baseline=base.json", "--ctxbench-max-drop=pass_rate:0",
                                           "--ctxbench-json=r.json")
    text = result.stdout.str()
    doc = read_json(pytester.path / "r.json")
    (metric,) = [m for m in doc["baseline_comparison"]["metrics"] if m["metric"] == "pass_rate"]
    assert metric["p_value_sided"] == "one-sided (worse)"
    shown = f"one-sided p = {metric['p_value']:.3f}" if metric["p_value"] >= 0.001 else f"one-sided p = {metric['p_value']:.2g}"
    assert shown in text, text
    assert "intervals two-sided, gates one-sided" in text


@pytest.mark.parametrize(("args", "message"), [
    (["--ctxbench-familywise=bonferroni", "--ctxbench-baseline=b.json"],
     "--ctxbench-familywise must be 'none' or 'holm', given: 'bonferroni'"),
    (["--ctxbench-familywise=holm"], "--ctxbench-familywise needs --ctxbench-baseline=PATH"),
])
def test_a_bad_familywise_is_one_usage_error(pytester: pytest.Pytester, args: list[str], message: str) -> None:
    pytester.makefile(".jsonl", qa=QA)
    result = pytester.runpytest("--ctxbench-dataset=qa.jsonl", *args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert message in result.stderr.str(), result.stderr.str()
