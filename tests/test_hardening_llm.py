"""A 200 reply without text is an LLMError saying why; the proxy's and the judge's
timeout and retries are options."""

from __future__ import annotations

import json

import pytest

from pytest_context_bench.evaluators import LLMJudge
from pytest_context_bench.llm import LLMClient, LLMError
from pytest_context_bench.systems import OpenAIProxy
from pytest_context_bench.testing import FakeLLM, Reply


def _null_reply(**message: object) -> Reply:
    return Reply(
        json_body={
            "id": "x",
            "object": "chat.completion",
            "choices": [
                {
                    "index": 0,
                    "finish_reason": message.pop("finish_reason", "stop"),
                    "message": {"role": "assistant", "content": None, **message},
                }
            ],
        }
    )


NULL_REPLIES = [
    (
        _null_reply(refusal="I can't help with that."),
        'the model refused: "I can\'t help with that."',
    ),
    (
        _null_reply(
            tool_calls=[
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "search", "arguments": "{}"},
                }
            ],
            finish_reason="tool_calls",
        ),
        "called tool(s) search",
    ),
    (
        _null_reply(function_call={"name": "lookup", "arguments": "{}"}),
        "called function lookup",
    ),
    (
        _null_reply(finish_reason="length"),
        "the reply is empty (finish_reason 'length')",
    ),
]


@pytest.mark.parametrize(("reply", "reason"), NULL_REPLIES)
def test_null_content_is_an_llm_error_saying_why(reply: Reply, reason: str) -> None:
    with FakeLLM() as llm:
        llm.push(reply)
        with pytest.raises(LLMError) as info:
            LLMClient(llm.base_url, max_retries=0).chat(
                [{"role": "user", "content": "q"}], model="m"
            )
    text = str(info.value)
    assert "content is null" in text and reason in text, text
    assert info.value.status == 200


def test_the_proxy_does_not_score_a_refusal_as_an_empty_answer() -> None:
    with FakeLLM() as llm:
        llm.push(NULL_REPLIES[0][0])
        proxy = OpenAIProxy(llm.base_url, "m", max_retries=0)
        with pytest.raises(LLMError, match="refused"):
            proxy.process({"id": "1", "question": "q", "answer": "a"})


def test_the_judge_does_not_read_a_tool_call_as_an_empty_rating() -> None:
    with FakeLLM() as llm:
        llm.push(NULL_REPLIES[1][0])
        judge = LLMJudge(llm.base_url, max_retries=0)
        with pytest.raises(LLMError, match="tool"):
            ex = {"id": "1", "question": "q", "answer": "a"}
            judge.score(ex, {**ex, "response": "a"})


def test_proxy_timeout_and_retries_options(project: pytest.Pytester) -> None:
    with FakeLLM() as llm:
        llm.push(*[Reply("slow", delay=3.0) for _ in range(8)])
        project.runpytest_subprocess(
            "--ctxbench-dataset=qa.jsonl",
            f"--ctxbench-proxy={llm.base_url}",
            "--ctxbench-proxy-timeout=0.2",
            "--ctxbench-proxy-retries=0",
            "--ctxbench-limit=1",
            "--ctxbench-json=r.json",
        )
        sent = len(llm.requests)
    assert sent == 1  # no retry: one attempt only
    rows = json.loads((project.path / "r.json").read_text())["rows"]
    assert rows[0]["status"] == "error"
    assert "1 attempt" in rows[0]["error"]["message"], rows[0]["error"]


def test_judge_timeout_and_retries_options(project: pytest.Pytester) -> None:
    with FakeLLM() as llm:
        llm.push(*[Reply(status=503) for _ in range(8)])
        project.makeini(
            "[pytest]\npythonpath = .\nctxbench_judge_retries = 1\nctxbench_judge_timeout = 5\n"
        )
        project.runpytest_subprocess(
            "--ctxbench-dataset=qa.jsonl",
            "--ctxbench-system=systems:echo",
            f"--ctxbench-judge-url={llm.base_url}",
            "--ctxbench-limit=1",
            "--ctxbench-json=r.json",
        )
        sent = len(llm.requests)
    assert sent == 2  # the first attempt and one retry
    rows = json.loads((project.path / "r.json").read_text())["rows"]
    assert "2 attempts" in rows[0]["error"]["message"], rows[0]["error"]


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (
            ["--ctxbench-proxy-timeout=0"],
            "--ctxbench-proxy-timeout must be a number > 0",
        ),
        (
            ["--ctxbench-proxy-retries=-1"],
            "--ctxbench-proxy-retries must be an integer >= 0",
        ),
        (
            ["--ctxbench-judge-timeout=abc"],
            "--ctxbench-judge-timeout must be a number > 0",
        ),
    ],
)
def test_bad_timeout_and_retries_values(
    project: pytest.Pytester, args: list[str], expected: str
) -> None:
    result = project.runpytest_subprocess(
        "--ctxbench-dataset=qa.jsonl",
        "--ctxbench-proxy=http://127.0.0.1:9",
        "--ctxbench-judge-url=http://127.0.0.1:9",
        *args,
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: {expected}*"])


def test_timeout_without_its_endpoint_is_a_usage_error(
    project: pytest.Pytester,
) -> None:
    result = project.runpytest_subprocess(
        "--ctxbench-dataset=qa.jsonl",
        "--ctxbench-system=systems:echo",
        "--ctxbench-proxy-retries=0",
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["ERROR: --ctxbench-proxy-retries needs --ctxbench-proxy*"]
    )
