"""Kernels: shapes and layout (Shape, Reshape, Transpose, Concat, Split, Slice, Pad, ...)."""
from __future__ import annotations

import numpy as np

from .registry import kernel


def normalized_axes(op: str, axes, rank: int) -> list:
    """``axes`` (a number or an array of them) as non-negative ints, each checked to lie in [-rank, rank)."""
    out = []
    for a in np.asarray(axes, dtype=np.int64).reshape(-1).tolist():
        if not -rank <= a < rank:
            raise ValueError(f"{op}: axis {a} is out of range for rank {rank}")
        out.append(a % rank)
    return out


@kernel("Shape")
def Shape(data, *, start=0, end=None):
    return np.array(data.shape[start:end], dtype=np.int64)


@kernel("Size")
def Size(data):
    return np.array(data.size, dtype=np.int64)


@kernel("Reshape", since=5)
def Reshape(data, shape, *, allowzero=0):
    target = [int(d) for d in shape]
    if not allowzero:
        target = [data.shape[i] if d == 0 else d for i, d in enumerate(target)]
    try:
        return data.reshape(target)
    except ValueError:
        raise ValueError(f"Reshape: cannot reshape an input of shape {list(data.shape)} to {list(shape)}") from None


@kernel("Flatten")
def Flatten(input, *, axis=1):
    axis = axis + input.ndim if axis < 0 else axis
    outer = int(np.prod(input.shape[:axis], dtype=np.int64))
    return input.reshape(outer, -1) if input.size else input.reshape(outer, int(np.prod(input.shape[axis:])))


@kernel("Transpose")
def Transpose(data, *, perm=None):
    return np.transpose(data, perm)


@kernel("Squeeze", since=1)
def Squeeze_1(data, *, axes=None):
    return np.squeeze(data, axis=None if axes is None else tuple(normalized_axes("Squeeze", axes, data.ndim)))


@kernel("Squeeze", since=13)
def Squeeze_13(data, axes=None):
    return Squeeze_1(data, axes=axes)


@kernel("Unsqueeze", since=1)
def Unsqueeze_1(data, *, axes):
    rank = data.ndim + len(axes)
    out = data
    for a in sorted(normalized_axes("Unsqueeze", axes, rank)):
        out = np.expand_dims(out, a)
    return out


@kernel("Unsqueeze", since=13)
def Unsqueeze_13(data, axes):
    return Unsqueeze_1(data, axes=np.atleast_1d(axes))   # onnx's function bodies pass a scalar


@kernel("Concat")
def Concat(*inputs, axis):
    out = np.concatenate(inputs, axis=axis)
    dtype = inputs[0].dtype
    return out.view(dtype) if dtype.metadata else out   # keep a bit-pattern type (ir.dtypes)


def _split(input, split, axis, n_outputs):
    axis = axis + input.ndim if axis < 0 else axis
    if split is None:
        size = input.shape[axis]
        chunk = -(-size // n_outputs)
        split = [min(chunk, size - i * chunk) for i in range(n_outputs)]
    bounds = np.cumsum(split)[:-1]
    return tuple(np.split(input, bounds, axis=axis))


@kernel("Split", since=2)
def Split_2(input, *, axis=0, split=None, _outputs=(True,)):
    return _split(input, split, axis, len(_outputs))


@kernel("Split", since=13)
def Split_13(input, split=None, *, axis=0, num_outputs=None, _outputs=(True,)):
    return _split(input, None if split is None else list(split), axis, len(_outputs))


def _slice(data, starts, ends, axes, steps):
    starts = np.asarray(starts, dtype=np.int64).ravel()
    ends = np.asarray(ends, dtype=np.int64).ravel()
    axes = list(range(len(starts))) if axes is None else normalized_axes("Slice", axes, data.ndim)
    steps = [1] * len(starts) if steps is None else [int(s) for s in np.asarray(steps).ravel()]
    index = [slice(None)] * data.ndim
    for a, s, e, st in zip(axes, starts, ends, steps):
        dim = data.shape[a]
        s, e = int(s), int(e)
        if st > 0:
            s = min(max(s + dim if s < 0 else s, 0), dim)
            e = min(max(e + dim if e < 0 else e, 0), dim)
        else:
            s = min(max(s + dim if s < 0 else s, 0), dim - 1)   # the spec clamps to [0, dim-1], -1 would wrap
            e = min(max(e + dim if e < 0 else e, -1), dim - 1)
            if e < 0:
                e = None
        index[a] = slice(s, e, st)
    return data[tuple(index)]


@kernel("Slice", since=1)
def Slice_1(data, *, starts, ends, axes=None):
    return _slice(data, starts, ends, axes, None)


@kernel("Slice", since=10)
def Slice_10(data, starts, ends, axes=None, steps=None):
    return _slice(data, starts, ends, axes, steps)


@kernel("Expand", since=8)
def Expand(input, shape):
    target = np.broadcast_shapes(input.shape, tuple(int(d) for d in shape))
    return np.broadcast_to(input, target)


@kernel("Tile", since=6)
def Tile(input, repeats):
    return np.tile(input, [int(r) for r in repeats])


def _pad(data, pads, mode, value, axes):
    rank = data.ndim
    axes = list(range(rank)) if axes is None else normalized_axes("Pad", axes, rank)
    pads = [int(p) for p in np.asarray(pads).ravel()]
    n = len(axes)
    widths = [[0, 0] for _ in range(rank)]
    for i, a in enumerate(axes):
        widths[a] = [pads[i], pads[i + n]]
    # negative pads crop
    crop = tuple(slice(max(-b, 0), data.shape[i] - max(-e, 0)) for i, (b, e) in enumerate(widths))
    data = data[crop]
    widths = [(max(b, 0), max(e, 0)) for b, e in widths]
    if mode == "constant":
        return np.pad(data, widths, mode="constant", constant_values=value if value is not None else 0)
    return np.pad(data, widths, mode={"reflect": "reflect", "edge": "edge", "wrap": "wrap"}[mode])


@kernel("Pad", since=2)
def Pad_2(data, *, pads, mode="constant", value=0.0):
    return _pad(data, pads, mode, value, None)


@kernel("Pad", since=11)
def Pad_11(data, pads, constant_value=None, axes=None, *, mode="constant"):
    value = None if constant_value is None else np.asarray(constant_value).ravel()[0] \
        if np.asarray(constant_value).size else None
    return _pad(data, pads, mode, value, axes)


def _blocksize(op: str, blocksize: int) -> int:
    if blocksize < 1:
        raise ValueError(f"{op}: attribute blocksize must be given and positive, not {blocksize}")
    return blocksize


@kernel("DepthToSpace", since=1)
def DepthToSpace(input, *, blocksize=0, mode="DCR"):
    mode = mode.decode() if isinstance(mode, bytes) else mode
    n, c, h, w = input.shape
    bs = _blocksize("DepthToSpace", blocksize)
    if c % (bs * bs):
        raise ValueError(f"DepthToSpace: {c} channels are not a multiple of blocksize^2 = {bs * bs}")
    if mode == "DCR":
        moved = input.reshape(n, bs, bs, c // (bs * bs), h, w).transpose(0, 3, 4, 1, 5, 2)
    elif mode == "CRD":
        moved = input.reshape(n, c // (bs * bs), bs, bs, h, w).transpose(0, 1, 4, 2, 5, 3)
    else:
        raise NotImplementedError(f"DepthToSpace: mode '{mode}' is not supported (DCR or CRD)")
    return moved.reshape(n, c // (bs * bs), h * bs, w * bs)


@kernel("SpaceToDepth", since=1)
def SpaceToDepth(input, *, blocksize=0):
    n, c, h, w = input.shape
    bs = _blocksize("SpaceToDepth", blocksize)
    if h % bs or w % bs:
        raise ValueError(f"SpaceToDepth: spatial size {h}x{w} is not a multiple of blocksize {bs}")
    moved = input.reshape(n, c, h // bs, bs, w // bs, bs).transpose(0, 3, 5, 1, 2, 4)
    return moved.reshape(n, c * bs * bs, h // bs, w // bs)
