"""Google's IFEval (instruction-following evaluation), all 25 instruction types.

:class:`IFEvalChecker` is the evaluator; :data:`INSTRUCTIONS` is the registry of
instruction types by official id, each with its arguments and its check;
:func:`build_check` validates one instruction and returns its check.
"""

from __future__ import annotations

# Implemented in _checker.py
from ._checker import IFEvalChecker, loose_variants

# Implemented in _instructions.py
from ._instructions import (
    CONSTRAINED_RESPONSE_OPTIONS,
    INSTRUCTIONS,
    RELATIONS,
    Check,
    InstructionError,
    InstructionType,
    build_check,
)

# Implemented in _text.py
from ._text import (
    LanguageDetectionUnavailableError,
    count_capital_words,
    count_sentences,
    count_words,
    split_sentences,
)

__all__ = [
    "CONSTRAINED_RESPONSE_OPTIONS",
    "INSTRUCTIONS",
    "RELATIONS",
    "Check",
    "IFEvalChecker",
    "InstructionError",
    "InstructionType",
    "LanguageDetectionUnavailableError",
    "build_check",
    "count_capital_words",
    "count_sentences",
    "count_words",
    "loose_variants",
    "split_sentences",
]
