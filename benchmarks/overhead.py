"""Per-example overhead of pytest-context-bench against bare pytest, side by side.

Two variants run on the same generated QA dataset, in fresh subprocesses, in the same
temporary directory with the same flags, interleaved round by round:

* A "bare":     a test module that parametrizes a no-op test over the examples;
* B "ctxbench": ``--ctxbench-dataset=qa.jsonl --ctxbench-system=bench_system:passthrough``
  (a System that answers exactly, so every example passes and is scored).

The script reports the median wall time and peak RSS of each, and the ratios B/A
against the target (1.3x). Run it from anywhere with the project's venv active:

    python benchmarks/overhead.py                # 5,000 examples, 5 rounds
    python benchmarks/overhead.py --xdist 2      # the same under pytest-xdist -n 2
    python benchmarks/overhead.py --check        # exit 1 when a ratio is above target
    python benchmarks/overhead.py --profile b.prof   # also profile variant B once

Exit status: 0 (or 1 with ``--check`` and a ratio above target); 2 when a variant
fails (non-zero exit, missing tests, missing ctxbench summary).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

TARGET = 1.3

# Runs pytest in-process and reports the peak RSS of this process (the pytest
# process) and of its largest waited-for child (an xdist worker, under -n), in KiB.
WRAPPER = (
    "import resource,sys,pytest; rc=pytest.main(sys.argv[1:]); "
    "print('MAXRSS', resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, "
    "resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, file=sys.stderr); "
    "sys.exit(rc)"
)

_WORDS = (
    "river mountain valley harbor forest desert island bridge castle market tower "
    "garden village engine signal archive lantern compass harvest meadow glacier "
    "canyon orchard temple library museum station factory quarry beacon vessel "
    "council treaty empire border province capital merchant scholar pilgrim sailor "
    "copper silver marble timber cotton spice salt grain wool amber granite coral "
    "ancient northern eastern quiet famous hidden broad narrow steep golden"
).split()
_NAMES = (
    "Aldera Brimholt Casvane Dunmere Elsworth Farrow Galdric Hesper Ithaca Jorvik "
    "Kestrel Lunmark Morvane Norhaven Ostrel Pellin Quarry Ravensk Solmere Tamsin"
).split()
_RELATIONS = ("capital", "largest port", "oldest city", "main export", "highest peak")

BARE_MODULE = '''\
import json
from pathlib import Path

import pytest

EXAMPLES = [
    json.loads(line)
    for line in (Path(__file__).parent / "qa.jsonl").read_text(encoding="utf-8").splitlines()
    if line.strip()
]


@pytest.mark.parametrize("example", EXAMPLES, ids=[e["id"] for e in EXAMPLES])
def test_noop(example):
    pass
'''

SYSTEM_MODULE = '''\
class Passthrough:
    """Answers with the gold answer: every example scores 1.0."""

    name = "passthrough"

    def process(self, example):
        return {**example, "response": example["answer"]}


passthrough = Passthrough()
'''

# Same ini for both variants: rootdir = the temp dir, which is also put on sys.path
# so that `bench_system:passthrough` imports.
INI = "[pytest]\npythonpath = .\n"


def make_examples(n: int, seed: int) -> list[dict[str, str]]:
    """``n`` small QA examples (context of ~40 words), deterministic for a seed."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        place = rng.choice(_NAMES) + rng.choice(("ia", "or", "en", "um", "ad"))
        relation = rng.choice(_RELATIONS)
        answer = " ".join(w.capitalize() for w in rng.sample(_WORDS, rng.randint(1, 2)))
        filler = [rng.choice(_WORDS) for _ in range(30)]
        cut = rng.randint(8, 22)
        context = (
            f"{place} is a {' '.join(filler[:3])} land. "
            + " ".join(filler[3:cut]).capitalize()
            + f". Its {relation} is {answer}. "
            + " ".join(filler[cut:]).capitalize()
            + "."
        )
        out.append(
            {
                "id": f"qa-{i:05d}",
                "context": context,
                "question": f"What is the {relation} of {place}?",
                "answer": answer,
            }
        )
    return out


def write_workdir(root: Path, n: int, seed: int) -> None:
    with (root / "qa.jsonl").open("w", encoding="utf-8") as fh:
        for ex in make_examples(n, seed):
            fh.write(json.dumps(ex) + "\n")
    # Not named test_*.py: variant B collects the directory and must not pick it up;
    # variant A names it on the command line, which collects it regardless.
    (root / "bare_noop.py").write_text(BARE_MODULE, encoding="utf-8")
    (root / "bench_system.py").write_text(SYSTEM_MODULE, encoding="utf-8")
    (root / "pytest.ini").write_text(INI, encoding="utf-8")


@dataclass
class Variant:
    name: str
    args: list[str]
    expect_summary: bool
    walls: list[float] = field(default_factory=list)
    rss_self: list[int] = field(default_factory=list)
    rss_children: list[int] = field(default_factory=list)

    @property
    def rss_peak(self) -> list[int]:
        """Peak RSS of the largest pytest process of each run (KiB)."""
        return [max(a, b) for a, b in zip(self.rss_self, self.rss_children)]


class BenchError(Exception):
    pass


def clean_env() -> dict[str, str]:
    env = dict(os.environ)
    for key in ("PYTEST_ADDOPTS", "PYTEST_PLUGINS", "PYTEST_XDIST_AUTO_NUM_WORKERS"):
        env.pop(key, None)
    env["PYTHONHASHSEED"] = "0"
    return env


def _counts(stdout: str) -> dict[str, int]:
    lines = [ln for ln in stdout.splitlines() if ln.strip()]
    last = lines[-1] if lines else ""
    return {k: int(v) for v, k in re.findall(r"(\d+) (passed|failed|errors?|skipped|below threshold|xfailed|xpassed)", last)}


def run_once(v: Variant, cwd: Path, common: list[str], n: int, record: bool = True) -> None:
    cmd = [sys.executable, "-c", WRAPPER, *common, *v.args]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=cwd, env=clean_env(), capture_output=True, text=True)
    wall = time.perf_counter() - t0

    def fail(why: str) -> BenchError:
        tail = "\n".join((proc.stdout + "\n" + proc.stderr).strip().splitlines()[-30:])
        return BenchError(f"variant {v.name}: {why}\ncommand: {' '.join(cmd)}\n--- output tail ---\n{tail}")

    if proc.returncode != 0:
        raise fail(f"pytest exited with {proc.returncode}")
    counts = _counts(proc.stdout)
    if counts.get("passed") != n or set(counts) - {"passed"}:
        raise fail(f"expected exactly {n} passed, got {counts or 'no summary line'}")
    if v.expect_summary and "ctxbench summary" not in proc.stdout:
        raise fail("no 'ctxbench summary' section in the output")
    if not v.expect_summary and "ctxbench summary" in proc.stdout:
        raise fail("the bare variant printed a ctxbench summary")
    m = re.search(r"^MAXRSS (\d+) (\d+)$", proc.stderr, re.M)
    if m is None:
        raise fail("the wrapper did not report MAXRSS")
    if record:
        v.walls.append(wall)
        v.rss_self.append(int(m.group(1)))
        v.rss_children.append(int(m.group(2)))


def verdict(ratio: float) -> str:
    return "PASS" if ratio <= TARGET else "ABOVE TARGET"


def mib(kib: float) -> str:
    return f"{kib / 1024:.1f} MiB"


def report(a: Variant, b: Variant, n: int, xdist: int | None) -> tuple[float, float]:
    med = statistics.median
    rows = []
    for v in (a, b):
        rows.append(
            (
                v.name,
                f"{med(v.walls):.3f} s",
                f"{min(v.walls):.3f} s",
                f"{med(v.walls) / n * 1e6:.0f} µs",
                mib(med(v.rss_peak)),
                mib(med(v.rss_self)),
                mib(med(v.rss_children)) if xdist else "-",
            )
        )
    header = ("variant", "wall median", "wall min", "wall/example", "peak RSS", "pytest proc", "largest worker")
    widths = [max(len(str(r[i])) for r in (header, *rows)) for i in range(len(header))]
    fmt = "  ".join(f"{{:<{w}}}" for w in widths)
    print(fmt.format(*header))
    print(fmt.format(*("-" * w for w in widths)))
    for r in rows:
        print(fmt.format(*r))
    wall_ratio = med(b.walls) / med(a.walls)
    mem_ratio = med(b.rss_peak) / med(a.rss_peak)
    extra = (med(b.walls) - med(a.walls)) / n * 1e6
    print()
    print(f"extra wall per example: {extra:.0f} µs; extra peak RSS: {mib(med(b.rss_peak) - med(a.rss_peak))}")
    print(f"wall time   B/A = {wall_ratio:.2f}x  {verdict(wall_ratio)}")
    print(f"peak memory B/A = {mem_ratio:.2f}x  {verdict(mem_ratio)}")
    print(f"overhead: wall {wall_ratio:.2f}x, peak memory {mem_ratio:.2f}x (target <= {TARGET}x)")
    return wall_ratio, mem_ratio


def profile_b(b: Variant, cwd: Path, common: list[str], out: Path, top: int) -> None:
    """Run variant B once under cProfile (in-process, no xdist) and print hotspots."""
    import pstats

    cmd = [sys.executable, "-m", "cProfile", "-o", str(out), "-m", "pytest", *common, *b.args]
    proc = subprocess.run(cmd, cwd=cwd, env=clean_env(), capture_output=True, text=True)
    if proc.returncode != 0:
        raise BenchError(f"profiling run failed ({proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    stats = pstats.Stats(str(out))
    pkg = "pytest_context_bench"
    for key, label in (("cumulative", "cumulative"), ("tottime", "own time")):
        print(f"\n--- variant B profile: pytest_context_bench functions by {label} ---")
        entries = [
            (fn, st) for fn, st in stats.stats.items()  # type: ignore[attr-defined]
            if pkg in fn[0] and "benchmarks" not in fn[0]
        ]
        idx = 3 if key == "cumulative" else 2
        entries.sort(key=lambda e: e[1][idx], reverse=True)
        print(f"{'cumulative':>10}  {'tottime':>8}  {'calls':>8}  function")
        for (path, line, name), (cc, nc, tt, ct, _) in entries[:top]:
            short = path[path.rfind(pkg):]
            print(f"{ct:10.3f}  {tt:8.3f}  {nc:8d}  {short}:{line}:{name}")
    print(f"\nfull profile: {out}  (python -m pstats {out})")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--n", type=int, default=5000, help="examples (= tests per variant); default 5000")
    p.add_argument("--repeat", type=int, default=5, help="measured rounds of A then B; default 5")
    p.add_argument("--warmup", type=int, default=1, help="unmeasured rounds first (bytecode, caches); default 1")
    p.add_argument("--xdist", type=int, metavar="N", help="add -n N to both variants")
    p.add_argument("--no-plugin-in-bare", action="store_true", help="add -p no:ctxbench to the bare variant")
    p.add_argument("--check", action="store_true", help="exit 1 when a ratio is above the target")
    p.add_argument("--seed", type=int, default=1234)
    p.add_argument("--keep", action="store_true", help="keep the temporary directory and print its path")
    p.add_argument("--profile", type=Path, metavar="OUT.prof", help="also run variant B once under cProfile (no xdist)")
    p.add_argument("--profile-top", type=int, default=25)
    args = p.parse_args(argv)
    if args.n < 1 or args.repeat < 1:
        p.error("--n and --repeat must be >= 1")

    tmp = tempfile.mkdtemp(prefix="ctxbench-overhead-")
    root = Path(tmp)
    try:
        write_workdir(root, args.n, args.seed)
        common = ["-q", "-p", "no:cacheprovider"]
        if args.xdist:
            common += ["-n", str(args.xdist)]
        bare_args = ["bare_noop.py"] + (["-p", "no:ctxbench"] if args.no_plugin_in_bare else [])
        a = Variant("A bare", bare_args, expect_summary=False)
        b = Variant(
            "B ctxbench",
            ["--ctxbench-dataset=qa.jsonl", "--ctxbench-system=bench_system:passthrough"],
            expect_summary=True,
        )
        import pytest  # noqa: F401  (fail early, with a clear error, outside the venv)

        print(
            f"pytest-context-bench overhead: {args.n} examples, {args.repeat} rounds"
            f" (+{args.warmup} warm-up), xdist {'-n ' + str(args.xdist) if args.xdist else 'off'},"
            f" plugin in bare: {'no' if args.no_plugin_in_bare else 'yes'}; Python"
            f" {sys.version.split()[0]}, pytest {sys.modules['pytest'].__version__}, {os.cpu_count()} CPUs"
        )
        print(f"common flags: {' '.join(common)}\n")
        for _ in range(args.warmup):
            run_once(a, root, common, args.n, record=False)
            run_once(b, root, common, args.n, record=False)
        for i in range(args.repeat):
            # Alternate which goes first, so drift (thermal, page cache) hits both.
            order = (a, b) if i % 2 == 0 else (b, a)
            for v in order:
                run_once(v, root, common, args.n)
            print(
                f"round {i + 1}: A {a.walls[-1]:.3f} s {mib(a.rss_peak[-1])}"
                f" | B {b.walls[-1]:.3f} s {mib(b.rss_peak[-1])}",
                flush=True,
            )
        print()
        wall_ratio, mem_ratio = report(a, b, args.n, args.xdist)
        if args.profile:
            profile_b(b, root, ["-q", "-p", "no:cacheprovider"], args.profile.resolve(), args.profile_top)
    except BenchError as exc:
        print(f"\nBENCHMARK FAILED: {exc}", file=sys.stderr)
        return 2
    finally:
        if args.keep:
            print(f"\nkept: {root}")
        else:
            import shutil

            shutil.rmtree(root, ignore_errors=True)
    if args.check and (wall_ratio > TARGET or mem_ratio > TARGET):
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
