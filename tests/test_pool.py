"""The lean connection choice (pytest_context_bench/_pool.py) against real loopback
servers: requests answered and matched, connections reused, bounded, closed; the
same outcomes as httpcore's own pool where both define them."""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import httpcore
import httpx
import pytest

from pytest_context_bench._pool import lean_pool
from pytest_context_bench.llm import LLMClient
from pytest_context_bench.testing import FakeLLM, RecordedRequest, Reply
from pytest_context_bench.transports import async_http_client, http_client


def echo(request: RecordedRequest) -> Reply:
    return Reply(text=str(request.messages[-1]["content"]), delay=0.05)


@pytest.fixture
def llm() -> Iterator[FakeLLM]:
    with FakeLLM(handler=echo) as server:
        yield server


def body(i: int) -> dict[str, Any]:
    return {"model": "m", "messages": [{"role": "user", "content": f"q{i}"}]}


def text_of(response: httpx.Response) -> str:
    return str(response.json()["choices"][0]["message"]["content"])


def async_client(lean: bool, **limits: Any) -> httpx.AsyncClient:
    transport = httpx.AsyncHTTPTransport(limits=httpx.Limits(**limits))
    if lean:
        lean_pool(transport)
    return httpx.AsyncClient(transport=transport, timeout=10)


def pool_of(client: httpx.AsyncClient | httpx.Client) -> Any:
    transport: Any = client._transport
    while not hasattr(transport, "_pool"):
        transport = transport.transport  # our cache transport wraps the real one
    return transport._pool


def test_the_built_in_clients_use_the_lean_pool(llm: FakeLLM) -> None:
    client = LLMClient(llm.base_url, api_key="k")

    async def both() -> tuple[str, str]:
        pool = pool_of(client._async_client())
        await client.aclose()
        return type(pool).__name__, type(pool_of(client._client())).__name__

    assert asyncio.run(both()) == ("LeanAsyncConnectionPool", "LeanConnectionPool")
    client.close()
    assert type(pool_of(http_client())).__name__ == "LeanConnectionPool"
    assert type(pool_of(async_http_client())).__name__ == "LeanAsyncConnectionPool"


def test_other_transports_are_left_alone() -> None:
    mock = httpx.MockTransport(lambda request: httpx.Response(200))
    assert lean_pool(mock) is mock
    # Through an HTTP proxy, httpx's pool is httpcore.HTTPProxy, a subclass: kept.
    proxied = httpx.HTTPTransport(proxy="http://127.0.0.1:9")
    assert lean_pool(proxied)._pool.__class__ is httpcore.HTTPProxy


@pytest.mark.parametrize("lean", [False, True], ids=["httpcore", "lean"])
def test_waves_of_concurrent_requests_reuse_the_connections(
    llm: FakeLLM, lean: bool
) -> None:
    """Three waves of 24 requests in flight: every reply matches its request, and
    the later waves reuse the first wave's connections (none is opened anew)."""

    async def waves() -> tuple[list[str], int]:
        async with async_client(lean, max_connections=None, max_keepalive_connections=24) as c:
            answers: list[str] = []
            for wave in range(3):
                replies = await asyncio.gather(
                    *(c.post(llm.base_url + "/v1/chat/completions", json=body(24 * wave + i))
                      for i in range(24))
                )
                answers += [text_of(r) for r in replies]
            idle = sum(1 for conn in pool_of(c).connections if conn.is_idle())
            return answers, idle

    answers, idle = asyncio.run(waves())
    assert answers == [f"q{i}" for i in range(72)]
    assert len(llm.requests) == 72
    assert len({r.client_port for r in llm.requests}) == 24
    assert idle == 24


@pytest.mark.parametrize("lean", [False, True], ids=["httpcore", "lean"])
def test_requests_beyond_max_connections_wait_for_one(llm: FakeLLM, lean: bool) -> None:
    async def crowd() -> list[str]:
        async with async_client(lean, max_connections=2, max_keepalive_connections=2) as c:
            replies = await asyncio.gather(
                *(c.post(llm.base_url + "/chat/completions", json=body(i)) for i in range(8))
            )
            return [text_of(r) for r in replies]

    assert asyncio.run(crowd()) == [f"q{i}" for i in range(8)]
    assert llm.max_in_flight <= 2
    assert len({r.client_port for r in llm.requests}) == 2


def test_idle_connections_beyond_the_keep_alive_are_closed(llm: FakeLLM) -> None:
    """6 in flight, 2 kept alive: once they are answered, 2 idle connections stay
    and the other 4 are closed (the next wave opens 4 again: 10 ports in all)."""

    async def twice() -> tuple[int, list[Any], list[str]]:
        async with async_client(True, max_connections=None, max_keepalive_connections=2) as c:
            pool = pool_of(c)
            first = await asyncio.gather(
                *(c.post(llm.base_url + "/chat/completions", json=body(i)) for i in range(6))
            )
            opened = list(pool.connections)
            kept = len(pool.connections)
            second = await asyncio.gather(
                *(c.post(llm.base_url + "/chat/completions", json=body(6 + i)) for i in range(6))
            )
            return kept, opened, [text_of(r) for r in [*first, *second]]

    kept, opened, answers = asyncio.run(twice())
    assert answers == [f"q{i}" for i in range(12)]
    assert kept == 2
    assert len({r.client_port for r in llm.requests}) == 10
    assert all(conn.is_closed() for conn in opened)  # closed with the client


def test_two_origins_share_one_connection_slot(llm: FakeLLM) -> None:
    """max_connections=1: a request to another host closes the idle connection to
    the first and opens its own."""
    with FakeLLM(handler=echo) as other:

        async def both() -> list[str]:
            async with async_client(True, max_connections=1) as c:
                out = []
                for i, server in enumerate((llm, other, llm)):
                    reply = await c.post(server.base_url + "/chat/completions", json=body(i))
                    out.append(text_of(reply))
                assert len(pool_of(c).connections) == 1
                return out

        assert asyncio.run(both()) == ["q0", "q1", "q2"]
        assert len(llm.requests) == 2 and len(other.requests) == 1


class ClosingServer:
    """An HTTP/1.1 server that answers each request keep-alive, then closes the
    connection ``after`` seconds later without a word (a server's keep-alive
    timeout): a client that sent on it then would get no answer."""

    def __init__(self, after: float) -> None:
        self.after = after
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.connections = 0
        self.served = 0
        self._threads: list[threading.Thread] = []
        self._accept = threading.Thread(target=self._loop, daemon=True)
        self._accept.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.sock.getsockname()[1]}/"

    def _loop(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.connections += 1
            thread = threading.Thread(target=self._serve, args=(conn,), daemon=True)
            thread.start()
            self._threads.append(thread)

    def _serve(self, conn: socket.socket) -> None:
        with conn:
            data = b""
            while b"\r\n\r\n" not in data:
                chunk = conn.recv(65536)
                if not chunk:
                    return
                data += chunk
            self.served += 1
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
            time.sleep(self.after)
            conn.shutdown(socket.SHUT_RDWR)

    def close(self) -> None:
        self.sock.close()


@pytest.fixture
def closing() -> Iterator[ClosingServer]:
    server = ClosingServer(after=0.05)
    yield server
    server.close()


@pytest.mark.parametrize("lean", [False, True], ids=["httpcore", "lean"])
def test_a_connection_the_server_closed_is_not_reused_sync(
    closing: ClosingServer, lean: bool
) -> None:
    transport = httpx.HTTPTransport()  # retries=0: a dead connection would fail
    if lean:
        lean_pool(transport)
    with httpx.Client(transport=transport, timeout=5) as c:
        assert c.get(closing.url).text == "ok"
        time.sleep(0.3)  # the server has closed it, the pool still holds it idle
        assert c.get(closing.url).text == "ok"
    assert closing.connections == 2 and closing.served == 2


@pytest.mark.parametrize("lean", [False, True], ids=["httpcore", "lean"])
def test_a_connection_the_server_closed_is_not_reused_async(
    closing: ClosingServer, lean: bool
) -> None:
    async def twice() -> list[str]:
        async with async_client(lean) as c:
            first = (await c.get(closing.url)).text
            await asyncio.sleep(0.3)
            return [first, (await c.get(closing.url)).text]

    assert asyncio.run(twice()) == ["ok", "ok"]
    assert closing.connections == 2 and closing.served == 2


def test_closing_the_client_closes_every_connection(llm: FakeLLM) -> None:
    async def run() -> list[Any]:
        c = async_client(True, max_connections=None, max_keepalive_connections=8)
        await asyncio.gather(
            *(c.post(llm.base_url + "/chat/completions", json=body(i)) for i in range(8))
        )
        opened = list(pool_of(c).connections)
        await c.aclose()
        assert pool_of(c).connections == []
        return opened

    opened = asyncio.run(run())
    assert len(opened) == 8 and all(conn.is_closed() for conn in opened)


def test_the_proxy_at_64_in_flight_keeps_its_connections(llm: FakeLLM) -> None:
    """The built-in client under a budget of 64 (its keep-alive follows the
    budget): two waves of 64 calls open 64 connections, not 128, and every
    answer is its own question's."""
    from pytest_context_bench import concurrency

    budget = concurrency.Budget(64)
    concurrency.install(budget, None, 64)
    try:
        client = LLMClient(llm.base_url, api_key="k", timeout=10)

        async def waves() -> list[str]:
            out: list[str] = []
            for wave in range(2):
                results = await asyncio.gather(
                    *(client.achat([{"role": "user", "content": f"q{64 * wave + i}"}], "m")
                      for i in range(64))
                )
                out += [r.text for r in results]
            await client.aclose()
            return out

        assert asyncio.run(waves()) == [f"q{i}" for i in range(128)]
    finally:
        concurrency.uninstall()
    assert len({r.client_port for r in llm.requests}) == 64
    assert httpcore.__version__.startswith("1.")
