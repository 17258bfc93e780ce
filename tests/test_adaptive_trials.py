"""Adaptive trials (--ctxbench-trials=adaptive, issue 27): the test's exactness and
error control at a small scale, the options, and real runs of the plugin on a
stochastic System over a seeded fake endpoint (the calls made, which examples were
asked again, the verdict; in-process and under -n 2).

The simulation at the issue's scale (500 runs per configuration) is
benchmarks/adaptive_trials.py.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import random
import threading
from typing import Any

import pytest
from helpers import read_json

from pytest_context_bench.adaptive import (
    Design,
    Example,
    _p_values,
    _groups,
    _stratum,
    adaptive_test,
    allocation,
    coin,
    in_pool,
)
from pytest_context_bench.errors import ConfigError
from pytest_context_bench.testing import FakeLLM, Reply

# --- the statistics --------------------------------------------------------------


def _labellings(r: int, k: int, t: int, pooled: bool) -> list[int]:
    """The run's passes under every labelling of ``k`` of ``r + k`` trials (``t``
    passes) as the run's; with ``pooled``, only those leaving the baseline a pass."""
    outcomes = [1] * t + [0] * (r + k - t)
    out = []
    for pick in itertools.combinations(range(r + k), k):
        run = sum(outcomes[i] for i in pick)
        if not pooled or t - run >= 1:
            out.append(run)
    return out


@pytest.mark.parametrize(("r", "k", "t", "pooled"), [
    (4, 1, 2, True), (4, 2, 1, True), (4, 2, 2, True), (8, 2, 3, False), (3, 3, 4, True), (12, 1, 12, True),
])
def test_a_stratum_is_the_uniform_labelling(r: int, k: int, t: int, pooled: bool) -> None:
    runs = _labellings(r, k, t, pooled)
    pmf = _stratum(r, k, t, pooled)
    assert pmf == pytest.approx([runs.count(c) / len(runs) for c in range(k + 1)], abs=1e-12)


def test_the_p_value_is_the_exact_weighted_tail() -> None:
    examples = [
        Example(1, (0,), (1, 1, 0, 1)),
        Example(0, (), (1, 1, 1, 0)),
        Example(0, (), (1, 1, 1, 1)),
        Example(1, (), (0, 1, 0, 0)),
        Example(0, (0,), (1, 0, 1, 1)),
        Example(1, (1,), (1, 1, 1, 1)),  # every trial passed: no information
        Example(0, (0,), (0, 0, 0, 0)),  # the baseline never passed: not in the pool
    ]
    groups, diffs, _ = _groups(examples)
    assert len(diffs) == 7
    # The exact null distribution of the weighted sum: every labelling of every
    # informative example, enumerated.
    strata = []
    for ex in examples[:5]:
        run = [ex.first, *ex.extra]
        r, k, t = len(ex.baseline), len(run), sum(run) + sum(ex.baseline)
        p = (t + 1) / (r + k + 2)
        strata.append((1 / (p * (1 - p)), _labellings(r, k, t, True), sum(run)))
    observed = sum(w * c for w, _, c in strata)
    totals = [sum(w * c for (w, _, _), c in zip(strata, combo))
              for combo in itertools.product(*(runs for _, runs, _ in strata))]
    exact_low = sum(x <= observed + 1e-9 for x in totals) / len(totals)
    exact_high = sum(x >= observed - 1e-9 for x in totals) / len(totals)
    low, high = _p_values(groups, seed=3, replicates=40000)
    # Monte Carlo error of 40,000 draws: about 0.0025 at p = 0.3 (4 standard errors).
    assert low == pytest.approx(exact_low, abs=0.01) and high == pytest.approx(exact_high, abs=0.01)
    assert 0.02 < exact_low < 0.98 and 0.02 < exact_high < 0.98  # both tails in play
    assert _p_values(groups, seed=3, replicates=999) == _p_values(groups, seed=3, replicates=999)


def _exact_size(ps: list[float], alpha: float, pooled: bool) -> float:
    """The exact chance, over every outcome of a tiny adaptive run of an unchanged
    System (baseline of 2 trials, budget 1.5, K = 2), that the exact conditional
    p-value of a drop is <= ``alpha``; the plan chooses from the baseline (the pool)
    as the plugin does, and the test conditions on it (``pooled``, as the plugin)."""
    n, r = len(ps), 2
    design = Design(2, 1.5, r)
    per_example = [list(itertools.product((0, 1), repeat=r + 2)) for _ in ps]
    size = 0.0
    for combo in itertools.product(*per_example):
        bases = [o[:r] for o in combo]
        pool = [i for i in range(n) if in_pool(bases[i])]
        extra, chosen = allocation(design, n, len(pool))
        again = set(pool[:chosen])  # the coin's order: any order fixed by the baseline
        ks = [1 + (extra if i in again else 0) for i in range(n)]
        if any(any(o[r + k:]) for o, k in zip(combo, ks)):
            continue  # a trial not asked: count each outcome once
        prob, strata, observed = 1.0, [], 0.0
        for i, o in enumerate(combo):
            k = ks[i]
            outcomes = o[: r + k]
            for x in outcomes:
                prob *= ps[i] if x else 1 - ps[i]
            run, base = outcomes[r:], outcomes[:r]
            t = sum(outcomes)
            if pooled and not in_pool(base):
                continue
            pmf = _stratum(r, k, t, pooled and in_pool(base))
            q = (t + 1) / (r + k + 2)
            w = 1 / (q * (1 - q))
            strata.append([(w * c, pc) for c, pc in enumerate(pmf) if pc > 0])
            observed += w * sum(run)
        tail = sum(
            math.prod(pc for _, pc in pick)
            for pick in itertools.product(*strata)
            if sum(v for v, _ in pick) <= observed + 1e-9
        )
        if tail <= alpha:
            size += prob
    return size


def test_the_test_is_exact_under_the_plans_choice() -> None:
    # Every outcome of a tiny run enumerated (its probability under an unchanged
    # System, the plan's choice from the baseline, the exact conditional p-value):
    # the false-alarm rate is at most alpha at every level.
    worst = 0.0
    for ps in ([0.3, 0.5, 0.8], [0.2, 0.2, 0.9], [0.6, 0.6, 0.6]):
        for alpha in (0.05, 0.1, 0.2, 0.3):
            size = _exact_size(ps, alpha, pooled=True)
            assert size <= alpha + 1e-12, (ps, alpha, size)
            worst = max(worst, size / alpha)
    assert worst > 0.4  # not a test that never rejects


def test_the_budget_is_never_overspent() -> None:
    assert allocation(Design(4, 1.5, 12), 400, 400) == (1, 200)
    assert allocation(Design(4, 1.5, 12), 400, 100) == (2, 100)
    assert allocation(Design(4, 1.5, 12), 400, 50) == (3, 50)  # K caps it: fewer calls
    assert allocation(Design(4, 3.0, 12), 400, 400) == (2, 400)
    assert allocation(Design(2, 1.5, 12), 400, 0) == (0, 0)
    for k, budget, n, pool in itertools.product((2, 3, 4, 8), (1.01, 1.5, 2.0, 2.7, 4.0), (1, 7, 24, 400), range(0, 401, 37)):
        if budget > k or pool > n:
            continue
        extra, chosen = allocation(Design(k, budget, k), n, pool)
        assert 0 <= chosen <= pool and extra <= k - 1
        assert n + extra * chosen <= budget * n + 1e-9


def test_design_pool_coin_and_refusals() -> None:
    with pytest.raises(ConfigError, match="at least 4 trials per example.*--ctxbench-repeat=4 or more; 16 recommended"):
        Design(4, 1.5, 1)
    with pytest.raises(ConfigError, match="budget > 1"):
        Design(4, 1.0, 4)
    assert in_pool([0, None, 1]) and not in_pool([0, 0, None]) and not in_pool([])
    # The coin is the example's, whatever the process: a fixed value.
    assert coin(0, "s", "qa", "q-1") == coin(0, "s", "qa", "q-1") != coin(1, "s", "qa", "q-1")


def _simulate(seed: int, drop: float, n: int = 200, k: int = 4, r: int = 8) -> tuple[bool, float]:
    """One run of an adaptive comparison: p ~ Beta(2, 1.2) per example, a baseline
    of ``r`` trials, the run's trials drawn with ``p - drop``. (failed?, calls/example)"""
    rng = random.Random(seed)
    design = Design(k, 1.5, r)
    ps = [rng.betavariate(2, 1.2) for _ in range(n)]
    base = [[int(rng.random() < p) for _ in range(r)] for p in ps]
    pool = sorted((coin(seed, "s", "d", str(i)), i) for i, b in enumerate(base) if in_pool(b))
    extra, chosen = allocation(design, n, len(pool))
    again = {i for _, i in pool[:chosen]}
    examples, calls = [], 0
    for i, (p, b) in enumerate(zip(ps, base)):
        q = max(p - drop, 0.0)
        more = extra if i in again else 0
        trials = [int(rng.random() < q) for _ in range(1 + more)]
        calls += len(trials)
        examples.append(Example(trials[0], tuple(trials[1:]), tuple(b)))
    result = adaptive_test(examples, seed=seed, replicates=499)
    return result.p_lower <= 0.05, calls / n


def test_false_alarms_and_power_at_a_small_scale() -> None:
    # Seeded: 60 unchanged runs, 20 runs 10 points worse (200 examples each).
    alarms = [_simulate(s, 0.0) for s in range(60)]
    assert sum(a for a, _ in alarms) <= 5  # 5% of 60 is 3; P(Bin(60, .05) > 5) < 0.1
    assert all(c <= 1.5 for _, c in alarms)
    caught = [_simulate(1000 + s, 0.10)[0] for s in range(20)]
    assert sum(caught) >= 18


def test_adaptive_test_reads_a_drop_and_no_change() -> None:
    same = [Example(1, (), (1, 1, 1, 1))] * 50 + [Example(0, (), (0, 0, 0, 0))] * 50
    r = adaptive_test(same)
    assert r.p_lower == 1.0 and r.diff == 0.0 and r.n == 100
    worse = [Example(0, (0,), (1, 1, 1, 1))] * 30 + [Example(1, (), (1, 1, 1, 1))] * 70
    r = adaptive_test(worse)
    assert r.p_lower == pytest.approx(1 / 2000) and r.diff == pytest.approx(-0.3)
    assert r.p_higher == pytest.approx(1.0)
    # The interval is the test's: its upper end is below 0 exactly as the test rejects.
    assert r.ci_high < 0
    from pytest_context_bench.stats import drop_verdict

    assert drop_verdict(r, 0.0).failed and not drop_verdict(r, 0.3).failed
    # Unscored trials are left out: a first trial or a whole baseline unscored drops
    # the example; an unscored later trial or baseline trial only that trial.
    holes = [Example(None, (0,), (1, 1)), Example(1, (), (None, None)), Example(0, (None,), (1, None, 1))]
    r = adaptive_test(worse + holes)
    assert r.n == 101 and r.diff == pytest.approx((-30 - 1) / 101)


# --- the options -----------------------------------------------------------------

QA = "\n".join(
    json.dumps({"id": f"q-{i}", "context": f"c{i}", "question": f"Question {i}?", "answer": f"answer {i}"})
    for i in range(24)
)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--ctxbench-trials=twice"], "--ctxbench-trials must be 'adaptive', given: 'twice'"),
        (["--ctxbench-max-trials=3"], "--ctxbench-max-trials needs --ctxbench-trials=adaptive"),
        (["--ctxbench-trials=adaptive"], "--ctxbench-trials=adaptive needs --ctxbench-baseline=PATH"),
        (
            ["--ctxbench-trials=adaptive", "--ctxbench-repeat=3"],
            "--ctxbench-trials=adaptive and --ctxbench-repeat=3 exclude each other",
        ),
        (
            ["--ctxbench-trials=adaptive", "--ctxbench-max-trials=1", "--ctxbench-baseline=b.json"],
            "--ctxbench-max-trials must be an integer in [2, 1000]",
        ),
        (
            ["--ctxbench-trials=adaptive", "--ctxbench-trial-budget=1", "--ctxbench-baseline=b.json"],
            "--ctxbench-trial-budget must be a number in (1, 4]",
        ),
        (
            ["--ctxbench-trials=adaptive", "--ctxbench-baseline=b.json", "--ctxbench-save-baseline=c.json"],
            "--ctxbench-trials=adaptive runs are compared with a baseline, not saved",
        ),
    ],
)
def test_bad_options_are_one_usage_error(pytester: pytest.Pytester, args: list[str], message: str) -> None:
    pytester.makefile(".jsonl", qa=QA)
    result = pytester.runpytest("--ctxbench-dataset=qa.jsonl", *args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert message in result.stderr.str(), result.stderr.str()


# --- real runs -------------------------------------------------------------------

#: A stochastic System: asks the endpoint (stdlib HTTP, so the run stays in-process).
STOCHASTIC_PY = '''
import json, os, urllib.request

class Sampler:
    name = "sampler"
    def process(self, example):
        body = json.dumps({"model": "m", "messages": [{"role": "user", "content": example["question"]}]})
        request = urllib.request.Request(os.environ["ADAPTIVE_URL"] + "/v1/chat/completions",
                                         data=body.encode(), headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=30) as response:
            text = json.loads(response.read())["choices"][0]["message"]["content"]
        return {**example, "response": text}

sampler = Sampler()
'''


class Sampling(FakeLLM):
    """Question i is answered right with probability p_i (p_i from the question's
    hash), each answer drawn from a seeded stream of its own: the n-th time a
    question is asked gives the same answer in every mode (the trials of one example
    are asked one after another, in one item). ``drop`` lowers every p_i."""

    def __init__(self) -> None:
        self.drop = 0.0
        self.seed = 0
        self._asked: dict[str, int] = {}
        self._lock2 = threading.Lock()
        super().__init__(handler=self._answer)

    def reset(self, *, seed: int, drop: float = 0.0) -> None:
        with self._lock2:
            self.seed, self.drop = seed, drop
            self._asked.clear()
            self.requests.clear()

    @staticmethod
    def _u(*parts: Any) -> float:
        digest = hashlib.sha256("|".join(map(str, parts)).encode()).digest()
        return int.from_bytes(digest[:7], "big") / float(1 << 56)

    def _answer(self, request: Any) -> Reply:
        question = str(request.messages[-1]["content"])
        i = int(question.split()[1].rstrip("?"))
        with self._lock2:
            n = self._asked[question] = self._asked.get(question, 0) + 1
        p = 0.25 + 0.7 * self._u("p", i)
        right = self._u(self.seed, question, n) < p - self.drop
        return Reply(text=f"answer {i}" if right else "no idea")


@pytest.fixture
def sampling(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> Any:
    pytester.makefile(".jsonl", qa=QA)
    pytester.makepyfile(stochastic=STOCHASTIC_PY)
    pytester.makeini("[pytest]\npythonpath = .\n")
    with Sampling() as server:
        monkeypatch.setenv("ADAPTIVE_URL", server.base_url)
        yield server


RUN = ["--ctxbench-dataset=qa.jsonl", "--ctxbench-system=stochastic:sampler", "-p", "no:cacheprovider"]
ADAPTIVE = [*RUN, "--ctxbench-baseline=base.json", "--ctxbench-trials=adaptive", "--ctxbench-max-trials=2",
            "--ctxbench-max-drop=pass_rate:0"]


def _per_example(doc: dict[str, Any]) -> dict[str, list[tuple[int, str]]]:
    out: dict[str, list[tuple[int, str]]] = {}
    for r in doc["rows"]:
        out.setdefault(r["example_id"], []).append((r["metadata"]["trial"], r["status"]))
    return {k: sorted(v) for k, v in out.items()}


def test_adaptive_run_asks_again_what_the_plan_says_and_gates(
    pytester: pytest.Pytester, sampling: Sampling
) -> None:
    from pytest_context_bench.baseline import load_baseline
    from pytest_context_bench.plugin.trials import AdaptivePlan

    sampling.reset(seed=1)
    saved = pytester.runpytest(*RUN, "--ctxbench-repeat=4", "--ctxbench-save-baseline=base.json")
    assert saved.ret == 0, saved.stdout.str()
    assert len(sampling.requests) == 96
    # A baseline with fewer trials than asked for: one line, before any call.
    refused = pytester.runpytest(*RUN, "--ctxbench-baseline=base.json", "--ctxbench-trials=adaptive",
                                 "--ctxbench-max-trials=5")
    assert refused.ret == pytest.ExitCode.USAGE_ERROR
    assert (
        "need a baseline with at least 5 trials per example (saved with --ctxbench-repeat=5 or more;"
        " 16 recommended); it has 4" in refused.stderr.str()
    ), refused.stderr.str()
    assert len(sampling.requests) == 96

    # An unchanged System: one call per example, one more for the chosen ones.
    sampling.reset(seed=2)
    same = pytester.runpytest(*ADAPTIVE, "--ctxbench-json=same.json")
    assert same.ret == 0, same.stdout.str()
    doc = read_json(pytester.path / "same.json")
    rows = _per_example(doc)
    assert len(sampling.requests) == len(doc["rows"])  # every trial is one call, one row
    plan = AdaptivePlan(load_baseline(pytester.path / "base.json"), 2, 1.5, 0)
    chosen = {e for e in rows if plan.more_trials("sampler", "qa", e)}
    assert len(chosen) == 12  # half the examples: the budget exactly
    assert {e for e, t in rows.items() if len(t) == 2} == chosen
    assert all([n for n, _ in t] == ([1, 2] if e in chosen else [1]) for e, t in rows.items())
    assert len(doc["rows"]) == 24 + 12
    again = [r for r in doc["rows"] if r["metadata"]["adaptive"]["reasked"]]
    assert {r["example_id"] for r in again} == chosen
    assert all(r["metadata"]["adaptive"]["trials"] == 2 for r in again)
    (metric,) = [m for m in doc["baseline_comparison"]["metrics"] if m["metric"] == "pass_rate"]
    assert metric["test"] == "adaptive-stratified" and metric["passed"]
    same.stdout.fnmatch_lines(["*pass_rate: now*gate max-drop 0: passed*"])

    # Under -n 2: the same examples are asked again, the same rows and verdict.
    sampling.reset(seed=2)
    xdist = pytester.runpytest(*ADAPTIVE, "-n", "2", "--ctxbench-json=xdist.json")
    assert xdist.ret == 0, xdist.stdout.str()
    xdoc = read_json(pytester.path / "xdist.json")
    assert _per_example(xdoc) == rows
    assert xdoc["baseline_comparison"]["metrics"] == doc["baseline_comparison"]["metrics"]

    # A System 40 points worse fails the gate.
    sampling.reset(seed=3, drop=0.4)
    worse = pytester.runpytest(*ADAPTIVE, "--ctxbench-json=worse.json")
    assert worse.ret == 1, worse.stdout.str()
    wdoc = read_json(pytester.path / "worse.json")
    assert len(sampling.requests) == len(wdoc["rows"]) == 24 + 12  # the same examples
    (metric,) = [m for m in wdoc["baseline_comparison"]["metrics"] if m["metric"] == "pass_rate"]
    assert not metric["passed"] and metric["change"] < -0.2
    worse.stdout.fnmatch_lines(
        ["*pass_rate: now*significantly worse (stratified exact test (adaptive trials)*",
         "*FAILED ctxbench::max_drop*sampler:pass_rate*"]
    )


def test_the_ini_twins(pytester: pytest.Pytester) -> None:
    pytester.makefile(".jsonl", qa=QA)
    pytester.makeini("[pytest]\nctxbench_trials = sometimes\n")
    result = pytester.runpytest("--ctxbench-dataset=qa.jsonl")
    assert "ini option 'ctxbench_trials' must be 'adaptive', given: 'sometimes'" in result.stderr.str()
    pytester.makeini("[pytest]\nctxbench_trials = adaptive\nctxbench_trial_budget = 9\n")
    result = pytester.runpytest("--ctxbench-dataset=qa.jsonl", "--ctxbench-baseline=b.json")
    assert "ini option 'ctxbench_trial_budget' must be a number in (1, 4]" in result.stderr.str()
