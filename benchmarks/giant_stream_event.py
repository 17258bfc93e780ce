"""One giant stream event through ``http_client()``, side by side with plain httpx.

A loopback ``FakeLLM`` (in a process of its own, so that its copy of the reply
weighs on neither side) answers a streamed chat request with one
``chat.completion.chunk`` event whose delta holds ``--mb`` megabytes of text, then
the finish chunk and ``data: [DONE]``, with no usage chunk: so the transport counts
the usage itself (an estimate), the costly path. Each round runs, in fresh
interpreters, interleaved:

- **httpx**: ``httpx.Client().post(...)``: the body read whole (a copy of it is
  what recording a stream needs too);
- **ours**: ``http_client(cache).stream(...)`` (a fresh cache file, mode ``once``)
  inside an example's call scope, the body read with ``iter_bytes()``: passed on,
  recorded, its usage estimated, stored.

Each prints its wall and CPU seconds for the request, its peak memory (``ru_maxrss``)
and that peak above what the process held just before the request (``VmRSS``; ours
loads the tokenizer before, so that its fixed 25 MiB is not counted), and the script
prints the medians and the ratios ours / httpx. The wall time includes the loopback
server's (one process on the same machine); the CPU time is the client's alone.

    python benchmarks/giant_stream_event.py                  # 30 MB of words, 3 rounds
    python benchmarks/giant_stream_event.py --text same      # one repeated letter
    python benchmarks/giant_stream_event.py --mb 10 --rounds 5

``--text``: ``words`` (English-like words), ``same`` (one letter repeated: one
pre-token of the whole event, BPE's slowest), ``cjk`` (Chinese characters: a token
each). Exit status 0; 2 when a run fails.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

SERVER = r"""
import sys, time
from pytest_context_bench.testing import FakeLLM, Reply
size, kind = int(sys.argv[1]), sys.argv[2]
unit = {"words": "lorem ipsum dolor sit amet ", "same": "a", "cjk": "\u4e2d\u6587"}[kind]
text = unit * (size // len(unit.encode()))
server = FakeLLM(default=Reply(text=text, chunks=[text], usage={})).start()
print(server.port, flush=True)
sys.stdin.read()
server.stop()
"""

CLIENT = r"""
import json, resource, sys, tempfile, time

def rss_kib():
    with open("/proc/self/status") as f:
        return int(next(l for l in f if l.startswith("VmRSS")).split()[1])

variant, url = sys.argv[1], sys.argv[2]
import httpx
body = {"model": "m", "messages": [{"role": "user", "content": "Write a lot."}],
        "stream": True}
if variant == "httpx":
    client = httpx.Client(timeout=600)
    scope = None
else:
    from pytest_context_bench.cache import LLMCache
    from pytest_context_bench.calls import CallScope, call_scope
    from pytest_context_bench.tokens import count_tokens
    from pytest_context_bench.transports import http_client
    count_tokens("warm up")  # the tokenizer's fixed cost is not the event's
    client = http_client(LLMCache.in_dir(tempfile.mkdtemp(), "once"), timeout=600)
    scope = CallScope("s", "d", "ex", trial=1)
before = rss_kib()
wall, cpu = time.perf_counter(), time.process_time()
if scope is None:
    got = len(client.post(url, json=body).content)
else:
    with call_scope(scope):
        with client.stream("POST", url, json=body) as r:
            got = sum(len(c) for c in r.iter_bytes())
wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
usage = scope.usage[0] if scope is not None else {}
print(json.dumps({"bytes": got, "wall": wall, "cpu": cpu,
                  "peak_mib": (peak - before) / 1024, "rss_mib": peak / 1024,
                  "completion_tokens": usage.get("completion_tokens"),
                  "estimated": usage.get("estimated", False)}))
"""


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def _run(variant: str, url: str) -> dict[str, float]:
    done = subprocess.run(
        [sys.executable, "-c", CLIENT, variant, url],
        capture_output=True,
        text=True,
        env=_env(),
        timeout=1800,
    )
    if done.returncode != 0:
        print(f"{variant} failed:\n{done.stderr}", file=sys.stderr)
        sys.exit(2)
    return json.loads(done.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mb", type=float, default=30.0, help="event size (MB)")
    parser.add_argument("--text", choices=("words", "same", "cjk"), default="words")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    size = int(args.mb * 1_000_000)
    server = subprocess.Popen(
        [sys.executable, "-c", SERVER, str(size), args.text],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=_env(),
    )
    try:
        assert server.stdout is not None
        port = int(server.stdout.readline())
        url = f"http://127.0.0.1:{port}/v1/chat/completions"
        runs: dict[str, list[dict[str, float]]] = {"httpx": [], "ours": []}
        for n in range(args.rounds):
            order = ("httpx", "ours") if n % 2 == 0 else ("ours", "httpx")
            for variant in order:
                runs[variant].append(_run(variant, url))
            time.sleep(0.1)
    finally:
        if server.stdin is not None:
            server.stdin.close()
        server.wait(timeout=60)
    med = {
        v: {
            k: statistics.median(r[k] for r in rs)
            for k in ("wall", "cpu", "peak_mib", "rss_mib")
        }
        for v, rs in runs.items()
    }
    got = runs["ours"][0]
    print(
        f"one stream event of {got['bytes'] / 1e6:.1f} MB ({args.text}), no usage"
        f" chunk, {args.rounds} round(s), medians (Python {sys.version.split()[0]}):"
    )
    print(f"  {'':26}{'wall s':>9}{'CPU s':>9}{'peak RSS MiB':>14}{'above start':>13}")
    for variant, label in (("httpx", "plain httpx"), ("ours", "http_client() + cache")):
        m = med[variant]
        print(
            f"  {label:26}{m['wall']:9.2f}{m['cpu']:9.2f}{m['rss_mib']:14.1f}"
            f"{m['peak_mib']:13.1f}"
        )
    h, o = med["httpx"], med["ours"]
    print(
        f"  ours / httpx: wall {o['wall'] / h['wall']:.1f}x, CPU {o['cpu'] / h['cpu']:.1f}x,"
        f" peak RSS {o['rss_mib'] / h['rss_mib']:.1f}x, above start"
        f" {o['peak_mib'] / max(h['peak_mib'], 0.1):.1f}x"
        f" ({o['peak_mib'] / (got['bytes'] / 2**20):.1f}x the event's size)"
    )
    print(
        f"  completion tokens estimated: {got['completion_tokens']:,}"
        f" (estimated={got['estimated']})"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
