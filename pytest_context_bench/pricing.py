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

A reply that names another model than the one asked for (``o1-pro`` asked,
``gpt-4o-mini`` in the reply; :func:`same_model` tells a dated snapshot of the same
model, ``gpt-4o-mini-2024-07-18``, from another model) is priced at the higher of
the two models' prices, and counted (``model_mismatch``). With prices, a row keeps
each reply's tokens and what priced it (``per_call``) and the run writes its price
table (:func:`price_record`), so that every reader of a report recomputes the row's
money (:mod:`pytest_context_bench.report.money`).

genai-prices is imported only when ``auto`` is asked (the optional extra
``prices``).
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

__all__ = [
    "AUTO",
    "EXPLICIT",
    "Price",
    "PriceTable",
    "active_prices",
    "add_mismatch",
    "auto_cost",
    "genai_prices_version",
    "parse_price",
    "price_record",
    "same_model",
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


def price_record(prices: Mapping[str, Price]) -> dict[str, Any] | None:
    """The price table of a run as its JSON report keeps it (``run.options.prices``,
    and so the baseline's ``options``), for the readers that recompute the rows'
    money; ``None`` when the run has no price.

    ``explicit``: model → ``input``, ``output``, ``cached``, ``cache_write`` (US
    dollars per million tokens; ``null``: the prompt price); ``auto`` and
    ``provider`` (``--ctxbench-price=auto[:PROVIDER]``) and, with ``auto``,
    ``genai_prices``: the version of genai-prices whose data priced the other models.
    """
    if not prices:
        return None
    auto = bool(getattr(prices, "auto", False))
    out: dict[str, Any] = {
        "explicit": {
            str(model): {
                "input": price.input,
                "output": price.output,
                "cached": price.cached,
                "cache_write": price.cache_write,
            }
            for model, price in sorted(prices.items())
        },
        "auto": auto,
        "provider": getattr(prices, "provider", None),
    }
    if auto:
        out["genai_prices"] = genai_prices_version()
    return out


def _loopback(url: str) -> bool:
    from .cache import is_loopback

    return is_loopback(urlsplit(url).hostname or "")


#: The end of a model name that names a snapshot of a model, not another model: a
#: date or version (``-2024-07-18``, ``-20241022``, ``-0613``, ``-001``, Vertex's
#: ``@20240620``), ``-latest``, Ollama's ``:latest``.
_SNAPSHOT = re.compile(
    r"(?:[-@](?:\d{4}-\d{2}-\d{2}|\d{8}|\d{4}|\d{3}|latest)|:latest)$"
)


def _family(name: str) -> str:
    """``name`` without provider prefix and snapshot suffixes, lower-cased."""
    name = name.strip().lower().rsplit("/", 1)[-1]
    while True:
        shorter = _SNAPSHOT.sub("", name)
        if shorter == name or not shorter:
            return name
        name = shorter


def same_model(asked: str, reported: str) -> bool:
    """Whether a reply that names the model ``reported`` ran the model ``asked``
    for: the same name up to letter case, a provider prefix (``openai/gpt-4o``) and
    a snapshot suffix. OpenAI answers ``gpt-4o-mini`` with
    ``gpt-4o-mini-2024-07-18`` and ``gpt-4`` with ``gpt-4-0613``, Anthropic
    ``claude-3-5-sonnet-latest`` with ``claude-3-5-sonnet-20241022``: the same model.
    ``o1-pro`` answered by ``gpt-4o-mini``, or ``gpt-4o`` by
    ``gpt-4o-mini-2024-07-18``, is another model. An empty name (a request
    without ``model``, a reply without one) compares with nothing: true.
    """
    if not asked or not reported:
        return True
    return _family(asked) == _family(reported)


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


@dataclass(frozen=True)
class _Priced:
    """The money of one reply, what priced it and under which name."""

    money: float
    #: ``--ctxbench-price``, or ``genai-prices: PROVIDER/MODEL (how)``
    source: str
    #: what a row's ``per_call`` entry keeps: ``("price", NAME)`` (an explicit
    #: price) or ``("genai", "PROVIDER/MODEL")``
    key: tuple[str, str]
    #: the model name whose price it is (the one asked for, or the one replied)
    name: str = field(default="")


def _tokens(entry: Mapping[str, Any]) -> tuple[int, int, int, int]:
    return (
        int(entry.get("prompt_tokens", 0)),
        int(entry.get("completion_tokens", 0)),
        int(entry.get("cached_tokens", 0)),
        int(entry.get("cache_write_tokens", 0)),
    )


def _explicit(
    name: str, entry: Mapping[str, Any], prices: Mapping[str, Price]
) -> _Priced | None:
    price = prices.get(name) if name else None
    if price is None:
        return None
    return _Priced(price.cost(*_tokens(entry)), EXPLICIT, ("price", name), name)


def _auto_one(
    name: str, entry: Mapping[str, Any], provider: str | None
) -> _Priced | None:
    """The genai-prices money of ``entry`` as model ``name``, or ``None``."""
    import genai_prices

    api_url = entry.get("api_url")
    match = _auto_match(name, provider, str(api_url) if api_url else None)
    if match is None:
        return None
    provider_id, model_id, how = match
    prompt, completion, cached, written = _tokens(entry)
    usage = genai_prices.Usage(
        input_tokens=prompt,
        cache_read_tokens=min(cached, prompt),
        cache_write_tokens=written,
        output_tokens=completion,
    )
    calc = genai_prices.calc_price(usage, name, provider_id=provider_id)
    return _Priced(
        float(calc.total_price),
        f"genai-prices: {provider_id}/{model_id} ({how})",
        ("genai", f"{provider_id}/{model_id}"),
        name,
    )


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
    models = [str(entry.get(k) or "") for k in ("reported_model", "model")]
    for model in dict.fromkeys(m for m in models if m):
        priced = _auto_one(model, entry, provider)
        if priced is not None:
            return priced.money, priced.source
    return None


def usage_cost(entry: Mapping[str, Any], prices: Mapping[str, Price]) -> float | None:
    """The money of one usage entry, or ``None`` when its model has no price."""
    priced, _ = _price_of(entry, prices)
    return None if priced is None else priced.money


def _price_of(
    entry: Mapping[str, Any], prices: Mapping[str, Price]
) -> tuple[_Priced | None, bool]:
    """(what prices one usage entry, whether its reply named another model).

    The reply's model is that of the request, or a snapshot of it
    (:func:`same_model`): an explicit price of the model asked for, else of the one
    replied, else genai-prices' on the one replied, then on the one asked. Another
    model: each name is priced (its explicit price, else genai-prices'), and the
    higher money is taken, since which of the two the endpoint bills is not known
    (``o1-pro`` asked and ``gpt-4o-mini`` replied is priced as ``o1-pro``).
    """
    model = str(entry.get("model") or "")
    reported = str(entry.get("reported_model") or "")
    auto = bool(getattr(prices, "auto", False))
    provider = getattr(prices, "provider", None)
    if same_model(model, reported):
        for name in (model, reported):
            priced = _explicit(name, entry, prices)
            if priced is not None:
                return priced, False
        if auto:
            for name in dict.fromkeys(n for n in (reported, model) if n):
                priced = _auto_one(name, entry, provider)
                if priced is not None:
                    return priced, False
        return None, False
    found: list[_Priced] = []
    for name in (model, reported):
        priced = _explicit(name, entry, prices)
        if priced is None and auto:
            priced = _auto_one(name, entry, provider)
        if priced is not None:
            found.append(priced)
    return (max(found, key=lambda p: p.money) if found else None), True


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
    ``model_mismatch`` (when a reply named another model than the one asked for:
    ``asked``, ``reported``, ``calls`` and, with prices, ``priced_as``, the name
    whose price was taken, the higher one), and, when prices are given,
    ``cost_usd`` and ``saved_usd`` (``None`` with ``unpriced_models`` when a model
    has no price), ``price_sources`` (model → what priced it: ``--ctxbench-price``,
    or ``genai-prices: PROVIDER/MODEL (how the provider was found)``) and
    ``per_call``: each reply's ``model``, ``reported_model`` (when it named
    another), tokens, ``hit`` (a cache hit) and what priced it (``price``: the
    model of an explicit price; ``genai``: ``PROVIDER/MODEL`` of genai-prices;
    neither: no price), from which the readers of a report recompute the money.
    A reply whose usage could
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
    mismatched: dict[tuple[str, str], dict[str, Any]] = {}
    per_call: list[dict[str, Any]] = []
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
        reported = str(e.get("reported_model") or "")
        if model and model not in models:
            models.append(model)
        if prices:
            priced, mismatch = _price_of(e, prices)
        else:
            priced, mismatch = None, not same_model(model, reported)
        if mismatch:
            said = mismatched.setdefault(
                (model, reported), {"asked": model, "reported": reported, "calls": 0}
            )
            said["calls"] += 1
            if priced is not None:
                names = said.setdefault("priced_as", [])
                if priced.name not in names:
                    names.append(priced.name)
        if not prices:
            continue
        call: dict[str, Any] = {"model": model}
        if reported:
            call["reported_model"] = reported
        for name in (
            "prompt_tokens",
            "completion_tokens",
            "cached_tokens",
            "cache_write_tokens",
        ):
            if int(e.get(name, 0)) or name in ("prompt_tokens", "completion_tokens"):
                call[name] = int(e.get(name, 0))
        if hit:
            call["hit"] = True
        if priced is None:
            if tokens and model not in unpriced:
                unpriced.append(model or "<no model>")
        else:
            call[priced.key[0]] = priced.key[1]
            money, sources[model or "<no model>"] = priced.money, priced.source
            cost += money
            saved += money if hit else 0.0
        per_call.append(call)
    out["models"] = models
    if bad:
        out["bad_usage"] = bad
    if mismatched:
        out["model_mismatch"] = list(mismatched.values())
    if prices:
        unknown = bool(unpriced or bad)
        out["cost_usd"] = None if unknown else cost
        out["saved_usd"] = None if unknown else saved
        if unpriced:
            out["unpriced_models"] = unpriced
        if sources:
            out["price_sources"] = sources
        out["per_call"] = per_call
    return out


def add_mismatch(into: dict[tuple[str, str], dict[str, Any]], said: Any) -> None:
    """Add a usage's ``model_mismatch`` entries (asked, reported, calls,
    priced_as) to ``into``, summing the calls of each pair of models."""
    for entry in said if isinstance(said, list) else ():
        if not isinstance(entry, dict):
            continue
        pair = (str(entry.get("asked", "")), str(entry.get("reported", "")))
        total = into.setdefault(
            pair, {"asked": pair[0], "reported": pair[1], "calls": 0}
        )
        calls = entry.get("calls")
        if isinstance(calls, int) and not isinstance(calls, bool):
            total["calls"] += calls
        for name in entry.get("priced_as") or ():
            names = total.setdefault("priced_as", [])
            if name not in names:
                names.append(str(name))
