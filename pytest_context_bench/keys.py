"""API keys, read in one place: :func:`clean_api_key` (``OPENAI_API_KEY`` or an
``api_key=`` argument) strips surrounding whitespace (a secret pasted with its
newline), refuses a key still holding a control character without showing it, and
registers the key so that :func:`pytest_context_bench.urls.redact` removes it from
every text the plugin stores or prints.
"""

from __future__ import annotations

import os

from .errors import ConfigError
from .urls import register_secret

__all__ = ["clean_api_key", "environment_key"]


def _control(ch: str) -> bool:
    code = ord(ch)
    return code < 0x20 or 0x7F <= code < 0xA0


def clean_api_key(value: str, where: str = "OPENAI_API_KEY") -> str:
    """``value`` stripped of surrounding whitespace, checked and registered.

    :param value: the key as given (an environment variable, an argument).
    :param where: how to name its origin in the error.
    :raises ValueError: (a :class:`~pytest_context_bench.errors.ConfigError`) when
        the stripped key holds a control character (a line break, a tab, NUL): no
        request could carry it. The message never shows the key.
    """
    key = value.strip()
    bad = [i for i, ch in enumerate(key) if _control(ch)]
    if bad:
        register_secret(key)
        raise ConfigError(
            f"{where} holds a control character (at position {bad[0] + 1} of"
            f" {len(key)}; a line break or tab pasted inside the key?), which no HTTP"
            " header can carry; set it again without it (the key is not shown)."
        )
    register_secret(key)
    return key


def environment_key(name: str = "OPENAI_API_KEY") -> str | None:
    """The key in environment variable ``name``, cleaned (:func:`clean_api_key`),
    or None when it is unset or blank."""
    raw = os.environ.get(name)
    if raw is None or not raw.strip():
        return None
    return clean_api_key(raw, name)


