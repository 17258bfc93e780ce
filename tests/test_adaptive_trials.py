"""Adaptive trials (--ctxbench-trials=adaptive, issues 27 and 33): the plan, the
options, and real runs of the plugin on a stochastic System over a seeded fake
endpoint (the calls made, which examples were asked again, the verdict; in-process
and under -n 2).

The comparison's false-alarm rate and power, at scale, are
benchmarks/gate_validity.py; tests/test_gate_validity.py checks its fast path
against the plugin's compare and runs a deterministic System through pytest.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import threading
from typing import Any

import pytest
from helpers import read_json

from pytest_context_bench.adaptive import Design, allocation, any_varies, coin, varies
from pytest_context_bench.errors import ConfigError
from pytest_context_bench.testing import FakeLLM, Reply

# --- the plan --------------------------------------------------------------------


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


def test_design_coin_determinism_and_refusals() -> None:
    with pytest.raises(ConfigError, match=r"at least 4 trials per example.*--ctxbench-repeat=4 or more\); it has 1"):
        Design(4, 1.5, 1)
    with pytest.raises(ConfigError, match="budget > 1"):
        Design(4, 1.0, 4)
    # An example's trials vary when an outcome or a score differs; unscored trials
    # say nothing.
    assert varies([(1, 0.8), (1, 0.9)]) and varies([1, 0, None]) and not varies([1, None, 1])
    assert not varies([]) and not any_varies([[1, 1], [0, 0], [None]]) and any_varies([[1, 1], [0, 1]])
    # The coin is the example's, whatever the process: a fixed value.
    assert coin(0, "s", "qa", "q-1") == coin(0, "s", "qa", "q-1") != coin(1, "s", "qa", "q-1")


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
        "need a baseline with at least 5 trials per example (saved with --ctxbench-repeat=5 or more);"
        " it has 4" in refused.stderr.str()
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
    # Each example paired on as many trials of each side: the sign-flip test.
    assert metric["test"] == "paired-bootstrap" and metric["passed"]
    assert doc["baseline_comparison"]["suites"][0]["trials_left_out"] == {"baseline": 24 * 4 - 36}
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
        ["*pass_rate: now*significantly worse (sign-flip test*",
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
