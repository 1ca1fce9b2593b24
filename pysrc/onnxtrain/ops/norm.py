"""Kernels: the normalizations (Batch, Layer, Instance, Group, Lp, MeanVariance) and LRN."""
from __future__ import annotations

import numpy as np

from ..ir.ort_names import MS_DOMAIN
from .registry import kernel


def _channel(v, ndim):
    return v.reshape((1, -1) + (1,) * (ndim - 2))


def batch_norm(X, scale, B, input_mean, input_var, epsilon, momentum, training, spatial=1):
    """Y (and, training, the running mean and variance, then the batch mean and 1/sqrt(var + epsilon), the
    "saved variance" onnxruntime returns).  spatial=0 (opsets
    6 to 8) normalizes every activation on its own: the statistics have shape [C, D1..Dn]."""
    stat = (lambda v: v.reshape((1,) + X.shape[1:])) if not spatial else (lambda v: _channel(v, X.ndim))
    if not training:
        inv = 1 / np.sqrt(input_var + X.dtype.type(epsilon))
        y = (X - stat(input_mean)) * stat(inv * scale) + stat(B)
        return (y.astype(X.dtype, copy=False),)
    axes = (0,) + tuple(range(2, X.ndim)) if spatial else (0,)
    mean = X.mean(axis=axes).reshape(input_mean.shape)
    var = X.var(axis=axes).reshape(input_var.shape)
    inv = 1 / np.sqrt(var + X.dtype.type(epsilon))
    y = (X - stat(mean)) * stat(inv * scale) + stat(B)
    m = X.dtype.type(momentum)
    running_mean = input_mean * m + mean * (1 - m)
    running_var = input_var * m + var * (1 - m)
    return (y.astype(X.dtype, copy=False), running_mean.astype(input_mean.dtype, copy=False),
            running_var.astype(input_var.dtype, copy=False), mean.astype(X.dtype, copy=False),
            inv.astype(X.dtype, copy=False))


@kernel("BatchNormalization", since=6)
def BatchNormalization_6(X, scale, B, input_mean, input_var, *, epsilon=1e-5, is_test=0, momentum=0.9, spatial=1):
    return batch_norm(X, scale, B, input_mean, input_var, epsilon, momentum, not is_test, spatial)


@kernel("BatchNormalization", since=7)
def BatchNormalization_7(X, scale, B, input_mean, input_var, *, epsilon=1e-5, momentum=0.9, spatial=1,
                         _outputs=(True,)):
    return batch_norm(X, scale, B, input_mean, input_var, epsilon, momentum, len(_outputs) > 1, spatial)


@kernel("BatchNormalization", since=9)
def BatchNormalization_9(X, scale, B, input_mean, input_var, *, epsilon=1e-5, momentum=0.9,
                         _outputs=(True,)):
    return batch_norm(X, scale, B, input_mean, input_var, epsilon, momentum, len(_outputs) > 1)


@kernel("BatchNormalization", since=14)
def BatchNormalization_14(X, scale, B, input_mean, input_var, *, epsilon=1e-5, momentum=0.9, training_mode=0):
    return batch_norm(X, scale, B, input_mean, input_var, epsilon, momentum, bool(training_mode))


@kernel("LayerNormalization", since=17)
def LayerNormalization(X, Scale, B=None, *, axis=-1, epsilon=1e-5, stash_type=1):
    axis = axis + X.ndim if axis < 0 else axis
    axes = tuple(range(axis, X.ndim))
    x = X.astype(np.float32) if stash_type == 1 and X.dtype != np.float64 else X
    mean = x.mean(axis=axes, keepdims=True)
    inv_std = 1 / np.sqrt(((x - mean) ** 2).mean(axis=axes, keepdims=True) + x.dtype.type(epsilon))
    y = (x - mean) * inv_std * Scale
    if B is not None:
        y = y + B
    return y.astype(X.dtype, copy=False), mean, inv_std


@kernel("LayerNormalizationGrad", domain=MS_DOMAIN)
def LayerNormalizationGrad(Y_grad, X, scale, mean, inv_std_dev, *, axis=-1, epsilon=1e-5, stash_type=1):
    """(X_grad, scale_grad, bias_grad) of LayerNormalization, from the mean and 1/std its forward returned."""
    axis = axis + X.ndim if axis < 0 else axis
    norm_axes, batch_axes = tuple(range(axis, X.ndim)), tuple(range(axis))
    x_hat = (X - mean) * inv_std_dev
    dx_hat = Y_grad * scale
    X_grad = inv_std_dev * (dx_hat - dx_hat.mean(axis=norm_axes, keepdims=True)
                            - x_hat * (dx_hat * x_hat).mean(axis=norm_axes, keepdims=True))
    scale_grad = (Y_grad * x_hat).sum(axis=batch_axes).reshape(scale.shape)
    bias_grad = Y_grad.sum(axis=batch_axes).reshape(scale.shape)
    return X_grad.astype(X.dtype, copy=False), scale_grad.astype(scale.dtype, copy=False), \
        bias_grad.astype(scale.dtype, copy=False)


def _standardize(x, axes, epsilon):
    mean = x.mean(axis=axes, keepdims=True)
    return (x - mean) / np.sqrt(((x - mean) ** 2).mean(axis=axes, keepdims=True) + x.dtype.type(epsilon))


@kernel("InstanceNormalization", since=6)
def InstanceNormalization(input, scale, B, *, epsilon=1e-5):
    y = _standardize(input, tuple(range(2, input.ndim)), epsilon) * _channel(scale, input.ndim) \
        + _channel(B, input.ndim)
    return y.astype(input.dtype, copy=False)


def _group_standardize(X, num_groups, epsilon, dtype):
    if num_groups < 1:
        raise ValueError(f"GroupNormalization: attribute num_groups must be given and positive, not {num_groups}")
    if X.shape[1] % num_groups:
        raise ValueError(f"GroupNormalization: {X.shape[1]} channels do not split into {num_groups} groups")
    grouped = X.astype(dtype, copy=False).reshape(X.shape[0], num_groups, -1)
    return _standardize(grouped, (2,), epsilon)


@kernel("GroupNormalization", since=18)
def GroupNormalization_18(X, scale, bias, *, num_groups=0, epsilon=1e-5):
    """Opset 18: one scale and bias per group."""
    y = _group_standardize(X, num_groups, epsilon, X.dtype) * scale.reshape(-1, 1) + bias.reshape(-1, 1)
    return y.reshape(X.shape).astype(X.dtype, copy=False)


@kernel("GroupNormalization", since=21)
def GroupNormalization_21(X, scale, bias, *, num_groups=0, epsilon=1e-5, stash_type=1):
    """Opset 21: one scale and bias per channel; stash_type=1 standardizes in float32."""
    if stash_type != 1:
        raise NotImplementedError(f"GroupNormalization: stash_type={stash_type} is not supported")
    dtype = np.float64 if X.dtype == np.float64 else np.float32
    y = _group_standardize(X, num_groups, epsilon, dtype).reshape(X.shape).astype(X.dtype, copy=False)
    return (y * _channel(scale, X.ndim) + _channel(bias, X.ndim)).astype(X.dtype, copy=False)


@kernel("LpNormalization")
def LpNormalization(input, *, axis=-1, p=2):
    if p == 1:
        norm = np.abs(input).sum(axis=axis, keepdims=True)
    elif p == 2:
        norm = np.sqrt((input * input).sum(axis=axis, keepdims=True))
    else:
        raise NotImplementedError(f"LpNormalization: p={p} is not supported (only 1 and 2)")
    return (input / norm).astype(input.dtype, copy=False)


@kernel("MeanVarianceNormalization", since=9)
def MeanVarianceNormalization(X, *, axes=(0, 2, 3)):
    """(X - mean) / (std + 1e-9), std from E[X^2] - E[X]^2 as the ONNX function computes it."""
    axes = tuple(int(a) for a in axes)
    mean = X.mean(axis=axes, keepdims=True)
    std = np.sqrt((X * X).mean(axis=axes, keepdims=True) - mean * mean)
    return ((X - mean) / (std + X.dtype.type(1e-9))).astype(X.dtype, copy=False)


@kernel("LRN")
def LRN(X, *, size=0, alpha=1e-4, beta=0.75, bias=1.0):
    """X / (bias + alpha / size * sum of squares over the ``size`` channels around each one) ** beta."""
    if size < 1:
        raise ValueError(f"LRN: attribute size must be given and positive, not {size}")
    squares = X * X
    before = (size - 1) // 2
    padded = np.pad(squares, [(0, 0), (before, size - 1 - before)] + [(0, 0)] * (X.ndim - 2))
    window = sum(padded[:, k:k + X.shape[1]] for k in range(size))
    return (X / (X.dtype.type(bias) + X.dtype.type(alpha / size) * window) ** X.dtype.type(beta)).astype(X.dtype,
                                                                                                          copy=False)
