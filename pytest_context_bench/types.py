"""The protocols a user implements: System, MemorySystem, Evaluator, Metric.

All are :class:`typing.Protocol` classes: implement the attributes on any class, no
import from this package is needed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    from .results import EvalRow

__all__ = ["System", "MemorySystem", "Evaluator", "Metric", "Tokenizer"]


@runtime_checkable
class System(Protocol):
    """The thing under test: turns an example into a processed example.

    By convention ``process`` returns ``{**example, "response": text}``; a compressor
    may rewrite ``context`` instead. An optional ``api_usage`` dict
    (``prompt_tokens``, ``completion_tokens``) is the System's own account of what it
    spent. A System may also define ``process_conversation(turns) -> list[dict]`` for
    multi-turn examples.
    """

    @property
    def name(self) -> str: ...

    def process(self, example: dict[str, Any]) -> dict[str, Any]: ...


@runtime_checkable
class MemorySystem(Protocol):
    """A memory layer: ingests a conversation, then answers questions about it."""

    @property
    def name(self) -> str: ...

    def reset(self) -> None: ...

    def ingest(self, turns: list[dict[str, Any]]) -> None: ...

    def query(self, question: str) -> str: ...


@runtime_checkable
class Evaluator(Protocol):
    """Scores one (original, processed) pair.

    Returns ``{score_name: float}``. An evaluator that cannot judge an example (the
    fields it needs are absent) returns ``{}``: it never invents a 0 or a 1.
    """

    @property
    def name(self) -> str: ...

    def score(
        self, original: dict[str, Any], processed: dict[str, Any]
    ) -> dict[str, float]: ...


@runtime_checkable
class Metric(Protocol):
    """Aggregates the rows of one system (or suite) into summary values."""

    @property
    def name(self) -> str: ...

    def compute(self, rows: list[EvalRow]) -> dict[str, float]: ...


class Tokenizer(Protocol):
    """Anything that counts the tokens of a string."""

    def __call__(self, text: str) -> int: ...
