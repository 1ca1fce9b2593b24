"""Normalizations (Batch, Layer, Instance) with their training ops and gradients, and Resize / Upsample.

The statistics are reduced by one workgroup per channel or row, each invocation summing a fixed stride and then a
tree in workgroup memory: two runs give the same bits.  Resize runs one pass per resized axis, each output a
weighted sum of a span of inputs: the rows of the CPU kernel's interpolation matrix (ops/resize.py), built on the
host from the scales or sizes known before the run, so every mode, coordinate transformation and antialias
follows the CPU kernel exactly.
"""
from __future__ import annotations

import numpy as np

from ...ir.ort_names import MS_DOMAIN
from ...ops.resize import axis_plan, roi_pairs, interpolation, resize_matrix
from ..errors import NotLowered
from ..lowering import MAX_GROUPS
from ..registry import gpu_kernel
from .common import float_only


def _groups(n: int) -> tuple:
    """One workgroup per item (channel, row, column tile), spread over x and y past the per-dimension limit."""
    n = max(1, int(n))
    if n <= MAX_GROUPS:
        return (n, 1, 1)
    rows = -(-n // MAX_GROUPS)
    return (-(-n // rows), rows, 1)


def _row_workgroup(length: int) -> int:
    """Invocations per row: fewer for short rows, so that small rows do not leave most of a workgroup idle."""
    return 64 if length <= 512 else 256


def _text(v):
    return v.decode() if isinstance(v, bytes) else v


# -- BatchNormalization ------------------------------------------------------------------------------------

def _ncs(op: str, X) -> tuple:
    if X.rank < 2:
        raise ValueError(f"{op}: X must have at least two dimensions (N, C, ...), not {X.describe()}")
    n, c = X.shape[:2]
    return n, c, int(np.prod(X.shape[2:], dtype=np.int64))


def _check_channels(op: str, c: int, *tensors) -> None:
    for t in tensors:
        if t.size != c:
            raise ValueError(f"{op}: a per-channel input is {t.describe()}, expected {c} values")


def batch_norm_apply(k, X, scale, B, mean, stat, epsilon: float, inv_expr: str):
    n, c, s = _ncs("BatchNormalization", X)
    y = k.output(X.shape)
    if X.size:
        k.dispatch("norm_resize_bn_apply", [X, scale, B, mean, stat], [y], [X.size, c, s, float(epsilon)],
                   X.size, INV=inv_expr)
    return y


def batch_norm_stats(k, X, input_mean, input_var, epsilon: float, momentum: float) -> tuple:
    """(batch mean, 1/sqrt(batch variance + epsilon), updated running mean, updated running variance)."""
    n, c, s = _ncs("BatchNormalization", X)
    if n * s == 0:
        raise NotLowered("BatchNormalization in training mode of an empty batch")
    mean, inv = k.output(input_mean.shape), k.output(input_var.shape)
    new_mean, new_var = k.output(input_mean.shape), k.output(input_var.shape)
    k.dispatch("norm_resize_bn_stats", [X, input_mean, input_var], [mean, inv, new_mean, new_var],
               [n, c, s, float(epsilon), float(momentum)], _groups(c))
    return mean, inv, new_mean, new_var


def batch_norm(k, op: str, X, scale, B, input_mean, input_var, epsilon, momentum, training: bool):
    float_only(op, X, scale, B, input_mean, input_var)
    _check_channels(op, _ncs(op, X)[1], scale, B, input_mean, input_var)
    if not training:
        return batch_norm_apply(k, X, scale, B, input_mean, input_var, epsilon, "1.0 / sqrt(STAT[c] + pf(3u))")
    mean, inv, new_mean, new_var = batch_norm_stats(k, X, input_mean, input_var, epsilon, momentum)
    y = batch_norm_apply(k, X, scale, B, mean, inv, epsilon, "STAT[c]")
    return y, new_mean, new_var, mean, inv


@gpu_kernel("BatchNormalization")
def BatchNormalization(k, X, scale, B, input_mean, input_var, *, epsilon=1e-5, momentum=0.9, training_mode=None,
                       spatial=1, is_test=None):
    """Opset 14/15 (training_mode), and opsets 7 and 9, whose training mode is asked by the optional outputs."""
    if not spatial:
        raise NotLowered("BatchNormalization with spatial=0 (per-activation statistics, opsets 6 to 8)")
    if training_mode is not None:
        training = bool(training_mode)
    elif is_test is not None:
        training = not is_test
    else:
        training = sum(1 for o in k.node.outputs if o) > 1
    return batch_norm(k, "BatchNormalization", X, scale, B, input_mean, input_var, epsilon, momentum, training)


@gpu_kernel("BatchNormInternal", MS_DOMAIN)
def BatchNormInternal(k, X, scale, B, input_mean, input_var, *, epsilon=1e-5, momentum=0.9, training_mode=1):
    return batch_norm(k, "BatchNormInternal", X, scale, B, input_mean, input_var, epsilon, momentum,
                      bool(training_mode))


@gpu_kernel("BatchNormalizationGrad", MS_DOMAIN)
def BatchNormalizationGrad(k, dY, X, scale, saved_mean, saved_inv_std, *, epsilon=1e-5):
    op = "BatchNormalizationGrad"
    float_only(op, dY, X, scale, saved_mean, saved_inv_std)
    n, c, s = _ncs(op, X)
    _check_channels(op, c, scale, saved_mean, saved_inv_std)
    if dY.shape != X.shape:
        raise ValueError(f"{op}: dY {dY.describe()} and X {X.describe()} differ in shape")
    if n * s == 0:
        raise NotLowered(f"{op} of an empty batch")
    dscale, dbias = k.output((c,)), k.output((c,))
    k.dispatch("norm_resize_bn_grad_sums", [dY, X, saved_mean, saved_inv_std], [dscale, dbias], [n, c, s],
               _groups(c))
    dX = k.output(X.shape)
    k.dispatch("norm_resize_bn_grad_dx", [dY, X, scale, saved_mean, saved_inv_std, dscale, dbias], [dX],
               [X.size, c, s, float(np.float32(n * s))], X.size)
    return dX, dscale, dbias


# -- LayerNormalization, InstanceNormalization -------------------------------------------------------------

def _row_param(op: str, what: str, t, row_shape) -> None:
    """``t`` (Scale or B) must hold one value per position of a normalized row, in the row's layout."""
    def strip(shape):
        shape = list(shape)
        while shape and shape[0] == 1:
            shape.pop(0)
        return shape
    float_only(op, t)
    if strip(t.shape) != strip(row_shape):
        raise NotLowered(f"{op}'s {what} {t.describe()} broadcasts over a row of {list(row_shape)}")


def normalize_rows(k, X, scale, B, rows: int, length: int, epsilon: float, y_expr: str, c: int = 1) -> tuple:
    """(Y, mean [rows], inv_std [rows]) of X seen as [rows, length], one workgroup per row."""
    bias = B if B is not None else k.known(np.zeros(1, np.float32))
    y, mean, inv = k.output(X.shape), k.output((rows,)), k.output((rows,))
    wg = _row_workgroup(length)
    k.dispatch("norm_resize_rows", [X, scale, bias], [y, mean, inv],
               [rows, length, float(epsilon), c, scale.size, bias.size], _groups(rows), WG=wg, Y=y_expr)
    return y, mean, inv


def _split(X, axis: int) -> tuple:
    axis = axis + X.rank if axis < 0 else axis
    if not 0 <= axis < X.rank:
        raise ValueError(f"axis {axis} is out of range for {X.describe()}")
    return axis, int(np.prod(X.shape[:axis], dtype=np.int64)), int(np.prod(X.shape[axis:], dtype=np.int64))


@gpu_kernel("LayerNormalization")
def LayerNormalization(k, X, Scale, B=None, *, axis=-1, epsilon=1e-5, stash_type=1):
    op = "LayerNormalization"
    float_only(op, X)
    axis, rows, length = _split(X, axis)
    _row_param(op, "Scale", Scale, X.shape[axis:])
    if B is not None:
        _row_param(op, "B", B, X.shape[axis:])
    if rows * length == 0:
        raise NotLowered(f"{op} of an empty tensor")
    y_expr = "(x - mean) * inv * SCALE[j]" + (" + BIAS[j]" if B is not None else "")
    y, mean, inv = normalize_rows(k, X, Scale, B, rows, length, epsilon, y_expr)
    stat_shape = X.shape[:axis] + (1,) * (X.rank - axis)
    return y, k.view(mean, stat_shape), k.view(inv, stat_shape)


@gpu_kernel("InstanceNormalization")
def InstanceNormalization(k, input, scale, B, *, epsilon=1e-5):
    op = "InstanceNormalization"
    float_only(op, input, scale, B)
    n, c, s = _ncs(op, input)
    _check_channels(op, c, scale, B)
    if input.size == 0:
        raise NotLowered(f"{op} of an empty tensor")
    y_expr = "(x - mean) / sd * SCALE[row % pu(3u)] + BIAS[row % pu(3u)]"
    return normalize_rows(k, input, scale, B, n * c, s, epsilon, y_expr, c)[0]


@gpu_kernel("LayerNormalizationGrad", MS_DOMAIN)
def LayerNormalizationGrad(k, Y_grad, X, scale, mean, inv_std_dev, *, axis=-1, epsilon=1e-5, stash_type=1):
    op = "LayerNormalizationGrad"
    float_only(op, Y_grad, X, scale, mean, inv_std_dev)
    axis, rows, length = _split(X, axis)
    _row_param(op, "scale", scale, X.shape[axis:])
    if Y_grad.shape != X.shape or mean.size != rows or inv_std_dev.size != rows:
        raise ValueError(f"{op}: Y_grad {Y_grad.describe()}, mean {mean.describe()} and inv_std_dev "
                         f"{inv_std_dev.describe()} do not fit X {X.describe()} normalized from axis {axis}")
    if rows * length == 0:
        raise NotLowered(f"{op} of an empty tensor")
    dX = k.output(X.shape)
    k.dispatch("norm_resize_ln_grad_rows", [Y_grad, X, scale, mean, inv_std_dev], [dX], [rows, length, scale.size],
               _groups(rows), WG=_row_workgroup(length))
    dscale, dbias = k.output(scale.shape), k.output(scale.shape)
    k.dispatch("norm_resize_ln_grad_cols", [Y_grad, X, mean, inv_std_dev], [dscale, dbias], [rows, length],
               _groups(-(-length // 32)))
    return dX, dscale, dbias


# -- Resize, Upsample ------------------------------------------------------------------------------------

def _spans(m: np.ndarray) -> tuple:
    """(SPAN int32 [out, 2]: first input and count per output, W float32 [out, taps]) of a matrix's rows, each
    cut to the span of its nonzero weights."""
    out_len = m.shape[0]
    nonzero = m != 0
    any_ = nonzero.any(axis=1)
    first = np.where(any_, nonzero.argmax(axis=1), 0)
    last = np.where(any_, m.shape[1] - 1 - nonzero[:, ::-1].argmax(axis=1), -1)
    count = last - first + 1
    taps = max(1, int(count.max()) if out_len else 1)
    weights = np.zeros((out_len, taps), np.float32)
    for o in range(out_len):
        weights[o, :count[o]] = m[o, first[o]:first[o] + count[o]]
    return np.stack([first, count], axis=1).astype(np.int32), weights


def resize_axis(k, X, axis: int, m: np.ndarray):
    """X resized along ``axis`` by the interpolation matrix ``m`` [out_len, in_len]."""
    out_len, in_len = m.shape
    shape = X.shape[:axis] + (out_len,) + X.shape[axis + 1:]
    y = k.output(shape)
    if y.size:
        span, weights = _spans(m)
        inner = int(np.prod(X.shape[axis + 1:], dtype=np.int64))
        k.dispatch("norm_resize_resize_axis", [X, k.known(span), k.known(weights)], [y],
                   [y.size, max(inner, 1), out_len, in_len, weights.shape[1]], y.size)
    return y


def resize_passes(k, X, matrices: list):
    """X through one pass per (axis, matrix), in axis order as the CPU kernel; a copy when nothing changes."""
    if not matrices:
        return k.view(X, X.shape)
    if X.size == 0:
        raise NotLowered("Resize of an empty tensor")
    for axis, m in matrices:
        X = resize_axis(k, X, axis, m)
    return X


def _known_list(k, t, what: str):
    if t is None:
        return None
    v = np.asarray(k.value(t, what))
    return v if v.size else None


@gpu_kernel("Resize")
def Resize(k, X, roi=None, scales=None, sizes=None, *, coordinate_transformation_mode="half_pixel",
           cubic_coeff_a=-0.75, exclude_outside=0, extrapolation_value=0.0, mode="nearest",
           nearest_mode="round_prefer_floor", antialias=0, axes=None, keep_aspect_ratio_policy="stretch"):
    """Resize-11 to 19 with scales or sizes known before the run; Resize-10 (X, scales) too."""
    float_only("Resize", X)
    if len(k.node.inputs) == 2:   # Resize-10: (X, scales)
        return _resize_10(k, X, roi, mode)
    mode, coordinates = _text(mode), _text(coordinate_transformation_mode)
    scales_v = _known_list(k, scales, "Resize's scales")
    sizes_v = _known_list(k, sizes, "Resize's sizes")
    if scales_v is None and sizes_v is None:
        raise ValueError("Resize: needs scales or sizes")
    plan = axis_plan(X.shape, scales_v, sizes_v, axes, _text(keep_aspect_ratio_policy))
    roi_v = None if coordinates != "tf_crop_and_resize" else _known_list(k, roi, "Resize's roi")
    rois = roi_pairs(roi_v, len(plan), plan, X.rank, coordinates)
    matrices = []
    for axis, in_len, out_len, scale in sorted(plan):
        if out_len == in_len and scale == 1.0 and axis not in rois:
            continue
        m, outside = interpolation(in_len, out_len, scale, mode, coordinates, _text(nearest_mode),
                                   cubic_coeff_a=cubic_coeff_a, exclude_outside=bool(exclude_outside),
                                   antialias=bool(antialias), roi=rois.get(axis))
        if outside.any():
            raise NotLowered("Resize tf_crop_and_resize with positions outside the input (extrapolation_value)")
        matrices.append((axis, m))
    return resize_passes(k, X, matrices)


def _resize_10(k, X, scales, mode):
    mode = _text(mode)
    if mode not in ("nearest", "linear"):
        raise NotImplementedError(f"Resize-10: mode {mode!r} is not supported (supported: nearest, linear)")
    scales_v = np.asarray(k.value(scales, "Resize's scales"))
    matrices = []
    for axis, in_len, out_len, scale in axis_plan(X.shape, scales_v, None, None, "stretch"):
        if out_len != in_len or scale != 1.0:
            nearest = "ceil" if scale < 1 else "floor"
            matrices.append((axis, resize_matrix(in_len, out_len, scale, mode, "asymmetric", nearest)))
    return resize_passes(k, X, matrices)


@gpu_kernel("Upsample")
def Upsample(k, X, scales=None, *, mode="nearest"):
    """Upsample-9 (scales an input) and Upsample-7 (scales an attribute)."""
    float_only("Upsample", X)
    values = np.asarray(scales if not hasattr(scales, "shape") else k.value(scales, "Upsample's scales"))
    if np.any(values < 1):
        raise ValueError(f"Upsample: scales {values.tolist()} must all be at least 1")
    return _resize_10(k, X, k.known(values.astype(np.float32)), mode)
