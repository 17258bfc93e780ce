"""Evaluator details: why an example got its score, bounded and shown as text.

An evaluator with ``score_details(original, processed) -> (scores, details)``
explains its verdict in a dict of plain builtins, which the engine stores (through
:func:`bounded`) in ``row.metadata[<evaluator name>]``. Its keys (docs/evaluators.md):

- ``reason``: one short sentence, present whenever the example did not get full
  marks;
- ``message``: longer text, optional (an exception's message, a judge's rationale);
- the evaluator's own keys (token F1: ``matched``, ``missing``, ``extra``; code:
  ``assert_line``, ``exception``, ``output_tail`` ...).

Details are derived from untrusted text (responses, generated programs' output):
every string is capped (head and tail kept, the omitted length stated), every list
and dict cut to a number of items, and each evaluator's details to
:data:`DETAILS_CAP` characters. Renderers show ``reason`` first, then ``message``,
then ``key: value`` lines (:func:`detail_pairs`), each value made inert by the
caller for its medium.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

__all__ = [
    "DETAILS_CAP",
    "LIST_CAP",
    "TEXT_CAP",
    "bounded",
    "clip",
    "detail_pairs",
    "explain_lines",
    "explained",
    "value_text",
]

#: Characters kept of one string in a details dict (head and tail).
TEXT_CAP: Final = 2000
#: Items kept of one list (or keys of one dict) in a details dict.
LIST_CAP: Final = 50
#: Characters (of strings, keys and numbers) one evaluator's details may hold.
DETAILS_CAP: Final = 8000
_DEPTH: Final = 4

#: The scores each built-in evaluator explains (by its ``name``): the one that
#: produced a row's primary score is shown first.
EXPLAINS: Final[dict[str, tuple[str, ...]]] = {
    "answer_quality": ("f1", "exact_match", "recall", "contains"),
    "summarization_quality": (
        "rouge_l_precision", "rouge_l_recall", "rouge_l_f1",
        "rouge_lsum_precision", "rouge_lsum_recall", "rouge_lsum_f1",
    ),
    "multiple_choice": ("mc_accuracy",),
    "math_equivalence": ("math_equiv",),
    "nli_label_match": ("nli_accuracy",),
    "ifeval": ("ifeval_strict", "ifeval_loose", "ifeval_inst_strict",
               "ifeval_inst_loose"),
    "code_execution": ("pass_at_1",),
    "llm_judge": ("judge_score", "judge_pass"),
    "memory_judge": ("memory_judge", "memory_judge_raw"),
    "answer_correctness": ("answer_correctness", "answer_factuality",
                           "answer_similarity"),
    "assertions": ("assert_score", "assert_pass"),
    "tool_call_match": ("tool_call_match", "tool_call_f1", "tool_call_name_f1"),
    "trajectory_match": ("trajectory_match",),
}


def clip(text: str, limit: int = TEXT_CAP, *, keep: str = "both") -> str:
    """``text`` cut to about ``limit`` characters, saying how much was cut.

    :param keep: ``"both"`` keeps head and tail
        (``"<head>… [12,345 characters omitted] …<tail>"``), ``"tail"`` the end only
        (``"[12,345 characters omitted] …<tail>"``), ``"head"`` the start only.
    """
    if len(text) <= limit:
        return text
    if keep == "tail":
        tail = text[len(text) - limit:]
        return f"[{len(text) - len(tail):,} characters omitted] …{tail}"
    if keep == "head":
        head = text[:limit]
        return f"{head}… [{len(text) - len(head):,} characters omitted]"
    head_n = (limit + 1) // 2
    tail_n = limit - head_n
    omitted = len(text) - head_n - tail_n
    tail = text[len(text) - tail_n:] if tail_n else ""
    return f"{text[:head_n]}… [{omitted:,} characters omitted] …{tail}"


def _bound(value: Any, text: int, items: int, depth: int) -> Any:
    if value is None or type(value) in (bool, int, float):
        return value
    if isinstance(value, str):
        return clip(str(value), text)
    if depth >= _DEPTH:
        return clip(repr(value), text)
    if isinstance(value, Mapping):
        out: dict[str, Any] = {}
        for n, (key, item) in enumerate(value.items()):
            if n == items:
                out["…"] = f"{len(value) - items} more"
                break
            out[clip(str(key), 200)] = _bound(item, text, items, depth + 1)
        return out
    if isinstance(value, (list, tuple)):
        kept = [_bound(v, text, items, depth + 1) for v in value[:items]]
        if len(value) > items:
            kept.append(f"… {len(value) - items} more")
        return kept
    if isinstance(value, (bool, int, float)):  # subclasses (numpy scalars are not)
        return value
    return clip(repr(value), text)


def _size(value: Any) -> int:
    if isinstance(value, str):
        return len(value)
    if isinstance(value, Mapping):
        return sum(len(str(k)) + _size(v) for k, v in value.items())
    if isinstance(value, list):
        return sum(_size(v) for v in value)
    return 8


def bounded(details: Any) -> Any:
    """A copy of ``details`` within the caps: each string :data:`TEXT_CAP`
    characters, each list :data:`LIST_CAP` items, four levels deep, and
    :data:`DETAILS_CAP` characters in all (longer details are cut harder, then
    keep ``reason`` and ``message`` only, with ``"omitted"`` saying so)."""
    if not isinstance(details, Mapping):
        return _bound(details, 400, 20, 0)  # not a dict: a third-party evaluator's
    # reason and message first: they survive every cut.
    details = {**{k: details[k] for k in ("reason", "message") if k in details},
               **details}
    out = _bound(details, TEXT_CAP, LIST_CAP, 0)
    if _size(out) <= DETAILS_CAP:
        return out
    out = _bound(details, 400, 20, 0)
    if _size(out) <= DETAILS_CAP:
        return out
    kept = {k: out[k] for k in ("reason", "message") if k in out}
    kept["omitted"] = f"the other details were over {DETAILS_CAP:,} characters"
    return kept


def value_text(value: Any) -> str:
    """One detail's value as text: lists joined with ``", "``, dicts as
    ``key=value`` pairs, ``None`` as ``none``."""
    if value is None:
        return "none"
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, Mapping):
        return ", ".join(f"{k}={value_text(v)}" for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return ", ".join(value_text(v) for v in value)
    return str(value)


def detail_pairs(details: Mapping[str, Any], limit: int = 400) -> list[tuple[str, str]]:
    """``(key, text)`` of one evaluator's details in the order renderers show
    them: ``reason``, ``message``, then the other keys as they come. Each text is
    capped at ``limit`` characters (head and tail kept); an empty list or string is
    left out. The texts are raw: the caller escapes them for its medium."""
    keys = [k for k in ("reason", "message") if k in details]
    keys += [k for k in details if k not in ("reason", "message")]
    out: list[tuple[str, str]] = []
    for key in keys:
        value = details[key]
        if value in ("", [], {}):
            continue
        out.append((str(key), clip(value_text(value), limit)))
    return out


def explained(
    metadata: Mapping[str, Any], score_field: str | None = None
) -> list[tuple[str, Mapping[str, Any]]]:
    """``(evaluator name, details)`` of a row's metadata: every dict with a
    ``reason``, the evaluator that produced ``score_field`` first."""
    found = [
        (str(name), value)
        for name, value in metadata.items()
        if isinstance(value, Mapping) and value.get("reason")
    ]
    if score_field:
        found.sort(key=lambda item: score_field not in EXPLAINS.get(item[0], ()))
    return found


def explain_lines(
    metadata: Mapping[str, Any],
    score_field: str | None = None,
    *,
    first_only: bool = False,
    max_keys: int | None = None,
    limit: int = 400,
) -> list[tuple[int, str]]:
    """A row's details as ``(level, text)`` lines: level 0 is
    ``"<evaluator>: <reason>"``, level 1 each ``"message: ..."`` and
    ``"<key>: <value>"`` after it. Raw text: the caller escapes and fits it.

    :param first_only: only the evaluator that produced ``score_field`` (or the
        first with a reason).
    :param max_keys: at most this many level-1 lines per evaluator, then
        ``"… N more"``.
    :param limit: characters per value (head and tail kept).
    """
    out: list[tuple[int, str]] = []
    found = explained(metadata, score_field)
    for name, details in found[:1] if first_only else found:
        pairs = detail_pairs(details, limit)
        reason = next((text for key, text in pairs if key == "reason"), "")
        out.append((0, f"{name}: {reason}"))
        rest = [(k, t) for k, t in pairs if k != "reason"]
        shown = rest if max_keys is None else rest[:max_keys]
        out.extend((1, f"{key}: {text}") for key, text in shown)
        if len(shown) < len(rest):
            out.append((1, f"… {len(rest) - len(shown)} more (in the JSON report)"))
    return out
