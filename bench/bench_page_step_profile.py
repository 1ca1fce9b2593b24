"""Where a step of onnxruntime-web's step loop goes in the page: the page's time per step, the engine's Python
time per request, and each node's time inside it.

One headless Chromium on the test site (its engine runs Python for the tests: runPython), one TrainingSession of
a model of bench_ort_step_loop.py on a fixed batch, numThreads 1 on an isolated page (whose clocks tick every 5
us, not every 100).  The page times --steps steps of
`runTrainStep`, `runOptimizerStep`, `lazyResetGrad` (median and mean ms); then the engine's Python wraps the registry's
`call` and every node's kernel in timers, the page runs --steps steps again, and the means per step are reported:
the request in Python, each node, the nodes' sum, the rest of the Python (checks, feeds, outputs), and outside
Python (the page's mean less the request's: the engine's conversions, the messages, the page).  The timers add
a few microseconds a node, so the second page time is a little longer than the first.  Run after `python3
build.py site`.

This is the Python path of a step, node by node: the session's models are put on the numpy provider, so every
request enters Python (on the default, the wasm provider, the engine answers the loop's steps itself:
bench_engine_split.py says where those go).
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
import threading
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests"), str(ROOT / "bench")]
import bench_ort_step_loop as loop  # noqa: E402
import build  # noqa: E402
from browser.conftest import CHROMIUM_ARGS  # noqa: E402

PAGE = """<!doctype html><meta charset="utf-8"><title>step profile</title>
<script type="module">
import * as lib from "./onnxtrain/onnxtrain.mjs";
lib.env.wasm.numThreads = 1;
let session, feeds;
window.open_session = async (model, shape) => {
  session = await lib.TrainingSession.create({ checkpointState: `${model}/checkpoint`, trainModel: `${model}/training`,
    optimizerModel: `${model}/optimizer` });
  const [inputName, labelsName] = session.trainingInputNames;
  const size = shape.reduce((a, b) => a * b, 1);
  feeds = { [inputName]: new lib.Tensor("float32", Float32Array.from({ length: size }, (_, i) => Math.sin(i)), shape),
    [labelsName]: new lib.Tensor("int64", BigInt64Array.from({ length: shape[0] }, (_, i) => BigInt(i % 10)),
      [shape[0]]) };
};
window.steps = async (n) => {
  const ms = [];
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    await session.runTrainStep(feeds);
    await session.runOptimizerStep();
    await session.lazyResetGrad();
    ms.push(performance.now() - t0);
  }
  return { median: ms.sort((a, b) => a - b)[n >> 1], mean: ms.reduce((a, b) => a + b, 0) / n };
};
window.python = (code) => lib._engineCall("runPython", { code });
window.threads = async () => ({ isolated: crossOriginIsolated, threads: (await lib.start()).threads });
window.ready = true;
</script>
"""

# The engine's registry (the only one in the worker) with timers on its call and on every node of its session.
INSTRUMENT = """
import gc, time
from onnxtrain.web.sessions import Registry
registry = next(o for o in gc.get_objects() if isinstance(o, Registry))
session = registry.sessions[max(registry.sessions)]
totals = {"request": 0.0}
running = set()  # the timers running now: a request's deferred steps are requests inside it
def timed(fn, key):
    def run(*args, **kwargs):
        if key in running:
            return fn(*args, **kwargs)
        running.add(key)
        t0 = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            totals[key] = totals.get(key, 0.0) + time.perf_counter() - t0
            running.discard(key)
    return run
registry.call = timed(registry.call, "request")
for plan in (session.module._train.plan, session.optimizer._session.plan):
    for i, step in enumerate(plan.steps):
        step.fn = timed(step.fn, f"{len(totals):02d} {step.node.op_type} {step.node.name or i}")
"""
REPORT = "import json; json.dumps(totals)"
# Before the session is made: its models on the numpy provider.
ON_NUMPY = """
from onnxtrain.api import module
from onnxtrain.runtime.provider import NUMPY
module.open_provider = lambda device="cpu", _open=module.open_provider: NUMPY if device == "cpu" else _open(device)
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", choices=sorted(loop.MODELS.values()), default="mlp_full_ce_adamw")
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--warmup", type=int, default=30)
    parser.add_argument("--site", type=Path, default=build.SITE, help="another build's site/, to compare builds")
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright
    if args.site == build.SITE and not (build.SITE / build.LIBRARY / "onnxtrain.mjs").exists():
        build.build_site()
    site = build.build_test_site(args.site)
    with tempfile.TemporaryDirectory() as tmp:
        loop.assemble(Path(tmp), site)
        (Path(tmp) / "index.html").write_text(PAGE)
        server = build.make_server(Path(tmp), 0, isolate=True)  # for the clocks' 5 us (100 us without isolation)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=str(build.CHROMIUM), args=CHROMIUM_ARGS)
            page = browser.new_page()
            page.goto(f"http://127.0.0.1:{server.server_address[1]}/")
            page.wait_for_function("() => window.ready === true")
            threads = page.evaluate("() => threads()")
            if threads != {"isolated": True, "threads": 1}:
                sys.exit(f"not an isolated page on 1 thread: {threads}")
            page.evaluate("(code) => python(code)", ON_NUMPY)
            page.evaluate("([m, s]) => open_session(m, s)", [args.model, loop.shape_of(args.model)])
            page.evaluate("(n) => steps(n)", args.warmup)
            plain = page.evaluate("(n) => steps(n)", args.steps)
            page.evaluate("(code) => python(code)", INSTRUMENT)
            timed = page.evaluate("(n) => steps(n)", args.steps)
            totals = json.loads(page.evaluate("(code) => python(code)", REPORT))
            browser.close()
        server.shutdown()
    per_step = {key: 1e3 * value / args.steps for key, value in totals.items()}
    request = per_step.pop("request")
    nodes = sum(per_step.values())
    print(f"{args.model}, {args.steps} steps: the page's step {plain['median']:.2f} ms median, {plain['mean']:.2f} "
          f"mean ({timed['median']:.2f} and {timed['mean']:.2f} with the timers)")
    print(f"  the request in Python {request:.3f} ms: nodes {nodes:.3f}, the rest {request - nodes:.3f}; outside "
          f"Python {timed['mean'] - request:.3f} ms")
    for key, value in per_step.items():
        print(f"  {1e3 * value:8.1f} us  {key[3:]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
