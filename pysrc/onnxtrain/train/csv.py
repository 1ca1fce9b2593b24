"""CSV files of numbers as a model's training inputs: the CSV text read into a checked Table of cells (the limits,
the encoding, ragged rows), missing and non-finite cells told apart, and csv_inputs for a features-and-labels model."""
from __future__ import annotations

import csv
import io
from dataclasses import dataclass

import numpy as np

from .data import DataError, show

MISSING = {"", "na", "nan", "null", "none", "?", "n/a"}
MAX_CSV_BYTES = 64 << 20
MAX_COLUMNS = 1000
MAX_CELLS = 5_000_000
FLOAT32_MAX = float(np.finfo(np.float32).max)


@dataclass
class Table:
    header: list
    rows: list  # list of lists of str, all of len(header)
    lines: list = None  # the file's line (1-based) where each row starts

    def line(self, r: int) -> int:
        return self.lines[r] if self.lines else r + 2


def _decode(data: bytes, name: str) -> str:
    if len(data) > MAX_CSV_BYTES:
        raise DataError(f"{name} has {len(data):,} bytes; at most {MAX_CSV_BYTES:,} ({MAX_CSV_BYTES >> 20} MiB) are "
                        f"read: use a sample of the rows")
    if data[:2] in (b"\xff\xfe", b"\xfe\xff"):
        raise DataError(f"{name} is UTF-16 text: save it as CSV UTF-8")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        raise DataError(f"{name} is not UTF-8 text (byte {e.start}, line {line}): save it as CSV UTF-8") from None


def parse_csv(data, name: str = "the CSV file") -> Table:
    """A Table from CSV bytes (UTF-8, with a header row); ragged rows, repeated column names, empty and
    oversized files are refused."""
    text = _decode(bytes(data), name)
    try:
        dialect = csv.Sniffer().sniff(text[:4096], delimiters=",;\t")
    except csv.Error:
        dialect = csv.excel
    reader = csv.reader(io.StringIO(text), dialect)
    rows, lines, width, cells, last = [], [], None, 0, 0
    try:
        for record in reader:
            start, last = last + 1, reader.line_num
            if not any(cell.strip() for cell in record):
                continue
            if width is None:
                width = len(record)
                if width > MAX_COLUMNS:
                    raise DataError(f"{name} has {width:,} columns; at most {MAX_COLUMNS:,} can be used")
            elif len(record) != width:
                raise DataError(f"{name}: row {start} has {len(record)} fields, but the header has {width}")
            cells += width
            if cells > MAX_CELLS:
                raise DataError(f"{name} has more than {MAX_CELLS:,} cells (rows × columns); at most that many are "
                                f"read: use a sample of the rows")
            rows.append(record)
            lines.append(start)
    except csv.Error as e:
        raise DataError(f"{name}: row {last + 1} cannot be read as CSV ({e})") from None
    if not rows:
        raise DataError(f"{name} is empty")
    header, body = [h.strip() or f"column {i + 1}" for i, h in enumerate(rows[0])], rows[1:]
    seen = {}
    for i, h in enumerate(header):
        if h in seen:
            raise DataError(f"{name} has two columns named {show(h)} (columns {seen[h] + 1} and {i + 1}): "
                            f"rename one")
        seen[h] = i
    if not body:
        raise DataError(f"{name} has a header row but no data rows")
    return Table(header, [[c.strip() for c in r] for r in body], lines[1:])


def is_missing(cell: str) -> bool:
    """Whether a cell is empty or one of MISSING's spellings (any case)."""
    return cell.lower() in MISSING


def parse_column(values: list):
    """(floats, non-finite mask) of a column, NaN where a cell is missing or not a finite float32 (``inf``,
    ``1e39``); None when some present cell is not a number."""
    out = np.full(len(values), np.nan)
    nonfinite = np.zeros(len(values), dtype=bool)
    for i, v in enumerate(values):
        if is_missing(v):
            continue
        try:
            x = float(v)
        except ValueError:
            return None
        if abs(x) <= FLOAT32_MAX:
            out[i] = x
        else:
            nonfinite[i] = True
    return out, nonfinite


def csv_inputs(data, inputs: dict) -> dict:
    """Arrays for a model's two training inputs (features, labels) from a CSV of numbers (bytes).  ``inputs`` is
    name -> (numpy dtype, shape with None for a free axis), in the training model's input order.  The label column
    is the one named like the labels input, else the last; the other columns, in order, are the features."""
    names = list(inputs)
    if len(names) != 2:
        raise DataError(f"a CSV file fits a model whose training inputs are features and labels; this one takes "
                        f"{names}: use a .npz file with one array per input")
    table = parse_csv(data, "the data file")
    (features, (f_type, f_shape)), (labels, (l_type, l_shape)) = inputs.items()
    if len(table.header) < 2:
        raise DataError(f"the data file has one column ({show(table.header[0])}); it needs feature columns and a "
                        f"label column")
    j = table.header.index(labels) if labels in table.header else len(table.header) - 1
    columns = []
    for k, name in enumerate(table.header):
        parsed = parse_column([r[k] for r in table.rows])
        if parsed is None:
            raise DataError(f"column {show(name)} of the data file is not numeric; the CSV flow above one-hot "
                            f"encodes text")
        values, nonfinite = parsed
        if nonfinite.any():
            r = int(np.flatnonzero(nonfinite)[0])
            raise DataError(f"column {show(name)} of the data file has {int(nonfinite.sum())} non-finite values "
                            f"(first: row {table.line(r)}, {show(table.rows[r][k])}); float32 holds up to ±3.4e38")
        if np.isnan(values).any():
            raise DataError(f"column {show(name)} of the data file has {int(np.isnan(values).sum())} missing values")
        columns.append(values)
    x = np.stack([c for k, c in enumerate(columns) if k != j], axis=1)
    per_row = f_shape[1:] if f_shape else None
    if per_row and all(d is not None for d in per_row):
        if int(np.prod(per_row)) != x.shape[1]:
            raise DataError(f"input {features!r} takes {per_row} values per row, but the data file has "
                            f"{x.shape[1]} feature columns besides the label column {show(table.header[j])}")
        x = x.reshape([len(x)] + per_row)
    y = columns[j]
    if np.issubdtype(l_type, np.integer) and not np.all(y == np.round(y)):
        raise DataError(f"the label column {show(table.header[j])} must hold whole numbers (class indices) for "
                        f"{labels!r}")
    if l_shape is not None and len(l_shape) == 2:
        y = y.reshape(-1, 1)
    return {features: x.astype(f_type), labels: y.astype(l_type)}
