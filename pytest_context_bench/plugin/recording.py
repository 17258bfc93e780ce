"""The ``ctxbench_record`` handle: scores what a test produced and keeps the rows.

The rows stay on the item (``item.stash``) until ``pytest_runtest_makereport``
moves them onto the report, wire-safe, for the controller.
"""

from __future__ import annotations

import time
from typing import Any, Callable, Sequence

import pytest

from ..calls import CallLog, current_call, keep_io
from ..engine import (
    SystemCall,
    assertion_facts,
    attach_usage,
    call_system,
    score_call,
    score_processed,
)
from ..inputs import check_unique_names, primary_score_field
from ..memory import Conversation, ask_question, ingest_conversation
from ..errors import CtxBenchError, ExampleDataError
from ..importing import check_memory_system, check_system
from ..report.rows import row_status as _status
from ..results import EvalRow
from .collection import ExampleRef

__all__ = ["Recorder", "row_status"]


def _reraise(raised: BaseException, row: EvalRow | None) -> None:
    """Re-raise what a System or evaluator raised, for pytest to show. Bad data in
    the example itself (:class:`~pytest_context_bench.errors.ExampleDataError`)
    is one line naming the example, not a traceback into the evaluator."""
    if isinstance(raised, ExampleDataError) and row is not None:
        where = f"{row.dataset}/{row.example_id}" if row.dataset else row.example_id
        pytest.fail(f"example {where} cannot be scored: {raised}", pytrace=False)
    # Set only here: a frame whose every entry is hidden makes pytest add a note to
    # the one-line failure above.
    __tracebackhide__ = True
    raise raised


def row_status(row: EvalRow, threshold: float) -> str:
    """``error``, ``unscored`` (primary score absent), ``below`` or ``pass``: the
    one rule, :func:`pytest_context_bench.report.rows.row_status`, that a report's
    reader checks again."""
    return _status(row.error, row.scores, row.metadata.get("score_field"), threshold)


class Recorder:
    """What the ``ctxbench_record`` fixture returns.

    * ``ctxbench_record(processed, system=None, latency=None)`` scores a processed
      example the test body produced (marker form);
    * ``ctxbench_record.run(system_or_systems)`` runs System(s) on the example and
      scores each (what the command-line items do).

    Each call records one row per system; a System or evaluator that raises is
    recorded as that row's error, then re-raised so pytest shows its traceback.
    """

    def __init__(
        self,
        ref: ExampleRef,
        tokenizer: Callable[[str], int],
        cli_systems: Sequence[Any],
        original: dict[str, Any] | None = None,
        memory: MemoryCache | None = None,
        runner: Any = None,
    ) -> None:
        self.ref = ref
        self.spec = ref.spec
        self._tokenizer = tokenizer
        self._cli_systems = cli_systems
        # The pristine example the evaluators compare against; Systems get copies.
        self._original = ref.load() if original is None else original
        self._start = time.perf_counter()
        self.rows: list[tuple[int, EvalRow]] = []
        #: id(row) → {"response", "reference"} (clipped), shown by the reports
        self.io: dict[int, dict[str, str] | None] = {}
        self._memory = memory
        #: the process's CallRunner (budget, rate limit, timeout), or None
        self._runner = runner
        # The suite's field, else the example's own (its assertions' when it has
        # some: docs/assertions.md), as evaluate() decides it.
        self.score_field = self.spec.score_field or primary_score_field(self._original, ref.dataset)
        self.evaluators = self.spec.evaluators_for(ref.ds_pos)

    def __repr__(self) -> str:
        return f"<ctxbench_record {self.ref.test_id}>"

    @property
    def example(self) -> dict[str, Any]:
        """A fresh copy of the original example."""
        return self.ref.load()

    def _add(
        self, row: EvalRow, sys_pos: int, io: list[dict[str, str]] | None = None
    ) -> None:
        # The response and the reference, for the reports (not part of the row).
        self.io[id(row)] = io[-1] if io else None
        if self.ref.trial:
            row.metadata["trial"] = self.ref.trial
        if any(r.system == row.system for _, r in self.rows):
            raise CtxBenchError(
                f"a row for system {row.system!r} was already recorded for this example;"
                " record each system once (pass system='name' to tell them apart)."
            )
        self.rows.append((sys_pos, row))

    def _sys_pos(self, system: Any, fallback: int) -> int:
        for i, s in enumerate(self._cli_systems):
            if s is system:
                return i
        return fallback

    def __call__(
        self,
        processed: dict[str, Any],
        *,
        system: Any = None,
        latency: float | None = None,
    ) -> EvalRow:
        """Score ``processed`` against the original example and record the row."""
        __tracebackhide__ = True
        if not isinstance(processed, dict):
            raise TypeError(
                f"ctxbench_record() takes the processed example as a dict (e.g."
                f" {{**ctxbench_example, 'response': text}}), got {type(processed).__name__}."
            )
        if system is None:
            name = self.spec.default_system or "system"
        elif isinstance(system, str):
            name = system
        else:
            name = getattr(system, "name", None) or str(system)
        elapsed = (
            time.perf_counter() - self._start if latency is None else float(latency)
        )
        scope = current_call()
        if scope is not None:
            # What the test body's LLM calls measured so far is the System's; the
            # evaluators' calls come after this mark.
            scope.system_calls = len(scope.usage)
        facts = assertion_facts(self._original, elapsed, scope.usage if scope is not None else [])
        with keep_io() as io, facts:
            row, raised = score_processed(
                self._original,
                processed,
                self.evaluators,
                system=name,
                latency=elapsed,
                score_field=self.score_field,
                text_fields=self.spec.text_fields,
                tokenizer=self._tokenizer,
            )
        if scope is not None:
            raised = raised or attach_usage(row, scope)
            scope.usage.clear()  # a second ctxbench_record call starts afresh
            scope.system_calls = None
        self._add(row, self._sys_pos(system, 0), io)
        if raised is not None:
            _reraise(raised, row)
        return row

    def run(self, system: Any, ahead: SystemCall | None = None) -> list[EvalRow]:
        """Run one System, or each of a list of Systems, on the example.

        ``ahead`` is the one System's call, already made (started ahead of the item
        under ``--ctxbench-concurrency``): it is scored instead of calling again.
        """
        __tracebackhide__ = True
        systems = list(system) if isinstance(system, (list, tuple)) else [system]
        if not systems:
            pytest.fail(
                "the ctxbench_system fixture returned an empty list", pytrace=False
            )
        if self.ref.qa >= 0:
            return self._run_memory(systems)
        for i, s in enumerate(systems):
            try:
                check_system(
                    s,
                    origin=f"ctxbench_system[{i}]"
                    if len(systems) > 1
                    else "ctxbench_system",
                )
            except CtxBenchError as exc:
                pytest.fail(str(exc), pytrace=False)
        try:
            check_unique_names(systems)
        except CtxBenchError as exc:
            pytest.fail(str(exc), pytrace=False)
        first: BaseException | None = None
        first_row: EvalRow | None = None
        out = []
        for i, s in enumerate(systems):
            call = ahead if ahead is not None and len(systems) == 1 else None
            if call is None:
                call = call_system(
                    s, self._original, trial=self.ref.trial or 1, runner=self._runner
                )
            with keep_io() as io:
                row, raised = score_call(
                    call,
                    s,
                    self._original,
                    self.evaluators,
                    score_field=self.score_field,
                    text_fields=self.spec.text_fields,
                    tokenizer=self._tokenizer,
                )
            self._add(row, self._sys_pos(s, i), io)
            out.append(row)
            if first is None and raised is not None:
                first, first_row = raised, row
        if first is not None:
            _reraise(first, first_row)
        return out

    def _run_memory(self, systems: list[Any]) -> list[EvalRow]:
        """Ask this item's question of each MemorySystem (ingesting when needed)."""
        __tracebackhide__ = True
        memory = self._memory if self._memory is not None else MemoryCache()
        try:
            for i, s in enumerate(systems):
                check_memory_system(s, origin=f"ctxbench_system[{i}]")
            check_unique_names(systems)
        except CtxBenchError as exc:
            pytest.fail(str(exc), pytrace=False)
        conv = memory.conversation(
            self.ref, self._original, self.score_field, self._tokenizer
        )
        first: BaseException | None = None
        first_row: EvalRow | None = None
        out = []
        for i, s in enumerate(systems):
            failure, ingest_latency, usage, calls = memory.ingested(
                s, self.ref, conv, self._runner
            )
            with keep_io() as io:
                row, raised = ask_question(
                    s,
                    conv,
                    self.ref.qa,
                    self.evaluators,
                    self._tokenizer,
                    failure,
                    ingest_latency,
                    usage,
                    self._runner,
                    calls,
                )
            self._add(row, self._sys_pos(s, i), io)
            out.append(row)
            if first is None and raised is not None:
                first, first_row = raised, row
        if first is not None:
            _reraise(first, first_row)
        return out


class MemoryCache:
    """Per process: validated conversations, and which one each system holds.

    A MemorySystem holds one conversation at a time, so the questions of a
    conversation reuse one ``reset()`` + ``ingest()``; an item of another
    conversation (xdist may interleave them) ingests again.
    """

    def __init__(self) -> None:
        self._conversations: dict[tuple[int, int], Any] = {}
        self._held: dict[int, tuple[tuple[int, int], dict[str, str] | None, float]] = {}

    def conversation(
        self,
        ref: ExampleRef,
        example: dict[str, Any],
        field: str,
        tok: Callable[[str], int],
    ) -> Any:
        key = (ref.ds_pos, ref.index)
        conv = self._conversations.get(key)
        if conv is None:
            conv = Conversation(example, ref.index, ref.dataset, field, tok)
            self._conversations[key] = conv
        return conv

    def ingested(
        self, system: Any, ref: ExampleRef, conv: Any, runner: Any = None
    ) -> tuple[dict[str, str] | None, float, list[dict[str, Any]], CallLog | None]:
        """The ingestion's failure, latency, LLM usage and call records; the usage
        and the records only to the question that ingested (the others of the
        conversation reuse it, free)."""
        key = (ref.ds_pos, ref.index)
        held = self._held.get(id(system))
        if held is not None and held[0] == key:
            return held[1], held[2], [], None
        log = CallLog()
        failure, latency, usage = ingest_conversation(system, conv, runner, log)
        self._held[id(system)] = (key, failure, latency)
        return failure, latency, usage, log
