"""Image classification: RGB(A) pixels in, a small CNN trained, an export that takes RGB images (float32
[batch, 3, H, W], values 0..1) and normalises them itself."""
from __future__ import annotations

import numpy as np

from ..ir import to_bytes
from ..ir.dtypes import DataType
from ..ir.model import Attribute, AttrType, Graph, Model, Node, Tensor, TensorType, ValueInfo
from ..train.data import DataError
from .checks import check_validation, check_whole, rgba, show, whole
from .head import classes_doc, with_head
from .split import stratified_split
from .training import classification_metrics, inference_model, make_artifacts, predict, probabilities, run_factory

MIN_SIZE, MAX_SIZE = 8, 128  # two 2x2 poolings need 4 px at least; 8 leaves a 2x2 map for the classifier


def _ints(name, values):
    return Attribute(name, AttrType.INTS, list(values))


def cnn_model(size: int, n_classes: int, channels=(8, 16), seed: int = 0, in_channels: int = 3) -> Model:
    """input [batch, in_channels, size, size] -> (Conv 3x3, Relu, MaxPool 2) per entry of ``channels`` -> Gemm."""
    rng = np.random.default_rng(seed)
    nodes, inits, prev, c_in, side = [], [], "input", in_channels, size
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
    nodes += [Node("Flatten", [prev], ["flat"], name="flatten",
                   attributes={"axis": Attribute("axis", AttrType.INT, 1)}),
              Node("Gemm", ["flat", "fc.weight", "fc.bias"], ["output"], name="fc",
                   attributes={"transB": Attribute("transB", AttrType.INT, 1)})]
    graph = Graph(name="image_cnn", nodes=nodes, initializers=inits,
                  inputs=[ValueInfo("input", TensorType(DataType.FLOAT, ["batch", in_channels, size, size]))],
                  outputs=[ValueInfo("output", TensorType(DataType.FLOAT, ["batch", n_classes]))])
    return Model(graph=graph, ir_version=8, opset_imports={"": 17}, producer_name="onnxtrain")


def check_size(n: int, size: int) -> None:
    """``n`` images of ``size`` × ``size`` px can be trained on."""
    if not MIN_SIZE <= size <= MAX_SIZE:
        raise DataError(f"an image size of {size} px is not possible; choose from {MIN_SIZE} to {MAX_SIZE} px")
    if n < 1:
        raise DataError(f"there are {n} images; add images to the class subfolders")


def check_images(images) -> np.ndarray:
    """``images`` as uint8 [n, size, size, channels], channels RGB or RGBA (the alpha is not used)."""
    images = np.asarray(images)
    if images.dtype != np.uint8 or images.ndim != 4 or images.shape[1] != images.shape[2] \
            or images.shape[3] not in (3, 4):
        raise DataError(f"the images are {images.dtype.name} {list(images.shape)}; they must be uint8 "
                        f"[count, size, size, 3 or 4] (RGB or RGBA, square)")
    check_size(images.shape[0], images.shape[1])
    return images


def check_classes(classes) -> list:
    """The class names as given (folder names); an empty or repeated name is refused."""
    names = [str(c) for c in classes]
    for i, name in enumerate(names):
        if not name.strip():
            raise DataError(f"class {i + 1} has an empty name; name each class subfolder")
        if name in names[:i]:
            raise DataError(f"two classes are named {show(name)} (classes {names.index(name) + 1} and {i + 1})")
    return names


def check_labels(labels, n: int, n_classes: int) -> np.ndarray:
    """One class index per image, each in 0..n_classes-1."""
    values = list(labels)
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


def rgb(images: np.ndarray) -> np.ndarray:
    """uint8 [n, size, size, 3 or 4] as float32 [n, 3, size, size] in 0..1, what the exported model takes."""
    return images[..., :3].transpose(0, 3, 1, 2).astype(np.float32) / 255


class ImageSession:
    """The image-folder flow: ``images`` uint8 [n, size, size, 3 or 4] with a class index per image in ``labels``
    and the names of the classes; a stratified split, a CNN and its run (``run``: see tasks.training; by default a
    Run on ``device``)."""

    def __init__(self, images, labels, classes, validation: float = 0.2, seed: int = 0, optimizer: str = "AdamW",
                 run=None, device: str = "cpu"):
        images = check_images(images)
        seed = check_whole(seed, "seed", 0, None)
        n, size = images.shape[:2]
        self.classes = check_classes(classes)
        y = check_labels(labels, n, len(self.classes))
        counts = np.bincount(y.astype(np.intp), minlength=len(self.classes))
        if len(self.classes) < 2 or (counts == 0).any():
            raise DataError("an image folder needs at least two class subfolders with images in each "
                            f"(found {dict(zip(self.classes, counts.tolist()))})")
        train, val = stratified_split(y, check_validation(validation), seed)
        x = rgb(images)
        self.mean = x[train].mean(axis=(0, 2, 3)).astype(np.float32)
        self.std = (x[train].std(axis=(0, 2, 3)) + 1e-3).astype(np.float32)
        norm = self._normalize(x)
        self.size = size
        self.validation = (norm[val], y[val])
        forward = cnn_model(size, len(self.classes), seed=seed)
        self.training = run_factory(run, device)(make_artifacts(forward, "CrossEntropyLoss", optimizer),
                                                 [norm[train], y[train]], [norm[val], y[val]], seed)
        per_class = lambda rows: np.bincount(y[rows].astype(np.intp), minlength=len(self.classes)).tolist()  # noqa
        self.info = {"images": n, "train": len(train), "validation": len(val), "classes": self.classes,
                     "train_per_class": per_class(train), "validation_per_class": per_class(val),
                     "size": size, "parameters": self.training.module.get_parameters_size(True)}

    @classmethod
    def from_rgba(cls, pixels: bytes, shape, labels, classes, validation: float = 0.2, seed: int = 0,
                  optimizer: str = "AdamW", **options) -> "ImageSession":
        """The session of a page's images: ``pixels`` the RGBA bytes of ``shape`` [count, size] square images
        (``options`` go to the constructor)."""
        dims = list(shape)
        n, size = [whole(d, 0) for d in dims[:2]] if len(dims) >= 2 else (None, None)
        if n is None or size is None:
            raise DataError(f"the image shape {str(dims)[:60]} is not [count, size] in whole numbers")
        check_size(n, size)
        return cls(rgba(pixels, n, size, size, "the images"), labels, classes, validation, seed, optimizer, **options)

    def _normalize(self, x: np.ndarray) -> np.ndarray:
        return (x - self.mean[None, :, None, None]) / self.std[None, :, None, None]

    @property
    def epoch(self) -> int:
        return self.training.epoch

    def step(self, batch_size: int, learning_rate: float) -> dict:
        return self.training.step(batch_size, learning_rate)

    def metrics(self) -> dict:
        """Accuracy, baseline and confusion matrix on the validation images."""
        x, y = self.validation
        return classification_metrics(predict(self.training.module, x), y, len(self.classes))

    def evaluate(self) -> dict:
        """The validation loss and ``metrics()``."""
        return {"loss": self.training.validation_loss(chunk=256), **self.metrics()}

    def predict(self, image) -> list:
        """Class probabilities for one image of the session's size (uint8 [size, size, 3 or 4], or its RGBA bytes)."""
        image = rgba(image, 1, self.size, self.size, "the image")[0] if isinstance(image, bytes) else np.asarray(image)
        if image.dtype != np.uint8 or image.shape[:2] != (self.size, self.size) or image.ndim != 3 \
                or image.shape[2] not in (3, 4):
            raise DataError(f"the image is {image.dtype.name} {list(image.shape)}; it must be uint8 "
                            f"[{self.size}, {self.size}, 3 or 4]")
        return probabilities(predict(self.training.module, self._normalize(rgb(image[None])))[0])

    def checkpoint(self, properties: dict = None) -> bytes:
        return self.training.checkpoint({**(properties or {}),
                                         "onnxtrain.images": {"classes": self.classes, "size": self.size}})

    def restore(self, data: bytes) -> int:
        """Continue a saved run of the same images: load its checkpoint; returns its epoch."""
        return self.training.restore(data)

    def exported(self) -> Model:
        """The trained CNN behind a normalisation of RGB input in 0..1, with probabilities and labels."""
        inner = inference_model(self.training.module)
        mean = Tensor("pre.mean", self.mean.reshape(1, 3, 1, 1), DataType.FLOAT)
        std = Tensor("pre.std", self.std.reshape(1, 3, 1, 1), DataType.FLOAT)
        nodes = [Node("Sub", ["image", "pre.mean"], ["pre.centered"], name="pre.center"),
                 Node("Div", ["pre.centered", "pre.std"], [inner.graph.inputs[0].name], name="pre.scale")]
        inputs = [ValueInfo("image", TensorType(DataType.FLOAT, ["batch", 3, self.size, self.size]))]
        doc = (f"Input 'image': float32 [batch, 3, {self.size}, {self.size}], RGB, values 0..1 (resized to "
               f"{self.size}x{self.size}). {classes_doc(self.classes)}")
        return with_head(inner, inputs, nodes, [mean, std], doc, self.classes)

    def export_model(self) -> bytes:
        return to_bytes(self.exported())
