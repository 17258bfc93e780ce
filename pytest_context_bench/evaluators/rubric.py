"""Rubric judging: a team's own criteria, a scale, a pass mark, read strictly.

A :class:`Rubric` is what :class:`~pytest_context_bench.evaluators.judges.LLMJudge`
asks the judge to apply (G-Eval style: the criteria, the evaluation steps, then one
score on the scale); an example's ``rubric`` field is parsed by :func:`rubric_of`.
The judge replies ``Score: N`` and ``Reason: ...`` (:data:`RUBRIC_PROMPT`);
:func:`parse_score` reads the score strictly (a reply outside the scale, with no
score or with two is a :class:`~pytest_context_bench.evaluators.judges.JudgeError`,
the row's error, never a 0) and :func:`weighted_rating` weights the scale's values
by the probabilities of the score's token when the endpoint sent ``logprobs``
(G-Eval's expected score, Liu et al. 2023), else the plain score stands.

Pure: no HTTP (the judge in judges.py sends the prompt).
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "DEFAULT_STEPS",
    "MAX_SCALE",
    "RUBRIC_PROMPT",
    "Rubric",
    "RubricError",
    "ScoreReading",
    "parse_score",
    "rubric_of",
    "rubric_prompt",
    "weighted_rating",
]

#: The highest value a scale may reach: every score is then one token of the
#: tokenizers in use (0 to 10), which the logprob weighting needs.
MAX_SCALE = 10
_SNIPPET = 200
_REASON = 1000


class RubricError(ValueError):
    """A rubric that cannot be used (naming the field and what is wrong)."""


@dataclass(frozen=True)
class Rubric:
    """What the judge scores against.

    :param criteria: the team's criteria, in their words ("polite, cites the policy,
        no promise of a refund").
    :param steps: the evaluation steps the judge follows (G-Eval's chain of
        thought); empty: :data:`DEFAULT_STEPS`.
    :param scale: ``(lowest, highest)``, whole numbers, ``0 <= lowest < highest <=
        10``.
    :param pass_score: the lowest score that passes; ``None``: the middle of the
        scale, rounded up (3 of 1-5, 5 of 0-10, 1 of 0-1).
    """

    criteria: str
    steps: tuple[str, ...] = ()
    scale: tuple[int, int] = (1, 5)
    pass_score: float | None = None

    def __post_init__(self) -> None:
        problem = _scale_problem(self.scale) or _criteria_problem(self.criteria)
        if problem is None:
            problem = _pass_problem(self.pass_score, self.scale)
        if problem is None and any(not isinstance(s, str) or not s.strip() for s in self.steps):
            problem = "every evaluation step must be a non-empty string"
        if problem is not None:
            raise RubricError(problem)

    @property
    def passing(self) -> float:
        """The pass mark in effect."""
        if self.pass_score is not None:
            return float(self.pass_score)
        lo, hi = self.scale
        return float(math.ceil((lo + hi) / 2))

    def normalised(self, rating: float) -> float:
        """``rating`` on [0, 1]: 0 at the bottom of the scale, 1 at the top."""
        lo, hi = self.scale
        return (rating - lo) / (hi - lo)

    def describe(self) -> str:
        lo, hi = self.scale
        return f"{lo}-{hi}, pass >= {self.passing:g}"


def _scale_problem(scale: Any) -> str | None:
    ok = (
        isinstance(scale, (tuple, list))
        and len(scale) == 2
        and all(isinstance(x, int) and not isinstance(x, bool) for x in scale)
        and 0 <= scale[0] < scale[1] <= MAX_SCALE
    )
    if ok:
        return None
    return (
        f"the scale must be two whole numbers [lowest, highest] with 0 <= lowest <"
        f" highest <= {MAX_SCALE} (e.g. [1, 5]), got {_shown(scale)}"
    )


def _criteria_problem(criteria: Any) -> str | None:
    if isinstance(criteria, str) and criteria.strip():
        return None
    return f"the criteria must be a non-empty string, got {_shown(criteria)}"


def _pass_problem(pass_score: Any, scale: tuple[int, int]) -> str | None:
    if pass_score is None:
        return None
    number = (
        float(pass_score)
        if isinstance(pass_score, (int, float)) and not isinstance(pass_score, bool)
        else math.nan
    )
    if math.isfinite(number) and scale[0] <= number <= scale[1]:
        return None
    return (
        f"the pass score must be a number from {scale[0]} to {scale[1]} (the scale),"
        f" got {_shown(pass_score)}"
    )


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:60] + "…"


_FIELD_KEYS = ("criteria", "steps", "scale", "pass_score")


def rubric_of(
    value: Any,
    *,
    scale: tuple[int, int] = (1, 5),
    pass_score: float | None = None,
    steps: Sequence[str] = (),
    field: str = "rubric",
) -> Rubric:
    """The :class:`Rubric` of an example's ``rubric`` field: a string (the criteria)
    or an object ``{"criteria", "steps", "scale", "pass_score"}`` (only
    ``criteria`` required). What the field leaves out comes from the judge's own
    ``scale``, ``pass_score`` and ``steps``.

    :raises RubricError: naming the field and what is wrong.
    """
    if isinstance(value, Rubric):
        return value
    where = f"field {field!r}"
    if isinstance(value, str):
        if not value.strip():
            raise RubricError(f"{where} is an empty string; write the criteria the judge applies")
        try:
            return Rubric(value, tuple(steps), tuple(scale), pass_score)  # type: ignore[arg-type]
        except RubricError as exc:
            raise RubricError(f"{where}: {exc}") from None
    if not isinstance(value, Mapping):
        raise RubricError(
            f"{where} must be a string (the criteria) or an object with 'criteria'"
            f" (and optional 'steps', 'scale', 'pass_score'), got {_kind(value)}"
        )
    unknown = sorted(str(k) for k in value if k not in _FIELD_KEYS)
    if unknown:
        raise RubricError(
            f"{where} has unknown key(s) {', '.join(map(repr, unknown))}; a rubric"
            f" object has {', '.join(_FIELD_KEYS)}"
        )
    if "criteria" not in value:
        raise RubricError(f"{where} needs 'criteria': the criteria the judge applies")
    raw_steps = value.get("steps", list(steps))
    if not isinstance(raw_steps, list) or any(
        not isinstance(s, str) or not s.strip() for s in raw_steps
    ):
        raise RubricError(
            f"{where}.steps must be a list of non-empty strings, got {_kind(raw_steps)}"
        )
    raw_scale = value.get("scale", list(scale))
    if isinstance(raw_scale, list):
        raw_scale = tuple(raw_scale)
    for key, problem in (
        ("criteria", _criteria_problem(value["criteria"])),
        ("scale", _scale_problem(raw_scale)),
    ):
        if problem is not None:
            raise RubricError(f"{where}.{key}: {problem}")
    raw_pass = value.get("pass_score", pass_score if "scale" not in value else None)
    problem = _pass_problem(raw_pass, raw_scale)
    if problem is not None:
        raise RubricError(f"{where}.pass_score: {problem}")
    return Rubric(str(value["criteria"]), tuple(raw_steps), raw_scale, raw_pass)


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, list):
        return "a list"
    if isinstance(value, str):
        return "a string"
    return type(value).__name__


# ----------------------------------------------------------------------- the prompt

#: The steps a rubric without its own follows.
DEFAULT_STEPS = (
    "Read the task and, when one is given, the reference answer; note every point"
    " the criteria ask for.",
    "Check the response against each point of the criteria, one by one, using the"
    " reference answer (when given) as the facts to check against.",
    "Decide how fully the response meets the criteria as a whole, and choose the"
    " score on the scale that says so.",
)

#: The prompt of a rubric (G-Eval's form: criteria, steps, the material, one score).
RUBRIC_PROMPT = """\
You are an expert judge. Score an AI assistant's response against the evaluation \
criteria below.

Evaluation criteria:
{criteria}

Evaluation steps:
{steps}
{material}
Score the response from {lo} (the criteria are not met at all) to {hi} (the \
criteria are fully met), following the evaluation steps.
Reply with exactly these two lines and nothing else:
Score: <one whole number from {lo} to {hi}>
Reason: <one sentence saying why>"""


def rubric_prompt(
    rubric: Rubric, response: str, task: str | None = None, reference: str | None = None
) -> str:
    """The prompt the judge is sent for one response (docs/llm.md shows it)."""
    steps = rubric.steps or DEFAULT_STEPS
    material = ""
    if task is not None and task.strip():
        material += f"\n[Task]\n{task}\n"
    if reference is not None and reference.strip():
        material += f"\n[Reference answer]\n{reference}\n"
    material += f"\n[Response]\n{response}\n"
    lo, hi = rubric.scale
    return RUBRIC_PROMPT.format(
        criteria=rubric.criteria.strip(),
        steps="\n".join(f"{i}. {s.strip()}" for i, s in enumerate(steps, 1)),
        material=material,
        lo=lo,
        hi=hi,
    )


# -------------------------------------------------------------------- the reply


@dataclass(frozen=True)
class ScoreReading:
    """A score read from a reply: the value, where its digits start in the reply
    (for the logprobs), and the judge's reason (whitespace collapsed, capped)."""

    rating: int
    offset: int
    reason: str


_LINE = re.compile(r"[^\r\n]+")
# A line starting with the keyword, markdown decoration allowed around it.
_SCORE_LINE = re.compile(r"[\s*_#>`-]*(?:score|rating|grade)\b[\s*_`]*[:=]?", re.IGNORECASE)
_REASON_LINE = re.compile(
    r"[\s*_#>`-]*(?:reason|rationale|explanation|justification)\b[\s*_`]*[:=]?[\s*_`]*",
    re.IGNORECASE,
)
# A number: digits, a decimal part, a sign; never a piece of a word ("v2") or of a
# longer number.
_NUMBER = re.compile(r"(?<![\w.])[-+]?\d+(?:[.,]\d+)?(?![\w]|[.,]\d)")
_OUT_OF = re.compile(r"\s*(?:/|out\s+of)\s*", re.IGNORECASE)
_BARE = re.compile(r"[\s*_`]*(\d+)[\s*_`.]*")


class ScoreProblem(ValueError):
    """Why a reply has no usable score (raised as the judge's JudgeError)."""


def parse_score(reply: str, scale: tuple[int, int]) -> ScoreReading:
    """The score of a rubric reply, read strictly.

    The reply's ``Score:`` line (``Rating:`` and markdown decoration are fine)
    holds one whole number, optionally out of the top of the scale (``4/5``, ``4
    out of 5``); a reply that is only a number is that number. Refused, each with
    its reason: no score line, a score line with no number (``NaN``, ``high``) or
    several (``5 out of 5 but actually 1``), a number that is not whole (``3.5``),
    out of another total (``8/10`` on 1-5), or outside the scale (``11/10``, ``0`` on
    1-5); two score lines that disagree.

    :raises ScoreProblem: saying which of these it is.
    """
    lo, hi = scale
    found: list[tuple[int, int]] = []
    reason_parts: list[str] = []
    other: list[str] = []
    in_reason = False
    for line in _LINE.finditer(reply):
        text = line.group(0)
        head = _SCORE_LINE.match(text)
        if head is not None:
            found.append(_score_value(text, head.end(), line.start(), lo, hi))
            in_reason = False
            continue
        why = _REASON_LINE.match(text)
        if why is not None:
            in_reason = True
            reason_parts.append(text[why.end():])
        elif in_reason:
            reason_parts.append(text)
        else:
            other.append(text)
    if not found:
        bare = _BARE.fullmatch(reply)
        if bare is None:
            raise ScoreProblem("has no 'Score: N' line")
        value = int(bare.group(1))
        _check_range(value, lo, hi)
        return ScoreReading(value, bare.start(1), "")
    values = {v for v, _ in found}
    if len(values) > 1:
        raise ScoreProblem(f"gives different scores on its score lines ({', '.join(map(str, sorted(values)))})")
    reason = " ".join(" ".join(reason_parts or other).split())
    if len(reason) > _REASON:
        reason = reason[:_REASON] + "…"
    return ScoreReading(found[0][0], found[0][1], reason)


def _score_value(text: str, start: int, base: int, lo: int, hi: int) -> tuple[int, int]:
    """The whole number of one score line (after its keyword at ``start``) and its
    offset in the reply."""
    # Three are enough to know: one, "N/D", or ambiguous (a line of a million
    # numbers is not read to its end).
    numbers = list(itertools.islice(_NUMBER.finditer(text, start), 3))
    total = None
    if len(numbers) == 2 and _OUT_OF.fullmatch(text, numbers[0].end(), numbers[1].start()):
        total = numbers[1].group(0)
        numbers = numbers[:1]
    if not numbers:
        shown = " ".join(text[start:].split())[:40]
        raise ScoreProblem(f"has no number on its score line ({shown!r} is not a score)")
    if len(numbers) > 1:
        how_many = "3 or more" if len(numbers) == 3 else str(len(numbers))
        raise ScoreProblem(
            f"has {how_many} numbers on its score line"
            f" ({', '.join(m.group(0) for m in numbers)}): ambiguous"
        )
    raw = numbers[0].group(0)
    if not re.fullmatch(r"[-+]?\d+", raw):
        raise ScoreProblem(f"gives {raw}, not a whole number from {lo} to {hi}")
    value = int(raw)
    if total is not None and total.lstrip("+") != str(hi):
        raise ScoreProblem(
            f"scores {raw} out of {total}; the scale is {lo} to {hi}"
        )
    _check_range(value, lo, hi)
    return value, base + numbers[0].start() + (1 if raw[0] in "+-" else 0)


def _check_range(value: int, lo: int, hi: int) -> None:
    if not lo <= value <= hi:
        raise ScoreProblem(f"gives {value}, outside the scale {lo} to {hi}")


# --------------------------------------------------------------------- logprobs


def weighted_rating(
    raw: Any, reply: str, reading: ScoreReading, scale: tuple[int, int]
) -> tuple[float, dict[str, float]] | str:
    """G-Eval's expected score: the scale's values weighted by the probabilities the
    endpoint gave them at the score's token (``choices[0].logprobs.content[i]``:
    the token itself and its ``top_logprobs``), normalised over the values of the
    scale. Returns ``(weighted rating, {value: probability})``, or why the plain
    score stands (no logprobs, logprobs that do not spell the reply, a score that is
    not one token, no value of the scale among the alternatives, or numbers that are
    not probabilities).
    """
    try:
        content = raw["choices"][0]["logprobs"]["content"]
    except (KeyError, IndexError, TypeError):
        return "the endpoint sent no logprobs"
    if not isinstance(content, list) or not content:
        return "the endpoint sent no logprobs"
    tokens: list[str] = []
    for entry in content:
        token = entry.get("token") if isinstance(entry, Mapping) else None
        if not isinstance(token, str):
            return "the logprobs are malformed (a token that is not a string)"
        tokens.append(token)
    if "".join(tokens) != reply:
        return "the logprobs' tokens do not spell the reply"
    position, at = 0, None
    for index, token in enumerate(tokens):
        if position <= reading.offset < position + len(token):
            at = index
            break
        position += len(token)
    if at is None or tokens[at].strip() != str(reading.rating):
        return "the score is not one token of the reply"
    lo, hi = scale
    entry = content[at]
    choices = [entry]
    tops = entry.get("top_logprobs")
    if isinstance(tops, list):
        choices.extend(tops)
    by_token: dict[str, float] = {}
    for choice in choices:
        if not isinstance(choice, Mapping):
            continue
        token, logprob = choice.get("token"), choice.get("logprob")
        if (
            not isinstance(token, str)
            or isinstance(logprob, bool)
            or not isinstance(logprob, (int, float))
            or not math.isfinite(logprob)
            or logprob > 1e-9
        ):
            continue
        by_token.setdefault(token, math.exp(min(float(logprob), 0.0)))
    probs: dict[int, float] = {}
    for token, p in by_token.items():
        text = token.strip()
        if re.fullmatch(r"[0-9]{1,2}", text) and lo <= int(text) <= hi:
            probs[int(text)] = probs.get(int(text), 0.0) + p
    total = math.fsum(probs.values())
    if not probs or not total > 0 or not math.isfinite(total):
        return "no value of the scale has a probability at the score's token"
    weighted = math.fsum(v * p for v, p in probs.items()) / total
    weighted = min(max(weighted, float(lo)), float(hi))
    return weighted, {str(v): probs[v] / total for v in sorted(probs)}
