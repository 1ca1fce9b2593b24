"""TrainingSession: the artifacts, checkpoint and optimizer of one run, driven from JavaScript.

Everything crosses the boundary as bytes, flat buffers with a shape and dtype, numbers and lists, so the
same code runs (and is tested) in CPython.  The only Pyodide-specific step is in ``_buffer``: a JavaScript
typed array arrives as a JsProxy, whose ``to_py()`` gives a memoryview.
"""
from __future__ import annotations

import dataclasses
import io
import json
import re
import zipfile

import numpy as np

from .. import artifacts, ir
from ..api import CheckpointState, Module, Optimizer
from ..api.checkpoint_state import LEARNING_RATE_PROPERTY
from ..api.optimizer import check_learning_rate
from ..autodiff import GRADIENT_RULES, NO_GRADIENT
from ..checkpoint import write_checkpoint
from ..ir.model import OptionalType, SequenceType, SparseTensorType, TensorType
from ..ir.ort_names import CHECKPOINT, EVAL_MODEL, OPTIMIZER_MODEL, TRAINING_MODEL
from ..runtime import Session
from ..train import BestEpoch, StepGuard, data as checks
from ..train.best import PROPERTY as BEST_PROPERTY
from ..train.guard import check_finite_state
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


def describe_model(model) -> dict:
    """A forward model's inputs, outputs and parameters (initializers), for the page's checklist."""
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


def _out_of_memory(error: BaseException) -> bool:
    """A MemoryError, or numpy's refusal of an array larger than the address space (wasm32: 2 GiB), anywhere
    in the chain of causes."""
    while error is not None:
        if isinstance(error, MemoryError) or (isinstance(error, ValueError) and "array is too big" in str(error)):
            return True
        error = error.__cause__
    return False


def _describe(value) -> dict:
    value = np.asarray(value)
    return {"shape": list(value.shape), "dtype": value.dtype.name, "data": value.ravel().tolist()}


def _epoch_property(properties: dict) -> int:
    """The checkpoint's ``epoch`` property (0 when absent); ValueError naming it when it is not a count."""
    value = properties.get("epoch", 0)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"the checkpoint's property 'epoch' must be an integer >= 0, got {value!r} "
                         f"({type(value).__name__})")
    return value


class TrainingSession:
    """Module + Optimizer over a CheckpointState, built from the four artifacts' bytes.

    Steps are checked for non-finite values and undone (NonFiniteStepError) unless ``set_finite_check(False)``.
    """

    epoch = 0
    train_data = validation_data = order = None
    position = 0

    def __init__(self, training_model, checkpoint, eval_model=None, optimizer_model=None):
        self.state = CheckpointState.load_checkpoint(_bytes(checkpoint))
        self._training_model = _bytes(training_model)
        self._eval_model = None if eval_model is None else _bytes(eval_model)
        self.module = Module(self._training_model, self.state, self._eval_model)
        self._optimizer_model = None if optimizer_model is None else _bytes(optimizer_model)
        self.optimizer = None if optimizer_model is None else Optimizer(self._optimizer_model, self.module)
        self.guard = StepGuard(self.module, self.optimizer)
        self.best = BestEpoch()

    def set_finite_check(self, enabled: bool = True) -> None:
        """Check each step for a non-finite loss or update and undo it (on by default)."""
        self.guard.check = bool(enabled)

    @classmethod
    def from_artifacts(cls, arts: dict) -> "TrainingSession":
        """A session over ``generate_artifacts``' dict of bytes."""
        return cls(arts[TRAINING_MODEL], arts[CHECKPOINT], arts[EVAL_MODEL], arts.get(OPTIMIZER_MODEL))

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
        names = self.module.train().input_names()
        for what, arrays in (("training", train), ("validation", validation)):
            if arrays is None or (what == "validation" and not len(arrays)):
                continue
            if len(arrays) != len(names):
                raise checks.DataError(f"the training model takes {len(names)} inputs {names}, but {len(arrays)} "
                                       f"{what} arrays came")
            checks.rows(names, arrays, f"{what} data")
            checks.finite(names, arrays, f"{what} data")
        self.train_data, self.validation_data = list(train), list(validation) if validation else None
        self.rng, self.order, self.position, self.epoch = np.random.default_rng(seed), None, 0, 0
        self.best.reset()

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
        names = self.module.train().input_names()
        validation = checks.fraction(validation)
        missing = [n for n in names if n not in arrays]
        if missing:
            raise checks.DataError(f"the data needs arrays named {names}; missing {missing}")
        arrays = [np.asarray(arrays[n]) for n in names]
        n = checks.rows(names, arrays)
        order = np.random.default_rng(seed).permutation(n)
        n_val = min(int(round(n * validation)), n - 1) if n >= 10 else 0
        val, train = order[:n_val], order[n_val:]
        self.set_data([a[train] for a in arrays], [a[val] for a in arrays] if n_val else None, seed)
        return {"rows": n, "train_rows": len(train), "validation_rows": int(n_val),
                "inputs": {k: [list(a.shape), a.dtype.name] for k, a in zip(names, arrays)}}

    def step(self, batch_size: int, learning_rate: float) -> dict:
        """One batch of the held data; ``epoch_done`` is set on an epoch's last batch.  A step that fails
        (bad arguments, out of memory, a non-finite loss or update) leaves the run as it was."""
        batch_size = checks.batch_size(batch_size)
        learning_rate = check_learning_rate(learning_rate)
        if self.train_data is None:
            raise checks.DataError("there is no training data: give it with set_data, set_named or set_npz first")
        n = len(self.train_data[0])
        order, position, rng_state = self.order, self.position, None
        if order is None:
            rng_state = self.rng.bit_generator.state
            order, position = self.rng.permutation(n), 0
        rows = order[position:position + batch_size]
        previous_rate = None if self.optimizer is None else self.optimizer.get_learning_rate()
        self.set_learning_rate(learning_rate)
        try:
            loss = self.guard.step([a[rows] for a in self.train_data], epoch=self.epoch + 1)
        except Exception as e:
            if rng_state is not None:
                self.rng.bit_generator.state = rng_state
            if previous_rate is not None:
                self.optimizer.set_learning_rate(previous_rate)
            if _out_of_memory(e):
                raise MemoryError(f"ran out of memory training a batch of {len(rows)} rows: choose a smaller batch "
                                  f"size (nothing was changed, training can go on)") from e
            raise
        self.order, self.position = order, position + len(rows)
        done = self.position >= n
        if done:
            self.epoch += 1
            self.order = None
        return {"loss": loss, "epoch": self.epoch, "epoch_done": done, "examples": len(rows),
                "batches_per_epoch": -(-n // batch_size), "progress": self.epoch + (0 if done else self.position / n)}

    def validation_loss(self, chunk: int = None):
        """The eval model's loss on the held validation data (None without validation data).  With ``chunk``,
        the data goes through ``chunk`` rows at a time and the losses are averaged by rows, which is the same
        for a loss that is a mean over rows, in less memory."""
        if not self.validation_data:
            return None
        self.module.eval()
        n = len(self.validation_data[0])
        chunk = int(chunk or n)
        total = 0.0
        for start in range(0, n, chunk):
            out = self.module(*[a[start:start + chunk] for a in self.validation_data])
            rows = min(chunk, n - start)
            total += rows * float(np.asarray(out[0] if isinstance(out, tuple) else out).reshape(-1)[0])
        return total / n

    def predict(self, x: np.ndarray, output: str = "output", chunk: int = 256) -> np.ndarray:
        """The inference model's ``output`` for the rows of ``x``, ``chunk`` rows at a time."""
        session = Session(ir.load(self.module.export_model_for_inferencing(None, [output])))
        return np.concatenate([session.run([x[i:i + chunk]])[0] for i in range(0, len(x), chunk)])

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
        """The run so far: parameters, optimizer state, the finished epochs (property ``epoch``), the best-epoch
        tracker's counters and ``properties`` (values that are not int, float or str are stored as JSON).
        NonFiniteStateError, and nothing written, when a trainable parameter or optimizer state is not finite."""
        check_finite_state(self.module, self.optimizer)
        extra = {key: value if isinstance(value, (int, float, str)) and not isinstance(value, bool)
                 else json.dumps(value) for key, value in (properties or {}).items()}
        props = self.state.properties
        props["epoch"] = self.epoch
        props[BEST_PROPERTY] = self.best.to_property()
        for key, value in extra.items():
            props[key] = value
        return self.save_checkpoint(True)

    def restore(self, data, best=None) -> int:
        """Continue a run saved by ``checkpoint`` (same model): its state, at the start of its next epoch, and
        its best-epoch counters; with ``best``, the bytes of its ``best_checkpoint()``, the best parameters too.
        On any error the session is left as it was."""
        loaded = self._checked_checkpoint(data, "checkpoint")
        props = loaded._properties
        epoch = _epoch_property(props)
        if BEST_PROPERTY in props:
            tracker = BestEpoch.from_property(props[BEST_PROPERTY])
        else:
            tracker = BestEpoch(self.best.keep_best, self.best.patience)
        if best is not None:
            tracker.params = self._best_parameters(best, tracker)
        elif tracker.keep_best and tracker.best_epoch is not None and tracker.best_epoch == epoch:
            tracker.params = {n: loaded._entries[n].data.copy() for n in self.module._trainable_names}
        self._commit(loaded)
        self.epoch, self.order, self.position, self.best = epoch, None, 0, tracker
        return self.epoch

    def restore_best(self, best) -> int:
        """After ``restore(data)`` (as a wrapper such as TabularSession does it), the best parameters from the bytes
        of the run's ``best_checkpoint()``; returns the best epoch.  On an error nothing changes."""
        self.best.params = self._best_parameters(best, self.best)
        return self.best.best_epoch

    def _best_parameters(self, data, tracker: BestEpoch) -> dict:
        kept = self._checked_checkpoint(data, "best-epoch checkpoint")
        epoch = _epoch_property(kept._properties)
        if tracker.best_epoch is None or epoch != tracker.best_epoch or not tracker.keep_best:
            raise ValueError(f"the best-epoch checkpoint is of epoch {epoch}, but the run's best epoch is "
                             f"{tracker.best_epoch} (keep_best {tracker.keep_best}): they are not from the same run")
        return {n: kept._entries[n].data.copy() for n in self.module._trainable_names}

    # ---- the best epoch and early stopping -------------------------------------------------------------

    def set_early_stopping(self, keep_best: bool = True, patience: int = 10) -> None:
        """Keep a copy of the parameters of the epoch with the lowest validation loss; stop after ``patience``
        epochs without a lower one (0: never stop).  The counters so far stay."""
        self.best.configure(keep_best, patience)

    def _trainable(self) -> dict:
        entries = self.state._entries
        return {n: entries[n].data for n in self.module._trainable_names}

    def end_epoch(self, validation_loss) -> dict:
        """Record the finished epoch's validation loss (None without validation data): best_epoch, best_loss,
        improved, stop, epochs_without_improvement."""
        if self.epoch < 1:
            raise ValueError("end_epoch is for after an epoch: no epoch has finished yet")
        return self.best.end_epoch(self.epoch, validation_loss, self._trainable())

    def use_best(self):
        """Put the best epoch's parameters back (the optimizer state stays); the best epoch, or None when the
        session does not hold its parameters (no validation loss, keep_best off, or not kept)."""
        best = self.best
        if best.best_epoch is None:
            return None
        if best.put_back(self._trainable()):
            return best.best_epoch
        current = best.best_epoch == self.epoch and self.order is None
        return best.best_epoch if current else None

    def best_checkpoint(self):
        """A checkpoint (no optimizer state) of the kept best parameters, its ``epoch`` the best epoch, or None."""
        best = self.best
        if best.params is None:
            return None
        data = self.state._to_data(False)
        properties = dict(data.properties, epoch=best.best_epoch)
        properties[BEST_PROPERTY] = best.to_property()
        data = dataclasses.replace(data, trainable={n: best.params.get(n, a) for n, a in data.trainable.items()},
                                   properties=properties)
        return write_checkpoint(data, None, layout="runtime")

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
        self._commit(self._checked_checkpoint(data, "checkpoint"))

    def _checked_checkpoint(self, data, what: str) -> CheckpointState:
        """A checkpoint's state, checked to fit this model (and its learning rate to be one) before it is used."""
        loaded = CheckpointState.load_checkpoint(_bytes(data))
        if loaded.is_nominal:
            raise ValueError(f"the {what} is nominal (it holds no parameter values)")
        mine = {n: p.data for n, p in self.state.parameters}
        theirs = {n: p.data for n, p in loaded.parameters}
        if {n: (a.shape, a.dtype) for n, a in mine.items()} != {n: (a.shape, a.dtype) for n, a in theirs.items()}:
            raise ValueError(f"the {what}'s parameters do not match this model's: "
                             f"{sorted(theirs)} vs {sorted(mine)}")
        if LEARNING_RATE_PROPERTY in loaded._properties:
            check_learning_rate(loaded._properties[LEARNING_RATE_PROPERTY],
                                f"{what}'s property '{LEARNING_RATE_PROPERTY}'")
        if loaded._optimizer is not None:
            check_learning_rate(loaded._optimizer.initial_learning_rate, f"{what}'s initial learning rate")
        return loaded

    def _commit(self, loaded: CheckpointState) -> None:
        mine = {n: p.data for n, p in self.state.parameters}
        for name, p in loaded.parameters:
            mine[name][...] = p.data
        self.state._optimizer = loaded._optimizer
        self.state._properties.clear()
        self.state._properties.update(loaded._properties)
        if self.optimizer is not None:
            self.optimizer = Optimizer(self._optimizer_model, self.module)
        check = self.guard.check
        self.guard = StepGuard(self.module, self.optimizer)
        self.guard.check = check

    def export_model(self, output_names) -> bytes:
        return self.module.export_model_for_inferencing(None, [str(n) for n in _buffer(output_names)])
