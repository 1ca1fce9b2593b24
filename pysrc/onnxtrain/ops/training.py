"""Kernels: com.microsoft gradient ops (activation and tensor gradients, Scale, the *Training
variants of forward ops).  Gradient accumulation and the optimizers are in optimizers.py.
"""
from __future__ import annotations

import numpy as np

from ..ir.ort_names import MS_DOMAIN
from . import simd
from .norm import batch_norm
from .optimizers import bool_flag, scalar_input
from .reduce import reduce_with
from .registry import kernel
from .shape import normalized_axes
from .tensor import normalized_indices


# ---- activation gradients (Y is the forward output, X the forward input) -------------------------

_SAME_SIZE_INT = {2: np.int16, 4: np.int32, 8: np.int64}


@kernel("ReluGrad", MS_DOMAIN)
def ReluGrad(dY, X):
    """dY where X > 0, else +0.  For floats as a bit mask: np.where is slow on the random masks of real data."""
    dX = simd.relu_grad(dY, X)
    if dX is not None:
        return dX
    ints = _SAME_SIZE_INT.get(dY.dtype.itemsize) if dY.dtype.kind == "f" else None
    if ints is None or dY.shape != X.shape:
        return np.where(X > 0, dY, dY.dtype.type(0))
    mask = np.negative(np.greater(X, X.dtype.type(0)).view(np.uint8), dtype=ints)
    return np.bitwise_and(dY.view(ints), mask).view(dY.dtype)


@kernel("SigmoidGrad", MS_DOMAIN)
def SigmoidGrad(dY, Y):
    dX = simd.sigmoid_grad(dY, Y)
    if dX is not None:
        return dX
    return dY * Y * (Y.dtype.type(1) - Y)


@kernel("TanhGrad", MS_DOMAIN)
def TanhGrad(dY, Y):
    return dY * (Y.dtype.type(1) - Y * Y)


@kernel("LeakyReluGrad", MS_DOMAIN)
def LeakyReluGrad(dY, Y, *, alpha=0.01):
    return dY * np.where(Y > 0, Y.dtype.type(1), Y.dtype.type(alpha))


# MLAS's logistic (onnxruntime's float sigmoid): a rational approximation on [-18, 18],
# evaluated with fused multiply-adds by its x86-64 FMA3 kernel.
_LOGISTIC_P = np.array([4.37031012579801e-11, 1.15627324459942e-07, 6.08574864600143e-05,
                        8.51377133304701e-03, 2.48287947061529e-01], np.float32)
_LOGISTIC_Q = np.array([6.10247389755681e-13, 5.76102136993427e-09, 6.29106785017040e-06,
                        1.70198817374094e-03, 1.16817656904453e-01, 9.93151921023180e-01], np.float32)


def _fma32(a: np.ndarray, b, c) -> np.ndarray:
    """float32 a*b + c with one rounding (the float32 product is exact in float64)."""
    return (a.astype(np.float64) * np.float64(b) + np.float64(c)).astype(np.float32)


def _mlas_logistic(x: np.ndarray) -> np.ndarray:
    v = np.clip(x, np.float32(-18), np.float32(18))
    v2 = v * v
    p = _fma32(v2, _LOGISTIC_P[0], _LOGISTIC_P[1])
    for c in _LOGISTIC_P[2:]:
        p = _fma32(p, v2, c)
    q = _fma32(v2, _LOGISTIC_Q[0], _LOGISTIC_Q[1])
    for c in _LOGISTIC_Q[2:]:
        q = _fma32(q, v2, c)
    return np.clip(p * v / q + np.float32(0.5), np.float32(0), np.float32(1))


@kernel("QuickGeluGrad", MS_DOMAIN)
def QuickGeluGrad(dY, X, *, alpha=1.702):
    """QuickGelu(x) = x * sigmoid(alpha * x); float32 uses onnxruntime's sigmoid approximation."""
    one = X.dtype.type(1)
    ax = X * X.dtype.type(alpha)
    if X.dtype == np.float32:
        sig = _mlas_logistic(ax)
    else:
        with np.errstate(over="ignore"):
            sig = one / (one + np.exp(-ax))
    return dY * sig * (one + ax * (one - sig))


# ---- math and tensor gradients --------------------------------------------------------------------

@kernel("Scale", MS_DOMAIN)
def Scale(input, scale, *, scale_down=0):
    """input * scale, or input * (1/scale) when scale_down; the scale is read as a float first."""
    value = np.float32(scalar_input("Scale", "scale", scale))
    if value == 0:
        raise ValueError("Scale: the scale value must not be 0")
    factor = np.float32(1) / value if scale_down else value
    return input * input.dtype.type(factor)


@kernel("ReduceSumTraining", MS_DOMAIN)
def ReduceSumTraining(data, axes=None, *, keepdims=1, noop_with_empty_axes=0):
    """ReduceSum (opset 13) with the axes as an input."""
    return reduce_with("ReduceSumTraining", np.sum, data, axes, keepdims, noop_with_empty_axes)


def _shape(op: str, shape) -> tuple:
    shape = tuple(int(d) for d in np.asarray(shape).reshape(-1))
    if any(d < 0 for d in shape):
        raise ValueError(f"{op}: shape {shape} has a negative dimension")
    return shape


@kernel("SliceGrad", MS_DOMAIN)
def SliceGrad(dY, shape, starts, ends, axes=None, steps=None):
    """Zeros of ``shape`` with dY written where Slice(starts, ends, axes, steps) read."""
    op = "SliceGrad"
    dX = np.zeros(_shape(op, shape), dY.dtype)
    starts, ends = np.asarray(starts).reshape(-1).tolist(), np.asarray(ends).reshape(-1).tolist()
    axes = list(range(len(starts))) if axes is None else normalized_axes(op, axes, dX.ndim)
    steps = [1] * len(starts) if steps is None else np.asarray(steps).reshape(-1).tolist()
    if not len(starts) == len(ends) == len(axes) == len(steps):
        raise ValueError(f"{op}: starts, ends, axes and steps must have equal lengths, got "
                         f"{len(starts)}, {len(ends)}, {len(axes)}, {len(steps)}")
    index = [slice(None)] * dX.ndim
    for s, e, a, st in zip(starts, ends, axes, steps):
        if st == 0:
            raise ValueError(f"{op}: step must not be 0 (axis {a})")
        index[a] = slice(s, e, st)  # Python slices clamp exactly as ONNX Slice does
    region = dX[tuple(index)]
    if region.shape != dY.shape:
        raise ValueError(f"{op}: dY of shape {dY.shape} does not match the sliced shape {region.shape}")
    dX[tuple(index)] = dY
    return dX


@kernel("GatherGrad", MS_DOMAIN)
def GatherGrad(shape, indices, dY, *, axis=0):
    """Zeros of ``shape``; dY rows are added back at the gathered indices (duplicates add up)."""
    op = "GatherGrad"
    dX = np.zeros(_shape(op, shape), dY.dtype)
    axis = normalized_axes(op, axis, dX.ndim)[0]
    idx = normalized_indices(op, indices, dX.shape[axis])
    expected = dX.shape[:axis] + idx.shape + dX.shape[axis + 1:]
    if dY.shape != expected:
        raise ValueError(f"{op}: dY of shape {dY.shape} does not match the Gather output shape {expected}")
    np.add.at(dX, (slice(None),) * axis + (idx,), dY)
    return dX


@kernel("GatherElementsGrad", MS_DOMAIN)
def GatherElementsGrad(dY, shape, indices, *, axis=0):
    op = "GatherElementsGrad"
    dX = np.zeros(_shape(op, shape), dY.dtype)
    axis = normalized_axes(op, axis, dX.ndim)[0]
    if indices.shape != dY.shape or indices.ndim != dX.ndim:
        raise ValueError(f"{op}: indices of shape {indices.shape} must have dY's shape {dY.shape} "
                         f"and the rank of {dX.shape}")
    index = list(np.indices(indices.shape, sparse=True))
    index[axis] = normalized_indices(op, indices, dX.shape[axis])
    np.add.at(dX, tuple(index), dY)
    return dX


# ---- BatchNormalization as ORT's training graphs run it ------------------------------------------

@kernel("BatchNormInternal", MS_DOMAIN)
def BatchNormInternal(X, scale, B, input_mean, input_var, *, epsilon=1e-5, momentum=0.9, training_mode=1):
    """BatchNormalization-15 whose training mode also gives the batch mean and 1/sqrt(batch variance + epsilon)
    (the inputs of BatchNormalizationGrad): ORT's training graph replaces BatchNormalization by it."""
    return batch_norm(X, scale, B, input_mean, input_var, epsilon, momentum, bool(training_mode))


@kernel("BatchNormalizationGrad", MS_DOMAIN)
def BatchNormalizationGrad(dY, X, scale, saved_mean, saved_inv_std, *, epsilon=1e-5):
    """(dX, dscale, dbias) over the channel axis 1, from BatchNormInternal's batch mean and inverse standard
    deviation (``epsilon`` is already in it)."""
    axes = (0,) + tuple(range(2, X.ndim))
    channel = (1, -1) + (1,) * (X.ndim - 2)
    n = X.dtype.type(X.size // X.shape[1])
    x_hat = (X - saved_mean.reshape(channel)) * saved_inv_std.reshape(channel)
    dbias = dY.sum(axis=axes)
    dscale = (dY * x_hat).sum(axis=axes)
    dX = (scale * saved_inv_std).reshape(channel) / n * (
        n * dY - dbias.reshape(channel) - x_hat * dscale.reshape(channel))
    return dX.astype(X.dtype, copy=False), dscale.astype(X.dtype, copy=False), dbias.astype(X.dtype, copy=False)


@kernel("ConcatTraining", MS_DOMAIN)
def ConcatTraining(*inputs, axis=None):
    """Concat, plus the length of each input along ``axis`` (int64) as a second output."""
    if axis is None:
        raise ValueError("ConcatTraining: attribute 'axis' is required")
    if not inputs:
        raise ValueError("ConcatTraining: needs at least one input")
    axis = normalized_axes("ConcatTraining", axis, inputs[0].ndim)[0]
    return (np.concatenate(inputs, axis=axis),
            np.array([x.shape[axis] for x in inputs], dtype=np.int64))


@kernel("Group", MS_DOMAIN)
def Group(*input_tensors):
    return bool_flag(True)
