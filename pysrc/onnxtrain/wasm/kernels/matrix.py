"""Gemm, MatMul and FusedMatMul as ops/simd.py's gemm runs them: C (Gemm's bias) broadcast into the output, then
gemm_f32 over the matrix stacks numpy's matmul broadcasting gives, batch dims merged as simd.gemm merges them."""
from __future__ import annotations

import numpy as np

from ...ir.ort_names import MS_DOMAIN
from ...ops.simd import _merge_batch
from ...runtime.program import NotLowered
from ..lowering import f32_only, strides as contiguous_strides
from ..registry import wasm_kernel
from .elementwise import strided


class Operand:
    """A matrix stack read from a Tensor's buffer: element ``offset`` and ``strides`` per dim of ``shape``."""

    def __init__(self, tensor, shape=None, strides=None, offset=0):
        self.tensor = tensor
        self.shape = tuple(tensor.shape if shape is None else shape)
        self.strides = list(contiguous_strides(self.shape) if strides is None else strides)
        self.offset = offset

    @property
    def T(self) -> "Operand":
        """The last two dims swapped."""
        s, st = self.shape, self.strides
        return Operand(self.tensor, s[:-2] + (s[-1], s[-2]), st[:-2] + [st[-1], st[-2]], self.offset)

    def broadcast(self, batch: tuple) -> list:
        """Strides of the stack broadcast to ``batch`` + its matrix dims (np.broadcast_to's: 0 on new dims)."""
        lead = len(batch) - (len(self.shape) - 2)
        strides = [0] * lead + self.strides[:-2]
        shape = (1,) * lead + self.shape[:-2]
        return [0 if d == 1 and b != 1 else s for d, b, s in zip(shape, batch, strides)] + self.strides[-2:]


def gemm(k, a: Operand, b: Operand, out, alpha: float = 1.0, beta: float = 0.0) -> None:
    """out (contiguous, batch + (m, n)) = alpha * a @ b + beta * out, as simd.gemm calls gemm_f32."""
    (m, kk), n = a.shape[-2:], b.shape[-1]
    if out.size == 0:
        return
    if len(a.shape) == len(b.shape) == 2:
        batch, sa, sb = (), a.strides, b.strides
    else:
        batch = tuple(out.shape[:-2])
        sa, sb = a.broadcast(batch), b.broadcast(batch)
    ta, tb = a.tensor, b.tensor

    def record(count, oa, step_a, ob, step_b, oc, step_c):
        k.call("gemm", [ta, tb], [out], [count, m, n, kk, float(alpha), a.offset + oa, step_a, sa[-2], sa[-1],
                                         b.offset + ob, step_b, sb[-2], sb[-1], float(beta), oc, step_c, n])
    if not batch:
        record(1, 0, 0, 0, 0, 0, 0)
        return
    sc = contiguous_strides(out.shape)
    dims, (ba, bb, bc) = _merge_batch(batch, sa[:-2], sb[:-2], sc[:-2])
    count, step = (dims[-1], (ba[-1], bb[-1], bc[-1])) if dims else (1, (0, 0, 0))
    for index in np.ndindex(*dims[:-1]):
        oa = sum(i * s for i, s in zip(index, ba))
        ob = sum(i * s for i, s in zip(index, bb))
        oc = sum(i * s for i, s in zip(index, bc))
        record(count, oa, step[0], ob, step[1], oc, step[2])


def matmul(k, a: Operand, b: Operand, alpha: float = 1.0):
    """ops/matmul.py's matmul (simd.gemm) of two stacks of matrices (rank >= 2)."""
    if len(a.shape) < 2 or len(b.shape) < 2:
        raise NotLowered("a 1-D operand of a matrix product (numpy's matmul, not the C gemm)")
    if a.shape[-1] != b.shape[-2]:
        raise NotLowered(f"matrix product of {list(a.shape)} and {list(b.shape)}")
    try:
        batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    except ValueError:
        raise NotLowered(f"the stacks {list(a.shape)} and {list(b.shape)} do not broadcast") from None
    out = k.output(batch + (a.shape[-2], b.shape[-1]))
    gemm(k, a, b, out, alpha)
    return out


@wasm_kernel("Gemm")
def Gemm(k, A, B, C=None, *, alpha=1.0, beta=1.0, transA=0, transB=0, **legacy):
    if legacy or (k.opset is not None and k.opset < 7):
        raise NotLowered("Gemm before opset 7")
    f32_only("Gemm", A, B, C)
    if A.rank != 2 or B.rank != 2:
        raise NotLowered(f"Gemm of {A.describe()} and {B.describe()}")
    a = Operand(A).T if transA else Operand(A)
    b = Operand(B).T if transB else Operand(B)
    if a.shape[1] != b.shape[0]:
        raise NotLowered(f"Gemm: {A.describe()} and {B.describe()} do not multiply")
    out = k.output((a.shape[0], b.shape[1]))
    if C is not None and beta != 0.0:
        try:
            if np.broadcast_shapes(C.shape, out.shape) != out.shape:
                raise ValueError
        except ValueError:
            raise NotLowered(f"Gemm: C {C.describe()} does not broadcast to {out.describe()}") from None
        strided(k, "copy", out, C)
    else:
        beta = 0.0
    gemm(k, a, b, out, alpha, beta)
    return out


@wasm_kernel("MatMul")
def MatMul(k, A, B):
    f32_only("MatMul", A, B)
    return matmul(k, Operand(A), Operand(B))


@wasm_kernel("FusedMatMul", MS_DOMAIN)
def FusedMatMul(k, A, B, *, alpha=1.0, transA=0, transB=0, transBatchA=0, transBatchB=0):
    f32_only("FusedMatMul", A, B)
    if transBatchA or transBatchB:
        raise NotLowered("FusedMatMul: transBatchA or transBatchB")
    a, b = Operand(A), Operand(B)
    a = a.T if transA and A.rank >= 2 else a
    b = b.T if transB and B.rank >= 2 else b
    return matmul(k, a, b, alpha)
