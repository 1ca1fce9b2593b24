"""onnxtrain as an ``onnx.backend.base.Backend``, so that the onnx package's own backend tests run on it.

This module needs the ``onnx`` package (CPython only); nothing else in onnxtrain imports it.

    from onnxtrain import backend
    rep = backend.prepare(onnx_model)      # an onnx ModelProto, bytes or a path
    outputs = rep.run([x])

Values are converted both ways by the graph's declared types.  onnxtrain holds bfloat16, float8 and
4-bit values as bit patterns (one per element).  onnx's test data holds bfloat16 as those same uint16
bit patterns, but float8 and 4-bit values widened, one per element, in the dtype onnx.numpy_helper gives
them (float32 in onnx 1.16).  Fed values are taken either way.  onnx holds strings as ``str``,
onnxtrain as ``bytes``.  Sequences are lists; an empty optional is None.
"""
from __future__ import annotations

import os

import numpy as np
from onnx.backend.base import Backend, BackendRep

from . import ir
from .ir import dtypes
from .ir.model import OptionalType, SequenceType, TensorType
from .runtime import Session

_widened_dtypes: dict = {}


def _widened_dtype(code: int) -> np.dtype:
    """The dtype onnx.numpy_helper.to_array gives a tensor of bit-pattern type ``code``."""
    if code not in _widened_dtypes:
        from onnx import helper, numpy_helper
        _widened_dtypes[code] = numpy_helper.to_array(helper.make_tensor("x", code, [1], [0])).dtype
    return _widened_dtypes[code]


def _to_onnxtrain(value, typ):
    if isinstance(typ, TensorType) and isinstance(value, np.ndarray):
        if typ.elem_type in dtypes.BIT_PATTERN_TYPES:
            return dtypes.to_bits(typ.elem_type, value)
        if typ.elem_type == dtypes.STRING and value.dtype.kind in "OU":
            return np.array([s.encode("utf-8") if isinstance(s, str) else s for s in value.ravel()],
                            dtype=object).reshape(value.shape)
        return value
    if isinstance(typ, SequenceType) and isinstance(value, (list, tuple)):
        return [_to_onnxtrain(v, typ.elem_type) for v in value]
    if isinstance(typ, OptionalType):
        return None if value is None else _to_onnxtrain(value, typ.elem_type)
    return value


def _to_onnx(value, typ):
    if isinstance(typ, OptionalType):
        return None if value is None else _to_onnx(value, typ.elem_type)
    if isinstance(value, list):
        elem = typ.elem_type if isinstance(typ, SequenceType) else None
        return [_to_onnx(v, elem) for v in value]
    if isinstance(value, np.ndarray):
        if isinstance(typ, TensorType) and typ.elem_type in dtypes.BIT_PATTERN_TYPES and typ.elem_type != dtypes.BFLOAT16:
            return dtypes.from_bits(typ.elem_type, value).astype(_widened_dtype(typ.elem_type), copy=False)
        if value.dtype == object:
            return np.array([s.decode("utf-8") if isinstance(s, bytes) else s for s in value.ravel()],
                            dtype=object).reshape(value.shape)
    return value


class OnnxtrainRep(BackendRep):
    """A prepared model.  ``run`` takes a dict by name, or a list: the graph inputs that have no
    initializer, in order (as onnxruntime does), or all graph inputs."""

    def __init__(self, model: ir.Model):
        self.session = Session(model)
        self._inputs = {v.name: v.type for v in model.graph.inputs}
        self._outputs = [v.type for v in model.graph.outputs]
        initialized = {t.name for t in model.graph.initializers}
        self._required = [n for n in self.session.input_names if n not in initialized]

    def run(self, inputs, **kwargs):
        if isinstance(inputs, dict):
            feeds = {k: _to_onnxtrain(v, self._inputs.get(k)) for k, v in inputs.items()}
        else:
            if isinstance(inputs, np.ndarray):
                inputs = [inputs]
            names = self.session.input_names if len(inputs) > len(self._required) else self._required
            if len(inputs) > len(names):
                raise ValueError(f"{len(inputs)} inputs given, the graph has {len(names)} ({names})")
            feeds = {name: _to_onnxtrain(v, self._inputs[name]) for name, v in zip(names, inputs)}
        outputs = self.session.run(feeds)
        return tuple(_to_onnx(v, t) for v, t in zip(outputs, self._outputs))


class OnnxtrainBackend(Backend):
    @classmethod
    def prepare(cls, model, device: str = "CPU", **kwargs) -> OnnxtrainRep:
        if isinstance(model, (str, os.PathLike)):
            return OnnxtrainRep(ir.load(model))
        data = model if isinstance(model, (bytes, bytearray, memoryview)) else model.SerializeToString()
        return OnnxtrainRep(ir.load(bytes(data)))

    @classmethod
    def run_model(cls, model, inputs, device: str = "CPU", **kwargs):
        return cls.prepare(model, device, **kwargs).run(inputs)

    @classmethod
    def run_node(cls, node, inputs, device: str = "CPU", outputs_info=None, **kwargs):
        """Run one NodeProto on numpy inputs (by wrapping it in a one-node model)."""
        from onnx import defs, helper

        graph_inputs = []
        for name, value in zip(node.input, inputs):
            if name:
                arr = np.asarray(value)
                graph_inputs.append(helper.make_tensor_value_info(
                    name, helper.np_dtype_to_tensor_dtype(arr.dtype), arr.shape))
        outputs = [helper.make_empty_tensor_value_info(name) for name in node.output if name]
        graph = helper.make_graph([node], "run_node", graph_inputs, outputs)
        opset = kwargs.get("opset_version", defs.onnx_opset_version())
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid(node.domain, opset)])
        return cls.run_model(model, [v for name, v in zip(node.input, inputs) if name], device)

    @classmethod
    def supports_device(cls, device: str) -> bool:
        return device.upper() == "CPU"


prepare = OnnxtrainBackend.prepare
run_model = OnnxtrainBackend.run_model
run_node = OnnxtrainBackend.run_node
supports_device = OnnxtrainBackend.supports_device
