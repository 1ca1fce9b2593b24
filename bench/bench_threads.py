"""The kernel pool's size thresholds (onnxtrain.ops.simd.POOL_MIN) and what it gives: each pooled kernel timed in
the engine of a cross-origin isolated page in headless Chromium at 1 thread (the side module) and at --threads
threads (the pool, its operands copied in and out), over a range of sizes; then EfficientNet-Lite0's embeddings
(the personalization backbone, PersonalizeTask.addSamples) at 1 and --threads threads alternately in the same page.
Reported per kernel and size: the median ms of --repeats calls at each count and the ratio pool / one thread
(below 1: the pool is faster), and the pool with all the parts on the calling thread (what copying the operands in
and out costs).  Needs the test site (its engine runs Python for the page): `python3 build.py test
tests/browser/test_threads.py` builds it."""
from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import threading
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]
import build  # noqa: E402
from browser.conftest import CHROMIUM_ARGS  # noqa: E402

PAGE = """<!doctype html><meta charset="utf-8"><title>pool thresholds</title>
<script type="module">
import * as lib from "./onnxtrain/onnxtrain.mjs";
lib.env.wasm.numThreads = Number(new URLSearchParams(location.search).get("threads"));
window.info = lib.start();
window.python = (code) => lib._engineCall("runPython", { code });
// EfficientNet-Lite0's embeddings (PersonalizeTask.addSamples, `batch` frames a call) on 1 and `threads` threads
// alternately, `calls` timed calls in each of `blocks` blocks: ms per call by thread count.
window.embed = async (threads, blocks, calls, batch) => {
  const task = await lib.PersonalizeTask.create("backbone.onnx");
  const pixels = new Uint8Array(224 * 224 * 4 * batch).map((_, i) => Math.imul(i, 2654435761) >>> 24);
  const size = { width: 224, height: 224, count: batch };
  await task.addClass("frames");
  await task.addSamples(pixels, size, 0);
  const ms = { one: [], many: [] };
  for (let b = 0; b < blocks; b++) {
    for (const [key, n] of [["one", 1], ["many", threads]]) {
      await python(`from onnxtrain.ops import simd\nsimd.set_threads(${n})`);
      for (let i = 0; i < calls; i++) {
        const t0 = performance.now();
        await task.addSamples(pixels, size, 0);
        ms[key].push(performance.now() - t0);
      }
    }
  }
  await task.release?.();
  return ms;
};
</script>
"""

TIMING = r"""
import time
import numpy as np
from onnxtrain.ops import simd
saved = dict(simd.POOL_MIN), simd.POOL_INTENSITY
simd.POOL_MIN.update(dict.fromkeys(saved[0], 0))
simd.POOL_INTENSITY = 0
rng = np.random.default_rng(0)
f32 = lambda *shape: rng.standard_normal(shape).astype(np.float32)
def median_ms(f, threads):
    simd.set_threads(threads)
    f()
    times = []
    for _ in range(REPEATS):
        t0 = time.perf_counter()
        f()
        times.append(time.perf_counter() - t0)
    return float(np.median(times)) * 1e3
class OneThread:  # the pool's calls on its calling thread alone: what copying the operands costs
    def __init__(self, pool):
        self.pool, self.threads = pool, pool.threads
    def run(self, name, descriptor, threads):
        return self.pool.run(name, descriptor, 1)
pool = simd._pool
rows = []
def row(kernel, size, work, f):
    one, many = median_ms(f, 1), median_ms(f, THREADS)
    simd._pool = OneThread(pool)
    copying = median_ms(f, THREADS)
    simd._pool = pool
    rows.append([kernel, size, work, one, copying, many])
for m, n, k in [(32, 32, 32), (64, 64, 64), (64, 128, 128), (64, 128, 784), (784, 128, 64), (256, 256, 256)]:
    a, b = f32(m, k), f32(k, n)
    row("gemm_f32_part", f"{m}x{n}x{k}", m * n * k, lambda: simd.gemm(a, b))
for size in [1 << 14, 1 << 17, 1 << 20, 1 << 22]:
    groups = [[f32(size)] for _ in range(4)]
    scalars = [0.01, 0.9, 0.999, 0.1, 0.001, 1e-8, 0.01, 1.0, 1.0, 0.01, 0.0001]
    row("adamw_f32_part", str(size), size, lambda: simd.adamw(*groups, 0, scalars))
for c, hw in [(8, 28), (32, 56), (96, 112)]:
    x = f32(8, c, hw, hw)
    geo = dict(kernel_shape=(3, 3), pads=(1, 1), out=(hw, hw), strides=(1, 1), dilations=(1, 1))
    row("im2col_f32_part", f"8x{c}x{hw}x{hw}", x.size * 9, lambda: simd.im2col(x, **geo))
    w = f32(c, 1, 3, 3)
    row("depthwise_f32_part", f"8x{c}x{hw}x{hw}", x.size * 9,
        lambda: simd.depthwise(x, w, None, (1, 1), (hw, hw), (1, 1), (1, 1)))
    row("maxpool_f32_part", f"8x{c}x{hw}x{hw}", x.size // 4 * 4,
        lambda: simd.maxpool(x, (2, 2), (0, 0), (hw // 2, hw // 2), (2, 2), (1, 1), False))
simd.POOL_MIN.update(saved[0])
simd.POOL_INTENSITY = saved[1]
rows
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument("--embed-blocks", type=int, default=3, help="blocks of EfficientNet-Lite0 embeddings at "
                        "each thread count (0: none); the site's backbone")
    parser.add_argument("--embed-calls", type=int, default=3, help="timed addSamples calls a block")
    parser.add_argument("--batch", type=int, default=8, help="frames an addSamples call")
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright
    if not (build.TEST_SITE / build.LIBRARY / "onnxtrain.mjs").exists():
        sys.exit(f"{build.TEST_SITE} is not built: run `python3 build.py test tests/browser/test_threads.py`")
    with tempfile.TemporaryDirectory() as tmp:
        shutil.copytree(build.TEST_SITE / build.LIBRARY, Path(tmp) / "onnxtrain", copy_function=build.link_or_copy)
        (Path(tmp) / "index.html").write_text(PAGE)
        if args.embed_blocks:
            shutil.copy2(build.SITE / "artifacts" / "efficientnet_lite0" / "backbone.onnx", Path(tmp) / "backbone.onnx")
        server = build.make_server(Path(tmp), 0, isolate=True)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=str(build.CHROMIUM), args=CHROMIUM_ARGS)
            page = browser.new_page()
            page.goto(f"http://127.0.0.1:{server.server_address[1]}/?threads={args.threads}")
            info = page.evaluate("() => window.info")
            if info["threads"] != args.threads:
                sys.exit(f"the engine runs {info['threads']} threads, not {args.threads}: {info['threadsNote']}")
            code = TIMING.replace("REPEATS", str(args.repeats)).replace("THREADS", str(args.threads))
            rows = page.evaluate("(code) => python(code)", code)
            embed = args.embed_blocks and page.evaluate(
                "(a) => embed(...a)", [args.threads, args.embed_blocks, args.embed_calls, args.batch])
            browser.close()
        server.shutdown()
    print(f"pooled kernels, median ms of {args.repeats} calls: 1 thread (side module), the pool's copies and all its "
          f"parts on the calling thread, and the pool on {args.threads} threads (copies included); ratios to 1 "
          "thread")
    print(f"{'kernel':24} {'size':>16} {'work':>10} {'1 thread':>9} {'copies':>9} {'ratio':>6} "
          f"{f'{args.threads} threads':>10} {'ratio':>6}")
    for kernel, size, work, one, copying, many in rows:
        print(f"{kernel:24} {size:>16} {work:>10} {one:>9.3f} {copying:>9.3f} {copying / one:>5.2f}x {many:>10.3f} "
              f"{many / one:>5.2f}x")
    if embed:
        one, many = (statistics.median(embed[k]) for k in ("one", "many"))
        print(f"\nEfficientNet-Lite0 embeddings (addSamples of {args.batch} frames, POOL_MIN as shipped), median ms a "
              f"call of {len(embed['one'])}: 1 thread {one:.1f} ({1000 * args.batch / one:.1f} frames/s), "
              f"{args.threads} threads {many:.1f} ({1000 * args.batch / many:.1f} frames/s): {one / many:.2f}x the "
              "1-thread rate")
    return 0


if __name__ == "__main__":
    sys.exit(main())
