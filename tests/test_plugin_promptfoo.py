"""A promptfoo config as --ctxbench-dataset: its prompts rendered and sent through
--ctxbench-proxy (one dataset per prompt), defaultTest merged, a CSV tests file with
__expected columns, what is not run named once in the header, bad assertions exit 4
naming the file and the test's line, the same rows under -n 2 and on cache replay."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from helpers import read_json, usage_line
from pytest_context_bench.testing import FakeLLM, Reply

CONFIG = """\
description: a support bot
prompts:
  - id: terse
    raw: "Answer briefly: {{question}}"
  - label: chat
    raw: '[{"role": "system", "content": "You are kind."}, {"role": "user", "content": "{{question}} ({{tone}})"}]'
providers: [openai:gpt-4o-mini]
defaultTest:
  vars:
    tone: polite
  assert:
    - type: not-icontains
      value: "as an ai"
tests:
  - description: refund window
    vars:
      question: How long do I have to return shoes?
    assert:
      - type: icontains
        value: 30 days
        metric: policy
  - description: shipping
    vars:
      question: Do you ship abroad?
    assert:
      - type: javascript
        value: output.length < 100
      - type: contains-any
        value: "yes, Yes"
  - file://more.csv
"""

CSV = """\
question,__expected1,__expected2,__description
Is {{tone}} talk free?,icontains: free,not-contains: {{tone}},free talk
Where are you?,regex: ^We are in \\w+\\.$,,location
"""


def _reply(request: Any) -> Reply:
    text = " ".join(str(m.get("content", "")) for m in request.messages)
    if "return shoes" in text:
        return Reply(text="You have 30 days.")
    if "ship abroad" in text:
        return Reply(text="Yes, we do.")
    if "talk free" in text:
        return Reply(text="It is free and polite.")
    return Reply(text="We are in Lyon.")


@pytest.fixture
def server() -> Any:
    with FakeLLM(handler=_reply) as fake:
        yield fake


def _project(pytester: pytest.Pytester) -> None:
    (pytester.path / "promptfooconfig.yaml").write_text(CONFIG)
    (pytester.path / "more.csv").write_text(CSV)


def _run(pytester: pytest.Pytester, server: FakeLLM, *args: str) -> pytest.RunResult:
    return pytester.runpytest_subprocess(
        "--ctxbench-dataset=promptfooconfig.yaml", f"--ctxbench-proxy={server.base_url}",
        "--ctxbench-model=m", "--ctxbench-proxy-name=m", "-p", "no:randomly", *args,
    )


def _rows(doc: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    return {(r["dataset"], r["example_id"]): r for r in doc["rows"]}


def test_a_promptfoo_config_runs_as_datasets_with_the_same_rows_under_xdist_and_on_replay(
    pytester: pytest.Pytester, server: FakeLLM, tmp_path: Path
) -> None:
    """One serial run (recording the cache, saving a baseline) checked in full; the
    same rows under -n 2 (where the gates are set and fail) and on replay; the next
    run compared with the baseline."""
    _project(pytester)
    cache = [f"--ctxbench-cache-dir={tmp_path / 'cache'}"]
    result = _run(pytester, server, "--ctxbench-json=serial.json", "--ctxbench-cache=once", *cache,
                  "--ctxbench-save-baseline=base.json")
    out = result.stdout.str()
    header = re.sub(r"\s+", " ", out.split("collected")[0])
    assert "datasets promptfooconfig:terse (4), promptfooconfig:chat (4)" in header
    assert header.count("not run here:") == 1  # once for the file, both prompts named
    assert "providers (1): ctxbench runs your --ctxbench-system or --ctxbench-proxy" in header
    assert "javascript assertions (1, test 2): dropped" in header
    # the rendered prompts were sent: a string as the user message, a chat as messages
    sent = [r.messages for r in server.requests]
    assert [{"role": "user", "content": "Answer briefly: How long do I have to return shoes?"}] in sent
    assert [{"role": "system", "content": "You are kind."},
            {"role": "user", "content": "Do you ship abroad? (polite)"}] in sent
    assert len(sent) == 8
    doc = read_json(pytester.path / "serial.json")
    rows = _rows(doc)
    assert set(rows) == {(f"promptfooconfig:{p}", i) for p in ("terse", "chat")
                         for i in ("refund-window", "shipping", "free-talk", "location")}
    for (dataset, ident), row in rows.items():
        assert row["metadata"]["score_field"] == "assert_score", ident
    refund = rows[("promptfooconfig:terse", "refund-window")]
    assert refund["status"] == "pass"
    assert refund["metadata"]["assertions"]["1. not-icontains"] == "pass"  # defaultTest's first
    free = rows[("promptfooconfig:chat", "free-talk")]  # {{tone}} rendered in the CSV assertion
    assert free["status"] == "below"
    assert free["metadata"]["assertions"]["3. not-contains"].startswith('FAIL: Expected output to not contain "polite"')
    assert rows[("promptfooconfig:terse", "location")]["status"] == "pass"
    # one suite per prompt: its own summary, gates and Pareto rank
    assert set(doc["summary"]) == {"m:terse", "m:chat"}
    assert doc["summary"]["m:terse"]["metric:policy"] == 1.0
    assert doc["summary"]["m:chat"]["pass_rate"] == 0.75  # free-talk fails its not-contains
    assert {s["label"]: s["datasets"] for s in doc["suites"]} == {
        "m:terse": ["promptfooconfig:terse"], "m:chat": ["promptfooconfig:chat"]}
    assert result.ret == 0, out
    gated = _run(pytester, server, "--ctxbench-json=xdist.json", "-n", "2", "--ctxbench-min-pass-rate=0.8")
    assert gated.ret == 1
    gated.stdout.fnmatch_lines(["*FAIL m:terse: min_pass_rate: pass_rate = 0.75*",
                                "*FAIL m:chat: min_pass_rate: pass_rate = 0.75*"])
    sent = len(server.requests)
    _run(pytester, server, "--ctxbench-json=replay.json", "--ctxbench-cache=replay", *cache)
    assert len(server.requests) == sent  # nothing sent on replay

    def verdicts(name: str) -> dict[Any, Any]:
        return {k: (r["status"], r["scores"], r["metadata"]["assertions"])
                for k, r in _rows(read_json(pytester.path / name)).items()}

    assert verdicts("serial.json") == verdicts("xdist.json") == verdicts("replay.json")
    summaries = [{k: {m: v for m, v in d.items() if not m.startswith("latency")}
                  for k, d in read_json(pytester.path / n)["summary"].items()}
                 for n in ("serial.json", "xdist.json", "replay.json")]
    assert summaries[0] == summaries[1] == summaries[2]
    # a baseline keeps each prompt's suite, and the next run is compared with it
    compared = _run(pytester, server, "--ctxbench-baseline=base.json", "--ctxbench-json=cmp.json",
                    "--ctxbench-max-drop=pass_rate:0.05")
    assert compared.ret == 0, compared.stdout.str()
    matched = {s["suite"]: s["n_matched"] for s in read_json(pytester.path / "cmp.json")["baseline_comparison"]["suites"]}
    assert matched == {"m:terse": 4, "m:chat": 4}


def test_a_bad_assertion_in_a_config_names_the_file_and_line(
    pytester: pytest.Pytester, server: FakeLLM
) -> None:
    _project(pytester)
    config = pytester.path / "promptfooconfig.yaml"
    config.write_text(CONFIG.replace("type: contains-any", "type: contians-any"))
    line = usage_line(_run(pytester, server))
    assert "promptfooconfig.yaml:22: assertion 2 (contians-any)" in line, line  # the test's line
    assert "unknown assertion type 'contians-any'. Did you mean 'contains-any'?" in line
    (pytester.path / "more.csv").write_text("question,__expected\nq,regex: (unclosed\n")
    config.write_text(CONFIG)
    line = usage_line(_run(pytester, server))
    assert "more.csv:2:" in line and "invalid regular expression" in line, line
