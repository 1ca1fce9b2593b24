"""Personalizing EfficientNet-Lite0 in the browser: the camera flow's hot paths in one page and one headless
Chromium (Debian's, driven by Playwright; each round a fresh browser):

- the engine's start (the library's start(): Pyodide, numpy, the wheel), then the backbone's download and load in
  the engine (PersonalizeTask.create);
- embeddings per second: the backbone's features of new samples, --batch frames per addSamples request, as the
  camera flow sends them while a button is held;
- training the head on the samples (--classes x --per-class, --epochs epochs);
- live predictions per second: predict() of one 224x224 frame, as the camera flow's live loop;
- the peer, onnxruntime-web 1.19.2 (one thread), running the model the task exports (uint8 frames ->
  preprocessing -> backbone -> head) on the same frames: a batch of --batch, and one frame;
- the library's part again on WebGPU (PersonalizeTask.create with executionProviders ["webgpu"]), in a second
  headless Chromium of the round launched the same way plus --enable-unsafe-webgpu, then --webgpu-counts further
  calls of each path counted on the device from the engine's Python (the test hooks' runPython): the dispatches,
  submissions and calls from Python into the page's WebGPU host, per embedding and per live prediction.  Headless
  Chromium's adapter is SwiftShader, a CPU implementation: its times measure the provider's overhead, not a
  GPU's speed.  --no-webgpu leaves it out.

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


def run_page(playwright, url: str, args, flags: list, method: str, extra: dict = None, timeout: float = 0) -> dict:
    """A fresh browser with ``flags``, the bench page, and its ``window.bench[method]`` run; with ``timeout``
    (seconds), what it measured by then ("stopped" says so) when it takes longer."""
    browser = playwright.chromium.launch(executable_path=str(build.CHROMIUM), args=flags)
    try:
        context = browser.new_context()
        page = context.new_page()
        page.goto(url + "bench-pages/personalize.html")
        page.wait_for_function("() => window.bench && window.bench.ready")
        timing = {"warmupMs": 1000 * args.warmup, "budgetMs": 1000 * args.budget, "minCalls": 5}
        options = {"framesUrl": "../bench-artifacts/personalize/frames.bin",
                   "backboneUrl": "../artifacts/efficientnet_lite0/backbone.onnx", "classes": args.classes,
                   "perClass": args.per_class, "batch": args.batch, "epochs": args.epochs, "timing": timing,
                   **(extra or {})}
        if not timeout:
            return page.evaluate(f"(o) => window.bench.{method}(o)", options)
        page.evaluate(f"(o) => {{ window.benchDone = window.bench.{method}(o).then((r) => ({{ r }}), "
                      f"(e) => ({{ e: String(e && e.message || e) }})).then((d) => {{ window.benchEnd = d; }}); }}",
                      options)
        try:
            page.wait_for_function("() => window.benchEnd", timeout=1000 * timeout, polling=1000)
        except Exception:  # noqa: BLE001 - over the time allowed: what it measured so far
            return {**page.evaluate("() => JSON.parse(JSON.stringify(window.benchPartial || {}))"),
                    "stopped": f"stopped after {timeout:g} s"}
        end = page.evaluate("() => window.benchEnd")
        if "e" in end:
            raise RuntimeError(end["e"])
        return end["r"]
    finally:
        browser.close()


def one_round(playwright, url: str, args, with_webgpu: bool) -> dict:
    """The library and onnxruntime-web in one browser; then (``with_webgpu``), in a second one with WebGPU, the
    library on WebGPU (its result, or why it failed, under "webgpu")."""
    from browser.conftest import CHROMIUM_ARGS
    out = run_page(playwright, url, args, CHROMIUM_ARGS, "run")
    if with_webgpu:
        print(f"  the library and onnxruntime-web: {({k: v for k, v in out.items() if not isinstance(v, list)})}",
              flush=True)
        try:
            out["webgpu"] = run_page(playwright, url, args, CHROMIUM_ARGS + ["--enable-unsafe-webgpu"], "webgpu",
                                     {"counts": args.webgpu_counts}, args.webgpu_timeout)
        except Exception as e:  # noqa: BLE001 - reported as n/a
            out["webgpu"] = f"n/a ({side.short(e)})"
    return out


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
    if args.webgpu:
        webgpu_report(rounds, args, ours_embed, ours_live)


def webgpu_report(rounds: list, args, ours_embed: list, ours_live: list) -> None:
    """The WebGPU rows: embeddings and live predictions per second, and the device's counts per embedding and
    per live prediction."""
    gpu = [r.get("webgpu") for r in rounds]
    stopped = [g for g in gpu if isinstance(g, dict) and "stopped" in g]
    gpu = [None if isinstance(g, dict) and "stopped" in g else g for g in gpu]
    done = [(g, r) for g, r in zip(gpu, rounds) if isinstance(g, dict)]
    if stopped:
        print(f"\nWebGPU: {len(stopped)} round(s) {stopped[0]['stopped']} (--webgpu-timeout); measured by then: "
              + ", ".join(f"{k} {v}" for k, v in stopped[0].items()
                          if k != "stopped" and not isinstance(v, (list, dict))))
    if not done:
        print(f"\nWebGPU: {next((g for g in gpu if isinstance(g, str)), 'n/a (no round finished)')}")
        return
    embed = [1000 * args.batch / med(g["embedBatchMs"]) for g, _ in done]
    live = [1000 / med(g["live"]) for g, _ in done]
    wasm_embed = [x for x, g in zip(ours_embed, gpu) if isinstance(g, dict)]
    wasm_live = [x for x, g in zip(ours_live, gpu) if isinstance(g, dict)]
    ratio = lambda a, b: med([x / y for x, y in zip(a, b)])  # noqa: E731
    e, p = done[0][0]["embedCounts"], done[0][0]["liveCounts"]
    info = e.get("adapter") or {}
    adapter = ", ".join(str(info[k]) for k in ("vendor", "architecture", "device", "description") if info.get(k))
    print(f"\nonnxtrain on WebGPU (executionProviders [\"webgpu\"], Chromium with --enable-unsafe-webgpu; adapter: "
          f"{adapter or '?'}; {len(done)} rounds; provider {done[0][0]['executionProvider']!r}); software WebGPU "
          f"(SwiftShader, on the CPU) measures the provider's overhead, not a GPU's speed\n")
    print("| | onnxtrain, WebGPU | WebGPU / onnxtrain (wasm) | dispatches | submissions | bridge calls (Python -> JS) |")
    print("|---|---|---|---|---|---|")
    per = args.batch
    print(f"| embeddings per second (batches of {args.batch}); counts per embedding | {cell(embed, 3)} | "
          f"{ratio(embed, wasm_embed):.3g} | {e['embedDispatches'] / per:g} | {e['submissions'] / per:g} | "
          f"{e['bridgeCalls'] / per:g} |")
    print(f"| live predictions per second (one frame); counts per prediction | {cell(live, 3)} | "
          f"{ratio(live, wasm_live):.3g} | {p['embedDispatches'] + (p['headDispatches'] or 0)} "
          f"({p['embedDispatches']} + {p['headDispatches']}) | {p['submissions']:g} | {p['bridgeCalls']:g} |")
    diffs = [max(abs(a - b) for a, b in zip(g["probabilities"], r["probabilities"])) for g, r in done]
    fallbacks = sorted({f for g, _ in done for c in (g["embedCounts"], g["liveCounts"]) for f in c["fallbacks"]})
    print(f"\nper batch of {args.batch}: {e['embedDispatches']} dispatches, {e['submissions']:g} submissions, "
          f"{e['bridgeCalls']:g} bridge calls (counts over {e['calls']} calls after the timing); "
          f"{cell([med(g['embedBatchMs']) / 1000 for g, _ in done], 2)} s per batch and "
          f"{cell([med(g['live']) / 1000 for g, _ in done], 2)} s per live prediction; the engine's start "
          f"{cell([g['engineMs'] / 1000 for g, _ in done], 2)} s; the backbone's load (its programs compiled for "
          f"the probe) {cell([g['loadMs'] / 1000 for g, _ in done], 2)} s; the first {done[0][0]['samples']} "
          f"samples {cell([g['firstSamplesMs'] / 1000 for g, _ in done], 2)} s; the head trained in "
          f"{cell([g['trainMs'] / 1000 for g, _ in done], 2)} s; largest difference of a probability, WebGPU vs "
          f"wasm (each trained alike): {max(diffs):.1e}; nodes on the CPU: {fallbacks or 'none'}")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--warmup", type=float, default=2.0, help="seconds of untimed calls before each timing")
    parser.add_argument("--budget", type=float, default=4.0, help="seconds of timed calls (at least 5 calls)")
    parser.add_argument("--batch", type=int, default=8, help="frames per addSamples request")
    parser.add_argument("--classes", type=int, default=3)
    parser.add_argument("--per-class", type=int, default=16)
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--no-webgpu", dest="webgpu", action="store_false", help="leave the WebGPU column out")
    parser.add_argument("--webgpu-counts", type=int, default=3,
                        help="further calls of each path counted on the WebGPU device")
    parser.add_argument("--webgpu-rounds", type=int, default=1,
                        help="rounds with the WebGPU column (the software adapter is slow: minutes a round)")
    parser.add_argument("--webgpu-timeout", type=float, default=900,
                        help="seconds the WebGPU part of a round may take (then what it measured so far is shown)")
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
                rounds.append(one_round(p, url, args, args.webgpu and i < args.webgpu_rounds))
                flat = lambda d: {k: flat(v) if isinstance(v, dict) else v  # noqa: E731
                                  for k, v in d.items() if not isinstance(v, list)}
                print(f"round {i + 1}: {flat(rounds[-1])}", flush=True)
    finally:
        server.shutdown()
    report(rounds, args)
    print(f"\n(bench took {time.perf_counter() - t0:.0f} s)")


if __name__ == "__main__":
    main()
