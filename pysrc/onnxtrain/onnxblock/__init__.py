"""Building training models from blocks, with onnxruntime.training.onnxblock's public names.

Blocks build into a context-local model (``base``, ``empty_base``, or generate_artifacts), never into a
module-global one, so building is re-entrant."""
from __future__ import annotations

import numpy as np

from . import blocks, loss, optim
from .blocks import Block, ForwardBlock
from .building import base, empty_base
from .training_block import TrainingBlock
from ..checkpoint import CheckpointData, read_checkpoint, write_checkpoint
from ..ir import dtypes
from ..ir.model import Tensor

__all__ = ["Block", "ForwardBlock", "TrainingBlock", "base", "blocks", "empty_base", "load_checkpoint_to_model", "loss", "optim",
           "save_checkpoint"]


def save_checkpoint(parameters, path_to_checkpoint, nominal_checkpoint: bool = False):
    """Write (trainable, frozen) tensors as an artifact checkpoint (Tensor objects or (name, array) pairs)."""
    def as_dict(tensors):
        out = {}
        for t in tensors or []:
            name, data = (t.name, t.data) if isinstance(t, Tensor) else t
            out[name] = np.asarray(data)
        return out
    trainable, frozen = parameters
    data = CheckpointData(trainable=as_dict(trainable), frozen=as_dict(frozen), is_nominal=nominal_checkpoint)
    return write_checkpoint(data, path_to_checkpoint, layout="artifact")


def load_checkpoint_to_model(path_to_checkpoint, model) -> None:
    """Overwrite ``model``'s initializers with the checkpoint's parameters of the same names."""
    data = read_checkpoint(path_to_checkpoint)
    values = {**data.trainable, **data.frozen}
    for i, t in enumerate(model.graph.initializers):
        if t.name in values:
            model.graph.initializers[i] = Tensor(t.name, values[t.name].copy(), dtypes.from_numpy(values[t.name].dtype))
