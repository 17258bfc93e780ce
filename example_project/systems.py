"""The Systems the benchmark runs: the app as it ships, with the benchmark's HTTP
client under its SDK (``OpenAI(http_client=...)``).

Through :func:`pytest_context_bench.http_client` every call the app makes is cached
(``--ctxbench-cache``: a second run answers from the cache, ``replay`` sends
nothing), metered (the LLM's own tokens and money in the report) and paced like the
plugin's own calls. The app itself stays plain application code: it takes any
``http_client``, and builds the SDK's default one when given none.
"""

from __future__ import annotations

from app import CompressedRagApp, RagApp

from pytest_context_bench import http_client


def rag() -> RagApp:
    """The app (``ctxbench_system = "systems:rag"``)."""
    return RagApp(http_client=http_client())


def rag_compressed() -> CompressedRagApp:
    """The app with its prompt compressor."""
    return CompressedRagApp(http_client=http_client())
