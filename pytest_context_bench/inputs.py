"""What a run takes in, checked before its first call: the systems, the examples and
each example's primary score field.

Shared by :func:`~pytest_context_bench.evaluate`,
:func:`~pytest_context_bench.evaluate_memory` and the pytest plugin.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from .errors import ConfigError, SystemLoadError

__all__ = [
    "check_unique_names",
    "load_examples",
    "prepare_run",
    "primary_score_field",
]


def check_unique_names(systems: Iterable[Any]) -> None:
    """Raise SystemLoadError when two systems share a name (their rows would merge)."""
    seen: dict[str, Any] = {}
    for s in systems:
        if s.name in seen:
            raise SystemLoadError(
                f"two systems are named {s.name!r} ({type(seen[s.name]).__name__} and"
                f" {type(s).__name__}); their results would merge. Give each a"
                " distinct `name`."
            )
        seen[s.name] = s


def prepare_run(
    systems: Any, check: Callable[..., None], max_examples: int | None, *, caller: str
) -> list[Any]:
    """The systems as a checked list with unique names, and ``max_examples`` checked
    (shared by :func:`evaluate` and ``evaluate_memory``)."""
    system_list = list(systems) if isinstance(systems, (list, tuple)) else [systems]
    if not system_list:
        raise ConfigError(f"{caller}() needs at least one system.")
    for i, s in enumerate(system_list):
        check(s, origin=f"systems[{i}]")
    check_unique_names(system_list)
    if max_examples is not None and max_examples < 0:
        raise ConfigError(f"max_examples must be >= 0, got {max_examples}.")
    return system_list


def load_examples(
    dataset: Any, max_examples: int | None
) -> tuple[list[dict[str, Any]], Any]:
    """Materialise ``dataset`` (a spec string, a Dataset or an iterable of dicts).

    :return: the examples (each with a str ``id``), and the dataset object when it
        was an indexable Dataset (``None`` for a plain iterable).
    """
    from .datasets import resolve_dataset

    source: Any = resolve_dataset(dataset) if isinstance(dataset, str) else dataset
    if hasattr(source, "ids") and hasattr(source, "__getitem__"):
        n = len(source) if max_examples is None else min(len(source), max_examples)
        return [source[i] for i in range(n)], source
    examples: list[dict[str, Any]] = []
    for index, ex in enumerate(source):
        if max_examples is not None and index >= max_examples:
            break
        if not isinstance(ex, dict):
            raise ConfigError(
                f"dataset item {index} is {type(ex).__name__}; examples must be dicts."
            )
        ex = dict(ex)
        ex["id"] = str(ex.get("id", index))
        examples.append(ex)
    return examples, None


#: (field_primary_score, primary_score), imported on first use (asked once per
#: example: a function-level import of a package costs more than the lookup)
_PRIMARY: tuple[Callable[[dict[str, Any]], str | None], Callable[[str], str]] | None = None


def _primary_lookups() -> tuple[Callable[[dict[str, Any]], str | None], Callable[[str], str]]:
    global _PRIMARY
    if _PRIMARY is None:
        from .datasets import primary_score
        from .evaluators import field_primary_score

        _PRIMARY = (field_primary_score, primary_score)
    return _PRIMARY


def primary_score_field(example: dict[str, Any], source: Any) -> str:
    """The score field an example is judged on: ``assert_score`` when it carries
    assertions, else the score of its first field of ``FIELD_EVALUATORS``
    (``tool_call_match`` for expected tool calls, ``trajectory_match`` for an
    expected trajectory), else its dataset's, else its family's (``task``), else
    ``f1``."""
    field_primary_score, primary_score = _primary_lookups()
    if "assert" in example:
        return "assert_score"  # its own assertions judge it (docs/assertions.md)
    own = field_primary_score(example)
    if own is not None:
        return own  # its expected calls or steps judge it (docs/evaluators.md)
    if source is not None and getattr(source, "primary_score", None):
        return str(source.primary_score)
    task = example.get("task")
    if isinstance(task, str):
        try:
            return primary_score(task)
        except Exception:
            pass
    return "f1"
