"""BFCL as BFCL scores it: ToolCallMatch's verdicts against bfcl-eval's own AST checker.

tests/oracles/bfcl_record.py ran bfcl-eval's ``ast_checker`` (loaded in isolation:
bfcl-eval itself imports many SDKs) on every task of BFCL v4's four Python AST
categories as bfcl-eval ships them (1,000 tasks), each with the gold call and
perturbations of it (a dropped required argument, a wrong type, a wrong value, a
renamed function, an unexpected argument, an extra call, no call, swapped or dropped
parallel calls, int for float, float for int, spellings BFCL's normalisation
accepts, ...), and wrote the tasks, the outputs and its verdicts to
``bfcl_verdicts.json.gz``. Here the tasks are written back in BFCL's file format
into a data directory, read by ``--ctxbench-dataset=bfcl:<category>``, and every
output is judged: the verdicts must be BFCL's except the differences
docs/differences.md lists, whose case ids are asserted exactly (a new difference
fails). No bfcl-eval is needed.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from helpers import read_json
from pytest_context_bench.datasets import resolve_dataset
from pytest_context_bench.evaluators.tool_calls import (
    ToolCallMatch,
    match_tool_calls,
    parse_calls,
    parse_expected,
    parse_tools,
)

ORACLE = Path(__file__).parent / "oracles" / "bfcl_verdicts.json.gz"
DOCS = Path(__file__).parents[1] / "docs" / "differences.md"
CATEGORIES = ("simple_python", "multiple", "parallel", "parallel_multiple")

#: (task id, perturbation) of the cases where our verdict is not BFCL's, each a row
#: of docs/differences.md.
DIFFERENCES = {
    # the first call fits both of the first two expected calls, BFCL pairs it with
    # the first one greedily and then finds nothing for the second; a maximum
    # matching pairs the calls crosswise and accepts the reply
    ("parallel_178", "swapped"),
}


@pytest.fixture(scope="module")
def oracle() -> dict[str, Any]:
    with gzip.open(ORACLE, "rb") as f:
        doc: dict[str, Any] = json.loads(f.read())
    return doc


def write_bfcl(root: Path, oracle: dict[str, Any], per_category: int | None = None) -> None:
    """The recorded tasks in BFCL's format: ``bfcl/BFCL_v4_<category>.json`` and
    ``bfcl/possible_answer/BFCL_v4_<category>.json``, JSON lines."""
    folder = root / "bfcl"
    (folder / "possible_answer").mkdir(parents=True, exist_ok=True)
    for category in CATEGORIES:
        data = oracle["categories"][category]
        tasks, answers = data["tasks"][:per_category], data["answers"][:per_category]
        (folder / f"BFCL_v4_{category}.json").write_text(
            "".join(json.dumps(t) + "\n" for t in tasks), encoding="utf-8")
        (folder / "possible_answer" / f"BFCL_v4_{category}.json").write_text(
            "".join(json.dumps(a) + "\n" for a in answers), encoding="utf-8")


def openai_calls(output: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """BFCL's decoded output (``[{name: {arg: value}}]``) as an OpenAI reply's
    ``tool_calls`` (arguments as JSON text)."""
    return [
        {"id": f"call_{i}", "type": "function",
         "function": {"name": name, "arguments": json.dumps(args)}}
        for i, item in enumerate(output) for name, args in item.items()
    ]


def test_the_record_covers_every_python_ast_task(oracle: dict[str, Any]) -> None:
    counts = {c: len(oracle["categories"][c]["tasks"]) for c in CATEGORIES}
    assert counts == {"simple_python": 400, "multiple": 200, "parallel": 200, "parallel_multiple": 200}
    per_task: dict[str, set[str]] = {}
    for task_id, kind, _output, verdict in oracle["cases"]:
        per_task.setdefault(task_id, set()).add(kind)
        assert verdict in (True, False)  # the checker never crashed on these
    assert len(per_task) == 1000
    for task_id, kinds in per_task.items():
        assert "gold" in kinds and len(kinds) >= 4, (task_id, kinds)
        assert {"drop_required", "wrong_type", "renamed", "extra_call"} <= kinds, (task_id, kinds)
    verdicts = {(t, k): v for t, k, _, v in oracle["cases"]}
    # the gold call is valid, but where BFCL's possible answer fills an optional
    # argument that the function document lacks (BFCL's own data); leaving the
    # optional arguments out is valid there
    assert {t for t in per_task if not verdicts[(t, "gold")]} == {"parallel_multiple_12", "parallel_multiple_26"}
    assert verdicts[("parallel_multiple_12", "gold_min")] and verdicts[("parallel_multiple_26", "gold_min")]
    assert not any(v for (t, k), v in verdicts.items() if k in ("renamed", "extra_call", "no_call"))


def test_our_verdicts_are_bfcls(
    oracle: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_bfcl(tmp_path, oracle)
    monkeypatch.setenv("CTXBENCH_DATA_DIR", str(tmp_path))
    parsed: dict[str, Any] = {}
    examples: dict[str, dict[str, Any]] = {}
    for category in CATEGORIES:
        ds = resolve_dataset(f"bfcl:{category}")
        tasks = oracle["categories"][category]["tasks"]
        assert ds.ids == [t["id"] for t in tasks]  # BFCL's ids, in its order
        assert ds.evaluator_fields == {"expected_tool_calls"} and ds.tag == ("bfcl" if category == "simple_python" else f"bfcl:{category}")
        for i, task in enumerate(tasks):
            example = ds[i]
            assert example["tools"] == task["function"]
            assert "answer" not in example
            examples[task["id"]] = example
            parsed[task["id"]] = (parse_expected(example["expected_tool_calls"]), parse_tools(example["tools"]))
    differ: set[tuple[str, str]] = set()
    for task_id, kind, output, verdict in oracle["cases"]:
        expected, tools = parsed[task_id]
        calls, _ = parse_calls(openai_calls(output))
        ours = match_tool_calls(calls, expected, tools, explain=False).passed
        if ours != verdict:
            differ.add((task_id, kind))
    total = len(oracle["cases"])
    assert total > 12_000
    assert differ == DIFFERENCES, sorted(differ - DIFFERENCES)
    assert (total - len(differ)) / total >= 0.995
    # the evaluator itself (details and all) on a sample: the same verdicts
    ev = ToolCallMatch()
    for task_id, kind, output, verdict in oracle["cases"][::37]:
        scores, details = ev.score_details(examples[task_id], {"tool_calls": openai_calls(output)})
        assert (scores["tool_call_match"] == 1.0) == (verdict != ((task_id, kind) in DIFFERENCES)), (task_id, kind)
        assert details is not None and details["reason"]
        assert ("misses" in details) == (scores["tool_call_match"] == 0.0)


def test_every_difference_is_documented() -> None:
    text = DOCS.read_text(encoding="utf-8")
    for task_id, kind in DIFFERENCES:
        assert f"`{task_id}`" in text and kind in text, (task_id, kind)


# ------------------------------------------------------------------ where BFCL comes from


def test_bfcl_eval_installed_is_read_without_importing_it(
    oracle: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    package = tmp_path / "site" / "bfcl_eval"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("raise ImportError('bfcl_eval must not be imported')\n")
    write_bfcl(tmp_path / "site", oracle, per_category=3)
    (tmp_path / "site" / "bfcl").rename(package / "data")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    monkeypatch.delenv("CTXBENCH_DATA_DIR", raising=False)
    ds = resolve_dataset("bfcl:parallel")
    assert ds.ids == ["parallel_0", "parallel_1", "parallel_2"]
    assert ds.source == str(package / "data" / "BFCL_v4_parallel.json")
    # the data directory comes first
    write_bfcl(tmp_path / "dir", oracle, per_category=2)
    monkeypatch.setenv("CTXBENCH_DATA_DIR", str(tmp_path / "dir"))
    assert resolve_dataset("bfcl:parallel").ids == ["parallel_0", "parallel_1"]


def test_bfcl_v3_files_are_still_read(
    oracle: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "bfcl"
    (folder / "possible_answer").mkdir(parents=True)
    tasks = oracle["categories"]["simple_python"]["tasks"][:2]
    answers = oracle["categories"]["simple_python"]["answers"][:2]
    v3 = [{**t, "id": t["id"].replace("simple_python", "simple")} for t in tasks]
    v3_answers = [{**a, "id": a["id"].replace("simple_python", "simple")} for a in answers]
    (folder / "BFCL_v3_simple.json").write_text("".join(json.dumps(t) + "\n" for t in v3))
    (folder / "possible_answer" / "BFCL_v3_simple.json").write_text(
        "".join(json.dumps(a) + "\n" for a in v3_answers))
    monkeypatch.setenv("CTXBENCH_DATA_DIR", str(tmp_path))
    monkeypatch.syspath_prepend(str(tmp_path / "nothing"))
    ds = resolve_dataset("bfcl")
    assert ds.ids == ["simple_0", "simple_1"] and ds.evaluator_fields == {"expected_tool_calls"}
    # v3's simple file is the default config's only: another config does not take it
    with pytest.raises(Exception, match="BFCL_v4_multiple.json"):
        resolve_dataset("bfcl:multiple")


# ------------------------------------------------------------------ the plugin path


SYSTEM = '''
import json, os

class Replay:
    """Answers each BFCL task with the recorded model output chosen for it."""
    name = "replay"

    def __init__(self):
        with open(os.path.join(os.path.dirname(__file__), "outputs.json")) as f:
            self.outputs = json.load(f)

    def process(self, example):
        output = self.outputs[example["id"]]
        calls = [{"id": f"call_{i}", "type": "function",
                  "function": {"name": name, "arguments": json.dumps(args)}}
                 for i, item in enumerate(output) for name, args in item.items()]
        return {**example, "response": "", "tool_calls": calls}

replay = Replay()
'''


def test_through_pytest_under_xdist(oracle: dict[str, Any], pytester: pytest.Pytester) -> None:
    write_bfcl(pytester.path / "data", oracle, per_category=3)
    # the first task of each category answered with its gold call, the others with
    # a perturbation (BFCL's verdict known)
    chosen: dict[str, list[Any]] = {}
    verdicts: dict[str, bool] = {}
    for task_id, kind, output, verdict in oracle["cases"]:
        number = int(task_id.rsplit("_", 1)[1])
        kinds = ("gold", "wrong_type", "swapped" if task_id.startswith("parallel") else "unexpected_argument")
        if number < 3 and task_id not in chosen and kind == kinds[number]:
            chosen[task_id], verdicts[task_id] = output, verdict
    assert len(chosen) == 12
    (pytester.path / "outputs.json").write_text(json.dumps(chosen))
    pytester.makepyfile(bfclsys=SYSTEM)
    pytester.makeini("[pytest]\npythonpath = .\n")
    result = pytester.runpytest(
        *[f"--ctxbench-dataset=bfcl:{c}" for c in CATEGORIES], "--ctxbench-data-dir=data",
        "--ctxbench-system=bfclsys:replay", "--ctxbench-json=out.json", "-p", "no:randomly", "-n", "2",
    )
    doc = read_json(pytester.path / "out.json")
    rows = {r["example_id"]: r for r in doc["rows"]}
    assert set(rows) == set(chosen), result.stdout.str()
    for task_id, row in rows.items():
        assert row["metadata"]["score_field"] == "tool_call_match", row
        assert row["scores"]["tool_call_match"] == float(verdicts[task_id]), (task_id, row)
        assert row["status"] == ("pass" if verdicts[task_id] else "below"), (task_id, row)
        details = row["metadata"]["tool_call_match"]
        assert details["reason"] and ("misses" in details) != verdicts[task_id], details
    assert result.ret in (0, 1)
