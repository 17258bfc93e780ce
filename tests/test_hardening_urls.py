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
