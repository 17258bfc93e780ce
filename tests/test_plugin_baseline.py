"""Baselines under pytest: save, compare example by example, gate on significant drops."""

from __future__ import annotations

import json

import pytest
from helpers import qa_lines

SYSTEMS = """
class Good:
    name = "sys"
    def process(self, example):
        return {**example, "response": example["answer"]}

class Worse:
    \"\"\"The same system, wrong on every 4th example: a 25-point drop.\"\"\"
    name = "sys"
    def process(self, example):
        n = int(example["id"].split("-")[1])
        return {**example, "response": example["answer"] if n % 4 else "no idea"}

class Nearly:
    \"\"\"Wrong on one example out of 80: within a 0.02 tolerance.\"\"\"
    name = "sys"
    def process(self, example):
        return {**example, "response": "no idea" if example["id"] == "q-7" else example["answer"]}

good, worse, nearly = Good(), Worse(), Nearly()
"""


@pytest.fixture
def bench(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makefile(".jsonl", qa=qa_lines(80))
    pytester.makepyfile(bsys=SYSTEMS)
    pytester.makeini("[pytest]\npythonpath = .\n")
    return pytester


def test_save_then_compare_a_real_drop(bench: pytest.Pytester) -> None:
    saved = bench.runpytest("--ctxbench-dataset=qa.jsonl", "--ctxbench-system=bsys:good", "--ctxbench-save-baseline=base.json")
    assert saved.ret == 0
    saved.stdout.fnmatch_lines(["baseline saved: *base.json"])
    text = (bench.path / "base.json").read_text()
    doc = json.loads(text)
    assert len(doc["rows"]) == 80
    row_lines = [l for l in text.splitlines() if '"example_id"' in l]
    assert len(row_lines) == 80 and all("latency" not in l for l in row_lines)

    args = ["--ctxbench-dataset=qa.jsonl", "--ctxbench-system=bsys:worse", "--ctxbench-baseline=base.json", "--ctxbench-max-drop=pass_rate:0.02"]
    results = {mode: bench.runpytest(*args, *extra) for mode, extra in {"in": [], "n2": ["-n", "2"]}.items()}
    for result in results.values():
        assert result.ret == 1
        result.stdout.fnmatch_lines(
            [
                "baseline comparison:",
                "*sys: 80 examples matched*",
                "*pass_rate: now 0.75*, then 1*gate max-drop 0.02: FAILED*",
                "*flipped pass → fail (20): *q-12*",
            ]
        )
    section = lambda r: r.stdout.str().split("baseline comparison:")[1].split("=====")[0]  # noqa: E731
    assert section(results["in"]) == section(results["n2"])
    # The same evaluators as the baseline's: it is compared as saved, not scored again.
    assert "re-scored" not in section(results["in"])


def test_small_change_within_tolerance_passes(bench: pytest.Pytester) -> None:
    bench.runpytest("--ctxbench-dataset=qa.jsonl", "--ctxbench-system=bsys:good", "--ctxbench-save-baseline=base.json")
    result = bench.runpytest(
        "--ctxbench-dataset=qa.jsonl", "--ctxbench-system=bsys:nearly", "--ctxbench-baseline=base.json",
        "--ctxbench-max-drop=pass_rate:0.02", "--ctxbench-max-drop=mean_score:0.05",
    )
    assert result.ret == 0, result.stdout.str()
    result.stdout.fnmatch_lines(["*pass_rate: now*gate max-drop 0.02: passed*", "*flipped pass → fail (1): q-7*"])


def test_baseline_errors_are_usage_errors(bench: pytest.Pytester) -> None:
    base = ["--ctxbench-dataset=qa.jsonl", "--ctxbench-system=bsys:good"]
    missing = bench.runpytest(*base, "--ctxbench-baseline=nope.json")
    assert missing.ret == pytest.ExitCode.USAGE_ERROR
    missing.stderr.fnmatch_lines(["ERROR: --ctxbench-baseline: *nope.json*"])
    bench.makefile(".json", corrupt="{not json")
    corrupt = bench.runpytest(*base, "--ctxbench-baseline=corrupt.json")
    assert corrupt.ret == pytest.ExitCode.USAGE_ERROR
    corrupt.stderr.fnmatch_lines(["ERROR: --ctxbench-baseline: *corrupt.json*re-create it with --ctxbench-save-baseline*"])
    no_base = bench.runpytest(*base, "--ctxbench-max-drop=pass_rate:0.02")
    assert no_base.ret == pytest.ExitCode.USAGE_ERROR
    no_base.stderr.fnmatch_lines(["ERROR: --ctxbench-max-drop needs --ctxbench-baseline=PATH*"])
    bench.runpytest(*base, "--ctxbench-save-baseline=base.json")
    bad_spec = bench.runpytest(*base, "--ctxbench-baseline=base.json", "--ctxbench-max-drop=accuracy:1")
    assert bad_spec.ret == pytest.ExitCode.USAGE_ERROR
    bad_spec.stderr.fnmatch_lines(["ERROR: --ctxbench-max-drop 'accuracy:1': unknown metric 'accuracy'*"])
    # Another dataset content under the same tag is an incompatible baseline.
    bench.makefile(".jsonl", qa=qa_lines(81))
    changed = bench.runpytest(*base, "--ctxbench-baseline=base.json")
    assert changed.ret == pytest.ExitCode.USAGE_ERROR
    changed.stderr.fnmatch_lines(["ERROR: --ctxbench-baseline: *qa*"])


def test_gate_that_compares_nothing_fails(bench: pytest.Pytester) -> None:
    bench.runpytest("--ctxbench-dataset=qa.jsonl", "--ctxbench-system=bsys:good", "--ctxbench-save-baseline=base.json")
    (bench.path / "qa2.jsonl").write_text((bench.path / "qa.jsonl").read_text())
    out = bench.path / "r.json"
    result = bench.runpytest(
        "--ctxbench-dataset=qa2.jsonl", "--ctxbench-system=bsys:good", "--ctxbench-baseline=base.json",
        "--ctxbench-max-drop=pass_rate:0.02", f"--ctxbench-json={out}",
    )
    assert result.ret == 1
    # One error naming both sides, and no "passed" line before it.
    result.stdout.fnmatch_lines(
        ["baseline not compared: baseline *base.json shares no example with this run in sys:"
         " the baseline has qa/q-1, * this run has qa2/q-1, *"]
    )
    assert "baseline gates: passed" not in result.stdout.str()
    doc = json.loads(out.read_text())
    assert "baseline_comparison" not in doc
    # Without a max-drop gate too.
    plain = bench.runpytest(
        "--ctxbench-dataset=qa2.jsonl", "--ctxbench-system=bsys:good", "--ctxbench-baseline=base.json"
    )
    assert plain.ret == 1
    plain.stdout.fnmatch_lines(["baseline not compared: *shares no example*"])


def test_baseline_sharing_no_system_is_one_error(bench: pytest.Pytester) -> None:
    bench.runpytest("--ctxbench-dataset=qa.jsonl", "--ctxbench-system=bsys:good", "--ctxbench-save-baseline=base.json")
    bench.makepyfile(other="from bsys import *\nclass O(type(good)):\n    name = 'other'\no = O()\n")
    result = bench.runpytest(
        "--ctxbench-dataset=qa.jsonl", "--ctxbench-system=other:o", "--ctxbench-baseline=base.json"
    )
    assert result.ret == 1
    result.stdout.fnmatch_lines(
        ["baseline not compared: baseline *base.json shares no suite with this run:"
         " the baseline has sys; this run has other *"]
    )
    assert "baseline gates: passed" not in result.stdout.str()


def test_marked_dataset_changed_since_the_baseline(bench: pytest.Pytester) -> None:
    bench.makepyfile(
        test_m="""
        import pytest

        @pytest.mark.ctxbench(dataset="qa.jsonl", limit=5)
        def test_qa(ctxbench_example, ctxbench_record):
            ctxbench_record({**ctxbench_example, "response": ctxbench_example["answer"]})
        """
    )
    saved = bench.runpytest("-n", "2", "--ctxbench-save-baseline=m.json")
    assert saved.ret == 0
    assert json.loads((bench.path / "m.json").read_text())["datasets"]["qa"]
    bench.makefile(".jsonl", qa=qa_lines(80).replace("city 3", "town 3"))
    result = bench.runpytest("--ctxbench-baseline=m.json")
    assert result.ret == 1
    result.stdout.fnmatch_lines(["*baseline not compared: *qa*"])


def test_new_and_missing_examples_are_listed_and_fail_only_when_asked(
    bench: pytest.Pytester,
) -> None:
    saved = bench.runpytest("--ctxbench-dataset=qa.jsonl", "--ctxbench-system=bsys:good",
                            "--ctxbench-save-baseline=base.json", "--ctxbench-limit=40")
    assert saved.ret == 0
    # Another selection of the same file: 10 examples missing, 20 new.
    args = ["--ctxbench-dataset=qa.jsonl", "--ctxbench-system=bsys:good",
            "--ctxbench-baseline=base.json"]
    listed = bench.runpytest(*args, "--ctxbench-limit=50", "--ctxbench-shard=1/1")
    assert listed.ret == 0
    listed.stdout.fnmatch_lines(["*new since the baseline (10): q-41 *"])
    strict = bench.runpytest(*args, "--ctxbench-limit=30", "--ctxbench-require-same-examples",
                             "--ctxbench-json=out.json", "-n", "2")
    assert strict.ret == 1
    strict.stdout.fnmatch_lines([
        "*missing from this run (10): q-31 *",
        "FAILED sys: 0 example(s) new since the baseline, 10 missing from this run"
        " (--ctxbench-require-same-examples)*",
    ])
    doc = json.loads((bench.path / "out.json").read_text())
    assert doc["baseline_comparison"]["changed_examples"] == [
        "sys: 0 example(s) new since the baseline, 10 missing from this run"
    ]
    same = bench.runpytest(*args, "--ctxbench-limit=40", "--ctxbench-require-same-examples")
    assert same.ret == 0
    usage = bench.runpytest("--ctxbench-dataset=qa.jsonl", "--ctxbench-system=bsys:good",
                            "--ctxbench-require-same-examples")
    assert usage.ret == 4
    usage.stderr.fnmatch_lines(["*--ctxbench-require-same-examples needs --ctxbench-baseline=PATH*"])
