"""IFEvalChecker: Google's IFEval strict and loose accuracy for one example."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ...errors import ExampleDataError
from ._instructions import Check, InstructionError, build_check

__all__ = ["IFEvalChecker", "loose_variants"]


def loose_variants(response: str) -> list[str]:
    """The 8 versions of a response the official *loose* evaluation tries.

    The response itself; without its first line; without its last line; without
    both (those three stripped); and each of the four with every ``*`` removed.
    An instruction is loosely followed if any version follows it.

    :param response: the model's text.
    """
    lines = response.split("\n")
    first = "\n".join(lines[1:]).strip()
    last = "\n".join(lines[:-1]).strip()
    both = "\n".join(lines[1:-1]).strip()
    return [
        response,
        response.replace("*", ""),
        first,
        last,
        both,
        first.replace("*", ""),
        last.replace("*", ""),
        both.replace("*", ""),
    ]


def _response_text(processed: dict[str, Any]) -> str:
    value = processed.get("response")
    if value is None:
        return ""
    return value if isinstance(value, str) else str(value)


def _checks(original: dict[str, Any], ids: object) -> list[Check]:
    # A malformed example is bad data, a ValueError like malformed kwargs.
    if isinstance(ids, str) or not isinstance(ids, Sequence):
        raise ExampleDataError(
            "IFEval: 'instruction_id_list' must be a list of instruction ids,"
            f" got {type(ids).__name__}."
        )
    raw_kwargs = original.get("kwargs")
    if raw_kwargs is None:
        raw_kwargs = []
    if isinstance(raw_kwargs, (str, dict)) or not isinstance(raw_kwargs, Sequence):
        raise ExampleDataError(
            "IFEval: 'kwargs' must be a list with one dict per instruction,"
            f" got {type(raw_kwargs).__name__}."
        )
    if len(raw_kwargs) > len(ids):
        raise ExampleDataError(
            f"IFEval: 'kwargs' has {len(raw_kwargs)} entries for {len(ids)}"
            " instructions; they must line up one to one."
        )
    checks = []
    for i, instruction_id in enumerate(ids):
        # A kwargs list shorter than the ids (or a None entry) means no arguments,
        # which suits the argument-less instructions and fails clearly otherwise.
        kwargs = raw_kwargs[i] if i < len(raw_kwargs) else None
        if kwargs is not None and not isinstance(kwargs, Mapping):
            raise InstructionError(
                f"IFEval instruction {instruction_id!r}: its kwargs must be a dict,"
                f" got {type(kwargs).__name__}.",
                instruction_id=str(instruction_id),
            )
        checks.append(build_check(instruction_id, kwargs))
    return checks


def _why_failed(
    original: dict[str, Any], ids: list[Any], failed: list[int],
    failed_loose: list[int], response: str,
) -> dict[str, Any]:
    """The details of the instructions not followed (positions in ``ids``)."""
    raw_kwargs = original.get("kwargs") or []
    names = [str(ids[n]) for n in failed]
    details: dict[str, Any] = {
        "reason": (f"{len(failed)} of {len(ids)} instruction"
                   f"{'s' * (len(ids) != 1)} not followed"
                   + ("" if failed_loose else " (followed loosely)")
                   + ("; the response is empty" if not response.strip() else "")),
        "failed": names,
    }
    if failed_loose != failed:
        details["failed_loose"] = [str(ids[n]) for n in failed_loose]
    why = []
    for n in failed:
        kwargs = raw_kwargs[n] if n < len(raw_kwargs) else None
        asked = ", ".join(f"{k}={v!r}" for k, v in (kwargs or {}).items()
                          if v is not None)
        parts = [f"asked {asked}"] if asked else []
        measured = _measured(str(ids[n]), response)
        if measured:
            parts.append(f"the response has {measured}")
        if parts:
            why.append(f"{ids[n]}: {'; '.join(parts)}")
    if why:
        details["why"] = why
    return details


def _measured(instruction_id: str, response: str) -> str | None:
    """What the response has of the quantity a counting instruction checks."""
    from ._text import count_sentences, count_words

    if instruction_id == "length_constraints:number_words":
        return f"{count_words(response)} words"
    if instruction_id == "length_constraints:number_sentences":
        return f"{count_sentences(response)} sentences"
    if instruction_id == "punctuation:no_comma":
        return f"{response.count(',')} commas"
    return None


class IFEvalChecker:
    """Google's IFEval: does the response follow every verifiable instruction?

    Reads ``original["instruction_id_list"]`` (official ids, all 25 types: see
    :data:`~pytest_context_bench.evaluators.ifeval.INSTRUCTIONS`) and
    ``original["kwargs"]`` (one dict of arguments per instruction; ``None`` values
    are ignored, so the Hugging Face copy of the data works as it is), and
    ``processed["response"]`` (a non-string is scored as ``str()``, ``None`` as
    empty).

    Scores, as the official evaluation computes them for one prompt:

    - ``ifeval_strict``: 1.0 if every instruction is followed, else 0.0
      (prompt-level strict accuracy);
    - ``ifeval_loose``: the same, where an instruction counts as followed if any of
      the 8 :func:`loose_variants` of the response follows it (prompt-level loose);
    - ``ifeval_inst_strict`` and ``ifeval_inst_loose``: the fraction of the
      instructions followed (instruction-level accuracy for this prompt).

    An empty or whitespace-only response (or variant) follows nothing. An empty
    instruction list scores 1.0 everywhere; no ``instruction_id_list`` at all gives
    ``{}``. An unknown id or malformed kwargs raise
    :class:`~pytest_context_bench.evaluators.ifeval.InstructionError` (a
    ``ValueError``) naming the instruction and the argument, so the engine records
    the example as an error instead of a pass.

    >>> IFEvalChecker().score(
    ...     {"instruction_id_list": ["punctuation:no_comma", "keywords:existence"],
    ...      "kwargs": [{}, {"keywords": ["hello"]}]},
    ...     {"response": "hello world"},
    ... )["ifeval_strict"]
    1.0
    """

    name = "ifeval"

    def score(
        self, original: dict[str, Any], processed: dict[str, Any]
    ) -> dict[str, float]:
        """Score one (original, processed) pair.

        :param original: the example, with ``instruction_id_list`` and ``kwargs``.
        :param processed: what the System returned; its ``"response"`` is judged.
        :return: ``ifeval_strict``, ``ifeval_loose``, ``ifeval_inst_strict`` and
            ``ifeval_inst_loose``, or ``{}`` when the example has no instruction
            list.
        :raises InstructionError: an unknown instruction id or malformed kwargs.
        :raises LanguageDetectionUnavailableError: the example asks for
            ``language:response_language`` and langdetect is not installed.
        """
        return self.score_details(original, processed)[0]

    def score_details(
        self, original: dict[str, Any], processed: dict[str, Any]
    ) -> tuple[dict[str, float], dict[str, Any]]:
        """Like :meth:`score`, also returning why (empty when every instruction is
        followed strictly): ``failed`` (the ids not followed, strict),
        ``failed_loose`` (those not followed even loosely, when that differs) and
        ``why`` (per failed instruction, its arguments and, for counts the checker
        measures, what the response has).
        """
        ids = original.get("instruction_id_list")
        if ids is None:
            return {}, {}
        checks = _checks(original, ids)
        if not checks:
            return dict.fromkeys(
                (
                    "ifeval_strict",
                    "ifeval_loose",
                    "ifeval_inst_strict",
                    "ifeval_inst_loose",
                ),
                1.0,
            ), {}
        response = _response_text(processed)
        variants: list[str] | None = None
        strict = loose = 0
        failed: list[int] = []
        failed_loose: list[int] = []
        for n, check in enumerate(checks):
            if response.strip() and check(response):
                strict += 1
                loose += 1
                continue
            failed.append(n)
            if variants is None:
                # The first variant is the response itself, already tried.
                variants = [v for v in loose_variants(response)[1:] if v.strip()]
            if any(check(v) for v in variants):
                loose += 1
            else:
                failed_loose.append(n)
        total = len(checks)
        scores = {
            "ifeval_strict": 1.0 if strict == total else 0.0,
            "ifeval_loose": 1.0 if loose == total else 0.0,
            "ifeval_inst_strict": strict / total,
            "ifeval_inst_loose": loose / total,
        }
        if not failed:
            return scores, {}
        return scores, _why_failed(original, list(ids), failed, failed_loose, response)
