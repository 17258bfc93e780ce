"""A row's money recomputed from its calls and the run's prices, by every reader.

A run with prices writes the price table it used in ``run.options.prices``
(:func:`~pytest_context_bench.pricing.price_record`; a baseline keeps the run's
options, so the table too) and, in each row's ``llm_usage`` and ``judge_usage``,
``per_call``: each reply's model (and the model the reply named, when another),
its tokens, whether it was a cache hit, and what priced it (``price``: a model of the
explicit table; ``genai``: ``PROVIDER/MODEL`` of genai-prices). :class:`MoneyCheck`
prices each call again, as the run did, and refuses a row whose ``cost_usd`` /
``saved_usd`` (``judge_cost_usd`` / ``judge_saved_usd``) differ from it beyond float
rounding, whose calls' tokens do not add up to its usage, or whose calls are priced
otherwise than the run's rules price them (another model's price, an explicit price
passed over, the lower price of a reply that named another model).

What it cannot recompute counts as **unknown** money (``null``: a money gate on it
fails, never passes), said in one note per file: a row without ``per_call`` or a
file without a price table (written before they were kept, or edited), and calls
priced by genai-prices when the genai-prices the run used is not the one installed
(its data is the price). genai-prices' prices are checked against every price its
data has for the model (a price that changed, an off-peak price): the row's money
must lie between the lowest and the highest of them.

Pure (no pytest); genai-prices is imported only for a file priced with it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from ..pricing import Price, same_model

__all__ = ["MoneyCheck"]

#: The usage of a row, and its money: (usage key, cost key, saved key).
_PARTS = (
    ("llm_usage", "cost_usd", "saved_usd"),
    ("judge_usage", "judge_cost_usd", "judge_saved_usd"),
)
#: As :mod:`.rows`: the rounding of a sum taken in another order.
_REL_TOL = 1e-6
_ABS_TOL = 1e-12
_TOKENS = ("prompt_tokens", "completion_tokens", "cached_tokens", "cache_write_tokens")
_ABSENT = object()

_EDITED = (
    "money was changed after the run wrote it (was the file edited or corrupted?"
    " re-run to write it again; a merged report: merge its shards again)"
)


def _usd(value: float) -> str:
    return f"${value:.6g}"


def _dollars(value: Any) -> bool:
    return (
        isinstance(value, (int, float))
        and not isinstance(value, bool)
        and math.isfinite(float(value))
        and value >= 0
    )


def _count(value: Any) -> bool:
    return type(value) is int and value >= 0


def _close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=_REL_TOL, abs_tol=_ABS_TOL)


class _Unverifiable(Exception):
    """A part of a row whose money cannot be recomputed here: why, and the fix."""

    def __init__(self, why: str, fix: str) -> None:
        super().__init__(why)
        self.why, self.fix = why, fix


_OLD = _Unverifiable(
    "it cannot be recomputed, since the file keeps no price table or no per-call"
    " usage (written by an older pytest-context-bench, or edited)",
    "re-run it with this version to have its money checked and counted",
)


class _Genai:
    """genai-prices, at the version the run used: the prices its data has for a
    model, as :func:`~pytest_context_bench.pricing.auto_cost` found it."""

    def __init__(self, version: str) -> None:
        try:
            import genai_prices
        except ImportError:
            raise _Unverifiable(
                f"its calls priced by genai-prices {version} cannot be recomputed"
                " here, where genai-prices is not installed",
                f"install genai-prices=={version} where the file is read",
            ) from None
        installed = str(genai_prices.__version__)
        if installed != version:
            raise _Unverifiable(
                f"its calls priced by genai-prices {version} cannot be recomputed"
                f" here, where genai-prices {installed} is installed (its data is the"
                " price)",
                f"install genai-prices=={version} where the file is read",
            )
        self._usage = genai_prices.Usage
        self._found: dict[tuple[str, tuple[str, ...]], list[Any] | None] = {}

    def _prices(self, key: str, names: tuple[str, ...]) -> list[Any] | None:
        if (key, names) not in self._found:
            self._found[key, names] = self._lookup(key, names)
        return self._found[key, names]

    @staticmethod
    def _lookup(key: str, names: tuple[str, ...]) -> list[Any] | None:
        """Every price genai-prices' data has for the model ``key``
        (``PROVIDER/MODEL``) that one of ``names`` matches, or ``None`` when none
        matches it."""
        from genai_prices.data_snapshot import get_snapshot

        provider, _, model_id = key.partition("/")
        snapshot = get_snapshot()
        for name in names:
            try:
                _, info = snapshot.find_provider_model(name, None, provider, None)
            except LookupError:
                continue
            if str(info.id) != model_id:
                continue
            prices = info.prices
            if isinstance(prices, list):
                return [p.prices for p in prices]
            return [prices]
        return None

    def money(
        self, key: str, names: tuple[str, ...], tokens: tuple[int, int, int, int]
    ) -> tuple[float, float] | None:
        """The lowest and highest money of one reply at the prices of ``key``."""
        prices = self._prices(key, names)
        if not prices:
            return None
        prompt, completion, cached, written = tokens
        usage = self._usage(
            input_tokens=prompt,
            cache_read_tokens=min(cached, prompt),
            cache_write_tokens=written,
            output_tokens=completion,
        )
        values = [float(p.calc_price(usage)["total_price"]) for p in prices]
        return min(values), max(values)


class MoneyCheck:
    """Recomputes the rows' money of one file (a JSON report or a baseline).

    :param options: the file's ``run.options`` (a report) or ``options`` (a
        baseline): its ``prices`` is the run's price table.
    :param where: how a message names that table (``run.options.prices``).

    :meth:`problem` first (a malformed table), then :meth:`row` for each row, then
    :meth:`notes`.
    """

    def __init__(self, options: Any, where: str = "run.options.prices") -> None:
        self.where = where
        record = options.get("prices", _ABSENT) if isinstance(options, Mapping) else _ABSENT
        self._record = record
        self._table: dict[str, Price] = {}
        self._genai: _Genai | _Unverifiable | None = None
        #: why → (fix, rows whose money counts as unknown)
        self._unchecked: dict[str, tuple[str, int]] = {}
        self.problem = self._parse(record)

    def _parse(self, record: Any) -> str | None:
        if record is _ABSENT or record is None:
            return None
        bad = f"{self.where} is not the price table a run writes"
        if not isinstance(record, Mapping) or not isinstance(
            record.get("explicit"), Mapping
        ):
            return f"{bad} (no 'explicit' object): {_EDITED}"
        for model, figures in record["explicit"].items():
            if not isinstance(figures, Mapping):
                return f"{bad} (model {model!r}): {_EDITED}"
            values = [figures.get(k) for k in ("input", "output", "cached", "cache_write")]
            if not all(_dollars(v) for v in values[:2]) or not all(
                v is None or _dollars(v) for v in values[2:]
            ):
                return (
                    f"{bad}: the price of {model!r} is not US dollars >= 0"
                    f" ({dict(figures)!r}): {_EDITED}"
                )
            self._table[str(model)] = Price(
                *(None if v is None else float(v) for v in values)  # type: ignore[arg-type]
            )
        if not isinstance(record.get("auto", False), bool):
            return f"{bad} ('auto' is not true or false): {_EDITED}"
        return None

    # -- rows --------------------------------------------------------------------------
    def row(self, raw: Mapping[str, Any]) -> str | None:
        """What contradicts the money of one row (already checked by
        :func:`~.rows.row_problem`), ``None`` when nothing does. A part whose money
        cannot be recomputed here is set to ``None`` (unknown) in the row."""
        metadata = raw.get("metadata")
        if not isinstance(metadata, dict):
            return None
        said: set[str] = set()
        for usage_key, cost_key, saved_key in _PARTS:
            usage = metadata.get(usage_key)
            if not isinstance(usage, Mapping) or cost_key not in metadata:
                continue  # no money (a run without prices): nothing to recompute
            try:
                problem = self._part(metadata, usage_key, usage, cost_key, saved_key)
            except _Unverifiable as why:
                fix, n = self._unchecked.get(why.why, (why.fix, 0))
                self._unchecked[why.why] = (fix, n + (why.why not in said))
                said.add(why.why)
                metadata[cost_key] = None
                if saved_key in metadata:
                    metadata[saved_key] = None
                continue
            if problem is not None:
                return problem
        return None

    def _genai_for(self) -> _Genai:
        if self._genai is None:
            version = self._record.get("genai_prices") if isinstance(self._record, Mapping) else None
            try:
                self._genai = _Genai(str(version))
            except _Unverifiable as why:
                self._genai = why
        if isinstance(self._genai, _Unverifiable):
            raise self._genai
        return self._genai

    def _part(
        self,
        metadata: dict[str, Any],
        usage_key: str,
        usage: Mapping[str, Any],
        cost_key: str,
        saved_key: str,
    ) -> str | None:
        cost, saved = metadata.get(cost_key), metadata.get(saved_key)
        if cost is None and saved is None:
            return None  # unknown already: never an under-count
        calls = usage.get("per_call")
        if not isinstance(self._record, Mapping) or calls is None:
            raise _OLD
        at = f"{usage_key}.per_call"
        if not isinstance(calls, list):
            return f"has {at} that is not a list: {_EDITED}"
        sums = dict.fromkeys(_TOKENS, 0)
        low = high = saved_low = saved_high = 0.0
        unknown = bool(usage.get("bad_usage"))
        for j, call in enumerate(calls):
            shown = f"{at}[{j}]"
            if not isinstance(call, Mapping):
                return f"has {shown} that is not an object: {_EDITED}"
            model, reported = call.get("model", ""), call.get("reported_model", "")
            if not isinstance(model, str) or not isinstance(reported, str):
                return f"has {shown} whose model is not a string: {_EDITED}"
            counts = [call.get(k, 0) for k in _TOKENS]
            if not all(_count(c) for c in counts):
                return f"has {shown} whose tokens are not integers >= 0: {_EDITED}"
            for k, c in zip(_TOKENS, counts):
                sums[k] += c
            tokens: tuple[int, int, int, int] = tuple(counts)  # type: ignore[assignment]
            span = self._call(call, shown, model, reported, tokens)
            if isinstance(span, str):
                return span
            if span is None:
                unknown = unknown or bool(tokens[0] + tokens[1])
                continue
            low, high = low + span[0], high + span[1]
            if call.get("hit") is True:
                saved_low, saved_high = saved_low + span[0], saved_high + span[1]
        for k in ("prompt_tokens", "completion_tokens", "cached_tokens"):
            if sums[k] != usage.get(k, 0):
                return (
                    f"has {usage_key}.{k} {usage.get(k)!r}, but its calls ({at})"
                    f" add up to {sums[k]}: {_EDITED}"
                )
        bad = usage.get("bad_usage") or []
        sent, hits = usage.get("calls", 0), usage.get("cache_hits", 0)
        if not (isinstance(bad, list) and _count(sent) and _count(hits)):
            return f"has a {usage_key} whose calls are not counted: {_EDITED}"
        counted = sent + hits
        if len(calls) + len(bad) != counted:
            return (
                f"has {usage_key}.calls + cache_hits = {counted!r}, but {len(calls)}"
                f" call(s) in {at}: {_EDITED}"
            )
        for key, value, lo, hi in (
            (cost_key, cost, low, high),
            (saved_key, saved, saved_low, saved_high),
        ):
            if value is None or key not in metadata:
                continue  # unknown: never an under-count
            if unknown:
                return (
                    f"has metadata.{key} {_usd(float(value))}, but a call in {at} has no"
                    f" price, so its money is unknown (null): {_EDITED}"
                )
            if (lo <= float(value) <= hi) or _close(float(value), lo) or _close(
                float(value), hi
            ):
                continue
            said = _usd(lo) if _close(lo, hi) else f"between {_usd(lo)} and {_usd(hi)}"
            return (
                f"has metadata.{key} {_usd(float(value))}, but its {len(calls)} LLM"
                f" call(s) ({at}) cost {said} at the run's prices ({self.where}): {_EDITED}"
            )
        return None

    def _call(
        self,
        call: Mapping[str, Any],
        shown: str,
        model: str,
        reported: str,
        tokens: tuple[int, int, int, int],
    ) -> tuple[float, float] | str | None:
        """The lowest and highest money of one call, ``None`` for no price, or what
        contradicts the run's rules."""
        names = tuple(dict.fromkeys(n for n in (model, reported) if n))
        table = self._table
        priced = [n for n in names if n in table]
        same = same_model(model, reported)
        name, key = call.get("price"), call.get("genai")
        span: tuple[float, float] | None = None
        if name is not None:
            if not isinstance(name, str) or name not in names:
                return (
                    f"has {shown} of model {model!r} priced as {name!r}, another"
                    f" model: {_EDITED}"
                )
            if name not in table:
                return (
                    f"has {shown} priced as {name!r}, which has no price in"
                    f" {self.where}: {_EDITED}"
                )
            money = table[name].cost(*tokens)
            span = (money, money)
        elif key is not None:
            if not isinstance(key, str) or not self._record.get("auto"):
                return f"has {shown} priced by genai-prices in a run without it: {_EDITED}"
            found = self._genai_for().money(key, names, tokens)
            if found is None:
                return (
                    f"has {shown} of model {model!r} priced as genai-prices'"
                    f" {key!r}, another model: {_EDITED}"
                )
            span = found
        if same and priced and name != priced[0]:
            # An explicit price wins, the model asked for first.
            return (
                f"has {shown} of model {model!r} not priced at {self.where}"
                f"[{priced[0]!r}], the price the run gives it: {_EDITED}"
            )
        if not same and priced:
            # Another model replied: the higher of the two prices.
            top = max(table[n].cost(*tokens) for n in priced)
            if span is None or (span[1] < top and not _close(span[1], top)):
                return (
                    f"has {shown} ({model!r} asked, {reported!r} replied) priced"
                    f" below {_usd(top)}, the higher of the two models' prices: {_EDITED}"
                )
        return span

    def notes(self, prefix: str) -> list[str]:
        """One line per reason some rows' money could not be recomputed:
        ``"<prefix>: the money of N row(s) ..."``."""
        return [
            f"{prefix}: the money of {n} row(s) counts as unknown, and a money gate on"
            f" it fails: {why}; {fix}"
            for why, (fix, n) in self._unchecked.items()
        ]
