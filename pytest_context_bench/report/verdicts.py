"""Every check of a run as one verdict: what CI test views show as a test case.

A run's checks are the gates of each suite (``--ctxbench-min-pass-rate`` ...), the
max-drop gates of a baseline comparison, and the baseline's own conditions (a suite
the max-drop gates could not compare, examples that changed under
``--ctxbench-require-same-examples``, a dataset changed since the baseline). Each
becomes a :class:`Verdict` with a stable node id, ``ctxbench::gate[<suite>:<gate>]``,
``ctxbench::max_drop[<suite>:<metric>]`` or ``ctxbench::baseline[<what>]``: the
plugin logs one pytest test report per verdict, so a breach counts in pytest's
closing line (``1 failed``, red) and is a failing ``<testcase>`` in ``--junitxml``
with the measured value and the limit; a met gate is a passing test case.

Pure: no pytest. The same verdicts feed the Markdown and HTML views.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from ..gate import GateResult

__all__ = [
    "VERDICT_PREFIX",
    "Verdict",
    "comparison_verdicts",
    "gate_verdicts",
    "is_verdict",
]

#: Every verdict's node id starts with this (the command-line run's examples share
#: the ``ctxbench`` path, as ``ctxbench::example[...]``).
VERDICT_PREFIX = "ctxbench::"
_KINDS = ("gate", "max_drop", "baseline")


def is_verdict(nodeid: str) -> bool:
    """True for the node id of a verdict (``ctxbench::gate[...]`` ...)."""
    head = nodeid.split("[", 1)[0]
    return head.startswith(VERDICT_PREFIX) and head[len(VERDICT_PREFIX) :] in _KINDS


@dataclass(frozen=True)
class Verdict:
    """One check and its outcome.

    :param nodeid: ``ctxbench::gate[<suite>:<gate>]`` and so on; stable across runs.
    :param passed: ``True`` when the check is met.
    :param message: one sentence with the measured value and the limit.
    :param properties: ``(name, value)`` pairs for the JUnit ``<properties>``
        (``value``, ``limit``, ``suite``, ...), builtins only.
    """

    nodeid: str
    passed: bool
    message: str
    properties: tuple[tuple[str, Any], ...] = ()
    #: why the check is reported but not enforced (a judge that agrees too little
    #: with people's labels), else ``None``: the plugin logs it as skipped
    not_enforced: str | None = None

    @property
    def name(self) -> str:
        """The node id without the ``ctxbench::`` prefix."""
        return self.nodeid[len(VERDICT_PREFIX) :]


def _num(x: float) -> float | str:
    # JUnit properties and the wire want plain values; non-finite ones as text.
    return (
        x
        if math.isfinite(x)
        else ("nan" if math.isnan(x) else ("inf" if x > 0 else "-inf"))
    )


def gate_verdicts(results: Iterable[GateResult]) -> list[Verdict]:
    """One verdict per (suite, gate) result of :func:`~pytest_context_bench.gate.check_gates`."""
    out = []
    for g in results:
        out.append(
            Verdict(
                nodeid=f"{VERDICT_PREFIX}gate[{g.suite}:{g.gate.name}]",
                passed=g.passed,
                message=f"{g.suite}: {g.gate.name}: {g.reason}",
                properties=(
                    ("suite", g.suite),
                    ("metric", g.gate.metric),
                    ("value", _num(g.value)),
                    ("op", g.gate.op),
                    ("limit", _num(g.gate.limit)),
                ),
                not_enforced=None if g.enforced else (g.not_enforced or "not enforced"),
            )
        )
    return out


def comparison_verdicts(
    comparison: Any,
    unevaluated: Iterable[str] = (),
    changed_examples: Iterable[str] = (),
    baseline_error: str | None = None,
) -> list[Verdict]:
    """Verdicts of a baseline comparison.

    :param comparison: a :class:`~pytest_context_bench.baseline.Comparison` or ``None``.
    :param unevaluated: suites the max-drop gates compared no example of.
    :param changed_examples: one line per suite whose examples changed
        (``--ctxbench-require-same-examples``).
    :param baseline_error: why the baseline could not be compared at all.
    """
    out: list[Verdict] = []
    if baseline_error:
        out.append(
            Verdict(f"{VERDICT_PREFIX}baseline[datasets]", False, baseline_error)
        )
    if comparison is not None:
        for s in comparison.suites:
            for m in s.metrics:
                if m.tolerance is None or m.verdict is None:
                    continue
                r = m.result
                out.append(
                    Verdict(
                        nodeid=f"{VERDICT_PREFIX}max_drop[{m.suite}:{m.metric}]",
                        passed=not m.failed,
                        message=(
                            f"{m.suite}: {m.metric}: now {_fmt(m.now)}, baseline"
                            f" {_fmt(m.then)}, max drop {m.tolerance}: {m.verdict.reason}"
                        ),
                        properties=(
                            ("suite", m.suite),
                            ("metric", m.metric),
                            ("value", _num(m.now)),
                            ("baseline", _num(m.then)),
                            ("change", _num(r.diff)),
                            ("p_value", _num(r.p_value)),
                            ("limit", str(m.tolerance)),
                        ),
                        not_enforced=m.not_enforced,
                    )
                )
    for suite in unevaluated:
        out.append(
            Verdict(
                f"{VERDICT_PREFIX}baseline[{suite}:compared]",
                False,
                f"{suite}: the max-drop gates compared no example of this baseline suite"
                " (renamed dataset or System?); re-create the baseline with"
                " --ctxbench-save-baseline if the change is intended",
            )
        )
    for line in changed_examples:
        suite = line.split(":", 1)[0]
        out.append(
            Verdict(
                f"{VERDICT_PREFIX}baseline[{suite}:same_examples]",
                False,
                f"{line} (--ctxbench-require-same-examples)",
            )
        )
    return out


def _fmt(x: float) -> str:
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return f"{x:.4g}"
