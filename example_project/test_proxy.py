"""The marker form, with a System that calls an OpenAI-compatible endpoint.

The endpoint here is pytest-context-bench's FakeLLM, a local server that answers with
the offline reader of systems.py, so the example runs without a network or an API
key. Point OpenAIProxy at your own server (vLLM, llama.cpp, Ollama, LiteLLM, a
compression proxy) to benchmark it the same way.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from pytest_context_bench.systems import OpenAIProxy
from pytest_context_bench.testing import FakeLLM, Reply
from systems import _answer


def _reply(request) -> Reply:  # noqa: ANN001 - a RecordedRequest
    messages = request.messages
    context = " ".join(m["content"] for m in messages if m["role"] == "system")
    question = " ".join(m["content"] for m in messages if m["role"] == "user")
    return Reply(text=_answer(question, context))


@pytest.fixture(scope="module")
def proxy() -> Iterator[OpenAIProxy]:
    with FakeLLM(handler=_reply) as server:
        system = OpenAIProxy(server.base_url, model="local-reader", name="local_proxy")
        yield system
        system.close()


@pytest.mark.ctxbench(dataset="data/capitals.jsonl", min_pass_rate=0.6)
def test_local_proxy(ctxbench_example, ctxbench_record, proxy) -> None:  # noqa: ANN001
    ctxbench_record.run(proxy)
