"""Kernels: elementwise math, activations, comparisons, logic and casts (ai.onnx)."""
from __future__ import annotations

import math

import numpy as np

from ..ir import dtypes
from . import simd
from .quiet import ALL, quiet
from .registry import kernel


def _like(x: np.ndarray, result) -> np.ndarray:
    """``result`` with ``x``'s dtype (numpy 2 promotes float32 with float64 scalars)."""
    return np.asarray(result).astype(x.dtype, copy=False)


def _unary(name: str, fn) -> None:
    def run(X):
        with quiet(ALL):      # log(0) = -inf, sqrt(-1) = nan, as onnxruntime, silently
            return _like(X, fn(X))
    run.__name__ = name
    kernel(name)(run)


for _name, _fn in {
    "Neg": np.negative, "Abs": np.abs, "Sign": np.sign, "Sqrt": np.sqrt, "Exp": np.exp, "Log": np.log,
    "Reciprocal": np.reciprocal, "Floor": np.floor, "Ceil": np.ceil, "Round": np.round, "Sin": np.sin,
    "Cos": np.cos, "Tan": np.tan, "Asin": np.arcsin, "Acos": np.arccos, "Atan": np.arctan, "Sinh": np.sinh,
    "Cosh": np.cosh, "Asinh": np.arcsinh, "Acosh": np.arccosh, "Atanh": np.arctanh, "Tanh": np.tanh,
    "Softsign": lambda x: x / (1 + np.abs(x)),
    "Softplus": lambda x: np.logaddexp(0, x),
}.items():
    _unary(_name, _fn)


@kernel("Relu")
def Relu(X):
    Y = simd.relu(X)
    return np.maximum(X, X.dtype.type(0)) if Y is None else Y    # a typed zero: numpy's slow path otherwise


@kernel("Sigmoid")
def Sigmoid(X):
    Y = simd.sigmoid(X)
    if Y is not None:
        return Y
    # exp of a non-positive argument only, so no overflow warnings for large |x|
    e = np.exp(-np.abs(X))
    return _like(X, np.where(X >= 0, 1 / (1 + e), e / (1 + e)))


@kernel("LeakyRelu")
def LeakyRelu(X, *, alpha=0.01):
    return _like(X, np.where(X >= 0, X, X * X.dtype.type(alpha)))


@kernel("Elu")
def Elu(X, *, alpha=1.0):
    return _like(X, np.where(X > 0, X, X.dtype.type(alpha) * np.expm1(np.minimum(X, 0))))


@kernel("Selu")
def Selu(X, *, alpha=1.67326319217681884765625, gamma=1.05070102214813232421875):
    return _like(X, X.dtype.type(gamma) * np.where(X > 0, X, X.dtype.type(alpha) * np.expm1(np.minimum(X, 0))))


@kernel("HardSigmoid")
def HardSigmoid(X, *, alpha=0.2, beta=0.5):
    return _like(X, np.clip(X * X.dtype.type(alpha) + X.dtype.type(beta), 0, 1))


@kernel("HardSwish")
def HardSwish(X):
    return _like(X, X * np.clip(X * X.dtype.type(1 / 6) + X.dtype.type(0.5), 0, 1))


@kernel("Celu")
def Celu(X, *, alpha=1.0):
    a = X.dtype.type(alpha)
    return _like(X, np.maximum(X, 0) + np.minimum(0, a * np.expm1(np.minimum(X, 0) / a)))


@kernel("ThresholdedRelu")
def ThresholdedRelu(X, *, alpha=1.0):
    return _like(X, np.where(X > alpha, X, 0))


@kernel("PRelu", since=7)
def PRelu(X, slope):
    return _like(X, np.where(X >= 0, X, X * slope))


@kernel("PRelu", since=1)
def PRelu_1(X, slope):
    """PRelu-1 and -6: a slope of one value per channel applies along axis 1 (no numpy broadcasting yet)."""
    if slope.ndim == 1 and X.ndim > 2 and slope.size == X.shape[1] and slope.size > 1:
        slope = slope.reshape((-1,) + (1,) * (X.ndim - 2))
    return PRelu(X, slope)


@kernel("Mish")
def Mish(X):
    return _like(X, X * np.tanh(np.logaddexp(0, X)))


_ERF = np.frompyfunc(math.erf, 1, 1)


def erf(x: np.ndarray) -> np.ndarray:
    """The error function in x's dtype: math.erf per element, correctly rounded; float32 by the SIMD kernel where
    it is loaded (in double and rounded once: the same but within about 1e-15 of a float32 midpoint)."""
    fast = simd.erf(x) if x.size else None
    return fast if fast is not None else _ERF(x.astype(np.float64)).astype(x.dtype) if x.size else x.copy()


@kernel("Erf")
def Erf(input):
    return erf(input)


@kernel("Gelu", since=20)
def Gelu(X, *, approximate="none"):
    x64 = X.astype(np.float64)
    if approximate == "tanh":
        y = 0.5 * x64 * (1 + np.tanh(math.sqrt(2 / math.pi) * (x64 + 0.044715 * x64 ** 3)))
    else:
        y = 0.5 * x64 * (1 + _ERF(x64 / math.sqrt(2)).astype(np.float64))
    return y.astype(X.dtype)


# ---- binary and variadic --------------------------------------------------------------------------

def _int_div(A, B):
    """C-style integer division (truncating toward zero), as ONNX Runtime computes it."""
    q = np.floor_divide(A, B)
    fix = (np.remainder(A, B) != 0) & ((A < 0) != (B < 0))
    return np.where(fix, q + 1, q).astype(np.result_type(A, B))


@kernel("Add", since=7)
def Add(A, B):
    return _like(A, np.add(A, B))


@kernel("Sub", since=7)
def Sub(A, B):
    return _like(A, np.subtract(A, B))


@kernel("Mul", since=7)
def Mul(A, B):
    return _like(A, np.multiply(A, B))


@kernel("Div", since=7)
def Div(A, B):
    if A.dtype.kind in "iu":
        return _int_div(A, B)
    return _like(A, np.divide(A, B))


def _legacy_operand(op: str, A, B, broadcast, axis):
    """B for the opset-1/6 binary ops: with ``broadcast``, B's shape is a run of A's axes starting at
    ``axis`` (the trailing ones when axis is not set); without it the shapes are equal."""
    if not broadcast:
        if A.shape != B.shape:
            raise ValueError(f"{op}: shapes {list(A.shape)} and {list(B.shape)} differ and broadcast is not set")
        return B
    if B.ndim > A.ndim:
        raise ValueError(f"{op}: B of shape {list(B.shape)} cannot broadcast to A of shape {list(A.shape)}")
    if axis is None:
        start = A.ndim - B.ndim
    else:
        start = axis + A.ndim if axis < 0 else axis
        if B.ndim == 1 and B.size == 1:
            return B
    if start < 0 or start + B.ndim > A.ndim or any(b not in (1, a) for a, b in zip(A.shape[start:], B.shape)):
        raise ValueError(f"{op}: B of shape {list(B.shape)} does not match A's axes from {start} ({list(A.shape)})")
    return B.reshape(B.shape + (1,) * (A.ndim - start - B.ndim))


def _legacy_binary(name: str, modern) -> None:
    def run(A, B, *, axis=None, broadcast=0):
        return modern(A, _legacy_operand(name, A, B, broadcast, axis))
    run.__name__ = f"{name}_1"
    kernel(name, since=1)(run)


for _name, _modern in (("Add", Add), ("Sub", Sub), ("Mul", Mul), ("Div", Div)):
    _legacy_binary(_name, _modern)


@kernel("Pow")
def Pow(X, Y):
    if X.dtype.kind in "iu":
        return _like(X, np.power(X.astype(np.float64), Y.astype(np.float64)))
    return _like(X, np.power(X, Y.astype(X.dtype, copy=False)))


@kernel("Mod")
def Mod(A, B, *, fmod=0):
    if A.dtype.kind == "f" and not fmod:
        raise ValueError("Mod: fmod must be 1 for floating-point inputs")
    with np.errstate(invalid="ignore", divide="ignore"):    # fmod(inf, y) = nan; x % 0 = 0, as C
        return _like(A, np.fmod(A, B) if fmod else np.mod(A, B))


def _variadic(name: str, fn) -> None:
    def run(*data_0):
        out = data_0[0]
        for x in data_0[1:]:
            out = fn(out, x)
        return _like(data_0[0], out)
    run.__name__ = name
    kernel(name)(run)


_variadic("Sum", np.add)
_variadic("Max", np.maximum)
_variadic("Min", np.minimum)


@kernel("Mean")
def Mean(*data_0):
    total = data_0[0]
    for x in data_0[1:]:
        total = total + x
    return _like(data_0[0], total / len(data_0))


@kernel("Clip", since=1)
def Clip_1(input, *, min=-3.4028234663852886e38, max=3.4028234663852886e38):
    out = simd.clip(input, min, max)
    return _like(input, np.clip(input, min, max)) if out is None else out


@kernel("Clip", since=11)
def Clip_11(input, min=None, max=None):
    if min is None and max is None:
        return input
    out = simd.clip(input, min, max)
    return _like(input, np.clip(input, min, max)) if out is None else out


@kernel("Where")
def Where(condition, X, Y):
    out = np.where(condition, X, Y).astype(np.result_type(X, Y), copy=False)
    return out.view(X.dtype) if X.dtype.metadata else out   # keep a bit-pattern type (ir.dtypes)


def _text(x: np.ndarray) -> np.ndarray:
    """STRING tensors hold bytes when read from a file and str when fed: compare them as str."""
    if x.dtype != object:
        return x
    return np.vectorize(lambda v: v.decode("utf-8") if isinstance(v, bytes) else v, otypes=[object])(x)


@kernel("Equal")
def Equal(A, B):
    return np.asarray(np.equal(_text(A), _text(B)), dtype=bool)


for _name, _fn in {"Less": np.less, "LessOrEqual": np.less_equal, "Greater": np.greater,
                   "GreaterOrEqual": np.greater_equal, "And": np.logical_and, "Or": np.logical_or,
                   "Xor": np.logical_xor}.items():
    kernel(_name)(lambda A, B, _fn=_fn: np.asarray(_fn(A, B)))

kernel("Not")(lambda X: np.logical_not(X))
kernel("IsNaN")(lambda X: np.isnan(X))


@kernel("IsInf")
def IsInf(X, *, detect_negative=1, detect_positive=1):
    return (np.isposinf(X) & bool(detect_positive)) | (np.isneginf(X) & bool(detect_negative))


@kernel("Identity")
def Identity(input):
    return input


def _parse_strings(x: np.ndarray, to: int) -> np.ndarray:
    """STRING values as numbers: floats in plain or scientific notation, NaN and [+-]INF in any case;
    integer types take integer literals only (the spec leaves other strings undefined)."""
    text = [v.decode("utf-8") if isinstance(v, bytes) else str(v) for v in x.ravel()]
    target = dtypes.to_numpy(to) if to not in dtypes.BIT_PATTERN_TYPES else np.dtype(np.float32)
    if to in (dtypes.INT4, dtypes.UINT4) or target.kind in "iu":
        parse, out = int, np.int64
    elif target.kind in "fc":
        parse, out = float, np.float64
    else:
        raise ValueError(f"Cast from string to {dtypes.name(to)} is not supported")
    try:
        return np.array([parse(t) for t in text], out).reshape(x.shape)
    except ValueError as e:
        raise ValueError(f"Cast from string to {dtypes.name(to)}: {e}") from None


def _format_strings(x: np.ndarray) -> np.ndarray:
    """Values as STRING, as onnx's reference writes them (numpy's str: a float's shortest text that reads
    back to the same value, nan, inf).  onnxruntime prints %.8g, NaN and INF, which can lose a float's
    last digit."""
    if x.dtype.kind not in "fiub":
        raise ValueError(f"Cast from {x.dtype} to string is not supported")
    return np.array([s.encode("utf-8") for s in x.astype(np.str_).ravel().tolist()],
                    dtype=object).reshape(x.shape)


def cast(x: np.ndarray, to: int, saturate: bool = True) -> np.ndarray:
    """``x`` as ONNX type ``to``; ``x``'s own type is read from its dtype (dtypes.from_numpy), so a
    bit-pattern type must come tagged as ir.dtypes makes it."""
    src = dtypes.from_numpy(x.dtype)
    if src == to:
        return x
    if src in dtypes.BIT_PATTERN_TYPES:
        x = dtypes.from_bits(src, x)
    elif src == dtypes.STRING:
        x = _parse_strings(x, to)
    if to == dtypes.STRING:
        return _format_strings(x)
    if to in dtypes.BIT_PATTERN_TYPES:
        if to not in (dtypes.INT4, dtypes.UINT4):
            x = x.astype(np.float32)   # double rounds to float first, as onnxruntime and onnx's reference
        return dtypes.to_bits(to, x, saturate=bool(saturate))
    target = dtypes.to_numpy(to)
    with np.errstate(over="ignore", invalid="ignore"):    # out of range: inf, as onnxruntime
        if target.kind in "iu" and x.dtype.kind == "f":
            return np.trunc(x).astype(target)
        return x.astype(target)


@kernel("Cast")
def Cast(input, *, to, saturate=1):
    return cast(input, to, saturate)


@kernel("CastLike")
def CastLike(input, target_type, *, saturate=1):
    return cast(input, dtypes.from_numpy(target_type.dtype), saturate)


@kernel("Shrink", since=9)
def Shrink(input, *, bias=0.0, lambd=0.5):
    x = input
    return _like(x, np.where(x < -lambd, x + bias, np.where(x > lambd, x - bias, 0)))


# ---- bits ----------------------------------------------------------------------------------------------

@kernel("BitShift", since=11)
def BitShift(X, Y, *, direction=""):
    direction = direction.decode() if isinstance(direction, bytes) else direction
    if X.dtype.kind != "u":
        raise ValueError(f"BitShift takes unsigned integers, not {X.dtype}")
    bits = X.dtype.itemsize * 8
    Y = np.asarray(Y).astype(X.dtype)
    big = Y >= bits                          # numpy (as C) leaves shifts by the width or more undefined
    shift = np.where(big, 0, Y).astype(X.dtype)
    if direction == "LEFT":
        out = np.left_shift(X, shift)
    elif direction == "RIGHT":
        out = np.right_shift(X, shift)
    else:
        raise ValueError(f"BitShift: direction must be LEFT or RIGHT, not {direction!r}")
    return np.where(big, X.dtype.type(0), out).astype(X.dtype)


for _name, _fn in {"BitwiseAnd": np.bitwise_and, "BitwiseOr": np.bitwise_or, "BitwiseXor": np.bitwise_xor}.items():
    kernel(_name, since=18)(lambda A, B, _fn=_fn, _name=_name: _bitwise(_name, _fn, A, B))


def _bitwise(name, fn, A, B):
    if A.dtype.kind not in "iu" or B.dtype != A.dtype:
        raise ValueError(f"{name} takes two integer tensors of one type, not {A.dtype} and {B.dtype}")
    return fn(A, B)


@kernel("BitwiseNot", since=18)
def BitwiseNot(X):
    if X.dtype.kind not in "iu":
        raise ValueError(f"BitwiseNot takes integers, not {X.dtype}")
    return np.invert(X)
