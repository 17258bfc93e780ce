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


def _run(
    pytester: pytest.Pytester, llm: FakeLLM, system: str | tuple[str, ...], *args: str
) -> tuple[pytest.RunResult, dict[str, Any]]:
    # A module name of its own per test: no other test's System is imported by mistake.
    module = f"replay_net_{pytester.path.name.replace('-', '_')}"
    if not (pytester.path / f"{module}.py").exists():
        pytester.makepyfile(**{module: DIRECT.format(url=llm.base_url)})
    out = pytester.path / "out.json"
    result = pytester.runpytest_subprocess(
        "-p", "no:randomly",
        # An error row is a failed test whose traceback runs through the OpenAI SDK:
        # pytest's long form parses each frame's (large) module, about 0.4 s a row;
        # the checks here read the rows, the summary and the JSON, not tracebacks.
        "--tb=native",
        "--ctxbench-dataset=qa.jsonl",
        *(f"--ctxbench-system={module}:{s}" for s in ((system,) if isinstance(system, str) else system)),
        f"--ctxbench-json={out}",
        *args,
        timeout=300,
    )
    return result, json.loads(out.read_text())


def _flat(result: pytest.RunResult) -> str:
    return " ".join(result.stdout.str().split())


def _assert_refused(
    result: pytest.RunResult, doc: dict[str, Any], port: int, count: int = N, systems: tuple[str, ...] = ()
) -> None:
    """Every row (``N`` per System) an error naming the address and the fix; the
    summary counts ``count`` refused connections in ``N`` x systems examples."""
    where = f"127.0.0.1:{port}"
    rows = doc["rows"]
    examples = N * max(1, len(systems))
    assert len(rows) == examples
    if systems:
        assert sorted(row["system"] for row in rows) == sorted(s for s in systems for _ in range(N))
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
    said = f"{count} connection(s) refused in replay mode ({examples} example(s) errored; nothing was sent): {where}"
    assert flat.count(said) == 1, result.stdout.str()


# One run per distinct way a System's connection reaches the watch (netguard.py),
# several Systems to a run (each System's N rows are checked):
# - serial: ``direct`` connects in the call's own context (the main thread);
#   ``swallow`` catches the refusal and answers anyway (engine._bypassed still makes
#   the row an error); ``pooled`` connects from a thread it started itself, with no
#   context, while one call is watched (netguard._owner: that call's). Run once
#   first: in ``once`` mode the calls are sent (and not cached). Its replay run allows
#   another port of the same host: that does not let this one through.
# - concurrency: ``direct`` in the runner's threads (the context copied into them),
#   ``async_direct`` in asyncio tasks, ``pooled`` from its own thread while several
#   calls are watched (no owner known: counted for the run, record_unattributed).
# - xdist2: the refusals counted on the workers reach the controller's summary and
#   JSON (in the rows' metadata), for a sync and an async client.
# The cases this replaced (a run per System and mode: sync, swallowed and own-thread
# serial; sync, async and own-thread under concurrency; sync and async under -n 2)
# reached the same code as these, one process each.
@pytest.mark.parametrize(
    "systems, args",
    [
        (("direct", "swallow", "pooled"), []),
        (("direct", "async_direct", "pooled"), ["--ctxbench-concurrency=4"]),
        (("direct", "async_direct"), ["-n", "2"]),
    ],
    ids=["serial", "concurrency", "xdist2"],
)
def test_replay_refuses_a_systems_own_client(
    project: pytest.Pytester, systems: tuple[str, ...], args: list[str]
) -> None:
    count = N * len(systems)
    with FakeLLM(default="Paris") as llm:
        port = llm.port
        sent = 0
        if not args:  # once (each System once): its calls are sent, and not cached
            first, _ = _run(project, llm, systems)
            sent = len(llm.requests)
            assert sent == count, first.stdout.str()
            # another port of the same host is allowed, not this one
            args = [f"--ctxbench-replay-allow=127.0.0.1:{port + 1 if port < 65535 else 1}"]
        replay, doc = _run(project, llm, systems, "--ctxbench-cache=replay", *args)
        assert len(llm.requests) == sent, "replay sent requests: " + replay.stdout.str()
    assert replay.ret == 1, replay.stdout.str()
    _assert_refused(replay, doc, port, count, systems)


def test_replay_allow_lets_the_address_through(project: pytest.Pytester) -> None:
    with FakeLLM(default="Paris") as llm:
        port = llm.port
        result, doc = _run(project, llm, "direct", "--ctxbench-cache=replay", f"--ctxbench-replay-allow=127.0.0.1:{port}")
        assert len(llm.requests) == N
        # (another port of the same host is not allowed: the serial case of
        # test_replay_refuses_a_systems_own_client)
        # the ini twin, by name (localhost resolves to 127.0.0.1)
        project.makeini(f"[pytest]\npythonpath = .\nctxbench_replay_allow =\n    localhost:{llm.port}\n")
        ini, doc3 = _run(project, llm, "direct", "--ctxbench-cache=replay")
        assert len(llm.requests) == 2 * N
    assert result.ret == 0, result.stdout.str()
    assert all(r["error"] is None for r in doc["rows"])
    assert not doc.get("llm")  # nothing measured, nothing refused
    assert "refused in replay mode" not in result.stdout.str()
    assert ini.ret == 0, ini.stdout.str()
    assert all(r["error"] is None for r in doc3["rows"])


def test_once_says_once_how_many_connections_bypassed_the_cache_and_ours_are_not_counted(
    project: pytest.Pytester,
) -> None:
    # ``fresh`` (a client of its own per call) beside ``ours`` (built with
    # http_client()) in one run: only fresh's N connections are counted.
    with FakeLLM(default="Paris") as llm:
        port = llm.port
        result, doc = _run(project, llm, ("fresh", "ours"))
        assert len(llm.requests) == 2 * N
        xdist, doc2 = _run(project, llm, "fresh", "-n", "2", "--ctxbench-cache=refresh")
        assert len(llm.requests) == 3 * N
        # ours replayed under -n 2 from the first run's entries: nothing sent
        replay, doc3 = _run(project, llm, "ours", "--ctxbench-cache=replay", "-n", "2")
        assert len(llm.requests) == 3 * N
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
    # ours: neither counted (above: N, fresh's) nor refused
    ours = [r for r in doc["rows"] if r["system"] == "ours"]
    assert len(ours) == N
    assert all("bypassed_connections" not in r["metadata"] for r in ours)
    assert doc["llm"]["cache"]["refused_connections"] == 0
    assert "refused in replay mode" not in result.stdout.str()
    assert replay.ret == 0, replay.stdout.str()
    assert "bypassed the LLM cache" not in replay.stdout.str()
    assert "refused in replay mode" not in replay.stdout.str()
    assert all(r["error"] is None for r in doc3["rows"])
    assert doc3["llm"]["cache"]["bypassed_connections"] == 0
    assert doc3["llm"]["cache"]["refused_connections"] == 0
    assert doc3["llm"]["cache"]["hits"] == N


@pytest.mark.parametrize(
    "value, message",
    [
        ("127.0.0.1", "--ctxbench-replay-allow: expected HOST:PORT*given: '127.0.0.1'"),
        ("::1:80", "--ctxbench-replay-allow: expected HOST:PORT*given: '::1:80'"),
    ],
)
def test_a_bad_allow_address_is_one_usage_error(project: pytest.Pytester, value: str, message: str) -> None:
    # Every bad value takes the same way to the usage error (parse_address raises,
    # the option names it): two runs, no port and an IPv6 address without brackets;
    # the other bad values are parse_address's (test_allow_by_name_and_the_parse_of_addresses).
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
