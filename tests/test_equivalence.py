"""Same input, same verdict, whatever the execution mode (issue 22; DESIGN.md §8).

One matrix: every *mode* (a way of running the same benchmark) must give the JSON
report of the serial run: the same rows (suite, system, example id, status, scores),
summaries, intervals, repeated-trial statistics and gate verdicts, timings, paths and
the run's own description aside (:func:`normal`).

The benchmark, in each *entry* form:

* ``cli``: ``--ctxbench-dataset`` with the Systems named by ``--ctxbench-system`` and
  ``--ctxbench-proxy``, beside a marked test (``@pytest.mark.ctxbench``) whose body
  runs the same Systems (``ctxbench_record.run(ctxbench_system)``) on a dataset of
  its own;
* ``fixture``: the same two, the Systems coming from a ``ctxbench_system`` fixture
  in ``conftest.py``.

Five deterministic Systems, each on a loopback endpoint of its own: the built-in
proxy (``--ctxbench-proxy``), plain sync httpx through
``pytest_context_bench.http_client()``, an ``async def process`` through
``async_http_client()``, a System that hands its call to a thread pool of its own,
and one that streams its reply (``"stream": true``, server-sent events read chunk
by chunk through ``http_client()``; issue 28).
A third origin, an agent's (issue 35): a marked test whose examples carry an
``expected_trajectory`` and agent budgets (``max-steps``, ``max-tool-calls``,
``max-tokens``), run by the same Systems, which return their steps (the proxy through
a wrapper that adds them to its reply): a right answer takes one lookup, a wrong one
looks again, so TrajectoryMatch and the
budgets fail exactly the wrong answers, and ``max-tokens`` reads each row's tokens as
measured (or, for a call no row owns, as the System reports them).
The endpoints answer question *i* right when ``i % 3 != 0``, so some examples pass and
some fail; the gates are one that passes (min pass rate 0.4) and one that fails (min
mean score 0.9), so the verdicts mean something.

To add a mode: one entry in :data:`MODES`. To add a System: one class in
:data:`SYSTEMS_PY` and one entry in :data:`SYSTEMS`.

Every run here is a subprocess (``runpytest_subprocess``): the Systems use httpx,
which an inline run would import inside pytester's ``sys.modules`` snapshot, and
``-n 2`` needs one anyway.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from helpers import read_json

from pytest_context_bench.cli import main as ctxbench_main
from pytest_context_bench.testing import FakeLLM, Reply

# --- the benchmark --------------------------------------------------------------------

N = 3  # examples per dataset: q-1..q-3 (country) and m-1..m-3 (region)

SYSTEMS_PY = r'''
import asyncio
import json
import os
from concurrent.futures import ThreadPoolExecutor

import pytest_context_bench


def _ask(example, system):
    # a model name per System: the Systems' servers listen on loopback ports, which
    # the cache key leaves out, so byte-identical requests would share entries
    return {
        "model": f"m-{system}",
        "messages": [{"role": "user", "content": example["question"]}],
    }


def _text(response):
    response.raise_for_status()
    return response.json()["choices"][0]["message"]["content"]


def _answer(example, text):
    """The reply; for an example that expects tool calls, also the call an agent
    makes with it (ToolCallMatch judges it; issue 35)."""
    out = {**example, "response": text}
    if "expected_tool_calls" in example:
        number = int(example["id"].split("-")[1])
        out["tool_calls"] = [{"id": "call_1", "type": "function", "function": {
            "name": "record_capital",
            "arguments": json.dumps({"region": number, "town": text}),
        }}]
    return out


def _usage(response):
    return response.json()["usage"]


def _agent(example, text, usage):
    """For an agent example (it expects a trajectory): the steps taken, one lookup
    when the answer is right, a second when it is not, and the usage of its call."""
    if "expected_trajectory" not in example:
        return {}
    where = example["question"].split()[-1].rstrip("?")

    def lookup(i):
        call = {"id": f"c{i}", "type": "function",
                "function": {"name": "lookup", "arguments": json.dumps({"province": where})}}
        return [{"role": "assistant", "content": "", "tool_calls": [call]},
                {"role": "tool", "content": text, "tool_call_id": f"c{i}"}]

    steps = [{"role": "user", "content": example["question"]}, *lookup(1)]
    if text == "no idea":
        steps += lookup(2)
    steps.append({"role": "assistant", "content": text})
    return {"trajectory": steps,
            "api_usage": {k: usage[k] for k in ("prompt_tokens", "completion_tokens")}}


class SyncHttpx:
    """Plain sync httpx through the run's client (cache, usage)."""
    name = "sync"

    def __init__(self):
        self._client = None

    def process(self, example):
        if self._client is None:
            self._client = pytest_context_bench.http_client(timeout=30)
        url = os.environ["EQ_URL_SYNC"] + "/v1/chat/completions"
        response = self._client.post(url, json=_ask(example, "sync"))
        text = _text(response)
        return {**_answer(example, text), **_agent(example, text, _usage(response))}


class AsyncHttpx:
    """async def process, through the run's async client."""
    name = "async"

    async def process(self, example):
        url = os.environ["EQ_URL_ASYNC"] + "/v1/chat/completions"
        async with pytest_context_bench.async_http_client(timeout=30) as client:
            response = await client.post(url, json=_ask(example, "async"))
        text = _text(response)
        return {**_answer(example, text), **_agent(example, text, _usage(response))}


class Threaded:
    """Hands its call to a thread pool of its own (as LangChain and LlamaIndex do)."""
    name = "threads"

    def __init__(self):
        self._pool = ThreadPoolExecutor(4)
        self._client = None

    def _call(self, example):
        if self._client is None:
            self._client = pytest_context_bench.http_client(timeout=30)
        url = os.environ["EQ_URL_THREADS"] + "/v1/chat/completions"
        response = self._client.post(url, json=_ask(example, "threads"))
        return _text(response), _usage(response)

    def process(self, example):
        text, usage = self._pool.submit(self._call, example).result()
        return {**_answer(example, text), **_agent(example, text, usage)}


class Streamed:
    """Streams its reply (SSE) through the run's client, reading it chunk by chunk."""
    name = "stream"

    def __init__(self):
        self._client = None

    def process(self, example):
        if self._client is None:
            self._client = pytest_context_bench.http_client(timeout=30)
        url = os.environ["EQ_URL_STREAM"] + "/v1/chat/completions"
        body = {**_ask(example, "stream"), "stream": True, "stream_options": {"include_usage": True}}
        pieces = []
        usage = None
        with self._client.stream("POST", url, json=body) as response:
            response.raise_for_status()
            for line in response.iter_lines():
                if line.startswith("data: ") and line != "data: [DONE]":
                    chunk = json.loads(line[6:])
                    usage = chunk.get("usage") or usage
                    for choice in chunk["choices"]:
                        pieces.append(choice["delta"].get("content") or "")
        text = "".join(pieces)
        return {**_answer(example, text), **_agent(example, text, usage)}


sync = SyncHttpx()
async_ = AsyncHttpx()
threads = Threaded()
stream = Streamed()


class _ProxyAgent:
    """The proxy's reply, with the steps an agent would have taken to it."""

    def __init__(self, proxy):
        self.proxy = proxy
        self.name = proxy.name

    def process(self, example):
        out = self.proxy.process(example)
        return {**out, **_agent(example, out["response"], out["api_usage"])}


_agents = {}


def as_agent(system):
    """One wrapper per System (the same object for every example)."""
    if id(system) not in _agents:
        _agents[id(system)] = (system, _ProxyAgent(system))
    return _agents[id(system)][1]


def proxy():
    from pytest_context_bench.systems import OpenAIProxy

    return OpenAIProxy(os.environ["EQ_URL_PROXY"], model="m", name="proxy")
'''

#: System name → how the ``cli`` entry names it on the command line (the proxy's URL
#: is filled in per run), and the expression the ``fixture`` entry builds it with.
SYSTEMS: dict[str, tuple[str, str]] = {
    "proxy": ("--ctxbench-proxy={EQ_URL_PROXY}", "eqsys.proxy()"),
    "sync": ("--ctxbench-system=eqsys:sync", "eqsys.sync"),
    "async": ("--ctxbench-system=eqsys:async_", "eqsys.async_"),
    "threads": ("--ctxbench-system=eqsys:threads", "eqsys.threads"),
    "stream": ("--ctxbench-system=eqsys:stream", "eqsys.stream"),
}

MARKED_PY = """
import pytest

@pytest.mark.ctxbench(dataset="regions.jsonl")
def test_marked(ctxbench_example, ctxbench_record, ctxbench_system):
    ctxbench_record.run(ctxbench_system)


@pytest.mark.ctxbench(dataset="agents.jsonl")
def test_agent(ctxbench_example, ctxbench_record, ctxbench_system):
    from eqsys import as_agent

    systems = ctxbench_system if isinstance(ctxbench_system, list) else [ctxbench_system]
    # the built-in proxy returns no steps: a wrapper adds them to its reply
    ctxbench_record.run([as_agent(s) if s.name == "proxy" else s for s in systems])
"""

FIXTURE_PY = """
import pytest
import eqsys

@pytest.fixture(scope="session")
def ctxbench_system():
    return [{systems}]
"""

GATES = ["--ctxbench-min-pass-rate=0.4", "--ctxbench-min-mean-score=0.9"]

_QUESTION = re.compile(r"capital of (country|region|province) (\d+)")
#: kind of place → the word of its capital in a right answer
_TOWN = {"country": "city", "region": "town", "province": "village"}


#: The regions (the marked test's dataset) are judged by their own assertions
#: (issue 34), which agree with token F1 here: a right answer passes them all.
#: They also expect a tool call (issue 35), scored by ToolCallMatch and by a
#: tool-call assertion of weight 0 (shown, not counted). The built-in proxy sends
#: their ``tools``, and the endpoint answers it with the text and, when right, the
#: call (a tool call is an answer: it crosses the cache, workers and shards).
_ASSERTS = [
    {"type": "icontains", "value": "{{answer}}"},
    {"type": "not-contains", "value": "idea", "metric": "knows"},
    {"type": "regex", "value": "^town \\d+$", "weight": 2},
]


#: The function the regions' ``tools`` declare.
_RECORD_CAPITAL = {"type": "function", "function": {
    "name": "record_capital",
    "parameters": {"type": "object", "required": ["region", "town"], "properties": {
        "region": {"type": "integer"}, "town": {"type": "string"}}},
}}


def _expected_calls(i: int) -> list[dict[str, Any]]:
    return [{"name": "record_capital", "arguments": {"region": i, "town": f"Town {i}"}}]


#: An agent example (issue 35): the steps of one lookup, and budgets that a second
#: lookup (a wrong answer) breaks. The weight-0 max-tokens fails on every row and so
#: shows the row's token count in its details, compared between modes.
_AGENT_ASSERTS = [
    {"type": "max-steps", "value": 2},
    {"type": "max-tool-calls", "value": 1},
    {"type": "max-tokens", "value": 1000},
    {"type": "not-max-tokens", "value": 0},
    {"type": "max-tokens", "value": 1, "weight": 0},
]


def _agent_lines() -> str:
    def trajectory(i: int) -> list[dict[str, Any]]:
        call = {"id": "x", "type": "function",
                "function": {"name": "lookup", "arguments": json.dumps({"province": str(i)})}}
        return [{"role": "user", "content": "..."},
                {"role": "assistant", "tool_calls": [call]},
                {"role": "tool", "content": "...", "tool_call_id": "x"},
                {"role": "assistant", "content": "..."}]

    return "".join(
        json.dumps({
            "id": f"a-{i}",
            "question": f"What is the capital of province {i}?",
            "answer": f"village {i}",
            "expected_trajectory": trajectory(i),
            "assert": _AGENT_ASSERTS,
        }) + "\n"
        for i in range(1, N + 1)
    )


def _lines(kind: str, prefix: str, town: str) -> str:
    return "".join(
        json.dumps(
            {
                "id": f"{prefix}-{i}",
                "context": f"Document {i} names the capital of {kind} {i}.",
                "question": f"What is the capital of {kind} {i}?",
                "answer": f"{town} {i}",
                **({"assert": [*_ASSERTS, {"type": "tool-call", "value": _expected_calls(i), "weight": 0}],
                    "expected_tool_calls": _expected_calls(i), "tools": [_RECORD_CAPITAL]}
                   if kind == "region" else {}),
            }
        )
        + "\n"
        for i in range(1, N + 1)
    )


class Endpoint(FakeLLM):
    """Question i is answered right when ``i % 3 != 0``. With ``per_request``, the
    answer also depends on how often that question was asked before (``i % 3 == 2``:
    right the first time only), so that each trial of a repeated run must be a
    request of its own to give the expected statistics."""

    def __init__(self) -> None:
        self.per_request = False
        self._asked: dict[tuple[str, int], int] = {}
        self._count_lock = threading.Lock()
        super().__init__(handler=self._reply)

    def reset(self, *, per_request: bool) -> None:
        """Forget the requests seen (a new run)."""
        with self._count_lock:
            self.per_request = per_request
            self._asked.clear()
            self.requests.clear()

    def _reply(self, request: Any) -> Reply:
        text = " ".join(str(m.get("content", "")) for m in request.messages)
        match = _QUESTION.search(text)
        if match is None:
            return Reply(text="?")
        kind, i = match.group(1), int(match.group(2))
        with self._count_lock:
            n = self._asked[(kind, i)] = self._asked.get((kind, i), 0) + 1
        right = i % 3 == 1 or (i % 3 == 2 and (n == 1 or not self.per_request))
        town = _TOWN[kind]
        if not right:
            return Reply(text="no idea")
        tools = request.json.get("tools") if isinstance(request.json, dict) else None
        # Asked with tools (the proxy, for a region): the answer and its call.
        calls = [{"name": "record_capital", "arguments": {"region": i, "town": f"{town} {i}"}}]
        return Reply(text=f"{town} {i}", tool_calls=calls if tools else None)


# --- the modes ------------------------------------------------------------------------


ENTRIES = ("cli", "fixture")


@dataclass(frozen=True)
class Mode:
    """One way of running the benchmark.

    :param args: added to the run's command line.
    :param shards: run ``--ctxbench-shard=i/N`` for each i, then ``ctxbench merge``.
    :param replay: record with ``--ctxbench-cache=once`` first, then run again with
        ``--ctxbench-cache=replay`` (compared), which must send no request.
    :param reference: the mode this one is compared with.
    :param requests: requests each endpoint must see per example and origin, or
        ``None`` (not checked).
    :param xfail: System name → reason its rows are known to differ in this mode (a
        fix pending elsewhere): that case is a strict xfail.
    """

    args: tuple[str, ...] = ()
    shards: int = 0
    replay: bool = False
    reference: str = "serial"
    requests: int | None = 1
    per_request: bool = False
    xfail: dict[str, str] = field(default_factory=dict)
    #: the entry forms it runs in
    entries: tuple[str, ...] = ENTRIES


_REPEAT = ("--ctxbench-repeat=3", "--ctxbench-cache=once")

MODES: dict[str, Mode] = {
    "serial": Mode(),
    "concurrency-16": Mode(("--ctxbench-concurrency=16",)),
    # Every call through the runner's timed path (a call's own time, issue 22 item 5).
    "timeout-concurrency-16": Mode(
        ("--ctxbench-timeout=60", "--ctxbench-concurrency=16")
    ),
    # The command line's examples as pytest's function items: a fixture applies to
    # every test (an autouse fixture of a plugin), where they are otherwise plain
    # items (plugin/collection.py: CaseItem). The fixture form has function items.
    "function-items": Mode(("-p", "eq_autouse"), entries=("cli",)),
    # The command line's examples read and counted two at a time ahead of their
    # items (plugin/readahead.py; 64 at a time otherwise, one block here): the
    # serial run's rows, which xdist-2 (no read-ahead) checks in turn.
    "read-ahead-by-2": Mode(("-p", "eq_block2"), entries=("cli",)),
    "xdist-2": Mode(("-n", "2")),
    "xdist-2-concurrency-16": Mode(("-n", "2", "--ctxbench-concurrency=16")),
    "shards-3-merge": Mode(shards=3),
    "cache-once-then-replay": Mode(replay=True, requests=0),
    # Repeated trials against an endpoint whose answer changes per request: each
    # trial is a request of its own (with the cache on), whatever the concurrency.
    "repeat-3": Mode(_REPEAT, reference="repeat-3", requests=3, per_request=True),
    "repeat-3-concurrency-16": Mode(
        (*_REPEAT, "--ctxbench-concurrency=16"), reference="repeat-3", requests=3,
        per_request=True,
    ),
    "repeat-3-xdist-2": Mode(
        (*_REPEAT, "-n", "2"), reference="repeat-3", requests=3, per_request=True
    ),
}

#: a plugin (``-p eq_block2``) that makes the read-ahead's blocks two examples long
BLOCK2_PY = """
from pytest_context_bench.plugin import readahead

readahead.BLOCK = 2
"""

#: a plugin (``-p eq_autouse``) whose fixture applies to every test
AUTOUSE_PY = """
import pytest


@pytest.fixture(autouse=True)
def _every_test():
    yield
"""


# --- running --------------------------------------------------------------------------


@pytest.fixture
def endpoints(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, Endpoint]]:
    servers = {name: Endpoint() for name in SYSTEMS}
    for server in servers.values():
        server.start()
    try:
        for name, server in servers.items():
            monkeypatch.setenv(f"EQ_URL_{name.upper()}", server.base_url)
        yield servers
    finally:
        for server in servers.values():
            server.stop()


def _project(
    pytester: pytest.Pytester,
    endpoints: dict[str, Endpoint],
    entry: str,
    systems: tuple[str, ...],
) -> list[str]:
    """Write the project; the arguments every run of ``entry`` takes."""
    pytester.makefile(".jsonl", qa=_lines("country", "q", "city"))
    pytester.makefile(".jsonl", regions=_lines("region", "m", "town"))
    pytester.makefile(".jsonl", agents=_agent_lines())
    pytester.makepyfile(
        eqsys=SYSTEMS_PY, test_marked=MARKED_PY, eq_autouse=AUTOUSE_PY, eq_block2=BLOCK2_PY
    )
    # Every call reaches the endpoint unless a mode turns the cache on.
    pytester.makeini("[pytest]\npythonpath = .\nctxbench_cache = off\n")
    args = ["--ctxbench-dataset=qa.jsonl", *GATES]
    if entry == "cli":
        urls = {f"EQ_URL_{k.upper()}": v.base_url for k, v in endpoints.items()}
        args += [SYSTEMS[s][0].format(**urls) for s in systems]
        if "proxy" in systems:
            args += ["--ctxbench-proxy-name=proxy", "--ctxbench-model=m"]
    else:
        pytester.makeconftest(
            FIXTURE_PY.format(systems=", ".join(SYSTEMS[s][1] for s in systems))
        )
    return args


def _run(pytester: pytest.Pytester, args: list[str], out: Path) -> None:
    result = pytester.runpytest_subprocess(*args, f"--ctxbench-json={out}", timeout=300)
    # 1: the min-mean-score gate fails (by design); anything else is a broken run.
    assert result.ret == 1, result.stdout.str()
    assert out.exists(), result.stdout.str()


def run_mode(
    pytester: pytest.Pytester,
    endpoints: dict[str, Endpoint],
    mode: Mode,
    base: list[str],
    name: str,
) -> dict[str, Any]:
    """Run ``mode`` on fresh endpoints; its JSON report (for shards, the merged
    one). The endpoints' ``requests`` are then the requests of the compared run."""
    for server in endpoints.values():
        server.reset(per_request=mode.per_request)
    out = pytester.path / f"{name}.json"
    # A cache of its own (where a mode turns the cache on): the reference's run
    # in the same folder must not answer this one.
    args = [*base, *mode.args, f"--ctxbench-cache-dir=cache-{name}"]
    if mode.shards:
        parts = []
        for i in range(1, mode.shards + 1):
            part = pytester.path / f"{name}-shard-{i}.json"
            result = pytester.runpytest_subprocess(
                *args, f"--ctxbench-shard={i}/{mode.shards}", f"--ctxbench-json={part}",
                timeout=300,
            )
            assert result.ret in (0, 1), result.stdout.str()
            parts.append(str(part))
        status = ctxbench_main(["merge", *parts, "--json", str(out), *GATES])
        assert status == 1  # the failing gate, decided on the whole
        return read_json(out)
    if mode.replay:
        _run(pytester, [*args, "--ctxbench-cache=once"], pytester.path / "once.json")
        for server in endpoints.values():
            server.reset(per_request=mode.per_request)
        args = [*args, "--ctxbench-cache=replay"]
    _run(pytester, args, out)
    return read_json(out)


def _details(metadata: dict[str, Any]) -> str:
    """The evaluators' details of a row (why it scored so), timings aside."""
    return json.dumps(
        {
            name: {k: v for k, v in value.items() if k != "duration"}
            for name, value in metadata.items()
            if isinstance(value, dict) and "reason" in value
        },
        sort_keys=True,
    )


def normal(doc: dict[str, Any], *, trials: bool = False) -> dict[str, Any]:
    """What must not depend on the mode: rows (suite, system, dataset, id, status,
    scores, error type, evaluator details), summaries without latencies, intervals, repeated-trial
    statistics, gates and their verdicts. With ``trials``, the rows are compared as
    a multiset (which trial got which reply may depend on the order in which the
    requests reached the endpoint; each example's replies may not)."""
    rows = [
        (
            r["suite"], r["system"], r["dataset"], r["example_id"], r["status"],
            json.dumps(r["scores"], sort_keys=True),
            (r["error"] or {}).get("type"),
            _details(r["metadata"]),
            _calls(r),
        )
        for r in doc["rows"]
    ]
    return {
        "rows": sorted(rows) if trials else rows,
        # The threads System's calls are unowned while several calls are in flight
        # (see _calls): its rows' LLM tokens, so its suites' llm_* means, depend on
        # the mode; every token is still counted for the run (llm_tokens below).
        "summary": {
            suite: {
                k: v for k, v in metrics.items()
                if not k.startswith("latency") and not (k.startswith("llm_") and "threads" in suite)
            }
            for suite, metrics in doc["summary"].items()
        },
        "intervals": doc["intervals"],
        "repeats": doc.get("repeats"),
        "gates": [(g["suite"], g["gate"], g["value"], g["passed"]) for g in doc["gates"]],
        "gates_enforced": doc["gates_enforced"],
        "lost": doc["lost"],
        # Every reply's tokens, replayed or sent, owned by a row or by the run
        # (a thread's call under concurrency): none lost, none counted twice.
        "llm_tokens": (doc.get("llm") or {}).get("tokens"),
    }


def _calls(row: dict[str, Any]) -> str | None:
    """What of a row's call records may not depend on the mode: how many, and each
    one's source, model, params, messages, reply, finish reason, usage, statuses and
    error (not its latency, not its URL, whose port is the test's endpoint's, and
    not its cache field: a replayed call is a hit). The
    ``threads`` System's calls are unowned (and unrecorded) when several calls are in
    flight (calls.call_owner), so its rows are not compared."""
    if row["system"] == "threads":
        return None
    return json.dumps(
        [
            {k: v for k, v in call.items() if k not in ("latency", "url", "cache")}
            for call in row.get("calls", [])
        ],
        sort_keys=True,
    )


def check_reference(doc: dict[str, Any], systems: tuple[str, ...], trials: int) -> None:
    """The reference itself is right: the statuses follow the endpoint's rule (and,
    with trials, every trial had a reply of its own), and one gate passes, one fails."""
    statuses: dict[tuple[str, str], list[str]] = {}
    for r in doc["rows"]:
        statuses.setdefault((r["suite"], r["example_id"]), []).append(r["status"])
        if r["status"] == "below":  # the details compared are there to compare
            assert r["metadata"]["answer_quality"]["reason"], r
        if r["example_id"].startswith("m-"):  # judged by their assertions
            assert r["metadata"]["score_field"] == "assert_score", r
            assert r["scores"]["assert_score"] == (r["status"] == "pass"), r
            assert r["metadata"]["assertions"]["by_type"]["regex"] in ("0/1", "1/1"), r
            # the tool call follows the answer: right when the answer is, for every
            # System (the proxy's is the model's own call, sent back as its answer)
            calls = r["metadata"]["tool_call_match"]
            assert r["scores"]["tool_call_match"] == (r["status"] == "pass"), r
            assert ("misses" in calls) == (r["status"] != "pass"), r
            if r["system"] == "proxy" and r["status"] == "pass":
                assert r["tool_calls"].startswith("record_capital("), r
            tool_check = r["metadata"]["assertions"]["4. tool-call"]
            assert tool_check.startswith("pass" if r["scores"]["tool_call_match"] else "FAIL"), r
        if r["example_id"].startswith("a-"):  # an agent's: its steps and budgets
            check_agent_row(r)
    assert len(statuses) == 3 * N * len(systems)  # three origins, N examples, per System
    for (suite, example_id), got in statuses.items():
        i = int(example_id.split("-")[1])
        passes = trials if i % 3 == 1 else (1 if i % 3 == 2 and trials > 1 else 0)
        if i % 3 == 2 and trials == 1:
            passes = 1
        assert sorted(got) == sorted(["pass"] * passes + ["below"] * (trials - passes)), (
            suite, example_id, got,
        )
    # Every reply's usage was measured (the proxy, httpx and threads Systems alike).
    assert doc["llm"]["tokens"]["prompt_tokens"] > 0, doc.get("llm")
    # --ctxbench-transcripts=failing (the default): each failing row, and no other,
    # has the record of its System's one call, with the question sent and the reply
    # (but the threads System's, whose calls may have no owner, see _calls).
    for r in doc["rows"]:
        if r["system"] == "threads":
            continue
        calls = r.get("calls", [])
        assert len(calls) == (r["status"] != "pass"), r
        for call in calls:
            assert call["source"] == "system" and call["model"] in ("m", f"m-{r['system']}"), call
            assert re.fullmatch(
                r"http://127\.0\.0\.1:\d+/v1/chat/completions", call["url"]
            ), call
            kind = {"q": "country", "m": "region", "a": "province"}[r["example_id"][0]]
            assert f"capital of {kind}" in (
                call["messages"][-1]["text"]
            ), call
            assert call["reply"] == "no idea" and call["attempts"] == [
                {"status": 200, "error": None}
            ], call
    # Each suite (one per System and origin), and nothing else, has its two gates:
    # one met, one breached.
    verdicts: dict[str, dict[str, bool]] = {}
    for g in doc["gates"]:
        verdicts.setdefault(g["suite"], {})[g["gate"]] = g["passed"]
    assert set(verdicts) == set(doc["summary"]), doc["gates"]
    assert len(verdicts) == 3 * len(systems)
    for suite, got in verdicts.items():
        assert got == {"min_pass_rate": True, "min_mean_score": False}, (suite, got)


def check_agent_row(r: dict[str, Any]) -> None:
    """An agent's row: a right answer (one lookup) matches the expected trajectory
    and keeps its budgets; a wrong one (a second lookup) breaks both; every row's
    tokens were counted (the weight-0 max-tokens of 1 fails and says how many)."""
    right = r["status"] == "pass"
    assert r["metadata"]["score_field"] == "assert_score", r
    assert r["scores"]["trajectory_match"] == float(right), r
    details = r["metadata"]["assertions"]
    assert details["1. max-steps"] == ("pass" if right else
        "FAIL: Assistant steps in the trajectory: 3, more than max-steps 2"), r
    assert details["2. max-tool-calls"] == ("pass" if right else
        "FAIL: Tool calls: 2, more than max-tool-calls 1"), r
    assert details["3. max-tokens"] == details["4. not-max-tokens"] == "pass", r
    assert re.fullmatch(
        r"FAIL: LLM tokens \(prompt \+ completion\): \d+, more than max-tokens 1 \[weight 0\]",
        details["5. max-tokens"]), r
    reason = r["metadata"]["trajectory_match"]["reason"]
    assert reason.startswith("the trajectory matches (strict" if right else
                             "step 4: the assistant made 1 tool call"), r


def check_requests(endpoints: dict[str, Endpoint], mode: Mode, systems: tuple[str, ...]) -> None:
    """Each call made once per example, origin and trial (none at all on replay)."""
    if mode.requests is not None:
        for system in systems:
            assert len(endpoints[system].requests) == mode.requests * N * 3, system


_REFERENCES: dict[tuple[str, tuple[str, ...], str], dict[str, Any]] = {}


@pytest.fixture(scope="session")
def shared_references(tmp_path_factory: pytest.TempPathFactory) -> Path | None:
    """Under xdist, the folder where the workers share the reference runs (one run
    of each reference for the whole session, not one per worker); else ``None``
    (:data:`_REFERENCES` is the session's)."""
    run = os.environ.get("PYTEST_XDIST_TESTRUNUID")
    if run is None:
        return None
    folder = tmp_path_factory.getbasetemp().parent / f"equivalence-references-{run}"
    folder.mkdir(exist_ok=True)
    return folder


def reference_of(
    key: tuple[str, tuple[str, ...], str],
    shared: Path | None,
    make: Callable[[], dict[str, Any]],
) -> dict[str, Any]:
    """The reference report of ``key`` (entry, Systems, reference mode): made by
    ``make`` (which checks it) once per process, and under xdist read by a worker
    that asks after another one has made it. A worker that asks while the other is
    making it makes its own (never idle while waiting for it)."""
    if key in _REFERENCES:
        return _REFERENCES[key]
    if shared is None:
        _REFERENCES[key] = make()
        return _REFERENCES[key]
    name = hashlib.sha256(json.dumps(key).encode()).hexdigest()[:16]
    path = shared / f"{name}.json"
    with open(shared / f"{name}.lock", "w") as lock:  # the lock ends with the file
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:  # the other worker is making it
            _REFERENCES[key] = make()
            return _REFERENCES[key]
        if path.exists():
            doc = read_json(path)
        else:
            doc = make()
            tmp = path.with_suffix(".tmp")
            tmp.write_text(json.dumps(doc), encoding="utf-8")
            tmp.replace(path)
    _REFERENCES[key] = doc
    return doc


def _cases() -> Iterator[Any]:
    """(mode, entry, Systems): all the Systems in one run, except those a mode marks
    as pending, each then a strict xfail case of its own."""
    for mode_name, mode in MODES.items():
        for entry in mode.entries:
            steady = tuple(s for s in SYSTEMS if s not in mode.xfail)
            yield pytest.param(mode_name, entry, steady, id=f"{mode_name}-{entry}")
            for system, reason in mode.xfail.items():
                yield pytest.param(
                    mode_name, entry, (system,),
                    marks=pytest.mark.xfail(strict=True, reason=reason),
                    id=f"{mode_name}-{entry}-{system}",
                )


@pytest.mark.parametrize(("mode_name", "entry", "systems"), list(_cases()))
def test_every_mode_gives_the_reference_answer(
    pytester: pytest.Pytester,
    endpoints: dict[str, Endpoint],
    shared_references: Path | None,
    mode_name: str,
    entry: str,
    systems: tuple[str, ...],
) -> None:
    mode = MODES[mode_name]
    base = _project(pytester, endpoints, entry, systems)
    trials = 3 if "--ctxbench-repeat=3" in mode.args else 1
    key = (entry, systems, mode.reference)

    def make_reference() -> dict[str, Any]:
        reference = MODES[mode.reference]
        doc = run_mode(pytester, endpoints, reference, base, f"ref-{mode.reference}")
        check_reference(doc, systems, trials)
        check_requests(endpoints, reference, systems)
        return doc

    if mode_name == mode.reference:
        # The reference mode's own case: its run is checked (and shared, when no
        # other case made it first; a case that did checked it the same way).
        got = reference_of(key, shared_references, make_reference)
        assert got["rows"], got
        return
    reference = reference_of(key, shared_references, make_reference)
    got = run_mode(pytester, endpoints, mode, base, mode_name)
    if mode.replay:
        # Nothing was sent: every call record is a cache hit.
        caches = {c["cache"] for r in got["rows"] for c in r.get("calls", [])}
        assert caches == {"hit"}, caches
    check_requests(endpoints, mode, systems)
    assert normal(got, trials=trials > 1) == normal(reference, trials=trials > 1)


# --- adaptive trials ------------------------------------------------------------------

#: --ctxbench-trials=adaptive against a baseline of 4 trials per example: which
#: examples are asked again depends only on the baseline and a hash of their
#: identity, so every mode must ask the same ones and reach the same verdict. One System (sync httpx, through the run's cache), the command line (the
#: marked test beside it runs one trial, as adaptive trials are the command line's).
_ADAPTIVE = (
    "--ctxbench-trials=adaptive", "--ctxbench-max-trials=2",
    "--ctxbench-baseline=adaptive-base.json", "--ctxbench-max-drop=pass_rate:0",
    # two gates adjusted together (issue 33): the merge adjusts as the shards ran
    "--ctxbench-max-drop=mean_score:0", "--ctxbench-familywise=holm",
)


def _adaptive_normal(doc: dict[str, Any]) -> dict[str, Any]:
    rows = sorted(
        (r["suite"], r["example_id"], r["metadata"].get("trial"), r["status"],
         json.dumps(r["metadata"].get("adaptive"), sort_keys=True))
        for r in doc["rows"]
    )
    return {**normal(doc, trials=True), "trials": rows,
            "comparison": doc["baseline_comparison"]["metrics"]}


def test_adaptive_trials_every_mode_gives_the_same_answer(
    pytester: pytest.Pytester, endpoints: dict[str, Endpoint]
) -> None:
    base = _project(pytester, endpoints, "cli", ("sync",))
    server = endpoints["sync"]
    server.reset(per_request=True)  # q-2: right the first time only
    saved = pytester.runpytest_subprocess(
        *base, "--ctxbench-repeat=4", "--ctxbench-save-baseline=adaptive-base.json", timeout=300
    )
    assert saved.ret == 1, saved.stdout.str()  # the min-mean-score gate, by design
    runs: dict[str, dict[str, Any]] = {}
    requests: dict[str, int] = {}
    for name, extra in (
        # the reference records its replies; the replay sends no request
        ("serial", ["--ctxbench-cache=once", "--ctxbench-cache-dir=adaptive-cache"]),
        ("replay", ["--ctxbench-cache=replay", "--ctxbench-cache-dir=adaptive-cache"]),
    ):
        server.reset(per_request=True)
        out = pytester.path / f"adaptive-{name}.json"
        _run(pytester, [*base, *_ADAPTIVE, *extra], out)
        runs[name], requests[name] = read_json(out), len(server.requests)
    server.reset(per_request=True)
    parts = []
    for i in (1, 2):
        part = pytester.path / f"adaptive-shard-{i}.json"
        result = pytester.runpytest_subprocess(
            *base, *_ADAPTIVE, f"--ctxbench-shard={i}/2", "--ctxbench-no-gate",
            f"--ctxbench-json={part}", timeout=300,
        )
        assert result.ret == 0, result.stdout.str()
        parts.append(str(part))
    merged = pytester.path / "adaptive-merged.json"
    status = ctxbench_main(["merge", *parts, "--json", str(merged), *GATES,
                            "--ctxbench-baseline=adaptive-base.json", "--ctxbench-max-drop=pass_rate:0",
                            "--ctxbench-max-drop=mean_score:0"])
    assert status == 1
    runs["shards-2-merge"] = read_json(merged)
    reference = runs["serial"]
    trials = {(r["example_id"], r["metadata"]["trial"]): r["status"]
              for r in reference["rows"] if r["suite"] == "sync"}
    # q-2's baseline trials differ (right the first time only): the System's answers
    # vary, so re-asking can pay. The budget (1.5 calls per example: 1.5 more calls)
    # pays one more trial for one of the three; the seeded coin picks q-1, whose
    # second trial is a request of its own (answered right: q-1 is always right).
    assert trials == {("q-1", 1): "pass", ("q-1", 2): "pass", ("q-2", 1): "pass",
                      ("q-3", 1): "below"}
    assert requests == {"serial": 3 * N + 1, "replay": 0}  # 3 origins, one trial more
    (metric,) = [m for m in reference["baseline_comparison"]["metrics"]
                 if m["suite"] == "sync" and m["metric"] == "pass_rate"]
    # Paired on as many trials of each side, every example's mean is 0 or 1 here.
    assert metric["test"] == "mcnemar-exact"
    assert reference["baseline_comparison"]["familywise"] == "holm"
    assert all(m["holm_adjusted_p"] is not None for m in reference["baseline_comparison"]["metrics"]
               if m["suite"] == "sync" and m["tolerance"] is not None)
    for name, doc in runs.items():
        assert _adaptive_normal(doc) == _adaptive_normal(reference), name
        assert doc["baseline_comparison"]["familywise"] == "holm", name


# --- judges (issue 36) ------------------------------------------------------------------

#: An example's rubric decides its row, an llm-rubric assertion another's; the judge
#: is asked each question three times (--ctxbench-judge-repeat) and its answer to a
#: question changes with how often that question was asked before: each repeat must
#: be a request (and a cache entry) of its own, asked in order, in every mode. The
#: labels disagree with the judge: its gates are not enforced, in every mode alike.
_JUDGE_ARGS = (
    "--ctxbench-judge-repeat=3", "--ctxbench-judge-labels=judge-labels.jsonl",
    "--ctxbench-min-judge-kappa=0.5", "--ctxbench-judge-retries=0",
)


class Judge(FakeLLM):
    """Grades a right answer 5, 2, 4 (in the order it is asked), a wrong one 1, 4,
    2; an llm-rubric grading passes, then fails, then passes. The logprobs of a
    right answer's first grade weight it."""

    def __init__(self) -> None:
        self._asked: dict[str, int] = {}
        self._lock = threading.Lock()
        super().__init__(handler=self._reply)

    def reset(self) -> None:
        with self._lock:
            self._asked.clear()
            self.requests.clear()

    def _reply(self, request: Any) -> Reply:
        text = json.dumps(request.messages)
        with self._lock:
            n = self._asked[text] = self._asked.get(text, 0) + 1
        if "Rate the response" in text:  # the marked tests' examples: the seeds' judge
            return Reply("5" if "town" in text.split("[Assistant", 1)[-1] else "2")
        if "<Rubric>" in text:
            ok = n % 2 == 1
            return Reply(json.dumps({"reason": f"grading {n}", "pass": ok, "score": 1 if ok else 0}))
        right = "city" in text.split("[Response]", 1)[-1]
        grade = (5, 2, 4)[(n - 1) % 3] if right else (1, 4, 2)[(n - 1) % 3]
        logprobs = {str(grade): -0.2, str(max(1, grade - 1)): -1.9} if right and n == 1 else None
        return Reply(f"Score: {grade}\nReason: grade {n}", logprobs=logprobs)


def _judged_lines() -> str:
    return "".join(
        json.dumps({
            "id": f"j-{i}",
            "question": f"What is the capital of country {i}?",
            **({"assert": [{"type": "llm-rubric", "value": "Names a city"}]} if i == N
               else {"rubric": {"criteria": "Names the capital city", "pass_score": 4 if i == 2 else 3}}),
        }) + "\n"
        for i in range(1, N + 1)
    )


def test_judges_every_mode_gives_the_same_answer(
    pytester: pytest.Pytester, endpoints: dict[str, Endpoint]
) -> None:
    # One System: two that answer alike would send the judge byte-identical requests,
    # which one cache entry answers (or, with the cache off under -n 2, in an order
    # no mode fixes), and this endpoint answers by the order it is asked in. The
    # proxy's judges are awaited right after its call under --ctxbench-concurrency.
    systems = ("proxy",)
    base = _project(pytester, endpoints, "cli", systems)
    base = [a for a in base if a != "--ctxbench-dataset=qa.jsonl"] + ["--ctxbench-dataset=judged.jsonl"]
    pytester.makefile(".jsonl", judged=_judged_lines())
    pytester.makefile(".jsonl", **{"judge-labels": "\n".join(
        json.dumps({"example_id": f"j-{i}", "label": "fail" if i % 3 else "pass"}) for i in range(1, N + 1))})
    judge = Judge()
    judge.start()
    try:
        base += [f"--ctxbench-judge-url={judge.base_url}", *_JUDGE_ARGS]
        runs: dict[str, dict[str, Any]] = {}
        sent: dict[str, int] = {}
        modes = {
            "serial": ["--ctxbench-cache=once", "--ctxbench-cache-dir=judge-cache"],
            "replay": ["--ctxbench-cache=replay", "--ctxbench-cache-dir=judge-cache"],
            "concurrency-16": ["--ctxbench-concurrency=16"],
            "xdist-2-concurrency-4": ["-n", "2", "--ctxbench-concurrency=4"],
        }
        for name, extra in modes.items():
            for server in (*endpoints.values(), judge):
                server.reset(per_request=False) if server is not judge else judge.reset()
            out = pytester.path / f"judged-{name}.json"
            _run(pytester, [*base, *extra], out)
            runs[name], sent[name] = read_json(out), sum(
                "Rate the response" not in json.dumps(r.messages) for r in judge.requests)
        judge.reset()
        parts = []
        for i in (1, 2):
            part = pytester.path / f"judged-shard-{i}.json"
            result = pytester.runpytest_subprocess(
                *base, f"--ctxbench-shard={i}/2", f"--ctxbench-json={part}", timeout=300)
            assert result.ret in (0, 1), result.stdout.str()
            parts.append(str(part))
        merged = pytester.path / "judged-merged.json"
        assert ctxbench_main(["merge", *parts, "--json", str(merged), *GATES]) == 1
        runs["shards-2-merge"] = read_json(merged)
    finally:
        judge.stop()
    # Every judged row of each System asked three times; nothing sent on replay.
    assert sent["serial"] == len(systems) * N * 3 and sent["replay"] == 0
    reference = runs["serial"]
    rows = {(r["suite"], r["example_id"]): r for r in reference["rows"]}
    first = rows[("proxy", "j-1")]
    assert first["metadata"]["llm_judge"]["repeats"]["ratings"][1:] == [2.0, 4.0]
    assert first["metadata"]["llm_judge"]["repeats"]["ratings"][0] < 5  # weighted by its logprobs
    # about 5 (weighted), 2, 4 against a pass mark of 4: two of three pass
    second = rows[("proxy", "j-2")]
    assert second["scores"]["judge_pass"] == 1.0
    assert second["metadata"]["llm_judge"]["repeats"]["passed"] == "2 of 3"
    agreement = reference["judge_agreement"]
    # the command line's suite, judged, is not enforced; the marked tests' (decided by
    # their assertions) are measured (their rows have the seeds' judge_score) and gated
    assert {s["suite"]: "not_enforced" in s for s in agreement["suites"] if s["judge_scored"]} == {
        "proxy": True}
    assert any(g.get("enforced") is False for g in reference["gates"])
    for name, doc in runs.items():
        assert normal(doc) == normal(reference), name
        assert [g.get("not_enforced") for g in doc["gates"]] == [
            g.get("not_enforced") for g in reference["gates"]], name
        assert doc["judge_agreement"]["suites"] == agreement["suites"], name
# --- answers scored again (issue 37) -------------------------------------------------


def test_a_rescored_report_equals_the_run(
    pytester: pytest.Pytester, endpoints: dict[str, Endpoint], shared_references: Path | None
) -> None:
    """``ctxbench rescore`` of the serial run's report, by the evaluators the run
    wired (no --evaluator), is that run: the same rows, details, call records,
    summaries, intervals and gates, for every System and all three origins (token
    F1, assertions with tool calls, an agent's trajectory and budgets)."""
    systems = tuple(SYSTEMS)
    base = _project(pytester, endpoints, "cli", systems)
    def make_reference() -> dict[str, Any]:
        doc = run_mode(pytester, endpoints, MODES["serial"], base, "ref-serial")
        check_reference(doc, systems, 1)
        return doc

    reference = reference_of(("cli", systems, "serial"), shared_references, make_reference)
    source = pytester.path / "ref.json"
    source.write_text(json.dumps(reference), encoding="utf-8")
    requests = {name: len(server.requests) for name, server in endpoints.items()}
    out = pytester.path / "rescored.json"
    status = ctxbench_main([
        "rescore", str(source), "--dataset", str(pytester.path / "qa.jsonl"),
        "--dataset", str(pytester.path / "regions.jsonl"), "--dataset", str(pytester.path / "agents.jsonl"),
        "--json", str(out), "--cache", "off",
    ])
    assert status == 1  # the min-mean-score gate fails, as in the run
    got = read_json(out)
    assert got["run"]["rescored"]["not_rescored"] == []
    assert normal(got) == normal(reference)
    # No System was called: not one request reached an endpoint.
    assert {name: len(server.requests) for name, server in endpoints.items()} == requests
