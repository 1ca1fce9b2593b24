"""Run one ONNX node (or a model) on the WebGPU provider and on the CPU kernels, and compare.

Models are built on onnxtrain's own IR (no ``onnx`` package), so that the kernel tests also run inside Pyodide,
on the page's navigator.gpu (tests/browser/test_webgpu_page.py).  ``make_node`` infers attribute types from
Python values as ``onnx.helper.make_node`` does, and ``make_model`` writes the model out and reads it back, so
that the sessions see what they would load from a file."""
from __future__ import annotations

import numbers

import numpy as np

from onnxtrain import ir
from onnxtrain.ir import Attribute, AttrType, Graph, Model, Node, SequenceType, Tensor, TensorType, ValueInfo
from onnxtrain.ir.dtypes import DataType
from onnxtrain.runtime import Session
from onnxtrain.webgpu import WebGPUProvider, open_provider

UNDEFINED = 0
ELEM = {np.dtype(np.float32): DataType.FLOAT, np.dtype(np.int64): DataType.INT64,
        np.dtype(np.int32): DataType.INT32, np.dtype(np.bool_): DataType.BOOL}


def tensor(name: str, value) -> Tensor:
    """An initializer (numpy_helper.from_array)."""
    value = np.asarray(value)
    return Tensor(name, value, ir.dtypes.from_numpy(value.dtype))


def attribute(name: str, value) -> Attribute:
    """An attribute whose type follows from ``value``, as onnx.helper.make_attribute infers it: an integer (bool
    too) INT, a real FLOAT, a str STRING, an array TENSOR, a list of integers INTS, of reals FLOATS, of strings
    STRINGS."""
    if isinstance(value, (str, bytes)):
        return Attribute(name, AttrType.STRING, value.encode() if isinstance(value, str) else value)
    if isinstance(value, np.ndarray):
        return Attribute(name, AttrType.TENSOR, tensor("", value))
    if isinstance(value, numbers.Integral):
        return Attribute(name, AttrType.INT, int(value))
    if isinstance(value, numbers.Real):
        return Attribute(name, AttrType.FLOAT, float(value))
    values = list(value)
    if not values:
        raise ValueError(f"attribute {name}: cannot infer the type of an empty list")
    if all(isinstance(v, numbers.Integral) for v in values):
        return Attribute(name, AttrType.INTS, [int(v) for v in values])
    if all(isinstance(v, numbers.Real) for v in values):
        return Attribute(name, AttrType.FLOATS, [float(v) for v in values])
    if all(isinstance(v, (str, bytes)) for v in values):
        return Attribute(name, AttrType.STRINGS, [v.encode() if isinstance(v, str) else v for v in values])
    raise ValueError(f"attribute {name}: cannot infer the type of {value!r}")


def make_node(op_type: str, inputs, outputs, domain: str = "", **attrs) -> Node:
    """A node; ``attrs`` in name order, those None left out (as onnx.helper.make_node)."""
    return Node(op_type, list(inputs), list(outputs), domain=domain,
                attributes={k: attribute(k, v) for k, v in sorted(attrs.items()) if v is not None})


def tensor_info(name: str, elem: int = UNDEFINED, shape=None) -> ValueInfo:
    """A tensor's ValueInfo: ``shape`` None (rank unknown) or a list of sizes and symbolic names."""
    return ValueInfo(name, TensorType(elem, None if shape is None else list(shape)))


def sequence_info(name: str, elem: int = DataType.FLOAT) -> ValueInfo:
    """A sequence of tensors' ValueInfo."""
    return ValueInfo(name, SequenceType(TensorType(elem, None)))


def make_model(nodes, name: str, inputs, outputs, initializers=(), opsets=None):
    """A model of ``nodes``, its ``inputs`` and ``outputs`` ValueInfos, ``initializers`` Tensors, ``opsets`` {domain:
    version} (default opset 17), written to bytes and loaded back."""
    graph = Graph(name=name, nodes=list(nodes), inputs=list(inputs), outputs=list(outputs),
                  initializers=list(initializers))
    model = Model(graph=graph, ir_version=8, opset_imports=dict(opsets or {"": 17}))
    return ir.load(ir.to_bytes(model))


def node_model(op_type: str, inputs: dict, outputs: list, domain: str = "", opset: int = 17,
               initializers: dict = None, **attrs):
    """A one-node model: ``inputs`` name -> array (fed), ``initializers`` name -> array (constants, known to
    the compiler before the run), ``outputs`` names, ``attrs`` the node's attributes."""
    initializers = initializers or {}
    names = list(inputs) + [n for n in initializers if n not in inputs]
    node = make_node(op_type, [n if n else "" for n in attrs.pop("_input_order", names)], outputs,
                     domain=domain, **attrs)
    opsets = {"": opset}
    if domain:
        opsets[domain] = 1
    return make_model([node], op_type, [tensor_info(n, ELEM[np.asarray(v).dtype]) for n, v in inputs.items()],
                      [tensor_info(n) for n in outputs], [tensor(n, v) for n, v in initializers.items()], opsets)


def gpu_session(model, device=None) -> Session:
    """A runtime Session on the WebGPU provider: the process's, or one over ``device``."""
    return Session(model, open_provider() if device is None else WebGPUProvider(device))


def run_both(model, feeds: list, allow_fallback: bool = False):
    """(gpu outputs, cpu outputs, the GPU session) for ``feeds`` in input order.  Unless ``allow_fallback``,
    every node must have run on the GPU."""
    gpu = gpu_session(model)
    got = gpu.run([np.array(f, copy=True) for f in feeds])
    want = Session(model).run([np.array(f, copy=True) for f in feeds])
    if not allow_fallback:
        assert gpu.fallbacks == [], gpu.fallbacks
    return got, want, gpu


def assert_close(got, want, rtol=1e-5, atol=1e-6) -> None:
    assert len(got) == len(want)
    for g, w in zip(got, want):
        w = np.asarray(w)
        assert g.shape == w.shape, (g.shape, w.shape)
        assert g.dtype == w.dtype, (g.dtype, w.dtype)
        if w.dtype.kind == "f":
            np.testing.assert_allclose(g, w, rtol=rtol, atol=atol)
        else:
            np.testing.assert_array_equal(g, w)


def check_node(op_type: str, inputs: dict, outputs: list = ("Y",), domain: str = "", opset: int = 17,
               initializers: dict = None, rtol=1e-5, atol=1e-6, **attrs):
    """The node on the GPU equals the node on the CPU kernels, with no fallback; returns the GPU session."""
    model = node_model(op_type, inputs, list(outputs), domain, opset, initializers, **attrs)
    got, want, gpu = run_both(model, list(inputs.values()))
    assert_close(got, want, rtol, atol)
    return gpu
