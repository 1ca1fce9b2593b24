"""Kernels: Gemm, MatMul, Det, Softmax, LogSoftmax, Dropout and the com.microsoft softmax gradients."""
from __future__ import annotations

import numpy as np

from ..ir.ort_names import MS_DOMAIN
from . import simd
from .elementwise import Gelu
from .matmul import matmul
from .random import draws
from .registry import kernel


@kernel("Gemm", since=1)
def Gemm_1(A, B, C=None, *, alpha=1.0, beta=1.0, transA=0, transB=0, broadcast=0):
    """Gemm-1 and -6: C broadcasts to the result only with ``broadcast``; without it C has the result's shape."""
    if C is not None and not broadcast:
        rows, cols = A.shape[1 if transA else 0], B.shape[0 if transB else 1]
        if C.shape != (rows, cols):
            raise ValueError(f"Gemm: C of shape {list(C.shape)} is not the result's shape {[rows, cols]} "
                             f"and broadcast is not set")
    return Gemm(A, B, C, alpha=alpha, beta=beta, transA=transA, transB=transB)


@kernel("Gemm", since=7)
def Gemm(A, B, C=None, *, alpha=1.0, beta=1.0, transA=0, transB=0):
    a = A.T if transA else A
    b = B.T if transB else B
    y = simd.gemm(a, b, C, alpha, beta)
    if y is not None:
        return y
    y = matmul(a, b)
    if alpha != 1.0:
        y *= y.dtype.type(alpha)
    if C is not None and beta != 0.0:
        y += C if beta == 1.0 else C * C.dtype.type(beta)
    return y


@kernel("MatMul")
def MatMul(A, B):
    return matmul(A, B)


@kernel("Det", since=11)
def Det(X):
    if X.ndim < 2 or X.shape[-1] != X.shape[-2]:
        raise ValueError(f"Det: the input must end in square matrices, got shape {list(X.shape)}")
    return np.linalg.det(X).astype(X.dtype, copy=False)


@kernel("FusedMatMul", domain=MS_DOMAIN)
def FusedMatMul(A, B, *, alpha=1.0, transA=0, transB=0, transBatchA=0, transBatchB=0):
    """com.microsoft::FusedMatMul: alpha * op(A) @ op(B), op swapping the last two axes when trans is set."""
    if transBatchA or transBatchB:
        raise ValueError("FusedMatMul: transBatchA and transBatchB are not supported (onnxruntime's gradient "
                         "builders do not emit them)")
    a = A.swapaxes(-1, -2) if transA and A.ndim >= 2 else A
    b = B.swapaxes(-1, -2) if transB and B.ndim >= 2 else B
    y = simd.gemm(a, b, None, alpha)
    if y is not None:
        return y
    y = matmul(a, b)
    return y * y.dtype.type(alpha) if alpha != 1.0 else y


def _softmax(x, axis):
    y = simd.softmax(x, axis)
    if y is not None:
        return y
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def log_softmax(x: np.ndarray, axis: int) -> np.ndarray:
    shifted = x - np.maximum.reduce(x, axis=axis, keepdims=True)
    sums = np.add.reduce(np.exp(shifted), axis=axis, keepdims=True)
    return np.subtract(shifted, np.log(sums, out=sums), out=shifted)


def _coerced(fn, x, axis):
    """Opset < 13: the input is seen as 2-D [prod(dims[:axis]), prod(dims[axis:])]."""
    axis = axis + x.ndim if axis < 0 else axis
    flat = x.reshape(int(np.prod(x.shape[:axis], dtype=np.int64)), -1)
    return fn(flat, 1).reshape(x.shape)


@kernel("Softmax", since=1)
def Softmax_1(input, *, axis=1):
    return _coerced(_softmax, input, axis)


@kernel("Softmax", since=13)
def Softmax_13(input, *, axis=-1):
    return _softmax(input, axis)


@kernel("LogSoftmax", since=1)
def LogSoftmax_1(input, *, axis=1):
    return _coerced(log_softmax, input, axis)


@kernel("LogSoftmax", since=13)
def LogSoftmax_13(input, *, axis=-1):
    return log_softmax(input, axis)


@kernel("Hardmax", since=13)
def Hardmax(input, *, axis=-1):
    out = np.zeros_like(input)
    np.put_along_axis(out, np.expand_dims(np.argmax(input, axis=axis), axis), 1, axis=axis)
    return out


@kernel("Dropout", since=12)
def Dropout(data, ratio=None, training_mode=None, *, seed=None, _outputs=(True, False), _generator=None):
    p = 0.5 if ratio is None else float(np.asarray(ratio))
    training = training_mode is not None and bool(np.asarray(training_mode))
    want_mask = len(_outputs) > 1 and _outputs[1]
    if not training or p == 0.0:
        return data, (np.ones(data.shape, dtype=bool) if want_mask else None)
    mask = draws(seed, _generator).random(data.shape) >= p
    return (data * mask / data.dtype.type(1 - p)).astype(data.dtype, copy=False), mask


@kernel("Dropout", since=7)
def Dropout_7(data, *, ratio=0.5, _outputs=(True, False)):
    return data, (np.ones(data.shape, dtype=bool) if len(_outputs) > 1 and _outputs[1] else None)


@kernel("DropoutGrad", domain=MS_DOMAIN)
def DropoutGrad(dy, mask, ratio=None, training_mode=None):
    p = 0.5 if ratio is None else float(np.asarray(ratio))
    if training_mode is not None and not bool(np.asarray(training_mode)) or p == 0.0:
        return dy
    return (dy * mask / dy.dtype.type(1 - p)).astype(dy.dtype, copy=False)


@kernel("SoftmaxGrad_13", domain=MS_DOMAIN)
def SoftmaxGrad_13(dY, Y, *, axis=-1):
    dX = simd.softmax_grad(dY, Y, axis)
    if dX is not None:
        return dX
    return (Y * (dY - (dY * Y).sum(axis=axis, keepdims=True))).astype(Y.dtype, copy=False)


@kernel("LogSoftmaxGrad_13", domain=MS_DOMAIN)
def LogSoftmaxGrad_13(dY, Y, *, axis=-1):
    return (dY - np.exp(Y) * dY.sum(axis=axis, keepdims=True)).astype(Y.dtype, copy=False)


@kernel("Gelu", domain=MS_DOMAIN)
def Gelu_ms(X):
    """com.microsoft::Gelu: the exact (erf) GELU."""
    return Gelu(X)


@kernel("BiasGelu", domain=MS_DOMAIN)
def BiasGelu(A, B):
    return Gelu_ms(A + B)


@kernel("FastGelu", domain=MS_DOMAIN)
def FastGelu(X, bias=None):
    return Gelu(X if bias is None else X + bias, approximate="tanh")
