"""The Trainer's proximal_mu (FedProx's proximal term as a proximal step after each optimizer step, an after-step
hook) against a hand-written numpy reference of SGD on a linear model with mean squared error."""
from __future__ import annotations

import numpy as np
import pytest

from onnxtrain import artifacts
from onnxtrain.api import CheckpointState, Module, Optimizer
from onnxtrain.tasks.tabular import mlp_model
from onnxtrain.train import Trainer
from onnxtrain.train.proximal import ProximalTerm
from onnxtrain.web.train_loop import TRAIN_OPTIONS

N, D, K = 10, 3, 2


@pytest.fixture(scope="module")
def arts() -> dict:
    forward = mlp_model(D, [], K, seed=3)  # one Gemm: output = features @ W.T + b
    return artifacts.generate_artifacts(forward, requires_grad=["fc1.weight", "fc1.bias"],
                                        loss=artifacts.LossType.MSELoss, optimizer=artifacts.OptimType.SGD)


def data():
    rng = np.random.default_rng(1)
    return rng.normal(size=(N, D)).astype(np.float32), rng.normal(size=(N, K)).astype(np.float32)


def trainer(arts, **options) -> Trainer:
    module = Module(arts["training_model.onnx"], CheckpointState.load_checkpoint(arts["checkpoint"]),
                    arts["eval_model.onnx"])
    return Trainer(module, Optimizer(arts["optimizer_model.onnx"], module), list(data()), **options)


def parameters(t: Trainer) -> tuple:
    p = t._trainable()
    return p["fc1.weight"].copy(), p["fc1.bias"].copy()


def reference(w, b, epochs, batch, rate, mu, seed, plain_epochs=0):
    """SGD on mean((x @ w.T + b - y)^2), then w <- w - rate * mu * (w - w_start) after every step of the epochs
    after the first ``plain_epochs`` (w_start: the parameters after those)."""
    x, y = (a.astype(np.float64) for a in data())
    w, b = w.astype(np.float64), b.astype(np.float64)
    rng = np.random.default_rng(seed)
    for epoch in range(epochs):
        if epoch == plain_epochs:
            w0, b0 = w.copy(), b.copy()
        prox = mu if epoch >= plain_epochs else 0.0
        order = rng.permutation(N)
        for i in range(0, N, batch):
            rows = order[i:i + batch]
            g = 2 * (x[rows] @ w.T + b - y[rows]) / g_size(len(rows))
            w, b = w - rate * g.T @ x[rows], b - rate * g.sum(0)
            if prox:
                w, b = w - rate * prox * (w - w0), b - rate * prox * (b - b0)
    return w, b


def g_size(rows: int) -> int:
    return rows * K


@pytest.mark.parametrize("mu", [0.0, 0.5, 3.0])
def test_proximal_step_matches_numpy(arts, mu):
    t = trainer(arts, epochs=3, batch_size=4, learning_rate=0.05, seed=7, proximal_mu=mu, keep_best=False)
    w0, b0 = parameters(t)
    t.run()
    w, b = parameters(t)
    rw, rb = reference(w0, b0, 3, 4, 0.05, mu, 7)
    np.testing.assert_allclose(w, rw, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(b, rb, rtol=1e-5, atol=1e-6)


def test_the_proximal_term_is_a_hook_a_caller_can_pass(arts):
    t = trainer(arts, epochs=3, batch_size=4, learning_rate=0.05, seed=7, keep_best=False,
                hooks=[ProximalTerm(0.5)])
    w0, b0 = parameters(t)
    t.run()
    rw, rb = reference(w0, b0, 3, 4, 0.05, 0.5, 7)
    w, b = parameters(t)
    np.testing.assert_allclose(w, rw, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(b, rb, rtol=1e-5, atol=1e-6)


def test_hooks_run_after_each_step_and_start_with_the_run(arts):
    class Seen:
        def __init__(self):
            self.events = []

        def start(self, t):
            self.events.append(("start", t.steps))

        def after_step(self, t):
            self.events.append(("step", t.steps))
    seen = Seen()
    t = trainer(arts, epochs=1, batch_size=4, hooks=[seen])
    t.run()
    assert seen.events == [("start", 0), ("step", 0), ("step", 1), ("step", 2)]
    t.load_checkpoint(t.checkpoint())
    assert seen.events[-1] == ("start", 3) and t.hooks == [seen]
    t.configure(proximal_mu=1.0)
    assert len(t.hooks) == 2 and isinstance(t.hooks[1], ProximalTerm)
    t.configure(proximal_mu=0.0)
    assert t.hooks == [seen]


def test_a_strong_proximal_term_keeps_the_parameters_near_the_start(arts):
    start = parameters(trainer(arts))
    moved = {}
    for mu in (0.0, 10.0):
        t = trainer(arts, epochs=5, batch_size=4, learning_rate=0.05, proximal_mu=mu)
        t.run()
        moved[mu] = sum(float(np.linalg.norm(a - s)) for a, s in zip(parameters(t), start))
    assert 0 < moved[10.0] < 0.5 * moved[0.0]


def test_setting_mu_anchors_at_the_parameters_of_that_moment(arts):
    t = trainer(arts, epochs=1, batch_size=4, learning_rate=0.05, seed=2)
    start = parameters(t)
    t.run()  # an epoch of plain SGD, then the proximal term anchored where it left the parameters
    t.configure(epochs=3, proximal_mu=2.0)
    t.run()
    w, b = parameters(t)
    rw, rb = reference(*start, 3, 4, 0.05, 2.0, 2, plain_epochs=1)
    np.testing.assert_allclose(w, rw, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(b, rb, rtol=1e-5, atol=1e-6)
    anchored_at_start = reference(*start, 3, 4, 0.05, 2.0, 2)
    assert not np.allclose(w, anchored_at_start[0], rtol=1e-3)


@pytest.mark.parametrize("bad", [-0.1, float("nan"), float("inf"), "0.1", True])
def test_a_bad_mu_is_refused_and_changes_nothing(arts, bad):
    t = trainer(arts, epochs=2, batch_size=4, learning_rate=0.05, proximal_mu=0.25)
    with pytest.raises(ValueError, match="proximal_mu must be a finite number >= 0"):
        t.configure(proximal_mu=bad, epochs=5)
    assert t.proximal_mu == 0.25 and t.epochs == 2


def test_the_library_option_is_proximalMu():
    assert TRAIN_OPTIONS["proximalMu"] == "proximal_mu"
