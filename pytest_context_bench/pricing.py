"""Token usage → money, from a price table the user gives, or from genai-prices.

No price is shipped as truth: prices change and differ by provider. A run has a price
for the models named with ``--ctxbench-price=MODEL=IN/OUT[/CACHED]`` (US dollars per
million prompt / completion / cached prompt tokens; cached defaults to the prompt
price) and, with ``--ctxbench-price=auto`` (or ``auto:PROVIDER``), for the models the
`genai-prices <https://pypi.org/project/genai-prices/>`_ package knows (its data ships
in the package: offline). A :class:`PriceTable` holds both; an explicit entry
overrides genai-prices for its model. :func:`usage_summary` folds the usage entries
the HTTP transports recorded during one call into the numbers a row carries, and says
which source priced each model.

genai-prices is imported only when ``auto`` is asked (the optional extra
``prices``).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

__all__ = [
    "AUTO",
    "EXPLICIT",
    "Price",
    "PriceTable",
    "active_prices",
    "auto_cost",
    "genai_prices_version",
    "parse_price",
    "set_active_prices",
    "usage_cost",
    "usage_summary",
]

#: ``--ctxbench-price=auto`` / ``auto:PROVIDER``.
AUTO = "auto"
#: the source of an explicit ``--ctxbench-price=MODEL=IN/OUT`` price.
EXPLICIT = "--ctxbench-price"


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


class PriceTable(dict[str, Price]):
    """Explicit prices (model → :class:`Price`), and whether genai-prices prices the
    other models (``auto``, with ``provider`` when one is named).

    True when it prices anything (explicit entries, or ``auto``).
    """

    def __init__(
        self,
        explicit: Mapping[str, Price] | Iterable[tuple[str, Price]] = (),
        *,
        auto: bool = False,
        provider: str | None = None,
    ) -> None:
        super().__init__(explicit)
        self.auto = auto
        self.provider = provider

    def __bool__(self) -> bool:
        return self.auto or len(self) > 0

    @classmethod
    def of(cls, prices: Mapping[str, Price]) -> PriceTable:
        """``prices`` as a table (a plain mapping: explicit prices only)."""
        return cls(
            prices,
            auto=bool(getattr(prices, "auto", False)),
            provider=getattr(prices, "provider", None),
        )


_PRICES: PriceTable = PriceTable()


def active_prices() -> PriceTable:
    """The run's price table (set by the pytest plugin)."""
    return _PRICES


def set_active_prices(prices: Mapping[str, Price]) -> PriceTable:
    """Replace the run's price table; returns the previous one."""
    global _PRICES
    previous, _PRICES = _PRICES, PriceTable.of(prices)
    return previous


def genai_prices_version() -> str:
    """The installed genai-prices' version (its price data ships with it).

    :raises ImportError: when it is not installed.
    """
    import genai_prices

    return str(genai_prices.__version__)


def _loopback(url: str) -> bool:
    from .cache import is_loopback

    return is_loopback(urlsplit(url).hostname or "")


@functools.lru_cache(maxsize=512)
def _auto_match(
    model: str, provider: str | None, api_url: str | None
) -> tuple[str, str, str] | None:
    """(provider id, model id, how the provider was found) of ``model`` in
    genai-prices' data, or ``None`` when it has no price for it."""
    from genai_prices.data_snapshot import get_snapshot

    snapshot = get_snapshot()
    tries: list[tuple[str | None, str | None, str]] = []
    if provider:
        tries.append((provider, None, "provider named"))
    else:
        if api_url and not _loopback(api_url):
            tries.append((None, api_url, "base URL"))
        tries.append((None, None, "model name"))
    for provider_id, url, how in tries:
        try:
            found, info = snapshot.find_provider_model(model, None, provider_id, url)
        except LookupError:
            continue
        return str(found.id), str(info.id), how
    return None


def auto_cost(
    entry: Mapping[str, Any], provider: str | None = None
) -> tuple[float, str] | None:
    """The money of one usage entry by genai-prices, and its source
    (``genai-prices: PROVIDER/MODEL (how)``), or ``None`` when genai-prices has no
    price for its model.

    The model is the one the endpoint reported (``reported_model``, e.g. a dated
    variant), else the one the request asked for; the provider is ``provider`` when
    named, else inferred from the request's URL (``api_url``; a loopback host says
    nothing), else from the model's name.
    """
    import genai_prices

    models = [str(entry.get(k) or "") for k in ("reported_model", "model")]
    api_url = entry.get("api_url")
    for model in dict.fromkeys(m for m in models if m):
        match = _auto_match(model, provider, str(api_url) if api_url else None)
        if match is None:
            continue
        provider_id, model_id, how = match
        usage = genai_prices.Usage(
            input_tokens=int(entry.get("prompt_tokens", 0)),
            cache_read_tokens=min(
                int(entry.get("cached_tokens", 0)), int(entry.get("prompt_tokens", 0))
            ),
            cache_write_tokens=int(entry.get("cache_write_tokens", 0)),
            output_tokens=int(entry.get("completion_tokens", 0)),
        )
        calc = genai_prices.calc_price(usage, model, provider_id=provider_id)
        return float(calc.total_price), f"genai-prices: {provider_id}/{model_id} ({how})"
    return None


def usage_cost(entry: Mapping[str, Any], prices: Mapping[str, Price]) -> float | None:
    """The money of one usage entry, or ``None`` when its model has no price."""
    priced = _priced(entry, prices)
    return None if priced is None else priced[0]


def _priced(
    entry: Mapping[str, Any], prices: Mapping[str, Price]
) -> tuple[float, str] | None:
    """(money, source) of one usage entry; an explicit price first."""
    for key in ("model", "reported_model"):
        price = prices.get(str(entry.get(key) or ""))
        if price is not None:
            money = price.cost(
                int(entry.get("prompt_tokens", 0)),
                int(entry.get("completion_tokens", 0)),
                int(entry.get("cached_tokens", 0)),
                int(entry.get("cache_write_tokens", 0)),
            )
            return money, EXPLICIT
    if getattr(prices, "auto", False):
        return auto_cost(entry, getattr(prices, "provider", None))
    return None


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
    with ``unpriced_models`` when a model has no price) and ``price_sources`` (model
    → what priced it: ``--ctxbench-price``, or ``genai-prices: PROVIDER/MODEL (how
    the provider was found)``). A reply whose usage could
    not be read (``bad_usage``: NaN, negative...) counts as a call whose tokens are
    unknown: ``bad_usage`` lists why, and the money is ``None``, never $0.
    """
    # A replay miss (error) and a connection past the cache (bypass) are no reply.
    entries = [e for e in entries if "error" not in e and "bypass" not in e]
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
    sources: dict[str, str] = {}
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
            priced = _priced(e, prices)
            if priced is None:
                if tokens and model not in unpriced:
                    unpriced.append(model or "<no model>")
            else:
                money, sources[model or "<no model>"] = priced
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
        if sources:
            out["price_sources"] = sources
    return out
