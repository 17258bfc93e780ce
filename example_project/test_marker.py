"""The marker form, beside the command-line form of pyproject.toml.

A test function of your own, run once per example: its body calls the app however
your code does, and hands the processed example to ``ctxbench_record``, which scores
it and records the row. The gates of the marker apply to this test's suite alone.
"""

from __future__ import annotations

from typing import Any

import pytest
from app import CompressedRagApp

from pytest_context_bench import http_client

app = CompressedRagApp(http_client=http_client())


@pytest.mark.ctxbench(dataset="data/capitals.jsonl", min_pass_rate=0.8)
def test_compressed_app_reads_capitals(
    ctxbench_example: dict[str, Any], ctxbench_record: Any
) -> None:
    # An assertion of your own runs beside the scores: the compressed prompt keeps
    # no more of the context than there was.
    sent = app.retrieve(ctxbench_example["question"], ctxbench_example["context"])
    assert len(sent) <= len(ctxbench_example["context"])
    ctxbench_record(app.process(ctxbench_example))
