"""The SIMD kernels (web/kernels, wasm) against numpy, inside Pyodide.

tests/browser/test_in_pyodide.py runs this module in the page's worker, where init has loaded the kernel
module; CPython cannot load wasm, so tests/conftest.py leaves this folder out of the CPython run.  The numpy
code of each op kernel is the reference: simd.use(False) gives it in the same worker.
"""
import contextlib

import numpy as np
import pytest

from onnxtrain.ops import conv, lookup, simd

EPS32 = np.finfo(np.float32).eps


@pytest.fixture(autouse=True)
def kernels():
    assert simd.available(), "the page's worker did not load the SIMD kernel module"
    yield
    simd.use(True)


@contextlib.contextmanager
def numpy_only():
    simd.use(False)
    try:
        yield
    finally:
        simd.use(True)


class _Spy:
    """The kernel library, noting the name of every kernel looked up on it."""

    def __init__(self, lib):
        self.lib, self.names = lib, set()

    def __getattr__(self, name):
        self.names.add(name)
        return getattr(self.lib, name)


@contextlib.contextmanager
def running(*kernels):
    """The block must call each of these C kernels: a comparison with numpy_only() is then a comparison."""
    lib = simd._lib
    spy = simd._lib = _Spy(lib)
    try:
        yield
    finally:
        simd._lib = lib
    assert set(kernels) <= spy.names, f"not called: {sorted(set(kernels) - spy.names)}"


def rand(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def assert_product_close(out, a, b, c=None, alpha=1.0, beta=0.0):
    """out == alpha a@b + beta c, within float32 summation error: k * eps * (|alpha| |a|@|b| + |beta c|) per cell."""
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    expected = alpha * np.matmul(a64, b64) + (beta * c.astype(np.float64) if c is not None and beta else 0.0)
    bound = abs(alpha) * np.matmul(np.abs(a64), np.abs(b64)) + (abs(beta) * np.abs(c) if c is not None else 0)
    k = a.shape[-1]
    assert out.dtype == np.float32 and out.shape == expected.shape and out.flags.c_contiguous
    assert np.all(np.abs(out - expected) <= 2 * (k + 2) * EPS32 * bound + 1e-30), np.abs(out - expected).max()


SHAPES = [(1, 1, 1), (5, 7, 3), (4, 8, 8), (61, 53, 37), (64, 784, 128), (3, 300, 9), (33, 257, 70), (9, 2, 1001),
          (8, 784, 9), (7, 1001, 3), (32, 1568, 10)]   # the last three: few outputs from long rows


@pytest.mark.parametrize("m, k, n", SHAPES)
@pytest.mark.parametrize("trans_a, trans_b", [(0, 0), (1, 0), (0, 1), (1, 1)])
def test_gemm_matches_numpy_for_every_transpose(m, k, n, trans_a, trans_b):
    a = rand(k, m).T if trans_a else rand(m, k)
    b = rand(n, k, seed=1).T if trans_b else rand(k, n, seed=1)
    assert_product_close(simd.gemm(a, b), a, b)


@pytest.mark.parametrize("alpha, beta", [(1.0, 1.0), (0.5, 2.0), (-1.5, 0.0), (0.0, 1.0)])
def test_gemm_alpha_beta_and_a_broadcast_c(alpha, beta):
    a, b = rand(13, 17), rand(17, 11, seed=1)
    for c in (rand(11, seed=2), rand(13, 11, seed=2), rand(13, 1, seed=2)):
        assert_product_close(simd.gemm(a, b, c, alpha, beta), a, b, np.broadcast_to(c, (13, 11)), alpha, beta)


def test_gemm_beta_zero_ignores_what_c_holds():
    a, b, c = rand(6, 5), rand(5, 4, seed=1), np.full((6, 4), np.nan, np.float32)
    out = simd.gemm(a, b, c, 1.0, 0.0)
    assert not np.isnan(out).any()
    np.testing.assert_allclose(out, lookup("Gemm")(a, b, c, beta=0.0), rtol=1e-6, atol=1e-6)


LAYOUTS = {
    "strided rows and columns": lambda: (rand(10, 14)[::2, ::2], rand(7, 6, seed=1)[:, ::2]),
    "negative strides": lambda: (rand(5, 7)[::-1], rand(7, 3, seed=1)[:, ::-1]),
    "stack @ matrix": lambda: (rand(2, 4, 5, 7), rand(7, 3, seed=1)),
    "broadcast stacks": lambda: (rand(1, 3, 5, 7), rand(2, 1, 7, 4, seed=1)),
    "transposed stacks": lambda: (rand(2, 3, 7, 5).swapaxes(-1, -2), rand(2, 3, 4, 7, seed=1).swapaxes(-1, -2)),
    "attention-like": lambda: (rand(2, 64, 4, 32).transpose(0, 2, 1, 3), rand(2, 64, 4, 32, seed=1).transpose(0, 2, 3, 1)),
    "a column": lambda: (rand(1, 7), rand(7, 1, seed=1)),
    "empty k": lambda: (rand(3, 0), rand(0, 4, seed=1)),
    "empty m": lambda: (rand(0, 5), rand(5, 4, seed=1)),
}


@pytest.mark.parametrize("layout", LAYOUTS)
def test_gemm_takes_numpy_views_without_copies(layout):
    a, b = LAYOUTS[layout]()
    out = simd.gemm(a, b)
    assert out is not None
    if a.shape[-1] == 0:
        np.testing.assert_array_equal(out, np.zeros(out.shape, np.float32))
    else:
        assert_product_close(out, a, b)


def test_gemm_leaves_other_dtypes_and_vectors_to_numpy():
    assert simd.gemm(rand(3, 4).astype(np.float64), rand(4, 2).astype(np.float64)) is None
    assert simd.gemm(np.arange(6).reshape(2, 3), np.arange(6).reshape(3, 2)) is None
    assert simd.gemm(rand(4), rand(4, 2)) is None
    assert simd.gemm(rand(3, 4), rand(5, 2)) is None


def test_nan_and_inf_pass_through_gemm_as_in_numpy():
    a, b = rand(9, 11), rand(11, 10, seed=1)
    a[2, 3] = np.nan
    b[4, 7] = np.inf
    b[5, 1] = -np.inf
    expected = np.matmul(a.astype(np.float64), b.astype(np.float64))
    out = simd.gemm(a, b)
    np.testing.assert_array_equal(np.isnan(out), np.isnan(expected))
    np.testing.assert_array_equal(np.isinf(out), np.isinf(expected))
    finite = np.isfinite(expected)
    np.testing.assert_allclose(out[finite], expected[finite], rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(np.sign(out[np.isinf(out)]), np.sign(expected[np.isinf(expected)]))


def optimizer_state(sizes, seed):
    rng = np.random.default_rng(seed)
    make = lambda: [rng.standard_normal(s).astype(np.float32) for s in sizes]  # noqa: E731
    weights, grads, m1 = make(), make(), make()
    m2 = [np.abs(x) for x in make()]
    return weights, grads, m1, m2


SIZES = [(1,), (3,), (17,), (128, 784), (10, 128), (7, 5, 3)]


@pytest.mark.parametrize("adam_mode, correct_bias, weight_decay", [(0, 1, 0.01), (1, 1, 0.1), (1, 0, 0.0)])
def test_adamw_is_bit_equal_to_the_numpy_kernel(adam_mode, correct_bias, weight_decay):
    adamw = lookup("AdamWOptimizer", "com.microsoft")
    runs = []
    for fast in (True, False):
        weights, grads, m1, m2 = optimizer_state(SIZES, seed=3)
        grads[2][1] = np.nan
        with running("adamw_f32") if fast else numpy_only():
            for step in range(1, 4):
                adamw(np.array(1e-3, np.float32), np.array(step, np.int64), weights, grads, m1, m2,
                      adam_mode=adam_mode, correct_bias=correct_bias, weight_decay=weight_decay)
        runs.append(weights + m1 + m2)
    assert np.isnan(runs[0][2][1])
    for fast, plain in zip(*runs):
        np.testing.assert_array_equal(fast, plain)


def test_sgd_is_bit_equal_to_the_numpy_kernel():
    sgd = lookup("SGDOptimizerV2", "com.microsoft")
    runs = []
    for fast in (True, False):
        weights, grads, _, _ = optimizer_state(SIZES, seed=4)
        grads[1][0] = np.inf
        with running("sgd_f32") if fast else numpy_only():
            for _ in range(3):
                sgd(np.array(0.05, np.float32), weights, grads)
        runs.append(weights)
    for fast, plain in zip(*runs):
        np.testing.assert_array_equal(fast, plain)


def test_optimizers_leave_non_contiguous_weights_to_numpy():
    w = rand(6, 4)[:, ::2]
    assert not simd.sgd([w], [rand(6, 2)], -0.1)
    assert not simd.adamw([w], [rand(6, 2)], [rand(6, 2)], [rand(6, 2)], 0, [0.0] * 11)


WINDOWS = [  # input shape, kernel, pads (top, left, bottom, right), strides, dilations
    ((2, 3, 9, 9), (3, 3), (1, 1, 1, 1), (1, 1), (1, 1)),
    ((1, 1, 28, 28), (3, 3), (1, 1, 1, 1), (1, 1), (1, 1)),
    ((2, 4, 11, 7), (3, 2), (0, 1, 2, 0), (2, 3), (1, 1)),
    ((3, 2, 12, 13), (3, 3), (2, 2, 2, 2), (2, 2), (2, 2)),
    ((1, 5, 6, 5), (1, 1), (0, 0, 0, 0), (1, 1), (1, 1)),
    ((2, 2, 5, 5), (5, 5), (4, 4, 4, 4), (3, 1), (1, 1)),
]


def geometry(shape, kernel, pads, strides, dilations):
    p, out, s, d = conv.conv_geometry(shape[2:], kernel, strides, pads, dilations, "NOTSET")
    return list(kernel), p, out, s, d


@pytest.mark.parametrize("window", WINDOWS)
def test_im2col_and_col2im_equal_numpys(window):
    shape, *rest = window
    kernel, pads, out, strides, dilations = geometry(shape, *rest)
    x = rand(*shape)
    x[0, 0, 1, 2] = np.nan
    cols = simd.im2col(x, kernel, pads, out, strides, dilations)
    with numpy_only():
        expected = conv.im2col(x, kernel, pads, out, strides, dilations)
    np.testing.assert_array_equal(cols, expected)
    dcols = rand(*expected.shape, seed=1)
    back = simd.col2im(dcols, shape, kernel, pads, out, strides, dilations)
    with numpy_only():
        expected_back = conv.col2im(dcols, shape, kernel, pads, out, strides, dilations)
    np.testing.assert_allclose(back, expected_back, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("window", WINDOWS)
def test_maxpool_and_its_gradient_equal_numpys(window):
    shape, kernel, pads, strides, dilations = window
    x = np.round(rand(*shape) * 2) / 2        # ties: the first maximum in window order wins, as np.argmax
    x[0, 0, 0, 0] = np.nan
    x[-1, -1, -1, -1] = -np.inf
    attrs = dict(kernel_shape=list(kernel), pads=list(pads), strides=list(strides), dilations=list(dilations))
    k, p, out, s, d = geometry(shape, kernel, pads, strides, dilations)
    y, where = simd.maxpool(x, k, p, out, s, d, indices=True)
    with numpy_only():
        expected_y, expected_where = lookup("MaxPool")(x, **attrs, _outputs=(True, True))
    np.testing.assert_array_equal(y, expected_y)
    np.testing.assert_array_equal(where, expected_where)
    dy = rand(*y.shape, seed=1)
    dx = simd.maxpool_grad(dy, where, shape)
    with numpy_only():
        expected_dx = lookup("MaxPoolGrad")(dy, expected_where, **attrs, _output_shapes=(list(shape),))
    np.testing.assert_allclose(dx, expected_dx, rtol=1e-6, atol=1e-6)


def test_maxpool_grad_refuses_indices_outside_the_input():
    assert simd.maxpool_grad(rand(1, 1, 2, 2), np.array([[[[0, 1], [2, 99]]]], np.int64), (1, 1, 3, 3)) is None


def test_conv_gemm_and_pool_kernels_agree_with_and_without_simd():
    x, w = rand(3, 4, 9, 9), rand(6, 2, 3, 3, seed=1)
    attrs = dict(group=2, pads=[1, 1, 1, 1], strides=[2, 2])
    dy = rand(3, 6, 5, 5, seed=2)
    gemm_args = (rand(7, 5), rand(3, 7, seed=3), rand(3, seed=4))
    pool = dict(kernel_shape=[2, 2], strides=[2, 2])
    runs = []
    for fast in (True, False):
        with running("im2col_f32", "col2im_f32", "gemm_f32", "maxpool_f32", "maxpool_grad_f32") if fast \
                else numpy_only():
            y, where = lookup("MaxPool")(x, **pool, _outputs=(True, True))
            runs.append([lookup("Conv")(x, w, **attrs), *lookup("ConvGrad", "com.microsoft")(dy, x, w, **attrs),
                         lookup("Gemm")(*gemm_args, alpha=0.5, transA=1, transB=1),
                         lookup("MatMul")(rand(2, 3, 5, 7), rand(7, 4, seed=5)), y, where,
                         lookup("MaxPoolGrad")(y, where, **pool, _output_shapes=([3, 4, 9, 9],))])
    for fast, plain in zip(*runs):
        np.testing.assert_allclose(fast, plain, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("shape", [(1,), (7,), (64, 128), (3, 8, 28, 28)])
def test_relu_and_its_gradient_are_bit_equal_to_numpy(shape):
    x, dy = rand(*shape), rand(*shape, seed=1)
    specials = np.array([np.nan, -0.0, 0.0, np.inf, -np.inf, -1.0, 1.0], np.float32)
    flat = x.reshape(-1)
    flat[:min(flat.size, specials.size)] = specials[:flat.size]
    relu, relu_grad = lookup("Relu"), lookup("ReluGrad", "com.microsoft")
    with running("relu_f32", "relu_grad_f32"):
        fast = [relu(x), relu_grad(dy, x), relu(x.T), relu_grad(dy.T, x.T)]
    with numpy_only():
        plain = [relu(x), relu_grad(dy, x), relu(x.T), relu_grad(dy.T, x.T)]
    for f, p in zip(fast, plain):
        assert f.dtype == p.dtype and f.shape == p.shape
        np.testing.assert_array_equal(f.view(np.int32), p.view(np.int32))   # bits: NaN and the sign of zero too


CLIPS = [(np.float32(0), np.float32(6)), (np.float32(0), None), (None, np.float32(6)),
         (np.float32(-0.5), np.float32(0.5)), (np.float32(3), np.float32(-3)),
         (np.float32(-np.inf), np.float32(np.inf)), (np.float64(0.1), np.float64(0.7))]


@pytest.mark.parametrize("bounds", CLIPS)
@pytest.mark.parametrize("shape", [(1,), (7,), (3, 8, 28, 28)])
def test_clip_is_bit_equal_to_numpy(shape, bounds):
    x = 4 * rand(*shape)
    specials = np.array([np.nan, -0.0, 0.0, np.inf, -np.inf, 6.0, -6.0, 0.1, np.float32(0.1)], np.float32)
    flat = x.reshape(-1)
    flat[:min(flat.size, specials.size)] = specials[:flat.size]
    lo, hi = bounds
    clip11, clip1 = lookup("Clip", opset=11), lookup("Clip", opset=6)
    attributes = {k: float(v) for k, v in (("min", lo), ("max", hi)) if v is not None}
    with running("clip_f32"):
        fast = [clip11(x, lo, hi), clip11(x.T, lo, hi), clip1(x, **attributes)]
    with numpy_only():
        plain = [clip11(x, lo, hi), clip11(x.T, lo, hi), clip1(x, **attributes)]
    for f, p in zip(fast, plain):
        assert f.dtype == p.dtype == np.float32 and f.shape == p.shape
        np.testing.assert_array_equal(f.view(np.int32), p.view(np.int32))   # bits: NaN and the sign of zero too


def float32_range(lo: float, hi: float, step: int = 1) -> np.ndarray:
    """Every ``step``-th float32 from lo to hi (both positive), by their bits."""
    bits = np.arange(np.float32(lo).view(np.int32), np.float32(hi).view(np.int32) + 1, step, dtype=np.int32)
    return bits.view(np.float32)


def test_erf_kernel_is_math_erf_correctly_rounded():
    from onnxtrain.ops import elementwise
    special = np.array([0.0, -0.0, np.nan, np.inf, -np.inf, 1e-45, -1e-38, 1e-20, 1.0, -1.0, 1.5, 3.5, 4.0,
                        np.nextafter(np.float32(4), np.float32(0)), 1e30, -3.4e38], np.float32)
    edges = np.concatenate([float32_range(0.999, 1.001), float32_range(3.999, 4.0)])  # where the fits change
    for x in [special, rand(3, 5000) * 3, edges, -edges, float32_range(1e-30, 6.0, 4099)]:
        with running("erf_f32"):
            fast = elementwise.erf(x)
        with numpy_only():
            exact = elementwise.erf(x)
        assert fast.dtype == exact.dtype == np.float32 and fast.shape == exact.shape
        np.testing.assert_array_equal(fast.view(np.int32), exact.view(np.int32))   # bits: the sign of zero too
    assert simd.erf(special.astype(np.float64)) is None


def test_elementwise_kernels_keep_a_scalar_a_scalar():
    x = np.array(-7.5, np.float32)
    with running("clip_f32", "relu_f32", "sigmoid_f32"):
        out = [simd.clip(x, np.float32(-1), np.float32(1)), simd.relu(x), simd.sigmoid(x)]
    assert [(y.shape, float(y)) for y in out[:2]] == [((), -1.0), ((), 0.0)] and out[2].shape == ()


def test_clip_leaves_one_bound_nan_bounds_and_other_types_to_numpy():
    x = rand(2, 5)
    assert simd.clip(x, np.float32(0), None) is None and simd.clip(x, None, np.float32(6)) is None
    assert simd.clip(x, np.float32(np.nan), np.float32(1)) is None
    assert simd.clip(x.astype(np.float64), 0.0, 1.0) is None and simd.clip(x, np.zeros(2, np.float32), 1.0) is None


def assert_summation_close(out, exact, magnitude, terms):
    """|out - exact| <= 2 * (terms + 2) * eps * magnitude, the error bound of a float32 sum of `terms` products
    (exact: the float64 result; magnitude: the same computation on absolute values)."""
    assert out.dtype == np.float32 and out.shape == exact.shape
    assert np.all(np.abs(out - exact) <= 2 * (terms + 2) * EPS32 * magnitude + 1e-30), np.abs(out - exact).max()


@pytest.mark.parametrize("window", WINDOWS)
@pytest.mark.parametrize("bias", [False, True])
def test_depthwise_conv_and_its_gradients_match_float64(window, bias):
    shape, kernel, pads, strides, dilations = window
    c = shape[1]
    x, w, dy_seed = rand(*shape), rand(c, 1, *kernel, seed=1), 2
    b = rand(c, seed=3) if bias else None
    attrs = dict(group=c, kernel_shape=list(kernel), pads=list(pads), strides=list(strides),
                 dilations=list(dilations))
    conv_op, grad_op = lookup("Conv"), lookup("ConvGrad", "com.microsoft")
    y = conv_op(x, w, *([b] if bias else []), **attrs)
    assert simd.depthwise(x, w, b, *geometry(shape, kernel, pads, strides, dilations)[1:]) is not None
    dy = rand(*y.shape, seed=dy_seed)
    dx, dw, db = grad_op(dy, x, w, **attrs)
    with numpy_only():
        f64 = lambda *arrays: [a.astype(np.float64) for a in arrays]  # noqa: E731
        y64 = conv_op(*f64(x, w, *([b] if bias else [])), **attrs)
        ymag = conv_op(*f64(np.abs(x), np.abs(w), *([np.abs(b)] if bias else [])), **attrs)
        dx64, dw64, _ = grad_op(*f64(dy, x, w), **attrs)
        dxmag, dwmag, _ = grad_op(*f64(np.abs(dy), np.abs(x), np.abs(w)), **attrs)
    taps = kernel[0] * kernel[1]
    assert_summation_close(y, y64, ymag, taps + 1)
    assert_summation_close(dx, dx64, dxmag, taps)
    assert_summation_close(dw, dw64, dwmag, shape[0] * y.shape[2] * y.shape[3])
    np.testing.assert_allclose(db, dy.sum(axis=(0, 2, 3)), rtol=1e-6, atol=1e-6)


def test_depthwise_only_takes_one_filter_per_channel():
    x = rand(1, 4, 5, 5)
    assert simd.depthwise(x, rand(4, 2, 3, 3), None, [1, 1, 1, 1], [5, 5], [1, 1], [1, 1]) is None
    assert simd.depthwise(x, rand(3, 1, 3, 3), None, [1, 1, 1, 1], [5, 5], [1, 1], [1, 1]) is None
    assert simd.depthwise(x.astype(np.float64), rand(4, 1, 3, 3), None, [1, 1, 1, 1], [5, 5], [1, 1], [1, 1]) is None


@pytest.mark.parametrize("shape", [(2, 3, 5, 7), (16, 32, 48, 48), (1, 1, 1, 1), (2, 3, 10)])
def test_plane_sums_give_global_average_pool_and_conv_bias_gradients(shape):
    x = rand(*shape)
    gap, grad = lookup("GlobalAveragePool"), lookup("ConvGrad", "com.microsoft")
    w = rand(4, shape[1], *([1] * (len(shape) - 2)), seed=1)
    with running("plane_sums_f32"):
        fast = [gap(x), grad(x[:, :1].repeat(4, axis=1), x, w)[2]]
    with numpy_only():
        plain = [gap(x), grad(x[:, :1].repeat(4, axis=1), x, w)[2]]
    size = int(np.prod(shape[2:]))
    for f, p in zip(fast, plain):
        assert f.dtype == np.float32 and f.shape == p.shape
        np.testing.assert_allclose(f, p, rtol=0, atol=4 * size * shape[0] * EPS32 * np.abs(x).max())


ULP = 2 * EPS32   # numpy's exp and the SIMD one (Cephes' polynomial) may each be an ulp off; sums run in another order


@pytest.mark.parametrize("shape", [(1, 1), (8, 4, 64, 64), (64, 10), (3, 7), (2, 3, 5)])
def test_softmax_and_its_gradient_match_numpy(shape):
    x = rand(*shape) * 4
    x.reshape(-1)[:3] = [80.0, -90.0, 30.0][:x.size]
    dy = rand(*shape, seed=1)
    softmax, grad = lookup("Softmax"), lookup("SoftmaxGrad_13", "com.microsoft")
    with running("softmax_f32", "softmax_grad_f32"):
        y, dx = softmax(x), grad(dy, softmax(x))
    with numpy_only():
        y_ref = softmax(x)
        dx_ref = grad(dy, y_ref)
    cols = shape[-1]
    np.testing.assert_allclose(y, y_ref, rtol=(cols + 8) * ULP, atol=1e-37)
    bound = (cols + 4) * EPS32 * (np.abs(y_ref) * (np.abs(dy) + np.abs(dy * y_ref).sum(-1, keepdims=True)))
    assert np.all(np.abs(dx - dx_ref) <= bound + 1e-37)


def test_softmax_rows_with_nan_and_inf_are_numpys():
    x = np.array([[1, np.nan, 2, 3, 4], [1, np.inf, 2, 3, 4], [-np.inf] * 5, [0, -np.inf, 1, 2, 3]], np.float32)
    with running("softmax_f32"):
        y = lookup("Softmax")(x)
    with numpy_only(), np.errstate(invalid="ignore"):
        ref = lookup("Softmax")(x)
    np.testing.assert_array_equal(np.isnan(y), np.isnan(ref))
    np.testing.assert_allclose(y[3], ref[3], rtol=8 * ULP)


@pytest.mark.parametrize("shape", [(1,), (7,), (64, 129)])
def test_sigmoid_and_its_gradient_match_numpy(shape):
    x = rand(*shape) * 6
    specials = np.array([0.0, -0.0, 100.0, -100.0, 88.0, -87.0, np.inf], np.float32)
    x.reshape(-1)[:min(x.size, 7)] = specials[:min(x.size, 7)]
    dy = rand(*shape, seed=1)
    sigmoid, grad = lookup("Sigmoid"), lookup("SigmoidGrad", "com.microsoft")
    with running("sigmoid_f32", "sigmoid_grad_f32"):
        y, dx = sigmoid(x), grad(dy, sigmoid(x))
    with numpy_only():
        y_ref = sigmoid(x)
        dx_ref = grad(dy, y)
    np.testing.assert_allclose(y, y_ref, rtol=4 * ULP, atol=1e-37)
    np.testing.assert_array_equal(dx, dx_ref)


@pytest.mark.parametrize("n", [0, 1, 7, 8, 9, 100_003])
def test_nonfinite_counts_nan_and_inf_as_numpy_does(n):
    x = rand(n, seed=n)
    rng = np.random.default_rng(n)
    specials = np.array([np.nan, -np.nan, np.inf, -np.inf, np.finfo(np.float32).max, np.finfo(np.float32).tiny / 2,
                         -0.0], np.float32)
    if n:
        x[rng.integers(0, n, size=max(1, n // 10))] = rng.choice(specials, size=max(1, n // 10))
        x.view(np.uint32)[rng.integers(0, n, size=3)] = [0x7FC00001, 0xFFFFFFFF, 0x7F800001]  # NaN payloads
    with running("nonfinite_f32") if n else contextlib.nullcontext():  # nothing to count: no call
        counted = simd.nonfinite(x)
    assert counted == int(np.count_nonzero(~np.isfinite(x)))
    assert simd.nonfinite(x[::2] if n > 1 else x.astype(np.float64)) is None  # not contiguous float32: numpy's


def test_a_guarded_step_checks_with_the_kernel():
    from onnxtrain.train import guard
    x = rand(64, 16)
    x[3, 5] = np.inf
    with running("nonfinite_f32"):
        assert guard.bad_values(x) == 1 and guard.bad_values(rand(33)) == 0


def bits(a):
    a = np.asarray(a)
    return a.dtype, a.shape, a.view(np.uint32).tolist()


@pytest.mark.parametrize("rows, cols", [(1, 1), (64, 10), (9, 7), (3, 8), (130, 129), (2, 1000)])
@pytest.mark.parametrize("reduction", ["mean", "sum"])
def test_softmax_cross_entropy_and_its_gradient_are_bit_equal_to_numpy(rows, cols, reduction):
    scores = rand(rows, cols) * 5
    labels = np.random.default_rng(1).integers(0, cols, rows)
    dy = np.array(1.5, np.float32)
    loss, grad = lookup("SoftmaxCrossEntropyLoss"), lookup("SoftmaxCrossEntropyLossGrad", "com.microsoft")
    with running("softmax_ce_shift_f32", "softmax_ce_sums_f32", "softmax_ce_loss_f32", "softmax_ce_grad_f32"):
        out, log_prob = loss(scores, labels, reduction=reduction)
        dx = grad(dy, log_prob, labels, reduction=reduction)
    with numpy_only():
        out_ref, log_prob_ref = loss(scores, labels, reduction=reduction)
        dx_ref = grad(dy, log_prob_ref, labels, reduction=reduction)
    assert bits(out) == bits(out_ref) and bits(log_prob) == bits(log_prob_ref) and bits(dx) == bits(dx_ref)


@pytest.mark.parametrize("case", ["views", "certain"])
def test_softmax_cross_entropy_of_views_and_of_certain_rows_is_numpys(case):
    if case == "views":             # scores and labels that are not contiguous
        scores, labels = rand(10, 64).T * 3, (np.arange(128, dtype=np.int64) % 10)[::2]
    else:                           # every row's label has probability 1: the picks are -0, the sum numpy's zero
        scores, labels = np.tile(np.array([[200.0, 0.0, -5.0]], np.float32), (9, 1)), np.zeros(9, np.int64)
    loss, grad = lookup("SoftmaxCrossEntropyLoss"), lookup("SoftmaxCrossEntropyLossGrad", "com.microsoft")
    dy = np.array(-0.5, np.float32)
    with running(*["softmax_ce_loss_f32"][:case == "certain"], "softmax_ce_grad_f32"):   # numpy sums a view's rows
        out = loss(scores, labels)                                                      # in another order
        dx = grad(dy, out[1], labels)
    with numpy_only():
        ref = loss(scores, labels)
        dx_ref = grad(dy, ref[1], labels)
    assert bits(out[0]) == bits(ref[0]) and bits(out[1]) == bits(ref[1]) and bits(dx) == bits(dx_ref)


def test_softmax_cross_entropy_leaves_rows_numpy_orders_and_bad_labels_to_numpy():
    loss = lookup("SoftmaxCrossEntropyLoss")
    labels = np.array([0, 1])
    for special in [np.nan, np.inf, 0.0, -0.0]:     # a row's maximum numpy's reduction decides the bits of
        scores = np.array([[special, -1.0, -2.0], [1.0, 2.0, 3.0]], np.float32)
        with numpy_only(), np.errstate(invalid="ignore"):
            ref = loss(scores, labels)
        with np.errstate(invalid="ignore"):
            out = loss(scores, labels)
        assert bits(out[0]) == bits(ref[0]) and bits(out[1]) == bits(ref[1])
    with pytest.raises(ValueError, match=r"label 3 is outside \[0, 3\)"):
        loss(rand(2, 3), np.array([0, 3]))
    with pytest.raises(ValueError, match=r"label -1 is outside \[0, 3\)"):
        lookup("SoftmaxCrossEntropyLossGrad", "com.microsoft")(np.array(1.0, np.float32), rand(2, 3),
                                                               np.array([-1, 0]))


@pytest.mark.parametrize("shape", [(64, 128), (64, 10), (1, 2), (300, 3)])
@pytest.mark.parametrize("keepdims", [0, 1])
def test_column_sums_are_bit_equal_to_numpys_reduce_sum(shape, keepdims):
    x = rand(*shape) * 3
    x[:, 0] = -0.0                  # a column of -0s: numpy's initial value decides its sign
    reduce_sum = lookup("ReduceSum")
    axes = np.array([0], np.int64)
    with running("column_sums_f32"):
        out = reduce_sum(x, axes, keepdims=keepdims)
    with numpy_only():
        ref = reduce_sum(x, axes, keepdims=keepdims)
    assert bits(out) == bits(ref)


def test_column_sums_leave_one_column_and_other_axes_to_numpy():
    assert simd.column_sums(rand(64, 1)) is None            # numpy sums a single column pairwise
    assert simd.column_sums(rand(3, 64).T) is None          # and the columns of a transposed view
    assert simd.column_sums(rand(4, 3).astype(np.float64)) is None
    x = rand(4, 5)
    np.testing.assert_array_equal(lookup("ReduceSum")(x, np.array([1], np.int64), keepdims=0), x.sum(axis=1))
