// onnxruntime-web 1.19.2 training (the last release with training), one thread: the page is served without
// cross-origin isolation, and ORT reads numThreads once per page, when its wasm first starts.
ort.env.wasm.numThreads = 1;
ort.env.wasm.wasmPaths = new URL("../bench-vendor/ort/", location.href).href;

// Train the model folder's artifacts: each step is runTrainStep, runOptimizerStep and lazyResetGrad, on the
// same batch (its tensors made once).
window.bench.train = async (key, dir, options) => {
  const { meta, url, x, y } = await window.bench.loadModelData(dir);
  const t0 = performance.now();
  const session = await ort.TrainingSession.create({
    checkpointState: url(meta.files.checkpoint), trainModel: url(meta.files.training),
    evalModel: url(meta.files.eval), optimizerModel: url(meta.files.optimizer),
  });
  const createMs = performance.now() - t0;
  const [inputName, labelsName] = session.trainingInputNames;
  const feeds = { [inputName]: new ort.Tensor("float32", x, [meta.batch, ...meta.inputShape]),
    [labelsName]: new ort.Tensor("int64", y, [meta.batch]) };
  const lossName = session.trainingOutputNames[0];
  const losses = [];
  const step = async () => {
    const out = await session.runTrainStep(feeds);
    await session.runOptimizerStep();
    await session.lazyResetGrad();
    losses.push(out[lossName].data[0]);
  };
  const result = await window.bench.timeSteps(step, options);
  await session.release();
  return { ...result, createMs, firstLoss: losses[0], lastLoss: losses.at(-1), heapBytes: window.bench.heapBytes() };
};

// Forward-only: the exported inference model in an InferenceSession, batch meta.forwardBatch.
window.bench.forward = async (key, dir, options) => {
  const { meta, url, fx } = await window.bench.loadModelData(dir);
  const session = await ort.InferenceSession.create(url(meta.files.inference), { executionProviders: ["wasm"] });
  const feeds = { [session.inputNames[0]]: new ort.Tensor("float32", fx, [meta.forwardBatch, ...meta.inputShape]) };
  const step = async () => {
    const out = await session.run(feeds);
    for (const tensor of Object.values(out)) tensor.dispose?.();
  };
  const result = await window.bench.timeSteps(step, options);
  await session.release();
  return { ...result, heapBytes: window.bench.heapBytes() };
};
window.bench.ready = Promise.resolve({ version: ort.env.versions?.common ?? "?", numThreads: ort.env.wasm.numThreads,
  crossOriginIsolated: self.crossOriginIsolated });
