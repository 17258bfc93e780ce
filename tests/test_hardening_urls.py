"""No credentials of a URL are written anywhere: reports, baselines, rows, logs."""

from __future__ import annotations

import json
import logging

import pytest

from pytest_context_bench.llm import LLMClient, LLMError, display_url
from pytest_context_bench.testing import FakeLLM, Reply
from pytest_context_bench.urls import redact_urls, safe_url, secret_name

SECRET = "sk-VERYSECRET123"


@pytest.mark.parametrize(
    ("url", "safe"),
    [
        (f"http://user:{SECRET}@host/v1?api-key={SECRET}", "http://host/v1"),
        (
            f"https://h:8443/v1?model=m&key={SECRET}&x=1",
            "https://h:8443/v1?model=m&x=1",
        ),
        (
            f"https://h/p?sig={SECRET}&Signature={SECRET}&X-Amz-Credential={SECRET}",
            "https://h/p",
        ),
        (
            f"https://h/p?access_token={SECRET}&token={SECRET}&api_key={SECRET}",
            "https://h/p",
        ),
        (
            f"https://h/p?password={SECRET}&client_secret={SECRET}&x-api-key={SECRET}",
            "https://h/p",
        ),
        (f"https://h/p#access_token={SECRET}", "https://h/p"),
        (f"http://{SECRET}@[::1]:8000/v1", "http://[::1]:8000/v1"),
        ("http://localhost:7878", "http://localhost:7878"),
        ("https://h/v1?api-version=2024-02-01", "https://h/v1?api-version=2024-02-01"),
    ],
)
def test_safe_url(url: str, safe: str) -> None:
    assert safe_url(url) == safe
    assert SECRET not in display_url(url)


@pytest.mark.parametrize(
    "name",
    [
        "key",
        "api-key",
        "API_KEY",
        "apikey",
        "token",
        "access_token",
        "sig",
        "signature",
        "password",
        "secret",
        "X-Goog-Signature",
        "session",
        "auth",
    ],
)
def test_secret_names(name: str) -> None:
    assert secret_name(name)


def test_redact_urls_in_text() -> None:
    text = (
        f"--ctxbench-proxy=http://u:{SECRET}@h:1/v1?api-key={SECRET} and"
        f" 'https://h/x?token={SECRET}'"
    )
    out = redact_urls(text)
    assert SECRET not in out
    assert out == "--ctxbench-proxy=http://h:1/v1 and 'https://h/x'"


def test_client_errors_and_logs_carry_no_credentials(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with FakeLLM() as llm:
        llm.push(Reply(status=500), Reply(status=500))
        url = llm.url_v1.replace("http://", f"http://u:{SECRET}@")
        client = LLMClient(url, api_key="k", max_retries=1, retry_base_delay=0.0)
        with caplog.at_level(logging.WARNING), pytest.raises(LLMError) as info:
            client.chat([{"role": "user", "content": "x"}], model="m")
    assert SECRET not in str(info.value)
    assert SECRET not in caplog.text and "retry" in caplog.text
    assert SECRET not in repr(client)


LEAKY = f"""
class Leaky:
    name = "leaky"
    def process(self, example):
        raise RuntimeError("GET http://bob:{SECRET}@api.example/v1?api-key={SECRET} failed")
leaky = Leaky()
"""


def test_reports_baselines_rows_and_output_carry_no_credentials(
    project: pytest.Pytester, mode_args: list[str]
) -> None:
    project.makepyfile(leaky=LEAKY)
    with FakeLLM() as llm:
        base = llm.base_url
        proxy = llm.base_url.replace("http://", f"http://user:{SECRET}@")
        # In a subprocess: an inline run would import httpx parts inside pytester's
        # sys.modules snapshot (see test_plugin_llm.py).
        result = project.runpytest_subprocess(
            "--ctxbench-dataset=qa.jsonl",
            "--ctxbench-system=leaky:leaky",
            f"--ctxbench-proxy={proxy}",
            "--ctxbench-proxy-name=p",
            "--ctxbench-limit=1",
            "--ctxbench-json=r.json",
            "--ctxbench-save-baseline=b.json",
            "--junitxml=junit.xml",
            *mode_args,
        )
    report = (project.path / "r.json").read_text()
    baseline = (project.path / "b.json").read_text()
    rows = json.loads(report)["rows"]
    assert any("api.example/v1" in json.dumps(r) for r in rows)
    for name, text in [
        ("report", report),
        ("baseline", baseline),
        ("stdout", result.stdout.str()),
        ("stderr", result.stderr.str()),
        ("junit", (project.path / "junit.xml").read_text()),
    ]:
        assert SECRET not in text, name
    invocation = " ".join(json.loads(report)["run"]["invocation"])
    assert f"--ctxbench-proxy={base}" in invocation


# -- issue 22 item 3: names matched whole; every URL that differs has its own key ----


@pytest.mark.parametrize(
    "name",
    ["apiKey", "APIKey", "X-Amz-Signature", "X-Amz-Security-Token", "subscription-key",
     "x.api.key", "db_password", "code", "CLIENT_SECRET"],
)
def test_more_secret_names(name: str) -> None:
    assert secret_name(name)


@pytest.mark.parametrize(
    "name",
    ["design", "author", "max_tokens", "token_type", "keyword", "code_challenge",
     "signed", "authority", "api-version", "monkey", "passage"],
)
def test_names_that_only_contain_a_secret_word_are_kept(name: str) -> None:
    assert not secret_name(name)
    assert safe_url(f"https://h/v1?{name}=v1&key={SECRET}") == f"https://h/v1?{name}=v1"


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("?design=a", "?design=b"),
        ("?author=x", "?author=y"),
        ("?max_tokens=5", "?max_tokens=500"),
        ("?api-version=1", "?api-version=2"),
        (f"?key={SECRET}", "?key=other"),
        (f"?sig={SECRET}&se=1", f"?sig={SECRET}x&se=1"),
        ("", f"?key={SECRET}"),
    ],
)
def test_cache_keys_tell_every_differing_url_apart(a: str, b: str) -> None:
    from pytest_context_bench.cache import cache_key, clean_url

    base = "https://h/v1/chat/completions"
    assert cache_key("POST", base + a, b"{}", 1) != cache_key("POST", base + b, b"{}", 1)
    # what is written of them holds no secret
    assert SECRET not in clean_url(base + a) + clean_url(base + b)


def test_cache_key_ignores_parameter_order_host_case_and_fragment() -> None:
    from pytest_context_bench.cache import cache_key

    k = cache_key("POST", f"https://H/v1?a=1&key={SECRET}", b"{}", 1)
    assert k == cache_key("POST", f"https://h/v1?key={SECRET}&a=1#x", b"{}", 1)


def test_urls_differing_in_any_parameter_are_separate_entries_and_no_file_holds_the_secret(
    pytester: pytest.Pytester,
) -> None:
    from helpers import qa_lines

    pytester.makefile(".jsonl", qa=qa_lines(3))
    pytester.makeini("[pytest]\nctxbench_cache_dir = llm-cache\n")
    # The reply names the parameters it was sent (not the key: a reply is stored).
    def reply(r):
        return Reply(text="reply to " + r.query.partition("&api-key")[0])

    # Two runs, a proxy per URL (named: same host and model), each proxy's rows
    # checked: the first run's four URLs differ in one parameter each; in the
    # second, the first URL again (all three from the cache) and another key.
    runs = (
        (
            f"design=a&api-key={SECRET}",
            f"design=b&api-key={SECRET}",
            f"author=x&max_tokens=5&api-key={SECRET}",
            f"author=x&max_tokens=500&api-key={SECRET}",
        ),
        (
            f"design=a&api-key={SECRET}",  # seen before: all three from the cache
            "design=a&api-key=another-key",
        ),
    )
    with FakeLLM(handler=reply) as llm:
        sent = []
        for queries in runs:
            before = len(llm.requests)
            out = f"r{len(sent)}.json"
            names = [f"p{len(sent) + i}" for i in range(len(queries))]
            result = pytester.runpytest_subprocess(
                "--ctxbench-dataset=qa.jsonl",
                *(f"--ctxbench-proxy={llm.base_url}/v1?{query}" for query in queries),
                *(f"--ctxbench-proxy-name={name}" for name in names),
                f"--ctxbench-json={out}",
                "--junitxml=junit.xml",
            )
            rows = json.loads((pytester.path / out).read_text())["rows"]
            assert [r["error"] for r in rows] == [None] * 3 * len(queries), result.stdout.str()
            for name in names:
                # a proxy's three requests were all sent, or none was
                calls = [r["metadata"]["llm_usage"]["calls"] for r in rows if r["system"] == name]
                assert len(calls) == 3 and len(set(calls)) == 1, (name, calls)
                sent.append(3 * calls[0])
            assert len(llm.requests) - before == sum(sent[-len(queries):])
            assert SECRET not in result.stdout.str() + result.stderr.str()
    assert sent == [3, 3, 3, 3, 0, 3]
    files = [p for p in pytester.path.rglob("*") if p.is_file()]
    assert any(p.name.startswith("llm-cache.sqlite3") for p in files)
    for path in files:
        if path.suffix in (".pyc",):
            continue
        assert SECRET.encode() not in path.read_bytes(), path
