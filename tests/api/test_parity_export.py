"""export_model_for_inferencing gives a plain ONNX model equivalent to ORT's export."""
import numpy as np
import onnx
import onnxruntime as ort
import pytest

import ort_cases as oc
from onnxtrain import api as ours

pytestmark = pytest.mark.usefixtures("kernels")   # numpy's kernels and the native ones


def trained(api, name, steps=2):
    f = oc.files(name)
    state = api.CheckpointState.load_checkpoint(str(f["checkpoint"]))
    module = api.Module(str(f["training"]), state, str(f["eval"]))
    optimizer = api.Optimizer(str(f["optimizer"]), module)
    for batch in oc.batches(name, steps):
        module(*batch)
        optimizer.step()
        module.lazy_reset_grad()
    return module


def run(path_or_bytes, x):
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    sess = ort.InferenceSession(path_or_bytes if isinstance(path_or_bytes, bytes) else str(path_or_bytes), so,
                                providers=["CPUExecutionProvider"])
    return sess.run(None, {"input": x})


@pytest.mark.parametrize("name, outputs", [("mlp_ce_adamw", ["output"]), ("cnn_ce_adamw", ["output"]),
                                           ("linreg_mse_sgd", ["output"]), ("frozen_ce_sgd", ["output"]),
                                           ("partial_unlisted_ce_sgd", ["output"]),
                                           ("mlp2out_lossinput_addout", ["output", "hidden"])])
def test_export_matches_onnxruntime(name, outputs, tmp_path):
    trained(oc.ort_api(), name).export_model_for_inferencing(str(tmp_path / "theirs.onnx"), outputs)
    mine = trained(ours, name)
    mine.export_model_for_inferencing(tmp_path / "ours.onnx", outputs)
    theirs_model, ours_model = onnx.load(str(tmp_path / "theirs.onnx")), onnx.load(str(tmp_path / "ours.onnx"))
    onnx.checker.check_model(ours_model, full_check=True)
    for attr in ("input", "output"):
        assert [(v.name, v.type) for v in getattr(ours_model.graph, attr)] == \
               [(v.name, v.type) for v in getattr(theirs_model.graph, attr)]
    assert sorted(t.name for t in ours_model.graph.initializer) == sorted(t.name for t in theirs_model.graph.initializer)
    x = oc.batches(name, 1, seed=9)[0][0]
    for g, r in zip(run(tmp_path / "ours.onnx", x), run(tmp_path / "theirs.onnx", x)):
        np.testing.assert_allclose(g, r, rtol=1e-5, atol=1e-6)
    # the bytes form gives the same model
    assert mine.export_model_for_inferencing(None, outputs) == (tmp_path / "ours.onnx").read_bytes()


def test_export_of_unknown_output_names_the_output(tmp_path):
    module = trained(ours, "mlp_ce_adamw", steps=0)
    with pytest.raises(ValueError, match="Expected graph output for inference graph output could not be found: "
                                         "logits"):
        module.export_model_for_inferencing(tmp_path / "m.onnx", ["logits"])
    assert not (tmp_path / "m.onnx").exists()


def test_export_from_orts_batchnorm_eval_model(tmp_path):
    """ORT 1.19.2's eval model of a BatchNormalization (training_mode=1) model keeps the running-statistics
    outputs with training_mode=0 (ORT refuses to load it; onnxtrain runs it).  The inference model onnxtrain
    exports from it has BatchNormalization with Y only, and the running mean, asked for as an output, is the
    unchanged running mean; onnxruntime runs it."""
    rng = np.random.default_rng(0)
    model, (scale, bias, mean, var) = oc.batchnorm_head(rng)
    ort_artifacts = oc.ort_training().artifacts
    ort_artifacts.generate_artifacts(model, requires_grad=["scale", "bias"], loss=ort_artifacts.LossType.MSELoss,
                                     optimizer=ort_artifacts.OptimType.SGD, artifact_directory=str(tmp_path),
                                     loss_input_names=["output"], additional_output_names=["running_mean"])
    state = ours.CheckpointState.load_checkpoint(str(tmp_path / "checkpoint"))
    module = ours.Module(str(tmp_path / "training_model.onnx"), state, str(tmp_path / "eval_model.onnx"))
    exported = module.export_model_for_inferencing(None, ["output", "running_mean"])
    onnx.checker.check_model(onnx.load_from_string(exported), full_check=True)
    bn, = [n for n in onnx.load_from_string(exported).graph.node if n.op_type == "BatchNormalization"]
    assert list(bn.output) == ["output"]
    x = rng.standard_normal((2, 3, 4)).astype(np.float32)
    y, running_mean = ort.InferenceSession(exported, providers=["CPUExecutionProvider"]).run(None, {"input": x})
    np.testing.assert_array_equal(running_mean, mean)
    c = (slice(None), None)
    want = (x - mean[c]) / np.sqrt(var[c] + 1e-5) * scale[c] + bias[c]
    np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-6)
    # the eval model itself is unchanged: the export copied the node it changed
    assert [len(n.outputs) for n in module._eval_model.graph.nodes if n.op_type == "BatchNormalization"] == [3]
