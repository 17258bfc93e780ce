"""Built-in Systems: ready-made things under test."""

from __future__ import annotations

from .openai_proxy import OpenAIProxy, default_proxy_name

__all__ = ["OpenAIProxy", "default_proxy_name"]
