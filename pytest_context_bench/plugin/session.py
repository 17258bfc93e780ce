"""Controller-only state: gather rows from reports, aggregate, gate, report.

Workers (``config.workerinput`` exists) never aggregate, gate or write: they only
attach rows to their reports, which xdist ships to the controller. In-process runs
take the same path, with the controller being the only process.
"""

from __future__ import annotations

import os
import platform
import sys
from pathlib import Path
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pytest

from .._text import inert
from .llmcache import ATTEMPTS_KEY, BUDGET_KEY, UNATTRIBUTED_KEY
from .manifest import WORKEROUTPUT_KEY, account, merge_manifest
from .options import GATE_PARTIAL, Settings
from .outputs import STEP_SUMMARY_KEY
from .transport import REPORT_ATTR, WIRE_VERSION, read_payload

if TYPE_CHECKING:
    from ..report import RunReport
    from ..report.run import Record, SuiteInfo
    from ..report.verdicts import Verdict
    from ..verdict import Verdict as Judgement

# The report, its writers and the verdicts are imported where they are used: every
# pytest run registers a Controller, and one that never sees a ctxbench row must
# not load them (docs/overhead.md).

__all__ = ["Controller", "is_worker", "CtxBenchWarning", "USAGE_PREFIX", "log_verdicts"]

#: Starts the text of a collection error that is really a usage error found by an
#: xdist worker (a bad marker argument): the controller recognises it by this.
USAGE_PREFIX = "usage error (pytest-context-bench): "

# What stays on a report once its rows are consumed: one shared, never-mutated dict
# per status rather than one per report (pytest keeps every report until the end).
_SLIM = {s: {"v": WIRE_VERSION, "status": s} for s in ("pass", "below", "error", "unscored")}


class CtxBenchWarning(pytest.PytestWarning):
    """A non-fatal problem noticed by pytest-context-bench's plugin.

    Importable as ``pytest_context_bench.plugin.CtxBenchWarning`` (its
    ``__module__``): xdist rebuilds a worker's warning on the controller by that
    name (``pytest_context_bench`` itself stays free of pytest)."""

    __module__ = "pytest_context_bench.plugin"


def is_worker(config: pytest.Config) -> bool:
    """True in a pytest-xdist worker process."""
    return hasattr(config, "workerinput")


#: (Record, SuiteInfo, EvalRow), imported by the first row that arrives
_ROW_TYPES: tuple[Any, Any, Any] | None = None


def _row_types() -> tuple[Any, Any, Any]:
    global _ROW_TYPES
    if _ROW_TYPES is None:
        from ..report.run import Record, SuiteInfo
        from ..results import EvalRow

        _ROW_TYPES = (Record, SuiteInfo, EvalRow)
    return _ROW_TYPES


class Controller:
    """Collects rows (``pytest_runtest_logreport``) and finishes the run once."""

    def __init__(
        self,
        settings: Settings,
        version: str,
        baseline: Any = None,
        fingerprints: Any = None,
        datasets_info: Any = None,
    ) -> None:
        self.settings = settings
        self._datasets_info = datasets_info
        self.version = version
        self.baseline = baseline
        self._fingerprints = fingerprints
        self.comparison: Any = None
        self.verdict: Judgement | None = None
        self.baseline_error: str | None = None
        self.records: list[Record] = []
        #: baseline rows scored again by the run's evaluators (plugin/rescoring.py)
        self.rescored: list[dict[str, Any]] = []
        self.infos: dict[str, SuiteInfo] = {}
        self.lost: list[str] = []
        self._failed: list[tuple[str, bool, str]] = []
        #: the examples collected (see manifest.py); from this process or the workers
        self.manifest: dict[str, Any] = {}
        #: called once, when the first ctxbench report arrives (or None)
        self.on_first_payload: Callable[[], None] | None = None
        self._reported: set[str] = set()
        self._skipped: set[str] = set()
        #: why the gates were not applied (partial or interrupted run), or None
        self.gates_skipped: str | None = None
        #: suite label → why its gates are not applied (a partial suite in a run
        #: whose other suites are complete and gated)
        self.partial_suites: dict[str, str] = {}
        self.completeness: dict[str, Any] = {}
        self.report: RunReport | None = None
        self.json_error: str | None = None
        self.usage_errors: list[str] = []
        #: Lines that fail the run whatever the gates say (a score field no row
        #: produced, a selection that keeps nothing), and lines that only inform.
        self.problems: list[str] = []
        self.notes: list[str] = []
        self.verdicts: list[Verdict] = []
        #: "HTML report: PATH" lines, and the views that could not be written
        self.written: list[str] = []
        self.view_errors: list[str] = []
        #: the run's LLM cache (set by the plugin) and what it and the calls did
        self.llm_cache: Any = None
        #: () -> the code sandbox's isolation, or None when no dataset runs code
        self.sandbox_info: Callable[[], dict[str, Any] | None] | None = None
        self.llm: dict[str, Any] | None = None
        #: usage of LLM requests whose example was unknown (calls.py), this
        #: process's and the workers'
        self.unattributed: list[dict[str, Any]] = []
        #: endpoint -> its adaptive call budget, summed over the processes that
        #: called it (concurrency.EndpointBudget.summary)
        self.budgets: dict[str, dict[str, int]] = {}
        #: endpoint -> the requests sent to it and how they were answered, summed
        #: over the processes (calls.take_attempts)
        self.attempts: dict[str, dict[str, int]] = {}
        #: why an xdist worker found that $GITHUB_STEP_SUMMARY names code it imported
        self.worker_step_summary: str | None = None
        #: why the step summary was refused at the end of the run (warned once, at
        #: session finish), or None
        self.step_summary_refused: str | None = None

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        # Under xdist the workers' collection reports are replayed here.
        if report.failed and str(report.longrepr).startswith(USAGE_PREFIX):
            self.usage_errors.append(str(report.longrepr))

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if self.usage_errors:
            session.exitstatus = pytest.ExitCode.USAGE_ERROR
        if self.unattributed:
            # Once per run, whatever the number of such requests and of workers.
            import warnings

            from ..transports import UNATTRIBUTED_FIX

            try:
                warnings.warn(CtxBenchWarning(UNATTRIBUTED_FIX), stacklevel=1)
            except Warning:
                pass  # -W error: the summary line says it; the run must not crash
        from .llmcache import mismatch_warning

        mismatch = mismatch_warning(self.llm)
        if mismatch is not None:
            import warnings

            try:
                warnings.warn(CtxBenchWarning(mismatch), stacklevel=1)
            except Warning:
                pass  # -W error: the JSON report says it; the run must not crash
        if self.step_summary_refused is not None:
            import warnings

            try:
                warnings.warn(
                    CtxBenchWarning(self.step_summary_refused), stacklevel=1
                )
            except Warning:
                pass  # -W error: nothing was appended; the run must not crash

    def add_manifest(self, manifest: Any) -> None:
        if isinstance(manifest, dict):
            merge_manifest(self.manifest, manifest)

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        # A crashed worker sends no workeroutput; the others' manifests suffice
        # (every worker collects the same items).
        output = getattr(node, "workeroutput", {})
        self.add_manifest(output.get(WORKEROUTPUT_KEY))
        loose = output.get(UNATTRIBUTED_KEY)
        if isinstance(loose, list):
            self.unattributed.extend(e for e in loose if isinstance(e, dict))
        self.add_budgets(output.get(BUDGET_KEY))
        from ..calls import add_attempts

        add_attempts(self.attempts, output.get(ATTEMPTS_KEY))
        said = output.get(STEP_SUMMARY_KEY)
        if isinstance(said, str) and self.worker_step_summary is None:
            self.worker_step_summary = said

    def add_budgets(self, budgets: Any) -> None:
        """Add a process's endpoint budgets: each figure is summed over the
        processes (an xdist worker's ceiling and budget are its shares)."""
        if not isinstance(budgets, dict):
            return
        for endpoint, figures in budgets.items():
            if not isinstance(figures, dict):
                continue
            total = self.budgets.setdefault(str(endpoint), {})
            for key, value in figures.items():
                if isinstance(value, int) and not isinstance(value, bool):
                    total[key] = total.get(key, 0) + value

    @property
    def unevaluated(self) -> list[str]:
        """Baseline suites a max-drop gate compared no example of."""
        return self.verdict.unevaluated if self.verdict is not None else []

    @property
    def changed_examples(self) -> list[str]:
        """Per suite, how the examples differ (--ctxbench-require-same-examples)."""
        return self.verdict.changed_examples if self.verdict is not None else []

    @property
    def gate_enforced(self) -> bool:
        return not self.settings.no_gate and self.gates_skipped is None

    def fingerprints(self) -> dict[str, str]:
        """Dataset tag → fingerprint: from this process and from every suite's reports."""
        out = dict(self._fingerprints()) if self._fingerprints else {}
        for info in self.infos.values():
            out.update(info.fingerprints)
        return out

    @pytest.hookimpl(trylast=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        payload = read_payload(report)
        if payload is None:
            if report.passed:
                return  # not a row, and nothing went wrong (most setups and teardowns)
            if report.nodeid.startswith("ctxbench::"):  # report.verdicts.VERDICT_PREFIX
                from ..report.verdicts import is_verdict

                if is_verdict(report.nodeid):
                    return  # our own verdicts (never with a payload), logged by finish()
        if payload is not None and self.on_first_payload is not None:
            first, self.on_first_payload = self.on_first_payload, None
            first()
        manifest = payload.pop("manifest", None) if payload is not None else None
        if isinstance(manifest, dict):
            # A worker's manifest, sent with its first setup report so that an
            # interrupted run still knows what was planned (plugin/manifest.py).
            self.add_manifest(manifest)
        if payload is None:
            # Maybe a ctxbench item that failed before it could record (setup error,
            # a crashed xdist worker, whose report carries no keywords): decided in
            # finish(), once every origin is known.
            if report.failed and report.when != "teardown":
                self._failed.append(
                    (report.nodeid, "ctxbench" in report.keywords, str(report.longrepr))
                )
            elif report.skipped:
                self._skipped.add(report.nodeid)
            return
        Record, SuiteInfo, EvalRow = _row_types()  # noqa: N806 (classes)
        suite = payload.get("suite")
        if suite is not None and str(suite["origin"]) not in self.infos:
            self.infos[str(suite["origin"])] = SuiteInfo.from_wire(suite)
        if "rows" not in payload:  # a setup report announcing its suite's gates
            # Not a row: the example is still expected (its worker may crash in the
            # call phase, which then sends no call report and the example must be
            # accounted as lost, not as received).
            if report.failed:
                self._failed.append(
                    (report.nodeid, "ctxbench" in report.keywords, str(report.longrepr))
                )
            return
        self._reported.add(report.nodeid)
        # The baseline's rows of these examples scored again (plugin/rescoring.py).
        self.rescored.extend(payload.get("rescored", ()))
        for item in payload["rows"]:
            self.records.append(
                Record(
                    suite=str(item["suite"]),
                    origin=str(item["origin"]),
                    order=tuple(int(x) for x in item["order"]),
                    status=str(item["status"]),
                    row=EvalRow.from_dict(item["row"]),
                    io=item.get("io"),
                )
            )
        # The terminal reporter keeps every report for the whole session: once the
        # rows are ours, leave only what pytest_report_teststatus reads again.
        setattr(report, REPORT_ATTR, _SLIM.get(payload["status"]) or {"v": payload["v"], "status": payload["status"]})

    def _gates_configured(self) -> bool:
        """A gate was asked for: then the run is gated even with no row at all."""
        return bool(self.settings.max_drops and self.baseline is not None) or any(
            v is not None for info in self.infos.values() for v in info.limits.values()
        )

    def expect(self, suite: dict[str, Any]) -> None:
        """A suite known before any row arrives (the command line's, on the
        controller): its gates are decided even when no example produces a row."""
        from ..report.run import SuiteInfo

        self.infos.setdefault(str(suite["origin"]), SuiteInfo.from_wire(suite))

    def _check_selection(self, session: pytest.Session) -> None:
        """A command-line run whose selection keeps no example fails in one line,
        unless --ctxbench-allow-empty says that is expected."""
        info = self._datasets_info() if self._datasets_info else []
        if not info or any(d["selected"] for d in info):
            return
        what = ", ".join(
            f"{d['tag']} ({d['examples']} example{'' if d['examples'] == 1 else 's'})"
            for d in info
        )
        text = f"the selection ({info[0]['selection']}) keeps no example of {what}: nothing was run"
        if self.settings.allow_empty:
            self.notes.append(f"{text} (allowed by --ctxbench-allow-empty)")
        else:
            self.problems.append(
                f"FAILED {text}; pass --ctxbench-allow-empty to let such a run pass"
            )
            session.testsfailed += 1

    def _check_score_fields(self, session: pytest.Session) -> None:
        """A score field that rows were scored with but none produced is a typo (or an
        evaluator that never ran): every row would be unscored and the run green."""
        produced: dict[str, set[str]] = {}
        for rec in self.records:
            produced.setdefault(rec.origin, set()).update(rec.row.scores)
        for origin, keys in produced.items():
            info = self.infos.get(origin)
            field = info.score_field if info is not None else None
            if not field or not keys or field in keys:
                continue
            where = self.settings.where.get("ctxbench_score_field", "--ctxbench-score-field")
            if origin != "cli":
                where = "score_field"
            self.problems.append(
                f"FAILED {origin}: no example produced the score field {field!r} ({where});"
                f" the scores produced: {', '.join(sorted(keys))}"
            )
            session.testsfailed += 1

    def finish(self, session: pytest.Session, stop: str | None = None) -> None:
        """Aggregate, gate and write, once.

        :param stop: why the run loop ended early (an exception: Ctrl-C, xdist's
            ``-x``), or ``None``; ``session.shouldfail``/``shouldstop`` are read too.
        """
        if self.report is not None:
            return
        option = session.config.option
        if any(getattr(option, name, False) for name in ("collectonly", "setuponly", "setupplan")):
            return  # nothing was meant to run: no rows, no verdict
        interrupted = stop is not None and not stop.startswith("stopping after")
        stopped = stop or session.shouldfail or session.shouldstop
        self._account(stopped=bool(stopped))
        if not self.records and not self.lost and not session.testscollected:
            # pytest's own selection (-k, -m, --lf, a path) left nothing to run: that
            # is a choice, not a benchmark that measured nothing.
            return
        self._check_selection(session)
        if (
            not self.records
            and not self.lost
            and not self._gates_configured()
            and not interrupted
        ):
            return
        from ..report import build_run_report
        from ..report.verdicts import comparison_verdicts, gate_verdicts
        from ..verdict import judge

        lost = self.lost + [d["nodeid"] for d in self._lost_rows]
        self.report = build_run_report(self.records, self.infos, lost)
        self._completeness(interrupted, str(stopped) if stopped else None)
        if self.completeness.get("gates_skipped"):
            self.gates_skipped = str(self.completeness["gates_skipped"])
        from ..calls import add_attempts, take_attempts, take_unattributed
        from .llmcache import llm_summary

        self.unattributed.extend(take_unattributed())
        add_attempts(self.attempts, take_attempts())
        self.llm = llm_summary(
            (r.row for r in self.records),
            self.llm_cache,
            self.settings,
            self.unattributed,
            self.attempts,
        )
        if self.llm is not None and self.budgets:
            self.llm["budget"] = {k: dict(v) for k, v in sorted(self.budgets.items())}
        from .llmcache import auto_unknown

        unknown = auto_unknown(self.llm, self.settings)
        if unknown is not None:
            # --ctxbench-price=auto and a model it cannot price: never a silent $0.
            self.problems.append(unknown)
            session.testsfailed += 1
        self._check_score_fields(session)
        labels = self._labels()
        if labels is None and self.settings.judge_labels is not None:
            session.testsfailed += 1  # the labels became unreadable during the run
        # Marked tests' datasets are known only now (under xdist the controller
        # never loads them): a changed one voids the comparison.
        baseline, notes, rescore_error = self.baseline, None, None
        if baseline is not None:
            # Suites whose evaluators or score field changed are compared with their
            # baseline scored again (rescore.apply_rescored).
            from ..rescore import apply_rescored

            applied = apply_rescored(baseline, self.report.suites, self.rescored)
            baseline, notes, rescore_error = applied.baseline, applied, applied.error
        self.verdict = judge(
            self.report,
            baseline,
            rescored=notes,
            baseline_problem=rescore_error,
            max_drops=self.settings.max_drops,
            confidence=self.settings.confidence,
            require_same_examples=self.settings.require_same_examples,
            fingerprints=self.fingerprints() if self.baseline is not None else None,
            seed=self.settings.seed or 0,
            familywise=self.settings.familywise,
            labels=labels,
            min_kappa=self.settings.min_judge_kappa if labels is not None else None,
        )
        self.comparison = self.verdict.comparison
        if self.verdict.baseline_error is not None:
            self.baseline_error = self.verdict.baseline_error
            if not self.gate_enforced:
                # A baseline that cannot be compared is a configuration problem: it
                # fails even a run whose gates are not applied.
                session.testsfailed += 1
        if self.lost and self.gate_enforced:
            # Rows that could not even be placed (no manifest): missing data never
            # passes a gate.
            session.testsfailed += 1
        if self.settings.save_baseline is not None and not self.completeness.get("complete", True):
            # A baseline is what later runs are held to: one recorded from part of
            # the examples (or with crashed ones) would make every full run differ.
            self.baseline_error = (
                f"baseline not saved to {self.settings.save_baseline}: the run is"
                f" incomplete ({self._incomplete_reason()}); re-run the whole suite"
                " to record a baseline"
            )
            if not interrupted:
                session.testsfailed += 1
        self.verdicts = gate_verdicts(self.report.gates) + comparison_verdicts(
            self.comparison,
            self.verdict.unevaluated,
            self.verdict.changed_examples,
            self.verdict.baseline_error,
        )
        # Each check is a test report of its own: a breach counts in pytest's closing
        # line and in --junitxml (and, through Session.testsfailed, in the exit status).
        # They count as collected tests, so the progress column ends at 100%.
        session.testscollected += len(self.verdicts)
        log_verdicts(
            session.config,
            self.verdicts,
            enforced=self.gate_enforced,
            why_not=self._why_not(),
            partial=self.partial_suites,
        )
        self._check_step_summary(session.config)
        if (
            self.settings.json_path is not None
            or self.settings.save_baseline is not None
            or self.settings.markdown_path is not None
            or self.settings.html_path is not None
            or self._step_summary() is not None
        ):
            self._write_json(session.config)
            if self.json_error or self.baseline_error or self.view_errors:
                # An output that was asked for and not written fails the run (the
                # table and the reason still print).
                session.testsfailed += 1

    def _labels(self) -> Any:
        """People's labels (--ctxbench-judge-labels), read again (they were checked
        when the options were read), or ``None``."""
        if self.settings.judge_labels is None:
            return None
        from ..agreement import LabelsError, read_labels

        try:
            return read_labels(self.settings.judge_labels)
        except LabelsError as exc:  # changed on disk during the run
            self.problems.append(f"FAILED {exc}")
            return None

    def _check_step_summary(self, config: pytest.Config) -> None:
        """Refuse, at the end, a ``$GITHUB_STEP_SUMMARY`` that names code imported
        since the start (a test module, a marked test's or a fixture's System: in
        this process, or in an xdist worker) or that is no longer a regular file."""
        if self._step_summary() is None:
            return
        import dataclasses

        from .outputs import step_summary_clash

        said = step_summary_clash(self.settings, (), (), config)
        said = said or self.worker_step_summary
        if said is not None:
            self.settings = dataclasses.replace(self.settings, step_summary=False)
            self.step_summary_refused = said

    def _step_summary(self) -> Path | None:
        """GitHub Actions' step summary file, unless --ctxbench-no-step-summary."""
        path = os.environ.get("GITHUB_STEP_SUMMARY")
        return Path(path) if path and self.settings.step_summary else None

    def _write_views(self, doc: dict[str, Any]) -> None:
        """The Markdown and HTML views of the JSON document (each written atomically;
        the step summary is appended, as GitHub asks)."""
        from .._files import atomic_write_text
        from ..report.markdown import render_markdown

        markdown = None
        if self.settings.markdown_path is not None or self._step_summary() is not None:
            markdown = render_markdown(doc)
        outputs: list[tuple[str, Path | None, Any]] = [
            ("Markdown summary", self.settings.markdown_path, lambda: markdown),
            ("HTML report", self.settings.html_path, lambda: _html(doc)),
        ]
        for what, path, render in outputs:
            if path is None:
                continue
            try:
                atomic_write_text(path, render())
                self.written.append(f"{what}: {path}")
            except OSError as exc:
                message = f"could not write the {what} to {path}: {exc.strerror or exc}"
                self.view_errors.append(message)
        summary = self._step_summary()
        if summary is not None and markdown is not None:
            from .._files import append_regular

            try:
                # Never blocks: a FIFO that appeared since the check is not waited on.
                append_regular(summary, markdown + "\n")
            except OSError as exc:
                message = f"could not append to $GITHUB_STEP_SUMMARY ({summary}): {exc.strerror or exc}"
                self.view_errors.append(message)

    def _why_not(self) -> str:
        """Why breached gates do not fail the run, when they don't."""
        return "gates skipped" if self.gates_skipped else "--ctxbench-no-gate"

    def _incomplete_reason(self) -> str:
        c = self.completeness
        if c.get("partial"):
            return str(c["partial"])
        n = len(c.get("lost", ())) + len(self.lost)
        return f"{n} example(s) produced no row of their own"

    def _account(self, *, stopped: bool) -> None:
        """Turn the collected examples that produced no row into error rows."""
        failed = {nodeid: text for nodeid, _, text in self._failed}
        seen: dict[str, list[str]] = {}
        for rec in self.records:
            names = seen.setdefault(rec.origin, [])
            if rec.row.system not in names:
                names.append(rec.row.system)
        lost_rows, self._counts = account(
            self.manifest, self._reported, self._skipped, failed, seen, stopped=stopped
        )
        for origin, wire in self.manifest.get("suites", {}).items():
            # How a suite is gated travels with its rows; when every row of a suite
            # was lost, the manifest still says (its limits must not vanish).
            if origin not in self.infos:
                from ..report.run import SuiteInfo

                self.infos[origin] = SuiteInfo.from_wire(wire)
        for d in lost_rows:
            from ..report.run import Record
            from ..results import EvalRow

            self.records.append(
                Record(
                    suite=d["suite"],
                    origin=d["origin"],
                    order=tuple(d["order"]),
                    status="error",
                    row=EvalRow.from_dict(d["row"]),
                )
            )
        self._lost_rows = lost_rows
        known = set(self.manifest.get("items", {}))
        origins = set(self.infos)
        for nodeid, marked, _ in self._failed:
            if nodeid in known:
                continue
            function = nodeid.split("[", 1)[0]
            if marked or function in origins or function.endswith("ctxbench::example"):
                self.lost.append(nodeid)

    def _partial_origins(self, stop: str | None) -> dict[str, str]:
        """Origin → why only part of its examples ran, for each partial origin.

        Partiality is judged per origin (the command-line run, each marked test):
        deselecting one marked test does not make the command-line suite partial.
        """
        planned_by = {
            str(o): int(n) for o, n in self.manifest.get("planned", {}).items()
        }
        items = self.manifest.get("items", {})
        selected_by: dict[str, int] = {}
        for ident in items.values():
            origin = str(ident["origin"])
            selected_by[origin] = selected_by.get(origin, 0) + 1
        stopped_by: set[str] = {
            str(items[n]["origin"]) for n in self._counts["not_run"] if n in items
        }
        out: dict[str, str] = {}
        for origin in sorted(set(planned_by) | set(selected_by)):
            planned, selected = planned_by.get(origin, 0), selected_by.get(origin, 0)
            if selected < planned:
                out[origin] = (
                    f"pytest's selection kept {selected} of {planned} examples"
                )
            elif origin in stopped_by:
                out[origin] = f"the run stopped early: {stop}"
        return out

    def _completeness(self, interrupted: bool, stop: str | None) -> None:
        assert self.report is not None
        planned = sum(int(n) for n in self.manifest.get("planned", {}).values())
        items = self.manifest.get("items", {})
        not_run = list(self._counts["not_run"])
        ran = sum(1 for n in items if n not in self._skipped) - len(not_run)
        partial = {} if interrupted else self._partial_origins(stop)
        ran_by = {str(ident["origin"]) for ident in items.values()}
        # Complete origins that ran: their gates apply even when another origin is
        # partial (a deselected marked test does not void the CLI benchmark's gates).
        complete_ran = ran_by - set(partial)
        reason: str | None = None
        if interrupted:
            reason = f"the run was interrupted ({stop})" if stop else "the run was interrupted"
        elif partial and not complete_ran:
            if planned > len(items):
                reason = f"pytest's selection kept {len(items)} of {planned} examples"
            else:
                reason = f"the run stopped early: {stop}"
        elif partial:
            reason = "; ".join(f"{o}: {why}" for o, why in partial.items())
        skipped_gates = None
        if reason is not None and (interrupted or not self.settings.gate_partial):
            if interrupted or not complete_ran:
                total = max(planned, len(items))
                skipped_gates = f"{ran} of {total} examples ran; {reason}"
            else:
                # Per suite: the partial origins' gates are reported, not applied.
                for suite in self.report.suites:
                    why = partial.get(str(suite["origin"]))
                    if why is not None:
                        self.partial_suites[str(suite["label"])] = why
                for origin, why in partial.items():
                    if origin not in {str(x["origin"]) for x in self.report.suites}:
                        self.partial_suites[origin] = why
        lost = [d["nodeid"] for d in self._lost_rows]
        self.completeness = {
            "complete": reason is None and not lost and not self.lost,
            "interrupted": interrupted,
            "partial": reason,
            "planned": planned,
            "selected": len(items),
            "ran": ran,
            "gates_skipped": skipped_gates,
            "partial_suites": dict(self.partial_suites),
            "lost": lost,
            "not_run": not_run,
            "suites": self._counts["suites"],
        }
        self.report.completeness = self.completeness

    def _write_json(self, config: pytest.Config) -> None:
        from ..pricing import price_record
        from ..report import to_json_dict, write_json
        from ..results import json_safe
        from ..urls import redact
        from ..verdict import agreement_doc, comparison_doc

        assert self.report is not None
        workers = getattr(config.option, "numprocesses", None)
        run: dict[str, Any] = {
            "python": platform.python_version(),
            "implementation": platform.python_implementation(),
            "platform": sys.platform,
            "pytest": pytest.__version__,
            "xdist_workers": workers if isinstance(workers, int) else 0,
            # No credentials of a --ctxbench-proxy/--ctxbench-judge-url URL.
            "invocation": [redact(str(a)) for a in config.invocation_params.args],
            "datasets": self._datasets_info() if self._datasets_info else [],
            "options": {
                "datasets": list(self.settings.datasets),
                "systems": list(self.settings.systems),
                "limit": self.settings.limit,
                "sample": self.settings.sample,
                "seed": self.settings.seed,
                "familywise": self.settings.familywise,
                "shard": "/".join(map(str, self.settings.shard)) if self.settings.shard else None,
                "repeat": self.settings.repeat,
                "score_field": self.settings.score_field,
                "threshold": self.settings.threshold,
                "strict": self.settings.strict,
                "tokenizer": self.settings.tokenizer or "cl100k_base",
                "text_fields": list(self.settings.text_fields or ("context", "question", "turns")),
                # The price table the rows' money was computed with: every reader
                # recomputes it (report/money.py); shards with other prices differ.
                "prices": price_record(self.settings.prices),
            },
        }
        sandbox = self.sandbox_info() if self.sandbox_info is not None else None
        if sandbox is not None:
            run["sandbox"] = sandbox
        doc = to_json_dict(self.report, run=run, gates_enforced=self.gate_enforced, version=self.version)
        if self.llm is not None:
            doc["llm"] = json_safe(self.llm)
        comparison = comparison_doc(self.verdict) if self.verdict is not None else None
        if comparison is not None:
            doc["baseline_comparison"] = comparison
        agreement = agreement_doc(self.verdict) if self.verdict is not None else None
        if agreement is not None:
            doc["judge_agreement"] = agreement
        self._write_views(doc)
        if self.settings.json_path is not None:
            path: Path = self.settings.json_path
            try:
                write_json(doc, path)
            except OSError as exc:
                # Nothing computed is lost: the table still prints, the error is named.
                self.json_error = f"could not write the JSON report to {path}: {exc.strerror or exc}"
        if self.settings.save_baseline is not None and self.baseline_error is None:
            from ..baseline import git_commit, write_baseline

            try:
                write_baseline(
                    self.settings.save_baseline,
                    doc,
                    git_commit=git_commit(config.rootpath),
                    dataset_fingerprints=self.fingerprints(),
                    answers=self.settings.baseline_responses,
                )
            except OSError as exc:
                self.baseline_error = (
                    f"could not write the baseline to {self.settings.save_baseline}:"
                    f" {exc.strerror or exc}"
                )

    def _problem_lines(self, tr: Any) -> None:
        for text in self.problems:
            tr.write_line(text, red=True)
        for text in self.notes:
            tr.write_line(text, yellow=True)

    def terminal_summary(self, terminalreporter: Any) -> None:
        # Ids, names and messages come from data: shown, never acted on.
        terminalreporter = _InertWriter(terminalreporter)
        if self.report is None and (self.problems or self.notes):
            terminalreporter.write_sep("=", "ctxbench summary")
            self._problem_lines(terminalreporter)
        if self.report is None:
            if self.baseline_error:
                terminalreporter.write_line(self.baseline_error, red=True)
            return
        from ..report import render_lines
        from ..verdict import comparison_lines

        tr = terminalreporter
        tr.write_sep("=", "ctxbench summary")
        for info in self._datasets_info() if self._datasets_info else ():
            skipped = info["skipped_records"]
            if skipped:
                tr.write_line(
                    f"{info['tag']}: {len(skipped)} bad record(s) skipped"
                    f" (--ctxbench-skip-bad-records):", yellow=True)
                for line in skipped[:10]:
                    tr.write_line(f"  {line}")
                if len(skipped) > 10:
                    tr.write_line(f"  ... and {len(skipped) - 10} more (see the JSON report)")
        width = tr.config.get_terminal_writer().fullwidth
        verbose = tr.config.get_verbosity()
        for text, markup in render_lines(
            self.report,
            gate_enforced=self.gate_enforced,
            width=width,
            verbose=verbose,
            why_not=self._why_not(),
            partial=self.partial_suites,
        ):
            tr.write_line(text, **markup)
        self._problem_lines(tr)
        from .llmcache import summary_lines

        for text, markup in summary_lines(self.llm, self.llm_cache):
            tr.write_line(text, **markup)
        for label, c in self.completeness.get("suites", {}).items():
            if c["received"] < c["expected"]:
                missing = ", ".join(c["lost"][:10]) + (" ..." if len(c["lost"]) > 10 else "")
                tr.write_line(
                    f"{label}: {c['received']} of {c['expected']} expected rows arrived"
                    + (f"; lost (counted as errors): {missing}" if c["lost"] else "")
                    + (f"; {c['not_run']} not run" if c["not_run"] else ""),
                    yellow=True,
                )
        for label, why in self.partial_suites.items():
            tr.write_line(
                f"{label}: gates skipped: {why} ({GATE_PARTIAL.flag} applies them"
                " anyway; the other suites ran whole and are gated)",
                yellow=True,
            )
        if self.gates_skipped:
            tr.write_line(
                f"gates skipped: {self.gates_skipped}"
                + ("" if self.completeness.get("interrupted")
                   else f" ({GATE_PARTIAL.flag} applies them anyway)"),
                yellow=True,
            )
        for text, markup in (
            comparison_lines(self.verdict, self.gate_enforced) if self.verdict else ()
        ):
            tr.write_line(text, **markup)
        gating = self.verdict.gating if self.verdict is not None else None
        if gating is not None:
            for text in gating.lines():
                tr.write_line(text, yellow="NOT ENFORCED" in text)
        if self.settings.json_path is not None:
            if self.json_error:
                tr.write_line(self.json_error, red=True)
            else:
                tr.write_line(f"JSON report: {self.settings.json_path}")
        for line in self.written:
            tr.write_line(line)
        for line in self.view_errors:
            tr.write_line(line, red=True)
        if self.baseline_error:
            tr.write_line(self.baseline_error, red=True)
        elif self.settings.save_baseline is not None:
            tr.write_line(f"baseline saved: {self.settings.save_baseline}")


class _InertWriter:
    """pytest's terminal reporter, every line made :func:`inert` first."""

    def __init__(self, tr: Any) -> None:
        self._tr = tr
        self.config = tr.config

    def write_line(self, text: str, **markup: bool) -> None:
        # Every line fits the terminal (COLUMNS): a long one is wrapped at spaces.
        from ..report.terminal import wrap_line

        width = self.config.get_terminal_writer().fullwidth
        for line in wrap_line(inert(str(text)), width):
            self._tr.write_line(line, **markup)

    def write_sep(self, sep: str, title: str | None = None, **markup: bool) -> None:
        self._tr.write_sep(sep, inert(title) if title else title, **markup)


class GateReport(pytest.TestReport):
    """A gate's report. A passed gate is listed in the ``gates:`` section and kept
    out of the closing line's counts, so that line counts the collected items
    (``[104 items]`` ... ``78 passed, 26 below threshold``); a breached gate (or
    one not enforced) is counted there, as the ``1 failed`` that fails the run."""

    @property
    def count_towards_summary(self) -> bool:
        return not self.passed


def log_verdicts(
    config: pytest.Config,
    verdicts: list[Verdict],
    *,
    enforced: bool,
    why_not: str = "--ctxbench-no-gate",
    partial: dict[str, str] | None = None,
) -> None:
    """Log each verdict as a test of its own (setup, call, teardown reports).

    Called on the controller once every item ran. The reports go through the same
    hooks as real tests' (xdist replays the workers' reports through them too), so
    the terminal reporter counts them, ``--junitxml`` writes a ``<testcase>`` with
    the verdict's properties, and ``Session.testsfailed`` (hence the exit status 1)
    counts a breach. A breach that is not enforced (``--ctxbench-no-gate``, or
    ``partial``: suite label → why that suite's gates are not applied) is a skipped
    test saying so.
    """
    hook = config.hook
    run_enforced, run_why = enforced, why_not
    for v in verdicts:
        suite = dict(v.properties).get("suite")
        why = (partial or {}).get(str(suite)) if suite is not None else None
        enforced = run_enforced and why is None and v.not_enforced is None
        why_not = run_why if why is None else f"partial suite: {why}"
        if v.not_enforced is not None:
            why_not = v.not_enforced
        # A suite is named after a System: its name is data.
        nodeid = inert(v.nodeid)
        location = ("ctxbench", None, inert(v.name))
        hook.pytest_runtest_logstart(nodeid=nodeid, location=location)
        for when in ("setup", "call", "teardown"):
            outcome = "passed"
            longrepr: Any = None
            if when == "call" and (not v.passed or v.not_enforced is not None):
                message = inert(v.message)
                if enforced:
                    # Lines that fit the terminal (pytest prints the text as is).
                    from ..report.terminal import wrap_line

                    width = config.get_terminal_writer().fullwidth
                    outcome = "failed"
                    longrepr = "\n".join(wrap_line(f"gate breached: {message}", width))
                else:
                    outcome = "skipped"
                    longrepr = (
                        "ctxbench",
                        0,
                        f"Skipped: not enforced ({inert(why_not)}): {message}",
                    )
            report = GateReport(
                nodeid=nodeid,
                location=location,
                keywords={"ctxbench": 1},
                outcome=outcome,  # type: ignore[arg-type]
                longrepr=longrepr,
                when=when,
                duration=0.0,
                user_properties=(
                    [
                        (k, inert(x) if isinstance(x, str) else x)
                        for k, x in v.properties
                    ]
                    if when == "teardown"
                    else []
                ),
            )
            hook.pytest_runtest_logreport(report=report)
        hook.pytest_runtest_logfinish(nodeid=nodeid, location=location)


def _html(doc: dict[str, Any]) -> str:
    from ..report.html import render_html

    return render_html(doc)
