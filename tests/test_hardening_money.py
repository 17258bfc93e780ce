"""Money in a report or a baseline that was edited (issue 38): every reader (``ctxbench
merge``, ``ctxbench compare``, ``--ctxbench-baseline``) refuses a row whose money is
negative, not finite or not a number, and a report whose rows' money does not add up
to the run's total, naming the file and the row. A real run makes the files: a System
calling the fake endpoint through ``http_client()``, priced with ``--ctxbench-price``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from helpers import INNER_ADDOPTS, qa_lines, read_json

from pytest_context_bench.baseline import load_baseline
from pytest_context_bench.cli import main
from pytest_context_bench.errors import ConfigError

PRICED_PY = '''
import os
from pytest_context_bench import http_client

URL = os.environ["LLM_URL"] + "/v1/chat/completions"

class Priced:
    """Asks the model; the endpoint bills each call."""
    name = "priced"
    def __init__(self):
        self.client = http_client()
    def process(self, example):
        reply = self.client.post(URL, json={"model": "m", "messages": [
            {"role": "user", "content": example["question"]}]})
        reply.raise_for_status()
        text = reply.json()["choices"][0]["message"]["content"]
        return {**example, "response": text}

priced = Priced()
'''

#: every call bills 100 prompt and 10 completion tokens: $0.00012 at m=1/2.
CALL_USD = (100 * 1 + 10 * 2) / 1e6
N = 8


def _answer(request: Any) -> Any:
    from pytest_context_bench.testing import Reply

    return Reply(text="city 1", usage={"prompt_tokens": 100, "completion_tokens": 10})


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two shards and a baseline of one priced run (written once for the module)."""
    from pytest_context_bench.testing import FakeLLM

    root = tmp_path_factory.mktemp("money")
    (root / "qa.jsonl").write_text(qa_lines(N))
    (root / "priced.py").write_text(PRICED_PY)
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("GITHUB_STEP_SUMMARY", "PYTEST_ADDOPTS")
    }
    env["PYTEST_ADDOPTS"] = INNER_ADDOPTS
    env["CTXBENCH_CACHE_DIR"] = str(root / "cache")
    env["PYTHONPATH"] = os.pathsep.join(
        [str(root), *filter(None, [env.get("PYTHONPATH")])]
    )
    run = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
    common = [
        "-p",
        "no:randomly",
        "--ctxbench-dataset=qa.jsonl",
        "--ctxbench-system=priced:priced",
        "--ctxbench-price=m=1/2",
        "--ctxbench-cache=off",
    ]
    with FakeLLM(handler=_answer) as llm:
        env["LLM_URL"] = llm.base_url
        jobs = [
            [
                *common,
                "--ctxbench-save-baseline=base.json",
                "--ctxbench-json=full.json",
            ],
            *(
                [*common, f"--ctxbench-shard={i}/2", f"--ctxbench-json=s{i}.json"]
                for i in (1, 2)
            ),
        ]
        for args in jobs:
            done = subprocess.run(
                [*run, *args],
                cwd=root,
                env=env,
                capture_output=True,
                text=True,
                timeout=300,
                check=False,
            )
            assert done.returncode in (0, 1), done.stdout + done.stderr
    full = read_json(root / "full.json")
    assert full["summary"]["priced"]["total_cost_usd"] == pytest.approx(N * CALL_USD)
    return root


def _copy(runs: Path, tmp_path: Path) -> Path:
    for name in ("s1.json", "s2.json", "full.json", "base.json"):
        shutil.copy(runs / name, tmp_path / name)
    return tmp_path


def _edit_rows(
    path: Path, value: Any, rows: slice = slice(0, 1), key: str = "cost_usd"
) -> dict[str, Any]:
    """Set ``metadata[key]`` of some rows of the JSON file at ``path``; returns the
    first edited row."""
    doc = json.loads(path.read_text())
    for row in doc["rows"][rows]:
        row["metadata"][key] = value
    path.write_text(json.dumps(doc, indent=1))
    return dict(doc["rows"][rows][0])


def _merge(d: Path, *args: str) -> int:
    return main(["merge", str(d / "s1.json"), str(d / "s2.json"), *args])


# Half the run's money: the unedited merge breaches it ($0.00096 > $0.00048).
GATE = f"--ctxbench-max-cost-usd={N * CALL_USD / 2}"


def test_the_unedited_shards_merge_and_the_cost_gate_fails(
    runs: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    d = _copy(runs, tmp_path)
    assert _merge(d, GATE) == 1, capsys.readouterr()
    assert _merge(d, f"--ctxbench-max-cost-usd={N * CALL_USD * 2}") == 0


@pytest.mark.parametrize(
    "value, said",
    [
        (-9.87, "-9.87, a negative amount"),
        ("0.0001", "'0.0001', not a finite number"),
        ("nan", "'nan', not a finite number"),
        (True, "True, not a finite number"),
        # a float cannot hold it: once an OverflowError (a crash), not a usage error
        (10**400, "100000000000... (an integer of 401 digits), not a finite number"),
    ],
    ids=["negative", "string", "nan-string", "bool", "huge"],
)
def test_merge_refuses_a_shard_row_whose_money_is_not_dollars(
    runs: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    value: Any,
    said: str,
) -> None:
    """A negative cost once turned a breached cost gate into a pass."""
    d = _copy(runs, tmp_path)
    row = _edit_rows(d / "s1.json", value)
    assert _merge(d, GATE) == 4
    err = " ".join(capsys.readouterr().err.split())
    where = f"shard {d / 's1.json'}: rows[0]"
    assert f"{where} (suite 'priced', example_id {row['example_id']!r})" in err, err
    assert f"has metadata.cost_usd {said}" in err, err
    assert "was the file edited or corrupted?" in err and "re-run that job" in err, err


def test_merge_refuses_a_shard_whose_rows_money_was_zeroed(
    runs: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Every row of shard 1 edited to $0: the shard's own total says otherwise."""
    d = _copy(runs, tmp_path)
    doc = read_json(d / "s1.json")
    total = doc["llm"]["money"]["cost_usd"]
    assert total == pytest.approx(len(doc["rows"]) * CALL_USD)
    _edit_rows(d / "s1.json", 0, slice(None))
    assert _merge(d, GATE) == 4
    err = " ".join(capsys.readouterr().err.split())
    assert (
        f"shard {d / 's1.json'}: its rows' metadata.cost_usd add up to $0, but" in err
    ), err
    assert f"llm.money.cost_usd (the run's total) is ${total:.6g}" in err, err
    assert "re-run that job" in err


def test_merge_refuses_a_negative_judge_cost(
    runs: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    d = _copy(runs, tmp_path)
    _edit_rows(d / "s2.json", -1.0, key="judge_cost_usd")
    assert _merge(d) == 4
    assert (
        "has metadata.judge_cost_usd -1.0, a negative amount" in capsys.readouterr().err
    )


def test_compare_refuses_a_report_with_negative_money(
    runs: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    d = _copy(runs, tmp_path)
    shutil.copy(d / "full.json", d / "edited.json")
    _edit_rows(d / "edited.json", -0.5, slice(2, 3))
    assert main(["compare", str(d / "full.json"), str(d / "edited.json")]) == 4
    err = " ".join(capsys.readouterr().err.split())
    assert f"{d / 'edited.json'}: rows[2] (suite 'priced'" in err, err
    assert "has metadata.cost_usd -0.5, a negative amount" in err, err


def test_a_baseline_with_negative_money_does_not_load(
    runs: Path, tmp_path: Path
) -> None:
    d = _copy(runs, tmp_path)
    doc = read_json(d / "base.json")
    doc["rows"][3]["metadata"]["cost_usd"] = -9.87
    (d / "base.json").write_text(json.dumps(doc))
    with pytest.raises(ConfigError) as info:
        load_baseline(d / "base.json")
    message = str(info.value)
    assert message.startswith(f"baseline {d / 'base.json'}: rows[3] (suite 'priced'"), (
        message
    )
    assert "has metadata.cost_usd -9.87, a negative amount" in message
    assert "re-create it with --ctxbench-save-baseline" in message


def test_the_run_refuses_a_baseline_with_negative_money(
    runs: Path, pytester: pytest.Pytester
) -> None:
    """--ctxbench-baseline: one usage error (exit 4) before any example runs."""
    from helpers import SYSTEMS_PY, usage_line

    pytester.makefile(".jsonl", qa=qa_lines(N))
    pytester.makepyfile(systems=SYSTEMS_PY)
    doc = read_json(runs / "base.json")
    doc["rows"][1]["metadata"]["cost_usd"] = -9.87
    (pytester.path / "base.json").write_text(json.dumps(doc))
    line = usage_line(
        pytester.runpytest_subprocess(
            "-p",
            "no:randomly",
            "--ctxbench-dataset=qa.jsonl",
            "--ctxbench-system=systems:echo",
            "--ctxbench-baseline=base.json",
            timeout=120,
        )
    )
    where = (
        f"ERROR: --ctxbench-baseline: baseline {pytester.path / 'base.json'}: rows[1]"
    )
    assert line.startswith(f"{where} (suite 'priced', example_id 'q-2')"), line
    assert "has metadata.cost_usd -9.87, a negative amount" in line, line


def test_merge_refuses_a_baseline_with_negative_money(
    runs: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    d = _copy(runs, tmp_path)
    doc = read_json(d / "base.json")
    doc["rows"][0]["metadata"]["cost_usd"] = -1
    (d / "base.json").write_text(json.dumps(doc))
    assert _merge(d, f"--ctxbench-baseline={d / 'base.json'}") == 4
    err = " ".join(capsys.readouterr().err.split())
    assert (
        f"baseline {d / 'base.json'}: rows[0]" in err and "-1, a negative amount" in err
    ), err


def test_a_score_too_large_for_a_float_is_refused_not_a_crash(
    runs: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An integer of 401 digits is JSON a float cannot hold: each reader names it."""
    d = _copy(runs, tmp_path)
    doc = read_json(d / "s1.json")
    doc["rows"][0]["scores"]["f1"] = 10**400
    (d / "s1.json").write_text(json.dumps(doc))
    assert _merge(d) == 4
    assert "has score 'f1' = 100000000000... (an integer of 401 digits)" in (
        capsys.readouterr().err
    )
    base = read_json(d / "base.json")
    base["rows"][0]["scores"]["f1"] = 10**400
    (d / "base.json").write_text(json.dumps(base))
    with pytest.raises(ConfigError) as info:
        load_baseline(d / "base.json")
    assert "rows[0] is malformed" in str(info.value), info.value
    assert "an integer of 401 digits" in str(info.value), info.value
