"""Convolution and pooling WGSL kernels against the CPU kernels (themselves checked against onnxruntime)."""
import numpy as np
import pytest

from gpu_cases import ELEM, assert_close, check_node, make_model, make_node, node_model, run_both, tensor_info
from onnxtrain.ir.dtypes import DataType
from onnxtrain.runtime import Session

IN_PYODIDE = True
rng = np.random.default_rng(0)
MS = "com.microsoft"
# ConvGrad's dW and dB are sums over N * OH * OW products in another order than the CPU's BLAS; with terms of
# size ~1 the float32 rounding of ~100 of them is ~1e-5 absolute where they cancel.
GRAD_TOL = dict(rtol=1e-5, atol=2e-5)
# A convolution adds up to 75 products of terms ~1 (up to 10 in sum) in another order than the CPU's BLAS.
CONV_TOL = dict(rtol=1e-5, atol=1e-5)


def _model(op, inputs: dict, node_outputs: list, domain="", shapes=None, **attrs):
    """A one-node model whose node may leave outputs out (""), its outputs of float32 ``shapes`` {name: shape}
    where given."""
    node = make_node(op, list(inputs), node_outputs, domain=domain, **attrs)
    opsets = {"": 11 if op == "MaxPoolGrad" else 17}
    if domain:
        opsets[domain] = 1
    return make_model(
        [node], op, [tensor_info(n, ELEM[v.dtype]) for n, v in inputs.items()],
        [tensor_info(n, DataType.FLOAT, shapes[n]) if n in (shapes or {}) else tensor_info(n)
         for n in node_outputs if n], opsets=opsets)


def floats(*shape):
    return rng.standard_normal(shape).astype(np.float32)


CONVS = [  # x shape, w shape, attributes
    ((2, 3, 7, 6), (5, 3, 3, 3), {}),
    ((2, 4, 9, 8), (10, 4, 3, 3), dict(pads=[1, 2, 0, 1], strides=[2, 1])),
    ((1, 3, 8, 7), (9, 3, 5, 5), dict(auto_pad="SAME_UPPER", strides=[2, 2])),
    ((2, 3, 6, 9), (4, 3, 3, 3), dict(auto_pad="SAME_LOWER")),
    ((2, 3, 9, 9), (8, 3, 3, 3), dict(auto_pad="VALID", dilations=[2, 2])),
    ((2, 6, 7, 7), (70, 6, 1, 1), {}),
    ((2, 4, 6, 5), (20, 2, 3, 3), dict(group=2, pads=[1, 1, 1, 1])),
    ((2, 4, 6, 5), (6, 2, 3, 3), dict(group=2, strides=[1, 2])),
    ((2, 6, 7, 8), (6, 1, 3, 3), dict(group=6, pads=[1, 1, 1, 1])),
    ((2, 5, 9, 8), (5, 1, 5, 5), dict(group=5, pads=[2, 2, 2, 2], strides=[2, 2])),
    ((2, 3, 7, 7), (6, 1, 3, 3), dict(group=3, auto_pad="SAME_UPPER", strides=[2, 2])),
    ((2, 3, 11), (4, 3, 3), dict(pads=[1, 2], strides=[2])),
]


@pytest.mark.parametrize("xs, ws, attrs", CONVS)
def test_conv(xs, ws, attrs):
    bias = {"B": floats(ws[0])} if len(attrs) % 2 == 0 else {}
    check_node("Conv", {"X": floats(*xs), "W": floats(*ws), **bias}, **CONV_TOL, **attrs)


@pytest.mark.parametrize("xs, ws, attrs", CONVS)
def test_conv_grad(xs, ws, attrs):
    x, w = floats(*xs), floats(*ws)
    y = node_model("Conv", {"X": x, "W": w}, ["Y"], **attrs)
    dy = floats(*Session(y).run([x, w])[0].shape)
    check_node("ConvGrad", {"dY": dy, "X": x, "W": w}, ["dX", "dW", "dB"], domain=MS, **GRAD_TOL, **attrs)


def test_conv_grad_large_weight_gradient_splits():
    """Enough pixels for split K on a GEMM-sized weight gradient, and each output alone.  dW adds 800 products
    of terms ~1 (sums ~30) in another order than the CPU: atol 1e-4."""
    x, w, dy = floats(2, 16, 20, 20), floats(24, 16, 3, 3), floats(2, 24, 20, 20)
    attrs = dict(pads=[1, 1, 1, 1])
    check_node("ConvGrad", {"dY": dy, "X": x, "W": w}, ["dX", "dW", "dB"], domain=MS, rtol=1e-5, atol=1e-4,
               **attrs)
    for outputs in (["", "dW", ""], ["dX"], ["", "", "dB"]):
        model = _model("ConvGrad", {"dY": dy, "X": x, "W": w}, outputs, domain=MS, **attrs)
        got, want, _ = run_both(model, [dy, x, w])
        assert_close(got, want, rtol=1e-5, atol=1e-4)


def test_conv_grad_is_deterministic():
    x = floats(2, 16, 12, 12)
    for ws, group in (((24, 8, 3, 3), 2), ((16, 1, 3, 3), 16)):
        w = floats(*ws)
        dy = floats(2, ws[0], 12, 12)
        model = node_model("ConvGrad", {"dY": dy, "X": x, "W": w}, ["dX", "dW", "dB"], domain=MS, group=group,
                           pads=[1, 1, 1, 1])
        first, _, _ = run_both(model, [dy, x, w])
        second, _, _ = run_both(model, [dy, x, w])
        for a, b in zip(first, second):
            assert a.tobytes() == b.tobytes()


TRANSPOSES = [
    ((2, 3, 5, 4), (3, 4, 3, 3), {}),
    ((2, 4, 4, 5), (4, 3, 3, 3), dict(strides=[2, 2], pads=[1, 0, 1, 1], output_padding=[1, 0])),
    ((1, 4, 4, 4), (4, 5, 3, 2), dict(group=2, strides=[2, 1], dilations=[2, 1])),
    ((2, 3, 4, 4), (3, 9, 3, 3), dict(strides=[2, 2], output_shape=[9, 8])),
    ((2, 3, 4, 4), (3, 9, 3, 3), dict(strides=[2, 2], output_shape=[10, 9])),   # one beyond the full output
    ((2, 3, 4, 5), (3, 2, 3, 3), dict(strides=[2, 2], auto_pad="SAME_UPPER")),
    # autodiff's AveragePool gradient: every channel as a batch item, a kernel of ones, ceil_mode's overhang
    ((6, 1, 3, 3), (1, 1, 2, 2), dict(strides=[2, 2], pads=[0, 0, 1, 0], output_padding=[1, 0])),
    ((2, 3, 6), (3, 10, 3), dict(strides=[2], pads=[1, 0])),
]


@pytest.mark.parametrize("xs, ws, attrs", TRANSPOSES)
def test_conv_transpose(xs, ws, attrs):
    bias = {"B": floats(ws[1] * attrs.get("group", 1))} if len(attrs) % 2 == 0 else {}
    check_node("ConvTranspose", {"X": floats(*xs), "W": floats(*ws), **bias}, **CONV_TOL, **attrs)


POOLS = [
    ((2, 3, 7, 6), dict(kernel_shape=[3, 3])),
    ((2, 3, 8, 9), dict(kernel_shape=[2, 2], strides=[2, 2])),
    ((1, 4, 9, 7), dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 0])),
    ((2, 3, 7, 8), dict(kernel_shape=[3, 2], strides=[2, 2], ceil_mode=1)),
    ((2, 3, 9, 9), dict(kernel_shape=[3, 3], dilations=[2, 2], pads=[1, 2, 2, 1])),
    ((2, 2, 7, 5), dict(kernel_shape=[3, 3], strides=[2, 2], auto_pad="SAME_UPPER")),
    ((2, 2, 7, 5), dict(kernel_shape=[4, 3], strides=[1, 2], auto_pad="SAME_LOWER")),
    ((2, 3, 10), dict(kernel_shape=[3], strides=[2], pads=[1, 1])),
]


@pytest.mark.parametrize("xs, attrs", POOLS)
def test_max_pool(xs, attrs):
    check_node("MaxPool", {"X": floats(*xs)}, **attrs)
    check_node("MaxPool", {"X": floats(*xs)}, ["Y", "I"], **attrs)


def test_max_pool_storage_order_ties_and_nan():
    x = np.round(floats(2, 3, 6, 7)).astype(np.float32)   # many equal values: the first one wins
    check_node("MaxPool", {"X": x}, ["Y", "I"], kernel_shape=[3, 3], strides=[1, 2], storage_order=1)
    check_node("MaxPool", {"X": x}, ["Y", "I"], kernel_shape=[2, 2], pads=[1, 1, 1, 1])
    x[0, 1, 2, 3] = x[1, 2, 4, 4] = x[1, 2, 4, 5] = np.nan
    check_node("MaxPool", {"X": x}, ["Y", "I"], kernel_shape=[3, 3], strides=[1, 2])
    check_node("MaxPool", {"X": x}, kernel_shape=[2, 2], pads=[1, 1, 1, 1])


@pytest.mark.parametrize("xs, attrs", POOLS)
def test_average_pool(xs, attrs):
    x = floats(*xs)
    check_node("AveragePool", {"X": x}, **attrs)
    check_node("AveragePool", {"X": x}, count_include_pad=1, **attrs)


def test_global_pools():
    for shape in ((2, 3, 5, 7), (3, 4, 17), (1, 2, 30, 20)):
        x = floats(*shape)
        check_node("GlobalAveragePool", {"X": x})
        check_node("GlobalMaxPool", {"X": x})
    x[0, 1, 3] = np.nan
    check_node("GlobalMaxPool", {"X": x})


def _max_pool_grad(xs, attrs):
    x = np.round(floats(*xs) * 2).astype(np.float32)    # ties: the first wins
    y, indices = Session(node_model("MaxPool", {"X": x}, ["Y", "I"], **attrs)).run([x])
    dy = floats(*y.shape)
    model = _model("MaxPoolGrad", {"dY": dy, "I": indices}, ["dX"], shapes={"dX": xs}, **attrs)
    return model, [dy, indices]


@pytest.mark.parametrize("xs, attrs", POOLS[:6])
def test_max_pool_grad(xs, attrs):
    model, feeds = _max_pool_grad(xs, attrs)
    got, want, _ = run_both(model, feeds)
    assert_close(got, want)


def test_fallbacks():
    model, feeds = _max_pool_grad((2, 3, 6, 7), dict(kernel_shape=[3, 3], storage_order=1))
    got, want, gpu = run_both(model, feeds, allow_fallback=True)
    assert any("storage_order 0" in f for f in gpu.fallbacks), gpu.fallbacks
    assert_close(got, want)

    x = floats(1, 2, 4, 4, 4)
    model = node_model("Conv", {"X": x, "W": floats(3, 2, 2, 2, 2)}, ["Y"])
    got, want, gpu = run_both(model, [x, floats(3, 2, 2, 2, 2)], allow_fallback=True)
    assert any("two spatial axes" in f for f in gpu.fallbacks), gpu.fallbacks
    np.testing.assert_allclose(got[0], want[0], rtol=1e-5, atol=1e-5)
