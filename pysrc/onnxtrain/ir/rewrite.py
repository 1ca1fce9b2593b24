"""Node and graph rewrites that more than one layer applies."""
from __future__ import annotations

import copy

import numpy as np

from .dtypes import DataType, from_bits
from .model import Attribute, AttrType, Model, Node, Tensor

FLOATS = (DataType.FLOAT16, DataType.BFLOAT16, DataType.DOUBLE)


def inference_batchnorm(node: Node, read: set) -> list:
    """A BatchNormalization with training_mode=0 as onnxruntime allows it, with only its output Y: a copy of
    ``node`` (which stays unchanged), then Identity copies of the unchanged running statistics for those of its
    running-statistics outputs (which ORT 1.19.2's own eval models keep) that are in ``read``."""
    y_only = copy.copy(node)
    y_only.outputs = node.outputs[:1]
    return [y_only] + [Node("Identity", [node.inputs[3 + i]], [name], name=f"{node.name}_{name}_Identity")
                       for i, name in enumerate(node.outputs[1:]) if name and name in read]


def fold_casts(model: Model) -> Model:
    """``model`` with each Cast to float32 of a float16 (bfloat16, double) initializer replaced by a float32
    initializer of the Cast's output name: the weights are converted once, not at every run."""
    g = model.graph
    inits = g.initializer_map()
    readers = {}
    for node in g.nodes:
        for name in node.inputs:
            readers[name] = readers.get(name, 0) + 1
    folded, drop, nodes = [], set(), []
    for node in g.nodes:
        source = inits.get(node.inputs[0]) if node.op_type == "Cast" and node.domain in ("", "ai.onnx") \
            and node.inputs else None
        if source is not None and source.data_type in FLOATS and node.attr("to") == DataType.FLOAT:
            data = from_bits(source.data_type, source.data) if source.data_type == DataType.BFLOAT16 \
                else source.data
            folded.append(Tensor(node.outputs[0], np.asarray(data, np.float32), DataType.FLOAT))
            readers[source.name] -= 1
            if readers[source.name] == 0:
                drop.add(source.name)
        else:
            nodes.append(node)
    if not folded:
        return model
    out = copy.copy(model)
    out.graph = copy.copy(g)
    out.graph.nodes = nodes
    out.graph.initializers = [t for t in g.initializers if t.name not in drop] + folded
    return out


def float16_where_exact(model: Model, min_size: int = 16) -> Model:
    """A copy of ``model`` whose float32 initializers of at least ``min_size`` values that float16 holds exactly
    are stored as float16 under ``<name>.float16``, each followed by a Cast to float32 of the old name: half the
    bytes, the same values."""
    g = model.graph
    casts, initializers = [], []
    for t in g.initializers:
        data = t.data
        if t.data_type == DataType.FLOAT and data.size >= min_size and np.array_equal(
                data.astype(np.float16).astype(np.float32), data):
            half = f"{t.name}.float16"
            initializers.append(Tensor(half, data.astype(np.float16), DataType.FLOAT16))
            casts.append(Node("Cast", [half], [t.name], name=f"{t.name}.cast",
                              attributes={"to": Attribute("to", AttrType.INT, DataType.FLOAT)}))
        else:
            initializers.append(t)
    out = copy.copy(model)
    out.graph = copy.copy(g)
    out.graph.nodes = casts + list(g.nodes)
    out.graph.initializers = initializers
    return out
