"""Building blocks with onnxruntime.training.onnxblock's names: a Block's build() adds nodes to the model
being built and returns the names of its outputs."""
from __future__ import annotations

import copy

import numpy as np

from ..ir import dtypes
from ..ir.model import Tensor, ValueInfo
from ..ir.ort_names import MS_DOMAIN
from .building import current


class Block:
    """Subclass and implement ``build(self, *input_names)``; call the block to build it."""

    @property
    def base(self):
        """The model being built."""
        return current().model

    def build(self, *args, **kwargs):
        raise NotImplementedError(f"{type(self).__name__} must implement build()")

    def __call__(self, *args, **kwargs):
        return self.build(*args, **kwargs)


class ForwardBlock(Block):
    """A block that builds a whole model (ORT's base class for optimizers)."""


def _node(op_type: str, inputs: list, token: str, domain: str = "", **attrs) -> str:
    b = current()
    out = b.name(token)
    b.builder.scope = ""
    node_name = b.name(op_type)
    b.builder.op(op_type, inputs, outputs=[out], domain=domain, **attrs)
    b.model.graph.nodes[-1].name = node_name
    return out


def _constant(token: str, value) -> str:
    b = current()
    name = b.name(token)
    value = np.asarray(value)
    b.model.graph.initializers.append(Tensor(name, value, dtypes.from_numpy(value.dtype)))
    return name


class _BinaryOp(Block):
    op_type = ""

    def build(self, input_name1, input_name2):
        return _node(self.op_type, [input_name1, input_name2], f"{self.op_type.lower()}_output")


class Add(_BinaryOp):
    op_type = "Add"


class Sub(_BinaryOp):
    op_type = "Sub"


class Mul(_BinaryOp):
    op_type = "Mul"


class Div(_BinaryOp):
    op_type = "Div"


class Pow(Block):
    def __init__(self, exponent):
        super().__init__()
        self._exponent = exponent

    def build(self, pow_input_name):
        exponent = _constant("pow_exponent", np.array([self._exponent], np.float32))
        return _node("Pow", [pow_input_name, exponent], "pow_output")


class _UnaryOp(Block):
    op_type = ""

    def __init__(self, **attributes):
        super().__init__()
        self._attributes = attributes

    def build(self, input_name):
        return _node(self.op_type, [input_name], f"{self.op_type.lower()}_output", **self._attributes)


class ReduceMean(_UnaryOp):
    op_type = "ReduceMean"

    def __init__(self, keepdims=True):
        super().__init__(keepdims=int(keepdims))


class ReduceSum(_UnaryOp):
    op_type = "ReduceSum"

    def __init__(self, keepdims=True):
        super().__init__(keepdims=int(keepdims))


class Sigmoid(_UnaryOp):
    op_type = "Sigmoid"


class Log(_UnaryOp):
    op_type = "Log"


class Neg(_UnaryOp):
    op_type = "Neg"


class Abs(_UnaryOp):
    op_type = "Abs"


class Cast(_UnaryOp):
    op_type = "Cast"

    def __init__(self, to):
        super().__init__(to=int(to))


class Constant(Block):
    """A float [1] initializer."""

    def __init__(self, value_float):
        super().__init__()
        self._value = value_float

    def build(self):
        return _constant("constant", np.array([self._value], np.float32))


class Clip(Block):
    def __init__(self, clip_min=None, clip_max=None):
        super().__init__()
        self._min, self._max = clip_min, clip_max

    def build(self, clip_input_name):
        lo = "" if self._min is None else _constant("clip.min", np.array(self._min, np.float32))
        hi = "" if self._max is None else _constant("clip.max", np.array(self._max, np.float32))
        return _node("Clip", [clip_input_name, lo, hi], "clip_output")


class SequenceConstruct(Block):
    def build(self, *sequence_input_names):
        return _node("SequenceConstruct", list(sequence_input_names), "sequenceconstruct_output")


class ReduceAllL2(Block):
    def build(self, *reduce_node_input_names):
        return _node("ReduceAllL2", list(reduce_node_input_names), "reducealll2_output", domain=MS_DOMAIN)


class PassThrough(Block):
    def __init__(self, **_ignored):
        super().__init__()

    def build(self, *input_names):
        return input_names[0] if len(input_names) == 1 else input_names


class InputLike(Block):
    """A new graph input with the type and shape of the graph input or output ``like``."""

    def __init__(self, like: str):
        super().__init__()
        self._like = like

    def build(self, input_name=None):
        b = current()
        template = b.value_info(self._like)
        if template is None:
            raise LookupError(f"Could not find input or output with name {self._like}")
        name = input_name or b.name("input")
        b.builder.names.add(name)
        b.model.graph.inputs.append(ValueInfo(name, copy.deepcopy(template.type)))
        return name


class Linear(Block):
    def __init__(self, in_features, out_features, bias=True, alpha=1.0, beta=1.0):
        super().__init__()
        self._in, self._out, self._bias, self._alpha, self._beta = in_features, out_features, bias, alpha, beta

    def build(self, linear_input_name):
        rng = np.random.default_rng()
        bound = 1 / np.sqrt(self._in)
        weight = _constant("linear.weight", rng.uniform(-bound, bound, (self._out, self._in)).astype(np.float32))
        inputs = [linear_input_name, weight]
        if self._bias:
            inputs.append(_constant("linear.bias", rng.uniform(-bound, bound, self._out).astype(np.float32)))
        return _node("Gemm", inputs, "linear_output", alpha=self._alpha, beta=self._beta, transB=1)
