"""Shared helpers for the plugin tests."""

from __future__ import annotations

import json
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: what every inner run adds to its options (``PYTEST_ADDOPTS``): the installed pytest
#: plugins that no inner run uses, blocked. A subprocess run that clears the
#: ``PYTEST_*`` variables (so that the suite's own options do not reach it) sets it
#: to this.
INNER_ADDOPTS = "-p no:hypothesispytest -p no:anyio"

SYSTEMS_PY = '''
class Echo:
    """Answers with the gold answer: every example passes."""
    name = "echo"
    def process(self, example):
        return {**example, "response": str(example["answer"])}

class Half:
    """Right on even-numbered ids, wrong on the others."""
    name = "half"
    def process(self, example):
        n = int(str(example["id"]).split("-")[-1])
        return {**example, "response": str(example["answer"]) if n % 2 == 0 else "no idea"}

class Compressor:
    """Keeps the first 3 words of the context, reports its own usage."""
    name = "compressor"
    def process(self, example):
        short = " ".join(example["context"].split()[:3])
        return {**example, "context": short, "response": str(example["answer"]),
                "api_usage": {"prompt_tokens": 7, "completion_tokens": 2}}

class Boom:
    """Raises on example q-3."""
    name = "boom"
    def process(self, example):
        if example["id"] == "q-3":
            raise RuntimeError("model endpoint exploded")
        return {**example, "response": str(example["answer"])}

class Wrong:
    name = "wrong"
    def process(self, example):
        return {**example, "response": "zzz"}

echo = Echo()
half = Half()
compressor = Compressor()
boom = Boom()
wrong = Wrong()

class Nameless:
    def process(self, example):
        return example

def make_echo():
    return Echo()
'''


def inner_env() -> dict[str, str]:
    """This process's environment for a pytest subprocess started without pytester:
    :data:`INNER_ADDOPTS` added to ``PYTEST_ADDOPTS`` (a module-scoped fixture runs
    before the autouse fixture that adds it for each test)."""
    import os

    env = dict(os.environ)
    opts = env.get("PYTEST_ADDOPTS", "")
    if INNER_ADDOPTS not in opts:
        env["PYTEST_ADDOPTS"] = f"{opts} {INNER_ADDOPTS}".strip()
    return env


def qa_lines(n: int = 6) -> str:
    rows = [
        {
            "id": f"q-{i}",
            "context": f"Document {i} says the capital of country {i} is city {i}.",
            "question": f"What is the capital of country {i}?",
            "answer": f"city {i}",
        }
        for i in range(1, n + 1)
    ]
    return "\n".join(json.dumps(r) for r in rows) + "\n"


def read_json(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text())


def strip_timings(doc: dict[str, Any]) -> dict[str, Any]:
    """The JSON report minus what legitimately differs between runs."""
    doc = json.loads(json.dumps(doc))
    doc.pop("created", None)
    doc.pop("run", None)
    for metrics in doc["summary"].values():
        for key in list(metrics):
            if key.startswith("latency"):
                del metrics[key]
    for row in doc["rows"]:
        row.pop("latency", None)
    # The endpoints' adaptive call budget: only with a budget, and how it went
    # depends on timing (docs/concurrency.md, 'Adaptive budget').
    (doc.get("llm") or {}).pop("budget", None)
    return doc


def dedent(s: str) -> str:
    return textwrap.dedent(s).lstrip()


def usage_line(result: Any) -> str:
    """The one line a usage error (exit 4) printed on stderr (``result``: a
    ``pytest.RunResult``)."""
    import pytest

    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str()
    lines = [line for line in result.stderr.lines if line.strip()]
    assert len(lines) == 1, lines
    return str(lines[0])


def sigint_default() -> None:
    """A ``subprocess.Popen`` ``preexec_fn`` for Ctrl-C tests: SIGINT's default
    handler in the child. A background job of a non-interactive shell ignores SIGINT,
    and a Python started so installs no KeyboardInterrupt handler: the test would
    test nothing."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_DFL)


#: the example project of the repository (example_project/)
EXAMPLE = Path(__file__).resolve().parent.parent / "example_project"


def copy_example(to: Path, source: Path = EXAMPLE) -> Path:
    """A copy of the example project (``source``: the repository's, or a run's) in
    ``to``/example_project, without the repository's own report and caches (a
    run's LLM cache, under .pytest_cache, is kept when ``source`` is a run's)."""
    import shutil

    project = to / "example_project"
    ignore = ["__pycache__"]
    if source == EXAMPLE:
        ignore += ["ctxbench-report.json", ".pytest_cache"]
    shutil.copytree(source, project, ignore=shutil.ignore_patterns(*ignore))
    return project


@dataclass(frozen=True)
class ExampleRun:
    """``pytest -n 2`` in a copy of the example project, as its README shows it."""

    #: the project after the run: its JSON report (ctxbench-report.json) and its LLM
    #: cache (.pytest_cache/d/ctxbench); read only (copy it to change it)
    project: Path
    returncode: int
    stdout: str
    stderr: str


_EXAMPLE_RUNS: dict[str, ExampleRun] = {}


def example_run(folder: Path) -> ExampleRun:
    """The example project's ``pytest -n 2``, run once for the tests that read it
    (test_docs shows its output, test_example_project reads its report and replays
    its cache): once per process, and under xdist once for both workers, in
    ``folder`` (shared by them). A worker that asks while the other is running it
    waits for it: the run is itself two xdist workers, which fill the machine's two
    cores, so that a second run beside it would make both take twice as long."""
    import fcntl

    if "run" in _EXAMPLE_RUNS:
        return _EXAMPLE_RUNS["run"]
    folder.mkdir(parents=True, exist_ok=True)
    done = folder / "run.json"
    with open(folder / "run.lock", "w") as lock:  # the lock ends with the file
        fcntl.flock(lock, fcntl.LOCK_EX)  # (released if its holder dies)
        if done.exists():
            run = ExampleRun(**{**read_json(done), "project": folder / "example_project"})
        else:
            run = _run_example(folder)
            tmp = done.with_suffix(".tmp")
            tmp.write_text(
                json.dumps({"returncode": run.returncode, "stdout": run.stdout, "stderr": run.stderr}),
                encoding="utf-8",
            )
            tmp.replace(done)
    _EXAMPLE_RUNS["run"] = run
    return run


def _run_example(folder: Path) -> ExampleRun:
    import os
    import subprocess
    import sys

    project = copy_example(folder)
    # The user's environment minus what would point the run elsewhere (a real
    # endpoint, a port, the suite's own pytest options, a step summary, the user's
    # download cache: a session fixture runs before the autouse fixture that sets
    # these for each test).
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("PYTEST_", "OPENAI_", "LOCAL_LLM_"))
        and k not in ("CTXBENCH_HUB", "CTXBENCH_SKIP_BAD_RECORDS", "GITHUB_STEP_SUMMARY")
    }
    env["CTXBENCH_CACHE_DIR"] = str(folder / "ctxcache")
    env["PYTEST_ADDOPTS"] = INNER_ADDOPTS
    env["COLUMNS"] = "80"
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-n", "2"],
        cwd=project,
        capture_output=True,
        check=False,
        text=True,
        env=env,
    )
    return ExampleRun(project, done.returncode, done.stdout, done.stderr)
