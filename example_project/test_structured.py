"""Structured output, checked by the examples' own assertions (data/orders.jsonl).

Each example asks for an order's status as a JSON object; its ``assert`` list checks
the reply against data/order.schema.json (``is-json``) and its content. The app's
reply must keep the schema: a missing field, a status outside the enum or prose
around the JSON fails the example, and ``min_pass_rate=1.0`` fails the run.
"""

from __future__ import annotations

from typing import Any

import pytest
from app import RagApp

from pytest_context_bench import http_client


class OrderApp(RagApp):
    """The app asked for JSON: every record goes to the model (no retrieval)."""

    name = "orders"

    def prompt(self, example: dict[str, Any]) -> list[dict[str, str]]:
        from app import INSTRUCTIONS

        return [
            {"role": "system", "content": INSTRUCTIONS["orders"] + example["context"]},
            {"role": "user", "content": example["question"]},
        ]


app = OrderApp(http_client=http_client())


@pytest.mark.ctxbench(dataset="data/orders.jsonl", min_pass_rate=1.0)
def test_order_status_is_valid_json(
    ctxbench_example: dict[str, Any], ctxbench_record: Any
) -> None:
    ctxbench_record(app.process(ctxbench_example))
