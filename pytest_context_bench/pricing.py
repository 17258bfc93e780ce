"""Token usage → money, from a price table the user gives.

No price is shipped as truth: prices change and differ by provider, so a run has a
price only for the models named with ``--ctxbench-price=MODEL=IN/OUT[/CACHED]``
(US dollars per million prompt / completion / cached prompt tokens; cached defaults
to the prompt price). :func:`usage_summary` folds the usage entries the HTTP
transports recorded during one call into the numbers a row carries.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = [
    "Price",
    "active_prices",
    "parse_price",
    "set_active_prices",
    "usage_cost",
    "usage_summary",
]


@dataclass(frozen=True)
class Price:
    """US dollars per million tokens.

    :param input: per million prompt tokens.
    :param output: per million completion tokens.
    :param cached: per million cached prompt tokens (``None``: the prompt price).
    :param cache_write: per million prompt tokens written to the provider's prompt
        cache (Anthropic's ``cache_creation_input_tokens``; ``None``: the prompt
        price).
    """

    input: float
    output: float
    cached: float | None = None
    cache_write: float | None = None

    def cost(
        self, prompt: int, completion: int, cached: int = 0, written: int = 0
    ) -> float:
        cached = min(max(cached, 0), prompt)
        written = min(max(written, 0), prompt - cached)
        rate = self.input if self.cached is None else self.cached
        write = self.input if self.cache_write is None else self.cache_write
        return (
            (prompt - cached - written) * self.input
            + cached * rate
            + written * write
            + completion * self.output
        ) / 1e6


def parse_price(spec: str) -> tuple[str, Price]:
    """``"gpt-4o-mini=0.15/0.60"`` → ``("gpt-4o-mini", Price(0.15, 0.6))``; a third
    number is the cached prompt price, a fourth the cache-write price
    (``claude-x=3/15/0.30/3.75``).

    :raises ValueError: with the expected form, for anything else.
    """
    model, sep, numbers = str(spec).rpartition("=")
    parts = numbers.split("/")
    form = (
        "MODEL=IN/OUT or MODEL=IN/OUT/CACHED[/CACHE_WRITE] (US dollars per million"
        " tokens)"
    )
    if not sep or not model.strip() or len(parts) not in (2, 3, 4):
        raise ValueError(f"expected {form}, given: {spec!r}")
    values = []
    for part in parts:
        try:
            value = float(part)
        except ValueError:
            value = math.nan
        if not math.isfinite(value) or value < 0:
            raise ValueError(
                f"prices must be numbers >= 0; expected {form}, given: {spec!r}"
            )
        values.append(value)
    return model.strip(), Price(
        values[0],
        values[1],
        values[2] if len(values) >= 3 else None,
        values[3] if len(values) == 4 else None,
    )


_PRICES: dict[str, Price] = {}


def active_prices() -> dict[str, Price]:
    """The run's price table (set by the pytest plugin)."""
    return _PRICES


def set_active_prices(prices: Mapping[str, Price]) -> dict[str, Price]:
    """Replace the run's price table; returns the previous one."""
    global _PRICES
    previous, _PRICES = _PRICES, dict(prices)
    return previous


def usage_cost(entry: Mapping[str, Any], prices: Mapping[str, Price]) -> float | None:
    """The money of one usage entry, or ``None`` when its model has no price."""
    price = prices.get(str(entry.get("model") or ""))
    if price is None:
        return None
    return price.cost(
        int(entry.get("prompt_tokens", 0)),
        int(entry.get("completion_tokens", 0)),
        int(entry.get("cached_tokens", 0)),
        int(entry.get("cache_write_tokens", 0)),
    )


def usage_summary(
    entries: Iterable[Mapping[str, Any]], prices: Mapping[str, Price]
) -> dict[str, Any] | None:
    """One call's usage entries → what a row carries, or ``None`` for no entries.

    ``calls`` (requests really sent), ``cache_hits``, ``prompt_tokens``,
    ``completion_tokens``, ``cached_tokens`` (all replies, hits included: the row
    costs the same replayed or not), ``saved_tokens`` (those of the hits),
    ``models``, ``cache_write_tokens`` (prompt tokens written to the provider's
    cache, when a reply reports them), ``estimated`` (how many replies' tokens were
    counted with the tokenizer, a stream that reported none; when there are any),
    and, when prices are given, ``cost_usd`` and ``saved_usd`` (``None``
    with ``unpriced_models`` when a model has no price). A reply whose usage could
    not be read (``bad_usage``: NaN, negative...) counts as a call whose tokens are
    unknown: ``bad_usage`` lists why, and the money is ``None``, never $0.
    """
    entries = [e for e in entries if "error" not in e]
    if not entries:
        return None
    bad = [str(e["bad_usage"]) for e in entries if "bad_usage" in e]
    out: dict[str, Any] = {
        "calls": 0,
        "cache_hits": 0,
        "prompt_tokens": 0,
        "completion_tokens": 0,
        "cached_tokens": 0,
        "saved_tokens": 0,
    }
    models: list[str] = []
    unpriced: list[str] = []
    cost = saved = 0.0
    for e in entries:
        hit = e.get("cache") == "hit"
        out["cache_hits" if hit else "calls"] += 1
        if "bad_usage" in e:
            continue
        for name in ("cache_write_tokens", "estimated"):
            if e.get(name):
                out[name] = out.get(name, 0) + int(e[name])
        tokens = int(e.get("prompt_tokens", 0)) + int(e.get("completion_tokens", 0))
        for name in ("prompt_tokens", "completion_tokens", "cached_tokens"):
            out[name] += int(e.get(name, 0))
        if hit:
            out["saved_tokens"] += tokens
        model = str(e.get("model") or "")
        if model and model not in models:
            models.append(model)
        if prices:
            money = usage_cost(e, prices)
            if money is None:
                if tokens and model not in unpriced:
                    unpriced.append(model or "<no model>")
            else:
                cost += money
                saved += money if hit else 0.0
    out["models"] = models
    if bad:
        out["bad_usage"] = bad
    if prices:
        unknown = bool(unpriced or bad)
        out["cost_usd"] = None if unknown else cost
        out["saved_usd"] = None if unknown else saved
        if unpriced:
            out["unpriced_models"] = unpriced
    return out
