"""Matrix products for the kernels: numpy's matmul, or the SIMD gemm (ops.simd) where it is loaded.

Pyodide's numpy has no BLAS and no SIMD (about 1.3 GFLOPS for float32); the page's worker loads onnxtrain's
wasm SIMD kernels, whose gemm takes every float32 layout numpy hands over (transposed and strided views,
broadcast stacks) without copies.  CPython's numpy has BLAS and keeps np.matmul.
"""
from __future__ import annotations

import numpy as np

from . import simd


def matmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """np.matmul(a, b)."""
    out = simd.gemm(a, b)
    return np.matmul(a, b) if out is None else out
