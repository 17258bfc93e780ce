"""What pytest-context-bench costs, against pytest without it, side by side.

Four sections, each measured in fresh subprocesses, the variants interleaved round by
round (the order flips each round), medians reported:

* ``import``: ``import pytest`` then ``import pytest_context_bench.plugin`` in one
  fresh interpreter, timed with ``perf_counter``; target: the plugin <= 0.25x pytest.
* ``unused``: a plain project of 50 trivial tests, run with the plugin installed and
  not asked for (no ``--ctxbench-*`` option, no marked test) and with
  ``-p no:ctxbench``; target: <= 1.05x. Peak RSS of both.
* ``memory``: the peak RSS of bare parametrized pytest and of the no-op ctxbench run
  (variants A and B below) at ``--memory-sizes`` examples, and the memory each adds
  per example above ``--memory-base`` examples (the fixed costs, the tokenizer's
  tables among them, cancel out); target: the plugin's growth per example <= 1.3x
  bare pytest's per item.
* ``examples``: per-example overhead on one generated QA dataset:

  * A "bare":     a test module that parametrizes a no-op test over the examples;
  * B "ctxbench": ``--ctxbench-dataset=qa.jsonl --ctxbench-system=bench_system:passthrough``
    (a System that answers exactly, so every example passes and is scored);

  median wall time and peak RSS of each, and the ratios B/A against 1.3x.

Run it from anywhere with the project's venv active:

    python benchmarks/overhead.py                # all four sections
    python benchmarks/overhead.py --only import,unused
    python benchmarks/overhead.py --only examples --xdist 2   # A/B under -n 2
    python benchmarks/overhead.py --only examples --against DIR  # + B from another checkout
    python benchmarks/overhead.py --check        # exit 1 when a ratio is above target
    python benchmarks/overhead.py --only examples --profile b.prof   # profile B once

The subprocesses may write bytecode (``PYTHONDONTWRITEBYTECODE`` is dropped), as an
installed package has it: otherwise every run would compile the plugin's source.

Exit status: 0 (or 1 with ``--check`` and a ratio above target); 2 when a variant
fails (non-zero exit, missing tests, missing ctxbench summary).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

TARGET = 1.3
#: the load average (1 min) at each round of 'examples'
LOADS: list[float] = []
#: the plugin's import against pytest's (issue 26)
IMPORT_TARGET = 0.25
#: a plain run with the plugin installed and unused against -p no:ctxbench
UNUSED_TARGET = 1.05
#: the plugin's memory growth per example against bare pytest's per item
GROWTH_TARGET = 1.3

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
    #: CPU seconds (user + system) of the run's processes, xdist workers included
    cpus: list[float] = field(default_factory=list)
    rss_self: list[int] = field(default_factory=list)
    rss_children: list[int] = field(default_factory=list)
    #: a checkout to import pytest_context_bench from (``--against``), or None
    pythonpath: str | None = None

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
    # As installed packages do: read (and write) bytecode rather than compile the
    # plugin's source in every run.
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def _counts(stdout: str) -> dict[str, int]:
    lines = [ln for ln in stdout.splitlines() if ln.strip()]
    last = lines[-1] if lines else ""
    return {k: int(v) for v, k in re.findall(r"(\d+) (passed|failed|errors?|skipped|below threshold|xfailed|xpassed)", last)}


def run_once(v: Variant, cwd: Path, common: list[str], n: int, record: bool = True) -> None:
    cmd = [sys.executable, "-c", WRAPPER, *common, *v.args]
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    env = clean_env()
    if v.pythonpath is not None:
        env["PYTHONPATH"] = v.pythonpath
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime + after.ru_stime - used.ru_utime - used.ru_stime

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
        v.cpus.append(cpu)
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
                f"{med(v.cpus) / n * 1e6:.0f} µs",
                mib(med(v.rss_peak)),
                mib(med(v.rss_self)),
                mib(med(v.rss_children)) if xdist else "-",
            )
        )
    header = ("variant", "wall median", "wall min", "wall/example", "cpu/example", "peak RSS", "pytest proc", "largest worker")
    widths = [max(len(str(r[i])) for r in (header, *rows)) for i in range(len(header))]
    fmt = "  ".join(f"{{:<{w}}}" for w in widths)
    print(fmt.format(*header))
    print(fmt.format(*("-" * w for w in widths)))
    for r in rows:
        print(fmt.format(*r))
    wall_ratio = med(b.walls) / med(a.walls)
    cpu_ratio = med(b.cpus) / med(a.cpus)
    mem_ratio = med(b.rss_peak) / med(a.rss_peak)
    extra = (med(b.walls) - med(a.walls)) / n * 1e6
    print()
    print(f"extra wall per example: {extra:.0f} µs; extra peak RSS: {mib(med(b.rss_peak) - med(a.rss_peak))}")
    print(f"wall time   B/A = {wall_ratio:.2f}x  {verdict(wall_ratio)}")
    print(f"cpu time    B/A = {cpu_ratio:.2f}x  {verdict(cpu_ratio)}  (per example: {med(b.cpus) / n * 1e3:.2f} ms against {med(a.cpus) / n * 1e3:.2f} ms)")
    # Not a verdict: the peak holds fixed costs (the tokenizer's tables, about 30
    # MiB); what the plugin adds per example is the 'memory' section's target.
    print(f"peak memory B/A = {mem_ratio:.2f}x  (fixed costs included; per example: the 'memory' section)")
    print(f"load average (1 min) during the rounds: {min(LOADS):.1f} to {max(LOADS):.1f}")
    print(
        f"overhead: wall {wall_ratio:.2f}x, cpu {cpu_ratio:.2f}x (target <= {TARGET}x),"
        f" peak memory {mem_ratio:.2f}x"
    )
    return max(wall_ratio, cpu_ratio), mem_ratio


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


# ---------------------------------------------------------------- import, unused

IMPORT_TIMER = (
    "import time; t0 = time.perf_counter(); import pytest; t1 = time.perf_counter();"
    " import pytest_context_bench.plugin; t2 = time.perf_counter();"
    " print(t1 - t0, t2 - t1)"
)


def bench_import(rounds: int) -> float:
    """``import pytest`` then the plugin, in fresh interpreters; prints and returns
    the median ratio plugin / pytest."""
    pytest_s: list[float] = []
    plugin_s: list[float] = []
    ratios: list[float] = []
    for i in range(rounds + 1):
        out = subprocess.run(
            [sys.executable, "-c", IMPORT_TIMER], env=clean_env(), capture_output=True,
            text=True, check=True,
        ).stdout.split()
        if i == 0:
            continue  # warm-up: bytecode, page cache
        a, b = float(out[0]), float(out[1])
        pytest_s.append(a)
        plugin_s.append(b)
        ratios.append(b / a)
    med = statistics.median
    ratio = med(ratios)
    print(f"import, {rounds} fresh interpreters (medians):")
    print(f"  import pytest                      {med(pytest_s) * 1e3:7.1f} ms")
    print(f"  then import pytest_context_bench.plugin {med(plugin_s) * 1e3:7.1f} ms")
    print(
        f"  plugin / pytest = {ratio:.2f}x (target <= {IMPORT_TARGET}x)"
        f"  {'PASS' if ratio <= IMPORT_TARGET else 'ABOVE TARGET'}"
    )
    return ratio


PLAIN_TESTS = 50


def write_plain(root: Path) -> None:
    body = "".join(
        f"def test_{i}():\n    assert {i} + 1 == {i + 1}\n\n\n" for i in range(PLAIN_TESTS)
    )
    (root / "test_plain.py").write_text(body, encoding="utf-8")
    (root / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")


def bench_unused(rounds: int) -> float:
    """A plain project with the plugin installed and unused, against the same run
    with ``-p no:ctxbench``; prints and returns the median wall ratio."""
    with tempfile.TemporaryDirectory(prefix="ctxbench-unused-") as tmp:
        root = Path(tmp)
        write_plain(root)
        common = ["-q", "-p", "no:cacheprovider"]
        a = Variant("A -p no:ctxbench", ["-p", "no:ctxbench"], expect_summary=False)
        b = Variant("B installed, unused", [], expect_summary=False)
        for i in range(rounds + 1):
            for v in (a, b) if i % 2 == 0 else (b, a):
                run_once(v, root, common, PLAIN_TESTS, record=i > 0)
    med = statistics.median
    ratio = med(b.walls) / med(a.walls)
    print(f"a plain project of {PLAIN_TESTS} tests, {rounds} interleaved rounds (medians):")
    for v in (a, b):
        print(
            f"  {v.name:<22} wall {med(v.walls):.3f} s (min {min(v.walls):.3f} s),"
            f" peak RSS {mib(med(v.rss_peak))}"
        )
    print(
        f"  unused / no:ctxbench = {ratio:.3f}x (target <= {UNUSED_TARGET}x)"
        f"  {'PASS' if ratio <= UNUSED_TARGET else 'ABOVE TARGET'};"
        f" {(med(b.walls) - med(a.walls)) * 1e3:+.0f} ms"
    )
    return ratio


# ------------------------------------------------------------------------ memory


def bench_memory(sizes: list[int], base: int, rounds: int, seed: int) -> float:
    """Peak RSS of variants A (bare) and B (no-op ctxbench run) at each size, and
    the growth per example above ``base`` examples; returns the largest growth
    ratio B/A."""
    med = statistics.median
    peaks: dict[tuple[str, int], float] = {}
    for n in [base, *sizes]:
        with tempfile.TemporaryDirectory(prefix="ctxbench-memory-") as tmp:
            root = Path(tmp)
            write_workdir(root, n, seed)
            common = ["-q", "-p", "no:cacheprovider"]
            a = Variant("A bare", ["bare_noop.py"], expect_summary=False)
            b = Variant("B ctxbench", B_ARGS, expect_summary=True)
            for i in range(rounds):
                for v in (a, b) if i % 2 == 0 else (b, a):
                    run_once(v, root, common, n)
            peaks["A", n] = med(a.rss_peak)
            peaks["B", n] = med(b.rss_peak)
        print(
            f"  {n:>6} examples: bare {mib(peaks['A', n])}, ctxbench {mib(peaks['B', n])}",
            flush=True,
        )
    print(
        f"memory, {rounds} round(s) per size (medians); growth per example above"
        f" {base:,} examples:"
    )
    header = ("examples", "bare peak", "ctxbench peak", "peak B/A", "bare /item",
              "ctxbench /example", "growth B/A")
    rows = []
    worst = 0.0
    for n in sizes:
        grow_a = (peaks["A", n] - peaks["A", base]) * 1024 / (n - base)
        grow_b = (peaks["B", n] - peaks["B", base]) * 1024 / (n - base)
        ratio = grow_b / grow_a if grow_a > 0 else float("inf")
        worst = max(worst, ratio)
        rows.append((
            f"{n:,}", mib(peaks["A", n]), mib(peaks["B", n]),
            f"{peaks['B', n] / peaks['A', n]:.2f}x", f"{grow_a:.0f} B",
            f"{grow_b:.0f} B",
            f"{ratio:.2f}x {'PASS' if ratio <= GROWTH_TARGET else 'ABOVE TARGET'}",
        ))
    widths = [max(len(str(r[i])) for r in (header, *rows)) for i in range(len(header))]
    fmt = "  " + "  ".join(f"{{:<{w}}}" for w in widths)
    print(fmt.format(*header))
    for r in rows:
        print(fmt.format(*r))
    n = sizes[0]
    print(
        f"  the no-op run's peak RSS at {n:,} examples: {mib(peaks['B', n])}"
        f" ({peaks['B', n] / peaks['A', n]:.2f}x bare pytest's"
        f" {mib(peaks['A', n])}); fixed part (at {base:,}):"
        f" +{mib(peaks['B', base] - peaks['A', base])}"
    )
    print(f"  growth per example B/A, the largest: {worst:.2f}x (target <= {GROWTH_TARGET}x)")
    return worst


B_ARGS = ["--ctxbench-dataset=qa.jsonl", "--ctxbench-system=bench_system:passthrough"]


SECTIONS = ("import", "unused", "memory", "examples")


def bench_examples(args: argparse.Namespace) -> tuple[float, float]:
    """Variants A and B at ``--n`` examples; returns the wall and memory ratios."""
    tmp = tempfile.mkdtemp(prefix="ctxbench-overhead-")
    root = Path(tmp)
    try:
        write_workdir(root, args.n, args.seed)
        common = ["-q", "-p", "no:cacheprovider"]
        if args.xdist:
            common += ["-n", str(args.xdist)]
        bare_args = ["bare_noop.py"] + (["-p", "no:ctxbench"] if args.no_plugin_in_bare else [])
        a = Variant("A bare", bare_args, expect_summary=False)
        b = Variant("B ctxbench", B_ARGS, expect_summary=True)
        variants = [a, b]
        if args.against:
            # The same run with another checkout's package first on sys.path (its
            # source, as an editable install has it): this change against its parent.
            variants.append(
                Variant(f"C {args.against}", B_ARGS, expect_summary=True,
                        pythonpath=str(Path(args.against).resolve()))
            )
        print(
            f"examples: {args.n} examples, {args.repeat} rounds (+{args.warmup} warm-up),"
            f" xdist {'-n ' + str(args.xdist) if args.xdist else 'off'},"
            f" plugin in bare: {'no' if args.no_plugin_in_bare else 'yes'}"
        )
        print(f"common flags: {' '.join(common)}\n")
        for _ in range(args.warmup):
            for v in variants:
                run_once(v, root, common, args.n, record=False)
        for i in range(args.repeat):
            # Alternate the order, so drift (thermal, page cache) hits every variant.
            order = variants if i % 2 == 0 else variants[::-1]
            LOADS.append(os.getloadavg()[0])
            for v in order:
                run_once(v, root, common, args.n)
            print(
                f"round {i + 1}: "
                + " | ".join(f"{v.name.split()[0]} {v.walls[-1]:.3f} s {mib(v.rss_peak[-1])}" for v in variants),
                flush=True,
            )
        print()
        ratios = report(a, b, args.n, args.xdist)
        for c in variants[2:]:
            med = statistics.median
            print(
                f"{c.name}: wall {med(c.walls):.3f} s ({med(c.walls) / med(a.walls):.2f}x bare),"
                f" cpu {med(c.cpus):.3f} s ({med(c.cpus) / med(a.cpus):.2f}x bare);"
                f" this checkout against it: wall {med(b.walls) / med(c.walls):.2f}x,"
                f" cpu {med(b.cpus) / med(c.cpus):.2f}x"
            )
        if args.profile:
            profile_b(b, root, ["-q", "-p", "no:cacheprovider"], args.profile.resolve(), args.profile_top)
        return ratios
    finally:
        if args.keep:
            print(f"\nkept: {root}")
        else:
            import shutil

            shutil.rmtree(root, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--only", default=",".join(SECTIONS), help=f"comma-separated sections: {', '.join(SECTIONS)}; default all")
    p.add_argument("--import-rounds", type=int, default=20, help="fresh interpreters for 'import'; default 20")
    p.add_argument("--unused-rounds", type=int, default=20, help="rounds of the plain project for 'unused'; default 20")
    p.add_argument("--memory-sizes", default="5000,50000", help="example counts for 'memory'; default 5000,50000")
    p.add_argument("--memory-base", type=int, default=1000, help="the size growth is measured from; default 1000")
    p.add_argument("--memory-rounds", type=int, default=2, help="rounds per size for 'memory'; default 2")
    p.add_argument("--n", type=int, default=5000, help="examples (= tests per variant) for 'examples'; default 5000")
    p.add_argument("--repeat", type=int, default=5, help="measured rounds of A then B; default 5")
    p.add_argument("--warmup", type=int, default=1, help="unmeasured rounds first (bytecode, caches); default 1")
    p.add_argument("--xdist", type=int, metavar="N", help="add -n N to both variants of 'examples'")
    p.add_argument(
        "--against", metavar="DIR",
        help="'examples' also runs variant B with DIR (another checkout, e.g. a git worktree"
        " of the parent commit) first on PYTHONPATH, and prints this checkout against it",
    )
    p.add_argument("--no-plugin-in-bare", action="store_true", help="add -p no:ctxbench to the bare variant")
    p.add_argument("--check", action="store_true", help="exit 1 when a ratio is above the target")
    p.add_argument("--seed", type=int, default=1234)
    p.add_argument("--keep", action="store_true", help="keep the temporary directory and print its path")
    p.add_argument("--profile", type=Path, metavar="OUT.prof", help="also run variant B once under cProfile (no xdist)")
    p.add_argument("--profile-top", type=int, default=25)
    args = p.parse_args(argv)
    only = [x.strip() for x in args.only.split(",") if x.strip()]
    if not only or set(only) - set(SECTIONS):
        p.error(f"--only takes {', '.join(SECTIONS)}")
    if args.n < 1 or args.repeat < 1:
        p.error("--n and --repeat must be >= 1")
    sizes = [int(x) for x in args.memory_sizes.split(",") if x.strip()]
    if "memory" in only and (not sizes or min(sizes) <= args.memory_base):
        p.error("--memory-sizes must all be above --memory-base")
    import pytest  # (fail early, with a clear error, outside the venv)

    print(
        f"pytest-context-bench overhead: Python {sys.version.split()[0]}, pytest"
        f" {pytest.__version__}, {os.cpu_count()} CPUs; sections: {', '.join(only)}\n"
    )
    above: list[str] = []
    try:
        if "import" in only:
            if bench_import(args.import_rounds) > IMPORT_TARGET:
                above.append("import")
            print()
        if "unused" in only:
            if bench_unused(args.unused_rounds) > UNUSED_TARGET:
                above.append("unused")
            print()
        if "memory" in only:
            if bench_memory(sizes, args.memory_base, args.memory_rounds, args.seed) > GROWTH_TARGET:
                above.append("memory")
            print()
        if "examples" in only:
            wall_ratio, _ = bench_examples(args)
            if wall_ratio > TARGET:
                above.append("examples")
    except BenchError as exc:
        print(f"\nBENCHMARK FAILED: {exc}", file=sys.stderr)
        return 2
    if above:
        print(f"\nabove target: {', '.join(above)}")
    return 1 if args.check and above else 0


if __name__ == "__main__":
    sys.exit(main())
