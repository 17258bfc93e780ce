"""The command-line entry point, end to end, in-process, with -n 0 and with -n 2."""

from __future__ import annotations

import json
import re

from xml.etree import ElementTree

import jsonschema
import pytest

from pytest_context_bench import __version__
from pytest_context_bench.plugin.options import OPTIONS
from pytest_context_bench.report import load_schema

from helpers import read_json, strip_timings


def test_help_lists_every_option(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--help")
    out = result.stdout.str()
    for opt in OPTIONS:
        assert opt.flag in out, opt.flag
        assert opt.ini in out, opt.ini
    assert "LLM regression benchmarks (pytest-context-bench)" in out


def test_plain_project_is_untouched(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_plain="def test_one():\n    assert True\n")
    with_plugin = pytester.runpytest("-v")
    without = pytester.runpytest("-v", "-p", "no:ctxbench")
    assert with_plugin.ret == without.ret == 0
    with_plugin.assert_outcomes(passed=1)
    assert "ctxbench" not in with_plugin.stdout.str().replace("context-bench", "")
    strip = lambda r: [l for l in r.stdout.lines if " in " not in l and "plugins:" not in l]  # noqa: E731
    assert strip(with_plugin) == strip(without)


def test_cli_run_scores_every_example(project: pytest.Pytester, mode_args: list[str]) -> None:
    result = project.runpytest(
        "--ctxbench-dataset=qa.jsonl", "--ctxbench-system=systems:half", "-v", *mode_args
    )
    assert result.ret == 0
    result.assert_outcomes(passed=3)
    assert result.parseoutcomes()["below"] == 3
    out = result.stdout.str()
    # In-process: "<nodeid> BELOW"; under xdist: "[gw0] [ 16%] BELOW <nodeid>".
    assert re.search(r"ctxbench::example\[half/qa/q-1\] BELOW|BELOW ctxbench::example\[half/qa/q-1\]", out)
    assert re.search(r"ctxbench::example\[half/qa/q-2\] PASSED|PASSED ctxbench::example\[half/qa/q-2\]", out)
    result.stdout.fnmatch_lines(
        [
            "*= ctxbench summary =*",
            "suite*mean score*pass rate*",
            "half*6*0.5000*0.5000*",
            "*3 passed, 3 below threshold in*",
        ]
    )


def test_gate_breach_exits_1_with_normal_closing_line(
    project: pytest.Pytester, mode_args: list[str]
) -> None:
    # Each gate is a test of its own: the breach is "1 failed" in pytest's closing
    # line (red), a failing <testcase> in --junitxml with the value and the limit.
    result = project.runpytest(
        "--ctxbench-dataset=qa.jsonl",
        "--ctxbench-system=systems:half",
        "--ctxbench-min-pass-rate=0.8",
        "--ctxbench-max-cost-of-pass=1000",
        "--junitxml=junit.xml",
        "--color=yes",
        *mode_args,
    )
    assert result.ret == 1
    plain = [re.sub(r"\x1b\[[0-9;]*m", "", line) for line in result.stdout.lines]
    pytest.LineMatcher(plain).fnmatch_lines(
        [
            "*FAIL half: min_pass_rate: pass_rate = 0.5 breaches the limit >= 0.8*",
            "*PASS half: max_cost_of_pass: cost_of_pass = * meets the limit <= 1000*",
            "*1 gate(s) breached: the run fails*",
            "*FAILED ctxbench::gate[[]half:min_pass_rate[]] - gate breached: *",
            # 3 passing examples and 3 below threshold: the collected items; the met
            # gate is listed above, not counted (docs/views.md).
            "*1 failed, 3 passed, 3 below threshold in*",
        ]
    )
    closing = result.stdout.lines[-1]
    assert closing.startswith("\x1b[31m=")  # the closing line is red
    suite = ElementTree.parse(project.path / "junit.xml").getroot().find("testsuite")
    assert suite is not None and suite.get("failures") == "1"
    cases = {c.get("name"): c for c in suite.iter("testcase")}
    breached = cases["gate[half:min_pass_rate]"]
    failure = breached.find("failure")
    assert failure is not None
    assert "pass_rate = 0.5 breaches the limit >= 0.8" in (failure.get("message") or "")
    props = {p.get("name"): p.get("value") for p in breached.iter("property")}
    assert props == {"suite": "half", "metric": "pass_rate", "value": "0.5", "op": ">=", "limit": "0.8"}
    met = cases["gate[half:max_cost_of_pass]"]
    assert met.find("failure") is None and met.find("skipped") is None
    # Every example's testcase carries its status and scores.
    example = {p.get("name"): p.get("value") for p in cases["example[half/qa/q-1]"].iter("property")}
    assert example["ctxbench.status"] == "below" and example["ctxbench.f1"] == "0.0"
    example = {p.get("name"): p.get("value") for p in cases["example[half/qa/q-2]"].iter("property")}
    assert example["ctxbench.status"] == "pass" and example["ctxbench.f1"] == "1.0"
    if mode_args == ["-n", "2"]:
        # (--ctxbench-no-gate is the controller's option as it is the in-process
        # run's: the gate items are made by the controller, not by the workers)
        return

    no_gate = project.runpytest(
        "--ctxbench-dataset=qa.jsonl",
        "--ctxbench-system=systems:half",
        "--ctxbench-min-pass-rate=0.8",
        "--ctxbench-no-gate",
        *mode_args,
    )
    assert no_gate.ret == 0
    no_gate.stdout.fnmatch_lines(["*gates (not enforced: --ctxbench-no-gate):*", "*FAIL half*"])
    no_gate.assert_outcomes(passed=3, skipped=1)


def test_met_gate_exits_0(project: pytest.Pytester) -> None:
    result = project.runpytest(
        "--ctxbench-dataset=qa.jsonl",
        "--ctxbench-system=systems:echo",
        "--ctxbench-min-pass-rate=1",
        "--ctxbench-min-mean-score=0.99",
        "--ctxbench-max-error-rate=0",
    )
    assert result.ret == 0
    result.assert_outcomes(passed=6)  # 6 examples; the 3 met gates are listed, not counted
    assert "FAIL" not in result.stdout.str()


def test_identical_json_in_process_and_under_xdist(project: pytest.Pytester) -> None:
    docs = {}
    for name, extra in {"in": [], "n0": ["-n", "0"], "n2": ["-n", "2"]}.items():
        out = project.path / f"{name}.json"
        result = project.runpytest(
            "--ctxbench-dataset=qa.jsonl",
            "--ctxbench-system=systems:half",
            "--ctxbench-system=systems:compressor",
            f"--ctxbench-json={out}",
            *extra,
        )
        assert result.ret == 0, result.stdout.str()
        doc = read_json(out)
        jsonschema.validate(doc, load_schema())
        docs[name] = strip_timings(doc)
    assert docs["in"] == docs["n0"] == docs["n2"]
    doc = docs["in"]
    assert [r["example_id"] for r in doc["rows"][:6]] == [f"q-{i}" for i in range(1, 7)]
    assert doc["summary"]["half"]["pass_rate"] == 0.5
    assert doc["summary"]["compressor"]["pass_rate"] == 1.0
    # Pareto: compressor is better on quality and cheaper.
    assert doc["summary"]["compressor"]["pareto_rank"] == 1.0
    assert doc["summary"]["half"]["pareto_rank"] == 2.0
    # The System's own usage is the output token count; completion tokens in metadata.
    comp_rows = [r for r in doc["rows"] if r["system"] == "compressor"]
    assert all(r["output_tokens"] == 7 for r in comp_rows)
    assert all(r["metadata"]["completion_tokens"] == 2 for r in comp_rows)


def test_json_keeps_infinite_cost_valid(project: pytest.Pytester) -> None:
    out = project.path / "out.json"
    result = project.runpytest(
        "--ctxbench-dataset=qa.jsonl", "--ctxbench-system=systems:wrong", f"--ctxbench-json={out}"
    )
    assert result.ret == 0
    text = out.read_text()
    assert "Infinity" not in text
    doc = json.loads(text)
    jsonschema.validate(doc, load_schema())
    assert doc["summary"]["wrong"]["cost_of_pass"] == "inf"
    result.stdout.fnmatch_lines(["wrong*6*0.0000*0.0000*inf*"])


def test_system_error_is_an_error_of_that_example(
    project: pytest.Pytester, serial_mode_args: list[str]
) -> None:
    """In-process and -n 0. Under -n 2 a System's error rows are
    test_no_silent_green.py's
    test_bad_api_usage_under_xdist_counts_in_error_rate_and_the_baseline (the
    outcomes, the JSON rows, the error rate) and test_views_terminal.py's
    test_examples_below_and_in_error_are_named_with_a_reason (this System's error
    named on the terminal)."""
    out = project.path / "out.json"
    result = project.runpytest(
        "--ctxbench-dataset=qa.jsonl",
        "--ctxbench-system=systems:boom",
        f"--ctxbench-json={out}",
        *serial_mode_args,
    )
    assert result.ret == 1
    result.assert_outcomes(passed=5, errors=1)
    result.stdout.fnmatch_lines(
        [
            "*ERROR at call of example?boom/qa/q-3?*",
            "*RuntimeError: model endpoint exploded*",
            "*examples: 1 errored*",
        ]
    )
    doc = read_json(out)
    (bad,) = [r for r in doc["rows"] if r["error"]]
    assert bad["example_id"] == "q-3"
    assert bad["error"]["type"] == "RuntimeError"
    assert bad["error"]["where"] == "system"
    assert bad["status"] == "error"
    assert doc["summary"]["boom"]["error_rate"] == pytest.approx(1 / 6)
    # The errored example counts as a failure, not as missing.
    assert doc["summary"]["boom"]["pass_rate"] == pytest.approx(5 / 6)


def test_strict_turns_below_threshold_into_failures(project: pytest.Pytester) -> None:
    result = project.runpytest(
        "--ctxbench-dataset=qa.jsonl", "--ctxbench-system=systems:half", "--ctxbench-strict"
    )
    assert result.ret == 1
    result.assert_outcomes(passed=3, failed=3)
    result.stdout.fnmatch_lines(["*below threshold (--ctxbench-strict):*", "*half: f1 = 0.0000 < threshold 0.7*"])


def test_limit_threshold_and_score_field(project: pytest.Pytester) -> None:
    result = project.runpytest(
        "--ctxbench-dataset=qa.jsonl",
        "--ctxbench-system=systems:half",
        "--ctxbench-limit=2",
        "--ctxbench-score-field=contains",
        "--ctxbench-threshold=0.5",
    )
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*pass = score field contains >= 0.5*"])


def test_k_and_lf_select_examples(project: pytest.Pytester) -> None:
    args = ["--ctxbench-dataset=qa.jsonl", "--ctxbench-system=systems:boom"]
    first = project.runpytest(*args)
    first.assert_outcomes(passed=5, errors=1)
    again = project.runpytest(*args, "--lf")
    again.assert_outcomes(errors=1)
    picked = project.runpytest(*args, "-k", "q-2 or q-4")
    picked.assert_outcomes(passed=2, deselected=4)


# A fixture that applies to every test: the command line's items must then be
# pytest's function items, and it must run for each of them.
AUTOUSE_CONFTEST = """
import pytest

@pytest.fixture(autouse=True)
def _seen(request):
    with open("seen.txt", "a") as fh:
        fh.write(request.node.nodeid + "\\n")
    yield
"""


def _section(result: pytest.RunResult, title: str) -> list[str]:
    """The lines of one "= title =" section of pytest's output (objects' addresses
    left out)."""
    lines = [re.sub(r" at 0x[0-9a-f]+", "", line) for line in result.stdout.lines]
    start = next(i for i, line in enumerate(lines) if re.match(rf"=+ {title} =+$", line))
    end = next(i for i in range(start + 1, len(lines)) if re.match(r"=+ .* =+$", lines[i]))
    return lines[start + 1 : end]


def test_plain_items_behave_as_function_items(project: pytest.Pytester) -> None:
    """Without a fixture to set up, the examples are plain items (CaseItem): the same
    node ids, --lf and -k selections, outcomes and failure text as pytest's function
    items, which an autouse fixture brings back (and runs for every example)."""
    args = ["--ctxbench-dataset=qa.jsonl", "--ctxbench-system=systems:boom",
            "--ctxbench-system=systems:half", "-p", "no:randomly"]
    runs: dict[str, list[pytest.RunResult]] = {}
    for kind in ("CaseItem", "Function"):
        if kind == "Function":
            project.makeconftest(AUTOUSE_CONFTEST)
        tree = project.runpytest(*args, "--co")
        types = {m.group(1) for m in re.finditer(r"<(\w+) example\[", tree.stdout.str())}
        assert types == {kind}, tree.stdout.str()
        runs[kind] = [
            project.runpytest(*args, "--co", "-q"),
            project.runpytest(*args, "-rA"),
            project.runpytest(*args, "--tb=short"),
            project.runpytest(*args, "--lf", "-q"),
            project.runpytest(*args, "-k", "half and (q-2 or q-5)", "-q"),
        ]
    plain, function = runs["CaseItem"], runs["Function"]
    assert plain[0].stdout.lines[:-1] == function[0].stdout.lines[:-1]  # the ids
    assert "ctxbench::example[boom/qa/q-3]" in plain[0].stdout.lines
    for p, f in zip(plain[1:], function[1:]):
        assert p.parseoutcomes() == f.parseoutcomes()
    assert plain[1].parseoutcomes() == {"passed": 8, "below": 3, "errors": 1}
    for i in (1, 2):  # the failure text, in pytest's auto and short styles
        assert _section(plain[i], "ERRORS") == _section(function[i], "ERRORS")
        assert _section(plain[i], "short test summary info") == _section(function[i], "short test summary info")
    assert "RuntimeError: model endpoint exploded" in "\n".join(_section(plain[1], "ERRORS"))
    assert plain[3].parseoutcomes() == {"errors": 1, "deselected": 11}
    assert plain[4].parseoutcomes() == {"passed": 1, "below": 1, "deselected": 10}
    # The fixture ran for every example of every run that ran them (--co runs none).
    seen = (project.path / "seen.txt").read_text().splitlines()
    assert len(seen) == 12 + 12 + 1 + 2
    assert "ctxbench::example[boom/qa/q-3]" in seen


def test_another_plugins_generate_tests_keeps_function_items(project: pytest.Pytester) -> None:
    # A plugin's pytest_generate_tests may parametrize any test (a conftest's does
    # not reach the virtual module): the command line's items stay pytest's
    # function items so that it sees them.
    project.makepyfile(
        gen_plugin="def pytest_generate_tests(metafunc):\n"
        "    with open('generated.txt', 'a') as fh:\n"
        "        fh.write(metafunc.definition.nodeid + '\\n')\n"
    )
    project.syspathinsert()  # importable by -p before the ini's pythonpath applies (pytest 8)
    result = project.runpytest(
        "--ctxbench-dataset=qa.jsonl", "--ctxbench-system=systems:echo", "-p", "gen_plugin", "--co"
    )
    result.stdout.fnmatch_lines(["*<Function example[[]echo/qa/q-1[]]>*"])
    assert (project.path / "generated.txt").read_text().splitlines() == ["ctxbench::example"]


def test_collect_only_lists_items_with_system_ids(project: pytest.Pytester) -> None:
    result = project.runpytest(
        "--ctxbench-dataset=qa.jsonl",
        "--ctxbench-system=systems:echo",
        "--ctxbench-system=systems:half",
        "--co",
        "-q",
    )
    assert result.ret == 0
    result.stdout.fnmatch_lines(
        ["ctxbench::example[[]echo/qa/q-1[]]", "*", "ctxbench::example[[]half/qa/q-6[]]", "12 tests collected*"]
    )


def test_ini_twins_and_cli_precedence(project: pytest.Pytester) -> None:
    project.makeini(
        "[pytest]\npythonpath = .\nctxbench_dataset = qa.jsonl\nctxbench_system = systems:half\n"
        "ctxbench_min_pass_rate = 0.9\nctxbench_limit = 4\n"
    )
    from_ini = project.runpytest()
    assert from_ini.ret == 1
    from_ini.stdout.fnmatch_lines(["*FAIL half: min_pass_rate*"])
    from_ini.assert_outcomes(passed=2, failed=1)  # the breached gate is the failure
    cli_wins = project.runpytest("--ctxbench-min-pass-rate=0.5", "--ctxbench-system=systems:echo")
    assert cli_wins.ret == 0
    cli_wins.stdout.fnmatch_lines(["*PASS echo: min_pass_rate: pass_rate = 1 meets the limit >= 0.5*"])


def test_two_datasets_get_per_dataset_means(project: pytest.Pytester) -> None:
    project.makefile(".jsonl", other='{"id": 1, "question": "q?", "answer": "yes"}\n')
    result = project.runpytest(
        "--ctxbench-dataset=qa.jsonl", "--ctxbench-dataset=other.jsonl", "--ctxbench-system=systems:echo"
    )
    assert result.ret == 0
    result.stdout.fnmatch_lines(["mean score per dataset:", "suite*other*qa*", "echo*1.0000*1.0000*"])


def test_works_without_xdist(project: pytest.Pytester) -> None:
    result = project.runpytest("--ctxbench-dataset=qa.jsonl", "--ctxbench-system=systems:echo", "-p", "no:xdist")
    assert result.ret == 0
    result.assert_outcomes(passed=6)
    result.stdout.fnmatch_lines(["echo*6*1.0000*1.0000*"])


def test_custom_python_functions_does_not_hide_the_benchmark(project: pytest.Pytester) -> None:
    project.makeini("[pytest]\npythonpath = .\npython_functions = check_*\n")
    result = project.runpytest("--ctxbench-dataset=qa.jsonl", "--ctxbench-system=systems:echo")
    result.assert_outcomes(passed=6)


def test_json_path_under_a_file_is_a_usage_error(project: pytest.Pytester) -> None:
    project.makefile(".txt", afile="x")
    result = project.runpytest(
        "--ctxbench-dataset=qa.jsonl", "--ctxbench-system=systems:echo", "--ctxbench-json=afile.txt/out.json"
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: --ctxbench-json: *afile.txt is not a directory"])


def test_report_header_and_plugin_disable(project: pytest.Pytester) -> None:
    result = project.runpytest("--ctxbench-dataset=qa.jsonl", "--ctxbench-system=systems:echo")
    result.stdout.fnmatch_lines([f"ctxbench {__version__}: datasets qa (6); systems echo"])
    disabled = project.runpytest("-p", "no:ctxbench", "--ctxbench-dataset=qa.jsonl")
    assert disabled.ret == pytest.ExitCode.USAGE_ERROR  # the option no longer exists


def test_a_local_file_declares_its_family(project: pytest.Pytester) -> None:
    rows = [
        {"id": i, "task": "multiple_choice", "question": f"Q{i}", "context": "A) no\nB) yes",
         "choices": ["no", "yes"], "correct_letter": "B", "answer": "yes"}
        for i in range(1, 5)
    ]
    project.makefile(".jsonl", mc="\n".join(json.dumps(r) for r in rows) + "\n")
    project.makepyfile(
        mcsys="""
        class Picker:
            name = "picker"
            def process(self, example):
                return {**example, "response": "Answer: B" if example["id"] != "4" else "A"}
        picker = Picker()
        """
    )
    out = project.path / "mc.json"
    result = project.runpytest("--ctxbench-dataset=mc.jsonl", "--ctxbench-system=mcsys:picker", f"--ctxbench-json={out}")
    assert result.ret == 0
    doc = json.loads(out.read_text())
    assert doc["summary"]["picker"]["pass_rate"] == 0.75
    assert {r["metadata"]["score_field"] for r in doc["rows"]} == {"mc_accuracy"}
    assert all("mc_accuracy" in r["scores"] for r in doc["rows"])


def test_family_from_the_option_and_the_marker(project: pytest.Pytester) -> None:
    project.makefile(".jsonl", sums='{"id": 1, "context": "long text here", "question": "Summarize.", "answer": "the cat sat on the mat"}\n')
    project.makepyfile(
        sumsys="""
        class S:
            name = "s"
            def process(self, example):
                return {**example, "response": "the cat on the mat"}
        s = S()
        """,
        test_m="""
        import pytest

        @pytest.mark.ctxbench(dataset="sums.jsonl", task="summarization")
        def test_sum(ctxbench_example, ctxbench_record):
            row = ctxbench_record({**ctxbench_example, "response": "the cat on the mat"})
            assert row.metadata["score_field"] == "rouge_l_f1"
            assert row.scores["rouge_l_precision"] == 1.0
        """,
    )
    out = project.path / "o.json"
    result = project.runpytest("--ctxbench-dataset=sums.jsonl", "--ctxbench-system=sumsys:s", "--ctxbench-task=summarization", f"--ctxbench-json={out}")
    assert result.ret == 0, result.stdout.str()
    doc = json.loads(out.read_text())
    assert doc["summary"]["s"]["mean_score"] == pytest.approx(2 * (5 / 6) / (1 + 5 / 6))
    bad = project.runpytest("--ctxbench-dataset=sums.jsonl", "--ctxbench-system=sumsys:s", "--ctxbench-task=poetry")
    assert bad.ret == pytest.ExitCode.USAGE_ERROR
    bad.stderr.fnmatch_lines(["ERROR: --ctxbench-task must be one of qa, summarization, *, given: 'poetry'"])


def test_ctxbench_version_is_the_installed_one(tmp_path) -> None:
    """`ctxbench --version` (the console script pip installed) prints the version the
    package's metadata holds, exit 0 (it was a usage error, exit 4); the JSON report
    and the header line carry the same version."""
    import importlib.metadata
    import shutil
    import subprocess
    import sys
    from pathlib import Path

    script = shutil.which("ctxbench", path=str(Path(sys.executable).parent))
    assert script is not None, "the ctxbench console script is not installed"
    done = subprocess.run(
        [script, "--version"], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    installed = importlib.metadata.version("pytest-context-bench")
    assert done.stdout.strip() == f"ctxbench (pytest-context-bench) {installed}"
    assert installed == __version__
