"""ReduceSum and ReduceMean over float32 in the orders numpy adds in (ops/reduce.py's np.add.reduce): the reduced
and kept dims, size-1 dims dropped and neighbours of a kind merged, are [kept, reduced] (each row's pairwise sums in
blocks of 8192: reduce_rows), [reduced, kept] (whole rows added in order: column_sums) or [kept, reduced, kept] (column sums per
block); other layouts stay numpy's.  A mean divides the sums by the count as a float32 (numpy's division of a
float32 array by an int)."""
from __future__ import annotations

import numpy as np

from ...ops.simd import _IDENTITY, _ZERO
from ...runtime.program import NotLowered
from ..lowering import f32_only
from ..registry import wasm_kernel
from .elementwise import strided

IDENTITY = float(_IDENTITY.value)    # np.add.reduce's initial value (+0 in numpy 1, -0 in numpy 2)
ZERO = float(_ZERO.value)            # the start of its pairwise sums of fewer than 8


def column_sums(k, x, out) -> None:
    """out [cols] = np.add.reduce(x [rows, cols], axis=0), cols > 1, rows > 0."""
    k.call("column_sums", [x], [out], [x.shape[0], x.shape[1], IDENTITY])


def _layout(shape, axes) -> list:
    """[(size, reduced)] of ``shape``: size-1 dims dropped, neighbours of a kind merged."""
    runs: list = []
    for d, size in enumerate(shape):
        if size == 1:
            continue
        red = d in axes
        if runs and runs[-1][1] == red:
            runs[-1] = (runs[-1][0] * size, red)
        else:
            runs.append((size, red))
    return runs


def _axes(k, op: str, data, axes, noop_with_empty_axes) -> tuple | None:
    """The sorted axes, or None for the input as is (no axes, with noop_with_empty_axes)."""
    axes = k.value(axes, f"{op}'s axes")
    axes = [] if axes is None else np.asarray(axes).reshape(-1).tolist()
    if not axes:
        return None if noop_with_empty_axes else tuple(range(data.rank))
    out = tuple(sorted({int(a) + data.rank if a < 0 else int(a) for a in axes}))
    if any(not 0 <= a < data.rank for a in out):
        raise NotLowered(f"{op}: axes {axes} of {data.describe()}")
    return out


def reduce_sum(k, op: str, data, axes: tuple, keepdims: int):
    """The float32 sums of ``data`` over ``axes`` (sorted, non-negative), numpy's bits, shaped as the op's."""
    f32_only(op, data)
    kept_shape = tuple(1 if d in axes else s for d, s in enumerate(data.shape))
    out_shape = kept_shape if keepdims else tuple(s for d, s in enumerate(data.shape) if d not in axes)
    runs = _layout(data.shape, axes)
    if data.size == 0 or not any(red for _, red in runs):
        raise NotLowered(f"{op} of {data.describe()} over axes {list(axes)} (nothing to add up)")
    out = k.output(out_shape)
    kinds = [red for _, red in runs]
    sizes = [s for s, _ in runs]
    if kinds in ([True], [False, True]):
        rows, cols = (1, sizes[0]) if len(sizes) == 1 else sizes
        k.call("reduce_rows", [data], [out], [rows, cols, IDENTITY, ZERO])
    elif kinds == [True, False]:
        k.call("column_sums", [data], [out], [sizes[0], sizes[1], IDENTITY])
    elif kinds == [False, True, False]:
        k.call("column_sums_blocks", [data], [out], [*sizes, IDENTITY])
    else:
        raise NotLowered(f"{op} of {data.describe()} over axes {list(axes)} (numpy's order of adding there is "
                         f"not one the C kernels follow)")
    return out


@wasm_kernel("ReduceSum")
def ReduceSum(k, data, axes=None, *, keepdims=1, noop_with_empty_axes=0):
    if k.opset is not None and k.opset < 13:
        raise NotLowered("ReduceSum before opset 13 (axes as an attribute)")
    axes = _axes(k, "ReduceSum", data, axes, noop_with_empty_axes)
    if axes is None:
        f32_only("ReduceSum", data)
        return k.view(data, data.shape)
    return reduce_sum(k, "ReduceSum", data, axes, keepdims)


@wasm_kernel("ReduceMean")
def ReduceMean(k, data, axes=None, *, keepdims=1, noop_with_empty_axes=0):
    if isinstance(axes, (list, tuple)):          # the attribute, before opset 18
        axes = k.known(np.asarray(axes, np.int64))
    sorted_axes = _axes(k, "ReduceMean", data, axes, noop_with_empty_axes)
    if sorted_axes is None:
        f32_only("ReduceMean", data)
        return k.view(data, data.shape)
    total = reduce_sum(k, "ReduceMean", data, sorted_axes, keepdims)
    count = int(np.prod([data.shape[a] for a in sorted_axes]))
    if count >= 2 ** 24:
        raise NotLowered(f"ReduceMean over {count} values (the count is not a float32)")
    out = k.output(total.shape)
    strided(k, "Div", out, total, k.known(np.float32(count)))
    return out
