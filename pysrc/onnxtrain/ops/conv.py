"""Kernels: Conv, ConvTranspose and com.microsoft ConvGrad, as im2col + one matmul per group."""
from __future__ import annotations

import itertools

import numpy as np

from ..ir.ort_names import MS_DOMAIN
from . import simd
from .matmul import matmul
from .registry import kernel


_AUTO_PADS = ("NOTSET", "VALID", "SAME_UPPER", "SAME_LOWER")


def _check_lengths(nd, kernel_shape, strides, pads, dilations, auto_pad):
    """Every per-axis attribute has one value per spatial axis of the input (pads two), so that no
    attribute can multiply the work beyond the input's own rank."""
    if nd < 1:
        raise ValueError("the input needs at least one spatial axis (N, C, D1, ...)")
    for name, values, want, low in (("kernel_shape", kernel_shape, nd, 1), ("strides", strides, nd, 1),
                                    ("dilations", dilations, nd, 1), ("pads", pads, 2 * nd, 0)):
        if len(values) != want:
            raise ValueError(f"{name} {_short(values)} has {len(values)} values, but the input has {nd} spatial "
                             f"axes ({want} needed)")
        if any(v < low for v in values):
            raise ValueError(f"{name} {_short(values)} holds a value below {low}")
    if auto_pad not in _AUTO_PADS:
        raise ValueError(f"auto_pad '{auto_pad}' is not one of {', '.join(_AUTO_PADS)}")


def _short(values) -> str:
    values = list(values)
    return str(values) if len(values) <= 8 else f"[{', '.join(map(str, values[:8]))}, ...]"


def conv_geometry(in_shape, kernel_shape, strides, pads, dilations, auto_pad, ceil_mode=0):
    """(pads, output spatial shape) for the spatial dims ``in_shape``; ValueError when the attributes do
    not fit the input's rank or leave no output."""
    nd = len(in_shape)
    strides = list(strides or [1] * nd)
    dilations = list(dilations or [1] * nd)
    pads = list(pads or [0] * (2 * nd))
    _check_lengths(nd, list(kernel_shape), strides, pads, dilations, auto_pad)
    eff = [(k - 1) * d + 1 for k, d in zip(kernel_shape, dilations)]
    if auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        out = [-(-i // s) for i, s in zip(in_shape, strides)]
        total = [max(0, (o - 1) * s + e - i) for o, s, e, i in zip(out, strides, eff, in_shape)]
        small = [t // 2 for t in total]
        big = [t - t // 2 for t in total]
        pads = (small + big) if auto_pad == "SAME_UPPER" else (big + small)
    elif auto_pad == "VALID":
        pads = [0] * (2 * nd)
    out = []
    for i in range(nd):
        span = in_shape[i] + pads[i] + pads[i + nd] - eff[i]
        o = (-(-span // strides[i]) if ceil_mode else span // strides[i]) + 1
        if ceil_mode and (o - 1) * strides[i] >= in_shape[i] + pads[i]:
            o -= 1
        if o < 1:
            raise ValueError(f"kernel_shape {_short(kernel_shape)} with dilations {_short(dilations)} does not fit "
                             f"the input's spatial shape {list(in_shape)} with pads {_short(pads)}")
        out.append(o)
    return pads, out, strides, dilations


def _windows(xp, out, strides, dilations, kernel_shape):
    """For each kernel offset, the strided view of ``xp`` (N, C, *spatial) it multiplies."""
    for offs in itertools.product(*[range(k) for k in kernel_shape]):
        index = [slice(None), slice(None)]
        for o, size, s, d in zip(offs, out, strides, dilations):
            start = o * d
            index.append(slice(start, start + (size - 1) * s + 1, s))
        yield tuple(index)


def _pad_input(X, pads, fill=0):
    """X (N, C, *spatial) with ``pads`` (begins, then ends) of ``fill`` around the spatial dims."""
    nd = X.ndim - 2
    if not any(pads):
        return X
    shape = X.shape[:2] + tuple(X.shape[2 + i] + pads[i] + pads[i + nd] for i in range(nd))
    xp = np.full(shape, fill, X.dtype)
    xp[(slice(None), slice(None)) + tuple(slice(pads[i], pads[i] + X.shape[2 + i]) for i in range(nd))] = X
    return xp


def _reads_input_as_is(kernel_shape, pads, strides) -> bool:
    """A 1x1 kernel, stride 1, no padding: the columns are the input itself."""
    return all(k == 1 for k in kernel_shape) and all(s == 1 for s in strides) and not any(pads)


def im2col(X, kernel_shape, pads, out, strides, dilations):
    """cols (N, C, K, *out) where K runs over the kernel offsets: one copy of a strided view of the input."""
    if _reads_input_as_is(kernel_shape, pads, strides):
        return X.reshape(X.shape[:2] + (1,) + tuple(X.shape[2:]))
    cols = simd.im2col(X, kernel_shape, pads, out, strides, dilations)
    if cols is not None:
        return cols
    xp = _pad_input(X, pads)
    n, c = X.shape[:2]
    spatial = xp.strides[2:]
    view = np.lib.stride_tricks.as_strided(
        xp, (n, c, *kernel_shape, *out),
        xp.strides[:2] + tuple(s * d for s, d in zip(spatial, dilations)) + tuple(s * t for s, t in zip(spatial, strides)),
        writeable=False)
    return view.reshape(n, c, -1, *out)


def col2im(cols, x_shape, kernel_shape, pads, out, strides, dilations):
    """The adjoint of im2col: scatter-add cols (N, C, K, *out) back into an input of ``x_shape``."""
    if _reads_input_as_is(kernel_shape, pads, strides):
        return cols.reshape(x_shape)
    x = simd.col2im(cols, x_shape, kernel_shape, pads, out, strides, dilations)
    if x is not None:
        return x
    nd = len(x_shape) - 2
    padded = [x_shape[0], x_shape[1]] + [x_shape[2 + i] + pads[i] + pads[i + nd] for i in range(nd)]
    xp = np.zeros(padded, dtype=cols.dtype)
    for k, index in enumerate(_windows(xp, out, strides, dilations, kernel_shape)):
        xp[index] += cols[:, :, k]
    crop = (slice(None), slice(None)) + tuple(slice(pads[i], pads[i] + x_shape[2 + i]) for i in range(nd))
    return xp[crop]


def _prepare(X, W, kernel_shape, strides, pads, dilations, auto_pad):
    kernel_shape = list(kernel_shape or W.shape[2:])
    pads, out, strides, dilations = conv_geometry(X.shape[2:], kernel_shape, strides, pads, dilations, auto_pad)
    return kernel_shape, pads, out, strides, dilations


@kernel("Conv")
def Conv(X, W, B=None, *, auto_pad="NOTSET", dilations=None, group=1, kernel_shape=None, pads=None, strides=None):
    if X.ndim < 3 or W.ndim != X.ndim or X.shape[1] != W.shape[1] * group:
        raise ValueError(f"Conv: input {list(X.shape)} and weight {list(W.shape)} do not match with group={group}")
    kernel_shape, pads, out, strides, dilations = _prepare(X, W, kernel_shape, strides, pads, dilations, auto_pad)
    if group == X.shape[1] == W.shape[0]:
        y = simd.depthwise(X, W, B, pads, out, strides, dilations)
        if y is not None:
            return y
    n, m = X.shape[0], W.shape[0]
    cols = im2col(X, kernel_shape, pads, out, strides, dilations)        # N, C, K, *out
    cg, mg, K = X.shape[1] // group, m // group, cols.shape[2]
    cols = cols.reshape(n, group, cg * K, -1)                              # N, G, CgK, P
    w = W.reshape(group, mg, cg * K)                                       # G, Mg, CgK
    y = matmul(w[None], cols)                                           # N, G, Mg, P
    y = y.reshape(n, m, *out)
    if B is not None:
        y += B.reshape((1, m) + (1,) * len(out))
    return y.astype(X.dtype, copy=False)


@kernel("ConvGrad", domain=MS_DOMAIN)
def ConvGrad(dY, X, W, *, auto_pad="NOTSET", dilations=None, group=1, kernel_shape=None, pads=None, strides=None,
             _outputs=(True, True, True)):
    kernel_shape, pads, out, strides, dilations = _prepare(X, W, kernel_shape, strides, pads, dilations, auto_pad)
    n, m = X.shape[0], W.shape[0]
    cg, mg, K = X.shape[1] // group, m // group, int(np.prod(kernel_shape))
    dy = dY.reshape(n, group, mg, -1)                                      # N, G, Mg, P
    want_dx, want_dw, want_db = (tuple(_outputs) + (False,) * 3)[:3]
    dX = dW = dB = None
    fast = simd.depthwise_grad(dY, X, W, pads, out, strides, dilations, want_dx, want_dw) \
        if group == X.shape[1] == W.shape[0] else None
    if fast is not None:
        dX, dW = fast
        want_dx = want_dw = False
    if want_dw:
        cols = im2col(X, kernel_shape, pads, out, strides, dilations).reshape(n, group, cg * K, -1)
        dW = matmul(dy, cols.swapaxes(-1, -2)).sum(axis=0).reshape(W.shape).astype(W.dtype, copy=False)
    if want_dx:
        w = W.reshape(group, mg, cg * K)
        dcols = matmul(w.transpose(0, 2, 1)[None], dy)                   # N, G, CgK, P
        dcols = dcols.reshape(n, group * cg, K, *out)
        dX = col2im(dcols, X.shape, kernel_shape, pads, out, strides, dilations).astype(X.dtype, copy=False)
    if want_db:
        sums = simd.plane_sums(dY, dY.ndim - 2)
        dB = (dY.sum(axis=(0,) + tuple(range(2, dY.ndim))) if sums is None else sums.sum(axis=0)
              ).astype(dY.dtype, copy=False)
    return dX, dW, dB


def transpose_geometry(spatial: list, kernel_shape: list, strides: list, dilations: list, output_padding: list,
                       output_shape, pads, auto_pad: str) -> tuple:
    """(pads, full spatial shape) of a ConvTranspose over input axes ``spatial``: the output is the full shape less
    the pads.  ValueError or NotImplementedError for what it cannot be."""
    nd = len(spatial)
    eff = [(k - 1) * d + 1 for k, d in zip(kernel_shape, dilations)]
    full = [(i - 1) * s + e + op for i, s, e, op in zip(spatial, strides, eff, output_padding)]
    if output_shape is not None:          # the spec ignores pads then
        target = list(output_shape)[-nd:]
        if len(output_shape) not in (nd, nd + 2) or min(target) < 1:
            raise ValueError(f"output_shape {_short(output_shape)} does not fit {nd} spatial axes")
        pads = _transpose_pads([f - t for f, t in zip(full, target)], auto_pad)
    elif auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        total = [f - i * s for f, i, s in zip(full, spatial, strides)]
        if min(total) < 0:
            raise NotImplementedError(
                f"ConvTranspose: auto_pad {auto_pad} with a kernel shorter than its stride (output "
                f"{[i * s for i, s in zip(spatial, strides)]} beyond the full {full}) is not supported: onnx's "
                f"reference and onnxruntime disagree on it")
        pads = _transpose_pads(total, auto_pad)
    elif auto_pad == "VALID" or pads is None:
        pads = [0] * (2 * nd)
    pads = list(pads)
    if any(full[i] - pads[i] - pads[i + nd] < 1 for i in range(nd)):
        raise ValueError(f"ConvTranspose: pads {_short(pads)} leave no output of the full spatial shape {full}")
    return pads, full


def _transpose_pads(total: list, auto_pad: str) -> list:
    """Begin and end pads that remove ``total`` per axis, as the spec and onnxruntime distribute them
    (SAME_UPPER removes more at the end, NOTSET and SAME_LOWER at the beginning).  A total of -1 (an
    output_shape one beyond the full output) adds a zero at the end, as the spec, onnx's backend data
    and onnxruntime agree; beyond that they do not (onnx's reference refuses, onnxruntime misplaces)."""
    if min(total) < -1:
        raise NotImplementedError(f"ConvTranspose: output_shape more than one position beyond the full output "
                                  f"(by {[-t for t in total]}) is not supported")
    begin, end = [], []
    for t in total:
        if t <= 0:
            begin.append(0)
            end.append(t)
        elif auto_pad == "SAME_UPPER":
            begin.append(t // 2)
            end.append(t - t // 2)
        else:
            begin.append(t - t // 2)
            end.append(t // 2)
    return begin + end


def _crop(y: np.ndarray, pads: list) -> np.ndarray:
    """y (N, C, *spatial) without ``pads`` (begins, then ends) at its spatial edges; negative pads add
    zeros there."""
    nd = y.ndim - 2
    if min(pads) < 0:
        grow = [(0, 0), (0, 0)] + [(max(0, -pads[i]), max(0, -pads[i + nd])) for i in range(nd)]
        y = np.pad(y, grow)
        pads = [max(0, p) for p in pads]
    return y[(slice(None), slice(None)) + tuple(slice(pads[i], y.shape[2 + i] - pads[i + nd]) for i in range(nd))]


@kernel("ConvTranspose")
def ConvTranspose(X, W, B=None, *, auto_pad="NOTSET", dilations=None, group=1, kernel_shape=None,
                  output_padding=None, output_shape=None, pads=None, strides=None):
    nd = X.ndim - 2
    auto_pad = auto_pad.decode() if isinstance(auto_pad, bytes) else auto_pad
    if X.ndim < 3 or W.ndim != X.ndim or X.shape[1] != W.shape[0] or X.shape[1] % group:
        raise ValueError(f"ConvTranspose: input {list(X.shape)} and weight {list(W.shape)} do not match with "
                         f"group={group}")
    kernel_shape = list(kernel_shape or W.shape[2:])
    strides = list(strides or [1] * nd)
    dilations = list(dilations or [1] * nd)
    output_padding = list(output_padding or [0] * nd)
    _check_lengths(nd, kernel_shape, strides, list(pads or [0] * (2 * nd)), dilations, auto_pad)
    if len(output_padding) != nd:
        raise ValueError(f"output_padding {_short(output_padding)} has {len(output_padding)} values, but the input "
                         f"has {nd} spatial axes")
    pads, full = transpose_geometry(list(X.shape[2:]), kernel_shape, strides, dilations, output_padding,
                                    output_shape, pads, auto_pad)
    n, c = X.shape[:2]
    mg = W.shape[1]
    cg = c // group
    K = int(np.prod(kernel_shape))
    x = X.reshape(n, group, cg, -1)                                        # N, G, Cg, P
    w = W.reshape(group, cg, mg * K)                                       # G, Cg, MgK
    cols = matmul(w.transpose(0, 2, 1)[None], x)                        # N, G, MgK, P
    cols = cols.reshape(n, group * mg, K, *X.shape[2:])
    inner = [max(p, 0) for p in pads]
    y = col2im(cols, [n, group * mg] + [f - inner[i] - inner[i + nd] for i, f in enumerate(full)],
               kernel_shape, inner, list(X.shape[2:]), strides, dilations)
    if min(pads) < 0:
        y = _crop(y, [min(p, 0) for p in pads])
    if B is not None:
        y = y + B.reshape((1, -1) + (1,) * nd)
    return y.astype(X.dtype, copy=False)
