"""Graph values that read like numbers: ``dy * (1 - y * y)`` appends the ONNX nodes that compute it.

A Value is the name of a graph value (a ``str``, so it goes wherever a name goes) that also knows the
context it belongs to and its element type.  Python numbers next to a Value become scalar constants of
the Value's type.  Comparisons are methods (``gt``, ``lt``, ``eq``) because ``==`` and ``<`` must stay
the string comparisons that names need.
"""
from __future__ import annotations

import numpy as np

from ..ir import dtypes

_BOOL_OPS = {"Equal", "Less", "LessOrEqual", "Greater", "GreaterOrEqual", "And", "Or", "Not", "Xor", "IsNaN", "IsInf"}
_INT64_OPS = {"Shape", "Size", "ArgMax", "ArgMin", "NonZero"}


class Value(str):
    def __new__(cls, name: str, ctx, dtype):
        value = super().__new__(cls, name)
        value.ctx, value.dtype = ctx, dtype
        return value

    def _op(self, op_type, *others, **attrs):
        return self.ctx.op(op_type, self, *others, **attrs)

    def __add__(self, other):
        return self._op("Add", other)

    def __radd__(self, other):
        return self.ctx.op("Add", self.ctx.scalar(other, self), self)

    def __sub__(self, other):
        return self._op("Sub", other)

    def __rsub__(self, other):
        return self.ctx.op("Sub", self.ctx.scalar(other, self), self)

    def __mul__(self, other):
        return self._op("Mul", other)

    def __rmul__(self, other):
        return self.ctx.op("Mul", self.ctx.scalar(other, self), self)

    def __truediv__(self, other):
        return self._op("Div", other)

    def __rtruediv__(self, other):
        return self.ctx.op("Div", self.ctx.scalar(other, self), self)

    def __pow__(self, other):
        return self._op("Pow", other)

    def __neg__(self):
        return self._op("Neg")

    def __abs__(self):
        return self._op("Abs")

    def __and__(self, other):
        return self._op("And", other)

    def gt(self, other):
        return self._op("Greater", other)

    def lt(self, other):
        return self._op("Less", other)

    def eq(self, other):
        return self._op("Equal", other)

    def cast(self, like):
        """This value in the element type of ``like`` (a Value)."""
        return self._op("Cast", to=dtypes.from_numpy(like.dtype))

    def where(self, then, otherwise):
        """``then`` where this (boolean) value holds, else ``otherwise``; numbers take the other branch's type."""
        like = then if isinstance(then, Value) else otherwise
        return self.ctx.op("Where", self, self.ctx.scalar(then, like), self.ctx.scalar(otherwise, like))


for _op_type in ("Exp", "Log", "Sqrt", "Reciprocal", "Sigmoid", "Tanh", "Softplus", "Sign", "Sin", "Cos", "Erf"):
    setattr(Value, _op_type.lower(), lambda self, _op_type=_op_type: self._op(_op_type))


def result_dtype(op_type: str, inputs: list, attrs: dict):
    """The numpy element type of ``op_type``'s first output, or None when it cannot be told from here."""
    if op_type in _BOOL_OPS:
        return np.dtype(bool)
    if op_type in _INT64_OPS:
        return np.dtype(np.int64)
    if op_type == "Cast":
        return dtypes.to_numpy(attrs["to"])
    if op_type == "ConstantOfShape":
        return np.asarray(attrs["value"]).dtype
    first = inputs[1 if op_type == "Where" else 0] if inputs else None
    return first.dtype if isinstance(first, Value) else None
