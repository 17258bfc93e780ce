"""Question-answering datasets of the catalog (UPSTREAM.md §4), plus QuALITY (multiple
choice), the function-calling sets and SWE-bench, which are scored as text answers.

Each dataset has one pure mapping function (see :mod:`.base`) and one
:class:`~.base.NamedSpec` in :data:`SPECS`. Records arrive in the hub's row shape (a
row of the hub's parquet or JSON lines, as ``datasets.load_dataset(...)[i]`` yields
it). Where the authors publish another shape, that one is accepted too, and their file
name is looked for in the data directory after the default ``<split>.jsonl`` and
friends. The formats accepted:

``hotpotqa``
    hub rows (``id``, ``context: {title: [...], sentences: [[...]]}``); the original
    JSON (``_id``, ``context: [[title, [sentence, ...]], ...]``), file
    ``hotpot_dev_<config>_v1.json``.
``natural-questions``
    NQ-open rows (``question``, ``answer: [...]``), from the hub or the original
    ``NQ-open.dev.jsonl``.
``musique``
    MuSiQue rows (``id``, ``paragraphs: [{title, paragraph_text}]``, ``answer``,
    ``answer_aliases``), from the hub or the original ``musique_ans_v1.0_dev.jsonl``.
``narrativeqa``
    hub rows (``document.summary.text``, ``question.text``, ``answers: [{text}]``).
``triviaqa``
    hub rows (``question_id``, ``answer: {value, aliases}``,
    ``entity_pages.wiki_context``, ``search_results.search_context``); the items of
    the original JSON's ``Data`` (``QuestionId``, ``Answer: {Value, Aliases}``; their
    evidence is in other files, so they are closed book).
``frames``
    hub rows (``Unnamed: 0``, ``Prompt``, ``Answer``).
``qasper``
    hub rows (one paper, ``qas`` and ``full_text`` as dicts of lists); the original
    JSON (``{paper_id: paper}``, ``qas`` and ``full_text`` as lists of dicts), file
    ``qasper-dev-v0.3.json``.
``drop``
    hub rows (``query_id``, ``passage``, ``answers_spans.spans``); the original JSON
    (``{passage_id: {passage, qa_pairs}}``), file ``drop_dataset_dev.json``.
``truthfulqa``
    hub rows (``generation`` config); the original ``TruthfulQA.csv`` (``Best
    Answer``, and ``Correct Answers`` joined by ``;``).
``quality``
    hub rows (one question each); the original htmlstripped JSON lines (one article
    with its ``questions``), file ``QuALITY.v1.0.1.htmlstripped.dev``.
``alpaca-eval``
    hub rows and the original ``alpaca_eval.json``.
``bfcl``
    BFCL v4 JSON lines ``BFCL_v4_<category>.json`` as the bfcl-eval package ships
    them (``question`` as turns of messages, ``function``), with the answers in
    ``possible_answer/BFCL_v4_<category>.json`` or inline (``ground_truth``); from the
    data directory, else the installed ``bfcl_eval`` package's ``data/``. BFCL v3's
    ``BFCL_v3_simple.json`` (and ``BFCL_v3_<category>.json``) are read too.
``apigen``
    hub rows and the original ``xlam_function_calling_60k.json``.

The function-calling sets carry ``tools`` and ``expected_tool_calls`` and are judged
by ToolCallMatch (pytest_context_bench.evaluators.tool_calls), not by token F1.
``swebench``, ``swebench-verified``, ``swebench-lite``
    hub rows (``instance_id``, ``repo``, ``problem_statement``, ``patch``).

Where a dataset has several gold answers, ``answer`` is their list (deduplicated, in
order, never holding an empty string): AnswerQuality scores the best of them.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any, Final

from .base import (
    PARQUET_CONVERSION,
    Context,
    HubSource,
    NamedSpec,
    RecordError,
    letter,
    mc_context,
    need,
    need_list,
    need_str,
    optional,
)

__all__ = [
    "SPECS",
    "map_alpaca_eval",
    "BFCL_CONFIGS",
    "apigen_expected_calls",
    "bfcl_expected_calls",
    "map_apigen",
    "map_bfcl",
    "map_drop",
    "map_frames",
    "map_hotpotqa",
    "map_musique",
    "map_narrativeqa",
    "map_natural_questions",
    "map_qasper",
    "map_quality",
    "map_swebench",
    "map_triviaqa",
    "map_truthfulqa",
    "prepare_bfcl",
    "regroup_drop",
    "regroup_qasper",
]

Record = dict[str, Any]
Example = dict[str, Any]

#: BFCL v4's AST categories read (Python and the categories without execution).
BFCL_CONFIGS: Final = ("simple_python", "multiple", "parallel", "parallel_multiple")

_SWEBENCH_QUESTION: Final = (
    "Write a patch, as a unified diff, that resolves this issue."
)


# ------------------------------------------------------------------ helpers


def _id_field(record: Mapping[str, Any], *keys: str) -> str | None:
    """The first of ``keys`` the record has as a non-blank string or number."""
    for key in keys:
        value = record.get(key)
        if value is None or isinstance(value, bool):
            continue
        if isinstance(value, str | int | float) and str(value).strip():
            return str(value).strip()
    return None


def _example_id(record: Mapping[str, Any], ctx: Context, *keys: str) -> str:
    """The first of ``keys`` the record has (as a string), else the record's index."""
    found = _id_field(record, *keys)
    return str(ctx.index) if found is None else found


def _inside(prefix: str, error: RecordError) -> RecordError:
    """``error`` about a field of a nested item, named from the record's top."""
    return RecordError(f"{prefix}.{error.field}", error.message)


def _first_key(record: Mapping[str, Any], *keys: str) -> str:
    """The first of ``keys`` (dotted) present and not ``None``, else the first key, so
    that the ``need*`` helper called with it names the expected field."""
    for key in keys:
        if optional(record, key, None) is not None:
            return key
    return keys[0]


def _text(record: Mapping[str, Any], *keys: str) -> str:
    """The non-blank string at the first of ``keys`` present (hub or original name)."""
    return need_str(record, _first_key(record, *keys))


def _golds(values: Iterable[Any], field: str) -> list[str]:
    """Gold answers: stripped, blanks dropped, duplicates dropped, order kept.

    :raises RecordError: on an item that is not text or a number, or when no gold
        is left (an empty gold would score a free 1.0).
    """
    golds: list[str] = []
    for position, value in enumerate(values):
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, str | int | float):
            raise RecordError(
                f"{field}[{position}]", f"must be a string, got {type(value).__name__}"
            )
        text = str(value).strip()
        if text and text not in golds:
            golds.append(text)
    if not golds:
        raise RecordError(field, "has no non-empty answer")
    return golds


def _answer_values(record: Mapping[str, Any], field: str) -> list[Any]:
    """The answers at ``field``: a list, or one string taken as a list of one."""
    value = need(record, field)
    if isinstance(value, str | int | float) and not isinstance(value, bool):
        return [value]
    if not isinstance(value, list | tuple):
        raise RecordError(
            field, f"must be a list of strings, got {type(value).__name__}"
        )
    return list(value)


def _str_list(record: Mapping[str, Any], field: str) -> list[str]:
    """The strings at ``field``; ``[]`` when it is absent or ``None``."""
    value: Any = optional(record, field, [])
    if not isinstance(value, list | tuple):
        raise RecordError(
            field, f"must be a list of strings, got {type(value).__name__}"
        )
    for position, item in enumerate(value):
        if not isinstance(item, str):
            raise RecordError(
                f"{field}[{position}]", f"must be a string, got {type(item).__name__}"
            )
    return list(value)


def _join(parts: Iterable[str]) -> str:
    """Non-blank parts, stripped, separated by a blank line."""
    return "\n\n".join(p.strip() for p in parts if p and p.strip())


def _keep(
    example: Example, record: Mapping[str, Any], *fields: tuple[str, str]
) -> Example:
    """Copy ``(source field, example field)`` pairs the record has (not ``None``)."""
    for source, target in fields:
        value = optional(record, source, None)
        if value is not None:
            example[target] = value
    return example


# ------------------------------------------------------------------ hotpotqa


def _hotpot_paragraphs(record: Mapping[str, Any]) -> list[tuple[str, list[str]]]:
    """(title, sentences) of every context paragraph, from either published shape."""
    raw = need(record, "context")
    pairs: list[tuple[Any, Any]]
    if isinstance(
        raw, Mapping
    ):  # the hub's columns: {title: [...], sentences: [[...]]}
        titles = need_list(record, "context.title", min_len=0)
        sentences = need_list(record, "context.sentences", min_len=0)
        if len(titles) != len(sentences):
            raise RecordError(
                "context",
                f"has {len(titles)} titles but {len(sentences)} sentence lists",
            )
        pairs = list(zip(titles, sentences, strict=True))
    elif isinstance(raw, list | tuple):  # the original: [[title, [sentence, ...]], ...]
        pairs = []
        for position, item in enumerate(raw):
            if not isinstance(item, list | tuple) or len(item) != 2:
                raise RecordError(
                    f"context[{position}]", "must be a [title, [sentence, ...]] pair"
                )
            pairs.append((item[0], item[1]))
    else:
        raise RecordError(
            "context", f"must be a list or a mapping, got {type(raw).__name__}"
        )
    if not pairs:
        raise RecordError("context", "has no paragraphs")
    paragraphs: list[tuple[str, list[str]]] = []
    for position, (title, sents) in enumerate(pairs):
        if not isinstance(title, str):
            raise RecordError(f"context[{position}].title", "must be a string")
        if not isinstance(sents, list | tuple) or not all(
            isinstance(s, str) for s in sents
        ):
            raise RecordError(
                f"context[{position}].sentences", "must be a list of strings"
            )
        paragraphs.append((title, list(sents)))
    return paragraphs


def map_hotpotqa(record: dict[str, Any], ctx: Context) -> Example:
    """HotpotQA: every paragraph as ``"<title>: <its sentences>"``, then the question.

    The sentences are concatenated as published (each after the first carries its own
    leading space).
    """
    context = "\n\n".join(
        f"{title}: {''.join(sentences).strip()}"
        for title, sentences in _hotpot_paragraphs(record)
    )
    example: Example = {
        "id": _example_id(record, ctx, "_id", "id"),
        "task": "qa",
        "context": context,
        "question": need_str(record, "question"),
        "answer": need_str(record, "answer").strip(),
    }
    return _keep(example, record, ("type", "type"), ("level", "level"))


# ------------------------------------------------------------------ natural questions


def map_natural_questions(record: dict[str, Any], ctx: Context) -> Example:
    """NQ-open: closed book (the question is the whole prompt); every gold answer."""
    question = need_str(record, "question")
    return {
        "id": _example_id(record, ctx, "id"),
        "task": "qa",
        "context": question,
        "question": question,
        "answer": _golds(_answer_values(record, "answer"), "answer"),
    }


# ------------------------------------------------------------------ musique


def map_musique(record: dict[str, Any], ctx: Context) -> Example:
    """MuSiQue: all paragraphs (supporting or not) as ``"<title>: <text>"``; the answer
    and its aliases are the golds."""
    paragraphs = need_list(record, "paragraphs", of=dict)
    parts: list[str] = []
    for position, paragraph in enumerate(paragraphs):
        try:
            text = need_str(paragraph, "paragraph_text", allow_empty=True).strip()
        except RecordError as exc:
            raise _inside(f"paragraphs[{position}]", exc) from None
        title = optional(paragraph, "title", "")
        if not isinstance(title, str):
            raise RecordError(f"paragraphs[{position}].title", "must be a string")
        if text:
            parts.append(f"{title.strip()}: {text}" if title.strip() else text)
    if not parts:
        raise RecordError("paragraphs", "has no text")
    answers = [need_str(record, "answer")] + _str_list(record, "answer_aliases")
    example: Example = {
        "id": _example_id(record, ctx, "id"),
        "task": "qa",
        "context": "\n\n".join(parts),
        "question": need_str(record, "question"),
        "answer": _golds(answers, "answer"),
    }
    return _keep(example, record, ("answerable", "answerable"))


# ------------------------------------------------------------------ narrativeqa


def map_narrativeqa(record: dict[str, Any], ctx: Context) -> Example:
    """NarrativeQA, summary setting: the context is the story's summary, not the book;
    every reference answer is a gold."""
    question_key = (
        "question.text" if isinstance(record.get("question"), Mapping) else "question"
    )
    texts = [
        answer.get("text") if isinstance(answer, Mapping) else answer
        for answer in need_list(record, "answers")
    ]
    example: Example = {
        "id": _example_id(record, ctx, "id"),
        "task": "qa",
        "context": need_str(record, "document.summary.text"),
        "question": need_str(record, question_key),
        "answer": _golds(texts, "answers"),
    }
    return _keep(
        example, record, ("document.id", "document_id"), ("document.kind", "kind")
    )


# ------------------------------------------------------------------ triviaqa


def map_triviaqa(record: dict[str, Any], ctx: Context) -> Example:
    """TriviaQA: the Wikipedia pages and web search results as context; the answer's
    value and aliases as golds. A record without evidence text (the ``nocontext``
    configs, the original JSON) is closed book: its context is the question and it
    carries ``closed_book: True``."""
    question = _text(record, "question", "Question")
    if optional(record, "answer", None) is not None:
        value_key, aliases_key = "answer.value", "answer.aliases"
    else:
        value_key, aliases_key = "Answer.Value", "Answer.Aliases"
    answers = [need_str(record, value_key)] + _str_list(record, aliases_key)
    evidence = _str_list(record, "entity_pages.wiki_context") + _str_list(
        record, "search_results.search_context"
    )
    context = _join(evidence)
    return {
        "id": _example_id(record, ctx, "question_id", "QuestionId"),
        "task": "qa",
        "context": context or question,
        "question": question,
        "answer": _golds(answers, value_key),
        "closed_book": not context,
    }


# ------------------------------------------------------------------ frames


def map_frames(record: dict[str, Any], ctx: Context) -> Example:
    """FRAMES: closed book (the prompt alone); the Wikipedia articles are not given."""
    prompt = need_str(record, "Prompt")
    example: Example = {
        "id": _example_id(record, ctx, "Unnamed: 0"),
        "task": "qa",
        "context": prompt,
        "question": prompt,
        "answer": need_str(record, "Answer").strip(),
    }
    return _keep(example, record, ("reasoning_types", "reasoning_types"))


# ------------------------------------------------------------------ qasper


def _qasper_sections(record: Mapping[str, Any]) -> list[tuple[str, list[str]]]:
    """(section name, its paragraphs), from the hub's columns or the original list."""
    raw: Any = optional(record, "full_text", [])
    pairs: list[tuple[Any, Any]]
    if isinstance(raw, Mapping):  # hub: {section_name: [...], paragraphs: [[...]]}
        names = need_list(record, "full_text.section_name", min_len=0)
        paragraphs = need_list(record, "full_text.paragraphs", min_len=0)
        if len(names) != len(paragraphs):
            raise RecordError(
                "full_text",
                f"has {len(names)} section names but {len(paragraphs)} paragraph lists",
            )
        pairs = list(zip(names, paragraphs, strict=True))
    elif isinstance(raw, list | tuple):  # original: [{section_name, paragraphs}, ...]
        pairs = []
        for position, section in enumerate(raw):
            if not isinstance(section, Mapping):
                raise RecordError(f"full_text[{position}]", "must be a mapping")
            pairs.append((section.get("section_name"), section.get("paragraphs")))
    else:
        raise RecordError(
            "full_text", f"must be a list or a mapping, got {type(raw).__name__}"
        )
    sections: list[tuple[str, list[str]]] = []
    for position, (name, paras) in enumerate(pairs):
        if name is not None and not isinstance(name, str):
            raise RecordError(f"full_text[{position}].section_name", "must be a string")
        paras = [] if paras is None else paras
        if not isinstance(paras, list | tuple) or not all(
            isinstance(p, str) for p in paras
        ):
            raise RecordError(
                f"full_text[{position}].paragraphs", "must be a list of strings"
            )
        sections.append((name or "", list(paras)))
    return sections


def _qasper_questions(
    record: Mapping[str, Any],
) -> list[tuple[str, str | None, list[Any]]]:
    """(question, question id or None, annotator answers) of each question."""
    raw = need(record, "qas")
    found: list[tuple[Any, Any, list[Any]]] = []
    if isinstance(raw, Mapping):
        # hub: {question: [...], question_id: [...], answers: [{answer: [...]}, ...]}
        questions = need_list(record, "qas.question", min_len=0)
        ids = optional(record, "qas.question_id", [None] * len(questions))
        if not isinstance(ids, list | tuple):
            raise RecordError("qas.question_id", "must be a list")
        answers = need_list(record, "qas.answers", min_len=0)
        if not len(questions) == len(ids) == len(answers):
            raise RecordError("qas", "has lists of different lengths")
        for position, (question, qid, entry) in enumerate(
            zip(questions, ids, answers, strict=True)
        ):
            infos = entry.get("answer") if isinstance(entry, Mapping) else None
            if not isinstance(infos, list | tuple):
                raise RecordError(f"qas.answers[{position}].answer", "must be a list")
            found.append((question, qid, list(infos)))
    elif isinstance(raw, list | tuple):  # original: [{question, question_id, answers}]
        for position, qa in enumerate(raw):
            if not isinstance(qa, Mapping):
                raise RecordError(f"qas[{position}]", "must be a mapping")
            entries = qa.get("answers")
            if not isinstance(entries, list | tuple):
                raise RecordError(f"qas[{position}].answers", "must be a list")
            infos = [
                e.get("answer") if isinstance(e, Mapping) else None for e in entries
            ]
            found.append((qa.get("question"), qa.get("question_id"), infos))
    else:
        raise RecordError(
            "qas", f"must be a list or a mapping, got {type(raw).__name__}"
        )
    checked: list[tuple[str, str | None, list[Any]]] = []
    for position, (question, qid, infos) in enumerate(found):
        if not isinstance(question, str) or not question.strip():
            raise RecordError(f"qas[{position}].question", "must be a non-empty string")
        if qid is not None and not isinstance(qid, str | int):
            raise RecordError(f"qas[{position}].question_id", "must be a string")
        checked.append((question, None if qid is None else str(qid), infos))
    return checked


def _qasper_gold(info: Any) -> tuple[str, str] | None:
    """(gold text, answer type) of one annotator's answer, in the order of the official
    QASPER evaluator; ``None`` for an annotation that holds no answer."""
    if not isinstance(info, Mapping):
        return None
    if info.get("unanswerable"):
        return "Unanswerable", "none"
    spans = info.get("extractive_spans") or []
    spans = [s.strip() for s in spans if isinstance(s, str) and s.strip()]
    if spans:
        return ", ".join(spans), "extractive"
    free = info.get("free_form_answer")
    if isinstance(free, str) and free.strip():
        return free.strip(), "abstractive"
    if info.get("yes_no") is True:
        return "Yes", "boolean"
    if info.get("yes_no") is False:
        return "No", "boolean"
    return None


def map_qasper(record: dict[str, Any], ctx: Context) -> list[Example]:
    """QASPER: one example per question of the paper.

    The context is the title, the abstract, then each section's name followed by its
    own paragraphs. The golds are the annotators' answers as the official evaluator
    reads them: "Unanswerable", the extractive spans joined by ", ", the free-form
    answer, or "Yes"/"No".
    """
    paper_id = _example_id(record, ctx, "id")
    parts = [need_str(record, "title"), optional(record, "abstract", "")]
    if not isinstance(parts[1], str):
        raise RecordError("abstract", "must be a string")
    for name, paragraphs in _qasper_sections(record):
        parts.append(name)
        parts.extend(paragraphs)
    context = _join(parts)
    examples: list[Example] = []
    for position, (question, qid, infos) in enumerate(_qasper_questions(record)):
        golds: list[str] = []
        kinds: set[str] = set()
        for info in infos:
            gold = _qasper_gold(info)
            if gold is None:
                continue
            kinds.add(gold[1])
            if gold[0] not in golds:
                golds.append(gold[0])
        if not golds:
            raise RecordError(f"qas[{position}].answers", "has no usable answer")
        example: Example = {
            "id": f"{paper_id}_{qid if qid is not None else position}",
            "task": "qa",
            "context": context,
            "question": question,
            "answer": golds,
        }
        if len(kinds) == 1:
            example["answer_type"] = kinds.pop()
        examples.append(example)
    return examples


def regroup_qasper(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Split the original file (one JSON object ``{paper_id: paper, ...}``) into one
    record per paper, with ``id`` = the paper id; hub rows pass unchanged."""
    out: list[dict[str, Any]] = []
    for record in records:
        if (
            record
            and "qas" not in record
            and all(isinstance(v, Mapping) and "qas" in v for v in record.values())
        ):
            out.extend({"id": key, **paper} for key, paper in record.items())
        else:
            out.append(record)
    return out


# ------------------------------------------------------------------ drop


def _drop_answer_texts(answer: Any, field: str) -> list[str]:
    """The gold strings of one answer of the original DROP file, as the official
    evaluator reads it: the number, else the spans, else the date "day month year"."""
    if not isinstance(answer, Mapping):
        raise RecordError(field, "must be a mapping")
    number = answer.get("number")
    if number not in (None, ""):
        return [str(number)]
    spans = answer.get("spans") or []
    if not isinstance(spans, list | tuple):
        raise RecordError(f"{field}.spans", "must be a list")
    if spans:
        return [str(s) for s in spans]
    date = answer.get("date") or {}
    if not isinstance(date, Mapping):
        raise RecordError(f"{field}.date", "must be a mapping")
    parts = [str(date.get(k) or "").strip() for k in ("day", "month", "year")]
    text = " ".join(p for p in parts if p)
    return [text] if text else []


def map_drop(record: dict[str, Any], ctx: Context) -> Example:
    """DROP: the passage and the question; every gold span (hub) or every answer and
    validated answer (original file) is a gold."""
    if optional(record, "answers_spans", None) is not None or "answer" not in record:
        field = "answers_spans.spans"
        golds = _golds(need_list(record, field), field)
    else:
        texts = _drop_answer_texts(record["answer"], "answer")
        validated: Any = optional(record, "validated_answers", [])
        if not isinstance(validated, list | tuple):
            raise RecordError("validated_answers", "must be a list")
        for position, answer in enumerate(validated):
            texts += _drop_answer_texts(answer, f"validated_answers[{position}]")
        golds = _golds(texts, "answer")
    example: Example = {
        "id": _example_id(record, ctx, "query_id"),
        "task": "qa",
        "context": need_str(record, "passage"),
        "question": need_str(record, "question"),
        "answer": golds,
    }
    return _keep(example, record, ("section_id", "section_id"))


def regroup_drop(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Flatten the original file (one JSON object ``{passage_id: {passage, qa_pairs}}``)
    into one record per question (``section_id``, ``passage`` and the question's own
    fields); hub rows pass unchanged."""
    out: list[dict[str, Any]] = []
    for record in records:
        if (
            record
            and "passage" not in record
            and all(isinstance(v, Mapping) and "qa_pairs" in v for v in record.values())
        ):
            for section_id, passage in record.items():
                pairs = passage["qa_pairs"]
                if not isinstance(pairs, list):
                    out.append({"section_id": section_id, **passage})
                    continue
                for qa in pairs:
                    fields = qa if isinstance(qa, Mapping) else {}
                    out.append(
                        {
                            "section_id": section_id,
                            "passage": passage.get("passage"),
                            **fields,
                        }
                    )
        else:
            out.append(record)
    return out


# ------------------------------------------------------------------ truthfulqa


def _answer_list(record: Mapping[str, Any], *keys: str) -> list[Any]:
    """A list of answers from the hub (a list) or the original CSV (``;``-joined)."""
    key = _first_key(record, *keys)
    value: Any = optional(record, key, [])
    if isinstance(value, str):
        return value.split(";")
    if not isinstance(value, list | tuple):
        raise RecordError(key, f"must be a list of strings, got {type(value).__name__}")
    return list(value)


def map_truthfulqa(record: dict[str, Any], ctx: Context) -> Example:
    """TruthfulQA (generation): the best answer and the other correct answers are the
    golds; the incorrect answers are kept as ``incorrect_answers``."""
    question = _text(record, "question", "Question")
    best = _text(record, "best_answer", "Best Answer")
    golds = _golds(
        [best] + _answer_list(record, "correct_answers", "Correct Answers"),
        "correct_answers",
    )
    incorrect = [
        a.strip()
        for a in _answer_list(record, "incorrect_answers", "Incorrect Answers")
        if isinstance(a, str) and a.strip()
    ]
    example: Example = {
        "id": _example_id(record, ctx, "id"),
        "task": "qa",
        "context": question,
        "question": question,
        "answer": golds,
        "incorrect_answers": incorrect,
    }
    return _keep(example, record, ("category", "category"), ("Category", "category"))


# ------------------------------------------------------------------ quality


def _quality_question(
    article: Mapping[str, Any], qa: Mapping[str, Any], fallback_id: str
) -> Example:
    """One QuALITY question: the options in the prompt, the 1-based gold checked."""
    question = need_str(qa, "question")
    options = need_list(qa, "options", min_len=2, of=str)
    if len(options) > 10:
        raise RecordError("options", f"has {len(options)} options, at most 10")
    label = need(qa, "gold_label")
    if isinstance(label, str) and label.strip().isdigit():
        label = int(label.strip())
    if isinstance(label, bool) or not isinstance(label, int):
        raise RecordError("gold_label", "must be an integer (1-based)")
    if not 1 <= label <= len(options):
        raise RecordError(
            "gold_label", f"is {label}, outside 1..{len(options)} (it is 1-based)"
        )
    example: Example = {
        "id": _id_field(qa, "question_unique_id") or fallback_id,
        "task": "multiple_choice",
        "context": mc_context(question, options, passage=need_str(article, "article")),
        "question": question,
        "choices": options,
        "correct_letter": letter(label - 1, len(options)),
        "answer": options[label - 1],
    }
    _keep(example, article, ("title", "title"))
    difficult = optional(qa, "difficult", None)
    if difficult is not None:
        example["difficult"] = bool(difficult)
    return example


def map_quality(record: dict[str, Any], ctx: Context) -> Example | list[Example]:
    """QuALITY: multiple choice with the four options shown after the article.

    A hub row is one question; a line of the original file is one article with its
    ``questions`` (one example each). ``gold_label`` is 1-based and checked.
    """
    article_id = optional(record, "article_id", None)
    if isinstance(record.get("questions"), list):
        # the original file: one article with its questions
        questions = need_list(record, "questions", of=dict)
        base = str(article_id) if article_id is not None else str(ctx.index)
        examples: list[Example] = []
        for i, qa in enumerate(questions):
            try:
                examples.append(_quality_question(record, qa, f"{base}_{i}"))
            except RecordError as exc:
                raise _inside(f"questions[{i}]", exc) from None
        return examples
    fallback = f"{article_id}_{ctx.index}" if article_id is not None else str(ctx.index)
    return _quality_question(record, record, fallback)


# ------------------------------------------------------------------ alpaca-eval


def map_alpaca_eval(record: dict[str, Any], ctx: Context) -> Example:
    """AlpacaEval: the instruction is the prompt; the reference output is the answer.
    The row's ``dataset`` (its source set) is kept as ``source_dataset``."""
    instruction = need_str(record, "instruction")
    example: Example = {
        "id": _example_id(record, ctx, "id"),
        "task": "qa",
        "context": instruction,
        "question": instruction,
        "answer": need_str(record, "output"),
    }
    return _keep(
        example, record, ("generator", "generator"), ("dataset", "source_dataset")
    )


# ------------------------------------------------------------------ bfcl


def _bfcl_messages(record: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(role, content) of every message of ``question``: a string (BFCL v1), a list
    of messages (one turn) or a list of turns (BFCL v3)."""
    raw = need(record, "question")
    if isinstance(raw, str):
        return [("user", need_str(record, "question"))]
    if not isinstance(raw, list | tuple) or not raw:
        raise RecordError("question", "must be a string or a non-empty list of turns")
    turns = [raw] if all(isinstance(m, Mapping) for m in raw) else raw
    messages: list[tuple[str, str]] = []
    for t, turn in enumerate(turns):
        if not isinstance(turn, list | tuple):
            raise RecordError(f"question[{t}]", "must be a list of messages")
        for m, message in enumerate(turn):
            where = f"question[{t}][{m}]"
            if not isinstance(message, Mapping):
                raise RecordError(where, "must be a {role, content} mapping")
            role, content = message.get("role"), message.get("content")
            if not isinstance(role, str) or not isinstance(content, str):
                raise RecordError(where, "must have a string role and content")
            messages.append((role, content))
    return messages


def prepare_bfcl(tables: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    """Question id → ``ground_truth``, from the ``possible_answer`` table (the records
    without one, such as the questions themselves, are ignored)."""
    answers: dict[str, Any] = {}
    for record in tables.get("possible_answer", []):
        key, truth = record.get("id"), record.get("ground_truth")
        if key is not None and truth is not None:
            answers[str(key)] = truth
    return answers


def _any_of(values: list[Any]) -> Any:
    """BFCL's accepted values in ``expected_tool_calls``' spelling: one value as
    itself, several (or the optional marker ``""``) as ``{"any_of": [...]}``."""
    if len(values) == 1 and values[0] != "" and not _looks_any_of(values[0]):
        return values[0]
    return {"any_of": list(values)}


def _looks_any_of(value: Any) -> bool:
    return isinstance(value, dict) and len(value) == 1 and "any_of" in value


def _bfcl_value(value: Any) -> Any:
    """One accepted value of BFCL's possible answer: an object's keys (also those of
    the objects of a list) hold lists of accepted values there."""
    if isinstance(value, dict):
        return {k: _any_of(v) if isinstance(v, list) and v else v for k, v in value.items()}
    if isinstance(value, list):
        return [_bfcl_value(v) if isinstance(v, dict) else v for v in value]
    return value


def bfcl_expected_calls(truth: Any, field: str = "ground_truth") -> list[dict[str, Any]]:
    """BFCL's possible answer (``[{function: {argument: [accepted values]}}]``) as
    ``expected_tool_calls`` (docs/evaluators.md); BFCL v1's call strings
    (``"f(x=1)"``) are read too.

    :raises RecordError: neither shape.
    """
    if isinstance(truth, (str, dict)):
        truth = [truth]
    if not isinstance(truth, list) or not truth:
        raise RecordError(field, "must be a non-empty list of {function: {argument: [values]}}")
    calls: list[dict[str, Any]] = []
    for i, item in enumerate(truth):
        where = f"{field}[{i}]"
        if isinstance(item, str):
            calls.append(_bfcl_call_string(item, where))
            continue
        if not isinstance(item, dict) or len(item) != 1:
            raise RecordError(where, "must be {function name: {argument: [accepted values]}}")
        ((name, args),) = item.items()
        if not isinstance(args, dict):
            raise RecordError(f"{where}.{name}", "must be an object of argument → [accepted values]")
        arguments: dict[str, Any] = {}
        for arg, accepted in args.items():
            if not isinstance(accepted, list) or not accepted:
                raise RecordError(f"{where}.{name}.{arg}", "must be a non-empty list of accepted values")
            arguments[str(arg)] = _any_of([_bfcl_value(v) for v in accepted])
        calls.append({"name": str(name), "arguments": arguments})
    return calls


def _bfcl_call_string(text: str, where: str) -> dict[str, Any]:
    """BFCL v1's ``"module.f(x=1, unit='c')"``: keyword arguments with literal
    values (each then the one accepted value)."""
    import ast

    try:
        node = ast.parse(text.strip(), mode="eval").body
    except (SyntaxError, ValueError, RecursionError):
        raise RecordError(where, f"is not a Python call: {text[:60]!r}") from None
    if not isinstance(node, ast.Call) or node.args:
        raise RecordError(where, "must be a call with keyword arguments only: f(x=1)")
    parts: list[str] = []
    func: Any = node.func
    while isinstance(func, ast.Attribute):
        parts.append(func.attr)
        func = func.value
    if not isinstance(func, ast.Name):
        raise RecordError(where, "must call a named function")
    parts.append(func.id)
    arguments: dict[str, Any] = {}
    for keyword in node.keywords:
        if keyword.arg is None:
            raise RecordError(where, "must not unpack arguments (**kwargs)")
        try:
            value = ast.literal_eval(keyword.value)
        except (ValueError, SyntaxError, RecursionError):
            raise RecordError(where, f"argument {keyword.arg!r} is not a literal value") from None
        if isinstance(value, tuple):
            value = list(value)
        arguments[keyword.arg] = {"any_of": [value]} if _looks_any_of(value) else value
    return {"name": ".".join(reversed(parts)), "arguments": arguments}


def map_bfcl(record: dict[str, Any], ctx: Context) -> Example:
    """BFCL: the function documents (indented JSON) and the user's message(s) are the
    prompt, the last user message is the question; the documents are the example's
    ``tools`` and the possible answer its ``expected_tool_calls``, which
    ToolCallMatch judges with BFCL's rules."""
    raw_functions = need(record, "function")
    functions = [raw_functions] if isinstance(raw_functions, Mapping) else raw_functions
    if not isinstance(functions, list | tuple) or not functions:
        raise RecordError("function", "must be a function document or a non-empty list")
    if not all(isinstance(f, Mapping) for f in functions):
        raise RecordError("function", "must hold function documents (mappings)")
    messages = _bfcl_messages(record)
    user = [content for role, content in messages if role == "user" and content.strip()]
    if not user:
        raise RecordError("question", "has no user message")
    example_id = _example_id(record, ctx, "id")
    truth = record.get("ground_truth")
    if truth is None and isinstance(ctx.aux, Mapping):
        truth = ctx.aux.get(example_id)
    if truth is None:
        name = (ctx.config or "simple_python")
        raise RecordError(
            "ground_truth",
            f"is missing: put BFCL's possible_answer/BFCL_v4_{name}.json next to "
            f"BFCL_v4_{name}.json (as bfcl-eval ships them), or give each record its "
            "ground_truth",
        )
    expected = bfcl_expected_calls(truth)
    dialogue = "\n".join(
        f"{role.capitalize()}: {content.strip()}" for role, content in messages
    )
    context = "Functions:\n" + json.dumps(list(functions), indent=2, ensure_ascii=False)
    return {
        "id": example_id,
        "task": "qa",
        "context": f"{context}\n\n{dialogue}",
        "question": user[-1],
        "tools": [dict(f) for f in functions],
        "expected_tool_calls": expected,
    }


# ------------------------------------------------------------------ apigen


def apigen_expected_calls(answers: Any) -> list[dict[str, Any]]:
    """xLAM's ``answers`` (``[{name, arguments}]``, or its JSON text) as
    ``expected_tool_calls``: each argument's value is the one accepted value.

    :raises RecordError: not a list of ``{name, arguments}`` objects.
    """
    if isinstance(answers, str):
        try:
            answers = json.loads(answers)
        except ValueError:
            raise RecordError("answers", "is not valid JSON") from None
    if not isinstance(answers, list):
        raise RecordError("answers", "must be a list of {name, arguments} calls")
    calls: list[dict[str, Any]] = []
    for i, call in enumerate(answers):
        if not isinstance(call, Mapping) or not isinstance(call.get("name"), str):
            raise RecordError(f"answers[{i}]", "must be a {name, arguments} object")
        args = call.get("arguments", {})
        if isinstance(args, str):
            try:
                args = json.loads(args) if args.strip() else {}
            except ValueError:
                raise RecordError(f"answers[{i}].arguments", "is not valid JSON") from None
        if not isinstance(args, Mapping):
            raise RecordError(f"answers[{i}].arguments", "must be an object")
        calls.append({
            "name": call["name"],
            "arguments": {str(k): {"any_of": [v]} if _looks_any_of(v) else v for k, v in args.items()},
        })
    return calls


def map_apigen(record: dict[str, Any], ctx: Context) -> Example:
    """APIGen (xLAM): the tools (indented JSON) and the query are the prompt; the
    tools are the example's ``tools`` and the reference calls its
    ``expected_tool_calls``."""
    query = need_str(record, "query")
    raw_tools = need(record, "tools")
    if isinstance(raw_tools, str):
        try:
            tools = json.loads(raw_tools)
        except ValueError:
            raise RecordError("tools", "is not valid JSON") from None
    else:
        tools = raw_tools
    if not isinstance(tools, list):
        raise RecordError("tools", "must be a JSON list of tool documents")
    expected = apigen_expected_calls(need(record, "answers"))
    context = "Tools:\n" + json.dumps(tools, indent=2, ensure_ascii=False)
    return {
        "id": _example_id(record, ctx, "id"),
        "task": "qa",
        "context": f"{context}\n\nUser: {query.strip()}",
        "question": query,
        "tools": tools,
        "expected_tool_calls": expected,
    }


# ------------------------------------------------------------------ swe-bench


def map_swebench(record: dict[str, Any], ctx: Context) -> Example:
    """SWE-bench (all three variants): the repository and the issue are the context,
    an instruction to write a patch the question, the gold patch the answer."""
    repo = need_str(record, "repo")
    issue = need_str(record, "problem_statement")
    example: Example = {
        "id": need_str(record, "instance_id").strip(),
        "task": "qa",
        "context": f"Repository: {repo}\n\nIssue:\n{issue}",
        "question": _SWEBENCH_QUESTION,
        "answer": need_str(record, "patch"),
        "repo": repo,
    }
    return _keep(
        example,
        record,
        ("base_commit", "base_commit"),
        ("version", "version"),
        ("difficulty", "difficulty"),
    )


# ------------------------------------------------------------------ specs

_SWEBENCH_NOTES: Final = (
    "F1 against the gold patch is only a rough text-overlap proxy; running SWE-bench's "
    "test harness is out of scope. The question is a one-line instruction to write a "
    "unified diff (upstream gave none)."
)

#: One spec per dataset of this group, in the order of UPSTREAM.md §4.
SPECS: Final[tuple[NamedSpec, ...]] = (
    NamedSpec(
        name="hotpotqa",
        family="qa",
        description="HotpotQA multi-hop QA over Wikipedia paragraphs (fullwiki "
        "validation, 7,405 questions)",
        map_record=map_hotpotqa,
        hub=HubSource("hotpotqa/hotpot_qa", "{config}", "validation"),
        files=("hotpot_dev_{config}_v1.json",),
        configs=("fullwiki", "distractor"),
        default_config="fullwiki",
        notes="Paragraphs keep the sentences' own spacing, and the original JSON "
        "(`_id`, context as [title, sentences] pairs) is accepted besides hub rows. "
        "`hotpotqa:distractor` selects the distractor setting.",
    ),
    NamedSpec(
        name="natural-questions",
        family="qa",
        description="Natural Questions, open-domain (NQ-open) validation: 3,610 "
        "questions, closed book",
        map_record=map_natural_questions,
        hub=HubSource("google-research-datasets/nq_open", None, "validation"),
        files=("NQ-open.dev.jsonl",),
        notes="Closed book, as upstream: the prompt is the question alone. Every gold "
        "answer is kept (upstream scored against the first only).",
    ),
    NamedSpec(
        name="musique",
        family="qa",
        description="MuSiQue-Ans 2-4 hop QA over 20 paragraphs each (validation, "
        "2,417 questions)",
        map_record=map_musique,
        hub=HubSource("bdsaglam/musique", "answerable", "validation"),
        files=("musique_ans_v1.0_dev.jsonl",),
        notes="All paragraphs, supporting or not, are in the context; the answer's "
        "aliases are golds too (upstream used the answer only).",
    ),
    NamedSpec(
        name="narrativeqa",
        family="qa",
        description="NarrativeQA questions on book and film summaries (test, 10,557 "
        "questions)",
        map_record=map_narrativeqa,
        hub=HubSource("deepmind/narrativeqa", None, "test"),
        notes="The summary setting: the context is the story's summary, not the full "
        "book or script. Both reference answers are golds (upstream used the first).",
    ),
    NamedSpec(
        name="triviaqa",
        family="qa",
        description="TriviaQA reading comprehension with Wikipedia and web evidence "
        "(rc validation, 17,944 questions)",
        map_record=map_triviaqa,
        hub=HubSource("mandarjoshi/trivia_qa", "{config}", "validation"),
        configs=(
            "rc",
            "rc.nocontext",
            "rc.wikipedia",
            "rc.web",
            "unfiltered",
            "unfiltered.nocontext",
        ),
        default_config="rc",
        notes="The context is the Wikipedia pages and the search results, and the "
        "answer's aliases are golds (upstream: search results and value only). A "
        "record without evidence text (`nocontext` configs, the original JSON) is "
        "closed book: context = question, `closed_book: true`.",
    ),
    NamedSpec(
        name="frames",
        family="qa",
        description="FRAMES multi-hop factual questions, closed book (test, 824 "
        "questions)",
        map_record=map_frames,
        hub=HubSource("google/frames-benchmark", None, "test"),
        notes="Closed book as upstream: the linked Wikipedia articles are not fetched, "
        "so this measures the model's own knowledge and reasoning.",
    ),
    NamedSpec(
        name="qasper",
        family="qa",
        description="QASPER questions on NLP papers, full text as context (validation: "
        "281 papers, about 1,000 questions)",
        map_record=map_qasper,
        hub=HubSource("allenai/qasper", None, "validation", PARQUET_CONVERSION),
        files=("qasper-dev-v0.3.json",),
        regroup=regroup_qasper,
        notes="Each section name stays with its paragraphs, and every annotator's "
        "answer is a gold as the official evaluator reads it ('Unanswerable', "
        "'Yes'/'No', joined spans, free form); upstream detached the names and gave "
        "yes/no and unanswerable questions an empty gold worth a free 1.0. Read from "
        "the hub's parquet conversion (refs/convert/parquet) of the script-based repo.",
    ),
    NamedSpec(
        name="drop",
        family="qa",
        description="DROP discrete reasoning over Wikipedia passages (validation, "
        "9,535 questions)",
        map_record=map_drop,
        hub=HubSource("ucinlp/drop", None, "validation"),
        files=("drop_dataset_dev.json",),
        regroup=regroup_drop,
        notes="Every gold span is an answer (upstream kept the first only), and the "
        "original file's numbers and dates become text as in the official evaluator. "
        "The score is AnswerQuality's F1, not DROP's bag-of-spans F1.",
    ),
    NamedSpec(
        name="truthfulqa",
        family="qa",
        description="TruthfulQA generation: 817 questions that invite a false answer "
        "(validation)",
        map_record=map_truthfulqa,
        hub=HubSource("truthfulqa/truthful_qa", "generation", "validation"),
        files=("TruthfulQA.csv",),
        notes="The best answer and all correct answers are golds (upstream used the "
        "best only), and the incorrect answers are kept for judges. Token F1 against "
        "the golds is not TruthfulQA's truthfulness score.",
    ),
    NamedSpec(
        name="quality",
        family="multiple_choice",
        description="QuALITY multiple-choice questions on long articles (validation, "
        "2,086 questions)",
        map_record=map_quality,
        hub=HubSource("tasksource/QuALITY", None, "validation"),
        files=("QuALITY.v1.0.1.htmlstripped.dev",),
        notes="Multiple choice with the four options shown after the article (upstream "
        "hid them and scored free text). `gold_label` is checked to be 1..4 (upstream "
        "silently read 0 as the first option).",
    ),
    NamedSpec(
        name="alpaca-eval",
        family="qa",
        description="AlpacaEval instructions with text-davinci-003 reference outputs "
        "(eval, 805)",
        map_record=map_alpaca_eval,
        hub=HubSource("tatsu-lab/alpaca_eval", "alpaca_eval", "eval", PARQUET_CONVERSION),
        files=("alpaca_eval.json",),
        notes="Read from the hub's parquet conversion (refs/convert/parquet): the "
        "repository is script-based. F1 against the reference output is a weak proxy; "
        "a judge (--ctxbench-judge-url) comes closer to AlpacaEval's comparison.",
    ),
    NamedSpec(
        name="bfcl",
        family="qa",
        description="Berkeley Function-Calling Leaderboard v4, one config per AST "
        "category (simple_python 400, multiple 200, parallel 200, parallel_multiple "
        "200); judged by ToolCallMatch",
        map_record=map_bfcl,
        files=("BFCL_v4_{config}.json", "BFCL_v3_{config}.json", "BFCL_v3_simple.json"),
        configs=BFCL_CONFIGS,
        default_config="simple_python",
        aux={
            "possible_answer": (
                None,
                (
                    "possible_answer/BFCL_v4_{config}.json",
                    "possible_answer/BFCL_v3_{config}.json",
                    "possible_answer/BFCL_v3_simple.json",
                    "BFCL_v4_{config}.json",
                    "BFCL_v3_{config}.json",
                    "BFCL_v3_simple.json",
                ),
            )
        },
        prepare=prepare_bfcl,
        package=("bfcl_eval", "data"),
        notes="Read as the `bfcl-eval` package ships BFCL v4 (JSON lines "
        "`BFCL_v4_<category>.json`, answers in `possible_answer/`), from "
        "`<data-dir>/bfcl/` or, when bfcl-eval is installed, from its own `data/` "
        "folder; BFCL v3's files (`BFCL_v3_simple.json` for the default config, "
        "`BFCL_v3_<config>.json`) are still read. Ids are BFCL's (`simple_python_0`). "
        "Each example carries the function documents as `tools` and the possible "
        "answer as `expected_tool_calls`, so ToolCallMatch judges the System's "
        "`tool_calls` with BFCL's AST-checker rules (`tool_call_match` is the "
        "primary score; a conformance test agrees with bfcl-eval's checker on "
        "every shipped task, docs/differences.md lists the differences). Upstream "
        "(context-bench) scored token F1 against the first possible answer's JSON "
        "text, and dropped the user's question from the prompt.",
    ),
    NamedSpec(
        name="apigen",
        family="qa",
        description="APIGen xLAM function-calling queries with tools and reference "
        "calls (train, 60,000; gated); judged by ToolCallMatch",
        map_record=map_apigen,
        hub=HubSource("Salesforce/xlam-function-calling-60k", None, "train"),
        files=("xlam_function_calling_60k.json",),
        notes="The prompt holds the tools and the query (upstream sent the query "
        "only); the tools are the example's `tools` and the reference calls its "
        "`expected_tool_calls`, judged by ToolCallMatch (each argument's value is "
        "the one accepted; strings compared as BFCL compares them) instead of "
        "upstream's token F1 over the calls' JSON text. The hub repository is gated: "
        "accept its terms and log in first.",
    ),
    NamedSpec(
        name="swebench",
        family="qa",
        description="SWE-bench GitHub issues with their gold patches (test, 2,294)",
        map_record=map_swebench,
        hub=HubSource("princeton-nlp/SWE-bench", None, "test"),
        notes=_SWEBENCH_NOTES,
    ),
    NamedSpec(
        name="swebench-verified",
        family="qa",
        description="SWE-bench Verified: 500 human-validated issues (test)",
        map_record=map_swebench,
        hub=HubSource("princeton-nlp/SWE-bench_Verified", None, "test"),
        notes=_SWEBENCH_NOTES,
    ),
    NamedSpec(
        name="swebench-lite",
        family="qa",
        description="SWE-bench Lite: 300 self-contained issues (test)",
        map_record=map_swebench,
        hub=HubSource("princeton-nlp/SWE-bench_Lite", None, "test"),
        notes=_SWEBENCH_NOTES,
    ),
)
