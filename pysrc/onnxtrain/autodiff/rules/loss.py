"""Gradient rules of the loss ops (ops/loss.py)."""
from __future__ import annotations

import numpy as np

from ...ir.ort_names import MS_DOMAIN
from ._emit import copy_attrs, reshape, shape_of, text, unsqueeze
from ._registry import rule


@rule("SoftmaxCrossEntropyLoss")
def _softmax_cross_entropy(c, x, y, dy):
    attrs = copy_attrs(c.node, "ignore_index", "reduction")
    inputs = [dy[0], c.extra_output(1, "log_prob")] + [v for v in x[1:] if v]
    return [c.op("SoftmaxCrossEntropyLossGrad", *inputs, domain=MS_DOMAIN, **attrs)]


@rule("NegativeLogLikelihoodLoss")
def _nll(c, x, y, dy):
    """d input = -w[target] / denominator * dY at the target class, 0 elsewhere (ignored targets: 0)."""
    n = c.node
    scores, target = x[0], x[1]
    rank = len(c.shape(scores))
    classes = c.op("Gather", shape_of(c, scores), c.ints([1], "axis1"))
    zero, one = c.const(np.array(0, np.int64), "zero"), c.const(np.array(1, np.int64), "one")
    class_ids = reshape(c, c.op("Range", zero, c.op("Squeeze", classes), one), [1, -1] + [1] * (rank - 2))
    hit = unsqueeze(c, target, [1]).eq(class_ids).cast(scores)
    ignore = c.const(np.array(n.attr("ignore_index", -(2 ** 62)), np.int64), "ignore")
    kept = c.op("Not", target.eq(ignore))
    weight = kept.cast(scores)
    if len(x) > 2 and x[2]:
        weight = weight * c.op("Gather", x[2], kept.where(target, zero))
    if text(n.attr("reduction", b"mean")) == "mean":
        weight = weight * (dy[0] / c.op("ReduceSum", weight, keepdims=0))
    else:
        weight = weight * dy[0]
    return [-(hit * unsqueeze(c, weight, [1]))]
