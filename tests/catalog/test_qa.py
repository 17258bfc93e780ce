"""The ``qa`` catalog mappers on hand-written records in each published format."""

from __future__ import annotations

import copy
import csv
import json
import re
from pathlib import Path
from typing import Any

import pytest

from pytest_context_bench.datasets.catalog.sources import DEFAULT_FILES

from pytest_context_bench.datasets.catalog.base import Context, RecordError
from pytest_context_bench.datasets.catalog.qa import (
    SPECS,
    map_alpaca_eval,
    map_apigen,
    map_bfcl,
    map_drop,
    map_frames,
    map_hotpotqa,
    map_musique,
    map_narrativeqa,
    map_natural_questions,
    map_qasper,
    map_quality,
    map_swebench,
    map_triviaqa,
    map_truthfulqa,
    prepare_bfcl,
    regroup_drop,
    regroup_qasper,
)
from pytest_context_bench.datasets.catalog.sources import DATA_DIR_ENV, load_named
from pytest_context_bench.datasets.families import FAMILIES

from .samples_qa import AUX_SAMPLES, SAMPLES

SPEC = {s.name: s for s in SPECS}
NAMES = {
    "hotpotqa",
    "natural-questions",
    "musique",
    "narrativeqa",
    "triviaqa",
    "frames",
    "qasper",
    "drop",
    "truthfulqa",
    "quality",
    "alpaca-eval",
    "bfcl",
    "apigen",
    "swebench",
    "swebench-verified",
    "swebench-lite",
}


def ctx(name: str, index: int = 0, aux: Any = None) -> Context:
    return Context(name, SPEC[name].default_config, index, aux)


def bad(field: str) -> Any:
    """pytest.raises for a RecordError naming ``field``."""
    return pytest.raises(RecordError, match=re.escape(f"field {field!r}"))


def one(result: Any) -> dict[str, Any]:
    assert isinstance(result, dict)
    return result


def sample(name: str, i: int = 0) -> dict[str, Any]:
    """A deep copy of sample record ``i`` of ``name``."""
    return copy.deepcopy(SAMPLES[name][1][i])


# ------------------------------------------------------------------ the specs


def test_specs_are_the_sixteen_names_once() -> None:
    assert len(SPECS) == len(NAMES)
    assert set(SPEC) == NAMES


@pytest.mark.parametrize("name", sorted(NAMES))
def test_spec_is_complete(name: str) -> None:
    spec = SPEC[name]
    assert spec.family in FAMILIES
    assert spec.family == ("multiple_choice" if name == "quality" else "qa")
    assert spec.description and "\n" not in spec.description
    assert spec.notes
    if spec.configs:
        assert spec.default_config in spec.configs
    assert not set(spec.files) & set(DEFAULT_FILES)  # the loader adds the defaults


def test_revisions_only_for_script_based_repos() -> None:
    pinned = {s.name for s in SPECS if s.hub is not None and s.hub.revision}
    assert pinned == {"qasper", "alpaca-eval"}
    for name in pinned:
        hub = SPEC[name].hub
        assert hub is not None and hub.revision == "refs/convert/parquet"
    alpaca = SPEC["alpaca-eval"].hub
    assert alpaca is not None
    assert (alpaca.repo, alpaca.config, alpaca.split) == (
        "tatsu-lab/alpaca_eval",
        "alpaca_eval",
        "eval",
    )


def test_hub_sources() -> None:
    expected = {
        "hotpotqa": ("hotpotqa/hotpot_qa", "fullwiki", "validation"),
        "natural-questions": ("google-research-datasets/nq_open", None, "validation"),
        "musique": ("bdsaglam/musique", "answerable", "validation"),
        "narrativeqa": ("deepmind/narrativeqa", None, "test"),
        "triviaqa": ("mandarjoshi/trivia_qa", "rc", "validation"),
        "frames": ("google/frames-benchmark", None, "test"),
        "qasper": ("allenai/qasper", None, "validation"),
        "drop": ("ucinlp/drop", None, "validation"),
        "truthfulqa": ("truthfulqa/truthful_qa", "generation", "validation"),
        "quality": ("tasksource/QuALITY", None, "validation"),
        "apigen": ("Salesforce/xlam-function-calling-60k", None, "train"),
        "swebench": ("princeton-nlp/SWE-bench", None, "test"),
        "swebench-verified": ("princeton-nlp/SWE-bench_Verified", None, "test"),
        "swebench-lite": ("princeton-nlp/SWE-bench_Lite", None, "test"),
    }
    for name, (repo, config, split) in expected.items():
        spec = SPEC[name]
        assert spec.hub is not None
        hub = spec.hub.resolve(spec.default_config)
        assert (hub.repo, hub.config, hub.split) == (repo, config, split), name
    assert SPEC["bfcl"].hub is None
    assert SPEC["bfcl"].files[0] == "BFCL_v4_{config}.json"
    assert SPEC["bfcl"].configs == ("simple_python", "multiple", "parallel", "parallel_multiple")
    assert SPEC["bfcl"].package == ("bfcl_eval", "data")
    assert SPEC["swebench-lite"].map_record is SPEC["swebench"].map_record


# ------------------------------------------------------------------ the samples


# ------------------------------------------------------------------ hotpotqa


def test_hotpotqa_hub_row() -> None:
    example = one(map_hotpotqa(sample("hotpotqa"), ctx("hotpotqa")))
    assert example["id"] == "5a8b0000aaaa000000000001"
    assert example["context"] == (
        "Quill Bridge: The Quill Bridge is a stone bridge in Dunmore. "
        "It opened in 1821."
        "\n\nDunmore: Dunmore is a market town. The Marrow flows past it."
    )
    assert example["answer"] == "the Marrow"
    assert (example["type"], example["level"]) == ("bridge", "medium")


def test_hotpotqa_original_json_shape_maps_the_same() -> None:
    hub = sample("hotpotqa")
    original = {
        "_id": hub["id"],
        "question": hub["question"],
        "answer": hub["answer"],
        "type": hub["type"],
        "level": hub["level"],
        "supporting_facts": [["Quill Bridge", 0], ["Dunmore", 0]],
        "context": [
            [title, sentences]
            for title, sentences in zip(
                hub["context"]["title"], hub["context"]["sentences"], strict=True
            )
        ],
    }
    assert map_hotpotqa(original, ctx("hotpotqa")) == map_hotpotqa(hub, ctx("hotpotqa"))


def test_hotpotqa_bad_records() -> None:
    record = sample("hotpotqa")
    del record["answer"]  # the fullwiki test split has no answers
    with bad("answer"):
        map_hotpotqa(record, ctx("hotpotqa"))
    record = sample("hotpotqa")
    record["context"]["title"].pop()
    with bad("context"):
        map_hotpotqa(record, ctx("hotpotqa"))
    with bad("context[0]"):
        map_hotpotqa(
            {**sample("hotpotqa"), "context": [["only a title"]]}, ctx("hotpotqa")
        )
    with bad("context"):
        map_hotpotqa({**sample("hotpotqa"), "context": []}, ctx("hotpotqa"))


# ------------------------------------------------------------------ natural questions


def test_natural_questions_is_closed_book_with_every_gold() -> None:
    record = {
        "question": "how tall is the sallow tower",
        "answer": ["40 m", " 40 m", "forty metres"],
    }
    example = one(map_natural_questions(record, ctx("natural-questions", 7)))
    assert example["id"] == "7"
    assert example["context"] == example["question"] == record["question"]
    assert example["answer"] == ["40 m", "forty metres"]


def test_natural_questions_bad_records() -> None:
    with bad("answer"):
        map_natural_questions({"question": "q", "answer": []}, ctx("natural-questions"))
    with bad("answer"):
        map_natural_questions(
            {"question": "q", "answer": [""]}, ctx("natural-questions")
        )
    with bad("question"):
        map_natural_questions({"answer": ["a"]}, ctx("natural-questions"))
    one_string = map_natural_questions(
        {"question": "q", "answer": "a"}, ctx("natural-questions")
    )
    assert one(one_string)["answer"] == ["a"]


# ------------------------------------------------------------------ musique


def test_musique_keeps_every_paragraph_and_the_aliases() -> None:
    example = one(map_musique(sample("musique"), ctx("musique")))
    assert example["id"] == "2hop__100_200"
    assert example["context"].split("\n\n") == [
        "Pell Observatory: Pell Observatory stands on Mount Arlo.",
        "Mount Arlo: Mount Arlo is in the Kessary range.",
        "Kessary Bakery: The Kessary Bakery sells rye bread.",  # not supporting: kept
    ]
    assert example["answer"] == ["Kessary range", "the Kessary range", "Kessary"]
    assert example["answerable"] is True


def test_musique_bad_records() -> None:
    record = sample("musique")
    del record["paragraphs"][1]["paragraph_text"]
    with bad("paragraphs[1].paragraph_text"):
        map_musique(record, ctx("musique"))
    record = sample("musique")
    del record["answer"]
    with bad("answer"):
        map_musique(record, ctx("musique"))


# ------------------------------------------------------------------ narrativeqa


def test_narrativeqa_uses_the_summary_and_every_answer() -> None:
    example = one(map_narrativeqa(sample("narrativeqa"), ctx("narrativeqa", 3)))
    assert example["id"] == "3"
    assert example["context"].startswith("A lighthouse keeper named Abel")
    assert example["question"] == "What animal does Abel rescue?"
    assert example["answer"] == ["A fox", "a fox."]
    assert (example["document_id"], example["kind"]) == ("doc-001", "gutenberg")


def test_narrativeqa_bad_records() -> None:
    record = sample("narrativeqa")
    del record["document"]["summary"]
    with bad("document.summary.text"):
        map_narrativeqa(record, ctx("narrativeqa"))
    record = sample("narrativeqa")
    record["answers"] = [{"text": ""}, {"tokens": []}]
    with bad("answers"):
        map_narrativeqa(record, ctx("narrativeqa"))


# ------------------------------------------------------------------ triviaqa


def test_triviaqa_uses_wiki_and_search_evidence_and_the_aliases() -> None:
    example = one(map_triviaqa(sample("triviaqa"), ctx("triviaqa")))
    assert example["id"] == "tq_0001"
    assert example["context"] == (
        "Pellport hosts the Gull Lantern festival.\n\n"
        "The Gull Lantern festival takes place in Pellport each May."
    )
    assert example["answer"] == ["Pellport", "Pell Port"]
    assert example["closed_book"] is False


def test_triviaqa_without_evidence_is_closed_book() -> None:
    record = sample("triviaqa", 1)
    record["search_results"]["search_context"] = ["", "  "]
    example = one(map_triviaqa(record, ctx("triviaqa")))
    assert example["context"] == example["question"]
    assert example["closed_book"] is True
    assert example["answer"] == ["19", "nineteen"]


def test_triviaqa_original_json_item() -> None:
    record = {
        "Question": "Which bird is on the Pellport flag?",
        "QuestionId": "tq_0100",
        "QuestionSource": "http://example.invalid/",
        "Answer": {
            "Aliases": ["Gull", "Seagull"],
            "Value": "Gull",
            "Type": "WikipediaEntity",
        },
        "EntityPages": [
            {"DocSource": "TagMe", "Filename": "Gull.txt", "Title": "Gull"}
        ],
        "SearchResults": [],
    }
    example = one(map_triviaqa(record, ctx("triviaqa")))
    assert example["id"] == "tq_0100"
    assert example["answer"] == ["Gull", "Seagull"]
    assert example["closed_book"] is True


def test_triviaqa_bad_records() -> None:
    record = sample("triviaqa")
    record["answer"]["value"] = ""  # the test split has no answers
    with bad("answer.value"):
        map_triviaqa(record, ctx("triviaqa"))
    record = sample("triviaqa")
    record["search_results"]["search_context"] = "not a list"
    with bad("search_results.search_context"):
        map_triviaqa(record, ctx("triviaqa"))


# ------------------------------------------------------------------ frames


def test_frames() -> None:
    example = one(map_frames(sample("frames", 1), ctx("frames", 9)))
    assert example["id"] == "1"
    assert example["context"] == example["question"]
    assert example["answer"] == "4"
    assert example["reasoning_types"].startswith("Numerical")
    no_id = {"Prompt": "p?", "Answer": "a"}
    assert one(map_frames(no_id, ctx("frames", 9)))["id"] == "9"
    with bad("Answer"):
        map_frames({"Prompt": "p?"}, ctx("frames"))


# ------------------------------------------------------------------ qasper


def test_qasper_one_example_per_question_with_official_golds() -> None:
    examples = map_qasper(sample("qasper"), ctx("qasper"))
    assert [e["id"] for e in examples] == ["2101.00001_q0001", "2101.00001_q0002"]
    spans, boolean = examples
    assert spans["answer"] == ["300 hours of recordings"]
    assert spans["answer_type"] == "extractive"
    assert boolean["answer"] == ["No"]  # never an empty gold (upstream's free 1.0)
    assert boolean["answer_type"] == "boolean"
    assert spans["question"] == "How much audio do they train on?"
    unanswerable = map_qasper(sample("qasper", 1), ctx("qasper"))
    assert unanswerable[0]["answer"] == ["Unanswerable"]
    assert unanswerable[0]["answer_type"] == "none"


def test_qasper_section_names_stay_with_their_paragraphs() -> None:
    context = map_qasper(sample("qasper"), ctx("qasper"))[0]["context"]
    assert context.split("\n\n") == [
        "Counting Owls with Small Language Models",
        "We count owls in forest recordings with a small model.",
        "Introduction",
        "Owls are hard to count.",
        "We use audio.",
        "Method",
        "We train a model on 300 hours of recordings.",
    ]


def _annotation(**fields: Any) -> dict[str, Any]:
    answer = {
        "unanswerable": False,
        "extractive_spans": [],
        "yes_no": None,
        "free_form_answer": "",
        "evidence": [],
        "highlighted_evidence": [],
    }
    answer.update(fields)
    return answer


def test_qasper_golds_of_several_annotators() -> None:
    record = sample("qasper", 1)
    record["qas"]["answers"][0]["answer"] = [
        _annotation(extractive_spans=["English", " Welsh "]),
        _annotation(free_form_answer="English and Welsh"),
        _annotation(yes_no=True),
        _annotation(),  # an empty annotation gives no gold
        _annotation(extractive_spans=["English", "Welsh"]),
    ]
    (example,) = map_qasper(record, ctx("qasper"))
    assert example["answer"] == ["English, Welsh", "English and Welsh", "Yes"]
    assert "answer_type" not in example  # the annotators disagree on the type


def test_qasper_original_json_shape_maps_the_same() -> None:
    hub = sample("qasper")
    qas = hub["qas"]
    original = {
        "title": hub["title"],
        "abstract": hub["abstract"],
        "full_text": [
            {"section_name": name, "paragraphs": paragraphs}
            for name, paragraphs in zip(
                hub["full_text"]["section_name"],
                hub["full_text"]["paragraphs"],
                strict=True,
            )
        ],
        "qas": [
            {
                "question": question,
                "question_id": qid,
                "answers": [
                    {"answer": info, "annotation_id": "x", "worker_id": "y"}
                    for info in entry["answer"]
                ],
            }
            for question, qid, entry in zip(
                qas["question"], qas["question_id"], qas["answers"], strict=True
            )
        ],
    }
    records = regroup_qasper([{"2101.00001": original}])
    assert [r["id"] for r in records] == ["2101.00001"]
    assert map_qasper(records[0], ctx("qasper")) == map_qasper(hub, ctx("qasper"))
    assert regroup_qasper([hub]) == [hub]  # hub rows pass unchanged


def test_qasper_bad_records() -> None:
    record = sample("qasper", 1)
    record["qas"]["answers"][0]["answer"] = [_annotation()]
    with bad("qas[0].answers"):
        map_qasper(record, ctx("qasper"))
    record = sample("qasper")
    del record["qas"]
    with bad("qas"):
        map_qasper(record, ctx("qasper"))
    record = sample("qasper")
    record["qas"]["answers"].pop()
    with bad("qas"):
        map_qasper(record, ctx("qasper"))
    record = sample("qasper", 1)
    del record["qas"]["question_id"]  # ids fall back to the question's position
    assert map_qasper(record, ctx("qasper"))[0]["id"] == "2101.00002_0"


# ------------------------------------------------------------------ drop


def test_drop_hub_row_keeps_every_span_once() -> None:
    example = one(map_drop(sample("drop", 1), ctx("drop")))
    assert example["id"] == "q-drop-0002"
    assert example["answer"] == ["Mira Solt"]
    assert example["context"].startswith("The Herons scored")
    assert example["section_id"] == "sports_001"


def test_drop_original_file_is_flattened_and_read() -> None:
    blank_date = {"day": "", "month": "", "year": ""}
    original = {
        "history_9": {
            "passage": "The fort fell on 3 May 1702 after 12 days.",
            "wiki_url": "",
            "qa_pairs": [
                {
                    "question": "How many days did the siege last?",
                    "query_id": "h9-1",
                    "answer": {"number": "12", "date": blank_date, "spans": []},
                    "validated_answers": [
                        {"number": "12", "date": blank_date, "spans": []},
                        {"number": "", "date": blank_date, "spans": ["12 days"]},
                    ],
                },
                {
                    "question": "When did the fort fall?",
                    "query_id": "h9-2",
                    "answer": {
                        "number": "",
                        "date": {"day": "3", "month": "May", "year": "1702"},
                        "spans": [],
                    },
                },
            ],
        }
    }
    records = regroup_drop([original])
    assert [r["query_id"] for r in records] == ["h9-1", "h9-2"]
    first, second = (one(map_drop(r, ctx("drop", i))) for i, r in enumerate(records))
    assert first["answer"] == ["12", "12 days"]
    assert second["answer"] == ["3 May 1702"]
    assert first["context"] == "The fort fell on 3 May 1702 after 12 days."
    assert regroup_drop([sample("drop")]) == [sample("drop")]


def test_drop_bad_records() -> None:
    record = sample("drop")
    record["answers_spans"]["spans"] = []
    with bad("answers_spans.spans"):
        map_drop(record, ctx("drop"))
    record = sample("drop")
    del record["answers_spans"]
    with bad("answers_spans.spans"):
        map_drop(record, ctx("drop"))
    empty = {"number": "", "date": {}, "spans": []}
    with bad("answer"):
        map_drop({"passage": "p", "question": "q?", "answer": empty}, ctx("drop"))


# ------------------------------------------------------------------ truthfulqa


def test_truthfulqa_golds_and_incorrect_answers() -> None:
    example = one(map_truthfulqa(sample("truthfulqa"), ctx("truthfulqa", 5)))
    assert example["id"] == "5"
    assert example["context"] == example["question"]
    assert example["answer"] == ["Nothing in particular happens", "Nothing happens"]
    assert example["incorrect_answers"] == ["The moon turns red", "You summon a storm"]
    assert example["category"] == "Misconceptions"


def test_truthfulqa_original_csv_row() -> None:
    row = {
        "Type": "Adversarial",
        "Category": "Misconceptions",
        "Question": "What happens if you whistle at a full moon?",
        "Best Answer": "Nothing in particular happens",
        "Correct Answers": "Nothing in particular happens; Nothing happens",
        "Incorrect Answers": "The moon turns red; You summon a storm",
        "Source": "http://example.invalid/moon",
    }
    hub = one(map_truthfulqa(sample("truthfulqa"), ctx("truthfulqa")))
    assert map_truthfulqa(row, ctx("truthfulqa")) == hub


def test_truthfulqa_bad_record() -> None:
    record = sample("truthfulqa")
    del record["best_answer"]
    with bad("best_answer"):
        map_truthfulqa(record, ctx("truthfulqa"))


# ------------------------------------------------------------------ quality


def test_quality_shows_the_options_and_reads_the_1_based_label() -> None:
    example = one(map_quality(sample("quality"), ctx("quality")))
    assert example["id"] == "50001_A_1"
    assert example["task"] == "multiple_choice"
    assert example["choices"] == ["Once a year", "Twice a year", "Every month", "Never"]
    assert (example["correct_letter"], example["answer"]) == ("B", "Twice a year")
    assert example["question"] == "How often did the Tin Comet pass the colony?"
    context = example["context"]
    assert context.startswith("The Tin Comet drifted")  # the article first
    for line in ("A) Once a year", "B) Twice a year", "C) Every month", "D) Never"):
        assert line in context
    assert example["difficult"] is False
    last = one(map_quality(sample("quality", 1), ctx("quality")))
    assert (last["correct_letter"], last["difficult"]) == ("D", True)


@pytest.mark.parametrize("label", [0, 5, -1, "x", True])
def test_quality_label_out_of_range(label: Any) -> None:
    record = {**sample("quality"), "gold_label": label}
    with bad("gold_label"):
        map_quality(record, ctx("quality"))


def test_quality_original_article_with_its_questions() -> None:
    hub = sample("quality")
    article = {
        k: v
        for k, v in hub.items()
        if k in {"article_id", "set_unique_id", "title", "article"}
    }
    questions = [
        {
            "question": "How often did the Tin Comet pass the colony?",
            "question_unique_id": "50001_A_1",
            "options": hub["options"],
            "gold_label": "2",  # tolerated as text
            "writer_label": 2,
            "difficult": 0,
        },
        {"question": "Who saw it?", "options": ["a", "b", "c", "d"], "gold_label": 3},
    ]
    result = map_quality({**article, "questions": questions}, ctx("quality", 4))
    assert isinstance(result, list)
    first, second = result
    assert first == one(map_quality(hub, ctx("quality")))
    assert second["id"] == "50001_1"  # no question_unique_id: article id and position
    assert second["correct_letter"] == "C"
    del questions[1]["gold_label"]  # the test split has no labels
    with bad("questions[1].gold_label"):
        map_quality({**article, "questions": questions}, ctx("quality"))


def test_quality_id_fallback_and_missing_article() -> None:
    record = sample("quality")
    del record["question_unique_id"]
    assert one(map_quality(record, ctx("quality", 6)))["id"] == "50001_6"
    del record["article"]
    with bad("article"):
        map_quality(record, ctx("quality"))


# ------------------------------------------------------------------ alpaca-eval


def test_alpaca_eval() -> None:
    example = one(map_alpaca_eval(sample("alpaca-eval"), ctx("alpaca-eval", 2)))
    assert example["id"] == "2"
    assert (
        example["context"]
        == example["question"]
        == "Write a two-line poem about a kettle."
    )
    assert example["answer"].startswith("The kettle hums")
    assert example["generator"] == "text_davinci_003"
    assert example["source_dataset"] == "helpful_base"
    assert "dataset" not in example  # the loader sets the tag
    with bad("output"):
        map_alpaca_eval({"instruction": "x"}, ctx("alpaca-eval"))


# ------------------------------------------------------------------ bfcl


def test_bfcl_puts_the_question_in_the_prompt() -> None:
    example = one(map_bfcl(sample("bfcl"), ctx("bfcl")))
    assert example["id"] == "simple_0"
    assert example["question"] == "Find bakeries in Dunmore."
    context = example["context"]
    assert context.startswith("Functions:\n[\n  {\n")
    assert '"name": "find_bakery"' in context
    assert context.endswith("\n\nUser: Find bakeries in Dunmore.")
    assert "answer" not in example  # judged by ToolCallMatch, not token F1
    assert example["expected_tool_calls"] == [
        {"name": "find_bakery", "arguments": {"town": "Dunmore", "open_now": {"any_of": ["", False]}}}
    ]
    assert example["tools"][0]["name"] == "find_bakery"


def test_bfcl_answer_from_the_possible_answer_table() -> None:
    record = sample("bfcl", 1)
    del record["ground_truth"]
    aux = prepare_bfcl(
        {"possible_answer": AUX_SAMPLES["bfcl"]["possible_answer"] + [record]}
    )
    assert set(aux) == {"simple_0", "simple_1"}
    example = one(map_bfcl(record, ctx("bfcl", aux=aux)))
    assert example["expected_tool_calls"] == [
        {"name": "find_bakery", "arguments": {"town": "Sallow", "open_now": True}}
    ]
    with bad("ground_truth"):
        map_bfcl(record, ctx("bfcl", aux={}))
    with bad("ground_truth"):
        map_bfcl(record, ctx("bfcl"))


def test_bfcl_other_question_shapes() -> None:
    v1 = {
        "question": "Find bakeries in Oldcastle.",
        "function": SAMPLES["bfcl"][1][0]["function"][0],
        "ground_truth": ["find_bakery(town='Oldcastle')"],
    }
    example = one(map_bfcl(v1, ctx("bfcl", 4)))
    assert (example["id"], example["question"]) == ("4", "Find bakeries in Oldcastle.")
    assert example["expected_tool_calls"] == [
        {"name": "find_bakery", "arguments": {"town": "Oldcastle"}}
    ]
    turns = {
        **sample("bfcl"),
        "question": [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Bakeries?"},
            {"role": "user", "content": "In Dunmore, please."},
        ],
    }
    example = one(map_bfcl(turns, ctx("bfcl")))
    assert example["question"] == "In Dunmore, please."
    assert example["context"].endswith(
        "System: Be brief.\nUser: Bakeries?\nUser: In Dunmore, please."
    )


def test_bfcl_bad_records() -> None:
    with bad("function"):
        map_bfcl({**sample("bfcl"), "function": []}, ctx("bfcl"))
    with bad("question"):
        map_bfcl(
            {**sample("bfcl"), "question": [[{"role": "system", "content": "hi"}]]},
            ctx("bfcl"),
        )
    with bad("question[0][0]"):
        map_bfcl({**sample("bfcl"), "question": [[{"role": "user"}]]}, ctx("bfcl"))
    with bad("ground_truth"):
        map_bfcl({**sample("bfcl"), "ground_truth": []}, ctx("bfcl"))
    with bad("ground_truth[0]"):
        map_bfcl({**sample("bfcl"), "ground_truth": [{"a": {}, "b": {}}]}, ctx("bfcl"))
    with bad("ground_truth[0].find_bakery.town"):
        map_bfcl({**sample("bfcl"), "ground_truth": [{"find_bakery": {"town": "Dunmore"}}]},
                 ctx("bfcl"))
    with bad("ground_truth[0]"):
        map_bfcl({**sample("bfcl"), "ground_truth": ["find_bakery('Dunmore')"]}, ctx("bfcl"))


def test_bfcl_possible_answers_become_expected_calls() -> None:
    """BFCL's possible answer in ``expected_tool_calls``' spelling: one accepted
    value as itself, several or the optional marker as any_of; an object's keys
    (also inside a list) hold their accepted values."""
    from pytest_context_bench.datasets.catalog.qa import bfcl_expected_calls

    truth = [{"m.f": {
        "x": [1], "unit": ["", "c"], "pair": [[3, 5]],
        "opts": [{"k": ["a", "b"], "n": [2]}],
        "rows": [[{"k": ["a"]}, {"k": ["b", ""]}]],
        "odd": [{"any_of": [1]}],
    }}]
    assert bfcl_expected_calls(truth) == [{"name": "m.f", "arguments": {
        "x": 1, "unit": {"any_of": ["", "c"]}, "pair": [3, 5],
        "opts": {"k": {"any_of": ["a", "b"]}, "n": 2},
        "rows": [{"k": "a"}, {"k": {"any_of": ["b", ""]}}],
        "odd": {"any_of": [{"any_of": 1}]},
    }}]


# ------------------------------------------------------------------ apigen


def test_apigen() -> None:
    example = one(map_apigen(sample("apigen", 1), ctx("apigen", 8)))
    assert example["id"] == "1"
    assert example["question"] == "Tides for Dunmore harbour tomorrow, 2024-06-02."
    assert example["context"].startswith("Tools:\n[\n")
    assert '"name": "tide_times"' in example["context"]
    assert example["context"].endswith(
        "\n\nUser: Tides for Dunmore harbour tomorrow, 2024-06-02."
    )
    assert example["expected_tool_calls"] == [
        {"name": "tide_times", "arguments": {"harbour": "Dunmore", "date": "2024-06-02"}}
    ]
    assert "answer" not in example
    assert example["tools"][0]["name"] == "tide_times"
    with bad("tools"):
        map_apigen({**sample("apigen"), "tools": "[not json"}, ctx("apigen"))
    with bad("answers"):
        map_apigen({**sample("apigen"), "answers": "{not json"}, ctx("apigen"))
    with bad("answers[0]"):
        map_apigen({**sample("apigen"), "answers": "[1]"}, ctx("apigen"))
    with bad("answers"):
        map_apigen(
            {k: v for k, v in sample("apigen").items() if k != "answers"}, ctx("apigen")
        )


# ------------------------------------------------------------------ swe-bench


@pytest.mark.parametrize("name", ["swebench", "swebench-verified", "swebench-lite"])
def test_swebench(name: str) -> None:
    record = sample(name)
    example = one(SPEC[name].map_record(record, ctx(name)))
    assert example["id"] == record["instance_id"]
    assert example["context"] == (
        "Repository: example/kettle\n\nIssue:\n"
        "The kettle stops at 90 degrees instead of boiling."
    )
    assert example["question"].startswith("Write a patch")
    assert example["answer"] == record["patch"]
    assert (example["repo"], example["base_commit"]) == ("example/kettle", "0" * 40)
    if name == "swebench-verified":
        assert example["difficulty"] == "<15 min fix"
    del record["patch"]
    with bad("patch"):
        map_swebench(record, ctx(name))


# ------------------------------------------------------------------ the data directory


def _write_jsonl(path: Path, records: list[dict[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")


@pytest.fixture
def data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv(DATA_DIR_ENV, str(tmp_path))
    return tmp_path


def test_published_file_names_and_shapes_load(data_dir: Path) -> None:
    # BFCL as its repository lays it out: the answers in possible_answer/.
    questions = [
        {k: v for k, v in r.items() if k != "ground_truth"} for r in SAMPLES["bfcl"][1]
    ]
    _write_jsonl(data_dir / "bfcl" / "BFCL_v3_simple.json", questions)
    _write_jsonl(
        data_dir / "bfcl" / "possible_answer" / "BFCL_v3_simple.json",
        AUX_SAMPLES["bfcl"]["possible_answer"],
    )
    assert [e["id"] for e in load_named(SPEC["bfcl"])] == ["simple_0", "simple_1"]

    # QASPER's and DROP's original files: one JSON object keyed by paper / passage.
    papers = {
        r["id"]: {k: v for k, v in r.items() if k != "id"} for r in SAMPLES["qasper"][1]
    }
    (data_dir / "qasper").mkdir()
    (data_dir / "qasper" / "qasper-dev-v0.3.json").write_text(json.dumps(papers))
    assert len(load_named(SPEC["qasper"])) == 3
    drop = {
        "p1": {
            "passage": "Ada ran 3 miles.",
            "qa_pairs": [
                {
                    "question": "How far?",
                    "query_id": "d1",
                    "answer": {"number": "3", "date": {}, "spans": []},
                },
                {
                    "question": "Who ran?",
                    "query_id": "d2",
                    "answer": {"number": "", "date": {}, "spans": ["Ada"]},
                },
            ],
        }
    }
    (data_dir / "drop").mkdir()
    (data_dir / "drop" / "drop_dataset_dev.json").write_text(json.dumps(drop))
    assert [e["answer"] for e in load_named(SPEC["drop"])] == [["3"], ["Ada"]]

    # QuALITY's htmlstripped JSON lines (no extension), TruthfulQA's CSV and
    # HotpotQA's JSON.
    articles = [
        {
            "article_id": f"a{n}",
            "article": "Text.",
            "questions": [
                {
                    "question": "Q?",
                    "question_unique_id": f"a{n}_q1",
                    "options": ["w", "x", "y", "z"],
                    "gold_label": n,
                }
            ],
        }
        for n in (1, 2)
    ]
    _write_jsonl(data_dir / "quality" / "QuALITY.v1.0.1.htmlstripped.dev", articles)
    assert [e["correct_letter"] for e in load_named(SPEC["quality"])] == ["A", "B"]
    (data_dir / "truthfulqa").mkdir()
    with open(
        data_dir / "truthfulqa" / "TruthfulQA.csv", "w", newline="", encoding="utf-8"
    ) as f:
        writer = csv.writer(f)
        writer.writerow(
            [
                "Type",
                "Category",
                "Question",
                "Best Answer",
                "Correct Answers",
                "Incorrect Answers",
                "Source",
            ]
        )
        writer.writerow(["Adversarial", "Myths", "Q?", "No", "No; Never", "Yes", ""])
    assert [e["answer"] for e in load_named(SPEC["truthfulqa"])] == [["No", "Never"]]
    hotpot = [
        {
            "_id": "h1",
            "question": "Q?",
            "answer": "A",
            "type": "bridge",
            "level": "hard",
            "context": [["T", ["S one.", " S two."]]],
        }
    ]
    (data_dir / "hotpotqa").mkdir()
    (data_dir / "hotpotqa" / "hotpot_dev_fullwiki_v1.json").write_text(
        json.dumps(hotpot)
    )
    assert [e["context"] for e in load_named(SPEC["hotpotqa"])] == ["T: S one. S two."]
