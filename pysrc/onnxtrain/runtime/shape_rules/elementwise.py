"""Elementwise ops: one shape in, the same out; broadcasting binaries and variadics; comparisons (bool);
Where, Cast.  On shape vectors (int tensors whose elements are dims) the arithmetic is carried out too."""
from __future__ import annotations

import numpy as np

from ._context import BOOL
from ._registry import Out, rule

UNARY = ("Abs", "Acos", "Acosh", "Asin", "Asinh", "Atan", "Atanh", "Ceil", "Cos", "Cosh", "Erf", "Exp", "Floor",
         "Log", "Neg", "Reciprocal", "Round", "Sign", "Sin", "Sinh", "Sqrt", "Tan", "BitwiseNot", "Det")


@rule(*UNARY[:-1])
def unary(c):
    return c.like(0)


@rule("Det")
def det(c):
    return c.out(c.elem(0), c.shape(0)[:-2])


@rule("Identity")
def identity(c):
    s = c.state(0)
    return Out(s.elem, None if s.shape is None else c.shape(0), s.value, s.type)


@rule("Not", "IsNaN", "IsInf")
def boolean_unary(c):
    return c.like(0, BOOL)


def _pairwise(c, fn):
    """``fn`` on the elements of two shape vectors, broadcast; None when either is not a known vector."""
    a, b = c.dims(0), c.dims(1)
    if a is None or b is None or (len(a) != len(b) and 1 not in (len(a), len(b))):
        return None
    n = max(len(a), len(b))
    return [fn(a[i if len(a) > 1 else 0], b[i if len(b) > 1 else 0]) for i in range(n)]


def _arith(op):
    def on(x, y):
        if isinstance(x, int) and isinstance(y, int):
            if op == "Div":
                return None if y == 0 else int(np.trunc(x / y)) if x % y else x // y
            return {"Add": x + y, "Sub": x - y, "Mul": x * y}[op]
        if op in ("Add", "Sub") and y == 0 or op in ("Mul", "Div") and y == 1:
            return x
        if op in ("Add", "Mul") and x == (0 if op == "Add" else 1):
            return y
        return None
    return on


def _shaped(c, value):
    """A computed shape vector, an invented dim for each element not known."""
    return None if value is None else [d if d is not None else c.fresh() for d in value]


def binary_shape(c) -> list:
    """numpy broadcasting; before opset 7, A's shape, B broadcast to it only with ``broadcast=1`` (at ``axis``)."""
    if c.opset >= 7:
        return c.broadcast([0, 1])
    a, b = c.shape(0), c.shape(1)
    if not c.attr("broadcast", 0):
        for k in range(len(a)):
            c.same(0, k, 1, k)
        return c.shape(0)
    axis = c.attr("axis", len(a) - len(b))
    for k in range(len(b)):
        if b[k] != 1:
            c.same(0, axis + k, 1, k)
    return c.shape(0)


@rule("Add", "Sub", "Mul", "Div", "Pow", "Mod", "BitShift", "BitwiseAnd", "BitwiseOr", "BitwiseXor")
def binary(c):
    shape = binary_shape(c)
    value = None
    if c.node.op_type in ("Add", "Sub", "Mul", "Div") and c.elem(0) in (6, 7) and len(shape) <= 1:
        value = _shaped(c, _pairwise(c, _arith(c.node.op_type)))
    return c.out(c.elem(0), shape, value)


def _equal(x, y):
    if isinstance(x, int) and isinstance(y, int):
        return int(x == y)
    if x == y:
        return 1
    if (isinstance(x, int) and x < 0) or (isinstance(y, int) and y < 0):
        return 0  # a dim is never negative
    return None


@rule("Equal", "Less", "LessOrEqual", "Greater", "GreaterOrEqual", "And", "Or", "Xor")
def compare(c):
    shape = binary_shape(c)
    value = None
    if c.node.op_type == "Equal" and len(shape) <= 1:
        known = _pairwise(c, _equal)
        if known is not None and None not in known:
            value = np.array(known, bool).reshape(shape)
    return c.out(BOOL, shape, value)


@rule("Sum", "Max", "Min", "Mean")
def variadic(c):
    return c.out(c.elem(0), c.broadcast())


@rule("Where")
def where(c):
    shape = c.broadcast([0, 1, 2])
    cond, x, y = c.value(0), c.dims(1), c.dims(2)
    value = None
    if cond is not None and x is not None and y is not None and len(shape) <= 1:
        n = shape[0] if shape else 1
        if isinstance(n, int):
            pick = lambda v, i: v[i if len(v) > 1 else 0]  # noqa: E731
            flags = cond.reshape(-1)
            value = [pick(x, i) if flags[i if flags.size > 1 else 0] else pick(y, i) for i in range(n)]
    return c.out(c.elem(1), shape, value)


def _cast_value(c, to: int):
    dims = c.dims(0)
    if dims is not None and to in (6, 7) and c.elem(0) in (6, 7):
        return dims
    return None


@rule("Cast")
def cast(c):
    to = int(c.attr("to"))
    return c.out(to, c.shape(0), _cast_value(c, to))


@rule("CastLike")
def cast_like(c):
    return c.out(c.elem(1), c.shape(0), _cast_value(c, c.elem(1)))
