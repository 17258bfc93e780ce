"""The pairwise judge (both orders, position bias caught) and ``ctxbench compare
--judge-url`` on the flipped examples of two reports, against FakeLLM."""

from __future__ import annotations

import json
import re
import socket
from pathlib import Path
from typing import Any

import pytest

from pytest_context_bench.cache import LLMCache, set_active_cache
from pytest_context_bench.cli import main as ctxbench
from pytest_context_bench.evaluators.judges import JudgeError
from pytest_context_bench.evaluators.pairwise import (
    ChoiceProblem,
    PairwiseJudge,
    parse_choice,
    position_inconsistency,
    task_of,
)
from pytest_context_bench.report import to_json_dict, write_json
from pytest_context_bench.report.run import Record, SuiteInfo, build_run_report
from pytest_context_bench.results import EvalRow
from pytest_context_bench.testing import FakeLLM

FAST = {"retry_base_delay": 0.001, "timeout": 5.0, "max_retries": 0}


@pytest.fixture
def llm():
    with FakeLLM() as server:
        yield server


@pytest.mark.parametrize(
    ("reply", "choice", "reason"),
    [
        ("Better: 2\nReason: it names Paris", "2", "it names Paris"),
        ("**Better:** 1", "1", ""),
        ("Winner: Response 2\nReason: r", "2", "r"),
        ("Better: tie\nReason: both fine", "tie", "both fine"),
        ("2", "2", ""),
        ("Better: 1\nBetter: 1", "1", ""),
    ],
)
def test_parse_choice_accepts(reply: str, choice: str, reason: str) -> None:
    assert parse_choice(reply) == (choice, reason)


@pytest.mark.parametrize(
    ("reply", "problem"),
    [
        ("Response 1 is clearly the better one because it is longer.", "no 'Better: 1, 2 or tie' line"),
        ("Better: 3", "names '3', not 1, 2 or tie"),
        ("Better: 1 or 2", "names '1 or 2'"),
        ("Better: 1\nBetter: 2", "names different winners (1, 2)"),
        ("Better: NaN", "names 'NaN'"),
        ("", "no 'Better"),
    ],
)
def test_parse_choice_refuses(reply: str, problem: str) -> None:
    with pytest.raises(ChoiceProblem, match=re.escape(problem)):
        parse_choice(reply)


def _slot(request: Any, n: int) -> str:
    """The text of response slot ``n`` in a pairwise prompt."""
    prompt = request.messages[0]["content"]
    return prompt.split(f"[Response {n}]\n", 1)[1].split("\n\n", 1)[0]


def test_a_judge_that_always_prefers_the_first_slot_is_100_percent_inconsistent(llm: FakeLLM) -> None:
    llm.set_handler(lambda request: "Better: 1\nReason: the first one")
    judge = PairwiseJudge(llm.base_url, "j", **FAST)
    verdicts = [judge.compare(f"answer a{i}", f"answer b{i}", task="q", reference="ref") for i in range(5)]
    assert all(v.winner == "tie" and not v.consistent for v in verdicts)
    assert position_inconsistency(verdicts) == 1.0
    assert verdicts[0].describe() == (
        "tie (position-inconsistent: A better when A was shown first, B better when B was)")
    # each pair asked in both orders: a first, then b first
    assert [(_slot(r, 1), _slot(r, 2)) for r in llm.requests[:2]] == [("answer a0", "answer b0"),
                                                                      ("answer b0", "answer a0")]
    prompt = llm.requests[0].messages[0]["content"]
    assert "[Task]\nq" in prompt and "[Reference answer]\nref" in prompt
    assert llm.requests[0].json["temperature"] == 0


def test_a_consistent_judge_names_the_winner_whatever_the_order(llm: FakeLLM) -> None:
    def content_judge(request: Any) -> str:
        first, second = _slot(request, 1), _slot(request, 2)
        if "Paris" in first and "Paris" in second:
            return "Better: tie\nReason: both"
        return f"Better: {1 if 'Paris' in first else 2}\nReason: it names Paris"

    llm.set_handler(content_judge)
    judge = PairwiseJudge(llm.base_url, **FAST)
    v = judge.compare("Lyon", "Paris")
    assert (v.winner, v.consistent, v.a_first, v.b_first) == ("b", True, "b", "b")
    assert v.describe() == "B better" and v.reasons == ("it names Paris", "it names Paris")
    assert judge.compare("Paris", "Lyon").winner == "a"
    tie = judge.compare("Paris!", "Paris.")
    assert tie.winner == "tie" and tie.consistent and tie.describe() == "tie"
    assert position_inconsistency([v, tie]) == 0.0
    assert position_inconsistency([]) != position_inconsistency([])  # nan


def test_an_unreadable_pairwise_reply_is_an_error(llm: FakeLLM) -> None:
    llm.push("Better: 1", "I cannot decide, both have merits.")
    with pytest.raises(JudgeError, match="the pairwise judge's reply has no 'Better"):
        PairwiseJudge(llm.base_url, **FAST).compare("a", "b")


def test_both_orders_are_cache_entries_of_their_own(llm: FakeLLM, tmp_path: Path) -> None:
    llm.set_handler(lambda request: "Better: 2")
    cache = LLMCache.in_dir(tmp_path)
    previous = set_active_cache(cache)
    try:
        judge = PairwiseJudge(llm.base_url, **FAST)
        first = judge.compare("a", "b")
        again = judge.compare("a", "b")
    finally:
        set_active_cache(previous)
        cache.store.close()
    assert first == again and len(llm.requests) == 2  # the second compare: two hits
    assert cache.stats.stored == 2


def test_task_of_reads_the_systems_recorded_question() -> None:
    calls = [{"source": "evaluator:llm_judge", "messages": [{"role": "user", "text": "judge"}]},
             {"source": "system", "messages": [{"role": "system", "text": "s"}, {"role": "user", "text": "Capital?"}]}]
    assert task_of(None, calls) == "Capital?"
    assert task_of(None, []) is None


# -- ctxbench compare --judge-url -----------------------------------------------------------


def _report(path: Path, passing: dict[str, bool], responses: dict[str, str], calls: bool = False) -> Path:
    records = []
    for i, (ident, ok) in enumerate(passing.items()):
        row = EvalRow(system="bot", example_id=ident, dataset="qa", scores={"f1": 1.0 if ok else 0.0},
                      input_tokens=1, output_tokens=1, metadata={"score_field": "f1"}, latency=0.1)
        if calls:
            row.calls = [{"source": "system", "url": "http://x", "model": "m", "params": {},
                          "messages": [{"role": "user", "text": f"What is the capital of {ident}?"}],
                          "reply": responses[ident], "finish_reason": "stop", "usage": None, "latency": 0.1,
                          "cache": "off", "attempts": [], "error": None}]
        records.append(Record("bot", "cli", (i,), "pass" if ok else "below", row,
                              {"response": responses[ident], "reference": f"ref {ident}"}))
    report = build_run_report(records, {"cli": SuiteInfo("cli")})
    write_json(to_json_dict(report, run={}, gates_enforced=True, version="test"), path)
    return path


def _two_reports(tmp_path: Path) -> tuple[Path, Path]:
    a = _report(tmp_path / "a.json", {"fr": True, "de": False, "it": True},
                {"fr": "Paris", "de": "Munich", "it": "Rome"}, calls=True)
    b = _report(tmp_path / "b.json", {"fr": False, "de": True, "it": True},
                {"fr": "Lyon \x1b[2J<script>x</script>", "de": "Berlin", "it": "Rome"}, calls=True)
    return a, b


def test_compare_judges_the_flipped_examples(
    llm: FakeLLM, tmp_path: Path, capsys: pytest.CaptureFixture[str], browser: Any
) -> None:
    a, b = _two_reports(tmp_path)
    # A judge that prefers the first slot, except when Berlin is shown: then Berlin.
    def judge(request: Any) -> str:
        first, second = _slot(request, 1), _slot(request, 2)
        if "Berlin" in first + second:
            return f"Better: {1 if 'Berlin' in first else 2}\nReason: Berlin is the capital"
        return "Better: 1\nReason: the first"

    llm.set_handler(judge)
    md, html = tmp_path / "c.md", tmp_path / "c.html"
    status = ctxbench(["compare", str(a), str(b), "--judge-url", llm.base_url, "--judge-model", "jm",
                       "--markdown", str(md), "--html", str(html)])
    out = capsys.readouterr().out
    assert status in (0, 1)
    assert ("pairwise judge (jm) on 2 flipped example(s), each asked in both orders: B better in 1,"
            " A better in 0, tie in 1; position-inconsistent in 1 of 2 (50%), counted as ties") in " ".join(out.split())
    assert "bot: qa/de (fail → pass): B better" in out
    assert "bot: qa/fr (pass → fail): tie (position-inconsistent" in out
    assert "\x1b" not in out
    # the System's recorded question is the task the judge is given
    assert "[Task]\nWhat is the capital of fr?" in llm.requests[0].messages[0]["content"]
    assert len(llm.requests) == 4 and {r.json["model"] for r in llm.requests} == {"jm"}
    summary = md.read_text()
    assert "Pairwise judge (jm)" in summary and "| pairwise judge |" in summary
    assert "tie (position-inconsistent" in summary and "<script>" not in summary
    from browser import open_report

    opened = open_report(browser, html)
    flipped = opened.page.inner_text("#flipped")
    assert "pairwise judge: B better" in flipped and "pairwise judge: tie (position-inconsistent" in flipped
    assert "Lyon [U+001B][2J<script>x</script>" in flipped
    assert "position-inconsistent in 1 of 2 (50%)" in opened.page.inner_text("body")
    opened.page.screenshot(path=str(tmp_path / "compare.png"), full_page=True)
    opened.assert_clean()


def test_compare_judge_errors(llm: FakeLLM, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a, b = _two_reports(tmp_path)
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{sock.getsockname()[1]}"
    out = tmp_path / "c.md"
    assert ctxbench(["compare", str(a), str(b), "--judge-url", dead, "--judge-model", "jm", "--markdown", str(out)]) == 4
    err = capsys.readouterr().err
    assert "the pairwise judge failed" in err and dead in err and err.count("\n") == 1
    assert not out.exists()  # nothing written
    # No model named: the endpoint is asked for its only one; a dead one says which option to give.
    assert ctxbench(["compare", str(a), str(b), "--judge-url", dead, "--markdown", str(out)]) == 4
    err = capsys.readouterr().err
    assert "no --judge-model was given" in err and "--judge-model=MODEL" in err and err.count("\n") == 1
    assert not out.exists()
    assert ctxbench(["compare", str(a), str(b), "--judge-model", "m"]) == 4
    assert "--judge-model needs --judge-url" in capsys.readouterr().err
    assert ctxbench(["compare", str(a), str(b), "--judge-url", "ftp://x"]) == 4
    assert "--judge-url must be an http(s) URL" in capsys.readouterr().err
    # an unreadable verdict is that example's, the others are judged
    llm.set_handler(lambda request: "Better: 2" if "Berlin" in request.messages[0]["content"] else "hmm, hard to say, both are wrong")
    assert ctxbench(["compare", str(a), str(b), "--judge-url", llm.base_url]) in (0, 1)
    text = capsys.readouterr().out
    assert "1 unreadable verdict(s)" in text and "error: the pairwise judge's reply has no 'Better" in text
    doc = json.loads((a).read_text())
    assert doc["rows"][0]["response"] == "Paris"
