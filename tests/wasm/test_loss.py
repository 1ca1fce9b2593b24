"""Softmax cross-entropy and its gradient on the wasm provider.

The executor computes exp and log itself (mathlib.c: in double, rounded once to float32, so correctly rounded but
within ~1e-16 of a halfway point), where the numpy kernels call numpy's float32 exp and log (its own SIMD code:
measured within 2 ulp for exp and 3 ulp for log of the correctly rounded value, test_executor_c.py).  So:
- with the numpy kernels patched to the executor's exp and log, every output is numpy's bit for bit (the rest is
  numpy's order of operations: the maxima, pairwise sums, the weights and the mean);
- against stock numpy, losses and log-probabilities agree to within RTOL (a few ulp of exp and log carried
  through one subtraction: |log_prob| is at most ~20 here, so ~3 ulp of 20 is ~4e-6 absolute, hence ATOL), and
  the gradient, softmax minus one-hot over N, to within a few ulp of its largest entries (GRAD_ATOL * 1/N).
"""
from __future__ import annotations

import numpy as np
import pytest

from helpers import MS, assert_bits, lowered, node_model, run_both, use_executor_math

RNG = np.random.default_rng(3)
RTOL, ATOL = 1e-6, 5e-6
GRAD_ATOL = 5e-7

CASES = [  # reduction, ignore_index, weights
    ("mean", None, False), ("sum", None, False), ("none", None, False), ("mean", 2, False), ("sum", -100, False),
    ("mean", None, True), ("none", 1, True), ("mean", 0, True)]


def _inputs(rows=64, classes=10, ignore_index=None, weights=False, scale=3.0):
    scores = (RNG.standard_normal((rows, classes)) * scale).astype(np.float32)
    labels = RNG.integers(0, classes, rows).astype(np.int64)
    if ignore_index is not None:
        labels[::4] = ignore_index
    feeds = {"scores": scores, "labels": labels}
    if weights:
        feeds["weights"] = RNG.random(classes).astype(np.float32)
    return feeds


def _loss_model(feeds, reduction, ignore_index):
    attrs = {"reduction": reduction} | ({} if ignore_index is None else {"ignore_index": ignore_index})
    return node_model("SoftmaxCrossEntropyLoss", feeds, ["loss", "log_prob"], **attrs)


def _grad_model(feeds, reduction, ignore_index):
    attrs = {"reduction": reduction} | ({} if ignore_index is None else {"ignore_index": ignore_index})
    return node_model("SoftmaxCrossEntropyLossGrad", feeds, ["dx"], domain=MS, **attrs)


def _grad_feeds(feeds, reduction, log_prob):
    rows = feeds["scores"].shape[0]
    dy = RNG.standard_normal(rows if reduction == "none" else ()).astype(np.float32)
    out = {"dy": dy, "log_prob": log_prob, "labels": feeds["labels"]}
    if "weights" in feeds:
        out["weights"] = feeds["weights"]
    return out


@pytest.mark.parametrize("reduction,ignore_index,weights", CASES)
def test_bit_for_bit_with_the_executor_math(reduction, ignore_index, weights, monkeypatch):
    use_executor_math(monkeypatch)
    feeds = _inputs(ignore_index=ignore_index, weights=weights)
    want, got, session, _ = run_both(_loss_model(feeds, reduction, ignore_index), list(feeds.values()))
    lowered(session)
    assert_bits(got[0], want[0], "loss")
    assert_bits(got[1], want[1], "log_prob")
    grad_feeds = _grad_feeds(feeds, reduction, want[1])
    want, got, session, _ = run_both(_grad_model(grad_feeds, reduction, ignore_index), list(grad_feeds.values()))
    lowered(session)
    assert_bits(got[0], want[0], "gradient")


@pytest.mark.parametrize("reduction,ignore_index,weights", CASES)
def test_within_float32_tolerance_of_numpy(reduction, ignore_index, weights):
    feeds = _inputs(ignore_index=ignore_index, weights=weights)
    want, got, session, _ = run_both(_loss_model(feeds, reduction, ignore_index), list(feeds.values()))
    lowered(session)
    np.testing.assert_allclose(got[0], want[0], rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(got[1], want[1], rtol=RTOL, atol=ATOL)
    grad_feeds = _grad_feeds(feeds, reduction, want[1])
    want, got, session, _ = run_both(_grad_model(grad_feeds, reduction, ignore_index), list(grad_feeds.values()))
    lowered(session)
    rows = feeds["scores"].shape[0]
    scale = np.abs(grad_feeds["dy"]).max() * (1 if reduction == "none" else 1 / rows) * 4
    np.testing.assert_allclose(got[0], want[0], rtol=RTOL, atol=GRAD_ATOL * scale)


def test_all_ignored_keeps_the_zero_sum(monkeypatch):
    """"mean" over labels that are all ignore_index: the total weight is 0, and the loss is the (zero) sum."""
    use_executor_math(monkeypatch)
    feeds = _inputs(rows=8, ignore_index=5)
    feeds["labels"][:] = 5
    want, got, session, _ = run_both(_loss_model(feeds, "mean", 5), list(feeds.values()))
    lowered(session)
    assert_bits(got[0], want[0])


def test_bad_label_is_the_numpy_providers_error():
    from onnxtrain.runtime import RunError, Session
    from helpers import WASM
    feeds = _inputs(rows=8)
    feeds["labels"][5] = 12
    model = _loss_model(feeds, "mean", None)
    session = Session(model, WASM)
    with pytest.raises(RunError, match=r"SoftmaxCrossEntropyLoss node.*label 12 is outside \[0, 10\)") as got:
        session.run(list(feeds.values()))
    with pytest.raises(RunError) as want:
        Session(model).run(list(feeds.values()))
    assert str(got.value) == str(want.value)
    feeds["labels"][5] = 3
    assert np.isfinite(session.run(list(feeds.values()))[0])      # the session still runs


@pytest.mark.parametrize("weights", [False, True])
def test_internal_forms_with_ignore_index_as_an_input(weights, monkeypatch):
    """com.microsoft's SoftmaxCrossEntropyLossInternal and its gradient take ignore_index as an input tensor
    (a constant of the graph: known when compiling)."""
    use_executor_math(monkeypatch)
    feeds = _inputs(ignore_index=3, weights=weights)
    if not weights:
        feeds[""] = None                              # the omitted weights, before ignore_index
    ignore = {"ignore_index": np.array(3, np.int64)}
    model = node_model("SoftmaxCrossEntropyLossInternal", feeds, ["loss", "log_prob"], domain=MS,
                       initializers=ignore, reduction="mean")
    values = [v for v in feeds.values() if v is not None]
    want, got, session, _ = run_both(model, values)
    lowered(session)
    assert_bits(got[0], want[0], "loss")
    grad = {"dy": np.array(0.7, np.float32), "log_prob": want[1], "labels": feeds["labels"],
            **({"weights": feeds["weights"]} if weights else {"": None})}
    model = node_model("SoftmaxCrossEntropyLossInternalGrad", grad, ["dx"], domain=MS, initializers=ignore,
                       reduction="mean")
    want, got, session, _ = run_both(model, [v for v in grad.values() if v is not None])
    lowered(session)
    assert_bits(got[0], want[0], "gradient")
