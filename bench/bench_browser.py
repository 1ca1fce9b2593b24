"""Training steps in the page's worker (Pyodide, headless Chromium), plus cold-start phases.

MLP 784-128-10 at batch 64 and the CNN at batch 32 with AdamW (ORT-generated artifacts), median ms per
full step (train + optimizer + reset, including the typed-array hand-over) after a 2 s warm-up, with numpy's
own matmul and with scipy's BLAS (which the worker turns on once scipy has loaded), in the same page.  Each
round is a fresh browser with an empty profile, so every round also measures a cold start:
page open -> Pyodide ready -> numpy ready -> wheel installed -> artifacts loaded.  The site is served
without cross-origin isolation, as a static host would (the timer then ticks in 0.1 ms).
Run through `python3 build.py bench` (which builds the site first when needed).
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests"), str(ROOT / "pysrc")]
import build  # noqa: E402
import ort_cases as oc  # noqa: E402
from browser.conftest import CHROMIUM_ARGS  # noqa: E402
from browser.test_worker import TO_JS, files_of, js_batch  # noqa: E402

CASES = [("MLP 784-128-10, batch 64", "mlp_full_ce_adamw"), ("CNN conv8-pool-fc, batch 32", "cnn_full_ce_adamw")]
PHASES = ["Pyodide ready", "numpy ready", "wheel installed", "page open -> ready", "scipy BLAS on",
          "MLP artifacts loaded"]
MATMULS = {"numpy matmul": "False", "scipy BLAS": "True"}
SET_BLAS = "(on) => window.onnxtrain.call('runPython', {code: `from onnxtrain.ops.matmul import use_scipy_blas\n" \
           "use_scipy_blas(${on})`})"
LOAD = ("async () => { const t = performance.now(); await window.onnxtrain.call('load', window.__files); "
        "return performance.now() - t; }")


def one_round(playwright, url: str, steps: int) -> tuple[dict, dict]:
    """A fresh browser: cold-start phases (ms) and each case's median ms/step."""
    browser = playwright.chromium.launch(executable_path=str(build.CHROMIUM), args=CHROMIUM_ARGS)
    try:
        page = browser.new_page()
        t0 = time.perf_counter()
        page.goto(url)
        timings = page.evaluate("() => window.onnxtrain.ready")["timings"]
        cold = {"Pyodide ready": timings["pyodide"], "numpy ready": timings["numpy"],
                "wheel installed": timings["wheel"], "page open -> ready": (time.perf_counter() - t0) * 1e3}
        assert page.evaluate("() => window.onnxtrain.blas"), "scipy's BLAS did not load in the worker"
        cold["scipy BLAS on"] = (time.perf_counter() - t0) * 1e3
        step_ms = {}
        for label, name in CASES:
            page.evaluate(TO_JS, [files_of(name), [js_batch(oc.batches(name, 1)[0])]])
            load = page.evaluate(LOAD)
            cold.setdefault("MLP artifacts loaded", load)
            for matmuls, on in MATMULS.items():
                page.evaluate(SET_BLAS, on)
                start = time.perf_counter()
                while time.perf_counter() - start < 2.0:  # warm-up: let V8 tier up the wasm
                    page.evaluate("() => window.onnxtrain.call('train', {batches: Array(10).fill(window.__batches[0])})")
                result = page.evaluate(f"() => window.onnxtrain.call('train', "
                                       f"{{batches: Array({steps}).fill(window.__batches[0])}})")
                step_ms[label, matmuls] = statistics.median(result["stepMilliseconds"])
        return cold, step_ms
    finally:
        browser.close()


def summary(values: list[float], digits: int) -> str:
    return f"{statistics.median(values):.{digits}f} [{min(values):.{digits}f}-{max(values):.{digits}f}]"


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--steps", type=int, default=200)
    args, _ = parser.parse_known_args()  # build.py bench hands every script the same arguments
    from playwright.sync_api import sync_playwright
    if not (build.SITE / "index.html").exists():
        build.build_site()
    server, url = build.serve_in_background(build.SITE)
    rounds = []
    with sync_playwright() as p:
        for _ in range(args.rounds):
            rounds.append(one_round(p, url, args.steps))
    server.shutdown()
    print(f"Browser (headless Chromium, Pyodide worker): median [min-max] over {args.rounds} fresh-browser rounds")
    print(f"{'model':30s} " + " ".join(f"{m + ' ms/step':>24s}" for m in MATMULS) + f" {'ratio':>6s}")
    for label, _ in CASES:
        cells = [summary([r[1][label, m] for r in rounds], 2) for m in MATMULS]
        ratio = statistics.median([r[1][label, "numpy matmul"] / r[1][label, "scipy BLAS"] for r in rounds])
        print(f"{label:30s} " + " ".join(f"{c:>24s}" for c in cells) + f" {ratio:5.2f}x")
    print(f"{'cold start (fresh profile)':30s} {'ms':>20s}")
    for phase in PHASES:
        print(f"{phase:30s} {summary([r[0][phase] for r in rounds], 0):>20s}")


if __name__ == "__main__":
    main()
