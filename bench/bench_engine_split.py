"""Where a page step goes with the engine's fast path: onnxruntime-web's step loop (runTrainStep, runOptimizerStep,
lazyResetGrad) on the library, timed on the page's clock, against the time the engine's fast path
(web/lib/fast_steps.mjs) spends answering it in the worker (its own clock: the feeds written, the optimizer and
train programs run, the outputs read); the difference is the crossing (the page's side, the two messages).

The MLP 784-128-10 at batch 64 and the CNN at batch 32 (ORT's artifacts, AdamW), on a cross-origin isolated page
(5 microsecond clocks) at numThreads 1 and 2, each a fresh headless Chromium; --steps steps after 30 of warm-up, the
median of the page's step times and the mean of the engine's.  Needs the test site (its engine hooks count the
fast path's steps): `python3 build.py test tests/browser/test_fast_steps.py` builds it.
"""
from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import threading
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]
import build  # noqa: E402
import ort_cases as oc  # noqa: E402
from browser.conftest import CHROMIUM_ARGS  # noqa: E402

MODELS = {"MLP 784-128-10, batch 64": ("mlp_full_ce_adamw", [64, 784]),
          "CNN conv8-pool-fc, batch 32": ("cnn_full_ce_adamw", [32, 1, 28, 28])}

PAGE = """<!doctype html><script type="module">
import * as lib from "./onnxtrain/onnxtrain.mjs";
lib.env.wasm.numThreads = Number(new URLSearchParams(location.search).get("threads") ?? 1);
window.run = async (model, shape, n) => {
  const s = await lib.TrainingSession.create({ checkpointState: `${model}/checkpoint`,
    trainModel: `${model}/training`, optimizerModel: `${model}/optimizer` });
  const [a, b] = s.trainingInputNames;
  const size = shape.reduce((x, y) => x * y, 1);
  const feeds = {
    [a]: new lib.Tensor("float32", Float32Array.from({ length: size }, (_, i) => Math.sin(i)), shape),
    [b]: new lib.Tensor("int64", BigInt64Array.from({ length: shape[0] }, (_, i) => BigInt(i % 10)), [shape[0]]) };
  const step = async () => { await s.runTrainStep(feeds); await s.runOptimizerStep(); await s.lazyResetGrad(); };
  for (let i = 0; i < 30; i++) await step();
  const f0 = await lib._engineCall("fastSteps");
  const ms = [];
  for (let i = 0; i < n; i++) {
    const t = performance.now();
    await step();
    ms.push(performance.now() - t);
  }
  const f1 = await lib._engineCall("fastSteps");
  ms.sort((x, y) => x - y);
  return { page: ms[n >> 1], engine: (f1.ms - f0.ms) / (f1.steps - f0.steps), fast: f1.steps - f0.steps };
};
window.ready = true;
</script>"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=200)
    args = parser.parse_args()
    if not (build.TEST_SITE / build.LIBRARY / "onnxtrain.mjs").exists():
        sys.exit(f"{build.TEST_SITE} is not built: run `python3 build.py test tests/browser/test_fast_steps.py`")
    from playwright.sync_api import sync_playwright
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        shutil.copytree(build.TEST_SITE / build.LIBRARY, tmp / "onnxtrain", copy_function=build.link_or_copy)
        for name, _ in MODELS.values():
            (tmp / name).mkdir()
            for kind, path in oc.files(name).items():
                if path is not None:
                    shutil.copy2(path, tmp / name / kind)
        (tmp / "index.html").write_text(PAGE)
        server = build.make_server(tmp, 0, isolate=True)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        url = f"http://127.0.0.1:{server.server_address[1]}/"
        print(f"{'model':28} {'threads':>7} {'page ms':>8} {'engine ms':>9} {'crossing ms':>11} {'fast steps':>10}")
        with sync_playwright() as p:
            for threads in (1, 2):
                browser = p.chromium.launch(executable_path=str(build.CHROMIUM), args=CHROMIUM_ARGS)
                page = browser.new_page()
                page.goto(f"{url}?threads={threads}")
                page.wait_for_function("() => window.ready === true")
                for label, (name, shape) in MODELS.items():
                    r = page.evaluate("([m, s, n]) => run(m, s, n)", [name, shape, args.steps])
                    print(f"{label:28} {threads:>7} {r['page']:8.3f} {r['engine']:9.3f} "
                          f"{r['page'] - r['engine']:11.3f} {r['fast']:>10}", flush=True)
                browser.close()
        server.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
