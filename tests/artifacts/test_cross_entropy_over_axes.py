"""Cross-entropy over sequences and pixels: a model whose scores are [N, C, d1..dk] (per-token logits transposed
to [N, V, T], a segmentation head's [N, C, H, W]) gets labels [N, d1..dk], as torch.nn.functional.cross_entropy
and the ONNX operator define them, and trains as PyTorch does.  (onnxruntime-training 1.19.2 declares the labels
as the scores' shape without the last axis, and its dummy run fails on these models.)"""
import io
import warnings

import numpy as np
import pytest
import torch
from torch import nn

from onnxtrain import api, ir
from onnxtrain.artifacts import LossType, OptimType, generate_artifacts

from ort_cases import ort_api


class PerToken(nn.Module):
    """[N, T] token ids -> [N, V, T] next-token logits."""

    def __init__(self, vocab=7, dim=5):
        super().__init__()
        self.embed, self.head = nn.Embedding(vocab, dim), nn.Linear(dim, vocab)

    def forward(self, tokens):
        return self.head(torch.tanh(self.embed(tokens))).transpose(1, 2)


class Segmenter(nn.Module):
    """[N, 2, H, W] images -> [N, 3, H, W] per-pixel class scores."""

    def __init__(self):
        super().__init__()
        self.conv1, self.conv2 = nn.Conv2d(2, 4, 3, padding=1), nn.Conv2d(4, 3, 1)

    def forward(self, x):
        return self.conv2(torch.relu(self.conv1(x)))


def exported(module, example) -> bytes:
    buf = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(module, (example,), buf, dynamo=False, opset_version=17, input_names=["input"],
                          output_names=["output"], do_constant_folding=False)
    return buf.getvalue()


CASES = {
    "per-token": (PerToken, lambda rng: torch.tensor(rng.integers(0, 7, (4, 6))),
                  lambda rng: rng.integers(0, 7, (4, 6)), [4, 6]),
    "per-pixel": (Segmenter, lambda rng: torch.tensor(rng.standard_normal((2, 2, 5, 4)), dtype=torch.float32),
                  lambda rng: rng.integers(0, 3, (2, 5, 4)), [2, 5, 4]),
}


@pytest.mark.slow
@pytest.mark.parametrize("case", list(CASES))
def test_labels_are_the_scores_shape_without_the_class_axis_and_training_matches_torch(case):
    make, inputs, labels, label_shape = CASES[case]
    rng = np.random.default_rng(0)
    torch.manual_seed(0)
    model = make()
    x, y = inputs(rng), labels(rng)
    names = [n for n, _ in model.named_parameters()]
    arts = generate_artifacts(exported(model, x), requires_grad=names, loss=LossType.CrossEntropyLoss,
                              optimizer=OptimType.SGD, artifact_directory=None)
    training = ir.load(arts["training_model.onnx"]).graph
    declared = {v.name: v.type for v in training.inputs}["labels"]
    assert declared.elem_type == 7 and declared.shape == label_shape

    state = api.CheckpointState.load_checkpoint(arts["checkpoint"])
    module = api.Module(arts["training_model.onnx"], state, arts["eval_model.onnx"])
    optimizer = api.Optimizer(arts["optimizer_model.onnx"], module)
    optimizer.set_learning_rate(0.5)
    reference = torch.optim.SGD(model.parameters(), lr=0.5)
    for _ in range(3):
        loss = float(np.asarray(module(x.numpy(), y.astype(np.int64))).reshape(-1)[0])
        optimizer.step()
        module.lazy_reset_grad()
        reference.zero_grad()
        expected = nn.functional.cross_entropy(model(x), torch.tensor(y))
        expected.backward()
        reference.step()
        assert loss == pytest.approx(float(expected.detach()), rel=1e-5)
    ours = {n: p.data for n, p in state.parameters}
    for name, parameter in model.named_parameters():
        np.testing.assert_allclose(ours[name], parameter.detach().numpy(), rtol=1e-4, atol=1e-6)


IGNORE = 2
CLASS_WEIGHTS = np.array([0.5, 2.0, 1.25], np.float32)

WEIGHTED_CASES = {
    # a language model's padding token is ignored: it counts neither in the loss nor in the mean's denominator
    "per-token-ignore-index": (PerToken, lambda rng: torch.tensor(rng.integers(0, 7, (4, 6))),
                               lambda rng: np.where(rng.random((4, 6)) < 0.3, IGNORE, rng.integers(0, 7, (4, 6))),
                               {"ignore_index": IGNORE}),
    # rare classes weigh more: the mean is sum(w[y] * loss) / sum(w[y])
    "per-pixel-class-weights": (Segmenter,
                                lambda rng: torch.tensor(rng.standard_normal((2, 2, 5, 4)), dtype=torch.float32),
                                lambda rng: rng.integers(0, 3, (2, 5, 4)), {"weight": CLASS_WEIGHTS}),
    "per-pixel-weights-and-ignore-index": (
        Segmenter, lambda rng: torch.tensor(rng.standard_normal((2, 2, 5, 4)), dtype=torch.float32),
        lambda rng: rng.integers(0, 3, (2, 5, 4)), {"weight": CLASS_WEIGHTS, "ignore_index": 1}),
    "per-token-sum-ignore-index": (PerToken, lambda rng: torch.tensor(rng.integers(0, 7, (4, 6))),
                                   lambda rng: rng.integers(0, 7, (4, 6)), {"ignore_index": 0, "reduction": "sum"}),
}


def train_losses(api_, folder, x, y, steps=3, lr=0.1):
    state = api_.CheckpointState.load_checkpoint(str(folder / "checkpoint"))
    module = api_.Module(str(folder / "training_model.onnx"), state, str(folder / "eval_model.onnx"))
    optimizer = api_.Optimizer(str(folder / "optimizer_model.onnx"), module)
    optimizer.set_learning_rate(lr)
    losses = []
    for _ in range(steps):
        losses.append(float(np.asarray(module(x, y)).reshape(-1)[0]))
        optimizer.step()
        module.lazy_reset_grad()
    return losses


@pytest.mark.slow
@pytest.mark.parametrize("case", list(WEIGHTED_CASES))
def test_ignore_index_and_class_weights_train_as_torch(case, tmp_path):
    from onnxtrain import onnxblock
    make, inputs, labels, options = WEIGHTED_CASES[case]
    rng = np.random.default_rng(1)
    torch.manual_seed(1)
    model = make()
    x, y = inputs(rng), labels(rng)
    names = [n for n, _ in model.named_parameters()]
    loss_block = onnxblock.loss.CrossEntropyLoss(**options)
    arts = generate_artifacts(exported(model, x), requires_grad=names, loss=loss_block, optimizer=OptimType.SGD,
                              artifact_directory=None)
    for file_name, data in arts.items():
        (tmp_path / file_name).write_bytes(data)
    ort_losses = train_losses(ort_api(), tmp_path, x.numpy(), y.astype(np.int64))
    state = api.CheckpointState.load_checkpoint(arts["checkpoint"])
    module = api.Module(arts["training_model.onnx"], state, arts["eval_model.onnx"])
    optimizer = api.Optimizer(arts["optimizer_model.onnx"], module)
    optimizer.set_learning_rate(0.1)
    reference = torch.optim.SGD(model.parameters(), lr=0.1)
    torch_options = {k: (torch.tensor(v) if k == "weight" else v) for k, v in options.items()}
    losses = []
    for _ in range(3):
        loss = float(np.asarray(module(x.numpy(), y.astype(np.int64))).reshape(-1)[0])
        optimizer.step()
        module.lazy_reset_grad()
        reference.zero_grad()
        expected = nn.functional.cross_entropy(model(x), torch.tensor(y), **torch_options)
        expected.backward()
        reference.step()
        assert loss == pytest.approx(float(expected.detach()), rel=1e-5)
        losses.append(loss)
    ours = {n: p.data for n, p in state.parameters}
    for name, parameter in model.named_parameters():
        np.testing.assert_allclose(ours[name], parameter.detach().numpy(), rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(ort_losses, losses, rtol=1e-5, err_msg="onnxruntime-training on our artifacts")


def test_class_weights_take_the_scores_type():
    from onnxtrain import onnxblock
    torch.manual_seed(2)
    model = Segmenter().double()
    x = torch.randn(2, 2, 3, 3, dtype=torch.float64)
    y = np.random.default_rng(2).integers(0, 3, (2, 3, 3))
    weight = [0.5, 2.0, 1.25]  # a plain list, in float64 inside the graph as the scores are
    arts = generate_artifacts(exported(model, x), requires_grad=[n for n, _ in model.named_parameters()],
                              loss=onnxblock.loss.CrossEntropyLoss(weight=weight), optimizer=OptimType.SGD,
                              artifact_directory=None)
    weights = [t for t in ir.load(arts["training_model.onnx"]).graph.initializers if "celoss.weight" in t.name]
    assert len(weights) == 1 and weights[0].data.dtype == np.float64
    state = api.CheckpointState.load_checkpoint(arts["checkpoint"])
    module = api.Module(arts["training_model.onnx"], state, arts["eval_model.onnx"])
    loss = float(np.asarray(module(x.numpy(), y.astype(np.int64))).reshape(-1)[0])
    expected = nn.functional.cross_entropy(model(x), torch.tensor(y), weight=torch.tensor(weight, dtype=torch.float64))
    assert loss == pytest.approx(float(expected.detach()), rel=1e-12)
