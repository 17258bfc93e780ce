"""``ctxbench rescore`` at scale: 10,000 saved answers scored again by deterministic
evaluators, against the target of 10 s.

Builds, in a temporary directory, a seeded ``qa.jsonl`` of ``--rows`` examples and the
JSON report of a run on it (each row scored by ``score_processed`` as the plugin scores
it, its answer kept by ``record_io``: one answer in three is wrong), then runs
``ctxbench rescore report.json --dataset qa.jsonl --json out.json`` in a fresh
interpreter ``--repeat`` times (the wall time includes the interpreter's start and
the imports, as a CI step pays them), and once in-process with each phase timed:
reading and checking the report, loading the dataset, scoring, building the report,
writing it.

Printed: each round's wall time, the median, rows per second, and the ratio of the
median to the target (below 1.00: met).

    python benchmarks/rescore.py                   # 10,000 rows, 3 rounds
    python benchmarks/rescore.py --rows 50000 --repeat 1
    python benchmarks/rescore.py --check           # exit 1 when the target is missed
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from pytest_context_bench.calls import keep_io
from pytest_context_bench.engine import score_processed
from pytest_context_bench.evaluators import AnswerQuality
from pytest_context_bench.report import build_run_report, to_json_dict, write_json
from pytest_context_bench.report.rows import row_status
from pytest_context_bench.report.run import Record, SuiteInfo
from pytest_context_bench.tokens import get_tokenizer

TARGET_S = 10.0
WORDS = "river tea green coast league crown seasons harbour mountain valley bridge".split()


def build(folder: Path, n: int, seed: int) -> tuple[Path, Path]:
    rng = random.Random(seed)
    examples = []
    for i in range(n):
        city = f"City{i}"
        filler = " ".join(rng.choice(WORDS) for _ in range(30))
        examples.append({
            "id": f"q{i:05d}",
            "context": f"Country {i} is a small state. {filler}. Its capital is {city}.",
            "question": f"What is the capital of country {i}?",
            "answer": city,
        })
    data = folder / "qa.jsonl"
    data.write_text("".join(json.dumps(e) + "\n" for e in examples), encoding="utf-8")
    from pytest_context_bench.datasets import resolve_dataset

    ds = resolve_dataset(str(data))
    tok = get_tokenizer()
    evaluators = [AnswerQuality()]
    records = []
    for i in range(n):
        original = ds[i]
        response = original["answer"] if i % 3 else f"I think it is {rng.choice(WORDS)}"
        with keep_io() as io:
            row, _ = score_processed(
                original, {**original, "response": response}, evaluators,
                system="reader", latency=0.05 + rng.random() / 100, score_field="f1", tokenizer=tok,
            )
        records.append(Record("reader", "cli", (0, 0, i, -1, 0), row_status(row.error, row.scores, "f1", 0.7), row, io[-1]))
    report = build_run_report(records, {"cli": SuiteInfo("cli", datasets=(ds.tag,))})
    run = {
        "options": {"datasets": [str(data)], "systems": ["never_imported:reader"], "threshold": 0.7, "prices": None},
        "datasets": [{"tag": ds.tag, "family": ds.family, "source": str(data), "examples": n,
                      "fingerprint": ds.fingerprint, "selected": n, "selection": "all"}],
    }
    doc = to_json_dict(report, run=run, gates_enforced=True, version="0.1.0")
    path = folder / "report.json"
    write_json(doc, path)
    return data, path


def phases(data: Path, report: Path) -> list[tuple[str, float]]:
    """One in-process rescore, each phase timed."""
    from pytest_context_bench.datasets import resolve_dataset
    from pytest_context_bench.evaluators import wired_evaluators
    from pytest_context_bench.rescore import load_saved, rescore_saved

    out: list[tuple[str, float]] = []
    t = time.perf_counter()
    saved = load_saved(report)
    out.append(("read and check the report", time.perf_counter() - t))
    t = time.perf_counter()
    ds = resolve_dataset(str(data))
    out.append(("load the dataset", time.perf_counter() - t))
    t = time.perf_counter()
    result = rescore_saved(saved, {ds.tag: ds}, lambda d: wired_evaluators(d))
    out.append(("score again + summaries, intervals, gates", time.perf_counter() - t))
    t = time.perf_counter()
    doc = to_json_dict(result.report, run=saved.run, gates_enforced=True, version="0.1.0")
    write_json(doc, report.with_name("phases.json"))
    out.append(("write the JSON report", time.perf_counter() - t))
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args()
    print(f"python {platform.python_version()} on {platform.platform()}")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        t = time.perf_counter()
        data, report = build(folder, args.rows, args.seed)
        print(f"built {args.rows:,} rows ({report.stat().st_size:,} bytes) in {time.perf_counter() - t:.1f}s")
        walls = []
        for i in range(args.repeat):
            t = time.perf_counter()
            done = subprocess.run(
                [sys.executable, "-c", "import sys; from pytest_context_bench.cli import main; sys.exit(main())",
                 "rescore", str(report), "--dataset", str(data), "--json", str(folder / "out.json"),
                 "--cache", "off"],
                cwd=folder, capture_output=True, text=True, check=False,
            )
            wall = time.perf_counter() - t
            if done.returncode != 0:
                print(done.stdout, done.stderr)
                return 1
            walls.append(wall)
            print(f"round {i + 1}: ctxbench rescore {wall:.2f}s ({args.rows / wall:,.0f} rows/s)")
        rescored = json.loads((folder / "out.json").read_text())
        original = json.loads(report.read_text())
        same = [r["scores"] for r in rescored["rows"]] == [r["scores"] for r in original["rows"]]
        print(f"the rescored scores equal the run's: {same}")
        median = statistics.median(walls)
        print(f"median: {median:.2f}s for {args.rows:,} rows = {args.rows / median:,.0f} rows/s;"
              f" target {TARGET_S:.0f}s: ratio {median / TARGET_S:.2f} ({'met' if median < TARGET_S else 'MISSED'})")
        print("in-process phases:")
        for name, seconds in phases(data, report):
            print(f"  {name:45s} {seconds:6.2f}s")
        if not same:
            return 1
        return 1 if args.check and median >= TARGET_S else 0


if __name__ == "__main__":
    sys.exit(main())
