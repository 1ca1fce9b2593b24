"""Ops that move, select or make tensors: their shapes follow their shape inputs, which may be dims vectors."""
from __future__ import annotations

import math
from collections import Counter

import numpy as np

from ...ir import dtypes
from ...ir.dtypes import DataType
from ._registry import ShapeConflictError, axis_of, broadcast, product, shape_rule

BIG = 1 << 62


@shape_rule("Identity")
def identity(ctx):
    dims = ctx.dims(0)
    if dims is not None:
        ctx.out_dims[0] = dims
    return [(ctx.elem(0), ctx.shape(0))]


@shape_rule("Shape")
def shape(ctx):
    s = ctx.shape(0)
    if s is None:
        return [(DataType.INT64, [None])]
    start, end = ctx.attr("start", 0), ctx.attr("end", None)
    part = s[slice(start, end)]
    ctx.out_dims[0] = np.array(part + [], dtype=object) if part else np.zeros(0, dtype=object)
    return [(DataType.INT64, [len(part)])]


@shape_rule("Size")
def size(ctx):
    s = ctx.shape(0)
    total = None if s is None else product(s)
    if isinstance(total, int):
        ctx.out_dims[0] = np.array(total, dtype=object)
    return [(DataType.INT64, [])]


def _target(ctx, i):
    dims = ctx.dims(i)
    return None if dims is None else list(dims.ravel())


@shape_rule("Reshape")
def reshape(ctx):
    src, target = ctx.shape(0), _target(ctx, 1)
    if target is None:
        length = ctx.shape(1)
        n = length[0] if length and isinstance(length[0], int) else None
        return [(ctx.elem(0), None if n is None else [None] * n)]
    allowzero = ctx.attr("allowzero", 0)
    out = []
    for k, d in enumerate(target):
        if d == 0 and not allowzero:
            d = src[k] if src is not None and k < len(src) else None
        out.append(d)
    if -1 in out:
        k = out.index(-1)
        out[k] = None
        if src is not None:
            left, right = Counter(d for d in src if isinstance(d, str)), Counter(d for d in out if isinstance(d, str))
            n_in = math.prod(d for d in src if isinstance(d, int))
            n_out = math.prod(d for d in out if isinstance(d, int))
            if None not in src and None not in out[:k] + out[k + 1:] and not (left - right) and not (right - left) \
                    and n_out and n_in % n_out == 0:
                out[k] = n_in // n_out
    dims = ctx.dims(0)
    if dims is not None and all(isinstance(d, int) for d in out):
        ctx.out_dims[0] = dims.reshape(out)
    return [(ctx.elem(0), out)]


@shape_rule("Flatten")
def flatten(ctx):
    s = ctx.shape(0)
    if s is None:
        return [(ctx.elem(0), [None, None])]
    axis = axis_of(ctx.attr("axis", 1), len(s))
    return [(ctx.elem(0), [product(s[:axis]), product(s[axis:])])]


@shape_rule("Transpose")
def transpose(ctx):
    s = ctx.shape(0)
    if s is None:
        return [(ctx.elem(0), None)]
    perm = ctx.attr("perm") or list(reversed(range(len(s))))
    return [(ctx.elem(0), [s[p] for p in perm])]


def _axes(ctx, input_index=1):
    axes = ctx.attr("axes")
    if axes is None and ctx.has(input_index):
        axes = ctx.ints(input_index)
        if axes is None:
            return "unknown"
    return axes


@shape_rule("Squeeze")
def squeeze(ctx):
    s, axes = ctx.shape(0), _axes(ctx)
    if s is None or axes == "unknown":
        return [(ctx.elem(0), None)]
    if axes is None:
        if any(not isinstance(d, int) for d in s):
            return [(ctx.elem(0), None)]
        axes = [k for k, d in enumerate(s) if d == 1]
    axes = {axis_of(a, len(s)) for a in axes}
    for a in axes:
        if isinstance(s[a], int) and s[a] != 1:
            raise ShapeConflictError(f"{ctx.where()}: axis {a} is {s[a]}, not 1, and cannot be squeezed")
    dims = ctx.dims(0)
    if dims is not None:
        ctx.out_dims[0] = dims.reshape([d for k, d in enumerate(dims.shape) if k not in axes])
    return [(ctx.elem(0), [d for k, d in enumerate(s) if k not in axes])]


@shape_rule("Unsqueeze")
def unsqueeze(ctx):
    s, axes = ctx.shape(0), _axes(ctx)
    if s is None or axes == "unknown" or axes is None:
        return [(ctx.elem(0), None)]
    rank = len(s) + len(axes)
    axes = sorted(axis_of(a, rank) for a in axes)
    out = list(s)
    for a in axes:
        out.insert(a, 1)
    dims = ctx.dims(0)
    if dims is not None:
        shape = list(dims.shape)
        for a in axes:
            shape.insert(a, 1)
        ctx.out_dims[0] = dims.reshape(shape)
    return [(ctx.elem(0), out)]


@shape_rule("Concat")
def concat(ctx):
    shapes = [ctx.shape(i) for i in range(ctx.n_inputs) if ctx.has(i)]
    known = [s for s in shapes if s is not None]
    if not known:
        return [(ctx.elem(0), None)]
    rank = len(known[0])
    axis = axis_of(ctx.attr("axis"), rank)
    out = list(known[0])
    for s in known[1:]:
        if len(s) != rank:
            raise ShapeConflictError(f"{ctx.where()}: the inputs have ranks {[len(x) for x in known]}")
        for k in range(rank):
            if k != axis:
                out[k] = ctx.unify(out[k], s[k], f"axis {k} of the inputs")
    parts = [s[axis] for s in shapes] if len(known) == len(shapes) else [None]
    nonzero = [d for d in parts if d != 0]
    out[axis] = (sum(parts) if all(isinstance(d, int) for d in parts) else
                 nonzero[0] if len(nonzero) == 1 else None)
    values = [ctx.dims(i) for i in range(ctx.n_inputs) if ctx.has(i)]
    if rank == 1 and all(v is not None for v in values):
        ctx.out_dims[0] = np.concatenate([v.reshape(-1) for v in values])
    return [(ctx.elem(0), out)]


@shape_rule("Split")
def split(ctx):
    s = ctx.shape(0)
    n = len(ctx.node.outputs)
    if s is None:
        return [(ctx.elem(0), None)] * n
    axis = axis_of(ctx.attr("axis", 0), len(s))
    sizes = ctx.attr("split") or (ctx.ints(1) if ctx.has(1) else None)
    if sizes is None:
        d = s[axis]
        if isinstance(d, int):
            chunk = -(-d // n)
            sizes = [min(chunk, d - chunk * k) for k in range(n)]
        else:
            sizes = [None] * n
    return [(ctx.elem(0), s[:axis] + [size] + s[axis + 1:]) for size in sizes]


def _slice_dim(d, start, end, step):
    if not isinstance(d, int):
        if start == 0 and step == 1 and end >= BIG // 2:
            return d
        return None
    return len(range(*slice(start, end, step).indices(d)))


@shape_rule("Slice")
def slice_(ctx):
    s = ctx.shape(0)
    if ctx.has(1):
        starts, ends = ctx.ints(1), ctx.ints(2)
        axes = ctx.ints(3) if ctx.has(3) else None
        steps = ctx.ints(4) if ctx.has(4) else None
    else:
        starts, ends, axes, steps = ctx.attr("starts"), ctx.attr("ends"), ctx.attr("axes"), None
    if s is None:
        return [(ctx.elem(0), None)]
    if starts is None or ends is None or (ctx.has(3) and axes is None) or (ctx.has(4) and steps is None):
        return [(ctx.elem(0), [None] * len(s))]
    axes = [axis_of(a, len(s)) for a in (axes if axes is not None else range(len(starts)))]
    steps = steps or [1] * len(starts)
    out = list(s)
    for a, b, e, st in zip(axes, starts, ends, steps):
        out[a] = _slice_dim(s[a], b, e, st)
    dims = ctx.dims(0)
    if dims is not None and dims.ndim == 1:
        ctx.out_dims[0] = dims[slice(starts[0], ends[0], steps[0])] if len(starts) == 1 else None
        if ctx.out_dims[0] is None:
            del ctx.out_dims[0]
    return [(ctx.elem(0), out)]


@shape_rule("Expand")
def expand(ctx):
    target = _target(ctx, 1)
    if target is None:
        return [(ctx.elem(0), None)]
    return [(ctx.elem(0), broadcast(ctx, [ctx.shape(0), target]))]


@shape_rule("Tile")
def tile(ctx):
    s, reps = ctx.shape(0), ctx.ints(1)
    if s is None or reps is None:
        return [(ctx.elem(0), None if s is None else [None] * len(s))]
    return [(ctx.elem(0), [d if r == 1 else d * r if isinstance(d, int) else None for d, r in zip(s, reps)])]


@shape_rule("Gather")
def gather(ctx):
    data, indices = ctx.shape(0), ctx.shape(1)
    if data is None or indices is None:
        return [(ctx.elem(0), None)]
    axis = axis_of(ctx.attr("axis", 0), len(data))
    dims, idx = ctx.dims(0), ctx.ints(1)
    if dims is not None and dims.ndim == 1 and idx is not None and axis == 0:
        ctx.out_dims[0] = dims[np.asarray(ctx.value(1))]
    return [(ctx.elem(0), data[:axis] + indices + data[axis + 1:])]


@shape_rule("GatherElements")
def gather_elements(ctx):
    return [(ctx.elem(0), ctx.shape(1))]


@shape_rule("ScatterElements", "ScatterND", "Scatter")
def scatter(ctx):
    return [(ctx.elem(0), ctx.shape(0))]


@shape_rule("ConstantOfShape")
def constant_of_shape(ctx):
    value = ctx.attr("value")
    elem = DataType.FLOAT if value is None else dtypes.from_numpy(np.asarray(value).dtype)
    return [(elem, _target(ctx, 0))]


@shape_rule("EyeLike")
def eye_like(ctx):
    return [(ctx.attr("dtype", ctx.elem(0)), ctx.shape(0))]


@shape_rule("Range")
def range_(ctx):
    return [(ctx.elem(0), [None])]


@shape_rule("OneHot")
def one_hot(ctx):
    s, depth = ctx.shape(0), ctx.ints(1)
    if s is None:
        return [(ctx.elem(2), None)]
    axis = axis_of(ctx.attr("axis", -1), len(s) + 1)
    out = list(s)
    out.insert(axis, int(depth[0]) if depth else None)
    return [(ctx.elem(2), out)]


@shape_rule("Pad")
def pad(ctx):
    s = ctx.shape(0)
    pads = ctx.attr("pads") if not ctx.has(1) else ctx.ints(1)
    if s is None:
        return [(ctx.elem(0), None)]
    if pads is None:
        return [(ctx.elem(0), [None] * len(s))]
    axes = ctx.ints(3) if ctx.has(3) else list(range(len(s)))
    axes = [axis_of(a, len(s)) for a in axes]
    out = list(s)
    for k, a in enumerate(axes):
        add = pads[k] + pads[k + len(axes)]
        out[a] = s[a] + add if isinstance(s[a], int) else (s[a] if add == 0 else None)
    return [(ctx.elem(0), out)]


@shape_rule("Resize", "Upsample")
def resize(ctx):
    s = ctx.shape(0)
    if s is None:
        return [(ctx.elem(0), None)]
    if ctx.node.op_type == "Upsample":
        scales, sizes = (ctx.attr("scales") or (ctx.value(1).tolist() if ctx.value(1) is not None else None)), None
    else:
        at = 1 if ctx.n_inputs == 2 else 2   # opset 10: (X, scales)
        sizes = ctx.ints(3) if ctx.has(3) else None
        scales = ctx.value(at).tolist() if ctx.has(at) and ctx.value(at) is not None and ctx.value(at).size else None
    axes = [axis_of(a, len(s)) for a in (ctx.attr("axes") or range(len(s)))]
    if sizes:
        out = list(s)
        policy = ctx.attr("keep_aspect_ratio_policy", "stretch")
        if policy != "stretch":
            if not all(isinstance(s[a], int) for a in axes):
                return [(ctx.elem(0), [d if k not in axes else None for k, d in enumerate(s)])]
            pick = min if policy == "not_larger" else max
            scale = pick(v / s[a] for a, v in zip(axes, sizes))
            sizes = [int(round(s[a] * scale)) for a in axes]   # onnx rounds half away from zero here
        for a, v in zip(axes, sizes):
            out[a] = int(v)
        return [(ctx.elem(0), out)]
    if scales:
        out = list(s)
        for a, f in zip(axes, scales):
            d = s[a]
            out[a] = int(math.floor(d * f)) if isinstance(d, int) else d if f == 1 else None
        return [(ctx.elem(0), out)]
    return [(ctx.elem(0), [None] * len(s))]


@shape_rule("DepthToSpace", "SpaceToDepth")
def depth_space(ctx):
    s, b = ctx.shape(0), ctx.attr("blocksize")
    if s is None or len(s) != 4:
        return [(ctx.elem(0), None)]
    n, c, h, w = s
    scale = (lambda d, f: d * f if isinstance(d, int) else None)
    shrink = (lambda d, f: d // f if isinstance(d, int) else None)
    if ctx.node.op_type == "DepthToSpace":
        return [(ctx.elem(0), [n, shrink(c, b * b), scale(h, b), scale(w, b)])]
    return [(ctx.elem(0), [n, scale(c, b * b), shrink(h, b), shrink(w, b)])]


@shape_rule("TopK")
def top_k(ctx):
    s = ctx.shape(0)
    if s is None:
        return [(ctx.elem(0), None), (DataType.INT64, None)]
    k = ctx.ints(1) if ctx.has(1) else [ctx.attr("k")]
    axis = axis_of(ctx.attr("axis", -1), len(s))
    out = list(s)
    out[axis] = int(k[0]) if k and k[0] is not None else None
    return [(ctx.elem(0), out), (DataType.INT64, out)]


@shape_rule("NonZero")
def non_zero(ctx):
    s = ctx.shape(0)
    return [(DataType.INT64, [None if s is None else len(s), None])]


@shape_rule("LabelEncoder", domain="ai.onnx.ml")
def label_encoder(ctx):
    elem = None
    for name, kind in (("values_strings", DataType.STRING), ("values_int64s", DataType.INT64),
                       ("values_floats", DataType.FLOAT)):
        if ctx.attr(name) is not None:
            elem = kind
    tensor = ctx.node.attributes.get("values_tensor")
    if tensor is not None:
        elem = tensor.value.data_type
    return [(elem, ctx.shape(0))]
