"""The tabular flow's preprocessing: fitted on the training rows (standardisation, imputation, one-hot encoding),
applied in numpy, and put in front of the exported model as graph nodes with its input contract."""
from __future__ import annotations

import json
from dataclasses import dataclass, field

import numpy as np

from ..ir.dtypes import DataType
from ..ir.model import Attribute, AttrType, Model, Node, Tensor, TensorType, ValueInfo
from ..train.csv import FLOAT32_MAX, Table, is_missing, parse_column
from ..train.data import DataError
from .checks import check_validation, names_text, show
from .csv_table import check_task, column
from .head import classes_doc, with_head
from .split import random_split, stratified_split

MAX_CATEGORIES = 50
MAX_CLASSES = 50
FLOAT32_TINY = float(np.finfo(np.float32).tiny)
MAX_TARGET = 1e15  # a regression target beyond this makes a batch's squared error overflow float32


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
                if is_missing(cell):
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
    j = column(table, label)
    check_task(task)
    validation = check_validation(validation)
    labels = [r[j] for r in table.rows]
    if task == "regression":
        parsed = parse_column(labels)
        if parsed is None:
            bad = next(r for r, v in enumerate(labels) if not is_missing(v) and parse_column([v]) is None)
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
        labelled = [i for i, v in enumerate(labels) if not is_missing(v)]
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
        parsed = parse_column([r[k] for r in table.rows])
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
            cats = sorted({table.rows[r][k] for r in train_rows if not is_missing(table.rows[r][k])})
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
    missing_cells = int(np.isnan(num).sum() + sum(is_missing(c) for c in cat.ravel()))
    return {"preprocessing": pre, "x_train": x[train_rows], "y_train": y[train_rows],
            "x_val": x[val_rows], "y_val": y[val_rows], "train_rows": train_rows, "val_rows": val_rows,
            "dropped_rows": dropped, "missing_cells": missing_cells, "nonfinite_cells": nonfinite}


def _class_key(c: str):
    try:
        return (0, float(c), c)
    except ValueError:
        return (1, 0.0, c)


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
                           attributes={"to": Attribute("to", AttrType.INT, int(DataType.FLOAT))})]
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
