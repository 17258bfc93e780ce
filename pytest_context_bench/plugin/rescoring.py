"""The baseline scored again where the run's examples run (issue 37).

When a suite's evaluators or score field differ from those its baseline was scored
with (:func:`~pytest_context_bench.rescore.needs_rescore`), each item that runs an
example of it also scores the baseline's kept answers of that example with the
item's own evaluators and original example (never the System), and sends the rows
with its report (``payload["rescored"]``). So every process (any xdist worker) does
it with the evaluators it built, and the controller compares like with like
(:func:`~pytest_context_bench.rescore.apply_rescored`).
"""

from __future__ import annotations

from typing import Any

from ..report.rows import row_status
from .transport import ensure_wire_safe

__all__ = ["BaselineRescorer", "rescorer_for"]


class BaselineRescorer:
    """Per process: which suites' baselines are scored again, and the scoring."""

    def __init__(self, baseline: Any) -> None:
        self.baseline = baseline
        self._rows = baseline.rows  # (suite, dataset, id) -> records, built once
        self._needs: dict[tuple[str, str], str | None] = {}
        self._identities: dict[str, dict[str, list[dict[str, str]]]] = {}

    def needs(self, spec: Any, label: str) -> str | None:
        """Why the baseline suite ``label`` is scored again (``None``: it is not)."""
        key = (spec.origin, label)
        if key not in self._needs:
            from ..rescore import needs_rescore

            if spec.origin not in self._identities:
                self._identities[spec.origin] = spec.evaluator_identities()
            self._needs[key] = needs_rescore(
                self.baseline.suite(label), self._identities[spec.origin], spec.score_field
            )
        return self._needs[key]

    def entries(self, recorder: Any) -> list[dict[str, Any]]:
        """The baseline rows of the item's example scored again, for each of its
        rows' suites that needs it (all the baseline's trials of the example)."""
        from ..rescore import row_rescore_problem, rescore_row

        spec = recorder.spec
        out: list[dict[str, Any]] = []
        done: set[str] = set()
        for _, row in recorder.rows:
            label = spec.suite_label(row.system, recorder.ref.ds_pos)
            if label in done or self.needs(spec, label) is None:
                continue
            done.add(label)
            base_suite = self.baseline.suite(label) or {}
            threshold = float(base_suite.get("threshold", spec.threshold))
            for rec in self._rows.get((label, row.dataset, row.example_id), []):
                answer = (rec.io or {}).get("answer")
                head = {"suite": label, "dataset": rec.row.dataset, "example_id": rec.row.example_id}
                problem = row_rescore_problem(
                    answer, rec.row, recorder._original, latency_known=False
                )
                if problem is not None:
                    out.append({**head, "problem": problem})
                    continue
                new, _ = rescore_row(
                    rec.row, answer, recorder._original, recorder.evaluators,
                    score_field=recorder.score_field,
                )
                status = row_status(new.error, new.scores, new.metadata.get("score_field"), threshold)
                out.append(
                    {
                        **head,
                        "status": status,
                        "order": list(rec.order),
                        "row": {**new.to_dict(), "metadata": ensure_wire_safe(new.metadata)},
                    }
                )
        return out


def rescorer_for(state: Any) -> BaselineRescorer | None:
    """The process's rescorer (built once), or ``None`` without a baseline. An
    xdist worker reads the baseline file itself (the controller checked it)."""
    if state.settings.baseline is None:
        return None
    rescorer = getattr(state, "rescorer", None)
    if rescorer is None:
        baseline = state.baseline
        if baseline is None:
            from ..baseline import load_baseline

            baseline = load_baseline(state.settings.baseline)
        rescorer = BaselineRescorer(baseline)
        state.rescorer = rescorer
    return rescorer
