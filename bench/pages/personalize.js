// The camera flow's two hot paths, timed in one page: the backbone's features of new samples (the library's
// PersonalizeTask.addSamples, a batch of frames per request) and a live prediction of one frame (predict).  The
// peer is onnxruntime-web 1.19.2 (one thread) running the model the task exports, which computes the same thing
// from the same uint8 frames (preprocessing, backbone, head): a batch of frames, and one frame.  `webgpu` times the
// library's paths again with executionProviders ["webgpu"] (in a Chromium with --enable-unsafe-webgpu) and reads
// the device's counts from the engine's Python (the bench site's test hooks: runPython).
import { _engineCall, PersonalizeTask, start } from "../onnxtrain/onnxtrain.mjs";

ort.env.wasm.numThreads = 1;
ort.env.wasm.wasmPaths = new URL("../bench-vendor/ort/", location.href).href;
const SIZE = 224;
const FRAME = SIZE * SIZE * 4;

const { timeCalls } = window.benchUtil;

// The WebGPU device's counts in the engine, for the task of `handle` (found in the engine's registry): the
// device's submissions and calls from Python into the page's WebGPU host so far, the dispatches of the backbone's
// last program (times its runs for `frames` frames) and of the head's, the nodes on the CPU.
async function deviceCounts(handle, frames) {
  return JSON.parse(await _engineCall("runPython", { code: `
import gc as _gc, json as _json
from onnxtrain.web.sessions import Registry as _Registry
from onnxtrain.tasks.backbone import BATCH as _BATCH
_t = next(o for o in _gc.get_objects() if type(o) is _Registry and ${handle} in o.sessions).sessions[${handle}].task
_e = _t.backbone.embedder
_h = None if _t._head_cache is None else _t._head_cache[1]
_json.dumps({"submissions": _e.device.submissions, "calls": _e.device.bridge_calls,
             "embedDispatches": _e.last_program.dispatch_count * -(-${frames} // _BATCH),
             "headDispatches": None if _h is None or _h.last_program is None else _h.last_program.dispatch_count,
             "fallbacks": list(_e.fallbacks) + ([] if _h is None else list(_h.fallbacks)),
             "adapter": _e.device.adapter_info})
` }));
}

// The counts per call of `calls` calls of `run` (after its timing): submissions and bridge calls per call, and
// the dispatches of the last call's programs.
async function countCalls(task, run, calls, frames) {
  const before = await deviceCounts(task._handle, frames);
  for (let i = 0; i < calls; i++) await run();
  const after = await deviceCounts(task._handle, frames);
  return { calls, submissions: (after.submissions - before.submissions) / calls,
    bridgeCalls: (after.calls - before.calls) / calls, embedDispatches: after.embedDispatches,
    headDispatches: after.headDispatches, fallbacks: after.fallbacks, adapter: after.adapter };
}

// The library's part, as the camera flow uses it: the engine's start, the task on the backbone, the first
// samples, the embeddings' timing, the head's training and the live predictions' timing; the task and its frames
// (`out` gets the numbers).  With `counts`, the WebGPU device's counts after each timing (countCalls).
async function library(out, { framesUrl, backboneUrl, classes, perClass, batch, epochs, timing, providers, counts }) {
    const frames = new Uint8Array(await window.benchUtil.bytes(framesUrl));
    const count = frames.length / FRAME;
    let t = performance.now();
    await start();
    out.engineMs = performance.now() - t;
    t = performance.now();
    let loaded = 0;
    const options = { onLoad: (p) => { loaded = p.total ?? p.loaded; } };
    if (providers) options.executionProviders = providers;
    const task = await PersonalizeTask.create(backboneUrl, options);
    out.loadMs = performance.now() - t;
    out.backboneBytes = loaded;
    for (let c = 0; c < classes; c++) await task.addClass(`class ${c}`);
    t = performance.now();
    for (let c = 0; c < classes; c++) {
      for (let k = 0; k < perClass; k += batch) {
        const n = Math.min(batch, perClass - k);
        const first = (c * perClass + k) % count;
        await task.addSamples(frames.slice(first * FRAME, (first + n) * FRAME), { width: SIZE, height: SIZE, count: n }, c);
      }
    }
    out.firstSamplesMs = performance.now() - t;
    out.samples = classes * perClass;
    let next = 0;
    const batchOf = () => {
      const first = next;
      next = (next + batch) % (count - batch);
      return frames.slice(first * FRAME, (first + batch) * FRAME);
    };
    const embedBatch = async () => {
      const ids = await task.addSamples(batchOf(), { width: SIZE, height: SIZE, count: batch }, 0);
      for (const id of ids) await task.removeSample(id);
    };
    const embed = await timeCalls(embedBatch, timing);
    out.embedBatchMs = embed;
    if (counts) out.embedCounts = await countCalls(task, embedBatch, counts, batch);
    t = performance.now();
    await task.setup({ validation: 0, seed: 0 });
    await task.train({ epochs, batchSize: 8, learningRate: 1e-3, keepBest: false });
    out.trainMs = performance.now() - t;
    const live = () => task.predict(frames.slice(0, FRAME), { width: SIZE, height: SIZE });
    out.live = await timeCalls(live, timing);
    if (counts) out.liveCounts = await countCalls(task, live, counts, 1);
    out.executionProvider = (await task.info()).executionProvider;
    out.probabilities = (await live()).probabilities;
    return { task, frames };
}

window.bench = {
  ready: true,
  async run(options) {
    const out = {};
    const { task, frames } = await library(out, options);
    const { batch, timing } = options;
    const model = await task.exportModel();
    out.exportBytes = model.length;
    const session = await ort.InferenceSession.create(model, { executionProviders: ["wasm"] });
    const feed = (n) => ({ image: new ort.Tensor("uint8", frames.slice(0, n * FRAME), [n, SIZE, SIZE, 4]) });
    const ortRun = (n) => async () => {
      const result = await session.run(feed(n));
      for (const tensor of Object.values(result)) tensor.dispose?.();
    };
    out.ortBatchMs = await timeCalls(ortRun(batch), timing);
    out.ortLive = await timeCalls(ortRun(1), timing);
    const theirs = (await session.run(feed(1))).probabilities.data;
    const ours = (await task.predict(frames.slice(0, FRAME), { width: SIZE, height: SIZE })).probabilities;
    out.maxProbabilityDiff = Math.max(...ours.map((p, i) => Math.abs(p - theirs[i])));
    await session.release();
    await task.release();
    return out;
  },
  // The library's part alone on WebGPU, with the device's counts over `counts` calls after each timing.
  async webgpu(options) {
    const out = {};
    window.benchPartial = out;  // what is measured so far, for a bench that stops waiting
    const { task } = await library(out, { ...options, providers: ["webgpu"], counts: options.counts ?? 3 });
    await task.release();
    return out;
  },
};
