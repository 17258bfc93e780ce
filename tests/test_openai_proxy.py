"""OpenAIProxy against FakeLLM: names, messages, usage, retries, conversations."""

from __future__ import annotations

import pytest

from pytest_context_bench.llm import LLMError
from pytest_context_bench.systems import OpenAIProxy, default_proxy_name
from pytest_context_bench.testing import FakeLLM, Reply


@pytest.fixture
def llm():
    with FakeLLM() as server:
        yield server


@pytest.mark.parametrize(
    ("url", "name"),
    [
        ("http://localhost:7878", "openai_proxy_m@localhost"),
        ("http://localhost:7879/v1/", "openai_proxy_m@localhost"),
        ("https://api.example.com/v1", "openai_proxy_m@api.example.com"),
        ("http://u:secret@h:1/team-a/v1", "openai_proxy_m@h/team-a"),
    ],
)
def test_default_name_is_model_and_host_never_the_port(url: str, name: str) -> None:
    # A proxy on an ephemeral port must match its baseline on the next port.
    assert default_proxy_name(url, "m") == name
    assert OpenAIProxy(url, "m").name == name
    assert "secret" not in name
    assert default_proxy_name(url) == name.replace("m@", "")


def test_proxies_differ_by_model_or_given_name() -> None:
    a = OpenAIProxy("http://localhost:7878", "m")
    b = OpenAIProxy("http://localhost:7879", "other")
    assert a.name != b.name
    assert OpenAIProxy("http://localhost:7878", "m", name="mine").name == "mine"


def test_process_question_context_and_usage(llm: FakeLLM) -> None:
    llm.push(Reply("Paris", usage={"prompt_tokens": 12, "completion_tokens": 1}))
    proxy = OpenAIProxy(
        llm.url_v1, "m", system_prompt="Be brief.", extra_body={"temperature": 0}
    )
    ex = {"id": "1", "context": "France...", "question": "Capital?", "answer": "Paris"}
    out = proxy.process(ex)
    assert out == {
        **ex,
        "response": "Paris",
        "api_usage": {"prompt_tokens": 12, "completion_tokens": 1},
    }
    req = llm.requests[0]
    assert req.path == "/v1/chat/completions"
    assert req.json["model"] == "m" and req.json["temperature"] == 0
    assert req.messages == [
        {"role": "system", "content": "Be brief."},
        {"role": "system", "content": "France..."},
        {"role": "user", "content": "Capital?"},
    ]


def test_process_context_only_and_turns(llm: FakeLLM) -> None:
    proxy = OpenAIProxy(llm.base_url, "m")
    proxy.process({"context": "Summarise this."})
    turns = [
        {"role": "user", "content": "a"},
        {"role": "assistant", "content": "b"},
        {"role": "user", "content": "c"},
    ]
    proxy.process({"turns": turns, "question": "ignored"})
    assert llm.requests[0].messages == [{"role": "user", "content": "Summarise this."}]
    assert llm.requests[1].messages == turns


def test_build_messages_alone(llm: FakeLLM) -> None:
    proxy = OpenAIProxy(
        llm.base_url,
        "m",
        system_prompt="unused",
        build_messages=lambda ex: [{"role": "user", "content": ex["q"]}],
    )
    proxy.process({"q": "x"})
    assert llm.requests[0].messages == [{"role": "user", "content": "x"}]


def test_no_usage_no_api_usage(llm: FakeLLM) -> None:
    llm.push(Reply("x", usage={}))
    assert "api_usage" not in OpenAIProxy(llm.base_url, "m").process({"context": "c"})


def test_read_timeout_retried(llm: FakeLLM) -> None:
    llm.push(Reply("late", delay=0.8), "ok")
    proxy = OpenAIProxy(llm.base_url, "m", timeout=0.2, retry_base_delay=0.001)
    assert proxy.process({"context": "c"})["response"] == "ok"


def test_failure_raises_llm_error_with_url(llm: FakeLLM) -> None:
    llm.set_handler(lambda r: Reply(status=502))
    proxy = OpenAIProxy(llm.base_url, "m", max_retries=1, retry_base_delay=0.001)
    with pytest.raises(LLMError, match=r"2 attempts over .* last: HTTP 502"):
        proxy.process({"context": "c"})


def test_api_key_not_in_repr(llm: FakeLLM) -> None:
    proxy = OpenAIProxy(llm.base_url, "m", api_key="sk-SECRET-xyz")
    assert "sk-SECRET-xyz" not in repr(proxy)
    proxy.process({"context": "c"})
    assert llm.requests[0].headers["authorization"] == "Bearer sk-SECRET-xyz"


def test_process_conversation(llm: FakeLLM) -> None:
    llm.push(
        Reply("r1", usage={"prompt_tokens": 3, "completion_tokens": 1}),
        Reply("r2", usage={"prompt_tokens": 7, "completion_tokens": 2}),
    )
    proxy = OpenAIProxy(llm.base_url, "m", system_prompt="S")
    out = proxy.process_conversation(
        [
            {"role": "user", "content": "u1"},
            {"role": "assistant", "content": "gold reply"},
            "u2",
        ]
    )
    assert out == [
        {
            "role": "assistant",
            "content": "r1",
            "api_usage": {"prompt_tokens": 3, "completion_tokens": 1},
        },
        {
            "role": "assistant",
            "content": "r2",
            "api_usage": {"prompt_tokens": 7, "completion_tokens": 2},
        },
    ]
    assert llm.requests[1].messages == [
        {"role": "system", "content": "S"},
        {"role": "user", "content": "u1"},
        {"role": "assistant", "content": "r1"},
        {"role": "user", "content": "u2"},
    ]


def test_satisfies_system_protocol() -> None:
    from pytest_context_bench.types import System

    assert isinstance(OpenAIProxy("http://h:1", "m"), System)
