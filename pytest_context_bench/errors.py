"""The exceptions pytest-context-bench raises, all in one hierarchy.

::

    CtxBenchError                 base of everything below; catch this to catch ours
    ├── ConfigError               a bad option, ini value, marker argument or API argument
    ├── DatasetError              a dataset that cannot be found, read or validated
    │                             (names the file, the line and the field)
    ├── SystemLoadError           a System import path that does not resolve, or two
    │                             systems sharing a name
    ├── ExampleDataError          an example's fields an evaluator cannot use (IFEval
    │                             kwargs out of range): that example's error row,
    │                             shown in one line without a traceback
    └── LLMError                  an LLM endpoint failed after its retries (names the
                                  URL, the status and what was tried; never the key)

Every message is a full sentence that names what is wrong (the option, the file and
line, the import path) and says how to fix it. The pytest plugin turns each of them
into one ``pytest.UsageError`` line (exit status 4); the core never imports pytest.

Errors raised *by a System or an evaluator while an example runs* are not wrapped in
these classes: they are caught by the engine and recorded in that example's row
(``EvalRow.error``), so one bad example never stops a run; :func:`error_record` is
the shape they take there.
"""

from __future__ import annotations

__all__ = [
    "BlockingSystemWarning",
    "CacheWarning",
    "UnattributedCallWarning",
    "CtxBenchError",
    "ConfigError",
    "DatasetError",
    "SystemLoadError",
    "ExampleDataError",
    "LLMError",
    "error_record",
]


class CtxBenchError(Exception):
    """Base class of every exception raised by pytest-context-bench."""


class CacheWarning(UserWarning):
    """The LLM cache could not be used; the run goes on without it.

    Importable as ``pytest_context_bench.CacheWarning`` (its ``__module__``): xdist
    sends a worker's warnings to the controller by that name."""

    __module__ = "pytest_context_bench"


class BlockingSystemWarning(UserWarning):
    """An ``async def`` System blocked the event loop its calls share (a step of
    0.25 s or more between two ``await``): docs/concurrency.md, "Sync and async
    Systems". Importable as ``pytest_context_bench.BlockingSystemWarning``."""

    __module__ = "pytest_context_bench"


class UnattributedCallWarning(UserWarning):
    """LLM requests were made from a System's own threads while several example
    calls were in flight: their usage is counted for the run, not for a row
    (docs/cache.md, "Systems that call from their own threads")."""

    __module__ = "pytest_context_bench"


class ConfigError(CtxBenchError, ValueError):
    """An option, ini value, marker argument or API argument has a bad value."""


class DatasetError(CtxBenchError):
    """A dataset cannot be located, read, parsed or validated.

    :param message: what is wrong and how to fix it.
    :param path: the file (or dataset name) concerned, when there is one.
    :param line: the 1-based line (or record) number, when there is one.
    """

    def __init__(
        self, message: str, *, path: str | None = None, line: int | None = None
    ) -> None:
        where = ""
        if path is not None:
            where = f"{path}:{line}: " if line is not None else f"{path}: "
        super().__init__(where + message)
        self.path = path
        self.line = line


class SystemLoadError(CtxBenchError):
    """A System cannot be imported or built, or two systems share one name."""


class ExampleDataError(CtxBenchError, ValueError):
    """An example's own fields are malformed for an evaluator (an IFEval argument
    that is negative, mistyped or missing). Raised while the example is scored, so
    it becomes that example's error row like any evaluator failure; the pytest
    plugin shows it in one line naming the example, without a traceback (it is bad
    data, not a bug to debug)."""


class LLMError(CtxBenchError):
    """A call to an LLM endpoint failed (after its retries, when it was retryable).

    The message names the URL (credentials removed), the HTTP status if any and what
    was tried, e.g. ``"POST http://h:1/v1/chat/completions failed: 4 attempts over
    2.1 s; last: HTTP 503: overloaded"``. It never contains the API key.

    :param message: the full message.
    :param url: the endpoint, without credentials.
    :param status: the last HTTP status, or ``None`` when there was no response.
    :param attempts: how many requests were sent.
    """

    def __init__(
        self,
        message: str,
        *,
        url: str = "",
        status: int | None = None,
        attempts: int = 0,
    ) -> None:
        super().__init__(message)
        self.url = url
        self.status = status
        self.attempts = attempts


def sdk_hint(exc: BaseException) -> str:
    """A sentence to add to an error an SDK raised at our ``http_client()``: the
    anthropic SDK 2.x (and openai 3.x) build on ``httpx2``, a fork of httpx, and
    refuse an ``httpx.Client``; ``""`` for any other error."""
    text = str(exc)
    if isinstance(exc, TypeError) and "http_client" in text and "httpx2" in text:
        return (
            " This SDK is built on httpx2: pass http_client(flavor=\"httpx2\") from"
            " pytest_context_bench (docs/cache.md, 'SDKs built on httpx2')."
        )
    return ""


#: The longest error message kept in a row (longer ones are cut, with an ellipsis).
_MAX_MESSAGE = 2000


def error_record(exc: BaseException, where: str) -> dict[str, str]:
    """An exception raised while an example ran, as ``EvalRow.error`` holds it.

    :param exc: what the System, the evaluator or the memory layer raised.
    :param where: what raised it (``system``, ``evaluator:<name>``,
        ``system:ingest``, ...).
    :return: ``{"type", "message", "where"}``; ``type`` is the qualified class name
        (``module.Class``, bare for builtins).
    """
    from .urls import redact

    # A row is written to reports and baselines: no credentials in its URLs, no API
    # key (whatever library quoted it).
    message = redact(str(exc)) + sdk_hint(exc)
    if len(message) > _MAX_MESSAGE:
        message = message[:_MAX_MESSAGE] + "…"
    kind = type(exc)
    name = kind.__qualname__
    if kind.__module__ not in ("builtins", "__main__"):
        name = f"{kind.__module__}.{name}"
    return {"type": name, "message": message, "where": where}
