"""SmolLM2-135M-Instruct's tokenizer as a Hugging Face ``tokenizer.json``, written from the GGUF's metadata (the site
ships it beside the model): a byte-level BPE model with the GGUF's tokens as the vocabulary (ids in order) and its
merges by rank; the pre-tokenizer that ``tokenizer.ggml.pre = "smollm"`` names (llama.cpp splits at each ``\\p{N}``,
then by the GPT-2 pattern: Hugging Face's Digits(individual_digits) then ByteLevel(add_prefix_space=False)); the
ByteLevel decoder; the tokens of control type (``<|endoftext|>``, ``<|im_start|>``, ``<|im_end|>``, ...) as special
added tokens.  Read at build time with the gguf package; the check loads the file in the tokenizers package and in
onnxtrain.text.bpe and needs the same ids from both."""
from __future__ import annotations

import json
from pathlib import Path

from . import smollm2_gguf
from .stages import CheckFailed

CONTROL = 3  # llama.cpp's token type of a control token
PRE_TOKENIZER = "smollm"
CHECK_TEXTS = ["Hello world! It's 2024-01-15, and we've 3.14 apples.", "  def f(x):\n\treturn x ** 2  \n",
               "<|im_start|>user\nCafé, naïve: 日本語 😀<|im_end|>", "Ünïcödé ٣٤٥ ①②", ""]


def _value(fields, key: str, where: Path):
    if key not in fields:
        raise CheckFailed(f"{where}: the GGUF has no {key}")
    return fields[key].contents()


def config_from_gguf(fields, where: Path) -> dict:
    """The tokenizer.json of a GGUF's fields (gguf.GGUFReader.fields)."""
    model, pre = _value(fields, "tokenizer.ggml.model", where), _value(fields, "tokenizer.ggml.pre", where)
    if model != "gpt2" or pre != PRE_TOKENIZER:
        raise CheckFailed(f"{where}: tokenizer.ggml.model is {model!r} and tokenizer.ggml.pre {pre!r}; this recipe "
                          f"writes gpt2 with {PRE_TOKENIZER!r}")
    if _value(fields, "tokenizer.ggml.add_bos_token", where) or _value(fields, "tokenizer.ggml.add_space_prefix",
                                                                          where):
        raise CheckFailed(f"{where}: add_bos_token or add_space_prefix is set; this recipe writes neither")
    tokens = _value(fields, "tokenizer.ggml.tokens", where)
    types = _value(fields, "tokenizer.ggml.token_type", where)
    merges = _value(fields, "tokenizer.ggml.merges", where)
    if len(types) != len(tokens) or len(set(tokens)) != len(tokens):
        raise CheckFailed(f"{where}: {len(tokens)} tokens, {len(set(tokens))} distinct, {len(types)} token types")
    unknown = tokens[_value(fields, "tokenizer.ggml.unknown_token_id", where)]
    added = [{"id": i, "content": token, "single_word": False, "lstrip": False, "rstrip": False, "normalized": False,
              "special": True} for i, (token, kind) in enumerate(zip(tokens, types)) if kind == CONTROL]
    return {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": added,
        "normalizer": None,
        "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
            {"type": "Digits", "individual_digits": True},
            {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True}]},
        "post_processor": None,
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
        "model": {"type": "BPE", "dropout": None, "unk_token": unknown, "continuing_subword_prefix": None,
                  "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False, "ignore_merges": False,
                  "vocab": {token: i for i, token in enumerate(tokens)}, "merges": [m.split(" ") for m in merges]},
    }


def config(cache: Path) -> dict:
    """The tokenizer.json of SmolLM2's checked GGUF (unpacked into ``cache``)."""
    return config_from_gguf(smollm2_gguf.reader(cache).fields, smollm2_gguf.gguf_path(cache))


def check(data: str):
    """The tokenizers package and onnxtrain.text.bpe read ``data`` and give the same ids on CHECK_TEXTS, which
    decode back; CheckFailed otherwise."""
    import tokenizers
    from onnxtrain.text.bpe import BPETokenizer
    ref, mine = tokenizers.Tokenizer.from_str(data), BPETokenizer.from_json(data)
    for text in CHECK_TEXTS:
        want, got = ref.encode(text).ids, mine.encode(text)
        if got != want:
            raise CheckFailed(f"tokenizer.json: {text!r} is {got} in onnxtrain and {want} in tokenizers")
        if mine.decode(got, skip_special_tokens=False) != text:
            raise CheckFailed(f"tokenizer.json: {text!r} decodes to {mine.decode(got, skip_special_tokens=False)!r}")


def write(cache: Path, out: Path) -> Path:
    """``out``/tokenizer.json, written from the GGUF and checked."""
    data = json.dumps(config(cache), ensure_ascii=False, separators=(",", ":"))
    check(data)
    path = Path(out) / "tokenizer.json"
    path.write_text(data, encoding="utf-8")
    return path
