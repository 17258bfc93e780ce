"""Built-in evaluators: each scores one (original, processed) pair.

Auto-wiring (:func:`evaluators_for`): every dataset gets :class:`AnswerQuality`
(it scores only examples with an ``answer``), plus the evaluators of its family.
An evaluator scores only examples carrying the fields it needs and returns ``{}``
for the others, so a run mixing families never gets a made-up 0 or 1.
"""

from __future__ import annotations

import importlib
import threading
from typing import TYPE_CHECKING, Any, Callable, Iterable, Mapping

from .answer_quality import AnswerQuality

if TYPE_CHECKING:
    from .code_execution import CodeExecution
    from .ifeval import IFEvalChecker
    from .judges import AnswerCorrectness, JudgeError, LLMJudge, MemoryJudge
    from .math_equivalence import MathEquivalence
    from .multiple_choice import MultipleChoiceAccuracy, extract_choice
    from .nli import NLILabelMatch, extract_label
    from .summarization import SummarizationQuality
    from .tool_calls import ToolCallMatch
    from .trajectory import TrajectoryMatch

__all__ = [
    "AnswerQuality",
    "AnswerCorrectness",
    "JudgeError",
    "LLMJudge",
    "MemoryJudge",
    "CodeExecution",
    "IFEvalChecker",
    "MathEquivalence",
    "SummarizationQuality",
    "MultipleChoiceAccuracy",
    "NLILabelMatch",
    "ToolCallMatch",
    "TrajectoryMatch",
    "extract_choice",
    "extract_label",
    "FAMILY_EVALUATORS",
    "FIELD_EVALUATORS",
    "check_judged",
    "evaluators_for",
    "example_fields",
    "wired_evaluators",
    "field_evaluators",
    "field_problem",
    "field_primary_score",
    "field_score_keys",
    "judge_kwargs",
]

# Imported on first use (PEP 562): a QA run should not pay for httpx, the sandbox,
# SymPy's bridge or the IFEval tables (about 10 MB and 100 ms at import).
_LAZY = {
    "AnswerCorrectness": "judges",
    "JudgeError": "judges",
    "LLMJudge": "judges",
    "MemoryJudge": "judges",
    "CodeExecution": "code_execution",
    "IFEvalChecker": "ifeval",
    "MathEquivalence": "math_equivalence",
    "SummarizationQuality": "summarization",
    "MultipleChoiceAccuracy": "multiple_choice",
    "extract_choice": "multiple_choice",
    "NLILabelMatch": "nli",
    "extract_label": "nli",
    "ToolCallMatch": "tool_calls",
    "TrajectoryMatch": "trajectory",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


#: family → the evaluators (class names in this package) it adds to AnswerQuality,
#: in order. (Its primary score is ``datasets.PRIMARY_SCORE[family]``.)
FAMILY_EVALUATORS: dict[str, tuple[str, ...]] = {
    "qa": (),
    "summarization": ("SummarizationQuality",),
    "math": ("MathEquivalence",),
    "multiple_choice": ("MultipleChoiceAccuracy",),
    "nli": ("NLILabelMatch",),
    "ifeval": ("IFEvalChecker",),
    "code": ("CodeExecution",),
    # LLMJudge / MemoryJudge are wired when a judge endpoint is configured.
    "conversation": (),
    "memory": (),
}


#: class name → the score keys it can produce (docs/evaluators.md): what lets a
#: misspelt score field be refused before any example runs.
SCORE_KEYS: dict[str, tuple[str, ...]] = {
    "AnswerQuality": ("f1", "exact_match", "recall", "contains"),
    "SummarizationQuality": (
        "rouge_l_precision", "rouge_l_recall", "rouge_l_f1",
        "rouge_lsum_precision", "rouge_lsum_recall", "rouge_lsum_f1",
    ),
    "MultipleChoiceAccuracy": ("mc_accuracy",),
    "MathEquivalence": ("math_equiv",),
    "NLILabelMatch": ("nli_accuracy",),
    "IFEvalChecker": ("ifeval_strict", "ifeval_loose", "ifeval_inst_strict", "ifeval_inst_loose"),
    "CodeExecution": ("pass_at_1",),
    "LLMJudge": ("judge_score", "judge_pass"),
    "MemoryJudge": ("memory_judge", "memory_judge_raw"),
    # wired by an example's field, not by a family (FIELD_EVALUATORS)
    "ToolCallMatch": ("tool_call_match", "tool_call_f1", "tool_call_name_f1"),
    "TrajectoryMatch": ("trajectory_match",),
}

#: example field → the evaluator (class name in this package) an example carrying
#: it is scored by, whatever its family, and the score that then judges it (its
#: primary score, unless the example has ``assert``; an example with several of
#: these fields is judged by the first in this order): wired by the field's
#: presence in a dataset, as assertions are. The one table every path reads
#: (command-line datasets, the marker, evaluate(), promptfoo tests files).
FIELD_EVALUATORS: dict[str, tuple[str, str]] = {
    "expected_tool_calls": ("ToolCallMatch", "tool_call_match"),
    "expected_trajectory": ("TrajectoryMatch", "trajectory_match"),
    # The judge of the run (--ctxbench-judge-url), applying the example's rubric;
    # its verdict (judge_pass) decides the row (docs/llm.md, "Rubrics").
    "rubric": ("LLMJudge", "judge_score"),
}

#: Evaluators of :data:`FIELD_EVALUATORS` built from the run's judge options
#: (``options["judge"]``: its endpoint), not from options of their own name.
_JUDGED = frozenset({"LLMJudge"})

#: The keyword arguments of the run's judge options each judge class takes.
_JUDGE_KWARGS: dict[str, frozenset[str]] = {
    "MemoryJudge": frozenset({"base_url", "model", "api_key", "timeout", "max_retries",
                              "retry_base_delay", "repeat"}),
}


def judge_kwargs(class_name: str, options: Mapping[str, Any]) -> dict[str, Any]:
    """The run's judge options (``--ctxbench-judge-*``) that ``class_name`` takes."""
    allowed = _JUDGE_KWARGS.get(class_name)
    return {k: v for k, v in options.items() if allowed is None or k in allowed}


def example_fields(example: Mapping[str, Any]) -> list[str]:
    """The fields of :data:`FIELD_EVALUATORS` that ``example`` carries, in the
    table's order."""
    return [name for name in FIELD_EVALUATORS if name in example]


def field_primary_score(example: Mapping[str, Any]) -> str | None:
    """The score an example's own field calls for (``tool_call_match`` for
    ``expected_tool_calls``...), ``None`` when it carries none of them."""
    for name, (_, score) in FIELD_EVALUATORS.items():
        if name in example:
            return score
    return None


def field_problem(example: Mapping[str, Any]) -> str | None:
    """Why one of ``example``'s fields of :data:`FIELD_EVALUATORS` (or the
    ``tools`` ToolCallMatch reads) cannot be used, naming the field (``field
    'expected_tool_calls[0]' must be an object...``), or ``None``: what every
    dataset loader checks before the first example runs."""
    if "expected_tool_calls" in example or "tools" in example:
        from .tool_calls import tool_fields_problem

        problem = tool_fields_problem(example)
        if problem is not None:
            return problem
    if "expected_trajectory" in example:
        from .trajectory import TrajectoryError, check_example

        try:
            check_example(example)
        except TrajectoryError as exc:
            return str(exc)
    if "rubric" in example:
        from .rubric import RubricError, rubric_of

        try:
            rubric_of(example["rubric"])
        except RubricError as exc:
            return str(exc)
    return None


def field_score_keys(fields: Iterable[str]) -> set[str]:
    """Every score key the evaluators wired for ``fields`` can produce."""
    return {
        key
        for name in fields
        if name in FIELD_EVALUATORS
        for key in SCORE_KEYS.get(FIELD_EVALUATORS[name][0], ())
    }


def field_evaluators(
    fields: Iterable[str],
    beside: Iterable[Any] = (),
    options: Mapping[str, Mapping[str, Any]] | None = None,
) -> list[Any]:
    """The evaluators :data:`FIELD_EVALUATORS` wires for examples carrying
    ``fields`` (one shared instance per class and options, per process), in the
    table's order; none whose name an evaluator of ``beside`` already has (a
    ``ToolCallMatch`` or ``TrajectoryMatch`` given with modes of its own, by the
    marker, evaluate() or --ctxbench-evaluator, is not doubled by the default one).

    :param options: constructor keyword arguments per evaluator name, as for
        :func:`evaluators_for`.
    """
    present = set(fields)
    taken = {getattr(e, "name", None) for e in beside}
    out = []
    for field_name, (class_name, _) in FIELD_EVALUATORS.items():
        if field_name not in present:
            continue
        factory: Callable[..., Any] = __getattr__(class_name)
        name = getattr(factory, "name", None)
        if name in taken:
            continue
        if class_name in _JUDGED:
            judge = (options or {}).get("judge")
            if not judge:
                # No endpoint: nothing to build. The plugin and evaluate() refuse
                # such a run before it starts (check_judged).
                continue
            kwargs = judge_kwargs(class_name, judge)
        else:
            kwargs = dict((options or {}).get(name or "", {}))
        out.append(_shared_instance(factory, kwargs))
        taken.add(name)
    return out


def check_judged(
    examples_with: Mapping[str, str], evaluators: Iterable[Any], options: Mapping[str, Any] | None
) -> str | None:
    """Why examples that need a judge cannot get one, or ``None``.

    :param examples_with: what needs a judge → where (``{"rubric": "example
        qa/3", "llm-rubric": "in qa.jsonl"}``).
    :param evaluators: the evaluators given (an ``llm_judge`` among them serves the
        rubrics; an ``assertions`` evaluator built with a judge serves llm-rubric).
    :param options: the run's evaluator options (``"judge"``: the endpoint).
    """
    if (options or {}).get("judge"):
        return None
    evs = list(evaluators)
    wants = []
    if "rubric" in examples_with and not any(getattr(e, "name", None) == "llm_judge" for e in evs):
        where = examples_with["rubric"]
        wants.append("a 'rubric' field" + (f" ({where})" if where else ""))
    if "llm-rubric" in examples_with and not any(
        getattr(e, "name", None) == "assertions" and getattr(e, "judge", None) is not None
        for e in evs
    ):
        where = examples_with["llm-rubric"]
        wants.append("an llm-rubric assertion" + (f" ({where})" if where else ""))
    if not wants:
        return None
    return (
        f"examples with {' and '.join(wants)} need an LLM judge, and none is"
        " configured"
    )


def score_keys_for(
    families: Iterable[str], options: Mapping[str, Mapping[str, Any]] | None = None
) -> set[str]:
    """Every score key the evaluators :func:`evaluators_for` wires for ``families``
    can produce (nothing is built)."""
    fams = set(families)
    names = ["AnswerQuality"] + [c for f in fams for c in FAMILY_EVALUATORS.get(f, ())]
    if (options or {}).get("judge"):
        names.append("MemoryJudge" if fams == {"memory"} else "LLMJudge")
    return {key for name in names for key in SCORE_KEYS.get(name, ())}


_shared: dict[tuple[Any, ...], Any] = {}
_shared_lock = threading.Lock()


def _shared_instance(factory: Callable[..., Any], kwargs: Mapping[str, Any]) -> Any:
    """The one instance of ``factory(**kwargs)`` of this process (built on first
    use, under the lock)."""
    key = (factory, tuple(sorted(kwargs.items())))
    with _shared_lock:
        ev = _shared.get(key)
        if ev is None:
            ev = _shared[key] = factory(**kwargs)
    return ev


def evaluators_for(
    families: Iterable[str], options: Mapping[str, Mapping[str, Any]] | None = None
) -> list[Any]:
    """The auto-wired evaluators for a set of families: AnswerQuality first, then
    each family's own, each once, in a stable order.

    :param families: dataset families (``qa``, ``code``, ...).
    :param options: constructor keyword arguments per evaluator name, e.g.
        ``{"code_execution": {"timeout": 5.0}}``. A ``"judge"`` entry
        (``{"base_url": ..., "model": ...}``) adds a judge to every family: MemoryJudge
        for ``memory``, LLMJudge for the others (as seed 001: "any dataset when
        --judge-url is provided").

    Evaluators are shared within a process per (class, options): CodeExecution keeps
    a pre-started sandbox parent, which every example of the run reuses.
    """
    out: list[Any] = [AnswerQuality()]
    seen: set[str] = set()
    for family in sorted(set(families)):
        for class_name in FAMILY_EVALUATORS.get(family, ()):
            if class_name in seen:
                continue
            seen.add(class_name)
            factory: Callable[..., Any] = __getattr__(class_name)
            kwargs = dict((options or {}).get(getattr(factory, "name", ""), {}))
            key = (factory, tuple(sorted(kwargs.items())))
            with _shared_lock:
                ev = _shared.get(key)
                if ev is None:
                    ev = _shared[key] = factory(**kwargs)
            out.append(ev)
    judge = (options or {}).get("judge")
    if judge:
        fams = set(families)
        class_name = "MemoryJudge" if fams == {"memory"} else "LLMJudge"
        judge_class: Callable[..., Any] = __getattr__(class_name)
        out.append(_shared_instance(judge_class, judge_kwargs(class_name, judge)))
    return out


def wired_evaluators(
    dataset: Any,
    evaluators: Iterable[Any] | None = None,
    extra: Iterable[Any] = (),
    options: Mapping[str, Mapping[str, Any]] | None = None,
) -> list[Any]:
    """The evaluators of a run's dataset, as every entry point wires them: ``evaluators``
    (the marker's), else the dataset family's (:func:`evaluators_for`); then
    ``extra`` (``--ctxbench-evaluator``); then those its examples' fields call for
    (:func:`field_evaluators`, unless one of the same name is already there); then
    the examples' own assertions when they have some (relative ``file://`` paths
    read from the dataset file's directory).

    :param dataset: a loaded dataset (``family``, and ``evaluator_fields``,
        ``assertion_metrics`` and ``path`` when it has them).
    :param options: constructor keyword arguments per evaluator name.
    """
    import os

    evs = list(evaluators) if evaluators is not None else evaluators_for({dataset.family}, options)
    evs.extend(extra)
    fields = getattr(dataset, "evaluator_fields", ())
    if fields:
        evs.extend(field_evaluators(fields, evs, options))
    if getattr(dataset, "assertion_metrics", None) is not None:
        from .assertions import Assertions

        path = getattr(dataset, "path", None)
        base = os.path.dirname(os.path.abspath(path)) if isinstance(path, str) else None
        evs.append(Assertions(base_dir=base, judge=rubric_judge(evs, options or {})))
    return evs


def rubric_judge(evaluators: Iterable[Any], options: Mapping[str, Any]) -> Any:
    """The judge of llm-rubric assertions: an LLMJudge among ``evaluators`` (the
    marker's), else the run's (--ctxbench-judge-url), else ``None``."""
    for ev in evaluators:
        if getattr(ev, "name", None) == "llm_judge":
            return ev
    judge = options.get("judge")
    if not judge:
        return None
    from .judges import LLMJudge

    return _shared_instance(LLMJudge, judge_kwargs("LLMJudge", judge))
