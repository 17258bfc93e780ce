"""The core never imports pytest; no two modules import each other; rows survive the
xdist wire and the disk."""

from __future__ import annotations

import ast
import enum
import json
import math
import subprocess
import sys
from pathlib import Path

import execnet
import pytest

from pytest_context_bench.plugin.transport import REPORT_ATTR, ensure_wire_safe, pack, unpack
from pytest_context_bench.outcome import EvalResult
from pytest_context_bench.results import EvalRow, json_safe

CORE_MODULES = [
    "pytest_context_bench",
    "pytest_context_bench.engine",
    "pytest_context_bench.metrics",
    "pytest_context_bench.metrics.quality",
    "pytest_context_bench.evaluators",
    "pytest_context_bench.datasets",
    "pytest_context_bench.gate",
    "pytest_context_bench.report",
    "pytest_context_bench.tokens",
]


def test_core_never_imports_pytest() -> None:
    code = (
        "import sys\n"
        + "".join(f"import {m}\n" for m in CORE_MODULES)
        + "from pytest_context_bench import evaluate\n"
        + "class S:\n    name='s'\n    def process(self, e):\n        return {**e, 'response': e['answer']}\n"
        + "r = evaluate(S(), [{'question': 'q', 'answer': 'Paris'}], progress=False)\n"
        + "assert r.summary['s']['pass_rate'] == 1.0, r.summary\n"
        + "bad = sorted(m for m in sys.modules if m == 'pytest' or m.startswith(('_pytest', 'xdist', 'pluggy')))\n"
        + "assert not bad, bad\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_plugin_package_is_the_only_pytest_importer() -> None:
    pkg = Path(__import__("pytest_context_bench").__file__).parent
    offenders = [
        str(p.relative_to(pkg))
        for p in pkg.rglob("*.py")
        if "plugin" not in p.relative_to(pkg).parts
        and any(
            line.strip().startswith(("import pytest", "from pytest ", "import _pytest", "from _pytest"))
            for line in p.read_text().splitlines()
        )
    ]
    assert offenders == []


def _package_imports(pkg: Path) -> dict[str, set[str]]:
    """Module → the package's modules it imports, anywhere in its body (lazy imports
    and ``TYPE_CHECKING`` blocks count: a reader follows them all the same)."""
    names = {}
    for path in pkg.rglob("*.py"):
        parts = list(path.relative_to(pkg.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        names[path] = ".".join(parts)
    known = set(names.values())
    graph: dict[str, set[str]] = {}
    for path, module in names.items():
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        targets: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                targets.update(a.name for a in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = package
                for _ in range(node.level - 1):
                    base = base.rpartition(".")[0]
                stem = node.module or ""
                base = f"{base}.{stem}".strip(".") if node.level else stem
                targets.add(base)
                targets.update(f"{base}.{a.name}" for a in node.names)
        # A package's __init__ that only hands names on is not a step of a circle.
        graph[module] = {
            t for t in targets if t in known and t != module and not module.startswith(t + ".")
        }
    return graph


def test_no_import_circles_in_the_package() -> None:
    pkg = Path(__import__("pytest_context_bench").__file__).parent
    graph = _package_imports(pkg)
    cycles: list[list[str]] = []
    state: dict[str, int] = {}  # 1: on the current path, 2: done

    def visit(module: str, path: list[str]) -> None:
        state[module] = 1
        for target in sorted(graph[module]):
            if state.get(target) == 1:
                cycles.append(path[path.index(target):] + [target])
            elif target not in state:
                visit(target, [*path, target])
        state[module] = 2

    for module in sorted(graph):
        if module not in state:
            visit(module, [module])
    assert cycles == [], "\n".join(" -> ".join(c) for c in cycles)


class Color(enum.Enum):
    RED = 1


class MyFloat(float):
    pass


class MyStr(str):
    pass


def test_ensure_wire_safe_makes_execnet_serializable() -> None:
    value = {
        "enum": Color.RED,
        "path": Path("/tmp/x"),
        "float": MyFloat(0.5),
        "str": MyStr("s"),
        "tuple": (1, 2),
        "set": {3, 1},
        "nested": {1: [Color.RED, None, True]},
        "inf": math.inf,
    }
    with pytest.raises(execnet.DataFormatError):
        execnet.dumps(value)
    safe = ensure_wire_safe(value)
    assert execnet.loads(execnet.dumps(safe)) == safe
    assert safe["path"] == "/tmp/x"
    assert type(safe["float"]) is float and type(safe["str"]) is str
    assert safe["set"] == [1, 3]
    assert safe["nested"] == {"1": ["<Color.RED: 1>", None, True]}
    assert safe["inf"] == math.inf


def test_row_round_trips_through_dict_json_and_wire() -> None:
    row = EvalRow(
        system="s",
        example_id="7",
        scores={"f1": 0.5, "weird": math.inf},
        input_tokens=10,
        output_tokens=4,
        metadata={"score_field": "f1", "completion_tokens": 3},
        latency=0.25,
        dataset="qa",
        error={"type": "ValueError", "message": "boom", "where": "system"},
    )
    d = row.to_dict()
    assert list(d) == ["system", "example_id", "dataset", "scores", "input_tokens", "output_tokens", "latency", "metadata", "error"]
    assert EvalRow.from_dict(d) == row
    text = json.dumps(json_safe(d), allow_nan=False)
    assert EvalRow.from_dict(json.loads(text)) == row
    assert EvalRow.from_dict(execnet.loads(execnet.dumps(ensure_wire_safe(d)))) == row


def test_a_packed_payload_comes_back_exactly() -> None:
    """A worker's payload crosses as one JSON string and is the same payload again:
    every float bit for bit (NaN, infinities, -0.0, 0.1 + 0.2), keys, nesting, lone
    surrogates and control characters of a model's text."""
    payload = ensure_wire_safe({
        "v": 1,
        "status": "pass",
        "rows": [{
            "order": [0, 1, 2, -1, 1],
            "row": {"scores": {"f1": 0.1 + 0.2, "nan": math.nan, "inf": -math.inf, "zero": -0.0},
                    "metadata": {"big": 2**70, "ok": True, "none": None}},
            "io": {"response": "caf\u00e9 \ud800 \x1b[31m\u2028", "answer": {"calls": []}},
        }],
    })
    data = {"nodeid": "ctxbench::x", REPORT_ATTR: payload}
    pack(data)
    assert isinstance(data[REPORT_ATTR], str)
    # what execnet carries from the worker, then the controller's report
    report = type("Report", (), {})()
    setattr(report, REPORT_ATTR, execnet.loads(execnet.dumps(data))[REPORT_ATTR])
    unpack(report)
    back = getattr(report, REPORT_ATTR)
    scores = back["rows"][0]["row"]["scores"]
    assert math.isnan(scores.pop("nan"))
    want = payload["rows"][0]["row"]["scores"]
    assert {k: v for k, v in want.items() if k != "nan"} == scores
    assert math.copysign(1.0, scores["zero"]) == -1.0
    back["rows"][0]["row"]["scores"]["nan"] = want["nan"]
    assert json.dumps(back, sort_keys=True) == json.dumps(payload, sort_keys=True)
    # a string that is not a packed payload is left for read_payload to ignore
    setattr(report, REPORT_ATTR, "ctxbench-json:{not json")
    unpack(report)
    assert getattr(report, REPORT_ATTR) == "ctxbench-json:{not json"


def test_result_to_json_is_strict() -> None:
    row = EvalRow("s", "1", {"f1": 0.0}, 3, 3)
    result = EvalResult([row], {"s": {"cost_of_pass": math.inf, "mean_score": math.nan}})
    text = result.to_json()
    assert "Infinity" not in text and "NaN" not in text
    back = EvalResult.from_dict(json.loads(text))
    assert back.summary["s"]["cost_of_pass"] == math.inf
    assert math.isnan(back.summary["s"]["mean_score"])
    assert back.rows == [row]


def test_from_dict_rejects_garbage() -> None:
    with pytest.raises(ValueError, match="missing"):
        EvalRow.from_dict({"system": "s"})
    with pytest.raises(ValueError, match="number"):
        EvalRow.from_dict({"system": "s", "example_id": "1", "scores": {"f1": "high"}})
