"""Constant and Shape and Size, known before the run; Identity, Reshape, Flatten, Squeeze, Unsqueeze and a Cast to
the input's own type: views of their input's buffer (no record), the output shape the numpy kernel's, found on a
stand-in with zero strides (no memory); Transpose and Expand: strided copies of float32."""
from __future__ import annotations

import numpy as np

from ...ir import dtypes
from ...ops import shape as shape_ops
from ...ops import tensor as tensor_ops
from ...ops.elementwise import Identity as _identity
from ...runtime.program import NotLowered
from ..lowering import contiguous_strides, f32_only
from ..registry import wasm_kernel
from .elementwise import strided


def _stand_in(t) -> np.ndarray:
    return np.broadcast_to(np.zeros((), t.dtype), t.shape)


def _view(k, data, fn, *args, **kwargs):
    return k.view(data, fn(_stand_in(data), *args, **kwargs).shape)


@wasm_kernel("Shape")
def Shape(k, data, *, start=0, end=None):
    return k.known(shape_ops.Shape(_stand_in(data), start=start, end=end))


@wasm_kernel("Size")
def Size(k, data):
    return k.known(shape_ops.Size(_stand_in(data)))


@wasm_kernel("Identity")
def Identity(k, input):
    return _view(k, input, _identity)


@wasm_kernel("Reshape")
def Reshape(k, data, shape, *, allowzero=0):
    return _view(k, data, shape_ops.Reshape, k.value(shape, "Reshape's shape"), allowzero=allowzero)


@wasm_kernel("Flatten")
def Flatten(k, input, *, axis=1):
    return _view(k, input, shape_ops.Flatten, axis=axis)


@wasm_kernel("Squeeze")
def Squeeze(k, data, axes=None):
    if k.opset is not None and k.opset < 13:
        return _view(k, data, shape_ops.Squeeze_1, axes=axes)       # axes is the attribute
    return _view(k, data, shape_ops.Squeeze_13, k.value(axes, "Squeeze's axes"))


@wasm_kernel("Unsqueeze")
def Unsqueeze(k, data, axes=None):
    if k.opset is not None and k.opset < 13:
        return _view(k, data, shape_ops.Unsqueeze_1, axes=axes)
    return _view(k, data, shape_ops.Unsqueeze_13, k.value(axes, "Unsqueeze's axes"))


@wasm_kernel("Constant")
def Constant(k, **value):
    return k.known(tensor_ops.Constant(**value))


@wasm_kernel("Cast")
def Cast(k, input, *, to, saturate=1):
    if dtypes.from_numpy(input.dtype) != to:
        raise NotLowered(f"Cast of {input.describe()} to ONNX type {to} (the executor casts nothing)")
    return k.view(input, input.shape)


@wasm_kernel("Transpose")
def Transpose(k, data, *, perm=None):
    f32_only("Transpose", data)
    perm = list(range(data.rank))[::-1] if perm is None else [int(p) + data.rank if p < 0 else int(p) for p in perm]
    if sorted(perm) != list(range(data.rank)):
        raise NotLowered(f"Transpose: perm {perm} of {data.describe()}")
    strides = contiguous_strides(data.shape)
    out = k.output([data.shape[p] for p in perm])
    strided(k, "copy", out, data, a_strides=[strides[p] for p in perm])
    return out


@wasm_kernel("Expand")
def Expand(k, input, shape):
    f32_only("Expand", input)
    out = k.output(shape_ops.Expand(_stand_in(input), k.value(shape, "Expand's shape")).shape)
    strided(k, "copy", out, input)
    return out
