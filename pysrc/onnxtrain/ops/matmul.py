"""Matrix products for the kernels: numpy's matmul, or BLAS gemm through scipy where numpy has no BLAS.

Pyodide's numpy is built without BLAS (about 1.3 GFLOPS for float32); Pyodide's scipy brings OpenBLAS (about
4.8). The page's worker turns scipy on once it has loaded; CPython's numpy already has BLAS and keeps np.matmul.
"""
from __future__ import annotations

import numpy as np

_gemm = {}  # dtype -> scipy's gemm, while scipy's BLAS is on


def use_scipy_blas(enabled: bool = True) -> bool:
    """Route float32/float64 matrix products through scipy's BLAS (or back to numpy); whether it is on."""
    _gemm.clear()
    if enabled:
        from scipy.linalg import blas
        _gemm.update({np.dtype(np.float32): blas.sgemm, np.dtype(np.float64): blas.dgemm})
    return bool(_gemm)


def scipy_blas_on() -> bool:
    return bool(_gemm)


def _fortran(x: np.ndarray):
    """(y, trans): y is Fortran-ordered and x is y, or y transposed when trans is set; no copy for a contiguous x."""
    if x.flags.f_contiguous:
        return x, 0
    if x.flags.c_contiguous:
        return x.T, 1
    return np.asfortranarray(x), 0


def _gemm2d(gemm, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    # BLAS writes column-major: b.T @ a.T in Fortran order is a @ b in C order, with no copies.
    bt, trans_b = _fortran(b.T)
    at, trans_a = _fortran(a.T)
    return gemm(1.0, bt, at, trans_a=trans_b, trans_b=trans_a).T


def matmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """np.matmul(a, b), through BLAS gemm when it is on and both are float32 (or float64) matrices or stacks."""
    gemm = _gemm.get(a.dtype)
    if gemm is None or b.dtype != a.dtype or a.ndim < 2 or b.ndim < 2 or a.size == 0 or b.size == 0:
        return np.matmul(a, b)
    if a.ndim == 2 and b.ndim == 2:
        return _gemm2d(gemm, a, b)
    batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    a, b = np.broadcast_to(a, batch + a.shape[-2:]), np.broadcast_to(b, batch + b.shape[-2:])
    out = np.empty(batch + (a.shape[-2], b.shape[-1]), a.dtype)
    for index in np.ndindex(*batch):
        out[index] = _gemm2d(gemm, a[index], b[index])
    return out
