"""``ctxbench merge``: shards of one run → the report of the unsharded run."""

from __future__ import annotations

import json
import random
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from helpers import SYSTEMS_PY, inner_env, qa_lines, read_json, strip_timings
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_context_bench.cli import main
from pytest_context_bench.merge import Shard, merge_shards
from pytest_context_bench.report import load_schema
from pytest_context_bench.results import json_safe

# A System right on some examples and raising on one: every kind of row.
MIXED_PY = (
    SYSTEMS_PY
    + """
class Mixed:
    name = "mixed"
    def process(self, example):
        n = int(example["id"].split("-")[1])
        if n == 5:
            raise RuntimeError("boom")
        return {**example, "response": example["answer"] if n % 3 else "no idea"}

mixed = Mixed()
"""
)

BASE = [
    "--ctxbench-dataset=qa.jsonl",
    "--ctxbench-system=systems:mixed",
    "--ctxbench-system=systems:compressor",
    "-p",
    "no:cacheprovider",
    "-q",
]


def _pytest(cwd: Path, *args: str) -> int:
    return subprocess.run(
        [sys.executable, "-m", "pytest", *BASE, *args],
        cwd=cwd,
        env=inner_env(),
        capture_output=True,
        check=False,
    ).returncode


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One unsharded run, its baseline from an earlier System, and 4 shards."""
    d = tmp_path_factory.mktemp("merge")
    (d / "qa.jsonl").write_text(qa_lines(24))
    (d / "systems.py").write_text(MIXED_PY)
    (d / "pytest.ini").write_text("[pytest]\npythonpath = .\n")
    # The baseline: "mixed" was right everywhere then (a renamed echo).
    (d / "old.py").write_text(
        "from systems import *\nclass Old(Echo):\n    name = 'mixed'\nmixed = Old()\n"
    )
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "--ctxbench-dataset=qa.jsonl",
            "--ctxbench-system=old:mixed",
            "--ctxbench-system=systems:compressor",
            "-p",
            "no:cacheprovider",
            "-q",
            "--ctxbench-save-baseline=base.json",
        ],
        cwd=d,
        env=inner_env(),
        capture_output=True,
        check=True,
    )
    _pytest(
        d,
        "--ctxbench-json=full.json",
        "--ctxbench-markdown=full.md",
        "--ctxbench-min-pass-rate=0.7",
        "--ctxbench-baseline=base.json",
        "--ctxbench-max-drop=pass_rate:0.05",
    )
    for i in range(1, 5):
        _pytest(
            d,
            f"--ctxbench-shard={i}/4",
            f"--ctxbench-json=shard-{i}.json",
            "--ctxbench-no-gate",
        )
    return d


def _same(full: dict[str, Any], merged: dict[str, Any]) -> None:
    a, b = strip_timings(full), strip_timings(merged)
    for key in ("summary", "intervals", "gates", "suites", "rows", "lost", "complete"):
        assert a[key] == b[key], key
    b["completeness"].pop("shards")
    assert a["completeness"] == b["completeness"]


def test_merge_equals_one_run(runs: Path, capsys: pytest.CaptureFixture[str]) -> None:
    shards = [str(runs / f"shard-{i}.json") for i in (3, 1, 4, 2)]  # any order
    out = runs / "merged.json"
    status = main(
        [
            "merge",
            *shards,
            "--json",
            str(out),
            "--ctxbench-min-pass-rate=0.7",
            "--baseline",
            str(runs / "base.json"),
            "--ctxbench-max-drop=pass_rate:0.05",
        ]
    )
    text = capsys.readouterr().out
    full = read_json(runs / "full.json")
    merged = read_json(out)
    jsonschema.validate(merged, load_schema())
    _same(full, merged)
    # The same gate verdicts: mixed breaches min-pass-rate and its max-drop gate.
    assert status == 1
    assert [g["passed"] for g in merged["gates"]] == [
        g["passed"] for g in full["gates"]
    ]
    assert not all(g["passed"] for g in full["gates"])
    strip = lambda c: [{k: v for k, v in m.items()} for m in c["metrics"]]
    assert strip(merged["baseline_comparison"]) == strip(full["baseline_comparison"])
    assert "baseline gates: 1 failed" in text
    assert merged["run"]["options"]["shard"] is None
    assert merged["run"]["datasets"][0]["selected"] == 24
    # Without the gates the merge passes.
    assert main(["merge", *shards]) == 0


def _shards_from(full: dict[str, Any], parts: list[int], n: int) -> list[Shard]:
    """Split a full report's rows into n shard documents (part[i] = shard of row i)."""
    docs = []
    for i in range(1, n + 1):
        doc = json.loads(json.dumps(full))
        doc["run"]["options"]["shard"] = f"{i}/{n}"
        doc["rows"] = [r for r, p in zip(full["rows"], parts) if p == i]
        doc["lost"] = []
        c = doc["completeness"]
        for label, counts in c["suites"].items():
            got = sum(1 for r in doc["rows"] if r["suite"] == label)
            counts.update(expected=got, received=got)
        c.update(
            planned=len(doc["rows"]), selected=len(doc["rows"]), ran=len(doc["rows"])
        )
        docs.append(Shard(Path(f"shard-{i}.json"), doc))
    return docs


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(data=st.data())
def test_merge_is_split_invariant(runs: Path, data: st.DataObject) -> None:
    full = read_json(runs / "full.json")
    n = data.draw(st.integers(1, 6), label="shards")
    parts = data.draw(
        st.lists(
            st.integers(1, n), min_size=len(full["rows"]), max_size=len(full["rows"])
        )
    )
    shards = _shards_from(full, parts, n)
    random.Random(n).shuffle(shards)
    merged = merge_shards(shards, {"min_pass_rate": 0.7})
    report = merged.report
    # Every metric, interval and gate equal the unsharded run's (same rows, same
    # order: equal to the last bit, latencies included).
    assert json_safe(report.summary) == full["summary"]
    assert json_safe(report.intervals) == full["intervals"]
    assert json_safe([g.to_dict() for g in report.gates]) == full["gates"]
    assert [r.row.example_id for r in report.records] == [
        r["example_id"] for r in full["rows"]
    ]


def _bad(tmp_path: Path, capsys: pytest.CaptureFixture[str], *args: str) -> str:
    out = tmp_path / "merged.json"
    status = main(["merge", *args, "--json", str(out)])
    err = capsys.readouterr().err.strip()
    assert status == 4
    assert len(err.splitlines()) == 1, err
    assert not out.exists()
    return err


def _variant(runs: Path, tmp_path: Path, name: str, change: Any) -> str:
    doc = read_json(runs / "shard-2.json")
    change(doc)
    path = tmp_path / name
    path.write_text(json.dumps(doc))
    return str(path)


def test_refused_inputs(
    runs: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    s = {i: str(runs / f"shard-{i}.json") for i in range(1, 5)}
    text = (runs / "shard-1.json").read_text()
    (tmp_path / "trunc.json").write_text(text[: len(text) // 2])
    (tmp_path / "garbage.json").write_text("\x00not json at all")
    (tmp_path / "empty.json").write_text("")
    nan = tmp_path / "nan.json"
    nan.write_text(
        (runs / "shard-2.json")
        .read_text()
        .replace('"error_rate": 0.0', '"error_rate": NaN', 1)
    )
    assert "NaN" in nan.read_text()
    cases = [
        ([s[1], s[2], s[3]], "shard 4/4 is missing (given: 1/4, 2/4, 3/4)"),
        ([s[1], s[2], s[2], s[3], s[4]], f"shard 2/4 given twice: {s[2]} and {s[2]}"),
        (
            [str(tmp_path / "trunc.json"), s[2], s[3], s[4]],
            "is not valid JSON (line 1",
        ),
        ([str(tmp_path / "garbage.json"), s[2]], "garbage.json: is not valid JSON"),
        ([str(tmp_path / "empty.json"), s[2]], "empty.json: is empty"),
        (
            [str(runs / "base.json"), s[2]],
            "is a baseline file (--ctxbench-save-baseline), not a JSON report",
        ),
        ([str(tmp_path / "nope.json")], "nope.json: no such file"),
        (
            [
                s[1],
                _variant(
                    runs, tmp_path, "newer.json", lambda d: d.update(schema_version=99)
                ),
                s[3],
                s[4],
            ],
            "has schema_version 99, newer than this pytest-context-bench reads (1)",
        ),
        (
            [
                s[1],
                _variant(
                    runs,
                    tmp_path,
                    "n2.json",
                    lambda d: d["run"]["options"].update(shard="2/2"),
                ),
            ],
            "shards from different shard counts",
        ),
        (
            [
                s[1],
                _variant(
                    runs,
                    tmp_path,
                    "lim.json",
                    lambda d: d["run"]["options"].update(limit=5),
                ),
                s[3],
                s[4],
            ],
            "shards from different runs: option 'limit' is None in",
        ),
        (
            [
                s[1],
                _variant(
                    runs,
                    tmp_path,
                    "ver.json",
                    lambda d: d["plugin"].update(version="9.9"),
                ),
                s[3],
                s[4],
            ],
            "shards from different pytest-context-bench versions",
        ),
        (
            [
                s[1],
                _variant(
                    runs,
                    tmp_path,
                    "ds.json",
                    lambda d: d["run"]["datasets"][0].update(fingerprint="f00"),
                ),
                s[3],
                s[4],
            ],
            "shards from different datasets",
        ),
        (
            [
                s[1],
                _variant(
                    runs,
                    tmp_path,
                    "ov.json",
                    lambda d: d["rows"].append(
                        read_json(runs / "shard-1.json")["rows"][0]
                    ),
                ),
                s[3],
                s[4],
            ],
            "overlapping shards: example qa/",
        ),
        (
            [
                s[1],
                _variant(
                    runs,
                    tmp_path,
                    "int.json",
                    lambda d: d["completeness"].update(interrupted=True),
                ),
                s[3],
                s[4],
            ],
            "is incomplete (interrupted); re-run that job",
        ),
        ([s[1], s[2], s[3], s[4], str(runs / "full.json")], "full.json is not a shard"),
        # The hardened reader of every command: a repeated row, a literal NaN.
        (
            [
                s[1],
                _variant(
                    runs, tmp_path, "dup.json", lambda d: d["rows"].append(d["rows"][0])
                ),
            ],
            "dup.json: rows[",
        ),
        ([s[1], str(nan)], "nan.json: cannot be used: "),
    ]
    for args, expected in cases:
        err = _bad(tmp_path, capsys, *args)
        assert err.startswith("ctxbench merge: error: ") and expected in err, (
            expected,
            err,
        )


def _edit_scores(doc: dict[str, Any], status: str) -> None:
    """Raise every ``status`` row's f1 to 1.0 of one suite, leaving the status."""
    for row in doc["rows"]:
        if row["status"] == status and row["suite"] == "mixed":
            row["scores"]["f1"] = 1.0


def _clear_errors(doc: dict[str, Any]) -> None:
    for row in doc["rows"]:
        if row["error"] is not None:
            row["error"] = None
            row["scores"] = {"f1": 1.0, "exact_match": 1.0}


@pytest.mark.parametrize(
    ("change", "message"),
    [
        # Edited scores that turn a failing gate into a pass, status left alone.
        (
            lambda d: _edit_scores(d, "below"),
            (
                "has status 'below', but f1 = 1.0 against the threshold 0.7 makes"
                " it 'pass' (were its scores edited?)"
            ),
        ),
        # The status edited alone: its scores still say below.
        (
            lambda d: [
                r.update(status="pass") for r in d["rows"] if r["status"] == "below"
            ],
            (
                "has status 'pass', but f1 = 0.0 against the threshold 0.7 makes"
                " it 'below'"
            ),
        ),
        # The threshold lowered under the scores.
        (
            lambda d: [s.update(threshold=0.0) for s in d["suites"]],
            "has status 'below', but f1 = 0.0 against the threshold 0 makes it 'pass'",
        ),
        # An error row made a pass, its status left or edited (checked before).
        (_clear_errors, "has status 'error' but error null"),
        (
            lambda d: [
                r.update(status="pass") for r in d["rows"] if r["status"] == "error"
            ],
            "has status 'pass' but error set",
        ),
        (
            lambda d: [r["scores"].pop("f1") for r in d["rows"] if r["status"] == "pass"],
            "has status 'pass', but it has no 'f1' score makes it 'unscored'",
        ),
    ],
    ids=["scores", "status", "threshold", "error_cleared", "error_status", "unscored"],
)
def test_a_shard_whose_statuses_contradict_its_scores_is_refused(
    runs: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    change: Any,
    message: str,
) -> None:
    s = {i: str(runs / f"shard-{i}.json") for i in range(1, 5)}
    # The first shard holding the kind of row the edit needs.
    for k in range(1, 5):
        doc = read_json(runs / f"shard-{k}.json")
        change(doc)
        if doc != read_json(runs / f"shard-{k}.json"):
            break
    else:
        pytest.fail("the edit changed no shard")
    edited = tmp_path / "edited.json"
    edited.write_text(json.dumps(doc))
    shards = [str(edited) if i == k else s[i] for i in range(1, 5)]
    err = _bad(tmp_path, capsys, *shards, "--ctxbench-min-pass-rate=0.7")
    assert err.startswith("ctxbench merge: error: shard ") and message in err, err
    assert f"{edited}: rows[" in err
    assert not (tmp_path / "merged.json").exists()
    # ctxbench compare reads reports with the same reader.
    assert main(["compare", s[1], str(edited)]) == 4
    assert message in capsys.readouterr().err


def test_bad_gate_option_and_output_over_a_shard(
    runs: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    shards = [str(runs / f"shard-{i}.json") for i in range(1, 5)]
    err = _bad(tmp_path, capsys, *shards, "--ctxbench-min-pass-rate=2")
    assert "--ctxbench-min-pass-rate must be a number in range, given: '2'" in err
    before = (runs / "shard-1.json").read_text()
    assert main(["merge", *shards, "--json", shards[0]]) == 4
    assert "is one of the shards" in capsys.readouterr().err
    assert (runs / "shard-1.json").read_text() == before


def test_merged_baseline_is_the_unsharded_baseline(
    runs: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    shards = [str(runs / f"shard-{i}.json") for i in range(1, 5)]
    assert (
        main(["merge", *shards, "--ctxbench-save-baseline", str(tmp_path / "m.json")])
        == 0
    )
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            *BASE,
            f"--ctxbench-save-baseline={tmp_path / 'u.json'}",
        ],
        cwd=runs,
        env=inner_env(),
        capture_output=True,
        check=False,  # exit 1: mixed raises on q-5
    )
    merged, single = read_json(tmp_path / "m.json"), read_json(tmp_path / "u.json")
    for key in ("datasets", "systems", "summary", "suites", "rows"):
        if key == "summary":
            strip = lambda s: {
                k: {m: v for m, v in x.items() if not m.startswith("latency")}
                for k, x in s.items()
            }
            assert strip(merged[key]) == strip(single[key])
        else:
            assert merged[key] == single[key], key


def test_merge_writes_the_views_of_one_run(
    runs: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """--html and --markdown are the views a pytest run writes (its Markdown is the
    unsharded run's, timings aside), and the Markdown goes to the step summary."""
    shards = [str(runs / f"shard-{i}.json") for i in range(1, 5)]
    summary = tmp_path / "step-summary.md"
    summary.write_text("earlier step\n")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    html, md, out = tmp_path / "new" / "m.html", tmp_path / "m.md", tmp_path / "m.json"
    gates = [
        "--ctxbench-min-pass-rate=0.7",
        f"--baseline={runs / 'base.json'}",
        "--ctxbench-max-drop=pass_rate:0.05",
    ]
    args = ["merge", *shards, "--json", str(out), "--html", str(html)]
    status = main([*args, "--markdown", str(md), *gates])
    text = capsys.readouterr().out
    assert status == 1
    assert f"HTML report: {html}" in text and f"Markdown summary: {md}" in text

    def untimed(markdown: str) -> list[str]:
        stamp = re.compile(r"\d{4}-\d\d-\d\dT[\d:]+[+-]\d\d:\d\d")
        duration = re.compile(r"\b\d+(?:\.\d+)?(?:µs|ms|s)\b")
        return [
            duration.sub("<t>", stamp.sub("<time>", line))
            for line in markdown.splitlines()
        ]

    assert untimed(md.read_text()) == untimed((runs / "full.md").read_text())
    assert summary.read_text() == "earlier step\n" + md.read_text() + "\n"
    page = html.read_text()
    assert page.startswith("<!DOCTYPE html>") and "min_pass_rate" in page
    # Its header shows the merge (the command and the shards), not shard 1's run.
    marker = '<script type="application/json" id="ctxbench-data">'
    start = page.index(marker) + len(marker)
    shown = json.loads(page[start : page.index("</script>", start)])["doc"]["run"]
    assert shown["invocation"] == ["ctxbench", *args, "--markdown", str(md), *gates]
    assert shown["merged_from"] == shards
    assert read_json(out)["run"]["invocation"] == shown["invocation"]
    # The step summary can be turned off, as in a pytest run.
    summary.write_text("")
    main([*args, "--ctxbench-no-step-summary", *gates])
    capsys.readouterr()
    assert summary.read_text() == ""


@pytest.mark.parametrize(
    "outputs, message",
    [
        (["--html", "{shard}"], "--html={shard} is one of the shards"),
        (["--markdown", "{base}"], "is the baseline (--ctxbench-baseline)"),
        (["--html", "{d}/v", "--markdown", "{d}/v"], "--markdown and --html name"),
        (["--html", "{shard}/r.html"], "--html={shard}/r.html: {shard} is not a dir"),
        (["--markdown", "{d}"], "--markdown must be a file path, given a directory"),
    ],
)
def test_merge_views_refused_before_anything_is_written(
    runs: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    outputs: list[str],
    message: str,
) -> None:
    shard = str(runs / "shard-1.json")
    fill = {"shard": shard, "base": str(runs / "base.json"), "d": str(tmp_path)}
    shards = [str(runs / f"shard-{i}.json") for i in range(1, 5)]
    before = {p: Path(p).read_bytes() for p in [*shards, fill["base"]]}
    args = [o.format(**fill) for o in outputs]
    status = main(["merge", *shards, "--baseline", fill["base"], *args])
    err = capsys.readouterr().err.strip()
    assert status == 4 and len(err.splitlines()) == 1, err
    assert message.format(**fill) in err
    assert {p: Path(p).read_bytes() for p in before} == before
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_merge_takes_every_gate_option_of_a_run() -> None:
    """A gate added to the pytest options is a gate of ``ctxbench merge`` too, with
    the same flag (the shards usually run without gates: see docs/gating.md)."""
    from pytest_context_bench.cli.merge import _GATES
    from pytest_context_bench.plugin.options import GATE_OPTIONS

    assert {name: spec[0] for name, spec in _GATES.items()} == {
        name: opt.flag for name, opt in GATE_OPTIONS.items()
    }


def test_merge_applies_the_money_gates(tmp_path: Path) -> None:
    """Shards run against a priced endpoint without gates; the merge recomputes the
    money from the rows (as the unsharded run) and applies the money gates."""
    from pytest_context_bench.testing import FakeLLM, Reply

    (tmp_path / "qa.jsonl").write_text(qa_lines(12))

    def answer(request: Any) -> Reply:  # the scores do not matter here
        return Reply(
            text="city 1", usage={"prompt_tokens": 100, "completion_tokens": 10}
        )

    with FakeLLM(handler=answer) as llm:
        common = [
            f"--ctxbench-proxy={llm.base_url}",
            "--ctxbench-proxy-name=local",
            "--ctxbench-model=m",
            "--ctxbench-price=m=1/2",
            "--ctxbench-cache=off",
        ]
        run = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
        ds = ["--ctxbench-dataset=qa.jsonl"]
        subprocess.run(
            [*run, *ds, *common, "--ctxbench-json=full.json"], cwd=tmp_path, check=False,
            env=inner_env(),
        )
        for i in (1, 2):
            subprocess.run(
                [
                    *run,
                    *ds,
                    *common,
                    f"--ctxbench-shard={i}/2",
                    f"--ctxbench-json=s{i}.json",
                ],
                cwd=tmp_path,
                check=False,
                env=inner_env(),
            )
    full = read_json(tmp_path / "full.json")
    money = full["summary"]["local"]["total_cost_usd"]
    assert money == pytest.approx(12 * (100 * 1 + 10 * 2) / 1e6)
    shards = [str(tmp_path / "s1.json"), str(tmp_path / "s2.json")]
    out = tmp_path / "m.json"
    assert (
        main(["merge", *shards, "--json", str(out), f"--ctxbench-max-cost-usd={money}"])
        == 0
    )
    merged = read_json(out)
    for key in ("total_cost_usd", "cost_usd", "cost_of_pass_usd"):
        assert merged["summary"]["local"][key] == pytest.approx(
            full["summary"]["local"][key]
        )
    # The run's LLM block (cache, calls, tokens, money) is the unsharded run's.
    # (money summed per shard: equal up to the order of the float additions)
    m_money, f_money = merged["llm"].pop("money"), full["llm"].pop("money")
    assert merged["llm"] == full["llm"] and merged["llm"]["calls_sent"] == 12
    assert m_money.keys() == f_money.keys()
    for key, value in f_money.items():
        want = pytest.approx(value) if isinstance(value, float) else value
        assert m_money[key] == want, key
    assert m_money["total_cost_usd"] == pytest.approx(money)
    assert main(["merge", *shards, f"--ctxbench-max-cost-usd={money / 2}"]) == 1
    assert main(["merge", *shards, "--ctxbench-max-cost-of-pass-usd=-1"]) == 4


def test_merge_sums_the_endpoints_adaptive_budgets(tmp_path: Path) -> None:
    from pytest_context_bench.merge import Shard, merge_llm

    def section(budget: dict[str, Any]) -> dict[str, Any]:
        return {
            "cache": {"mode": "off", "hits": 0, "misses": 10},
            "calls_sent": 10,
            "tokens": {},
            "saved_tokens": 0,
            "models": ["m"],
            "budget": budget,
        }

    a = {
        "ceiling": 16,
        "budget": 8,
        "lowest": 4,
        "requests": 12,
        "refused_429": 2,
        "unavailable_503": 0,
    }
    b = {
        "ceiling": 16,
        "budget": 16,
        "lowest": 16,
        "requests": 10,
        "refused_429": 0,
        "unavailable_503": 1,
    }
    merged = merge_llm(
        [
            Shard(tmp_path / "1.json", {"llm": section({"http://h:1": a})}),
            Shard(
                tmp_path / "2.json",
                {"llm": section({"http://h:1": b, "http://g:2": b})},
            ),
        ]
    )
    assert merged is not None
    assert merged["budget"] == {
        "http://g:2": b,
        "http://h:1": {
            "ceiling": 32,
            "budget": 24,
            "lowest": 20,
            "requests": 22,
            "refused_429": 2,
            "unavailable_503": 1,
        },
    }


def test_a_baseline_scored_by_other_evaluators_is_refused_with_the_fix(
    runs: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The merge has neither the evaluators nor the examples to score a baseline
    again (issue 37): exit 4, naming ctxbench rescore."""
    doc = read_json(runs / "base.json")
    for suite in doc["suites"]:
        for evs in suite["evaluators"].values():
            evs.append({"name": "strict", "class": "checks:Strict", "config": "0"})
    (tmp_path / "other.json").write_text(json.dumps(doc))
    shards = [str(runs / f"shard-{i}.json") for i in range(1, 5)]
    status = main(["merge", *shards, "--json", str(tmp_path / "m.json"),
                   f"--ctxbench-baseline={tmp_path / 'other.json'}", "--ctxbench-max-drop=pass_rate:0.05"])
    assert status == 4
    err = " ".join(capsys.readouterr().err.split())
    assert "suite 'mixed' was scored by other evaluators or another score field (qa: answer_quality, strict then, answer_quality now)" in err
    assert "ctxbench rescore BASELINE --evaluator ... --save-baseline NEW.json" in err
    assert not (tmp_path / "m.json").exists()
