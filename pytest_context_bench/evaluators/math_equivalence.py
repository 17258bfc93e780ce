"""MathEquivalence: is the final answer of a response the gold answer, mathematically?

The pipeline, for the gold and the response alike:

1. **Extraction** (:func:`extract_final_answer`): the final answer of a free text.
2. **Normalisation** (:func:`normalize_math_answer`): LaTeX and typography to one
   canonical string.
3. **Comparison**: numbers, fractions, percentages, tuples, intervals and sets in pure
   Python; anything else symbolically through SymPy when it is installed (the
   ``[math]`` extra), in a worker subprocess bounded by a timeout.

This module imports only the standard library: SymPy is imported by the worker
process, never by the process that scores.
"""

from __future__ import annotations

import atexit
import functools
import importlib
import importlib.util
import json
import math
import os
import queue
import re
import subprocess
import sys
import threading
from dataclasses import dataclass
from fractions import Fraction
from typing import IO, Any

__all__ = [
    "ABS_TOL",
    "REL_TOL",
    "MathEquivalence",
    "extract_final_answer",
    "normalize_math_answer",
]

# ---------------------------------------------------------------------------------
# Tolerances and limits
# ---------------------------------------------------------------------------------

#: Two numbers of which at least one was written with a decimal point (or is a float)
#: are equal when ``|a - b| <= max(REL_TOL * max(|a|, |b|), ABS_TOL)``. The test is
#: done in exact rational arithmetic, so it is symmetric and has no rounding edge.
REL_TOL = Fraction(1, 10**6)
#: The absolute floor near zero (``1e-13`` equals ``0``, ``1e-9`` does not).
ABS_TOL = Fraction(1, 10**12)

# Longer candidates are compared as strings only: a real final answer is never this
# long, and it keeps the LaTeX converter and the parsers cheap on 1 MB responses.
_MAX_CANDIDATE = 1000
# A whole response no longer than this may itself be the answer ("\frac{1}{2}").
_MAX_WHOLE = 300
# Nesting deeper than this is not a math answer; it also keeps recursion bounded.
_MAX_DEPTH = 60
# An exact power whose result would need more bits than this is not evaluated.
_MAX_POWER_BITS = 20_000
# n! is evaluated up to this n (1000! has 2,568 digits).
_MAX_FACTORIAL = 1000
# Strings handed to SymPy are at most this long.
_MAX_SYMPY_CHARS = 300
# Starting the worker (importing SymPy) is bounded separately from a comparison.
_STARTUP_TIMEOUT = 60.0

# ---------------------------------------------------------------------------------
# Extraction
# ---------------------------------------------------------------------------------

_UNICODE = str.maketrans(
    {
        "\u2212": "-",  # minus sign
        "\u2012": "-",  # figure dash
        "\u2013": "-",  # en dash, often typed for a minus
        "\ufe63": "-",
        "\uff0d": "-",
        "\u00d7": "\\times ",
        "\u22c5": "\\cdot ",
        "\u00b7": "\\cdot ",
        "\u00f7": "\\div ",
        "\u221e": "\\infty ",
        "\u03c0": "\\pi ",
        "\u221a": "\\sqrt",
        "\u00b0": "",  # degree sign
        "\u00a0": " ",
        "\u2009": " ",
        "\u202f": " ",
    }
)

_ANSWER_RE = re.compile(
    r"\banswer\b\s*(?:is|was|would\s+be|should\s+be|will\s+be|=|:)\s*:?",
    re.IGNORECASE,
)
# A number in prose: thousands groups, decimals, a simple a/b, a percent sign; or a
# \frac / \sqrt written inline. The look-behind keeps "x2" and "3.5.1" pieces out.
_NUM_RE = re.compile(
    r"-?\\[dtc]?frac(?:\{[^{}]{0,40}\}\{[^{}]{0,40}\}|\d\d)"
    r"|(?<![\d.])-?\d{0,12}\\sqrt\{[^{}]{0,40}\}"
    r"|(?<![\w.])-?(?:\d{1,3}(?:,\d{3})+(?!\d)|\d+)(?:\.\d+)?(?:/\d+(?![\d.]))?%?"
    r"|(?<![\w.])-?\.\d+%?"
)
_MATH_SPAN_RE = re.compile(
    r"\$\$(.+?)\$\$|\$([^$]+?)\$|\\\((.+?)\\\)|\\\[(.+?)\\\]", re.DOTALL
)
_LATEX_CMD_RE = re.compile(r"\\[A-Za-z]+")
_TEXT_GROUP_RE = re.compile(r"\\(?:text|textbf|textit|textrm|mbox|mathrm)\s*\{[^{}]*\}")
_WORD_RE = re.compile(r"[A-Za-z]+")
_KNOWN_WORDS = frozenset(
    {
        "sqrt", "sin", "cos", "tan", "cot", "sec", "csc", "log", "ln", "exp", "pi",
        "inf", "infty", "oo", "arcsin", "arccos", "arctan", "asin", "acos", "atan",
    }
)  # fmt: skip


def _closing_brace(text: str, start: int) -> int:
    """Index of the ``}`` that closes the ``{`` at ``start``, or -1."""
    depth = 0
    for i in range(start, len(text)):
        c = text[i]
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                return i
    return -1


def _last_boxed(text: str) -> str | None:
    """Content of the last ``\\boxed{...}`` or ``\\fbox{...}`` (nested braces kept)."""
    start = max(text.rfind("\\boxed"), text.rfind("\\fbox"))
    if start < 0:
        return None
    i = start + (6 if text.startswith("\\boxed", start) else 5)
    while i < len(text) and text[i] == " ":
        i += 1
    if i < len(text) and text[i] == "{":
        end = _closing_brace(text, i)
        # An unbalanced box (a truncated response) takes the rest of the text.
        return text[i + 1 : end] if end >= 0 else text[i + 1 : i + 1 + _MAX_CANDIDATE]
    # "\boxed 5": the LaTeX short form takes one token.
    m = re.match(r"[^\s$.,]+", text[i : i + 100])
    return m.group() if m else None


def _is_wordy(text: str) -> bool:
    """Whether ``text`` still reads as prose rather than as a math answer.

    LaTeX commands and ``\\text{}`` groups (units) do not count; a word of three or
    more letters that is not a function name does, and so does a free-standing
    two-letter word ("is", "or"), while algebra such as ``2xy`` does not.
    """
    stripped = _LATEX_CMD_RE.sub(" ", _TEXT_GROUP_RE.sub(" ", text))
    for m in _WORD_RE.finditer(stripped):
        word = m.group()
        if word.lower() in _KNOWN_WORDS:
            continue
        if len(word) >= 3:
            return True
        if len(word) == 2:
            before = stripped[m.start() - 1] if m.start() else " "
            after = stripped[m.end()] if m.end() < len(stripped) else " "
            if before.isspace() and after in " \t\n.,:;!?":
                return True
    return False


_LEADING_WORDS_RE = re.compile(r"(?:[A-Za-z]{2,}[:,]?\s+)+")
_TRAILING_WORDS_RE = re.compile(r"(?:\s+[A-Za-z]{2,}[.!]?)+\s*$")


def _trim_words(text: str) -> str:
    """Drop filler words before and unit words after the answer.

    ``"approximately 42"`` and ``"18 dollars"`` become ``"42"`` and ``"18"``; a text
    that is nothing but words is returned unchanged.
    """
    s = text.strip()
    m = _LEADING_WORDS_RE.match(s)
    if m and m.end() < len(s):
        words = m.group().replace(":", " ").replace(",", " ").split()
        if not any(w.lower() in _KNOWN_WORDS for w in words):
            s = s[m.end() :]
    m = _TRAILING_WORDS_RE.search(s)
    if m and m.start() > 0:
        words = m.group().replace(".", " ").replace("!", " ").split()
        if not any(w.lower() in _KNOWN_WORDS for w in words):
            s = s[: m.start()]
    return s.strip()


def _delimited(text: str) -> str | None:
    """The content of a math span that ``text`` starts with (``$..$``, ``\\(..\\)``)."""
    for open_, close in (("$$", "$$"), ("$", "$"), ("\\(", "\\)"), ("\\[", "\\]")):
        if text.startswith(open_):
            end = text.find(close, len(open_))
            return text[len(open_) : end] if end >= 0 else text[len(open_) :]
    return None


def _answer_span(text: str) -> str | None:
    """The answer in the text that follows "the answer is"."""
    s = text[:_MAX_CANDIDATE].lstrip(" \t*:")
    math = _delimited(s)
    if math is not None:
        return math.strip() or None
    s = s.split("\n", 1)[0]
    # A sentence ends at a full stop followed by a space (not a decimal point), at a
    # semicolon, or at a comma followed by a word ("42, because ...").
    cut = re.search(r"\.(?=\s|$)|;|,\s+(?=[A-Za-z]{2})|\*\*", s)
    if cut:
        s = s[: cut.start()]
    s = s.strip()
    if not s:
        return None
    trimmed = _trim_words(s)
    if trimmed and not _is_wordy(trimmed):
        return trimmed
    first = _NUM_RE.search(s)
    return first.group() if first else s


def _last_number(text: str) -> re.Match[str] | None:
    """The last number of ``text``, scanning back from its end in growing windows."""
    window = 4096
    while True:
        start = max(0, len(text) - window)
        last = None
        for last in _NUM_RE.finditer(text, start):
            pass
        # A match at the very edge of the window may be a cut number: look further.
        if last is not None and (start == 0 or last.start() - start > 64):
            return last
        if start == 0:
            return None
        window *= 4


def _last_math_span(text: str, number: re.Match[str]) -> str | None:
    """The last inline math span, when it holds ``number`` and is not prose."""
    start = max(0, number.start() - 400)
    best = None
    for m in _MATH_SPAN_RE.finditer(text, start, min(len(text), number.end() + 400)):
        if m.start() <= number.start() and number.end() <= m.end():
            best = m
    if best is None:
        return None
    content = next(g for g in best.groups() if g is not None).strip()
    if not content or len(content) > _MAX_WHOLE or _is_wordy(content):
        return None
    return content


def extract_final_answer(text: str) -> str:
    """The final answer of a free-text solution, as written (not yet normalised).

    Tried in this order, the first that applies wins:

    1. the content of the **last** ``\\boxed{...}`` or ``\\fbox{...}`` (nested braces
       are kept; an unclosed box takes the rest of the text);
    2. what follows the last ``####`` on its line (the GSM8K convention);
    3. what follows the last "answer is" / "answer:" (also "final answer is", "the
       answer would be"): a ``$...$`` span right after it, else the rest of the
       sentence, with filler and unit words trimmed ("approximately 42 apples" gives
       ``42``), else the first number of that sentence;
    4. the whole text, when it is short (at most 300 characters) and reads as math
       rather than prose (``"\\frac{1}{2}"``, ``"(1, 2]"``, ``"18 dollars"``);
    5. the last number of the text (thousands separators, decimals, ``a/b``, ``%``,
       an inline ``\\frac`` or ``\\sqrt``), or the inline math span that holds it;
    6. else the stripped text itself (a word answer such as "Evelyn").

    :param text: the solution or response; Unicode minus signs are read as ``-``.
    :return: the extracted answer, possibly empty.

    >>> extract_final_answer(r"So $x = 3$, and the answer is $\\boxed{42}$.")
    '42'
    >>> extract_final_answer("She has 3 + 4 = 7 apples.\\n#### 7")
    '7'
    >>> extract_final_answer("The answer is 1,000 dollars.")
    '1,000'
    """
    # An escaped dollar is a currency mark, never a math delimiter: drop it first.
    text = text.translate(_UNICODE).replace("\\$", "")
    boxed = _last_boxed(text)
    if boxed is not None:
        return boxed.strip()
    hashes = text.rfind("####")
    if hashes >= 0:
        end = text.find("\n", hashes)
        line = text[hashes + 4 : end if end >= 0 else None].strip()
        if line:
            span = _answer_span(line)
            if span:
                return span
    last_answer = None
    # The marker is searched in a bounded tail first: the final answer is at the end,
    # and a 1 MB response must not cost a full case-insensitive scan per call.
    for last_answer in _ANSWER_RE.finditer(text, max(0, len(text) - 20_000)):
        pass
    if last_answer is None and len(text) > 20_000:
        for last_answer in _ANSWER_RE.finditer(text):
            pass
    if last_answer is not None:
        span = _answer_span(text[last_answer.end() :])
        if span:
            return span
    whole = text.strip()
    if len(whole) <= _MAX_WHOLE:
        trimmed = _trim_words(whole)
        if trimmed and not _is_wordy(trimmed):
            return _delimited(trimmed) or trimmed
    number = _last_number(text)
    if number is not None:
        return _last_math_span(text, number) or number.group()
    return whole[:_MAX_CANDIDATE]


# ---------------------------------------------------------------------------------
# Normalisation: LaTeX to one canonical string
# ---------------------------------------------------------------------------------

# Markers around \text{} content, so units can be told from word answers afterwards.
_TEXT_OPEN, _TEXT_CLOSE = "\x01", "\x02"

_FRAC_CMDS = frozenset({"frac", "dfrac", "tfrac", "cfrac"})
# \text-like groups: a unit after a number ("5 \text{ cm}"), or the answer itself.
_TEXT_CMDS = frozenset(
    {"text", "textbf", "textit", "textrm", "textnormal", "mbox", "mathrm"}
)
# Font and wrapper commands whose argument is simply kept.
_UNWRAP_CMDS = frozenset(
    {
        "mathbf",
        "mathit",
        "mathsf",
        "boldsymbol",
        "bm",
        "operatorname",
        "boxed",
        "fbox",
        "mathbb",
        "mathcal",
        "hbox",
        "emph",
    }
)
_SYMBOLS: dict[str, str] = {
    "cdot": "*",
    "times": "*",
    "ast": "*",
    "div": "/",
    "pi": "pi",
    "infty": "oo",
    "infin": "oo",
    "circ": "",
    "degree": "",
    "degrees": "",
    "left": "",
    "right": "",
    "big": "",
    "Big": "",
    "bigl": "",
    "bigr": "",
    "Bigl": "",
    "Bigr": "",
    "bigg": "",
    "Bigg": "",
    "middle": "",
    "displaystyle": "",
    "textstyle": "",
    "limits": "",
    "nolimits": "",
    "quad": " ",
    "qquad": " ",
    "hspace": "",
    "vspace": "",
    "phantom": "",
    "sin": "sin",
    "cos": "cos",
    "tan": "tan",
    "cot": "cot",
    "sec": "sec",
    "csc": "csc",
    "arcsin": "asin",
    "arccos": "acos",
    "arctan": "atan",
    "log": "log",
    "ln": "log",
    "exp": "exp",
    "le": "<=",
    "leq": "<=",
    "ge": ">=",
    "geq": ">=",
    "ne": "!=",
    "neq": "!=",
    "lt": "<",
    "gt": ">",
    "approx": "=",
    "in": "\u2208",
    "cup": "\u222a",
    "dots": "...",
    "ldots": "...",
    "cdots": "...",
}
# Functions, which take the next token as their argument when it has no parentheses.
_FUNCTIONS = frozenset(
    {
        "sin",
        "cos",
        "tan",
        "cot",
        "sec",
        "csc",
        "arcsin",
        "arccos",
        "arctan",
        "log",
        "ln",
        "exp",
    }
)
# Commands whose brace argument is dropped with them (\hspace{1em}).
_DROP_ARG_CMDS = frozenset({"hspace", "vspace", "phantom"})
_ESCAPES: dict[str, str] = {
    ",": "",
    ";": "",
    ":": "",
    "!": "",
    " ": " ",
    ">": "",
    "{": "{",
    "}": "}",
    "%": "%",
    "$": "",
    "#": "#",
    "_": "_",
    "&": "",
    "\\": " ",
    "|": "|",
}


class _Unparseable(Exception):
    """The LaTeX is too deeply nested to convert; it is compared as a string."""


class _Converter:
    """A small recursive-descent LaTeX-to-text converter for answers.

    Only what answers use is understood; an unknown command is kept as ``\\name`` so
    that it still takes part in string comparison.
    """

    def __init__(self, text: str) -> None:
        self.s = text
        self.i = 0
        self.depth = 0

    def convert(self) -> str:
        return self._sequence(None)

    def _sequence(self, closer: str | None) -> str:
        self.depth += 1
        if self.depth > _MAX_DEPTH:
            raise _Unparseable
        out: list[str] = []
        s = self.s
        while self.i < len(s):
            c = s[self.i]
            if closer is not None and c == closer:
                self.i += 1
                break
            if c == "\\":
                out.append(self._command(out))
            elif c == "{":
                self.i += 1
                out.append(_wrap(self._sequence("}")))
            elif c == "}":
                self.i += 1  # a stray closing brace
            else:
                out.append(c)
                self.i += 1
        self.depth -= 1
        return "".join(out)

    def _argument(self) -> str:
        """One macro argument: a brace group, a command, or a single character."""
        s = self.s
        while self.i < len(s) and s[self.i] == " ":
            self.i += 1
        if self.i >= len(s):
            return ""
        c = s[self.i]
        if c == "{":
            self.i += 1
            return self._sequence("}")
        if c == "\\":
            return self._command([])
        self.i += 1
        return c

    def _optional_argument(self) -> str | None:
        s = self.s
        if self.i < len(s) and s[self.i] == "[":
            end = s.find("]", self.i)
            if end > 0:
                inner = _Converter(s[self.i + 1 : end])
                inner.depth = self.depth
                self.i = end + 1
                return inner.convert()
        return None

    def _command(self, out: list[str]) -> str:
        s = self.s
        self.i += 1  # the backslash
        if self.i >= len(s):
            return ""
        if not s[self.i].isalpha():
            ch = s[self.i]
            self.i += 1
            return _ESCAPES.get(ch, ch)
        m = _WORD_RE.match(s, self.i)
        assert m is not None
        name = m.group()
        self.i = m.end()
        if name in _FRAC_CMDS:
            num, den = self._argument(), self._argument()
            frac = f"({_wrap(num)}/{_wrap(den)})"
            return _mixed_number(out, num, den, frac)
        if name == "sqrt":
            index = self._optional_argument()
            radicand = self._argument()
            if index:
                return f"({_wrap(radicand)}^(1/{_wrap(index)}))"
            return f"sqrt({radicand})"
        if name in _TEXT_CMDS:
            return _TEXT_OPEN + self._argument() + _TEXT_CLOSE
        if name in _UNWRAP_CMDS:
            return self._argument()
        if name in ("left", "right"):
            # \left. and \right. are invisible delimiters.
            if self.i < len(s) and s[self.i] == ".":
                self.i += 1
            return ""
        if name in _DROP_ARG_CMDS:
            self._argument()
            return ""
        if name in _FUNCTIONS:
            return self._function(_SYMBOLS[name])
        if name in _SYMBOLS:
            return _SYMBOLS[name]
        return "\\" + name + " "

    def _function(self, name: str) -> str:
        """``\\sin^2 x`` to ``sin(x)^2``, ``\\log(x+1)`` to ``log(x+1)``."""
        s = self.s
        power = None
        if self.i < len(s) and s[self.i] == "^":
            self.i += 1
            power = self._argument()
        while self.i < len(s) and s[self.i] == " ":
            self.i += 1
        arg: str | None = None
        if self.i < len(s):
            c = s[self.i]
            if c == "(":
                end = _matching_paren(s, self.i)
                if end > 0:
                    inner = _Converter(s[self.i + 1 : end])
                    inner.depth = self.depth
                    arg = inner.convert()
                    self.i = end + 1
            elif c in "{\\":
                arg = self._argument()
            else:
                m = re.compile(r"[A-Za-z]|\d+(?:\.\d+)?").match(s, self.i)
                if m:
                    arg = m.group()
                    self.i = m.end()
        text = name if arg is None else f"{name}({arg})"
        return text + (f"^{_wrap(power)}" if power else "")


def _matching_paren(text: str, start: int) -> int:
    """Index of the ``)`` that closes the ``(`` at ``start``, or -1."""
    depth = 0
    for i in range(start, len(text)):
        if text[i] == "(":
            depth += 1
        elif text[i] == ")":
            depth -= 1
            if depth == 0:
                return i
    return -1


def _wrap(text: str) -> str:
    """Parenthesise ``text`` unless it is a single token."""
    return (
        text
        if re.fullmatch(r"[A-Za-z0-9.]+|\(.*\)", text) and _balanced(text)
        else f"({text})"
    )


def _balanced(text: str) -> bool:
    """Whether the outer parentheses of ``text`` (if any) enclose all of it."""
    if not text.startswith("("):
        return True
    depth = 0
    for i, c in enumerate(text):
        if c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0:
                return i == len(text) - 1
    return False


def _mixed_number(out: list[str], num: str, den: str, frac: str) -> str:
    """``2\\frac{1}{2}`` is the mixed number 2½, not 2 times ½ (integer parts only)."""
    if not (num.isdigit() and den.isdigit()):
        return frac
    tail = "".join(out)
    # Only an integer that starts a value ("2\frac12", "-2\frac12", "(1, 2\frac12)"):
    # in "3-2\frac{1}{2}" the 2 multiplies.
    m = re.search(r"(?:^|[(\[{,=])\s*[-+]?\s*(\d+)\s*$", tail)
    if not m:
        return frac
    # Take the integer part back out of the output and emit the sum in its place.
    whole = m.group(1)
    out[:] = [tail[: m.start(1)]]
    return f"({whole}+{frac})"


_SPACING_RE = re.compile(r"\\[,;:!>](?=\d)")
_DEGREE_RE = re.compile(r"\^\s*\{?\s*\\circ\s*\}?|\\circ|\\degrees?")
_UNIT_AFTER_RE = re.compile(
    _TEXT_OPEN + r"[^" + _TEXT_CLOSE + r"]*" + _TEXT_CLOSE + r"(?:\^(?:\d|\([^()]*\)))?"
)
_THOUSANDS_RE = re.compile(r"[-+]?\d{1,3}(?:,\d{3})+(?:\.\d+)?%?")


def _strip_outer_parens(text: str) -> str:
    while text.startswith("(") and text.endswith(")") and _balanced(text):
        inner = text[1:-1]
        if _top_level_split(inner, ",") != [inner]:
            break  # (1,2) is a tuple, not a grouping
        text = inner
    return text


def normalize_math_answer(answer: str) -> str:
    """The canonical form of an extracted answer.

    In order:

    - Unicode minus signs and ``×``, ``·``, ``÷``, ``π``, ``∞`` to ASCII or LaTeX;
    - surrounding ``$``, ``\\(``, ``\\[`` delimiters, ``\\$`` and ``$`` removed;
    - ``^\\circ`` and ``°`` removed;
    - ``{,}`` and ``\\!`` or ``\\,`` inside numbers removed (``1{,}000``,
      ``1,\\!000``);
    - ``\\left``, ``\\right`` and sizing commands removed;
    - ``\\frac``, ``\\dfrac``, ``\\tfrac``, ``\\cfrac`` to ``(a/b)``, and a mixed
      number ``2\\frac{1}{2}`` to ``(2+(1/2))``; ``\\sqrt{x}`` to ``sqrt(x)``;
      ``\\cdot`` and ``\\times`` to ``*``; ``\\pi`` to ``pi``; ``\\infty`` to
      ``oo``; ``\\sin^2 x`` to ``sin(x)^2``;
    - ``\\text{}``-like groups dropped when they follow a value (units, also with
      an exponent: ``\\text{cm}^2``) and unwrapped otherwise (``\\text{Evelyn}``);
    - leading filler and trailing unit words dropped; ``\\%`` to ``%``;
    - all whitespace removed;
    - a lone thousands-separated number (``1,000,000``) loses its commas, while
      ``2,3`` stays a pair;
    - trailing full stops and enclosing grouping parentheses removed.

    :param answer: an answer as :func:`extract_final_answer` returns it.
    :return: the canonical string (case is kept; comparison ignores it).

    >>> normalize_math_answer(r"\\$1{,}000")
    '1000'
    >>> normalize_math_answer(r"\\left( \\dfrac{1}{2}, 3 \\right]")
    '((1/2),3]'
    """
    s = answer.translate(_UNICODE).strip()
    if len(s) > _MAX_CANDIDATE:
        # Not an answer anyone writes; comparing it as a plain string keeps it cheap.
        return re.sub(r"\s+", "", s)
    while True:
        inner = _delimited(s)
        if inner is None:
            break
        s = inner.strip()
    s = s.replace("\\$", "").replace("$", "").replace("{,}", ",")
    s = _SPACING_RE.sub("", s)
    s = _DEGREE_RE.sub("", s)
    try:
        s = _Converter(s).convert()
    except _Unparseable:
        return re.sub(r"\s+", "", s)
    # \text{} groups: units when something else remains, else the answer itself.
    without = _UNIT_AFTER_RE.sub(" ", s)
    if re.search(r"[0-9A-Za-z]", without):
        s = without
    s = s.replace(_TEXT_OPEN, " ").replace(_TEXT_CLOSE, " ")
    s = _trim_words(s)
    # "1,000" is a thousand but "10, 200" (with a space) is a list: decide before
    # the whitespace goes.
    thousands = _THOUSANDS_RE.fullmatch(s.strip().rstrip(".")) is not None
    s = re.sub(r"\s+", "", s)
    s = s.rstrip(".")
    if thousands:
        s = s.replace(",", "")
    s = _strip_outer_parens(s)
    return s.removeprefix("+")


# ---------------------------------------------------------------------------------
# Values: numbers, sequences (tuples, intervals, sets, lists), other text
# ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Num:
    value: Fraction | float  # a float only for infinities
    exact: bool  # written without a decimal point or float: compared exactly
    percent: bool
    # Half a unit of the last digit of a decimal written with 6 or more significant
    # digits (0.166667 is 1/6 correctly rounded); 0 otherwise.
    rounding: Fraction = Fraction(0)


@dataclass(frozen=True)
class _Seq:
    open: str  # "(", "[", "{" ; "" for a bare comma list; "\u222a" for a union
    close: str
    items: tuple[_Value, ...]


@dataclass(frozen=True)
class _Text:
    text: str


_Value = _Num | _Seq | _Text

_OPENERS, _CLOSERS = "([{", ")]}"


def _top_level_split(text: str, sep: str) -> list[str]:
    parts: list[str] = []
    depth = 0
    start = 0
    for i, c in enumerate(text):
        if c in _OPENERS:
            depth += 1
        elif c in _CLOSERS:
            depth -= 1
        elif depth == 0 and text.startswith(sep, i):
            parts.append(text[start:i])
            start = i + len(sep)
    parts.append(text[start:])
    return parts


def _encloses(text: str) -> bool:
    """Whether the bracket opening ``text`` closes at its very end (any kind)."""
    if len(text) < 2 or text[0] not in _OPENERS or text[-1] not in _CLOSERS:
        return False
    depth = 0
    for i, c in enumerate(text):
        if c in _OPENERS:
            depth += 1
        elif c in _CLOSERS:
            depth -= 1
            if depth == 0:
                return i == len(text) - 1
    return False


# The left side of "x = 3", "f(x) = ...", "a_1 = ...", "x \in [1, 2)".
_SIMPLE_LHS_RE = re.compile(r"[A-Za-z](?:_\(?\w+\)?)?(?:\([A-Za-z]\))?")


def _parse_value(text: str, depth: int = 0) -> _Value:
    if depth > 8 or len(text) > _MAX_CANDIDATE:
        return _Text(text)
    for sep in ("=", "\u2208"):
        parts = _top_level_split(text, sep)
        # "x = 3" and "y = 2x+1" mean their right side; an equation such as
        # "x + y = 3" stays whole (its right side alone is not the answer). So does
        # a worked computation, "3*4 = 12", whose left side is arithmetic.
        if (
            len(parts) > 1
            and parts[-1]
            and (_SIMPLE_LHS_RE.fullmatch(parts[0]) or _evaluate(parts[0]) is not None)
        ):
            text = parts[-1]
    union = _top_level_split(text, "\u222a")
    if len(union) > 1:
        return _Seq("\u222a", "", tuple(_parse_value(p, depth + 1) for p in union))
    items = _top_level_split(text, ",")
    if len(items) > 1:
        return _Seq("", "", tuple(_parse_value(p, depth + 1) for p in items))
    if _encloses(text):
        inner_items = _top_level_split(text[1:-1], ",")
        if text[0] == "{" and text[-1] == "}":
            return _Seq(
                "{", "}", tuple(_parse_value(p, depth + 1) for p in inner_items)
            )
        if len(inner_items) > 1:
            return _Seq(
                text[0],
                text[-1],
                tuple(_parse_value(p, depth + 1) for p in inner_items),
            )
    percent = text.endswith("%")
    number = _evaluate(text[:-1] if percent else text)
    if number is not None:
        value, exact = number
        return _Num(value, exact, percent, _rounding(text[:-1] if percent else text))
    return _Text(text)


def _rounding(literal: str) -> Fraction:
    """Half a unit in the last place of a decimal of 6+ significant digits, else 0."""
    m = re.fullmatch(r"[-+]?(\d*)\.(\d+)", literal)
    if not m:
        return Fraction(0)
    significant = (m.group(1) + m.group(2)).lstrip("0")
    if len(significant) < 6:
        return Fraction(0)
    return Fraction(1, 2 * 10 ** len(m.group(2)))


_TOKEN_RE = re.compile(
    r"\d+\.?\d*(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?|oo|inf|\*\*|[-+*/^()!]"
)


class _Arithmetic:
    """Evaluates ``+ - * / ^`` and parentheses over numbers, exactly when it can.

    Returns ``(value, exact)``; ``exact`` is False once a decimal point or a float
    (an irrational power, infinity) takes part. Anything else is not a number.
    """

    def __init__(self, tokens: list[str]) -> None:
        self.t = tokens
        self.i = 0
        self.depth = 0

    def run(self) -> tuple[Fraction | float, bool] | None:
        try:
            result = self._expr()
        except (ValueError, ZeroDivisionError, OverflowError, IndexError):
            return None
        return result if self.i == len(self.t) else None

    def _peek(self) -> str | None:
        return self.t[self.i] if self.i < len(self.t) else None

    def _expr(self) -> tuple[Fraction | float, bool]:
        value, exact = self._term()
        while self._peek() in ("+", "-"):
            op = self.t[self.i]
            self.i += 1
            rhs, rexact = self._term()
            value = value + rhs if op == "+" else value - rhs
            exact = exact and rexact
        return value, exact

    def _term(self) -> tuple[Fraction | float, bool]:
        value, exact = self._unary()
        while self._peek() in ("*", "/", "("):
            op = self.t[self.i]
            if op != "(":  # "2(3)" and "(1)(2)" multiply implicitly
                self.i += 1
            rhs, rexact = self._unary()
            value = value / rhs if op == "/" else value * rhs
            exact = exact and rexact
        return value, exact

    def _unary(self) -> tuple[Fraction | float, bool]:
        if self._peek() in ("+", "-"):
            op = self.t[self.i]
            self.i += 1
            value, exact = self._unary()
            return (-value if op == "-" else value), exact
        return self._power()

    def _power(self) -> tuple[Fraction | float, bool]:
        base, exact = self._atom()
        while self._peek() == "!":
            self.i += 1
            if not (_is_integer(base) and 0 <= base <= _MAX_FACTORIAL):
                raise ValueError("factorial of a non-integer or a huge number")
            base = Fraction(math.factorial(int(base)))
        if self._peek() in ("^", "**"):
            self.i += 1
            exp, eexact = self._unary()
            return _power(base, exp), exact and eexact and _is_integer(exp)
        return base, exact

    def _atom(self) -> tuple[Fraction | float, bool]:
        tok = self._peek()
        if tok is None:
            raise ValueError("end of input")
        self.i += 1
        if tok == "(":
            self.depth += 1
            if self.depth > _MAX_DEPTH:
                raise ValueError("too deep")
            value = self._expr()
            if self._peek() != ")":
                raise ValueError("unclosed")
            self.i += 1
            self.depth -= 1
            return value
        if tok in ("oo", "inf"):
            return float("inf"), False
        if tok[0].isdigit() or tok[0] == ".":
            return Fraction(tok), not any(c in tok for c in ".eE")
        raise ValueError(tok)


def _is_integer(value: Fraction | float) -> bool:
    return isinstance(value, Fraction) and value.denominator == 1


def _power(base: Fraction | float, exp: Fraction | float) -> Fraction | float:
    if (
        isinstance(base, Fraction)
        and isinstance(exp, Fraction)
        and exp.denominator == 1
    ):
        bits = max(base.numerator.bit_length(), base.denominator.bit_length())
        if abs(exp.numerator) * bits > _MAX_POWER_BITS:
            raise OverflowError("power too large")
        return base**exp.numerator
    # math.pow raises ValueError for a negative base to a fractional power and
    # OverflowError for a result too large, where ** would give complex or inf.
    return math.pow(float(base), float(exp))


def _evaluate(text: str) -> tuple[Fraction | float, bool] | None:
    if not text or len(text) > 200:
        return None
    tokens = _TOKEN_RE.findall(text)
    if "".join(tokens) != text:
        return None  # something other than numbers and operators
    return _Arithmetic(tokens).run()


# ---------------------------------------------------------------------------------
# Comparison
# ---------------------------------------------------------------------------------


def _close(
    a: Fraction | float, b: Fraction | float, exact: bool, rounding: Fraction
) -> bool:
    if isinstance(a, float) or isinstance(b, float):
        if isinstance(a, float) and isinstance(b, float) and a == b:
            return True  # equal infinities
        if any(isinstance(v, float) and not math.isfinite(v) for v in (a, b)):
            return False
        a, b = Fraction(a), Fraction(b)
    if exact:
        return a == b
    tol = max(REL_TOL * max(abs(a), abs(b)), ABS_TOL, rounding)
    return abs(a - b) <= tol


def _numbers_equal(gold: _Num, pred: _Num) -> bool:
    # A percentage equals its number and its fraction: "10%" is both 10 and 0.1, the
    # way graders read "what percent ..." answers written with or without the sign.
    # Each candidate value travels with its rounding allowance, scaled alike.
    golds = [(gold.value, gold.rounding)]
    preds = [(pred.value, pred.rounding)]
    if gold.percent and not pred.percent:
        golds.append((gold.value / 100, gold.rounding / 100))
    if pred.percent and not gold.percent:
        preds.append((pred.value / 100, pred.rounding / 100))
    exact = gold.exact and pred.exact
    return any(_close(g, p, exact, max(gr, pr)) for g, gr in golds for p, pr in preds)


class _Comparer:
    """Compares parsed values, with SymPy as the last resort for text."""

    def __init__(self, timeout: float) -> None:
        self.timeout = timeout

    def equal(self, gold: _Value, pred: _Value) -> bool:
        if isinstance(gold, _Num) and isinstance(pred, _Num):
            return _numbers_equal(gold, pred)
        if isinstance(gold, _Seq) and isinstance(pred, _Seq):
            return self._sequences_equal(gold, pred)
        if isinstance(gold, _Seq) or isinstance(pred, _Seq):
            return False
        gtext, ptext = _value_text(gold), _value_text(pred)
        if gtext.lower() == ptext.lower():
            return True
        if (
            isinstance(gold, _Num)
            and gold.percent
            or isinstance(pred, _Num)
            and pred.percent
        ):
            return False
        # A correctly rounded decimal ("0.523599" for pi/6) keeps its allowance.
        rounding = max(
            (v.rounding for v in (gold, pred) if isinstance(v, _Num)),
            default=Fraction(0),
        )
        return _symbolic_equal(gtext, ptext, self.timeout, float(rounding))

    def _sequences_equal(self, gold: _Seq, pred: _Seq) -> bool:
        gkind, pkind = gold.open + gold.close, pred.open + pred.close
        unordered = {"{}", "", "\u222a"}
        if (
            gkind in unordered
            and pkind in unordered
            and (gkind == pkind or "\u222a" not in (gkind, pkind))
        ):
            if "{}" in (gkind, pkind):
                # Set semantics: each element has an equal in the other set.
                return all(
                    any(self.equal(g, p) for p in pred.items) for g in gold.items
                ) and all(any(self.equal(g, p) for g in gold.items) for p in pred.items)
            return self._multiset_equal(gold.items, pred.items)
        # Ordered: the same brackets (so open and closed interval ends matter); a bare
        # list "2, 3" also reads as the pair "(2, 3)".
        if gkind != pkind and {gkind, pkind} != {"", "()"}:
            return False
        return len(gold.items) == len(pred.items) and all(
            self.equal(g, p) for g, p in zip(gold.items, pred.items)
        )

    def _multiset_equal(
        self, gold: tuple[_Value, ...], pred: tuple[_Value, ...]
    ) -> bool:
        if len(gold) != len(pred):
            return False
        left = list(pred)
        for g in gold:
            for j, p in enumerate(left):
                if self.equal(g, p):
                    del left[j]
                    break
            else:
                return False
        return True


def _value_text(value: _Value) -> str:
    if isinstance(value, _Text):
        return value.text
    if isinstance(value, _Num):
        v = value.value
        text = (
            str(v)
            if isinstance(v, float)
            else (
                str(v.numerator)
                if v.denominator == 1
                else f"{v.numerator}/{v.denominator}"
            )
        )
        return text + ("%" if value.percent else "")
    return value.open + ",".join(_value_text(i) for i in value.items) + value.close


# ---------------------------------------------------------------------------------
# SymPy, in a worker subprocess with a deadline
# ---------------------------------------------------------------------------------

_SYMPY_NAMES = frozenset(
    {
        "sqrt",
        "sin",
        "cos",
        "tan",
        "cot",
        "sec",
        "csc",
        "asin",
        "acos",
        "atan",
        "log",
        "exp",
        "pi",
        "oo",
    }
)
_SYMPY_CHARS_RE = re.compile(r"[0-9A-Za-z+\-*/^().]+")


def _sympy_text(text: str) -> str | None:
    """``text`` made safe for SymPy's parser, or None when it must not go there.

    SymPy's ``parse_expr`` evaluates Python, so only digits, ``+-*/^().``, known
    function names and single-letter symbols are let through: no quotes, no
    underscores, no attribute access, no builtins.
    """
    if len(text) > _MAX_SYMPY_CHARS or not _SYMPY_CHARS_RE.fullmatch(text):
        return None
    if re.search(r"\.(?!\d)", text):
        return None
    # An exponent of five digits or more is not an answer; SymPy would try to
    # compute it and only the timeout would stop it (a tower such as 9^9^9^9 still
    # needs the timeout).
    if re.search(r"\^\(?[-+]?\d{5,}", text):
        return None
    # Words are not algebra: "no" and "on" would be the same product of symbols.
    # So a bare word, or a run of three or more letters that is not a function
    # name, is left to string comparison; "2xy" still reads as 2*x*y.
    if text.isalpha() and len(text) > 1 and text not in _SYMPY_NAMES:
        return None
    if any(
        len(w) > 2 and w not in _SYMPY_NAMES for w in re.findall(r"[A-Za-z]+", text)
    ):
        return None

    def split(m: re.Match[str]) -> str:
        word = m.group()
        return word if word in _SYMPY_NAMES else "*".join(word)

    return re.sub(r"[A-Za-z]+", split, text)


def _sympy_installed() -> bool:
    """Whether SymPy can be imported here (without importing it)."""
    if "sympy" in sys.modules:
        return sys.modules["sympy"] is not None
    try:
        return importlib.util.find_spec("sympy") is not None
    except (ImportError, ValueError):
        return False


class _WorkerGone(Exception):
    """The worker timed out, crashed or never started."""


class _Worker:
    """One worker subprocess answering comparison requests, one JSON line each."""

    def __init__(self) -> None:
        # The worker loads this very file under a private name, so it imports neither
        # the package (nor whatever the package imports) nor anything from the
        # current directory, which is dropped from sys.path first.
        code = (
            "import sys; sys.path.pop(0); import importlib.util as u; "
            f"s = u.spec_from_file_location('_ctxbench_math_worker', {__file__!r}); "
            "m = u.module_from_spec(s); sys.modules[s.name] = m; "
            "s.loader.exec_module(m); m._worker_main()"
        )
        self.proc = subprocess.Popen(
            [sys.executable, "-c", code],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            encoding="utf-8",
        )
        self.lines: queue.Queue[str | None] = queue.Queue()
        assert self.proc.stdout is not None
        # A reader thread makes the wait for an answer portable (no select on pipes
        # on Windows) and bounded by queue.get's timeout.
        threading.Thread(
            target=self._read, args=(self.proc.stdout,), daemon=True
        ).start()
        self.next_id = 0
        try:
            ready = self._receive(_STARTUP_TIMEOUT)
        except _WorkerGone:
            self.kill()
            raise
        if not ready.get("ready"):
            self.kill()
            raise _WorkerGone("sympy is not importable in the worker")

    def _read(self, stream: IO[str]) -> None:
        try:
            for line in stream:
                self.lines.put(line)
        except (OSError, ValueError):
            pass
        self.lines.put(None)

    def _receive(self, timeout: float) -> dict[str, Any]:
        try:
            line = self.lines.get(timeout=timeout)
        except queue.Empty:
            raise _WorkerGone("timeout") from None
        if line is None:
            raise _WorkerGone("worker exited")
        reply: dict[str, Any] = json.loads(line)
        return reply

    def ask(self, a: str, b: str, timeout: float, abs_tol: float) -> bool:
        self.next_id += 1
        request = {
            "id": self.next_id,
            "a": a,
            "b": b,
            "rel": float(REL_TOL),
            "abs": abs_tol,
        }
        try:
            assert self.proc.stdin is not None
            self.proc.stdin.write(json.dumps(request) + "\n")
            self.proc.stdin.flush()
        except (OSError, ValueError):
            raise _WorkerGone("worker exited") from None
        reply = self._receive(timeout)
        return reply.get("id") == self.next_id and reply.get("equal") is True

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        for stream in (self.proc.stdin, self.proc.stdout):
            try:
                if stream is not None:
                    stream.close()
            except OSError:
                pass


class _WorkerPool:
    """Worker subprocesses shared by every MathEquivalence of this process.

    A comparison that misses its deadline kills its worker (a thread could not be
    stopped, and SymPy would go on burning CPU and memory); the next comparison
    starts a fresh one.
    """

    def __init__(self) -> None:
        self.cond = threading.Condition()
        self.idle: list[_Worker] = []
        self.count = 0
        self.limit = max(1, min(4, os.cpu_count() or 1))
        self.disabled = False
        self.pid = os.getpid()

    def _acquire(self) -> _Worker | None:
        with self.cond:
            if os.getpid() != self.pid:  # a forked child must not share our workers
                self.idle, self.count, self.pid = [], 0, os.getpid()
            while True:
                if self.disabled:
                    return None
                if self.idle:
                    return self.idle.pop()
                if self.count < self.limit:
                    self.count += 1
                    break
                self.cond.wait()
        try:
            return _Worker()
        except (_WorkerGone, OSError):
            with self.cond:
                self.count -= 1
                self.disabled = True  # SymPy cannot run here: stop trying
                self.cond.notify_all()
            return None

    def _release(self, worker: _Worker, alive: bool) -> None:
        with self.cond:
            if alive:
                self.idle.append(worker)
            else:
                self.count -= 1
            self.cond.notify()

    def compare(
        self, a: str, b: str, timeout: float, abs_tol: float = float(ABS_TOL)
    ) -> bool:
        worker = self._acquire()
        if worker is None:
            return False
        try:
            result = worker.ask(a, b, timeout, abs_tol)
        except _WorkerGone:
            worker.kill()
            self._release(worker, alive=False)
            return False
        self._release(worker, alive=True)
        return result

    def shutdown(self) -> None:
        with self.cond:
            workers, self.idle = self.idle, []
            self.count -= len(workers)
        for worker in workers:
            worker.kill()


_POOL = _WorkerPool()
atexit.register(_POOL.shutdown)


@functools.lru_cache(maxsize=4096)
def _symbolic_equal(gold: str, pred: str, timeout: float, rounding: float) -> bool:
    """SymPy equivalence of two canonical strings; False when SymPy cannot say.

    ``rounding`` widens the absolute tolerance of a numeric comparison (see
    :class:`_Num`).
    """
    a, b = _sympy_text(gold), _sympy_text(pred)
    if a is None or b is None or not _sympy_installed():
        return False
    return _POOL.compare(a, b, timeout, max(float(ABS_TOL), rounding))


def _worker_main() -> None:  # pragma: no cover - runs in the worker subprocess
    """The worker loop: one JSON request per line in, one JSON reply per line out."""
    try:
        # import_module keeps mypy from needing SymPy's (absent) type information.
        sympy = importlib.import_module("sympy")
        parser = importlib.import_module("sympy.parsing.sympy_parser")
    except Exception:  # noqa: BLE001 - a broken SymPy install is "no SymPy"
        print(json.dumps({"ready": False}), flush=True)
        return
    parse_expr = parser.parse_expr
    transformations = parser.standard_transformations + (
        parser.implicit_multiplication,
        parser.convert_xor,
    )
    letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
    # Every single letter is a plain symbol (E, I, N, S, O, Q are not SymPy objects).
    local: dict[str, Any] = {c: sympy.Symbol(c) for c in letters}
    local.update(
        sqrt=sympy.sqrt,
        sin=sympy.sin,
        cos=sympy.cos,
        tan=sympy.tan,
        cot=sympy.cot,
        sec=sympy.sec,
        csc=sympy.csc,
        asin=sympy.asin,
        acos=sympy.acos,
        atan=sympy.atan,
        log=sympy.log,
        exp=sympy.exp,
        pi=sympy.pi,
        oo=sympy.oo,
    )

    def parse(text: str) -> Any:
        return parse_expr(text, local_dict=dict(local), transformations=transformations)

    def equal(a: str, b: str, rel: float, abs_: float) -> bool:
        ea, eb = parse(a), parse(b)
        if ea == eb:
            return True
        if not ea.free_symbols and not eb.free_symbols:
            va, vb = complex(ea.evalf(30)), complex(eb.evalf(30))
            return abs(va - vb) <= max(rel * max(abs(va), abs(vb)), abs_)
        diff = ea - eb
        # A cheap numeric probe rejects most non-equivalent pairs before simplify.
        symbols = sorted(diff.free_symbols, key=str)
        points = [sympy.Rational(37 + 19 * k, 29 + 7 * k) for k in range(len(symbols))]
        try:
            probe = complex(diff.subs(dict(zip(symbols, points))).evalf(30))
            if abs(probe) > 1e-9 * max(
                1.0, abs(complex(ea.subs(dict(zip(symbols, points))).evalf(30)))
            ):
                return False
        except (TypeError, ValueError, ZeroDivisionError):
            pass
        simplified = sympy.simplify(diff)
        return bool(simplified == 0 or simplified.is_zero is True)

    print(json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        request = json.loads(line)
        try:
            result = equal(request["a"], request["b"], request["rel"], request["abs"])
        except Exception:  # noqa: BLE001 - SymPy raises all kinds; none is "equal"
            result = False
        print(json.dumps({"id": request["id"], "equal": result}), flush=True)


# ---------------------------------------------------------------------------------
# The evaluator
# ---------------------------------------------------------------------------------


def _as_text(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).decode("utf-8", errors="replace")
    return str(value)


class MathEquivalence:
    """1.0 when the final answer of the response is mathematically the gold answer.

    Reads ``original["answer"]`` (the gold; a string, a number, or a list of
    acceptable answers) and ``processed["response"]``, and returns
    ``{"math_equiv": 1.0}`` or ``{"math_equiv": 0.0}``.

    Both sides go through the same steps:

    1. :func:`extract_final_answer` (so a GSM8K gold carrying its reasoning and
       ``#### 72`` gives ``72``, and "The answer is 42" gives ``42``);
    2. :func:`normalize_math_answer`;
    3. comparison, the first that applies:

       - equal canonical strings, ignoring case;
       - numbers (integers, decimals, fractions, ``+ - * / ^`` and ``n!``
         arithmetic such as ``2\\cdot 3``): numbers written without a decimal
         point compare **exactly** (as :class:`fractions.Fraction`, so
         ``\\frac{1}{3}`` equals ``\\frac{2}{6}`` and 1000000 does not equal
         1000001); otherwise ``|a - b| <= max(1e-6 * max(|a|, |b|), 1e-12)``
         (:data:`REL_TOL`, :data:`ABS_TOL`, computed exactly), and a decimal
         written with 6 or more significant digits also equals any value that
         rounds to it (``0.166667`` is ``\\frac{1}{6}``, ``0.1667`` is not). A
         percentage equals both its number and its fraction (``25%`` is ``25``
         and ``0.25``);
       - tuples ``(a, b)`` and intervals ``[a, b)`` element by element, with the
         same brackets (an open end never equals a closed one); sets ``\\{a, b\\}``,
         unions ``A \\cup B`` and bare lists ``a, b`` in any order; a bare list
         ``2, 3`` also equals the pair ``(2, 3)``;
       - ``x = 3``, ``f(x) = 2x`` and ``x \\in [1, 2)`` are read as their right
         side, and so is a worked computation ``3 \\times 4 = 12``; any other
         equation (``x + y = 3``) stays whole;
       - otherwise symbolic equivalence with SymPy (``x^2+2x+1`` equals
         ``(x+1)^2``; ``\\sqrt{2}/2`` equals ``0.7071068``), when SymPy is
         installed (``pip install pytest-context-bench[math]``). Without SymPy
         such pairs score 0.0 unless their canonical strings are equal.

    The SymPy step runs in a worker subprocess (started once per process, shared,
    at most four) and is bounded by ``timeout`` seconds per comparison: a
    comparison still running then is not equivalent (0.0), and its worker is
    killed, so a pathological input (``9^{9^{9^9}}``) never hangs the run. It
    works from any thread (no signals). Starting the worker, which imports SymPy,
    is not counted in the timeout.

    No gold (no ``"answer"``, ``None``, or an empty list) gives ``{}``: the example
    cannot be judged. A blank gold (``""``, whitespace, or a list of blanks) scores
    0.0 whatever the response, as math-verify does. A missing or ``None`` response
    scores as empty text (0.0); ``bytes`` are decoded as UTF-8; any other
    non-string response is scored as ``str(response)``. Non-string golds are read
    the same way.

    :param timeout: seconds allowed for one symbolic comparison (> 0).

    >>> MathEquivalence().score({"answer": r"\\frac{1}{2}"}, {"response": "0.5"})
    {'math_equiv': 1.0}
    """

    name = "math_equivalence"

    def __init__(self, timeout: float = 5.0) -> None:
        if not timeout > 0:
            raise ValueError(
                f"MathEquivalence: timeout must be > 0 seconds, got {timeout!r}"
            )
        self.timeout = float(timeout)

    def score(
        self, original: dict[str, Any], processed: dict[str, Any]
    ) -> dict[str, float]:
        """Score one (original, processed) pair.

        :param original: the example; its ``"answer"`` is the gold.
        :param processed: what the System returned; its ``"response"`` is judged.
        :return: ``{"math_equiv": 1.0 or 0.0}`` (0.0 for a blank gold), or ``{}``
            when there is no gold.
        """
        return self.score_details(original, processed)[0]

    def score_details(
        self, original: dict[str, Any], processed: dict[str, Any]
    ) -> tuple[dict[str, float], dict[str, Any]]:
        """Like :meth:`score`, also returning why (empty when equivalent):
        ``extracted`` (the response's final answer, normalised) and ``gold`` (the
        gold's, each of them when there are several)."""
        raw = original.get("answer")
        if raw is None or (isinstance(raw, (list, tuple)) and not raw):
            return {}, {}
        golds = (
            [_as_text(g) for g in raw]
            if isinstance(raw, (list, tuple))
            else [_as_text(raw)]
        )
        golds = [g for g in golds if g.strip()]
        if not golds:
            # A gold that is there but blank: no answer equals it (math-verify
            # scores it 0 too); an example cannot pass on a missing answer key.
            return {"math_equiv": 0.0}, {"reason": "the gold answer is blank"}
        response = _as_text(processed.get("response"))
        if not response.strip():
            return {"math_equiv": 0.0}, {"reason": "the response is empty"}
        pred = _prepare(response)
        comparer = _Comparer(self.timeout)
        prepared = []
        for gold in golds:
            prepared.append(_prepare(gold))
            if _equivalent(prepared[-1], pred, comparer):
                return {"math_equiv": 1.0}, {}
        # Imported here: the SymPy worker runs this file on its own, outside the
        # package.
        from ..details import clip

        shown = [p[0] for p in prepared]
        details: dict[str, Any] = {
            "reason": ("no final answer found in the response" if not pred[0] else
                       f"{clip(pred[0], 80)} is not equivalent to "
                       + (clip(shown[0], 80) if len(shown) == 1 else
                          "any gold answer")),
            "extracted": pred[0] or "none",
            "gold": shown[0] if len(shown) == 1 else shown,
        }
        return {"math_equiv": 0.0}, details


@functools.lru_cache(maxsize=2048)
def _prepare_cached(text: str) -> tuple[str, _Value]:
    canonical = normalize_math_answer(extract_final_answer(text))
    return canonical, _parse_value(canonical)


def _prepare(text: str) -> tuple[str, _Value]:
    # Long texts (whole responses) are not worth caching; golds repeat and are short.
    if len(text) <= 2000:
        return _prepare_cached(text)
    canonical = normalize_math_answer(extract_final_answer(text))
    return canonical, _parse_value(canonical)


def _equivalent(
    gold: tuple[str, _Value], pred: tuple[str, _Value], comparer: _Comparer
) -> bool:
    if not pred[0]:
        return False
    if gold[0].lower() == pred[0].lower():
        return True
    return comparer.equal(gold[1], pred[1])
