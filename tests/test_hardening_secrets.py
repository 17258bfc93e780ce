"""An API key never reaches a file or the terminal, however it was pasted and
whatever library quoted it: stripped, checked, and redacted from every error text."""

from __future__ import annotations

import json

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


@pytest.mark.parametrize("mode", [[], ["-n", "2"]], ids=["inprocess", "xdist2"])
@pytest.mark.parametrize(
    "pasted", [SECRET + "\n", "  " + SECRET + "\r\n"], ids=["lf", "crlf"]
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
