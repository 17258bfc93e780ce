"""The run's LLM section as lines: calls sent, cache hits and misses, tokens,
money and where its prices came from, push-back and connections past the cache.

One source for the terminal (``plugin/llmcache.py``), the Markdown summary and the
HTML report, so the three say the same thing.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

__all__ = ["llm_lines", "report_llm_lines"]

PRICE_FLAG = "--ctxbench-price"
REPLAY_ALLOW_FLAG = "--ctxbench-replay-allow"


def _usd(value: Any) -> str:
    # A JSON report writes unknown money as "nan".
    if isinstance(value, str):
        value = {"nan": math.nan, "inf": math.inf}.get(value, math.nan)
    if not isinstance(value, (int, float)) or math.isnan(value):
        return "unknown"
    return f"${value:,.2f}" if value >= 1 else f"${value:.6f}"


def llm_lines(summary: Mapping[str, Any] | None) -> list[tuple[str, dict[str, Any]]]:
    """The lines of a run's LLM section (the JSON report's ``llm``), as
    ``(text, markup)``: the terminal prints them, the Markdown summary and the HTML
    report show them (red and yellow lines as failures and warnings). The texts hold
    endpoint URLs and model names the endpoint reported: a view escapes them."""
    lines: list[tuple[str, dict[str, Any]]] = []
    if not isinstance(summary, Mapping) or not isinstance(summary.get("cache"), Mapping):
        return lines
    c = summary["cache"]
    where = f" ({c['path']})" if c["path"] and c["mode"] != "off" else ""
    tokens = summary["tokens"]
    lines.append(
        (
            f"LLM cache {c['mode']}{where}: {c['hits']} hits, {c['misses']} misses,"
            f" {summary['calls_sent']} calls sent; saved {summary['saved_tokens']:,}"
            " tokens"
            + (
                f", {_usd(summary['money']['saved_usd'])}" if "money" in summary else ""
            ),
            {},
        )
    )
    loose = summary.get("unattributed")
    if loose is not None:
        lines.append(
            (
                (
                    f"{loose['calls'] + loose['cache_hits']} LLM request(s) made from"
                    " a System's own threads while several examples were in flight"
                    " are counted for the run, not for a row (calls, tokens and money"
                    " above include them): run that work with"
                    " contextvars.copy_context().run to have it counted for its"
                    " example (docs/cache.md)"
                ),
                {"yellow": True},
            )
        )
    budgets = summary.get("budget") or {}
    for endpoint, b in budgets.items():
        if b.get("refused_429") or b.get("unavailable_503"):
            text = (
                f"LLM endpoint {endpoint} pushed back:"
                f" {b.get('refused_429', 0)} × 429, {b.get('unavailable_503', 0)}"
                f" × 503 in {b.get('requests', 0)} requests; the call budget went"
                f" down to {b.get('lowest')} and ended at {b.get('budget')} of"
                f" {b.get('ceiling')} (docs/concurrency.md, 'Adaptive budget')"
            )
            lines.append((text, {"yellow": True}))
    lines.extend(_endpoint_lines(summary.get("endpoints") or {}, budgets))
    lines.extend(_past_lines(c))
    if c["replay_misses"]:
        lines.append(
            (
                f"{c['replay_misses']} example(s) errored on a replay-mode cache miss"
                " (nothing sent); record them with --ctxbench-cache=once",
                {"red": True},
            )
        )
    lines.append(
        (
            f"LLM tokens (System and judge replies, cache hits included):"
            f" {tokens['prompt_tokens']:,} prompt ({tokens['cached_tokens']:,} cached"
            f" by the provider), {tokens['completion_tokens']:,} completion",
            {},
        )
    )
    money = summary.get("money")
    if money is not None:
        lines.append(
            (
                f"LLM money ({PRICE_FLAG}): System {_usd(money['cost_usd'])}"
                + (
                    f", judge {_usd(money['judge_cost_usd'])}"
                    if money.get("judge_cost_usd") not in (0, 0.0)
                    else ""
                )
                + f", total {_usd(money['total_cost_usd'])}",
                {},
            )
        )
        gp = money.get("genai_prices")
        if gp and money.get("price_sources"):
            said = "; ".join(
                f"{m!r} {src}" for m, src in money["price_sources"].items()
            )
            data = f" (genai-prices {gp['version']} data)" if gp else ""
            lines.append((f"LLM prices{data}: {said}", {}))
        if money["unpriced_models"] and not gp:  # with auto: auto_unknown's line
            lines.append(
                (
                    f"{PRICE_FLAG}: no price for model(s)"
                    f" {', '.join(map(repr, money['unpriced_models']))}, so their cost"
                    f" is unknown; add {PRICE_FLAG}=MODEL=IN/OUT",
                    {"yellow": True},
                )
            )
        if money["prices_unused"]:
            seen = ", ".join(map(repr, summary["models"])) or "none"
            lines.append(
                (
                    f"{PRICE_FLAG}: price given for model(s)"
                    f" {', '.join(map(repr, money['prices_unused']))} that no call used"
                    f" (check the spelling; models seen: {seen})",
                    {"yellow": True},
                )
            )
    return lines


def _endpoint_lines(
    endpoints: Mapping[str, Mapping[str, int]], budgets: Mapping[str, Any]
) -> list[tuple[str, dict[str, Any]]]:
    """The lines on endpoints that pushed back (429, 503) without a call budget
    saying so above, that did not answer, or whose streams were cut short."""
    lines: list[tuple[str, dict[str, Any]]] = []
    for endpoint, e in endpoints.items():
        sent, answered = e.get("requests", 0), e.get("answered", 0)
        pushed = (e.get("refused_429", 0), e.get("unavailable_503", 0))
        if any(pushed) and endpoint not in budgets:
            text = (
                f"LLM endpoint {endpoint} pushed back: {pushed[0]} × 429,"
                f" {pushed[1]} × 503 in {sent} requests ({answered} answered)"
            )
            lines.append((text, {"yellow": True}))
        others = e.get("other_status", 0), e.get("no_answer", 0)
        if any(others):
            text = (
                f"LLM endpoint {endpoint}: {others[0]} request(s) answered with an"
                f" error status, {others[1]} with no answer (refused, timed out or"
                f" dropped) of {sent}"
            )
            lines.append((text, {"yellow": True}))
        if e.get("cut_short"):
            text = (
                f"LLM endpoint {endpoint}: {e['cut_short']} stream(s) cut short (the"
                " body ended before its end event); not cached (docs/cache.md,"
                " 'Streams cut short')"
            )
            lines.append((text, {"yellow": True}))
    return lines


def _past_lines(c: Mapping[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """The lines on connections System calls opened past the cache (netguard)."""
    where = ", ".join(c.get("bypass_addresses") or ())
    fix = "build the client with http_client() so that its calls go through the cache"
    lines: list[tuple[str, dict[str, Any]]] = []
    if c.get("refused_connections"):
        text = (
            f"{c['refused_connections']} connection(s) refused in replay mode"
            f" ({c['refused_examples']} example(s) errored; nothing was sent):"
            f" {where}; {fix}, or allow the address with"
            f" {REPLAY_ALLOW_FLAG}=HOST:PORT (docs/cache.md)"
        )
        lines.append((text, {"red": True}))
    if c.get("bypassed_connections"):
        text = (
            f"{c['bypassed_connections']} connection(s) opened by System calls"
            f" bypassed the LLM cache (not cached, not metered): {where}; {fix}"
            " (docs/cache.md)"
        )
        lines.append((text, {"yellow": True}))
    return lines


def report_llm_lines(doc: Mapping[str, Any]) -> list[tuple[str, str]]:
    """A JSON report's LLM lines for a view: ``(text, level)``, level ``""``,
    ``"warn"`` or ``"bad"``. A report without an ``llm`` section (or with one this
    version cannot read) gives none."""
    try:
        lines = llm_lines(doc.get("llm"))
    except (KeyError, TypeError, ValueError, AttributeError):
        return []
    return [
        (str(text), "bad" if markup.get("red") else "warn" if markup.get("yellow") else "")
        for text, markup in lines
    ]
