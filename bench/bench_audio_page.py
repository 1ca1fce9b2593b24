"""The audio task (issue 36) in the page: embeddings per second of the library's AudioTask.addClips (the log-mel
front end, the 76-frame windows every 8 frames and speech_embedding's backbone, in the engine) against
onnxruntime-web 1.19.2 running the same two models the site ships (melspectrogram.onnx, then embedding_model.onnx
on the windows in batches of 64), one thread each, on the same --clips clips of --seconds of 16 kHz sound.

One headless Chromium a round (Debian's, driven by Playwright), served from .cache/bench-site/ (bench_side_by_side's
copy of site/ with the bench pages and onnxruntime-web).  Reported: the median over rounds of each side's
per-round median windows per second [min-max], and the median of the per-round ratios.  Run after
`python3 build.py site` (or through `python3 build.py bench`)."""
from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "bench"), str(ROOT / "tests")]
import bench_side_by_side as side  # noqa: E402
import build  # noqa: E402


def page_round(playwright, url: str, args) -> dict:
    from browser.conftest import CHROMIUM_ARGS
    browser = playwright.chromium.launch(executable_path=str(build.CHROMIUM), args=CHROMIUM_ARGS)
    try:
        page = browser.new_context().new_page()
        page.goto(url + "bench-pages/audio.html")
        page.wait_for_function("() => window.bench && window.bench.ready")
        timing = {"warmupMs": 1000 * args.warmup, "budgetMs": 1000 * args.budget, "minCalls": 3}
        return page.evaluate("(o) => window.bench.run(o)", {"clips": args.clips, "seconds": args.seconds,
                                                            "timing": timing})
    finally:
        browser.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3, help="fresh Chromiums")
    parser.add_argument("--clips", type=int, default=8, help="clips a call")
    parser.add_argument("--seconds", type=float, default=1.5, help="each clip's length")
    parser.add_argument("--warmup", type=float, default=2.0, help="seconds of untimed calls a round and side")
    parser.add_argument("--budget", type=float, default=6.0, help="seconds of timed calls a round and side")
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright
    side.assemble([])
    server, url = side.serve(side.BENCH_SITE, side.Served())
    rounds = []
    try:
        with sync_playwright() as p:
            for i in range(args.rounds):
                rounds.append(page_round(p, url, args))
                r = rounds[-1]
                print(f"round {i + 1}: onnxtrain {statistics.median(r['ours']):.1f} ms, onnxruntime-web "
                      f"{statistics.median(r['ort']):.1f} ms a call of {r['windows']} windows", flush=True)
    finally:
        server.shutdown()
    assert all(r["windows"] == r["ortWindows"] for r in rounds), "the two sides embedded different windows"
    med = statistics.median
    ours = [1e3 * r["windows"] / med(r["ours"]) for r in rounds]
    theirs = [1e3 * r["windows"] / med(r["ort"]) for r in rounds]
    cell = lambda v: f"{med(v):.0f} [{min(v):.0f}-{max(v):.0f}]"  # noqa: E731
    print(f"\nThe audio task's embeddings in Chromium, {len(rounds)} rounds, one thread, {args.clips} clips of "
          f"{args.seconds} s a call ({rounds[0]['windows']} windows)\n")
    print("| | onnxtrain (AudioTask.addClips) | onnxruntime-web 1.19.2 (the two models) | onnxtrain / ORT-web |")
    print("|---|---|---|---|")
    print(f"| windows embedded per second | {cell(ours)} | {cell(theirs)} | "
          f"{med([a / b for a, b in zip(ours, theirs)]):.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
