from __future__ import annotations

import pytest

from helpers import SYSTEMS_PY, qa_lines

pytest_plugins = ["pytester"]

# In-process, xdist with no workers, and two workers: the same run must give the same
# rows, summary and gates in all three (the syrupy / pytest-cov pattern).
MODES = {"inprocess": [], "xdist0": ["-n", "0"], "xdist2": ["-n", "2"]}


@pytest.fixture(params=list(MODES), ids=list(MODES))
def mode_args(request: pytest.FixtureRequest) -> list[str]:
    return list(MODES[request.param])


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    """A project with qa.jsonl (6 examples) and systems.py importable."""
    pytester.makefile(".jsonl", qa=qa_lines())
    pytester.makepyfile(systems=SYSTEMS_PY)
    pytester.makeini("[pytest]\npythonpath = .\n")
    return pytester


