"""Gradient rules of Conv and ConvTranspose, through com.microsoft ConvGrad."""
from __future__ import annotations

from ...ir.ort_names import MS_DOMAIN
from ._emit import copy_attrs, reduce_sum, text
from ._registry import rule


@rule("Conv")
def _conv(c, x, y, dy):
    attrs = copy_attrs(c.node, "auto_pad", "dilations", "group", "kernel_shape", "pads", "strides")
    want = [c.wants(0), c.wants(1), len(x) > 2 and bool(x[2]) and c.wants(2)]
    names = [c.fresh(f"{x[i]}_grad_conv") if want[i] else "" for i in range(3)]
    c.op("ConvGrad", dy[0], x[0], x[1], n_outputs=3, domain=MS_DOMAIN, outputs=names, **attrs)
    return [name or None for name in names[:len(x)]]


@rule("ConvTranspose")
def _conv_transpose(c, x, y, dy):
    """ConvTranspose(x, W) is the input gradient of a Conv with weight W, so its gradients are a Conv and
    ConvGrad's weight gradient with the roles of x and dY exchanged."""
    n = c.node
    if n.attr("output_shape") is not None or text(n.attr("auto_pad", b"NOTSET")) != "NOTSET":
        raise NotImplementedError(f"{c.where()}: the ConvTranspose gradient needs explicit pads")
    attrs = copy_attrs(n, "dilations", "group", "kernel_shape", "pads", "strides")
    dw = None
    if c.wants(1):
        dw = c.fresh(f"{x[1]}_grad_convT")
        c.op("ConvGrad", x[0], dy[0], x[1], n_outputs=3, domain=MS_DOMAIN, outputs=["", dw, ""], **attrs)
    grads = [c.op("Conv", dy[0], x[1], **attrs) if c.wants(0) else None, dw]
    if len(x) > 2 and x[2]:
        grads.append(reduce_sum(c, dy[0], [0] + list(range(2, len(c.shape(y[0])))), keepdims=0))
    return grads
