"""The basic level as root (issue 38): a container that refuses ``unshare``.

There the program used to run as uid 0: it read ``/etc/shadow``, could write the
plugin's own files, the standard library and the virtual environment that later
runs load, and signal the pytest process. Now its children switch to an unused uid
(the interpreter, unreachable to that uid under ``/root``, is reached through
directories the forker opened), or the sandbox refuses to run as root at all.

``namespaces=False`` gives the basic level here; ``CTXBENCH_SANDBOX_NAMESPACES=0``
does the same through the environment (for pytest runs), and
``CTXBENCH_SANDBOX_UID_SWITCH=0`` makes the zygote behave as if no unused uid could
run Python (the refusal).
"""

from __future__ import annotations

import json
import os
import sys
import sysconfig
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import pytest_context_bench
from pytest_context_bench.evaluators.sandbox import Sandbox, SandboxError

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="the uid switch is tested on Linux"
)
as_root = pytest.mark.skipif(
    not hasattr(os, "geteuid") or os.geteuid() != 0,
    reason="the uid switch applies to root (unprivileged children keep the user's uid)",
)


@pytest.fixture(scope="module")
def basic() -> Iterator[Sandbox]:
    sandbox = Sandbox(timeout=20, namespaces=False)
    yield sandbox
    sandbox.close()


def _attack(sandbox: Sandbox, body: str, **names: Any) -> dict[str, str]:
    """Run ``body`` (code filling the dict ``seen`` name -> outcome) as the program,
    at import; the outcomes it printed."""
    program = (
        "import json, os, signal, sys\n"
        "seen = {}\n"
        "def attempt(name, action):\n"
        "    try:\n"
        "        action()\n"
        "        seen[name] = 'DONE'\n"
        "    except OSError as exc:\n"
        "        seen[name] = 'denied: ' + type(exc).__name__\n"
        + "".join(f"{k} = json.loads({json.dumps(json.dumps(v))})\n"
                  for k, v in names.items())
        + body
        + "print('SEEN', json.dumps(seen), flush=True)\n"
        "def f():\n    return 1\n"
    )
    result = sandbox.run(program, "assert f() == 1\n")
    assert result.passed, result
    line = next(x for x in result.output.splitlines() if x.startswith("SEEN "))
    seen: dict[str, str] = json.loads(line[5:])
    return seen


@as_root
def test_basic_children_switch_to_an_unused_uid(basic: Sandbox) -> None:
    iso = basic.isolation()
    assert iso["level"] == "basic" and iso["uid_switch"] is True, iso
    assert iso["process_limit"] is True, iso
    seen = _attack(basic, "seen['uid'] = str(os.getuid()); seen['euid'] = str(os.geteuid())\n")
    assert seen["uid"] != "0" and seen["euid"] != "0", seen


@as_root
def test_basic_attacks_on_the_host_fail(basic: Sandbox, tmp_path: Path) -> None:
    """As the program: read /etc/shadow, write into the plugin's package, the
    standard library (by its real path and by the path the program imports it
    from), the virtual environment running pytest (a ``.pth`` file runs at every
    start), signal pytest, read pytest's environment, read another user's file in
    /tmp. Every one must fail."""
    name = f"ctxbench_pwned_{uuid.uuid4().hex}"
    secret = Path("/tmp") / f"{name}.secret"
    secret.write_text("secret")
    secret.chmod(0o600)
    package = os.path.dirname(pytest_context_bench.__file__)
    stdlib = sysconfig.get_paths()["stdlib"]
    site = sysconfig.get_paths()["purelib"]
    targets = {
        "package": os.path.join(package, name + ".py"),
        "package_init": os.path.join(package, "__init__.py"),
        "stdlib": os.path.join(stdlib, name + ".py"),
        "stdlib_os": os.path.join(stdlib, "os.py"),
        "venv_pth": os.path.join(site, name + ".pth"),
    }
    body = (
        "attempt('shadow', lambda: open('/etc/shadow', 'rb').read())\n"
        "for key, path in targets.items():\n"
        "    attempt('write_' + key, lambda: open(path, 'a').close())\n"
        "here = os.path.dirname(os.__file__)\n"
        "attempt('write_imported_stdlib', lambda: open(os.path.join(here, NAME + '.py'), 'w').close())\n"
        "attempt('append_imported_os', lambda: open(os.__file__, 'a').close())\n"
        "for entry in sys.path:\n"
        "    attempt('write_sys_path:' + entry,\n"
        "            lambda: open(os.path.join(entry, NAME + '.py'), 'w').close())\n"
        "for n in range(3, 20):\n"
        "    if os.path.isdir('/proc/self/fd/%d' % n):  # a directory the forker opened\n"
        "        attempt('create_at_fd_%d' % n, lambda: os.close(os.open(\n"
        "            NAME, os.O_CREAT | os.O_WRONLY, dir_fd=n)))\n"
        "        attempt('fchmod_fd_%d' % n, lambda: os.fchmod(n, 0o777))\n"
        "attempt('kill_pytest', lambda: os.kill(PYTEST, 0))\n"
        "attempt('kill_forker', lambda: os.kill(os.getppid(), 0))\n"
        "attempt('pytest_environ', lambda: open('/proc/%d/environ' % PYTEST, 'rb').read())\n"
        "attempt('tmp_secret', lambda: open(SECRET).read())\n"
        "attempt('pytest_tmp', lambda: os.listdir(TMP))\n"
    )
    try:
        seen = _attack(basic, body, targets=targets, NAME=name, PYTEST=os.getpid(),
                       SECRET=str(secret), TMP=str(tmp_path))
    finally:
        secret.unlink()
        roots = {sys.base_prefix, sys.base_exec_prefix, stdlib, site,
                 sysconfig.get_paths()["platstdlib"],
                 os.path.dirname(os.path.realpath(getattr(sys, "_base_executable", "")
                                                  or sys.executable))}
        for path in [*targets.values(), *(os.path.join(r, name) for r in roots)]:
            if name in path and os.path.exists(path):
                os.unlink(path)
    assert len(seen) >= 13, seen
    done = {k: v for k, v in seen.items() if not v.startswith("denied")}
    assert not done, seen
    for path in targets.values():
        assert not (name in path and os.path.exists(path))


@as_root
def test_honest_programs_still_import_the_standard_library(basic: Sandbox) -> None:
    """The program and the tests (the judge) import modules the zygote had not
    loaded, packages among them, an extension module, and a codec."""
    program = (
        "import email.mime.text, sqlite3, xml.etree.ElementTree as ET, _csv, array\n"
        "def f():\n"
        "    import json.tool, zoneinfo\n"
        "    return ['é'.encode('cp1252').decode('cp1252'), ET.fromstring('<a>1</a>').text,\n"
        "            sqlite3.connect(':memory:').execute('select 2').fetchone()[0]]\n"
    )
    test = (
        "import email.mime.text, sqlite3, xml.dom.minidom, json.tool\n"
        "assert f() == ['é', '1', 2]\n"
        "assert 'x'.encode('cp1250') == b'x'\n"
    )
    result = basic.run(program, test)
    assert result.passed, result


@as_root
def test_basic_as_root_refuses_when_no_uid_can_run_python(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("CTXBENCH_SANDBOX_UID_SWITCH", "0")
    sandbox = Sandbox(namespaces=False)
    try:
        with pytest.raises(SandboxError) as info:
            sandbox.run("def f():\n    return 1\n", "assert f() == 1\n")
    finally:
        sandbox.close()
    message = str(info.value)
    assert "\n" not in message
    assert "as root" in message and "fix:" in message, message
    assert "non-root user" in message, message


@as_root
def test_the_uid_switch_knob_changes_nothing_with_namespaces(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The refusal is the basic level's: with namespaces the view is read-only and
    holds no file of the host, so a child that stays root (without capabilities)
    is still confined."""
    monkeypatch.setenv("CTXBENCH_SANDBOX_UID_SWITCH", "0")
    sandbox = Sandbox()
    try:
        if sandbox.isolation()["level"] != "namespaces":
            pytest.skip("no namespaces here")
        assert sandbox.run("def f():\n    return 1\n", "assert f() == 1\n").passed
    finally:
        sandbox.close()


def test_declared_packages_are_importable_at_the_basic_level() -> None:
    pytest.importorskip("tabulate")
    sandbox = Sandbox(namespaces=False, packages=["tabulate"])
    try:
        result = sandbox.run("import tabulate\ndef f():\n    return 1\n",
                             "import tabulate\nassert f() == 1\n")
    finally:
        sandbox.close()
    assert result.passed, result


@as_root
def test_the_refusal_is_the_header_and_every_code_examples_error(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("CTXBENCH_SANDBOX_NAMESPACES", "0")
    monkeypatch.setenv("CTXBENCH_SANDBOX_UID_SWITCH", "0")
    rows = [{"id": "c-1", "context": "def f():\n", "answer": "    return 1\n",
             "test": "def check(candidate):\n    assert candidate() == 1\n",
             "entry_point": "f"}]
    pytester.makefile(".jsonl", code="\n".join(json.dumps(x) for x in rows) + "\n")
    pytester.makepyfile(answer=(
        "class Answer:\n    name = 'answer'\n"
        "    def process(self, example):\n"
        "        return {**example, 'response': example['answer']}\n"
        "answer = Answer()\n"))
    pytester.makeini("[pytest]\npythonpath = .\n")
    out = pytester.path / "report.json"
    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "--ctxbench-dataset=code.jsonl", "--ctxbench-task=code",
        "--ctxbench-system=answer:answer", f"--ctxbench-json={out}",
    )
    joined = " ".join(line.strip() for line in result.stdout.lines)
    assert "ctxbench: code sandbox: unavailable (the code sandbox will not run " \
        "generated code as root without namespaces" in joined, result.stdout.str()
    assert "fix: run pytest as a non-root user" in joined
    assert result.ret != 0
    doc = json.loads(out.read_text())
    assert doc["run"]["sandbox"]["level"] == "unavailable"
    (row,) = doc["rows"]
    assert row["status"] == "error" and row["error"]["type"].endswith("SandboxError"), row
    assert "non-root user" in row["error"]["message"]
