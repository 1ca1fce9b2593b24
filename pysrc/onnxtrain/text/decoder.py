"""A LLaMA causal language model (SmolLM2 and its kind) written as ONNX graphs from its weights, opset 17, in two
forms that share their initializers:

- the training form, no cache: input ``input_ids`` int64 [batch, sequence]; output ``logits`` float32
  [batch, sequence, vocab];
- the generation form, with a key/value cache, named as Hugging Face's and onnxruntime-genai's exports name it:
  inputs ``input_ids`` and ``position_ids`` int64 [batch, sequence] and ``past_key_values.{i}.key`` / ``.value``
  float32 [batch, kv_heads, past_sequence, head_dim] (past_sequence 0 on the first step); outputs ``logits`` and
  ``present.{i}.key`` / ``.value`` [batch, kv_heads, past_sequence + sequence, head_dim].  The queries' positions
  are ``position_ids``; the keys' are 0 .. past_sequence + sequence - 1 (no padding mask).

The weights are Hugging Face's names and layouts (``model.layers.{i}.self_attn.q_proj.weight`` [out, in], RoPE
rotating halves); each linear layer's weight is stored transposed, [in, out], under its checkpoint name, so a
projection is one MatMul on a named initializer (what ``text.lora`` adapts).  ``from_gguf_rope`` turns a GGUF
file's query and key weights, whose rows are permuted so RoPE rotates adjacent pairs, into that layout.  With
``float16``, each weight is stored as float16 ``<name>_fp16`` followed by Cast to float32 ``<name>`` (what
``ir.rewrite.fold_casts`` folds); RMSNorm, RoPE's tables and the attention run in float32.

The ops are onnx's default domain only (RMSNorm as ReduceMean, Sqrt and Div; RoPE from cos/sin tables gathered
by position; grouped-query attention by expanding each key/value head over its queries; SiLU as x * Sigmoid(x)),
so onnxruntime, onnxruntime-web and onnxtrain's runtime run them and both gradient builders differentiate them."""
from __future__ import annotations

import dataclasses

import numpy as np

from ..ir.builder import GraphBuilder
from ..ir.dtypes import DataType
from ..ir.model import Attribute, AttrType, Graph, Model, Node, Tensor, TensorType, ValueInfo
from .encoder import WeightsError

OPSET = 17
MASKED = -1e9  # added to the scores of keys after the query: exp() of it is 0 in float32
LINEARS = ("self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.o_proj", "mlp.gate_proj",
           "mlp.up_proj", "mlp.down_proj")
NORMS = ("input_layernorm", "post_attention_layernorm")


@dataclasses.dataclass(frozen=True)
class DecoderConfig:
    """The settings of a LLaMA model that its graph needs (Hugging Face config.json's meaning)."""
    hidden_size: int
    intermediate_size: int
    num_hidden_layers: int
    num_attention_heads: int
    num_key_value_heads: int
    vocab_size: int
    rope_theta: float = 10000.0
    rms_norm_eps: float = 1e-5
    max_position_embeddings: int = 2048  # the rows of RoPE's tables: the longest position the graphs take

    def __post_init__(self):
        for field in dataclasses.fields(self):
            value = getattr(self, field.name)
            if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)) or value <= 0:
                raise WeightsError(f"decoder config: {field.name} is {value!r}; it must be a positive number")
        if self.hidden_size % self.num_attention_heads:
            raise WeightsError(f"decoder config: hidden_size {self.hidden_size} is not a multiple of "
                               f"num_attention_heads {self.num_attention_heads}")
        if self.num_attention_heads % self.num_key_value_heads:
            raise WeightsError(f"decoder config: num_attention_heads {self.num_attention_heads} is not a multiple "
                               f"of num_key_value_heads {self.num_key_value_heads}")
        if self.head_dim % 2:
            raise WeightsError(f"decoder config: the head size {self.head_dim} is odd; RoPE rotates pairs")

    @property
    def head_dim(self) -> int:
        return self.hidden_size // self.num_attention_heads

    @classmethod
    def from_dict(cls, config: dict) -> "DecoderConfig":
        """From a config.json's fields (others are ignored)."""
        names = [f.name for f in dataclasses.fields(cls)]
        missing = [n for n in names[:6] if n not in config]
        if missing:
            raise WeightsError(f"decoder config: missing {missing}")
        return cls(**{n: config[n] for n in names if n in config})


def rope_tables(config: DecoderConfig) -> tuple:
    """RoPE's cos and sin [max_position_embeddings, head_dim], float32, for rotating halves (the frequency of
    element j and of j + head_dim/2 is theta^(-2j/head_dim)), computed in float64."""
    d = config.head_dim
    inv_freq = float(config.rope_theta) ** (-np.arange(0, d, 2, dtype=np.float64) / d)
    angles = np.outer(np.arange(config.max_position_embeddings, dtype=np.float64), inv_freq)
    angles = np.concatenate([angles, angles], axis=1)
    return np.cos(angles).astype(np.float32), np.sin(angles).astype(np.float32)


def from_gguf_rope(weight: np.ndarray, heads: int) -> np.ndarray:
    """A query or key weight [heads * head_dim, in] from a GGUF file (llama.cpp's converter permutes each head's
    rows so RoPE rotates adjacent pairs: GGUF row 2i + j is Hugging Face row j * head_dim/2 + i) in Hugging Face's
    layout."""
    out = weight.shape[0]
    if out % (2 * heads):
        raise WeightsError(f"a GGUF query/key weight of {out} rows does not split into {heads} heads of pairs")
    return weight.reshape(heads, out // heads // 2, 2, *weight.shape[1:]).swapaxes(1, 2).reshape(weight.shape)


def expected_shapes(config: DecoderConfig) -> dict:
    """Every weight the graphs read, by name, with its shape (Hugging Face's [out, in] for linear layers)."""
    c, kv = config, config.num_key_value_heads * config.head_dim
    shapes = {"model.embed_tokens.weight": (c.vocab_size, c.hidden_size), "model.norm.weight": (c.hidden_size,)}
    linear = {"self_attn.q_proj": (c.hidden_size, c.hidden_size), "self_attn.k_proj": (kv, c.hidden_size),
              "self_attn.v_proj": (kv, c.hidden_size), "self_attn.o_proj": (c.hidden_size, c.hidden_size),
              "mlp.gate_proj": (c.intermediate_size, c.hidden_size),
              "mlp.up_proj": (c.intermediate_size, c.hidden_size), "mlp.down_proj": (c.hidden_size, c.intermediate_size)}
    for i in range(c.num_hidden_layers):
        p = f"model.layers.{i}."
        shapes.update({p + n + ".weight": (c.hidden_size,) for n in NORMS})
        shapes.update({p + n + ".weight": s for n, s in linear.items()})
    return shapes


def check_weights(weights: dict, config: DecoderConfig) -> None:
    """WeightsError naming the first weight that is missing or misshapen (``lm_head.weight`` is optional: without
    it the head is tied to the embedding)."""
    shapes = expected_shapes(config)
    if "lm_head.weight" in weights:
        shapes["lm_head.weight"] = (config.vocab_size, config.hidden_size)
    for name, shape in shapes.items():
        if name not in weights:
            raise WeightsError(f"decoder weights: no tensor {name!r}")
        got = tuple(np.shape(weights[name]))
        if got != shape:
            raise WeightsError(f"decoder weights: {name!r} has shape {list(got)}, the config needs {list(shape)}")


class _Writer:
    """Appends one form's nodes to a graph whose initializers are shared with the other form's."""

    def __init__(self, g: Graph, weights: dict, store: dict, float16: bool):
        self.g, self.b, self.weights, self.store, self.float16 = g, GraphBuilder(g), weights, store, float16

    def param(self, name: str, transpose: bool = False) -> str:
        """The float32 value of weight ``name`` (stored once per graph; its Tensor shared through ``store``)."""
        if name in self.b.names:
            return name
        if name not in self.store:
            value = np.asarray(self.weights[name], np.float32)
            value = np.ascontiguousarray(value.T if transpose else value)
            self.store[name] = (Tensor(name + "_fp16", value.astype(np.float16), DataType.FLOAT16) if self.float16
                                else Tensor(name, value, DataType.FLOAT))
        tensor = self.store[name]
        self.g.initializers.append(tensor)
        self.b.names.add(tensor.name)
        if tensor.name != name:
            self.b.names.add(name)
            self.g.nodes.append(Node("Cast", [tensor.name], [name], name=name + "_cast",
                                     attributes={"to": Attribute("to", AttrType.INT, int(DataType.FLOAT))}))
        return name

    def table(self, name: str, value: np.ndarray) -> str:
        if name not in self.store:
            self.store[name] = Tensor(name, value, DataType.FLOAT)
        self.g.initializers.append(self.store[name])
        self.b.names.add(name)
        return name


def decoder_model(weights: dict, config: DecoderConfig, cache: bool = False, float16: bool = False,
                  name: str = "decoder", _store: dict = None) -> Model:
    """The decoder graph of ``weights`` (see the module's doc): the training form, or with ``cache`` the
    generation form."""
    check_weights(weights, config)
    c = config
    d, kv, group = c.head_dim, c.num_key_value_heads, c.num_attention_heads // c.num_key_value_heads
    sequence = ["batch_size", "sequence_length"]
    inputs = [ValueInfo("input_ids", TensorType(DataType.INT64, sequence))]
    if cache:
        inputs.append(ValueInfo("position_ids", TensorType(DataType.INT64, sequence)))
        past = ["batch_size", kv, "past_sequence_length", d]
        for i in range(c.num_hidden_layers):
            inputs += [ValueInfo(f"past_key_values.{i}.{kind}", TensorType(DataType.FLOAT, past))
                       for kind in ("key", "value")]
    g = Graph(name=name, inputs=inputs, outputs=[], nodes=[], initializers=[])
    w = _Writer(g, weights, {} if _store is None else _store, float16)
    b = w.b

    def rms_norm(x: str, weight: str) -> str:
        mean_square = b.op("ReduceMean", [b.op("Mul", [x, x])], axes=[-1], keepdims=1)
        rms = b.op("Sqrt", [b.op("Add", [mean_square, b.const(np.float32(c.rms_norm_eps), "eps")])])
        return b.op("Mul", [b.op("Div", [x, rms]), w.param(weight)])

    def linear(x: str, weight: str) -> str:
        return b.op("MatMul", [x, w.param(weight, transpose=True)])

    x = b.op("Gather", [w.param("model.embed_tokens.weight"), "input_ids"], axis=0)
    length = b.op("Gather", [b.op("Shape", ["input_ids"]), b.ints([1], "sequence_axis")], axis=0)
    zero, one = b.const(np.int64(0), "zero"), b.const(np.int64(1), "one")
    if cache:
        positions = "position_ids"
        past_length = b.op("Gather", [b.op("Shape", ["past_key_values.0.key"]), b.ints([2], "past_axis")], axis=0)
        total = b.op("Add", [past_length, length])
    else:
        positions, total = b.op("Unsqueeze", [b.op("Range", [zero, b.op("Squeeze", [length]), one]),
                                              b.ints([0], "batch_axis")]), length
    cos_table, sin_table = rope_tables(c)
    # [batch or 1, 1, sequence, head_dim]: one row of each table per query position, the same for every head
    cos, sin = (b.op("Unsqueeze", [b.op("Gather", [w.table(n, t), positions], axis=0), b.ints([1], "head_axis")])
                for n, t in (("rope.cos", cos_table), ("rope.sin", sin_table)))
    # the causal mask: a key after the query's position is masked; [batch or 1, 1, 1, sequence, total]
    keys = b.op("Range", [zero, b.op("Squeeze", [total]), one])
    after = b.op("Less", [b.op("Unsqueeze", [positions, b.ints([2], "query_axis")]), keys])
    mask = b.op("Where", [after, b.const(np.float32(MASKED), "masked"), b.const(np.float32(0.0), "kept")])
    mask = b.op("Unsqueeze", [mask, b.ints([1, 2], "head_axes")])

    split_heads = b.ints([0, 0, -1, d], "heads_shape")
    query_groups = b.ints([0, kv, group, -1, d], "query_groups_shape")
    repeat = b.ints([1, 1, group, 1, 1], "repeat_kv")
    join_heads = b.ints([0, 0, c.hidden_size], "hidden_shape")
    scale = b.const(np.float32(d ** -0.5), "scale")
    presents = []

    def rope(t: str) -> str:
        first, second = b.op("Split", [t], n_outputs=2, axis=-1)
        rotated = b.op("Concat", [b.op("Neg", [second]), first], axis=-1)
        return b.op("Add", [b.op("Mul", [t, cos]), b.op("Mul", [rotated, sin])])

    for i in range(c.num_hidden_layers):
        p = f"model.layers.{i}."
        b.scope = f"layer{i}"
        h = rms_norm(x, p + "input_layernorm.weight")

        def heads(proj: str) -> str:  # [batch, heads, sequence, head_dim]
            return b.op("Transpose", [b.op("Reshape", [linear(h, p + f"self_attn.{proj}.weight"), split_heads])],
                        perm=[0, 2, 1, 3])

        q, k, v = rope(heads("q_proj")), rope(heads("k_proj")), heads("v_proj")
        if cache:
            k = b.op("Concat", [f"past_key_values.{i}.key", k], axis=2)
            v = b.op("Concat", [f"past_key_values.{i}.value", v], axis=2)
            for kind, value in (("key", k), ("value", v)):
                presents.append(b.op("Identity", [value], outputs=[f"present.{i}.{kind}"]))
        # grouped-query attention: query head kv_index * group + r reads key/value head kv_index
        q = b.op("Reshape", [q, query_groups])
        k, v = (b.op("Expand", [b.op("Unsqueeze", [t, b.ints([2], "group_axis")]), repeat]) for t in (k, v))
        scores = b.op("MatMul", [q, b.op("Transpose", [k], perm=[0, 1, 2, 4, 3])])
        scores = b.op("Add", [b.op("Mul", [scores, scale]), mask])
        context = b.op("MatMul", [b.op("Softmax", [scores], axis=-1), v])
        context = b.op("Reshape", [b.op("Transpose", [context], perm=[0, 3, 1, 2, 4]), join_heads])
        x = b.op("Add", [x, linear(context, p + "self_attn.o_proj.weight")])
        h = rms_norm(x, p + "post_attention_layernorm.weight")
        gate = linear(h, p + "mlp.gate_proj.weight")
        silu = b.op("Mul", [gate, b.op("Sigmoid", [gate])])
        x = b.op("Add", [x, linear(b.op("Mul", [silu, linear(h, p + "mlp.up_proj.weight")]),
                                   p + "mlp.down_proj.weight")])
    b.scope = "head"
    x = rms_norm(x, "model.norm.weight")
    head = (w.param("lm_head.weight", transpose=True) if "lm_head.weight" in weights
            else b.op("Transpose", [w.param("model.embed_tokens.weight")], perm=[1, 0]))
    b.op("MatMul", [x, head], outputs=["logits"])
    g.outputs = [ValueInfo("logits", TensorType(DataType.FLOAT, [*sequence, c.vocab_size]))]
    present = ["batch_size", kv, "total_sequence_length", d]
    g.outputs += [ValueInfo(n, TensorType(DataType.FLOAT, present)) for n in presents]
    return Model(graph=g, opset_imports={"": OPSET}, ir_version=8, producer_name="onnxtrain")


def decoder_models(weights: dict, config: DecoderConfig, float16: bool = False, name: str = "decoder") -> tuple:
    """(the training form, the generation form), sharing their initializers' Tensor objects (so a writer can
    store one copy of the weights for both)."""
    store = {}
    return (decoder_model(weights, config, cache=False, float16=float16, name=name, _store=store),
            decoder_model(weights, config, cache=True, float16=float16, name=name + "_with_past", _store=store))
