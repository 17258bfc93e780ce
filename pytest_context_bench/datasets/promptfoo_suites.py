"""promptfoo configs as datasets: one :class:`PromptfooDataset` per prompt.

:func:`~pytest_context_bench.datasets.promptfoo.load_promptfoo` reads the config
(pure: no example is checked there); this module checks every example's assertions
as a local file's are checked (an unknown type, an invalid regex or schema is a
:class:`~pytest_context_bench.errors.DatasetError` naming the file and the test's
line, before any example runs) and wraps each suite in the ``Dataset`` protocol.
"""

from __future__ import annotations

import hashlib
import json
import os
from typing import Any

from ..errors import DatasetError
from .families import DEFAULT_FAMILY, DatasetBase, example_error

__all__ = ["PromptfooDataset", "load_promptfoo_datasets"]


class PromptfooDataset(DatasetBase):
    """The tests of a promptfoo config for one of its prompts (in memory).

    ``notes`` names what promptfoo would run and ctxbench does not (providers,
    JavaScript assertions, transforms...), for the run's header.
    """

    def __init__(
        self,
        suite: Any,
        family: str,
        metrics: set[str] | None,
        fields: set[str] | None = None,
        judge_assertions: bool = False,
    ) -> None:
        self.suite = suite
        self._tag = suite.tag
        self._family = family
        self._records = [dict(e) for e in suite.examples]
        self._ids = [str(e["id"]) for e in self._records]
        text = json.dumps(self._records, sort_keys=True, ensure_ascii=False, default=str)
        self._fingerprint = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
        self.notes: tuple[str, ...] = tuple(suite.notes)
        #: the part of the suite label this dataset adds (its prompt's label when the
        #: config has several prompts; see ``SuiteSpec.suite_label``)
        self.suite_part: str | None = None
        self.assertion_metrics = None if metrics is None else frozenset(metrics)
        self.evaluator_fields = frozenset(fields or ())
        self.judge_assertions = judge_assertions

    @property
    def path(self) -> str:
        """The config (or tests file) read."""
        return str(self.suite.path)

    @property
    def prompt_label(self) -> str | None:
        return self.suite.prompt_label

    def __getitem__(self, index: int) -> dict[str, Any]:
        i = self._position(index)
        example = json.loads(json.dumps(self._records[i]))  # a fresh deep copy
        example.setdefault("dataset", self._tag)
        return example

    def location(self, index: int) -> tuple[str, int]:
        i = self._position(index)
        return str(self.suite.sources[i]), int(self.suite.lines[i])

    def __repr__(self) -> str:
        return f"PromptfooDataset(path={self.path!r}, tag={self._tag!r}, examples={len(self._ids)})"


def load_promptfoo_datasets(path: str, family: str | None = None) -> list[PromptfooDataset]:
    """Read a promptfoo config or tests file: one dataset per prompt, every example
    checked (its family's schema, its assertions) before any runs.

    :raises DatasetError: naming the file (the config, or the tests file the test
        came from) and the line.
    """
    from ..evaluators.assertions import AssertionError_, compile_asserts, metric_names, uses_judge
    from ..evaluators import example_fields, field_problem
    from .promptfoo import load_promptfoo

    fam = family or DEFAULT_FAMILY
    out = []
    for suite in load_promptfoo(path):
        metrics: set[str] | None = None
        fields: set[str] = set()
        judged = False
        seen: dict[str, int] = {}
        for example, line, source in zip(suite.examples, suite.lines, suite.sources):
            where = f"the test on line {line}" if line else "a test"
            if str(example["id"]) in seen:
                raise DatasetError(
                    f"two tests have the id {example['id']!r} ({where} and the one on line"
                    f" {seen[str(example['id'])]}); give one of them another description.",
                    path=str(source), line=line or None,
                )
            seen[str(example["id"])] = line
            if "assert" in example:
                base = os.path.dirname(os.path.abspath(str(source)))
                try:
                    compiled = compile_asserts(
                        example["assert"], base_dir=base,
                        threshold=example.get("threshold"), variables=example,
                    )
                except AssertionError_ as exc:
                    raise DatasetError(f"{exc}. Fix the test.", path=str(source), line=line or None) from None
                metrics = (metrics or set()) | metric_names(compiled)
                judged = judged or uses_judge(compiled)
            own = example_fields(example)
            if own:  # vars expected_tool_calls, expected_trajectory: their evaluators judge
                problem = field_problem(example)
                if problem is not None:
                    raise DatasetError(f"{problem}. Fix the test.", path=str(source), line=line or None)
                fields.update(own)
            problem = example_error(fam, example)
            if problem is not None:
                raise DatasetError(f"{problem}. Fix the test.", path=str(source), line=line or None)
        out.append(PromptfooDataset(suite, fam, metrics, fields, judged))
    if len(out) > 1:
        # Several prompts: each is a suite of its own (its own summary row, gates and
        # baseline comparison), as promptfoo shows one column per prompt.
        for ds in out:
            ds.suite_part = ds.suite.prompt_label
    return out
