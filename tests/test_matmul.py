"""Matrix products through scipy's BLAS give numpy's results, for every layout the kernels hand over; inside
Pyodide (where numpy has no BLAS and the page turns scipy's on) as well as in CPython."""
import numpy as np
import pytest

from onnxtrain.ops import lookup
from onnxtrain.ops.matmul import matmul, scipy_blas_on, use_scipy_blas

IN_PYODIDE = True  # run inside Pyodide too, by tests/browser/test_in_pyodide.py, which loads scipy there


@pytest.fixture
def blas():
    was = scipy_blas_on()  # in the page's worker it is on already
    assert use_scipy_blas()
    yield
    use_scipy_blas(was)


def rand(*shape, dtype=np.float32, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


LAYOUTS = {
    "C @ C": lambda: (rand(5, 7), rand(7, 3, seed=1)),
    "A.T @ B": lambda: (rand(7, 5).T, rand(7, 3, seed=1)),
    "A @ B.T": lambda: (rand(5, 7), rand(3, 7, seed=1).T),
    "A.T @ B.T": lambda: (rand(7, 5).T, rand(3, 7, seed=1).T),
    "strided": lambda: (rand(10, 14)[::2, ::2], rand(7, 6, seed=1)[:, ::2]),
    "vector rows": lambda: (rand(1, 7), rand(7, 1, seed=1)),
    "stack @ matrix": lambda: (rand(2, 4, 5, 7), rand(7, 3, seed=1)),
    "broadcast stacks": lambda: (rand(1, 3, 5, 7), rand(2, 1, 7, 4, seed=1)),
    "float64": lambda: (rand(5, 7, dtype=np.float64), rand(7, 3, dtype=np.float64, seed=1)),
}


@pytest.mark.parametrize("layout", LAYOUTS)
def test_gemm_gives_numpys_product_in_c_order(blas, layout):
    a, b = LAYOUTS[layout]()
    out = matmul(a, b)
    expected = np.matmul(a.astype(np.float64), b.astype(np.float64))
    assert out.dtype == a.dtype and out.shape == expected.shape and out.flags.c_contiguous
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("a, b", [(rand(7), rand(7, 3)), (rand(5, 7), rand(7)),
                                  (np.arange(6).reshape(2, 3), np.arange(6).reshape(3, 2)),
                                  (rand(0, 7), rand(7, 3)), (rand(5, 7), rand(7, 3, dtype=np.float64))],
                         ids=["vector @ matrix", "matrix @ vector", "int64", "empty", "mixed dtypes"])
def test_what_blas_does_not_take_stays_with_numpy(blas, a, b):
    np.testing.assert_array_equal(matmul(a, b), np.matmul(a, b))


def test_the_conv_and_gemm_kernels_agree_with_and_without_blas():
    x, w = rand(3, 4, 9, 9), rand(6, 2, 3, 3, seed=1)
    conv = dict(group=2, pads=[1, 1, 1, 1], strides=[2, 2])
    dy = rand(3, 6, 5, 5, seed=2)
    gemm_args = (rand(7, 5), rand(3, 7, seed=3), rand(3, seed=4))
    runs, was = [], scipy_blas_on()
    try:
        for enabled in (False, True):
            use_scipy_blas(enabled)
            runs.append([lookup("Conv")(x, w, **conv), *lookup("ConvGrad", "com.microsoft")(dy, x, w, **conv),
                         lookup("Gemm")(*gemm_args, alpha=0.5, transA=1, transB=1)])
    finally:
        use_scipy_blas(was)
    for plain, fast in zip(*runs):
        np.testing.assert_allclose(fast, plain, rtol=1e-5, atol=1e-5)
