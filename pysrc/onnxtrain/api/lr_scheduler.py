"""LinearLRScheduler: linear warm-up from 0, then linear decay to 0, as onnxruntime-training's."""
from __future__ import annotations

from .optimizer import Optimizer


class LinearLRScheduler:
    """lr = initial_lr * step / warmup while step < warmup, then initial_lr * (total - step) / (total - warmup),
    where step is the optimizer's step count.

    The arguments mean what their names say.  onnxruntime-training 1.19.2's Python wrapper passes them to C++
    swapped (warmup_step_count acts as the total and vice versa); code written around that bug passes them in
    the other order and should swap them back when moving to onnxtrain.
    """

    def __init__(self, optimizer: Optimizer, warmup_step_count: int, total_step_count: int, initial_lr: float):
        if warmup_step_count < 0 or total_step_count < 0:
            raise ValueError(f"step counts must be >= 0, got warmup_step_count={warmup_step_count}, "
                             f"total_step_count={total_step_count}")
        self._optimizer = optimizer
        self._warmup = int(warmup_step_count)
        self._total = int(total_step_count)
        self._initial_lr = float(initial_lr)
        optimizer._group.initial_learning_rate = self._initial_lr
        self.step()

    def _factor(self, step: int) -> float:
        if step < self._warmup:
            return step / max(1, self._warmup)
        return max(0.0, (self._total - step) / max(1, self._total - self._warmup))

    def step(self) -> None:
        """Set the learning rate for the optimizer's current step count."""
        self._optimizer.set_learning_rate(self._initial_lr * self._factor(self._optimizer._group.step))
