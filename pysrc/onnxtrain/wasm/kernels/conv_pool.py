"""Conv, ConvGrad, MaxPool and MaxPoolGrad over 2-D float32 NCHW, as ops/conv.py and ops/pool.py run them with the
kernel library: im2col, one gemm per batch of groups, the bias added per plane; the depthwise kernels where
group = channels; max pooling with its flat indices and their scatter back."""
from __future__ import annotations

import numpy as np

from ...ir.ort_names import MS_DOMAIN
from ...ops.conv import _reads_input_as_is, conv_geometry
from ...ops.pool import _check_pooled_shape
from ...runtime.program import NotLowered
from ..lowering import f32_only
from ..registry import wasm_kernel
from .elementwise import strided
from .matrix import Operand, gemm
from .reduce import IDENTITY, column_sums
from .loss import ZERO


def _geometry(op: str, x_shape, kernel_shape, strides, pads, dilations, auto_pad, ceil_mode=0):
    """(pads, out, strides, dilations) of a 2-D window op, NotLowered for anything the numpy kernel refuses."""
    if len(x_shape) != 4:
        raise NotLowered(f"{op} over {len(x_shape) - 2} spatial axes (the C kernels take 2)")
    try:
        return conv_geometry(x_shape[2:], kernel_shape, strides, pads, dilations, auto_pad, ceil_mode)
    except ValueError as e:
        raise NotLowered(f"{op}: {e}") from None


def _window(x_shape, kernel_shape, geometry) -> list:
    pads, out, strides, dilations = geometry
    return [x_shape[2], x_shape[3], out[0], out[1], kernel_shape[0], kernel_shape[1], strides[0], strides[1],
            pads[0], pads[1], dilations[0], dilations[1]]


def _columns(k, X, kernel_shape, geometry):
    """ops/conv.py's im2col: cols (N, C, kh * kw, oh, ow), or X itself for a 1x1 kernel, stride 1, no pads."""
    pads, out, strides, dilations = geometry
    n, c = X.shape[:2]
    if _reads_input_as_is(kernel_shape, pads, strides):
        return X
    cols = k.output((n, c, kernel_shape[0] * kernel_shape[1], out[0], out[1]))
    if cols.size:
        k.call("im2col", [X], [cols], [n * c, *_window(X.shape, kernel_shape, geometry)])
    return cols


def _check(op: str, X, W, group: int) -> None:
    f32_only(op, X, W)
    if X.rank != 4 or W.rank != 4 or X.shape[1] != W.shape[1] * group or W.shape[0] % group:
        raise NotLowered(f"{op}: input {X.describe()} and weight {W.describe()} with group={group}")


@wasm_kernel("Conv")
def Conv(k, X, W, B=None, *, auto_pad="NOTSET", dilations=None, group=1, kernel_shape=None, pads=None,
         strides=None):
    _check("Conv", X, W, group)
    f32_only("Conv", B)
    kernel_shape = list(kernel_shape or W.shape[2:])
    geometry = _geometry("Conv", X.shape, kernel_shape, strides, pads, dilations, auto_pad)
    out = geometry[1]
    n, m = X.shape[0], W.shape[0]
    y = k.output((n, m, out[0], out[1]))
    if group == X.shape[1] == W.shape[0] and W.shape[1] == 1 and (B is None or B.shape == (m,)):
        if y.size:
            k.call("depthwise", [X, W, B], [y], [n, m, *_window(X.shape, kernel_shape, geometry)])
        return y
    if X.size == 0 or y.size == 0:
        raise NotLowered("Conv of an empty input")
    cols = _columns(k, X, kernel_shape, geometry)
    cg, mg, kk = X.shape[1] // group, m // group, kernel_shape[0] * kernel_shape[1]
    p = out[0] * out[1]
    w = Operand(W, (1, group, mg, cg * kk))                                    # W[None] as (1, G, Mg, CgK)
    gemm(k, w, Operand(cols, (n, group, cg * kk, p)), k.view(y, (n, group, mg, p)))
    if B is not None:
        if B.shape != (m,):
            raise NotLowered(f"Conv: bias {B.describe()}")
        strided(k, "Add", y, y, B, b_strides=[0, 1, 0, 0], a_strides=[m * p, p, out[1], 1])
    return y


@wasm_kernel("ConvGrad", MS_DOMAIN)
def ConvGrad(k, dY, X, W, *, auto_pad="NOTSET", dilations=None, group=1, kernel_shape=None, pads=None,
             strides=None):
    _check("ConvGrad", X, W, group)
    f32_only("ConvGrad", dY)
    kernel_shape = list(kernel_shape or W.shape[2:])
    geometry = _geometry("ConvGrad", X.shape, kernel_shape, strides, pads, dilations, auto_pad)
    out = geometry[1]
    n, m = X.shape[0], W.shape[0]
    if dY.shape != (n, m, out[0], out[1]) or X.size == 0:
        raise NotLowered(f"ConvGrad: dY {dY.describe()} for input {X.describe()}")
    want_dx, want_dw, want_db = k.used(0), k.used(1), k.used(2)
    dX = k.output(X.shape) if want_dx else None
    dW = k.output(W.shape) if want_dw else None
    dB = k.output((m,)) if want_db else None
    cg, mg, kk = X.shape[1] // group, m // group, kernel_shape[0] * kernel_shape[1]
    p = out[0] * out[1]
    window = _window(X.shape, kernel_shape, geometry)
    dy = Operand(dY, (n, group, mg, p))
    if group == X.shape[1] == W.shape[0] and W.shape[1] == 1:
        if want_dx or want_dw:
            k.call("depthwise_grad", [dY, X, W], [dX, dW], [n, m, *window])
    else:
        if want_dw:
            cols = _columns(k, X, kernel_shape, geometry)
            per_image = k.output((n, group, mg, cg * kk))
            gemm(k, dy, Operand(cols, (n, group, cg * kk, p)).T, per_image)
            _sum_rows(k, k.view(per_image, (n, W.size)), k.view(dW, (W.size,)))
        if want_dx:
            dcols = k.output((n, group, cg * kk, p))
            gemm(k, Operand(W, (1, group, mg, cg * kk)).T, dy, dcols)
            if _reads_input_as_is(kernel_shape, geometry[0], geometry[2]):
                dX = k.view(dcols, X.shape)
            else:
                k.call("col2im", [dcols], [dX], [X.shape[0] * X.shape[1], *window])
    if want_db:
        planes = k.output((n, m))
        k.call("plane_sums", [dY], [planes], [n * m, p])
        _sum_rows(k, planes, dB)
    return dX, dW, dB


def _sum_rows(k, x, out) -> None:
    """out = x.sum(axis=0) of x [rows, cols] as numpy adds it: whole rows in order, or for one column pairwise in
    blocks of 8192 (reduce_rows)."""
    rows, cols = x.shape
    if cols > 1:
        column_sums(k, x, out)
    else:
        k.call("reduce_rows", [x], [out], [1, rows, IDENTITY, ZERO])


@wasm_kernel("MaxPool")
def MaxPool(k, X, *, auto_pad="NOTSET", ceil_mode=0, dilations=None, kernel_shape=None, pads=None, storage_order=0,
            strides=None):
    if k.opset is not None and k.opset < 8:
        raise NotLowered("MaxPool before opset 8")
    f32_only("MaxPool", X)
    if storage_order != 0 or kernel_shape is None:
        raise NotLowered(f"MaxPool with storage_order {storage_order}, kernel_shape {kernel_shape}")
    geometry = _geometry("MaxPool", X.shape, kernel_shape, strides, pads, dilations, auto_pad, ceil_mode)
    out = geometry[1]
    n, c = X.shape[:2]
    y = k.output((n, c, out[0], out[1]))
    indices = k.output(y.shape, np.int64) if k.used(1) else None
    if y.size:
        k.call("maxpool", [X], [y, indices], [n * c, *_window(X.shape, kernel_shape, geometry)])
    return y, indices


@wasm_kernel("MaxPoolGrad")
def MaxPoolGrad(k, dY, Indices, *, auto_pad="NOTSET", ceil_mode=0, dilations=None, kernel_shape=None, pads=None,
                storage_order=0, strides=None):
    f32_only("MaxPoolGrad", dY)
    shape = (k.output_shapes or (None,))[0]
    if shape is None or not all(isinstance(d, int) for d in shape[1:]):
        raise NotLowered(f"MaxPoolGrad: no static input shape in the graph's value_info ({shape})")
    shape = [dY.shape[0]] + list(shape[1:])
    try:
        _check_pooled_shape(shape, dY.shape, kernel_shape, strides, pads, dilations, auto_pad, ceil_mode)
    except ValueError as e:
        raise NotLowered(str(e)) from None
    if Indices.dtype != np.int64 or Indices.shape != dY.shape:
        raise NotLowered(f"MaxPoolGrad: indices {Indices.describe()} for dY {dY.describe()}")
    dX = k.output(shape)
    k.call("maxpool_grad", [dY, Indices], [dX], [dY.size, dX.size])
    return dX


@wasm_kernel("GlobalAveragePool")
def GlobalAveragePool(k, X):
    """ops/pool.py's: the planes' sums (simd.plane_sums), divided by the plane size as a float32."""
    f32_only("GlobalAveragePool", X)
    if X.rank < 3 or X.size == 0:
        raise NotLowered(f"GlobalAveragePool of {X.describe()}")
    planes, size = X.shape[0] * X.shape[1], X.size // (X.shape[0] * X.shape[1])
    sums = k.output(X.shape[:2] + (1,) * (X.rank - 2))
    k.call("plane_sums", [X], [sums], [planes, size])
    y = k.output(sums.shape)
    strided(k, "Div", y, sums, k.known(np.float32(size)))
    return y
