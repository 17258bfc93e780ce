"""System calls in flight: ``--ctxbench-concurrency`` against a slow loopback endpoint.

A local OpenAI-compatible server answers every request right after sleeping
``--latency`` seconds (default 0.1) and counts the requests it serves at once. The
script writes ``--n`` QA examples (default 200) and times, in fresh subprocesses,
``--repeat`` interleaved rounds (default 3; the medians are shown) after one
untimed warm-up run of each (``--warmup 0``: none), with bytecode caching on:

* the start-up: the same command with every item deselected (``-k``: pytest starts,
  collects, xdist starts its workers, nothing is called), without and with -n 2;
* a trivial one-test project, without and with -n 2: what xdist adds to any run;
* ``--ctxbench-proxy`` with ``--ctxbench-concurrency=16``, without and with -n 2;
* a user System written as plain sync code calling httpx, without and with -n 2,
  and an async one (``async def process`` with ``httpx.AsyncClient``), at 16;
* the adaptive budget: the proxy at ``--ctxbench-concurrency=64`` against an
  endpoint that answers ``429 Retry-After: 0`` while 8 requests are in flight;
* with ``--serial``, the proxy without the option (one call at a time);
* with ``--inspect VENV``, Inspect AI on the same examples and endpoint
  (``inspect eval ... --max-connections 16``), installed in its own venv.

Every row that makes calls runs with the LLM cache off (``--ctxbench-cache=off``), so
each measures ``--n`` calls, and prints the requests the endpoint received. For each
it prints the wall time, the wall time minus the matching start-up, the ideal
``n * latency / 16``, their ratio (targets: the proxy 1.25x in one process, 1.5x
under -n 2), the most requests the endpoint saw at once and the pass count; then the
-n check: an LLM-bound run under -n 2 takes no longer than the same run in one
process plus what xdist adds to the trivial run, plus 0.5 s.

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
import resource
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from pytest_context_bench.testing import FakeLLM, Reply

QUESTION = re.compile(r"capital of country (\d+)")
BUDGET = 16
#: the crowded endpoint: 429 to a request arriving while this many are in flight
CROWD = 8
#: xdist's allowance on top of its trivial run's cost (issue 26)
XDIST_SLACK = 0.5

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


def run(
    cmd: list[str], cwd: Path, env: dict[str, str], ok: tuple[int, ...] = (0,)
) -> tuple[float, float, str]:
    """Wall and CPU seconds (the run's processes, workers included) and output."""
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(
        cmd, cwd=cwd, env=env, capture_output=True, text=True, check=False
    )
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime + after.ru_stime - used.ru_utime - used.ru_stime
    out = proc.stdout + proc.stderr
    if proc.returncode not in ok:
        sys.exit(f"failed ({proc.returncode}): {' '.join(cmd)}\n{out[-3000:]}")
    return wall, cpu, out


def passed(out: str) -> str:
    match = re.search(r"(\d+) passed", out)
    return match.group(1) if match else "-"


class Row:
    """One variant: its command, the start-up it is measured against, its walls."""

    def __init__(
        self,
        name: str,
        cmd: list[str],
        minus: str | None = None,
        crowded: bool = False,
        cwd: Path | None = None,
        ok: tuple[int, ...] = (0,),
    ) -> None:
        self.name, self.cmd, self.minus = name, cmd, minus
        self.crowded, self.cwd, self.ok = crowded, cwd, ok
        self.walls: list[float] = []
        self.cpus: list[float] = []
        self.requests: list[int] = []
        self.peak = 0
        self.count = "-"

    @property
    def wall(self) -> float:
        return statistics.median(self.walls)

    @property
    def cpu(self) -> float:
        return statistics.median(self.cpus)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=200)
    parser.add_argument("--latency", type=float, default=0.1)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument(
        "--warmup",
        type=int,
        choices=(0, 1),
        default=1,
        help="run each variant once, untimed, first (default 1)",
    )
    parser.add_argument(
        "--serial", action="store_true", help="also run without the option"
    )
    parser.add_argument(
        "--inspect", metavar="VENV", help="a venv with inspect-ai installed"
    )
    args = parser.parse_args()

    def answer(request: Any) -> Reply:
        text = " ".join(str(m.get("content", "")) for m in request.messages)
        match = QUESTION.search(text)
        return Reply(
            text=f"city {match.group(1)}" if match else "?", delay=args.latency
        )

    crowd: dict[str, Any] = {}

    def crowded(request: Any) -> Reply:
        server = crowd["server"]
        with server._lock:  # its count includes this request
            refused = server._in_flight > CROWD
        if refused:
            return Reply(status=429, text="slow down", retry_after="0")
        return answer(request)

    ideal = args.n * args.latency / BUDGET
    with (
        tempfile.TemporaryDirectory() as tmp,
        FakeLLM(handler=answer) as llm,
        FakeLLM(handler=crowded) as busy,
    ):
        crowd["server"] = busy
        directory = Path(tmp) / "suite"
        directory.mkdir()
        write_data(directory, args.n)
        trivial = Path(tmp) / "trivial"  # beside the suite, not collected with it
        trivial.mkdir()
        (trivial / "test_one.py").write_text("def test_one():\n    pass\n")
        env = {**os.environ, "BENCH_URL": llm.base_url, "OPENAI_API_KEY": "x"}
        # Bytecode is cached, as on a developer's machine (PYTHONDONTWRITEBYTECODE
        # would compile, and assertion-rewrite, the plugin's modules in every
        # process, the xdist workers included).
        for name in (
            "PYTEST_XDIST_WORKER",
            "PYTEST_XDIST_WORKER_COUNT",
            "PYTHONDONTWRITEBYTECODE",
        ):
            env.pop(name, None)
        base = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
        pytest_cmd = [*base, "--ctxbench-dataset=qa.jsonl", "--ctxbench-cache=off"]
        proxy = f"--ctxbench-proxy={llm.base_url}"
        budget = f"--ctxbench-concurrency={BUDGET}"
        sync_system = "--ctxbench-system=bench_systems:sync_httpx"
        nothing = ["-k", "no_such_item"]  # exit 5: nothing selected
        n2 = ["-n", "2"]
        rows = [
            Row(
                "start-up (all deselected)",
                [*pytest_cmd, proxy, budget, *nothing],
                ok=(5,),
            ),
            Row(
                "start-up (all deselected), -n 2",
                [*pytest_cmd, proxy, budget, *nothing, *n2],
                ok=(5,),
            ),
            Row("trivial one-test run", [*base], cwd=trivial),
            Row("trivial one-test run, -n 2", [*base, *n2], cwd=trivial),
            Row(
                "proxy, concurrency 16",
                [*pytest_cmd, proxy, budget],
                "start-up (all deselected)",
            ),
            Row(
                "proxy, concurrency 16, -n 2",
                [*pytest_cmd, proxy, budget, *n2],
                "start-up (all deselected), -n 2",
            ),
            Row(
                "sync httpx System, concurrency 16",
                [*pytest_cmd, sync_system, budget],
                "start-up (all deselected)",
            ),
            Row(
                "sync httpx System, concurrency 16, -n 2",
                [*pytest_cmd, sync_system, budget, *n2],
                "start-up (all deselected), -n 2",
            ),
            Row(
                "async httpx System, concurrency 16",
                [*pytest_cmd, "--ctxbench-system=bench_systems:async_httpx", budget],
                "start-up (all deselected)",
            ),
            Row(
                f"proxy, concurrency 64, 429 above {CROWD}",
                [
                    *pytest_cmd,
                    f"--ctxbench-proxy={busy.base_url}",
                    "--ctxbench-concurrency=64",
                ],
                crowded=True,
            ),
            Row(
                f"proxy, concurrency 64, 429 above {CROWD}, -n 2",
                [
                    *pytest_cmd,
                    f"--ctxbench-proxy={busy.base_url}",
                    "--ctxbench-concurrency=64",
                    *n2,
                ],
                crowded=True,
            ),
        ]
        if args.serial:
            rows.append(
                Row(
                    "proxy, no option (serial)",
                    [*pytest_cmd, proxy],
                    "start-up (all deselected)",
                )
            )
        if args.inspect:
            inspect = str(Path(args.inspect) / "bin" / "inspect")
            rows.append(
                Row(
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
                )
            )
            env["BENCH_BASE_URL"] = llm.url_v1
            env["BENCH_API_KEY"] = "x"
        for row in rows if args.warmup else ():  # writes the bytecode caches
            if not row.crowded and not row.name.startswith("Inspect"):
                run(row.cmd, row.cwd or directory, env, row.ok)
        for round_ in range(args.repeat):
            # Interleaved, the order flipped every other round.
            for row in rows if round_ % 2 == 0 else rows[::-1]:
                server = busy if row.crowded else llm
                server.max_in_flight = 0
                before = len(server.requests)
                wall, cpu, out = run(row.cmd, row.cwd or directory, env, row.ok)
                row.walls.append(wall)
                row.cpus.append(cpu)
                row.requests.append(len(server.requests) - before)
                row.peak = max(row.peak, server.max_in_flight)
                row.count = passed(out)
                if row.name.startswith("Inspect"):
                    acc = re.search(r"accuracy\s*[:=]?\s*([0-9.]+)", out)
                    row.count = f"accuracy {acc.group(1)}" if acc else "see log"
    named = {row.name: row for row in rows}
    print(
        f"{args.n} examples, endpoint latency {args.latency * 1000:.0f} ms,"
        f" budget {BUDGET}: ideal {ideal:.2f} s; medians of {args.repeat}"
        " interleaved rounds; LLM cache off"
    )
    print(
        f"{'variant':46} {'wall':>7} {'- start':>8} {'/ideal':>7} {'cpu':>7}"
        f" {'max in flight':>14}  passed (requests the endpoint received, each round)"
    )
    for row in rows:
        net = row.wall - named[row.minus].wall if row.minus else None
        ratio = f"{net / ideal:6.2f}x" if net is not None and ideal > 0 else ""
        shown = f"{net:6.2f}s" if net is not None else ""
        sent = "/".join(str(r) for r in row.requests)
        print(
            f"{row.name:46} {row.wall:6.2f}s {shown:>8} {ratio:>7} {row.cpu:6.2f}s"
            f" {row.peak:>14}"
            f"  {row.count} ({sent} requests)"
        )
    xdist = (
        named["trivial one-test run, -n 2"].wall - named["trivial one-test run"].wall
    )
    print(f"\nwhat -n 2 adds to a trivial one-test run: {xdist:.2f} s")
    for suite in ("proxy, concurrency 16", "sync httpx System, concurrency 16"):
        one, two = named[suite].wall, named[suite + ", -n 2"].wall
        bound = one + xdist + XDIST_SLACK
        verdict = "PASS" if two <= bound else "ABOVE TARGET"
        print(
            f"-n 2 {suite}: {two:.2f} s; in one process {one:.2f} s + xdist"
            f" {xdist:.2f} s + {XDIST_SLACK} s = {bound:.2f} s: {verdict}"
        )
    for suite, target in (
        ("proxy, concurrency 16", 1.25),
        ("proxy, concurrency 16, -n 2", 1.5),
    ):
        row = named[suite]
        assert row.minus is not None
        ratio = (row.wall - named[row.minus].wall) / ideal
        verdict = "PASS" if ratio <= target else "ABOVE TARGET"
        print(f"{suite}: {ratio:.2f}x the ideal (target {target}x): {verdict}")
    for suite in (
        f"proxy, concurrency 64, 429 above {CROWD}",
        f"proxy, concurrency 64, 429 above {CROWD}, -n 2",
    ):
        row = named[suite]
        worst = max(row.requests)
        verdict = (
            "PASS" if row.count == str(args.n) and worst <= args.n * 1.25 else "ABOVE"
        )
        print(
            f"{suite}: {row.count} passed, at most {worst} requests (target"
            f" {args.n} passed, <= {int(args.n * 1.25)} requests): {verdict}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
