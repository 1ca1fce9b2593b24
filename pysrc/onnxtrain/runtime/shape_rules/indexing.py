"""Indexing: Gather (carrying shape vectors' elements), GatherElements, GatherND, the scatters, TopK,
ArgMax/ArgMin, OneHot, and the gradients of the gathers."""
from __future__ import annotations

from ._context import INT64
from ._registry import Out, rule

MS = "com.microsoft"


@rule("Gather")
def gather(c):
    data, indices = c.shape(0), c.shape(1)
    axis = c.axis(c.attr("axis", 0), len(data))
    out = data[:axis] + indices + data[axis + 1:]
    value = None
    elements, picks = c.dims(0), c.ints(1)
    if elements is not None and picks is not None and len(data) == 1:
        n = len(elements)
        if any(not -n <= p < n for p in picks):
            c.fail(f"the indices {picks} are out of range for axis 0 of size {n}")
        value = [elements[p] for p in picks]
    return Out(c.elem(0), out, value)


@rule("GatherElements")
def gather_elements(c):
    if c.rank(0) != c.rank(1):
        c.fail(f"data and indices must have one rank, got {c.rank(0)} and {c.rank(1)}")
    return Out(c.elem(0), c.shape(1))


@rule("GatherND")
def gather_nd(c):
    data, indices = c.shape(0), c.shape(1)
    b = c.attr("batch_dims", 0)
    last = indices[-1]
    if not isinstance(last, int):
        c.fail(f"the last axis of the indices '{c.node.inputs[1]}' is not known, so the output's rank is not")
    return Out(c.elem(0), indices[:-1] + data[b + last:])


@rule("Scatter", "ScatterElements", "ScatterND")
def scatter(c):
    return c.like(0)


@rule("TopK")
def top_k(c):
    dims = c.shape(0)
    axis = c.axis(c.attr("axis", -1), len(dims))
    k = c.attr("k") if c.opset < 10 else (c.ints(1) or [None])[0]
    d = dims[axis]
    if k is not None and isinstance(d, int) and k > d:
        c.fail(f"k = {k} is larger than axis {axis}'s {d}")
    out = dims[:axis] + [k if k is not None else c.fresh()] + dims[axis + 1:]
    return [Out(c.elem(0), out), Out(INT64, list(out))]


@rule("ArgMax", "ArgMin")
def arg_extreme(c):
    dims = c.shape(0)
    axis = c.axis(c.attr("axis", 0), len(dims))
    keep = c.attr("keepdims", 1)
    return Out(INT64, [1 if k == axis else d for k, d in enumerate(dims) if keep or k != axis])


@rule("OneHot")
def one_hot(c):
    dims = c.shape(0)
    depth = c.value(1)
    axis = c.axis(c.attr("axis", -1), len(dims) + 1)
    d = int(depth.reshape(-1)[0]) if depth is not None else c.fresh()
    return Out(c.elem(2), dims[:axis] + [d] + dims[axis:])


@rule("GatherGrad", domain=MS)
def gather_grad(c):
    return Out(c.elem(2), c.dims(0))


@rule("GatherElementsGrad", domain=MS)
def gather_elements_grad(c):
    return Out(c.elem(0), c.dims(1))
