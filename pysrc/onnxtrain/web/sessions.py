"""The sessions of the JavaScript library (web/lib/onnxtrain.mjs), by handle, behind one generic call.

The library's worker sends every request as ``call(method, handle, args)``: ``create`` makes a session and returns
its handle, every other method acts on the session of that handle.  Methods follow onnxruntime-web 1.19.2's
TrainingSession (``run_train_step`` is ``runTrainStep``: forward and backward only, no optimizer step).
Tensors cross the boundary as numpy arrays in and {"type", "dims", "data": bytes} dicts out, so the module runs
(and is tested) in CPython.  A failed call changes nothing the caller can see: the session stays usable.
"""
from __future__ import annotations

import re
import time

import numpy as np

from .. import artifacts, ir
from ..api import LinearLRScheduler
from ..ir import ort_names
from ..train import Trainer
from .bridge import TrainingSession, _buffer, _bytes

TYPES = {np.dtype(np.float32): "float32", np.dtype(np.float64): "float64", np.dtype(np.int64): "int64",
         np.dtype(np.int32): "int32", np.dtype(np.uint8): "uint8", np.dtype(np.bool_): "bool",
         np.dtype(np.int8): "int8", np.dtype(np.int16): "int16", np.dtype(np.uint16): "uint16",
         np.dtype(np.uint32): "uint32", np.dtype(np.uint64): "uint64"}


def tensor(value) -> dict:
    """An output as the library's tensor: its type name (onnxruntime-web's), dims and raw bytes."""
    value = np.ascontiguousarray(value)
    if value.dtype not in TYPES:
        raise TypeError(f"an output of type {value.dtype.name} cannot be returned as a tensor")
    return {"type": TYPES[value.dtype], "dims": list(value.shape), "data": value.tobytes()}


def _signature(model_bytes: bytes, names: list) -> dict:
    """name -> (numpy dtype, shape with None for a free axis) of a model's inputs ``names``."""
    types = {v.name: v.type for v in ir.load(model_bytes).graph.inputs}
    out = {}
    for name in names:
        t = types[name]
        shape = None if getattr(t, "shape", None) is None else [d if isinstance(d, int) else None for d in t.shape]
        out[name] = (np.dtype(ir.dtypes.to_numpy(t.elem_type)), shape)
    return out


def _check_feeds(what: str, feeds: dict, signature: dict) -> list:
    """The feeds in the model's input order, checked by name, type and shape, with an error that names them."""
    names = list(signature)
    missing = [n for n in names if n not in feeds]
    extra = [n for n in feeds if n not in signature]
    if missing or extra:
        raise ValueError(f"the {what} takes inputs {names}: " + "; ".join(
            part for part in (missing and f"missing {missing}", extra and f"unknown {extra}") if part))
    out = []
    for name in names:
        value = np.asarray(feeds[name])
        dtype, shape = signature[name]
        if value.dtype != dtype:
            raise TypeError(f"input '{name}' of the {what} must be a {TYPES.get(dtype, dtype.name)} tensor, "
                            f"got {TYPES.get(value.dtype, value.dtype.name)}")
        if shape is not None and (len(shape) != value.ndim
                                  or any(d is not None and d != v for d, v in zip(shape, value.shape))):
            wanted = ["?" if d is None else d for d in shape]
            raise ValueError(f"input '{name}' of the {what} must have dims {wanted}, got {list(value.shape)}")
        out.append(value)
    return out


def _check_dataset(what: str, data, signature: dict) -> dict:
    """A dataset (input name -> array, rows along axis 0) checked like feeds, its first axis free."""
    if not isinstance(_buffer(data), dict):
        raise TypeError(f"the {what} must map each training input name to its array, got {type(data).__name__}")
    rows = {n: (dtype, None if shape is None else [None, *shape[1:]]) for n, (dtype, shape) in signature.items()}
    return dict(zip(rows, _check_feeds(what, dict(_buffer(data)), rows)))


#: session.train's options (camelCase, as JavaScript names them) -> Trainer's keyword arguments
TRAIN_OPTIONS = {"epochs": "epochs", "batchSize": "batch_size", "learningRate": "learning_rate",
                 "schedule": "schedule", "warmup": "warmup", "shuffle": "shuffle", "seed": "seed",
                 "validation": "validation", "keepBest": "keep_best", "patience": "patience",
                 "checkFinite": "check_finite"}


def _camel(value):
    """A progress record for JavaScript: keys in camelCase (a metric's name as it is), numpy numbers as floats."""
    if isinstance(value, dict):
        return {re.sub(r"_([a-z])", lambda m: m.group(1).upper(), k): (dict(v) if k == "metrics" else _camel(v))
                for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_camel(v) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    return value


def _fetch(outputs: dict, fetches) -> dict:
    """The outputs asked for (all with ``fetches`` None), by name, as tensors."""
    if fetches is None:
        names = list(outputs)
    else:
        names = [str(n) for n in _buffer(fetches)]
        unknown = [n for n in names if n not in outputs]
        if unknown:
            raise ValueError(f"no outputs named {unknown}; the outputs are {list(outputs)}")
    return {n: tensor(outputs[n]) for n in names}


#: generate_artifacts' file names as the keys of TrainingSession.create's argument
ARTIFACT_KEYS = {ort_names.TRAINING_MODEL: "trainModel", ort_names.EVAL_MODEL: "evalModel",
                 ort_names.OPTIMIZER_MODEL: "optimizerModel", ort_names.CHECKPOINT: "checkpointState"}


def generate_artifacts(model, options=None) -> dict:
    """The library's generateArtifacts: the four artifacts of a forward model (bytes) as TrainingSession.create
    takes them.  ``options``: requiresGrad, frozenParams, loss (a LossType name, default CrossEntropyLoss; None for
    none, the model's first output being the loss), optimizer (an OptimType name, default AdamW; None for none),
    additionalOutputNames.  (bridge.generate_artifacts has no way to leave the loss out, hence the direct call.)"""
    options = dict(_buffer(options) or {})
    known = {"requiresGrad", "frozenParams", "loss", "optimizer", "additionalOutputNames"}
    unknown = sorted(set(options) - known)
    if unknown:
        raise ValueError(f"generateArtifacts has no option {unknown[0]!r}; the options are {sorted(known)}")
    names = {key: options.get(key) for key in ("requiresGrad", "frozenParams", "additionalOutputNames")}
    for key, value in names.items():
        if value is not None and (isinstance(value, str) or not hasattr(_buffer(value), "__iter__")):
            raise TypeError(f"generateArtifacts' option {key} must be a list of names, got {value!r}")
    loss, optimizer = options.get("loss", "CrossEntropyLoss"), options.get("optimizer", "AdamW")
    made = artifacts.generate_artifacts(
        _bytes(model), requires_grad=_names(names["requiresGrad"]), frozen_params=_names(names["frozenParams"]),
        loss=None if loss is None else artifacts.enum_member(artifacts.LossType, loss),
        optimizer=None if optimizer is None else artifacts.enum_member(artifacts.OptimType, optimizer),
        additional_output_names=_names(names["additionalOutputNames"]))
    return {ARTIFACT_KEYS[name]: data for name, data in made.items() if name in ARTIFACT_KEYS}


def _names(value):
    return None if value is None else [str(n) for n in _buffer(value)]


class Session:
    """One TrainingSession of the library: the bridge's session (its checkpoint, export and learning-rate logic)
    stepped the way onnxruntime-web steps it."""

    def __init__(self, checkpoint, train_model, eval_model=None, optimizer_model=None):
        self.run = TrainingSession(train_model, checkpoint, eval_model, optimizer_model)
        module = self.run.module
        self.train_inputs = _signature(self.run._training_model, module.train().input_names())
        self.train_outputs = module.output_names()
        self.eval_inputs = self.eval_outputs = None
        if self.run._eval_model is not None:
            self.eval_inputs = _signature(self.run._eval_model, module.eval().input_names())
            self.eval_outputs = module.output_names()
        module.train()
        self.trainer = None  # the run of train(), while it goes on
        self.schedulers = {}  # id -> [(warmup, total, initial rate), its optimizer, LinearLRScheduler]

    @property
    def module(self):
        return self.run.module

    def names(self) -> dict:
        return {"trainingInputNames": list(self.train_inputs), "trainingOutputNames": list(self.train_outputs),
                "evalInputNames": list(self.eval_inputs or []), "evalOutputNames": list(self.eval_outputs or [])}

    def _step(self, training: bool, feeds: dict, fetches):
        names = self.train_outputs if training else self.eval_outputs
        inputs = _check_feeds("training model" if training else "eval model", feeds,
                              self.train_inputs if training else self.eval_inputs)
        out = self.module.train(training)(*inputs)
        return _fetch(dict(zip(names, out if isinstance(out, tuple) else (out,))), fetches)

    def run_train_step(self, feeds: dict, fetches=None) -> dict:
        return self._step(True, feeds, fetches)

    def run_eval_step(self, feeds: dict, fetches=None) -> dict:
        if self.eval_inputs is None:
            raise ValueError("this session has no eval model: pass evalModel to TrainingSession.create")
        return self._step(False, feeds, fetches)

    def _optimizer(self):
        if self.run.optimizer is None:
            raise ValueError("this session has no optimizer model: pass optimizerModel to TrainingSession.create")
        return self.run.optimizer

    def run_optimizer_step(self) -> None:
        self._optimizer().step()

    def lazy_reset_grad(self) -> None:
        self.module.lazy_reset_grad()

    def get_parameters_size(self, trainable_only: bool = True) -> int:
        return self.module.get_parameters_size(bool(trainable_only))

    def get_contiguous_parameters(self, trainable_only: bool = True) -> dict:
        return tensor(self.module.get_contiguous_parameters(bool(trainable_only)))

    def load_parameters_buffer(self, buffer, trainable_only: bool = True) -> None:
        data = _bytes(buffer)
        size = self.get_parameters_size(trainable_only)
        if len(data) != 4 * size:
            raise ValueError(f"the parameter buffer has {len(data)} bytes, but the model has {size} "
                             f"{'trainable ' if trainable_only else ''}parameters ({4 * size} bytes of float32)")
        self.module.copy_buffer_to_parameters(np.frombuffer(data, np.float32), bool(trainable_only))

    def export_model_for_inferencing(self, output_names) -> bytes:
        return self.run.export_model(output_names)

    def save_checkpoint(self, include_optimizer_state: bool = True) -> bytes:
        return self.run.save_checkpoint(bool(include_optimizer_state))

    def load_checkpoint(self, data) -> None:
        self.run.load_checkpoint(data)

    def get_properties(self) -> dict:
        """The checkpoint state's properties (saved with it): name -> int, float or str."""
        return dict(self.run.state.properties.items())

    def set_property(self, name: str, value) -> None:
        """A property saved with the next checkpoint; JavaScript's whole numbers arrive as ints."""
        self.run.state.properties[name] = value

    def set_learning_rate(self, learning_rate: float) -> None:
        self._optimizer()
        self.run.set_learning_rate(learning_rate)

    def get_learning_rate(self) -> float:
        return float(self._optimizer().get_learning_rate())

    def create_lr_scheduler(self, warmup_step_count, total_step_count, initial_lr) -> int:
        """onnxtrain.api.LinearLRScheduler on this session's optimizer (it sets the rate for the current step
        count at once); returns the scheduler's id for ``lr_scheduler_step``."""
        settings = (warmup_step_count, total_step_count, initial_lr)
        optimizer = self._optimizer()
        scheduler = LinearLRScheduler(optimizer, *settings)
        key = max(self.schedulers, default=0) + 1
        self.schedulers[key] = [settings, optimizer, scheduler]
        return key

    def lr_scheduler_step(self, key) -> float:
        """The scheduler's step: the learning rate for the optimizer's step count, set and returned."""
        entry = self.schedulers.get(key)
        if entry is None:
            raise ValueError(f"no learning-rate scheduler {key!r} on this session")
        optimizer = self._optimizer()
        if entry[1] is not optimizer:  # load_checkpoint made a new Optimizer
            entry[1:] = [optimizer, LinearLRScheduler(optimizer, *entry[0])]
        entry[2].step()
        return float(optimizer.get_learning_rate())


    # ---- train(): the epoch loop, driven chunk by chunk ------------------------------------------------------

    def train_begin(self, dataset, options=None) -> dict:
        """Start a run of onnxtrain.train.Trainer over ``dataset`` (input name -> array); ``options`` as
        TRAIN_OPTIONS names them.  Nothing changes when the data or an option is wrong."""
        if self.trainer is not None:
            raise RuntimeError("this session is already training: wait for train() to end, or abort it")
        options = dict(_buffer(options) or {})
        unknown = sorted(set(options) - set(TRAIN_OPTIONS))
        if unknown:
            raise ValueError(f"train has no option {unknown[0]!r}; the options are {sorted(TRAIN_OPTIONS)}")
        kwargs = {TRAIN_OPTIONS[k]: v for k, v in options.items()}
        validation = kwargs.get("validation")
        if isinstance(validation, bool) or (validation is not None and not isinstance(validation, (int, float))
                                            and not isinstance(_buffer(validation), dict)):
            raise TypeError(f"train's validation must be a fraction of the rows in [0, 1) or a dataset (input name "
                            f"-> tensor), got {validation!r}")
        if isinstance(_buffer(validation), dict):
            kwargs["validation"] = _check_dataset("validation data", validation, self.train_inputs)
        data = _check_dataset("training data", dataset, self.train_inputs)
        self._optimizer()
        trainer = Trainer(self.module, self.run.optimizer, data, **kwargs)
        self.module.train()
        self.trainer, self.epoch_losses, self.failure = trainer, {}, None
        return {"rows": trainer.rows, "stepsPerEpoch": trainer.steps_per_epoch, "epochs": trainer.epochs,
                "validationRows": 0 if trainer.validation_data is None else len(trainer.validation_data[0])}

    def _run(self) -> Trainer:
        if self.trainer is None:
            raise RuntimeError("this session is not training: call train() first")
        return self.trainer

    def train_continue(self, budget_ms=50) -> dict:
        """Whole steps for about ``budget_ms`` milliseconds (one at least): their progress records, and whether
        the run is done.  A step that fails is reported by the next call, after the records of those before it."""
        trainer = self._run()
        if self.failure is not None:
            failure, self.failure = self.failure, None
            raise failure
        deadline = time.perf_counter() + float(budget_ms) / 1000
        records = []
        while not trainer.done:
            try:
                record = trainer.step()
            except Exception as e:
                if not records:
                    raise
                self.failure = e
                break
            total = self.epoch_losses.setdefault(record["epoch"] - record["epoch_done"], [0.0, 0])
            total[0] += float(record["loss"]) * record["examples"]
            total[1] += record["examples"]
            records.append(_camel(record))
            if time.perf_counter() >= deadline:
                break
        return {"records": records, "done": trainer.done and self.failure is None}

    def train_end(self, finished=True) -> dict:
        """End the run: its summary.  A finished run with keepBest and a validation loss puts the best epoch's
        parameters back; an aborted or failed one (``finished`` false) leaves the session at its last step."""
        trainer = self._run()
        self.trainer = self.failure = None
        restored = trainer.use_best() if finished and trainer.best.keep_best else None
        history = [{**_camel(h), "loss": self._epoch_loss(h["epoch"])} for h in trainer.history]
        best = _camel(trainer.best.summary())
        del best["improved"]
        return {"epochs": trainer.epoch, "steps": trainer.steps,
                "loss": self._epoch_loss(trainer.epoch) if trainer.epoch else None,
                "validationLoss": trainer.history[-1]["validation_loss"] if trainer.history else None,
                "best": {**best, "restored": restored is not None}, "history": history}

    def _epoch_loss(self, epoch: int):
        """The mean training loss of a finished epoch's steps, weighted by their rows."""
        total, rows = self.epoch_losses.get(epoch - 1, (0.0, 0))
        return total / rows if rows else None


TRAINING_METHODS = {"train_continue", "train_end"}
METHODS = {"run_train_step", "run_eval_step", "run_optimizer_step", "lazy_reset_grad", "get_parameters_size",
           "get_contiguous_parameters", "load_parameters_buffer", "export_model_for_inferencing", "save_checkpoint",
           "load_checkpoint", "get_properties", "set_property", "set_learning_rate", "get_learning_rate",
           "create_lr_scheduler", "lr_scheduler_step", "train_begin", *TRAINING_METHODS}


class Registry:
    """The sessions of one worker by handle: ``call(method, handle, args)`` is the whole protocol."""

    def __init__(self):
        self.sessions = {}
        self.next_handle = 1

    def call(self, method: str, handle, args):
        args = list(_buffer(args) or [])
        if method == "create":
            session = Session(*args)
            handle, self.next_handle = self.next_handle, self.next_handle + 1
            self.sessions[handle] = session
            return {"handle": handle, **session.names()}
        if method == "generate_artifacts":
            return generate_artifacts(*args)
        if method != "release" and method not in METHODS:
            raise ValueError(f"unknown method {method!r}")
        session = self._session(handle)
        if session.trainer is not None and method not in TRAINING_METHODS:
            name = "train" if method == "train_begin" else re.sub(r"_([a-z])", lambda m: m.group(1).upper(), method)
            raise RuntimeError(f"this session is training: {name}() has to wait until train() ends (or is aborted)")
        if method == "release":
            del self.sessions[handle]
            return None
        return getattr(session, method)(*args)

    def _session(self, handle) -> Session:
        session = self.sessions.get(handle)
        if session is None:
            raise ValueError(f"no session with handle {handle} (released, or never created)")
        return session
