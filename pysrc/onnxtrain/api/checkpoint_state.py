"""CheckpointState, Parameter and the two mappings, with onnxruntime.training.api's names and semantics."""
from __future__ import annotations

import os

import numpy as np

from ..checkpoint import CheckpointData, OptimizerGroup, read_checkpoint, write_checkpoint
from .errors import nominal_state_error

#: Property under which a save with optimizer state keeps the current learning rate.  ORT 1.19.2 keeps only
#: the initial one, so a resumed run silently fell back to it; onnxtrain restores the current one.
LEARNING_RATE_PROPERTY = "onnxtrain.learning_rate"


class _Entry:
    """One parameter's live buffers.  ``data`` is None in a nominal state until loaded."""
    __slots__ = ("data", "grad", "requires_grad", "dtype")

    def __init__(self, data, requires_grad, dtype=None):
        self.data = data
        self.grad = None
        self.requires_grad = requires_grad
        self.dtype = data.dtype if data is not None else dtype


class Parameter:
    """A view of one parameter of a CheckpointState.

    ``data`` is the live buffer: writing into it changes the model (as in ORT).
    Assigning ``data`` copies the new values in; shape and dtype must match."""

    def __init__(self, name: str, entry: _Entry):
        self._name = name
        self._entry = entry

    @property
    def name(self) -> str:
        return self._name

    @property
    def data(self) -> np.ndarray:
        return self._entry.data

    @data.setter
    def data(self, value) -> None:
        _copy_into(self._name, self._entry, value)

    @property
    def grad(self):
        return self._entry.grad

    @property
    def requires_grad(self) -> bool:
        return self._entry.requires_grad

    def __repr__(self) -> str:
        shape = None if self._entry.data is None else list(self._entry.data.shape)
        return f"Parameter(name={self._name!r}, shape={shape}, requires_grad={self.requires_grad})"


def _copy_into(name: str, entry: _Entry, value) -> None:
    value = np.asarray(value)
    if entry.data is None:
        raise nominal_state_error("parameter", f"parameter '{name}'")
    if value.shape != entry.data.shape or value.dtype != entry.data.dtype:
        raise ValueError(f"parameter '{name}' is {entry.data.dtype.name}{list(entry.data.shape)}; "
                         f"cannot assign {value.dtype.name}{list(value.shape)}")
    entry.data[...] = value


class Parameters:
    """``state.parameters``: name -> Parameter.  Iterates over (name, Parameter) sorted by name."""

    def __init__(self, state: "CheckpointState"):
        self._state = state

    def _entry(self, name: str, call: str = "parameter") -> _Entry:
        self._state._on_host(writing=True)
        entries = self._state._entries
        if name not in entries:
            raise KeyError(f"no parameter named '{name}' in the checkpoint state (parameters: {sorted(entries)})")
        if self._state.is_nominal:
            raise nominal_state_error(call, f"parameter '{name}'")
        return entries[name]

    def __getitem__(self, name: str) -> Parameter:
        return Parameter(name, self._entry(name))

    def __setitem__(self, name: str, value) -> None:
        _copy_into(name, self._entry(name, "set_parameter"), value)

    def __contains__(self, name: str) -> bool:
        return name in self._state._entries

    def __len__(self) -> int:
        return len(self._state._entries)

    def __iter__(self):
        for name in sorted(self._state._entries):
            yield name, self[name]

    def __repr__(self) -> str:
        return f"Parameters({sorted(self._state._entries)})"


class Properties:
    """``state.properties``: name -> int | float | str, saved with the checkpoint."""

    def __init__(self, values: dict):
        self._values = values

    def __getitem__(self, name: str):
        if name not in self._values:
            raise KeyError(f"no property named '{name}' in the checkpoint state")
        return self._values[name]

    def __setitem__(self, name: str, value) -> None:
        if not isinstance(name, str):
            raise TypeError(f"property names are strings, got {type(name).__name__}")
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, str, np.integer, np.floating)):
            raise TypeError(f"property '{name}' must be an int, float or str, got {type(value).__name__}")
        if isinstance(value, np.integer):
            value = int(value)
        elif isinstance(value, np.floating):
            value = float(value)
        self._values[name] = value

    def __contains__(self, name: str) -> bool:
        return name in self._values

    def __len__(self) -> int:
        return len(self._values)

    def __iter__(self):
        return iter(self._values)

    def items(self):
        return self._values.items()

    def __repr__(self) -> str:
        return f"Properties({self._values!r})"


class CheckpointState:
    """The parameters, optimizer state and properties of a training run."""

    def __init__(self, data: CheckpointData):
        self._entries = {}
        for name, array in data.trainable.items():
            self._entries[name] = _Entry(None if data.is_nominal else array, True, array.dtype)
        for name, array in data.frozen.items():
            self._entries[name] = _Entry(None if data.is_nominal else array, False, array.dtype)
        self.is_nominal = data.is_nominal
        self._properties = dict(data.properties)
        self._optimizer = data.optimizer_groups[0] if data.optimizer_groups else None
        self._learning_rate = None  # set by the Optimizer; saved as LEARNING_RATE_PROPERTY
        self._device = None         # a device's copies of the arrays (runtime.residency.Residency), if any

    @classmethod
    def load_checkpoint(cls, checkpoint_uri) -> "CheckpointState":
        """Load a checkpoint from a path or from its bytes."""
        return cls(read_checkpoint(checkpoint_uri))

    @classmethod
    def save_checkpoint(cls, state: "CheckpointState", checkpoint_uri, include_optimizer_state: bool = False):
        """Write ``state`` to ``checkpoint_uri`` atomically; with ``checkpoint_uri=None`` return the bytes."""
        data = state._to_data(include_optimizer_state)
        path = None if checkpoint_uri is None else os.fspath(checkpoint_uri)
        return write_checkpoint(data, path, layout="runtime")

    @property
    def parameters(self) -> Parameters:
        return Parameters(self)

    @property
    def properties(self) -> Properties:
        return Properties(self._properties)

    # -- used by Module and Optimizer -------------------------------------------------------------

    def _optimizer_group(self) -> OptimizerGroup:
        if self._optimizer is None:
            self._optimizer = OptimizerGroup()
        return self._optimizer

    def _on_host(self, writing: bool = False) -> None:
        """Make the host arrays current where a device changed its copies; ``writing`` if the caller may change
        them (the device then takes them again before its next step)."""
        if self._device is not None:
            self._device.to_host(writing)

    def _to_data(self, include_optimizer_state: bool) -> CheckpointData:
        self._on_host()
        def arrays(requires_grad):
            return {n: (e.data if e.data is not None else np.zeros(0, e.dtype))
                    for n, e in self._entries.items() if e.requires_grad == requires_grad}
        properties = dict(self._properties)
        groups = []
        if include_optimizer_state and self._optimizer is not None:
            groups = [self._optimizer]
            if self._learning_rate is not None:
                properties[LEARNING_RATE_PROPERTY] = float(self._learning_rate)
        return CheckpointData(trainable=arrays(True), frozen=arrays(False), optimizer_groups=groups,
                              properties=properties, is_nominal=self.is_nominal)
