"""A native client's local round: the global vector into the model, its accuracy on the local data, local
training (epochs of shuffled batches, FedProx's proximal step after each optimizer step when mu > 0), and the
trained vector with its metrics.  Two backends over the same artifacts: onnxtrain (the Trainer) and
onnxruntime-training 1.19.2 (its Module and Optimizer, imported only here)."""
from __future__ import annotations

import os

import numpy as np

from ..api import Optimizer
from ..ir.ort_names import CHECKPOINT, EVAL_MODEL, OPTIMIZER_MODEL, TRAINING_MODEL
from ..train import Trainer
from ..train.settings import camel, round_settings
from .model import FederatedModel, accuracy, input_types, read_csv

BACKENDS = ("onnxtrain", "onnxruntime")


def metrics_of(examples: int, before: dict, after: dict) -> dict:
    """The reply's metrics: the rows, the trained model's loss and accuracy and the received one's accuracy."""
    out = {"num-examples": int(examples), "loss": after["loss"]}
    if after["accuracy"] is not None:
        out["accuracy"] = after["accuracy"]
    if before["accuracy"] is not None:
        out["global-accuracy"] = before["accuracy"]
    return out


def train_onnxtrain(folder: str, data_path: str, vector: np.ndarray, settings: dict, seed: int) -> tuple:
    """(trained vector, metrics) with onnxtrain's Trainer."""
    model = FederatedModel(folder)
    data = read_csv(data_path, model.types)
    before = model.evaluate(vector, data)  # leaves ``vector`` in the module
    optimizer = Optimizer(model.files[OPTIMIZER_MODEL], model.module)
    trainer = Trainer(model.module, optimizer, data, seed=seed, keep_best=False,
                      **round_settings(settings, camel))
    trainer.run()
    trained = model.module.get_contiguous_parameters(trainable_only=True).copy()
    after = model.evaluate(trained, data)
    return trained, metrics_of(len(data[model.train_inputs[0]]), before, after)


def train_onnxruntime(folder: str, data_path: str, vector: np.ndarray, settings: dict, seed: int) -> tuple:
    """(trained vector, metrics) with onnxruntime-training's Module and Optimizer, batches drawn as the Trainer
    draws them."""
    from onnxruntime import OrtValue
    from onnxruntime.training.api import CheckpointState, Module, Optimizer as OrtOptimizer

    def path(name: str) -> str:
        return os.path.join(folder, name)

    state = CheckpointState.load_checkpoint(path(CHECKPOINT))
    module = Module(path(TRAINING_MODEL), state, path(EVAL_MODEL))
    optimizer = OrtOptimizer(path(OPTIMIZER_MODEL), module)
    names = module.input_names()
    with open(path(TRAINING_MODEL), "rb") as f:
        data = read_csv(data_path, input_types(f.read(), names))
    arrays = [data[n] for n in names]

    def put(v: np.ndarray) -> None:  # 1.19.2's wrapper passes an OrtValue through: hand it the C object
        module.copy_buffer_to_parameters(OrtValue.ortvalue_from_numpy(np.ascontiguousarray(v))._ortvalue, True)

    def get() -> np.ndarray:
        return module.get_contiguous_parameters(True).numpy().copy()

    def evaluate() -> dict:
        module.eval()
        out = module(*arrays)
        module.train()
        out = out if isinstance(out, (list, tuple)) else [out]
        logits = np.asarray(out[1]) if len(out) > 1 else None
        return {"loss": float(np.asarray(out[0]).reshape(-1)[0]),
                "accuracy": None if logits is None else accuracy(logits, arrays[-1])}

    put(vector.astype(np.float32))
    before = evaluate()
    settings = round_settings(settings, camel)
    rate, mu = settings["learning_rate"], settings["proximal_mu"]
    optimizer.set_learning_rate(rate)
    start, scale = get(), np.float32(rate * mu)
    rng, n, size = np.random.default_rng(seed), len(arrays[0]), settings["batch_size"]
    module.train()
    for _ in range(settings["epochs"]):
        order = rng.permutation(n)
        for i in range(0, n, size):
            rows = order[i:i + size]
            module(*[a[rows] for a in arrays])
            optimizer.step()
            module.lazy_reset_grad()
            if mu:
                w = get()
                w -= scale * (w - start)
                put(w)
    trained = get()
    return trained, metrics_of(n, before, evaluate())


def train_round(backend: str, folder: str, data_path: str, vector: np.ndarray, settings: dict, seed: int) -> tuple:
    """(trained vector, metrics) of one local round with ``backend`` (onnxtrain or onnxruntime)."""
    if backend == "onnxtrain":
        return train_onnxtrain(folder, data_path, vector, settings, seed)
    if backend == "onnxruntime":
        return train_onnxruntime(folder, data_path, vector, settings, seed)
    raise ValueError(f"unknown backend {backend!r}; choose one of {list(BACKENDS)}")
