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

__all__ = ["endpoint_model", "MODELS_SHOWN"]

#: Models named in the error when an endpoint lists several.
MODELS_SHOWN = 10


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
        if isinstance(value, str) and value.strip():
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
            response = client.get(url, headers=headers)
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
        ids = _ids(json.loads(response.content))
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
