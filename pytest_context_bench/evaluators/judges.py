"""Evaluators that ask an LLM: LLMJudge, MemoryJudge and AnswerCorrectness.

All three talk to an OpenAI-compatible endpoint through
:class:`~pytest_context_bench.llm.LLMClient` (bounded retries, backoff, key never
shown) and send ``temperature=0``. They keep no cache of their own: their requests
go through the run's LLM cache and meter like every LLM call
(:mod:`pytest_context_bench.transports`, docs/cache.md), as the evaluators' calls
(``judge_usage``); a question asked again with ``repeat`` is keyed apart per
repeat (:func:`~pytest_context_bench.calls.judge_repeat`).

Failures are not scores. Upstream turned an unreachable judge or an unreadable reply
into 0.0 ("every answer is terrible", UPSTREAM.md §7.1 item 11); here
:class:`LLMJudge` and :class:`AnswerCorrectness` raise, so the engine records an error
for that row. :class:`MemoryJudge` keeps its documented 0.0 on failure, and says so in
its details (``row.metadata["memory_judge"]["judge_error"]``).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Sequence
from typing import Any

from ..calls import judge_repeat
from ..errors import ConfigError, CtxBenchError, ExampleDataError
from ..llm import ChatResult, LLMClient, LLMError
from .rubric import (
    Rubric,
    RubricError,
    ScoreProblem,
    parse_score,
    rubric_of,
    rubric_prompt,
    weighted_rating,
)

__all__ = [
    "AnswerCorrectness",
    "JudgeError",
    "LLMJudge",
    "MAX_REPEAT",
    "MemoryJudge",
    "Rubric",
    "fbeta",
    "parse_rating",
    "parse_yes_no",
]

_REPLY_SNIPPET = 200
_RATIONALE = 1000  # characters of a judge's reply kept as its rationale


class JudgeError(CtxBenchError, ValueError):
    """A judge's reply could not be read (no valid rating, malformed JSON)."""


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, (list, tuple)):
        # Several gold answers: the judge sees them all; blank ones are no gold.
        return " | ".join(t for t in map(_text, value) if t.strip())
    return str(value)


def _blank_details(scores: dict[str, float], key: str) -> dict[str, Any]:
    """The details of a score given without asking the judge."""
    if scores.get(key) == 0.0:
        return {"reason": "the response is empty (the judge was not asked)"}
    return {}


def _rationale(text: str) -> str:
    """The judge's reply as its rationale (whitespace collapsed, capped)."""
    return _clip(" ".join(text.split()), _RATIONALE)


def _clip(text: str, limit: int) -> str:
    from ..details import clip

    return clip(text, limit)


def _snippet(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _REPLY_SNIPPET else text[:_REPLY_SNIPPET] + "…"


# -- LLMJudge ---------------------------------------------------------------------------

# A digit 1-5 that is not part of a longer number ("10", "3.5", "15").
_D = r"([1-5])(?!\d|[.,]\d)"
_RATING_PATTERNS = (
    re.compile(rf"^\W*{_D}\W*$"),  # the whole reply: "4", "**4**", "4."
    re.compile(
        rf"(?<![\d.]){_D}\s*(?:/|out\s+of)\s*5\b", re.IGNORECASE
    ),  # "4/5", "4 out of 5"
    re.compile(
        rf"\b(?:rating|score|grade)\b\W{{0,4}}(?:is\W{{0,3}})?{_D}", re.IGNORECASE
    ),
    re.compile(rf"\*\*\s*{_D}\s*\*\*"),  # "**4**" in a sentence
    re.compile(rf"^\s*{_D}(?=\s*(?:[-:)]|\s|$))"),  # "4 - minor issues", "4) ..."
)


def parse_rating(reply: str) -> int:
    """The 1-5 rating in a judge's reply, read strictly.

    Accepted forms: a bare digit (``"4"``, ``"**4**"``), ``"4/5"``, ``"4 out of 5"``,
    ``"Rating: 4"``, ``"Score is 4"``, a bold digit in a sentence, and a leading digit
    followed by a separator (``"4 - minor issues"``). A digit belonging to a longer
    number never counts (``"Rating: 10"`` or ``"3.5"`` is no rating, where upstream read
    them as 1 and 3), and two different ratings in one reply are ambiguous.

    :param reply: the judge's text.
    :raises JudgeError: when there is no valid rating, or more than one.
    """
    found = {
        int(m.group(1)) for p in _RATING_PATTERNS for m in p.finditer(reply.strip())
    }
    if len(found) == 1:
        return found.pop()
    what = "no 1-5 rating" if not found else f"ambiguous ratings {sorted(found)}"
    raise JudgeError(f"the judge's reply has {what}: {_snippet(reply)!r}")


_LLM_JUDGE_PROMPT = """\
You are an expert judge evaluating the quality of an AI assistant's answer.

[Question]
{question}

[Reference Answer]
{reference}

[Assistant's Response]
{response}

Rate the response against the reference answer on a scale of 1 to 5:
1 = wrong or irrelevant
2 = major errors
3 = partially correct, misses key details
4 = correct with minor issues
5 = fully correct and complete

Reply with only the rating, a single integer from 1 to 5."""


class _JudgeBase:
    """What the single-call judges share: a model and one pooled client."""

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key: str | None,
        timeout: float,
        max_retries: int,
        retry_base_delay: float,
        client: LLMClient | None,
    ) -> None:
        self.model = model
        self.client = client or LLMClient(
            base_url,
            api_key,
            timeout=timeout,
            max_retries=max_retries,
            retry_base_delay=retry_base_delay,
        )

    def __repr__(self) -> str:
        # The client's repr redacts the key; never show the key here either.
        return f"{type(self).__name__}(model={self.model!r}, client={self.client!r})"


class LLMJudge(_JudgeBase):
    """An LLM scores the response; keys ``judge_score`` (and ``judge_pass`` with a
    rubric).

    **Without a rubric** (the seeds' judge): a fixed question rates the response from
    1 to 5 against the reference; ``judge_score = (rating - 1) / 4``, so 0.0, 0.25,
    0.5, 0.75 or 1.0, and the suite's threshold decides. Reads
    ``original["question"]`` (else ``original["context"]``), ``original["answer"]``
    and ``processed["response"]``; returns ``{}`` when the example has no answer, or
    neither question nor context, or there is no ``response`` key.

    **With a rubric** (``rubric=`` here, or the example's ``rubric`` field, which
    wins): the judge applies the team's criteria G-Eval style
    (:mod:`~pytest_context_bench.evaluators.rubric`: criteria, evaluation steps, the
    task and reference when the example has them, then ``Score: N`` on ``scale``);
    ``judge_score`` is the score on [0, 1] and ``judge_pass`` (1.0 or 0.0) whether it
    reaches ``pass_score``: that verdict, not the suite's threshold, decides the
    row (:data:`~pytest_context_bench.metrics.scores.VERDICT_KEYS`). With
    ``logprobs`` (the default) the request asks for the tokens' probabilities and
    the score is their expectation over the scale's values when the endpoint sends
    them (:func:`~.rubric.weighted_rating`), the plain score otherwise. The details
    always hold the rubric, the rating, the verdict and the judge's reason.

    Either way a blank response scores 0.0 without calling the judge; a reply
    without a valid score (none, two, outside the scale: :func:`parse_rating`,
    :func:`~.rubric.parse_score`) raises :class:`JudgeError`, and a judge that fails
    after its retries :class:`~pytest_context_bench.llm.LLMError`: the row becomes
    an error, never a silent 0. ``repeat=N`` asks N times (each repeat its own
    cache entry): the score is the mean, the verdict the majority (a tie fails), the
    spread is in the details.

    :param base_url: the judge's OpenAI-compatible endpoint, with or without ``/v1``.
    :param model: the judge model.
    :param api_key: bearer token; ``None`` reads ``OPENAI_API_KEY``.
    :param timeout: seconds per attempt.
    :param max_retries: retries after the first attempt.
    :param retry_base_delay: the first backoff delay in seconds.
    :param max_tokens: the reply budget (default 16 without a rubric, 300 with one).
    :param client: an :class:`LLMClient` to use instead of building one.
    :param rubric: the criteria (a string), a :class:`~.rubric.Rubric`, or ``None``.
    :param scale: ``(lowest, highest)`` of rubric scores (whole numbers, 0 to 10).
    :param pass_score: the lowest passing rubric score (default: the middle of the
        scale, rounded up).
    :param steps: the evaluation steps of a rubric (default
        :data:`~.rubric.DEFAULT_STEPS`).
    :param logprobs: ask for token probabilities with a rubric.
    :param repeat: how many times to ask (``--ctxbench-judge-repeat``).
    :raises ConfigError: for a bad rubric, scale, pass score or repeat.
    """

    name = "llm_judge"

    def __init__(
        self,
        base_url: str,
        model: str = "gpt-4",
        api_key: str | None = None,
        timeout: float = 60.0,
        max_retries: int = 3,
        retry_base_delay: float = 1.0,
        max_tokens: int | None = None,
        client: LLMClient | None = None,
        *,
        rubric: str | Rubric | None = None,
        scale: tuple[int, int] = (1, 5),
        pass_score: float | None = None,
        steps: Sequence[str] | None = None,
        logprobs: bool = True,
        repeat: int = 1,
    ) -> None:
        _JudgeBase.__init__(
            self, base_url, model, api_key, timeout, max_retries, retry_base_delay, client
        )
        if max_tokens is not None and (
            isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1
        ):
            raise ConfigError(f"LLMJudge max_tokens must be a whole number >= 1, got {max_tokens!r}.")
        self.max_tokens = max_tokens
        try:
            # The defaults every rubric of an example falls back on, checked now.
            Rubric("check", tuple(steps or ()), tuple(scale), pass_score)  # type: ignore[arg-type]
            self.rubric = None if rubric is None else rubric_of(
                rubric, scale=tuple(scale), pass_score=pass_score,  # type: ignore[arg-type]
                steps=tuple(steps or ()), field="rubric=")
        except RubricError as exc:
            raise ConfigError(f"LLMJudge: {exc}.") from None
        self.scale = (int(scale[0]), int(scale[1]))
        self.pass_score = pass_score
        self.steps = tuple(steps or ())
        self.logprobs = bool(logprobs)
        self.repeat = _check_repeat(repeat, "LLMJudge")

    def __repr__(self) -> str:
        extra = "" if self.rubric is None else f", rubric={_clip(self.rubric.criteria, 60)!r}"
        return f"LLMJudge(model={self.model!r}, client={self.client!r}{extra})"

    def score(
        self, original: dict[str, Any], processed: dict[str, Any]
    ) -> dict[str, float]:
        """Score one response.

        :param original: the example (``question`` or ``context``, ``answer``,
            ``rubric``).
        :param processed: the System's output (``response``).
        :raises JudgeError: when the reply has no valid score.
        :raises LLMError: when the judge cannot be reached after its retries.
        """
        return self.score_details(original, processed)[0]

    def score_details(
        self, original: dict[str, Any], processed: dict[str, Any]
    ) -> tuple[dict[str, float], dict[str, Any]]:
        """Like :meth:`score`, also returning why: without a rubric (empty at full
        marks) ``verdict`` (``"rating 2 of 5"``) and ``rationale`` (the judge's
        reply); with one, always ``rubric``, ``rating``, ``scale``, ``verdict`` and
        ``judge_reason`` (see docs/llm.md).

        :raises JudgeError: when the reply has no valid score.
        :raises LLMError: when the judge cannot be reached after its retries.
        """
        plan = self._plan(original, processed)
        if isinstance(plan, tuple):
            return plan
        readings = []
        for index in range(1, self.repeat + 1):
            with judge_repeat(index):
                reply = self._checked_call(plan, lambda: self.client.chat(
                    [{"role": "user", "content": plan.prompt}], self.model, **plan.params))
            readings.append(plan.read(reply))
        return plan.combine(readings)

    async def ascore(
        self, original: dict[str, Any], processed: dict[str, Any]
    ) -> dict[str, float]:
        """:meth:`score` for coroutines: what a run with ``--ctxbench-concurrency``
        awaits right after the System call, under the same call budget."""
        return (await self.ascore_details(original, processed))[0]

    async def ascore_details(
        self, original: dict[str, Any], processed: dict[str, Any]
    ) -> tuple[dict[str, float], dict[str, Any]]:
        """:meth:`score_details` for coroutines."""
        plan = self._plan(original, processed)
        if isinstance(plan, tuple):
            return plan
        readings = []
        for index in range(1, self.repeat + 1):
            with judge_repeat(index):
                try:
                    reply = await self.client.achat(
                        [{"role": "user", "content": plan.prompt}], self.model, **plan.params)
                except LLMError as exc:
                    raise self._refused(plan, exc) from None
            readings.append(plan.read(reply))
        return plan.combine(readings)

    def _checked_call(self, plan: _Plan, call: Callable[[], ChatResult]) -> ChatResult:
        try:
            return call()
        except LLMError as exc:
            raise self._refused(plan, exc) from None

    @staticmethod
    def _refused(plan: _Plan, exc: LLMError) -> LLMError:
        """``exc``, saying how to turn logprobs off when the endpoint refused a
        request that asked for them (HTTP 400 or 422)."""
        if plan.params.get("logprobs") and getattr(exc, "status", None) in (400, 422):
            return LLMError(
                f"{exc} (the judge's request asked for logprobs: for an endpoint that"
                " refuses them, pass --ctxbench-judge-no-logprobs, or LLMJudge(logprobs=False))",
                url=exc.url, status=exc.status, attempts=exc.attempts,
            )
        return exc

    def _plan(
        self, original: dict[str, Any], processed: dict[str, Any]
    ) -> _Plan | tuple[dict[str, float], dict[str, Any]]:
        """What to ask, or the scores and details when no call is needed."""
        rubric = self.rubric
        if original.get("rubric") is not None:
            try:
                rubric = rubric_of(original["rubric"], scale=self.scale,
                                   pass_score=self.pass_score, steps=self.steps)
            except RubricError as exc:
                raise ExampleDataError(str(exc)) from None
        if rubric is not None:
            return self._rubric_plan(rubric, original, processed)
        prompt = self._prompt(original, processed)
        if not isinstance(prompt, str):
            return prompt, _blank_details(prompt, "judge_score")
        return _Plan(self, prompt, {"temperature": 0, "max_tokens": self.max_tokens or 16}, None)

    def _rubric_plan(
        self, rubric: Rubric, original: dict[str, Any], processed: dict[str, Any]
    ) -> _Plan | tuple[dict[str, float], dict[str, Any]]:
        if "response" not in processed:
            return {}, {}
        response = _text(processed["response"])
        if not response.strip():
            return {"judge_score": 0.0, "judge_pass": 0.0}, {
                "reason": "the response is empty (the judge was not asked)",
                "rubric": _clip(rubric.criteria, _RATIONALE),
            }
        task = original.get("question")
        if task is None:
            task = original.get("context", original.get("prompt"))
        answer = original.get("answer")
        prompt = rubric_prompt(
            rubric,
            response,
            task=None if task is None else _text(task),
            reference=None if answer is None else _text(answer),
        )
        params: dict[str, Any] = {"temperature": 0, "max_tokens": self.max_tokens or 300}
        if self.logprobs:
            values = rubric.scale[1] - rubric.scale[0] + 1
            params.update(logprobs=True, top_logprobs=min(20, 2 * values))
        return _Plan(self, prompt, params, rubric)

    def _prompt(
        self, original: dict[str, Any], processed: dict[str, Any]
    ) -> str | dict[str, float]:
        """The prompt to send without a rubric, or the scores when no call is
        needed."""
        question = original.get("question")
        if question is None:
            question = original.get("context")
        answer = original.get("answer")
        if (
            question is None
            or answer is None
            or answer == []
            or "response" not in processed
        ):
            return {}
        response = _text(processed["response"])
        if not response.strip():
            return {"judge_score": 0.0}
        return _LLM_JUDGE_PROMPT.format(
            question=_text(question), reference=_text(answer), response=response
        )


def _check_repeat(repeat: Any, who: str) -> int:
    if isinstance(repeat, bool) or not isinstance(repeat, int) or not 1 <= repeat <= MAX_REPEAT:
        raise ConfigError(
            f"{who} repeat must be a whole number from 1 to {MAX_REPEAT}, got {repeat!r}."
        )
    return repeat


#: The most times a judge may be asked the same question (--ctxbench-judge-repeat).
MAX_REPEAT = 100


class _Plan:
    """One question to the judge (a rubric's, or the fixed 1-5 one) and how to read
    and combine its answers."""

    def __init__(
        self, judge: LLMJudge, prompt: str, params: dict[str, Any], rubric: Rubric | None
    ) -> None:
        self.judge = judge
        self.prompt = prompt
        self.params = params
        self.rubric = rubric

    def read(self, reply: ChatResult) -> dict[str, Any]:
        """One answer: ``{"rating", "reason", ...}`` (raises JudgeError)."""
        if self.rubric is None:
            return {"rating": float(parse_rating(reply.text)), "text": reply.text}
        try:
            reading = parse_score(reply.text, self.rubric.scale)
        except ScoreProblem as exc:
            raise JudgeError(f"the judge's reply {exc}: {_snippet(reply.text)!r}") from None
        out: dict[str, Any] = {"rating": float(reading.rating), "score": reading.rating,
                               "reason": reading.reason}
        if self.params.get("logprobs"):
            weighted = weighted_rating(reply.raw, reply.text, reading, self.rubric.scale)
            if isinstance(weighted, str):
                out["logprobs"] = weighted
            else:
                out["rating"], out["probabilities"] = weighted
        return out

    def combine(self, readings: list[dict[str, Any]]) -> tuple[dict[str, float], dict[str, Any]]:
        n = len(readings)
        ratings = [r["rating"] for r in readings]
        mean = math.fsum(ratings) / n
        if self.rubric is None:
            scores = {"judge_score": (mean - 1) / 4.0}
            if n == 1:
                return _rated_once(int(ratings[0]), readings[0]["text"])
            details: dict[str, Any] = {"repeats": _spread(ratings, None)}
            if mean < 5:
                details = {"reason": f"the judge rated the response {_num(mean)} of 5"
                                     f" (mean of {n})",
                           "verdict": f"rating {_num(mean)} of 5", **details}
                rationale = _rationale(readings[0]["text"])
                if rationale:
                    details["rationale"] = rationale
            return scores, details
        rubric = self.rubric
        lo, hi = rubric.scale
        mark = rubric.passing
        passes = [r >= mark for r in ratings]
        passed = sum(passes) * 2 > n
        scores = {"judge_score": min(1.0, max(0.0, rubric.normalised(mean))),
                  "judge_pass": 1.0 if passed else 0.0}
        verdict = "pass" if passed else "fail"
        what = f"scored {_num(mean)}" + (f" (mean of {n})" if n > 1 else "")
        details = {
            "reason": f"the judge {what} on {lo}-{hi} (pass >= {mark:g}): {verdict}",
            "judge_reason": readings[0]["reason"],
            "rubric": _clip(rubric.criteria, _RATIONALE),
            "verdict": verdict,
            "rating": round(mean, 4),
            "scale": [lo, hi],
            "pass_score": mark,
        }
        if "probabilities" in readings[0] and n == 1:
            details["score_token"] = readings[0]["score"]
            details["probabilities"] = {k: round(v, 4) for k, v in readings[0]["probabilities"].items()}
        elif "logprobs" in readings[0]:
            details["logprobs"] = f"plain score: {readings[0]['logprobs']}"
        if n > 1:
            details["repeats"] = _spread(ratings, passes)
            details["judge_reasons"] = [r["reason"] for r in readings]
        return scores, details


def _spread(ratings: list[float], passes: list[bool] | None) -> dict[str, Any]:
    """How N answers to one question differ: each rating, min, max, stdev, and how
    many passed."""
    n = len(ratings)
    mean = math.fsum(ratings) / n
    out: dict[str, Any] = {
        "n": n,
        "ratings": [round(r, 4) for r in ratings],
        "min": round(min(ratings), 4),
        "max": round(max(ratings), 4),
        "stdev": round(math.sqrt(math.fsum((r - mean) ** 2 for r in ratings) / (n - 1)), 4)
        if n > 1 else 0.0,
    }
    if passes is not None:
        out["passed"] = f"{sum(passes)} of {n}" + (
            " (a tie fails)" if sum(passes) * 2 == n else "")
    return out


def _num(x: float) -> str:
    return f"{x:.4g}"


def _rated_once(rating: int, text: str) -> tuple[dict[str, float], dict[str, Any]]:
    """The fixed question's one answer as scores and details (empty at 5)."""
    scores = {"judge_score": (rating - 1) / 4.0}
    if rating == 5:
        return scores, {}
    verdict = f"rating {rating} of 5"
    details: dict[str, Any] = {
        "reason": f"the judge rated the response {rating} of 5",
        "verdict": verdict,
    }
    rationale = _rationale(text)
    if rationale:
        details["rationale"] = rationale
    return scores, details


# -- MemoryJudge ------------------------------------------------------------------------

_YES_NO = re.compile(r"\b(YES|NO)\b", re.IGNORECASE)


def parse_yes_no(reply: str) -> bool | None:
    """``True`` for YES, ``False`` for NO (the first one found), ``None`` for neither.

    :param reply: the judge's text.
    """
    match = _YES_NO.search(reply)
    if match is None:
        return None
    return match.group(1).upper() == "YES"


_MEMORY_PROMPT = """\
You are a strict but fair judge of a memory question-answering system.

[Question]
{question}

[Gold Answer]
{gold}

[System Answer]
{response}

The system answer is correct if it conveys the same essential information as the gold \
answer. Small differences in wording and extra context are acceptable.
Start your reply with YES or NO, then give a one-sentence reason."""


class MemoryJudge(_JudgeBase):
    """An LLM says YES/NO: does the answer carry the gold's essential information?

    Keys ``memory_judge`` and ``memory_judge_raw`` (equal; ``raw`` is reserved for
    partial credit). Rules, in order:

    - no ``question`` or ``answer`` in the example, or no ``response``: ``{}``;
    - a blank response: both 0.0 (no judge call);
    - a blank gold answer: both 0.5, a neutral score;
    - otherwise the judge's first YES or NO gives 1.0 or 0.0.

    As documented for this evaluator, a judge that fails after its retries, or a reply
    with neither YES nor NO, scores 0.0 instead of raising; :meth:`score_details` then
    returns ``{"judge_error": ...}``, which the engine stores in
    ``row.metadata["memory_judge"]`` so judge failures can be counted.

    :param base_url: the relay's OpenAI-compatible endpoint.
    :param model: the judge model.
    :param api_key: bearer token; ``None`` reads ``OPENAI_API_KEY``.
    :param timeout: seconds per attempt.
    :param max_retries: retries on 429/5xx, timeouts and dropped connections.
    :param retry_base_delay: the first backoff delay in seconds.
    :param client: an :class:`LLMClient` to use instead of building one.
    :param repeat: how many times to ask (``--ctxbench-judge-repeat``, each repeat
        its own cache entry): ``memory_judge`` is the majority (1.0 when more than
        half said YES; a tie is 0.0), ``memory_judge_raw`` the share of YES, and the
        details list every answer. One failed answer makes the whole 0.0 with its
        ``judge_error``, as a single one does.
    """

    name = "memory_judge"

    def __init__(
        self,
        base_url: str,
        model: str = "claude-haiku-4-5-20251001",
        api_key: str | None = None,
        timeout: float = 60.0,
        max_retries: int = 3,
        retry_base_delay: float = 1.0,
        client: LLMClient | None = None,
        *,
        repeat: int = 1,
    ) -> None:
        _JudgeBase.__init__(
            self, base_url, model, api_key, timeout, max_retries, retry_base_delay, client
        )
        self.repeat = _check_repeat(repeat, "MemoryJudge")

    def score(
        self, original: dict[str, Any], processed: dict[str, Any]
    ) -> dict[str, float]:
        """Judge one answer (see the class docstring for the rules).

        :param original: the example (``question``, ``answer``).
        :param processed: the System's output (``response``).
        """
        return self.score_details(original, processed)[0]

    def score_details(
        self, original: dict[str, Any], processed: dict[str, Any]
    ) -> tuple[dict[str, float], dict[str, Any]]:
        """The scores and an explanation: ``{"verdict": "YES"|"NO"}`` or
        ``{"judge_error": message}`` (plus the reply when there was one).

        :param original: the example (``question``, ``answer``).
        :param processed: the System's output (``response``).
        """
        prompt = self._prompt(original, processed)
        if not isinstance(prompt, str):
            return prompt
        texts = []
        for index in range(1, self.repeat + 1):
            try:
                with judge_repeat(index):
                    reply = self.client.chat(
                        [{"role": "user", "content": prompt}],
                        self.model,
                        temperature=0,
                        max_tokens=64,
                    )
            except LLMError as exc:
                return _both(0.0), _judge_failed(str(exc))
            texts.append(reply.text)
        return self._verdicts(texts)

    async def ascore_details(
        self, original: dict[str, Any], processed: dict[str, Any]
    ) -> tuple[dict[str, float], dict[str, Any]]:
        """:meth:`score_details` for coroutines."""
        prompt = self._prompt(original, processed)
        if not isinstance(prompt, str):
            return prompt
        texts = []
        for index in range(1, self.repeat + 1):
            try:
                with judge_repeat(index):
                    reply = await self.client.achat(
                        [{"role": "user", "content": prompt}],
                        self.model,
                        temperature=0,
                        max_tokens=64,
                    )
            except LLMError as exc:
                return _both(0.0), _judge_failed(str(exc))
            texts.append(reply.text)
        return self._verdicts(texts)

    async def ascore(
        self, original: dict[str, Any], processed: dict[str, Any]
    ) -> dict[str, float]:
        """:meth:`score` for coroutines."""
        return (await self.ascore_details(original, processed))[0]

    def _prompt(
        self, original: dict[str, Any], processed: dict[str, Any]
    ) -> str | tuple[dict[str, float], dict[str, Any]]:
        """The prompt to send, or the scores and details when no call is needed."""
        if original.get("question") is None or original.get("answer") is None:
            return {}, {}
        if "response" not in processed:
            return {}, {}
        response = _text(processed["response"])
        if not response.strip():
            return _both(0.0), {
                "reason": "the response is empty (the judge was not asked)"}
        gold = _text(original["answer"])
        if not gold.strip():
            return _both(0.5), {"reason": "the gold answer is empty: a neutral 0.5",
                                "note": "empty gold answer"}
        return _MEMORY_PROMPT.format(
            question=_text(original["question"]), gold=gold, response=response
        )

    def _verdicts(self, texts: list[str]) -> tuple[dict[str, float], dict[str, Any]]:
        """One answer's verdict (:meth:`_verdict`), or the majority of several."""
        if len(texts) == 1:
            return self._verdict(texts[0])
        said = [parse_yes_no(t) for t in texts]
        if None in said:
            bad = said.index(None)
            return _both(0.0), {
                **_judge_failed(f"the judge's reply {bad + 1} of {len(texts)} has"
                                " neither YES nor NO"),
                "reply": _snippet(texts[bad]),
            }
        yes = sum(1 for v in said if v)
        n = len(said)
        majority = yes * 2 > n
        details: dict[str, Any] = {
            "verdict": "YES" if majority else "NO",
            "repeats": {"n": n, "answers": ["YES" if v else "NO" for v in said],
                        "yes": f"{yes} of {n}" + (" (a tie is NO)" if yes * 2 == n else "")},
        }
        if not majority:
            details = {"reason": f"the judge said NO in {n - yes} of {n} answers",
                       **details}
            rationale = _rationale(next(t for t, v in zip(texts, said) if not v))
            if rationale:
                details["rationale"] = rationale
        return {"memory_judge": 1.0 if majority else 0.0,
                "memory_judge_raw": yes / n}, details

    @staticmethod
    def _verdict(text: str) -> tuple[dict[str, float], dict[str, Any]]:
        verdict = parse_yes_no(text)
        if verdict is None:
            return _both(0.0), {
                **_judge_failed("the judge's reply has neither YES nor NO"),
                "reply": _snippet(text),
            }
        if verdict:
            return _both(1.0), {"verdict": "YES"}
        details: dict[str, Any] = {
            "reason": "the judge said NO: the answer lacks the gold's information",
            "verdict": "NO",
        }
        rationale = _rationale(text)
        if rationale:
            details["rationale"] = rationale
        return _both(0.0), details


def _judge_failed(message: str) -> dict[str, Any]:
    return {"reason": "the judge failed (scored 0.0)", "judge_error": message}


def _both(value: float) -> dict[str, float]:
    return {"memory_judge": value, "memory_judge_raw": value}


# -- AnswerCorrectness ------------------------------------------------------------------

# Both prompts are ours. They ask for what Ragas' statement generator and correctness
# classifier ask for (atomic, pronoun-free, self-contained claims; TP/FP/FN with a
# reason; JSON out), each with a worked example of our own.

_STATEMENTS_PROMPT = """\
Rewrite the answer below as a list of short factual claims.

Rules:
- One fact per claim: split a sentence that says several things.
- Every claim stands on its own: write out the names that pronouns and phrases such \
as "it", "she" or "the city" refer to, so a reader who never saw the answer \
understands the claim.
- Only what the answer says: add nothing, infer nothing, and leave out wording that \
states no fact.
- An answer that states no fact gives an empty list.

Example
Question: Who built the Eiffel Tower?
Answer: Gustave Eiffel's company built it for the 1889 World's Fair, though he did \
not draw its first sketch.
Reply: {{"statements": ["Gustave Eiffel's company built the Eiffel Tower.", \
"The Eiffel Tower was built for the 1889 World's Fair.", \
"Gustave Eiffel did not draw the first sketch of the Eiffel Tower."]}}

Now the real one.
Question: {question}
Answer: {answer}

Reply with one JSON object and nothing else: {{"statements": [...]}}, every claim \
a string."""

_CLASSIFY_PROMPT = """\
Compare the claims of an answer with the claims of a reference answer (the ground \
truth) to the question below, and sort them into three lists:
- "TP": claims of the answer that the reference states or directly implies;
- "FP": claims of the answer that the reference does not support (wrong, or absent \
from it);
- "FN": claims of the reference that no claim of the answer covers.
Every answer claim goes into exactly one of TP and FP; every reference claim the \
answer misses goes into FN. Give a short reason for each.

Example
Question: At what temperature does water boil at sea level?
Answer claims: ["Water boils at 100 degrees Celsius at sea level.", \
"Water boils at 100 degrees Fahrenheit at sea level."]
Reference claims: ["Water boils at 100 degrees Celsius at sea level.", \
"Water boils at 212 degrees Fahrenheit at sea level."]
Reply: {{"TP": [{{"statement": "Water boils at 100 degrees Celsius at sea level.", \
"reason": "The reference gives the same temperature."}}], \
"FP": [{{"statement": "Water boils at 100 degrees Fahrenheit at sea level.", \
"reason": "The reference gives 212 degrees Fahrenheit."}}], \
"FN": [{{"statement": "Water boils at 212 degrees Fahrenheit at sea level.", \
"reason": "The answer gives another Fahrenheit value."}}]}}

Now the real one.
Question: {question}
Answer claims: {answer}
Reference claims: {truth}

Reply with one JSON object and nothing else, with the keys "TP", "FP" and "FN", each \
a list (possibly empty) of {{"statement": "...", "reason": "..."}} objects."""


def fbeta(tp: int, fp: int, fn: int, beta: float = 1.0) -> float:
    """The F-beta score of TP/FP/FN counts; 0.0 when there is no true positive.

    Computed as Ragas computes it (``(1 + b²) · (P · R) / (b² · P + R)``, in that
    order), so the two agree to the last bit.

    :param tp: true positives.
    :param fp: false positives.
    :param fn: false negatives.
    :param beta: > 1 favours recall, < 1 precision.
    """
    if tp == 0:
        return 0.0
    precision = tp / (tp + fp)
    recall = tp / (tp + fn)
    b2 = beta**2
    return (1 + b2) * (precision * recall) / ((b2 * precision) + recall)


def _json_object(text: str) -> Any:
    """The JSON object in a reply, tolerating code fences and chatter around it."""
    stripped = text.strip()
    fence = re.search(r"```(?:json)?\s*(.*?)```", stripped, re.DOTALL)
    if fence:
        stripped = fence.group(1).strip()
    try:
        return json.loads(stripped)
    except ValueError:
        start, end = stripped.find("{"), stripped.rfind("}")
        if start < 0 or end <= start:
            raise
        return json.loads(stripped[start : end + 1])


class _Malformed(ValueError):
    """A reply that parsed as JSON but has the wrong shape (retried once)."""


def _a(value: Any) -> str:
    """``"a str"``, ``"an int"``, ``"null"``: what a JSON value was, for a message."""
    if value is None:
        return "null"
    name = type(value).__name__
    return f"an {name}" if name[0] in "aeiou" else f"a {name}"


def _statements(data: Any) -> list[str]:
    if not isinstance(data, dict) or "statements" not in data:
        raise _Malformed('expected a JSON object with the field "statements"')
    items = data["statements"]
    if not isinstance(items, list):
        raise _Malformed(
            f'the field "statements" is not a list of strings (it is {_a(items)})'
        )
    out = []
    for i, item in enumerate(items):
        if not isinstance(item, str):
            raise _Malformed(
                f'the field "statements" is not a list of strings'
                f" (item {i} is {_a(item)})"
            )
        if item.strip():
            out.append(item.strip())
    return out


def _classification(data: Any) -> tuple[int, int, int]:
    if not isinstance(data, dict):
        raise _Malformed('expected a JSON object with the fields "TP", "FP" and "FN"')
    counts = []
    for key in ("TP", "FP", "FN"):
        name = key if key in data else key.lower()
        if name not in data:
            raise _Malformed(f'the field "{key}" is missing (it must be a list)')
        value = data[name]
        if not isinstance(value, list):
            raise _Malformed(f'the field "{key}" is not a list (it is {_a(value)})')
        counts.append(len(value))
    return counts[0], counts[1], counts[2]


def _sorted_claims(data: Any) -> tuple[int, int, int, list[str], list[str]]:
    """:func:`_classification`, and the FP and FN claims with their reasons."""
    tp, fp, fn = _classification(data)

    def claims(key: str) -> list[str]:
        items = data.get(key, data.get(key.lower())) or []
        out = []
        for item in items:
            if isinstance(item, dict):
                text = _text(item.get("statement"))
                why = _text(item.get("reason"))
                out.append(f"{text} ({why})" if why.strip() else text)
            else:
                out.append(_text(item))
        return out

    return tp, fp, fn, claims("FP"), claims("FN")


def _cosine(a: Sequence[float], b: Sequence[float]) -> float:
    if len(a) != len(b):
        raise JudgeError(f"embeddings of different lengths ({len(a)} and {len(b)}).")
    na = math.sqrt(sum(x * x for x in a))
    nb = math.sqrt(sum(x * x for x in b))
    if na == 0.0 or nb == 0.0:
        raise JudgeError(
            "an embedding is the zero vector; cosine similarity is undefined."
        )
    return sum(x * y for x, y in zip(a, b)) / (na * nb)


class AnswerCorrectness:
    """Ragas-style answer correctness: F-beta of statements, blended with similarity.

    Keys ``answer_correctness`` (the weighted average), ``answer_factuality`` (the
    F-beta of the TP/FP/FN statement counts) and ``answer_similarity`` (the cosine
    similarity of the embeddings of response and reference, clamped to [0, 1]). A
    component whose weight is 0 is not computed and its key is left out.

    Steps: the LLM splits the response, then the reference, into atomic,
    self-contained statements; a second prompt classifies them as TP, FP or FN (when
    neither text gave a statement, factuality is 1.0 and the classifier is not asked,
    as in Ragas); one embeddings request embeds the response and the reference.
    Replies are JSON; a malformed one is asked again once, then :class:`JudgeError` is
    raised, naming the prompt and the field. An endpoint failure raises
    :class:`~pytest_context_bench.llm.LLMError`. Both make the row an error.

    The score equals Ragas' (0.4.3) case by case, except where documented in
    docs/differences.md: a blank response (0.0 here, no call) and a negative cosine
    (clamped here); ``tests/test_answer_correctness_ragas.py`` holds the cases.

    Returns ``{}`` when the example has no ``answer`` (or a blank one: nothing to
    compare against) or there is no ``response``; a blank response scores 0.0 on every
    key without any call. The question (``question``, else ``context``, else empty)
    is given to the LLM as context.

    :param base_url: the LLM's OpenAI-compatible endpoint.
    :param model: the chat model that writes and classifies statements.
    :param embedding_model: the embedding model.
    :param api_key: bearer token; ``None`` reads ``OPENAI_API_KEY``.
    :param weights: (factuality, similarity) weights; non-negative, not both zero.
    :param beta: the F-beta parameter (> 0).
    :param timeout: seconds per attempt.
    :param max_retries: retries after the first attempt of each request.
    :param retry_base_delay: the first backoff delay in seconds.
    :param embedding_base_url: a separate endpoint for embeddings (default
        ``base_url``).
    :param client: an :class:`LLMClient` to use instead of building one.
    :raises ConfigError: for bad weights or beta.
    """

    name = "answer_correctness"

    def __init__(
        self,
        base_url: str,
        model: str = "gpt-4o-mini",
        embedding_model: str = "text-embedding-3-small",
        api_key: str | None = None,
        weights: Sequence[float] = (0.75, 0.25),
        beta: float = 1.0,
        timeout: float = 60.0,
        max_retries: int = 3,
        retry_base_delay: float = 1.0,
        embedding_base_url: str | None = None,
        client: LLMClient | None = None,
    ) -> None:
        w = [float(x) for x in weights]
        if len(w) != 2:
            raise ConfigError(
                f"AnswerCorrectness weights must be two numbers (factuality,"
                f" similarity), got {list(weights)!r}."
            )
        if any(not math.isfinite(x) or x < 0 for x in w) or sum(w) == 0:
            raise ConfigError(
                f"AnswerCorrectness weights must be finite, non-negative and not all"
                f" zero, got {list(weights)!r}; e.g. weights=(0.75, 0.25)."
            )
        if not (math.isfinite(beta) and beta > 0):
            raise ConfigError(
                f"AnswerCorrectness beta must be a positive number, got {beta!r}."
            )
        self.model = model
        self.embedding_model = embedding_model
        self.weights = (w[0], w[1])
        self.beta = float(beta)
        self.client = client or LLMClient(
            base_url,
            api_key,
            timeout=timeout,
            max_retries=max_retries,
            retry_base_delay=retry_base_delay,
        )
        self.embedding_client = (
            LLMClient(
                embedding_base_url,
                api_key,
                timeout=timeout,
                max_retries=max_retries,
                retry_base_delay=retry_base_delay,
            )
            if embedding_base_url
            else self.client
        )

    def __repr__(self) -> str:
        return (
            f"AnswerCorrectness(model={self.model!r}, embedding_model="
            f"{self.embedding_model!r}, weights={self.weights}, beta={self.beta})"
        )

    def _ask_json(self, prompt: str, read: Any, what: str) -> Any:
        """Ask, parse with ``read``; a malformed reply is asked again once."""
        problem = ""
        for _ in range(2):
            reply = self.client.chat(
                [{"role": "user", "content": prompt}], self.model, temperature=0
            )
            try:
                return read(_json_object(reply.text))
            except _Malformed as exc:
                problem = f"{exc}; reply: {_snippet(reply.text)!r}"
            except ValueError as exc:  # json.JSONDecodeError is a ValueError
                problem = f"no JSON object ({exc}); reply: {_snippet(reply.text)!r}"
        raise JudgeError(
            f"AnswerCorrectness: the LLM's reply to the {what} prompt was malformed"
            f" twice (asked again once): {problem}"
        )

    def score(
        self, original: dict[str, Any], processed: dict[str, Any]
    ) -> dict[str, float]:
        """Score one response against the reference.

        :param original: the example (``answer``; ``question`` or ``context``).
        :param processed: the System's output (``response``).
        :raises JudgeError: on a reply malformed twice or an unusable embedding.
        :raises LLMError: when the endpoint fails after its retries.
        """
        return self.score_details(original, processed)[0]

    def score_details(
        self, original: dict[str, Any], processed: dict[str, Any]
    ) -> tuple[dict[str, float], dict[str, Any]]:
        """Like :meth:`score`, also returning why (empty at full marks):
        ``verdict`` (the TP/FP/FN counts), ``unsupported`` (the response's claims
        the reference does not support) and ``missed`` (the reference's claims the
        response does not cover), each claim with the LLM's reason.
        """
        answer = original.get("answer")
        if answer is None or "response" not in processed:
            return {}, {}
        reference = _text(answer)
        if not reference.strip():
            return {}, {}
        w_fact, w_sim = self.weights
        response = _text(processed["response"])
        if not response.strip():
            out = {"answer_correctness": 0.0}
            if w_fact:
                out["answer_factuality"] = 0.0
            if w_sim:
                out["answer_similarity"] = 0.0
            return out, {"reason": "the response is empty (the LLM was not asked)"}
        details: dict[str, Any] = {}
        question = _text(original.get("question", original.get("context", "")))
        scores: dict[str, float] = {}
        if w_fact:
            resp_st = self._ask_json(
                _STATEMENTS_PROMPT.format(question=question, answer=response),
                _statements,
                "statements (response)",
            )
            ref_st = self._ask_json(
                _STATEMENTS_PROMPT.format(question=question, answer=reference),
                _statements,
                "statements (reference)",
            )
            if not resp_st and not ref_st:
                # Nothing to compare: Ragas scores this 1.0 without classifying.
                scores["answer_factuality"] = 1.0
            else:
                tp, fp, fn, unsupported, missed = self._ask_json(
                    _CLASSIFY_PROMPT.format(
                        question=question,
                        answer=json.dumps(resp_st, ensure_ascii=False),
                        truth=json.dumps(ref_st, ensure_ascii=False),
                    ),
                    _sorted_claims,
                    "classification",
                )
                scores["answer_factuality"] = fbeta(tp, fp, fn, self.beta)
                details["verdict"] = f"TP {tp}, FP {fp}, FN {fn}"
                if unsupported:
                    details["unsupported"] = unsupported
                if missed:
                    details["missed"] = missed
        if w_sim:
            a, b = self.embedding_client.embeddings(
                [response, reference], self.embedding_model
            )
            scores["answer_similarity"] = min(1.0, max(0.0, _cosine(a, b)))
        total = w_fact * scores.get("answer_factuality", 0.0) + w_sim * scores.get(
            "answer_similarity", 0.0
        )
        out = {"answer_correctness": total / (w_fact + w_sim), **scores}
        if out["answer_correctness"] >= 1.0:
            return out, {}
        parts = [f"{key.removeprefix('answer_')} {scores[key]:.3g}"
                 for key in ("answer_factuality", "answer_similarity") if key in scores]
        reason = f"answer correctness {out['answer_correctness']:.3g}"
        return out, {"reason": reason + (f" ({', '.join(parts)})" if parts else ""),
                     **details}


# -- llm-rubric -------------------------------------------------------------------------


def grade_llm_rubric(
    judge: LLMJudge, rubric: str, output: str, threshold: float | None, inverse: bool
) -> tuple[bool, float, str]:
    """The verdict of an ``llm-rubric`` assertion (:mod:`.llm_rubric`: promptfoo's
    prompt and rules) from ``judge``'s endpoint and model, asked ``judge.repeat``
    times (each its own cache entry): the majority verdict (a tie fails) and the
    mean score.

    :raises JudgeError: a reply that gives no verdict.
    :raises LLMError: a judge that cannot be reached.
    """
    from .llm_rubric import GradingProblem, grading_messages, read_grading

    messages = grading_messages(rubric, output)
    answers: list[tuple[bool, float, str]] = []
    for index in range(1, judge.repeat + 1):
        with judge_repeat(index):
            reply = judge.client.chat(messages, judge.model, temperature=0)
        try:
            answers.append(read_grading(reply.text, threshold, inverse))
        except GradingProblem as exc:
            raise JudgeError(
                f"the llm-rubric judge's reply {exc}: {_snippet(reply.text)!r}"
            ) from None
    if len(answers) == 1:
        return answers[0]
    n = len(answers)
    passes = sum(1 for ok, _, _ in answers if ok)
    score = math.fsum(s for _, s, _ in answers) / n
    tie = " (a tie fails)" if passes * 2 == n else ""
    scores = ", ".join(f"{s:.3g}" for _, s, _ in answers)
    reason = f"{answers[0][2]} [{passes} of {n} answers passed{tie}; scores {scores}]"
    return passes * 2 > n, score, reason
