"""promptfoo configs and tests files, read as ctxbench examples.

``pytest --ctxbench-dataset=promptfooconfig.yaml`` runs a promptfoo config's tests:
:func:`load_promptfoo` reads the config (or a bare tests file: YAML, JSON or CSV) and
returns one :class:`PromptfooSuite` per prompt, whose examples are ready to score.
:func:`read_yaml_examples` reads a plain (non-promptfoo) YAML dataset.

What this module promises:

- **Local and inert.** It reads files and nothing else: no network, no subprocess,
  none of the user's JavaScript or Python is run (it never imports pytest either).
  Relative ``file://`` references are read from the config's directory, as promptfoo
  reads them.
- **promptfoo's semantics** for what it reads: ``defaultTest`` merging, var arrays
  expanded into one test per combination, ``file://`` vars, prompt files split on
  ``---`` lines, chat prompts, CSV ``__expected`` columns and ``{{var}}`` rendering.
  Each mirrored behaviour is named in a comment where it is implemented.
- **Nothing skipped in silence.** Whatever promptfoo would run and ctxbench does not
  (providers, JavaScript assertions, transforms, scenarios, ...) is named in the
  suite's ``notes``. Assertion types that promptfoo does not know either (a typo) are
  kept, so the assertion engine can report them.
- **Every problem is one** :class:`~pytest_context_bench.errors.DatasetError`
  naming the file, the line when there is one, and how to fix it.
- **PyYAML is optional**: it is imported only to read a YAML file. YAML is read with
  YAML 1.2 core rules, as promptfoo's js-yaml reads it (``yes``/``no`` and ``on`` stay
  strings, ``012`` is twelve, dates stay strings), and duplicate keys are errors.
"""

from __future__ import annotations

import bisect
import copy
import csv
import difflib
import functools
import glob
import io
import json
import math
import os
import re
from collections.abc import Generator, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, NoReturn

from .._files import not_regular
from .._json import JSONValueError, js_number as _js_number, strict_decoder, strict_loads
from ..errors import DatasetError

__all__ = [
    "ASSERTION_TYPES_RUN",
    "PROMPTFOO_ASSERTION_TYPES",
    "YAML_SUFFIXES",
    "PromptfooSuite",
    "load_promptfoo",
    "looks_like_promptfoo",
    "needs_yaml",
    "read_yaml_examples",
    "render_template",
]

#: The suffixes read as YAML.
YAML_SUFFIXES: Final = (".yaml", ".yml")

# promptfoo's own assertion types (its BaseAssertionTypesSchema, in its order: the CSV
# `__expected` parser tries them as regex alternatives in this order).
_PROMPTFOO_BASE_TYPES: Final = (
    "agent-rubric", "answer-relevance", "bleu", "classifier", "contains",
    "contains-all", "contains-any", "contains-html", "contains-json", "contains-sql",
    "contains-xml", "context-faithfulness", "context-recall", "context-relevance",
    "conversation-relevance", "cost", "equals", "factuality", "finish-reason",
    "g-eval", "gleu", "guardrails", "icontains", "icontains-all", "icontains-any",
    "is-html", "is-json", "is-refusal", "is-sql", "is-valid-function-call",
    "is-valid-openai-function-call", "is-valid-openai-tools-call", "is-xml",
    "javascript", "latency", "levenshtein", "llm-rubric", "pi", "meteor",
    "model-graded-closedqa", "model-graded-factuality", "moderation", "perplexity",
    "perplexity-score", "python", "regex", "rouge-n", "ruby", "similar",
    "similar:cosine", "similar:dot", "similar:euclidean", "starts-with",
    "tool-call-f1", "skill-used", "trajectory:goal-success",
    "trajectory:tool-args-match", "trajectory:step-count", "trajectory:tool-sequence",
    "trajectory:tool-used", "trace-error-spans", "trace-span-count",
    "trace-span-duration", "search-rubric", "webhook", "word-count",
)  # fmt: skip
_PROMPTFOO_SPECIAL_TYPES: Final = ("select-best", "human", "max-score")
_RUN_BASE_TYPES: Final = (
    "equals", "contains", "icontains", "contains-any", "contains-all",
    "icontains-any", "icontains-all", "starts-with", "regex", "is-json",
    "contains-json", "levenshtein", "python", "llm-rubric", "latency", "cost",
)  # fmt: skip

#: The assertion types ctxbench runs: each also with ``not-``, and ``assert-set``.
ASSERTION_TYPES_RUN: Final = frozenset(
    _RUN_BASE_TYPES + tuple(f"not-{t}" for t in _RUN_BASE_TYPES) + ("assert-set",)
)
#: Every assertion type promptfoo defines (``not-`` forms included).
PROMPTFOO_ASSERTION_TYPES: Final = frozenset(
    _PROMPTFOO_BASE_TYPES
    + tuple(f"not-{t}" for t in _PROMPTFOO_BASE_TYPES)
    + _PROMPTFOO_SPECIAL_TYPES
    + ("assert-set",)
)

# The keys of a promptfoo test case (its TestCaseSchema).
_TEST_KEYS: Final = (
    "description", "vars", "provider", "providers", "prompts", "providerOutput",
    "assert", "assertScoringFunction", "options", "threshold", "metadata",
)  # fmt: skip
# A test must hold one of these (promptfoo's readTest refuses an empty test).
_TEST_CONTENT_KEYS: Final = (
    "assert",
    "vars",
    "options",
    "metadata",
    "provider",
    "providerOutput",
    "threshold",
)
# Fields of an example that a var may not take. `prompt` is allowed when the suite has
# no prompt of its own (promptfoo's default prompt is then "{{prompt}}").
_RESERVED_VARS: Final = (
    "id",
    "dataset",
    "assert",
    "prompt",
    "threshold",
    "task",
    "vars_",
)
# The test options ctxbench applies; every other key is named in the notes.
_APPLIED_OPTIONS: Final = (
    "prefix",
    "suffix",
    "disableVarExpansion",
    "disableDefaultAsserts",
)
# Test keys whose effect ctxbench does not have: note -> what is said.
_TEST_EXTRAS: Final = {
    "provider": (
        "per-test providers",
        "ctxbench runs your --ctxbench-system or --ctxbench-proxy instead",
    ),
    "providers": ("per-test provider filters", "not applied; every test runs"),
    "providerOutput": ("providerOutput", "not used; your system is called instead"),
    "assertScoringFunction": ("assertScoringFunction", "not applied"),
}
# CSV columns with a meaning of their own (promptfoo's testCaseFromCsvRow).
_CSV_SPECIAL: Final = (
    "__description", "__threshold", "__metric", "__prefix", "__suffix",
    "__providerOutput",
)  # fmt: skip
_CSV_SINGLE_UNDERSCORE: Final = tuple(
    f"_{k}"
    for k in ("expected", "prefix", "suffix", "description", "providerOutput",
              "metric", "threshold", "metadata", "config")
)  # fmt: skip

# Config keys read here, or that change nothing about the tests' results.
_CONFIG_KEYS_READ: Final = (
    "prompts", "tests", "defaultTest", "providers", "targets", "description", "tags",
    "env", "metadata", "sharing", "$schema", "writeLatestResults",
)  # fmt: skip
# Config keys promptfoo acts on and ctxbench does not: note -> what is said.
_CONFIG_KEYS_NOTED: Final = {
    "scenarios": "not run",
    "derivedMetrics": "not computed",
    "nunjucksFilters": "not loaded (a prompt that uses one is an error)",
    "extensions": "not run",
    "outputPath": "not written; use ctxbench's reports",
    "evaluateOptions": "not applied",
    "commandLineOptions": "not applied",
    "redteam": "not run",
    "plugins": "not run",
    "strategies": "not run",
    "tracing": "not applied",
}

_JS_SUFFIXES: Final = (".js", ".cjs", ".mjs", ".ts", ".cts", ".mts")
_SCRIPT_SUFFIXES: Final = _JS_SUFFIXES + (".py", ".rb", ".go")
_MEDIA_SUFFIXES: Final = (
    ".jpg", ".jpeg", ".png", ".gif", ".bmp", ".webp", ".svg", ".mp4", ".webm", ".ogg",
    ".mov", ".avi", ".wmv", ".mkv", ".m4v", ".wav", ".mp3", ".aac", ".m4a", ".flac",
    ".wma", ".aiff", ".opus", ".pdf",
)  # fmt: skip
_PROMPT_FILE_SUFFIXES: Final = (
    ".txt",
    ".md",
    ".j2",
    ".json",
    ".jsonl",
    ".yaml",
    ".yml",
    ".csv",
)
_REMOTE_PREFIXES: Final = (
    "huggingface://", "az://", "https://", "http://", "portkey://", "langfuse://",
    "helicone://", "exec:", "package:",
)  # fmt: skip
_GLOB_MAGIC: Final = re.compile(r"[*?[]")
_YAML_NEEDED: Final = "needs PyYAML: pip install 'pytest-context-bench[yaml]'"

# looks_like_promptfoo reads no more than this of a YAML or CSV file, and skips JSON
# files bigger than this: a guess made while collecting must stay cheap.
_SNIFF_BYTES: Final = 256 * 1024
_SNIFF_JSON_BYTES: Final = 32 * 1024 * 1024


def needs_yaml(path: str | os.PathLike[str] | None = None) -> None:
    """Raise :class:`DatasetError` when PyYAML cannot be imported.

    :param path: the YAML file about to be read, named in the message.
    :raises DatasetError: ``reading <file> needs PyYAML: pip install
        'pytest-context-bench[yaml]'``.
    """
    try:
        import yaml  # noqa: F401
    except ImportError:
        shown = os.fspath(path) if path is not None else "a YAML file"
        error = DatasetError(f"reading {shown} {_YAML_NEEDED}")
        error.path = None if path is None else os.fspath(path)
        raise error from None


# ====================================================================== data shapes


@dataclass(frozen=True)
class PromptfooSuite:
    """The tests of a promptfoo config for one of its prompts.

    :param path: the config or tests file read.
    :param tag: the dataset tag: the file's stem, with ``:<prompt label>`` when the
        config has several prompts.
    :param prompt_label: the prompt's label (``label``, else ``id``, else
        ``prompt1``, ``prompt2``...); ``None`` when the tests run with no prompt.
    :param examples: one dict per test (after the ``defaultTest`` merge and the var
        expansion): the vars as fields, ``id``, ``description``, ``prompt``,
        ``assert``, ``threshold`` and ``metadata`` when they apply.
    :param lines: for each example, the 1-based line its test starts on.
    :param sources: for each example, the file its test was read from.
    :param notes: one sentence per kind of thing promptfoo would run and ctxbench
        does not; empty when there is none.
    """

    path: str
    tag: str
    prompt_label: str | None
    examples: tuple[dict[str, Any], ...]
    lines: tuple[int, ...]
    sources: tuple[str, ...]
    notes: tuple[str, ...]


def _fail(message: str, path: str | None, line: int | None = None) -> NoReturn:
    raise DatasetError(message, path=path, line=line)


# ============================================================ line-aware documents


class _Lines:
    """Where each mapping and list of the parsed documents starts (by object id).

    The parsed objects are kept alive here, so their ids stay unique while the
    registry lives (one :func:`load_promptfoo` call)."""

    def __init__(self) -> None:
        self.maps: dict[int, int] = {}
        self.keys: dict[int, dict[str, int]] = {}
        self.items: dict[int, list[int]] = {}
        self._keep: list[Any] = []

    def record_map(self, mapping: Any, line: int, keys: dict[str, int]) -> None:
        self._keep.append(mapping)
        self.maps[id(mapping)] = line
        self.keys[id(mapping)] = keys

    def record_seq(self, seq: Any, lines: list[int]) -> None:
        self._keep.append(seq)
        self.items[id(seq)] = lines

    def of(self, obj: Any) -> int | None:
        return self.maps.get(id(obj))

    def key(self, mapping: Any, key: str) -> int | None:
        found = self.keys.get(id(mapping), {}).get(key)
        return found if found is not None else self.of(mapping)

    def item(self, seq: Any, index: int) -> int | None:
        lines = self.items.get(id(seq))
        if lines is None or index >= len(lines):
            return None
        return lines[index]


class _Problem(Exception):
    """A problem found while constructing a YAML document, with its line."""

    def __init__(self, message: str, line: int) -> None:
        super().__init__(message)
        self.message = message
        self.line = line


@functools.cache
def _loader_class(string_keys: bool) -> Any:
    """A safe YAML loader with YAML 1.2 core rules that records lines.

    ``string_keys``: a key that is not a string is an error (plain datasets); when
    False it is read as its text, as js-yaml (promptfoo) turns keys into strings."""
    import yaml
    from yaml.constructor import ConstructorError, SafeConstructor
    from yaml.nodes import MappingNode, ScalarNode, SequenceNode
    from yaml.resolver import BaseResolver

    class Resolver(BaseResolver):
        pass

    # The YAML 1.2 core schema, which js-yaml (promptfoo's reader) uses: only
    # true/false are booleans, 012 is decimal, and there are no implicit dates.
    Resolver.add_implicit_resolver(
        "tag:yaml.org,2002:bool",
        re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"),
        list("tTfF"),
    )
    Resolver.add_implicit_resolver(
        "tag:yaml.org,2002:int",
        re.compile(r"^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$"),
        list("-+0123456789"),
    )
    Resolver.add_implicit_resolver(
        "tag:yaml.org,2002:float",
        re.compile(
            r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?"
            r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$"
        ),
        list("-+0123456789."),
    )
    Resolver.add_implicit_resolver(
        "tag:yaml.org,2002:null",
        re.compile(r"^(?:~|null|Null|NULL|)$"),
        ["~", "n", "N", ""],
    )
    Resolver.add_implicit_resolver(
        "tag:yaml.org,2002:merge", re.compile(r"^(?:<<)$"), ["<"]
    )

    class Constructor(SafeConstructor):
        registry: _Lines

        def key_of(self, node: Any) -> str:
            key = self.construct_object(node, deep=True)
            if isinstance(key, str):
                return key
            line = node.start_mark.line + 1
            if not isinstance(node, ScalarNode):
                raise _Problem("a key is a list or a mapping; write a string key", line)
            if string_keys:
                raise _Problem(
                    f"the key {node.value} is not a string; quote it"
                    f' ("{node.value}": ...)',
                    line,
                )
            return str(node.value)  # js-yaml reads `1:` or `true:` as "1" / "true"

        def construct_mapping(self, node: Any, deep: bool = False) -> dict[Any, Any]:
            if not isinstance(node, MappingNode):
                raise ConstructorError(
                    None, None, f"expected a mapping, found {node.id}", node.start_mark
                )
            seen: dict[str, int] = {}
            for key_node, _ in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":
                    continue  # `<<:` keys may be overridden: that is what they are for
                key = self.key_of(key_node)
                if key in seen:
                    raise _Problem(
                        f"the key {key!r} appears twice in one mapping (first on line"
                        f" {seen[key]}); remove or rename one of them",
                        key_node.start_mark.line + 1,
                    )
                seen[key] = key_node.start_mark.line + 1
            self.flatten_mapping(node)
            mapping: dict[Any, Any] = {}
            for key_node, value_node in node.value:
                key = self.key_of(key_node)
                mapping[key] = self.construct_object(value_node, deep=deep)
            return mapping

        def construct_yaml_map(
            self, node: Any
        ) -> Generator[dict[Any, Any], None, None]:
            data: dict[Any, Any] = {}
            yield data
            data.update(self.construct_mapping(node))
            keys = {self.key_of(k): k.start_mark.line + 1 for k, _ in node.value}
            self.registry.record_map(data, node.start_mark.line + 1, keys)

        def construct_yaml_seq(self, node: Any) -> Generator[list[Any], None, None]:
            data: list[Any] = []
            yield data
            if not isinstance(node, SequenceNode):
                raise ConstructorError(
                    None, None, f"expected a sequence, found {node.id}", node.start_mark
                )
            data.extend(self.construct_object(child) for child in node.value)
            self.registry.record_seq(
                data, [child.start_mark.line + 1 for child in node.value]
            )

        def construct_yaml_int(self, node: Any) -> int:
            text = str(self.construct_scalar(node))
            if text.startswith("0o"):
                return int(text, 0)
            if text.startswith("0x"):
                return int(text, 0)
            try:
                return int(text, 10)  # YAML 1.2: 012 is twelve
            except ValueError:
                try:
                    return int(text.replace("_", ""), 0)
                except ValueError:
                    raise ConstructorError(
                        None, None, f"{text!r} is not an integer", node.start_mark
                    ) from None

        def construct_yaml_float(self, node: Any) -> float:
            text = str(self.construct_scalar(node)).lower()
            if text.endswith(".inf"):
                return -math.inf if text.startswith("-") else math.inf
            if text == ".nan":
                return math.nan
            try:
                return float(text.replace("_", ""))
            except ValueError:
                raise ConstructorError(
                    None, None, f"{text!r} is not a number", node.start_mark
                ) from None

        def construct_yaml_bool(self, node: Any) -> bool:
            return str(self.construct_scalar(node)).lower() == "true"

        def construct_yaml_timestamp(self, node: Any) -> str:  # type: ignore[override]
            return str(self.construct_scalar(node))  # dates stay text (JSON has none)

    for tag, method in (
        ("map", Constructor.construct_yaml_map),
        ("seq", Constructor.construct_yaml_seq),
        ("int", Constructor.construct_yaml_int),
        ("float", Constructor.construct_yaml_float),
        ("bool", Constructor.construct_yaml_bool),
        ("timestamp", Constructor.construct_yaml_timestamp),
    ):
        Constructor.add_constructor(f"tag:yaml.org,2002:{tag}", method)  # type: ignore[type-var]

    if getattr(yaml, "__with_libyaml__", False):
        from yaml._yaml import CParser  # libyaml's scanner and parser: much faster

        class Loader(CParser, Constructor, Resolver):
            def __init__(self, stream: str) -> None:
                CParser.__init__(self, stream)
                Constructor.__init__(self)
                Resolver.__init__(self)

    else:  # pragma: no cover - depends on how PyYAML was built

        class Loader(  # type: ignore[no-redef]
            yaml.reader.Reader,
            yaml.scanner.Scanner,
            yaml.parser.Parser,
            yaml.composer.Composer,
            Constructor,
            Resolver,
        ):
            def __init__(self, stream: str) -> None:
                yaml.reader.Reader.__init__(self, stream)
                yaml.scanner.Scanner.__init__(self)
                yaml.parser.Parser.__init__(self)
                yaml.composer.Composer.__init__(self)
                Constructor.__init__(self)
                Resolver.__init__(self)

    return Loader


def _parse_yaml(
    path: str, text: str, registry: _Lines, *, string_keys: bool = False
) -> Any:
    """The value of a YAML document (``None`` when empty); errors name the line."""
    needs_yaml(path)
    import yaml

    loader = _loader_class(string_keys)(text)
    loader.registry = registry
    try:
        data = loader.get_single_data()
        if "*" in text and _expanded_size(data) > _MAX_EXPANDED:
            # Aliases share one object each; everything after (JSON copies, checks,
            # reports) would copy them out: a few lines of "billion laughs" become
            # 10^9 values. Refused before anything expands them.
            _fail(
                f"its aliases (*name) expand to more than {_MAX_EXPANDED:,} values;"
                " write the repeated parts out, or use fewer levels of aliases",
                path,
            )
        return data
    except _Problem as exc:
        _fail(f"{exc.message}.", path, exc.line)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        problem = exc.problem or exc.context or "it cannot be parsed"
        if "expected a single document" in str(exc):
            problem = "it holds more than one document (a `---` line between two)"
        _fail(
            f"the file is not valid YAML: {problem}. Fix the file.",
            path,
            None if mark is None else mark.line + 1,
        )
    except yaml.YAMLError as exc:
        _fail(f"the file is not valid YAML: {exc}. Fix the file.", path)
    except RecursionError:
        _fail("the file is nested too deeply to read. Flatten it.", path)
    finally:
        loader.dispose()


#: The most values a YAML document may hold once its aliases are expanded.
_MAX_EXPANDED: Final = 1_000_000


def _expanded_size(value: Any) -> int:
    """How many values ``value`` holds written out (shared objects counted each
    time they appear), computed once per object; stops early past the cap."""
    sizes: dict[int, int] = {}

    def size(v: Any) -> int:
        if not isinstance(v, (dict, list)):
            return 1
        known = sizes.get(id(v))
        if known is not None:
            return known
        sizes[id(v)] = _MAX_EXPANDED + 1  # a cycle counts as too big
        children = v.values() if isinstance(v, dict) else v
        total = 1
        for child in children:
            total += size(child)
            if total > _MAX_EXPANDED:
                break
        sizes[id(v)] = total
        return total

    return size(value)


_WS: Final = re.compile(r"[ \t\n\r]*")


def _parse_json(path: str, text: str, registry: _Lines) -> Any:
    """The value of a JSON document; every object's line is recorded."""
    try:
        strict_loads(text)  # the precise syntax error, and no NaN or deep nesting
    except json.JSONDecodeError as exc:
        _fail(
            f"the file is not valid JSON: {exc.msg} at column {exc.colno}. Fix the file.",
            path,
            exc.lineno,
        )
    except JSONValueError as exc:
        _fail(f"the file cannot be used: {exc}. Fix the file.", path)
    newlines = [m.start() for m in re.finditer("\n", text)]

    def line(index: int) -> int:
        return bisect.bisect_left(newlines, index) + 1

    # The text is valid JSON: this walk only rebuilds it, noting where things start.
    def value(i: int) -> tuple[Any, int]:
        char = text[i]
        if char == "{":
            obj: dict[str, Any] = {}
            keys: dict[str, int] = {}
            start = line(i)
            i = _WS.match(text, i + 1).end()  # type: ignore[union-attr]
            if text[i] == "}":
                registry.record_map(obj, start, keys)
                return obj, i + 1
            while True:
                key, i = json.decoder.scanstring(text, i + 1)  # type: ignore[attr-defined]
                if key in keys:
                    _fail(
                        f"the key {key!r} appears twice in one object (first on line"
                        f" {keys[key]}); remove or rename one of them.",
                        path,
                        line(i),
                    )
                keys[key] = line(i)
                i = _WS.match(text, i).end() + 1  # type: ignore[union-attr]
                i = _WS.match(text, i).end()  # type: ignore[union-attr]
                obj[key], i = value(i)
                i = _WS.match(text, i).end()  # type: ignore[union-attr]
                if text[i] == "}":
                    registry.record_map(obj, start, keys)
                    return obj, i + 1
                i = _WS.match(text, i + 1).end()  # type: ignore[union-attr]
        if char == "[":
            items: list[Any] = []
            item_lines: list[int] = []
            i = _WS.match(text, i + 1).end()  # type: ignore[union-attr]
            if text[i] == "]":
                registry.record_seq(items, item_lines)
                return items, i + 1
            while True:
                item_lines.append(line(i))
                item, i = value(i)
                items.append(item)
                i = _WS.match(text, i).end()  # type: ignore[union-attr]
                if text[i] == "]":
                    registry.record_seq(items, item_lines)
                    return items, i + 1
                i = _WS.match(text, i + 1).end()  # type: ignore[union-attr]
        if char == '"':
            string, end = json.decoder.scanstring(text, i + 1)  # type: ignore[attr-defined]
            return string, end
        return strict_decoder.raw_decode(text, i)

    start = _WS.match(text, 0).end()  # type: ignore[union-attr]
    if text.startswith("\ufeff"):
        start = _WS.match(text, 1).end()  # type: ignore[union-attr]
    return value(start)[0]


# ============================================================================ files


@dataclass(frozen=True)
class _Ref:
    """Who refers to a file: named when the file is missing or unreadable."""

    path: str
    line: int | None
    what: str = "file"


def _read_text(path: str, ref: _Ref | None = None) -> str:
    """The UTF-8 text of a file (a byte-order mark is dropped)."""
    where, at = (ref.path, ref.line) if ref is not None else (path, None)
    named = "the file"
    if ref is not None:
        named = (
            ref.what.format(path=path)
            if "{path}" in ref.what
            else f"the {ref.what} {path}"
        )
    problem = not_regular(path)
    if problem is not None:
        _fail(f"{named}: {problem}.", where, at)
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except FileNotFoundError:
        hint = ""
        if ref is not None:
            hint = (
                " (a relative file:// path is read from the directory of the config,"
                f" {os.path.dirname(os.path.abspath(ref.path)) or '.'})"
            )
        _fail(f"{named} does not exist{hint}. Check the path.", where, at)
    except IsADirectoryError:
        _fail(
            f"{named} is a directory, not a file. Give the path of a file.", where, at
        )
    except OSError as exc:
        _fail(
            f"{named} cannot be read ({exc.strerror}). Check its permissions.",
            where,
            at,
        )
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        _fail(
            f"{named} is not UTF-8 text (byte {exc.start}). Save it as UTF-8.",
            path,
            line,
        )


def _suffix(path: str) -> str:
    return os.path.splitext(path)[1].lower()


def _parse_file(path: str, registry: _Lines, ref: _Ref | None = None) -> Any:
    """A YAML or JSON file's value (JSON by its suffix, YAML otherwise)."""
    if _suffix(path) in YAML_SUFFIXES:
        needs_yaml(path)
    text = _read_text(path, ref)
    if _suffix(path) == ".json":
        return _parse_json(path, text, registry)
    return _parse_yaml(path, text, registry)


def _strip_file(ref: str) -> str:
    return ref.removeprefix("file://")


def _split_function(ref: str) -> tuple[str, str | None]:
    """``path:fn`` -> (path, fn) for script references (a drive letter is no function)."""
    colon = ref.rfind(":")
    if colon > 1:
        head = ref[:colon]
        if head.lower().endswith(_SCRIPT_SUFFIXES):
            return head, ref[colon + 1 :]
    return ref, None


def _matches(pattern: str, base: str) -> list[str]:
    """The files a relative path or glob names, sorted (the same order in every
    xdist worker)."""
    full = os.path.normpath(os.path.join(base, pattern))
    if _GLOB_MAGIC.search(pattern):
        return sorted(p for p in glob.glob(full, recursive=True) if os.path.isfile(p))
    return [full]


# ======================================================================= rendering


class _TemplateError(ValueError):
    """A template uses Nunjucks beyond what ctxbench renders."""


# promptfoo renders a prompt with a partial tag (`{{` with no `}}` before the line
# ends, and the like) as literal text: its autoWrapRawIfPartialNunjucks.
_PARTIAL_TAG: Final = re.compile(r"({%[^%]*$|{{[^}]*$|{#[^#]*$)", re.MULTILINE)
_TAG: Final = re.compile(r"\{\{(.*?)\}\}|\{%|\{#", re.DOTALL)
_EXPRESSION: Final = re.compile(
    r"\s*([A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)*)\s*((?:\|\s*[A-Za-z_]\w*\s*)*)\Z",
    re.ASCII,
)
_FILTERS: Final = ("dump", "safe")
_MISSING: Final = object()


def _jsify(value: Any) -> Any:
    """``value`` with integral floats as ints, so JSON text reads as JavaScript's."""
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e21:
        return int(value)
    if isinstance(value, dict):
        return {k: _jsify(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_jsify(v) for v in value]
    return value


def _dump(value: Any, indent: int | None = None) -> str:
    """JSON text as JavaScript's ``JSON.stringify`` writes it."""
    separators = (",", ": ") if indent is not None else (",", ":")
    return json.dumps(
        _jsify(value), ensure_ascii=False, indent=indent, separators=separators
    )


def _as_text(value: Any) -> str:
    """A var's value inside a rendered prompt. Nunjucks prints nothing for a missing
    or null var, ``true``/``false`` and JavaScript numbers; a list or mapping is
    written as JSON (where Nunjucks would print ``[object Object]``)."""
    if value is None or value is _MISSING:
        return ""
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return _js_number(value)
    if isinstance(value, str):
        return value
    return _dump(value)


def _template_problem(template: str) -> str | None:
    """Why ``template`` cannot be rendered here, or None."""
    if _PARTIAL_TAG.search(template):
        return None  # rendered as literal text
    for match in _TAG.finditer(template):
        if match.group(1) is None:
            return f"it uses a {match.group(0)} ... tag"
        expression = _EXPRESSION.match(match.group(1))
        if expression is None:
            return f"it uses the expression {{{{{match.group(1)}}}}}"
        for name in re.findall(r"\|\s*(\w+)", expression.group(2)):
            if name not in _FILTERS:
                return f"it uses the filter {name!r}"
    return None


def _render(
    template: str, variables: Mapping[str, Any], env: Mapping[str, str]
) -> tuple[str, list[str]]:
    """``template`` with each ``{{ var }}`` replaced; also the vars that were missing."""
    if _PARTIAL_TAG.search(template):
        return template, []
    missing: list[str] = []
    parts: list[str] = []
    last = 0
    for match in _TAG.finditer(template):
        parts.append(template[last : match.start()])
        last = match.end()
        expression = (
            None if match.group(1) is None else _EXPRESSION.match(match.group(1))
        )
        if expression is None:
            raise _TemplateError(_template_problem(template) or "unsupported syntax")
        names = expression.group(1).split(".")
        value: Any = _MISSING
        if names[0] in variables:
            value = variables[names[0]]
        elif names[0] == "env" and len(names) > 1:
            value = env  # promptfoo's Nunjucks global `env`
        else:
            missing.append(names[0])
        for name in names[1:]:
            value = (
                value.get(name, _MISSING) if isinstance(value, Mapping) else _MISSING
            )
        for name in re.findall(r"\|\s*(\w+)", expression.group(2)):
            if name == "dump":
                value = _MISSING if value is _MISSING else _dump(value)
            elif name != "safe":  # `safe` changes nothing: promptfoo does not escape
                raise _TemplateError(f"it uses the filter {name!r}")
        parts.append(_as_text(value))
    parts.append(template[last:])
    return "".join(parts), missing


def render_template(
    template: str,
    variables: Mapping[str, Any],
    *,
    env: Mapping[str, str] | None = None,
) -> str:
    """Render a promptfoo template the way promptfoo's Nunjucks renders it.

    Supported: ``{{ var }}``, ``{{ var.key }}`` (a mapping's field), ``{{ env.NAME }}``
    and the ``dump`` (JSON) and ``safe`` filters. A missing var renders as empty text,
    as in Nunjucks; a template with a partial tag (``{{`` not closed on its line) is
    literal text, as promptfoo renders it. Lists and mappings are written as JSON.

    :param template: the template text.
    :param variables: the test's vars.
    :param env: what ``{{ env.NAME }}`` reads (default: the process environment).
    :raises ValueError: when the template uses other Nunjucks syntax (``{% %}`` tags,
        comments, other filters, expressions); the message says which.
    """
    return _render(template, variables, os.environ if env is None else env)[0]


# ======================================================================== findings


@dataclass
class _Findings:
    """What promptfoo would run and ctxbench does not, with where it was seen.

    Keyed by (kind, what); each place is a test number, or 0 for defaultTest."""

    counts: dict[tuple[str, str], int] = field(default_factory=dict)
    places: dict[tuple[str, str], list[int]] = field(default_factory=dict)

    def add(self, kind: str, what: str, place: int, count: int = 1) -> None:
        key = (kind, what)
        self.counts[key] = self.counts.get(key, 0) + count
        places = self.places.setdefault(key, [])
        if place not in places:
            places.append(place)

    def merge(self, other: _Findings) -> None:
        for key, count in other.counts.items():
            self.counts[key] = self.counts.get(key, 0) + count
            places = self.places.setdefault(key, [])
            places.extend(p for p in other.places[key] if p not in places)

    def sentences(self) -> list[str]:
        return [
            f"{kind} ({self.counts[(kind, what)]}, {_places(self.places[(kind, what)])}):"
            f" {what}"
            for kind, what in self.counts
        ]


def _enumerate_words(words: list[str]) -> str:
    if len(words) == 1:
        return words[0]
    return ", ".join(words[:-1]) + " and " + words[-1]


def _places(places: list[int]) -> str:
    numbers = sorted(p for p in places if p > 0)
    parts: list[str] = []
    if 0 in places:
        parts.append("defaultTest")
    if numbers:
        shown = [str(n) for n in numbers[:10]]
        if len(numbers) > 10:
            shown.append(f"{len(numbers) - 10} more")
        parts.append(
            ("test " if len(numbers) == 1 else "tests ") + _enumerate_words(shown)
        )
    return " and ".join(parts)


# ============================================================================ CSV


def _csv_rows(path: str, text: str) -> Iterator[tuple[int, list[str]]]:
    """(physical line the row starts on, cells) of every non-blank row."""
    reader = csv.reader(io.StringIO(text, newline=""))
    line_after = 0
    previous = csv.field_size_limit()
    csv.field_size_limit(max(previous, 2**31 - 1))  # cells hold whole documents
    try:
        while True:
            start = line_after + 1
            try:
                row = next(reader)
            except StopIteration:
                return
            except csv.Error as exc:
                _fail(
                    f"the file is not valid CSV: {exc}. Fix the row.",
                    path,
                    reader.line_num,
                )
            line_after = reader.line_num
            if any(cell.strip() for cell in row):
                yield start, row
    finally:
        csv.field_size_limit(previous)


def _number(text: str) -> int | float | None:
    """A CSV cell as a finite number, or None (promptfoo's parseFiniteNumber)."""
    trimmed = text.strip()
    if not re.fullmatch(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?", trimmed):
        return None
    if re.fullmatch(r"[+-]?\d+", trimmed):
        return int(trimmed)
    value = float(trimmed)
    return value if math.isfinite(value) else None


_CSV_ASSERTION: Final = re.compile(
    "^(not-)?("
    + "|".join(re.escape(t) for t in _PROMPTFOO_BASE_TYPES)
    + r")(?:\((\d+(?:\.\d+)?)\))?(?::([\s\S]*))?$"
)
# The types promptfoo gives a default threshold when a CSV cell names none.
_CSV_THRESHOLD_TYPES: Final = (
    "answer-relevance", "classifier", "context-faithfulness", "context-recall",
    "context-relevance", "cost", "latency", "levenshtein", "perplexity-score",
    "perplexity", "rouge-n", "similar", "starts-with",
)  # fmt: skip


def _comma_values(value: str) -> list[str]:
    """promptfoo's CSV list syntax: comma-separated, fields may be double-quoted
    (``""`` or ``\\"`` inside quotes is a quote)."""
    results: list[str] = []
    i = 0
    while i < len(value):
        while i < len(value) and (value[i] == "," or value[i].isspace()):
            i += 1
        if i >= len(value):
            break
        if value[i] == '"':
            i += 1
            text = []
            closed = False
            while i < len(value):
                if value[i] == "\\" and i + 1 < len(value) and value[i + 1] in '"\\':
                    text.append(value[i + 1])
                    i += 2
                elif value[i] == '"' and i + 1 < len(value) and value[i + 1] == '"':
                    text.append('"')
                    i += 2
                elif value[i] == '"':
                    i += 1
                    closed = True
                    break
                else:
                    text.append(value[i])
                    i += 1
            if not closed:
                raise ValueError("a quoted value has no closing quote")
            results.append("".join(text))
            while i < len(value) and value[i].isspace():
                i += 1
            if i < len(value) and value[i] != ",":
                raise ValueError(
                    "a quoted value is followed by text before the next comma"
                )
        else:
            start = i
            while i < len(value) and value[i] != ",":
                i += 1
            results.append(value[start:i].strip())
    return results


def _csv_assertion(expected: str, base: str) -> dict[str, Any]:
    """One ``__expected`` cell (already stripped) as an assertion, with promptfoo's
    rules (its assertionFromString): script prefixes first, then ``grade:`` /
    ``llm-rubric:``, then ``type(threshold): value`` for any of its types, and any
    other text is an ``equals``."""
    is_file = expected.startswith("file://")
    ref_path = _split_function(expected[7:])[0] if is_file else ""
    if expected.startswith(("javascript:", "fn:", "eval:")) or (
        is_file and ref_path.lower().endswith(_JS_SUFFIXES)
    ):
        cut = 0 if is_file else len(expected.split(":", 1)[0]) + 1
        return {"type": "javascript", "value": expected[cut:].strip()}
    if expected.startswith(("grade:", "llm-rubric:")):
        return {"type": "llm-rubric", "value": expected.split(":", 1)[1]}
    if expected.startswith("python:"):
        return {"type": "python", "value": expected[7:].strip()}
    if is_file and (expected.endswith(".py") or ".py:" in expected):
        # promptfoo strips file:// here, which leaves a path its python assertion
        # would run as code; ctxbench keeps the reference, made absolute.
        return {"type": "python", "value": _absolute_ref(expected[7:].strip(), base)}
    match = _CSV_ASSERTION.match(expected)
    if match is None:
        return {"type": "equals", "value": expected}
    negate, kind, threshold_text, value = match.groups()
    assertion: dict[str, Any] = {"type": f"not-{kind}" if negate else kind}
    if kind in ("contains-all", "contains-any", "icontains-all", "icontains-any"):
        if value:
            assertion["value"] = _comma_values(value)
        elif value is not None:
            assertion["value"] = value
    elif kind in ("contains-json", "is-json"):
        if value is not None:
            assertion["value"] = value
    else:
        if value is not None:
            assertion["value"] = value.strip()
        if kind in _CSV_THRESHOLD_TYPES:
            threshold = _number(threshold_text) if threshold_text else None
            # promptfoo's defaults: 0.8 for similar, 0.75 for the others (even for
            # latency, cost and levenshtein, whose threshold is not a ratio).
            assertion["threshold"] = (
                threshold
                if threshold is not None
                else (0.8 if kind == "similar" else 0.75)
            )
    return assertion


def _csv_tests(path: str, text: str, base: str, notes: list[str]) -> list[_RawTest]:
    """The tests of a promptfoo CSV tests file (promptfoo's testCaseFromCsvRow)."""
    header: list[str] | None = None
    header_line = 0
    tests: list[_RawTest] = []
    for line, row in _csv_rows(path, text):
        if header is None:
            header = [cell.strip() for cell in row]
            header_line = line
            seen: dict[str, int] = {}
            for column, name in enumerate(header, 1):
                if name in seen:
                    _fail(
                        f"the header names column {name!r} twice (columns {seen[name]}"
                        f" and {column}). Rename one of them.",
                        path,
                        line,
                    )
                seen[name] = column
            single = [
                n for n in header
                if n.startswith(_CSV_SINGLE_UNDERSCORE) and not n.startswith("__")
            ]  # fmt: skip
            if single:
                notes.append(
                    f"columns with one leading underscore ({', '.join(single)}, in"
                    f" {path}): read as vars, as promptfoo does; did you mean"
                    f" {', '.join('_' + n for n in single)}?"
                )
            if "__metadata" in header:
                notes.append(
                    f"the __metadata column (in {path}): ignored, as promptfoo does;"
                    " name the key, e.g. __metadata:category"
                )
            bad_config = [
                n for n in header if n.startswith("__config:") and n.count(":") != 2
            ]
            if bad_config:
                notes.append(
                    f"__config columns of an unknown form ({', '.join(bad_config)}, in"
                    f" {path}): ignored, as promptfoo does; write"
                    " __config:__expected<N>:threshold"
                )
            continue
        if len(row) != len(header):
            _fail(
                f"the row has {len(row)} cells but the header (line {header_line}) names"
                f" {len(header)} columns. Make every row as wide as the header.",
                path,
                line,
            )
        tests.append(_csv_test(path, line, header, row, len(tests) + 1, base))
    if header is None:
        _fail(
            "the file is empty; a promptfoo CSV tests file needs a header row of var"
            " names (and __expected columns), then one row per test. Add them.",
            path,
        )
    if not tests:
        _fail(
            f"the file has a header row (line {header_line}) but no tests. Add at least"
            " one row.",
            path,
        )
    return tests


def _csv_test(
    path: str, line: int, header: list[str], row: list[str], number: int, base: str
) -> _RawTest:
    variables: dict[str, Any] = {}
    asserts: list[dict[str, Any]] = []
    options: dict[str, Any] = {}
    metadata: dict[str, Any] = {}
    configs: dict[int, dict[str, Any]] = {}
    test: dict[str, Any] = {}
    metric: str | None = None
    threshold: int | float | None = None
    for name, value in zip(header, row):
        if name.startswith("__expected"):
            if value.strip():
                try:
                    asserts.append(_csv_assertion(value.strip(), base))
                except ValueError as exc:
                    _fail(
                        f"the {name} cell cannot be read: {exc}. Fix the cell.",
                        path,
                        line,
                    )
        elif name in ("__prefix", "__suffix"):
            options[name[2:]] = value
        elif name == "__description":
            if value:
                test["description"] = value
        elif name == "__providerOutput":
            if value:
                test["providerOutput"] = value
        elif name == "__metric":
            metric = value
        elif name == "__threshold":
            threshold = _number(value)
            if threshold is None and value.strip():
                _fail(
                    f"the __threshold cell {value!r} is not a number. Write a number"
                    " (0.8), or leave the cell empty.",
                    path,
                    line,
                )
        elif name.startswith("__metadata:"):
            key = name[len("__metadata:") :]
            if key.endswith("[]"):
                if value.strip():
                    metadata[key[:-2]] = [
                        v.strip().replace("\\,", ",")
                        for v in re.split(r"(?<!\\),", value)
                    ]
            elif value.strip():
                metadata[key] = value
        elif name == "__metadata":
            pass  # named in the notes once per file
        elif name.startswith("__config:"):
            parts = name[len("__config:") :].split(":")
            if len(parts) != 2:
                continue  # named in the notes once per file
            expected_key, config_key = parts
            index_match = re.fullmatch(r"__expected(\d*)", expected_key)
            index = None
            if index_match is not None:
                digits = index_match.group(1)
                index = 0 if not digits else int(digits) - 1
            if index is None or index < 0:
                _fail(
                    f"the column {name} names {expected_key!r}; name __expected or"
                    " __expected<N> with N >= 1.",
                    path,
                    line,
                )
            if config_key != "threshold":
                _fail(
                    f"the column {name} sets {config_key!r}; the only key a __config"
                    " column may set is threshold.",
                    path,
                    line,
                )
            if not value.strip():
                continue  # (promptfoo refuses an empty cell; nothing to set is fine)
            number_value = _number(value)
            if number_value is None:
                _fail(
                    f"the {name} cell {value!r} is not a number. Write a number.",
                    path,
                    line,
                )
            configs.setdefault(index, {})[config_key] = number_value
        else:
            variables[name] = value  # an empty cell is an empty string, as in promptfoo
    for index, assertion in enumerate(asserts):
        if metric:
            assertion["metric"] = metric
        for key, value in configs.get(index, {}).items():
            # promptfoo counts __expected<N> among the non-empty cells, and also
            # copies the setting into the test's metadata.
            assertion[key] = value
            metadata[key] = value
    test["vars"] = variables
    test["assert"] = asserts
    if options:
        test["options"] = options
    if threshold is not None:
        test["threshold"] = threshold
    if metadata:
        test["metadata"] = metadata
    # promptfoo names a CSV row with no __description "Row #<n>".
    return _RawTest(test, path, line, os.path.dirname(path), f"Row #{number}")


# ========================================================================= prompts


@dataclass
class _Prompt:
    template: str
    label: str  # the suite's label (unique, no spaces)
    refs: tuple[str, ...]  # what a test's `prompts:` may name it by
    source: str
    line: int | None
    has_config: bool = False


def _label(text: str) -> str:
    cleaned = re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-.")
    return re.sub(r"-{2,}", "-", cleaned)[:40].strip("-.")


def _prompt_files(raw: str, base: str, ref: _Ref) -> list[tuple[str, str]] | None:
    """(template, file) for each prompt a file reference holds; None when ``raw`` is
    not a file reference. promptfoo's rules: ``.txt`` holds prompts separated by
    ``---`` lines, ``.json``/``.md``/``.j2`` one prompt, ``.jsonl`` one per line,
    ``.yaml`` one prompt (its JSON), ``.csv`` a ``prompt`` column (or one per line)."""
    explicit = raw.startswith("file://")
    target = _strip_file(raw).strip()
    if not explicit:
        # promptfoo also reads a bare path as a prompt file; a literal prompt is
        # recognised by its whitespace, or by not ending in a prompt file's suffix.
        if any(c.isspace() for c in raw) or not (
            target.lower().endswith(_PROMPT_FILE_SUFFIXES + _SCRIPT_SUFFIXES)
            or _GLOB_MAGIC.search(target)
        ):
            return None
        if _GLOB_MAGIC.search(target) and not _matches(target, base):
            return None  # promptfoo: a glob that matches nothing is the prompt text
    path_part, _function = _split_function(target)
    if path_part.lower().endswith(_SCRIPT_SUFFIXES):
        _fail(
            f"the prompt {raw!r} is a function ({path_part}); ctxbench renders only"
            " text and chat prompts. Write the prompt as text, or as a JSON chat"
            " file.",
            ref.path,
            ref.line,
        )
    files = _matches(path_part, base)
    if not files:
        _fail(
            f"no file matches the prompt {raw!r}. Check the path.", ref.path, ref.line
        )
    found: list[tuple[str, str]] = []
    for path in files:
        suffix = _suffix(path)
        if suffix not in _PROMPT_FILE_SUFFIXES:
            _fail(
                f"the prompt file {path} has an unsupported suffix ({suffix or 'none'});"
                " use .txt, .md, .j2, .json, .jsonl, .yaml, .yml or .csv.",
                ref.path,
                ref.line,
            )
        text = _read_text(path, _Ref(ref.path, ref.line, "prompt file"))
        if suffix == ".txt":
            chunk: list[str] = []
            for line in re.split(r"\r?\n", text) + ["---"]:
                if line.strip() == "---":
                    prompt = "\n".join(chunk).strip()
                    if prompt:
                        found.append((prompt, path))
                    chunk = []
                else:
                    chunk.append(line)
        elif suffix == ".jsonl":
            found.extend((line, path) for line in re.split(r"\r?\n", text) if line)
        elif suffix in YAML_SUFFIXES:
            try:
                value = _parse_yaml(path, text, _Lines())
            except DatasetError:
                found.append((text, path))  # promptfoo keeps text it cannot parse
            else:
                found.append((_dump(value), path))
        elif suffix == ".csv":
            found.extend((p, path) for p in _csv_prompts(path, text))
        else:
            found.append((text, path))
    if not found:
        _fail(f"there are no prompts in {raw!r}. Add one.", ref.path, ref.line)
    return found


def _csv_prompts(path: str, text: str) -> list[str]:
    """promptfoo's CSV prompts file: a ``prompt`` column, or one prompt per line."""
    if "," not in text:
        lines = [line for line in re.split(r"\r?\n", text) if line.strip()]
        if lines and lines[0].strip().lower() == "prompt":
            lines = lines[1:]
        return lines
    rows = list(_csv_rows(path, text))
    if not rows:
        return []
    header = [cell.strip() for cell in rows[0][1]]
    if "prompt" not in header:
        return []
    column = header.index("prompt")
    return [
        row[column].strip()
        for _, row in rows[1:]
        if column < len(row) and row[column].strip()
    ]


def _read_prompts(
    value: Any, config: Mapping[str, Any], ctx: _Context
) -> list[_Prompt]:
    """The prompts of a config (promptfoo's normalizeInput and processPrompt)."""
    line = ctx.lines.key(config, "prompts")
    entries: list[tuple[Any, str | None, str | None, bool, int | None]] = []
    if isinstance(value, str):
        entries.append((value, None, None, False, line))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            at = ctx.lines.item(value, index) or line
            if isinstance(item, str):
                entries.append((item, None, None, False, at))
            elif isinstance(item, dict):
                raw = item.get("raw") or item.get("id")
                label = item.get("label")
                ident = item.get("id")
                if not isinstance(raw, str) or not raw:
                    _fail(
                        f"prompt {index + 1} has no 'raw' or 'id' text. Give the prompt"
                        " text as raw: (or a file as id: file://prompt.txt).",
                        ctx.path,
                        at,
                    )
                if label is not None and not isinstance(label, str):
                    label = str(label)
                ident = ident if isinstance(ident, str) and ident != raw else None
                entries.append((raw, label, ident, "config" in item, at))
            else:
                _fail(
                    f"prompt {index + 1} is {_kind(item)}; a prompt is a string, or a"
                    " mapping with raw: (and label:). Fix the prompt.",
                    ctx.path,
                    at,
                )
    elif isinstance(value, dict) and value:
        # promptfoo's mapping form: prompt text (or file) -> label.
        for raw, label in value.items():
            entries.append(
                (raw, None if label is None else str(label), None, False, line)
            )
    else:
        _fail(
            f"'prompts' is {_kind(value)}; write a prompt, a list of prompts, or a"
            " mapping of prompt to label.",
            ctx.path,
            line,
        )
    prompts: list[_Prompt] = []
    for raw, label, ident, has_config, at in entries:
        for remote in _REMOTE_PREFIXES:
            if raw.startswith(remote):
                _fail(
                    f"the prompt {raw[:60]!r} comes from {remote.rstrip(':/')}, which"
                    " ctxbench does not read. Write the prompt as text or a local file.",
                    ctx.path,
                    at,
                )
        files = _prompt_files(raw, ctx.base, _Ref(ctx.path, at))
        refs = tuple(r for r in (label, ident) if r)
        if files is None:
            prompts.append(
                _Prompt(raw, label or ident or "", refs, ctx.path, at, has_config)
            )
            continue
        several = len(files) > 1
        for k, (template, source) in enumerate(files, 1):
            name = label or ident or ""
            if name and several:
                name = f"{name}-{k}"
            prompts.append(_Prompt(template, name, refs, source, at, has_config))
    taken: set[str] = set()
    for number, prompt in enumerate(prompts, 1):
        name = _label(prompt.label) or f"prompt{number}"
        unique, n = name, 2
        while unique in taken:
            unique, n = f"{name}-{n}", n + 1
        taken.add(unique)
        prompt.label = unique
        problem = _prompt_problem(prompt.template)
        if problem is not None:
            _fail(
                f"the prompt {unique!r} ({_short(prompt.template)}) cannot be rendered:"
                f" {problem}, and ctxbench renders only {{{{var}}}} substitution"
                " ({{var}}, {{var.key}}, {{env.NAME}}, the dump filter). Rewrite the"
                " prompt with plain {{var}} substitution.",
                prompt.source if prompt.source != ctx.path else ctx.path,
                prompt.line if prompt.source == ctx.path else None,
            )
    return prompts


def _short(text: str) -> str:
    flat = " ".join(text.split())
    return repr(flat if len(flat) <= 50 else flat[:47] + "...")


def _json_prompt(template: str) -> Any:
    """The JSON value of a prompt, or _MISSING when it is text (promptfoo tries
    JSON.parse on every prompt and renders the strings inside a JSON one)."""
    try:
        return strict_decoder.decode(template)
    except (ValueError, RecursionError):
        return _MISSING


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def _prompt_problem(template: str) -> str | None:
    parsed = _json_prompt(template)
    texts: Iterable[str] = [template] if parsed is _MISSING else _strings(parsed)
    for text in texts:
        problem = _template_problem(text)
        if problem is not None:
            return problem
    return None


def _render_prompt(
    template: str, variables: Mapping[str, Any], env: Mapping[str, str]
) -> tuple[Any, list[str]]:
    """The prompt for one test: text, or a list of chat messages (a JSON chat array)."""
    parsed = _json_prompt(template)
    if parsed is _MISSING:
        return _render(template, variables, env)
    missing: list[str] = []

    def walk(value: Any) -> Any:
        if isinstance(value, str):
            text, lost = _render(value, variables, env)
            missing.extend(lost)
            return text
        if isinstance(value, dict):
            return {k: walk(v) for k, v in value.items()}
        if isinstance(value, list):
            return [walk(v) for v in value]
        return value

    rendered = walk(parsed)
    if (
        isinstance(rendered, list)
        and rendered
        and all(isinstance(m, dict) and "role" in m for m in rendered)
    ):
        return rendered, missing
    return _dump(rendered, indent=2), missing


def _prompt_allowed(prompt: _Prompt, allowed: list[str] | None) -> bool:
    """promptfoo's test-level `prompts:` filter: a label or id, `name*` as a prefix,
    or `name` matching `name:...`."""
    if allowed is None:
        return True
    names = [n for n in (*prompt.refs, prompt.label) if n]
    for ref in allowed:
        for name in names:
            if name == ref or name.startswith(f"{ref}:"):
                return True
            if ref.endswith("*") and name.startswith(ref[:-1]):
                return True
    return False


# =========================================================================== tests


@dataclass
class _RawTest:
    """A test as written, with where it was read from."""

    data: dict[str, Any]
    path: str
    line: int | None
    base: str  # the directory a `vars: file` reference is read from
    default_description: str | None = None
    synthetic: bool = False  # the one test of a config with none but defaultTest


@dataclass
class _Context:
    path: str
    base: str
    lines: _Lines
    env: dict[str, str]
    has_prompts: bool = False
    notes: list[str] = field(default_factory=list)


def _kind(value: Any) -> str:
    if value is None:
        return "empty"
    if isinstance(value, bool):
        return f"the boolean {str(value).lower()}"
    if isinstance(value, (int, float)):
        return f"the number {value}"
    if isinstance(value, str):
        return f"the text {_short(value)}"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    return type(value).__name__


def _tests_in_file(
    path: str, ctx: _Context, ref: _Ref, standalone: bool
) -> list[_RawTest]:
    """The tests of one tests file: YAML or JSON (a list of tests, or one test),
    JSON Lines, or CSV."""
    suffix = _suffix(path)
    if suffix == ".csv":
        return _csv_tests(path, _read_text(path, ref), ctx.base, ctx.notes)
    if suffix == ".jsonl":
        text = _read_text(path, ref)
        values: list[tuple[Any, int]] = []
        for number, row in enumerate(text.split("\n"), 1):
            if row.strip():
                try:
                    values.append((_parse_json(path, row, _Lines()), number))
                except DatasetError as exc:
                    reason = str(exc)[len(f"{path}:{exc.line}: ") :]
                    _fail(reason, path, number)
        tests = [
            _test_from_value(v, path, n, ctx, f"Row #{i}" if standalone else None, i)
            for i, (v, n) in enumerate(values, 1)
        ]
    elif suffix in YAML_SUFFIXES or suffix == ".json":
        value = _parse_file(path, ctx.lines, ref)
        items = value if isinstance(value, list) else [value]
        if value is None:
            items = []
        tests = []
        for index, item in enumerate(items):
            line = ctx.lines.item(value, index) if isinstance(value, list) else None
            # promptfoo names a JSON test with no description "Row #<n>" when the
            # config's `tests:` is that one file.
            default = f"Row #{index + 1}" if standalone and suffix == ".json" else None
            tests.append(_test_from_value(item, path, line, ctx, default, index + 1))
    else:
        _fail(
            f"the tests file {path} has an unsupported suffix ({suffix or 'none'}); use"
            " .yaml, .yml, .json, .jsonl or .csv.",
            ref.path,
            ref.line,
        )
    if not tests:
        _fail("the file holds no tests. Add at least one test.", path)
    return tests


def _test_from_value(
    value: Any,
    path: str,
    line: int | None,
    ctx: _Context,
    default: str | None,
    position: int,
) -> _RawTest:
    if not isinstance(value, dict):
        _fail(
            f"test {position} of the file is {_kind(value)}, not a mapping; a test is"
            " a mapping with vars: and assert:. Fix the test.",
            path,
            line,
        )
    return _RawTest(
        value, path, ctx.lines.of(value) or line, os.path.dirname(path), default
    )


def _tests_from_ref(
    entry: str, ctx: _Context, ref: _Ref, standalone: bool
) -> list[_RawTest]:
    """The tests a `tests:` string names: a file, or a glob of files."""
    for remote in _REMOTE_PREFIXES:
        if entry.startswith(remote):
            _fail(
                f"the tests {entry[:60]!r} come from {remote.rstrip(':/')}, which ctxbench"
                " does not read. Download them into a local CSV, YAML or JSON file.",
                ref.path,
                ref.line,
            )
    target, function = _split_function(_strip_file(entry))
    if target.lower().endswith(_SCRIPT_SUFFIXES) or function is not None:
        _fail(
            f"the tests {entry!r} are generated by a script, which ctxbench does not"
            " run. Write the generated tests to a CSV, YAML or JSON file.",
            ref.path,
            ref.line,
        )
    if target.lower().split("#")[0].endswith((".xlsx", ".xls")):
        _fail(
            f"the tests {entry!r} are a spreadsheet; save it as CSV and name the .csv"
            " file.",
            ref.path,
            ref.line,
        )
    files = _matches(target, ctx.base)
    if not files:
        _fail(
            f"no file matches the tests {entry!r}. Check the path.", ref.path, ref.line
        )
    tests: list[_RawTest] = []
    for path in files:
        tests.extend(
            _tests_in_file(
                path, ctx, _Ref(ref.path, ref.line, "tests file"), standalone
            )
        )
    return tests


def _read_tests(value: Any, config: Mapping[str, Any], ctx: _Context) -> list[_RawTest]:
    """promptfoo's readTests: a file or glob, a `{path: ...}`, or a list of tests
    and files."""
    line = ctx.lines.key(config, "tests")
    ref = _Ref(ctx.path, line)
    if value is None:
        return []
    if isinstance(value, str):
        return _tests_from_ref(value, ctx, ref, standalone=True)
    if isinstance(value, dict) and isinstance(value.get("path"), str):
        return _tests_from_ref(value["path"], ctx, ref, standalone=True)
    if not isinstance(value, list):
        _fail(
            f"'tests' is {_kind(value)}; write a list of tests, or a file such as"
            " file://tests.csv.",
            ctx.path,
            line,
        )
    tests: list[_RawTest] = []
    for index, item in enumerate(value):
        at = ctx.lines.item(value, index) or line
        if isinstance(item, str):
            tests.extend(
                _tests_from_ref(item, ctx, _Ref(ctx.path, at), standalone=False)
            )
        elif (
            isinstance(item, dict)
            and isinstance(item.get("path"), str)
            and ("vars" not in item and "assert" not in item)
        ):
            tests.extend(
                _tests_from_ref(item["path"], ctx, _Ref(ctx.path, at), standalone=True)
            )
        else:
            tests.append(_test_from_value(item, ctx.path, at, ctx, None, index + 1))
    return tests


def _did_you_mean(word: str, choices: Iterable[str]) -> str:
    close = difflib.get_close_matches(word, list(choices), n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


@dataclass
class _Checked:
    """A test (or defaultTest) after its fields were checked."""

    description: str | None
    variables: dict[str, Any]
    asserts: list[Any] | None
    threshold: int | float | None
    options: dict[str, Any]
    metadata: dict[str, Any]
    prompts: list[str] | None
    other: dict[str, Any]  # provider, providers, providerOutput, assertScoringFunction


def _check_test(test: _RawTest, ctx: _Context, *, is_default: bool) -> _Checked:
    data, path = test.data, test.path
    name = "defaultTest" if is_default else "the test"

    def at(key: str) -> int | None:
        return ctx.lines.key(data, key) or test.line

    for key in data:
        if key not in _TEST_KEYS:
            _fail(
                f"{name} has the key {key!r}, which promptfoo does not define"
                f"{_did_you_mean(key, _TEST_KEYS)}. Use one of: {', '.join(_TEST_KEYS)}.",
                path,
                at(key),
            )
    if not (is_default or test.synthetic) and not any(
        k in data for k in _TEST_CONTENT_KEYS
    ):
        _fail(
            "the test has none of assert, vars, options, metadata, provider,"
            " providerOutput or threshold, so there is nothing to run (promptfoo refuses"
            " it too). Add vars: or assert:.",
            path,
            test.line,
        )
    description = data.get("description")
    if description is not None and not isinstance(description, str):
        if isinstance(description, (int, float)) and not isinstance(description, bool):
            description = str(description)
        else:
            _fail(
                f"'description' is {_kind(description)}; write text.",
                path,
                at("description"),
            )
    variables = _read_vars(test, ctx)
    written = data.get("vars")
    for key in variables:
        if key in _RESERVED_VARS and not (key == "prompt" and not ctx.has_prompts):
            _fail(
                f"the var {key!r} has the name of a field ctxbench sets on every"
                f" example ({', '.join(_RESERVED_VARS)}). Rename the var (in vars: and"
                " in the prompts that use it).",
                path,
                ctx.lines.key(written, key)
                if isinstance(written, dict)
                else at("vars"),
            )
    asserts = data.get("assert")
    if asserts is not None and not isinstance(asserts, list):
        _fail(
            f"'assert' is {_kind(asserts)}, not a list; write a list of assertions"
            " (- type: contains ...).",
            path,
            at("assert"),
        )
    threshold = data.get("threshold")
    if threshold is not None and (
        isinstance(threshold, bool) or not isinstance(threshold, (int, float))
    ):
        _fail(
            f"'threshold' is {_kind(threshold)}, not a number. Write a number.",
            path,
            at("threshold"),
        )
    options = data.get("options") or {}
    if not isinstance(options, dict):
        _fail(
            f"'options' is {_kind(options)}, not a mapping. Fix it.",
            path,
            at("options"),
        )
    metadata = data.get("metadata") or {}
    if not isinstance(metadata, dict):
        _fail(
            f"'metadata' is {_kind(metadata)}, not a mapping. Fix it.",
            path,
            at("metadata"),
        )
    prompts = data.get("prompts")
    if prompts is not None and not (
        isinstance(prompts, list) and all(isinstance(p, str) for p in prompts)
    ):
        _fail(
            f"'prompts' is {_kind(prompts)}; write a list of prompt labels.",
            path,
            at("prompts"),
        )
    other = {
        k: data[k]
        for k in ("provider", "providers", "providerOutput", "assertScoringFunction")
        if data.get(k) is not None
    }
    return _Checked(
        description,
        variables,
        asserts,
        threshold,
        dict(options),
        dict(metadata),
        prompts,
        other,
    )


def _read_vars(test: _RawTest, ctx: _Context) -> dict[str, Any]:
    """A test's vars: a mapping, or YAML/JSON files (paths or globs) whose mappings
    are merged (promptfoo's readTestFiles)."""
    data = test.data
    value = data.get("vars")
    at = ctx.lines.key(data, "vars") or test.line
    if value is None:
        return {}
    if isinstance(value, dict):
        return dict(value)
    if isinstance(value, str):
        value = [value]
    if not (isinstance(value, list) and all(isinstance(v, str) for v in value)):
        _fail(
            f"'vars' is {_kind(value)}; write a mapping of var names to values (or a"
            " vars file).",
            test.path,
            at,
        )
    merged: dict[str, Any] = {}
    for entry in value:
        files = _matches(_strip_file(entry), test.base)
        if not files:
            _fail(f"no file matches the vars {entry!r}. Check the path.", test.path, at)
        for path in files:
            loaded = _parse_file(path, ctx.lines, _Ref(test.path, at, "vars file"))
            if loaded is None:
                continue
            if not isinstance(loaded, dict):
                _fail(
                    f"the vars file holds {_kind(loaded)}; it must hold a mapping of var"
                    " names to values.",
                    path,
                )
            merged.update(loaded)
    return merged


def _load_default_test(
    config: Mapping[str, Any], ctx: _Context
) -> tuple[_RawTest, _Checked] | None:
    value = config.get("defaultTest")
    line = ctx.lines.key(config, "defaultTest")
    if value is None:
        raw: dict[str, Any] = {}
        path, at = ctx.path, line
    elif isinstance(value, str):
        # promptfoo reads `defaultTest: file://defaults.yaml` (or a bare path).
        target = os.path.normpath(os.path.join(ctx.base, _strip_file(value)))
        loaded = _parse_file(
            target, ctx.lines, _Ref(ctx.path, line, "defaultTest file")
        )
        if not isinstance(loaded, dict):
            _fail(
                f"the defaultTest file holds {_kind(loaded)}; it must hold one test (a"
                " mapping).",
                target,
            )
        raw, path, at = loaded, target, ctx.lines.of(loaded)
    elif isinstance(value, dict):
        raw, path, at = value, ctx.path, ctx.lines.of(value) or line
    else:
        _fail(
            f"'defaultTest' is {_kind(value)}; write a mapping (vars:, assert:, ...) or"
            " file://defaults.yaml.",
            ctx.path,
            line,
        )
    # The config's top-level metadata reaches the tests only when there is no
    # inline defaultTest: promptfoo's config merge gives an inline defaultTest an
    # (empty) metadata of its own, which replaces the config's.
    metadata = config.get("metadata")
    if (
        not isinstance(value, dict)
        and isinstance(metadata, dict)
        and "metadata" not in raw
    ):
        raw = {**raw, "metadata": metadata}
    if value is None and not raw:
        return None
    test = _RawTest(raw, path, at, os.path.dirname(path))
    return test, _check_test(test, ctx, is_default=True)


# ====================================================================== assertions


def _absolute_ref(ref: str, base: str) -> str:
    """``path[:fn]`` -> ``file://<absolute path>[:fn]``."""
    target, function = _split_function(_strip_file(ref))
    absolute = os.path.abspath(os.path.join(base, target))
    return f"file://{absolute}" + (f":{function}" if function else "")


def _file_value(value: str, ctx: _Context, path: str, line: int | None) -> Any:
    """An assertion value read from a file, as promptfoo reads it when the assertion
    runs: ``.txt`` as trimmed text, ``.json``/``.yaml``/``.yml`` parsed."""
    target = os.path.normpath(os.path.join(ctx.base, value[len("file://") :]))
    suffix = _suffix(target)
    ref = _Ref(path, line, "assertion value file")
    if suffix == ".txt":
        return _read_text(target, ref).strip()
    if suffix in (".json", ".yaml", ".yml"):
        # promptfoo parses all three with its YAML reader.
        if suffix == ".json":
            return _parse_json(target, _read_text(target, ref), _Lines())
        return _parse_file(target, _Lines(), ref)
    _fail(
        f"the assertion value {value!r} is a {suffix or 'suffix-less'} file; an"
        " assertion value file must be .txt, .json, .yaml or .yml.",
        path,
        line,
    )


def _filter_asserts(
    asserts: list[Any],
    ctx: _Context,
    path: str,
    line: int | None,
    findings: _Findings,
    place: int,
) -> list[dict[str, Any]]:
    """The assertions ctxbench runs (copies); the others are counted in findings."""
    kept: list[dict[str, Any]] = []
    for index, assertion in enumerate(asserts, 1):
        at = ctx.lines.of(assertion) or ctx.lines.item(asserts, index - 1) or line
        if not isinstance(assertion, dict):
            _fail(
                f"assertion {index} is {_kind(assertion)}, not a mapping; write it as"
                " a mapping ({type: contains, value: ...}).",
                path,
                at,
            )
        kind = assertion.get("type")
        if not isinstance(kind, str) or not kind:
            _fail(
                f"assertion {index} has no type; add one (type: contains, equals,"
                " llm-rubric, ...).",
                path,
                at,
            )
        if kind == "assert-set":
            inner = assertion.get("assert")
            if not isinstance(inner, list):
                _fail(
                    f"assertion {index} (assert-set) has {_kind(inner)} as 'assert'; write"
                    " the list of assertions of the set.",
                    path,
                    at,
                )
            kept_inner = _filter_asserts(inner, ctx, path, at, findings, place)
            if not kept_inner and inner:
                findings.add(
                    "assert-set assertions",
                    "dropped: none of their assertions is run",
                    place,
                )
                continue
            kept.append({**assertion, "assert": kept_inner})
            continue
        if kind not in ASSERTION_TYPES_RUN and (
            kind in PROMPTFOO_ASSERTION_TYPES or kind.startswith("promptfoo:")
        ):
            findings.add(f"{kind} assertions", "dropped", place)
            continue
        copied = dict(assertion)
        value = copied.get("value")
        base_kind = kind.removeprefix("not-")
        if isinstance(value, str) and value.startswith("file://"):
            target = _split_function(value[7:])[0]
            if target.lower().endswith(_SCRIPT_SUFFIXES):
                if base_kind != "python":
                    findings.add(
                        "assertions whose value a script computes (file://...)",
                        "dropped",
                        place,
                    )
                    continue
                copied["value"] = _absolute_ref(value, ctx.base)
            else:
                copied["value"] = _file_value(value, ctx, path, at)
        elif isinstance(value, list):
            copied["value"] = [
                _file_value(v, ctx, path, at)
                if isinstance(v, str) and v.startswith("file://")
                else v
                for v in value
            ]
        kept.append(copied)
    return kept


# ====================================================================== assembling


def _slug(text: str) -> str:
    slug = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")
    return slug[:60].rstrip("-")


def _unique(name: str, taken: set[str]) -> str:
    unique, n = name, 2
    while unique in taken:
        unique, n = f"{name}-{n}", n + 1
    taken.add(unique)
    return unique


@dataclass
class _Prepared:
    number: int
    source: str
    line: int
    description: str | None
    combos: list[dict[str, Any]]
    asserts: list[dict[str, Any]] | None
    threshold: int | float | None
    metadata: dict[str, Any]
    prefix: str
    suffix: str
    prompts: list[str] | None
    findings: _Findings
    ids: list[str] = field(default_factory=list)


def _expand(
    variables: dict[str, Any], ctx: _Context, test: _RawTest
) -> list[dict[str, Any]]:
    """promptfoo's generateVarCombinations: a var holding a list whose first item is
    a string takes each of its items in turn (a list of anything else is one value),
    a `file://` var takes each file its glob matches; the tests are the cartesian
    product, in the order of the vars."""
    combos: list[dict[str, Any]] = [{}]
    for key, value in variables.items():
        if isinstance(value, str) and value.startswith("file://"):
            pattern = value[len("file://") :]
            files = (
                _matches(pattern, ctx.base) if _GLOB_MAGIC.search(pattern) else [value]
            )
            if not files:
                _fail(
                    f"no file matches the var {key!r} ({value!r}). Check the path"
                    f" (relative to {ctx.base or '.'}).",
                    test.path,
                    test.line,
                )
            values: list[Any] = [
                f"file://{os.path.relpath(f, ctx.base or '.')}" if f != value else f
                for f in files
            ]
        elif isinstance(value, list) and value and isinstance(value[0], str):
            values = list(value)
        else:
            values = [value]
        combos = [{**combo, key: item} for combo in combos for item in values]
    return combos


def _load_var_files(
    variables: dict[str, Any], ctx: _Context, test: _RawTest
) -> dict[str, Any]:
    """The vars as a prompt sees them (promptfoo's renderPrompt): `file://` vars
    read (text trimmed; YAML as JSON text), one trailing newline cut from each
    string, and `{{other}}` references to other vars substituted."""
    result = dict(variables)
    for key, value in variables.items():
        if not (isinstance(value, str) and value.startswith("file://")):
            if isinstance(value, str) and value.startswith("package:"):
                _fail(
                    f"the var {key!r} is computed by a package ({value}), which ctxbench"
                    " does not run. Write the value itself.",
                    test.path,
                    test.line,
                )
            continue
        target = os.path.normpath(os.path.join(ctx.base, value[len("file://") :]))
        suffix = _suffix(target)
        if suffix in _SCRIPT_SUFFIXES or _split_function(value[7:])[1] is not None:
            _fail(
                f"the var {key!r} is computed by a script ({value}), which ctxbench does"
                " not run. Write the value itself, or a file holding it.",
                test.path,
                test.line,
            )
        if suffix in _MEDIA_SUFFIXES:
            _fail(
                f"the var {key!r} is a {suffix} file ({value}); ctxbench reads only"
                " text vars. Give the text instead.",
                test.path,
                test.line,
            )
        ref = _Ref(test.path, test.line, f"the file {{path}} of the var {key!r}")
        if suffix in YAML_SUFFIXES:
            result[key] = _dump(_parse_file(target, _Lines(), ref))
        else:
            result[key] = _read_text(target, ref).strip()
    for key, value in result.items():
        if isinstance(value, str) and value.endswith("\n"):
            result[key] = value[:-1]
    # promptfoo's resolveVariables: up to 5 passes, the first {{name}} of each var
    # replaced by a defined var's value.
    reference = re.compile(r"\{\{\s*(\w+)\s*\}\}", re.ASCII)
    for _ in range(5):
        resolved = True
        for key, value in result.items():
            if not isinstance(value, str):
                continue
            match = reference.search(value)
            if match is not None and match.group(1) in result:
                replacement = result[match.group(1)]
                text = "null" if replacement is None else _as_text(replacement)
                result[key] = value.replace(match.group(0), text, 1)
                resolved = False
        if resolved:
            break
    return result


def _prepare(
    test: _RawTest,
    number: int,
    checked: _Checked,
    default: _Checked | None,
    default_kept: list[dict[str, Any]],
    ctx: _Context,
) -> _Prepared:
    findings = _Findings()
    path, line = test.path, test.line
    description = checked.description or test.default_description
    # promptfoo's merge (prepareTestCaseForEval): defaultTest's vars, options and
    # metadata under the test's own; defaultTest's assertions first (unless the
    # test's options.disableDefaultAsserts); the test's threshold, else defaultTest's.
    variables = {**(default.variables if default else {}), **checked.variables}
    options = {**(default.options if default else {}), **checked.options}
    metadata = {**(default.metadata if default else {}), **checked.metadata}
    threshold = (
        checked.threshold
        if checked.threshold is not None
        else (default.threshold if default else None)
    )
    prompts = (
        checked.prompts
        if checked.prompts is not None
        else (default.prompts if default else None)
    )
    own = _filter_asserts(checked.asserts or [], ctx, path, line, findings, number)
    use_default = checked.options.get("disableDefaultAsserts") is not True
    had_any = bool(checked.asserts) or bool(default and default.asserts and use_default)
    asserts = ([*default_kept] if use_default else []) + own
    if "description" in variables:
        if checked.description is not None:
            _fail(
                "the test has a description and a var named 'description'; both would"
                " be the example's 'description' field. Rename the var.",
                path,
                line,
            )
        description = None  # the var is the example's description
    if "metadata" in variables and metadata:
        _fail(
            "the test has metadata and a var named 'metadata'; both would be the"
            " example's 'metadata' field. Rename the var.",
            path,
            line,
        )
    for key in checked.options:  # defaultTest's own are named once, as defaultTest's
        if key not in _APPLIED_OPTIONS:
            findings.add(f"options.{key}", "not applied", number)
    for key in checked.other:
        findings.add(*_TEST_EXTRAS[key], number)
    # promptfoo: `options.prefix || defaultTest.options.prefix || ""` (options merged;
    # so an empty prefix of the test's own falls back to defaultTest's). Same for suffix.
    default_options = default.options if default else {}
    prefix = options.get("prefix") or default_options.get("prefix") or ""
    suffix = options.get("suffix") or default_options.get("suffix") or ""
    if options.get("disableVarExpansion") is True:
        combos = [variables]
    else:
        combos = _expand(variables, ctx, test)
    combos = [_load_var_files(c, ctx, test) for c in combos]
    return _Prepared(
        number=number,
        source=path,
        line=line or 1,
        description=description,
        combos=combos,
        asserts=asserts if (asserts or had_any) else None,
        threshold=threshold,
        metadata=metadata,
        prefix=str(prefix),
        suffix=str(suffix),
        prompts=prompts,
        findings=findings,
    )


def _config_notes(config: Mapping[str, Any], ctx: _Context) -> list[str]:
    notes: list[str] = []
    providers = config.get("providers", config.get("targets"))
    if providers is not None:
        count = len(providers) if isinstance(providers, list) else 1
        notes.append(
            f"providers ({count}): ctxbench runs your --ctxbench-system or"
            " --ctxbench-proxy instead"
        )
    for key, what in _CONFIG_KEYS_NOTED.items():
        value = config.get(key)
        if value is None or value == [] or value == {}:
            continue
        detail = ""
        if isinstance(value, list):
            detail = f" ({len(value)})"
        elif isinstance(value, dict):
            detail = f" ({', '.join(map(str, value))})"
        notes.append(f"{key}{detail}: {what}")
    unknown = [
        k for k in config if k not in _CONFIG_KEYS_READ and k not in _CONFIG_KEYS_NOTED
    ]
    if unknown:
        notes.append(
            f"config keys promptfoo does not define ({', '.join(map(str, unknown))}):"
            " ignored"
        )
    return notes


def load_promptfoo(path: str | os.PathLike[str]) -> list[PromptfooSuite]:
    """Read a promptfoo config, or a bare promptfoo tests file, as ctxbench suites.

    :param path: a config (``.yaml``, ``.yml`` or ``.json`` mapping with ``prompts``
        and ``tests``), or a tests file: a YAML or JSON list of tests, or a CSV whose
        columns are var names and promptfoo's ``__expected`` columns.
    :returns: one suite per prompt, in the config's order; one suite with no prompt
        when the file has no prompts.
    :raises DatasetError: for any problem, naming the file, the line and the fix.
    """
    name = os.fspath(path)
    base = os.path.dirname(name)
    registry = _Lines()
    suffix = _suffix(name)
    stem = os.path.splitext(os.path.basename(name))[0]
    ctx = _Context(name, base, registry, dict(os.environ))
    if suffix == ".csv":
        document: Any = None
        raw_tests = _csv_tests(name, _read_text(name), base, ctx.notes)
    elif suffix in YAML_SUFFIXES or suffix == ".json":
        document = _parse_file(name, registry)
        if document is None:
            _fail(
                "the file is empty; write a promptfoo config (prompts: and tests:).",
                name,
            )
        if isinstance(document, list):
            raw_tests = [
                _test_from_value(
                    item, name, registry.item(document, i), ctx, None, i + 1
                )
                for i, item in enumerate(document)
            ]
            document = None
        elif isinstance(document, dict):
            if not any(
                k in document for k in ("tests", "prompts", "providers", "targets")
            ) and any(k in document for k in ("vars", "assert")):
                raw_tests = [_test_from_value(document, name, 1, ctx, None, 1)]
                document = None
            else:
                raw_tests = []
        else:
            _fail(
                f"the file holds {_kind(document)}; a promptfoo config is a mapping"
                " (prompts:, providers:, tests:) and a tests file a list of tests.",
                name,
            )
    else:
        _fail(
            f"a promptfoo file must be .yaml, .yml, .json or .csv, and this one has"
            f" {suffix or 'no suffix'}. Rename or convert it.",
            name,
        )

    prompts: list[_Prompt] = []
    default: tuple[_RawTest, _Checked] | None = None
    config_notes: list[str] = []
    if document is not None:
        env = document.get("env")
        if isinstance(env, dict):
            ctx.env.update({str(k): _as_text(v) for k, v in env.items()})
        if document.get("prompts") is not None:
            prompts = _read_prompts(document["prompts"], document, ctx)
            ctx.has_prompts = True
        raw_tests = _read_tests(document.get("tests"), document, ctx)
        default = _load_default_test(document, ctx)
        config_notes = _config_notes(document, ctx)
        if not raw_tests:
            if default is not None and document.get("defaultTest") is not None:
                # promptfoo runs a config with no tests as one test: defaultTest's.
                raw_tests = [
                    _RawTest({}, default[0].path, default[0].line, base, synthetic=True)
                ]
            else:
                extra = (
                    " (its scenarios are not run by ctxbench)"
                    if document.get("scenarios")
                    else ""
                )
                _fail(
                    f"the config has no tests{extra}. Add tests: (a list of tests, or a"
                    " file such as file://tests.csv).",
                    name,
                    registry.key(document, "tests"),
                )

    default_findings = _Findings()
    default_kept: list[dict[str, Any]] = []
    default_checked = default[1] if default else None
    if default is not None:
        dtest, dchecked = default
        default_kept = _filter_asserts(
            dchecked.asserts or [], ctx, dtest.path, dtest.line, default_findings, 0
        )
        for key in dchecked.options:
            if key not in _APPLIED_OPTIONS:
                default_findings.add(f"options.{key}", "not applied", 0)
        for key in dchecked.other:
            default_findings.add(*_TEST_EXTRAS[key], 0)

    prepared: list[_Prepared] = []
    for number, test in enumerate(raw_tests, 1):
        checked = _check_test(test, ctx, is_default=False)
        prepared.append(
            _prepare(test, number, checked, default_checked, default_kept, ctx)
        )

    # Ids: the description's slug, else the test's number; unique over the file.
    taken: set[str] = set()
    for item in prepared:
        base_id = (_slug(item.description) if item.description else "") or str(
            item.number
        )
        base_id = _unique(base_id, taken)
        if len(item.combos) == 1:
            item.ids = [base_id]
        else:
            item.ids = [
                _unique(f"{base_id}-{k}", taken) for k in range(1, len(item.combos) + 1)
            ]

    suites: list[PromptfooSuite] = []
    targets: list[_Prompt | None] = list(prompts) or [None]
    for prompt in targets:
        suites.append(
            _suite(
                name,
                stem,
                prompt,
                len(prompts),
                prepared,
                default_findings,
                config_notes,
                ctx,
            )
        )
    return suites


def _suite(
    path: str,
    stem: str,
    prompt: _Prompt | None,
    prompt_count: int,
    prepared: list[_Prepared],
    default_findings: _Findings,
    config_notes: list[str],
    ctx: _Context,
) -> PromptfooSuite:
    examples: list[dict[str, Any]] = []
    lines: list[int] = []
    sources: list[str] = []
    findings = _Findings()
    findings.merge(default_findings)
    missing: dict[str, list[int]] = {}
    for item in prepared:
        if prompt is not None and not _prompt_allowed(prompt, item.prompts):
            continue
        findings.merge(item.findings)
        for k, variables in enumerate(item.combos):
            example: dict[str, Any] = {"id": item.ids[k]}
            if item.description is not None:
                example["description"] = item.description
            example.update(copy.deepcopy(variables))
            template = None
            if prompt is not None:
                template = prompt.template
            elif "prompt" in variables:
                template = "{{prompt}}"  # promptfoo's prompt when a config has none
            if template is not None:
                try:
                    rendered, lost = _render_prompt(
                        item.prefix + template + item.suffix, variables, ctx.env
                    )
                except _TemplateError as exc:
                    _fail(
                        f"the prompt of test {item.number} cannot be rendered: {exc}"
                        " (with its options.prefix / options.suffix); ctxbench renders"
                        " only {{var}} substitution. Rewrite it.",
                        item.source,
                        item.line,
                    )
                example["prompt"] = rendered
                for name in lost:
                    numbers = missing.setdefault(name, [])
                    if item.number not in numbers:
                        numbers.append(item.number)
            if item.asserts is not None:
                example["assert"] = copy.deepcopy(item.asserts)
            if item.threshold is not None:
                example["threshold"] = item.threshold
            if item.metadata:
                example["metadata"] = copy.deepcopy(item.metadata)
            examples.append(example)
            lines.append(item.line)
            sources.append(item.source)
    notes = list(config_notes) + list(ctx.notes)
    if prompt is not None and prompt.has_config:
        notes.append(f"the prompt's config (prompt {prompt.label}): not applied")
    notes.extend(findings.sentences())
    for name, numbers in missing.items():
        notes.append(
            f"the var {name!r} the prompt uses is not set ({_places(numbers)}):"
            " rendered as empty text, as promptfoo does"
        )
    if prompt is not None and not examples:
        notes.append(
            f"no test runs on the prompt {prompt.label}: every test's prompts: names"
            " other prompts"
        )
    several = prompt_count > 1
    return PromptfooSuite(
        path=path,
        tag=f"{stem}:{prompt.label}" if (prompt is not None and several) else stem,
        prompt_label=None if prompt is None else prompt.label,
        examples=tuple(examples),
        lines=tuple(lines),
        sources=tuple(sources),
        notes=tuple(notes),
    )


# ============================================================ plain YAML datasets


def read_yaml_examples(
    path: str | os.PathLike[str],
) -> tuple[list[dict[str, Any]], list[int]]:
    """Read a plain YAML dataset: a list of example mappings, or a mapping whose
    ``examples`` field is that list.

    :returns: the examples and the 1-based line each starts on.
    :raises DatasetError: when PyYAML is missing, or the file is missing, unreadable,
        not valid YAML (with PyYAML's line), of another shape, empty, or holds an
        example that is not a mapping, a key that is not a string or a key twice.
    """
    name = os.fspath(path)
    needs_yaml(name)
    registry = _Lines()
    document = _parse_yaml(name, _read_text(name), registry, string_keys=True)
    shape = (
        "a YAML dataset is a list of example mappings, or a mapping whose 'examples'"
        " field is that list"
    )
    if document is None:
        _fail(f"the file is empty; {shape}. Add examples.", name)
    if isinstance(document, dict):
        if "examples" not in document:
            _fail(
                f"the top-level mapping has no 'examples' field; {shape}. Fix the file.",
                name,
                1,
            )
        examples = document["examples"]
        if not isinstance(examples, list):
            _fail(
                f"the 'examples' field holds {_kind(examples)}, not a list; {shape}."
                " Fix the file.",
                name,
                registry.key(document, "examples"),
            )
    elif isinstance(document, list):
        examples = document
    else:
        _fail(f"the file holds {_kind(document)}; {shape}. Fix the file.", name)
    if not examples:
        _fail("the list of examples is empty. Add at least one example.", name)
    lines: list[int] = []
    for index, example in enumerate(examples):
        line = registry.of(example) or registry.item(examples, index) or 1
        if not isinstance(example, dict):
            _fail(
                f"example {index + 1} is {_kind(example)}, not a mapping; {shape}. Fix"
                " the example.",
                name,
                registry.item(examples, index),
            )
        lines.append(line)
    return examples, lines


# ========================================================================= sniffing


def looks_like_promptfoo(path: str | os.PathLike[str]) -> bool:
    """Whether a file looks like a promptfoo config or tests file (cheap; never raises).

    True for a ``.yaml``/``.yml``/``.json`` mapping with ``tests`` or ``prompts``; a
    ``.yaml``/``.yml``/``.json`` list of mappings that use only promptfoo's test keys,
    one of them at least ``vars`` or ``assert``; a ``.csv`` whose header has one of
    promptfoo's ``__`` columns (``__expected``, ``__description``, ...).
    """
    try:
        return _looks_like(os.fspath(path))
    except Exception:  # noqa: BLE001 - a guess: garbage in, False out
        return False


def _shape_is_promptfoo(value: Any) -> bool:
    if isinstance(value, dict):
        return "tests" in value or "prompts" in value
    if isinstance(value, list) and value:
        return all(
            isinstance(item, dict) and all(k in _TEST_KEYS for k in item)
            for item in value
        ) and any("vars" in item or "assert" in item for item in value)
    return False


def _looks_like(name: str) -> bool:
    suffix = _suffix(name)
    if suffix not in (".csv", ".json") + YAML_SUFFIXES:
        return False
    if not_regular(name) is not None or not os.path.isfile(name):
        return False
    if suffix == ".json":
        if os.path.getsize(name) > _SNIFF_JSON_BYTES:
            return False
        with open(name, "rb") as handle:
            text = handle.read().decode("utf-8-sig")
        return _shape_is_promptfoo(json.loads(text))
    with open(name, "rb") as handle:
        data = handle.read(_SNIFF_BYTES + 1)
    text = data[:_SNIFF_BYTES].decode("utf-8-sig", errors="replace")
    if suffix == ".csv":
        if len(data) > _SNIFF_BYTES:
            text = text[: text.rfind("\n") + 1] or text  # whole lines only
        for _, row in _csv_rows(name, text):
            return any(
                n.startswith(("__expected", "__metadata:", "__config:"))
                or n in _CSV_SPECIAL
                for n in (cell.strip() for cell in row)
            )
        return False
    if len(data) > _SNIFF_BYTES:
        # Cut before the last line that starts at column 0: the document read so far
        # ends on a whole top-level item or key.
        cuts = [m.start() for m in re.finditer(r"\n(?=[^\s#])", text)]
        if not cuts:
            return False
        text = text[: cuts[-1] + 1]
    try:
        import yaml  # noqa: F401
    except ImportError:
        # No PyYAML: a top-level `tests:` or `prompts:` key is enough to say so (the
        # load then says to install PyYAML).
        return re.search(r"^(?:tests|prompts)\s*:", text, re.MULTILINE) is not None
    return _shape_is_promptfoo(_parse_yaml(name, text, _Lines()))
