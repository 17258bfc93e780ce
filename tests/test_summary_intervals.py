"""The summary's 95% intervals through pytest (issue 33): a run where every example
passes reports an interval, never the point [1, 1], in the JSON report and the
terminal; the coverage itself is measured by benchmarks/intervals.py."""

from __future__ import annotations

import json

import pytest

from helpers import read_json

ECHO = '''
class Echo:
    name = "echo"
    def process(self, example):
        return {**example, "response": example["answer"]}

echo = Echo()
'''


def test_twenty_of_twenty_is_not_a_point(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(intervalsapp=ECHO)
    pytester.makeini("[pytest]\npythonpath = .\n")
    pytester.makefile(".jsonl", qa="\n".join(
        json.dumps({"id": f"q{i}", "question": f"q{i}?", "answer": f"a{i}"}) for i in range(20)))
    result = pytester.runpytest("--ctxbench-dataset=qa.jsonl", "--ctxbench-system=intervalsapp:echo",
                                "--ctxbench-json=out.json")
    doc = read_json(pytester.path / "out.json")
    assert doc["summary"]["echo"]["pass_rate"] == 1.0
    lo, hi = doc["intervals"]["echo"]["pass_rate"]
    assert hi == 1.0 and 0.79 < lo < 0.84  # Wilson (continuity-corrected) for 20 of 20
    assert doc["intervals"]["echo"]["mean_score"] == [lo, hi]
    assert "1.0000 [0.80, 1.00]" in result.stdout.str()


SYSTEMS = '''
class Good:
    name = "reader"
    def process(self, example):
        return {**example, "response": example["answer"]}

class Worse:
    name = "reader"
    def process(self, example):
        i = int(example["id"][1:])
        # partial credit on some, wrong on a few: a mean score drop with ties
        text = example["answer"] if i % 5 else "x " + example["answer"] + " y z"
        return {**example, "response": "nope" if i % 11 == 0 else text}
'''


def test_the_seed_reaches_every_draw_of_the_comparison(pytester: pytest.Pytester) -> None:
    """--ctxbench-seed seeds the comparison's Monte Carlo and bootstrap draws (issue
    33): the same seed gives the same numbers bit for bit, another seed other draws."""
    pytester.makepyfile(seedsystems=SYSTEMS)
    pytester.makeini("[pytest]\npythonpath = .\n")
    pytester.makefile(".jsonl", qa="\n".join(
        json.dumps({"id": f"q{i}", "question": f"q{i}?", "answer": f"alpha beta {i}"}) for i in range(60)))
    base = ["--ctxbench-dataset=qa.jsonl", "-p", "no:randomly"]
    pytester.runpytest(*base, "--ctxbench-system=seedsystems:Good", "--ctxbench-save-baseline=b.json")

    def comparison(seed: int, out: str) -> list[dict]:
        pytester.runpytest(*base, "--ctxbench-system=seedsystems:Worse", "--ctxbench-baseline=b.json",
                           "--ctxbench-max-drop=mean_score:0.5", f"--ctxbench-seed={seed}",
                           f"--ctxbench-json={out}")
        metrics = read_json(pytester.path / out)["baseline_comparison"]["metrics"]
        return [{k: m[k] for k in ("metric", "p_value", "ci_low", "ci_high")} for m in metrics]

    once, again = comparison(1, "a.json"), comparison(1, "b2.json")
    assert once == again
    # Scores of a few distinct values have intervals on a lattice: another seed may
    # land on the same ends; some of four other seeds do not.
    mean = [m for m in once if m["metric"] == "mean_score"][0]
    others = []
    for seed in (2, 3, 4, 5):
        other = comparison(seed, f"c{seed}.json")
        m = [m for m in other if m["metric"] == "mean_score"][0]
        others.append((m["ci_low"], m["ci_high"], m["p_value"]))
    assert any(o != (mean["ci_low"], mean["ci_high"], mean["p_value"]) for o in others)
