"""Gradient rules of Softmax, LogSoftmax and Dropout."""
from __future__ import annotations

from ...ir.ort_names import MS_DOMAIN
from ._emit import reduce_sum
from ._registry import rule


def _from_axis(c, x):
    """Softmax and LogSoftmax before opset 13 normalize over all axes from ``axis`` on."""
    rank = len(c.shape(x))
    axis = c.node.attr("axis", 1)
    return list(range(axis + rank if axis < 0 else axis, rank))


@rule("Softmax")
def _softmax(c, x, y, dy):
    if c.opset < 13:  # y * (dy - sum(dy * y))
        return [y[0] * (dy[0] - reduce_sum(c, dy[0] * y[0], _from_axis(c, x[0]), keepdims=1))]
    return [c.op("SoftmaxGrad_13", dy[0], y[0], domain=MS_DOMAIN, axis=c.node.attr("axis", -1))]


@rule("LogSoftmax")
def _log_softmax(c, x, y, dy):
    if c.opset < 13:  # dy - exp(y) * sum(dy)
        return [dy[0] - y[0].exp() * reduce_sum(c, dy[0], _from_axis(c, x[0]), keepdims=1)]
    return [c.op("LogSoftmaxGrad_13", dy[0], y[0], domain=MS_DOMAIN, axis=c.node.attr("axis", -1))]


@rule("Dropout")
def _dropout(c, x, y, dy):
    inputs = [dy[0], c.extra_output(1, "mask")] + [v or "" for v in x[1:3]]
    while not inputs[-1]:
        inputs.pop()
    return [c.op("DropoutGrad", *inputs, domain=MS_DOMAIN)]
