"""generate_artifacts(..., ort_format=True): the ORT format models beside the .onnx ones, which onnxruntime
1.19.2 loads (InferenceSession, and training's Module and Optimizer: its full build reads .ort too) and
runs as it runs the .onnx models."""
from __future__ import annotations

import numpy as np
import pytest

import ort_cases as oc
from ort_format.harvest_models import TRANSFORMER_PARAMS, transformer

MODELS = ("training_model", "eval_model", "optimizer_model")
EXPECTED = sorted(["pre_checkpoint"] + [f"pre_{m}{ext}" for m in MODELS
                                    for ext in (".onnx", ".ort", ".required_operators.config")])
BATCH = 4


def _fixed(model):
    """``model`` with its batch axis fixed at BATCH."""
    for vi in list(model.graph.input) + list(model.graph.output):
        for d in vi.type.tensor_type.shape.dim:
            if d.dim_param:
                d.Clear()
                d.dim_value = BATCH
    return model


def fixed_mlp():
    """The 8-6-3 MLP of ort_cases with its batch axis fixed at BATCH."""
    return _fixed(oc.mlp(n_in=8, hidden=6, n_out=3))


def _generate(training, folder):
    a = training.artifacts
    a.generate_artifacts(fixed_mlp(), requires_grad=oc.MLP_ALL, loss=a.LossType.CrossEntropyLoss,
                         optimizer=a.OptimType.AdamW, artifact_directory=str(folder), prefix="pre_", ort_format=True)


def _batches(steps=3):
    rng = np.random.default_rng(7)
    return [(rng.standard_normal((BATCH, 8)).astype(np.float32), rng.integers(0, 3, BATCH).astype(np.int64))
            for _ in range(steps)]


def _train_in_ort(folder, ext, batches=None, api=None):
    """Losses of three steps and the eval loss after them, in onnxruntime-training (or ``api``), from the
    .onnx or .ort files."""
    api = api or oc.ort_api()
    batches = batches or _batches(2)
    state = api.CheckpointState.load_checkpoint(str(folder / "pre_checkpoint"))
    module = api.Module(str(folder / f"pre_training_model{ext}"), state, str(folder / f"pre_eval_model{ext}"))
    optimizer = api.Optimizer(str(folder / f"pre_optimizer_model{ext}"), module)
    losses = []
    for feeds in batches[:1] * 3:  # one batch, three steps: the loss must fall
        module.train()
        losses.append(float(module(*feeds)))
        optimizer.step()
        module.lazy_reset_grad()
    module.eval()
    return losses, float(module(*batches[1]))


def test_the_same_files_are_written(training, tmp_path):
    _generate(training, tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == EXPECTED
    config = (tmp_path / "pre_eval_model.required_operators.config").read_text().splitlines()
    assert config[:2] == ["# Generated from model/s:", f"# - {tmp_path / 'pre_eval_model.ort'}"]
    assert any(line.startswith("ai.onnx;13;") and "Gemm" in line.split(";")[2].split(",") for line in config[2:])
    assert (tmp_path / "pre_eval_model.ort").read_bytes()[4:8] == b"ORTM"


def test_ort_files_train_in_onnxruntime_as_the_onnx_files_do(training, tmp_path):
    _generate(training, tmp_path)
    from_onnx = _train_in_ort(tmp_path, ".onnx")
    from_ort = _train_in_ort(tmp_path, ".ort")
    np.testing.assert_allclose(from_ort[0], from_onnx[0], rtol=1e-6)
    np.testing.assert_allclose(from_ort[1], from_onnx[1], rtol=1e-6)
    assert from_ort[0][2] < from_ort[0][0]


def test_eval_ort_runs_in_inference_session_as_the_onnx_does(training, tmp_path):
    import onnxruntime
    _generate(training, tmp_path)
    x, y = _batches(1)[0]
    params = {t.name: oc.numpy_helper.to_array(t) for t in fixed_mlp().graph.initializer}
    outputs = {}
    for ext in (".onnx", ".ort"):
        session = onnxruntime.InferenceSession(str(tmp_path / f"pre_eval_model{ext}"),
                                               providers=["CPUExecutionProvider"])
        feeds = {"input": x, "labels": y, **params}
        assert [i.name for i in session.get_inputs()] == ["input", "labels"] + oc.MLP_ALL
        outputs[ext] = session.run(None, feeds)
    assert len(outputs[".ort"]) == len(outputs[".onnx"]) == 1
    np.testing.assert_allclose(outputs[".ort"][0], outputs[".onnx"][0], rtol=1e-6)


def _transformer_batches():
    rng = np.random.default_rng(3)
    return [tuple(rng.standard_normal((2, 3, 8)).astype(np.float32) for _ in range(2)) for _ in range(2)]


def test_a_transformer_block_trains_from_its_ort_files_as_from_its_onnx_files(training, tmp_path):
    """LayerNormalization, Erf GELU, MatMul, Softmax and Dropout: their gradients bring com.microsoft ops."""
    a = training.artifacts
    a.generate_artifacts(transformer(), requires_grad=TRANSFORMER_PARAMS, loss=a.LossType.MSELoss,
                         optimizer=a.OptimType.AdamW, artifact_directory=str(tmp_path), prefix="pre_",
                         ort_format=True)
    from_onnx = _train_in_ort(tmp_path, ".onnx", _transformer_batches())
    from_ort = _train_in_ort(tmp_path, ".ort", _transformer_batches())
    np.testing.assert_allclose(from_ort[0], from_onnx[0], rtol=1e-6)
    np.testing.assert_allclose(from_ort[1], from_onnx[1], rtol=1e-6)
    assert from_ort[0][2] < from_ort[0][0]


def _labelled(shape, classes, seed):
    rng = np.random.default_rng(seed)
    return [(rng.standard_normal((BATCH, *shape)).astype(np.float32), rng.integers(0, classes, BATCH).astype(np.int64))
            for _ in range(2)]


def _models():
    """name: (forward model, parameters, loss type name, batches)."""
    cnn = _fixed(oc.cnn(channels=4, size=8, n_out=3))
    return {"mlp": (fixed_mlp(), oc.MLP_ALL, "CrossEntropyLoss", _labelled((8,), 3, 5)),
            "cnn": (cnn, [t.name for t in cnn.graph.initializer], "CrossEntropyLoss", _labelled((1, 8, 8), 3, 6)),
            "transformer": (transformer(), TRANSFORMER_PARAMS, "MSELoss", _transformer_batches())}


@pytest.mark.parametrize("writer", ["onnxruntime", "onnxtrain"])
@pytest.mark.parametrize("name", ["mlp", "cnn", "transformer"])
def test_the_api_trains_from_either_writers_ort_files_as_from_the_onnx_files(training, tmp_path, name, writer):
    """onnxruntime's .ort files are optimized at level "all" (FusedGemm, FusedConv, FusedMatMul, ...)."""
    import onnxtrain.artifacts
    a = oc.ort_training().artifacts if writer == "onnxruntime" else onnxtrain.artifacts
    model, params, loss, batches = _models()[name]
    a.generate_artifacts(model, requires_grad=params, loss=getattr(a.LossType, loss), optimizer=a.OptimType.AdamW,
                         artifact_directory=str(tmp_path), prefix="pre_", ort_format=True)
    from_onnx = _train_in_ort(tmp_path, ".onnx", batches, training.api)
    from_ort = _train_in_ort(tmp_path, ".ort", batches, training.api)
    np.testing.assert_allclose(from_ort[0], from_onnx[0], rtol=1e-6)
    np.testing.assert_allclose(from_ort[1], from_onnx[1], rtol=1e-6)
    assert from_ort[0][2] < from_ort[0][0]
