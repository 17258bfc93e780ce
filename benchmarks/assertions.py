"""Assertions: our engine against promptfoo's own, side by side, on the same cases.

The cases are the conformance oracle's (tests/oracles/promptfoo/cases.json) that
promptfoo judges without starting a process: every case but the ``python`` ones
(promptfoo runs each in a new ``python3``, which would measure process start-up)
and the ones it refuses. Both engines run every case ``--rounds`` times in one
process each, after one warm-up round; each prints its median round. Ours compiles
and runs each case's list as a row does (``Assertions.score``, its cache cleared so
every round compiles again); promptfoo's is ``assertions.runAssertions``, the function
its evaluator calls after a provider answers, timed inside Node (start-up excluded).

    python benchmarks/assertions.py --node-modules /path/to/node_modules
    python benchmarks/assertions.py --rounds 50 --check   # exit 1 below 1x

Needs Node.js and ``npm install promptfoo@0.121.20`` in a scratch directory outside
this repository (never a dependency of ours; see tests/oracles/promptfoo/README.md).
Exit status: 0; 1 with ``--check`` when ours is slower; 2 when promptfoo is missing.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from pytest_context_bench.evaluators.assertions import Assertions, call_facts

ORACLE = Path(__file__).resolve().parent.parent / "tests" / "oracles" / "promptfoo"

NODE = r"""
import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
const [casesPath, nodeModules, rounds] = process.argv.slice(2);
process.env.PROMPTFOO_DISABLE_TELEMETRY = '1';
process.env.LOG_LEVEL = 'error';
const entry = path.join(nodeModules, 'promptfoo', 'dist', 'src', 'index.js');
const { runAssertions } = (await import(pathToFileURL(entry).href)).assertions;
const cases = JSON.parse(fs.readFileSync(casesPath, 'utf8'));
async function round() {
  for (const c of cases) {
    const test = { vars: c.vars || {}, assert: c.assert, threshold: c.threshold };
    await runAssertions({ test, vars: c.vars || {}, latencyMs: c.latency_ms,
      providerResponse: { output: c.output, latencyMs: c.latency_ms, cost: c.cost } });
  }
}
await round();
const times = [];
for (let i = 0; i < Number(rounds); i++) {
  const t = process.hrtime.bigint();
  await round();
  times.push(Number(process.hrtime.bigint() - t) / 1e9);
}
times.sort((a, b) => a - b);
console.log(JSON.stringify({ median: times[Math.floor(times.length / 2)] }));
"""


def _cases() -> list[dict]:
    cases = json.loads((ORACLE / "cases.json").read_text("utf-8"))
    expected = json.loads((ORACLE / "expected.json").read_text("utf-8"))["cases"]
    return [
        c for c in cases
        if "error" not in expected[c["id"]]
        and not any("python" in a["type"] for a in c["assert"])
    ]


def _ours(cases: list[dict], rounds: int) -> float:
    def one_round() -> None:
        checks = Assertions(base_dir=str(ORACLE))
        for c in cases:
            example = {"id": c["id"], **(c.get("vars") or {}), "assert": c["assert"]}
            if c.get("threshold") is not None:
                example["threshold"] = c["threshold"]
            try:
                with call_facts(latency_ms=c.get("latency_ms"), cost=c.get("cost")):
                    checks.score(example, {"response": c["output"]})
            except Exception:
                pass  # a deliberate difference (docs/differences.md): timed all the same

    one_round()
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        one_round()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--node-modules", default=os.environ.get("PROMPTFOO_NODE_MODULES", "/work/pf/node_modules"))
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args()
    if not (Path(args.node_modules) / "promptfoo" / "package.json").is_file():
        print(f"promptfoo is not installed in {args.node_modules}: npm install promptfoo@0.121.20 there")
        return 2
    cases = _cases()
    with tempfile.TemporaryDirectory() as tmp:
        cases_path = Path(tmp) / "cases.json"
        cases_path.write_text(json.dumps(cases))
        script = Path(tmp) / "bench.mjs"
        script.write_text(NODE)
        done = subprocess.run(
            ["node", str(script), str(cases_path), args.node_modules, str(args.rounds)],
            cwd=ORACLE, capture_output=True, text=True, check=True,
        )
    theirs = json.loads(done.stdout.strip().splitlines()[-1])["median"]
    ours = _ours(cases, args.rounds)
    version = json.loads((Path(args.node_modules) / "promptfoo" / "package.json").read_text())["version"]
    print(f"{len(cases)} cases, {sum(len(c['assert']) for c in cases)} assertions, median of {args.rounds} rounds")
    print(f"  promptfoo {version} runAssertions (Node {subprocess.run(['node', '--version'], capture_output=True, text=True).stdout.strip()}): {theirs * 1e3:8.2f} ms per round")
    print(f"  pytest-context-bench Assertions (Python {sys.version.split()[0]}):   {ours * 1e3:8.2f} ms per round")
    print(f"  ratio promptfoo / ours: {theirs / ours:.2f}x")
    return 1 if args.check and ours > theirs else 0


if __name__ == "__main__":
    sys.exit(main())
