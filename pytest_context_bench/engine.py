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

import sys
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Iterable, Sequence

from .errors import ConfigError, error_record as _error
from .inputs import check_unique_names, load_examples as _examples
from .inputs import prepare_run, primary_score_field as _primary_for
from .outcome import EvalResult
from .results import EvalRow
from .calls import CallScope, call_scope
from .tokens import DEFAULT_PROMPT_FIELDS, count_fields, get_tokenizer
from .types import Evaluator, Metric

__all__ = ["run_example", "score_processed", "evaluate"]

def _usage_int(usage: dict[str, Any], key: str) -> int | None:
    value = usage.get(key)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return int(value)


def _call_system(system: Any, example: dict[str, Any]) -> dict[str, Any]:
    __tracebackhide__ = True  # pytest shows the System's frames, not ours
    if (
        example.get("multi_turn")
        and "turns" in example
        and callable(getattr(system, "process_conversation", None))
    ):
        user_turns = [t for t in example["turns"] if t.get("role", "user") == "user"]
        replies = system.process_conversation(user_turns)
        texts = [
            r.get("content", "") if isinstance(r, dict) else str(r) for r in replies
        ]
        return {**example, "response": texts[-1] if texts else "", "turn_responses": texts}
    processed = system.process(example)
    if not isinstance(processed, dict):
        raise TypeError(
            f"System {system.name!r} returned {type(processed).__name__} from"
            " process(); it must return a dict, e.g. {**example, 'response': text}."
        )
    return processed


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
) -> tuple[EvalRow, BaseException | None]:
    """Count tokens and run the evaluators on an already processed example.

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
    input_counts = {f: count_fields(original, (f,), tok) for f in fields}
    input_tokens = sum(input_counts.values())
    output_tokens = 0
    scores: dict[str, float] = {}
    raised: BaseException | None = None
    if processed is not None:
        usage = processed.get("api_usage")
        prompt_tokens = None
        if isinstance(usage, dict):
            prompt_tokens = _usage_int(usage, "prompt_tokens")
            completion = _usage_int(usage, "completion_tokens")
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
                else count_fields(processed, (f,), tok)
                for f in fields
            )
        if error is None:
            owner: dict[str, str] = {}
            for ev in evaluators:
                name = getattr(ev, "name", type(ev).__name__)
                try:
                    # An evaluator may explain its verdict (CodeExecution: why the
                    # code failed); the explanation goes to the row's metadata.
                    detailed = getattr(ev, "score_details", None)
                    if callable(detailed):
                        result, details = detailed(original, processed)
                        if details:
                            metadata[name] = details
                    else:
                        result = ev.score(original, processed)
                    for key, value in result.items():
                        if key in owner:
                            raise ConfigError(
                                f"evaluators {owner[key]!r} and {name!r} both produce"
                                f" the score {key!r}; rename one."
                            )
                        owner[key] = name
                        if isinstance(value, bool) or not isinstance(value, (int, float)):
                            raise TypeError(
                                f"evaluator {name!r} returned {type(value).__name__}"
                                f" for score {key!r}; scores must be numbers."
                            )
                        scores[key] = float(value)
                except Exception as exc:
                    raised = exc
                    error = _error(exc, f"evaluator:{name}")
                    break
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


def run_example(
    system: Any,
    example: dict[str, Any],
    evaluators: Sequence[Evaluator],
    *,
    score_field: str | None = None,
    text_fields: Sequence[str] | None = None,
    tokenizer: Callable[[str], int] | None = None,
    trial: int = 1,
) -> tuple[EvalRow, BaseException | None]:
    """Run one System on one example and score it.

    Never raises for a failure of the System or an evaluator: the failure is recorded
    in ``row.error`` and returned as the second element, so the caller can show it.
    The System receives a shallow copy of the example; evaluators see the original.
    The System call and the evaluators run inside a :func:`~.calls.call_scope` naming
    the system, the example and ``trial``, for the layers below (HTTP transports).
    """
    __tracebackhide__ = True
    scope = CallScope(
        system=str(system.name),
        dataset=str(example.get("dataset", "") or ""),
        example_id=str(example.get("id", "")),
        trial=trial,
    )
    with call_scope(scope):
        return _run_example(
            system, example, evaluators, score_field, text_fields, tokenizer
        )


def _run_example(
    system: Any,
    example: dict[str, Any],
    evaluators: Sequence[Evaluator],
    score_field: str | None,
    text_fields: Sequence[str] | None,
    tokenizer: Callable[[str], int] | None,
) -> tuple[EvalRow, BaseException | None]:
    __tracebackhide__ = True
    processed: dict[str, Any] | None = None
    error: dict[str, str] | None = None
    raised: BaseException | None = None
    start = time.perf_counter()
    try:
        processed = _call_system(system, dict(example))
    except Exception as exc:
        raised, error = exc, _error(exc, "system")
    latency = time.perf_counter() - start
    row, ev_raised = score_processed(
        example,
        processed,
        evaluators,
        system=system.name,
        latency=latency,
        score_field=score_field,
        text_fields=text_fields,
        tokenizer=tokenizer,
        error=error,
    )
    return row, raised or ev_raised


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
    summary = summarize(rows, mets, names)
    config = {
        "systems": names,
        "evaluators": ev_names,
        "metrics": [getattr(m, "name", type(m).__name__) for m in mets],
        "num_examples": len(examples),
        "max_workers": max_workers or 1,
    }
    return EvalResult(rows, summary, timing, config, mets)
