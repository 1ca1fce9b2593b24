"""Building training models from blocks, with onnxruntime.training.onnxblock's public names.

Blocks build into a context-local model (``base``, ``empty_base``, or generate_artifacts), never into a
module-global one, so building is re-entrant."""
from __future__ import annotations

import contextlib

import numpy as np

from . import blocks, loss, optim, protos
from .blocks import Block, ForwardBlock
from .building import base, empty_base
from .training_block import TrainingBlock
from ..checkpoint import CheckpointData, read_checkpoint, write_checkpoint
from ..ir import dtypes, to_bytes
from ..ir.model import Tensor

__all__ = ["Block", "ForwardBlock", "TrainingBlock", "base", "blocks", "custom_op_library", "empty_base",
           "load_checkpoint_to_model", "loss", "optim", "save_checkpoint"]


def save_checkpoint(parameters, path_to_checkpoint, nominal_checkpoint: bool = False):
    """Write (trainable, frozen) tensors as an artifact checkpoint: IR Tensors, ``onnx.TensorProto``s (what
    ``TrainingBlock.parameters()`` gives) or (name, array) pairs.  With ``path_to_checkpoint=None``, return its
    bytes."""
    if parameters is None:
        raise RuntimeError("No checkpoint parameters provided.")

    def as_dict(tensors):
        out = {}
        for t in tensors or []:
            if protos.is_proto(t):
                t = protos.tensor_from_proto(t)
            name, data = (t.name, t.data) if isinstance(t, Tensor) else t
            out[name] = np.asarray(data)
        return out
    trainable, frozen = parameters
    data = CheckpointData(trainable=as_dict(trainable), frozen=as_dict(frozen), is_nominal=nominal_checkpoint)
    return write_checkpoint(data, path_to_checkpoint, layout="artifact")


def load_checkpoint_to_model(path_to_checkpoint, model) -> None:
    """Overwrite ``model``'s initializers, in place, with the checkpoint's parameters of the same names;
    ``model`` is an ``onnx.ModelProto`` or an IR Model."""
    data = read_checkpoint(path_to_checkpoint)
    values = {**data.trainable, **data.frozen}
    ir_model = protos.model_from_proto(model) if protos.is_proto(model) else model
    for i, t in enumerate(ir_model.graph.initializers):
        if t.name in values:
            ir_model.graph.initializers[i] = Tensor(t.name, values[t.name].copy(), dtypes.from_numpy(values[t.name].dtype))
    if ir_model is not model:
        model.ParseFromString(to_bytes(ir_model))


@contextlib.contextmanager
def custom_op_library(custom_op_library_path):
    """ORT's registration of a custom op library for gradient building: onnxtrain cannot load one."""
    raise NotImplementedError("onnxtrain cannot load custom op libraries")
    yield  # pragma: no cover
