"""Built-in evaluators: each scores one (original, processed) pair.

Auto-wiring (:func:`evaluators_for`): every dataset gets :class:`AnswerQuality`
(it scores only examples with an ``answer``), plus the evaluators of its family.
An evaluator scores only examples carrying the fields it needs and returns ``{}``
for the others, so a run mixing families never gets a made-up 0 or 1.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable

from .answer_quality import AnswerQuality
from .ifeval import IFEvalChecker
from .multiple_choice import MultipleChoiceAccuracy, extract_choice
from .nli import NLILabelMatch, extract_label

__all__ = [
    "AnswerQuality",
    "IFEvalChecker",
    "MultipleChoiceAccuracy",
    "NLILabelMatch",
    "extract_choice",
    "extract_label",
    "FAMILY_EVALUATORS",
    "evaluators_for",
]

#: family → factories of the evaluators it adds to AnswerQuality, in order.
#: (Its primary score is ``datasets.PRIMARY_SCORE[family]``.)
FAMILY_EVALUATORS: dict[str, tuple[Callable[[], Any], ...]] = {
    "qa": (),
    "multiple_choice": (MultipleChoiceAccuracy,),
    "nli": (NLILabelMatch,),
    "ifeval": (IFEvalChecker,),
    # LLMJudge / MemoryJudge are wired when a judge endpoint is configured.
    "conversation": (),
    "memory": (),
}


def evaluators_for(families: Iterable[str]) -> list[Any]:
    """The auto-wired evaluators for a set of families: AnswerQuality first, then
    each family's own, each once, in a stable order."""
    out: list[Any] = [AnswerQuality()]
    seen: set[Callable[[], Any]] = set()
    for family in sorted(set(families)):
        for factory in FAMILY_EVALUATORS.get(family, ()):
            if factory not in seen:
                seen.add(factory)
                out.append(factory())
    return out
