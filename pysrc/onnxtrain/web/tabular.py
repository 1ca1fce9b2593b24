"""Tabular data for the page: parse a CSV, describe its columns, turn it into feature matrices, and build the
model whose export takes the raw columns (standardisation, imputation and one-hot encoding inside the graph).
"""
from __future__ import annotations

import csv
import io
from dataclasses import dataclass, field

import numpy as np

from .. import artifacts
from ..ir import load as ir_load, to_bytes
from ..ir.model import Attribute, AttrType, Graph, Model, Node, Tensor, TensorType, ValueInfo
from ..runtime import Session
from .bridge import TrainingSession, _buffer, _bytes

MISSING = {"", "na", "nan", "null", "none", "?", "n/a"}
MAX_CATEGORIES = 50
MAX_CLASSES = 50


class DataError(ValueError):
    """The data cannot be used as it is; the message says what to change."""


@dataclass
class Table:
    header: list
    rows: list  # list of lists of str, all of len(header)


def parse_csv(data, name: str = "the CSV file") -> Table:
    """A Table from CSV bytes (UTF-8, with a header row); ragged rows and empty files are refused."""
    try:
        text = bytes(data).decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise DataError(f"{name} is not UTF-8 text (byte {e.start}): save it as CSV UTF-8") from None
    try:
        dialect = csv.Sniffer().sniff(text[:4096], delimiters=",;\t")
    except csv.Error:
        dialect = csv.excel
    rows = [r for r in csv.reader(io.StringIO(text), dialect) if any(cell.strip() for cell in r)]
    if not rows:
        raise DataError(f"{name} is empty")
    header, body = [h.strip() or f"column {i + 1}" for i, h in enumerate(rows[0])], rows[1:]
    if not body:
        raise DataError(f"{name} has a header row but no data rows")
    for i, row in enumerate(body):
        if len(row) != len(header):
            raise DataError(f"{name}: row {i + 2} has {len(row)} fields, but the header has {len(header)}")
    return Table(header, [[c.strip() for c in r] for r in body])


def _is_missing(cell: str) -> bool:
    return cell.lower() in MISSING


def _numeric(values: list):
    """The column as floats (NaN where missing), or None when some present value is not a number."""
    out = np.empty(len(values))
    for i, v in enumerate(values):
        if _is_missing(v):
            out[i] = np.nan
            continue
        try:
            out[i] = float(v)
        except ValueError:
            return None
    return out


def describe(table: Table) -> dict:
    """Per column: kind (numeric / categorical), missing count, distinct count; plus a preview."""
    columns = []
    for j, name in enumerate(table.header):
        values = [r[j] for r in table.rows]
        numbers = _numeric(values)
        present = [v for v in values if not _is_missing(v)]
        columns.append({"name": name, "kind": "numeric" if numbers is not None else "categorical",
                        "missing": len(values) - len(present), "distinct": len(set(present))})
    return {"columns": columns, "rows": len(table.rows), "preview": table.rows[:8],
            "suggested_label": table.header[-1]}


def detect_task(table: Table, label: str) -> str:
    values = [r[table.header.index(label)] for r in table.rows if not _is_missing(r[table.header.index(label)])]
    numbers = _numeric(values)
    if numbers is None:
        return "classification"
    if np.all(numbers == np.round(numbers)) and len(set(values)) <= 20:
        return "classification"
    return "regression"


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

    @property
    def n_features(self) -> int:
        return len(self.numeric) + sum(len(c) for c in self.categories)

    def raw_inputs(self, table: Table, rows) -> tuple:
        """(numeric float32 [n, k] with NaN for missing, categorical object [n, m] of str)."""
        idx = [table.header.index(c) for c in self.numeric]
        num = np.array([[np.nan if _is_missing(table.rows[r][j]) else float(table.rows[r][j]) for j in idx]
                        for r in rows], dtype=np.float32).reshape(len(rows), len(idx))
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
    """Split the rows, fit the preprocessing on the training part, and return the arrays."""
    if label not in table.header:
        raise DataError(f"there is no column named {label!r}")
    j = table.header.index(label)
    labelled = [i for i, r in enumerate(table.rows) if not _is_missing(r[j])]
    dropped = len(table.rows) - len(labelled)
    if len(labelled) < 4:
        raise DataError(f"only {len(labelled)} rows have a value in the label column {label!r}; at least 4 are needed")
    rng = np.random.default_rng(seed)
    order = rng.permutation(labelled)
    n_val = max(1, int(round(len(order) * validation)))
    train_rows, val_rows = sorted(order[n_val:].tolist()), sorted(order[:n_val].tolist())
    pre = Preprocessing(task=task)
    for k, name in enumerate(table.header):
        if k == j:
            continue
        values = [table.rows[r][k] for r in train_rows]
        numbers = _numeric([table.rows[r][k] for r in range(len(table.rows))])
        if numbers is not None:
            present = numbers[train_rows][~np.isnan(numbers[train_rows])]
            mean = float(present.mean()) if present.size else 0.0
            std = float(present.std()) if present.size else 1.0
            pre.numeric.append(name)
            pre.mean.append(mean)
            pre.std.append(std if std > 0 else 1.0)
        else:
            cats = sorted({v for v in values if not _is_missing(v)})
            if len(cats) > MAX_CATEGORIES:
                raise DataError(f"column {name!r} has {len(cats)} different text values; at most {MAX_CATEGORIES} can "
                                f"be one-hot encoded. Remove the column or make it numeric")
            pre.categorical.append(name)
            pre.categories.append(cats)
    if pre.n_features == 0:
        raise DataError("there are no feature columns besides the label")
    labels = [table.rows[r][j] for r in range(len(table.rows))]
    if task == "classification":
        pre.classes = sorted({labels[r] for r in train_rows}, key=_class_key)
        if len(pre.classes) < 2:
            raise DataError(f"the label column {label!r} has only one class ({pre.classes[0]!r}) in the training "
                            f"rows; a classifier needs at least two")
        if len(pre.classes) > MAX_CLASSES:
            raise DataError(f"the label column {label!r} has {len(pre.classes)} classes; use regression or fewer "
                            f"classes (at most {MAX_CLASSES})")
        index = {c: i for i, c in enumerate(pre.classes)}
        y = np.array([index.get(labels[r], -1) for r in range(len(labels))], dtype=np.int64)
    else:
        numbers = _numeric(labels)
        if numbers is None:
            raise DataError(f"the label column {label!r} has text values, so it cannot be a regression target")
        y = numbers.astype(np.float32).reshape(-1, 1)
    num, cat = pre.raw_inputs(table, list(range(len(table.rows))))
    x = pre.features(num, cat)
    val_known = [r for r in val_rows if task != "classification" or y[r] >= 0]
    missing_cells = int(np.isnan(num).sum() + sum(_is_missing(c) for c in cat.ravel()))
    return {"preprocessing": pre, "x_train": x[train_rows], "y_train": y[train_rows],
            "x_val": x[val_known], "y_val": y[val_known], "train_rows": train_rows, "val_rows": val_known,
            "dropped_rows": dropped, "missing_cells": missing_cells}


def _class_key(c: str):
    try:
        return (0, float(c), c)
    except ValueError:
        return (1, 0.0, c)


def classification_metrics(logits: np.ndarray, y: np.ndarray, n_classes: int) -> dict:
    """Accuracy, the most-common-class baseline and the confusion matrix (rows: true class)."""
    pred = logits.argmax(axis=1)
    confusion = np.zeros((n_classes, n_classes), dtype=int)
    np.add.at(confusion, (y.astype(np.intp), pred.astype(np.intp)), 1)
    return {"accuracy": float(np.mean(pred == y)), "confusion": confusion.tolist(),
            "baseline": float(np.max(np.bincount(y.astype(np.intp), minlength=n_classes)) / len(y))}


def mlp_model(n_in: int, hidden: list, n_out: int, seed: int = 0) -> Model:
    """A forward MLP: features [batch, n_in] -> Gemm/Relu ... -> output [batch, n_out]."""
    rng = np.random.default_rng(seed)
    nodes, inits, prev, width = [], [], "features", n_in
    sizes = list(hidden) + [n_out]
    for i, size in enumerate(sizes):
        w, b = f"fc{i + 1}.weight", f"fc{i + 1}.bias"
        bound = 1 / np.sqrt(width)
        inits += [Tensor(w, rng.uniform(-bound, bound, (size, width)).astype(np.float32), 1),
                  Tensor(b, rng.uniform(-bound, bound, size).astype(np.float32), 1)]
        out = "output" if i == len(sizes) - 1 else f"fc{i + 1}_out"
        nodes.append(Node("Gemm", [prev, w, b], [out], name=f"fc{i + 1}",
                          attributes={"transB": Attribute("transB", AttrType.INT, 1)}))
        if i < len(sizes) - 1:
            nodes.append(Node("Relu", [out], [f"relu{i + 1}"], name=f"relu{i + 1}"))
            prev = f"relu{i + 1}"
        width = size
    graph = Graph(name="tabular_mlp", nodes=nodes, initializers=inits,
                  inputs=[ValueInfo("features", TensorType(1, ["batch", n_in]))],
                  outputs=[ValueInfo("output", TensorType(1, ["batch", n_out]))])
    return Model(graph=graph, ir_version=8, opset_imports={"": 19}, producer_name="onnxtrain")


def with_preprocessing(inference: Model, pre: Preprocessing) -> Model:
    """The exported model with the preprocessing in front: inputs ``numeric`` (float32 [batch, k], NaN for
    missing) and ``categorical`` (string [batch, m]); for classification also ``probabilities`` and ``label``."""
    g = inference.graph
    nodes, inits, parts = [], [], []

    def const(name, value, code):
        inits.append(Tensor(name, value, code))
        return name

    inputs = []
    if pre.numeric:
        inputs.append(ValueInfo("numeric", TensorType(1, ["batch", len(pre.numeric)])))
        mean = const("pre.mean", np.float32(pre.mean).reshape(1, -1), 1)
        std = const("pre.std", np.float32(pre.std).reshape(1, -1), 1)
        nodes += [Node("IsNaN", ["numeric"], ["pre.missing"], name="pre.missing"),
                  Node("Where", ["pre.missing", mean, "numeric"], ["pre.imputed"], name="pre.impute"),
                  Node("Sub", ["pre.imputed", mean], ["pre.centered"], name="pre.center"),
                  Node("Div", ["pre.centered", std], ["pre.scaled"], name="pre.scale")]
        parts.append("pre.scaled")
    if pre.categorical:
        inputs.append(ValueInfo("categorical", TensorType(8, ["batch", len(pre.categorical)])))
        for j, cats in enumerate(pre.categories):
            col = const(f"pre.col{j}", np.array([j], np.int64), 7)
            values = const(f"pre.categories{j}", np.array([c.encode() for c in cats], dtype=object).reshape(1, -1), 8)
            nodes += [Node("Gather", ["categorical", col], [f"pre.c{j}"], name=f"pre.column{j}",
                           attributes={"axis": Attribute("axis", AttrType.INT, 1)}),
                      Node("Equal", [f"pre.c{j}", values], [f"pre.hot{j}"], name=f"pre.onehot{j}"),
                      Node("Cast", [f"pre.hot{j}"], [f"pre.onehotf{j}"], name=f"pre.cast{j}",
                           attributes={"to": Attribute("to", AttrType.INT, 1)})]
            parts.append(f"pre.onehotf{j}")
    nodes.append(Node("Concat", parts, ["features"], name="pre.features",
                      attributes={"axis": Attribute("axis", AttrType.INT, 1)}))
    outputs = list(g.outputs)
    tail = []
    if pre.task == "classification":
        tail = [Node("Softmax", ["output"], ["probabilities"], name="post.softmax",
                     attributes={"axis": Attribute("axis", AttrType.INT, -1)}),
                Node("ArgMax", ["output"], ["label"], name="post.argmax",
                     attributes={"axis": Attribute("axis", AttrType.INT, 1),
                                 "keepdims": Attribute("keepdims", AttrType.INT, 0)})]
        outputs += [ValueInfo("probabilities", TensorType(1, ["batch", len(pre.classes)])),
                    ValueInfo("label", TensorType(7, ["batch"]))]
    graph = Graph(name=g.name, nodes=nodes + list(g.nodes) + tail, inputs=inputs, outputs=outputs,
                  initializers=inits + list(g.initializers), value_info=list(g.value_info),
                  doc_string="Inputs: numeric columns " + ", ".join(pre.numeric) + "; categorical columns "
                  + ", ".join(pre.categorical) + ". Classes: " + ", ".join(pre.classes))
    opset = max(inference.opset("") or 19, 19)  # Equal on strings needs opset 19
    return Model(graph=graph, ir_version=max(inference.ir_version, 9), opset_imports={"": opset},
                 producer_name="onnxtrain", metadata_props={"onnxtrain.classes": "\t".join(pre.classes)})


def csv_inputs(data, inputs: dict) -> dict:
    """Arrays for a model's two training inputs (features, labels) from a CSV of numbers.  ``inputs`` is
    name -> (dtype, shape) as ``TrainingSession.input_types`` gives it.  The label column is the one named like
    the labels input, else the last; the other columns, in order, are the features."""
    names = list(inputs)
    if len(names) != 2:
        raise DataError(f"a CSV file fits a model whose training inputs are features and labels; this one takes "
                        f"{names}: use a .npz file with one array per input")
    table = parse_csv(_bytes(data), "the data file")
    (features, (f_type, f_shape)), (labels, (l_type, l_shape)) = inputs.items()
    j = table.header.index(labels) if labels in table.header else len(table.header) - 1
    columns = []
    for k, name in enumerate(table.header):
        values = _numeric([r[k] for r in table.rows])
        if values is None:
            raise DataError(f"column {name!r} of the data file is not numeric; the CSV flow above one-hot encodes text")
        if np.isnan(values).any():
            raise DataError(f"column {name!r} of the data file has {int(np.isnan(values).sum())} missing values")
        columns.append(values)
    x = np.stack([c for k, c in enumerate(columns) if k != j], axis=1)
    per_row = f_shape[1:] if f_shape else None
    if per_row and all(d is not None for d in per_row):
        if int(np.prod(per_row)) != x.shape[1]:
            raise DataError(f"input {features!r} takes {per_row} values per row, but the data file has "
                            f"{x.shape[1]} feature columns besides the label column {table.header[j]!r}")
        x = x.reshape([len(x)] + per_row)
    y = columns[j]
    if np.issubdtype(l_type, np.integer) and not np.all(y == np.round(y)):
        raise DataError(f"the label column {table.header[j]!r} must hold whole numbers (class indices) for {labels!r}")
    if l_shape is not None and len(l_shape) == 2:
        y = y.reshape(-1, 1)
    return {features: x.astype(f_type), labels: y.astype(l_type)}


class TabularSession:
    """The CSV flow for the worker: load, set up, train batch by batch, evaluate, export."""

    def __init__(self, data, name: str = "the CSV file"):
        self.table = parse_csv(_bytes(data), name)
        self.prep = self.training = self.settings = None

    def describe(self) -> dict:
        info = describe(self.table)
        info["task"] = detect_task(self.table, info["suggested_label"])
        return info

    def detect_task(self, label: str) -> str:
        return detect_task(self.table, str(label))

    def setup(self, label: str, task: str, hidden, validation: float = 0.2, seed: int = 0,
              optimizer: str = "AdamW") -> dict:
        prep = prepare(self.table, str(label), str(task), float(validation), int(seed))
        pre = prep["preprocessing"]
        n_out = len(pre.classes) if pre.task == "classification" else 1
        forward = mlp_model(pre.n_features, [int(h) for h in _buffer(hidden)], n_out, seed)
        loss = artifacts.LossType.CrossEntropyLoss if pre.task == "classification" else artifacts.LossType.MSELoss
        arts = artifacts.generate_artifacts(forward, requires_grad=[t.name for t in forward.graph.initializers],
                                            loss=loss, optimizer=artifacts.enum_member(artifacts.OptimType, optimizer))
        self.training = TrainingSession.from_artifacts(arts)
        self.module, self.optimizer = self.training.module, self.training.optimizer
        self.settings = {"label": str(label), "task": str(task), "hidden": [int(h) for h in _buffer(hidden)],
                         "validation": float(validation), "seed": int(seed), "optimizer": str(optimizer)}
        self.prep = prep
        self.training.set_data([prep["x_train"], prep["y_train"]], [prep["x_val"], prep["y_val"]], seed)
        return {"features": pre.n_features, "classes": pre.classes, "task": pre.task,
                "train_rows": len(prep["train_rows"]), "validation_rows": len(prep["val_rows"]),
                "dropped_rows": prep["dropped_rows"], "missing_cells": prep["missing_cells"],
                "numeric": pre.numeric, "categorical": pre.categorical,
                "parameters": self.module.get_parameters_size(True)}

    def step(self, batch_size: int, learning_rate: float) -> dict:
        return self.training.step(batch_size, learning_rate)

    @property
    def epoch(self) -> int:
        return self.training.epoch

    def evaluate(self) -> dict:
        """Loss and accuracy (or mean absolute error) on the validation rows, and a confusion matrix."""
        pre, x, y = self.prep["preprocessing"], self.prep["x_val"], self.prep["y_val"]
        out = self.training.predict(x)
        result = {"loss": self.training.validation_loss(chunk=256)}
        if pre.task == "classification":
            result.update(classification_metrics(out, y, len(pre.classes)))
        else:
            result.update(mae=float(np.mean(np.abs(out - y))), baseline=float(np.mean(np.abs(y - y.mean()))))
        return result

    def predict_validation(self) -> list:
        """The validation rows' predictions (class names or numbers), as the page shows them."""
        out = self.training.predict(self.prep["x_val"])
        pre = self.prep["preprocessing"]
        if pre.task == "classification":
            return [pre.classes[i] for i in out.argmax(axis=1)]
        return [float(v) for v in out.ravel()]

    def checkpoint(self) -> bytes:
        """Parameters, optimizer state, the finished epoch count and the run's settings."""
        return self.training.checkpoint({"onnxtrain.tabular": self.settings})

    def restore(self, data) -> int:
        """Continue a saved run (set up with the same settings): load its checkpoint; returns its epoch."""
        epoch = self.training.restore(data)
        self.module, self.optimizer = self.training.module, self.training.optimizer
        return epoch

    def predict_csv(self, data, limit: int = 100) -> dict:
        """Predictions of the exported model (preprocessing included) for the rows of another CSV with the
        same feature columns (the label column may be missing)."""
        table = parse_csv(_bytes(data), "the CSV file to predict")
        pre = self.prep["preprocessing"]
        missing = [c for c in pre.numeric + pre.categorical if c not in table.header]
        if missing:
            raise DataError(f"the CSV file to predict lacks the columns {missing}")
        rows = list(range(min(len(table.rows), int(limit))))
        num, cat = pre.raw_inputs(table, rows)
        feeds = {}
        if pre.numeric:
            feeds["numeric"] = num
        if pre.categorical:
            feeds["categorical"] = cat
        outputs = Session(ir_load(self.export_model())).run(feeds)
        if pre.task == "classification":
            labels = [pre.classes[i] for i in outputs[2]]
            confidence = [float(p.max()) for p in outputs[1]]
        else:
            labels, confidence = [float(v) for v in outputs[0].ravel()], None
        return {"header": table.header, "rows": [table.rows[r] for r in rows], "predictions": labels,
                "confidence": confidence}

    def export_model(self) -> bytes:
        exported = ir_load(self.module.export_model_for_inferencing(None, ["output"]))
        return to_bytes(with_preprocessing(exported, self.prep["preprocessing"]))

