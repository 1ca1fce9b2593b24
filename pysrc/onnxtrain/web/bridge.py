"""TrainingSession: the artifacts, checkpoint and optimizer of one run, driven from JavaScript.

Everything crosses the boundary as bytes, flat buffers with a shape and dtype, numbers and lists, so the
same code runs (and is tested) in CPython.  The only Pyodide-specific step is in ``_buffer``: a JavaScript
typed array arrives as a JsProxy, whose ``to_py()`` gives a memoryview.
"""
from __future__ import annotations

import numpy as np

from .. import artifacts
from ..api import CheckpointState, Module, Optimizer

DTYPES = {"float32": np.float32, "float64": np.float64, "int64": np.int64, "int32": np.int32, "uint8": np.uint8,
          "bool": np.bool_}


def _buffer(data):
    to_py = getattr(data, "to_py", None)  # a JsProxy in Pyodide
    return to_py() if to_py is not None else data


def _bytes(data) -> bytes:
    return bytes(_buffer(data))


def as_array(data, shape, dtype: str) -> np.ndarray:
    """A numpy view of a flat buffer (a typed array's memory) with ``shape`` and ``dtype``."""
    if dtype not in DTYPES:
        raise ValueError(f"unsupported dtype {dtype!r}; use one of {sorted(DTYPES)}")
    shape = [int(d) for d in _buffer(shape)]
    array = np.frombuffer(_buffer(data), dtype=DTYPES[dtype])
    if array.size != int(np.prod(shape, dtype=np.int64)):
        raise ValueError(f"a buffer of {array.size} {dtype} values cannot have shape {shape}")
    return array.reshape(shape)


def generate_artifacts(model, requires_grad, frozen_params=None, loss="CrossEntropyLoss", optimizer="AdamW",
                       additional_output_names=None) -> dict:
    """The four artifacts (name -> bytes) for a forward-only model given as bytes; ``loss`` and ``optimizer``
    are LossType / OptimType names (``optimizer=None`` for none)."""
    def names(value):
        return [str(n) for n in _buffer(value)] if value is not None else None
    return artifacts.generate_artifacts(
        _bytes(model), requires_grad=names(requires_grad), frozen_params=names(frozen_params),
        loss=artifacts.enum_member(artifacts.LossType, loss),
        optimizer=None if optimizer is None else artifacts.enum_member(artifacts.OptimType, optimizer),
        additional_output_names=names(additional_output_names))


def _describe(value) -> dict:
    value = np.asarray(value)
    return {"shape": list(value.shape), "dtype": value.dtype.name, "data": value.ravel().tolist()}


class TrainingSession:
    """Module + Optimizer over a CheckpointState, built from the four artifacts' bytes."""

    def __init__(self, training_model, checkpoint, eval_model=None, optimizer_model=None):
        self.state = CheckpointState.load_checkpoint(_bytes(checkpoint))
        self.module = Module(_bytes(training_model), self.state,
                             None if eval_model is None else _bytes(eval_model))
        self._optimizer_model = None if optimizer_model is None else _bytes(optimizer_model)
        self.optimizer = None if optimizer_model is None else Optimizer(self._optimizer_model, self.module)

    def describe(self) -> dict:
        return {"train_inputs": self.module.train().input_names(), "train_outputs": self.module.output_names(),
                "eval_inputs": self.module.eval().input_names(), "eval_outputs": self.module.output_names(),
                "parameters": self.module.get_parameters_size(False),
                "trainable_parameters": self.module.get_parameters_size(True)}

    @staticmethod
    def _inputs(inputs) -> list:
        """Arrays from numpy arrays (made with ``as_array``) or {"data", "shape", "dtype"} dicts."""
        return [i if isinstance(i, np.ndarray) else as_array(i["data"], i["shape"], i["dtype"])
                for i in _buffer(inputs)]

    def train_step(self, inputs) -> float:
        """One train step, optimizer step and gradient reset; returns the loss."""
        self.module.train()
        out = self.module(*self._inputs(inputs))
        loss = out[0] if isinstance(out, tuple) else out
        if self.optimizer is not None:
            self.optimizer.step()
        self.module.lazy_reset_grad()
        return float(np.asarray(loss).reshape(-1)[0])  # a custom loss may have shape [1]

    def eval_step(self, inputs) -> list:
        self.module.eval()
        out = self.module(*self._inputs(inputs))
        return [_describe(o) for o in (out if isinstance(out, tuple) else (out,))]

    def contiguous_parameters(self, trainable_only: bool = False) -> bytes:
        """All parameters as one float32 buffer, in training-model input order (for federated averaging)."""
        return self.module.get_contiguous_parameters(trainable_only).tobytes()

    def set_learning_rate(self, lr: float) -> None:
        self.optimizer.set_learning_rate(float(lr))

    def save_checkpoint(self, include_optimizer_state: bool = True) -> bytes:
        return CheckpointState.save_checkpoint(self.state, None, include_optimizer_state=include_optimizer_state)

    def load_checkpoint(self, data) -> None:
        """Replace parameters and optimizer state with a checkpoint's (same model)."""
        loaded = CheckpointState.load_checkpoint(_bytes(data))
        mine = {n: p.data for n, p in self.state.parameters}
        theirs = {n: p.data for n, p in loaded.parameters}
        if {n: (a.shape, a.dtype) for n, a in mine.items()} != {n: (a.shape, a.dtype) for n, a in theirs.items()}:
            raise ValueError("the checkpoint's parameters do not match this model's: "
                             f"{sorted(theirs)} vs {sorted(mine)}")
        for name, array in theirs.items():
            mine[name][...] = array
        self.state._optimizer = loaded._optimizer
        self.state._properties.clear()
        self.state._properties.update(loaded._properties)
        if self.optimizer is not None:
            self.optimizer = Optimizer(self._optimizer_model, self.module)

    def export_model(self, output_names) -> bytes:
        return self.module.export_model_for_inferencing(None, [str(n) for n in _buffer(output_names)])
