"""The OpenAI-compatible System and the judge, end to end against a real local server.

These runs use ``runpytest_subprocess``: an inline run would import parts of httpx and
httpcore lazily inside pytester's sys.modules snapshot, which removes them afterwards,
and later tests would then mix two copies of their exception classes.
"""

from __future__ import annotations

import json
import re
import threading
from pathlib import Path

import pytest

from pytest_context_bench.testing import FakeLLM, Reply

QUESTION = re.compile(r"capital of country (\d+)")


def _flaky_handler() -> tuple:
    """Answers right; every 5th request first fails (20% transient failures)."""
    lock = threading.Lock()
    count = {"n": 0, "failed": 0}

    def handler(request):
        with lock:
            count["n"] += 1
            n = count["n"]
        if n % 5 == 0:
            with lock:
                count["failed"] += 1
            if n % 10 == 0:
                return Reply(status=429, retry_after="0", text="slow down")
            return Reply(status=503, retry_after="0", text="overloaded")
        body = request.json or {}
        if body.get("model") == "judge-model":
            return Reply(text="Rating: 5")
        text = " ".join(str(m.get("content", "")) for m in body.get("messages", []))
        match = QUESTION.search(text)
        return Reply(text=f"city {match.group(1)}" if match else "no idea", usage={"prompt_tokens": 11, "completion_tokens": 2})

    return handler, count


def test_proxy_and_judge_survive_transient_failures_under_xdist(pytester: pytest.Pytester) -> None:
    # 100 examples: 200 calls that succeed, every fifth request failing first (a
    # 503, or a 429 every tenth), on both workers.
    rows = [
        {"id": f"q-{i}", "context": f"Country {i} has city {i} as its capital.",
         "question": f"What is the capital of country {i}?", "answer": f"city {i}"}
        for i in range(1, 101)
    ]
    pytester.makefile(".jsonl", qa="\n".join(json.dumps(r) for r in rows) + "\n")
    handler, count = _flaky_handler()
    out = pytester.path / "out.json"
    with FakeLLM(handler=handler) as llm:
        result = pytester.runpytest_subprocess(
            "-n", "2",
            "--ctxbench-dataset=qa.jsonl",
            f"--ctxbench-proxy={llm.base_url}/v1",
            "--ctxbench-proxy-name=local",
            "--ctxbench-model=m",
            f"--ctxbench-judge-url={llm.base_url}",
            "--ctxbench-judge-model=judge-model",
            f"--ctxbench-json={out}",
            "--ctxbench-min-pass-rate=1",
        )
    assert result.ret == 0, result.stdout.str()
    # The met gate is listed in the gates section, not counted (docs/gating.md).
    result.assert_outcomes(passed=100)
    assert count["failed"] >= 40  # 200 successful calls + retries: a fifth failed first
    doc = json.loads(out.read_text())
    summary = doc["summary"]["local"]
    assert summary["pass_rate"] == 1.0 and summary["error_rate"] == 0.0
    assert all(r["scores"]["judge_score"] == 1.0 for r in doc["rows"])
    assert all(r["output_tokens"] == 11 and r["metadata"]["completion_tokens"] == 2 for r in doc["rows"])


def test_unreachable_endpoint_is_an_error_of_each_example_naming_the_url(pytester: pytest.Pytester) -> None:
    pytester.makefile(".jsonl", qa='{"id": 1, "question": "q?", "answer": "a"}\n')
    with FakeLLM() as llm:
        url = llm.base_url
    # The server is stopped: connections are refused. One retry (a refused connection
    # is retried; the default 3 back off 1 + 2 + 4 s, waited out for nothing here).
    result = pytester.runpytest_subprocess(
        "--ctxbench-dataset=qa.jsonl", f"--ctxbench-proxy={url}", "--ctxbench-proxy-name=gone",
        "--ctxbench-model=m", "--ctxbench-proxy-retries=1",
    )
    assert result.ret == 1
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines([f"*LLMError*{url}*"])


def test_proxy_option_errors(pytester: pytest.Pytester) -> None:
    pytester.makefile(".jsonl", qa='{"id": 1, "question": "q?", "answer": "a"}\n')
    bad = pytester.runpytest_subprocess("--ctxbench-dataset=qa.jsonl", "--ctxbench-proxy=localhost:7878")
    assert bad.ret == pytest.ExitCode.USAGE_ERROR
    bad.stderr.fnmatch_lines(["ERROR: --ctxbench-proxy must be an http(s) URL such as http://localhost:7878, given: 'localhost:7878'"])
    names = pytester.runpytest_subprocess(
        "--ctxbench-dataset=qa.jsonl", "--ctxbench-proxy=http://h:1", "--ctxbench-proxy=http://h:2", "--ctxbench-proxy-name=a"
    )
    assert names.ret == pytest.ExitCode.USAGE_ERROR
    names.stderr.fnmatch_lines(["ERROR: --ctxbench-proxy-name was given 1 time(s) for 2 --ctxbench-proxy*"])
    judge = pytester.runpytest_subprocess("--ctxbench-dataset=qa.jsonl", "--ctxbench-proxy=http://h:1", "--ctxbench-judge-model=x")
    assert judge.ret == pytest.ExitCode.USAGE_ERROR
    judge.stderr.fnmatch_lines(["ERROR: --ctxbench-judge-model needs --ctxbench-judge-url*"])


def test_a_baseline_on_one_port_matches_a_proxy_on_another(pytester: pytest.Pytester) -> None:
    rows = [
        {"id": f"q-{i}", "context": f"Country {i} has city {i} as its capital.",
         "question": f"What is the capital of country {i}?", "answer": f"city {i}"}
        for i in range(1, 9)
    ]
    pytester.makefile(".jsonl", qa="\n".join(json.dumps(r) for r in rows) + "\n")
    handler, _ = _flaky_handler()
    # Both servers up at once: two distinct ephemeral ports.
    with FakeLLM(handler=handler) as first, FakeLLM(handler=handler) as second:
        assert second.base_url != first.base_url
        saved = pytester.runpytest_subprocess(
            "--ctxbench-dataset=qa.jsonl", f"--ctxbench-proxy={first.base_url}",
            "--ctxbench-model=m", "--ctxbench-save-baseline=base.json",
        )
        assert saved.ret == 0, saved.stdout.str()
        result = pytester.runpytest_subprocess(
            "--ctxbench-dataset=qa.jsonl", f"--ctxbench-proxy={second.base_url}",
            "--ctxbench-model=m", "--ctxbench-baseline=base.json",
            "--ctxbench-max-drop=pass_rate:0.1",
        )
    assert result.ret == 0, result.stdout.str()
    result.stdout.fnmatch_lines(["openai_proxy_m@127.0.0.1: 8 examples matched", "baseline gates: passed"])


def test_two_proxies_with_one_model_and_host_need_names(pytester: pytest.Pytester) -> None:
    pytester.makefile(".jsonl", qa='{"id": 1, "question": "q?", "answer": "a"}\n')
    result = pytester.runpytest_subprocess(
        "--ctxbench-dataset=qa.jsonl", "--ctxbench-proxy=http://h:1", "--ctxbench-proxy=http://h:2",
        "--ctxbench-model=gpt-4o-mini",
    )
    assert result.ret == 4
    result.stderr.fnmatch_lines(
        ["ERROR: *two systems are named 'openai_proxy_gpt-4o-mini@h'* name each with --ctxbench-proxy-name, in order."]
    )


# ---- no model nobody chose (issue 39) ------------------------------------------------


@pytest.mark.inner_run
def test_without_a_model_the_endpoints_only_model_is_sent_and_said(pytester: pytest.Pytester) -> None:
    pytester.makefile(".jsonl", qa='{"id": 1, "question": "q?", "answer": "OK"}\n')
    with FakeLLM(models=["local-llama"]) as llm, FakeLLM(models=["judge-7b"]) as judge:
        judge.set_handler(lambda request: "Score: 5")
        result = pytester.runpytest_subprocess(
            "-n", "2", "--ctxbench-dataset=qa.jsonl", f"--ctxbench-proxy={llm.base_url}",
            f"--ctxbench-judge-url={judge.base_url}",
        )
        asked = [r.json.get("model") for r in llm.requests]
        judged = [r.json.get("model") for r in judge.requests]
        listings = (llm.model_listings, judge.model_listings)
    assert result.ret == 0, result.stdout.str() + result.stderr.str()
    assert asked == ["local-llama"] and judged == ["judge-7b"]
    # Asked once, by the controller: the workers take its answer.
    assert listings == (1, 1)
    result.stdout.fnmatch_lines([
        "*model 'local-llama' at http://127.0.0.1:*: the only model its /v1/models lists*",
        "*model 'judge-7b' at http://127.0.0.1:*",
    ])


@pytest.mark.inner_run
@pytest.mark.parametrize(
    "models, said",
    [
        (["a", "b\x1b[31m"], "lists 2 models ('a', 'b\\x1b[31m'); name the model with --ctxbench-model=MODEL."),
        ([], "lists no model; name the model with --ctxbench-model=MODEL."),
    ],
)
def test_an_endpoint_with_several_models_or_none_needs_the_option(
    pytester: pytest.Pytester, models: list[str], said: str
) -> None:
    pytester.makefile(".jsonl", qa='{"id": 1, "question": "q?", "answer": "OK"}\n')
    with FakeLLM(models=models) as llm:
        result = pytester.runpytest_subprocess("--ctxbench-dataset=qa.jsonl", f"--ctxbench-proxy={llm.base_url}")
        sent = len(llm.requests)
    assert result.ret == 4 and sent == 0
    result.stderr.fnmatch_lines([f"ERROR: --ctxbench-proxy http://127.0.0.1:*: no --ctxbench-model was given, and the endpoint {said}"])
    assert "\x1b" not in result.stderr.str()


def test_endpoint_model_reads_openai_and_ollama_lists_and_refuses_the_rest() -> None:
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
    import threading

    from pytest_context_bench.errors import ConfigError
    from pytest_context_bench.systems.models import endpoint_model

    answers = {
        "/a/v1/models": (200, b'{"object": "list", "data": [{"id": "gpt-4o-mini"}]}'),
        "/b/v1/models": (200, b'{"models": [{"name": "llama3:8b"}]}'),
        "/c/v1/models": (200, b"<html>not json</html>"),
        "/d/v1/models": (404, b'{"error": "no"}'),
        "/e/v1/models": (200, b'{"data": [{"id": "x"}, {"id": "x"}]}'),  # one model, twice
        "/f/v1/models": (200, b'{"data": [' + b'{"id": "m"},' * 400_000 + b'{"id": "z"}]}'),  # 4.4 MB
        "/g/v1/models": (200, b"[" * 100_000 + b"]" * 100_000),  # deeper than Python parses
    }

    class H(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            return

        def do_GET(self) -> None:
            status, body = answers.get(self.path, (404, b"{}"))
            self.send_response(status)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = ThreadingHTTPServer(("127.0.0.1", 0), H)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        ask = lambda path: endpoint_model(base + path, flag="--m", url_flag="--u")  # noqa: E731
        assert ask("/a") == "gpt-4o-mini"
        assert ask("/b/v1") == "llama3:8b"
        assert ask("/e") == "x"
        with pytest.raises(ConfigError, match=r"did not answer OpenAI's list of models; name the model with --m=MODEL"):
            ask("/c")
        with pytest.raises(ConfigError, match=r"GET .*/d/v1/models answered 404"):
            ask("/d")
        with pytest.raises(ConfigError, match=r"answered more than 4,194,304 bytes"):
            ask("/f")
        with pytest.raises(ConfigError, match=r"did not answer OpenAI's list of models"):
            ask("/g")
    finally:
        server.shutdown()
        server.server_close()


def test_anthropic_given_an_httpx_client_is_told_the_flavor(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """anthropic 2.x refuses our httpx.Client with its own TypeError: the error that
    reaches the user (loading the System, or a row's error) names the fix."""
    pytest.importorskip("anthropic")
    from pytest_context_bench.errors import SystemLoadError, error_record
    from pytest_context_bench.importing import load_system

    (tmp_path / "claude_app.py").write_text(
        "import anthropic\n"
        "from pytest_context_bench import http_client\n"
        "class App:\n"
        "    name = 'claude'\n"
        "    def __init__(self):\n"
        "        self.client = anthropic.Anthropic(api_key='k', http_client=http_client())\n"
        "    def process(self, example):\n"
        "        return example\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(SystemLoadError) as raised:
        load_system("claude_app:App")
    said = str(raised.value)
    assert "building system 'claude_app:App' raised TypeError" in said
    assert 'pass http_client(flavor="httpx2") from pytest_context_bench' in said
    try:
        import anthropic
        from pytest_context_bench import http_client

        anthropic.Anthropic(api_key="k", http_client=http_client())
    except TypeError as exc:
        assert 'http_client(flavor="httpx2")' in error_record(exc, "system")["message"]
    # Any other error gets no hint.
    assert "flavor" not in error_record(TypeError("http_client must be callable"), "system")["message"]
