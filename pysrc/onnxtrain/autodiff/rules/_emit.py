"""The ops that rules emit in more than one form: every switch on the opset that the rules share lives here."""
from __future__ import annotations

import numpy as np


def reduce(c, op: str, x, axes: list, keepdims: int = 1):
    """The reduction ``op`` over ``axes``: an input from opset 13 for ReduceSum, 18 for the others."""
    if c.opset >= (13 if op == "ReduceSum" else 18):
        return c.op(op, x, c.ints(axes), keepdims=keepdims)
    return c.op(op, x, axes=list(axes), keepdims=keepdims)


def reduce_sum(c, x, axes: list, keepdims: int):
    return reduce(c, "ReduceSum", x, axes, keepdims)


def reduce_mean(c, x, axes: list):
    return reduce(c, "ReduceMean", x, axes)


def split(c, x, sizes: list, axis: int):
    """``x`` split along ``axis`` into parts of ``sizes``: an input from opset 13, an attribute before."""
    if c.opset >= 13:
        return c.op("Split", x, c.ints(sizes), n_outputs=len(sizes), axis=axis)
    return c.op("Split", x, n_outputs=len(sizes), axis=axis, split=sizes)


def unsqueeze(c, x, axes: list):
    if c.opset >= 13:
        return c.op("Unsqueeze", x, c.ints(axes))
    return c.op("Unsqueeze", x, axes=list(axes))


def shape_of(c, x):
    return c.op("Shape", x)


def expand_like(c, v, like):
    """``v`` (of ``like``'s rank, sizes 1 or equal) broadcast to ``like``'s shape; Tile before opset 8's Expand."""
    if c.opset >= 8:
        return c.op("Expand", v, shape_of(c, like))
    return c.op("Tile", v, shape_of(c, like) / shape_of(c, v))


def reshape_like(c, v, like):
    return c.op("Reshape", v, shape_of(c, like))


def reshape(c, v, dims: list, base: str = "shape"):
    return c.op("Reshape", v, c.ints(dims, base))


def legacy_broadcast(c) -> dict:
    """The ``broadcast``/``axis`` attributes of an opset-1/6 binary op that broadcasts its second input
    (aligned at ``axis``, the trailing axes when unset), to pass on to the ops a rule emits; else {}."""
    if c.opset >= 7 or not c.node.attr("broadcast", 0):
        return {}
    return {"broadcast": 1, **copy_attrs(c.node, "axis")}


def broadcast_axes(x_dims: list, grad_dims: list, start: int) -> tuple:
    """(axes of grad that x was surely broadcast along, axes where that depends on x's size at run time):
    x's dims sit at grad's axes start.. (dims are ints, symbols or None)."""
    sure, maybe = [], []
    for i, d in enumerate(x_dims):
        g = grad_dims[start + i]
        if d == 1:
            if g != 1:
                sure.append(start + i)
        elif not isinstance(d, int) and g != 1 and (d is None or d != g):
            maybe.append((start + i, i))
    return sure, maybe


def sum_where_one(c, grad, x, maybe: list):
    """``grad`` summed (dims kept) over the axes of ``maybe`` ([(grad axis, x axis)]) where x's size is 1 at
    run time: symbolic dims that may or may not have been broadcast."""
    if not maybe:
        return grad
    if c.opset < 13:
        raise NotImplementedError(f"{c.where()}: '{x}' may be broadcast along axes {[a for a, _ in maybe]}, "
                                  f"which only the run can tell; that gradient needs opset 13 or later")
    sizes = c.op("Gather", shape_of(c, x), c.ints([i for _, i in maybe], "x_axes"), axis=0)
    axes = c.op("Compress", c.ints([a for a, _ in maybe], "maybe_axes"), sizes.eq(c.ints([1], "one")), axis=0)
    return c.op("ReduceSum", grad, axes, keepdims=1, noop_with_empty_axes=1)


def unbroadcast(c, grad, grad_shape, x):
    """``grad`` (of shape ``grad_shape``) summed over the axes along which ``x`` was broadcast."""
    x_shape = c.shape(x)
    if grad_shape is None or x_shape is None:
        raise NotImplementedError(f"{c.where()}: the shapes of '{x}' and its gradient must be known")
    lead = len(grad_shape) - len(x_shape)
    legacy = legacy_broadcast(c) if c.node is not None and x == c.node.inputs[-1] else {}
    if "axis" in legacy and x_shape != [1]:  # x occupies grad's axes start .. start + rank(x)
        start = legacy["axis"] + len(grad_shape) if legacy["axis"] < 0 else legacy["axis"]
        outside = list(range(start)) + list(range(start + len(x_shape), len(grad_shape)))
    else:
        start, outside = lead, list(range(lead))
    sure, maybe = broadcast_axes(x_shape, grad_shape, start)
    axes = outside + sure
    if not axes and not maybe:
        return grad
    summed = reduce_sum(c, grad, sorted(axes), keepdims=1) if axes else grad
    summed = sum_where_one(c, summed, x, maybe)
    if not outside:
        return summed
    return c.op("Reshape", summed, shape=x_shape) if c.opset < 5 else reshape_like(c, summed, x)


def text(v):
    return v.decode() if isinstance(v, bytes) else v


def copy_attrs(node, *names):
    return {k: node.attr(k) for k in names if k in node.attributes}


def matmul_along(c, grad, axis: int, rank: int, m: np.ndarray):
    """``grad`` times the constant matrix ``m`` along ``axis`` (m: [grad's length, result's length])."""
    perm = [i for i in range(rank) if i != axis] + [axis]
    moved = c.op("MatMul", c.op("Transpose", grad, perm=perm), c.const(m, "along_axis"))
    return c.op("Transpose", moved, perm=[int(i) for i in np.argsort(perm)])
