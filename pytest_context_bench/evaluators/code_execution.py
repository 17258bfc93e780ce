"""CodeExecution: run generated code against the example's tests, in a sandbox.

HumanEval style (the example has ``test``): the solution is the prompt
(``context``) followed by the completion; the tests are ``test``; then
``check(<entry_point>)`` is called. MBPP style (``test_list``): the solution is the
completion alone; the tests are ``test_imports``, ``test_setup_code`` and the
asserts. The solution and the tests run in two processes (see
:mod:`~pytest_context_bench.evaluators.sandbox`): the tests, with the prompt's own
helpers, in a judge that never runs the completion's code and alone decides the
verdict, so nothing the completion does can skip the tests, change the helpers they
call, or report their success for them.

Completions are cleaned the way models write them: the Markdown code block is
taken out of a fenced answer; leading and trailing prose around code is dropped
(only when the text as given does not compile); a completion that restates the
whole function (``def <entry_point>(...)``) replaces the prompt's stub. A body-only
completion is appended to the prompt as it is, indentation included, as the
official HumanEval harness does.

Upstream (context-bench) ran the concatenated text with ``python3 -c`` in the
caller's environment and called a zero exit status a pass, so ``sys.exit(0)``
scored 1.0 (``UPSTREAM.md`` §2.7, §7.1 item 12).
"""

from __future__ import annotations

import builtins
import keyword
import re
import threading
from collections.abc import Sequence
from typing import Any, Final

from .sandbox import NETWORK_POLICIES, REASONS, Sandbox, SandboxResult

__all__ = ["CodeExecution", "extract_code", "NETWORK_POLICIES", "REASONS"]

_KEY: Final = "pass_at_1"
_DETAIL_OUTPUT: Final = 2000  # characters of program output kept in the details
_DETAIL_TAIL: Final = 1000  # characters of the output's end, when longer than that
_LINES: Final = re.compile(r"\r\n|\r|\n")  # line ends as compile() counts them
_MAX_ATTEMPTS: Final = 200  # compile() calls spent looking for the code in prose
# Above this size the response is used as it is: compiling it here, outside the
# sandbox and its timeout, could take long.
_MAX_CLEANED: Final = 1_000_000
_PYTHON_TAGS: Final = frozenset({"", "python", "py", "python3", "py3", "pycon", "ipython"})
_CODE_START: Final = re.compile(
    r"(?:async\s+def|def|class|import|from|@|if|for|while|try|with|return|raise|"
    r"assert|yield|print\s*\(|#)|[A-Za-z_][\w.]*(?:\[[^\]]*\])?\s*(?:[-+*/%|&^]?=(?!=)|\()"
)
_CALLED: Final = re.compile(r"\b([A-Za-z_]\w*)\s*\(")
_TOP_DEF: Final = re.compile(r"^(?:async[ \t]+)?def[ \t]+([A-Za-z_]\w*)[ \t]*\(", re.MULTILINE)
_CHECK_DEF: Final = re.compile(r"^(?:async[ \t]+)?def[ \t]+check[ \t]*\(", re.MULTILINE)
_NOT_TARGETS: Final = frozenset(dir(builtins)) | frozenset(keyword.kwlist)


def _compiles(source: str) -> bool:
    if len(source) > _MAX_CLEANED:
        return True  # not checked: see _MAX_CLEANED
    try:
        compile(source, "<candidate>", "exec", dont_inherit=True)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return False
    return True


def _fenced_blocks(text: str) -> list[tuple[str, str]]:
    """``(language, code)`` of every fenced block; an unclosed one runs to the end."""
    blocks: list[tuple[str, str]] = []
    fence: str | None = None
    language = ""
    body: list[str] = []
    for line in text.splitlines(keepends=True):
        stripped = line.strip()
        if fence is None:
            match = re.match(r"(`{3,}|~{3,})\s*([^\s`]*)", stripped)
            if match:
                fence, language, body = match.group(1), match.group(2).lower(), []
        elif stripped.startswith(fence) and not stripped[len(fence):].strip():
            blocks.append((language, "".join(body)))
            fence = None
        else:
            body.append(line)
    if fence is not None and body:
        blocks.append((language, "".join(body)))
    return blocks


def _defines(code: str, name: str | None) -> bool:
    return bool(name) and re.search(
        rf"^[ \t]*(?:async[ \t]+)?def[ \t]+{re.escape(name or '')}[ \t]*\(", code, re.MULTILINE
    ) is not None


def _is_prose(line: str) -> bool:
    """A line no Python statement starts like (text at column 0, not code-like)."""
    return bool(line.strip()) and line[0] not in " \t" and not _CODE_START.match(line)


def _strip_prose(code: str, prefix: str) -> str:
    """Drop prose before and after the code, when ``prefix + code`` does not compile.

    Only lines that look like prose are dropped, never a line that could be code,
    so a completion with a real syntax error keeps it (as the official harness).
    """
    if _compiles(prefix + code):
        return code
    lines = code.split("\n")
    start = 0
    while start < len(lines) and (not lines[start].strip() or _is_prose(lines[start])):
        start += 1
    attempts = 0
    end = len(lines)
    while end > start:
        if lines[end - 1].strip():
            attempts += 1
            if attempts > _MAX_ATTEMPTS:
                break
            candidate = "\n".join(lines[start:end]) + "\n"
            if _compiles(prefix + candidate):
                return candidate
            if not _is_prose(lines[end - 1]):
                break  # a code line: dropping it would change the program
        end -= 1
    return code


def extract_code(response: str, entry_point: str | None = None, prefix: str = "") -> str:
    """The code a model meant, out of its response.

    A fenced response gives the first Python (or untagged) block that defines
    ``entry_point``, else its first Python block, else its first block. Prose
    before and after the code is dropped when ``prefix + code`` does not compile as
    it is; otherwise the code is returned unchanged (indentation included).

    :param response: the model's text.
    :param entry_point: the function the code must define, when known.
    :param prefix: what the code is appended to (the HumanEval prompt), for the
        compile checks; not part of the result.
    """
    code = response
    blocks = _fenced_blocks(response)
    if blocks:
        python = [b for lang, b in blocks if lang in _PYTHON_TAGS]
        chosen = next((b for b in python if _defines(b, entry_point)), None)
        if chosen is None:
            chosen = python[0] if python else blocks[0][1]
        code = chosen
    return _strip_prose(code, prefix)


def _entry_from_prompt(prompt: str) -> str | None:
    names = _TOP_DEF.findall(prompt)
    return str(names[-1]) if names else None


def _mbpp_target(tests: list[str]) -> str | None:
    """The function the asserts call (the first called name that is not a builtin)."""
    for test in tests:
        for name in _CALLED.findall(test):
            if name not in _NOT_TARGETS:
                return str(name)
    return None


def _humaneval_solution(prompt: str, code: str, entry_point: str | None) -> str:
    if not _defines(code, entry_point) or re.match(r"[ \t]", code.lstrip("\n") or " "):
        return prompt + code  # body only: appended as the official harness does
    # The completion restates the function: it follows the prompt, whose stub
    # (signature and docstring) it then replaces.
    glue = "" if prompt.endswith("\n") or not prompt else "\n"
    for candidate in (prompt + glue + code, prompt + glue + "    pass\n" + code, code):
        if _compiles(candidate):
            return candidate
    return prompt + glue + code


class CodeExecution:
    """pass@1 of generated code against the example's tests, run in a sandbox.

    Reads ``original["context"]`` (the prompt), ``original["test"]`` and
    ``original["entry_point"]`` (HumanEval style) or ``original["test_list"]``,
    ``test_setup_code`` and ``test_imports`` (MBPP style), and
    ``processed["response"]``. Returns ``{"pass_at_1": 1.0}`` when the tests ran to
    their end and the process exited cleanly, else ``0.0``; ``{}`` when the example
    has no tests (or a ``check`` function but no entry point to call it with).

    An empty, whitespace-only or missing response scores ``0.0`` without running
    anything (reason ``no_completion``). A non-string response is scored as
    ``str(response)``.

    Why an example failed is available as :meth:`score_details` (which the engine
    records in the row's metadata) and, after :meth:`score`, as
    :attr:`last_details` (per thread): ``reason`` is one of
    :data:`~pytest_context_bench.evaluators.sandbox.REASONS` (``assertion``,
    ``exception``, ``timeout``, ``memory``, ``syntax_error``, ``no_completion``,
    ``exited_early``...), with ``exception``, ``message``, ``where``, ``duration``
    and the start of the program's ``output``.

    :param timeout: wall-clock seconds per example (default 10, as upstream).
    :param memory_mb: address-space limit of the program, in MiB (``0``: none).
    :param network: ``"auto"`` (no network where Linux allows it), ``"deny"``
        (refuse to run without network isolation) or ``"allow"``.
    :param max_processes: processes and threads the program may have at once.
    :param max_file_mb: the largest file the program may write, in MiB.
    :param namespaces: ``False`` skips Linux namespaces even where available
        (the sandbox's "basic" mode; for troubleshooting).
    :param packages: installed distributions (or import names) the programs may
        import besides the standard library, e.g. ``("numpy",)``; the sandbox's view
        holds nothing else of site-packages (docs/evaluators.md).

    >>> ev = CodeExecution(timeout=10.0)
    >>> ev.score({"context": "def add(a, b):\\n",
    ...           "test": "def check(c):\\n    assert c(1,2)==3\\n",
    ...           "entry_point": "add"},
    ...          {"response": "    return a + b\\n"})
    {'pass_at_1': 1.0}
    """

    name = "code_execution"

    def __init__(
        self,
        timeout: float = 10.0,
        *,
        memory_mb: int = 1024,
        network: str = "auto",
        max_processes: int = 64,
        max_file_mb: int = 16,
        namespaces: bool = True,
        packages: Sequence[str] = (),
    ) -> None:
        self._config: dict[str, Any] = {
            "timeout": timeout,
            "memory_mb": memory_mb,
            "network": network,
            "max_processes": max_processes,
            "max_file_mb": max_file_mb,
            "namespaces": namespaces,
        }
        if packages:  # kept out of repr and pickles when empty, as before
            self._config["packages"] = (
                packages if isinstance(packages, str) else tuple(packages))
        self._sandbox = Sandbox(**self._config)
        self._local = threading.local()

    @property
    def timeout(self) -> float:
        """Wall-clock seconds per example."""
        return self._sandbox.timeout

    @property
    def sandbox(self) -> Sandbox:
        """The :class:`~pytest_context_bench.evaluators.sandbox.Sandbox` programs run in."""
        return self._sandbox

    @property
    def last_details(self) -> dict[str, Any] | None:
        """The details of the last :meth:`score` call made by this thread."""
        details: dict[str, Any] | None = getattr(self._local, "details", None)
        return details

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self._config.items())
        return f"CodeExecution({args})"

    def __getstate__(self) -> dict[str, Any]:
        return dict(self._config)

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(**state)  # type: ignore[misc]

    def close(self) -> None:
        """Stop the sandbox's idle processes (they restart on the next score)."""
        self._sandbox.close()

    def score(self, original: dict[str, Any], processed: dict[str, Any]) -> dict[str, float]:
        """Score one (original, processed) pair.

        :param original: the example (``context``, ``test``/``entry_point`` or
            ``test_list``...).
        :param processed: what the System returned; ``processed["response"]`` is
            the code.
        :return: ``{"pass_at_1": 1.0 or 0.0}``, or ``{}`` when the example has no
            tests to run.
        """
        scores, _details = self.score_details(original, processed)
        return scores

    def score_details(
        self, original: dict[str, Any], processed: dict[str, Any]
    ) -> tuple[dict[str, float], dict[str, Any]]:
        """Like :meth:`score`, also returning why (a JSON-safe dict; empty with ``{}``).

        :raises ~pytest_context_bench.evaluators.sandbox.SandboxError: when no
            sandbox can run on this machine.
        """
        self._local.details = None
        program = self._program(original)
        if program is None:
            return {}, {}
        kind, prompt, test, entry_point, keep = program
        raw = processed.get("response") if isinstance(processed, dict) else None
        response = "" if raw is None else raw if isinstance(raw, str) else str(raw)
        if not response.strip():
            details: dict[str, Any] = {
                "reason": "no_completion",
                "message": "the response is empty",
            }
            self._local.details = details
            return {_KEY: 0.0}, details
        if kind == "humaneval":
            code = extract_code(response, entry_point, prompt)
            solution = _humaneval_solution(prompt, code, entry_point)
            call: tuple[str, str] | None = (
                ("check", entry_point) if entry_point and _CHECK_DEF.search(test) else None
            )
        else:
            solution = extract_code(response, keep[0] if keep else None)
            call = None
        result = self._sandbox.run(solution, test, call=call, keep=keep,
                                   prompt=prompt if kind == "humaneval" else "")
        details = _details(result, test)
        self._local.details = details
        return {_KEY: 1.0 if result.passed else 0.0}, details

    def _program(
        self, original: dict[str, Any]
    ) -> tuple[str, str, str, str | None, list[str]] | None:
        """(style, prompt, test code, entry point, names to keep), or None."""
        test = original.get("test")
        if isinstance(test, str) and test.strip():
            prompt = original.get("context")
            prompt = prompt if isinstance(prompt, str) else ""
            entry = original.get("entry_point")
            entry_point = entry if isinstance(entry, str) and entry.strip() else None
            if entry_point is None and _CHECK_DEF.search(test):
                # Upstream then ran only the definitions and passed everything;
                # the prompt's last function is HumanEval's entry point.
                entry_point = _entry_from_prompt(prompt)
                if entry_point is None:
                    return None
            # An entry point may be an expression of a name (LeetCode's
            # ``Solution().twoSum``): the tests take that name from the program.
            head = re.match(r"[^\d\W]\w*", entry_point or "")
            keep = [head.group()] if head else []
            return "humaneval", prompt, test, entry_point, keep
        tests = original.get("test_list")
        if isinstance(tests, (list, tuple)) and tests and all(
            isinstance(t, str) for t in tests
        ):
            parts: list[str] = []
            imports = original.get("test_imports")
            if isinstance(imports, (list, tuple)):
                parts.extend(i for i in imports if isinstance(i, str))
            setup = original.get("test_setup_code")
            if isinstance(setup, str) and setup.strip():
                parts.append(setup)
            parts.extend(tests)
            target = _mbpp_target(list(tests))
            return "mbpp", "", "\n".join(parts) + "\n", None, [target] if target else []
        return None


def _test_line(test: str, number: int | None) -> str | None:
    """Line ``number`` (1-based) of the test code, as the compiler counts lines."""
    if number is None or number < 1:
        return None
    lines = _LINES.split(test)
    if number > len(lines):
        return None
    text = lines[number - 1].strip()
    return f"test.py:{number}: {text}" if text else None


def _details(result: SandboxResult, test: str = "") -> dict[str, Any]:
    details: dict[str, Any] = {"reason": result.reason}
    for key in ("message", "exception"):
        value = getattr(result, key)
        if value:
            details[key] = value
    # Whose words the message is: the program's own exception (or anything its
    # process reported before the tests) is shown as the program's, never as ours.
    from_program = result.raised_by == "program" or (
        result.stage == "solution" and result.reason != "syntax_error")
    if details.get("message") and from_program:
        details["message"] = "from the program: " + details["message"]
    if not result.passed:
        # The tests' own line (the judge's traceback, our copy of the test code).
        line = _test_line(test, result.test_line)
        if line is not None:
            details["assert_line"] = line
    for key in ("stage", "where"):
        value = getattr(result, key)
        if value:
            details[key] = value
    details["duration"] = result.duration
    if result.output:
        details["output"] = result.output[:_DETAIL_OUTPUT]
    end = result.output_tail if result.output_tail else result.output
    if len(end) > _DETAIL_OUTPUT or result.output_tail:
        details["output_tail"] = end[-_DETAIL_TAIL:]
    if result.output_bytes > _DETAIL_OUTPUT:
        details["output_bytes"] = result.output_bytes
    if result.exit_code not in (None, 0):
        details["exit_code"] = result.exit_code
    if result.signal is not None:
        details["signal"] = result.signal
    return details
