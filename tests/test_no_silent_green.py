"""No silent green: a configured gate is always decided, bad values a System returns
are that example's error, typos fail (issue 19)."""

from __future__ import annotations

import pytest

from helpers import read_json

CRASH_PY = """
import os

class Crash:
    name = "crash"
    def process(self, example):
        os._exit(3)

crash = Crash()
"""


#: (option, gate, metric): every gate a crashed run must fail
CRASH_GATES = [
    ("--ctxbench-min-pass-rate=0.5", "min_pass_rate", "pass_rate"),
    ("--ctxbench-min-mean-score=0.1", "min_mean_score", "mean_score"),
    ("--ctxbench-max-cost-of-pass=1000", "max_cost_of_pass", "cost_of_pass"),
    ("--ctxbench-max-error-rate=0.5", "max_error_rate", "error_rate"),
]


def test_gate_of_a_run_whose_every_example_crashed_fails(project: pytest.Pytester) -> None:
    """Every gate set in one run (one verdict asserted per gate), the crashing System
    beside one that is scored: each gate of the System with no row fails, each of the
    scored one passes. (One run of 6 crashes: xdist replaces at most 8 workers.)

    The same run compares the crashing System with a baseline where it scored (a
    System of the same name that answers right): the crashed examples are WorkerCrashed
    error rows (issue 15), compared with the baseline's, and the drop they make fails
    the max-drop gate."""
    project.makepyfile(crash=CRASH_PY)
    project.makepyfile(
        scored="from systems import Echo\n\nclass Scored(Echo):\n    name = 'crash'\n\ncrash = Scored()\n"
    )
    saved = project.runpytest(
        "--ctxbench-dataset=qa.jsonl", "--ctxbench-system=scored:crash",
        "--ctxbench-save-baseline=base.json",
    )
    assert saved.ret == 0, saved.stdout.str()
    result = project.runpytest(
        "--ctxbench-dataset=qa.jsonl", "--ctxbench-system=systems:echo",
        "--ctxbench-system=crash:crash", *(option for option, _, _ in CRASH_GATES),
        "--ctxbench-baseline=base.json", "--ctxbench-max-drop=pass_rate:0.02",
        "--ctxbench-json=out.json", "-n", "2",
    )
    assert result.ret == 1
    result.stdout.fnmatch_lines(
        ["FAILED ctxbench::max_drop[[]crash:pass_rate[]] - gate breached: crash: pass_rate: now 0, baseline 1*"]
    )
    # The manifest places every crashed example: each is a WorkerCrashed error row
    # (issue 15), so the gate measures them (pass rate 0, error rate 1, ...) and fails.
    for _, gate, metric in CRASH_GATES:
        result.stdout.fnmatch_lines([f"*FAIL crash: {gate}: {metric} = * breaches the limit*"])
        result.stdout.fnmatch_lines([f"*PASS echo: {gate}*"])
    result.stdout.fnmatch_lines(["crash: 0 of 6 expected rows arrived; lost (counted as errors):*"])
    doc = read_json(project.path / "out.json")
    assert [(g["suite"], g["gate"], g["passed"]) for g in doc["gates"] if g["suite"] == "crash"] == [
        ("crash", gate, False) for _, gate, _ in CRASH_GATES
    ]
    assert [(g["suite"], g["gate"], g["passed"]) for g in doc["gates"] if g["suite"] != "crash"] == [
        ("echo", gate, True) for _, gate, _ in CRASH_GATES
    ]


def test_marked_test_gate_with_every_example_crashed_fails(project: pytest.Pytester) -> None:
    project.makepyfile(
        test_m="""
        import os
        import pytest

        @pytest.mark.ctxbench(dataset="qa.jsonl", limit=3, min_pass_rate=0.5)
        def test_qa(ctxbench_example, ctxbench_record):
            os._exit(3)
        """
    )
    result = project.runpytest("-n", "2", "--ctxbench-json=out.json")
    assert result.ret == 1
    # Every crashed example is a WorkerCrashed error row (issue 15): measured, and failing.
    result.stdout.fnmatch_lines(["*FAIL test_m.py::test_qa: min_pass_rate: pass_rate = 0 breaches*"])
    doc = read_json(project.path / "out.json")
    assert [(g["suite"], g["passed"]) for g in doc["gates"]] == [("test_m.py::test_qa", False)]


def test_gate_with_no_example_selected_fails(project: pytest.Pytester) -> None:
    # --ctxbench-shard=5/6 of 6 examples selects one; 8/8 of 6 may select none: use a
    # selection that keeps none by sharding one example in many parts.
    project.makefile(".jsonl", one='{"id": "a", "context": "c", "question": "q", "answer": "x"}\n')
    result = project.runpytest(
        "--ctxbench-dataset=one.jsonl", "--ctxbench-system=systems:echo",
        "--ctxbench-min-pass-rate=0.5", "--ctxbench-shard=1/100", "--ctxbench-json=out.json",
    )
    empty = not any(
        line for line in result.stdout.lines if "one/a" in line and "PASSED" in line
    )
    assert empty
    assert result.ret == 1
    result.stdout.fnmatch_lines(["*FAIL echo: min_pass_rate*no example was scored*"])
    assert [g["passed"] for g in read_json(project.path / "out.json")["gates"]] == [False]


# The max-drop gate of a run whose every example crashed: in
# test_gate_of_a_run_whose_every_example_crashed_fails (the same -n 2 run of 6 crashes).


def test_max_drop_gate_with_no_example_selected_fails(project: pytest.Pytester) -> None:
    project.makefile(".jsonl", one='{"id": "a", "context": "c", "question": "q", "answer": "x"}\n')
    args = ["--ctxbench-dataset=one.jsonl", "--ctxbench-system=systems:echo"]
    assert project.runpytest(*args, "--ctxbench-save-baseline=base.json").ret == 0
    result = project.runpytest(
        *args, "--ctxbench-shard=1/100", "--ctxbench-baseline=base.json",
        "--ctxbench-max-drop=pass_rate:0.02",
    )
    assert result.ret == 1
    # A baseline sharing nothing with the run is one error naming both sides (issue
    # 15's judge()), beside the selection that kept nothing (issue 19).
    result.stdout.fnmatch_lines(
        [
            "FAILED the selection (shard 1/100) keeps no example of one (1 example): nothing was run*",
            (
                "baseline not compared: baseline *base.json shares no suite with this run:"
                " the baseline has echo; this run has none*"
            ),
        ]
    )
    result.stdout.fnmatch_lines(["FAILED ctxbench::baseline[[]*[]] - gate breached: baseline not compared*"])


BAD_USAGE_PY = """
import math

BAD = {"nan": math.nan, "inf": math.inf, "negative": -3, "string": "12",
       "bool": True, "fraction": 2.5, "huge": 1e300, "list": [1]}

class BadUsage:
    name = "bad"
    def __init__(self, key):
        self.key = key
    def process(self, example):
        usage = {"prompt_tokens": 7, "completion_tokens": 2}
        if example["id"] == "q-2":
            usage["completion_tokens"] = BAD[self.key]
        if example["id"] == "q-3":
            usage["prompt_tokens"] = BAD[self.key]
        return {**example, "response": str(example["answer"]), "api_usage": usage}

def make(key):
    return lambda: BadUsage(key)

for _key in BAD:
    globals()[_key] = make(_key)

class NotADict:
    name = "bad"
    def process(self, example):
        return {**example, "response": str(example["answer"]),
                "api_usage": 12 if example["id"] == "q-2" else {"prompt_tokens": 1}}

notadict = NotADict
"""

BAD_KEYS = ["nan", "inf", "negative", "string", "bool", "fraction", "huge", "list"]


@pytest.mark.parametrize("key", BAD_KEYS)
def test_bad_api_usage_is_that_examples_error_row(key: str) -> None:
    import math

    from pytest_context_bench import evaluate
    from pytest_context_bench.engine import run_example

    namespace: dict[str, object] = {}
    exec(BAD_USAGE_PY, namespace)
    system = namespace[key]()  # type: ignore[operator]
    example = {"id": "q-2", "context": "c", "question": "q", "answer": "a"}
    row, raised = run_example(system, example, [])
    assert row.error is not None and row.error["where"] == "system"
    assert "completion_tokens" in row.error["message"]
    assert isinstance(raised, ValueError)
    good, _ = run_example(system, {**example, "id": "q-1"}, [])
    assert good.error is None and good.metadata["completion_tokens"] == 2
    rows = [{**example, "id": f"q-{i}"} for i in range(1, 5)]
    res = evaluate([system], rows, progress=False)
    assert len(res.rows) == 4
    assert math.isclose(res.summary["bad"]["error_rate"], 0.5)


def test_api_usage_that_is_not_a_dict_is_an_error_row() -> None:
    from pytest_context_bench.engine import run_example

    namespace: dict[str, object] = {}
    exec(BAD_USAGE_PY, namespace)
    row, raised = run_example(namespace["notadict"](), {"id": "q-2", "answer": "a"}, [])  # type: ignore[operator]
    assert row.error is not None and "api_usage" in row.error["message"]


#: the bad values sent through -n 2 (not JSON: nan, inf; not a number: a string),
#: one System each, in one run
XDIST_BAD_KEYS = ("nan", "inf", "string")


def test_bad_api_usage_under_xdist_counts_in_error_rate_and_the_baseline(project: pytest.Pytester) -> None:
    project.makepyfile(badusage=BAD_USAGE_PY)
    project.makepyfile(badnamed="from badusage import BadUsage\n" + "".join(
        f"{key} = BadUsage({key!r})\n{key}.name = 'bad-{key}'\n" for key in XDIST_BAD_KEYS
    ))
    result = project.runpytest(
        "--ctxbench-dataset=qa.jsonl", *(f"--ctxbench-system=badnamed:{key}" for key in XDIST_BAD_KEYS),
        "--ctxbench-json=out.json", "--ctxbench-save-baseline=base.json", "-n", "2",
    )
    n = len(XDIST_BAD_KEYS)
    result.assert_outcomes(passed=4 * n, errors=2 * n)
    doc = read_json(project.path / "out.json")
    assert len(doc["rows"]) == 6 * n
    assert doc["lost"] == []
    base = read_json(project.path / "base.json")
    assert len(base["rows"]) == 6 * n
    for key in XDIST_BAD_KEYS:
        assert doc["summary"][f"bad-{key}"]["error_rate"] == pytest.approx(2 / 6)
        errors = sorted(r["example_id"] for r in doc["rows"] if r["error"] and r["system"] == f"bad-{key}")
        assert errors == ["q-2", "q-3"], key
        assert sum(r["system"] == f"bad-{key}" for r in base["rows"]) == 6


# --------------------------------------------------------------- typos fail


@pytest.mark.parametrize(
    "args, message",
    [
        (["--ctxbench-text-fields="], "--ctxbench-text-fields must list field names*given: ''"),
        (["--ctxbench-code-timeout=1e308"], "--ctxbench-code-timeout must be a number in (0, 86400], given: '1e308'"),
        (["--ctxbench-code-timeout=inf"], "--ctxbench-code-timeout must be a number in (0, 86400], given: 'inf'"),
        (["--ctxbench-repeat=100000000"], "--ctxbench-repeat must be an integer in [[]1, 1000]*given: '100000000'*"),
        (["--ctxbench-score-field=nosuch"], "--ctxbench-score-field: no evaluator of these datasets produces a score named 'nosuch'; the scores they produce: contains, exact_match, f1, recall"),
    ],
)
def test_typo_is_one_usage_error(project: pytest.Pytester, args: list[str], message: str) -> None:
    result = project.runpytest("--ctxbench-dataset=qa.jsonl", "--ctxbench-system=systems:echo", *args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: {message}"])
    assert "Traceback" not in result.stderr.str() + result.stdout.str()


def test_repeat_bound_in_the_marker(project: pytest.Pytester) -> None:
    project.makepyfile(
        test_m="""
        import pytest

        @pytest.mark.ctxbench(dataset="qa.jsonl", repeat=100000000)
        def test_qa(ctxbench_example, ctxbench_record):
            ctxbench_record({**ctxbench_example, "response": ctxbench_example["answer"]})
        """
    )
    result = project.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*repeat=...) must be an integer in [[]1, 1000]*"])


def test_sandbox_timeout_is_bounded() -> None:
    from pytest_context_bench.errors import ConfigError
    from pytest_context_bench.evaluators import CodeExecution

    with pytest.raises(ConfigError, match="86400"):
        CodeExecution(timeout=1e308)


@pytest.mark.parametrize("mode", ["inprocess", "xdist2"])
def test_system_without_dataset_is_a_usage_error(project: pytest.Pytester, mode: str) -> None:
    project.makepyfile(test_plain="def test_plain():\n    pass\n")
    args = ["-n", "2"] if mode == "xdist2" else []
    result = project.runpytest("--ctxbench-system=systems:echo", *args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "--ctxbench-system=systems:echo runs on no dataset" in result.stdout.str() + result.stderr.str()


def test_system_for_marked_tests_without_dataset_option_is_fine(project: pytest.Pytester) -> None:
    project.makepyfile(
        test_m="""
        import pytest

        @pytest.mark.ctxbench(dataset="qa.jsonl", limit=2)
        def test_qa(ctxbench_example, ctxbench_record, ctxbench_system):
            ctxbench_record.run(ctxbench_system)
        """
    )
    result = project.runpytest("--ctxbench-system=systems:echo")
    assert result.ret == 0
    result.assert_outcomes(passed=2)


def test_score_field_no_row_produces_fails_at_the_end(project: pytest.Pytester) -> None:
    # Evaluators of the marker's own: their keys are known only from the rows.
    project.makepyfile(
        test_m="""
        import pytest

        class Length:
            name = "length"
            def score(self, original, processed):
                return {"length": float(len(processed["response"]))}

        @pytest.mark.ctxbench(dataset="qa.jsonl", evaluators=[Length()], score_field="nosuch")
        def test_qa(ctxbench_example, ctxbench_record):
            ctxbench_record({**ctxbench_example, "response": "x"})
        """
    )
    for args in ([], ["-n", "2"]):
        result = project.runpytest(*args)
        assert result.ret == 1, args
        result.stdout.fnmatch_lines([
            "*FAILED test_m.py::test_qa: no example produced the score field 'nosuch'"
            " (score_field); the scores produced: length*"
        ])


def test_empty_selection_fails_in_one_line_unless_allowed(project: pytest.Pytester) -> None:
    project.makefile(".jsonl", one='{"id": "a", "context": "c", "question": "q", "answer": "x"}\n')
    args = ["--ctxbench-dataset=one.jsonl", "--ctxbench-system=systems:echo", "--ctxbench-shard=1/100"]
    result = project.runpytest(*args)
    assert result.ret == 1
    result.stdout.fnmatch_lines([
        "*FAILED the selection (shard 1/100) keeps no example of one (1 example):"
        " nothing was run; pass --ctxbench-allow-empty to let such a run pass*"
    ])
    allowed = project.runpytest(*args, "--ctxbench-allow-empty", "-n", "2")
    assert allowed.ret == 0
    allowed.stdout.fnmatch_lines(["*the selection (shard 1/100) keeps no example of one*--ctxbench-allow-empty*"])


@pytest.mark.parametrize("args, ret", [(["--co"], 0), (["-k", "nothing"], 5), (["-k", "nothing", "-n", "2"], 5)])
def test_a_run_pytest_selected_nothing_of_is_not_gated(
    project: pytest.Pytester, args: list[str], ret: int
) -> None:
    result = project.runpytest(
        "--ctxbench-dataset=qa.jsonl", "--ctxbench-system=systems:echo",
        "--ctxbench-min-pass-rate=0.5", *args,
    )
    assert result.ret == ret
    assert "ctxbench summary" not in result.stdout.str()


BOT_PY = """
import pytest

@pytest.mark.ctxbench(dataset="qa.jsonl", min_pass_rate=0.99)
def test_bot(ctxbench_example, ctxbench_record, ctxbench_system):
    ctxbench_record.run(ctxbench_system)
"""


@pytest.mark.parametrize(
    ("selection", "xdist"),
    [('not test_bot', []), ('not test_bot', ["-n", "2"]), ('not (test_bot and q-1)', [])],
    ids=["bot-deselected", "bot-deselected-xdist2", "bot-in-part"],
)
def test_partiality_is_judged_per_suite(
    project: pytest.Pytester, selection: str, xdist: list[str]
) -> None:
    """Issue 22 item 6: deselecting (all or part of) a marked test leaves the
    command-line suite, every example of which ran, complete and gated (its breach
    fails the run); the partial suite is reported as such, its gates not applied."""
    project.makepyfile(test_bot=BOT_PY)
    out = project.path / "out.json"
    result = project.runpytest(
        "--ctxbench-dataset=qa.jsonl", "--ctxbench-system=systems:half",
        "--ctxbench-min-pass-rate=0.9", f"--ctxbench-json={out}", "-k", selection,
        *xdist,
    )
    assert result.ret == 1, result.stdout.str()
    doc = read_json(out)
    assert doc["completeness"]["gates_skipped"] is None
    gates = {g["suite"]: g["passed"] for g in doc["gates"]}
    assert gates["half"] is False
    result.stdout.fnmatch_lines(["FAILED ctxbench::gate[[]half:min_pass_rate[]]*"])
    if selection == "not test_bot":
        assert set(gates) == {"half"}
        assert doc["completeness"]["partial_suites"] == {
            "test_bot.py::test_bot": "pytest's selection kept 0 of 6 examples"
        }
    else:  # the bot's suite ran in part: its (breached) gate is shown, not applied
        assert gates == {"half": False, "test_bot.py::test_bot[half]": False}
        assert doc["completeness"]["partial_suites"] == {
            "test_bot.py::test_bot[half]": "pytest's selection kept 5 of 6 examples"
        }
        result.stdout.fnmatch_lines([
            "*FAIL test_bot.py::test_bot[[]half[]]: min_pass_rate:*(not enforced: partial suite)",
            "*test_bot.py::test_bot[[]half[]]: gates skipped: pytest's selection kept 5 of 6*",
        ])
        result.assert_outcomes(passed=6, failed=1, skipped=1)
        from pytest_context_bench.report.markdown import render_markdown

        assert (
            "❌ **1 of 1 gate(s) breached** (1 gate(s) of partial suites not applied)"
            in render_markdown(doc)
        )


def test_score_keys_table_matches_what_the_evaluators_return() -> None:
    from pytest_context_bench import evaluators as ev
    from pytest_context_bench.evaluators import SCORE_KEYS, score_keys_for

    cases = [
        (ev.AnswerQuality(), {"answer": "a b"}),
        (ev.SummarizationQuality(), {"answer": "a b"}),
        (ev.MultipleChoiceAccuracy(), {"correct_letter": "A", "choices": ["x", "y"]}),
        (ev.NLILabelMatch(), {"answer": "entailment", "labels": ["entailment", "neutral"]}),
        (ev.IFEvalChecker(), {"instruction_id_list": ["punctuation:no_comma"], "kwargs": [{}]}),
    ]
    for evaluator, original in cases:
        keys = set(evaluator.score(original, {"response": "a"}))
        assert keys and keys <= set(SCORE_KEYS[type(evaluator).__name__]), type(evaluator)
    assert score_keys_for({"qa"}) == {"f1", "exact_match", "recall", "contains"}
    assert "pass_at_1" in score_keys_for({"code"})
    assert "judge_score" in score_keys_for({"qa"}, {"judge": {"base_url": "http://x"}})
