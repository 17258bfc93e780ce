"""``python -m pytest_context_bench.testing``: a fake LLM endpoint for your own trials.

Serves :class:`~pytest_context_bench.testing.FakeLLM` (OpenAI's chat completions and
embeddings, Anthropic's messages, streamed or not) on ``127.0.0.1`` until Ctrl-C,
and prints one line per request it serves (docs/llm.md, "A fake endpoint"); with
``--script FILE`` it answers by the rules of a script (prompts to texts or tool
calls: :mod:`pytest_context_bench.testing.script`), and at exit says how many
requests it served::

    python -m pytest_context_bench.testing --port 8000 --latency 0.2
    python -m pytest_context_bench.testing --port 0 --script good-model.jsonl
"""

from __future__ import annotations

import argparse
import math
import signal
import sys
import threading
from collections.abc import Sequence
from typing import Any

from .fake_llm import FakeLLM, RecordedRequest, Reply
from .script import Script, ScriptError

__all__ = ["main"]


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value >= 0):
        raise argparse.ArgumentTypeError(
            f"expected a number of seconds >= 0, given {text!r}"
        )
    return value


def _port(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = -1
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(
            f"expected a port number in 0..65535 (0: any free port), given {text!r}"
        )
    return value


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m pytest_context_bench.testing",
        description=(
            "Serve a fake OpenAI- and Anthropic-compatible LLM endpoint on 127.0.0.1"
            " (POST /v1/chat/completions, /v1/embeddings, /v1/messages; stream=true"
            " answered as server-sent events) and log each request. Ctrl-C stops it."
        ),
    )
    parser.add_argument(
        "--port", type=_port, default=8000, help="port to listen on (0: a free one)"
    )
    parser.add_argument(
        "--latency",
        type=_seconds,
        default=0.0,
        help="seconds to wait before answering each request (default 0)",
    )
    answer = parser.add_mutually_exclusive_group()
    answer.add_argument(
        "--reply", default="OK", help="the text every reply carries (default 'OK')"
    )
    answer.add_argument(
        "--echo",
        action="store_true",
        help="answer with the last user message's text instead",
    )
    parser.add_argument(
        "--script",
        metavar="FILE",
        help=(
            "answer by the rules of FILE (.json: a list of rules; .jsonl: one per"
            " line): the first rule whose 'match' (a substring) or 'regex' is found"
            " in the last user or tool message replies with its 'reply' text and/or"
            " its 'tool_calls' ([{\"name\", \"arguments\"}]); an unmatched request"
            " gets --reply (or --echo)"
        ),
    )
    parser.add_argument(
        "--model",
        dest="models",
        action="append",
        metavar="MODEL",
        help=(
            "a model GET /v1/models lists (repeat for several; default: one, 'fake'):"
            " a run given no --ctxbench-model sends the only one listed"
        ),
    )
    parser.add_argument(
        "--reply-model",
        metavar="MODEL",
        help=(
            "the model every chat reply names (default: the one the request asked"
            " for), as a proxy that falls back to another model does"
        ),
    )
    return parser


def _echo(request: RecordedRequest) -> Reply:
    for message in reversed(request.messages):
        if isinstance(message, dict) and message.get("role") == "user":
            content = message.get("content")
            if isinstance(content, list):  # Anthropic/OpenAI content blocks
                content = " ".join(
                    str(block.get("text", ""))
                    for block in content
                    if isinstance(block, dict)
                )
            return Reply(text=str(content or ""))
    return Reply(text="")


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)

    def log(line: str) -> None:
        print(line, flush=True)

    named = args.reply_model

    def echo(request: RecordedRequest) -> Reply:
        reply = _echo(request)
        reply.model = named
        return reply

    handler: Any = echo if args.echo else None
    script: Script | None = None
    if args.script:
        try:
            script = Script.load(
                args.script,
                fallback=echo if args.echo else Reply(text=args.reply, model=named),
            )
        except ScriptError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 4
        if named is not None:
            for rule in script.rules:
                if rule.reply.model is None:
                    rule.reply.model = named
        handler = script
    server = FakeLLM(
        handler=handler,
        default=Reply(text=args.reply, model=named),
        port=args.port,
        latency=args.latency,
        log=log,
        models=args.models or ("fake",),
    )
    try:
        server.start()
    except OSError as exc:
        print(
            f"error: cannot listen on 127.0.0.1:{args.port}: {exc.strerror or exc};"
            " choose another --port (0: any free one).",
            file=sys.stderr,
        )
        return 4
    stop = threading.Event()

    def _stop(signum: int, frame: Any) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)
    print(
        f"fake LLM endpoint at {server.url_v1} (OpenAI base_url {server.url_v1},"
        f" Anthropic base_url {server.base_url}); latency {args.latency:g} s;"
        " Ctrl-C stops it",
        flush=True,
    )
    try:
        while not stop.wait(0.5):
            pass
    finally:
        server.stop()
    served = f"served {len(server.requests)} request(s)"
    if script is not None:
        served += (
            f" ({sum(script.hits)} answered by the script's"
            f" {len(script.rules)} rule(s), {script.misses} by the fallback)"
        )
    print(served, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
