"""Kernels: Resize (opset 10, 11+) and Upsample (opset 9), as one interpolation matrix per resized axis.

Every mode of the spec is separable: output[o] along an axis is a weighted sum of input positions near
the source coordinate x(o), so the resize is a product of one (out_len x in_len) matrix per axis.  The
weights follow onnx's reference implementation: the neighbours of x are the n positions around
``base = ceil(x) - 1`` (edge-clamped), with the fraction ``r = x - base`` in (0, 1].
"""
from __future__ import annotations

import math

import numpy as np

from . import simd
from .matmul import matmul
from .registry import kernel

COORDINATE_MODES = ("half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners", "asymmetric",
                    "tf_crop_and_resize")
MODES = ("nearest", "linear", "cubic")
NEAREST_MODES = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil")
ASPECT_POLICIES = ("stretch", "not_larger", "not_smaller")


def _source_coordinates(out_len: int, in_len: int, scale: float, mode: str, roi=None) -> np.ndarray:
    """x(o) for every output position o.  ``out_width`` is the unrounded scale * in_len, as the reference
    uses it."""
    o = np.arange(out_len, dtype=np.float64)
    out_width = scale * in_len
    if mode == "half_pixel":
        return (o + 0.5) / scale - 0.5
    if mode == "half_pixel_symmetric":
        offset = in_len / 2 * (1 - out_len / out_width)
        return offset + (o + 0.5) / scale - 0.5
    if mode == "pytorch_half_pixel":
        return (o + 0.5) / scale - 0.5 if out_width != 1 else np.full(out_len, -0.5)
    if mode == "align_corners":
        return o * (in_len - 1) / (out_width - 1) if out_width != 1 else np.zeros(out_len)
    if mode == "asymmetric":
        return o / scale
    if mode == "tf_crop_and_resize":
        if roi is None:
            raise ValueError("Resize: coordinate_transformation_mode 'tf_crop_and_resize' needs the roi input")
        start, end = float(roi[0]), float(roi[1])
        if out_width == 1:
            return np.full(out_len, (end - start) * (in_len - 1) / 2 + start * (in_len - 1))
        return o * (end - start) * (in_len - 1) / (out_width - 1) + start * (in_len - 1)
    raise NotImplementedError(f"Resize: coordinate_transformation_mode {mode!r} is not supported "
                              f"(supported: {', '.join(COORDINATE_MODES)})")


def _nearest_weights(r: np.ndarray, nearest_mode: str) -> np.ndarray:
    """Weights of positions base and base + 1."""
    if nearest_mode == "round_prefer_floor":
        right = r > 0.5
    elif nearest_mode == "round_prefer_ceil":
        right = r >= 0.5
    elif nearest_mode == "floor":
        right = np.zeros(r.shape, bool)
    elif nearest_mode == "ceil":
        right = np.ones(r.shape, bool)
    else:
        raise NotImplementedError(f"Resize: nearest_mode {nearest_mode!r} is not supported "
                                  f"(supported: {', '.join(NEAREST_MODES)})")
    right = right | (r == 1)          # x on a sample: that sample
    return np.stack([~right, right], axis=1).astype(np.float64)


def _cubic_kernel(d: np.ndarray, a: float) -> np.ndarray:
    d = np.abs(d)
    near = ((a + 2) * d - (a + 3)) * d * d + 1
    far = ((a * d - 5 * a) * d + 8 * a) * d - 4 * a
    return np.where(d <= 1, near, np.where(d < 2, far, 0.0))


def _weights(r: np.ndarray, scale: float, mode: str, nearest_mode: str, cubic_coeff_a: float,
             antialias: bool) -> tuple:
    """(weights [out_len, n], offset of the first neighbour from base)."""
    if mode == "nearest":
        if antialias:
            raise NotImplementedError("Resize: antialias is not defined for mode 'nearest'")
        return _nearest_weights(r, nearest_mode), 0
    if mode == "linear" and not antialias:
        return np.stack([1 - r, r], axis=1), 0
    if mode == "cubic" and not antialias:
        return _cubic_kernel(np.stack([r + 1, r, 1 - r, 2 - r], axis=1), cubic_coeff_a), -1
    if mode not in ("linear", "cubic"):
        raise NotImplementedError(f"Resize: mode {mode!r} is not supported (supported: {', '.join(MODES)})")
    # antialias: the kernel stretched by 1/scale when downsampling, normalized to sum 1
    s = min(scale, 1.0)
    start = math.floor(-(1 if mode == "linear" else 2) / s) + 1
    j = np.arange(start, 2 - start)
    d = (j[None, :] - r[:, None]) * s
    w = np.clip(1 - np.abs(d), 0, 1) if mode == "linear" else _cubic_kernel(d, cubic_coeff_a)
    return w / w.sum(axis=1, keepdims=True), start


def interpolation(in_len: int, out_len: int, scale: float, mode: str, coordinate_mode: str,
                  nearest_mode: str = "round_prefer_floor", *, cubic_coeff_a: float = -0.75,
                  exclude_outside: bool = False, antialias: bool = False, roi=None) -> tuple:
    """(M, outside): M (out_len x in_len) with resized = M @ input along one axis, and the output
    positions whose source lies outside the input (tf_crop_and_resize: they take extrapolation_value;
    their rows of M are zero)."""
    x = _source_coordinates(out_len, in_len, scale, coordinate_mode, roi)
    base = np.ceil(x) - 1
    r = x - base
    w, first = _weights(r, scale, mode, nearest_mode, cubic_coeff_a, antialias)
    positions = base[:, None] + first + np.arange(w.shape[1])[None, :]
    if exclude_outside:
        w = np.where((positions < 0) | (positions >= in_len), 0.0, w)
        w = w / w.sum(axis=1, keepdims=True)
    outside = np.zeros(out_len, bool)
    if coordinate_mode == "tf_crop_and_resize":
        outside = (x < 0) | (x > in_len - 1)
        w = np.where(outside[:, None], 0.0, w)
    m = np.zeros((out_len, in_len))
    rows = np.broadcast_to(np.arange(out_len)[:, None], w.shape)
    np.add.at(m, (rows, np.clip(positions, 0, in_len - 1).astype(np.intp)), w)
    return m, outside


def resize_matrix(in_len: int, out_len: int, scale: float, mode: str, coordinate_mode: str,
                  nearest_mode: str = "round_prefer_floor", **options) -> np.ndarray:
    """M (out_len x in_len) with resized = M @ input along one axis (``options``: cubic_coeff_a,
    exclude_outside, antialias, roi).  tf_crop_and_resize's extrapolated positions have zero rows."""
    if in_len == out_len and scale == 1.0 and coordinate_mode != "tf_crop_and_resize":
        return np.eye(in_len)
    return interpolation(in_len, out_len, scale, mode, coordinate_mode, nearest_mode, **options)[0]


def resize_plan(in_shape, scales=None, sizes=None) -> list:
    """[(axis, in_len, out_len, scale)] for every axis that changes size (scales or sizes per axis)."""
    plan = []
    for axis, in_len in enumerate(in_shape):
        if sizes is not None and len(sizes):
            out_len = int(sizes[axis])
            scale = out_len / in_len
        else:
            scale = float(scales[axis])
            out_len = int(np.floor(in_len * scale))
        if out_len != in_len or scale != 1.0:
            plan.append((axis, in_len, out_len, scale))
    return plan


def axis_plan(shape, scales, sizes, axes, policy: str) -> list:
    """[(axis, in_len, out_len, scale)] for every axis Resize acts on (all, or ``axes``), with
    keep_aspect_ratio_policy applied to sizes as onnx's reference does."""
    rank = len(shape)
    axes = list(range(rank)) if axes is None else [a + rank if a < 0 else a for a in axes]
    if sorted(set(axes)) != sorted(axes) or any(not 0 <= a < rank for a in axes):
        raise ValueError(f"Resize: axes {axes} are not distinct axes of a rank-{rank} input")
    given_sizes = sizes is not None and len(sizes) > 0
    values = sizes if given_sizes else scales
    if values is None or len(values) != len(axes):
        raise ValueError(f"Resize: {'sizes' if given_sizes else 'scales'} has {0 if values is None else len(values)} "
                         f"values for {len(axes)} axes")
    if policy not in ASPECT_POLICIES:
        raise NotImplementedError(f"Resize: keep_aspect_ratio_policy {policy!r} is not supported "
                                  f"(supported: {', '.join(ASPECT_POLICIES)})")
    if not given_sizes:
        return [(a, shape[a], int(np.float64(v) * shape[a]), np.float64(v)) for a, v in zip(axes, scales)]
    if policy == "stretch":
        return [(a, shape[a], int(v), int(v) / shape[a]) for a, v in zip(axes, sizes)]
    ratios = [int(v) / shape[a] for a, v in zip(axes, sizes)]
    scale = min(ratios) if policy == "not_larger" else max(ratios)
    return [(a, shape[a], int(scale * shape[a] + 0.5), scale) for a in axes]


def roi_pairs(roi, axes_count: int, plan: list, rank: int, coordinate_mode: str) -> dict:
    """{axis: (start, end)} from roi (all starts, then all ends; over ``axes`` when given)."""
    if coordinate_mode != "tf_crop_and_resize":
        return {}
    if roi is None or len(roi) == 0:
        raise ValueError("Resize: coordinate_transformation_mode 'tf_crop_and_resize' needs the roi input")
    roi = np.asarray(roi, np.float64).ravel()
    if roi.size != 2 * axes_count:
        raise ValueError(f"Resize: roi has {roi.size} values, expected {2 * axes_count}")
    return {axis: (roi[i], roi[axes_count + i]) for i, (axis, *_) in enumerate(plan)}


def apply_along(x: np.ndarray, m: np.ndarray, axis: int) -> np.ndarray:
    if x.dtype == np.float32 and axis >= x.ndim - 2:  # the last two axes: one (SIMD) matrix product, no moves
        m = m.astype(np.float32)
        return matmul(m, x) if axis == x.ndim - 2 else matmul(x, m.T)
    return np.moveaxis(np.tensordot(m, x, axes=([1], [axis])), 0, axis)


def resize(X, roi=None, scales=None, sizes=None, *, coordinate_transformation_mode="half_pixel",
           cubic_coeff_a=-0.75, exclude_outside=0, extrapolation_value=0.0, mode="nearest",
           nearest_mode="round_prefer_floor", antialias=0, axes=None, keep_aspect_ratio_policy="stretch"):
    text = lambda v: v.decode() if isinstance(v, bytes) else v  # noqa: E731
    mode, coordinates = text(mode), text(coordinate_transformation_mode)
    nearest_mode, policy = text(nearest_mode), text(keep_aspect_ratio_policy)
    if mode not in MODES:
        raise NotImplementedError(f"Resize: mode {mode!r} is not supported (supported: {', '.join(MODES)})")
    if antialias and mode == "nearest":
        raise NotImplementedError("Resize: antialias is not defined for mode 'nearest'")
    plan = axis_plan(X.shape, scales, sizes, axes, policy)
    rois = roi_pairs(roi, len(plan), plan, X.ndim, coordinates)
    # float64 as onnx's reference; where the SIMD kernels run (the page, whose numpy has no BLAS), float32 images
    # are resized in float32 by their gemm (as onnxruntime does), many times faster
    y = X if X.dtype == np.float32 and simd.available() else X.astype(np.float64)
    outside = []
    for axis, in_len, out_len, scale in plan:
        if out_len == in_len and scale == 1.0 and axis not in rois:
            continue
        m, out = interpolation(in_len, out_len, scale, mode, coordinates, nearest_mode, cubic_coeff_a=cubic_coeff_a,
                               exclude_outside=bool(exclude_outside), antialias=bool(antialias), roi=rois.get(axis))
        y = apply_along(y, m, axis)
        if out.any():
            outside.append((axis, out))
    for axis, out in outside:
        index = [slice(None)] * y.ndim
        index[axis] = out
        y[tuple(index)] = extrapolation_value
    return _to_type(y, X.dtype)


def _to_type(y: np.ndarray, dtype) -> np.ndarray:
    """Integers truncate as onnx's reference does, clamped to the type's range (cubic overshoots)."""
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        y = np.clip(y, info.min, info.max)
    return y.astype(dtype)


@kernel("Resize", since=11)
def Resize(X, roi=None, scales=None, sizes=None, *, coordinate_transformation_mode="half_pixel",
           cubic_coeff_a=-0.75, exclude_outside=0, extrapolation_value=0.0, mode="nearest",
           nearest_mode="round_prefer_floor", antialias=0, axes=None, keep_aspect_ratio_policy="stretch"):
    return resize(X, roi, scales, sizes, coordinate_transformation_mode=coordinate_transformation_mode,
                  cubic_coeff_a=cubic_coeff_a, exclude_outside=exclude_outside,
                  extrapolation_value=extrapolation_value, mode=mode, nearest_mode=nearest_mode,
                  antialias=antialias, axes=axes, keep_aspect_ratio_policy=keep_aspect_ratio_policy)


@kernel("Resize", since=10)
def Resize_10(X, scales, *, mode="nearest"):
    """Resize-10 (and Upsample): scales only, asymmetric coordinates; nearest takes the sample below
    the source position when enlarging and above it when shrinking, as onnxruntime does."""
    mode = mode.decode() if isinstance(mode, bytes) else mode
    if mode not in ("nearest", "linear"):
        raise NotImplementedError(f"Resize-10: mode {mode!r} is not supported (supported: nearest, linear)")
    y = X.astype(np.float64)
    for axis, in_len, out_len, scale in axis_plan(X.shape, scales, None, None, "stretch"):
        if out_len != in_len or scale != 1.0:
            nearest = "ceil" if scale < 1 else "floor"
            y = apply_along(y, resize_matrix(in_len, out_len, scale, mode, "asymmetric", nearest), axis)
    return _to_type(y, X.dtype)


@kernel("Upsample", since=9)
def Upsample(X, scales, *, mode="nearest"):
    if np.any(np.asarray(scales) < 1):
        raise ValueError(f"Upsample: scales {np.asarray(scales).tolist()} must all be at least 1")
    return Resize_10(X, scales, mode=mode)


@kernel("Upsample", since=7)
def Upsample_7(X, *, mode="nearest", scales):
    return Upsample(X, np.asarray(scales, np.float32), mode=mode)
