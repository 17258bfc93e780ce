"""The example project's bad set-ups each say what to do in one line (exit status 4);
its local model answers in OpenAI's wire format, through the official SDK."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers import EXAMPLE, INNER_ADDOPTS, ExampleRun, copy_example

from pytest_context_bench.tokens import count_tokens

#: the suites' names in the JSON report start with their file's
STRUCTURED, AGENT = ("test_structured.py",), ("test_agent.py",)


@pytest.fixture
def example(tmp_path: Path) -> Path:
    return copy_example(tmp_path)


def run(project: Path, **env: str) -> subprocess.CompletedProcess[str]:
    base = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("PYTEST_", "OPENAI_", "LOCAL_LLM_"))
    }
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q"],
        cwd=project,
        env={**base, "PYTEST_ADDOPTS": INNER_ADDOPTS, **env},
        capture_output=True,
        check=False,
        text=True,
    )


@pytest.fixture
def taken_port() -> Iterator[int]:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        yield sock.getsockname()[1]


def test_a_taken_port_is_one_line(example: Path, taken_port: int) -> None:
    done = run(example, LOCAL_LLM_PORT=str(taken_port))
    assert done.returncode == 4
    assert done.stderr.strip().splitlines() == [
        (
            f"ERROR: the local model server cannot listen on 127.0.0.1:{taken_port}"
            " ([Errno 98] Address already in use); set LOCAL_LLM_PORT to a free port,"
            " or unset it to take any free one."
        )
    ]


def test_a_real_endpoint_without_a_key_is_one_line(example: Path) -> None:
    done = run(example, OPENAI_BASE_URL="https://api.example.com/v1")
    assert done.returncode == 4
    assert done.stderr.strip().splitlines() == [
        (
            "ERROR: OPENAI_BASE_URL is set (https://api.example.com/v1) but"
            " OPENAI_API_KEY is not: set OPENAI_API_KEY to that endpoint's key, or unset"
            " OPENAI_BASE_URL to run against the local model."
        )
    ]


def test_the_local_model_through_the_openai_sdk(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.syspath_prepend(str(EXAMPLE))
    from app import CompressedRagApp, RagApp
    from local_llm import LocalLLM

    server = LocalLLM()
    try:
        monkeypatch.setenv("OPENAI_BASE_URL", server.url)
        monkeypatch.setenv("OPENAI_API_KEY", "local")
        example = {
            "id": "x",
            "context": "Peru is in South America. Its capital is Lima. It has llamas.",
            "question": "What is the capital of Peru?",
            "answer": "Lima",
        }
        full, compressed = (
            RagApp().process(example),
            CompressedRagApp().process(example),
        )
    finally:
        server.stop()
    assert full["response"] == compressed["response"] == "Lima"
    # The usage the SDK read back is the server's count of what each app sent.
    assert (
        0
        < compressed["api_usage"]["prompt_tokens"]
        < full["api_usage"]["prompt_tokens"]
    )
    assert full["api_usage"]["completion_tokens"] == count_tokens("Lima")


def test_structured_output_and_the_tool_calling_agent_are_gated(
    example_run: ExampleRun, tmp_path: Path
) -> None:
    """test_structured.py: the orders' replies pass their schema; an app whose reply
    breaks the schema (a status outside its enum) fails every example, and the run.

    test_agent.py: the agent's loop (ask with tools, run lookup_order, answer)
    passes its gate against the local model; a second run under -n 2 in replay
    mode sends nothing and gives the same rows; a worse model (a script of the fake
    endpoint that looks up the wrong order) fails the gate.

    The first run is the example project's whole `pytest -n 2` (the session's,
    helpers.example_run, whose output test_docs compares with the README's): both
    suites' rows are in its report, their calls in its LLM cache (``once``, the
    default), which the replay reads in a copy of the project."""
    import json

    from pytest_context_bench.testing import FakeLLM, Script

    # These two suites alone: no command-line datasets, no baseline comparison.
    common = [sys.executable, "-m", "pytest", "-p", "no:randomly", "-p", "no:cacheprovider", "-q",
              "-o", "ctxbench_dataset=", "-o", "ctxbench_baseline=", "-o", "ctxbench_max_drop="]
    base = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "OPENAI_", "LOCAL_LLM_"))}
    base["PYTEST_ADDOPTS"] = INNER_ADDOPTS  # the plugins no run uses, not loaded
    args = [*common, "test_agent.py", "--ctxbench-json=agent.json"]
    structured = [*common, "test_structured.py", "--ctxbench-json=orders.json"]

    def rows(name: str = "agent.json", prefix: str = "", suites: tuple[str, ...] = ()) -> dict[str, tuple]:
        doc = json.loads((example / name).read_text())
        return {r["example_id"]: (r["status"], r["response"], r.get("tool_calls"), r["scores"])
                for r in doc["rows"] if r["example_id"].startswith(prefix)
                and (not suites or r["suite"].startswith(suites))}

    assert example_run.returncode == 0, example_run.stdout + example_run.stderr
    example = copy_example(tmp_path, example_run.project)  # (changed below)
    first = "ctxbench-report.json"  # (the project's ctxbench_json)
    # the orders' replies pass their schema
    assert [v[0] for v in rows(first, prefix="order-", suites=STRUCTURED).values()] == ["pass"] * 4
    once = rows(first, suites=AGENT)
    assert {k: v[0] for k, v in once.items()} == dict.fromkeys(("status-7", "status-12", "two-orders", "no-order"), "pass")
    assert once["two-orders"][2] == 'lookup_order({"order_id": 9}); lookup_order({"order_id": 30})'
    assert once["status-7"][3]["trajectory_match"] == 1.0
    replay = subprocess.run([*args, "-n", "2", "--ctxbench-cache=replay"], cwd=example, env=base,
                            capture_output=True, text=True, check=False)
    assert replay.returncode == 0, replay.stdout + replay.stderr
    assert "7 hits, 0 misses, 0 calls sent" in " ".join(replay.stdout.split()), replay.stdout
    assert rows() == once
    # The schema broken: every order's reply fails it.
    schema = example / "data" / "order.schema.json"
    schema.write_text(schema.read_text().replace('"cancelled"]', '"canceled"]'))
    broken = subprocess.run(structured, cwd=example, env=base, capture_output=True, text=True, check=False)
    assert broken.returncode == 1, broken.stdout
    assert "BELOW test_order_status_is_valid_json: orders-30" not in broken.stdout  # named by suite
    orders = {r["example_id"]: r for r in json.loads((example / "orders.json").read_text())["rows"]}
    assert orders["order-30"]["status"] == "below"
    assert "is not one of" in orders["order-30"]["metadata"]["assertions"]["1. is-json"]
    assert "FAIL" in broken.stdout and "min_pass_rate" in broken.stdout
    # A worse model: it looks up order 8 whatever the question, then answers from it.
    worse = Script([
        {"role": "tool", "regex": ".", "reply": "Order 8 is lost."},
        {"regex": r"order \d+", "tool_calls": [{"name": "lookup_order", "arguments": {"order_id": 8}}]},
    ])
    with FakeLLM(handler=worse) as llm:
        env = {**base, "OPENAI_BASE_URL": llm.url_v1, "OPENAI_API_KEY": "fake", "OPENAI_MODEL": "worse"}
        bad = subprocess.run([*args, "--ctxbench-cache=off"], cwd=example, env=env, capture_output=True, text=True, check=False)
    assert bad.returncode == 1, bad.stdout + bad.stderr
    assert "FAIL" in bad.stdout and "min_pass_rate" in bad.stdout
    assert "tool calls 'lookup_order({\"order_id\": 8})'" in bad.stdout, bad.stdout
