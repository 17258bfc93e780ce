"""--ctxbench-concurrency, --ctxbench-timeout, --ctxbench-rate-limit and async Systems.

The HTTP runs use ``runpytest_subprocess`` (see test_plugin_llm.py: an inline run
would import parts of httpx inside pytester's sys.modules snapshot). The servers
count the requests they serve at once; no assertion here is about time.
"""

from __future__ import annotations

import asyncio
import json
import re
import threading
import time
from pathlib import Path

import pytest
from helpers import qa_lines, read_json, sigint_default, strip_timings

from pytest_context_bench.concurrency import (
    Budget,
    CallRunner,
    RateLimit,
    parse_rate,
)
from pytest_context_bench.engine import run_example
from pytest_context_bench.plugin.running import share_of
from pytest_context_bench.testing import FakeLLM, Reply

CONC_PY = r'''
import asyncio, os, threading, time
import httpx
from pytest_context_bench.calls import current_call

URL = os.environ.get("CONC_URL", "")


def _ask(question):
    return {"model": "m", "messages": [{"role": "user", "content": question}]}


class Jittery:
    """Right on even ids, raises on q-3; finishes out of order (varying sleeps)."""
    name = "jittery"
    def process(self, ex):
        n = int(ex["id"].split("-")[1])
        time.sleep(0.003 * ((n * 7) % 5))
        scope = current_call()
        assert scope is not None and scope.example_id == ex["id"], scope
        if n == 3:
            raise RuntimeError("endpoint exploded on q-3")
        return {**ex, "response": ex["answer"] if n % 2 == 0 else "no idea"}


class HttpSync:
    """Plain sync code calling the endpoint with httpx."""
    name = "http-sync"
    def process(self, ex):
        assert current_call().example_id == ex["id"]
        r = httpx.post(URL + "/v1/chat/completions", json=_ask(ex["question"]), timeout=30)
        return {**ex, "response": r.json()["choices"][0]["message"]["content"]}


class HttpAsync:
    """async def process, with httpx.AsyncClient."""
    name = "http-async"
    async def process(self, ex):
        assert current_call().example_id == ex["id"]
        async with httpx.AsyncClient(timeout=30) as client:
            r = await client.post(URL + "/v1/chat/completions", json=_ask(ex["question"]))
        return {**ex, "response": r.json()["choices"][0]["message"]["content"]}


class OneAtATime(HttpSync):
    name = "one-at-a-time"
    concurrency = 1


class Hang:
    """Never returns on q-2."""
    name = "hang"
    def process(self, ex):
        if ex["id"] == "q-2":
            threading.Event().wait()
        return {**ex, "response": ex["answer"]}


class HangMark:
    """Never returns on q-2, after leaving a file saying so."""
    name = "hang-mark"
    def process(self, ex):
        if ex["id"] == "q-2":
            open(os.path.join(os.environ["CONC_DIR"], "hanging"), "w").close()
            threading.Event().wait()
        return {**ex, "response": ex["answer"]}


class Limits:
    """Writes this process's share of the budget and of the rate limit."""
    name = "limits"
    def process(self, ex):
        import json
        from pytest_context_bench.concurrency import current_limits
        budget, rate = current_limits()
        worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
        with open(os.path.join(os.environ["CONC_DIR"], worker + ".json"), "w") as f:
            json.dump([budget.size, 1.0 / rate.interval], f)
        return {**ex, "response": ex["answer"]}


class AsyncHang:
    name = "async-hang"
    async def process(self, ex):
        if ex["id"] == "q-2":
            await asyncio.Event().wait()
        return {**ex, "response": ex["answer"]}


class AsyncBlocker:
    """async def process that blocks the loop (time.sleep) for 1.5 s on q-2; the
    others await a little, so that they are in flight while it blocks."""
    name = "async-blocker"
    async def process(self, ex):
        if ex["id"] == "q-2":
            time.sleep(1.5)
        await asyncio.sleep(0.02)
        return {**ex, "response": ex["answer"]}


class Marks:
    """Leaves a file when each call starts and ends; raises on q-2."""
    name = "marks"
    def process(self, ex):
        d = os.environ["CONC_DIR"]
        open(os.path.join(d, "started-" + ex["id"]), "w").close()
        time.sleep(0.2)
        open(os.path.join(d, "ended-" + ex["id"]), "w").close()
        if ex["id"] == "q-2":
            raise RuntimeError("stop here")
        return {**ex, "response": ex["answer"]}


class BadConcurrency:
    name = "bad-concurrency"
    concurrency = 0
    def process(self, ex):
        return ex


jittery = Jittery()
http_sync = HttpSync()
http_async = HttpAsync()
one_at_a_time = OneAtATime()
hang = Hang()
hang_mark = HangMark()
limits = Limits()
async_hang = AsyncHang()
async_blocker = AsyncBlocker()
marks = Marks()
bad_concurrency = BadConcurrency()
'''

QUESTION = re.compile(r"capital of country (\d+)")


@pytest.fixture
def conc(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makefile(".jsonl", qa=qa_lines(16))
    pytester.makepyfile(conc=CONC_PY)
    # Every call reaches the endpoint: these tests count requests in flight, and
    # run the same data more than once (the LLM cache would answer the second run).
    pytester.makeini("[pytest]\npythonpath = .\nctxbench_cache = off\n")
    return pytester


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch):
    """An endpoint answering each question right after 50 ms."""

    def handler(request):
        text = " ".join(str(m.get("content", "")) for m in request.messages)
        match = QUESTION.search(text)
        return Reply(text=f"city {match.group(1)}" if match else "?", delay=0.05)

    with FakeLLM(handler=handler) as llm:
        monkeypatch.setenv("CONC_URL", llm.base_url)
        yield llm


def _rows(path: Path) -> list[dict]:
    return read_json(path)["rows"]


# --- the parts ----------------------------------------------------------------------


def test_budget_never_exceeds_its_size_across_threads_and_tasks() -> None:
    budget = Budget(3)
    now = {"n": 0, "max": 0}
    lock = threading.Lock()

    def enter() -> None:
        with lock:
            now["n"] += 1
            now["max"] = max(now["max"], now["n"])

    def leave() -> None:
        with lock:
            now["n"] -= 1

    def thread_body() -> None:
        for _ in range(20):
            budget.acquire()
            enter()
            threading.Event().wait(0.001)
            leave()
            budget.release()

    async def task_body() -> None:
        for _ in range(20):
            await budget.acquire_async()
            enter()
            await asyncio.sleep(0.001)
            leave()
            budget.release()

    async def tasks() -> None:
        await asyncio.gather(*(task_body() for _ in range(4)))

    threads = [threading.Thread(target=thread_body) for _ in range(4)]
    threads.append(threading.Thread(target=lambda: asyncio.run(tasks())))
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert now["n"] == 0
    assert 1 < now["max"] <= 3
    assert budget.peak <= 3 and budget.in_use == 0


def test_rate_limit_spaces_the_starts() -> None:
    rate = RateLimit(10.0)
    delays = [rate.reserve() for _ in range(5)]
    assert delays[0] == 0.0
    # each start is reserved one interval (0.1 s) after the previous one
    assert all(b > a for a, b in zip(delays, delays[1:]))
    assert delays[4] > 0.3


def test_a_turn_beyond_the_timeout_is_refused_without_taking_it() -> None:
    from pytest_context_bench.concurrency import RateLimitTimeout

    rate = RateLimit(1.0)
    assert rate.reserve(within=0.5) == 0.0  # the first turn is now
    before = rate._next
    with pytest.raises(RateLimitTimeout, match="later than its timeout of 0.5s"):
        rate.reserve(within=0.5)  # the next one is ~1 s away
    assert rate._next == before  # no turn taken: later calls are not pushed back
    assert 0.5 < rate.reserve(within=2.0) <= 1.0


def test_a_judge_request_does_not_wait_past_its_timeout_for_the_rate_limit(
    server: FakeLLM,
) -> None:
    from pytest_context_bench.concurrency import (
        RateLimitTimeout,
        install,
        uninstall,
    )
    from pytest_context_bench.llm import LLMClient

    client = LLMClient(server.base_url, timeout=2.0, max_retries=0)
    install(None, RateLimit(1e-9))
    try:
        assert client.chat([{"role": "user", "content": "q-1?"}], "m").text
        with pytest.raises(RateLimitTimeout, match="timeout of 2s"):
            client.chat([{"role": "user", "content": "q-2?"}], "m")

        async def both() -> None:
            with pytest.raises(RateLimitTimeout, match="timeout of 2s"):
                await client.achat([{"role": "user", "content": "q-3?"}], "m")

        asyncio.run(both())
    finally:
        uninstall()
        client.close()
    assert len(server.requests) == 1


@pytest.mark.parametrize(
    ("args", "started"),
    [([], 1), (["--ctxbench-concurrency=3"], 1), (["-n", "2"], 2)],
    ids=["serial", "concurrent", "xdist2"],
)
def test_the_timeout_bounds_the_wait_for_the_rate_limit(
    conc: pytest.Pytester, args: list[str], started: int
) -> None:
    # Before: --ctxbench-rate-limit=0.000000001/s with --ctxbench-timeout=1 waited
    # for a turn forever (the second call's turn is 31 years away).
    out = conc.path / "r.json"
    result = conc.runpytest_subprocess(
        "--ctxbench-system=conc:hang",
        "--ctxbench-dataset=qa.jsonl",
        "--ctxbench-limit=4",
        "-k", "not q-2",  # the hanging example is not this test's subject
        "--ctxbench-gate-partial",
        "--ctxbench-rate-limit=0.000000001/s",
        "--ctxbench-timeout=1",
        f"--ctxbench-json={out}",
        *args,
        timeout=300,  # a hang guard only
    )  # fmt: skip
    assert result.ret == 1, result.stdout.str()
    rows = _rows(out)
    assert len(rows) == 3
    errors = [r["error"] for r in rows if r["error"]]
    # The first call of each process had its turn at once (xdist may give one
    # worker every example); every other call is refused, none waits.
    assert 1 <= 3 - len(errors) <= started
    for error in errors:
        assert error["type"].endswith("RateLimitTimeout")
        assert error["message"].startswith(
            "System 'hang' was not started: its turn under --ctxbench-rate-limit would"
            " come in "
        )
        assert "later than --ctxbench-timeout=1s allows" in error["message"]


@pytest.mark.parametrize(
    ("text", "per_second"),
    [("10/s", 10.0), ("600/min", 10.0), ("2.5/sec", 2.5), (" 30 / minute ", 0.5)],
)
def test_parse_rate(text: str, per_second: float) -> None:
    assert parse_rate(text) == pytest.approx(per_second)


@pytest.mark.parametrize(
    "text", ["fast", "10", "0/s", "-1/s", "10/hour", "inf/s", "/s"]
)
def test_parse_rate_refuses(text: str) -> None:
    with pytest.raises(ValueError, match="10/s or 600/min"):
        parse_rate(text)


@pytest.mark.parametrize(("total", "workers"), [(16, 2), (5, 3), (3, 3), (32, 6)])
def test_worker_shares_add_up_to_the_budget(total: int, workers: int) -> None:
    shares = [share_of(total, workers, i) for i in range(workers)]
    assert sum(shares) == total and min(shares) >= 1 and max(shares) - min(shares) <= 1


def test_async_system_inside_a_running_loop_is_one_error_naming_it() -> None:
    class Async:
        name = "my-async"

        async def process(self, ex: dict) -> dict:
            return {**ex, "response": "x"}

    async def main() -> tuple:
        return run_example(Async(), {"id": "1", "question": "q", "answer": "x"}, [])

    row, _ = asyncio.run(main())
    assert row.error is not None and "'my-async'" in row.error["message"]
    assert "running event loop" in row.error["message"]


def test_async_system_through_the_python_api() -> None:
    class Async:
        name = "async-echo"

        async def process(self, ex: dict) -> dict:
            await asyncio.sleep(0)
            return {**ex, "response": ex["answer"]}

    row, raised = run_example(Async(), {"id": "1", "question": "q", "answer": "x"}, [])
    assert raised is None and row.error is None


def test_runner_close_cancels_what_has_not_started() -> None:
    runner = CallRunner(Budget(1))
    gate = threading.Event()
    ran: list[str] = []

    class Slow:
        name = "slow"

    def first() -> None:
        gate.wait()
        ran.append("first")

    runner.submit(first, system=Slow())
    second = runner.submit(lambda: ran.append("second"), system=Slow())
    while runner.in_flight == 0:  # the first call holds the one slot
        threading.Event().wait(0.01)
    threading.Timer(0.2, gate.set).start()
    runner.close()
    assert ran == ["first"]  # the call in flight was waited for; the other never ran
    assert second.cancelled()
    assert runner.running_threads == 0


# --- the plugin -----------------------------------------------------------------------


def test_results_are_those_of_a_serial_run(
    conc: pytest.Pytester, serial_mode_args: list[str]
) -> None:
    """Same ids, statuses, rows, order and gate as a serial run (minus timings).
    In-process and -n 0: under -n 2, concurrency gives the serial run's rows in
    test_equivalence.py (modes xdist-2 and xdist-2-concurrency-16)."""
    docs = {}
    outcomes = {}
    for name, extra in (("serial", []), ("concurrent", ["--ctxbench-concurrency=4"])):
        out = conc.path / f"{name}.json"
        result = conc.runpytest(
            *serial_mode_args,
            "--ctxbench-dataset=qa.jsonl",
            "--ctxbench-system=conc:jittery",
            "--ctxbench-min-pass-rate=0.9",
            f"--ctxbench-json={out}",
            "-rA",
            *extra,
        )
        outcomes[name] = result.parseoutcomes()
        docs[name] = strip_timings(read_json(out))
        assert result.ret == 1
    assert docs["serial"] == docs["concurrent"]
    assert outcomes["serial"] == outcomes["concurrent"]
    ids = [r["example_id"] for r in docs["concurrent"]["rows"]]
    assert ids == [f"q-{i}" for i in range(1, 17)]


def test_proxy_calls_in_flight_never_exceed_the_budget_and_the_report_is_unchanged(
    conc: pytest.Pytester, server: FakeLLM
) -> None:
    """The proxy serial, with a budget of 4, and with a budget of 4 under -n 2 (2
    per worker): never more than 4 calls in flight, and the same JSON report as the
    serial run's (timings aside)."""
    docs = []
    for extra in ([], ["--ctxbench-concurrency=4"], ["--ctxbench-concurrency=4", "-n", "2"]):
        server.max_in_flight = 0
        n = len(server.requests)
        out = conc.path / "p.json"
        conc.runpytest_subprocess(
            f"--ctxbench-proxy={server.base_url}",
            "--ctxbench-dataset=qa.jsonl",
            f"--ctxbench-json={out}",
            *extra,
        ).assert_outcomes(passed=16)
        assert len(server.requests) - n == 16
        if extra:
            assert 1 < server.max_in_flight <= 4, extra
        docs.append(json.dumps(strip_timings(read_json(out)), sort_keys=True))
    assert docs[0] == docs[1] == docs[2]


@pytest.mark.parametrize("system", ["http_sync", "http_async"])
def test_user_systems_sync_and_async(
    conc: pytest.Pytester, server: FakeLLM, system: str
) -> None:
    # Under -n 2 the async System (a loop per worker); a sync one's calls under -n 2
    # are the proxy's in test_proxy_calls_in_flight_never_exceed_the_budget_and_the_report_is_unchanged.
    for extra in ([], ["-n", "2"]) if system == "http_async" else ([],):
        server.max_in_flight = 0
        result = conc.runpytest_subprocess(
            *extra,
            f"--ctxbench-system=conc:{system}",
            "--ctxbench-dataset=qa.jsonl",
            "--ctxbench-concurrency=3",
        )
        result.assert_outcomes(passed=16)
        assert 1 < server.max_in_flight <= 3, extra


def test_a_system_can_opt_out_of_parallel_calls(
    conc: pytest.Pytester, server: FakeLLM
) -> None:
    result = conc.runpytest_subprocess(
        "--ctxbench-system=conc:one_at_a_time",
        "--ctxbench-system=conc:http_sync",
        "--ctxbench-dataset=qa.jsonl",
        "--ctxbench-concurrency=4",
        "--ctxbench-limit=8",
    )
    result.assert_outcomes(passed=16)
    one = [r for r in server.requests[:8]]
    assert len(one) == 8
    # the first 8 items are one_at_a_time's: the server saw them one by one
    assert server.max_in_flight > 1  # http_sync's calls did run together


def test_exitfirst_starts_nothing_more_and_leaves_nothing_running(
    conc: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    marks = tmp_path / "marks"
    marks.mkdir()
    monkeypatch.setenv("CONC_DIR", str(marks))
    # Under an outer `pytest -n 2` these name the outer worker; the run below has its
    # own (or none).
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)
    monkeypatch.delenv("PYTEST_XDIST_WORKER_COUNT", raising=False)
    result = conc.runpytest(
        "-x",
        "--ctxbench-system=conc:marks",
        "--ctxbench-dataset=qa.jsonl",
        "--ctxbench-concurrency=3",
    )
    assert result.ret == 1
    outcomes = result.parseoutcomes()
    assert outcomes.get("passed") == 1 and outcomes.get("errors") == 1
    started = {p.name.split("-", 1)[1] for p in marks.glob("started-*")}
    ended = {p.name.split("-", 1)[1] for p in marks.glob("ended-*")}
    assert started == ended  # every call that started has finished
    assert "q-3" in started and len(started) < 16  # ahead, but not everything
    # (the Python API's loop for async Systems, "ctxbench-async-systems", may live on)
    assert not [t for t in threading.enumerate() if t.name.startswith("ctxbench-call")]


@pytest.mark.parametrize(
    "concurrency", [[], ["--ctxbench-concurrency=2"]], ids=["serial", "concurrent"]
)
def test_a_call_past_the_timeout_is_that_examples_error(
    conc: pytest.Pytester, concurrency: list[str]
) -> None:
    """A sync and an async System that never return on q-2, in one run."""
    out = conc.path / "t.json"
    result = conc.runpytest_subprocess(
        "--ctxbench-system=conc:hang",
        "--ctxbench-system=conc:async_hang",
        "--ctxbench-dataset=qa.jsonl",
        "--ctxbench-limit=4",
        "--ctxbench-timeout=0.5",
        f"--ctxbench-json={out}",
        *concurrency,
        timeout=120,
    )
    assert result.ret == 1
    result.stdout.fnmatch_lines(["*CallTimeout*0.5s*"])
    rows = _rows(out)
    for system in ("hang", "async-hang"):
        errors = {r["example_id"]: r["error"] for r in rows if r["error"] and r["system"] == system}
        assert list(errors) == ["q-2"], system
        assert errors["q-2"]["type"].endswith("CallTimeout")
        assert "--ctxbench-timeout=0.5s" in errors["q-2"]["message"]
        assert sum(1 for r in rows if not r["error"] and r["system"] == system) == 3


@pytest.mark.parametrize(
    "concurrency",
    [[], ["--ctxbench-concurrency=8"], ["-n", "2", "--ctxbench-concurrency=8"]],
    ids=["serial", "concurrent", "concurrent-xdist2"],
)
def test_an_async_system_blocking_the_loop_fails_only_its_own_call(
    conc: pytest.Pytester, concurrency: list[str]
) -> None:
    """Issue 22 item 5: a step that blocks the shared loop is charged to its own call
    only; the calls waiting behind it keep their time, so serial and concurrent give
    the same rows, and the System is named once, with what to do."""
    out = conc.path / "t.json"
    result = conc.runpytest_subprocess(
        "--ctxbench-system=conc:async_blocker",
        "--ctxbench-dataset=qa.jsonl",
        "--ctxbench-limit=8",
        "--ctxbench-timeout=0.75",
        f"--ctxbench-json={out}",
        *concurrency,
        timeout=120,
    )
    assert result.ret == 1
    rows = _rows(out)
    got = [(r["example_id"], r["error"]["type"] if r["error"] else None) for r in rows]
    assert got == [
        (f"q-{i}", "pytest_context_bench.concurrency.CallTimeout" if i == 2 else None)
        for i in range(1, 9)
    ]
    assert "blocked the event loop" in rows[1]["error"]["message"]
    text = result.stdout.str()
    warning = "BlockingSystemWarning: System 'async-blocker' blocked the event loop"
    assert text.count(warning) == 1  # once (under -n 2: by the worker that saw it)
    assert "asyncio.to_thread" in text
    assert "INTERNALERROR" not in text
    result.assert_outcomes(passed=7, errors=1, warnings=1)


def test_collect_only_calls_nothing(conc: pytest.Pytester, server: FakeLLM) -> None:
    result = conc.runpytest_subprocess(
        f"--ctxbench-proxy={server.base_url}",
        "--ctxbench-dataset=qa.jsonl",
        "--ctxbench-concurrency=4",
        "--co",
    )
    assert result.ret == 0
    assert server.requests == []


def test_keyword_selection_calls_only_the_selected(
    conc: pytest.Pytester, server: FakeLLM
) -> None:
    result = conc.runpytest_subprocess(
        f"--ctxbench-proxy={server.base_url}",
        "--ctxbench-dataset=qa.jsonl",
        "--ctxbench-concurrency=4",
        "-k",
        "q-7",
    )
    result.assert_outcomes(passed=1, deselected=15)
    assert len(server.requests) == 1


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--ctxbench-concurrency=0"],
            "--ctxbench-concurrency must be an integer >= 1, given: '0'",
        ),
        (
            ["--ctxbench-concurrency=-3"],
            "--ctxbench-concurrency must be an integer >= 1, given: '-3'",
        ),
        (
            ["--ctxbench-concurrency=2.5"],
            "--ctxbench-concurrency must be an integer >= 1, given: '2.5'",
        ),
        (
            ["--ctxbench-rate-limit=fast"],
            "--ctxbench-rate-limit must be a positive number of requests per second or per minute, such as 10/s or 600/min, given: 'fast'",
        ),
        (
            ["--ctxbench-rate-limit=5/hour"],
            "--ctxbench-rate-limit must be * given: '5/hour'",
        ),
        (
            ["--ctxbench-timeout=0"],
            "--ctxbench-timeout must be a number > 0, given: '0'",
        ),
        (
            ["--ctxbench-timeout=soon"],
            "--ctxbench-timeout must be a number > 0, given: 'soon'",
        ),
        (
            ["--ctxbench-concurrency=1", "-n", "2"],
            "--ctxbench-concurrency=1 is less than the 2 xdist workers*",
        ),
        (
            ["--ctxbench-system=conc:bad_concurrency"],
            "System 'bad-concurrency' has concurrency = 0; it must be a positive integer*",
        ),
    ],
)
def test_bad_values_are_one_usage_error(
    conc: pytest.Pytester, args: list[str], message: str
) -> None:
    result = conc.runpytest(
        "--ctxbench-dataset=qa.jsonl", "--ctxbench-system=conc:jittery", *args
    )
    assert result.ret == 4
    errors = [line for line in result.stderr.lines if line.startswith("ERROR")]
    assert len(errors) == 1, result.stderr.lines
    result.stderr.fnmatch_lines([f"ERROR: {message}"])


def test_ini_options(conc: pytest.Pytester, server: FakeLLM) -> None:
    conc.makeini(
        "[pytest]\npythonpath = .\nctxbench_concurrency = 3\nctxbench_rate_limit = 6000/min\n"
        "ctxbench_timeout = 30\n"
    )
    result = conc.runpytest_subprocess(
        f"--ctxbench-proxy={server.base_url}", "--ctxbench-dataset=qa.jsonl"
    )
    result.assert_outcomes(passed=16)
    assert 1 < server.max_in_flight <= 3
    conc.makeini("[pytest]\nctxbench_rate_limit = lots\n")
    result = conc.runpytest(
        "--ctxbench-dataset=qa.jsonl", "--ctxbench-system=conc:jittery"
    )
    assert result.ret == 4
    result.stderr.fnmatch_lines(
        ["ERROR: ini option 'ctxbench_rate_limit' must be a positive number*"]
    )


def test_judge_calls_count_against_the_same_budget(
    conc: pytest.Pytester, server: FakeLLM
) -> None:
    judged = {"n": 0}

    def handler(request):
        body = request.json or {}
        if body.get("model") == "judge-model":
            judged["n"] += 1
            return Reply(text="Rating: 5", delay=0.05)
        text = " ".join(str(m.get("content", "")) for m in request.messages)
        match = QUESTION.search(text)
        return Reply(text=f"city {match.group(1)}" if match else "?", delay=0.05)

    server.set_handler(handler)
    docs = []
    # (one budget: a larger one bounds the calls in flight the same way)
    for budget in ("2",):
        server.max_in_flight = 0
        judged["n"] = 0
        out = conc.path / f"judged-{budget}.json"
        result = conc.runpytest_subprocess(
            f"--ctxbench-proxy={server.base_url}",
            f"--ctxbench-judge-url={server.base_url}",
            "--ctxbench-judge-model=judge-model",
            "--ctxbench-dataset=qa.jsonl",
            f"--ctxbench-concurrency={budget}",
            f"--ctxbench-json={out}",
        )
        result.assert_outcomes(passed=16)
        assert judged["n"] == 16
        assert 1 < server.max_in_flight <= int(budget)
        docs.append(strip_timings(read_json(out)))
        assert all(r["scores"]["judge_score"] == 1.0 for r in docs[-1]["rows"])
    out = conc.path / "judged-serial.json"
    conc.runpytest_subprocess(
        f"--ctxbench-proxy={server.base_url}",
        f"--ctxbench-judge-url={server.base_url}",
        "--ctxbench-judge-model=judge-model",
        "--ctxbench-dataset=qa.jsonl",
        f"--ctxbench-json={out}",
    ).assert_outcomes(passed=16)
    assert docs[0] == strip_timings(read_json(out))


# --- the async paths of the client, the proxy and the judges ------------------------


def test_async_client_proxy_and_judges_match_the_sync_ones() -> None:
    from pytest_context_bench.evaluators.judges import LLMJudge, MemoryJudge
    from pytest_context_bench.llm import LLMClient, LLMError
    from pytest_context_bench.systems import OpenAIProxy

    def handler(request):
        body = request.json or {}
        if body.get("model") == "judge":
            return "Rating: 4"
        if body.get("model") == "memory":
            return "YES"
        return Reply(
            text="r" + str(len(request.messages)),
            usage={"prompt_tokens": 3, "completion_tokens": 1},
        )

    turns = [
        {"role": "user", "content": "u1"},
        {"role": "assistant", "content": "x"},
        "u2",
    ]
    ex = {"id": "1", "question": "Q?", "answer": "A", "context": "c"}
    with FakeLLM(handler=handler) as llm:
        proxy = OpenAIProxy(llm.base_url, "m", system_prompt="S")
        judge = LLMJudge(llm.base_url, model="judge")
        memory = MemoryJudge(llm.base_url, model="memory")
        sync = (
            proxy.process(ex),
            proxy.process_conversation(turns),
            judge.score(ex, {"response": "A"}),
            memory.score_details(ex, {"response": "A"}),
            LLMClient(llm.base_url).embeddings(["a", "b"], "e"),
        )
        sync_messages = [r.messages for r in llm.requests]

        async def main() -> tuple:
            client = LLMClient(llm.base_url)
            out = (
                await proxy.aprocess(ex),
                await proxy.aprocess_conversation(turns),
                await judge.ascore(ex, {"response": "A"}),
                await memory.ascore_details(ex, {"response": "A"}),
                await client.aembeddings(["a", "b"], "e"),
            )
            await client.aclose()
            await proxy.client.aclose()
            return out

        before = len(llm.requests)
        assert asyncio.run(main()) == sync
        assert [r.messages for r in llm.requests[before:]] == sync_messages
        assert sync[0]["api_usage"] == {"prompt_tokens": 3, "completion_tokens": 1}
        url = llm.base_url

    async def unreachable() -> None:
        await LLMClient(url, max_retries=1, retry_base_delay=0.001).achat([], "m")

    with pytest.raises(LLMError, match="2 attempts"):
        asyncio.run(unreachable())


def test_async_client_is_built_once_per_loop() -> None:
    from pytest_context_bench.llm import LLMClient

    client = LLMClient("http://127.0.0.1:9")

    async def twice() -> bool:
        return client._async_client() is client._async_client()

    assert asyncio.run(twice())
    first = client._ahttp
    asyncio.run(twice())
    assert client._ahttp is not first  # another loop: another client


def test_ctrl_c_ends_the_run_even_with_a_call_that_never_returns(
    conc: pytest.Pytester, tmp_path: Path
) -> None:
    import os
    import signal
    import subprocess
    import sys
    import time

    marks = tmp_path / "marks"
    marks.mkdir()
    env = {**os.environ, "CONC_DIR": str(marks)}
    proc = subprocess.Popen(
        [
            sys.executable,
            "-X",
            "faulthandler",
            "-m",
            "pytest",
            "-p",
            "no:cacheprovider",
            "--ctxbench-system=conc:hang_mark",
            "--ctxbench-dataset=qa.jsonl",
            "--ctxbench-concurrency=3",
        ],
        cwd=conc.path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        preexec_fn=sigint_default,
    )
    try:
        deadline = time.monotonic() + 120
        while not (marks / "hanging").exists():
            assert proc.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        try:
            out, _ = proc.communicate(timeout=120)  # a hang here fails the test
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGABRT)  # faulthandler shows where it hangs
            out, _ = proc.communicate(timeout=30)
            pytest.fail(f"the run did not end after Ctrl-C:\n{out}")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 2, out  # pytest's "interrupted"
    assert "KeyboardInterrupt" in out


@pytest.mark.parametrize(
    ("args", "shares"),
    [
        ([], {"main": [5, 12.0]}),
        (["-n", "2"], {"gw0": [3, 6.0], "gw1": [2, 6.0]}),
    ],
)
def test_budget_and_rate_are_split_between_workers(
    conc: pytest.Pytester,
    server: FakeLLM,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    args,
    shares,
) -> None:
    """Each process's share of the budget and of the rate limit. Under -n 2 the
    proxy runs too, its HTTP calls under the rate limit and never more than the
    run's budget in flight at the endpoint (the -n 2 run of a rate-limited proxy
    that was a test of its own, on the same project)."""
    marks = tmp_path / "marks"
    marks.mkdir()
    monkeypatch.setenv("CONC_DIR", str(marks))
    # Under an outer `pytest -n 2` these name the outer worker; the run below has its
    # own (or none).
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)
    monkeypatch.delenv("PYTEST_XDIST_WORKER_COUNT", raising=False)
    proxy = [f"--ctxbench-proxy={server.base_url}"] if args else []
    result = conc.runpytest_subprocess(
        *args,
        "--ctxbench-system=conc:limits",
        *proxy,
        "--ctxbench-dataset=qa.jsonl",
        "--ctxbench-concurrency=5",
        "--ctxbench-rate-limit=720/min",
    )
    result.assert_outcomes(passed=16 * (1 + len(proxy)))
    seen = {p.stem: json.loads(p.read_text()) for p in marks.glob("*.json")}
    assert {k: [v[0], pytest.approx(v[1])] for k, v in seen.items()} == shares
    assert len(server.requests) == 16 * len(proxy)
    assert server.max_in_flight <= 5


class _Gate:
    """An endpoint that holds every request until ``target`` are in flight at once,
    then answers all of them and the rest at once (it stays open).

    A client that sends fewer does not wait for ever: once no new request has come
    for ``quiet`` seconds, the requests held are answered (a round) and holding
    starts again. The adaptive budget (which starts below its ceiling and grows with
    each answer) so reaches the ceiling in a few rounds. The peak it records is a
    count: a client capped below ``target`` shows its cap."""

    def __init__(
        self, target: int, patience: float = 20.0, quiet: float = 0.15
    ) -> None:
        self.target = target
        self.patience = patience
        self.quiet = quiet
        self.open = False
        self.round = 0
        self.last = time.monotonic()
        self.cond = threading.Condition()
        self.server = FakeLLM(handler=self.handler)

    def handler(self, request):
        deadline = time.monotonic() + self.patience
        with self.cond:
            self.last = time.monotonic()
            mine = self.round
            if self.server._in_flight >= self.target:
                self.open = True
                self.cond.notify_all()
            while not self.open and self.round == mine:
                now = time.monotonic()
                if now - self.last >= self.quiet or now >= deadline:
                    self.round += 1  # answer this round's requests
                    self.cond.notify_all()
                    break
                self.cond.wait(min(self.quiet - (now - self.last), deadline - now))
        text = " ".join(str(m.get("content", "")) for m in request.messages)
        match = QUESTION.search(text)
        return f"city {match.group(1)}" if match else "?"


LIMITED_PY = r'''
import os
from pytest_context_bench.systems import OpenAIProxy


def limited():
    return OpenAIProxy(os.environ["CONC_URL"], model="m", name="limited", concurrency=5)
'''


@pytest.mark.parametrize("mode", [[], ["-n", "2"]], ids=["in-process", "xdist"])
def test_the_run_budget_governs_the_proxy_not_its_default(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, mode: list[str]
) -> None:
    # Issue 22 item 1: OpenAIProxy's default concurrency=16 capped
    # --ctxbench-concurrency=64 at 16 calls in flight (23 under -n 2).
    pytester.makefile(".jsonl", qa=qa_lines(200))
    pytester.makeini("[pytest]\nctxbench_cache = off\n")
    gate = _Gate(64)
    with gate.server as server:
        result = pytester.runpytest_subprocess(
            *mode,
            f"--ctxbench-proxy={server.base_url}",
            "--ctxbench-dataset=qa.jsonl",
            "--ctxbench-concurrency=64",
        )
    result.assert_outcomes(passed=200)
    assert len(server.requests) == 200
    assert server.max_in_flight == 64


def test_a_proxys_own_concurrency_only_lowers_the_budget(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makefile(".jsonl", qa=qa_lines(40))
    pytester.makepyfile(limited=LIMITED_PY)
    pytester.makeini("[pytest]\npythonpath = .\nctxbench_cache = off\n")
    # The gate opens at 6 in flight, one more than the System allows: the peak then
    # shows the System's own bound (answered in rounds, see _Gate).
    gate = _Gate(6, patience=3.0)
    with gate.server as server:
        monkeypatch.setenv("CONC_URL", server.base_url)
        result = pytester.runpytest_subprocess(
            "--ctxbench-system=limited:limited",
            "--ctxbench-dataset=qa.jsonl",
            "--ctxbench-concurrency=32",
        )
    result.assert_outcomes(passed=40)
    assert server.max_in_flight == 5


def test_llm_client_without_a_bound_of_its_own_follows_the_budget() -> None:
    from pytest_context_bench.concurrency import install, uninstall
    from pytest_context_bench.llm import LLMClient

    gate = _Gate(24)
    with gate.server as server:
        client = LLMClient(server.base_url, max_retries=0)
        assert client.concurrency is None
        budget = Budget(24)
        install(budget, None)
        try:
            threads = [
                threading.Thread(
                    target=client.chat,
                    args=([{"role": "user", "content": "capital of country 1"}], "m"),
                )
                # enough for the rounds the adaptive budget grows in (10, 20, 24)
                for _ in range(80)
            ]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
        finally:
            uninstall()
            client.close()
    assert server.max_in_flight == 24
    assert budget.peak == 24


# --- the adaptive budget (429 / 503 / Retry-After) -----------------------------------


class _Crowded:
    """An endpoint that answers ``429 Retry-After: 0`` (or ``status``) to a request
    arriving while ``capacity`` or more are in flight, else the answer after
    ``delay`` seconds. It counts the refusals."""

    def __init__(self, capacity: int = 8, status: int = 429, delay: float = 0.02):
        self.capacity, self.status, self.delay = capacity, status, delay
        self.refused = 0
        self.server = FakeLLM(handler=self.handler)

    def handler(self, request):
        with self.server._lock:  # _in_flight counts this request too
            crowded = self.server._in_flight > self.capacity
            self.refused += crowded
        if crowded:
            return Reply(status=self.status, text="slow down", retry_after="0")
        text = " ".join(str(m.get("content", "")) for m in request.messages)
        match = QUESTION.search(text)
        return Reply(text=f"city {match.group(1)}" if match else "?", delay=self.delay)


@pytest.mark.parametrize("mode", [[], ["-n", "2"]], ids=["in-process", "xdist"])
def test_a_provider_s_429s_shrink_the_budget_instead_of_being_fought(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, mode: list[str]
) -> None:
    # Issue 26: at --ctxbench-concurrency=64 against an endpoint that refuses more
    # than 8 in flight, 450 requests were sent (284 refused) and the run failed.
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)
    monkeypatch.delenv("PYTEST_XDIST_WORKER_COUNT", raising=False)
    pytester.makefile(".jsonl", qa=qa_lines(200))
    pytester.makeini("[pytest]\nctxbench_cache = off\n")
    crowded = _Crowded(8, delay=0.1)  # the 100 ms endpoint
    out = pytester.path / "r.json"
    with crowded.server as server:
        url = server.base_url
        result = pytester.runpytest_subprocess(
            *mode,
            f"--ctxbench-proxy={server.base_url}",
            "--ctxbench-dataset=qa.jsonl",
            "--ctxbench-concurrency=64",
            f"--ctxbench-json={out}",
        )
    result.assert_outcomes(passed=200)
    sent = len(server.requests)
    assert 200 <= sent <= 250, sent
    assert sent - 200 == crowded.refused
    budget = read_json(out)["llm"]["budget"]
    assert list(budget) == [url]
    figures = budget[url]
    assert figures["ceiling"] == 64
    assert figures["requests"] == sent
    assert figures["refused_429"] == crowded.refused
    assert figures["unavailable_503"] == 0
    assert 1 <= figures["lowest"] <= figures["budget"] <= 64
    if crowded.refused:
        assert "pushed back" in result.stdout.str()


def test_threads_share_an_endpoint_budget_that_503s_cut() -> None:
    # The sync client (a System's own LLMClient, the judges) from many threads.
    from pytest_context_bench.concurrency import endpoint_budgets, install, uninstall
    from pytest_context_bench.llm import LLMClient

    crowded = _Crowded(4, status=503)
    with crowded.server as server:
        client = LLMClient(server.base_url, max_retries=5)
        install(Budget(32), None)
        failed: list[BaseException] = []

        def ask(i: int) -> None:
            try:
                question = {"role": "user", "content": f"capital of country {i}"}
                client.chat([question], "m")
            except BaseException as exc:  # noqa: BLE001 - reported below
                failed.append(exc)

        try:
            threads = [threading.Thread(target=ask, args=(i,)) for i in range(100)]
            for t in threads:
                t.start()
            for t in threads:
                t.join(60)
            figures = endpoint_budgets()[server.base_url]
        finally:
            uninstall()
            client.close()
    assert not failed, failed[:1]
    sent = len(server.requests)
    assert sent - 100 == crowded.refused == figures["unavailable_503"]
    assert sent <= 125, sent
    assert figures["requests"] == sent and figures["ceiling"] == 32


def test_endpoint_budget_grows_halves_once_a_round_and_honours_retry_after() -> None:
    from pytest_context_bench.concurrency import INITIAL_BUDGET, EndpointBudget

    gate = EndpointBudget("http://h:1", ceiling=64)
    assert gate.limit == INITIAL_BUDGET
    tickets = [gate.acquire() for _ in range(INITIAL_BUDGET)]
    for t in tickets:  # slow start: one more per answer
        gate.release(t, 200)
    assert gate.limit == 2 * INITIAL_BUDGET
    burst = [gate.acquire() for _ in range(gate.limit)]
    for t in burst[:5]:  # five refusals of one round: one cut
        gate.release(t, 429)
    assert gate.limit == INITIAL_BUDGET and gate.refused == 5
    for t in burst[5:]:  # the round's other answers: additive increase from now on
        gate.release(t, 200)
    assert INITIAL_BUDGET < gate.limit < INITIAL_BUDGET + 2
    assert gate.lowest == INITIAL_BUDGET
    # A refusal sent after the cut cuts again; its Retry-After holds every new
    # request back until then (a thread waiting meanwhile gets its slot after).
    gate.release(gate.acquire(), 503, retry_after=0.3)
    assert gate.limit == INITIAL_BUDGET // 2 and gate.unavailable == 1
    got: list[int] = []
    waiter = threading.Thread(target=lambda: got.append(gate.acquire()))
    waiter.start()
    waiter.join(0.05)
    assert got == [] and gate.in_flight == 0
    waiter.join(30)
    assert len(got) == 1 and gate.in_flight == 1
    # A cache hit never reached the endpoint: not counted as sent.
    before = gate.sent
    gate.release(gate.acquire(), None, sent=False)
    assert gate.sent == before
    # Never above the ceiling, never below one.
    small = EndpointBudget("http://h:2", ceiling=3)
    assert small.limit == 3
    for _ in range(5):
        small.release(small.acquire(), 429)
    assert small.limit == 1
    for _ in range(100):
        small.release(small.acquire(), 200)
    assert small.limit == 3


# --- issue 39: another process's load is not the System blocking the loop ---------------


def _cpu_step(seconds: float) -> None:
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        pass


def test_a_step_stretched_by_another_process_is_not_blocking_but_a_sleep_is() -> None:
    """A step of 0.15 s of the System's own CPU, on a CPU a busy process shares, takes
    longer than the 0.25 s threshold in wall time: the time it waited for the CPU is
    not its own, so nothing is named. A step that sleeps 0.4 s is named, loaded or not.
    Both run with the calling process and the hog pinned to one CPU."""
    import os
    import subprocess
    import sys

    from pytest_context_bench.concurrency import BLOCKING_STEP, queue_wait

    if queue_wait() is None or not hasattr(os, "sched_setaffinity"):
        pytest.skip("this kernel does not report run-queue waits (schedstat)")
    cpu = min(os.sched_getaffinity(0))
    before = os.sched_getaffinity(0)
    hog = subprocess.Popen(
        [sys.executable, "-c", "import os; os.sched_setaffinity(0, {%d})\nwhile True: pass" % cpu]
    )
    os.sched_setaffinity(0, {cpu})
    try:
        class Busy:
            name = "busy"

            async def process(self, example: dict) -> dict:
                await asyncio.sleep(0)
                _cpu_step(0.15)
                await asyncio.sleep(0)
                return example

        class Sleepy:
            name = "sleepy"

            async def process(self, example: dict) -> dict:
                await asyncio.sleep(0)
                time.sleep(0.4)
                return example

        runner = CallRunner(Budget(2))
        try:
            stretched = None
            for _ in range(10):  # until the hog really shared the CPU with the step
                started = time.perf_counter()
                out = runner.call(lambda: Busy().process({}), system=Busy(), is_async=True)
                assert out.error is None
                if time.perf_counter() - started >= BLOCKING_STEP + 0.05:
                    stretched = out
                    break
            if stretched is None:
                pytest.skip("the busy process never shared the CPU with the step")
            assert "busy" not in runner.blocking and stretched.warning is None
            slept = runner.call(lambda: Sleepy().process({}), system=Sleepy(), is_async=True)
            assert runner.blocking.get("sleepy", 0) >= 0.35
            assert slept.warning is not None and "'sleepy' blocked the event loop" in slept.warning
        finally:
            runner.close()
    finally:
        os.sched_setaffinity(0, before)
        hog.kill()
        hog.wait()
