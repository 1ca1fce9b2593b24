"""Bad input to the API gets a clear error and leaves the training state as it was."""
import numpy as np
import pytest

import ort_cases as oc
from onnxtrain import api as ours
from onnxtrain.checkpoint import CheckpointError
from onnxtrain.ir import ModelDecodeError
from onnxtrain.runtime import FeedError


@pytest.fixture
def run():
    f = oc.files("mlp_ce_adamw")
    state = ours.CheckpointState.load_checkpoint(f["checkpoint"])
    module = ours.Module(f["training"], state, f["eval"])
    optimizer = ours.Optimizer(f["optimizer"], module)
    x, y = oc.batches("mlp_ce_adamw", 1)[0]
    module(x, y)  # gradients exist, so we can see that a failed step leaves them alone
    return f, state, module, optimizer, x, y


def snapshot(state):
    return {n: (p.data.copy(), None if p.grad is None else p.grad.copy()) for n, p in state.parameters}


def assert_unchanged(state, before):
    for n, p in state.parameters:
        np.testing.assert_array_equal(p.data, before[n][0])
        if before[n][1] is not None:
            np.testing.assert_array_equal(p.grad, before[n][1])


@pytest.mark.parametrize("make_feed, message", [
    (lambda x, y: (x.astype(np.float64), y), "input 'input' must have dtype float32, got float64"),
    (lambda x, y: (x[:, :7], y), "input 'input' must have shape [batch, 20], got [8, 7]"),
    (lambda x, y: (x, y.astype(np.int32)), "input 'labels' must have dtype int64, got int32"),
    (lambda x, y: (x,), "expected 2 inputs ['input', 'labels'], got 1"),
], ids=["dtype", "shape", "label-dtype", "count"])
def test_bad_batches_are_refused_and_change_nothing(run, make_feed, message):
    f, state, module, optimizer, x, y = run
    before = snapshot(state)
    with pytest.raises((FeedError, ValueError)) as e:
        module(*make_feed(x, y))
    assert message in str(e.value)
    assert_unchanged(state, before)
    module(x, y)  # still trains


def test_label_out_of_range_names_the_node(run):
    f, state, module, optimizer, x, y = run
    before = snapshot(state)
    with pytest.raises(Exception, match="SoftmaxCrossEntropyLoss"):
        module(x, np.full_like(y, 99))
    assert_unchanged(state, before)


def test_garbled_models_and_checkpoints(run, tmp_path):
    f, state, *_ = run
    data = f["training"].read_bytes()
    with pytest.raises(ModelDecodeError, match="cannot load the training model"):
        ours.Module(data[: len(data) // 2], state)
    with pytest.raises(ModelDecodeError, match="cannot load the training model"):
        ours.Module(f["checkpoint"].read_bytes(), state)
    with pytest.raises(CheckpointError, match="looks like an ONNX model"):
        ours.CheckpointState.load_checkpoint(f["training"])
    with pytest.raises(CheckpointError, match="truncated or corrupt"):
        ours.CheckpointState.load_checkpoint(f["checkpoint"].read_bytes()[:500])


def test_optimizer_model_checks(run):
    f, state, module, *_ = run
    with pytest.raises(ValueError, match="exactly one of"):
        ours.Optimizer(f["eval"], module)
    with pytest.raises(OSError, match="optimizer model"):
        ours.Optimizer(f["optimizer"].parent / "missing.onnx", module)
    with pytest.raises(TypeError, match="onnxtrain Module"):
        ours.Optimizer(f["optimizer"], object())


def test_mismatched_checkpoint_and_model(run):
    f, *_ = run
    other = ours.CheckpointState.load_checkpoint(oc.files("cnn_ce_adamw")["checkpoint"])
    with pytest.raises(ValueError, match=r"trains parameters \['fc1.weight', .*that the checkpoint does not have"):
        ours.Module(f["training"], other)


def test_parameter_assignment_checks(run):
    f, state, *_ = run
    with pytest.raises(ValueError, match=r"'fc1.bias' is float32\[16\]; cannot assign float64\[16\]"):
        state.parameters["fc1.bias"] = np.zeros(16)
    with pytest.raises(KeyError, match="no parameter named 'nope'"):
        state.parameters["nope"]
    with pytest.raises(TypeError, match="int, float or str"):
        state.properties["x"] = [1]
    state.parameters["fc1.bias"] = np.ones(16, np.float32)
    np.testing.assert_array_equal(state.parameters["fc1.bias"].data, 1)


def test_eval_without_eval_model_and_bad_buffer(run):
    f, state, module, *_ = run
    plain = ours.Module(f["training"], state)
    plain.eval()
    with pytest.raises(RuntimeError, match="no eval model"):
        plain(*oc.batches("mlp_ce_adamw", 1)[0])
    with pytest.raises(ValueError, match="1-D float32 array of"):
        module.copy_buffer_to_parameters(np.zeros(3, np.float32))
