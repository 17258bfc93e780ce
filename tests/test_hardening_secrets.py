"""An API key never reaches a file or the terminal, however it was pasted and
whatever library quoted it: stripped, checked, and redacted from every error text."""

from __future__ import annotations

import base64
import contextlib
import http.server
import json
import threading
from collections.abc import Iterator

import pytest

from pytest_context_bench.testing import FakeLLM, Reply

SECRET = "sk-test-0123456789SECRETabcdef"

LEAKY = '''
import os

class Leaky:
    """A System whose own error quotes the key, as some SDKs do."""
    name = "leaky"

    def process(self, example):
        key = os.environ["OPENAI_API_KEY"]
        headers = {"Authorization": "Bearer " + key}
        raise RuntimeError(
            "auth failed: headers=" + repr(headers)
            + " raw=" + repr(key.encode()) + " plain=" + key
        )

leaky = Leaky()
'''


# Each paste in one mode: both are stripped by the same clean_api_key (unit-tested
# above with spaces and a tab), and the workers redact what they send back whatever
# was pasted; the four combinations reached no code two of them do not.
@pytest.mark.parametrize(
    ("pasted", "mode"),
    [(SECRET + "\n", []), ("  " + SECRET + "\r\n", ["-n", "2"])],
    ids=["lf-inprocess", "crlf-xdist2"],
)
def test_a_pasted_key_is_in_no_file_and_not_on_the_terminal(
    pytester: pytest.Pytester,
    monkeypatch: pytest.MonkeyPatch,
    pasted: str,
    mode: list[str],
) -> None:
    rows = [{"id": f"q-{i}", "question": f"q{i}?", "answer": "a"} for i in range(1, 5)]
    pytester.makefile(".jsonl", qa="\n".join(json.dumps(r) for r in rows) + "\n")
    pytester.makepyfile(leaky=LEAKY)
    pytester.makeini("[pytest]\npythonpath = .\n")
    seen: list[str] = []

    def handler(request: object) -> Reply:
        auth = request.headers.get("authorization", "")  # type: ignore[attr-defined]
        seen.append(auth)
        # A server that echoes what it was sent in its error (some proxies do).
        return Reply(text=f"invalid credentials: {auth}", status=401)

    summary = pytester.path / "step-summary.md"
    monkeypatch.setenv("OPENAI_API_KEY", pasted)
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    with FakeLLM(handler=handler) as llm:
        result = pytester.runpytest_subprocess(
            *mode,
            "-v",
            "-rA",
            "--ctxbench-dataset=qa.jsonl",
            f"--ctxbench-proxy={llm.base_url}",
            "--ctxbench-proxy-name=proxy",
            "--ctxbench-system=leaky:leaky",
            "--ctxbench-json=out/r.json",
            "--ctxbench-html=out/r.html",
            "--ctxbench-markdown=out/r.md",
            "--ctxbench-save-baseline=out/base.json",
            "--junitxml=out/junit.xml",
        )
    # The request was sent, with the key stripped of what was pasted around it.
    assert seen and set(seen) == {f"Bearer {SECRET}"}, seen
    out = result.stdout.str() + result.stderr.str()
    assert "invalid credentials" in out  # the errors are there...
    assert "auth failed" in out
    files = [
        pytester.path / "out" / n
        for n in ("r.json", "r.html", "r.md", "base.json", "junit.xml")
    ]
    files.append(summary)
    for path in files:
        assert path.exists(), (path, out)
    texts = {str(p): p.read_text(encoding="utf-8") for p in files}
    texts["terminal"] = out
    for where, text in texts.items():
        # ...and the key in none of its spellings, nor any long piece of it.
        for piece in (SECRET, SECRET[3:], "0123456789SECRET"):
            assert piece not in text, (where, piece)
    assert "***" in texts[str(pytester.path / "out" / "r.json")]


def test_a_key_holding_a_control_character_is_one_usage_error_without_the_key(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makefile(".jsonl", qa='{"id": 1, "question": "q?", "answer": "a"}\n')
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-0123\n456789SECRETabcdef")
    with FakeLLM() as llm:
        result = pytester.runpytest_subprocess(
            "--ctxbench-dataset=qa.jsonl", f"--ctxbench-proxy={llm.base_url}"
        )
        assert llm.requests == []
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str()
    lines = [line for line in result.stderr.lines if line.strip()]
    assert lines == [
        (
            "ERROR: OPENAI_API_KEY holds a control character (at position 13 of 31; a"
            " line break or tab pasted inside the key?), which no HTTP header can"
            " carry; set it again without it (the key is not shown)."
        )
    ]
    assert "456789SECRET" not in result.stdout.str() + result.stderr.str()


def test_an_api_key_argument_is_stripped_checked_and_redacted() -> None:
    from pytest_context_bench.errors import ConfigError, error_record
    from pytest_context_bench.llm import LLMClient
    from pytest_context_bench.keys import clean_api_key
    from pytest_context_bench.urls import redact

    key = "  sk-arg-abcdefghijklmnop\t"
    client = LLMClient("http://127.0.0.1:9", api_key=key)
    assert client._headers()["Authorization"] == "Bearer sk-arg-abcdefghijklmnop"
    with pytest.raises(ConfigError) as info:
        LLMClient("http://127.0.0.1:9", api_key="sk-arg-\x00abcdefghijklmnop")
    assert "abcdefghijklmnop" not in str(info.value)
    assert clean_api_key(" sk-other-123456789 ") == "sk-other-123456789"
    exc = ValueError("Illegal header value b'Bearer sk-arg-abcdefghijklmnop'")
    assert (
        error_record(exc, "system")["message"] == "Illegal header value b'Bearer ***'"
    )
    # Any Bearer token goes, registered or not.
    assert redact("sent Authorization: Bearer tok_unknown_123") == (
        "sent Authorization: Bearer ***"
    )


# ------------------------------------------- credential headers of any SDK or System

AZURE_SYSTEM = '''
import os

from openai import AzureOpenAI

from pytest_context_bench import http_client


class Azure:
    """The openai SDK's Azure client on our http_client(): it sends the key in
    api-key, which no one but the transport sees before httpx refuses it."""
    name = "azure"

    def process(self, example):
        client = AzureOpenAI(
            azure_endpoint=os.environ["CTXB_TEST_URL"],
            api_version="2024-02-01",
            max_retries=0,
            http_client=http_client(flavor=os.environ["CTXB_TEST_FLAVOR"]),
        )
        reply = client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": example["question"]}]
        )
        return {**example, "response": reply.choices[0].message.content}


azure = Azure()
'''

HEADERS_SYSTEM = '''
import base64
import os

from pytest_context_bench import http_client


class Headers:
    """Sets credential headers itself; raises with the error body, as SDKs do."""
    name = "headers"

    def process(self, example):
        keys = os.environ["CTXB_TEST_KEYS"].split(",")
        basic = base64.b64encode(("user:" + keys[3]).encode()).decode()
        with http_client(flavor=os.environ["CTXB_TEST_FLAVOR"]) as client:
            answer = client.post(
                os.environ["CTXB_TEST_URL"] + "/v1/chat/completions",
                json={"model": "m", "messages": [
                    {"role": "user", "content": example["question"]}]},
                headers={
                    "x-api-key": keys[0],
                    "api-key": keys[1],
                    "x-goog-api-key": keys[2],
                    "Authorization": "Basic " + basic,
                    "X-Custom-Token": keys[4],
                },
            )
        if answer.status_code >= 400:
            raise RuntimeError(f"HTTP {answer.status_code}: {answer.text}")
        text = answer.json()["choices"][0]["message"]["content"]
        return {**example, "response": text}


headers = Headers()
'''


class _Echo(http.server.BaseHTTPRequestHandler):
    """q1? gets a 500 whose body echoes the request's headers; any other question
    a chat reply whose answer quotes them."""

    def log_message(self, format: str, *args: object) -> None:
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        sent = {k.lower(): v for k, v in self.headers.items()}
        self.server.seen.append(sent)  # type: ignore[attr-defined]
        out: dict[str, object]
        if body["messages"][0]["content"] == "q1?":
            status, out = 500, {"error": {"message": "bad", "request_headers": sent}}
        else:
            said = "you sent " + " ".join(f"{k}: {v}" for k, v in sent.items())
            status, out = 200, {
                "id": "x",
                "object": "chat.completion",
                "model": "m",
                "choices": [
                    {
                        "index": 0,
                        "finish_reason": "stop",
                        "message": {"role": "assistant", "content": said},
                    }
                ],
                "usage": {"prompt_tokens": 1, "completion_tokens": 1},
            }
        payload = json.dumps(out).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)


@contextlib.contextmanager
def _echo_server() -> Iterator[tuple[str, list[dict[str, str]]]]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Echo)
    server.seen = []  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}", server.seen  # type: ignore[attr-defined]
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def _run_and_read(
    pytester: pytest.Pytester,
    monkeypatch: pytest.MonkeyPatch,
    module: str,
    source: str,
    mode: list[str],
) -> dict[str, str]:
    """Run the System ``module:<module's last word>`` on 3 examples with every
    output asked for; the texts of the terminal and of each file written."""
    rows = [{"id": f"q-{i}", "question": f"q{i}?", "answer": "a"} for i in range(1, 4)]
    pytester.makefile(".jsonl", qa="\n".join(json.dumps(r) for r in rows) + "\n")
    pytester.makepyfile(**{module: source})
    pytester.makeini("[pytest]\npythonpath = .\n")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    summary = pytester.path / "step-summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    obj = "azure" if "azure" in module else "headers"
    args = [
        *mode,
        "-v",
        "-rA",
        "--ctxbench-dataset=qa.jsonl",
        f"--ctxbench-system={module}:{obj}",
        "--ctxbench-transcripts=all",
        "--ctxbench-json=out/r.json",
        "--ctxbench-html=out/r.html",
        "--ctxbench-markdown=out/r.md",
        "--ctxbench-save-baseline=out/base.json",
        "--junitxml=out/junit.xml",
    ]
    run = pytester.runpytest_subprocess if mode else pytester.runpytest
    result = run(*args)
    out = result.stdout.str() + result.stderr.str()
    names = ("r.json", "r.html", "r.md", "base.json", "junit.xml")
    files = [pytester.path / "out" / n for n in names] + [summary]
    texts = {"terminal": out}
    for path in files:
        assert path.exists(), (path, out)
        texts[path.name] = path.read_text(encoding="utf-8")
    return texts


def _nowhere(texts: dict[str, str], *secrets: str) -> None:
    for where, text in texts.items():
        for secret in secrets:
            for piece in (secret, secret[2:-2]):
                assert piece not in text, (where, piece, text[:3000])


# In-process, both transports. Under -n 2 a secret a worker's transport registered
# (a credential header) is redacted by that worker from all it sends back: the
# xdist2 case of test_credential_headers_echoed_in_an_error_or_an_answer_are_in_no_output
# (the Azure case under -n 2, three processes importing openai, reached no more).
@pytest.mark.parametrize(
    ("mode", "flavor"),
    [([], "httpx"), ([], "httpx2")],
    ids=["inprocess-httpx", "inprocess-httpx2"],
)
def test_an_azure_key_with_a_newline_is_in_no_output(
    pytester: pytest.Pytester,
    monkeypatch: pytest.MonkeyPatch,
    mode: list[str],
    flavor: str,
) -> None:
    pytest.importorskip("openai")
    # One key per case: an in-process run registers its secrets in this process.
    key = f"azure-{flavor}-{len(mode)}-0123456789SECRET"
    monkeypatch.setenv("AZURE_OPENAI_API_KEY", key + "\n")
    monkeypatch.setenv("CTXB_TEST_FLAVOR", flavor)
    with _echo_server() as (url, seen):
        monkeypatch.setenv("CTXB_TEST_URL", url)
        texts = _run_and_read(
            pytester, monkeypatch, f"azure_newline_{flavor}_{len(mode)}",
            AZURE_SYSTEM, mode,
        )
    _nowhere(texts, key)
    assert seen == []  # no request can carry the key...
    # ...httpx said why, quoting the header it refused, redacted.
    assert "Illegal header value b'***'" in texts["terminal"], texts["terminal"]
    assert "Illegal header value b'***'" in texts["junit.xml"]


@pytest.mark.parametrize(
    ("mode", "flavor"),
    [([], "httpx"), (["-n", "2"], "httpx2")],
    ids=["inprocess-httpx", "xdist2-httpx2"],
)
def test_credential_headers_echoed_in_an_error_or_an_answer_are_in_no_output(
    pytester: pytest.Pytester,
    monkeypatch: pytest.MonkeyPatch,
    mode: list[str],
    flavor: str,
) -> None:
    tag = f"{flavor}{len(mode)}"
    keys = [f"{name}-{tag}-0123456789SECRET" for name in "abcde"]
    basic = base64.b64encode(("user:" + keys[3]).encode()).decode()
    monkeypatch.setenv("CTXB_TEST_KEYS", ",".join(keys))
    monkeypatch.setenv("CTXB_TEST_FLAVOR", flavor)
    with _echo_server() as (url, seen):
        monkeypatch.setenv("CTXB_TEST_URL", url)
        texts = _run_and_read(
            pytester, monkeypatch, f"headers_echo_{tag}", HEADERS_SYSTEM, mode
        )
    # The requests went out with every header, as the System set them.
    assert len(seen) == 3, seen
    assert all(s["x-api-key"] == keys[0] and s["api-key"] == keys[1] for s in seen)
    assert {s["authorization"] for s in seen} == {"Basic " + basic}
    report = json.loads(texts["r.json"])
    by_id = {row["example_id"]: row for row in report["rows"]}
    assert by_id["q-1"]["error"] is not None
    assert set(by_id) == {"q-1", "q-2", "q-3"}
    _nowhere(texts, *keys, basic)
    assert "***" in texts["r.json"]
    # the answer that quoted them is kept, less the secrets
    assert "you sent " in by_id["q-2"]["response"]
    assert "x-api-key: ***" in by_id["q-2"]["response"]


def test_credential_headers_are_secrets_by_their_name() -> None:
    from pytest_context_bench.urls import (
        redact,
        redact_secrets,
        register_headers,
        secret_header,
    )

    for name in (
        "Authorization",
        "Proxy-Authorization",
        "api-key",
        "X-API-Key",
        "x-goog-api-key",
        "Ocp-Apim-Subscription-Key",
        "X-Auth-Token",
        "x-client-secret",
        "Cookie",
    ):
        assert secret_header(name), name
    for name in ("Content-Type", "User-Agent", "Idempotency-Key", "OpenAI-Organization"):
        assert not secret_header(name), name
    register_headers(
        [
            ("Authorization", "token unit-gh-0123456789"),
            ("x-api-key", "unit-raw-0123456789\n"),
            ("api-key", "short\n"),  # under 8 characters: would garble words
            ("Content-Type", "application/json; unit=0123456789"),
        ]
    )
    said = (
        "Illegal header value b'unit-raw-0123456789\\n'; 'unit-raw-0123456789\\n';"
        " got token unit-gh-0123456789 and unit-gh-0123456789; short;"
        " application/json; unit=0123456789"
    )
    assert redact(said) == (
        "Illegal header value b'***'; '***'; got *** and ***; short;"
        " application/json; unit=0123456789"
    )
    # A model's answer: the registered secrets only, prose stays prose.
    assert redact_secrets("the bearer of unit-raw-0123456789", bearer=False) == (
        "the bearer of ***"
    )
