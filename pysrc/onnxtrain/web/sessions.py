"""The sessions of the JavaScript library (web/lib/onnxtrain.mjs), by handle, behind one generic call.

The library's worker sends every request as ``call(method, handle, args)``: ``create`` makes a session and returns
its handle, every other method acts on the session of that handle.  Methods follow onnxruntime-web 1.19.2's
TrainingSession (``run_train_step`` is ``runTrainStep``: forward and backward only, no optimizer step).
Tensors cross the boundary as numpy arrays in and {"type", "dims", "data": bytes} dicts out, so the module runs
(and is tested) in CPython; ``Registry.call`` turns a request's buffers into bytes once (bridge.plain), so nothing
below it sees a JavaScript value.  A failed call changes nothing the caller can see: the session stays usable.
"""
from __future__ import annotations

import json

import numpy as np

from .. import ir
from ..api import CheckpointState, LinearLRScheduler, Module, Optimizer
from ..providers import PROVIDERS, provider_for
from ..api.optimizer import check_learning_rate
from ..ir import ort_names
from ..train import Trainer, data as checks
from ..train.archive import artifacts_zip
from ..train.npz import load_npz
from ..train.trainer import held_out
from .bridge import TYPES, describe_model, plain, signature
from .fast_steps import FastStep
from .task_sessions import COMMON, TASK_METHODS, TaskSession
from .train_loop import TRAIN_OPTIONS, Training, camel_key, camel_keys


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
    if not isinstance(data, dict):
        raise TypeError(f"the {what} must map each training input name to its array, got {type(data).__name__}")
    rows = {n: (dtype, None if shape is None else [None, *shape[1:]]) for n, (dtype, shape) in signature.items()}
    return dict(zip(rows, _check_feeds(what, data, rows)))


def _fetch(outputs: dict, fetches) -> dict:
    """The outputs asked for (all with ``fetches`` None), by name, as tensors."""
    if fetches is None:
        names = list(outputs)
    else:
        names = [str(n) for n in fetches]
        unknown = [n for n in names if n not in outputs]
        if unknown:
            raise ValueError(f"no outputs named {unknown}; the outputs are {list(outputs)}")
    return {n: tensor(outputs[n]) for n in names}


#: the prefix of the properties the library keeps in a checkpoint for itself (getProperties leaves them out)
LIBRARY_PROPERTIES = "onnxtrain."

#: generate_artifacts' file names as the keys of TrainingSession.create's argument
ARTIFACT_KEYS = {ort_names.TRAINING_MODEL: "trainModel", ort_names.EVAL_MODEL: "evalModel",
                 ort_names.OPTIMIZER_MODEL: "optimizerModel", ort_names.CHECKPOINT: "checkpointState"}


def generate_artifacts(model, options=None) -> dict:
    """The library's generateArtifacts: the four artifacts of a forward model (bytes) as TrainingSession.create
    takes them.  ``options``: requiresGrad, frozenParams, loss (a LossType name, default CrossEntropyLoss; None for
    none, the model's first output being the loss), optimizer (an OptimType name, default AdamW; None for none),
    additionalOutputNames."""
    from .. import artifacts  # with onnxblock: not a module the engine's start imports

    options = dict(options or {})
    known = {"requiresGrad", "frozenParams", "loss", "optimizer", "additionalOutputNames"}
    unknown = sorted(set(options) - known)
    if unknown:
        raise ValueError(f"generateArtifacts has no option {unknown[0]!r}; the options are {sorted(known)}")
    names = {key: options.get(key) for key in ("requiresGrad", "frozenParams", "additionalOutputNames")}
    for key, value in names.items():
        if value is not None and (isinstance(value, str) or not hasattr(value, "__iter__")):
            raise TypeError(f"generateArtifacts' option {key} must be a list of names, got {value!r}")
    loss, optimizer = options.get("loss", "CrossEntropyLoss"), options.get("optimizer", "AdamW")
    made = artifacts.generate_artifacts(
        model, requires_grad=_names(names["requiresGrad"]), frozen_params=_names(names["frozenParams"]),
        loss=None if loss is None else artifacts.enum_member(artifacts.LossType, loss),
        optimizer=None if optimizer is None else artifacts.enum_member(artifacts.OptimType, optimizer),
        additional_output_names=_names(names["additionalOutputNames"]))
    return {ARTIFACT_KEYS[name]: data for name, data in made.items() if name in ARTIFACT_KEYS}


def _names(value):
    return None if value is None else [str(n) for n in value]


def _same_setting(given, used) -> bool:
    """Whether a resumed run's ``validation`` or ``seed`` is the one its data was split with: the same number (no
    validation being a fraction of 0), or a validation dataset of the same arrays."""
    if isinstance(given, dict) or isinstance(used, dict):
        return isinstance(given, dict) and isinstance(used, dict) and given.keys() == used.keys() and all(
            np.array_equal(given[k], used[k]) for k in given)
    if isinstance(given, bool) or not isinstance(given, (int, float, type(None))):
        return False
    return (given or 0) == (used or 0)


class Session(Training):
    """One TrainingSession of the library: the Module and Optimizer over a checkpoint's state, built from the
    artifacts' bytes, stepped the way onnxruntime-web steps them, and the Trainer of its runs (train() starts a new
    one; until then one without data, which checks and writes the session's checkpoints)."""

    def __init__(self, checkpoint, train_model, eval_model=None, optimizer_model=None, providers=None):
        self.models = {ort_names.TRAINING_MODEL: train_model, ort_names.EVAL_MODEL: eval_model,
                       ort_names.OPTIMIZER_MODEL: optimizer_model}
        self.state = CheckpointState.load_checkpoint(checkpoint)
        self.provider = provider_for(None if providers is None else [str(p) for p in providers])
        module = self.module = Module(train_model, self.state, eval_model, device=PROVIDERS[self.provider])
        self.optimizer = None if optimizer_model is None else Optimizer(optimizer_model, module)
        self.trainer = Trainer(module, self.optimizer, epochs=None, evaluate_epochs=False)
        self.train_inputs = _signature(train_model, module.train().input_names())
        self.train_outputs = module.output_names()
        self.eval_inputs = self.eval_outputs = None
        if eval_model is not None:
            self.eval_inputs = _signature(eval_model, module.eval().input_names())
            self.eval_outputs = module.output_names()
        module.train()
        self.schedulers = {}  # id -> [(warmup, total, initial rate), its optimizer, LinearLRScheduler]
        self.data_settings = {}  # the validation and seed the last train() split its data with

    def names(self) -> dict:
        return {"trainingInputNames": list(self.train_inputs), "trainingOutputNames": list(self.train_outputs),
                "evalInputNames": list(self.eval_inputs or []), "evalOutputNames": list(self.eval_outputs or []),
                "executionProvider": self.provider, "optimizer": self.optimizer is not None}

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
        if self.optimizer is None:
            raise ValueError("this session has no optimizer model: pass optimizerModel to TrainingSession.create")
        return self.optimizer

    def run_optimizer_step(self) -> None:
        self._optimizer().step()

    def lazy_reset_grad(self) -> None:
        self.module.lazy_reset_grad()

    def get_parameters_size(self, trainable_only: bool = True) -> int:
        return self.module.get_parameters_size(bool(trainable_only))

    def get_contiguous_parameters(self, trainable_only: bool = True) -> dict:
        return tensor(self.module.get_contiguous_parameters(bool(trainable_only)))

    def load_parameters_buffer(self, buffer, trainable_only: bool = True) -> None:
        data = bytes(buffer)
        size = self.get_parameters_size(trainable_only)
        if len(data) != 4 * size:
            raise ValueError(f"the parameter buffer has {len(data)} bytes, but the model has {size} "
                             f"{'trainable ' if trainable_only else ''}parameters ({4 * size} bytes of float32)")
        self.module.copy_buffer_to_parameters(np.frombuffer(data, np.float32), bool(trainable_only))

    def export_model_for_inferencing(self, output_names) -> bytes:
        return self.module.export_model_for_inferencing(None, [str(n) for n in output_names])

    def save_checkpoint(self, include_optimizer_state: bool = True) -> bytes:
        return CheckpointState.save_checkpoint(self.state, None, include_optimizer_state=bool(include_optimizer_state))

    def load_checkpoint(self, data) -> None:
        """Replace parameters and optimizer state with a checkpoint's (same model); the run's counters stay."""
        self.trainer.load_checkpoint(data)

    def get_properties(self) -> dict:
        """The user's properties of the checkpoint state (saved with it): name -> int, float or str.  The library's
        own (named ``onnxtrain.*``: the learning rate, the run's counters) stay in the checkpoint but not here."""
        return {k: v for k, v in self.state.properties.items() if not str(k).startswith(LIBRARY_PROPERTIES)}

    def set_property(self, name: str, value) -> None:
        """A property saved with the next checkpoint; JavaScript's whole numbers arrive as ints."""
        if str(name).startswith(LIBRARY_PROPERTIES):
            raise ValueError(f"the property name {name!r} is the library's own: names starting with "
                             f"{LIBRARY_PROPERTIES!r} are reserved")
        self.state.properties[name] = value

    def set_learning_rate(self, learning_rate: float) -> None:
        """ValueError naming the rate when it is NaN, infinite or negative; the rate stays as it was."""
        self._optimizer().set_learning_rate(check_learning_rate(learning_rate))

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

    def artifacts_zip(self) -> bytes:
        """The artifacts with the run's state as their checkpoint, as a .zip, to go on training elsewhere."""
        return artifacts_zip(self.models, self.trainer.checkpoint(), self.trainer.epoch)

    def read_dataset(self, data, name: str = "data.npz", validation: float = 0.0) -> dict:
        """A data file for train(): a .npz with one array per training input (named like them) or, for a model
        whose training inputs are features and labels, a CSV of numbers.  {"dataset": input name -> tensor,
        "rows", "validationRows" (those train() holds out for the ``validation`` fraction), "inputs": input name
        -> [dims, type]}; checked against the training model's inputs."""
        names = list(self.train_inputs)
        data = bytes(data)
        if str(name).lower().endswith(".csv"):
            from ..train.csv import csv_inputs  # not a module the engine's start imports

            arrays = csv_inputs(data, self.train_inputs)
        else:
            arrays = load_npz(data, names)
        checked = _check_dataset("data file", arrays, self.train_inputs)
        rows = checks.rows(names, list(checked.values()), "data file")
        return {"dataset": {n: tensor(a) for n, a in checked.items()}, "rows": rows,
                "validationRows": held_out(rows, validation),
                "inputs": {n: [list(a.shape), TYPES.get(a.dtype, a.dtype.name)] for n, a in checked.items()}}

    # ---- train(): the epoch loop, driven chunk by chunk ------------------------------------------------------

    def train_begin(self, dataset, options=None) -> dict:
        """Start a run of onnxtrain.train.Trainer over ``dataset`` (input name -> array); ``options`` as
        TRAIN_OPTIONS names them, plus ``checkpoints`` (each epoch's checkpoint in its last record) and
        ``resumeFrom`` (such a checkpoint: the run goes on where it was; ``resumeBest``: its best epoch's).
        Nothing changes when the data or an option is wrong."""
        if self.loop is not None:
            raise RuntimeError("this session is already training: wait for train() to end, or abort it")
        options = dict(options or {})
        checkpoints, resume = bool(options.pop("checkpoints", False)), options.pop("resumeFrom", None)
        resume_best, going_on = options.pop("resumeBest", None), bool(options.pop("resume", False))
        unknown = sorted(set(options) - set(TRAIN_OPTIONS))
        if unknown:
            raise ValueError(f"train has no option {unknown[0]!r}; the options are "
                             f"{sorted([*TRAIN_OPTIONS, 'checkpoints', 'resume', 'resumeBest', 'resumeFrom'])}")
        kwargs = {TRAIN_OPTIONS[k]: v for k, v in options.items()}
        if going_on:
            return self._go_on(dataset, kwargs, checkpoints)
        validation = kwargs.get("validation")
        if isinstance(validation, bool) or (validation is not None and not isinstance(validation, (int, float, dict))):
            raise TypeError(f"train's validation must be a fraction of the rows in [0, 1) or a dataset (input name "
                            f"-> tensor), got {validation!r}")
        if isinstance(validation, dict):
            kwargs["validation"] = _check_dataset("validation data", validation, self.train_inputs)
        data = _check_dataset("training data", dataset, self.train_inputs)
        self._optimizer()
        trainer = Trainer(self.module, self.optimizer, data, **kwargs)
        self.data_settings = {"validation": kwargs.get("validation"), "seed": kwargs.get("seed", 0)}
        if resume is not None:
            trainer.restore(bytes(resume), None if resume_best is None else bytes(resume_best))
        return self._start(trainer, checkpoints)

    def _go_on(self, dataset, settings: dict, checkpoints: bool) -> dict:
        """train(..., {resume: true}): the run the last train() left (paused, aborted or finished) goes on, on the
        same data, to ``epochs`` in all; only the settings that do not change the data may change."""
        trainer = self.trainer
        if trainer.train_data is None:
            raise ValueError("there is no run to resume: the session has not trained with train() yet")
        if isinstance(settings.get("validation"), dict):
            settings["validation"] = _check_dataset("validation data", settings["validation"], self.train_inputs)
        changed = [k for k in ("validation", "seed") if k in settings
                   and not _same_setting(settings.pop(k), self.data_settings.get(k))]
        if changed:
            raise ValueError(f"a resumed run keeps its data: the option {changed[0]!r} cannot change")
        data = list(_check_dataset("training data", dataset, self.train_inputs).values())
        split = trainer.validation_data is not None and not isinstance(self.data_settings.get("validation"), dict)
        held = len(trainer.validation_data[0]) if split else 0  # the rows the run holds out of this dataset
        if len(data[0]) != trainer.rows + held or any(a.shape[1:] != b.shape[1:]
                                                      for a, b in zip(data, trainer.train_data)):
            raise ValueError(f"a resumed run keeps its data: this dataset of {len(data[0])} rows is not the one of "
                             f"{trainer.rows + held} rows the run trains on")
        trainer.configure(**settings)
        return self._start(trainer, checkpoints)

    def _start(self, trainer: Trainer, checkpoints: bool) -> dict:
        self.trainer = trainer  # the session's run now: its checkpoints and artifacts_zip tell its epoch
        self.module.train()
        return self.begun(trainer, trainer.checkpoint if checkpoints else None)


TRAINING_METHODS = {"train_continue", "train_end"}
METHODS = {"run_train_step", "run_eval_step", "run_optimizer_step", "lazy_reset_grad", "get_parameters_size",
           "get_contiguous_parameters", "load_parameters_buffer", "export_model_for_inferencing", "save_checkpoint",
           "load_checkpoint", "get_properties", "set_property", "set_learning_rate", "get_learning_rate",
           "create_lr_scheduler", "lr_scheduler_step", "read_dataset", "artifacts_zip", "train_begin",
           *TRAINING_METHODS}


class Registry:
    """The sessions of one worker by handle: ``call(method, handle, args)`` is the whole protocol.  A handle is a
    TrainingSession (``create``) or a task (``create_task``, task_sessions.TaskSession)."""

    def __init__(self):
        self.sessions = {}
        self.next_handle = 1
        self.fast = {}   # handle -> the FastStep the engine may be running that session's steps with

    def _add(self, session) -> int:
        handle, self.next_handle = self.next_handle, self.next_handle + 1
        self.sessions[handle] = session
        return handle

    def call(self, method: str, handle, args):
        fast = self.fast.get(handle)
        if fast is not None:
            fast.sync()
        args = plain(args or [])
        if method == "deferred_then":  # [steps the page deferred, then a request]: one round trip for them all
            steps, method, args = args
            for step in steps:
                if step not in DEFERRABLE:
                    raise ValueError(f"{step!r} cannot be deferred; only {sorted(DEFERRABLE)}")
                self.call(step, handle, [])
            return self.call(method, handle, args)
        if method == "create":
            session = Session(*args)
            return {"handle": self._add(session), **session.names()}
        if method == "create_task":
            task = TaskSession(*args)
            return {"handle": self._add(task), "executionProvider": task.provider}
        if method in FUNCTIONS:
            return FUNCTIONS[method](*args)
        if method not in KNOWN:
            raise ValueError(f"unknown method {method!r}")
        session = self._session(handle)
        task = isinstance(session, TaskSession)
        if method != "release" and method not in (session.methods if task else METHODS):
            raise ValueError(f"a {session.kind} task has no method {method!r}" if task
                             else f"unknown method {method!r}")
        if session.loop is not None and method not in TRAINING_METHODS:
            name = "train" if method == "train_begin" else camel_key(method)
            raise RuntimeError(f"this session is training: {name}() has to wait until train() ends (or is aborted)")
        if method == "release":
            del self.sessions[handle]
            self.fast.pop(handle, None)
            return None
        return session.call(method, args) if task else getattr(session, method)(*args)

    def fast_step(self, handle):
        """The engine's description of a TrainingSession's step after Python ran one (fast_steps.FastStep), as
        JSON, or None where its steps need Python."""
        session = self.sessions.get(handle)
        if not isinstance(session, Session) or session.loop is not None:
            return None
        fast = self.fast.get(handle)
        if fast is None:
            fast = self.fast[handle] = FastStep(session)
        described = fast.describe()
        return None if described is None else json.dumps(described)

    def _session(self, handle):
        session = self.sessions.get(handle)
        if session is None:
            raise ValueError(f"no session with handle {handle} (released, or never created)")
        return session


def _describe_model(model) -> dict:
    """A forward model's inputs, outputs, parameters and ops without a gradient rule, and how to call it."""
    info = camel_keys(describe_model(model))
    try:
        info["signature"] = signature(model)
    except Exception:  # a model whose types cannot be put in words is still described
        info["signature"] = None
    return info


#: the steps of a TrainingSession the page may defer to its next request (they return nothing and, with an
#: optimizer model, cannot fail on input)
DEFERRABLE = {"run_optimizer_step", "lazy_reset_grad"}
#: the calls that act on no session
FUNCTIONS = {"generate_artifacts": generate_artifacts, "describe_model": _describe_model}
#: every method some session or task has
KNOWN = METHODS | COMMON | {"release"} | set().union(*TASK_METHODS.values())
