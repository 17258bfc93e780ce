"""Issue 35, "tool calls are answers": --ctxbench-proxy sends an example's tools and
returns the model's calls as the row's answer; the cache replays them (and a System's
own multi-step loop) with 0 requests; the views show them, escaped and capped; the
fake endpoint scripts them; a bad ``tools`` field is exit 4 naming the line.

Runs with the proxy are subprocesses, as in test_plugin_llm.py.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys

import httpx
import pytest
from helpers import sigint_default, usage_line

from pytest_context_bench.llm import LLMClient, LLMError, assemble_stream
from pytest_context_bench.systems import OpenAIProxy
from pytest_context_bench.testing import FakeLLM, RecordedRequest, Reply, Script, ScriptError
from pytest_context_bench.tool_use import openai_tools, show_calls, tool_calls_of, tools_problem

LOOKUP = {
    "name": "lookup_order",
    "description": "Find an order by id.",
    "parameters": {"type": "dict", "properties": {"order_id": {"type": "string"}}, "required": ["order_id"]},
}
WRAPPED = {"type": "function", "function": {"name": "add", "parameters": {"type": "object", "properties": {}}}}


def _call(name: str, arguments: object) -> dict:
    return {"name": name, "arguments": arguments}


# -- the shapes ------------------------------------------------------------------------


def test_bare_function_docs_are_wrapped_and_bfcl_types_read_as_json_schema() -> None:
    tools = openai_tools([LOOKUP, WRAPPED, {"name": "f", "parameters": {"x": {"type": "int"}}}])
    assert tools[0] == {
        "type": "function",
        "function": {**LOOKUP, "parameters": {**LOOKUP["parameters"], "type": "object"}},
    }
    assert tools[1] is WRAPPED  # OpenAI's shape is sent as given
    # APIGen's map of arguments becomes an object schema
    assert tools[2]["function"]["parameters"] == {
        "type": "object", "properties": {"x": {"type": "integer"}}}


@pytest.mark.parametrize(
    ("tools", "said"),
    [
        ({"name": "f"}, "field 'tools' must be a list of function schemas"),
        (["f"], "tool 1 of field 'tools' is a string"),
        ([{"type": "retrieval"}], "tool 1 of field 'tools' is an object, not a function schema"),
        ([{"description": "no name"}], "tool 1 of field 'tools' has no function name"),
        ([WRAPPED, {"name": "g", "parameters": ["x"]}], "tool 2 ('g') of field 'tools' has parameters that are a list"),
    ],
)
def test_tools_problem_says_what_is_wrong(tools: object, said: str) -> None:
    assert said in (tools_problem(tools) or "")


def test_tool_calls_of_reads_openai_legacy_and_anthropic_messages() -> None:
    openai = {"tool_calls": [{"id": "c9", "type": "function", "function": {"name": "f", "arguments": "{\"a\": 1}"}}]}
    assert tool_calls_of(openai) == openai["tool_calls"]
    legacy = {"content": None, "function_call": {"name": "f", "arguments": "{}"}}
    assert tool_calls_of(legacy) == [{"id": "call_0", "type": "function", "function": {"name": "f", "arguments": "{}"}}]
    anthropic = {"content": [{"type": "text", "text": "Let me look."},
                             {"type": "tool_use", "id": "toolu_1", "name": "f", "input": {"a": 1}}]}
    assert tool_calls_of(anthropic) == [
        {"id": "toolu_1", "type": "function", "function": {"name": "f", "arguments": "{\"a\": 1}"}}]
    # arguments that are not JSON are kept as the model sent them
    bad = {"tool_calls": [{"function": {"name": "f", "arguments": "{oops"}}]}
    assert tool_calls_of(bad)[0]["function"]["arguments"] == "{oops"
    assert show_calls(tool_calls_of(bad)) == "f({oops)"


def test_show_calls_is_one_capped_line() -> None:
    calls = [{"function": {"name": f"f{i}", "arguments": json.dumps({"x": "y" * 1000})}} for i in range(10_000)]
    shown = show_calls(calls)
    assert shown.startswith('f0({"x": "yyy') and shown.endswith("… and 9,980 more calls")
    assert len(shown) < 5000 and "\n" not in shown


# -- the proxy -------------------------------------------------------------------------


def test_the_proxy_sends_tools_and_returns_the_calls_as_the_answer() -> None:
    reply = Reply(tool_calls=[_call("lookup_order", {"order_id": "A17"})])
    with FakeLLM([reply, Reply(text="Let me check.", tool_calls=[_call("lookup_order", "{oops")])]) as llm:
        proxy = OpenAIProxy(llm.base_url, "m", max_retries=0)
        example = {"id": "1", "question": "Where is A17?", "tools": [LOOKUP], "tool_choice": "required"}
        out = proxy.process(example)
        sent = llm.requests[0].json
        again = proxy.process({"id": "2", "question": "q", "tool_calls": ["not the model's"]})
    assert sent["tools"] == openai_tools([LOOKUP]) and sent["tool_choice"] == "required"
    assert out["response"] == ""
    assert out["tool_calls"] == [
        {"id": "call_0", "type": "function", "function": {"name": "lookup_order", "arguments": '{"order_id": "A17"}'}}]
    # text kept beside the calls; arguments that are not JSON are the model's answer too
    assert again["response"] == "Let me check."
    assert again["tool_calls"][0]["function"]["arguments"] == "{oops"
    assert "tools" not in llm.requests[1].json  # the example sent none


def test_a_text_reply_carries_no_tool_calls_even_if_the_example_had_the_field() -> None:
    with FakeLLM(["Paris"]) as llm:
        out = OpenAIProxy(llm.base_url, "m", max_retries=0).process(
            {"id": "1", "question": "q", "tool_calls": [{"name": "reference"}]})
    assert out["response"] == "Paris" and "tool_calls" not in out


def test_a_streamed_tool_call_is_assembled_from_its_deltas() -> None:
    calls = [_call("lookup_order", {"order_id": "A17"}), _call("add", {"a": 1, "b": 2})]
    with FakeLLM([Reply(tool_calls=calls)]) as llm:
        proxy = OpenAIProxy(llm.base_url, "m", max_retries=0, extra_body={"stream": True})
        out = proxy.process({"id": "1", "question": "q", "tools": [LOOKUP]})
    assert [c["function"] for c in out["tool_calls"]] == [
        {"name": "lookup_order", "arguments": '{"order_id": "A17"}'},
        {"name": "add", "arguments": '{"a": 1, "b": 2}'},
    ]
    assert [c["id"] for c in out["tool_calls"]] == ["call_0", "call_1"]


def test_assemble_stream_joins_split_names_and_arguments_by_index() -> None:
    def event(delta: dict) -> str:
        return "data: " + json.dumps({"choices": [{"index": 0, "delta": delta}]}) + "\n\n"

    text = "".join([
        event({"tool_calls": [{"index": 1, "id": "b", "function": {"name": "g", "arguments": ""}}]}),
        event({"tool_calls": [{"index": 0, "id": "a", "function": {"name": "look", "arguments": "{\"x\""}}]}),
        event({"tool_calls": [{"index": 0, "function": {"name": "up", "arguments": ": 1}"}}]}),
        "data: [DONE]\n\n",
    ])
    message = assemble_stream(text)["choices"][0]["message"]  # type: ignore[index]
    assert message["content"] is None
    assert message["tool_calls"] == [
        {"id": "a", "type": "function", "function": {"name": "lookup", "arguments": '{"x": 1}'}},
        {"id": "b", "type": "function", "function": {"name": "g", "arguments": ""}},
    ]


def test_a_judge_still_needs_text() -> None:
    with FakeLLM([Reply(tool_calls=[_call("f", {})])]) as llm:
        with pytest.raises(LLMError, match="called tool"):
            LLMClient(llm.base_url, max_retries=0).chat([{"role": "user", "content": "q"}], "m")


def test_ten_thousand_tool_calls_are_one_answer() -> None:
    calls = [_call(f"f{i}", {"i": i}) for i in range(10_000)]
    with FakeLLM([Reply(tool_calls=calls)]) as llm:
        out = OpenAIProxy(llm.base_url, "m", max_retries=0).process({"id": "1", "question": "q"})
    assert len(out["tool_calls"]) == 10_000
    assert out["tool_calls"][-1]["function"] == {"name": "f9999", "arguments": '{"i": 9999}'}


# -- in a run: rows, views, replay ------------------------------------------------------

EVIL = "lookup\x1b[2J\u202eorder"


def _handler(request: RecordedRequest) -> Reply:
    question = request.messages[-1]["content"]
    if "evil" in question:
        return Reply(tool_calls=[_call(EVIL, "{\"id\": \"\x1b[31m\"}")])
    if "plain" in question:
        return Reply(text="just text")
    n = question.rsplit(" ", 1)[-1]
    return Reply(tool_calls=[_call("lookup_order", {"order_id": n})])


def _dataset(n: int) -> str:
    rows = [{"id": f"q{i}", "question": f"Where is order {i}", "answer": f"order {i}", "tools": [LOOKUP]}
            for i in range(n)]
    rows.append({"id": "evil", "question": "evil", "answer": "x", "tools": [LOOKUP]})
    rows.append({"id": "plain", "question": "plain", "answer": "just text"})
    return "".join(json.dumps(r) + "\n" for r in rows)


def _run(pytester: pytest.Pytester, llm: FakeLLM, *args: str) -> pytest.RunResult:
    return pytester.runpytest_subprocess(
        "-p", "no:randomly", "--ctxbench-dataset=orders.jsonl", f"--ctxbench-proxy={llm.base_url}",
        "--ctxbench-proxy-name=local", "--ctxbench-model=m", "--ctxbench-json=out.json",
        "--ctxbench-markdown=out.md", "--ctxbench-html=out.html", *args)


def _rows(pytester: pytest.Pytester) -> dict[str, dict]:
    doc = json.loads((pytester.path / "out.json").read_text())
    return {r["example_id"]: {k: r.get(k) for k in ("status", "scores", "response", "tool_calls")} for r in doc["rows"]}


def test_tool_call_rows_replay_under_xdist_with_zero_requests_and_their_calls_are_recorded(
    pytester: pytest.Pytester,
) -> None:
    (pytester.path / "orders.jsonl").write_text(_dataset(6))
    with FakeLLM(handler=_handler) as llm:
        first = _run(pytester, llm, "--ctxbench-cache=once", "--ctxbench-transcripts=all")
        assert first.ret in (0, 1), first.stdout.str() + first.stderr.str()
        sent = len(llm.requests)
        once = _rows(pytester)
        # the call records show each call and its arguments
        doc = json.loads((pytester.path / "out.json").read_text())
        calls = {r["example_id"]: r["calls"] for r in doc["rows"]}
        assert calls["q0"][0]["reply"] == '[tool call: lookup_order({"order_id": "0"})]'
        assert calls["evil"][0]["reply"].startswith("[tool call: lookup")
        replay = _run(pytester, llm, "-n", "2", "--ctxbench-cache=replay")
        assert len(llm.requests) == sent == 8  # replay sent nothing
    assert replay.ret == first.ret
    assert _rows(pytester) == once
    assert once["q3"]["tool_calls"] == 'lookup_order({"order_id": "3"})'
    assert once["q3"]["response"] == "" and once["q3"]["status"] != "error"
    assert "tool_calls" not in once["plain"] or once["plain"]["tool_calls"] is None
    replay.stdout.fnmatch_lines(["LLM cache replay*: 8 hits, 0 misses, 0 calls sent*"])
    # the "below threshold" line names the calls, escaped
    out = replay.stdout.str()
    assert "tool calls 'lookup_order({\"order_id\": \"3\"})'" in out, out
    assert "\x1b[2J" not in out and "\u202e" not in out and "\x1b[31m" not in out
    markdown = (pytester.path / "out.md").read_text()
    html = (pytester.path / "out.html").read_text()
    assert "\\[tool calls\\] lookup" in markdown and "\x1b" not in markdown and "\u202e" not in markdown
    assert "tool calls: " in html


AGENT = '''
import json
import pytest
from pytest_context_bench import http_client

TOOLS = [{"type": "function", "function": {"name": "lookup_order", "parameters": {"type": "object"}}}]


class Agent:
    name = "agent"

    def __init__(self, url):
        self.url = url + "/v1/chat/completions"
        self.http = http_client()

    def process(self, example):
        messages = [{"role": "user", "content": example["question"]}]
        trajectory = list(messages)
        for _ in range(4):
            reply = self.http.post(self.url, json={"model": "m", "messages": messages, "tools": TOOLS}).json()
            message = reply["choices"][0]["message"]
            messages.append(message)
            trajectory.append(message)
            if not message.get("tool_calls"):
                return {**example, "response": message["content"], "trajectory": trajectory}
            for call in message["tool_calls"]:
                args = json.loads(call["function"]["arguments"])
                result = {"role": "tool", "tool_call_id": call["id"],
                          "content": json.dumps({"order_id": args["order_id"], "status": "shipped"})}
                messages.append(result)
                trajectory.append(result)
        raise RuntimeError("too many steps")


@pytest.fixture(scope="session")
def ctxbench_system():
    return Agent("{url}")
'''


def test_a_multi_step_loop_through_http_client_replays_with_zero_requests(pytester: pytest.Pytester) -> None:
    script = Script([
        {"match": "shipped", "role": "tool", "reply": "It has shipped."},
        {"regex": r"order (\w+)", "tool_calls": [_call("lookup_order", {"order_id": "A17"})]},
    ])
    rows = [{"id": f"q{i}", "question": f"Where is order A{i}?", "answer": "It has shipped."} for i in range(4)]
    (pytester.path / "agent.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    with FakeLLM(handler=script) as llm:
        pytester.makeconftest(AGENT.replace("{url}", llm.base_url))
        args = ["-p", "no:randomly", "--ctxbench-dataset=agent.jsonl", "--ctxbench-json=out.json"]
        first = pytester.runpytest_subprocess(*args)
        assert first.ret == 0, first.stdout.str() + first.stderr.str()
        assert len(llm.requests) == 8  # two steps per example
        second = pytester.runpytest_subprocess(*args, "-n", "2", "--ctxbench-cache=replay")
        assert second.ret == 0, second.stdout.str() + second.stderr.str()
        assert len(llm.requests) == 8
    assert script.hits == [4, 4]
    second.stdout.fnmatch_lines(["LLM cache replay*: 8 hits, 0 misses, 0 calls sent*"])


# -- bad input: exit 4 naming the line ---------------------------------------------------


@pytest.mark.parametrize(
    ("value", "said"),
    [
        ('"tools": {"name": "f"}', "field 'tools' must be a list of function schemas"),
        ('"tools": ["lookup"]', "field 'tools[0]' must be a function schema (an object with a 'name'), got the string"),
        ('"tools": [{"name": "f", "parameters": "x"}]', "field 'tools[0].parameters' must be an object (a JSON Schema)"),
        ('"tools": [], "tool_choice": "always"', "field 'tool_choice' must be 'auto', 'none', 'required'"),
    ],
)
def test_bad_tools_are_exit_4_naming_the_line(pytester: pytest.Pytester, value: str, said: str) -> None:
    good = json.dumps({"id": "ok", "question": "q", "answer": "a", "tools": [LOOKUP]})
    (pytester.path / "qa.jsonl").write_text(good + "\n" + '{"id": "bad", "question": "q", "answer": "a", ' + value + "}\n")
    line = usage_line(pytester.runpytest("--ctxbench-dataset=qa.jsonl", "--ctxbench-proxy=http://127.0.0.1:9", "--ctxbench-model=m"))
    assert "qa.jsonl:2:" in line and said in line, line


# -- the fake endpoint's scripts ----------------------------------------------------------


def _ask(llm: FakeLLM, *messages: dict) -> dict:
    body = {"model": "m", "messages": list(messages)}
    return httpx.post(llm.url_v1 + "/chat/completions", json=body, timeout=30).json()["choices"][0]


def test_a_script_answers_the_question_then_the_tool_result() -> None:
    good = Script([
        {"match": "order A17", "tool_calls": [_call("lookup_order", {"order_id": "A17"})]},
        {"regex": r'"status": "(shipped|late)"', "reply": "Order A17 has shipped."},
    ])
    with FakeLLM(handler=good) as llm:
        asked = _ask(llm, {"role": "user", "content": "Where is order A17?"})
        told = _ask(llm, {"role": "user", "content": "Where is order A17?"}, asked["message"],
                    {"role": "tool", "tool_call_id": "call_0", "content": '{"status": "shipped"}'})
        unknown = _ask(llm, {"role": "user", "content": "Hello"})
    assert asked["finish_reason"] == "tool_calls" and asked["message"]["content"] is None
    assert asked["message"]["tool_calls"][0]["function"] == {"name": "lookup_order", "arguments": '{"order_id": "A17"}'}
    assert told["message"]["content"] == "Order A17 has shipped."
    assert unknown["message"]["content"] == "OK"  # the fallback
    assert good.hits == [1, 1] and good.misses == 1


def test_script_files_json_and_jsonl_and_their_errors(tmp_path) -> None:  # type: ignore[no-untyped-def]
    rules = [{"match": "a", "reply": "A"}, {"regex": "b+", "tool_calls": [_call("f", {})]}]
    (tmp_path / "s.json").write_text(json.dumps({"rules": rules}))
    (tmp_path / "s.jsonl").write_text("\n".join(json.dumps(r) for r in rules) + "\n\n")
    for name in ("s.json", "s.jsonl"):
        assert len(Script.load(tmp_path / name).rules) == 2
    for text, said in (
        ('{"match": "a", "reply": "A"}\n{"match": "b"}\n', "s.jsonl:2: give 'reply'"),
        ('{"regex": "(", "reply": "x"}\n', "s.jsonl:1: invalid regex"),
        ('{"match": "a", "regex": "a", "reply": "x"}\n', "exactly one of 'match'"),
        ('{"match": "a", "tool_calls": [{"args": 1}]}\n', "tool call 1 must be"),
        ('{"match": "a", "answer": "x"}\n', "unknown key(s) 'answer'"),
        ("{oops\n", "s.jsonl:1: not JSON"),
    ):
        (tmp_path / "s.jsonl").write_text(text)
        with pytest.raises(ScriptError) as info:
            Script.load(tmp_path / "s.jsonl")
        assert said in str(info.value), str(info.value)


def test_anthropic_tool_use_from_the_fake() -> None:
    with FakeLLM([Reply(tool_calls=[_call("f", {"a": 1})])]) as llm:
        body = {"model": "claude", "max_tokens": 9, "messages": [{"role": "user", "content": "q"}]}
        reply = httpx.post(llm.url_v1 + "/messages", json=body, timeout=30).json()
    assert reply["stop_reason"] == "tool_use"
    assert tool_calls_of(reply) == [{"id": "toolu_0", "type": "function", "function": {"name": "f", "arguments": '{"a": 1}'}}]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_the_fake_endpoint_command_serves_a_script(tmp_path) -> None:  # type: ignore[no-untyped-def]
    script = tmp_path / "good.jsonl"
    script.write_text(json.dumps({"match": "A17", "tool_calls": [_call("lookup_order", {"order_id": "A17"})]}) + "\n")
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "pytest_context_bench.testing", "--port", str(port), "--script", str(script)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"}, preexec_fn=sigint_default,
    )
    try:
        assert proc.stdout is not None
        assert "fake LLM endpoint" in proc.stdout.readline()
        url = f"http://127.0.0.1:{port}/v1/chat/completions"
        for question in ("Where is A17?", "hello"):
            body = {"model": "m", "messages": [{"role": "user", "content": question}]}
            httpx.post(url, json=body, timeout=30).raise_for_status()
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, err
    assert out.splitlines()[-1] == "served 2 request(s) (1 answered by the script's 1 rule(s), 1 by the fallback)"


def test_the_fake_endpoint_command_refuses_a_bad_script(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    from pytest_context_bench.testing.__main__ import main

    (tmp_path / "bad.json").write_text('[{"match": "a"}]')
    assert main(["--port", "0", "--script", str(tmp_path / "bad.json")]) == 4
    assert "bad.json: rule 1: give 'reply'" in capsys.readouterr().err
