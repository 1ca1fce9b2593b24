"""ORT-style onnxblock code (TrainingBlock, base, save_checkpoint) runs unchanged with onnxtrain's onnxblock."""
import numpy as np
import pytest

import ort_cases as oc
from onnxtrain import api, artifacts, ir, onnxblock


class MLPTrainingBlock(onnxblock.TrainingBlock):
    """As in onnxruntime-training's examples."""

    def __init__(self):
        super().__init__()
        self.loss = onnxblock.loss.CrossEntropyLoss()

    def build(self, output_name):
        return self.loss(output_name)


def ort_style_artifacts(tmp_path):
    model = oc.mlp(n_in=20, hidden=16, n_out=5)
    block = MLPTrainingBlock()
    for name in ("fc2.weight", "fc2.bias"):
        block.requires_grad(name)
    block.requires_grad("fc1.weight", False)
    with onnxblock.base(model.SerializeToString()):
        _ = block(*[o.name for o in model.graph.output])
    training, eval_model = block.to_model_proto()
    ir.save(training, tmp_path / "training_model.onnx")
    ir.save(eval_model, tmp_path / "eval_model.onnx")
    onnxblock.save_checkpoint(block.parameters(), tmp_path / "checkpoint")
    optimizer = onnxblock.optim.AdamW()
    with onnxblock.empty_base() as accessor:
        _ = optimizer(block.parameters())
    (tmp_path / "optimizer_model.onnx").write_bytes(accessor.model.SerializeToString())  # an onnx.ModelProto
    return tmp_path


def test_training_block_flow_trains_in_onnxtrain_and_onnxruntime(tmp_path):
    folder = ort_style_artifacts(tmp_path)
    losses = []
    for impl in (api, oc.ort_api()):
        state = impl.CheckpointState.load_checkpoint(str(folder / "checkpoint"))
        module = impl.Module(str(folder / "training_model.onnx"), state, str(folder / "eval_model.onnx"))
        optimizer = impl.Optimizer(str(folder / "optimizer_model.onnx"), module)
        run = []
        for batch in oc.batches("mlp_ce_adamw", 4):
            run.append(float(module(*batch)))
            optimizer.step()
            module.lazy_reset_grad()
        losses.append(run)
        trainable = sorted(n for n, p in state.parameters if p.requires_grad)
        assert trainable == ["fc2.bias", "fc2.weight"]
    np.testing.assert_allclose(losses[0], losses[1], rtol=1e-5)
    assert losses[0][-1] < losses[0][0]


def test_block_outside_a_base_and_parameters_before_build():
    with pytest.raises(RuntimeError, match="inside onnxblock.base"):
        onnxblock.blocks.Add()("a", "b")
    with pytest.raises(RuntimeError, match="build the training model first"):
        MLPTrainingBlock().parameters()


def test_load_checkpoint_to_model(tmp_path):
    folder = ort_style_artifacts(tmp_path)
    model = ir.load(oc.mlp(n_in=20, hidden=16, n_out=5).SerializeToString())
    state = api.CheckpointState.load_checkpoint(folder / "checkpoint")
    state.parameters["fc2.bias"] = np.full(5, 7, np.float32)
    api.CheckpointState.save_checkpoint(state, folder / "changed")
    onnxblock.load_checkpoint_to_model(folder / "changed", model)
    np.testing.assert_array_equal({t.name: t.data for t in model.graph.initializers}["fc2.bias"], 7)


def test_eval_model_batchnorm_running_statistics_read_downstream():
    """A BatchNormalization (training_mode=1) whose updated running mean is a model output: in the eval model
    (training_mode=0, so Y is its only output) that output is the unchanged running mean, and onnxruntime
    runs the eval model."""
    import onnxruntime as ort
    rng = np.random.default_rng(0)
    model, (scale, bias, mean, var) = oc.batchnorm_head(rng)
    out = artifacts.generate_artifacts(model, requires_grad=["scale", "bias"], loss=artifacts.LossType.MSELoss,
                                       loss_input_names=["output"], additional_output_names=["running_mean"])
    eval_model = ir.load(out["eval_model.onnx"])
    bn = next(n for n in eval_model.graph.nodes if n.op_type == "BatchNormalization")
    assert bn.outputs == ["output"] and bn.attr("training_mode") == 0
    x, target = rng.standard_normal((2, 3, 4)).astype(np.float32), rng.standard_normal((2, 3, 4)).astype(np.float32)
    session = ort.InferenceSession(out["eval_model.onnx"], providers=["CPUExecutionProvider"])
    loss, running_mean = session.run(None, {"input": x, "target": target, "scale": scale, "bias": bias})
    np.testing.assert_array_equal(running_mean, mean)
    y = (x - mean[:, None]) / np.sqrt(var[:, None] + 1e-5) * scale[:, None] + bias[:, None]
    np.testing.assert_allclose(loss, np.mean((y - target) ** 2), rtol=1e-5)
