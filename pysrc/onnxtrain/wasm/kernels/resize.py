"""Resize of float32 over its last two axes, as ops/resize.py runs it where the kernels are loaded: one
interpolation matrix per resized axis (computed here, from the static shapes, by the numpy kernel's own
``interpolation``), applied by the C gemm as its matmul does (M @ X along the rows, X @ M.T along the columns)."""
from __future__ import annotations

import numpy as np

from ...ops import resize as resize_ops
from ...runtime.program import NotLowered
from ..lowering import f32_only
from ..registry import wasm_kernel
from .matrix import Operand, matmul


def _text(v):
    return v.decode() if isinstance(v, bytes) else v


@wasm_kernel("Resize")
def Resize(k, X, roi=None, scales=None, sizes=None, *, coordinate_transformation_mode="half_pixel",
           cubic_coeff_a=-0.75, exclude_outside=0, extrapolation_value=0.0, mode="nearest",
           nearest_mode="round_prefer_floor", antialias=0, axes=None, keep_aspect_ratio_policy="stretch"):
    if k.opset is not None and k.opset < 11:
        raise NotLowered("Resize before opset 11")
    f32_only("Resize", X)
    mode, coordinates = _text(mode), _text(coordinate_transformation_mode)
    nearest_mode, policy = _text(nearest_mode), _text(keep_aspect_ratio_policy)
    if mode not in resize_ops.MODES or (antialias and mode == "nearest") or coordinates == "tf_crop_and_resize":
        raise NotLowered(f"Resize: mode {mode!r}, antialias {antialias}, coordinates {coordinates!r}")
    scales = k.value(scales, "Resize's scales")
    sizes = k.value(sizes, "Resize's sizes")
    try:
        plan = resize_ops.axis_plan(X.shape, scales, sizes, axes, policy)
    except (ValueError, NotImplementedError) as e:
        raise NotLowered(f"Resize: {e}") from None
    y = X
    for axis, in_len, out_len, scale in plan:
        if out_len == in_len and scale == 1.0:
            continue
        if axis < X.rank - 2:
            raise NotLowered(f"Resize of {X.describe()} along axis {axis} (the C gemm resizes the last two)")
        try:
            m, outside = resize_ops.interpolation(
                in_len, out_len, scale, mode, coordinates, nearest_mode, cubic_coeff_a=cubic_coeff_a,
                exclude_outside=bool(exclude_outside), antialias=bool(antialias))
        except (ValueError, NotImplementedError) as e:
            raise NotLowered(f"Resize: {e}") from None
        if outside.any():
            raise NotLowered("Resize with positions outside the input")
        m = Operand(k.known(m.astype(np.float32)))
        y = matmul(k, m, Operand(y)) if axis == X.rank - 2 else matmul(k, Operand(y), m.T)
    return y if y is not X else k.view(X, X.shape)
