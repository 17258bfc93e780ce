"""Judges through pytest (issue 36): an example's rubric decides its row, llm-rubric
assertions, judge repeats keyed apart and replayed, people's labels that leave a
disagreeing judge's gates not enforced (terminal, JSON, Markdown, HTML, JUnit,
merge), and the usage errors, under -n 2 with FakeLLM on 127.0.0.1."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from browser import open_report
from helpers import read_json, usage_line
from pytest_context_bench.cli import main as ctxbench
from pytest_context_bench.report import load_report
from pytest_context_bench.testing import FakeLLM, Script

BOT = '''
class Bot:
    name = "bot"

    def process(self, example):
        answers = {
            "polite": "Hello! Refunds are possible within 30 days.",
            "rude": "No refunds. <b>Go away</b> \\x1b[2J",
            "promise": "Sure, a refund any time, even after a year!",
            "greet": "Hello there",
            "math": "4",
            "scored": "Within 30 days, as the policy says.",
        }
        return {**example, "response": answers[example["id"]]}

bot = Bot()
'''

EXAMPLES = [
    {"id": "polite", "question": "Can I get a refund?", "rubric": "Polite and cites the 30-day policy"},
    {"id": "rude", "question": "Can I get a refund?", "rubric": "Polite and cites the 30-day policy"},
    {"id": "promise", "question": "Refund after a year?", "answer": "No: within 30 days only.",
     "rubric": {"criteria": "Promises nothing beyond the 30-day policy", "scale": [0, 10], "pass_score": 8}},
    {"id": "greet", "question": "Say hi", "assert": [{"type": "llm-rubric", "value": "Is a greeting"}]},
    {"id": "math", "question": "2+2?", "answer": "4"},
    {"id": "scored", "question": "Refund?", "rubric": "Cites the policy"},
]

#: The judge: what it says of each response (the rude one's reason is hostile).
RULES = [
    {"match": "Go away", "reply": "Score: 1\nReason: <script>window.__pwned = 9</script> rude \u001b[31m|"},
    {"match": "even after a year", "reply": "Score: 2\nReason: promises a refund after a year"},
    {"match": "Is a greeting", "reply": '{"reason": "a greeting", "pass": true, "score": 1}'},
    {"match": "as the policy says", "reply": "Score: 4\nReason: cites it",
     "logprobs": {"4": -0.3, "5": -1.4, "3": -3.0}},
    {"match": "Hello! Refunds", "reply": "Score: 5\nReason: polite, cites the policy"},
    {"regex": "Rate the response", "reply": "5"},
]

#: People disagree with the judge on "rude" and "promise" (they pass them) and on
#: "polite" (they fail it): Cohen's kappa is negative.
DISAGREE = [("polite", "fail"), ("rude", "pass"), ("promise", "pass"), ("greet", "pass"),
            ("scored", "pass")]
AGREE = [("polite", "pass"), ("rude", "fail"), ("promise", "fail"), ("greet", "pass"),
         ("scored", "pass")]


def _project(pytester: pytest.Pytester, labels: list[tuple[str, str]]) -> None:
    pytester.makepyfile(judgedbot=BOT)
    pytester.makefile(".jsonl", data="\n".join(json.dumps(e) for e in EXAMPLES))
    pytester.makefile(".jsonl", labels="\n".join(
        json.dumps({"example_id": i, "label": lab}) for i, lab in labels))
    pytester.makeini("[pytest]\npythonpath = .\n")


def _run(pytester: pytest.Pytester, llm: FakeLLM, *extra: str) -> Any:
    return pytester.runpytest(
        "-p", "no:cacheprovider", "-n", "2",
        "--ctxbench-dataset=data.jsonl", "--ctxbench-system=judgedbot:bot",
        f"--ctxbench-judge-url={llm.base_url}", "--ctxbench-judge-retries=0",
        "--ctxbench-judge-labels=labels.jsonl", "--ctxbench-min-pass-rate=0.9",
        "--ctxbench-max-error-rate=0", "--ctxbench-transcripts=all",
        f"--ctxbench-cache-dir={pytester.path}", *extra,
    )


def _rows(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {r["example_id"]: r for r in doc["rows"]}


def test_a_disagreeing_judge_gates_nothing_everywhere_it_shows(
    pytester: pytest.Pytester, browser: Any, tmp_path: Path
) -> None:
    _project(pytester, DISAGREE)
    with FakeLLM(handler=Script(RULES)) as llm:
        shards, shown = [], []
        for i in (1, 2):
            out = f"shard{i}.json"
            extra = [f"--ctxbench-shard={i}/2", f"--ctxbench-json={out}", "--ctxbench-min-judge-kappa=0.4"]
            if i == 1:
                extra += ["--junitxml=junit.xml", "--ctxbench-markdown=summary.md"]
            result = _run(pytester, llm, *extra)
            text = result.stdout.str()
            # below the pass rate, and yet green: its judge's gates are not enforced
            assert result.ret == 0, text
            assert "NOT ENFORCED" in text and "judge agreement with" in text
            shown.append(text)
            shards.append(pytester.path / out)
        # the judge's hostile reason, in one shard's details: escaped, never acted on
        assert "\x1b" not in "".join(shown) and "rude \\x1b[31m|" in "".join(shown)
        doc = load_report(shards[0])  # the schema holds it
        gate = next(g for g in doc["gates"] if g["gate"] == "min_pass_rate")
        assert gate["enforced"] is False and "Cohen's kappa with labels.jsonl" in gate["not_enforced"]
        assert next(g for g in doc["gates"] if g["gate"] == "max_error_rate").get("enforced", True)
        junit = (pytester.path / "junit.xml").read_text()
        # a JUnit test case skipped, saying why
        assert re.search(r'name="gate\[bot:min_pass_rate\]"[^<]*><properties>.*?</properties>'
                         r'<skipped type="pytest.skip" message="not enforced \(the judge', junit)
        summary = (pytester.path / "summary.md").read_text()
        assert "⚠️ not enforced (would " in summary and "### Judge agreement with labels.jsonl" in summary
        assert "<script>" not in summary

        # merged: the shards' labels and minimum kappa hold for the whole run
        merged, page = tmp_path / "merged.json", tmp_path / "merged.html"
        assert ctxbench(["merge", *map(str, shards), "--json", str(merged), "--html", str(page)]) == 0
        whole = read_json(merged)
        rows = _rows(whole)
        assert {r["status"] for r in rows.values()} >= {"pass", "below"}
        agreement = whole["judge_agreement"]["suites"][0]
        assert agreement["n"] == 5 and agreement["kappa"] < 0.4 and "not_enforced" in agreement
        # the rubric rows: decided by the judge, the rubric and its reason in the details
        assert rows["rude"]["status"] == "below" and rows["rude"]["scores"]["judge_pass"] == 0.0
        details = rows["rude"]["metadata"]["llm_judge"]
        assert details["rubric"] == "Polite and cites the 30-day policy"
        assert details["judge_reason"] == "<script>window.__pwned = 9</script> rude \x1b[31m|"
        assert rows["promise"]["metadata"]["llm_judge"]["scale"] == [0, 10]
        assert rows["scored"]["metadata"]["llm_judge"]["probabilities"]["4"] > 0.5
        assert rows["math"]["scores"]["judge_score"] == 1.0 and "judge_pass" not in rows["math"]["scores"]
        assert rows["greet"]["scores"]["assert_pass"] == 1.0
        assert "a greeting [rubric: Is a greeting]" in rows["greet"]["metadata"]["assertions"]["1. llm-rubric"]
        # the judge's call is in the row's call records, and metered apart
        (call,) = [c for c in rows["rude"]["calls"] if c["source"] == "evaluator:llm_judge"]
        assert "Evaluation criteria:\nPolite and cites" in call["messages"][0]["text"]
        assert rows["rude"]["metadata"]["judge_usage"]["calls"] == 1
        # held to a kappa it reaches (-1), the gate is enforced and fails
        assert ctxbench(["merge", *map(str, shards), "--ctxbench-min-judge-kappa=-1"]) == 1

    opened = open_report(browser, page)
    opened.assert_clean()
    body = opened.page.inner_text("#gates")
    assert "not enforced (would fail)" in body and "Judge agreement with labels.jsonl" in body
    assert "the judge's Cohen's kappa with labels.jsonl is" in body
    opened.page.screenshot(path=str(tmp_path / "gates.png"), full_page=True)
    # the judge's hostile reason is text: shown, never run
    opened.page.fill("#search", "rude")
    opened.page.click("#example-table button.toggle >> nth=0")
    table = opened.page.inner_text("#example-table")
    assert "<script>window.__pwned = 9</script> rude [U+001B][31m|" in table
    assert opened.page.evaluate("typeof window.__pwned") == "undefined"
    assert opened.page.locator("main script").count() == 0
    opened.page.screenshot(path=str(tmp_path / "row.png"), full_page=True)
    opened.assert_clean()


def test_repeats_are_asked_cached_and_replayed_and_an_agreeing_judge_gates(
    pytester: pytest.Pytester,
) -> None:
    _project(pytester, AGREE)
    with FakeLLM(handler=Script(RULES)) as llm:
        first = _run(pytester, llm, "--ctxbench-judge-repeat=3", "--ctxbench-min-judge-kappa=0.5",
                     "--ctxbench-json=first.json")
        # the judge agrees (kappa 1): its gate applies, and fails the run
        assert first.ret == 1, first.stdout.str()
        first.stdout.fnmatch_lines(["*FAIL bot: min_pass_rate*"])
        judge_calls = [r for r in llm.requests if r.path.endswith("/chat/completions")]
        assert len(judge_calls) == 6 * 3  # every judged example asked three times
        sent = len(llm.requests)
        again = _run(pytester, llm, "--ctxbench-judge-repeat=3", "--ctxbench-min-judge-kappa=0.5",
                     "--ctxbench-json=again.json", "--ctxbench-cache=replay")
        assert again.ret == 1 and len(llm.requests) == sent  # replayed: nothing sent
    a, b = read_json(pytester.path / "first.json"), read_json(pytester.path / "again.json")
    for name in ("rows",):
        strip = [{k: v for k, v in r.items() if k not in ("latency", "calls", "metadata")} for r in a[name]]
        assert strip == [{k: v for k, v in r.items() if k not in ("latency", "calls", "metadata")}
                         for r in b[name]]
    rude = _rows(a)["rude"]
    assert rude["metadata"]["llm_judge"]["repeats"] == {
        "n": 3, "ratings": [1.0, 1.0, 1.0], "min": 1.0, "max": 1.0, "stdev": 0.0, "passed": "0 of 3"}
    assert sorted(c.get("repeat", 1) for c in rude["calls"] if c["source"] != "system") == [1, 2, 3]
    assert a["judge_agreement"]["suites"][0]["kappa"] == 1.0


@pytest.mark.parametrize(
    ("labels", "args", "expected"),
    [
        ('{"example_id": "polite", "label": "pass"}\n{"example_id": "rude", "label": "ok"}\n',
         ["--ctxbench-judge-url=http://127.0.0.1:9"],
         "--ctxbench-judge-labels: labels file {path}/labels.jsonl, line 2: 'label' must be"),
        (None, ["--ctxbench-min-judge-kappa=0.5"], "--ctxbench-min-judge-kappa needs --ctxbench-judge-labels"),
        (None, ["--ctxbench-judge-repeat=3"], "--ctxbench-judge-repeat needs --ctxbench-judge-url"),
        (None, ["--ctxbench-judge-url=http://127.0.0.1:9", "--ctxbench-judge-repeat=0"],
         "--ctxbench-judge-repeat must be an integer in [1, 100], given: '0'"),
        (None, [], "examples with a 'rubric' field and an llm-rubric assertion need an LLM judge"),
        ('{"example_id": "polite", "label": "pass"}\n', ["--ctxbench-judge-url=http://127.0.0.1:9",
                                                         "--ctxbench-min-judge-kappa=1.5"],
         "--ctxbench-min-judge-kappa must be a number in [-1, 1], given: '1.5'"),
    ],
    ids=["bad-label-line", "kappa-without-labels", "repeat-without-judge", "repeat-zero", "no-judge",
         "kappa-out-of-range"],
)
def test_usage_errors_name_the_file_line_or_option(
    pytester: pytest.Pytester, labels: str | None, args: list[str], expected: str
) -> None:
    pytester.makepyfile(judgedbot=BOT)
    pytester.makefile(".jsonl", data="\n".join(json.dumps(e) for e in EXAMPLES))
    pytester.makeini("[pytest]\npythonpath = .\n")
    extra = []
    if labels is not None:
        pytester.makefile(".jsonl", labels=labels)
        extra.append("--ctxbench-judge-labels=labels.jsonl")
    result = pytester.runpytest(
        "-p", "no:cacheprovider", "--ctxbench-dataset=data.jsonl", "--ctxbench-system=judgedbot:bot",
        *extra, *args)
    assert result.ret == 4
    assert expected.format(path=pytester.path) in usage_line(result)
