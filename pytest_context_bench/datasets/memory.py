"""Memory benchmarks: the ``locomo`` dataset (family ``memory``).

:func:`register` adds it to the registry; it is meant to be called from
:func:`pytest_context_bench.datasets.builtin.register`.

LoCoMo (Maharana et al., ACL 2024, github.com/snap-research/locomo) is 10 long
conversations between two people, each with about 200 questions about it. One
example is one conversation::

    {"id": "conv-26", "dataset": "locomo", "task": "memory",
     "speakers": ["Caroline", "Melanie"],
     "turns": [{"role": "user", "content": "[1:56 pm on 8 May, 2023] Caroline: Hey Mel!",
                "speaker": "Caroline", "session": 1,
                "date_time": "1:56 pm on 8 May, 2023", "dia_id": "D1:1"}, ...],
     "qa_pairs": [{"question": "...", "answer": "7 May 2023", "type": "temporal",
                   "category": 2, "evidence": ["D1:3"]}, ...]}

Where the conversations come from, first found first used:

1. the data directory (``--ctxbench-data-dir``, or the environment variable
   ``CTXBENCH_DATA_DIR``), holding ``locomo10.json``: the release file of the LoCoMo
   repository's ``data/`` folder, read as published;
2. the Hugging Face hub (``KhangPTT373/locomo_preprocess``, split ``test``, the copy
   context-bench reads) when the ``datasets`` package is installed.

``locomo:temporal,multi_hop`` keeps only the questions of the given types;
conversations left without a question are skipped.

Reading ``locomo10.json``:

* sessions are the ``session_N`` lists of ``conversation``, in the order of ``N``
  (numerically: ``session_10`` follows ``session_9``); empty ones are skipped;
* each turn's content is ``[<session date>] <speaker>: <text>``, with
  `` [shares <caption>]`` when the turn shared an image: the date is what temporal
  questions ask about, and a memory layer sees only ``content``;
* ``speaker_a`` speaks as ``user`` and ``speaker_b`` as ``assistant``;
* the question type comes from ``category`` through :data:`LOCOMO_CATEGORIES`;
* an adversarial question (category 5) has no answer in the conversation: the file
  gives the tempting wrong one as ``adversarial_answer``. Its gold ``answer`` is
  then :data:`ADVERSARIAL_ANSWER`, the phrase LoCoMo's own evaluation accepts, and
  ``adversarial_answer`` is kept in the pair;
* answers are strings (the file has some numbers, e.g. years); a question with no
  question text is dropped.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from typing import Any, Final

from .._files import not_regular
from ..errors import DatasetError
from .._json import strict_loads
from .catalog.base import HubSource
from .catalog.sources import DATA_DIR_ENV, data_dir, hub_records
from .families import MemoryDataset
from .registry import register_dataset

__all__ = [
    "ADVERSARIAL_ANSWER",
    "LOCOMO_CATEGORIES",
    "LOCOMO_FILE",
    "LOCOMO_HUB",
    "load_locomo",
    "locomo_examples",
    "register",
]

#: LoCoMo's ``category`` codes → question types. These follow LoCoMo's own
#: evaluation code (``task_eval/evaluation.py``: category 1 is scored as a
#: multi-answer question, 2 is asked "answer with an approximate date", 3 has
#: ``;``-separated alternatives; ``evaluation_stats.py`` prints 4, 1, 2, 3, 5 in the
#: paper's single-hop, multi-hop, temporal, open-domain, adversarial column order).
#: Upstream context-bench mapped 1..5 in the paper's prose order instead, which
#: mislabels four of the five types.
LOCOMO_CATEGORIES: Final[Mapping[int, str]] = {
    1: "multi_hop",
    2: "temporal",
    3: "open_domain",
    4: "single_hop",
    5: "adversarial",
}

#: The gold answer of an adversarial question (LoCoMo offers it as the right choice).
ADVERSARIAL_ANSWER: Final = "Not mentioned in the conversation"

#: The release file read from the data directory.
LOCOMO_FILE: Final = "locomo10.json"

#: The hub copy read when no data directory holds :data:`LOCOMO_FILE`.
LOCOMO_HUB: Final = "KhangPTT373/locomo_preprocess"

_TAG: Final = "locomo"
_FAMILY: Final = "memory"
_SESSION_KEY: Final = re.compile(r"session_(\d+)")
_SPEAKER_LINE: Final = re.compile(r"^\s*([^:\n]{1,60}?)\s*:\s*(.*)$")
# A line holding only a date or time (the hub copy starts each session with one).
_DATE_LINE: Final = re.compile(
    r"^\s*\[?[\d: ]*(am|pm)?\s*(on)?\s*\d{1,2}\s+[A-Za-z]+,?\s+\d{4}\]?\s*$"
    r"|^\s*\[?\d{4}-\d{2}-\d{2}([ T][\d:.]+)?\]?\s*$",
    re.IGNORECASE,
)


# --------------------------------------------------------------------------- helpers


def _category(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip())
    return None


def _qa_type(category: int | None) -> str:
    if category is None:
        return "unknown"
    return LOCOMO_CATEGORIES.get(category, f"category_{category}")


def _answer_text(value: Any) -> str:
    if isinstance(value, list):
        return ", ".join(str(v) for v in value)
    return str(value)


def _qa_pair(
    question: Any, answer: Any, category: Any, extra: dict[str, Any]
) -> dict[str, Any] | None:
    """One QA pair in our shape, or ``None`` when it has no question."""
    if not isinstance(question, str) or not question.strip():
        return None
    code = _category(category)
    pair: dict[str, Any] = {"question": question, "type": _qa_type(code)}
    if answer is not None and _answer_text(answer).strip():
        pair["answer"] = _answer_text(answer)
    elif code == 5:
        pair["answer"] = ADVERSARIAL_ANSWER
    else:
        # No gold: evaluators return {} for it instead of inventing a score.
        pass
    if code is not None:
        pair["category"] = code
    pair.update(extra)
    return pair


def _keep(
    pairs: list[dict[str, Any]], types: frozenset[str] | None
) -> list[dict[str, Any]]:
    return pairs if types is None else [p for p in pairs if p["type"] in types]


# ------------------------------------------------------------- locomo10.json (release)


def _release_turns(conversation: dict[str, Any], where: str) -> list[dict[str, Any]]:
    speaker_a = str(conversation.get("speaker_a", ""))
    speaker_b = str(conversation.get("speaker_b", ""))
    roles = {speaker_a: "user", speaker_b: "assistant"}
    sessions = sorted(
        (int(m.group(1)), key)
        for key in conversation
        if (m := _SESSION_KEY.fullmatch(key)) is not None
    )
    turns: list[dict[str, Any]] = []
    for number, key in sessions:
        dialog = conversation[key]
        if not isinstance(dialog, list):
            raise DatasetError(
                f"{where}: conversation[{key!r}] is not a list of turns."
            )
        date = str(conversation.get(f"{key}_date_time") or "")
        for position, turn in enumerate(dialog, 1):
            if not isinstance(turn, dict) or not isinstance(turn.get("text"), str):
                raise DatasetError(
                    f"{where}: turn {position} of {key} has no 'text' string."
                )
            speaker = str(turn.get("speaker", ""))
            # A third speaker (none in the release) alternates, as upstream did.
            role = roles.setdefault(
                speaker, "user" if len(roles) % 2 == 0 else "assistant"
            )
            content = f"{speaker}: {turn['text']}" if speaker else turn["text"]
            caption = turn.get("blip_caption")
            if isinstance(caption, str) and caption.strip():
                content += f" [shares {caption.strip()}]"
            if date:
                content = f"[{date}] {content}"
            record: dict[str, Any] = {
                "role": role,
                "content": content,
                "speaker": speaker,
                "session": number,
                "date_time": date,
            }
            if "dia_id" in turn:
                record["dia_id"] = str(turn["dia_id"])
            turns.append(record)
    return turns


def _release_example(
    sample: Any, index: int, path: str, types: frozenset[str] | None
) -> dict[str, Any] | None:
    where = f"conversation {index + 1}"
    if not isinstance(sample, dict) or not isinstance(sample.get("conversation"), dict):
        raise DatasetError(
            f"{where} has no 'conversation' object; this is not the "
            f"LoCoMo release format.",
            path=path,
        )
    qa = sample.get("qa", [])
    if not isinstance(qa, list):
        raise DatasetError(f"{where}: 'qa' is not a list.", path=path)
    try:
        turns = _release_turns(sample["conversation"], where)
    except DatasetError as exc:
        raise DatasetError(str(exc), path=path) from None
    pairs: list[dict[str, Any]] = []
    for item in qa:
        if not isinstance(item, dict):
            continue
        extra: dict[str, Any] = {}
        if "evidence" in item:
            extra["evidence"] = list(item["evidence"] or [])
        if item.get("adversarial_answer") is not None:
            extra["adversarial_answer"] = _answer_text(item["adversarial_answer"])
        pair = _qa_pair(
            item.get("question"), item.get("answer"), item.get("category"), extra
        )
        if pair is not None:
            pairs.append(pair)
    pairs = _keep(pairs, types)
    if not turns or not pairs:
        return None
    conversation = sample["conversation"]
    return {
        "id": str(sample.get("sample_id") or f"locomo_{index}"),
        "dataset": _TAG,
        "task": _FAMILY,
        "speakers": [
            str(conversation.get("speaker_a", "")),
            str(conversation.get("speaker_b", "")),
        ],
        "turns": turns,
        "qa_pairs": pairs,
    }


def locomo_examples(
    data: Any, *, path: str = LOCOMO_FILE, qa_types: Iterable[str] | None = None
) -> list[dict[str, Any]]:
    """Turn the parsed ``locomo10.json`` into examples (one per conversation).

    :param data: the file's JSON (a list of conversations).
    :param path: the file name, for error messages.
    :param qa_types: keep only these question types (``None``: all).
    :raises DatasetError: when ``data`` is not in the release format.
    """
    if not isinstance(data, list):
        raise DatasetError(
            "expected a JSON list of conversations (the LoCoMo release format).",
            path=path,
        )
    types = frozenset(qa_types) if qa_types is not None else None
    examples = []
    for index, sample in enumerate(data):
        example = _release_example(sample, index, path, types)
        if example is not None:
            examples.append(example)
    return examples


# --------------------------------------------------------------------- the hub copy


def _json_or(value: Any) -> Any:
    if isinstance(value, str) and value.lstrip().startswith(("[", "{")):
        try:
            return strict_loads(value)
        except ValueError:
            return value
    return value


def _hub_turns(raw: Any) -> list[dict[str, Any]]:
    """Parse the hub copy's raw turn text into ``{role, content}`` turns."""
    raw = _json_or(raw)
    blocks = [raw] if isinstance(raw, str) else [str(b) for b in raw or []]
    roles = {"Speaker_1": "user", "Speaker_2": "assistant"}
    turns: list[dict[str, Any]] = []
    for block in blocks:
        date = ""
        for line in block.splitlines():
            if not line.strip():
                continue
            if _DATE_LINE.match(line):
                date = line.strip().strip("[]")
                continue
            match = _SPEAKER_LINE.match(line)
            if match is None:
                if turns:  # a continuation line of the previous turn
                    turns[-1]["content"] += "\n" + line.strip()
                continue
            speaker = match.group(1)
            role = roles.setdefault(
                speaker, "user" if len(roles) % 2 == 0 else "assistant"
            )
            content = f"{speaker}: {match.group(2)}"
            turns.append(
                {
                    "role": role,
                    "content": f"[{date}] {content}" if date else content,
                    "speaker": speaker,
                }
            )
    return turns


def _hub_examples(
    rows: list[dict[str, Any]], types: frozenset[str] | None
) -> list[dict[str, Any]]:
    examples = []
    for index, row in enumerate(rows):
        questions = _json_or(row.get("questions")) or []
        answers = _json_or(row.get("answers")) or []
        categories = _json_or(row.get("category")) or []
        evidences = _json_or(row.get("evidences")) or []
        pairs = []
        for j, question in enumerate(questions):
            extra: dict[str, Any] = {}
            if j < len(evidences) and evidences[j] is not None:
                ev = evidences[j]
                extra["evidence"] = (
                    list(ev) if isinstance(ev, (list, tuple)) else [str(ev)]
                )
            pair = _qa_pair(
                question,
                answers[j] if j < len(answers) else None,
                categories[j] if j < len(categories) else None,
                extra,
            )
            if pair is not None:
                pairs.append(pair)
        pairs = _keep(pairs, types)
        turns = _hub_turns(row.get("turns"))
        if not turns or not pairs:
            continue
        examples.append(
            {
                "id": f"locomo_{index}",
                "dataset": _TAG,
                "task": _FAMILY,
                "turns": turns,
                "qa_pairs": pairs,
            }
        )
    return examples


# ----------------------------------------------------------------------- the loader


def _parse_types(config: str | None) -> frozenset[str] | None:
    if not config:
        return None
    types = frozenset(t.strip() for t in config.split(",") if t.strip())
    known = set(LOCOMO_CATEGORIES.values())
    unknown = sorted(types - known)
    if unknown or not types:
        raise DatasetError(
            f"locomo:{config}: unknown question type {', '.join(map(repr, unknown))}"
            f"; the types are {', '.join(sorted(known))} (comma-separated, e.g. "
            "--ctxbench-dataset=locomo:temporal,multi_hop)."
        )
    return types


def load_locomo(config: str | None = None) -> MemoryDataset:
    """The LoCoMo conversations (see the module docstring for the sources).

    :param config: ``None``, or comma-separated question types to keep
        (``"temporal,multi_hop"``).
    :return: a :class:`~pytest_context_bench.datasets.families.MemoryDataset` of
        family ``memory``.
    :raises DatasetError: on an unknown type, a malformed file, or when no source
        is available (the message says which file to put where).
    """
    types = _parse_types(config)
    tried: list[str] = []
    folder = data_dir()
    examples: list[dict[str, Any]] | None = None
    source = ""
    if folder is not None:
        path = os.path.join(folder, LOCOMO_FILE)
        if os.path.exists(path) and (problem := not_regular(path)) is not None:
            raise DatasetError(problem + ".", path=path)
        if os.path.isfile(path):
            try:
                with open(path, encoding="utf-8") as f:
                    data = strict_loads(f.read())
            except (OSError, ValueError) as exc:
                raise DatasetError(
                    f"the file cannot be read as JSON ({exc}).", path=path
                ) from exc
            examples, source = locomo_examples(data, path=path, qa_types=types), path
        else:
            tried.append(f"the data directory {folder} has no {LOCOMO_FILE}")
    else:
        tried.append(
            f"no data directory is set (--ctxbench-data-dir or {DATA_DIR_ENV})"
        )
    if examples is None:
        found = hub_records(HubSource(LOCOMO_HUB, None, "test"), tried)
        if found is not None:
            rows, source = found
            examples = _hub_examples(rows, types)
    if examples is None:
        raise DatasetError(
            "the dataset 'locomo' is not available (" + "; ".join(tried) + "). Do one "
            f"of: put {LOCOMO_FILE} (from the data/ folder of "
            "github.com/snap-research/locomo) in a directory and pass "
            f"--ctxbench-data-dir=DIR (or set {DATA_DIR_ENV}=DIR); or download "
            f"{LOCOMO_HUB} from the Hugging Face hub once with --ctxbench-hub (needs "
            "pip install 'pytest-context-bench[datasets]')."
        )
    if not examples:
        raise DatasetError(
            "no LoCoMo conversation with a question (of the requested "
            "types) was found there.",
            path=source,
        )
    return MemoryDataset(tag=_TAG, family=_FAMILY, records=examples, source=source)


def register() -> None:
    """Register ``locomo`` (called from the built-in datasets' ``register``)."""
    register_dataset(
        _TAG,
        load_locomo,
        family=_FAMILY,
        description="LoCoMo: 10 long two-person conversations with about 200 "
        "questions each, by type (memory systems; f1)",
        source=f"hub:{LOCOMO_HUB}",
    )
