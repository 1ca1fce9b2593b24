"""What onnxtrain's own layers above the api (train/) use of a Module, Optimizer and CheckpointState beyond
onnxruntime.training.api's public surface.  The api's classes keep ORT's names and nothing more; everything else
reads their state through these functions, so a change inside the api shows here, not as a broken private read.
"""
from __future__ import annotations

from ..checkpoint import CheckpointData
from .checkpoint_state import CheckpointState
from .module import Module
from .optimizer import Optimizer

# ---- CheckpointState ----------------------------------------------------------------------------------


def properties(state: CheckpointState) -> dict:
    """The state's properties as the live dict (no checks: a caller writes values a checkpoint can hold)."""
    return state._properties


def arrays(state: CheckpointState) -> dict:
    """name -> the live host array of every parameter of ``state``."""
    state._on_host()
    return {n: e.data for n, e in state._entries.items()}


def optimizer_group(state: CheckpointState):
    """The state's OptimizerGroup (step count, moments, initial learning rate); None when it holds none."""
    return state._optimizer


def to_data(state: CheckpointState, include_optimizer_state: bool) -> CheckpointData:
    """The state as the CheckpointData a checkpoint is written from."""
    return state._to_data(include_optimizer_state)


# ---- Module -------------------------------------------------------------------------------------------


def state_of(module: Module) -> CheckpointState:
    return module._state


def trainable_names(module: Module) -> list:
    """The trainable parameters' names, in the training model's order."""
    return module._trainable_names


def trainable_arrays(module: Module, writing: bool = False) -> dict:
    """name -> the live host array of each trainable parameter, in the training model's order; ``writing`` when
    the caller changes them (a device then takes them again before its next step)."""
    module._state._on_host(writing)
    entries = module._state._entries
    return {n: entries[n].data for n in module._trainable_names}


def gradients(module: Module) -> dict:
    """name -> the accumulated gradient (None before a train step) of each trainable parameter."""
    module._state._on_host()
    entries = module._state._entries
    return {n: entries[n].grad for n in module._trainable_names}


def train_step(module: Module, inputs: list, defer: bool = False):
    """The train step's user outputs; with ``defer`` a function that gives them (a deferring provider submits
    the work when they are read)."""
    return module._train_step(inputs, defer)


def replace_state(module: Module, optimizer, loaded: CheckpointState) -> None:
    """Copy ``loaded``'s parameters into ``module``'s live arrays and take its optimizer group and properties;
    ``optimizer`` (or None) then takes its step count, moments and learning rate from them."""
    state = module._state
    mine = {n: p.data for n, p in state.parameters}
    for name, p in loaded.parameters:
        mine[name][...] = p.data
    state._optimizer = loaded._optimizer
    state._properties.clear()
    state._properties.update(loaded._properties)
    if optimizer is not None:
        optimizer._load_state()


# ---- Optimizer ----------------------------------------------------------------------------------------


def step_count(optimizer: Optimizer) -> int:
    return optimizer._group.step


def set_step_count(optimizer: Optimizer, count: int) -> None:
    optimizer._group.step = count


def moments(optimizer: Optimizer) -> dict:
    """parameter name -> {moment name: live array} of the optimizer's state (brought up to date from a device)."""
    optimizer._module._state._on_host()
    return optimizer._group.states


def updated_arrays(optimizer: Optimizer, writing: bool = True) -> list:
    """(parameter name, what, array) for every array a step may write (Optimizer._updated_arrays)."""
    return optimizer._updated_arrays(writing)


def step_guard(optimizer: Optimizer) -> tuple:
    """(what a step writes: the arrays, or their residents on a provider that keeps device copies; the
    runtime guard that snapshots and checks them)."""
    return optimizer._step_guard()

