"""Optimizer: runs the optimizer model over the state's parameters, gradients and moments in place."""
from __future__ import annotations

import numpy as np

from ..runtime import Session
from .checkpoint_state import LEARNING_RATE_PROPERTY, NominalStateError
from .module import Module, load_model

ALGORITHMS = {"AdamWOptimizer": ("momentum0", "momentum1"), "SGDOptimizerV2": ("momentum0",)}
SEQUENCE_INPUTS = {"AdamWOptimizer": ["params", "gradients", "first_order_moments", "second_order_moments"],
                   "SGDOptimizerV2": ["params", "gradients", "first_order_moments"]}
DEFAULT_LEARNING_RATE = 0.001


class Optimizer:
    """Updates the trainable parameters of ``module`` from their accumulated gradients."""

    def __init__(self, optimizer_uri, module: Module):
        if not isinstance(module, Module):
            raise TypeError(f"module must be an onnxtrain Module, got {type(module).__name__}")
        model = load_model(optimizer_uri, "optimizer model")
        found = [n.op_type for n in model.graph.nodes if n.op_type in ALGORITHMS]
        if len(found) != 1:
            raise ValueError(f"the optimizer model must hold exactly one of {sorted(ALGORITHMS)} nodes, found "
                             f"{found or 'none'}")
        self._algorithm = found[0]
        expected = ["learning_rate", "step"] + SEQUENCE_INPUTS[self._algorithm]
        names = [vi.name for vi in model.graph.inputs]
        if names != expected:
            raise ValueError(f"the {self._algorithm} optimizer model must have inputs {expected}, got {names}")
        self._session = Session(model)
        self._module = module
        self._state = module._state
        self._names = module._trainable_names
        group = self._state._optimizer_group()
        self._group = group
        self._momentum_names = ALGORITHMS[self._algorithm]
        rate = self._state._properties.get(LEARNING_RATE_PROPERTY, group.initial_learning_rate)
        self.set_learning_rate(rate)
        if not self._state.is_nominal:
            self._ensure_moments()

    def _ensure_moments(self) -> None:
        entries = self._state._entries
        for name in self._names:
            moments = self._group.states.setdefault(name, {})
            data = entries[name].data
            for m in self._momentum_names:
                if m not in moments or moments[m].shape != data.shape:
                    moments[m] = np.zeros_like(data)

    def step(self) -> None:
        """One optimizer update; the step count advances when the model reports an update."""
        if self._state.is_nominal:
            raise NominalStateError("Cannot perform an optimizer step with a nominal state")
        self._ensure_moments()
        entries = self._state._entries
        states = self._group.states
        feeds = [self._lr, np.array([self._group.step + 1], dtype=np.int64),
                 [entries[n].data for n in self._names], [entries[n].grad for n in self._names]]
        feeds += [[states[n][m] for n in self._names] for m in self._momentum_names]
        (updated,) = self._session.run(feeds)
        if bool(np.asarray(updated).ravel()[0]):
            self._group.step += 1

    def set_learning_rate(self, learning_rate: float) -> None:
        self._lr = np.array([learning_rate], dtype=np.float32)
        self._state._learning_rate = float(self._lr[0])

    def get_learning_rate(self) -> float:
        return float(self._lr[0])
