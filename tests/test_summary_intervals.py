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
