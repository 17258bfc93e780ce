"""A row's money recomputed from its calls and the run's prices by every reader
(issue 38), and a reply that names another model than the one asked for.

The run writes its price table (``run.options.prices``; a baseline's ``options``)
and each row's replies (``llm_usage.per_call``); ``ctxbench merge``, ``ctxbench
compare``, ``--ctxbench-baseline`` and ``load_report``/``load_baseline`` price each
call again. Real runs make the files (a System calling a loopback fake endpoint
through ``http_client()``); the unit tests build rows with ``usage_summary``, as the
run does.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest
from helpers import INNER_ADDOPTS, qa_lines, read_json, sigint_default

from pytest_context_bench.baseline import load_baseline
from pytest_context_bench.cli import main
from pytest_context_bench.errors import ConfigError
from pytest_context_bench.pricing import (
    Price,
    PriceTable,
    price_record,
    same_model,
    usage_summary,
)
from pytest_context_bench.report.money import MoneyCheck
from pytest_context_bench.testing import FakeLLM, Reply

# ----------------------------------------------------------------------- unit: rows

M = {"m": Price(1.0, 2.0)}


def _call(model: str = "m", prompt: int = 100, completion: int = 10, **extra: Any) -> dict[str, Any]:
    return {"cache": "miss", "model": model, "prompt_tokens": prompt,
            "completion_tokens": completion, "api_url": "http://127.0.0.1:1/v1/chat/completions",
            **extra}


def _row(entries: list[dict[str, Any]], prices: Any, part: str = "llm_usage") -> dict[str, Any]:
    """A row as attach_usage writes it."""
    s = usage_summary(entries, prices)
    assert s is not None
    cost, saved = ("cost_usd", "saved_usd") if part == "llm_usage" else ("judge_cost_usd", "judge_saved_usd")
    md = {cost: s.pop("cost_usd"), saved: s.pop("saved_usd"), part: s}
    return {"suite": "s", "example_id": "q-1", "metadata": md}


def _check(prices: Any) -> MoneyCheck:
    return MoneyCheck({"prices": price_record(prices)})


def test_a_row_as_the_run_wrote_it_passes_and_an_edited_one_is_refused() -> None:
    row = _row([_call(), _call(cache="hit")], M)
    assert row["metadata"]["cost_usd"] == pytest.approx(2 * 120e-6)
    assert _check(M).row(row) is None
    row["metadata"]["cost_usd"] = 0
    said = _check(M).row(row)
    assert said is not None and said.startswith(
        "has metadata.cost_usd $0, but its 2 LLM call(s) (llm_usage.per_call) cost $0.00024"
        " at the run's prices (run.options.prices): money was changed after the run wrote it"
    ), said
    assert "merge its shards again" in said
    row = _row([_call(), _call(cache="hit")], M)
    row["metadata"]["saved_usd"] = 0.0
    assert "has metadata.saved_usd $0, but" in str(_check(M).row(row))


def test_judge_money_is_recomputed_too() -> None:
    row = _row([_call("judge-m")], {"judge-m": Price(3.0, 6.0)}, part="judge_usage")
    check = _check({"judge-m": Price(3.0, 6.0)})
    assert check.row(row) is None
    row["metadata"]["judge_cost_usd"] = 1e-9
    said = check.row(row)
    assert said is not None and said.startswith(
        "has metadata.judge_cost_usd $1e-09, but its 1 LLM call(s) (judge_usage.per_call) cost $0.00036"
    ), said


def test_tokens_money_and_what_priced_a_call_are_tied_together() -> None:
    base = _row([_call(), _call()], M)
    # a call's tokens lowered with the money, not the row's totals
    row = json.loads(json.dumps(base))
    row["metadata"]["llm_usage"]["per_call"][0]["prompt_tokens"] = 10
    row["metadata"]["cost_usd"] = M["m"].cost(10, 10) + M["m"].cost(100, 10)
    said = _check(M).row(row)
    assert said is not None and said.startswith(
        "has llm_usage.prompt_tokens 200, but its calls (llm_usage.per_call) add up to 110"), said
    # ... with the row's totals too: consistent within the row (the file's
    # llm.tokens still tells, see the end-to-end tests)
    row["metadata"]["llm_usage"]["prompt_tokens"] = 110
    assert _check(M).row(row) is None
    # a call dropped
    row = json.loads(json.dumps(base))
    row["metadata"]["llm_usage"]["per_call"].pop()
    row["metadata"]["llm_usage"]["prompt_tokens"] = 100
    row["metadata"]["llm_usage"]["completion_tokens"] = 10
    row["metadata"]["cost_usd"] = 120e-6
    assert "has llm_usage.calls + cache_hits = 2, but 1 call(s)" in str(_check(M).row(row))
    # priced as a model the table has, not this call's
    prices = {"m": Price(1.0, 2.0), "cheap": Price(0.0, 0.0)}
    row = _row([_call()], prices)
    row["metadata"]["llm_usage"]["per_call"][0]["price"] = "cheap"
    row["metadata"]["cost_usd"] = 0.0
    assert "priced as 'cheap', another model" in str(_check(prices).row(row))
    # an unpriced call carries no money: null, never a number
    row = _row([_call("other")], M)
    assert row["metadata"]["cost_usd"] is None and _check(M).row(row) is None
    row["metadata"]["cost_usd"] = 0.0
    assert "a call in llm_usage.per_call has no price" in str(_check(M).row(row))
    # a call marked unpriced though the run has its price
    row = _row([_call()], M)
    del row["metadata"]["llm_usage"]["per_call"][0]["price"]
    assert "not priced at run.options.prices['m']" in str(_check(M).row(row))


def test_a_price_table_that_is_not_dollars_is_refused() -> None:
    record = price_record(M)
    assert record is not None
    record["explicit"]["m"]["input"] = -1
    said = MoneyCheck({"prices": record}).problem
    assert said is not None and "the price of 'm' is not US dollars >= 0" in said


def test_money_that_cannot_be_recomputed_counts_as_unknown_and_is_said() -> None:
    """A file without the table or the calls (an older version, or stripped): its
    money is null, so a money gate on it fails; never a pass on unchecked money."""
    rows = [_row([_call()], M) for _ in range(3)]
    for row in rows:
        del row["metadata"]["llm_usage"]["per_call"]
    check = _check(M)
    assert all(check.row(r) is None for r in rows)
    assert all(r["metadata"]["cost_usd"] is None and r["metadata"]["saved_usd"] is None for r in rows)
    assert check.notes("report r.json") == [
        "report r.json: the money of 3 row(s) counts as unknown, and a money gate on it fails:"
        " it cannot be recomputed, since the file keeps no price table or no per-call usage"
        " (written by an older pytest-context-bench, or edited); re-run it with this version"
        " to have its money checked and counted"
    ]
    old = _row([_call()], M)
    assert MoneyCheck({}).row(old) is None and old["metadata"]["cost_usd"] is None


# ------------------------------------------------------------ unit: another model


def test_a_dated_snapshot_is_the_same_model_another_family_is_not() -> None:
    for asked, replied in [("gpt-4o-mini", "gpt-4o-mini-2024-07-18"), ("gpt-4", "gpt-4-0613"),
                           ("claude-3-5-sonnet-latest", "claude-3-5-sonnet-20241022"),
                           ("o1-pro", "O1-PRO-2025-03-19"), ("openai/gpt-4o", "gpt-4o-2024-08-06"),
                           ("llama3", "llama3:latest"), ("gemini-2.0-flash", "gemini-2.0-flash-001"),
                           ("m", "")]:
        assert same_model(asked, replied), (asked, replied)
    for asked, replied in [("o1-pro", "gpt-4o-mini"), ("gpt-4o", "gpt-4o-mini-2024-07-18"),
                           ("my-alias", "gpt-4o-2024-08-06")]:
        assert not same_model(asked, replied), (asked, replied)


def test_another_model_in_the_reply_is_priced_at_the_higher_price_and_counted() -> None:
    prices = {"o1-pro": Price(150.0, 600.0), "gpt-4o-mini": Price(0.15, 0.6)}
    entries = [_call("o1-pro", reported_model="gpt-4o-mini") for _ in range(3)]
    s = usage_summary(entries, prices)
    assert s is not None
    assert s["cost_usd"] == pytest.approx(3 * prices["o1-pro"].cost(100, 10))
    assert s["model_mismatch"] == [
        {"asked": "o1-pro", "reported": "gpt-4o-mini", "calls": 3, "priced_as": ["o1-pro"]}]
    # the other way round: the replied model is the dearer one
    s = usage_summary([_call("gpt-4o-mini", reported_model="o1-pro")], prices)
    assert s is not None and s["cost_usd"] == pytest.approx(prices["o1-pro"].cost(100, 10))
    assert s["model_mismatch"][0]["priced_as"] == ["o1-pro"]
    # no price at all: still counted
    s = usage_summary([_call("o1-pro", reported_model="gpt-4o-mini")], {})
    assert s is not None and s["model_mismatch"] == [
        {"asked": "o1-pro", "reported": "gpt-4o-mini", "calls": 1}]
    # a snapshot of the model asked for is no mismatch
    s = usage_summary([_call("gpt-4o-mini", reported_model="gpt-4o-mini-2024-07-18")], prices)
    assert s is not None and "model_mismatch" not in s
    assert s["cost_usd"] == pytest.approx(prices["gpt-4o-mini"].cost(100, 10))


def test_a_mismatch_priced_at_the_lower_price_is_refused() -> None:
    prices = {"o1-pro": Price(150.0, 600.0), "gpt-4o-mini": Price(0.15, 0.6)}
    row = _row([_call("o1-pro", reported_model="gpt-4o-mini")], prices)
    assert _check(prices).row(row) is None
    row["metadata"]["llm_usage"]["per_call"][0]["price"] = "gpt-4o-mini"
    row["metadata"]["cost_usd"] = prices["gpt-4o-mini"].cost(100, 10)
    said = _check(prices).row(row)
    assert said is not None and (
        "has llm_usage.per_call[0] ('o1-pro' asked, 'gpt-4o-mini' replied) priced below $0.021,"
        " the higher of the two models' prices") in said, said


# ------------------------------------------------------------- unit: genai-prices


def _auto_row(model: str, **extra: Any) -> dict[str, Any]:
    entry = _call(model, prompt=1000, completion=200, api_url="https://api.openai.com/v1/chat/completions", **extra)
    return _row([entry], PriceTable(auto=True))


def test_genai_prices_money_is_recomputed_with_genai_prices() -> None:
    genai_prices = pytest.importorskip("genai_prices")
    auto = PriceTable(auto=True)
    row = _auto_row("gpt-4o")
    assert row["metadata"]["llm_usage"]["per_call"][0]["genai"] == "openai/gpt-4o"
    assert _check(auto).row(row) is None
    row["metadata"]["cost_usd"] = row["metadata"]["cost_usd"] / 10
    assert "but its 1 LLM call(s) (llm_usage.per_call) cost $" in str(_check(auto).row(row))
    # priced as genai-prices' cheaper model
    row = _auto_row("gpt-4o")
    cheap = _auto_row("gpt-4o-mini")
    row["metadata"]["llm_usage"]["per_call"][0]["genai"] = "openai/gpt-4o-mini"
    row["metadata"]["cost_usd"] = cheap["metadata"]["cost_usd"]
    assert "of model 'gpt-4o' priced as genai-prices' 'openai/gpt-4o-mini', another model" in str(
        _check(auto).row(row))
    # another genai-prices than the run's: not recomputed, unknown, said
    row = _auto_row("gpt-4o")
    record = price_record(auto)
    assert record is not None and record["genai_prices"] == genai_prices.__version__
    record["genai_prices"] = "0.0.1"
    check = MoneyCheck({"prices": record})
    assert check.row(row) is None and row["metadata"]["cost_usd"] is None
    (note,) = check.notes("shard s1.json")
    assert (
        "shard s1.json: the money of 1 row(s) counts as unknown, and a money gate on it fails:"
        " its calls priced by genai-prices 0.0.1 cannot be recomputed here, where genai-prices"
        f" {genai_prices.__version__} is installed (its data is the price); install"
        " genai-prices==0.0.1 where the file is read") == note


def test_genai_prices_prices_a_mismatch_at_the_dearer_model() -> None:
    """Under auto the replied model was matched first: ``o1-pro`` answered by
    ``gpt-4o-mini`` cost gpt-4o-mini's price, 1,000 times less, without a word."""
    genai_prices = pytest.importorskip("genai_prices")
    row = _auto_row("o1-pro", reported_model="gpt-4o-mini")
    usage = genai_prices.Usage(input_tokens=1000, output_tokens=200)
    dear = float(genai_prices.calc_price(usage, "o1-pro", provider_id="openai").total_price)
    cheap = float(genai_prices.calc_price(usage, "gpt-4o-mini", provider_id="openai").total_price)
    assert dear > 100 * cheap
    assert row["metadata"]["cost_usd"] == pytest.approx(dear)
    assert row["metadata"]["llm_usage"]["model_mismatch"] == [
        {"asked": "o1-pro", "reported": "gpt-4o-mini", "calls": 1, "priced_as": ["o1-pro"]}]
    assert _check(PriceTable(auto=True)).row(row) is None


# ------------------------------------------------------------------ end to end

from test_hardening_money import CALL_USD, N, PRICED_PY  # noqa: E402  (one priced System)

GATE = f"--ctxbench-max-cost-usd={N * CALL_USD / 2}"
HIGH_GATE = f"--ctxbench-max-cost-usd={N * CALL_USD * 2}"


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two shards and a baseline of one priced run (written once for the module)."""
    root = tmp_path_factory.mktemp("recheck")
    (root / "qa.jsonl").write_text(qa_lines(N))
    (root / "priced.py").write_text(PRICED_PY)
    env = {k: v for k, v in os.environ.items() if k not in ("GITHUB_STEP_SUMMARY", "PYTEST_ADDOPTS")}
    env["PYTEST_ADDOPTS"] = INNER_ADDOPTS
    env["PYTHONPATH"] = os.pathsep.join([str(root), *filter(None, [env.get("PYTHONPATH")])])
    run = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly",
           "--ctxbench-dataset=qa.jsonl", "--ctxbench-system=priced:priced",
           "--ctxbench-price=m=1/2", "--ctxbench-cache=off"]
    reply = Reply(text="city 1", usage={"prompt_tokens": 100, "completion_tokens": 10})
    with FakeLLM(handler=lambda r: reply) as llm:
        env["LLM_URL"] = llm.base_url
        for args in (["--ctxbench-save-baseline=base.json", "--ctxbench-json=full.json"],
                     *([f"--ctxbench-shard={i}/2", f"--ctxbench-json=s{i}.json"] for i in (1, 2))):
            done = subprocess.run([*run, *args], cwd=root, env=env, capture_output=True, text=True,
                                  timeout=300, check=False)
            assert done.returncode in (0, 1), done.stdout + done.stderr
    return root


def _copy(runs: Path, tmp_path: Path) -> Path:
    for name in ("s1.json", "s2.json", "full.json", "base.json"):
        shutil.copy(runs / name, tmp_path / name)
    return tmp_path


def _edit(path: Path, change: Any) -> dict[str, Any]:
    doc = read_json(path)
    change(doc)
    path.write_text(json.dumps(doc, indent=1))
    return doc


def _merge(d: Path, *args: str) -> int:
    return main(["merge", str(d / "s1.json"), str(d / "s2.json"), *args])


def _err(capsys: pytest.CaptureFixture[str]) -> str:
    return " ".join(capsys.readouterr().err.split())


def _zero_money(doc: dict[str, Any]) -> None:
    """Every row's money to $0, and the shard's totals with them: consistent."""
    for row in doc["rows"]:
        row["metadata"]["cost_usd"] = 0.0
    for key in ("cost_usd", "total_cost_usd"):
        doc["llm"]["money"][key] = 0.0


def test_the_report_keeps_its_prices_and_each_calls_usage(runs: Path) -> None:
    doc = read_json(runs / "s1.json")
    assert doc["run"]["options"]["prices"] == {
        "explicit": {"m": {"input": 1.0, "output": 2.0, "cached": None, "cache_write": None}},
        "auto": False, "provider": None}
    usage = doc["rows"][0]["metadata"]["llm_usage"]
    assert usage["per_call"] == [{"model": "m", "prompt_tokens": 100, "completion_tokens": 10, "price": "m"}]
    assert read_json(runs / "base.json")["options"]["prices"] == doc["run"]["options"]["prices"]


def test_merge_refuses_a_shard_whose_rows_and_totals_were_zeroed_together(
    runs: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The money of shard 1 edited to $0 with its totals: once a pass of the cost gate."""
    d = _copy(runs, tmp_path)
    assert _merge(d, GATE) == 1, capsys.readouterr()
    doc = _edit(d / "s1.json", _zero_money)
    capsys.readouterr()
    assert _merge(d, GATE) == 4
    err = _err(capsys)
    row = doc["rows"][0]
    assert (
        f"ctxbench merge: error: shard {d / 's1.json'}: rows[0] (suite 'priced', example_id"
        f" {row['example_id']!r}) has metadata.cost_usd $0, but its 1 LLM call(s)"
        " (llm_usage.per_call) cost $0.00012 at the run's prices (run.options.prices): money"
        " was changed after the run wrote it (was the file edited or corrupted? re-run to write"
        " it again; a merged report: merge its shards again); re-run that job."
    ) == err, err
    # ctxbench compare, the same reader
    assert main(["compare", str(d / "full.json"), str(d / "s1.json")]) == 4
    assert "has metadata.cost_usd $0, but its 1 LLM call(s)" in _err(capsys)


def test_tokens_lowered_with_the_money_disagree_with_the_runs_tokens(
    runs: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    d = _copy(runs, tmp_path)

    def shrink(doc: dict[str, Any]) -> None:
        for row in doc["rows"]:
            usage = row["metadata"]["llm_usage"]
            usage["per_call"][0]["prompt_tokens"] = usage["prompt_tokens"] = 1
            usage["per_call"][0]["completion_tokens"] = usage["completion_tokens"] = 0
            row["metadata"]["cost_usd"] = 1e-6
        money = len(doc["rows"]) * 1e-6
        doc["llm"]["money"]["cost_usd"] = doc["llm"]["money"]["total_cost_usd"] = money

    doc = _edit(d / "s1.json", shrink)
    assert _merge(d, GATE) == 4
    err = _err(capsys)
    total = doc["llm"]["tokens"]["prompt_tokens"]
    assert (
        f"shard {d / 's1.json'}: its rows' prompt_tokens (llm_usage, judge_usage) add up to"
        f" {len(doc['rows'])}, but llm.tokens.prompt_tokens (the run's total) is {total:,}:"
        " tokens were changed after the run wrote them") in err, err


def test_a_consistent_rewrite_of_calls_money_and_totals_is_not_detectable(
    runs: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The limit docs/guarantees.md states: a report is not signed. Rewriting every
    figure that ties to another (each call's tokens, the row's usage and money, the
    file's tokens and money) passes every reader."""
    d = _copy(runs, tmp_path)

    def rewrite(doc: dict[str, Any]) -> None:
        for row in doc["rows"]:
            usage = row["metadata"]["llm_usage"]
            usage["per_call"][0]["prompt_tokens"] = usage["prompt_tokens"] = 1
            usage["per_call"][0]["completion_tokens"] = usage["completion_tokens"] = 0
            row["metadata"]["cost_usd"] = 1e-6
        n = len(doc["rows"])
        doc["llm"]["money"]["cost_usd"] = doc["llm"]["money"]["total_cost_usd"] = n * 1e-6
        doc["llm"]["tokens"]["prompt_tokens"] = n
        doc["llm"]["tokens"]["completion_tokens"] = 0

    for name in ("s1.json", "s2.json"):
        _edit(d / name, rewrite)
    assert _merge(d, GATE) == 0, capsys.readouterr()


def test_shards_priced_differently_do_not_merge(
    runs: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An edited price table in one shard (its money rewritten at the new price)."""
    d = _copy(runs, tmp_path)

    def cheaper(doc: dict[str, Any]) -> None:
        doc["run"]["options"]["prices"]["explicit"]["m"]["input"] = 0.0
        doc["run"]["options"]["prices"]["explicit"]["m"]["output"] = 0.0
        _zero_money(doc)

    _edit(d / "s1.json", cheaper)
    assert _merge(d, GATE) == 4
    err = _err(capsys)
    assert "shards from different runs: option 'prices' is" in err, err


def test_files_whose_money_cannot_be_recomputed_fail_a_money_gate(
    runs: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Shards without their calls (an older version's, or stripped): readable, their
    money unknown, said once per file; the cost gate fails instead of passing."""
    d = _copy(runs, tmp_path)
    assert _merge(d, HIGH_GATE) == 0

    def strip(doc: dict[str, Any]) -> None:
        for row in doc["rows"]:
            del row["metadata"]["llm_usage"]["per_call"]

    for name in ("s1.json", "s2.json"):
        _edit(d / name, strip)
    capsys.readouterr()
    assert _merge(d, HIGH_GATE, f"--json={d / 'merged.json'}") == 1
    out, err = capsys.readouterr()
    err = " ".join(err.split())
    assert (
        f"ctxbench merge: warning: shard {d / 's1.json'}: the money of 4 row(s) counts as"
        " unknown, and a money gate on it fails: it cannot be recomputed") in err, err
    assert "max_cost_usd" in out and "FAIL" in out, out
    merged = read_json(d / "merged.json")
    assert merged["summary"]["priced"]["total_cost_usd"] == "nan"


def test_a_baseline_row_whose_money_was_edited_does_not_load(
    runs: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A baseline has no total to add up to: the row's calls tell."""
    d = _copy(runs, tmp_path)

    def cheaper(doc: dict[str, Any]) -> None:
        doc["rows"][2]["metadata"]["cost_usd"] = 0.0

    doc = _edit(d / "base.json", cheaper)
    with pytest.raises(ConfigError) as info:
        load_baseline(d / "base.json")
    message = str(info.value)
    assert message.startswith(
        f"baseline {d / 'base.json'}: rows[2] (suite 'priced', example_id"
        f" {doc['rows'][2]['example_id']!r}) has metadata.cost_usd $0, but its 1 LLM call(s)"
        " (llm_usage.per_call) cost $0.00012 at the run's prices (options.prices)"), message
    assert message.endswith("re-create it with --ctxbench-save-baseline."), message
    assert _merge(d, f"--ctxbench-baseline={d / 'base.json'}") == 4
    assert f"baseline {d / 'base.json'}: rows[2]" in _err(capsys)
    # as the run reads it: unedited it loads, its money as written
    assert load_baseline(runs / "base.json").notes == []


def test_a_run_says_its_baseline_money_counts_as_unknown(
    runs: Path, pytester: pytest.Pytester
) -> None:
    """--ctxbench-baseline of an older version (no per-call usage): the run goes on,
    its summary says why the baseline's money counts as unknown."""
    from helpers import SYSTEMS_PY

    pytester.makefile(".jsonl", qa=qa_lines(N))
    pytester.makepyfile(systems=SYSTEMS_PY)
    doc = read_json(runs / "base.json")
    for row in doc["rows"]:
        del row["metadata"]["llm_usage"]["per_call"]
    doc["datasets"] = {}  # (pytester's qa.jsonl is not byte for byte the fixture's)
    (pytester.path / "base.json").write_text(json.dumps(doc))
    result = pytester.runpytest_subprocess(
        "-p", "no:randomly", "--ctxbench-dataset=qa.jsonl", "--ctxbench-system=systems:echo",
        "--ctxbench-baseline=base.json", timeout=120)
    joined = " ".join(result.stdout.str().split())
    assert (
        f"baseline {pytester.path / 'base.json'}: the money of {N} row(s) counts as unknown,"
        " and a money gate on it fails: it cannot be recomputed") in joined, result.stdout.str()


# ------------------------------------------------------ end to end: another model

N_MISMATCH = 4


def _qa(pytester: pytest.Pytester) -> None:
    pytester.makefile(".jsonl", qa=qa_lines(N_MISMATCH))


def _proxy_run(pytester: pytest.Pytester, llm: FakeLLM, model: str, *args: str) -> pytest.RunResult:
    return pytester.runpytest_subprocess(
        "-p", "no:randomly", "--ctxbench-dataset=qa.jsonl", f"--ctxbench-proxy={llm.base_url}",
        "--ctxbench-proxy-name=local", f"--ctxbench-model={model}", "--ctxbench-cache=off",
        f"--ctxbench-json={pytester.path / 'out.json'}", *args, timeout=300)


def _replying(model: str) -> FakeLLM:
    reply = Reply(text="city 1", usage={"prompt_tokens": 100, "completion_tokens": 10}, model=model)
    return FakeLLM(handler=lambda r: reply)


WARNED = "LLM replies named another model than the one asked for"


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["inprocess", "xdist2"])
def test_a_reply_from_another_model_is_priced_high_warned_once_and_recorded(
    pytester: pytest.Pytester, workers: list[str]
) -> None:
    _qa(pytester)
    prices = ["--ctxbench-price=o1-pro=150/600", "--ctxbench-price=gpt-4o-mini=0.15/0.6"]
    with _replying("gpt-4o-mini") as llm:
        result = _proxy_run(pytester, llm, "o1-pro", *prices, *workers)
    out = result.stdout.str()
    assert result.ret == 0, out
    joined = " ".join(out.split())
    assert joined.count(WARNED) == 1, out
    assert (
        f"CtxBenchWarning: {WARNED}: 'o1-pro' asked, 'gpt-4o-mini' in the reply"
        f" ({N_MISMATCH} calls). A proxy's fallback or alias, or a wrong routing, answered:"
        " the run measured another model than it names. Each such call is priced at the"
        " higher of the two models' prices, since which of them the endpoint bills is not"
        " known.") in joined, out
    assert "price given for model(s) 'gpt-4o-mini' that no call used" not in joined, out
    doc = read_json(pytester.path / "out.json")
    assert doc["llm"]["model_mismatch"] == [
        {"asked": "o1-pro", "reported": "gpt-4o-mini", "calls": N_MISMATCH, "priced_as": ["o1-pro"]}]
    assert doc["llm"]["money"]["prices_unused"] == []
    o1 = Price(150, 600).cost(100, 10)
    assert doc["summary"]["local"]["total_cost_usd"] == pytest.approx(N_MISMATCH * o1)
    # and the readers recompute it as the run did
    assert main(["compare", str(pytester.path / "out.json"), str(pytester.path / "out.json")]) == 0


def test_a_dated_snapshot_in_the_reply_is_not_warned(pytester: pytest.Pytester) -> None:
    _qa(pytester)
    with _replying("gpt-4o-mini-2024-07-18") as llm:
        result = _proxy_run(pytester, llm, "gpt-4o-mini", "--ctxbench-price=gpt-4o-mini=0.15/0.6")
    assert WARNED not in result.stdout.str(), result.stdout.str()
    doc = read_json(pytester.path / "out.json")
    assert "model_mismatch" not in doc["llm"]
    assert doc["summary"]["local"]["total_cost_usd"] == pytest.approx(N_MISMATCH * Price(0.15, 0.6).cost(100, 10))


def test_the_merged_report_sums_the_shards_mismatches(pytester: pytest.Pytester) -> None:
    _qa(pytester)
    with _replying("gpt-4o-mini") as llm:
        for i in (1, 2):
            _proxy_run(pytester, llm, "o1-pro", "--ctxbench-price=o1-pro=150/600",
                       f"--ctxbench-shard={i}/2", f"--ctxbench-json={pytester.path / f's{i}.json'}")
    merged = pytester.path / "merged.json"
    assert main(["merge", str(pytester.path / "s1.json"), str(pytester.path / "s2.json"),
                 f"--json={merged}", "--ctxbench-no-gate"]) == 0
    assert read_json(merged)["llm"]["model_mismatch"] == [
        {"asked": "o1-pro", "reported": "gpt-4o-mini", "calls": N_MISMATCH, "priced_as": ["o1-pro"]}]


def test_fake_endpoint_command_replies_as_another_model() -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "pytest_context_bench.testing", "--port", "0",
         "--reply-model", "gpt-4o-mini"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"}, preexec_fn=sigint_default,
    )
    try:
        assert proc.stdout is not None
        banner = proc.stdout.readline()
        base = banner.split()[4]  # "fake LLM endpoint at http://127.0.0.1:PORT/v1 ..."
        body = {"model": "o1-pro", "messages": [{"role": "user", "content": "hi"}]}
        reply = httpx.post(f"{base}/chat/completions", json=body, timeout=30).json()
        assert reply["model"] == "gpt-4o-mini"
        assert reply["choices"][0]["message"]["content"] == "OK"
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, err
