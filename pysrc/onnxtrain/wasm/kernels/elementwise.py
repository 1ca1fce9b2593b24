"""Element-wise float32 ops: Relu, Sigmoid, Softmax and their gradients on the C kernels the numpy provider calls
(ops/simd.py), and Add, Sub, Mul, Div, same shape or broadcast, one IEEE operation per element as numpy's."""
from __future__ import annotations

import numpy as np

from ...ir.ort_names import MS_DOMAIN
from ...runtime.program import NotLowered
from ..lowering import broadcast_strides, f32_only
from ..registry import wasm_kernel

STRIDED = {"copy": 0, "Add": 1, "Sub": 2, "Mul": 3, "Div": 4}
MAX_RANK = 8


def strided(k, kind: str, out, a, b=None, a_strides=None, b_strides=None) -> None:
    """out (contiguous) = a kind b, a and b read at the given element strides (default: broadcast to out)."""
    rank = out.rank
    if rank > MAX_RANK:
        raise NotLowered(f"{kind}: rank {rank} (the C kernel takes up to {MAX_RANK})")
    if out.size == 0:
        return
    sa = a_strides if a_strides is not None else broadcast_strides(a.shape, out.shape)
    sb = (b_strides if b_strides is not None else broadcast_strides(b.shape, out.shape)) if b is not None \
        else [0] * rank
    shape, sa, sb = merged(list(out.shape), list(sa), list(sb))
    k.call("strided", [a, b], [out], [STRIDED[kind], len(shape), *shape, *sa, *sb])


def merged(shape: list, sa: list, sb: list) -> tuple:
    """The dims of a strided op with each run that both operands (and the contiguous output) step through as
    one dim merged into it, and the dims of size 1 dropped: fewer, longer rows for the C loop."""
    dims, a_steps, b_steps = [], [], []
    for size, x, y in zip(shape, sa, sb):
        if size == 1:
            continue
        if dims and a_steps[-1] == x * size and b_steps[-1] == y * size:
            dims[-1] *= size
            a_steps[-1], b_steps[-1] = x, y
            continue
        dims.append(size)
        a_steps.append(x)
        b_steps.append(y)
    return dims or [1], a_steps or [0], b_steps or [0]


def _unary(k, op: str, kernel: str, x):
    f32_only(op, x)
    y = k.output(x.shape)
    if y.size:
        k.call(kernel, [x], [y], [y.size])
    return y


def _grad(k, op: str, kernel: str, dy, x):
    f32_only(op, dy, x)
    if dy.shape != x.shape:
        raise NotLowered(f"{op}: {dy.describe()} and {x.describe()} differ in shape")
    dx = k.output(x.shape)
    if dx.size:
        k.call(kernel, [dy, x], [dx], [dx.size])
    return dx


@wasm_kernel("Relu")
def Relu(k, X):
    return _unary(k, "Relu", "relu", X)


@wasm_kernel("Sigmoid")
def Sigmoid(k, X):
    return _unary(k, "Sigmoid", "sigmoid", X)


@wasm_kernel("ReluGrad", MS_DOMAIN)
def ReluGrad(k, dY, X):
    return _grad(k, "ReluGrad", "relu_grad", dY, X)


@wasm_kernel("SigmoidGrad", MS_DOMAIN)
def SigmoidGrad(k, dY, Y):
    return _grad(k, "SigmoidGrad", "sigmoid_grad", dY, Y)


def _rows(k, op: str, x, axis: int):
    """(rows, cols) of a softmax over the last axis (ops/simd.py's _by_rows takes no other)."""
    f32_only(op, x)
    if x.rank == 0 or axis not in (-1, x.rank - 1) or x.shape[-1] == 0:
        raise NotLowered(f"{op}: axis {axis} of {x.describe()} (the C kernel takes the last axis)")
    return x.size // x.shape[-1], x.shape[-1]


@wasm_kernel("Softmax")
def Softmax(k, input, *, axis=-1):
    if k.opset is not None and k.opset < 13:
        raise NotLowered("Softmax before opset 13 (the input seen as 2-D)")
    rows, cols = _rows(k, "Softmax", input, axis)
    y = k.output(input.shape)
    k.call("softmax", [input], [y], [rows, cols])
    return y


@wasm_kernel("SoftmaxGrad_13", MS_DOMAIN)
def SoftmaxGrad_13(k, dY, Y, *, axis=-1):
    rows, cols = _rows(k, "SoftmaxGrad_13", Y, axis)
    f32_only("SoftmaxGrad_13", dY)
    if dY.shape != Y.shape:
        raise NotLowered(f"SoftmaxGrad_13: {dY.describe()} and {Y.describe()} differ in shape")
    dx = k.output(Y.shape)
    k.call("softmax_grad", [dY, Y], [dx], [rows, cols])
    return dx


def _binary(op: str):
    def lower(k, A, B, **legacy):
        if legacy or (k.opset is not None and k.opset < 7):
            raise NotLowered(f"{op} before opset 7 (broadcast and axis attributes)")
        f32_only(op, A, B)
        try:
            shape = np.broadcast_shapes(A.shape, B.shape)
        except ValueError:
            raise NotLowered(f"{op}: {A.describe()} and {B.describe()} do not broadcast") from None
        out = k.output(shape)
        strided(k, op, out, A, B)
        return out
    lower.__name__ = op
    return lower


for _op in ("Add", "Sub", "Mul", "Div"):
    wasm_kernel(_op)(_binary(_op))



# executor.c's unary kinds: -x, sqrtf, 1 / x (IEEE, numpy's bits); exp and tanh: mathlib.c's (through double,
# rounded once), within 2 ulp of numpy's SIMD exp and tanh, not their bits (tests/wasm/test_lowerings_text.py)
UNARY = {"Neg": 0, "Sqrt": 1, "Reciprocal": 2, "Exp": 3, "Tanh": 4}


def _one_op(op: str):
    def lower(k, X):
        f32_only(op, X)
        y = k.output(X.shape)
        if y.size:
            k.call("unary", [X], [y], [UNARY[op], y.size])
        return y
    lower.__name__ = op
    return lower


for _op in UNARY:
    wasm_kernel(_op)(_one_op(_op))


@wasm_kernel("Sum")
def Sum(k, *data_0):
    """ops/elementwise.py's Sum: the inputs added left to right, broadcast."""
    f32_only("Sum", *data_0)
    if not data_0:
        raise NotLowered("Sum of no inputs")
    try:
        shape = np.broadcast_shapes(*[t.shape for t in data_0])
    except ValueError:
        raise NotLowered("Sum: inputs " + ", ".join(t.describe() for t in data_0) + " do not broadcast") from None
    out = k.output(shape)
    if len(data_0) == 1:
        strided(k, "copy", out, data_0[0])
        return out
    strided(k, "Add", out, data_0[0], data_0[1])
    for t in data_0[2:]:
        strided(k, "Add", out, out, t)
    return out


@wasm_kernel("Scale", MS_DOMAIN)
def Scale(k, input, scale, *, scale_down=0):
    """ops/training.py's Scale: input times a float32 factor known before the run (1 / scale when scale_down)."""
    f32_only("Scale", input)
    value = np.asarray(k.value(scale, "Scale's scale"))
    if value.size != 1 or value.dtype.kind not in "fiu":
        raise NotLowered(f"Scale: scale {scale.describe()}")
    value = np.float32(value.reshape(()))
    if value == 0:
        raise NotLowered("Scale by 0 (the numpy kernel's error)")
    factor = np.float32(1) / value if scale_down else value
    out = k.output(input.shape)
    strided(k, "Mul", out, input, k.known(np.float32(factor)))
    return out


def _bound(k, value):
    """ops/simd.py's _bound of a Clip bound known before the run: a float, or None where numpy clips instead."""
    if value is None:
        return None
    value = np.asarray(value.value if not isinstance(value, float) else value)
    if value.size != 1 or value.dtype.kind != "f":
        return None
    bound = float(np.float32(value.reshape(())))
    return None if bound != bound else bound


def _clip(k, x, lo, hi):
    f32_only("Clip", x)
    if any(not isinstance(b, float) and b is not None and b.value is None for b in (lo, hi)):
        return _clip_during_the_run(k, x, lo, hi)
    lo, hi = _bound(k, lo), _bound(k, hi)
    if lo is None or hi is None:
        raise NotLowered("Clip with one bound or a NaN bound (numpy's clip, not the C kernel)")
    y = k.output(x.shape)
    if y.size:
        k.call("clip", [x], [y], [y.size, np.float32(lo), np.float32(hi)])
    return y


def _clip_during_the_run(k, x, lo, hi):
    """Bounds computed or fed during the step (a frozen initializer of training artifacts): both one float32,
    read by the executor when it runs (simd.clip, or np.clip where one is NaN, as the numpy kernel)."""
    if lo is None or hi is None or any(b.dtype != np.float32 or b.size != 1 for b in (lo, hi)):
        raise NotLowered("Clip with one bound, or a bound not one float32, computed during the step")
    y = k.output(x.shape)
    if y.size:
        k.call("clip_bounds", [x, lo, hi], [y], [y.size])
    return y


@wasm_kernel("Clip")
def Clip(k, input, min=None, max=None):
    """ops/elementwise.py's Clip_1 (bounds as attributes, default the float32 range) and Clip_11 (as inputs) on
    simd.clip's kernel."""
    if k.opset is not None and k.opset < 11:
        return _clip(k, input, -3.4028234663852886e38 if min is None else float(min),
                     3.4028234663852886e38 if max is None else float(max))
    if min is None and max is None:
        return k.view(input, input.shape)
    return _clip(k, input, min, max)


@wasm_kernel("Erf")
def Erf(k, input):
    """simd.erf's kernel: each element in double, rounded once."""
    return _unary(k, "Erf", "erf", input)


@wasm_kernel("Pow")
def Pow(k, X, Y):
    """X to an integer power known before the run (a decomposed LayerNormalization's square): the correctly rounded
    power (executor.c's powi), within an ulp of numpy's float32 power, not its bits (test_lowerings_text.py)."""
    f32_only("Pow", X)
    exponent = None if Y.value is None else np.asarray(Y.value)
    if exponent is None or exponent.size != 1 or exponent.dtype.kind not in "fiu":
        raise NotLowered(f"Pow: exponent {Y.describe()} (the C kernel takes one integer known before the run)")
    value = float(np.asarray(exponent, X.dtype).reshape(()))     # numpy's: Y.astype(X.dtype)
    if not np.isfinite(value) or value != int(value):
        raise NotLowered(f"Pow: exponent {value} is not an integer")
    try:
        shape = np.broadcast_shapes(X.shape, Y.shape)
    except ValueError:
        raise NotLowered(f"Pow: {X.describe()} and {Y.describe()} do not broadcast") from None
    if shape != X.shape:
        raise NotLowered(f"Pow: the exponent {Y.describe()} broadcasts {X.describe()}")
    y = k.output(X.shape)
    if y.size:
        k.call("powi", [X], [y], [y.size, int(value)])
    return y


@wasm_kernel("TanhGrad", MS_DOMAIN)
def TanhGrad(k, dY, Y):
    """ops/training.py's dY * (1 - Y * Y), one IEEE operation a step."""
    f32_only("TanhGrad", dY, Y)
    if dY.shape != Y.shape:
        raise NotLowered(f"TanhGrad: {dY.describe()} and {Y.describe()} differ in shape")
    square, rest, dx = k.output(Y.shape), k.output(Y.shape), k.output(Y.shape)
    strided(k, "Mul", square, Y, Y)
    strided(k, "Sub", rest, k.known(np.float32(1)), square)
    strided(k, "Mul", dx, dY, rest)
    return dx


def _gelu(k, op: str, x):
    f32_only(op, x)
    y = k.output(x.shape)
    if y.size:
        k.call("gelu", [x], [y], [y.size])
    return y


@wasm_kernel("Gelu")
def Gelu(k, X, *, approximate="none"):
    """ops/elementwise.py's exact GELU, in double and rounded once (executor.c's gelu: numpy's bits but within
    about 1e-15 of a float32 midpoint)."""
    approximate = approximate.decode() if isinstance(approximate, bytes) else approximate
    if approximate != "none":
        raise NotLowered(f"Gelu with approximate={approximate!r} (the C kernel is the erf GELU)")
    return _gelu(k, "Gelu", X)


@wasm_kernel("Gelu", MS_DOMAIN)
def Gelu_ms(k, X):
    return _gelu(k, "Gelu", X)


@wasm_kernel("BiasGelu", MS_DOMAIN)
def BiasGelu(k, A, B):
    f32_only("BiasGelu", A, B)
    try:
        shape = np.broadcast_shapes(A.shape, B.shape)
    except ValueError:
        raise NotLowered(f"BiasGelu: {A.describe()} and {B.describe()} do not broadcast") from None
    total = k.output(shape)
    strided(k, "Add", total, A, B)
    return _gelu(k, "BiasGelu", total)


@wasm_kernel("GeluGrad", MS_DOMAIN)
def GeluGrad(k, dY, X):
    """ops/fused.py's GeluGrad in double, rounded once (executor.c's gelu_grad, as the forward)."""
    return _grad(k, "GeluGrad", "gelu_grad", dY, X)
