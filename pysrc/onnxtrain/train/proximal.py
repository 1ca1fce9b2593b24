"""FedProx's proximal term as a hook of the Trainer, run after each optimizer step."""
from __future__ import annotations

import numpy as np

from ..api import _internal as api
from .settings import proximal_mu


class ProximalTerm:
    """The proximal term (mu/2)*||w - w_start||^2 as a proximal step: after each optimizer step every trainable
    parameter becomes w - rate * mu * (w - w_start) (float32), where w_start are the parameters the run started
    from (``start``: when the data was set, the hook was added, or a checkpoint was loaded)."""

    def __init__(self, mu: float):
        self.mu = proximal_mu(mu)
        self.anchor = None

    def start(self, trainer) -> None:
        self.anchor = {n: a.copy() for n, a in api.trainable_arrays(trainer.module).items()}

    def after_step(self, trainer) -> None:
        if trainer.optimizer is None:
            return
        scale = np.float32(trainer.optimizer.get_learning_rate() * self.mu)
        for name, w in api.trainable_arrays(trainer.module, writing=True).items():
            w -= scale * (w - self.anchor[name])
