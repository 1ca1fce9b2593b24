"""Run one ONNX node (or a model) on the WebGPU provider and on the CPU kernels, and compare."""
from __future__ import annotations

import numpy as np
from onnx import TensorProto, helper, numpy_helper

from onnxtrain import ir
from onnxtrain.runtime import Session
from onnxtrain.webgpu.session import WebGPUSession

ELEM = {np.dtype(np.float32): TensorProto.FLOAT, np.dtype(np.int64): TensorProto.INT64,
        np.dtype(np.int32): TensorProto.INT32, np.dtype(np.bool_): TensorProto.BOOL}


def node_model(op_type: str, inputs: dict, outputs: list, domain: str = "", opset: int = 17,
               initializers: dict = None, **attrs):
    """A one-node model: ``inputs`` name -> array (fed), ``initializers`` name -> array (constants, known to
    the compiler before the run), ``outputs`` names, ``attrs`` the node's attributes."""
    initializers = initializers or {}
    names = list(inputs) + [n for n in initializers if n not in inputs]
    node = helper.make_node(op_type, [n if n else "" for n in attrs.pop("_input_order", names)], outputs,
                            domain=domain, **attrs)
    graph = helper.make_graph(
        [node], op_type,
        [helper.make_tensor_value_info(n, ELEM[np.asarray(v).dtype], None) for n, v in inputs.items()],
        [helper.make_tensor_value_info(n, TensorProto.UNDEFINED, None) for n in outputs],
        [numpy_helper.from_array(np.asarray(v), n) for n, v in initializers.items()])
    opsets = [helper.make_opsetid("", opset)]
    if domain:
        opsets.append(helper.make_opsetid(domain, 1))
    return ir.load(helper.make_model(graph, opset_imports=opsets, ir_version=8).SerializeToString())


def run_both(model, feeds: list, allow_fallback: bool = False):
    """(gpu outputs, cpu outputs, the GPU session) for ``feeds`` in input order.  Unless ``allow_fallback``,
    every node must have run on the GPU."""
    gpu = WebGPUSession(model)
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
