"""Money against a baseline: ``--ctxbench-max-drop=cost_of_pass_usd:...`` and the
``cost_of_pass_usd`` row of ``ctxbench compare``, with a real server on 127.0.0.1
that reports token usage, and prices (``--ctxbench-price``)."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from pytest_context_bench.cli import main
from pytest_context_bench.testing import FakeLLM, Reply

N = 20
QUESTION = re.compile(r"capital of country (\d+)")


def _rows() -> str:
    return "".join(
        json.dumps(
            {
                "id": f"q-{i}",
                "context": f"Country {i} has city {i}.",
                "question": f"What is the capital of country {i}?",
                "answer": f"city {i}",
            }
        )
        + "\n"
        for i in range(1, N + 1)
    )


def _server(prompt_tokens: int) -> FakeLLM:
    """Right on every example; each reply bills ``prompt_tokens`` + 10."""

    def answer(request: Any) -> Reply:
        text = " ".join(str(m.get("content", "")) for m in request.json["messages"])
        match = QUESTION.search(text)
        return Reply(
            text=f"city {match.group(1) if match else 0}",
            usage={"prompt_tokens": prompt_tokens, "completion_tokens": 10},
        )

    return FakeLLM(handler=answer)


def _run(pytester: pytest.Pytester, prompt_tokens: int, *args: str) -> pytest.RunResult:
    with _server(prompt_tokens) as llm:
        return pytester.runpytest_subprocess(
            "-p",
            "no:randomly",
            "--ctxbench-dataset=qa.jsonl",
            f"--ctxbench-proxy={llm.base_url}",
            "--ctxbench-proxy-name=local",
            "--ctxbench-model=m",
            "--ctxbench-cache=off",
            *args,
        )


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makefile(".jsonl", qa=_rows())
    saved = _run(
        pytester,
        100,
        "--ctxbench-price=m=1/2",
        "--ctxbench-save-baseline=base.json",
        "--ctxbench-json=a.json",
    )
    assert saved.ret == 0, saved.stdout.str()
    return pytester


def test_a_costlier_run_fails_the_money_max_drop_gate(project: pytest.Pytester) -> None:
    """The rows' cost reaches the controller, which compares it with the baseline's:
    the same cost passes (in-process), a higher one fails under -n 2 (had the workers'
    cost not reached the controller, the gate would fail as unknown money instead)."""
    gate = [
        "--ctxbench-baseline=base.json",
        "--ctxbench-max-drop=cost_of_pass_usd:10%",
    ]
    same = _run(project, 100, "--ctxbench-price=m=1/2", *gate)
    assert same.ret == 0, same.stdout.str()
    same.stdout.fnmatch_lines(["*cost_of_pass_usd: now 0.00012, then 0.00012*passed*"])
    # Twice the prompt: $0.00022 per pass instead of $0.00012, on every example.
    dearer = _run(
        project, 200, "--ctxbench-price=m=1/2", *gate, "--ctxbench-json=b.json", "-n", "2"
    )
    assert dearer.ret == 1, dearer.stdout.str()
    dearer.stdout.fnmatch_lines(["*local cost_of_pass_usd rose by 0.0001 *FAILED*"])
    doc = json.loads((project.path / "b.json").read_text())
    (metric,) = [
        m
        for m in doc["baseline_comparison"]["metrics"]
        if m["metric"] == "cost_of_pass_usd"
    ]
    assert metric["then"] == pytest.approx(120 / 1e6)
    assert metric["now"] == pytest.approx(220 / 1e6)
    assert metric["passed"] is False


def test_unknown_money_never_passes_the_gate(project: pytest.Pytester) -> None:
    """The run is not priced: its money is unknown, the gate fails and says why."""
    result = _run(
        project,
        100,
        "--ctxbench-baseline=base.json",
        "--ctxbench-max-drop=cost_of_pass_usd:0",
    )
    assert result.ret == 1, result.stdout.str()
    result.stdout.fnmatch_lines(
        [
            "*cost_of_pass_usd FAILED: the money of this run or of the baseline is unknown*"
        ]
    )


def test_compare_shows_money_when_both_runs_are_priced(
    project: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    a = project.path / "a.json"
    b = project.path / "b.json"
    _run(project, 200, "--ctxbench-price=m=1/2", f"--ctxbench-json={b}")
    assert main(["compare", str(a), str(b)]) == 1  # dearer: worse
    out = capsys.readouterr().out
    (line,) = [ln for ln in out.splitlines() if ln.split()[:1] == ["cost_of_pass_usd"]]
    assert line.split()[1:4] == ["0.00012", "0.00022", "+0.0001"] and line.endswith(
        "WORSE"
    )
    # Without prices on one side, money is not compared.
    c = project.path / "c.json"
    _run(project, 200, f"--ctxbench-json={c}")
    main(["compare", str(a), str(c)])
    assert "cost_of_pass_usd" not in capsys.readouterr().out
