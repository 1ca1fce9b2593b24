"""Reductions: axes as an attribute (before opset 13, 18 for all but ReduceSum) or an input; keepdims;
noop_with_empty_axes."""
from __future__ import annotations

from ._registry import Out, rule

MS = "com.microsoft"
REDUCE = ("ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceMax", "ReduceMean", "ReduceMin",
          "ReduceProd", "ReduceSum", "ReduceSumSquare")


def reduced(c, axes, elem=None) -> Out:
    dims = c.shape(0)
    keep = c.attr("keepdims", 1)
    if axes is None or axes == []:
        if c.attr("noop_with_empty_axes", 0) and axes == []:
            return Out(c.elem(0) if elem is None else elem, dims)
        axes = range(len(dims))
    axes = {c.axis(a, len(dims)) for a in axes}
    out = [1 if k in axes else d for k, d in enumerate(dims) if keep or k not in axes]
    return Out(c.elem(0) if elem is None else elem, out)


@rule(*REDUCE)
def reduce(c):
    if "axes" in c.node.attributes:
        return reduced(c, list(c.attr("axes")))
    if c.has(1):
        axes = c.ints(1)
        if axes is None:
            if c.attr("keepdims", 1):
                return Out(c.elem(0), [c.fresh() for _ in c.shape(0)])
            c.fail(f"the axes '{c.node.inputs[1]}' are not known before running the model, so neither is the rank")
        return reduced(c, axes)
    return reduced(c, [] if c.attr("noop_with_empty_axes", 0) else None)


@rule("ReduceSumTraining", domain=MS)
def reduce_sum_training(c):
    return reduce(c)
