"""Named datasets and example selection through pytest: --ctxbench-list-datasets,
--ctxbench-sample/--ctxbench-seed/--ctxbench-shard (options, ini, marker, under -n 2),
--ctxbench-skip-bad-records, a named dataset read from --ctxbench-data-dir."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from helpers import read_json

from pytest_context_bench import __version__
from pytest_context_bench.datasets.selection import Selection


def _item_ids(result: pytest.RunResult) -> list[str]:
    """The example ids of the items a run collected (from --collect-only -q)."""
    return sorted(
        m.group(1) for m in re.finditer(r"ctxbench::example\[(?:\w+/)?qa/([\w-]+)\]",
                                        result.stdout.str())
    )


def qa20(project: pytest.Pytester) -> list[str]:
    lines = [json.dumps({"id": f"q-{i}", "context": f"c{i}", "question": f"q{i}?",
                         "answer": f"a{i}"}) for i in range(20)]
    project.makefile(".jsonl", qa="\n".join(lines))
    return [f"q-{i}" for i in range(20)]


def test_list_datasets(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "1000")  # wide enough for the whole table
    result = pytester.runpytest("--ctxbench-list-datasets")
    assert result.ret == 0
    out = result.stdout.str()
    result.stdout.fnmatch_lines(["name*family*source*configs (*default)*description*"])
    for name, family in [("humaneval", "code"), ("gsm8k", "math"), ("mmlu", "multiple_choice"),
                         ("hotpotqa", "qa"), ("govreport", "summarization"),
                         ("ifeval", "ifeval"), ("mt-bench", "conversation"),
                         ("scifact", "nli"), ("locomo", "memory")]:
        assert re.search(rf"^{re.escape(name)}\s+{family}\s", out, re.M), name
    assert re.search(r"^mmlu\s.*all\*, abstract_algebra, .* \+\d+ more", out, re.M)
    assert re.search(r"^\d+ datasets\.", out, re.M)
    assert "collected" not in out  # exits before collecting anything
    verbose = pytester.runpytest("--ctxbench-list-datasets", "-v").stdout.str()
    assert "world_religions" in verbose


def test_list_datasets_fits_80_columns(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Narrower than the table: each dataset in a few lines, none wider than the
    terminal, nothing left out."""
    monkeypatch.setenv("COLUMNS", "80")
    result = pytester.runpytest("--ctxbench-list-datasets", "-v")
    assert result.ret == 0
    lines = result.stdout.lines
    assert max(len(line) for line in lines) <= 80
    out = "\n".join(lines)
    assert re.search(r"^gsm8k \(math\): hub:openai/gsm8k", out, re.MULTILINE)
    assert re.search(r"^mmlu \(multiple_choice\): ", out, re.MULTILINE)
    joined = " ".join(out.split())  # the wrapped configs, every one
    assert "all*, abstract_algebra, anatomy," in joined and "world_religions" in joined
    assert re.search(r"^\d+ datasets\.", out, re.MULTILINE)


def test_unknown_named_dataset_suggests(project: pytest.Pytester) -> None:
    result = project.runpytest("--ctxbench-dataset=gsm8kk", "--ctxbench-system=systems:echo")
    assert result.ret == 4
    result.stderr.fnmatch_lines(["*--ctxbench-dataset: unknown dataset 'gsm8kk'*Did you mean 'gsm8k'?*"])
    bad_config = project.runpytest("--ctxbench-dataset=mmlu:anatomyy", "--ctxbench-system=systems:echo")
    assert bad_config.ret == 4
    bad_config.stderr.fnmatch_lines(["*no config 'anatomyy'. Did you mean 'anatomy'?*"])


def test_sample_and_seed(project: pytest.Pytester) -> None:
    ids = qa20(project)
    result = project.runpytest("--ctxbench-dataset=qa.jsonl", "--ctxbench-system=systems:echo",
                               "--ctxbench-sample=5", "--ctxbench-seed=3", "--collect-only", "-q")
    assert result.ret == 0
    expected = sorted(ids[i] for i in Selection(sample=5, seed=3).apply(ids))
    assert _item_ids(result) == expected
    other = project.runpytest("--ctxbench-dataset=qa.jsonl", "--ctxbench-system=systems:echo",
                              "--ctxbench-sample=5", "--ctxbench-seed=4", "--collect-only", "-q")
    assert _item_ids(other) != expected and len(_item_ids(other)) == 5


def test_shards_run_every_example_once_under_xdist(project: pytest.Pytester) -> None:
    # Two shards under -n 2 (three runs of three processes each were no more proof:
    # which examples a shard keeps is Selection's, test_selection.py's for every i/N).
    ids = qa20(project)
    seen: list[str] = []
    for i in (1, 2):
        result = project.runpytest(
            "--ctxbench-dataset=qa.jsonl", "--ctxbench-system=systems:echo",
            f"--ctxbench-shard={i}/2", "-n", "2", f"--ctxbench-json=shard{i}.json",
        )
        assert result.ret == 0
        rows = read_json(project.path / f"shard{i}.json")["rows"]
        seen += [r["example_id"] for r in rows]
        assert read_json(project.path / f"shard{i}.json")["run"]["options"]["shard"] == f"{i}/2"
        assert 0 < len(rows) < len(ids)
    assert sorted(seen) == sorted(ids)


def test_selection_from_ini_and_header(project: pytest.Pytester) -> None:
    ids = qa20(project)
    project.makeini(
        "[pytest]\npythonpath = .\nctxbench_dataset = qa.jsonl\n"
        "ctxbench_system = systems:echo\nctxbench_limit = 12\nctxbench_sample = 6\n"
        "ctxbench_seed = 1\nctxbench_shard = 2/2\n"
    )
    result = project.runpytest("--collect-only", "-q")
    expected = sorted(ids[i] for i in Selection(12, 6, 1, (2, 2)).apply(ids))
    assert _item_ids(result) == expected
    header = project.runpytest("--co")
    header.stdout.fnmatch_lines([
        f"ctxbench {__version__}: datasets qa ({len(expected)} of 20: first 12, sample 6 (seed 1), "
        "shard 2/2); systems echo"
    ])


def test_marker_selection(project: pytest.Pytester) -> None:
    ids = qa20(project)
    project.makeconftest(
        "import pytest, systems\n"
        "@pytest.fixture\ndef ctxbench_system():\n    return systems.echo\n"
    )
    project.makepyfile(test_bench="""
        import pytest

        @pytest.mark.ctxbench(dataset="qa.jsonl", sample=4, seed=9, shard="1/2")
        def test_qa(ctxbench_example, ctxbench_system, ctxbench_record):
            ctxbench_record(ctxbench_system.process(ctxbench_example))
    """)
    result = project.runpytest("--collect-only", "-q")
    got = sorted(re.findall(r"test_qa\[qa/([\w-]+)\]", result.stdout.str()))
    assert got == sorted(ids[i] for i in Selection(sample=4, seed=9, shard=(1, 2)).apply(ids))


@pytest.mark.parametrize(
    "args,message",
    [
        (["--ctxbench-shard=0/3"], "*--ctxbench-shard: a shard is I/N with 1 <= I <= N*given: '0/3'*"),
        (["--ctxbench-shard=3"], "*--ctxbench-shard: a shard is I/N*"),
        (["--ctxbench-sample=0"], "*--ctxbench-sample must be an integer >= 1, given: '0'*"),
        (["--ctxbench-seed=x"], "*--ctxbench-seed must be an integer >= 0, given: 'x'*"),
    ],
)
def test_bad_selection_options(project: pytest.Pytester, args: list[str], message: str) -> None:
    result = project.runpytest("--ctxbench-dataset=qa.jsonl", "--ctxbench-system=systems:echo", *args)
    assert result.ret == 4
    result.stderr.fnmatch_lines([message])


def test_bad_marker_selection(project: pytest.Pytester) -> None:
    project.makepyfile(test_bench="""
        import pytest

        @pytest.mark.ctxbench(dataset="qa.jsonl", shard="2/1")
        def test_qa(ctxbench_example, ctxbench_record):
            pass
    """)
    result = project.runpytest()
    assert result.ret == 4
    result.stderr.fnmatch_lines(["*ctxbench(shard=...): a shard is I/N with 1 <= I <= N*"])


# ------------------------------------------------------------------ named datasets


GSM8K_ROWS = [
    {"question": "Ann has 3 apples and buys 4 more. How many?", "answer": "3+4=7\n#### 7"},
    {"question": "A box holds 1,200 pens; 200 are sold. How many remain?",
     "answer": "1,200-200=1,000\n#### 1,000"},
    {"question": "Tom reads 5 pages a day for 3 days. How many pages?", "answer": "#### 15"},
]

SOLVER = '''
import re
class Solver:
    """Answers with the last number of the gold solution: every example passes."""
    name = "solver"
    def process(self, example):
        return {**example, "response": "The answer is " + str(example["answer"])}
solver = Solver()
'''


@pytest.fixture
def gsm8k_dir(pytester: pytest.Pytester) -> Path:
    folder = pytester.path / "data" / "gsm8k"
    folder.mkdir(parents=True)
    (folder / "test.jsonl").write_text("".join(json.dumps(r) + "\n" for r in GSM8K_ROWS))
    pytester.makepyfile(solver=SOLVER)
    pytester.makeini("[pytest]\npythonpath = .\n")
    return folder


# In-process: a data-dir dataset under -n 2 (each worker loading it) is
# test_bad_records_stop_the_run_or_are_skipped's -n 2 run.
@pytest.mark.parametrize("mode", [[]], ids=["inprocess"])
def test_named_dataset_from_the_data_dir(
    pytester: pytest.Pytester, gsm8k_dir: Path, mode: list[str]
) -> None:
    result = pytester.runpytest(
        "--ctxbench-dataset=gsm8k", "--ctxbench-system=solver:solver",
        "--ctxbench-data-dir=data", "--ctxbench-json=out.json", "-v", *mode,
    )
    assert result.ret == 0, result.stdout.str()
    result.assert_outcomes(passed=3)
    doc = read_json(pytester.path / "out.json")
    assert {r["scores"]["math_equiv"] for r in doc["rows"]} == {1.0}
    (info,) = doc["run"]["datasets"]
    assert info["tag"] == "gsm8k" and info["family"] == "math"
    assert info["examples"] == info["selected"] == 3
    assert info["source"].endswith("test.jsonl") and info["skipped_records"] == []


def test_named_dataset_missing_says_where_to_put_it(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(solver=SOLVER)
    pytester.makeini("[pytest]\npythonpath = .\n")
    result = pytester.runpytest("--ctxbench-dataset=gsm8k", "--ctxbench-system=solver:solver",
                                "-p", "no:cacheprovider")
    assert result.ret == 4
    err = result.stderr.str()
    assert "the dataset 'gsm8k' is not available" in err
    assert "--ctxbench-data-dir" in err and "--ctxbench-hub" in err
    assert "Traceback" not in err and len(result.stderr.lines) <= 2


def test_bad_records_stop_the_run_or_are_skipped(
    pytester: pytest.Pytester, gsm8k_dir: Path
) -> None:
    path = gsm8k_dir / "test.jsonl"
    path.write_text(path.read_text() + json.dumps({"question": "No answer here?"}) + "\n")
    failed = pytester.runpytest("--ctxbench-dataset=gsm8k", "--ctxbench-system=solver:solver",
                                "--ctxbench-data-dir=data")
    assert failed.ret == 4
    failed.stderr.fnmatch_lines([
        f"*{path}:4: dataset 'gsm8k', record 4: field 'answer' is missing.*"
        "--ctxbench-skip-bad-records*"
    ])
    skipped = pytester.runpytest("--ctxbench-dataset=gsm8k", "--ctxbench-system=solver:solver",
                                 "--ctxbench-data-dir=data", "--ctxbench-skip-bad-records",
                                 "--ctxbench-json=out.json", "-n", "2")
    assert skipped.ret == 0
    skipped.assert_outcomes(passed=3)
    skipped.stdout.fnmatch_lines([
        "*gsm8k: 1 bad record(s) skipped (--ctxbench-skip-bad-records):*",
        f"*{path}:4: field 'answer' is missing*",
    ])
    (info,) = read_json(pytester.path / "out.json")["run"]["datasets"]
    assert info["skipped_records"] == [f"{path}:4: field 'answer' is missing"]


FAKE_DATASETS = '''
"""A stand-in for the `datasets` package: serves GSM8K rows from a local file and
logs every download, so the test sees what the plugin fetched."""
import json, os

def load_dataset(repo, config=None, split=None, revision=None):
    with open(os.environ["FAKE_HUB_LOG"], "a") as log:
        log.write(f"{repo} {config} {split} {revision}\\n")
    with open(os.environ["FAKE_HUB_ROWS"]) as f:
        return [json.loads(line) for line in f if line.strip()]
'''


def test_hub_download_is_opt_in_cached_and_shared_with_workers(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = pytester.path / "fakehub"
    (fake / "datasets").mkdir(parents=True)
    (fake / "datasets" / "__init__.py").write_text(FAKE_DATASETS)
    rows = pytester.path / "rows.jsonl"
    rows.write_text("".join(json.dumps(r) + "\n" for r in GSM8K_ROWS))
    log = pytester.path / "downloads.log"
    monkeypatch.setenv("FAKE_HUB_ROWS", str(rows))
    monkeypatch.setenv("FAKE_HUB_LOG", str(log))
    monkeypatch.setenv("PYTHONPATH", str(fake))
    pytester.makepyfile(solver=SOLVER)
    pytester.makeini("[pytest]\npythonpath = .\n")
    args = ["--ctxbench-dataset=gsm8k", "--ctxbench-system=solver:solver", "-p", "no:cacheprovider"]
    refused = pytester.runpytest_subprocess(*args)
    assert refused.ret == 4 and not log.exists()
    refused.stderr.fnmatch_lines(["*downloading from the hub was not asked for (--ctxbench-hub)*"])
    fetched = pytester.runpytest_subprocess(*args, "--ctxbench-hub", "-n", "2")
    assert fetched.ret == 0, fetched.stdout.str() + fetched.stderr.str()
    fetched.assert_outcomes(passed=3)
    assert log.read_text() == "openai/gsm8k main test None\n"  # once, by the controller
    monkeypatch.setenv("PYTHONPATH", "")  # no datasets package any more: offline
    offline = pytester.runpytest_subprocess(*args, "-n", "2", "--ctxbench-json=out.json")
    assert offline.ret == 0
    (info,) = read_json(pytester.path / "out.json")["run"]["datasets"]
    assert info["source"] == "hub:openai/gsm8k/main/test"
    assert log.read_text().count("\n") == 1
