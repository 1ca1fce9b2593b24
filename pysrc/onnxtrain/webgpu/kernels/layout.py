"""Shapes and layout: Shape and Size (known before the run), the views Reshape, Flatten, Squeeze and Unsqueeze,
and the copies Transpose, Slice, Expand, Tile, Concat, Split and Pad (one strided-copy shader, layout_copy, and a
padding one), Gather with its own shader, and the gradients GatherGrad, SliceGrad and ConcatTraining."""
from __future__ import annotations

import numpy as np

from ...ir.ort_names import MS_DOMAIN
from ..errors import NotLowered
from ..tensors import gtype
from ..lowering import MAX_GROUPS
from ..registry import gpu_kernel
from ...runtime.program import Tensor
from .common import broadcast_shape, broadcast_strides, strides

MAX_COPY_RANK = 12   # dimensions layout_copy takes after merging (3 + 3 * 12 parameters)
MAX_PAD_RANK = 15    # 4 + 4 * 15 parameters
MAX_SLICE_GRAD_RANK = 12   # 1 + 5 * 12 parameters
TILE = 32            # layout_transpose's tile side
PAD_MODES = {"constant": 0, "edge": 1, "reflect": 2, "wrap": 3}


# -- helpers --------------------------------------------------------------------------------------------

def _ints(k, x, what: str):
    """An attribute's list, or a Tensor input's value known before the run, as Python ints; None stays None."""
    if x is None:
        return None
    if isinstance(x, Tensor):
        x = k.value(x, what)
    return [int(v) for v in np.asarray(x).reshape(-1)]


def _axis(op: str, axis: int, rank: int) -> int:
    if not -rank <= axis < rank:
        raise ValueError(f"{op}: axis {axis} is out of range for rank {rank}")
    return axis % rank


def _size(shape) -> int:
    return int(np.prod(shape, dtype=np.int64))


def _merge(dims, *stride_lists):
    """``dims`` (outermost first) without size-1 dimensions, neighbours merged where every stride list steps
    through them as one: the same copy over fewer dimensions."""
    kept = [(int(d), [int(s[i]) for s in stride_lists]) for i, d in enumerate(dims) if d != 1]
    merged: list = []
    for d, st in kept:
        if merged:
            pd, pst = merged[-1]
            if all(p == s * d for p, s in zip(pst, st)):
                merged[-1] = (pd * d, st)
                continue
        merged.append((d, st))
    if not merged:
        merged = [(1, [0] * len(stride_lists))]
    return [d for d, _ in merged], [[st[j] for _, st in merged] for j in range(len(stride_lists))]


def _copy_plan(op: str, dims, src_strides, src_base, dst_strides, dst_base):
    """The parameters of layout_copy for Y[dst_base + c.dst_strides] = X[src_base + c.src_strides] over the
    coordinates c of ``dims``, and its rank; None when there is nothing to copy."""
    n = _size(dims)
    if n == 0:
        return None
    dims, (ss, ds) = _merge(dims, src_strides, dst_strides)
    if len(dims) > MAX_COPY_RANK:
        raise NotLowered(f"{op}: the copy takes at most {MAX_COPY_RANK} dimensions after merging, not {len(dims)}")
    return [n, src_base, dst_base, *dims[::-1], *ss[::-1], *ds[::-1]], len(dims)


def _copy(k, x: Tensor, y: Tensor, plan) -> None:
    if plan is None:
        return
    tiled = _tiled_transpose(*plan)
    if tiled is not None:
        params, grid, batch_rank = tiled
        k.dispatch("layout_transpose", [x], [y], params, grid, T=gtype(x), RB=batch_rank)
        return
    params, rank = plan
    k.dispatch("layout_copy", [x], [y], params, params[0], T=gtype(x), RANK=rank)


def _tiled_transpose(params, rank):
    """layout_transpose's parameters, grid and batch rank for a copy into a contiguous Y from base 0 whose
    innermost dimension is not X's (a transpose: the plain copy would read X with a stride); else None."""
    if rank < 2 or params[1] or params[2]:
        return None
    dims, ss, ds = params[3:3 + rank], params[3 + rank:3 + 2 * rank], params[3 + 2 * rank:]
    if ds != strides(dims[::-1])[::-1] or ss[0] == 1 or 1 not in ss:
        return None
    p = ss.index(1)
    batch = [i for i in range(rank) if i not in (0, p)]
    count = _size([dims[i] for i in batch])
    grid = (-(-dims[0] // TILE), -(-dims[p] // TILE), count)
    if min(dims[0], dims[p]) < 8 or max(grid) > MAX_GROUPS:
        return None
    return ([dims[0], dims[p], ss[0], ds[p], *(dims[i] for i in batch), *(ss[i] for i in batch),
             *(ds[i] for i in batch)], grid, len(batch))


def _gather_copy(k, op: str, x: Tensor, out_shape, src_strides, src_base=0) -> Tensor:
    """Y of ``out_shape`` (contiguous) read from X through ``src_strides`` from ``src_base``: a view of X when
    that reads X whole in its order (a transpose of size-1 axes, a slice of everything, an expand to X's shape)."""
    plan = _copy_plan(op, out_shape, src_strides, src_base, strides(out_shape), 0)
    if plan is not None and plan[1] == 1 and plan[0] == [x.size, 0, 0, x.size, 1, 1]:
        return k.view(x, out_shape)
    y = k.output(out_shape, x.dtype)
    _copy(k, x, y, plan)
    return y


def _rev(values) -> list:
    """Per-dimension parameters innermost first, as the shaders read them."""
    return list(values)[::-1]


def _same_type(op: str, tensors) -> None:
    if len({gtype(t) for t in tensors}) > 1:
        raise NotLowered(f"{op} of {', '.join(t.dtype.name for t in tensors)}")


# -- known before the run ---------------------------------------------------------------------------------

@gpu_kernel("Shape")
def Shape(k, data, *, start=0, end=None):
    return k.known(np.array(data.shape[start:end], dtype=np.int64))


@gpu_kernel("Size")
def Size(k, data):
    return k.known(np.array(data.size, dtype=np.int64))


# -- views --------------------------------------------------------------------------------------------------

def _reshape_target(data: Tensor, shape, allowzero: int) -> list:
    target = [int(d) for d in shape]
    if not allowzero:
        target = [data.shape[i] if d == 0 else d for i, d in enumerate(target)]
    unknown = [i for i, d in enumerate(target) if d == -1]
    if len(unknown) > 1 or any(d < -1 for d in target):
        raise ValueError(f"Reshape: cannot reshape an input of shape {list(data.shape)} to {list(shape)}")
    if unknown:
        rest = _size([d for d in target if d != -1])
        if rest == 0 or data.size % rest:
            raise ValueError(f"Reshape: cannot reshape an input of shape {list(data.shape)} to {list(shape)}")
        target[unknown[0]] = data.size // rest
    if _size(target) != data.size:
        raise ValueError(f"Reshape: cannot reshape an input of shape {list(data.shape)} to {list(shape)}")
    return target


@gpu_kernel("Reshape")
def Reshape(k, data, shape, *, allowzero=0):
    return k.view(data, _reshape_target(data, _ints(k, shape, "Reshape's shape"), allowzero))


@gpu_kernel("Flatten")
def Flatten(k, input, *, axis=1):
    if not -input.rank <= axis <= input.rank:
        raise ValueError(f"Flatten: axis {axis} is out of range for rank {input.rank}")
    axis = axis + input.rank if axis < 0 else axis
    return k.view(input, (_size(input.shape[:axis]), _size(input.shape[axis:])))


@gpu_kernel("Squeeze")
def Squeeze(k, data, axes=None):
    """Squeeze-1 (axes an attribute) and Squeeze-13 (axes an input)."""
    axes = _ints(k, axes, "Squeeze's axes")
    if axes is None:
        axes = [i for i, d in enumerate(data.shape) if d == 1]
    axes = {_axis("Squeeze", a, data.rank) for a in axes}
    if any(data.shape[a] != 1 for a in axes):
        raise ValueError(f"Squeeze: axes {sorted(axes)} of shape {list(data.shape)} are not all of size 1")
    return k.view(data, [d for i, d in enumerate(data.shape) if i not in axes])


@gpu_kernel("Unsqueeze")
def Unsqueeze(k, data, axes=None):
    """Unsqueeze-1 (axes an attribute) and Unsqueeze-13 (axes an input)."""
    axes = _ints(k, axes, "Unsqueeze's axes")
    if axes is None:
        raise ValueError("Unsqueeze: axes are required")
    rank = data.rank + len(axes)
    axes = sorted(_axis("Unsqueeze", a, rank) for a in axes)
    if len(set(axes)) != len(axes):
        raise ValueError(f"Unsqueeze: axes {axes} repeat")
    shape = list(data.shape)
    for a in axes:
        shape.insert(a, 1)
    return k.view(data, shape)


# -- copies -------------------------------------------------------------------------------------------------

@gpu_kernel("Transpose")
def Transpose(k, data, *, perm=None):
    perm = list(range(data.rank))[::-1] if perm is None else [_axis("Transpose", p, data.rank) for p in perm]
    if sorted(perm) != list(range(data.rank)):
        raise ValueError(f"Transpose: perm {perm} is not a permutation of {data.rank} axes")
    st = strides(data.shape)
    return _gather_copy(k, "Transpose", data, [data.shape[p] for p in perm], [st[p] for p in perm])


def _onnx_slice(dim: int, start: int, end: int, step: int) -> tuple:
    """(first index, length) of ONNX Slice along an axis of ``dim`` (starts clamped to [0, dim - 1] and ends to
    [-1, dim - 1] for a negative step, as the spec and onnxruntime)."""
    if step == 0:
        raise ValueError("Slice: a step must not be 0")
    start = start + dim if start < 0 else start
    end = end + dim if end < 0 else end
    if step > 0:
        start, end = min(max(start, 0), dim), min(max(end, 0), dim)
    else:
        start, end = min(max(start, 0), dim - 1), min(max(end, -1), dim - 1)
    return start, len(range(start, end, step))


@gpu_kernel("Slice")
def Slice(k, data, starts=None, ends=None, axes=None, steps=None):
    """Slice-1 (starts, ends and axes attributes) and Slice-10+ (inputs known before the run)."""
    starts, ends = _ints(k, starts, "Slice's starts"), _ints(k, ends, "Slice's ends")
    axes, steps = _ints(k, axes, "Slice's axes"), _ints(k, steps, "Slice's steps")
    axes = list(range(len(starts))) if axes is None else [_axis("Slice", a, data.rank) for a in axes]
    steps = [1] * len(starts) if steps is None else steps
    if not len(starts) == len(ends) == len(axes) == len(steps):
        raise ValueError("Slice: starts, ends, axes and steps must have equal lengths")
    shape, st = list(data.shape), strides(data.shape)
    src = list(st)
    base = 0
    for a, s, e, step in zip(axes, starts, ends, steps):
        first, shape[a] = _onnx_slice(data.shape[a], s, e, step)
        base += first * st[a] if shape[a] else 0
        src[a] = st[a] * step
    return _gather_copy(k, "Slice", data, shape, src, base)


@gpu_kernel("Expand")
def Expand(k, input, shape):
    target = broadcast_shape(input.shape, tuple(_ints(k, shape, "Expand's shape")))
    return _gather_copy(k, "Expand", input, target, broadcast_strides(input.shape, target))


@gpu_kernel("Tile")
def Tile(k, input, repeats):
    """Each axis as (repeat, length) with the repeat's stride 0 into the input."""
    repeats = _ints(k, repeats, "Tile's repeats")
    if len(repeats) != input.rank or any(r < 0 for r in repeats):
        raise ValueError(f"Tile: repeats {repeats} do not fit an input of rank {input.rank}")
    dims, src = [], []
    for r, d, s in zip(repeats, input.shape, strides(input.shape)):
        dims += [r, d]
        src += [0, s]
    out_shape = [r * d for r, d in zip(repeats, input.shape)]
    return k.view(_gather_copy(k, "Tile", input, dims, src), out_shape)


def _concat(k, op: str, inputs, axis) -> Tensor:
    if not inputs:
        raise ValueError(f"{op}: needs at least one input")
    _same_type(op, inputs)
    first = inputs[0]
    axis = _axis(op, axis, first.rank)
    for t in inputs[1:]:
        if t.rank != first.rank or any(a != b for i, (a, b) in enumerate(zip(t.shape, first.shape)) if i != axis):
            raise ValueError(f"{op}: cannot concatenate {first.describe()} and {t.describe()} along axis {axis}")
    shape = list(first.shape)
    shape[axis] = sum(t.shape[axis] for t in inputs)
    out_strides = strides(shape)
    plans, offset = [], 0
    for t in inputs:
        plans.append(_copy_plan(op, t.shape, strides(t.shape), 0, out_strides, offset * out_strides[axis]))
        offset += t.shape[axis]
    if len(inputs) == 1:
        return k.view(first, shape)
    y = k.output(shape, first.dtype)
    for t, plan in zip(inputs, plans):
        _copy(k, t, y, plan)
    return y


@gpu_kernel("Concat")
def Concat(k, *inputs, axis):
    return _concat(k, "Concat", inputs, axis)


@gpu_kernel("ConcatTraining", MS_DOMAIN)
def ConcatTraining(k, *inputs, axis=None):
    if axis is None:
        raise ValueError("ConcatTraining: attribute 'axis' is required")
    y = _concat(k, "ConcatTraining", inputs, axis)
    axis = _axis("ConcatTraining", axis, inputs[0].rank)
    return y, k.known(np.array([t.shape[axis] for t in inputs], dtype=np.int64))


@gpu_kernel("Split")
def Split(k, input, split=None, *, axis=0, num_outputs=None):
    """Split-2 (split an attribute), Split-13 (an input) and Split-18 (num_outputs): equal parts, the last
    smaller, when split is not given, as the CPU kernel."""
    axis = _axis("Split", axis, input.rank)
    count = len(k.node.outputs)
    size = input.shape[axis]
    split = _ints(k, split, "Split's split")
    if split is None:
        chunk = -(-size // count)
        split = [min(chunk, size - i * chunk) for i in range(count)]
    if len(split) != count or sum(split) != size or any(s < 0 for s in split):
        raise ValueError(f"Split: parts {split} do not split {size} into {count} outputs")
    st = strides(input.shape)
    parts, offset = [], 0
    for i, s in enumerate(split):
        shape = list(input.shape)
        shape[axis] = s
        plan = _copy_plan("Split", shape, st, offset * st[axis], strides(shape), 0) if k.used(i) else None
        parts.append((shape, plan, k.used(i)))
        offset += s
    outs = []
    for shape, plan, used in parts:
        if not used:
            outs.append(None)
            continue
        y = k.output(shape, input.dtype)
        _copy(k, input, y, plan)
        outs.append(y)
    return tuple(outs)


def _pad_value(k, data: Tensor, constant_value, value):
    if isinstance(constant_value, Tensor):
        known = np.asarray(k.value(constant_value, "Pad's constant_value")).reshape(-1)
        value = known[0] if known.size else None
    v = np.asarray(0 if value is None else value).astype(data.dtype)
    return float(v) if gtype(data) == "f32" else int(v)


@gpu_kernel("Pad")
def Pad(k, data, pads=None, constant_value=None, axes=None, *, mode="constant", value=0.0):
    """Pad-2 (pads and value attributes) and Pad-11+ (pads, constant_value and axes inputs known before the
    run), in every mode; a negative pad crops."""
    mode = mode.decode() if isinstance(mode, bytes) else mode
    if mode not in PAD_MODES:
        raise ValueError(f"Pad: mode {mode!r} is not one of {sorted(PAD_MODES)}")
    pads = _ints(k, pads, "Pad's pads")
    axes = _ints(k, axes, "Pad's axes")
    rank = data.rank
    axes = list(range(rank)) if axes is None else [_axis("Pad", a, rank) for a in axes]
    if len(pads) != 2 * len(axes):
        raise ValueError(f"Pad: {len(pads)} pads for {len(axes)} axes")
    if rank > MAX_PAD_RANK:
        raise NotLowered(f"Pad on WebGPU takes at most {MAX_PAD_RANK} dimensions, not {rank}")
    fill = _pad_value(k, data, constant_value, value)
    begin, end = [0] * rank, [0] * rank
    for i, a in enumerate(axes):
        begin[a], end[a] = pads[i], pads[i + len(axes)]
    st = strides(data.shape)
    base, src_dims, out_dims = 0, [], []
    for d, b, e, s in zip(data.shape, begin, end, st):
        length = d - max(-b, 0) - max(-e, 0)
        if length < 0:
            raise ValueError(f"Pad: pads {pads} crop more than the input's shape {list(data.shape)}")
        base += max(-b, 0) * s
        src_dims.append(length)
        out_dims.append(length + max(b, 0) + max(e, 0))
    if mode != "constant" and 0 in src_dims and _size(out_dims):
        raise ValueError(f"Pad: {mode} mode cannot pad an empty axis")
    y = k.output(out_dims, data.dtype)
    if y.size:
        params = [y.size, fill, PAD_MODES[mode], base, *_rev(out_dims), *_rev(src_dims),
                  *_rev(max(b, 0) for b in begin), *_rev(st)]
        k.dispatch("layout_pad", [data], [y], params, y.size, T=gtype(data), RANK=rank)
    return y


# -- gathers ------------------------------------------------------------------------------------------------

def _index_tensor(op: str, indices: Tensor) -> None:
    if gtype(indices) != "i32":
        raise ValueError(f"{op}: indices must be int64 or int32, not {indices.dtype.name}")


@gpu_kernel("Gather")
def Gather(k, data, indices, *, axis=0):
    _index_tensor("Gather", indices)
    axis = _axis("Gather", axis, data.rank)
    shape = data.shape[:axis] + indices.shape + data.shape[axis + 1:]
    y = k.output(shape, data.dtype)
    if y.size:
        inner = _size(data.shape[axis + 1:])
        k.dispatch("layout_gather", [data, indices], [y], [y.size, inner, indices.size, data.shape[axis]], y.size,
                   T=gtype(data))
    return y


@gpu_kernel("GatherGrad", MS_DOMAIN)
def GatherGrad(k, shape, indices, dY, *, axis=0):
    """Each element of dX sums its index's rows of dY (no atomics: the same order, and bits, every run).  Over
    an axis longer than the indices, dX is zeroed and each first occurrence of an index writes its rows' sum."""
    _index_tensor("GatherGrad", indices)
    if gtype(dY) == "u32":
        raise NotLowered(f"GatherGrad of {dY.dtype.name}")
    shape = _ints(k, shape, "GatherGrad's shape")
    axis = _axis("GatherGrad", axis, len(shape))
    expected = tuple(shape[:axis]) + indices.shape + tuple(shape[axis + 1:])
    if dY.shape != expected:
        raise ValueError(f"GatherGrad: dY of shape {list(dY.shape)} does not match the Gather output shape "
                         f"{list(expected)}")
    dX = k.output(shape, dY.dtype)
    if not dX.size:
        return dX
    inner, count, d = _size(shape[axis + 1:]), indices.size, shape[axis]
    if d <= count:
        k.dispatch("layout_gather_grad", [indices, dY], [dX], [dX.size, inner, count, d, 0], dX.size, T=gtype(dY))
        return dX
    k.dispatch("layout_fill", [], [dX], [dX.size, 0], dX.size, T=gtype(dY))
    if dY.size:
        k.dispatch("layout_gather_grad", [indices, dY], [dX], [dY.size, inner, count, d, 1], dY.size, T=gtype(dY))
    return dX


@gpu_kernel("SliceGrad", MS_DOMAIN)
def SliceGrad(k, dY, shape, starts, ends, axes=None, steps=None):
    """dX[i] is dY's element at i's place in the slice (the CPU kernel's Python slices), 0 elsewhere."""
    shape = _ints(k, shape, "SliceGrad's shape")
    starts, ends = _ints(k, starts, "SliceGrad's starts"), _ints(k, ends, "SliceGrad's ends")
    axes, steps = _ints(k, axes, "SliceGrad's axes"), _ints(k, steps, "SliceGrad's steps")
    rank = len(shape)
    axes = list(range(len(starts))) if axes is None else [_axis("SliceGrad", a, rank) for a in axes]
    steps = [1] * len(starts) if steps is None else steps
    if not len(starts) == len(ends) == len(axes) == len(steps):
        raise ValueError("SliceGrad: starts, ends, axes and steps must have equal lengths")
    if rank > MAX_SLICE_GRAD_RANK:
        raise NotLowered(f"SliceGrad on WebGPU takes at most {MAX_SLICE_GRAD_RANK} dimensions, not {rank}")
    first, step, length = [0] * rank, [1] * rank, list(shape)
    for a, s, e, st in zip(axes, starts, ends, steps):
        if st == 0:
            raise ValueError(f"SliceGrad: step must not be 0 (axis {a})")
        first[a], stop, step[a] = slice(s, e, st).indices(shape[a])
        length[a] = len(range(first[a], stop, step[a]))
    if tuple(length) != dY.shape:
        raise ValueError(f"SliceGrad: dY of shape {list(dY.shape)} does not match the sliced shape {length}")
    dX = k.output(shape, dY.dtype)
    if dX.size:
        params = [dX.size, *_rev(shape), *_rev(first), *_rev(step), *_rev(length), *_rev(strides(length))]
        k.dispatch("layout_slice_grad", [dY], [dX], params, dX.size, T=gtype(dY), RANK=rank)
    return dX
