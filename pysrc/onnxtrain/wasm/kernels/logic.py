"""Comparisons of float32 (Less, Greater, Equal, LessOrEqual, GreaterOrEqual), the logical ops of bool (And, Or,
Xor, Not), Where, and Max and Min of float32 (np.maximum and np.minimum: NaN wins, b on ties of -0 and +0):
broadcast operands read at their strides into a contiguous output, as numpy's ufuncs compute each element."""
from __future__ import annotations

import numpy as np

from ...runtime.program import NotLowered
from ..lowering import broadcast_strides, f32_only
from ..registry import wasm_kernel
from .elementwise import MAX_RANK, merged, strided

COMPARISONS = {"Less": 0, "Greater": 1, "Equal": 2, "LessOrEqual": 3, "GreaterOrEqual": 4}
LOGICAL = {"And": 0, "Or": 1, "Xor": 2, "Not": 3}


def _shape(op: str, *tensors) -> tuple:
    try:
        shape = np.broadcast_shapes(*[t.shape for t in tensors])
    except ValueError:
        raise NotLowered(f"{op}: " + ", ".join(t.describe() for t in tensors) + " do not broadcast") from None
    if len(shape) > MAX_RANK:
        raise NotLowered(f"{op}: rank {len(shape)} (the C kernels take up to {MAX_RANK})")
    return shape


def _binary_call(k, name: str, kind: int, out, a, b) -> None:
    if out.size == 0:
        return
    shape, sa, sb = merged(list(out.shape), broadcast_strides(a.shape, out.shape),
                           broadcast_strides(b.shape, out.shape) if b is not None else [0] * out.rank)
    k.call(name, [a, b], [out], [kind, len(shape), *shape, *sa, *sb])


def _comparison(op: str):
    def lower(k, A, B):
        f32_only(op, A, B)
        out = k.output(_shape(op, A, B), np.bool_)
        _binary_call(k, "compare", COMPARISONS[op], out, A, B)
        return out
    lower.__name__ = op
    return lower


def _bool_only(op: str, *tensors) -> None:
    for t in tensors:
        if t.dtype != np.bool_:
            raise NotLowered(f"{op}: {t.describe()} (the C kernel takes bool)")


def _logical(op: str):
    def lower(k, A, B=None):
        _bool_only(op, A, *([B] if B is not None else []))
        out = k.output(_shape(op, A, *([B] if B is not None else [])), np.bool_)
        _binary_call(k, "logical", LOGICAL[op], out, A, B)
        return out
    lower.__name__ = op
    return lower


for _op in COMPARISONS:
    wasm_kernel(_op)(_comparison(_op))
for _op in LOGICAL:
    wasm_kernel(_op)(_logical(_op))


@wasm_kernel("Where")
def Where(k, condition, X, Y):
    _bool_only("Where", condition)
    if X.dtype != Y.dtype or X.dtype.itemsize not in (4, 8) or X.dtype.metadata:
        raise NotLowered(f"Where of {X.describe()} and {Y.describe()}")
    out = k.output(_shape("Where", condition, X, Y), X.dtype)
    if out.size == 0:
        return out
    strides = [broadcast_strides(t.shape, out.shape) for t in (condition, X, Y)]
    dims, runs = [], [[], [], []]                       # size-1 dims dropped, runs every operand steps through merged
    for d, size in enumerate(out.shape):
        if size == 1:
            continue
        if dims and all(r[-1] == s[d] * size for r, s in zip(runs, strides)):
            dims[-1] *= size
            for r, s in zip(runs, strides):
                r[-1] = s[d]
            continue
        dims.append(size)
        for r, s in zip(runs, strides):
            r.append(s[d])
    if not dims:
        dims, runs = [1], [[0], [0], [0]]
    k.call("where", [condition, X, Y], [out], [X.dtype.itemsize, len(dims), *dims, *runs[0], *runs[1], *runs[2]])
    return out


def _extremum(op: str, is_min: int):
    def lower(k, *data_0):
        """ops/elementwise.py's variadic Max and Min: the inputs taken left to right, broadcast."""
        f32_only(op, *data_0)
        if not data_0:
            raise NotLowered(f"{op} of no inputs")
        out = k.output(_shape(op, *data_0))
        if len(data_0) == 1:
            strided(k, "copy", out, data_0[0])
            return out
        _binary_call(k, "extremum", is_min, out, data_0[0], data_0[1])
        for t in data_0[2:]:
            _binary_call(k, "extremum", is_min, out, out, t)
        return out
    lower.__name__ = op
    return lower


wasm_kernel("Max")(_extremum("Max", 0))
wasm_kernel("Min")(_extremum("Min", 1))
