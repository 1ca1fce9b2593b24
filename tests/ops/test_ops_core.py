"""Forward kernels against onnxruntime, one node at a time (shapes, broadcasting, attributes, opsets)."""
import numpy as np
import pytest

from opref import assert_same, ort_run, ours_run

R = np.random.default_rng(0)


def f32(*shape):
    return R.standard_normal(shape).astype(np.float32)


def i64(*shape, high=5):
    return R.integers(-high, high, shape).astype(np.int64)


CASES = [
    # (id, op, inputs, attrs, opset, n_outputs)
    ("add-broadcast", "Add", [f32(2, 3, 4), f32(4)], {}, 17, 1),
    ("sub-scalar", "Sub", [f32(3, 1), f32()], {}, 17, 1),
    ("mul", "Mul", [f32(2, 3), f32(2, 1)], {}, 17, 1),
    ("div-float", "Div", [f32(5), np.abs(f32(5)) + 0.5], {}, 17, 1),
    ("div-int-negative", "Div", [i64(20, high=50), np.array([3, -3, 7, -7] * 5, np.int64)], {}, 17, 1),
    ("pow-float-exponent", "Pow", [np.abs(f32(6)), np.array([2.0], np.float32)], {}, 17, 1),
    ("pow-int-exponent", "Pow", [f32(6), np.array(3, np.int64)], {}, 17, 1),
    ("sum-3", "Sum", [f32(2, 3), f32(3), f32(2, 1)], {}, 17, 1),
    ("max-2", "Max", [f32(4), f32(4)], {}, 17, 1),
    ("mean-2", "Mean", [f32(4), f32(1)], {}, 17, 1),
    *[(op.lower(), op, [f32(3, 4)], {}, 17, 1) for op in
      ["Neg", "Abs", "Sign", "Exp", "Relu", "Sigmoid", "Tanh", "Floor", "Ceil", "Atan", "Sin", "Cos", "Erf",
       "Softsign", "Softplus", "Identity"]],
    ("sqrt", "Sqrt", [np.abs(f32(3, 4))], {}, 17, 1),
    ("log", "Log", [np.abs(f32(3, 4)) + 0.1], {}, 17, 1),
    ("reciprocal", "Reciprocal", [np.abs(f32(3, 4)) + 0.1], {}, 17, 1),
    ("leakyrelu", "LeakyRelu", [f32(3, 4)], {"alpha": 0.2}, 17, 1),
    ("elu", "Elu", [f32(3, 4)], {"alpha": 0.7}, 17, 1),
    ("selu", "Selu", [f32(3, 4)], {}, 17, 1),
    ("hardsigmoid", "HardSigmoid", [f32(3, 4)], {}, 17, 1),
    ("hardswish", "HardSwish", [4 * f32(3, 4)], {}, 14, 1),
    ("celu", "Celu", [f32(3, 4)], {"alpha": 0.7}, 12, 1),
    ("thresholdedrelu", "ThresholdedRelu", [f32(3, 4)], {"alpha": 0.3}, 17, 1),
    ("prelu", "PRelu", [f32(2, 3, 4), f32(3, 1)], {}, 17, 1),
    ("mish", "Mish", [f32(3, 4)], {}, 18, 1),
    ("gelu", "Gelu", [f32(3, 4)], {}, 20, 1),
    ("gelu-tanh", "Gelu", [f32(3, 4)], {"approximate": "tanh"}, 20, 1),
    ("clip-11", "Clip", [f32(10), np.array(-0.5, np.float32), np.array(0.5, np.float32)], {}, 13, 1),
    ("clip-min-only", "Clip", [f32(10), np.array(-0.5, np.float32)], {}, 13, 1),
    ("clip-6", "Clip", [f32(10)], {"min": -0.2, "max": 0.3}, 6, 1),
    ("where", "Where", [f32(3, 4) > 0, f32(3, 4), f32(4)], {}, 17, 1),
    ("equal-int", "Equal", [i64(6), i64(6)], {}, 17, 1),
    ("less", "Less", [f32(6), f32(6)], {}, 17, 1),
    ("greater-or-equal", "GreaterOrEqual", [f32(6), f32(1)], {}, 17, 1),
    ("not", "Not", [f32(5) > 0], {}, 17, 1),
    ("and", "And", [f32(5) > 0, f32(5) > 0], {}, 17, 1),
    ("cast-float-int", "Cast", [f32(8) * 3], {"to": 7}, 17, 1),
    ("cast-int-float", "Cast", [i64(8)], {"to": 1}, 17, 1),
    ("cast-to-bool", "Cast", [f32(8)], {"to": 9}, 17, 1),
    # reductions
    ("reducesum-13", "ReduceSum", [f32(2, 3, 4), np.array([0], np.int64)], {"keepdims": 0}, 17, 1),
    ("reducesum-13-all", "ReduceSum", [f32(2, 3, 4)], {}, 17, 1),
    ("reducesum-13-noop", "ReduceSum", [f32(2, 3), np.array([], np.int64)], {"noop_with_empty_axes": 1}, 17, 1),
    ("reducesum-11-attr", "ReduceSum", [f32(2, 3, 4)], {"axes": [-1, 0]}, 11, 1),
    ("reducesum-13-columns", "ReduceSum", [f32(64, 10), np.array([0], np.int64)], {"keepdims": 0}, 17, 1),
    ("reducesum-13-columns-kept", "ReduceSum", [f32(9, 3), np.array([-2], np.int64)], {}, 17, 1),
    ("reducesum-11-columns", "ReduceSum", [f32(5, 4)], {"axes": [0]}, 11, 1),
    ("reducemean-all", "ReduceMean", [f32(2, 3, 4)], {"keepdims": 0}, 17, 1),
    ("reducemean-18-input", "ReduceMean", [f32(2, 3, 4), np.array([1], np.int64)], {}, 18, 1),
    ("reducemax", "ReduceMax", [f32(2, 3, 4)], {"axes": [1]}, 17, 1),
    ("reducemin", "ReduceMin", [f32(2, 3, 4)], {"axes": [2], "keepdims": 0}, 17, 1),
    ("reduceprod", "ReduceProd", [f32(2, 3)], {"axes": [1]}, 17, 1),
    ("reducel2", "ReduceL2", [f32(2, 3)], {"axes": [1]}, 17, 1),
    ("reducelogsumexp", "ReduceLogSumExp", [f32(2, 3)], {"axes": [0]}, 17, 1),
    ("argmax", "ArgMax", [f32(3, 5)], {"axis": 1}, 17, 1),
    ("argmin-last", "ArgMin", [np.array([[1, 0, 0, 2]], np.float32)], {"axis": 1, "select_last_index": 1}, 17, 1),
    # shape
    ("shape", "Shape", [f32(2, 3, 4)], {}, 17, 1),
    ("shape-slice", "Shape", [f32(2, 3, 4)], {"start": 1, "end": -1}, 17, 1),
    ("size", "Size", [f32(2, 3, 4)], {}, 17, 1),
    ("reshape-zero-minus1", "Reshape", [f32(2, 3, 4), np.array([0, -1], np.int64)], {}, 17, 1),
    ("flatten-axis2", "Flatten", [f32(2, 3, 4, 5)], {"axis": 2}, 17, 1),
    ("flatten-axis0", "Flatten", [f32(2, 3)], {"axis": 0}, 17, 1),
    ("transpose-default", "Transpose", [f32(2, 3, 4)], {}, 17, 1),
    ("transpose-perm", "Transpose", [f32(2, 3, 4)], {"perm": [1, 0, 2]}, 17, 1),
    ("squeeze-13", "Squeeze", [f32(2, 1, 4, 1), np.array([1, -1], np.int64)], {}, 17, 1),
    ("squeeze-11", "Squeeze", [f32(2, 1, 4)], {"axes": [1]}, 11, 1),
    ("unsqueeze-13", "Unsqueeze", [f32(2, 4), np.array([0, -1], np.int64)], {}, 17, 1),
    ("unsqueeze-11", "Unsqueeze", [f32(2, 4)], {"axes": [1]}, 11, 1),
    ("concat", "Concat", [f32(2, 3), f32(2, 1)], {"axis": -1}, 17, 1),
    ("split-input", "Split", [f32(6, 2), np.array([2, 4], np.int64)], {}, 17, 2),
    ("split-even", "Split", [f32(6, 2)], {"axis": 0}, 17, 3),
    ("split-11-attr", "Split", [f32(6, 2)], {"split": [1, 5]}, 11, 2),
    ("slice-10", "Slice", [f32(5, 6), np.array([1, -4], np.int64), np.array([4, 100], np.int64)], {}, 17, 1),
    ("slice-negative-step", "Slice", [f32(5, 6), np.array([-1], np.int64), np.array([-100], np.int64),
                                      np.array([1], np.int64), np.array([-2], np.int64)], {}, 17, 1),
    ("slice-1-attr", "Slice", [f32(5, 6)], {"starts": [1], "ends": [3], "axes": [1]}, 9, 1),
    ("expand", "Expand", [f32(3, 1), np.array([2, 3, 4], np.int64)], {}, 17, 1),
    ("tile", "Tile", [f32(2, 3), np.array([2, 1], np.int64)], {}, 17, 1),
    ("pad-constant", "Pad", [f32(2, 3), np.array([1, 0, 0, 2], np.int64), np.array(1.5, np.float32)], {}, 17, 1),
    ("pad-reflect", "Pad", [f32(3, 4), np.array([0, 2, 0, 1], np.int64)], {"mode": "reflect"}, 17, 1),
    ("pad-edge-negative", "Pad", [f32(3, 4), np.array([1, -1, 0, 2], np.int64)], {"mode": "edge"}, 17, 1),
    ("pad-2-attr", "Pad", [f32(2, 3)], {"pads": [1, 1, 1, 1], "value": 2.0}, 10, 1),
    # tensor
    ("constantofshape", "ConstantOfShape", [np.array([2, 3], np.int64)], {}, 17, 1),
    ("gather-axis0", "Gather", [f32(5, 3), np.array([[0, -1], [2, 4]], np.int64)], {}, 17, 1),
    ("gather-axis1", "Gather", [f32(2, 5), np.array([3, 1], np.int64)], {"axis": 1}, 17, 1),
    ("gatherelements", "GatherElements", [f32(3, 4), R.integers(0, 3, (2, 4))], {"axis": 0}, 17, 1),
    ("range-float", "Range", [np.array(1.0, np.float32), np.array(4.5, np.float32), np.array(0.5, np.float32)],
     {}, 17, 1),
    ("range-int", "Range", [np.array(10, np.int64), np.array(1, np.int64), np.array(-3, np.int64)], {}, 17, 1),
    ("onehot", "OneHot", [np.array([0, 2, -1], np.int64), np.array(4, np.int64), np.array([0, 1], np.float32)],
     {}, 17, 1),
    ("trilu", "Trilu", [f32(3, 4), np.array(1, np.int64)], {"upper": 0}, 17, 1),
    ("cumsum-reverse-exclusive", "CumSum", [f32(3, 4), np.array(1, np.int64)], {"reverse": 1, "exclusive": 1},
     17, 1),
    ("scatterelements-add", "ScatterElements", [f32(3, 4), np.array([[0, 1, 2, 0]], np.int64), f32(1, 4)],
     {"axis": 0, "reduction": "add"}, 17, 1),
    # nn
    ("gemm-transB", "Gemm", [f32(4, 5), f32(3, 5), f32(3)], {"transB": 1}, 17, 1),
    ("gemm-transA-alpha-beta", "Gemm", [f32(5, 4), f32(5, 3), f32(4, 3)], {"transA": 1, "alpha": 0.5, "beta": 2.0},
     17, 1),
    ("gemm-beta0", "Gemm", [f32(4, 5), f32(5, 3), f32(4, 3)], {"beta": 0.0}, 17, 1),
    ("matmul-batched", "MatMul", [f32(2, 1, 3, 4), f32(5, 4, 6)], {}, 17, 1),
    ("matmul-1d", "MatMul", [f32(4), f32(4, 3)], {}, 17, 1),
    ("softmax-13", "Softmax", [f32(2, 3, 4)], {"axis": 1}, 17, 1),
    ("softmax-11-coerced", "Softmax", [f32(2, 3, 4)], {"axis": 1}, 11, 1),
    ("logsoftmax", "LogSoftmax", [f32(2, 5) * 5], {}, 17, 1),
    ("dropout-inference", "Dropout", [f32(3, 4)], {}, 17, 2),
    ("conv-pad", "Conv", [f32(2, 3, 7, 6), f32(4, 3, 3, 3), f32(4)], {"pads": [1, 1, 1, 1]}, 17, 1),
    ("conv-stride-dilation", "Conv", [f32(1, 2, 9, 9), f32(3, 2, 3, 2)], {"strides": [2, 1], "dilations": [2, 1]},
     17, 1),
    ("conv-groups", "Conv", [f32(2, 4, 5, 5), f32(6, 2, 3, 3)], {"group": 2}, 17, 1),
    ("conv-depthwise-same", "Conv", [f32(1, 3, 6, 6), f32(3, 1, 3, 3)], {"group": 3, "auto_pad": "SAME_UPPER",
                                                                        "strides": [2, 2]}, 17, 1),
    ("conv-1x1", "Conv", [f32(2, 5, 4, 3), f32(7, 5, 1, 1), f32(7)], {}, 17, 1),
    ("conv-1d", "Conv", [f32(2, 3, 10), f32(4, 3, 3)], {"pads": [2, 0]}, 17, 1),
    ("convtranspose", "ConvTranspose", [f32(1, 2, 4, 4), f32(2, 3, 3, 3), f32(3)], {"strides": [2, 2]}, 17, 1),
    ("convtranspose-pads-outpad", "ConvTranspose", [f32(2, 4, 3, 3), f32(4, 1, 3, 3)],
     {"strides": [2, 2], "pads": [1, 1, 1, 1], "output_padding": [1, 1], "group": 2}, 17, 1),
    ("maxpool-indices", "MaxPool", [f32(2, 3, 6, 6)], {"kernel_shape": [2, 2], "strides": [2, 2]}, 17, 2),
    ("maxpool-pad-ceil", "MaxPool", [f32(1, 2, 7, 7)], {"kernel_shape": [3, 3], "strides": [2, 2],
                                                        "pads": [1, 1, 1, 1], "ceil_mode": 1}, 17, 2),
    ("maxpool-dilation", "MaxPool", [f32(1, 1, 8, 8)], {"kernel_shape": [2, 2], "dilations": [2, 2]}, 17, 2),
    ("maxpool-storage-order", "MaxPool", [f32(1, 2, 4, 5)], {"kernel_shape": [2, 2], "storage_order": 1}, 17, 2),
    ("avgpool", "AveragePool", [f32(2, 3, 6, 6)], {"kernel_shape": [3, 3], "strides": [2, 2]}, 17, 1),
    ("avgpool-pads-exclude", "AveragePool", [f32(1, 2, 5, 5)], {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1]},
     17, 1),
    ("avgpool-pads-include-ceil", "AveragePool", [f32(1, 2, 6, 6)],
     {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1], "strides": [2, 2], "count_include_pad": 1, "ceil_mode": 1},
     17, 1),
    ("avgpool-exclude-ceil", "AveragePool", [f32(1, 2, 6, 6)],
     {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1], "strides": [2, 2], "ceil_mode": 1}, 17, 1),
    ("globalavgpool", "GlobalAveragePool", [f32(2, 3, 4, 5)], {}, 17, 1),
    ("batchnorm-inference", "BatchNormalization", [f32(2, 3, 4, 4), f32(3), f32(3), f32(3), np.abs(f32(3)) + 0.5],
     {}, 17, 1),
    ("batchnorm-training", "BatchNormalization", [f32(4, 3, 2, 2), f32(3), f32(3), f32(3), np.abs(f32(3)) + 0.5],
     {"training_mode": 1, "momentum": 0.8}, 17, 3),
    ("resize-nearest-scales", "Resize", [f32(1, 2, 3, 4), None, np.array([1, 1, 2, 1.5], np.float32)], {}, 17, 1),
    ("resize-nearest-asym-floor", "Resize", [f32(1, 1, 4, 4), None, np.array([1, 1, 0.6, 1.7], np.float32)],
     {"coordinate_transformation_mode": "asymmetric", "nearest_mode": "floor"}, 17, 1),
    ("resize-nearest-ceil", "Resize", [f32(1, 1, 5), None, np.array([1, 1, 1.6], np.float32)],
     {"nearest_mode": "ceil"}, 17, 1),
    ("resize-linear-half-pixel", "Resize", [f32(2, 1, 3, 5), None, np.array([1, 1, 2, 0.5], np.float32)],
     {"mode": "linear"}, 17, 1),
    ("resize-linear-sizes-align", "Resize", [f32(1, 2, 4, 3), None, None, np.array([1, 2, 7, 5], np.int64)],
     {"mode": "linear", "coordinate_transformation_mode": "align_corners"}, 17, 1),
    ("resize-linear-pytorch", "Resize", [f32(1, 1, 3, 3), None, None, np.array([1, 1, 6, 1], np.int64)],
     {"mode": "linear", "coordinate_transformation_mode": "pytorch_half_pixel"}, 17, 1),
    ("layernorm", "LayerNormalization", [f32(2, 3, 4), f32(4), f32(4)], {}, 17, 3),
    ("layernorm-axis1", "LayerNormalization", [f32(2, 3, 4), f32(3, 4)], {"axis": 1, "epsilon": 1e-3}, 17, 1),
]


@pytest.mark.parametrize("op, inputs, attrs, opset, n_outputs", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_forward_matches_onnxruntime(op, inputs, attrs, opset, n_outputs):
    assert_same(op, inputs, attrs, opset=opset, n_outputs=n_outputs, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("op, inputs", [("Gelu", [f32(3, 4)]), ("BiasGelu", [f32(3, 4), f32(4)]),
                                        ("FastGelu", [f32(3, 4), f32(4)])], ids=["gelu", "biasgelu", "fastgelu"])
def test_com_microsoft_gelus(op, inputs):
    assert_same(op, inputs, domain="com.microsoft", rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("a, b, attrs", [
    (f32(3, 4), f32(4, 5), {}), (f32(4, 3), f32(4, 5), {"transA": 1, "alpha": 0.5}),
    (f32(2, 3, 4), f32(5, 4), {"transB": 1}), (f32(2, 6, 3, 4), f32(2, 6, 3, 5), {"transA": 1, "alpha": -2.0}),
    (f32(2, 6, 4, 3), f32(2, 6, 5, 4), {"transA": 1, "transB": 1})],
    ids=["plain", "transA-alpha", "stack-transB", "attention-transA", "both"])
def test_fused_matmul(a, b, attrs):
    assert_same("FusedMatMul", [a, b], attrs, domain="com.microsoft", rtol=1e-5, atol=1e-5)


def test_maxpool_grad_scatters_into_the_input_shape():
    x = f32(2, 3, 6, 6)
    _, idx = ort_run("MaxPool", [x], {"kernel_shape": [2, 2], "strides": [2, 2]}, n_outputs=2)
    dy = f32(2, 3, 3, 3)
    shapes = [(1, ["batch", 3, 6, 6])]
    ref = ort_run("MaxPoolGrad", [dy, idx], {"kernel_shape": [2, 2], "strides": [2, 2]}, output_shapes=shapes)
    got = ours_run("MaxPoolGrad", [dy, idx], {"kernel_shape": [2, 2], "strides": [2, 2]}, output_shapes=shapes)
    np.testing.assert_allclose(got[0], ref[0], rtol=1e-6)


@pytest.mark.parametrize("attrs, out_channels, kernel", [
    ({"pads": [1, 1, 1, 1]}, 6, 3), ({"strides": [2, 2], "group": 2}, 6, 3),
    ({"dilations": [2, 2], "pads": [0, 1, 2, 0]}, 6, 3), ({}, 6, 1), ({"group": 4, "pads": [1, 1, 1, 1]}, 4, 3)],
    ids=["pad", "stride-group", "dil", "pointwise", "depthwise"])
def test_conv_grad_matches_onnxruntime(attrs, out_channels, kernel):
    x, w = f32(2, 4, 7, 7), f32(out_channels, 4 // attrs.get("group", 1), kernel, kernel)
    (y,) = ort_run("Conv", [x, w], attrs)
    dy = f32(*y.shape)
    ref = ort_run("ConvGrad", [dy, x, w], attrs, domain="com.microsoft", n_outputs=3)
    got = ours_run("ConvGrad", [dy, x, w], attrs, domain="com.microsoft", n_outputs=3)
    for g, r in zip(got, ref):
        np.testing.assert_allclose(g, r, rtol=1e-4, atol=1e-5)


def test_dropout_training_mask_semantics():
    x = np.ones((200, 100), np.float32)
    y, mask = ours_run("Dropout", [x, np.array(0.25, np.float32), np.array(True)], {"seed": 3}, n_outputs=2)
    assert mask.dtype == bool and abs(1 - mask.mean() - 0.25) < 0.01
    np.testing.assert_allclose(y, x * mask / 0.75, rtol=1e-6)
    y2, mask2 = ours_run("Dropout", [x, np.array(0.25, np.float32), np.array(True)], {"seed": 3}, n_outputs=2)
    np.testing.assert_array_equal(mask, mask2)


@pytest.mark.parametrize("op, inputs, attrs, message", [
    ("Reshape", [f32(2, 3), np.array([4, 2], np.int64)], {}, r"cannot reshape an input of shape \[2, 3\] to \[4, 2\]"),
    ("Gather", [f32(3, 2), np.array([3], np.int64)], {}, "index 3 is out of range for an axis of size 3"),
    ("Conv", [f32(1, 3, 5, 5), f32(2, 2, 3, 3)], {}, r"input \[1, 3, 5, 5\] and weight \[2, 2, 3, 3\]"),
    ("Slice", [f32(3, 4)] + [np.array([v], np.int64) for v in (0, 1, -3)], {}, "Slice: axis -3 is out of range for rank 2"),
    ("Unsqueeze", [f32(3, 4), np.array([3], np.int64)], {}, "Unsqueeze: axis 3 is out of range for rank 3"),
], ids=["reshape", "gather", "conv", "slice-axis", "unsqueeze-axis"])
def test_errors_name_the_shapes(op, inputs, attrs, message):
    with pytest.raises((ValueError, IndexError), match=message):
        ours_run(op, inputs, attrs)
