"""Aggregating recorded rows into a run report, and rendering it (table, JSON).

Pure: no pytest. The plugin's controller feeds :func:`build_run_report` the rows it
received; a script can feed it rows read back from a JSON report.
"""

from __future__ import annotations

from .run import RunReport, SuiteInfo, build_run_report
from .json_report import SCHEMA_VERSION, load_report, load_schema, to_json_dict, write_json
from .terminal import render_lines

__all__ = [
    "RunReport",
    "SuiteInfo",
    "build_run_report",
    "SCHEMA_VERSION",
    "load_schema",
    "load_report",
    "to_json_dict",
    "write_json",
    "render_lines",
]
