"""The best epoch by validation loss, early stopping, and their place in a run's checkpoints."""
import json

import numpy as np
import pytest

import ort_cases as oc
from onnxtrain import api
from onnxtrain.checkpoint import read_checkpoint
from onnxtrain.train import NonFiniteStateError
from onnxtrain.train.best import PROPERTY
from web.test_web_bridge import run

# ---- in a task's Run, its epochs ended by the caller ----------------------------------------------------------

def session():
    return run(evaluate_epochs=False)


def overfitting_data():
    """A rule the model can learn, but only 40 training rows, 30% of them with a wrong label: validation improves,
    then gets worse as the model learns the noise."""
    rng = np.random.default_rng(0)
    w = rng.standard_normal((20, 5)).astype(np.float32)
    x = rng.standard_normal((40, 20)).astype(np.float32)
    y = np.argmax(x @ w, 1)
    noisy = rng.random(40) < 0.3
    y[noisy] = rng.integers(0, 5, noisy.sum())
    xv = rng.standard_normal((200, 20)).astype(np.float32)
    return [x, y], [xv, np.argmax(xv @ w, 1)]


def train_epoch(s):
    while not s.step(4, 0.01)["epoch_done"]:
        pass
    return s.trainer.end_epoch(s.validation_loss())["best"]


def trainable(s):
    return {n: p.data.copy() for n, p in s.state.parameters if p.requires_grad}


def test_an_overfitting_run_stops_early_and_gives_back_its_best_epoch():
    s = session()
    s.trainer.set_data(*overfitting_data())
    s.trainer.best.configure(keep_best=True, patience=5)
    losses, params, results = {}, {}, []
    while True:
        results.append(train_epoch(s))
        losses[s.epoch], params[s.epoch] = s.validation_loss(), trainable(s)
        if results[-1]["stop"] or s.epoch == 100:
            break
    best = min(losses, key=losses.get)
    assert results[-1]["stop"] and s.epoch == best + 5 and best > 1
    assert results[-1] == {"best_epoch": best, "best_loss": losses[best], "improved": False, "stop": True,
                           "epochs_without_improvement": 5}
    assert [r["improved"] for r in results] == [losses[e] < min([losses[k] for k in losses if k < e] or [np.inf])
                                                for e in sorted(losses)]
    assert losses[s.epoch] > losses[best] * 1.05  # it was overfitting
    step = s.optimizer._group.step
    moments = {n: {m: a.copy() for m, a in d.items()} for n, d in s.state._optimizer.states.items()}
    assert s.trainer.use_best() == best
    for name, array in trainable(s).items():
        np.testing.assert_array_equal(array, params[best][name], err_msg=name)
    assert s.validation_loss() == losses[best] and s.epoch == best + 5 and s.optimizer._group.step == step
    for name, d in s.state._optimizer.states.items():  # the optimizer state stays
        for m, a in d.items():
            np.testing.assert_array_equal(a, moments[name][m])


def test_a_paused_run_resumes_with_its_best_epoch_and_patience(tmp_path):
    a = session()
    a.trainer.set_data(*overfitting_data())
    a.trainer.best.configure(True, 5)
    while a.epoch < 3 or a.trainer.best.since == 0:  # paused with a best epoch behind it
        train_epoch(a)
    saved, best = a.checkpoint(), a.trainer.best_checkpoint()
    best_params, at_pause = {n: p.copy() for n, p in a.trainer.best.params.items()}, a.trainer.best.summary()
    b = session()
    b.trainer.set_data(*overfitting_data())
    assert b.restore(saved, best) == a.epoch
    assert b.trainer.best.summary() == at_pause and (b.trainer.best.keep_best, b.trainer.best.patience) == (True, 5)
    for name, array in best_params.items():
        np.testing.assert_array_equal(b.trainer.best.params[name], array)
    c = session()  # restored in two calls, as the worker does behind a TabularSession's restore
    c.trainer.set_data(*overfitting_data())
    c.restore(saved)
    assert c.restore_best(best) == at_pause["best_epoch"]
    a.rng, b.rng, c.rng = (np.random.default_rng(5) for _ in range(3))  # the same shuffles from here on
    for _ in range(4):
        assert train_epoch(a) == train_epoch(b) == train_epoch(c)
    assert a.trainer.use_best() == b.trainer.use_best() == c.trainer.use_best() is not None
    for name, array in trainable(a).items():
        np.testing.assert_array_equal(trainable(b)[name], array)
        np.testing.assert_array_equal(trainable(c)[name], array)
    # onnxruntime-training reads the best-epoch checkpoint: the kept parameters, epoch = the best epoch
    (tmp_path / "best").write_bytes(best)
    ort_state = oc.ort_api().CheckpointState.load_checkpoint(str(tmp_path / "best"))
    assert ort_state.properties["epoch"] == at_pause["best_epoch"]
    assert json.loads(ort_state.properties[PROPERTY])["best_epoch"] == at_pause["best_epoch"]
    for name, array in best_params.items():
        np.testing.assert_array_equal(read_checkpoint(best).trainable[name], array)


def test_restore_without_the_best_checkpoint_keeps_the_counts_but_not_the_parameters():
    a = session()
    a.trainer.set_data(*overfitting_data())
    a.trainer.best.configure(True, 5)
    while a.epoch < 3 or a.trainer.best.since == 0:
        train_epoch(a)
    b = session()
    b.trainer.set_data(*overfitting_data())
    b.restore(a.checkpoint())
    assert b.trainer.best.summary() == a.trainer.best.summary() and b.trainer.best.params is None
    before = trainable(b)
    assert b.trainer.use_best() is None  # nothing to put back: the page must not say the best epoch is in use
    for name, array in trainable(b).items():
        np.testing.assert_array_equal(array, before[name])
    # saved at its best epoch, the current parameters are the best ones
    c = session()
    c.trainer.set_data(*overfitting_data())
    c.trainer.best.configure(True, 5)
    train_epoch(c)
    d = session()
    d.restore(c.checkpoint())
    assert d.trainer.best.best_epoch == 1 and d.trainer.use_best() == 1
    for name, array in trainable(c).items():
        np.testing.assert_array_equal(d.trainer.best.params[name], array)


def state_of(s):
    return (trainable(s), s.epoch, s.optimizer._group.step, s.trainer.best.to_property(), dict(s.state._properties))


def assert_state(s, before):
    params, *rest = state_of(s)
    assert rest == list(before[1:])
    for name, array in params.items():
        np.testing.assert_array_equal(array, before[0][name])


@pytest.mark.parametrize("epoch", ["three", -1, 2.5])
def test_a_corrupt_epoch_property_is_named_and_changes_nothing(epoch):
    a = session()
    a.trainer.set_data(*overfitting_data())
    train_epoch(a)
    other = session()
    other.state.properties["epoch"] = epoch
    corrupt = api.CheckpointState.save_checkpoint(other.state, None, include_optimizer_state=True)
    before = state_of(a)
    with pytest.raises(ValueError, match=f"the checkpoint's property 'epoch' must be an integer >= 0, got "
                                         f"{epoch!r} \\({type(epoch).__name__}\\)"):
        a.restore(corrupt)
    assert_state(a, before)


def test_a_best_checkpoint_of_another_epoch_is_refused_and_changes_nothing():
    a = session()
    a.trainer.set_data(*overfitting_data())
    a.trainer.best.configure(True, 5)
    train_epoch(a)
    early_best = a.trainer.best_checkpoint()
    while a.trainer.best.best_epoch == 1:
        train_epoch(a)
    saved = a.checkpoint()
    b = session()
    b.trainer.set_data(*overfitting_data())
    before = state_of(b)
    with pytest.raises(ValueError, match=r"the best-epoch checkpoint is of epoch 1, but the run's best epoch is \d+"):
        b.restore(saved, early_best)
    assert_state(b, before)
    with pytest.raises(ValueError, match="parameters do not match"):
        b.restore(saved, oc.files("cnn_ce_adamw")["checkpoint"].read_bytes())
    assert_state(b, before)


def test_checkpoint_refuses_a_non_finite_state():
    s = session()
    s.trainer.set_data(*overfitting_data())
    train_epoch(s)
    good = s.checkpoint()
    s.trainer.epoch = 2
    s.state.parameters["fc2.bias"] = np.array([1, np.nan, np.inf, 0, 0], np.float32)
    properties = dict(s.state._properties)
    with pytest.raises(NonFiniteStateError, match=r"^not saved: parameter 'fc2.bias' holds 2 nan or inf values of 5; "
                                                  r"the last good checkpoint is kept$"):
        s.checkpoint()
    assert s.state._properties == properties
    s.state.parameters["fc2.bias"] = np.zeros(5, np.float32)
    s.state._optimizer.states["fc1.weight"]["momentum1"][0, 0] = np.inf
    with pytest.raises(NonFiniteStateError, match="the optimizer state 'momentum1' of parameter 'fc1.weight'"):
        s.artifacts_zip()
    assert read_checkpoint(good).properties["epoch"] == 1


def test_end_epoch_needs_a_finished_epoch_and_new_data_starts_over():
    s = session()
    with pytest.raises(ValueError, match="no epoch has finished yet"):
        s.trainer.end_epoch(1.0)["best"]
    s.trainer.set_data(*overfitting_data())
    train_epoch(s)
    assert s.trainer.best.best_epoch == 1
    with pytest.raises(ValueError, match="keep_best must be true or false"):
        s.trainer.best.configure("no", 3)
    s.trainer.set_data(*overfitting_data())
    assert s.trainer.best.best_epoch is None and s.trainer.best.params is None and s.trainer.best_checkpoint() is None
