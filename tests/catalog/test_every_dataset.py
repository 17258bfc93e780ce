"""Every named dataset of the catalog, end to end: its sample records written into a
data directory in the published shape, loaded by name, checked against its family's
schema, deterministic, and judged by the auto-wired evaluators: a System that gives
the gold answer earns the primary score 1.0 on every example the family can judge
without an LLM."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from pytest_context_bench import evaluate
from pytest_context_bench.datasets import FAMILIES, available, resolve_dataset
from pytest_context_bench.datasets.catalog import all_specs, spec
from pytest_context_bench.datasets.catalog.base import Context
from pytest_context_bench.datasets.families import example_error

from . import samples_knowledge, samples_longform, samples_qa

SAMPLES: dict[str, tuple[str | None, list[dict[str, Any]]]] = {
    **samples_qa.SAMPLES, **samples_knowledge.SAMPLES, **samples_longform.SAMPLES,
}
AUX: dict[str, dict[str, list[dict[str, Any]]]] = {
    **samples_qa.AUX_SAMPLES, **samples_knowledge.AUX_SAMPLES, **samples_longform.AUX_SAMPLES,
}
#: The 42 names of context-bench's registry (UPSTREAM.md §4).
UPSTREAM_NAMES = {
    "hotpotqa", "gsm8k", "bfcl", "apigen", "swebench", "swebench-verified", "swebench-lite",
    "natural-questions", "musique", "narrativeqa", "triviaqa", "frames", "quality",
    "qasper", "humaneval", "mbpp", "multi-news", "dialogsum", "qmsum", "summscreenfd",
    "contract-nli", "scifact", "mmlu", "arc-challenge", "truthfulqa", "gpqa", "hellaswag",
    "winogrande", "mmlu-pro", "drop", "math", "mgsm", "ifeval", "alpaca-eval", "mt-bench",
    "longbench", "longbench-v2", "infinitebench", "nolima", "bbh", "meetingbank", "govreport",
}


def _concrete(value: Any) -> Any:
    """The first accepted value of an expected argument (``{"any_of": [...]}``)."""
    if isinstance(value, dict) and set(value) == {"any_of"}:
        value = next(v for v in value["any_of"] if v != "")
    if isinstance(value, dict):
        return {k: _concrete(v) for k, v in value.items()
                if not (isinstance(v, dict) and v.get("any_of") == [""])}
    if isinstance(value, list):
        return [_concrete(v) for v in value]
    return value


def _calls(expected: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The expected calls as a model makes them (OpenAI's shape)."""
    return [
        {"id": f"call_{i}", "type": "function", "function": {
            "name": call["name"],
            "arguments": json.dumps({k: _concrete(v) for k, v in call["arguments"].items()}),
        }}
        for i, call in enumerate(expected)
    ]


class Oracle:
    """Answers with the gold: the letter for multiple choice, the expected tool
    calls, else the (first) answer."""

    name = "oracle"

    def process(self, example: dict[str, Any]) -> dict[str, Any]:
        if "expected_tool_calls" in example:
            return {**example, "response": "", "tool_calls": _calls(example["expected_tool_calls"])}
        if example.get("task") == "multiple_choice":
            response = f"The answer is {example['correct_letter']}."
        else:
            answer = example.get("answer", "")
            response = str(answer[0] if isinstance(answer, list) else answer)
        return {**example, "response": response}


def test_every_upstream_name_is_registered() -> None:
    names = set(available())
    assert UPSTREAM_NAMES <= names, sorted(UPSTREAM_NAMES - names)
    catalog = {s.name for s in all_specs()}
    assert catalog == UPSTREAM_NAMES - {"humaneval", "mbpp"}
    assert set(SAMPLES) == catalog  # every catalog dataset has samples


def _write(root: Path, name: str, config: str | None) -> None:
    named = spec(name)
    folder = root / name
    if config and config != named.default_config:
        folder = folder / config  # a config that is a table of its own has its folder
    folder.mkdir(parents=True)
    records = SAMPLES[name][1]
    fill = config or named.default_config or ""
    if named.hub is not None:
        target = folder / f"{named.hub.resolve(config).split}.jsonl"
    else:
        target = folder / named.files[0].replace("{config}", fill)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text("".join(json.dumps(r) + "\n" for r in records))
    for aux_name, records in AUX.get(name, {}).items():
        aux_file = folder / named.aux[aux_name][1][0].replace("{config}", fill)
        aux_file.parent.mkdir(parents=True, exist_ok=True)
        aux_file.write_text("".join(json.dumps(r) + "\n" for r in records))


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_loads_and_is_judged(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = SAMPLES[name][0]
    _write(tmp_path, name, config)
    monkeypatch.setenv("CTXBENCH_DATA_DIR", str(tmp_path))
    ref = f"{name}:{config}" if config else name
    ds = resolve_dataset(ref)
    again = resolve_dataset(ref)
    assert len(ds) >= 1 and ds.family in FAMILIES
    assert ds.ids == again.ids and ds.fingerprint == again.fingerprint
    assert len(set(ds.ids)) == len(ds.ids)
    examples = [ds[i] for i in range(len(ds))]
    assert examples == [again[i] for i in range(len(again))]
    for example in examples:
        assert example["dataset"] == ds.tag and isinstance(example["id"], str)
        assert example.get("task", ds.family) in FAMILIES
    if ds.family in ("ifeval", "conversation", "code"):
        return  # judged by instructions, an LLM judge or the sandbox: tested elsewhere
    result = evaluate(Oracle(), ds, progress=False, tokenizer=lambda text: len(text.split()))
    for row in result.rows:
        # the dataset's primary score, or the example's own (expected tool calls)
        primary = row.metadata["score_field"]
        assert primary == ds.primary_score or primary == "tool_call_match", primary
        assert row.error is None, (row.example_id, row.error)
        assert row.scores.get(primary) == 1.0, (row.example_id, primary, row.scores)


def test_the_catalog_doc_is_current() -> None:
    from pytest_context_bench.datasets.catalog import catalog_markdown

    doc = Path(__file__).parents[2] / "docs" / "catalog.md"
    assert doc.read_text(encoding="utf-8") == catalog_markdown(), (
        "docs/catalog.md is stale: python -m pytest_context_bench.datasets.catalog "
        "> docs/catalog.md"
    )


def test_mt_bench_turns_reach_process_conversation(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pytest_context_bench import run_example

    _write(tmp_path, "mt-bench", None)
    monkeypatch.setenv("CTXBENCH_DATA_DIR", str(tmp_path))
    ds = resolve_dataset("mt-bench")
    example = ds[0]
    assert example["multi_turn"] is True and len(example["turns"]) >= 2
    seen: list[list[dict[str, str]]] = []

    class Chat:
        name = "chat"

        def process_conversation(self, turns: list[dict[str, str]]) -> list[str]:
            seen.append(turns)
            return [f"reply {i}" for i, _ in enumerate(turns)]

        def process(self, example: dict[str, Any]) -> dict[str, Any]:
            raise AssertionError("a multi-turn example goes through process_conversation")

    row, raised = run_example(Chat(), example, [], tokenizer=lambda t: len(t.split()))
    assert raised is None and row.error is None
    assert seen == [[{"role": "user", "content": t["content"]} for t in example["turns"]]]


def _map_all(name: str, config: str | None, records: list[dict[str, Any]]) -> list[Any]:
    """What the loader does with a table, minus the I/O: regroup, prepare, map."""
    named = spec(name)
    if named.regroup is not None:
        records = named.regroup(records)
    aux = named.prepare(AUX[name]) if named.prepare is not None else None
    examples: list[dict[str, Any]] = []
    for i, record in enumerate(records):
        result = named.map_record(record, Context(name, config, i, aux))
        assert result is not None
        examples.extend([result] if isinstance(result, dict) else result)
    return examples


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_samples_map_purely_to_valid_examples(name: str) -> None:
    named = spec(name)
    config, records = SAMPLES[name]
    assert 2 <= len(records) <= 3
    config = config or named.default_config
    before = copy.deepcopy(records)
    examples = _map_all(name, config, records)
    assert records == before  # a mapper does not mutate its record
    assert _map_all(name, config, copy.deepcopy(records)) == examples  # deterministic
    family = named.config_family.get(config or "", named.family)
    ids = [e["id"] for e in examples]
    assert examples and len(set(ids)) == len(ids)
    for example in examples:
        assert isinstance(example["id"], str) and example["id"]
        assert example["task"] == family
        assert "dataset" not in example  # the loader sets the tag
        assert example_error(example["task"], example) is None
        json.dumps(example, allow_nan=False)  # plain JSON values only
        if family == "multiple_choice":
            letters = "ABCDEFGHIJ"
            choices = example["choices"]
            assert example["answer"] == choices[letters.index(example["correct_letter"])]
            for letter, choice in zip(letters, choices):
                assert (f"{letter}) {choice}" in example["context"]
                        or f"({letter}) {choice}" in example["context"])
        elif "answer" in example:
            answer = example["answer"]
            golds = answer if isinstance(answer, list) else [answer]
            assert golds and all(str(g).strip() for g in golds)  # never an empty gold
