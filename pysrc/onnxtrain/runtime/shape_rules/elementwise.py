"""Elementwise ops: one input's type, broadcasting, comparisons, casts."""
from __future__ import annotations

import numpy as np

from ...ir.dtypes import DataType
from ._registry import broadcast, shape_rule

SAME = ("Abs", "Acos", "Acosh", "Asin", "Asinh", "Atan", "Atanh", "Ceil", "Celu", "Clip", "Cos", "Cosh", "Elu",
        "Erf", "Exp", "Floor", "Gelu", "HardSigmoid", "HardSwish", "Hardmax", "Identity", "LeakyRelu", "Log",
        "LogSoftmax", "LpNormalization", "LRN", "MeanVarianceNormalization", "Mish", "Neg", "Reciprocal", "Relu",
        "Round", "Selu", "Shrink", "Sigmoid", "Sign", "Sin", "Sinh", "Softmax", "Softplus", "Softsign", "Sqrt",
        "Tan", "Tanh", "ThresholdedRelu", "CumSum", "Trilu", "BitwiseNot", "InstanceNormalization",
        "GroupNormalization", "ReverseSequence")
BINARY = ("Add", "Sub", "Mul", "Div", "Pow", "Mod", "BitShift", "BitwiseAnd", "BitwiseOr", "BitwiseXor",
          "Max", "Min", "Sum", "Mean")
TO_BOOL = ("And", "Or", "Xor", "Equal", "Greater", "Less", "GreaterOrEqual", "LessOrEqual")
ARITHMETIC = {"Add": np.add, "Sub": np.subtract, "Mul": np.multiply}


@shape_rule(*SAME)
def same(ctx):
    return [(ctx.elem(0), ctx.shape(0))]


@shape_rule("Gelu", "FastGelu", "BiasGelu", "QuickGelu", domain="com.microsoft")
def ms_same(ctx):
    return [(ctx.elem(0), ctx.shape(0))]


@shape_rule("IsNaN", "IsInf", "Not")
def to_bool_same(ctx):
    return [(DataType.BOOL, ctx.shape(0))]


def _symbolic_arithmetic(ctx):
    """Add, Sub and Mul of dims vectors where one side is all ints: kept when it leaves symbols unchanged."""
    a, b = ctx.dims(0), ctx.dims(1)
    if a is None or b is None or ctx.node.op_type not in ARITHMETIC:
        return
    try:
        a, b = np.broadcast_arrays(a, b)
    except ValueError:
        return
    out = np.empty(a.shape, dtype=object)
    for idx in np.ndindex(a.shape):
        x, y = a[idx], b[idx]
        if isinstance(x, int) and isinstance(y, int):
            out[idx] = int(ARITHMETIC[ctx.node.op_type](x, y))
        elif ctx.node.op_type == "Mul" and 1 in (x, y):
            out[idx] = y if x == 1 else x
        elif ctx.node.op_type in ("Add", "Sub") and y == 0:
            out[idx] = x
        else:
            return
    ctx.out_dims[0] = out


@shape_rule(*BINARY)
def binary(ctx):
    if ctx.attr("broadcast") is not None:   # before opset 7: the second input is fitted to the first
        return [(ctx.elem(0), ctx.shape(0))]
    shapes = [ctx.shape(i) for i in range(ctx.n_inputs) if ctx.has(i)]
    _symbolic_arithmetic(ctx)
    return [(ctx.elem(0), broadcast(ctx, shapes))]


@shape_rule("PRelu")
def prelu(ctx):
    """The slope broadcasts to X, one way (at opset 6, per channel)."""
    return [(ctx.elem(0), ctx.shape(0))]


@shape_rule(*TO_BOOL)
def compare(ctx):
    return [(DataType.BOOL, broadcast(ctx, [ctx.shape(0), ctx.shape(1)]))]


@shape_rule("Where")
def where(ctx):
    return [(ctx.elem(1), broadcast(ctx, [ctx.shape(i) for i in range(3)]))]


@shape_rule("Cast")
def cast(ctx):
    dims = ctx.dims(0)
    if dims is not None and ctx.attr("to") in (DataType.INT64, DataType.INT32):
        ctx.out_dims[0] = dims
    return [(ctx.attr("to"), ctx.shape(0))]


@shape_rule("CastLike")
def cast_like(ctx):
    return [(ctx.elem(1), ctx.shape(0))]


@shape_rule("Dropout")
def dropout(ctx):
    return [(ctx.elem(0), ctx.shape(0)), (DataType.BOOL, ctx.shape(0))]


@shape_rule("RandomNormalLike", "RandomUniformLike")
def random_like(ctx):
    return [(ctx.attr("dtype", ctx.elem(0)), ctx.shape(0))]
