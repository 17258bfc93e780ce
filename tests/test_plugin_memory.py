"""Memory datasets under pytest: one item per question, one ingestion per conversation."""

from __future__ import annotations

import json

import pytest

CONVERSATIONS = [
    {
        "id": f"conv-{c}",
        "task": "memory",
        "turns": [
            {"role": "user", "content": f"I moved to city {c} last year."},
            {"role": "assistant", "content": "Nice!"},
        ],
        "qa_pairs": [
            {
                "question": "Where did I move?",
                "answer": f"city {c}",
                "type": "single_hop",
            },
            {"question": "When did I move?", "answer": "last year", "type": "temporal"},
            {
                "question": "What is my cat called?",
                "answer": "Tom",
                "type": "adversarial",
            },
        ],
    }
    for c in range(1, 4)
]

MEMSYS = '''
import os

class Notes:
    """Remembers the last user turn; knows where and when, never the cat."""
    name = "notes"
    def __init__(self):
        self.text = ""
    def reset(self):
        self.text = ""
    def ingest(self, turns):
        with open(os.environ["INGEST_LOG"], "a") as fh:
            fh.write(turns[0]["content"] + "\\n")
        self.text = turns[0]["content"]
    def query(self, question):
        if question.startswith("Where"):
            return self.text.split(" to ")[1].split(" last")[0]
        if question.startswith("When"):
            return "last year"
        raise RuntimeError("no memory of a cat")

notes = Notes()
'''


def test_one_item_per_question(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """In-process (one ingestion per conversation, exactly). Under -n 2 each worker
    ingests the conversations of its questions, and their rows reach the
    controller: the xdist2 case of test_memory_rows_carry_llm_usage_and_money."""
    pytester.makefile(
        ".jsonl", chats="\n".join(json.dumps(c) for c in CONVERSATIONS) + "\n"
    )
    pytester.makepyfile(memsys=MEMSYS)
    pytester.makeini("[pytest]\npythonpath = .\n")
    log = pytester.path / "ingest.log"
    monkeypatch.setenv("INGEST_LOG", str(log))
    out = pytester.path / "out.json"
    result = pytester.runpytest(
        "--ctxbench-dataset=chats.jsonl",
        "--ctxbench-system=memsys:notes",
        f"--ctxbench-json={out}",
    )
    assert result.ret == 1  # the cat questions raise: errors of those examples
    result.assert_outcomes(passed=6, errors=3)
    doc = json.loads(out.read_text())
    assert [r["example_id"] for r in doc["rows"][:3]] == [
        "conv-1_0",
        "conv-1_1",
        "conv-1_2",
    ]
    assert {r["metadata"]["qa_type"] for r in doc["rows"]} == {
        "single_hop",
        "temporal",
        "adversarial",
    }
    assert doc["summary"]["notes"]["error_rate"] == pytest.approx(1 / 3)
    assert doc["summary"]["notes"]["pass_rate"] == pytest.approx(2 / 3)
    # The per-question-type breakdown, as evaluate_memory gives it.
    assert doc["summary"]["notes"]["f1_single_hop"] == 1.0
    assert doc["summary"]["notes"]["f1_adversarial"] == 0.0
    ingests = log.read_text().splitlines()
    assert len(ingests) == 3  # once per conversation
    result.stdout.fnmatch_lines(
        [
            "*ERROR at call of example?notes/chats/conv-1_2?*",
            "*RuntimeError: no memory of a cat*",
        ]
    )


def test_memory_datasets_are_not_for_the_marker(pytester: pytest.Pytester) -> None:
    pytester.makefile(
        ".jsonl", chats="\n".join(json.dumps(c) for c in CONVERSATIONS) + "\n"
    )
    pytester.makepyfile(
        test_m="""
        import pytest

        @pytest.mark.ctxbench(dataset="chats.jsonl")
        def test_mem(ctxbench_example, ctxbench_record):
            pass
        """
    )
    result = pytester.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: *memory datasets run from the command line*"])


LLM_MEMSYS = '''
import os
from pytest_context_bench import http_client

URL = os.environ["LLM_URL"] + "/v1/chat/completions"

class Summary:
    """A memory layer that asks a model to summarise at ingestion and to answer."""
    name = "summary"
    def __init__(self):
        self.client = http_client()
        self.notes = ""
    def _ask(self, what, text):
        reply = self.client.post(URL, json={"model": "m", "messages": [
            {"role": "user", "content": what + ": " + text}]})
        reply.raise_for_status()
        return reply.json()["choices"][0]["message"]["content"]
    def reset(self):
        self.notes = ""
    def ingest(self, turns):
        self.notes = self._ask("summarise", " ".join(t["content"] for t in turns))
    def query(self, question):
        return self._ask("answer", self.notes + " " + question)

summary = Summary()
'''


def _memory_llm(request):  # type: ignore[no-untyped-def]
    from pytest_context_bench.testing import Reply

    body = request.json or {}
    text = " ".join(str(m.get("content", "")) for m in body.get("messages", []))
    if body.get("model") == "judge":
        return Reply(text="YES", usage={"prompt_tokens": 40, "completion_tokens": 1})
    if text.startswith("summarise"):
        return Reply(
            text="moved to a city", usage={"prompt_tokens": 30, "completion_tokens": 5}
        )
    return Reply(text="a city", usage={"prompt_tokens": 20, "completion_tokens": 2})


@pytest.mark.parametrize(
    "extra",
    [[], ["--ctxbench-timeout=60"], ["-n", "2"]],
    ids=["inprocess", "through_the_runner", "xdist2"],
)
def test_memory_rows_carry_llm_usage_and_money(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, extra: list[str]
) -> None:
    """The ingestion's calls count in the row of the question that ingested, the
    query's in each row, the judge's apart; with prices, the money is known."""
    from pytest_context_bench.testing import FakeLLM

    pytester.makefile(
        ".jsonl", chats="\n".join(json.dumps(c) for c in CONVERSATIONS[:2]) + "\n"
    )
    pytester.makepyfile(memsys=LLM_MEMSYS)
    pytester.makeini("[pytest]\npythonpath = .\n")
    out = pytester.path / "out.json"
    with FakeLLM(handler=_memory_llm) as llm:
        monkeypatch.setenv("LLM_URL", llm.base_url)
        result = pytester.runpytest_subprocess(
            "-p",
            "no:randomly",
            "--ctxbench-dataset=chats.jsonl",
            "--ctxbench-system=memsys:summary",
            f"--ctxbench-judge-url={llm.base_url}",
            "--ctxbench-judge-model=judge",
            "--ctxbench-price=m=1/2",
            "--ctxbench-price=judge=10/30",
            "--ctxbench-max-cost-usd=1",
            "--ctxbench-transcripts=all",
            f"--ctxbench-json={out}",
            *extra,
        )
    assert result.ret == 0, result.stdout.str()
    doc = json.loads(out.read_text())
    rows = doc["rows"]
    assert len(rows) == 6
    for row in rows:
        meta = row["metadata"]
        assert meta["judge_usage"]["prompt_tokens"] == 40
        assert meta["judge_cost_usd"] == pytest.approx((40 * 10 + 1 * 30) / 1e6)
    # Each conversation is ingested once (by whichever question came first on
    # its worker, so under -n 2 by up to every question), and queried per question.
    prompt = sum(r["metadata"]["llm_usage"]["prompt_tokens"] for r in rows)
    ingests = (prompt - 6 * 20) // 30
    assert (prompt - 6 * 20) % 30 == 0 and (
        ingests == 2 if "-n" not in extra else 2 <= ingests <= 6
    )
    if "-n" not in extra:
        assert [r["metadata"]["llm_usage"]["prompt_tokens"] for r in rows] == [
            50,
            20,
            20,
        ] * 2
        assert rows[0]["metadata"]["cost_usd"] == pytest.approx((50 * 1 + 7 * 2) / 1e6)
        # The call records follow the usage: the ingestion's in the row that
        # ingested, before the query's; the judge's last.
        ingested = ["system", "system", "evaluator:memory_judge"]
        asked = ["system", "evaluator:memory_judge"]
        assert [[c["source"] for c in r["calls"]] for r in rows] == [
            ingested,
            asked,
            asked,
        ] * 2
        first = [c["messages"][0]["text"] for c in rows[0]["calls"]]
        assert first[0].startswith("summarise: I moved to city 1")
        assert first[1].startswith("answer: moved to a city")
    summary = doc["summary"]["summary"]
    assert summary["cost_usd"] == pytest.approx(
        sum(r["metadata"]["cost_usd"] for r in rows)
    )
    assert summary["total_cost_usd"] > summary["cost_usd"] > 0
    assert [g["passed"] for g in doc["gates"] if g["gate"] == "max_cost_usd"] == [True]


HANGING_MEMSYS = '''
import threading

class Stuck:
    """Hangs at the ingestion of conversation 2, and at any question about a cat."""
    name = "stuck"
    def __init__(self):
        self.text = ""
    def reset(self):
        self.text = ""
    def ingest(self, turns):
        if "city 2" in turns[0]["content"]:
            threading.Event().wait()
        self.text = turns[0]["content"]
    def query(self, question):
        if "cat" in question:
            threading.Event().wait()
        if question.startswith("Where"):
            return self.text.split(" to ")[1].split(" last")[0]
        return "last year"

stuck = Stuck()
'''


def test_a_hung_memory_system_is_an_error_row_under_the_timeout(
    pytester: pytest.Pytester,
) -> None:
    """--ctxbench-timeout holds for MemorySystems as for any System: a hung query is
    that question's error, a hung ingestion every question's of its conversation."""
    pytester.makefile(
        ".jsonl", chats="\n".join(json.dumps(c) for c in CONVERSATIONS) + "\n"
    )
    pytester.makepyfile(memsys=HANGING_MEMSYS)
    pytester.makeini("[pytest]\npythonpath = .\n")
    out = pytester.path / "out.json"
    result = pytester.runpytest_subprocess(
        "-p",
        "no:randomly",
        "--ctxbench-dataset=chats.jsonl",
        "--ctxbench-system=memsys:stuck",
        "--ctxbench-timeout=1",
        f"--ctxbench-json={out}",
        timeout=60,
    )
    assert result.ret == 1, result.stdout.str()
    rows = {r["example_id"]: r for r in json.loads(out.read_text())["rows"]}
    errors = {k: r["error"] for k, r in rows.items() if r["error"] is not None}
    assert sorted(errors) == [
        "conv-1_2",
        "conv-2_0",
        "conv-2_1",
        "conv-2_2",
        "conv-3_2",
    ]
    assert all("CallTimeout" in e["type"] for e in errors.values()), errors
    assert errors["conv-1_2"]["where"] == "system:query"
    assert errors["conv-2_0"]["where"] == "system:ingest"
    assert rows["conv-3_0"]["scores"]["f1"] == 1.0
