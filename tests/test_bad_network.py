"""Bad network (issue 38): streams cut short, giant stream events, an endpoint that
refuses everything, and what the fake endpoint and `ctxbench cache info` print.
Real HTTP on 127.0.0.1 throughout (FakeLLM, with injected faults)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from pytest_context_bench.cache import LLMCache
from pytest_context_bench.calls import CallScope, call_scope
from pytest_context_bench.testing import FakeLLM, Reply
from pytest_context_bench.transports import http_client

openai = pytest.importorskip("openai")

QUESTION = [{"role": "user", "content": "What is the capital of France?"}]
ANSWER = "The capital of France is Paris."
USAGE = {"prompt_tokens": 14, "completion_tokens": 7, "total_tokens": 21}
WITH_USAGE = {"stream_options": {"include_usage": True}}


def _scope() -> CallScope:
    return CallScope("s", "d", "ex-1", trial=1)


def _sdk(llm: FakeLLM, cache: LLMCache) -> Any:
    return openai.OpenAI(
        base_url=llm.url_v1, api_key="k", max_retries=0, http_client=http_client(cache)
    )


def _read(client: Any) -> str:
    stream = client.chat.completions.create(
        model="m", messages=QUESTION, stream=True, **WITH_USAGE
    )
    return "".join(c.choices[0].delta.content or "" for c in stream if c.choices)


# -- a stream cut short: one event, then the connection closed cleanly ------------------


def test_an_openai_stream_cut_short_is_an_error_and_never_cached(
    tmp_path: Path,
) -> None:
    cache = LLMCache.in_dir(tmp_path, "once")
    cut = Reply(text=ANSWER, usage=USAGE, stream_cut=1, cut_cleanly=True)
    with FakeLLM([cut, cut], default=Reply(text=ANSWER, usage=USAGE)) as llm:
        client = _sdk(llm, cache)
        scope = _scope()
        # the SDK says "Connection error."; the cause (and the row, below) says why
        with call_scope(scope), pytest.raises(openai.APIConnectionError) as raised:
            _read(client)
        assert isinstance(raised.value.__cause__, httpx.RemoteProtocolError)
        said = str(raised.value.__cause__)
        assert f"{llm.url_v1}/chat/completions" in said
        assert "no finish_reason and no `data: [DONE]`" in said
        assert "after 1 event" in said and "not stored in the LLM cache" in said
        # the next attempt sends it again (cut again), then the whole one is stored
        with call_scope(_scope()), pytest.raises(openai.APIConnectionError):
            _read(client)
        with call_scope(_scope()):
            assert _read(client) == ANSWER
        with call_scope(_scope()):
            assert _read(client) == ANSWER  # now from the cache
        assert len(llm.requests) == 3
    assert cache.stats.stored == 1
    # it was sent (and may be paid): a call, its tokens estimated
    assert scope.usage[0]["cache"] == "miss" and scope.usage[0]["estimated"]


def test_a_stream_that_stops_after_its_finish_reason_names_only_done(
    tmp_path: Path,
) -> None:
    cache = LLMCache.in_dir(tmp_path, "once")
    words = len(ANSWER.split())
    # role chunk, the words, the finish chunk, the usage chunk: cut before [DONE]
    cut = Reply(text=ANSWER, usage=USAGE, stream_cut=words + 3, cut_cleanly=True)
    with FakeLLM([cut]) as llm:
        with call_scope(_scope()), pytest.raises(openai.APIConnectionError) as raised:
            _read(_sdk(llm, cache))
    said = str(raised.value.__cause__)
    assert "ended after 9 events with no `data: [DONE]`" in said
    assert "finish_reason" not in said
    assert cache.stats.stored == 0


def test_an_anthropic_stream_cut_short_is_an_error_and_never_cached(
    tmp_path: Path,
) -> None:
    anthropic = pytest.importorskip("anthropic")
    pytest.importorskip("httpx2")
    import httpx2

    cache = LLMCache.in_dir(tmp_path, "once")
    cut = Reply(text=ANSWER, stream_cut=1, cut_cleanly=True)
    with FakeLLM([cut], default=Reply(text=ANSWER)) as llm:
        client = anthropic.Anthropic(
            base_url=llm.base_url,
            api_key="k",
            max_retries=0,
            http_client=http_client(cache, flavor="httpx2"),
        )
        with call_scope(_scope()), pytest.raises(httpx2.RemoteProtocolError) as raised:
            with client.messages.stream(
                model="claude-test", max_tokens=50, messages=QUESTION
            ) as stream:
                "".join(stream.text_stream)
        with call_scope(_scope()), client.messages.stream(
            model="claude-test", max_tokens=50, messages=QUESTION
        ) as stream:
            assert "".join(stream.text_stream) == ANSWER
        assert len(llm.requests) == 2
        url = f"{llm.base_url}/v1/messages"
    said = str(raised.value)
    assert url in said
    assert "no stop_reason and no `message_stop` event" in said
    assert cache.stats.stored == 1


def test_an_async_stream_cut_short_is_an_error_and_never_cached(tmp_path: Path) -> None:
    import asyncio

    from pytest_context_bench.transports import async_http_client

    cache = LLMCache.in_dir(tmp_path, "once")

    async def run(llm: FakeLLM) -> str:
        client = openai.AsyncOpenAI(
            base_url=llm.url_v1, api_key="k", max_retries=0,
            http_client=async_http_client(cache),
        )
        try:
            with call_scope(_scope()):
                stream = await client.chat.completions.create(
                    model="m", messages=QUESTION, stream=True
                )
                return "".join(
                    [c.choices[0].delta.content or "" async for c in stream if c.choices]
                )
        finally:
            await client.close()

    cut = Reply(text=ANSWER, stream_cut=2, cut_cleanly=True)
    with FakeLLM([cut], default=Reply(text=ANSWER)) as llm:
        with pytest.raises(openai.APIConnectionError) as raised:
            asyncio.run(run(llm))
        assert asyncio.run(run(llm)) == ANSWER
        assert asyncio.run(run(llm)) == ANSWER  # from the cache
        assert len(llm.requests) == 2
    assert "ended after 2 events with no finish_reason" in str(raised.value.__cause__)
    assert cache.stats.stored == 1


def test_the_built_in_client_retries_a_cut_stream_then_names_it(
    tmp_path: Path,
) -> None:
    from pytest_context_bench.errors import LLMError
    from pytest_context_bench.llm import LLMClient

    cut = Reply(text=ANSWER, stream_cut=1, cut_cleanly=True)
    with FakeLLM(default=cut) as llm:
        client = LLMClient(llm.base_url, max_retries=1, retry_base_delay=0.01)
        with call_scope(_scope()), pytest.raises(LLMError) as raised:
            client.chat(QUESTION, model="m", stream=True)
        client.close()
        assert len(llm.requests) == 2
    said = str(raised.value)
    assert "2 attempts" in said and "connection dropped" in said
    assert "no finish_reason and no `data: [DONE]`" in said


def test_a_sse_stream_that_is_not_an_llm_reply_ends_with_its_body(
    tmp_path: Path,
) -> None:
    """An event stream of another kind (not asked with "stream": true, no LLM event
    in it) ends where its body ends, as before: passed on, stored."""
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
    import threading

    class Events(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers["Content-Length"]))
            body = b"event: tick\ndata: 1\n\nevent: tick\ndata: 2\n\n"
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Events)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/ticks"
        cache = LLMCache.in_dir(tmp_path, "once")
        with call_scope(_scope()), http_client(cache) as client:
            first = client.post(url, json={"from": 1}).content
            again = client.post(url, json={"from": 1})
        assert again.headers["x-ctxbench-cache"] == "hit"
        assert again.content == first
    finally:
        server.shutdown()
        server.server_close()


# -- in a pytest run: the row names the cut; the next run sends it again ---------------

SDK_SYSTEM = '''
import pytest
from openai import OpenAI


class Streamer:
    name = "streamer"

    def __init__(self, client):
        self.client = client

    def process(self, example):
        stream = self.client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": example["question"]}],
            stream=True, stream_options={"include_usage": True},
        )
        text = "".join(c.choices[0].delta.content or "" for c in stream if c.choices)
        return {**example, "response": text}


@pytest.fixture(scope="session")
def ctxbench_system(ctxbench_http_client):
    return Streamer(OpenAI(base_url="{url}/v1", api_key="k", max_retries=0,
                           http_client=ctxbench_http_client))
'''


def _qa(pytester: pytest.Pytester, n: int = 3) -> None:
    rows = [
        {"id": f"q-{i}", "question": f"Capital of country {i}?", "answer": f"city {i}"}
        for i in range(1, n + 1)
    ]
    pytester.makefile(".jsonl", qa="\n".join(json.dumps(r) for r in rows) + "\n")


def test_a_cut_stream_is_the_rows_error_and_is_sent_again_next_run(
    pytester: pytest.Pytester,
) -> None:
    _qa(pytester)
    out = pytester.path / "out.json"
    cut_once = {"q-2": True}

    def answer(request: Any) -> Reply:
        n = request.messages[-1]["content"].split()[-1].rstrip("?")
        cut = cut_once.pop(f"q-{n}", False)
        return Reply(
            text=f"city {n}", usage=USAGE, stream_cut=1 if cut else None,
            cut_cleanly=cut,
        )

    with FakeLLM(handler=answer) as llm:
        pytester.makeconftest(SDK_SYSTEM.replace("{url}", llm.base_url))
        args = ["--ctxbench-dataset=qa.jsonl", f"--ctxbench-json={out}"]
        # (native tracebacks: the error row's long one would parse the SDK's modules)
        first = pytester.runpytest_subprocess(*args, "--tb=native")
        doc = json.loads(out.read_text())
        second = pytester.runpytest_subprocess(*args)
        again = json.loads(out.read_text())
        asked = [r.messages[-1]["content"] for r in llm.requests]
        url = f"{llm.base_url}/v1/chat/completions"
        endpoint = llm.base_url
    assert first.ret == 1, first.stdout.str()
    rows = {r["example_id"]: r for r in doc["rows"]}
    error = rows["q-2"]["error"]
    assert error["message"].startswith(
        f"the stream from POST {url} ended after 1 event with no finish_reason and"
        " no `data: [DONE]`: the network or a proxy cut it short"
    )
    assert error["message"].endswith(
        "(the System raised openai.APIConnectionError: Connection error.)"
    )
    assert rows["q-1"]["status"] == rows["q-3"]["status"] == "pass"
    assert doc["llm"]["endpoints"][endpoint]["cut_short"] == 1
    first.stdout.fnmatch_lines(
        [f"LLM endpoint {endpoint}: 1 stream(s) cut short (the body ended before*"]
    )
    # the next run replays q-1 and q-3 and sends q-2 again: it was never stored
    assert second.ret == 0, second.stdout.str()
    assert asked.count("Capital of country 2?") == 2 and len(asked) == 4
    assert all(r["status"] == "pass" for r in again["rows"])
    second.stdout.fnmatch_lines(["LLM cache once*: 2 hits, 1 misses, 1 calls sent*"])


# -- an endpoint that refuses everything: the llm section and the push-back line -------


# 503s serial (the push-back line without a call budget); 429s under -n 2 with a
# budget (the workers' endpoint figures and budget summed by the controller, the
# line naming the budget). A case of 429s under -n 2 without a budget went the same
# ways as these two.
@pytest.mark.parametrize(
    "status, extra",
    [(503, []), (429, ["-n", "2", "--ctxbench-concurrency=4"])],
    ids=["503", "429-n2-budget"],
)
def test_an_endpoint_refusing_everything_is_in_the_llm_section_and_the_summary(
    pytester: pytest.Pytester, status: int, extra: list[str]
) -> None:
    _qa(pytester, 4)
    out = pytester.path / "out.json"
    with FakeLLM(default=Reply(status=status, text="go away", retry_after="0")) as llm:
        result = pytester.runpytest_subprocess(
            "--ctxbench-dataset=qa.jsonl",
            f"--ctxbench-proxy={llm.base_url}/v1",
            "--ctxbench-proxy-name=local",
            "--ctxbench-model=m",
            "--ctxbench-proxy-retries=1",
            f"--ctxbench-json={out}",
            *extra,
        )
        endpoint = llm.base_url
        sent = len(llm.requests)
    assert result.ret == 1, result.stdout.str()
    assert sent == 8  # each example tried twice
    doc = json.loads(out.read_text())
    assert all(f"HTTP {status}" in r["error"]["message"] for r in doc["rows"])
    llm_doc = doc["llm"]
    figures = {k: 0 for k in ("answered", "other_status", "no_answer", "cut_short")}
    key = "refused_429" if status == 429 else "unavailable_503"
    other = "unavailable_503" if status == 429 else "refused_429"
    assert llm_doc["endpoints"] == {
        endpoint: {**figures, "requests": 8, key: 8, other: 0}
    }
    assert llm_doc["calls_sent"] == 0
    counts = "8 × 429, 0 × 503" if status == 429 else "0 × 429, 8 × 503"
    if "--ctxbench-concurrency=4" in extra:
        assert llm_doc["budget"][endpoint]["requests"] == 8
        line = f"LLM endpoint {endpoint} pushed back: {counts} in 8 requests; the call budget*"
    else:
        line = f"LLM endpoint {endpoint} pushed back: {counts} in 8 requests (0 answered)"
    result.stdout.fnmatch_lines(["LLM cache once*: 0 hits, 0 misses, 0 calls sent*", line])
    import jsonschema

    from pytest_context_bench.report import load_schema

    jsonschema.validate(doc, load_schema())


# -- what the cache command and the fake endpoint print is data, shown inert ------------


def test_cache_info_shows_a_stored_url_and_version_escaped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import time

    from pytest_context_bench.cache import CACHE_FILE, CachedResponse, CacheStore
    from pytest_context_bench.cli import main as ctxbench

    store = CacheStore(tmp_path / CACHE_FILE)
    url = "http://h/v1/\x1b[2J\x1b[1;32m=== all passed ===\x1b[0m"
    entry = CachedResponse(200, "application/json", b"{}", time.time(), "9\u202e1.0")
    store.put("k", "POST\r", url, entry)
    store.close()
    assert ctxbench(["cache", "info", "--dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\u202e" not in out and "\r" not in out
    assert "POST\\x0d http://h/v1/\\x1b[2J\\x1b[1;32m=== all passed ===\\x1b[0m" in out
    assert "written by pytest-context-bench 9\\u202e1.0: 1" in out
    # --json escapes as JSON does
    assert ctxbench(["cache", "info", "--dir", str(tmp_path), "--json"]) == 0
    assert "\x1b" not in capsys.readouterr().out


def test_the_fake_endpoint_escapes_model_names_in_its_log() -> None:
    lines: list[str] = []
    with FakeLLM(log=lines.append) as llm:
        body = {"model": "m\x1b[2J\u202e", "messages": QUESTION}
        assert httpx.post(f"{llm.url_v1}/chat/completions", json=body).status_code == 200
    assert lines == ["POST /v1/chat/completions model=m\\x1b[2J\\u202e -> 200"]


def test_the_fake_endpoint_answers_bad_bodies_413_and_400_with_one_log_line() -> None:
    lines: list[str] = []
    deep = b"[" * 200_000 + b"]" * 200_000
    with FakeLLM(log=lines.append, max_body=1_000_000) as llm:
        url = f"{llm.url_v1}/chat/completions"
        with httpx.Client(timeout=60) as client:
            big = client.post(url, content=b"x" * 1_500_000)
            nested = client.post(url, content=deep)
            garbled = client.post(url, content=b"\xff{not json")
            fine = client.post(url, json={"model": "m", "messages": QUESTION})
        assert llm.requests and len(llm.requests) == 1  # the bad ones took no reply
    assert big.status_code == 413
    assert "over the limit of 1,000,000 bytes" in big.json()["error"]["message"]
    assert nested.status_code == 400 and garbled.status_code == 400
    assert "nested too deeply" in nested.json()["error"]["message"]
    assert fine.status_code == 200
    assert lines == [
        "POST /v1/chat/completions -> 413 (the request body of 1,500,000 bytes is over"
        " the limit of 1,000,000 bytes)",
        "POST /v1/chat/completions -> 400 (the request body is nested too deeply to"
        " parse)",
        "POST /v1/chat/completions -> 400 (the request body is not JSON)",
        "POST /v1/chat/completions model=m -> 200",
    ]


# -- a giant stream event: the usage estimate is bounded, memory stays linear ----------


def test_the_usage_estimate_tokenizes_a_bounded_part_of_a_long_text() -> None:
    from pytest_context_bench.tokens import count_tokens, get_tokenizer, set_tokenizer
    from pytest_context_bench.transports import ESTIMATE_CHARS, estimate_tokens

    text = "lorem ipsum dolor sit amet, consectetur adipiscing elit. " * 50_000
    exact = count_tokens(text)
    real = get_tokenizer()
    seen: list[int] = []

    def counting(piece: str) -> int:
        seen.append(len(piece))
        return real(piece)

    set_tokenizer(counting)
    try:
        estimate = estimate_tokens(text)
        short = estimate_tokens(text[:1000])
    finally:
        set_tokenizer(None)
    assert sum(seen) == ESTIMATE_CHARS + 1000 < len(text) / 10
    assert abs(estimate - exact) <= exact * 0.01  # uniform text: within 1%
    assert short == count_tokens(text[:1000])  # short texts are counted exactly


def test_a_giant_stream_event_costs_memory_linear_in_its_size(tmp_path: Path) -> None:
    """One 8 MB event without a usage chunk through http_client(): the tokenizer
    reads a bounded part of it, and the Python memory at the peak of the request
    (recorded, estimated, stored) stays within a few times the event."""
    import threading
    import tracemalloc
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    from pytest_context_bench.tokens import count_tokens, set_tokenizer
    from pytest_context_bench.transports import ESTIMATE_CHARS

    text = "lorem ipsum dolor sit amet " * 300_000
    chunk = {"object": "chat.completion.chunk", "model": "m",
             "choices": [{"index": 0, "delta": {"content": text}, "finish_reason": None}]}
    end = {"object": "chat.completion.chunk", "model": "m",
           "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}
    body = b"".join(
        b"data: " + json.dumps(e).encode() + b"\n\n" for e in (chunk, end)
    ) + b"data: [DONE]\n\n"
    del chunk

    class Giant(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers["Content-Length"]))
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)  # the prebuilt bytes: nothing allocated here

    seen: list[int] = []

    def counting(piece: str) -> int:
        seen.append(len(piece))
        return len(piece) // 4

    count_tokens("warm up")
    server = ThreadingHTTPServer(("127.0.0.1", 0), Giant)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/v1/chat/completions"
    request = {"model": "m", "messages": QUESTION, "stream": True}
    cache = LLMCache.in_dir(tmp_path, "once")
    scope = _scope()
    set_tokenizer(counting)
    try:
        with http_client(cache, timeout=120) as client:
            tracemalloc.start()
            try:
                with call_scope(scope), client.stream("POST", url, json=request) as r:
                    got = sum(len(c) for c in r.iter_bytes())
                _, peak = tracemalloc.get_traced_memory()
            finally:
                tracemalloc.stop()
    finally:
        set_tokenizer(None)
        server.shutdown()
        server.server_close()
    assert got == len(body)
    assert cache.stats.stored == 1 and scope.usage[0]["estimated"]
    assert sum(seen) <= ESTIMATE_CHARS + 100  # not the 8.1 million characters
    assert scope.usage[0]["completion_tokens"] == pytest.approx(len(text) / 4, rel=0.01)
    assert peak < 5 * len(body), f"peak {peak / len(body):.1f}x the event"
