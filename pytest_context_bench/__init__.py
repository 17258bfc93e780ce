"""pytest-context-bench: LLM evaluation as pytest regression tests.

The public, pytest-free API. The pytest plugin lives in
:mod:`pytest_context_bench.plugin` and is loaded by pytest through its entry point.
"""

from __future__ import annotations

__version__ = "0.1.0"

from .engine import evaluate, run_example
from .memory import evaluate_memory
from .errors import ConfigError, CtxBenchError, DatasetError, LLMError, SystemLoadError
from .outcome import EvalResult
from .results import EvalRow
from .types import Evaluator, MemorySystem, Metric, System

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
]
