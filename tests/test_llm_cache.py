"""The LLM cache: store, keys, transports (real HTTP on 127.0.0.1), prices, the CLI."""

from __future__ import annotations

import asyncio
import multiprocessing
import re
import sqlite3
import time
import warnings
from pathlib import Path
from typing import Any

import httpx
import pytest

from pytest_context_bench.cache import (
    CACHE_FILE,
    CachedResponse,
    CacheFileError,
    CacheMiss,
    CacheStore,
    LLMCache,
    cache_key,
    canonical_body,
    clean_url,
    parse_age,
)
from pytest_context_bench.calls import CallScope, call_scope
from pytest_context_bench.cli import main as ctxbench
from pytest_context_bench.pricing import Price, parse_price, usage_summary
from pytest_context_bench.testing import FakeLLM, Reply
from pytest_context_bench.transports import (
    AsyncCacheTransport,
    CacheWarning,
    async_http_client,
    http_client,
)

KEY = "sk-test-DO-NOT-STORE-1234567890"
BODY = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "temperature": 0}


def _all_bytes(directory: Path) -> bytes:
    return b"".join(p.read_bytes() for p in directory.iterdir() if p.is_file())


def _client(cache: LLMCache | None) -> httpx.Client:
    return http_client(cache, headers={"Authorization": f"Bearer {KEY}", "api-key": KEY})


# -- keys ---------------------------------------------------------------------------


def test_key_is_the_canonical_body_method_url_and_trial() -> None:
    a = canonical_body(b'{"b": 1, "a": [1, 2]}')
    b = canonical_body(b'{ "a":[1,2],\n "b":1 }')
    assert a == b == b'{"a":[1,2],"b":1}'
    url = "http://h:1/v1/chat/completions"
    k = cache_key("POST", url, a, 1)
    assert k == cache_key("post", url, b, 1)
    assert k != cache_key("POST", url, a, 2)  # trial index
    assert k != cache_key("GET", url, a, 1)
    assert k != cache_key("POST", url + "x", a, 1)
    assert k != cache_key("POST", url, canonical_body(b'{"b": 1, "a": [2, 1]}') or b"", 1)
    # every URL that differs is another key, credentials included (issue 22)
    assert cache_key("POST", "http://user:pw@h:1/v1/chat/completions", a, 1) != k
    assert cache_key("POST", url + "?api_key=X", a, 1) != cache_key(
        "POST", url + "?api_key=Y", a, 1
    )
    assert canonical_body(b"not json") is None


def test_clean_url_drops_user_info_and_secret_query_parameters() -> None:
    url = "https://me:pw@API.example.com:8443/v1/x?key=S1&b=2&access_token=S2&a=1"
    assert clean_url(url) == "https://api.example.com:8443/v1/x?a=1&b=2"


# -- the transport against a real server ----------------------------------------------


def test_second_identical_request_is_served_from_the_cache(tmp_path: Path) -> None:
    cache = LLMCache.in_dir(tmp_path)
    with FakeLLM(handler=lambda r: Reply(text="hello", usage={"prompt_tokens": 7, "completion_tokens": 2})) as llm:
        with _client(cache) as client:
            first = client.post(f"{llm.base_url}/v1/chat/completions", json=BODY)
            # the same body with its keys in another order is the same request
            reordered = dict(reversed(list(BODY.items())))
            second = client.post(f"{llm.base_url}/v1/chat/completions", json=reordered)
        assert len(llm.requests) == 1
        url = f"{llm.base_url}/v1/chat/completions"
    assert first.json() == second.json()
    assert second.headers["x-ctxbench-cache"] == "hit"
    assert cache.stats.as_dict() == {"hits": 1, "misses": 1, "stored": 1, "uncacheable": 0}
    info = cache.store.info()
    assert info["entries"] == 1 and info["versions"] == {"0.1.0": 1}
    assert info["endpoints"][0]["url"] == url


def test_api_key_appears_in_no_cache_byte(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from pytest_context_bench.llm import LLMClient

    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    cache = LLMCache.in_dir(tmp_path / "c")
    from pytest_context_bench.cache import set_active_cache

    previous = set_active_cache(cache)
    try:
        # The server echoes the key back in its reply: the stored body is what the
        # client would see, so the LLMClient's own redaction is not enough; the echo
        # is checked below as well.
        with FakeLLM(handler=lambda r: Reply(text="ok")) as llm:
            client = LLMClient(llm.base_url, max_retries=0)
            client.chat([{"role": "user", "content": "q"}], model="m")
            client.embeddings(["a", "b"], model="e")
            client.close()
            assert llm.requests[0].headers["authorization"] == f"Bearer {KEY}"
    finally:
        set_active_cache(previous)
        cache.store.close()
    assert cache.stats.stored == 2
    data = _all_bytes(tmp_path / "c")
    assert data and KEY.encode() not in data
    assert b"Bearer" not in data


@pytest.mark.parametrize(
    "reply, body",
    [
        (Reply(status=500, text="boom"), BODY),
        (Reply(status=429, text="slow", retry_after="0"), BODY),
        (Reply(status=400, text="bad"), BODY),
        (Reply(body="<html>not json</html>"), BODY),
        # a stream broken off midway (a whole one is stored: test_streams.py)
        (Reply(text="streamed reply", stream_cut=2), {**BODY, "stream": True}),
    ],
    ids=["500", "429", "400", "not-json", "broken-stream"],
)
def test_errors_non_json_and_broken_streams_are_not_cached(tmp_path: Path, reply: Reply, body: dict) -> None:
    cache = LLMCache.in_dir(tmp_path)
    with FakeLLM(handler=lambda r: reply) as llm:
        with _client(cache) as client:
            for _ in range(2):
                try:
                    client.post(f"{llm.base_url}/v1/chat/completions", json=body)
                except httpx.TransportError:
                    assert reply.stream_cut is not None
        assert len(llm.requests) == 2
    assert cache.stats.stored == 0
    assert not cache.path.exists() or cache.store.info()["entries"] == 0


def test_replay_miss_sends_nothing_and_names_the_miss(tmp_path: Path) -> None:
    with FakeLLM(["recorded"]) as llm:
        url = f"{llm.base_url}/v1/chat/completions"
        with _client(LLMCache.in_dir(tmp_path, "once")) as client:
            client.post(url, json=BODY)
        replay = LLMCache.in_dir(tmp_path, "replay")
        scope = CallScope("s", "d", "ex-1", trial=1)
        with _client(replay) as client, call_scope(scope):
            assert client.post(url, json=BODY).json()["choices"][0]["message"]["content"] == "recorded"
            # Answered, not raised: a 404 that SDKs treat as final (no retry), with
            # the miss in the body and the CacheMiss itself in the extensions.
            missed = client.post(url, json={**BODY, "temperature": 1})
            assert missed.status_code == 404
            assert missed.headers["x-should-retry"] == "false"
            message = missed.json()["error"]["message"]
            assert re.match(r"cache miss in replay mode: POST .*chat/completions \(trial 1", message)
            assert isinstance(missed.extensions["ctxbench_cache_miss"], CacheMiss)
        assert len(llm.requests) == 1
    assert [u["cache"] for u in scope.usage] == ["hit", "miss"]
    assert "cache miss" in scope.usage[1]["error"]


def test_trial_index_keeps_repeated_trials_apart(tmp_path: Path) -> None:
    cache = LLMCache.in_dir(tmp_path)
    with FakeLLM(handler=lambda r: Reply(text="x")) as llm:
        url = f"{llm.base_url}/v1/chat/completions"
        with _client(cache) as client:
            for trial in (1, 2, 1, 2):
                with call_scope(CallScope("s", "d", "e", trial=trial)):
                    client.post(url, json=BODY)
        assert len(llm.requests) == 2
    assert cache.store.info()["entries"] == 2


def test_refresh_calls_again_and_overwrites(tmp_path: Path) -> None:
    replies = iter(["first", "second"])
    with FakeLLM(handler=lambda r: Reply(text=next(replies))) as llm:
        url = f"{llm.base_url}/v1/chat/completions"
        with _client(LLMCache.in_dir(tmp_path)) as client:
            client.post(url, json=BODY)
        with _client(LLMCache.in_dir(tmp_path, "refresh")) as client:
            assert client.post(url, json=BODY).json()["choices"][0]["message"]["content"] == "second"
        with _client(LLMCache.in_dir(tmp_path, "replay")) as client:
            assert client.post(url, json=BODY).json()["choices"][0]["message"]["content"] == "second"
        assert len(llm.requests) == 2


def test_usage_is_metered_into_the_call_scope_with_and_without_cache(tmp_path: Path) -> None:
    usage = {"prompt_tokens": 100, "completion_tokens": 5, "prompt_tokens_details": {"cached_tokens": 40}}
    with FakeLLM(handler=lambda r: Reply(text="x", usage=usage)) as llm:
        url = f"{llm.base_url}/v1/chat/completions"
        scope = CallScope("s", "d", "e")
        with call_scope(scope):
            with _client(None) as client:  # no cache: metering only
                client.post(url, json=BODY)
            with _client(LLMCache.in_dir(tmp_path)) as client:
                client.post(url, json=BODY)
                client.post(url, json=BODY)
    assert [u["cache"] for u in scope.usage] == ["off", "miss", "hit"]
    assert all(
        (u["model"], u["prompt_tokens"], u["completion_tokens"], u["cached_tokens"]) == ("m", 100, 5, 40)
        for u in scope.usage
    )


_CHAT = '{"model": "m", "choices": [{"index": 0, "message": {"role": "assistant", "content": "x"}, "finish_reason": "stop"}], "usage": %s}'


@pytest.mark.parametrize(
    ("usage", "where"),
    [
        ('{"prompt_tokens": NaN, "completion_tokens": 5}', "usage.prompt_tokens = nan"),
        ('{"prompt_tokens": 10, "completion_tokens": Infinity}', "usage.completion_tokens = inf"),
        ('{"prompt_tokens": -3, "completion_tokens": 5}', "usage.prompt_tokens = -3"),
        ('{"prompt_tokens": 2.5, "completion_tokens": 5}', "usage.prompt_tokens = 2.5"),
        ('{"prompt_tokens": "12", "completion_tokens": 5}', "usage.prompt_tokens = '12'"),
        ('{"prompt_tokens": true, "completion_tokens": 5}', "usage.prompt_tokens = True"),
        ('{"prompt_tokens": 1e300, "completion_tokens": 5}', "usage.prompt_tokens = 1e+300"),
        ('{"prompt_tokens": 10, "completion_tokens": 5, "prompt_tokens_details": {"cached_tokens": NaN}}',
         "usage.prompt_tokens_details.cached_tokens = nan"),
        # Anthropic's shape
        ('{"input_tokens": NaN, "output_tokens": 5}', "usage.input_tokens = nan"),
        ('{"input_tokens": 10, "output_tokens": -Infinity}', "usage.output_tokens = -inf"),
    ],
)  # fmt: skip
def test_a_reply_with_bad_usage_is_flagged_and_not_cached(
    tmp_path: Path, usage: str, where: str
) -> None:
    # Before: NaN, infinities and negatives became 0 tokens and $0 in silence.
    cache = LLMCache.in_dir(tmp_path)
    with FakeLLM(handler=lambda r: Reply(body=_CHAT % usage)) as llm:
        scope = CallScope("s", "d", "e")
        with call_scope(scope), _client(cache) as client:
            for _ in range(2):
                r = client.post(f"{llm.base_url}/v1/chat/completions", json=BODY)
                assert r.status_code == 200  # the System still gets its reply
        assert len(llm.requests) == 2  # never stored, so never replayed
    assert cache.stats.stored == 0
    assert [u["cache"] for u in scope.usage] == ["miss", "miss"]
    for entry in scope.usage:
        assert f"the LLM reply (model m) reports {where};" in entry["bad_usage"]
        assert "prompt_tokens" not in entry
    summary = usage_summary(scope.usage, {"m": Price(1.0, 1.0)})
    assert summary is not None
    assert summary["calls"] == 2 and summary["cost_usd"] is None
    assert len(summary["bad_usage"]) == 2


def test_null_and_missing_counts_are_zero_not_errors(tmp_path: Path) -> None:
    usage = '{"prompt_tokens": 7, "completion_tokens": null, "prompt_tokens_details": null}'
    with FakeLLM(handler=lambda r: Reply(body=_CHAT % usage)) as llm:
        scope = CallScope("s", "d", "e")
        with call_scope(scope), _client(None) as client:
            client.post(f"{llm.base_url}/v1/chat/completions", json=BODY)
    (entry,) = scope.usage
    assert (entry["prompt_tokens"], entry["completion_tokens"], entry["cached_tokens"]) == (7, 0, 0)
    assert "bad_usage" not in entry


def test_async_transport_caches_with_a_plain_async_client(tmp_path: Path) -> None:
    cache = LLMCache.in_dir(tmp_path)

    async def go(url: str) -> list[dict]:
        transport = AsyncCacheTransport(httpx.AsyncHTTPTransport(), cache)
        async with httpx.AsyncClient(transport=transport) as client:
            scope = CallScope("s", "d", "e", trial=3)
            with call_scope(scope):
                out = [(await client.post(url, json=BODY)).json() for _ in range(3)]
            assert [u["cache"] for u in scope.usage] == ["miss", "hit", "hit"]
        async with async_http_client(LLMCache.in_dir(tmp_path, "replay")) as client:
            with call_scope(CallScope("s", "d", "e", trial=3)):
                out.append((await client.post(url, json=BODY)).json())
        return out

    with FakeLLM(["only once"]) as llm:
        results = asyncio.run(go(f"{llm.base_url}/v1/chat/completions"))
        assert len(llm.requests) == 1
    assert len({str(r) for r in results}) == 1


# -- bad files ------------------------------------------------------------------------


def _recorded(tmp_path: Path, n: int = 50) -> Path:
    store = CacheStore(tmp_path / CACHE_FILE)
    for i in range(n):
        store.put(f"k{i}", "POST", "http://h/v1/x", CachedResponse(200, "application/json", b"{}" * 500, time.time(), "0.1.0"))
    store.close()
    return tmp_path / CACHE_FILE


@pytest.mark.parametrize("damage", ["garbage", "truncated", "empty-header"])
def test_a_damaged_file_is_one_clear_error_and_the_call_goes_on_uncached(tmp_path: Path, damage: str) -> None:
    path = tmp_path / CACHE_FILE
    if damage == "garbage":
        path.write_bytes(b"this is not a database at all\n" * 200)
    elif damage == "truncated":
        data = _recorded(tmp_path).read_bytes()
        path.write_bytes(data[: len(data) // 3])
    else:
        data = _recorded(tmp_path).read_bytes()
        path.write_bytes(b"\0" * 100 + data[100:])
    with pytest.raises(CacheFileError, match=rf"the LLM cache {path} .*(not a SQLite|damaged|malformed|cannot)"):
        store = CacheStore(path)
        store.get("k1")
        store.get("k49")
    cache = LLMCache(path)
    with FakeLLM(["live"]) as llm, _client(cache) as client:
        with pytest.warns(CacheWarning, match="the run goes on without the cache"):
            r = client.post(f"{llm.base_url}/v1/chat/completions", json=BODY)
        assert r.json()["choices"][0]["message"]["content"] == "live"
        # Said once only. (Recorded, not turned into errors: a ResourceWarning of a
        # socket another test leaked, collected meanwhile, is no CacheWarning.)
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            client.post(f"{llm.base_url}/v1/chat/completions", json=BODY)
        assert not [w for w in seen if issubclass(w.category, CacheWarning)]
        assert len(llm.requests) == 2


def test_a_newer_schema_is_refused_not_overwritten(tmp_path: Path) -> None:
    path = _recorded(tmp_path)
    with sqlite3.connect(path) as conn:
        conn.execute("PRAGMA user_version = 99")
    conn.close()
    with pytest.raises(CacheFileError, match="newer pytest-context-bench .*schema 99"):
        CacheStore(path).get("k1")
    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT count(*) FROM entries").fetchone()[0] == 50
    conn.close()


def test_another_programs_sqlite_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / CACHE_FILE
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE photos (id INTEGER)")
    conn.close()
    with pytest.raises(CacheFileError, match="belongs to another program"):
        CacheStore(path).get("k")


# -- concurrency ----------------------------------------------------------------------


def _writer(path: str, start: int, n: int, errors: multiprocessing.Queue[str]) -> None:
    store = CacheStore(path)
    try:
        for i in range(start, start + n):
            store.put(f"k{i}", "POST", "http://h/x", CachedResponse(200, "application/json", b'{"i": %d}' % i, time.time(), "t"))
            store.get(f"k{i - 1}")
    except Exception as exc:  # pragma: no cover - the assertion below shows it
        errors.put(repr(exc))
    finally:
        store.close()


def test_concurrent_writer_processes_lose_nothing(tmp_path: Path) -> None:
    path = str(tmp_path / CACHE_FILE)
    ctx = multiprocessing.get_context("spawn")
    errors = ctx.Queue()
    procs = [ctx.Process(target=_writer, args=(path, k * 400, 400, errors)) for k in range(3)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
    found = []
    while not errors.empty():
        found.append(errors.get())
    assert found == []
    assert all(p.exitcode == 0 for p in procs)
    assert CacheStore(path).info()["entries"] == 1200


# -- prices ---------------------------------------------------------------------------


def test_prices_parse_and_price_usage() -> None:
    assert parse_price("gpt-4o-mini=0.15/0.60") == ("gpt-4o-mini", Price(0.15, 0.6))
    assert parse_price("org/model:v1=1/2/0.5") == ("org/model:v1", Price(1.0, 2.0, 0.5))
    # a fourth number: the provider's cache-write price (Anthropic, issue 28)
    assert parse_price("c=3/15/0.3/3.75") == ("c", Price(3.0, 15.0, 0.3, 3.75))
    for bad in ("gpt", "m=1", "m=1/x", "m=-1/2", "=1/2", "m=1/2/3/4/5", "m=nan/1", "m=1/2/3/-4"):
        with pytest.raises(ValueError, match="MODEL=IN/OUT"):
            parse_price(bad)
    prices = {"m": Price(2.0, 10.0, 1.0)}
    entries = [
        {"cache": "miss", "model": "m", "prompt_tokens": 1000, "completion_tokens": 100, "cached_tokens": 400},
        {"cache": "hit", "model": "m", "prompt_tokens": 1000, "completion_tokens": 100, "cached_tokens": 0},
    ]
    s = usage_summary(entries, prices)
    assert s is not None
    assert (s["calls"], s["cache_hits"], s["saved_tokens"]) == (1, 1, 1100)
    assert s["cost_usd"] == pytest.approx((600 * 2 + 400 * 1 + 100 * 10 + 1000 * 2 + 100 * 10) / 1e6)
    assert s["saved_usd"] == pytest.approx(3000 / 1e6)
    unknown = usage_summary([{**entries[0], "model": "other"}], prices)
    assert unknown is not None and unknown["cost_usd"] is None and unknown["unpriced_models"] == ["other"]


# -- the ctxbench cache command -------------------------------------------------------


def test_cache_command_info_and_clear(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _recorded(tmp_path, 3)
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE entries SET created = created - 40 * 86400 WHERE key = 'k0'")
    conn.close()
    assert ctxbench(["cache", "info", "--dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "entries: 3" in out and "POST http://h/v1/x" in out
    assert ctxbench(["cache", "clear", "--dir", str(tmp_path), "--older-than", "30d"]) == 0
    assert "deleted 1 entry" in capsys.readouterr().out
    assert ctxbench(["cache", "clear", "--dir", str(tmp_path)]) == 0
    assert "deleted 2 entries" in capsys.readouterr().out
    assert ctxbench(["cache", "clear", "--older-than", "soon"]) == 4
    assert "--older-than: 'soon' is not an age" in capsys.readouterr().err
    path.write_bytes(b"garbage" * 100)
    assert ctxbench(["cache", "info", "--dir", str(tmp_path)]) == 4
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "not a SQLite database" in err


@pytest.mark.parametrize("damage", ["garbage", "another_program", "newer_schema"])
def test_cache_clear_deletes_a_file_it_cannot_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], damage: str
) -> None:
    # The advice of every "cannot be used" line is `ctxbench cache clear --dir D`:
    # it must work on exactly those files.
    path = tmp_path / CACHE_FILE
    if damage == "garbage":
        path.write_bytes(b"garbage" * 100)
    elif damage == "another_program":
        with sqlite3.connect(path) as conn:
            conn.execute("CREATE TABLE photos (id INTEGER)")
        conn.close()
    else:
        _recorded(tmp_path, 3)
        with sqlite3.connect(path) as conn:
            conn.execute("PRAGMA user_version = 99")
        conn.close()
    assert ctxbench(["cache", "info", "--dir", str(tmp_path)]) == 4
    advice = capsys.readouterr().err
    assert f"`ctxbench cache clear --dir {tmp_path}`" in advice
    assert ctxbench(["cache", "clear", "--dir", str(tmp_path), "--older-than", "1d"]) == 4
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "without --older-than" in err
    assert path.exists()
    assert ctxbench(["cache", "clear", "--dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"deleted {path}") and out.count("\n") == 1
    assert not any(p.name.startswith(CACHE_FILE) for p in tmp_path.iterdir())
    # A new cache works there again.
    assert ctxbench(["cache", "info", "--dir", str(tmp_path)]) == 0
    CacheStore(path).put("k", "POST", "http://h/x", CachedResponse(200, "application/json", b"{}", time.time(), "t"))
    assert CacheStore(path).get("k") is not None


def test_cache_clear_leaves_what_is_not_a_regular_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / CACHE_FILE).mkdir()
    (tmp_path / CACHE_FILE / "keep").write_text("x")
    assert ctxbench(["cache", "clear", "--dir", str(tmp_path)]) == 4
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "not a regular file" in err
    assert (tmp_path / CACHE_FILE / "keep").read_text() == "x"


@pytest.mark.parametrize("companion", ["", "-wal"])
@pytest.mark.parametrize("dangling", [True, False], ids=["dangling", "to_a_file"])
def test_a_symlinked_cache_file_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], companion: str, dangling: bool
) -> None:
    directory = tmp_path / "cache"
    directory.mkdir()
    target = tmp_path / "elsewhere" / "important.txt"
    if not dangling:
        target.parent.mkdir()
        target.write_text("important\n")
    link = directory / (CACHE_FILE + companion)
    link.symlink_to(target)
    cache = LLMCache(directory / CACHE_FILE)
    with FakeLLM(["live", "live"]) as llm, _client(cache) as client:
        with pytest.warns(CacheWarning, match=f"{link} is a symbolic link"):
            client.post(f"{llm.base_url}/v1/chat/completions", json=BODY)
        client.post(f"{llm.base_url}/v1/chat/completions", json=BODY)
        assert len(llm.requests) == 2
    for action in (["info"], ["clear"], ["clear", "--older-than", "1d"]):
        assert ctxbench(["cache", *action, "--dir", str(directory)]) == 4
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and f"{link} is a symbolic link (to {target})" in err
    assert link.is_symlink()
    if dangling:
        assert not target.parent.exists()
    else:
        assert target.read_text() == "important\n"
        assert sorted(p.name for p in target.parent.iterdir()) == ["important.txt"]
    if companion:
        assert not (directory / CACHE_FILE).exists()


def test_cache_warning_crosses_the_xdist_boundary() -> None:
    # A worker whose cache broke mid-run warns; xdist rebuilds the warning on the
    # controller from its module and class name. Before: AttributeError there, an
    # INTERNALERROR that ended the run.
    from xdist.remote import serialize_warning_message
    from xdist.workermanage import unserialize_warning_message

    sent = warnings.WarningMessage(CacheWarning("the LLM cache x is damaged"), CacheWarning, "t.py", 1)
    back = unserialize_warning_message(serialize_warning_message(sent))
    assert back.category is CacheWarning
    assert str(back.message) == "the LLM cache x is damaged"


def test_parse_age() -> None:
    assert parse_age("30d") == 30 * 86400 and parse_age("1.5h") == 5400
    with pytest.raises(ValueError, match="30d"):
        parse_age("30 days")


def test_a_system_that_hides_the_cache_miss_still_gets_a_row_naming_it(tmp_path: Path) -> None:
    from pytest_context_bench.engine import run_example

    class Wrapping:
        name = "wrapping"

        def __init__(self, url: str) -> None:
            self.url = url

        def process(self, example: dict) -> dict:
            try:
                with _client(LLMCache.in_dir(tmp_path, "replay")) as client:
                    client.post(self.url, json={**BODY, "q": example["question"]}).raise_for_status()
            except Exception:
                raise RuntimeError("Connection error.") from None
            return example

    with FakeLLM() as llm:
        row, raised = run_example(
            Wrapping(f"{llm.base_url}/v1/chat/completions"),
            {"id": "e1", "question": "q?", "answer": "a"},
            [],
        )
        assert llm.requests == []
    assert isinstance(raised, RuntimeError)
    assert row.error is not None
    assert row.error["type"] == "pytest_context_bench.cache.CacheMiss"
    assert row.error["message"].startswith("cache miss in replay mode: POST")
    assert row.error["message"].endswith("(the System raised RuntimeError: Connection error.)")


def test_evaluate_uses_the_active_cache_and_prices(tmp_path: Path) -> None:
    from pytest_context_bench import evaluate
    from pytest_context_bench.cache import set_active_cache
    from pytest_context_bench.pricing import set_active_prices
    from pytest_context_bench.systems import OpenAIProxy

    examples = [{"id": str(i), "question": f"q{i}?", "answer": "x"} for i in range(3)]
    previous = set_active_cache(LLMCache.in_dir(tmp_path))
    old_prices = set_active_prices({"m": Price(1.0, 2.0)})
    try:
        with FakeLLM(handler=lambda r: Reply(text="x", usage={"prompt_tokens": 10, "completion_tokens": 1})) as llm:
            proxy = OpenAIProxy(llm.base_url, model="m", name="p")
            first = evaluate(proxy, examples, progress=False)
            second = evaluate(proxy, examples, progress=False)
            assert len(llm.requests) == 3
    finally:
        set_active_cache(previous)
        set_active_prices(old_prices)
    assert first.summary["p"]["cost_usd"] == second.summary["p"]["cost_usd"] == pytest.approx(36 / 1e6)
    assert second.summary["p"]["saved_usd"] == pytest.approx(36 / 1e6)
    assert [r.metadata["llm_usage"]["cache_hits"] for r in second.rows] == [1, 1, 1]


def _open_at_once(path: str, barrier: Any, results: Any) -> None:
    barrier.wait()
    try:
        CacheStore(Path(path)).get("k")
        results.put("ok")
    except Exception as exc:  # noqa: BLE001 - reported to the test
        results.put(repr(exc))


def test_processes_creating_the_file_at_once_all_use_it(tmp_path: Path) -> None:
    """xdist workers open a new cache file at the same moment. Read one by one, the
    file's id and tables could come from two moments, and a worker took the file
    another one was creating for another program's (8 of 40 rounds before)."""
    ctx = multiprocessing.get_context("fork")
    for round_ in range(20):
        path = str(tmp_path / f"r{round_}" / CACHE_FILE)
        barrier, results = ctx.Barrier(6), ctx.Queue()
        procs = [
            ctx.Process(target=_open_at_once, args=(path, barrier, results))
            for _ in range(6)
        ]
        for p in procs:
            p.start()
        got = [results.get(timeout=120) for _ in procs]
        for p in procs:
            p.join()
        assert got == ["ok"] * 6, (round_, got)


def test_openai_sdk_does_not_retry_a_replay_miss(tmp_path: Path) -> None:
    """A replay-mode miss is an HTTP 404 with ``x-should-retry: false`` (the openai
    SDK retries 408, 409, 429, 5xx and connection errors): 30 misses through the real
    SDK, allowed 2 retries each, are 30 attempts, each raising NotFoundError with the
    miss's message at once (no retry, so no back-off); nothing reaches the server.
    The SDK used to get an exception from the transport, which it retried twice with
    back-off ("Connection error.")."""
    openai = pytest.importorskip("openai")
    from pytest_context_bench.transports import async_http_client, http_client

    cache = LLMCache.in_dir(tmp_path, "replay")
    with FakeLLM() as llm:
        client = openai.OpenAI(
            base_url=llm.url_v1, api_key="sk-test", max_retries=2,
            http_client=http_client(cache=cache),
        )
        for i in range(30):
            with call_scope(CallScope("s", "d", f"e{i}", trial=1)):
                with pytest.raises(openai.NotFoundError) as raised:
                    client.chat.completions.create(
                        model="m", messages=[{"role": "user", "content": f"q{i}"}]
                    )
            assert "cache miss in replay mode: POST" in str(raised.value)
            assert "nothing was sent" in str(raised.value)
            assert raised.value.response.headers["x-ctxbench-cache"] == "miss"
        assert cache.stats.misses == 30  # one attempt per call: no retry

        async def once() -> None:
            aclient = openai.AsyncOpenAI(
                base_url=llm.url_v1, api_key="sk-test", max_retries=2,
                http_client=async_http_client(cache=cache),
            )
            with pytest.raises(openai.NotFoundError, match="cache miss in replay mode"):
                await aclient.chat.completions.create(
                    model="m", messages=[{"role": "user", "content": "async"}]
                )

        asyncio.run(once())
        assert cache.stats.misses == 31
        assert llm.requests == []


def test_loopback_port_is_not_part_of_the_key() -> None:
    from pytest_context_bench.cache import key_url

    body = canonical_body(b'{"model": "m"}') or b""
    for a, b in [
        ("http://127.0.0.1:8000/v1/x", "http://127.0.0.1:41234/v1/x"),
        ("http://LOCALHOST:8000/v1/x", "http://localhost/v1/x"),
        ("http://[::1]:8000/v1/x", "http://[::1]:9/v1/x"),
        ("http://127.3.4.5:1/v1/x", "http://127.3.4.5:2/v1/x"),
    ]:
        assert key_url(a) == key_url(b)
        assert cache_key("POST", a, body, 1) == cache_key("POST", b, body, 1)
    for a, b in [
        ("http://llm.example:8000/v1/x", "http://llm.example:9000/v1/x"),
        ("http://10.0.0.1:8000/v1/x", "http://10.0.0.1:8001/v1/x"),
        ("http://127.0.0.1:8000/v1/x", "http://localhost:8000/v1/x"),  # another host
        ("http://127.0.0.1:8000/v1/x", "https://127.0.0.1:8000/v1/x"),
    ]:
        assert cache_key("POST", a, body, 1) != cache_key("POST", b, body, 1)


def test_a_local_server_on_a_new_port_replays_and_another_host_is_named(
    tmp_path: Path,
) -> None:
    """Recorded against a loopback server on one port, replayed against another on a
    new port: every request is a hit, none is sent. A replay miss whose only
    difference is the host (localhost instead of 127.0.0.1) says so, naming the
    recorded URL."""
    replay = LLMCache.in_dir(tmp_path, "replay")
    with FakeLLM(["recorded"]) as first, FakeLLM(["never"]) as second:
        recorded = f"{first.base_url}/v1/chat/completions"
        with _client(LLMCache.in_dir(tmp_path, "once")) as client:
            with call_scope(CallScope("s", "d", "e", trial=1)):
                client.post(recorded, json=BODY)
        assert second.base_url != first.base_url
        client = _client(replay)
        with call_scope(CallScope("s", "d", "e", trial=1)):
            reply = client.post(f"{second.base_url}/v1/chat/completions", json=BODY)
            assert reply.json()["choices"][0]["message"]["content"] == "recorded"
            port = second.base_url.rsplit(":", 1)[1]
            missed = client.post(
                f"http://localhost:{port}/v1/chat/completions", json=BODY
            )
            other = client.post(
                f"{second.base_url}/v1/chat/completions", json={**BODY, "n": 2}
            )
        client.close()
        assert second.requests == [] and len(first.requests) == 1
    assert missed.status_code == 404
    message = missed.json()["error"]["message"]
    assert f"recorded for another host: {recorded}; only the host differs" in message
    assert "only the host differs" not in other.json()["error"]["message"]


def test_a_cache_file_without_the_hostless_column_gains_it(tmp_path: Path) -> None:
    """A file written before the hostless column (same schema version) is read, and
    its new entries can name their host on a miss."""
    path = tmp_path / CACHE_FILE
    conn = sqlite3.connect(path)
    conn.execute(
        "CREATE TABLE entries (key TEXT PRIMARY KEY, method TEXT NOT NULL, url TEXT"
        " NOT NULL, status INTEGER NOT NULL, content_type TEXT NOT NULL, body BLOB NOT"
        " NULL, created REAL NOT NULL, version TEXT NOT NULL)"
    )
    conn.execute("INSERT INTO entries VALUES ('old', 'POST', 'http://h/x', 200, 'application/json', x'7b7d', 1.0, 't')")
    conn.execute("PRAGMA application_id = 1668577378")
    conn.execute("PRAGMA user_version = 1")
    conn.commit()
    conn.close()
    store = CacheStore(path)
    assert store.get("old") is not None
    store.put("new", "POST", "http://h/x", CachedResponse(200, "application/json", b"{}", 2.0, "t"), "any")
    assert store.other_hosts("any") == ["http://h/x"]
    store.close()
