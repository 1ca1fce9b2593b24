"""Kernels: reductions (axes as an attribute before opset 13/18, as an input after) and ArgMax/ArgMin."""
from __future__ import annotations

import numpy as np

from . import simd
from .quiet import quiet
from .registry import kernel


def reduce_with(op: str, fn, data, axes, keepdims, noop_with_empty_axes):
    if axes is None or len(axes) == 0:
        if noop_with_empty_axes:
            return data
        axes = tuple(range(data.ndim))
    else:
        ndim = data.ndim
        axes = tuple(int(a) + ndim if a < 0 else int(a) for a in np.asarray(axes).ravel().tolist())
        bad = [a for a in axes if not 0 <= a < max(data.ndim, 1)]
        if bad:
            raise ValueError(f"{op}: axis {bad[0]} is out of range for an input of rank {data.ndim}")
    if data.dtype.kind in "iub" and op in ("ReduceLogSum", "ReduceLogSumExp", "ReduceMean") and \
            any(data.shape[a] == 0 for a in axes):
        raise ValueError(f"{op} over an empty set of integers has no value ({'nan' if op == 'ReduceMean' else '-inf'})")
    with quiet(("divide", "invalid")):    # an empty set: log(0) = -inf, mean 0/0 = nan
        out = fn(data, axis=axes, keepdims=bool(keepdims))
    return np.asarray(out).astype(data.dtype, copy=False)


def _lowest(dtype):
    """The identity of max: -inf, or the type's least value."""
    return -np.inf if dtype.kind == "f" else False if dtype.kind == "b" else np.iinfo(dtype).min


def _highest(dtype):
    return np.inf if dtype.kind == "f" else True if dtype.kind == "b" else np.iinfo(dtype).max


def _max(x, axis, keepdims):
    return np.max(x, axis=axis, keepdims=keepdims, initial=_lowest(x.dtype))


def _min(x, axis, keepdims):
    return np.min(x, axis=axis, keepdims=keepdims, initial=_highest(x.dtype))


def _mean(x, axis, keepdims):
    count = int(np.prod([x.shape[a] for a in axis]))
    total = np.sum(x, axis=axis, keepdims=keepdims)
    return total / count if count else total * np.nan     # numpy's mean warns on an empty set


def _log_sum_exp(x, axis, keepdims):
    m = _max(x, axis=axis, keepdims=True)
    m = np.where(np.isfinite(m), m, 0)
    out = np.log(np.sum(np.exp(x - m), axis=axis, keepdims=True)) + m
    return out if keepdims else np.squeeze(out, axis=axis)


REDUCTIONS = {
    "ReduceSum": (np.add.reduce, 13), "ReduceMean": (_mean, 18), "ReduceMax": (_max, 18), "ReduceMin": (_min, 18),
    "ReduceProd": (np.prod, 18), "ReduceL1": (lambda x, axis, keepdims: np.sum(np.abs(x), axis=axis,
                                                                               keepdims=keepdims), 18),
    "ReduceL2": (lambda x, axis, keepdims: np.sqrt(np.sum(np.square(x), axis=axis, keepdims=keepdims)), 18),
    "ReduceSumSquare": (lambda x, axis, keepdims: np.sum(np.square(x), axis=axis, keepdims=keepdims), 18),
    "ReduceLogSumExp": (_log_sum_exp, 18),
    "ReduceLogSum": (lambda x, axis, keepdims: np.log(np.sum(x, axis=axis, keepdims=keepdims)), 18),
}


def _column_sums(data, axes, keepdims):
    """ReduceSum over the first axis of a matrix (a bias gradient) by simd.column_sums; None for anything else."""
    if data.ndim != 2 or axes is None:
        return None
    if (axes.tolist() if isinstance(axes, np.ndarray) else axes) not in ([0], [-2]):
        return None
    out = simd.column_sums(data)
    return out if out is None or not keepdims else out.reshape(1, -1)


def _register(op: str, fn, axes_input_since: int) -> None:
    fast = _column_sums if op == "ReduceSum" else None

    def with_attribute(data, *, axes=None, keepdims=1):
        out = None if fast is None else fast(data, axes, keepdims)
        return reduce_with(op, fn, data, axes, keepdims, 0) if out is None else out

    def with_input(data, axes=None, *, keepdims=1, noop_with_empty_axes=0):
        out = None if fast is None else fast(data, axes, keepdims)
        return reduce_with(op, fn, data, axes, keepdims, noop_with_empty_axes) if out is None else out
    kernel(op, since=1)(with_attribute)
    kernel(op, since=axes_input_since)(with_input)


for _op, (_fn, _since) in REDUCTIONS.items():
    _register(_op, _fn, _since)


def _arg(fn, data, axis, keepdims, select_last_index):
    if select_last_index:
        flipped = np.flip(data, axis=axis)
        out = data.shape[axis] - 1 - fn(flipped, axis=axis)
    else:
        out = fn(data, axis=axis)
    out = out.astype(np.int64)
    return np.expand_dims(out, axis) if keepdims else out


@kernel("ArgMax")
def ArgMax(data, *, axis=0, keepdims=1, select_last_index=0):
    return _arg(np.argmax, data, axis, keepdims, select_last_index)


@kernel("ArgMin")
def ArgMin(data, *, axis=0, keepdims=1, select_last_index=0):
    return _arg(np.argmin, data, axis, keepdims, select_last_index)
