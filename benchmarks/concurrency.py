"""System calls in flight: ``--ctxbench-concurrency`` against a slow loopback endpoint.

A local OpenAI-compatible server answers every request right after sleeping
``--latency`` seconds (default 0.1) and counts the requests it serves at once. The
script writes ``--n`` QA examples (default 200) and times, in fresh subprocesses:

* ``--co`` on the same data (pytest's start-up and collection), without and with -n 2;
* ``--ctxbench-proxy`` with ``--ctxbench-concurrency=16``, without and with -n 2;
* a user System written as plain sync code calling httpx, and an async one
  (``async def process`` with ``httpx.AsyncClient``), both at concurrency 16;
* with ``--serial``, the proxy without the option (one call at a time);
* with ``--inspect VENV``, Inspect AI on the same examples and endpoint
  (``inspect eval ... --max-connections 16``), installed in its own venv.

For each it prints the wall time, the wall time minus the matching ``--co`` run, the
ideal ``n * latency / 16``, their ratio (target: 1.25x), the most requests the
endpoint saw at once (never above 16) and the pass count.

    python benchmarks/concurrency.py
    python benchmarks/concurrency.py --serial --inspect /work/wt/inspect-venv
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from pytest_context_bench.testing import FakeLLM, Reply

QUESTION = re.compile(r"capital of country (\d+)")
BUDGET = 16

SYSTEMS = """
import os
import httpx

URL = os.environ["BENCH_URL"] + "/v1/chat/completions"


def _body(ex):
    return {"model": "m", "messages": [{"role": "user", "content": ex["question"]}]}


class SyncHttpx:
    name = "sync-httpx"

    def __init__(self):
        self.client = httpx.Client(timeout=60, limits=httpx.Limits(max_connections=64))

    def process(self, ex):
        reply = self.client.post(URL, json=_body(ex)).json()
        return {**ex, "response": reply["choices"][0]["message"]["content"]}


class AsyncHttpx:
    name = "async-httpx"

    async def process(self, ex):
        if not hasattr(self, "client"):
            self.client = httpx.AsyncClient(timeout=60, limits=httpx.Limits(max_connections=64))
        reply = (await self.client.post(URL, json=_body(ex))).json()
        return {**ex, "response": reply["choices"][0]["message"]["content"]}


sync_httpx = SyncHttpx()
async_httpx = AsyncHttpx()
"""

INSPECT_TASK = """
import json
from inspect_ai import Task, task
from inspect_ai.dataset import Sample
from inspect_ai.scorer import includes
from inspect_ai.solver import generate


@task
def qa():
    rows = [json.loads(line) for line in open("qa.jsonl")]
    return Task(
        dataset=[Sample(input=r["question"], target=r["answer"], id=r["id"]) for r in rows],
        solver=generate(),
        scorer=includes(),
    )
"""


def write_data(directory: Path, n: int) -> None:
    lines = [
        json.dumps(
            {
                "id": f"q-{i}",
                "context": f"Document {i} says the capital of country {i} is city {i}.",
                "question": f"What is the capital of country {i}?",
                "answer": f"city {i}",
            }
        )
        for i in range(1, n + 1)
    ]
    (directory / "qa.jsonl").write_text("\n".join(lines) + "\n")
    (directory / "bench_systems.py").write_text(SYSTEMS)
    (directory / "inspect_task.py").write_text(INSPECT_TASK)
    (directory / "pytest.ini").write_text("[pytest]\npythonpath = .\n")


def run(cmd: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, str]:
    start = time.perf_counter()
    proc = subprocess.run(
        cmd, cwd=cwd, env=env, capture_output=True, text=True, check=False
    )
    wall = time.perf_counter() - start
    out = proc.stdout + proc.stderr
    if proc.returncode != 0:
        sys.exit(f"failed ({proc.returncode}): {' '.join(cmd)}\n{out[-3000:]}")
    return wall, out


def passed(out: str) -> str:
    match = re.search(r"(\d+) passed", out)
    return match.group(1) if match else "-"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=200)
    parser.add_argument("--latency", type=float, default=0.1)
    parser.add_argument(
        "--serial", action="store_true", help="also run without the option"
    )
    parser.add_argument(
        "--inspect", metavar="VENV", help="a venv with inspect-ai installed"
    )
    args = parser.parse_args()

    def handler(request):  # type: ignore[no-untyped-def]
        text = " ".join(str(m.get("content", "")) for m in request.messages)
        match = QUESTION.search(text)
        return Reply(
            text=f"city {match.group(1)}" if match else "?", delay=args.latency
        )

    ideal = args.n * args.latency / BUDGET
    rows: list[tuple[str, float, float | None, int, str]] = []
    with tempfile.TemporaryDirectory() as tmp, FakeLLM(handler=handler) as llm:
        directory = Path(tmp)
        write_data(directory, args.n)
        env = {**os.environ, "BENCH_URL": llm.base_url, "OPENAI_API_KEY": "x"}
        pytest_cmd = [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "--ctxbench-dataset=qa.jsonl",
        ]
        proxy = f"--ctxbench-proxy={llm.base_url}"
        budget = f"--ctxbench-concurrency={BUDGET}"
        variants: list[tuple[str, list[str], str | None]] = [
            ("--co", [*pytest_cmd, proxy, "--co"], None),
            ("--co -n 2", [*pytest_cmd, proxy, "--co", "-n", "2"], None),
            ("proxy, concurrency 16", [*pytest_cmd, proxy, budget], "--co"),
            (
                "proxy, concurrency 16, -n 2",
                [*pytest_cmd, proxy, budget, "-n", "2"],
                "--co -n 2",
            ),
            (
                "sync httpx System, concurrency 16",
                [*pytest_cmd, "--ctxbench-system=bench_systems:sync_httpx", budget],
                "--co",
            ),
            (
                "async httpx System, concurrency 16",
                [*pytest_cmd, "--ctxbench-system=bench_systems:async_httpx", budget],
                "--co",
            ),
        ]
        if args.serial:
            variants.append(("proxy, no option (serial)", [*pytest_cmd, proxy], "--co"))
        if args.inspect:
            inspect = str(Path(args.inspect) / "bin" / "inspect")
            variants.append(
                (
                    "Inspect AI, --max-connections 16",
                    [
                        inspect,
                        "eval",
                        "inspect_task.py",
                        "--model",
                        "openai-api/bench/m",
                        "--max-connections",
                        "16",
                        "--no-log-samples",
                        "--display",
                        "none",
                        "--log-dir",
                        str(directory / "logs"),
                    ],
                    None,
                )
            )
            env["BENCH_BASE_URL"] = llm.url_v1
            env["BENCH_API_KEY"] = "x"
        walls: dict[str, float] = {}
        for name, cmd, minus in variants:
            llm.max_in_flight = 0
            before = len(llm.requests)
            wall, out = run(cmd, directory, env)
            walls[name] = wall
            net = wall - walls[minus] if minus else None
            count = passed(out)
            if name.startswith("Inspect"):
                acc = re.search(r"accuracy\s*[:=]?\s*([0-9.]+)", out)
                count = f"accuracy {acc.group(1)}" if acc else "see log"
            requests = len(llm.requests) - before
            rows.append(
                (name, wall, net, llm.max_in_flight, f"{count} ({requests} requests)")
            )
    print(
        f"{args.n} examples, endpoint latency {args.latency * 1000:.0f} ms,"
        f" budget {BUDGET}: ideal {ideal:.2f} s"
    )
    print(
        f"{'variant':40} {'wall':>7} {'- co':>7} {'/ideal':>7} {'max in flight':>14}  passed"
    )
    for name, wall, net, peak, count in rows:
        ratio = f"{net / ideal:6.2f}x" if net is not None and ideal > 0 else ""
        shown = f"{net:6.2f}s" if net is not None else ""
        print(f"{name:40} {wall:6.2f}s {shown:>7} {ratio:>7} {peak:>14}  {count}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
