"""The LLM cache and money in pytest runs, against a real server on 127.0.0.1.

Subprocess runs, as in test_plugin_llm.py (httpx must not be imported inside
pytester's sys.modules snapshot).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import INNER_ADDOPTS

from pytest_context_bench.testing import FakeLLM, Reply

KEY = "sk-plugin-SECRET-0987654321"
QUESTION = re.compile(r"capital of country (\d+)")


def _rows(n: int, changed: int | None = None) -> str:
    out = []
    for i in range(1, n + 1):
        q = f"What is the capital of country {i}?"
        if i == changed:
            q = f"Which city is the capital of country {i}?"
        out.append(json.dumps({"id": f"q-{i}", "context": f"Country {i} has city {i}.", "question": q, "answer": f"city {i}"}))
    return "\n".join(out) + "\n"


def _handler(request):  # type: ignore[no-untyped-def]
    body = request.json or {}
    if body.get("model") == "judge":
        return Reply(text="Rating: 4", usage={"prompt_tokens": 50, "completion_tokens": 3})
    text = " ".join(str(m.get("content", "")) for m in body.get("messages", []))
    match = QUESTION.search(text)
    n = int(match.group(1)) if match else 0
    # every third example answers wrong: below threshold (a failure under --strict)
    answer = f"city {n}" if n % 3 else "no idea"
    return Reply(text=answer, usage={"prompt_tokens": 20, "completion_tokens": 4})


def _run(pytester: pytest.Pytester, llm: FakeLLM, *args: str) -> pytest.RunResult:
    return pytester.runpytest_subprocess(
        "-p", "no:randomly",
        "--ctxbench-dataset=qa.jsonl",
        f"--ctxbench-proxy={llm.base_url}",
        "--ctxbench-proxy-name=local",
        "--ctxbench-model=m",
        f"--ctxbench-json={pytester.path / 'out.json'}",
        *args,
    )


def _doc(pytester: pytest.Pytester) -> dict:
    return json.loads((pytester.path / "out.json").read_text())


def _scores(doc: dict) -> dict[str, dict]:
    return {r["example_id"]: r["scores"] for r in doc["rows"]}


@pytest.fixture
def cached_project(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    pytester.makefile(".jsonl", qa=_rows(30))
    return pytester


@pytest.fixture(scope="module")
def recorded_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The LLM cache folder left by one plain run (``once``: every call sent and
    stored) of the 30-example project, as :func:`_run` runs it. The tests whose first
    step is that run start from a copy of it (:func:`_recorded`): the cache key
    leaves a loopback port out, so their own server's requests find its entries."""
    root = tmp_path_factory.mktemp("recorded-cache")
    (root / "qa.jsonl").write_text(_rows(30))
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_") and k != "GITHUB_STEP_SUMMARY"}
    env.update(OPENAI_API_KEY=KEY, PYTEST_ADDOPTS=INNER_ADDOPTS, HOME=str(root), PY_COLORS="0",
               CTXBENCH_CACHE_DIR=str(root / "datasets"))
    with FakeLLM(handler=_handler) as llm:
        done = subprocess.run(
            [sys.executable, "-m", "pytest", "-p", "no:randomly", "--ctxbench-dataset=qa.jsonl",
             f"--ctxbench-proxy={llm.base_url}", "--ctxbench-proxy-name=local", "--ctxbench-model=m"],
            cwd=root, env=env, capture_output=True, text=True, timeout=300, check=False,
        )
        assert done.returncode == 0, done.stdout + done.stderr
        assert len(llm.requests) == 30
    folder = root / ".pytest_cache" / "d" / "ctxbench"
    assert (folder / "llm-cache.sqlite3").is_file()
    return folder


def _recorded(pytester: pytest.Pytester, recorded_cache: Path) -> Path:
    """The project's cache: a copy of :func:`recorded_cache` (its 30 entries)."""
    folder = pytester.path / ".pytest_cache" / "d" / "ctxbench"
    shutil.copytree(recorded_cache, folder)
    return folder / "llm-cache.sqlite3"


def test_second_run_replays_everything_with_identical_scores(cached_project: pytest.Pytester) -> None:
    # The first run in-process, the second (replayed) under -n 2: the workers' rows
    # replay the entries one process recorded, with the same scores and summary.
    judge = ["--ctxbench-judge-url=" + "{url}", "--ctxbench-judge-model=judge"]
    with FakeLLM(handler=_handler) as llm:
        args = [a.format(url=llm.base_url) for a in judge] + ["--ctxbench-price=m=1/2", "--ctxbench-price=judge=10/30"]
        first = _run(cached_project, llm, *args)
        assert first.ret == 0, first.stdout.str()
        sent = len(llm.requests)
        doc1 = _doc(cached_project)
        second = _run(cached_project, llm, *args, "-n", "2")
        assert second.ret == 0, second.stdout.str()
        assert len(llm.requests) == sent == 60  # 30 System + 30 judge calls, once
    doc2 = _doc(cached_project)
    import jsonschema

    from pytest_context_bench.report.json_report import load_schema

    jsonschema.validate(doc2, load_schema())
    assert _scores(doc1) == _scores(doc2)
    # the same summary but for timings and the money saved by the cache
    same = {k: {m: x for m, x in v.items() if not m.startswith("latency") and m != "saved_usd"} for k, v in doc1["summary"].items()}
    assert same == {k: {m: x for m, x in v.items() if not m.startswith("latency") and m != "saved_usd"} for k, v in doc2["summary"].items()}
    second.stdout.fnmatch_lines(["LLM cache once (*llm-cache.sqlite3): 60 hits, 0 misses, 0 calls sent; saved 2,310 tokens, $0.018540"])
    assert doc2["llm"]["cache"]["hits"] == 60 and doc2["llm"]["calls_sent"] == 0
    assert doc1["llm"]["cache"]["misses"] == 60 and doc1["llm"]["calls_sent"] == 60
    # money per row, per System, and cost of pass in dollars beside the token one
    row = doc2["rows"][0]
    assert row["metadata"]["llm_usage"]["prompt_tokens"] == 20
    assert row["metadata"]["cost_usd"] == pytest.approx((20 * 1 + 4 * 2) / 1e6)
    assert row["metadata"]["judge_cost_usd"] == pytest.approx((50 * 10 + 3 * 30) / 1e6)
    summary = doc2["summary"]["local"]
    assert summary["cost_usd"] == pytest.approx(30 * 28 / 1e6)
    assert summary["cost_of_pass_usd"] == pytest.approx(30 * 28 / 1e6 / 20)
    assert summary["cost_of_pass"] == pytest.approx(30 * 20 / 20)  # tokens, unchanged
    assert summary["total_cost_usd"] == pytest.approx(30 * (28 + 590) / 1e6)
    # the API key is in no byte of the cache directory
    cache_dir = cached_project.path / ".pytest_cache" / "d" / "ctxbench"
    data = b"".join(p.read_bytes() for p in cache_dir.iterdir())
    assert data and KEY.encode() not in data


def test_concurrent_workers_lose_no_entry(cached_project: pytest.Pytester) -> None:
    cached_project.makefile(".jsonl", qa=_rows(120))
    with FakeLLM(handler=_handler) as llm:
        first = _run(cached_project, llm, "-n", "2")
        assert first.ret == 0, first.stdout.str()
        assert "database is locked" not in first.stdout.str() + first.stderr.str()
        assert len(llm.requests) == 120
        replay = _run(cached_project, llm, "-n", "2", "--ctxbench-cache=replay")
        assert replay.ret == 0, replay.stdout.str()
        assert len(llm.requests) == 120
    path = cached_project.path / ".pytest_cache" / "d" / "ctxbench" / "llm-cache.sqlite3"
    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT count(*) FROM entries").fetchone()[0] == 120
    conn.close()


def test_replay_with_one_changed_prompt_errors_exactly_that_example(
    cached_project: pytest.Pytester, recorded_cache: Path
) -> None:
    _recorded(cached_project, recorded_cache)  # the 30 questions' replies
    with FakeLLM(handler=_handler) as llm:
        cached_project.makefile(".jsonl", qa=_rows(30, changed=7))
        result = _run(cached_project, llm, "--ctxbench-cache=replay")
        assert len(llm.requests) == 0  # nothing sent in replay
    doc = _doc(cached_project)
    errors = {r["example_id"]: r["error"] for r in doc["rows"] if r["error"]}
    assert list(errors) == ["q-7"]
    assert errors["q-7"]["message"].startswith("cache miss in replay mode: POST http://127.0.0.1:")
    assert "nothing was sent" in errors["q-7"]["message"]
    result.stdout.fnmatch_lines(["*1 example(s) errored on a replay-mode cache miss*"])
    assert doc["llm"]["cache"]["replay_misses"] == 1 and doc["llm"]["cache"]["hits"] == 29


def test_last_failed_after_a_cached_run_calls_nothing(cached_project: pytest.Pytester) -> None:
    with FakeLLM(handler=_handler) as llm:
        first = _run(cached_project, llm, "--ctxbench-strict")
        first.assert_outcomes(passed=20, failed=10)
        rerun = _run(cached_project, llm, "--ctxbench-strict", "--lf")
        rerun.assert_outcomes(failed=10, deselected=20)
        assert len(llm.requests) == 30
    rerun.stdout.fnmatch_lines(["LLM cache once*: 10 hits, 0 misses, 0 calls sent*"])


def test_refresh_and_off_call_again(cached_project: pytest.Pytester, recorded_cache: Path) -> None:
    _recorded(cached_project, recorded_cache)  # every reply cached: neither mode uses it
    with FakeLLM(handler=_handler) as llm:
        _run(cached_project, llm, "--ctxbench-cache=refresh")
        assert len(llm.requests) == 30
        off = _run(cached_project, llm, "--ctxbench-cache=off")
        assert len(llm.requests) == 60
    off.stdout.fnmatch_lines(["LLM cache off: 0 hits, 30 misses, 30 calls sent; saved 0 tokens"])


def test_cache_dir_option_and_ini(cached_project: pytest.Pytester) -> None:
    cached_project.makeini("[pytest]\nctxbench_cache_dir = llmcache\nctxbench_cache = once\n")
    with FakeLLM(handler=_handler) as llm:
        assert _run(cached_project, llm).ret == 0
    assert (cached_project.path / "llmcache" / "llm-cache.sqlite3").is_file()
    assert not (cached_project.path / ".pytest_cache" / "d" / "ctxbench").exists()


# Not SQLite at all (under -n 2: said once, not once per worker), and SQLite's header
# over garbage (in-process: another error of SQLite's, the same refusal).
@pytest.mark.parametrize(
    "damage, workers",
    [(b"garbage, not SQLite\n" * 100, ["-n", "2"]), (b"SQLite format 3\x00" + b"\x01" * 3000, [])],
    ids=["garbage-xdist2", "header-inprocess"],
)
def test_a_corrupt_cache_file_is_one_line_and_the_run_goes_on(
    cached_project: pytest.Pytester, damage: bytes, workers: list[str]
) -> None:
    path = cached_project.path / ".pytest_cache" / "d" / "ctxbench" / "llm-cache.sqlite3"
    path.parent.mkdir(parents=True)
    path.write_bytes(damage)
    with FakeLLM(handler=_handler) as llm:
        result = _run(cached_project, llm, *workers)
        assert result.ret == 0, result.stdout.str()
        assert len(llm.requests) == 30
        # Said once (wrapped to the terminal's width like every summary line).
        flat = " ".join(result.stdout.str().split())
        said = re.findall(re.escape(f"the LLM cache {path} ") + r".*?; the run goes on without the cache\.", flat)
        assert len(said) == 1, result.stdout.str()
        replay = _run(cached_project, llm, "--ctxbench-cache=replay")
    assert replay.ret == 4
    replay.stderr.fnmatch_lines([f"ERROR: --ctxbench-cache=replay: the LLM cache {path} *nothing can be replayed.*"])
    assert path.read_bytes() == damage  # never overwritten


@pytest.mark.parametrize("link", ["dangling", "to_a_file"])
def test_a_symlinked_cache_file_is_refused_and_never_written(
    cached_project: pytest.Pytester, link: str
) -> None:
    # SQLite follows a link: a dangling one makes it create the target elsewhere,
    # one to another file turns that file into a database. Refused, one line; the
    # run goes on without the cache, in-process (both links) and under -n 2 (the
    # link to a file: check_links refuses either kind by the same is_symlink()).
    path = cached_project.path / ".pytest_cache" / "d" / "ctxbench" / "llm-cache.sqlite3"
    path.parent.mkdir(parents=True)
    target = cached_project.path / "elsewhere" / "notes.txt"
    if link == "to_a_file":
        target.parent.mkdir()
        target.write_text("my notes\n")
    path.symlink_to(target)
    modes = ([], ["-n", "2"]) if link == "to_a_file" else ([],)
    with FakeLLM(handler=_handler) as llm:
        for workers in modes:
            result = _run(cached_project, llm, *workers)
            assert result.ret == 0, result.stdout.str()
            # Said once (wrapped to the terminal's width like every summary line).
            out = " ".join(result.stdout.str().split())
            line = f"the LLM cache {path} is a symbolic link (to {target}); a cache"
            assert out.count(line) == 1, result.stdout.str()
        assert len(llm.requests) == 30 * len(modes)  # nothing cached, nothing replayed
        replay = _run(cached_project, llm, "--ctxbench-cache=replay")
    assert replay.ret == 4
    assert "is a symbolic link" in replay.stderr.str()
    assert path.is_symlink()
    if link == "dangling":
        assert not target.exists() and not target.parent.exists()
    else:
        assert target.read_text() == "my notes\n"
        assert sorted(p.name for p in target.parent.iterdir()) == ["notes.txt"]


def _nan_handler(request):  # type: ignore[no-untyped-def]
    reply = _handler(request)
    body = request.json or {}
    text = " ".join(str(m.get("content", "")) for m in body.get("messages", []))
    if "capital of country 5?" in text:  # one example's reply: NaN prompt tokens
        return Reply(body=json.dumps({
            "model": "m", "usage": {"prompt_tokens": float("nan"), "completion_tokens": 4},
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": reply.text}}],
        }))  # fmt: skip
    return reply


def test_a_reply_with_nan_usage_is_that_examples_error_row(cached_project: pytest.Pytester) -> None:
    # Before: scored with 0 tokens and $0, the money under-counted in silence. The
    # first run in-process, the second under -n 2 (the bad reply sent again).
    with FakeLLM(handler=_nan_handler) as llm:
        result = _run(cached_project, llm, "--ctxbench-price=m=1000/1000")
        doc1 = _doc(cached_project)
        again = _run(cached_project, llm, "--ctxbench-price=m=1000/1000", "-n", "2")
        assert len(llm.requests) == 31  # the bad reply was not cached: sent again
    assert result.ret == 1, result.stdout.str()
    assert again.ret == 1, again.stdout.str()
    for run, doc in ((result, doc1), (again, _doc(cached_project))):
        errors = {r["example_id"]: r["error"] for r in doc["rows"] if r["error"]}
        assert list(errors) == ["q-5"]
        assert errors["q-5"]["type"] == "pytest_context_bench.transports.BadUsageError"
        assert "reports usage.prompt_tokens = nan" in errors["q-5"]["message"]
        (row,) = [r for r in doc["rows"] if r["example_id"] == "q-5"]
        assert row["scores"] == {}
        assert row["metadata"]["cost_usd"] is None  # unknown, never $0
        run.stdout.fnmatch_lines(["*ERROR*q-5*BadUsageError*"])


def test_a_cached_reply_poisoned_with_nan_usage_is_an_error_row_on_replay(
    cached_project: pytest.Pytester, recorded_cache: Path
) -> None:
    path = _recorded(cached_project, recorded_cache)
    with FakeLLM(handler=_handler) as llm:
        with sqlite3.connect(path) as conn:
            rows = conn.execute("SELECT key, body FROM entries").fetchall()
            poisoned = 0
            for key, body in rows:
                data = json.loads(body)
                if data["choices"][0]["message"]["content"] != "city 7":
                    continue
                data["usage"]["completion_tokens"] = float("nan")
                conn.execute("UPDATE entries SET body = ? WHERE key = ?", (json.dumps(data).encode(), key))
                poisoned += 1
        conn.close()
        assert poisoned == 1
        replay = _run(cached_project, llm, "--ctxbench-cache=replay", "--ctxbench-price=m=1/1")
        assert len(llm.requests) == 0  # replay sends nothing
    assert replay.ret == 1
    doc = _doc(cached_project)
    errors = {r["example_id"]: r["error"]["message"] for r in doc["rows"] if r["error"]}
    assert list(errors) == ["q-7"]
    assert "reports usage.completion_tokens = nan" in errors["q-7"]


def test_newer_schema_cache_is_left_alone(cached_project: pytest.Pytester, recorded_cache: Path) -> None:
    path = _recorded(cached_project, recorded_cache)
    with sqlite3.connect(path) as conn:
        conn.execute("PRAGMA user_version = 7")
    conn.close()
    with FakeLLM(handler=_handler) as llm:
        result = _run(cached_project, llm)
        assert len(llm.requests) == 30  # none of its 30 entries used
    result.stdout.fnmatch_lines(["*was written by a newer pytest-context-bench (cache schema 7*"])


def test_money_gates_and_price_lines(cached_project: pytest.Pytester) -> None:
    # Explicit prices only: genai-prices (--ctxbench-price=auto) is never imported.
    cached_project.makeconftest(
        "import sys\n\ndef pytest_unconfigure(config):\n"
        "    open('imported.txt', 'w').write(str('genai_prices' in sys.modules))\n"
    )
    with FakeLLM(handler=_handler) as llm:
        over = _run(cached_project, llm, "--ctxbench-price=m=1000/1000", "--ctxbench-max-cost-usd=0.5",
                    "--ctxbench-max-cost-of-pass-usd=0.1", "--ctxbench-price=gpt-typo=1/1")
        unknown = _run(cached_project, llm, "--ctxbench-price=other=1/1", "--ctxbench-max-cost-of-pass-usd=1")
    assert over.ret == 1
    assert (cached_project.path / "imported.txt").read_text() == "False"
    over.stdout.fnmatch_lines([
        "*FAIL local: max_cost_usd: total_cost_usd = 0.72 breaches the limit <= 0.5*",
        "*PASS local: max_cost_of_pass_usd: cost_of_pass_usd = 0.036 meets the limit <= 0.1*",
        "*--ctxbench-price: price given for model(s) 'gpt-typo' that no call used (check the spelling; models seen: 'm')*",
    ])
    assert unknown.ret == 1  # unknown money never passes a gate
    unknown.stdout.fnmatch_lines([
        "*FAIL local: max_cost_of_pass_usd: cost_of_pass_usd could not be measured (no LLM call was measured, or a model has no --ctxbench-price)*",
        "*--ctxbench-price: no price for model(s) 'm', so their cost is unknown; add --ctxbench-price=MODEL=IN/OUT*",
    ])


@pytest.mark.parametrize(
    "args, message",
    [
        (["--ctxbench-cache=sometimes"], "--ctxbench-cache must be one of once, replay, refresh, off, given: 'sometimes'*"),
        (["--ctxbench-price=m=1"], "--ctxbench-price: expected MODEL=IN/OUT or MODEL=IN/OUT/CACHED*given: 'm=1'"),
        (["--ctxbench-price=m=1/2", "--ctxbench-price=m=3/4"], "--ctxbench-price gives model 'm' two different prices; give one"),
        (["--ctxbench-cache-dir=afile/sub"], "--ctxbench-cache-dir must be a directory, but */afile is a file, given: 'afile/sub'"),
        (["--ctxbench-max-cost-usd=-1"], "--ctxbench-max-cost-usd must be a number >= 0, given: '-1'"),
    ],
)
def test_bad_options_are_one_usage_error(pytester: pytest.Pytester, args: list[str], message: str) -> None:
    pytester.makefile(".jsonl", qa=_rows(2))
    pytester.path.joinpath("afile").write_text("x")
    result = pytester.runpytest_subprocess("--ctxbench-dataset=qa.jsonl", "--ctxbench-proxy=http://127.0.0.1:9", *args)
    assert result.ret == 4
    result.stderr.fnmatch_lines([f"ERROR: {message}"])


def test_unwritable_cache_dir_is_a_usage_error(pytester: pytest.Pytester) -> None:
    import os

    if os.geteuid() == 0:
        pytest.skip("root can write anywhere")
    ro = pytester.path / "ro"
    ro.mkdir(mode=0o500)
    pytester.makefile(".jsonl", qa=_rows(2))
    result = pytester.runpytest_subprocess("--ctxbench-dataset=qa.jsonl", "--ctxbench-proxy=http://127.0.0.1:9", f"--ctxbench-cache-dir={ro}/c")
    assert result.ret == 4
    result.stderr.fnmatch_lines([f"ERROR: --ctxbench-cache-dir: {ro} is not writable*"])


OPENAI_SYSTEM = '''
import pytest
from openai import OpenAI


class SdkSystem:
    name = "sdk"

    def __init__(self, client):
        self.client = client

    def process(self, example):
        reply = self.client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": example["question"]}]
        )
        return {**example, "response": reply.choices[0].message.content}


@pytest.fixture(scope="session")
def ctxbench_system(ctxbench_http_client):
    # the one-line change: http_client=ctxbench_http_client
    return SdkSystem(OpenAI(base_url="{url}/v1", max_retries=0, http_client=ctxbench_http_client))
'''


def test_openai_sdk_through_the_fixture_is_cached_and_a_replay_miss_is_named(cached_project: pytest.Pytester) -> None:
    pytest.importorskip("openai")
    with FakeLLM(handler=_handler) as llm:
        cached_project.makeconftest(OPENAI_SYSTEM.replace("{url}", llm.base_url))
        args = ["--ctxbench-dataset=qa.jsonl", f"--ctxbench-json={cached_project.path / 'out.json'}", "--ctxbench-price=m=1/2"]
        first = cached_project.runpytest_subprocess(*args)
        assert first.ret == 0, first.stdout.str()
        assert len(llm.requests) == 30
        assert llm.requests[0].headers["authorization"] == f"Bearer {KEY}"
        second = cached_project.runpytest_subprocess(*args, "-n", "2", "--ctxbench-cache=replay")
        assert second.ret == 0, second.stdout.str()
        assert len(llm.requests) == 30
        second.stdout.fnmatch_lines(["LLM cache replay*: 30 hits, 0 misses, 0 calls sent*"])
        doc = _doc(cached_project)
        assert doc["summary"]["sdk"]["cost_usd"] == pytest.approx(30 * 28 / 1e6)
        cache_dir = cached_project.path / ".pytest_cache" / "d" / "ctxbench"
        assert KEY.encode() not in b"".join(p.read_bytes() for p in cache_dir.iterdir())
        # One prompt changed: a replay miss, through the SDK (which wraps what its
        # transport raised), is that example's CacheMiss.
        cached_project.makefile(".jsonl", qa=_rows(30, changed=3))
        cached_project.runpytest_subprocess(*args, "--ctxbench-cache=replay")
        assert len(llm.requests) == 30
    errors = {r["example_id"]: r["error"] for r in _doc(cached_project)["rows"] if r["error"]}
    assert list(errors) == ["q-3"]
    assert errors["q-3"]["type"] == "pytest_context_bench.cache.CacheMiss"
    assert errors["q-3"]["message"].startswith("cache miss in replay mode: POST")
    assert "nothing was sent" in errors["q-3"]["message"]


MARKED_TEST = '''
import pytest
from pytest_context_bench.llm import LLMClient

CLIENT = LLMClient("{url}", max_retries=0)


@pytest.mark.ctxbench(dataset="qa.jsonl", repeat=2)
def test_reader(ctxbench_example, ctxbench_record):
    reply = CLIENT.chat([{"role": "user", "content": ctxbench_example["question"]}], model="m")
    ctxbench_record({**ctxbench_example, "response": reply.text}, system="reader")
'''


def test_marked_tests_are_cached_per_trial_and_metered(cached_project: pytest.Pytester) -> None:
    cached_project.makefile(".jsonl", qa=_rows(4))
    with FakeLLM(handler=_handler) as llm:
        cached_project.makepyfile(test_marked=MARKED_TEST.replace("{url}", llm.base_url))
        args = [f"--ctxbench-json={cached_project.path / 'out.json'}", "--ctxbench-price=m=1/2"]
        first = cached_project.runpytest_subprocess(*args)
        assert first.ret == 0, first.stdout.str()
        assert len(llm.requests) == 8  # 4 examples x 2 trials: each trial its own entry
        second = cached_project.runpytest_subprocess(*args, "--ctxbench-cache=replay")
        assert second.ret == 0, second.stdout.str()
        assert len(llm.requests) == 8
    second.stdout.fnmatch_lines(["LLM cache replay*: 8 hits, 0 misses, 0 calls sent*"])
    rows = _doc(cached_project)["rows"]
    assert {r["metadata"]["trial"] for r in rows} == {1, 2}
    assert all(r["metadata"]["llm_usage"]["cache_hits"] == 1 for r in rows)
    assert all(r["metadata"]["cost_usd"] == pytest.approx(28 / 1e6) for r in rows)


PLAIN_TEST = '''
from pytest_context_bench.llm import LLMClient


def test_calls_twice():
    client = LLMClient("{url}", max_retries=0)
    for _ in range(2):
        client.chat([{"role": "user", "content": "same"}], model="m")
'''


def test_a_project_that_does_not_ask_gets_no_cache(pytester: pytest.Pytester) -> None:
    with FakeLLM(handler=_handler) as llm:
        pytester.makepyfile(test_plain=PLAIN_TEST.replace("{url}", llm.base_url))
        result = pytester.runpytest_subprocess()
        assert result.ret == 0
        assert len(llm.requests) == 2
    assert not (pytester.path / ".pytest_cache" / "d" / "ctxbench").exists()
    assert "LLM cache" not in result.stdout.str()
