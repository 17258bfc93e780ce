"""Oracle: agentevals' trajectory match verdicts on generated trajectories.

NOT part of the test suite (agentevals needs openevals and LangChain, which are never
dependencies of pytest-context-bench). Run it by hand in a separate virtualenv to
(re)record the verdicts that ``tests/test_trajectory.py`` compares
``TrajectoryMatch`` with::

    python -m venv /tmp/aeenv
    /tmp/aeenv/bin/pip install 'agentevals==0.0.9'
    /tmp/aeenv/bin/python tests/oracles/agentevals_record.py

It generates the cases with a seeded generator (standard library only: the same
seed gives the same cases), runs
``agentevals.trajectory.match.create_trajectory_match_evaluator`` on each case in
each of the 16 combinations of ``trajectory_match_mode`` (strict, unordered, subset,
superset) and ``tool_args_match_mode`` (exact, ignore, subset, superset), and writes
``tests/oracles/agentevals_verdicts.json.gz``: the cases, each verdict (``true``,
``false``, or ``"error: <exception type>"`` when agentevals raised), and the
versions used. ``--check`` regenerates the cases and only compares them with the
recorded file (no agentevals needed).
"""

from __future__ import annotations

import copy
import gzip
import json
import random
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
OUT = HERE / "agentevals_verdicts.json.gz"
SEED = 20240535
N_CASES = 160
N_OVERRIDE_CASES = 48
N_PYTHON_EQUAL_CASES = 16

TRAJECTORY_MODES = ("strict", "unordered", "subset", "superset")
ARGS_MODES = ("exact", "ignore", "subset", "superset")

TOOLS = ("get_weather", "search", "lookup_order", "send_email", "calculator")
KEYS = ("city", "query", "units", "limit", "order_id", "to", "expr", "filters", "strict")


# --- the generator ----------------------------------------------------------------


def _value(rng: random.Random, depth: int = 0) -> Any:
    kind = rng.randrange(9 if depth < 2 else 6)
    if kind == 0:
        return rng.choice(["Paris", "paris", "London", "", "café", "a, b", "x" * 30])
    if kind == 1:
        return rng.choice([0, 1, 2, 7, -3, 10**12])
    if kind == 2:
        return rng.choice([0.5, 1.0, 2.25, -0.0])
    if kind == 3:
        return rng.choice([True, False])
    if kind == 4:
        return None
    if kind == 5:
        return rng.choice(["metric", "imperial", "42"])
    if kind == 6:
        return [_value(rng, depth + 1) for _ in range(rng.randrange(3))]
    return {k: _value(rng, depth + 1) for k in rng.sample(KEYS, rng.randrange(1, 3))}


def _args(rng: random.Random) -> dict[str, Any]:
    return {k: _value(rng) for k in rng.sample(KEYS, rng.randrange(0, 4))}


def _call(rng: random.Random, ids: list[int], name: str | None = None) -> dict[str, Any]:
    ids[0] += 1
    args = _args(rng)
    return {
        "id": f"call_{ids[0]}",
        "type": "function",
        "function": {"name": name or rng.choice(TOOLS), "arguments": json.dumps(args)},
    }


def _reference(rng: random.Random, ids: list[int]) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = []
    if rng.random() < 0.2:
        messages.append({"role": "system", "content": "You are a helpful agent."})
    messages.append({"role": "user", "content": "Please help."})
    for _ in range(rng.randrange(1, 4)):
        calls = [_call(rng, ids) for _ in range(rng.randrange(0, 3) if rng.random() < 0.2 else rng.randrange(1, 3))]
        if calls:
            messages.append({"role": "assistant", "content": "", "tool_calls": calls})
            for c in calls:
                messages.append({"role": "tool", "content": "ok", "tool_call_id": c["id"]})
        else:
            messages.append({"role": "assistant", "content": "Thinking."})
    messages.append({"role": "assistant", "content": "Done."})
    return messages


def _assistant_with_calls(messages: list[dict[str, Any]]) -> list[int]:
    return [i for i, m in enumerate(messages) if m["role"] == "assistant" and m.get("tool_calls")]


def _all_calls(messages: list[dict[str, Any]]) -> list[tuple[int, int]]:
    return [(i, k) for i in _assistant_with_calls(messages) for k in range(len(messages[i]["tool_calls"]))]


def _edit_args(rng: random.Random, call: dict[str, Any]) -> None:
    """Change the arguments of one call: a value, a key added or removed, a value
    of another type that Python calls equal (1 and True, 1 and 1.0)."""
    args = json.loads(call["function"]["arguments"])
    how = rng.randrange(6)
    if how == 0 or not args:
        args[rng.choice(KEYS)] = _value(rng)
    elif how == 1:
        del args[rng.choice(sorted(args))]
    elif how == 2:
        key = rng.choice(sorted(args))
        args[key] = _value(rng)
    elif how == 3:  # Python's equalities that JSON does not share
        key = rng.choice(sorted(args))
        args[key] = rng.choice([True, 1, 1.0, False, 0])
    elif how == 4:  # nested change
        key = rng.choice(sorted(args))
        args[key] = {"inner": args[key]}
    else:
        key = rng.choice(sorted(args))
        args[key + "_2"] = args[key]
    call["function"]["arguments"] = json.dumps(args)


def _perturb(rng: random.Random, messages: list[dict[str, Any]], ids: list[int]) -> str:
    """Apply one perturbation to ``messages`` (in place); its name."""
    kinds = [
        "same", "reorder_calls", "swap_steps", "move_call", "drop_call", "extra_call",
        "duplicate_call", "change_args", "rename_tool", "merge_steps", "split_step",
        "no_calls_step", "extra_text_step", "drop_final", "change_role",
        "reformat_json", "content_change", "empty_tool_calls",
    ]
    kind = rng.choice(kinds)
    steps = _assistant_with_calls(messages)
    calls = _all_calls(messages)
    if kind == "reorder_calls" and steps:
        i = rng.choice(steps)
        rng.shuffle(messages[i]["tool_calls"])
    elif kind == "swap_steps" and len(steps) >= 2:
        a, b = rng.sample(steps, 2)
        messages[a]["tool_calls"], messages[b]["tool_calls"] = messages[b]["tool_calls"], messages[a]["tool_calls"]
    elif kind == "move_call" and len(steps) >= 2 and calls:
        i, k = rng.choice(calls)
        call = messages[i]["tool_calls"].pop(k)
        j = rng.choice([s for s in steps if s != i])
        messages[j]["tool_calls"].insert(rng.randrange(len(messages[j]["tool_calls"]) + 1), call)
        if not messages[i]["tool_calls"]:
            del messages[i]["tool_calls"]
    elif kind == "drop_call" and calls:
        i, k = rng.choice(calls)
        call = messages[i]["tool_calls"].pop(k)
        if not messages[i]["tool_calls"]:
            del messages[i]["tool_calls"]
        for j, m in enumerate(messages):
            if m["role"] == "tool" and m.get("tool_call_id") == call["id"]:
                del messages[j]
                break
    elif kind == "extra_call":
        if steps:
            i = rng.choice(steps)
            messages[i]["tool_calls"].insert(rng.randrange(len(messages[i]["tool_calls"]) + 1), _call(rng, ids))
        else:
            messages.insert(len(messages) - 1, {"role": "assistant", "content": "", "tool_calls": [_call(rng, ids)]})
    elif kind == "duplicate_call" and calls:
        i, k = rng.choice(calls)
        dup = copy.deepcopy(messages[i]["tool_calls"][k])
        ids[0] += 1
        dup["id"] = f"call_{ids[0]}"
        target = rng.choice(steps)
        messages[target]["tool_calls"].append(dup)
    elif kind == "change_args" and calls:
        i, k = rng.choice(calls)
        _edit_args(rng, messages[i]["tool_calls"][k])
    elif kind == "rename_tool" and calls:
        i, k = rng.choice(calls)
        fn = messages[i]["tool_calls"][k]["function"]
        fn["name"] = rng.choice([t for t in TOOLS if t != fn["name"]] + [fn["name"].upper()])
    elif kind == "merge_steps" and len(steps) >= 2:
        a, b = sorted(rng.sample(steps, 2))
        messages[a]["tool_calls"].extend(messages[b]["tool_calls"])
        del messages[b]["tool_calls"]
    elif kind == "split_step" and steps:
        i = rng.choice(steps)
        if len(messages[i]["tool_calls"]) >= 2:
            moved = messages[i]["tool_calls"].pop()
            messages.insert(i + 1, {"role": "assistant", "content": "", "tool_calls": [moved]})
    elif kind == "no_calls_step" and steps:
        i = rng.choice(steps)
        del messages[i]["tool_calls"]
    elif kind == "extra_text_step":
        messages.insert(rng.randrange(1, len(messages) + 1), {"role": "assistant", "content": "Let me think."})
    elif kind == "drop_final" and messages[-1]["role"] == "assistant":
        messages.pop()
    elif kind == "change_role":
        tools = [j for j, m in enumerate(messages) if m["role"] == "tool"]
        if tools:
            j = rng.choice(tools)
            messages[j] = {"role": "user", "content": messages[j]["content"]}
    elif kind == "reformat_json" and calls:
        for i, k in calls:
            fn = messages[i]["tool_calls"][k]["function"]
            args = json.loads(fn["arguments"])
            fn["arguments"] = json.dumps(dict(reversed(list(args.items()))), indent=rng.choice([None, 2]))
    elif kind == "content_change":
        for m in messages:
            if m["role"] in ("assistant", "user") and rng.random() < 0.5:
                m["content"] = "something else entirely"
    elif kind == "empty_tool_calls":
        texts = [j for j, m in enumerate(messages) if m["role"] == "assistant" and not m.get("tool_calls")]
        if texts:
            messages[rng.choice(texts)]["tool_calls"] = rng.choice([[], None])
    else:
        return "same"
    return kind


def _restyle(rng: random.Random, messages: list[dict[str, Any]]) -> str:
    """The same trajectory written another way: as LangChain message dicts, or with
    arguments as objects instead of JSON text."""
    if rng.random() < 0.5:
        for j, m in enumerate(messages):
            role = {"user": "human", "assistant": "ai"}.get(m["role"], m["role"])
            new = {"type" if rng.random() < 0.5 else "role": role, "content": m.get("content", "")}
            if m.get("tool_calls"):
                new["tool_calls"] = [
                    {"name": c["function"]["name"], "args": json.loads(c["function"]["arguments"]), "id": c["id"]}
                    for c in m["tool_calls"]
                ]
            if "tool_call_id" in m:
                new["tool_call_id"] = m["tool_call_id"]
            messages[j] = new
        return "langchain"
    for i, k in _all_calls(messages):
        fn = messages[i]["tool_calls"][k]["function"]
        fn["arguments"] = json.loads(fn["arguments"])
    return "dict_arguments"


def _odd(rng: random.Random, messages: list[dict[str, Any]]) -> str:
    """Arguments agentevals cannot read (it raises; TrajectoryMatch calls them a
    mismatch: docs/differences.md)."""
    calls = _all_calls(messages)
    if not calls:
        messages.insert(len(messages) - 1, {"role": "assistant", "content": "", "tool_calls": [
            {"id": "call_odd", "type": "function", "function": {"name": "search", "arguments": "{}"}}]})
        calls = _all_calls(messages)
    i, k = rng.choice(calls)
    fn = messages[i]["tool_calls"][k]["function"]
    fn["arguments"] = rng.choice(['{"city": "Paris"', "not json", "", "[1, 2]", "null"])
    return "unreadable_arguments"


def _python_equal(rng: random.Random, outputs: list[dict[str, Any]], reference: list[dict[str, Any]]) -> str:
    """One argument of the System's call written as a value Python calls equal and
    JSON does not (``true`` for ``1``, ``0`` for ``false``): agentevals compares
    with Python's ``==``, TrajectoryMatch as JSON (docs/differences.md)."""
    swap = {True: 1, False: 0}
    i, k = rng.choice(_all_calls(outputs))
    call = outputs[i]["tool_calls"][k]
    want = next(c for m in reference for c in m.get("tool_calls") or [] if c["id"] == call["id"])
    args = json.loads(call["function"]["arguments"])
    ref_args = json.loads(want["function"]["arguments"])
    value = rng.choice([True, False])
    ref_args["strict"] = value
    args["strict"] = swap[value] if rng.random() < 0.5 else value
    if args["strict"] is value:  # the other way round: the expected call holds the number
        ref_args["strict"] = swap[value]
    call["function"]["arguments"] = json.dumps(args)
    want["function"]["arguments"] = json.dumps(ref_args)
    return "python_equal"


def generate() -> list[dict[str, Any]]:
    """The cases: ``{"id", "kinds", "outputs", "reference"}`` (and ``overrides``
    for the override cases)."""
    rng = random.Random(SEED)
    ids = [0]
    cases = []
    for n in range(N_CASES + N_OVERRIDE_CASES):
        reference = _reference(rng, ids)
        outputs = copy.deepcopy(reference)
        kinds = [_perturb(rng, outputs, ids) for _ in range(rng.choice([0, 1, 1, 1, 2, 2, 3]))]
        if rng.random() < 0.05:
            kinds.append(_odd(rng, outputs))
        elif rng.random() < 0.15:
            kinds.append(_restyle(rng, outputs))
        case: dict[str, Any] = {"id": f"t{n:03d}", "kinds": kinds or ["same"], "outputs": outputs, "reference": reference}
        if n >= N_CASES:
            names = sorted({c["function"]["name"] for m in reference for c in m.get("tool_calls") or []})
            overrides: dict[str, Any] = {}
            for name in rng.sample(names, min(len(names), rng.randrange(1, 3))) if names else []:
                overrides[name] = (
                    rng.choice(ARGS_MODES) if rng.random() < 0.6 else rng.sample(KEYS, rng.randrange(1, 3))
                )
            if rng.random() < 0.3:
                overrides.setdefault("search", ["filters.city", "query"])
            case["id"] = f"o{n - N_CASES:03d}"
            case["overrides"] = overrides
        cases.append(case)
    for n in range(N_PYTHON_EQUAL_CASES):
        reference = _reference(rng, ids)
        while not _all_calls(reference):
            reference = _reference(rng, ids)
        outputs = copy.deepcopy(reference)
        kinds = [_python_equal(rng, outputs, reference)]
        if rng.random() < 0.5:
            kinds.append(_perturb(rng, outputs, ids))
        cases.append({"id": f"p{n:03d}", "kinds": kinds, "outputs": outputs, "reference": reference})
    return cases


# --- recording --------------------------------------------------------------------


def verdicts(cases: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    import warnings

    warnings.filterwarnings("ignore")
    from agentevals.trajectory.match import create_trajectory_match_evaluator

    out: dict[str, dict[str, Any]] = {}
    for case in cases:
        got: dict[str, Any] = {}
        for tm in TRAJECTORY_MODES:
            for am in ARGS_MODES:
                evaluator = create_trajectory_match_evaluator(
                    trajectory_match_mode=tm,  # type: ignore[arg-type]
                    tool_args_match_mode=am,  # type: ignore[arg-type]
                    tool_args_match_overrides=copy.deepcopy(case.get("overrides")),
                )
                try:  # agentevals changes the messages it is given: copies
                    result = evaluator(
                        outputs=copy.deepcopy(case["outputs"]),
                        reference_outputs=copy.deepcopy(case["reference"]),
                    )
                    got[f"{tm}/{am}"] = bool(result["score"])
                except Exception as exc:  # noqa: BLE001 - the verdict is that it raised
                    got[f"{tm}/{am}"] = f"error: {type(exc).__name__}"
        out[case["id"]] = got
    return out


def main(argv: list[str]) -> int:
    cases = generate()
    if "--check" in argv:
        with gzip.open(OUT, "rt", encoding="utf-8") as f:
            recorded = json.load(f)
        same = recorded["cases"] == json.loads(json.dumps(cases))
        print("cases match the recorded ones" if same else "cases DIFFER from the recorded ones")
        return 0 if same else 1
    import importlib.metadata as md

    doc = {
        "recorded_with": "tests/oracles/agentevals_record.py",
        "seed": SEED,
        "versions": {p: md.version(p) for p in ("agentevals", "openevals", "langchain-core")},
        "python": sys.version.split()[0],
        "cases": cases,
        "verdicts": verdicts(cases),
    }
    data = json.dumps(doc, ensure_ascii=False, sort_keys=True, separators=(",", ":")).encode()
    with open(OUT, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as f:
        f.write(data)
    flat = [v for case in doc["verdicts"].values() for v in case.values()]
    print(
        f"{len(cases)} cases, {len(flat)} verdicts: {sum(v is True for v in flat)} match,"
        f" {sum(v is False for v in flat)} no match, {sum(isinstance(v, str) for v in flat)} errors"
        f" -> {OUT}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
