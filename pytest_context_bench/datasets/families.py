"""Example families, their primary scores, and the JSON Schemas examples are checked against.

A *family* (an example's ``task``) fixes which fields an example carries and which score
decides whether it passed; DESIGN.md §4 "Example fields by family" is the vocabulary.

Each family may ship a JSON Schema (draft 2020-12) as package data, in
``datasets/schemas/<family>.schema.json``; every one builds on ``example.schema.json``
(``id``, ``dataset``, ``task``). A family without a schema file of its own is checked
against the shared ``example`` schema only. Schemas allow fields they do not name.

:class:`DatasetBase` is what every built-in dataset shares (tag, family, ids,
fingerprint, indexing); :class:`MemoryDataset` is one held in memory (HumanEval,
MBPP, LoCoMo).

Two keywords of ours, ignored by JSON Schema itself, word error messages:
``x-expected`` says what a field must hold ("a string, a number or a non-empty list of
strings") and ``x-message`` replaces the whole message of a failed sub-schema.

:func:`example_error` checks one example. For the common, valid case it runs a
hand-written check that mirrors the family's schema and is never more lenient than it;
only when that check refuses an example does it ask ``jsonschema`` (imported then, not
before) for the best error, so loading a large valid file never pays for the import or
for per-example schema validation.
"""

from __future__ import annotations

import hashlib
import json
import operator
from collections.abc import Callable, Iterable, Iterator, Mapping
from functools import cache
from importlib import resources
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Final

from ..errors import ConfigError, DatasetError

if TYPE_CHECKING:
    from jsonschema.exceptions import ValidationError
    from jsonschema.protocols import Validator

__all__ = [
    "FAMILIES",
    "DEFAULT_FAMILY",
    "PRIMARY_SCORE",
    "primary_score",
    "load_schema",
    "example_error",
    "format_field",
    "describe_value",
    "DatasetBase",
    "MemoryDataset",
]

#: Every family, in the order of DESIGN.md §4.
FAMILIES: Final[tuple[str, ...]] = (
    "qa",
    "summarization",
    "multiple_choice",
    "math",
    "code",
    "nli",
    "ifeval",
    "conversation",
    "memory",
)

#: The family of a local file whose examples do not say otherwise.
DEFAULT_FAMILY: Final[str] = "qa"

#: family → the score field PassRate, CostOfPass and the gates use by default.
#: Read-only; ``dict(PRIMARY_SCORE)`` gives a mutable copy.
PRIMARY_SCORE: Final[Mapping[str, str]] = MappingProxyType(
    {
        "qa": "f1",
        "summarization": "rouge_l_f1",
        "multiple_choice": "mc_accuracy",
        "math": "math_equiv",
        "code": "pass_at_1",
        "nli": "nli_accuracy",
        "ifeval": "ifeval_strict",
        "conversation": "judge_score",
        "memory": "f1",
    }
)

_BASE_SCHEMA: Final = "example"
_SCHEMA_SUFFIX: Final = ".schema.json"


def primary_score(family: str) -> str:
    """Return the primary score field of ``family`` (``"f1"`` for ``"qa"``...).

    :param family: one of :data:`FAMILIES`.
    :raises ConfigError: when ``family`` is not a known family.
    """
    try:
        return PRIMARY_SCORE[family]
    except KeyError:
        raise ConfigError(
            f"unknown family {family!r}: expected one of {', '.join(FAMILIES)}."
        ) from None


# --------------------------------------------------------------------------- schemas


@cache
def _schema_texts() -> dict[str, str]:
    """Name → text of every schema shipped in ``datasets/schemas/``."""
    folder = resources.files(__name__.rpartition(".")[0]).joinpath("schemas")
    texts: dict[str, str] = {}
    for entry in folder.iterdir():
        if entry.name.endswith(_SCHEMA_SUFFIX):
            texts[entry.name[: -len(_SCHEMA_SUFFIX)]] = entry.read_text(
                encoding="utf-8"
            )
    return texts


def load_schema(family: str) -> dict[str, Any]:
    """Return (a fresh copy of) the JSON Schema examples of ``family`` are checked against.

    A family without a schema of its own gets the shared ``example`` schema. The
    returned schema may ``$ref`` the shared one by its ``$id``.

    :param family: one of :data:`FAMILIES`.
    :raises ConfigError: when ``family`` is not a known family.
    """
    primary_score(family)  # validates the name
    texts = _schema_texts()
    schema: dict[str, Any] = json.loads(texts.get(family, texts[_BASE_SCHEMA]))
    return schema


@cache
def _validator(family: str) -> Validator:
    """A compiled draft 2020-12 validator for ``family`` (imports jsonschema)."""
    from jsonschema import Draft202012Validator
    from referencing import Registry, Resource

    schemas = [json.loads(text) for text in _schema_texts().values()]
    registry: Registry[Any] = Registry().with_resources(
        (schema["$id"], Resource.from_contents(schema)) for schema in schemas
    )
    return Draft202012Validator(load_schema(family), registry=registry)


# ------------------------------------------------------------------ fast pre-checks


def _base_ok(example: dict[str, Any]) -> bool:
    """Mirror of ``example.schema.json`` (stricter where cheaper: no ``1.0`` ids)."""
    if "id" in example:
        value = example["id"]
        kind = type(value)
        if not ((kind is str and value) or kind is int):
            return False
    if "dataset" in example:
        value = example["dataset"]
        if type(value) is not str or not value:
            return False
    if "task" in example and type(example["task"]) is not str:
        return False
    return True


def _qa_ok(example: dict[str, Any]) -> bool:
    """Mirror of ``qa.schema.json``; ``True`` only for examples the schema accepts."""
    if "answer" not in example:
        return False
    answer = example["answer"]
    kind = type(answer)
    if kind is list:
        if not answer:
            return False
        for item in answer:
            if type(item) is not str:
                return False
    elif kind is not str and kind is not int and kind is not float:
        return False
    has_text = False
    for key in ("context", "question"):
        if key in example:
            if type(example[key]) is not str:
                return False
            has_text = True
    return has_text and _base_ok(example)


#: family → a check that returns True only when the family's schema accepts the
#: example. False means "ask jsonschema", not "invalid".
_FAST_CHECKS: Final[Mapping[str, Callable[[dict[str, Any]], bool]]] = {
    "qa": _qa_ok,
}


def judged_by_field(example: Mapping[str, Any]) -> bool:
    """Whether ``example`` carries a field of ``evaluators.FIELD_EVALUATORS``."""
    from ..evaluators import FIELD_EVALUATORS

    return any(name in example for name in FIELD_EVALUATORS)


def example_error(family: str, example: dict[str, Any]) -> str | None:
    """Check ``example`` against the schema of ``family``.

    :param family: one of :data:`FAMILIES`.
    :param example: the parsed example (a dict).
    :returns: ``None`` when the example is valid, else one sentence without a final
        full stop, naming the field and saying what was expected and what was found,
        e.g. ``field 'answer' must be a string, a number or a non-empty list of
        strings, got null``. The caller adds where (file, line) and how to fix it.
    :raises ConfigError: when ``family`` is not a known family.
    """
    if family == DEFAULT_FAMILY and "answer" not in example and (
        "assert" in example or judged_by_field(example)
    ):
        # The example's own assertions, or a field wiring its evaluator (expected
        # tool calls, an expected trajectory), judge it: no gold answer is needed.
        return None if _base_ok(example) else _describe_base(example, family)
    fast = _FAST_CHECKS.get(family)
    if fast is None and family in PRIMARY_SCORE and family not in _schema_texts():
        fast = _base_ok  # a family without a schema of its own: the shared one only
    if fast is not None and fast(example):
        return None
    from jsonschema.exceptions import best_match

    error = best_match(_validator(family).iter_errors(example))
    if error is None:
        return None
    return _describe_error(error, family)


def _describe_base(example: dict[str, Any], family: str) -> str | None:
    from jsonschema.exceptions import best_match

    schema = json.loads(_schema_texts()[_BASE_SCHEMA])
    from jsonschema import Draft202012Validator

    error = best_match(Draft202012Validator(schema).iter_errors(example))
    return None if error is None else _describe_error(error, family)


# ------------------------------------------------------------------ error wording


def format_field(path: Iterable[str | int]) -> str:
    """Write a JSON path as ``answer``, ``answer[2]`` or ``turns[0].role``."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        elif part.isidentifier():
            out += f".{part}" if out else part
        else:
            out += f"[{json.dumps(part, ensure_ascii=False)}]"
    return out


def describe_value(value: Any) -> str:
    """Word a JSON value for an error message: ``null``, ``5``, ``an empty list``..."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        if not value:
            return "an empty string"
        shown = json.dumps(value if len(value) <= 40 else value[:37] + "...")
        return f"the string {shown}"
    if isinstance(value, list):
        if not value:
            return "an empty list"
        return f"a list of {len(value)} item{'s' if len(value) != 1 else ''}"
    if isinstance(value, dict):
        return "an object"
    return f"a {type(value).__name__}"


def _chain(error: ValidationError) -> Iterable[ValidationError]:
    """The error, then each enclosing ``anyOf``/``oneOf`` error."""
    from jsonschema import exceptions

    current = error
    while True:
        yield current
        parent = current.parent
        if not isinstance(parent, exceptions.ValidationError):
            return
        current = parent


def _keyword(error: ValidationError, key: str) -> str | None:
    schema = error.schema
    if isinstance(schema, dict):
        value = schema.get(key)
        if isinstance(value, str):
            return value
    return None


def _describe_error(error: ValidationError, family: str) -> str:
    for link in _chain(error):
        message = _keyword(link, "x-message")
        if message is not None:
            return message
    required = error.validator_value
    if (
        error.validator == "required"
        and isinstance(error.instance, dict)
        and isinstance(required, list)
    ):
        missing = [key for key in required if key not in error.instance]
        if missing:
            name = format_field([*error.absolute_path, missing[0]])
            properties = (
                error.schema.get("properties", {})
                if isinstance(error.schema, dict)
                else {}
            )
            expected = properties.get(missing[0], {}).get("x-expected")
            tail = f", as {expected}" if isinstance(expected, str) else ""
            return f"field {name!r} is missing; a {family} example needs it{tail}"
    for link in _chain(error):
        expected = _keyword(link, "x-expected")
        if expected is not None:
            name = format_field(link.absolute_path)
            found = describe_value(link.instance)
            return f"field {name!r} must be {expected}, got {found}"
    if error.absolute_path:
        return (
            f"field {format_field(error.absolute_path)!r} is invalid: {error.message}"
        )
    return f"the example is invalid: {error.message}"


class DatasetBase:
    """The identity half of the ``Dataset`` protocol, shared by every built-in dataset.

    Subclasses set ``_tag``, ``_family``, ``_fingerprint`` and ``_ids`` and add
    ``__len__``, ``__getitem__`` and ``location``.
    """

    _tag: str
    _family: str
    _fingerprint: str
    _ids: list[str]

    @property
    def tag(self) -> str:
        """The dataset tag (the name in item ids and per-dataset results)."""
        return self._tag

    @property
    def family(self) -> str:
        """The family every example belongs to (``qa``, ``code``...)."""
        return self._family

    #: The ``metric`` names of the examples' assertions (docs/assertions.md), or
    #: ``None`` when no example carries ``assert``.
    assertion_metrics: frozenset[str] | None = None

    #: The fields of ``evaluators.FIELD_EVALUATORS`` (``expected_tool_calls``,
    #: ``expected_trajectory``, ``rubric``) that at least one example carries: each
    #: wires its evaluator (ToolCallMatch, TrajectoryMatch, LLMJudge), which judges
    #: those examples.
    evaluator_fields: frozenset[str] = frozenset()

    #: Whether an example's assertions ask an LLM judge (``llm-rubric``): the run
    #: then needs one (--ctxbench-judge-url).
    judge_assertions: bool = False

    @property
    def primary_score(self) -> str:
        """The score field that decides whether an example passed (``f1`` for qa)."""
        return PRIMARY_SCORE[self._family]

    @property
    def fingerprint(self) -> str:
        """The sha256 (hex) of the dataset's content."""
        return self._fingerprint

    @property
    def ids(self) -> list[str]:
        """The example ids, in order; the dataset's own list, returned without a copy
        so that ``ids[i]`` stays O(1) per example: do not mutate it."""
        return self._ids

    def __len__(self) -> int:
        return len(self._ids)

    def __iter__(self) -> Iterator[dict[str, Any]]:
        for index in range(len(self._ids)):
            yield self[index]

    def __getitem__(self, index: int) -> dict[str, Any]:
        raise NotImplementedError

    def _position(self, index: int) -> int:
        """``index`` as a position in ``0..len-1`` (negative ones count from the end);
        :class:`IndexError` outside."""
        count = len(self._ids)
        i = operator.index(index)
        if i < 0:
            i += count
        if not 0 <= i < count:
            raise IndexError(
                f"example index {index} is out of range: {self._tag} has {count} "
                f"example{'s' if count != 1 else ''}."
            )
        return i


class MemoryDataset(DatasetBase):
    """A dataset held in memory (packaged or downloaded problems).

    ``dataset[i]`` returns a new dict every time, with ``id`` and ``dataset`` set.

    :param tag: the dataset tag (``humaneval``).
    :param family: the family of every example.
    :param records: the examples; each needs a unique ``id``.
    :param source: where they were read from (a path or ``hub:name``), for
        :meth:`location` and error messages.
    """

    def __init__(
        self, *, tag: str, family: str, records: list[dict[str, Any]], source: str
    ) -> None:
        self._tag = tag
        self._family = family
        self._records = records
        self._source = source
        self._ids = [str(r["id"]) for r in records]
        if len(set(self._ids)) != len(self._ids):
            raise DatasetError(f"{tag}: two problems share an id.", path=source)
        digest = hashlib.sha256()
        for record in records:
            digest.update(json.dumps(record, sort_keys=True, default=str).encode())
            digest.update(b"\n")
        self._fingerprint = digest.hexdigest()

    @property
    def source(self) -> str:
        """Where the examples were read from."""
        return self._source

    def __getitem__(self, index: int) -> dict[str, Any]:
        record = self._records[self._position(index)]
        example = {k: list(v) if isinstance(v, list) else v for k, v in record.items()}
        example.setdefault("dataset", self._tag)
        return example

    def location(self, index: int) -> tuple[str, int]:
        """The source and the 1-based record number of example ``index``."""
        return self._source, self._position(index) + 1

    def __repr__(self) -> str:
        return (f"MemoryDataset(tag={self._tag!r}, source={self._source!r}, "
                f"examples={len(self._records)})")
