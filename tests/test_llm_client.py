"""LLMClient against a real HTTP server (FakeLLM): retries, parsing, redaction."""

from __future__ import annotations

import email.utils
import logging
import re
import socket
import threading
import time

import pytest

from pytest_context_bench.errors import CtxBenchError
from pytest_context_bench.llm import (
    ChatResult,
    LLMClient,
    LLMError,
    _parse_retry_after,
    display_url,
    normalize_base_url,
)
from pytest_context_bench.testing import FakeLLM, RecordedRequest, Reply

MSG = [{"role": "user", "content": "hi"}]
KEY = "sk-test-SECRET-0123456789"


def client(url: str, **kw: object) -> LLMClient:
    params: dict[str, object] = {
        "retry_base_delay": 0.001,
        "max_retries": 3,
        "timeout": 2.0,
    }
    params.update(kw)
    return LLMClient(url, **params)  # type: ignore[arg-type]


@pytest.fixture
def llm():
    with FakeLLM() as server:
        yield server


def test_chat_returns_text_usage_raw(llm: FakeLLM) -> None:
    llm.push(Reply("Paris", usage={"prompt_tokens": 7, "completion_tokens": 1}))
    result = client(llm.base_url).chat(MSG, "m", temperature=0)
    assert isinstance(result, ChatResult)
    assert result.text == "Paris"
    assert result.usage == {"prompt_tokens": 7, "completion_tokens": 1}
    assert result.raw["choices"][0]["message"]["content"] == "Paris"
    body = llm.requests[0].json
    assert body == {"model": "m", "messages": MSG, "temperature": 0}
    assert llm.requests[0].path == "/v1/chat/completions"


@pytest.mark.parametrize("suffix", ["", "/", "/v1", "/v1/"])
def test_base_url_with_or_without_v1(llm: FakeLLM, suffix: str) -> None:
    c = client(llm.base_url + suffix)
    c.chat(MSG, "m")
    c.embeddings(["a"], "e")
    assert [r.path for r in llm.requests] == ["/v1/chat/completions", "/v1/embeddings"]


def test_a_query_string_in_the_base_url_is_kept(llm: FakeLLM) -> None:
    """Azure OpenAI's ``?api-version=``: every request carries it, the path is the
    API's (it used to be appended after the query)."""
    c = client(llm.base_url + "/v1/?api-version=2024-10-21")
    c.chat(MSG, "m")
    c.embeddings(["a"], "e")
    got = [(r.path, r.query) for r in llm.requests]
    assert got == [
        ("/v1/chat/completions", "api-version=2024-10-21"),
        ("/v1/embeddings", "api-version=2024-10-21"),
    ]


def test_normalize_and_display_url() -> None:
    assert normalize_base_url("http://h:1?a=b") == "http://h:1/v1?a=b"
    assert normalize_base_url("http://h:1/x/#frag") == "http://h:1/x/v1"
    assert normalize_base_url("http://h:1") == "http://h:1/v1"
    assert normalize_base_url("https://x/openai/v1/") == "https://x/openai/v1"
    assert normalize_base_url("http://h:1/v2") == "http://h:1/v2"
    assert display_url("http://user:pw@h:9/v1/x?key=abc") == "http://h:9/v1/x"
    with pytest.raises(ValueError):
        normalize_base_url("localhost:8000")


def test_embeddings_in_order(llm: FakeLLM) -> None:
    llm.push(
        Reply(
            json_body={
                "data": [
                    {"index": 1, "embedding": [0.0, 1.0]},
                    {"index": 0, "embedding": [1.0, 0.0]},
                ]
            }
        )
    )
    assert client(llm.base_url).embeddings(["a", "b"], "e") == [[1.0, 0.0], [0.0, 1.0]]
    assert llm.requests[0].json == {"model": "e", "input": ["a", "b"]}


def test_embeddings_count_mismatch_is_error(llm: FakeLLM) -> None:
    llm.push(Reply(embeddings=[[1.0]]))
    with pytest.raises(LLMError, match="1 embeddings for 2 inputs"):
        client(llm.base_url).embeddings(["a", "b"], "e")


@pytest.mark.parametrize("status", [500, 502, 503, 504, 429, 408])
def test_transient_status_is_retried(llm: FakeLLM, status: int) -> None:
    llm.push(Reply("busy", status=status), Reply("busy", status=status), "fine")
    assert client(llm.base_url).chat(MSG, "m").text == "fine"
    assert len(llm.requests) == 3


@pytest.mark.parametrize("status", [400, 401, 403, 404, 422, 501])
def test_other_4xx_not_retried(llm: FakeLLM, status: int) -> None:
    llm.push(Reply("nope", status=status), "fine")
    with pytest.raises(LLMError) as info:
        client(llm.base_url).chat(MSG, "m")
    assert len(llm.requests) == 1
    assert info.value.status == status
    assert f"HTTP {status}" in str(info.value)
    assert "not retried" in str(info.value)
    assert f"{llm.base_url}/v1/chat/completions" in str(info.value)


def test_exhausted_retries_message(llm: FakeLLM) -> None:
    llm.set_handler(lambda r: Reply("overloaded", status=503))
    with pytest.raises(LLMError) as info:
        client(llm.base_url, max_retries=2).chat(MSG, "m")
    err = info.value
    assert isinstance(err, CtxBenchError)
    assert len(llm.requests) == 3
    assert err.attempts == 3 and err.status == 503
    message = str(err)
    assert message.startswith(
        f"POST {llm.base_url}/v1/chat/completions failed: 3 attempts over "
    )
    assert "; last: HTTP 503: " in message and "overloaded" in message


def test_zero_retries(llm: FakeLLM) -> None:
    llm.push(Reply(status=500), "fine")
    with pytest.raises(LLMError, match="1 attempt over"):
        client(llm.base_url, max_retries=0).chat(MSG, "m")


def _waits(caplog: pytest.LogCaptureFixture) -> list[float]:
    """The waits before each retry, as the client logs them ("retry 1 of 3 in
    0.30 s"): what it sleeps, read rather than timed."""
    found = (
        re.search(r"; retry \d+ of \d+ in ([0-9.]+) s$", r.getMessage())
        for r in caplog.records
        if r.name == "pytest_context_bench.llm"
    )
    return [float(m.group(1)) for m in found if m]


def test_retry_after_seconds_honoured(
    llm: FakeLLM, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="pytest_context_bench.llm")
    llm.push(Reply(status=429, retry_after="0.3"), "ok")
    assert client(llm.base_url).chat(MSG, "m").text == "ok"
    assert _waits(caplog) == [0.3]
    assert len(llm.requests) == 2


def test_retry_after_capped(llm: FakeLLM, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="pytest_context_bench.llm")
    llm.push(Reply(status=429, retry_after="3600"), "ok")
    assert client(llm.base_url, max_retry_after=0.2).chat(MSG, "m").text == "ok"
    assert _waits(caplog) == [0.2]


def test_retry_after_http_date(llm: FakeLLM, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="pytest_context_bench.llm")
    future = email.utils.formatdate(time.time() + 30, usegmt=True)
    llm.push(Reply(status=503, retry_after=future), "ok")
    assert client(llm.base_url, max_retry_after=0.25).chat(MSG, "m").text == "ok"
    # 30 s away, so the cap (not the 1 ms backoff) decided the wait.
    assert _waits(caplog) == [0.25]


def test_parse_retry_after() -> None:
    now = 1_700_000_000.0
    assert _parse_retry_after("2") == 2.0
    assert _parse_retry_after("1.5") == 1.5
    assert _parse_retry_after(
        email.utils.formatdate(now + 10, usegmt=True), now=now
    ) == pytest.approx(10.0)
    assert (
        _parse_retry_after(email.utils.formatdate(now - 10, usegmt=True), now=now)
        == 0.0
    )
    assert _parse_retry_after("-3") == 0.0
    assert _parse_retry_after("soon") is None
    assert _parse_retry_after("inf") is None
    assert _parse_retry_after(None) is None


def test_backoff_grows_and_is_capped() -> None:
    c = LLMClient("http://127.0.0.1:9", retry_base_delay=1.0, max_retry_delay=3.0)
    for _ in range(20):
        assert 0.5 <= c._delay(0, None) <= 1.0
        assert 2.0 <= c._delay(2, None) <= 3.0  # 4 s jittered to [2, 4], capped at 3
    assert c._delay(0, 7.0) == 7.0


def test_read_timeout_retried(llm: FakeLLM) -> None:
    llm.push(Reply("late", delay=1.0), "ok")
    assert client(llm.base_url, timeout=0.2).chat(MSG, "m").text == "ok"
    assert len(llm.requests) == 2


def test_read_timeout_exhausted(llm: FakeLLM) -> None:
    llm.set_handler(lambda r: Reply("late", delay=0.6))
    with pytest.raises(
        LLMError, match=r"2 attempts over .*last: ReadTimeout after 0.15 s"
    ):
        client(llm.base_url, timeout=0.15, max_retries=1).chat(MSG, "m")


def test_dropped_connection_retried(llm: FakeLLM) -> None:
    llm.push(Reply(drop=True), Reply(drop=True), "ok")
    assert client(llm.base_url).chat(MSG, "m").text == "ok"
    assert len(llm.requests) == 3


def test_dropped_connection_exhausted(llm: FakeLLM) -> None:
    llm.set_handler(lambda r: Reply(drop=True))
    with pytest.raises(LLMError, match="last: connection dropped"):
        client(llm.base_url, max_retries=1).chat(MSG, "m")


def test_connect_refused_retried_then_error() -> None:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()  # nothing listens there now
    with pytest.raises(LLMError) as info:
        client(f"http://127.0.0.1:{port}", max_retries=2).chat(MSG, "m")
    assert "3 attempts" in str(info.value) and "cannot connect" in str(info.value)
    assert info.value.status is None


def test_invalid_json_not_retried(llm: FakeLLM) -> None:
    llm.push(Reply(body="{not json"), "ok")
    with pytest.raises(LLMError, match="not JSON") as info:
        client(llm.base_url).chat(MSG, "m")
    assert info.value.status == 200
    assert len(llm.requests) == 1


@pytest.mark.parametrize(
    "body",
    [
        {"choices": []},
        {"choices": [{"message": {}}]},
        {"nothing": 1},
        {"choices": [{"message": {"content": 3}}]},
        [1, 2],
    ],
)
def test_wrong_shape_not_retried(llm: FakeLLM, body: object) -> None:
    llm.push(Reply(json_body=body), "ok")
    with pytest.raises(LLMError):
        client(llm.base_url).chat(MSG, "m")
    assert len(llm.requests) == 1


def test_null_content_is_an_error_not_empty_text(llm: FakeLLM) -> None:
    # docs/llm.md: a reply without text is an LLMError (more in test_hardening_llm.py).
    llm.push(
        Reply(
            json_body={"choices": [{"message": {"role": "assistant", "content": None}}]}
        )
    )
    with pytest.raises(LLMError, match="content is null.*the reply is empty"):
        client(llm.base_url).chat(MSG, "m")


def test_api_key_sent_from_argument_or_env(
    llm: FakeLLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "env-key")
    client(llm.base_url).chat(MSG, "m")
    client(llm.base_url, api_key=KEY).chat(MSG, "m")
    monkeypatch.delenv("OPENAI_API_KEY")
    client(llm.base_url).chat(MSG, "m")
    auth = [r.headers.get("authorization") for r in llm.requests]
    assert auth == ["Bearer env-key", f"Bearer {KEY}", None]


def _echo_auth(status: int):
    def handler(request):
        return Reply(f"bad key: {request.headers.get('authorization')}", status=status)

    return handler


@pytest.mark.parametrize("status", [401, 500])
def test_key_never_in_error_repr_or_log(
    llm: FakeLLM, status: int, caplog: pytest.LogCaptureFixture
) -> None:
    llm.set_handler(_echo_auth(status))
    c = client(llm.base_url, api_key=KEY, max_retries=1)
    caplog.set_level(logging.DEBUG)
    with pytest.raises(LLMError) as info:
        c.chat(MSG, "m")
    err = info.value
    assert "bad key: Bearer ***" in str(err)  # the echo is there, redacted
    for text in (
        str(err),
        repr(err),
        repr(c),
        repr(vars(c)),
        caplog.text,
        repr(err.args),
    ):
        assert KEY not in text
    assert err.__cause__ is None


def test_key_scrubbed_from_returned_objects(llm: FakeLLM) -> None:
    llm.set_handler(lambda r: f"your key is {r.headers['authorization']}")
    result = client(llm.base_url, api_key=KEY).chat(MSG, "m")
    assert KEY not in repr(result) and KEY not in str(result.raw)
    assert result.text == "your key is Bearer ***"


def test_key_not_in_error_for_url_with_credentials() -> None:
    with pytest.raises(LLMError) as info:
        client("http://user:pw-SECRET@127.0.0.1:9", max_retries=0).chat(MSG, "m")
    assert "pw-SECRET" not in str(info.value)


def test_connection_pool_reused(llm: FakeLLM) -> None:
    c = client(llm.base_url)
    for _ in range(5):
        c.chat(MSG, "m")
    assert len({r.client_port for r in llm.requests}) == 1
    c.close()


def test_concurrency_limit(llm: FakeLLM) -> None:
    llm.set_handler(lambda r: Reply("slow", delay=0.1))
    c = client(llm.base_url, concurrency=2)
    threads = [threading.Thread(target=c.chat, args=(MSG, "m")) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(llm.requests) == 6
    assert llm.max_in_flight == 2


def test_concurrent_calls_survive_transient_failures(llm: FakeLLM) -> None:
    seen: dict[str, int] = {}
    lock = threading.Lock()

    def flaky(request: RecordedRequest) -> Reply | str:
        question = request.messages[-1]["content"]
        with lock:
            seen[question] = n = seen.get(question, 0) + 1
        # Every question fails twice (a 503, then a dropped connection) first.
        if n == 1:
            return Reply(status=503)
        if n == 2:
            return Reply(drop=True)
        return str(question)

    llm.set_handler(flaky)
    c = client(llm.base_url, concurrency=4, max_retries=3)
    out: dict[int, str] = {}

    def run(i: int) -> None:
        out[i] = c.chat([{"role": "user", "content": f"q{i}"}], "m").text

    threads = [threading.Thread(target=run, args=(i,)) for i in range(40)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert out == {i: f"q{i}" for i in range(40)}
    assert len(llm.requests) == 120


def test_constructor_validation() -> None:
    with pytest.raises(ValueError):
        LLMClient("http://h", max_retries=-1)
    with pytest.raises(ValueError):
        LLMClient("http://h", concurrency=0)
    with pytest.raises(ValueError):
        LLMClient("http://h", timeout=0)


def test_fake_llm_routes_and_records(llm: FakeLLM) -> None:
    import httpx

    r = httpx.post(
        llm.base_url + "/chat/completions", json={"model": "x", "messages": MSG}
    )
    assert r.json()["choices"][0]["message"]["content"] == "OK"
    assert httpx.post(llm.base_url + "/v1/nothing", json={}).status_code == 404
    assert [q.path for q in llm.requests] == ["/chat/completions", "/v1/nothing"]
    assert llm.requests[0].messages == MSG
