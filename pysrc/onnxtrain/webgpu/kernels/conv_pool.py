"""Convolutions and pools: Conv, ConvTranspose and com.microsoft ConvGrad as implicit GEMMs (a direct kernel for
depthwise), MaxPool (with Indices), MaxPoolGrad, AveragePool and the global pools.  One and two spatial axes; a
one-axis tensor runs as two axes with a height of 1."""
from __future__ import annotations

import numpy as np

from ...ir.ort_names import MS_DOMAIN
from ...ops.conv import conv_geometry, transpose_geometry
from ..errors import NotLowered
from ..lowering import MAX_GROUPS
from ..registry import gpu_kernel
from ..shaders import _file
from .common import float_only

TILE = 64            # output pixels and channels per workgroup of the GEMM kernels
DIRECT_CHANNELS = 8  # below this many output channels per group, one invocation per output instead
SPLIT_TARGET = 256   # workgroups the weight gradient's split K aims at
SPLIT_MIN = 256      # pixels per split at the least


def _gather(weights: bool = False) -> str:
    """The shared WGSL functions: gather (the input at a pixel and reduction index), weight with ``weights``."""
    return _file("conv_pool_gather") + (_file("conv_pool_weight") if weights else "")


def _ceil(a: int, b: int) -> int:
    return -(-a // b)


# -- geometry -----------------------------------------------------------------------------------------------

def _spatial_rank(op: str, X) -> int:
    nd = X.rank - 2
    if nd not in (1, 2):
        raise NotLowered(f"{op} on WebGPU takes one or two spatial axes, not {nd}")
    return nd


def _geometry(op: str, in_shape, kernel_shape, strides, pads, dilations, auto_pad, ceil_mode=0):
    """conv_geometry's (pads, out, strides, dilations), or NotLowered where the CPU kernel would raise (it then
    raises the real error)."""
    try:
        return conv_geometry(list(in_shape), list(kernel_shape), strides, pads, dilations, auto_pad, ceil_mode)
    except (ValueError, TypeError) as e:
        raise NotLowered(f"{op}: {e}") from None


def _two_axes(in_sp, out, kernel, strides, pads_begin, dilations) -> list:
    """Hin, Win, Hout, Wout, kH, kW, sh, sw, ph, pw, dh, dw; one spatial axis becomes the second of two."""
    values = [list(in_sp), list(out), list(kernel), list(strides), list(pads_begin), list(dilations)]
    if len(values[0]) == 1:
        values = [[fill, *v] for fill, v in zip((1, 1, 1, 1, 0, 1), values)]
    return [int(x) for v in values for x in v]


def _grid3(tiles_x: int, y: int, op: str) -> tuple:
    """(x, y, z) workgroups for ``tiles_x`` x ``y`` tiles; x folded into z past the per-dimension limit."""
    if y > MAX_GROUPS:
        raise NotLowered(f"{op}: {y} channel tiles exceed the {MAX_GROUPS} workgroups of a grid dimension")
    z = _ceil(tiles_x, MAX_GROUPS)
    return (_ceil(tiles_x, z), y, z)


def _per_output_grid(count: int) -> tuple:
    rows = _ceil(count, MAX_GROUPS)
    return (_ceil(count, rows), rows, 1)


# -- convolution kernels --------------------------------------------------------------------------------------

def _convolve(k, op, inp, w, bias, out, geo, groups, rg, og, transposed):
    """out = the (transposed) convolution of ``inp`` with ``w``, plus ``bias`` (zeros when None).  ``geo`` is
    _two_axes's list; ``rg`` input and ``og`` output channels per group."""
    if out.size == 0:
        return
    n, cin, cout = inp.shape[0], inp.shape[1], out.shape[1]
    kk = geo[4] * geo[5]
    pixels = n * geo[2] * geo[3]
    tiles = _ceil(og, TILE)
    if bias is None:
        bias = k.known(np.zeros(cout, np.float32))
    params = [n, cin, geo[0], geo[1], cout, *geo[2:], groups, rg, og, rg * kk, pixels, tiles, out.size]
    subs = dict(TRANSPOSED="true" if transposed else "false", GATHER=_gather(weights=True))
    if og < DIRECT_CHANNELS:
        k.dispatch("conv_pool_direct", [inp, w, bias], [out], params, out.size, **subs)
    else:
        k.dispatch("conv_pool_gemm", [inp, w, bias], [out], params,
                   _grid3(_ceil(pixels, TILE), tiles * groups, op), **subs)


def _weight_grad(k, op, dY, X, w_shape, geo, groups, cg, mg):
    """dW of a Conv of X, in a fixed order: per element in one workgroup for thin groups, else a GEMM with
    split K whose partial sums are added in order."""
    n, c, m = X.shape[0], X.shape[1], dY.shape[1]
    dW = k.output(w_shape)
    q = cg * geo[4] * geo[5]
    pixels = n * geo[2] * geo[3]
    tiles = _ceil(mg, TILE)
    base = [n, c, geo[0], geo[1], m, *geo[2:], groups, cg, mg, q, pixels, tiles]
    if mg < DIRECT_CHANNELS or q < DIRECT_CHANNELS or pixels == 0:
        k.dispatch("conv_pool_dw_direct", [dY, X], [dW], base + [0, dW.size], _per_output_grid(dW.size),
                   GATHER=_gather())
        return dW
    tiles_q = _ceil(q, TILE)
    work = tiles_q * tiles * groups
    splits = max(1, min(_ceil(SPLIT_TARGET, work), _ceil(pixels, SPLIT_MIN)))
    chunk = _ceil(_ceil(pixels, splits), 16) * 16
    splits = _ceil(pixels, chunk)
    if tiles * groups > MAX_GROUPS or tiles_q > MAX_GROUPS:
        raise NotLowered(f"{op}: the weight gradient {list(w_shape)} needs more than {MAX_GROUPS} tiles")
    target = dW if splits == 1 else k.output((splits, dW.size))
    k.dispatch("conv_pool_dw", [dY, X], [target], base + [chunk, dW.size], (tiles_q, tiles * groups, splits),
               GATHER=_gather())
    if splits > 1:
        k.dispatch("conv_pool_splits", [target], [dW], [dW.size, splits], dW.size)
    return dW


def _planes(k, X, outputs: int, c2: int, n2: int, length: int, divisor: float, combine: str, init: str, shape):
    """Y[o] = combine over n < n2, i < length of X[(n c2 + o) length + i], / divisor: a fixed tree per output."""
    y = k.output(shape)
    if y.size:
        k.dispatch("conv_pool_planes", [X], [y], [outputs, c2, n2, length, float(divisor)],
                   _per_output_grid(outputs), COMBINE=combine, INIT=init)
    return y


def _sum_planes(k, X, c2, n2, length, divisor, shape):
    return _planes(k, X, c2, c2, n2, length, divisor, "a + b", "0.0", shape)


# -- Conv, ConvGrad, ConvTranspose ----------------------------------------------------------------------------

def _conv_setup(op, X, W, auto_pad, dilations, group, kernel_shape, pads, strides):
    """(geometry for _two_axes, output spatial shape, Cg, Mg) of a Conv of X with W."""
    nd = _spatial_rank(op, X)
    if W.rank != X.rank or group < 1 or X.shape[1] != W.shape[1] * group or W.shape[0] % group:
        raise NotLowered(f"{op}: input {list(X.shape)} and weight {list(W.shape)} do not match with group={group}")
    kernel = list(kernel_shape or W.shape[2:])
    pads, out, strides, dilations = _geometry(op, X.shape[2:], kernel, strides, pads, dilations, auto_pad)
    geo = _two_axes(list(X.shape[2:]), out, kernel, strides, pads[:nd], dilations)
    return geo, out, X.shape[1] // group, W.shape[0] // group


@gpu_kernel("Conv")
def Conv(k, X, W, B=None, *, auto_pad="NOTSET", dilations=None, group=1, kernel_shape=None, pads=None,
         strides=None):
    float_only("Conv", X, W, B)
    geo, out, cg, mg = _conv_setup("Conv", X, W, auto_pad, dilations, group, kernel_shape, pads, strides)
    Y = k.output((X.shape[0], W.shape[0], *out))
    _convolve(k, "Conv", X, W, B, Y, geo, group, cg, mg, transposed=False)
    return Y


@gpu_kernel("ConvGrad", MS_DOMAIN)
def ConvGrad(k, dY, X, W, *, auto_pad="NOTSET", dilations=None, group=1, kernel_shape=None, pads=None,
             strides=None):
    float_only("ConvGrad", dY, X, W)
    geo, out, cg, mg = _conv_setup("ConvGrad", X, W, auto_pad, dilations, group, kernel_shape, pads, strides)
    if tuple(dY.shape) != (X.shape[0], W.shape[0], *out):
        raise NotLowered(f"ConvGrad: dY {list(dY.shape)} is not the Conv's output shape")
    dX = dW = dB = None
    if k.used(0):
        dX = k.output(X.shape)
        # in and out swap roles: dY (N, M, OH, OW) in, X's shape out
        tgeo = [*geo[2:4], *geo[0:2], *geo[4:]]
        _convolve(k, "ConvGrad", dY, W, None, dX, tgeo, group, mg, cg, transposed=True)
    if k.used(1):
        dW = _weight_grad(k, "ConvGrad", dY, X, W.shape, geo, group, cg, mg)
    if k.used(2):
        dB = _sum_planes(k, dY, W.shape[0], X.shape[0], geo[2] * geo[3], 1.0, (W.shape[0],))
    return dX, dW, dB


@gpu_kernel("ConvTranspose")
def ConvTranspose(k, X, W, B=None, *, auto_pad="NOTSET", dilations=None, group=1, kernel_shape=None,
                  output_padding=None, output_shape=None, pads=None, strides=None):
    float_only("ConvTranspose", X, W, B)
    nd = _spatial_rank("ConvTranspose", X)
    if W.rank != X.rank or group < 1 or X.shape[1] != W.shape[0] or X.shape[1] % group:
        raise NotLowered(f"ConvTranspose: input {list(X.shape)} and weight {list(W.shape)} do not match with "
                         f"group={group}")
    kernel = list(kernel_shape or W.shape[2:])
    strides = list(strides or [1] * nd)
    dilations = list(dilations or [1] * nd)
    output_padding = list(output_padding or [0] * nd)
    try:
        if len(kernel) != nd or len(strides) != nd or len(dilations) != nd or len(output_padding) != nd or \
                (pads is not None and len(pads) != 2 * nd) or (output_shape is not None and
                                                                len(output_shape) not in (nd, nd + 2)):
            raise ValueError("an attribute does not fit the input's spatial axes")
        pads, full = transpose_geometry(list(X.shape[2:]), kernel, strides, dilations, output_padding,
                                        output_shape, None if pads is None else list(pads), auto_pad)
    except (ValueError, NotImplementedError) as e:
        raise NotLowered(f"ConvTranspose: {e}") from None
    out = [full[i] - pads[i] - pads[i + nd] for i in range(nd)]
    cg, mg = X.shape[1] // group, W.shape[1]
    Y = k.output((X.shape[0], mg * group, *out))
    geo = _two_axes(list(X.shape[2:]), out, kernel, strides, pads[:nd], dilations)
    _convolve(k, "ConvTranspose", X, W, B, Y, geo, group, cg, mg, transposed=True)
    return Y


# -- pools ----------------------------------------------------------------------------------------------------

def _pool_setup(op, X, kernel_shape, strides, pads, dilations, auto_pad, ceil_mode):
    """(output shape, params 1..12 of the pool shaders) of a pool over X."""
    float_only(op, X)
    nd = _spatial_rank(op, X)
    if kernel_shape is None:
        raise NotLowered(f"{op} needs kernel_shape")
    pads, out, strides, dilations = _geometry(op, X.shape[2:], kernel_shape, strides, pads, dilations, auto_pad,
                                              ceil_mode)
    geo = _two_axes(list(X.shape[2:]), out, list(kernel_shape), strides, pads[:nd], dilations)
    return (*X.shape[:2], *out), geo


INDICES_DECL = "@group(0) @binding(3) var<storage, read_write> Ind: array<i32>;"
INDICES_STORE = """if (pu(13u) != 0u) { Ind[i] = i32(nc) * H * W + bh + bw * H; }
  else { Ind[i] = i32(nc) * H * W + bh * W + bw; }"""


@gpu_kernel("MaxPool")
def MaxPool(k, X, *, auto_pad="NOTSET", ceil_mode=0, dilations=None, kernel_shape=None, pads=None,
            storage_order=0, strides=None):
    shape, geo = _pool_setup("MaxPool", X, kernel_shape, strides, pads, dilations, auto_pad, ceil_mode)
    Y = k.output(shape)
    indices = k.output(shape, np.int64) if k.used(1) else None
    if Y.size:
        outs = [Y] if indices is None else [Y, indices]
        k.dispatch("conv_pool_maxpool", [X], outs, [Y.size, *geo, int(bool(storage_order))], Y.size,
                   INDICES_DECL=INDICES_DECL if indices is not None else "",
                   INDICES_STORE=INDICES_STORE if indices is not None else "")
    return Y if indices is None else (Y, indices)


@gpu_kernel("MaxPoolGrad")
def MaxPoolGrad(k, dY, Indices, *, auto_pad="NOTSET", ceil_mode=0, dilations=None, kernel_shape=None, pads=None,
                storage_order=0, strides=None):
    """dX needs the MaxPool input's shape, from the graph's value_info (the context's ``output_shapes``, as the
    CPU kernel gets it)."""
    float_only("MaxPoolGrad", dY)
    if storage_order:
        # the CPU kernel reads the column-major Indices as row-major positions: cells no window covers
        raise NotLowered("MaxPoolGrad on WebGPU takes the Indices of storage_order 0")
    shape = (k.output_shapes or [None])[0]
    if shape is None or not all(isinstance(d, (int, np.integer)) for d in list(shape)[1:]):
        raise NotLowered("MaxPoolGrad on WebGPU needs the static shape of its output (the MaxPool input)")
    shape = [dY.shape[0], *[int(d) for d in list(shape)[1:]]]
    if len(shape) != dY.rank or shape[1] != dY.shape[1] or tuple(Indices.shape) != tuple(dY.shape):
        raise NotLowered(f"MaxPoolGrad: dY {list(dY.shape)} and Indices {list(Indices.shape)} do not match the "
                         f"MaxPool input {shape}")
    out, geo = _pool_setup("MaxPoolGrad", _Shape(shape), kernel_shape, strides, pads, dilations, auto_pad,
                           ceil_mode)
    if tuple(out) != tuple(dY.shape):
        raise NotLowered(f"MaxPoolGrad: the MaxPool input {shape} pools to {list(out)}, not dY's {list(dY.shape)}")
    dX = k.output(shape)
    if dX.size:
        k.dispatch("conv_pool_maxpool_grad", [dY, Indices], [dX], [dX.size, *geo], dX.size)
    return dX


class _Shape:
    """A stand-in for a float32 tensor of which only the shape is known."""

    def __init__(self, shape):
        self.shape = tuple(shape)
        self.rank = len(shape)
        self.dtype = np.dtype(np.float32)


@gpu_kernel("AveragePool")
def AveragePool(k, X, *, auto_pad="NOTSET", ceil_mode=0, count_include_pad=0, dilations=None, kernel_shape=None,
                pads=None, strides=None):
    shape, geo = _pool_setup("AveragePool", X, kernel_shape, strides, pads, dilations, auto_pad, ceil_mode)
    Y = k.output(shape)
    if Y.size:
        k.dispatch("conv_pool_avgpool", [X], [Y], [Y.size, *geo, int(bool(count_include_pad))], Y.size)
    return Y


def _global(op, k, X, combine, init, mean):
    float_only(op, X)
    if X.rank < 3:
        raise NotLowered(f"{op} needs a spatial axis")
    n, c = X.shape[:2]
    length = int(np.prod(X.shape[2:]))
    if length == 0:
        raise NotLowered(f"{op} of an empty plane")
    return _planes(k, X, n * c, n * c, 1, length, float(length) if mean else 1.0, combine, init,
                   (n, c) + (1,) * (X.rank - 2))


@gpu_kernel("GlobalAveragePool")
def GlobalAveragePool(k, X):
    return _global("GlobalAveragePool", k, X, "a + b", "0.0", mean=True)


@gpu_kernel("GlobalMaxPool")
def GlobalMaxPool(k, X):
    return _global("GlobalMaxPool", k, X, "max_nan(a, b)", "f32_bits(0xff800000u)", mean=False)
