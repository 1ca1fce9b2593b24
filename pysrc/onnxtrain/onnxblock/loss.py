"""Losses with onnxruntime.training.onnxblock.loss's names and node patterns."""
from __future__ import annotations

import copy

import numpy as np

from ..ir import dtypes
from ..ir.model import ValueInfo
from . import blocks
from .blocks import _constant
from .building import current

REDUCTIONS = {"mean": blocks.ReduceMean, "sum": blocks.ReduceSum, "none": blocks.PassThrough}


def _check_reduction(reduction: str) -> None:
    if reduction not in REDUCTIONS:
        raise RuntimeError(f"Reduction {reduction} not supported.")


def _target_like(output_name: str, target_name: str) -> str:
    if not current().exists(target_name):
        blocks.InputLike(output_name)(target_name)
    return target_name


class MSELoss(blocks.Block):
    """reduce((output - target) ** 2)"""

    def __init__(self, reduction: str = "mean"):
        super().__init__()
        _check_reduction(reduction)
        self._reduce = REDUCTIONS[reduction](keepdims=False)

    def build(self, loss_input_name: str, target_name: str = "target"):
        target = _target_like(loss_input_name, target_name)
        return self._reduce(blocks.Pow(2.0)(blocks.Sub()(loss_input_name, target)))


class L1Loss(blocks.Block):
    """reduce(|output - target|)"""

    def __init__(self, reduction: str = "mean"):
        super().__init__()
        _check_reduction(reduction)
        self._reduce = REDUCTIONS[reduction](keepdims=False)

    def build(self, loss_input_name: str, target_name: str = "target"):
        target = _target_like(loss_input_name, target_name)
        return self._reduce(blocks.Abs()(blocks.Sub()(loss_input_name, target)))


class CrossEntropyLoss(blocks.Block):
    """SoftmaxCrossEntropyLoss over the scores; adds an int64 ``labels`` input (the scores' shape without
    the class axis) unless it exists.  ``weight`` (one per class, any array-like) takes the scores' type."""

    def __init__(self, weight=None, reduction: str = "mean", ignore_index=None):
        super().__init__()
        _check_reduction(reduction)
        self._weight, self._reduction, self._ignore_index = weight, reduction, ignore_index

    def build(self, scores_input_name: str, labels_name: str = "labels"):
        b = current()
        inputs = [scores_input_name, labels_name]
        scores = b.value_info(scores_input_name)
        if self._weight is not None:
            elem = getattr(getattr(scores, "type", None), "elem_type", None)
            dtype = dtypes.to_numpy(elem) if elem in (dtypes.FLOAT, dtypes.DOUBLE, dtypes.FLOAT16) else np.float32
            inputs.append(_constant("celoss.weight", np.asarray(self._weight, dtype)))
        if not b.exists(labels_name):
            if scores is None or scores.type is None or scores.type.shape is None:
                raise ValueError(f"CrossEntropyLoss: the scores '{scores_input_name}' must be a graph output with a "
                                 f"known shape to create the '{labels_name}' input")
            labels_type = copy.deepcopy(scores.type)
            labels_type.elem_type = 7
            labels_type.shape = labels_type.shape[:1] + labels_type.shape[2:]  # [N, C, d1..dk] -> [N, d1..dk]
            b.model.graph.inputs.append(ValueInfo(labels_name, labels_type))
            b.builder.names.add(labels_name)
        loss = b.name("loss")
        log_prob = b.name("log_prob")
        attrs = {"reduction": self._reduction}
        if self._ignore_index is not None:
            attrs["ignore_index"] = int(self._ignore_index)
        b.builder.op("SoftmaxCrossEntropyLoss", inputs, n_outputs=2, outputs=[loss, log_prob], **attrs)
        b.model.graph.nodes[-1].name = b.name("SoftmaxCrossEntropyLoss")
        return loss


class BCEWithLogitsLoss(blocks.Block):
    """-(pos_weight * target * log(sigmoid(x)) + (1 - target) * log(1 - sigmoid(x))) * weight, reduced."""

    def __init__(self, weight=None, reduction: str = "mean", pos_weight=None):
        super().__init__()
        _check_reduction(reduction)
        self._weight, self._pos_weight = weight, pos_weight
        self._reduce = REDUCTIONS[reduction](keepdims=False)

    def build(self, loss_input_name: str, target_name: str = "target"):
        pos_weight = None if self._pos_weight is None else _constant(
            "bceloss.pos_weight", np.asarray(self._pos_weight, np.float32))
        weight = None if self._weight is None else _constant("bceloss.weight", np.asarray(self._weight, np.float32))
        one = np.array([1.0], np.float32)
        ones = _constant("bceloss.sub_ones", one), _constant("bceloss.sub_ones", one)
        target = _target_like(loss_input_name, target_name)
        sigmoid = blocks.Sigmoid()(loss_input_name)
        first = blocks.Mul()(blocks.Log()(sigmoid), target)
        if pos_weight is not None:
            first = blocks.Mul()(first, pos_weight)
        second = blocks.Mul()(blocks.Log()(blocks.Sub()(ones[0], sigmoid)), blocks.Sub()(ones[1], target))
        loss = blocks.Neg()(blocks.Add()(first, second))
        if weight is not None:
            loss = blocks.Mul()(weight, loss)
        return self._reduce(loss)


