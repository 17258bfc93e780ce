"""NLILabelMatch: does the label a response states equal the gold NLI label?

An NLI example carries its gold label in ``answer`` and, optionally, its label set in
``labels`` (DESIGN.md §4). Without ``labels`` the set is inferred from the gold among
three known sets:

================  =================  =================  ===================
set               positive           negative           neutral
================  =================  =================  ===================
generic NLI       entailment         contradiction      neutral
ContractNLI       entailment         contradiction      not mentioned
SciFact           supports           refutes            not enough info
================  =================  =================  ===================

A gold of SciFact's vocabulary (supports, refutes, NEI, SciFact's raw ``SUPPORT``)
picks SciFact, "not mentioned" picks ContractNLI, anything else generic NLI; since
each set has one label per role, the choice only decides the names.

An example's own ``labels`` (a list of strings) are read the same way: a label whose
name is a known alias gets that role (``["Entailment", "Contradiction",
"NotMentioned"]``), a label such as ``"not_entailment"`` (RTE, HANS) covers every role
but the one it negates, and any other label (``"weird"``) matches only by its own
name. The gold may name its label by an alias of its role (``"neutral"`` for ``"not
mentioned"``) or, as Hugging Face ``ClassLabel`` data does, by its integer index.

How a response is read
----------------------

Every word or phrase that names a label is a *mention*. A mention names a label
literally (``"Not mentioned"``, ``"NOT_ENOUGH_INFO"``, ``"NotMentioned"``: case,
``_``, ``-`` and camel case do not matter) or through an alias of the label's *role*
(positive, negative, neutral), so aliases follow the example's own label set:

- positive: entail/entails/entailed/entailment, support/supports/supported,
  and the answer words yes, true, correct;
- negative: contradict/contradicts/contradiction/contradictory, refute/refutes/
  refuted, disprove(d), and the answer words no, false, incorrect;
- neutral: neutral, "not mentioned" / "does not mention" / "no mention",
  "not enough info/information/evidence", NEI, insufficient, unknown,
  undetermined, inconclusive, "cannot be determined", "can't tell",
  "impossible to determine", a standalone "neither".

So ``"Yes"`` is ``supports`` on a SciFact example and ``entailment`` on a ContractNLI
one, and ``"neutral"`` is ``not mentioned`` on ContractNLI (as upstream).

The answer words (yes/no/true/false/correct/incorrect) are common in prose, so they
count only where an answer can stand: at the start of a sentence (``"Yes, ..."``),
after a copula (``"the claim is false"``), or in an explicit statement (below);
``"no"`` followed by a word is a determiner (``"no evidence"``), never an answer.

Negation. A mention preceded, in the same clause and within six words, by a
negator (not, no, never, n't, neither, nor, non, cannot, without, lack, fail...) is
*negated*: ``"does not entail"``, ``"not supported"``, ``"doesn't support"``, ``"is
not a contradiction"``, ``"no evidence that it contradicts"``, ``"neither supports nor
refutes"``. A negated mention never selects its label; it *rules it out*. When the
other statements leave exactly one label of the set, that label is the answer
(``"It is neither entailed nor contradicted"`` is neutral; on a two-label set
``"does not entail"`` is the other label); otherwise the negation alone does not
decide, because "not a contradiction" could be either of the two remaining labels
of a three-way set, and the response scores 0.0 unless it says more.

Mentions in a question (a sentence ending in ``?``, such as an echoed prompt "Does the
contract entail, contradict, or not mention ...?") and mentions under "whether"/"if"
or in "not enough evidence to support or refute" are hypothetical and ignored.

Which statement wins. Explicit statements come first: mentions after an answer
marker ("The answer is", "Answer:", "Label:", "Final answer", "Final:", "verdict",
"classification", "the relationship ... is", "I would say", "classify ... as",
"therefore", "thus", "hence", "in conclusion", "I conclude", a sentence-initial
"So"), up to the end of that sentence or a concession ("but", "though",
"however"...), a label standing alone as a sentence or line
(``"Contradiction."``) and a label in bold (``"**neutral**"``). The **last** explicit
statement wins. Only when no explicit statement decides are all mentions read, and
again the last one wins (``"...I conclude this is a contradiction."``). A response
whose last statement names a label outside the set (``"neutral"`` on a two-way set)
gets no label.

Scoring
-------

``{"nli_accuracy": 1.0}`` when the extracted label is the gold, else ``0.0``,
including when no label can be determined. ``{}`` when the example has no gold, or
has no ``labels`` and its gold belongs to none of the known sets (the evaluator cannot
tell an NLI example with an unusual label from, say, a QA example it was wired onto).
A gold missing from the example's own ``labels`` is a data error and raises
:class:`ValueError`, which the engine records as that example's error: the example
contradicts itself, and dropping it silently would hide a misspelt label.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache
from typing import Any, Final, NamedTuple

__all__ = [
    "CONTRACT_NLI_LABELS",
    "NLI_LABELS",
    "SCIFACT_LABELS",
    "NLILabelMatch",
    "extract_label",
]

#: Generic three-way NLI (SNLI, MNLI, ANLI).
NLI_LABELS: Final[tuple[str, ...]] = ("entailment", "neutral", "contradiction")
#: ContractNLI (SCROLLS ``contract_nli``).
CONTRACT_NLI_LABELS: Final[tuple[str, ...]] = (
    "entailment",
    "contradiction",
    "not mentioned",
)
#: SciFact (also accepts its raw ``SUPPORT``/``CONTRADICT`` through the aliases).
SCIFACT_LABELS: Final[tuple[str, ...]] = ("supports", "refutes", "not enough info")

_POS: Final = "positive"
_NEG: Final = "negative"
_NEU: Final = "neutral"
_ALL_ROLES: Final = frozenset({_POS, _NEG, _NEU})

# The role of each built-in set's labels, in the order of the tuples above.
_SET_ROLES: Final[dict[tuple[str, ...], tuple[str, ...]]] = {
    NLI_LABELS: (_POS, _NEU, _NEG),
    CONTRACT_NLI_LABELS: (_POS, _NEG, _NEU),
    SCIFACT_LABELS: (_POS, _NEG, _NEU),
}


class _Alias(NamedTuple):
    pattern: str  # a regex over normalised text, matched between word boundaries
    role: str
    weak: bool  # an answer word: counts only where an answer can stand
    family: str | None  # the dataset whose vocabulary it is, for inferring a set


# "no" and "neither" are answers only when nothing follows them in the clause; before
# a word they are negators ("no evidence", "neither supports nor refutes").
_ALONE: Final = r"(?=\s*(?:[^\w\s]|$))"

_ALIASES: Final[tuple[_Alias, ...]] = (
    _Alias(r"entail(?:ment|ments|s|ed|ing)?", _POS, False, None),
    _Alias(r"support(?:s|ed|ing)?", _POS, False, "scifact"),
    _Alias(r"yes|true|correct", _POS, True, None),
    _Alias(r"contradict(?:ion|ions|s|ed|ing|ory)?", _NEG, False, None),
    _Alias(r"refut(?:e|es|ed|ing|ation)", _NEG, False, "scifact"),
    _Alias(r"disprov(?:e|es|ed|ing)", _NEG, False, None),
    _Alias(r"false|incorrect", _NEG, True, None),
    _Alias(r"no" + _ALONE, _NEG, True, None),
    _Alias(r"neutral", _NEU, False, None),
    _Alias(
        r"(?:not|never|no|\w+n't)\s+(?:\w+ly\s+)?(?:mention(?:s|ed)?|address(?:es|ed)?)"
        r"|notmentioned",
        _NEU,
        False,
        "contract",
    ),
    _Alias(
        r"not\s+enough\s+(?:info|information|evidence|data|context)"
        r"|notenoughinfo|nei|insufficient",
        _NEU,
        False,
        "scifact",
    ),
    _Alias(
        r"unknown|undetermined|indeterminate|inconclusive|unverifiable|undecidable",
        _NEU,
        False,
        None,
    ),
    _Alias(
        r"(?:cannot|can't|can\s+not|could\s+not|couldn't)\s+(?:be\s+)?"
        r"(?:determined?|inferred|infer|concluded?|verified|verify|known|decided?"
        r"|tell|say)",
        _NEU,
        False,
        None,
    ),
    _Alias(
        r"(?:impossible|not\s+possible|hard|difficult|unable)\s+to\s+"
        r"(?:determine|tell|say|conclude|verify|infer)",
        _NEU,
        False,
        None,
    ),
    _Alias(r"neither" + _ALONE, _NEU, False, None),
)

_NEGATORS: Final = frozenset(
    {
        "not", "no", "never", "neither", "nor", "non", "nothing", "none",
        "cannot", "without", "lack", "lacks", "lacking", "fail", "fails", "failed",
        "hardly", "barely",
        "isnt", "doesnt", "dont", "didnt", "cant", "wont", "arent", "wasnt",
        "werent", "wouldnt", "shouldnt", "couldnt", "hasnt", "havent",
    }
)  # fmt: skip
# A contrast starts a new clause: the negation before it is not carried over
# ("not entailment but contradiction").
_CONTRAST: Final = frozenset(
    {"but", "however", "although", "though", "whereas", "yet", "rather", "instead"}
)
_HYPOTHETICAL: Final = frozenset({"whether", "if"})
_INSUFFICIENT: Final = frozenset(
    {"enough", "insufficient", "unable", "impossible", "hard", "difficult"}
)
_NEGATION_WINDOW: Final = 6  # words between a negator and its mention, negator included

# Same-length replacements, so match offsets stay meaningful: typographic apostrophes
# become ', and "_" / "-" join words the way spaces do ("not_mentioned").
_TRANSLATE: Final = str.maketrans(
    {"\u2019": "'", "\u2018": "'", "\u02bc": "'", "_": " ", "-": " "}
)
_CLAUSE_END: Final = re.compile(r"[.,;:!?\n()\[\]\u2013\u2014]")
_SENTENCE_END: Final = re.compile(r"[.!?\n]")
_LAST_SENTENCE_END: Final = re.compile(r"[.!?\n][^.!?\n]*\Z")
_WORD: Final = re.compile(r"\w")
# A copula and then only fillers right before an answer word ("the claim is not
# true"), written backwards: it is matched on the reversed preceding text.
_COPULA_BEFORE_REVERSED: Final = re.compile(
    r"\s+(?:(?:ton|reven|osla|llits|deedni|yl\w+)\s+)*"
    r"(?:(?:t'n)?(?:si|era|saw|erew|eb|neeb|gnieb|smees|sraeppa)(?!\w)|s'\w)"
)
_NONWORD_RUN: Final = re.compile(r"\W*")
_ANSWER_BOUNDARY: Final = re.compile(r"[.!?\n:;]")
_COORDINATION: Final = re.compile(r"\s*,?\s*(?:or|nor)\s*")
# Where a marker's scope stops: the sentence end, or a concession, after which the
# response weighs the alternative ("is neutral, though it may look like entailment").
_SCOPE_END: Final = re.compile(
    r"[.!?;\n]|\b(?:but|though|although|however|whereas|while|despite|even)\b"
)
_TOKEN: Final = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")
_CAMEL: Final = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_MARKUP: Final = " \t\r*_`'\"()[]{}#>:-~"
_LOOKAHEAD: Final = 300  # how far to look for the end of a sentence
_SCOPE_CAP: Final = 500  # longest stretch an answer marker governs

_MARKERS: Final = re.compile(
    r"\b(?:(?:final|correct|predicted|my)\s+)?"
    r"(?:answer|label|verdict|classification|judge?ment|prediction|decision|output)"
    r"\s*(?:\*\*|__)?\s*"
    r"(?:is|was|would\s+be|should\s+be|will\s+be|must\s+be|[:=>]|\u2192)"
    r"|\bfinal\s*(?:\*\*|__)?\s*[:=]"
    r"|\b(?:relationship|relation)\b[^.!?\n]{0,80}?\b(?:is|would\s+be)\b"
    r"|\b(?:therefore|thus|hence|consequently|accordingly|in\s+conclusion|to\s+conclude"
    r"|in\s+summary|conclu(?:de|des|ded|sion))\b"
    r"|(?:^|(?<=[.!?\n]))[ \t*]*so\b"
    r"|\bi(?:'d|\s+would|\s+will)?\s+(?:say|choose|pick|select|go\s+with)\b"
    r"|\b(?:classif(?:y|ies|ied)|categori[sz](?:e|es|ed)|label(?:s|ed|led)?)\b"
    r"[^.!?\n]{0,40}?\bas\b"
)
_BOLD: Final = re.compile(r"\*\*([^*\n]{1,60})\*\*|__([^_\n]{1,60})__")

_OUTSIDE: Final = -1  # a mention of a role the label set does not have


def _norm_label(label: str) -> str:
    """Canonical text of a label: ``"NotMentioned"`` and ``"NOT_MENTIONED"`` give
    ``"not mentioned"``."""
    spaced = _CAMEL.sub(" ", label.strip())
    return " ".join(spaced.lower().translate(_TRANSLATE).split()).strip(".!?:;,'\"")


def _roles_of(norm: str) -> tuple[frozenset[str], str | None]:
    """The roles a label text plays, and the dataset family its word belongs to."""
    for alias in _ALIASES:
        if re.fullmatch(alias.pattern, norm):
            return frozenset({alias.role}), alias.family
    # "not entailment" / "non-entailment" (RTE, HANS): everything but the negated role.
    m = re.fullmatch(r"(?:not|non)\s+(.+)", norm)
    if m:
        inner, _family = _roles_of(m.group(1))
        if len(inner) == 1:
            return _ALL_ROLES - inner, None
    return frozenset(), None


class _Entry(NamedTuple):
    target: int | None  # label index; _OUTSIDE; None when the role is ambiguous
    eliminates: frozenset[int]  # labels a negated mention rules out
    weak: bool
    role: str | None


class _Matcher(NamedTuple):
    regex: re.Pattern[str]
    entries: tuple[_Entry, ...]
    n_labels: int


@lru_cache(maxsize=256)
def _matcher(labels: tuple[str, ...]) -> _Matcher:
    """Compile the mention finder of one label set (cached: sets repeat per example)."""
    norms = [_norm_label(lab) for lab in labels]
    # A repeated label ("Entailment", "entailment") is the first one: the later
    # copies get no role, so they do not make the role ambiguous.
    roles = [
        _roles_of(n)[0] if n not in norms[:i] else frozenset()
        for i, n in enumerate(norms)
    ]
    patterns: list[str] = []
    entries: list[_Entry] = []
    seen: set[str] = set()
    # Literal labels first: at one position the regex takes the first alternative
    # that matches, so "not entailment" as a label beats "entailment" negated.
    for i, norm in sorted(enumerate(norms), key=lambda p: -len(p[1])):
        if not norm or norm in seen:
            continue
        seen.add(norm)
        words = [re.escape(w) for w in norm.split()]
        pattern = r"\s+".join(words)
        if len(words) > 1:
            pattern += "|" + "".join(words)  # "notmentioned", "notenoughinfo"
        weak = any(a.weak and re.fullmatch(a.pattern, norm) for a in _ALIASES)
        role = next(iter(roles[i])) if len(roles[i]) == 1 else None
        patterns.append(pattern)
        entries.append(_Entry(i, frozenset({i}), weak, role))
    for alias in _ALIASES:
        covering = [i for i, r in enumerate(roles) if alias.role in r]
        target: int | None
        if not covering:
            target = _OUTSIDE
        elif len(covering) == 1:
            target = covering[0]
        else:
            target = None
        exact = frozenset(i for i, r in enumerate(roles) if r == {alias.role})
        patterns.append(alias.pattern)
        entries.append(_Entry(target, exact, alias.weak, alias.role))
    alternation = "|".join(f"(?P<g{k}>{p})" for k, p in enumerate(patterns))
    # "(?=\w)" first: most positions are not a word start, and failing there is
    # far cheaper than trying every alternative.
    regex = re.compile(rf"(?=\w)(?<!\w)(?:{alternation})(?!\w)")
    return _Matcher(regex, tuple(entries), len(labels))


class _Mention(NamedTuple):
    target: int | None
    eliminates: frozenset[int]
    negated: bool
    explicit: bool


def _explicit_scopes(text: str) -> list[tuple[int, int]]:
    """Spans governed by an answer marker: from it to the end of its sentence."""
    scopes: list[tuple[int, int]] = []
    n = len(text)
    for m in _MARKERS.finditer(text):
        start = m.end()
        # The answer may sit on the next line ("Answer:\n\nEntailment"), or after a
        # comma ("Therefore, ...").
        while start < n and (text[start] in _MARKUP or text[start] in ", \n\t"):
            start += 1
        end_match = _SCOPE_END.search(text, start, min(n, start + _SCOPE_CAP))
        stop = end_match.start() if end_match else min(n, start + _SCOPE_CAP)
        scopes.append((m.end(), stop))
    return scopes


def _bold_spans(text: str) -> list[tuple[int, int, str]]:
    spans = []
    for m in _BOLD.finditer(text):
        group = 1 if m.group(1) is not None else 2
        spans.append((m.start(group), m.end(group), m.group(group)))
    return spans


# Every look around a mention is bounded (a few dozen characters), so a 1 MB response
# with a quarter of a million mentions still costs one pass.


def _is_question(text: str, end: int) -> bool:
    stop = _SENTENCE_END.search(text, end, end + _LOOKAHEAD)
    return stop is not None and stop.group() == "?"


def _stands_alone(text: str, start: int, end: int) -> bool:
    """Is the mention the whole of its sentence or line, markup aside?"""
    pad = 12
    before = text[max(0, start - pad) : start]
    last = _LAST_SENTENCE_END.search(before)
    if last is None and start > pad:
        return False
    if before[last.start() + 1 if last else 0 :].strip(_MARKUP):
        return False
    stop = _SENTENCE_END.search(text, end, end + pad)
    if stop is None and end + pad < len(text):
        return False
    return not text[end : stop.start() if stop else len(text)].strip(_MARKUP)


def _answer_position(text: str, start: int) -> bool:
    """Can an answer word stand here: sentence start, or after a copula?"""
    # Read backwards from the word with anchored matches, so each check costs the
    # few characters it looks at.
    before = text[max(0, start - 40) : start][::-1]
    run = _NONWORD_RUN.match(before)
    assert run is not None  # \W* always matches
    if _ANSWER_BOUNDARY.search(run.group()) or (
        run.end() == len(before) and start <= 40
    ):
        return True
    return _COPULA_BEFORE_REVERSED.match(before) is not None


def _mentions(text: str, matcher: _Matcher) -> list[_Mention]:
    """Every label mention in ``text`` (already normalised), in order."""
    scopes = _explicit_scopes(text)
    bolds = _bold_spans(text)
    out: list[_Mention] = []
    prev_end = 0
    prev: tuple[bool, bool] | None = None  # (negated, dropped) of the last mention
    prev_role: str | None = None
    scope_i = 0
    bold_i = 0
    for m in matcher.regex.finditer(text):
        start, end = m.span()
        assert m.lastgroup is not None
        entry = matcher.entries[int(m.lastgroup[1:])]
        # Scopes start in order and end at the next sentence end, so their ends are
        # ordered too: those ending before this mention never matter again.
        while scope_i < len(scopes) and scopes[scope_i][1] < start:
            scope_i += 1
        explicit = False
        j = scope_i
        while j < len(scopes) and scopes[j][0] <= start:
            if end <= scopes[j][1]:
                explicit = True
                break
            j += 1

        if not explicit:
            # Bold spans do not overlap and come in order, like the mentions.
            while bold_i < len(bolds) and bolds[bold_i][1] < end:
                bold_i += 1
            explicit = _stands_alone(text, start, end) or (
                bold_i < len(bolds)
                and bolds[bold_i][0] <= start
                and bolds[bold_i][2].strip(_MARKUP + ".,;!?") == m.group()
            )

        if entry.weak and not explicit and not _answer_position(text, start):
            continue

        # The clause before the mention, back to punctuation or the previous mention.
        lo = max(prev_end, start - 80)
        window = text[lo:start]
        tokens: list[str] = []
        same_clause = True
        if window and not window.isspace():  # a list of labels leaves only blanks
            cuts = [c.end() for c in _CLAUSE_END.finditer(window)]
            if cuts:
                same_clause = False
                window = window[cuts[-1] :]
            tokens = _TOKEN.findall(window)
            for k in range(len(tokens) - 1, -1, -1):
                if tokens[k] in _CONTRAST:
                    tokens = tokens[k + 1 :]
                    same_clause = False
                    break

        coordinated = (
            prev is not None
            and lo == prev_end
            and _COORDINATION.fullmatch(text, prev_end, start) is not None
        )
        if coordinated and prev is not None:
            negated = prev[0] or "nor" in tokens
            dropped = prev[1]
        else:
            recent = tokens[-_NEGATION_WINDOW:]
            negated = any(t in _NEGATORS or t.endswith("n't") for t in recent)
            dropped = any(t in _HYPOTHETICAL for t in tokens) or (
                bool(tokens)
                and tokens[-1] == "to"
                and (
                    (same_clause and lo == prev_end and prev_role == _NEU)
                    or any(t in _INSUFFICIENT for t in tokens)
                )
            )
        prev, prev_end, prev_role = (negated, dropped), end, entry.role
        if dropped or _is_question(text, end):
            continue
        out.append(_Mention(entry.target, entry.eliminates, negated, explicit))
    return out


def _decide(mentions: list[_Mention], n_labels: int) -> int | None:
    """The label the mentions settle on: the last affirmed one, else elimination."""
    current: int | None = None
    excluded: set[int] = set()
    for mention in mentions:
        if mention.negated:
            excluded |= mention.eliminates
            if current in mention.eliminates:
                current = None
        elif mention.target is not None:
            current = mention.target
            excluded.discard(current)
    if current is not None:
        return None if current == _OUTSIDE else current
    remaining = [i for i in range(n_labels) if i not in excluded]
    return remaining[0] if excluded and len(remaining) == 1 else None


def _extract_index(response: object, labels: tuple[str, ...]) -> int | None:
    if response is None:
        return None
    text = str(response).lower().translate(_TRANSLATE)
    if not text.strip():
        return None
    matcher = _matcher(labels)
    mentions = _mentions(text, matcher)
    explicit = [m for m in mentions if m.explicit]
    if explicit:
        found = _decide(explicit, matcher.n_labels)
        if found is not None:
            return found
    return _decide(mentions, matcher.n_labels)


def extract_label(response: object, labels: Sequence[str]) -> str | None:
    """Return the label of ``labels`` that ``response`` states, or ``None``.

    See the module docstring for the rules (aliases per role, negation, explicit
    statements first, the last statement wins).

    >>> extract_label("The answer is: supports", SCIFACT_LABELS)
    'supports'
    >>> extract_label("Yes.", SCIFACT_LABELS)
    'supports'
    >>> extract_label("It does not entail it.", CONTRACT_NLI_LABELS) is None
    True

    :param response: the model's text; ``None`` gives ``None``, anything else is read
        as ``str(response)``.
    :param labels: the label set, e.g. :data:`CONTRACT_NLI_LABELS` or an example's
        own ``labels``.
    :return: the matching element of ``labels`` (as given), or ``None`` when the
        response names no label of the set, or none can be decided.
    :raises ValueError: when ``labels`` is a string or is empty.
    """
    label_tuple = _coerce_labels(labels)
    index = _extract_index(response, label_tuple)
    return None if index is None else label_tuple[index]


def _coerce_labels(raw: object) -> tuple[str, ...]:
    """An example's ``labels`` as a tuple of strings, or a clear error.

    A wrong type is a ``ValueError`` too, not a ``TypeError``: it is a bad value in
    the example's data, reported like the other data errors of this evaluator.
    """
    text_like = (str, bytes, bytearray)
    items = raw if isinstance(raw, Sequence) and not isinstance(raw, text_like) else ()
    labels = tuple(str(x) for x in items if x is not None)
    if not labels or len(labels) != len(items) or not all(x.strip() for x in labels):
        raise ValueError(
            "The example's 'labels' must be a non-empty list of non-blank label "
            f"strings, got {raw!r}."
        )
    return labels


def _gold_index(gold: object, labels: tuple[str, ...]) -> int | None:
    """Position of the gold in ``labels``: literally, through a role alias, or (an
    integer gold, as Hugging Face ``ClassLabel`` data has it) by index."""
    norm = _norm_label(str(gold))
    norms = [_norm_label(lab) for lab in labels]
    if norm in norms:
        return norms.index(norm)
    roles, _family = _roles_of(norm)
    if len(roles) == 1:
        (role,) = roles
        covering = [i for i, lab in enumerate(norms) if role in _roles_of(lab)[0]]
        if len(covering) == 1:
            return covering[0]
    if isinstance(gold, int) and not isinstance(gold, bool) and 0 <= gold < len(labels):
        return gold
    return None


def _infer_set(gold: object) -> tuple[tuple[str, ...], int] | None:
    """The known label set a gold belongs to, and its position there."""
    norm = _norm_label(str(gold))
    roles, family = _roles_of(norm)
    if len(roles) != 1:
        return None
    if family == "scifact":
        label_set = SCIFACT_LABELS
    elif family == "contract":
        label_set = CONTRACT_NLI_LABELS
    else:
        label_set = NLI_LABELS
    (role,) = roles
    return label_set, _SET_ROLES[label_set].index(role)


class NLILabelMatch:
    """``nli_accuracy``: 1.0 when the label the response states is the gold label.

    Reads ``original["answer"]`` (the gold label; a list means any of them),
    ``original["labels"]`` (the label set, optional) and ``processed["response"]``.
    The rules for reading a response, the label sets it knows and the aliases are in
    :mod:`pytest_context_bench.evaluators.nli`.

    - no gold (absent, ``None``, blank, empty list): ``{}``;
    - no ``labels`` and a gold outside the known sets: ``{}``;
    - ``labels`` present but malformed, or not containing the gold:
      :class:`ValueError` (an error of that example);
    - a response that names no label, or none that can be decided: ``0.0``.

    >>> ev = NLILabelMatch()
    >>> ev.score({"answer": "Entailment"}, {"response": "Yes, this is true."})
    {'nli_accuracy': 1.0}
    """

    name = "nli_label_match"

    def score(
        self, original: dict[str, Any], processed: dict[str, Any]
    ) -> dict[str, float]:
        """Score one (original, processed) pair.

        :param original: the example; ``"answer"`` is the gold label, ``"labels"``
            the optional label set.
        :param processed: what the System returned; ``"response"`` is judged.
        :return: ``{"nli_accuracy": 1.0 or 0.0}``, or ``{}`` when the example
            cannot be judged.
        :raises ValueError: when ``labels`` is malformed or lacks the gold.
        """
        return self.score_details(original, processed)[0]

    def score_details(
        self, original: dict[str, Any], processed: dict[str, Any]
    ) -> tuple[dict[str, float], dict[str, Any]]:
        """Like :meth:`score`, also returning why (empty when right): ``given``
        (the label read from the response, or ``"none recognised"``) and
        ``expected`` (the gold label, or labels)."""
        raw_gold = original.get("answer")
        golds: list[object]
        if isinstance(raw_gold, (list, tuple)):
            golds = list(raw_gold)
        else:
            golds = [raw_gold]
        golds = [g for g in golds if g is not None and str(g).strip()]
        if not golds:
            return {}, {}

        raw_labels = original.get("labels")
        targets: list[tuple[tuple[str, ...], int]] = []
        if raw_labels is not None:
            labels = _coerce_labels(raw_labels)
            for gold in golds:
                index = _gold_index(gold, labels)
                if index is None:
                    raise ValueError(
                        f"The gold label {gold!r} is not in the example's labels "
                        f"{list(labels)!r}; fix the example's 'answer' or 'labels'."
                    )
                targets.append((labels, index))
        else:
            for gold in golds:
                found = _infer_set(gold)
                if found is not None:
                    targets.append(found)
            if not targets:
                return {}, {}

        response = processed.get("response")
        given = [_extract_index(response, lab) for lab, _ in targets]
        if any(g == i for g, (_, i) in zip(given, targets)):
            return {"nli_accuracy": 1.0}, {}
        expected = [lab[i] for lab, i in targets]
        said = next((targets[n][0][g] for n, g in enumerate(given) if g is not None),
                    None)
        details: dict[str, Any] = {
            "reason": (f"the response says {said}, the gold label is "
                       if said is not None else
                       "no label recognised in the response, the gold label is ")
            + " or ".join(expected),
            "given": said if said is not None else "none recognised",
            "expected": expected[0] if len(expected) == 1 else expected,
        }
        return {"nli_accuracy": 0.0}, details
