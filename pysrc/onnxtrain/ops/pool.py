"""Kernels: MaxPool (with Indices), MaxPoolGrad, AveragePool and the global pools."""
from __future__ import annotations

import numpy as np

from .conv import _windows, conv_geometry
from .registry import kernel


def _pooled(X, fill, kernel_shape, strides, pads, dilations, auto_pad, ceil_mode):
    """(padded input, out shape, pads, strides, dilations); the input is padded with ``fill`` far enough
    for every window, including the partial ones ceil_mode adds."""
    nd = X.ndim - 2
    pads, out, strides, dilations = conv_geometry(X.shape[2:], kernel_shape, strides, pads, dilations, auto_pad,
                                                  ceil_mode)
    ends = [max(pads[i + nd], (out[i] - 1) * strides[i] + (kernel_shape[i] - 1) * dilations[i] + 1
                - X.shape[2 + i] - pads[i]) for i in range(nd)]
    widths = [(0, 0), (0, 0)] + [(pads[i], ends[i]) for i in range(nd)]
    xp = np.pad(X, widths, constant_values=fill) if any(pads) or any(ends) else X
    return xp, out, pads, strides, dilations, widths


@kernel("MaxPool", since=8)
def MaxPool(X, *, auto_pad="NOTSET", ceil_mode=0, dilations=None, kernel_shape, pads=None, storage_order=0,
            strides=None, _outputs=(True, False)):
    fill = -np.inf if X.dtype.kind == "f" else np.iinfo(X.dtype).min
    xp, out, pads, strides, dilations, _ = _pooled(X, fill, kernel_shape, strides, pads, dilations, auto_pad,
                                                   ceil_mode)
    views = [xp[index] for index in _windows(xp, out, strides, dilations, kernel_shape)]
    if not (len(_outputs) > 1 and _outputs[1]):
        Y = views[0].copy()
        for v in views[1:]:
            np.maximum(Y, v, out=Y)
        return Y
    stacked = np.stack(views)                       # K, N, C, *out
    best = np.argmax(stacked, axis=0)
    Y = np.take_along_axis(stacked, best[None], axis=0)[0]
    nd = len(out)
    offsets = np.array(list(np.ndindex(*kernel_shape)))   # K, nd
    spatial = X.shape[2:]
    flat = np.zeros(best.shape, dtype=np.int64)
    for i in range(nd):
        grid_shape = [1] * (2 + nd)
        grid_shape[2 + i] = out[i]
        coord = (np.arange(out[i]).reshape(grid_shape) * strides[i] - pads[i]
                 + offsets[:, i][best] * dilations[i])
        if storage_order:
            flat = flat + coord * int(np.prod(spatial[:i], dtype=np.int64))
        else:
            flat = flat * spatial[i] + coord
    plane = int(np.prod(spatial, dtype=np.int64))
    nc = (np.arange(X.shape[0]).reshape([-1] + [1] * (nd + 1)) * X.shape[1]
          + np.arange(X.shape[1]).reshape([1, -1] + [1] * nd))
    return Y, flat + nc * plane


@kernel("MaxPoolGrad")
def MaxPoolGrad(dY, Indices, *, auto_pad="NOTSET", ceil_mode=0, dilations=None, kernel_shape=None, pads=None,
                storage_order=0, strides=None, _output_shapes=(None,)):
    shape = _output_shapes[0]
    if shape is None or not all(isinstance(d, int) for d in shape[1:]):
        raise ValueError("MaxPoolGrad needs the static shape of its output (the MaxPool input) in the graph's "
                         f"value_info; found {shape}")
    shape = [dY.shape[0]] + list(shape[1:])
    size = int(np.prod(shape, dtype=np.int64))
    dX = np.bincount(Indices.ravel().astype(np.intp), weights=dY.ravel(), minlength=size)  # intp: wasm32
    return dX[:size].astype(dY.dtype).reshape(shape)


@kernel("AveragePool", since=7)
def AveragePool(X, *, auto_pad="NOTSET", ceil_mode=0, count_include_pad=0, dilations=None, kernel_shape,
                pads=None, strides=None):
    xp, out, pads, strides, dilations, widths = _pooled(X, 0, kernel_shape, strides, pads, dilations, auto_pad,
                                                        ceil_mode)
    nd = len(out)
    total = np.zeros(X.shape[:2] + tuple(out), dtype=np.float64 if X.dtype == np.float64 else np.float32)
    # With count_include_pad every window counts its full size (also the partial windows of ceil_mode,
    # as onnxruntime does); without it only the cells of the real input count.
    if count_include_pad:
        mask = np.ones((1, 1) + xp.shape[2:], dtype=np.float32)
    else:
        mask = np.zeros((1, 1) + xp.shape[2:], dtype=np.float32)
        mask[(slice(None), slice(None)) + tuple(slice(widths[2 + i][0], widths[2 + i][0] + X.shape[2 + i])
                                                for i in range(nd))] = 1
    count = np.zeros((1, 1) + tuple(out), dtype=np.float32)
    for index in _windows(xp, out, strides, dilations, kernel_shape):
        total += xp[index]
        count += mask[index]
    return (total / count).astype(X.dtype)


@kernel("GlobalAveragePool")
def GlobalAveragePool(X):
    return X.mean(axis=tuple(range(2, X.ndim)), keepdims=True).astype(X.dtype)


@kernel("GlobalMaxPool")
def GlobalMaxPool(X):
    return X.max(axis=tuple(range(2, X.ndim)), keepdims=True)
