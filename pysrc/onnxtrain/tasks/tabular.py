"""Tabular data: the CSV flow (load, set up, train, evaluate, export, try on another CSV) and its MLP.  The CSV is
read by train.csv, its columns described by csv_table, and its preprocessing fitted by tabular_prep; the exported
model takes the raw columns (standardisation, imputation and one-hot encoding inside the graph)."""
from __future__ import annotations

import hashlib
import re

import numpy as np

from ..ir import load as ir_load, to_bytes
from ..ir.dtypes import DataType
from ..ir.model import Attribute, AttrType, Graph, Model, Node, Tensor, TensorType, ValueInfo
from ..runtime import Session
from ..train.csv import is_missing, parse_column, parse_csv
from ..train.data import DataError
from .checks import check_validation, check_whole, names_text, show, whole
from .csv_table import describe, detect_task
from .tabular_prep import prepare, with_preprocessing
from .training import classification_metrics, inference_model, make_artifacts, predict, run_factory

MAX_PREDICT_ROWS = 100_000
MAX_PAGE_ROWS = 1000
MAX_LAYERS = 16
MAX_WIDTH = 1_000_000
MAX_PARAMETERS = 20_000_000


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
                known = [i for i, v in enumerate(truth) if not is_missing(v)]
                hits = sum(result["predictions"][i] == truth[i] for i in known)
            else:
                parsed = parse_column(truth)
                if parsed is None:
                    bad = next(i for i, v in enumerate(truth) if not is_missing(v) and parse_column([v]) is None)
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
