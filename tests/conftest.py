from __future__ import annotations

import os

import httpcore  # noqa: F401  (see below)
import pytest

from browser import browser  # noqa: F401 (the headless Chromium fixture)
from helpers import INNER_ADDOPTS, SYSTEMS_PY, ExampleRun, example_run, qa_lines

pytest_plugins = ["pytester"]

# httpx imports httpcore on first use and maps httpcore's exceptions to its own with a
# table built then. An in-process pytester run forgets the modules first imported
# during it, so a later test would get a second httpcore whose exceptions that table
# does not know (a raw httpcore.ConnectError instead of httpx.ConnectError). Imported
# here, before any inner run, httpcore is the same module for the whole session.

# In-process, xdist with no workers, and two workers: the same run must give the same
# rows, summary and gates in all three (the syrupy / pytest-cov pattern).
MODES = {"inprocess": [], "xdist0": ["-n", "0"], "xdist2": ["-n", "2"]}

# INNER_ADDOPTS (helpers.py): what every inner run adds to its options.


@pytest.fixture(autouse=True)
def _private_dataset_cache(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No test reads or writes the user's download cache, or downloads."""
    monkeypatch.setenv("CTXBENCH_CACHE_DIR", str(tmp_path_factory.mktemp("ctxcache")))
    monkeypatch.delenv("CTXBENCH_HUB", raising=False)
    monkeypatch.delenv("CTXBENCH_SKIP_BAD_RECORDS", raising=False)
    # The summary table fits the terminal (split or stacked when narrow): tests that
    # match whole table rows get a wide one, whatever terminal runs the suite; the
    # width tests set their own.
    monkeypatch.setenv("COLUMNS", "250")
    # A CI runner's step summary is not for the test suite's inner runs.
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    # The inner runs (subprocesses) load no plugin they do not use: hypothesis' and
    # anyio's cost each pytest process about 0.4 s of CPU at start-up (1.5 s per run
    # under -n 2), a third of what a small inner run costs.
    addopts = os.environ.get("PYTEST_ADDOPTS", "")
    monkeypatch.setenv("PYTEST_ADDOPTS", f"{addopts} {INNER_ADDOPTS}".strip())


@pytest.fixture
def pytester(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """pytester's own, whose inner runs block the plugins they do not use (pytester
    clears ``PYTEST_ADDOPTS``; this sets it again, to :data:`INNER_ADDOPTS` only)."""
    monkeypatch.setenv("PYTEST_ADDOPTS", INNER_ADDOPTS)
    return pytester


@pytest.fixture(params=list(MODES), ids=list(MODES))
def mode_args(request: pytest.FixtureRequest) -> list[str]:
    return list(MODES[request.param])


#: The modes of a test whose behaviour under ``-n 2`` another test covers (its
#: docstring names which): ``-n 2`` costs three processes per inner run.
SERIAL_MODES = {k: v for k, v in MODES.items() if k != "xdist2"}


@pytest.fixture(params=list(SERIAL_MODES), ids=list(SERIAL_MODES))
def serial_mode_args(request: pytest.FixtureRequest) -> list[str]:
    return list(SERIAL_MODES[request.param])


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    """A project with qa.jsonl (6 examples) and systems.py importable."""
    pytester.makefile(".jsonl", qa=qa_lines())
    pytester.makepyfile(systems=SYSTEMS_PY)
    pytester.makeini("[pytest]\npythonpath = .\n")
    return pytester



@pytest.fixture(scope="session", name="example_run")
def _example_run(tmp_path_factory: pytest.TempPathFactory) -> ExampleRun:
    """The example project's ``pytest -n 2`` (helpers.example_run): one run for the
    session, shared by the xdist workers through a folder beside their basetemps."""
    run = os.environ.get("PYTEST_XDIST_TESTRUNUID")
    if run is None:
        return example_run(tmp_path_factory.mktemp("example-run"))
    return example_run(tmp_path_factory.getbasetemp().parent / f"example-run-{run}")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "inner_run: the test runs pytest itself (pytester, or a pytest subprocess):"
        " `-m 'not inner_run'` is the fast subset (see README.md)",
    )


#: test modules whose tests start pytest in a subprocess without the pytester fixture
_INNER_RUN_MODULES = frozenset({"test_docs.py", "test_example_project.py"})


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark the tests that run pytest itself (``inner_run``): the slow part of the
    suite, and the only part that tests the plugin inside a pytest run."""
    for item in items:
        if "pytester" in getattr(item, "fixturenames", ()) or item.path.name in _INNER_RUN_MODULES:
            item.add_marker(pytest.mark.inner_run)
