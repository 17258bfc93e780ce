"""``--ctxbench-list-datasets``: the registered datasets as a table."""

from __future__ import annotations

from tabulate import tabulate

from .registry import RegisteredDataset, available, lookup

__all__ = ["datasets_table", "configs_cell"]

#: How many configs a cell names before it counts the rest.
_SHOWN_CONFIGS = 6


def configs_cell(entry: RegisteredDataset, shown: int = _SHOWN_CONFIGS) -> str:
    """The configs of ``entry`` for one cell: the default first, marked ``*``, and
    ``+N more`` past ``shown``; ``-`` when it has none."""
    if not entry.configs:
        return "-"
    names = list(entry.configs)
    if entry.default_config in names:
        names.remove(entry.default_config)
        names.insert(0, entry.default_config)
    cells = [f"{c}*" if c == entry.default_config else c for c in names[:shown]]
    more = len(names) - shown
    return ", ".join(cells) + (f" +{more} more" if more > 0 else "")


def datasets_table(*, all_configs: bool = False, width: int | None = None) -> str:
    """Every registered dataset: name, family, source, configs, description.

    :param all_configs: list every config instead of the first few.
    :param width: the terminal's width: when the table is wider, each dataset is
        a few lines instead (name, family and source; its configs; its
        description), every line at most ``width`` columns. ``None``: the table.
    """
    from ..report.terminal import wrap_line

    rows = []
    for name in available():
        entry = lookup(name)
        assert entry is not None
        shown = len(entry.configs) if all_configs else _SHOWN_CONFIGS
        rows.append((name, entry.family, entry.source or "-", configs_cell(entry, shown),
                     entry.description))
    table = tabulate(rows, headers=("name", "family", "source", "configs (*default)",
                                    "description"), tablefmt="simple")
    footer = (
        f"{len(rows)} datasets. Run one with --ctxbench-dataset=NAME or "
        "NAME:CONFIG; their files are looked for in --ctxbench-data-dir, then the "
        "download cache; --ctxbench-hub allows downloading (docs/datasets.md)."
    )
    lines = table.splitlines()
    if width is not None and max(len(line) for line in lines) > width:
        lines = []
        for name, family, source, configs, description in rows:
            lines += wrap_line(f"{name} ({family}): {source}", width)
            if configs != "-":
                lines += wrap_line(f"  configs (*default): {configs}", width)
            lines += wrap_line(f"  {description}", width)
    return "\n".join([*lines, "", *wrap_line(footer, width)])
