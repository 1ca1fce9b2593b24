"""Gradient rules of the windowed pools and GlobalLpPool (ops/pool.py); the other global pools are in reduce.py."""
from __future__ import annotations

import numpy as np

from ._emit import copy_attrs, expand_like, reshape, reshape_like, text
from ._registry import rule


@rule("MaxPool")
def _max_pool(c, x, y, dy):
    indices = c.extra_output(1, "indices")
    if c.opset < 16:  # ORT's MaxPoolGrad (default domain; onnx.checker does not know it)
        attrs = copy_attrs(c.node, "kernel_shape", "pads", "strides", "dilations", "ceil_mode", "storage_order")
        dx = c.op("MaxPoolGrad", dy[0], indices, **attrs)
        c.declare_like(dx, x[0])
        return [dx]
    # scatter-add dY at the flat input positions MaxPool's Indices name
    flat = c.ints([-1], "flat")
    zeros = c.op("ConstantOfShape", c.op("Reshape", c.op("Size", x[0]), flat), value=np.zeros(1, dtype=c.dtype(x[0])))
    scattered = c.op("ScatterElements", zeros, c.op("Reshape", indices, flat), c.op("Reshape", dy[0], flat), axis=0,
                     reduction="add")
    return [reshape_like(c, scattered, x[0])]


def _pool_windows(c, x, y):
    """(kernel, pads, strides, per-window count of real input cells) of a pooling node, static sizes required."""
    n = c.node
    kernel = list(n.attr("kernel_shape"))
    nd = len(kernel)
    pads = list(n.attr("pads") or [0] * (2 * nd))
    strides = list(n.attr("strides") or [1] * nd)
    x_shape, y_shape = c.shape(x), c.shape(y)
    if text(n.attr("auto_pad", b"NOTSET")) != "NOTSET" or n.attr("dilations") not in (None, [1] * nd) or \
            not all(isinstance(d, int) for d in x_shape[2:] + y_shape[2:]):
        raise NotImplementedError(f"{c.where()}: the {n.op_type} gradient needs static spatial sizes, explicit "
                                  f"pads and no dilations")
    inside = np.ones([1, 1] + y_shape[2:])
    for i in range(nd):
        starts = np.arange(y_shape[2 + i]) * strides[i]
        count = np.minimum(starts + kernel[i], pads[i] + x_shape[2 + i]) - np.maximum(starts, pads[i])
        inside = inside * count.reshape([-1] + [1] * (nd - 1 - i))
    return kernel, pads, strides, inside


def _spread(c, v, x, y, kernel, pads, strides):
    """Each window's value of ``v`` (y's shape) added to every input cell of the window: a ConvTranspose of every
    channel with a kernel of ones; its pads cut what falls on padding, ceil_mode's overhang included."""
    nd = len(kernel)
    x_shape, y_shape = c.shape(x), c.shape(y)
    end_pads, out_pad = list(pads[nd:]), []
    for i in range(nd):
        overhang = x_shape[2 + i] - ((y_shape[2 + i] - 1) * strides[i] - pads[i] - pads[i + nd] + kernel[i])
        out_pad.append(max(overhang, 0))
        end_pads[i] += max(-overhang, 0)
    ones = c.const(np.ones([1, 1] + kernel, dtype=c.dtype(x)), "window_ones")
    spread = c.op("ConvTranspose", reshape(c, v, [-1, 1] + [0] * nd), ones, kernel_shape=kernel, strides=strides,
                  pads=pads[:nd] + end_pads, output_padding=out_pad)
    return reshape_like(c, spread, x)


@rule("AveragePool")
def _average_pool(c, x, y, dy):
    """dY divided by each window's count (all its cells with count_include_pad), spread over the window."""
    kernel, pads, strides, inside = _pool_windows(c, x[0], y[0])
    divisor = np.full(inside.shape, np.prod(kernel)) if c.node.attr("count_include_pad", 0) else inside
    return [_spread(c, dy[0] * c.const((1 / divisor).astype(c.dtype(x[0])), "divisor"), x[0], y[0], kernel, pads,
                    strides)]


def _lp_slope(c, x, y, p):
    """d y / d x inside a window of y = (sum |x|^p)^(1/p): sign(x) |x|^(p-1) y^(1-p), as two factors."""
    return x.sign() * abs(x) ** (p - 1.0), y ** (1.0 - p)


@rule("LpPool")
def _lp_pool(c, x, y, dy):
    kernel, pads, strides, _ = _pool_windows(c, x[0], y[0])
    if c.node.attr("ceil_mode", 0):
        raise NotImplementedError(f"{c.where()}: the LpPool gradient does not take ceil_mode")
    local, per_window = _lp_slope(c, x[0], y[0], float(c.node.attr("p", 2)))
    return [local * _spread(c, dy[0] * per_window, x[0], y[0], kernel, pads, strides)]


@rule("GlobalLpPool")
def _global_lp_pool(c, x, y, dy):
    local, per_window = _lp_slope(c, x[0], y[0], float(c.node.attr("p", 2)))
    return [local * expand_like(c, dy[0] * per_window, x[0])]
