"""Activations and the like (the input's shape out), their com.microsoft gradients, softmax, dropout."""
from __future__ import annotations

from ._context import BOOL
from ._registry import Out, rule

MS = "com.microsoft"
ACTIVATIONS = ("Relu", "Sigmoid", "Tanh", "Softplus", "Softsign", "Elu", "Selu", "Celu", "LeakyRelu", "HardSigmoid",
               "HardSwish", "Mish", "ThresholdedRelu", "Gelu", "Shrink", "Clip", "Softmax", "LogSoftmax", "Hardmax",
               "LRN", "LpNormalization", "MeanVarianceNormalization")
MS_SAME_AS_FIRST = ("Gelu", "FastGelu", "BiasGelu", "QuickGelu", "Scale", "ZeroGradient")
MS_SAME_AS_SECOND = ("ReluGrad", "SigmoidGrad", "TanhGrad", "LeakyReluGrad", "QuickGeluGrad", "GeluGrad",
                     "FastGeluGrad", "BiasGeluGrad_dX", "SoftmaxGrad_13", "LogSoftmaxGrad_13", "SoftmaxGrad",
                     "LogSoftmaxGrad")


@rule(*ACTIVATIONS)
def activation(c):
    return c.like(0)


@rule("PRelu")
def prelu(c):
    if c.opset < 7:  # a per-channel slope
        return c.like(0)
    return Out(c.elem(0), c.broadcast([0, 1]))


@rule(*MS_SAME_AS_FIRST, domain=MS)
def ms_same_as_first(c):
    return c.like(0)


@rule(*MS_SAME_AS_SECOND, domain=MS)
def ms_gradient(c):
    return Out(c.elem(0), c.shape(1))


@rule("DropoutGrad", domain=MS)
def dropout_grad(c):
    return c.like(0)


@rule("Dropout")
def dropout(c):
    return [c.like(0), c.like(0, BOOL)]
