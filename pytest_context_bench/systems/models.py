"""The model a run sends when nobody named one: the endpoint's only model.

``--ctxbench-proxy`` without ``--ctxbench-model`` (and ``--ctxbench-judge-url``
without ``--ctxbench-judge-model``) used to send a fixed default model
(``gpt-3.5-turbo``, retired; ``gpt-4`` for the judge) that nobody chose. Now the
endpoint is asked (``GET {base}/models``, OpenAI's list of models): when it lists
exactly one, that is the model; otherwise the run stops with one line naming the
option to give. Local servers (vLLM, llama.cpp's server, Ollama's OpenAI API,
LM Studio) serve one model and list it, so a local run needs no option.
"""

from __future__ import annotations

import json
from typing import Any

from ..errors import ConfigError
from ..llm import display_url

__all__ = ["endpoint_model", "MODELS_SHOWN", "MAX_ANSWER"]

#: Models named in the error when an endpoint lists several.
MODELS_SHOWN = 10
#: The largest answer to GET /models read (a list of thousands of models fits).
MAX_ANSWER = 4 << 20
#: The longest model id taken (a longer one is no model a server serves).
MAX_ID = 256


def _ids(payload: Any) -> list[str] | None:
    """The model ids of a ``/models`` answer (OpenAI's ``{"data": [{"id": ...}]}``,
    or Ollama's ``{"models": [{"name": ...}]}``); ``None`` when it is neither."""
    if not isinstance(payload, dict):
        return None
    items = payload.get("data")
    key = "id"
    if not isinstance(items, list):
        items, key = payload.get("models"), "name"
    if not isinstance(items, list):
        return None
    ids = []
    for item in items:
        value = item.get(key) if isinstance(item, dict) else None
        if isinstance(value, str) and value.strip() and len(value) <= MAX_ID:
            ids.append(value.strip())
    return list(dict.fromkeys(ids))


def endpoint_model(
    base_url: str,
    *,
    flag: str,
    url_flag: str,
    api_key: str | None = None,
    timeout: float = 10.0,
) -> str:
    """The one model the endpoint at ``base_url`` lists.

    :param base_url: the endpoint's URL, as the user gave it.
    :param flag: the option that names the model (``--ctxbench-model``), for the error.
    :param url_flag: the option that gave ``base_url``, for the error.
    :param api_key: sent as a bearer token when given.
    :param timeout: seconds for the request.
    :raises ConfigError: the endpoint could not be asked, or lists no model or several.
    """
    import httpx

    from ..llm import endpoint_url, normalize_base_url

    url = endpoint_url(normalize_base_url(base_url), "models")
    shown = display_url(url)
    fix = f"name the model with {flag}=MODEL"
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    try:
        with httpx.Client(timeout=timeout, trust_env=False) as client:
            with client.stream("GET", url, headers=headers) as response:
                body = bytearray()
                for piece in response.iter_bytes():
                    body += piece
                    if len(body) > MAX_ANSWER:
                        raise ConfigError(
                            f"{url_flag} {display_url(base_url)}: no {flag} was given, and"
                            f" GET {shown} answered more than {MAX_ANSWER:,} bytes; {fix}."
                        )
    except httpx.HTTPError as exc:
        raise ConfigError(
            f"{url_flag} {display_url(base_url)}: no {flag} was given, and asking the"
            f" endpoint for its model failed (GET {shown}: {type(exc).__name__});"
            f" {fix}, or start the endpoint first."
        ) from None
    if response.status_code != 200:
        raise ConfigError(
            f"{url_flag} {display_url(base_url)}: no {flag} was given, and the endpoint"
            f" does not list its models (GET {shown} answered {response.status_code}); {fix}."
        )
    try:
        ids = _ids(json.loads(bytes(body)))
    except (ValueError, RecursionError):
        ids = None
    if ids is None:
        raise ConfigError(
            f"{url_flag} {display_url(base_url)}: no {flag} was given, and GET {shown}"
            f" did not answer OpenAI's list of models; {fix}."
        )
    if len(ids) != 1:
        listed = ", ".join(repr(m) for m in ids[:MODELS_SHOWN])
        more = f" and {len(ids) - MODELS_SHOWN} more" if len(ids) > MODELS_SHOWN else ""
        what = f"lists {len(ids)} models ({listed}{more})" if ids else "lists no model"
        raise ConfigError(
            f"{url_flag} {display_url(base_url)}: no {flag} was given, and the endpoint"
            f" {what}; {fix}."
        )
    return ids[0]
