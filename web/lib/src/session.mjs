// onnxruntime-web's training API: TrainingSession, LinearLRScheduler and generateArtifacts, describeModel, and
// the epoch loop (train) that the sessions and the tasks share.
import { feedsOf, fetchesOf, movedFeeds, tensorOf, tensorsOf } from "./tensor.mjs";
import { callOf, connect, releaseOf } from "./engine_client.mjs";
import { BYTE_SOURCES, bytesOf, fileName } from "./inputs.mjs";

// The options of generateArtifacts and train as the engine takes them: undefined left out, lists of names as
// strings.  Python checks the names and values and says what is wrong.
export function optionsOf(options, what) {
  if (options === undefined || options === null) return {};
  if (typeof options !== "object" || Array.isArray(options)) throw new TypeError(`${what}'s options must be an object`);
  return Object.fromEntries(Object.entries(options).filter(([, v]) => v !== undefined)
    .map(([k, v]) => [k, Array.isArray(v) ? v.map(String) : v]));
}

const TRAIN_CHUNK_MS = 50; // the engine trains whole steps for about this long per request

export function abortReason(signal) {
  return signal.reason ?? new DOMException("train() was aborted", "AbortError");
}

// `method`'s callbacks (name -> value) must be functions where given and its signal an AbortSignal; an aborted
// signal throws its reason.
export function checkCallbacks(method, callbacks, signal) {
  for (const [name, callback] of Object.entries(callbacks)) {
    if (callback !== undefined && typeof callback !== "function") {
      throw new TypeError(`${method}'s ${name} must be a function`);
    }
  }
  if (signal !== undefined && (typeof signal !== "object" || typeof signal?.aborted !== "boolean")) {
    throw new TypeError(`${method}'s signal must be an AbortSignal`);
  }
  if (signal?.aborted) throw abortReason(signal);
}

export function checkTrainCallbacks(onProgress, signal, onStart) {
  checkCallbacks("train", { onProgress, onStart }, signal);
}

// train() of a session or a task: the epoch loop runs in the engine (onnxtrain.train.Trainer), a chunk of whole
// steps per request.  Between chunks it calls onProgress(record) for each step and checks signal: an aborted
// signal rejects with signal.reason (an AbortError unless abort() was given one) and leaves the session at its
// last whole step.  Other calls on the session are rejected while train() runs.  The session stays usable after
// any failure.  onStart(info) is called once the run has begun: {rows, stepsPerEpoch, epochs, epoch}.
export async function trainLoop(call, beginArgs, onProgress, signal, onStart) {
  const started = await call("train_begin", ...beginArgs);
  onStart?.(started);
  try {
    for (;;) {
      const { records, done } = await call("train_continue", TRAIN_CHUNK_MS);
      if (onProgress) records.forEach((record) => onProgress(record));
      if (done) break;
      if (signal?.aborted) throw abortReason(signal);
    }
  } catch (err) {
    await call("train_end", false).catch(() => {});
    throw err;
  }
  return call("train_end", true);
}

// onnxruntime-web's executionProviders (names, or objects with a name) as names; null: the default, "wasm".
export function providersOf(sessionOptions) {
  const given = sessionOptions?.executionProviders;
  if (given == null) return null;
  if (!Array.isArray(given)) throw new TypeError("executionProviders must be an array, such as [\"webgpu\", \"wasm\"]");
  return given.map((p) => {
    const name = typeof p === "string" ? p : p?.name;
    if (typeof name !== "string") throw new TypeError("each of executionProviders is a name or an object with a name");
    return name;
  });
}

export class TrainingSession {
  constructor(engine_, info) {
    this._engine = engine_;
    this._handle = info.handle;
    this.trainingInputNames = Object.freeze(info.trainingInputNames);
    this.trainingOutputNames = Object.freeze(info.trainingOutputNames);
    this.evalInputNames = Object.freeze(info.evalInputNames);
    this.evalOutputNames = Object.freeze(info.evalOutputNames);
    this.executionProvider = info.executionProvider;
    this._hasOptimizer = info.optimizer;
    this._deferred = []; // runOptimizerStep and lazyResetGrad, sent with the next request (one round trip a step)
    this._training = 0; // train() calls running
  }

  static async create({ checkpointState, trainModel, evalModel, optimizerModel } = {}, sessionOptions = {}) {
    if (!checkpointState || !trainModel) {
      throw new TypeError("TrainingSession.create needs checkpointState and trainModel");
    }
    const providers = providersOf(sessionOptions);
    const connection = connect(sessionOptions?.onProgress);
    const bytes = await Promise.all([[checkpointState, "checkpointState"], [trainModel, "trainModel"],
      [evalModel, "evalModel"], [optimizerModel, "optimizerModel"]].map(([source, what]) => bytesOf(source, what)));
    await connection.ready;
    return new TrainingSession(connection, await connection.call("create", null, [...bytes, providers]));
  }

  _call(method, ...args) { return this._send(method, args); }

  // A request whose `transfer` (buffers in its arguments) moves to the engine instead of being copied.
  _send(method, args, transfer = []) {
    if (!this._deferred.length || method === "release") return callOf(this, "session", method, args, transfer);
    const deferred = this._deferred.splice(0);
    return callOf(this, "session", "deferred_then", [deferred, method, args], transfer);
  }

  // A step that returns nothing waits for the next request, which runs it first: the same results, one round trip
  // for onnxruntime-web's runTrainStep / runOptimizerStep / lazyResetGrad loop.  (Sent at once while train() runs,
  // or without an optimizer model, so that it is refused as before.)
  _defer(method, sendable) {
    if (!sendable || this._training || this._releasing) return this._call(method);
    this._deferred.push(method);
    return Promise.resolve();
  }

  async runTrainStep(feeds, fetchesOrOptions, _options) {
    const fetches = fetchesOf(fetchesOrOptions, this.trainingOutputNames);
    const [moved, transfer] = movedFeeds(feeds);
    return tensorsOf(await this._send("run_train_step", [moved, fetches], transfer));
  }

  async runEvalStep(feeds, fetchesOrOptions, _options) {
    const fetches = fetchesOf(fetchesOrOptions, this.evalOutputNames);
    const [moved, transfer] = movedFeeds(feeds);
    return tensorsOf(await this._send("run_eval_step", [moved, fetches], transfer));
  }

  async runOptimizerStep(_options) { await this._defer("run_optimizer_step", this._hasOptimizer); }

  async lazyResetGrad() { await this._defer("lazy_reset_grad", true); }

  async getParametersSize(trainableOnly = true) { return this._call("get_parameters_size", Boolean(trainableOnly)); }

  async getContiguousParameters(trainableOnly = true) {
    return tensorOf(await this._call("get_contiguous_parameters", Boolean(trainableOnly)));
  }

  async loadParametersBuffer(buffer, trainableOnly = true) {
    await this._call("load_parameters_buffer", await bytesOf(buffer, "the parameter buffer"), Boolean(trainableOnly));
  }

  // ---- beyond onnxruntime-web -----------------------------------------------------------------------------
  // outputNames: a list of output names, or one name.
  async exportModelForInferencing(outputNames) {
    const names = typeof outputNames === "string" ? [outputNames] : Array.from(outputNames, String);
    return this._call("export_model_for_inferencing", names);
  }

  async saveCheckpoint(includeOptimizerState = true) {
    return this._call("save_checkpoint", Boolean(includeOptimizerState));
  }

  async loadCheckpoint(checkpoint) {
    await this._call("load_checkpoint", await bytesOf(checkpoint, "the checkpoint"));
  }

  // The checkpoint's properties (int, float or str; a whole number is stored as an int).
  async getProperties() { return this._call("get_properties"); }

  async setProperty(name, value) { await this._call("set_property", String(name), value); }

  async setLearningRate(learningRate) { await this._call("set_learning_rate", Number(learningRate)); }

  async getLearningRate() { return this._call("get_learning_rate"); }

  // The epoch loop (trainLoop) over a dataset (input name -> Tensor).  Beyond the Trainer's options: checkpoints
  // (each epoch's last record carries its checkpoint), resume (true: the run the last train() left, paused or
  // done, goes on, to `epochs` in all, on the same dataset), resumeFrom (an epoch's checkpoint: its run goes on
  // there) and resumeBest (that run's bestCheckpoint).
  async train(dataset, options = {}) {
    const { onProgress, onStart, signal, validation, ...rest } = options ?? {};
    checkTrainCallbacks(onProgress, signal, onStart);
    const settings = optionsOf(rest, "train");
    if (validation !== undefined && validation !== null) {
      settings.validation = typeof validation === "number" ? validation : feedsOf(validation, "validation input");
    }
    for (const key of ["resumeFrom", "resumeBest"]) {
      if (settings[key] !== undefined) settings[key] = await bytesOf(settings[key], key);
    }
    this._training++;
    try {
      return await trainLoop((method, ...args) => this._call(method, ...args),
        [feedsOf(dataset, "dataset input"), settings], onProgress, signal, onStart);
    } finally {
      this._training--;
    }
  }

  // A data file for train(): a .npz with one array per training input, or a CSV of numbers for a model whose
  // training inputs are features and labels.  {dataset: input name -> Tensor, rows, validationRows (the rows
  // train({validation}) holds out), inputs: name -> [dims, type]}.
  async readDataset(file, name = fileName(file, "data.npz"), validation = 0) {
    const out = await this._call("read_dataset", await bytesOf(file, "the data file"), String(name),
      Number(validation));
    return { ...out, dataset: tensorsOf(out.dataset) };
  }

  // The artifacts with the run's state as their checkpoint, as a .zip, to go on elsewhere.
  async artifactsZip() { return this._call("artifacts_zip"); }

  // Frees the session in the engine; a second release() resolves, any other call rejects.
  async release() { return releaseOf(this); }
}

// onnxruntime-training's LinearLRScheduler on a session's optimizer: a linear warm-up from 0 over
// warmupStepCount optimizer steps to initialLr, then linear decay to 0 at totalStepCount.  The constructor sets
// the rate for the current step count; step() sets it for the optimizer's step count now and returns it.  Bad
// arguments reject `ready` and every step().
export class LinearLRScheduler {
  constructor(session, warmupStepCount, totalStepCount, initialLr) {
    if (!(session instanceof TrainingSession)) throw new TypeError("LinearLRScheduler needs a TrainingSession");
    this._session = session;
    this._id = session._call("create_lr_scheduler", warmupStepCount, totalStepCount, initialLr);
    this.ready = this._id.then(() => {});
    this.ready.catch(() => {});
  }

  async step() {
    return this._session._call("lr_scheduler_step", await this._id);
  }
}

// The four training artifacts of a forward-only ONNX model (URL, ArrayBuffer or Uint8Array), made in the engine:
// {trainModel, evalModel, optimizerModel, checkpointState} as Uint8Arrays for TrainingSession.create.
export async function generateArtifacts(forwardModel, options = {}) {
  const connection = connect();
  const model = await bytesOf(forwardModel, "the forward model");
  if (!model) throw new TypeError(`generateArtifacts needs a forward model: ${BYTE_SOURCES}`);
  const settings = optionsOf(options, "generateArtifacts");
  await connection.ready;
  const made = await connection.call("generate_artifacts", null, [model, settings]);
  return { trainModel: made.trainModel, evalModel: made.evalModel, optimizerModel: made.optimizerModel ?? null,
    checkpointState: made.checkpointState };
}

// A forward model's inputs, outputs, parameters (initializers) and the ops it has without a gradient rule, and a
// line that says how to call it (signature), to pick requiresGrad for generateArtifacts.
export async function describeModel(model) {
  const connection = connect();
  const bytes = await bytesOf(model, "the model");
  await connection.ready;
  return connection.call("describe_model", null, [bytes]);
}
