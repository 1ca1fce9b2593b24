"""Losses (softmax cross-entropy, negative log-likelihood, their com.microsoft forms and gradients) and the
training ops that update their buffers in place (InPlaceAccumulatorV2, AdamWOptimizer, SGDOptimizerV2,
InplaceClipGradNorm).

Scores are viewed as [N, C, D] (D the product of the dims after the classes) and their N * D rows as the
labels.  Every sum (a loss over its rows, the summed weights, a squared norm) is taken by a fixed tree in
workgroup memory, so two runs give the same bits.  The in-place ops list the live buffer among a dispatch's
outputs only and return the Tensors (and lists) they were given.
"""
from __future__ import annotations

import numpy as np

from ...ir.ort_names import MS_DOMAIN
from ..errors import NotLowered
from ..tensors import gtype
from ..registry import gpu_kernel
from .common import float_only, indexing_params

REDUCTIONS = {"none": 0, "sum": 1, "mean": 2}
SUM_WORKGROUPS = 64        # most workgroups taking partial sums of squares of one gradient
ELEMENTS_PER_THREAD = 16   # aimed at per invocation before another workgroup is added

_ONE = np.ones(1, np.float32)
_NO_INDEX = np.zeros(1, np.int32)
_NO_FLAG = np.zeros(1, np.bool_)


# -- losses ---------------------------------------------------------------------------------------

def _check_loss(op: str, scores, labels, weights, reduction: str) -> None:
    float_only(op, scores, weights)
    if reduction not in REDUCTIONS:
        raise NotLowered(f"{op}: reduction {reduction!r}")
    if gtype(labels) != "i32":
        raise NotLowered(f"{op}: labels of {labels.dtype.name}")
    if len(scores.shape) < 2 or labels.shape != scores.shape[:1] + scores.shape[2:]:
        raise NotLowered(f"{op}: labels {labels.describe()} do not match scores {scores.describe()}")
    if weights is not None and weights.shape != (scores.shape[1],):
        raise NotLowered(f"{op}: weights {weights.describe()} are not [C]")


def _layout(scores) -> tuple:
    """(rows, C, D) of scores [N, C, d1..dk]: rows = N * D, D = d1 * ... * dk."""
    n, c = scores.shape[0], scores.shape[1]
    d = int(np.prod(scores.shape[2:], dtype=np.int64))
    return n * d, c, d


def _ignore(k, op: str, ignore_index):
    """(the tensor bound for ignore_index, whether there is one) from an attribute (int) or an input."""
    if ignore_index is None:
        return k.known(_NO_INDEX), 0
    if isinstance(ignore_index, (int, np.integer)):
        return k.known(np.array([ignore_index], np.int32)), 1
    if ignore_index.size != 1 or gtype(ignore_index) != "i32":
        raise NotLowered(f"{op}: ignore_index {ignore_index.describe()} is not one integer")
    return ignore_index, 1


def _row_grid(rows: int) -> tuple:
    """One workgroup per row, spread over x and y."""
    from ..lowering import MAX_GROUPS
    ys = -(-rows // MAX_GROUPS)
    return (-(-rows // ys), ys, 1)


def _workgroup(classes: int) -> int:
    size = 32
    while size < classes and size < 256:
        size *= 2
    return size


def _loss(k, op: str, scores, labels, weights, ignore_index, reduction: str, softmax: bool):
    """(loss, log_prob or None): the rows' losses, reduced as asked."""
    _check_loss(op, scores, labels, weights, reduction)
    ignore, has_ignore = _ignore(k, op, ignore_index)
    rows, classes, inner = _layout(scores)
    if rows == 0 or classes == 0:
        raise NotLowered(f"{op}: empty scores {scores.describe()}")
    per_row = k.output(labels.shape)
    wrow = k.output((rows,))
    w = weights if weights is not None else k.known(_ONE)
    params = [rows, classes, inner, int(weights is not None), has_ignore]
    log_prob = None
    if softmax:
        write = k.used(1)
        log_prob = k.output(scores.shape) if write else k.output((1,))
        k.dispatch("loss_training_softmax_rows", [scores, labels, w, ignore], [log_prob, per_row, wrow], params,
                   _row_grid(rows), WG=_workgroup(classes), WRITE_LP="true" if write else "false")
        log_prob = log_prob if write else None
    else:
        k.dispatch("loss_training_nll_rows", [scores, labels, w, ignore], [per_row, wrow], params, rows)
    if reduction == "none":
        return per_row, log_prob
    loss = k.output(())
    mode = 1 if reduction == "sum" else 2 if softmax else 3
    k.dispatch("loss_training_reduce", [per_row, wrow], [loss], [rows, mode], (1, 1, 1))
    return loss, log_prob


def _check_output_type(op: str, output_type) -> None:
    if output_type not in (None, 1):
        raise NotLowered(f"{op}: output_type {output_type} (WebGPU computes float32)")


@gpu_kernel("SoftmaxCrossEntropyLoss")
def SoftmaxCrossEntropyLoss(k, scores, labels, weights=None, *, reduction="mean", ignore_index=None):
    return _loss(k, "SoftmaxCrossEntropyLoss", scores, labels, weights, ignore_index, reduction, True)


@gpu_kernel("SoftmaxCrossEntropyLossInternal", MS_DOMAIN)
def SoftmaxCrossEntropyLossInternal(k, scores, labels, weights=None, ignore_index=None, *, reduction="mean",
                                    output_type=None):
    op = "SoftmaxCrossEntropyLossInternal"
    _check_output_type(op, output_type)
    return _loss(k, op, scores, labels, weights, ignore_index, reduction, True)


@gpu_kernel("NegativeLogLikelihoodLoss")
def NegativeLogLikelihoodLoss(k, input, target, weight=None, *, reduction="mean", ignore_index=None):
    return _loss(k, "NegativeLogLikelihoodLoss", input, target, weight, ignore_index, reduction, False)[0]


@gpu_kernel("NegativeLogLikelihoodLossInternal", MS_DOMAIN)
def NegativeLogLikelihoodLossInternal(k, input, target, weight=None, ignore_index=None, *, reduction="mean"):
    return _loss(k, "NegativeLogLikelihoodLossInternal", input, target, weight, ignore_index, reduction, False)[0]


@gpu_kernel("NegativeLogLikelihoodLossInternal2", MS_DOMAIN)
def NegativeLogLikelihoodLossInternal2(k, input, target, weight=None, ignore_index=None, *, reduction="mean"):
    return _loss(k, "NegativeLogLikelihoodLossInternal2", input, target, weight, ignore_index, reduction, False)[0]


def _loss_grad(k, op: str, dY, log_prob, label, weight, ignore_index, bias, reduction: str):
    _check_loss(op, log_prob, label, weight, reduction)
    float_only(op, dY, bias)
    if (dY.shape != label.shape) if reduction == "none" else dY.size != 1:
        raise NotLowered(f"{op}: dY {dY.describe()} for the reduction {reduction!r}")
    if bias is not None and bias.size != log_prob.size:
        raise NotLowered(f"{op}: bias {bias.describe()} does not match log_prob {log_prob.describe()}")
    ignore, has_ignore = _ignore(k, op, ignore_index)
    rows, classes, inner = _layout(log_prob)
    w = weight if weight is not None else k.known(_ONE)
    denom = k.known(_ONE)
    if reduction == "mean":
        if weight is None and not has_ignore:
            denom = k.known(np.array([rows], np.float32))
        else:
            denom = k.output((1,))
            k.dispatch("loss_training_weight_sum", [label, w, ignore], [denom],
                       [rows, int(weight is not None), has_ignore], (1, 1, 1))
    grad = k.output(log_prob.shape)
    if grad.size:
        k.dispatch("loss_training_sce_grad", [dY, log_prob, label, w, ignore, denom,
                                              bias if bias is not None else k.known(_ONE)], [grad],
                   [grad.size, classes, inner, REDUCTIONS[reduction], int(weight is not None), has_ignore,
                    int(bias is not None)], grad.size)
    return grad


@gpu_kernel("SoftmaxCrossEntropyLossGrad", MS_DOMAIN)
def SoftmaxCrossEntropyLossGrad(k, dY, log_prob, label, weight=None, *, reduction="mean", ignore_index=None):
    return _loss_grad(k, "SoftmaxCrossEntropyLossGrad", dY, log_prob, label, weight, ignore_index, None, reduction)


@gpu_kernel("SoftmaxCrossEntropyLossInternalGrad", MS_DOMAIN)
def SoftmaxCrossEntropyLossInternalGrad(k, dY, log_prob, label, weight=None, ignore_index=None, bias=None, *,
                                        reduction="mean", output_type=None):
    op = "SoftmaxCrossEntropyLossInternalGrad"
    _check_output_type(op, output_type)
    return _loss_grad(k, op, dY, log_prob, label, weight, ignore_index, bias, reduction)


# -- training ops, in place -----------------------------------------------------------------------------

def _live(op: str, name: str, t) -> None:
    """``t`` must be a GPU buffer the op can write (not a value known before the run)."""
    if t.storage is None:
        raise NotLowered(f"{op}: {name} is a constant, which the GPU does not update in place")


def _distinct(op: str, reads, writes) -> None:
    """WebGPU cannot bind one buffer both read-only and writable in a dispatch."""
    written = {id(t.storage) for t in writes}
    if len(written) != len(writes) or any(t is not None and id(t.storage) in written for t in reads):
        raise NotLowered(f"{op}: a buffer it updates in place is also one of its other inputs")


def _flag_true(op: str, signal):
    """Whether an optional update_signal lets the op update: True when absent or known True."""
    if signal is None:
        return True
    if signal.value is None:
        raise NotLowered(f"{op}: update_signal is computed during the step")
    return bool(np.asarray(signal.value).reshape(-1)[0])


def _sequence(op: str, name: str, seq) -> list:
    if not isinstance(seq, list) or not seq:
        raise NotLowered(f"{op}: {name} is not a non-empty sequence of tensors")
    for i, t in enumerate(seq):
        if t.dtype != np.float32:
            raise NotLowered(f"{op}: {name}[{i}] is {t.dtype.name}, not float32")
    return seq


def _same_shapes(op: str, first: list, *others: list) -> None:
    for other in others:
        if len(other) != len(first) or any(a.shape != b.shape for a, b in zip(first, other)):
            raise NotLowered(f"{op}: its sequences differ in length or shapes")


@gpu_kernel("InPlaceAccumulatorV2", MS_DOMAIN)
def InPlaceAccumulatorV2(k, accumulation_buffer, value, overwrite_flag=None):
    op = "InPlaceAccumulatorV2"
    buf = accumulation_buffer
    float_only(op, buf, value)
    _live(op, "accumulation_buffer", buf)
    try:
        if np.broadcast_shapes(buf.shape, value.shape) != buf.shape:
            raise ValueError
    except ValueError:
        raise NotLowered(f"{op}: value {value.describe()} does not fit the buffer {buf.describe()}") from None
    if overwrite_flag is not None and (gtype(overwrite_flag) != "u32" or overwrite_flag.size < 1):
        raise NotLowered(f"{op}: overwrite_flag {overwrite_flag.describe()} is not a bool tensor")
    flag = overwrite_flag if overwrite_flag is not None else k.known(_NO_FLAG)
    _distinct(op, [value, flag], [buf])
    if buf.size:
        broadcast = int(value.shape != buf.shape)
        k.dispatch("loss_training_accumulate", [value, flag], [buf],
                   [buf.size, broadcast, int(overwrite_flag is not None), *indexing_params(buf.shape, value.shape)],
                   buf.size)
    return k.known(np.array([True])), buf


def _scalar(op: str, name: str, t, kind: str) -> None:
    if t.size != 1 or gtype(t) != kind:
        raise NotLowered(f"{op}: {name} {t.describe()} is not one {'float32' if kind == 'f32' else 'integer'}")


@gpu_kernel("AdamWOptimizer", MS_DOMAIN)
def AdamWOptimizer(k, lr, step, weights, gradients, momentums_1, momentums_2, update_signal=None, *, alpha=0.9,
                   beta=0.999, epsilon=1e-8, weight_decay=1e-2, correct_bias=1, adam_mode=0):
    op = "AdamWOptimizer"
    if adam_mode not in (0, 1) or (adam_mode == 0 and correct_bias != 1):
        raise NotLowered(f"{op}: adam_mode {adam_mode} with correct_bias {correct_bias}")
    _scalar(op, "lr", lr, "f32")
    _scalar(op, "step", step, "i32")
    seqs = [_sequence(op, n, s) for n, s in (("weights", weights), ("gradients", gradients),
                                             ("momentums_1", momentums_1), ("momentums_2", momentums_2))]
    _same_shapes(op, *seqs)
    if not _flag_true(op, update_signal):
        return k.known(np.full(step.shape, False)), weights, momentums_1, momentums_2
    for w, g, m, v in zip(*seqs):
        for name, t in (("weights", w), ("momentums_1", m), ("momentums_2", v)):
            _live(op, name, t)
        _distinct(op, [g, lr, step], [w, m, v])
    scalars = k.output((8,))
    k.dispatch("loss_training_adamw_scalars", [lr, step], [scalars],
               [float(alpha), float(beta), float(weight_decay), int(correct_bias == 1)], (1, 1, 1))
    for w, g, m, v in zip(*seqs):
        if w.size:
            k.dispatch("loss_training_adamw", [scalars, g], [w, m, v],
                       [w.size, float(alpha), float(beta), float(epsilon), float(weight_decay)], w.size,
                       MODE=adam_mode)
    return k.known(np.full(step.shape, True)), weights, momentums_1, momentums_2


@gpu_kernel("SGDOptimizerV2", MS_DOMAIN)
def SGDOptimizerV2(k, lr, weights, gradients, update_signal=None):
    op = "SGDOptimizerV2"
    _scalar(op, "lr", lr, "f32")
    seqs = [_sequence(op, "weights", weights), _sequence(op, "gradients", gradients)]
    _same_shapes(op, *seqs)
    if not _flag_true(op, update_signal):
        return k.known(np.full(lr.shape, False)), weights
    for w, g in zip(*seqs):
        _live(op, "weights", w)
        _distinct(op, [g, lr], [w])
    for w, g in zip(*seqs):
        if w.size:
            k.dispatch("loss_training_sgd", [lr, g], [w], [w.size], w.size)
    return k.known(np.full(lr.shape, True)), weights


def _sum_groups(n: int) -> int:
    return max(1, min(SUM_WORKGROUPS, -(-n // (256 * ELEMENTS_PER_THREAD))))


@gpu_kernel("InplaceClipGradNorm", MS_DOMAIN)
def InplaceClipGradNorm(k, gradients, *, max_norm=1.0, norm_type="fro"):
    op = "InplaceClipGradNorm"
    if norm_type != "fro":
        raise NotLowered(f"{op}: norm_type {norm_type!r}")
    grads = _sequence(op, "gradients", gradients)
    for g in grads:
        _live(op, "gradients", g)
    _distinct(op, [], grads)
    groups = [_sum_groups(g.size) for g in grads]
    partials = k.output((sum(groups),))
    at = 0
    for g, n in zip(grads, groups):
        k.dispatch("loss_training_sumsq", [g], [partials], [g.size, at, n], (n, 1, 1))
        at += n
    coef = k.output((1,))
    k.dispatch("loss_training_clip_coef", [partials], [coef], [at, float(max_norm)], (1, 1, 1))
    for g in grads:
        if g.size:
            k.dispatch("loss_training_scale", [coef], [g], [g.size], g.size)
    return gradients
