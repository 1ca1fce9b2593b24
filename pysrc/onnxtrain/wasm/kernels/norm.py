"""LayerNormalization and its gradient over float32, normalised over the trailing axes from ``axis``: one executor
op each (web/kernels/norm.c), in ops/norm.py's numpy order of operations (numpy's means: its initial value plus
the row's pairwise sum, over the count), so the bits are the numpy provider's."""
from __future__ import annotations

import numpy as np

from ...ir.ort_names import MS_DOMAIN
from ...runtime.program import NotLowered
from ..lowering import f32_only
from ..registry import wasm_kernel
from .reduce import IDENTITY, ZERO


def _rows(op: str, X, axis: int) -> tuple:
    """(axis, rows, cols) of X normalised over its axes from ``axis``."""
    axis = axis + X.rank if axis < 0 else axis
    if not 0 <= axis < X.rank or X.size == 0:
        raise NotLowered(f"{op}: axis {axis} of {X.describe()}")
    cols = int(np.prod(X.shape[axis:]))
    if cols >= 2 ** 24:
        raise NotLowered(f"{op}: {cols} values per row (the count is not a float32)")
    return axis, X.size // cols, cols


def _per_column(op: str, name: str, t, X, axis: int) -> None:
    """``t`` is one value per column: the shape of X's normalised axes, with leading 1s at most (the C kernel reads
    it so; other broadcasts stay numpy's)."""
    if t is None:
        return
    f32_only(op, t)
    trailing, shape = tuple(X.shape[axis:]), tuple(t.shape)
    while len(shape) > len(trailing) and shape[0] == 1:
        shape = shape[1:]
    if shape != trailing or t.rank > X.rank:
        raise NotLowered(f"{op}: {name} {t.describe()} for {X.describe()} normalised from axis {axis}")


@wasm_kernel("LayerNormalization")
def LayerNormalization(k, X, Scale, B=None, *, axis=-1, epsilon=1e-5, stash_type=1):
    op = "LayerNormalization"
    f32_only(op, X)
    axis, rows, cols = _rows(op, X, axis)
    _per_column(op, "Scale", Scale, X, axis)
    _per_column(op, "B", B, X, axis)
    stat_shape = X.shape[:axis] + (1,) * (X.rank - axis)
    y = k.output(X.shape)
    mean = k.output(stat_shape) if k.used(1) else None
    inv_std = k.output(stat_shape) if k.used(2) else None
    work = k.output((cols,))
    k.call("layernorm", [X, Scale, B], [y, mean, inv_std, work],
           [rows, cols, np.float32(epsilon), IDENTITY, ZERO])
    return y, mean, inv_std


@wasm_kernel("LayerNormalizationGrad", MS_DOMAIN)
def LayerNormalizationGrad(k, Y_grad, X, scale, mean, inv_std_dev, *, axis=-1, epsilon=1e-5, stash_type=1):
    op = "LayerNormalizationGrad"
    f32_only(op, Y_grad, X, mean, inv_std_dev)
    axis, rows, cols = _rows(op, X, axis)
    _per_column(op, "scale", scale, X, axis)
    if Y_grad.shape != X.shape or mean.size != rows or inv_std_dev.size != rows:
        raise NotLowered(f"{op}: Y_grad {Y_grad.describe()}, mean {mean.describe()} and inv_std_dev "
                         f"{inv_std_dev.describe()} for X {X.describe()}")
    want_dscale, want_dbias = k.used(1), k.used(2)
    if (want_dscale or want_dbias) and cols < 2:
        raise NotLowered(f"{op}: one column (numpy sums the scale's gradient pairwise)")
    dx = k.output(X.shape) if k.used(0) else None
    dscale = k.output(scale.shape) if want_dscale else None
    dbias = k.output(scale.shape) if want_dbias else None
    work = k.output((3 * cols,))
    k.call("layernorm_grad", [Y_grad, X, scale, mean, inv_std_dev], [dx, dscale, dbias, work],
           [rows, cols, IDENTITY, ZERO])
    return dx, dscale, dbias
