"""A tiny LLaMA (2 layers, width 64, 4 query and 2 key/value heads, vocabulary 50) with random weights, in the
GGUF's layout (what artifacts/llama_reference.py reads) and in Hugging Face's (what onnxtrain.text.decoder reads),
and the runners the text_prediction tests share."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from onnxtrain import ir
from onnxtrain.runtime import Session
from onnxtrain.text.decoder import DecoderConfig, from_gguf_rope

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from artifacts import llama_reference  # noqa: E402

CONFIG = DecoderConfig(hidden_size=64, intermediate_size=96, num_hidden_layers=2, num_attention_heads=4,
                       num_key_value_heads=2, vocab_size=50, rope_theta=10000.0, rms_norm_eps=1e-5,
                       max_position_embeddings=32)


def gguf_weights(config: DecoderConfig = CONFIG, seed: int = 0) -> dict:
    """Random float32 weights, Hugging Face's names, q_proj and k_proj rows in the GGUF's pair order.  Scaled as
    a trained model's are (norm weights near 1, linear weights ~ 1/sqrt(in)), with the query and key weights large
    enough that RoPE's rotation changes the scores (so a wrong pair convention shows)."""
    rng = np.random.default_rng(seed)
    c, kv = config, config.num_key_value_heads * config.head_dim
    w = {"model.embed_tokens.weight": rng.standard_normal((c.vocab_size, c.hidden_size)),
         "model.norm.weight": 1 + 0.1 * rng.standard_normal(c.hidden_size)}
    for i in range(c.num_hidden_layers):
        p = f"model.layers.{i}."
        for name in ("input_layernorm", "post_attention_layernorm"):
            w[p + name + ".weight"] = 1 + 0.1 * rng.standard_normal(c.hidden_size)
        for name, (out, n_in), gain in (("self_attn.q_proj", (c.hidden_size, c.hidden_size), 3),
                                        ("self_attn.k_proj", (kv, c.hidden_size), 3),
                                        ("self_attn.v_proj", (kv, c.hidden_size), 1),
                                        ("self_attn.o_proj", (c.hidden_size, c.hidden_size), 1),
                                        ("mlp.gate_proj", (c.intermediate_size, c.hidden_size), 1),
                                        ("mlp.up_proj", (c.intermediate_size, c.hidden_size), 1),
                                        ("mlp.down_proj", (c.hidden_size, c.intermediate_size), 1)):
            w[p + name + ".weight"] = gain * rng.standard_normal((out, n_in)) / np.sqrt(n_in)
    return {k: v.astype(np.float32) for k, v in w.items()}


def hf_weights(gguf: dict, config: DecoderConfig = CONFIG) -> dict:
    """``gguf``'s weights with q_proj and k_proj in Hugging Face's layout (from_gguf_rope)."""
    out = dict(gguf)
    for i in range(config.num_hidden_layers):
        for proj, heads in (("q_proj", config.num_attention_heads), ("k_proj", config.num_key_value_heads)):
            key = f"model.layers.{i}.self_attn.{proj}.weight"
            out[key] = from_gguf_rope(gguf[key], heads)
    return out


def reference_logits(gguf: dict, ids: np.ndarray, config: DecoderConfig = CONFIG) -> np.ndarray:
    """The numpy reference's logits [batch, sequence, vocab], float64."""
    w = {k: v.astype(np.float64) for k, v in gguf.items()}
    return np.stack([llama_reference.forward(w, config, row) for row in ids])


def run_ort(model, feeds: dict) -> dict:
    import onnxruntime
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = 1
    data = model if isinstance(model, bytes) else ir.to_bytes(model)
    session = onnxruntime.InferenceSession(data, options, providers=["CPUExecutionProvider"])
    return dict(zip([o.name for o in session.get_outputs()], session.run(None, feeds)))


def run_onnxtrain(model, feeds: dict) -> dict:
    session = Session(model)
    return dict(zip(session.output_names, session.run(feeds)))


def empty_past(config: DecoderConfig, batch: int) -> dict:
    shape = (batch, config.num_key_value_heads, 0, config.head_dim)
    return {f"past_key_values.{i}.{kind}": np.zeros(shape, np.float32)
            for i in range(config.num_hidden_layers) for kind in ("key", "value")}


def step_feeds(ids: np.ndarray, start: int, past: dict) -> dict:
    """The cached form's feeds for ``ids`` [batch, n] at positions start .. start + n - 1 after ``past``."""
    positions = np.broadcast_to(np.arange(start, start + ids.shape[1], dtype=np.int64), ids.shape).copy()
    return {"input_ids": ids, "position_ids": positions, **past}


def presents_as_past(outputs: dict) -> dict:
    return {k.replace("present.", "past_key_values.", 1): v for k, v in outputs.items() if k.startswith("present.")}
