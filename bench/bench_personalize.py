"""Personalizing EfficientNet-Lite0 in the browser: the camera flow's hot paths in one page and one headless
Chromium (Debian's, driven by Playwright; each round a fresh browser):

- the engine's start (the library's start(): Pyodide, numpy, the wheel), then the backbone's download and load in
  the engine (PersonalizeTask.create);
- embeddings per second: the backbone's features of new samples, --batch frames per addSamples request, as the
  camera flow sends them while a button is held;
- training the head on the samples (--classes x --per-class, --epochs epochs);
- live predictions per second: predict() of one 224x224 frame, as the camera flow's live loop;
- the peer, onnxruntime-web 1.19.2 (one thread), running the model the task exports (uint8 frames ->
  preprocessing -> backbone -> head) on the same frames: a batch of --batch, and one frame.

Frames are scenes from real photos (tests/photo_scenes.py), RGBA 224x224.  Reported: the median over rounds of
the per-round medians [min-max], and the median of the per-round ratios.  Served from .cache/bench-site/ (the
side-by-side bench's copy of site/ with the bench pages and onnxruntime-web)."""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests"), str(ROOT / "pysrc"), str(ROOT / "bench")]
import bench_side_by_side as side  # noqa: E402
import build  # noqa: E402
from photo_scenes import scenes  # noqa: E402


def frames_file(path: Path, count: int) -> None:
    images, _, _ = scenes(count // 4 + 1, held_out=False)
    rgba = np.concatenate([images, np.full((*images.shape[:3], 1), 255, np.uint8)], -1)[:count]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(rgba.tobytes())


def one_round(playwright, url: str, args) -> dict:
    from browser.conftest import CHROMIUM_ARGS
    browser = playwright.chromium.launch(executable_path=str(build.CHROMIUM), args=CHROMIUM_ARGS)
    try:
        context = browser.new_context()
        page = context.new_page()
        page.goto(url + "bench-pages/personalize.html")
        page.wait_for_function("() => window.bench && window.bench.ready")
        timing = {"warmupMs": 1000 * args.warmup, "budgetMs": 1000 * args.budget, "minCalls": 5}
        return page.evaluate("(o) => window.bench.run(o)", {
            "framesUrl": "../bench-artifacts/personalize/frames.bin",
            "backboneUrl": "../artifacts/efficientnet_lite0/backbone.onnx", "classes": args.classes,
            "perClass": args.per_class, "batch": args.batch, "epochs": args.epochs, "timing": timing})
    finally:
        browser.close()


def med(values):
    return statistics.median(values)


def cell(values, digits=1) -> str:
    return f"{med(values):.{digits}f} [{min(values):.{digits}f}-{max(values):.{digits}f}]"


def report(rounds: list, args) -> None:
    per_second = lambda ms, n=1: [1000 * n / med(r) for r in ms]  # noqa: E731
    ours_embed = per_second([r["embedBatchMs"] for r in rounds], args.batch)
    ort_embed = per_second([r["ortBatchMs"] for r in rounds], args.batch)
    ours_live = per_second([r["live"] for r in rounds])
    ort_live = per_second([r["ortLive"] for r in rounds])
    ratio = lambda a, b: med([x / y for x, y in zip(a, b)])  # noqa: E731
    print(f"\nPersonalizing EfficientNet-Lite0 in Chromium, {len(rounds)} rounds (median [min-max] of the per-round "
          f"medians; one thread)\n")
    print("| | onnxtrain (the library) | onnxruntime-web 1.19.2 | onnxtrain / ORT-web |")
    print("|---|---|---|---|")
    print(f"| embeddings per second (batches of {args.batch}) | {cell(ours_embed)} | {cell(ort_embed)} | "
          f"{ratio(ours_embed, ort_embed):.2f} |")
    print(f"| live predictions per second (one frame) | {cell(ours_live)} | {cell(ort_live)} | "
          f"{ratio(ours_live, ort_live):.2f} |")
    print(f"\nthe engine's start (fresh profile): {cell([r['engineMs'] / 1000 for r in rounds], 2)} s; then the "
          f"backbone's download and load: {cell([r['loadMs'] / 1000 for r in rounds], 2)} s for "
          f"{rounds[0]['backboneBytes'] / 1e6:.1f} MB; the first {rounds[0]['samples']} samples embedded in "
          f"{cell([r['firstSamplesMs'] / 1000 for r in rounds], 2)} s; the head trained ({args.epochs} epochs) in "
          f"{cell([r['trainMs'] / 1000 for r in rounds], 2)} s; the exported model "
          f"{rounds[0]['exportBytes'] / 1e6:.1f} MB; largest difference of a probability, onnxtrain vs "
          f"onnxruntime-web: {max(r['maxProbabilityDiff'] for r in rounds):.1e}")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--warmup", type=float, default=2.0, help="seconds of untimed calls before each timing")
    parser.add_argument("--budget", type=float, default=4.0, help="seconds of timed calls (at least 5 calls)")
    parser.add_argument("--batch", type=int, default=8, help="frames per addSamples request")
    parser.add_argument("--classes", type=int, default=3)
    parser.add_argument("--per-class", type=int, default=16)
    parser.add_argument("--epochs", type=int, default=20)
    args, _ = parser.parse_known_args()  # build.py bench hands every bench script the same arguments
    from playwright.sync_api import sync_playwright
    t0 = time.perf_counter()
    side.assemble([])
    frames_file(side.BENCH_SITE / "bench-artifacts" / "personalize" / "frames.bin", 48)
    server, url = side.serve(side.BENCH_SITE, side.Served())
    rounds = []
    try:
        with sync_playwright() as p:
            for i in range(args.rounds):
                rounds.append(one_round(p, url, args))
                print(f"round {i + 1}: {({k: v for k, v in rounds[-1].items() if not isinstance(v, list)})}",
                      flush=True)
    finally:
        server.shutdown()
    report(rounds, args)
    print(f"\n(bench took {time.perf_counter() - t0:.0f} s)")


if __name__ == "__main__":
    main()
