"""onnxblock's building blocks lay out their parameters as ORT's do, so code that reads or loads a block's
initializers (or a checkpoint made from one) works on both."""
from __future__ import annotations

import numpy as np
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

IN, OUT, BATCH = 5, 3, 4


def linear_head(onnxblock, bias):
    """A ForwardBlock with one Linear."""
    class Head(onnxblock.ForwardBlock):
        def __init__(self):
            super().__init__()
            self.linear = onnxblock.blocks.Linear(IN, OUT, bias=bias, alpha=0.5, beta=2.0)

        def build(self, x):
            return self.linear(x)
    return Head()


def base_model():
    graph = helper.make_graph([], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", IN])], [])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_linear_weight_is_in_by_out_and_gemm_has_no_transpose(training):
    for bias in (True, False):
        head = linear_head(training.onnxblock, bias)
        with training.onnxblock.base(base_model()):
            head("x")
        model = head.to_model_proto()
        weights = {t.name: t for t in model.graph.initializer}
        gemm = [n for n in model.graph.node if n.op_type == "Gemm"]
        assert len(gemm) == 1 and len(gemm[0].input) == 2 + bias
        assert list(weights[gemm[0].input[1]].dims) == [IN, OUT]
        if bias:
            assert list(weights[gemm[0].input[2]].dims) == [OUT]
        attrs = {a.name: helper.get_attribute_value(a) for a in gemm[0].attribute}
        assert attrs.get("transB", 0) == 0 and attrs["alpha"] == 0.5 and attrs["beta"] == 2.0
        x = np.random.default_rng(0).standard_normal((BATCH, IN)).astype(np.float32)
        w = numpy_helper.to_array(weights[gemm[0].input[1]])
        expected = 0.5 * x @ w + (2.0 * numpy_helper.to_array(weights[gemm[0].input[2]]) if bias else 0)
        session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
        np.testing.assert_allclose(session.run(None, {"x": x})[0], expected, rtol=1e-5, atol=1e-6)
