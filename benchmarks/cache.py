"""What the LLM cache saves, and what it costs, measured side by side.

Against a loopback OpenAI-compatible endpoint that answers each request after
``--latency`` seconds (default 0.1), on ``--n`` QA examples (default 200), in one
temporary project, in fresh pytest subprocesses:

1. **record**: ``--ctxbench-proxy=<endpoint>`` with an empty cache (every request
   is sent and stored);
2. **replay**: the same command again (every request must come from the cache:
   0 requests reach the endpoint, and the rows' scores must be identical);
3. **no-op**: the same dataset with a System that makes no call at all
   (``{**example, "response": example["answer"]}``), the floor of a run.

It prints the requests each run sent, the wall times and the ratio replay / no-op
(target: at most 1.5x), then the same three runs under ``-n 2`` unless
``--no-xdist``. Finally it times the cache itself in this process: lookup + store
per call (µs) and the file size per 1,000 cached calls.

    python benchmarks/cache.py                 # 200 examples, 100 ms latency
    python benchmarks/cache.py --check         # exit 1 when a target is missed

Exit status: 0; 1 with ``--check`` when the replay sent a request, changed a
score or is above 1.5x the no-op run; 2 when a run fails.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from pytest_context_bench.cache import CACHE_FILE, CachedResponse, LLMCache, cache_key
from pytest_context_bench.testing import FakeLLM, Reply

TARGET = 1.5

NOOP_SYSTEM = """
class NoOp:
    name = "noop"

    def process(self, example):
        return {**example, "response": example["answer"]}


noop = NoOp()
"""


def _dataset(n: int) -> str:
    return "".join(
        json.dumps(
            {
                "id": f"q-{i}",
                "context": f"Country {i} lies by the sea; its capital is city {i}.",
                "question": f"What is the capital of country {i}?",
                "answer": f"city {i}",
            }
        )
        + "\n"
        for i in range(n)
    )


def _run(cwd: Path, args: list[str], json_path: Path) -> tuple[float, dict]:
    cmd = [
        sys.executable,
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:randomly",
        "--ctxbench-dataset=qa.jsonl",
        f"--ctxbench-json={json_path}",
        *args,
    ]
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    wall = time.perf_counter() - start
    if proc.returncode not in (0,):
        print(proc.stdout[-3000:], proc.stderr[-3000:], file=sys.stderr)
        raise SystemExit(2)
    return wall, json.loads(json_path.read_text())


def _scores(doc: dict) -> dict[str, dict]:
    return {r["example_id"]: r["scores"] for r in doc["rows"]}


def _one_setting(root: Path, llm: FakeLLM, extra: list[str], label: str) -> bool:
    cache_dir = root / f"cache{label}"
    proxy = [
        f"--ctxbench-proxy={llm.base_url}",
        "--ctxbench-proxy-name=local",
        f"--ctxbench-cache-dir={cache_dir}",
    ]
    before = len(llm.requests)
    t_record, doc_record = _run(root, proxy + extra, root / "record.json")
    sent_record = len(llm.requests) - before
    before = len(llm.requests)
    t_replay, doc_replay = _run(root, proxy + extra, root / "replay.json")
    sent_replay = len(llm.requests) - before
    t_noop, _ = _run(
        root, ["--ctxbench-system=noop_system:noop", *extra], root / "noop.json"
    )
    same = _scores(doc_record) == _scores(doc_replay)
    ratio = t_replay / t_noop
    print(f"[{label or 'in-process'}]")
    print(f"  record : {t_record:6.2f} s  {sent_record} requests sent")
    print(
        f"  replay : {t_replay:6.2f} s  {sent_replay} requests sent; scores identical: {same}"
    )
    print(f"  no-op  : {t_noop:6.2f} s  (a System that makes no call)")
    print(f"  replay / no-op = {ratio:.2f}x (target <= {TARGET}x)")
    return sent_replay == 0 and same and ratio <= TARGET


def _micro(tmp: Path, calls: int = 1000) -> None:
    cache = LLMCache.in_dir(tmp / "micro")
    body = json.dumps(
        {
            "id": "chatcmpl-0123456789",
            "object": "chat.completion",
            "created": 1700000000,
            "model": "gpt-4o-mini-2024-07-18",
            "choices": [
                {
                    "index": 0,
                    "message": {
                        "role": "assistant",
                        "content": "city 42, the capital" * 4,
                    },
                    "finish_reason": "stop",
                }
            ],
            "usage": {
                "prompt_tokens": 812,
                "completion_tokens": 24,
                "total_tokens": 836,
            },
        }
    ).encode()
    request = json.dumps(
        {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "x" * 2000}]}
    ).encode()
    keys = [
        cache_key(
            "POST",
            "https://api.example.com/v1/chat/completions",
            request + str(i).encode(),
            1,
        )
        for i in range(calls)
    ]
    cache.store.get("warm-up")
    t0 = time.perf_counter()
    for k in keys:
        if cache.store.get(k) is None:
            cache.store.put(
                k,
                "POST",
                "https://api.example.com/v1/chat/completions",
                CachedResponse(200, "application/json", body, time.time(), "bench"),
            )
    t_miss = (time.perf_counter() - t0) / calls
    t0 = time.perf_counter()
    for k in keys:
        assert cache.store.get(k) is not None
    t_hit = (time.perf_counter() - t0) / calls
    t0 = time.perf_counter()
    for i in range(calls):
        cache_key("POST", "https://api.example.com/v1/chat/completions", request, i)
    t_key = (time.perf_counter() - t0) / calls
    cache.store.close()
    size = sum(p.stat().st_size for p in (tmp / "micro").iterdir())
    print(f"[cache itself, {calls} calls of a {len(body)}-byte reply]")
    print(
        f"  key (canonical body + SHA-256 of a {len(request)}-byte request): {t_key * 1e6:6.1f} µs"
    )
    print(f"  miss: lookup + store: {t_miss * 1e6:6.1f} µs per call")
    print(f"  hit : lookup        : {t_hit * 1e6:6.1f} µs per call")
    print(
        f"  file: {size / 1024:,.0f} KiB per {calls:,} cached calls ({CACHE_FILE} + WAL)"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=200)
    parser.add_argument("--latency", type=float, default=0.1)
    parser.add_argument("--no-xdist", action="store_true")
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args()
    ok = True
    with tempfile.TemporaryDirectory(prefix="ctxbench-cache-bench-") as tmp:
        root = Path(tmp)
        (root / "qa.jsonl").write_text(_dataset(args.n))
        (root / "noop_system.py").write_text(NOOP_SYSTEM)
        (root / "pytest.ini").write_text("[pytest]\npythonpath = .\n")
        os.environ.pop("OPENAI_API_KEY", None)

        def answer(request):  # type: ignore[no-untyped-def]
            text = json.dumps(request.json)
            n = text.split("capital of country ")[-1].split("?")[0]
            return Reply(
                text=f"city {n}",
                delay=args.latency,
                usage={"prompt_tokens": 30, "completion_tokens": 3},
            )

        with FakeLLM(handler=answer) as llm:
            print(f"{args.n} examples, endpoint latency {args.latency * 1000:.0f} ms")
            ok &= _one_setting(root, llm, [], "")
            if not args.no_xdist:
                ok &= _one_setting(root, llm, ["-n", "2"], "-n 2")
        _micro(root)
    return 1 if args.check and not ok else 0


if __name__ == "__main__":
    sys.exit(main())
