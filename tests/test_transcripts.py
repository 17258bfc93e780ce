"""Call records on rows (issue 24): each LLM call a row's System or its judges made
through the client, the proxy or ``http_client()``, against real loopback servers.

The plugin runs are subprocesses (``runpytest_subprocess``), as in test_plugin_llm.py:
an inline run would import parts of httpx inside pytester's sys.modules snapshot.
"""

from __future__ import annotations

import asyncio
import json
import re
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from pytest_context_bench import async_http_client, http_client
from pytest_context_bench.calls import (
    CallScope,
    call_scope,
    evaluator_source,
    transcripts_mode,
)
from pytest_context_bench.cli import main as ctxbench_main
from pytest_context_bench.engine import attach_usage, run_example
from pytest_context_bench.evaluators.judges import LLMJudge
from pytest_context_bench.llm import LLMClient, LLMError
from pytest_context_bench.report.json_report import load_report
from pytest_context_bench.results import EvalRow
from pytest_context_bench.testing import FakeLLM, Reply
from pytest_context_bench.transcripts import (
    MESSAGE_CAP,
    RECORD_TEXT_CAP,
    TEXT_CAP,
    clip,
)

KEY = "sk-transcript-test-0123456789"


@pytest.fixture
def recording() -> Iterator[None]:
    """Records made in this process (what the plugin sets for a run)."""
    before = transcripts_mode("all")
    try:
        yield
    finally:
        transcripts_mode(before)


def _scope() -> CallScope:
    return CallScope(system="s", dataset="d", example_id="1")


def _records(scope: CallScope) -> list[dict[str, Any]]:
    row = EvalRow("s", "1", {}, 0, 0)
    attach_usage(row, scope)
    return row.calls


# --- the record of one call ---------------------------------------------------------


def test_a_client_call_is_one_record_with_its_retries_and_no_secret(
    recording: None,
) -> None:
    echo = Reply(
        text=f"sure, your key is {KEY}",
        usage={"prompt_tokens": 9, "completion_tokens": 4},
    )
    with FakeLLM([Reply(status=429, retry_after="0", text="slow down"), echo]) as llm:
        client = LLMClient(
            f"{llm.base_url}/v1?api-version=7&api-key={KEY}",
            api_key=KEY,
            retry_base_delay=0.01,
        )
        scope = _scope()
        with call_scope(scope):
            client.chat(
                [
                    {"role": "system", "content": f"Never say {KEY}."},
                    {
                        "role": "user",
                        "content": [
                            {"type": "text", "text": "What is in the picture?"},
                            {
                                "type": "image_url",
                                "image_url": {"url": "data:image/png;base64,AAAA"},
                            },
                        ],
                    },
                ],
                "gpt-test",
                temperature=0.25,
                max_tokens=32,
                user="someone@example.com",
            )
        client.close()
        # The key was sent, in its header only.
        assert llm.requests[0].headers["authorization"] == f"Bearer {KEY}"
        base = llm.base_url
    (record,) = _records(scope)
    assert record["source"] == "system"
    assert record["url"] == f"{base}/v1/chat/completions?api-version=7"
    assert record["model"] == "gpt-test"
    assert record["params"] == {"temperature": 0.25, "max_tokens": 32}  # no "user"
    assert record["messages"] == [
        {"role": "system", "text": "Never say ***."},
        {"role": "user", "text": "What is in the picture?\n[image]"},
    ]
    assert record["reply"] == "sure, your key is ***"
    assert record["finish_reason"] == "stop"
    assert record["usage"] == {"prompt_tokens": 9, "completion_tokens": 4}
    assert record["cache"] == "off"
    assert record["attempts"] == [
        {"status": 429, "error": "HTTP 429"},
        {"status": 200, "error": None},
    ]
    assert record["error"] is None
    assert record["latency"] > 0
    text = json.dumps(record)
    assert KEY not in text and "base64" not in text
    assert "authorization" not in text.lower() and "bearer" not in text.lower()


def test_a_failed_call_says_why(recording: None) -> None:
    tool_call = {
        "choices": [
            {
                "message": {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {"type": "function", "function": {"name": "lookup"}}
                    ],
                },
                "finish_reason": "tool_calls",
            }
        ]
    }
    with FakeLLM(
        [Reply(status=503, text="down")] * 2 + [Reply(json_body=tool_call)]
    ) as llm:
        client = LLMClient(
            llm.base_url, api_key="", max_retries=1, retry_base_delay=0.01
        )
        scope = _scope()
        with call_scope(scope):
            for _ in range(2):
                with pytest.raises(LLMError):
                    client.chat([{"role": "user", "content": "hi"}], "m")
        client.close()
    gave_up, no_text = _records(scope)
    assert [a["status"] for a in gave_up["attempts"]] == [503, 503]
    assert gave_up["reply"] is None
    assert re.search(r"failed: 2 attempts .*last: HTTP 503", gave_up["error"])
    assert no_text["attempts"] == [{"status": 200, "error": None}]
    assert no_text["reply"] == "[tool call: lookup()]"  # with its (no) arguments
    assert no_text["finish_reason"] == "tool_calls"
    assert "returned no text" in no_text["error"]


def test_texts_messages_and_records_are_capped(recording: None) -> None:
    long = "".join(chr(ord("a") + i % 26) for i in range(TEXT_CAP * 3 + 7))
    with FakeLLM(
        handler=lambda r: Reply(
            text=long if r.messages[0]["content"] == "long" else "ok"
        )
    ) as llm:
        client = LLMClient(llm.base_url, api_key="")
        scope = _scope()
        with call_scope(scope):
            client.chat([{"role": "user", "content": "long"}], "m")
            client.chat([{"role": "user", "content": f"m{i}"} for i in range(100)], "m")
            # 10 long messages share the record's 16,000 characters
            client.chat([{"role": "user", "content": f"{i}" + long} for i in range(10)], "m")
            for i in range(22):
                client.chat([{"role": "user", "content": f"call {i}"}], "m")
        client.close()
    row = EvalRow("s", "1", {}, 0, 0)
    attach_usage(row, scope)
    # 25 calls: the first 10 and the last 10 kept, 5 counted.
    assert len(row.calls) == 20 and row.calls_omitted == 5
    assert [c["messages"][0]["text"] for c in row.calls[10:]] == [
        f"call {i}" for i in range(12, 22)
    ]
    shared = row.calls[2]["messages"]
    share = RECORD_TEXT_CAP // 10
    assert [m["text"] for m in shared] == [
        clip(f"{i}" + long, share) for i in range(10)
    ]
    assert sum(len(m["text"]) for m in shared) <= RECORD_TEXT_CAP + 10 * 40
    reply = row.calls[0]["reply"]
    omitted = len(long) - TEXT_CAP
    assert reply == (
        long[: TEXT_CAP // 2]
        + f"… [{omitted:,} characters omitted] …"
        + long[-(TEXT_CAP // 2) :]
    )
    messages = row.calls[1]["messages"]
    assert len(messages) == MESSAGE_CAP
    assert messages[MESSAGE_CAP // 4] == {
        "role": "omitted",
        "text": f"[{100 - MESSAGE_CAP + 1} messages omitted]",
    }
    assert messages[0]["text"] == "m0" and messages[-1]["text"] == "m99"
    # The cap survives the row's trip through the JSON report and back.
    back = EvalRow.from_dict(json.loads(json.dumps(row.to_dict())))
    assert back.calls == row.calls and back.calls_omitted == 5
    assert clip("x" * 10, 4) == "xx… [6 characters omitted] …xx"


def test_http_client_sync_and_async_retries_and_failures(recording: None) -> None:
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "seed": 3}
    with FakeLLM([Reply(status=500, text="oops"), "first", "second"]) as llm:
        scope = _scope()
        url = f"{llm.base_url}/v1/chat/completions"
        with call_scope(scope), http_client(cache=None) as client:
            # An SDK's retry: the same request again after a 5xx is the same call.
            assert client.post(url, json=body).status_code == 500
            assert (
                client.post(url, json=body).json()["choices"][0]["message"]["content"]
                == "first"
            )

            async def call() -> str:
                with evaluator_source("my_judge"):
                    async with async_http_client(cache=None) as aclient:
                        reply = await aclient.post(url, json=body)
                return str(reply.json()["choices"][0]["message"]["content"])

            assert asyncio.run(call()) == "second"
            with socket.socket() as s:  # a port nobody listens on
                s.bind(("127.0.0.1", 0))
                port = s.getsockname()[1]
            with pytest.raises(httpx.ConnectError):
                client.post(f"http://127.0.0.1:{port}/v1/chat/completions", json=body)
    retried, awaited, refused = _records(scope)
    assert retried["attempts"] == [
        {"status": 500, "error": "HTTP 500"},
        {"status": 200, "error": None},
    ]
    assert retried["reply"] == "first" and retried["params"] == {"seed": 3}
    assert awaited["source"] == "evaluator:my_judge" and awaited["reply"] == "second"
    assert awaited["attempts"] == [{"status": 200, "error": None}]
    assert refused["attempts"][0]["status"] is None
    assert refused["attempts"][0]["error"].startswith("ConnectError")
    assert refused["error"] == refused["attempts"][0]["error"]


def test_no_record_when_transcripts_are_off() -> None:
    before = transcripts_mode("off")
    try:
        with FakeLLM(["ok"]) as llm:
            client = LLMClient(llm.base_url, api_key="")
            scope = _scope()
            with call_scope(scope):
                client.chat([{"role": "user", "content": "hi"}], "m")
            client.close()
    finally:
        transcripts_mode(before)
    assert _records(scope) == []
    assert scope.usage  # the usage is measured all the same


def test_a_row_has_its_systems_and_its_judges_calls(recording: None) -> None:
    def handler(request: Any) -> Reply:
        if request.json["model"] == "judge":
            return Reply(text="Rating: 2")
        return Reply(text="city 9")

    class Asker:
        name = "asker"

        def __init__(self, url: str) -> None:
            self.client = LLMClient(url, api_key="")

        def process(self, example: dict[str, Any]) -> dict[str, Any]:
            reply = self.client.chat(
                [{"role": "user", "content": example["question"]}], "sys"
            )
            return {**example, "response": reply.text}

    with FakeLLM(handler=handler) as llm:
        system = Asker(llm.base_url)
        judge = LLMJudge(llm.base_url, model="judge", api_key="")
        example = {"id": "q1", "question": "Capital of country 1?", "answer": "city 1"}
        row, raised = run_example(system, example, [judge], score_field="judge_score")
        system.client.close()
        judge.client.close()
    assert raised is None
    system_call, judge_call = row.calls
    assert system_call["source"] == "system" and system_call["reply"] == "city 9"
    assert system_call["messages"] == [
        {"role": "user", "text": "Capital of country 1?"}
    ]
    assert judge_call["source"] == "evaluator:llm_judge"
    assert judge_call["model"] == "judge" and judge_call["reply"] == "Rating: 2"
    assert judge_call["params"] == {"temperature": 0, "max_tokens": 16}
    assert "Capital of country 1?" in judge_call["messages"][0]["text"]


# --- the plugin ----------------------------------------------------------------------


def _handler(request: Any) -> Reply:
    """The System answers country i right when i is odd; the judge rates 5 or 1."""
    body = request.json or {}
    text = " ".join(str(m.get("content", "")) for m in body.get("messages", []))
    if body.get("model") == "judge-model":
        return Reply(text="Rating: 1" if "no idea" in text else "Rating: 5")
    match = re.search(r"capital of country (\d+)\?", text)
    i = int(match.group(1)) if match else 0
    return Reply(text=f"city {i}" if i % 2 else "no idea")


def _plugin_run(
    pytester: pytest.Pytester, llm: FakeLLM, out: Path, *args: str
) -> pytest.RunResult:
    return pytester.runpytest_subprocess(
        "--ctxbench-dataset=qa.jsonl",
        f"--ctxbench-proxy={llm.base_url}",
        "--ctxbench-proxy-name=local",
        "--ctxbench-model=m",
        f"--ctxbench-judge-url={llm.base_url}",
        "--ctxbench-judge-model=judge-model",
        "--ctxbench-cache=off",
        f"--ctxbench-json={out}",
        *args,
    )


def test_failing_rows_keep_their_calls_under_xdist_and_through_merge_and_baseline(
    project: pytest.Pytester,
) -> None:
    out = project.path / "out.json"
    with FakeLLM(handler=_handler) as llm:
        result = _plugin_run(
            project,
            llm,
            out,
            "-n",
            "2",
            "--ctxbench-save-baseline=base.json",
            "--ctxbench-shard=1/1",  # a shard of its own, for ctxbench merge
        )
    assert result.ret == 0, result.stdout.str()
    doc = load_report(out)  # valid against the schema, records included
    failing = [r for r in doc["rows"] if r["status"] != "pass"]
    assert [r["example_id"] for r in failing] == ["q-2", "q-4", "q-6"]
    for row in doc["rows"]:
        if row["status"] == "pass":
            assert "calls" not in row, row
            continue
        system, judge = row["calls"]
        n = row["example_id"][2:]
        assert system["source"] == "system" and system["model"] == "m"
        assert system["messages"][-1] == {
            "role": "user",
            "text": f"What is the capital of country {n}?",
        }
        assert system["reply"] == "no idea" and system["cache"] == "off"
        assert (
            judge["source"] == "evaluator:llm_judge" and judge["reply"] == "Rating: 1"
        )
        assert "calls_omitted" not in row
    # ctxbench merge keeps them; a baseline does not (it is for reviewing scores).
    assert (
        ctxbench_main(["merge", str(out), "--json", str(project.path / "m.json")]) == 0
    )
    merged = load_report(project.path / "m.json")
    assert [r.get("calls") for r in merged["rows"]] == [
        r.get("calls") for r in doc["rows"]
    ]
    baseline = read(project.path / "base.json")
    assert len(baseline["rows"]) == 6
    assert not [r for r in baseline["rows"] if "calls" in r or "calls_omitted" in r]
    # A report written before call records existed still loads.
    for row in doc["rows"]:
        row.pop("calls", None)
    old = project.path / "old.json"
    old.write_text(json.dumps(doc))
    assert len(load_report(old)["rows"]) == 6


def test_transcripts_all_and_off_from_ini_and_command_line(
    project: pytest.Pytester,
) -> None:
    project.makeini("[pytest]\npythonpath = .\nctxbench_transcripts = all\n")
    every, none = project.path / "all.json", project.path / "off.json"
    with FakeLLM(handler=_handler) as llm:
        # With a call budget, the judges are awaited right after the System's call
        # (running.judges_ahead): their calls are still theirs.
        first = _plugin_run(project, llm, every, "--ctxbench-concurrency=2")
        second = _plugin_run(project, llm, none, "--ctxbench-transcripts=off")
    assert first.ret == 0 and second.ret == 0, first.stdout.str() + second.stdout.str()
    rows = read(every)["rows"]
    assert [len(r["calls"]) for r in rows] == [2] * 6
    for row in rows:
        sources = [c["source"] for c in row["calls"]]
        assert sources == ["system", "evaluator:llm_judge"], row
    assert all("calls" not in r for r in read(none)["rows"])


def read(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text())


def test_a_bad_transcripts_value_is_a_usage_error(project: pytest.Pytester) -> None:
    bad = project.runpytest(
        "--ctxbench-dataset=qa.jsonl", "--ctxbench-transcripts=some"
    )
    assert bad.ret == pytest.ExitCode.USAGE_ERROR
    bad.stderr.fnmatch_lines(
        [
            "ERROR: --ctxbench-transcripts must be one of failing, all, off, given: 'some'"
        ]
    )
    project.makeini("[pytest]\npythonpath = .\nctxbench_transcripts = every\n")
    ini = project.runpytest("--ctxbench-dataset=qa.jsonl")
    assert ini.ret == pytest.ExitCode.USAGE_ERROR
    ini.stderr.fnmatch_lines(
        [
            (
                "ERROR: ini option 'ctxbench_transcripts' must be one of failing, all,"
                " off, given: 'every'"
            )
        ]
    )


def test_cache_hits_replay_misses_and_streams(recording: None, tmp_path: Path) -> None:
    from pytest_context_bench.cache import CacheMiss, LLMCache
    from pytest_context_bench.transports import MISS_EXTENSION

    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    stream = Reply(
        body='data: {"choices": [{"delta": {"content": "hi"}}]}\n\ndata: [DONE]\n\n',
        headers={"Content-Type": "text/event-stream"},
    )
    with FakeLLM(["cached", stream]) as llm:
        url = f"{llm.base_url}/v1/chat/completions"
        scope = _scope()
        once = LLMCache.in_dir(tmp_path, "once")
        with call_scope(scope), http_client(cache=once) as client:
            client.post(url, json=body)  # sent and stored
            client.post(url, json=body)  # replayed
            client.post(url, json={**body, "stream": True})
        with (
            call_scope(scope),
            http_client(cache=LLMCache.in_dir(tmp_path / "empty", "replay")) as client,
        ):
            answer = client.post(url, json={**body, "seed": 1})
        assert answer.status_code == 404  # final: SDKs do not retry it
        assert isinstance(answer.extensions[MISS_EXTENSION], CacheMiss)
        assert len(llm.requests) == 2
    sent, replayed, streamed, missed = _records(scope)
    assert (sent["cache"], sent["reply"]) == ("miss", "cached")
    assert (replayed["cache"], replayed["reply"]) == ("hit", "cached")
    assert replayed["attempts"] == [{"status": 200, "error": None}]
    assert replayed["usage"] == sent["usage"] and sent["usage"]
    # a stream read to its end: stored, and its record holds the deltas' text
    assert streamed["cache"] == "miss" and streamed["params"] == {"stream": True}
    assert streamed["reply"] == "hi"
    assert missed["cache"] == "miss" and missed["attempts"][0]["status"] is None
    assert "cache miss in replay mode" in missed["error"]
