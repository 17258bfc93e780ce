"""The HTML report at scale: its size, and how long headless Chromium takes to show it.

Builds a seeded, deterministic JSON report of ``--rows`` rows (default 10,000: two
suites, responses and references of a sentence or two, a CodeExecution-style
explanation in each row's metadata), renders it with ``render_html`` and opens it from
disk in Debian's Chromium through Playwright, ``--repeat`` times in a fresh page.

Printed per round, and the median:

* **python render**: ``render_html(doc)`` wall time (the plugin pays it once per run);
* **ready**: from ``page.goto`` to the page saying it is drawn (``body[data-ready]``:
  the JSON parsed, the gates, summary, plots and the first page of examples built);
* **in-page ready**: ``performance.now()`` at that moment (time since navigation
  start, measured by the browser itself);
* **filter**, **search**, **sort**: one click on the ``below`` filter, typing a query,
  one click on the score column, each until the table is redrawn (all rows are
  filtered or sorted, one page of 100 is drawn).

And the file's size (bytes, and gzip-compressed for a CI artifact).

    python benchmarks/html_report.py                       # 10,000 rows, 3 rounds
    python benchmarks/html_report.py --rows 50000 --repeat 1
    python benchmarks/html_report.py --screenshots docs/img   # the example project's report

Needs ``apt-get install -y chromium`` and ``pip install playwright`` (the ``[test]``
extra; never ``playwright install``). ``--screenshots DIR`` runs ``example_project``
with ``--ctxbench-html`` and saves the first screen of it, ``report-desktop.png``
(1280 × 1500) and ``report-narrow.png`` (390 × 1600), into DIR.
"""

from __future__ import annotations

import argparse
import gzip
import platform
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from pytest_context_bench.report import build_run_report, to_json_dict
from pytest_context_bench.report.html import render_html
from pytest_context_bench.report.run import Record, SuiteInfo
from pytest_context_bench.results import EvalRow

CHROMIUM = "/usr/bin/chromium"
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
WORDS = [
    "the",
    "of",
    "capital",
    "river",
    "city",
    "answer",
    "model",
    "token",
    "prompt",
    "context",
    "system",
    "score",
    "example",
]


def synthetic_doc(n: int, seed: int) -> dict[str, Any]:
    rng = random.Random(seed)
    records = []
    for i in range(n):
        system = ("careful", "fast")[i % 2]
        score = rng.random() ** (0.5 if system == "careful" else 1.5)
        reference = " ".join(rng.choice(WORDS) for _ in range(rng.randint(2, 12)))
        response = " ".join(rng.choice(WORDS) for _ in range(rng.randint(5, 60)))
        row = EvalRow(
            system=system,
            example_id=f"ex-{i // 2:05d}",
            dataset="synthetic",
            scores={"f1": score, "exact_match": float(score > 0.95)},
            input_tokens=rng.randint(50, 400),
            output_tokens=rng.randint(20, 300),
            latency=rng.lognormvariate(-1.5, 0.6),
            metadata={
                "score_field": "f1",
                "code_execution": {
                    "reason": rng.choice(["passed", "assertion", "timeout"]),
                    "duration": 0.01,
                },
            },
        )
        records.append(
            Record(
                system,
                "cli",
                ((i % 2), 0, i // 2),
                "pass" if score >= 0.7 else "below",
                row,
                {"response": response, "reference": reference},
            )
        )
    report = build_run_report(
        records, {"cli": SuiteInfo("cli", limits={"min_pass_rate": 0.5})}
    )
    return to_json_dict(
        report, run={"datasets": []}, gates_enforced=True, version="bench"
    )


def _timed(page: Any, action: Any, *args: Any) -> float:
    page.evaluate(
        "window.__t = 0; new MutationObserver(() => { window.__t = performance.now(); })"
        ".observe(document.querySelector('#example-table'), {childList: true, subtree: true})"
    )
    start = page.evaluate("performance.now()")
    action(*args)
    page.wait_for_function("window.__t > 0")
    return float(page.evaluate("window.__t")) - float(start)


def measure(path: Path, repeat: int) -> list[dict[str, float]]:
    from playwright.sync_api import sync_playwright

    out = []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        for _ in range(repeat):
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            t0 = time.perf_counter()
            page.goto(path.as_uri())
            page.wait_for_selector("body[data-ready='1']", timeout=120_000)
            ready = time.perf_counter() - t0
            in_page = float(page.evaluate("performance.now()"))
            below = "#status-filter button[data-status=below]"
            filt = _timed(page, page.click, below)
            page.click("#status-filter button[data-status=all]")
            search = _timed(page, page.fill, "#search", "capital river")
            page.fill("#search", "")
            sort = _timed(page, page.click, "#example-table th[data-col=score]")
            out.append(
                {
                    "ready": ready * 1000,
                    "in_page": in_page,
                    "filter": filt,
                    "search": search,
                    "sort": sort,
                }
            )
            page.close()
        browser.close()
    return out


def screenshots(directory: Path) -> None:
    from playwright.sync_api import sync_playwright

    root = Path(__file__).resolve().parent.parent
    directory.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        html = Path(tmp) / "report.html"
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pytest",
                "-q",
                "-p",
                "no:cacheprovider",
                f"--ctxbench-html={html}",
                f"--ctxbench-json={Path(tmp) / 'r.json'}",
            ],
            cwd=root / "example_project",
            check=False,
            capture_output=True,
        )
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS)
            # What a reader sees first (the run, the gates, the summary, the plots),
            # not the whole page: a full page of every example is too tall to read
            # in a README.
            for name, width, height in (
                ("report-desktop.png", 1280, 1500),
                ("report-narrow.png", 390, 1600),
            ):
                page = browser.new_page(viewport={"width": width, "height": height})
                page.goto(html.as_uri())
                page.wait_for_selector("body[data-ready='1']")
                page.screenshot(path=str(directory / name))
                print(f"saved {directory / name}")
            browser.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--screenshots", type=Path, metavar="DIR")
    args = parser.parse_args()
    if args.screenshots:
        screenshots(args.screenshots)
        return 0
    doc = synthetic_doc(args.rows, args.seed)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "report.html"
        renders = []
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            text = render_html(doc)
            renders.append((time.perf_counter() - t0) * 1000)
        path.write_text(text, encoding="utf-8")
        size = path.stat().st_size
        packed = len(gzip.compress(text.encode("utf-8")))
        rounds = measure(path, args.repeat)
    print(
        f"HTML report of {args.rows:,} rows: {size:,} bytes ({size / 2**20:.1f} MiB),"
        f" {packed:,} gzipped; python {platform.python_version()}"
    )
    print(
        f"{'round':>5}  {'python render':>13}  {'ready':>9}  {'in-page ready':>13}  {'filter':>8}  {'search':>8}  {'sort':>8}"
    )
    for i, (r, m) in enumerate(zip(renders, rounds), start=1):
        print(
            f"{i:>5}  {r:>10.0f} ms  {m['ready']:>6.0f} ms  {m['in_page']:>10.0f} ms  {m['filter']:>5.0f} ms"
            f"  {m['search']:>5.0f} ms  {m['sort']:>5.0f} ms"
        )
    med = {k: statistics.median(m[k] for m in rounds) for k in rounds[0]}
    print(
        f"{'median':>6} {statistics.median(renders):>9.0f} ms  {med['ready']:>6.0f} ms  {med['in_page']:>10.0f} ms"
        f"  {med['filter']:>5.0f} ms  {med['search']:>5.0f} ms  {med['sort']:>5.0f} ms"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
