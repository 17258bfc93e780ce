"""pytest-context-bench: LLM evaluation as pytest regression tests.

The public, pytest-free API. The pytest plugin lives in
:mod:`pytest_context_bench.plugin` and is loaded by pytest through its entry point.
"""

from __future__ import annotations

__version__ = "0.1.0"

from typing import TYPE_CHECKING, Any, Literal, overload

if TYPE_CHECKING:
    import httpx
    import httpx2

    from .engine import evaluate, run_example
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
    from .memory import evaluate_memory
    from .outcome import EvalResult
    from .results import EvalRow
    from .types import Evaluator, MemorySystem, Metric, System

# Loaded on first use (``from pytest_context_bench import evaluate`` works as
# before): pytest imports this package in every run through the plugin's entry
# point, and a run that never asks for ctxbench must not pay for the engine.
_LAZY: dict[str, str] = {
    "evaluate": "engine",
    "run_example": "engine",
    "evaluate_memory": "memory",
    "EvalResult": "outcome",
    "EvalRow": "results",
    "System": "types",
    "MemorySystem": "types",
    "Evaluator": "types",
    "Metric": "types",
    "CtxBenchError": "errors",
    "ConfigError": "errors",
    "DatasetError": "errors",
    "SystemLoadError": "errors",
    "LLMError": "errors",
    "CacheWarning": "errors",
    "UnattributedCallWarning": "errors",
    "BlockingSystemWarning": "errors",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib import import_module

    value = getattr(import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})


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
