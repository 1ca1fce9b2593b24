"""Whole-model gradients against PyTorch autograd, on models exported with torch.onnx.export."""
import io
import warnings

import numpy as np
import pytest
import torch
from torch import nn

from onnxtrain import ir
from onnxtrain.autodiff import build_gradient_graph
from onnxtrain.ir.model import Node, TensorType, ValueInfo
from onnxtrain.runtime import Session


class CNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(2, 4, 3, padding=1)
        self.bn = nn.BatchNorm2d(4)
        self.pool = nn.MaxPool2d(2)
        self.drop = nn.Dropout(0.0)
        self.fc = nn.Linear(4 * 3 * 3, 5)

    def forward(self, x):
        h = self.pool(torch.relu(self.bn(self.conv(x))))
        return self.fc(self.drop(torch.flatten(h, 1)))


class Block(nn.Module):
    """A small transformer block: embedding, LayerNorm, single-head attention, GELU feed-forward."""

    def __init__(self, vocab=11, dim=8):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.norm1 = nn.LayerNorm(dim)
        self.q, self.k, self.v = nn.Linear(dim, dim), nn.Linear(dim, dim), nn.Linear(dim, dim)
        self.norm2 = nn.LayerNorm(dim)
        self.ff1, self.ff2 = nn.Linear(dim, 2 * dim), nn.Linear(2 * dim, dim)
        self.scale = dim ** -0.5

    def forward(self, tokens):
        x = self.embed(tokens)
        h = self.norm1(x)
        att = torch.softmax(self.q(h) @ self.k(h).transpose(1, 2) * self.scale, dim=-1)
        x = x + att @ self.v(h)
        return x + self.ff2(nn.functional.gelu(self.ff1(self.norm2(x))))


class EinsumAttention(nn.Module):
    """Single-head attention written with torch.einsum (exported as Einsum nodes)."""

    def __init__(self, vocab=9, dim=6):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.q, self.k, self.v, self.out = (nn.Linear(dim, dim) for _ in range(4))
        self.scale = dim ** -0.5  # a Python float: x.shape[-1] ** -0.5 would export as a float32 Pow

    def forward(self, tokens):
        x = self.embed(tokens)
        scores = torch.einsum("bqd,bkd->bqk", self.q(x), self.k(x)) * self.scale
        mixed = torch.einsum("bqk,bkd->bqd", torch.softmax(scores, dim=-1), self.v(x))
        return self.out(mixed).mean(dim=1)


class MultiheadAttention(nn.Module):
    """nn.MultiheadAttention over embedded tokens (its export computes head sizes from Shape, with Mod and Div)."""

    def __init__(self, vocab=9, dim=6):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.attention = nn.MultiheadAttention(dim, 2, batch_first=True)
        self.head = nn.Linear(dim, 3)

    def forward(self, tokens):
        x = self.embed(tokens)
        return self.head(self.attention(x, x, x)[0] + x)


class Statistics(nn.Module):
    """Reductions and indexing torch code uses on features: normalize, logsumexp, cumsum, topk, standardize with
    std, elementwise maximum, clamp, tril, amax and prod."""

    def __init__(self):
        super().__init__()
        self.features, self.head = nn.Linear(5, 6), nn.Linear(47, 3)

    def forward(self, x):
        h = self.features(x)
        standardized = (h - h.mean(1, keepdim=True)) / h.std(1, keepdim=True)
        parts = [nn.functional.normalize(h, dim=1), torch.logsumexp(h, 1, keepdim=True), h.cumsum(1),
                 h.topk(3, 1)[0], standardized, torch.maximum(h, h.flip(0)), h.clamp(-0.5, 0.5), h.tril(1)[:, :6],
                 h.amax(1, keepdim=True), h.prod(1, keepdim=True), h[:, :5].roll(1, 1)]
        return self.head(torch.cat(parts, 1))


class Recurrent(nn.Module):
    """One nn.LSTM, nn.GRU or nn.RNN layer; the head reads every step's output, the final hidden state (of the
    first direction) and (LSTM) the final cell state."""

    def __init__(self, cell, batch_first, width=3):
        super().__init__()
        self.rnn, self.batch_first = cell(4, 3, batch_first=batch_first), batch_first
        self.steps, self.final = nn.Linear(width, 2), nn.Linear(3, 2)

    def forward(self, x):
        y, state = self.rnn(x)
        finals = state if isinstance(state, tuple) else (state,)
        return self.steps(y).mean(1 if self.batch_first else 0) + sum(self.final(f[0]) for f in finals)


MODELS = {
    "mlp": (lambda: nn.Sequential(nn.Linear(6, 8), nn.Tanh(), nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 3)),
            lambda g: torch.randn(5, 6, generator=g)),
    "cnn-batchnorm-dropout-pool": (CNN, lambda g: torch.randn(3, 2, 6, 6, generator=g)),
    "transformer-block": (Block, lambda g: torch.randint(0, 11, (2, 5), generator=g)),
    # HardSigmoid, Selu and Celu are left to the finite-difference cases: their exported attributes are float32
    # (alpha 1/6 becomes 0.16666667), so the ONNX model's exact gradient differs from torch's by more than 1e-7
    "mobilenetv3-style-activations": (
        lambda: nn.Sequential(nn.Conv2d(2, 4, 3, padding=1), nn.PReLU(4), nn.Conv2d(4, 4, 3, padding=1, groups=4),
                              nn.Hardswish(), nn.Mish(), nn.Softplus(), nn.Softsign(), nn.Flatten(),
                              nn.Linear(4 * 5 * 5, 3)),
        lambda g: 3 * torch.randn(2, 2, 5, 5, generator=g)),
    "groupnorm-instancenorm-convnet": (
        lambda: nn.Sequential(nn.Conv2d(2, 6, 3, padding=1), nn.GroupNorm(3, 6), nn.ReLU(),
                              nn.Conv2d(6, 4, 3, padding=1), nn.InstanceNorm2d(4, affine=True), nn.SiLU(),
                              nn.Conv2d(4, 4, 1), nn.GroupNorm(1, 4), nn.Flatten(), nn.Linear(4 * 4 * 4, 3)),
        lambda g: torch.randn(3, 2, 4, 4, generator=g)),
    "upsampling-nearest-bilinear": (
        lambda: nn.Sequential(nn.Conv2d(2, 3, 3, padding=1), nn.Upsample(scale_factor=2, mode="nearest"),
                              nn.Conv2d(3, 3, 3, padding=1), nn.Upsample(scale_factor=2, mode="bilinear"),
                              nn.Conv2d(3, 2, 3, stride=2)),
        lambda g: torch.randn(2, 2, 3, 3, generator=g)),
    "embedding-bag-of-words": (
        lambda: nn.Sequential(nn.Embedding(13, 5), nn.Flatten(), nn.Linear(4 * 5, 6), nn.Tanh(), nn.Linear(6, 2)),
        lambda g: torch.tensor([[1, 4, 4, 12], [0, 7, 3, 1], [5, 5, 5, 5]])),
    "pixelshuffle-superresolution": (
        lambda: nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(), nn.Conv2d(8, 2 * 4, 3, padding=1),
                              nn.PixelShuffle(2), nn.Conv2d(2, 1, 3, padding=1)),
        lambda g: torch.randn(2, 1, 4, 3, generator=g)),
    "einsum-attention": (EinsumAttention, lambda g: torch.randint(0, 9, (2, 5), generator=g)),
    "reflection-padding-ceil-avgpool": (
        lambda: nn.Sequential(nn.ReflectionPad2d(1), nn.Conv2d(2, 3, 3), nn.ReplicationPad2d((1, 0, 2, 1)),
                              nn.Conv2d(3, 3, 2), nn.AvgPool2d(3, 2, padding=1, ceil_mode=True, count_include_pad=False),
                              nn.Flatten(), nn.Linear(3 * 5 * 3, 2)),
        lambda g: torch.randn(2, 2, 6, 5, generator=g)),
    "multihead-attention": (MultiheadAttention, lambda g: torch.randint(0, 9, (2, 4), generator=g)),
    "reductions-and-indexing": (Statistics, lambda g: torch.randn(4, 5, generator=g)),
    "lstm": (lambda: Recurrent(nn.LSTM, False), lambda g: torch.randn(5, 3, 4, generator=g)),
    "lstm-batch-first": (lambda: Recurrent(nn.LSTM, True), lambda g: torch.randn(3, 5, 4, generator=g)),
    "gru": (lambda: Recurrent(nn.GRU, False), lambda g: torch.randn(5, 3, 4, generator=g)),
    "gru-batch-first": (lambda: Recurrent(nn.GRU, True), lambda g: torch.randn(3, 5, 4, generator=g)),
    "rnn-tanh": (lambda: Recurrent(nn.RNN, False), lambda g: torch.randn(5, 3, 4, generator=g)),
    "rnn-relu-bidirectional-batch-first": (
        lambda: Recurrent(lambda i, h, batch_first: nn.RNN(i, h, nonlinearity="relu", bidirectional=True,
                                                           batch_first=batch_first), True, 6),
        lambda g: torch.randn(3, 5, 4, generator=g)),
}


def export(module, example, dynamic_batch=False, opset=17):
    buf = io.BytesIO()
    with warnings.catch_warnings():  # the TorchScript exporter (as the issue asks for) warns that it is legacy
        warnings.simplefilter("ignore")
        torch.onnx.export(module, (example,), buf, dynamo=False, opset_version=opset, input_names=["input"],
                          output_names=["output"], training=torch.onnx.TrainingMode.TRAINING,
                          do_constant_folding=False, keep_initializers_as_inputs=False,
                          dynamic_axes={"input": {0: "batch"}, "output": {0: "batch"}} if dynamic_batch else None)
    return ir.load(buf.getvalue())


@pytest.mark.slow
@pytest.mark.parametrize("opset", [17, 14, 18])
@pytest.mark.parametrize("name", MODELS)
def test_parameter_gradients_match_torch(name, opset):
    make, data = MODELS[name]
    g = torch.Generator().manual_seed(0)
    torch.manual_seed(0)
    module = make().double()
    module.train()
    x = data(g)
    x = x.double() if x.is_floating_point() else x
    model = export(module, x, opset=opset)
    out = module(x)
    weights = torch.randn(out.shape, generator=g, dtype=torch.float64)
    (out * weights).sum().backward()

    # loss = ReduceSum(output * w), as in torch above
    graph = model.graph
    graph.inputs.append(ValueInfo("w", TensorType(11, list(out.shape))))
    graph.nodes += [Node("Mul", ["output", "w"], ["weighted"], name="weigh"),
                    Node("ReduceSum", ["weighted"], ["loss"], name="loss_sum",
                         attributes={"keepdims": ir.Attribute("keepdims", ir.AttrType.INT, 0)})]
    graph.outputs = [ValueInfo("loss", TensorType(11, []))]
    torch_params = dict(module.named_parameters())
    params = [t.name for t in graph.initializers if t.name in torch_params]
    assert len(params) == len(torch_params), "the exporter renamed parameters"
    grads = Session(build_gradient_graph(model, "loss", params))
    feeds = {"input": x.numpy(), "w": weights.numpy()}
    got = dict(zip(grads.output_names, grads.run(feeds)))
    for name_ in params:
        np.testing.assert_allclose(got[f"{name_}_grad"], torch_params[name_].grad.numpy(), rtol=1e-7, atol=1e-10,
                                   err_msg=name_)


@pytest.mark.slow
@pytest.mark.parametrize("name", MODELS)
def test_artifacts_train_alike_in_onnxtrain_and_onnxruntime(name, tmp_path):
    """generate_artifacts on the exported model (float32, batch axis named, MSE to a random target):
    onnxruntime-training 1.19.2 runs our gradient graph and trains to the same losses as onnxtrain."""
    from onnxtrain import api
    from onnxtrain.artifacts import LossType, OptimType, generate_artifacts
    from ort_cases import ort_api
    make, data = MODELS[name]
    g = torch.Generator().manual_seed(1)
    torch.manual_seed(1)
    module = make().train()
    x = data(g)
    model = export(module, x, dynamic_batch=True)
    target = torch.randn(module(x).shape, generator=g).numpy()
    arts = generate_artifacts(ir.to_bytes(model), requires_grad=[n for n, _ in module.named_parameters()],
                              loss=LossType.MSELoss, optimizer=OptimType.SGD, artifact_directory=None)
    for file_name, content in arts.items():
        (tmp_path / file_name).write_bytes(content)

    def losses(api_):
        state = api_.CheckpointState.load_checkpoint(str(tmp_path / "checkpoint"))
        trainer = api_.Module(str(tmp_path / "training_model.onnx"), state, str(tmp_path / "eval_model.onnx"))
        optimizer = api_.Optimizer(str(tmp_path / "optimizer_model.onnx"), trainer)
        optimizer.set_learning_rate(0.05)
        out = []
        for _ in range(3):
            out.append(float(np.asarray(trainer(x.numpy(), target)).reshape(-1)[0]))
            optimizer.step()
            trainer.lazy_reset_grad()
        return out

    ours = losses(api)
    np.testing.assert_allclose(losses(ort_api()), ours, rtol=2e-5)
    assert ours[-1] < ours[0]


@pytest.mark.parametrize("cell", [nn.LSTM, nn.GRU])
def test_bidirectional_recurrent_gradient_is_refused_by_name(cell):
    """onnxruntime-training's LSTMGrad and GRUGrad run the forward direction only, and so does onnxtrain."""
    module = cell(4, 3, bidirectional=True).double()
    model = export(nn.Sequential(module), torch.randn(5, 2, 4, dtype=torch.float64))
    graph = model.graph
    out = graph.outputs[0].name
    graph.nodes.append(Node("ReduceSum", [out], ["loss"], name="loss_sum",
                            attributes={"keepdims": ir.Attribute("keepdims", ir.AttrType.INT, 0)}))
    graph.outputs = [ValueInfo("loss", TensorType(11, []))]
    params = [t.name for t in graph.initializers if "weight" in t.name]
    with pytest.raises(NotImplementedError, match="direction 'bidirectional'"):
        build_gradient_graph(model, "loss", params)
