"""Kernels: constants, gathers and index ops."""
from __future__ import annotations

import numpy as np

from ..ir import dtypes
from .registry import kernel


@kernel("Constant")
def Constant(*, value=None, value_float=None, value_floats=None, value_int=None, value_ints=None,
             value_string=None, value_strings=None, sparse_value=None):
    if value is not None:
        return value
    if value_float is not None:
        return np.array(value_float, dtype=np.float32)
    if value_floats is not None:
        return np.array(value_floats, dtype=np.float32)
    if value_int is not None:
        return np.array(value_int, dtype=np.int64)
    if value_ints is not None:
        return np.array(value_ints, dtype=np.int64)
    if value_string is not None:
        return np.array(value_string.encode(), dtype=object)
    if value_strings is not None:
        return np.array([s.encode() for s in value_strings], dtype=object)
    raise ValueError("Constant: no value attribute (sparse_value is not supported)")


@kernel("ConstantOfShape")
def ConstantOfShape(input, *, value=None):
    fill = np.zeros(1, np.float32) if value is None else value.ravel()
    return np.full([int(d) for d in input], fill[0], dtype=fill.dtype)


def normalized_indices(op: str, indices, size: int) -> np.ndarray:
    """``indices`` into an axis of ``size`` as non-negative intp, each checked to lie in [-size, size)."""
    idx = np.asarray(indices, dtype=np.int64)
    if idx.size and (idx.min() < -size or idx.max() >= size):
        raise IndexError(f"{op}: index {int(idx.max() if idx.max() >= size else idx.min())} is out of range "
                         f"for an axis of size {size}")
    return np.where(idx < 0, idx + size, idx).astype(np.intp)  # np.take needs intp (int32 on wasm32)


@kernel("Gather")
def Gather(data, indices, *, axis=0):
    axis = axis + data.ndim if axis < 0 else axis
    return np.take(data, normalized_indices("Gather", indices, data.shape[axis]), axis=axis)


@kernel("GatherElements")
def GatherElements(data, indices, *, axis=0):
    axis = axis + data.ndim if axis < 0 else axis
    return np.take_along_axis(data, normalized_indices("GatherElements", indices, data.shape[axis]), axis=axis)


@kernel("ScatterElements", since=11)
def ScatterElements(data, indices, updates, *, axis=0, reduction="none"):
    axis = axis + data.ndim if axis < 0 else axis
    out = data.copy()
    idx = normalized_indices("ScatterElements", indices, data.shape[axis])
    grid = list(np.indices(idx.shape, sparse=True))
    grid[axis] = idx
    ufunc = {"none": None, "add": np.add, "mul": np.multiply, "max": np.maximum, "min": np.minimum}[reduction]
    if reduction == "add" and data.ndim == 1 and data.dtype.kind == "f":  # fast path: a weighted bincount
        added = np.bincount(idx.ravel().astype(np.intp), weights=updates.ravel(), minlength=data.size)
        return (out + added[:data.size]).astype(data.dtype, copy=False)
    if ufunc is None:
        out[tuple(grid)] = updates
    else:
        ufunc.at(out, tuple(grid), updates)
    return out


@kernel("Range")
def Range(start, limit, delta):
    s, l, d = start.item(), limit.item(), delta.item()
    n = max(int(np.ceil((l - s) / d)), 0)
    return (s + np.arange(n) * d).astype(start.dtype)


@kernel("OneHot", since=9)
def OneHot(indices, depth, values, *, axis=-1):
    d = int(np.asarray(depth).ravel()[0])
    idx = np.asarray(indices).astype(np.int64)
    idx = np.where(idx < 0, idx + d, idx)
    rank = idx.ndim + 1
    axis = axis + rank if axis < 0 else axis
    hot = np.expand_dims(idx, axis) == np.arange(d).reshape([d if i == axis else 1 for i in range(rank)])
    return np.where(hot, values[1], values[0]).astype(values.dtype)


@kernel("Trilu")
def Trilu(input, k=None, *, upper=1):
    k = 0 if k is None else int(np.asarray(k).ravel()[0])
    return np.triu(input, k) if upper else np.tril(input, k)


@kernel("CumSum")
def CumSum(x, axis, *, exclusive=0, reverse=0):
    a = int(np.asarray(axis).ravel()[0])
    y = np.flip(x, a) if reverse else x
    out = np.cumsum(y, axis=a, dtype=x.dtype)
    if exclusive:
        out = out - y
    return np.flip(out, a) if reverse else out


@kernel("NonZero")
def NonZero(X):
    return np.array(np.nonzero(X), dtype=np.int64).reshape(X.ndim, -1)


@kernel("Einsum")
def Einsum(*Inputs, equation):
    return np.einsum(equation, *Inputs).astype(Inputs[0].dtype, copy=False)


@kernel("EyeLike", since=9)
def EyeLike(input, *, dtype=None, k=0):
    if input.ndim != 2:
        raise ValueError(f"EyeLike: the input must be 2-D, got shape {list(input.shape)}")
    out_dtype = input.dtype if dtype is None else dtypes.to_numpy(dtype)
    return np.eye(input.shape[0], input.shape[1], k, dtype=out_dtype)
