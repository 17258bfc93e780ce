"""``ctxbench history`` at scale: 50 runs of 5,000 rows, the size of its page (target:
at most 5 MB) and its time.

Writes ``--runs`` seeded JSON reports of ``--rows`` rows each (one suite; token-F1-like
scores: each run, about 2% of the examples get another answer, 20 examples flip
between pass and fail every run, and run 30 loses a tenth of its passes), then runs
``ctxbench history DIR --html OUT --markdown OUT`` in a fresh interpreter and prints
its wall time, the page's and the summary's sizes against the target, and what it
flagged.

    python benchmarks/history.py                     # 50 runs x 5,000 rows
    python benchmarks/history.py --runs 10 --rows 1000
    python benchmarks/history.py --check             # exit 1 when the page is over 5 MB
"""

from __future__ import annotations

import argparse
import platform
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from pytest_context_bench.report import build_run_report, to_json_dict, write_json
from pytest_context_bench.report.rows import row_status
from pytest_context_bench.report.run import Record, SuiteInfo
from pytest_context_bench.results import EvalRow

TARGET_BYTES = 5 * 1024 * 1024


def write_runs(folder: Path, runs: int, rows: int, seed: int) -> int:
    rng = random.Random(seed)
    scores = [1.0 if rng.random() < 0.8 else rng.random() * 0.6 for _ in range(rows)]
    total = 0
    for run in range(runs):
        for i in range(rows):
            if i < 20:
                scores[i] = 1.0 if (run + i) % 2 else 0.2  # flaky
            elif rng.random() < 0.02:
                scores[i] = 1.0 if rng.random() < 0.8 else rng.random() * 0.6
        now = list(scores)
        if run == 30:
            for i in range(20, rows, 10):
                now[i] = 0.1
        records = []
        for i, s in enumerate(now):
            row = EvalRow("reader", f"q-{i}", {"f1": s}, 40, 40, {"score_field": "f1"}, 0.2, "qa")
            records.append(Record("reader", "cli", (0, 0, i, -1, 0), row_status(None, row.scores, "f1", 0.7), row))
        report = build_run_report(records, {"cli": SuiteInfo("cli", datasets=("qa",))})
        doc = to_json_dict(report, run={"options": {}}, gates_enforced=True, version="0.1.0")
        doc["created"] = f"2026-{1 + run // 28:02d}-{1 + run % 28:02d}T00:00:00+00:00"
        path = folder / f"run-{run + 1:03d}.json"
        write_json(doc, path)
        total += path.stat().st_size
    return total


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--rows", type=int, default=5000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args()
    print(f"python {platform.python_version()} on {platform.platform()}")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "runs"
        folder.mkdir()
        t = time.perf_counter()
        size = write_runs(folder, args.runs, args.rows, args.seed)
        print(f"wrote {args.runs} reports of {args.rows:,} rows ({size / 1e6:,.1f} MB) in {time.perf_counter() - t:.1f}s")
        page, md = Path(tmp) / "history.html", Path(tmp) / "history.md"
        t = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-c", "import sys; from pytest_context_bench.cli import main; sys.exit(main())",
             "history", str(folder), "--html", str(page), "--markdown", str(md)],
            capture_output=True, text=True, check=False,
        )
        wall = time.perf_counter() - t
        print(done.stdout.strip())
        if done.returncode != 0:
            print(done.stderr)
            return 1
        html_size, md_size = page.stat().st_size, md.stat().st_size
        print(f"ctxbench history: {wall:.1f}s for {args.runs} runs ({wall / args.runs:.2f}s per run)")
        print(f"page: {html_size:,} bytes; target {TARGET_BYTES:,}: ratio {html_size / TARGET_BYTES:.3f}"
              f" ({'met' if html_size <= TARGET_BYTES else 'MISSED'}); Markdown: {md_size:,} bytes")
        return 1 if args.check and html_size > TARGET_BYTES else 0


if __name__ == "__main__":
    sys.exit(main())
