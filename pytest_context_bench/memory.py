"""Memory benchmarks: :func:`evaluate_memory` runs MemorySystems over conversations.

A memory benchmark example is one conversation with questions about it (family
``memory``, e.g. the ``locomo`` dataset)::

    {"id": "conv-1", "dataset": "locomo",
     "turns": [{"role": "user", "content": "..."}, ...],
     "qa_pairs": [{"question": "...", "answer": "...", "type": "temporal"}, ...]}

For each system and each conversation, in order: ``reset()``, ``ingest(turns)``
(timed as ``ingest_latency``), then ``query(question)`` once per QA pair (timed as
the row's ``latency``). Each QA pair gives one :class:`~pytest_context_bench.EvalRow`
with ``example_id`` ``f"{conversation_id}_{j}"`` (``j`` counts from 0).

Failures never stop the run. A ``reset`` or ``ingest`` that raises is the error of
every QA row of that conversation (no question is asked of a system that failed to
ingest); a ``query`` that raises is the error of its row only. Errors are recorded
in ``row.error`` with ``where`` set to ``system:reset``, ``system:ingest`` or
``system:query`` (``evaluator:<name>`` for an evaluator).

Token accounting, in tokens of the run's tokenizer (upstream counted
whitespace-separated words):

* ``input_tokens``: the system's ``last_context_tokens`` after the query, when it
  has that attribute and it holds a number; else the tokens of every turn's content
  (what a system that sends the whole history would spend);
* ``output_tokens``: the tokens of the answer (0 when the query failed).
"""

from __future__ import annotations

import math
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

from .calls import CallLog, CallScope, call_scope, current_call
from .engine import attach_usage, score_processed
from .errors import ConfigError, error_record
from .importing import check_memory_system
from .inputs import load_examples, prepare_run, primary_score_field
from .netguard import watching
from .outcome import EvalResult
from .results import EvalRow
from .tokens import count_fields, count_tokens, get_tokenizer
from .types import Evaluator, Metric

__all__ = ["evaluate_memory", "context_snippet", "SNIPPET_CHARS"]

#: The character budget of the ``context`` snippet evaluators see.
SNIPPET_CHARS = 3000


def context_snippet(
    turns: Sequence[dict[str, Any]], budget: int = SNIPPET_CHARS
) -> str:
    """The most recent turns as ``ROLE: content`` lines, within ``budget`` characters.

    Filled from the last turn backwards; the last turn is always included, even
    when it alone is longer than the budget (as upstream).

    :param turns: the conversation's ``{role, content}`` turns.
    :param budget: the most characters the snippet may hold (newlines included).
    """
    lines: list[str] = []
    used = 0
    for turn in reversed(turns):
        line = f"{str(turn.get('role', 'user')).upper()}: {turn.get('content', '')}"
        cost = len(line) + (1 if lines else 0)
        if lines and used + cost > budget:
            break
        lines.append(line)
        used += cost
    return "\n".join(reversed(lines))


class Conversation:
    """One validated conversation, with what every system's run shares."""

    __slots__ = ("id", "dataset", "turns", "pairs", "field", "snippet", "turn_tokens")

    def __init__(
        self,
        example: dict[str, Any],
        index: int,
        source: Any,
        score_field: str | None,
        tok: Callable[[str], int],
    ) -> None:
        where = f"conversation {index} (id {example.get('id')!r})"
        turns = example.get("turns")
        pairs = example.get("qa_pairs")
        if not isinstance(turns, list) or not all(isinstance(t, dict) for t in turns):
            raise ConfigError(
                f"{where}: 'turns' must be a list of {{'role', 'content'}} dicts; a"
                " memory example is {'id', 'turns', 'qa_pairs', 'dataset'}."
            )
        if not isinstance(pairs, list):
            raise ConfigError(
                f"{where}: 'qa_pairs' must be a list of {{'question', 'answer', 'type'}}"
                " dicts."
            )
        for j, pair in enumerate(pairs):
            if not isinstance(pair, dict) or not isinstance(pair.get("question"), str):
                raise ConfigError(f"{where}: qa_pairs[{j}] has no 'question' string.")
        self.id = str(example.get("id", index))
        self.dataset = str(example.get("dataset", "") or "")
        self.turns: list[dict[str, Any]] = turns
        self.pairs: list[dict[str, Any]] = pairs
        self.field = score_field or primary_score_field(example, source)
        self.snippet = context_snippet(turns)
        self.turn_tokens = count_fields({"turns": turns}, ("turns",), tok)

    def pseudo(self, j: int) -> dict[str, Any]:
        """The example evaluators see for QA pair ``j``."""
        pair = self.pairs[j]
        example: dict[str, Any] = {
            "id": f"{self.id}_{j}",
            "dataset": self.dataset,
            "question": pair["question"],
            "context": self.snippet,
        }
        # No gold: leave the key out, so evaluators return {} (never a made-up score).
        if pair.get("answer") is not None:
            example["answer"] = pair["answer"]
        return example


def _reported_tokens(system: Any) -> int | None:
    value = getattr(system, "last_context_tokens", None)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if not math.isfinite(value):
        return None
    return max(0, int(value))


def _timed(
    runner: Any, system: Any, fn: Callable[[], Any]
) -> tuple[Any, Exception | None, float]:
    """``fn()``'s value or the exception it raised, and how long it ran: here, or
    through ``runner`` (a :class:`~pytest_context_bench.concurrency.CallRunner`: its
    budget, rate limit and ``--ctxbench-timeout``, past which the error is a
    ``CallTimeout``). Connections it opens past the LLM cache are watched as a
    System call's are (:func:`~pytest_context_bench.netguard.watching`)."""
    scope = current_call()
    usage = None if scope is None else scope.usage

    def guarded() -> Any:
        with watching(usage):
            return fn()

    if runner is None:
        start = time.perf_counter()
        try:
            return guarded(), None, time.perf_counter() - start
        except Exception as exc:  # noqa: BLE001 (the caller records it)
            return None, exc, time.perf_counter() - start
    outcome = runner.call(guarded, system=system)
    error = outcome.error
    if error is not None and not isinstance(error, Exception):
        raise error  # KeyboardInterrupt and the like end the run
    return outcome.value, error, outcome.latency


def ingest_conversation(
    system: Any, conv: Conversation, runner: Any = None, log: CallLog | None = None
) -> tuple[dict[str, str] | None, float, list[dict[str, Any]]]:
    """``reset()`` then ``ingest(turns)``: the failure (or ``None``), the ingest time,
    and the LLM usage the HTTP transports measured meanwhile (a memory layer that
    summarises or embeds the turns calls a model), for the row of the first question
    asked after it (:func:`ask_question`). With ``runner``, ``ingest`` runs through
    it (see :func:`_timed`). ``log`` collects the records of its LLM calls
    (``--ctxbench-transcripts``), for that row too."""
    failure: dict[str, str] | None = None
    ingest_latency = 0.0
    scope = CallScope(
        system=str(system.name),
        dataset=conv.dataset,
        example_id=conv.id,
        log=log if log is not None else CallLog(),
    )
    with call_scope(scope):
        try:
            system.reset()
        except Exception as exc:  # noqa: BLE001 (recorded in every row of the conversation)
            failure = error_record(exc, "system:reset")
        if failure is None:
            # Copies, so a system that edits the turns cannot change the dataset.
            turns = [dict(t) for t in conv.turns]
            _, raised, ingest_latency = _timed(
                runner, system, lambda: system.ingest(turns)
            )
            if raised is not None:
                failure = error_record(raised, "system:ingest")
    return failure, ingest_latency, scope.usage


def ask_question(
    system: Any,
    conv: Conversation,
    j: int,
    evaluators: Sequence[Evaluator],
    tok: Callable[[str], int],
    failure: dict[str, str] | None,
    ingest_latency: float,
    ingest_usage: Sequence[dict[str, Any]] = (),
    runner: Any = None,
    ingest_calls: CallLog | None = None,
) -> tuple[EvalRow, BaseException | None]:
    """Ask QA pair ``j`` of an ingested conversation and score the answer.

    The query and the evaluators run in a :func:`~.calls.call_scope` of their own,
    so the row carries their LLM usage and cost like any other row (``llm_usage``
    for the System's calls, ``judge_usage`` for the judge's).

    :param failure: the ingestion's failure, which becomes this row's error.
    :param ingest_usage: the ingestion's LLM usage, counted in this row (give it
        to the first question asked after the ingestion only).
    :param runner: a :class:`~pytest_context_bench.concurrency.CallRunner` the query
        runs through (budget, rate limit, ``--ctxbench-timeout``); ``None``: here.
    :param ingest_calls: the records of the ingestion's LLM calls (given with
        ``ingest_usage``): the row's records start with them.
    :returns: the row, and the exception the query or an evaluator raised.
    """
    pseudo = conv.pseudo(j)
    scope = CallScope(
        system=str(system.name),
        dataset=conv.dataset,
        example_id=str(pseudo["id"]),
        log=ingest_calls if ingest_calls is not None else CallLog(),
    )
    scope.usage.extend(ingest_usage)
    with call_scope(scope):
        row, raised = _ask(
            system,
            conv,
            j,
            pseudo,
            evaluators,
            tok,
            failure,
            ingest_latency,
            scope,
            runner,
        )
    bad_usage = attach_usage(row, scope)
    return row, raised or bad_usage


def _ask(
    system: Any,
    conv: Conversation,
    j: int,
    pseudo: dict[str, Any],
    evaluators: Sequence[Evaluator],
    tok: Callable[[str], int],
    failure: dict[str, str] | None,
    ingest_latency: float,
    scope: CallScope,
    runner: Any,
) -> tuple[EvalRow, BaseException | None]:
    pair = conv.pairs[j]
    query_latency = 0.0
    input_tokens = conv.turn_tokens
    output_tokens = 0
    raised: BaseException | None = None
    if failure is not None:
        row, _ = score_processed(
            pseudo,
            None,
            evaluators,
            system=system.name,
            score_field=conv.field,
            text_fields=(),
            tokenizer=tok,
            error=dict(failure),
        )
    else:
        error: dict[str, str] | None = None
        question = pair["question"]
        answer, raised, query_latency = _timed(
            runner, system, lambda: system.query(question)
        )
        if raised is not None:
            error = error_record(raised, "system:query")
        scope.system_calls = len(scope.usage)  # the evaluators' calls come after
        processed = None if error is not None else {**pseudo, "response": answer}
        # text_fields=() : the tokens of a memory row are set below, not from
        # the pseudo example's fields.
        row, ev_raised = score_processed(
            pseudo,
            processed,
            evaluators,
            system=system.name,
            latency=query_latency,
            score_field=conv.field,
            text_fields=(),
            tokenizer=tok,
            error=error,
        )
        raised = raised or ev_raised
        if error is None:
            reported = _reported_tokens(system)
            if reported is not None:
                input_tokens = reported
            if answer is not None:
                output_tokens = count_tokens(str(answer), tok)
    row.input_tokens = input_tokens
    row.output_tokens = output_tokens
    row.metadata.update(
        qa_type=str(pair.get("type") or "unknown"),
        ingest_latency=ingest_latency,
        query_latency=query_latency,
        conversation_id=conv.id,
        turn_count=len(conv.turns),
    )
    return row, raised


def _run_conversation(
    system: Any,
    conv: Conversation,
    evaluators: Sequence[Evaluator],
    tok: Callable[[str], int],
) -> list[EvalRow]:
    log = CallLog()
    failure, ingest_latency, usage = ingest_conversation(system, conv, log=log)
    return [
        ask_question(
            system,
            conv,
            j,
            evaluators,
            tok,
            failure,
            ingest_latency,
            usage if j == 0 else (),
            ingest_calls=log if j == 0 else None,
        )[0]
        for j in range(len(conv.pairs))
    ]


def evaluate_memory(
    systems: Any,
    dataset: Any,
    evaluators: Sequence[Evaluator] | None = None,
    metrics: Sequence[Metric] | None = None,
    max_examples: int | None = None,
    progress: bool = True,
    *,
    tokenizer: Any = None,
    threshold: float = 0.7,
    score_field: str | None = None,
) -> EvalResult:
    """Run every MemorySystem on every conversation and aggregate.

    :param systems: a MemorySystem or a list of them (``name``, ``reset()``,
        ``ingest(turns)``, ``query(question) -> str``, optionally
        ``last_context_tokens``); names must be unique.
    :param dataset: a spec (``"locomo"``, ``"locomo:temporal"``, a file of
        conversations), a loaded dataset, or any iterable of conversation dicts
        (``id``, ``turns``, ``qa_pairs``, ``dataset``).
    :param evaluators: default :class:`~pytest_context_bench.evaluators.AnswerQuality`
        (add a ``MemoryJudge`` to have answers judged by an LLM).
    :param metrics: default the standard metrics
        (:func:`~pytest_context_bench.metrics.default_metrics`) plus
        :class:`~pytest_context_bench.metrics.per_qa_type.PerQATypeMetric`.
    :param max_examples: keep the first N conversations.
    :param progress: print a progress line to stderr every 10% of a system's
        conversations.
    :param tokenizer: a tokenizer spec or ``str -> int`` callable (default tiktoken
        cl100k_base, offline).
    :param threshold: pass threshold used by the default metrics.
    :param score_field: overrides every row's primary score field (``f1`` for
        memory datasets).
    :return: one row per (system, conversation, QA pair), in system, conversation
        and question order.
    :raises SystemLoadError: a system lacks a MemorySystem attribute, or two share a
        name.
    :raises ConfigError: a bad argument or a conversation that is not
        ``{turns, qa_pairs}``, before any system runs.
    """
    from .metrics import default_metrics, summarize
    from .metrics.per_qa_type import PerQATypeMetric
    from .tokens import resolve_tokenizer

    system_list = prepare_run(
        systems, check_memory_system, max_examples, caller="evaluate_memory"
    )
    tok = resolve_tokenizer(tokenizer) if tokenizer is not None else get_tokenizer()
    examples, source = load_examples(dataset, max_examples)
    conversations = [
        Conversation(ex, i, source, score_field, tok) for i, ex in enumerate(examples)
    ]
    seen: set[str] = set()
    for conv in conversations:
        if conv.id in seen:
            raise ConfigError(
                f"two conversations have the id {conv.id!r}; their rows would share"
                " example ids. Give each conversation a distinct 'id'."
            )
        seen.add(conv.id)

    if evaluators is None:
        from .evaluators import AnswerQuality

        evs: list[Evaluator] = [AnswerQuality()]
    else:
        evs = list(evaluators)
    n_datasets = len({c.dataset for c in conversations})
    mets: list[Metric] = (
        list(metrics)
        if metrics is not None
        else [
            *default_metrics(
                score_field,
                threshold,
                n_datasets=n_datasets,
                n_systems=len(system_list),
            ),
            PerQATypeMetric(score_field=score_field),
        ]
    )

    rows: list[EvalRow] = []
    timing: dict[str, float] = {}
    total = len(conversations)
    step = max(1, total // 10)
    for system in system_list:
        start = time.perf_counter()
        for done, conv in enumerate(conversations, 1):
            rows.extend(_run_conversation(system, conv, evs, tok))
            if progress and (done % step == 0 or done == total):
                print(f"  {system.name}: {done}/{total} conversations", file=sys.stderr)
        timing[system.name] = time.perf_counter() - start

    names = [s.name for s in system_list]
    config = {
        "systems": names,
        "evaluators": [getattr(e, "name", type(e).__name__) for e in evs],
        "metrics": [getattr(m, "name", type(m).__name__) for m in mets],
        "num_examples": total,
        "num_questions": sum(len(c.pairs) for c in conversations),
    }
    return EvalResult(rows, summarize(rows, mets, names), timing, config, mets)
