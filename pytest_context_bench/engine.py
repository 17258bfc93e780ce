"""One example → one :class:`EvalRow`; and :func:`evaluate` on top of it.

The per-example path (:func:`run_example`) is shared by the Python API and the pytest
plugin, so a pytest run and ``evaluate()`` on the same data give the same rows.

Token accounting (DESIGN §4; upstream's counted every string field, so output tokens
were input + response and compression came out negative for any proxy):

* ``input_tokens``: the prompt fields (``context``, ``question``, ``turns``) of the
  original example;
* ``output_tokens``: the same fields of the processed example, or the System's own
  ``api_usage["prompt_tokens"]`` when it reports one;
* ``metadata["completion_tokens"]``: ``api_usage["completion_tokens"]`` when reported.
"""

from __future__ import annotations

import contextlib
import inspect
import json
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Sequence

from .errors import ConfigError, error_record as _error
from .inputs import check_unique_names, load_examples as _examples
from .inputs import prepare_run, primary_score_field as _primary_for
from .outcome import EvalResult
from .results import EvalRow, is_token_count
from .calls import (
    CallScope,
    call_scope,
    current_call,
    evaluator_source,
    record_io,
    serving,
)
from .netguard import REFUSED_TYPE, watching
from .tokens import DEFAULT_PROMPT_FIELDS, count_field, get_tokenizer
from .types import Evaluator, Metric

__all__ = [
    "SystemCall",
    "call_system",
    "check_unique_names",
    "evaluate",
    "run_example",
    "score_call",
    "score_processed",
]


def _usage_int(usage: dict[str, Any], key: str, system: str) -> int | None:
    """A token count of the System's ``api_usage``; None when the key is absent.

    :raises ValueError: for anything but a whole number in ``[0, 2**53]`` (NaN,
        infinities, negatives, fractions, strings, booleans...): the System's account
        is wrong, which makes the example an error rather than a wrong cost.
    """
    value = usage.get(key)
    if value is None:
        return None
    if not is_token_count(value):
        raise ValueError(
            f"System {system!r} returned api_usage[{key!r}] = {value!r}; a token"
            " count must be a whole number >= 0 (or leave the key out)."
        )
    return int(value)


def _usage(processed: dict[str, Any], system: str) -> tuple[int | None, int | None]:
    """(prompt_tokens, completion_tokens) of the System's ``api_usage``, if any."""
    usage = processed.get("api_usage")
    if usage is None:
        return None, None
    if not isinstance(usage, dict):
        raise ValueError(
            f"System {system!r} returned api_usage = {usage!r:.200}; it must be a dict"
            " such as {'prompt_tokens': 120, 'completion_tokens': 15}, or absent."
        )
    return (
        _usage_int(usage, "prompt_tokens", system),
        _usage_int(usage, "completion_tokens", system),
    )


def _is_conversation(system: Any, example: dict[str, Any]) -> bool:
    return bool(
        example.get("multi_turn")
        and "turns" in example
        and callable(getattr(system, "process_conversation", None))
    )


def _invoke(
    system: Any, example: dict[str, Any], prefer_async: bool = False
) -> tuple[Any, bool]:
    """Call the System: its raw result (maybe awaitable) and whether it was a
    conversation. ``prefer_async`` calls ``aprocess`` / ``aprocess_conversation``
    when the System has them (OpenAIProxy does)."""
    __tracebackhide__ = True
    if _is_conversation(system, example):
        from .concurrency import is_async_system

        user_turns = [t for t in example["turns"] if t.get("role", "user") == "user"]
        if prefer_async and is_async_system(system, "aprocess_conversation"):
            return system.aprocess_conversation(user_turns), True
        return system.process_conversation(user_turns), True
    if prefer_async:
        from .concurrency import is_async_system

        if is_async_system(system, "aprocess"):
            return system.aprocess(example), False
    return system.process(example), False


def _processed(
    system: Any, example: dict[str, Any], result: Any, conversation: bool
) -> dict[str, Any]:
    if conversation:
        texts = [
            r.get("content", "") if isinstance(r, dict) else str(r) for r in result
        ]
        return {**example, "response": texts[-1] if texts else "", "turn_responses": texts}
    if not isinstance(result, dict):
        raise TypeError(
            f"System {system.name!r} returned {type(result).__name__} from"
            " process(); it must return a dict, e.g. {**example, 'response': text}."
        )
    return result


def _call_system(system: Any, example: dict[str, Any], serve: bool = True) -> dict[str, Any]:
    __tracebackhide__ = True  # pytest shows the System's frames, not ours
    # In flight while it runs (in a runner's thread too; ``serve`` false: its
    # call_scope, in this thread, already counts it): a request from a thread the
    # System starts finds its owner (calls.call_owner). Connections it opens past
    # the cache are watched (netguard: refused in replay mode).
    if serve:
        with serving(), watching(_usage_of_call()):
            result, conversation = _invoke(system, example)
    else:
        with watching(_usage_of_call()):
            result, conversation = _invoke(system, example)
    return _processed(system, example, result, conversation)


async def _call_system_async(system: Any, example: dict[str, Any]) -> dict[str, Any]:
    __tracebackhide__ = True
    with serving(), watching(_usage_of_call()):
        result, conversation = _invoke(system, example, prefer_async=True)
        if inspect.isawaitable(result):
            result = await result
    return _processed(system, example, result, conversation)


def _usage_of_call() -> list[dict[str, Any]] | None:
    scope = current_call()
    return None if scope is None else scope.usage


@dataclass
class SystemCall:
    """What one System call gave: the processed example or the error, and its time.

    :func:`call_system` makes one (in this thread, or through a
    :class:`~pytest_context_bench.concurrency.CallRunner`); :func:`score_call` turns it
    into the row.
    """

    scope: CallScope
    processed: dict[str, Any] | None = None
    error: dict[str, str] | None = None
    raised: BaseException | None = None
    latency: float = 0.0
    #: evaluator position → its result computed right after the call (judges)
    ahead: dict[int, Any] | None = None


def _scope_for(system: Any, example: dict[str, Any], trial: int) -> CallScope:
    return CallScope(
        system=str(system.name),
        dataset=str(example.get("dataset", "") or ""),
        example_id=str(example.get("id", "")),
        trial=trial,
    )


def call_system(
    system: Any, example: dict[str, Any], *, trial: int = 1, runner: Any = None
) -> SystemCall:
    """Run the System on a shallow copy of ``example``, under its call scope.

    Never raises for a failure of the System: it is the call's ``error``. An async
    System, or any System when ``runner`` (a
    :class:`~pytest_context_bench.concurrency.CallRunner`) is given, runs through the
    runner (its budget, rate limit and timeout); else the call runs here.
    """
    __tracebackhide__ = True
    scope = _scope_for(system, example, trial)
    call = SystemCall(scope)
    copy = dict(example)
    start = time.perf_counter()
    try:
        with call_scope(scope):
            if runner is None and not _is_async(system):
                call.processed = _call_system(system, copy, serve=False)
                call.latency = time.perf_counter() - start
                return call
            from .concurrency import fallback_runner

            use = runner if runner is not None else fallback_runner()
            fn, is_async = call_function(system, copy)
            outcome = use.call(fn, system=system, is_async=is_async)
    except Exception as exc:
        call.raised, call.error = exc, _error(exc, "system")
        call.latency = time.perf_counter() - start
        return call
    return record_call_outcome(call, outcome)


def _is_async(system: Any) -> bool:
    """True when the System can only be awaited (``async def process``)."""
    process = getattr(system, "process", None)
    process = getattr(process, "__func__", process)  # a bound method is new each time
    known = _ASYNC.get(id(system))
    if known is not None and known[0] is system and known[1] is process:
        return known[2]
    verdict = inspect.iscoroutinefunction(process) or inspect.iscoroutinefunction(
        getattr(system, "process_conversation", None)
    )
    if len(_ASYNC) < 1024:
        _ASYNC[id(system)] = (system, process, verdict)
    return verdict


#: id(system) → (system, its process, _is_async's verdict): asked on every call
_ASYNC: dict[int, tuple[Any, Any, bool]] = {}


def call_function(
    system: Any, example: dict[str, Any]
) -> tuple[Callable[[], Any], bool]:
    """The zero-argument function a runner calls for ``system`` on ``example``, and
    whether it returns a coroutine (an async System, or one with ``aprocess``)."""
    from .concurrency import is_async_system

    name = "process_conversation" if _is_conversation(system, example) else "process"
    if is_async_system(system, name) or is_async_system(system, "a" + name):

        def awaited() -> Any:
            __tracebackhide__ = True
            return _call_system_async(system, example)

        return awaited, True

    def called() -> Any:
        __tracebackhide__ = True
        return _call_system(system, example)

    return called, False


def record_call_outcome(call: SystemCall, outcome: Any) -> SystemCall:
    """Fill ``call`` from a runner's :class:`~.concurrency.Outcome` (and issue its
    warning, in the thread that takes it: the item's)."""
    outcome.warn()
    if outcome.error is not None:
        call.raised, call.error = outcome.error, _error(outcome.error, "system")
    else:
        call.processed = outcome.value
        call.ahead = outcome.extra
    call.latency = outcome.latency
    return call


def score_call(
    call: SystemCall,
    system: Any,
    example: dict[str, Any],
    evaluators: Sequence[Evaluator],
    *,
    score_field: str | None = None,
    text_fields: Sequence[str] | None = None,
    tokenizer: Callable[[str], int] | None = None,
) -> tuple[EvalRow, BaseException | None]:
    """Score a finished :class:`SystemCall` (evaluators run under its call scope)."""
    __tracebackhide__ = True
    if call.scope.system_calls is None:
        # What the call measured so far is the System's; the evaluators' calls
        # (judges, unless already made ahead) come after this mark.
        call.scope.system_calls = len(call.scope.usage)
    facts = assertion_facts(example, call.latency, call.scope.usage[: call.scope.system_calls])
    with call_scope(call.scope), facts:
        row, ev_raised = score_processed(
            example,
            call.processed,
            evaluators,
            system=system.name,
            latency=call.latency,
            score_field=score_field,
            text_fields=text_fields,
            tokenizer=tokenizer,
            error=call.error,
            ahead=call.ahead,
        )
    bad_usage = attach_usage(row, call.scope)
    return row, call.raised or ev_raised or bad_usage


def assertion_facts(example: dict[str, Any], latency: float, usage: Sequence[Any]) -> Any:
    """A context manager giving latency, cost and max-tokens assertions what they
    read about the call being scored: its latency (ms), the money of ``usage`` (the
    System's calls; ``None`` without prices) and their tokens (prompt + completion,
    cache hits included; ``None`` when no reply was measured, or one reported a
    count that cannot be read). A no-op for an example without ``assert``."""
    if "assert" not in example:
        return contextlib.nullcontext()
    from .evaluators.assertions import call_facts
    from .pricing import active_prices, usage_summary

    prices = active_prices()
    summary = usage_summary(usage, prices or {})
    cost = None if summary is None or not prices else summary.get("cost_usd")
    tokens = (
        None if summary is None or summary.get("bad_usage")
        else int(summary["prompt_tokens"]) + int(summary["completion_tokens"])
    )
    return call_facts(latency_ms=latency * 1000.0, cost=cost, tokens=tokens)


def score_processed(
    original: dict[str, Any],
    processed: dict[str, Any] | None,
    evaluators: Sequence[Evaluator],
    *,
    system: str,
    latency: float = 0.0,
    score_field: str | None = None,
    text_fields: Sequence[str] | None = None,
    tokenizer: Callable[[str], int] | None = None,
    error: dict[str, str] | None = None,
    ahead: dict[int, Any] | None = None,
) -> tuple[EvalRow, BaseException | None]:
    """Count tokens and run the evaluators on an already processed example.

    ``ahead`` maps an evaluator's position to its result already computed (an
    :class:`~.concurrency.Outcome` of ``(scores, details)``: a judge awaited right
    after the System call); those evaluators are not called again.

    Used by :func:`run_example` and by the ``ctxbench_record`` fixture (marker form,
    where the test body produced ``processed``). ``processed=None`` with ``error``
    records a System failure.

    :returns: the row, and the exception an evaluator raised (or ``None``).
    """
    __tracebackhide__ = True
    tok = tokenizer or get_tokenizer()
    fields = tuple(text_fields) if text_fields is not None else DEFAULT_PROMPT_FIELDS
    metadata: dict[str, Any] = {"score_field": score_field or "f1"}
    # Per field, so that a field the System passed through unchanged (the same
    # object, as in {**example, "response": ...}) is not tokenized twice.
    input_counts = {f: count_field(original.get(f), tok) for f in fields}
    input_tokens = sum(input_counts.values())
    output_tokens = 0
    scores: dict[str, float] = {}
    raised: BaseException | None = None
    if processed is not None:
        # What the System returned is untrusted like its text: a value that cannot be
        # counted makes this example an error row (counted in error_rate), never a
        # crash of the accounting that would lose the row.
        try:
            prompt_tokens, completion = _usage(processed, system)
            if prompt_tokens is not None:
                metadata["prompt_tokens"] = prompt_tokens
            if completion is not None:
                metadata["completion_tokens"] = completion
            if prompt_tokens is not None:
                output_tokens = prompt_tokens
            else:
                output_tokens = sum(
                    input_counts[f]
                    if processed.get(f) is original.get(f)
                    else count_field(processed.get(f), tok)
                    for f in fields
                )
        except Exception as exc:
            if error is None:
                raised = exc
                error = _error(exc, "system")
        if error is None:
            error, raised = run_evaluators(
                original, processed, evaluators, scores, metadata, ahead
            )
    record_io(original, processed)  # the plugin's reports show them; else a no-op
    row = EvalRow(
        system=system,
        example_id=str(original.get("id", "")),
        scores=scores,
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        metadata=metadata,
        latency=latency,
        dataset=str(original.get("dataset", "") or ""),
        error=error,
    )
    return row, raised


def run_evaluators(
    original: dict[str, Any],
    processed: dict[str, Any],
    evaluators: Sequence[Evaluator],
    scores: dict[str, float],
    metadata: dict[str, Any],
    ahead: dict[int, Any] | None = None,
) -> tuple[dict[str, str] | None, BaseException | None]:
    """Run ``evaluators`` in order on one processed example: their scores into
    ``scores``, their explanations into ``metadata`` (under each one's name,
    bounded). The first that raises (or returns a score that is not a number, or one
    another evaluator produced) stops them: its error record and exception are
    returned, else ``(None, None)``. Shared by the run (:func:`score_processed`) and
    the scoring of saved answers (:mod:`pytest_context_bench.rescore`)."""
    __tracebackhide__ = True
    owner: dict[str, str] = {}
    for position, ev in enumerate(evaluators):
        name = getattr(ev, "name", type(ev).__name__)
        try:
            # An evaluator may explain its verdict (why the code failed, which
            # tokens were missing); the explanation goes to the row's metadata,
            # capped (details.py: it quotes untrusted text).
            detailed = getattr(ev, "score_details", None)
            done = ahead.get(position) if ahead else None
            if done is not None:
                result, details = done.result()
                if details:
                    metadata[name] = _bounded(details)
            elif callable(detailed):
                with evaluator_source(name):  # its LLM calls are its own
                    result, details = detailed(original, processed)
                if details:
                    metadata[name] = _bounded(details)
            else:
                with evaluator_source(name):
                    result = ev.score(original, processed)
            for key, value in result.items():
                if key in owner:
                    raise ConfigError(
                        f"evaluators {owner[key]!r} and {name!r} both produce"
                        f" the score {key!r}; rename one."
                    )
                owner[key] = name
                if type(value) is not float:
                    if isinstance(value, bool) or not isinstance(value, (int, float)):
                        raise TypeError(
                            f"evaluator {name!r} returned {type(value).__name__}"
                            f" for score {key!r}; scores must be numbers."
                        )
                    value = float(value)
                scores[key] = value
        except Exception as exc:
            return _error(exc, f"evaluator:{name}"), exc
    return None, None


def _bounded(details: Any) -> Any:
    # Imported here: a pytest run that uses no ctxbench option loads no more.
    from .details import bounded

    return bounded(details)


def run_example(
    system: Any,
    example: dict[str, Any],
    evaluators: Sequence[Evaluator],
    *,
    score_field: str | None = None,
    text_fields: Sequence[str] | None = None,
    tokenizer: Callable[[str], int] | None = None,
    trial: int = 1,
    runner: Any = None,
) -> tuple[EvalRow, BaseException | None]:
    """Run one System on one example and score it.

    Never raises for a failure of the System or an evaluator: the failure is recorded
    in ``row.error`` and returned as the second element, so the caller can show it.
    The System receives a shallow copy of the example; evaluators see the original.
    The System call and the evaluators run inside a :func:`~.calls.call_scope` naming
    the system, the example and ``trial``, for the layers below (HTTP transports).
    An ``async def process`` is awaited on the process's event loop; ``runner`` (a
    :class:`~pytest_context_bench.concurrency.CallRunner`) applies its budget, rate
    limit and per-call timeout to the call.
    """
    __tracebackhide__ = True
    call = call_system(system, example, trial=trial, runner=runner)
    return score_call(
        call,
        system,
        example,
        evaluators,
        score_field=score_field,
        text_fields=text_fields,
        tokenizer=tokenizer,
    )


_MISS_TYPE = "pytest_context_bench.cache.CacheMiss"


def attach_usage(row: EvalRow, scope: CallScope) -> BaseException | None:
    """Put what the HTTP transports measured during ``scope`` into ``row.metadata``.

    ``llm_usage`` (the System's calls: tokens, calls sent, cache hits, models) and
    ``cost_usd`` / ``saved_usd`` when prices are set; ``judge_usage`` /
    ``judge_cost_usd`` for the evaluators' calls (LLM judges, embeddings), kept apart
    so that the System's cost of pass does not include the judge. When the System
    met a replay-mode cache miss (answered with an HTTP 404 that SDKs do not retry:
    :func:`~.transports.miss_response`), the row is an error naming the cache miss,
    whatever the System made of it (the SDK's ``NotFoundError``, another exception,
    or nothing: the miss is then returned for the caller to raise).
    A reply whose usage holds a count that is not a whole number >= 0 (NaN,
    negative...) makes the row an error (:class:`~.transports.BadUsageError`, which
    is returned for the caller to raise; ``None`` otherwise). The records of the
    calls (``--ctxbench-transcripts``) move from the scope to ``row.calls``.
    """
    calls, omitted = scope.log.take()
    if calls or omitted:
        row.calls, row.calls_omitted = calls, omitted
    if not scope.usage:
        return None  # no call measured: nothing to add, nothing to name
    from .pricing import active_prices, usage_summary

    prices = active_prices()
    cut = scope.system_calls if scope.system_calls is not None else len(scope.usage)
    for part, key, money in (
        (scope.usage[:cut], "llm_usage", "cost_usd"),
        (scope.usage[cut:], "judge_usage", "judge_cost_usd"),
    ):
        summary = usage_summary(part, prices)
        if summary is None:
            continue
        if "cost_usd" in summary:
            row.metadata[money] = summary.pop("cost_usd")
            row.metadata["saved_usd" if key == "llm_usage" else "judge_saved_usd"] = (
                summary.pop("saved_usd")
            )
        row.metadata[key] = summary
    bad = [str(u["bad_usage"]) for u in scope.usage if "bad_usage" in u]
    if bad and row.error is None:
        # A reply reporting NaN or negative tokens: the example's tokens and money
        # are unknown, which makes it an error row (as a bad api_usage does), never
        # a row scored at 0 tokens and $0.
        from .transports import BadUsageError

        exc = BadUsageError(bad[0])
        row.error = _error(exc, "system")
        row.scores = {}
        raised: BaseException | None = exc
    else:
        raised = None
    misses = [u for u in scope.usage if "error" in u]
    if misses and row.error is None:
        # A replay-mode miss the System did not raise (it read the 404 its SDK got,
        # or caught the error): the example is an error row all the same, never
        # scored on what the System made of a reply that was not sent.
        miss = misses[0].get("exception")
        row.error = {
            "type": _MISS_TYPE,
            "message": str(misses[0]["error"]),
            "where": "system",
        }
        row.scores = {}
        if raised is None and isinstance(miss, BaseException):
            raised = miss
    elif misses and row.error is not None and row.error["type"] != _MISS_TYPE:
        # The SDK's exception for the miss's 404 (openai.NotFoundError), or whatever
        # the System made of it: the row names the cache miss.
        said = str(misses[0]["error"])
        theirs = row.error["message"]
        raised_by = f"the System raised {row.error['type']}"
        row.error = {
            **row.error,
            "type": _MISS_TYPE,
            "message": f"{said} ({raised_by})"
            if said in theirs
            else f"{said} ({raised_by}: {theirs})",
        }
    _name_cut_stream(row, scope)
    return _bypassed(row, scope, raised)


def _name_cut_stream(row: EvalRow, scope: CallScope) -> None:
    """A row in error after a stream of its call was cut short (transports.py: its
    body ended before its end event): the row's message says so first, naming the
    URL and what was missing, whatever the SDK made of it (the OpenAI SDK's
    ``APIConnectionError: Connection error.``)."""
    cuts = [str(u["cut_short"]) for u in scope.usage if u.get("cut_short")]
    if not cuts or row.error is None or cuts[-1] in row.error["message"]:
        return
    theirs = f"{row.error['type']}: {row.error['message']}"
    row.error = {**row.error, "message": f"{cuts[-1]} (the System raised {theirs})"}


def _bypassed(
    row: EvalRow, scope: CallScope, raised: BaseException | None
) -> BaseException | None:
    """Connections the System call opened past the cache (netguard): counted in
    ``row.metadata`` (``refused_connections`` in replay mode,
    ``bypassed_connections`` otherwise: address → how many); a refused one makes
    the row an error naming it, whatever the System made of the exception."""
    seen = [u for u in scope.usage if "bypass" in u]
    if not seen:
        return raised
    refused = [u for u in seen if u.get("refused")]
    counts: dict[str, int] = {}
    for u in seen:
        counts[str(u["bypass"])] = counts.get(str(u["bypass"]), 0) + 1
    row.metadata["refused_connections" if refused else "bypassed_connections"] = counts
    if not refused or (row.error is not None and row.error["type"] == REFUSED_TYPE):
        return raised
    exc = refused[0]["exception"]
    said = str(exc)
    if row.error is None:
        row.error = _error(exc, "system")
        raised = raised or exc
    else:
        theirs = f"{row.error['type']}: {row.error['message']}"
        row.error = {
            **row.error,
            "type": REFUSED_TYPE,
            "message": f"{said} (the row's error was {theirs})",
        }
    row.scores = {}
    return raised


def _check_judged(examples: Sequence[dict[str, Any]], evaluators: Sequence[Any]) -> None:
    """Refuse examples that need an LLM judge (a ``rubric`` field, an
    ``llm-rubric`` assertion) when no evaluator can ask one."""
    from .evaluators import check_judged

    wants: dict[str, str] = {}
    for ex in examples:
        if "rubric" in ex and "rubric" not in wants:
            wants["rubric"] = f"example {ex.get('id')!s}"
        if "llm-rubric" not in wants and "llm-rubric" in json.dumps(ex.get("assert", []), default=str):
            wants["llm-rubric"] = f"example {ex.get('id')!s}"
    if not wants:
        return
    problem = check_judged(wants, evaluators, None)
    if problem is not None:
        raise ConfigError(
            f"{problem}: add an LLMJudge(base_url=...) to the evaluators (docs/llm.md,"
            ' "Rubrics").'
        )


def default_evaluators(
    families: Iterable[str], options: dict[str, dict[str, Any]] | None = None
) -> list[Evaluator]:
    """The evaluators auto-wired for a set of dataset families (see
    :func:`pytest_context_bench.evaluators.evaluators_for`)."""
    from .evaluators import evaluators_for

    return evaluators_for(families, options)


def evaluate(
    systems: Any,
    dataset: Any,
    evaluators: Sequence[Evaluator] | None = None,
    metrics: Sequence[Metric] | None = None,
    max_examples: int | None = None,
    progress: bool = True,
    text_fields: Sequence[str] | None = None,
    max_workers: int | None = None,
    *,
    score_field: str | None = None,
    threshold: float = 0.7,
    tokenizer: Any = None,
) -> EvalResult:
    """Run every System on every example and aggregate.

    :param systems: a System or a list of them; names must be unique.
    :param dataset: a spec (``"path/to/qa.jsonl"`` or a registered name), a loaded
        dataset, or any iterable of example dicts.
    :param evaluators: defaults to the ones auto-wired for the dataset's family.
    :param metrics: defaults to mean score, pass rate, compression, cost of pass,
        latency and error rate (+ per-dataset and Pareto rank when relevant).
    :param max_examples: keep the first N examples.
    :param progress: print a progress line to stderr every 10% of a system's run.
    :param text_fields: the prompt fields counted as tokens (default
        ``context``, ``question``, ``turns``).
    :param max_workers: threads per system (``None``/1: sequential); rows keep the
        example order either way.
    :param score_field: overrides every example's primary score field.
    :param threshold: pass threshold used by the default metrics.
    :param tokenizer: a tokenizer spec or ``str -> int`` callable (default
        tiktoken cl100k_base, offline).
    """
    from .metrics import default_metrics, summarize
    from .tokens import resolve_tokenizer

    from .importing import check_system

    system_list = prepare_run(systems, check_system, max_examples, caller="evaluate")
    if max_workers is not None and max_workers < 1:
        raise ConfigError(f"max_workers must be >= 1, got {max_workers}.")
    examples, source = _examples(dataset, max_examples)
    tok = resolve_tokenizer(tokenizer) if tokenizer is not None else get_tokenizer()
    families = [getattr(source, "family", None) or ex.get("task") or "qa" for ex in examples]
    # Auto-wired evaluators apply per example family (a math example is not also
    # scored by ROUGE); evaluators given explicitly apply to every example.
    by_family: dict[str, list[Evaluator]] = {}
    for fam in families:
        if fam not in by_family:
            by_family[fam] = (
                list(evaluators) if evaluators is not None else default_evaluators({fam})
            )
    from .evaluators import example_fields, field_evaluators

    fields = {name for ex in examples for name in example_fields(ex)}
    if fields:
        # Evaluators an example's own fields call for (expected_tool_calls:
        # ToolCallMatch, expected_trajectory: TrajectoryMatch), unless the caller's
        # evaluators have one of the same name (other options); each scores only
        # the examples carrying its field.
        by_family = {fam: [*evs, *field_evaluators(fields, evs)] for fam, evs in by_family.items()}
    if any("assert" in ex for ex in examples):
        # The examples' own assertions (docs/assertions.md); file:// paths are read
        # from the dataset file's directory (else the current one).
        from .evaluators.assertions import Assertions

        path = getattr(source, "path", None)
        given = [e for e in (evaluators or ()) if getattr(e, "name", None) == "assertions"]
        # The llm-rubric assertions ask the LLMJudge given among the evaluators.
        judge = next((e for e in (evaluators or ()) if getattr(e, "name", None) == "llm_judge"), None)
        checks = given[0] if given else Assertions(
            os.path.dirname(os.path.abspath(path)) if isinstance(path, str) else None, judge=judge)
        by_family = {fam: evs if checks in evs else [*evs, checks] for fam, evs in by_family.items()}
    _check_judged(examples, [e for evs in by_family.values() for e in evs])
    example_evs = [by_family[fam] for fam in families]
    ev_names = list(
        dict.fromkeys(
            getattr(e, "name", type(e).__name__) for group in by_family.values() for e in group
        )
    )
    fields = [score_field or _primary_for(ex, source) for ex in examples]
    n_datasets = len({ex.get("dataset", "") for ex in examples})
    mets = (
        list(metrics)
        if metrics is not None
        else default_metrics(
            score_field, threshold, n_datasets=n_datasets, n_systems=len(system_list)
        )
    )

    rows: list[EvalRow] = []
    timing: dict[str, float] = {}
    for system in system_list:

        def one(i: int, system: Any = system) -> EvalRow:
            row, _ = run_example(
                system,
                examples[i],
                example_evs[i],
                score_field=fields[i],
                text_fields=text_fields,
                tokenizer=tok,
            )
            return row

        start = time.perf_counter()
        total = len(examples)
        step = max(1, total // 10)
        done = 0
        if max_workers and max_workers > 1:
            with ThreadPoolExecutor(max_workers=max_workers) as pool:
                system_rows = []
                for row in pool.map(one, range(total)):
                    system_rows.append(row)
                    done += 1
                    if progress and (done % step == 0 or done == total):
                        print(f"  {system.name}: {done}/{total}", file=sys.stderr)
        else:
            system_rows = []
            for i in range(total):
                system_rows.append(one(i))
                done += 1
                if progress and (done % step == 0 or done == total):
                    print(f"  {system.name}: {done}/{total}", file=sys.stderr)
        timing[system.name] = time.perf_counter() - start
        rows.extend(system_rows)

    names = [s.name for s in system_list]
    if metrics is None and any(
        "llm_usage" in r.metadata or "judge_usage" in r.metadata for r in rows
    ):
        # Calls were measured at the HTTP transport: money joins the defaults.
        from .metrics import LLMTokens, MoneyCost

        mets.append(MoneyCost(threshold=threshold, score_field=score_field))
        mets.append(LLMTokens(threshold=threshold, score_field=score_field))
    summary = summarize(rows, mets, names)
    config = {
        "systems": names,
        "evaluators": ev_names,
        "metrics": [getattr(m, "name", type(m).__name__) for m in mets],
        "num_examples": len(examples),
        "max_workers": max_workers or 1,
    }
    return EvalResult(rows, summary, timing, config, mets)
