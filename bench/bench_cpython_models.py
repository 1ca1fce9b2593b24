"""The numpy provider against the wasm provider in CPython (the native build; the wasm provider runs each program
in the C executor, one call per program), one thread (OMP_NUM_THREADS=1 before numpy loads), on the common models
beyond the MLP and the CNN (bench_cpython_wasm.py):

  convblock, transformer, transformer_ot   bench_models.py's training steps (train + AdamW + lazy_reset_grad)
  backbone                                  EfficientNet-Lite0's embeddings of 16 RGBA frames 224x224 (tasks/backbone.py,
                                            preprocessing included; needs the built site's artifact)
  personalize, personalize_ft               the personalization head's training step, batch 8 (tasks/personalize.py),
                                            without and with the fine-tuned last convolution
  minilm                                    MiniLM's sentence embeddings of 8 texts (tasks/text.py's Encoder)
  lora                                      the text task's LoRA training step, batch 4, rank 8 (text/lora.py)
  text_head                                 the text task's head training step on cached embeddings, batch 4

Per model: the host nodes of the wasm provider's programs, then the median of --steps timed runs per provider after
--warmup, measured alternately in --rounds rounds so that machine noise hits both.  Needs the native build
(``python3 build.py native``).
"""
from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "bench"), str(ROOT / "tests"), str(ROOT / "tests" / "text")]
import bench_models as bm  # noqa: E402
from bench_train_step import measure  # noqa: E402

from onnxtrain import api  # noqa: E402
from onnxtrain.ops import simd  # noqa: E402

BACKBONE = ROOT / "site" / "artifacts" / "efficientnet_lite0" / "backbone.onnx"
TEXTS = ["The team won the match in overtime.", "She scored two goals in the final.",
         "Add the garlic and simmer for ten minutes.", "This soup needs more salt.",
         "The new phone has a faster chip.", "Update your browser to fix the bug.",
         "The coach praised the defenders after the game.", "We baked bread with rye flour."]


def training_step(key: str, device: str):
    f = bm.files(key)
    state = api.CheckpointState.load_checkpoint(str(f["checkpoint"]))
    module = api.Module(str(f["training"]), state, str(f["eval"]), device=device)
    optimizer = api.Optimizer(str(f["optimizer"]), module)
    batch = bm.batch(key)

    def step():
        module(*batch)
        optimizer.step()
        module.lazy_reset_grad()
    return step, lambda: module._train.fallbacks + optimizer._session.fallbacks


def backbone_embed(device: str):
    from onnxtrain.tasks.backbone import Backbone
    backbone = Backbone(BACKBONE.read_bytes(), device=device)
    frames = np.random.default_rng(0).integers(0, 256, (16, 224, 224, 4), dtype=np.uint8)
    return lambda: backbone.embed(frames), lambda: backbone.embedder.fallbacks


def personalize_step(device: str, fine_tune: bool):
    from onnxtrain.tasks.backbone import Backbone
    from onnxtrain.tasks.personalize import PersonalizeSession
    session = PersonalizeSession(Backbone(BACKBONE.read_bytes(), device=device), device=device)
    rng = np.random.default_rng(0)
    for c in range(3):
        session.add_class(f"class {c}")
        session.add_samples(rng.integers(0, 256, (8, 120, 150, 4), dtype=np.uint8), c)
    session.setup(fine_tune=fine_tune)
    run = session.training
    return (lambda: session.step(8, 0.003)), lambda: run.module._train.fallbacks + run.optimizer._session.fallbacks


def _minilm():
    import minilm
    return minilm.files()


def minilm_embed(device: str):
    from onnxtrain.tasks.text import Encoder
    from onnxtrain.text.tokenizer import Tokenizer
    encoder_bytes, tokenizer = _minilm()
    encoder = Encoder(encoder_bytes, device)
    batch = Tokenizer.from_json(tokenizer).batch(TEXTS)
    return lambda: encoder.embed(batch), lambda: encoder.session.fallbacks


def text_step(device: str, mode: str):
    from onnxtrain.tasks.text import Encoder, TextSession
    encoder_bytes, tokenizer = _minilm()
    session = TextSession(Encoder(encoder_bytes, device), tokenizer, device=device)
    for k in range(2):
        session.add_class(f"class {k}")
        session.add_texts(TEXTS[k::2], k)
    session.setup(mode=mode, rank=8)
    run = session.training
    return (lambda: session.step(4, 1e-3)), lambda: run.module._train.fallbacks + run.optimizer._session.fallbacks


CASES = {
    "convblock": ("conv block 96x96 (dw-sep), batch 16, step", lambda d: training_step("convblock", d)),
    "transformer": ("transformer 2x(64,128,h4), batch 8, step", lambda d: training_step("transformer", d)),
    "transformer_ot": ("transformer, onnxtrain's artifacts, step", lambda d: training_step("transformer_ot", d)),
    "backbone": ("EfficientNet-Lite0, 16 frames 224x224, embed", backbone_embed),
    "personalize": ("personalization head, batch 8, step", lambda d: personalize_step(d, False)),
    "personalize_ft": ("personalization + last conv, batch 8, step", lambda d: personalize_step(d, True)),
    "minilm": ("MiniLM, 8 texts, embed", minilm_embed),
    "lora": ("MiniLM LoRA r8, batch 4, step", lambda d: text_step(d, "lora")),
    "text_head": ("text task's head on embeddings, batch 4, step", lambda d: text_step(d, "head")),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("models", nargs="*", default=list(CASES), help=f"of {', '.join(CASES)}")
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=4)
    args = parser.parse_args()
    if not simd.available():
        sys.exit("bench_cpython_models: the native kernels are not loaded (python3 build.py native)")
    print(f"{'model':46s} {'host nodes':>10s} {'numpy ms':>10s} {'wasm ms':>10s} {'wasm/numpy':>11s}")
    for key in args.models:
        label, make = CASES[key]
        runs = {d: make(d) for d in ("numpy", "wasm")}
        samples = {d: [] for d in runs}
        per_round = max(1, args.steps // args.rounds)
        for r in range(args.rounds + 1):                  # round 0 warms up
            for d, (fn, _) in runs.items():
                times = measure(fn, args.warmup if r == 0 else per_round)
                if r:
                    samples[d] += times
        med = {d: statistics.median(v) * 1e3 for d, v in samples.items()}
        host = runs["wasm"][1]()
        print(f"{label:46s} {len(host):10d} {med['numpy']:10.2f} {med['wasm']:10.2f} {med['wasm'] / med['numpy']:11.2f}",
              flush=True)
        for line in host:
            print(f"    host: {line[:160]}")


if __name__ == "__main__":
    main()
