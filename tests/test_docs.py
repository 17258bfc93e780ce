"""The docs run: every Python block of README.md and docs/*.md is executed, and the
quickstart's pytest transcripts are run and compared with what they show.

A block that is illustrative only has ``<!-- skip: next -->`` on the line before
it. The blocks of one page run in order, in one namespace, in a folder holding the
quickstart's project (``data/qa.jsonl``, ``mysystems.py``, ``pyproject.toml``, taken
from docs/quickstart.md itself) and a JSON report of it (``report.json``).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from sybil import Sybil
from sybil.parsers.markdown import PythonCodeBlockParser, SkipParser

ROOT = Path(__file__).resolve().parent.parent
PAGES = sorted([ROOT / "README.md", *(ROOT / "docs").glob("*.md")])
QUICKSTART = ROOT / "docs" / "quickstart.md"
_FENCE = re.compile(r"^(`{3,})(\w*)\n(.*?)^\1$", re.MULTILINE | re.DOTALL)


def _blocks(text: str) -> list[tuple[str, str]]:
    """The fenced blocks of a page: (language, body)."""
    return [(m.group(2), m.group(3)) for m in _FENCE.finditer(text)]


def quickstart_project(folder: Path) -> Path:
    """Write the quickstart's project (its data, Systems and ini) into ``folder``."""
    text = QUICKSTART.read_text(encoding="utf-8")
    blocks = _blocks(text)
    data = next(b for lang, b in blocks if not lang and b.startswith('{"id": "france"'))
    systems = next(b for lang, b in blocks if lang == "python" and "class CapitalReader" in b)
    ini = next(b for lang, b in blocks if lang == "toml" and 'pythonpath = ["."]' in b)
    (folder / "data").mkdir(exist_ok=True)
    (folder / "data" / "qa.jsonl").write_text(data, encoding="utf-8")
    (folder / "mysystems.py").write_text(systems, encoding="utf-8")
    (folder / "pyproject.toml").write_text(ini, encoding="utf-8")
    return folder


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = quickstart_project(tmp_path_factory.mktemp("docs"))
    subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
         "--ctxbench-dataset=data/qa.jsonl", "--ctxbench-system=mysystems:reader",
         "--ctxbench-json=report.json"],
        cwd=folder, check=True, capture_output=True,
    )
    return folder


@pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
def test_python_blocks_run(
    page: Path, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(project)
    monkeypatch.syspath_prepend(str(project))
    document = Sybil(parsers=[PythonCodeBlockParser(), SkipParser()]).parse(page)
    for example in document:
        result = example.evaluate()
        assert not result, f"{page.name}, line {example.line}: {result}"


# -------------------------------------------------------------- pytest transcripts

_HEADER = ("platform ", "cachedir:", "rootdir:", "plugins:", "configfile:")
_DURATION = re.compile(r"\b\d+(?:\.\d+)?(?:µs|ms|s)\b")


def normalise(output: str) -> list[str]:
    """A transcript without what changes from run to run or machine to machine:
    the header's paths and versions, durations, column widths."""
    lines = []
    for line in output.strip().splitlines():
        if line.startswith(_HEADER):
            continue
        line = _DURATION.sub("<t>", line)
        line = re.sub(r"-{2,}", "--", line)
        line = re.sub(r"=+ ", "== ", line)
        line = re.sub(r" =+", " ==", line)
        lines.append(" ".join(line.split()))
    return lines


def transcripts(text: str) -> list[tuple[str, str]]:
    """(command, shown output): a block of one ``pytest ...`` line followed by a
    block that starts with pytest's session header (a whole transcript)."""
    blocks = _blocks(text)
    pairs = []
    for (lang, command), (_, output) in zip(blocks, blocks[1:]):
        command = command.strip()
        if (not lang and command.startswith("pytest ") and "\n" not in command
                and "test session starts" in output.splitlines()[0]):
            pairs.append((command, output))
    return pairs


def run_transcript(command: str, folder: Path) -> str:
    args = command.split()[1:]
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    env["COLUMNS"] = "80"
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args],
        cwd=folder, capture_output=True, text=True, env=env,
    )
    return done.stdout


QUICKSTART_RUNS = transcripts(QUICKSTART.read_text(encoding="utf-8"))


def test_the_quickstart_shows_transcripts() -> None:
    assert QUICKSTART_RUNS


@pytest.mark.parametrize(
    "command, shown", QUICKSTART_RUNS, ids=[f"run{i}" for i in range(len(QUICKSTART_RUNS))]
)
def test_quickstart_transcript(command: str, shown: str, tmp_path: Path) -> None:
    got = run_transcript(command, quickstart_project(tmp_path))
    assert normalise(got) == normalise(shown), got


# ------------------------------------------------------- numbers that come from code


def test_readme_dataset_count_is_the_registrys() -> None:
    from pytest_context_bench.datasets import available

    count = re.search(r"lists all (\d+)\.", (ROOT / "README.md").read_text()).group(1)
    assert int(count) == len(available())


def test_every_option_is_in_the_options_page() -> None:
    from pytest_context_bench.plugin.options import OPTIONS

    page = (ROOT / "docs" / "options.md").read_text(encoding="utf-8")
    missing = [o.flag for o in OPTIONS if f"`{o.flag}" not in page]
    missing += [o.ini for o in OPTIONS if o.ini not in page]
    assert OPTIONS and missing == []
