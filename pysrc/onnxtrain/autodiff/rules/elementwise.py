"""Gradient rules of the elementwise ops and activations (ops/elementwise.py)."""
from __future__ import annotations

import numpy as np

from ...ir.ort_names import MS_DOMAIN
from ._emit import legacy_broadcast, text
from ._registry import rule


@rule("Identity")
def _identity(c, x, y, dy):
    return [dy[0]]


@rule("Add", "Sum", broadcasts=True)
def _add(c, x, y, dy):
    return [dy[0]] * len(x)


@rule("Sub", broadcasts=True)
def _sub(c, x, y, dy):
    return [dy[0], -dy[0]]


@rule("Mul", broadcasts=True)
def _mul(c, x, y, dy):
    return [c.op("Mul", dy[0], x[1], **legacy_broadcast(c)), dy[0] * x[0]]


@rule("Div", broadcasts=True)
def _div(c, x, y, dy):  # d(a/b)/db = -y/b
    legacy = legacy_broadcast(c)
    return [c.op("Div", dy[0], x[1], **legacy), -(dy[0] * c.op("Div", y[0], x[1], **legacy))]


@rule("Mean", broadcasts=True)
def _mean(c, x, y, dy):
    return [dy[0] / float(len(x))] * len(x)


@rule("Neg")
def _neg(c, x, y, dy):
    return [-dy[0]]


@rule("Abs")
def _abs(c, x, y, dy):
    return [dy[0] * x[0].sign()]


@rule("Exp")
def _exp(c, x, y, dy):
    return [dy[0] * y[0]]


@rule("Log")
def _log(c, x, y, dy):
    return [dy[0] / x[0]]


@rule("Sqrt")
def _sqrt(c, x, y, dy):
    return [dy[0] / (y[0] * 2.0)]


@rule("Reciprocal")
def _reciprocal(c, x, y, dy):
    return [-(dy[0] * (y[0] * y[0]))]


@rule("Pow", broadcasts=True)
def _pow(c, x, y, dy):  # e * x^(e-1); y * log(x)
    base, exponent = x
    e = exponent if c.dtype(exponent) == c.dtype(base) else exponent.cast(base)
    return [dy[0] * e * base ** (e - 1.0), dy[0] * (y[0] * base.log())]


@rule("Where", broadcasts=True)
def _where(c, x, y, dy):
    return [None, x[0].where(dy[0], 0.0), x[0].where(0.0, dy[0])]


@rule("Cast")
def _cast(c, x, y, dy):
    return [dy[0].cast(x[0])]


@rule("Relu")
def _relu(c, x, y, dy):
    return [c.op("ReluGrad", dy[0], y[0], domain=MS_DOMAIN)]


@rule("Sigmoid")
def _sigmoid(c, x, y, dy):
    return [c.op("SigmoidGrad", dy[0], y[0], domain=MS_DOMAIN)]


@rule("Tanh")
def _tanh(c, x, y, dy):
    return [c.op("TanhGrad", dy[0], y[0], domain=MS_DOMAIN)]


@rule("LeakyRelu")
def _leaky_relu(c, x, y, dy):
    return [c.op("LeakyReluGrad", dy[0], y[0], domain=MS_DOMAIN, alpha=c.node.attr("alpha", 0.01))]


@rule("Erf")
def _erf(c, x, y, dy):  # 2/sqrt(pi) * exp(-x^2)
    return [dy[0] * ((-(x[0] * x[0])).exp() * (2 / np.sqrt(np.pi)))]


@rule("Atan")
def _atan(c, x, y, dy):
    return [dy[0] / (1.0 + x[0] * x[0])]


@rule("Sin")
def _sin(c, x, y, dy):
    return [dy[0] * x[0].cos()]


@rule("Cos")
def _cos(c, x, y, dy):
    return [dy[0] * -x[0].sin()]


@rule("Clip")
def _clip(c, x, y, dy):
    low, high = (x + ["", ""])[1:3]
    if c.opset < 11:  # bounds are attributes
        low, high = (c.scalar(c.node.attr(k, v), x[0]) for k, v in (("min", -np.inf), ("max", np.inf)))
    masks = ([c.op("Not", x[0].lt(low))] if low else []) + ([c.op("Not", x[0].gt(high))] if high else [])
    inside = masks[0] & masks[1] if len(masks) == 2 else masks[0] if masks else None
    return [dy[0] if inside is None else dy[0] * inside.cast(dy[0])]


@rule("Elu")
def _elu(c, x, y, dy):  # x > 0: 1, else y + alpha
    return [dy[0] * x[0].gt(0.0).where(1.0, y[0] + c.node.attr("alpha", 1.0))]


@rule("Gelu")
def _gelu(c, x, y, dy):
    v = x[0]
    if text(c.node.attr("approximate", b"none")) == "tanh":  # t = tanh(k (v + a v^3))
        k, a = np.sqrt(2 / np.pi), 0.044715
        t = (v * (1.0 + v * v * a) * k).tanh()
        slope = (1.0 + t) * 0.5 + v * 0.5 * (1.0 - t * t) * ((1.0 + v * v * (3 * a)) * k)
    else:  # 0.5 (1 + erf(x / sqrt 2)) + x exp(-x^2 / 2) / sqrt(2 pi)
        slope = (1.0 + (v * 2 ** -0.5).erf()) * 0.5 + v * ((v * v * -0.5).exp() * (2 * np.pi) ** -0.5)
    return [dy[0] * slope]


@rule("Softplus")
def _softplus(c, x, y, dy):
    return [dy[0] * x[0].sigmoid()]


@rule("Softsign")
def _softsign(c, x, y, dy):  # 1 / (1 + |x|)^2
    d = 1.0 + abs(x[0])
    return [dy[0] / (d * d)]


@rule("HardSigmoid")
def _hard_sigmoid(c, x, y, dy):  # alpha inside (0, 1), else 0
    inside = y[0].gt(0.0) & y[0].lt(1.0)
    return [dy[0] * inside.where(c.scalar(c.node.attr("alpha", 0.2), x[0]), 0.0)]


@rule("HardSwish")
def _hard_swish(c, x, y, dy):  # 0 below -3, 1 above 3, x / 3 + 1/2 between
    return [dy[0] * x[0].lt(-3.0).where(0.0, x[0].gt(3.0).where(1.0, x[0] / 3.0 + 0.5))]


@rule("Selu")
def _selu(c, x, y, dy):  # gamma for x > 0, else y + gamma * alpha
    gamma = c.node.attr("gamma", 1.05070102214813232421875)
    alpha = c.node.attr("alpha", 1.67326319217681884765625)
    return [dy[0] * x[0].gt(0.0).where(c.scalar(gamma, x[0]), y[0] + gamma * alpha)]


@rule("Celu")
def _celu(c, x, y, dy):  # 1 for x > 0, else exp(x / alpha)
    return [dy[0] * x[0].gt(0.0).where(1.0, (x[0] / c.node.attr("alpha", 1.0)).exp())]


@rule("ThresholdedRelu")
def _thresholded_relu(c, x, y, dy):  # 1 above alpha, else 0
    return [dy[0] * x[0].gt(c.node.attr("alpha", 1.0)).cast(x[0])]


@rule("PRelu", broadcasts=True)
def _prelu(c, x, y, dy):  # dx: 1 or slope; dslope: 0 or x
    x_shape, slope_shape = c.shape(x[0]), c.shape(x[1])
    if c.opset < 7 and (x_shape is None or slope_shape is None or len(slope_shape) == 1 and len(x_shape) > 2
                        and slope_shape[0] == x_shape[1] != 1):
        raise NotImplementedError(f"{c.where()}: no gradient for PRelu-1/6's per-channel slope (one value per "
                                  f"channel along axis 1); opset 7's PRelu broadcasts a slope of shape [C, 1, ...]")
    negative = x[0].lt(0.0)
    return [dy[0] * negative.where(x[1], 1.0), dy[0] * negative.where(x[0], 0.0)]


@rule("Mish")
def _mish(c, x, y, dy):  # tanh(sp) + x * sigmoid(x) * (1 - tanh(sp)^2), sp = softplus(x)
    t = x[0].softplus().tanh()
    return [dy[0] * (t + x[0] * x[0].sigmoid() * (1.0 - t * t))]


@rule("Max", "Min", broadcasts=True)
def _max_min(c, x, y, dy):
    """dY goes to the inputs equal to the result, shared equally among ties (as torch.maximum/minimum do;
    onnxruntime's own rule gives every tied input the whole dY)."""
    hits = [xi.eq(y[0]).cast(y[0]) for xi in x]
    share = dy[0] / c.op("Sum", *hits)
    return [share * hit for hit in hits]
