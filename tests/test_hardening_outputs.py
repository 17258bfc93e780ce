"""Outputs never overwrite inputs or each other; unwritable outputs are found before
the first example; a failed write fails the run; files get the user's umask."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from helpers import qa_lines, usage_line

from pytest_context_bench._files import atomic_write_text

RUN = ("--ctxbench-system=systems:echo",)


@pytest.mark.parametrize(
    "args",
    [
        ("--ctxbench-dataset=qa.jsonl", "--ctxbench-json=qa.jsonl"),
        ("--ctxbench-dataset=qa.jsonl", "--ctxbench-save-baseline=qa.jsonl"),
        ("--ctxbench-dataset=qa.jsonl", "--ctxbench-json=sub/../qa.jsonl"),
        ("--ctxbench-dataset=qa.jsonl", "--ctxbench-json=link.jsonl"),
    ],
    ids=["json", "save-baseline", "dotdot", "symlink"],
)
def test_an_output_onto_a_dataset_is_a_usage_error(
    project: pytest.Pytester, args: tuple[str, ...]
) -> None:
    (project.path / "sub").mkdir()
    os.symlink(project.path / "qa.jsonl", project.path / "link.jsonl")
    before = (project.path / "qa.jsonl").read_text()
    line = usage_line(project.runpytest(*args, *RUN))
    assert "qa.jsonl" in line and "input" in line, line
    assert (project.path / "qa.jsonl").read_text() == before


def test_an_output_onto_the_baseline_is_a_usage_error(project: pytest.Pytester) -> None:
    saved = project.runpytest(
        "--ctxbench-dataset=qa.jsonl", *RUN, "--ctxbench-save-baseline=base.json"
    )
    assert saved.ret == 0
    before = (project.path / "base.json").read_text()
    line = usage_line(
        project.runpytest(
            "--ctxbench-dataset=qa.jsonl",
            *RUN,
            "--ctxbench-baseline=base.json",
            "--ctxbench-json=./base.json",
        )
    )
    assert "--ctxbench-json" in line and "--ctxbench-baseline" in line, line
    assert (project.path / "base.json").read_text() == before


def test_two_outputs_onto_one_file_is_a_usage_error(project: pytest.Pytester) -> None:
    line = usage_line(
        project.runpytest(
            "--ctxbench-dataset=qa.jsonl",
            *RUN,
            "--ctxbench-json=out.json",
            "--ctxbench-save-baseline=out.json",
        )
    )
    assert "--ctxbench-json" in line and "--ctxbench-save-baseline" in line, line
    assert not (project.path / "out.json").exists()


def test_an_output_onto_a_data_dir_file_is_a_usage_error(
    project: pytest.Pytester,
) -> None:
    data = project.path / "data"
    (data / "gsm8k").mkdir(parents=True)
    (data / "gsm8k" / "test.jsonl").write_text("{}\n")
    line = usage_line(
        project.runpytest(
            "--ctxbench-dataset=qa.jsonl",
            *RUN,
            "--ctxbench-data-dir=data",
            "--ctxbench-json=data/gsm8k/test.jsonl",
        )
    )
    assert "--ctxbench-data-dir" in line, line
    assert (data / "gsm8k" / "test.jsonl").read_text() == "{}\n"


def test_an_output_onto_a_marked_tests_dataset_is_a_usage_error(
    project: pytest.Pytester, mode_args: list[str]
) -> None:
    project.makefile(".jsonl", other=qa_lines(2))
    project.makepyfile(
        test_marked="""
        import pytest

        @pytest.mark.ctxbench(dataset="other.jsonl")
        def test_qa(ctxbench_example, ctxbench_record):
            ctxbench_record(ctxbench_example["answer"])
        """
    )
    before = (project.path / "other.jsonl").read_text()
    result = project.runpytest("--ctxbench-json=other.jsonl", *mode_args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    out = result.stdout.str() + result.stderr.str()  # under xdist: a collection error
    assert "test_marked.py::test_qa" in out and "other.jsonl" in out
    assert (project.path / "other.jsonl").read_text() == before


def test_an_unwritable_output_directory_is_a_usage_error_before_any_example(
    project: pytest.Pytester,
) -> None:
    line = usage_line(
        project.runpytest(
            "--ctxbench-dataset=qa.jsonl", *RUN, "--ctxbench-json=/sys/r.json"
        )
    )
    assert line.startswith("ERROR: --ctxbench-json"), line
    assert "/sys" in line, line


def test_an_ini_output_onto_an_input_names_the_ini_key(
    project: pytest.Pytester,
) -> None:
    project.makeini("[pytest]\npythonpath = .\nctxbench_json = qa.jsonl\n")
    line = usage_line(project.runpytest("--ctxbench-dataset=qa.jsonl", *RUN))
    assert "ctxbench_json" in line, line


def test_a_write_that_fails_at_the_end_fails_the_run(project: pytest.Pytester) -> None:
    # The directory is writable when the run starts, and replaced by a file
    # before the report is written.
    project.makepyfile(
        breaker="""
        import shutil
        from pathlib import Path

        def pytest_runtest_teardown(item):
            out = Path("out")
            if out.is_dir():
                shutil.rmtree(out)
                out.write_text("now a file")
        """
    )
    (project.path / "out").mkdir()
    result = project.runpytest(
        "-p",
        "breaker",
        "--ctxbench-dataset=qa.jsonl",
        *RUN,
        "--ctxbench-json=out/r.json",
    )
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["*could not write the JSON report to *r.json*"])


@pytest.mark.parametrize("umask", [0o022, 0o002, 0o077])
def test_atomic_write_gives_the_umask_mode(tmp_path: Path, umask: int) -> None:
    old = os.umask(umask)
    try:
        atomic_write_text(tmp_path / "a" / "r.json", "{}\n")
    finally:
        os.umask(old)
    mode = stat.S_IMODE((tmp_path / "a" / "r.json").stat().st_mode)
    assert mode == 0o666 & ~umask


def test_the_report_and_baseline_get_the_umask_mode(project: pytest.Pytester) -> None:
    old = os.umask(0o022)
    try:
        result = project.runpytest(
            "--ctxbench-dataset=qa.jsonl",
            *RUN,
            "--ctxbench-json=r.json",
            "--ctxbench-save-baseline=b.json",
        )
    finally:
        os.umask(old)
    assert result.ret == 0
    for name in ("r.json", "b.json"):
        assert stat.S_IMODE((project.path / name).stat().st_mode) == 0o644, name


def test_junitxml_onto_a_dataset_or_our_report_is_a_usage_error(
    project: pytest.Pytester,
) -> None:
    before = (project.path / "qa.jsonl").read_text()
    line = usage_line(
        project.runpytest("--ctxbench-dataset=qa.jsonl", *RUN, "--junitxml=qa.jsonl")
    )
    assert "--junitxml" in line and "--ctxbench-dataset" in line, line
    assert (project.path / "qa.jsonl").read_text() == before
    line = usage_line(
        project.runpytest(
            "--ctxbench-dataset=qa.jsonl",
            *RUN,
            "--ctxbench-json=r.xml",
            "--junitxml=r.xml",
        )
    )
    assert "--junitxml and --ctxbench-json name the same file" in line, line


def test_an_output_under_a_directory_that_cannot_be_created_is_refused_up_front(
    project: pytest.Pytester,
) -> None:
    # /sys accepts access(W_OK) for root, but no directory can be made in it: the
    # probe really creates one, so the refusal comes before the first example.
    line = usage_line(
        project.runpytest(
            "--ctxbench-dataset=qa.jsonl", *RUN, "--ctxbench-json=/sys/x/r.json"
        )
    )
    assert line.startswith("ERROR: --ctxbench-json: cannot create /sys/x"), line


def test_the_creatability_probe_leaves_nothing_behind(project: pytest.Pytester) -> None:
    result = project.runpytest(
        "--ctxbench-dataset=qa.jsonl",
        *RUN,
        "--ctxbench-json=out/deep/r.json",
        "--ctxbench-markdown=other/r.md",
        "--ctxbench-html=other/r.html",
        "--collect-only",
    )
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    assert not (project.path / "out").exists()
    assert not (project.path / "other").exists()


# Each target in-process; under -n 2 (one warning, none from the workers) an input
# and an output of the run (the baseline is an input, refused as the dataset is,
# by step_summary_clash's loop over the inputs).
@pytest.mark.parametrize(
    "target, mode",
    [
        ("dataset", "inprocess"),
        ("baseline", "inprocess"),
        ("json", "inprocess"),
        ("dataset", "xdist2"),
        ("json", "xdist2"),
    ],
)
def test_a_step_summary_naming_an_input_is_refused_with_one_warning(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, target: str, mode: str
) -> None:
    base = project.runpytest(
        "--ctxbench-dataset=qa.jsonl", *RUN, "--ctxbench-save-baseline=base.json"
    )
    assert base.ret == 0, base.stdout.str()
    path = {"dataset": "qa.jsonl", "baseline": "base.json", "json": "out.json"}[target]
    before = {p: (project.path / p).read_bytes() for p in ("qa.jsonl", "base.json")}
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(project.path / path))
    result = project.runpytest(
        "--ctxbench-dataset=qa.jsonl",
        *RUN,
        "--ctxbench-baseline=base.json",
        "--ctxbench-json=out.json",
        *(["-n", "2"] if mode == "xdist2" else []),
    )
    assert result.ret == 0, result.stdout.str()  # the environment's: the run goes on
    out = result.stdout.str()
    assert out.count("$GITHUB_STEP_SUMMARY=") == 1, out
    assert "the Markdown summary is not appended to it" in out
    for p, data in before.items():
        assert (project.path / p).read_bytes() == data, p
    doc = (project.path / "out.json").read_text()
    assert doc.startswith("{") and doc.rstrip().endswith("}")
    assert "## " not in doc  # no Markdown appended


def test_a_step_summary_naming_a_marked_tests_dataset_is_refused(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    project.makepyfile(
        test_marked="""
        import pytest

        @pytest.mark.ctxbench(dataset="qa.jsonl")
        def test_qa(ctxbench_example, ctxbench_record):
            answer = ctxbench_example["answer"]
            ctxbench_record({**ctxbench_example, "response": answer})
        """
    )
    before = (project.path / "qa.jsonl").read_bytes()
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(project.path / "qa.jsonl"))
    result = project.runpytest()
    assert result.ret == 0, result.stdout.str()
    assert "the Markdown summary is not appended to it" in result.stdout.str()
    assert (project.path / "qa.jsonl").read_bytes() == before


# --- $GITHUB_STEP_SUMMARY on what is not a regular file, or on code (issue 38) ----


def _one_refusal(result: pytest.RunResult) -> str:
    """The run went on (exit 0) and said once why it appended no step summary."""
    out = result.stdout.str()
    assert result.ret == 0, out + result.stderr.str()
    assert out.count("$GITHUB_STEP_SUMMARY=") == 1, out
    assert "the Markdown summary is not appended to it" in out, out
    return " ".join(out.split())


@pytest.mark.parametrize("mode", ["inprocess", "xdist2"])
def test_a_step_summary_on_a_fifo_is_never_opened_and_the_run_ends(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, mode: str
) -> None:
    """A FIFO with no reader: opening it to append would block the run forever,
    after its closing line. A subprocess, so that a hang is a timeout, not a hang."""
    fifo = project.path / "summary.fifo"
    os.mkfifo(fifo)
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(fifo))
    result = project.runpytest_subprocess(
        "--ctxbench-dataset=qa.jsonl",
        *RUN,
        "--ctxbench-json=out.json",
        *(["-n", "2"] if mode == "xdist2" else []),
        timeout=120,
    )
    out = _one_refusal(result)
    assert "is a FIFO (named pipe), not a regular file" in out, out
    assert stat.S_ISFIFO(fifo.stat().st_mode)
    assert (project.path / "out.json").read_text().rstrip().endswith("}")


@pytest.mark.parametrize("target", ["directory", "device"])
def test_a_step_summary_on_a_directory_or_a_device_is_refused(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, target: str
) -> None:
    path = {"directory": str(project.path / "sub"), "device": "/dev/null"}[target]
    (project.path / "sub").mkdir()
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", path)
    out = _one_refusal(project.runpytest("--ctxbench-dataset=qa.jsonl", *RUN))
    kind = {"directory": "a directory", "device": "a character device"}[target]
    assert f"is {kind}, not a regular file" in out, out
    assert os.listdir(project.path / "sub") == []


CONFTEST_PY = """
import pytest

@pytest.fixture
def unused():
    return 1
"""


@pytest.mark.parametrize(
    "target, mode",
    [
        ("system", "inprocess"),
        ("conftest", "inprocess"),
        ("conftest", "xdist2"),
        ("ini", "inprocess"),
        ("hardlink", "inprocess"),
    ],
)
def test_a_step_summary_naming_code_or_config_the_run_reads_is_refused(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, target: str, mode: str
) -> None:
    """The --ctxbench-system module, a conftest.py, pytest's ini file: appending
    the summary would change the code and configuration of the next run."""
    project.makeconftest(CONFTEST_PY)
    project.makefile(".ini", pytest="[pytest]\npythonpath = .\n")
    name = {
        "system": "systems.py",
        "conftest": "conftest.py",
        "ini": "pytest.ini",
        "hardlink": "summary.md",  # the System's module under another name
    }[target]
    if target == "hardlink":
        os.link(project.path / "systems.py", project.path / name)
    before = {p.name: p.read_bytes() for p in project.path.iterdir() if p.is_file()}
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(project.path / name))
    out = _one_refusal(
        project.runpytest_subprocess(
            "--ctxbench-dataset=qa.jsonl",
            *RUN,
            *(["-n", "2"] if mode == "xdist2" else []),
            timeout=120,
        )
    )
    said = {
        "system": "is the source of the module 'systems'",
        "hardlink": "is the source of the module 'systems'",
        "conftest": "is a conftest.py pytest loaded",
        "ini": "is pytest's configuration file",
    }[target]
    assert said in out, out
    for p, data in before.items():
        assert (project.path / p).read_bytes() == data, p


MYSYS_PY = """
class Echo:
    name = "echo"
    def process(self, example):
        return {**example, "response": str(example["answer"])}
"""


@pytest.mark.parametrize("mode", ["inprocess", "xdist2"])
def test_a_step_summary_naming_a_marked_tests_system_module_is_refused(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, mode: str
) -> None:
    """The System's module is imported by the test module only: under -n 2 only
    the workers import it, and the controller, which writes the summary, hears of
    it from them."""
    project.makepyfile(
        mysys=MYSYS_PY,
        test_marked="""
        import pytest
        from mysys import Echo

        @pytest.fixture
        def ctxbench_system():
            return Echo()

        @pytest.mark.ctxbench(dataset="qa.jsonl")
        def test_qa(ctxbench_example, ctxbench_record, ctxbench_system):
            ctxbench_record.run(ctxbench_system)
        """,
    )
    before = (project.path / "mysys.py").read_bytes()
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(project.path / "mysys.py"))
    out = _one_refusal(
        project.runpytest_subprocess(
            "-p",
            "no:randomly",
            *(["-n", "2"] if mode == "xdist2" else []),
            timeout=120,
        )
    )
    assert "is the source of the module 'mysys'" in out, out
    assert (project.path / "mysys.py").read_bytes() == before


MERGE = (
    "import sys; from pytest_context_bench.cli import main;"
    " sys.exit(main(sys.argv[1:]))"
)


@pytest.mark.parametrize("target", ["fifo", "shard"])
def test_merge_never_appends_its_step_summary_to_a_fifo_or_a_shard(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, target: str
) -> None:
    import subprocess
    import sys

    for i in (1, 2):
        done = project.runpytest(
            "--ctxbench-dataset=qa.jsonl",
            *RUN,
            f"--ctxbench-shard={i}/2",
            f"--ctxbench-json=s{i}.json",
        )
        assert done.ret == 0, done.stdout.str()
    path = project.path / ("summary.fifo" if target == "fifo" else "s1.json")
    if target == "fifo":
        os.mkfifo(path)
    before = (project.path / "s1.json").read_bytes()
    env = {**os.environ, "GITHUB_STEP_SUMMARY": str(path)}
    merged = subprocess.run(
        [sys.executable, "-c", MERGE, "merge", "s1.json", "s2.json"],
        cwd=project.path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert merged.returncode == 0, merged.stdout + merged.stderr
    err = " ".join(merged.stderr.split())
    said = "is a FIFO (named pipe), not a regular file" if target == "fifo" else (
        "is one of the shards"
    )
    assert f"ctxbench merge: warning: $GITHUB_STEP_SUMMARY={path} {said}" in err, err
    assert "the Markdown summary is not appended to it" in err
    assert (project.path / "s1.json").read_bytes() == before
