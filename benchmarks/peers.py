"""One LLM evaluation, side by side: ours, the peers, and a bare asyncio + httpx loop.

Every tool answers the same ``--n`` questions ("What is the capital of country 7?")
through one loopback OpenAI-compatible endpoint (the project's fake endpoint,
:class:`pytest_context_bench.testing.FakeLLM`, in this process) that waits
``--delay`` seconds before each answer and counts the requests it serves and the
most it serves at once. Each tool is allowed ``--connections`` requests in flight:

* ``ctxbench``: ``pytest --ctxbench-dataset=qa.jsonl --ctxbench-proxy=URL
  --ctxbench-concurrency=C --ctxbench-cache=off`` (this checkout);
* ``ctxbench@REV``: the same command run from another checkout (``--tree PATH``,
  e.g. a ``git worktree`` of an older commit), with ``PYTHONPATH=PATH``;
* ``proxy-loop``: the built-in System alone (``OpenAIProxy.aprocess``, what
  ``--ctxbench-proxy`` calls: ``LLMClient``, the cache transport, the call budget
  installed at ``C``) in the bare loop below instead of pytest: one call through
  the proxy, without the pytest item around it;
* ``asyncio+httpx``: a bare loop: ``asyncio.gather`` over the questions, an
  ``asyncio.Semaphore(C)`` and one ``httpx.AsyncClient`` with ``max_connections=C``;
  it checks each answer as the others do;
* ``inspect``: Inspect AI, ``inspect eval`` of a task with ``generate()`` and the
  ``includes()`` scorer, ``--max-connections C --no-log-samples``;
* ``deepeval``: DeepEval's ``evaluate()`` over one test case per question with a
  metric that asks the endpoint through the OpenAI SDK and checks the answer,
  ``AsyncConfig(max_concurrent=C)``, nothing printed, no result file
  (``CacheConfig(write_cache=False)``);
* ``promptfoo``: ``promptfoo eval`` of a config with the ``openai:chat`` provider
  pointed at the endpoint and a ``contains`` assertion, ``-j C --no-cache
  --no-write --no-table --no-progress-bar``.

Inspect AI and DeepEval run from ``--peers-venv`` (a venv of their own, never the
project's: ``python3.11 -m venv /tmp/peers-venv && /tmp/peers-venv/bin/pip install
inspect-ai deepeval openai``), promptfoo from ``--promptfoo-dir`` (``npm install
promptfoo`` there); a tool that is not there is reported "not installed" and
skipped.

Each run is a fresh process (bytecode written: ``PYTHONDONTWRITEBYTECODE`` is
dropped, as on a user's machine), timed with ``perf_counter``; its CPU time (user +
system) comes from ``wait4`` (the process and the children it waited for: xdist
workers, node), its peak RSS from GNU ``time`` (``/usr/bin/time``, which starts it
from a small process), else from ``wait4``. After one untimed warm-up run of each tool, ``--rounds``
rounds run every tool once, the order reversed every other round; the medians are
shown. With ``--startup`` (the default) each tool also answers one question in each
round, and the CPU time of one call is ``(cpu(n) - cpu(1)) / (n - 1)``: start-up
subtracted. The table also gives the requests the endpoint received in each run
and the most it saw in flight, and the ratios against ``asyncio+httpx``.

    python benchmarks/peers.py                                  # 200 questions, 100 ms, 16
    python benchmarks/peers.py --n 2000 --delay 0.02 --connections 64 --tree /tmp/old268
    python benchmarks/peers.py --tools ctxbench,asyncio+httpx --rounds 5

Exit status: 0; 2 when a run fails or answers fewer than all questions.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_context_bench.testing import FakeLLM, Reply

QUESTION = re.compile(r"capital of country (\d+)")
TOOLS = ("ctxbench", "proxy-loop", "asyncio+httpx", "inspect", "deepeval", "promptfoo")

PROXY_LOOP = '''\
import asyncio, json, sys
from pytest_context_bench import concurrency
from pytest_context_bench.systems import OpenAIProxy


async def main(url, connections, path):
    rows = [json.loads(line) for line in open(path) if line.strip()]
    # The run's call budget, as --ctxbench-concurrency installs it.
    concurrency.install(concurrency.Budget(connections), None, connections)
    proxy = OpenAIProxy(url, "m", api_key="x")
    gate = asyncio.Semaphore(connections)
    passed = 0

    async def one(row):
        nonlocal passed
        async with gate:
            out = await proxy.aprocess(row)
            passed += row["answer"] in out["response"]

    await asyncio.gather(*(one(row) for row in rows))
    await proxy.client.aclose()
    print(f"{passed} passed")


asyncio.run(main(sys.argv[1], int(sys.argv[2]), sys.argv[3]))
'''

BARE_LOOP = '''\
import asyncio, json, sys
import httpx


async def main(url, connections, path):
    rows = [json.loads(line) for line in open(path) if line.strip()]
    gate = asyncio.Semaphore(connections)
    passed = 0
    limits = httpx.Limits(max_connections=connections)
    async with httpx.AsyncClient(timeout=60, limits=limits) as client:

        async def one(row):
            nonlocal passed
            async with gate:
                reply = await client.post(
                    url + "/v1/chat/completions",
                    json={"model": "m", "messages": [{"role": "user", "content": row["question"]}]},
                )
                text = reply.json()["choices"][0]["message"]["content"]
                passed += row["answer"] in text

        await asyncio.gather(*(one(row) for row in rows))
    print(f"{passed} passed")


asyncio.run(main(sys.argv[1], int(sys.argv[2]), sys.argv[3]))
'''

INSPECT_TASK = '''\
import json
from inspect_ai import Task, task
from inspect_ai.dataset import Sample
from inspect_ai.scorer import includes
from inspect_ai.solver import generate


@task
def qa():
    rows = [json.loads(line) for line in open("DATA") if line.strip()]
    return Task(
        dataset=[Sample(input=r["question"], target=r["answer"], id=r["id"]) for r in rows],
        solver=generate(),
        scorer=includes(),
    )
'''

DEEPEVAL_RUN = '''\
import json, os, sys
from openai import AsyncOpenAI
from deepeval import evaluate
from deepeval.evaluate import AsyncConfig, CacheConfig, DisplayConfig
from deepeval.metrics import BaseMetric
from deepeval.test_case import LLMTestCase

client = AsyncOpenAI(base_url=sys.argv[1] + "/v1", api_key="x", max_retries=0)


class Answered(BaseMetric):
    """Asks the endpoint the question, passes when the answer contains the gold."""

    threshold = 1.0
    async_mode = True

    def __init__(self):
        self.threshold = 1.0

    async def a_measure(self, test_case, *args, **kwargs):
        reply = await client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": test_case.input}]
        )
        text = reply.choices[0].message.content or ""
        self.score = 1.0 if test_case.expected_output in text else 0.0
        self.success = self.score >= self.threshold
        return self.score

    def measure(self, test_case, *args, **kwargs):
        raise NotImplementedError("async only")

    def is_successful(self):
        return bool(self.success)

    @property
    def __name__(self):
        return "Answered"


rows = [json.loads(line) for line in open(sys.argv[3]) if line.strip()]
cases = [LLMTestCase(input=r["question"], actual_output="", expected_output=r["answer"]) for r in rows]
result = evaluate(
    cases,
    [Answered()],
    async_config=AsyncConfig(max_concurrent=int(sys.argv[2])),
    display_config=DisplayConfig(show_indicator=False, print_results=False, inspect_after_run=False),
    cache_config=CacheConfig(write_cache=False, use_cache=False),
)
print(f"{sum(1 for t in result.test_results if t.success)} passed")
'''

PROMPTFOO_CONFIG = """\
prompts:
  - "{{question}}"
providers:
  - id: openai:chat:m
    config:
      apiBaseUrl: URL/v1
      apiKey: x
tests: TESTS
defaultTest:
  assert:
    - type: contains
      value: "{{answer}}"
"""


@dataclass
class Tool:
    """One tool: how to run it on a data file, and what it measured."""

    name: str
    argv: Any  # (data file name) -> list[str]
    env: dict[str, str] = field(default_factory=dict)
    passed: Any = None  # (output) -> int | None
    walls: list[float] = field(default_factory=list)
    cpus: list[float] = field(default_factory=list)
    rss: list[int] = field(default_factory=list)
    requests: list[int] = field(default_factory=list)
    peaks: list[int] = field(default_factory=list)
    start_cpus: list[float] = field(default_factory=list)
    start_walls: list[float] = field(default_factory=list)


def counted(out: str) -> int | None:
    match = re.search(r"(\d[\d,]*) passed", out)
    return int(match.group(1).replace(",", "")) if match else None


def inspect_passed(n: int) -> Any:
    def read(out: str) -> int | None:
        match = re.search(r"accuracy\s*[:=]?\s*([0-9.]+)", out)
        return round(float(match.group(1)) * n) if match else None

    return read


def promptfoo_passed(out: str) -> int | None:
    # "✓ 2,000 passed (100%)" (promptfoo 0.121), "Successes: 2000" (older ones)
    match = re.search(r"(\d[\d,]*) passed|Successes:\s*(\d[\d,]*)", out)
    if not match:
        return None
    return int(next(g for g in match.groups() if g).replace(",", ""))


def clean_env() -> dict[str, str]:
    env = dict(os.environ)
    for name in (
        "PYTHONDONTWRITEBYTECODE",
        "PYTEST_XDIST_WORKER",
        "PYTEST_XDIST_WORKER_COUNT",
        "PYTEST_ADDOPTS",
        "PYTHONPATH",
    ):
        env.pop(name, None)
    env.update(
        OPENAI_API_KEY="x",
        DEEPEVAL_TELEMETRY_OPT_OUT="YES",
        DEEPEVAL_NO_INSPECT_PROMPT="1",
        DEEPEVAL_DISABLE_DOTENV="1",
        PROMPTFOO_DISABLE_TELEMETRY="1",
        PROMPTFOO_DISABLE_UPDATE="1",
        INSPECT_DISPLAY="none",
    )
    return env


#: GNU time, which starts the measured command from a small process: the peak RSS
#: of a child forked from this one would count this process's pages before exec.
GNU_TIME = "/usr/bin/time"


def run(argv: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, float, int, str, int]:
    """(wall s, CPU s, peak RSS KiB, output, exit status) of one fresh process (and
    the children it waited for)."""
    with tempfile.TemporaryFile() as sink, tempfile.NamedTemporaryFile("r") as peak:
        wrapped = argv
        if os.access(GNU_TIME, os.X_OK):
            wrapped = [GNU_TIME, "-q", "-o", peak.name, "-f", "%M", *argv]
        start = time.perf_counter()
        proc = subprocess.Popen(wrapped, cwd=cwd, env=env, stdout=sink, stderr=subprocess.STDOUT)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        sink.seek(0)
        out = sink.read().decode("utf-8", "replace")
        rss = usage.ru_maxrss
        text = peak.read().strip().splitlines()
        if text and text[-1].isdigit():
            rss = int(text[-1])
    return wall, usage.ru_utime + usage.ru_stime, rss, out, proc.returncode


def write_data(directory: Path, n: int, url: str) -> None:
    rows = [
        {
            "id": f"q-{i}",
            "context": f"Document {i} says the capital of country {i} is city {i}.",
            "question": f"What is the capital of country {i}?",
            "answer": f"city {i}",
        }
        for i in range(1, n + 1)
    ]
    for name, part in ((f"qa{n}", rows), ("qa1", rows[:1])):
        (directory / f"{name}.jsonl").write_text(
            "".join(json.dumps(r) + "\n" for r in part), encoding="utf-8"
        )
        (directory / f"inspect_{name}.py").write_text(
            INSPECT_TASK.replace("DATA", f"{name}.jsonl"), encoding="utf-8"
        )
        (directory / f"promptfoo_{name}.yaml").write_text(
            PROMPTFOO_CONFIG.replace("URL", url).replace(
                "TESTS",
                json.dumps([{"vars": {"question": r["question"], "answer": r["answer"]}} for r in part]),
            ),
            encoding="utf-8",
        )
    (directory / "bare_loop.py").write_text(BARE_LOOP, encoding="utf-8")
    (directory / "proxy_loop.py").write_text(PROXY_LOOP, encoding="utf-8")
    (directory / "deepeval_run.py").write_text(DEEPEVAL_RUN, encoding="utf-8")
    (directory / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")


def revision(tree: Path) -> str:
    try:
        out = subprocess.run(
            ["git", "-C", str(tree), "rev-parse", "--short", "HEAD"],
            capture_output=True, text=True, check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        out = tree.name
    return out or tree.name


def build_tools(args: argparse.Namespace, url: str, missing: dict[str, str]) -> list[Tool]:
    c = str(args.connections)
    py = sys.executable
    base = dict(clean_env())
    wanted = [t.strip() for t in args.tools.split(",") if t.strip()]
    tools: list[Tool] = []

    def ours(data: str) -> list[str]:
        return [
            py, "-m", "pytest", "-q", "-p", "no:cacheprovider",
            f"--ctxbench-dataset={data}.jsonl", f"--ctxbench-proxy={url}",
            "--ctxbench-model=m", f"--ctxbench-concurrency={c}", "--ctxbench-cache=off",
        ]

    here = Path(__file__).resolve().parent.parent
    peers_py = Path(args.peers_venv) / "bin" / "python"
    for name in wanted:
        if name == "ctxbench":
            tools.append(Tool(name, ours, {**base, "PYTHONPATH": str(here)}, counted))
        elif name == "proxy-loop":
            tools.append(Tool(
                name, lambda d: [py, "proxy_loop.py", url, c, f"{d}.jsonl"],
                {**base, "PYTHONPATH": str(here)}, counted,
            ))
        elif name == "asyncio+httpx":
            tools.append(Tool(name, lambda d: [py, "bare_loop.py", url, c, f"{d}.jsonl"], base, counted))
        elif name == "inspect":
            inspect = Path(args.peers_venv) / "bin" / "inspect"
            if not inspect.exists():
                missing[name] = f"not installed ({inspect} not found)"
                continue
            tools.append(Tool(
                name,
                lambda d, inspect=inspect: [
                    str(inspect), "eval", f"inspect_{d}.py", "--model", "openai-api/bench/m",
                    "--max-connections", c, "--no-log-samples", "--display", "none",
                    "--log-dir", "inspect-logs",
                ],
                {**base, "BENCH_BASE_URL": url + "/v1", "BENCH_API_KEY": "x"},
                None,
            ))
        elif name == "deepeval":
            probe = subprocess.run(
                [str(peers_py), "-c", "import deepeval, openai"], capture_output=True
            ) if peers_py.exists() else None
            if probe is None or probe.returncode != 0:
                missing[name] = f"not installed (no deepeval in {args.peers_venv})"
                continue
            tools.append(Tool(
                name, lambda d: [str(peers_py), "deepeval_run.py", url, c, f"{d}.jsonl"],
                base, counted,
            ))
        elif name == "promptfoo":
            cli = Path(args.promptfoo_dir) / "node_modules" / ".bin" / "promptfoo"
            node = shutil.which("node")
            if not cli.exists() or node is None:
                missing[name] = f"not installed ({cli} not found)"
                continue
            tools.append(Tool(
                name,
                lambda d, cli=cli, node=node: [
                    node, str(cli.resolve()), "eval", "-c", f"promptfoo_{d}.yaml", "-j", c,
                    "--no-cache", "--no-write", "--no-table", "--no-progress-bar", "--no-share",
                ],
                {**base, "PROMPTFOO_CONFIG_DIR": str(Path(args.workdir or ".") / ".promptfoo")},
                promptfoo_passed,
            ))
        else:
            sys.exit(f"--tools: unknown tool {name!r}; known: {', '.join(TOOLS)}")
    for tree in args.tree or []:
        path = Path(tree).resolve()
        if not (path / "pytest_context_bench").is_dir():
            sys.exit(f"--tree {tree}: no pytest_context_bench package there")
        tools.insert(1, Tool(f"ctxbench@{revision(path)}", ours, {**base, "PYTHONPATH": str(path)}, counted))
    return tools


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=200, help="questions (default 200)")
    parser.add_argument("--delay", type=float, default=0.1, help="endpoint delay, s (0.1)")
    parser.add_argument("--connections", type=int, default=16, help="in flight (16)")
    parser.add_argument("--rounds", type=int, default=3, help="measured rounds (3)")
    parser.add_argument("--tools", default=",".join(TOOLS), help="comma-separated")
    parser.add_argument("--tree", action="append", metavar="PATH",
                        help="also run ctxbench from this checkout (repeatable)")
    parser.add_argument("--peers-venv", default="/tmp/peers-venv")
    parser.add_argument("--promptfoo-dir", default="/work/pf")
    parser.add_argument("--no-startup", dest="startup", action="store_false",
                        help="do not run the one-question start-up runs")
    parser.add_argument("--workdir", help="keep the files here instead of a temp dir")
    args = parser.parse_args()
    if args.n < 2 or args.rounds < 1 or args.connections < 1:
        parser.error("--n must be >= 2, --rounds and --connections >= 1")

    def answer(request: Any) -> Reply:
        text = " ".join(str(m.get("content", "")) for m in request.messages)
        match = QUESTION.search(text)
        return Reply(text=f"city {match.group(1)}" if match else "?", delay=args.delay)

    missing: dict[str, str] = {}
    loads: list[float] = []
    with FakeLLM(handler=answer) as llm:
        tmp = None
        if args.workdir:
            directory = Path(args.workdir).resolve()
            directory.mkdir(parents=True, exist_ok=True)
        else:
            tmp = tempfile.TemporaryDirectory(prefix="ctxbench-peers-")
            directory = Path(tmp.name)
        try:
            write_data(directory, args.n, llm.base_url)
            tools = build_tools(args, llm.base_url, missing)
            for name, why in missing.items():
                print(f"{name}: {why}; skipped", flush=True)
            big = f"qa{args.n}"

            def once(tool: Tool, data: str) -> tuple[float, float, int, int, int, str]:
                llm.max_in_flight = 0
                before = len(llm.requests)
                wall, cpu, rss, out, rc = run(tool.argv(data), directory, tool.env)
                sent = len(llm.requests) - before
                llm.requests.clear()  # only the count is kept: this process stays small
                if rc not in (0,):
                    sys.stderr.write(f"{tool.name} failed ({rc}): {' '.join(tool.argv(data))}\n{out[-3000:]}\n")
                    sys.exit(2)
                return wall, cpu, rss, sent, llm.max_in_flight, out

            for tool in tools:  # warm-up: bytecode, page cache
                once(tool, "qa1")
            for round_ in range(args.rounds):
                loads.append(os.getloadavg()[0])
                order = tools if round_ % 2 == 0 else tools[::-1]
                for tool in order:
                    wall, cpu, rss, sent, peak, out = once(tool, big)
                    got = tool.passed(out) if tool.passed else None
                    if tool.name == "inspect":
                        got = inspect_passed(args.n)(out)
                    if got is not None and got != args.n:
                        sys.stderr.write(f"{tool.name}: {got} of {args.n} passed\n{out[-2000:]}\n")
                        sys.exit(2)
                    tool.walls.append(wall)
                    tool.cpus.append(cpu)
                    tool.rss.append(rss)
                    tool.requests.append(sent)
                    tool.peaks.append(peak)
                    shown = ""
                    if args.startup:
                        wall1, cpu1, _, _, _, _ = once(tool, "qa1")
                        tool.start_walls.append(wall1)
                        tool.start_cpus.append(cpu1)
                        shown = f" | 1 question: wall {wall1:5.2f} s cpu {cpu1:5.2f} s"
                    print(
                        f"round {round_ + 1} {tool.name:18} wall {wall:6.2f} s cpu {cpu:6.2f} s"
                        f" rss {rss / 1024:6.1f} MiB requests {sent} in flight {peak}{shown}",
                        flush=True,
                    )
            loads.append(os.getloadavg()[0])
        finally:
            if tmp is not None:
                tmp.cleanup()
    report(args, tools, missing, loads)
    return 0


def report(args: argparse.Namespace, tools: list[Tool], missing: dict[str, str], loads: list[float]) -> None:
    med = statistics.median
    ref = next((t for t in tools if t.name == "asyncio+httpx"), None)
    print()
    print(
        f"{args.n} questions, endpoint delay {args.delay * 1000:.0f} ms, {args.connections}"
        f" connections; medians of {args.rounds} alternating rounds;"
        f" {datetime.date.today().isoformat()}, {os.cpu_count()} CPUs, Python"
        f" {platform.python_version()}; load average (1 min) {min(loads):.1f} to {max(loads):.1f}"
    )
    header = ["tool", "wall", "cpu", "peak RSS", "requests", "max in flight"]
    if args.startup:
        header += ["start-up wall", "start-up cpu", "cpu per call"]
    if ref is not None:
        header += ["wall / bare", "cpu per call / bare" if args.startup else "cpu / bare"]
    rows = []

    def per_call(t: Tool) -> float:
        return (med(t.cpus) - med(t.start_cpus)) / (args.n - 1)

    for t in tools:
        row = [
            t.name,
            f"{med(t.walls):.2f} s",
            f"{med(t.cpus):.2f} s",
            f"{med(t.rss) / 1024:.0f} MiB",
            "/".join(str(r) for r in t.requests),
            str(max(t.peaks)),
        ]
        if args.startup:
            row += [f"{med(t.start_walls):.2f} s", f"{med(t.start_cpus):.2f} s",
                    f"{per_call(t) * 1000:.2f} ms"]
        if ref is not None:
            row.append(f"{med(t.walls) / med(ref.walls):.2f}x")
            if args.startup:
                row.append(f"{per_call(t) / per_call(ref):.2f}x")
            else:
                row.append(f"{med(t.cpus) / med(ref.cpus):.2f}x")
        rows.append(row)
    for name, why in missing.items():
        rows.append([name, why] + [""] * (len(header) - 2))
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for row in rows:
        print("| " + " | ".join(row) + " |")


if __name__ == "__main__":
    sys.exit(main())
