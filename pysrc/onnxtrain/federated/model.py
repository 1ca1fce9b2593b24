"""The federation's model on the server: the four artifact files, the global parameter vector (float32, in the
training model's order of trainable parameters, as get_contiguous_parameters gives it), its evaluation on a CSV
and its export for inference."""
from __future__ import annotations

import os
import threading

import numpy as np

from .. import ir
from ..api import CheckpointState, Module
from ..api.errors import reworded
from ..ir.ort_names import CHECKPOINT, EVAL_MODEL, OPTIMIZER_MODEL, TRAINING_MODEL
from ..train.csv import csv_inputs

ARTIFACT_FILES = (TRAINING_MODEL, EVAL_MODEL, OPTIMIZER_MODEL, CHECKPOINT)


def read_artifacts(folder: str) -> dict:
    """file name -> bytes of the four artifact files in ``folder``; FileNotFoundError naming a missing one."""
    if not os.path.isdir(folder):
        raise FileNotFoundError(f"the artifact folder {folder} does not exist (it holds {', '.join(ARTIFACT_FILES)})")
    missing = [n for n in ARTIFACT_FILES if not os.path.isfile(os.path.join(folder, n))]
    if missing:
        raise FileNotFoundError(f"the artifact folder {folder} lacks {missing} (it needs {list(ARTIFACT_FILES)})")
    out = {}
    for name in ARTIFACT_FILES:
        with open(os.path.join(folder, name), "rb") as f:
            out[name] = f.read()
    return out


def input_types(training_model: bytes, names: list) -> dict:
    """The training model's user inputs ``names``: name -> (numpy dtype, shape with None for a free axis)."""
    types = {v.name: v.type for v in ir.load(training_model).graph.inputs}
    out = {}
    for name in names:
        t = types[name]
        shape = None if t.shape is None else [d if isinstance(d, int) else None for d in t.shape]
        out[name] = (ir.dtypes.to_numpy(t.elem_type), shape)
    return out


def read_csv(path: str, types: dict) -> dict:
    """A CSV file of numbers as the training model's inputs (train.csv.csv_inputs); errors name the file."""
    with open(path, "rb") as f:
        data = f.read()
    try:
        return csv_inputs(data, types)
    except ValueError as e:
        raise reworded(e, f"{path}: {e}") from None


def accuracy(logits: np.ndarray, labels: np.ndarray):
    """The share of rows whose largest logit is the label (None when the shapes do not fit a classifier)."""
    labels = np.asarray(labels).reshape(-1)
    if logits.ndim != 2 or len(logits) != len(labels) or not len(labels):
        return None
    return float(np.mean(np.argmax(logits, axis=1) == labels))


class FederatedModel:
    """The artifacts of a federation and one onnxtrain Module over them (evaluation and export are serialised)."""

    def __init__(self, folder: str):
        self.folder = folder
        self.files = read_artifacts(folder)
        state = CheckpointState.load_checkpoint(self.files[CHECKPOINT])
        self.module = Module(self.files[TRAINING_MODEL], state, self.files[EVAL_MODEL])
        self.initial = self.module.get_contiguous_parameters(trainable_only=True).copy()
        self.size = int(self.initial.size)
        self.train_inputs = self.module.train().input_names()
        self.eval_inputs = self.module.eval().input_names()
        self.eval_outputs = self.module.output_names()
        self.module.train()
        self.types = input_types(self.files[TRAINING_MODEL], self.train_inputs)
        self._lock = threading.Lock()

    def describe_inputs(self) -> dict:
        """name -> [dims (strings for free axes), element type name] of the training inputs."""
        out = {}
        for name, (dtype, shape) in self.types.items():
            out[name] = [[d if d is not None else "batch" for d in (shape or [])], np.dtype(dtype).name]
        return out

    def evaluate(self, vector: np.ndarray, data: dict) -> dict:
        """{"loss", "accuracy"} of the parameters ``vector`` on ``data`` (training input name -> rows) in the eval
        model; accuracy from its ``output`` logits (None without them)."""
        with self._lock:
            self.module.copy_buffer_to_parameters(vector)
            module = self.module.eval()
            try:
                out = module(*[data[n] for n in self.eval_inputs])
            finally:
                self.module.train()
        out = out if isinstance(out, tuple) else (out,)
        loss = float(np.asarray(out[0]).reshape(-1)[0])
        names = self.eval_outputs
        logits = out[names.index("output")] if "output" in names else (out[1] if len(out) > 1 else None)
        labels = data[self.eval_inputs[-1]]
        return {"loss": loss, "accuracy": None if logits is None else accuracy(np.asarray(logits), labels)}

    def export(self, vector: np.ndarray, outputs: list) -> bytes:
        """The inference model (onnx bytes) with the parameters ``vector`` giving ``outputs``."""
        with self._lock:
            self.module.copy_buffer_to_parameters(vector)
            return self.module.export_model_for_inferencing(None, list(outputs))
