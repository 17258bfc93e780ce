"""Resolve ``package.module:attribute`` import paths (systems, tokenizers)."""

from __future__ import annotations

import importlib
from typing import Any

from .errors import ConfigError, SystemLoadError, sdk_hint

__all__ = [
    "import_object",
    "load_evaluator",
    "load_system",
    "check_system",
    "check_memory_system",
]


def import_object(path: str, *, what: str = "object") -> Any:
    """Import ``package.module:attr.sub`` (``package.module.attr`` is accepted too).

    :raises ConfigError: the path is malformed, the module or the attribute is
        missing; the message says which and shows the expected form.
    """
    if ":" in path:
        module_name, _, attr_path = path.partition(":")
    else:
        module_name, _, attr_path = path.rpartition(".")
    if not module_name or not attr_path:
        raise ConfigError(
            f"{what} {path!r} is not an import path; expected 'package.module:name'."
        )
    try:
        obj: Any = importlib.import_module(module_name)
    except ImportError as exc:
        raise ConfigError(
            f"cannot import module {module_name!r} for {what} {path!r}: {exc}. Check"
            " the spelling and that the module is importable: installed, or found"
            " from the current directory (run `python -m pytest`, or set"
            " `pythonpath = .` in your pytest configuration)."
        ) from exc
    except Exception as exc:
        raise ConfigError(
            f"importing module {module_name!r} for {what} {path!r} raised"
            f" {type(exc).__name__}: {exc}.{sdk_hint(exc)}"
        ) from exc
    for part in attr_path.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise ConfigError(
                f"module {module_name!r} has no attribute {attr_path!r} (from {what}"
                f" {path!r})."
            ) from None
    return obj


def load_system(path: str) -> Any:
    """Import a System from ``package.module:name``.

    ``name`` may be a System instance, a class or a zero-argument factory; a class or
    factory is called once. The result must have ``name`` and ``process``.

    :raises SystemLoadError: anything goes wrong, with the import path in the message.
    """
    try:
        obj = import_object(path, what="system")
    except ConfigError as exc:
        raise SystemLoadError(str(exc)) from exc
    if isinstance(obj, type) or (
        callable(obj) and not hasattr(obj, "process") and not hasattr(obj, "query")
    ):
        try:
            obj = obj()
        except Exception as exc:
            raise SystemLoadError(
                f"building system {path!r} raised {type(exc).__name__}: {exc}.{sdk_hint(exc)}"
            ) from exc
    if callable(getattr(obj, "query", None)) and not hasattr(obj, "process"):
        check_memory_system(obj, origin=path)  # a MemorySystem, for memory datasets
    else:
        check_system(obj, origin=path)
    return obj


def load_evaluator(path: str) -> Any:
    """Import an Evaluator from ``package.module:name``: an instance with ``name``
    and ``score(original, processed)``, or a class or zero-argument factory called
    once to make one.

    :raises ConfigError: anything goes wrong, with the import path in the message.
    """
    obj = import_object(path, what="evaluator")
    if isinstance(obj, type) or (
        callable(obj) and not callable(getattr(obj, "score", None)) and _no_arguments(obj)
    ):
        try:
            obj = obj()
        except Exception as exc:
            raise ConfigError(
                f"building evaluator {path!r} raised {type(exc).__name__}: {exc}.{sdk_hint(exc)}"
            ) from exc
    name = getattr(obj, "name", None)
    if not isinstance(name, str) or not name or not callable(getattr(obj, "score", None)):
        raise ConfigError(
            f"evaluator {path!r} is a {type(obj).__name__}, not an Evaluator: it needs a"
            " 'name' (a non-empty string) and a method score(original, processed) ->"
            " dict of numbers."
        )
    return obj


def _no_arguments(func: Any) -> bool:
    """True when ``func`` can be called with no argument (a factory)."""
    import inspect

    try:
        signature = inspect.signature(func)
    except (TypeError, ValueError):
        return False
    return all(
        p.default is not p.empty or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
        for p in signature.parameters.values()
    )


def check_system(obj: Any, *, origin: str) -> None:
    """Raise SystemLoadError unless ``obj`` has a str ``name`` and a ``process``."""
    name = getattr(obj, "name", None)
    if not callable(getattr(obj, "process", None)):
        raise SystemLoadError(
            f"system {origin!r} ({type(obj).__name__}) has no process(example) method;"
            " a System needs `name` and `process(example) -> dict`."
        )
    if not isinstance(name, str) or not name:
        raise SystemLoadError(
            f"system {origin!r} ({type(obj).__name__}) needs a non-empty str `name`"
            f" attribute, got {name!r}."
        )


def check_memory_system(obj: Any, *, origin: str) -> None:
    """Raise SystemLoadError unless ``obj`` has the MemorySystem attributes."""
    missing = [
        m for m in ("reset", "ingest", "query") if not callable(getattr(obj, m, None))
    ]
    if missing:
        raise SystemLoadError(
            f"memory system {origin!r} ({type(obj).__name__}) has no"
            f" {', '.join(m + '()' for m in missing)}; a MemorySystem needs `name`,"
            " `reset()`, `ingest(turns)` and `query(question) -> str`."
        )
    name = getattr(obj, "name", None)
    if not isinstance(name, str) or not name:
        raise SystemLoadError(
            f"memory system {origin!r} ({type(obj).__name__}) needs a non-empty str"
            f" `name` attribute, got {name!r}."
        )
