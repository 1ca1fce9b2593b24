"""Helpers the lowerings share: broadcasting, strides and the WGSL types of tensors."""
from __future__ import annotations

import numpy as np

from ...runtime.program import broadcast_strides, strides  # noqa: F401  (the lowerings' helpers)
from ..errors import NotLowered

MAX_RANK = 6   # dimensions the indexing shaders take


def broadcast_shape(*shapes) -> tuple:
    try:
        return tuple(int(d) for d in np.broadcast_shapes(*shapes))
    except ValueError as e:
        raise ValueError(f"shapes {[list(s) for s in shapes]} do not broadcast") from e


def innermost_first(values, fill) -> list:
    """``values`` (one per dimension, outermost first) reversed and padded to MAX_RANK with ``fill``."""
    if len(values) > MAX_RANK:
        raise NotLowered(f"the WGSL kernel takes at most {MAX_RANK} dimensions, not {len(values)}")
    values = list(values)[::-1]
    return values + [fill] * (MAX_RANK - len(values))


def indexing_params(out_shape, *shapes) -> list:
    """Y's dims then each input's broadcast strides, innermost first (the layout of binary.wgsl and where.wgsl)."""
    params = innermost_first(out_shape, 1)
    for shape in shapes:
        params += innermost_first(broadcast_strides(shape, out_shape), 0)
    return params


def float_only(op: str, *tensors) -> None:
    for t in tensors:
        if t is not None and t.dtype != np.float32:
            raise NotLowered(f"{op} on WebGPU takes float32, not {t.dtype.name}")
