"""Gradient rules of the normalizations (ops/norm.py)."""
from __future__ import annotations

import numpy as np

from ._emit import matmul_along, reduce, reduce_mean, reduce_sum, reshape, reshape_like
from ._registry import rule


def _standardized(c, x, axes, eps):
    """(x_hat, 1/std) of ``x`` over ``axes``."""
    centered = x - reduce_mean(c, x, axes)
    inv = (reduce_mean(c, centered * centered, axes) + eps).sqrt().reciprocal()
    return centered * inv, inv


def _standardized_grad(c, dx_hat, x_hat, inv, axes):
    """d x from d x_hat: (dx_hat - mean(dx_hat) - x_hat * mean(dx_hat * x_hat)) / std."""
    return inv * (dx_hat - reduce_mean(c, dx_hat, axes) - x_hat * reduce_mean(c, dx_hat * x_hat, axes))


def _normalized_grads(c, x, dy, scale, axes, eps):
    """(dx, dy * x_hat) for y = x_hat * scale + bias, x_hat normalized over ``axes`` with batch statistics;
    ``scale`` already broadcastable to x."""
    x_hat, inv = _standardized(c, x, axes, eps)
    return _standardized_grad(c, dy * scale, x_hat, inv, axes), dy * x_hat


def _per_channel(c, v, rank):
    return reshape(c, v, [1, -1] + [1] * (rank - 2))


@rule("BatchNormalization")
def _batch_norm(c, x, y, dy):
    rank = len(c.shape(x[0]))
    eps = c.node.attr("epsilon", 1e-5)
    stat_axes = [0] + list(range(2, rank))
    if not c.node.attr("spatial", 1):
        raise NotImplementedError(f"{c.where()}: the BatchNormalization gradient needs spatial=1")
    training = c.node.attr("training_mode", 0) or (c.opset < 14 and len([o for o in y if o]) > 1)
    if training:
        dx, dy_xhat = _normalized_grads(c, x[0], dy[0], _per_channel(c, x[1], rank), stat_axes, eps)
    else:
        inv = (x[4] + eps).sqrt().reciprocal()
        dx = dy[0] * _per_channel(c, x[1] * inv, rank)
        dy_xhat = dy[0] * ((x[0] - _per_channel(c, x[3], rank)) * _per_channel(c, inv, rank))
    return [dx, reduce_sum(c, dy_xhat, stat_axes, keepdims=0), reduce_sum(c, dy[0], stat_axes, keepdims=0)]


@rule("LayerNormalization")
def _layer_norm(c, x, y, dy):
    rank = len(c.shape(x[0]))
    axis = c.node.attr("axis", -1)
    axis = axis + rank if axis < 0 else axis
    dx, dy_xhat = _normalized_grads(c, x[0], dy[0], x[1], list(range(axis, rank)), c.node.attr("epsilon", 1e-5))
    outer = list(range(axis))
    total = (lambda v: reduce_sum(c, v, outer, keepdims=0)) if outer else (lambda v: v)
    return [dx, total(dy_xhat), total(dy[0])][:len(x)]


@rule("InstanceNormalization")
def _instance_norm(c, x, y, dy):
    rank = len(c.shape(x[0]))
    dx, dy_xhat = _normalized_grads(c, x[0], dy[0], _per_channel(c, x[1], rank), list(range(2, rank)),
                                    c.node.attr("epsilon", 1e-5))
    outer = [0] + list(range(2, rank))
    return [dx, reduce_sum(c, dy_xhat, outer, keepdims=0), reduce_sum(c, dy[0], outer, keepdims=0)]


@rule("GroupNormalization")
def _group_norm(c, x, y, dy):
    """Standardized per (sample, group) on [N, G, -1]; opset 18 scales per group, opset 21 per channel."""
    rank, groups = len(c.shape(x[0])), c.node.attr("num_groups")
    grouped = lambda v: reshape(c, v, [0, groups, -1], "grouped")  # noqa: E731
    x_hat, inv = _standardized(c, grouped(x[0]), [2], c.node.attr("epsilon", 1e-5))
    if c.opset >= 21:
        outer = [0] + list(range(2, rank))
        dx_hat = grouped(dy[0] * _per_channel(c, x[1], rank))
        dscale = reduce_sum(c, dy[0] * reshape_like(c, x_hat, x[0]), outer, keepdims=0)
        dbias = reduce_sum(c, dy[0], outer, keepdims=0)
    else:
        dy_g = grouped(dy[0])
        dx_hat = dy_g * reshape(c, x[1], [-1, 1])
        dscale, dbias = reduce_sum(c, dy_g * x_hat, [0, 2], keepdims=0), reduce_sum(c, dy_g, [0, 2], keepdims=0)
    return [reshape_like(c, _standardized_grad(c, dx_hat, x_hat, inv, [2]), x[0]), dscale, dbias]


@rule("LpNormalization")
def _lp_normalization(c, x, y, dy):
    """y = x / n: dx = (dy - s * sum(dy * y)) / n, s = y for p = 2 and sign(x) for p = 1."""
    axis, p = c.node.attr("axis", -1), c.node.attr("p", 2)
    if p not in (1, 2):
        raise NotImplementedError(f"{c.where()}: the LpNormalization gradient needs p = 1 or 2")
    op = "ReduceL2" if p == 2 else "ReduceL1"
    norm = reduce(c, op, x[0], [axis])
    s = y[0] if p == 2 else x[0].sign()
    return [(dy[0] - s * reduce_sum(c, dy[0] * y[0], [axis], keepdims=1)) / norm]


@rule("MeanVarianceNormalization")
def _mean_variance_normalization(c, x, y, dy):
    """y = u / d, u = x - mean, d = std + 1e-9: dx = (dy - mean(dy)) / d - u * mean(dy * u) / (d^2 std)."""
    axes = [int(a) for a in c.node.attr("axes") or (0, 2, 3)]
    u = x[0] - reduce_mean(c, x[0], axes)
    std = reduce_mean(c, u * u, axes).sqrt()
    d = std + 1e-9
    return [(dy[0] - reduce_mean(c, dy[0], axes)) / d - u * reduce_mean(c, dy[0] * u, axes) / (d * d * std)]


@rule("LRN")
def _lrn(c, x, y, dy):
    """y = x * s^-beta, s = bias + alpha / size * (window sum of x^2 over channels):
    dx = dy * s^-beta - 2 alpha beta / size * x * (window sum, transposed, of dy * x * s^(-beta - 1))."""
    n = c.node
    size, alpha, beta, bias = n.attr("size"), n.attr("alpha", 1e-4), n.attr("beta", 0.75), n.attr("bias", 1.0)
    channels, rank = c.shape(x[0])[1], len(c.shape(x[0]))
    if not isinstance(channels, int):
        raise NotImplementedError(f"{c.where()}: the LRN gradient needs a static channel count")
    before = (size - 1) // 2
    offset = np.arange(channels)[None, :] - np.arange(channels)[:, None]  # [source, target]: target - source
    band = ((offset >= -(size - 1 - before)) & (offset <= before)).astype(c.dtype(x[0]))
    s = matmul_along(c, x[0] * x[0], 1, rank, band) * (alpha / size) + bias
    back = matmul_along(c, dy[0] * x[0] * s ** (-beta - 1), 1, rank, band.T.copy())
    return [dy[0] * s ** -beta - x[0] * back * (2 * alpha * beta / size)]
