"""The LLM cache and the price table in a pytest run.

Every process (controller and xdist workers) activates the same cache file and price
table in ``pytest_configure`` (:func:`activate`), so the HTTP transports of
:mod:`pytest_context_bench.transports` find them. Nothing is created on disk until
the first LLM call. The controller checks an existing file once, up front: an
unusable file is one line, and the run goes on without the cache (``replay`` mode
stops instead: it has nothing to replay). What the cache did is read back from the
rows (each carries its calls' usage), so in-process and ``-n 2`` runs are summed the
same way (:func:`llm_summary`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from .options import CACHE, PRICE, Settings

#: a row's error type when a connection of its System call was refused in replay
#: mode (netguard.REFUSED_TYPE; not imported: this module is loaded by every run)
REFUSED_TYPE = "pytest_context_bench.netguard.ReplayConnectionRefused"

if TYPE_CHECKING:
    # Imported where used: the cache imports sqlite3, and the plugin imports this
    # module in every pytest run (docs/overhead.md).
    from ..cache import LLMCache

__all__ = [
    "BROKEN_KEY",
    "UNATTRIBUTED_KEY",
    "activate",
    "asked",
    "auto_unknown",
    "mismatch_warning",
    "deactivate",
    "default_cache_dir",
    "llm_summary",
    "summary_lines",
]

#: workerinput key: the controller found the cache file unusable (its message).
BROKEN_KEY = "ctxbench_cache_broken"
#: workeroutput key: the usage entries of requests whose example was unknown.
UNATTRIBUTED_KEY = "ctxbench_unattributed"
#: workeroutput key: each endpoint's adaptive call budget (concurrency.py).
BUDGET_KEY = "ctxbench_budget"
#: workeroutput key: the requests sent to each endpoint (calls.take_attempts).
ATTEMPTS_KEY = "ctxbench_attempts"


def default_cache_dir(config: pytest.Config) -> Path:
    """``<pytest cache_dir>/d/ctxbench`` (where ``config.cache.mkdir`` puts dirs)."""
    try:
        name = str(config.getini("cache_dir"))
    except ValueError:  # -p no:cacheprovider
        name = ".pytest_cache"
    base = Path(name).expanduser()
    if not base.is_absolute():
        base = config.rootpath / base
    return base / "d" / "ctxbench"


def asked(config: pytest.Config, settings: Settings) -> bool:
    """True when an option or ini key asks for a benchmark run or for the cache.

    The plugin does nothing unless asked: a project whose own tests call an LLM
    through :class:`~pytest_context_bench.llm.LLMClient` gets no cache from merely
    having the plugin installed. Marked tests and the ``ctxbench_http_client``
    fixture activate it too, when they are used.
    """
    from .options import CACHE_DIR, JUDGE_URL, PROXY

    if settings.datasets or settings.proxies or settings.prices:
        return True
    for opt in (CACHE, CACHE_DIR, JUDGE_URL, PROXY, PRICE):
        if config.getoption(opt.dest) is not None or config.getini(opt.ini):
            return True
    return False


def activate(
    config: pytest.Config, settings: Settings, worker: bool
) -> tuple[LLMCache, Any, Any]:
    """Build the run's cache and make it and the prices active.

    :returns: the cache and the previous active cache and prices (for
        :func:`deactivate`).
    :raises pytest.UsageError: when the file is unusable in ``replay`` mode.
    """
    from ..cache import CacheFileError, LLMCache, set_active_cache
    from ..pricing import set_active_prices

    directory = settings.cache_dir or default_cache_dir(config)
    cache = LLMCache.in_dir(directory, settings.cache_mode)
    if worker:
        broken = getattr(config, "workerinput", {}).get(BROKEN_KEY)
        if broken:
            cache.broken = str(broken)
    elif cache.mode != "off":
        try:
            # A link (even a dangling one) is refused before SQLite could follow it.
            cache.store.check_links()
            if cache.path.exists():
                cache.store.info()
        except CacheFileError as exc:
            if cache.mode == "replay":
                raise pytest.UsageError(
                    f"{CACHE.flag}=replay: {exc}".replace(
                        "; the run goes on without the cache.",
                        "; nothing can be replayed.",
                    )
                ) from None
            cache.broken = str(exc)
        finally:
            cache.store.close()
    previous = set_active_cache(cache)
    prices = set_active_prices(settings.prices)
    return cache, previous, prices


def deactivate(cache: LLMCache, previous: Any, prices: Any) -> None:
    from ..cache import set_active_cache
    from ..pricing import set_active_prices

    cache.store.close()
    set_active_cache(previous)
    set_active_prices(prices)


def llm_summary(
    rows: Iterable[Any],
    cache: LLMCache | None,
    settings: Settings,
    unattributed: Iterable[dict[str, Any]] = (),
    endpoints: dict[str, dict[str, int]] | None = None,
) -> dict[str, Any] | None:
    """Cache hits and misses, calls sent, tokens and money (spent and saved) over the
    rows' measured usage and the run's ``unattributed`` requests (made while several
    example calls were in flight, from threads outside their call's context: see
    calls.py), and the requests sent to each endpoint (``endpoints``, from
    :func:`~pytest_context_bench.calls.take_attempts`: there whenever a request was
    sent, answered or not); ``None`` when no LLM call was measured nor sent."""
    from ..pricing import add_mismatch, usage_summary

    unattributed = list(unattributed)
    loose = usage_summary(unattributed, settings.prices or {})
    totals = {
        "calls": 0,
        "cache_hits": 0,
        "prompt_tokens": 0,
        "completion_tokens": 0,
        "cached_tokens": 0,
        "saved_tokens": 0,
    }
    money = {"cost_usd": 0.0, "judge_cost_usd": 0.0, "saved_usd": 0.0}
    models: dict[str, None] = {}
    unpriced: dict[str, None] = {}
    sources: dict[str, str] = {}
    mismatch: dict[tuple[str, str], dict[str, Any]] = {}
    #: the models replies named when another than the one asked (a price given
    #: for one of them was used)
    replied: dict[str, None] = {}
    misses = 0
    seen = False
    # connections System calls opened past the cache (netguard): refused in replay
    # mode, else made; how many, in how many rows, and to which addresses
    past = {"refused_connections": 0, "bypassed_connections": 0}
    refused_rows = 0
    addresses: dict[str, None] = {}
    for row in rows:
        md = row.metadata
        for key in past:
            counts = md.get(key)
            if isinstance(counts, dict) and counts:
                past[key] += sum(int(n) for n in counts.values())
                addresses.update(dict.fromkeys(map(str, counts)))
        for usage_key, cost_key, saved_key in (
            ("llm_usage", "cost_usd", "saved_usd"),
            ("judge_usage", "judge_cost_usd", "judge_saved_usd"),
        ):
            usage = md.get(usage_key)
            if not isinstance(usage, dict):
                continue
            seen = True
            for k in totals:
                totals[k] += int(usage.get(k, 0))
            models.update(dict.fromkeys(usage.get("models", ())))
            unpriced.update(dict.fromkeys(usage.get("unpriced_models", ())))
            sources.update(usage.get("price_sources") or {})
            add_mismatch(mismatch, usage.get("model_mismatch"))
            replied.update(_replied(usage))
            for key, target in ((cost_key, cost_key), (saved_key, "saved_usd")):
                value = md.get(key)
                if isinstance(value, (int, float)):
                    money[target] += float(value)
                elif settings.prices:
                    money[target] = math.nan
        error = row.error or {}
        refused_rows += error.get("type") == REFUSED_TYPE
        if "cache miss in replay mode" in str(error.get("message", "")):
            misses += 1
    for entry in unattributed:
        # made from a System's own thread while several calls were watched
        if "bypass" in entry:
            refused = bool(entry.get("refused"))
            past["refused_connections" if refused else "bypassed_connections"] += 1
            addresses[str(entry["bypass"])] = None
    if loose is not None:
        seen = True
        for k in totals:
            totals[k] += int(loose.get(k, 0))
        models.update(dict.fromkeys(loose.get("models", ())))
        unpriced.update(dict.fromkeys(loose.get("unpriced_models", ())))
        sources.update(loose.get("price_sources") or {})
        add_mismatch(mismatch, loose.get("model_mismatch"))
        replied.update(_replied(loose))
        for key in ("cost_usd", "saved_usd"):
            value = loose.get(key)
            if isinstance(value, (int, float)):
                money[key] += float(value)
            elif settings.prices:
                money[key] = math.nan
    endpoints = {k: v for k, v in (endpoints or {}).items() if any(v.values())}
    if not seen and not misses and not any(past.values()) and not endpoints:
        return None
    out: dict[str, Any] = {
        "cache": {
            "mode": settings.cache_mode,
            "path": str(cache.path) if cache is not None else None,
            "unusable": cache.broken if cache is not None else None,
            "hits": totals["cache_hits"],
            # misses: requests not answered from the cache (sent, or refused in replay)
            "misses": totals["calls"] + misses,
            "replay_misses": misses,
            **past,
            "refused_examples": refused_rows,
            "bypass_addresses": list(addresses)[:_ADDRESSES],
        },
        "calls_sent": totals["calls"],
        "tokens": {
            k: totals[k]
            for k in ("prompt_tokens", "completion_tokens", "cached_tokens")
        },
        "saved_tokens": totals["saved_tokens"],
        "models": list(models),
    }
    if mismatch:
        # Replies that named another model than the one asked for (warned once).
        out["model_mismatch"] = list(mismatch.values())
    if endpoints:
        out["endpoints"] = {k: dict(v) for k, v in sorted(endpoints.items())}
    if loose is not None:
        # Counted above; shown apart, since no row (so no suite's gate) has them.
        out["unattributed"] = loose
    if settings.prices:
        out["money"] = {
            "cost_usd": money["cost_usd"],
            "judge_cost_usd": money["judge_cost_usd"],
            "total_cost_usd": money["cost_usd"] + money["judge_cost_usd"],
            "saved_usd": money["saved_usd"],
            "unpriced_models": list(unpriced),
            "prices_unused": [
                m for m in settings.prices if m not in models and m not in replied
            ],
            # model → what priced it: --ctxbench-price, or genai-prices' match
            "price_sources": {m: sources[m] for m in models if m in sources},
        }
        if getattr(settings.prices, "auto", False):
            from ..pricing import genai_prices_version

            out["money"]["genai_prices"] = {
                "version": genai_prices_version(),
                "provider": getattr(settings.prices, "provider", None),
            }
    return out


#: addresses named in the summary and the JSON report at most
_ADDRESSES = 10


def _replied(usage: dict[str, Any]) -> dict[str, None]:
    """The models a usage's replies named besides the ones asked for."""
    calls = usage.get("per_call")
    return dict.fromkeys(
        str(c["reported_model"])
        for c in (calls if isinstance(calls, list) else ())
        if isinstance(c, dict) and c.get("reported_model")
    )


def mismatch_warning(summary: dict[str, Any] | None) -> str | None:
    """The one warning of a run whose LLM replies named another model than the one
    asked for (``o1-pro`` asked, ``gpt-4o-mini`` replied), or ``None``."""
    said = (summary or {}).get("model_mismatch")
    if not said:
        return None
    pairs = "; ".join(
        f"{e['asked']!r} asked, {e['reported']!r} in the reply"
        f" ({e['calls']} call{'s' if e['calls'] != 1 else ''})"
        for e in said
    )
    priced = (
        " Each such call is priced at the higher of the two models' prices, since"
        " which of them the endpoint bills is not known."
        if "money" in (summary or {})
        else ""
    )
    return (
        f"LLM replies named another model than the one asked for: {pairs}. A proxy's"
        " fallback or alias, or a wrong routing, answered: the run measured another"
        f" model than it names.{priced} Ask for the model the endpoint serves, or fix"
        " its routing (a dated snapshot of the model asked for, gpt-4o-mini-2024-07-18"
        " for gpt-4o-mini, is the same model and not counted)."
    )


def auto_unknown(summary: dict[str, Any] | None, settings: Settings) -> str | None:
    """Under ``--ctxbench-price=auto``: the one error naming the models that neither
    genai-prices nor an explicit price priced (their money is unknown, never $0),
    or ``None``."""
    if not getattr(settings.prices, "auto", False) or summary is None:
        return None
    money = summary.get("money") or {}
    unknown = list(money.get("unpriced_models") or ())
    if not unknown:
        return None
    gp = money.get("genai_prices") or {}
    provider = gp.get("provider")
    where = f"provider {provider!r}" if provider else "any provider"
    first = unknown[0]
    name = "" if provider else f" or name the provider ({PRICE.flag}=auto:PROVIDER)"
    return (
        f"FAILED {PRICE.flag}=auto: genai-prices {gp.get('version', '?')} has no price"
        f" for model(s) {', '.join(map(repr, unknown))} (at {where}; matched on the"
        " model the endpoint reported, then the one requested), so their cost is"
        f" unknown. Give each a price ({PRICE.flag}={first}=IN/OUT, US dollars per"
        f" million tokens){name}"
    )


def summary_lines(
    summary: dict[str, Any] | None, cache: LLMCache | None
) -> list[tuple[str, dict[str, Any]]]:
    """The terminal lines of the LLM section (a broken cache file first)."""
    from ..report.llm_section import llm_lines

    lines: list[tuple[str, dict[str, Any]]] = []
    if cache is not None and cache.broken:
        lines.append((cache.broken, {"yellow": True}))
    return lines + llm_lines(summary)
