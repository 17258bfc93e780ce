"""Every reader of a file (datasets in every format, baselines) turns any JSON that
Python's decoder or our validators could choke on into one clear error naming the
file (and line), never a crash: deep nesting, huge integers, lone surrogates,
NaN/Infinity. Generated with Hypothesis."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from helpers import qa_lines
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_context_bench._json import (
    MAX_DEPTH,
    JSONValueError,
    strict_loads,
    value_problem,
)
from pytest_context_bench.baseline import load_baseline
from pytest_context_bench.datasets.local import load_local
from pytest_context_bench.errors import ConfigError, DatasetError

SETTINGS = settings(
    max_examples=60,
    deadline=None,  # no timed assertions: the machine is shared
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

# JSON text fragments Python's json module reads but that are not JSON we accept,
# or that make it fail with something other than a syntax error.
POISON = st.one_of(
    st.integers(MAX_DEPTH + 1, 100_000).map(lambda n: "[" * n + "]" * n),
    st.integers(MAX_DEPTH + 1, 5_000).map(lambda n: '{"a":' * n + "1" + "}" * n),
    st.integers(4_301, 6_000).map(lambda n: "9" * n),
    st.integers(4_301, 6_000).map(lambda n: "-" + "1" * n),
    st.sampled_from(["NaN", "Infinity", "-Infinity", "1e999", "-1e400", "[1, NaN]"]),
    st.integers(0xD800, 0xDFFF).map(lambda c: f'"a\\u{c:04x}b"'),
    st.integers(0xD800, 0xDFFF).map(lambda c: f'{{"\\u{c:04x}": 1}}'),
)

# Arbitrary values Python can serialize (with allow_nan), surrogates included.
VALUES = st.recursive(
    st.none() | st.booleans() | st.floats() | st.integers() | st.text(),
    lambda inner: (
        st.lists(inner, min_size=1, max_size=4)
        | st.dictionaries(st.text(max_size=5), inner, min_size=1, max_size=4)
    ),
    max_leaves=20,
)

FIELDS = st.sampled_from(["context", "answer", "question", "extra", "metadata"])


def _example(field: str, fragment: str) -> str:
    base = {"id": "p", "question": "q?", "answer": "a"}
    head = json.dumps({k: v for k, v in base.items() if k != field})
    return head[:-1] + f', "{field}": {fragment}}}'


def _assert_one_clear_error(exc: BaseException, path: Path, line: int | None) -> None:
    text = str(exc)
    assert "\n" not in text
    assert str(path.name) in text
    if line is not None:
        assert f"{path.name}:{line}" in text, text


def _ok_json(value: Any) -> None:
    """A loaded example is JSON we could write back."""
    json.dumps(value, allow_nan=False).encode("utf-8")


@SETTINGS
@given(fragment=POISON, field=FIELDS, at=st.integers(1, 3))
def test_jsonl_poison_is_one_error_naming_the_line(
    tmp_path: Path, fragment: str, field: str, at: int
) -> None:
    lines = qa_lines(3).splitlines()
    lines[at - 1] = _example(field, fragment)
    path = tmp_path / "poison.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(DatasetError) as info:
        load_local(path)
    _assert_one_clear_error(info.value, path, at)


@SETTINGS
@given(
    fragment=POISON, field=FIELDS, where=st.sampled_from(["list", "examples", "meta"])
)
def test_json_poison_is_one_error_naming_the_file(
    tmp_path: Path, fragment: str, field: str, where: str
) -> None:
    good = ",".join(qa_lines(2).splitlines())
    if where == "list":
        text = f"[{good}, {_example(field, fragment)}]"
    elif where == "examples":
        text = f'{{"examples": [{good}, {_example(field, fragment)}]}}'
    else:  # poison outside the examples
        text = f'{{"meta": {fragment}, "examples": [{good}]}}'
    path = tmp_path / "poison.json"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(DatasetError) as info:
        load_local(path)
    _assert_one_clear_error(info.value, path, None)


@SETTINGS
@given(value=VALUES, field=FIELDS, fmt=st.sampled_from(["jsonl", "json"]))
def test_any_value_loads_as_json_or_is_one_error(
    tmp_path: Path, value: Any, field: str, fmt: str
) -> None:
    fragment = json.dumps(value, allow_nan=True, ensure_ascii=True)
    line = _example(field, fragment)
    path = tmp_path / f"any.{fmt}"
    path.write_text(line + "\n" if fmt == "jsonl" else f"[{line}]", encoding="utf-8")
    try:
        ds = load_local(path)
    except DatasetError as exc:
        _assert_one_clear_error(exc, path, None)
        return
    _ok_json(ds[0])


@SETTINGS
@given(cell=st.text(), column=FIELDS)
def test_csv_any_cell_loads_or_is_one_error(
    tmp_path: Path, cell: str, column: str
) -> None:
    import csv

    path = tmp_path / "any.csv"
    with open(path, "w", encoding="utf-8", newline="", errors="surrogatepass") as fh:
        writer = csv.writer(fh)
        cols = sorted({"id", "question", "answer", column})
        writer.writerow(cols)
        writer.writerow([cell if c == column else "x" for c in cols])
    try:
        ds = load_local(path)
    except DatasetError as exc:
        _assert_one_clear_error(exc, path, None)
        return
    _ok_json(ds[0])


@SETTINGS
@given(value=st.floats(allow_nan=True, allow_infinity=True), nested=st.booleans())
def test_parquet_non_finite_floats_are_one_error(
    tmp_path: Path, value: float, nested: bool
) -> None:
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    extra: Any = {"x": [value]} if nested else value
    table = pa.Table.from_pylist(
        [{"id": "1", "question": "q", "answer": "a", "extra": extra}]
    )
    path = tmp_path / "t.parquet"
    pq.write_table(table, path)
    if math.isfinite(value):
        _ok_json(load_local(path)[0])
        return
    with pytest.raises(DatasetError) as info:
        load_local(path)
    _assert_one_clear_error(info.value, path, 1)


def _baseline_doc(tmp_path: Path) -> dict[str, Any]:
    from test_baseline import _good

    return _good(tmp_path)


@SETTINGS
@given(fragment=POISON, where=st.sampled_from(["score", "metadata", "top", "summary"]))
def test_baseline_poison_is_one_error(
    tmp_path: Path, fragment: str, where: str
) -> None:
    doc = _baseline_doc(tmp_path)
    marker = "__POISON__"
    if where == "score":
        doc["rows"][0]["scores"]["f1"] = marker
    elif where == "metadata":
        doc["rows"][1]["metadata"]["x"] = marker
    elif where == "top":
        doc["options"]["x"] = marker
    else:
        doc["summary"][next(iter(doc["summary"]))]["x"] = marker
    text = json.dumps(doc, indent=2).replace(f'"{marker}"', fragment)
    path = tmp_path / "base.json"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        load_baseline(path)
    _assert_one_clear_error(info.value, path, None)


@pytest.mark.parametrize(
    "fragment", ["NaN", "Infinity", "1e999", '"a\\ud800"', "[[[[1]]]]"]
)
def test_strict_loads_and_value_problem_agree(fragment: str) -> None:
    try:
        value = strict_loads(fragment)
    except JSONValueError:
        value = json.loads(fragment)
        assert value_problem(value) is not None
    else:
        assert value_problem(value) is None


def test_plugin_run_on_a_deep_dataset_is_a_usage_error(
    project: pytest.Pytester,
) -> None:
    lines = qa_lines(3).splitlines()
    lines[1] = _example("context", "[" * 100_000 + "]" * 100_000)
    (project.path / "deep.jsonl").write_text("\n".join(lines) + "\n")
    result = project.runpytest(
        "--ctxbench-dataset=deep.jsonl", "--ctxbench-system=systems:echo"
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    errors = [line for line in result.stderr.lines if line.strip()]
    assert len(errors) == 1 and "deep.jsonl:2" in errors[0], errors
