"""Train steps that are undone when the loss or an update is not finite.

A guarded step runs forward and backward, then snapshots the arrays the optimizer writes in place (trainable
parameters and the moments the algorithm updates) into buffers kept between steps, runs the optimizer and checks
what it wrote.  If the loss or the update is not finite, the snapshot is copied back and the step count restored,
so the state is exactly as before the step, and NonFiniteStepError says what went wrong.

This is the trainer's check, not api.Optimizer's: onnxruntime.training.api writes whatever the arithmetic gives,
and code written for it should see the same numbers here.
"""
from __future__ import annotations

import math

import numpy as np

from ..api import _internal as api
from ..ops import simd


class NonFiniteError(ArithmeticError):
    """A value that must be finite (a loss, a gradient, a parameter, an optimizer state) is NaN or infinite."""


class NonFiniteStepError(NonFiniteError):
    """A train step gave a non-finite loss, gradient or update; it was undone.

    ``what`` is "loss", "gradient", "parameter" or the optimizer state's name ("momentum0", "momentum1");
    ``parameter`` names the parameter (None for the loss)."""

    def __init__(self, step: int, epoch, what: str, parameter, learning_rate, bad: int = 1, size: int = 1,
                 loss: float = None):
        self.step, self.epoch, self.what, self.parameter = step, epoch, what, parameter
        self.learning_rate = learning_rate
        where = f"step {step}" + (f" (epoch {epoch})" if epoch is not None else "")
        values = f"{bad} of {size} values are nan or inf"
        if what == "loss":
            problem = f"the loss is {loss}"
        elif what == "gradient":
            problem = f"the gradient of parameter '{parameter}' is not finite ({values})"
        elif what == "parameter":
            problem = f"parameter '{parameter}' is not finite after the update ({values})"
        else:
            problem = f"the optimizer state '{what}' of parameter '{parameter}' is not finite after the update " \
                      f"({values})"
        advice = "the parameters and optimizer state are as they were before it"
        if learning_rate is not None:
            advice += f"; try a learning rate lower than the current {learning_rate:g}"
        if what in ("loss", "gradient"):
            advice += " (or look for nan or inf values in the data)"
        super().__init__(f"{where} was undone: {problem}; {advice}")


class NonFiniteStateError(NonFiniteError):
    """The state to save holds NaN or infinite values; nothing was written."""


def bad_values(array: np.ndarray) -> int:
    """How many values of ``array`` are NaN or infinite (0 for integer arrays)."""
    if array.dtype.kind not in "fc" or array.size == 0:
        return 0
    counted = simd.nonfinite(array)  # in the page: one SIMD pass instead of numpy's isfinite and a bool array
    if counted is not None:
        return counted
    finite = np.isfinite(array)
    return 0 if finite.all() else int(array.size - np.count_nonzero(finite))


class StepGuard:
    """Runs guarded train steps for a Module and its Optimizer (or None: forward and backward only)."""

    def __init__(self, module, optimizer=None):
        self.module, self.optimizer = module, optimizer
        self.check = True  # False: plain steps, as the api runs them
        self._buffers = []
        self._steps = 0  # steps done without an optimizer, for the error's step number

    def step_number(self) -> int:
        """The 1-based number of the next step."""
        return (api.step_count(self.optimizer) if self.optimizer is not None else self._steps) + 1

    def _snapshot(self, arrays: list) -> None:
        buffers = self._buffers
        if len(buffers) != len(arrays) or any(b.shape != a.shape or b.dtype != a.dtype
                                              for b, (_, _, a) in zip(buffers, arrays)):
            buffers[:] = [np.empty_like(a) for _, _, a in arrays]
        for buffer, (_, _, array) in zip(buffers, arrays):
            np.copyto(buffer, array)

    def _undo(self, arrays: list, step_count: int) -> None:
        for buffer, (_, _, array) in zip(self._buffers, arrays):
            np.copyto(array, buffer)
        api.set_step_count(self.optimizer, step_count)

    def _error(self, number, epoch, what, parameter=None, array=None, loss=None) -> NonFiniteStepError:
        rate = self.optimizer.get_learning_rate() if self.optimizer is not None else None
        bad, size = (1, 1) if array is None else (bad_values(array), array.size)
        return NonFiniteStepError(number, epoch, what, parameter, rate, bad, size, loss)

    def _first_bad_gradient(self):
        for name, grad in api.gradients(self.module).items():
            if grad is not None and bad_values(grad):
                return name, grad
        return None, None

    def step(self, inputs, epoch=None) -> float:
        """Forward, backward and optimizer step on ``inputs`` (a list of arrays); returns the loss.  Raises
        NonFiniteStepError, the state as before the step, when the loss or the update is not finite."""
        module, optimizer = self.module, self.optimizer
        if not self.check:
            return self._plain_step(inputs)
        if optimizer is not None and not api.state_of(module).is_nominal:
            held = api.device_guard(optimizer)
            if held is not None:
                return self._device_step(inputs, epoch, *held)
        number = self.step_number()
        module.train()
        try:
            with np.errstate(all="ignore"):  # what goes non-finite is reported below, by name
                out = module(*inputs)
            loss = float(np.asarray(out[0] if isinstance(out, tuple) else out).reshape(-1)[0])  # or shape [1]
            if not math.isfinite(loss):
                raise self._error(number, epoch, "loss", loss=loss)
            if optimizer is None:
                name, grad = self._first_bad_gradient()
                if name is not None:
                    raise self._error(number, epoch, "gradient", name, grad)
                self._steps += 1
                return loss
            arrays = api.updated_arrays(optimizer)
            count = api.step_count(optimizer)
            self._snapshot(arrays)
            try:
                with np.errstate(all="ignore"):
                    optimizer.step()
            except BaseException:
                self._undo(arrays, count)
                raise
            if any(bad_values(a) for _, _, a in arrays):
                error = self._diagnose(number, epoch, arrays)
                self._undo(arrays, count)
                raise error
            return loss
        finally:
            module.lazy_reset_grad()

    def _device_step(self, inputs, epoch, residents: list, guard) -> float:
        """The guarded step on WebGPU, as one submission: the train step, a snapshot of what the optimizer
        writes, the optimizer step and a count of non-finite values, read back with the loss.  A bad step is
        undone from the snapshot (for a non-finite loss the optimizer ran, unlike on the CPU, and is undone)."""
        module, optimizer = self.module, self.optimizer
        number = self.step_number()
        count = api.step_count(optimizer)
        module.train()
        try:
            outputs = api.train_step(module, inputs, defer=True)
            guard.snapshot(residents)
            optimizer.step()
            bad = guard.count_nonfinite(residents)
            loss = float(np.asarray(outputs()[0]).reshape(-1)[0])
            if math.isfinite(loss) and not bad():
                return loss
            if not math.isfinite(loss):
                error = self._error(number, epoch, "loss", loss=loss)
            else:
                error = self._diagnose(number, epoch, api.updated_arrays(optimizer, writing=False))
            guard.restore(residents)
            api.set_step_count(optimizer, count)
            raise error
        finally:
            module.lazy_reset_grad()

    def _plain_step(self, inputs) -> float:
        self.module.train()
        try:
            out = self.module(*inputs)
            if self.optimizer is not None:
                self.optimizer.step()
            return float(np.asarray(out[0] if isinstance(out, tuple) else out).reshape(-1)[0])
        finally:
            self.module.lazy_reset_grad()

    def _diagnose(self, number, epoch, arrays: list) -> NonFiniteStepError:
        """The first cause: a bad gradient (which the optimizer turns into a bad update), else the first bad array."""
        name, grad = self._first_bad_gradient()
        if name is not None:
            return self._error(number, epoch, "gradient", name, grad)
        name, what, array = next(item for item in arrays if bad_values(item[2]))
        return self._error(number, epoch, what, name, array)


def check_finite_state(module, optimizer) -> None:
    """NonFiniteStateError naming the first trainable parameter or optimizer state that holds NaN or inf
    (frozen parameters are never trained, and may hold -inf on purpose, as masks do)."""
    parameters = api.trainable_arrays(module)
    arrays = [(n, "parameter", a) for n, a in parameters.items()]
    if optimizer is not None:
        states = api.moments(optimizer)
        arrays += [(n, m, a) for n in parameters for m, a in states.get(n, {}).items()]
    for name, what, array in arrays:
        bad = bad_values(array)
        if bad:
            thing = f"parameter '{name}'" if what == "parameter" else f"the optimizer state '{what}' of parameter '{name}'"
            raise NonFiniteStateError(f"not saved: {thing} holds {bad} nan or inf values of {array.size}; "
                                      f"the last good checkpoint is kept")
