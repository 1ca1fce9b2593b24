"""Gradient rules of the reductions (ops/reduce.py) and the global pools that are reductions."""
from __future__ import annotations

from ._emit import expand_like, reduce, reduce_sum, unsqueeze
from ._registry import rule


def _reduce_axes(c, x, rank):
    if len(x) > 1 and x[1]:
        axes = c.constant(x[1])
        if axes is None:
            raise NotImplementedError(f"{c.where()}: reduction axes must be a constant")
        axes = [int(a) for a in axes.ravel()]
    else:
        axes = c.node.attr("axes")
    if not axes:
        return list(range(rank))
    return sorted(a + rank if a < 0 else a for a in axes)


def _reduction_is_identity(c, x) -> bool:
    """noop_with_empty_axes=1 without axes: the reduction returns its input."""
    no_axes = not (len(x) > 1 and x[1]) or c.constant(x[1]) is not None and c.constant(x[1]).size == 0
    return bool(c.node.attr("noop_with_empty_axes", 0)) and no_axes and not c.node.attr("axes")


def _expand_reduced(c, x, v):
    """A reduction's output-shaped ``v`` broadcast back to the input's shape."""
    axes = _reduce_axes(c, x, len(c.shape(x[0])))
    return expand_like(c, v if c.node.attr("keepdims", 1) else unsqueeze(c, v, axes), x[0])


def _count(c, x, y):
    """How many input elements each output element sums, in x's type."""
    return (c.op("Size", x) / c.op("Size", y)).cast(x)


def _unless_identity(fn):
    """A reduction rule that, under noop_with_empty_axes without axes, passes dY through (the op is Identity)."""
    def wrapped(c, x, y, dy):
        return [dy[0]] if _reduction_is_identity(c, x) else fn(c, x, y, dy)
    wrapped.__name__ = fn.__name__
    return wrapped


@rule("ReduceSum")
@_unless_identity
def _reduce_sum(c, x, y, dy):
    return [_expand_reduced(c, x, dy[0])]


@rule("ReduceMean")
@_unless_identity
def _reduce_mean(c, x, y, dy):
    return [_expand_reduced(c, x, dy[0]) / _count(c, x[0], y[0])]


@rule("GlobalAveragePool")
def _global_average_pool(c, x, y, dy):
    return [expand_like(c, dy[0], x[0]) / _count(c, x[0], y[0])]


def _share_among_extremes(c, x, extreme, dy, axes):
    """dY shared equally among the elements of ``x`` equal to the (broadcastable) ``extreme``, as torch does."""
    hit = x.eq(expand_like(c, extreme, x)).cast(x)
    return [hit * expand_like(c, dy / reduce_sum(c, hit, axes, keepdims=1), x)]


@rule("ReduceMax", "ReduceMin")
@_unless_identity
def _reduce_extreme(c, x, y, dy):
    axes = _reduce_axes(c, x, len(c.shape(x[0])))
    keep = (lambda v: v) if c.node.attr("keepdims", 1) else (lambda v: unsqueeze(c, v, axes))
    return _share_among_extremes(c, x[0], keep(y[0]), keep(dy[0]), axes)


@rule("GlobalMaxPool")
def _global_max_pool(c, x, y, dy):
    return _share_among_extremes(c, x[0], y[0], dy[0], list(range(2, len(c.shape(x[0])))))


@rule("ReduceLogSumExp")
@_unless_identity
def _reduce_log_sum_exp(c, x, y, dy):  # softmax over the reduced axes
    return [_expand_reduced(c, x, dy[0]) * (x[0] - _expand_reduced(c, x, y[0])).exp()]


@rule("ReduceL2")
@_unless_identity
def _reduce_l2(c, x, y, dy):  # x / ||x||, 0 where the norm is 0 (torch's choice)
    norm = _expand_reduced(c, x, y[0])
    return [_expand_reduced(c, x, dy[0]) * (x[0] / norm.eq(0.0).where(1.0, norm))]


@rule("ReduceProd")
@_unless_identity
def _reduce_prod(c, x, y, dy):
    """The product of the other elements: y / x without zeros; with one zero, the product of the rest at the
    zero and 0 elsewhere; with more, 0."""
    axes = _reduce_axes(c, x, len(c.shape(x[0])))
    zero = x[0].eq(0.0)
    nonzero = zero.where(1.0, x[0])
    rest = reduce(c, "ReduceProd", nonzero, axes)
    zeros = reduce_sum(c, zero.cast(x[0]), axes, keepdims=1)
    others = zeros.eq(0.0).where(rest / nonzero, (zeros.eq(1.0) & zero).where(rest, 0.0))
    return [_expand_reduced(c, x, dy[0]) * others]


@rule("ReduceSumSquare")
def _reduce_sum_square(c, x, y, dy):
    if _reduction_is_identity(c, x):
        raise NotImplementedError(f"{c.where()}: noop_with_empty_axes without axes has no gradient rule")
    return [_expand_reduced(c, x, dy[0]) * (x[0] + x[0])]


@rule("ReduceL1")
def _reduce_l1(c, x, y, dy):
    if _reduction_is_identity(c, x):
        raise NotImplementedError(f"{c.where()}: noop_with_empty_axes without axes has no gradient rule")
    return [_expand_reduced(c, x, dy[0]) * x[0].sign()]
