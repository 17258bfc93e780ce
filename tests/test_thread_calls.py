"""LLM calls a System makes from threads (or executors) of its own (issue 22 item 2).

Such a thread runs outside the System call's context, so the call's example and
trial (part of the cache key) are not in it. Before the fix, with
``--ctxbench-repeat=3`` and the cache on, trials 2 and 3 were served trial 1's reply
and no row carried ``llm_usage``. The endpoint here answers every request with a
new text and counts them; the Systems write down which reply each (example, trial)
got. The HTTP runs use ``runpytest_subprocess`` (see test_plugin_llm.py).
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest
from helpers import qa_lines

from pytest_context_bench.testing import FakeLLM, Reply

THREADS_PY = r'''
import asyncio, contextvars, json, os
from concurrent.futures import ThreadPoolExecutor

import pytest_context_bench
from pytest_context_bench.calls import current_call

URL = os.environ["TH_URL"] + "/v1/chat/completions"
OUT = os.environ["TH_OUT"]
POOL = ThreadPoolExecutor(4)
CLIENT = pytest_context_bench.http_client(timeout=60)


def _ask(question):
    body = {"model": "m", "messages": [{"role": "user", "content": question}]}
    reply = CLIENT.post(URL, json=body)
    if reply.is_error:  # as an SDK does (a replay miss is a 404 whose body says why)
        raise RuntimeError(reply.json()["error"]["message"])
    return reply.json()["choices"][0]["message"]["content"]


def _note(ex, text):
    # process() itself runs in its call's context: it knows its trial.
    trial = current_call().trial
    with open(os.path.join(OUT, f"{ex['id']}.{trial}.{os.getpid()}"), "w") as f:
        f.write(text)
    return {**ex, "response": text}


class Pooled:
    """Hands the request to its own thread pool (no context)."""
    name = "pooled"
    def process(self, ex):
        return _note(ex, POOL.submit(_ask, ex["question"]).result())


class Copied:
    """The fix the warning names: the pool runs the work in the caller's context."""
    name = "copied"
    def process(self, ex):
        return _note(
            ex, POOL.submit(contextvars.copy_context().run, _ask, ex["question"]).result()
        )


class InExecutor:
    """async, with loop.run_in_executor (which does not carry the context)."""
    name = "in-executor"
    async def process(self, ex):
        loop = asyncio.get_running_loop()
        return _note(ex, await loop.run_in_executor(POOL, _ask, ex["question"]))


class Tasks:
    """async, with tasks of its own (a task carries its creator's context)."""
    name = "tasks"
    async def process(self, ex):
        async with pytest_context_bench.async_http_client(timeout=60) as client:
            body = {"model": "m", "messages": [{"role": "user", "content": ex["question"]}]}
            task = asyncio.create_task(client.post(URL, json=body))
            reply = (await task).json()["choices"][0]["message"]["content"]
        return _note(ex, reply)
'''

FIX = "contextvars.copy_context().run"


class Counter:
    """An endpoint whose every reply is new: ``reply <n>``."""

    def __init__(self) -> None:
        self.n = 0
        self.lock = threading.Lock()

    def __call__(self, request: Any) -> Reply:
        with self.lock:
            self.n += 1
            n = self.n
        return Reply(text=f"reply {n}", usage={"prompt_tokens": 10, "completion_tokens": 2})


@pytest.fixture
def project(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch):
    pytester.makefile(".jsonl", qa=qa_lines(8))
    pytester.makepyfile(threads=THREADS_PY)
    pytester.makeini("[pytest]\npythonpath = .\nctxbench_cache_dir = llm-cache\n")
    with FakeLLM(handler=Counter()) as llm:
        monkeypatch.setenv("TH_URL", llm.base_url)
        yield pytester, llm


def _run(
    pytester: pytest.Pytester, llm: FakeLLM, system: str, *args: str
) -> tuple[dict[tuple[str, int], str], int, dict[str, Any], str]:
    """(example id, trial) → reply, requests sent, the JSON report, the output."""
    out = pytester.path / f"out-{len(list(pytester.path.glob('out-*')))}"
    out.mkdir()
    before = len(llm.requests)
    result = _subprocess(pytester, out, system, args)
    replies: dict[tuple[str, int], str] = {}
    for path in out.iterdir():
        example, trial, _ = path.name.split(".")
        assert (example, int(trial)) not in replies, path.name  # one call each
        replies[(example, int(trial))] = path.read_text()
    doc = json.loads(Path(f"{out}.json").read_text())
    text = result.stdout.str() + result.stderr.str()
    return replies, len(llm.requests) - before, doc, text


def _subprocess(
    pytester: pytest.Pytester, out: Path, system: str, args: tuple[str, ...]
) -> pytest.RunResult:
    mp = pytest.MonkeyPatch()
    mp.setenv("TH_OUT", str(out))
    try:
        return pytester.runpytest_subprocess(
            f"--ctxbench-system=threads:{system}",
            "--ctxbench-dataset=qa.jsonl",
            f"--ctxbench-json={out}.json",
            "-p",
            "no:randomly",
            *args,
        )
    finally:
        mp.undo()


def _usage_calls(doc: dict[str, Any]) -> tuple[int, int]:
    """(requests counted in rows, requests counted for the run), hits included."""
    rows = sum(
        r["metadata"]["llm_usage"]["calls"] + r["metadata"]["llm_usage"]["cache_hits"]
        for r in doc["rows"]
        if "llm_usage" in r["metadata"]
    )
    loose = doc.get("llm", {}).get("unattributed")
    run = loose["calls"] + loose["cache_hits"] if loose else 0
    return rows, run


def _all_trials(replies: dict[tuple[str, int], str], trials: int = 3) -> None:
    assert set(replies) == {(f"q-{i}", t) for i in range(1, 9) for t in range(1, trials + 1)}


def test_one_call_in_flight_owns_its_threads_requests_and_a_replay_of_unknown_trial_sends_nothing(
    project,
) -> None:
    """One call in flight (serial): the requests of its pool's thread are its own.
    (Under -n 2 each worker has one call in flight the same way; several in flight
    under -n 2 are test_several_in_flight_never_a_wrong_reply_and_no_lost_usage's.)
    Then a replay under concurrency, where such a request's trial is unknown."""
    pytester, llm = project
    first, sent, doc, text = _run(pytester, llm, "Pooled", "--ctxbench-repeat=3")
    _all_trials(first)
    assert sent == 24
    assert len(set(first.values())) == 24  # each trial its own reply
    assert all(r["metadata"]["llm_usage"]["calls"] == 1 for r in doc["rows"])
    assert _usage_calls(doc) == (24, 0)
    assert FIX not in text
    # The second run replays each trial's own reply, and sends nothing.
    again, sent, doc, _ = _run(pytester, llm, "Pooled", "--ctxbench-repeat=3")
    assert sent == 0
    assert again == first
    assert all(r["metadata"]["llm_usage"]["cache_hits"] == 1 for r in doc["rows"])
    # Replayed with several calls in flight: a request of unknown trial is refused.
    replies, sent, doc, text = _run(
        pytester,
        llm,
        "Pooled",
        "--ctxbench-repeat=3",
        "--ctxbench-concurrency=8",
        "--ctxbench-cache=replay",
    )
    assert sent == 0
    errors = [r["error"]["message"] for r in doc["rows"] if r["error"]]
    assert all("trial" in m and FIX in m for m in errors)
    # what was replayed is each trial's own reply (recorded by the first run)
    assert len(set(first.values())) == 24
    for key, text in replies.items():
        assert first[key] == text


@pytest.mark.parametrize(
    ("system", "mode"),
    [
        ("Pooled", ["--ctxbench-concurrency=8"]),
        ("Pooled", ["-n", "2", "--ctxbench-concurrency=8"]),
        ("InExecutor", ["--ctxbench-concurrency=8"]),
    ],
    ids=["concurrency", "xdist-concurrency", "run_in_executor"],
)
def test_several_in_flight_never_a_wrong_reply_and_no_lost_usage(
    project, system: str, mode: list[str]
) -> None:
    pytester, llm = project
    runs = []
    # Run twice (the second replays from the cache what each trial was sent), but
    # for run_in_executor: its requests reach the cache as the pool's do.
    for _ in range(1 if system == "InExecutor" else 2):
        replies, sent, doc, text = _run(pytester, llm, system, "--ctxbench-repeat=3", *mode)
        _all_trials(replies)
        # never another trial's reply: 24 different texts in a run
        assert len(set(replies.values())) == 24
        rows, run = _usage_calls(doc)
        assert rows + run == 24  # every request counted, in a row or for the run
        assert doc["llm"]["calls_sent"] == sent
        if run:
            # said once, naming the fix, whatever the number of such requests
            assert text.count("executor.submit(" + FIX) == 1, text
        runs.append(replies)
    # a reply seen in both runs came from the cache: it must be the same trial's
    earlier = {text: key for key, text in runs[0].items()}
    for key, text in runs[-1].items():
        assert earlier.get(text, key) == key


def test_no_repeat_under_concurrency_still_replays_from_the_cache(project) -> None:
    # Every call in flight is trial 1: the key is known though the example is not.
    pytester, llm = project
    first, sent, doc, _ = _run(pytester, llm, "Pooled", "--ctxbench-concurrency=8")
    _all_trials(first, trials=1)
    assert sent == 8
    assert sum(_usage_calls(doc)) == 8
    again, sent, doc, _ = _run(pytester, llm, "Pooled", "--ctxbench-concurrency=8")
    assert sent == 0 and again == first


@pytest.mark.parametrize("system", ["Copied", "Tasks"])
def test_work_run_in_the_callers_context_is_attributed_per_row(project, system) -> None:
    pytester, llm = project
    replies, sent, doc, text = _run(
        pytester, llm, system, "--ctxbench-repeat=3", "--ctxbench-concurrency=8"
    )
    _all_trials(replies)
    assert sent == 24 and len(set(replies.values())) == 24
    assert _usage_calls(doc) == (24, 0)
    assert FIX not in text
    assert "unattributed" not in doc["llm"]


def test_outside_a_run_the_usage_is_kept_and_one_warning_names_the_fix() -> None:
    """evaluate(max_workers=4) with a System that calls from its own pool: four calls
    are in flight when each request is made (a barrier holds them), so no request
    knows its example; their usage is counted for the process, said once."""
    import warnings
    from concurrent.futures import ThreadPoolExecutor

    from pytest_context_bench import evaluate
    from pytest_context_bench.calls import (
        run_reports_unattributed,
        unattributed_usage,
    )
    from pytest_context_bench.transports import UnattributedCallWarning, http_client

    barrier = threading.Barrier(4, timeout=60)
    pool = ThreadPoolExecutor(4)

    class Pooled:
        name = "pooled"

        def __init__(self, url: str) -> None:
            self.client = http_client(cache=None, timeout=60)
            self.url = url + "/v1/chat/completions"

        def ask(self, question: str) -> str:
            barrier.wait()  # all four calls are in flight now
            body = {"model": "m", "messages": [{"role": "user", "content": question}]}
            reply = self.client.post(self.url, json=body).json()
            return str(reply["choices"][0]["message"]["content"])

        def process(self, ex: dict[str, Any]) -> dict[str, Any]:
            return {**ex, "response": pool.submit(self.ask, ex["question"]).result()}

    data = [json.loads(line) for line in qa_lines(8).splitlines()]
    reported = run_reports_unattributed(False)  # as outside pytest
    try:
        with FakeLLM(handler=Counter()) as llm, warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            result = evaluate(Pooled(llm.base_url), data, max_workers=4, progress=False)
            loose = unattributed_usage()
    finally:
        run_reports_unattributed(reported)
        pool.shutdown()
    assert len(llm.requests) == 8
    assert [r.error for r in result.rows] == [None] * 8
    # At least the first request after the barrier saw four calls in flight (a call
    # whose neighbours have all returned meanwhile is the only one: its row has it).
    in_rows = sum(
        r.metadata["llm_usage"]["calls"] for r in result.rows if "llm_usage" in r.metadata
    )
    assert loose and in_rows + len(loose) == 8
    assert all(e["prompt_tokens"] == 10 for e in loose)
    said = [w for w in seen if issubclass(w.category, UnattributedCallWarning)]
    assert len(said) == 1 and FIX in str(said[0].message)


def test_the_warnings_are_importable_by_the_name_they_carry() -> None:
    """xdist sends a worker's warning to the controller as module + class name; a
    name that does not import crashed the controller (a CacheWarning in a worker was
    an INTERNALERROR, "module 'pytest_context_bench' has no attribute ...")."""
    import importlib

    from pytest_context_bench.transports import CacheWarning, UnattributedCallWarning

    for cls in (CacheWarning, UnattributedCallWarning):
        assert getattr(importlib.import_module(cls.__module__), cls.__name__) is cls
