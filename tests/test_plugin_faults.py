"""Faults at scale: dying workers, partial selections, Ctrl-C, completeness."""

from __future__ import annotations

import signal
import subprocess
import sys
import time

import jsonschema
import pytest
from helpers import read_json, sigint_default

from pytest_context_bench.report import load_schema

CRASH_PY = """
import ctypes
import os

class Exit:
    name = "exiter"
    def process(self, example):
        if example["id"] == "q-2":
            os._exit(1)
        return {**example, "response": str(example["answer"])}

class Segv:
    name = "segv"
    def process(self, example):
        if example["id"] == "q-4":
            ctypes.string_at(0)
        return {**example, "response": str(example["answer"])}

exiter = Exit()
segv = Segv()
"""


#: System → the example whose call ends its worker (os._exit, a segfault)
DYING = {"exiter": "q-2", "segv": "q-4"}


def test_a_dying_worker_makes_an_error_row_the_error_gate_counts_and_no_baseline(
    project: pytest.Pytester,
) -> None:
    """Both ways of dying in one run (two workers replaced), with an error-rate gate
    the lost example breaches and a baseline asked for, which is not saved; then
    a limit the lost example keeps to."""
    project.makepyfile(crash=CRASH_PY)
    result = project.runpytest(
        "--ctxbench-dataset=qa.jsonl",
        *(f"--ctxbench-system=crash:{system}" for system in DYING),
        "--ctxbench-json=out.json",
        "--ctxbench-max-error-rate=0.1",
        "--ctxbench-save-baseline=base.json",
        "-n",
        "2",
    )
    assert result.ret == 1
    doc = read_json(project.path / "out.json")
    jsonschema.validate(doc, load_schema())
    assert doc["complete"] is False
    for system, lost in DYING.items():
        rows = {r["example_id"]: r for r in doc["rows"] if r["system"] == system}
        assert len(rows) == 6  # the other five rows are kept, plus the lost one
        err = rows[lost]["error"]
        assert err["type"] == "WorkerCrashed"
        assert "crashed while running" in err["message"] and "gw" in err["message"]
        assert f"{system}/qa/{lost}" in err["message"]
        assert rows[lost]["status"] == "error"
        summary = doc["summary"][system]
        # Counted like any error: 5 of 6 pass, the lost one scores 0.
        assert summary["error_rate"] == pytest.approx(1 / 6)
        assert summary["pass_rate"] == pytest.approx(5 / 6)
        assert summary["mean_score"] == pytest.approx(5 / 6)
        suite = doc["completeness"]["suites"][system]
        assert suite["expected"] == 6 and suite["received"] == 5
        assert suite["lost"] == [f"qa/{lost}"]
        result.stdout.fnmatch_lines(
            [f"{system}: 5 of 6 expected rows arrived; lost (counted as errors): qa/{lost}"]
        )
        # A lost example breaches the error gate (1/6 > 0.1).
        result.stdout.fnmatch_lines([f"*FAIL {system}: max_error_rate*"])
    result.stdout.fnmatch_lines(
        [
            "baseline not saved to *base.json: the run is incomplete (2 example(s) produced no row of their own)*"
        ]
    )
    # The terminal names them, and counts each as an error in the summary table.
    result.stdout.fnmatch_lines(
        ["*2 example(s) produced no row of their own (crashed or failed before scoring); each counts as an error:*",
         "*ctxbench::example?exiter/qa/q-2?*"]
    )
    result.stdout.fnmatch_lines(["*ctxbench::example?segv/qa/q-4?*"])
    for system in DYING:
        result.stdout.fnmatch_lines([f"{system}*6*0.8333*0.8333*0.1667*"])
    assert not (project.path / "base.json").exists()
    ok = project.runpytest(
        "--ctxbench-dataset=qa.jsonl", "--ctxbench-system=crash:exiter", "-n", "2",
        "--ctxbench-max-error-rate=0.2",
    )  # fmt: skip
    assert "FAIL" not in "\n".join(l for l in ok.stdout.lines if "max_error_rate" in l)
    ok.stdout.fnmatch_lines(["*PASS exiter: max_error_rate*"])


@pytest.mark.parametrize(
    "selection",
    [
        ["-k", "q-1 or q-2"],
        ["--deselect", "ctxbench::example[echo/qa/q-3]"],
        ["-x"],
    ],
    ids=["k", "deselect", "x"],
)
def test_partial_runs_are_reported_but_not_gated(
    project: pytest.Pytester, mode_args: list[str], selection: list[str]
) -> None:
    project.makepyfile(
        boomfirst="""
        class B:
            name = "echo"
            def process(self, example):
                if example["id"] == "q-1":
                    raise RuntimeError("no")
                return {**example, "response": str(example["answer"])}
        b = B()
        """
    )
    args = [
        "--ctxbench-dataset=qa.jsonl",
        "--ctxbench-system=boomfirst:b",
        "--ctxbench-min-pass-rate=0.99",
        "--ctxbench-json=out.json",
        *mode_args,
    ]
    if selection == ["-x"] and mode_args == ["-n", "2"]:
        pytest.skip("under -n 2, -x may let every item finish before the stop lands")
    if selection[0] == "--deselect" and mode_args == ["-n", "2"]:
        # --deselect and -k reach the plugin the same way (the items pytest's
        # selection left, in each worker's manifest, pytest_collection_finish):
        # under -n 2, the -k case shows the controller's count.
        pytest.skip("under -n 2, the -k case covers pytest's deselection")
    result = project.runpytest(*args, *selection)
    out = result.stdout.str()
    assert "*= ctxbench summary =*"[1:-1] in out or "ctxbench summary" in out
    result.stdout.fnmatch_lines(
        ["gates skipped: * of 6 examples ran*--ctxbench-gate-partial*"]
    )
    # The failing example q-1 is a test failure: exit 1 from the tests, not the gate.
    doc = read_json(project.path / "out.json")
    assert doc["completeness"]["gates_skipped"]
    assert doc["gates_enforced"] is False
    assert doc["complete"] is False
    gated = project.runpytest(*args, *selection, "--ctxbench-gate-partial")
    assert "gates skipped" not in gated.stdout.str()
    gated.stdout.fnmatch_lines(["*gate(s) breached*"])


def test_partial_run_exit_status_reflects_only_the_tests(
    project: pytest.Pytester, serial_mode_args: list[str]
) -> None:
    """In-process and -n 0. Under -n 2 the controller finds the run partial
    (test_partial_runs_are_reported_but_not_gated[xdist2-k]) and fails a breached
    gate with exit status 1 (test_plugin_cli.py's
    test_gate_breach_exits_1_with_normal_closing_line[xdist2]) as here."""
    args = [
        "--ctxbench-dataset=qa.jsonl",
        "--ctxbench-system=systems:half",
        "--ctxbench-min-pass-rate=0.99",
        *serial_mode_args,
    ]
    full = project.runpytest(*args)
    assert full.ret == 1  # the gate fails the whole run
    part = project.runpytest(*args, "-k", "q-1 or q-3")
    assert part.ret == 0, part.stdout.str()
    part.stdout.fnmatch_lines(
        ["gates skipped: 2 of 6 examples ran; pytest's selection kept 2 of 6 examples*"]
    )


def test_plugin_selection_is_intentional_gates_apply(project: pytest.Pytester) -> None:
    args = [
        "--ctxbench-dataset=qa.jsonl",
        "--ctxbench-system=systems:half",
        "--ctxbench-min-pass-rate=0.99",
    ]
    for extra in (
        ["--ctxbench-limit=2"],
        ["--ctxbench-shard=1/2"],
        ["--ctxbench-sample=3"],
    ):
        result = project.runpytest(*args, *extra)
        assert result.ret == 1, extra
        assert "gates skipped" not in result.stdout.str()


def test_ini_twin_of_gate_partial(project: pytest.Pytester) -> None:
    project.makeini("[pytest]\npythonpath = .\nctxbench_gate_partial = true\n")
    result = project.runpytest(
        "--ctxbench-dataset=qa.jsonl",
        "--ctxbench-system=systems:half",
        "--ctxbench-min-pass-rate=0.99",
        "-k",
        "q-1 or q-3",
    )
    assert result.ret == 1
    assert "gates skipped" not in result.stdout.str()


def test_no_baseline_from_a_partial_run(project: pytest.Pytester) -> None:
    result = project.runpytest(
        "--ctxbench-dataset=qa.jsonl",
        "--ctxbench-system=systems:echo",
        "--ctxbench-save-baseline=base.json",
        "-k",
        "q-1",
    )
    assert result.ret == 1
    result.stdout.fnmatch_lines(
        [
            "baseline not saved to *base.json: the run is incomplete (pytest's selection kept 1 of 6 examples)*"
        ]
    )
    assert not (project.path / "base.json").exists()


HANG_PY = """
import pathlib
import time

class Hang:
    name = "hang"
    def process(self, example):
        if example["id"] == "q-4":
            pathlib.Path("hanging").write_text("x")
            while True:
                time.sleep(0.05)
        return {**example, "response": str(example["answer"])}

hang = Hang()
"""


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["inprocess", "xdist2"])
def test_ctrl_c_writes_an_incomplete_report(
    project: pytest.Pytester, workers: list[str]
) -> None:
    project.makepyfile(hang=HANG_PY)
    cmd = [
        sys.executable,
        "-m",
        "pytest",
        "-p",
        "no:cacheprovider",
        "--ctxbench-dataset=qa.jsonl",
        "--ctxbench-system=hang:hang",
        "--ctxbench-min-pass-rate=0.99",
        "--ctxbench-json=out.json",
        *workers,
    ]
    proc = subprocess.Popen(
        cmd,
        cwd=project.path,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        preexec_fn=sigint_default,
    )
    try:
        deadline = time.monotonic() + 120
        while not (project.path / "hanging").exists():
            assert proc.poll() is None and time.monotonic() < deadline, (
                "never reached q-4"
            )
            time.sleep(0.05)
        time.sleep(0.3)  # let the other worker finish its share
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    text = out.decode()
    assert proc.returncode == 2, text
    assert "ctxbench summary" in text
    assert "gates skipped:" in text and "interrupted" in text
    doc = read_json(project.path / "out.json")
    jsonschema.validate(doc, load_schema())
    assert doc["complete"] is False
    assert doc["completeness"]["interrupted"] is True
    assert doc["gates_enforced"] is False
    ids = {r["example_id"] for r in doc["rows"] if r["error"] is None}
    assert "q-4" not in ids and {"q-1", "q-2", "q-3"} <= ids


STUCK_PY = """
import os
import pathlib
import signal
import time

class Stuck:
    name = "stuck"
    def process(self, example):
        # Which SIGTERM handler this process has, and its pid, for the test.
        handler = signal.getsignal(signal.SIGTERM)
        if getattr(handler, "__name__", "") == "_on_sigterm":
            handler = "ours"
        elif handler == signal.SIG_DFL:
            handler = "default"
        pathlib.Path("marks", "started-" + example["id"]).write_text(
            f"{os.getpid()} {handler!r}"
        )
        while True:
            time.sleep(0.05)

stuck = Stuck()
"""


def _gone(pid: int) -> bool:
    import os

    for _ in range(200):  # a hang guard, not a timing: 10 s at most
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.05)
    return False


@pytest.mark.parametrize("sig", ["SIGINT", "SIGTERM"])
@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["inprocess", "xdist2"])
def test_a_signal_before_the_first_example_finishes_writes_the_report(
    project: pytest.Pytester, workers: list[str], sig: str
) -> None:
    # Before: SIGINT before the first row wrote no report and no summary; SIGTERM
    # (a cancelled CI job) wrote nothing at all; under -n 2 the report said "0 of 0"
    # and the workers were given 10 s to end.
    project.makepyfile(stuck=STUCK_PY)
    (project.path / "marks").mkdir()
    proc = subprocess.Popen(
        [
            sys.executable, "-m", "pytest", "-p", "no:cacheprovider",
            "--ctxbench-dataset=qa.jsonl", "--ctxbench-system=stuck:stuck",
            "--ctxbench-min-pass-rate=0.99", "--ctxbench-json=out.json", *workers,
        ],
        cwd=project.path,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        preexec_fn=sigint_default,
    )  # fmt: skip
    marks = project.path / "marks"
    try:
        deadline = time.monotonic() + 120  # a hang guard
        while not any(marks.iterdir()):
            assert proc.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)
        time.sleep(0.2)  # the marker is written whole
        proc.send_signal(getattr(signal, sig))  # the controller only, as `kill` does
        out, _ = proc.communicate(timeout=60)  # a hang guard, not a timing
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    text = out.decode()
    assert proc.returncode == 2, text
    assert "ctxbench summary" in text
    stop = "SIGTERM" if sig == "SIGTERM" else "KeyboardInterrupt"
    assert (
        f"gates skipped: 0 of 6 examples ran; the run was interrupted ({stop})" in text
    ), text
    doc = read_json(project.path / "out.json")
    jsonschema.validate(doc, load_schema())
    assert doc["rows"] == []
    assert doc["complete"] is False and doc["gates_enforced"] is False
    c = doc["completeness"]
    assert (c["interrupted"], c["planned"], c["selected"], c["ran"]) == (True, 6, 6, 0)
    assert c["suites"]["stuck"]["expected"] == 6
    started = [m.read_text().split() for m in marks.iterdir()]
    # SIGTERM is handled by the process that writes the report, never by a worker.
    handlers = {h for _, h in started}
    assert handlers == ({"'ours'"} if not workers else {"'default'"}), handlers
    # Nothing is left running: the workers busy in a System call were ended.
    assert all(_gone(int(pid)) for pid, _ in started)


def test_the_sigterm_handler_is_restored_after_an_in_process_run(
    project: pytest.Pytester,
) -> None:
    before = signal.getsignal(signal.SIGTERM)
    project.runpytest("--ctxbench-dataset=qa.jsonl", "--ctxbench-system=systems:echo")
    assert signal.getsignal(signal.SIGTERM) is before


def test_pytest_timeout_makes_an_error_row(
    project: pytest.Pytester, mode_args: list[str]
) -> None:
    pytest.importorskip("pytest_timeout")
    project.makepyfile(hang=HANG_PY)
    result = project.runpytest(
        "--ctxbench-dataset=qa.jsonl",
        "--ctxbench-system=hang:hang",
        "--ctxbench-json=out.json",
        "--timeout=1",
        *mode_args,
    )
    assert result.ret == 1
    result.assert_outcomes(passed=5, failed=1)
    doc = read_json(project.path / "out.json")
    rows = {r["example_id"]: r for r in doc["rows"]}
    assert len(rows) == 6
    assert rows["q-4"]["error"]["type"] == "Timeout"
    assert "Timeout (>1.0s)" in rows["q-4"]["error"]["message"]
    assert doc["summary"]["hang"]["error_rate"] == pytest.approx(1 / 6)
    assert doc["completeness"]["suites"]["hang"]["lost"] == ["qa/q-4"]


def test_last_failed_rerun_is_partial(project: pytest.Pytester) -> None:
    project.makepyfile(
        flaky="""
        class F:
            name = "f"
            def process(self, example):
                if example["id"] == "q-3":
                    raise RuntimeError("down")
                return {**example, "response": str(example["answer"])}
        f = F()
        """
    )
    args = [
        "--ctxbench-dataset=qa.jsonl",
        "--ctxbench-system=flaky:f",
        "--ctxbench-max-error-rate=0",
    ]
    first = project.runpytest("-p", "cacheprovider", *args)
    assert first.ret == 1
    again = project.runpytest("-p", "cacheprovider", *args, "--lf")
    # A System error shows as ERROR; the gate, skipped for the partial run, is a
    # skipped test of its own (ctxbench::gate[f:max_error_rate]).
    again.assert_outcomes(errors=1, deselected=5, skipped=1)
    again.stdout.fnmatch_lines(
        ["gates skipped: 1 of 6 examples ran; pytest's selection kept 1 of 6 examples*"]
    )


def test_a_marked_test_failing_before_it_records_is_an_error_row(
    project: pytest.Pytester, mode_args: list[str]
) -> None:
    project.makepyfile(
        test_m="""
        import pytest

        @pytest.fixture
        def client(ctxbench_example):
            if ctxbench_example["id"] == "q-2":
                raise ConnectionError("no backend")
            return None

        @pytest.mark.ctxbench(dataset="qa.jsonl", max_error_rate=0.1)
        def test_qa(ctxbench_example, ctxbench_record, client):
            ctxbench_record({**ctxbench_example, "response": ctxbench_example["answer"]})
        """
    )
    result = project.runpytest("--ctxbench-json=out.json", *mode_args)
    assert result.ret == 1
    # The breached max_error_rate gate is a failed test of its own
    # (ctxbench::gate[test_m.py::test_qa:max_error_rate]).
    result.assert_outcomes(passed=5, errors=1, failed=1)
    doc = read_json(project.path / "out.json")
    rows = {r["example_id"]: r for r in doc["rows"]}
    assert rows["q-2"]["error"]["type"] == "NotScored"
    assert (
        "test_m.py::test_qa[qa/q-2] failed before recording a row: ConnectionError: no backend"
        in rows["q-2"]["error"]["message"]
    )
    assert doc["summary"]["test_m.py::test_qa"]["error_rate"] == pytest.approx(1 / 6)
    assert [g["passed"] for g in doc["gates"]] == [False]
