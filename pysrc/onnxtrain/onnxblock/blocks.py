"""Building blocks with onnxruntime.training.onnxblock's names: a Block's build() adds nodes to the model
being built and returns the names of its outputs."""
from __future__ import annotations

import copy

import numpy as np

from ..ir import dtypes
from ..ir.model import Attribute, AttrType, Node, Tensor, ValueInfo
from ..ir.ort_names import MS_DOMAIN
from ..runtime.shapes import infer_types
from . import protos
from .building import _CURRENT, current, shallow_copy


class Block:
    """Subclass and implement ``build(self, *input_names)``; call the block to build it."""

    @property
    def base(self):
        """The model being built: an ``onnx.ModelProto`` where it was given as one (see building.py), else
        the IR; None before the block was first called."""
        b = _CURRENT.get() or getattr(self, "_onnxblock_building", None)
        return None if b is None else b.handed_out()

    def build(self, *args, **kwargs):
        raise NotImplementedError(f"{type(self).__name__} must implement build()")

    def __call__(self, *args, **kwargs):
        return self._build(current(), args, kwargs)

    def _build(self, b, args, kwargs):
        """``build``, run as onnxtrain's own code where the class's ``build`` is onnxtrain's."""
        self._onnxblock_building = b
        if getattr(type(self).build, "__module__", "").startswith(__package__ + "."):
            with b.own_code():
                return self.build(*args, **kwargs)
        return self.build(*args, **kwargs)


def _graph_output(b, name: str) -> ValueInfo:
    """``name`` as a graph output: its declared ValueInfo (a graph output, or value_info), else inferred."""
    graph = b.model.graph
    declared = {v.name: v for v in graph.value_info}
    declared.update({v.name: v for v in graph.outputs})
    if name in declared and declared[name].type is not None:
        return copy.deepcopy(declared[name])
    try:
        return ValueInfo(name, infer_types(b.model, [name])[name])
    except Exception as e:
        raise LookupError(f"The provided name {name} is not a graph value info or a graph output.") from e


class ForwardBlock(Block):
    """A block whose ``build`` returns the name(s) of the model's outputs: calling it makes them the graph's
    outputs, and ``to_model_proto()`` gives the model built (ORT's base class of the optimizers)."""

    def to_model_proto(self):
        """The forward model: an ``onnx.ModelProto`` where the base was given as one, else the IR."""
        model = getattr(self, "_model", None)
        if model is None:
            raise RuntimeError("Please build the forward models first before trying to retrieve it.")
        if getattr(self, "_protos", False) and not protos.is_proto(model):
            self._model = model = protos.model_to_proto(model)
        return model

    def __call__(self, *args, **kwargs):
        b = current()
        output = self._build(b, args, kwargs)
        with b.own_code():
            names = [output] if isinstance(output, str) else list(output)
            b.model.graph.outputs = [_graph_output(b, n) for n in names]
            self._model, self._protos = shallow_copy(b.model), b.protos
        return output


def _node(op_type: str, inputs: list, token: str, domain: str = "", node_token: str = "", **attrs) -> str:
    b = current()
    out = b.name(token)
    b.builder.scope = ""
    node_name = b.name(node_token or op_type)
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
    token = ""  # the output's name token; ``<op type>_output`` unless set

    def __init__(self, **attributes):
        super().__init__()
        self._attributes = attributes

    def build(self, input_name):
        return _node(self.op_type, [input_name], self.token or f"{self.op_type.lower()}_output", **self._attributes)


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
    token = "cast.output"

    def __init__(self, to):
        super().__init__(to=int(to))


class Constant(Block):
    """A float [1] initializer."""

    def __init__(self, value_float):
        super().__init__()
        self._value = value_float

    def build(self):
        return _constant("initializer", np.array([self._value], np.float32))


class Clip(Block):
    def __init__(self, clip_min=None, clip_max=None):
        super().__init__()
        self._min, self._max = clip_min, clip_max

    def build(self, clip_input_name):
        lo = "" if self._min is None else _constant("clip_min", np.array(self._min, np.float32))
        hi = "" if self._max is None else _constant("clip_max", np.array(self._max, np.float32))
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


class LabelEncoder(Block):
    """ai.onnx.ml LabelEncoder: maps keys to values (the model must import the ai.onnx.ml opset)."""

    def __init__(self, default_float: float = 0.0, default_int64: int = -1, default_string: str = "_Unused",
                 keys_floats=None, keys_int64s=None, keys_strings=None, values_floats=None, values_int64s=None,
                 values_strings=None):
        super().__init__()
        given = {"keys_floats": keys_floats, "keys_int64s": keys_int64s, "keys_strings": keys_strings,
                 "values_floats": values_floats, "values_int64s": values_int64s, "values_strings": values_strings}
        self._attributes = [Attribute("default_float", AttrType.FLOAT, float(default_float)),
                            Attribute("default_int64", AttrType.INT, int(default_int64)),
                            Attribute("default_string", AttrType.STRING, default_string.encode())]
        for name, values in given.items():
            if values is not None:
                kind = name.rsplit("_", 1)[1]
                self._attributes.append(
                    Attribute(name, _LIST_ATTRIBUTES[kind][0], [_LIST_ATTRIBUTES[kind][1](v) for v in values]))

    def build(self, label_encoder_input_name: str):
        b = current()
        out = b.name("label_encoder.output")
        b.model.graph.nodes.append(Node("LabelEncoder", [label_encoder_input_name], [out],
                                        name=b.name("LabelEncoder"), domain="ai.onnx.ml",
                                        attributes={a.name: copy.copy(a) for a in self._attributes}))
        return out


_LIST_ATTRIBUTES = {"floats": (AttrType.FLOATS, float), "int64s": (AttrType.INTS, int),
                    "strings": (AttrType.STRINGS, lambda v: v.encode() if isinstance(v, str) else bytes(v))}


class Linear(Block):
    def __init__(self, in_features, out_features, bias=True, alpha=1.0, beta=1.0):
        super().__init__()
        self._in, self._out, self._bias, self._alpha, self._beta = in_features, out_features, bias, alpha, beta

    def build(self, linear_input_name):
        # ORT's layout and initialization: weight [in, out] from a standard normal, a Gemm without transB
        rng = np.random.default_rng()
        weight = _constant("linear.weight", rng.standard_normal((self._in, self._out)).astype(np.float32))
        inputs = [linear_input_name, weight]
        if self._bias:
            inputs.append(_constant("linear.bias", rng.standard_normal(self._out).astype(np.float32)))
        return _node("Gemm", inputs, "linear.output", node_token="linear", alpha=self._alpha, beta=self._beta)
