"""A small OpenAI-compatible model server on 127.0.0.1, so the example runs offline.

It stands in for the model endpoint your app calls (OpenAI, vLLM, llama.cpp, a
gateway): it serves ``POST /v1/chat/completions`` in OpenAI's wire format, with a
``usage`` block counted in cl100k_base tokens and a latency that grows with the
prompt (about 20 ms plus 1 ms per 100 prompt tokens and per completion token), as
a hosted model's does. Its "model" is deterministic and reads the prompt the way an
instruction-following model would:

* a reading question: the words of the context sentence that overlaps the question
  most, less the question's own words;
* a lettered multiple-choice question: the letter of the option that overlaps the
  context most;
* "reply with a JSON object": the order number the question names and the status
  the context gives it, as ``{"order": 7, "status": "shipped"}``;
* "write a Python function": the simplest expression over the arguments that
  reproduces every ``>>>`` example of the docstring (a tiny program search), as a
  fenced code block. Tasks outside its reach get its best wrong guess, so not every
  answer passes: that is what the benchmark is for;
* a request with ``tools`` (the agent of ``agent.py``): a question naming order
  numbers calls ``lookup_order`` once per number (ids ``call_<n>``); once the tool
  results are in, it answers from them (``Order 7 is shipped.``); a question naming
  no order is answered in text, with no call.

Run it by hand with ``python local_llm.py 8000`` and point any OpenAI client at
``http://127.0.0.1:8000/v1``.
"""

from __future__ import annotations

import ast
import json
import re
import sys
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from pytest_context_bench.tokens import count_tokens

MODEL = "local-reader"

_WORD = re.compile(r"[A-Za-z0-9]+")
_STOP = {
    "a",
    "an",
    "the",
    "of",
    "is",
    "in",
    "what",
    "which",
    "who",
    "was",
    "does",
    "did",
    "how",
    "many",
    "its",
    "to",
    "and",
    "on",
    "for",
    "by",
    "with",
    "at",
    "often",
    "called",
    "about",
    "it",
    "earth",
    "are",
    "be",
    "that",
    "this",
}


def _words(text: str) -> set[str]:
    return {w.lower() for w in _WORD.findall(text)} - _STOP


def _sentences(text: str) -> list[str]:
    return [s.strip() for s in re.split(r"(?<=[.!?])\s+", text) if s.strip()]


def read_answer(question: str, context: str) -> str:
    """A few words of the context sentence that overlaps the question most."""
    q = _words(question)
    sentences = _sentences(context)
    if not sentences:
        return "I don't know."
    # Ties go to the later sentence: openings tend to restate the subject.
    best = max(reversed(sentences), key=lambda s: len(q & _words(s)))
    kept = [w for w in _WORD.findall(best) if w.lower() not in q | _STOP]
    return " ".join(kept[:4]) or "I don't know."


_OPTION = re.compile(r"^\s*([A-H])[.)]\s+(.+)$", re.MULTILINE)


def choose_option(question: str, context: str) -> str:
    """The letter of the option sharing the most words with the context."""
    options = _OPTION.findall(question) or _OPTION.findall(context)
    if not options:
        return "A"
    body = _words(_OPTION.sub("", context))
    return max(options, key=lambda o: (len(_words(o[1]) & body), -ord(o[0])))[0]


# The search space of the code "model": expressions over the arguments a and b.
_UNARY: list[tuple[str, Callable[[Any], Any]]] = [
    ("a", lambda a: a),
    ("-a", lambda a: -a),
    ("a + 1", lambda a: a + 1),
    ("a - 1", lambda a: a - 1),
    ("a * 2", lambda a: a * 2),
    ("a * a", lambda a: a * a),
    ("abs(a)", abs),
    ("len(a)", len),
    ("sum(a)", sum),
    ("max(a)", max),
    ("min(a)", min),
    ("sorted(a)", sorted),
    ("a[::-1]", lambda a: a[::-1]),
    ("a.upper()", lambda a: a.upper()),
    ("a.lower()", lambda a: a.lower()),
    ("a.strip()", lambda a: a.strip()),
    ("a.split()", lambda a: a.split()),
    ("len(set(a))", lambda a: len(set(a))),
    ("a % 2 == 0", lambda a: a % 2 == 0),
]
_BINARY: list[tuple[str, Callable[[Any, Any], Any]]] = [
    ("a + b", lambda a, b: a + b),
    ("a - b", lambda a, b: a - b),
    ("a * b", lambda a, b: a * b),
    ("a // b", lambda a, b: a // b),
    ("a % b", lambda a, b: a % b),
    ("max(a, b)", max),
    ("min(a, b)", min),
    ("a ** b", lambda a, b: a**b),
    ("a.count(b)", lambda a, b: a.count(b)),
]
_SIGNATURE = re.compile(r"def\s+(\w+)\s*\(([^)]*)\)")
_DOCTEST = re.compile(r">>>\s*\w+\((.*)\)\s*\n\s*(.+)")


def _fits(fn: Callable[..., Any], cases: list[tuple[tuple[Any, ...], Any]]) -> bool:
    for args, expected in cases:
        try:
            got = fn(*args)
        except Exception:  # noqa: BLE001 - a candidate that fails is not the answer
            return False
        if type(got) is not type(expected) or got != expected:
            return False
    return True


def write_function(prompt: str) -> str:
    """A fenced Python function reproducing the prompt's ``>>>`` examples."""
    match = _SIGNATURE.search(prompt)
    if match is None:
        return "I need a function signature to write code."
    name = match.group(1)
    params = [p.split(":")[0].split("=")[0].strip() for p in match.group(2).split(",")]
    params = [p for p in params if p]
    cases: list[tuple[tuple[Any, ...], Any]] = []
    for call, result in _DOCTEST.findall(prompt):
        try:
            args = ast.literal_eval(f"({call},)")
            cases.append((tuple(args), ast.literal_eval(result.strip())))
        except (ValueError, SyntaxError):
            continue
    table = _UNARY if len(params) == 1 else _BINARY if len(params) == 2 else []
    body = table[0][0] if table else "None"
    for text, fn in table:
        if cases and _fits(fn, cases):
            body = text
            break
    for short, real in zip("ab", params):
        body = re.sub(rf"\b{short}\b", real, body)
    return f"```python\ndef {name}({', '.join(params)}):\n    return {body}\n```"


def complete(messages: list[dict[str, Any]]) -> str:
    """The model: one reply to a chat, from its system and user messages."""
    system = "\n".join(
        str(m.get("content", "")) for m in messages if m.get("role") == "system"
    )
    user = "\n".join(
        str(m.get("content", "")) for m in messages if m.get("role") == "user"
    )
    if "Python function" in system:
        return write_function(user)
    if "JSON object" in system:
        return order_status(user, system)
    if "letter" in system:
        return choose_option(user, system)
    return read_answer(user, system)


def agent_step(messages: list[dict[str, Any]], tools: list[Any]) -> dict[str, Any]:
    """The model with tools: the next assistant message of the agent's loop."""
    names = {
        t.get("function", {}).get("name") for t in tools if isinstance(t, dict)
    }
    last = messages[-1] if messages else {}
    if last.get("role") == "tool":
        # Answer from the tool results that follow the last assistant message.
        results = []
        for message in reversed(messages):
            if message.get("role") != "tool":
                break
            try:
                record = json.loads(str(message.get("content") or "{}"))
            except ValueError:
                record = {}
            if isinstance(record, dict) and record.get("status"):
                results.append(f"Order {record.get('order_id')} is {record['status']}.")
            else:
                results.append("I could not find that order.")
        return {"role": "assistant", "content": " ".join(reversed(results))}
    question = str(last.get("content") or "")
    numbers = re.findall(r"\border (\d+)|\band (\d+)\b", question)
    ids = [int(a or b) for a, b in numbers]
    if not ids or "lookup_order" not in names:
        return {"role": "assistant", "content": "Which order do you mean?"}
    calls = [
        {
            "id": f"call_{n}",
            "type": "function",
            "function": {"name": "lookup_order", "arguments": json.dumps({"order_id": i})},
        }
        for n, i in enumerate(ids)
    ]
    return {"role": "assistant", "content": None, "tool_calls": calls}


def order_status(question: str, context: str) -> str:
    """Structured output: ``{"order": <the question's number>, "status": <the
    word after "is" in the context sentence that names that order>}``."""
    number = re.search(r"\d+", question)
    order = int(number.group()) if number else 0
    status = "unknown"
    for sentence in _sentences(context):
        if number and re.search(rf"\b{order}\b", sentence):
            found = re.search(r"\bis (\w+)", sentence)
            if found:
                status = found.group(1).lower()
    return json.dumps({"order": order, "status": status})


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        try:
            request = json.loads(self.rfile.read(length) or b"{}")
            messages = request["messages"]
        except (ValueError, KeyError, TypeError):
            return self._send(
                400, {"error": {"message": "expected a JSON chat request"}}
            )
        if not self.path.rstrip("/").endswith("/chat/completions"):
            return self._send(404, {"error": {"message": f"no route {self.path}"}})
        tools = request.get("tools")
        if isinstance(tools, list) and tools:
            message = agent_step(messages, tools)
            text = message["content"] or ""
            said = text + json.dumps(message.get("tool_calls") or "")
        else:
            text = complete(messages)
            message = {"role": "assistant", "content": text}
            said = text
        prompt = sum(count_tokens(str(m.get("content", ""))) + 4 for m in messages) + 3
        completion = count_tokens(said)
        time.sleep(0.02 + (prompt + completion) / 100_000)
        self._send(
            200,
            {
                "id": f"chatcmpl-{abs(hash(said)) % 10**12:012d}",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": request.get("model", MODEL),
                "choices": [
                    {
                        "index": 0,
                        "message": message,
                        "finish_reason": "tool_calls" if message.get("tool_calls") else "stop",
                    }
                ],
                "usage": {
                    "prompt_tokens": prompt,
                    "completion_tokens": completion,
                    "total_tokens": prompt + completion,
                },
            },
        )

    def _send(self, status: int, body: dict[str, Any]) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


class LocalLLM:
    """The server, started in a daemon thread; ``url`` is its ``/v1`` base URL.

    :param port: the port to listen on (0: any free port).
    :raises OSError: the port cannot be bound (taken, or not allowed).
    """

    def __init__(self, port: int = 0) -> None:
        self._server = ThreadingHTTPServer(("127.0.0.1", port), _Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)


if __name__ == "__main__":  # pragma: no cover - by hand
    server = LocalLLM(int(sys.argv[1]) if len(sys.argv) > 1 else 8000)
    print(f"serving {MODEL} at {server.url} (Ctrl-C stops it)")
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        server.stop()
