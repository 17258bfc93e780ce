"""Oracle: Ragas' answer_correctness on the 17 scripted cases of the conformance suite.

NOT part of the test suite (it needs Ragas, which is never a dependency of
pytest-context-bench). Run it by hand in a separate virtualenv to (re)compute the
values that ``tests/test_answer_correctness_ragas.py`` asserts::

    python -m venv /tmp/ragas-venv
    /tmp/ragas-venv/bin/pip install 'ragas==0.4.3' 'langchain-community<0.4' \\
        'langchain<1' 'langchain-core<1' 'langchain-openai<1'
    /tmp/ragas-venv/bin/python tests/oracles/ragas_answer_correctness.py

It serves each case's script (``tests/answer_correctness_cases.py``) from a loopback
FakeLLM (``pytest_context_bench/testing/fake_llm.py``, standard library only, loaded
from its file so the package need not be installed), points Ragas' legacy
``AnswerCorrectness`` (LangChain ChatOpenAI and OpenAIEmbeddings wrappers) at it,
and writes ``tests/oracles/answer_correctness_ragas.json``: each case's Ragas score,
the requests Ragas made, and the versions used. It also records the newer
``ragas.metrics.collections.AnswerCorrectness`` (``ragas_collections``), for reference. ``git diff`` then shows any change.
"""

from __future__ import annotations

import asyncio
import importlib.metadata as md
import importlib.util
import json
import os
import platform
import sys
import warnings
from pathlib import Path

os.environ.setdefault("RAGAS_DO_NOT_TRACK", "true")  # no telemetry: loopback only

HERE = Path(__file__).resolve().parent
TESTS = HERE.parent
ROOT = TESTS.parent
OUT = HERE / "answer_correctness_ragas.json"

sys.path.insert(0, str(TESTS))
import answer_correctness_cases as cases


def _load_fake_llm():  # type: ignore[no-untyped-def]
    path = ROOT / "pytest_context_bench" / "testing" / "fake_llm.py"
    spec = importlib.util.spec_from_file_location("_oracle_fake_llm", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


async def ragas_score(case: cases.Case, fake) -> tuple[float, dict]:  # type: ignore[no-untyped-def,type-arg]
    from langchain_openai import ChatOpenAI, OpenAIEmbeddings
    from ragas.dataset_schema import SingleTurnSample
    from ragas.embeddings import LangchainEmbeddingsWrapper
    from ragas.llms import LangchainLLMWrapper
    from ragas.metrics._answer_correctness import AnswerCorrectness
    from ragas.run_config import RunConfig

    endpoint = cases.ScriptedEndpoint(case, fake.Reply)
    with fake.FakeLLM(handler=endpoint) as server:
        llm = LangchainLLMWrapper(
            ChatOpenAI(
                model="gpt-4o-mini",
                base_url=server.url_v1,
                api_key="sk-oracle",
                max_retries=0,
            )
        )
        embeddings = LangchainEmbeddingsWrapper(
            OpenAIEmbeddings(
                model="text-embedding-3-small",
                base_url=server.url_v1,
                api_key="sk-oracle",
                check_embedding_ctx_length=False,  # no tiktoken download
                max_retries=0,
            )
        )
        metric = AnswerCorrectness(
            llm=llm,
            embeddings=embeddings,
            weights=list(case.weights),
            beta=case.beta,
        )
        metric.init(RunConfig())
        sample = SingleTurnSample(
            user_input=case.question, response=case.response, reference=case.reference
        )
        value = await metric.single_turn_ascore(sample)
        chats = [r for r in server.requests if r.path.endswith("/chat/completions")]
        embeds = [r for r in server.requests if r.path.endswith("/embeddings")]
        seen = {
            "chat_requests": len(chats),
            "classifier_called": endpoint.calls["classification"] > 0,
            "fix_prompts": endpoint.calls["fix"],
            "temperatures": sorted({r.json.get("temperature") for r in chats}),
            "embedding_requests": len(embeds),
            "texts_per_embedding_request": sorted(
                {len(r.json["input"]) for r in embeds}
            ),
            "embedded_texts": [t for r in embeds for t in r.json["input"]],
        }
    return float(value), seen


async def ragas_collections_score(case: cases.Case, fake) -> float:  # type: ignore[no-untyped-def]
    """The newer ``ragas.metrics.collections.AnswerCorrectness`` (instructor, JSON mode).

    Recorded for reference only: it scores factuality 1.0 when EITHER side has no
    statement (the legacy metric, which we follow, only when both have none).
    """
    from openai import AsyncOpenAI
    from ragas.embeddings import OpenAIEmbeddings
    from ragas.llms import llm_factory
    from ragas.metrics.collections import AnswerCorrectness

    endpoint = cases.ScriptedEndpoint(case, fake.Reply)
    with fake.FakeLLM(handler=endpoint) as server:
        client = AsyncOpenAI(base_url=server.url_v1, api_key="sk-oracle", max_retries=0)
        metric = AnswerCorrectness(
            llm=llm_factory("gpt-4o-mini", client=client),
            embeddings=(
                OpenAIEmbeddings(client=client, model="text-embedding-3-small")
                if case.weights[1]
                else None
            ),
            weights=list(case.weights),
            beta=case.beta,
        )
        result = await metric.ascore(
            user_input=case.question, response=case.response, reference=case.reference
        )
        return float(result.value)


async def score_all(fake) -> dict:  # type: ignore[no-untyped-def,type-arg]
    results = {}
    for case in cases.CASES:
        value, seen = await ragas_score(case, fake)
        newer = await ragas_collections_score(case, fake)
        results[case.id] = {"ragas": value, **seen, "ragas_collections": newer}
        print(f"{case.id:38} {value!r:22} collections: {newer!r}")
    return results


def main() -> int:
    warnings.simplefilter("ignore", DeprecationWarning)  # LangChain wrappers
    fake = _load_fake_llm()
    version = md.version("ragas")
    if version != cases.RAGAS_VERSION:
        print(
            f"warning: Ragas {version} installed, the suite records"
            f" {cases.RAGAS_VERSION}; update RAGAS_VERSION if you mean it",
            file=sys.stderr,
        )
    results = asyncio.run(score_all(fake))  # one loop: LangChain's clients outlive a case
    doc = {
        "what": "Ragas AnswerCorrectness on tests/answer_correctness_cases.py, written"
        " by tests/oracles/ragas_answer_correctness.py. 'ragas': the legacy metric"
        " (ragas.metrics.AnswerCorrectness, which we follow); 'ragas_collections': the"
        " newer ragas.metrics.collections.AnswerCorrectness, for reference.",
        "ragas": version,
        "versions": {
            name: md.version(name)
            for name in (
                "langchain",
                "langchain-core",
                "langchain-community",
                "langchain-openai",
                "openai",
                "numpy",
            )
        },
        "python": platform.python_version(),
        "cases": results,
    }
    OUT.write_text(json.dumps(doc, indent=2) + "\n")
    print(f"wrote {OUT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
