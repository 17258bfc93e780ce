"""Datasets → pytest items.

Two sources of items, one mechanism (``pytest_generate_tests`` parametrizing the
``ctxbench_example`` fixture indirectly with cheap :class:`ExampleRef` handles):

* a test function marked ``@pytest.mark.ctxbench(dataset=...)``;
* the command line (``--ctxbench-dataset``): a virtual module ``ctxbench`` holding
  one function, ``example``, added to the collection. It hangs under the directory of
  the first path pytest collects, so ``ctxbench_system`` fixtures from the
  ``conftest.py`` files there are visible to it.

Item ids are ``[<dataset>/<example-id>]``, prefixed by ``<system>/`` when systems come
from ``--ctxbench-system``. Datasets are loaded once per process, locally, in a
deterministic order, so every xdist worker collects the same items.
"""

from __future__ import annotations

import types
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

import pytest

from .._text import inert as inert_text
from ..datasets import Dataset, resolve_datasets
from ..datasets.selection import Selection
from ..errors import CtxBenchError
from ..metrics.scores import ASSERT_PASS, ASSERT_SCORE
from .options import MARKER, Settings, marker_kwargs_parsers

__all__ = ["MARKER", "SuiteSpec", "ExampleRef", "CliModule", "DatasetCache"]

CLI_ORIGIN = "cli"
_MARKER_ARGS = marker_kwargs_parsers()
_MEMORY_MARKER = (
    "{where}: memory datasets run from the command line (--ctxbench-dataset with a"
    " MemorySystem) or with evaluate_memory(), not through the marker"
)


@dataclass(frozen=True, eq=False)
class SuiteSpec:
    """How one origin (the CLI run, or one marked test function) is run and gated."""

    origin: str
    datasets: tuple[Dataset, ...]
    default_system: str | None
    selection: Selection
    score_field: str | None
    threshold: float
    limits: dict[str, float | None]
    strict: bool
    text_fields: tuple[str, ...] | None
    evaluators: tuple[Any, ...] | None = None
    #: trials per example (--ctxbench-repeat)
    repeat: int = 1
    evaluator_options: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: --ctxbench-evaluator: added to the evaluators of every dataset
    extra_evaluators: tuple[Any, ...] = ()
    # Per dataset position: the evaluators, built once rather than once per example.
    _evaluators: dict[int, list[Any]] = field(default_factory=dict, repr=False)

    def primary_field(self, ds: Dataset) -> str:
        return self.score_field or ds.primary_score or "f1"

    def evaluators_for(self, ds_pos: int) -> list[Any]:
        evs = self._evaluators.get(ds_pos)
        if evs is None:
            # The family's (or the marker's), --ctxbench-evaluator's, those the
            # examples' fields call for (expected_tool_calls: ToolCallMatch,
            # expected_trajectory: TrajectoryMatch) and the examples' own
            # assertions: the one wiring `ctxbench rescore` uses too.
            from ..evaluators import wired_evaluators

            evs = wired_evaluators(
                self.datasets[ds_pos], self.evaluators, self.extra_evaluators,
                self.evaluator_options,
            )
            self._evaluators[ds_pos] = evs
        return evs

    def suite_label(self, system: str, ds_pos: int | None = None) -> str:
        """The suite a row of ``system`` on dataset ``ds_pos`` belongs to: the
        System's name (command line) or the marked test's; each prompt of a
        promptfoo config with several is a suite of its own, ``<label>:<prompt>``."""
        if self.origin == CLI_ORIGIN:
            label = system
        else:
            label = self.origin if system == self.default_system else f"{self.origin}[{system}]"
        part = None if ds_pos is None else getattr(self.datasets[ds_pos], "suite_part", None)
        return f"{label}:{part}" if part else label

    def suite_labels(self, system: str) -> list[str]:
        """Every suite label ``system`` has in this spec (one per prompt of a
        promptfoo config with several, else one)."""
        return list(dict.fromkeys(self.suite_label(system, i) for i in range(len(self.datasets))))

    def wire(self) -> dict[str, Any]:
        return {
            "origin": self.origin,
            "threshold": self.threshold,
            "score_field": self.score_field,
            "limits": dict(self.limits),
            "strict": self.strict,
            "datasets": [ds.tag for ds in self.datasets],
            "fingerprints": {ds.tag: ds.fingerprint for ds in self.datasets},
            "evaluators": self.evaluator_identities(),
        }

    def evaluator_identities(self) -> dict[str, list[dict[str, str]]]:
        """Dataset tag → the identities of the evaluators that score it
        (:func:`~pytest_context_bench.evaluators.identity.evaluator_identity`)."""
        from ..evaluators.identity import describe_evaluators

        return {
            ds.tag: describe_evaluators(self.evaluators_for(i))
            for i, ds in enumerate(self.datasets)
        }


@dataclass(frozen=True, eq=False, slots=True)
class ExampleRef:
    """A handle on one example: what an item holds until its test runs."""

    spec: SuiteSpec
    ds_pos: int
    index: int
    #: For a memory dataset (one example per conversation), the QA pair: each item
    #: asks one question of a conversation; -1 otherwise.
    qa: int = -1
    #: The trial (1-based) when examples run several times (--ctxbench-repeat); 0
    #: otherwise.
    trial: int = 0

    @property
    def dataset(self) -> Dataset:
        return self.spec.datasets[self.ds_pos]

    @property
    def test_id(self) -> str:
        ds = self.dataset
        base = f"{ds.tag}/{ds.ids[self.index]}"
        if self.qa >= 0:
            base += f"_{self.qa}"
        return f"{base}@{self.trial}" if self.trial else base

    def load(self) -> dict[str, Any]:
        return self.dataset[self.index]

    def __repr__(self) -> str:
        return f"<example {self.test_id}>"


class DatasetCache:
    """Datasets loaded in this process, keyed by (resolved spec, base dir)."""

    def __init__(self) -> None:
        self._cache: dict[tuple[str, str, str | None], list[Dataset]] = {}

    def load(self, spec: str, base: Path, family: str | None = None) -> list[Dataset]:
        """The datasets of one spec: one, or one per prompt of a promptfoo config."""
        key = (spec, str(base), family)
        found = self._cache.get(key)
        if found is None:
            found = resolve_datasets(spec, base_dir=base, family=family)
            self._cache[key] = found
        return found

    def load_all(
        self,
        specs: tuple[str, ...],
        bases: tuple[Path, ...],
        where: str,
        family: str | None = None,
    ) -> tuple[Dataset, ...]:
        """Load each spec; a relative path is looked up in each base in turn."""
        out: list[Dataset] = []
        for spec in specs:
            base = next((b for b in bases if (b / spec).exists()), bases[0])
            try:
                out.extend(self.load(spec, base, family))
            except CtxBenchError as exc:
                raise pytest.UsageError(f"{where}: {exc}") from None
        tags: dict[str, Dataset] = {}
        for ds in out:
            if ds.tag in tags:
                raise pytest.UsageError(
                    f"{where}: two datasets share the tag {ds.tag!r}"
                    f" ({getattr(tags[ds.tag], 'path', ds.tag)} and {getattr(ds, 'path', ds.tag)}); item ids and per-dataset"
                    " results would mix. Rename one file."
                )
            tags[ds.tag] = ds
        return tuple(out)


def check_judge_needed(
    datasets: tuple[Dataset, ...],
    options: dict[str, Any],
    evaluators: tuple[Any, ...] | None,
    where: str,
) -> None:
    """Refuse, before any example runs, examples that need an LLM judge (a ``rubric``
    field, an ``llm-rubric`` assertion) in a run that has none: every such row would
    be an error, or go unscored."""
    from ..evaluators import check_judged

    for ds in datasets:
        wants = {}
        if "rubric" in getattr(ds, "evaluator_fields", ()):
            wants["rubric"] = ""
        if getattr(ds, "judge_assertions", False):
            wants["llm-rubric"] = ""
        if not wants:
            continue
        evs = list(evaluators or ())
        if any(getattr(e, "name", None) == "llm_judge" for e in evs):
            # The marker's own LLMJudge also grades the llm-rubric assertions.
            return
        problem = check_judged(wants, evs, options)
        if problem is not None:
            path = getattr(ds, "path", ds.tag)
            raise pytest.UsageError(
                f"{where}: {ds.tag} ({path}): {problem};"
                " give the judge's endpoint with --ctxbench-judge-url=URL (docs/llm.md,"
                " \"Rubrics\")"
            )


def check_score_field(
    field: str | None,
    datasets: tuple[Dataset, ...],
    options: dict[str, Any],
    where: str,
    extra: tuple[Any, ...] = (),
) -> None:
    """Refuse, before any example runs, a score field that none of the evaluators
    wired for these datasets produces (a typo would leave every row unscored)."""
    from ..evaluators import field_score_keys, score_keys_for

    if not field or extra:
        return  # a user's own evaluator may produce any score
    keys = score_keys_for({ds.family for ds in datasets}, options)
    for ds in datasets:
        keys |= field_score_keys(getattr(ds, "evaluator_fields", ()))
        metrics = getattr(ds, "assertion_metrics", None)
        if metrics is not None:
            keys |= {ASSERT_SCORE, ASSERT_PASS, *metrics}
    if field not in keys:
        raise pytest.UsageError(
            f"{where}: no evaluator of these datasets produces a score named {field!r};"
            f" the scores they produce: {', '.join(sorted(keys))}"
        )


def load_evaluators(settings: Settings) -> tuple[Any, ...]:
    """The --ctxbench-evaluator objects, imported once (a bad path is a usage error
    naming the option)."""
    from ..importing import load_evaluator

    out = []
    for path in settings.evaluators:
        try:
            out.append(load_evaluator(path))
        except CtxBenchError as exc:
            raise pytest.UsageError(f"--ctxbench-evaluator={path}: {exc}") from None
    names = [e.name for e in out]
    for name in names:
        if names.count(name) > 1:
            raise pytest.UsageError(
                f"--ctxbench-evaluator: two evaluators share the name {name!r}; their"
                " details would mix. Give one another name."
            )
    return tuple(out)


def spec_from_settings(settings: Settings, datasets: tuple[Dataset, ...]) -> SuiteSpec:
    extra = load_evaluators(settings)
    check_judge_needed(datasets, settings.evaluator_options, extra, "--ctxbench-dataset")
    check_score_field(
        settings.score_field, datasets, settings.evaluator_options,
        settings.where.get("ctxbench_score_field", "--ctxbench-score-field"),
        extra,
    )
    return SuiteSpec(
        origin=CLI_ORIGIN,
        datasets=datasets,
        default_system=None,
        selection=settings.selection(),
        score_field=settings.score_field,
        threshold=settings.threshold,
        limits=dict(settings.limits),
        strict=settings.strict,
        text_fields=settings.text_fields,
        evaluator_options=settings.evaluator_options,
        repeat=settings.repeat,
        extra_evaluators=extra,
    )


def spec_from_marker(
    marker: pytest.Mark, definition: Any, settings: Settings, cache: DatasetCache
) -> SuiteSpec:
    """Validate the marker's keyword arguments and load its datasets."""
    origin = definition.nodeid.split("[", 1)[0]
    where_base = f"{origin}: @pytest.mark.{MARKER}"
    if marker.args:
        raise pytest.UsageError(
            f"{where_base} takes keyword arguments only (dataset=..., limit=...), given"
            f" positional {marker.args!r}"
        )
    values: dict[str, Any] = {}
    for key, raw in marker.kwargs.items():
        parser = _MARKER_ARGS.get(key)
        if parser is None:
            raise pytest.UsageError(
                f"{where_base} has no keyword argument {key!r}; accepted:"
                f" {', '.join(sorted(_MARKER_ARGS))}"
            )
        values[key] = parser(raw, f"{where_base}({key}=...)")
    if "dataset" not in values:
        raise pytest.UsageError(f"{where_base} needs dataset=... (a path or a registered name)")
    if values.get("task") == "memory":
        raise pytest.UsageError(_MEMORY_MARKER.format(where=where_base))
    module_dir = Path(str(definition.path)).parent
    datasets = cache.load_all(
        values["dataset"],
        (module_dir, definition.config.rootpath),
        where_base,
        values.get("task", settings.task),
    )
    if any(ds.family == "memory" for ds in datasets):
        raise pytest.UsageError(_MEMORY_MARKER.format(where=where_base))
    for ds in datasets:
        if getattr(ds, "notes", ()):
            import warnings

            warnings.warn(pytest.PytestWarning(
                f"{where_base}: {ds.tag} ({getattr(ds, 'path', ds.tag)}): not run here: "
                + "; ".join(ds.notes)))
    check_judge_needed(datasets, settings.evaluator_options, values.get("evaluators"), where_base)
    limits = dict(settings.limits)
    for name in limits:
        if name in values:
            limits[name] = values[name]
    if "evaluators" not in values:  # the marker's own evaluators: checked at the end
        check_score_field(
            values.get("score_field", settings.score_field), datasets,
            settings.evaluator_options,
            f"{where_base}(score_field=...)" if "score_field" in values
            else settings.where.get("ctxbench_score_field", "--ctxbench-score-field"),
        )
    return SuiteSpec(
        origin=origin,
        datasets=datasets,
        default_system=definition.name.split("[", 1)[0],
        selection=Selection(
            values.get("limit", settings.limit),
            values.get("sample", settings.sample),
            values.get("seed", settings.seed),
            values.get("shard", settings.shard),
        ),
        score_field=values.get("score_field", settings.score_field),
        threshold=values.get("threshold", settings.threshold),
        limits=limits,
        strict=values.get("strict", settings.strict),
        text_fields=values.get("text_fields", settings.text_fields),
        evaluators=values.get("evaluators"),
        repeat=values.get("repeat", settings.repeat),
        evaluator_options=settings.evaluator_options,
    )


def example_refs(spec: SuiteSpec) -> list[ExampleRef]:
    refs: list[ExampleRef] = []
    for pos, ds in enumerate(spec.datasets):
        kept = range(len(ds)) if spec.selection.everything else spec.selection.apply(ds.ids)
        if ds.family == "memory":
            # One item per question; --ctxbench-limit counts conversations.
            for i in kept:
                pairs = ds[i].get("qa_pairs")
                count = len(pairs) if isinstance(pairs, list) else 0
                refs.extend(ExampleRef(spec, pos, i, j) for j in range(count))
        else:
            refs.extend(ExampleRef(spec, pos, i) for i in kept)
    if spec.repeat > 1:
        # Trials of one example are adjacent: with --dist loadgroup or loadscope they
        # may still spread over workers; each trial is an independent call.
        refs = [
            ExampleRef(r.spec, r.ds_pos, r.index, r.qa, t)
            for r in refs
            for t in range(1, spec.repeat + 1)
        ]
    return refs


class CliCase:
    """One command-line item: an example, and the System when the CLI names it.

    The command-line items take this single directly parametrized argument (plus the
    ``ctxbench_system`` fixture when no ``--ctxbench-system`` is given) instead of
    three fixtures: fixture setup is most of pytest's per-item cost, and this is the
    plugin's hot path.
    """

    __slots__ = ("ref", "system", "runtime", "recorder")

    def __init__(self, ref: ExampleRef, system: Any, runtime: Any) -> None:
        self.ref = ref
        self.system = system
        self.runtime = runtime
        self.recorder: Any = None

    def __repr__(self) -> str:
        return f"<ctxbench case {self.ref.test_id}>"

    def run(self, fixture_system: Any = None) -> None:
        __tracebackhide__ = True
        runtime = self.runtime
        ahead = runtime.take_call(self)  # started ahead (--ctxbench-concurrency)
        if ahead is not None:
            original = ahead[1]
        else:  # read a block ahead (readahead.py), or None: the recorder reads it
            reader = getattr(runtime, "read_ahead", None)
            original = reader.example(self) if reader is not None else None
        self.recorder = runtime.recorder(self.ref, original=original)
        system = self.system if self.system is not None else fixture_system
        more = getattr(self.runtime, "more_trials", None)
        if more is None or not self.runtime.settings.adaptive:
            self.recorder.run(system, ahead=ahead[0] if ahead is not None else None)
            return
        first: BaseException | None = None
        try:
            self.recorder.run(system, ahead=ahead[0] if ahead is not None else None)
        except (Exception, pytest.fail.Exception) as exc:  # noqa: BLE001 (raised below)
            first = exc  # a failed first trial may still be asked again
        try:
            more(self, system)  # --ctxbench-trials=adaptive (plugin/trials.py)
        except (Exception, pytest.fail.Exception):
            if first is None:
                raise
        if first is not None:
            raise first


def _group_mark(case: CliCase) -> Any:
    """A memory question's ``xdist_group`` mark (None for other examples): grouped
    with its conversation's other questions so that ``--dist loadgroup`` ingests
    each conversation once per system."""
    if case.ref.qa < 0:
        return None
    ds = case.ref.dataset
    return pytest.mark.xdist_group(f"ctxbench:{ds.tag}/{ds.ids[case.ref.index]}")


def _grouped(case: CliCase, test_id: str) -> Any:
    mark = _group_mark(case)
    return pytest.param(case, id=test_id, marks=() if mark is None else mark)


def case_of(item: pytest.Item) -> CliCase | None:
    """The command-line case an item runs (a :class:`CaseItem`, or the virtual
    module's function parametrized with it), or None."""
    if type(item) is CaseItem:
        return item.case
    callspec = getattr(item, "callspec", None)
    case = callspec.params.get("ctxbench_case") if callspec is not None else None
    return case if isinstance(case, CliCase) else None


def _id_escaper(config: pytest.Config) -> Any:
    """How ids made from data are made safe: pytest escapes them itself (``\\x1b``),
    unless its escaping is turned off by the ini option below; then ours does."""
    try:
        off = bool(
            config.getini(
                "disable_test_id_escaping_and_forfeit_all_rights_to_community_support"
            )
        )
    except (ValueError, pytest.UsageError):
        off = False
    return inert_text if off else str


def cli_cases(
    config: pytest.Config, spec: SuiteSpec, systems: tuple[Any, ...], runtime: Any
) -> tuple[list[CliCase], list[str]]:
    """The command line's cases (every System on every example) and their ids."""
    refs = example_refs(spec)
    inert = _id_escaper(config)
    if systems:
        cases = [CliCase(r, s, runtime) for s in systems for r in refs]
        return cases, [inert(f"{c.system.name}/{c.ref.test_id}") for c in cases]
    return [CliCase(r, None, runtime) for r in refs], [inert(r.test_id) for r in refs]


def parametrize(
    metafunc: pytest.Metafunc, spec: SuiteSpec, systems: tuple[Any, ...], runtime: Any
) -> int:
    """Parametrize one function; returns how many items it will have."""
    if "ctxbench_case" in metafunc.fixturenames:  # the command-line items
        cases, ids = cli_cases(metafunc.config, spec, systems, runtime)
        metafunc.parametrize("ctxbench_case", [_grouped(c, i) for c, i in zip(cases, ids)])
        return len(cases)
    refs = example_refs(spec)
    inert = _id_escaper(metafunc.config)
    if systems and "ctxbench_system" in metafunc.fixturenames:
        pairs = [(s, r) for s in systems for r in refs]
        # Added as a parametrize *mark* (our hook runs first): pytest then lets it
        # shadow a conftest `ctxbench_system` fixture that has params=, so the
        # command line wins instead of failing with "duplicate parametrization".
        metafunc.definition.add_marker(
            pytest.mark.parametrize(
                ("ctxbench_system", "ctxbench_example"),
                pairs,
                ids=[inert(f"{s.name}/{r.test_id}") for s, r in pairs],
                indirect=["ctxbench_example"],
            )
        )
        return len(pairs)
    else:
        metafunc.parametrize(
            "ctxbench_example",
            refs,
            ids=[inert(r.test_id) for r in refs],
            indirect=True,
        )
        return len(refs)


# --- the virtual module of the command-line run ----------------------------------


#: the mark of the command line's items (the marker form's name, told apart)
_CLI_MARK = getattr(pytest.mark, MARKER)(_cli=True)


def _cli_example(ctxbench_case: CliCase) -> None:
    """Run the System(s) named on the command line on one example and score it."""
    __tracebackhide__ = True
    ctxbench_case.run()


def _cli_example_fixture(ctxbench_case: CliCase, ctxbench_system: Any) -> None:
    """Run the ``ctxbench_system`` fixture's System(s) on one example and score it."""
    __tracebackhide__ = True
    ctxbench_case.run(ctxbench_system)


def _cli_module(with_fixture: bool) -> types.ModuleType:
    mod = types.ModuleType("ctxbench")
    fn = _cli_example_fixture if with_fixture else _cli_example
    mod.example = _CLI_MARK(fn)  # type: ignore[attr-defined]
    return mod


class CliModule(pytest.Module):
    """The command-line run's items, collected from a module that exists in memory."""

    with_fixture = False

    def _getobj(self) -> types.ModuleType:
        return _cli_module(self.with_fixture)

    def collect(self) -> Iterator[pytest.Item]:
        self.session._fixturemanager.parsefactories(self)
        fn = self.obj.example
        if not self.with_fixture:
            items = self._case_items(fn)
            if items is not None:
                yield from items
                return
        # Called directly (not through python_functions matching) so that a project's
        # own `python_functions` ini cannot hide the benchmark.
        yield from self._genfunctions("example", fn)

    def _case_items(self, fn: Any) -> list[CaseItem] | None:
        """The items as :class:`CaseItem`, or None when pytest's own function items
        are needed: a fixture would apply to them (autouse, ``usefixtures``), a
        ``pytest_generate_tests`` other than ours and pytest's could parametrize
        them, or their ids would need pytest's de-duplication."""
        try:
            from _pytest.compat import ascii_escaped

            # The module stands for its items: pytest reads only the node chain's
            # marks and fixtures from it.
            info = self.session._fixturemanager.getfixtureinfo(
                node=self, func=fn, cls=None  # type: ignore[arg-type]
            )
            closure = set(info.names_closure)
            impls = self.ihook.pytest_generate_tests.get_hookimpls()
        except Exception:  # noqa: BLE001 (pytest's private API changed: its items)
            return None
        if closure != {"ctxbench_case"}:
            return None
        ours = type(self).__module__.rsplit(".", 1)[0]  # pytest_context_bench.plugin
        for impl in impls:  # pytest's own (python, fixtures) and ours only
            where = getattr(impl.plugin, "__name__", None) or type(impl.plugin).__module__
            if where != ours and not str(where).startswith("_pytest."):
                return None
        from . import STATE_KEY, plan

        state = self.config.stash[STATE_KEY]
        spec = state.cli_spec
        assert spec is not None  # the CLI module exists for the command line's suite
        cases, ids = cli_cases(self.config, spec, state.systems, state)
        if _id_escaper(self.config) is str:  # pytest escapes the ids of its items
            ids = [ascii_escaped(i) for i in ids]
        if not cases or len(set(ids)) != len(ids):
            return None  # pytest's empty-parameter-set skip, its de-duplication
        # pytest 9 gives nodes structured ids, a function item's with its
        # parametrization apart (what --lf and --nf compare); pytest 8 strings.
        base = getattr(self, "id", None)
        structured = callable(getattr(base, "child", None))
        items = []
        for case, test_id in zip(cases, ids):
            kwargs: dict[str, Any] = {"name": f"example[{test_id}]", "case": case}
            if structured:
                kwargs["nodeid"] = base.child("example").with_params(test_id)  # type: ignore[union-attr]
            item = CaseItem.from_parent(self, **kwargs)
            item.add_marker(_CLI_MARK)
            group = _group_mark(case)
            if group is not None:
                item.add_marker(group)
            items.append(item)
        plan(state, spec, len(items))
        return items

    def reportinfo(self) -> tuple[Any, int | None, str]:
        return self.path, None, "ctxbench"


class CaseItem(pytest.Item):
    """One command-line case as a plain pytest item.

    pytest's function items set up fixtures for each test, and for a case that
    needs none that machinery is most of pytest's cost per item: these run the case
    directly. Names, node ids, markers and keywords are those the function items
    would have (``example[<system>/<dataset>/<id>]``); the command line uses them
    when no fixture applies to the ``ctxbench`` module and no other plugin
    parametrizes it (:meth:`CliModule._case_items`), else pytest's own items.
    """

    def __init__(self, *, case: CliCase, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.case = case

    def runtest(self) -> None:
        __tracebackhide__ = True
        self.case.run()

    def reportinfo(self) -> tuple[Any, int | None, str]:
        return self.path, None, self.name

    def _traceback_filter(self, excinfo: pytest.ExceptionInfo[BaseException]) -> Any:
        # As pytest's function items: the frames below runtest (a System's, an
        # evaluator's), hidden ones left out, the middle ones short under --tb=auto.
        tb = excinfo.traceback
        if self.config.getoption("fulltrace", False):
            return tb
        code = CaseItem.runtest.__code__
        cut = tb.cut(path=code.co_filename, firstlineno=code.co_firstlineno - 1)
        cut = cut.filter(excinfo) or tb
        if self.config.getoption("tbstyle", "auto") == "auto" and len(cut) > 2:
            middle = [entry.with_repr_style("short") for entry in cut[1:-1]]
            cut = type(cut)([cut[0], *middle, cut[-1]])
        return cut


def anchor_dir(config: pytest.Config) -> Path:
    """The directory whose conftest fixtures the CLI items should see."""
    root = config.rootpath
    for arg in config.args:
        p = Path(str(arg).split("::", 1)[0])
        if not p.is_absolute():
            p = config.invocation_params.dir / p
        p = p.resolve()
        if p.is_file():
            p = p.parent
        if p.is_dir():
            try:
                p.relative_to(root)
            except ValueError:
                continue
            return p
    return root


def build_cli_collector(
    session: pytest.Session, dirs: dict[Any, pytest.Directory], with_fixture: bool
) -> CliModule:
    """The CLI module, placed under the anchor directory's collector.

    The real directory node is used when pytest collected it (conftest fixtures are
    attached to it); otherwise a chain of directory nodes is built so that nodeids
    still nest as they would.
    """
    config = session.config
    anchor = anchor_dir(config)
    parent: Any = dirs.get(anchor)
    if parent is None:
        parent = session
        root = config.rootpath
        if anchor != root:
            current = root
            for part in anchor.relative_to(root).parts:
                current = current / part
                parent = dirs.get(current) or pytest.Dir.from_parent(parent, path=current)
    module = CliModule.from_parent(parent, path=anchor / "ctxbench")
    module.with_fixture = with_fixture
    return module
