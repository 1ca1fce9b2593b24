"""The federation demo (site path artifacts/federated_digits/): two artifact sets for scikit-learn's 8x8 digits,
made by onnxtrain's generate_artifacts with cross-entropy and SGD (no optimizer state, so a client that starts
afresh each round trains like one that keeps its session), and the digits split into a held-out test set and
eight disjoint, non-IID client files.

- mlp/: features float32 [batch, 64] -> 64-32-10 MLP; cnn/: input float32 [batch, 1, 8, 8] -> two 3x3
  convolutions (8 and 16 channels, each with ReLU and 2x2 max pooling) -> Gemm.  The logits ``output``
  [batch, 10] are an extra output of the training and eval models, so a client can measure accuracy.
- data/client_<k>.csv (k = 0..7) and data/test.csv: header p0..p63,labels; the 64 pixels divided by 16 (0..1) and
  the digit.  test.csv is a random fifth of the digits; the rest is split class by class in Dirichlet(1.0)
  proportions over the eight clients (class skew: a client has a few digits far more often than others)."""
from __future__ import annotations

import io
from pathlib import Path

import numpy as np
from sklearn.datasets import load_digits

from onnxtrain.tasks.images import cnn_model
from onnxtrain.tasks.tabular import mlp_model
from onnxtrain.tasks.training import make_artifacts

ARTIFACTS = ["training_model.onnx", "eval_model.onnx", "optimizer_model.onnx", "checkpoint"]
CLIENTS, ALPHA, TEST_FRACTION, SEED = 8, 1.0, 0.2, 0
FILES = ([f"{m}/{a}" for m in ("mlp", "cnn") for a in ARTIFACTS]
         + [f"data/client_{k}.csv" for k in range(CLIENTS)] + ["data/test.csv"])


def models() -> dict:
    """The two forward models by folder name."""
    return {"mlp": mlp_model(64, [32], 10, SEED), "cnn": cnn_model(8, 10, channels=(8, 16), seed=SEED, in_channels=1)}


def split(y: np.ndarray) -> tuple:
    """Row indices: (test, [client_0, ... client_7]), disjoint, each sorted."""
    rng = np.random.default_rng(SEED)
    order = rng.permutation(len(y))
    n_test = int(len(y) * TEST_FRACTION)
    test, rest = order[:n_test], order[n_test:]
    clients = [[] for _ in range(CLIENTS)]
    for digit in range(10):
        rows = rest[y[rest] == digit]
        shares = rng.dirichlet(np.full(CLIENTS, ALPHA))
        for k, part in enumerate(np.split(rows, (np.cumsum(shares) * len(rows)).astype(int)[:-1])):
            clients[k].extend(part.tolist())
    return np.sort(test), [np.sort(np.array(c, dtype=np.int64)) for c in clients]


def csv_bytes(x: np.ndarray, y: np.ndarray) -> bytes:
    out = io.StringIO()
    out.write(",".join([f"p{i}" for i in range(x.shape[1])] + ["labels"]) + "\n")
    for row, label in zip(x, y):
        out.write(",".join(f"{v:g}" for v in row) + f",{int(label)}\n")
    return out.getvalue().encode()


def build(dest: Path) -> dict:
    for name, forward in models().items():
        (dest / name).mkdir()
        for file, data in make_artifacts(forward, "CrossEntropyLoss", "SGD", extra_outputs=["output"]).items():
            (dest / name / file).write_bytes(data)
    digits = load_digits()
    x, y = digits.data / 16, digits.target
    test, clients = split(y)
    (dest / "data").mkdir()
    (dest / "data" / "test.csv").write_bytes(csv_bytes(x[test], y[test]))
    for k, rows in enumerate(clients):
        (dest / "data" / f"client_{k}.csv").write_bytes(csv_bytes(x[rows], y[rows]))
    return {"kind": "training artifacts and data splits",
            "description": "federated learning demo: a 64-32-10 MLP (mlp/) and a small CNN (cnn/) for 8x8 digits, "
                           "cross-entropy + SGD, logits as extra output; scikit-learn's digits split into "
                           f"test.csv ({len(test)} rows) and {CLIENTS} non-IID client files (Dirichlet({ALPHA}) class "
                           f"shares; rows {[len(c) for c in clients]})",
            "made_by": "onnxtrain.artifacts.generate_artifacts",
            "data": "scikit-learn's load_digits (bundled; a copy of the UCI Optical Recognition of Handwritten "
                    "Digits test set)",
            "license": "MIT (onnxtrain's own); the digits: UCI Machine Learning Repository, CC BY 4.0",
            "files": FILES}
