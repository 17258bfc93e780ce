"""A tool-calling agent, gated: data/order_agent.jsonl through agent.py's loop.

Each example carries the calls the agent should make (``expected_tool_calls``) and
its steps (``expected_trajectory``, judged by TrajectoryMatch), the answer, and a
budget of its own (``max-tool-calls``). ``min_pass_rate=1.0``: one wrong call, a
step too many or a wrong answer fails the run.
"""

from __future__ import annotations

from typing import Any

import pytest
from agent import OrderAgent

from pytest_context_bench import http_client

agent = OrderAgent(http_client=http_client(), max_steps=4)


@pytest.mark.ctxbench(dataset="data/order_agent.jsonl", min_pass_rate=1.0)
def test_order_agent(ctxbench_example: dict[str, Any], ctxbench_record: Any) -> None:
    ctxbench_record(agent.process(ctxbench_example))
