"""Where the app's model comes from.

With ``OPENAI_BASE_URL`` set, the app talks to that endpoint (``OPENAI_API_KEY``
must be set too; ``OPENAI_MODEL`` names the model, default ``gpt-4o-mini``).
Without it, the local model of ``local_llm.py`` is started here for the run and
stopped at its end (``LOCAL_LLM_PORT`` picks its port; by default any free one).
pytest-xdist's workers inherit the environment, so they all call the same server.
"""

from __future__ import annotations

import os

import pytest
from local_llm import MODEL, LocalLLM

_server: LocalLLM | None = None
_saved: dict[str, str | None] = {}


def pytest_configure(config: pytest.Config) -> None:
    global _server
    if os.environ.get("OPENAI_BASE_URL"):
        if not os.environ.get("OPENAI_API_KEY"):
            raise pytest.UsageError(
                f"OPENAI_BASE_URL is set ({os.environ['OPENAI_BASE_URL']}) but"
                " OPENAI_API_KEY is not: set OPENAI_API_KEY to that endpoint's key, or"
                " unset OPENAI_BASE_URL to run against the local model."
            )
        return  # a real endpoint, or the local server of the xdist controller
    port = os.environ.get("LOCAL_LLM_PORT", "0")
    try:
        _server = LocalLLM(int(port))
    except (OSError, ValueError) as exc:
        raise pytest.UsageError(
            f"the local model server cannot listen on 127.0.0.1:{port} ({exc});"
            " set LOCAL_LLM_PORT to a free port, or unset it to take any free one."
        ) from None
    values = {
        "OPENAI_BASE_URL": _server.url,
        "OPENAI_API_KEY": "local",
        "OPENAI_MODEL": MODEL,
    }
    for name, value in values.items():
        _saved[name] = os.environ.get(name)
        os.environ[name] = value


def pytest_unconfigure(config: pytest.Config) -> None:
    global _server
    if _server is not None:
        _server.stop()
        _server = None
    for name, value in _saved.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value
    _saved.clear()
