"""Personalization of a pretrained image backbone (tasks.backbone): the user's classes and photos (camera frames
or files), each embedded once when added and cached (``features``, and ``block`` for fine-tuning); a head trained
on the cache (a Gemm, or with ``fine_tune`` the backbone's last convolution, started from its pretrained weights,
and a Gemm); one exported ONNX model from uint8 pixels of any size to ``probabilities`` and ``label``."""
from __future__ import annotations

import json

import numpy as np

from ..ir import to_bytes
from ..ir.compose import compose
from ..ir.dtypes import DataType
from ..ir.model import Attribute, AttrType, Graph, Model, Node, Tensor, TensorType, ValueInfo
from ..train.data import DataError
from .backbone import Backbone
from .checks import show
from .head import classes_doc, with_head
from .labelled import LabelledSamples
from .preprocess import check_pixels
from .split import stratified_split
from .training import classification_metrics, inference_model, make_artifacts, predict, probabilities, run_factory

class PersonalizeSession(LabelledSamples):
    """Classes, their samples' cached embeddings and a trained head on the backbone (ONNX bytes); ``run`` makes
    the training run (see tasks.training); ``device`` ("cpu" or "webgpu") runs the embeddings, the head's
    training and its predictions."""

    trained = "head"

    def __init__(self, backbone: bytes, run=None, device: str = "cpu"):
        super().__init__(run_factory(run, device), device)
        self.backbone = backbone if isinstance(backbone, Backbone) else Backbone(backbone, device=device)

    def info(self) -> dict:
        """The backbone: its input size, features, block shape, bytes, SHA-256 and source."""
        b = self.backbone
        return {"input_size": b.preprocess["size"], "features": b.features, "block_shape": b.block_shape,
                "backbone_bytes": b.bytes, "backbone_sha256": b.sha256, "source": b.source}

    # ---- samples ----------------------------------------------------------------------------------------

    def add_samples(self, pixels, index) -> list:
        """Images uint8 [n, height, width, 3 or 4] (RGB or RGBA) of class ``index``, embedded now; their ids."""
        i = self._index(index)
        images = check_pixels(pixels, f"the images for class {show(self.names[i])}")
        features, block = self.backbone.embed(images)
        return self._add([(features[k].copy(), block[k].copy()) for k in range(len(images))], [i] * len(images))

    # ---- the head and its run ---------------------------------------------------------------------------

    def setup(self, fine_tune=False, validation=0.0, seed=0, optimizer="AdamW") -> dict:
        """A new run on the samples there are now: the head (a Gemm from the features to the classes, or with
        ``fine_tune`` also the backbone's last convolution) as training artifacts; ``validation`` (0, or above 0
        and below 1) of each class's samples held out.  What the run trains on."""
        return self._setup(validation, seed, {"fine_tune": bool(fine_tune), "optimizer": str(optimizer)})

    def _new_run(self, settings: dict, checkpoint: bytes = None) -> dict:
        """The run ``settings`` describe (its samples' ids and labels, as ``setup`` made them), at ``checkpoint``;
        nothing changes when it cannot be made."""
        fine_tune, share, seed = settings["fine_tune"], settings["validation"], settings["seed"]
        y = np.array(settings["labels"], np.int64)
        x = self._inputs(settings["ids"], fine_tune)
        train, val = stratified_split(y, share, seed) if share else (list(range(len(y))), [])
        forward = self.head_model(fine_tune, seed)
        trainable = [t.name for t in forward.graph.initializers if t.name.startswith("head.")]
        if fine_tune:
            trainable += self.backbone.conv
        arts = make_artifacts(forward, "CrossEntropyLoss", settings["optimizer"], trainable=trainable)
        validation_data = [x[val], y[val]] if val else None
        training = self.make_run(arts, [x[train], y[train]], validation_data, seed)
        if checkpoint is not None:
            training.restore(checkpoint)
        self.training, self.validation, self.settings = training, validation_data, settings
        per_class = lambda rows: np.bincount(y[rows].astype(np.intp), minlength=len(self.names)).tolist()  # noqa
        return {"samples": len(y), "train": len(train), "validation": len(val), "classes": list(self.names),
                "train_per_class": per_class(train), "validation_per_class": per_class(val),
                "fine_tune": fine_tune, "parameters": training.module.get_parameters_size(True)}

    def _inputs(self, ids: list, fine_tune: bool) -> np.ndarray:
        k = 1 if fine_tune else 0
        return np.stack([self.store[s][k] for s in ids]).astype(np.float32)

    def head_model(self, fine_tune: bool, seed: int = 0) -> Model:
        """The forward model trained: ``features`` -> Gemm -> ``output``, or with ``fine_tune`` ``block`` -> the
        backbone's layers to ``features`` -> Gemm -> ``output``."""
        k, f = len(self.names), self.backbone.features
        rng = np.random.default_rng(seed)
        bound = 1 / np.sqrt(f)
        inits = [Tensor("head.weight", rng.uniform(-bound, bound, (k, f)).astype(np.float32), DataType.FLOAT),
                 Tensor("head.bias", np.zeros(k, np.float32), DataType.FLOAT)]
        gemm = Node("Gemm", ["features", "head.weight", "head.bias"], ["output"], name="head.gemm",
                    attributes={"transB": Attribute("transB", AttrType.INT, 1)})
        graph = Graph(name="head", nodes=[gemm], initializers=inits,
                      inputs=[ValueInfo("features", TensorType(DataType.FLOAT, ["batch", f]))],
                      outputs=[ValueInfo("output", TensorType(DataType.FLOAT, ["batch", k]))])
        head = Model(graph=graph, ir_version=8, opset_imports={"": 17}, producer_name="onnxtrain")
        if not fine_tune:
            return head
        tail = self.backbone.tail
        return compose(tail, head, {"features": "features"})

    def evaluate(self) -> dict:
        """Accuracy, baseline and confusion matrix on the validation samples (on the training samples when there
        is no validation), and the validation loss."""
        run = self._run()
        if self.validation is not None:
            x, y = self.validation
            on, loss = "validation", run.validation_loss(chunk=256)
        else:
            x = self._inputs(self.settings["ids"], self.settings["fine_tune"])
            y, on, loss = np.array(self.settings["labels"], np.int64), "train", None
        return {"loss": loss, "on": on, **classification_metrics(predict(run.module, x), y, len(self.names))}

    def predict(self, pixels) -> list:
        """For each image of uint8 [n, height, width, 3 or 4]: {probabilities, label, class_name}."""
        head = self._model()
        images = check_pixels(pixels, "the images to predict")
        features, block = self.backbone.embed(images)
        logits = head.run([block if self.settings["fine_tune"] else features])[0]
        labels = logits.argmax(axis=1)
        return [{"probabilities": probabilities(row), "label": int(k), "class_name": self.names[int(k)]}
                for row, k in zip(logits, labels)]

    # ---- export, checkpoints, snapshots -------------------------------------------------------------------

    def exported(self) -> Model:
        """One model: ``image`` uint8 [N, H, W, 3 or 4] -> preprocessing -> backbone -> the trained head ->
        ``output`` (scores), ``probabilities``, ``label``; the class names in metadata ``onnxtrain.classes``."""
        inner = inference_model(self._run().module)
        joint = "block" if self.settings["fine_tune"] else "features"
        model = compose(self.backbone.front(joint), inner, {joint: joint}, prefix="head.")
        p = self.backbone.preprocess
        doc = (f"Input 'image': uint8 [batch, height, width, 3 or 4], RGB or RGBA (alpha unused), any size: the "
               f"centred square is resized to {p['size']}x{p['size']} inside. {classes_doc(self.names)}")
        out = with_head(model, list(model.graph.inputs), [], [], doc, self.names, min_opset=18)
        out.metadata_props["onnxtrain.preprocess"] = json.dumps(p)
        if self.backbone.source:
            out.metadata_props["onnxtrain.source"] = self.backbone.source
        return out

    def export_model(self) -> bytes:
        return to_bytes(self.exported())

    def checkpoint(self, properties: dict = None) -> bytes:
        return self._run().checkpoint({**(properties or {}), "onnxtrain.personalize": {
            "classes": self.names, "fine_tune": self.settings["fine_tune"]}})

    def snapshot(self) -> bytes:
        """The classes, the samples (ids, classes, cached embeddings) and the run (its setup and checkpoint) as
        .npz bytes, for ``from_snapshot`` with the same backbone."""
        ids = sorted(self.store)
        features = np.stack([self.store[s][0] for s in ids]) if ids else np.zeros((0, self.backbone.features))
        block = np.stack([self.store[s][1] for s in ids]) if ids else np.zeros((0, *self.backbone.block_shape))
        return self._snapshot(ids, {"backbone": self.backbone.sha256},
                              {"features": features.astype(np.float32), "block": block.astype(np.float32)})

    @classmethod
    def from_snapshot(cls, backbone: bytes, snapshot: bytes, run=None, device: str = "cpu") -> "PersonalizeSession":
        """The session a ``snapshot`` was taken of, on ``backbone`` (the same model)."""
        session = cls(backbone, run, device)
        session._load_snapshot(snapshot)
        return session

    def _load_snapshot(self, snapshot: bytes) -> None:
        """Take the classes, samples and run of ``snapshot`` (this session is new)."""
        meta, arrays, ids = self._read_snapshot(snapshot, "personalization",
                                                ("backbone", self.backbone.sha256, "backbone model"))
        features, block = arrays.get("features"), arrays.get("block")
        want_f, want_b = (len(ids), self.backbone.features), (len(ids), *self.backbone.block_shape)
        if features is None or block is None or features.shape != want_f or block.shape != want_b:
            raise DataError(f"the saved personalization cannot be read (features "
                            f"{None if features is None else list(features.shape)}, block "
                            f"{None if block is None else list(block.shape)} for {len(ids)} stored samples)")
        self._take_snapshot(meta, {s: (features[k], block[k]) for k, s in enumerate(ids)})


__all__ = ["PersonalizeSession"]
