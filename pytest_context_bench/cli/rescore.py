"""``ctxbench rescore``: a run's saved answers scored again, without the System.

::

    ctxbench rescore REPORT.json|BASELINE.json [--evaluator module:obj ...]
        [--dataset SPEC ...] [--score-field FIELD] --json OUT [--html OUT]
        [--markdown OUT] [--save-baseline OUT] [--cache MODE] [--cache-dir DIR]

Every row's kept answer (:mod:`pytest_context_bench.answers`) is scored by the
evaluators a run of its dataset wires (the family's, those its examples' fields call
for, its assertions), plus each ``--evaluator`` (as ``--ctxbench-evaluator``: added to
every dataset's); summaries, intervals and gates are made again from the new rows
(:mod:`pytest_context_bench.rescore`). The System is never imported: its
answers, tokens, latency, calls and money are those the run measured. The evaluators'
LLM calls (judges) go through the LLM cache (``--cache``, ``--cache-dir``: as the
pytest options) and are priced with the file's own prices.

The examples come from ``--dataset`` (each tagged as a run tags it), else from the
files the report says its run read (a baseline: its ``options.datasets``, from the
current directory); each must be the data the answers were given on (same
fingerprint).

Exit status: 0; 1 when a gate of the new scores fails (``--no-gate``: reported only)
or rows could not be scored again (their answer was not kept whole: listed, left
out, the report marked incomplete); 4 for a bad argument, an unreadable or edited
file, a file that keeps no answers, missing or changed data, or an output that would
overwrite an input (one line on stderr; nothing is written).
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .._text import inert
from ..errors import CtxBenchError

__all__ = ["add_parser", "run"]

USAGE_ERROR = 4
DEFAULT_CACHE_DIR = Path(".pytest_cache") / "d" / "ctxbench"


class _Usage(Exception):
    pass


def add_parser(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "source",
        metavar="REPORT|BASELINE",
        help="A JSON report (--ctxbench-json) or a baseline (--ctxbench-save-baseline) whose rows kept their answers",
    )
    parser.add_argument(
        "--evaluator",
        action="append",
        default=[],
        metavar="MODULE:OBJ",
        help="An evaluator to add to every dataset's, repeatable (as --ctxbench-evaluator); imported from the current directory or the installed packages",
    )
    parser.add_argument(
        "--dataset",
        action="append",
        default=[],
        metavar="SPEC",
        help="The examples of a dataset the answers were given on, repeatable (a path or a registered name). Default: the files the run read",
    )
    parser.add_argument(
        "--score-field",
        metavar="FIELD",
        help="Judge every suite by this score (as --ctxbench-score-field). Default: each suite's own",
    )
    parser.add_argument("--json", dest="json_path", metavar="PATH", required=True, help="Write the re-scored JSON report to PATH")
    parser.add_argument("--html", dest="html_path", metavar="PATH", help="Write its HTML report to PATH")
    parser.add_argument("--markdown", dest="markdown_path", metavar="PATH", help="Write its Markdown summary to PATH")
    parser.add_argument(
        "--save-baseline",
        dest="save_baseline",
        metavar="PATH",
        help="Also write the re-scored rows as a baseline (refused when some could not be scored again)",
    )
    parser.add_argument(
        "--cache",
        dest="cache_mode",
        default="once",
        choices=("once", "replay", "refresh", "off"),
        help="The LLM cache of the evaluators' calls (judges), as --ctxbench-cache. Default: once",
    )
    parser.add_argument(
        "--cache-dir",
        type=Path,
        default=DEFAULT_CACHE_DIR,
        metavar="DIR",
        help=f"The cache's directory, as --ctxbench-cache-dir. Default: {DEFAULT_CACHE_DIR}",
    )
    parser.add_argument("--no-gate", action="store_true", help="Report the gates without failing")


_OUTPUTS = (
    ("json_path", "--json"),
    ("html_path", "--html"),
    ("markdown_path", "--markdown"),
    ("save_baseline", "--save-baseline"),
)


def _check_outputs(args: argparse.Namespace, inputs: dict[Path, str]) -> None:
    """No output overwrites an input or another output, and each can be created."""
    from ._outputs import OutputClash, check_outputs

    try:
        check_outputs(((flag, getattr(args, dest)) for dest, flag in _OUTPUTS), inputs)
    except OutputClash as exc:
        raise _Usage(str(exc)) from None


def run(args: argparse.Namespace) -> int:
    try:
        return _run(args)
    except (_Usage, CtxBenchError) as exc:
        print(f"ctxbench rescore: error: {inert(' '.join(str(exc).split()))}", file=sys.stderr)
        return USAGE_ERROR


def _local(spec: str, bases: list[Path]) -> Path | None:
    """The file a dataset spec names, when it names one (a registered name does not)."""
    for base in bases:
        candidate = Path(spec) if Path(spec).is_absolute() else base / spec
        if candidate.is_file():
            return candidate.resolve()
    return None


def _datasets(args: argparse.Namespace, saved: Any) -> dict[str, Any]:
    """The datasets of the rows, by tag: ``--dataset``, else the run's own files."""
    from ..datasets import resolve_datasets

    bases = [Path.cwd(), saved.path.resolve().parent]
    given = list(args.dataset)
    if given:
        specs = [(spec, None) for spec in given]
    elif saved.sources:
        specs = [(src, saved.families.get(tag)) for tag, src in saved.sources.items()]
    else:
        specs = [(str(spec), None) for spec in saved.options.get("datasets") or []]
    out: dict[str, Any] = {}
    for spec, family in specs:
        base = next((b for b in bases if _local(spec, [b]) is not None), bases[0])
        try:
            found = resolve_datasets(spec, base_dir=base, family=family)
        except CtxBenchError as exc:
            where = "--dataset" if given else f"the dataset {spec!r} the run read"
            raise _Usage(f"{where}: {exc}; pass the examples with --dataset SPEC") from None
        for ds in found:
            if ds.tag in out:
                raise _Usage(f"two datasets share the tag {ds.tag!r}; rename one file")
            want = saved.fingerprints.get(ds.tag)
            if want is not None and want != ds.fingerprint:
                raise _Usage(
                    f"the dataset {ds.tag!r} ({getattr(ds, 'path', spec)}) is not the one"
                    f" {saved.path} was run on (another fingerprint: its examples"
                    " changed); pass the data the answers were given on with --dataset"
                )
            out[ds.tag] = ds
    return out


def _evaluators(paths: list[str]) -> list[Any]:
    from ..importing import load_evaluator

    here = os.getcwd()
    if here not in sys.path:
        sys.path.insert(0, here)  # a module of the project, as pytest's pythonpath
    out = []
    for path in paths:
        try:
            out.append(load_evaluator(path))
        except CtxBenchError as exc:
            raise _Usage(f"--evaluator={path}: {exc}") from None
    names = [e.name for e in out]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise _Usage(f"--evaluator: two evaluators share the name {dup[0]!r}; their details would mix. Give one another name")
    return out


def _activate(args: argparse.Namespace, saved: Any) -> Callable[[], None]:
    """The LLM cache and the file's own prices, active for the evaluators' calls;
    returns what restores the previous ones."""
    from ..cache import CacheFileError, LLMCache, set_active_cache
    from ..pricing import Price, PriceTable, set_active_prices

    cache = LLMCache.in_dir(args.cache_dir, args.cache_mode)
    if cache.mode != "off":
        try:
            cache.store.check_links()
            if cache.path.exists():
                cache.store.info()
        except CacheFileError as exc:
            if cache.mode == "replay":
                raise _Usage(f"--cache=replay: {exc}") from None
            cache.broken = str(exc)
            print(f"ctxbench rescore: warning: {inert(str(exc))}", file=sys.stderr)
        finally:
            cache.store.close()
    record = saved.options.get("prices")
    table = PriceTable()
    if isinstance(record, dict):
        explicit = {
            str(model): Price(
                float(f["input"]), float(f["output"]),
                None if f.get("cached") is None else float(f["cached"]),
                None if f.get("cache_write") is None else float(f["cache_write"]),
            )
            for model, f in (record.get("explicit") or {}).items()
        }
        table = PriceTable(explicit, auto=bool(record.get("auto")), provider=record.get("provider"))
    previous_cache = set_active_cache(cache)
    previous_prices = set_active_prices(table)

    def restore() -> None:
        cache.store.close()
        set_active_cache(previous_cache)
        set_active_prices(previous_prices)

    return restore


def _run(args: argparse.Namespace) -> int:
    from .. import __version__
    from .._files import atomic_write_text
    from ..baseline import write_baseline
    from ..evaluators import wired_evaluators
    from ..report import render_lines, to_json_dict, write_json
    from ..rescore import load_saved, rescore_saved
    from ..results import json_safe
    from ..urls import redact

    started = time.perf_counter()
    source = Path(args.source)
    inputs: dict[Path, str] = {source.resolve(): f"the file scored again ({args.source})"}
    for spec in args.dataset:
        local = _local(spec, [Path.cwd()])
        if local is not None:
            inputs[local] = f"a dataset (--dataset {spec})"
    _check_outputs(args, inputs)
    saved = load_saved(source)
    for note in saved.notes:
        print(f"ctxbench rescore: warning: {inert(note)}", file=sys.stderr)
    needing = [r for r in saved.records if not (r.row.error and str(r.row.error.get("where", "")).startswith("system"))]
    if needing and not any((r.io or {}).get("answer") is not None for r in needing):
        raise _Usage(
            f"{source} keeps no answers (saved with --ctxbench-baseline-responses=off,"
            " or by a pytest-context-bench that kept none): nothing can be scored again;"
            " save the run again with its answers (the default)"
        )
    datasets = _datasets(args, saved)
    for tag, ds in datasets.items():  # a default file the run read is an input too
        path = getattr(ds, "path", None)
        if isinstance(path, str):
            inputs.setdefault(Path(path).resolve(), f"the dataset {tag!r}")
    _check_outputs(args, inputs)
    extra = _evaluators(args.evaluator)
    restore = _activate(args, saved)
    try:
        result = rescore_saved(
            saved,
            datasets,
            lambda ds: wired_evaluators(ds, None, extra),
            score_field=args.score_field,
        )
    finally:
        restore()
    report = result.report
    names = sorted({e["name"] for evs in result.evaluators.values() for e in evs})
    run_info = dict(saved.run)
    run_info["invocation"] = ["ctxbench", "rescore", *map(redact, getattr(args, "_argv", None) or [args.source])]
    run_info["rescored"] = {
        "from": str(source),
        "kind": saved.kind,
        "evaluators": result.evaluators,
        "not_rescored": result.not_rescored,
    }
    if saved.kind == "baseline":
        run_info["datasets"] = [
            {"tag": tag, "family": ds.family, "source": str(getattr(ds, "path", tag)),
             "examples": len(ds), "fingerprint": ds.fingerprint}
            for tag, ds in datasets.items()
        ]
    enforced = not args.no_gate
    doc = to_json_dict(report, run=run_info, gates_enforced=enforced, version=__version__)
    if result.llm is not None:
        doc["llm"] = json_safe(result.llm)
    width = shutil.get_terminal_size().columns
    lines = [text for text, _ in render_lines(report, gate_enforced=enforced, width=width)]
    lines.append(
        f"re-scored {len(report.records)} of {len(saved.records)} rows of {source}"
        f" ({saved.kind}) with: {', '.join(names) or 'no evaluator'}"
    )
    status = 1 if report.breaches and enforced else 0
    if result.not_rescored:
        status = 1
        lines.append(
            f"not re-scored ({len(result.not_rescored)}, left out; the report is"
            " marked incomplete):"
        )
        lines += [f"  {line}" for line in result.not_rescored[:20]]
        if len(result.not_rescored) > 20:
            lines.append(f"  ... and {len(result.not_rescored) - 20} more (run.rescored.not_rescored in the JSON report)")
    # Every view is rendered before anything is written.
    markdown = None
    if args.markdown_path is not None:
        from ..report.markdown import render_markdown

        markdown = render_markdown(doc)
    html = None
    if args.html_path is not None:
        from ..report.html import render_html

        html = render_html(doc, title=f"ctxbench rescore: {args.source}")
    writes: list[tuple[str, str | None, Callable[[Path], None]]] = [
        ("JSON report", args.json_path, lambda p: write_json(doc, p)),
        ("HTML report", args.html_path, lambda p: atomic_write_text(p, html or "")),
        ("Markdown summary", args.markdown_path, lambda p: atomic_write_text(p, markdown or "")),
    ]
    for what, out, write in writes:
        if out is None:
            continue
        try:
            write(Path(out))
        except OSError as exc:
            lines.append(f"could not write the {what} to {out}: {exc.strerror or exc}")
            status = 1
        else:
            lines.append(f"{what}: {out}")
    if args.save_baseline is not None:
        if result.not_rescored:
            lines.append(
                f"baseline not saved to {args.save_baseline}: {len(result.not_rescored)}"
                " row(s) could not be scored again"
            )
            status = 1
        else:
            fingerprints = {tag: ds.fingerprint for tag, ds in datasets.items()}
            try:
                write_baseline(
                    args.save_baseline, doc, git_commit=saved.git_commit,
                    dataset_fingerprints={**saved.fingerprints, **fingerprints},
                )
            except OSError as exc:
                lines.append(f"could not write the baseline to {args.save_baseline}: {exc.strerror or exc}")
                status = 1
            else:
                lines.append(f"baseline saved: {args.save_baseline}")
    lines.append(f"ctxbench rescore: {time.perf_counter() - started:.2f}s")
    from ..report.terminal import wrap_line

    print("\n".join(out for line in lines for out in wrap_line(inert(line), width)))
    return status
