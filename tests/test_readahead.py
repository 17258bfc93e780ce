"""The command line's examples read and counted a block ahead (plugin/readahead.py):
the same examples and the same counts as each item's own, in every order, whatever
fails; and only where the order is known and the tokenizer is ours."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_context_bench.datasets.local import load_local
from pytest_context_bench.plugin.readahead import ReadAhead
from pytest_context_bench.tokens import count_field, get_tokenizer

TEXTS = [
    "Paris is the capital of France.",
    "naïve café — 東京 🎉 \r\n tabs\tand  spaces  ",
    "",
    "Paris is the capital of France.",  # the same text as another example's
    "x" * 500,
    "def f(x):\n    return x ** 2\n",
]


class Spec:
    def __init__(self, text_fields: tuple[str, ...] | None = None) -> None:
        self.text_fields = text_fields


class Ref:
    """What ReadAhead reads of an ExampleRef: qa, spec, load()."""

    def __init__(self, dataset: Any, index: int, spec: Spec, qa: int = -1) -> None:
        self.dataset, self.index, self.spec, self.qa = dataset, index, spec, qa
        self.loads = 0

    def load(self) -> dict[str, Any]:
        self.loads += 1
        return self.dataset[self.index]


class Case:
    def __init__(self, ref: Ref) -> None:
        self.ref = ref


class Counting:
    """The real tokenizer, recording what it was asked."""

    def __init__(self, fail_on: str | None = None) -> None:
        self.tok = get_tokenizer()
        self.asked: list[str] = []
        self.fail_on = fail_on

    def __call__(self, text: str) -> int:
        self.asked.append(text)
        if text == self.fail_on:
            raise ValueError("cannot count this text")
        return self.tok(text)


def _dataset(tmp_path: Path, n: int = 13) -> Any:
    path = tmp_path / "qa.jsonl"
    with path.open("w", encoding="utf-8") as fh:
        for i in range(n):
            ex = {
                "id": f"q{i}",
                "context": TEXTS[i % len(TEXTS)] + f" ({i})" * (i % 2),
                "question": TEXTS[(i + 1) % len(TEXTS)] or "?",
                "turns": [{"role": "user", "content": f"turn {i}"}],
                "answer": "a",
            }
            fh.write(json.dumps(ex) + "\n")
    return load_local(path)


def _cases(dataset: Any, spec: Spec | None = None) -> list[Case]:
    spec = spec or Spec()
    return [Case(Ref(dataset, i, spec)) for i in range(len(dataset))]


@pytest.mark.parametrize("block", [1, 4, 64])
def test_each_item_gets_its_own_example_and_counts(tmp_path: Path, block: int) -> None:
    ds = _dataset(tmp_path)
    cases = _cases(ds, Spec(("context", "question", "turns")))
    counter = Counting()
    ahead = ReadAhead(counter, cases, block=block)
    tok = get_tokenizer()
    for case in cases:
        example = ahead.example(case)
        assert example == ds[case.ref.index]  # what the item would have read
        for name in ("context", "question", "turns"):
            assert count_field(example[name], ahead) == count_field(example[name], tok)
        # Read once, handed once: the item that asks again reads it itself.
        assert ahead.example(case) is None
    assert [c.ref.loads for c in cases] == [1] * len(cases)
    # Counted a block at a time, each text of a block once.
    blocks = -(-len(cases) // block)
    distinct = sum(
        len({t for c in cases[b * block:(b + 1) * block] for t in _texts(ds[c.ref.index])})
        for b in range(blocks)
    )
    assert len(counter.asked) == distinct


def _texts(example: dict[str, Any]) -> list[str]:
    out = [example["context"], example["question"], example["turns"][0]["content"]]
    return [t for t in out if t]


def test_a_text_not_read_ahead_is_counted_as_it_comes(tmp_path: Path) -> None:
    ds = _dataset(tmp_path)
    cases = _cases(ds)
    counter = Counting()
    ahead = ReadAhead(counter, cases, block=4)
    ahead.example(cases[0])
    asked = len(counter.asked)
    # A System's new output: counted now, by the same tokenizer.
    assert ahead("a brand new output text") == get_tokenizer()("a brand new output text")
    assert counter.asked[asked:] == ["a brand new output text"]


def test_out_of_order_and_unknown_cases(tmp_path: Path) -> None:
    ds = _dataset(tmp_path)
    cases = _cases(ds)
    ahead = ReadAhead(Counting(), cases[:8], block=4)
    assert ahead.example(cases[9]) is None  # not in this process's order
    assert ahead.example(cases[6]) == ds[6]  # a block from 6
    assert ahead.example(cases[2]) == ds[2]  # back: a block from 2
    assert ahead.example(cases[3]) == ds[3]
    assert ahead.example(cases[3]) is None  # given already: the item reads it
    assert ahead.example(cases[6]) == ds[6]  # outside the block: read afresh
    assert ahead.example(cases[7]) == ds[7]


def test_an_example_that_cannot_be_read_is_left_to_its_item(tmp_path: Path) -> None:
    ds = _dataset(tmp_path)
    cases = _cases(ds)

    class Broken(Ref):
        def load(self) -> dict[str, Any]:
            raise RuntimeError("the file changed under the run")

    cases[2].ref = Broken(ds, 2, Spec())
    ahead = ReadAhead(Counting(), cases, block=5)
    assert ahead.example(cases[0]) == ds[0]
    assert ahead.example(cases[1]) == ds[1]
    # Not read ahead: the item reads it itself, and fails with its own message.
    assert ahead.example(cases[2]) is None
    with pytest.raises(RuntimeError, match="file changed"):
        cases[2].ref.load()
    assert ahead.example(cases[3]) == ds[3]  # the next block goes on


def test_a_text_the_tokenizer_refuses_is_counted_again_in_its_item(tmp_path: Path) -> None:
    ds = _dataset(tmp_path)
    cases = _cases(ds)
    bad = ds[0]["context"]
    ahead = ReadAhead(Counting(fail_on=bad), cases, block=4)
    assert ahead.example(cases[0]) == ds[0]  # read ahead despite the refusal
    with pytest.raises(ValueError, match="cannot count"):
        ahead(bad)  # the item meets the tokenizer's own error
    assert ahead(ds[1]["context"]) == get_tokenizer()(ds[1]["context"])


def test_memory_questions_are_not_read_ahead(tmp_path: Path) -> None:
    ds = _dataset(tmp_path)
    cases = _cases(ds)
    cases[1].ref.qa = 0  # a question of a conversation
    counter = Counting()
    ahead = ReadAhead(counter, cases, block=4)
    assert ahead.example(cases[0]) == ds[0]
    assert ahead.example(cases[1]) is None
    assert cases[1].ref.loads == 0
    assert ahead.example(cases[2]) == ds[2]


def test_a_block_stops_at_its_characters(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from pytest_context_bench.plugin import readahead

    monkeypatch.setattr(readahead, "MAX_CHARS", 100)
    ds = _dataset(tmp_path)
    cases = _cases(ds)
    ahead = ReadAhead(Counting(), cases, block=64)
    for case in cases:
        assert ahead.example(case) == ds[case.ref.index]
    assert ahead._end - ahead._start < len(cases)  # several blocks


STATE_PROBE = """
import json
from pytest_context_bench.plugin import STATE_KEY

def pytest_sessionfinish(session):
    state = session.config.stash.get(STATE_KEY, None)
    workerinput = getattr(session.config, "workerinput", None)
    who = workerinput["workerid"] if workerinput else "main"
    with open(f"ahead-{who}.json", "w") as fh:
        json.dump(state is not None and state.read_ahead is not None, fh)
"""


#: a conftest line making the user's callable the process's default tokenizer
SET_TOKENIZER = """
from pytest_context_bench.tokens import set_tokenizer

set_tokenizer(lambda text: len(text.split()))
"""


@pytest.mark.parametrize(
    "args, conftest, expected",
    [
        ([], "", {"main": True}),
        (["-n", "2"], "", {"main": False, "gw0": False, "gw1": False}),
        (["--ctxbench-concurrency=4"], "", {"main": False}),
        (["--ctxbench-tokenizer=systems:word_count"], "", {"main": False}),
        ([], SET_TOKENIZER, {"main": False}),
        (["--ctxbench-tokenizer=o200k_base"], "", {"main": True}),
    ],
    ids=["one-process", "xdist", "calls-ahead", "own-callable", "set-tokenizer", "other-encoding"],
)
def test_read_ahead_only_where_the_order_is_known(
    pytester: pytest.Pytester, args: list[str], conftest: str, expected: dict[str, bool]
) -> None:
    pytester.makeconftest(STATE_PROBE + conftest)
    pytester.makepyfile(
        systems="""
class Echo:
    name = "echo"
    def process(self, example):
        return {**example, "response": example["answer"]}

echo = Echo()

def word_count(text):
    return len(text.split())
"""
    )
    rows = [
        {"id": f"q{i}", "context": f"context {i} " * i, "question": f"q {i}?", "answer": "Paris"}
        for i in range(5)
    ]
    pytester.path.joinpath("qa.jsonl").write_text(
        "".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8"
    )
    pytester.syspathinsert()
    result = pytester.runpytest_subprocess(
        "--ctxbench-dataset=qa.jsonl", "--ctxbench-system=systems:echo", "-p", "no:randomly", *args
    )
    result.assert_outcomes(passed=5)
    found = {
        p.stem.removeprefix("ahead-"): json.loads(p.read_text())
        for p in pytester.path.glob("ahead-*.json")
    }
    assert found == expected
