"""Ids, System and suite names and error messages are data: the terminal, JUnit and
Markdown show them, and none of them can clear a screen, fake a line, reverse text or
notify anyone on GitHub."""

from __future__ import annotations

import json
import re

import pytest
from markdown_it import MarkdownIt

FAKE = "\x1b[2J\x1b[1;32m=== 4 passed ===\x1b[0m"
IDS = [FAKE, "nul\x00x", "rtl\u202egnp.exe", "cr\rhidden", "@octocat", "ok"]

SYSTEMS = """
class Shady:
    name = "sha\\u202edy\\x1b[31m"

    def process(self, e):
        if e["id"].startswith("nul"):
            raise RuntimeError("boom \\x1b[2K\\u202e @octocat")
        return {**e, "response": "Paris" if e["id"] == "ok" else "no"}

shady = Shady()
"""

# Any byte a terminal acts on, and the direction controls.
UNSAFE = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]"
)


NO_ESCAPING = "disable_test_id_escaping_and_forfeit_all_rights_to_community_support"


def _project(pytester: pytest.Pytester, ini: str = "") -> None:
    """qa.jsonl with an example per hostile id in IDS, and SYSTEMS importable."""
    rows = [
        {"id": i, "question": "Capital?", "answer": "Paris", "context": "c"}
        for i in IDS
    ]
    pytester.makefile(".jsonl", qa="\n".join(json.dumps(r) for r in rows) + "\n")
    pytester.makepyfile(systems=SYSTEMS)
    pytester.makeini("[pytest]\npythonpath = .\n" + ini)


@pytest.mark.parametrize(
    "mode, ini",
    [([], ""), (["-n", "2"], ""), ([], f"{NO_ESCAPING} = true\n")],
    ids=["inprocess", "xdist2", "pytest-id-escaping-off"],
)
def test_data_never_controls_the_terminal_junit_or_markdown(
    pytester: pytest.Pytester,
    monkeypatch: pytest.MonkeyPatch,
    mode: list[str],
    ini: str,
) -> None:
    _project(pytester, ini)
    summary = pytester.path / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    result = pytester.runpytest_subprocess(
        *mode,
        "-v",
        "-rA",
        "--ctxbench-dataset=qa.jsonl",
        "--ctxbench-system=systems:shady",
        "--ctxbench-strict",
        "--ctxbench-min-pass-rate=0.9",
        "--ctxbench-markdown=r.md",
        "--junitxml=junit.xml",
    )
    assert result.ret == 1
    raw = "\n".join(result.outlines + result.errlines)
    # The data is there, shown as escapes...
    assert "\\x1b[2J\\x1b[1;32m=== 4 passed ===\\x1b[0m" in raw
    assert "sha\\u202edy\\x1b[31m" in raw
    # pytest's -v lines show the item ids escaped once (by pytest, or by us when
    # pytest's own escaping is off).
    assert "example[sha\\u202edy\\x1b[31m/qa/nul\\x00x]" in raw
    # ...and nothing a terminal would act on (the lines are split on \n only).
    found = sorted({repr(m.group(0)) for m in UNSAFE.finditer(raw.replace("\r", ""))})
    assert found == [], found
    assert "\r" not in raw
    junit = (pytester.path / "junit.xml").read_text(encoding="utf-8")
    assert UNSAFE.search(junit) is None
    assert "\\u202e" in junit
    for path in (pytester.path / "r.md", summary):
        text = path.read_text(encoding="utf-8")
        assert UNSAFE.search(text) is None, path
        assert "\\\\x1b" in text  # the escape, itself escaped for Markdown
        # No GitHub mention: the @ is followed by a zero-width space.
        assert re.search(r"(?<!\w)@[A-Za-z0-9]", text) is None
        assert "@\u200boctocat" in text
        html = MarkdownIt("commonmark").enable("table").render(text)
        assert "\x1b" not in html and "\u202e" not in html


def test_md_escape_keeps_emails_and_neutralises_mentions() -> None:
    from pytest_context_bench.report.markdown import md_escape

    assert md_escape("ask @octocat or @org/team") == (
        "ask @\u200boctocat or @\u200borg/team"
    )
    assert md_escape("mail a@b.com") == "mail a@b.com"
    assert md_escape("a\x1bb\u202ec") == "a\\\\x1bb\\\\u202ec"


def test_compare_and_merge_print_data_as_escapes(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    from pytest_context_bench.cli import main

    _project(pytester)
    a, b = pytester.path / "a.json", pytester.path / "b.json"
    for out in (a, b):
        pytester.runpytest(
            "--ctxbench-dataset=qa.jsonl",
            "--ctxbench-system=systems:shady",
            f"--ctxbench-json={out}",
            "--ctxbench-min-pass-rate=0.9",
            "--ctxbench-shard=1/1",
        )
        assert out.exists()
    capsys.readouterr()
    main(["compare", str(a), str(b)])
    main(["merge", str(a)])
    printed = capsys.readouterr()
    text = printed.out + printed.err
    assert "merged 1 shards" in text, text
    assert "sha\\u202edy\\x1b[31m" in text
    assert UNSAFE.search(text) is None, sorted(
        {repr(m.group(0)) for m in UNSAFE.finditer(text)}
    )


def test_a_table_is_laid_out_on_the_escaped_text() -> None:
    """A suite name holding a control character is shown escaped (``\\x1b``, four
    characters for one): the columns are measured on what is shown, so they line up."""
    from pytest_context_bench.report.terminal import fit_table

    lines = fit_table(
        ["suite", "examples"], [["evil\x1b[31m", "2"], ["plain", "3"]], width=80
    )
    assert lines[2].startswith("evil\\x1b[31m  2")
    starts = {line.index("examples") for line in lines[:1]} | {
        line.rindex(" ") + 1 for line in lines[2:]
    }
    assert len(starts) == 1, lines
