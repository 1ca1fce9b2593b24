"""One side's run: the loss of each step and the trainable parameters after the steps that were compared."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass
class Trajectory:
    losses: list = field(default_factory=list)  # per step, the first training output's first value
    parameters: dict = field(default_factory=dict)  # step (1-based) -> flat float32 trainable parameters
    error: str | None = None  # why the run stopped early (after len(losses) steps), if it did


@dataclass
class Layout:
    """The trainable parameters in the order of getContiguousParameters: names and sizes."""
    names: list
    sizes: list

    def split(self, flat: np.ndarray) -> dict:
        out, offset = {}, 0
        for name, size in zip(self.names, self.sizes):
            out[name] = flat[offset:offset + size]
            offset += size
        return out

    @property
    def total(self) -> int:
        return sum(self.sizes)
