"""Softmax cross-entropy and its gradient over float32 scores [N, C] with int64 labels: weights, ignore_index and
the three reductions as ops/loss.py computes them, in one executor op each (executor.c's softmax_ce).  The exp
and log are the executor's (mathlib.c), not numpy's: losses, log-probabilities and gradients agree with the numpy
provider to a few float32 ulp, not bit for bit; everything else is numpy's order of operations."""
from __future__ import annotations

import numpy as np

from ...ir.ort_names import MS_DOMAIN
from ...ops.simd import _IDENTITY, _ZERO
from ...runtime.program import NotLowered
from ..lowering import f32_only
from ..registry import wasm_kernel

REDUCTIONS = {"none": 0, "sum": 1, "mean": 2}
IDENTITY, ZERO = float(_IDENTITY.value), float(_ZERO.value)


def _params(k, op: str, scores, labels, weights, ignore_index, reduction: str) -> list:
    f32_only(op, scores, weights)
    if reduction not in REDUCTIONS:
        raise NotLowered(f"{op}: reduction {reduction!r}")
    if scores.rank != 2 or labels.shape != scores.shape[:1]:
        raise NotLowered(f"{op}: scores {scores.describe()} and labels {labels.describe()} (the C kernel takes "
                         f"[N, C] and [N])")
    if labels.dtype != np.int64:
        raise NotLowered(f"{op}: labels of {labels.dtype.name}")
    if weights is not None and weights.shape != (scores.shape[1],):
        raise NotLowered(f"{op}: weights {weights.describe()} are not [C]")
    if scores.size == 0:
        raise NotLowered(f"{op}: empty scores {scores.describe()}")
    if ignore_index is not None and not isinstance(ignore_index, (int, np.integer)):
        value = np.asarray(k.value(ignore_index, f"{op}'s ignore_index"))
        if value.size != 1 or value.dtype.kind not in "iu":
            raise NotLowered(f"{op}: ignore_index {ignore_index.describe()} is not one integer")
        ignore_index = int(value.reshape(()))
    has_ignore = ignore_index is not None
    ignore = int(ignore_index) if has_ignore else 0
    if not -2 ** 63 <= ignore < 2 ** 63:
        raise NotLowered(f"{op}: ignore_index {ignore}")
    lo, hi = ignore & 0xFFFFFFFF, (ignore >> 32) & 0xFFFFFFFF
    return [scores.shape[0], scores.shape[1], REDUCTIONS[reduction], int(has_ignore), _signed(lo), _signed(hi),
            IDENTITY, ZERO]


def _signed(u: int) -> int:
    return u - (1 << 32) if u >= 1 << 31 else u


def _loss(k, op: str, scores, labels, weights, ignore_index, reduction: str):
    params = _params(k, op, scores, labels, weights, ignore_index, reduction)
    rows, cols = scores.shape
    loss = k.output((rows,) if reduction == "none" else ())
    log_prob = k.output(scores.shape)
    work = k.output((2 * rows + cols,))
    k.call("softmax_ce", [scores, labels, weights], [loss, log_prob, work], params)
    return loss, log_prob


def _grad(k, op: str, dY, log_prob, label, weight, ignore_index, reduction: str):
    params = _params(k, op, log_prob, label, weight, ignore_index, reduction)
    f32_only(op, dY)
    if (dY.shape != label.shape) if reduction == "none" else dY.size != 1:
        raise NotLowered(f"{op}: dY {dY.describe()} for the reduction {reduction!r}")
    dx = k.output(log_prob.shape)
    work = k.output((log_prob.shape[0],))
    k.call("softmax_ce_grad", [dY, log_prob, label, weight], [dx, work], params)
    return dx


@wasm_kernel("SoftmaxCrossEntropyLoss")
def SoftmaxCrossEntropyLoss(k, scores, labels, weights=None, *, reduction="mean", ignore_index=None):
    return _loss(k, "SoftmaxCrossEntropyLoss", scores, labels, weights, ignore_index, reduction)


@wasm_kernel("SoftmaxCrossEntropyLossInternal", MS_DOMAIN)
def SoftmaxCrossEntropyLossInternal(k, scores, labels, weights=None, ignore_index=None, *, reduction="mean",
                                    output_type=None):
    if output_type not in (None, 1):
        raise NotLowered(f"SoftmaxCrossEntropyLossInternal: output_type {output_type}")
    return _loss(k, "SoftmaxCrossEntropyLossInternal", scores, labels, weights, ignore_index, reduction)


@wasm_kernel("SoftmaxCrossEntropyLossGrad", MS_DOMAIN)
def SoftmaxCrossEntropyLossGrad(k, dY, log_prob, label, weight=None, *, reduction="mean", ignore_index=None):
    return _grad(k, "SoftmaxCrossEntropyLossGrad", dY, log_prob, label, weight, ignore_index, reduction)


@wasm_kernel("SoftmaxCrossEntropyLossInternalGrad", MS_DOMAIN)
def SoftmaxCrossEntropyLossInternalGrad(k, dY, log_prob, label, weight=None, ignore_index=None, bias=None, *,
                                        reduction="mean", output_type=None):
    if bias is not None or output_type not in (None, 1):
        raise NotLowered("SoftmaxCrossEntropyLossInternalGrad with a bias or an output_type")
    return _grad(k, "SoftmaxCrossEntropyLossInternalGrad", dY, log_prob, label, weight, ignore_index, reduction)
