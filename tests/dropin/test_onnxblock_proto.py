"""onnxblock with onnx.ModelProto in and out, as code written for onnxruntime-training 1.19.2 uses it: models given
as ModelProto come back as ModelProto (to_model_proto, accessor.model, self.base inside build), the optimizer
recipe with empty_base, load_checkpoint_to_model on a ModelProto, and requires_grad on a graph input.  Each test
runs on ORT and on onnxtrain; where names carry onnxblock's counter (``onnx::<token>::<n>``, global in ORT) they
are compared without it, against ORT's own result built in the test."""
from __future__ import annotations

import copy
import re

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import ort_cases as oc

N_IN, HIDDEN, N_OUT, BATCH = 6, 5, 3, 4


def forward_model():
    return oc.mlp(n_in=N_IN, hidden=HIDDEN, n_out=N_OUT)


def reference():
    """onnxruntime-training 1.19.2's onnxblock, to build the expected results with."""
    return oc.ort_training().onnxblock


def plain(name: str) -> str:
    """A value name without onnxblock's counter."""
    return re.sub(r"^onnx::(.+)::\d+$", r"onnx::\1", name)


def signature(model: onnx.ModelProto) -> dict:
    return {"inputs": [(plain(v.name), helper.printable_type(v.type)) for v in model.graph.input],
            "outputs": [(plain(v.name), helper.printable_type(v.type)) for v in model.graph.output]}


def initializer_names(model: onnx.ModelProto) -> list:
    return sorted(plain(t.name) for t in model.graph.initializer)


def run(model: onnx.ModelProto, feeds: dict) -> list:
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, feeds)


def run_onnxtrain(model: onnx.ModelProto, feeds: dict) -> list:
    """The model run by onnxtrain's runtime (which, like onnxruntime, accumulates into the fed buffers)."""
    from onnxtrain import ir
    from onnxtrain.runtime import Session
    return Session(ir.load(model.SerializeToString())).run(feeds)


def batch(seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((BATCH, N_IN)).astype(np.float32)
    target = rng.standard_normal((BATCH, N_OUT)).astype(np.float32)
    return x, target


def params_of(model: onnx.ModelProto) -> dict:
    return {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}


def mlp_forward(params: dict, x: np.ndarray) -> np.ndarray:
    hidden = np.maximum(x @ params["fc1.weight"].T + params["fc1.bias"], 0)
    return hidden @ params["fc2.weight"].T + params["fc2.bias"]


def mse_block(onnxblock):
    class MSETraining(onnxblock.TrainingBlock):
        def __init__(self):
            super().__init__()
            self.loss = onnxblock.loss.MSELoss()

        def build(self, output_name):
            return self.loss(output_name)
    return MSETraining()


def built_training_block(onnxblock, requires_grad=("fc2.weight", "fc2.bias"), frozen=("fc1.weight",)):
    block = mse_block(onnxblock)
    for name in requires_grad:
        block.requires_grad(name)
    for name in frozen:
        block.requires_grad(name, False)
    model = forward_model()
    with onnxblock.base(model) as accessor:
        block(model.graph.output[0].name)
    return block, accessor


# ---- TrainingBlock: ModelProto round trip ---------------------------------------------------------

def test_training_block_gives_model_protos(training, tmp_path):
    block, accessor = built_training_block(training.onnxblock)
    training_model, eval_model = block.to_model_proto()
    assert isinstance(training_model, onnx.ModelProto) and isinstance(eval_model, onnx.ModelProto)
    assert block.to_model_proto()[0] is training_model  # the same objects every time, as in ORT
    for model in (training_model, eval_model):
        onnx.checker.check_model(model)
        onnx.save(model, tmp_path / "model.onnx")
        assert onnx.load(tmp_path / "model.onnx") == model

    expected, expected_accessor = built_training_block(reference())
    expected_training, expected_eval = expected.to_model_proto()
    assert signature(training_model) == signature(expected_training)
    assert signature(eval_model) == signature(expected_eval)
    assert initializer_names(eval_model) == initializer_names(expected_eval)
    assert [o.name for o in training_model.graph.output][1:] == ["fc2.weight_grad.accumulation.out",
                                                                 "fc2.bias_grad.accumulation.out"]
    # after a TrainingBlock the base is the training model (ORT copies it into the base)
    assert [o.name for o in accessor.model.graph.output] == [o.name for o in training_model.graph.output]
    assert signature(accessor.model) == signature(expected_accessor.model)

    trainable, frozen = block.parameters()
    assert all(isinstance(t, onnx.TensorProto) for t in trainable + frozen)
    assert [t.name for t in trainable] == ["fc2.weight", "fc2.bias"] and [t.name for t in frozen] == ["fc1.weight"]
    params = params_of(forward_model())
    np.testing.assert_array_equal(np.frombuffer(trainable[0].raw_data, np.float32).reshape(N_OUT, HIDDEN),
                                  params["fc2.weight"])

    x, target = batch()
    feeds = {"input": x, "target": target, **{n: params[n] for n in ("fc1.weight", "fc2.weight", "fc2.bias")}}
    (loss,) = run(eval_model, feeds)
    np.testing.assert_allclose(loss, np.mean((mlp_forward(params, x) - target) ** 2), rtol=1e-5)


# ---- ForwardBlock.to_model_proto ------------------------------------------------------------------

def test_forward_block_to_model_proto(training):
    onnxblock = training.onnxblock

    class MSEForward(onnxblock.ForwardBlock):
        def __init__(self):
            super().__init__()
            self.loss = onnxblock.loss.MSELoss()

        def build(self, output_name):
            return self.loss(output_name)

    block = MSEForward()
    with pytest.raises(RuntimeError, match="Please build the forward models first"):
        block.to_model_proto()
    model = forward_model()
    with onnxblock.base(model):
        loss_name = block(model.graph.output[0].name)
    built = block.to_model_proto()
    assert isinstance(built, onnx.ModelProto)
    onnx.checker.check_model(built)
    assert [o.name for o in built.graph.output] == [loss_name]
    assert [i.name for i in built.graph.input] == ["input", "target"]
    assert initializer_names(built) == sorted(["fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias",
                                               "onnx::pow_exponent"])
    x, target = batch()
    (loss,) = run(built, {"input": x, "target": target})
    np.testing.assert_allclose(loss, np.mean((mlp_forward(params_of(model), x) - target) ** 2), rtol=1e-5)


def test_build_holding_base_across_a_block(training):
    """User code keeps ``self.base.graph`` across a call of another block and changes it after: the block's
    nodes and the user's both end up in the model, as with ORT's one global ModelProto."""
    onnxblock = training.onnxblock

    class DoubledMSE(onnxblock.ForwardBlock):
        def __init__(self):
            super().__init__()
            self.mse = onnxblock.loss.MSELoss()

        def build(self, output_name):
            graph = self.base.graph
            loss = self.mse(output_name)
            graph.initializer.append(numpy_helper.from_array(np.array(2.0, np.float32), "two"))
            graph.node.append(helper.make_node("Mul", [loss, "two"], ["doubled"], name="double"))
            graph.value_info.append(helper.make_tensor_value_info("doubled", TensorProto.FLOAT, []))
            return "doubled"

    block = DoubledMSE()
    model = forward_model()
    with onnxblock.base(model) as accessor:
        block(model.graph.output[0].name)
        assert [n.op_type for n in accessor.model.graph.node][-2:] == ["ReduceMean", "Mul"]
    built = block.to_model_proto()
    x, target = batch()
    (doubled,) = run(built, {"input": x, "target": target})
    np.testing.assert_allclose(doubled, 2 * np.mean((mlp_forward(params_of(model), x) - target) ** 2), rtol=1e-5)


# ---- build() reading self.base and appending a graph input ---------------------------------------

def scaled_block(onnxblock):
    class ScaledByAnInput(onnxblock.TrainingBlock):
        """The loss times a new graph input, typed after the model's output."""

        def __init__(self):
            super().__init__()
            self.loss = onnxblock.loss.MSELoss()
            self.mul = onnxblock.blocks.Mul()

        def build(self, output_name):
            scores = self.base.graph.output[0]
            assert scores.name == output_name
            self.base.graph.input.append(
                helper.make_tensor_value_info("loss_scale", scores.type.tensor_type.elem_type, []))
            return self.mul(self.loss(output_name), "loss_scale")

    block = ScaledByAnInput()
    for name in ("fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"):
        block.requires_grad(name)
    model = forward_model()
    with onnxblock.base(model):
        block(model.graph.output[0].name)
    return block


def test_build_reads_base_output_and_appends_an_input(training):
    training_model, eval_model = scaled_block(training.onnxblock).to_model_proto()
    expected_training, expected_eval = scaled_block(reference()).to_model_proto()
    onnx.checker.check_model(training_model)
    assert signature(training_model) == signature(expected_training)
    assert signature(eval_model) == signature(expected_eval)
    assert [i.name for i in eval_model.graph.input] == ["input", "loss_scale", "target", "fc1.weight", "fc1.bias",
                                                        "fc2.weight", "fc2.bias"]
    params = params_of(forward_model())
    x, target = batch()
    (loss,) = run(eval_model, {"input": x, "loss_scale": np.array(3, np.float32), "target": target, **params})
    np.testing.assert_allclose(loss, 3 * np.mean((mlp_forward(params, x) - target) ** 2), rtol=1e-5)


# ---- the optimizer recipe: empty_base, accessor.model, onnx.save ------------------------------------

def train_one_step(onnxblock, api, folder):
    block, _ = built_training_block(onnxblock)
    training_model, eval_model = block.to_model_proto()
    onnx.save(training_model, folder / "training_model.onnx")
    onnx.save(eval_model, folder / "eval_model.onnx")
    onnxblock.save_checkpoint(block.parameters(), folder / "checkpoint")
    optimizer_block = onnxblock.optim.AdamW()
    with onnxblock.empty_base() as accessor:
        optimizer_block(block.parameters())
        optimizer_model = accessor.model
    assert isinstance(optimizer_model, onnx.ModelProto)
    assert [i.name for i in optimizer_model.graph.input] == ["learning_rate", "step", "params", "gradients",
                                                             "first_order_moments", "second_order_moments"]
    onnx.save(optimizer_model, folder / "optimizer_model.onnx")

    state = api.CheckpointState.load_checkpoint(str(folder / "checkpoint"))
    module = api.Module(str(folder / "training_model.onnx"), state, str(folder / "eval_model.onnx"))
    optimizer = api.Optimizer(str(folder / "optimizer_model.onnx"), module)
    loss = float(module(*batch()))
    optimizer.step()
    return loss, {name: np.array(state.parameters[name].data) for name in ("fc2.weight", "fc2.bias", "fc1.weight")}


def test_optimizer_recipe_with_empty_base(training, tmp_path):
    (tmp_path / "side").mkdir()
    (tmp_path / "ort").mkdir()
    loss, params = train_one_step(training.onnxblock, training.api, tmp_path / "side")
    expected_loss, expected = train_one_step(reference(), oc.ort_api(), tmp_path / "ort")
    np.testing.assert_allclose(loss, expected_loss, rtol=1e-6)
    start = params_of(forward_model())
    for name, value in expected.items():
        np.testing.assert_allclose(params[name], value, rtol=1e-6, atol=1e-7)
    assert not np.allclose(params["fc2.weight"], start["fc2.weight"])  # the step changed the trained ones
    np.testing.assert_array_equal(params["fc1.weight"], start["fc1.weight"])  # and not the frozen one


# ---- load_checkpoint_to_model on a ModelProto ------------------------------------------------------

def test_load_checkpoint_to_model_proto(training, tmp_path):
    onnxblock = training.onnxblock
    block, _ = built_training_block(onnxblock, requires_grad=("fc2.weight", "fc1.bias"), frozen=("fc1.weight",))
    onnxblock.save_checkpoint(block.parameters(), tmp_path / "checkpoint")
    target = forward_model()
    for t in target.graph.initializer:
        t.CopyFrom(numpy_helper.from_array(np.zeros_like(numpy_helper.to_array(t)), t.name))
    initializers = target.graph.initializer

    assert onnxblock.load_checkpoint_to_model(tmp_path / "checkpoint", target) is None
    assert isinstance(target, onnx.ModelProto)
    loaded = params_of(target)
    start = params_of(forward_model())
    for name in ("fc2.weight", "fc1.bias", "fc1.weight"):
        np.testing.assert_array_equal(loaded[name], start[name])
    np.testing.assert_array_equal(loaded["fc2.bias"], 0)  # not in the checkpoint: unchanged
    assert [t.name for t in initializers] == ["fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"]


# ---- requires_grad on a graph input --------------------------------------------------------------

def input_grad_block(onnxblock):
    block = mse_block(onnxblock)
    for name in ("input", "fc2.weight", "fc1.bias"):
        block.requires_grad(name)
    model = forward_model()
    with onnxblock.base(model):
        block(model.graph.output[0].name)
    return block


def test_requires_grad_on_a_graph_input(training):
    block = input_grad_block(training.onnxblock)
    training_model, eval_model = block.to_model_proto()
    expected = input_grad_block(reference())
    expected_training, expected_eval = expected.to_model_proto()
    assert signature(training_model) == signature(expected_training)
    assert signature(eval_model) == signature(expected_eval)
    assert [i.name for i in training_model.graph.input] == [
        "input", "target", "fc1.bias", "fc2.weight", "input_grad.accumulation.buffer",
        "fc1.bias_grad.accumulation.buffer", "fc2.weight_grad.accumulation.buffer", "lazy_reset_grad"]
    assert [o.name for o in training_model.graph.output][1:] == [
        "input_grad.accumulation.out", "fc1.bias_grad.accumulation.out", "fc2.weight_grad.accumulation.out"]
    accumulators = sorted((n.name, n.output[0]) for n in training_model.graph.node if n.op_type == "InPlaceAccumulatorV2")
    assert accumulators == sorted((n.name, n.output[0]) for n in expected_training.graph.node
                                  if n.op_type == "InPlaceAccumulatorV2")
    assert [t.name for t in block.parameters()[0]] == ["fc1.bias", "fc2.weight"]  # the input is no parameter

    params = params_of(forward_model())
    x, target = batch()

    def step(runner, model, buffers, reset):
        feeds = {"input": x, "target": target, "fc1.bias": params["fc1.bias"], "fc2.weight": params["fc2.weight"],
                 **{f"{n}_grad.accumulation.buffer": b for n, b in buffers.items()},
                 "lazy_reset_grad": np.array([reset])}
        return runner(model, feeds)[0]

    grads = {}
    for runner in (run, run_onnxtrain):
        for model in (training_model, expected_training):
            buffers = {"input": np.zeros_like(x), "fc1.bias": np.zeros(HIDDEN, np.float32),
                       "fc2.weight": np.zeros((N_OUT, HIDDEN), np.float32)}
            step(runner, model, buffers, True)
            once = {n: b.copy() for n, b in buffers.items()}
            step(runner, model, buffers, False)  # accumulates into the buffers
            for n in buffers:
                np.testing.assert_allclose(buffers[n], 2 * once[n], rtol=1e-6, atol=1e-7)
            grads[runner, model is training_model] = once
    ort_grads = grads[run, False]  # ORT's training model run by onnxruntime
    for got in grads.values():
        for n in got:
            np.testing.assert_allclose(got[n], ort_grads[n], rtol=1e-5, atol=1e-7)

    def loss_at(x_value):
        feeds = {"input": x_value.astype(np.float32), "target": target, "fc1.bias": params["fc1.bias"],
                 "fc2.weight": params["fc2.weight"]}
        return float(run(eval_model, feeds)[0])
    numeric = np.zeros_like(x)
    eps = 1e-2
    for idx in np.ndindex(x.shape):
        up, down = x.copy(), x.copy()
        up[idx] += eps
        down[idx] -= eps
        numeric[idx] = (loss_at(up) - loss_at(down)) / (2 * eps)
    np.testing.assert_allclose(ort_grads["input"], numeric, rtol=2e-2, atol=2e-3)


def test_generate_artifacts_requires_grad_on_a_graph_input(training):
    def generate(artifacts, folder):
        artifacts.generate_artifacts(forward_model(), requires_grad=["input", "fc2.weight"],
                                     loss=artifacts.LossType.MSELoss, artifact_directory=folder)
        return onnx.load(folder / "training_model.onnx"), onnx.load(folder / "eval_model.onnx")

    import tempfile
    from pathlib import Path
    with tempfile.TemporaryDirectory() as side, tempfile.TemporaryDirectory() as ref:
        training_model, eval_model = generate(training.artifacts, Path(side))
        expected_training, expected_eval = generate(oc.ort_training().artifacts, Path(ref))
    assert signature(training_model) == signature(expected_training)
    assert signature(eval_model) == signature(expected_eval)
    assert "input_grad.accumulation.buffer" in [i.name for i in training_model.graph.input]
