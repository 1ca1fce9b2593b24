"""The preprocessing of a pretrained image backbone as one ONNX graph, so that the page (onnxtrain's runtime) and
an exported model (any ONNX runtime) compute the same numbers: ``image`` uint8 [N, H, W, 3 or 4] (RGB or RGBA, the
alpha dropped), any H and W -> the centred square crop -> Resize to size × size (linear, antialiased: opset 18)
-> (p / 255 - mean) / std -> float32 [N, 3, size, size]."""
from __future__ import annotations

import json
import math

import numpy as np

from ..ir.dtypes import DataType
from ..ir.model import Attribute, AttrType, Graph, Model, Node, Tensor, TensorType, ValueInfo
from ..train.data import DataError

PREPROCESS = "onnxtrain.preprocess"  # a backbone's metadata key: JSON {"size", "mean", "std"} (0..1 scale)
OPSET = 18  # Resize's antialias
MAX_SIDE = 8192


def read_preprocess(metadata: dict, what: str = "the backbone") -> dict:
    """{"size", "mean", "std"} from a model's ``onnxtrain.preprocess`` metadata, checked."""
    text = metadata.get(PREPROCESS)
    if text is None:
        raise DataError(f"{what} has no {PREPROCESS} metadata (JSON with size, mean and std)")
    try:
        value = json.loads(text)
        size = value["size"]
        mean = [float(v) for v in value["mean"]]
        std = [float(v) for v in value["std"]]
    except (ValueError, KeyError, TypeError) as e:
        raise DataError(f"{what}'s {PREPROCESS} metadata is not JSON with size, mean and std ({e})") from None
    if isinstance(size, bool) or not isinstance(size, int) or not 1 <= size <= 4096:
        raise DataError(f"{what}'s {PREPROCESS} size is {size!r}; it must be a whole number of pixels")
    if len(mean) != 3 or len(std) != 3 or not all(map(math.isfinite, mean + std)) or min(std) <= 0:
        raise DataError(f"{what}'s {PREPROCESS} mean and std must be three finite numbers each, std above 0 "
                        f"(found mean {mean}, std {std})")
    return {"size": size, "mean": mean, "std": std}


def _ints(name, values):
    return Attribute(name, AttrType.INTS, [int(v) for v in values])


def _int(name, value):
    return Attribute(name, AttrType.INT, int(value))


def preprocess_model(size: int, mean, std, output: str = "input") -> Model:
    """``image`` uint8 [N, H, W, 3 or 4] -> ``output`` float32 [N, 3, size, size] (see the module's text)."""
    mean, std = np.float64(mean), np.float64(std)
    consts = {"pre.zero": [0], "pre.one": [1], "pre.two": [2], "pre.rgb": [3], "pre.axes": [1, 2, 3],
              "pre.three_size": [3, size, size]}
    inits = [Tensor(name, np.array(v, np.int64), DataType.INT64) for name, v in consts.items()]
    inits += [Tensor("pre.scale", (1 / (255 * std)).astype(np.float32).reshape(1, 3, 1, 1), DataType.FLOAT),
              Tensor("pre.shift", (-mean / std).astype(np.float32).reshape(1, 3, 1, 1), DataType.FLOAT)]
    n = lambda op, inputs, outputs, **attrs: Node(op, inputs, outputs, name=outputs[0], attributes=attrs)  # noqa
    nodes = [
        n("Shape", ["image"], ["pre.shape"]),
        n("Slice", ["pre.shape", "pre.one", "pre.rgb"], ["pre.hw"]),  # [H, W]
        n("ReduceMin", ["pre.hw"], ["pre.side"], keepdims=_int("keepdims", 1)),
        n("Sub", ["pre.hw", "pre.side"], ["pre.extra"]),
        n("Div", ["pre.extra", "pre.two"], ["pre.offset"]),
        n("Add", ["pre.offset", "pre.side"], ["pre.end"]),
        n("Concat", ["pre.offset", "pre.zero"], ["pre.starts"], axis=_int("axis", 0)),
        n("Concat", ["pre.end", "pre.rgb"], ["pre.ends"], axis=_int("axis", 0)),
        n("Slice", ["image", "pre.starts", "pre.ends", "pre.axes"], ["pre.crop"]),
        n("Cast", ["pre.crop"], ["pre.float"], to=_int("to", DataType.FLOAT)),
        n("Transpose", ["pre.float"], ["pre.nchw"], perm=_ints("perm", [0, 3, 1, 2])),
        n("Slice", ["pre.shape", "pre.zero", "pre.one"], ["pre.batch"]),
        n("Concat", ["pre.batch", "pre.three_size"], ["pre.sizes"], axis=_int("axis", 0)),
        n("Resize", ["pre.nchw", "", "", "pre.sizes"], ["pre.resized"],
          mode=Attribute("mode", AttrType.STRING, b"linear"), antialias=_int("antialias", 1)),
        n("Mul", ["pre.resized", "pre.scale"], ["pre.scaled"]),
        n("Add", ["pre.scaled", "pre.shift"], [output]),
    ]
    graph = Graph(name="preprocess", nodes=nodes, initializers=inits,
                  inputs=[ValueInfo("image", TensorType(DataType.UINT8, ["batch", "height", "width", "channels"]))],
                  outputs=[ValueInfo(output, TensorType(DataType.FLOAT, ["batch", 3, size, size]))])
    return Model(graph=graph, ir_version=8, opset_imports={"": OPSET}, producer_name="onnxtrain")


def check_pixels(pixels, what: str = "the images") -> np.ndarray:
    """``pixels`` as uint8 [n, height, width, 3 or 4], n >= 1 and each side 1..MAX_SIDE."""
    pixels = np.asarray(pixels)
    if pixels.dtype != np.uint8 or pixels.ndim != 4 or pixels.shape[3] not in (3, 4):
        raise DataError(f"{what} are {pixels.dtype.name} {list(pixels.shape)}; they must be uint8 "
                        f"[count, height, width, 3 or 4] (RGB or RGBA)")
    n, h, w = pixels.shape[:3]
    if n < 1:
        raise DataError(f"{what} hold no image (count 0)")
    if not (1 <= h <= MAX_SIDE and 1 <= w <= MAX_SIDE):
        raise DataError(f"{what} are {w}×{h} px; each side must be from 1 to {MAX_SIDE} px")
    return pixels
