"""A plain numpy LLaMA forward pass, the reference the SmolLM2 recipe and tests/text_prediction check onnxtrain's
decoder graphs against.  It takes the weights as a GGUF file lays them out (query and key rows permuted so RoPE
rotates adjacent pairs, x[2i] with x[2i+1]) and rotates pairs, where the graphs take Hugging Face's layout and
rotate halves: the two agree only if text.decoder.from_gguf_rope undoes the permutation.  No cache: every step
runs the whole sequence again.  Runs in the dtype asked (float64 for a reference free of float32's rounding)."""
from __future__ import annotations

import numpy as np


def _rms_norm(x: np.ndarray, weight: np.ndarray, eps: float) -> np.ndarray:
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * weight


def _rope_pairs(x: np.ndarray, theta: float) -> np.ndarray:
    """x [sequence, heads, head_dim] rotated by position: pair i, (x[2i], x[2i+1]), by position * theta^(-2i/d)."""
    t, _, d = x.shape
    angles = np.outer(np.arange(t, dtype=np.float64), theta ** (-np.arange(0, d, 2, dtype=np.float64) / d))
    cos, sin = (f(angles).astype(x.dtype)[:, None, :] for f in (np.cos, np.sin))
    even, odd = x[..., 0::2], x[..., 1::2]
    out = np.empty_like(x)
    out[..., 0::2] = even * cos - odd * sin
    out[..., 1::2] = odd * cos + even * sin
    return out


def forward(weights: dict, config, ids, dtype=np.float64) -> np.ndarray:
    """The logits [len(ids), vocab] of one sequence of token ids (positions 0, 1, ...).  ``weights``: Hugging
    Face's names and [out, in] layout, except q_proj and k_proj in the GGUF's pair order; ``config``: a
    text.decoder.DecoderConfig."""
    c = config
    w = {k: np.asarray(v, dtype) for k, v in weights.items()}
    heads, kv, d = c.num_attention_heads, c.num_key_value_heads, c.head_dim
    ids = np.asarray(ids, np.int64)
    t = len(ids)
    x = w["model.embed_tokens.weight"][ids]
    causal = np.triu(np.ones((t, t), bool), 1)
    for i in range(c.num_hidden_layers):
        p = f"model.layers.{i}."
        h = _rms_norm(x, w[p + "input_layernorm.weight"], c.rms_norm_eps)
        q = _rope_pairs((h @ w[p + "self_attn.q_proj.weight"].T).reshape(t, heads, d), c.rope_theta)
        k = _rope_pairs((h @ w[p + "self_attn.k_proj.weight"].T).reshape(t, kv, d), c.rope_theta)
        v = (h @ w[p + "self_attn.v_proj.weight"].T).reshape(t, kv, d)
        k, v = (np.repeat(a, heads // kv, axis=1) for a in (k, v))  # query head j reads key/value head j // group
        scores = np.einsum("qhd,khd->hqk", q, k) / np.sqrt(d)
        scores[:, causal] = -np.inf
        scores = np.exp(scores - scores.max(-1, keepdims=True))
        attention = scores / scores.sum(-1, keepdims=True)
        context = np.einsum("hqk,khd->qhd", attention, v).reshape(t, heads * d)
        x = x + context @ w[p + "self_attn.o_proj.weight"].T
        h = _rms_norm(x, w[p + "post_attention_layernorm.weight"], c.rms_norm_eps)
        gate = h @ w[p + "mlp.gate_proj.weight"].T
        x = x + (gate / (1 + np.exp(-gate)) * (h @ w[p + "mlp.up_proj.weight"].T)) @ w[p + "mlp.down_proj.weight"].T
    x = _rms_norm(x, w["model.norm.weight"], c.rms_norm_eps)
    return x @ w.get("lm_head.weight", w["model.embed_tokens.weight"]).T


def greedy(weights: dict, config, ids, steps: int, dtype=np.float64) -> tuple:
    """(the ``steps`` token ids that greedy decoding appends to ``ids``, the logits [steps, vocab] each was chosen
    from)."""
    ids, chosen, logits = list(ids), [], []
    for _ in range(steps):
        last = forward(weights, config, ids, dtype)[-1]
        logits.append(last)
        chosen.append(int(np.argmax(last)))
        ids.append(chosen[-1])
    return chosen, np.stack(logits)
