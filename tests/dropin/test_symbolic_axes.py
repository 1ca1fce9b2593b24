"""Models whose every axis is symbolic (torch.onnx.export with every axis in dynamic_axes, and a LabelEncoder
over strings built with onnx.helper): artifacts are generated, declare the same inputs and outputs as ORT's,
and train at batch sizes that change from step to step with the losses ORT gives on its own artifacts."""
from __future__ import annotations

import io
import re
import warnings

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from ort_cases import ort_training

STEPS = [slice(0, 3), slice(3, 8), slice(8, 12)]  # batch sizes 3, 5, 4 out of 12 samples
RTOL, ATOL = 1e-5, 1e-6


# ---- forward models ---------------------------------------------------------------------------------

def _export(module, example, fixed=()) -> bytes:
    """``module`` exported by torch's TorchScript exporter with every input and output axis dynamic but the
    input axes ``fixed``."""
    import torch
    torch.manual_seed(0)
    module = module()
    with torch.no_grad():
        out_rank = module(example).dim()
    axes = {"input": {i: f"input_dim{i}" for i in range(example.dim()) if i not in fixed},
            "output": {i: f"output_dim{i}" for i in range(out_rank)}}
    f = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(module, (example,), f, input_names=["input"], output_names=["output"],
                          dynamic_axes=axes, opset_version=17, dynamo=False)
    return f.getvalue()


def _mlp():
    import torch

    class MLP(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1, self.relu, self.fc2 = torch.nn.Linear(4, 6), torch.nn.ReLU(), torch.nn.Linear(6, 3)

        def forward(self, x):
            return self.fc2(self.relu(self.fc1(x)))
    return _export(MLP, torch.randn(2, 4))


def _cnn():
    import torch

    class CNN(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = torch.nn.Conv2d(1, 2, 3, padding=1)
            self.pool = torch.nn.MaxPool2d(2)
            self.fc = torch.nn.Linear(2 * 3 * 3, 3)

        def forward(self, x):
            y = self.pool(torch.relu(self.conv(x)))
            return self.fc(y.view(y.size(0), -1))
    # spatial axes fixed: onnxruntime-training 1.19.2 crashes (SIGSEGV) in the train step of a MaxPool whose input's
    # height and width are symbolic; batch and channels (which the conv weight pins to 1) stay symbolic
    return _export(CNN, torch.randn(2, 1, 6, 6), fixed=(2, 3))


WORDS = ["red", "green", "blue", "cyan", "pink", "gray"]


def _label_encoder():
    """words (strings, [batch]) -> LabelEncoder -> ids -> Gather(embedding) -> Gemm -> output [batch, classes]."""
    rng = np.random.default_rng(0)
    inits = [numpy_helper.from_array(rng.standard_normal((len(WORDS), 4)).astype(np.float32), "emb.weight"),
             numpy_helper.from_array((rng.standard_normal((3, 4)) * 0.5).astype(np.float32), "fc.weight"),
             numpy_helper.from_array(np.zeros(3, np.float32), "fc.bias")]
    nodes = [helper.make_node("LabelEncoder", ["words"], ["ids"], name="encode", domain="ai.onnx.ml",
                              keys_strings=WORDS, values_int64s=list(range(len(WORDS))), default_int64=0),
             helper.make_node("Gather", ["emb.weight", "ids"], ["embedded"], name="embed"),
             helper.make_node("Gemm", ["embedded", "fc.weight", "fc.bias"], ["output"], name="fc", transB=1)]
    graph = helper.make_graph(nodes, "words", [helper.make_tensor_value_info("words", TensorProto.STRING, ["batch"])],
                              [helper.make_tensor_value_info("output", TensorProto.FLOAT, ["batch", "classes"])],
                              inits)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("ai.onnx.ml", 2)],
                          ir_version=8)
    return m.SerializeToString()


def _data(kind):
    """12 samples, learnable: [inputs, target] as the training model takes them after the parameters."""
    rng = np.random.default_rng(1)
    if kind == "words":
        words = rng.choice(WORDS, 12)
        labels = np.array([WORDS.index(w) % 3 for w in words], np.int64)
        return [np.array(words, dtype=object), labels]
    x = rng.standard_normal((12, 4) if kind != "cnn" else (12, 1, 6, 6)).astype(np.float32)
    scores = x.reshape(12, -1)[:, :3]
    if kind == "custom":
        return [x, (scores > 0).astype(np.float32)]
    return [x, scores.argmax(axis=1).astype(np.int64)]


def _custom_loss(onnxblock):
    """A loss Block on constants: 0.9 * BCE with constant per-class weights of fixed shape [3] (which meet the
    output's symbolic class axis) + 0.1 * the mean squared distance to the constant 0.5. A Block, not a
    TrainingBlock: generate_artifacts wraps the loss in its own TrainingBlock, and ORT then finds no parameters."""
    class ConstantLoss(onnxblock.Block):
        def __init__(self):
            super().__init__()
            self.bce = onnxblock.loss.BCEWithLogitsLoss(weight=np.float32([0.5, 1.0, 2.0]),
                                                       pos_weight=np.float32([1.0, 3.0, 0.5]))
            self.half, self.tenth, self.rest = (onnxblock.blocks.Constant(v) for v in (0.5, 0.1, 0.9))
            self.sub, self.add = onnxblock.blocks.Sub(), onnxblock.blocks.Add()
            self.mul, self.mul_rest = onnxblock.blocks.Mul(), onnxblock.blocks.Mul()
            self.square, self.mean = onnxblock.blocks.Pow(2.0), onnxblock.blocks.ReduceMean(keepdims=False)

        def build(self, output_name):
            distance = self.mean(self.square(self.sub(output_name, self.half())))
            # both terms [1]: ORT cannot build the gradient of Add over a scalar and a [1]
            bce = self.mul_rest(self.rest(), self.bce(output_name, "target"))
            return self.add(bce, self.mul(self.tenth(), distance))
    return ConstantLoss()


# name: (forward model maker, data kind, loss, optimizer)
MODELS = {"mlp": (_mlp, "mlp", "CE", "AdamW"), "cnn": (_cnn, "cnn", "CE", "SGD"),
          "custom-loss": (_mlp, "custom", "custom", "AdamW"), "label-encoder": (_label_encoder, "words", "CE", "AdamW")}


# ---- generating and training ------------------------------------------------------------------------

def _generate(training, forward: bytes, case: str, directory):
    directory.mkdir()
    _, _, loss, optimizer = MODELS[case]
    model = onnx.load_from_string(forward)
    params = [t.name for t in model.graph.initializer if t.data_type == TensorProto.FLOAT]
    training.artifacts.generate_artifacts(
        model, requires_grad=params,
        loss=_custom_loss(training.onnxblock) if loss == "custom" else training.artifacts.LossType.CrossEntropyLoss,
        optimizer=getattr(training.artifacts.OptimType, optimizer), artifact_directory=str(directory))
    return directory


def _train(api, directory, data):
    """Eval loss on all 12 samples, the training losses of STEPS, the eval loss after them."""
    state = api.CheckpointState.load_checkpoint(str(directory / "checkpoint"))
    module = api.Module(str(directory / "training_model.onnx"), state, str(directory / "eval_model.onnx"))
    optimizer = api.Optimizer(str(directory / "optimizer_model.onnx"), module)
    optimizer.set_learning_rate(0.05)

    def evaluate():
        module.eval()
        return float(np.asarray(module(*data)).reshape(-1)[0])

    before, losses = evaluate(), []
    module.train()
    for step in STEPS:
        losses.append(float(np.asarray(module(*[d[step] for d in data])).reshape(-1)[0]))
        optimizer.step()
        module.lazy_reset_grad()
    return [before, *losses, evaluate()]


def _signature(path) -> dict:
    m = onnx.load(str(path))

    def describe(values):
        out = []
        for v in values:
            name = re.sub(r"::\d+$", "::#", v.name)  # ORT numbers the names it makes in one count per process
            t = v.type.WhichOneof("value")
            if t != "tensor_type":
                out.append((name, t, str(getattr(v.type, t)).split()))
                continue
            dims = [d.dim_param if d.HasField("dim_param") else d.dim_value if d.HasField("dim_value") else None
                    for d in v.type.tensor_type.shape.dim] if v.type.tensor_type.HasField("shape") else None
            out.append((name, v.type.tensor_type.elem_type, dims))
        return out
    return {"inputs": describe(m.graph.input), "outputs": describe(m.graph.output)}


@pytest.fixture(scope="module")
def forward_models():
    """The forward models, exported once for the module."""
    made = {}

    def get(case):
        maker = MODELS[case][0]
        if maker not in made:
            made[maker] = maker()
        return made[maker]
    return get


@pytest.fixture(scope="module")
def ort_reference(tmp_path_factory, forward_models):
    """ORT's artifacts and losses for a case, made once for the module."""
    done = {}

    def get(case):
        if case not in done:
            ort = ort_training()
            folder = _generate(ort, forward_models(case), case, tmp_path_factory.mktemp(case) / "ort")
            done[case] = folder, _train(ort.api, folder, _data(MODELS[case][1]))
        return done[case]
    return get


@pytest.mark.parametrize("case", list(MODELS))
def test_every_axis_symbolic_trains_as_ort(training, case, tmp_path, forward_models, ort_reference):
    ort_folder, expected = ort_reference(case)
    folder = _generate(training, forward_models(case), case, tmp_path / training.name)
    for name in ("training_model.onnx", "eval_model.onnx", "optimizer_model.onnx"):
        assert _signature(folder / name) == _signature(ort_folder / name), name
    got = _train(training.api, folder, _data(MODELS[case][1]))
    np.testing.assert_allclose(got, expected, rtol=RTOL, atol=ATOL)
    assert got[-1] < got[0], f"eval loss did not decrease: {got}"


def test_true_conflict_is_refused_and_nothing_written(tmp_path):
    """onnxtrain only: one symbol that two weights pin to 4 and to 5 is refused at generation, naming the node,
    its inputs and the axis (ORT writes these artifacts, as it does not unify symbols across nodes; every feed
    then fails at run time)."""
    import onnxtrain.artifacts
    rng = np.random.default_rng(0)
    inits = [numpy_helper.from_array(rng.standard_normal(s).astype(np.float32), n)
             for n, s in (("weight_a", (3, 4)), ("weight_b", (3, 5)))]
    nodes = [helper.make_node("Gemm", ["feats", "weight_a"], ["a"], name="head_a", transB=1),
             helper.make_node("Gemm", ["feats", "weight_b"], ["b"], name="head_b", transB=1),
             helper.make_node("Add", ["a", "b"], ["output"], name="sum")]
    graph = helper.make_graph(nodes, "conflict",
                              [helper.make_tensor_value_info("feats", TensorProto.FLOAT, ["N", "F"])],
                              [helper.make_tensor_value_info("output", TensorProto.FLOAT, ["N", 3])], inits)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    existing, fresh = tmp_path / "existing", tmp_path / "fresh"
    existing.mkdir()
    for directory in (existing, fresh):
        with pytest.raises(ValueError) as caught:
            onnxtrain.artifacts.generate_artifacts(m, requires_grad=["weight_a", "weight_b"],
                                                   loss=onnxtrain.artifacts.LossType.MSELoss,
                                                   optimizer=onnxtrain.artifacts.OptimType.AdamW,
                                                   artifact_directory=str(directory))
        message = str(caught.value)
        assert "Gemm" in message and "feats" in message and "axis" in message.lower(), message
        assert any(n in message and f"weight_{n[-1]}" in message for n in ("head_a", "head_b")), message
    assert list(existing.iterdir()) == [] and not fresh.exists()


def test_string_inputs_may_be_numpy_str_arrays(training, tmp_path, forward_models, ort_reference):
    """Strings fed as numpy's fixed-width str arrays (``np.array(words)``) train as the object arrays do."""
    _, expected = ort_reference("label-encoder")
    folder = _generate(training, forward_models("label-encoder"), "label-encoder", tmp_path / training.name)
    words, labels = _data("words")
    got = _train(training.api, folder, [words.astype(str), labels])
    np.testing.assert_allclose(got, expected, rtol=RTOL, atol=ATOL)
