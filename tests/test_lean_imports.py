"""A run loads only what it uses: a QA run under the plugin never imports the heavy
evaluators (the code sandbox, sympy's math, ROUGE, IFEval, the judges), the dataset
catalog, JSON Schema validation or the HTTP client, in the controller or a worker."""

from __future__ import annotations

import json

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
