"""Training steps in the page's worker (Pyodide, headless Chromium), plus cold-start phases.

MLP 784-128-10 at batch 64 and the CNN at batch 32 with AdamW (ORT-generated artifacts), median ms per
full step (train + optimizer + reset, including the typed-array hand-over) after a 2 s warm-up.
Run through `python3 build.py bench` (which builds the site first when needed).
"""
from __future__ import annotations

import statistics
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests"), str(ROOT / "pysrc")]
import build  # noqa: E402
import ort_cases as oc  # noqa: E402
from browser.conftest import CHROMIUM_ARGS  # noqa: E402
from browser.test_worker import TO_JS, files_of, js_batch  # noqa: E402

CASES = [("MLP 784-128-10, batch 64", "mlp_full_ce_adamw"), ("CNN conv8-pool-fc, batch 32", "cnn_full_ce_adamw")]
STEPS = 200


def main():
    from playwright.sync_api import sync_playwright
    if not (build.SITE / "index.html").exists():
        build.build_site()
    server = build.make_server(build.SITE, 0, isolate=False)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/"
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(build.CHROMIUM), args=CHROMIUM_ARGS)
        page = browser.new_page()
        t0 = time.perf_counter()
        page.goto(url)
        info = page.evaluate("() => window.onnxtrain.ready")
        ready = (time.perf_counter() - t0) * 1e3
        t = info["timings"]
        print(f"cold start (ms): Pyodide ready {t['pyodide']:.0f}, numpy ready {t['numpy']:.0f}, "
              f"wheel installed {t['wheel']:.0f} (worker clock); page open -> ready {ready:.0f}")
        print(f"{'model':30s} {'ms/step':>8s} {'load ms':>8s}")
        for label, name in CASES:
            batch = js_batch(oc.batches(name, 1)[0])
            page.evaluate(TO_JS, [files_of(name), [batch]])
            load = page.evaluate("async () => { const t = performance.now(); "
                                 "await window.onnxtrain.call('load', window.__files); return performance.now() - t; }")
            start = time.perf_counter()
            while time.perf_counter() - start < 2.0:  # warm-up: let V8 tier up the wasm
                page.evaluate("() => window.onnxtrain.call('train', {batches: Array(10).fill(window.__batches[0])})")
            result = page.evaluate(f"() => window.onnxtrain.call('train', "
                                   f"{{batches: Array({STEPS}).fill(window.__batches[0])}})")
            print(f"{label:30s} {statistics.median(result['stepMilliseconds']):8.2f} {load:8.0f}", flush=True)
        browser.close()
    server.shutdown()


if __name__ == "__main__":
    main()
