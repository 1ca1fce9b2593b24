"""The sessions of the JavaScript library (web/lib/onnxtrain.mjs), by handle, behind one generic call.

The library's worker sends every request as ``call(method, handle, args)``: ``create`` makes a session and returns
its handle, every other method acts on the session of that handle.  Methods follow onnxruntime-web 1.19.2's
TrainingSession (``run_train_step`` is ``runTrainStep``: forward and backward only, no optimizer step).
Tensors cross the boundary as numpy arrays in and {"type", "dims", "data": bytes} dicts out, so the module runs
(and is tested) in CPython.  A failed call changes nothing the caller can see: the session stays usable.
"""
from __future__ import annotations

import numpy as np

from .. import ir
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


METHODS = {"run_train_step", "run_eval_step", "run_optimizer_step", "lazy_reset_grad", "get_parameters_size",
           "get_contiguous_parameters", "load_parameters_buffer", "export_model_for_inferencing", "save_checkpoint",
           "load_checkpoint", "get_properties", "set_property", "set_learning_rate", "get_learning_rate"}


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
        if method == "release":
            self._session(handle)
            del self.sessions[handle]
            return None
        if method not in METHODS:
            raise ValueError(f"unknown method {method!r}")
        return getattr(self._session(handle), method)(*args)

    def _session(self, handle) -> Session:
        session = self.sessions.get(handle)
        if session is None:
            raise ValueError(f"no session with handle {handle} (released, or never created)")
        return session
