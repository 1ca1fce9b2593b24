"""ORT's training ops: gradient accumulation, the optimizers (over sequences of tensors), clipping, and
ai.onnx.preview.training's optimizers."""
from __future__ import annotations

from ._context import BOOL
from ._registry import Out, rule

MS = "com.microsoft"
PREVIEW = "ai.onnx.preview.training"


def _flag() -> Out:
    return Out(BOOL, [1])


@rule("InPlaceAccumulatorV2", domain=MS)
def in_place_accumulator_v2(c):
    return [_flag(), Out(c.elem(0), c.broadcast([0, 1]))]


@rule("InPlaceAccumulator", domain=MS)
def in_place_accumulator(c):
    return Out(c.elem(0), c.broadcast([0, 1]))


def _same_type(c, i: int) -> Out:
    s = c.state(i)
    if s.type is not None:
        return Out(None, None, type=s.type)
    return c.like(i)


@rule("AdamWOptimizer", domain=MS)
def adamw(c):
    return [_flag(), _same_type(c, 2), _same_type(c, 4), _same_type(c, 5)]


@rule("SGDOptimizerV2", domain=MS)
def sgd(c):
    return [_flag(), _same_type(c, 1)]


@rule("InplaceClipGradNorm", domain=MS)
def clip_grad_norm(c):
    return _same_type(c, 0)


@rule("Group", domain=MS)
def group(c):
    return _flag()


def _preview(c, per: int):
    """Inputs R, T, then ``per`` groups of n tensors (X, G and the states); outputs the updated ones."""
    n = (c.n_inputs - 2) // per
    outs = []
    groups = [range(2 + n * g, 2 + n * (g + 1)) for g in range(per)]
    keep = [groups[0]] + list(groups[2:])
    for g in keep:
        outs += [c.like(i) for i in g]
    return outs


@rule("Adagrad", "Momentum", domain=PREVIEW)
def adagrad(c):
    return _preview(c, 3)


@rule("Adam", domain=PREVIEW)
def adam(c):
    return _preview(c, 4)

