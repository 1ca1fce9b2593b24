"""The demo artifact set of the site's first section (site path artifacts/mlp/): a 20-16-5 MLP classifier
(Gemm, Relu, Gemm) with cross-entropy loss and AdamW, made by onnxtrain's own generate_artifacts.

The forward model is tests/ort_cases.py's ``mlp(n_in=20, hidden=16, n_out=5)`` (the "mlp_ce_adamw" case: same
names, shapes, seed and initial weights), built here with onnxtrain.ir, so that onnxruntime-training's own set for
that case is a reference for this one."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from onnxtrain import artifacts
from onnxtrain.ir import Attribute, AttrType, Graph, Model, Node, Tensor, TensorType, ValueInfo
from onnxtrain.ir.dtypes import DataType

FILES = ["training_model.onnx", "eval_model.onnx", "optimizer_model.onnx", "checkpoint"]
N_IN, HIDDEN, N_OUT, SEED = 20, 16, 5, 0


def forward_model() -> Model:
    """input float32 [batch, 20] -> fc1 (Gemm) -> Relu -> fc2 (Gemm) -> output float32 [batch, 5]; weights drawn
    as ort_cases draws them (standard normal times 1/sqrt(fan-in), biases times 0.1)."""
    rng = np.random.default_rng(SEED)

    def init(name, shape, scale):
        return Tensor(name, (rng.standard_normal(shape) * scale).astype(np.float32), DataType.FLOAT)

    inits = [init("fc1.weight", (HIDDEN, N_IN), N_IN ** -0.5), init("fc1.bias", (HIDDEN,), 0.1),
             init("fc2.weight", (N_OUT, HIDDEN), HIDDEN ** -0.5), init("fc2.bias", (N_OUT,), 0.1)]
    trans_b = {"transB": Attribute("transB", AttrType.INT, 1)}
    nodes = [Node("Gemm", ["input", "fc1.weight", "fc1.bias"], ["fc1_out"], name="fc1", attributes=dict(trans_b)),
             Node("Relu", ["fc1_out"], ["hidden"], name="relu1"),
             Node("Gemm", ["hidden", "fc2.weight", "fc2.bias"], ["output"], name="fc2", attributes=dict(trans_b))]
    graph = Graph(name="mlp", nodes=nodes, initializers=inits,
                  inputs=[ValueInfo("input", TensorType(DataType.FLOAT, ["batch", N_IN]))],
                  outputs=[ValueInfo("output", TensorType(DataType.FLOAT, ["batch", N_OUT]))])
    return Model(graph=graph, ir_version=8, opset_imports={"": 17}, producer_name="onnxtrain")


def build(dest: Path) -> dict:
    """The four artifacts in ``dest``; the manifest entry's recipe-specific part."""
    forward = forward_model()
    artifacts.generate_artifacts(forward, requires_grad=[t.name for t in forward.graph.initializers],
                                 loss=artifacts.LossType.CrossEntropyLoss, optimizer=artifacts.OptimType.AdamW,
                                 artifact_directory=str(dest))
    return {"kind": "training artifacts",
            "description": f"a {N_IN}-{HIDDEN}-{N_OUT} MLP classifier (Gemm, Relu, Gemm), cross-entropy loss, "
                           "AdamW; initial weights from a seeded generator (seed 0)",
            "made_by": "onnxtrain.artifacts.generate_artifacts", "files": FILES}
