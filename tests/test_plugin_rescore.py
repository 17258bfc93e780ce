"""The baseline gate across an evaluator change (issue 37): the baseline's kept
answers are scored again by the run's evaluators, where the examples run, and the
run is compared like with like; a baseline without answers cannot be, and says
how to fix it."""

from __future__ import annotations

import json

import pytest
from helpers import qa_lines

SYSTEMS = """
class Good:
    name = "sys"
    def process(self, example):
        return {**example, "response": example["answer"]}

class Dotted:
    \"\"\"The same answers, each with a full stop: F1 cannot tell, an exact check can.\"\"\"
    name = "sys"
    def process(self, example):
        return {**example, "response": example["answer"] + "."}

good, dotted = Good(), Dotted()
"""

STRICT = """
class Strict:
    \"\"\"The answer, exactly and alone.\"\"\"
    name = "strict"
    def score(self, original, processed):
        return {"strict": float(processed.get("response") == original["answer"])}

strict = Strict()
"""

MARKED = """
import os

import pytest

from bsys import dotted, good
from strict import strict

STRICT = bool(os.environ.get("CTX_STRICT"))
KW = {"evaluators": [__import__("pytest_context_bench.evaluators", fromlist=["x"]).AnswerQuality(), strict],
      "score_field": "strict"} if STRICT else {}


@pytest.mark.ctxbench(dataset="qa.jsonl", **KW)
def test_marked(ctxbench_example, ctxbench_record):
    system = dotted if os.environ.get("CTX_DOTTED") else good
    ctxbench_record(system.process(dict(ctxbench_example)), system="marked")
"""


@pytest.fixture
def bench(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makefile(".jsonl", qa=qa_lines(20))
    pytester.makepyfile(bsys=SYSTEMS, strict=STRICT, test_marked=MARKED)
    pytester.makeini("[pytest]\npythonpath = .\n")
    return pytester


MARKED_SUITE = "test_marked.py::test_marked[marked]"


def _section(result: pytest.RunResult) -> str:
    return result.stdout.str().split("baseline comparison:")[1].split("baseline gates:")[0]


def test_a_baseline_scored_by_other_evaluators_is_scored_again(
    bench: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    saved = bench.runpytest("--ctxbench-dataset=qa.jsonl", "--ctxbench-system=bsys:good", "--ctxbench-save-baseline=base.json")
    assert saved.ret == 0, saved.stdout.str()
    base = json.loads((bench.path / "base.json").read_text())
    assert {s["label"]: sorted(e["name"] for evs in s["evaluators"].values() for e in evs) for s in base["suites"]} == {
        "sys": ["answer_quality"], MARKED_SUITE: ["answer_quality"],
    }
    # The System now ends each answer with a full stop, and the team judges by an
    # exact check: the baseline's answers, scored again by it, all pass; the new
    # ones all fail. Without scoring the baseline again the comparison would set
    # F1 then against the exact check now.
    monkeypatch.setenv("CTX_STRICT", "1")
    monkeypatch.setenv("CTX_DOTTED", "1")
    args = [
        "--ctxbench-dataset=qa.jsonl", "--ctxbench-system=bsys:dotted", "--ctxbench-evaluator=strict:strict",
        "--ctxbench-score-field=strict", "--ctxbench-baseline=base.json", "--ctxbench-max-drop=pass_rate:0.1",
    ]
    outputs = ["--ctxbench-json=run.json", "--ctxbench-markdown=run.md", "--ctxbench-html=run.html"]
    serial = bench.runpytest(*args, *outputs)
    parallel = bench.runpytest(*args, "-n", "2")
    for result in (serial, parallel):
        assert result.ret == 1, result.stdout.str()
        result.stdout.fnmatch_lines([
            "sys: 20 examples matched",
            "  baseline re-scored with: answer_quality, strict (qa: answer_quality then,*",
            "*pass_rate: now 0, then 1, change -1 *FAILED*",
            f"{MARKED_SUITE}: 20 examples matched",
            "  baseline re-scored with: answer_quality, strict (qa: answer_quality then,*",
        ])
    assert _section(serial) == _section(parallel)
    doc = json.loads((bench.path / "run.json").read_text())
    suites = {s["suite"]: s for s in doc["baseline_comparison"]["suites"]}
    assert suites["sys"]["rescored_with"] == ["answer_quality", "strict"]
    assert suites["sys"]["notes"][0].startswith("baseline re-scored with: answer_quality, strict")
    assert "20 baseline row(s) scored again from their kept answers, no System call" in suites["sys"]["notes"][0]
    then = {m["suite"]: m["then"] for m in doc["baseline_comparison"]["metrics"] if m["metric"] == "pass_rate"}
    assert then == {"sys": 1.0, MARKED_SUITE: 1.0}  # the baseline's answers, exactly right
    assert "- **sys**: baseline re-scored with: answer\\_quality, strict" in (bench.path / "run.md").read_text()
    assert "baseline re-scored with: answer_quality, strict" in (bench.path / "run.html").read_text()

    # A baseline that kept no answers cannot be scored again: the command line's
    # suite says so before any example runs (exit 4), a marked test's at the end.
    monkeypatch.delenv("CTX_STRICT")
    monkeypatch.delenv("CTX_DOTTED")
    off = bench.runpytest("--ctxbench-dataset=qa.jsonl", "--ctxbench-system=bsys:good",
                          "--ctxbench-save-baseline=off.json", "--ctxbench-baseline-responses=off")
    assert off.ret == 0
    early = bench.runpytest(*[a.replace("base.json", "off.json") for a in args])
    assert early.ret == pytest.ExitCode.USAGE_ERROR
    early.stderr.fnmatch_lines([
        "ERROR: --ctxbench-baseline: baseline *off.json: suite 'sys' was scored by other evaluators or another"
        " score field (qa: answer_quality then, answer_quality, strict now; score field each example's own then,"
        " strict now) and keeps no answers to score again (saved with --ctxbench-baseline-responses=off, or by an"
        " older pytest-context-bench); save the baseline again with this run's evaluators (--ctxbench-save-baseline,"
        " answers kept), or run with the baseline's evaluators and score field",
    ])
    monkeypatch.setenv("CTX_STRICT", "1")
    late = bench.runpytest("--ctxbench-dataset=qa.jsonl", "--ctxbench-system=bsys:good",
                           "--ctxbench-baseline=off.json", "--ctxbench-max-drop=pass_rate:0.1")
    assert late.ret == 1, late.stdout.str()
    text = " ".join(late.stdout.str().split())
    assert (
        f"baseline not compared: baseline {bench.path / 'off.json'}: suite '{MARKED_SUITE}' was scored by"
        " other evaluators or another score field (qa: answer_quality then, answer_quality, strict now;"
        " score field each example's own then, strict now) and keeps no answers to score again"
    ) in text
