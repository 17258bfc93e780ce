"""Every warning class pytest-context-bench emits crosses pytest-xdist.

xdist ships a worker's warning to the controller as the warning's
``type(w).__module__`` and ``__name__`` and rebuilds it there with
``getattr(importlib.import_module(module), name)``: a class whose module does not
hold it under that name crashed the controller (INTERNALERROR, exit 3), e.g. a
``CacheWarning`` emitted by a worker whose cache file was half created by another.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import warnings
from pathlib import Path

import pytest

import pytest_context_bench


def _warning_classes() -> list[type[Warning]]:
    """Every Warning subclass defined in the package's source (found by walking its
    modules; a module needing an optional package that is missing is skipped)."""
    root = Path(pytest_context_bench.__file__).parent
    found: dict[str, type[Warning]] = {}
    for info in pkgutil.walk_packages([str(root)], "pytest_context_bench."):
        try:
            module = importlib.import_module(info.name)
        except ImportError:
            continue
        for obj in vars(module).values():
            if not (isinstance(obj, type) and issubclass(obj, Warning)):
                continue
            try:
                source = inspect.getsourcefile(obj)
            except TypeError:
                continue
            if source and Path(source).is_relative_to(root):
                found[f"{obj.__module__}.{obj.__qualname__}"] = obj
    return sorted(found.values(), key=lambda c: c.__name__)


def test_every_warning_is_importable_by_the_name_it_carries() -> None:
    from xdist.remote import serialize_warning_message
    from xdist.workermanage import unserialize_warning_message

    classes = _warning_classes()
    names = {c.__name__ for c in classes}
    assert {"CacheWarning", "UnattributedCallWarning", "BlockingSystemWarning", "CtxBenchWarning"} <= names
    for cls in classes:
        assert getattr(importlib.import_module(cls.__module__), cls.__name__) is cls, cls
        sent = warnings.WarningMessage(cls("said in a worker"), cls, "t.py", 1)
        back = unserialize_warning_message(serialize_warning_message(sent))
        assert back.category is cls and str(back.message) == "said in a worker"


WORKER_TESTS = '''
import importlib
import warnings

import httpx
import pytest

from pytest_context_bench.cache import LLMCache
from pytest_context_bench.calls import CallScope, call_scope
from pytest_context_bench.transports import CacheTransport

CLASSES = {classes!r}


@pytest.mark.parametrize("name", CLASSES)
def test_warn(name):
    module, _, cls = name.rpartition(".")
    warnings.warn(getattr(importlib.import_module(module), cls)("said in a worker: " + cls))


def test_a_real_cache_warning(tmp_path):
    # The plugin's own path: a cache file that is not SQLite, met by the transport.
    path = tmp_path / "llm-cache.sqlite3"
    path.write_bytes(b"not a database" * 100)
    reply = httpx.Response(200, json={{"usage": {{"prompt_tokens": 1, "completion_tokens": 1}}}})
    transport = CacheTransport(httpx.MockTransport(lambda r: reply), LLMCache(path))
    with httpx.Client(transport=transport) as client, call_scope(CallScope("s", "d", "e", trial=1)):
        assert client.post("http://127.0.0.1:1/v1/chat/completions", json={{"model": "m"}}).status_code == 200
'''


def test_warnings_raised_in_xdist_workers_reach_the_controller(pytester: pytest.Pytester) -> None:
    classes = [f"{c.__module__}.{c.__name__}" for c in _warning_classes()]
    pytester.makepyfile(test_worker=WORKER_TESTS.format(classes=classes))
    result = pytester.runpytest("-n", "2", "-p", "xdist", "-W", "always")
    out = result.stdout.str() + result.stderr.str()
    assert "INTERNALERROR" not in out
    assert result.ret == 0, out
    result.assert_outcomes(passed=len(classes) + 1, warnings=len(classes) + 1)
    for c in _warning_classes():
        assert f"{c.__name__}: said in a worker: {c.__name__}" in out
    assert "CacheWarning: the LLM cache" in out
