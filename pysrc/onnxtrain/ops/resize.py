"""Kernels: Resize (nearest and linear, opset 11+) as one interpolation matrix per resized axis."""
from __future__ import annotations

import numpy as np

from .registry import kernel

COORDINATE_MODES = ("half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric")


def _source_coordinates(out_len: int, in_len: int, scale: float, mode: str) -> np.ndarray:
    o = np.arange(out_len, dtype=np.float64)
    if mode == "half_pixel":
        return (o + 0.5) / scale - 0.5
    if mode == "pytorch_half_pixel":
        return (o + 0.5) / scale - 0.5 if out_len > 1 else np.zeros(out_len)
    if mode == "align_corners":
        return o * (in_len - 1) / (out_len - 1) if out_len > 1 else np.zeros(out_len)
    if mode == "asymmetric":
        return o / scale
    raise NotImplementedError(f"Resize: coordinate_transformation_mode {mode!r} is not supported "
                              f"(supported: {', '.join(COORDINATE_MODES)})")


def _nearest(x: np.ndarray, nearest_mode: str) -> np.ndarray:
    if nearest_mode == "round_prefer_floor":
        return np.where(x - np.floor(x) == 0.5, np.floor(x), np.round(x))
    if nearest_mode == "round_prefer_ceil":
        return np.floor(x + 0.5)
    if nearest_mode == "floor":
        return np.floor(x)
    if nearest_mode == "ceil":
        return np.ceil(x)
    raise ValueError(f"Resize: unknown nearest_mode {nearest_mode!r}")


def resize_matrix(in_len: int, out_len: int, scale: float, mode: str, coordinate_mode: str,
                  nearest_mode: str = "round_prefer_floor") -> np.ndarray:
    """M (out_len x in_len) with resized = M @ input along one axis."""
    m = np.zeros((out_len, in_len))
    if in_len == out_len and scale == 1.0:
        return np.eye(in_len)
    x = _source_coordinates(out_len, in_len, scale, coordinate_mode)
    rows = np.arange(out_len)
    if mode == "nearest":
        np.add.at(m, (rows, np.clip(_nearest(x, nearest_mode), 0, in_len - 1).astype(np.intp)), 1.0)
    elif mode == "linear":
        lo = np.floor(x)
        frac = x - lo
        for idx, w in ((lo, 1 - frac), (lo + 1, frac)):
            np.add.at(m, (rows, np.clip(idx, 0, in_len - 1).astype(np.intp)), w)
    else:
        raise NotImplementedError(f"Resize: mode {mode!r} is not supported (nearest and linear are)")
    return m


def resize_plan(in_shape, scales=None, sizes=None) -> list:
    """[(axis, in_len, out_len, scale)] for every axis that changes size."""
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


def apply_along(x: np.ndarray, m: np.ndarray, axis: int) -> np.ndarray:
    return np.moveaxis(np.tensordot(m, x, axes=([1], [axis])), 0, axis)


@kernel("Resize", since=11)
def Resize(X, roi=None, scales=None, sizes=None, *, coordinate_transformation_mode="half_pixel",
           cubic_coeff_a=-0.75, exclude_outside=0, extrapolation_value=0.0, mode="nearest",
           nearest_mode="round_prefer_floor", antialias=0, axes=None, keep_aspect_ratio_policy="stretch"):
    if antialias or axes is not None or keep_aspect_ratio_policy != "stretch" or exclude_outside:
        raise NotImplementedError("Resize: antialias, axes, keep_aspect_ratio_policy and exclude_outside are "
                                  "not supported")
    y = X.astype(np.float64)
    for axis, in_len, out_len, scale in resize_plan(X.shape, scales, sizes):
        y = apply_along(y, resize_matrix(in_len, out_len, scale, mode, coordinate_transformation_mode,
                                         nearest_mode), axis)
    return y.astype(X.dtype)
