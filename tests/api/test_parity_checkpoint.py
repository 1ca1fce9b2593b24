"""Checkpoints move both ways between onnxtrain and onnxruntime-training 1.19.2 and resume identically."""
import numpy as np
import pytest

import ort_cases as oc
from onnxtrain import api as ours
from onnxtrain.api.checkpoint_state import LEARNING_RATE_PROPERTY

pytestmark = pytest.mark.usefixtures("kernels")   # numpy's kernels and the native ones


def session(api, name, checkpoint):
    f = oc.files(name)
    state = api.CheckpointState.load_checkpoint(str(checkpoint))
    module = api.Module(str(f["training"]), state, str(f["eval"]))
    return state, module, api.Optimizer(str(f["optimizer"]), module)


def train(module, optimizer, batches):
    losses = []
    for batch in batches:
        losses.append(float(module(*batch)))
        optimizer.step()
        module.lazy_reset_grad()
    return losses


@pytest.mark.parametrize("name", ["mlp_ce_adamw", "cnn_ce_sgd", "mlp_ce_adamw_wd_clip", "frozen_ce_adamw"])
@pytest.mark.parametrize("first, second", [("ort", "ours"), ("ours", "ort")], ids=["ort-to-ours", "ours-to-ort"])
def test_resume_across_runtimes(name, first, second, tmp_path):
    apis = {"ort": oc.ort_api(), "ours": ours}
    data = oc.batches(name, 6)
    state, module, optimizer = session(apis[first], name, oc.files(name)["checkpoint"])
    optimizer.set_learning_rate(0.001)  # the initial rate, which is all ORT restores
    train(module, optimizer, data[:3])
    state.properties["epoch"] = 3
    state.properties["best_loss"] = 0.25
    state.properties["run_name"] = "résumé"
    apis[first].CheckpointState.save_checkpoint(state, str(tmp_path / "ck"), True)
    saved = {n: np.array(p.data) for n, p in state.parameters}
    continued = train(module, optimizer, data[3:])

    state2, module2, optimizer2 = session(apis[second], name, tmp_path / "ck")
    for n, p in state2.parameters:
        np.testing.assert_array_equal(p.data, saved[n])
    assert state2.properties["epoch"] == 3
    assert state2.properties["best_loss"] == 0.25
    assert state2.properties["run_name"] == "résumé"
    resumed = train(module2, optimizer2, data[3:])
    np.testing.assert_allclose(resumed, continued, rtol=1e-6)


def test_checkpoint_without_optimizer_state_restarts_moments(tmp_path):
    name = "mlp_ce_adamw"
    state, module, optimizer = session(ours, name, oc.files(name)["checkpoint"])
    train(module, optimizer, oc.batches(name, 2))
    ours.CheckpointState.save_checkpoint(state, tmp_path / "params_only")
    theirs_state, theirs_module, theirs_opt = session(oc.ort_api(), name, tmp_path / "params_only")
    mine_state, mine_module, mine_opt = session(ours, name, tmp_path / "params_only")
    batches = oc.batches(name, 3, seed=5)
    np.testing.assert_allclose(train(mine_module, mine_opt, batches), train(theirs_module, theirs_opt, batches),
                               rtol=1e-6)


def test_current_learning_rate_survives_a_resume(tmp_path):
    name = "mlp_ce_sgd"
    state, module, optimizer = session(ours, name, oc.files(name)["checkpoint"])
    optimizer.set_learning_rate(0.1)
    train(module, optimizer, oc.batches(name, 2))
    ours.CheckpointState.save_checkpoint(state, tmp_path / "ck", include_optimizer_state=True)
    _, _, resumed = session(ours, name, tmp_path / "ck")
    assert resumed.get_learning_rate() == pytest.approx(0.1)
    # ORT still loads the checkpoint; it sees one more float property and falls back to the initial rate
    theirs, _, their_opt = session(oc.ort_api(), name, tmp_path / "ck")
    assert theirs.properties[LEARNING_RATE_PROPERTY] == pytest.approx(0.1)
    assert their_opt.get_learning_rate() == pytest.approx(0.001)


def test_checkpoint_as_bytes_round_trip():
    name = "mlp_ce_adamw"
    state, module, optimizer = session(ours, name, oc.files(name)["checkpoint"])
    train(module, optimizer, oc.batches(name, 2))
    data = ours.CheckpointState.save_checkpoint(state, None, include_optimizer_state=True)
    again = ours.CheckpointState.load_checkpoint(data)
    for n, p in state.parameters:
        np.testing.assert_array_equal(again.parameters[n].data, p.data)
    assert again._optimizer.step == 2
