"""OpenAIProxy: a System that sends each example to an OpenAI-compatible endpoint.

Upstream's behaviour (UPSTREAM.md §1.12) with its bugs fixed: the default name keeps
``host:port`` (two local proxies no longer collide), a base URL ending in ``/v1`` is
not doubled, read timeouts and dropped connections are retried like 429/5xx, and the
reported usage is passed back as ``api_usage``. The HTTP side is
:class:`~pytest_context_bench.llm.LLMClient`; every failure raises its
:class:`~pytest_context_bench.llm.LLMError`, which the engine records in the row.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any
from urllib.parse import urlsplit

from ..llm import LLMClient, normalize_base_url
from ..tool_use import openai_tools, tool_choice_problem, tools_problem

__all__ = ["OpenAIProxy", "default_proxy_name"]

MessagesBuilder = Callable[[dict[str, Any]], list[dict[str, Any]]]


def _text(value: Any) -> str:
    return "" if value is None else value if isinstance(value, str) else str(value)


def default_proxy_name(base_url: str, model: str | None = None) -> str:
    """``"openai_proxy_" + model + "@" + host`` of ``base_url``, plus any path but ``/v1``.

    ``OpenAIProxy("http://localhost:7878", "gpt-4o")`` is ``openai_proxy_gpt-4o@localhost``.
    The port is left out on purpose: a proxy started by a test or a CI job listens on
    an ephemeral port, and a name that changed with it would match no baseline. Two
    proxies with one model on one host need ``name=`` (``--ctxbench-proxy-name``).
    Credentials never enter the name.

    :param base_url: the proxy's URL.
    :param model: the model it is asked for; without it, the host alone.
    """
    parts = urlsplit(normalize_base_url(base_url))
    host = parts.hostname or ""
    path = parts.path.rstrip("/")
    path = path.removesuffix("/v1")
    where = f"{model}@{host}" if model else host
    return f"openai_proxy_{where}{path}"


class OpenAIProxy:
    """A System backed by any OpenAI-compatible chat completions endpoint.

    :param base_url: the server root, with or without ``/v1``.
    :param model: the model name sent in every request.
    :param name: the System's name; default :func:`default_proxy_name` (model
        and host, never the port).
    :param api_key: the bearer token; ``None`` reads ``OPENAI_API_KEY``.
    :param system_prompt: an optional system message put first.
    :param build_messages: ``example -> messages``; when given it alone builds them.
    :param timeout: seconds per attempt.
    :param extra_body: further body fields (``temperature``, ``max_tokens``...).
    :param max_retries: retries after the first attempt.
    :param retry_base_delay: the first backoff delay in seconds.
    :param concurrency: the most of this System's calls in flight at once;
        ``None`` (the default): the run's call budget (``--ctxbench-concurrency``)
        alone decides. A value only lowers the budget, never raises it: it becomes
        the System's ``concurrency`` attribute (the runner's per-System limit) and
        its client's bound.
    :param client: an :class:`LLMClient` to use instead of building one (the
        connection and retry parameters above are then ignored).

    Messages, unless ``build_messages`` is given: the ``system_prompt`` as a system
    message; then the example's ``turns`` verbatim if it has any; else its
    ``prompt`` (a promptfoo test's rendered prompt: a string as the user message, a
    chat list as the messages) if it has one; else, when ``question`` is not ``None``, ``context`` as a system message and ``question`` as
    the user message; else ``context`` as the user message.

    Tools: an example's ``tools`` (function schemas; a bare function document, as
    BFCL and APIGen ship them, is wrapped as ``{"type": "function", "function":
    ...}``, BFCL's ``"dict"`` type read as ``"object"``) and ``tool_choice`` are
    sent with it (:func:`~pytest_context_bench.tool_use.openai_tools`).

    ``process`` returns ``{**example, "response": text, "api_usage": {...}}``
    (``api_usage`` only when the server reports usage). A reply that calls tools is
    an answer, whether or not tools were sent: the dict then carries
    ``tool_calls`` (OpenAI's shape, arguments as the model's JSON text) and
    ``response`` the text the model sent with them (often ``""``).
    """

    def __init__(
        self,
        base_url: str,
        model: str = "gpt-3.5-turbo",
        name: str | None = None,
        api_key: str | None = None,
        system_prompt: str | None = None,
        build_messages: MessagesBuilder | None = None,
        timeout: float = 30.0,
        extra_body: dict[str, Any] | None = None,
        max_retries: int = 3,
        retry_base_delay: float = 1.0,
        concurrency: int | None = None,
        client: LLMClient | None = None,
    ) -> None:
        self.model = model
        #: read by the runner (``system_concurrency``): ``None`` leaves the run's
        #: budget alone; a number only lowers it for this System.
        self.concurrency = concurrency
        self.name = name if name else default_proxy_name(base_url, model)
        self.system_prompt = system_prompt
        self.build_messages = build_messages
        self.extra_body = dict(extra_body or {})
        self.client = client or LLMClient(
            base_url,
            api_key,
            timeout=timeout,
            max_retries=max_retries,
            retry_base_delay=retry_base_delay,
            concurrency=concurrency,
        )

    def __repr__(self) -> str:
        return f"OpenAIProxy(name={self.name!r}, model={self.model!r}, client={self.client!r})"

    def messages_for(self, example: dict[str, Any]) -> list[dict[str, Any]]:
        """The ``messages`` sent for ``example``.

        :param example: the dataset example.
        """
        if self.build_messages is not None:
            return list(self.build_messages(example))
        messages: list[dict[str, Any]] = []
        if self.system_prompt:
            messages.append({"role": "system", "content": self.system_prompt})
        turns = example.get("turns")
        prompt = example.get("prompt")
        if turns:
            messages.extend(_as_message(t) for t in turns)
        elif isinstance(prompt, list):  # a promptfoo chat prompt, rendered
            messages.extend(_as_message(t) for t in prompt)
        elif isinstance(prompt, str):  # the example's whole prompt (a promptfoo test's)
            messages.append({"role": "user", "content": prompt})
        elif example.get("question") is not None:
            messages.append(
                {"role": "system", "content": _text(example.get("context"))}
            )
            messages.append({"role": "user", "content": _text(example["question"])})
        else:
            messages.append({"role": "user", "content": _text(example.get("context"))})
        return messages

    def body_for(self, example: dict[str, Any]) -> dict[str, Any]:
        """The request body fields sent for ``example`` besides its messages:
        ``extra_body``, then the example's ``tools`` (as OpenAI's function tools)
        and ``tool_choice`` when it has them.

        :param example: the dataset example.
        :raises ValueError: when its ``tools`` or ``tool_choice`` cannot be sent.
        """
        body = dict(self.extra_body)
        tools = example.get("tools")
        if tools is not None:
            problem = tools_problem(tools)
            if problem is not None:
                raise ValueError(problem)
            if tools:  # an empty list is no tools (OpenAI refuses "tools": [])
                body["tools"] = openai_tools(tools)
        choice = example.get("tool_choice")
        if choice is not None:
            problem = tool_choice_problem(choice)
            if problem is not None:
                raise ValueError(problem)
            body["tool_choice"] = choice
        return body

    def process(self, example: dict[str, Any]) -> dict[str, Any]:
        """Send ``example`` and return it with the ``response`` (and ``api_usage``).

        :param example: the dataset example.
        :raises LLMError: when the endpoint fails after its retries.
        """
        result = self.client.chat(
            self.messages_for(example),
            self.model,
            accept_tool_calls=True,
            **self.body_for(example),
        )
        return _answered(example, result)

    async def aprocess(self, example: dict[str, Any]) -> dict[str, Any]:
        """:meth:`process` for coroutines: what the runner awaits under
        ``--ctxbench-concurrency`` / ``--ctxbench-timeout`` (no thread per call; a
        timed-out request is cancelled).

        :param example: the dataset example.
        :raises LLMError: when the endpoint fails after its retries.
        """
        result = await self.client.achat(
            self.messages_for(example),
            self.model,
            accept_tool_calls=True,
            **self.body_for(example),
        )
        return _answered(example, result)

    def process_conversation(self, turns: Sequence[Any]) -> list[dict[str, Any]]:
        """Play a multi-turn conversation, one request per user turn.

        The history grows as upstream's: the ``system_prompt``, then each user turn
        followed by the model's reply. Turns with the ``system`` role are kept in the
        history; ``assistant`` turns of the input are dropped (the model's own replies
        take their place). A bare string is a user turn.

        :param turns: the conversation's turns (``{"role", "content"}`` dicts).
        :returns: one ``{"role": "assistant", "content": text}`` dict per user turn,
            with its ``api_usage`` when the server reported usage.
        :raises LLMError: when a request fails after its retries.
        """
        conversation = _Conversation(self.system_prompt, turns)
        for history in conversation:
            result = self.client.chat(history, self.model, **self.extra_body)
            conversation.answer(result)
        return conversation.replies

    async def aprocess_conversation(self, turns: Sequence[Any]) -> list[dict[str, Any]]:
        """:meth:`process_conversation` for coroutines."""
        conversation = _Conversation(self.system_prompt, turns)
        for history in conversation:
            result = await self.client.achat(history, self.model, **self.extra_body)
            conversation.answer(result)
        return conversation.replies

    def close(self) -> None:
        """Close the client's connection pool."""
        self.client.close()


def _answered(example: dict[str, Any], result: Any) -> dict[str, Any]:
    out = {**example, "response": result.text}
    # The model's calls, never a field the example happened to carry.
    out.pop("tool_calls", None)
    if result.tool_calls:
        out["tool_calls"] = [dict(call) for call in result.tool_calls]
    if result.usage:
        out["api_usage"] = dict(result.usage)
    return out


class _Conversation:
    """The history of a conversation being played: iterating yields the messages
    to send for each user turn; :meth:`answer` adds the model's reply."""

    def __init__(self, system_prompt: str | None, turns: Sequence[Any]) -> None:
        self.history: list[dict[str, Any]] = []
        if system_prompt:
            self.history.append({"role": "system", "content": system_prompt})
        self.turns = turns
        self.replies: list[dict[str, Any]] = []

    def __iter__(self) -> Iterator[list[dict[str, Any]]]:
        for turn in self.turns:
            message = _as_message(turn)
            role = message.get("role")
            if role == "assistant":
                continue
            self.history.append(message)
            if role == "user":
                yield list(self.history)

    def answer(self, result: Any) -> None:
        self.history.append({"role": "assistant", "content": result.text})
        reply: dict[str, Any] = {"role": "assistant", "content": result.text}
        if result.usage:
            reply["api_usage"] = dict(result.usage)
        self.replies.append(reply)


def _as_message(turn: Any) -> dict[str, Any]:
    if isinstance(turn, dict):
        return dict(turn)
    return {"role": "user", "content": _text(turn)}
