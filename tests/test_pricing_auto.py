"""--ctxbench-price=auto: prices from genai-prices (the reference: its own
calc_price), explicit prices first, unknown models one error, never a silent $0."""

from __future__ import annotations

import json
import re
from decimal import Decimal

import pytest

from pytest_context_bench.pricing import EXPLICIT, Price, PriceTable, usage_summary
from pytest_context_bench.testing import FakeLLM, Reply
from pytest_context_bench.transports import usage_of

genai_prices = pytest.importorskip("genai_prices")


def _oracle(model: str, prompt: int, completion: int, cached: int = 0, **where: str) -> float:
    usage = genai_prices.Usage(input_tokens=prompt, output_tokens=completion, cache_read_tokens=cached)
    return float(genai_prices.calc_price(usage, model, **where).total_price)


def _entry(model: str, url: str, reported: str | None = None, cache: str = "miss") -> dict:
    e = {"cache": cache, "model": model, "prompt_tokens": 1000, "completion_tokens": 200,
         "cached_tokens": 400, "api_url": url}
    if reported:
        e["reported_model"] = reported
    return e


def test_auto_prices_as_genai_prices_does_and_says_its_source() -> None:
    table = PriceTable(auto=True)
    s = usage_summary([_entry("gpt-4o-mini", "https://api.openai.com/v1/chat/completions"),
                       _entry("gpt-4o-mini", "https://api.openai.com/v1/chat/completions", cache="hit")], table)
    assert s is not None
    one = _oracle("gpt-4o-mini", 1000, 200, 400, provider_api_url="https://api.openai.com/v1")
    assert one > 0
    assert s["cost_usd"] == pytest.approx(2 * one) and s["saved_usd"] == pytest.approx(one)
    assert s["price_sources"] == {"gpt-4o-mini": "genai-prices: openai/gpt-4o-mini (base URL)"}
    # A loopback server says nothing of the provider: the model's name does.
    s = usage_summary([_entry("claude-3-5-haiku-latest", "http://127.0.0.1:8000/v1/messages")], table)
    assert s is not None and s["price_sources"] == {
        "claude-3-5-haiku-latest": "genai-prices: anthropic/claude-3-5-haiku-latest (model name)"}
    assert s["cost_usd"] == pytest.approx(_oracle("claude-3-5-haiku-latest", 1000, 200, 400, provider_id="anthropic"))


def test_the_model_the_endpoint_reported_is_matched_first() -> None:
    data = {"model": "gpt-4o-2024-08-06", "usage": {"prompt_tokens": 1000, "completion_tokens": 200}}
    usage = usage_of(data, "my-alias")
    assert usage is not None and usage["reported_model"] == "gpt-4o-2024-08-06"
    entry = {"cache": "miss", **usage, "api_url": "https://api.openai.com/v1/chat/completions"}
    s = usage_summary([entry], PriceTable(auto=True))
    assert s is not None and s["models"] == ["my-alias"]
    assert s["cost_usd"] == pytest.approx(_oracle("gpt-4o-2024-08-06", 1000, 200, provider_id="openai"))
    assert s["price_sources"]["my-alias"].startswith("genai-prices: openai/gpt-4o")


def test_explicit_prices_override_and_a_named_provider_is_used() -> None:
    table = PriceTable({"gpt-4o-mini": Price(1.0, 2.0)}, auto=True)
    s = usage_summary([_entry("gpt-4o-mini", "https://api.openai.com/v1/chat/completions")], table)
    assert s is not None and s["price_sources"] == {"gpt-4o-mini": EXPLICIT}
    assert s["cost_usd"] == pytest.approx(Price(1.0, 2.0).cost(1000, 200, 400))
    named = PriceTable(auto=True, provider="openai")
    s = usage_summary([_entry("gpt-4o-mini", "http://127.0.0.1:1/v1/chat/completions")], named)
    assert s is not None and s["price_sources"] == {"gpt-4o-mini": "genai-prices: openai/gpt-4o-mini (provider named)"}


def test_an_unknown_model_is_unpriced_never_zero() -> None:
    s = usage_summary([_entry("my-local-model", "http://127.0.0.1:1/v1/chat/completions"),
                       _entry("gpt-4o-mini", "http://127.0.0.1:1/v1/chat/completions")], PriceTable(auto=True))
    assert s is not None
    assert s["cost_usd"] is None and s["unpriced_models"] == ["my-local-model"]
    assert list(s["price_sources"]) == ["gpt-4o-mini"]
    assert not PriceTable() and PriceTable(auto=True)  # auto alone asks for money


def _rows(n: int) -> str:
    return "".join(json.dumps({"id": f"q-{i}", "question": f"q {i}?", "answer": "a"}) + "\n" for i in range(n))


CONFTEST = '''
import sys

def pytest_unconfigure(config):
    with open("imported.txt", "w") as f:
        f.write(str("genai_prices" in sys.modules))
'''
# (That it is not imported without auto: test_plugin_cache's explicit-price run.)


def _run(pytester: pytest.Pytester, llm: FakeLLM, model: str, *args: str) -> pytest.RunResult:
    return pytester.runpytest_subprocess(
        "--ctxbench-dataset=qa.jsonl", f"--ctxbench-proxy={llm.base_url}", "--ctxbench-proxy-name=local",
        f"--ctxbench-model={model}", f"--ctxbench-json={pytester.path / 'out.json'}", *args,
    )


def test_auto_in_a_run(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-x")
    pytester.makefile(".jsonl", qa=_rows(6))
    pytester.makeconftest(CONFTEST)
    reply = Reply(text="a", usage={"prompt_tokens": 1000, "completion_tokens": 100})
    with FakeLLM(handler=lambda r: reply) as llm:
        priced = _run(pytester, llm, "gpt-4o-mini", "--ctxbench-price=auto", "-n", "2")
        assert priced.ret == 0, priced.stdout.str()
        money = json.loads((pytester.path / "out.json").read_text())["llm"]["money"]
        assert (pytester.path / "imported.txt").read_text() == "True"
        # my-local-model is unknown to genai-prices (an explicit price for another
        # model does not change that).
        unknown = _run(pytester, llm, "my-local-model", "--ctxbench-price=auto",
                       "--ctxbench-cache=off", "--ctxbench-price=gpt-4o-mini=1/2")
    version = genai_prices.__version__
    assert money["genai_prices"] == {"version": version, "provider": None}
    assert money["price_sources"] == {"gpt-4o-mini": "genai-prices: openai/gpt-4o-mini (model name)"}
    assert money["cost_usd"] == pytest.approx(6 * _oracle("gpt-4o-mini", 1000, 100, provider_id="openai"))
    assert Decimal(str(money["cost_usd"])) > 0
    priced.stdout.fnmatch_lines([f"LLM prices (genai-prices {version} data): 'gpt-4o-mini' genai-prices: openai/gpt-4o-mini (model name)"])
    assert unknown.ret == 1, unknown.stdout.str()
    # (a long line is wrapped at the terminal's width: read it joined)
    joined = " ".join(line.strip() for line in unknown.stdout.lines)
    assert re.search(
        rf"FAILED --ctxbench-price=auto: genai-prices {re.escape(version)} has no price"
        r" for model\(s\) 'my-local-model'.*Give each a price"
        r" \(--ctxbench-price=my-local-model=IN/OUT",
        joined,
    ), unknown.stdout.str()


@pytest.mark.parametrize(
    ("spec", "said"),
    [
        ("auto:nosuch", "*--ctxbench-price=auto:nosuch: genai-prices knows no provider 'nosuch'; known: anthropic,*"),
        ("auto:", "*auto:PROVIDER needs a provider id*"),
    ],
)
def test_auto_usage_errors(pytester: pytest.Pytester, spec: str, said: str) -> None:
    pytester.makefile(".jsonl", qa=_rows(1))
    result = pytester.runpytest("--ctxbench-dataset=qa.jsonl", "--ctxbench-system=x:y", f"--ctxbench-price={spec}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([said])
