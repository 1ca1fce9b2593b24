"""Shape and tensor manipulation: Constant, Shape, Size, Reshape, Flatten, Transpose, Squeeze, Unsqueeze,
Concat, Split, Slice, Expand, Tile, ConstantOfShape, Range, Pad and the like.  Shape vectors carry their
elements (dims, symbols included) through Gather, Slice, Concat, Squeeze and Unsqueeze."""
from __future__ import annotations

import numpy as np

from ...ir import dtypes
from ._context import BOOL, INT64, broadcast
from ._dims import add, divide, product, quotient, times
from ._registry import Out, rule

MS = "com.microsoft"
BIG = 1 << 62  # an end at or past this means "to the end"
SMALL = 1 << 16


@rule("Constant")
def constant(c):
    for name in ("value", "value_float", "value_floats", "value_int", "value_ints", "value_string",
                 "value_strings"):
        if name in c.node.attributes:
            v = c.attr(name)
            break
    else:
        c.unsupported("a sparse value")
    a = c.node.attributes[name].value
    if name == "value":
        return Out(a.data_type, list(a.dims), a.data)
    arr = np.asarray(v, dtype=np.float32 if "float" in name else np.int64 if "int" in name else object)
    return Out(dtypes.from_numpy(arr.dtype) if arr.dtype != object else 8, list(arr.shape), arr)


def _shape_range(c, rank: int):
    start, end = c.attr("start", 0), c.attr("end", rank)
    start, end = (max(0, min(rank, v + rank if v < 0 else v)) for v in (start, end))
    return start, max(start, end)


@rule("Shape")
def shape_of(c):
    if c.state(0).shape is None:
        return Out(INT64, [c.fresh()])
    dims = c.shape(0)
    start, end = _shape_range(c, len(dims))
    return Out(INT64, [end - start], dims[start:end])


@rule("Size")
def size(c):
    if c.state(0).shape is None:
        return Out(INT64, [])
    return Out(INT64, [], [product(c, c.shape(0))])


@rule("Reshape")
def reshape(c):
    target = c.dims(1)
    if target is None:
        n = c.shape(1)
        return Out(c.elem(0), [c.fresh() for _ in range(n[0])] if isinstance(n[0], int) else None)
    dims = c.shape(0) if c.state(0).shape is not None else None
    allowzero = c.attr("allowzero", 0)
    out, minus = [], None
    for k, d in enumerate(target):
        if d == -1:
            if minus is not None:
                c.fail("the shape has two -1s")
            minus = k
            out.append(None)
        elif d == 0 and not allowzero:
            if dims is None or k >= len(dims):
                c.fail(f"element {k} of the shape is 0 (copy the input's axis {k}), but the input has no axis {k}")
            out.append(dims[k])
        elif isinstance(d, int) and d < -1:
            c.fail(f"element {k} of the shape is {d}")
        else:
            out.append(d)
    if dims is None:
        return Out(c.elem(0), [d if d is not None else c.fresh() for d in out])
    if minus is not None:
        out[minus] = quotient(c, dims, [d for d in out if d is not None])
    elif all(isinstance(d, int) for d in dims + out) and product(c, dims) != product(c, out):
        c.fail(f"a tensor of shape {dims} ({product(c, dims)} elements) cannot be reshaped to {out} (the dims "
               f"disagree)")
    value = c.dims(0) if c.state(0).value is not None and len(out) <= 1 else None
    return Out(c.elem(0), out, value)


@rule("Flatten")
def flatten(c):
    dims = c.shape(0)
    axis = c.attr("axis", 1)
    axis = c.axis(axis + len(dims) if axis < 0 else axis, len(dims) + 1)
    return Out(c.elem(0), [product(c, dims[:axis]), product(c, dims[axis:])])


@rule("Transpose")
def transpose(c):
    dims = c.shape(0)
    perm = c.attr("perm") or list(range(len(dims)))[::-1]
    if sorted(perm) != list(range(len(dims))):
        c.fail(f"perm {perm} is not a permutation of the {len(dims)} axes")
    return Out(c.elem(0), [dims[p] for p in perm])


def _axes(c, index: int = 1, attr: str = "axes"):
    """The axes of an op that took them as an attribute before opset 13 (18 for some) and as an input since."""
    if attr in c.node.attributes:
        return list(c.attr(attr))
    if c.has(index):
        axes = c.ints(index)
        if axes is None:
            c.fail(f"the axes '{c.node.inputs[index]}' are not known before running the model")
        return axes
    return None


@rule("Squeeze")
def squeeze(c):
    dims = c.shape(0)
    axes = _axes(c)
    if axes is None:
        if any(not isinstance(d, int) for d in dims):
            return Out(c.elem(0), None)
        out = [d for d in dims if d != 1]
    else:
        axes = {c.axis(a, len(dims)) for a in axes}
        for a in axes:
            c.pin(0, a, 1, " (squeezed)")
        out = [d for k, d in enumerate(c.shape(0)) if k not in axes]
    value = c.dims(0) if len(out) == 0 and c.state(0).value is not None else None
    return Out(c.elem(0), out, value)


@rule("Unsqueeze")
def unsqueeze(c):
    dims = c.shape(0)
    axes = _axes(c) or []
    rank = len(dims) + len(axes)
    axes = sorted(c.axis(a, rank) for a in axes)
    if len(set(axes)) != len(axes):
        c.fail(f"the axes {axes} repeat")
    out, rest = [], iter(dims)
    for k in range(rank):
        out.append(1 if k in axes else next(rest))
    value = c.dims(0) if len(out) <= 1 and c.state(0).value is not None else None
    return Out(c.elem(0), out, value)


@rule("Concat")
def concat(c):
    idx = c.present()
    first = c.shape(idx[0])
    axis = c.axis(c.attr("axis"), len(first))
    for i in idx[1:]:
        if c.rank(i) != len(first):
            c.fail(f"'{c.node.inputs[i]}' has rank {c.rank(i)}, '{c.node.inputs[idx[0]]}' has {len(first)}")
        for a in range(len(first)):
            if a != axis:
                c.same(idx[0], a, i, a)
    out = c.shape(idx[0])
    total = [c.shape(i)[axis] for i in idx]
    ints = sum(d for d in total if isinstance(d, int))
    symbols = [d for d in total if not isinstance(d, int)]
    out[axis] = ints if not symbols else symbols[0] if len(symbols) == 1 and ints == 0 else c.fresh()
    values = [c.dims(i) for i in idx]
    value = sum(values, []) if len(out) == 1 and all(v is not None for v in values) else None
    return Out(c.elem(idx[0]), out, value)


@rule("ConcatTraining", domain=MS)
def concat_training(c):
    joined = concat(c)
    axis = c.axis(c.attr("axis"), c.rank(0))
    lengths = [c.shape(i)[axis] for i in c.present()]
    return [joined, Out(INT64, [len(lengths)], lengths)]


@rule("Split")
def split(c):
    dims = c.shape(0)
    axis = c.axis(c.attr("axis", 0), len(dims))
    n = len(c.node.outputs)
    sizes = list(c.attr("split")) if "split" in c.node.attributes else c.ints(1) if c.has(1) else None
    if c.has(1) and sizes is None:
        c.fail(f"the split sizes '{c.node.inputs[1]}' are not known before running the model")
    d = dims[axis]
    if sizes is not None:
        if len(sizes) != n:
            c.fail(f"{len(sizes)} split sizes for {n} outputs")
        if isinstance(d, int) and sum(sizes) != d:
            c.fail(f"the split sizes {sizes} do not add up to axis {axis}'s {d}")
        if not isinstance(d, int):
            c.pin(0, axis, sum(sizes), " (split)")
        parts = sizes
    elif not isinstance(d, int):
        parts = [c.fresh() for _ in range(n)]
    elif "num_outputs" in c.node.attributes:
        size = -(-d // n)
        parts = [size] * (n - 1) + [d - size * (n - 1)]
    else:
        parts = [divide(c, d, n, f"axis {axis} of '{c.node.inputs[0]}' split in {n}")] * n
    return [Out(c.elem(0), dims[:axis] + [p] + dims[axis + 1:]) for p in parts]


def _slice_args(c):
    if c.opset < 10:
        starts, ends = c.attr("starts"), c.attr("ends")
        axes, steps = c.attr("axes"), None
        return starts, ends, axes, steps, True
    known = [c.ints(i) if c.has(i) else None for i in range(1, 5)]
    starts, ends, axes, steps = known
    ok = all(v is not None or not c.has(i + 1) for i, v in enumerate(known))
    return starts, ends, axes, steps, ok


def _slice_dim(c, d, start: int, end: int, step: int):
    if isinstance(d, int):
        return len(range(*slice(start, end, step).indices(d)))
    if step == 1 and start == 0 and end >= BIG:
        return d
    if step == -1 and start == -1 and end <= -BIG:
        return d
    return c.fresh()


@rule("Slice")
def slice_(c):
    dims = c.shape(0)
    starts, ends, axes, steps, ok = _slice_args(c)
    if not ok or starts is None or ends is None:
        if axes is None:
            return Out(c.elem(0), [c.fresh() for _ in dims])
        return Out(c.elem(0), [c.fresh() if k in {c.axis(a, len(dims)) for a in axes} else d
                               for k, d in enumerate(dims)])
    axes = list(range(len(starts))) if axes is None else [c.axis(a, len(dims)) for a in axes]
    steps = steps or [1] * len(starts)
    out = list(dims)
    for a, s, e, st in zip(axes, starts, ends, steps):
        if st == 0:
            c.fail(f"the step of axis {a} is 0")
        out[a] = _slice_dim(c, dims[a], s, e, st)
    value = None
    elements = c.dims(0)
    if elements is not None and len(dims) == 1:
        value = elements[slice(starts[0], ends[0], steps[0])]
    return Out(c.elem(0), out, value)


@rule("SliceGrad", domain=MS)
def slice_grad(c):
    shape = c.dims(1)
    return Out(c.elem(0), shape if shape is not None else None)


def _target(c, index: int):
    """A shape input's elements, or one invented dim per element when only its length is known."""
    dims = c.dims(index)
    if dims is not None:
        return dims
    n = c.shape(index)
    if len(n) != 1 or not isinstance(n[0], int):
        return None
    return [c.fresh() for _ in range(n[0])]


@rule("Expand")
def expand(c):
    target = _target(c, 1)
    if target is None:
        return Out(c.elem(0), None)
    return Out(c.elem(0), broadcast(c, [(c.node.inputs[0], c.shape(0)), (c.node.inputs[1], target)]))


@rule("Tile")
def tile(c):
    dims, repeats = c.shape(0), _target(c, 1)
    if repeats is None:
        return Out(c.elem(0), [c.fresh() for _ in dims])
    if len(repeats) != len(dims):
        c.fail(f"{len(repeats)} repeats for rank {len(dims)}")
    return Out(c.elem(0), [times(c, d, r) for d, r in zip(dims, repeats)])


@rule("ConstantOfShape")
def constant_of_shape(c):
    fill = c.attr("value")
    fill = np.zeros(1, np.float32) if fill is None else np.asarray(fill)
    elem = c.node.attributes["value"].value.data_type if "value" in c.node.attributes else 1
    dims = _target(c, 0)
    if dims is None:
        return Out(elem, None)
    value = None
    if all(isinstance(d, int) for d in dims) and int(np.prod(dims)) <= SMALL:
        value = np.full(dims, fill.reshape(-1)[0], fill.dtype)
    return Out(elem, dims, value)


@rule("Range")
def range_(c):
    ends = [c.value(i) for i in range(3)]
    if all(v is not None for v in ends):
        start, limit, delta = (v.item() for v in ends)
        n = max(int(np.ceil((limit - start) / delta)), 0)
        return Out(c.elem(0), [n], np.arange(start, limit, delta).astype(ends[0].dtype) if n <= SMALL else None)
    start, limit, delta = c.dims(0), c.dims(1), c.dims(2)
    if start == [0] and delta == [1] and limit is not None:  # torch's arange(x.size(k))
        return Out(c.elem(0), [limit[0]])
    return Out(c.elem(0), [c.fresh()])


@rule("Pad")
def pad(c):
    dims = c.shape(0)
    pads = list(c.attr("pads")) if "pads" in c.node.attributes else c.ints(1)
    if pads is None:
        return Out(c.elem(0), [c.fresh() for _ in dims])
    axes = c.ints(3) if c.has(3) else None
    axes = list(range(len(dims))) if axes is None else [c.axis(a, len(dims)) for a in axes]
    if len(pads) != 2 * len(axes):
        c.fail(f"{len(pads)} pads for {len(axes)} axes")
    out = list(dims)
    for k, a in enumerate(axes):
        out[a] = add(c, dims[a], pads[k] + pads[k + len(axes)])
    return Out(c.elem(0), out)


@rule("EyeLike")
def eye_like(c):
    return Out(c.attr("dtype", c.elem(0)), c.shape(0))


@rule("Trilu", "ReverseSequence", "CumSum")
def same_as_first(c):
    return c.like(0)


@rule("DepthToSpace", "SpaceToDepth")
def depth_space(c):
    n, ch, h, w = c.shape(0)
    b = c.attr("blocksize")
    if c.node.op_type == "DepthToSpace":
        return Out(c.elem(0), [n, divide(c, ch, b * b, "channels"), times(c, h, b), times(c, w, b)])
    return Out(c.elem(0), [n, times(c, ch, b * b), divide(c, h, b, "height"), divide(c, w, b, "width")])


@rule("CenterCropPad")
def center_crop_pad(c):
    dims, target = c.shape(0), _target(c, 1)
    axes = c.attr("axes") or list(range(len(dims)))
    out = list(dims)
    for a, d in zip(axes, target or []):
        out[c.axis(a, len(dims))] = d
    return Out(c.elem(0), out)


@rule("NonZero")
def non_zero(c):
    return Out(INT64, [c.rank(0), c.fresh()])


@rule("Compress")
def compress(c):
    dims = c.shape(0)
    axis = c.attr("axis")
    if axis is None:
        return Out(c.elem(0), [c.fresh()])
    axis = c.axis(axis, len(dims))
    return Out(c.elem(0), dims[:axis] + [c.fresh()] + dims[axis + 1:])


@rule("Unique")
def unique(c):
    dims = c.shape(0)
    axis = c.attr("axis")
    n = c.fresh()
    if axis is None:
        y, inverse = [n], [product(c, dims)]
    else:
        axis = c.axis(axis, len(dims))
        y, inverse = dims[:axis] + [n] + dims[axis + 1:], [dims[axis]]
    return [Out(c.elem(0), y), Out(INT64, [n]), Out(INT64, inverse), Out(INT64, [n])]


@rule("Optional")
def optional(c):
    from ...ir.model import OptionalType, TensorType
    if c.has(0):
        s = c.state(0)
        inner = s.type if s.type is not None else TensorType(s.elem, c.shape(0) if s.shape is not None else None)
    else:
        inner = c.attr("type")
    return Out(None, None, type=OptionalType(inner))


@rule("OptionalHasElement")
def optional_has_element(c):
    return Out(BOOL, [])
