"""The ``llm-rubric`` assertion: promptfoo's model-graded check, through our judge.

The judge is sent promptfoo's own grading prompt (:data:`GRADING_SYSTEM` and the
``<Output>`` / ``<Rubric>`` user message, the output written as promptfoo's
templating writes it: :func:`grading_output`) and answers with a JSON object
``{reason, pass, score}``; the verdict is read with promptfoo's rules
(:func:`read_grading`): ``pass`` defaults to true, ``score`` to ``pass`` as 1 or 0,
an assertion ``threshold`` fails a score below it, ``not-llm-rubric`` inverts the
verdict and takes ``1 - score``. tests/oracles/promptfoo/rubric_expected.json holds
promptfoo 0.121.20's own verdicts (and the prompts it sent) case by case.

Where promptfoo turns an unreadable reply into a silent verdict, here it is the
row's error (docs/differences.md): no JSON object in the reply, a ``score`` that
is not a number from 0 to 1 (``"NaN"``, ``"11/10"``, ``7``), a ``pass`` that is
neither a boolean nor a yes/no word, a reply with neither ``pass`` nor ``score``,
and a judge that cannot be reached.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from .._json import js_number

__all__ = ["GRADING_SYSTEM", "grading_messages", "grading_output", "read_grading"]

#: promptfoo's default grading prompt (its system message), word for word: the
#: verdicts are promptfoo's only when the judge is asked the same question.
GRADING_SYSTEM = """\
You are grading output according to a user-specified rubric. If the statement in \
the rubric is true, then the output passes the test. You respond with a JSON object \
with this structure: {reason: string, pass: boolean, score: number}

Examples:

<Output>Hello world</Output>
<Rubric>Content contains a greeting</Rubric>
{"reason": "the content contains the word 'Hello'", "pass": true, "score": 1.0}

<Output>Avast ye swabs, repel the invaders!</Output>
<Rubric>Does not speak like a pirate</Rubric>
{"reason": "'avast ye' is a common pirate term", "pass": false, "score": 0.0}"""

_TRUE_WORDS = frozenset({"true", "yes", "pass", "y"})
_FALSE_WORDS = frozenset({"false", "no", "fail", "n"})
_DECIMAL = re.compile(r"\s*[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?\s*")
_REASON_CAP = 2000


class GradingProblem(ValueError):
    """A grading reply that gives no verdict (raised as the judge's JudgeError)."""


def grading_messages(rubric: str, output: str) -> list[dict[str, str]]:
    """The messages promptfoo sends its grader for ``output`` and ``rubric``."""
    return [
        {"role": "system", "content": GRADING_SYSTEM},
        {
            "role": "user",
            "content": f"<Output>\n{grading_output(output)}\n</Output>\n<Rubric>\n{rubric}\n</Rubric>",
        },
    ]


def grading_output(output: str) -> str:
    """The output as promptfoo's grading template writes it: text that is not JSON
    as it is; JSON as its value prints (an object as compact JSON, a string without
    its quotes, ``null`` as nothing, a number as JavaScript prints it, an array as
    its items joined by commas, objects among them as JSON)."""
    from ._jsontext import _strict_json

    try:
        value = _strict_json(output)
    except Exception:
        return output
    return _printed(value, top=True)


def _printed(value: Any, top: bool = False) -> str:
    if value is None:
        return ""
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, str):
        return value
    if isinstance(value, (int, float)):
        return js_number(float(value)) if isinstance(value, float) or abs(value) >= 2**53 else str(value)
    if isinstance(value, dict) or (isinstance(value, list) and not top):
        return _stringify(value)
    # An array at the top: its items (objects and arrays as JSON) joined by commas,
    # as JavaScript prints an array.
    return ",".join("" if item is None else _printed(item) if not isinstance(item, (dict, list))
                    else _stringify(item) for item in value)


def _stringify(value: Any) -> str:
    """``JSON.stringify(value)``: compact, numbers as JavaScript writes them, an
    object's integer-like keys first in ascending order (JavaScript's key order)."""
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, (int, float)):
        number = float(value)
        if not math.isfinite(number):
            return "null"
        return js_number(number) if isinstance(value, float) or abs(value) >= 2**53 else str(value)
    if isinstance(value, list):
        return "[" + ",".join(_stringify(v) for v in value) + "]"
    keys = list(value)
    index_like = sorted((k for k in keys if re.fullmatch(r"0|[1-9]\d{0,8}", k)), key=int)
    ordered = index_like + [k for k in keys if k not in index_like]
    return "{" + ",".join(f"{json.dumps(k, ensure_ascii=False)}:{_stringify(value[k])}"
                          for k in ordered) + "}"


def read_grading(
    reply: str, threshold: float | None, inverse: bool
) -> tuple[bool, float, str]:
    """``(pass, score, reason)`` of a grading reply, with promptfoo's rules.

    :raises GradingProblem: for a reply that gives no verdict (see the module
        docstring).
    """
    from ._jsontext import iter_json_objects

    found = next(iter(iter_json_objects(reply)), None)
    if found is None:
        raise GradingProblem("has no JSON object (it must be {\"reason\", \"pass\", \"score\"})")
    if not isinstance(found, dict):
        raise GradingProblem("holds a JSON array, not the object {\"reason\", \"pass\", \"score\"}")
    has_pass = found.get("pass") is not None
    has_score = found.get("score") is not None
    if not has_pass and not has_score:
        raise GradingProblem("gives neither 'pass' nor 'score'")
    passed = _pass_of(found.get("pass"))
    score = _score_of(found.get("score"), passed)
    if threshold is not None:
        passed = passed and score >= threshold
    reason = found.get("reason")
    if reason in (None, "", 0, False):
        reason = "Grading passed" if passed else (
            f"Score {js_number(score)} below threshold"
            f" {'undefined' if threshold is None else js_number(threshold)}")
    elif not isinstance(reason, str):
        reason = json.dumps(reason, ensure_ascii=False) if isinstance(reason, (dict, list)) else (
            js_number(float(reason)) if isinstance(reason, (int, float)) and not isinstance(reason, bool)
            else str(reason).lower())
    if len(reason) > _REASON_CAP:
        reason = reason[:_REASON_CAP] + "…"
    if inverse:
        return not passed, min(1.0, max(0.0, 1.0 - score)), reason
    return passed, score, reason


def _pass_of(value: Any) -> bool:
    if value is None:
        return True  # promptfoo: `pass ?? true`
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        # promptfoo: /^(true|yes|pass|y)$/i; any other text is a fail there, and
        # here only the words that say no are (the rest gives no verdict).
        if value.lower() in _TRUE_WORDS:
            return True
        if value.lower() in _FALSE_WORDS:
            return False
    raise GradingProblem(
        f"gives 'pass' as {_shown(value)}; it must be true or false (or yes/no)"
    )


def _score_of(value: Any, passed: bool) -> float:
    if value is None:
        return 1.0 if passed else 0.0  # promptfoo: Number(pass)
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise GradingProblem(f"gives 'score' as {_shown(value)}; it must be a number from 0 to 1")
    if isinstance(value, str):
        if not _DECIMAL.fullmatch(value):
            raise GradingProblem(f"gives 'score' as {_shown(value)}, not a number from 0 to 1")
        number = float(value)
    else:
        number = float(value)
    if not math.isfinite(number) or not 0.0 <= number <= 1.0:
        raise GradingProblem(f"gives 'score' {_shown(value)}, outside 0 to 1")
    return number


def _shown(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False) if not isinstance(value, float) else js_number(value)
    return text if len(text) <= 60 else text[:60] + "…"
