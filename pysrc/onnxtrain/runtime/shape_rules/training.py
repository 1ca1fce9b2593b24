"""ORT's training ops (com.microsoft): accumulators, optimizers, and the gradient ops autodiff emits that
keep an input's type."""
from __future__ import annotations

from ...ir.dtypes import DataType
from ._registry import shape_rule

MS = "com.microsoft"
LIKE_INPUT = {  # gradient op -> the input whose type its first output has
    "ReluGrad": 0, "SigmoidGrad": 0, "TanhGrad": 0, "LeakyReluGrad": 0, "QuickGeluGrad": 0, "GeluGrad": 0,
    "FastGeluGrad": 0, "BiasGeluGrad_dX": 0, "SoftmaxGrad_13": 0, "LogSoftmaxGrad_13": 0, "DropoutGrad": 0,
    "SoftmaxCrossEntropyLossInternalGrad": 1, "SoftmaxCrossEntropyLossGrad": 1, "SoftmaxCrossEntropyGrad": 1,
}


@shape_rule(*LIKE_INPUT, domain=MS)
def like_input(ctx):
    i = LIKE_INPUT[ctx.node.op_type]
    return [(ctx.elem(i), ctx.shape(i))]


@shape_rule("InPlaceAccumulatorV2", domain=MS)
def accumulator_v2(ctx):
    return [(DataType.BOOL, [1]), (ctx.elem(0), ctx.shape(0))]


@shape_rule("InPlaceAccumulator", domain=MS)
def accumulator(ctx):
    return [(ctx.elem(0), ctx.shape(0))]


@shape_rule("ZeroGradient", domain=MS)
def zero_gradient(ctx):
    return [(ctx.elem(0), ctx.shape(0))]


@shape_rule("AdamWOptimizer", "SGDOptimizerV2", "AdamOptimizer", "SGDOptimizer", "LambOptimizer", domain=MS)
def optimizer(ctx):
    """The updated flag, then the parameters, and the moments, as sequences of the inputs' types."""
    flag = (DataType.BOOL, [1])
    return [flag] + [None] * (len(ctx.node.outputs) - 1)


@shape_rule("InplaceClipGradNorm", domain=MS)
def clip_grad_norm(ctx):
    return [None]
