"""Local datasets (.jsonl, .json, .csv), families, schemas, the registry and resolve_dataset."""

from __future__ import annotations

import gc
import hashlib
import json
import os
import sys
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pytest_context_bench.datasets import (
    PRIMARY_SCORE,
    Dataset,
    LocalDataset,
    available,
    families,
    load_local,
    primary_score,
    register_dataset,
    registry,
    resolve_dataset,
)
from pytest_context_bench.errors import ConfigError, DatasetError

ANSWER_EXPECTED = "a string, a number or a non-empty list of strings"


def write(tmp_path: Path, name: str, content: str | bytes) -> Path:
    path = tmp_path / name
    if isinstance(content, str):
        content = content.encode("utf-8")
    path.write_bytes(content)
    return path


def jsonl(*examples: Any) -> str:
    """One line per example; a string is written as is (blank lines, bad JSON)."""
    return "".join(
        (item if isinstance(item, str) else json.dumps(item)) + "\n"
        for item in examples
    )


def qa(n: int, **extra: Any) -> dict[str, Any]:
    return {"question": f"q{n}?", "answer": f"a{n}", **extra}


def load_error(path: Path, **kwargs: Any) -> str:
    with pytest.raises(DatasetError) as info:
        load_local(path, **kwargs)
    return str(info.value)


# ------------------------------------------------------------------- formats


def test_jsonl_loads_examples_with_tag_family_and_ids(tmp_path: Path) -> None:
    path = write(tmp_path, "qa.jsonl", jsonl(qa(1, id="first"), qa(2, id=7), qa(3)))
    ds = load_local(path)
    assert isinstance(ds, LocalDataset)
    assert isinstance(ds, Dataset)
    assert (ds.tag, ds.path, ds.family, ds.primary_score) == (
        "qa",
        str(path),
        "qa",
        "f1",
    )
    assert len(ds) == 3
    assert ds.ids == ["first", "7", "3"]
    assert ds[0] == {"id": "first", "question": "q1?", "answer": "a1", "dataset": "qa"}
    assert ds[1]["id"] == "7"  # an integer id becomes a string
    assert ds[-1]["id"] == "3"
    assert [ex["id"] for ex in ds] == ["first", "7", "3"]
    with pytest.raises(IndexError):
        ds[3]


def test_jsonl_blank_lines_are_skipped_but_counted(tmp_path: Path) -> None:
    text = "\n" + jsonl(qa(1)) + "   \n\r\n" + jsonl(qa(2)) + "\n"
    path = write(tmp_path, "qa.jsonl", text)
    ds = load_local(path)
    assert ds.ids == ["2", "5"]
    assert ds.location(0) == (str(path), 2)
    assert ds.location(1) == (str(path), 5)
    assert ds[1]["question"] == "q2?"


def test_jsonl_crlf_and_missing_final_newline(tmp_path: Path) -> None:
    text = json.dumps(qa(1)) + "\r\n" + json.dumps(qa(2))
    ds = load_local(write(tmp_path, "qa.jsonl", text))
    assert ds.ids == ["1", "2"]
    assert ds[1]["answer"] == "a2"


def test_jsonl_tolerates_a_bom(tmp_path: Path) -> None:
    data = b"\xef\xbb\xbf" + jsonl(qa(1), qa(2)).encode()
    path = write(tmp_path, "qa.jsonl", data)
    ds = load_local(path)
    assert ds[0]["question"] == "q1?"
    assert ds.ids == ["1", "2"]
    assert ds.fingerprint == hashlib.sha256(data).hexdigest()


def test_json_list_ids_are_positions_and_locations_are_lines(tmp_path: Path) -> None:
    text = '[\n  {"question": "q1?", "answer": "a1"},\n\n  {"question": "q2?",\n   "answer": ["x", "y"], "id": 9},\n  {"context": "c", "answer": 3}\n]\n'
    path = write(tmp_path, "data.json", text)
    ds = load_local(path)
    assert ds.tag == "data"
    assert ds.ids == ["1", "9", "3"]
    assert [ds.location(i) for i in range(3)] == [
        (str(path), 2),
        (str(path), 4),
        (str(path), 6),
    ]
    assert ds[1] == {
        "id": "9",
        "question": "q2?",
        "answer": ["x", "y"],
        "dataset": "data",
    }


def test_json_object_with_examples_list(tmp_path: Path) -> None:
    text = json.dumps(
        {"name": "mine", "examples": [qa(1), qa(2)], "note": {"examples": 1}}, indent=2
    )
    path = write(tmp_path, "mine.json", text)
    ds = load_local(path)
    assert ds.ids == ["1", "2"]
    assert ds[1]["answer"] == "a2"
    lines = text.splitlines()
    assert lines[ds.location(1)[1] - 1].strip() == "{"


def test_json_shape_errors(tmp_path: Path) -> None:
    assert "has no 'examples' field" in load_error(
        write(tmp_path, "a.json", '{"x": []}')
    )
    message = load_error(write(tmp_path, "b.json", '{"examples": {"a": 1}}'))
    assert "the 'examples' field holds an object, not a list" in message
    assert "holds a string" in load_error(write(tmp_path, "c.json", '"text"'))


def test_json_invalid_json_names_the_line(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "bad.json",
        '[\n {"question": "q", "answer": "a"},\n {"question": }\n]',
    )
    message = load_error(path)
    assert message.startswith(f"{path}:3: the file is not valid JSON: Expecting value")


def test_json_holding_jsonl_gets_a_hint(tmp_path: Path) -> None:
    path = write(tmp_path, "lines.json", jsonl(qa(1), qa(2)))
    message = load_error(path)
    assert message.startswith(f"{path}:2: the file is not valid JSON: Extra data")
    assert "name it .jsonl" in message


def test_csv_values_are_strings_and_empty_cells_are_absent(tmp_path: Path) -> None:
    text = "id,context,question,answer,score\n,ctx,q1?,a1,3\nx7,,q2?,42,\n"
    path = write(tmp_path, "sheet.csv", text)
    ds = load_local(path)
    assert ds.ids == ["2", "x7"]
    assert ds[0] == {
        "id": "2",
        "context": "ctx",
        "question": "q1?",
        "answer": "a1",
        "score": "3",
        "dataset": "sheet",
    }
    assert ds[1] == {"id": "x7", "question": "q2?", "answer": "42", "dataset": "sheet"}


def test_csv_ids_are_the_physical_line_a_row_starts_on(tmp_path: Path) -> None:
    text = '\ufeffquestion,answer\n\n"multi\nline\nquestion",a\n,\nq3,"b"\r\n'
    path = write(tmp_path, "rows.csv", text)
    ds = load_local(path)
    assert ds.ids == ["3", "7"]
    assert ds[0]["question"] == "multi\nline\nquestion"
    assert ds.location(1) == (str(path), 7)


def test_csv_errors(tmp_path: Path) -> None:
    path = write(tmp_path, "dup.csv", "question,answer,question\nq,a,q\n")
    message = load_error(path)
    assert message.startswith(f"{path}:1: the header names column 'question' twice")
    path = write(tmp_path, "extra.csv", "question,answer\nq,a,surplus\n")
    message = load_error(path)
    assert message.startswith(f"{path}:2: the row has a value in column 3")
    path = write(tmp_path, "header.csv", "question,answer\n\n")
    assert "has a header row (line 1) but no examples" in load_error(path)
    path = write(tmp_path, "noanswer.csv", "question\nq1\n")
    message = load_error(path)
    assert message.startswith(f"{path}:2: field 'answer' is missing;")
    assert message.endswith("Fix the row or drop it.")


def test_csv_cells_longer_than_the_csv_module_default_limit(tmp_path: Path) -> None:
    long = "word " * 40_000  # 200,000 characters > csv's 131,072 default
    ds = load_local(write(tmp_path, "long.csv", f"context,answer\n{long},a\n"))
    assert ds[0]["context"] == long
    import csv

    assert csv.field_size_limit() == 131_072  # restored


# -------------------------------------------------------------------- errors


def test_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "nope.jsonl"
    message = load_error(path)
    assert message.startswith(f"{path}: the file does not exist")


def test_directory_is_not_a_file(tmp_path: Path) -> None:
    (tmp_path / "dir.jsonl").mkdir()
    assert "is a directory, not a file" in load_error(tmp_path / "dir.jsonl")


def test_unsupported_extension(tmp_path: Path) -> None:
    path = write(tmp_path, "data.txt", jsonl(qa(1)))
    message = load_error(path)
    assert message.startswith(
        f"{path}: a local dataset must be a .jsonl, .json, .csv, .parquet or .yaml"
    )
    assert "'.txt'" in message


@pytest.mark.parametrize(
    ("name", "content", "expected"),
    [
        ("empty.jsonl", "", "the file holds no examples"),
        ("blank.jsonl", "\n  \n\n", "the file holds no examples"),
        ("empty.json", "[]", "the list of examples is empty"),
        ("blank.json", " \n", "the file is empty"),
        ("empty2.json", '{"examples": []}', "the list of examples is empty"),
        ("empty.csv", "", "the file is empty"),
    ],
)
def test_empty_dataset(tmp_path: Path, name: str, content: str, expected: str) -> None:
    path = write(tmp_path, name, content)
    assert load_error(path).startswith(f"{path}: {expected}")


def test_invalid_json_line(tmp_path: Path) -> None:
    path = write(
        tmp_path, "qa.jsonl", jsonl(qa(1), "", '{"question": "q", "answer": }')
    )
    message = load_error(path)
    assert message.startswith(
        f"{path}:3: the line is not valid JSON: Expecting value at column 29."
    )


def test_line_that_is_not_an_object(tmp_path: Path) -> None:
    path = write(tmp_path, "qa.jsonl", jsonl(qa(1), "[1, 2]"))
    message = load_error(path)
    assert message.startswith(f"{path}:2: the line holds a list, not a JSON object")
    path = write(tmp_path, "qa.json", '[{"question": "q", "answer": "a"},\n 5]')
    assert load_error(path).startswith(
        f"{path}:2: example 2: this is 5, not a JSON object"
    )


def test_utf8_decode_error_names_the_line(tmp_path: Path) -> None:
    data = jsonl(qa(1), qa(2)).encode() + b'{"question": "caf\xe9", "answer": "a"}\n'
    message = load_error(write(tmp_path, "qa.jsonl", data))
    assert message.startswith(
        f"{tmp_path / 'qa.jsonl'}:3: the file is not valid UTF-8: byte 0xe9"
    )
    data = b"question,answer\nq,a\nq2,caf\xe9\n"
    message = load_error(write(tmp_path, "qa.csv", data))
    assert message.startswith(
        f"{tmp_path / 'qa.csv'}:3: the file is not valid UTF-8: byte 0xe9"
    )


@pytest.mark.parametrize(
    ("example", "expected"),
    [
        (qa(0, answer=None), f"field 'answer' must be {ANSWER_EXPECTED}, got null"),
        (
            qa(0, answer=[]),
            f"field 'answer' must be {ANSWER_EXPECTED}, got an empty list",
        ),
        (
            qa(0, answer={"a": 1}),
            f"field 'answer' must be {ANSWER_EXPECTED}, got an object",
        ),
        (qa(0, answer=["a", "b", 5]), "field 'answer[2]' must be a string, got 5"),
        (qa(0, answer=True), f"field 'answer' must be {ANSWER_EXPECTED}, got true"),
        (
            {"question": "q"},
            f"field 'answer' is missing; a qa example needs it, as {ANSWER_EXPECTED}",
        ),
        (
            {"answer": "a", "note": "x"},
            (
                "a qa example needs a 'context' or a 'question' field (a string), "
                "and this one has neither"
            ),
        ),
        (qa(0, context=5), "field 'context' must be a string, got 5"),
        (qa(0, question=None), "field 'question' must be a string, got null"),
        (
            qa(0, id=""),
            "field 'id' must be a non-empty string or an integer, got an empty string",
        ),
        (
            qa(0, id=True),
            "field 'id' must be a non-empty string or an integer, got true",
        ),
        (
            qa(0, id=[1]),
            "field 'id' must be a non-empty string or an integer, got a list of 1 item",
        ),
        (qa(0, dataset=5), "field 'dataset' must be a non-empty string, got 5"),
        (qa(0, task=1), "field 'task' must be a string naming the family"),
    ],
)
def test_schema_errors_name_file_line_field_expected_and_found(
    tmp_path: Path, example: dict[str, Any], expected: str
) -> None:
    path = write(tmp_path, "qa.jsonl", jsonl(qa(1), "", qa(3), "", "", "", example))
    message = load_error(path)
    assert message.startswith(f"{path}:7: {expected}")
    assert message.endswith("Fix the line or drop it.")


def test_schema_error_in_json_names_example_and_line(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "qa.json",
        '[\n{"question": "q", "answer": "a"},\n{"question": "q",\n "answer": null}\n]',
    )
    message = load_error(path)
    assert message == (
        f"{path}:3: example 2: field 'answer' must be {ANSWER_EXPECTED}, got null. "
        "Fix the example or drop it."
    )


def test_numbers_and_extra_fields_are_valid_answers(tmp_path: Path) -> None:
    examples = [
        qa(1, answer=3),
        qa(2, answer=2.5),
        qa(3, answer=[""]),
        qa(4, extra={"x": [1]}),
    ]
    ds = load_local(write(tmp_path, "qa.jsonl", jsonl(*examples)))
    assert [ds[i]["answer"] for i in range(3)] == [3, 2.5, [""]]
    assert ds[3]["extra"] == {"x": [1]}


def test_integral_float_id_is_an_integer_id(tmp_path: Path) -> None:
    ds = load_local(write(tmp_path, "qa.jsonl", jsonl(qa(1, id=4.0))))
    assert ds.ids == ["4"]


# -------------------------------------------------------------- duplicate ids


def test_duplicate_explicit_ids_name_both_lines(tmp_path: Path) -> None:
    path = write(tmp_path, "qa.jsonl", jsonl(qa(1, id="a"), qa(2), "", qa(4, id="a")))
    message = load_error(path)
    assert message.startswith(f"{path}:4: id 'a' is already used by line 1;")


def test_explicit_id_colliding_with_a_line_number_id(tmp_path: Path) -> None:
    path = write(tmp_path, "qa.jsonl", jsonl(qa(1, id=2), qa(2)))
    message = load_error(path)
    assert message.startswith(f"{path}:2: id '2' is already used by line 1;")
    assert "gets its line number as id" in message


def test_integer_and_string_ids_collide(tmp_path: Path) -> None:
    path = write(tmp_path, "qa.jsonl", jsonl(qa(1, id=5), qa(2, id="5")))
    assert load_error(path).startswith(f"{path}:2: id '5' is already used by line 1;")


def test_duplicate_ids_in_json_and_csv(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "qa.json",
        '[{"id": "x", "question": "q", "answer": "a"},\n{"id": "x", "question": "q", "answer": "a"}]',
    )
    message = load_error(path)
    assert message.startswith(
        f"{path}:2: example 2: id 'x' is already used by example 1 (line 1);"
    )
    path = write(tmp_path, "qa.csv", "id,question,answer\nk,q,a\nk,q,a\n")
    assert load_error(path).startswith(
        f"{path}:3: id 'k' is already used by the row on line 2;"
    )


# ------------------------------------------------------------ fresh examples


@pytest.mark.parametrize("suffix", [".jsonl", ".json", ".csv"])
def test_getitem_returns_a_fresh_dict_every_call(tmp_path: Path, suffix: str) -> None:
    if suffix == ".jsonl":
        content = jsonl(qa(1, answer=["a", "b"], meta={"k": [1]}))
    elif suffix == ".json":
        content = json.dumps([qa(1, answer=["a", "b"], meta={"k": [1]})])
    else:
        content = "question,answer\nq1?,a\n"
    ds = load_local(write(tmp_path, "data" + suffix, content))
    first = ds[0]
    snapshot = json.loads(json.dumps(first))
    first["question"] = "changed"
    first["id"] = "other"
    first["dataset"] = "other"
    first["new"] = True
    if isinstance(first["answer"], list):
        first["answer"].append("c")
        first["meta"]["k"].append(2)
    second = ds[0]
    assert second is not first
    assert second == snapshot


# ------------------------------------------------------------- dataset tags


def test_dataset_tag_rules(tmp_path: Path) -> None:
    path = write(tmp_path, "my.set.jsonl", jsonl(qa(1), qa(2, dataset="upstream")))
    ds = load_local(path)
    assert ds.tag == "my.set"
    assert ds[0]["dataset"] == "my.set"
    assert ds[1]["dataset"] == "upstream"  # the example's own field is kept
    tagged = load_local(path, tag="custom")
    assert tagged.tag == "custom"
    assert tagged[0]["dataset"] == "custom"
    assert tagged[1]["dataset"] == "upstream"
    with pytest.raises(ConfigError):
        load_local(path, tag="")


# ----------------------------------------------------------------- families


def test_family_from_task_fields(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "sum.jsonl",
        jsonl({"task": "summarization", "context": "long text", "answer": "short"}) * 2,
    )
    ds = load_local(path)
    assert ds.family == "summarization"
    assert ds.primary_score == "rouge_l_f1"
    assert ds[0]["task"] == "summarization"


def test_first_task_decides_and_later_examples_may_omit_it(tmp_path: Path) -> None:
    lines = jsonl(
        {"task": "math", "question": "1+1?", "answer": "2"},
        {"question": "2+2?", "answer": "4"},
    )
    assert load_local(write(tmp_path, "m.jsonl", lines)).family == "math"


def test_family_argument(tmp_path: Path) -> None:
    path = write(tmp_path, "m.jsonl", jsonl({"question": "1+1?", "answer": "2"}))
    ds = load_local(path, family="math")
    assert (ds.family, ds.primary_score) == ("math", "math_equiv")
    assert load_local(path).family == "qa"  # the default


def test_task_contradicting_the_given_family(tmp_path: Path) -> None:
    path = write(tmp_path, "qa.jsonl", jsonl(qa(1), qa(2, task="summarization")))
    message = load_error(path, family="qa")
    assert message.startswith(
        f"{path}:2: field 'task' is 'summarization', but this file's family is 'qa' "
        "(given as family='qa')"
    )


def test_task_contradicting_the_default_family(tmp_path: Path) -> None:
    path = write(tmp_path, "qa.jsonl", jsonl(qa(1), qa(2, task="math")))
    message = load_error(path)
    assert message.startswith(
        f"{path}:2: field 'task' is 'math', but this file's family is 'qa'"
    )
    assert (
        "the default, because the first example (line 1) has no 'task' field" in message
    )


def test_mixed_tasks(tmp_path: Path) -> None:
    path = write(tmp_path, "x.jsonl", jsonl(qa(1, task="qa"), qa(2, task="math")))
    message = load_error(path)
    assert message.startswith(
        f"{path}:2: field 'task' is 'math', but this file's family is 'qa'"
    )
    assert "taken from the 'task' field of line 1" in message


def test_unknown_family(tmp_path: Path) -> None:
    path = write(tmp_path, "x.jsonl", jsonl(qa(1, task="qaa")))
    message = load_error(path)
    assert message.startswith(
        f"{path}:1: field 'task' is 'qaa', which is not a known family. Did you mean 'qa'?"
    )
    message = load_error(write(tmp_path, "y.jsonl", jsonl(qa(1))), family="trivia")
    assert message.startswith(
        f"{tmp_path / 'y.jsonl'}: family 'trivia' is not a known family"
    )


def test_primary_scores() -> None:
    assert dict(PRIMARY_SCORE) == {
        "qa": "f1",
        "summarization": "rouge_l_f1",
        "multiple_choice": "mc_accuracy",
        "math": "math_equiv",
        "code": "pass_at_1",
        "nli": "nli_accuracy",
        "ifeval": "ifeval_strict",
        "conversation": "judge_score",
        "memory": "f1",
    }
    assert set(families.FAMILIES) == set(PRIMARY_SCORE)
    assert primary_score("code") == "pass_at_1"
    with pytest.raises(ConfigError, match="unknown family 'nope'"):
        primary_score("nope")


# ------------------------------------------------------------------ schemas


def test_shipped_schemas_are_valid_draft_2020_12() -> None:
    from jsonschema import Draft202012Validator

    for family in families.FAMILIES:
        Draft202012Validator.check_schema(families.load_schema(family))
    assert families.load_schema("qa")["$id"].endswith("/qa.schema.json")
    assert families.load_schema("math")["$id"].endswith("/example.schema.json")


FAST_CHECK_CASES: list[Any] = [
    qa(1),
    qa(1, id=3),
    qa(1, id=3.0),
    qa(1, id=""),
    qa(1, id=False),
    qa(1, id=None),
    qa(1, dataset=""),
    qa(1, dataset="d"),
    qa(1, task=None),
    qa(1, answer=1.5),
    qa(1, answer=True),
    qa(1, answer=[]),
    qa(1, answer=["a", None]),
    qa(1, answer=("a",)),
    {"context": "c", "answer": "a"},
    {"context": None, "question": "q", "answer": "a"},
    {"answer": "a"},
    {"question": "q"},
    {},
]


@pytest.mark.parametrize("example", FAST_CHECK_CASES)
def test_fast_check_never_accepts_what_the_schema_rejects(
    example: dict[str, Any],
) -> None:
    from jsonschema import Draft202012Validator

    schema_valid = families._validator("qa").is_valid(json.loads(json.dumps(example)))
    if families._FAST_CHECKS["qa"](example):
        assert schema_valid
    assert (
        families.example_error("qa", json.loads(json.dumps(example))) is None
    ) == schema_valid
    assert isinstance(families._validator("qa"), Draft202012Validator)


def test_valid_examples_never_reach_jsonschema(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(family: str) -> None:
        raise AssertionError("jsonschema was asked about a valid qa example")

    monkeypatch.setattr(families, "_validator", refuse)
    examples = [
        qa(i, id=i, context="c", answer=[f"a{i}"], dataset="d") for i in range(50)
    ]
    assert len(load_local(write(tmp_path, "qa.jsonl", jsonl(*examples)))) == 50


# ---------------------------------------------------- fingerprint, laziness


@pytest.mark.parametrize(
    ("name", "content"),
    [
        ("f.jsonl", jsonl(qa(1), "", qa(2))),
        ("f.json", json.dumps([qa(1), qa(2)])),
        ("f.csv", "question,answer\nq,a\n"),
    ],
)
def test_fingerprint_is_the_sha256_of_the_bytes(
    tmp_path: Path, name: str, content: str
) -> None:
    path = write(tmp_path, name, content)
    assert load_local(path).fingerprint == hashlib.sha256(path.read_bytes()).hexdigest()


def test_large_jsonl_keeps_no_example_dicts(tmp_path: Path) -> None:
    # 20,000 examples (loading is traced: 5x slower): kept as dicts they take about
    # 14 MiB, kept as ids and offsets about 2 (peak 3 while loading).
    n = 20_000
    path = tmp_path / "big.jsonl"
    line = {
        "context": "some context words " * 5,
        "question": "what?",
        "answer": ["x", "y"],
    }
    with path.open("w") as handle:
        for i in range(n):
            handle.write(json.dumps({"id": f"ex-{i}", **line}) + "\n")
    gc.collect()
    tracemalloc.start()
    try:
        ds = load_local(path)
        current, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(ds) == n
    assert peak < 7 * 2**20, f"peak {peak / 2**20:.1f} MiB while loading"
    assert current < 4 * 2**20, f"{current / 2**20:.1f} MiB kept after loading"
    assert ds[n - 1]["id"] == f"ex-{n - 1}"
    assert ds.location(n - 1) == (str(path), n)


def test_jsonl_reads_lines_lazily(tmp_path: Path) -> None:
    path = write(tmp_path, "qa.jsonl", jsonl(qa(1), qa(2)))
    ds = load_local(path)
    assert ds.ids == ["1", "2"]
    path.write_bytes(jsonl(qa(1), qa(2), qa(3)).encode())  # changed after loading
    with pytest.raises(
        DatasetError, match="the file changed after the dataset was loaded"
    ):
        ds[0]


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_jsonl_reads_after_fork(tmp_path: Path) -> None:
    path = write(tmp_path, "qa.jsonl", jsonl(*(qa(n) for n in range(1, 6))))
    ds = load_local(path)
    assert ds[0]["question"] == "q1?"  # the parent's descriptor is open before the fork
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child
        try:
            os.close(read_end)
            payload = json.dumps([ds[4], ds[0]]).encode()
            os.write(write_end, payload)
        finally:
            os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as pipe:
        child_saw = json.loads(pipe.read())
    os.waitpid(pid, 0)
    assert [ex["question"] for ex in child_saw] == ["q5?", "q1?"]
    assert ds[4]["question"] == "q5?"


# ------------------------------------------------------ registry and resolve


@pytest.fixture
def empty_registry(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(registry, "_entries", {})
    monkeypatch.setattr(registry, "_loaded_entry_points", set())
    monkeypatch.setattr(registry, "_entry_points", list)


def loader_for(path: Path, seen: list[str | None]) -> Callable[[str | None], Dataset]:
    def load(config: str | None) -> Dataset:
        seen.append(config)
        return load_local(path, tag=f"hotpotqa-{config}")

    return load


def test_resolve_local_paths(tmp_path: Path, empty_registry: None) -> None:
    (tmp_path / "data").mkdir()
    write(tmp_path / "data", "qa.jsonl", jsonl(qa(1)))
    assert resolve_dataset("data/qa.jsonl", base_dir=tmp_path).tag == "qa"
    assert (
        resolve_dataset(str(tmp_path / "data" / "qa.jsonl"), base_dir="/elsewhere").tag
        == "qa"
    )
    write(tmp_path, "plain", jsonl(qa(1)))  # an existing file, no extension
    message = str(
        pytest.raises(DatasetError, resolve_dataset, "plain", base_dir=tmp_path).value
    )
    assert "a local dataset must be a .jsonl, .json, .csv, .parquet or .yaml file" in message
    message = str(
        pytest.raises(
            DatasetError, resolve_dataset, "missing.jsonl", base_dir=tmp_path
        ).value
    )
    assert message.startswith(f"{tmp_path / 'missing.jsonl'}: the file does not exist")


def test_unknown_name_with_an_empty_registry(empty_registry: None) -> None:
    with pytest.raises(DatasetError) as info:
        resolve_dataset("hotpotq")
    assert str(info.value) == (
        "unknown dataset 'hotpotq': no file of that name exists and no dataset is "
        "registered under it. Give a path to a .jsonl, .json, .csv or .parquet file, "
        "or a registered name (none are registered yet)."
    )


def test_unknown_name_suggests_a_registered_one(
    tmp_path: Path, empty_registry: None
) -> None:
    register_dataset(
        "hotpotqa", loader_for(tmp_path, []), family="qa", description="multi-hop QA"
    )
    with pytest.raises(DatasetError) as info:
        resolve_dataset("hotpotq:distractor")
    assert str(info.value) == (
        "unknown dataset 'hotpotq' (in 'hotpotq:distractor'): no file of that name "
        "exists and no dataset is registered under it. Did you mean 'hotpotqa'? Give "
        "a path to a .jsonl, .json, .csv or .parquet file, or a registered name: hotpotqa."
    )


def test_registered_name_and_config_reach_the_loader(
    tmp_path: Path, empty_registry: None
) -> None:
    path = write(tmp_path, "hp.jsonl", jsonl(qa(1)))
    seen: list[str | None] = []
    register_dataset("hotpotqa", loader_for(path, seen), family="qa", description="QA")
    assert available() == ["hotpotqa"]
    assert resolve_dataset("hotpotqa:distractor").tag == "hotpotqa-distractor"
    assert resolve_dataset("hotpotqa").tag == "hotpotqa-None"
    assert seen == ["distractor", None]


def test_register_dataset_rejects_bad_input(
    tmp_path: Path, empty_registry: None
) -> None:
    load = loader_for(tmp_path, [])
    for name in ("", "a:b", "a/b", "a b", "x.jsonl"):
        with pytest.raises(ConfigError):
            register_dataset(name, load, family="qa", description="")
    with pytest.raises(ConfigError, match="not a known family"):
        register_dataset("ok", load, family="trivia", description="")
    register_dataset("ok", load, family="qa", description="")
    register_dataset("ok", load, family="qa", description="")  # same loader: no-op
    with pytest.raises(ConfigError, match="already registered"):
        register_dataset("ok", loader_for(tmp_path, []), family="qa", description="")


def test_loader_returning_a_non_dataset(empty_registry: None) -> None:
    register_dataset("odd", lambda config: [1, 2], family="qa", description="")  # type: ignore[arg-type,return-value]
    with pytest.raises(DatasetError, match="returned a list, not a Dataset"):
        resolve_dataset("odd")


class FakeEntryPoint:
    def __init__(self, name: str, target: Any) -> None:
        self.name = name
        self.value = f"fake.module:{name}"
        self.dist = None
        self._target = target
        self.loads = 0

    def load(self) -> Any:
        self.loads += 1
        if isinstance(self._target, Exception):
            raise self._target
        return self._target


def test_entry_points_register_lazily_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, empty_registry: None
) -> None:
    path = write(tmp_path, "ep.jsonl", jsonl(qa(1)))

    def register() -> None:
        register_dataset(
            "plugged", lambda config: load_local(path), family="qa", description=""
        )

    entry_point = FakeEntryPoint("plugged", register)
    monkeypatch.setattr(registry, "_entry_points", lambda: [entry_point])
    assert entry_point.loads == 0
    assert resolve_dataset("plugged").tag == "ep"
    assert available() == ["plugged"]
    assert entry_point.loads == 1


def test_broken_entry_point(
    monkeypatch: pytest.MonkeyPatch, empty_registry: None
) -> None:
    entry_point = FakeEntryPoint("broken", ImportError("no module named fake"))
    monkeypatch.setattr(registry, "_entry_points", lambda: [entry_point])
    with pytest.raises(DatasetError) as info:
        available()
    message = str(info.value)
    assert "the entry point 'broken = fake.module:broken'" in message
    assert "ImportError: no module named fake" in message
    assert "pytest_context_bench.datasets" in message


def test_datasets_do_not_import_pytest() -> None:
    import subprocess

    code = (
        "import sys, pytest_context_bench.datasets; "
        "assert 'pytest' not in sys.modules, sorted(sys.modules)"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


@pytest.mark.parametrize("suffix", [".jsonl", ".json", ".csv"])
def test_datasets_pickle(tmp_path: Path, suffix: str) -> None:
    import pickle

    content = {
        ".jsonl": jsonl(qa(1), qa(2)),
        ".json": json.dumps([qa(1), qa(2)]),
        ".csv": "question,answer\nq1?,a1\nq2?,a2\n",
    }[suffix]
    ds = load_local(write(tmp_path, "p" + suffix, content))
    ds[0]  # opens the descriptor of a .jsonl dataset
    copy = pickle.loads(pickle.dumps(ds))
    assert (copy.tag, copy.ids, copy.fingerprint) == (ds.tag, ds.ids, ds.fingerprint)
    assert copy[1] == ds[1]


# ----------------------------------------------------------------------- .parquet


def test_parquet_file_with_its_family(tmp_path: Path) -> None:
    pq = pytest.importorskip("pyarrow.parquet")
    import pyarrow as pa

    rows = [
        {"id": "m1", "question": "2+3?", "context": "2+3?", "answer": "5", "task": "math"},
        {"id": None, "question": "1+1?", "context": "1+1?", "answer": "2", "task": "math"},
    ]
    path = tmp_path / "math.parquet"
    pq.write_table(pa.Table.from_pylist(rows), path)
    ds = load_local(path)
    assert (ds.family, ds.primary_score) == ("math", "math_equiv")
    assert ds.ids == ["m1", "2"]  # a null id is absent: the row number stands in
    assert ds[1] == {"id": "2", "question": "1+1?", "context": "1+1?", "answer": "2",
                     "task": "math", "dataset": "math"}
    assert ds.location(1) == (str(path), 2)
    assert resolve_dataset(str(path)).ids == ds.ids


def test_parquet_bad_row_and_bad_file(tmp_path: Path) -> None:
    pq = pytest.importorskip("pyarrow.parquet")
    import pyarrow as pa

    path = tmp_path / "qa.parquet"
    pq.write_table(pa.Table.from_pylist([{"id": "a", "context": "c", "question": "q",
                                          "answer": None}]), path)
    message = load_error(path)
    assert message.startswith(f"{path}:1: row 1: field 'answer'"), message
    path.write_bytes(b"not parquet at all")
    assert "not a readable Parquet table" in load_error(path)
