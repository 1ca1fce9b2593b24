"""Training through onnxtrain.text.decoder's training form on the tiny LLaMA (tiny_llama.py): onnxtrain's
autodiff against central finite differences (float64) for every weight and for LoRA adapters on the attention
projections; generate_artifacts on the LoRA-adapted decoder with a causal LM loss trains as onnxruntime-training
1.19.2 does on its own artifacts."""
import copy

import numpy as np
import onnx
import pytest

from onnxtrain import ir
from onnxtrain.autodiff import build_gradient_graph
from onnxtrain.ir.dtypes import DataType
from onnxtrain.ir.model import Node, Tensor, TensorType, ValueInfo
from onnxtrain.runtime import Session
from onnxtrain.text import lora
from onnxtrain.text.decoder import decoder_model

import tiny_llama as T
from ort_cases import ort_training

# central differences in float64: the error is truncation, ~ EPS^2 (measured 8e-5 at 1e-5, 9e-7 at 1e-6 on a
# derivative of 900: the random model is strongly curved), plus rounding ~ 1e-16 * loss / EPS
EPS = 1e-6
ATTENTION = [f"self_attn.{p}_proj.weight" for p in "qkvo"]


def as_float64(model):
    """A copy of ``model`` computing in float64: every float32 initializer and the logits' type."""
    out = copy.deepcopy(model)
    out.graph.initializers = [Tensor(t.name, t.data.astype(np.float64), DataType.DOUBLE)
                              if t.data_type == DataType.FLOAT else t for t in out.graph.initializers]
    for v in out.graph.outputs:
        v.type = TensorType(DataType.DOUBLE, v.type.shape)
    return out


def with_loss(model, vocab):
    """``model`` with input ``w`` [batch, sequence, vocab] and output ``loss`` = sum(logits * w)."""
    g = model.graph
    g.inputs.append(ValueInfo("w", TensorType(DataType.DOUBLE, ["batch_size", "sequence_length", vocab])))
    g.nodes += [Node("Mul", ["logits", "w"], ["weighted"], name="weigh"),
                Node("ReduceSum", ["weighted"], ["loss"], name="loss_sum",
                     attributes={"keepdims": ir.Attribute("keepdims", ir.AttrType.INT, 0)})]
    g.outputs = [ValueInfo("loss", TensorType(DataType.DOUBLE, []))]
    return model


def loss_at(model, feeds, name, value):
    changed = copy.copy(model)
    changed.graph = copy.copy(model.graph)
    changed.graph.initializers = [Tensor(name, value, DataType.DOUBLE) if t.name == name else t
                                  for t in model.graph.initializers]
    return float(Session(changed).run(feeds)[0])


def check_gradients(model, params, seed=0):
    """Each parameter's gradient along a random direction against the central difference of the loss."""
    rng = np.random.default_rng(seed)
    x = rng.integers(0, T.CONFIG.vocab_size, (2, 6)).astype(np.int64)
    feeds = {"input_ids": x, "w": rng.standard_normal((2, 6, T.CONFIG.vocab_size))}
    session = Session(build_gradient_graph(model, "loss", params))
    grads = dict(zip(session.output_names, session.run(feeds)))
    inits = model.graph.initializer_map()
    for name in params:
        value = inits[name].data
        direction = rng.standard_normal(value.shape)
        analytic = float(np.sum(grads[name + "_grad"] * direction))
        numeric = (loss_at(model, feeds, name, value + EPS * direction)
                   - loss_at(model, feeds, name, value - EPS * direction)) / (2 * EPS)
        assert abs(analytic - numeric) <= 1e-6 * max(1.0, abs(numeric)), (name, analytic, numeric)
        assert abs(analytic) > 1e-3, name  # the direction reaches the loss: a zero gradient is not a pass


def test_weight_gradients_match_finite_differences():
    model = with_loss(as_float64(decoder_model(T.hf_weights(T.gguf_weights()), T.CONFIG)), T.CONFIG.vocab_size)
    check_gradients(model, sorted(T.gguf_weights()))


def test_lora_gradients_match_finite_differences():
    base = decoder_model(T.hf_weights(T.gguf_weights()), T.CONFIG)
    adapted, trainable = lora.add_adapters(base, rank=2, names=lora.targets(base, ATTENTION))
    rng = np.random.default_rng(5)
    for t in adapted.graph.initializers:  # B starts at zero, which would leave A's gradient zero
        if t.name.endswith(".lora_B"):
            t.data = 0.3 * rng.standard_normal(t.data.shape).astype(np.float32)
    check_gradients(with_loss(as_float64(adapted), T.CONFIG.vocab_size), trainable)


# ---- generate_artifacts against onnxruntime-training ----------------------------------------------------------

STEPS = 4
SEQUENCE = 7


def lm_forward():
    """The LoRA-adapted (rank 4, q/k/v/o) tiny decoder, its logits flattened to [batch * sequence, vocab] for
    CrossEntropyLoss, as an onnx ModelProto; the adapters' names."""
    base = decoder_model(T.hf_weights(T.gguf_weights()), T.CONFIG)
    adapted, trainable = lora.add_adapters(base, rank=4, seed=1, names=lora.targets(base, ATTENTION))
    g = adapted.graph
    shape = Tensor("flat_shape", np.array([-1, T.CONFIG.vocab_size], np.int64), DataType.INT64)
    g.initializers.append(shape)
    g.nodes.append(Node("Reshape", ["logits", "flat_shape"], ["flat_logits"], name="flatten_logits"))
    g.outputs = [ValueInfo("flat_logits", TensorType(DataType.FLOAT, ["tokens", T.CONFIG.vocab_size]))]
    return onnx.load_from_string(ir.to_bytes(adapted)), trainable


def lm_batches():
    """One next-token batch, STEPS times (so the loss must fall): input_ids [2, SEQUENCE] and the labels, the ids
    shifted by one, flattened."""
    text = np.random.default_rng(7).integers(0, T.CONFIG.vocab_size, (2, SEQUENCE + 1)).astype(np.int64)
    return [(text[:, :-1].copy(), text[:, 1:].reshape(-1).copy())] * STEPS


def parameters(module) -> np.ndarray:
    value = module.get_contiguous_parameters(True)
    return np.array(value.numpy() if hasattr(value, "numpy") else value)


def train(training, folder, batches):
    """The losses of each step and the trainable parameters after them, through ``training.api``."""
    api = training.api
    state = api.CheckpointState.load_checkpoint(str(folder / "checkpoint"))
    module = api.Module(str(folder / "training_model.onnx"), state, str(folder / "eval_model.onnx"))
    optimizer = api.Optimizer(str(folder / "optimizer_model.onnx"), module)
    optimizer.set_learning_rate(0.01)
    losses, start = [], parameters(module)
    for ids, labels in batches:
        losses.append(float(np.asarray(module(ids, labels)).reshape(-1)[0]))
        optimizer.step()
        module.lazy_reset_grad()
    return losses, start, parameters(module)


def generate(training, forward, trainable, folder):
    training.artifacts.generate_artifacts(forward, requires_grad=trainable,
                                          loss=training.artifacts.LossType.CrossEntropyLoss,
                                          optimizer=training.artifacts.OptimType.AdamW,
                                          artifact_directory=str(folder))
    return folder


@pytest.fixture(scope="module")
def ort_result(tmp_path_factory):
    forward, trainable = lm_forward()
    ort = ort_training()
    folder = generate(ort, forward, trainable, tmp_path_factory.mktemp("ort_lm"))
    return train(ort, folder, lm_batches())


def test_generate_artifacts_trains_the_adapters_as_onnxruntime_training(tmp_path, ort_result):
    import types

    import onnxtrain.api
    import onnxtrain.artifacts
    ours = types.SimpleNamespace(api=onnxtrain.api, artifacts=onnxtrain.artifacts)
    forward, trainable = lm_forward()
    folder = generate(ours, forward, trainable, tmp_path)
    losses, start, params = train(ours, folder, lm_batches())
    want_losses, want_start, want_params = ort_result
    np.testing.assert_array_equal(start, want_start)
    # float32 through the same graph in two runtimes: rounding only; the losses (about 36) measured equal to 1e-7
    np.testing.assert_allclose(losses, want_losses, rtol=1e-5, atol=0)
    # AdamW moves every entry by about the learning rate (0.01) whatever its gradient's size, as m / sqrt(v): an
    # entry whose gradient nearly cancels (a few hundredths of its terms) carries their float32 rounding,
    # relative, a hundred times larger into its step.  Measured: at most 7.4e-6 (15 of 3584 entries over 1e-6)
    # on steps of about 0.02; the bound is 1e-3 of the learning rate per step.
    np.testing.assert_allclose(params, want_params, rtol=0, atol=STEPS * 1e-3 * 0.01)
    assert all(b < a for a, b in zip(losses, losses[1:])), losses  # the same batch: each step lowers its loss
