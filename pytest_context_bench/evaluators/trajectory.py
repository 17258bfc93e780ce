"""TrajectoryMatch: did the agent take the steps the example expects?

An example carries ``expected_trajectory``: a list of chat messages (OpenAI's shape,
``{"role", "content", "tool_calls"}``, or LangChain's message dicts: ``{"type":
"ai", ..., "tool_calls": [{"name", "args"}]}``). The System returns its own steps in
the processed example's ``trajectory`` (a list of messages, or ``{"messages":
[...]}``); without one, its reply (``response`` and ``tool_calls``) is taken as one
assistant step. :class:`TrajectoryMatch` compares the two as agentevals 0.0.9's
``create_trajectory_match_evaluator`` does, and explains the first mismatch.

What is compared: each step's role and each assistant step's tool calls (a tool's
name and its arguments, read as JSON). Message text is never compared, nor tool
results, nor call ids.

``trajectory_match_mode``:

- ``strict``: the same steps in the same order: as many messages, the same role at
  each position, and at each assistant step the same calls (in any order within the
  step).
- ``unordered``: the same tool calls, in any order and at any step (roles and
  messages without calls are not compared): every expected call is matched by a
  call of the System's and every call of the System's by an expected one.
- ``superset``: every expected call is matched by a call of the System's (it may
  make more).
- ``subset``: every call of the System's is matched by an expected call (it may make
  fewer).

``tool_args_match_mode`` decides when two calls of the same tool match: ``exact``
(equal arguments: the same keys and values, as JSON: ``1`` equals ``1.0``, ``true``
is not ``1``), ``ignore`` (the name alone), ``subset`` (the System's arguments are
among the expected ones), ``superset`` (the System's arguments hold the expected
ones). ``tool_args_match_overrides`` sets it per tool: a mode, or a list of argument
paths (``"a.b"`` is key ``b`` of argument ``a``) that must be equal, or (Python only) a
function ``(system_args, expected_args) -> bool``.

Matching is agentevals' own, greedy: each call takes the first unmatched call that
fits, in order, and in ``subset`` mode the argument rule is applied with the two
sides swapped, as agentevals does (so there, ``tool_args_match_mode="subset"`` asks
the System's arguments to hold the expected ones). docs/differences.md lists where
the verdicts differ from agentevals' and why.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from collections.abc import Mapping
from typing import Any, Callable, Final, Iterable, Sequence

from .._json import strict_loads, value_problem
from .._text import inert
from ..errors import ConfigError, ExampleDataError

__all__ = [
    "ARGS_MATCH_MODES",
    "TRAJECTORY_MATCH_MODES",
    "TRAJECTORY_SCORE",
    "Call",
    "Step",
    "TrajectoryError",
    "TrajectoryMatch",
    "check_example",
    "count_tool_calls",
    "count_assistant_steps",
    "normalize",
]

TRAJECTORY_SCORE: Final = "trajectory_match"
TRAJECTORY_MATCH_MODES: Final = ("strict", "unordered", "subset", "superset")
ARGS_MATCH_MODES: Final = ("exact", "ignore", "subset", "superset")

#: role (or LangChain message type) → the role it is compared as.
_ROLES: Final[Mapping[str, str]] = {
    "user": "user",
    "human": "user",
    "assistant": "assistant",
    "ai": "assistant",
    "system": "system",
    "developer": "developer",
    "tool": "tool",
    "function": "function",
}

#: Characters of a name or a value quoted in a reason.
_SHOWN: Final = 60


def _is_map(value: Any) -> bool:
    # dict first: an ABC isinstance check costs ten times more, per message and call
    return type(value) is dict or isinstance(value, Mapping)


class TrajectoryError(ValueError):
    """A trajectory (or a match setting) that cannot be read; ``str()`` says where
    and why, in one sentence without a final full stop."""


@dataclass(slots=True)  # not frozen: a frozen dataclass is slow to build, per call
class Call:
    """One tool call of a trajectory.

    :param name: the tool's name.
    :param args: its arguments (a JSON object as a dict), or ``None`` when they are
        not a JSON object (``problem`` says why).
    :param step: the 1-based position of its message in the trajectory.
    :param number: its 1-based position among all the calls of the trajectory.
    """

    name: str
    args: dict[str, Any] | None
    step: int
    number: int
    problem: str | None = None


@dataclass(slots=True)
class Step:
    """One message: its role (``user``, ``assistant``...) and, for an assistant
    message, its tool calls."""

    role: str
    calls: tuple[Call, ...]
    index: int  # 1-based


# ----------------------------------------------------------------- reading


def _q(text: Any) -> str:
    """A name or a value as a reason quotes it: JSON, clipped, inert."""
    if isinstance(text, str):
        shown = json.dumps(text if len(text) <= _SHOWN else text[:_SHOWN] + "…", ensure_ascii=False)
    else:
        try:
            shown = json.dumps(text, ensure_ascii=False, sort_keys=True, separators=(", ", ": "))
        except (TypeError, ValueError, RecursionError):
            shown = repr(text)
        if len(shown) > _SHOWN:
            shown = shown[:_SHOWN] + "…"
    return inert(shown)


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, str):
        return f"the string {_q(value)}"
    if isinstance(value, (int, float)):
        return f"the number {_q(value)}"
    if isinstance(value, (list, tuple)):
        return "a list"
    if _is_map(value):
        return "an object"
    return type(value).__name__


def _read_args(raw: Any, *, expected: bool) -> tuple[dict[str, Any] | None, str | None]:
    """A call's arguments as a dict, or ``(None, why)``."""
    if isinstance(raw, str):
        try:
            value = strict_loads(raw)
        except json.JSONDecodeError as exc:
            return None, f"its arguments are not JSON ({exc.msg} at character {exc.pos + 1})"
        except ValueError as exc:  # JSONValueError: NaN, too deep, huge integer...
            return None, f"its arguments are not JSON we read: {exc}"
    else:
        value = raw
        if _is_map(value):
            problem = value_problem(dict(value))
            if problem is not None:
                return None, f"its arguments are not JSON we read: {problem}"
    if not _is_map(value):
        what = "a JSON text of an object" if expected else "a JSON object"
        return None, f"its arguments must be {what}, got {_kind(value)}"
    return dict(value), None


def normalize(messages: Any, *, expected: bool = False) -> list[Step]:
    """A trajectory's messages as :class:`Step` objects (roles normalised, tool
    calls read).

    :param messages: a list of messages (dicts, or objects with ``type``, ``content``
        and ``tool_calls`` attributes: LangChain's messages), or ``{"messages":
        [...]}``.
    :param expected: an example's ``expected_trajectory``: arguments that are not a
        JSON object are an error here, where the System's are a call that matches
        nothing.
    :raises TrajectoryError: not a list of messages, a message without a known role,
        a tool call without a name.
    """
    steps: list[Step] = []
    number = 0
    for index, (role, raw_calls) in enumerate(_messages(messages), 1):
        calls: list[Call] = []
        for k, raw in enumerate(raw_calls, 1):
            number += 1
            calls.append(_read_call(raw, index, k, number, expected))
        steps.append(Step(role=role, calls=tuple(calls), index=index))
    return steps


def _messages(messages: Any) -> Iterable[tuple[str, Sequence[Any]]]:
    """(role, raw tool calls) of each message, in order; the tool calls of an
    assistant message only (LangChain drops the others')."""
    if _is_map(messages) and "messages" in messages and "role" not in messages:
        messages = messages["messages"]
    if not isinstance(messages, (list, tuple)):
        raise TrajectoryError(f"a trajectory must be a list of messages, got {_kind(messages)}")
    roles = _ROLES
    for index, message in enumerate(messages, 1):
        if type(message) is dict:
            raw_role = message["role"] if "role" in message else message.get("type")
            raw_calls = message.get("tool_calls")
        elif isinstance(message, Mapping):
            raw_role = message["role"] if "role" in message else message.get("type")
            raw_calls = message.get("tool_calls")
        elif hasattr(message, "type") and hasattr(message, "content"):
            raw_role = getattr(message, "type", None)
            raw_calls = getattr(message, "tool_calls", None)
        else:
            raise TrajectoryError(
                f"step {index} must be a message object ({{\"role\": ..., \"content\": ...}}),"
                f" got {_kind(message)}"
            )
        role = roles.get(raw_role) if type(raw_role) is str else None
        if role is None:
            got = "no role" if raw_role is None else f"role {_q(raw_role)}"
            raise TrajectoryError(f"step {index} has {got}; a role is one of {', '.join(_ROLES)}")
        if role != "assistant" or raw_calls is None:
            yield role, ()
        elif isinstance(raw_calls, (list, tuple)):
            yield role, raw_calls
        else:
            raise TrajectoryError(
                f"step {index}: 'tool_calls' must be a list of tool calls, got {_kind(raw_calls)}"
            )


def _read_call(raw: Any, index: int, k: int, number: int, expected: bool) -> Call:
    where = f"step {index}, tool call {k}"
    if not _is_map(raw):
        raise TrajectoryError(f"{where} must be an object, got {_kind(raw)}")
    if "function" in raw:  # OpenAI's shape
        function = raw["function"]
        if not _is_map(function):
            raise TrajectoryError(f"{where}: 'function' must be an object, got {_kind(function)}")
        name = function.get("name")
        if "arguments" not in function:
            raise TrajectoryError(f"{where} has no 'arguments' (a JSON object as text)")
        raw_args = function["arguments"]
    else:  # LangChain's: {"name", "args", "id"}
        name = raw.get("name")
        if "args" not in raw:
            raise TrajectoryError(
                f"{where} has neither 'function' ({{\"name\", \"arguments\"}}) nor 'args'"
            )
        raw_args = raw["args"]
        if isinstance(raw_args, str):  # LangChain's args are an object, never text
            problem = f"its 'args' must be an object, got {_kind(raw_args)}"
            if expected:
                raise TrajectoryError(f"{where}: {problem}")
            return Call(name=_name(name, where), args=None, step=index, number=number, problem=problem)
    args, problem = _read_args(raw_args, expected=expected)
    if problem is not None and expected:
        raise TrajectoryError(f"{where}: {problem}")
    return Call(name=_name(name, where), args=args, step=index, number=number, problem=problem)


def _name(name: Any, where: str) -> str:
    if not isinstance(name, str):
        raise TrajectoryError(f"{where} has no tool name (a string), got {_kind(name)}")
    return name


def count_assistant_steps(messages: Any) -> int:
    """How many assistant messages a trajectory holds.

    :raises TrajectoryError: as :func:`normalize`.
    """
    return sum(1 for step in _messages(messages) if step[0] == "assistant")


def count_tool_calls(messages: Any, top_level: Any = None) -> int:
    """How many tool calls a trajectory's assistant messages hold, plus those of
    ``top_level`` (a reply's ``tool_calls``); a call in both (the same non-empty
    ``id``) counts once.

    :raises TrajectoryError: as :func:`normalize`, or ``top_level`` not a list.
    """
    ids: set[str] = set()
    n = 0
    if messages is not None:
        for _, calls in _messages(messages):
            for call in calls:
                n += 1
                ident = call.get("id") if _is_map(call) else None
                if isinstance(ident, str) and ident:
                    ids.add(ident)
    if top_level is not None:
        if not isinstance(top_level, (list, tuple)):
            raise TrajectoryError(f"'tool_calls' must be a list of tool calls, got {_kind(top_level)}")
        for call in top_level:
            ident = call.get("id") if _is_map(call) else None
            if isinstance(ident, str) and ident and ident in ids:
                continue
            n += 1
    return n


# -------------------------------------------------------------- arguments


def _json_equal(a: Any, b: Any) -> bool:
    """Equality of two JSON values: ``1`` equals ``1.0``, a boolean is never a
    number, objects ignore key order."""
    ta, tb = type(a), type(b)
    if ta is tb and (ta is str or ta is int or a is None):
        return a == b
    if isinstance(a, bool) or isinstance(b, bool):
        return ta is tb and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    if _is_map(a) and _is_map(b):
        return a.keys() == b.keys() and all(_json_equal(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_json_equal(x, y) for x, y in zip(a, b))
    return type(a) is type(b) and a == b


_MISSING: Final = object()


def _path(args: Mapping[str, Any], path: str) -> Any:
    """agentevals' nested lookup: ``None`` for a missing key or a non-object."""
    current: Any = args
    for part in path.split("."):
        if not _is_map(current):
            return None
        current = current.get(part)
        if current is None:
            return None
    return current


Matcher = Callable[[dict[str, Any], dict[str, Any]], bool]


@dataclass(frozen=True, slots=True)
class _Rule:
    """How the arguments of two calls of one tool are compared: a mode, a list of
    paths, or a function."""

    mode: str | None = None
    paths: tuple[str, ...] = ()
    function: Matcher | None = None

    def matches(self, left: dict[str, Any], right: dict[str, Any]) -> bool:
        """agentevals' ``matcher(left, right)``."""
        if self.function is not None:
            return bool(self.function(left, right))
        if self.paths:
            return all(_json_equal(_path(left, p), _path(right, p)) for p in self.paths)
        if self.mode == "exact":
            return _json_equal(left, right)
        if self.mode == "subset":  # every pair of left is in right
            return all(k in right and _json_equal(right[k], v) for k, v in left.items())
        if self.mode == "superset":  # every pair of right is in left
            return all(k in left and _json_equal(left[k], v) for k, v in right.items())
        return True  # ignore

    def describe(self) -> str:
        if self.function is not None:
            return "a function"
        if self.paths:
            return "paths " + ", ".join(self.paths)
        return str(self.mode)


def _rule(value: Any, where: str) -> _Rule:
    if isinstance(value, str):
        if value not in ARGS_MATCH_MODES:
            raise TrajectoryError(
                f"{where}: unknown argument match mode {_q(value)}; use one of"
                f" {', '.join(ARGS_MATCH_MODES)}"
            )
        return _Rule(mode=value)
    if isinstance(value, (list, tuple)):
        if not value or not all(isinstance(p, str) and p for p in value):
            raise TrajectoryError(
                f"{where}: a list of argument paths must hold one or more non-empty strings"
            )
        return _Rule(paths=tuple(value))
    if callable(value):
        return _Rule(function=value)
    raise TrajectoryError(
        f"{where} must be an argument match mode ({', '.join(ARGS_MATCH_MODES)}), a list"
        f" of argument paths, or (from Python) a function; got {_kind(value)}"
    )


def _overrides(value: Any, where: str) -> dict[str, _Rule]:
    if value is None:
        return {}
    if not _is_map(value):
        raise TrajectoryError(
            f"{where} must be an object mapping a tool name to its argument match mode, got {_kind(value)}"
        )
    return {str(name): _rule(rule, f"{where}[{_q(name)}]") for name, rule in value.items()}


# --------------------------------------------------------------- checking


def check_example(example: Mapping[str, Any]) -> None:
    """Check an example's ``expected_trajectory`` and its match settings before any
    example runs (the dataset loaders call it).

    :raises TrajectoryError: naming the field, the step and the call.
    """
    expected = example.get("expected_trajectory")
    if not isinstance(expected, list) or not all(_is_map(m) for m in expected):
        what = _kind(expected) if not isinstance(expected, list) else "a list holding " + next(
            _kind(m) for m in expected if not _is_map(m)
        )
        raise TrajectoryError(
            "field 'expected_trajectory' must be a list of message objects"
            f" ({{\"role\": \"assistant\", \"tool_calls\": [...]}}), got {what}"
        )
    try:
        normalize(expected, expected=True)
    except TrajectoryError as exc:
        raise TrajectoryError(f"field 'expected_trajectory': {exc}") from None
    _settings(example, None)


@dataclass(frozen=True, slots=True)
class _Settings:
    mode: str
    args: str
    overrides: Mapping[str, _Rule]

    def rule(self, name: str) -> _Rule:
        return self.overrides.get(name) or _Rule(mode=self.args)


def _settings(example: Mapping[str, Any], base: TrajectoryMatch | None) -> _Settings:
    mode = example.get("trajectory_match_mode", base.trajectory_match_mode if base else "strict")
    if mode not in TRAJECTORY_MATCH_MODES:
        raise TrajectoryError(
            f"field 'trajectory_match_mode' is {_q(mode)}; use one of {', '.join(TRAJECTORY_MATCH_MODES)}"
        )
    args = example.get("tool_args_match_mode", base.tool_args_match_mode if base else "exact")
    if args not in ARGS_MATCH_MODES:
        raise TrajectoryError(
            f"field 'tool_args_match_mode' is {_q(args)}; use one of {', '.join(ARGS_MATCH_MODES)}"
        )
    overrides = dict(base._overrides) if base else {}
    overrides.update(_overrides(example.get("tool_args_match_overrides"), "field 'tool_args_match_overrides'"))
    return _Settings(mode=mode, args=args, overrides=overrides)


# --------------------------------------------------------------- matching


@dataclass(frozen=True, slots=True)
class Verdict:
    """The outcome of a comparison: whether it matched, and the first mismatch."""

    matched: bool
    reason: str
    step: int | None = None
    expected_step: int | None = None
    tool: str | None = None
    argument: str | None = None


def _calls_text(calls: Sequence[Call]) -> str:
    if not calls:
        return "no tool call"
    names = ", ".join(_q(c.name) for c in calls[:5])
    more = f" and {len(calls) - 5} more" if len(calls) > 5 else ""
    return f"{len(calls)} tool call{'s' if len(calls) != 1 else ''} ({names}{more})"


def _why_args(
    system: Call, expected: Call, rule: _Rule, system_left: bool
) -> tuple[str, str | None]:
    """Why the arguments of ``system`` do not match those of ``expected`` under
    ``rule`` (``system_left``: the System's are the matcher's first argument):
    the reason and the argument it names."""
    if system.args is None:
        return str(system.problem), None
    s, e = system.args, expected.args or {}
    if rule.function is not None:
        return f"the argument matcher for {_q(system.name)} returned false", None
    if rule.paths:
        for p in rule.paths:
            got, want = _path(s, p), _path(e, p)
            if not _json_equal(got, want):
                return f"argument {_q(p)} is {_shown(got)}, expected {_shown(want)}", p
        return "the arguments differ", None  # pragma: no cover - the rule matched
    # Which way the inclusion goes: exact asks both.
    left_in_right = rule.mode in ("exact", "subset")
    right_in_left = rule.mode in ("exact", "superset")
    expected_in_system = right_in_left if system_left else left_in_right
    system_in_expected = left_in_right if system_left else right_in_left
    if expected_in_system:
        for k, want in e.items():
            if k not in s:
                return f"argument {_q(k)} is missing (expected {_shown(want)})", k
            if not _json_equal(s[k], want):
                return f"argument {_q(k)} is {_shown(s[k])}, expected {_shown(want)}", k
    if system_in_expected:
        for k, got in s.items():
            if k not in e:
                return f"argument {_q(k)} ({_shown(got)}) is not expected", k
            if not _json_equal(got, e[k]):
                return f"argument {_q(k)} is {_shown(got)}, expected {_shown(e[k])}", k
    return "the arguments differ", None  # pragma: no cover - the rule matched


def _count(n: int, what: str) -> str:
    return f"{n:,} {what}{'' if n == 1 else 's'}"


def _shown(value: Any) -> str:
    return "null" if value is None else _q(value)


def _fits(system: Call, expected: Call, rule: _Rule, system_left: bool) -> bool:
    if rule.mode == "ignore" and not rule.paths and rule.function is None:
        return True
    if system.args is None:
        return False
    e = expected.args or {}
    if system_left:
        return rule.matches(system.args, e)
    return rule.matches(e, system.args)


def _strict(system: list[Step], expected: list[Step], settings: _Settings) -> Verdict:
    for s, e in zip(system, expected):
        if s.role != e.role:
            return Verdict(
                False, f"step {s.index}: role {_q(s.role)}, expected {_q(e.role)}",
                step=s.index, expected_step=e.index,
            )
        if bool(s.calls) != bool(e.calls):
            if s.calls:
                said = f"step {s.index}: the assistant made {_calls_text(s.calls)}, expected no tool call"
            else:
                said = f"step {s.index}: the assistant made no tool call, expected {_calls_text(e.calls)}"
            return Verdict(False, said, step=s.index, expected_step=e.index)
        if len(s.calls) != len(e.calls):
            return Verdict(
                False,
                f"step {s.index}: the assistant made {_calls_text(s.calls)}, expected {_calls_text(e.calls)}",
                step=s.index, expected_step=e.index,
            )
        seen = [False] * len(e.calls)
        for call in s.calls:
            rule = settings.rule(call.name)
            found = False
            for i, want in enumerate(e.calls):
                if not seen[i] and want.name == call.name and _fits(call, want, rule, True):
                    seen[i] = found = True
                    break
            if not found:
                free = [w for i, w in enumerate(e.calls) if not seen[i] and w.name == call.name]
                if not free:
                    others = [w for i, w in enumerate(e.calls) if not seen[i]]
                    return Verdict(
                        False,
                        f"step {s.index}: the call to {_q(call.name)} is not expected there"
                        f" (expected {_calls_text(others)} still unmatched)",
                        step=s.index, expected_step=e.index, tool=call.name,
                    )
                why, arg = _why_args(call, free[0], rule, True)
                return Verdict(
                    False, f"step {s.index}: the call to {_q(call.name)}: {why}",
                    step=s.index, expected_step=e.index, tool=call.name, argument=arg,
                )
    if len(system) != len(expected):
        n, m = len(system), len(expected)
        if n > m:
            extra = system[m]
            said = (f"the trajectory has {n} steps, the expected one {m}: step {m + 1}"
                    f" ({extra.role}{', ' + _calls_text(extra.calls) if extra.calls else ''}) is extra")
            return Verdict(False, said, step=m + 1)
        missing = expected[n]
        said = (f"the trajectory has {n} step{'s' if n != 1 else ''}, the expected one {m}:"
                f" expected step {n + 1} ({missing.role}"
                f"{', ' + _calls_text(missing.calls) if missing.calls else ''}) is missing")
        return Verdict(False, said, expected_step=n + 1)
    return Verdict(True, "")


def _all_calls(steps: list[Step]) -> list[Call]:
    return [c for s in steps for c in s.calls]


def _cover(
    have: list[Call], want: list[Call], settings: _Settings, system_has: bool
) -> Verdict:
    """agentevals' ``_is_trajectory_superset(have, want)``: every call of ``want``,
    in order, takes the first unused call of ``have`` with its name whose arguments
    fit (``matcher(have_args, want_args)``). ``system_has``: ``have`` are the
    System's calls (superset direction); else the expected ones."""
    by_name: dict[str, list[int]] = {}
    for i, call in enumerate(have):
        by_name.setdefault(call.name, []).append(i)
    used = [False] * len(have)
    for call in want:
        rule = settings.rule(call.name)
        candidates = by_name.get(call.name, ())
        found = False
        for i in candidates:
            if used[i]:
                continue
            other = have[i]
            system, expected = (other, call) if system_has else (call, other)
            if _fits(system, expected, rule, system_has):
                used[i] = found = True
                break
        if found:
            continue
        free = [have[i] for i in candidates if not used[i]]
        return _uncovered(call, free, len(candidates), rule, system_has)
    return Verdict(True, "")


def _uncovered(call: Call, free: list[Call], total: int, rule: _Rule, system_has: bool) -> Verdict:
    name = _q(call.name)
    if system_has:  # an expected call the System did not make
        head = f"expected call {call.number} to {name} (expected step {call.step})"
        if total == 0:
            return Verdict(False, f"{head} was not made: the trajectory calls {name} nowhere",
                           expected_step=call.step, tool=call.name)
        if not free:
            return Verdict(
                False, f"{head} was not made: the trajectory calls {name} {total} time"
                f"{'s' if total != 1 else ''}, each already matched by another expected call",
                expected_step=call.step, tool=call.name)
        why, arg = _why_args(free[0], call, rule, True)
        return Verdict(False, f"{head} was not made: the trajectory's first unmatched call to"
                       f" {name} (step {free[0].step}): {why}",
                       step=free[0].step, expected_step=call.step, tool=call.name, argument=arg)
    head = f"the trajectory's call {call.number} to {name} (step {call.step})"
    if total == 0:
        return Verdict(False, f"{head} is not expected: the expected trajectory calls {name} nowhere",
                       step=call.step, tool=call.name)
    if not free:
        return Verdict(
            False, f"{head} is not expected: the expected trajectory calls {name} {total} time"
            f"{'s' if total != 1 else ''}, each already matched by another call",
            step=call.step, tool=call.name)
    why, arg = _why_args(call, free[0], rule, False)
    return Verdict(False, f"{head} matches no expected call: against the first unmatched"
                   f" expected call to {name} (expected step {free[0].step}): {why}",
                   step=call.step, expected_step=free[0].step, tool=call.name, argument=arg)


def match(system: list[Step], expected: list[Step], settings: _Settings) -> Verdict:
    """Compare two normalised trajectories under ``settings``."""
    if settings.mode == "strict":
        return _strict(system, expected, settings)
    mine, theirs = _all_calls(system), _all_calls(expected)
    if settings.mode in ("superset", "unordered"):
        verdict = _cover(mine, theirs, settings, True)
        if not verdict.matched or settings.mode == "superset":
            return verdict
    return _cover(theirs, mine, settings, False)


# ------------------------------------------------------------- evaluator


class TrajectoryMatch:
    """Score a System's trajectory against an example's ``expected_trajectory``.

    Auto-wired for a dataset whose examples carry ``expected_trajectory`` (it
    scores only those). Score: ``trajectory_match``, 1.0 when the trajectories
    match, else 0.0; the details say which step, tool and argument differ first.

    :param trajectory_match_mode: ``strict`` (default), ``unordered``, ``subset`` or
        ``superset``; an example's own ``trajectory_match_mode`` wins.
    :param tool_args_match_mode: ``exact`` (default), ``ignore``, ``subset`` or
        ``superset``; an example's own ``tool_args_match_mode`` wins.
    :param tool_args_match_overrides: tool name → a mode, a list of argument paths
        that must be equal, or a function ``(system_args, expected_args) -> bool``;
        an example's own ``tool_args_match_overrides`` add to these (and win for
        the tools they name).
    :raises ConfigError: an unknown mode or override.
    """

    name = "trajectory_match"

    def __init__(
        self,
        trajectory_match_mode: str = "strict",
        tool_args_match_mode: str = "exact",
        tool_args_match_overrides: Mapping[str, Any] | None = None,
    ) -> None:
        if trajectory_match_mode not in TRAJECTORY_MATCH_MODES:
            raise ConfigError(
                f"trajectory_match_mode must be one of {', '.join(TRAJECTORY_MATCH_MODES)},"
                f" got {trajectory_match_mode!r}."
            )
        if tool_args_match_mode not in ARGS_MATCH_MODES:
            raise ConfigError(
                f"tool_args_match_mode must be one of {', '.join(ARGS_MATCH_MODES)},"
                f" got {tool_args_match_mode!r}."
            )
        try:
            self._overrides = _overrides(tool_args_match_overrides, "tool_args_match_overrides")
        except TrajectoryError as exc:
            raise ConfigError(f"{exc}.") from None
        self.trajectory_match_mode = trajectory_match_mode
        self.tool_args_match_mode = tool_args_match_mode
        self.tool_args_match_overrides = dict(tool_args_match_overrides or {})

    def __repr__(self) -> str:
        return (
            f"TrajectoryMatch(trajectory_match_mode={self.trajectory_match_mode!r},"
            f" tool_args_match_mode={self.tool_args_match_mode!r})"
        )

    def score(self, original: dict[str, Any], processed: dict[str, Any]) -> dict[str, float]:
        return self.score_details(original, processed)[0]

    def score_details(
        self, original: dict[str, Any], processed: dict[str, Any]
    ) -> tuple[dict[str, float], dict[str, Any] | None]:
        """The score and why.

        :raises ExampleDataError: the example's ``expected_trajectory`` or match
            settings cannot be read, or the System's ``trajectory`` is not a list of
            messages (the row's error, naming the step).
        """
        if "expected_trajectory" not in original:
            return {}, None
        try:
            check_example(original)
            settings = _settings(original, self)
            expected = normalize(original["expected_trajectory"], expected=True)
        except TrajectoryError as exc:
            raise ExampleDataError(str(exc)) from None
        raw, taken = system_trajectory(processed)
        try:
            mine = normalize(raw)
        except TrajectoryError as exc:
            raise ExampleDataError(f"the System's trajectory: {exc}") from None
        verdict = match(mine, expected, settings)
        mode = f"{settings.mode}, arguments {settings.args}"
        if settings.overrides:
            mode += "; " + ", ".join(
                f"{_q(k)}: {r.describe()}" for k, r in list(settings.overrides.items())[:5]
            )
        n_calls = sum(len(s.calls) for s in mine)
        details: dict[str, Any] = {
            "reason": (
                f"the trajectory matches ({mode}): {_count(len(mine), 'step')},"
                f" {_count(n_calls, 'tool call')}"
                if verdict.matched else verdict.reason
            ),
            "mode": mode,
            "steps": len(mine),
            "expected_steps": len(expected),
            "tool_calls": n_calls,
            "expected_tool_calls": sum(len(s.calls) for s in expected),
        }
        if taken:
            details["trajectory"] = taken
        for key in ("step", "expected_step", "tool", "argument"):
            value = getattr(verdict, key)
            if value is not None:
                details[key] = inert(value) if isinstance(value, str) else value
        return {TRAJECTORY_SCORE: 1.0 if verdict.matched else 0.0}, details


def system_trajectory(processed: Mapping[str, Any]) -> tuple[Any, str | None]:
    """The System's trajectory: its ``trajectory``, else its reply as one assistant
    step (``response`` and ``tool_calls``), else none; and a note when it was not
    the System's own ``trajectory``."""
    raw = processed.get("trajectory")
    if raw is not None:
        return raw, None
    calls = processed.get("tool_calls")
    if calls is not None or processed.get("response") is not None:
        step = {"role": "assistant", "content": processed.get("response"), "tool_calls": calls}
        return [step], "no 'trajectory' returned: the reply was taken as one assistant step"
    return [], "no 'trajectory' returned, and no reply: an empty trajectory"
