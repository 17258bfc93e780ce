"""The docs run: every Python block of README.md and docs/*.md is executed, and the
quickstart's pytest transcripts are run and compared with what they show.

A block that is illustrative only has ``<!-- skip: next -->`` on the line before
it. The blocks of one page run in order, in one namespace, in a folder holding the
quickstart's project (``data/qa.jsonl``, ``mysystems.py``, ``pyproject.toml``, taken
from docs/quickstart.md itself) and a JSON report of it (``report.json``).
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import shlex
import shutil
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest
from helpers import INNER_ADDOPTS, ExampleRun
from sybil import Region, Sybil
from sybil.example import SybilFailure
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
    systems = next(
        b for lang, b in blocks if lang == "python" and "class CapitalReader" in b
    )
    ini = next(b for lang, b in blocks if lang == "toml" and 'pythonpath = ["."]' in b)
    (folder / "data").mkdir(exist_ok=True)
    (folder / "data" / "qa.jsonl").write_text(data, encoding="utf-8")
    (folder / "mysystems.py").write_text(systems, encoding="utf-8")
    (folder / "pyproject.toml").write_text(ini, encoding="utf-8")
    return folder


# ------------------------------------------------------------------ the parsers

_DURATION = re.compile(r"\b\d+(?:\.\d+)?(?:µs|ms|s)\b")
_HEADER = (
    "platform ",
    "cachedir:",
    "rootdir:",
    "plugins:",
    "configfile:",
    "hypothesis profile ",
)
_DIRECTORY = re.compile(r"~?(?:/[\w.~-]+)+/")
_PROGRESS = re.compile(r"^(?:[\w/.:-]+ )?[.bEFsx]+ +\[ *\d+%\]$")
_COMMIT = re.compile(r"\(commit [0-9a-f]+\)")
#: A plain fenced block right after the end of another (blank lines between).
_NEXT_PLAIN = re.compile(
    r"[ \t]*\n(?:[ \t]*\n)*(`{3,})\n(.*?)^\1[ \t]*$", re.MULTILINE | re.DOTALL
)
_TRANSCRIPT = re.compile(
    r"^```\n(pytest [^\n]*)\n```[ \t]*\n(?:[ \t]*\n)*```\n(.*?)^```[ \t]*$",
    re.MULTILINE | re.DOTALL,
)
_FILE = re.compile(
    r"^<!-- (file|append): (\S+) -->[ \t]*\n(`{3,})[^\n]*\n(.*?)^\3[ \t]*$",
    re.MULTILINE | re.DOTALL,
)


_SANDBOX = re.compile(r"^ctxbench: code sandbox: .*")


def _unwrap(lines: list[str], width: int = 80) -> list[str]:
    """The lines ctxbench wrapped to the terminal (``report.terminal.wrap_line``)
    joined again: where a line breaks depends on the paths in it, which differ
    from machine to machine. A continuation is indented two columns more than its
    first line, and its first word did not fit on the line before."""
    out: list[tuple[str, str]] = []  # (the joined line, its last physical line)
    for line in lines:
        words = line.split()
        if out and words:
            joined, last = out[-1]
            first = len(joined) - len(joined.lstrip(" "))
            indent = len(line) - len(line.lstrip(" "))
            if indent == first + 2 and len(last) + 1 + len(words[0]) > width:
                out[-1] = (joined + " " + " ".join(words), line)
                continue
        out.append((line, line))
    return [joined for joined, _ in out]


def normalise(output: str) -> list[str]:
    """Text without what changes from run to run or machine to machine: pytest's
    header lines (paths, versions), directories, commits, durations, column widths
    and rules, the progress lines (their order varies under xdist), and where the
    long lines were wrapped."""
    lines = []
    for line in _unwrap(output.strip().splitlines()):
        if line.startswith(_HEADER) or _PROGRESS.match(line.strip()):
            continue
        # The sandbox's isolation level depends on the machine (docs/guarantees.md).
        line = _SANDBOX.sub("ctxbench: code sandbox: <level>", line)
        line = _COMMIT.sub("(commit <c>)", line)
        line = _DURATION.sub("<t>", line)
        line = _DIRECTORY.sub("<dir>/", line)
        line = re.sub(r"-{2,}", "--", line)
        line = re.sub(r"={2,}", "==", line)
        lines.append(" ".join(line.split()))
    return lines


def _same(got: str, shown: str) -> bool:
    """Equal lines; a shown line ending in ``...`` stands for any line it begins."""
    if shown.endswith("..."):
        return got.startswith(shown[:-3].rstrip())
    return got == shown


def _contains(got: list[str], shown: list[str]) -> bool:
    """``shown`` is a contiguous run of ``got`` (a page may show part of an output)."""
    return any(
        all(_same(g, w) for g, w in zip(got[i : i + len(shown)], shown))
        for i in range(len(got) - len(shown) + 1)
    )


class PythonWithOutputParser:
    """Sybil's Python code blocks; when a plain block follows one directly, it is
    what the block prints, and the printed text is compared with it."""

    def __init__(self) -> None:
        self._inner = PythonCodeBlockParser()

    def __call__(self, document: Any) -> Iterable[Region]:
        for region in self._inner(document):
            shown = _NEXT_PLAIN.match(document.text, region.end)
            if shown is not None and isinstance(region.parsed, str):
                text = shown.group(2)
                if not text.startswith(("pytest ", "pip ", "$ ")):
                    region.evaluator = _printing(region.evaluator, text)
            yield region


def _printing(inner: Any, shown: str) -> Any:
    def evaluate(example: Any) -> str | None:
        buffer = io.StringIO()
        with contextlib.redirect_stdout(buffer):
            result = inner(example)
        if result:
            return str(result)
        if normalise(buffer.getvalue()) != normalise(shown):
            return f"the block printed:\n{buffer.getvalue()}\nthe page shows:\n{shown}"
        return None

    return evaluate


class FileParser:
    """``<!-- file: NAME -->`` before a block: the block is written to NAME in the
    page's project (a conftest.py, a test module), for the commands after it;
    ``<!-- append: NAME -->`` adds it to the end of NAME."""

    def __call__(self, document: Any) -> Iterable[Region]:
        for m in _FILE.finditer(document.text):
            end = document.text.index("\n", m.start())
            yield Region(
                m.start(), end, (m.group(1), m.group(2), m.group(4)), _write_file
            )


def _write_file(example: Any) -> None:
    how, name, content = example.parsed
    path = example.namespace["__project__"] / name
    path.parent.mkdir(parents=True, exist_ok=True)
    if how == "append":
        content = path.read_text(encoding="utf-8") + "\n\n" + content
    path.write_text(content, encoding="utf-8")


class TranscriptParser:
    """A block holding one ``pytest ...`` command, followed by a block of its output:
    the command runs in the page's project, and the output shown must appear in what
    it prints (timings, paths and column widths aside)."""

    def __call__(self, document: Any) -> Iterable[Region]:
        for m in _TRANSCRIPT.finditer(document.text):
            yield Region(m.start(), m.end(), (m.group(1), m.group(2)), _run_transcript)


def _run_transcript(example: Any) -> str | None:
    command, shown = example.parsed
    got = run_pytest(command, example.namespace["__project__"])
    if not _contains(normalise(got), normalise(shown)):
        return f"`{command}` printed:\n{got}\nthe page shows:\n{shown}"
    return None


def run_pytest(command: str, folder: Path) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    env["PYTEST_ADDOPTS"] = INNER_ADDOPTS  # the plugins no run uses, not loaded
    env["COLUMNS"] = "80"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "no:cacheprovider",
            *shlex.split(command)[1:],
        ],
        cwd=folder,
        capture_output=True,
        check=False,
        text=True,
        env=env,
    )
    return done.stdout + done.stderr


DOCS = Sybil(
    parsers=[PythonWithOutputParser(), FileParser(), TranscriptParser(), SkipParser()]
)


@pytest.fixture(scope="session")
def quickstart_report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The JSON report of the quickstart's project, run once for the pages that read
    it (``report.json``): they only read it."""
    project = quickstart_project(tmp_path_factory.mktemp("quickstart-report"))
    run_pytest(
        "pytest -q --ctxbench-dataset=data/qa.jsonl --ctxbench-system=mysystems:reader"
        " --ctxbench-system=mysystems:trimmer"
        " --ctxbench-json=report.json",
        project,
    )
    return project / "report.json"


@pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
def test_page_runs(
    page: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> None:
    project = quickstart_project(tmp_path)
    if "report.json" in page.read_text(encoding="utf-8"):
        shutil.copy(request.getfixturevalue("quickstart_report"), project / "report.json")
    monkeypatch.chdir(project)
    monkeypatch.syspath_prepend(str(project))
    for name in ("mysystems", "conftest", "test_bench"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    document = DOCS.parse(page)
    document.namespace["__project__"] = project
    failures = []
    for example in document:
        try:
            example.evaluate()
        except SybilFailure as failure:
            failures.append(f"{page.name}, line {example.line}: {failure.result}")
    assert not failures, "\n\n".join(failures)


def test_the_quickstart_transcripts_are_checked() -> None:
    assert len(list(_TRANSCRIPT.finditer(QUICKSTART.read_text(encoding="utf-8")))) >= 3


# ----------------------------------------------------------- the example project

EXAMPLE = ROOT / "example_project"
_EXAMPLE_OUTPUT = re.compile(
    r"^```\n\$ pytest -n 2\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL
)


def test_the_example_projects_output_is_the_one_shown(example_run: ExampleRun) -> None:
    """README.md, docs/reports.md and the example's README show `pytest -n 2` in
    example_project: run it (the session's run, helpers.example_run, which
    test_example_project reads too)."""
    assert example_run.returncode == 0, example_run.stdout + example_run.stderr
    got = normalise(example_run.stdout)
    for page in (
        ROOT / "README.md",
        ROOT / "docs" / "reports.md",
        EXAMPLE / "README.md",
    ):
        shown = _EXAMPLE_OUTPUT.findall(page.read_text(encoding="utf-8"))
        assert len(shown) == 1, page
        assert _contains(got, normalise(shown[0])), (
            f"{page.name} shows:\n{shown[0]}\nthe run printed:\n{example_run.stdout}"
        )


# ------------------------------------------------------- numbers that come from code


def test_readme_dataset_count_is_the_registrys() -> None:
    # The registry a user's new interpreter sees: in this process, other tests may
    # have registered datasets of their own.
    names = subprocess.run(
        [sys.executable, "-c",
         "from pytest_context_bench.datasets import available; print(len(available()))"],
        capture_output=True, text=True, check=True,
    ).stdout
    count = re.search(r"lists all (\d+)\.", (ROOT / "README.md").read_text()).group(1)
    assert int(count) == int(names)


def test_every_option_is_in_the_options_page() -> None:
    from pytest_context_bench.plugin.options import OPTIONS

    page = (ROOT / "docs" / "options.md").read_text(encoding="utf-8")
    missing = [o.flag for o in OPTIONS if f"`{o.flag}" not in page]
    missing += [o.ini for o in OPTIONS if o.ini not in page]
    assert OPTIONS and missing == []


def test_every_option_the_docs_name_exists() -> None:
    from pytest_context_bench.plugin.options import OPTIONS

    flags = {o.flag for o in OPTIONS}
    named = {
        (page.name, flag)
        for page in PAGES
        for flag in re.findall(
            r"--ctxbench-[a-z0-9-]*[a-z0-9]", page.read_text(encoding="utf-8")
        )
    }
    # "--ctxbench-code-*" names a family of options.
    unknown = [
        (page, flag)
        for page, flag in named
        if flag not in flags and not any(f.startswith(flag + "-") for f in flags)
    ]
    assert sorted(unknown) == []
