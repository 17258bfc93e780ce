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
            {"question": "Where did I move?", "answer": f"city {c}", "type": "single_hop"},
            {"question": "When did I move?", "answer": "last year", "type": "temporal"},
            {"question": "What is my cat called?", "answer": "Tom", "type": "adversarial"},
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


@pytest.mark.parametrize("extra", [[], ["-n", "2"]], ids=["inprocess", "xdist2"])
def test_one_item_per_question(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, extra: list[str]) -> None:
    pytester.makefile(".jsonl", chats="\n".join(json.dumps(c) for c in CONVERSATIONS) + "\n")
    pytester.makepyfile(memsys=MEMSYS)
    pytester.makeini("[pytest]\npythonpath = .\n")
    log = pytester.path / "ingest.log"
    monkeypatch.setenv("INGEST_LOG", str(log))
    out = pytester.path / "out.json"
    result = pytester.runpytest("--ctxbench-dataset=chats.jsonl", "--ctxbench-system=memsys:notes", f"--ctxbench-json={out}", *extra)
    assert result.ret == 1  # the cat questions raise: errors of those examples
    result.assert_outcomes(passed=6, errors=3)
    doc = json.loads(out.read_text())
    assert [r["example_id"] for r in doc["rows"][:3]] == ["conv-1_0", "conv-1_1", "conv-1_2"]
    assert {r["metadata"]["qa_type"] for r in doc["rows"]} == {"single_hop", "temporal", "adversarial"}
    assert doc["summary"]["notes"]["error_rate"] == pytest.approx(1 / 3)
    assert doc["summary"]["notes"]["pass_rate"] == pytest.approx(2 / 3)
    # The per-question-type breakdown, as evaluate_memory gives it.
    assert doc["summary"]["notes"]["f1_single_hop"] == 1.0
    assert doc["summary"]["notes"]["f1_adversarial"] == 0.0
    ingests = log.read_text().splitlines()
    if not extra:
        assert len(ingests) == 3  # once per conversation
    else:
        assert 3 <= len(ingests) <= 9
    if not extra:
        result.stdout.fnmatch_lines(["*ERROR at call of example?notes/chats/conv-1_2?*", "*RuntimeError: no memory of a cat*"])


def test_memory_datasets_are_not_for_the_marker(pytester: pytest.Pytester) -> None:
    pytester.makefile(".jsonl", chats="\n".join(json.dumps(c) for c in CONVERSATIONS) + "\n")
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
