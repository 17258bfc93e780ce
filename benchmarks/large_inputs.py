"""How long the evaluators take on megabyte responses, and whether it stays linear.

The test suite feeds these inputs too (``tests/test_ifeval.py``,
``test_math_equivalence.py``, ``test_multiple_choice.py``, ``test_nli.py``,
``test_summarization.py``), but only with a timeout that catches a hang: timing
belongs here, not in tests that a loaded machine turns red. For each case the script
times the evaluator on a response of about 1 MB and of about 2 MB (the same pattern,
twice as long), in this process, alternating, ``--rounds`` times, and prints the
medians and their ratio: about 2 for a linear path, about 4 for a quadratic one (the
official IFEval expressions, rouge-score's LCS table: minutes to hours at 1 MB).

    python benchmarks/large_inputs.py               # every case, 3 rounds
    python benchmarks/large_inputs.py --only ifeval --rounds 5
    python benchmarks/large_inputs.py --check       # exit 1 when a ratio is above 3

CPU time (``process_time``), not wall time, so other processes on the machine weigh
less. Exit status: 0; 1 with ``--check`` when a 2 MB / 1 MB ratio is above 3.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from collections.abc import Callable

MB = 1_000_000
LIMIT = 3.0


def _ifeval(iid: str, kwargs: dict[str, object]) -> Callable[[str], object]:
    from pytest_context_bench.evaluators.ifeval import IFEvalChecker

    checker = IFEvalChecker()
    original = {"instruction_id_list": [iid], "kwargs": [kwargs]}
    return lambda text: checker.score(original, {"response": text})


def _math() -> Callable[[str], object]:
    from pytest_context_bench.evaluators.math_equivalence import MathEquivalence

    ev = MathEquivalence(timeout=1.0)
    return lambda text: ev.score({"answer": "42"}, {"response": text})


def _choice() -> Callable[[str], object]:
    from pytest_context_bench.evaluators.multiple_choice import extract_choice

    return lambda text: extract_choice(text, choices=["1", "1 1", "x", "y"])


def _nli() -> Callable[[str], object]:
    from pytest_context_bench.evaluators.nli import SCIFACT_LABELS, extract_label

    return lambda text: extract_label(text + "\nAnswer: refutes.", SCIFACT_LABELS)


def _rouge(reference: str) -> Callable[[str], object]:
    from pytest_context_bench.evaluators.summarization import rouge_l

    return lambda text: rouge_l(reference, text)


def _natural(n_words: int) -> str:
    rng = random.Random(1)
    vocab = [f"w{i}" for i in range(5000)]
    weights = [1.0 / (i + 1) for i in range(5000)]
    words = rng.choices(vocab, weights, k=n_words)
    return "".join(w + ("\n" if rng.random() < 0.05 else " ") for w in words)


def cases() -> dict[str, tuple[str, Callable[[str], object], Callable[[int], str]]]:
    """name -> (group, scorer, size -> response of about that many characters)."""
    reference = _natural(2000)

    def rep(unit: str) -> Callable[[int], str]:
        return lambda size: unit * (size // len(unit))

    return {
        "ifeval bullet lists, newlines": (
            "ifeval", _ifeval("detectable_format:number_bullet_lists", {"num_bullets": 1}), rep("\n")),
        "ifeval placeholders, '['": (
            "ifeval", _ifeval("detectable_content:number_placeholders", {"num_placeholders": 1}), rep("[")),
        "ifeval sentences, '1. '": (
            "ifeval",
            _ifeval("length_constraints:number_sentences", {"num_sentences": 1, "relation": "at least"}),
            rep("1. ")),
        "ifeval json, '['": ("ifeval", _ifeval("detectable_format:json_format", {}), rep("[")),
        "math, thousands": ("math", _math(), rep("1,000")),
        "math, boxed sum": ("math", _math(), lambda size: "\\boxed{" + "1+" * (size // 2) + "1}"),
        "multiple choice, '1 '": ("choice", _choice(), rep("1 ")),
        "multiple choice, parens": ("choice", _choice(), lambda size: "(" * size + "x"),
        "nli, 'Answer: yes. '": ("nli", _nli(), rep("Answer: yes. ")),
        "nli, newlines": ("nli", _nli(), rep("\n")),
        "rouge-L, 1 MB response": (
            "rouge", _rouge(reference),
            lambda size: "\n".join([reference] * (size // len(reference) + 1))),
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--only", help="groups: ifeval, math, choice, nli, rouge (comma-separated)")
    p.add_argument("--check", action="store_true", help=f"exit 1 when a ratio is above {LIMIT}")
    args = p.parse_args(argv)
    groups = set(args.only.split(",")) if args.only else None
    print(f"{'case':<32} {'1 MB':>9} {'2 MB':>9}  2 MB / 1 MB (CPU s, medians of {args.rounds})")
    worst = 0.0
    for name, (group, scorer, make) in cases().items():
        if groups is not None and group not in groups:
            continue
        one, two = make(MB), make(2 * MB)
        scorer(make(1000))  # warm-up (imports, compiled expressions, a SymPy worker)
        times: dict[int, list[float]] = {1: [], 2: []}
        for i in range(args.rounds):
            for size, text in ((1, one), (2, two)) if i % 2 == 0 else ((2, two), (1, one)):
                start = time.process_time()
                scorer(text)
                times[size].append(time.process_time() - start)
        a, b = statistics.median(times[1]), statistics.median(times[2])
        ratio = b / a if a > 0 else float("nan")
        worst = max(worst, ratio)
        print(f"{name:<32} {a:9.3f} {b:9.3f}  {ratio:.2f}{'' if ratio <= LIMIT else '  ABOVE'}",
              flush=True)
    print(f"largest ratio {worst:.2f} (linear about 2, quadratic about 4; limit {LIMIT})")
    return 1 if args.check and worst > LIMIT else 0


if __name__ == "__main__":
    sys.exit(main())
