// Added by bench/bench_side_by_side.py as an init script to the product page (the site's index.html, served
// unchanged): it notes when `window.onnxtrain.ready` resolves, then at once loads the MLP artifacts and trains
// one batch through the library the page uses ("time to the first trained step"), and offers the bench's training
// and forward-only timers: training through the library's TrainingSession (each step timed on the page's clock:
// runTrainStep, runOptimizerStep and lazyResetGrad, their requests to the engine included), forward-only through
// the engine's `runPython`.  Times are on the page's clock, which starts when the navigation starts.  The WebGPU
// column trains the same way with executionProviders ["webgpu"] and reads the device's counts (dispatches,
// submissions, calls into the page's WebGPU host) from the engine's Python through `runPython`.
// window.__benchConfig is set just before this script.
(() => {
  if (!/^\/(index\.html)?$/.test(location.pathname)) return;
  const config = window.__benchConfig || {};
  const times = {};
  let api;
  let firstStep;
  let session = null;
  const { median, bytes } = window.benchUtil;
  const library = () => import(new URL("onnxtrain/onnxtrain.mjs", location.href).href);

  async function modelData(dir) {
    const base = new URL(dir, location.href);
    const url = (name) => new URL(name, base).href;
    const meta = await (await fetch(url("meta.json"))).json();
    const [training, checkpoint, evalModel, optimizer, x, y] = await Promise.all(
      [meta.files.training, meta.files.checkpoint, meta.files.eval, meta.files.optimizer, "x.f32", "y.i64"].map((f) => bytes(url(f))));
    const { Tensor } = await library();
    const feeds = (names) => ({ [names[0]]: new Tensor("float32", new Float32Array(x), [meta.batch, ...meta.inputShape]),
      [names[1]]: new Tensor("int64", new BigInt64Array(y), [meta.batch]) });
    return { meta, url, files: { training, checkpoint, evalModel, optimizer }, feeds };
  }

  // providers: TrainingSession.create's executionProviders (the WebGPU column's ["webgpu"]), or the default.
  async function load(files, providers = null) {
    const { TrainingSession } = await library();
    const artifacts = { trainModel: files.training, checkpointState: files.checkpoint, evalModel: files.evalModel,
      optimizerModel: files.optimizer };
    const next = await (providers ? TrainingSession.create(artifacts, { executionProviders: providers })
      : TrainingSession.create(artifacts));
    if (session) await session.release();
    session = next;
  }

  // One full training step; its time in ms and its loss.
  async function step(feeds) {
    const start = performance.now();
    const out = await session.runTrainStep(feeds);
    await session.runOptimizerStep();
    await session.lazyResetGrad();
    return { ms: performance.now() - start, loss: out[session.trainingOutputNames[0]].data[0] };
  }

  async function runFirstStep() {
    const { files, feeds } = await modelData(config.firstStepDir);
    times.artifactsFetched = performance.now();
    await load(files);
    times.artifactsLoaded = performance.now();
    const first = await step(feeds(session.trainingInputNames));
    times.firstStep = performance.now();
    return { loss: first.loss, stepMs: first.ms };
  }

  Object.defineProperty(window, "onnxtrain", {
    configurable: true,
    enumerable: true,
    get: () => api,
    set(value) {
      api = value;
      times.apiDefined = performance.now();
      firstStep = value.ready.then((info) => {
        times.ready = performance.now();
        return runFirstStep().then((first) => ({ info, step: first }));
      });
    },
  });

  async function serviceWorkerReady(timeoutMs) {
    if (!("serviceWorker" in navigator)) return false;
    const ready = navigator.serviceWorker.ready.then(() => true);
    return Promise.race([ready, new Promise((resolve) => setTimeout(() => resolve(false), timeoutMs))]);
  }

  // What the visit took; waits for the page's background work too (the service worker's precache), so that the
  // bytes the visit downloads are all counted.
  async function visit() {
    for (let waited = 0; !firstStep; waited += 100) {
      if (waited > 60000) throw new Error("the page never set window.onnxtrain");
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    const { info, step } = await Promise.race([firstStep, new Promise((_, reject) => setTimeout(
      () => reject(new Error("no trained step 180 s after page open")), 180000 - performance.now()))]);
    const serviceWorker = await serviceWorkerReady(120000);
    times.settled = performance.now();
    return { times, timings: info.timings, info: { ...info, timings: undefined }, step, serviceWorker,
      crossOriginIsolated: self.crossOriginIsolated };
  }

  // The session's device in the engine's Python (the test hooks' runPython): Module.device_report() of the session
  // of `handle` (found in the engine's registry), with its optimizer's dispatches and fallbacks.
  const deviceReport = async (handle) => JSON.parse(await python(`
import gc as _gc, json as _json
from onnxtrain.web.sessions import Registry as _Registry
_s = next(o for o in _gc.get_objects() if type(o) is _Registry and ${handle} in o.sessions).sessions[${handle}]
_r = _s.module.device_report()
_o = _s.optimizer._session
_r["optimizer_dispatches"] = None if getattr(_o, "last_program", None) is None else _o.last_program.dispatch_count
_r["optimizer_fallbacks"] = list(getattr(_o, "fallbacks", []))
from onnxtrain.webgpu.page import open_page_device as _open
_r["adapter_info"] = _open().adapter_info
_json.dumps(_r)
`));

  // The device's counts over `count` more steps (after the timed ones): dispatches of the train and optimizer
  // programs, submissions and calls from Python into the page's WebGPU host, per step.
  async function countSteps(feeds, count) {
    const before = await deviceReport(session._handle);
    for (let i = 0; i < count; i++) await step(feeds);
    const after = await deviceReport(session._handle);
    return { steps: count, trainDispatches: after.dispatches.train, optimizerDispatches: after.optimizer_dispatches,
      submissions: (after.submissions - before.submissions) / count,
      bridgeCalls: (after.bridge_calls - before.bridge_calls) / count,
      fallbacks: [...after.fallbacks.train, ...after.optimizer_fallbacks], adapterInfo: after.adapter_info,
      device: after.device, gpuBytes: after.gpu_bytes };
  }

  // Train the model folder's artifacts through the library: warmupMs of training first, then as many steps as
  // fit in budgetMs (at least minSteps, at most steps), each timed on the page's clock.  With executionProviders
  // the session is made with them (always anew); with counts > 0, that many further steps are counted on the
  // device (countSteps; WebGPU only).
  async function train(dir, { warmupMs = 2000, budgetMs = 2500, steps = 200, minSteps = 10, reload = true,
    executionProviders = null, counts = 0 } = {}) {
    const { files, feeds: feedsFor } = await modelData(dir);
    const t0 = performance.now();
    if (executionProviders) await load(files, executionProviders);
    else if (reload || !session) await load(files);
    const loadMs = performance.now() - t0;
    const feeds = feedsFor(session.trainingInputNames);
    const w0 = performance.now();
    const first = await step(feeds);
    const warm = [first.ms];
    while (performance.now() - w0 < warmupMs) warm.push((await step(feeds)).ms);
    const pace = median(warm.slice(Math.floor(warm.length / 2)));
    const count = Math.max(minSteps, Math.min(steps, Math.ceil(budgetMs / Math.max(pace, 0.01))));
    const measured = [];
    let last = first;
    for (let i = 0; i < count; i++) {
      last = await step(feeds);
      measured.push(last.ms);
    }
    const out = { times: measured, warmupSteps: warm.length, firstStepMs: first.ms, loadMs, firstLoss: first.loss,
      lastLoss: last.loss };
    if (executionProviders) out.executionProvider = session.executionProvider;
    if (counts > 0) out.counts = await countSteps(feeds, counts);
    return out;
  }

  // Forward-only in the engine: onnxtrain's runtime (onnxtrain.runtime.Session) on the exported inference model,
  // timed in Python (time.perf_counter is performance.now in Pyodide) after warmupMs.
  async function forward(dir, { warmupMs = 2000, budgetMs = 2500, steps = 200, minSteps = 10 } = {}) {
    const base = new URL(dir, location.href);
    const meta = await (await fetch(new URL("meta.json", base))).json();
    const code = `
import time as _time
import numpy as _np
from pyodide.http import pyfetch as _pyfetch
from onnxtrain import ir as _ir
from onnxtrain.runtime import Session as _Session

async def _bytes(url):
    response = await _pyfetch(url)
    return await response.bytes()

_session = _Session(_ir.load(await _bytes(${JSON.stringify(new URL(meta.files.inference, base).href)})))
_x = _np.frombuffer(await _bytes(${JSON.stringify(new URL("fx.f32", base).href)}), _np.float32).reshape(${JSON.stringify([meta.forwardBatch, ...meta.inputShape])})

def _once():
    start = _time.perf_counter()
    _session.run([_x])
    return (_time.perf_counter() - start) * 1e3

_warm = []
_t0 = _time.perf_counter()
while (_time.perf_counter() - _t0) * 1e3 < ${warmupMs} or len(_warm) < 2:
    _warm.append(_once())
_pace = sorted(_warm[len(_warm) // 2:])[len(_warm[len(_warm) // 2:]) // 2]
_count = max(${minSteps}, min(${steps}, int(${budgetMs} / max(_pace, 0.01)) + 1))
_times = [_once() for _ in range(_count)]
del _session, _x
{"times": _times, "warmupSteps": len(_warm), "firstStepMs": _warm[0]}
`;
    return api.call("runPython", { code });
  }

  const python = (code) => api.call("runPython", { code });

  window.__bench = { times, visit, train, forward, python };
})();
