"""Record bfcl-eval's own AST-checker verdicts for tests/test_tool_calls_bfcl.py.

For every task of BFCL v4's four Python AST categories as bfcl-eval ships them
(``simple_python``, ``multiple``, ``parallel``, ``parallel_multiple``: 1,000
tasks), this builds model outputs (the gold call and perturbations of it: a dropped
required argument, a wrong type, a renamed function, an extra call, swapped
parallel calls, ...) and asks bfcl-eval's ``ast_checker`` whether each is valid.
It writes the tasks (questions, function documents, possible answers), the outputs
and the verdicts to ``bfcl_verdicts.json.gz`` beside this file, so that the test
needs no bfcl-eval.

bfcl-eval imports many SDKs at import (torch through sentence-transformers, ...),
so it is not imported: its checker module is loaded in isolation, with the light
modules it imports (enums, type tables, the Java/JS converters) loaded from their
files and the model table replaced by one model whose names keep their dots (an
API that allows dots in function names). Install it without its dependencies::

    python3 -m venv /tmp/bfclenv
    /tmp/bfclenv/bin/pip install --no-deps bfcl-eval
    /tmp/bfclenv/bin/python tests/oracles/bfcl_record.py

Only the standard library is used. The perturbations are deterministic (no
randomness): running it again on the same bfcl-eval version writes the same cases.
"""

from __future__ import annotations

import argparse
import copy
import gzip
import importlib.util
import json
import os
import sys
import types
from pathlib import Path
from typing import Any

CATEGORIES = ("simple_python", "multiple", "parallel", "parallel_multiple")
HERE = Path(__file__).resolve().parent
OUT = HERE / "bfcl_verdicts.json.gz"
MODEL = "recorder"


# ------------------------------------------------------------------ the oracle


def _load(name: str, path: str) -> types.ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None, path
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _package(name: str, path: str) -> None:
    module = types.ModuleType(name)
    module.__path__ = [path]  # type: ignore[attr-defined]
    sys.modules[name] = module


def load_checker(root: str) -> tuple[Any, Any]:
    """bfcl-eval's ``ast_checker`` function and ``Language`` enum, from the package
    folder ``root``, without importing the package."""
    _package("bfcl_eval", root)
    _package("bfcl_eval.constants", os.path.join(root, "constants"))
    enums = _load("bfcl_eval.constants.enums", os.path.join(root, "constants", "enums.py"))
    _load("bfcl_eval.constants.type_mappings", os.path.join(root, "constants", "type_mappings.py"))
    config = types.ModuleType("bfcl_eval.constants.model_config")

    class _Config:
        underscore_to_dot = False

    config.MODEL_CONFIG_MAPPING = {MODEL: _Config()}  # type: ignore[attr-defined]
    sys.modules[config.__name__] = config
    checker_dir = os.path.join(root, "eval_checker", "ast_eval")
    _package("bfcl_eval.eval_checker", os.path.join(root, "eval_checker"))
    _package("bfcl_eval.eval_checker.ast_eval", checker_dir)
    _package("bfcl_eval.eval_checker.ast_eval.type_convertor", os.path.join(checker_dir, "type_convertor"))
    for conv in ("java_type_converter", "js_type_converter"):
        _load(f"bfcl_eval.eval_checker.ast_eval.type_convertor.{conv}",
              os.path.join(checker_dir, "type_convertor", f"{conv}.py"))
    checker = _load("bfcl_eval.eval_checker.ast_eval.ast_checker", os.path.join(checker_dir, "ast_checker.py"))
    return checker.ast_checker, enums.Language


def bfcl_root(given: str | None) -> str:
    if given:
        return given
    spec = importlib.util.find_spec("bfcl_eval")  # finds, does not import
    if spec is None or not spec.submodule_search_locations:
        sys.exit("bfcl-eval is not installed here: pip install --no-deps bfcl-eval, or pass --root")
    return list(spec.submodule_search_locations)[0]


# ------------------------------------------------------------------ the outputs


def _first(accepted: list[Any]) -> tuple[bool, Any]:
    """(has a value, the first accepted value that is not the optional marker)."""
    for value in accepted:
        if value != "":
            return True, _concrete(value)
    return False, None


def _last(accepted: list[Any]) -> tuple[bool, Any]:
    for value in reversed(accepted):
        if value != "":
            return True, _concrete(value)
    return False, None


def _concrete(value: Any) -> Any:
    """An accepted value as a model would give it: an object's keys hold lists of
    accepted values in BFCL's possible answer (also objects inside a list)."""
    if isinstance(value, dict):
        out = {}
        for key, options in value.items():
            if isinstance(options, list):
                ok, chosen = _first(options)
                if ok:
                    out[key] = chosen
            else:
                out[key] = options
        return out
    if isinstance(value, list):
        return [_concrete(v) if isinstance(v, dict) else v for v in value]
    return value


def gold(truth: list[dict[str, Any]], pick: Any = _first, keep_optional: bool = True) -> list[dict[str, Any]]:
    calls = []
    for item in truth:
        ((name, args),) = item.items()
        out = {}
        for arg, accepted in args.items():
            if not keep_optional and "" in accepted:
                continue
            ok, value = pick(accepted)
            if ok:
                out[arg] = value
        calls.append({name: out})
    return calls


def _other_type(value: Any) -> Any:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return str(value)
    if isinstance(value, str):
        return 12345
    if isinstance(value, list):
        return "[" + ", ".join(map(str, value)) + "]"
    if isinstance(value, dict):
        return json.dumps(value)
    return "x"


def _other_value(value: Any) -> Any:
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return value + 7
    if isinstance(value, float):
        return value + 0.5
    if isinstance(value, str):
        return value + " zzq"
    if isinstance(value, list):
        return [*value, value[-1]] if value else ["zzq"]
    if isinstance(value, dict):
        return {**value, "zzq": 1}
    return None


def _variant(text: str) -> str:
    """A spelling BFCL's string normalisation reads as the same string."""
    return text.upper().replace(" ", "-") + "."


def perturbations(task: dict[str, Any], truth: list[dict[str, Any]]) -> list[tuple[str, list[dict[str, Any]]]]:
    """(kind, model output) for one task: the gold and its perturbations."""
    docs = {f["name"]: f for f in task["function"]}
    base = gold(truth)
    cases: list[tuple[str, list[dict[str, Any]]]] = [("gold", base)]
    seen = {json.dumps(base, sort_keys=True)}

    def add(kind: str, output: list[dict[str, Any]]) -> None:
        key = json.dumps(output, sort_keys=True)
        if key not in seen:
            seen.add(key)
            cases.append((kind, output))

    add("gold_min", gold(truth, keep_optional=False))
    add("gold_alt", gold(truth, pick=_last))
    first_name, first_args = next(iter(base[0].items()))
    doc = docs.get(first_name, {})
    params = doc.get("parameters", {})
    props = params.get("properties", {})
    required = [r for r in params.get("required", []) if r in first_args]
    if required:
        out = copy.deepcopy(base)
        del out[0][first_name][required[0]]
        add("drop_required", out)
    elif first_args:
        out = copy.deepcopy(base)
        del out[0][first_name][next(iter(first_args))]
        add("drop_argument", out)
    for arg, value in first_args.items():
        out = copy.deepcopy(base)
        out[0][first_name][arg] = _other_type(value)
        add("wrong_type", out)
        out = copy.deepcopy(base)
        out[0][first_name][arg] = _other_value(value)
        add("wrong_value", out)
        break
    for arg, value in first_args.items():
        kind = props.get(arg, {}).get("type")
        if kind == "float" and isinstance(value, float) and value.is_integer():
            out = copy.deepcopy(base)
            out[0][first_name][arg] = int(value)
            add("int_for_float", out)
        if kind == "integer" and isinstance(value, int) and not isinstance(value, bool):
            out = copy.deepcopy(base)
            out[0][first_name][arg] = float(value)
            add("float_for_int", out)
            if value in (0, 1):
                out = copy.deepcopy(base)
                out[0][first_name][arg] = bool(value)
                add("bool_for_int", out)
        if isinstance(value, str) and value.strip():
            out = copy.deepcopy(base)
            out[0][first_name][arg] = _variant(value)
            add("string_variant", out)
        if isinstance(value, list) and any(isinstance(v, str) for v in value):
            out = copy.deepcopy(base)
            out[0][first_name][arg] = [v.lower().replace(" ", "_") if isinstance(v, str) else v for v in value]
            add("list_variant", out)
        if isinstance(value, dict) and value:
            out = copy.deepcopy(base)
            del out[0][first_name][arg][next(iter(value))]
            add("dict_drop_key", out)
    out = copy.deepcopy(base)
    out[0] = {f"{first_name}_v2": first_args}
    add("renamed", out)
    out = copy.deepcopy(base)
    out[0][first_name]["zzq_unexpected"] = 1
    add("unexpected_argument", out)
    add("extra_call", copy.deepcopy(base) + [copy.deepcopy(base[0])])
    add("no_call", [])
    if len(base) >= 2:
        add("swapped", list(reversed(copy.deepcopy(base))))
        add("dropped_call", copy.deepcopy(base[:-1]))
        out = copy.deepcopy(base)
        out[0], out[1] = out[1], out[0]
        add("swap_first_two", out)
    return cases


# ------------------------------------------------------------------ recording


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", help="the bfcl_eval package folder (default: the installed one)")
    parser.add_argument("--out", default=str(OUT))
    args = parser.parse_args(argv)
    root = bfcl_root(args.root)
    ast_checker, language = load_checker(root)
    version = "unknown"
    parent = os.path.dirname(root)
    for entry in sorted(os.listdir(parent)):
        if entry.startswith("bfcl_eval-") and entry.endswith(".dist-info"):
            version = entry[len("bfcl_eval-"):-len(".dist-info")]
    doc: dict[str, Any] = {"bfcl_eval": version, "model_name": MODEL, "categories": {}, "cases": []}
    counts: dict[str, int] = {}
    for category in CATEGORIES:
        data = os.path.join(root, "data")
        with open(os.path.join(data, f"BFCL_v4_{category}.json"), encoding="utf-8") as f:
            tasks = [json.loads(line) for line in f if line.strip()]
        with open(os.path.join(data, "possible_answer", f"BFCL_v4_{category}.json"), encoding="utf-8") as f:
            answers = {a["id"]: a for a in (json.loads(line) for line in f if line.strip())}
        doc["categories"][category] = {"tasks": tasks, "answers": [answers[t["id"]] for t in tasks]}
        for task in tasks:
            truth = answers[task["id"]]["ground_truth"]
            for kind, output in perturbations(task, truth):
                try:
                    verdict = bool(ast_checker(task["function"], copy.deepcopy(output), truth,
                                               language.PYTHON, category, MODEL)["valid"])
                except Exception as exc:  # the checker's own crash: recorded as such
                    verdict = None
                    print(f"{task['id']} {kind}: the checker raised {type(exc).__name__}: {exc}",
                          file=sys.stderr)
                doc["cases"].append([task["id"], kind, output, verdict])
                counts[kind] = counts.get(kind, 0) + 1
    text = json.dumps(doc, ensure_ascii=False, separators=(",", ":"), sort_keys=True)
    with gzip.GzipFile(args.out, "wb", mtime=0) as out:
        out.write(text.encode("utf-8"))
    valid = sum(1 for c in doc["cases"] if c[3])
    print(f"bfcl-eval {version}: {sum(len(c['tasks']) for c in doc['categories'].values())} tasks,"
          f" {len(doc['cases'])} cases ({valid} valid) -> {args.out}")
    for kind, n in sorted(counts.items()):
        print(f"  {kind}: {n}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
