"""Image folders for the page: decoded pixels in, a small CNN trained, an export that takes RGB images
(float32 [batch, 3, H, W], values 0..1) and normalises them itself."""
from __future__ import annotations

import numpy as np

from .. import artifacts
from ..ir import load as ir_load, to_bytes
from ..ir.dtypes import DataType
from ..ir.model import Attribute, AttrType, Graph, Model, Node, Tensor, TensorType, ValueInfo
from .bridge import TrainingSession, _buffer, _bytes
from .tabular import DataError, check_validation, classification_metrics, names_text, show, stratified_split, whole

MIN_SIZE, MAX_SIZE = 8, 128  # two 2x2 poolings need 4 px at least; 8 leaves a 2x2 map for the classifier


def _ints(name, values):
    return Attribute(name, AttrType.INTS, list(values))


def cnn_model(size: int, n_classes: int, channels=(8, 16), seed: int = 0) -> Model:
    """input [batch, 3, size, size] -> (Conv 3x3, Relu, MaxPool 2) per entry of ``channels`` -> Gemm."""
    rng = np.random.default_rng(seed)
    nodes, inits, prev, c_in, side = [], [], "input", 3, size
    for i, c_out in enumerate(channels):
        w, b = f"conv{i + 1}.weight", f"conv{i + 1}.bias"
        bound = 1 / np.sqrt(c_in * 9)
        inits += [Tensor(w, rng.uniform(-bound, bound, (c_out, c_in, 3, 3)).astype(np.float32), DataType.FLOAT),
                  Tensor(b, np.zeros(c_out, np.float32), DataType.FLOAT)]
        nodes += [Node("Conv", [prev, w, b], [f"conv{i + 1}_out"], name=f"conv{i + 1}",
                       attributes={"kernel_shape": _ints("kernel_shape", [3, 3]), "pads": _ints("pads", [1] * 4)}),
                  Node("Relu", [f"conv{i + 1}_out"], [f"relu{i + 1}_out"], name=f"relu{i + 1}"),
                  Node("MaxPool", [f"relu{i + 1}_out"], [f"pool{i + 1}_out"], name=f"pool{i + 1}",
                       attributes={"kernel_shape": _ints("kernel_shape", [2, 2]), "strides": _ints("strides", [2, 2])})]
        prev, c_in, side = f"pool{i + 1}_out", c_out, side // 2
    flat = c_in * side * side
    bound = 1 / np.sqrt(flat)
    weight = rng.uniform(-bound, bound, (n_classes, flat)).astype(np.float32)
    inits += [Tensor("fc.weight", weight, DataType.FLOAT),
              Tensor("fc.bias", np.zeros(n_classes, np.float32), DataType.FLOAT)]
    nodes += [Node("Flatten", [prev], ["flat"], name="flatten", attributes={"axis": Attribute("axis", AttrType.INT, 1)}),
              Node("Gemm", ["flat", "fc.weight", "fc.bias"], ["output"], name="fc",
                   attributes={"transB": Attribute("transB", AttrType.INT, 1)})]
    graph = Graph(name="image_cnn", nodes=nodes, initializers=inits,
                  inputs=[ValueInfo("input", TensorType(DataType.FLOAT, ["batch", 3, size, size]))],
                  outputs=[ValueInfo("output", TensorType(DataType.FLOAT, ["batch", n_classes]))])
    return Model(graph=graph, ir_version=8, opset_imports={"": 17}, producer_name="onnxtrain")


class ImageSession:
    """The image-folder flow for the worker."""

    def __init__(self, pixels, shape, labels, classes, validation: float = 0.2, seed: int = 0,
                 optimizer: str = "AdamW"):
        n, size = _shape(shape)
        self.classes = _classes(classes)
        rgba = _pixels(pixels, n, size, "the images")
        y = _labels(labels, n, len(self.classes))
        counts = np.bincount(y.astype(np.intp), minlength=len(self.classes))
        if len(self.classes) < 2 or (counts == 0).any():
            raise DataError("an image folder needs at least two class subfolders with images in each "
                            f"(found {dict(zip(self.classes, counts.tolist()))})")
        train, val = stratified_split(y, check_validation(validation), int(seed))
        x = rgba[..., :3].transpose(0, 3, 1, 2).astype(np.float32) / 255
        self.mean = x[train].mean(axis=(0, 2, 3)).astype(np.float32)
        self.std = (x[train].std(axis=(0, 2, 3)) + 1e-3).astype(np.float32)
        norm = (x - self.mean[None, :, None, None]) / self.std[None, :, None, None]
        self.size = size
        forward = cnn_model(size, len(self.classes), seed=seed)
        arts = artifacts.generate_artifacts(forward, requires_grad=[t.name for t in forward.graph.initializers],
                                            loss=artifacts.LossType.CrossEntropyLoss,
                                            optimizer=artifacts.enum_member(artifacts.OptimType, optimizer))
        self.training = TrainingSession.from_artifacts(arts)
        self.training.set_data([norm[train], y[train]], [norm[val], y[val]], seed)
        per_class = lambda rows: np.bincount(y[rows].astype(np.intp), minlength=len(self.classes)).tolist()  # noqa
        self.info = {"images": n, "train": len(train), "validation": len(val), "classes": self.classes,
                     "train_per_class": per_class(train), "validation_per_class": per_class(val),
                     "size": size, "parameters": self.training.module.get_parameters_size(True)}

    @property
    def epoch(self) -> int:
        return self.training.epoch

    def step(self, batch_size: int, learning_rate: float) -> dict:
        return self.training.step(batch_size, learning_rate)

    def evaluate(self) -> dict:
        x, y = self.training.validation_data
        return {"loss": self.training.validation_loss(chunk=256),
                **classification_metrics(self.training.predict(x), y, len(self.classes))}

    def predict(self, pixels) -> list:
        """Class probabilities for one RGBA image of the session's size (uint8 bytes)."""
        rgba = _pixels(pixels, 1, self.size, "the image")
        x = (rgba[..., :3].transpose(0, 3, 1, 2).astype(np.float32) / 255 - self.mean[None, :, None, None]) \
            / self.std[None, :, None, None]
        logits = self.training.predict(x)[0]
        p = np.exp(logits - logits.max())
        return (p / p.sum()).tolist()

    def checkpoint(self) -> bytes:
        return self.training.checkpoint({"onnxtrain.images": {"classes": self.classes, "size": self.size}})

    def restore(self, data) -> int:
        """Continue a saved run of the same images: load its checkpoint; returns its epoch."""
        return self.training.restore(data)

    def export_model(self) -> bytes:
        """The trained CNN behind a normalisation of RGB input in 0..1, with probabilities and labels."""
        inner = ir_load(self.training.module.export_model_for_inferencing(None, ["output"]))
        g = inner.graph
        mean = Tensor("pre.mean", self.mean.reshape(1, 3, 1, 1), DataType.FLOAT)
        std = Tensor("pre.std", self.std.reshape(1, 3, 1, 1), DataType.FLOAT)
        for node in g.nodes:
            node.inputs = ["pre.normalized" if i == "input" else i for i in node.inputs]
        nodes = [Node("Sub", ["image", "pre.mean"], ["pre.centered"], name="pre.center"),
                 Node("Div", ["pre.centered", "pre.std"], ["pre.normalized"], name="pre.scale")] + list(g.nodes) + [
            Node("Softmax", ["output"], ["probabilities"], name="post.softmax"),
            Node("ArgMax", ["output"], ["label"], name="post.argmax",
                 attributes={"axis": Attribute("axis", AttrType.INT, 1),
                             "keepdims": Attribute("keepdims", AttrType.INT, 0)})]
        graph = Graph(name=g.name, nodes=nodes, initializers=[mean, std] + list(g.initializers),
                      inputs=[ValueInfo("image", TensorType(DataType.FLOAT, ["batch", 3, self.size, self.size]))],
                      outputs=list(g.outputs) + [
                          ValueInfo("probabilities", TensorType(DataType.FLOAT, ["batch", len(self.classes)])),
                          ValueInfo("label", TensorType(DataType.INT64, ["batch"]))],
                      doc_string=f"Input 'image': float32 [batch, 3, {self.size}, {self.size}], RGB, values 0..1 "
                                 f"(resized to {self.size}x{self.size}). Output 'label' is the index of the class in "
                                 f"{names_text(self.classes)}, 'probabilities' the probability of each.")
        return to_bytes(Model(graph=graph, ir_version=inner.ir_version, opset_imports=dict(inner.opset_imports),
                              producer_name="onnxtrain",
                              metadata_props={"onnxtrain.classes": names_text(self.classes)}))


def _shape(shape) -> tuple:
    """(image count, side) from the page's [count, size]."""
    dims = list(_buffer(shape))
    n, size = [whole(d, 0) for d in dims[:2]] if len(dims) >= 2 else (None, None)
    if n is None or size is None:
        raise DataError(f"the image shape {str(dims)[:60]} is not [count, size] in whole numbers")
    if not MIN_SIZE <= size <= MAX_SIZE:
        raise DataError(f"an image size of {size} px is not possible; choose from {MIN_SIZE} to {MAX_SIZE} px")
    if n < 1:
        raise DataError(f"there are {n} images; add images to the class subfolders")
    return n, size


def _classes(classes) -> list:
    """The class names as given (folder names); an empty or repeated name is refused."""
    names = [str(c) for c in _buffer(classes)]
    for i, name in enumerate(names):
        if not name.strip():
            raise DataError(f"class {i + 1} has an empty name; name each class subfolder")
        if name in names[:i]:
            raise DataError(f"two classes are named {show(name)} (classes {names.index(name) + 1} and {i + 1})")
    return names


def _pixels(pixels, n: int, size: int, what: str) -> np.ndarray:
    """RGBA uint8 bytes as [n, size, size, 4]."""
    data = _bytes(pixels)
    need = n * size * size * 4
    if len(data) != need:
        raise DataError(f"{what}: the pixel buffer has {len(data):,} bytes, but {n} RGBA image{'s' * (n != 1)} of "
                        f"{size}×{size} px take {need:,}")
    return np.frombuffer(data, np.uint8).reshape(n, size, size, 4)


def _labels(labels, n: int, n_classes: int) -> np.ndarray:
    """One class index per image, each in 0..n_classes-1."""
    values = list(_buffer(labels))
    if len(values) != n:
        raise DataError(f"there are {n} images but {len(values)} labels")
    out = np.empty(n, np.int64)
    for i, v in enumerate(values):
        label = whole(v, 0, n_classes - 1)
        if label is None:
            raise DataError(f"image {i + 1} has the label {show(v)}; a label is a class index from 0 to "
                            f"{n_classes - 1}")
        out[i] = label
    return out
