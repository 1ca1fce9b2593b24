"""Constant and Shape and Size, known before the run; Identity, Reshape, Flatten, Squeeze, Unsqueeze and a Cast to
the input's own type: views of their input's buffer (no record), the output shape the numpy kernel's, found on a
stand-in with zero strides (no memory); Transpose, Expand, Slice, Concat and Split: strided copies (of any
element size); Cast to float32 from the integers and bool (numpy's astype)."""
from __future__ import annotations

import numpy as np

from ...ir import dtypes
from ...ops import shape as shape_ops
from ...ops import tensor as tensor_ops
from ...ops.elementwise import Identity as _identity
from ...runtime.program import NotLowered
from ..lowering import broadcast_strides, strides as contiguous_strides
from ..registry import wasm_kernel
from .elementwise import MAX_RANK, strided


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


CASTS_TO_F32 = {np.dtype(np.uint8): 0, np.dtype(np.int8): 1, np.dtype(np.int32): 2, np.dtype(np.int64): 3,
                np.dtype(np.bool_): 4}   # executor.c's cast_f32 sources


@wasm_kernel("Cast")
def Cast(k, input, *, to, saturate=1):
    if dtypes.from_numpy(input.dtype) == to:
        return k.view(input, input.shape)
    if to != dtypes.DataType.FLOAT or input.dtype.metadata or input.dtype not in CASTS_TO_F32:
        raise NotLowered(f"Cast of {input.describe()} to ONNX type {to} (the executor casts integers and bool to "
                         f"float32)")
    y = k.output(input.shape)
    if y.size:
        k.call("cast_f32", [input], [y], [CASTS_TO_F32[input.dtype], y.size])
    return y


def copy(k, out, x, shape, in_strides, in_offset: int = 0, out_strides=None, out_offset: int = 0) -> None:
    """out[out_offset + i . out_strides] = x[in_offset + i . in_strides] over the index space ``shape`` (element
    strides; out contiguous by default); float32 by the element-wise kernel, other types by copy_strided."""
    out_strides = contiguous_strides(shape) if out_strides is None else list(out_strides)
    if int(np.prod(shape)) == 0:
        return
    if x.dtype == np.float32 and in_offset == out_offset == 0 and out_strides == contiguous_strides(out.shape) \
            and tuple(shape) == out.shape:
        strided(k, "copy", out, x, a_strides=list(in_strides))
        return
    if x.dtype.itemsize not in (1, 2, 4, 8) or x.dtype != out.dtype:
        raise NotLowered(f"a copy of {x.describe()} into {out.describe()}")
    dims, si, so = [], [], []
    for size, a, b in zip(shape, in_strides, out_strides):     # size-1 dims dropped, runs merged
        if size == 1:
            continue
        if dims and si[-1] == a * size and so[-1] == b * size:
            dims[-1] *= size
            si[-1], so[-1] = a, b
            continue
        dims.append(size)
        si.append(a)
        so.append(b)
    if len(dims) > MAX_RANK:
        raise NotLowered(f"a copy over {len(dims)} dims (the C kernel takes up to {MAX_RANK})")
    dims, si, so = dims or [1], si or [0], so or [0]
    k.call("copy_strided", [x], [out], [x.dtype.itemsize, len(dims), in_offset, out_offset, *dims, *si, *so])


@wasm_kernel("Transpose")
def Transpose(k, data, *, perm=None):
    perm = list(range(data.rank))[::-1] if perm is None else [int(p) + data.rank if p < 0 else int(p) for p in perm]
    if sorted(perm) != list(range(data.rank)):
        raise NotLowered(f"Transpose: perm {perm} of {data.describe()}")
    strides = contiguous_strides(data.shape)
    out = k.output([data.shape[p] for p in perm], data.dtype)
    copy(k, out, data, out.shape, [strides[p] for p in perm])
    return out


@wasm_kernel("Expand")
def Expand(k, input, shape):
    out = k.output(shape_ops.Expand(_stand_in(input), k.value(shape, "Expand's shape")).shape, input.dtype)
    copy(k, out, input, out.shape, broadcast_strides(input.shape, out.shape))
    return out


class _Index:
    """A stand-in that records the index numpy's Slice kernel takes of it."""

    def __init__(self, shape):
        self.shape, self.ndim = tuple(shape), len(shape)

    def __getitem__(self, index):
        return index


def _slice(k, data, starts, ends, axes, steps):
    index = shape_ops._slice(_Index(data.shape), starts, ends, axes, steps)
    strides = contiguous_strides(data.shape)
    offset, shape, in_strides = 0, [], []
    for sl, dim, stride in zip(index, data.shape, strides):
        start, stop, step = sl.indices(dim)
        shape.append(len(range(start, stop, step)))
        offset += (start if shape[-1] else 0) * stride
        in_strides.append(step * stride)
    out = k.output(shape, data.dtype)
    copy(k, out, data, shape, in_strides, offset)
    return out


@wasm_kernel("Slice")
def Slice(k, data, starts=None, ends=None, axes=None, steps=None):
    if k.opset is not None and k.opset < 10:
        return _slice(k, data, starts, ends, axes, None)          # attributes
    return _slice(k, data, k.value(starts, "Slice's starts"), k.value(ends, "Slice's ends"),
                  k.value(axes, "Slice's axes"), k.value(steps, "Slice's steps"))


@wasm_kernel("Concat")
def Concat(k, *inputs, axis):
    first = inputs[0] if inputs else None
    axis = axis + first.rank if inputs and axis < 0 else axis
    if not inputs or not 0 <= axis < first.rank or any(
            t.dtype != first.dtype or t.rank != first.rank or
            t.shape[:axis] + t.shape[axis + 1:] != first.shape[:axis] + first.shape[axis + 1:] for t in inputs):
        raise NotLowered("Concat of " + ", ".join(t.describe() for t in inputs) + f" along axis {axis}")
    shape = first.shape[:axis] + (sum(t.shape[axis] for t in inputs),) + first.shape[axis + 1:]
    out = k.output(shape, inputs[0].dtype)
    out_strides, at = contiguous_strides(shape), 0
    for t in inputs:
        copy(k, out, t, t.shape, contiguous_strides(t.shape), 0, out_strides, at * out_strides[axis])
        at += t.shape[axis]
    return out


def _split(k, input, split, axis, outputs: int):
    axis = axis + input.rank if axis < 0 else axis
    parts = shape_ops._split(_stand_in(input), split, axis, outputs)
    strides, at, outs = contiguous_strides(input.shape), 0, []
    for i, part in enumerate(parts):
        out = k.output(part.shape, input.dtype) if k.used(i) else None
        if out is not None:
            copy(k, out, input, out.shape, strides, at * strides[axis])
        at += part.shape[axis]
        outs.append(out)
    return tuple(outs)


@wasm_kernel("Split")
def Split(k, input, split=None, *, axis=0, num_outputs=None):
    outputs = len(k.node.outputs)
    if k.opset is not None and k.opset < 13:
        return _split(k, input, split, axis, outputs)              # the attribute
    split = k.value(split, "Split's split")
    return _split(k, input, None if split is None else list(split), axis, outputs)


@wasm_kernel("Gather")
def Gather(k, data, indices, *, axis=0):
    """data[.., indices, ..] along ``axis`` (negative indices from the end; one outside the axis is the numpy
    kernel's IndexError, reported by the executor as bad input), elements of any size."""
    axis = axis + data.rank if axis < 0 else axis
    if not 0 <= axis < data.rank or indices.dtype != np.int64 or data.dtype.itemsize not in (1, 2, 4, 8):
        raise NotLowered(f"Gather of {data.describe()} along axis {axis} by {indices.describe()}")
    outer = int(np.prod(data.shape[:axis]))
    inner = int(np.prod(data.shape[axis + 1:]))
    out = k.output(data.shape[:axis] + indices.shape + data.shape[axis + 1:], data.dtype)
    if out.size:
        k.call("gather", [data, indices], [out], [data.dtype.itemsize, outer, data.shape[axis], inner, indices.size])
    return out
