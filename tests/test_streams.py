"""Streamed replies (SSE) through the cache and the meter, the httpx2 flavor of
http_client() with the real anthropic and openai SDKs, and the fake endpoint's
command line (issue 28). Real HTTP on 127.0.0.1 throughout."""

from __future__ import annotations

import asyncio
import json
import re
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest
from helpers import sigint_default

from pytest_context_bench.cache import CacheMiss, LLMCache
from pytest_context_bench.calls import CallScope, call_scope
from pytest_context_bench.pricing import Price, parse_price, usage_summary
from pytest_context_bench.testing import FakeLLM, Reply
from pytest_context_bench.tokens import count_tokens
from pytest_context_bench.transports import (
    MISS_EXTENSION,
    MISS_STATUS,
    async_http_client,
    http_client,
    sse_events,
    usage_of,
)

openai = pytest.importorskip("openai")

QUESTION = [{"role": "user", "content": "What is the capital of France?"}]
ANSWER = "The capital of France is Paris."
USAGE = {"prompt_tokens": 14, "completion_tokens": 7, "total_tokens": 21}
WITH_USAGE = {"stream_options": {"include_usage": True}}


def _plain(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Usage entries without the request's URL (its port changes per run)."""
    return [{k: v for k, v in e.items() if k != "api_url"} for e in entries]


def _scope() -> CallScope:
    return CallScope("s", "d", "ex-1", trial=1)


def _sdk(llm: FakeLLM, cache: LLMCache) -> Any:
    return openai.OpenAI(
        base_url=llm.url_v1, api_key="k", max_retries=0, http_client=http_client(cache)
    )


def _chunks(client: Any, **extra: Any) -> list[dict[str, Any]]:
    stream = client.chat.completions.create(
        model="m", messages=QUESTION, stream=True, **extra
    )
    return [chunk.model_dump() for chunk in stream]


def test_openai_sdk_stream_is_recorded_and_replayed_chunk_by_chunk(
    tmp_path: Path,
) -> None:
    with FakeLLM(default=Reply(text=ANSWER, usage=USAGE)) as llm:
        scopes = []
        runs = []
        for mode in ("once", "once", "replay"):
            cache = LLMCache.in_dir(tmp_path, mode)
            scope = _scope()
            with call_scope(scope):
                runs.append(_chunks(_sdk(llm, cache), **WITH_USAGE))
            scopes.append(scope)
        assert len(llm.requests) == 1  # recorded once; replayed twice
    first = runs[0]
    # role chunk, one per word, the finish chunk, the usage chunk
    assert len(first) == 1 + len(ANSWER.split()) + 2
    assert "".join(c["choices"][0]["delta"]["content"] or "" for c in first[:-1]) == ANSWER
    assert runs[1] == first and runs[2] == first  # same chunks, same order
    counts = {"prompt_tokens": 14, "completion_tokens": 7, "cached_tokens": 0}
    assert _plain(scopes[0].usage) == [{"cache": "miss", "model": "m", **counts}]
    assert _plain(scopes[2].usage) == [{"cache": "hit", "model": "m", **counts}]
    # the row's numbers: a call sent, then a cache hit counting the same tokens
    assert usage_summary(scopes[0].usage, {})["calls"] == 1
    assert usage_summary(scopes[2].usage, {})["cache_hits"] == 1


def test_a_replayed_stream_yields_each_recorded_event_as_one_chunk(
    tmp_path: Path,
) -> None:
    body = {"model": "m", "messages": QUESTION, "stream": True}
    with FakeLLM(default=Reply(text=ANSWER)) as llm:
        url = f"{llm.url_v1}/chat/completions"
        with http_client(LLMCache.in_dir(tmp_path)) as client:
            with client.stream("POST", url, json=body) as live:
                recorded = b"".join(live.iter_raw())
            with client.stream("POST", url, json=body) as again:
                assert again.headers["x-ctxbench-cache"] == "hit"
                chunks = list(again.iter_raw())
        assert len(llm.requests) == 1
    assert b"".join(chunks) == recorded
    assert len(chunks) == len(sse_events(recorded)) == 1 + len(ANSWER.split()) + 2
    assert all(c.endswith(b"\n\n") for c in chunks)


def test_async_sdk_stream_without_usage_is_counted_with_the_tokenizer(
    tmp_path: Path,
) -> None:
    async def run(llm: FakeLLM, mode: str) -> tuple[list[Any], CallScope]:
        client = openai.AsyncOpenAI(
            base_url=llm.url_v1,
            api_key="k",
            max_retries=0,
            http_client=async_http_client(LLMCache.in_dir(tmp_path, mode)),
        )
        scope = _scope()
        with call_scope(scope):
            stream = await client.chat.completions.create(
                model="m", messages=QUESTION, stream=True
            )
            chunks = [c.model_dump() async for c in stream]
        await client.close()
        return chunks, scope

    with FakeLLM(default=Reply(text=ANSWER)) as llm:
        recorded, first = asyncio.run(run(llm, "once"))
        replayed, second = asyncio.run(run(llm, "replay"))
        assert len(llm.requests) == 1
    assert replayed == recorded
    estimated = {
        "model": "m",
        "prompt_tokens": count_tokens(QUESTION[0]["content"]),
        "completion_tokens": count_tokens(ANSWER),
        "cached_tokens": 0,
        "estimated": True,
    }
    assert _plain(first.usage) == [{"cache": "miss", **estimated}]
    assert _plain(second.usage) == [{"cache": "hit", **estimated}]
    assert usage_summary(first.usage, {})["estimated"] == 1


def test_strict_replay_sends_no_stream_and_no_unkeyable_request(tmp_path: Path) -> None:
    with FakeLLM(default=Reply(text=ANSWER)) as llm:
        cache = LLMCache.in_dir(tmp_path, "replay")
        scope = _scope()
        # (how the SDK reports it is the SDK's; the row names the miss, below)
        with call_scope(scope), pytest.raises(Exception):  # noqa: B017
            _chunks(_sdk(llm, cache))
        with http_client(cache) as client:
            # a replay miss is a final 404 that SDKs do not retry, holding the miss
            answer = client.post(f"{llm.url_v1}/chat/completions", content=b"not json")
        assert answer.status_code == MISS_STATUS
        assert answer.headers["x-should-retry"] == "false"
        miss = answer.extensions[MISS_EXTENSION]
        assert isinstance(miss, CacheMiss)
        assert re.search("body that is not JSON.*nothing was sent", str(miss))
        assert llm.requests == []
    assert scope.usage[0]["cache"] == "miss"
    assert "nothing was sent" in scope.usage[0]["error"]



def test_a_stream_recorded_for_another_host_is_named_on_a_replay_miss(
    tmp_path: Path,
) -> None:
    """A stored stream keeps the key of the same request at any host, as a JSON
    reply does: replayed against localhost instead of 127.0.0.1, the miss names
    the URL it was recorded for."""
    with FakeLLM(default=Reply(text=ANSWER, usage=USAGE)) as llm:
        with call_scope(_scope()):
            _chunks(_sdk(llm, LLMCache.in_dir(tmp_path, "once")), **WITH_USAGE)
        port = llm.url_v1.split(":")[2].split("/")[0]
        body = {"model": "m", "messages": QUESTION, "stream": True, **WITH_USAGE}
        replay = LLMCache.in_dir(tmp_path, "replay")
        with call_scope(_scope()), http_client(replay) as client:
            missed = client.post(f"http://localhost:{port}/v1/chat/completions", json=body)
        assert len(llm.requests) == 1
        recorded = f"{llm.url_v1}/chat/completions"
    assert missed.status_code == MISS_STATUS
    assert (
        f"recorded for another host: {recorded}; only the host differs"
        in missed.json()["error"]["message"]
    )

def test_an_abandoned_or_broken_stream_is_not_stored(tmp_path: Path) -> None:
    cache = LLMCache.in_dir(tmp_path, "once")
    with FakeLLM(default=Reply(text=ANSWER, usage=USAGE)) as llm:
        client = _sdk(llm, cache)
        scope = _scope()
        with call_scope(scope):
            stream = client.chat.completions.create(
                model="m", messages=QUESTION, stream=True, **WITH_USAGE
            )
            first = next(iter(stream))
            stream.close()  # the client stops after one chunk
        assert first.choices[0].delta.role == "assistant"
        llm.push(Reply(text=ANSWER, stream_cut=3))
        with call_scope(scope), pytest.raises(openai.APIConnectionError):
            _chunks(client, temperature=1)
        # both are sent again: nothing was stored
        _chunks(client, **WITH_USAGE)
        _chunks(client, temperature=1)
        assert len(llm.requests) == 4
    assert cache.stats.stored == 2
    # the abandoned one was metered (sent, so paid), its tokens estimated
    assert scope.usage[0]["cache"] == "miss" and scope.usage[0]["estimated"]
    assert scope.usage[0]["prompt_tokens"] == count_tokens(QUESTION[0]["content"])


def test_proxy_stream_through_llmclient_is_one_completion_cached(
    tmp_path: Path,
) -> None:
    from pytest_context_bench.cache import set_active_cache
    from pytest_context_bench.systems import OpenAIProxy

    example = {"id": "1", "question": "Capital of France?", "context": "France."}
    with FakeLLM(default=Reply(text=ANSWER, usage=USAGE)) as llm:
        proxy = OpenAIProxy(
            llm.base_url, model="m", extra_body={"stream": True, **WITH_USAGE}
        )
        scopes = []
        try:
            for mode in ("once", "replay"):
                set_active_cache(LLMCache.in_dir(tmp_path, mode))
                scope = _scope()
                with call_scope(scope):
                    assert proxy.process(example)["response"] == ANSWER
                scopes.append(scope)
        finally:
            set_active_cache(None)
        assert len(llm.requests) == 1 and llm.requests[0].json["stream"] is True
    assert [u["cache"] for u in (scopes[0].usage + scopes[1].usage)] == ["miss", "hit"]
    assert scopes[1].usage[0]["completion_tokens"] == 7


# -- httpx2: the anthropic and openai SDKs that build on it -----------------------------

ANTHROPIC_USAGE = {
    "input_tokens": 12,
    "output_tokens": 7,
    "cache_read_input_tokens": 100,
    "cache_creation_input_tokens": 40,
}
ANTHROPIC_COUNTS = {
    "model": "claude-test",
    "prompt_tokens": 152,
    "completion_tokens": 7,
    "cached_tokens": 100,
    "cache_write_tokens": 40,
}


def test_anthropic_sdk_through_the_httpx2_flavor_is_cached_and_metered(
    tmp_path: Path,
) -> None:
    anthropic = pytest.importorskip("anthropic")
    httpx2 = pytest.importorskip("httpx2")
    # what the issue found: the SDK refuses an httpx client
    with pytest.raises(TypeError, match="httpx2"):
        anthropic.Anthropic(api_key="k", http_client=http_client())

    def ask(llm: FakeLLM, mode: str) -> tuple[list[str], CallScope]:
        transport = http_client(LLMCache.in_dir(tmp_path, mode), flavor="httpx2")
        assert isinstance(transport, httpx2.Client)
        client = anthropic.Anthropic(
            base_url=llm.base_url, api_key="k", max_retries=0, http_client=transport
        )
        scope = _scope()
        with call_scope(scope):
            whole = client.messages.create(
                model="claude-test", max_tokens=64, messages=QUESTION
            )
            with client.messages.stream(
                model="claude-test", max_tokens=64, messages=QUESTION
            ) as stream:
                pieces = list(stream.text_stream)
        assert whole.content[0].text == ANSWER
        return pieces, scope

    with FakeLLM(default=Reply(text=ANSWER, usage=ANTHROPIC_USAGE)) as llm:
        recorded, first = ask(llm, "once")
        replayed, second = ask(llm, "replay")
        assert [r.path for r in llm.requests] == ["/v1/messages"] * 2
    assert "".join(recorded) == ANSWER and replayed == recorded
    assert _plain(first.usage) == [{"cache": "miss", **ANTHROPIC_COUNTS}] * 2
    assert _plain(second.usage) == [{"cache": "hit", **ANTHROPIC_COUNTS}] * 2
    # priced: 12 fresh prompt tokens at IN, 100 read at CACHED, 40 written at WRITE
    prices = dict([parse_price("claude-test=3/15/0.30/3.75")])
    summary = usage_summary(first.usage[:1], prices)
    assert summary["cost_usd"] == pytest.approx(
        (12 * 3 + 100 * 0.30 + 40 * 3.75 + 7 * 15) / 1e6
    )
    assert summary["cache_write_tokens"] == 40


def test_async_anthropic_and_openai_3_streams_through_httpx2(tmp_path: Path) -> None:
    anthropic = pytest.importorskip("anthropic")
    pytest.importorskip("httpx2")

    async def run(llm: FakeLLM, mode: str) -> tuple[list[Any], list[Any], CallScope]:
        cache = LLMCache.in_dir(tmp_path, mode)
        claude = anthropic.AsyncAnthropic(
            base_url=llm.base_url,
            api_key="k",
            max_retries=0,
            http_client=async_http_client(cache, flavor="httpx2"),
        )
        gpt = openai.AsyncOpenAI(
            base_url=llm.url_v1,
            api_key="k",
            max_retries=0,
            http_client=async_http_client(cache, flavor="httpx2"),
        )
        scope = _scope()
        with call_scope(scope):
            events = await claude.messages.create(
                model="claude-test", max_tokens=64, messages=QUESTION, stream=True
            )
            got = [e.model_dump() async for e in events]
            chunks = await gpt.chat.completions.create(
                model="m", messages=QUESTION, stream=True, **WITH_USAGE
            )
            more = [c.model_dump() async for c in chunks]
        return got, more, scope

    with FakeLLM(default=Reply(text=ANSWER, usage=ANTHROPIC_USAGE)) as llm:
        first = asyncio.run(run(llm, "once"))
        second = asyncio.run(run(llm, "replay"))
        assert len(llm.requests) == 2
    assert second[0] == first[0] and second[1] == first[1]
    assert [e["type"] for e in first[0]][:2] == ["message_start", "content_block_start"]
    assert _plain(first[2].usage)[0] == {"cache": "miss", **ANTHROPIC_COUNTS}
    assert [u["cache"] for u in second[2].usage] == ["hit", "hit"]


def test_flavor_is_checked_and_httpx2_only_imported_when_asked() -> None:
    with pytest.raises(ValueError, match="flavor must be one of 'httpx', 'httpx2'"):
        http_client(flavor="requests")
    code = (
        "import sys, pytest_context_bench as p, pytest_context_bench.transports as t;"
        " c = p.http_client(); assert 'httpx2' not in sys.modules, 'imported';"
        " c2 = p.http_client(flavor='httpx2'); print(type(c2).__module__)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().startswith("httpx2")


def test_anthropic_usage_shape() -> None:
    plain = usage_of({"usage": {"input_tokens": 5, "output_tokens": 2}}, "c")
    assert plain == {"model": "c", "prompt_tokens": 5, "completion_tokens": 2, "cached_tokens": 0}
    assert usage_of({"usage": ANTHROPIC_USAGE}, "claude-test") == ANTHROPIC_COUNTS
    assert Price(3, 15).cost(152, 7, 100, 40) == pytest.approx((152 * 3 + 7 * 15) / 1e6)


# -- the fake endpoint's command line ---------------------------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_fake_endpoint_command_serves_openai_and_anthropic_streams() -> None:
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "pytest_context_bench.testing", "--port", str(port),
         "--latency", "0.05", "--reply", "Paris is the capital"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
        preexec_fn=sigint_default,
    )
    try:
        assert proc.stdout is not None
        banner = proc.stdout.readline()
        assert f"http://127.0.0.1:{port}/v1" in banner, banner
        base = f"http://127.0.0.1:{port}"
        with httpx.Client(timeout=30) as client:
            body = {"model": "m", "messages": QUESTION, "stream": True, **WITH_USAGE}
            with client.stream("POST", f"{base}/v1/chat/completions", json=body) as r:
                events = sse_events(r.read())
            assert r.headers["content-type"].startswith("text/event-stream")
            assert events[-1] == ("", "[DONE]")
            assert json.loads(events[-2][1])["usage"]["completion_tokens"] == 4
            messages = {"model": "claude-test", "max_tokens": 9, "messages": QUESTION}
            reply = client.post(f"{base}/v1/messages", json=messages).json()
            assert reply["content"][0]["text"] == "Paris is the capital"
            assert reply["usage"]["output_tokens"] == 4
            streamed = client.post(f"{base}/v1/messages", json={**messages, "stream": True})
            kinds = [name for name, _ in sse_events(streamed.content)]
            assert kinds[0] == "message_start" and kinds[-1] == "message_stop"
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, err
    assert out.splitlines() == [
        "POST /v1/chat/completions model=m stream (8 events) -> 200",
        "POST /v1/messages model=claude-test -> 200",
        "POST /v1/messages model=claude-test stream (10 events) -> 200",
        "served 3 request(s)",
    ]


def test_fake_endpoint_command_refuses_a_bad_port_or_latency(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from pytest_context_bench.testing.__main__ import main

    for args, said in (
        (["--latency", "-1"], "expected a number of seconds >= 0"),
        (["--port", "70000"], "expected a port number in 0..65535"),
    ):
        with pytest.raises(SystemExit) as done:
            main(args)
        assert done.value.code == 2 and said in capsys.readouterr().err
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        assert main(["--port", str(taken.getsockname()[1])]) == 4
    assert "cannot listen on 127.0.0.1" in capsys.readouterr().err


# -- in a pytest run: rows, "calls sent", strict replay, under -n 2 ---------------------

STREAMING_SYSTEM = '''
import pytest
from openai import OpenAI


@pytest.fixture(scope="session")
def ctxbench_http_flavor():
    return "httpx2"  # the fixture's choice: an httpx2.Client


class Streamer:
    name = "streamer"

    def __init__(self, client):
        self.client = client

    def process(self, example):
        extra = {"stream_options": {"include_usage": True}} if example["id"] != "q-2" else {}
        stream = self.client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": example["question"]}],
            stream=True, **extra,
        )
        text = "".join(c.choices[0].delta.content or "" for c in stream if c.choices)
        return {**example, "response": text}


@pytest.fixture(scope="session")
def ctxbench_system(ctxbench_http_client):
    import httpx2
    assert isinstance(ctxbench_http_client, httpx2.Client)
    return Streamer(OpenAI(base_url="{url}/v1", api_key="k", max_retries=0,
                           http_client=ctxbench_http_client))
'''


def test_streamed_calls_are_rows_usage_and_calls_sent_and_replay_sends_none(
    pytester: pytest.Pytester,
) -> None:
    pytest.importorskip("httpx2")
    rows = [
        {"id": f"q-{i}", "question": f"Capital of country {i}?", "answer": f"city {i}"}
        for i in range(1, 5)
    ]
    pytester.makefile(".jsonl", qa="\n".join(json.dumps(r) for r in rows) + "\n")
    out = pytester.path / "out.json"

    def answer(request: Any) -> Reply:
        n = request.messages[-1]["content"].split()[-1].rstrip("?")
        return Reply(text=f"city {n}", usage={"prompt_tokens": 9, "completion_tokens": 2})

    with FakeLLM(handler=answer) as llm:
        pytester.makeconftest(STREAMING_SYSTEM.replace("{url}", llm.base_url))
        args = ["--ctxbench-dataset=qa.jsonl", f"--ctxbench-json={out}"]
        first = pytester.runpytest_subprocess(*args)
        assert first.ret == 0, first.stdout.str()
        first.stdout.fnmatch_lines(["LLM cache once*: 0 hits, 4 misses, 4 calls sent*"])
        recorded = json.loads(out.read_text())
        second = pytester.runpytest_subprocess(*args, "-n", "2", "--ctxbench-cache=replay")
        assert second.ret == 0, second.stdout.str()
        assert len(llm.requests) == 4 and all(r.json["stream"] for r in llm.requests)
    second.stdout.fnmatch_lines(["LLM cache replay*: 4 hits, 0 misses, 0 calls sent*"])
    replayed = json.loads(out.read_text())
    usage = {r["example_id"]: r["metadata"]["llm_usage"] for r in recorded["rows"]}
    assert usage["q-1"]["calls"] == 1 and usage["q-1"]["prompt_tokens"] == 9
    assert "estimated" not in usage["q-1"]
    # q-2 asked for no usage chunk: counted with the tokenizer, and said so
    assert usage["q-2"]["estimated"] == 1
    assert usage["q-2"]["completion_tokens"] == count_tokens("city 2")
    again = {r["example_id"]: r["metadata"]["llm_usage"] for r in replayed["rows"]}
    assert all(u["cache_hits"] == 1 and u["calls"] == 0 for u in again.values())
    assert {k: v["scores"] for k, v in _by_id(replayed).items()} == {
        k: v["scores"] for k, v in _by_id(recorded).items()
    }
    assert recorded["llm"]["calls_sent"] == 4 and replayed["llm"]["calls_sent"] == 0


def _by_id(doc: dict[str, Any]) -> dict[str, Any]:
    return {r["example_id"]: r for r in doc["rows"]}


def test_stream_usage_of_the_three_event_shapes() -> None:
    from pytest_context_bench.transports import stream_usage

    def sse(*events: tuple[str, Any]) -> bytes:
        return b"".join(
            (f"event: {n}\n" if n else "").encode() + f"data: {json.dumps(d)}\n\n".encode()
            for n, d in events
        )

    responses = sse(
        ("response.output_text.delta", {"type": "response.output_text.delta", "delta": "Pa"}),
        ("response.completed", {"type": "response.completed", "response": {
            "model": "gpt-x", "usage": {"input_tokens": 30, "output_tokens": 2,
                                        "input_tokens_details": {"cached_tokens": 10}}}}),
    )
    got, estimated = stream_usage(responses, {"input": "hi"})
    assert not estimated
    assert usage_of(got, None) == {"model": "gpt-x", "prompt_tokens": 30, "completion_tokens": 2, "cached_tokens": 10}
    anthropic = sse(
        ("message_start", {"type": "message_start", "message": {
            "model": "claude-test", "usage": {**ANTHROPIC_USAGE, "output_tokens": 1}}}),
        ("content_block_delta", {"type": "content_block_delta", "delta": {"type": "text_delta", "text": "Paris"}}),
        ("message_delta", {"type": "message_delta", "usage": {"output_tokens": 7}}),
    )
    got, estimated = stream_usage(anthropic, {})
    assert not estimated and usage_of(got, None) == ANTHROPIC_COUNTS
    # read only partly (abandoned): the completion is counted, the prompt as reported
    got, estimated = stream_usage(anthropic, {}, complete=False)
    assert estimated and got["usage"] == {"prompt_tokens": 152, "completion_tokens": count_tokens("Paris")}
    # \r\n line ends and several data lines are one event
    assert sse_events(b"event: a\r\ndata: x\r\ndata: y\r\n\r\n: comment\r\n\r\n") == [("a", "x\ny")]


def test_the_fixture_refuses_an_unknown_flavor(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(
        "import pytest\n\n"
        "@pytest.fixture(scope='session')\n"
        "def ctxbench_http_flavor():\n"
        "    return 'requests'\n"
    )
    pytester.makepyfile("def test_sdk(ctxbench_http_client):\n    pass\n")
    result = pytester.runpytest_inprocess("-p", "no:randomly")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        ["*ctxbench_http_client: flavor must be one of 'httpx', 'httpx2', given 'requests'*"]
    )


def test_a_stream_reporting_a_bad_count_is_an_error_entry_and_not_stored(
    tmp_path: Path,
) -> None:
    cache = LLMCache.in_dir(tmp_path, "once")
    bad = {"prompt_tokens": -3, "completion_tokens": 7}
    with FakeLLM(default=Reply(text=ANSWER, usage=bad)) as llm:
        scope = _scope()
        with call_scope(scope):
            _chunks(_sdk(llm, cache), **WITH_USAGE)
            _chunks(_sdk(llm, cache), **WITH_USAGE)
        assert len(llm.requests) == 2
    assert cache.stats.stored == 0
    assert "usage.prompt_tokens = -3" in scope.usage[0]["bad_usage"]
    assert usage_summary(scope.usage, {"m": Price(1, 1)})["cost_usd"] is None


def test_assembled_stream_and_the_echo_reply() -> None:
    from pytest_context_bench.llm import assemble_stream
    from pytest_context_bench.testing import RecordedRequest
    from pytest_context_bench.testing.__main__ import _echo

    said = assemble_stream('data: {"error": {"message": "overloaded"}}\n\n')
    assert isinstance(said, str) and "overloaded" in said
    assert isinstance(assemble_stream("data: [DONE]\n\n"), str)
    whole = assemble_stream(
        'data: {"model": "m", "choices": [{"index": 0, "delta": {"content": "Pa"}}]}\n\n'
        'data: {"choices": [{"index": 0, "delta": {"content": "ris"},'
        ' "finish_reason": "stop"}]}\n\ndata: [DONE]\n\n'
    )
    assert whole == {
        "object": "chat.completion",
        "model": "m",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": "Paris"},
                "finish_reason": "stop",
            }
        ],
    }
    request = RecordedRequest(
        "POST", "/v1/messages", {}, {"messages": [
            {"role": "user", "content": "first"},
            {"role": "assistant", "content": "ok"},
            {"role": "user", "content": [{"type": "text", "text": "last one"}]},
        ]}, 0,
    )
    assert _echo(request).text == "last one"
