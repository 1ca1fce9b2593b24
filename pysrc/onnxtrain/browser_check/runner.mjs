// onnxtrain browser-check's page: trains the artifacts with the library's onnxruntime-web training API
// (TrainingSession.create, runTrainStep, runOptimizerStep, lazyResetGrad, getContiguousParameters) on the batches
// the Python runner names, and hands back each step's loss and, at the steps asked for, the trainable parameters.
const ARRAYS = {
  float32: Float32Array, float64: Float64Array, int8: Int8Array, int16: Int16Array, int32: Int32Array,
  int64: BigInt64Array, uint8: Uint8Array, uint16: Uint16Array, uint32: Uint32Array, uint64: BigUint64Array,
  bool: Uint8Array,
};

function status(text) {
  document.getElementById("status").textContent = text;
}

function base64(view) {
  const bytes = new Uint8Array(view.buffer, view.byteOffset, view.byteLength);
  let text = "";
  for (let i = 0; i < bytes.length; i += 0x8000) text += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(text);
}

async function fetchBytes(url) {
  const response = await fetch(url);
  if (!response.ok) throw new Error(`${url}: HTTP ${response.status}`);
  return response.arrayBuffer();
}

// Each input's whole array, and a function that makes the feeds of rows [start, stop).
async function loadInputs(lib, inputs) {
  const arrays = await Promise.all(inputs.map(async ({ type, url }) => new ARRAYS[type](await fetchBytes(url))));
  return ([start, stop]) => Object.fromEntries(inputs.map(({ name, type, shape }, i) => {
    const row = shape.slice(1).reduce((n, d) => n * d, 1);
    return [name, new lib.Tensor(type, arrays[i].slice(start * row, stop * row), [stop - start, ...shape.slice(1)])];
  }));
}

// The run: {stage, error, losses, parameters: {step: base64 float32}, info}; stops at the first error or the
// deadline, keeping what was done.
async function run(manifest) {
  const result = { stage: "library", error: null, losses: [], parameters: {}, info: {} };
  const deadline = performance.now() + manifest.timeoutMs;
  const within = (promise, what) => Promise.race([promise, new Promise((_, reject) => setTimeout(
    () => reject(new Error(`timed out after ${manifest.timeoutMs / 1000} s ${what}`)),
    Math.max(0, deadline - performance.now())))]);
  try {
    status("loading the library");
    const lib = await within(import(manifest.library), "loading the library");
    const makeFeeds = await within(loadInputs(lib, manifest.inputs), "loading the data");
    result.stage = "create";
    status("creating the training session");
    const session = await within(lib.TrainingSession.create(manifest.artifacts), "creating the training session");
    result.info = { trainingInputNames: [...session.trainingInputNames],
                    trainingOutputNames: [...session.trainingOutputNames] };
    if (manifest.learningRate !== null) {
      await within(session.setLearningRate(manifest.learningRate), "setting the learning rate");
    }
    result.info.learningRate = await within(session.getLearningRate(), "reading the learning rate");
    const compareAt = new Set(manifest.compareAt);
    const lossName = session.trainingOutputNames[0];
    result.stage = "train";
    for (let i = 0; i < manifest.batches.length; i++) {
      const step = i + 1;
      status(`step ${step} of ${manifest.batches.length}`);
      const feeds = makeFeeds(manifest.batches[i]);
      const outputs = await within(session.runTrainStep(feeds), `in step ${step}'s runTrainStep`);
      const loss = outputs[lossName].data[0];
      await within(session.runOptimizerStep(), `in step ${step}'s runOptimizerStep`);
      await within(session.lazyResetGrad(), `in step ${step}'s lazyResetGrad`);
      result.losses.push(typeof loss === "bigint" ? Number(loss) : loss);
      if (compareAt.has(step)) {
        const params = await within(session.getContiguousParameters(true), `in step ${step}'s getContiguousParameters`);
        result.parameters[step] = base64(params.data);
      }
    }
    await within(session.release(), "releasing the session");
    result.stage = "done";
    status("done");
  } catch (error) {
    result.error = String(error && error.message ? error.message : error);
    status(`stopped: ${result.error}`);
  }
  return result;
}

window.browserCheck = { run };
status("ready");
