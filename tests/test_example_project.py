"""The example project's bad set-ups each say what to do in one line (exit status 4);
its local model answers in OpenAI's wire format, through the official SDK."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_context_bench.tokens import count_tokens

EXAMPLE = Path(__file__).resolve().parent.parent / "example_project"


@pytest.fixture
def example(tmp_path: Path) -> Path:
    project = tmp_path / "example_project"
    shutil.copytree(
        EXAMPLE,
        project,
        ignore=shutil.ignore_patterns("ctxbench-report.json", "__pycache__"),
    )
    return project


def run(project: Path, **env: str) -> subprocess.CompletedProcess[str]:
    base = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("PYTEST_", "OPENAI_", "LOCAL_LLM_"))
    }
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q"],
        cwd=project,
        env={**base, **env},
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


def test_structured_output_fails_the_run_when_the_schema_breaks(example: Path) -> None:
    """test_structured.py: the orders' replies pass their schema; an app whose reply
    breaks the schema (a status outside its enum) fails every example, and the run."""
    env = {"PYTEST_ADDOPTS": "-p no:randomly"}
    # This test's suite alone: no command-line datasets, no baseline comparison.
    args = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "test_structured.py",
            "-o", "ctxbench_dataset=", "-o", "ctxbench_baseline=", "-o", "ctxbench_max_drop=",
            "--ctxbench-json=orders.json"]
    base = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "OPENAI_", "LOCAL_LLM_"))}
    good = subprocess.run(args, cwd=example, env={**base, **env}, capture_output=True, text=True, check=False)
    assert good.returncode == 0, good.stdout
    import json

    rows = json.loads((example / "orders.json").read_text())["rows"]
    assert [r["status"] for r in rows] == ["pass"] * 4
    schema = example / "data" / "order.schema.json"
    schema.write_text(schema.read_text().replace('"cancelled"]', '"canceled"]'))
    broken = subprocess.run(args, cwd=example, env={**base, **env}, capture_output=True, text=True, check=False)
    assert broken.returncode == 1, broken.stdout
    assert "BELOW test_order_status_is_valid_json: orders-30" not in broken.stdout  # named by suite
    rows = {r["example_id"]: r for r in json.loads((example / "orders.json").read_text())["rows"]}
    assert rows["order-30"]["status"] == "below"
    assert "is not one of" in rows["order-30"]["metadata"]["assertions"]["1. is-json"]
    assert "FAIL" in broken.stdout and "min_pass_rate" in broken.stdout
