"""LinearLRScheduler: linear warm-up from 0, then linear decay to 0, as onnxruntime-training's."""
from __future__ import annotations

from .optimizer import Optimizer, check_learning_rate


def _step_count(name: str, value) -> int:
    if isinstance(value, bool) or not isinstance(value, int) and not (isinstance(value, float) and value.is_integer()):
        raise ValueError(f"{name} must be an integer >= 0, got {value!r}")
    if value < 0:
        raise ValueError(f"{name} must be an integer >= 0, got {value!r}")
    return int(value)


def linear_factor(step: int, warmup: int, total: int) -> float:
    """LinearLRScheduler's multiplier of the initial rate at optimizer step ``step``."""
    if step < warmup:
        return step / max(1, warmup)
    return max(0.0, (total - step) / max(1, total - warmup))


class LinearLRScheduler:
    """lr = initial_lr * step / warmup while step < warmup, then initial_lr * (total - step) / (total - warmup),
    where step is the optimizer's step count.

    The arguments mean what their names say.  onnxruntime-training 1.19.2's Python wrapper passes them to C++
    swapped (warmup_step_count acts as the total and vice versa); code written around that bug passes them in
    the other order and should swap them back when moving to onnxtrain.
    """

    def __init__(self, optimizer: Optimizer, warmup_step_count: int, total_step_count: int, initial_lr: float):
        self._warmup = _step_count("warmup_step_count", warmup_step_count)
        self._total = _step_count("total_step_count", total_step_count)
        self._initial_lr = check_learning_rate(initial_lr, "initial learning rate (initial_lr)")
        self._optimizer = optimizer
        optimizer._group.initial_learning_rate = self._initial_lr
        self.step()

    def step(self) -> None:
        """Set the learning rate for the optimizer's current step count."""
        factor = linear_factor(self._optimizer._group.step, self._warmup, self._total)
        self._optimizer.set_learning_rate(self._initial_lr * factor)
