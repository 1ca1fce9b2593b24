// The camera flow's two hot paths, timed in one page: the backbone's features of new samples (the library's
// PersonalizeTask.addSamples, a batch of frames per request) and a live prediction of one frame (predict).  The
// peer is onnxruntime-web 1.19.2 (one thread) running the model the task exports, which computes the same thing
// from the same uint8 frames (preprocessing, backbone, head): a batch of frames, and one frame.
import { PersonalizeTask, start } from "../onnxtrain/onnxtrain.mjs";

ort.env.wasm.numThreads = 1;
ort.env.wasm.wasmPaths = new URL("../bench-vendor/ort/", location.href).href;
const SIZE = 224;
const FRAME = SIZE * SIZE * 4;

// Calls of `run` for about budgetMs (at least minCalls) after warmupMs of untimed calls; their times in ms.
async function timeCalls(run, { warmupMs, budgetMs, minCalls }) {
  for (const start = performance.now(); performance.now() - start < warmupMs;) await run();
  const times = [];
  for (const start = performance.now(); times.length < minCalls || performance.now() - start < budgetMs;) {
    const t = performance.now();
    await run();
    times.push(performance.now() - t);
  }
  return times;
}

window.bench = {
  ready: true,
  async run({ framesUrl, backboneUrl, classes, perClass, batch, epochs, timing }) {
    const frames = new Uint8Array(await window.benchUtil.bytes(framesUrl));
    const count = frames.length / FRAME;
    const out = {};
    let t = performance.now();
    await start();
    out.engineMs = performance.now() - t;
    t = performance.now();
    let loaded = 0;
    const task = await PersonalizeTask.create(backboneUrl, { onLoad: (p) => { loaded = p.total ?? p.loaded; } });
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
    const embed = await timeCalls(async () => {
      const ids = await task.addSamples(batchOf(), { width: SIZE, height: SIZE, count: batch }, 0);
      for (const id of ids) await task.removeSample(id);
    }, timing);
    out.embedBatchMs = embed;
    t = performance.now();
    await task.setup({ validation: 0, seed: 0 });
    await task.train({ epochs, batchSize: 8, learningRate: 1e-3, keepBest: false });
    out.trainMs = performance.now() - t;
    out.live = await timeCalls(() => task.predict(frames.slice(0, FRAME), { width: SIZE, height: SIZE }), timing);
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
};
