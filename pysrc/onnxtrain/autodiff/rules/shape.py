"""Gradient rules of the shape ops (ops/shape.py): each moves dY back to where its input's cells were."""
from __future__ import annotations

import numpy as np

from ...ir.ort_names import MS_DOMAIN
from ._emit import matmul_along, reduce_sum, reshape, reshape_like, shape_of, split, text
from ._registry import rule


@rule("Reshape", "Flatten", "Squeeze", "Unsqueeze")
def _reshape(c, x, y, dy):
    return [reshape_like(c, dy[0], x[0])]


@rule("Expand", broadcasts=True)
def _expand(c, x, y, dy):
    return [dy[0]]


@rule("Transpose")
def _transpose(c, x, y, dy):
    perm = c.node.attr("perm") or list(range(len(c.shape(x[0]))))[::-1]
    return [c.op("Transpose", dy[0], perm=[int(i) for i in np.argsort(perm)])]


@rule("Concat")
def _concat(c, x, y, dy):
    axis = c.node.attr("axis")
    sizes = [c.shape(v)[axis] for v in x]
    if len(x) == 1:
        return [dy[0]]
    if all(isinstance(s, int) for s in sizes):
        return split(c, dy[0], sizes, axis)
    if c.opset < 13:
        raise NotImplementedError(f"{c.where()}: the Concat gradient needs static sizes along axis {axis} "
                                  f"before opset 13")
    # symbolic sizes: the split sizes are read from the inputs' shapes at run time
    lengths = [c.op("Gather", shape_of(c, v), c.ints([axis], "concat_axis"), axis=0) for v in x]
    return c.op("Split", dy[0], c.op("Concat", *lengths, axis=0), n_outputs=len(x), axis=axis)


@rule("Split")
def _split(c, x, y, dy):
    parts = [d if d is not None else c.op("ConstantOfShape", shape_of(c, o), value=np.zeros(1, dtype=c.dtype(o)))
             for d, o in zip(dy, y)]
    return [c.op("Concat", *parts, axis=c.node.attr("axis", 0))]


@rule("Slice")
def _slice(c, x, y, dy):
    if c.opset < 10:  # starts, ends and axes are attributes
        bounds = [c.ints(c.node.attr(k), k) for k in ("starts", "ends") + (("axes",) if c.node.attr("axes") else ())]
        return [c.op("SliceGrad", dy[0], shape_of(c, x[0]), *bounds, domain=MS_DOMAIN)]
    return [c.op("SliceGrad", dy[0], shape_of(c, x[0]), *x[1:], domain=MS_DOMAIN)]


@rule("Pad")
def _pad(c, x, y, dy):
    """Constant mode with non-negative pads: a Slice of dY.  Otherwise (reflect, edge, wrap, cropping) each padded
    axis is a 0/1 matrix from input to output positions, and dY goes back through its transpose."""
    mode = text(c.node.attr("mode", b"constant"))
    pads = c.constant(x[1]) if c.opset >= 11 else np.asarray(c.node.attr("pads"))
    axes = c.constant(x[3]) if c.opset >= 18 and len(x) > 3 and x[3] else None
    shape = c.shape(x[0])
    if pads is None or (c.opset >= 18 and len(x) > 3 and x[3] and axes is None):
        raise NotImplementedError(f"{c.where()}: the Pad gradient needs constant pads and axes")
    pads = [int(p) for p in np.asarray(pads).ravel()]
    rank, n = len(shape), len(pads) // 2
    axes = list(range(rank)) if axes is None else [int(a) % rank for a in axes.ravel()]
    begin, end = [0] * rank, [0] * rank
    for i, axis in enumerate(axes):
        begin[axis], end[axis] = pads[i], pads[i + n]
    if mode == "constant" and min(pads) >= 0:
        big = np.iinfo(np.int64).max
        return [c.op("Slice", dy[0], c.ints(begin, "starts"), c.ints([-p if p else big for p in end], "ends"))]
    if mode != "constant" and min(pads) < 0:
        raise NotImplementedError(f"{c.where()}: the Pad gradient in {mode} mode needs non-negative pads")
    grad = dy[0]
    for axis in range(rank):
        if begin[axis] or end[axis]:
            if not isinstance(shape[axis], int):
                raise NotImplementedError(f"{c.where()}: the Pad gradient needs a static size on padded axis {axis}")
            length = shape[axis]
            if mode == "constant":
                source = np.arange(-begin[axis], length + end[axis])
            else:
                source = np.pad(np.arange(length), (begin[axis], end[axis]), mode=mode)
            m = np.zeros((len(source), length), dtype=c.dtype(x[0]))
            inside = (source >= 0) & (source < length)
            np.add.at(m, (np.nonzero(inside)[0], source[inside]), 1)
            grad = matmul_along(c, grad, axis, rank, m)
    return [grad]


@rule("Tile")
def _tile(c, x, y, dy):
    repeats, shape = c.constant(x[1]), c.shape(x[0])
    if repeats is None or not all(isinstance(d, int) for d in shape):
        raise NotImplementedError(f"{c.where()}: the Tile gradient needs constant repeats and a static input shape")
    folded = reshape(c, dy[0], [v for r, d in zip(repeats.ravel(), shape) for v in (int(r), d)])
    return [reduce_sum(c, folded, list(range(0, 2 * len(shape), 2)), keepdims=0)]


@rule("SpaceToDepth")
def _space_to_depth(c, x, y, dy):
    return [c.op("DepthToSpace", dy[0], blocksize=c.node.attr("blocksize"), mode="DCR")]


@rule("DepthToSpace")
def _depth_to_space(c, x, y, dy):
    """SpaceToDepth undoes DCR; for CRD its channels (block row, block column, channel) are put back in
    (channel, block row, block column) order."""
    bs = c.node.attr("blocksize")
    dx = c.op("SpaceToDepth", dy[0], blocksize=bs)
    if text(c.node.attr("mode", b"DCR")) == "CRD":
        channels = c.shape(x[0])[1]
        if not isinstance(channels, int):
            raise NotImplementedError(f"{c.where()}: the CRD DepthToSpace gradient needs a static channel count")
        crd = np.arange(channels).reshape(bs * bs, channels // (bs * bs)).T.ravel()
        dx = c.op("Gather", dx, c.ints(crd, "crd_order"), axis=1)
    return [dx]
