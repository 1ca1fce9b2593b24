"""Kernels: BatchNormalization and LayerNormalization."""
from __future__ import annotations

import numpy as np

from .registry import kernel


def _channel(v, ndim):
    return v.reshape((1, -1) + (1,) * (ndim - 2))


def _batch_norm(X, scale, B, input_mean, input_var, epsilon, momentum, training):
    if not training:
        inv = 1 / np.sqrt(input_var + X.dtype.type(epsilon))
        y = (X - _channel(input_mean, X.ndim)) * _channel(inv * scale, X.ndim) + _channel(B, X.ndim)
        return (y.astype(X.dtype, copy=False),)
    axes = (0,) + tuple(range(2, X.ndim))
    mean = X.mean(axis=axes)
    var = X.var(axis=axes)
    inv = 1 / np.sqrt(var + X.dtype.type(epsilon))
    y = (X - _channel(mean, X.ndim)) * _channel(inv * scale, X.ndim) + _channel(B, X.ndim)
    m = X.dtype.type(momentum)
    running_mean = input_mean * m + mean * (1 - m)
    running_var = input_var * m + var * (1 - m)
    return (y.astype(X.dtype, copy=False), running_mean.astype(input_mean.dtype, copy=False),
            running_var.astype(input_var.dtype, copy=False))


@kernel("BatchNormalization", since=9)
def BatchNormalization_9(X, scale, B, input_mean, input_var, *, epsilon=1e-5, momentum=0.9,
                         _outputs=(True,)):
    return _batch_norm(X, scale, B, input_mean, input_var, epsilon, momentum, len(_outputs) > 1)


@kernel("BatchNormalization", since=14)
def BatchNormalization_14(X, scale, B, input_mean, input_var, *, epsilon=1e-5, momentum=0.9, training_mode=0):
    return _batch_norm(X, scale, B, input_mean, input_var, epsilon, momentum, bool(training_mode))


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


@kernel("LayerNormalizationGrad", domain="com.microsoft")
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
