// The app's training worker: Python, numpy and the onnxtrain wheel, started by the library's start.mjs.
// Messages in: {id, type, ...args}; out: {id, ok, result} or {id, ok: false, error}, plus
// {id, type: "progress", ...} while training.  The worker stays usable after an error.
import { snapshotSaved, startPython } from "./onnxtrain/start.mjs";
import { registerHooks } from "./worker_hooks.mjs";

let py = null;
let bridge = null;
let session = null;
let cancelled = false;
let tabular = null;
let images = null;
let digits = null;

// Decode and resize images to size x size RGBA; files that are not images are skipped and counted.
async function decodeImages(files, size) {
  const canvas = new OffscreenCanvas(size, size);
  const context = canvas.getContext("2d", { willReadFrequently: true });
  const pixels = [];
  const labels = [];
  const classes = [];
  const skipped = [];
  for (const file of files) {
    const parts = file.path.split("/").filter(Boolean);
    const label = parts.length >= 2 ? parts[parts.length - 2] : "unlabelled";
    let bitmap;
    try {
      bitmap = await createImageBitmap(new Blob([file.bytes]));
    } catch {
      skipped.push(file.path);
      continue;
    }
    context.clearRect(0, 0, size, size);
    context.drawImage(bitmap, 0, 0, size, size);
    bitmap.close();
    pixels.push(context.getImageData(0, 0, size, size).data);
    if (!classes.includes(label)) classes.push(label);
    labels.push(label);
  }
  classes.sort();
  const all = new Uint8Array(pixels.length * size * size * 4);
  pixels.forEach((p, i) => all.set(p, i * size * size * 4));
  return { all, labels: labels.map((l) => classes.indexOf(l)), classes, skipped, count: pixels.length };
}

function toJs(proxy) {
  const value = proxy.toJs({ dict_converter: Object.fromEntries });
  proxy.destroy();
  return value;
}

function bytesOf(proxy) {
  const view = proxy.toJs();
  proxy.destroy();
  return view.slice().buffer;
}

// A numpy array holding a copy of a typed array: allocated in Python, filled with one copy into Pyodide's memory.
function pyArray({ data, shape, dtype }) {
  const bytes = new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
  const made = bridge.new_array(shape, dtype, bytes.length);
  const array = made.get(0);
  py._module.HEAPU8.set(bytes, made.get(1));
  made.destroy();
  return array;
}

function pyInputs(inputs) {
  const arrays = inputs.map(pyArray);
  const list = py.toPy(arrays);
  arrays.forEach((a) => a.destroy());
  return list;
}

// Lets pause and cancel messages in between training steps: a turn of the event loop, at most every 50 ms.
// Turning it after every step slowed the steps themselves (MLP step in the worker, median: 3.7 ms with a turn
// per step, 2.1 ms without, same page).
let lastTurn = 0;
async function letMessagesIn() {
  if (performance.now() - lastTurn < 50) return;
  await new Promise((resolve) => setTimeout(resolve, 0));
  lastTurn = performance.now();
}

// Trains `target` (a TabularSession or TrainingSession holding its data) until `epochs` epochs are done in
// total, so a paused run resumes where it stopped.  At an epoch's end, `evaluate()` gives the validation metrics
// and `checkpoint()` the run's state, both added to that epoch's progress message.  With `keepBest`, the run's
// TrainingSession (`target.training || target`) tracks the best validation loss: training stops once `patience`
// epochs bring no better one, and a run that finishes (all epochs, or stopped early; not paused or cancelled)
// ends with the best epoch's parameters, sent back as the result's `checkpoint`.
async function trainEpochs(target, { id, epochs, batchSize, lr, schedule = "constant", keepBest = false, patience = 10 },
  { evaluate = null, checkpoint = null } = {}) {
  if (!target) throw new Error("load a model and data before training");
  cancelled = false;
  const run = target.training || target;
  const tracking = Boolean(evaluate);
  if (tracking) run.set_early_stopping.callKwargs({ keep_best: Boolean(keepBest), patience: Number(patience) });
  let metrics = null;
  let best = null;
  let stopped = false;
  const t0 = performance.now();
  let examples = 0;
  while (!cancelled && !stopped && target.epoch < epochs) {
    const progress = target.epoch / epochs;
    const rate = schedule === "linear" ? lr * Math.min(1, (progress + 0.05) / 0.1) * Math.max(0, 1 - progress) : lr;
    const step = toJs(target.step(batchSize, Math.max(rate, lr * 0.01)));
    examples += step.examples;
    const message = { id, type: "progress", epoch: step.epoch, progress: step.progress, epochs, loss: step.loss,
      examplesPerSecond: examples / ((performance.now() - t0) / 1000), batchesPerEpoch: step.batches_per_epoch };
    const transfer = [];
    if (step.epoch_done && evaluate) {
      metrics = message.metrics = evaluate();
      if (keepBest && metrics.loss !== null && metrics.loss !== undefined) {
        best = message.best = toJs(run.end_epoch(metrics.loss));
        stopped = best.stop;
        if (best.improved) transfer.push(message.bestCheckpoint = bytesOf(run.best_checkpoint()));
      }
    }
    if (step.epoch_done && checkpoint) transfer.push(message.checkpoint = checkpoint());
    self.postMessage(message, transfer);
    await letMessagesIn();
  }
  const result = { epoch: target.epoch, cancelled, metrics, best, stopped };
  if (!cancelled && keepBest && tracking) {
    const kept = run.use_best();
    result.kept = kept === undefined ? null : kept;
    if (result.kept !== null && checkpoint) result.checkpoint = checkpoint();
    if (result.kept !== null && result.kept !== target.epoch) result.keptMetrics = evaluate();
  }
  return result;
}

// A flow's run: an object with checkpoint() and restore(bytes), and a TrainingSession as itself or `.training`.
function runOf(flow) {
  const runs = { csv: tabular, images, own: session, digits: digits && digits.training };
  if (!(flow in runs)) throw new Error(`unknown flow ${flow}`);
  if (!runs[flow]) throw new Error("train a model first");
  return runs[flow];
}

const handlers = {
  async init() {
    const started = await startPython();
    py = started.py;
    bridge = py.pyimport("onnxtrain.web");
    return { timings: started.timings, kernels: started.kernels, start: started.start,
      numpy: py.runPython("numpy.__version__"), python: py.runPython("import sys; sys.version") };
  },

  async snapshotSaved() { return snapshotSaved(); },

  async generateArtifacts({ model, requiresGrad, frozenParams = null, loss = "CrossEntropyLoss", optimizer = "AdamW" }) {
    const out = bridge.generate_artifacts(new Uint8Array(model), requiresGrad, frozenParams, loss, optimizer);
    const result = {};
    for (const [name, value] of out.toJs({ dict_converter: (entries) => entries })) {
      result[name] = value.slice().buffer;
    }
    out.destroy();
    return result;
  },

  async load({ training, checkpoint, evalModel, optimizer }) {
    const next = bridge.TrainingSession(new Uint8Array(training), new Uint8Array(checkpoint),
      evalModel ? new Uint8Array(evalModel) : null, optimizer ? new Uint8Array(optimizer) : null);
    if (session) session.destroy();
    session = next;
    return toJs(session.describe());
  },

  async train({ batches, id }) {
    if (!session) throw new Error("load artifacts before training");
    cancelled = false;
    const losses = [];
    const stepMilliseconds = [];
    const t0 = performance.now();
    let examples = 0;
    for (let step = 0; step < batches.length; step++) {
      if (cancelled) break;
      const start = performance.now();
      const inputs = pyInputs(batches[step]);
      try {
        losses.push(session.train_step(inputs));
      } finally {
        inputs.destroy();
      }
      stepMilliseconds.push(performance.now() - start);
      examples += batches[step][0].shape[0];
      const seconds = (performance.now() - t0) / 1000;
      self.postMessage({ id, type: "progress", step: step + 1, steps: batches.length, loss: losses.at(-1),
        examplesPerSecond: examples / seconds });
      await letMessagesIn();
    }
    return { losses, cancelled, stepMilliseconds, milliseconds: performance.now() - t0 };
  },

  async evaluate({ inputs }) {
    const list = pyInputs(inputs);
    try {
      return toJs(session.eval_step(list));
    } finally {
      list.destroy();
    }
  },

  // ---- the CSV flow -------------------------------------------------------------------------------
  async tabularLoad({ bytes, name }) {
    const next = py.pyimport("onnxtrain.web.tabular").TabularSession(new Uint8Array(bytes), name);
    if (tabular) tabular.destroy();
    tabular = next;
    return toJs(tabular.describe());
  },

  async tabularDetect({ label }) { return tabular.detect_task(label); },

  async tabularSetup({ label, task, hidden, optimizer = "AdamW", validation = 0.2 }) {
    return toJs(tabular.setup.callKwargs(label, task, hidden, { validation, optimizer }));
  },

  async tabularTrain(args) {
    return trainEpochs(tabular, args, { evaluate: () => toJs(tabular.evaluate()), checkpoint: () => bytesOf(tabular.checkpoint()) });
  },

  async imagesLoad({ files, size = 32, optimizer = "AdamW" }) {
    const decoded = await decodeImages(files, size);
    if (decoded.count === 0) throw new Error(`none of the ${files.length} files is an image`);
    const data = { pixels: decoded.all.buffer, count: decoded.count, size, labels: decoded.labels,
      classes: decoded.classes, skipped: decoded.skipped, optimizer };
    return { info: await handlers.imagesSetup({ data }), data };
  },
  async imagesSetup({ data }) {
    const next = py.pyimport("onnxtrain.web.images").ImageSession.callKwargs(new Uint8Array(data.pixels),
      [data.count, data.size], data.labels, data.classes, { optimizer: data.optimizer || "AdamW" });
    if (images) images.destroy();
    images = next;
    return toJs(images.info);
  },
  async imagesTrain(args) {
    return trainEpochs(images, args, { evaluate: () => toJs(images.evaluate()), checkpoint: () => bytesOf(images.checkpoint()) });
  },
  async imagesPredict({ file }) {
    const decoded = await decodeImages([file], images.size);
    if (decoded.count === 0) throw new Error(`${file.path} is not an image`);
    return toJs(images.predict(decoded.all));
  },
  async imagesExport() { return bytesOf(images.export_model()); },

  async digitsLoad({ model, replay }) {
    if (digits) digits.destroy();
    digits = py.pyimport("onnxtrain.web.digits").DigitsSession(new Uint8Array(model), new Uint8Array(replay));
    return toJs(digits.classes);
  },
  async digitsPredict({ pixels }) { return toJs(digits.predict(pixels)); },
  async digitsAddClass({ name }) { return digits.add_class(name); },
  async digitsAddExample({ pixels, label }) { return toJs(digits.add_example(pixels, label)); },
  async digitsFineTune({ id, epochs, lr, headOnly }) {
    digits.start_fine_tune(headOnly);
    await trainEpochs(digits, { id, epochs, batchSize: 32, lr });
    return toJs(digits.finish_fine_tune());
  },
  async digitsExport() { return bytesOf(digits.export_model()); },
  async digitsSnapshot() { return bytesOf(digits.snapshot()); },
  async digitsCounts() { return toJs(digits.counts()); },
  async digitsRestore({ snapshot, replay }) {
    const next = py.pyimport("onnxtrain.web.digits").DigitsSession.restore(new Uint8Array(snapshot), new Uint8Array(replay));
    if (digits) digits.destroy();
    digits = next;
    return toJs(digits.classes);
  },

  async modelDescribe({ bytes }) {
    const info = toJs(bridge.describe_model(new Uint8Array(bytes)));
    try { info.signature = bridge.signature(new Uint8Array(bytes)); } catch { info.signature = null; } // shown if it can be
    return info;
  },
  async dataFile({ bytes, name, validation = 0.1 }) {
    if (!/\.csv$/i.test(name)) return toJs(session.set_npz(new Uint8Array(bytes), validation));
    const types = session.input_types();
    const arrays = py.pyimport("onnxtrain.web.tabular").csv_inputs(new Uint8Array(bytes), types);
    types.destroy();
    try { return toJs(session.set_named(arrays, validation)); } finally { arrays.destroy(); }
  },
  async sessionTrain(args) {
    return trainEpochs(session, args, { evaluate: () => ({ loss: session.validation_loss() ?? null }),
      checkpoint: () => bytesOf(session.checkpoint()) });
  },

  async tabularExport() { return bytesOf(tabular.export_model()); },
  async tabularPredictCsv({ bytes, offset = 0, limit = 100 }) {
    return toJs(tabular.predict_csv.callKwargs(new Uint8Array(bytes), { offset, limit }));
  },
  async tabularPredictValidation() { return toJs(tabular.predict_validation()); },

  // ---- any flow's run: "csv", "images", "own" or "digits" (see runOf) ---------------------------------
  async runCheckpoint({ flow }) { return bytesOf(runOf(flow).checkpoint()); },
  async runRestore({ flow, bytes, best = null }) {
    const run = runOf(flow);
    const epoch = run.restore(new Uint8Array(bytes));
    // the best epoch's parameters (the bytes of best_checkpoint()) go to the run's TrainingSession
    if (best) (run.training || run).restore_best(new Uint8Array(best));
    return epoch;
  },
  async modelSignature({ flow }) {
    const model = { csv: () => tabular.export_model(), images: () => images.export_model(),
      digits: () => digits.export_model() }[flow]();
    try { return bridge.signature(model); } finally { model.destroy(); }
  },
  async runArtifacts({ flow }) { const run = runOf(flow); return bytesOf((run.training || run).artifacts_zip()); },

  async setLearningRate({ lr }) { session.set_learning_rate(lr); return null; },
  async saveCheckpoint({ includeOptimizerState = true }) { return bytesOf(session.save_checkpoint(includeOptimizerState)); },
  async loadCheckpoint({ bytes }) { session.load_checkpoint(new Uint8Array(bytes)); return null; },
  async exportModel({ outputNames }) { return bytesOf(session.export_model(outputNames)); },
  async parameters({ trainableOnly = false }) { return bytesOf(session.contiguous_parameters(trainableOnly)); },
  async cancel() { cancelled = true; return null; },
};
registerHooks(handlers, { python: () => py, toJs }); // none in the site; the test site adds its messages

self.onmessage = async (event) => {
  const { id, type, ...args } = event.data;
  try {
    if (!handlers[type]) throw new Error(`unknown message type ${type}`);
    const result = await handlers[type]({ ...args, id });
    const transfer = result instanceof ArrayBuffer ? [result]
      : result && typeof result === "object" ? Object.values(result).filter((v) => v instanceof ArrayBuffer) : [];
    self.postMessage({ id, ok: true, result }, transfer);
  } catch (err) {
    self.postMessage({ id, ok: false, error: String(err && err.message ? err.message : err) });
  }
};
