"""onnxtrain.text.decoder on a tiny random LLaMA (tiny_llama.py): both forms against the numpy reference
(artifacts/llama_reference.py, the GGUF's layout, RoPE on adjacent pairs, float64) and against transformers'
LlamaForCausalLM (torch, Hugging Face's layout) with the same weights, in onnxruntime and onnxtrain's runtime;
the cache against no cache; the RoPE pair convention; the float16 form; the config and weight errors."""
import numpy as np
import onnx
import pytest

from onnxtrain import ir
from onnxtrain.ir.dtypes import DataType
from onnxtrain.ir.rewrite import fold_casts
from onnxtrain.text import lora
from onnxtrain.text.decoder import (DecoderConfig, decoder_model, decoder_models, from_gguf_rope,
                                    rope_tables)
from onnxtrain.text.encoder import WeightsError

import tiny_llama as T

RUNNERS = {"onnxruntime": T.run_ort, "onnxtrain": T.run_onnxtrain}
# float32 graphs against the float64 reference, logits of magnitude up to 60: float32's rounding through two
# layers, measured at most 3.1e-5 in both runtimes (the float32 reference's own code: the same size)
TOLERANCE = 2e-4


@pytest.fixture(scope="module")
def weights():
    gguf = T.gguf_weights()
    return gguf, T.hf_weights(gguf)


@pytest.fixture(scope="module")
def forms(weights):
    return decoder_models(weights[1], T.CONFIG)


def ids(batch=2, length=9, seed=1):
    return np.random.default_rng(seed).integers(0, T.CONFIG.vocab_size, (batch, length)).astype(np.int64)


def test_graphs_are_valid_onnx_of_default_domain_ops(forms):
    for form in forms:
        proto = onnx.load_from_string(ir.to_bytes(form))
        onnx.checker.check_model(proto, full_check=True)
        assert {(o.domain, o.version) for o in proto.opset_import} == {("", 17)}
        assert all(n.domain == "" for n in proto.graph.node)
    train, generate = forms
    assert [v.name for v in train.graph.inputs] == ["input_ids"]
    assert [v.name for v in train.graph.outputs] == ["logits"]
    kv = [f"past_key_values.{i}.{k}" for i in range(2) for k in ("key", "value")]
    assert [v.name for v in generate.graph.inputs] == ["input_ids", "position_ids", *kv]
    assert [v.name for v in generate.graph.outputs] == ["logits", *(n.replace("past_key_values", "present")
                                                                     for n in kv)]
    # one copy of the weights: the two forms hold the same Tensor objects
    shared = {id(t) for t in train.graph.initializers} & {id(t) for t in generate.graph.initializers}
    assert {t.name for t in train.graph.initializers if id(t) in shared} >= set(T.hf_weights(T.gguf_weights()))


@pytest.mark.parametrize("runtime", RUNNERS)
def test_training_form_gives_the_references_logits(weights, forms, runtime):
    x = ids()
    got = RUNNERS[runtime](forms[0], {"input_ids": x})["logits"]
    want = T.reference_logits(weights[0], x)
    assert got.shape == (2, 9, T.CONFIG.vocab_size) and got.dtype == np.float32
    assert np.abs(want).max() > 10  # logits large enough for the bound to be a test
    np.testing.assert_allclose(got, want, rtol=0, atol=TOLERANCE)


def test_the_reference_agrees_with_transformers_llama(weights):
    """The numpy reference (GGUF layout, pairs) and Hugging Face's LlamaForCausalLM (halves, on from_gguf_rope's
    weights) compute the same function: the permutation and both RoPE conventions are right."""
    torch = pytest.importorskip("torch")
    from transformers import LlamaConfig, LlamaForCausalLM
    c = T.CONFIG
    model = LlamaForCausalLM(LlamaConfig(
        vocab_size=c.vocab_size, hidden_size=c.hidden_size, intermediate_size=c.intermediate_size,
        num_hidden_layers=c.num_hidden_layers, num_attention_heads=c.num_attention_heads,
        num_key_value_heads=c.num_key_value_heads, rope_theta=c.rope_theta, rms_norm_eps=c.rms_norm_eps,
        max_position_embeddings=c.max_position_embeddings, tie_word_embeddings=True, attention_bias=False,
        mlp_bias=False, hidden_act="silu")).double().eval()
    state = {k: torch.from_numpy(v.astype(np.float64)) for k, v in weights[1].items()}
    state["lm_head.weight"] = state["model.embed_tokens.weight"]
    missing, unexpected = model.load_state_dict(state, strict=False)
    assert not unexpected and all(k.endswith("rotary_emb.inv_freq") for k in missing), (missing, unexpected)
    x = ids()
    with torch.no_grad():
        theirs = model(torch.from_numpy(x)).logits.numpy()
    # float64 both, except that transformers computes RoPE's angles, cos and sin in float32 (its rotary embedding
    # casts to float): measured 1.1e-5 on logits up to 60; a wrong pair order is off by more than 1
    np.testing.assert_allclose(T.reference_logits(weights[0], x), theirs, rtol=0, atol=1e-4)


@pytest.mark.parametrize("runtime", RUNNERS)
def test_the_cache_gives_the_uncached_logits_step_by_step(forms, runtime):
    run, x = RUNNERS[runtime], ids(length=8)
    want = run(forms[0], {"input_ids": x})["logits"]
    out = run(forms[1], T.step_feeds(x[:, :5], 0, T.empty_past(T.CONFIG, 2)))
    got = [out["logits"]]
    assert out["present.0.key"].shape == (2, T.CONFIG.num_key_value_heads, 5, T.CONFIG.head_dim)
    for k in range(5, 8):
        out = run(forms[1], T.step_feeds(x[:, k:k + 1], k, T.presents_as_past(out)))
        got.append(out["logits"])
    assert out["present.1.value"].shape[2] == 8
    # each form carries float32's rounding in its own order (other shapes, other blockings): measured 3.6e-5
    np.testing.assert_allclose(np.concatenate(got, axis=1), want, rtol=0, atol=TOLERANCE)


def test_greedy_generation_through_the_cache_is_the_references(weights, forms):
    prompt = [3, 14, 15, 9, 2]
    want, _ = T.llama_reference.greedy({k: v.astype(np.float64) for k, v in weights[0].items()}, T.CONFIG,
                                       prompt, 10)
    out = T.run_ort(forms[1], T.step_feeds(np.array([prompt]), 0, T.empty_past(T.CONFIG, 1)))
    chosen = []
    for k in range(10):
        chosen.append(int(out["logits"][0, -1].argmax()))
        out = T.run_onnxtrain(forms[1], T.step_feeds(np.array([chosen[-1:]]), len(prompt) + k,
                                                     T.presents_as_past(out)))
    assert chosen == want


def test_the_gguf_pair_order_is_undone_and_matters(weights):
    """from_gguf_rope inverts llama.cpp's converter permutation; a graph fed the GGUF's rows unchanged (RoPE on the
    wrong pairs) is far from the reference, so the logits check would catch a wrong convention."""
    rng = np.random.default_rng(3)
    hf = rng.standard_normal((3 * 8, 5))
    # llama.cpp's convert_hf_to_gguf permute: each head's rows [2, d/2] swapped to [d/2, 2]
    gguf = hf.reshape(3, 2, 4, 5).swapaxes(1, 2).reshape(hf.shape)
    np.testing.assert_array_equal(from_gguf_rope(gguf, 3), hf)
    np.testing.assert_array_equal(gguf[1], hf[4])  # GGUF row 2i + 1 is Hugging Face row d/2 + i (i = 0)
    x = ids()
    wrong = T.run_ort(decoder_model(weights[0], T.CONFIG), {"input_ids": x})["logits"]
    assert np.abs(wrong - T.reference_logits(weights[0], x)).max() > 1


def test_rope_tables_rotate_halves_at_theta():
    cos, sin = rope_tables(T.CONFIG)
    d = T.CONFIG.head_dim
    assert cos.shape == (T.CONFIG.max_position_embeddings, d) and cos.dtype == np.float32
    np.testing.assert_array_equal(cos[:, :d // 2], cos[:, d // 2:])
    np.testing.assert_allclose(sin[5, 1], np.sin(5 * 10000.0 ** (-2 / d)), rtol=1e-7)


def test_float16_form_stores_half_weights_cast_to_float(weights):
    half = decoder_model(weights[1], T.CONFIG, float16=True)
    inits = half.graph.initializer_map()
    assert inits["model.layers.0.self_attn.q_proj.weight_fp16"].data_type == DataType.FLOAT16
    assert inits["rope.cos"].data_type == DataType.FLOAT  # RoPE's tables stay float32
    casts = [n for n in half.graph.nodes if n.op_type == "Cast"]
    assert len(casts) == len(weights[1])
    rounded = {k: v.astype(np.float16).astype(np.float32) for k, v in weights[1].items()}
    x = ids()
    want = T.run_ort(decoder_model(rounded, T.CONFIG), {"input_ids": x})["logits"]
    for got in (T.run_ort(half, {"input_ids": x})["logits"],
                T.run_onnxtrain(fold_casts(half), {"input_ids": x})["logits"]):
        np.testing.assert_allclose(got, want, rtol=0, atol=TOLERANCE)  # the same float32 weights: rounding only


def test_projections_are_plain_matmuls_lora_can_adapt(forms):
    suffixes = [f"self_attn.{p}_proj.weight" for p in "qkvo"]
    names = lora.targets(forms[0], suffixes)
    assert names[:4] == [f"model.layers.0.{s}" for s in suffixes] and len(names) == 8
    adapted, trainable = lora.add_adapters(forms[0], rank=2, names=names)
    x = ids()
    np.testing.assert_allclose(T.run_onnxtrain(adapted, {"input_ids": x})["logits"],
                               T.run_onnxtrain(forms[0], {"input_ids": x})["logits"], rtol=0, atol=1e-6)
    assert len(trainable) == 16


def test_an_untied_head_is_read_from_lm_head(weights):
    rng = np.random.default_rng(4)
    untied = dict(weights[1], **{"lm_head.weight": rng.standard_normal((50, 64)).astype(np.float32)})
    x = ids()
    got = T.run_ort(decoder_model(untied, T.CONFIG), {"input_ids": x})["logits"]
    want = T.reference_logits(dict(weights[0], **{"lm_head.weight": untied["lm_head.weight"]}), x)
    np.testing.assert_allclose(got, want, rtol=0, atol=TOLERANCE)


def test_bad_config_and_weights_are_named(weights):
    with pytest.raises(WeightsError, match="num_attention_heads 4 is not a multiple of num_key_value_heads 3"):
        DecoderConfig(64, 96, 2, 4, 3, 50)
    with pytest.raises(WeightsError, match="hidden_size 66 is not a multiple"):
        DecoderConfig(66, 96, 2, 4, 2, 50)
    with pytest.raises(WeightsError, match="vocab_size is 0"):
        DecoderConfig(64, 96, 2, 4, 2, 0)
    with pytest.raises(WeightsError, match=r"missing \['vocab_size'\]"):
        DecoderConfig.from_dict({"hidden_size": 64, "intermediate_size": 96, "num_hidden_layers": 2,
                                 "num_attention_heads": 4, "num_key_value_heads": 2})
    assert DecoderConfig.from_dict({**T.CONFIG.__dict__, "torch_dtype": "float32"}) == T.CONFIG
    missing = {k: v for k, v in weights[1].items() if k != "model.layers.1.mlp.up_proj.weight"}
    with pytest.raises(WeightsError, match="no tensor 'model.layers.1.mlp.up_proj.weight'"):
        decoder_model(missing, T.CONFIG)
    wrong = dict(weights[1], **{"model.norm.weight": np.ones(63, np.float32)})
    with pytest.raises(WeightsError, match=r"'model.norm.weight' has shape \[63\], the config needs \[64\]"):
        decoder_model(wrong, T.CONFIG)
    with pytest.raises(WeightsError, match="does not split into 3 heads"):
        from_gguf_rope(np.zeros((16, 4)), 3)
