"""MultipleChoiceAccuracy: which lettered option did the response choose?

The work is in :func:`extract_choice`, which turns a free-text response into one
letter (or ``None``). It is public so that Systems, notebooks and other evaluators
can reuse exactly the rule the benchmark scores with.

Extraction order (the first rule that yields a letter wins):

1. **An explicit answer.** Phrasings that state the answer, anywhere in the text.
   When several appear, the *last* one wins (models revise: "The answer is A.
   Wait, no: the answer is C." is C). The phrasings:

   - ``answer`` with an optional qualifier and separator: "The answer is (C)",
     "Answer: c", "Final answer: C", "The correct answer would be C",
     "**Answer:** C", "The answer is definitely C", "The answer, I think, is C";
   - "the correct/best/right/final option (or choice, letter) is C", "Choice: C";
   - a choosing verb: "I choose option D", "I pick (H)", "I'd go with B",
     "Let's select C", "I'd say B";
   - "it's C" / "it is C" / "it must be C" (so "It's not A, it's C" is C: "not"
     stops the first one from being an answer at all);
   - a letter stated to be right: "B is correct", "(B) is the correct answer",
     "Option B is the best" (not after "not", "nor", "whether", "if", ...);
   - ``\\boxed{C}`` / ``\\fbox{C}``.

   Only when none of those is present, a **bold letter** (``**C**``, ``__C__``)
   counts, again the last one. Bold is weaker because models bold every option
   while they go through them.

   Filler between the phrase and the letter is skipped: "option", "choice",
   "letter", "the", and adverbs such as "definitely", "most likely",
   "therefore". A hedge ("A or B", "A/B") is not an answer.
2. **A lone letter:** the whole response is one letter, with optional
   whitespace, brackets, quotes, markdown, trailing ``.``/``:``/``!`` and an
   optional "Option"/"Choice"/"Answer"/"Letter" in front: ``"(D)"``, ``"b."``,
   ``"**C**"``, ``"Option B"``.
3. **A leading letter:** the first non-blank line starts with ``C)``, ``(C)``,
   ``[C]``, ``C.``, ``C:`` or ``C -``, or is itself a lone letter.
4. **The text of a choice** (only when ``choices`` is given): the response, taken
   case-insensitively with whitespace collapsed, quotes the complete text of
   exactly one choice (as whole words; a choice whose every occurrence lies
   inside another matched choice, such as "Paris" inside "Paris, Texas", does not
   count on its own).
5. **A single candidate:** exactly one distinct capital letter of the range stands
   alone in the text ("In a way, D"; "I think D"), not after a negation ("not
   A") and not said to be wrong ("A is incorrect"). Two letters joined as a list
   or hedge ("A and B", "A or B", "A, B") mean no answer.

Everywhere except rule 2, the words "I" and "a"/"A" are not letters when they are
used as words. A bare (unbracketed, unbolded) A or I counts only when punctuation,
a line end or the end of the text follows it ("The answer is A."), or one of
"because", "since", "as", "given", "due", "is", "was", "are", "were" does ("The
answer is A because ...", "A is correct"). So "The answer is a bit unclear" and
"Answer: I think C" give neither A nor I.

Letters outside the example's range (A plus ``n_choices - 1``, at most J) are
ignored wherever they appear, so "The answer is E" with four choices says nothing.
Without ``choices`` the range is A-J: the prompt is not parsed for its options.
Everything is regular expressions anchored on literal phrases or on single
characters, linear in the length of the response: a 1 MB response takes about a
second (about two on adversarial input such as a megabyte of "a I A ").
"""

from __future__ import annotations

import bisect
import re
import unicodedata
from collections.abc import Sequence
from typing import Any

__all__ = ["MAX_CHOICES", "MultipleChoiceAccuracy", "extract_choice"]

#: The most options a question may have: letters A to J (MMLU-Pro has ten).
MAX_CHOICES = 10
_LETTERS = "ABCDEFGHIJ"

# -- building blocks ----------------------------------------------------------

# What may wrap a letter: brackets, quotes, markdown emphasis/code, TeX math and
# the TeX text commands models put around a letter ("$\textbf{C}$").
_OPEN = r"(?:[(\[{*_`\"'\u201c\u2018$]|\\(?:text(?:bf|it|rm)?|math(?:bf|rm))\{)*"
_CLOSE = r"[)\]}*_`\"'\u201d\u2019$]*"
# The letter must stand alone: no letter or digit after it, nor a contraction
# ("I'm", "A's"), an abbreviation ("e.g.", "i.e.", "A.I."), a compound
# ("D-glucose") or a slash pair ("A/B" testing).
_ALONE_AFTER = (
    r"(?![A-Za-z0-9])(?![\'\u2019][A-Za-z])(?!\.[A-Za-z0-9])(?![-\u2010/&][A-Za-z0-9])"
)
# ...and nothing word-like glued before it ("Ph.D", "Vitamin-C", "x/A").
_ALONE_BEFORE = r"(?<![A-Za-z0-9\'\u2019.\-/&\\])"
# A wrapped letter is matched from the first wrapper character only: starting
# inside a run of "*" or "(" again at every position would be quadratic.
_RUN_START = r"(?<![(\[{*_`\"'\u201c\u2018$])"

_TOKEN = re.compile(
    rf"(?P<open>{_OPEN})[ \t]*(?P<letter>[A-Za-z]){_ALONE_AFTER}[ \t]*(?P<close>{_CLOSE})"
)

# Words that may sit between an answer phrase and its letter.
_FILLER = re.compile(
    r"(?:definitely|clearly|probably|likely|most\s+likely|most\s+probably|certainly"
    r"|obviously|surely|undoubtedly|therefore|thus|hence|so|then|indeed|actually"
    r"|really|in\s+fact|simply|just|the|option|choice|letter|number)\b",
    re.IGNORECASE,
)
# Separators and markdown between an answer phrase and its letter.
_SEPARATORS = re.compile(r"[\s*_:=,\-\u2013\u2014>]*")

# A bare A or I is a word unless one of these follows it.
_TERMINATOR = re.compile(
    r"[ \t]*(?:$|[\r\n.,;:!?)\]}\-\u2013\u2014]|(?:because|since|as|given|due|is|was|are|were)\b)",
    re.IGNORECASE,
)
_WORD_LETTERS = frozenset("AaIi")
# "A or B" and "A/B" hedge between letters; such a statement is no answer.
_HEDGE = re.compile(
    r"\s*(?:or\b|/|and/or\b|,(?=\s*[A-Ja-j]\s*[),]))\s*[(\[*_]*[A-Ja-j](?![A-Za-z0-9])",
    re.IGNORECASE,
)
# Where no phrase marks the answer (a leading letter, a standalone capital),
# "(B) and (C)", "A and B are wrong" and "B, C" list several options too. The
# second letter must itself be a letter: "D, I think" lists nothing.
_LIST_NEXT = re.compile(
    r"\s*(?:(?i:and/or|or|and)\b|/|&|,)\s*[(\[*_]*(?P<letter>[A-J])(?![A-Za-z0-9])"
)


# A negation just before a letter ("not A", "neither A nor B is correct").
_NEGATED = re.compile(
    r"(?:\b(?:not|nor|neither|never|except|than|whether|if|unless)|n't|n\u2019t)"
    r"[\s*_(\[]*(?:(?:option|choice|letter)\s+)?[\s*_(\[]*$",
    re.IGNORECASE,
)

# A letter said to be wrong ("B is not correct", "C is wrong").
_REJECTED = re.compile(
    r"[.:]?\s+(?:is|was|seems)\s+(?:(?:not|definitely|clearly|also|probably)\s+)*"
    r"(?:not\b|incorrect|wrong|false|a\s+distractor|implausible|unlikely)"
    r"|\s+(?:isn't|isn\u2019t|can't|can\u2019t|cannot)\b",
    re.IGNORECASE,
)

# -- tier 1: explicit answers -------------------------------------------------

# "answer", optionally qualified; the letter follows after separators and filler.
_ANSWER = re.compile(r"\banswer\b", re.IGNORECASE)
# When the letter does not follow "answer" directly, a short clause may sit
# between "answer" and its verb ("The answer to this question is C", "The answer,
# I think, is C"). Bounded and kept inside one sentence so it stays cheap and local.
_ANSWER_VERB = re.compile(
    r"[^.!?\n]{0,40}?\b(?:is|was|would\s+be|will\s+be|should\s+be|must\s+be"
    r"|has\s+to\s+be|seems\s+to\s+be|appears\s+to\s+be)\b",
    re.IGNORECASE,
)
# "the correct option is", "my choice:", "Choice: C" ("option A" alone is not an
# answer: explanations say "option A is wrong").
_OPTION_IS = re.compile(
    r"(?:\b(?:correct|right|best|final|my|proper)\s+(?:option|choice|letter)\b"
    r"[\s*_]*(?:is|would\s+be|will\s+be|should\s+be|must\s+be|:|=)"
    r"|\b(?:option|choice|letter)\b[\s*_]*:)",
    re.IGNORECASE,
)
_CHOOSE = re.compile(
    r"\b(?:choose|chose|choosing|pick|picked|picking|select|selected|selecting"
    r"|go(?:ing)?\s+with|went\s+with|opt(?:ing)?\s+for|vote\s+for|settle\s+on"
    r"|(?:I'd|I\u2019d|I\s+would|I'll|I\u2019ll|I\s+will|I)\s+say)\b",
    re.IGNORECASE,
)
_CHOOSE_NEGATED = re.compile(r"(?:\bnot|n't|n\u2019t|\bnever)\s+$", re.IGNORECASE)
_IT_IS = re.compile(
    r"\bit(?:'s|\u2019s|\s+is|\s+must\s+be|\s+should\s+be|\s+has\s+to\s+be"
    r"|\s+would\s+be|\s+will\s+be)\b",
    re.IGNORECASE,
)
# "B is correct", "(B) is the correct answer", "Option B is most likely".
_IS_CORRECT = re.compile(
    rf"{_ALONE_BEFORE}{_RUN_START}(?P<open>{_OPEN})(?P<letter>[A-Za-z]){_ALONE_AFTER}"
    rf"(?P<close>{_CLOSE})[.:]?\s+(?:is|was|would\s+be|must\s+be|should\s+be"
    r"|seems\s+to\s+be)\s+(?:(?:definitely|clearly|probably|certainly|indeed|the)\s+)*"
    r"(?:correct|right|best|true|answer|most\s+(?:likely|appropriate|accurate"
    r"|plausible|correct))\b",
    re.IGNORECASE,
)
_BOXED = re.compile(
    r"\\(?:boxed|fbox)\s*\{\s*(?:\\text(?:bf|rm)?\s*\{\s*)?[(\[]?\s*(?P<letter>[A-Za-z])"
    r"\s*[)\]]?\s*\}"
)

# -- tier 2: bold letters -----------------------------------------------------

_BOLD = re.compile(
    r"(?:\*\*|__)\s*[(\[]?\s*(?P<letter>[A-Za-z])\s*[)\].:]?\s*(?:\*\*|__)"
)

# -- rules 2 and 3: lone and leading letters ----------------------------------

_DECOR = "\\s*_`\"'\u201c\u201d\u2018\u2019$"
_LONE = re.compile(
    # No two adjacent runs of the same characters: a long non-matching response
    # must fail in linear time.
    rf"[{_DECOR}]*(?:(?:option|choice|answer|letter)\b[{_DECOR}:\-\u2013\u2014]*)?"
    rf"(?:[(\[{{][ \t]*)?(?P<letter>[A-Za-z])(?:[ \t]*[)\]}}])?[{_DECOR}.:!)]*",
    re.IGNORECASE,
)
_LEADING = re.compile(
    rf"[{_DECOR}]*(?:(?:option|choice)\s*)?"
    r"(?:\(\s*(?P<p>[A-Za-z])\s*\)|\[\s*(?P<b>[A-Za-z])\s*\]"
    r"|(?P<l>[A-Za-z])(?:\)|\]|[.:](?![A-Za-z0-9])|\s+[-\u2013\u2014]\s))",
    re.IGNORECASE,
)

# -- rule 5: a single standalone capital --------------------------------------

_CANDIDATE = re.compile(
    rf"{_ALONE_BEFORE}{_RUN_START}(?P<open>[(\[*_`\"'$]*)(?P<letter>[A-J]){_ALONE_AFTER}"
    rf"(?P<close>{_CLOSE})"
)


def _as_text(response: Any) -> str:
    """The response as text: ``None`` is empty, bytes are decoded, the rest str()."""
    if response is None:
        return ""
    if isinstance(response, (bytes, bytearray)):
        return bytes(response).decode("utf-8", errors="replace")
    # NFKC folds full-width letters and brackets ("（Ｃ）") into ASCII.
    return unicodedata.normalize("NFKC", str(response))


def _is_letter_use(text: str, m: re.Match[str]) -> bool:
    """Whether a matched token is a letter rather than the word "a" or "I".

    Letters other than A and I always are. A bracketed, quoted or bolded A/I is a
    letter; a bare one only when punctuation, a line end or a causal word follows.
    """
    if m.group("letter") not in _WORD_LETTERS:
        return True
    if m.group("open").strip() or m.group("close").strip():
        return True
    return _TERMINATOR.match(text, m.end("letter")) is not None


def _lists_another(text: str, pos: int) -> bool:
    """Whether another option letter is listed right after ``pos`` ("and C")."""
    m = _LIST_NEXT.match(text, pos)
    if m is None:
        return False
    if m.group("letter") not in _WORD_LETTERS:
        return True
    return _TERMINATOR.match(text, m.end()) is not None


def _token_at(text: str, pos: int, valid: str) -> tuple[int, str] | None:
    """Read the letter an answer phrase ending at ``pos`` points to.

    Skips separators, markdown and filler words, then reads one wrapped or bare
    letter. Returns ``(position, LETTER)`` or ``None`` if what follows is not a
    letter of the range, is "a"/"I" used as a word, or is a hedge.
    """
    n = len(text)
    while True:
        sep = _SEPARATORS.match(text, pos)
        if sep is not None:  # always, the pattern matches the empty string
            pos = sep.end()
        filler = _FILLER.match(text, pos)
        if filler is None or pos >= n:
            break
        pos = filler.end()
    m = _TOKEN.match(text, pos)
    if m is None:
        return None
    letter = m.group("letter").upper()
    if letter not in valid or not _is_letter_use(text, m):
        return None
    if _HEDGE.match(text, m.end()):
        return None
    return m.start("letter"), letter


def _explicit(text: str, valid: str) -> str | None:
    """Rule 1: the last explicit answer, else the last bold letter."""
    found: list[tuple[int, str]] = []

    for m in _ANSWER.finditer(text):
        hit = _token_at(text, m.end(), valid)
        if hit is None:
            verb = _ANSWER_VERB.match(text, m.end())
            if verb is not None:
                hit = _token_at(text, verb.end(), valid)
        if hit is not None:
            found.append(hit)

    for pattern in (_OPTION_IS, _IT_IS):
        for m in pattern.finditer(text):
            hit = _token_at(text, m.end(), valid)
            if hit is not None:
                found.append(hit)

    for m in _CHOOSE.finditer(text):
        # "I wouldn't pick A" is not picking A.
        if _CHOOSE_NEGATED.search(text, max(0, m.start() - 12), m.start()):
            continue
        hit = _token_at(text, m.end(), valid)
        if hit is not None:
            found.append(hit)

    for m in _IS_CORRECT.finditer(text):
        letter = m.group("letter").upper()
        if letter not in valid:
            continue
        if _NEGATED.search(text, max(0, m.start() - 40), m.start()):
            continue
        found.append((m.start("letter"), letter))

    for m in _BOXED.finditer(text):
        letter = m.group("letter").upper()
        if letter in valid:
            found.append((m.start("letter"), letter))

    if found:
        return max(found)[1]

    bold = [
        m.group("letter").upper()
        for m in _BOLD.finditer(text)
        if m.group("letter").upper() in valid
    ]
    return bold[-1] if bold else None


def _lone(text: str, valid: str) -> str | None:
    """Rule 2: the whole text is one letter of the range."""
    m = _LONE.fullmatch(text)
    if m is None:
        return None
    letter = m.group("letter").upper()
    return letter if letter in valid else None


def _leading(text: str, valid: str) -> str | None:
    """Rule 3: the first non-blank line starts with, or is, a letter."""
    first = text.partition("\n")[0].strip()
    if not first:
        return None
    lone = _lone(first, valid)
    if lone is not None:
        return lone
    m = _LEADING.match(first)
    if m is None:
        return None
    letter = (m.group("p") or m.group("b") or m.group("l")).upper()
    if _lists_another(first, m.end()):
        return None
    return letter if letter in valid else None


def _normalise(text: str) -> str:
    """Case-folded with whitespace runs collapsed, for choice-text matching."""
    return " ".join(text.casefold().split())


def _choice_text(text: str, choices: Sequence[Any], n: int) -> str | None:
    """Rule 4: the response quotes the full text of exactly one choice."""
    response = _normalise(text)
    if not response:
        return None
    texts = [_normalise(str(c)) if c is not None else "" for c in choices[:n]]
    # The whole response is one choice (quotes and a final full stop aside).
    bare = response.strip(" *_`\"'\u201c\u201d\u2018\u2019.!")
    exact = [i for i, t in enumerate(texts) if t and t == bare]
    if len(exact) == 1:
        return _LETTERS[exact[0]]

    spans: dict[int, list[tuple[int, int]]] = {}
    for i, t in enumerate(texts):
        if not t:
            continue
        # Whole words only: "1" must not match inside "10", "cat" inside "cats".
        before = r"(?<!\w)" if t[0].isalnum() or t[0] == "_" else ""
        after = r"(?!\w)" if t[-1].isalnum() or t[-1] == "_" else ""
        found = [m.span() for m in re.finditer(before + re.escape(t) + after, response)]
        if found:
            spans[i] = found

    quoted = [i for i in spans if not _always_inside(i, texts, spans)]
    if len(quoted) == 1:
        return _LETTERS[quoted[0]]
    return None


def _always_inside(
    i: int, texts: list[str], spans: dict[int, list[tuple[int, int]]]
) -> bool:
    """Whether every occurrence of choice ``i`` lies inside a longer choice's.

    Only a choice whose text contains choice ``i``'s text can hold it, and each
    choice's occurrences are disjoint and sorted, so one bisection per pair of
    occurrence and container decides: linear-logarithmic, even for a short
    choice such as "1" that occurs thousands of times.
    """
    containers = [
        spans[j]
        for j in spans
        if j != i and len(texts[j]) > len(texts[i]) and texts[i] in texts[j]
    ]
    if not containers:
        return False
    starts = [[s for s, _ in found] for found in containers]
    for start, end in spans[i]:
        held = False
        for found, found_starts in zip(containers, starts):
            k = bisect.bisect_right(found_starts, start) - 1
            if k >= 0 and found[k][1] >= end:
                held = True
                break
        if not held:
            return False
    return True


def _single_candidate(text: str, valid: str) -> str | None:
    """Rule 5: exactly one distinct capital letter of the range stands alone."""
    letters: set[str] = set()
    for m in _CANDIDATE.finditer(text):
        letter = m.group("letter")
        # A list or hedge ("A and B", "A or B") chooses nothing.
        if _lists_another(text, m.end()):
            return None
        if letter in letters or letter not in valid or not _is_letter_use(text, m):
            continue
        if _NEGATED.search(text, max(0, m.start() - 40), m.start()):
            continue
        if _REJECTED.match(text, m.end()):
            continue
        letters.add(letter)
        if len(letters) > 1:
            return None
    return letters.pop() if letters else None


def extract_choice(
    response: Any,
    n_choices: int = MAX_CHOICES,
    choices: Sequence[Any] | None = None,
) -> str | None:
    """Extract the option letter a free-text response chose.

    The rules and their order are in this module's docstring: an explicit answer
    (the last one wins), a lone letter, a leading letter, the text of one choice,
    and a single standalone capital. "I" and "a" used as words are never letters.

    >>> extract_choice("The answer is definitely C.", n_choices=4)
    'C'
    >>> extract_choice("I choose option D", n_choices=4)
    'D'
    >>> extract_choice("The answer is E", n_choices=4) is None
    True

    :param response: the model's response. ``None`` is empty; bytes are decoded
        as UTF-8; anything else is converted with :func:`str`.
    :param n_choices: how many options the question has (1 to 10): letters from A
        up to the ``n_choices``-th are recognised, others are ignored.
    :param choices: the option texts, in letter order. When given, the letters are
        further limited to ``len(choices)`` (so the default ``n_choices`` need not
        be repeated), and a response that quotes one choice's text picks it.
        An empty sequence counts as not given.
    :return: the chosen letter in upper case, or ``None`` when the response
        chooses nothing recognisable.
    :raises TypeError: if ``n_choices`` is not an int.
    :raises ValueError: if ``n_choices`` is not between 1 and 10.
    """
    if isinstance(n_choices, bool) or not isinstance(n_choices, int):
        raise TypeError(
            f"n_choices must be an int from 1 to {MAX_CHOICES}, got {n_choices!r}."
        )
    if not 1 <= n_choices <= MAX_CHOICES:
        raise ValueError(f"n_choices must be from 1 to {MAX_CHOICES}, got {n_choices}.")
    n = n_choices
    if choices:
        n = min(n, len(choices))
    valid = _LETTERS[:n]

    text = _as_text(response).strip()
    if not text:
        return None
    letter = _explicit(text, valid) or _lone(text, valid) or _leading(text, valid)
    if letter is None and choices:
        letter = _choice_text(text, choices, n)
    if letter is None:
        letter = _single_candidate(text, valid)
    return letter


class MultipleChoiceAccuracy:
    """1.0 when the letter extracted from the response is the correct letter.

    Reads ``original["correct_letter"]``, ``original["choices"]`` (optional) and
    ``processed["response"]``; returns ``{"mc_accuracy": 1.0 | 0.0}``.

    - no ``correct_letter`` (absent, ``None`` or blank): ``{}``, the example cannot
      be judged (upstream scored it 0.0);
    - ``choices``, a list of option texts, limits the letters to its length (at
      most A-J) and lets a response that quotes one choice's text count; without
      it the letters are A-J, whatever the prompt lists;
    - the response goes through :func:`extract_choice`; one that chooses nothing
      (empty, missing, unparseable) is a wrong answer, 0.0.

    A ``correct_letter`` that is not one letter from A to J or lies beyond the
    number of choices raises :class:`ValueError`, and ``choices`` that is not a
    list (or tuple) raises :class:`TypeError`: that is bad data, so the run
    reports it as an error of that example rather than quietly scoring it.

    >>> MultipleChoiceAccuracy().score({"correct_letter": "B"}, {"response": "The answer is B."})
    {'mc_accuracy': 1.0}
    """

    name = "multiple_choice"

    def score(
        self, original: dict[str, Any], processed: dict[str, Any]
    ) -> dict[str, float]:
        """Score one (original, processed) pair.

        :param original: the example; ``"correct_letter"`` is the gold letter and
            ``"choices"`` (optional) the list of option texts.
        :param processed: what the System returned; its ``"response"`` is judged.
        :return: ``{"mc_accuracy": 1.0}`` or ``{"mc_accuracy": 0.0}``, or ``{}``
            when the example has no correct letter.
        :raises ValueError: if the example's ``correct_letter`` is not a letter
            of its choices.
        :raises TypeError: if the example's ``choices`` is not a list.
        """
        return self.score_details(original, processed)[0]

    def score_details(
        self, original: dict[str, Any], processed: dict[str, Any]
    ) -> tuple[dict[str, float], dict[str, Any]]:
        """Like :meth:`score`, also returning why (empty when right): ``given``
        (the letter read from the response, or ``"none recognised"``),
        ``expected`` and ``choices`` (letter to text, when the example has them).

        :param original: the example; ``"correct_letter"`` is the gold letter and
            ``"choices"`` (optional) the list of option texts.
        :param processed: what the System returned; its ``"response"`` is judged.
        :return: the scores (as :meth:`score`) and the details; ``({}, {})``
            when the example has no correct letter.
        :raises ValueError: if the example's ``correct_letter`` is not a letter
            of its choices.
        :raises TypeError: if the example's ``choices`` is not a list.
        """
        raw_correct = original.get("correct_letter")
        if raw_correct is None or not str(raw_correct).strip():
            return {}, {}
        correct = str(raw_correct).strip().upper()
        if len(correct) != 1 or correct not in _LETTERS:
            raise ValueError(
                f"correct_letter must be one letter from A to J, got {raw_correct!r}."
            )

        raw_choices = original.get("choices")
        choices: Sequence[Any] | None = None
        if raw_choices is not None:
            if not isinstance(raw_choices, (list, tuple)):
                raise TypeError(
                    "choices must be a list of option texts, got "
                    f"{type(raw_choices).__name__}."
                )
            choices = raw_choices or None
        n = min(len(choices), MAX_CHOICES) if choices else MAX_CHOICES
        if _LETTERS.index(correct) >= n:
            raise ValueError(
                f"correct_letter {correct!r} is beyond the example's {n} choices."
            )

        chosen = extract_choice(processed.get("response"), n_choices=n, choices=choices)
        if chosen == correct:
            return {"mc_accuracy": 1.0}, {}
        details: dict[str, Any] = {
            "reason": (f"chose {chosen}, the answer is {correct}" if chosen else
                       "no choice recognised in the response, the answer is "
                       + correct),
            "given": chosen or "none recognised",
            "expected": correct,
        }
        if choices:
            details["choices"] = {
                _LETTERS[i]: str(text) for i, text in enumerate(choices[:n])
            }
        return {"mc_accuracy": 0.0}, details
