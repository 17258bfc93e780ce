"""The 25 instruction types of Google's IFEval and their checks.

Each type validates its keyword arguments once (:meth:`InstructionType.build`) and
returns a check, ``response -> bool``, with the semantics of Google's
``instruction_following_eval/instructions.py``:

- relations are ``"less than"`` (``<``) and ``"at least"`` (``>=``), nothing else;
- ``keywords:existence`` and ``keywords:frequency`` match case-insensitively
  anywhere (substrings), ``keywords:forbidden_words`` only as whole words
  (``\\bword\\b``);
- ``length_constraints:number_paragraphs`` splits on the ``***`` divider and wants
  the exact count; ``nth_paragraph_first_word`` splits on blank lines (``"\\n\\n"``);
- ``detectable_format:number_bullet_lists`` counts lines that start with ``*`` (not
  ``**``) or ``-`` and wants the exact count;
- ``detectable_format:constrained_response`` looks for one of the fixed answers
  "My answer is yes.", "My answer is no.", "My answer is maybe.";
- ``change_case:english_capital`` means the whole response is upper case.

Deliberate differences, each about input the official code mishandles:

- An argument the official code would *invent at random* when it is missing
  (every threshold, keyword and marker) is required here; a missing, empty,
  negative or mistyped argument, an unknown argument or a relation other than the
  two above raises :class:`InstructionError` naming the instruction and the
  argument. ``None`` (and a float NaN, as pandas writes a missing integer) means
  "not given", so the Hugging Face copy of the data, whose kwargs dicts hold every
  argument name with ``None`` for the unused ones, works as it is.
- Keywords, forbidden words, section splitters and postscript markers are matched
  literally; the official code pastes them into regular expressions unescaped
  (identical for ordinary words, but ``"C++"`` crashed it).
- Language detection is seeded (see :mod:`._text`). ``change_case:english_capital``
  and ``english_lowercase`` also require langdetect to say English, as the official
  checks do, when langdetect is installed; without it they check the case only.
  ``language:response_language`` cannot do without it and raises
  :class:`LanguageDetectionUnavailableError`.
- Checks that the official regular expressions run in quadratic time on
  pathological input (a megabyte of ``[`` or of blank lines) are computed by
  equivalent linear scans, so a huge response is scored in bounded time.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from ...errors import ExampleDataError
from ._text import (
    count_capital_words,
    count_sentences,
    count_words,
    detect_language,
    langdetect_available,
    require_langdetect,
)

__all__ = [
    "CONSTRAINED_RESPONSE_OPTIONS",
    "INSTRUCTIONS",
    "RELATIONS",
    "Check",
    "InstructionError",
    "InstructionType",
    "build_check",
]

#: A built check: ``True`` when the response follows the instruction.
Check = Callable[[str], bool]

#: The two comparison relations IFEval uses.
RELATIONS = ("less than", "at least")

#: The only answers ``detectable_format:constrained_response`` accepts.
CONSTRAINED_RESPONSE_OPTIONS = (
    "My answer is yes.",
    "My answer is no.",
    "My answer is maybe.",
)


class InstructionError(ExampleDataError):
    """An instruction id is unknown, or its keyword arguments are malformed (a
    ``ValueError``, and an :class:`~pytest_context_bench.errors.ExampleDataError`:
    the example's error row, one line in a pytest run).

    :param message: a full sentence naming the instruction and the argument.
    :param instruction_id: the instruction concerned.
    :param argument: the keyword argument concerned, when there is one.
    """

    def __init__(
        self, message: str, *, instruction_id: str, argument: str | None = None
    ) -> None:
        super().__init__(message)
        self.instruction_id = instruction_id
        self.argument = argument


class _Args:
    """The given (non-None) arguments of one instruction, read with validation."""

    def __init__(self, instruction_id: str, values: Mapping[str, Any]) -> None:
        self.id = instruction_id
        self.values = values

    def error(self, name: str, problem: str) -> InstructionError:
        return InstructionError(
            f"IFEval instruction {self.id!r}: argument {name!r} {problem}.",
            instruction_id=self.id,
            argument=name,
        )

    def _get(self, name: str) -> Any:
        if name not in self.values:
            raise self.error(name, "is missing (or None)")
        return self.values[name]

    def count(self, name: str, minimum: int = 0) -> int:
        value = self._get(name)
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.error(name, f"must be an integer, got {value!r}")
        if value < minimum:
            raise self.error(name, f"must be at least {minimum}, got {value!r}")
        return value

    def text(self, name: str, *, strip: bool = True) -> str:
        value = self._get(name)
        if not isinstance(value, str):
            raise self.error(name, f"must be a string, got {value!r}")
        if strip:
            value = value.strip()
        if not value.strip():
            raise self.error(name, "must not be empty")
        return value

    def texts(self, name: str) -> list[str]:
        value = self._get(name)
        if isinstance(value, str) or not isinstance(value, (list, tuple)):
            raise self.error(name, f"must be a list of strings, got {value!r}")
        if not value:
            raise self.error(name, "must not be an empty list")
        for item in value:
            if not isinstance(item, str) or not item:
                raise self.error(
                    name, f"must hold non-empty strings only, got {item!r}"
                )
        return list(value)

    def relation(self, name: str) -> str:
        value = self._get(name)
        if value not in RELATIONS:
            raise self.error(name, f"must be 'less than' or 'at least', got {value!r}")
        return str(value)

    def letter(self, name: str) -> str:
        value = self._get(name)
        if not isinstance(value, str) or len(value) != 1 or value.isspace():
            raise self.error(name, f"must be a single letter, got {value!r}")
        lowered = value.lower()
        if len(lowered) != 1:
            raise self.error(name, f"must be a single letter, got {value!r}")
        return lowered


def _compare(actual: int, relation: str, threshold: int) -> bool:
    if relation == "less than":
        return actual < threshold
    return actual >= threshold


@dataclass(frozen=True)
class InstructionType:
    """One IFEval instruction type: its id, its arguments and how to check it.

    :param id: the official id, e.g. ``"punctuation:no_comma"``.
    :param arguments: the names of its keyword arguments (all required).
    :param description: what a response must do, in one sentence.
    """

    id: str
    arguments: tuple[str, ...]
    description: str
    _factory: Callable[[_Args], Check] = field(repr=False, compare=False)

    def build(self, kwargs: Mapping[str, Any] | None = None) -> Check:
        """Validate ``kwargs`` and return the check for this instruction.

        :param kwargs: the instruction's keyword arguments; ``None`` values (and
            NaN) are dropped first, so dicts that list every argument name work.
        :raises InstructionError: an argument is missing, unknown or malformed.
        """
        if kwargs is None:
            kwargs = {}
        if not isinstance(kwargs, Mapping):
            raise InstructionError(
                f"IFEval instruction {self.id!r}: its kwargs must be a dict,"
                f" got {type(kwargs).__name__}.",
                instruction_id=self.id,
            )
        given = {
            str(k): v
            for k, v in kwargs.items()
            if v is not None and not (isinstance(v, float) and math.isnan(v))
        }
        for name in given:
            if name not in self.arguments:
                expected = ", ".join(self.arguments) or "none"
                raise InstructionError(
                    f"IFEval instruction {self.id!r}: unexpected argument {name!r}"
                    f" (its arguments: {expected}).",
                    instruction_id=self.id,
                    argument=name,
                )
        return self._factory(_Args(self.id, given))


# ------------------------------------------------------------------ the checks


def _keywords_existence(a: _Args) -> Check:
    patterns = [re.compile(re.escape(k), re.IGNORECASE) for k in a.texts("keywords")]
    return lambda r: all(p.search(r) for p in patterns)


def _keywords_frequency(a: _Args) -> Check:
    pattern = re.compile(re.escape(a.text("keyword")), re.IGNORECASE)
    n, rel = a.count("frequency"), a.relation("relation")
    return lambda r: _compare(sum(1 for _ in pattern.finditer(r)), rel, n)


def _forbidden_words(a: _Args) -> Check:
    patterns = [
        re.compile(r"\b" + re.escape(w) + r"\b", re.IGNORECASE)
        for w in a.texts("forbidden_words")
    ]
    return lambda r: not any(p.search(r) for p in patterns)


def _letter_frequency(a: _Args) -> Check:
    letter = a.letter("letter")
    n, rel = a.count("let_frequency"), a.relation("let_relation")
    return lambda r: _compare(r.lower().count(letter), rel, n)


def _response_language(a: _Args) -> Check:
    language = a.text("language")
    # Fail when the instruction is built, not when it is checked, so an example
    # asking for it is an error whatever the response (an empty one is never
    # checked).
    require_langdetect()

    def check(r: str) -> bool:
        found = detect_language(r)
        # Official: text langdetect cannot classify counts as followed.
        return found is None or found == language

    return check


def _is_english(r: str) -> bool:
    if not langdetect_available():
        return True
    found = detect_language(r)
    return found is None or found == "en"


def _number_sentences(a: _Args) -> Check:
    n, rel = a.count("num_sentences"), a.relation("relation")
    return lambda r: _compare(count_sentences(r), rel, n)


_DIVIDER_RE = re.compile(r"\s?\*\*\*\s?")


def _number_paragraphs(a: _Args) -> Check:
    n = a.count("num_paragraphs")

    def check(r: str) -> bool:
        parts = _DIVIDER_RE.split(r)
        count = len(parts)
        for i, part in enumerate(parts):
            if not part.strip():
                # An empty paragraph is allowed only before the first divider or
                # after the last one.
                if i in (0, len(parts) - 1):
                    count -= 1
                else:
                    return False
        return count == n

    return check


def _number_words(a: _Args) -> Check:
    n, rel = a.count("num_words"), a.relation("relation")
    return lambda r: _compare(count_words(r), rel, n)


_FIRST_WORD_STOP = frozenset(".,?!'\"")


def _nth_paragraph_first_word(a: _Args) -> Check:
    n = a.count("num_paragraphs")
    nth = a.count("nth_paragraph", minimum=1)
    if nth > n:
        raise a.error("nth_paragraph", f"must be at most num_paragraphs ({n})")
    expected = a.text("first_word", strip=False).lower()

    def check(r: str) -> bool:
        paragraphs = r.split("\n\n")
        count = sum(1 for p in paragraphs if p.strip())
        # As the official check: the count skips empty paragraphs but the index
        # does not.
        if nth > count:
            return False
        paragraph = paragraphs[nth - 1].strip()
        if not paragraph:
            return False
        word = paragraph.split()[0].lstrip("'").lstrip('"')
        first = []
        for ch in word:
            if ch in _FIRST_WORD_STOP:
                break
            first.append(ch.lower())
        return count == n and "".join(first) == expected

    return check


def _count_placeholders(r: str) -> int:
    # re.findall(r"\[.*?\]") by hand: the regex retries every "[" to the end of its
    # line, quadratic on a long line of "[" without "]".
    count, pos, n = 0, 0, len(r)
    while True:
        start = r.find("[", pos)
        if start < 0:
            return count
        eol = r.find("\n", start)
        if eol < 0:
            eol = n
        close = r.find("]", start + 1, eol)
        if close < 0:
            pos = eol + 1
            if pos > n:
                return count
        else:
            count += 1
            pos = close + 1


def _number_placeholders(a: _Args) -> Check:
    n = a.count("num_placeholders")
    return lambda r: _count_placeholders(r) >= n


def _postscript(a: _Args) -> Check:
    marker = a.text("postscript_marker")
    if marker == "P.P.S":
        pattern = re.compile(r"p\.\s?p\.\s?s")
    elif marker == "P.S.":
        pattern = re.compile(r"p\.\s?s\.")
    else:
        pattern = re.compile(re.escape(marker.lower()))
    # The official pattern wraps this in r"\s*...*$" under MULTILINE, which matches
    # wherever the core does; searching the core alone avoids its quadratic
    # backtracking over long whitespace.
    return lambda r: pattern.search(r.lower()) is not None


# A line's first non-space character (on that line) is "*" / "-".
_STAR_LINE_RE = re.compile(r"^[^\S\n]*\*", re.MULTILINE)
_DASH_LINE_RE = re.compile(r"^[^\S\n]*-", re.MULTILINE)


def _count_bullets(r: str) -> int:
    r"""The official ``re.findall(r"^\s*\*[^\*].*$")`` plus ``r"^\s*-.*$"`` counts.

    Those regexes (MULTILINE) retry ``\s*`` from every line start of a run of
    blank lines, quadratic on a megabyte of newlines; this gives the same counts
    in linear time. A match starting on a blank line runs on to the next
    non-blank one, so counting lines is the same as counting matches, except that
    the star pattern's ``[^\*]`` can consume the newline after a lone "*", whose
    match then swallows the whole next line.
    """
    dashes = sum(1 for _ in _DASH_LINE_RE.finditer(r))
    stars, swallowed_to, n = 0, -1, len(r)
    for m in _STAR_LINE_RE.finditer(r):
        star = m.end() - 1
        if star < swallowed_to or star + 1 >= n or r[star + 1] == "*":
            continue
        stars += 1
        if r[star + 1] == "\n":
            end = r.find("\n", star + 2)
            swallowed_to = n if end < 0 else end
    return stars + dashes


def _number_bullet_lists(a: _Args) -> Check:
    n = a.count("num_bullets")
    return lambda r: _count_bullets(r) == n


def _constrained_response(a: _Args) -> Check:
    def check(r: str) -> bool:
        r = r.strip()
        return any(option in r for option in CONSTRAINED_RESPONSE_OPTIONS)

    return check


_HIGHLIGHT_RE = re.compile(r"\*[^\n\*]*\*")
_DOUBLE_HIGHLIGHT_RE = re.compile(r"\*\*[^\n\*]*\*\*")


def _count_highlights(r: str) -> int:
    single = sum(1 for m in _HIGHLIGHT_RE.finditer(r) if m.group()[1:-1].strip())
    double = sum(1 for m in _DOUBLE_HIGHLIGHT_RE.finditer(r) if m.group()[2:-2].strip())
    return single + double


def _number_highlighted_sections(a: _Args) -> Check:
    n = a.count("num_highlights")
    return lambda r: _count_highlights(r) >= n


def _multiple_sections(a: _Args) -> Check:
    splitter = a.text("section_spliter")
    n = a.count("num_sections")
    pattern = re.compile(r"\s?" + re.escape(splitter) + r"\s?\d+\s?")
    return lambda r: sum(1 for _ in pattern.finditer(r)) >= n


def _is_json(r: str) -> bool:
    body = (
        r.strip()
        .removeprefix("```json")
        .removeprefix("```Json")
        .removeprefix("```JSON")
        .removeprefix("```")
        .removesuffix("```")
        .strip()
    )
    try:
        json.loads(body)
    except (ValueError, RecursionError):
        return False
    return True


def _json_format(a: _Args) -> Check:
    return _is_json


def _has_title(r: str) -> bool:
    # re.findall(r"<<[^\n]+>>") by hand: per line, the greedy match runs from the
    # first "<<" to the last ">>" (at least one character between), and a line
    # holds at most one such match.
    for line in r.split("\n"):
        start = line.find("<<")
        if start < 0:
            continue
        end = line.rfind(">>")
        if end >= start + 3 and line[start : end + 2].lstrip("<").rstrip(">").strip():
            return True
    return False


def _title(a: _Args) -> Check:
    return _has_title


def _two_different_responses(r: str) -> bool:
    parts = r.split("******")
    valid = []
    for i, part in enumerate(parts):
        if part.strip():
            valid.append(part)
        elif i not in (0, len(parts) - 1):
            return False
    return len(valid) == 2 and valid[0].strip() != valid[1].strip()


def _two_responses(a: _Args) -> Check:
    return _two_different_responses


def _repeat_prompt(a: _Args) -> Check:
    prompt = a.text("prompt_to_repeat").lower()
    return lambda r: r.strip().lower().startswith(prompt)


def _end_checker(a: _Args) -> Check:
    phrase = a.text("end_phrase").lower()
    return lambda r: r.strip().strip('"').lower().endswith(phrase)


def _capital_word_frequency(a: _Args) -> Check:
    n = a.count("capital_frequency")
    rel = a.relation("capital_relation")
    return lambda r: _compare(count_capital_words(r), rel, n)


def _english_capital(a: _Args) -> Check:
    return lambda r: r.isupper() and _is_english(r)


def _english_lowercase(a: _Args) -> Check:
    return lambda r: r.islower() and _is_english(r)


def _no_comma(a: _Args) -> Check:
    return lambda r: "," not in r


def _quotation(a: _Args) -> Check:
    def check(r: str) -> bool:
        r = r.strip()
        return len(r) > 1 and r[0] == '"' and r[-1] == '"'

    return check


_TYPES = (
    InstructionType(
        "keywords:existence",
        ("keywords",),
        "Every keyword appears (case-insensitive, anywhere).",
        _keywords_existence,
    ),
    InstructionType(
        "keywords:frequency",
        ("keyword", "frequency", "relation"),
        "The keyword appears less than / at least `frequency` times.",
        _keywords_frequency,
    ),
    InstructionType(
        "keywords:forbidden_words",
        ("forbidden_words",),
        "None of the words appears as a whole word (case-insensitive).",
        _forbidden_words,
    ),
    InstructionType(
        "keywords:letter_frequency",
        ("letter", "let_frequency", "let_relation"),
        "The letter appears less than / at least `let_frequency` times.",
        _letter_frequency,
    ),
    InstructionType(
        "language:response_language",
        ("language",),
        "langdetect says the response is in `language` (needs langdetect).",
        _response_language,
    ),
    InstructionType(
        "length_constraints:number_sentences",
        ("num_sentences", "relation"),
        "Less than / at least `num_sentences` sentences.",
        _number_sentences,
    ),
    InstructionType(
        "length_constraints:number_paragraphs",
        ("num_paragraphs",),
        "Exactly `num_paragraphs` paragraphs separated by the *** divider.",
        _number_paragraphs,
    ),
    InstructionType(
        "length_constraints:number_words",
        ("num_words", "relation"),
        "Less than / at least `num_words` words.",
        _number_words,
    ),
    InstructionType(
        "length_constraints:nth_paragraph_first_word",
        ("num_paragraphs", "nth_paragraph", "first_word"),
        "Exactly `num_paragraphs` blank-line-separated paragraphs, paragraph"
        " `nth_paragraph` starting with `first_word`.",
        _nth_paragraph_first_word,
    ),
    InstructionType(
        "detectable_content:number_placeholders",
        ("num_placeholders",),
        "At least `num_placeholders` [placeholders] in square brackets.",
        _number_placeholders,
    ),
    InstructionType(
        "detectable_content:postscript",
        ("postscript_marker",),
        "A postscript starting with `postscript_marker` (P.S. or P.P.S).",
        _postscript,
    ),
    InstructionType(
        "detectable_format:number_bullet_lists",
        ("num_bullets",),
        "Exactly `num_bullets` markdown bullet lines (* or -).",
        _number_bullet_lists,
    ),
    InstructionType(
        "detectable_format:constrained_response",
        (),
        "Contains 'My answer is yes.', 'My answer is no.' or 'My answer is maybe.'.",
        _constrained_response,
    ),
    InstructionType(
        "detectable_format:number_highlighted_sections",
        ("num_highlights",),
        "At least `num_highlights` *highlighted* sections.",
        _number_highlighted_sections,
    ),
    InstructionType(
        "detectable_format:multiple_sections",
        ("section_spliter", "num_sections"),
        "At least `num_sections` sections marked '`section_spliter` N'.",
        _multiple_sections,
    ),
    InstructionType(
        "detectable_format:json_format",
        (),
        "The whole response (code fences allowed) is valid JSON.",
        _json_format,
    ),
    InstructionType(
        "detectable_format:title",
        (),
        "A title in double angular brackets, <<like this>>.",
        _title,
    ),
    InstructionType(
        "combination:two_responses",
        (),
        "Two different responses separated by ******.",
        _two_responses,
    ),
    InstructionType(
        "combination:repeat_prompt",
        ("prompt_to_repeat",),
        "Starts by repeating `prompt_to_repeat` (case-insensitive).",
        _repeat_prompt,
    ),
    InstructionType(
        "startend:end_checker",
        ("end_phrase",),
        "Ends with `end_phrase` (case-insensitive, ignoring a closing quote).",
        _end_checker,
    ),
    InstructionType(
        "change_case:capital_word_frequency",
        ("capital_frequency", "capital_relation"),
        "Less than / at least `capital_frequency` all-capital words.",
        _capital_word_frequency,
    ),
    InstructionType(
        "change_case:english_capital",
        (),
        "The whole response is upper case (and English, with langdetect).",
        _english_capital,
    ),
    InstructionType(
        "change_case:english_lowercase",
        (),
        "The whole response is lower case (and English, with langdetect).",
        _english_lowercase,
    ),
    InstructionType(
        "punctuation:no_comma",
        (),
        "No comma anywhere.",
        _no_comma,
    ),
    InstructionType(
        "startend:quotation",
        (),
        "The whole response is wrapped in double quotation marks.",
        _quotation,
    ),
)

#: Every supported instruction type by its official id (read-only).
INSTRUCTIONS: Mapping[str, InstructionType] = MappingProxyType(
    {t.id: t for t in _TYPES}
)


def build_check(instruction_id: str, kwargs: Mapping[str, Any] | None = None) -> Check:
    """Validate one instruction and return its check.

    :param instruction_id: an official IFEval id (see :data:`INSTRUCTIONS`).
    :param kwargs: its keyword arguments; ``None`` values are ignored.
    :raises InstructionError: the id is unknown or an argument is malformed.
    """
    kind = INSTRUCTIONS.get(instruction_id) if isinstance(instruction_id, str) else None
    if kind is None:
        raise InstructionError(
            f"Unknown IFEval instruction id {instruction_id!r}; the known ids are"
            f" {', '.join(sorted(INSTRUCTIONS))}.",
            instruction_id=str(instruction_id),
        )
    return kind.build(kwargs)
