"""A pairwise judge: which of two answers to one example is better, asked in both
orders.

LLM judges prefer a position (often the first answer shown, sometimes the second;
Zheng et al., 2023, "Judging LLM-as-a-judge"). :class:`PairwiseJudge` therefore asks
twice, once with answer A in the first slot and once with B there: the verdict
stands when both orders name the same winner; when it flips with the order, the
pair is a **tie** and is counted as **position-inconsistent**
(:func:`position_inconsistency`: a judge that always prefers the first slot is 100%
inconsistent). ``ctxbench compare --judge-url`` uses it on the examples that flipped
between two runs.

A reply is read strictly (:func:`parse_choice`): one ``Better: 1``, ``2`` or ``tie``
line; anything else raises :class:`~pytest_context_bench.evaluators.judges.JudgeError`.
The two requests go through the run's LLM cache when one is active (each order is
its own entry) and are metered as any judge's.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..llm import LLMClient

__all__ = [
    "ChoiceProblem",
    "PAIRWISE_PROMPT",
    "PairwiseJudge",
    "PairwiseVerdict",
    "parse_choice",
    "position_inconsistency",
    "task_of",
]

_DEFAULT_CRITERIA = (
    "Which response answers the task better: correct (against the reference answer,"
    " when one is given), complete, and helpful, as a careful expert would judge."
)

#: The prompt of one order (docs/judges.md shows it).
PAIRWISE_PROMPT = """\
You are an expert judge. Compare two responses to the same task.

Criteria:
{criteria}
{material}
[Response 1]
{first}

[Response 2]
{second}

Judge only what the responses say: their order and their length are no reason to \
prefer one. Reply with exactly these two lines and nothing else:
Better: <1, 2 or tie>
Reason: <one sentence saying why>"""

_BETTER = re.compile(r"[\s*_#>`-]*(?:better|winner|verdict|choice)\b[\s*_`]*[:=]?[\s*_`]*(.*)", re.IGNORECASE)
_REASON = re.compile(r"[\s*_#>`-]*reason\b[\s*_`]*[:=]?[\s*_`]*(.*)", re.IGNORECASE)
_LINE = re.compile(r"[^\r\n]+")
_ONE = re.compile(r"(?:response\s*)?1", re.IGNORECASE)
_TWO = re.compile(r"(?:response\s*)?2", re.IGNORECASE)
_TIE = re.compile(r"tie|equal|neither|both", re.IGNORECASE)


class ChoiceProblem(ValueError):
    """A pairwise reply that names no winner (raised as the judge's JudgeError)."""


def parse_choice(reply: str) -> tuple[str, str]:
    """``("1" | "2" | "tie", reason)`` of a pairwise reply: its ``Better:`` line
    (``Winner:`` too) holds ``1``, ``2`` (``Response 2``) or ``tie``, nothing more;
    a reply that is only one of them is that one.

    :raises ChoiceProblem: no such line, an unreadable one, or lines that disagree.
    """
    said: list[str] = []
    reasons: list[str] = []
    for m in _LINE.finditer(reply):
        line = m.group(0)
        better = _BETTER.match(line)
        if better is not None:
            said.append(_choice(better.group(1)))
            continue
        why = _REASON.match(line)
        if why is not None:
            reasons.append(why.group(1))
    if not said:
        bare = reply.strip().strip("*_`.").strip()
        if bare and len(bare) <= 12:
            return _choice(bare), ""
        raise ChoiceProblem("has no 'Better: 1, 2 or tie' line")
    if len(set(said)) > 1:
        raise ChoiceProblem(f"names different winners ({', '.join(sorted(set(said)))})")
    reason = " ".join(" ".join(reasons).split())
    return said[0], reason[:1000] + ("…" if len(reason) > 1000 else "")


def _choice(text: str) -> str:
    value = text.strip().strip("*_`.!").strip()
    if _ONE.fullmatch(value):
        return "1"
    if _TWO.fullmatch(value):
        return "2"
    if _TIE.fullmatch(value):
        return "tie"
    shown = " ".join(value.split())[:40]
    raise ChoiceProblem(f"names {shown!r}, not 1, 2 or tie")


@dataclass(frozen=True)
class PairwiseVerdict:
    """The two orders' verdicts on answers ``a`` and ``b``.

    :param winner: ``"a"``, ``"b"`` or ``"tie"`` (a tie too when the orders disagree).
    :param consistent: both orders named the same winner (or both a tie).
    :param a_first: the verdict with ``a`` shown first, as ``"a"``, ``"b"`` or
        ``"tie"``; ``b_first`` with ``b`` shown first.
    :param reasons: the judge's reason in each order (``a`` first, then ``b`` first).
    """

    winner: str
    consistent: bool
    a_first: str
    b_first: str
    reasons: tuple[str, str] = ("", "")

    def describe(self) -> str:
        """``B better``, ``A better``, ``tie`` or ``tie (position-inconsistent: ...)``."""
        if not self.consistent:
            return (
                f"tie (position-inconsistent: {_name(self.a_first)} when A was shown first,"
                f" {_name(self.b_first)} when B was)"
            )
        return "tie" if self.winner == "tie" else f"{self.winner.upper()} better"

    def to_dict(self) -> dict[str, Any]:
        return {
            "winner": self.winner,
            "consistent": self.consistent,
            "a_first": self.a_first,
            "b_first": self.b_first,
            "reasons": list(self.reasons),
        }


def _name(choice: str) -> str:
    return "tie" if choice == "tie" else f"{choice.upper()} better"


def position_inconsistency(verdicts: Iterable[PairwiseVerdict]) -> float:
    """The share of pairs whose verdict flipped with the order (``nan`` for none)."""
    got = list(verdicts)
    if not got:
        return float("nan")
    return sum(1 for v in got if not v.consistent) / len(got)


@dataclass
class PairwiseJudge:
    """Compares two answers to one example, in both orders.

    :param base_url: the judge's OpenAI-compatible endpoint.
    :param model: the judge model.
    :param criteria: what "better" means (default: correct, complete, helpful).
    :param api_key: bearer token; ``None`` reads ``OPENAI_API_KEY``.
    :param timeout: seconds per attempt; ``max_retries`` retries after the first.
    :param client: an :class:`LLMClient` to use instead of building one.
    """

    base_url: str
    model: str = "gpt-4"
    criteria: str | None = None
    api_key: str | None = field(default=None, repr=False)
    timeout: float = 60.0
    max_retries: int = 3
    retry_base_delay: float = 1.0
    max_tokens: int = 300
    client: LLMClient | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if self.client is None:
            self.client = LLMClient(
                self.base_url, self.api_key, timeout=self.timeout,
                max_retries=self.max_retries, retry_base_delay=self.retry_base_delay,
            )

    def prompt(self, first: str, second: str, task: str | None = None, reference: str | None = None) -> str:
        """The prompt of one order."""
        material = ""
        if task is not None and task.strip():
            material += f"\n[Task]\n{task}\n"
        if reference is not None and reference.strip():
            material += f"\n[Reference answer]\n{reference}\n"
        return PAIRWISE_PROMPT.format(
            criteria=(self.criteria or _DEFAULT_CRITERIA).strip(),
            material=material,
            first=first,
            second=second,
        )

    def compare(
        self, a: str, b: str, *, task: str | None = None, reference: str | None = None
    ) -> PairwiseVerdict:
        """Ask with ``a`` first, then with ``b`` first, and combine.

        :raises JudgeError: a reply that names no winner.
        :raises LLMError: a judge that cannot be reached after its retries.
        """
        from .judges import JudgeError, _snippet

        assert self.client is not None
        said: list[tuple[str, str]] = []
        for first, second in ((a, b), (b, a)):
            reply = self.client.chat(
                [{"role": "user", "content": self.prompt(first, second, task, reference)}],
                self.model, temperature=0, max_tokens=self.max_tokens,
            )
            try:
                said.append(parse_choice(reply.text))
            except ChoiceProblem as exc:
                raise JudgeError(f"the pairwise judge's reply {exc}: {_snippet(reply.text)!r}") from None
        a_first = {"1": "a", "2": "b", "tie": "tie"}[said[0][0]]
        b_first = {"1": "b", "2": "a", "tie": "tie"}[said[1][0]]
        consistent = a_first == b_first
        return PairwiseVerdict(
            winner=a_first if consistent else "tie",
            consistent=consistent,
            a_first=a_first,
            b_first=b_first,
            reasons=(said[0][1], said[1][1]),
        )


def task_of(*records: Iterable[Any] | None) -> str | None:
    """The task a report row's System was given: the last user message of its first
    recorded System call (each argument is a row's call records), or ``None``."""
    for calls in records:
        for call in calls or ():
            if not isinstance(call, Mapping) or call.get("source") != "system":
                continue
            users = [m.get("text") for m in call.get("messages") or ()
                     if isinstance(m, Mapping) and m.get("role") == "user"]
            if users and isinstance(users[-1], str):
                return users[-1]
    return None
