"""ToolCallMatch: did the System call the expected tools with the expected arguments?

A processed example may carry ``tool_calls``: the calls the model made, in OpenAI's
shape (``{"id", "type": "function", "function": {"name", "arguments": "<JSON
text>"}}``), with ``arguments`` already decoded as an object, or flat (``{"name",
"arguments"}``; an Anthropic ``tool_use`` block's ``input`` is read too). An example
says what it expects in ``expected_tool_calls``: a list of ``{"name": str,
"arguments": {arg: value}}`` where a value is

* the expected value itself (``"celsius"``, ``5``, ``[1, 2]``, ``{"k": "v"}``), or
* ``{"any_of": [v1, v2, ...]}``: the accepted values; an empty string ``""`` among
  them means the argument may be left out (BFCL's convention, and like BFCL an empty
  string is then accepted as a value too). Inside an object value (also one inside
  a list), each key's value may itself be ``{"any_of": [...]}``. ``{"any_of":
  [X]}`` means exactly ``X``, which is how an object that is itself
  ``{"any_of": ...}`` is written.

Arguments are matched with the rules of BFCL's AST checker (bfcl-eval's
``ast_checker.py``, re-implemented here; tests/test_tool_calls_bfcl.py checks the
verdicts against it on every Python task of four categories):

* every argument given must be expected (and, when the example's ``tools`` give
  the function's schema, declared in it); every expected argument must be given
  unless ``""`` is among its accepted values; with a schema, its ``required``
  arguments must be given;
* types: with a schema, the parameter's type (``string``, ``integer``,
  ``float``/``number``, ``boolean``, ``array``/``tuple``, ``dict``/``object``,
  ``any`` as a string; the items of an array one level deep) decides, an integer
  is accepted where a float is expected, and a value of the accepted values' type
  is accepted as well (BFCL's variables); without a schema, the value's type must
  be one of the accepted values' types (a bool is never a number);
* strings are compared after BFCL's normalisation (spaces and ``,./-_*^`` removed,
  lower-cased, ``'`` read as ``"``), also inside lists and objects, unless the
  option ``strings="exact"``; numbers compare by value (``5 == 5.0``); an object
  must have only expected keys with accepted values, and every key not marked
  optional; a list of objects is compared object by object.

A call's name must be the expected one, or the expected one with its dots turned
into underscores (what BFCL accepts from APIs that forbid dots in names).

Options (``ToolCallMatch(order=..., mode=...)``, also per ``tool-call`` assertion):

* ``order``: ``"any"`` (default: calls are paired whatever their order, with a
  maximum matching) or ``"strict"`` (paired calls keep the expected order);
* ``mode``: ``"exact"`` (default: the calls and the expected calls pair up one to
  one), ``"subset"`` (every call made is expected; expected calls may be missing)
  or ``"superset"`` (every expected call is made; further calls are allowed);
* ``strings``: ``"bfcl"`` (default) or ``"exact"``.

Scores: ``tool_call_match`` (1.0 or 0.0; the primary score of an example with
``expected_tool_calls``), ``tool_call_f1`` (F1 of the paired calls over the calls
made and expected; 1.0 when neither side has any) and ``tool_call_name_f1`` (the
same over function names only). Every miss is explained in the row's details:
missing call, extra call, wrong function, missing or unexpected argument, wrong
value or type, arguments that are not a JSON object.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

__all__ = [
    "MAX_CALLS",
    "MODES",
    "ORDERS",
    "SCORE_KEYS",
    "STRING_RULES",
    "Call",
    "ExpectedCall",
    "MatchResult",
    "ToolCallMatch",
    "ToolSpecError",
    "check_options",
    "match_tool_calls",
    "parse_calls",
    "parse_expected",
    "parse_tools",
    "standardize_string",
    "tool_fields_problem",
]

ORDERS: Final = ("any", "strict")
MODES: Final = ("exact", "subset", "superset")
STRING_RULES: Final = ("bfcl", "exact")
MATCH: Final = "tool_call_match"
F1: Final = "tool_call_f1"
NAME_F1: Final = "tool_call_name_f1"
SCORE_KEYS: Final = (MATCH, F1, NAME_F1)

#: The most calls of one reply compared (a reply of more counts the rest as extra
#: calls, unpaired): pairing is quadratic, and a hostile reply may hold 10,000.
MAX_CALLS: Final = 1000
#: The most expected calls an example may list.
MAX_EXPECTED: Final = 1000
#: Misses listed in a row's details (the count of the others is said).
_MAX_MISSES: Final = 20
#: Argument errors kept per paired call.
_MAX_ARG_ERRORS: Final = 5


class ToolSpecError(ValueError):
    """An example's ``tools`` or ``expected_tool_calls`` (or a ``tool-call``
    assertion's value) that cannot be used.

    :param field: where, from the field's top (``expected_tool_calls[1].arguments``).
    :param message: what is wrong with it.
    """

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"field {field!r} {message}")
        self.field = field
        self.message = message


# ------------------------------------------------------------------ values


class _Obj(dict):  # type: ignore[type-arg]
    """An expected object: key → list of accepted values (BFCL's form of a dict's
    possible answer). A subclass, so that it is told apart from a literal dict."""


_ANY_OF: Final = "any_of"


def _is_any_of(value: Any) -> bool:
    return type(value) is dict and len(value) == 1 and _ANY_OF in value


def _accepted(value: Any, where: str, depth: int = 0) -> list[Any]:
    """The accepted values of one argument (or of one key of an object)."""
    if _is_any_of(value):
        values = value[_ANY_OF]
        if not isinstance(values, list) or not values:
            raise ToolSpecError(f"{where}.any_of", "must be a non-empty list of accepted values")
        return [_internal(v, f"{where}.any_of[{i}]", depth) for i, v in enumerate(values)]
    return [_internal(value, where, depth)]


def _internal(value: Any, where: str, depth: int) -> Any:
    """One accepted value: objects (also those directly inside a list) become
    :class:`_Obj` whose keys hold accepted values; anything else is literal."""
    if depth > 2:
        return value
    if type(value) is dict:
        return _Obj({str(k): _entry(v, f"{where}.{k}") for k, v in value.items()})
    if type(value) is list and depth == 0:
        return [
            _Obj({str(k): _entry(v, f"{where}[{i}].{k}") for k, v in item.items()})
            if type(item) is dict else item
            for i, item in enumerate(value)
        ]
    return value


def _entry(value: Any, where: str) -> list[Any]:
    if _is_any_of(value):
        values = value[_ANY_OF]
        if not isinstance(values, list) or not values:
            raise ToolSpecError(f"{where}.any_of", "must be a non-empty list of accepted values")
        return list(values)
    return [value]


def standardize_string(text: str) -> str:
    """BFCL's string normalisation: spaces and ``,./-_*^`` removed, lower-cased,
    ``'`` turned into ``"`` ("April 1, 2024" and "april 1 2024" compare equal)."""
    return text.translate(_STRIP).lower().replace("'", '"')


_STRIP: Final = str.maketrans("", "", " ,./-_*^")


# ------------------------------------------------------------------ expected calls


@dataclass(frozen=True)
class ExpectedCall:
    """One expected call: its name and, per argument, the accepted values."""

    name: str
    arguments: Mapping[str, list[Any]]
    #: as written (for details)
    raw: Mapping[str, Any] = field(default_factory=dict)

    def optional(self, arg: str) -> bool:
        return "" in self.arguments[arg]


_CALL_KEYS: Final = frozenset({"name", "arguments"})


def parse_expected(raw: Any, where: str = "expected_tool_calls") -> tuple[ExpectedCall, ...]:
    """Check an ``expected_tool_calls`` value and read it.

    :raises ToolSpecError: not a list of ``{name, arguments}`` objects, a name that
        is not a non-empty string, arguments that are not an object, an ``any_of``
        that is not a non-empty list, more than :data:`MAX_EXPECTED` calls.
    """
    if not isinstance(raw, list):
        raise ToolSpecError(
            where, f"must be a list of expected calls ({{\"name\": ..., \"arguments\": {{...}}}}), got {_kind(raw)}")
    if len(raw) > MAX_EXPECTED:
        raise ToolSpecError(where, f"lists {len(raw):,} calls; at most {MAX_EXPECTED:,} are accepted")
    out = []
    for i, item in enumerate(raw):
        here = f"{where}[{i}]"
        if not isinstance(item, Mapping):
            raise ToolSpecError(here, f"must be an object {{\"name\": ..., \"arguments\": {{...}}}}, got {_kind(item)}")
        unknown = sorted(str(k) for k in item if k not in _CALL_KEYS)
        if unknown:
            raise ToolSpecError(here, f"has the key {unknown[0]!r}; an expected call has only 'name' and 'arguments'")
        name = item.get("name")
        if not isinstance(name, str) or not name.strip():
            raise ToolSpecError(f"{here}.name", f"must be the function's name, a non-empty string; got {_kind(name)}")
        if "arguments" not in item:
            raise ToolSpecError(f"{here}.arguments", "is missing; write {} for a call without arguments")
        args = item["arguments"]
        if not isinstance(args, Mapping):
            raise ToolSpecError(f"{here}.arguments", f"must be an object (argument → value), got {_kind(args)}")
        accepted = {str(k): _accepted(v, f"{here}.arguments.{k}") for k, v in args.items()}
        out.append(ExpectedCall(name, accepted, {"name": name, "arguments": dict(args)}))
    return tuple(out)


# ------------------------------------------------------------------ tools


#: A schema's type name → the Python type of its JSON values (BFCL's table, plus
#: JSON Schema's ``number`` and ``object``).
_TYPES: Final[Mapping[str, type]] = {
    "string": str, "integer": int, "float": float, "number": float, "boolean": bool,
    "array": list, "tuple": list, "dict": dict, "object": dict, "any": str,
}
_NESTED: Final = frozenset({"array", "tuple"})


@dataclass(frozen=True)
class Param:
    """One parameter of a function schema."""

    type: str | None
    items: str | None = None


@dataclass(frozen=True)
class FunctionSchema:
    """What a function schema says of its parameters; ``params`` is ``None`` when
    the document is not a JSON Schema object (xLAM's parameter table): then no type
    or required check is made."""

    name: str
    params: Mapping[str, Param] | None
    required: tuple[str, ...] = ()


def parse_tools(raw: Any, where: str = "tools") -> dict[str, FunctionSchema]:
    """Check an example's ``tools`` and read the function schemas by name.

    Accepted: BFCL's and xLAM's documents (``{name, description, parameters}``),
    OpenAI's (``{"type": "function", "function": {...}}``) and Anthropic's
    (``{name, input_schema}``).

    :raises ToolSpecError: not a list of objects, an object without a function
        name, ``parameters`` that are not an object, ``properties`` that are not
        an object of objects, ``required`` that is not a list of strings.
    """
    if not isinstance(raw, list):
        raise ToolSpecError(where, f"must be a list of function schemas, got {_kind(raw)}")
    out: dict[str, FunctionSchema] = {}
    for i, item in enumerate(raw):
        here = f"{where}[{i}]"
        if not isinstance(item, Mapping):
            raise ToolSpecError(here, f"must be a function schema (an object with a 'name'), got {_kind(item)}")
        doc: Any = item
        if isinstance(item.get("function"), Mapping) and "name" not in item:
            doc, here = item["function"], f"{here}.function"
        name = doc.get("name")
        if not isinstance(name, str) or not name.strip():
            raise ToolSpecError(f"{here}.name", f"must be the function's name, a non-empty string; got {_kind(name)}")
        key = "input_schema" if "parameters" not in doc and "input_schema" in doc else "parameters"
        params = doc.get(key)
        if params is None:
            out.setdefault(name, FunctionSchema(name, {}, ()))
            continue
        if not isinstance(params, Mapping):
            raise ToolSpecError(f"{here}.{key}", f"must be an object (a JSON Schema), got {_kind(params)}")
        out.setdefault(name, _schema(name, params, f"{here}.{key}"))
    return out


def _schema(name: str, params: Mapping[str, Any], where: str) -> FunctionSchema:
    props = params.get("properties")
    kind = params.get("type")
    if props is None or not (kind is None or isinstance(kind, str)):
        return FunctionSchema(name, None)  # not a JSON Schema object (xLAM's table)
    if not isinstance(props, Mapping) or not all(isinstance(p, Mapping) for p in props.values()):
        raise ToolSpecError(f"{where}.properties", "must be an object of parameter schemas (objects)")
    required = params.get("required", [])
    if required is None:
        required = []
    if not isinstance(required, list) or not all(isinstance(r, str) for r in required):
        raise ToolSpecError(f"{where}.required", f"must be a list of parameter names, got {_kind(required)}")
    out = {}
    for pname, p in props.items():
        ptype = p.get("type")
        items = p.get("items")
        itype = items.get("type") if isinstance(items, Mapping) else None
        out[str(pname)] = Param(
            ptype if isinstance(ptype, str) else None, itype if isinstance(itype, str) else None)
    return FunctionSchema(name, out, tuple(required))


def _lookup(tools: Mapping[str, FunctionSchema] | None, name: str) -> FunctionSchema | None:
    if not tools:
        return None
    found = tools.get(name)
    if found is None and "." in name:
        found = tools.get(name.replace(".", "_"))
    return found


# ------------------------------------------------------------------ calls made


@dataclass(frozen=True)
class Call:
    """One call the System made: its name, its arguments (``None`` when they could
    not be read, ``problem`` saying why)."""

    name: str
    arguments: dict[str, Any] | None
    problem: str | None = None


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _decode_arguments(text: str) -> tuple[dict[str, Any] | None, str | None, str | None]:
    """Arguments' JSON text → (the object, None, a repeated key or None), or (None,
    why not, None). A repeated key keeps its last value (as ``json.loads`` and
    ``JSON.parse`` do); the caller notes it."""
    if not text.strip():
        return {}, None, None
    repeated: list[str] = []

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, value in items:
            if key in out and not repeated:
                repeated.append(key)
            out[key] = value
        return out

    decoder = json.JSONDecoder(object_pairs_hook=pairs, parse_constant=_refuse_constant)
    try:
        value = decoder.decode(text)
    except RecursionError:
        return None, "the arguments are nested too deeply to read", None
    except ValueError as exc:
        return None, f"the arguments are not valid JSON ({_clip(str(exc), 120)})", None
    from .._json import value_problem

    problem = value_problem(value, strings=False)
    if problem is not None:
        return None, f"the arguments cannot be read: {problem}", None
    if not isinstance(value, dict):
        return None, f"the arguments are {_kind(value)}, not a JSON object", None
    return value, None, repeated[0] if repeated else None


def parse_calls(raw: Any) -> tuple[list[Call], list[str]]:
    """The calls of a processed dict's ``tool_calls`` (``None`` is no call), and
    notes (repeated keys).

    :raises ValueError: ``tool_calls`` is neither ``None`` nor a list (a System's
        bug: the row is an error).
    """
    if raw is None:
        return [], []
    if isinstance(raw, tuple):
        raw = list(raw)
    if not isinstance(raw, list):
        raise ValueError(
            f"the System's tool_calls is {_kind(raw)}; it must be a list of calls"
            " ({'type': 'function', 'function': {'name': ..., 'arguments': ...}})")
    calls: list[Call] = []
    notes: list[str] = []
    for i, item in enumerate(raw):
        if not isinstance(item, Mapping):
            calls.append(Call("", None, f"call {i + 1} is {_kind(item)}, not a call object"))
            continue
        body: Any = item.get("function") if isinstance(item.get("function"), Mapping) else item
        name = body.get("name")
        if not isinstance(name, str):
            calls.append(Call("", None, f"call {i + 1} has no function name"))
            continue
        if "arguments" in body:
            args = body.get("arguments")
        elif "input" in body:
            args = body.get("input")
        else:
            args = body.get("args")
        if args is None:
            calls.append(Call(name, {}))
        elif isinstance(args, str):
            value, problem, repeated = _decode_arguments(args)
            if repeated is not None:
                notes.append(f"call {i + 1} ({_name(name)}) repeats the argument key"
                             f" {_shown(repeated)}; its last value is used")
            calls.append(Call(name, value, problem))
        elif isinstance(args, Mapping):
            from .._json import value_problem

            problem = value_problem(args, strings=False)
            if problem is not None:
                calls.append(Call(name, None, f"the arguments cannot be read: {problem}"))
            else:
                calls.append(Call(name, dict(args)))
        else:
            calls.append(Call(name, None, f"the arguments are {_kind(args)}, not a JSON object"))
    return calls, notes


# ------------------------------------------------------------------ one argument


def _first_type(accepted: Sequence[Any]) -> type | None:
    """The type of the first accepted value that is not ``""`` (BFCL's)."""
    for a in accepted:
        if not (type(a) is str and a == ""):
            return dict if isinstance(a, _Obj) else type(a)
    return None


def _type_name(t: type | None) -> str:
    return {str: "string", int: "integer", float: "float", bool: "boolean", list: "array",
            dict: "object", type(None): "null"}.get(t, getattr(t, "__name__", "?"))  # type: ignore[arg-type]


def _std(value: Any, strings: str) -> Any:
    return standardize_string(value) if strings == "bfcl" and type(value) is str else value


def _check_arg(param: str, value: Any, accepted: list[Any], spec: Param | None,
               strings: str, explain: bool = True) -> str | None:
    """Why ``value`` is not accepted for ``param`` (``None`` when it is; without
    ``explain``, ``"x"`` instead of the sentence)."""
    t = _TYPES.get(spec.type) if spec is not None and spec.type is not None else None
    is_variable = False
    nested: type | None = None
    if t is not None:
        assert spec is not None
        if spec.type in _NESTED and spec.items is not None:
            nested = _TYPES.get(spec.items)
        if t is float and type(value) is int:
            value = float(value)
        pa_type = _first_type(accepted)
        if pa_type is not None and pa_type is not t:
            is_variable = True
        if type(value) is t:
            if nested is not None and not any(
                type(a) is not list or all(_item_type_ok(v, a, nested) for v in value)
                for a in accepted
            ):
                return "x" if not explain else (f"wrong type for argument {_shown(param)}: expected {spec.type} of"
                        f" {spec.items}, got {_short(value)}")
        elif pa_type is not None and type(value) is pa_type:
            is_variable = True
        else:
            return "x" if not explain else (f"wrong type for argument {_shown(param)}: expected {spec.type},"
                    f" got {_type_name(type(value))} {_short(value)}")
    else:
        allowed = {dict if isinstance(a, _Obj) else type(a) for a in accepted if not (type(a) is str and a == "")}
        if allowed:
            if type(value) is int and type(value) not in allowed and float in allowed:
                value = float(value)
            if type(value) not in allowed:
                if not explain:
                    return "x"
                names = " or ".join(sorted(_type_name(a) for a in allowed))
                return (f"wrong type for argument {_shown(param)}: expected {names},"
                        f" got {_type_name(type(value))} {_short(value)}")
        t = type(value)
        if t is list:
            first = next((a for a in accepted if type(a) is list and a), None)
            nested = dict if first is not None and isinstance(first[0], _Obj) else None
    ok = True
    if not is_variable:
        if t is dict:
            ok = _dict_ok(value, accepted, strings)
        elif t is list and nested is dict:
            ok = _list_dict_ok(value, accepted, strings)
        elif t is str:
            ok = _std(value, strings) in [_std(a, strings) for a in accepted if type(a) is str]
        elif t is list:
            ok = _list_ok(value, accepted, strings)
        else:
            ok = _raw_in(value, accepted)
    else:
        ok = _raw_in(value, accepted)
    if ok:
        return None
    if not explain:
        return "x"
    shown = [a for a in accepted if not (type(a) is str and a == "")]
    return (f"wrong value for argument {_shown(param)}: got {_short(value)}, expected"
            f" {'one of ' if len(shown) > 1 else ''}{_short(_plain(shown if len(shown) > 1 else shown[0] if shown else ''))}")


def _item_type_ok(item: Any, accepted_list: list[Any], nested: type) -> bool:
    if type(item) is nested:
        return True
    pa = _first_type(accepted_list)
    return pa is not None and type(item) is pa


def _raw_in(value: Any, accepted: list[Any]) -> bool:
    for a in accepted:
        if isinstance(a, _Obj):
            if type(value) is dict and _dict_ok(value, [a], "exact"):
                return True
        elif _eq(value, a):
            return True
    return False


def _eq(a: Any, b: Any) -> bool:
    """Python's ``==`` (``1 == 1.0 == True``, as BFCL compares), without raising on
    deep values."""
    try:
        return bool(a == b)
    except RecursionError:
        return False


def _list_ok(value: list[Any], accepted: list[Any], strings: str) -> bool:
    got = [_std(v, strings) for v in value]
    for a in accepted:
        if type(a) is str and a == "":
            candidate: list[Any] = []
        elif type(a) is list:
            candidate = a
        else:
            continue
        if len(candidate) != len(got):
            continue
        if all(
            (_dict_ok(g, [c], strings) if type(g) is dict else False)
            if isinstance(c, _Obj) else _eq(g, _std(c, strings))
            for g, c in zip(got, candidate)
        ):
            return True
    return False


def _dict_ok(value: dict[str, Any], accepted: list[Any], strings: str) -> bool:
    for a in accepted:
        if not isinstance(a, _Obj):
            continue
        good = True
        for key, v in value.items():
            if key not in a:
                good = False
                break
            if not any(_eq(_std(v, strings), _std(c, strings)) for c in a[key]):
                good = False
                break
        if good and all(key in value or "" in a[key] for key in a):
            return True
    return False


def _list_dict_ok(value: list[Any], accepted: list[Any], strings: str) -> bool:
    for a in accepted:
        if type(a) is str and a == "":
            if not value:
                return True
            continue
        if type(a) is not list or len(a) != len(value):
            continue
        if all(type(v) is dict and isinstance(c, _Obj) and _dict_ok(v, [c], strings)
               for v, c in zip(value, a)):
            return True
    return False


# ------------------------------------------------------------------ one call


def _names_match(called: str, expected: str) -> bool:
    return called == expected or ("." in expected and called == expected.replace(".", "_"))


def call_errors(call: Call, expected: ExpectedCall, tools: Mapping[str, FunctionSchema] | None,
                strings: str = "bfcl", explain: bool = True) -> list[str]:
    """Why ``call`` is not ``expected`` (an empty list when it is). Without
    ``explain``, the verdict only: at most one error, not worded."""
    if call.problem is not None:
        return [call.problem]
    if not _names_match(call.name, expected.name):
        return [f"wrong function: called {_shown(call.name)}, expected {_shown(expected.name)}"]
    args = call.arguments or {}
    schema = _lookup(tools, expected.name)
    props = schema.params if schema is not None else None
    errors: list[str] = []
    if props is not None and schema is not None:
        for req in schema.required:
            if req not in args:
                if not explain:
                    return ["x"]
                errors.append(f"missing required argument {_shown(req)}")
    for param, value in args.items():
        if param not in expected.arguments or (props is not None and param not in props):
            if not explain:
                return ["x"]
            errors.append(f"unexpected argument {_shown(param)}")
            continue
        problem = _check_arg(param, value, expected.arguments[param],
                             props.get(param) if props is not None else None, strings, explain)
        if problem is not None:
            if not explain:
                return ["x"]
            errors.append(problem)
    for param in expected.arguments:
        if param not in args and not expected.optional(param) and not (
            props is not None and schema is not None and param in schema.required
        ):
            errors.append(f"missing argument {_shown(param)}")
    return errors


# ------------------------------------------------------------------ many calls


@dataclass
class MatchResult:
    """The verdict on a reply's calls."""

    passed: bool
    f1: float
    name_f1: float
    #: (expected index, call index) of the paired calls
    pairs: list[tuple[int, int]]
    misses: list[str]
    notes: list[str] = field(default_factory=list)


def check_options(order: Any, mode: Any, strings: Any, where: str = "") -> None:
    """:raises ValueError: an unknown ``order``, ``mode`` or ``strings``."""
    for what, value, allowed in (("order", order, ORDERS), ("mode", mode, MODES),
                                 ("strings", strings, STRING_RULES)):
        if value not in allowed:
            raise ValueError(f"{where}{what} must be one of {', '.join(map(repr, allowed))}; got {value!r}")


def match_tool_calls(
    calls: Sequence[Call],
    expected: Sequence[ExpectedCall],
    tools: Mapping[str, FunctionSchema] | None = None,
    *,
    order: str = "any",
    mode: str = "exact",
    strings: str = "bfcl",
    explain: bool = True,
) -> MatchResult:
    """Pair ``calls`` with ``expected`` and judge them (see the module docstring).

    :param explain: word every miss (``misses``); without it, the verdict and the
        scores only (faster).
    """
    check_options(order, mode, strings)
    notes: list[str] = []
    if len(calls) > MAX_CALLS:
        notes.append(f"the reply made {len(calls):,} calls; the first {MAX_CALLS:,} are"
                     " compared, the others count as extra calls")
    compared = list(calls[:MAX_CALLS])
    n, m = len(expected), len(compared)
    errors: dict[tuple[int, int], list[str]] = {}
    valid: dict[tuple[int, int], bool] = {}

    def ok(i: int, j: int) -> bool:
        key = (i, j)
        found = valid.get(key)
        if found is None:
            call = compared[j]
            if call.problem is not None or not _names_match(call.name, expected[i].name):
                found = False
            else:
                found = not call_errors(call, expected[i], tools, strings, explain=False)
            valid[key] = found
        return found

    if order == "strict":
        pairs = _ordered_pairs(n, m, ok)
    else:
        pairs = _max_matching(n, m, ok, expected, compared)
    paired_e = {i for i, _ in pairs}
    paired_c = {j for _, j in pairs}
    total_calls = len(calls)
    if mode == "exact":
        passed = len(pairs) == n == total_calls
    elif mode == "subset":
        passed = len(pairs) == total_calls
    else:
        passed = len(pairs) == n
    tp = len(pairs)
    f1 = 1.0 if n == 0 and total_calls == 0 else (2 * tp / (n + total_calls))
    name_tp = _name_overlap([c.name for c in calls], [e.name for e in expected])
    name_f1 = 1.0 if n == 0 and total_calls == 0 else (2 * name_tp / (n + total_calls))
    def errs(i: int, j: int) -> list[str]:
        found = errors.get((i, j))
        if found is None:
            found = errors[(i, j)] = call_errors(compared[j], expected[i], tools, strings)
        return found

    misses: list[str] = []
    if not passed and explain:
        misses = _explain(compared, expected, paired_e, paired_c, errs, mode, order, total_calls)
    return MatchResult(passed, f1, name_f1, pairs, misses, notes)


def _ordered_pairs(n: int, m: int, ok: Any) -> list[tuple[int, int]]:
    """The longest order-keeping pairing (LCS over the ``ok`` relation)."""
    if n == 0 or m == 0:
        return []
    # dp[i][j]: the best pairing of expected[i:] and calls[j:]
    dp = [[0] * (m + 1) for _ in range(n + 1)]
    for i in range(n - 1, -1, -1):
        row, below = dp[i], dp[i + 1]
        for j in range(m - 1, -1, -1):
            best = below[j] if below[j] > row[j + 1] else row[j + 1]
            if below[j + 1] + 1 > best and ok(i, j):
                best = below[j + 1] + 1
            row[j] = best
    pairs = []
    i = j = 0
    while i < n and j < m:
        if dp[i][j] == dp[i + 1][j + 1] + 1 and ok(i, j):
            pairs.append((i, j))
            i += 1
            j += 1
        elif dp[i][j] == dp[i + 1][j]:
            i += 1
        else:
            j += 1
    return pairs


def _max_matching(n: int, m: int, ok: Any, expected: Sequence[ExpectedCall],
                  calls: Sequence[Call]) -> list[tuple[int, int]]:
    """A maximum pairing whatever the order (augmenting paths), trying each
    expected call's candidates in the calls' order: the calls of the same function
    only, or a call whose arguments could not be read."""
    candidates: list[list[int]] = []
    for i in range(n):
        candidates.append([j for j in range(m)
                           if calls[j].problem is None and _names_match(calls[j].name, expected[i].name)])
    owner: list[int] = [-1] * m  # call → expected

    def augment(i: int, seen: list[bool]) -> bool:
        # iterative DFS over alternating paths
        stack: list[tuple[int, int]] = [(i, 0)]
        path: list[tuple[int, int]] = []
        while stack:
            e, k = stack[-1]
            cands = candidates[e]
            advanced = False
            while k < len(cands):
                j = cands[k]
                k += 1
                if seen[j] or not ok(e, j):
                    continue
                seen[j] = True
                stack[-1] = (e, k)
                path.append((e, j))
                if owner[j] == -1:
                    for pe, pj in path:
                        owner[pj] = pe
                    return True
                stack.append((owner[j], 0))
                advanced = True
                break
            if not advanced:
                stack.pop()
                if path:
                    path.pop()
        return False

    for i in range(n):
        augment(i, [False] * m)
    return sorted((e, j) for j, e in enumerate(owner) if e != -1)


def _name_overlap(called: Sequence[str], expected: Sequence[str]) -> int:
    pool = Counter(called)
    count = 0
    rest = []
    for name in expected:
        if pool[name] > 0:
            pool[name] -= 1
            count += 1
        else:
            rest.append(name)
    for name in rest:
        alt = name.replace(".", "_")
        if "." in name and pool[alt] > 0:
            pool[alt] -= 1
            count += 1
    return count


def _explain(calls: Sequence[Call], expected: Sequence[ExpectedCall], paired_e: set[int],
             paired_c: set[int], errs: Any, mode: str, order: str,
             total_calls: int) -> list[str]:
    """One sentence per miss: an expected call left unpaired (explained by the
    closest unpaired call of its function, else by a call of another function in
    exact mode, else missing), then each unpaired call (extra)."""
    misses: list[str] = []
    free_c = [j for j in range(len(calls)) if j not in paired_c]
    used: set[int] = set()
    lonely: list[int] = []
    if mode != "subset":
        for i, exp in enumerate(expected):
            if i in paired_e:
                continue
            same = [j for j in free_c if j not in used and _names_match(calls[j].name, exp.name)]
            if not same:
                lonely.append(i)
                continue
            found = sorted((len(errs(i, j)), j) for j in same)
            j = found[0][1]
            used.add(j)
            why = errs(i, j)
            text = "; ".join(why[:_MAX_ARG_ERRORS])
            if len(why) > _MAX_ARG_ERRORS:
                text += f"; and {len(why) - _MAX_ARG_ERRORS} more"
            if calls[j].problem is not None:
                misses.append(f"call {j + 1} ({_name(calls[j].name)}) cannot be read for expected"
                              f" call {i + 1}: {text}")
            else:
                misses.append(f"call {j + 1} {_render_call(calls[j])} does not match expected call"
                              f" {i + 1} {_render_expected(exp)}: {text}")
        for i in lonely:
            exp = expected[i]
            other = [j for j in free_c if j not in used]
            if mode == "exact" and other:
                # in exact mode, the calls left over were meant for these
                j = i if order == "strict" and i in other else other[0]
                used.add(j)
                misses.append(f"wrong function: call {j + 1} {_render_call(calls[j])} where expected"
                              f" call {i + 1} {_render_expected(exp)} was due")
            else:
                misses.append(f"missing call: expected call {i + 1} {_render_expected(exp)}")
    if mode != "superset":
        for j in free_c:
            if j in used:
                continue
            call = calls[j]
            if call.problem is not None:
                misses.append(f"extra call {j + 1} ({_name(call.name)}) that cannot be read: {call.problem}")
            elif order == "strict" and any(_names_match(call.name, e.name) for e in expected):
                misses.append(f"extra or out-of-order call {j + 1} {_render_call(call)}")
            else:
                misses.append(f"extra call {j + 1} {_render_call(call)}")
        if total_calls > len(calls):
            misses.append(f"{total_calls - len(calls):,} more calls not compared (extra)")
    if not misses:
        misses.append("the calls do not pair with the expected ones in order")
    return misses


# ------------------------------------------------------------------ showing


def _shown(text: str) -> str:
    """A name quoted, its control and invisible characters escaped."""
    return json.dumps(text, ensure_ascii=not text.isprintable())


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _plain(value: Any) -> Any:
    """An accepted value as written (``_Obj`` back to a dict of its accepted values)."""
    if isinstance(value, _Obj):
        return {k: (v[0] if len(v) == 1 else {"any_of": v}) for k, v in value.items()}
    if type(value) is list:
        return [_plain(v) for v in value]
    return value


def _short(value: Any, limit: int = 80) -> str:
    try:
        text = json.dumps(value, ensure_ascii=True, separators=(", ", ": "), default=repr)
    except (ValueError, RecursionError):
        text = "<unprintable>"
    return _clip(text, limit)


def _name(name: str) -> str:
    """A function name as details show it: as is when it is printable, else quoted
    with its control and invisible characters escaped."""
    return name if name and name.isprintable() and len(name) <= 200 else _clip(_shown(name), 200)


def _render_call(call: Call) -> str:
    return _clip(f"{_name(call.name)}({_short(call.arguments, 160) if call.arguments else ''})", 240)


def _render_expected(exp: ExpectedCall) -> str:
    args = exp.raw.get("arguments") if exp.raw else None
    return _clip(f"{_name(exp.name)}({_short(args, 160) if args else ''})", 240)


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, str):
        return f"the string {json.dumps(value[:40], ensure_ascii=True)}"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, (list, tuple)):
        return "a list"
    if isinstance(value, Mapping):
        return "an object"
    return type(value).__name__


# ------------------------------------------------------------------ evaluator


class ToolCallMatch:
    """Score a reply's ``tool_calls`` against the example's ``expected_tool_calls``
    (see the module docstring for the rules).

    Auto-wired when an example carries ``expected_tool_calls``; it returns ``{}``
    for the others.

    :param order: ``"any"`` or ``"strict"``.
    :param mode: ``"exact"``, ``"subset"`` or ``"superset"``.
    :param strings: ``"bfcl"`` (BFCL's normalisation) or ``"exact"``.
    """

    name = "tool_call_match"

    def __init__(self, order: str = "any", mode: str = "exact", strings: str = "bfcl") -> None:
        check_options(order, mode, strings, "ToolCallMatch: ")
        self.order = order
        self.mode = mode
        self.strings = strings

    def __repr__(self) -> str:
        return f"ToolCallMatch(order={self.order!r}, mode={self.mode!r}, strings={self.strings!r})"

    def score(self, original: dict[str, Any], processed: dict[str, Any]) -> dict[str, float]:
        return self.score_details(original, processed)[0]

    def score_details(
        self, original: dict[str, Any], processed: dict[str, Any]
    ) -> tuple[dict[str, float], dict[str, Any] | None]:
        if "expected_tool_calls" not in original:
            return {}, None
        expected, tools = read_example(original)
        calls, notes = parse_calls(processed.get("tool_calls"))
        result = match_tool_calls(calls, expected, tools, order=self.order, mode=self.mode,
                                  strings=self.strings)
        scores = {MATCH: 1.0 if result.passed else 0.0, F1: result.f1, NAME_F1: result.name_f1}
        return scores, details(result, calls, expected, self.order, self.mode, notes)


def read_example(example: Mapping[str, Any]) -> tuple[tuple[ExpectedCall, ...], dict[str, FunctionSchema] | None]:
    """An example's expected calls and tool schemas.

    :raises ExampleDataError: either field cannot be used (a dataset checked at
        load never gets here with one).
    """
    from ..errors import ExampleDataError

    try:
        expected = parse_expected(example.get("expected_tool_calls"))
        raw_tools = example.get("tools")
        tools = parse_tools(raw_tools) if raw_tools is not None else None
    except ToolSpecError as exc:
        raise ExampleDataError(str(exc)) from None
    return expected, tools


def tool_fields_problem(example: Mapping[str, Any]) -> str | None:
    """Why an example's ``tools`` or ``expected_tool_calls`` cannot be used
    (``field 'tools[1].name' must be ...``), or ``None``: what dataset loaders check
    before the first example runs."""
    try:
        if "tools" in example:
            parse_tools(example["tools"])
        if "expected_tool_calls" in example:
            parse_expected(example["expected_tool_calls"])
    except ToolSpecError as exc:
        return str(exc)
    return None


def details(result: MatchResult, calls: Sequence[Call], expected: Sequence[ExpectedCall],
            order: str, mode: str, notes: Sequence[str] = ()) -> dict[str, Any]:
    """A row's details: the verdict's reason, every miss, the calls on both sides."""
    n, m = len(expected), len(calls)
    if result.passed:
        reason = (f"the {m} call{'s' if m != 1 else ''} match{'es' if m == 1 else ''} the expected"
                  f" call{'s' if n != 1 else ''}" if m or n else "no call expected, none made")
    else:
        first = result.misses[0] if result.misses else "the calls do not match"
        reason = (f"{len(result.misses)} miss{'es' if len(result.misses) != 1 else ''}"
                  f" ({len(result.pairs)} of {n} expected call{'s' if n != 1 else ''} paired,"
                  f" {m} made); first: {first}")
    out: dict[str, Any] = {"reason": reason}
    if result.misses:
        shown = result.misses[:_MAX_MISSES]
        if len(result.misses) > _MAX_MISSES:
            shown.append(f"… {len(result.misses) - _MAX_MISSES} more misses")
        out["misses"] = shown
    out["expected"] = [_render_expected(e) for e in expected[:_MAX_MISSES]]
    out["called"] = [_render_call(c) if c.problem is None or c.name else "(unreadable)"
                     for c in calls[:_MAX_MISSES]]
    if m > _MAX_MISSES:
        out["called"].append(f"… {m - _MAX_MISSES:,} more calls")
    if order != "any" or mode != "exact":
        out["rules"] = f"order {order}, mode {mode}"
    if notes or result.notes:
        out["notes"] = [*notes, *result.notes][:_MAX_MISSES]
    return out
