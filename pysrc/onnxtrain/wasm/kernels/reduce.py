"""ReduceSum over the first axis of a float32 matrix (a bias gradient), by the column sums ops/reduce.py takes
there (simd.column_sums: numpy's order of adding whole rows)."""
from __future__ import annotations

import numpy as np

from ...ops.simd import _IDENTITY
from ...runtime.program import NotLowered
from ..lowering import f32_only
from ..registry import wasm_kernel

IDENTITY = float(_IDENTITY.value)    # np.add.reduce's initial value (+0 in numpy 1, -0 in numpy 2)


def column_sums(k, x, out) -> None:
    """out [cols] = np.add.reduce(x [rows, cols], axis=0), cols > 1, rows > 0."""
    k.call("column_sums", [x], [out], [x.shape[0], x.shape[1], IDENTITY])


@wasm_kernel("ReduceSum")
def ReduceSum(k, data, axes=None, *, keepdims=1, noop_with_empty_axes=0):
    if k.opset is not None and k.opset < 13:
        raise NotLowered("ReduceSum before opset 13 (axes as an attribute)")
    f32_only("ReduceSum", data)
    axes = k.value(axes, "ReduceSum's axes")
    if axes is None or data.rank != 2 or np.asarray(axes).reshape(-1).tolist() not in ([0], [-2]):
        raise NotLowered(f"ReduceSum of {data.describe()} over axes "
                         f"{None if axes is None else np.asarray(axes).tolist()} (the C kernel sums a matrix's rows)")
    rows, cols = data.shape
    if cols < 2 or rows == 0:
        raise NotLowered(f"ReduceSum of {data.describe()} (numpy sums it pairwise)")
    out = k.output((cols,))
    column_sums(k, data, out)
    return k.view(out, (1, cols)) if keepdims else out
