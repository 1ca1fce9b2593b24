"""The bench's conv block and transformers (bench/bench_models.py: ``convblock`` and ``transformer`` with
onnxruntime-training's artifacts, ``transformer_ot`` with onnxtrain's) trained step by step on the wasm provider
against the numpy provider, with no node on the host, training step and optimizer.

With the numpy kernels on the executor's exp and log (helpers.use_executor_math), the conv block's losses and
parameters are numpy's bits after every step, and so are the transformers' gradients but one per block: the
gradient of the key projection's bias.  The numpy provider sums it (ReduceSum over [batch, seq]) from a view:
the gradient of Transpose perm [0, 2, 3, 1] is a transposed view, which Reshape keeps as a view with the sequence
axis innermost, so numpy adds each column pairwise along the sequence; the wasm provider's Transpose writes the
gradient contiguously and the same ReduceSum adds whole rows in order (numpy's own order for a contiguous input).
This gradient is zero in exact arithmetic (a bias shared by all keys shifts each row of scores by one value,
which softmax ignores), so both sums are rounding noise of the 512 terms: measured below 1e-9 in both, within
KEY_BIAS_ATOL of each other.  From there AdamW carries the difference into the parameters, as the exp and log of softmax cross-entropy do against stock numpy
(test_training_steps.py): losses within LOSS_RTOL and parameters within PARAM_ATOL after STEPS steps."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from helpers import assert_bits, use_executor_math
from onnxtrain import api

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
import bench_models  # noqa: E402

STEPS = 3
LOSS_RTOL = 1e-6
PARAM_ATOL = 1e-6
KEY_BIAS_ATOL = 1e-8
MODELS = ["convblock", "transformer", "transformer_ot"]
ORDERED_ELSEWHERE = {"layers.0.attn.k.bias", "layers.1.attn.k.bias"}   # summed from a view by numpy (above)


def trainer(key: str, device: str):
    files = bench_models.files(key)
    state = api.CheckpointState.load_checkpoint(str(files["checkpoint"]))
    module = api.Module(str(files["training"]), state, str(files["eval"]), device=device)
    return module, api.Optimizer(str(files["optimizer"]), module), state


def train(key: str, device: str):
    module, optimizer, state = trainer(key, device)
    losses, params, grads = [], [], []
    for step in range(STEPS):
        losses.append(np.asarray(module(*bench_models.batch(key, seed=step))).copy())
        grads.append({name: np.asarray(p.grad).copy() for name, p in state.parameters})
        optimizer.step()
        module.lazy_reset_grad()
        params.append(module.get_contiguous_parameters(True).copy())
    if device == "wasm":
        assert module._train.fallbacks == [] and optimizer._session.fallbacks == [], \
            (module._train.fallbacks, optimizer._session.fallbacks)
    return losses, params, grads


@pytest.fixture(scope="module", params=MODELS)
def model(request):
    return request.param


def test_steps_with_the_executor_math(model, monkeypatch):
    use_executor_math(monkeypatch)
    want_losses, want_params, want_grads = train(model, "numpy")
    losses, params, grads = train(model, "wasm")
    for name, want in want_grads[0].items():
        if name in ORDERED_ELSEWHERE:
            np.testing.assert_allclose(grads[0][name], want, rtol=0, atol=KEY_BIAS_ATOL, err_msg=name)
            assert np.abs(want).max() < KEY_BIAS_ATOL, (name, np.abs(want).max())
        else:
            assert_bits(grads[0][name], want, f"gradient of {name} in step 0")
    assert_bits(losses[0], want_losses[0], "loss of step 0")
    for step in range(STEPS):
        if model == "convblock":
            assert_bits(losses[step], want_losses[step], f"loss of step {step}")
            assert_bits(params[step], want_params[step], f"parameters after step {step}")
        np.testing.assert_allclose(losses[step], want_losses[step], rtol=LOSS_RTOL)
        np.testing.assert_allclose(params[step], want_params[step], rtol=0, atol=PARAM_ATOL)


def test_steps_match_numpy(model):
    want_losses, want_params, _ = train(model, "numpy")
    losses, params, _ = train(model, "wasm")
    for step in range(STEPS):
        np.testing.assert_allclose(losses[step], want_losses[step], rtol=LOSS_RTOL)
        np.testing.assert_allclose(params[step], want_params[step], rtol=0, atol=PARAM_ATOL)
