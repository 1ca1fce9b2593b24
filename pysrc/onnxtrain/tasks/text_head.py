"""The head of the text task (and of the audio task, on its speech embeddings): the embedding L2-normalized (as
sentence-transformers' Normalize) then a Gemm to the classes, started from a linear probe (softmax regression on
the cached embeddings)."""
from __future__ import annotations

import numpy as np

from ..ir.builder import GraphBuilder
from ..ir.dtypes import DataType
from ..ir.model import Graph, Model, Tensor, TensorType, ValueInfo

EPS = 1e-12          # torch.nn.functional.normalize's
PROBE_STEPS = 300    # full-batch gradient steps of the probe
PROBE_RATE = 2.0     # its step size: below 2 / (the largest curvature), which is at most 1/2 for unit rows


def normalized(x: np.ndarray) -> np.ndarray:
    return x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), EPS)


def linear_probe(embeddings: np.ndarray, labels: np.ndarray, classes: int) -> tuple:
    """(weight [classes, H], bias [classes]) of a softmax regression on the normalized ``embeddings``, fitted by
    PROBE_STEPS steps of gradient descent from zeros (deterministic; the few steps keep it from overfitting a few
    examples to certainty)."""
    x = normalized(embeddings.astype(np.float64))
    target = np.eye(classes)[labels]
    w, b = np.zeros((classes, x.shape[1])), np.zeros(classes)
    for _ in range(PROBE_STEPS):
        scores = x @ w.T + b
        p = np.exp(scores - scores.max(axis=1, keepdims=True))
        error = (p / p.sum(axis=1, keepdims=True) - target) / len(x)
        w -= PROBE_RATE * error.T @ x
        b -= PROBE_RATE * error.sum(axis=0)
    return w.astype(np.float32), b.astype(np.float32)


def head_model(classes: int, hidden: int, start: tuple) -> Model:
    """``embedding`` [N, hidden] -> L2-normalized -> Gemm (``head.weight`` [classes, hidden], ``head.bias``, from
    ``start``) -> ``output`` [N, classes]."""
    weight, bias = start
    g = Graph(name="head", inputs=[ValueInfo("embedding", TensorType(DataType.FLOAT, ["N", hidden]))],
              outputs=[ValueInfo("output", TensorType(DataType.FLOAT, ["N", classes]))],
              initializers=[Tensor("head.weight", np.asarray(weight, np.float32), DataType.FLOAT),
                            Tensor("head.bias", np.asarray(bias, np.float32), DataType.FLOAT)])
    b = GraphBuilder(g)
    b.scope = "head"
    x = "embedding"
    norm = b.op("Sqrt", [b.op("ReduceSum", [b.op("Mul", [x, x]), b.ints([1], "axis")], keepdims=1)])
    unit = b.op("Div", [x, b.op("Max", [norm, b.const(np.float32(EPS), "eps")])])
    b.op("Gemm", [unit, "head.weight", "head.bias"], outputs=["output"], transB=1)
    return Model(graph=g, ir_version=8, opset_imports={"": 17}, producer_name="onnxtrain")
