"""Optimizer models with onnxruntime.training.onnxblock.optim's names and ORT's optimizer-model contract."""
from __future__ import annotations

from ..ir import ort_names
from ..ir.dtypes import DataType
from ..ir.model import SequenceType, TensorType, ValueInfo
from . import blocks
from .building import current


def _sequence(name: str, elem_type: int) -> ValueInfo:
    return ValueInfo(name, SequenceType(TensorType(elem_type, None)))


def _op(op_type: str, inputs: list, token: str, **attrs) -> str:
    b = current()
    out = b.name(token)
    b.builder.op(op_type, inputs, outputs=[out], domain=ort_names.MS_DOMAIN, **attrs)
    b.model.graph.nodes[-1].name = b.name(op_type)
    b.model.opset_imports.setdefault(ort_names.MS_DOMAIN, 1)
    return out


class ClipGradNorm(blocks.Block):
    def __init__(self, max_norm: float):
        super().__init__()
        self._max_norm = max_norm

    def build(self, gradients_name: str):
        out = _op("InplaceClipGradNorm", [gradients_name], "clip_grad_norm_output", max_norm=float(self._max_norm))
        elem = next(v for v in current().model.graph.inputs if v.name == gradients_name).type.elem_type
        current().model.graph.value_info.append(_sequence(out, elem.elem_type))
        return out


class AdamWOptimizer(blocks.Block):
    def __init__(self, bias_correction=True, betas=(0.9, 0.999), eps=1e-6, weight_decay=0.0):
        super().__init__()
        self._attrs = {"alpha": float(betas[0]), "beta": float(betas[1]), "epsilon": float(eps),
                       "weight_decay": float(weight_decay), "correct_bias": int(bias_correction), "adam_mode": 1}

    def build(self, learning_rate, step, params, gradients, first_order_moments, second_order_moments):
        return _op(ort_names.ADAMW, [learning_rate, step, params, gradients, first_order_moments, second_order_moments],
                   "adamw.updated_flag", **self._attrs)


class SGDOptimizer(blocks.Block):
    def build(self, learning_rate, params, gradients):
        return _op(ort_names.SGD, [learning_rate, params, gradients], "update_completed")


class _Optimizer(blocks.ForwardBlock):
    """Builds the optimizer model: ORT's inputs for ``algorithm`` (learning_rate, step, params, gradients and
    the moments) and its bool[1] update flag as the output."""

    algorithm = ""

    def __init__(self, clip_grad=None):
        super().__init__()
        self._clip_grad = clip_grad

    def build(self, parameters):
        trainable, _ = parameters
        if not trainable:
            raise ValueError("the optimizer needs at least one trainable parameter")
        elem = trainable[0].data_type
        graph = current().model.graph
        scalars = {ort_names.LEARNING_RATE: TensorType(DataType.FLOAT, [1]),
                   ort_names.STEP: TensorType(DataType.INT64, [1])}
        graph.inputs += [ValueInfo(n, scalars[n]) if n in scalars else _sequence(n, elem)
                         for n in ort_names.OPTIMIZER_INPUTS[self.algorithm]]
        current().builder.names.update(v.name for v in graph.inputs)
        gradients = self._clip_grad(ort_names.GRADIENTS) if self._clip_grad is not None else ort_names.GRADIENTS
        flag = self._update(gradients)
        graph.outputs.append(ValueInfo(flag, TensorType(DataType.BOOL, [1])))
        return flag


class AdamW(_Optimizer):
    algorithm = ort_names.ADAMW

    def __init__(self, bias_correction=True, betas=(0.9, 0.999), eps=1e-6, weight_decay=0.0, clip_grad=None):
        super().__init__(clip_grad)
        self._adamw = AdamWOptimizer(bias_correction, betas, eps, weight_decay)

    def _update(self, gradients):
        return self._adamw(ort_names.LEARNING_RATE, ort_names.STEP, ort_names.PARAMS, gradients,
                           ort_names.FIRST_ORDER_MOMENTS, ort_names.SECOND_ORDER_MOMENTS)


class SGD(_Optimizer):
    algorithm = ort_names.SGD

    def __init__(self, clip_grad=None):
        super().__init__(clip_grad)
        self._sgd = SGDOptimizer()

    def _update(self, gradients):
        return self._sgd(ort_names.LEARNING_RATE, ort_names.PARAMS, gradients)
