"""Handwriting: personalising a pretrained digit classifier with the user's 8x8 drawings (values 0..16, as
scikit-learn's digits); new classes added to the head, fine-tuning of the head or the whole model, live
predictions."""
from __future__ import annotations

import io

import numpy as np

from ..ir import load as ir_load, to_bytes
from ..ir.dtypes import DataType
from ..ir.model import Node, Tensor, TensorType, ValueInfo
from ..runtime import Session
from ..train.data import DataError
from .checks import class_name, show, whole
from .head import classes_doc, with_head
from .tabular import mlp_model
from .training import Run, make_artifacts, probabilities, run_factory, with_weights

HEAD = ("fc2.weight", "fc2.bias")
MAX_CLASSES = 50


def pretrain(x: np.ndarray, y: np.ndarray, epochs: int = 30, seed: int = 0, run=Run) -> bytes:
    """A 64-32-10 MLP trained with onnxtrain on digits ``x`` [n, 64] (0..16), ``y`` [n]; the forward model."""
    forward = mlp_model(64, [32], 10, seed)
    training = run(make_artifacts(forward, "CrossEntropyLoss"), [(x / 16).astype(np.float32), y.astype(np.int64)],
                   None, seed)
    while training.epoch < epochs:
        training.step(32, 0.003)
    return to_bytes(with_weights(forward, training.module))


def drawing(pixels) -> np.ndarray:
    """An 8x8 drawing as 64 float32 values in 0..16."""
    try:
        x = np.asarray(pixels, dtype=np.float32).ravel()
    except (TypeError, ValueError) as e:
        raise DataError(f"a drawing is 64 numbers from 0 to 16 ({e})") from None
    if x.size != 64:
        raise DataError(f"a drawing is 8x8 = 64 values, not {x.size}")
    if not np.isfinite(x).all():
        raise DataError(f"a drawing has a non-finite value at pixel {int(np.flatnonzero(~np.isfinite(x))[0])}")
    if x.min() < 0 or x.max() > 16:
        raise DataError(f"a drawing's values run from 0 to 16; this one has {float(x.min()):g} to {float(x.max()):g}")
    return x


class DigitsSession:
    """The pretrained model (ONNX bytes) plus the user's examples; ``replay`` (.npz bytes with ``x`` [n, 64] in
    0..1 and ``y``) are original digits mixed into fine-tuning; ``run`` makes the training run (see
    tasks.training), by default a Run on ``device``."""

    def __init__(self, model: bytes, replay: bytes = None, classes=None, run=None, device: str = "cpu"):
        self.model = ir_load(model)
        self.classes = [str(c) for c in classes] if classes is not None else [str(i) for i in range(10)]
        head = {t.name: t.data.shape for t in self.model.graph.initializers}.get(HEAD[1])
        if head is None or len(head) != 1:
            raise DataError(f"the model has no classifier head ({HEAD[1]} of one axis)")
        if head[0] != len(self.classes):
            raise DataError(f"the model's head has {head[0]} outputs but there are {len(self.classes)} class names")
        self.examples, self.labels = [], []
        self.make_run = run_factory(run, device)
        self.training = None  # the last fine-tuning run
        self.replay = None
        if replay is not None:
            archive = np.load(io.BytesIO(replay))
            self.replay = (archive["x"].astype(np.float32), archive["y"].astype(np.int64))
        self._session = Session(self.model)

    def snapshot(self) -> bytes:
        """Everything the user made (the model, its classes, the drawn examples) as .npz bytes, for ``restore``."""
        buffer = io.BytesIO()
        np.savez(buffer, model=np.frombuffer(to_bytes(self.model), np.uint8), classes=np.array(self.classes, dtype=str),
                 examples=np.array(self.examples, np.float32).reshape(-1, 64), labels=np.array(self.labels, np.int64))
        return buffer.getvalue()

    @classmethod
    def restore(cls, snapshot: bytes, replay: bytes = None, **options) -> "DigitsSession":
        """The session a ``snapshot`` was taken of (``options`` go to the constructor)."""
        try:
            archive = np.load(io.BytesIO(snapshot), allow_pickle=False)
            model, classes = archive["model"].tobytes(), archive["classes"].tolist()
            examples, labels = archive["examples"], archive["labels"]
        except Exception as e:
            raise DataError(f"the saved drawings cannot be read ({e})") from None
        if examples.ndim != 2 or examples.shape[1] != 64 or len(labels) != len(examples) \
                or not np.isfinite(examples).all() or ((labels < 0) | (labels >= len(classes))).any():
            raise DataError(f"the saved drawings cannot be read (examples {list(examples.shape)}, "
                            f"{len(labels)} labels, {len(classes)} classes)")
        session = cls(model, replay, classes, **options)
        session.examples, session.labels = list(examples.astype(np.float32)), [int(v) for v in labels]
        return session

    def add_class(self, name: str) -> int:
        """A new class (an output of the head); its index."""
        name = class_name(name, self.classes)
        if len(self.classes) >= MAX_CLASSES:
            raise DataError(f"there are {len(self.classes)} classes already; at most {MAX_CLASSES}")
        inits = {t.name: t for t in self.model.graph.initializers}
        w, b = inits["fc2.weight"], inits["fc2.bias"]
        rng = np.random.default_rng(len(self.classes))
        w.data = np.vstack([w.data, rng.normal(0, 0.01, (1, w.data.shape[1])).astype(np.float32)])
        b.data = np.concatenate([b.data, np.float32([b.data.min()])])
        self.classes.append(name)
        self.model.graph.outputs[0].type.shape[-1] = len(self.classes)
        self._session = Session(self.model)
        return len(self.classes) - 1

    def add_example(self, pixels, label: int) -> dict:
        """One drawing of class ``label``; the counts per class."""
        x = drawing(pixels)
        index = whole(label, 0, len(self.classes) - 1)
        if index is None:
            raise DataError(f"the label {show(label)} is not a class index from 0 to {len(self.classes) - 1}")
        self.examples.append(x / 16)
        self.labels.append(index)
        return self.counts()

    def counts(self) -> dict:
        """The number of drawn examples per class name."""
        return {c: self.labels.count(i) for i, c in enumerate(self.classes)}

    def predict(self, pixels) -> list:
        """Class probabilities for one 8x8 drawing."""
        x = drawing(pixels).reshape(1, 64) / 16
        return probabilities(self._session.run([x])[0][0])

    def fine_tune(self, epochs: int = 20, learning_rate: float = 0.01, head_only: bool = True) -> dict:
        self.start_fine_tune(head_only)
        while self.epoch < int(epochs):
            self.step(32, float(learning_rate))
        return self.finish_fine_tune()

    def start_fine_tune(self, head_only: bool = True) -> None:
        """Artifacts for the head (or the whole model) and the examples as data; then ``step`` until done and
        ``finish_fine_tune``."""
        if not self.examples:
            raise DataError("draw and add a few examples first")
        x, y = np.stack(self.examples), np.array(self.labels, dtype=np.int64)
        if self.replay is not None:  # keep the original digits in mind while learning the new examples
            rx, ry = self.replay
            x, y = np.concatenate([np.repeat(x, 8, axis=0), rx]), np.concatenate([np.repeat(y, 8), ry])
        arts = make_artifacts(self.model, "CrossEntropyLoss", trainable=HEAD if head_only else None)
        self.training = self.make_run(arts, [x, y], None, 0)
        self.losses = []

    @property
    def epoch(self) -> int:
        return self.training.epoch

    def step(self, batch_size: int, learning_rate: float) -> dict:
        result = self.training.step(batch_size, learning_rate)
        self.losses.append(result["loss"])
        return result

    def finish_fine_tune(self) -> dict:
        """The fine-tuned weights into the model that predicts and exports; the first and last loss of the steps
        taken through ``step`` (None when the run's Trainer was driven directly, as the library's train() does)."""
        self.model = ir_load(to_bytes(with_weights(self.model, self.training.module)))
        self._session = Session(self.model)
        losses = self.losses or [None]
        return {"first_loss": losses[0], "last_loss": losses[-1], "examples": len(self.examples)}

    def exported(self):
        """The classifier taking ``pixels`` float32 [batch, 64] (8x8, values 0..16) -> probabilities, label."""
        scale = Tensor("pre.scale", np.float32([16.0]), DataType.FLOAT)
        nodes = [Node("Div", ["pixels", "pre.scale"], [self.model.graph.inputs[0].name], name="pre.scale")]
        doc = f"Input 'pixels': 8x8 grayscale, row-major, values 0..16 (ink high). {classes_doc(self.classes)}"
        inputs = [ValueInfo("pixels", TensorType(DataType.FLOAT, ["batch", 64]))]
        return with_head(ir_load(to_bytes(self.model)), inputs, nodes, [scale], doc, self.classes)

    def export_model(self) -> bytes:
        return to_bytes(self.exported())
