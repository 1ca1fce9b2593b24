"""Losses: SoftmaxCrossEntropyLoss and NegativeLogLikelihoodLoss, ORT's internal forms and gradients.  The
labels' dims are the scores' batch and spatial dims (a labels symbol and the scores' one become one symbol);
a class weight pins the class axis."""
from __future__ import annotations

from ._registry import Out, rule

MS = "com.microsoft"


def _tie(c, scores: int = 0, labels: int = 1, weight: int = 2) -> list:
    s, t = c.shape(scores), c.shape(labels)
    if len(s) < 2 or len(t) != len(s) - 1:
        c.fail(f"the scores must be [N, C, d...] and the labels [N, d...], got ranks {len(s)} and {len(t)}")
    for k in range(len(t)):
        c.same(scores, 0 if k == 0 else k + 1, labels, k)
    if c.has(weight):
        c.same(weight, 0, scores, 1)
    return c.shape(scores)


def _loss(c, s: list, reduction_default: str = "mean") -> Out:
    reduction = c.attr("reduction", reduction_default)
    return Out(c.elem(0), s[:1] + s[2:] if reduction == "none" else [])


@rule("SoftmaxCrossEntropyLoss")
def softmax_cross_entropy_loss(c):
    s = _tie(c)
    return [_loss(c, s), Out(c.elem(0), s)]


@rule("SoftmaxCrossEntropyLossInternal", domain=MS)
def softmax_cross_entropy_loss_internal(c):
    return softmax_cross_entropy_loss(c)


@rule("NegativeLogLikelihoodLoss")
def nll_loss(c):
    return _loss(c, _tie(c))


@rule("NegativeLogLikelihoodLossInternal", "NegativeLogLikelihoodLossInternal2", domain=MS)
def nll_loss_internal(c):
    return nll_loss(c)


@rule("SoftmaxCrossEntropy", domain=MS)
def softmax_cross_entropy(c):
    c.same(0, 0, 1, 0)
    return [Out(c.elem(0), []), c.like(0)]


@rule("SparseSoftmaxCrossEntropy", domain=MS)
def sparse_softmax_cross_entropy(c):
    s = _tie(c)
    return [_loss(c, s), Out(c.elem(0), s)]


@rule("SoftmaxCrossEntropyLossGrad", "SoftmaxCrossEntropyLossInternalGrad", "SoftmaxCrossEntropyGrad",
      "SparseSoftmaxCrossEntropyGrad", domain=MS)
def loss_grad(c):
    return Out(c.elem(1), c.shape(1))
