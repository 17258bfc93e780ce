"""How far a judge agrees with people: labels, Cohen's kappa, Spearman, calibration.

A team labels some examples by hand (a JSONL file of ``{example_id, label}``: pass /
fail, or a score on the judge's scale) and measures its LLM judge against them
before letting it gate a merge (``ctxbench calibrate``, ``--ctxbench-judge-labels``
with ``--ctxbench-min-judge-kappa``). :func:`cohen_kappa` is scikit-learn's
``cohen_kappa_score`` (unweighted, linear or quadratic weights; the same value on
the same labels, tests/test_agreement.py holds the conformance test) and
:func:`spearman` is Spearman's rank correlation with average ranks for ties
(SciPy's ``spearmanr``). :func:`calibrate` pairs a report's judge-scored rows with
the labels and computes everything the command shows.

Pure: no pytest, no HTTP.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .errors import CtxBenchError

__all__ = [
    "Calibration",
    "JUDGED_METRICS",
    "JudgeGating",
    "Labels",
    "LabelsError",
    "calibrate",
    "cohen_kappa",
    "judge_decides",
    "judge_gating",
    "judge_verdict",
    "read_labels",
    "spearman",
]

#: The largest labels file read (bytes): labels are typed by people.
MAX_LABELS_BYTES = 64 * 1024 * 1024
_PASS_WORDS = {"pass": True, "fail": False}


class LabelsError(CtxBenchError, ValueError):
    """A labels file that cannot be used: one message naming the file and line."""


@dataclass(frozen=True)
class Labels:
    """People's labels, read from a JSONL file.

    :param path: the file.
    :param kind: ``"binary"`` (pass / fail) or ``"score"`` (whole numbers).
    :param items: one ``(key, system, label, line)`` per label: ``key`` the
        example (``dataset/id`` when the line names a ``dataset``, else the id),
        ``system`` the System whose row it labels (``None``: any), ``label`` a bool
        or an int.
    """

    path: str
    kind: str
    items: tuple[tuple[str, str | None, Any, int], ...]

    def lookup(self, dataset: str, example_id: str, system: str) -> tuple[Any, int] | None:
        """The label of one row (and its line), or ``None``."""
        return self._index().get((dataset, example_id, system)) or self._index().get(
            (dataset, example_id, None)
        ) or self._index().get(("", example_id, system)) or self._index().get(
            ("", example_id, None)
        )

    def _index(self) -> dict[tuple[str, str, str | None], tuple[Any, int]]:
        cached = self.__dict__.get("_cache")
        if cached is None:
            cached = {}
            for key, system, label, line in self.items:
                dataset, _, ident = key.rpartition("\x00")
                cached[(dataset, ident, system)] = (label, line)
            object.__setattr__(self, "_cache", cached)
        return cached


def read_labels(path: str | os.PathLike[str]) -> Labels:
    """Read a labels file: one JSON object per line, ``{"example_id": ..., "label":
    ...}`` and optionally ``"dataset"`` (when two datasets share ids) and
    ``"system"`` (a label of that System's response only); other keys (a note, the
    labeller) are ignored; blank lines are skipped. A label is ``"pass"`` /
    ``"fail"`` (any case) or ``true`` / ``false``, or a whole number (a score on the
    judge's scale); one file holds one kind.

    :raises LabelsError: naming the file and the line, and how to fix it.
    """
    from ._files import not_regular

    name = os.fspath(path)
    problem = not_regular(name)
    if problem is not None:
        raise LabelsError(f"labels file {name}: {problem}")
    try:
        size = os.path.getsize(name)
        if size > MAX_LABELS_BYTES:
            raise LabelsError(
                f"labels file {name} is {size:,} bytes; labels files are read whole,"
                f" up to {MAX_LABELS_BYTES:,}"
            )
        with open(name, encoding="utf-8-sig") as handle:
            text = handle.read()
    except FileNotFoundError:
        raise LabelsError(f"labels file {name}: no such file") from None
    except IsADirectoryError:
        raise LabelsError(f"labels file {name} is a directory; give a .jsonl file") from None
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise LabelsError(f"labels file {name} cannot be read ({reason})") from None
    from ._json import JSONValueError, strict_loads

    items: list[tuple[str, str | None, Any, int]] = []
    seen: dict[tuple[str, str | None], int] = {}
    kind: str | None = None
    kind_line = 0

    def bad(line: int, what: str) -> LabelsError:
        return LabelsError(
            f"labels file {name}, line {line}: {what}. Each line is one JSON object"
            ' such as {"example_id": "q7", "label": "pass"} (or a whole-number score).'
        )

    for number, raw in enumerate(text.splitlines(), 1):
        if not raw.strip():
            continue
        try:
            obj = strict_loads(raw)
        except json.JSONDecodeError as exc:
            raise bad(number, f"not JSON ({exc.msg}, column {exc.colno})") from None
        except JSONValueError as exc:
            raise bad(number, f"cannot be used ({exc})") from None
        if not isinstance(obj, dict):
            raise bad(number, f"holds {_kind(obj)}, not a JSON object")
        if "example_id" not in obj:
            raise bad(number, "has no 'example_id'")
        ident = obj["example_id"]
        if isinstance(ident, bool) or not isinstance(ident, (str, int)) or (
            isinstance(ident, str) and not ident.strip()
        ):
            raise bad(number, f"'example_id' must be a non-empty string or an integer, got {_kind(ident)}")
        dataset = obj.get("dataset", "")
        system = obj.get("system")
        for key, value in (("dataset", dataset), ("system", system)):
            if value is not None and not isinstance(value, str):
                raise bad(number, f"'{key}' must be a string, got {_kind(value)}")
        if "label" not in obj:
            raise bad(number, "has no 'label'")
        label, this = _label(obj["label"])
        if this is None:
            raise bad(
                number,
                f"'label' must be \"pass\" or \"fail\" (or true/false), or a whole"
                f" number, got {_kind(obj['label'])}",
            )
        if kind is None:
            kind, kind_line = this, number
        elif this != kind:
            raise bad(
                number,
                f"a {this} label in a file of {kind} labels (line {kind_line}); one file"
                " holds pass/fail labels or scores, not both",
            )
        key = f"{dataset}\x00{ident}"
        where = (key, system)
        if where in seen:
            shown = f"{dataset}/{ident}" if dataset else str(ident)
            raise bad(number, f"example {shown!r} is labelled again (first on line {seen[where]})")
        seen[where] = number
        items.append((key, system, label, number))
    if not items:
        raise LabelsError(f"labels file {name} holds no label; add lines such as"
                          ' {"example_id": "q7", "label": "pass"}')
    return Labels(name, kind or "binary", tuple(items))


def _label(value: Any) -> tuple[Any, str | None]:
    if isinstance(value, bool):
        return value, "binary"
    if isinstance(value, str) and value.strip().lower() in _PASS_WORDS:
        return _PASS_WORDS[value.strip().lower()], "binary"
    if isinstance(value, int):
        return value, "score"
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        return int(value), "score"
    return None, None


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        shown = value if len(value) <= 40 else value[:40] + "…"
        return f"the string {json.dumps(shown, ensure_ascii=False)}"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


# --------------------------------------------------------------------- statistics


def cohen_kappa(
    a: Sequence[Any],
    b: Sequence[Any],
    *,
    weights: str | None = None,
    labels: Sequence[Any] | None = None,
) -> float:
    """Cohen's kappa of two raters' labels, as scikit-learn's
    ``cohen_kappa_score(a, b, labels=labels, weights=weights)`` computes it: the
    categories are ``labels`` (default: the sorted labels either rater used) and
    a pair with a label outside them is left out; weights ``"linear"`` and
    ``"quadratic"`` count disagreements by the distance between the categories'
    positions. ``nan`` when the agreement expected by chance is total (both raters
    used one label only), as scikit-learn's 0/0.

    :raises ValueError: for raters of different lengths or an unknown weighting.
    """
    if len(a) != len(b):
        raise ValueError(f"the two raters labelled {len(a)} and {len(b)} items")
    if weights not in (None, "linear", "quadratic"):
        raise ValueError(f"weights must be None, 'linear' or 'quadratic', got {weights!r}")
    cats = list(labels) if labels is not None else sorted(set(a) | set(b))
    pos = {c: i for i, c in enumerate(cats)}
    k = len(cats)
    matrix = [[0] * k for _ in range(k)]
    for x, y in zip(a, b):
        if x in pos and y in pos:
            matrix[pos[x]][pos[y]] += 1
    rows = [sum(r) for r in matrix]
    cols = [sum(matrix[i][j] for i in range(k)) for j in range(k)]
    n = sum(rows)
    if n == 0:
        return math.nan

    def weight(i: int, j: int) -> float:
        if weights is None:
            return 0.0 if i == j else 1.0
        d = abs(i - j)
        return float(d if weights == "linear" else d * d)

    observed = math.fsum(weight(i, j) * matrix[i][j] for i in range(k) for j in range(k))
    expected = math.fsum(weight(i, j) * rows[i] * cols[j] / n for i in range(k) for j in range(k))
    if expected == 0:
        return math.nan
    return 1.0 - observed / expected


def _ranks(values: Sequence[float]) -> list[float]:
    order = sorted(range(len(values)), key=lambda i: values[i])
    ranks = [0.0] * len(values)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        average = (i + j) / 2 + 1
        for t in range(i, j + 1):
            ranks[order[t]] = average
        i = j + 1
    return ranks


def spearman(a: Sequence[float], b: Sequence[float]) -> float:
    """Spearman's rank correlation (ties get their average rank; ``nan`` when a
    rater gave every item the same value, or fewer than two items)."""
    if len(a) != len(b):
        raise ValueError(f"the two raters scored {len(a)} and {len(b)} items")
    if len(a) < 2:
        return math.nan
    ra, rb = _ranks(a), _ranks(b)
    ma, mb = math.fsum(ra) / len(ra), math.fsum(rb) / len(rb)
    cov = math.fsum((x - ma) * (y - mb) for x, y in zip(ra, rb))
    va = math.fsum((x - ma) ** 2 for x in ra)
    vb = math.fsum((y - mb) ** 2 for y in rb)
    if va == 0 or vb == 0:
        return math.nan
    return max(-1.0, min(1.0, cov / math.sqrt(va * vb)))


# -------------------------------------------------------------------- calibration

#: The scores a judge writes on a row, in the order they are looked for.
JUDGE_KEYS = ("judge_pass", "judge_score", "memory_judge")


def judge_verdict(
    scores: Mapping[str, Any], details: Mapping[str, Any] | None, threshold: float
) -> tuple[bool, float, tuple[int, int] | None] | None:
    """What the judge said of one row: ``(passed, rating, scale)`` (the rating on
    the judge's scale, ``scale`` ``None`` for a yes/no judge), or ``None`` when no
    judge scored it. A rubric judge's verdict is its ``judge_pass``; the 1-5 judge
    without a rubric passes at the run's threshold, as its rows do; MemoryJudge's
    YES is 1."""
    details = details or {}
    if "judge_score" in scores:
        score = float(scores["judge_score"])
        own = details.get("llm_judge") if isinstance(details.get("llm_judge"), Mapping) else {}
        scale = own.get("scale")
        if (isinstance(scale, list) and len(scale) == 2
                and all(isinstance(x, int) and not isinstance(x, bool) for x in scale)):
            lo, hi = int(scale[0]), int(scale[1])
        else:
            lo, hi = 1, 5
        rating = own.get("rating")
        if not isinstance(rating, (int, float)) or isinstance(rating, bool):
            rating = lo + score * (hi - lo)
        passed = (
            float(scores["judge_pass"]) >= 1.0 if "judge_pass" in scores else score >= threshold
        )
        return passed, float(rating), (lo, hi)
    if "memory_judge" in scores:
        value = float(scores["memory_judge"])
        return value >= 1.0, value, None
    if "assert_pass" in scores and judge_decides(scores, details, "assert_score"):
        # Assertions with an llm-rubric decide the row: their verdict is the judge's.
        return float(scores["assert_pass"]) >= 1.0, float(scores.get("assert_score", 0.0)), None
    return None


@dataclass
class Calibration:
    """A judge measured against people on one suite (see :func:`calibrate`)."""

    suite: str
    kind: str
    n: int = 0
    agreement: float = math.nan
    kappa: float = math.nan
    weighted_kappa: float | None = None
    spearman: float | None = None
    categories: list[Any] = field(default_factory=list)
    #: rows: people's label; columns: the judge's
    matrix: list[list[int]] = field(default_factory=list)
    disagreements: list[dict[str, Any]] = field(default_factory=list)
    unlabelled: int = 0
    errors: int = 0
    unjudged: int = 0
    #: why a score could not be compared (a label outside the judge's scale)
    problems: list[str] = field(default_factory=list)

    @property
    def gate_kappa(self) -> float:
        """The agreement a minimum kappa is held against: the quadratic-weighted
        kappa for scores, Cohen's kappa for pass/fail."""
        if self.kind == "score" and self.weighted_kappa is not None:
            return self.weighted_kappa
        return self.kappa

    @property
    def gate_measure(self) -> str:
        return "quadratic-weighted kappa" if self.kind == "score" else "Cohen's kappa"

    def to_dict(self) -> dict[str, Any]:
        from .results import json_safe

        out: dict[str, Any] = {
            "suite": self.suite,
            "kind": self.kind,
            "n": self.n,
            "agreement": json_safe(self.agreement),
            "kappa": json_safe(self.kappa),
            "categories": [("pass" if c is True else "fail" if c is False else c)
                           for c in self.categories],
            "confusion": self.matrix,
            "disagreements": self.disagreements,
            "unlabelled": self.unlabelled,
            "errors": self.errors,
            "unjudged": self.unjudged,
        }
        if self.weighted_kappa is not None:
            out["weighted_kappa"] = json_safe(self.weighted_kappa)
        if self.spearman is not None:
            out["spearman"] = json_safe(self.spearman)
        if self.problems:
            out["problems"] = self.problems
        return out


#: Disagreeing examples listed at most per suite.
MAX_DISAGREEMENTS = 200


def calibrate(
    rows: Iterable[Mapping[str, Any]],
    labels: Labels,
    thresholds: Mapping[str, float],
) -> list[Calibration]:
    """Pair each suite's judge-scored rows with the labels and measure agreement.

    :param rows: report rows (``suite``, ``system``, ``dataset``, ``example_id``,
        ``scores``, ``metadata``, ``error``), as the JSON report holds them.
    :param labels: :func:`read_labels`' result.
    :param thresholds: suite label → its threshold (for the 1-5 judge's verdict).
    :returns: one :class:`Calibration` per suite with a judge-scored row, in the
        order the suites first appear.
    """
    out: dict[str, Calibration] = {}
    pairs: dict[str, list[tuple[Any, Any, float, Mapping[str, Any], tuple[int, int] | None]]] = {}
    for row in rows:
        suite = str(row.get("suite", row.get("system", "")))
        scores = row.get("scores") or {}
        metadata = row.get("metadata") or {}
        error = row.get("error")
        found = labels.lookup(str(row.get("dataset", "")), str(row.get("example_id", "")),
                              str(row.get("system", "")))
        judged = judge_verdict(scores, metadata, float(thresholds.get(suite, 0.7)))
        if judged is None and error is None:
            if found is not None:
                out.setdefault(suite, Calibration(suite, labels.kind)).unjudged += 1
            continue
        cal = out.setdefault(suite, Calibration(suite, labels.kind))
        if error is not None:
            cal.errors += 1
            continue
        if found is None:
            cal.unlabelled += 1
            continue
        assert judged is not None
        label, line = found
        passed, rating, scale = judged
        if labels.kind == "binary":
            pairs.setdefault(suite, []).append((label, passed, rating, row, scale))
            continue
        if scale is None:
            cal.problems.append(
                f"{_name(row)}: scored by a yes/no judge; score labels need a judge with a"
                " scale (a rubric, or the 1-5 judge)"
            )
            continue
        if not scale[0] <= label <= scale[1]:
            cal.problems.append(
                f"{_name(row)}: the label {label} (line {line}) is outside the judge's"
                f" scale {scale[0]}-{scale[1]}"
            )
            continue
        pairs.setdefault(suite, []).append((label, _round(rating), rating, row, scale))
    for suite, cal in out.items():
        got = pairs.get(suite, [])
        cal.n = len(got)
        if not got:
            continue
        people = [p for p, _, _, _, _ in got]
        judge = [j for _, j, _, _, _ in got]
        if labels.kind == "binary":
            cats: list[Any] = [True, False]
        else:
            lows = [s[0] for *_, s in got if s]
            highs = [s[1] for *_, s in got if s]
            cats = list(range(min(lows), max(highs) + 1))
        cal.categories = cats
        cal.agreement = sum(1 for p, j in zip(people, judge) if p == j) / len(got)
        cal.kappa = cohen_kappa(people, judge, labels=cats)
        if labels.kind == "score":
            cal.weighted_kappa = cohen_kappa(people, judge, labels=cats, weights="quadratic")
            cal.spearman = spearman([float(p) for p in people], [r for _, _, r, _, _ in got])
        pos = {c: i for i, c in enumerate(cats)}
        cal.matrix = [[0] * len(cats) for _ in cats]
        for p, j in zip(people, judge):
            cal.matrix[pos[p]][pos[j]] += 1
        for p, j, r, row, _ in got:
            if p == j or len(cal.disagreements) >= MAX_DISAGREEMENTS:
                continue
            own = (row.get("metadata") or {}).get("llm_judge")
            entry = {
                "example": _name(row),
                "label": _shown_label(p),
                "judge": _shown_label(j),
            }
            if labels.kind == "score" and r != j:
                entry["judge_rating"] = round(r, 4)
            if isinstance(own, Mapping) and isinstance(own.get("judge_reason"), str):
                entry["judge_reason"] = own["judge_reason"]
            cal.disagreements.append(entry)
    return list(out.values())


def _round(x: float) -> int:
    return int(math.floor(x + 0.5))


def _shown_label(value: Any) -> Any:
    if value is True:
        return "pass"
    if value is False:
        return "fail"
    return value


def _name(row: Mapping[str, Any]) -> str:
    dataset = row.get("dataset")
    ident = str(row.get("example_id", ""))
    return f"{dataset}/{ident}" if dataset else ident


# ------------------------------------------------------------------ gating on it

#: Primary scores that a judge decides.
JUDGE_FIELDS = frozenset({"judge_score", "memory_judge", "memory_judge_raw"})
#: The gates (and max-drop metrics) whose value a judge's verdicts decide: pass rate
#: and mean score, and the cost of a pass (its denominator is the passes).
JUDGED_METRICS = frozenset({"pass_rate", "mean_score", "cost_of_pass", "cost_of_pass_usd"})


def judge_decides(scores: Mapping[str, Any], metadata: Mapping[str, Any], field: str | None) -> bool:
    """Whether a row's pass or fail is a judge's: its primary score is a judge's, or
    its assertions, which decide it, include one that asks a judge (llm-rubric)."""
    name = field or str(metadata.get("score_field") or "f1")
    if name in JUDGE_FIELDS:
        return True
    if name == "assert_score":
        own = metadata.get("assertions")
        by_type = own.get("by_type") if isinstance(own, Mapping) else None
        if isinstance(by_type, Mapping):
            return any(str(t).removeprefix("not-") == "llm-rubric" for t in by_type)
    return False


@dataclass
class JudgeGating:
    """The judge's agreement per suite, and the gates it leaves not enforced.

    :param labels: the labels file.
    :param min_kappa: ``--ctxbench-min-judge-kappa`` (``None``: measured, not gated).
    :param calibrations: one per suite with a judge-scored row or a labelled one.
    :param judged: the suites whose rows a judge decides.
    :param not_enforced: suite → why its judge-scored gates are not enforced.
    """

    labels: str
    kind: str
    min_kappa: float | None
    calibrations: list[Calibration]
    judged: list[str]
    not_enforced: dict[str, str]

    def reason(self, suite: str, metric: str) -> str | None:
        """Why the gate on ``metric`` of ``suite`` is not enforced, or ``None``."""
        return self.not_enforced.get(suite) if metric in JUDGED_METRICS else None

    def to_dict(self) -> dict[str, Any]:
        by_suite = {c.suite: c for c in self.calibrations}
        suites = []
        for label in dict.fromkeys([*self.judged, *by_suite]):
            cal = by_suite.get(label) or Calibration(label, self.kind)
            entry = cal.to_dict()
            entry["judge_scored"] = label in self.judged
            entry["measure"] = cal.gate_measure
            from .results import json_safe

            entry["gate_kappa"] = json_safe(cal.gate_kappa)
            if label in self.not_enforced:
                entry["not_enforced"] = self.not_enforced[label]
            suites.append(entry)
        return {
            "labels": self.labels,
            "kind": self.kind,
            "min_kappa": self.min_kappa,
            "suites": suites,
        }

    def lines(self) -> list[str]:
        """The terminal's lines (plain text; the caller makes them inert)."""
        head = f"judge agreement with {self.labels}"
        if self.min_kappa is not None:
            head += f" (gates need {self.kind_measure()} >= {self.min_kappa:g})"
        out = [head + ":"]
        by_suite = {c.suite: c for c in self.calibrations}
        for label in dict.fromkeys([*self.judged, *by_suite]):
            cal = by_suite.get(label) or Calibration(label, self.kind)
            out.append(f"  {label}: {summary_line(cal)}")
            if label in self.not_enforced:
                out.append(f"    its judge-scored gates are NOT ENFORCED: {self.not_enforced[label]}")
        return out

    def kind_measure(self) -> str:
        return "quadratic-weighted kappa" if self.kind == "score" else "Cohen's kappa"


def summary_line(cal: Calibration) -> str:
    """``n 40, agreement 0.85, kappa 0.62 ...`` for one suite."""
    if cal.n == 0:
        text = "no labelled example was judged"
    else:
        text = f"n {cal.n}, agreement {_f(cal.agreement)}, kappa {_f(cal.kappa)}"
        if cal.weighted_kappa is not None:
            text += f", quadratic-weighted kappa {_f(cal.weighted_kappa)}"
        if cal.spearman is not None:
            text += f", Spearman {_f(cal.spearman)}"
        if cal.disagreements:
            text += f"; {len(cal.disagreements)} disagreement(s)"
    extra = [f"{k} {v}" for k, v in (("unlabelled", cal.unlabelled), ("errors", cal.errors),
                                      ("not judged", cal.unjudged)) if v]
    if extra:
        text += f" ({', '.join(extra)})"
    return text


def _f(x: float) -> str:
    return "undefined" if isinstance(x, float) and math.isnan(x) else f"{x:.3g}"


def judge_gating(
    rows: Iterable[Mapping[str, Any]],
    suites: Iterable[Mapping[str, Any]],
    labels: Labels,
    min_kappa: float | None,
) -> JudgeGating:
    """Measure each suite's judge against ``labels`` and, with ``min_kappa``, name
    the suites whose judge-scored gates are not enforced: those a judge decides whose
    agreement (:attr:`Calibration.gate_kappa`) is below ``min_kappa``, undefined, or
    measured on no labelled example.

    :param rows: the report's rows (dicts with ``suite``).
    :param suites: the report's suites (``label``, ``threshold``, ``score_field``).
    """
    rows = list(rows)
    info = {str(s["label"]): s for s in suites}
    thresholds = {label: float(s.get("threshold", 0.7)) for label, s in info.items()}
    calibrations = calibrate(rows, labels, thresholds)
    judged = list(dict.fromkeys(
        str(r["suite"]) for r in rows
        if r.get("error") is None
        and judge_decides(r.get("scores") or {}, r.get("metadata") or {},
                          (info.get(str(r["suite"])) or {}).get("score_field"))
    ))
    not_enforced: dict[str, str] = {}
    if min_kappa is not None:
        by_suite = {c.suite: c for c in calibrations}
        name = os.path.basename(labels.path)
        for label in judged:
            cal = by_suite.get(label) or Calibration(label, labels.kind)
            measure = cal.gate_measure
            if cal.n == 0:
                not_enforced[label] = f"no labelled example of this suite was judged ({name})"
            elif math.isnan(cal.gate_kappa):
                not_enforced[label] = (
                    f"the judge's {measure} with {name} is undefined on {cal.n} labelled"
                    " example(s) (one label only: agreement by chance is total)"
                )
            elif cal.gate_kappa < min_kappa:
                not_enforced[label] = (
                    f"the judge's {measure} with {name} is {cal.gate_kappa:.3g} < {min_kappa:g}"
                    f" on {cal.n} labelled example(s)"
                )
    return JudgeGating(labels.path, labels.kind, min_kappa, calibrations, judged, not_enforced)
