"""The executor's C side through ctypes: its op table, its record loop's errors, and the math it computes itself
(mathlib.c), against Python's double pow and numpy."""
from __future__ import annotations

import ctypes
import math

import numpy as np
import pytest

from helpers import node_model
from onnxtrain.ops import simd
from onnxtrain.runtime import Session
from onnxtrain.wasm.errors import WasmMemoryError
from onnxtrain.wasm.native import library

LIB, OPS = library()
RNG = np.random.default_rng(11)


def _ptr(a: np.ndarray):
    return ctypes.c_void_p(a.ctypes.data)


def _map(kernel, x: np.ndarray) -> np.ndarray:
    y = np.empty_like(x)
    getattr(LIB, kernel)(x.size, _ptr(x), _ptr(y))
    return y


def _ulps(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.abs(a.view(np.int32).astype(np.int64) - b.view(np.int32).astype(np.int64))


def test_op_table():
    names = [LIB.executor_op_name(i).decode() for i in range(LIB.executor_op_count())]
    assert names == list(OPS) and len(set(names)) == len(names)
    assert {"gemm", "softmax_ce", "adamw", "sgd", "im2col", "maxpool"} <= set(names)
    assert LIB.executor_op_name(len(names)) is None


def _run(words, buffers) -> int:
    words = np.array(words, np.int32)
    table = (ctypes.c_void_p * len(buffers))(*[b.ctypes.data for b in buffers])
    return LIB.run_program(_ptr(words), len(words), table)


def test_records_run_in_order_and_a_failure_names_its_record():
    x = np.array([-1.0, 2.0, -3.0, 4.0], np.float32)
    y, z = np.empty(4, np.float32), np.empty(4, np.float32)
    relu, copy = OPS["relu"], OPS["copy"]
    assert _run([relu, 3, 0, 1, 4, copy, 3, 1, 2, 16], [x, y, z]) == 0
    np.testing.assert_array_equal(z, [0, 2, 0, 4])
    dy, idx, dx = np.ones(2, np.float32), np.array([0, 9], np.int64), np.empty(4, np.float32)
    z[:] = 7
    grad = OPS["maxpool_grad"]
    assert _run([relu, 3, 0, 1, 4, grad, 5, 2, 3, 4, 2, 4, copy, 3, 1, 2, 16], [x, y, z, dy, idx, dx]) == 2
    np.testing.assert_array_equal(z, 7)         # the records after the failed one did not run
    assert _run([len(OPS), 0], []) == 1           # an op the build does not know


def test_nonfinite_counts_into_an_int():
    x = np.array([1, np.nan, np.inf, -np.inf, 0, 2, 3, 4, 5, np.nan], np.float32)
    count = np.array([5], np.int32)
    assert _run([OPS["nonfinite"], 3, 0, 1, x.size], [x, count]) == 0
    assert count[0] == 5 + 4 == 5 + simd.nonfinite(x)


def test_pow_is_pythons_to_float32():
    """AdamW's 1 - float32(float(a) ** t): the executor's double-double pow rounds to the same float32 as
    CPython's pow for the attributes' alphas and betas and many more, at small and large steps."""
    LIB.pow_f64_int.restype = ctypes.c_double
    LIB.pow_f64_int.argtypes = [ctypes.c_double, ctypes.c_longlong]
    bases = [np.float32(v) for v in (0.9, 0.999, 0.99, 0.95, 0.5)] + list(RNG.random(10).astype(np.float32))
    steps = list(range(0, 2000)) + RNG.integers(0, 10 ** 8, 500).tolist() + [-1, -7]
    for a in bases:
        for t in steps:
            want = np.float32(float(a) ** t)
            got = np.float32(LIB.pow_f64_int(float(a), t))
            assert want.view(np.uint32) == got.view(np.uint32), (a, t)


def test_exp_and_log_are_correctly_rounded_and_near_numpys():
    """exp and log in double, rounded once: the float32 nearest math.exp / math.log (except within ~1e-16 of a
    halfway point: none among these); numpy's own float32 exp and log are within 2 and 3 ulp of them."""
    x = np.concatenate([RNG.uniform(-104, 89, 100_000), RNG.uniform(-20, 0, 100_000)]).astype(np.float32)
    e = _map("exp_f32", x)
    with np.errstate(over="ignore"):
        exact = np.array([math.exp(v) if v < 89 else math.inf for v in x.tolist()]).astype(np.float32)
        assert_ulps = _ulps(e, np.exp(x)).max()
    np.testing.assert_array_equal(e, exact)
    assert assert_ulps <= 2
    x = np.concatenate([RNG.uniform(0, 100, 100_000), np.exp(RNG.uniform(-80, 80, 100_000))]).astype(np.float32)
    x = x[x > 0]
    lg = _map("log_f32", x)
    np.testing.assert_array_equal(lg, np.array([math.log(v) for v in x.tolist()]).astype(np.float32))
    assert _ulps(lg, np.log(x)).max() <= 3


def test_exp_and_log_special_values():
    special = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 88.73, -87.4, -103.9, -110.0, 1e-45], np.float32)
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(_map("exp_f32", special), np.exp(special))
        np.testing.assert_array_equal(_map("log_f32", special), np.log(special))


def test_out_of_memory_names_the_tensor_and_the_session_stays_usable():
    n = 1 << 23                                           # an output of 2^46 floats: no machine has 256 TiB
    a, b = np.ones((n, 1), np.float32), np.ones((1, n), np.float32)
    from helpers import WASM
    session = Session(node_model("MatMul", {"a": a[:2], "b": b[:, :2]}, ["y"], dynamic=True), WASM)
    with pytest.raises(WasmMemoryError, match=rf"{4 * n * n} bytes: float32\[{n}, {n}\], an output of "
                                              r"ai.onnx::MatMul node"):
        session.run([a, b])
    small = session.run([a[:3], b[:, :2]])[0]
    np.testing.assert_array_equal(small, np.ones((3, 2), np.float32))
