"""The marker form, the ctxbench_system fixture, and parity with evaluate()."""

from __future__ import annotations

import math

import pytest
from helpers import read_json, strip_timings

from pytest_context_bench import evaluate

MARKED = """
import pytest

@pytest.mark.ctxbench(dataset="qa.jsonl", limit=4, min_pass_rate=0.9)
def test_gated(ctxbench_example, ctxbench_record):
    n = int(ctxbench_example["id"].split("-")[1])
    answer = ctxbench_example["answer"] if n % 2 == 0 else "wrong"
    ctxbench_record({**ctxbench_example, "response": answer})

@pytest.mark.ctxbench(dataset="qa.jsonl")
def test_ungated(ctxbench_example, ctxbench_record):
    ctxbench_record({**ctxbench_example, "response": ctxbench_example["answer"]})
"""


def test_marker_gates_apply_to_their_own_suite(project: pytest.Pytester, mode_args: list[str]) -> None:
    project.makepyfile(test_m=MARKED)
    out = project.path / "out.json"
    result = project.runpytest(f"--ctxbench-json={out}", *mode_args)
    assert result.ret == 1
    result.assert_outcomes(passed=8, failed=1)  # the failure: the gate, as a test
    result.stdout.fnmatch_lines(
        [
            "*test_m.py::test_gated *4*0.5000*0.5000*",
            "*test_m.py::test_ungated *6*1.0000*1.0000*",
            "*FAIL test_m.py::test_gated: min_pass_rate: pass_rate = 0.5 breaches the limit >= 0.9*",
        ]
    )
    doc = read_json(out)
    assert [g["suite"] for g in doc["gates"]] == ["test_m.py::test_gated"]
    assert set(doc["summary"]) == {"test_m.py::test_gated", "test_m.py::test_ungated"}
    rows = [r for r in doc["rows"] if r["suite"] == "test_m.py::test_gated"]
    assert [r["example_id"] for r in rows] == ["q-1", "q-2", "q-3", "q-4"]
    assert {r["system"] for r in rows} == {"test_gated"}


def test_cli_gate_applies_to_marker_suites_unless_overridden(project: pytest.Pytester) -> None:
    project.makepyfile(test_m=MARKED)
    result = project.runpytest("--ctxbench-min-pass-rate=0.4")
    assert result.ret == 1
    result.stdout.fnmatch_lines(
        [
            # The marker's own 0.9 wins over the command line's 0.4 for test_gated...
            "*FAIL test_m.py::test_gated: min_pass_rate: pass_rate = 0.5 breaches the limit >= 0.9*",
            # ...and the command line's gate applies to the suite without one.
            "*PASS test_m.py::test_ungated: min_pass_rate: pass_rate = 1 meets the limit >= 0.4*",
        ]
    )


def test_test_that_never_records_fails(project: pytest.Pytester) -> None:
    project.makepyfile(
        test_m="""
        import pytest

        @pytest.mark.ctxbench(dataset="qa.jsonl", limit=2)
        def test_forgot(ctxbench_example, ctxbench_record):
            pass
        """
    )
    result = project.runpytest()
    assert result.ret == 1
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines(["*never called ctxbench_record(processed): nothing was scored*"])


CONFTEST_SYSTEMS = """
import pytest
import systems

@pytest.fixture
def ctxbench_system():
    return {value}
"""


def test_system_from_conftest_fixture_under_tests_dir(project: pytest.Pytester, mode_args: list[str]) -> None:
    tests = project.mkdir("tests")
    (tests / "conftest.py").write_text(CONFTEST_SYSTEMS.format(value="systems.half"))
    (tests / "test_other.py").write_text("def test_other():\n    pass\n")
    result = project.runpytest("tests", "--ctxbench-dataset=qa.jsonl", *mode_args)
    assert result.ret == 0, result.stdout.str()
    result.assert_outcomes(passed=4)
    result.stdout.fnmatch_lines(["half*6*0.5000*0.5000*"])


def test_fixture_returning_a_list_runs_every_system(project: pytest.Pytester) -> None:
    project.makeconftest(CONFTEST_SYSTEMS.format(value="[systems.echo, systems.wrong]"))
    out = project.path / "out.json"
    result = project.runpytest("--ctxbench-dataset=qa.jsonl", f"--ctxbench-json={out}")
    assert result.ret == 0
    doc = read_json(out)
    assert doc["summary"]["echo"]["pass_rate"] == 1.0
    assert doc["summary"]["wrong"]["pass_rate"] == 0.0
    assert doc["summary"]["echo"]["pareto_rank"] == 1.0
    assert len(doc["rows"]) == 12


def test_fixture_list_with_a_name_clash_fails_each_example(project: pytest.Pytester) -> None:
    project.makeconftest(CONFTEST_SYSTEMS.format(value="[systems.echo, systems.make_echo()]"))
    result = project.runpytest("--ctxbench-dataset=qa.jsonl", "--ctxbench-limit=1")
    assert result.ret == 1
    result.stdout.fnmatch_lines(["*two systems are named 'echo'*"])


def test_parametrized_fixture_gives_one_item_per_system(project: pytest.Pytester) -> None:
    project.makeconftest(
        """
        import pytest
        import systems

        @pytest.fixture(params=["echo", "half"])
        def ctxbench_system(request):
            return getattr(systems, request.param)
        """
    )
    result = project.runpytest("--ctxbench-dataset=qa.jsonl", "--co", "-q")
    result.stdout.fnmatch_lines(["ctxbench::example[[]qa/q-1-echo[]]", "*", "12 tests collected*"])


def test_marker_with_cli_systems_and_run(project: pytest.Pytester) -> None:
    project.makepyfile(
        test_m="""
        import pytest

        @pytest.mark.ctxbench(dataset="qa.jsonl", limit=2)
        def test_systems(ctxbench_example, ctxbench_record, ctxbench_system):
            ctxbench_record.run(ctxbench_system)
        """
    )
    result = project.runpytest("--ctxbench-system=systems:echo", "--ctxbench-system=systems:half", "-q", "--co")
    result.stdout.fnmatch_lines(["test_m.py::test_systems[[]echo/qa/q-1[]]", "*", "4 tests collected*"])
    run = project.runpytest("--ctxbench-system=systems:echo", "--ctxbench-system=systems:half")
    run.stdout.fnmatch_lines(["test_m.py::test_systems?echo? *2*1.0000*", "test_m.py::test_systems?half? *2*0.5000*"])


def test_evaluate_matches_the_pytest_run(project: pytest.Pytester) -> None:
    out = project.path / "out.json"
    result = project.runpytest(
        "--ctxbench-dataset=qa.jsonl",
        "--ctxbench-system=systems:half",
        "--ctxbench-system=systems:compressor",
        f"--ctxbench-json={out}",
    )
    assert result.ret == 0
    pytest_summary = strip_timings(read_json(out))["summary"]

    import importlib.util

    spec = importlib.util.spec_from_file_location("ctxbench_test_systems", project.path / "systems.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    res = evaluate([mod.half, mod.compressor], str(project.path / "qa.jsonl"), progress=False)
    api_summary = {
        s: {k: ("inf" if v == math.inf else v) for k, v in m.items() if not k.startswith("latency")}
        for s, m in res.summary.items()
    }
    assert api_summary == pytest_summary


def test_cli_systems_shadow_a_parametrized_fixture_in_marker_tests(project: pytest.Pytester) -> None:
    project.makeconftest(
        """
        import pytest
        import systems

        @pytest.fixture(params=["echo", "half"])
        def ctxbench_system(request):
            return getattr(systems, request.param)
        """
    )
    project.makepyfile(
        test_m="""
        import pytest

        @pytest.mark.ctxbench(dataset="qa.jsonl", limit=2)
        def test_systems(ctxbench_example, ctxbench_record, ctxbench_system):
            ctxbench_record.run(ctxbench_system)
        """
    )
    result = project.runpytest("--ctxbench-system=systems:wrong", "--co", "-q")
    assert result.ret == 0, result.stdout.str()
    result.stdout.fnmatch_lines(["test_m.py::test_systems[[]wrong/qa/q-1[]]", "test_m.py::test_systems[[]wrong/qa/q-2[]]", "2 tests collected*"])


RUNS_SYSTEMS = """
import pytest

@pytest.mark.ctxbench(dataset="qa.jsonl", limit=4, min_pass_rate=0.7)
def test_systems(ctxbench_example, ctxbench_record, ctxbench_system):
    rows = ctxbench_record.run(ctxbench_system)
    assert all(row.error is None for row in rows)

@pytest.mark.ctxbench(dataset="qa.jsonl", limit=4, min_pass_rate=0.7)
def test_named(ctxbench_example, ctxbench_record):
    for name in ("a", "b"):
        ctxbench_record({**ctxbench_example, "response": ctxbench_example["answer"]}, system=name)
"""


@pytest.mark.parametrize(
    ("source", "mode_args"),
    [("cli", []), ("cli", ["-n", "2"]), ("fixture", [])],
    ids=["cli", "cli-xdist2", "fixture"],
)
def test_marker_gates_belong_to_the_suites_the_test_recorded(
    project: pytest.Pytester, mode_args: list[str], source: str
) -> None:
    """Issue 22 item 4: a marked test whose rows are named by their System (the
    quickstart's ``ctxbench_record.run(ctxbench_system)``, or ``system=``) is gated
    on those suites only, not also on an empty suite under the test's own name."""
    project.makepyfile(test_m=RUNS_SYSTEMS)
    args = ["--ctxbench-system=systems:echo"]
    if source == "fixture":
        project.makeconftest(
            """
            import pytest
            import systems

            @pytest.fixture
            def ctxbench_system():
                return [systems.echo, systems.compressor]
            """
        )
        args = []
    out = project.path / "out.json"
    result = project.runpytest(f"--ctxbench-json={out}", *args, *mode_args)
    systems = ["echo"] if source == "cli" else ["echo", "compressor"]
    expected = sorted(
        [f"test_m.py::test_systems[{s}]" for s in systems]
        + ["test_m.py::test_named[a]", "test_m.py::test_named[b]"]
    )
    doc = read_json(out)
    assert sorted(g["suite"] for g in doc["gates"]) == expected
    assert all(g["passed"] for g in doc["gates"])
    assert sorted(doc["summary"]) == expected
    assert result.ret == 0, result.stdout.str()
    result.assert_outcomes(passed=8)  # the met gates are listed, not counted


def test_a_marked_test_that_recorded_nothing_is_still_gated_under_its_name(
    project: pytest.Pytester,
) -> None:
    """The other side of item 4: a gated marked test none of whose examples
    recorded a row still has its gate decided (and failing), under its own name."""
    project.makepyfile(
        test_m="""
        import pytest

        @pytest.mark.ctxbench(dataset="qa.jsonl", limit=2, min_pass_rate=0.7)
        def test_systems(ctxbench_example, ctxbench_record, ctxbench_system):
            raise RuntimeError("before recording")
        """
    )
    out = project.path / "out.json"
    result = project.runpytest(f"--ctxbench-json={out}", "--ctxbench-system=systems:echo")
    assert result.ret == 1
    doc = read_json(out)
    assert [(g["suite"], g["passed"]) for g in doc["gates"]] == [
        ("test_m.py::test_systems[echo]", False)
    ]
