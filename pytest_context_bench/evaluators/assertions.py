"""Assertions: an example's own checks, in promptfoo's vocabulary.

An example may carry ``assert``: a list of ``{type, value, threshold, weight,
metric}`` (promptfoo's test format). :class:`Assertions` runs them on the System's
``response`` and reports every assertion's ``(pass, score, reason)`` in the row's
details. Its scores:

- ``assert_score``: the weighted mean of the assertions' scores (weights default to
  1; weight 0 counts for nothing); the example's primary score.
- ``assert_pass``: 1.0 when the example passes, else 0.0. With a test-level
  ``threshold`` the example passes when ``assert_score`` reaches it; without one,
  only when every assertion passes. This verdict, not the suite's threshold, decides
  the example's status (:data:`VERDICT_KEYS`).
- one score per ``metric`` name: the weighted mean of that metric's assertions.

Each type is a small pure function of ``(output, value, assertion, context)``
returning :class:`Result`; :data:`CHECKS` is the table by name, the vocabulary
docs/assertions.md documents. A ``not-`` prefix inverts the verdict (and the score
of a pass/fail check). :func:`compile_asserts` checks a list once (unknown type with
a did-you-mean, invalid regex, invalid JSON Schema, unresolvable ``python`` target)
and is what loaders call before the first example runs.

Semantics follow promptfoo 0.121 (its verdicts are recorded in
tests/oracles/promptfoo/ and checked case by case); docs/differences.md lists where
we differ on purpose.
"""

from __future__ import annotations

import difflib
import functools
import importlib
import importlib.util
import inspect
import json
import math
import os
import re
import threading
from dataclasses import dataclass
from typing import Any, Callable, Final, Mapping, Sequence

from .._json import js_number as _js_number
from ._jsontext import _strict_json, _yaml_json, iter_json_objects
from ..errors import ExampleDataError
from ..metrics.scores import ASSERT_PASS, ASSERT_SCORE, VERDICT_KEYS

__all__ = [
    "ASSERT_PASS",
    "ASSERT_SCORE",
    "AssertionError_",
    "Assertions",
    "CHECKS",
    "Compiled",
    "JUDGED_TYPES",
    "KNOWN_TYPES",
    "OWN_TYPES",
    "Result",
    "VERDICT_KEYS",
    "compile_asserts",
    "metric_names",
    "run_asserts",
    "uses_judge",
]

def metric_names(compiled: Sequence[Compiled]) -> set[str]:
    """The ``metric`` names of a compiled list, those of assert-sets included."""
    names: set[str] = set()
    for a in compiled:
        if a.metric:
            names.add(a.metric)
        names |= metric_names(a.inner)
    return names


@functools.cache
def _reserved_metrics() -> frozenset[str]:
    """Score keys an assertion's ``metric`` may not take: ours and every built-in
    evaluator's (a clash would make each row an error)."""
    from . import SCORE_KEYS

    return frozenset({ASSERT_SCORE, ASSERT_PASS, *(k for keys in SCORE_KEYS.values() for k in keys)})


class AssertionError_(ValueError):
    """An assertion list that cannot run (unknown type, invalid regex or schema...).

    :param index: the 0-based position of the assertion in the list (``None`` when
        the list itself is wrong).
    """

    def __init__(self, message: str, index: int | None = None) -> None:
        super().__init__(message)
        self.index = index


@dataclass(frozen=True)
class Result:
    """One assertion's outcome: whether it passed, its score in [0, 1] (python
    assertions may return other numbers), and why."""

    passed: bool
    score: float
    reason: str
    #: named scores a python assertion returned (``named_scores``)
    named: Mapping[str, float] | None = None


# ----------------------------------------------------------------- output text


def output_text(value: Any) -> str:
    """The output as promptfoo sees it: a string as is, anything else as JSON."""
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _js_lower(text: str) -> str:
    # JavaScript's toLowerCase() is Unicode's default lower-casing, as str.lower()
    # (İ becomes "i̇" in both); kept as one function so the choice is visible.
    return text.lower()


def _value_text(value: Any) -> str:
    """``String(value)`` in JavaScript: how promptfoo turns a non-string value into
    the text it looks for (numbers as JS prints them, objects as JSON)."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return _js_number(value)
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _quoted(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False) if isinstance(value, str) else _value_text(value)


def _split_list(value: Any) -> list[str]:
    """contains-any/-all's value: a list (items as ``String(item)``), or a string
    split as promptfoo splits it: comma-separated, each field trimmed, empty fields
    skipped; a field in double quotes may hold commas (``\\"``, ``\\\\`` and ``""``
    escape inside it).

    :raises ValueError: an unterminated quote, or text after a closing quote.
    """
    if isinstance(value, (list, tuple)):
        return [_value_text(v) for v in value]
    text = _value_text(value)
    items: list[str] = []
    i, n = 0, len(text)
    while i < n:
        while i < n and text[i] in " \t":
            i += 1
        if i < n and text[i] == '"':
            i += 1
            field = ""
            while True:
                if i >= n:
                    raise ValueError("unterminated quoted field in the value")
                ch = text[i]
                if ch == "\\" and i + 1 < n and text[i + 1] in '"\\':
                    field += text[i + 1]
                    i += 2
                elif ch == '"' and text[i + 1:i + 2] == '"':
                    field += '"'
                    i += 2
                elif ch == '"':
                    i += 1
                    break
                else:
                    field += ch
                    i += 1
            while i < n and text[i] in " \t":
                i += 1
            if i < n and text[i] != ",":
                raise ValueError("expected a comma after a quoted field in the value")
            items.append(field)
            i += 1
            continue
        end = text.find(",", i)
        end = n if end < 0 else end
        field = text[i:end].strip()
        if field:
            items.append(field)
        i = end + 1
    return items


# -------------------------------------------------------------------- checks


@dataclass(frozen=True)
class Compiled:
    """One assertion, checked and ready to run."""

    type: str  # as written, with its not- prefix
    base: str  # without it
    inverse: bool
    value: Any
    threshold: float | None
    weight: float
    metric: str | None
    raw: Mapping[str, Any]
    #: what compiling prepared: a regex, a schema validator, a Python function, the
    #: inner assertions of an assert-set
    prepared: Any = None
    inner: tuple["Compiled", ...] = ()


Check = Callable[[str, "Compiled", Mapping[str, Any]], Result]


def _binary(passed: bool, inverse: bool, said: str, negated: str) -> Result:
    ok = passed != inverse
    return Result(ok, 1.0 if ok else 0.0, "Assertion passed" if ok else (negated if inverse else said))


def _equals(output: str, a: Compiled, ctx: Mapping[str, Any]) -> Result:
    value = a.value
    if isinstance(value, (dict, list)):
        try:
            parsed = _strict_json(output)
            same = _json_equal(parsed, value)
        except ExampleDataError:
            raise
        except ValueError:
            same = False
        shown = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    else:
        shown = _value_text(value)
        same = output == shown
    return _binary(
        same, a.inverse,
        f'Expected output "{output}" to equal "{shown}"',
        f'Expected output "{output}" to not equal "{shown}"',
    )


def _json_equal(a: Any, b: Any) -> bool:
    """Deep equality of two JSON values (1 and 1.0 equal, as in JavaScript; a bool
    is never a number)."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_json_equal(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_json_equal(x, y) for x, y in zip(a, b))
    return type(a) is type(b) and a == b


def _contains(output: str, a: Compiled, ctx: Mapping[str, Any]) -> Result:
    value = _value_text(a.value)
    return _binary(
        value in output, a.inverse,
        f'Expected output to contain "{value}"',
        f'Expected output to not contain "{value}"',
    )


def _icontains(output: str, a: Compiled, ctx: Mapping[str, Any]) -> Result:
    value = _value_text(a.value)
    return _binary(
        _js_lower(value) in _js_lower(output), a.inverse,
        f'Expected output to contain "{value}"',
        f'Expected output to not contain "{value}"',
    )


def _any_all(kind: str, fold: bool) -> Check:
    def check(output: str, a: Compiled, ctx: Mapping[str, Any]) -> Result:
        items = a.prepared
        text = _js_lower(output) if fold else output
        found = [(_js_lower(i) if fold else i) in text for i in items]
        shown = ", ".join(items)
        if kind == "any":
            return _binary(
                any(found), a.inverse,
                f'Expected output to contain one of "{shown}"',
                f'Expected output to not contain any of "{shown}"',
            )
        missing = [i for i, f in zip(items, found) if not f]
        return _binary(
            all(found), a.inverse,
            f'Expected output to contain all of [{shown}]. Missing: [{", ".join(missing)}]',
            f'Expected output to not contain all of [{shown}]',
        )

    return check


def _starts_with(output: str, a: Compiled, ctx: Mapping[str, Any]) -> Result:
    value = _value_text(a.value)
    return _binary(
        output.startswith(value), a.inverse,
        f'Expected output to start with "{value}"',
        f'Expected output to not start with "{value}"',
    )


#: Seconds one regex may search one output: a pattern that backtracks without end
#: on a hostile output (``(a+)+$`` on ``aaaa…b``) makes that row an error instead
#: of hanging the run.
REGEX_TIMEOUT: Final = 5.0


def _regex(output: str, a: Compiled, ctx: Mapping[str, Any]) -> Result:
    pattern = a.prepared
    text = utf16_units(output)
    if hasattr(pattern, "fullmatch") and type(pattern).__module__ != "re":
        try:
            found = pattern.search(text, timeout=REGEX_TIMEOUT) is not None
        except TimeoutError:
            raise ExampleDataError(
                f"the regex {_value_text(a.value)!r} searched this output for more than"
                f" {REGEX_TIMEOUT:g} s (catastrophic backtracking); simplify the pattern"
            ) from None
    else:
        found = pattern.search(text) is not None
    return _binary(
        found, a.inverse,
        f'Expected output to match regex "{_value_text(a.value)}"',
        f'Expected output to not match regex "{_value_text(a.value)}"',
    )


def _levenshtein(output: str, a: Compiled, ctx: Mapping[str, Any]) -> Result:
    value = _value_text(a.value)
    limit = 5.0 if a.threshold is None else a.threshold
    distance = _utf16_levenshtein(output, value)
    return _binary(
        distance <= limit, a.inverse,
        f"Levenshtein distance {distance} is greater than threshold {_js_number(limit)}",
        f"Levenshtein distance {distance} is less than or equal to threshold {_js_number(limit)}",
    )


def _utf16_levenshtein(a: str, b: str) -> int:
    """Edit distance over UTF-16 code units, as JavaScript strings count them (an
    emoji outside the BMP is two units)."""
    ua = a.encode("utf-16-le", "surrogatepass")
    ub = b.encode("utf-16-le", "surrogatepass")
    sa = [ua[i:i + 2] for i in range(0, len(ua), 2)]
    sb = [ub[i:i + 2] for i in range(0, len(ub), 2)]
    if len(sa) < len(sb):
        sa, sb = sb, sa
    previous = list(range(len(sb) + 1))
    for i, ca in enumerate(sa, 1):
        current = [i]
        for j, cb in enumerate(sb, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ca != cb)))
        previous = current
    return previous[-1]


def _schema_errors(a: Compiled, value: Any) -> str | None:
    validator = a.prepared
    if validator is None:
        return None
    try:
        errors = sorted(validator.iter_errors(value), key=lambda e: list(e.path))
    except Exception as exc:  # an unresolvable $ref (never fetched): the row's error
        raise ExampleDataError(
            f"the JSON Schema of this {a.type} assertion cannot be applied:"
            f" {type(exc).__name__}: {exc}"
        ) from None
    if not errors:
        return None
    return ", ".join(_schema_error_text(e) for e in errors)


def _schema_error_text(error: Any) -> str:
    path = "".join(f"/{p}" for p in error.path)
    return f"{path} {error.message}".strip()


def _is_json(output: str, a: Compiled, ctx: Mapping[str, Any]) -> Result:
    try:
        parsed = _strict_json(output)
    except ExampleDataError:
        raise
    except ValueError:
        ok = a.inverse
        return Result(ok, 1.0 if ok else 0.0, "Assertion passed" if ok else "Expected output to be valid JSON")
    problem = _schema_errors(a, parsed)
    if problem is not None:
        ok = a.inverse
        return Result(ok, 1.0 if ok else 0.0,
                      "Assertion passed" if ok else f"JSON does not conform to the provided schema. Errors: {problem}")
    ok = not a.inverse
    return Result(ok, 1.0 if ok else 0.0, "Assertion passed" if ok else "Expected output to not be valid JSON")


def _contains_json(output: str, a: Compiled, ctx: Mapping[str, Any]) -> Result:
    values = (v for v in iter_json_objects(output) if isinstance(v, dict))
    problems = []
    seen = False
    for value in values:
        seen = True
        problem = _schema_errors(a, value)
        if problem is None:
            ok = not a.inverse
            return Result(ok, 1.0 if ok else 0.0, "Assertion passed" if ok else "Expected output to not contain valid JSON")
        problems.append(problem)
    if not seen:
        ok = a.inverse
        return Result(ok, 1.0 if ok else 0.0, "Assertion passed" if ok else "Expected output to contain valid JSON")
    ok = a.inverse
    return Result(ok, 1.0 if ok else 0.0,
                  "Assertion passed" if ok else f"JSON does not conform to the provided schema. Errors: {problems[-1]}")


def _latency(output: str, a: Compiled, ctx: Mapping[str, Any]) -> Result:
    latency = ctx.get("latency_ms")
    if latency is None:
        raise ExampleDataError("a latency assertion needs the call's latency, and this row has none")
    limit = a.threshold
    assert limit is not None  # compile_asserts requires it
    ok = (latency <= limit) != a.inverse
    said = f"Latency {_js_number(round(latency))}ms is greater than threshold {_js_number(limit)}ms"
    return Result(ok, 1.0 if ok else 0.0, "Assertion passed" if ok else said)


def _cost(output: str, a: Compiled, ctx: Mapping[str, Any]) -> Result:
    cost = ctx.get("cost")
    if cost is None:
        raise ExampleDataError(
            "a cost assertion needs the call's cost, and this row has none (set prices:"
            " --ctxbench-price, or have the System report api_usage with prices set)"
        )
    limit = a.threshold
    assert limit is not None
    ok = (cost <= limit) != a.inverse
    said = f"Cost {cost:.4f} is greater than threshold {_js_number(limit)}"
    return Result(ok, 1.0 if ok else 0.0, "Assertion passed" if ok else said)


# ------------------------------------------------------------ agent budgets


def _budget(kind: str, count: int, a: Compiled, what: str) -> Result:
    limit = a.prepared
    ok = (count <= limit) != a.inverse
    if ok:
        return Result(True, 1.0, "Assertion passed")
    if a.inverse:
        return Result(False, 0.0, f"{what} {count:,}, within {kind} {limit:,} (not-{kind} wants more)")
    return Result(False, 0.0, f"{what} {count:,}, more than {kind} {limit:,}")


def _trajectory_error(kind: str, exc: Exception) -> ExampleDataError:
    return ExampleDataError(f"a {kind} assertion cannot count: the System's trajectory: {exc}")


def _max_steps(output: str, a: Compiled, ctx: Mapping[str, Any]) -> Result:
    from .trajectory import TrajectoryError, count_assistant_steps

    processed = ctx.get("processed") or {}
    trajectory = processed.get("trajectory")
    if trajectory is None:
        raise ExampleDataError(
            "a max-steps assertion needs the System's steps, and this row has none (return"
            " them as 'trajectory': a list of chat messages)"
        )
    try:
        steps = count_assistant_steps(trajectory)
    except TrajectoryError as exc:
        raise _trajectory_error("max-steps", exc) from None
    return _budget("max-steps", steps, a, "Assistant steps in the trajectory:")


def _max_tool_calls(output: str, a: Compiled, ctx: Mapping[str, Any]) -> Result:
    from .trajectory import TrajectoryError, count_tool_calls

    processed = ctx.get("processed") or {}
    try:
        calls = count_tool_calls(processed.get("trajectory"), processed.get("tool_calls"))
    except TrajectoryError as exc:
        raise _trajectory_error("max-tool-calls", exc) from None
    return _budget("max-tool-calls", calls, a, "Tool calls:")


def _max_tokens(output: str, a: Compiled, ctx: Mapping[str, Any]) -> Result:
    tokens = ctx.get("tokens")
    if tokens is None:
        tokens = _reported_tokens((ctx.get("processed") or {}).get("api_usage"))
    if tokens is None:
        raise ExampleDataError(
            "a max-tokens assertion needs the tokens of the System's LLM calls, and this"
            " row has none (call the LLM through pytest_context_bench.http_client() or"
            " --ctxbench-proxy, or have the System report api_usage)"
        )
    return _budget("max-tokens", tokens, a, "LLM tokens (prompt + completion):")


def _reported_tokens(usage: Any) -> int | None:
    """prompt + completion tokens of a System's own ``api_usage`` (``None`` when it
    reports neither; a count that is not a whole number >= 0 is the row's error,
    as the engine's accounting already makes it)."""
    if not isinstance(usage, Mapping):
        return None
    counts = [usage.get(k) for k in ("prompt_tokens", "completion_tokens")]
    if all(c is None for c in counts):
        return None
    total = 0
    for c in counts:
        if c is None:
            continue
        if isinstance(c, bool) or not isinstance(c, (int, float)) or not math.isfinite(c) or c < 0 or c != int(c):
            raise ExampleDataError(f"a max-tokens assertion cannot count the System's api_usage: {c!r} is not a token count")
        total += int(c)
    return total


def _python(output: str, a: Compiled, ctx: Mapping[str, Any]) -> Result:
    func = a.prepared
    context = dict(ctx.get("python_context") or {})
    context["config"] = a.raw.get("config") or {}
    returned = func(output, context)
    if inspect.isawaitable(returned):
        returned = _await(returned)
    return _python_result(returned, a)


def _await(awaitable: Any) -> Any:
    """Run an ``async def`` assertion's coroutine to its end (in a thread of its own
    when this thread already runs an event loop)."""
    import asyncio

    async def wrap() -> Any:
        return await awaitable

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(wrap())
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, wrap()).result()


def _python_result(returned: Any, a: Compiled) -> Result:
    named_scores: dict[str, float] | None = None
    result = _python_verdict(returned, a)
    if isinstance(returned, Mapping) and isinstance(returned.get("named_scores"), Mapping):
        named_scores = {str(k): float(v) for k, v in returned["named_scores"].items()
                        if isinstance(v, (int, float)) and not isinstance(v, bool)}
        return Result(result.passed, result.score, result.reason, named_scores)
    return result


def _python_verdict(returned: Any, a: Compiled) -> Result:
    """What a python assertion returned, as promptfoo reads it: a bool (or the
    string "true"/"false"), a number (pass when > 0, or >= the assertion's
    threshold), or ``{pass, score, reason}``. ``not-`` flips the verdict and keeps
    the score. Anything else fails with score 0 and says what came back."""
    if isinstance(returned, str) and returned.strip().lower() in ("true", "false"):
        returned = returned.strip().lower() == "true"
    elif isinstance(returned, str) and _number(returned) is not None:
        returned = _number(returned)
    if isinstance(returned, bool):
        ok, score, reason = returned, 1.0 if returned else 0.0, None
    elif isinstance(returned, (int, float)):
        score = float(returned)
        if math.isnan(score):
            return Result(False, 0.0, "the python assertion returned NaN")
        ok = score >= a.threshold if a.threshold is not None else score > 0
        reason = None
    elif isinstance(returned, Mapping) and _grading_result(returned):
        ok = bool(returned["pass"] if "pass" in returned else returned["pass_"])
        score = float(returned["score"])
        reason = str(returned["reason"])
        if a.threshold is not None and score < a.threshold:
            return Result(a.inverse, score, f"Python score {_js_number(score)} is less than threshold {_js_number(a.threshold)}: {reason}")
    else:
        shown = json.dumps(returned, indent=2, default=repr)
        return Result(False, 0.0, (
            "Python code execution failed: Python assertion must return a boolean, number,"
            f" or {{pass, score, reason}} object. Instead got:\n{shown}"
        ))
    if a.inverse:
        ok = not ok
        if isinstance(returned, bool):
            score = 1.0 if ok else 0.0
    if reason is None or (a.inverse and not ok):
        said = "true" if a.inverse else "false"
        reason = "Assertion passed" if ok else f"Python code returned {said}\n{_value_text(a.value)}"
    return Result(ok, score, reason)


def _grading_result(value: Mapping[str, Any]) -> bool:
    verdict = value.get("pass", value.get("pass_"))
    score = value.get("score")
    return (
        isinstance(verdict, bool)
        and isinstance(score, (int, float)) and not isinstance(score, bool)
        and isinstance(value.get("reason"), str)
    )


def _llm_rubric(output: str, a: Compiled, ctx: Mapping[str, Any]) -> Result:
    """promptfoo's model-graded check: the run's judge grades the output against the
    rubric (evaluators/llm_rubric.py has the prompt and the rules)."""
    judge = ctx.get("judge")
    if judge is None:
        raise ExampleDataError(
            "the llm-rubric assertion needs an LLM judge: run with"
            " --ctxbench-judge-url=URL (or give Assertions(judge=LLMJudge(...)))"
        )
    from .judges import grade_llm_rubric

    passed, score, reason = grade_llm_rubric(judge, str(a.value), output, a.threshold, a.inverse)
    return Result(passed, score, reason)


def _tool_call(output: str, a: Compiled, ctx: Mapping[str, Any]) -> Result:
    """The System's ``tool_calls`` against the assertion's expected calls, with
    ToolCallMatch's rules (docs/evaluators.md#toolcallmatch). Without a threshold
    the verdict decides (score 1 or 0); with one, ``tool_call_f1`` must reach it
    (and is the score)."""
    from .tool_calls import match_tool_calls, parse_calls, parse_tools, ToolSpecError

    expected, options = a.prepared
    try:
        calls, _notes = parse_calls(ctx.get("tool_calls"))
    except ValueError as exc:
        raise ExampleDataError(str(exc)) from None
    raw_tools = ctx.get("tools")
    try:
        tools = parse_tools(raw_tools) if raw_tools is not None else None
    except ToolSpecError as exc:
        raise ExampleDataError(str(exc)) from None
    result = match_tool_calls(calls, expected, tools, **options)
    if a.threshold is not None:
        ok = result.f1 >= a.threshold
        score = result.f1
        said = (f"Tool call F1 {_js_number(round(result.f1, 4))} is less than threshold"
                f" {_js_number(a.threshold)}: " + "; ".join(result.misses[:3]))
    else:
        ok, score = result.passed, 1.0 if result.passed else 0.0
        said = "Expected the tool calls to match: " + "; ".join(result.misses[:3])
        if len(result.misses) > 3:
            said += f"; and {len(result.misses) - 3} more"
    if a.inverse:
        ok = not ok
        if a.threshold is None:
            score = 1.0 if ok else 0.0
        said = "Expected the tool calls not to match the expected ones"
    return Result(ok, score, "Assertion passed" if ok else said)


#: type name (without ``not-``) → its check. Adding a type is adding a row here and
#: a paragraph in docs/assertions.md.
CHECKS: Final[Mapping[str, Check]] = {
    "equals": _equals,
    "contains": _contains,
    "icontains": _icontains,
    "contains-any": _any_all("any", False),
    "contains-all": _any_all("all", False),
    "icontains-any": _any_all("any", True),
    "icontains-all": _any_all("all", True),
    "starts-with": _starts_with,
    "regex": _regex,
    "is-json": _is_json,
    "contains-json": _contains_json,
    "levenshtein": _levenshtein,
    "python": _python,
    "latency": _latency,
    "cost": _cost,
    "max-steps": _max_steps,
    "max-tool-calls": _max_tool_calls,
    "max-tokens": _max_tokens,
    "tool-call": _tool_call,
    "llm-rubric": _llm_rubric,
}

#: The agent budgets: their ``value`` is a whole number >= 0 (docs/assertions.md).
_BUDGETS: Final[Mapping[str, str]] = {
    "max-steps": "assistant steps",
    "max-tool-calls": "tool calls",
    "max-tokens": "LLM tokens",
}

#: The types that ask an LLM judge: promptfoo's verdicts for them are recorded
#: against a scripted grader (tests/oracles/promptfoo/rubric_cases.json), apart from
#: the other types' oracle.
JUDGED_TYPES: Final = frozenset({"llm-rubric"})

#: The types that are ours, not promptfoo's (promptfoo's oracle cannot judge them):
#: the agent budgets (tested in test_assertions.py) and ``tool-call``,
#: ToolCallMatch's check, whose reference is BFCL's checker
#: (tests/test_tool_calls_bfcl.py).
OWN_TYPES: Final = frozenset({*_BUDGETS, "tool-call"})

#: Every type name accepted, ``not-`` forms and ``assert-set`` included.
KNOWN_TYPES: Final[tuple[str, ...]] = tuple(
    [*CHECKS, *(f"not-{t}" for t in CHECKS), "assert-set"]
)

#: promptfoo types this version does not run, and why (named in the error).
_NOT_HERE: Final[Mapping[str, str]] = {
    "javascript": "JavaScript is not run here; write the check as a python assertion",
}


# ----------------------------------------------------------------- compiling


def compile_asserts(
    raw: Any,
    *,
    base_dir: str | None = None,
    threshold: Any = None,
    variables: Mapping[str, Any] | None = None,
) -> tuple[Compiled, ...]:
    """Check an example's ``assert`` list (and its test-level ``threshold``) and
    prepare every assertion.

    :param raw: the ``assert`` value.
    :param base_dir: the directory ``file://`` paths of ``python`` assertions are
        relative to (the dataset file's); default: the current directory.
    :param threshold: the example's ``threshold`` field, checked here.
    :param variables: the example's fields: ``{{name}}`` in a string value or a
        metric name is replaced by the field's value, as promptfoo renders its vars.
    :raises AssertionError_: naming the assertion (its position and type) and how to
        fix it.
    """
    if not isinstance(raw, list):
        raise AssertionError_(
            f"field 'assert' must be a list of assertions ({{\"type\": ..., \"value\": ...}}),"
            f" got {_kind(raw)}"
        )
    check_threshold(threshold)
    out = []
    for i, item in enumerate(raw):
        try:
            item = render_assertion(item, variables or {})
        except ValueError as exc:
            raise AssertionError_(f"assertion {i + 1}: {exc}", i) from None
        out.append(_compile_one(item, i, base_dir))
    return tuple(out)


def render_template(text: str, variables: Mapping[str, Any]) -> str:
    """``text`` rendered with an example's fields, as promptfoo renders assertion
    values: the one renderer of prompts and values
    (:func:`pytest_context_bench.datasets.promptfoo.render_template`). ``{{ env.X }}``
    reads nothing here: a dataset's check must not copy an environment variable (a
    key) into the reasons the reports print.

    :raises ValueError: template syntax that is not run (tags, other filters).
    """
    if "{{" not in text and "{%" not in text and "{#" not in text:
        return text
    from ..datasets.promptfoo import render_template as render

    return render(text, variables, env={})


def render_assertion(item: Any, variables: Mapping[str, Any]) -> Any:
    """An assertion with its string value (or list of strings) and metric name
    rendered (:func:`render_template`); object values are left alone."""
    if not isinstance(item, Mapping):
        return item
    out = dict(item)
    value = out.get("value")
    if isinstance(value, str) and not value.startswith("file://"):
        out["value"] = render_template(value, variables)
    elif isinstance(value, list):
        out["value"] = [render_template(v, variables) if isinstance(v, str) else v for v in value]
    if isinstance(out.get("metric"), str):
        out["metric"] = render_template(out["metric"], variables)
    if isinstance(out.get("assert"), list):
        out["assert"] = [render_assertion(x, variables) for x in out["assert"]]
    return out


def check_threshold(threshold: Any) -> float | None:
    """The test-level threshold as a float (``None`` when absent)."""
    if threshold is None:
        return None
    value = _number(threshold)
    if value is None:
        raise AssertionError_(f"field 'threshold' must be a number, got {_kind(threshold)}")
    return value


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, str):
        return f"the string {json.dumps(value[:40], ensure_ascii=False)}"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        number = float(value)
    elif isinstance(value, str):
        try:
            number = float(value.strip())
        except ValueError:
            return None
    else:
        return None
    return number if math.isfinite(number) else None


def _whole(value: Any) -> int | None:
    """A budget's value: a whole number >= 0 (``3``, ``3.0``, or the text ``"3"``
    a template renders), else ``None``."""
    if isinstance(value, str) and re.fullmatch(r"\s*[0-9]{1,18}\s*", value):
        return int(value)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if not math.isfinite(value) or value < 0 or value != int(value):
        return None
    return int(value)


def _compile_one(item: Any, index: int, base_dir: str | None) -> Compiled:
    where = f"assertion {index + 1}"
    if not isinstance(item, Mapping):
        raise AssertionError_(f"{where} must be an object with a 'type', got {_kind(item)}", index)
    kind = item.get("type")
    if not isinstance(kind, str) or not kind:
        raise AssertionError_(f"{where} has no 'type' (a string such as \"contains\")", index)
    where = f"assertion {index + 1} ({kind})"
    inverse = kind.startswith("not-")
    base = kind[4:] if inverse else kind
    if kind == "assert-set":
        inner_raw = item.get("assert")
        if not isinstance(inner_raw, list) or not inner_raw:
            raise AssertionError_(f"{where} needs 'assert': a non-empty list of assertions", index)
        try:
            inner = tuple(_compile_one(x, j, base_dir) for j, x in enumerate(inner_raw))
        except AssertionError_ as exc:
            raise AssertionError_(f"{where}, inner {exc}", index) from None
        return _finish(item, index, where, kind, base, False, None, inner)
    if base not in CHECKS:
        if base in _NOT_HERE:
            raise AssertionError_(f"{where} is not run by pytest-context-bench: {_NOT_HERE[base]}", index)
        close = difflib.get_close_matches(kind, KNOWN_TYPES, n=1, cutoff=0.6)
        hint = f" Did you mean {close[0]!r}?" if close else ""
        raise AssertionError_(
            f"{where}: unknown assertion type {kind!r}.{hint} Known types: {', '.join(CHECKS)}"
            " (each also with a not- prefix), and assert-set",
            index,
        )
    prepared: Any = None
    value = item.get("value")
    if base == "equals":
        if "value" not in item:
            raise AssertionError_(f"{where} needs a 'value'", index)
    elif base in ("contains", "icontains"):
        if not ((isinstance(value, str) and value) or _is_number(value)):
            raise AssertionError_(f"{where} needs a 'value': a non-empty string or a number, got {_kind(value)}", index)
    elif base in ("contains-any", "contains-all", "icontains-any", "icontains-all"):
        if not (isinstance(value, list) or (isinstance(value, str) and value)):
            raise AssertionError_(
                f"{where} needs a 'value': a list of strings, or one comma-separated string,"
                f" got {_kind(value)}", index)
        try:
            prepared = _split_list(value)
        except ValueError as exc:
            raise AssertionError_(f"{where}: {exc} ({value!r})", index) from None
    elif base in ("starts-with", "regex"):
        if not isinstance(value, str) or not value:
            what = "the regular expression" if base == "regex" else "the text the output starts with"
            raise AssertionError_(f"{where} needs a 'value': {what}, a non-empty string; got {_kind(value)}", index)
        try:
            prepared = compile_js_regex(value)
        except re.error as exc:
            raise AssertionError_(f"{where}: invalid regular expression {value!r}: {exc}", index) from None
    if base == "levenshtein" and not isinstance(value, str):
        raise AssertionError_(f"{where} needs a 'value': the expected text, a string; got {_kind(value)}", index)
    elif base in ("is-json", "contains-json"):
        prepared = _schema_validator(value, where, index, base_dir)
    elif base == "python":
        prepared = resolve_python(value, where, index, base_dir)
    elif base in _BUDGETS:
        prepared = _whole(value)
        if prepared is None:
            raise AssertionError_(
                f"{where} needs a 'value': the most {_BUDGETS[base]}, a whole number >= 0;"
                f" got {_kind(value)}", index)
    elif base == "tool-call":
        prepared = _tool_call_value(item, where, index)
    elif base == "llm-rubric":
        if not isinstance(value, str) or not value.strip():
            raise AssertionError_(
                f"{where} needs a 'value': the rubric the judge applies, a non-empty string;"
                f" got {_kind(value)}", index)
    elif base in ("latency", "cost"):
        if _number(item.get("threshold")) is None:
            raise AssertionError_(f"{where} needs a 'threshold' (a number: {'milliseconds' if base == 'latency' else 'dollars'})", index)
    return _finish(item, index, where, kind, base, inverse, prepared, ())


def _tool_call_value(item: Mapping[str, Any], where: str, index: int) -> Any:
    """A tool-call assertion's expected calls (its ``value``: a list of ``{name,
    arguments}``, or one) and its options (``order``, ``mode``, ``strings``)."""
    from .tool_calls import ToolSpecError, check_options, parse_expected

    value = item.get("value")
    if isinstance(value, Mapping):
        value = [value]
    try:
        expected = parse_expected(value, "value")
    except ToolSpecError as exc:
        raise AssertionError_(f"{where}: {exc}", index) from None
    options = {"order": item.get("order", "any"), "mode": item.get("mode", "exact"),
               "strings": item.get("strings", "bfcl")}
    try:
        check_options(options["order"], options["mode"], options["strings"])
    except ValueError as exc:
        raise AssertionError_(f"{where}: {exc}", index) from None
    threshold = _number(item.get("threshold"))
    if item.get("threshold") is not None and (threshold is None or not 0 <= threshold <= 1):
        raise AssertionError_(f"{where}: 'threshold' must be a number from 0 to 1 (the tool call F1)", index)
    return expected, options


def _finish(
    item: Mapping[str, Any], index: int, where: str, kind: str, base: str,
    inverse: bool, prepared: Any, inner: tuple[Compiled, ...],
) -> Compiled:
    threshold = item.get("threshold")
    if threshold is not None and _number(threshold) is None:
        raise AssertionError_(f"{where}: 'threshold' must be a number, got {_kind(threshold)}", index)
    weight = item.get("weight", 1)
    number = _number(weight) if not isinstance(weight, str) else None
    if number is None or number < 0:
        raise AssertionError_(f"{where}: 'weight' must be a number >= 0, got {_kind(weight)}", index)
    metric = item.get("metric")
    if metric is not None:
        if not isinstance(metric, str) or not metric.strip():
            raise AssertionError_(f"{where}: 'metric' must be a non-empty string, got {_kind(metric)}", index)
        if metric in _reserved_metrics():
            raise AssertionError_(
                f"{where}: 'metric' may not be {metric!r}, the name of a built-in score;"
                " choose another name", index)
    return Compiled(
        type=kind, base=base, inverse=inverse, value=item.get("value"),
        threshold=_number(threshold) if threshold is not None else None,
        weight=number, metric=metric, raw=dict(item), prepared=prepared, inner=inner,
    )


def _schema_validator(value: Any, where: str, index: int, base_dir: str | None) -> Any:
    if value is None or value == "":
        return None
    schema = value
    if isinstance(value, str):
        text = value
        if text.startswith("file://"):
            path = _resolve_path(text[len("file://"):], base_dir)
            try:
                with open(path, encoding="utf-8") as f:
                    text = f.read()
            except OSError as exc:
                raise AssertionError_(f"{where}: cannot read the schema file {path} ({exc.strerror})", index) from None
        try:
            schema = _strict_json(text)
        except ValueError as exc:
            schema = _yaml_json(text)
            if schema is None:
                raise AssertionError_(
                    f"{where}: the value is not a JSON Schema (neither JSON nor YAML: {exc})", index
                ) from None
    if not isinstance(schema, (dict, bool)):
        raise AssertionError_(f"{where}: the value must be a JSON Schema (an object), got {_kind(schema)}", index)
    try:
        return _validator(json.dumps(schema, sort_keys=True))
    except ValueError as exc:
        raise AssertionError_(f"{where}: {exc}", index) from None


@functools.lru_cache(maxsize=512)
def _validator(schema_json: str) -> Any:
    """A checked validator for a schema (its JSON text, sorted): built once per
    schema, however many examples share it.

    :raises ValueError: the schema is invalid (its keywords, or one no draft knows).
    """
    from jsonschema import exceptions, validators

    schema = json.loads(schema_json)
    cls = validators.validator_for(schema, default=validators.Draft7Validator)
    try:
        cls.check_schema(schema)
    except exceptions.SchemaError as exc:
        at = "/".join(str(p) for p in exc.path)
        raise ValueError(f"invalid JSON Schema{f' at {at}' if at else ''}: {exc.message}") from None
    unknown = _unknown_keywords(schema)
    if unknown:
        raise ValueError(
            f"invalid JSON Schema: unknown keyword {unknown!r} (a typo? promptfoo's"
            " validator refuses unknown keywords too)")
    return cls(schema, format_checker=cls.FORMAT_CHECKER)


#: The keywords of JSON Schema drafts 4 to 2020-12 (and OpenAPI's nullable, which
#: the strict validator promptfoo uses knows).
_KEYWORDS: Final = frozenset("""
$schema $id id $ref $defs definitions $comment $anchor $dynamicRef $dynamicAnchor
$vocabulary $recursiveRef $recursiveAnchor title description default examples
deprecated readOnly writeOnly type enum const multipleOf maximum exclusiveMaximum
minimum exclusiveMinimum maxLength minLength pattern format items additionalItems
prefixItems unevaluatedItems contains minContains maxContains maxItems minItems
uniqueItems maxProperties minProperties required properties patternProperties
additionalProperties unevaluatedProperties dependencies dependentRequired
dependentSchemas propertyNames if then else allOf anyOf oneOf not
contentEncoding contentMediaType contentSchema nullable discriminator
""".split())
#: Keywords whose value is a map of names to schemas.
_SCHEMA_MAPS: Final = frozenset({"properties", "patternProperties", "$defs", "definitions", "dependentSchemas"})


def _unknown_keywords(schema: Any) -> str | None:
    """The first keyword of ``schema`` (or its subschemas) no draft defines."""
    if not isinstance(schema, dict):
        return None
    for key, value in schema.items():
        if key not in _KEYWORDS:
            return key
        if key in _SCHEMA_MAPS and isinstance(value, dict):
            found = next((u for v in value.values() if (u := _unknown_keywords(v))), None)
        elif key in ("enum", "const", "examples", "default", "required"):
            found = None
        elif isinstance(value, list):
            found = next((u for v in value if (u := _unknown_keywords(v))), None)
        else:
            found = _unknown_keywords(value)
        if found:
            return found
    return None


def _resolve_path(path: str, base_dir: str | None) -> str:
    if os.path.isabs(path):
        return path
    return os.path.join(base_dir or os.getcwd(), path)


_modules: dict[tuple[str, int], Any] = {}
_modules_lock = threading.Lock()


def resolve_python(value: Any, where: str, index: int, base_dir: str | None) -> Callable[..., Any]:
    """The function a ``python`` assertion names: ``file://path.py:function``
    (default function ``get_assert``, as promptfoo), ``module:function``, or an
    inline expression of ``output`` and ``context``."""
    if not isinstance(value, str) or not value.strip():
        raise AssertionError_(
            f"{where} needs a 'value': file://path.py:function, module:function, or an expression", index
        )
    text = value.strip()
    if text.startswith("file://"):
        target = text[len("file://"):]
        path, _, name = target.rpartition(":") if _has_function(target) else (target, "", "")
        name = name or "get_assert"
        full = _resolve_path(path, base_dir)
        module = _load_file(full, where, index)
        func = getattr(module, name, None)
        if not callable(func):
            raise AssertionError_(f"{where}: {full} has no function {name!r}", index)
        return func
    if re.fullmatch(r"[A-Za-z_][\w.]*:[A-Za-z_]\w*", text):
        mod_name, _, name = text.partition(":")
        try:
            module = importlib.import_module(mod_name)
        except Exception as exc:
            raise AssertionError_(f"{where}: cannot import {mod_name!r} ({type(exc).__name__}: {exc})", index) from None
        func = getattr(module, name, None)
        if not callable(func):
            raise AssertionError_(f"{where}: module {mod_name!r} has no function {name!r}", index)
        return func
    return _inline(text, where, index)


def _has_function(target: str) -> bool:
    head, sep, tail = target.rpartition(":")
    return bool(sep) and head.endswith(".py") and re.fullmatch(r"[A-Za-z_]\w*", tail) is not None


def _load_file(path: str, where: str, index: int) -> Any:
    try:
        stat = os.stat(path)
    except OSError:
        raise AssertionError_(f"{where}: the file {path} does not exist (a relative path is read from the dataset's directory)", index) from None
    key = (path, stat.st_mtime_ns)
    with _modules_lock:
        module = _modules.get(key)
        if module is not None:
            return module
        spec = importlib.util.spec_from_file_location(f"_ctxbench_assert_{len(_modules)}", path)
        if spec is None or spec.loader is None:
            raise AssertionError_(f"{where}: {path} is not a Python file", index)
        module = importlib.util.module_from_spec(spec)
        try:
            spec.loader.exec_module(module)
        except Exception as exc:
            raise AssertionError_(f"{where}: importing {path} failed ({type(exc).__name__}: {exc})", index) from None
        _modules[key] = module
        return module


def _inline(text: str, where: str, index: int) -> Callable[..., Any]:
    # promptfoo's inline python: an expression, or a body with `return`.
    body = text if "\n" in text or text.startswith("return ") or "\nreturn" in text else None
    try:
        if body is None:
            code = compile(text, f"<{where}>", "eval")

            def expression(output: str, context: dict[str, Any]) -> Any:
                return eval(code, {"__builtins__": __builtins__}, {"output": output, "context": context})

            return expression
        source = "def _assertion(output, context):\n" + "".join(
            f"    {line}\n" for line in body.splitlines()
        )
        namespace: dict[str, Any] = {}
        exec(compile(source, f"<{where}>", "exec"), namespace)
        return namespace["_assertion"]
    except SyntaxError as exc:
        raise AssertionError_(f"{where}: the inline Python does not compile ({exc.msg}, line {exc.lineno})", index) from None


# -------------------------------------------------------- JavaScript regexes

#: JavaScript's \s: Unicode white space and line terminators.
_JS_SPACE = "\\t\\n\\x0b\\x0c\\r \\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000\\ufeff"
_JS_CLASS = {"d": "0-9", "w": "A-Za-z0-9_", "s": _JS_SPACE}


@functools.lru_cache(maxsize=1024)
def compile_js_regex(source: str) -> Any:
    """``new RegExp(source)`` (no flags) as a Python pattern: ``$`` matches only at
    the very end, ``\\d``/``\\w``/``\\b`` are ASCII, ``\\s`` is JavaScript's set,
    ``.`` matches no line terminator, ``(?<name>`` is a named group.

    :raises re.error: when the pattern is not valid.
    """
    out: list[str] = []
    i = 0
    n = len(source)
    in_class = False
    while i < n:
        ch = source[i]
        if ch == "\\" and i + 1 < n:
            nxt = source[i + 1]
            if nxt in "dws":
                body = _JS_CLASS[nxt]
                out.append(body if in_class else f"[{body}]")
            elif nxt in "DWS":
                if in_class:
                    raise re.error(f"\\{nxt} inside a character class is not supported")
                out.append(f"[^{_JS_CLASS[nxt.lower()]}]")
            elif nxt in "bB" and not in_class:
                word = "[A-Za-z0-9_]"
                if nxt == "b":
                    out.append(f"(?:(?<={word})(?!{word})|(?<!{word})(?={word}))")
                else:
                    out.append(f"(?:(?<={word})(?={word})|(?<!{word})(?!{word}))")
            elif nxt == "u" and source[i + 2:i + 3] == "{":
                raise re.error("\\u{...} needs the u flag, which promptfoo does not set")
            else:
                out.append(source[i:i + 2])
            i += 2
            continue
        if in_class:
            if ch == "]":
                in_class = False
            elif ch == "[":
                out.append("\\[")
                i += 1
                continue
            out.append(ch)
            i += 1
            continue
        if ch == "[":
            in_class = True
            out.append(ch)
            if source[i + 1:i + 2] == "^":
                out.append("^")
                i += 1
            if source[i + 1:i + 2] == "]":
                # JavaScript: [] matches nothing, [^] anything
                negated = out[-1] == "^"
                if negated:
                    out[-2:] = ["[\\s\\S]"]
                else:
                    out[-1:] = ["(?!)"]
                in_class = False
                i += 2
                continue
            i += 1
            continue
        if ch == "$":
            out.append("\\Z")
            i += 1
            continue
        if ch == ".":
            out.append("[^\\n\\r\\u2028\\u2029]")
            i += 1
            continue
        if ch == "(" and source.startswith("(?<", i) and source[i + 3:i + 4] not in ("=", "!"):
            out.append("(?P<")
            i += 3
            continue
        if ch == "(" and source.startswith("(?", i) and source[i + 2:i + 3] not in (":", "=", "!", "<"):
            raise re.error("invalid group (JavaScript has no inline flags such as (?i))", i)
        out.append(ch)
        i += 1
    translated = utf16_units("".join(out))
    compiled = re.compile(translated)  # Python's own syntax check, and the fallback
    try:
        import regex  # installed with tiktoken: the same syntax, and a time limit
    except ImportError:  # pragma: no cover
        return compiled
    try:
        return regex.compile(translated, flags=regex.VERSION0)
    except regex.error:  # pragma: no cover - re accepted it
        return compiled


def utf16_units(text: str) -> str:
    """``text`` with each character outside the BMP written as its two UTF-16
    surrogates, so that a regex sees the units JavaScript sees (``.`` matches one
    half of an emoji)."""
    if text.isascii() or all(ord(c) < 0x10000 for c in text):
        return text
    out = []
    for c in text:
        code = ord(c)
        if code < 0x10000:
            out.append(c)
        else:
            code -= 0x10000
            out.append(chr(0xD800 + (code >> 10)) + chr(0xDC00 + (code & 0x3FF)))
    return "".join(out)


# ------------------------------------------------------------------ running


def run_asserts(
    compiled: Sequence[Compiled],
    output: str,
    context: Mapping[str, Any],
    threshold: float | None = None,
) -> tuple[dict[str, float], list[dict[str, Any]]]:
    """Run the assertions of one example.

    :returns: the scores (``assert_score``, ``assert_pass`` and one per metric) and
        one result per assertion: ``{"type", "pass", "score", "reason"}`` (plus
        ``metric`` and ``weight`` when set).
    :raises ExampleDataError: a ``python`` assertion's error, or a latency/cost
        assertion without the number it needs (the row's error).
    """
    results: list[dict[str, Any]] = []
    outcomes: list[tuple[Compiled, Result]] = []
    for a in compiled:
        res = _run_one(a, output, context)
        outcomes.append((a, res))
        entry: dict[str, Any] = {"type": a.type, "pass": res.passed, "score": res.score, "reason": res.reason}
        if a.base in JUDGED_TYPES:
            entry["rubric"] = str(a.value)  # the judge's reason is shown with it, pass or fail
        if a.metric:
            entry["metric"] = a.metric
        if a.weight != 1:
            entry["weight"] = a.weight
        results.append(entry)
    score, passed = _aggregate(outcomes, threshold)
    scores: dict[str, float] = {ASSERT_SCORE: score, ASSERT_PASS: 1.0 if passed else 0.0}
    metrics: dict[str, list[tuple[float, float]]] = {}
    for a, res in outcomes:
        if a.metric:
            metrics.setdefault(a.metric, []).append((a.weight, res.score))
        for name, value in (res.named or {}).items():
            metrics.setdefault(name, []).append((a.weight, value))
    for name, parts in metrics.items():
        total = math.fsum(w for w, _ in parts)
        scores[name] = math.fsum(w * s for w, s in parts) / total if total > 0 else 0.0
    return scores, results


def _aggregate(outcomes: Sequence[tuple[Compiled, Result]], threshold: float | None) -> tuple[float, bool]:
    """The weighted score and the verdict of a list of outcomes (promptfoo's rule:
    an assertion of weight 0 counts for nothing, its failure included)."""
    if not outcomes:
        return 1.0, True
    total = math.fsum(a.weight for a, _ in outcomes)
    score = math.fsum(a.weight * r.score for a, r in outcomes) / total if total > 0 else 0.0
    if threshold is not None:
        return score, score >= threshold
    return score, all(r.passed or a.weight == 0 for a, r in outcomes)


def _run_one(a: Compiled, output: str, context: Mapping[str, Any]) -> Result:
    if a.inner:
        inner = [(b, _run_one(b, output, context)) for b in a.inner]
        score, passed = _aggregate(inner, a.threshold)
        failed = [r.reason for _, r in inner if not r.passed]
        return Result(passed, score, "All assertions passed" if passed else "; ".join(failed))
    from ..errors import CtxBenchError

    try:
        return CHECKS[a.base](output, a, context)
    except CtxBenchError:
        raise  # bad data, or the judge's own failure (LLMError, JudgeError)
    except Exception as exc:  # a python check's own error, above all
        raise ExampleDataError(f"the {a.type} assertion raised {type(exc).__name__}: {exc}") from exc


# ---------------------------------------------------------------- evaluator


class Assertions:
    """Run an example's ``assert`` list on the System's ``response``.

    Auto-wired for every dataset (it scores only examples with ``assert``).

    :param base_dir: the directory relative ``file://`` paths (python assertions,
        schema files) are read from: the dataset file's directory.
    """

    name = "assertions"

    def __init__(self, base_dir: str | None = None, judge: Any = None) -> None:
        self.base_dir = base_dir
        self._compiled: dict[str, tuple[Compiled, ...]] = {}
        self._lock = threading.Lock()
        #: the judge of llm-rubric assertions: an LLMJudge, or the keyword
        #: arguments of one (the run's --ctxbench-judge-* options), built on use
        self.judge = judge
        self._judge: Any = None

    def __repr__(self) -> str:
        return f"Assertions(base_dir={self.base_dir!r})"

    def judge_for_rubrics(self) -> Any:
        """The LLMJudge llm-rubric assertions ask (``None``: none configured)."""
        if self.judge is None:
            return None
        if self._judge is None:
            from .judges import LLMJudge

            with self._lock:
                if self._judge is None:
                    self._judge = (
                        self.judge if isinstance(self.judge, LLMJudge) else LLMJudge(**dict(self.judge))
                    )
        return self._judge

    def score(self, original: dict[str, Any], processed: dict[str, Any]) -> dict[str, float]:
        return self.score_details(original, processed)[0]

    def _compile(self, original: Mapping[str, Any]) -> tuple[Compiled, ...]:
        raw = original["assert"]
        key = repr(raw)
        if "{{" in key or "{%" in key:  # templates: rendered with this example's fields
            try:
                rendered = [render_assertion(item, _variables(original)) for item in raw] if isinstance(raw, list) else raw
            except ValueError as exc:
                raise ExampleDataError(str(exc)) from None
            key = repr(rendered)
        else:
            rendered = raw
        with self._lock:
            found = self._compiled.get(key)
        if found is None:
            try:
                found = compile_asserts(rendered, base_dir=self.base_dir)
            except AssertionError_ as exc:
                raise ExampleDataError(str(exc)) from None
            with self._lock:
                if len(self._compiled) > 4096:
                    self._compiled.clear()
                self._compiled[key] = found
        return found

    def score_details(
        self, original: dict[str, Any], processed: dict[str, Any]
    ) -> tuple[dict[str, float], dict[str, Any] | None]:
        if "assert" not in original:
            return {}, None
        compiled = self._compile(original)
        try:
            threshold = check_threshold(original.get("threshold"))
        except AssertionError_ as exc:
            raise ExampleDataError(str(exc)) from None
        output = output_text(processed.get("response"))
        facts = current_facts()
        context: dict[str, Any] = {
            "latency_ms": facts.get("latency_ms"), "cost": facts.get("cost"),
            "tokens": facts.get("tokens"), "processed": processed,
            "tool_calls": processed.get("tool_calls"), "tools": original.get("tools"),
        }
        if _uses(compiled, JUDGED_TYPES):
            context["judge"] = self.judge_for_rubrics()
        if _uses_python(compiled):  # what a python check is given: copies
            context["python_context"] = {
                "vars": _variables(original),
                "test": json.loads(json.dumps(
                    {k: original[k] for k in ("assert", "threshold", "description") if k in original},
                    default=str)),
                "prompt": original.get("prompt", original.get("question", original.get("context"))),
            }
        scores, results = run_asserts(compiled, output, context, threshold)
        details = _details(results, scores, threshold)
        return scores, details


def _uses_python(compiled: Sequence[Compiled]) -> bool:
    return _uses(compiled, {"python"})


def _uses(compiled: Sequence[Compiled], types: Any) -> bool:
    """Whether an assertion of ``types`` (base names) is in the list, sets included."""
    return any(a.base in types or _uses(a.inner, types) for a in compiled)


def uses_judge(compiled: Sequence[Compiled]) -> bool:
    """Whether a compiled list holds an assertion that asks an LLM judge."""
    return _uses(compiled, JUDGED_TYPES)


def _variables(example: Mapping[str, Any]) -> dict[str, Any]:
    """An example's fields as template and python-assertion variables."""
    return {k: v for k, v in example.items() if k not in ("assert", "threshold")}


def _details(results: list[dict[str, Any]], scores: Mapping[str, float], threshold: float | None) -> dict[str, Any]:
    failed = [r for r in results if not r["pass"]]
    n = len(results)
    passed = scores[ASSERT_PASS] >= 1.0
    if not results:
        reason = "no assertions"
    elif not failed:
        reason = "the assertion passed" if n == 1 else f"all {n} assertions passed"
    else:
        first = failed[0]
        reason = f"{len(failed)} of {n} assertion{'s' if n != 1 else ''} failed; first: {first['type']}: {first['reason']}"
    if threshold is not None:
        reason += (
            f" (score {scores[ASSERT_SCORE]:.4g} {'>=' if passed else '<'} threshold {threshold:g}:"
            f" {'pass' if passed else 'fail'})"
        )
    details: dict[str, Any] = {"reason": reason}
    by_type: dict[str, list[int]] = {}
    for i, r in enumerate(results, 1):
        counts = by_type.setdefault(r["type"], [0, 0])
        counts[0] += bool(r["pass"])
        counts[1] += 1
        text = "pass" if r["pass"] else f"FAIL: {r['reason']}"
        if "rubric" in r:
            text = f"{'pass' if r['pass'] else 'FAIL'}: {r['reason']} [rubric: {r['rubric']}]"
        if r["score"] not in (0.0, 1.0):
            text += f" (score {r['score']:.4g})"
        if r.get("metric"):
            text += f" [metric {r['metric']}]"
        if "weight" in r:
            text += f" [weight {r['weight']:g}]"
        details[f"{i}. {r['type']}"] = text
    details["by_type"] = {t: f"{p}/{c}" for t, (p, c) in by_type.items()}
    metrics = sorted({r["metric"] for r in results if r.get("metric")})
    if metrics:
        details["metrics"] = metrics
    return details


# ------------------------------------------------- facts of the call (latency, cost)

_facts = threading.local()


def current_facts() -> Mapping[str, Any]:
    """What the engine knows about the call being scored (``latency_ms``,
    ``cost``): set around the evaluators by :func:`call_facts`."""
    return getattr(_facts, "value", None) or {}


class call_facts:
    """Context manager: the facts :func:`current_facts` returns in this thread."""

    def __init__(self, **facts: Any) -> None:
        self.facts = facts

    def __enter__(self) -> None:
        self.saved = getattr(_facts, "value", None)
        _facts.value = self.facts

    def __exit__(self, *exc: Any) -> None:
        _facts.value = self.saved
