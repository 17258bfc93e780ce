"""pytest-context-bench: LLM evaluation as pytest regression tests.

The public, pytest-free API. The pytest plugin lives in
:mod:`pytest_context_bench.plugin` and is loaded by pytest through its entry point.
"""

from __future__ import annotations

__version__ = "0.1.0"

from .engine import evaluate, run_example
from .memory import evaluate_memory
from .errors import (
    BlockingSystemWarning,
    CacheWarning,
    ConfigError,
    CtxBenchError,
    DatasetError,
    LLMError,
    SystemLoadError,
    UnattributedCallWarning,
)
from .outcome import EvalResult
from .results import EvalRow
from .types import Evaluator, MemorySystem, Metric, System

from typing import TYPE_CHECKING, Any, Literal, overload

if TYPE_CHECKING:
    import httpx
    import httpx2

__all__ = [
    "__version__",
    "evaluate",
    "evaluate_memory",
    "run_example",
    "EvalRow",
    "EvalResult",
    "System",
    "MemorySystem",
    "Evaluator",
    "Metric",
    "CtxBenchError",
    "ConfigError",
    "DatasetError",
    "SystemLoadError",
    "LLMError",
    "CacheWarning",
    "UnattributedCallWarning",
    "BlockingSystemWarning",
    "http_client",
    "async_http_client",
]


@overload
def http_client(*, flavor: Literal["httpx"] = ..., **kwargs: Any) -> httpx.Client: ...
@overload
def http_client(*, flavor: Literal["httpx2"], **kwargs: Any) -> httpx2.Client: ...
def http_client(*, flavor: str = "httpx", **kwargs: Any) -> Any:
    """An :class:`httpx.Client` through the run's LLM cache and usage meter, for
    ``OpenAI(http_client=http_client())``; ``flavor="httpx2"`` gives an
    ``httpx2.Client`` (``Anthropic(http_client=http_client(flavor="httpx2"))``);
    see :func:`.transports.http_client`."""
    from .transports import http_client as make

    return make(flavor=flavor, **kwargs)  # type: ignore[call-overload]


@overload
def async_http_client(
    *, flavor: Literal["httpx"] = ..., **kwargs: Any
) -> httpx.AsyncClient: ...
@overload
def async_http_client(
    *, flavor: Literal["httpx2"], **kwargs: Any
) -> httpx2.AsyncClient: ...
def async_http_client(*, flavor: str = "httpx", **kwargs: Any) -> Any:
    """The :class:`httpx.AsyncClient` twin of :func:`http_client` (``flavor`` too)."""
    from .transports import async_http_client as make

    return make(flavor=flavor, **kwargs)  # type: ignore[call-overload]
