"""Loss kernels against onnxruntime, one node at a time."""
import itertools

import numpy as np
import pytest

from opref import assert_same, ort_run, ours_run

pytestmark = pytest.mark.usefixtures("kernels")   # numpy's kernels and the native ones (softmax cross-entropy)
MS = "com.microsoft"

SHAPES = {"N6C4": (6, 4), "N3C5d2": (3, 5, 2), "N2C3d2x3": (2, 3, 2, 3)}
DTYPES = {"f32": np.float32, "f64": np.float64}
LABEL_DTYPES = {"i64": np.int64, "i32": np.int32}
IGNORES = {"noign": None, "ign1": 1, "ign-100": -100}
REDUCTIONS = ("none", "sum", "mean")


def tol(dtype):
    return dict(rtol=1e-5, atol=1e-6) if dtype == np.float32 else dict(rtol=1e-12, atol=1e-12)


def make_case(shape, dtype, label_dtype, weighted, ignore, seed=0):
    """(scores, labels, weights or None); about a third of the labels equal ``ignore``."""
    rng = np.random.default_rng(seed)
    scores = (rng.standard_normal(shape) * 3).astype(dtype)
    n_classes = shape[1]
    labels = rng.integers(0, n_classes, (shape[0],) + shape[2:]).astype(label_dtype)
    if ignore is not None:
        labels.flat[::3] = ignore
    weights = rng.uniform(0.2, 2.0, n_classes).astype(dtype) if weighted else None
    return scores, labels, weights


def log_softmax(x):
    x = x.astype(np.float64)
    s = x - x.max(axis=1, keepdims=True)
    return s - np.log(np.exp(s).sum(axis=1, keepdims=True))


def attrs_of(reduction, ignore):
    attrs = {"reduction": reduction}
    if ignore is not None:
        attrs["ignore_index"] = ignore
    return attrs


FORWARD = [
    pytest.param(shape, dt, lt, red, w, ign, id=f"{sk}-{dk}-{lk}-{red}-{'w' if w else 'now'}-{ik}")
    for (sk, shape), (dk, dt), (lk, lt), red, w, (ik, ign) in itertools.product(
        SHAPES.items(), DTYPES.items(), LABEL_DTYPES.items(), REDUCTIONS, (False, True), IGNORES.items())
]


@pytest.mark.parametrize("shape,dtype,label_dtype,reduction,weighted,ignore", FORWARD)
def test_softmax_cross_entropy_loss(shape, dtype, label_dtype, reduction, weighted, ignore):
    scores, labels, weights = make_case(shape, dtype, label_dtype, weighted, ignore)
    assert_same("SoftmaxCrossEntropyLoss", [scores, labels, weights], attrs_of(reduction, ignore),
                opset=13, n_outputs=2, **tol(dtype))


@pytest.mark.parametrize("shape,dtype,label_dtype,reduction,weighted,ignore", FORWARD)
def test_negative_log_likelihood_loss(shape, dtype, label_dtype, reduction, weighted, ignore):
    scores, labels, weights = make_case(shape, dtype, label_dtype, weighted, ignore)
    log_prob = log_softmax(scores).astype(dtype)
    assert_same("NegativeLogLikelihoodLoss", [log_prob, labels, weights], attrs_of(reduction, ignore),
                opset=13, **tol(dtype))


@pytest.mark.parametrize("op,n_outputs", [("SoftmaxCrossEntropyLoss", 1), ("SoftmaxCrossEntropyLoss", 2),
                                          ("NegativeLogLikelihoodLoss", 1)], ids=lambda v: str(v))
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_opset12(op, n_outputs, reduction):
    scores, labels, weights = make_case((5, 3), np.float32, np.int64, True, 2)
    inputs = [scores if op == "SoftmaxCrossEntropyLoss" else log_softmax(scores).astype(np.float32),
              labels, weights]
    assert_same(op, inputs, attrs_of(reduction, 2), opset=12, n_outputs=n_outputs)


@pytest.mark.parametrize("weighted", [False, True], ids=["now", "w"])
def test_mean_with_every_label_ignored(weighted):
    """onnxruntime's float softmax cross-entropy kernel returns the zero sum; NLL gives 0/0 = NaN."""
    scores, labels, weights = make_case((4, 3), np.float32, np.int64, weighted, None)
    labels[:] = 1
    attrs = attrs_of("mean", 1)
    ref = ort_run("SoftmaxCrossEntropyLoss", [scores, labels, weights], attrs, opset=13)
    got = ours_run("SoftmaxCrossEntropyLoss", [scores, labels, weights], attrs, opset=13)
    assert ref[0] == 0 and got[0] == 0 and got[0].dtype == np.float32
    log_prob = log_softmax(scores).astype(np.float32)
    for dtype in (np.float32, np.float64):
        w = None if weights is None else weights.astype(dtype)
        ref = ort_run("NegativeLogLikelihoodLoss", [log_prob.astype(dtype), labels, w], attrs, opset=13)
        got = ours_run("NegativeLogLikelihoodLoss", [log_prob.astype(dtype), labels, w], attrs, opset=13)
        assert np.isnan(ref[0]) and np.isnan(got[0]) and got[0].dtype == dtype


def grad_inputs(shape, dtype, label_dtype, reduction, weighted, ignore, seed=1):
    scores, labels, weights = make_case(shape, dtype, label_dtype, weighted, ignore, seed)
    rng = np.random.default_rng(seed + 1)
    dY = rng.uniform(0.5, 2.0, labels.shape if reduction == "none" else ()).astype(dtype)
    return dY, log_softmax(scores).astype(dtype), labels, weights


@pytest.mark.parametrize("shape,dtype,label_dtype,reduction,weighted,ignore", FORWARD)
def test_softmax_cross_entropy_loss_grad(shape, dtype, label_dtype, reduction, weighted, ignore):
    dY, log_prob, labels, weights = grad_inputs(shape, dtype, label_dtype, reduction, weighted, ignore)
    assert_same("SoftmaxCrossEntropyLossGrad", [dY, log_prob, labels, weights], attrs_of(reduction, ignore),
                domain=MS, **tol(dtype))


def test_softmax_cross_entropy_loss_grad_default_reduction_is_mean():
    dY, log_prob, labels, weights = grad_inputs((5, 4), np.float32, np.int64, "mean", True, None)
    assert_same("SoftmaxCrossEntropyLossGrad", [dY, log_prob, labels, weights], domain=MS)


INTERNAL = [
    pytest.param(shape, red, w, ign, id=f"{sk}-{red}-{'w' if w else 'now'}-{ik}")
    for (sk, shape), red, w, (ik, ign) in itertools.product(
        SHAPES.items(), REDUCTIONS, (False, True), IGNORES.items())
]


def ignore_input(ignore):
    return None if ignore is None else np.array(ignore, np.int64)


@pytest.mark.parametrize("shape,reduction,weighted,ignore", INTERNAL)
def test_softmax_cross_entropy_loss_internal(shape, reduction, weighted, ignore):
    scores, labels, weights = make_case(shape, np.float32, np.int64, weighted, ignore)
    assert_same("SoftmaxCrossEntropyLossInternal", [scores, labels, weights, ignore_input(ignore)],
                {"reduction": reduction}, domain=MS, n_outputs=2)


@pytest.mark.parametrize("shape,reduction,weighted,ignore", INTERNAL)
def test_softmax_cross_entropy_loss_internal_grad(shape, reduction, weighted, ignore):
    dY, log_prob, labels, weights = grad_inputs(shape, np.float32, np.int64, reduction, weighted, ignore)
    bias = np.random.default_rng(5).standard_normal(log_prob.shape).astype(np.float32)
    for b in (None, bias):
        assert_same("SoftmaxCrossEntropyLossInternalGrad",
                    [dY, log_prob, labels, weights, ignore_input(ignore), b], {"reduction": reduction}, domain=MS)


@pytest.mark.parametrize("in_dtype,output_type,rtol", [
    (np.float32, 1, 1e-5), (np.float32, 10, 1e-3), (np.float16, 1, 1e-5), (np.float16, None, 1e-3),
    (np.float64, None, 1e-12)], ids=["f32->f32", "f32->f16", "f16->f32", "f16", "f64"])
def test_internal_output_type(in_dtype, output_type, rtol):
    scores, labels, weights = make_case((6, 4), np.float32, np.int64, True, 1)
    attrs = {} if output_type is None else {"output_type": output_type}
    inputs = [scores.astype(in_dtype), labels, weights.astype(in_dtype), np.array(1, np.int64)]
    assert_same("SoftmaxCrossEntropyLossInternal", inputs, attrs, domain=MS, n_outputs=2, rtol=rtol, atol=rtol)
    dY, log_prob, labels, weights = grad_inputs((6, 4), np.float32, np.int64, "mean", True, 1)
    inputs = [dY.astype(in_dtype), log_prob.astype(in_dtype), labels, weights.astype(in_dtype),
              np.array(1, np.int64)]
    assert_same("SoftmaxCrossEntropyLossInternalGrad", inputs, attrs, domain=MS, rtol=rtol, atol=rtol)


@pytest.mark.parametrize("op", ["NegativeLogLikelihoodLossInternal2"])
@pytest.mark.parametrize("shape,reduction,weighted,ignore", INTERNAL)
def test_negative_log_likelihood_loss_internal(op, shape, reduction, weighted, ignore):
    scores, labels, weights = make_case(shape, np.float32, np.int64, weighted, ignore)
    log_prob = log_softmax(scores).astype(np.float32)
    assert_same(op, [log_prob, labels, weights, ignore_input(ignore)], {"reduction": reduction}, domain=MS)


@pytest.mark.parametrize("shape,reduction,weighted,ignore", INTERNAL)
def test_negative_log_likelihood_loss_internal_v1(shape, reduction, weighted, ignore):
    """onnxruntime runs the first version as a function whose body is valid only below opset 13."""
    scores, labels, weights = make_case(shape, np.float32, np.int64, weighted, ignore)
    log_prob = log_softmax(scores).astype(np.float32)
    assert_same("NegativeLogLikelihoodLossInternal", [log_prob, labels, weights, ignore_input(ignore)],
                {"reduction": reduction}, domain=MS, opset=12)


# ---- legacy contrib losses (classes on the last axis) --------------------------------------------

LEGACY_SHAPES = {"N5C4": (5, 4), "N2x3C4": (2, 3, 4)}


@pytest.mark.parametrize("reduction", ["sum", "mean"])
@pytest.mark.parametrize("shape", LEGACY_SHAPES.values(), ids=LEGACY_SHAPES.keys())
def test_softmax_cross_entropy_legacy(shape, reduction):
    rng = np.random.default_rng(3)
    logits = rng.standard_normal(shape).astype(np.float32)
    label = rng.dirichlet(np.ones(shape[-1]), shape[:-1]).astype(np.float32)
    attrs = {"reduction": reduction}
    assert_same("SoftmaxCrossEntropy", [logits, label], attrs, domain=MS, n_outputs=2)
    dY = np.array(1.5, np.float32)
    log_prob = np.log(np.exp(logits) / np.exp(logits).sum(-1, keepdims=True)).astype(np.float32)
    assert_same("SoftmaxCrossEntropyGrad", [dY, log_prob, label], attrs, domain=MS)


@pytest.mark.parametrize("weighted", [False, True], ids=["now", "w"])
@pytest.mark.parametrize("reduction", ["sum", "mean"])
@pytest.mark.parametrize("shape", LEGACY_SHAPES.values(), ids=LEGACY_SHAPES.keys())
def test_sparse_softmax_cross_entropy(shape, reduction, weighted):
    rng = np.random.default_rng(4)
    logits = rng.standard_normal(shape).astype(np.float32)
    label = rng.integers(0, shape[-1], shape[:-1]).astype(np.int64)
    weight = rng.uniform(0.5, 2, shape[:-1]).astype(np.float32) if weighted else None
    attrs = {"reduction": reduction}
    # onnxruntime's kernel counts the node's inputs: an omitted weight must be left out, not named "".
    extra = [weight] if weighted else []
    assert_same("SparseSoftmaxCrossEntropy", [logits, label] + extra, attrs, opset=12, n_outputs=2)
    log_prob = ours_run("SparseSoftmaxCrossEntropy", [logits, label] + extra, attrs, opset=12, n_outputs=2)[1]
    assert_same("SparseSoftmaxCrossEntropyGrad", [np.array(0.7, np.float32), log_prob, label] + extra, attrs,
                opset=12)


# ---- errors --------------------------------------------------------------------------------------

def test_label_out_of_range_is_named():
    scores, labels, _ = make_case((4, 3), np.float32, np.int64, False, None)
    labels[2] = 7
    with pytest.raises(ValueError, match=r"SoftmaxCrossEntropyLoss: label 7 is outside \[0, 3\)"):
        ours_run("SoftmaxCrossEntropyLoss", [scores, labels, None], {}, opset=13)


def test_shape_mismatch_is_named():
    scores = np.zeros((4, 3), np.float32)
    with pytest.raises(ValueError, match=r"SoftmaxCrossEntropyLossGrad: labels of shape \(5,\)"):
        ours_run("SoftmaxCrossEntropyLossGrad", [np.float32(1), scores, np.zeros(5, np.int64)], domain=MS)


def test_bad_reduction_is_named():
    with pytest.raises(ValueError, match="NegativeLogLikelihoodLoss: reduction must be one of"):
        ours_run("NegativeLogLikelihoodLoss", [np.zeros((2, 3), np.float32), np.zeros(2, np.int64)],
                 {"reduction": "avg"}, opset=13)
