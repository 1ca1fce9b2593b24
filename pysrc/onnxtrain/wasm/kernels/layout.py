"""Shape and Size, known from the static shapes; Identity, Reshape, Flatten, Squeeze, Unsqueeze: views of their
input's buffer (no record), the output shape the numpy kernel's, found on a stand-in with zero strides (no
memory)."""
from __future__ import annotations

import numpy as np

from ...ops import shape as shape_ops
from ...ops.elementwise import Identity as _identity
from ..registry import wasm_kernel


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
