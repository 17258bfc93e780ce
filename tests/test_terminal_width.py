"""Every line ctxbench prints fits the terminal (``COLUMNS``), 80 included: the
summary, the legend (money too), gate lines of a long suite name, the baseline
comparison (said once), a gate's failure text, ``ctxbench merge`` and
``ctxbench compare`` (its verdict column labelled, its flipped lists wrapped)."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from helpers import qa_lines

from pytest_context_bench.cli import main
from pytest_context_bench.testing import FakeLLM, Reply

LONG = "retrieval_augmented_generation_with_prompt_compression_and_reranking_v2"


def _ours(lines: list[str]) -> list[str]:
    """The lines ctxbench writes in a pytest run: the failure texts of its gate
    tests and its summary section (pytest's own header, separators and short
    summary of node ids are pytest's)."""
    out: list[str] = []
    keep = False
    for line in lines:
        if re.match(r"^=+ (FAILURES|ctxbench summary) =+$", line):
            keep = True
            continue
        if re.match(r"^=+ short test summary info =+$", line):
            keep = False
        if keep and not re.match(r"^(=+|_+) .* (=+|_+)$", line):  # pytest's titles
            out.append(line)
    return out


def _too_wide(lines: list[str], columns: int) -> list[str]:
    """Lines wider than ``columns``, but a line that is one word (a path, after its
    indent and before a trailing comma) which alone is wider: it is kept whole, so
    that it can be copied (the temporary directory's depth differs under xdist)."""
    return [
        line
        for line in lines
        if len(line) > columns and len(line.strip().rstrip(",").split()) != 1
    ]


def test_every_line_fits_the_terminal(
    pytester: pytest.Pytester,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """At 80 and at 200 columns (the runs that only make the JSON reports are
    made once)."""
    pytester.makefile(".jsonl", qa=qa_lines(12))
    wrong: set[int] = set()

    def answer(request: Any) -> Reply:
        text = json.dumps(request.messages)
        n = int(re.findall(r"country (\d+)", text)[-1])
        return Reply(
            text="no idea" if n in wrong else f"city {n}",
            usage={"prompt_tokens": 100, "completion_tokens": 10},
        )

    results = {}
    with FakeLLM(handler=answer) as llm:
        common = [
            "--ctxbench-dataset=qa.jsonl",
            f"--ctxbench-proxy={llm.base_url}",
            f"--ctxbench-proxy-name={LONG}",
            "--ctxbench-model=m",
            "--ctxbench-price=m=1/2",
            "--ctxbench-cache=off",
        ]
        base = pytester.runpytest(
            *common, "--ctxbench-save-baseline=base.json", "--ctxbench-json=a.json"
        )
        assert base.ret == 0
        wrong.update({1, 3, 5, 7, 9, 11})
        for columns in (80, 200):
            monkeypatch.setenv("COLUMNS", str(columns))
            results[columns] = pytester.runpytest(
                *common,
                "--ctxbench-min-pass-rate=0.8",
                "--ctxbench-max-cost-usd=0.000001",
                "--ctxbench-baseline=base.json",
                "--ctxbench-max-drop=pass_rate:0.02",
                "--ctxbench-max-drop=mean_score:0.9",
                "--ctxbench-json=b.json",
            )
        shards = []
        for i in (1, 2):
            shard = pytester.runpytest(
                *common, f"--ctxbench-shard={i}/2", f"--ctxbench-json=s{i}.json"
            )
            assert shard.ret in (0, 1)
            shards.append(str(pytester.path / f"s{i}.json"))
    for columns, result in results.items():
        monkeypatch.setenv("COLUMNS", str(columns))
        _check(result, shards, str(pytester.path), columns, capsys)


def _check(
    result: pytest.RunResult,
    shards: list[str],
    where: str,
    columns: int,
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert result.ret == 1
    # The header's lines (datasets, Systems) fit too.
    start = result.stdout.lines.index(
        next(ln for ln in result.stdout.lines if re.match(r"ctxbench [\d.]+: ", ln))
    )
    header = [result.stdout.lines[start]]
    for line in result.stdout.lines[start + 1 :]:
        if not line.startswith(("  ", "ctxbench: ")):
            break  # pytest's own lines (rootdir...) are pytest's
        header.append(line)
    assert _too_wide(header, columns) == [] and LONG in " ".join(header)
    lines = _ours(result.stdout.lines)
    text = "\n".join(lines)
    # What must be there is there (wrapped or not) ...
    flat = " ".join(text.split())
    for said in (
        f"FAIL {LONG}: min_pass_rate:",
        "cost $ = US dollars of the System's LLM calls",
        "LLM money (--ctxbench-price):",
        "gate breached:",
        "baseline comparison:",
        "gate max-drop 0.02: FAILED, significantly worse (exact McNemar test one-sided p =",
        "gate max-drop 0.9: passed, within the tolerance 0.9",
        "flipped pass → fail (6): q-1 q-3 q-5 q-7 q-9 q-11",
    ):
        assert said in flat, said
    # ... the comparison said once: the max-drop verdict's whole sentence is the
    # failure text of its test, not repeated in the summary under its line.
    summary = " ".join(text[text.index("baseline comparison:") :].split())
    assert "fell by" not in summary and "fell by" in flat
    # ... and every line fits.
    assert _too_wide(lines, columns) == []
    if columns == 80:  # at 80 columns the long suite name's gate line wrapped
        assert any(line.startswith("    min_pass_rate:") for line in lines)

    # ctxbench merge of the shards: its table and lines fit too.
    capsys.readouterr()  # (what the runs above left)
    status = main(["merge", *shards, "--ctxbench-min-pass-rate=0.4"])
    out = capsys.readouterr().out.splitlines()
    assert status == 0 and out[-1].startswith("merged 2 shards, 12 rows")
    assert _too_wide(out, columns) == []
    assert any(line.startswith(f"  PASS {LONG}") for line in out)

    # ctxbench compare A B: its verdict column labelled, its lists wrapped.
    a, b = f"{where}/a.json", f"{where}/b.json"
    assert main(["compare", a, b]) == 1
    out = capsys.readouterr().out.splitlines()
    assert _too_wide(out, columns) == []
    flat = " ".join(" ".join(out).split())
    assert "flipped pass → fail (6): q-1 q-3 q-5 q-7 q-9 q-11" in flat
    # (a header row ending in "verdict": the whole table, or its last block)
    assert any(line.startswith("metric ") and line.endswith("verdict") for line in out)
    assert any(line.startswith("pass_rate ") and line.endswith("WORSE") for line in out)
    assert "metric(s) significantly worse in B:" in flat
