"""Replay means nothing is sent: a System's own client is refused, not let through.

A System built on ``OpenAI(...)`` without ``http_client=`` bypasses the LLM cache.
Under ``--ctxbench-cache=replay`` its connection is refused before anything is sent
(the row is an error naming host:port and the fix, the summary counts them); under
``once`` the run says how many connections bypassed the cache. Subprocess runs
against a real server on 127.0.0.1 (httpx must not be imported inside pytester's
sys.modules snapshot).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from pytest_context_bench.testing import FakeLLM

pytest.importorskip("openai")

FIX = "build the client with http_client() so that its calls go through the cache"

# A System whose client is the SDK's own (no http_client=): the bug report's shape.
DIRECT = '''
from openai import OpenAI

CLIENT = OpenAI(base_url="{url}/v1", api_key="sk-test", max_retries=0)


class Direct:
    name = "direct"

    def process(self, example):
        reply = CLIENT.chat.completions.create(
            model="m", messages=[{{"role": "user", "content": example["question"]}}]
        )
        return {{**example, "response": reply.choices[0].message.content}}


class Fresh(Direct):
    """A client per call (one connection per call)."""

    name = "fresh"

    def process(self, example):
        with OpenAI(base_url="{url}/v1", api_key="sk-test", max_retries=0) as client:
            reply = client.chat.completions.create(
                model="m", messages=[{{"role": "user", "content": example["question"]}}]
            )
        return {{**example, "response": reply.choices[0].message.content}}


class Swallow(Direct):
    """Catches every error and answers anyway: still an error row in replay."""

    name = "swallow"

    def process(self, example):
        try:
            return super().process(example)
        except Exception:
            return {{**example, "response": "Paris"}}


class Async:
    name = "async_direct"

    async def process(self, example):
        from openai import AsyncOpenAI

        async with AsyncOpenAI(base_url="{url}/v1", api_key="sk-test", max_retries=0) as client:
            reply = await client.chat.completions.create(
                model="m", messages=[{{"role": "user", "content": example["question"]}}]
            )
        return {{**example, "response": reply.choices[0].message.content}}


class Pooled(Direct):
    """Calls from a thread of its own pool, which does not carry the call's context."""

    name = "pooled"

    def process(self, example):
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(1) as pool:
            return pool.submit(Direct.process, self, example).result()


class Ours(Direct):
    """The fixed System: the SDK's client built with http_client()."""

    name = "ours"

    def process(self, example):
        from pytest_context_bench import http_client

        client = OpenAI(base_url="{url}/v1", api_key="sk-test", max_retries=0, http_client=http_client())
        reply = client.chat.completions.create(
            model="m", messages=[{{"role": "user", "content": example["question"]}}]
        )
        return {{**example, "response": reply.choices[0].message.content}}


direct, fresh, swallow, async_direct, pooled, ours = (
    Direct(), Fresh(), Swallow(), Async(), Pooled(), Ours()
)
'''

N = 4


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    lines = [
        json.dumps({"id": f"q{i}", "question": f"Capital of country {i}?", "answer": "Paris"})
        for i in range(N)
    ]
    pytester.makefile(".jsonl", qa="\n".join(lines) + "\n")
    pytester.makeini("[pytest]\npythonpath = .\n")
    return pytester


def _run(pytester: pytest.Pytester, llm: FakeLLM, system: str, *args: str) -> tuple[pytest.RunResult, dict[str, Any]]:
    # A module name of its own per test: no other test's System is imported by mistake.
    module = f"replay_net_{pytester.path.name.replace('-', '_')}"
    if not (pytester.path / f"{module}.py").exists():
        pytester.makepyfile(**{module: DIRECT.format(url=llm.base_url)})
    out = pytester.path / "out.json"
    result = pytester.runpytest_subprocess(
        "-p", "no:randomly",
        "--ctxbench-dataset=qa.jsonl",
        f"--ctxbench-system={module}:{system}",
        f"--ctxbench-json={out}",
        *args,
        timeout=300,
    )
    return result, json.loads(out.read_text())


def _flat(result: pytest.RunResult) -> str:
    return " ".join(result.stdout.str().split())


def _assert_refused(result: pytest.RunResult, doc: dict[str, Any], port: int, count: int = N) -> None:
    where = f"127.0.0.1:{port}"
    rows = doc["rows"]
    assert len(rows) == N
    for row in rows:
        error = row["error"]
        assert error is not None, row
        assert error["type"] == "pytest_context_bench.netguard.ReplayConnectionRefused", error
        assert where in error["message"], error
        assert "nothing was sent" in error["message"], error
        assert FIX in error["message"], error
        assert f"--ctxbench-replay-allow={where}" in error["message"], error
        assert row["scores"] == {}
    cache = doc["llm"]["cache"]
    assert cache["refused_connections"] == count, cache
    assert cache["bypass_addresses"] == [where], cache
    flat = _flat(result)
    said = f"{count} connection(s) refused in replay mode ({N} example(s) errored; nothing was sent): {where}"
    assert flat.count(said) == 1, result.stdout.str()


@pytest.mark.parametrize(
    "system, args",
    [
        ("direct", []),
        ("direct", ["-n", "2"]),
        ("direct", ["--ctxbench-concurrency=4"]),
        ("swallow", []),
        ("async_direct", ["--ctxbench-concurrency=4"]),
        ("async_direct", ["-n", "2"]),
        ("pooled", []),
        ("pooled", ["--ctxbench-concurrency=4"]),
    ],
    ids=[
        "sync", "sync-xdist2", "sync-concurrency", "swallowed", "async-concurrency",
        "async-xdist2", "own-thread", "own-thread-concurrency",
    ],
)
def test_replay_refuses_a_systems_own_client(project: pytest.Pytester, system: str, args: list[str]) -> None:
    with FakeLLM(default="Paris") as llm:
        port = llm.port
        sent = 0
        if not args:  # once (each System once): its calls are sent, and not cached
            first, _ = _run(project, llm, system)
            sent = len(llm.requests)
            assert sent == N, first.stdout.str()
        replay, doc = _run(project, llm, system, "--ctxbench-cache=replay", *args)
        assert len(llm.requests) == sent, "replay sent requests: " + replay.stdout.str()
    assert replay.ret == 1, replay.stdout.str()
    _assert_refused(replay, doc, port)


def test_replay_allow_lets_the_address_through(project: pytest.Pytester) -> None:
    with FakeLLM(default="Paris") as llm:
        port = llm.port
        result, doc = _run(project, llm, "direct", "--ctxbench-cache=replay", f"--ctxbench-replay-allow=127.0.0.1:{port}")
        assert len(llm.requests) == N
        # another port of the same host is not allowed
        other, doc2 = _run(project, llm, "direct", "--ctxbench-cache=replay", f"--ctxbench-replay-allow=127.0.0.1:{llm.port + 1 if llm.port < 65535 else 1}")
        assert len(llm.requests) == N
        # the ini twin, by name (localhost resolves to 127.0.0.1)
        project.makeini(f"[pytest]\npythonpath = .\nctxbench_replay_allow =\n    localhost:{llm.port}\n")
        ini, doc3 = _run(project, llm, "direct", "--ctxbench-cache=replay")
        assert len(llm.requests) == 2 * N
    assert result.ret == 0, result.stdout.str()
    assert all(r["error"] is None for r in doc["rows"])
    assert not doc.get("llm")  # nothing measured, nothing refused
    assert "refused in replay mode" not in result.stdout.str()
    _assert_refused(other, doc2, port)
    assert ini.ret == 0, ini.stdout.str()
    assert all(r["error"] is None for r in doc3["rows"])


def test_once_says_once_how_many_connections_bypassed_the_cache(project: pytest.Pytester) -> None:
    with FakeLLM(default="Paris") as llm:
        port = llm.port
        result, doc = _run(project, llm, "fresh")
        assert len(llm.requests) == N
        xdist, doc2 = _run(project, llm, "fresh", "-n", "2", "--ctxbench-cache=refresh")
        assert len(llm.requests) == 2 * N
    where = f"127.0.0.1:{port}"
    for run, d in ((result, doc), (xdist, doc2)):
        assert run.ret == 0, run.stdout.str()
        assert all(r["error"] is None for r in d["rows"])  # not refused
        flat = _flat(run)
        assert flat.count("bypassed the LLM cache") == 1, run.stdout.str()
        assert f"{N} connection(s) opened by System calls bypassed the LLM cache (not cached, not metered): {where}" in flat
        assert "http_client()" in flat
        assert d["llm"]["cache"]["bypassed_connections"] == N
        assert d["llm"]["cache"]["bypass_addresses"] == [where]


def test_our_own_client_is_neither_counted_nor_refused(project: pytest.Pytester) -> None:
    with FakeLLM(default="Paris") as llm:
        first, doc = _run(project, llm, "ours")
        assert len(llm.requests) == N
        replay, doc2 = _run(project, llm, "ours", "--ctxbench-cache=replay", "-n", "2")
        assert len(llm.requests) == N
    for run, d in ((first, doc), (replay, doc2)):
        assert run.ret == 0, run.stdout.str()
        assert "bypassed the LLM cache" not in run.stdout.str()
        assert "refused in replay mode" not in run.stdout.str()
        assert d["llm"]["cache"]["bypassed_connections"] == 0
        assert d["llm"]["cache"]["refused_connections"] == 0
    assert doc2["llm"]["cache"]["hits"] == N


@pytest.mark.parametrize(
    "value, message",
    [
        ("127.0.0.1", "--ctxbench-replay-allow: expected HOST:PORT*given: '127.0.0.1'"),
        ("127.0.0.1:0", "--ctxbench-replay-allow: expected HOST:PORT*given: '127.0.0.1:0'"),
        ("127.0.0.1:99999", "--ctxbench-replay-allow: expected HOST:PORT*given: '127.0.0.1:99999'"),
        (":80", "--ctxbench-replay-allow: expected HOST:PORT*given: ':80'"),
        ("::1:80", "--ctxbench-replay-allow: expected HOST:PORT*given: '::1:80'"),
    ],
)
def test_a_bad_allow_address_is_one_usage_error(project: pytest.Pytester, value: str, message: str) -> None:
    result = project.runpytest_subprocess("--ctxbench-dataset=qa.jsonl", "--ctxbench-proxy=http://127.0.0.1:9", f"--ctxbench-replay-allow={value}")
    assert result.ret == 4
    result.stderr.fnmatch_lines([f"ERROR: {message}"])


# -- in-process, through evaluate(): the same watch, without pytest -----------------


def _evaluate(system: Any, mode: str, tmp_path: Any) -> Any:
    from pytest_context_bench import evaluate
    from pytest_context_bench.cache import LLMCache, set_active_cache

    previous = set_active_cache(LLMCache.in_dir(tmp_path, mode=mode))
    try:
        return evaluate(system, [{"id": "1", "question": "Capital?", "answer": "Paris"}], progress=False)
    finally:
        set_active_cache(previous)


class _Raw:
    """Opens sockets itself: TCP, a UDP datagram, and a socketpair (AF_UNIX)."""

    name = "raw"

    def __init__(self, port: int, udp: bool = False) -> None:
        self.port, self.udp = port, udp

    def process(self, example: dict[str, Any]) -> dict[str, Any]:
        import socket

        a, b = socket.socketpair()  # AF_UNIX: never leaves the machine, never refused
        a.close()
        b.close()
        if self.udp:
            with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as u:
                u.sendto(b"x", ("127.0.0.1", self.port))
        else:
            socket.create_connection(("127.0.0.1", self.port), timeout=5).close()
        return {**example, "response": "Paris"}


@pytest.mark.parametrize("udp", [False, True], ids=["tcp", "udp"])
def test_raw_sockets_are_refused_in_replay_and_counted_in_once(tmp_path: Any, udp: bool) -> None:
    with FakeLLM() as llm:
        replayed = _evaluate(_Raw(llm.port, udp), "replay", tmp_path)
        once = _evaluate(_Raw(llm.port, udp), "once", tmp_path)
        off = _evaluate(_Raw(llm.port, udp), "off", tmp_path)
        where = f"127.0.0.1:{llm.port}"
    (row,) = replayed.rows
    assert row.error is not None and row.error["type"] == "pytest_context_bench.netguard.ReplayConnectionRefused"
    assert row.metadata["refused_connections"] == {where: 1}
    assert once.rows[0].error is None and once.rows[0].metadata["bypassed_connections"] == {where: 1}
    assert off.rows[0].error is None and "bypassed_connections" not in off.rows[0].metadata


def test_allow_by_name_and_the_parse_of_addresses(tmp_path: Any) -> None:
    from pytest_context_bench.netguard import allow, parse_address

    assert parse_address(" 127.0.0.1:80 ") == ("127.0.0.1", 80)
    assert parse_address("[::1]:6333") == ("::1", 6333)
    assert parse_address("Qdrant.local:6333") == ("Qdrant.local", 6333)
    for bad in ("127.0.0.1", "::1:80", "[::1]", "host:0", "host:65536", "host:8o", ":80"):
        with pytest.raises(ValueError, match="expected HOST:PORT"):
            parse_address(bad)
    with FakeLLM() as llm:
        before = allow([("LOCALHOST", llm.port)])
        try:
            row = _evaluate(_Raw(llm.port), "replay", tmp_path).rows[0]
        finally:
            allow(before)
        refused = _evaluate(_Raw(llm.port), "replay", tmp_path).rows[0]
    assert row.error is None and "refused_connections" not in row.metadata
    assert refused.error is not None
