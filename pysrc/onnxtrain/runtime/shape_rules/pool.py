"""Pooling: MaxPool (and its indices), AveragePool, LpPool, the global pools, MaxRoiPool, MaxUnpool."""
from __future__ import annotations

from ._context import INT64
from ._registry import Out, rule
from .conv import window, window_attrs


def pooled(c) -> list:
    xs = c.shape(0)
    nd = len(xs) - 2
    kernel = list(c.attr("kernel_shape"))
    pads, strides, dilations, auto_pad = window_attrs(c, nd, kernel)
    ceil_mode = bool(c.attr("ceil_mode", 0))
    return xs[:2] + [window(c, xs[2 + i], kernel[i], pads[i], pads[i + nd], strides[i], dilations[i], auto_pad,
                            ceil_mode) for i in range(nd)]


@rule("MaxPool")
def max_pool(c):
    out = pooled(c)
    return [Out(c.elem(0), out), Out(INT64, list(out))]


@rule("AveragePool", "LpPool")
def average_pool(c):
    return Out(c.elem(0), pooled(c))


@rule("GlobalAveragePool", "GlobalMaxPool", "GlobalLpPool")
def global_pool(c):
    xs = c.shape(0)
    return Out(c.elem(0), xs[:2] + [1] * (len(xs) - 2))


@rule("MaxRoiPool")
def max_roi_pool(c):
    return Out(c.elem(0), [c.shape(1)[0], c.shape(0)[1]] + list(c.attr("pooled_shape")))


@rule("MaxUnpool")
def max_unpool(c):
    xs = c.shape(0)
    if c.has(2):
        dims = c.dims(2)
        return Out(c.elem(0), dims if dims is not None else [c.fresh() for _ in xs])
    nd = len(xs) - 2
    kernel = list(c.attr("kernel_shape"))
    pads = c.attr("pads") or [0] * (2 * nd)
    strides = c.attr("strides") or [1] * nd
    spatial = [(d - 1) * strides[i] + kernel[i] - pads[i] - pads[i + nd] if isinstance(d, int) else c.fresh()
               for i, d in enumerate(xs[2:])]
    return Out(c.elem(0), xs[:2] + spatial)
