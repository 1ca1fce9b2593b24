"""Optimizer: runs the optimizer model over the state's parameters, gradients and moments in place."""
from __future__ import annotations

import math
import os

import numpy as np

from ..ir.dtypes import DataType
from ..ir.model import SequenceType, TensorType
from ..ir.ort_names import ADAMW, LEARNING_RATE, MOMENTUMS, OPTIMIZER_INPUTS, SGD, STEP
from .checkpoint_state import LEARNING_RATE_PROPERTY
from .errors import ArtifactError, LearningRateError, nominal_state_error
from ..runtime import Session
from ..runtime.guard import HostGuard, ResidentGuard
from .module import Module, load_model

#: The moments each algorithm writes (SGDOptimizerV2 is fed first_order_moments but never reads or writes them).
UPDATED_MOMENTS = {ADAMW: MOMENTUMS[ADAMW], SGD: ()}
DEFAULT_LEARNING_RATE = 0.001
_FLOAT, _INT64, _BOOL = DataType.FLOAT, DataType.INT64, DataType.BOOL
_FLOAT32_MAX = float(np.finfo(np.float32).max)


def check_learning_rate(learning_rate, what: str = "learning rate") -> float:
    """``learning_rate`` as a float, or a LearningRateError naming the value when it is not a finite number >= 0."""
    if isinstance(learning_rate, (bool, np.bool_)):
        raise LearningRateError(f"the {what} must be a finite number >= 0, got {learning_rate!r}")
    try:
        value = float(learning_rate)
    except (TypeError, ValueError):
        raise LearningRateError(f"the {what} must be a finite number >= 0, got {learning_rate!r}") from None
    if not math.isfinite(value) or value < 0:
        raise LearningRateError(f"the {what} must be a finite number >= 0, got {value!r}")
    if value > _FLOAT32_MAX:
        raise LearningRateError(f"the {what} {value!r} does not fit in float32 (the optimizer model's learning_rate)")
    return value


def _type_text(t) -> str:
    if isinstance(t, TensorType):
        return f"tensor({_ELEM.get(t.elem_type, t.elem_type)})"
    if isinstance(t, SequenceType):
        return f"seq({_type_text(t.elem_type) if t.elem_type is not None else '?'})"
    return "no type" if t is None else type(t).__name__


_ELEM = {_FLOAT: "float", _INT64: "int64", _BOOL: "bool"}


def _check_signature(model, algorithm: str, where: str) -> None:
    """The optimizer model's inputs and outputs are typed as onnxruntime-training 1.19.2 declares them:
    learning_rate tensor(float), step tensor(int64), the parameter groups seq(tensor(float)), and a first output
    tensor(bool), the flag that says whether the update happened."""
    graph = model.graph
    expected = list(OPTIMIZER_INPUTS[algorithm])
    names = [vi.name for vi in graph.inputs]
    if names != expected:
        raise ArtifactError(f"{where}: the {algorithm} optimizer model must have inputs {expected}, got {names}")
    for vi in graph.inputs:
        want = {LEARNING_RATE: "tensor(float)", STEP: "tensor(int64)"}.get(vi.name, "seq(tensor(float))")
        t = vi.type
        if vi.name in (LEARNING_RATE, STEP):
            ok = isinstance(t, TensorType) and t.elem_type == (_FLOAT if vi.name == LEARNING_RATE else _INT64)
        else:
            ok = isinstance(t, SequenceType) and (t.elem_type is None or (
                isinstance(t.elem_type, TensorType) and t.elem_type.elem_type == _FLOAT))
        if not ok:
            raise ArtifactError(f"{where}: input '{vi.name}' must be {want} (as onnxruntime-training declares it), "
                             f"but it is declared as {_type_text(t)}")
    if not graph.outputs:
        raise ArtifactError(f"{where}: the model has no outputs; it must output the tensor(bool) flag that says "
                         f"whether the {algorithm} update happened")
    first = graph.outputs[0]
    if not (isinstance(first.type, TensorType) and first.type.elem_type == _BOOL):
        raise ArtifactError(f"{where}: output '{first.name}' must be the tensor(bool) update flag, but it is declared "
                         f"as {_type_text(first.type)}")


def _where(optimizer_uri) -> str:
    if isinstance(optimizer_uri, (str, os.PathLike)):
        return f"the optimizer model '{os.fspath(optimizer_uri)}'"
    return "the optimizer model"


class Optimizer:
    """Updates the trainable parameters of ``module`` from their accumulated gradients."""

    def __init__(self, optimizer_uri, module: Module):
        if not isinstance(module, Module):
            raise TypeError(f"module must be an onnxtrain Module, got {type(module).__name__}")
        model = load_model(optimizer_uri, "optimizer model")
        where = _where(optimizer_uri)
        found = [n.op_type for n in model.graph.nodes if n.op_type in MOMENTUMS]
        if len(found) != 1:
            raise ArtifactError(f"{where} must hold exactly one of {sorted(MOMENTUMS)} nodes, found "
                             f"{found or 'none'}")
        self._algorithm = found[0]
        _check_signature(model, self._algorithm, where)
        self._session = Session(model, module._provider)
        self._module = module
        self._state = module._state
        self._names = module._trainable_names
        self._momentum_names = MOMENTUMS[self._algorithm]
        self._lr = np.zeros(1, np.float32)   # the step's inputs, one array each, written in place
        self._step = np.zeros(1, np.int64)
        self._load_state()

    def _load_state(self) -> None:
        """Take the step count, moments and learning rate from the module's checkpoint state, as at creation (the
        trainer calls this after it loads a checkpoint into that state)."""
        state = self._state
        initial = state._optimizer.initial_learning_rate if state._optimizer is not None else DEFAULT_LEARNING_RATE
        if LEARNING_RATE_PROPERTY in state._properties:
            rate = check_learning_rate(state._properties[LEARNING_RATE_PROPERTY],
                                       f"checkpoint property '{LEARNING_RATE_PROPERTY}'")
        else:
            rate = check_learning_rate(initial, "checkpoint's initial learning rate")
        self._group = state._optimizer_group()
        self.set_learning_rate(rate)
        if not state.is_nominal:
            self._ensure_moments()

    def _ensure_moments(self) -> None:
        entries = self._state._entries
        for name in self._names:
            moments = self._group.states.setdefault(name, {})
            data = entries[name].data
            for m in self._momentum_names:
                if m not in moments or moments[m].shape != data.shape:
                    moments[m] = np.zeros_like(data)

    def _updated_arrays(self, writing: bool = True) -> list:
        """(parameter name, what, array) for every array a step may write: the trainable parameters
        (what = "parameter") and the moments the algorithm updates (what = the moment's name); ``writing`` if the
        caller may write into them."""
        self._state._on_host(writing)
        return self._written_arrays()

    def _written_arrays(self) -> list:
        """``_updated_arrays`` as they are, host copies perhaps stale."""
        self._ensure_moments()
        entries, states = self._state._entries, self._group.states
        out = [(n, "parameter", entries[n].data) for n in self._names]
        out += [(n, m, states[n][m]) for m in UPDATED_MOMENTS[self._algorithm] for n in self._names]
        return out

    def step(self) -> None:
        """One optimizer update; the step count advances when the model reports an update."""
        if self._state.is_nominal:
            raise nominal_state_error("optimizer", "Optimizer.step")
        self._step[0] = self._group.step + 1
        updated = self._session.run(self._feeds(), self._session.output_names[:1])[0]
        if bool(np.asarray(updated).ravel()[0]):
            self._group.step += 1

    def _feeds(self) -> list:
        """The optimizer model's feeds: the rate, the step, the parameters, gradients and moments (held)."""
        self._ensure_moments()
        entries, states, held = self._state._entries, self._group.states, self._module._held
        feeds = [self._lr, self._step,
                 held([entries[n].data for n in self._names]), held([entries[n].grad for n in self._names])]
        return feeds + [held([states[n][m] for n in self._names]) for m in self._momentum_names]

    def _step_guard(self) -> tuple:
        """What a guarded step works on: the arrays a step writes, in ``_updated_arrays``' order (their residents
        on a provider that keeps device copies), and the guard that snapshots and checks them there."""
        residency = self._module._residency
        if getattr(self, "_guard", None) is None:
            self._guard = HostGuard() if residency is None else ResidentGuard(residency)
        arrays = [a for _, _, a in self._written_arrays()]
        return (arrays if residency is None else [residency.resident(a) for a in arrays]), self._guard

    def set_learning_rate(self, learning_rate: float) -> None:
        """Set the rate for the next steps; NaN, infinite and negative rates are refused (LearningRateError,
        a ValueError)."""
        value = check_learning_rate(learning_rate)
        self._lr[0] = value
        self._state._learning_rate = float(self._lr[0])

    def get_learning_rate(self) -> float:
        return float(self._lr[0])
