"""Small pure-Python statistics (no numpy: the core stays dependency-light)."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

from ..errors import ConfigError

__all__ = ["mean", "percentile"]


def mean(values: Iterable[float]) -> float:
    """Arithmetic mean, ``nan`` for no values.

    :param values: the numbers to average.
    :return: a plain :class:`float`; ``nan`` (not 0) when ``values`` is empty, so an
        empty group never looks like a real score of zero.
    """
    data = [float(v) for v in values]
    if not data:
        return math.nan
    try:
        # fsum avoids drift (mean of ten 0.1s is exactly 0.1).
        total = math.fsum(data)
    except ValueError:
        # fsum refuses inf + -inf; the mathematical answer is nan.
        return math.nan
    return total / len(data)


def percentile(sorted_values: Sequence[float], p: float) -> float:
    """The ``p`` quantile with linear interpolation (numpy's default method).

    With ``n`` values, ``h = (n - 1) * p``; the result lies between the values at
    ``floor(h)`` and ``ceil(h)``, weighted by the fractional part of ``h``.

    :param sorted_values: the values in ascending order (they are re-sorted here,
        which is linear for already sorted input, so an unsorted list is still safe).
    :param p: the quantile, in ``[0, 1]`` (0.5 is the median, 0.95 the p95).
    :return: a plain :class:`float`; ``nan`` when there are no values.
    :raises ConfigError: when ``p`` is outside ``[0, 1]`` or is nan.
    """
    if not 0.0 <= p <= 1.0:
        raise ConfigError(f"percentile p must be in [0, 1], got {p!r}.")
    data = sorted(float(v) for v in sorted_values)
    n = len(data)
    if n == 0:
        return math.nan
    h = (n - 1) * p
    lo = math.floor(h)
    hi = min(lo + 1, n - 1)
    t = h - lo
    a, b = data[lo], data[hi]
    if t == 0.0 or a == b:
        # Exact index (or a flat segment): return the value itself, which also
        # avoids inf - inf = nan when both neighbours are infinite.
        return a
    if math.isinf(a) or math.isinf(b):
        # Weighted sum keeps the infinity (1 .. inf gives inf; -inf .. inf gives nan)
        # where the difference form below would compute inf - inf.
        return a * (1.0 - t) + b * t
    # numpy's _lerp: interpolate from the nearer end so the result is monotonic in
    # p and lands exactly on b when t reaches 1.
    diff = b - a
    if t >= 0.5:
        return b - diff * (1.0 - t)
    return a + diff * t
