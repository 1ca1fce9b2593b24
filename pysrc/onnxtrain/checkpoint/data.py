"""What a checkpoint holds."""
from __future__ import annotations

from dataclasses import dataclass, field

from ..ir.ort_names import OPTIMIZER_GROUP


class CheckpointError(ValueError):
    """A checkpoint cannot be read or written; the message names the file and what is wrong."""


@dataclass
class OptimizerGroup:
    name: str = OPTIMIZER_GROUP
    step: int = 0
    initial_learning_rate: float = 0.001
    states: dict = field(default_factory=dict)  # param name -> {momentum name (ir.ort_names.MOMENTUMS): array}


@dataclass
class CheckpointData:
    trainable: dict = field(default_factory=dict)   # name -> array, in file order
    frozen: dict = field(default_factory=dict)
    optimizer_groups: list = field(default_factory=list)
    properties: dict = field(default_factory=dict)  # name -> int | float | str
    is_nominal: bool = False                        # arrays are empty placeholders that only carry the dtype
    has_external_data: bool = False
