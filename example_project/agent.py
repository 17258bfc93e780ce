"""A tool-calling agent, on the official ``openai`` SDK: ask, call a local tool, answer.

:class:`OrderAgent` answers questions about orders. It sends the question with one
tool, ``lookup_order``; when the model calls it, the agent runs the lookup over its
own records (:data:`ORDERS`), sends the results back as ``tool`` messages and asks
again, until the model answers in text or ``max_steps`` model calls are spent.

It returns ``{**example, "response": text, "tool_calls": [...], "trajectory": [...],
"api_usage": {...}}``: the answer, every call the model made (OpenAI's shape), the
steps (assistant messages and tool results, as chat messages) and the tokens of all
its model calls. Like ``app.py``, plain application code: no pytest in it.
"""

from __future__ import annotations

import json
import os
from typing import Any

from openai import OpenAI

#: The order database the tool reads.
ORDERS: dict[int, str] = {7: "shipped", 9: "pending", 12: "delivered", 30: "cancelled"}

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "lookup_order",
            "description": "The status of an order, by its number.",
            "parameters": {
                "type": "object",
                "properties": {"order_id": {"type": "integer"}},
                "required": ["order_id"],
            },
        },
    }
]


def lookup_order(order_id: Any) -> dict[str, Any]:
    """The tool: an order's status, or an error the model can read."""
    if isinstance(order_id, int) and order_id in ORDERS:
        return {"order_id": order_id, "status": ORDERS[order_id]}
    return {"order_id": order_id, "error": "no such order"}


def run_tool(name: str, arguments: str) -> str:
    """Run one call the model made; its result as the ``tool`` message's text."""
    try:
        args = json.loads(arguments or "{}")
    except ValueError:
        return json.dumps({"error": "arguments are not JSON"})
    if name != "lookup_order" or not isinstance(args, dict):
        return json.dumps({"error": f"unknown tool {name!r}"})
    return json.dumps(lookup_order(args.get("order_id")))


class OrderAgent:
    """The agent loop, at most ``max_steps`` model calls per question."""

    name = "order_agent"

    def __init__(
        self, model: str | None = None, http_client: Any = None, max_steps: int = 4
    ) -> None:
        self.model = model or os.environ.get("OPENAI_MODEL", "gpt-4o-mini")
        self.http_client = http_client
        self.max_steps = max_steps
        self._client: OpenAI | None = None

    @property
    def client(self) -> OpenAI:
        if self._client is None:
            self._client = OpenAI(max_retries=2, timeout=60, http_client=self.http_client)
        return self._client

    def process(self, example: dict[str, Any]) -> dict[str, Any]:
        messages: list[dict[str, Any]] = [
            {"role": "system", "content": "You answer questions about orders."},
            {"role": "user", "content": example["question"]},
        ]
        steps: list[dict[str, Any]] = []
        calls: list[dict[str, Any]] = []
        usage = {"prompt_tokens": 0, "completion_tokens": 0}
        text = ""
        for _ in range(self.max_steps):
            reply = self.client.chat.completions.create(
                model=self.model, messages=messages, tools=TOOLS, temperature=0
            )
            if reply.usage:
                usage["prompt_tokens"] += reply.usage.prompt_tokens
                usage["completion_tokens"] += reply.usage.completion_tokens
            message = reply.choices[0].message.model_dump(exclude_none=True)
            messages.append(message)
            steps.append(message)
            if not message.get("tool_calls"):
                text = message.get("content") or ""
                break
            for call in message["tool_calls"]:
                calls.append(call)
                result = {
                    "role": "tool",
                    "tool_call_id": call["id"],
                    "content": run_tool(call["function"]["name"], call["function"]["arguments"]),
                }
                messages.append(result)
                steps.append(result)
        return {
            **example,
            "response": text,
            "tool_calls": calls,
            "trajectory": steps,
            "api_usage": usage,
        }
