"""What the run set out to do: the examples collected, so that missing rows show.

Every collecting process (the only one in-process, each xdist worker) builds a
*manifest* at the end of collection:

* ``planned``: origin → how many example items the plugin parametrized, before
  pytest's own selection (``-k``, ``-m``, ``--lf``, ``--deselect``, node ids);
* ``items``: node id → the identity of each example item that was kept (origin,
  system when known, dataset, example id, sort order).

In-process the controller reads it directly; under xdist each worker sends it in
``workeroutput`` when it finishes (every worker collects the same items, so one
surviving worker is enough). With it the controller tells an example whose worker
crashed (an error row of type ``WorkerCrashed``) from one pytest never selected
(a partial run), and counts expected against received rows per suite.

Plain builtins only: the manifest crosses the xdist boundary.
"""

from __future__ import annotations

from typing import Any

import pytest

from ..urls import redact

__all__ = ["WORKEROUTPUT_KEY", "build_manifest", "item_identity", "merge_manifest"]

#: ``config.workeroutput`` key of a worker's manifest.
WORKEROUTPUT_KEY = "ctxbench_manifest"


def item_identity(
    item: pytest.Item, systems: tuple[Any, ...], suites: dict[str, Any] | None = None
) -> dict[str, Any] | None:
    """Where the row of ``item`` belongs, or ``None`` for a non-ctxbench item.

    ``system`` is ``None`` when the System comes from the ``ctxbench_system``
    fixture (its name is known only once it runs).
    """
    # Here, not at the top: the controller imports this module in every run.
    from .collection import ExampleRef, case_of

    case = case_of(item)
    system: Any = None
    if case is not None:
        ref = case.ref
        system = case.system
    else:
        callspec = getattr(item, "callspec", None)
        if callspec is None:
            return None
        params = callspec.params
        ref = params.get("ctxbench_example")
        if not isinstance(ref, ExampleRef):
            return None
        system = params.get("ctxbench_system")
    spec = ref.spec
    if suites is not None and spec.origin not in suites:
        suites[spec.origin] = spec.wire()
    if system is not None:
        name = str(getattr(system, "name", system))
        sys_pos = next((i for i, s in enumerate(systems) if s is system), 0)
    elif spec.default_system is not None:
        # A marked test that records its own rows: the default name is the function's.
        name, sys_pos = spec.default_system, 0
    else:
        name, sys_pos = None, 0
    ds = ref.dataset
    example_id = str(ds.ids[ref.index])
    if ref.qa >= 0:
        example_id = f"{example_id}_{ref.qa}"
    return {
        "origin": spec.origin,
        "system": name,
        "suite": None if name is None else spec.suite_label(name, ref.ds_pos),
        "dataset": ds.tag,
        "example_id": example_id,
        "score_field": spec.primary_field(ds),
        "order": [sys_pos, ref.ds_pos, ref.index, ref.qa, ref.trial],
        "trial": ref.trial,
    }


def build_manifest(
    items: list[pytest.Item], planned: dict[str, int], systems: tuple[Any, ...]
) -> dict[str, Any]:
    """The manifest of one process's collection (see the module docstring)."""
    kept: dict[str, dict[str, Any]] = {}
    suites: dict[str, Any] = {}
    for item in items:
        ident = item_identity(item, systems, suites)
        if ident is not None:
            kept[item.nodeid] = ident
    return {"planned": dict(planned), "items": kept, "suites": suites}


def merge_manifest(into: dict[str, Any], other: dict[str, Any]) -> None:
    """Fold a worker's manifest into ``into`` (workers collect the same items)."""
    planned = into.setdefault("planned", {})
    for origin, n in other.get("planned", {}).items():
        planned[origin] = max(int(n), int(planned.get(origin, 0)))
    into.setdefault("items", {}).update(other.get("items", {}))
    for origin, wire in other.get("suites", {}).items():
        into.setdefault("suites", {}).setdefault(origin, wire)


#: The error type of an example whose xdist worker died while running it (or that
#: never reported): counted like any error (error rate, pass rate, mean score,
#: gates, baseline comparison).
WORKER_CRASHED = "WorkerCrashed"
#: The error type of an example whose test failed before it recorded a row (a
#: fixture error, a marked test that never called ``ctxbench_record``).
NOT_SCORED = "NotScored"
#: The error type of an example stopped by pytest-timeout's ``--timeout``.
TIMED_OUT = "Timeout"


def _first_line(text: str) -> str:
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    # pytest's long reprs end with the exception line ("E   ValueError: ..."); the
    # crash message of xdist is one line.
    for ln in reversed(lines):
        if ln.startswith("E "):
            return ln[1:].strip()
    return lines[-1] if lines else ""


def account(
    manifest: dict[str, Any],
    reported: set[str],
    skipped: set[str],
    failed: dict[str, str],
    systems_seen: dict[str, list[str]],
    *,
    stopped: bool,
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Match the collected examples against what arrived.

    :param manifest: see the module docstring.
    :param reported: node ids whose report carried rows.
    :param skipped: node ids pytest skipped (``pytest.skip``): not expected.
    :param failed: node id → failure text, for items that failed without a row.
    :param systems_seen: origin → the System names of its rows, in order (to place
        an item whose System came from the ``ctxbench_system`` fixture).
    :param stopped: the run ended early (``-x``, ``--maxfail``, Ctrl-C): an item
        that never reported and never failed was not run, rather than lost.
    :return: the error rows to add (dicts: suite, origin, order, row fields) and
        the per-suite counts ``{suite: {expected, received, lost, not_run,
        skipped}}`` plus ``not_run`` node ids.
    """
    crashed_any = any("crashed while running" in t for t in failed.values())
    lost_rows: list[dict[str, Any]] = []
    suites: dict[str, dict[str, Any]] = {}
    not_run: list[str] = []
    for nodeid, ident in manifest.get("items", {}).items():
        origin = str(ident["origin"])
        if ident.get("system") is not None:
            placed = [
                (str(ident["system"]), str(ident["suite"]), int(ident["order"][0]))
            ]
        else:
            names = systems_seen.get(origin) or ["ctxbench_system"]
            placed = [
                (n, n if origin == "cli" else f"{origin}[{n}]", i)
                for i, n in enumerate(names)
            ]
        text = failed.get(nodeid)
        if nodeid in reported:
            state = "received"
        elif nodeid in skipped:
            state = "skipped"
        elif text is None and stopped:
            state = "not_run"
            not_run.append(nodeid)
        else:
            state = "lost"
        for name, label, sys_pos in placed:
            counts = suites.setdefault(
                label,
                {"expected": 0, "received": 0, "lost": [], "not_run": 0, "skipped": 0},
            )
            if state != "skipped":
                counts["expected"] += 1
            if state == "received":
                counts["received"] += 1
            elif state in ("skipped", "not_run"):
                counts[state] += 1
            else:
                counts["lost"].append(f"{ident['dataset']}/{ident['example_id']}")
                if text is not None and "crashed while running" in text:
                    kind, message = WORKER_CRASHED, _first_line(text)
                elif text is not None and "from pytest-timeout" in text:
                    kind = TIMED_OUT
                    message = f"{nodeid}: {_first_line(text)}"
                elif text is not None:
                    kind = NOT_SCORED
                    message = (
                        f"{nodeid} failed before recording a row: {_first_line(text)}"
                    )
                else:
                    kind = WORKER_CRASHED if crashed_any else NOT_SCORED
                    message = f"{nodeid} never reported a result" + (
                        " (an xdist worker crashed and was not replaced; see"
                        " --max-worker-restart)"
                        if crashed_any
                        else ""
                    )
                metadata: dict[str, Any] = {
                    "score_field": ident.get("score_field") or "f1"
                }
                if ident.get("trial"):
                    metadata["trial"] = int(ident["trial"])
                order = [sys_pos] + [int(x) for x in ident["order"][1:]]
                lost_rows.append(
                    {
                        "suite": label,
                        "origin": origin,
                        "order": order,
                        "nodeid": nodeid,
                        "row": {
                            "system": name,
                            "example_id": str(ident["example_id"]),
                            "dataset": str(ident["dataset"]),
                            "scores": {},
                            "input_tokens": 0,
                            "output_tokens": 0,
                            "latency": 0.0,
                            "metadata": metadata,
                            "error": {
                                "type": kind,
                                # A failure text is written to reports and
                                # baselines: no credentials, no API key.
                                "message": redact(message),
                                "where": "worker",
                            },
                        },
                    }
                )
    return lost_rows, {"suites": suites, "not_run": not_run}
