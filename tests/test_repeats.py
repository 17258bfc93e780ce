"""Repeated trials: the pass@k / pass^k estimators, folding, and --ctxbench-repeat
through pytest (in-process and under -n 2, where trials of one example land on
different workers)."""

from __future__ import annotations

import itertools
import json
import math

import pytest

from helpers import read_json, strip_timings

from pytest_context_bench.repeats import fold_trials, pass_at_k, pass_hat_k, repeat_summary
from pytest_context_bench.results import EvalRow


def _brute(n: int, c: int, k: int, every: bool) -> float:
    """The estimators by enumeration: over all k-subsets of n trials (c pass)."""
    outcomes = [1] * c + [0] * (n - c)
    subsets = list(itertools.combinations(outcomes, k))
    hits = [all(s) if every else any(s) for s in subsets]
    return sum(hits) / len(subsets)


@pytest.mark.parametrize("n", [1, 2, 3, 5, 8])
def test_estimators_match_enumeration(n: int) -> None:
    for c in range(n + 1):
        for k in range(1, n + 1):
            assert math.isclose(pass_at_k(n, c, k), _brute(n, c, k, every=False))
            assert math.isclose(pass_hat_k(n, c, k), _brute(n, c, k, every=True))


def test_estimator_values_and_errors() -> None:
    assert pass_at_k(10, 3, 1) == pytest.approx(0.3)
    assert pass_at_k(10, 0, 5) == 0.0 and pass_at_k(10, 6, 5) == 1.0
    assert pass_hat_k(5, 2, 2) == pytest.approx(0.1)
    for bad in [(3, 4, 1), (3, 1, 0), (3, 1, 4), (0, 0, 1)]:
        with pytest.raises(ValueError):
            pass_at_k(*bad)


def _row(trial: int, f1: float | None, error: bool = False, tokens: int = 10) -> EvalRow:
    return EvalRow(
        system="s", example_id="e1", dataset="qa",
        scores={} if f1 is None or error else {"f1": f1, "exact_match": float(f1 == 1.0)},
        input_tokens=tokens, output_tokens=tokens, latency=0.1 * trial,
        metadata={"trial": trial, "score_field": "f1"},
        error={"type": "RuntimeError", "message": "boom", "where": "system"} if error else None,
    )


def test_fold_means_scores_and_counts_errors_as_zero() -> None:
    folded = fold_trials([_row(1, 1.0), _row(2, 0.5), _row(3, None, error=True, tokens=40)],
                         "f1", 0.7)
    assert folded.scores["f1"] == pytest.approx(0.5)
    assert folded.scores["exact_match"] == pytest.approx(1 / 3)
    assert folded.error is None and folded.input_tokens == 20
    assert folded.latency == pytest.approx(0.2)
    trials = folded.metadata["trials"]
    assert trials == {"n": 3, "passed": 1, "errors": 1, "scores": [1.0, 0.5, 0.0], "flaky": True}
    assert "trial" not in folded.metadata
    every_error = fold_trials([_row(1, None, error=True), _row(2, None, error=True)], "f1", 0.7)
    assert every_error.error is not None and every_error.scores == {}
    assert not fold_trials([_row(1, 1.0), _row(2, 0.9)], "f1", 0.7).metadata["trials"]["flaky"]


def test_repeat_summary() -> None:
    def ex(i: str, passes: list[bool]) -> EvalRow:
        rows = [EvalRow("s", i, {"f1": 1.0 if p else 0.0}, 1, 1, {"trial": t + 1},
                        dataset="qa") for t, p in enumerate(passes)]
        return fold_trials(rows, "f1", 0.7)

    summary = repeat_summary([ex("a", [True] * 4), ex("b", [True, False, False, False]),
                              ex("c", [False] * 4)])
    assert summary["k"] == 4 and summary["examples"] == 3
    assert summary["pass_at_1"] == pytest.approx((1 + 0.25 + 0) / 3)
    assert summary["pass_at_k"] == pytest.approx(2 / 3)
    assert summary["pass_hat_k"] == pytest.approx(1 / 3)
    assert summary["flaky"] == ["qa/b"] and summary["flaky_rate"] == pytest.approx(1 / 3)


# A System whose k-th call on an example (counted across processes with O_EXCL files,
# so that -n 2 sees the same sequence) is right on even ids always, and on odd ids
# only on the first call: each odd example passes exactly 1 of its K trials.
FLAKY = '''
import os

class Flaky:
    name = "flaky"
    def process(self, example):
        folder = os.path.join(os.environ["CALLS_DIR"], example["id"])
        os.makedirs(folder, exist_ok=True)
        n = 0
        while True:
            try:
                os.close(os.open(os.path.join(folder, str(n)), os.O_CREAT | os.O_EXCL))
                break
            except FileExistsError:
                n += 1
        k = int(example["id"].split("-")[1])
        right = k % 2 == 0 or n == 0
        return {**example, "response": example["answer"] if right else "no idea"}

flaky = Flaky()
'''


@pytest.fixture
def flaky_project(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    lines = [json.dumps({"id": f"q-{i}", "context": f"c{i}", "question": f"q{i}?",
                         "answer": f"answer {i}"}) for i in range(6)]
    pytester.makefile(".jsonl", qa="\n".join(lines))
    pytester.makepyfile(flakysys=FLAKY)
    pytester.makeini("[pytest]\npythonpath = .\n")
    return pytester


# In-process: under -n 2 the same rows, summary and repeated-trial statistics are
# test_repeat_is_identical_in_process_and_under_xdist's (and test_equivalence.py's
# repeat-3-xdist-2 mode's).
@pytest.mark.parametrize("mode", [[]], ids=["inprocess"])
def test_repeat_reports_pass_at_k_and_flaky(
    flaky_project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, mode: list[str]
) -> None:
    monkeypatch.setenv("CALLS_DIR", str(flaky_project.path / "calls"))
    result = flaky_project.runpytest(
        "--ctxbench-dataset=qa.jsonl", "--ctxbench-system=flakysys:flaky",
        "--ctxbench-repeat=3", "--ctxbench-json=out.json", "-v", *mode,
    )
    assert result.ret == 0, result.stdout.str()
    result.assert_outcomes(passed=12)
    assert result.parseoutcomes()["below"] == 6
    out = result.stdout.str()
    assert "ctxbench::example[flaky/qa/q-1@3]" in out
    result.stdout.fnmatch_lines([
        "repeated trials:",
        "suite*k*examples*pass@1*pass@k*pass^k*flaky*",
        "flaky*3*6*0.6667*1.0000*0.5000*3*",
        "flaky (flaky): qa/q-1, qa/q-3, qa/q-5",
    ])
    doc = read_json(flaky_project.path / "out.json")
    assert len(doc["rows"]) == 18
    assert sorted({r["metadata"]["trial"] for r in doc["rows"]}) == [1, 2, 3]
    # The metrics are means over trials: the pass rate is pass@1.
    assert doc["summary"]["flaky"]["pass_rate"] == pytest.approx(12 / 18)
    rep = doc["repeats"]["flaky"]
    assert rep["k"] == 3 and rep["flaky"] == ["qa/q-1", "qa/q-3", "qa/q-5"]
    assert rep["pass_at_k"] == 1.0 and rep["pass_hat_k"] == pytest.approx(0.5)
    # Intervals are over the 6 examples (pass shares 1, 1/3, ...), not 18 trials.
    low, high = doc["intervals"]["flaky"]["pass_rate"]
    from pytest_context_bench.stats import summary_interval

    shares = [1.0, 1 / 3] * 3
    assert (low, high) == pytest.approx(summary_interval(shares))
    assert low < 12 / 18 < high <= 1.0
    # wider than the (wrong) interval over 18 independent trials would be
    trials = summary_interval([1.0] * 12 + [0.0] * 6)
    assert high - low > trials[1] - trials[0]


def test_repeat_is_identical_in_process_and_under_xdist(
    flaky_project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    docs = []
    for i, mode in enumerate(([], ["-n", "2"])):
        monkeypatch.setenv("CALLS_DIR", str(flaky_project.path / f"calls{i}"))
        flaky_project.runpytest("--ctxbench-dataset=qa.jsonl", "--ctxbench-system=flakysys:flaky",
                                "--ctxbench-repeat=2", f"--ctxbench-json=o{i}.json", *mode)
        docs.append(strip_timings(read_json(flaky_project.path / f"o{i}.json")))
    # Which trial of an odd example is its first call depends on scheduling under
    # xdist; the rows per example, without their trial number, do not.
    def per_example(doc: dict) -> list[str]:
        return sorted(
            json.dumps({**{k: v for k, v in r.items() if k != "order"},  # order holds the trial
                        "metadata": {k: v for k, v in r["metadata"].items() if k != "trial"}},
                       sort_keys=True)
            for r in doc["rows"]
        )

    assert per_example(docs[0]) == per_example(docs[1])
    assert docs[0]["summary"] == docs[1]["summary"]
    assert docs[0]["repeats"] == docs[1]["repeats"]


def test_repeat_marker_and_bad_values(
    flaky_project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CALLS_DIR", str(flaky_project.path / "calls"))
    flaky_project.makepyfile(test_bench="""
        import pytest, flakysys

        @pytest.mark.ctxbench(dataset="qa.jsonl", repeat=2, limit=2)
        def test_qa(ctxbench_example, ctxbench_record):
            ctxbench_record(flakysys.flaky.process(ctxbench_example))
    """)
    result = flaky_project.runpytest("-v")
    assert result.ret == 0
    result.assert_outcomes(passed=3)
    result.stdout.fnmatch_lines(["*test_qa?qa/q-1@2? BELOW*", "repeated trials:"])
    bad = flaky_project.runpytest("--ctxbench-dataset=qa.jsonl", "--ctxbench-system=flakysys:flaky",
                                  "--ctxbench-repeat=0")
    assert bad.ret == 4
    bad.stderr.fnmatch_lines(["*--ctxbench-repeat must be an integer in [[]1, 1000]*given: '0'*"])
