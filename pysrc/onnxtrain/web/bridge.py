"""TrainingSession: the artifacts, checkpoint and optimizer of one run, driven from JavaScript.

Everything crosses the boundary as bytes, flat buffers with a shape and dtype, numbers and lists, so the
same code runs (and is tested) in CPython.  The only Pyodide-specific step is in ``_buffer``: a JavaScript
typed array arrives as a JsProxy, whose ``to_py()`` gives a memoryview.
"""
from __future__ import annotations

import io
import json
import re
import zipfile

import numpy as np

from .. import ir
from ..api import CheckpointState, Module, Optimizer
from ..api.module import PROVIDERS, provider_for
from ..api.optimizer import check_learning_rate
from ..ir.model import OptionalType, SequenceType, SparseTensorType, TensorType
from ..ir.ort_names import CHECKPOINT, EVAL_MODEL, OPTIMIZER_MODEL, TRAINING_MODEL
from ..train import Trainer, data as checks
from ..train.npz import load_npz

DTYPES = {"float32": np.float32, "float64": np.float64, "int64": np.int64, "int32": np.int32, "uint8": np.uint8,
          "bool": np.bool_}


ARTIFACTS_README = """Training artifacts in onnxruntime-training's on-device format, trained for {epoch} epochs.
The checkpoint holds the current parameters and optimizer state. To go on training, in Python:

    from onnxtrain.api import CheckpointState, Module, Optimizer   # or onnxruntime.training.api
    state = CheckpointState.load_checkpoint("checkpoint")
    module = Module("training_model.onnx", state, "eval_model.onnx")
    optimizer = Optimizer("optimizer_model.onnx", module)
    optimizer.set_learning_rate(state.properties["onnxtrain.learning_rate"])  # ORT would start at the initial rate
"""


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


def new_array(shape, dtype: str, nbytes: int) -> tuple:
    """(an uninitialised array of ``shape`` and ``dtype``, the address of its data) for the worker to copy a
    typed array's ``nbytes`` bytes into: one copy, straight into Pyodide's memory."""
    if dtype not in DTYPES:
        raise ValueError(f"unsupported dtype {dtype!r}; use one of {sorted(DTYPES)}")
    shape = [int(d) for d in _buffer(shape)]
    array = np.empty(shape, DTYPES[dtype])
    if array.nbytes != nbytes:
        raise ValueError(f"a buffer of {nbytes // array.itemsize} {dtype} values cannot have shape {shape}")
    return array, array.__array_interface__["data"][0]


def describe_model(model) -> dict:
    """A forward model's inputs, outputs and parameters (initializers), for the page's checklist."""
    from ..autodiff import GRADIENT_RULES, NO_GRADIENT  # not a module the engine's start imports

    try:
        m = ir.load(_bytes(model))
    except ir.ModelDecodeError as e:
        raise ValueError(f"this file is not an ONNX model ({e})") from None
    g = m.graph
    shape = lambda vi: None if vi.type is None or getattr(vi.type, "shape", None) is None else \
        ["?" if d is None else d for d in vi.type.shape]  # noqa: E731
    return {"inputs": [{"name": v.name, "shape": shape(v)} for v in g.inputs],
            "outputs": [{"name": v.name, "shape": shape(v)} for v in g.outputs],
            "parameters": [{"name": t.name, "shape": list(t.data.shape), "count": int(t.data.size),
                            "float": t.data.dtype.kind == "f"} for t in g.initializers],
            "ops_without_gradient": sorted({n.op_type for n in g.nodes}
                                           - set(GRADIENT_RULES) - NO_GRADIENT - {"Constant"})}


def _type_text(t) -> str:
    if isinstance(t, (TensorType, SparseTensorType)):
        dims = "" if t.shape is None else f" [{', '.join('?' if d is None else str(d) for d in t.shape)}]"
        return f"{ir.dtypes.name(t.elem_type)}{dims}"
    if isinstance(t, (SequenceType, OptionalType)):
        return f"{type(t).__name__[:-4].lower()}({'?' if t.elem_type is None else _type_text(t.elem_type)})"
    return "?"


def signature(model) -> str:
    """How to call a model, in a line: its inputs and outputs with types and shapes, then its doc string.  A name
    that is not a plain identifier (spaces, commas, quotes) is quoted as a JSON string, so the line reads one way."""
    g = ir.load(_bytes(model)).graph

    def values(infos):
        return ", ".join(f"{v.name if re.fullmatch(r'[A-Za-z0-9_.:/-]+', v.name) else json.dumps(v.name)} "
                         f"{_type_text(v.type)}" for v in infos)
    return f"Inputs: {values(g.inputs)}. Outputs: {values(g.outputs)}." + (f" {g.doc_string}" if g.doc_string else "")


def _describe(value) -> dict:
    value = np.asarray(value)
    return {"shape": list(value.shape), "dtype": value.dtype.name, "data": value.ravel().tolist()}


class TrainingSession:
    """Module + Optimizer over a CheckpointState, built from the four artifacts' bytes, and the Trainer that runs
    it on data held here, batch by batch, as the page asks.

    Steps are checked for non-finite values and undone (NonFiniteStepError) unless ``set_finite_check(False)``.
    """

    def __init__(self, training_model, checkpoint, eval_model=None, optimizer_model=None, providers=None):
        self.state = CheckpointState.load_checkpoint(_bytes(checkpoint))
        self._training_model = _bytes(training_model)
        self._eval_model = None if eval_model is None else _bytes(eval_model)
        self.provider = provider_for(None if providers is None else [str(p) for p in _buffer(providers)])
        self.module = Module(self._training_model, self.state, self._eval_model, device=PROVIDERS[self.provider])
        self._optimizer_model = None if optimizer_model is None else _bytes(optimizer_model)
        self.optimizer = None if optimizer_model is None else Optimizer(self._optimizer_model, self.module)
        self.trainer = Trainer(self.module, self.optimizer, epochs=None, evaluate_epochs=False)

    @property
    def guard(self):
        return self.trainer.guard

    @property
    def best(self):
        return self.trainer.best

    @property
    def epoch(self) -> int:
        return self.trainer.epoch

    @property
    def train_data(self):
        return self.trainer.train_data

    @property
    def validation_data(self):
        return self.trainer.validation_data

    def set_finite_check(self, enabled: bool = True) -> None:
        """Check each step for a non-finite loss or update and undo it (on by default)."""
        self.guard.check = bool(enabled)

    @classmethod
    def from_artifacts(cls, arts: dict, providers=None) -> "TrainingSession":
        """A session over ``generate_artifacts``' dict of bytes."""
        return cls(arts[TRAINING_MODEL], arts[CHECKPOINT], arts[EVAL_MODEL], arts.get(OPTIMIZER_MODEL), providers)

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
        """One train step, optimizer step and gradient reset; returns the loss.  A step whose loss or update is
        not finite is undone (NonFiniteStepError) while the finite check is on."""
        return self.guard.step(self._inputs(inputs))

    # ---- training on data held here, batch by batch ---------------------------------------------------

    def set_data(self, train: list, validation: list = None, seed: int = 0) -> None:
        """Arrays (one per training-model user input, rows along axis 0) to draw batches from."""
        self.trainer.set_data(list(train), list(validation) if validation else None, seed)

    def input_types(self) -> dict:
        """The training model's user inputs: name -> (numpy dtype, shape with None for a free axis)."""
        graph = ir.load(self._training_model).graph
        types = {v.name: v.type for v in graph.inputs}
        out = {}
        for name in self.module.train().input_names():
            t = types[name]
            shape = None if t.shape is None else [d if isinstance(d, int) else None for d in t.shape]
            out[name] = (ir.dtypes.to_numpy(t.elem_type), shape)
        return out

    def set_npz(self, data, validation: float = 0.1, seed: int = 0) -> dict:
        """Data from a .npz file with one array per training-model input, named like the inputs."""
        checks.fraction(validation)
        return self.set_named(load_npz(_bytes(data), self.module.train().input_names()), validation, seed)

    def set_named(self, arrays: dict, validation: float = 0.1, seed: int = 0) -> dict:
        """Data as one array per training-model input (by name), split into training and validation rows."""
        checks.fraction(validation)
        self.trainer.set_data(arrays, float(validation), seed)
        train, val = self.trainer.train_data, self.trainer.validation_data
        n_val = len(val[0]) if val else 0
        return {"rows": len(train[0]) + n_val, "train_rows": len(train[0]), "validation_rows": n_val,
                "inputs": {n: [list(np.shape(arrays[n])), np.asarray(arrays[n]).dtype.name]
                           for n in self.trainer.names}}

    def step(self, batch_size: int, learning_rate: float) -> dict:
        """One batch of the held data; ``epoch_done`` is set on an epoch's last batch.  A step that fails
        (bad arguments, out of memory, a non-finite loss or update) leaves the run as it was."""
        if self.trainer.train_data is None:
            raise checks.DataError("there is no training data: give it with set_data, set_named or set_npz first")
        record = self.trainer.step(checks.batch_size(batch_size), check_learning_rate(learning_rate))
        return {"loss": record["loss"], "epoch": record["epoch"], "epoch_done": record["epoch_done"],
                "examples": record["examples"], "batches_per_epoch": record["steps_per_epoch"],
                "progress": record["progress"]}

    def validation_loss(self, chunk: int = None):
        """The eval model's loss on the held validation data (None without validation data)."""
        return self.trainer.validation_loss(chunk)

    def eval_step(self, inputs) -> list:
        self.module.eval()
        out = self.module(*self._inputs(inputs))
        return [_describe(o) for o in (out if isinstance(out, tuple) else (out,))]

    def contiguous_parameters(self, trainable_only: bool = False) -> bytes:
        """All parameters as one float32 buffer, in training-model input order (for federated averaging)."""
        return self.module.get_contiguous_parameters(trainable_only).tobytes()

    def set_learning_rate(self, lr: float) -> None:
        """ValueError naming ``lr`` when it is NaN, infinite or negative; the rate stays as it was."""
        lr = check_learning_rate(lr)
        if self.optimizer is not None:
            self.optimizer.set_learning_rate(lr)

    def save_checkpoint(self, include_optimizer_state: bool = True) -> bytes:
        return CheckpointState.save_checkpoint(self.state, None, include_optimizer_state=include_optimizer_state)

    def checkpoint(self, properties: dict = None) -> bytes:
        """The run so far (Trainer.checkpoint): state, epoch, best-epoch counters and ``properties``."""
        return self.trainer.checkpoint(properties)

    def restore(self, data, best=None) -> int:
        """Continue a run saved by ``checkpoint`` (same model); with ``best``, the bytes of its
        ``best_checkpoint()``.  On any error the session is left as it was."""
        return self.trainer.restore(_bytes(data), None if best is None else _bytes(best))

    def restore_best(self, best) -> int:
        """After ``restore(data)``, the best parameters from the bytes of the run's ``best_checkpoint()``."""
        return self.trainer.restore_best(_bytes(best))

    # ---- the best epoch and early stopping -------------------------------------------------------------

    def set_early_stopping(self, keep_best: bool = True, patience: int = 0) -> None:
        """Keep a copy of the parameters of the epoch with the lowest validation loss; stop after ``patience``
        epochs without a lower one (0: never stop).  The counters so far stay."""
        self.best.configure(keep_best, patience)

    def end_epoch(self, validation_loss) -> dict:
        """Record the finished epoch's validation loss (None without validation data): best_epoch, best_loss,
        improved, stop, epochs_without_improvement."""
        return self.trainer.end_epoch(validation_loss)["best"]

    def use_best(self):
        """Put the best epoch's parameters back (the optimizer state stays); the best epoch, or None."""
        return self.trainer.use_best()

    def best_checkpoint(self):
        """A checkpoint (no optimizer state) of the kept best parameters, its ``epoch`` the best epoch, or None."""
        return self.trainer.best_checkpoint()

    def artifacts_zip(self) -> bytes:
        """The artifact set with the current state as its checkpoint, so training can go on elsewhere
        (onnxruntime-training or onnxtrain) where it stopped here."""
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
            archive.writestr(TRAINING_MODEL, self._training_model)
            if self._eval_model is not None:
                archive.writestr(EVAL_MODEL, self._eval_model)
            if self._optimizer_model is not None:
                archive.writestr(OPTIMIZER_MODEL, self._optimizer_model)
            archive.writestr(CHECKPOINT, self.checkpoint())
            archive.writestr("README.txt", ARTIFACTS_README.format(epoch=self.epoch))
        return buffer.getvalue()

    def load_checkpoint(self, data) -> None:
        """Replace parameters and optimizer state with a checkpoint's (same model)."""
        self.trainer.load_checkpoint(_bytes(data))

    def export_model(self, output_names) -> bytes:
        return self.module.export_model_for_inferencing(None, [str(n) for n in _buffer(output_names)])
