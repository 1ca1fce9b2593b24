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
from ..runtime.guard import bad_values


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


class StepGuard:
    """Runs guarded train steps for a Module and its Optimizer (or None: forward and backward only)."""

    def __init__(self, module, optimizer=None):
        self.module, self.optimizer = module, optimizer
        self.check = True  # False: plain steps, as the api runs them
        self._steps = 0  # steps done without an optimizer, for the error's step number

    def step_number(self) -> int:
        """The 1-based number of the next step."""
        return (api.step_count(self.optimizer) if self.optimizer is not None else self._steps) + 1

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
        NonFiniteStepError, the state as before the step, when the loss or the update is not finite.

        Where the provider defers (WebGPU), the step is one submission: the train step, a snapshot of what the
        optimizer writes, the optimizer step and a count of non-finite values, read back with the loss; a
        non-finite loss is then seen after the optimizer ran, and undone with it.  Elsewhere the loss is checked
        before the optimizer runs."""
        module, optimizer = self.module, self.optimizer
        if not self.check:
            return self._plain_step(inputs)
        if optimizer is None or api.state_of(module).is_nominal:
            return self._backward_step(inputs, epoch)
        held, guard = api.step_guard(optimizer)
        number = self.step_number()
        count = api.step_count(optimizer)
        module.train()
        try:
            with np.errstate(all="ignore"):  # what goes non-finite is reported below, by name
                outputs = api.train_step(module, inputs, defer=True)
                if not guard.defers:
                    loss = _loss(outputs())
                    if not math.isfinite(loss):
                        raise self._error(number, epoch, "loss", loss=loss)
                guard.snapshot(held)
                try:
                    optimizer.step()
                except BaseException:
                    guard.restore(held)
                    api.set_step_count(optimizer, count)
                    raise
                bad = guard.count_nonfinite(held)
                loss = _loss(outputs())
            if math.isfinite(loss) and not bad():
                return loss
            if not math.isfinite(loss):
                error = self._error(number, epoch, "loss", loss=loss)
            else:
                error = self._diagnose(number, epoch, api.updated_arrays(optimizer, writing=False))
            guard.restore(held)
            api.set_step_count(optimizer, count)
            raise error
        finally:
            module.lazy_reset_grad()

    def _backward_step(self, inputs, epoch) -> float:
        """A guarded step without an optimizer: forward and backward, the loss and gradients checked."""
        number = self.step_number()
        self.module.train()
        try:
            with np.errstate(all="ignore"):
                loss = _loss(self.module(*inputs))
            if not math.isfinite(loss):
                raise self._error(number, epoch, "loss", loss=loss)
            name, grad = self._first_bad_gradient()
            if name is not None:
                raise self._error(number, epoch, "gradient", name, grad)
            self._steps += 1
            return loss
        finally:
            self.module.lazy_reset_grad()

    def _plain_step(self, inputs) -> float:
        self.module.train()
        try:
            out = self.module(*inputs)
            if self.optimizer is not None:
                self.optimizer.step()
            return _loss(out)
        finally:
            self.module.lazy_reset_grad()

    def _diagnose(self, number, epoch, arrays: list) -> NonFiniteStepError:
        """The first cause: a bad gradient (which the optimizer turns into a bad update), else the first bad array."""
        name, grad = self._first_bad_gradient()
        if name is not None:
            return self._error(number, epoch, "gradient", name, grad)
        name, what, array = next(item for item in arrays if bad_values(item[2]))
        return self._error(number, epoch, what, name, array)


def _loss(outputs) -> float:
    """The loss among a train step's outputs: the first (or the only one), of shape [] or [1]."""
    first = outputs[0] if isinstance(outputs, (tuple, list)) else outputs
    return float(np.asarray(first).reshape(-1)[0])


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
