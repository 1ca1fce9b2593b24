"""Resize and Upsample: the output size from ``sizes``, or each dim times its scale (rounded down)."""
from __future__ import annotations

import math

from ._registry import Out, rule


def _scaled(c, dims: list, scales) -> list:
    out = []
    for d, s in zip(dims, scales):
        if isinstance(d, int):
            out.append(int(math.floor(d * float(s) + 1e-9)))
        else:
            out.append(d if float(s) == 1.0 else c.fresh())
    return out


def _keep_aspect(c, dims: list, axes: list, sizes: list, policy: str) -> list:
    """One scale for every resized axis, the largest that fits (not_larger) or the smallest that covers."""
    if not all(isinstance(d, int) for d in [dims[a] for a in axes] + sizes):
        return [c.fresh() if k in axes else d for k, d in enumerate(dims)]
    ratios = [s / dims[a] for a, s in zip(axes, sizes)]
    scale = min(ratios) if policy == "not_larger" else max(ratios)
    return [int(round(scale * d)) if k in axes else d for k, d in enumerate(dims)]


@rule("Resize")
def resize(c):
    dims = c.shape(0)
    axes = c.attr("axes")
    axes = list(range(len(dims))) if axes is None else [c.axis(a, len(dims)) for a in axes]
    policy = c.attr("keep_aspect_ratio_policy", "stretch") or "stretch"
    sizes = c.dims(3) if c.has(3) else None
    scales = c.value(2) if c.has(2) else None
    if c.opset < 11:
        scales = c.value(1)
    out = list(dims)
    if scales is not None and scales.size == 0:
        scales = None
    if sizes is None and scales is None:
        return Out(c.elem(0), [c.fresh() if k in axes else d for k, d in enumerate(dims)])
    if sizes is not None:
        if policy != "stretch":
            return Out(c.elem(0), _keep_aspect(c, dims, axes, sizes, policy))
        for a, d in zip(axes, sizes):
            out[a] = d
        return Out(c.elem(0), out)
    for a, d in zip(axes, _scaled(c, [dims[a] for a in axes], scales.reshape(-1))):
        out[a] = d
    return Out(c.elem(0), out)


@rule("Upsample")
def upsample(c):
    scales = c.attr("scales") if "scales" in c.node.attributes else c.value(1)
    if scales is None:
        return Out(c.elem(0), [c.fresh() for _ in c.shape(0)])
    return Out(c.elem(0), _scaled(c, c.shape(0), list(scales)))
