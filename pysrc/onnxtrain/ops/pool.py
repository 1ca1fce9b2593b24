"""Kernels: MaxPool (with Indices), MaxPoolGrad, AveragePool and the global pools."""
from __future__ import annotations

import numpy as np

from . import simd
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


_UNSIGNED = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


def _bits(a: np.ndarray) -> np.ndarray:
    return a.view(_UNSIGNED[a.dtype.itemsize])


def _first_max(windows: list):
    """(Y, k): the elementwise maximum of the windows and the index of the first window that holds it,
    as argmax over the stacked windows gives for inputs without NaN.  Selections go through bit masks:
    numpy's masked copies are slow on the random masks of real data."""
    Y = windows[0].copy()
    k = np.zeros(Y.shape, np.uint8 if len(windows) <= 256 else np.intp)
    y, t = _bits(Y), np.empty(Y.shape, _bits(Y).dtype)
    for i, v in enumerate(windows[1:], 1):
        greater = np.greater(v, Y)
        np.bitwise_xor(y, _bits(v), out=t)
        t &= np.negative(greater.view(np.uint8), dtype=t.dtype)
        y ^= t
        np.maximum(k, np.multiply(greater, i, dtype=k.dtype), out=k)   # a later window wins only if greater
    return Y, k


def _first_argmax(windows: list):
    """_first_max for any input (NaN counts as the maximum, the first NaN wins), the slow way."""
    stacked = np.stack(windows)
    k = np.argmax(stacked, axis=0)
    return np.take_along_axis(stacked, k[None], axis=0)[0], k


def _flat_indices(k, x_shape, out, kernel_shape, strides, pads, dilations, storage_order) -> np.ndarray:
    """The Indices output: for each output cell, the flat position in X of the cell of window ``k``;
    the spatial part in row-major order, or column-major with storage_order."""
    spatial = x_shape[2:]
    nd = len(spatial)
    weight = [int(np.prod(spatial[:i] if storage_order else spatial[i + 1:], dtype=np.int64)) for i in range(nd)]
    offsets = np.array([sum(o * d * w for o, d, w in zip(offs, dilations, weight))
                        for offs in np.ndindex(*kernel_shape)], np.int64)
    grid = np.zeros(out, np.int64)
    for i in range(nd):
        shape = [1] * nd
        shape[i] = out[i]
        grid += ((np.arange(out[i], dtype=np.int64) * strides[i] - pads[i]) * weight[i]).reshape(shape)
    plane = int(np.prod(spatial, dtype=np.int64))
    nc = (np.arange(x_shape[0] * x_shape[1], dtype=np.int64) * plane).reshape(x_shape[:2] + (1,) * nd)
    flat = np.take(offsets, k.astype(np.intp), mode="wrap")    # k < len(offsets); "wrap" takes the fast path
    flat += grid
    flat += nc
    return flat


@kernel("MaxPool", since=8)
def MaxPool(X, *, auto_pad="NOTSET", ceil_mode=0, dilations=None, kernel_shape, pads=None, storage_order=0,
            strides=None, _outputs=(True, False)):
    want_indices = len(_outputs) > 1 and _outputs[1]
    if storage_order == 0 and simd.available():
        geometry = conv_geometry(X.shape[2:], kernel_shape, strides, pads, dilations, auto_pad, ceil_mode)
        fast = simd.maxpool(X, kernel_shape, *geometry, indices=want_indices)
        if fast is not None:
            return fast if want_indices else fast[0]
    fill = -np.inf if X.dtype.kind == "f" else np.iinfo(X.dtype).min
    xp, out, pads, strides, dilations, _ = _pooled(X, fill, kernel_shape, strides, pads, dilations, auto_pad,
                                                   ceil_mode)
    views = [xp[index] for index in _windows(xp, out, strides, dilations, kernel_shape)]
    if not want_indices:
        Y = views[0].copy()
        for v in views[1:]:
            np.maximum(Y, v, out=Y)
        return Y
    with_nan = X.dtype.kind == "f" and X.size and np.isnan(np.min(X))
    Y, k = (_first_argmax if with_nan else _first_max)(views)
    return Y, _flat_indices(k, X.shape, out, kernel_shape, strides, pads, dilations, storage_order)


def _disjoint_windows(kernel_shape, strides, pads, dilations, auto_pad, ceil_mode) -> bool:
    """Whether every input cell lies in at most one window and every window inside the input."""
    if not kernel_shape or ceil_mode or auto_pad not in ("NOTSET", "VALID") or any(pads or ()):
        return False
    nd = len(kernel_shape)
    strides, dilations = list(strides or [1] * nd), list(dilations or [1] * nd)
    return all(s >= (k - 1) * d + 1 for k, s, d in zip(kernel_shape, strides, dilations))


def _check_pooled_shape(shape, dy_shape, kernel_shape, strides, pads, dilations, auto_pad, ceil_mode):
    """The MaxPool input shape from the graph's value_info must pool to dY's shape: it sizes dX."""
    if len(shape) != len(dy_shape) or shape[1] != dy_shape[1] or kernel_shape is None:
        raise ValueError(f"MaxPoolGrad: the MaxPool input shape {shape} in the graph's value_info does not match "
                         f"dY {list(dy_shape)}")
    out = conv_geometry(shape[2:], kernel_shape, strides, pads, dilations, auto_pad, ceil_mode)[1]
    if list(out) != list(dy_shape[2:]):
        raise ValueError(f"MaxPoolGrad: the MaxPool input shape {shape} in the graph's value_info pools to "
                         f"{[*dy_shape[:2], *out]}, not to dY's shape {list(dy_shape)}")


@kernel("MaxPoolGrad")
def MaxPoolGrad(dY, Indices, *, auto_pad="NOTSET", ceil_mode=0, dilations=None, kernel_shape=None, pads=None,
                storage_order=0, strides=None, _output_shapes=(None,)):
    shape = _output_shapes[0]
    if shape is None or not all(isinstance(d, int) for d in shape[1:]):
        raise ValueError("MaxPoolGrad needs the static shape of its output (the MaxPool input) in the graph's "
                         f"value_info; found {shape}")
    shape = [dY.shape[0]] + list(shape[1:])
    _check_pooled_shape(shape, dY.shape, kernel_shape, strides, pads, dilations, auto_pad, ceil_mode)
    dX = simd.maxpool_grad(dY, Indices, shape)
    if dX is not None:
        return dX
    size = int(np.prod(shape, dtype=np.int64))
    index = Indices.ravel().astype(np.intp, copy=False)       # intp: wasm32
    if _disjoint_windows(kernel_shape, strides, pads, dilations, auto_pad, ceil_mode):
        dX = np.zeros(size, dY.dtype)
        dX[index] = dY.ravel() + dY.dtype.type(0)             # no index repeats; + 0 as in 0 + dy: -0.0 -> 0.0
        return dX.reshape(shape)
    dX = np.bincount(index, weights=dY.ravel(), minlength=size)
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
    sums = simd.plane_sums(X, X.ndim - 2)
    if sums is not None:
        return (sums / np.float32(np.prod(X.shape[2:]))).reshape(X.shape[:2] + (1,) * (X.ndim - 2))
    return X.mean(axis=tuple(range(2, X.ndim)), keepdims=True).astype(X.dtype)


@kernel("GlobalMaxPool")
def GlobalMaxPool(X):
    return X.max(axis=tuple(range(2, X.ndim)), keepdims=True)


# ---- the opset-1 pools: no dilations, ceil_mode, storage_order or count_include_pad yet ----------------------

@kernel("MaxPool", since=1)
def MaxPool_1(X, *, auto_pad="NOTSET", kernel_shape, pads=None, strides=None):
    return MaxPool(X, auto_pad=auto_pad, kernel_shape=kernel_shape, pads=pads, strides=strides, _outputs=(True,))


@kernel("AveragePool", since=1)
def AveragePool_1(X, *, auto_pad="NOTSET", kernel_shape, pads=None, strides=None):
    return AveragePool(X, auto_pad=auto_pad, kernel_shape=kernel_shape, pads=pads, strides=strides)


# ---- Lp pools --------------------------------------------------------------------------------------------

def _lp_pool(X, p, kernel_shape, strides, pads, dilations, auto_pad, ceil_mode):
    """(sum over each window of |x|^p)^(1/p); padding adds nothing."""
    p = float(p)
    xp, out, pads, strides, dilations, _ = _pooled(np.abs(X).astype(np.float64) ** p, 0, kernel_shape, strides,
                                                   pads, dilations, auto_pad, ceil_mode)
    total = np.zeros(X.shape[:2] + tuple(out))
    for index in _windows(xp, out, strides, dilations, kernel_shape):
        total += xp[index]
    return (total ** (1 / p)).astype(X.dtype)


@kernel("LpPool", since=1)
def LpPool_1(X, *, auto_pad="NOTSET", kernel_shape, p=2.0, pads=None, strides=None):
    return _lp_pool(X, p, kernel_shape, strides, pads, None, auto_pad, 0)


@kernel("LpPool", since=2)
def LpPool_2(X, *, auto_pad="NOTSET", kernel_shape, p=2, pads=None, strides=None):
    return _lp_pool(X, p, kernel_shape, strides, pads, None, auto_pad, 0)


@kernel("LpPool", since=18)
def LpPool(X, *, auto_pad="NOTSET", ceil_mode=0, dilations=None, kernel_shape, p=2, pads=None, strides=None):
    return _lp_pool(X, p, kernel_shape, strides, pads, dilations, auto_pad, ceil_mode)


def _global_lp(X, p):
    p = float(p)
    return (np.sum(np.abs(X).astype(np.float64) ** p, axis=tuple(range(2, X.ndim)), keepdims=True)
            ** (1 / p)).astype(X.dtype)


@kernel("GlobalLpPool", since=1)
def GlobalLpPool_1(X, *, p=2.0):
    return _global_lp(X, p)


@kernel("GlobalLpPool", since=2)
def GlobalLpPool(X, *, p=2):
    return _global_lp(X, p)


# ---- MaxUnpool -------------------------------------------------------------------------------------------

@kernel("MaxUnpool", since=9)
def MaxUnpool(X, I, output_shape=None, *, kernel_shape, pads=None, strides=None):
    """Y of zeros with Y.flat[I] = X.  I indexes the flat output: with output_shape (the shape of the
    input MaxPool saw) that shape, as onnxruntime and PyTorch read it; onnx's reference indexes the
    unpadded shape and copies it into the corner instead."""
    nd = X.ndim - 2
    strides = list(strides or [1] * nd)
    pads = list(pads or [0] * (2 * nd))
    if len(kernel_shape) != nd or len(strides) != nd or len(pads) != 2 * nd:
        raise ValueError(f"MaxUnpool: kernel_shape {kernel_shape}, strides {strides} and pads {pads} do not fit "
                         f"{nd} spatial axes")
    if I.shape != X.shape:
        raise ValueError(f"MaxUnpool: indices of shape {list(I.shape)} do not match X {list(X.shape)}")
    if output_shape is not None and len(output_shape):
        shape = [int(d) for d in np.asarray(output_shape).ravel()]
        if len(shape) != X.ndim or shape[:2] != list(X.shape[:2]):
            raise ValueError(f"MaxUnpool: output_shape {shape} does not fit X {list(X.shape)}")
    else:
        shape = list(X.shape[:2]) + [(X.shape[2 + i] - 1) * strides[i] - pads[i] - pads[i + nd] + kernel_shape[i]
                                     for i in range(nd)]
    size = int(np.prod(shape, dtype=np.int64))
    index = I.ravel().astype(np.int64)
    if index.size and (index.min() < 0 or index.max() >= size):
        raise ValueError(f"MaxUnpool: an index lies outside the output of shape {shape}")
    Y = np.zeros(size, X.dtype)
    Y[index.astype(np.intp)] = X.ravel()
    return Y.reshape(shape)
