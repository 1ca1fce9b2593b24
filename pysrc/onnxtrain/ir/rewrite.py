"""Node rewrites that more than one layer applies to a graph."""
from __future__ import annotations

import copy

from .model import Node


def inference_batchnorm(node: Node, read: set) -> list:
    """A BatchNormalization with training_mode=0 as onnxruntime allows it, with only its output Y: a copy of
    ``node`` (which stays unchanged), then Identity copies of the unchanged running statistics for those of its
    running-statistics outputs (which ORT 1.19.2's own eval models keep) that are in ``read``."""
    y_only = copy.copy(node)
    y_only.outputs = node.outputs[:1]
    return [y_only] + [Node("Identity", [node.inputs[3 + i]], [name], name=f"{node.name}_{name}_Identity")
                       for i, name in enumerate(node.outputs[1:]) if name and name in read]
