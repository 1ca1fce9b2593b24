"""Run one ONNX node in onnxruntime (the reference) and in onnxtrain's kernel table."""
from __future__ import annotations

import inspect

import numpy as np
import onnx
from onnx import helper

import onnxruntime as ort

from onnxtrain.ops import lookup


def _value_info(name, value):
    if isinstance(value, list):
        elem = helper.np_dtype_to_tensor_dtype(value[0].dtype) if value else onnx.TensorProto.FLOAT
        return helper.make_tensor_sequence_value_info(name, elem, None)
    return helper.make_tensor_value_info(name, helper.np_dtype_to_tensor_dtype(value.dtype), value.shape)


def ort_run(op_type, inputs, attrs=None, *, domain="", opset=17, n_outputs=1, output_shapes=None):
    """Outputs of ``op_type`` on ``inputs`` (None = omitted optional input) in onnxruntime.

    ``output_shapes`` (optional, per output: (elem_type, shape)) is written to the graph's
    outputs for ops whose kernels read static shapes (MaxPoolGrad)."""
    in_names = ["" if v is None else f"x{i}" for i, v in enumerate(inputs)]
    out_names = [f"y{i}" for i in range(n_outputs)]
    node = helper.make_node(op_type, in_names, out_names, domain=domain, **(attrs or {}))
    graph_inputs = [_value_info(n, v) for n, v in zip(in_names, inputs) if v is not None]
    if output_shapes:
        graph_outputs = [helper.make_tensor_value_info(n, t, s) for n, (t, s) in zip(out_names, output_shapes)]
    else:
        graph_outputs = [helper.make_empty_tensor_value_info(n) for n in out_names]
    graph = helper.make_graph([node], "g", graph_inputs, graph_outputs)
    opsets = [helper.make_opsetid("", opset)]
    if domain:
        opsets.append(helper.make_opsetid(domain, 1))
    model = helper.make_model(graph, opset_imports=opsets, ir_version=8 if opset <= 18 else 10)
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    feeds = {n: v for n, v in zip(in_names, inputs) if v is not None}
    return sess.run(None, feeds)


def ours_run(op_type, inputs, attrs=None, *, domain="", opset=17, n_outputs=1, output_shapes=None):
    """Outputs of onnxtrain's kernel for ``op_type``, called as the runtime calls it."""
    fn = lookup(op_type, domain, opset)
    kwargs = dict(attrs or {})
    params = inspect.signature(fn).parameters
    if "_outputs" in params:
        kwargs["_outputs"] = (True,) * n_outputs
    if "_output_shapes" in params:
        kwargs["_output_shapes"] = [list(s) for _, s in output_shapes] if output_shapes else [None] * n_outputs
    out = fn(*inputs, **kwargs)
    if not isinstance(out, tuple):
        out = (out,)
    return list(out[:n_outputs])


def assert_same(op_type, inputs, attrs=None, *, rtol=1e-5, atol=1e-6, **kw):
    """Run both and compare every output (values, shapes and dtypes)."""
    ref = ort_run(op_type, inputs, attrs, **kw)
    got = ours_run(op_type, inputs, attrs, **kw)
    assert len(got) == len(ref)
    for i, (g, r) in enumerate(zip(got, ref)):
        g = np.asarray(g)
        assert g.shape == r.shape, f"{op_type} output {i}: shape {g.shape} != onnxruntime {r.shape}"
        assert g.dtype == r.dtype, f"{op_type} output {i}: dtype {g.dtype} != onnxruntime {r.dtype}"
        if r.dtype.kind in "fc":
            np.testing.assert_allclose(g, r, rtol=rtol, atol=atol, err_msg=f"{op_type} output {i}")
        else:
            np.testing.assert_array_equal(g, r, err_msg=f"{op_type} output {i}")
    return got
