"""Matrix-product WGSL kernels (Gemm, MatMul, FusedMatMul) against the CPU kernels (themselves checked against
onnxruntime)."""
import numpy as np
import pytest

from gpu_cases import assert_close, check_node, gpu_session, node_model, run_both
from onnxtrain.webgpu.errors import WebGPUError
from onnxtrain.webgpu.kernels import matrix

IN_PYODIDE = True
rng = np.random.default_rng(0)
MS = "com.microsoft"


def floats(*shape):
    return rng.standard_normal(shape).astype(np.float32)


def atol(a, b, alpha=1.0):
    """Twice the float32 error bound of a sum of K products in any order, K * 2**-24 * sum |a_i b_i| (Higham):
    the GPU sums in ascending k, the CPU's BLAS in its own blocked order, so outputs near 0 differ by up to it."""
    a, b = np.abs(a.astype(np.float64)), np.abs(b.astype(np.float64))
    k = a.shape[-1]
    return max(1e-6, 2 * k * 2.0 ** -24 * abs(alpha) * float(np.max(np.matmul(a, b), initial=0.0)))


@pytest.fixture(params=["tiled", "small"])
def variant(request, monkeypatch):
    """Every product on one kernel: matrix_tiled.wgsl (no product counts as small) or matrix_small.wgsl."""
    monkeypatch.setattr(matrix, "SMALL", 0 if request.param == "tiled" else 1 << 30)
    return request.param


@pytest.mark.parametrize("m,k,n", [(1, 1, 1), (7, 13, 5), (65, 130, 33), (64, 64, 64), (40, 1, 70), (1, 50, 3),
                                   (3, 20, 1)])
def test_matmul_sizes(variant, m, k, n):
    a, b = floats(m, k), floats(k, n)
    check_node("MatMul", {"A": a, "B": b}, atol=atol(a, b))


def test_small_products_take_the_small_kernel():
    a, b = floats(3, 70), floats(70, 90)
    gpu = check_node("MatMul", {"A": a, "B": b}, atol=atol(a, b))
    assert _kernels(gpu) == {"small"}
    a, b = floats(9, 70), floats(70, 5)
    gpu = check_node("MatMul", {"A": a, "B": b}, atol=atol(a, b))
    assert _kernels(gpu) == {"tiled"}


def _kernels(gpu) -> set:
    """Which of the two kernels the program's dispatches run (the tiled one has workgroup memory)."""
    return {"tiled" if "var<workgroup>" in s.source else "small" for s in gpu.last_program.steps
            if hasattr(s, "source")}


@pytest.mark.parametrize("sa,sb", [((2, 3, 4, 5), (5, 6)), ((4, 5), (2, 5, 6)), ((1, 3, 4), (2, 4, 5)),
                                   ((3, 1, 66, 17), (1, 2, 17, 70)), ((5,), (5,)), ((5,), (5, 6)),
                                   ((4, 5), (5,)), ((5,), (2, 5, 6)), ((2, 3, 5), (5,)), ((2, 0, 4), (4, 3)),
                                   ((3, 0), (0, 4))])
def test_matmul_batch_and_vectors(variant, sa, sb):
    a, b = floats(*sa), floats(*sb)
    check_node("MatMul", {"A": a, "B": b}, atol=atol(a, b))


def test_matmul_batch_in_chunks(monkeypatch):
    """More batches than a grid's z takes run as several dispatches (the limit made 2 here to see it)."""
    monkeypatch.setattr(matrix, "MAX_GROUPS", 2)
    a, b = floats(5, 70, 9), floats(9, 66)
    gpu = check_node("MatMul", {"A": a, "B": b}, atol=atol(a, b))
    assert gpu.last_program.dispatch_count == 3
    a, b = floats(200, 9), floats(9, 6)   # 4 row tiles: more than the grid takes, so the small kernel
    gpu = check_node("MatMul", {"A": a, "B": b}, atol=atol(a, b))
    assert _kernels(gpu) == {"small"}


def test_int_matmul(variant):
    for dtype in (np.int64, np.int32):
        a = rng.integers(-20, 20, (2, 7, 13)).astype(dtype)
        b = rng.integers(-20, 20, (13, 6)).astype(dtype)
        check_node("MatMul", {"A": a, "B": b})


@pytest.mark.parametrize("trans_a", [0, 1])
@pytest.mark.parametrize("trans_b", [0, 1])
@pytest.mark.parametrize("c_shape", ["N", "M1", "1N", "MN", "scalar", None])
def test_gemm(variant, trans_a, trans_b, c_shape):
    m, k, n = 67, 19, 70
    a, b = floats(k, m) if trans_a else floats(m, k), floats(n, k) if trans_b else floats(k, n)
    inputs = {"A": a, "B": b}
    if c_shape is not None:
        inputs["C"] = floats(*{"N": (n,), "M1": (m, 1), "1N": (1, n), "MN": (m, n), "scalar": ()}[c_shape])
    check_node("Gemm", inputs, alpha=0.7, beta=-1.3, transA=trans_a, transB=trans_b,
               atol=atol(a.T if trans_a else a, b.T if trans_b else b, 0.7))


def test_gemm_defaults_and_known_c():
    a, b, c = floats(5, 8), floats(8, 9), floats(9)
    check_node("Gemm", {"A": a, "B": b}, initializers={"C": c}, atol=atol(a, b))


def test_gemm_beta_zero_does_not_read_c():
    a, b = floats(6, 8), floats(8, 7)
    c = np.full((6, 7), np.nan, np.float32)
    check_node("Gemm", {"A": a, "B": b, "C": c}, beta=0.0, atol=atol(a, b))


@pytest.mark.parametrize("trans_a", [0, 1])
@pytest.mark.parametrize("trans_b", [0, 1])
def test_fused_matmul(variant, trans_a, trans_b):
    a = floats(2, 1, 17, 66) if trans_a else floats(2, 1, 66, 17)
    b = floats(3, 70, 17) if trans_b else floats(3, 17, 70)
    check_node("FusedMatMul", {"A": a, "B": b}, domain=MS, alpha=1.5, transA=trans_a, transB=trans_b,
               atol=atol(a.swapaxes(-1, -2) if trans_a else a, b.swapaxes(-1, -2) if trans_b else b, 1.5))


def test_fused_matmul_vectors():
    a, b = floats(9), floats(4, 9)
    check_node("FusedMatMul", {"A": a, "B": b}, domain=MS, transA=1, transB=1, atol=atol(a, b.T))


def test_fused_matmul_trans_batch_is_not_lowered():
    """transBatchA runs on the CPU, whose kernel rejects it too: the error names the GPU's reason."""
    model = node_model("FusedMatMul", {"A": floats(2, 3, 4), "B": floats(4, 3, 5)}, ["Y"], domain=MS,
                       transBatchA=1)
    with pytest.raises(WebGPUError, match="transBatchA"):
        gpu_session(model).run([floats(2, 3, 4), floats(4, 3, 5)])


def test_long_batches_merge():
    a, b = floats(1, 2, 1, 2, 2, 1, 2, 2, 2, 3, 4), floats(2, 1, 1, 2, 1, 1, 1, 4, 5)
    check_node("MatMul", {"A": a, "B": b}, atol=atol(a, b))


def test_batch_rank_over_six_falls_back():
    """Seven batch dims that do not merge (each operand broadcasts along every other one)."""
    a, b = floats(2, 1, 2, 1, 2, 1, 2, 3, 4), floats(1, 2, 1, 2, 1, 2, 1, 4, 5)
    got, want, gpu = run_both(node_model("MatMul", {"A": a, "B": b}, ["Y"]), [a, b], allow_fallback=True)
    assert_close(got, want, atol=atol(a, b))
    assert len(gpu.fallbacks) == 1 and "MatMul" in gpu.fallbacks[0] and "dimensions" in gpu.fallbacks[0]


@pytest.mark.parametrize("shapes", [((65, 130), (130, 33)), ((1, 300), (300, 7))])
def test_deterministic(shapes):
    a, b, c = floats(*shapes[0]), floats(*shapes[1]), floats(shapes[1][1])
    model = node_model("Gemm", {"A": a, "B": b, "C": c}, ["Y"], alpha=0.5)
    first = gpu_session(model).run([a, b, c])[0]
    again = gpu_session(model).run([a, b, c])[0]
    assert first.tobytes() == again.tobytes()
