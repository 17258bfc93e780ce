"""Word, sentence and language helpers for the IFEval checkers, without NLTK.

Google's checker counts words with ``nltk.tokenize.RegexpTokenizer(r"\\w+")``,
sentences with NLTK's pre-trained English Punkt model, and capital words with
``nltk.word_tokenize``. Punkt's model is a data file that has to be downloaded, so
we do not depend on NLTK at all:

- :func:`count_words` is exactly the official count (``\\w+`` runs).
- :func:`split_sentences` runs the Punkt *decision procedure* (candidate ends,
  first-pass token classes, the orthographic/initial/number rules of the second
  pass, boundary realignment) with a small hand-written English model in place of
  the trained one: the abbreviations in :data:`ABBREVIATIONS` and the usual
  sentence-starting words in :data:`SENTENCE_STARTERS`. On ordinary prose, lists and
  headings it splits where Punkt does. It can differ where the trained model knows
  something ours does not: an abbreviation missing from (or added to) our list
  (we treat ``e.g.`` and ``i.e.`` as abbreviations), a learned collocation such as a
  date, or an abbreviation / initial followed by a capitalised word that Punkt has
  seen capitalised mid-sentence (a name) versus one it has not. Curly quotes and
  guillemets count as closing punctuation, as in current NLTK (3.9 and later).
- :func:`word_tokens` follows the Treebank rules ``nltk.word_tokenize`` applies
  inside each sentence, as far as they change which tokens are all upper case:
  punctuation is split off, contractions are split (``DON'T`` is ``DO`` + ``N'T``,
  ``I'm`` is ``I`` + ``'m``, ``CANNOT`` is ``CAN`` + ``NOT``), hyphenated words and
  ``U.S.`` stay whole. The punctuation tokens themselves are dropped, since none of
  them is upper case.
- :func:`detect_language` uses ``langdetect`` when it is installed (the ``[ifeval]``
  extra), with a fixed seed so a result never changes between runs (the official
  code leaves langdetect unseeded, so its answer on ambiguous text can change).
"""

from __future__ import annotations

import functools
import re
import threading
from typing import Any

__all__ = [
    "ABBREVIATIONS",
    "SENTENCE_STARTERS",
    "LanguageDetectionUnavailableError",
    "count_capital_words",
    "count_sentences",
    "count_words",
    "detect_language",
    "langdetect_available",
    "require_langdetect",
    "split_sentences",
    "word_tokens",
]

# --------------------------------------------------------------------------- words

_WORD_RE = re.compile(r"\w+")


def count_words(text: str) -> int:
    """The official word count: the number of ``\\w+`` runs (Unicode-aware).

    :param text: any text.
    """
    return sum(1 for _ in _WORD_RE.finditer(text))


# ----------------------------------------------------------------------- sentences

#: Lower-cased tokens (without their final period) that are abbreviations: a period
#: after them does not end a sentence unless a usual sentence starter follows.
ABBREVIATIONS: frozenset[str] = frozenset(
    """
    mr mrs ms dr prof sr jr st mt ft vs etc e.g i.e cf al approx dept univ assn inc
    ltd co corp bros messrs jan feb mar apr jun jul aug sep sept oct nov dec a.m
    p.m u.s u.k u.n u.s.a e.u gen col lt sgt capt cmdr adm rep sen gov rev hon ave
    blvd rd vol pp fig figs
    """.split()  # noqa: SIM905 - a word list reads better as text
)

# Words that occur lower case inside sentences and so, capitalised after a period,
# start a new sentence (Punkt's orthographic evidence and its frequent sentence
# starters, approximated). "I" is only a frequent starter: it is always capitalised,
# so Punkt has no orthographic evidence for it.
_COMMON_STARTERS: frozenset[str] = frozenset(
    """
    the a an this that these those it its he she we they you there here in on at
    for but and or so if when while as after before however then my our your his
    her their what which who whom whose how why where one some many most all each
    both no not to with by from of also finally first second third next overall
    additionally furthermore moreover therefore thus hence although though because
    since once yes now today let please every another other such even just only
    still yet instead meanwhile indeed perhaps maybe do does did is are was were be
    have has had can could will would should may might must well oh again
    consequently similarly otherwise besides lastly later soon sometimes often
    usually above below during without within unlike like imagine remember note
    consider think make take keep try use
    """.split()  # noqa: SIM905 - a word list reads better as text
)

#: Lower-cased words that, capitalised, begin a new sentence after an abbreviation
#: or an ellipsis.
SENTENCE_STARTERS: frozenset[str] = _COMMON_STARTERS | {"i"}

_SENT_END_CHARS = ".?!"
# Characters that cannot be part of a word for Punkt; one of them right after a
# sentence-ending character makes a candidate boundary ("end.)", 'end."').
_NON_WORD = r"""[)";}\]*:@'({\[\u2018\u2019\u201c\u201d\xab\xbb?!]"""
_MULTI_CHAR = r"(?:-{2,}|\.{2,}|(?:\.\s){2,}\.)"
_WORD_START = r"""[^("`{\[:;&#*@)}\]\-,]"""

_CANDIDATE_RE = re.compile(
    rf"[.?!](?=(?P<after>{_NON_WORD}|\s+(?P<next>\S+)))", re.UNICODE
)
# Punkt's segmentation of a line into tokens: multi-character punctuation, a word
# (which keeps a final period, but not a following ')', '"', ',' and so on), or a
# single other character.
_TOKEN_RE = re.compile(
    rf"{_MULTI_CHAR}"
    rf"|(?={_WORD_START})\S+?(?=\s|$|{_NON_WORD}|{_MULTI_CHAR}"
    rf"|,(?=$|\s|{_NON_WORD}|{_MULTI_CHAR}))"
    r"|\S",
    re.UNICODE,
)
_NUMERIC_RE = re.compile(r"^-?[\.,]?\d[\d,\.-]*\.?$")
_INITIAL_RE = re.compile(r"[^\W\d]\.$", re.UNICODE)
_ELLIPSIS_RE = re.compile(r"\.\.+$")
# Closing punctuation at the start of the next sentence belongs to the previous one.
_REALIGN_RE = re.compile(
    r"""["')\]}\u2018\u2019\u201c\u201d\xab\xbb]+?(?:\s+|(?=--)|$)""", re.MULTILINE
)
_NOT_STARTERS = frozenset(";:,.!?")


class _Tok:
    """One Punkt token and its first-pass class."""

    __slots__ = ("abbr", "ellipsis", "sentbreak", "text", "type")

    def __init__(self, text: str) -> None:
        self.text = text
        low = text.lower()
        self.type = "##number##" if _NUMERIC_RE.match(low) else low
        self.sentbreak = False
        self.abbr = False
        self.ellipsis = False
        if text in _SENT_END_CHARS:
            self.sentbreak = True
        elif _ELLIPSIS_RE.match(text):
            self.ellipsis = True
        elif text.endswith(".") and not text.endswith(".."):
            stem = low[:-1]
            if stem in ABBREVIATIONS or stem.split("-")[-1] in ABBREVIATIONS:
                self.abbr = True
            else:
                self.sentbreak = True

    @property
    def type_no_period(self) -> str:
        t = self.type
        return t[:-1] if len(t) > 1 and t.endswith(".") else t

    @property
    def type_no_sentperiod(self) -> str:
        return self.type_no_period if self.sentbreak else self.type


def _starts_sentence(tok: _Tok) -> bool | None:
    """Orthographic evidence that ``tok`` begins a sentence (None: no evidence)."""
    if tok.text in _NOT_STARTERS:
        return False
    first = tok.text[0]
    if first.isupper() and tok.type_no_sentperiod in _COMMON_STARTERS:
        return True
    if first.islower():
        return False
    return None


def _has_inner_break(context: str) -> bool:
    """Whether Punkt's annotation of ``context`` puts a break before its last token."""
    # Tokens are classified lazily, so a huge context ("!!!!...") stops at once.
    prev: _Tok | None = None
    for line in context.split("\n"):
        if not line.strip():
            continue
        for m in _TOKEN_RE.finditer(line):
            tok = _Tok(m.group())
            if prev is not None:
                if prev.text.endswith("."):
                    _second_pass(prev, tok)
                if prev.sentbreak:
                    return True
            prev = tok
    return False


def _second_pass(tok: _Tok, nxt: _Tok) -> None:
    """Revise the class of a period-final ``tok`` from the token after it."""
    initial = _INITIAL_RE.match(tok.text) is not None
    # An abbreviation or ellipsis ends a sentence only before a word that plainly
    # starts one.
    if (
        (tok.abbr or tok.ellipsis)
        and not initial
        and (
            _starts_sentence(nxt) is True
            or (nxt.text[0].isupper() and nxt.type_no_sentperiod in SENTENCE_STARTERS)
        )
    ):
        tok.sentbreak = True
        return
    if initial or tok.type_no_period == "##number##":
        starts = _starts_sentence(nxt)
        if starts is False:
            tok.sentbreak, tok.abbr = False, True
        elif (
            starts is None
            and initial
            and nxt.text[0].isupper()
            and nxt.type_no_sentperiod not in _COMMON_STARTERS
        ):
            # "J. Smith": an initial before a capitalised word never seen in
            # lower case is part of a name.
            tok.sentbreak, tok.abbr = False, True


def _last_whitespace(text: str, lo: int, hi: int, spaces: str) -> int:
    """Index of the last of ``spaces`` in ``text[lo:hi]`` relative to ``lo``, or 0."""
    best = -1
    for ch in spaces:
        # Each later character is only looked for after the best so far, which
        # keeps this linear over the whole text.
        best = max(best, text.rfind(ch, best + 1 if best >= 0 else lo, hi))
    return best - lo if best >= 0 else 0


def _end_contexts(text: str) -> list[tuple[re.Match[str], str]]:
    """Candidate sentence ends with the text Punkt judges each by.

    Adjacent candidates ("acting!!!") are one candidate, judged at its last
    character together with the whole word before it.
    """
    out: list[tuple[re.Match[str], str]] = []
    prev_start, prev_stop = 0, 0
    prev: re.Match[str] | None = None
    # Punkt looks for ASCII whitespace only; most texts hold just two kinds.
    spaces = "".join(ch for ch in " \n\t\r\x0b\x0c" if ch in text)
    for m in _CANDIDATE_RE.finditer(text):
        ws = _last_whitespace(text, prev_stop, m.start(), spaces)
        # Punkt reads a whitespace at offset 0 as "no whitespace" and so keeps the
        # earlier word; we do the same to split exactly where it does.
        start = prev_stop + ws + 1 if ws else prev_start
        if prev is not None and prev_stop <= start:
            out.append(
                (prev, text[prev_start:prev_stop] + prev.group() + prev["after"])
            )
        prev, prev_start, prev_stop = m, start, m.start()
    if prev is not None:
        out.append((prev, text[prev_start:prev_stop] + prev.group() + prev["after"]))
    return out


@functools.lru_cache(maxsize=8)
def _sentence_slices(text: str) -> tuple[tuple[int, int], ...]:
    # Cached: the loose evaluation and two instructions split the same texts.
    slices: list[tuple[int, int]] = []
    last = 0
    # Contexts repeat ("fox. The", or a list's "1. First"); judging each once keeps
    # a long response cheap.
    decided: dict[str, bool] = {}
    for m, context in _end_contexts(text):
        brk = decided.get(context)
        if brk is None:
            brk = decided[context] = _has_inner_break(context)
        if brk:
            slices.append((last, m.end()))
            last = m.start("next") if m["next"] is not None else m.end()
    slices.append((last, len(text.rstrip())))
    # Move closing quotes and brackets that open a sentence onto the one before.
    out: list[tuple[int, int]] = []
    shift = 0
    for i, (start, stop) in enumerate(slices):
        start += shift
        if i + 1 == len(slices):
            if start < stop:
                out.append((start, stop))
            continue
        nstart, nstop = slices[i + 1]
        closing = _REALIGN_RE.match(text, nstart, max(nstart, nstop))
        if closing is not None:
            out.append((start, nstart + len(closing.group().rstrip())))
            shift = closing.end() - nstart
        else:
            shift = 0
            if start < stop:
                out.append((start, stop))
    return tuple(out)


def split_sentences(text: str) -> list[str]:
    """Split text into sentences the way NLTK's English Punkt model does.

    See the module docstring for where this can differ from the trained model.

    :param text: any text; newlines are ordinary whitespace.
    :return: the sentences, in order; whitespace-only text has none.
    """
    return [text[a:b] for a, b in _sentence_slices(text)]


def count_sentences(text: str) -> int:
    """The number of sentences :func:`split_sentences` finds.

    :param text: any text.
    """
    return len(_sentence_slices(text))


# -------------------------------------------------------------------- word tokens

# What may follow a sentence's final period before the end: closing brackets and
# quotes, and spaces (then any whitespace).
_AFTER_FINAL_PERIOD = frozenset(")]}>\"'\xbb\u201d\u2019 ")
# Characters (and runs) that Treebank splits off as tokens of their own; none is
# cased, so they become plain separators here. Treebank splits them in two rounds,
# before and after it detaches a quote that ends a word ("dogs' "), and a clitic
# before such a quote is split only if the quote is followed by a space by then.
_SEPARATORS_BEFORE_RE = re.compile(
    r"[;@#$%&?!\xab\u201c\u2018\u201e`\u2012-\u2015]|\.{2,}|[:,](?!\d)"
    # An opening single quote before a word, unless it begins a clitic ('s, 're).
    r"|(?<!\w)'(?!(?i:re|ve|ll|m|t|s|d|n)\b)(?=\w)"
)
_SEPARATORS_AFTER_RE = re.compile(r"""[*()\[\]{}<>"\xbb\u201d\u2019]|-{2,}|''""")
_TRAILING_QUOTE_RE = re.compile(r"([^'])' ")
_CLITIC_RE = re.compile(r"([^' ])('[sS]|'[mM]|'[dD]|') ")
_CLITIC2_RE = re.compile(r"([^' ])('ll|'LL|'re|'RE|'ve|'VE|n't|N'T) ")
# Fused words Treebank splits in two, one rule after another (each split adds the
# spaces a later rule may need: "CANNOT'TIS").
_FUSED_RES = tuple(
    re.compile(p, re.IGNORECASE)
    for p in (
        r"\b(can)(not)\b",
        r"\b(d)('ye)\b",
        r"\b(gim)(me)\b",
        r"\b(gon)(na)\b",
        r"\b(got)(ta)\b",
        r"\b(lem)(me)\b",
        r"\b(more)('n)\b",
        r"\b(wan)(na)(?=\s)",
        r" ('t)(is)\b",
        r" ('t)(was)\b",
    )
)


def _split_final_period(sentence: str) -> str:
    """Detach the sentence's final period, so a clitic before it is word-final."""
    # Done by hand rather than with Treebank's regex, whose nested quantifiers
    # backtrack quadratically on long runs of spaces.
    s = sentence.rstrip()
    i = len(s)
    while i and s[i - 1] in _AFTER_FINAL_PERIOD:
        i -= 1
    if i >= 2 and s[i - 1] == "." and s[i - 2] != ".":
        return s[: i - 1] + " . " + s[i:]
    return sentence


def _treebank_words(text: str) -> list[str]:
    """Treebank's word split of ``text`` whose sentences are already on own lines."""
    s = _SEPARATORS_BEFORE_RE.sub(" ", text)
    s = _TRAILING_QUOTE_RE.sub(r"\1 ' ", s)
    s = " " + " ".join(_SEPARATORS_AFTER_RE.sub(" ", s).split()) + " "
    s = _CLITIC_RE.sub(r"\1 \2 ", s)
    s = _CLITIC2_RE.sub(r"\1 \2 ", s)
    for fused in _FUSED_RES:
        s = fused.sub(r" \1 \2 ", s)
    return s.split()


def word_tokens(text: str) -> list[str]:
    """The word tokens of ``nltk.word_tokenize``, minus its punctuation tokens.

    :param text: any text; it is split into sentences first, as NLTK does.
    """
    # NLTK tokenizes sentence by sentence. Only the final-period rule needs the
    # sentence; every other rule gives the same tokens on the whole text once the
    # sentences are joined by newlines (a newline acts as a sentence's edge), and
    # one pass over the text is much faster than one per sentence.
    return _treebank_words("\n".join(map(_split_final_period, split_sentences(text))))


def count_capital_words(text: str) -> int:
    """How many word tokens are all upper case (``str.isupper``).

    :param text: any text.
    """
    return sum(1 for t in word_tokens(text) if t.isupper())


# ------------------------------------------------------------------------ language


class LanguageDetectionUnavailableError(ImportError):
    """Raised when an instruction needs language detection and langdetect is absent."""


_LOCK = threading.Lock()
_FACTORY: Any = None
_ERROR: Any = None


def _factory() -> tuple[Any, Any]:
    """Our own seeded langdetect factory and langdetect's exception, built once."""
    global _FACTORY, _ERROR
    with _LOCK:
        if _FACTORY is None:
            try:
                from langdetect import (  # type: ignore[import-untyped, import-not-found, unused-ignore]
                    detector_factory,
                    lang_detect_exception,
                )
            except ImportError as exc:
                raise LanguageDetectionUnavailableError(
                    "The IFEval instruction 'language:response_language' needs the"
                    " langdetect package, which is not installed; run"
                    " `pip install langdetect` or"
                    " `pip install 'pytest-context-bench[ifeval]'`."
                ) from exc
            # Our own factory, not langdetect's global one: seeding ours makes the
            # answer reproducible without changing anyone else's detector.
            factory = detector_factory.DetectorFactory()
            factory.load_profile(detector_factory.PROFILES_DIRECTORY)
            factory.set_seed(0)
            _FACTORY = factory
            _ERROR = lang_detect_exception.LangDetectException
        return _FACTORY, _ERROR


def langdetect_available() -> bool:
    """Whether :func:`detect_language` can run (langdetect is importable)."""
    try:
        _factory()
    except LanguageDetectionUnavailableError:
        return False
    return True


def require_langdetect() -> None:
    """Raise :class:`LanguageDetectionUnavailableError` unless langdetect is there."""
    _factory()


def detect_language(text: str) -> str | None:
    """The ISO 639-1 code langdetect gives ``text``, seeded so it is repeatable.

    :param text: any text (langdetect reads its first 10,000 characters).
    :return: the code (``"en"``, ``"fr"``, ``"zh-cn"`` ...), or ``None`` when
        langdetect cannot decide (no letters at all), which the official checker
        counts as the instruction followed.
    :raises LanguageDetectionUnavailableError: langdetect is not installed.
    """
    factory, error = _factory()
    detector = factory.create()
    detector.append(text)
    try:
        code: str = detector.detect()
    except error:
        return None
    return code
