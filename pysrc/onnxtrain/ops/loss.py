"""Kernels: losses (softmax cross-entropy, negative log-likelihood) and their gradients.

Layout follows ONNX: scores and log-probabilities are [N, C] or [N, C, d1, ..., dk]
(classes on axis 1), labels are [N] or [N, d1, ..., dk].  The reductions and the
handling of weights and ignore_index follow onnxruntime's CPU kernels: "mean"
divides by the summed weights of the labels that are not ignored (their count
when there are no weights) and leaves the sum undivided when that total is 0.
"""
from __future__ import annotations

import math

import numpy as np

from ..ir.ort_names import MS_DOMAIN
from . import simd
from .nn import log_softmax
from .registry import kernel

REDUCTIONS = ("none", "sum", "mean")
# TensorProto data types an ``output_type`` attribute may name.
_OUTPUT_TYPES = {1: np.float32, 10: np.float16, 11: np.float64}


def _check_reduction(op: str, reduction: str, allowed=REDUCTIONS) -> None:
    if reduction not in allowed:
        raise ValueError(f"{op}: reduction must be one of {', '.join(allowed)}, got {reduction!r}")


def _check_class_layout(op: str, values: np.ndarray, labels: np.ndarray, weights) -> None:
    """``values`` is [N, C, d...] and ``labels`` is [N, d...]; weights, if any, is [C]."""
    if values.ndim < 2 or labels.shape != values.shape[:1] + values.shape[2:]:
        raise ValueError(f"{op}: labels of shape {labels.shape} do not match scores of shape {values.shape} "
                         f"(expected scores [N, C, d1..dk] and labels [N, d1..dk])")
    if labels.dtype.kind not in "iu":
        raise TypeError(f"{op}: labels must be int32 or int64, got {labels.dtype}")
    if weights is not None and weights.shape != (values.shape[1],):
        raise ValueError(f"{op}: weights of shape {weights.shape} must be 1-D of length C={values.shape[1]}")


def _scalar_index(op: str, ignore_index):
    """The ignore_index given as an optional int64 scalar input (Internal ops), as an int or None."""
    if ignore_index is None:
        return None
    if np.size(ignore_index) != 1:
        raise ValueError(f"{op}: ignore_index input must be a scalar, got shape {np.shape(ignore_index)}")
    return int(np.asarray(ignore_index).reshape(()))


def _label_weights(op: str, labels: np.ndarray, n_classes: int, weights, ignore_index, dtype):
    """(safe_labels, w): labels with ignored entries replaced by 0, and the per-label weight
    (weights[label], or 1) that is 0 where the label is ignored; w is None when every weight is 1."""
    ignored = labels == ignore_index if ignore_index is not None else None
    safe = (labels if ignored is None else np.where(ignored, 0, labels)).astype(np.intp, copy=False)
    # one reduction checks both ends: a negative label is a huge unsigned number
    if safe.size and int(np.maximum.reduce(safe.view(np.uintp), axis=None)) >= n_classes:
        bad = safe[(safe < 0) | (safe >= n_classes)].flat[0]
        raise ValueError(f"{op}: label {bad} is outside [0, {n_classes})"
                         + ("" if ignore_index is None else f" and is not ignore_index={ignore_index}"))
    if weights is None and ignored is None:
        return safe, None
    w = np.ones(labels.shape, dtype) if weights is None else weights[safe].astype(dtype, copy=False)
    return safe, w if ignored is None else np.where(ignored, dtype.type(0), w)


def _total_weight(w, labels, dtype):
    return dtype.type(labels.size) if w is None else w.sum(dtype=dtype)


def _flat_picks(safe: np.ndarray, n_classes: int) -> np.ndarray:
    """The flat indices of [n, safe[n]] in a C-contiguous [N, C] array (one flat index is several times faster than
    two)."""
    index = np.arange(0, safe.size * n_classes, n_classes or 1)
    index += safe
    return index


def _pick(log_prob: np.ndarray, safe: np.ndarray) -> np.ndarray:
    """log_prob[n, safe[n, d...], d...]"""
    if log_prob.ndim == 2:
        return log_prob.reshape(-1)[_flat_picks(safe, log_prob.shape[1])]
    return np.take_along_axis(log_prob, np.expand_dims(safe, 1), axis=1)[:, 0]


def _nll(op: str, log_prob, labels, weights, ignore_index, reduction, zero_total_keeps_sum=False):
    """Negative log-likelihood.  With "mean" and every label ignored (total weight 0), the
    softmax cross-entropy kernels return the (zero) sum, NegativeLogLikelihoodLoss 0/0 = NaN."""
    _check_reduction(op, reduction)
    _check_class_layout(op, log_prob, labels, weights)
    dtype = log_prob.dtype
    safe, w = _label_weights(op, labels, log_prob.shape[1], weights, ignore_index, dtype)
    loss = -_pick(log_prob, safe)
    if w is not None:
        loss *= w
    if reduction == "none":
        return loss
    total = np.add.reduce(loss, axis=None, dtype=dtype)
    if reduction == "mean":
        denom = _total_weight(w, labels, dtype)
        if 0 < abs(float(denom)) < math.inf:    # no warning can arise (Python floats: numpy scalars compare slowly)
            total = total / denom
        elif denom != 0 or not zero_total_keeps_sum:
            with np.errstate(invalid="ignore", divide="ignore"):
                total = total / denom
    return np.asarray(total, dtype)


def _softmax_ce(op, scores, labels, weights, ignore_index, reduction):
    if weights is None and ignore_index is None and reduction in ("mean", "sum"):
        fused = simd.softmax_ce(scores, labels, reduction == "mean")
        if fused is not None:
            return fused
    log_prob = log_softmax(scores, axis=1)
    return _nll(op, log_prob, labels, weights, ignore_index, reduction, zero_total_keeps_sum=True), log_prob


def _softmax_ce_grad(op, dY, log_prob, labels, weights, ignore_index, reduction):
    """d(loss)/d(scores): (softmax - onehot) * weight * dY, scaled as the reduction was."""
    _check_reduction(op, reduction)
    _check_class_layout(op, log_prob, labels, weights)
    dtype = log_prob.dtype
    dY = np.asarray(dY, dtype)
    if weights is None and ignore_index is None and reduction != "none" and dY.size == 1:
        fused = simd.softmax_ce_grad(float(dY.reshape(())), log_prob, labels, reduction == "mean")
        if fused is not None:
            return fused
    safe, w = _label_weights(op, labels, log_prob.shape[1], weights, ignore_index, dtype)
    if reduction == "none":
        if dY.shape != labels.shape:
            raise ValueError(f"{op}: dY of shape {dY.shape} must have the labels' shape {labels.shape} "
                             f"for reduction 'none'")
        scale = dY
    else:
        if dY.size != 1:
            raise ValueError(f"{op}: dY must be a scalar for reduction {reduction!r}, got shape {dY.shape}")
        scale = dY.reshape(())
        if reduction == "mean":
            denom = _total_weight(w, labels, dtype)
            if float(denom) != 0:
                scale = scale / denom
    grad = np.exp(log_prob, order="C")
    if log_prob.ndim == 2:
        flat, picks = grad.reshape(-1), _flat_picks(safe, log_prob.shape[1])
        flat[picks] = flat[picks] - dtype.type(1)
    else:
        grad -= np.arange(log_prob.shape[1]).reshape((1, -1) + (1,) * (labels.ndim - 1)) == np.expand_dims(safe, 1)
    if w is None and np.ndim(scale) == 0:
        grad *= scale
    else:
        grad *= np.expand_dims(scale if w is None else w * scale, 1)
    return grad


def _output_type(op: str, output_type):
    if output_type is None:
        return None
    if output_type not in _OUTPUT_TYPES:
        raise ValueError(f"{op}: output_type {output_type} is not one of float16 (10), float (1), double (11)")
    return np.dtype(_OUTPUT_TYPES[output_type])


def _compute_dtype(*dtypes) -> np.dtype:
    """The widest of the given float dtypes (onnxruntime computes in it and casts at the end)."""
    return max((np.dtype(d) for d in dtypes if d is not None), key=lambda d: d.itemsize)


# ---- ai.onnx --------------------------------------------------------------------------------------

@kernel("SoftmaxCrossEntropyLoss", since=12)
def SoftmaxCrossEntropyLoss(scores, labels, weights=None, *, reduction="mean", ignore_index=None):
    return _softmax_ce("SoftmaxCrossEntropyLoss", scores, labels, weights, ignore_index, reduction)


@kernel("NegativeLogLikelihoodLoss", since=12)
def NegativeLogLikelihoodLoss(input, target, weight=None, *, reduction="mean", ignore_index=None):
    return _nll("NegativeLogLikelihoodLoss", input, target, weight, ignore_index, reduction)


# ---- com.microsoft --------------------------------------------------------------------------------

@kernel("SoftmaxCrossEntropyLossGrad", MS_DOMAIN)
def SoftmaxCrossEntropyLossGrad(dY, log_prob, label, weight=None, *, reduction="mean", ignore_index=None):
    return _softmax_ce_grad("SoftmaxCrossEntropyLossGrad", dY, log_prob, label, weight, ignore_index, reduction)


@kernel("SoftmaxCrossEntropyLossInternal", MS_DOMAIN)
def SoftmaxCrossEntropyLossInternal(scores, labels, weights=None, ignore_index=None, *,
                                    reduction="mean", output_type=None):
    op = "SoftmaxCrossEntropyLossInternal"
    out = _output_type(op, output_type) or scores.dtype
    work = _compute_dtype(scores.dtype, out)
    loss, log_prob = _softmax_ce(op, scores.astype(work, copy=False), labels,
                                 None if weights is None else weights.astype(work, copy=False),
                                 _scalar_index(op, ignore_index), reduction)
    return loss.astype(out, copy=False), log_prob.astype(out, copy=False)


@kernel("SoftmaxCrossEntropyLossInternalGrad", MS_DOMAIN)
def SoftmaxCrossEntropyLossInternalGrad(dY, log_prob, label, weight=None, ignore_index=None, bias=None, *,
                                        reduction="mean", output_type=None):
    op = "SoftmaxCrossEntropyLossInternalGrad"
    out = _output_type(op, output_type) or log_prob.dtype
    work = _compute_dtype(log_prob.dtype, out)
    grad = _softmax_ce_grad(op, dY.astype(work, copy=False), log_prob.astype(work, copy=False), label,
                            None if weight is None else weight.astype(work, copy=False),
                            _scalar_index(op, ignore_index), reduction)
    if bias is not None:
        if bias.size != grad.size:
            raise ValueError(f"{op}: bias of shape {bias.shape} does not match the gradient's shape {grad.shape}")
        grad += bias.reshape(grad.shape).astype(work, copy=False)
    return grad.astype(out, copy=False)


@kernel("NegativeLogLikelihoodLossInternal", MS_DOMAIN)
def NegativeLogLikelihoodLossInternal(input, target, weight=None, ignore_index=None, *, reduction="mean"):
    op = "NegativeLogLikelihoodLossInternal"
    return _nll(op, input, target, weight, _scalar_index(op, ignore_index), reduction)


@kernel("NegativeLogLikelihoodLossInternal2", MS_DOMAIN)
def NegativeLogLikelihoodLossInternal2(input, target, weight=None, ignore_index=None, *, reduction="mean"):
    op = "NegativeLogLikelihoodLossInternal2"
    return _nll(op, input, target, weight, _scalar_index(op, ignore_index), reduction)


# Legacy contrib losses: classes on the LAST axis; onnxruntime implements only mean and sum.

def _check_legacy(op: str, reduction: str) -> None:
    _check_reduction(op, reduction, ("sum", "mean"))


@kernel("SoftmaxCrossEntropy", MS_DOMAIN)
def SoftmaxCrossEntropy(logits, label, *, reduction="mean"):
    """``label`` holds a probability distribution over the classes, shaped like ``logits``."""
    op = "SoftmaxCrossEntropy"
    _check_legacy(op, reduction)
    if label.shape != logits.shape:
        raise ValueError(f"{op}: label of shape {label.shape} must have the logits' shape {logits.shape}")
    log_prob = log_softmax(logits, axis=-1)
    loss = -(label * log_prob).sum(dtype=logits.dtype)
    if reduction == "mean":
        loss = loss / (logits.size // logits.shape[-1])
    return np.asarray(loss, logits.dtype), log_prob


@kernel("SoftmaxCrossEntropyGrad", MS_DOMAIN)
def SoftmaxCrossEntropyGrad(dY, log_prob, label, *, reduction="mean"):
    op = "SoftmaxCrossEntropyGrad"
    _check_legacy(op, reduction)
    if label.shape != log_prob.shape:
        raise ValueError(f"{op}: label of shape {label.shape} must have log_prob's shape {log_prob.shape}")
    scale = np.asarray(dY, log_prob.dtype).reshape(())
    if reduction == "mean":
        scale = scale / (log_prob.size // log_prob.shape[-1])
    return (np.exp(log_prob) - label) * scale


def _sparse_layout(op: str, values, label, weight):
    if values.ndim != label.ndim + 1 or values.shape[:-1] != label.shape:
        raise ValueError(f"{op}: label of shape {label.shape} does not match logits of shape {values.shape} "
                         f"(expected logits [..., C] and label [...])")
    if weight is not None and weight.shape != label.shape:
        raise ValueError(f"{op}: weight of shape {weight.shape} must have the label's shape {label.shape}")


@kernel("SparseSoftmaxCrossEntropy", since=9)
def SparseSoftmaxCrossEntropy(logits, label, weight=None, *, reduction="mean"):
    """Classes on the last axis; ``weight`` is per sample (shaped like ``label``)."""
    op = "SparseSoftmaxCrossEntropy"
    _check_legacy(op, reduction)
    _sparse_layout(op, logits, label, weight)
    log_prob = log_softmax(logits, axis=-1)
    safe, _ = _label_weights(op, label, logits.shape[-1], None, None, logits.dtype)
    loss = -np.take_along_axis(log_prob, safe[..., None], axis=-1)[..., 0]
    if weight is not None:
        loss = loss * weight
    total = loss.sum(dtype=logits.dtype)
    if reduction == "mean":
        total = total / (weight.sum(dtype=logits.dtype) if weight is not None else label.size)
    return np.asarray(total, logits.dtype), log_prob


@kernel("SparseSoftmaxCrossEntropyGrad", since=9)
def SparseSoftmaxCrossEntropyGrad(dY, log_prob, label, weight=None, *, reduction="mean"):
    op = "SparseSoftmaxCrossEntropyGrad"
    _check_legacy(op, reduction)
    _sparse_layout(op, log_prob, label, weight)
    scale = np.asarray(dY, log_prob.dtype).reshape(())
    if reduction == "mean":
        scale = scale / (weight.sum(dtype=log_prob.dtype) if weight is not None else label.size)
    grad = np.exp(log_prob)
    grad -= np.arange(log_prob.shape[-1]) == label[..., None]
    grad *= (scale if weight is None else weight * scale)[..., None]
    return grad
