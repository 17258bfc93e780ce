"""The pytest plugin (entry point ``ctxbench``; disable with ``-p no:ctxbench``).

The only code that imports pytest. Hooks stay thin: each reads the per-config state
(``config.stash[STATE_KEY]``) and calls one function of ``collection``,
``recording``, ``transport`` or ``session``. The plugin does nothing unless asked:
without a ``--ctxbench-*`` option, an ini key or a ``ctxbench`` marker it adds no
items, no output and no cost beyond parsing its options.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Generator

import pytest

from .. import __version__
from ..inputs import check_unique_names
from ..errors import CtxBenchError
from ..importing import load_system
from ..tokens import get_tokenizer, resolve_tokenizer
from .collection import (
    MARKER,
    CliCase,
    DatasetCache,
    ExampleRef,
    SuiteSpec,
    build_cli_collector,
    parametrize,
    spec_from_marker,
    spec_from_settings,
)
from .options import DATASET, LIST_DATASETS, SYSTEM, TOKENIZER, Settings, addoptions
from .recording import MemoryCache, Recorder, row_status
from .session import USAGE_PREFIX, Controller, CtxBenchWarning, is_worker
from .transport import REPORT_ATTR, WIRE_VERSION, ensure_wire_safe

__all__ = ["CtxBenchWarning", "STATE_KEY"]


@dataclass
class State:
    settings: Settings
    systems: tuple[Any, ...] = ()
    cli_spec: SuiteSpec | None = None
    cache: DatasetCache = field(default_factory=DatasetCache)
    specs: dict[str, SuiteSpec] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    dirs: dict[Any, pytest.Directory] = field(default_factory=dict)
    sent_origins: set[str] = field(default_factory=set)
    memory: MemoryCache = field(default_factory=MemoryCache)
    baseline: Any = None
    controller: Controller | None = None
    #: environment variables set for the loaders → their values before (None: unset)
    saved_env: dict[str, str | None] = field(default_factory=dict)
    _tokenizer: Callable[[str], int] | None = None

    def fingerprints(self) -> dict[str, str]:
        """Dataset tag → content fingerprint, for the datasets this process loaded."""
        specs = list(self.specs.values()) + ([self.cli_spec] if self.cli_spec else [])
        return {ds.tag: ds.fingerprint for spec in specs for ds in spec.datasets}

    def datasets_info(self) -> list[dict[str, Any]]:
        """What the command-line run's datasets are, for the report: tag, family,
        source, size, the selection and the bad records skipped."""
        spec = self.cli_spec
        if spec is None:
            return []
        out = []
        for ds in spec.datasets:
            skipped = list(getattr(ds, "skipped", ()))
            selected = len(ds) if spec.selection.everything else len(spec.selection.apply(ds.ids))
            out.append({
                "tag": ds.tag,
                "family": ds.family,
                "source": str(getattr(ds, "source", getattr(ds, "path", ds.tag))),
                "examples": len(ds),
                "selected": selected,
                "selection": spec.selection.describe(),
                "skipped_records": [s.describe() for s in skipped],
            })
        return out

    def tokenizer(self) -> Callable[[str], int]:
        if self._tokenizer is None:
            spec = self.settings.tokenizer
            self._tokenizer = resolve_tokenizer(spec) if spec else get_tokenizer()
        return self._tokenizer

    def recorder(self, ref: ExampleRef, original: dict[str, Any] | None) -> Recorder:
        return Recorder(ref, self.tokenizer(), self.systems, original, self.memory)


STATE_KEY = pytest.StashKey[State]()
RECORDER_KEY = pytest.StashKey[Recorder]()


def pytest_addoption(parser: pytest.Parser) -> None:
    addoptions(parser)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"{MARKER}(dataset, limit=None, sample=None, seed=0, shard=None, repeat=1,"
        " task=None, score_field=None, threshold=0.7,"
        " min_pass_rate=None, min_mean_score=None, max_cost_of_pass=None,"
        " max_error_rate=None, strict=False, text_fields=None, evaluators=None):"
        " run the test once per example of the dataset(s); the test takes"
        " ctxbench_example and hands its result to ctxbench_record.",
    )
    settings = Settings.from_config(config)
    state = State(settings)
    config.stash[STATE_KEY] = state  # first: unconfigure restores the environment
    # Named datasets' loaders read these (in this process and in xdist workers, which
    # run pytest_configure too); restored at unconfigure.
    env = {
        "CTXBENCH_DATA_DIR": str(settings.data_dir) if settings.data_dir is not None else None,
        "CTXBENCH_HUB": "1" if settings.hub else None,
        "CTXBENCH_SKIP_BAD_RECORDS": "1" if settings.skip_bad_records else None,
    }
    for name, value in env.items():
        if value is not None:
            state.saved_env.setdefault(name, os.environ.get(name))
            os.environ[name] = value
    if settings.list_datasets:
        return
    try:
        systems = [load_system(path) for path in settings.systems]
        if settings.proxies:
            from ..systems import OpenAIProxy

            systems += [
                OpenAIProxy(url, model=settings.model, name=name)
                for url, name in settings.proxies
            ]
        if systems:
            state.systems = tuple(systems)
            check_unique_names(state.systems)
    except CtxBenchError as exc:
        raise pytest.UsageError(f"{settings.where[SYSTEM.dest]}: {_one_line(exc)}") from None
    try:
        # Loaded before collection: the memory its construction needed for a moment
        # is then reused by the items instead of raising the peak. An xdist
        # controller runs no example: it skips the built-in default (which cannot
        # fail) but still checks a tokenizer the user named, so that a bad one is
        # one usage error here rather than a crash in every worker.
        if settings.tokenizer or (settings.datasets and not _distributes(config)):
            state.tokenizer()
    except CtxBenchError as exc:
        raise pytest.UsageError(f"{settings.where[TOKENIZER.dest]}: {_one_line(exc)}") from None
    if settings.datasets:
        datasets = state.cache.load_all(
            settings.datasets,
            (settings.dataset_base,),
            settings.where[DATASET.dest],
            settings.task,
        )
        state.cli_spec = spec_from_settings(settings, datasets)
    if settings.json_path is not None and not is_worker(config):
        parent = settings.json_path.parent
        if parent.exists() and not parent.is_dir():
            raise pytest.UsageError(f"--ctxbench-json: {parent} is not a directory")
    if settings.baseline is not None and not is_worker(config):
        # Read (and checked against the datasets) before any example runs.
        from ..baseline import check_datasets, load_baseline

        try:
            state.baseline = load_baseline(settings.baseline)
            check_datasets(state.baseline, state.fingerprints())
        except CtxBenchError as exc:
            raise pytest.UsageError(f"{settings.where['ctxbench_baseline']}: {_one_line(exc)}") from None
    if not is_worker(config):
        # Registered as a plugin so that it receives pytest_runtest_logreport for every
        # report, including those xdist replays from the workers.
        state.controller = Controller(
            settings, __version__, state.baseline, state.fingerprints, state.datasets_info
        )
        config.pluginmanager.register(state.controller, "ctxbench-controller")


def _one_line(exc: BaseException) -> str:
    """A message for one UsageError line (some libraries' messages span several)."""
    return " ".join(str(exc).split())


def _distributes(config: pytest.Config) -> bool:
    """True in an xdist controller that hands the tests to workers."""
    return not is_worker(config) and getattr(config.option, "dist", "no") != "no"


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config: pytest.Config) -> int | None:
    # Like pytest's own --markers: configure, print, unconfigure, exit 0.
    if not (config.getoption(LIST_DATASETS.dest) or config.getini(LIST_DATASETS.ini)):
        return None
    from ..datasets.listing import datasets_table

    config._do_configure()
    try:
        text = datasets_table(all_configs=config.option.verbose > 0)
    except CtxBenchError as exc:  # a third-party entry point that fails to load
        raise pytest.UsageError(_one_line(exc)) from None
    finally:
        config._ensure_unconfigure()
    config.get_terminal_writer().line(text)
    return 0


def pytest_unconfigure(config: pytest.Config) -> None:
    state = config.stash.get(STATE_KEY, None)
    for name, value in (state.saved_env.items() if state is not None else ()):
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value
    if state is not None and state.controller is not None:
        config.pluginmanager.unregister(state.controller)


def pytest_report_header(config: pytest.Config) -> list[str] | None:
    state = config.stash.get(STATE_KEY, None)
    if state is None or state.cli_spec is None:
        return None
    selection = state.cli_spec.selection

    def size(d: Any) -> str:
        if selection.everything:
            text = f"{len(d)}"
        else:
            text = f"{len(selection.apply(d.ids))} of {len(d)}: {selection.describe()}"
        skipped = getattr(d, "skipped", None)
        if skipped:
            text += f"; {len(skipped)} bad records skipped"
        return text

    ds = ", ".join(f"{d.tag} ({size(d)})" for d in state.cli_spec.datasets)
    systems = ", ".join(s.name for s in state.systems) or "ctxbench_system fixture"
    return [f"ctxbench: datasets {ds}; systems {systems}"]


def _defer(config: pytest.Config, state: State, message: str) -> None:
    """Report a collection-time usage error once collection is over.

    In-process it becomes one ``pytest.UsageError`` (exit 4) from
    ``pytest_collection_modifyitems``. An xdist worker cannot raise UsageError (the
    controller would show an INTERNALERROR), so there it is a collection error whose
    text is the message; every worker then drops all its items (they all hit the same
    error), and the controller turns the run's exit status into 4.
    """
    if message not in state.errors:
        state.errors.append(message)
    if is_worker(config):
        raise pytest.Collector.CollectError(USAGE_PREFIX + message)


def _uses_default_system_fixture(metafunc: pytest.Metafunc) -> bool:
    # Private pytest API, read defensively: when it is missing we fall back to the
    # default fixture's own runtime error.
    defs: Any = getattr(metafunc, "_arg2fixturedefs", {}).get("ctxbench_system")
    if not defs:
        return False
    default = getattr(ctxbench_system, "__wrapped__", ctxbench_system)
    return getattr(defs[-1], "func", None) is default


@pytest.hookimpl(tryfirst=True)
def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    state = metafunc.config.stash.get(STATE_KEY, None)
    if state is None:
        return
    marker = metafunc.definition.get_closest_marker(MARKER)
    takes_example = "ctxbench_example" in metafunc.fixturenames
    nodeid = metafunc.definition.nodeid
    if marker is not None and marker.kwargs.get("_cli"):
        spec = state.cli_spec
        assert spec is not None
        if not state.systems and _uses_default_system_fixture(metafunc):
            _defer(
                metafunc.config,
                state,
                f"{DATASET.flag} needs a System: pass {SYSTEM.flag}=package.module:obj or"
                " define a `ctxbench_system` fixture in conftest.py",
            )
            return
    elif marker is None:
        if takes_example:
            _defer(metafunc.config, state, f"{nodeid} takes ctxbench_example but has no @pytest.mark.{MARKER}(dataset=...) marker")
        return
    elif not takes_example:
        _defer(metafunc.config, state, f"{nodeid} is marked @pytest.mark.{MARKER} but does not take the ctxbench_example fixture")
        return
    else:
        try:
            spec = spec_from_marker(marker, metafunc.definition, state.settings, state.cache)
        except pytest.UsageError as exc:
            _defer(metafunc.config, state, str(exc))
            return
    state.specs[spec.origin] = spec
    parametrize(metafunc, spec, state.systems, state)


@pytest.hookimpl(tryfirst=True)
def pytest_make_collect_report(collector: pytest.Collector) -> None:
    # Remember the directory nodes pytest collects: the CLI items hang under the real
    # one, because since pytest 9.1 conftest fixtures are scoped to that node object.
    if isinstance(collector, pytest.Directory):
        state = collector.config.stash.get(STATE_KEY, None)
        if state is not None and state.cli_spec is not None:
            state.dirs[collector.path] = collector


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    state = config.stash.get(STATE_KEY, None)
    if state is None:
        return
    if state.cli_spec is not None:
        collector = build_cli_collector(session, state.dirs, with_fixture=not state.systems)
        items.extend(session.genitems(collector))
    if state.errors:
        if is_worker(config):
            items.clear()  # the collection error was reported; run nothing
            return
        raise pytest.UsageError(*state.errors)


@pytest.fixture
def ctxbench_example(request: pytest.FixtureRequest) -> dict[str, Any]:
    """The example this test runs on (a fresh dict); see ``@pytest.mark.ctxbench``."""
    ref = getattr(request, "param", None)
    if not isinstance(ref, ExampleRef):
        pytest.fail(
            f"ctxbench_example is only available in tests marked @pytest.mark.{MARKER}(dataset=...)",
            pytrace=False,
        )
    state = request.config.stash[STATE_KEY]
    request.node.stash[RECORDER_KEY] = state.recorder(ref, None)
    return ref.load()


@pytest.fixture
def ctxbench_record(request: pytest.FixtureRequest, ctxbench_example: dict[str, Any]) -> Recorder:
    """Scores the processed example: ``ctxbench_record({**ctxbench_example, "response": text})``."""
    recorder: Recorder = request.node.stash[RECORDER_KEY]
    recorder._start = time.perf_counter()
    return recorder


@pytest.fixture
def ctxbench_system(request: pytest.FixtureRequest) -> Any:
    """The System(s) from ``--ctxbench-system``; override it in conftest.py to build your own."""
    state = request.config.stash[STATE_KEY]
    if not state.systems:
        pytest.fail(
            f"no System configured: pass {SYSTEM.flag}=package.module:obj or define a"
            " `ctxbench_system` fixture in conftest.py",
            pytrace=False,
        )
    return state.systems[0] if len(state.systems) == 1 else list(state.systems)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    if call.when == "call":
        recorder = item.stash.get(RECORDER_KEY, None)
        if recorder is not None:
            del item.stash[RECORDER_KEY]  # items live all session; rows need not
            _attach(report, recorder, item.config.stash[STATE_KEY])
        else:
            callspec = getattr(item, "callspec", None)
            case = callspec.params.get("ctxbench_case") if callspec is not None else None
            if isinstance(case, CliCase) and case.recorder is not None:
                recorder, case.recorder = case.recorder, None
                _attach(report, recorder, item.config.stash[STATE_KEY])
    return report


def _attach(report: pytest.TestReport, recorder: Recorder, state: State) -> None:
    spec = recorder.spec
    if not recorder.rows:
        if report.passed:
            report.outcome = "failed"
            report.longrepr = (
                "the test took ctxbench_example but never called"
                " ctxbench_record(processed): nothing was scored"
            )
        return
    rows: list[dict[str, Any]] = []
    statuses = []
    for sys_pos, row in recorder.rows:
        status = row_status(row, spec.threshold)
        statuses.append(status)
        rows.append(
            {
                "suite": spec.suite_label(row.system),
                "origin": spec.origin,
                "order": [sys_pos, recorder.ref.ds_pos, recorder.ref.index,
                          recorder.ref.qa, recorder.ref.trial],
                "status": status,
                # to_dict() yields exact builtins (floats, ints, strs) except for
                # metadata, which is checked at the boundary.
                "row": {**row.to_dict(), "metadata": ensure_wire_safe(row.metadata)},
            }
        )
    overall = next((s for s in ("error", "below", "unscored") if s in statuses), "pass")
    if overall == "below" and spec.strict and report.passed:
        report.outcome = "failed"
        lines = [
            f"{r.system}: {r.metadata.get('score_field')} = {r.scores.get(r.metadata.get('score_field', 'f1'), float('nan')):.4f}"
            f" < threshold {spec.threshold:g}"
            for (_, r), st in zip(recorder.rows, statuses)
            if st == "below"
        ]
        report.longrepr = "below threshold (--ctxbench-strict):\n" + "\n".join(lines)
    payload: dict[str, Any] = {"v": WIRE_VERSION, "status": overall, "rows": rows}
    if spec.origin not in state.sent_origins:
        # How the suite is scored and gated travels once per process (the controller
        # keeps the first copy it sees), not on every report.
        state.sent_origins.add(spec.origin)
        payload["suite"] = ensure_wire_safe(spec.wire())
    setattr(report, REPORT_ATTR, payload)


def pytest_report_teststatus(report: pytest.TestReport, config: pytest.Config) -> Any:
    if report.when != "call":
        return None
    payload = getattr(report, REPORT_ATTR, None)
    if not isinstance(payload, dict):
        return None
    status = payload.get("status")
    if status == "error" and report.failed:
        return "error", "E", "ERROR"
    if status == "below" and report.passed:
        return "below threshold", "b", ("BELOW", {"yellow": True})
    return None


@pytest.hookimpl(wrapper=True)
def pytest_runtestloop(session: pytest.Session) -> Generator[None, object, object]:
    try:
        return (yield)
    finally:
        state = session.config.stash.get(STATE_KEY, None)
        if state is not None and state.controller is not None:
            state.controller.finish(session)


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    state = config.stash.get(STATE_KEY, None)
    if state is not None and state.controller is not None:
        state.controller.terminal_summary(terminalreporter)
