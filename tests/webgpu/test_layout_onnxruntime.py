"""Layout WGSL kernels against onnxruntime itself, where the CPU kernel once differed from it (CPython only:
test_layout.py's cases run inside Pyodide too, where there is no onnxruntime)."""
import numpy as np
import onnxruntime as ort

from gpu_cases import gpu_session, make_model, make_node, node_model, tensor, tensor_info
from onnxtrain import ir
from onnxtrain.ir.dtypes import DataType

rng = np.random.default_rng(0)


def floats(*shape):
    return rng.standard_normal(shape).astype(np.float32)


def i64(*values):
    return np.array(values, dtype=np.int64)


def test_slice_negative_step_start_below_the_axis_as_onnxruntime():
    """starts before the axis with a negative step clamp to 0 (the spec, onnxruntime): one element."""
    x = floats(5)
    init = {"s": i64(-10), "e": i64(-20), "a": i64(0), "st": i64(-1)}
    model = node_model("Slice", {"X": x}, ["Y"], initializers=init)
    got = gpu_session(model).run([x])[0]
    reference = make_model([make_node("Slice", ["X", "s", "e", "a", "st"], ["Y"])], "g",
                           [tensor_info("X", DataType.FLOAT)], [tensor_info("Y", DataType.FLOAT)],
                           [tensor(n, v) for n, v in init.items()])
    want = ort.InferenceSession(ir.to_bytes(reference)).run(None, {"X": x})[0]
    np.testing.assert_array_equal(got, want)
