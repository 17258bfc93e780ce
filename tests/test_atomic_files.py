"""Reports and baselines are written atomically: a reader never sees half a file."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from pytest_context_bench._files import atomic_write_text
from pytest_context_bench.report import write_json


def test_a_concurrent_reader_sees_only_whole_files(tmp_path: Path) -> None:
    path = tmp_path / "report.json"
    docs = [{"n": i, "rows": ["x" * 200] * (2000 + 500 * (i % 3))} for i in range(40)]
    write_json(docs[0], path)
    done = threading.Event()
    seen: list[int] = []
    torn: list[str] = []

    def reader() -> None:
        while not done.is_set():
            text = path.read_text(encoding="utf-8")
            try:
                seen.append(json.loads(text)["n"])
            except json.JSONDecodeError:
                torn.append(text[-40:])

    thread = threading.Thread(target=reader)
    thread.start()
    try:
        for doc in docs[1:]:
            write_json(doc, path)
    finally:
        done.set()
        thread.join()
    assert torn == []
    assert seen  # the reader did read while the writer wrote
    assert json.loads(path.read_text())["n"] == 39
    assert [p.name for p in tmp_path.iterdir()] == ["report.json"]  # no temporary left


def test_a_failed_write_keeps_the_old_file_and_leaves_no_temporary(
    tmp_path: Path,
) -> None:
    path = tmp_path / "base.json"
    atomic_write_text(path, "old\n")
    with pytest.raises(UnicodeEncodeError):
        atomic_write_text(path, "new " + "\ud800")  # a lone surrogate: not UTF-8
    assert path.read_text() == "old\n"
    assert [p.name for p in tmp_path.iterdir()] == ["base.json"]


def test_parent_directories_are_created(tmp_path: Path) -> None:
    path = tmp_path / "a" / "b" / "r.json"
    atomic_write_text(path, "{}\n")
    assert path.read_text() == "{}\n"
