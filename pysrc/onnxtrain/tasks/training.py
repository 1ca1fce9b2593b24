"""What the tasks share to train: the artifacts of a forward model, a run over them (``Run``: a Trainer and the
artifacts' bytes), the trained weights, predictions and classification metrics.

A task makes its run with a factory ``run(artifacts, train, validation, seed)``, by default ``Run`` on the task's
``device`` (``run_factory``); what it uses of the run is ``module``, ``optimizer``, ``epoch``,
``step(batch_size, learning_rate)``, ``validation_loss(chunk)``, ``checkpoint(properties)`` and ``restore(data)``.
"""
from __future__ import annotations

import functools

import numpy as np

from .. import artifacts, ir
from ..api import CheckpointState, Module, Optimizer
from ..ir.dtypes import DataType
from ..ir.model import Model, Tensor
from ..ir.ort_names import CHECKPOINT, EVAL_MODEL, OPTIMIZER_MODEL, TRAINING_MODEL
from ..runtime import Session
from ..train import Trainer
from ..train.archive import artifacts_zip


def make_artifacts(forward: Model, loss: str, optimizer: str = "AdamW", trainable=None, extra_outputs=None,
                   frozen=None) -> dict:
    """``generate_artifacts``' dict of bytes for ``forward``, training the initializers named in ``trainable``
    (default all) and keeping those named in ``frozen`` (default all the others) as frozen parameters in the
    checkpoint (the rest stay initializers of the models); ``loss`` and ``optimizer`` are LossType and OptimType
    names; ``extra_outputs`` are forward outputs the training and eval models also give."""
    names = [t.name for t in forward.graph.initializers]
    trainable = names if trainable is None else list(trainable)
    frozen = [n for n in names if n not in trainable] if frozen is None else list(frozen)
    return artifacts.generate_artifacts(forward, requires_grad=trainable, frozen_params=frozen,
                                        loss=artifacts.enum_member(artifacts.LossType, loss),
                                        optimizer=artifacts.enum_member(artifacts.OptimType, optimizer),
                                        additional_output_names=extra_outputs)


class Run:
    """One training run over ``make_artifacts``' artifacts (``arts``): the Trainer of its Module and Optimizer on the
    data (arrays in the training model's input order), on ``device`` ("cpu" or "webgpu"; a task takes
    ``run=functools.partial(Run, device="webgpu")``), and the artifacts' bytes, for ``artifacts_zip``.  ``options``
    are the Trainer's (epochs, batch_size, learning_rate, evaluate, ...), epochs None by default."""

    def __init__(self, arts: dict, train, validation=None, seed: int = 0, device: str = "cpu", **options):
        self.artifacts = arts
        self.state = CheckpointState.load_checkpoint(arts[CHECKPOINT])
        module = Module(arts[TRAINING_MODEL], self.state, arts.get(EVAL_MODEL), device=device)
        optimizer = Optimizer(arts[OPTIMIZER_MODEL], module)
        options.setdefault("epochs", None)
        self.trainer = Trainer(module, optimizer, train, validation=validation, seed=seed, **options)

    @property
    def module(self):
        return self.trainer.module

    @property
    def optimizer(self):
        return self.trainer.optimizer

    @property
    def epoch(self) -> int:
        return self.trainer.epoch

    def step(self, batch_size: int = None, learning_rate: float = None) -> dict:
        """One batch (Trainer.step): its record."""
        return self.trainer.step(batch_size, learning_rate)

    def validation_loss(self, chunk: int = None):
        return self.trainer.validation_loss(chunk)

    def checkpoint(self, properties: dict = None) -> bytes:
        """The run so far (Trainer.checkpoint)."""
        return self.trainer.checkpoint(properties)

    def restore(self, data, best=None) -> int:
        """Continue a run saved by ``checkpoint``; with ``best``, the bytes of its ``best_checkpoint()``."""
        return self.trainer.restore(data, best)

    def restore_best(self, best) -> int:
        return self.trainer.restore_best(best)

    def artifacts_zip(self) -> bytes:
        """The artifacts with the run's state as their checkpoint, as .zip bytes, to go on training elsewhere."""
        return artifacts_zip(self.artifacts, self.checkpoint(), self.epoch)


def run_factory(run=None, device: str = "cpu"):
    """A task's factory of runs: ``run``, or else Run on ``device``."""
    return run if run is not None else functools.partial(Run, device=device)


def inference_model(module, output: str = "output") -> Model:
    """The module's inference model (the eval graph with the current weights) giving ``output``."""
    return ir.load(module.export_model_for_inferencing(None, [output]))


def with_weights(forward: Model, module) -> Model:
    """``forward`` with its initializers' values from the module's current parameters."""
    trained = {t.name: t.data for t in inference_model(module).graph.initializers}
    forward.graph.initializers = [Tensor(t.name, trained[t.name].copy(), DataType.FLOAT) if t.name in trained else t
                                  for t in forward.graph.initializers]
    return forward


def predict(module, x, output: str = "output", chunk: int = 256) -> np.ndarray:
    """The inference model's ``output`` for the rows of ``x`` (an array, or a list of arrays: the model's
    inputs), ``chunk`` rows at a time."""
    session = Session(inference_model(module, output))
    inputs = x if isinstance(x, list) else [x]
    return np.concatenate([session.run([a[i:i + chunk] for a in inputs])[0]
                           for i in range(0, len(inputs[0]), chunk)])


def probabilities(logits: np.ndarray) -> list:
    """Softmax of one row of scores, as a list of floats."""
    logits = np.asarray(logits, np.float64)
    p = np.exp(logits - logits.max())
    return (p / p.sum()).tolist()


def classification_metrics(logits: np.ndarray, y: np.ndarray, n_classes: int) -> dict:
    """Accuracy, the most-common-class baseline and the confusion matrix (rows: true class)."""
    pred = logits.argmax(axis=1)
    confusion = np.zeros((n_classes, n_classes), dtype=int)
    np.add.at(confusion, (y.astype(np.intp), pred.astype(np.intp)), 1)
    return {"accuracy": float(np.mean(pred == y)), "confusion": confusion.tolist(),
            "baseline": float(np.max(np.bincount(y.astype(np.intp), minlength=n_classes)) / len(y))}
