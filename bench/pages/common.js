// Shared by the side-by-side bench pages (onnxruntime-web, TF.js): the wasm memories the page makes (to read
// the heap size after the runs), the model data written by bench/bench_models.py, and the step timer.
// Loaded before the runtime's own script, so its WebAssembly memories are seen.
(() => {
  const memories = new Set();
  const NativeMemory = WebAssembly.Memory;
  function Memory(descriptor) {
    const memory = new NativeMemory(descriptor);
    memories.add(memory);
    return memory;
  }
  Memory.prototype = NativeMemory.prototype;
  WebAssembly.Memory = Memory;
  const collect = (result) => {
    const instance = result instanceof WebAssembly.Instance ? result : result.instance;
    for (const value of Object.values(instance.exports)) if (value instanceof NativeMemory) memories.add(value);
    return result;
  };
  for (const name of ["instantiate", "instantiateStreaming"]) {
    const native = WebAssembly[name];
    if (native) WebAssembly[name] = (...args) => native.apply(WebAssembly, args).then(collect);
  }

  const { median, bytes } = window.benchUtil;

  // A model folder of the bench site: meta.json, the artifacts, x.f32 / y.i64 (the training batch) and,
  // for models timed forward-only, fx.f32 (the forward batch).
  async function loadModelData(dir) {
    const base = new URL(dir, location.href);
    const meta = await (await fetch(new URL("meta.json", base))).json();
    const url = (name) => new URL(name, base).href;
    const data = { meta, url, x: new Float32Array(await bytes(url("x.f32"))), y: new BigInt64Array(await bytes(url("y.i64"))) };
    if (meta.forwardBatch) data.fx = new Float32Array(await bytes(url("fx.f32")));
    return data;
  }

  // Warm up for warmupMs (V8 tiers the wasm up meanwhile), then time steps one by one: as many as fit in
  // budgetMs at the warm-up's pace, at least minSteps and at most steps.
  async function timeSteps(step, { warmupMs = 2000, budgetMs = 2500, steps = 200, minSteps = 10 } = {}) {
    const t0 = performance.now();
    const warm = [];
    while (performance.now() - t0 < warmupMs || warm.length < 2) {
      const start = performance.now();
      await step();
      warm.push(performance.now() - start);
    }
    const pace = median(warm.slice(-Math.max(1, warm.length >> 1)));
    const count = Math.max(minSteps, Math.min(steps, Math.ceil(budgetMs / Math.max(pace, 0.01))));
    const times = [];
    for (let i = 0; i < count; i++) {
      const start = performance.now();
      await step();
      times.push(performance.now() - start);
    }
    return { times, warmupSteps: warm.length, firstStepMs: warm[0] };
  }

  const heapBytes = () => Math.max(0, ...[...memories].map((m) => m.buffer.byteLength));

  window.bench = { median, loadModelData, timeSteps, heapBytes, memories: () => memories.size };
})();
