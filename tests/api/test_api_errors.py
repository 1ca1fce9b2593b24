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
    with pytest.raises(ValueError, match=r"Parameters buffer size incorrect\. Expected:\d+, Actual:3 "):
        module.copy_buffer_to_parameters(np.zeros(3, np.float32))


@pytest.mark.parametrize("rate", [float("nan"), float("inf"), -float("inf"), -0.5, 1e39, "fast", None, True])
def test_bad_learning_rates_are_refused_and_change_nothing(run, rate):
    f, state, module, optimizer, x, y = run
    optimizer.set_learning_rate(0.01)
    with pytest.raises(ValueError, match="learning rate") as e:
        optimizer.set_learning_rate(rate)
    assert repr(rate) in str(e.value)
    assert optimizer.get_learning_rate() == np.float32(0.01) and state._learning_rate == np.float32(0.01)
    initial = optimizer._group.initial_learning_rate
    with pytest.raises(ValueError, match=r"initial learning rate \(initial_lr\)"):
        ours.LinearLRScheduler(optimizer, 2, 10, rate)
    assert optimizer.get_learning_rate() == np.float32(0.01) and optimizer._group.initial_learning_rate == initial


def test_zero_learning_rate_and_bad_scheduler_steps(run):
    f, state, module, optimizer, x, y = run
    optimizer.set_learning_rate(0)
    assert optimizer.get_learning_rate() == 0
    for warmup, total in [(-1, 10), (2.5, 10), (2, float("nan")), (True, 10)]:
        with pytest.raises(ValueError, match="must be an integer >= 0"):
            ours.LinearLRScheduler(optimizer, warmup, total, 0.1)


def _optimizer_variant(f, tmp_path, mutate):
    import onnx
    model = onnx.load(str(f["optimizer"]))
    mutate(model)
    path = tmp_path / "optimizer_model.onnx"
    onnx.save(model, str(path))
    return path


def _as_tensor(name):
    def mutate(model):
        from onnx import TensorProto, helper
        index = [v.name for v in model.graph.input].index(name)
        model.graph.input[index].CopyFrom(helper.make_tensor_value_info(name, TensorProto.FLOAT, None))
    return mutate


def _retype(index, elem_type):
    def mutate(model):
        model.graph.input[index].type.tensor_type.elem_type = elem_type
    return mutate


def _output_float(model):
    model.graph.output[0].type.tensor_type.elem_type = 1


def _no_outputs(model):
    del model.graph.output[:]


@pytest.mark.parametrize("mutate, message, ort_fails_at", [
    (_as_tensor("gradients"), "input 'gradients' must be seq(tensor(float)) (as onnxruntime-training declares it), "
                              "but it is declared as tensor(float)", "construction"),
    (_as_tensor("params"), "input 'params' must be seq(tensor(float))", "construction"),
    (_as_tensor("second_order_moments"), "input 'second_order_moments' must be seq(tensor(float))", "construction"),
    (_retype(0, 7), "input 'learning_rate' must be tensor(float) (as onnxruntime-training declares it), but it is "
                    "declared as tensor(int64)", "construction"),
    (_retype(1, 1), "input 'step' must be tensor(int64)", "construction"),
    (_output_float, "output 'onnx::adamw.updated_flag::5' must be the tensor(bool) update flag, but it is declared "
                    "as tensor(float)", "construction"),
    (_no_outputs, "the model has no outputs; it must output the tensor(bool) flag", "step"),
], ids=["gradients-tensor", "params-tensor", "moments-tensor", "lr-int64", "step-float", "flag-float", "no-outputs"])
def test_optimizer_signature_is_checked_in_the_constructor(run, tmp_path, mutate, message, ort_fails_at):
    f, state, module, optimizer, x, y = run
    path = _optimizer_variant(f, tmp_path, mutate)
    with pytest.raises(ValueError) as e:
        ours.Optimizer(path, module)
    assert f"the optimizer model '{path}'" in str(e.value) and message in str(e.value)
    with pytest.raises(ValueError, match=r"^the optimizer model: "):
        ours.Optimizer(path.read_bytes(), module)
    # onnxruntime-training 1.19.2 refuses the same model, in its constructor or (no outputs) at the first step
    ort = oc.ort_api()
    ort_state = ort.CheckpointState.load_checkpoint(str(f["checkpoint"]))
    ort_module = ort.Module(str(f["training"]), ort_state, str(f["eval"]))
    failed_at = "construction"
    with pytest.raises(RuntimeError):
        ort_optimizer = ort.Optimizer(str(path), ort_module)
        failed_at = "step"
        ort_module(x, y)
        ort_optimizer.step()
    assert failed_at == ort_fails_at


def test_an_optimizer_model_with_a_second_output_trains_as_in_onnxruntime(run, tmp_path):
    from onnx import TensorProto, helper
    f, state, module, optimizer, x, y = run

    def second_output(model):
        model.graph.output.append(helper.make_tensor_value_info("learning_rate", TensorProto.FLOAT, [1]))
    path = _optimizer_variant(f, tmp_path, second_output)
    fresh = ours.CheckpointState.load_checkpoint(f["checkpoint"])
    mine = ours.Module(f["training"], fresh, f["eval"])
    opt = ours.Optimizer(path, mine)
    ort = oc.ort_api()
    ort_state = ort.CheckpointState.load_checkpoint(str(f["checkpoint"]))
    ort_module = ort.Module(str(f["training"]), ort_state, str(f["eval"]))
    ort_opt = ort.Optimizer(str(path), ort_module)
    for batch in oc.batches("mlp_ce_adamw", 3):
        np.testing.assert_allclose(float(mine(*batch)), float(ort_module(*batch)), rtol=1e-5)
        opt.step()
        ort_opt.step()
        mine.lazy_reset_grad()
        ort_module.lazy_reset_grad()
    np.testing.assert_allclose(mine.get_contiguous_parameters(), ort_module.get_contiguous_parameters().numpy(),
                               rtol=1e-5, atol=1e-7)


def test_a_checkpoint_with_a_nan_learning_rate_is_refused_by_the_optimizer(run):
    f, state, module, optimizer, x, y = run
    state.properties["onnxtrain.learning_rate"] = float("nan")
    with pytest.raises(ValueError, match=r"checkpoint property 'onnxtrain.learning_rate' must be a finite number "
                                         r">= 0, got nan"):
        ours.Optimizer(f["optimizer"], module)


UNDECODABLE = UnicodeDecodeError("utf-8", b"\xff", 0, 1, "invalid start byte")   # its constructor takes 5 arguments


def test_a_load_error_whose_type_takes_other_arguments_is_still_reworded(monkeypatch):
    def load(source):
        raise UNDECODABLE
    monkeypatch.setattr(ours.module.ir, "load", load)
    with pytest.raises(UnicodeError, match="cannot load the training model: 'utf-8' codec can't decode byte 0xff"):
        ours.module.load_model(b"model", "training model")


def test_a_csv_error_whose_type_takes_other_arguments_names_the_file(monkeypatch, tmp_path):
    from onnxtrain.federated import model

    def csv_inputs(data, types):
        raise UNDECODABLE
    monkeypatch.setattr(model, "csv_inputs", csv_inputs)
    (tmp_path / "data.csv").write_bytes(b"x\n1\n")
    with pytest.raises(UnicodeError, match=r"data\.csv: 'utf-8' codec can't decode byte 0xff"):
        model.read_csv(str(tmp_path / "data.csv"), {})
