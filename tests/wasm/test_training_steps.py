"""onnxruntime-training's artifacts (tests/ort_cases.py: the MLP 784-128-10 and the CNN, softmax cross-entropy and
AdamW) trained step by step on the wasm provider against the numpy provider, with no node on the host.

With the numpy kernels on the executor's exp and log (helpers.use_executor_math) the losses and parameters after
every step are numpy's bits.  Against stock numpy, only softmax cross-entropy's exp and log differ (a few ulp,
test_loss.py), and AdamW carries that into the parameters: the losses agree to LOSS_RTOL and the parameters to
PARAM_ATOL after STEPS steps (measured: about 1e-7 and 1e-7; AdamW's step is lr * m / (sqrt(v) + eps), so a
relative gradient difference of ~1e-6 moves a parameter by ~1e-6 * lr = 1e-9 per step at most, plus a few ulp of
the parameters themselves)."""
from __future__ import annotations

import numpy as np
import pytest

import ort_cases
from helpers import WASM, assert_bits, use_executor_math
from onnxtrain import api
from onnxtrain.runtime import RunError
from onnxtrain.runtime.provider import NUMPY

STEPS = 5
LOSS_RTOL = 1e-6
PARAM_ATOL = 1e-6
CASES = ["mlp_full_ce_adamw", "cnn_full_ce_adamw"]


def trainer(name: str, wasm: bool):
    """(Module, Optimizer) over the case's artifacts, their sessions on the wasm provider when ``wasm``."""
    files = ort_cases.files(name)
    state = api.CheckpointState.load_checkpoint(files["checkpoint"])
    module = api.Module(files["training"], state, files["eval"], device="wasm" if wasm else "numpy")
    optimizer = api.Optimizer(files["optimizer"], module)
    assert module._train.provider is (WASM if wasm else NUMPY)
    return module, optimizer


def train(name: str, wasm: bool, batches: list):
    module, optimizer = trainer(name, wasm)
    losses, params = [], []
    for batch in batches:
        losses.append(np.asarray(module(*batch)).copy())
        optimizer.step()
        module.lazy_reset_grad()
        params.append(module.get_contiguous_parameters(True).copy())
    if wasm:
        assert module._train.fallbacks == [] and optimizer._session.fallbacks == [], \
            (module._train.fallbacks, optimizer._session.fallbacks)
    return losses, params


@pytest.mark.parametrize("name", CASES)
def test_steps_are_numpys_bits_with_the_executor_math(name, monkeypatch):
    use_executor_math(monkeypatch)
    batches = ort_cases.batches(name, STEPS)
    want_losses, want_params = train(name, False, batches)
    losses, params = train(name, True, batches)
    for step in range(STEPS):
        assert_bits(losses[step], want_losses[step], f"loss of step {step}")
        assert_bits(params[step], want_params[step], f"parameters after step {step}")


@pytest.mark.parametrize("name", CASES)
def test_steps_match_numpy(name):
    batches = ort_cases.batches(name, STEPS)
    want_losses, want_params = train(name, False, batches)
    losses, params = train(name, True, batches)
    for step in range(STEPS):
        np.testing.assert_allclose(losses[step], want_losses[step], rtol=LOSS_RTOL)
        np.testing.assert_allclose(params[step], want_params[step], rtol=0, atol=PARAM_ATOL)


@pytest.mark.parametrize("name,fused", [("mlp_full_ce_adamw", 2), ("cnn_full_ce_adamw", 1)])
def test_gradients_accumulated_over_steps_are_numpys_bits(name, fused, monkeypatch):
    """Two train steps between resets: the weight gradients' GEMMs, fused with their accumulators (wasm/fuse.py),
    overwrite the buffers on the first and add on the second, as the numpy provider does."""
    use_executor_math(monkeypatch)
    batches = ort_cases.batches(name, 4)
    runs = []
    for wasm in (False, True):
        module, optimizer = trainer(name, wasm)
        losses = []
        for first, second in (batches[:2], batches[2:]):
            losses += [np.asarray(module(*first)).copy(), np.asarray(module(*second)).copy()]
            optimizer.step()
            module.lazy_reset_grad()
        runs.append((losses, module.get_contiguous_parameters(True).copy(), _state(module)))
    (want_losses, want_params, want_state), (losses, params, state) = runs
    for got, want in zip(losses, want_losses):
        assert_bits(got, want, "loss")
    assert_bits(params, want_params, "parameters")
    for got, want in zip(state, want_state):
        assert_bits(got, want, "the state's arrays")
    runner = next(iter(module._train._programs.values()))
    ops = [c.op for kind, _, *calls in runner.segments if kind == "calls" for c in calls[0]]
    assert ops.count("gemm_accumulate") == fused and ops.count("accumulate") == 4 - fused


def _state(module) -> list:
    return [a.copy() for e in module._state._entries.values() for a in (e.data, e.grad) if a is not None]


@pytest.mark.parametrize("name", CASES)
def test_a_bad_label_names_the_node_and_leaves_the_state(name):
    module, optimizer = trainer(name, True)
    (x, labels), good = ort_cases.batches(name, 2)
    module(*good)
    optimizer.step()
    before = _state(module)
    labels = labels.copy()
    labels[3] = 10
    with pytest.raises(RunError, match=r"SoftmaxCrossEntropyLoss node .*label 10 is outside \[0, 10\)"):
        module(x, labels)
    for a, b in zip(_state(module), before):
        assert_bits(a, b, "the state after the failed step")
    loss = module(*good)                                # the session still runs
    assert np.isfinite(loss)
