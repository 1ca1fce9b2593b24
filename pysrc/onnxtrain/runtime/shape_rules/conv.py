"""Convolutions: Conv (and its integer, quantized and gradient forms), ConvTranspose.  The weight pins the
input's channels (in-channels times group) and the bias's size."""
from __future__ import annotations

from ._registry import Out, rule

MS = "com.microsoft"


def window(c, d, k: int, pb: int, pe: int, s: int, dil: int, auto_pad: str, ceil_mode: bool = False):
    """An output size of a sliding window over an axis of size ``d``."""
    eff = (k - 1) * dil + 1
    if auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        return -(-d // s) if isinstance(d, int) else d if s == 1 else c.fresh()
    if auto_pad == "VALID":
        pb = pe = 0
    if not isinstance(d, int):
        return d if s == 1 and pb + pe == eff - 1 else c.fresh()
    span = d + pb + pe - eff
    if span < 0:
        c.fail(f"a window of {eff} (kernel {k}, dilation {dil}) does not fit an axis of {d} padded by {pb}+{pe}")
    if not ceil_mode:
        return span // s + 1
    out = -(-span // s) + 1
    return out - 1 if (out - 1) * s >= d + pb else out


def window_attrs(c, nd: int, kernel: list) -> tuple:
    pads = c.attr("pads") or [0] * (2 * nd)
    strides = c.attr("strides") or [1] * nd
    dilations = c.attr("dilations") or [1] * nd
    auto_pad = c.attr("auto_pad", "NOTSET") or "NOTSET"
    if len(kernel) != nd or len(pads) != 2 * nd or len(strides) != nd or len(dilations) != nd:
        c.fail(f"kernel_shape {kernel}, pads {pads}, strides {strides}, dilations {dilations} do not fit "
               f"{nd} spatial axes")
    return pads, strides, dilations, auto_pad


def conv_shape(c, x: int, w: int, b=None) -> list:
    xs, ws = c.shape(x), c.shape(w)
    if len(xs) < 3 or len(ws) != len(xs):
        c.fail(f"X and W must have one rank of 3 or more, got {len(xs)} and {len(ws)}")
    group = c.attr("group", 1)
    channels = ws[1] * group if isinstance(ws[1], int) else ws[1] if group == 1 else None
    if channels is not None:
        c.unify(xs[1], channels, f"axis 1 (channels) of '{c.node.inputs[x]}' and axis 1 of '{c.node.inputs[w]}' "
                                 f"times group {group}")
    if b is not None and c.has(b):
        c.same(b, 0, w, 0)
    xs, ws = c.shape(x), c.shape(w)
    nd = len(xs) - 2
    kernel = c.attr("kernel_shape") or ws[2:]
    if not all(isinstance(k, int) for k in kernel):
        c.fail(f"the kernel's spatial dims {kernel} are not known")
    pads, strides, dilations, auto_pad = window_attrs(c, nd, kernel)
    return xs[:1] + [ws[0]] + [window(c, xs[2 + i], kernel[i], pads[i], pads[i + nd], strides[i], dilations[i],
                                      auto_pad) for i in range(nd)]


@rule("Conv")
def conv(c):
    return Out(c.elem(0), conv_shape(c, 0, 1, 2))


@rule("ConvInteger")
def conv_integer(c):
    return Out(6, conv_shape(c, 0, 1))


@rule("QLinearConv")
def qlinear_conv(c):
    return Out(c.elem(7), conv_shape(c, 0, 3, 8))


@rule("DeformConv")
def deform_conv(c):
    return Out(c.elem(0), conv_shape(c, 0, 1))


@rule("ConvTranspose")
def conv_transpose(c):
    xs, ws = c.shape(0), c.shape(1)
    if len(xs) < 3 or len(ws) != len(xs):
        c.fail(f"X and W must have one rank of 3 or more, got {len(xs)} and {len(ws)}")
    c.same(0, 1, 1, 0)
    group = c.attr("group", 1)
    xs, ws = c.shape(0), c.shape(1)
    out_channels = ws[1] * group if isinstance(ws[1], int) else ws[1] if group == 1 else c.fresh()
    if c.has(2):
        c.pin(2, 0, out_channels)
    nd = len(xs) - 2
    kernel = c.attr("kernel_shape") or ws[2:]
    pads, strides, dilations, auto_pad = window_attrs(c, nd, kernel)
    if c.attr("output_shape"):
        return Out(c.elem(0), xs[:1] + [out_channels] + list(c.attr("output_shape"))[-nd:])
    extra = c.attr("output_padding") or [0] * nd
    spatial = []
    for i in range(nd):
        d = xs[2 + i]
        if not isinstance(d, int):
            spatial.append(c.fresh())
        elif auto_pad in ("SAME_UPPER", "SAME_LOWER"):
            spatial.append(d * strides[i])
        else:
            pb, pe = (0, 0) if auto_pad == "VALID" else (pads[i], pads[i + nd])
            spatial.append(strides[i] * (d - 1) + extra[i] + (kernel[i] - 1) * dilations[i] + 1 - pb - pe)
    return Out(c.elem(0), xs[:1] + [out_channels] + spatial)


@rule("ConvGrad", domain=MS)
def conv_grad(c):
    w = c.shape(2)
    return [Out(c.elem(0), c.shape(1)), Out(c.elem(0), w), Out(c.elem(0), w[:1])]
