"""Matrix products: Gemm, MatMul and com.microsoft FusedMatMul, all on one kernel (shaders/matrix_tiled.wgsl)
that reads A and B through strides (the transposes), takes a batch per grid z (numpy's matmul broadcasting
through batch strides) and fuses Gemm's alpha * AB + beta * C.  Products with few rows or columns run on
shaders/matrix_small.wgsl, one invocation per output, with the same summation order."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...ir.ort_names import MS_DOMAIN
from ..errors import NotLowered
from ..tensors import gtype
from ..lowering import MAX_GROUPS
from ..registry import gpu_kernel
from .common import broadcast_shape, broadcast_strides, float_only, innermost_first

TILE = 64    # rows and columns of Y per workgroup of matrix_tiled.wgsl
SMALL = 4    # products with at most this many rows or columns run on matrix_small.wgsl


@dataclass
class Operand:
    """One factor of the product as the shaders read it: element (i, j) of its matrix at i * rows + j * cols,
    plus the batch's offset."""
    tensor: object
    rows: int          # the stride of the first index (m of A, k of B)
    cols: int          # the stride of the second index (k of A, n of B)
    outer: int         # the first index's extent
    inner: int         # the second index's extent
    batch: tuple       # the batch dims (shape[:-2])


def _operand(t, trans: bool, vector_as: str) -> Operand:
    """``t`` as a matrix, transposed when ``trans``; a vector is a row ("row") or a column ("col")."""
    if t.rank == 1:
        (n,) = t.shape
        return Operand(t, 0, 1, 1, n, ()) if vector_as == "row" else Operand(t, 1, 0, n, 1, ())
    r, c = t.shape[-2:]
    if trans:
        return Operand(t, 1, c, c, r, tuple(t.shape[:-2]))
    return Operand(t, c, 1, r, c, tuple(t.shape[:-2]))


def _batch_strides(op: Operand, batch: tuple) -> list:
    matrix = op.outer * op.inner
    return [s * matrix for s in broadcast_strides(op.batch, batch)]


def _merge_batch(dims, *strides) -> tuple:
    """The batch dims without those of size 1 and with neighbours merged where every operand steps through
    them as through one dim (the shaders take six)."""
    out_dims, out_strides = [], [[] for _ in strides]
    for i, d in enumerate(dims):
        if d == 1:
            continue
        if out_dims and all(o[-1] == s[i] * d for o, s in zip(out_strides, strides)):
            out_dims[-1] *= d
            for o, s in zip(out_strides, strides):
                o[-1] = s[i]
        else:
            out_dims.append(d)
            for o, s in zip(out_strides, strides):
                o.append(s[i])
    return (out_dims, *out_strides)


def product(k, name: str, A, B, *, trans_a=False, trans_b=False, alpha=1.0, C=None, beta=0.0):
    """alpha * op(A) @ op(B) (+ beta * C, C broadcast to [M, N]) with numpy's matmul rules for 1-D operands and
    batch dims; the output Tensor."""
    if A.rank == 0 or B.rank == 0:
        raise ValueError(f"{name}: the operands must have at least one dimension, got {list(A.shape)} and "
                         f"{list(B.shape)}")
    a = _operand(A, trans_a, "row")
    b = _operand(B, trans_b, "col")
    if a.inner != b.outer:
        raise ValueError(f"{name}: the operands' inner dimensions differ: {list(A.shape)} and {list(B.shape)}"
                         f"{' (transposed)' if trans_a or trans_b else ''}")
    M, K, N = a.outer, a.inner, b.inner
    batch = broadcast_shape(a.batch, b.batch)
    count = int(np.prod(batch, dtype=np.int64))
    dims, a_strides, b_strides = _merge_batch(batch, _batch_strides(a, batch), _batch_strides(b, batch))
    shape = batch + ((M,) if A.rank > 1 else ()) + ((N,) if B.rank > 1 else ())
    Y = k.output(shape, A.dtype)
    if Y.size == 0:
        return Y
    c_strides = (0, 0)
    if C is not None:
        if broadcast_shape(C.shape, (M, N)) != (M, N):
            raise ValueError(f"{name}: C of shape {list(C.shape)} does not broadcast to the result's {[M, N]}")
        c_strides = broadcast_strides(C.shape, (M, N))
    params = [M, N, K, a.rows, a.cols, b.rows, b.cols, *c_strides, float(alpha), float(beta), 0,
              *innermost_first(dims, 1), *innermost_first(a_strides, 0), *innermost_first(b_strides, 0), Y.size]
    inputs = [A, B] + ([C] if C is not None else [])
    subs = _template(Y, C)
    tiles = (-(-N // TILE), -(-M // TILE))
    if min(M, N) <= SMALL or max(tiles) > MAX_GROUPS:
        k.dispatch("matrix_small", inputs, [Y], params, Y.size, **subs)
        return Y
    for first in range(0, count, MAX_GROUPS):
        params[11] = first
        k.dispatch("matrix_tiled", inputs, [Y], params, (*tiles, min(MAX_GROUPS, count - first)),
                   A_ALONG_K=_wgsl_bool(a.cols == 1), B_ALONG_K=_wgsl_bool(b.rows == 1), **subs)
    return Y


def _template(Y, C) -> dict:
    T = gtype(Y)
    if T != "f32":
        epilogue = "return acc;"
    elif C is None:
        epilogue = "return pf(9u) * acc;"
    else:
        epilogue = "return pf(9u) * acc + pf(10u) * C[m * pu(7u) + n * pu(8u)];"
    binding = "" if C is None else "@group(0) @binding(3) var<storage, read> C: array<f32>;"
    return {"T": T, "C_BINDING": binding, "Y_BINDING": 3 if C is None else 4, "EPILOGUE": epilogue}


def _wgsl_bool(flag: bool) -> str:
    return "true" if flag else "false"


@gpu_kernel("Gemm")
def Gemm(k, A, B, C=None, *, alpha=1.0, beta=1.0, transA=0, transB=0, broadcast=0):
    float_only("Gemm", A, B, C)
    if A.rank != 2 or B.rank != 2:
        raise ValueError(f"Gemm: A and B must be matrices, got {list(A.shape)} and {list(B.shape)}")
    if C is not None and beta == 0.0:
        C = None   # as the CPU kernel: C is not read (its NaNs do not spread)
    return product(k, "Gemm", A, B, trans_a=bool(transA), trans_b=bool(transB), alpha=alpha, C=C, beta=beta)


@gpu_kernel("MatMul")
def MatMul(k, A, B):
    if A.dtype != B.dtype or gtype(A) == "u32":
        raise NotLowered(f"MatMul of {A.dtype.name} and {B.dtype.name}")
    return product(k, "MatMul", A, B)


@gpu_kernel("FusedMatMul", MS_DOMAIN)
def FusedMatMul(k, A, B, *, alpha=1.0, transA=0, transB=0, transBatchA=0, transBatchB=0):
    if transBatchA or transBatchB:
        raise NotLowered("FusedMatMul with transBatchA or transBatchB")
    float_only("FusedMatMul", A, B)
    return product(k, "FusedMatMul", A, B, trans_a=bool(transA) and A.rank >= 2,
                   trans_b=bool(transB) and B.rank >= 2, alpha=alpha)
