"""The terminal section fits the terminal: whole, split into blocks, or stacked; and
it names the examples below threshold or in error, with a reason each."""

from __future__ import annotations

import re

import pytest
from helpers import qa_lines

from pytest_context_bench.report.terminal import EXAMPLES_SHOWN, fit_table

HEADERS = ["suite", "examples", "mean score", "pass rate", "latency p95"]
ROWS = [
    ["alpha", "6", "0.5000", "0.5000", "3µs"],
    ["beta-longer-name", "6", "1.0000", "1.0000", "12µs"],
]


def test_fit_table_whole_split_and_stacked() -> None:
    whole = fit_table(HEADERS, ROWS, 200)
    assert len(whole) == 4 and all("latency p95" in whole[0] for _ in [0])
    split = fit_table(HEADERS, ROWS, 50)
    assert max(len(line) for line in split) <= 50
    blocks = "\n".join(split).split("\n\n")
    assert len(blocks) == 2 and all(b.startswith("suite") for b in blocks)
    # Every value is still there, once per row.
    assert sum("beta-longer-name" in line for line in split) == 2
    stacked = fit_table(HEADERS, ROWS, 24)
    assert stacked[:3] == ["alpha", "  examples: 6", "  mean score: 0.5000"]
    assert max(len(line) for line in stacked) <= 24
    assert fit_table(HEADERS, ROWS, None) == whole


def _summary(result: pytest.RunResult) -> list[str]:
    lines = result.stdout.lines
    start = next(i for i, line in enumerate(lines) if "ctxbench summary" in line)
    end = next(i for i, line in enumerate(lines) if line.startswith("pass = "))
    return lines[start + 1 : end]


@pytest.mark.parametrize("columns", [80, 200, 250])
def test_summary_fits_the_terminal(
    project: pytest.Pytester,
    monkeypatch: pytest.MonkeyPatch,
    mode_args: list[str],
    columns: int,
) -> None:
    if mode_args == ["-n", "2"] and columns != 80:
        # The controller lays the table out as any run does (its own COLUMNS): under
        # -n 2 the narrowest width, the split table, is enough.
        pytest.skip("under -n 2, 80 columns covers the controller's layout")
    monkeypatch.setenv("COLUMNS", str(columns))
    result = project.runpytest(
        "--ctxbench-dataset=qa.jsonl",
        "--ctxbench-system=systems:half",
        "--ctxbench-system=systems:compressor",
        *mode_args,
    )
    assert result.ret == 0
    table = _summary(result)
    assert max(len(line) for line in table) <= columns
    header_lines = [line for line in table if line.startswith("suite")]
    if columns == 250:
        assert len(header_lines) == 1  # the whole table (about 215 wide), one block
        assert "pareto rank" in header_lines[0] and "text per pass" in header_lines[0]
    else:
        assert len(header_lines) > 1  # split into blocks, each led by the suite
        assert any("pareto rank" in h for h in header_lines)
    rows = [line for line in table if line.startswith("compressor")]
    assert len(rows) == len(header_lines)
    assert re.match(r"compressor\s+6\s+1\.0000", rows[0])


def test_examples_below_and_in_error_are_named_with_a_reason(
    project: pytest.Pytester, mode_args: list[str]
) -> None:
    project.makefile(".jsonl", big=qa_lines(30))
    result = project.runpytest(
        "--ctxbench-dataset=big.jsonl", "--ctxbench-system=systems:half", *mode_args
    )
    result.stdout.fnmatch_lines(
        [
            "examples below threshold (15):",
            "  BELOW q-1: f1 = 0 < 0.7; response 'no idea', expected 'city 1'",
            "  BELOW q-3: *",
        ]
    )
    below = [line for line in result.stdout.lines if line.startswith("  BELOW ")]
    assert len(below) == EXAMPLES_SHOWN
    result.stdout.fnmatch_lines(["  ... and 5 more (-v lists them all*"])
    if mode_args != ["-n", "2"]:
        # (Under -n 2 the list above is the controller's, of the rows the workers
        # sent, in example order; -v reaches it as in-process.)
        verbose = project.runpytest(
            "--ctxbench-dataset=big.jsonl",
            "--ctxbench-system=systems:half",
            "-v",
            *mode_args,
        )
        assert (
            len([line for line in verbose.stdout.lines if line.startswith("  BELOW ")])
            == 15
        )
        assert "and 5 more" not in verbose.stdout.str()

    boom = project.runpytest(
        "--ctxbench-dataset=qa.jsonl", "--ctxbench-system=systems:boom", *mode_args
    )
    boom.stdout.fnmatch_lines(
        [
            "examples in error (1):",
            "  ERROR q-3: RuntimeError: model endpoint exploded (in system)",
        ]
    )


def test_long_suite_names_get_short_names_when_that_shortens_the_table() -> None:
    """Issue 39: at 80 columns, marked tests' node ids made the summary a list of
    19 lines per suite; they are shown by short names with a legend instead."""
    from pytest_context_bench.report.terminal import fit_table, suite_aliases

    labels = ["rag", "test_marker.py::test_compressed_app_reads_capitals",
              "test_structured.py::test_order_status_is_valid_json",
              "test_other.py::test_order_status_is_valid_json_too",
              "openai_proxy_local-llama@127.0.0.1"]
    aliases = suite_aliases(labels, 80)
    assert "rag" not in aliases  # short names stay
    assert aliases["test_marker.py::test_compressed_app_reads_capitals"] == "test_compressed_app…"
    assert aliases["openai_proxy_local-llama@127.0.0.1"] == "local-llama@127.0.0…"
    assert len(set(aliases.values())) == len(aliases)  # two that would be equal are numbered
    assert all(len(a) <= 21 for a in aliases.values())
    assert suite_aliases(labels, None) == {} and suite_aliases(["a", "b"], 80) == {}
    headers = ["suite"] + [f"column {i}" for i in range(12)]
    rows = [[label] + ["0.1234"] * 12 for label in labels]
    stacked = fit_table(headers, rows, 80)
    short = fit_table(headers, [[aliases.get(r[0], r[0]), *r[1:]] for r in rows], 80)
    assert len(short) < len(stacked) / 2 and max(map(len, short)) <= 80
