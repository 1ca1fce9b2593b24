"""Kernels: TopK, GatherND, ScatterND, Scatter, Compress, Unique, ReverseSequence."""
from __future__ import annotations

import numpy as np

from .registry import kernel
from .tensor import ScatterElements


def _normalized(op: str, idx: np.ndarray, size: int) -> np.ndarray:
    idx = np.asarray(idx, dtype=np.int64)
    if idx.size and (idx.min() < -size or idx.max() >= size):
        bad = int(idx.max() if idx.max() >= size else idx.min())
        raise IndexError(f"{op}: index {bad} is out of range for an axis of size {size}")
    return np.where(idx < 0, idx + size, idx).astype(np.intp)


def _topk(x, k: int, axis: int, largest: int):
    axis = axis + x.ndim if axis < 0 else axis
    n = x.shape[axis]
    if not 0 <= k <= n:
        raise ValueError(f"TopK: k {k} is out of range for an axis of size {n}")
    if largest:
        # Descending with ties in index order: a stable ascending sort of the reversed axis, read backwards.
        order = np.flip(np.argsort(np.flip(x, axis), axis=axis, kind="stable"), axis)
        order = (n - 1 - order).take(np.arange(k), axis=axis)
    else:
        order = np.argsort(x, axis=axis, kind="stable").take(np.arange(k), axis=axis)
    return np.take_along_axis(x, order, axis=axis), order.astype(np.int64)


@kernel("TopK", since=1)
def TopK_1(X, *, k, axis=-1):
    return _topk(X, k, axis, 1)


@kernel("TopK", since=10)
def TopK_10(X, K, *, axis=-1):
    return _topk(X, int(np.asarray(K).reshape(-1)[0]), axis, 1)


@kernel("TopK", since=11)
def TopK_11(X, K, *, axis=-1, largest=1, sorted=1):
    return _topk(X, int(np.asarray(K).reshape(-1)[0]), axis, largest)


def _nd_index(op: str, data, indices, batch_dims: int):
    """(data as [batch, ...], index tuple into it, result lead shape)."""
    b = batch_dims
    k = indices.shape[-1]
    if b + k > data.ndim:
        raise ValueError(f"{op}: indices of depth {k} with batch_dims {b} exceed the data's rank {data.ndim}")
    if indices.shape[:b] != data.shape[:b]:
        raise ValueError(f"{op}: batch dims of indices {list(indices.shape[:b])} and data "
                         f"{list(data.shape[:b])} differ")
    nb = int(np.prod(data.shape[:b], dtype=np.int64))
    flat = data.reshape((nb,) + data.shape[b:])
    idx = indices.reshape(nb, -1, k)
    where = (np.arange(nb)[:, None],) + tuple(_normalized(op, idx[:, :, j], data.shape[b + j]) for j in range(k))
    return flat, where, indices.shape[:-1] + data.shape[b + k:]


@kernel("GatherND", since=11)
def GatherND(data, indices, *, batch_dims=0):
    flat, where, shape = _nd_index("GatherND", data, indices, batch_dims)
    return flat[where].reshape(shape)


_REDUCTIONS = {"add": np.add, "mul": np.multiply, "max": np.maximum, "min": np.minimum}


@kernel("ScatterND", since=11)
def ScatterND(data, indices, updates, *, reduction="none"):
    flat, where, shape = _nd_index("ScatterND", data, indices, 0)
    if updates.shape != shape:
        raise ValueError(f"ScatterND: updates of shape {list(updates.shape)}, expected {list(shape)}")
    out = flat.copy()
    upd = updates.reshape((1, -1) + data.shape[indices.shape[-1]:])
    if reduction == "none":
        out[where] = upd
    elif reduction in _REDUCTIONS:
        _REDUCTIONS[reduction].at(out, where, upd)
    else:
        raise ValueError(f"ScatterND: reduction '{reduction}' is not supported")
    return out.reshape(data.shape)


@kernel("Scatter", since=9)
def Scatter(data, indices, updates, *, axis=0):
    return ScatterElements(data, indices, updates, axis=axis)


@kernel("Compress", since=9)
def Compress(input, condition, *, axis=None):
    cond = np.asarray(condition, dtype=bool).ravel()
    if axis is None:
        return np.compress(cond, input.ravel())
    axis = axis + input.ndim if axis < 0 else axis
    if cond.size > input.shape[axis]:
        raise ValueError(f"Compress: condition of length {cond.size} is longer than axis {axis} "
                         f"({input.shape[axis]})")
    return np.compress(cond, input, axis=axis)


@kernel("Unique", since=11)
def Unique(X, *, axis=None, sorted=1):
    if axis is not None:
        axis = axis + X.ndim if axis < 0 else axis
    flat = X.ravel() if axis is None else X
    y, first, inverse, counts = np.unique(flat, return_index=True, return_inverse=True, return_counts=True,
                                          axis=axis)
    inverse = inverse.reshape(-1)
    if not sorted:
        order = np.argsort(first, kind="stable")          # unique values by first occurrence
        rank = np.empty_like(order)
        rank[order] = np.arange(order.size)
        y = np.take(y, order, axis=0 if axis is None else axis)
        first, counts, inverse = first[order], counts[order], rank[inverse]
    return y, first.astype(np.int64), inverse.astype(np.int64), counts.astype(np.int64)


@kernel("ReverseSequence", since=10)
def ReverseSequence(input, sequence_lens, *, batch_axis=1, time_axis=0):
    out = input.copy()
    lens = np.asarray(sequence_lens).astype(np.int64)
    x = np.moveaxis(input, (batch_axis, time_axis), (0, 1))
    o = np.moveaxis(out, (batch_axis, time_axis), (0, 1))   # a view of out
    if lens.shape != (x.shape[0],) or (lens < 0).any() or (lens > x.shape[1]).any():
        raise ValueError(f"ReverseSequence: sequence_lens {lens.tolist()} do not fit batch {x.shape[0]} "
                         f"and time {x.shape[1]}")
    for b, n in enumerate(lens):
        o[b, :n] = x[b, :n][::-1]
    return out
