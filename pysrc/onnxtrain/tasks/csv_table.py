"""A CSV table's columns as the tabular flow sees them: each column's kind and counts, the label column, the task."""
from __future__ import annotations

import numpy as np

from ..train.csv import Table, is_missing, parse_column
from ..train.data import DataError
from .checks import names_text, show

TASKS = ("classification", "regression")
MAX_LISTED = 30  # columns named in a message


def _numeric(values: list):
    """The column as floats (NaN where missing or non-finite), or None when some present value is not a number."""
    parsed = parse_column(values)
    return None if parsed is None else parsed[0]


def column(table: Table, name: str) -> int:
    """The index of the column ``name``; DataError listing the columns when there is none."""
    if name not in table.header:
        shown = table.header[:MAX_LISTED] + (["…"] if len(table.header) > MAX_LISTED else [])
        raise DataError(f"there is no column named {show(name)}; the columns are {names_text(shown)}")
    return table.header.index(name)


def describe(table: Table) -> dict:
    """Per column: kind (numeric / categorical), missing count, non-finite count (numbers such as ``inf`` or
    ``1e39`` that float32 cannot hold, treated as missing), distinct count; plus a preview."""
    columns = []
    for j, name in enumerate(table.header):
        values = [r[j] for r in table.rows]
        parsed = parse_column(values)
        present = [v for v in values if not is_missing(v)]
        columns.append({"name": name, "kind": "numeric" if parsed is not None else "categorical",
                        "missing": len(values) - len(present), "distinct": len(set(present)),
                        "nonfinite": 0 if parsed is None else int(parsed[1].sum())})
    return {"columns": columns, "rows": len(table.rows), "preview": table.rows[:8],
            "suggested_label": table.header[-1]}


def detect_task(table: Table, label: str) -> str:
    j = column(table, label)
    values = [r[j] for r in table.rows if not is_missing(r[j])]
    numbers = _numeric(values)
    if numbers is None:
        return "classification"
    numbers = numbers[~np.isnan(numbers)]
    if numbers.size and np.all(numbers == np.round(numbers)) and len(set(values)) <= 20:
        return "classification"
    return "regression"


def check_task(task) -> str:
    if task is None:
        raise DataError("the task is not given; it must be \"classification\" or \"regression\"")
    if task not in TASKS:
        raise DataError(f"the task is {show(task)}; it must be \"classification\" or \"regression\"")
    return task
