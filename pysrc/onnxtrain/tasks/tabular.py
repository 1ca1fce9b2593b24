"""Tabular data: parse a CSV, describe its columns, turn it into feature matrices, train an MLP on them, and export
a model that takes the raw columns (standardisation, imputation and one-hot encoding inside the graph)."""
from __future__ import annotations

import csv
import hashlib
import io
import json
import re
from dataclasses import dataclass, field

import numpy as np

from ..ir import load as ir_load, to_bytes
from ..ir.dtypes import DataType
from ..ir.model import Attribute, AttrType, Graph, Model, Node, Tensor, TensorType, ValueInfo
from ..runtime import Session
from ..train.data import DataError
from .checks import check_validation, check_whole, names_text, show, whole
from .head import classes_doc, with_head
from .split import random_split, stratified_split
from .training import classification_metrics, inference_model, make_artifacts, predict, run_factory

MISSING = {"", "na", "nan", "null", "none", "?", "n/a"}
MAX_CATEGORIES = 50
MAX_CLASSES = 50
MAX_CSV_BYTES = 64 << 20
MAX_COLUMNS = 1000
MAX_CELLS = 5_000_000
MAX_PREDICT_ROWS = 100_000
MAX_PAGE_ROWS = 1000
MAX_LAYERS = 16
MAX_WIDTH = 1_000_000
MAX_PARAMETERS = 20_000_000
TASKS = ("classification", "regression")
MAX_LISTED = 30  # columns named in a message
FLOAT32_MAX = float(np.finfo(np.float32).max)
FLOAT32_TINY = float(np.finfo(np.float32).tiny)
MAX_TARGET = 1e15  # a regression target beyond this makes a batch's squared error overflow float32


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
        raise DataError(f"{name} is not UTF-8 text (byte {e.start}): save it as CSV UTF-8") from None


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


def _is_missing(cell: str) -> bool:
    return cell.lower() in MISSING


def _parse(values: list):
    """(floats, non-finite mask) of a column, NaN where a cell is missing or not a finite float32 (``inf``,
    ``1e39``); None when some present cell is not a number."""
    out = np.full(len(values), np.nan)
    nonfinite = np.zeros(len(values), dtype=bool)
    for i, v in enumerate(values):
        if _is_missing(v):
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


def _numeric(values: list):
    """The column as floats (NaN where missing or non-finite), or None when some present value is not a number."""
    parsed = _parse(values)
    return None if parsed is None else parsed[0]


def _column(table: Table, name: str) -> int:
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
        parsed = _parse(values)
        present = [v for v in values if not _is_missing(v)]
        columns.append({"name": name, "kind": "numeric" if parsed is not None else "categorical",
                        "missing": len(values) - len(present), "distinct": len(set(present)),
                        "nonfinite": 0 if parsed is None else int(parsed[1].sum())})
    return {"columns": columns, "rows": len(table.rows), "preview": table.rows[:8],
            "suggested_label": table.header[-1]}


def detect_task(table: Table, label: str) -> str:
    j = _column(table, label)
    values = [r[j] for r in table.rows if not _is_missing(r[j])]
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


@dataclass
class Preprocessing:
    """How raw columns become features; fitted on the training rows only."""
    numeric: list = field(default_factory=list)        # column names
    mean: list = field(default_factory=list)
    std: list = field(default_factory=list)
    categorical: list = field(default_factory=list)    # column names
    categories: list = field(default_factory=list)     # per categorical column, its category strings
    classes: list = field(default_factory=list)        # class names (classification)
    task: str = "classification"
    label: str = ""                                    # the label column's name

    @property
    def n_features(self) -> int:
        return len(self.numeric) + sum(len(c) for c in self.categories)

    def raw_inputs(self, table: Table, rows) -> tuple:
        """(numeric float32 [n, k] with NaN for missing and non-finite cells, categorical object [n, m] of str);
        a present cell that is not a number gives a DataError naming its row, column and value."""
        rows = list(rows)
        num = np.full((len(rows), len(self.numeric)), np.nan, dtype=np.float32)
        for k, name in enumerate(self.numeric):
            j = table.header.index(name)
            for i, r in enumerate(rows):
                cell = table.rows[r][j]
                if _is_missing(cell):
                    continue
                try:
                    x = float(cell)
                except ValueError:
                    raise DataError(f"row {table.line(r)}, column {show(name)}: {show(cell)} is not a number, but the "
                                    f"model was trained on numbers in this column") from None
                if abs(x) <= FLOAT32_MAX:
                    num[i, k] = x
        cidx = [table.header.index(c) for c in self.categorical]
        cat = np.array([[table.rows[r][j] for j in cidx] for r in rows], dtype=object).reshape(len(rows), len(cidx))
        return num, cat

    def features(self, num: np.ndarray, cat: np.ndarray) -> np.ndarray:
        """What the preprocessing graph computes, in numpy: impute, standardise, one-hot."""
        mean, std = np.float32(self.mean), np.float32(self.std)
        parts = [(np.where(np.isnan(num), mean, num) - mean) / std]
        for j, cats in enumerate(self.categories):
            parts.append((cat[:, j:j + 1] == np.array(cats, dtype=object)[None, :]).astype(np.float32))
        return np.concatenate(parts, axis=1).astype(np.float32)


def prepare(table: Table, label: str, task: str, validation: float = 0.2, seed: int = 0) -> dict:
    """Split the rows (stratified by class for classification), fit the preprocessing on the training part, and
    return the arrays.  Rows without a label (missing, or non-finite for regression) are dropped."""
    j = _column(table, label)
    check_task(task)
    validation = check_validation(validation)
    labels = [r[j] for r in table.rows]
    if task == "regression":
        parsed = _parse(labels)
        if parsed is None:
            bad = next(r for r, v in enumerate(labels) if not _is_missing(v) and _parse([v]) is None)
            raise DataError(f"the label column {show(label)} has text values (row {table.line(bad)}: "
                            f"{show(labels[bad])}), so it cannot be a regression target")
        target = parsed[0]
        labelled = [i for i in range(len(labels)) if not np.isnan(target[i])]
        large = [i for i in labelled if abs(target[i]) > MAX_TARGET]
        if large:
            raise DataError(f"the label column {show(label)} has values as large as {show(labels[large[0]])} (row "
                            f"{table.line(large[0])}); a squared error overflows float32 beyond ±{MAX_TARGET:g}: "
                            f"rescale the column (for example to thousands or millions)")
    else:
        labelled = [i for i, v in enumerate(labels) if not _is_missing(v)]
    dropped = len(table.rows) - len(labelled)
    if len(labelled) < 4:
        raise DataError(f"only {len(labelled)} rows have a value in the label column {show(label)}; at least 4 are "
                        f"needed")
    pre = Preprocessing(task=task, label=label)
    if task == "classification":
        present = sorted({labels[r] for r in labelled}, key=_class_key)
        if len(present) < 2:
            raise DataError(f"the label column {show(label)} has only one class ({show(present[0])}); a classifier "
                            f"needs at least two")
        if len(present) > MAX_CLASSES:
            raise DataError(f"the label column {show(label)} has {len(present)} classes; use regression or fewer "
                            f"classes (at most {MAX_CLASSES})")
        index = {c: i for i, c in enumerate(present)}
        ids = np.array([index[labels[r]] for r in labelled])
        train_pos, val_pos = stratified_split(ids, validation, seed)
        train_rows, val_rows = [labelled[p] for p in train_pos], [labelled[p] for p in val_pos]
        pre.classes = present  # every class keeps a training row
        y = np.array([index.get(v, -1) for v in labels], dtype=np.int64)
    else:
        train_rows, val_rows = random_split(len(labels), validation, seed, labelled)
        y = np.nan_to_num(target).astype(np.float32).reshape(-1, 1)
    nonfinite = 0
    for k, name in enumerate(table.header):
        if k == j:
            continue
        parsed = _parse([r[k] for r in table.rows])
        if parsed is not None:
            numbers = parsed[0][train_rows]
            present = numbers[~np.isnan(numbers)]
            mean = float(present.mean()) if present.size else 0.0
            std = float(present.std()) if present.size else 1.0
            pre.numeric.append(name)
            pre.mean.append(mean)
            # a constant column, or one whose spread float32 cannot hold, is centred only
            pre.std.append(std if FLOAT32_TINY <= std <= FLOAT32_MAX else 1.0)
            nonfinite += int(parsed[1][train_rows + val_rows].sum())
        else:
            cats = sorted({table.rows[r][k] for r in train_rows if not _is_missing(table.rows[r][k])})
            if len(cats) > MAX_CATEGORIES:
                raise DataError(f"column {show(name)} has {len(cats)} different text values; at most {MAX_CATEGORIES} "
                                f"can be one-hot encoded. Remove the column or make it numeric")
            pre.categorical.append(name)
            pre.categories.append(cats)
    if pre.n_features == 0:
        raise DataError("there are no feature columns besides the label")
    used = sorted(train_rows + val_rows)
    num, cat = pre.raw_inputs(table, used)
    x = np.zeros((len(table.rows), pre.n_features), np.float32)
    with np.errstate(over="ignore", invalid="ignore"):
        x[used] = pre.features(num, cat)
    overflow = ~np.isfinite(x[used, :len(pre.numeric)]).all(axis=0)
    if overflow.any():
        name = pre.numeric[int(np.flatnonzero(overflow)[0])]
        values = num[:, pre.numeric.index(name)]
        raise DataError(f"column {show(name)} spans {np.nanmin(values):g} to {np.nanmax(values):g}, too wide to "
                        f"standardise in float32: rescale the column")
    missing_cells = int(np.isnan(num).sum() + sum(_is_missing(c) for c in cat.ravel()))
    return {"preprocessing": pre, "x_train": x[train_rows], "y_train": y[train_rows],
            "x_val": x[val_rows], "y_val": y[val_rows], "train_rows": train_rows, "val_rows": val_rows,
            "dropped_rows": dropped, "missing_cells": missing_cells, "nonfinite_cells": nonfinite}


def _class_key(c: str):
    try:
        return (0, float(c), c)
    except ValueError:
        return (1, 0.0, c)


def mlp_model(n_in: int, hidden: list, n_out: int, seed: int = 0) -> Model:
    """A forward MLP: features [batch, n_in] -> Gemm/Relu ... -> output [batch, n_out]."""
    rng = np.random.default_rng(seed)
    nodes, inits, prev, width = [], [], "features", n_in
    sizes = list(hidden) + [n_out]
    for i, size in enumerate(sizes):
        w, b = f"fc{i + 1}.weight", f"fc{i + 1}.bias"
        bound = 1 / np.sqrt(width)
        inits += [Tensor(w, rng.uniform(-bound, bound, (size, width)).astype(np.float32), DataType.FLOAT),
                  Tensor(b, rng.uniform(-bound, bound, size).astype(np.float32), DataType.FLOAT)]
        out = "output" if i == len(sizes) - 1 else f"fc{i + 1}_out"
        nodes.append(Node("Gemm", [prev, w, b], [out], name=f"fc{i + 1}",
                          attributes={"transB": Attribute("transB", AttrType.INT, 1)}))
        if i < len(sizes) - 1:
            nodes.append(Node("Relu", [out], [f"relu{i + 1}"], name=f"relu{i + 1}"))
            prev = f"relu{i + 1}"
        width = size
    graph = Graph(name="tabular_mlp", nodes=nodes, initializers=inits,
                  inputs=[ValueInfo("features", TensorType(DataType.FLOAT, ["batch", n_in]))],
                  outputs=[ValueInfo("output", TensorType(DataType.FLOAT, ["batch", n_out]))])
    return Model(graph=graph, ir_version=8, opset_imports={"": 19}, producer_name="onnxtrain")


def tabular_doc(pre: Preprocessing) -> str:
    """The exported model's doc string: which columns go into which input, and what comes out (names as JSON
    strings, so that commas, quotes and newlines in them stay unambiguous)."""
    parts = []
    if pre.numeric:
        parts.append(f"Input 'numeric': float32 [batch, {len(pre.numeric)}], the columns {names_text(pre.numeric)} "
                     f"in this order, NaN where a value is missing.")
    if pre.categorical:
        parts.append(f"Input 'categorical': string [batch, {len(pre.categorical)}], the columns "
                     f"{names_text(pre.categorical)} in this order (one-hot encoded inside the model).")
    if pre.task == "classification":
        parts.append(f"Predicts {show(pre.label, 10**6)}: {classes_doc(pre.classes, capital=False)}")
    else:
        parts.append(f"Predicts {show(pre.label, 10**6)} (regression): output 'output' [batch, 1].")
    return " ".join(parts)


def check_hidden(hidden, n_in: int, n_out: int) -> list:
    """The hidden-layer sizes as ints; each a whole number from 1 to MAX_WIDTH, at most MAX_LAYERS of them and
    MAX_PARAMETERS weights in all."""
    if isinstance(hidden, str):
        hidden = [h for h in re.split(r"[\s,]+", hidden) if h]
    if not isinstance(hidden, (list, tuple, np.ndarray)):
        raise DataError(f"the hidden layer sizes are {show(hidden)}; they must be a list of whole numbers such as "
                        f"[32, 16] ([] for none)")
    sizes = []
    for i, h in enumerate(hidden):
        size = whole(h, 1, MAX_WIDTH)
        if size is None:
            raise DataError(f"hidden layer {i + 1} has size {show(h)}; a layer size is a whole number from 1 to "
                            f"{MAX_WIDTH:,}")
        sizes.append(size)
    if len(sizes) > MAX_LAYERS:
        raise DataError(f"{len(sizes)} hidden layers were asked for; at most {MAX_LAYERS} are allowed")
    widths = [n_in] + sizes + [n_out]
    weights = sum((a + 1) * b for a, b in zip(widths, widths[1:]))
    if weights > MAX_PARAMETERS:
        raise DataError(f"hidden layers {sizes} with {n_in} features give {weights:,} parameters; at most "
                        f"{MAX_PARAMETERS:,} are allowed: use smaller layers")
    return sizes


def with_preprocessing(inference: Model, pre: Preprocessing) -> Model:
    """The exported model with the preprocessing in front: inputs ``numeric`` (float32 [batch, k], NaN for
    missing) and ``categorical`` (string [batch, m]); for classification also ``probabilities`` and ``label``."""
    nodes, inits, parts, inputs = [], [], [], []

    def const(name, value, code):
        inits.append(Tensor(name, value, code))
        return name

    if pre.numeric:
        inputs.append(ValueInfo("numeric", TensorType(DataType.FLOAT, ["batch", len(pre.numeric)])))
        mean = const("pre.mean", np.float32(pre.mean).reshape(1, -1), DataType.FLOAT)
        std = const("pre.std", np.float32(pre.std).reshape(1, -1), DataType.FLOAT)
        nodes += [Node("IsNaN", ["numeric"], ["pre.missing"], name="pre.missing"),
                  Node("Where", ["pre.missing", mean, "numeric"], ["pre.imputed"], name="pre.impute"),
                  Node("Sub", ["pre.imputed", mean], ["pre.centered"], name="pre.center"),
                  Node("Div", ["pre.centered", std], ["pre.scaled"], name="pre.scale")]
        parts.append("pre.scaled")
    if pre.categorical:
        inputs.append(ValueInfo("categorical", TensorType(DataType.STRING, ["batch", len(pre.categorical)])))
        for j, cats in enumerate(pre.categories):
            col = const(f"pre.col{j}", np.array([j], np.int64), DataType.INT64)
            values = const(f"pre.categories{j}", np.array([c.encode() for c in cats], dtype=object).reshape(1, -1),
                           DataType.STRING)
            nodes += [Node("Gather", ["categorical", col], [f"pre.c{j}"], name=f"pre.column{j}",
                           attributes={"axis": Attribute("axis", AttrType.INT, 1)}),
                      Node("Equal", [f"pre.c{j}", values], [f"pre.hot{j}"], name=f"pre.onehot{j}"),
                      Node("Cast", [f"pre.hot{j}"], [f"pre.onehotf{j}"], name=f"pre.cast{j}",
                           attributes={"to": Attribute("to", AttrType.INT, 1)})]
            parts.append(f"pre.onehotf{j}")
    nodes.append(Node("Concat", parts, [inference.graph.inputs[0].name], name="pre.features",
                      attributes={"axis": Attribute("axis", AttrType.INT, 1)}))
    classes = pre.classes if pre.task == "classification" else None
    # Equal on strings needs opset 19
    model = with_head(inference, inputs, nodes, inits, tabular_doc(pre), classes, min_opset=19, min_ir_version=9)
    model.metadata_props[CONTRACT] = json.dumps(input_contract(pre))
    return model


#: the exported model's metadata key of its input contract (input_contract, as JSON)
CONTRACT = "onnxtrain.tabular"


def input_contract(pre: Preprocessing) -> dict:
    """What the exported model takes and gives, for code that feeds it: {"inputs": {"numeric": {"columns": [...]},
    "categorical": {"columns": [...], "categories": [[...] per column]}} (only the inputs it has, columns in order),
    "label", "task", and "classes" (classification: the class of each 'label' index) or "output" (regression)."""
    inputs = {}
    if pre.numeric:
        inputs["numeric"] = {"type": "float32", "columns": list(pre.numeric), "missing": "NaN"}
    if pre.categorical:
        inputs["categorical"] = {"type": "string", "columns": list(pre.categorical),
                                 "categories": [list(c) for c in pre.categories]}
    contract = {"inputs": inputs, "label": pre.label, "task": pre.task}
    if pre.task == "classification":
        contract.update(classes=list(pre.classes), outputs=["output", "probabilities", "label"])
    else:
        contract.update(outputs=["output"])
    return contract


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
        parsed = _parse([r[k] for r in table.rows])
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


class TabularSession:
    """The CSV flow: load, set up, train batch by batch, evaluate, export, try on another CSV.  ``run`` makes the
    training run (see tasks.training), by default a Run on ``device``."""

    def __init__(self, data: bytes, name: str = "the CSV file", run=None, device: str = "cpu"):
        self.table = parse_csv(data, name)
        self.make_run = run_factory(run, device)
        self.prep = self.training = self.settings = None
        self._predicted = None  # (key, all rows' predictions) of the last file tried

    def _ready(self):
        if self.training is None:
            raise DataError("set up the model first (choose the label column and the task)")

    def describe(self) -> dict:
        info = describe(self.table)
        info["task"] = detect_task(self.table, info["suggested_label"])
        return info

    def detect_task(self, label: str) -> str:
        return detect_task(self.table, str(label))

    def setup(self, label: str, task: str, hidden, validation: float = 0.2, seed: int = 0,
              optimizer: str = "AdamW") -> dict:
        """The preprocessing, the MLP and its training run; on an error nothing changes."""
        seed = check_whole(seed, "seed", 0, None)
        prep = prepare(self.table, str(label), task, validation, seed)
        pre = prep["preprocessing"]
        n_out = len(pre.classes) if pre.task == "classification" else 1
        sizes = check_hidden(hidden, pre.n_features, n_out)
        forward = mlp_model(pre.n_features, sizes, n_out, seed)
        arts = make_artifacts(forward, "CrossEntropyLoss" if pre.task == "classification" else "MSELoss", optimizer)
        training = self.make_run(arts, [prep["x_train"], prep["y_train"]], [prep["x_val"], prep["y_val"]], int(seed))
        self.training, self.prep, self._predicted = training, prep, None
        self.module, self.optimizer = training.module, training.optimizer
        self.settings = {"label": str(label), "task": task, "hidden": sizes,
                         "validation": check_validation(validation), "seed": int(seed), "optimizer": str(optimizer)}
        return {"features": pre.n_features, "classes": pre.classes, "task": pre.task,
                "train_rows": len(prep["train_rows"]), "validation_rows": len(prep["val_rows"]),
                "dropped_rows": prep["dropped_rows"], "missing_cells": prep["missing_cells"],
                "nonfinite_cells": prep["nonfinite_cells"], "numeric": pre.numeric, "categorical": pre.categorical,
                "parameters": self.module.get_parameters_size(True)}

    def step(self, batch_size: int, learning_rate: float) -> dict:
        self._ready()
        return self.training.step(batch_size, learning_rate)

    @property
    def epoch(self) -> int:
        return self.training.epoch if self.training is not None else 0

    def metrics(self) -> dict:
        """Accuracy, baseline and confusion matrix (or the mean absolute error and its baseline) on the validation
        rows."""
        self._ready()
        pre, y = self.prep["preprocessing"], self.prep["y_val"]
        out = predict(self.module, self.prep["x_val"])
        if pre.task == "classification":
            return classification_metrics(out, y, len(pre.classes))
        return {"mae": float(np.mean(np.abs(out - y))), "baseline": float(np.mean(np.abs(y - y.mean())))}

    def evaluate(self) -> dict:
        """The validation loss and ``metrics()``."""
        self._ready()
        return {"loss": self.training.validation_loss(chunk=256), **self.metrics()}

    def predict_validation(self) -> list:
        """The validation rows' predictions (class names or numbers), as the page shows them."""
        self._ready()
        out = predict(self.module, self.prep["x_val"])
        pre = self.prep["preprocessing"]
        if pre.task == "classification":
            return [pre.classes[i] for i in out.argmax(axis=1)]
        return [float(v) for v in out.ravel()]

    def checkpoint(self, properties: dict = None) -> bytes:
        """Parameters, optimizer state, the finished epoch count, the run's settings and ``properties``."""
        self._ready()
        return self.training.checkpoint({**(properties or {}), "onnxtrain.tabular": self.settings})

    def restore(self, data: bytes) -> int:
        """Continue a saved run (set up with the same settings): load its checkpoint; returns its epoch."""
        self._ready()
        epoch = self.training.restore(data)
        self.module, self.optimizer = self.training.module, self.training.optimizer
        self._predicted = None
        return epoch

    def predict_csv(self, data: bytes, offset: int = 0, limit: int = 100) -> dict:
        """The exported model's predictions (preprocessing included) for another CSV with the same feature columns,
        ``limit`` rows from ``offset`` (0-based among the data rows) with the file's cells; with the label column
        present, the true labels of those rows and the accuracy (or mean absolute error) over all rows.  All rows
        are predicted once per file and model state; later pages come from that."""
        self._ready()
        offset, limit = check_whole(offset, "offset", 0, None), check_whole(limit, "limit", 1, MAX_PAGE_ROWS)
        key = hashlib.sha256(data).digest() + self._weights_digest()
        if self._predicted is None or self._predicted[0] != key:
            self._predicted = (key, self._predict_all(data))
        table, result = self._predicted[1]
        total = len(table.rows)
        if offset >= total:
            raise DataError(f"row offset {offset} is past the end: the file has {total} data rows")
        shown = slice(offset, offset + limit)
        labels = result["labels"]
        return {"header": table.header, "rows": table.rows[shown], "predictions": result["predictions"][shown],
                "confidence": None if result["confidence"] is None else result["confidence"][shown],
                "total": total, "offset": offset, "labels": None if labels is None else labels[shown],
                "label": self.prep["preprocessing"].label, "accuracy": result["accuracy"], "mae": result["mae"],
                "labelled": result["labelled"]}

    def _weights_digest(self) -> bytes:
        return hashlib.sha256(np.ascontiguousarray(self.module.get_contiguous_parameters()).tobytes()).digest()

    def _predict_all(self, data: bytes) -> tuple:
        name = "the CSV file to predict"
        table = parse_csv(data, name)
        pre = self.prep["preprocessing"]
        if len(table.rows) > MAX_PREDICT_ROWS:
            raise DataError(f"{name} has {len(table.rows):,} rows; at most {MAX_PREDICT_ROWS:,} are predicted at "
                            f"once: split the file")
        missing = [c for c in pre.numeric + pre.categorical if c not in table.header]
        if missing:
            raise DataError(f"{name} lacks the columns {names_text(missing)}")
        num, cat = pre.raw_inputs(table, range(len(table.rows)))
        session = Session(ir_load(self.export_model()))  # the bytes a download gets
        outputs = []
        for start in range(0, len(table.rows), 1024):
            feeds = {}
            if pre.numeric:
                feeds["numeric"] = num[start:start + 1024]
            if pre.categorical:
                feeds["categorical"] = cat[start:start + 1024]
            outputs.append(session.run(feeds))
        joined = [np.concatenate([o[k] for o in outputs]) for k in range(len(outputs[0]))]
        result = {"labels": None, "accuracy": None, "mae": None, "labelled": None}
        if pre.task == "classification":
            result["predictions"] = [pre.classes[i] for i in joined[2]]
            result["confidence"] = [float(p.max()) for p in joined[1]]
        else:
            result["predictions"], result["confidence"] = [float(v) for v in joined[0].ravel()], None
        if pre.label in table.header:
            j = table.header.index(pre.label)
            truth = [r[j] for r in table.rows]
            result["labels"] = truth
            if pre.task == "classification":
                known = [i for i, v in enumerate(truth) if not _is_missing(v)]
                hits = sum(result["predictions"][i] == truth[i] for i in known)
            else:
                parsed = _parse(truth)
                if parsed is None:
                    bad = next(i for i, v in enumerate(truth) if not _is_missing(v) and _parse([v]) is None)
                    raise DataError(f"row {table.line(bad)}, column {show(pre.label)}: {show(truth[bad])} is not a "
                                    f"number, but the model predicts numbers for this column")
                known = np.flatnonzero(~np.isnan(parsed[0]))
                error = np.abs(joined[0].ravel()[known].astype(np.float64) - parsed[0][known])
            result["labelled"] = len(known)
            if len(known) and pre.task == "classification":
                result["accuracy"] = hits / len(known)
            elif len(known):
                result["mae"] = float(error.mean())
        return table, result

    def exported(self) -> Model:
        """The trained MLP with the preprocessing in front (see ``with_preprocessing``)."""
        self._ready()
        return with_preprocessing(inference_model(self.module), self.prep["preprocessing"])

    def export_model(self) -> bytes:
        return to_bytes(self.exported())
