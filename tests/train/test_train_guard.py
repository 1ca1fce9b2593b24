"""Guarded train steps: the same numbers as onnxruntime-training 1.19.2 when all is finite; a step whose loss,
gradient or update is not finite is undone exactly and named."""
import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import ort_cases as oc
from onnxtrain import api
from onnxtrain.train import NonFiniteStepError, StepGuard


def ours(name, directory=None, device="cpu"):
    f = oc.files(name) if directory is None else {k: directory / v for k, v in [
        ("checkpoint", "checkpoint"), ("training", "training_model.onnx"), ("eval", "eval_model.onnx"),
        ("optimizer", "optimizer_model.onnx")]}
    state = api.CheckpointState.load_checkpoint(f["checkpoint"])
    module = api.Module(f["training"], state, f["eval"], device=device)
    return state, module, api.Optimizer(f["optimizer"], module)


def theirs(name, directory=None):
    f = oc.files(name) if directory is None else {k: directory / v for k, v in [
        ("checkpoint", "checkpoint"), ("training", "training_model.onnx"), ("eval", "eval_model.onnx"),
        ("optimizer", "optimizer_model.onnx")]}
    ort = oc.ort_api()
    state = ort.CheckpointState.load_checkpoint(str(f["checkpoint"]))
    module = ort.Module(str(f["training"]), state, str(f["eval"]))
    return state, module, ort.Optimizer(str(f["optimizer"]), module)


def everything(state, optimizer):
    """Copies of every trainable parameter and moment, and the step count."""
    arrays = {(n, "parameter"): p.data.copy() for n, p in state.parameters if p.requires_grad}
    for name, moments in optimizer._group.states.items():
        arrays.update({(name, m): a.copy() for m, a in moments.items()})
    return arrays, optimizer._group.step


def assert_same(before, state, optimizer):
    arrays, step = everything(state, optimizer)
    assert step == before[1] and arrays.keys() == before[0].keys()
    for key, array in arrays.items():
        np.testing.assert_array_equal(array, before[0][key], err_msg=str(key))


@pytest.mark.parametrize("case", ["mlp_ce_adamw", "mlp_ce_sgd", "mlp_ce_adamw_wd_clip", "cnn_ce_adamw"])
def test_guarded_steps_train_as_onnxruntime_and_as_plain_steps(case):
    state, module, optimizer = ours(case)
    plain_state, plain_module, plain_optimizer = ours(case)
    ort_state, ort_module, ort_optimizer = theirs(case)
    guard, plain = StepGuard(module, optimizer), StepGuard(plain_module, plain_optimizer)
    plain.check = False
    for batch in oc.batches(case, 4):
        loss = guard.step(list(batch))
        assert loss == plain.step(list(batch))
        np.testing.assert_allclose(loss, float(ort_module(*batch)), rtol=1e-5)
        ort_optimizer.step()
        ort_module.lazy_reset_grad()
    np.testing.assert_array_equal(module.get_contiguous_parameters(), plain_module.get_contiguous_parameters())
    np.testing.assert_allclose(module.get_contiguous_parameters(), ort_module.get_contiguous_parameters().numpy(),
                               rtol=1e-5, atol=1e-7)
    assert optimizer._group.step == 4


def test_a_nan_in_the_batch_undoes_the_step_and_names_the_loss():
    state, module, optimizer = ours("mlp_ce_adamw")
    guard = StepGuard(module, optimizer)
    batches = oc.batches("mlp_ce_adamw", 3)
    guard.step(list(batches[0]))
    before = everything(state, optimizer)
    x, y = batches[1]
    bad = x.copy()
    bad[3, 5] = np.nan
    with pytest.raises(NonFiniteStepError) as e:
        guard.step([bad, y], epoch=4)
    assert str(e.value).startswith("step 2 (epoch 4) was undone: the loss is nan; the parameters and optimizer state "
                                   "are as they were before it; try a learning rate lower than the current 0.001")
    assert (e.value.step, e.value.epoch, e.value.what, e.value.parameter) == (2, 4, "loss", None)
    assert_same(before, state, optimizer)
    # the run goes on exactly as one that never saw the bad batch
    other_state, other_module, other_optimizer = ours("mlp_ce_adamw")
    other = StepGuard(other_module, other_optimizer)
    for batch in (batches[0], batches[2]):
        other.step(list(batch))
    guard.step(list(batches[2]))
    np.testing.assert_array_equal(module.get_contiguous_parameters(), other_module.get_contiguous_parameters())


def test_an_overflowing_update_is_undone_and_names_the_parameter():
    state, module, optimizer = ours("mlp_ce_sgd")
    ort_state, ort_module, ort_optimizer = theirs("mlp_ce_sgd")
    guard = StepGuard(module, optimizer)
    x, y = oc.batches("mlp_ce_sgd", 1)[0]
    x *= 100  # gradients above 1, so that 3e38 times them overflows
    before = everything(state, optimizer)
    optimizer.set_learning_rate(3e38)
    with pytest.raises(NonFiniteStepError, match=r"^step 1 was undone: parameter '[\w.]+' is not finite after the "
                                                 r"update \(\d+ of \d+ values are nan or inf\); the parameters and "
                                                 r"optimizer state are as they were before it; try a learning rate "
                                                 r"lower than the current 3e\+38$") as e:
        guard.step([x, y])
    assert e.value.what == "parameter" and e.value.learning_rate == np.float32(3e38)
    assert_same(before, state, optimizer)
    # without the check the update is written, as onnxruntime writes it
    ort_optimizer.set_learning_rate(3e38)
    ort_module(x, y)
    ort_optimizer.step()
    guard.check = False
    with np.errstate(all="ignore"):
        guard.step([x, y])
    mine, reference = module.get_contiguous_parameters(), ort_module.get_contiguous_parameters().numpy()
    assert not np.isfinite(reference).all()
    np.testing.assert_array_equal(np.isfinite(mine), np.isfinite(reference))


def test_an_overflowing_moment_is_undone_and_named():
    state, module, optimizer = ours("mlp_ce_adamw")
    guard = StepGuard(module, optimizer)
    x, y = oc.batches("mlp_ce_adamw", 1)[0]
    before = everything(state, optimizer)
    with pytest.raises(NonFiniteStepError, match=r"^step 1 was undone: the optimizer state 'momentum1' of parameter "
                                                 r"'fc1.weight' is not finite after the update") as e:
        guard.step([x * np.float32(1e22), y])  # finite loss and gradients, squared gradients overflow
    assert e.value.what == "momentum1"
    assert_same(before, state, optimizer)


def sqrt_artifacts(directory):
    """y = sqrt(x * w): at x = 0 the loss is finite and the gradient of w is 0/0."""
    w = numpy_helper.from_array(np.ones(4, np.float32), "w")
    graph = helper.make_graph(
        [helper.make_node("Mul", ["x", "w"], ["xw"]), helper.make_node("Sqrt", ["xw"], ["y"])], "sqrt",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 4])], [w])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    artifacts = oc.ort_training().artifacts
    artifacts.generate_artifacts(model, requires_grad=["w"], loss=artifacts.LossType.MSELoss,
                                 optimizer=artifacts.OptimType.AdamW, artifact_directory=str(directory))
    return directory


def test_a_nan_gradient_with_a_finite_loss_is_named(tmp_path):
    directory = sqrt_artifacts(tmp_path)
    state, module, optimizer = ours(None, directory)
    ort_state, ort_module, ort_optimizer = theirs(None, directory)
    x = np.abs(np.random.default_rng(0).standard_normal((3, 4))).astype(np.float32)
    x[1, 2] = 0
    target = np.ones((3, 4), np.float32)
    before = everything(state, optimizer)
    with pytest.raises(NonFiniteStepError, match=r"^step 1 was undone: the gradient of parameter 'w' is not finite "
                                                 r"\(1 of 4 values are nan or inf\)"):
        StepGuard(module, optimizer).step([x, target])
    assert_same(before, state, optimizer)
    with np.errstate(all="ignore"):
        np.testing.assert_allclose(float(ort_module(x, target)), float(module(x, target)), rtol=1e-6)
    ort_optimizer.step()  # onnxruntime writes the nan into w
    assert np.isnan(ort_module.get_contiguous_parameters().numpy()[2])


def test_a_failing_optimizer_leaves_the_state_as_it_was():
    # the failure is put into the numpy provider's plan, whose kernels the step then runs
    state, module, optimizer = ours("mlp_ce_adamw", device="numpy")
    guard = StepGuard(module, optimizer)
    batches = oc.batches("mlp_ce_adamw", 2)
    guard.step(list(batches[0]))
    before = everything(state, optimizer)
    kernel = optimizer._session.plan.steps[-1]
    original = kernel.fn

    def half_done(*args, **kwargs):
        original(*args, **kwargs)  # the update is written in place, then the step fails
        raise MemoryError("out of memory")
    kernel.fn = half_done
    with pytest.raises(Exception, match="AdamWOptimizer.*MemoryError: out of memory"):
        guard.step(list(batches[1]))
    assert_same(before, state, optimizer)
    kernel.fn = original
    guard.step(list(batches[1]))
    assert optimizer._group.step == 2
