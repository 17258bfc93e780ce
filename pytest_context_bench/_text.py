"""Text from data made inert for a terminal, a log or a file: it shows, never acts.

Example ids, System and suite names, error messages and dataset tags come from
users' files and code. Written raw, an ESC sequence (``\\x1b[2J``) clears a CI log's
screen or paints a fake green line, a NUL or a carriage return hides what precedes
it, and a Unicode direction control (U+202E) reverses what follows. :func:`inert`
shows each such character as a visible escape (``\\x1b``, ``\\x00``, ``\\u202e``),
as Python's ``repr`` does for a response.
"""

from __future__ import annotations

import re
from typing import Final

__all__ = ["inert"]

# C0 controls (but tab and newline, decided per call), DEL, C1 controls, the
# Unicode direction controls (LRM, RLM, ALM, embeddings/overrides, isolates) and
# the line and paragraph separators.
_UNSAFE: Final = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e"
    "\u2066-\u2069]"
)
_UNSAFE_LINE: Final = re.compile(
    "[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]"
)


def _shown(match: re.Match[str]) -> str:
    code = ord(match.group(0))
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def inert(text: str, *, lines: bool = False) -> str:
    """``text`` with every control and direction character shown as an escape.

    :param lines: keep newlines and tabs (a multi-line failure text); by default
        they are escaped too (one line of a table or a list).
    """
    pattern = _UNSAFE if lines else _UNSAFE_LINE
    if pattern.search(text) is None:
        return text
    return pattern.sub(_shown, text)
