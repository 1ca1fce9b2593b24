// onnxtrain: on-device training in the page with onnxruntime-web 1.19.2's training API (TrainingSession, Tensor,
// env), plus exportModelForInferencing, checkpoints, the learning rate and its LinearLRScheduler, an epoch loop
// (session.train) and generateArtifacts.  The work happens in one module worker (engine.mjs, next to this file)
// that holds every session by handle; this file only converts and forwards.  build.py also writes onnxtrain.js
// from this file, a classic script that defines globalThis.onnxtrain (and globalThis.ort when there is none).
const LIBRARY_URL = import.meta.url;

// Every file the engine loads, by its path in this folder: [URL, bytes, sha256].  build.py writes the table, one
// literal `new URL("./path", <this module's URL>)` per file, the form Vite and webpack detect to copy the file into
// their output; env.wasm.wasmPaths, where given, says where the files are instead.
const FILES = {}; // build.py: the files the engine loads

// onnxruntime-web's settings, accepted so that code written for it runs.  onnxtrain reads env.wasm.wasmPaths: where
// this folder's files are served (a folder's URL, or a map of a file's path in this folder to its URL), for a
// bundle that did not copy them (esbuild's); relative URLs resolve against the page; and env.wasm.numThreads, the
// kernels' threads, read when the engine starts.  The rest is ignored.
const env = {
  wasm: { numThreads: 0, simd: true, proxy: false, initTimeout: 0, wasmPaths: undefined, trace: false },
  webgl: {}, webgpu: {}, logLevel: "warning", debug: false, versions: {},
};

// ---- Errors: every failed request to the engine rejects with an OnnxtrainError ---------------------------------
// {name, code, message, details}: the Python exception's class name, a stable code for its class, its one-line
// message and (details) its traceback.  onnxtrain's own Python errors have classes of the same name (instanceof
// works, subclasses as in Python); Python's own (TypeError, ValueError, KeyError, ...) and JavaScript errors in the
// engine (code "ENGINE") are OnnxtrainErrors that keep their name.  Arguments the library checks before sending
// throw JavaScript's TypeError or RangeError as usual.
class OnnxtrainError extends Error {
  constructor(message, { name = "OnnxtrainError", code = "PYTHON", details = "" } = {}) {
    super(message);
    this.name = name;
    this.code = code;
    this.details = details;
  }
}

// A subclass of OnnxtrainError named `name`, whose errors have `code` unless the engine says another name.
const errorClass = (name, code, Base = OnnxtrainError) => ({ [name]: class extends Base {
  constructor(message, info = {}) { super(message, { name, code, ...info }); }
} })[name];
const DataError = errorClass("DataError", "DATA");
const NpzError = errorClass("NpzError", "NPZ");
const CheckpointError = errorClass("CheckpointError", "CHECKPOINT");
const ModelDecodeError = errorClass("ModelDecodeError", "MODEL_DECODE");
const DataTypeError = errorClass("DataTypeError", "DATA_TYPE");
const ComposeError = errorClass("ComposeError", "COMPOSE");
const ArtifactError = errorClass("ArtifactError", "ARTIFACT");
const LearningRateError = errorClass("LearningRateError", "LEARNING_RATE");
const RunError = errorClass("RunError", "RUN");
const FeedError = errorClass("FeedError", "FEED");
const GraphError = errorClass("GraphError", "GRAPH");
const UnsupportedOpError = errorClass("UnsupportedOpError", "UNSUPPORTED_OP");
const GradientNotRegisteredError = errorClass("GradientNotRegisteredError", "GRADIENT_NOT_REGISTERED");
const NominalStateError = errorClass("NominalStateError", "NOMINAL_STATE");
const NonFiniteError = errorClass("NonFiniteError", "NON_FINITE");
const NonFiniteStepError = errorClass("NonFiniteStepError", "NON_FINITE_STEP", NonFiniteError);
const NonFiniteStateError = errorClass("NonFiniteStateError", "NON_FINITE_STATE", NonFiniteError);
const WebGPUError = errorClass("WebGPUError", "WEBGPU");
const NoAdapterError = errorClass("NoAdapterError", "NO_ADAPTER", WebGPUError);
const GPUMemoryError = errorClass("GPUMemoryError", "GPU_MEMORY", WebGPUError);

// code -> class, for onnxtrain's codes (onnxtrain.web.errors.CODES)
const ERROR_CLASSES = Object.fromEntries([DataError, NpzError, CheckpointError, ModelDecodeError, DataTypeError,
  ComposeError, ArtifactError, LearningRateError, RunError, FeedError, GraphError, UnsupportedOpError,
  GradientNotRegisteredError, NominalStateError, NonFiniteError, NonFiniteStepError, NonFiniteStateError, WebGPUError,
  NoAdapterError, GPUMemoryError].map((Class) => [new Class("").code, Class]));

// The engine's {name, code, message, details} as an instance of its code's class, named as the engine says.
function engineError({ name, code, message, details }) {
  const Class = ERROR_CLASSES[code];
  return Class ? new Class(message, { name, code, details }) : new OnnxtrainError(message, { name, code, details });
}

const ARRAYS = {
  float32: Float32Array, float64: Float64Array, int8: Int8Array, int16: Int16Array, int32: Int32Array,
  int64: BigInt64Array, uint8: Uint8Array, uint16: Uint16Array, uint32: Uint32Array, uint64: BigUint64Array,
  bool: Uint8Array,
};

function typeOfData(data) {
  if (Array.isArray(data)) return typeof data[0] === "bigint" ? "int64" : "float32";
  const found = Object.keys(ARRAYS).find((type) => type !== "bool" && data instanceof ARRAYS[type]);
  if (!found) throw new TypeError("a Tensor's data must be a typed array or an array of numbers");
  return found;
}

// onnxruntime-web's Tensor on the CPU: new Tensor(type, data, dims) or new Tensor(data, dims).
class Tensor {
  constructor(typeOrData, dataOrDims, maybeDims) {
    const typed = typeof typeOrData === "string";
    const type = typed ? typeOrData : typeOfData(typeOrData);
    let data = typed ? dataOrDims : typeOrData;
    const dims = (typed ? maybeDims : dataOrDims) ?? [data.length];
    const Array_ = ARRAYS[type];
    if (!Array_) {
      const types = Object.keys(ARRAYS).join(", ");
      throw new TypeError(`unsupported tensor type ${JSON.stringify(type)}: use one of ${types}`);
    }
    if (Array.isArray(data)) data = Array_.from(data, type.endsWith("int64") ? BigInt : Number);
    if (!(data instanceof Array_)) throw new TypeError(`a ${type} tensor needs its data in a ${Array_.name}`);
    const size = dims.reduce((n, d) => n * d, 1);
    if (!dims.every((d) => Number.isInteger(d) && d >= 0) || size !== data.length) {
      throw new RangeError(`tensor dims [${dims}] do not fit ${data.length} values`);
    }
    this.type = type;
    this.data = data;
    this.dims = Object.freeze([...dims]);
    this.size = size;
    this.location = "cpu";
  }

  get cpuData() { return this.data; }

  reshape(dims) { return new Tensor(this.type, this.data, dims); }

  dispose() {}
}

// A tensor (this library's, onnxruntime-web's, or any {type, data, dims}) as the engine takes it.
function plainTensor(name, value, what = "feed") {
  const data = value && (value.cpuData ?? value.data);
  if (!value || typeof value.type !== "string" || !ArrayBuffer.isView(data) || !value.dims) {
    throw new TypeError(`${what} '${name}' is not a tensor: give a Tensor, or an object with type, data and dims`);
  }
  return { type: value.type, data, dims: Array.from(value.dims, Number) };
}

function tensorOf({ type, dims, data }) {
  const Array_ = ARRAYS[type];
  return new Tensor(type, new Array_(data.buffer, data.byteOffset, data.byteLength / Array_.BYTES_PER_ELEMENT), dims);
}

// The files' URLs: path -> {url, bytes, sha256}, where env.wasm.wasmPaths says (null when it says nothing) or
// where FILES has them.
function libraryFiles(paths) {
  if (paths == null) return Object.fromEntries(Object.entries(FILES).map(([path, [url, bytes, sha256]]) =>
    [path, { url: url.href, bytes, sha256 }]));
  const page = globalThis.document?.baseURI ?? globalThis.location?.href;
  const folder = typeof paths === "string" || paths instanceof URL;
  if (!folder && typeof paths !== "object") {
    throw new TypeError("env.wasm.wasmPaths must be the URL of the folder that holds onnxtrain's files, or an object "
      + "of a file's path there (such as \"pyodide/pyodide.asm.wasm\") -> its URL");
  }
  const base = folder ? new URL(String(paths).replace(/\/?$/, "/"), page) : null;
  return Object.fromEntries(Object.entries(FILES).map(([path, [url, bytes, sha256]]) => {
    const given = base ? new URL(path, base) : paths[path] != null ? new URL(String(paths[path]), page) : url;
    return [path, { url: given.href, bytes, sha256 }];
  }));
}

// The one worker, started with the first session; requests by id.  A start that failed leaves no engine: the next
// call starts one again (after env.wasm.wasmPaths is set right, say).
let engine = null;
const progressListeners = new Set(); // the start's onProgress callbacks, until the engine is ready

// A worker of the engine at `files`' engine.mjs: resolves once it runs, rejects with the URL when it did not load.
function launch(files, { numThreads, tasks }) {
  const url = files["engine.mjs"].url;
  return new Promise((resolve, reject) => {
    const worker = new Worker(url, { type: "module" });
    worker.onerror = (event) => {
      event.preventDefault?.();
      worker.terminate();
      reject(new Error(`${url}${event.message ? `: ${event.message}` : " did not load"}`));
    };
    worker.onmessage = ({ data }) => {
      if (!data.running) return;
      worker.onerror = null;
      resolve(worker);
    };
    // a page a service worker serves keeps the files in that worker's cache: the engine keeps no second copy
    worker.postMessage({ init: { files, cache: !globalThis.navigator?.serviceWorker?.controller,
      numThreads, tasks } });
  });
}

// env.wasm.numThreads, checked: the kernels' threads (0 or undefined: onnxruntime-web's default, min(4, half the
// cores rounded up); more than 1 needs a cross-origin isolated page).
function threadCount() {
  const n = env.wasm.numThreads ?? 0;
  if (!Number.isInteger(n) || n < 0) {
    throw new TypeError(`env.wasm.numThreads must be a whole number of threads (0: the default), not ${String(n)}`);
  }
  return n;
}

// The engine from where env.wasm.wasmPaths says; code written for onnxruntime-web points wasmPaths at its own
// files, so where no engine loads there, from where FILES says.
async function engineWorker(tasks) {
  const paths = env.wasm.wasmPaths;
  const places = [libraryFiles(paths), ...(paths == null ? [] : [libraryFiles(null)])];
  const numThreads = threadCount();
  const failures = [];
  for (const files of places) {
    try {
      return await launch(files, { numThreads, tasks });
    } catch (err) {
      failures.push(err.message);
    }
  }
  throw new OnnxtrainError(`onnxtrain's engine did not load (${failures.join("; ")}). Serve the library's files there, `
    + "or say where they are with env.wasm.wasmPaths (see the library guide's section on bundlers)",
  { name: "Error", code: "ENGINE" });
}

function connect(onProgress, tasks = []) {
  if (onProgress !== undefined && typeof onProgress !== "function") throw new TypeError("onProgress must be a function");
  if (!Array.isArray(tasks) || !tasks.every((kind) => typeof kind === "string")) {
    throw new TypeError("start's tasks must be an array of task kinds, such as [\"handwriting\"]");
  }
  if (engine) {
    if (onProgress && !engine.started) progressListeners.add(onProgress);
    else onProgress?.({ phase: "ready" });
    return engine;
  }
  if (typeof Worker === "undefined" || typeof document === "undefined" && typeof WorkerGlobalScope === "undefined") {
    throw new Error("onnxtrain runs in a web browser: it trains in a Web Worker, which this environment lacks "
      + "(import it on the server if you like, but start it in the page)");
  }
  if (onProgress) progressListeners.add(onProgress);
  const pending = new Map();
  let nextId = 1;
  const worker = engineWorker(tasks);
  const connection = { started: false };
  connection.call = (method, handle = null, args = []) => new Promise((resolve, reject) => {
    const id = nextId++;
    pending.set(id, { resolve, reject });
    worker.then((w) => w.postMessage({ id, method, handle, args }), (err) => {
      pending.delete(id);
      reject(err);
    });
  });
  worker.then((w) => {
    w.onmessage = ({ data }) => {
      if (data.progress) {
        progressListeners.forEach((listener) => listener(data.progress));
        return;
      }
      const entry = pending.get(data.id);
      if (!entry) return;
      pending.delete(data.id);
      if (data.ok) entry.resolve(data.result); else entry.reject(engineError(data.error));
    };
    w.onerror = (event) => {
      const error = new OnnxtrainError(`onnxtrain's engine stopped${event.message ? `: ${event.message}` : ""}`,
        { name: "Error", code: "ENGINE" });
      pending.forEach((entry) => entry.reject(error));
      pending.clear();
    };
  }, () => {});
  connection.ready = connection.call("ready").then((info) => {
    connection.started = true;
    progressListeners.forEach((listener) => listener({ phase: "ready" }));
    progressListeners.clear();
    return info;
  }, (err) => {
    if (engine === connection) engine = null;
    progressListeners.clear();
    worker.then((w) => w.terminate(), () => {});
    throw err;
  });
  connection.ready.catch(() => {});
  engine = connection;
  return engine;
}

// What bytesOf takes, in words.
const BYTE_SOURCES = "a URL, a Response, a Blob (or File), an ArrayBuffer or a Uint8Array";

const isA = (value, name) => typeof globalThis[name] === "function" && value instanceof globalThis[name];

// `source` as a Response whose body is there to read: fetched when it is a URL (a string, relative to the page, or
// a URL), as it is when it is a Response; null when it is neither.  A response that is not ok rejects.
async function responseOf(source, what) {
  let response = source;
  if (typeof source === "string" || source instanceof URL) response = await fetch(source);
  else if (!isA(source, "Response")) return null;
  if (!response.ok) {
    const where = response.url || (typeof source === "string" ? source : "(a Response without a URL)");
    throw new Error(`${what} ${where}: HTTP ${response.status}${response.statusText ? ` ${response.statusText}` : ""}`);
  }
  if (response.bodyUsed) throw new TypeError(`${what}: the Response's body has been read already`);
  return response;
}

// A model, checkpoint or data file given as BYTE_SOURCES says, as a Uint8Array; null for none.
async function bytesOf(source, what) {
  if (source === undefined || source === null || source === "") return null;
  if (source instanceof Uint8Array) return source;
  if (source instanceof ArrayBuffer) return new Uint8Array(source);
  if (ArrayBuffer.isView(source)) return new Uint8Array(source.buffer, source.byteOffset, source.byteLength);
  if (isA(source, "Blob")) return new Uint8Array(await source.arrayBuffer());
  const response = await responseOf(source, what);
  if (response) return new Uint8Array(await response.arrayBuffer());
  throw new TypeError(`${what} must be ${BYTE_SOURCES}`);
}

// A file's name where `source` is a File, else `fallback`.
const fileName = (source, fallback) => (isA(source, "File") && source.name ? source.name : fallback);

// A session's or task's call of the engine, refused once release() was called; release() twice resolves.
function callOf(owner, what, method, args) {
  if (owner._releasing) {
    const name = method.replace(/_([a-z])/g, (_, c) => c.toUpperCase());
    return Promise.reject(new OnnxtrainError(`this ${what} was released: ${name}() cannot run; make a new one`,
      { name: "ValueError", code: "VALUE", details: new Error().stack }));  // as the engine answers a lost handle
  }
  return owner._engine.call(method, owner._handle, args);
}

function releaseOf(owner) {
  owner._releasing ??= owner._engine.call("release", owner._handle, []).catch((err) => {
    owner._releasing = null;
    throw err;
  });
  return owner._releasing.then(() => {});
}

function feedsOf(feeds, what = "feed") {
  if (!feeds || typeof feeds !== "object") throw new TypeError(`${what}s must be an object of input name -> Tensor`);
  return Object.fromEntries(Object.entries(feeds).map(([name, value]) => [name, plainTensor(name, value, what)]));
}

// onnxruntime-web's fetches: a list of output names, an object whose keys are output names, or run options.
function fetchesOf(fetchesOrOptions, outputNames) {
  if (Array.isArray(fetchesOrOptions)) return fetchesOrOptions.map(String);
  if (fetchesOrOptions && typeof fetchesOrOptions === "object") {
    const keys = Object.keys(fetchesOrOptions);
    if (keys.length && keys.every((k) => outputNames.includes(k))) return keys;
  }
  return null;
}

function tensorsOf(result) {
  return Object.fromEntries(Object.entries(result).map(([name, t]) => [name, tensorOf(t)]));
}

// The options of generateArtifacts and train as the engine takes them: undefined left out, lists of names as
// strings.  Python checks the names and values and says what is wrong.
function optionsOf(options, what) {
  if (options === undefined || options === null) return {};
  if (typeof options !== "object" || Array.isArray(options)) throw new TypeError(`${what}'s options must be an object`);
  return Object.fromEntries(Object.entries(options).filter(([, v]) => v !== undefined)
    .map(([k, v]) => [k, Array.isArray(v) ? v.map(String) : v]));
}

const TRAIN_CHUNK_MS = 50; // the engine trains whole steps for about this long per request

function abortReason(signal) {
  return signal.reason ?? new DOMException("train() was aborted", "AbortError");
}

// `method`'s callbacks (name -> value) must be functions where given and its signal an AbortSignal; an aborted
// signal throws its reason.
function checkCallbacks(method, callbacks, signal) {
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

function checkTrainCallbacks(onProgress, signal, onStart) {
  checkCallbacks("train", { onProgress, onStart }, signal);
}

// train() of a session or a task: the epoch loop runs in the engine (onnxtrain.train.Trainer), a chunk of whole
// steps per request.  Between chunks it calls onProgress(record) for each step and checks signal: an aborted
// signal rejects with signal.reason (an AbortError unless abort() was given one) and leaves the session at its
// last whole step.  Other calls on the session are rejected while train() runs.  The session stays usable after
// any failure.  onStart(info) is called once the run has begun: {rows, stepsPerEpoch, epochs, epoch}.
async function trainLoop(call, beginArgs, onProgress, signal, onStart) {
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
function providersOf(sessionOptions) {
  const given = sessionOptions?.executionProviders;
  if (given == null) return null;
  if (!Array.isArray(given)) throw new TypeError("executionProviders must be an array, such as [\"webgpu\", \"wasm\"]");
  return given.map((p) => {
    const name = typeof p === "string" ? p : p?.name;
    if (typeof name !== "string") throw new TypeError("each of executionProviders is a name or an object with a name");
    return name;
  });
}

class TrainingSession {
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

  _call(method, ...args) {
    if (!this._deferred.length || method === "release") return callOf(this, "session", method, args);
    const deferred = this._deferred.splice(0);
    return callOf(this, "session", "deferred_then", [deferred, method, args]);
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
    return tensorsOf(await this._call("run_train_step", feedsOf(feeds), fetches));
  }

  async runEvalStep(feeds, fetchesOrOptions, _options) {
    const fetches = fetchesOf(fetchesOrOptions, this.evalOutputNames);
    return tensorsOf(await this._call("run_eval_step", feedsOf(feeds), fetches));
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
class LinearLRScheduler {
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
async function generateArtifacts(forwardModel, options = {}) {
  const connection = connect();
  const model = await bytesOf(forwardModel, "the forward model");
  if (!model) throw new TypeError(`generateArtifacts needs a forward model: ${BYTE_SOURCES}`);
  const settings = optionsOf(options, "generateArtifacts");
  await connection.ready;
  const made = await connection.call("generate_artifacts", null, [model, settings]);
  return { trainModel: made.trainModel, evalModel: made.evalModel, optimizerModel: made.optimizerModel ?? null,
    checkpointState: made.checkpointState };
}

// Start the engine now rather than with the first session or task: resolves to what it runs (numpy's and
// Python's versions, the SIMD kernels in use or null, how Python started: "restored" from this browser's memory
// snapshot, "made" one, or "plain"; timings in ms).  onProgress({phase, file, loaded, total, cached}) as it goes:
// phase "download" for each file's bytes (cached: from this browser's cache), then "python", "imports",
// "kernels" and "ready".  tasks: the kinds of task the page makes ("tabular", "images", "handwriting",
// "personalize"), whose code the start then imports too (into this browser's memory snapshot, so that a later
// visit's first task of a kind imports nothing); only the start that starts the engine takes them.
async function start({ onProgress, tasks } = {}) { return connect(onProgress, tasks).ready; }

// Cross-origin isolation (for the engine's threads) on a host that cannot send COOP/COEP: registers the service
// worker at `serviceWorker` (a URL, e.g. a copy of this folder's isolation-sw.js at the site's root), which adds
// them, and once it is active reloads the page, which it then controls.  Resolves to crossOriginIsolated when the
// page goes on (it never resolves when it reloads).  It goes on as it is when the page is isolated, is opened
// with ?isolation=off, is in a frame (which a top-level page's policy governs), has no service workers, is
// controlled already (by a worker without the headers: the next version's, the next visit), or has reloaded once
// this tab's session and is still not controlled; and, with a warning on the console, when the worker fails to
// register or install.
const RELOADED = "onnxtrain-isolation-reload"; // sessionStorage: the page reloaded for isolation

async function isolate(serviceWorker, options = {}) {
  if (typeof serviceWorker !== "string" && !(serviceWorker instanceof URL)) {
    throw new TypeError("isolate needs the URL of the isolation service worker (a copy of isolation-sw.js)");
  }
  const workers = globalThis.navigator?.serviceWorker;
  let session;
  try {
    session = globalThis.sessionStorage;
  } catch {
    session = null; // a sandboxed or storage-blocked page: no guard against reloading again, so no reload
  }
  if (globalThis.crossOriginIsolated) {
    session?.removeItem(RELOADED);
    return true;
  }
  if (!workers || !session || session.getItem(RELOADED) || workers.controller || globalThis.top !== globalThis
      || new URLSearchParams(globalThis.location.search).get("isolation") === "off") return false;
  let registration;
  try {
    registration = await workers.register(serviceWorker, options);
  } catch (err) {
    console.warn(`onnxtrain: the isolation service worker ${serviceWorker} did not register: ${err.message}`);
    return false;
  }
  if (!(await activated(registration))) {
    console.warn(`onnxtrain: the isolation service worker ${serviceWorker} failed to install`);
    return false;
  }
  session.setItem(RELOADED, "1");
  globalThis.location.reload();
  return new Promise(() => {});
}

// Whether the registration has an active worker, or its new one becomes active (false: it failed to install).
function activated(registration) {
  const worker = registration.installing || registration.waiting;
  if (registration.active || !worker) return Promise.resolve(!!registration.active);
  return new Promise((resolve) => worker.addEventListener("statechange", () => {
    if (worker.state === "activating" || worker.state === "activated") resolve(true);
    else if (worker.state === "redundant") resolve(false);
  }));
}

// One request to the engine by its method name: internal, exported only in the test site (build.py's
// add_test_hooks), whose hooks send their own requests with it.
function _engineCall(method, ...args) { return connect().call(method, null, args); }

// A forward model's inputs, outputs, parameters (initializers) and the ops it has without a gradient rule, and a
// line that says how to call it (signature), to pick requiresGrad for generateArtifacts.
async function describeModel(model) {
  const connection = connect();
  const bytes = await bytesOf(model, "the model");
  await connection.ready;
  return connection.call("describe_model", null, [bytes]);
}

// ---- Tasks: whole training flows (a CSV table, a folder of images, handwriting, a backbone personalised) -----
// Each task owns its data, model and run; train() is the sessions' loop over the task's own data, with each
// epoch's metrics (the task's evaluate()) in its last record.  The page that onnxtrain's app is uses them.
// Each task takes onnxruntime-web's executionProviders among its options, as TrainingSession.create does, and
// says in executionProvider which runs its training (and, for PersonalizeTask, its embeddings).
class Task {
  constructor(connection, info) {
    this._engine = connection;
    this._handle = info.handle;
    this.executionProvider = info.executionProvider;
  }

  static async _make(kind, args) {
    const connection = connect();
    await connection.ready;
    return new this(connection, await connection.call("create_task", null, [kind, args]));
  }

  _call(method, ...args) { return callOf(this, "task", method, args); }

  // Train up to `epochs` epochs in all (a paused run goes on): {epochs, batchSize, learningRate, schedule,
  // warmup, keepBest, patience, checkFinite, checkpoints, onProgress, signal}; see trainLoop.
  async train(options = {}) {
    const { onProgress, onStart, signal, ...rest } = options ?? {};
    checkTrainCallbacks(onProgress, signal, onStart);
    return trainLoop((method, ...args) => this._call(method, ...args), [optionsOf(rest, "train")], onProgress, signal,
      onStart);
  }

  async checkpoint() { return this._call("checkpoint"); }

  // Continue a run from its checkpoint (and the best epoch's, from a record's bestCheckpoint); its epoch.
  async restore(checkpoint, best = null) {
    return this._call("restore", await bytesOf(checkpoint, "the checkpoint"),
      await bytesOf(best, "the best checkpoint"));
  }

  // The training artifacts with the run's current state as checkpoint, as a .zip, to go on elsewhere.
  async artifactsZip() { return this._call("artifacts_zip"); }

  async exportModel() { return this._call("export_model"); }

  async signature() { return this._call("signature"); }

  // Frees the task in the engine; a second release() resolves, any other call rejects.
  async release() { return releaseOf(this); }
}

// A CSV table: the label column predicted from the others, with the preprocessing in the exported model.
class TabularTask extends Task {
  static async create(csv, name = fileName(csv, "data.csv"), { executionProviders } = {}) {
    return this._make("tabular", [await bytesOf(csv, "the CSV file"), String(name),
      providersOf({ executionProviders })]);
  }

  async describe() { return this._call("describe"); }

  async detectTask(label) { return this._call("detect_task", String(label)); }

  async setup({ label, task, hidden, validation = 0.2, seed = 0, optimizer = "AdamW" } = {}) {
    return this._call("setup", String(label), task, hidden, validation, seed, optimizer);
  }

  async evaluate() { return this._call("evaluate"); }

  async predictValidation() { return this._call("predict_validation"); }

  // The exported model's predictions for another CSV with the same columns, `limit` rows from `offset`.
  async predictCsv(csv, { offset = 0, limit = 100 } = {}) {
    return this._call("predict_csv", await bytesOf(csv, "the CSV file"), offset, limit);
  }
}

// Images in classes: a small CNN on size x size RGBA pixels, the resize and scaling in the exported model.
class ImageTask extends Task {
  // pixels: RGBA bytes of `count` images of size x size (decodeImages gives them), labels: class index per image.
  static async create({ pixels, count, size, labels, classes, validation = 0.2, seed = 0, optimizer = "AdamW",
    executionProviders } = {}) {
    for (const [name, value, what] of [["labels", labels, "a class index per image"],
      ["classes", classes, "the class names"]]) {
      if (value == null || typeof value[Symbol.iterator] !== "function" || typeof value === "string") {
        throw new TypeError(`ImageTask.create needs ${name}: ${what} (decodeImages gives them)`);
      }
    }
    return this._make("images", [await bytesOf(pixels, "the pixels"), [count, size], Array.from(labels, Number),
      Array.from(classes, String), validation, seed, optimizer, providersOf({ executionProviders })]);
  }

  // Files ({path, bytes}, or File objects such as <input type=file webkitdirectory> gives, their path the
  // webkitRelativePath) decoded and resized to size x size RGBA, each labelled by its folder; files that are not
  // images are skipped and listed, and none being an image rejects.  `fit`: "stretch" the whole image, or take its
  // "centre" square (what PersonalizeTask's backbone sees).  {pixels, count, size, labels, classes, skipped}
  static async decodeImages(files, size, { fit = "stretch" } = {}) {
    if (fit !== "stretch" && fit !== "centre") throw new TypeError(`fit is "stretch" or "centre", not ${fit}`);
    const canvas = new OffscreenCanvas(size, size);
    const context = canvas.getContext("2d", { willReadFrequently: true });
    context.imageSmoothingQuality = "high";
    const pixels = [];
    const names = [];
    const skipped = [];
    for (const file of files) {
      const isFile = isA(file, "File");
      const path = isFile ? file.webkitRelativePath || file.name : file?.path;
      if (typeof path !== "string") throw new TypeError("decodeImages takes File objects or {path, bytes} objects");
      const parts = path.split("/").filter(Boolean);
      let bitmap;
      try {
        bitmap = await createImageBitmap(isFile ? file : new Blob([file.bytes]));
      } catch {
        skipped.push(path);
        continue;
      }
      context.clearRect(0, 0, size, size);
      const side = Math.min(bitmap.width, bitmap.height);
      if (fit === "centre") {
        context.drawImage(bitmap, (bitmap.width - side) / 2, (bitmap.height - side) / 2, side, side, 0, 0, size, size);
      } else {
        context.drawImage(bitmap, 0, 0, size, size);
      }
      bitmap.close();
      pixels.push(context.getImageData(0, 0, size, size).data);
      names.push(parts.length >= 2 ? parts[parts.length - 2] : "unlabelled");
    }
    if (!pixels.length) {
      const some = skipped.slice(0, 3).map((p) => JSON.stringify(p)).join(", ");
      const n = skipped.length;
      throw new Error(`no image this browser decodes among the ${n} file${n === 1 ? "" : "s"}: ${some}` +
        `${n > 3 ? `, … (${n} skipped)` : ""}`);
    }
    const classes = [...new Set(names)].sort();
    const all = new Uint8Array(pixels.length * size * size * 4);
    pixels.forEach((p, i) => all.set(p, i * size * size * 4));
    return { pixels: all, count: pixels.length, size, labels: names.map((n) => classes.indexOf(n)), classes, skipped };
  }

  async info() { return this._call("info"); }

  async evaluate() { return this._call("evaluate"); }

  // Class probabilities for one image: RGBA bytes of the task's size, or an image (IMAGE_SOURCES) drawn to that size
  // as decodeImages stretches it.
  async predict(pixels) {
    if (isImage(pixels)) {
      this._size ??= await this._call("size");
      return this._call("predict", (await rgbaOf(pixels, "the image", this._size, this._size)).data);
    }
    return this._call("predict", await bytesOf(pixels, "the image"));
  }
}

// A pretrained classifier of 8x8 drawings, fine-tuned on the user's own examples (and classes).
class HandwritingTask extends Task {
  static async create(model, replay = null, { executionProviders } = {}) {
    return this._make("handwriting", [await bytesOf(model, "the model"), await bytesOf(replay, "the replay data"),
      null, providersOf({ executionProviders })]);
  }

  static async fromSnapshot(snapshot, replay = null, { executionProviders } = {}) {
    return this._make("handwriting_snapshot", [await bytesOf(snapshot, "the snapshot"),
      await bytesOf(replay, "the replay data"), providersOf({ executionProviders })]);
  }

  async classes() { return this._call("classes"); }

  async predict(pixels) { return this._call("predict", Array.from(pixels, Number)); }

  async addClass(name) { return this._call("add_class", String(name)); }

  async addExample(pixels, label) { return this._call("add_example", Array.from(pixels, Number), Number(label)); }

  async counts() { return this._call("counts"); }

  async snapshot() { return this._call("snapshot"); }

  // Fine-tune the head (or the whole model) on the examples: train() between the start and the finish.
  async fineTune({ headOnly = true, epochs = 20, batchSize = 32, learningRate = 0.01, onProgress, signal } = {}) {
    await this._call("start_fine_tune", Boolean(headOnly));
    const summary = await this.train({ epochs, batchSize, learningRate, keepBest: false, onProgress, signal });
    return { ...summary, ...(await this._call("finish_fine_tune")) };
  }
}

// A model's bytes from a URL (relative to the page) or a Response, read with progress: onLoad({loaded, total,
// seconds, stage: "download"}) per chunk (total is null when the server does not say), or from a Blob or bytes.
async function bytesWithProgress(source, what, onLoad, started) {
  if (onLoad !== undefined && typeof onLoad !== "function") throw new TypeError("onLoad must be a function");
  const response = await responseOf(source, what);
  if (!response) {
    const bytes = await bytesOf(source, what);
    if (!bytes) throw new TypeError(`${what} must be ${BYTE_SOURCES}`);
    return bytes;
  }
  const length = Number(response.headers.get("content-length"));
  const total = Number.isFinite(length) && length > 0 ? length : null;
  const seconds = () => (performance.now() - started) / 1000;
  if (!response.body) {
    const bytes = new Uint8Array(await response.arrayBuffer());
    onLoad?.({ loaded: bytes.length, total: bytes.length, seconds: seconds(), stage: "download" });
    return bytes;
  }
  const reader = response.body.getReader();
  const chunks = [];
  let loaded = 0;
  onLoad?.({ loaded, total, seconds: seconds(), stage: "download" });
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    chunks.push(value);
    loaded += value.length;
    onLoad?.({ loaded, total, seconds: seconds(), stage: "download" });
  }
  const bytes = new Uint8Array(loaded);
  let at = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, at);
    at += chunk.length;
  }
  return bytes;
}

// The images the tasks take besides RGBA bytes, drawn at their natural size (IMAGE_SOURCES).
const IMAGE_TYPES = ["ImageData", "HTMLImageElement", "HTMLCanvasElement", "OffscreenCanvas", "HTMLVideoElement",
  "ImageBitmap", "VideoFrame"];
const IMAGE_SOURCES = "an <img>, a <canvas>, an OffscreenCanvas, a <video>, an ImageBitmap, a VideoFrame or an ImageData";

const isImage = (value) => IMAGE_TYPES.some((name) => isA(value, name));

// An image's natural width and height; an image that has nothing to draw yet (not loaded, no video frame, closed)
// throws, saying so.
function naturalSize(image, what) {
  let width = image.width, height = image.height, missing = "";
  if (isA(image, "HTMLImageElement")) {
    [width, height] = [image.naturalWidth, image.naturalHeight];
    const src = image.currentSrc || image.src;
    if (!image.complete || !width) missing = `the <img>${src ? ` ${src}` : ""} is not loaded (yet)`;
  } else if (isA(image, "HTMLVideoElement")) {
    [width, height] = [image.videoWidth, image.videoHeight];
    if (image.readyState < 2 || !width) missing = "the <video> has no frame yet: wait for its loadeddata event";
  } else if (isA(image, "VideoFrame")) {
    [width, height] = [image.displayWidth, image.displayHeight];
    if (!image.format && !width) missing = "the VideoFrame is closed";
  }
  if (!missing && !(width > 0 && height > 0)) missing = `it is ${width}x${height} px (closed, or empty)`;
  if (missing) throw new Error(`${what}: ${missing}`);
  return [width, height];
}

// An image (IMAGE_SOURCES) as RGBA ImageData: at its natural size, or drawn to width x height.
async function rgbaOf(image, what, width, height) {
  const [w, h] = naturalSize(image, what);
  if (isA(image, "ImageData") && (width ?? w) === w && (height ?? h) === h) return image;
  const canvas = new OffscreenCanvas(width ?? w, height ?? h);
  const context = canvas.getContext("2d", { willReadFrequently: true });
  context.imageSmoothingQuality = "high";
  const source = isA(image, "ImageData") ? await createImageBitmap(image) : image;
  context.drawImage(source, 0, 0, canvas.width, canvas.height);
  if (source !== image) source.close();
  return context.getImageData(0, 0, canvas.width, canvas.height);
}

// Images as the engine takes them: RGBA bytes and [count, height, width].  `pixels` is one image (IMAGE_SOURCES, at
// its natural size) or RGBA bytes (Uint8Array, Uint8ClampedArray or ArrayBuffer) of `count` images of width x height.
async function imagesOf(pixels, size, what) {
  if (isImage(pixels)) {
    const { data, width, height } = await rgbaOf(pixels, what);
    return [new Uint8Array(data.buffer, data.byteOffset, data.byteLength), [1, height, width]];
  }
  const { width, height, count = 1 } = size ?? {};
  for (const [name, value] of [["width", width], ["height", height], ["count", count]]) {
    if (!Number.isInteger(value) || value < 1) {
      throw new TypeError(`${what}: ${name} must be a whole number of 1 or more (got ${value})`);
    }
  }
  const bytes = await bytesOf(pixels, what);
  if (!bytes) throw new TypeError(`${what} must be RGBA bytes or an image: ${IMAGE_SOURCES}`);
  return [bytes, [count, height, width]];
}

// A pretrained image backbone (ONNX with outputs `features` and `block`, see onnxtrain.tasks.backbone) taught the
// user's own classes: each sample is embedded once when added (in the engine, preprocessing inside one ONNX graph)
// and cached, the head is trained on the cache, and exportModel() gives one ONNX model from uint8 RGB(A) pixels of
// any size to `probabilities` and `label`.
class PersonalizeTask extends Task {
  // backbone: a URL (fetched here, onLoad({loaded, total, seconds, stage: "download"}) per chunk), an ArrayBuffer
  // or a Uint8Array.  onLoad is called once more with stage "ready" when the engine holds the backbone.
  // executionProviders as TrainingSession.create's: the embeddings, the head's training and its predictions run
  // on the first that is here.
  static async create(backbone, { onLoad, executionProviders } = {}) {
    return this._load("personalize", backbone, [providersOf({ executionProviders })], onLoad);
  }

  // The task a snapshot() was taken of, on the same backbone (without embedding the samples again).
  static async fromSnapshot(backbone, snapshot, { onLoad, executionProviders } = {}) {
    const bytes = await bytesOf(snapshot, "the snapshot");
    if (!bytes) throw new TypeError("fromSnapshot needs the snapshot's bytes");
    return this._load("personalize_snapshot", backbone, [bytes, providersOf({ executionProviders })], onLoad);
  }

  static async _load(kind, backbone, rest, onLoad) {
    const started = performance.now();
    connect();
    const bytes = await bytesWithProgress(backbone, "the backbone", onLoad, started);
    const task = await this._make(kind, [bytes, ...rest]);
    task._loadSeconds = (performance.now() - started) / 1000;
    onLoad?.({ loaded: bytes.length, total: bytes.length, seconds: task._loadSeconds, stage: "ready" });
    return task;
  }

  // {inputSize, features, blockShape, backboneBytes, backboneSha256, source, loadSeconds}
  async info() { return { ...(await this._call("info")), loadSeconds: this._loadSeconds }; }

  async addClass(name) { return this._call("add_class", String(name)); }

  async renameClass(index, name) { await this._call("rename_class", Number(index), String(name)); }

  // Removes the class and its samples; the classes after it move down one.
  async removeClass(index) { await this._call("remove_class", Number(index)); }

  // Samples of class `classIndex`: RGBA bytes of `count` images of width x height, or one image (IMAGE_SOURCES, at
  // its natural size: addSamples(image, classIndex)); their ids.
  async addSamples(pixels, size, classIndex) {
    if (isImage(pixels) && classIndex === undefined) {
      [size, classIndex] = [undefined, size];
    }
    const [bytes, shape] = await imagesOf(pixels, size, "the samples");
    return this._call("add_samples", bytes, shape, Number(classIndex));
  }

  async removeSample(id) { await this._call("remove_sample", Number(id)); }

  async classes() { return this._call("classes"); }

  // The number of samples of each class, in class order.
  async counts() { return this._call("counts"); }

  // Every sample: [{id, classIndex}], in the order added.
  async samples() {
    return (await this._call("sample_list")).map(([id, classIndex]) => ({ id, classIndex }));
  }

  // A new run (the head for the classes there are now, on all samples): {samples, train, validation, classes,
  // trainPerClass, validationPerClass, fineTune, parameters}.  Then train().
  async setup({ fineTune = false, validation = 0, seed = 0, optimizer = "AdamW" } = {}) {
    return this._call("setup", Boolean(fineTune), Number(validation), Number(seed), String(optimizer));
  }

  // Accuracy, baseline and confusion on the validation samples (on the training samples without validation).
  async evaluate() { return this._call("evaluate"); }

  // {probabilities, label, className} of one image: RGBA bytes of width x height, or an image (IMAGE_SOURCES).
  async predict(pixels, size) {
    const [bytes, shape] = await imagesOf(pixels, size, "the image");
    if (shape[0] !== 1) throw new TypeError(`predict takes one image, not ${shape[0]}`);
    return (await this._call("predict", bytes, shape))[0];
  }

  // Classes, samples (with their cached embeddings) and the run, as bytes for fromSnapshot.
  async snapshot() { return this._call("snapshot"); }
}

// ---- Federated learning: the page as one client of a Flower federation ---------------------------------------
// The federation server (`python -m onnxtrain federate`, or `python3 build.py serve --federate`) serves the site
// and, under fed/, a bridge where each page stands for one Flower node: it long-polls for a round's task (the
// global parameters), trains on its own data, and posts the parameters back.  The only bodies a page sends are
// parameter vectors (raw float32, the session's getContiguousParameters order) or nothing; its metrics go in the
// X-Metrics header, numbers only.

const FED_POLL_STATUS_MS = 3000; // fed/status for onStatus
const FED_RETRY_MS = [500, 1000, 2000, 4000]; // after a failed poll (the network, or the server's 5xx)
const FED_GIVE_UP_MS = 30000; // failed polls this long in a row: join() rejects
const ARTIFACT_KEYS = ["trainModel", "evalModel", "optimizerModel", "checkpointState"];
const EVAL_ROWS = 256; // rows per runEvalStep while measuring accuracy on the local data

function fedError(what, response, text) {
  const said = (text || "").trim().slice(0, 300);
  return new Error(`${what}: HTTP ${response.status}${said ? `: ${said}` : ""}`);
}

// A tensor's rows [start, end) as a tensor of the same type (a view, no copy).
function rowsOf(tensor, start, end) {
  const row = tensor.dims.slice(1).reduce((n, d) => n * d, 1);
  const data = tensor.data.subarray(start * row, end * row);
  return new Tensor(tensor.type, data, [end - start, ...tensor.dims.slice(1)]);
}

// The session's model on a dataset, in the eval model: mean loss (its first output) and, where the eval model has
// the logits output `output` (else a second output) and the dataset an int64 labels input, the accuracy.
async function evaluateOn(session, dataset) {
  const names = session.evalInputNames;
  if (!names.length) throw new Error("the federation's session has no eval model");
  const inputs = Object.fromEntries(names.map((name) => {
    if (!(name in dataset)) throw new TypeError(`the dataset has no input '${name}' (the eval model takes ${names})`);
    const t = plainTensor(name, dataset[name], "dataset input");
    return [name, new Tensor(t.type, t.data, t.dims)];
  }));
  const rows = inputs[names[0]].dims[0];
  const labelsName = names.find((n) => inputs[n].type === "int64" && inputs[n].dims.length === 1);
  const outputs = session.evalOutputNames;
  const logitsName = outputs.includes("output") ? "output" : outputs[1];
  let lossSum = 0, right = 0;
  for (let start = 0; start < rows; start += EVAL_ROWS) {
    const end = Math.min(rows, start + EVAL_ROWS);
    const feeds = Object.fromEntries(names.map((n) => [n, rowsOf(inputs[n], start, end)]));
    const out = await session.runEvalStep(feeds);
    lossSum += Number(out[outputs[0]].data[0]) * (end - start);
    const logits = logitsName && labelsName ? out[logitsName] : null;
    if (!logits || logits.dims.length !== 2 || logits.dims[0] !== end - start) continue;
    const classes = logits.dims[1], labels = inputs[labelsName].data;
    for (let r = 0; r < end - start; r++) {
      let best = 0;
      for (let c = 1; c < classes; c++) if (logits.data[r * classes + c] > logits.data[r * classes + best]) best = c;
      if (BigInt(best) === labels[start + r]) right++;
    }
  }
  const accuracy = logitsName && labelsName && rows ? right / rows : null;
  return { loss: rows ? lossSum / rows : null, accuracy };
}

// A task's X-Config: {epochs, batchSize, learningRate, proximalMu}, the federation's settings where it says none.
function roundConfig(header, info) {
  let config = {};
  try { config = header ? JSON.parse(header) : {}; } catch { config = {}; }
  const number = (value, fallback) => (typeof value === "number" && Number.isFinite(value) ? value : fallback);
  return { epochs: number(config.epochs, info.localEpochs), batchSize: number(config.batchSize, info.batchSize),
    learningRate: number(config.learningRate, info.learningRate), proximalMu: number(config.proximalMu, 0) };
}

// Metrics as the X-Metrics header takes them: finite numbers only.
function metricsHeader(metrics) {
  return JSON.stringify(Object.fromEntries(Object.entries(metrics)
    .filter(([, v]) => typeof v === "number" && Number.isFinite(v))));
}

const sleep = (ms, signal) => new Promise((resolve) => {
  const timer = setTimeout(resolve, ms);
  signal?.addEventListener("abort", () => { clearTimeout(timer); resolve(); }, { once: true });
});

class Federation {
  constructor(base, info) {
    this._base = base; // absolute URL of the federation's API, ending in "/"
    this.info = info;
    this.globalModelUrl = new URL("global.onnx", base).href;
    this._joined = null; // {client, stop (AbortController), done (join's promise)}
  }

  // The federation served at baseUrl (relative to the page; "fed/" by default): its info, or an Error saying that
  // no federation runs there.
  static async connect(baseUrl = "fed/") {
    const where = globalThis.document?.baseURI ?? globalThis.location?.href;
    const base = new URL(String(baseUrl).endsWith("/") ? String(baseUrl) : `${baseUrl}/`, where);
    let response;
    try {
      response = await fetch(new URL("info", base), { cache: "no-store" });
    } catch (err) {
      throw new Error(`no federation server answers at ${base.href} (${err.message})`);
    }
    if (response.status === 404) {
      throw new Error(`no federation is running at ${base.href}: start one with \`python -m onnxtrain federate\``);
    }
    if (!response.ok) throw fedError(`the federation at ${base.href}`, response, await response.text());
    let info;
    try { info = await response.json(); } catch {
      throw new Error(`the federation at ${base.href} sent info that is not JSON`);
    }
    const artifacts = info?.artifacts ?? {};
    if (!Number.isInteger(info?.parameters) || info.parameters < 1
        || !ARTIFACT_KEYS.every((k) => typeof artifacts[k] === "string")) {
      throw new Error(`the federation at ${base.href} sent info without its parameter count or its four artifacts`);
    }
    return new Federation(base.href, info);
  }

  // info's paths (fed/...) are relative to the site's root: the folder above the API's.
  _artifactUrl(path) { return new URL(path, new URL("../", this._base)).href; }

  // A TrainingSession of the federation's artifacts.
  async session() {
    const a = this.info.artifacts;
    return TrainingSession.create({ checkpointState: this._artifactUrl(a.checkpointState),
      trainModel: this._artifactUrl(a.trainModel), evalModel: this._artifactUrl(a.evalModel),
      optimizerModel: this._artifactUrl(a.optimizerModel) });
  }

  get joined() { return this._joined !== null; }

  // Take part until the run ends (resolves to {reason: "done", rounds, status}), fed.leave() (reason "left") or
  // `signal` aborts (rejects with signal.reason, after leaving).  Each task: the global parameters into `session`,
  // their loss and accuracy on `dataset` (input name -> Tensor), session.train() on it with the round's settings,
  // the loss and accuracy again, the parameters back.  onRound({round, phase: "training" | "sent" | "rejected" |
  // "failed", local: {loss, accuracy, globalAccuracy, examples} | null, error}) as a round goes; onStatus(fed/status)
  // every few seconds.  A round whose local step fails sends nothing (the round's timeout covers it) and the page
  // goes on polling.  Polls that fail (network, server errors) are retried with a back-off; after 30 s of them
  // join() rejects.
  async join({ session, dataset, onRound, onStatus, signal } = {}) {
    if (this._joined) throw new Error("this page has already joined the federation: leave() first");
    if (!(session instanceof TrainingSession)) throw new TypeError("join needs the session (fed.session())");
    checkCallbacks("join", { onRound, onStatus }, signal);
    const run = { client: null, stop: new AbortController(), rounds: 0, done: null };
    this._joined = run;
    try {
      const size = await session.getParametersSize(true);
      if (size !== this.info.parameters) {
        const theirs = this.info.parameters;
        throw new Error(`the session's model has ${size} trainable parameters, the federation's ${theirs}`);
      }
      const feeds = feedsOf(dataset, "dataset input");
      const missing = session.trainingInputNames.filter((n) => !(n in feeds));
      if (missing.length) throw new TypeError(`the dataset has no input '${missing[0]}'`);
      run.feeds = feeds;
      run.examples = feeds[session.trainingInputNames[0]].dims[0];
      if (!(run.examples > 0)) throw new Error("the dataset has no rows");
      const response = await fetch(new URL("join", this._base), { method: "POST" });
      const text = await response.text();
      if (!response.ok) throw fedError("the federation did not let this page join", response, text);
      run.client = JSON.parse(text).client;
    } catch (err) {
      this._joined = null;
      throw err;
    }
    run.done = this._takePart(run, session, onRound, onStatus, signal);
    return run.done;
  }

  async _takePart(run, session, onRound, onStatus, signal) {
    const onAbort = () => run.stop.abort();
    signal?.addEventListener("abort", onAbort, { once: true });
    if (signal?.aborted) run.stop.abort();
    // a closed tab says so at once (the server would notice its silence after ~10 s anyway)
    const onHide = () => globalThis.navigator?.sendBeacon?.(this._url("leave", run.client));
    globalThis.addEventListener?.("pagehide", onHide);
    const statusLoop = this._pollStatus(onStatus, run.stop.signal);
    try {
      const ended = await this._rounds(run, session, onRound);
      if (ended) return { ...ended, status: await this.status().catch(() => null) };
      await fetch(this._url("leave", run.client), { method: "POST" }).catch(() => {});
      if (signal?.aborted) throw abortReason(signal);
      return { reason: "left", rounds: run.rounds, status: await this.status().catch(() => null) };
    } finally {
      run.stop.abort();
      await Promise.all([statusLoop, run.polling]);
      signal?.removeEventListener("abort", onAbort);
      globalThis.removeEventListener?.("pagehide", onHide);
      this._joined = null;
    }
  }

  // Leave the federation (join() then resolves with reason "left"); nothing when not joined.
  async leave() {
    const run = this._joined;
    if (!run) return;
    run.stop.abort();
    await run.done?.catch(() => {});
  }

  // fed/status: {phase, round, rounds, clients, nodes, history, error}.
  async status() {
    const response = await fetch(new URL("status", this._base), { cache: "no-store" });
    if (!response.ok) throw fedError("the federation's status", response, await response.text());
    return response.json();
  }

  _url(path, client, task) {
    const url = new URL(path, this._base);
    url.searchParams.set("client", client);
    if (task !== undefined) url.searchParams.set("task", task);
    return url.href;
  }

  async _pollStatus(onStatus, stopped) {
    if (!onStatus) return;
    while (!stopped.aborted) {
      try {
        const status = await this.status();
        if (!stopped.aborted) onStatus(status);
      } catch { /* the round loop reports a lost server */ }
      await sleep(FED_POLL_STATUS_MS, stopped);
    }
  }

  // The rounds: null when stopped (leave or abort), {reason: "done", rounds} when the run ended.  Tasks come from
  // _poll, which goes on polling while a round trains, so the page is never silent while it is there.
  async _rounds(run, session, onRound) {
    const queue = [];
    let wake = () => {};
    const put = (item) => { queue.push(item); wake(); };
    run.stop.signal.addEventListener("abort", () => wake(), { once: true });
    run.polling = this._poll(run, put);
    for (;;) {
      while (!queue.length && !run.stop.signal.aborted) await new Promise((resolve) => { wake = resolve; });
      if (run.stop.signal.aborted) return null;
      const item = queue.shift();
      if (item.gone) return this._ended(run);
      if (item.error) throw item.error;
      const ended = await this._round(run, item, session, onRound);
      if (ended) return ended;
    }
  }

  // Long polls of fed/next, one after another until the page stops: each task ({round, task, config, body}), the
  // run's end ({gone: true}) or a failure ({error}) goes to put().  Failed polls (the network, a server error) are
  // retried with a back-off, for up to FED_GIVE_UP_MS.
  async _poll(run, put) {
    let failingSince = null, retries = 0;
    while (!run.stop.signal.aborted) {
      let response, body = null;
      try {
        response = await fetch(this._url("next", run.client), { cache: "no-store", signal: run.stop.signal });
        if (response.status >= 500) throw fedError("the federation's next task", response, await response.text());
        if (response.status === 200) body = new Uint8Array(await response.arrayBuffer());
      } catch (err) {
        if (run.stop.signal.aborted) return;
        failingSince ??= performance.now();
        if (performance.now() - failingSince > FED_GIVE_UP_MS) {
          const seconds = FED_GIVE_UP_MS / 1000;
          const lost = `lost the federation server at ${this._base} for over ${seconds} s: ${err.message}`;
          put({ error: new Error(lost) });
          return;
        }
        await sleep(FED_RETRY_MS[Math.min(retries++, FED_RETRY_MS.length - 1)], run.stop.signal);
        continue;
      }
      failingSince = null;
      retries = 0;
      if (response.status === 204) continue;
      if (response.status === 410) {
        put({ gone: true });
        return;
      }
      if (response.status !== 200) {
        put({ error: fedError("the federation's next task", response, await response.text()) });
        return;
      }
      put({ round: Number(response.headers.get("X-Round")), task: response.headers.get("X-Task"),
        config: roundConfig(response.headers.get("X-Config"), this.info), body });
    }
  }

  // 410: the run ended, or the server forgot this page (silent too long?).
  async _ended(run) {
    const status = await this.status().catch(() => null);
    if (status?.phase === "done") return { reason: "done", rounds: run.rounds };
    if (status?.phase === "failed") throw new Error(`the federation failed: ${status.error || "no reason given"}`);
    throw new Error("the federation server no longer knows this page (it was silent too long, or the run was " +
      "restarted): join again");
  }

  async _round(run, { round, task, config, body }, session, onRound) {
    const { feeds, examples } = run;
    const report = (phase, local = null, error = null) => onRound?.({ round, phase, local, error });
    let local, parameters;
    try {
      if (body.length !== 4 * this.info.parameters) {
        throw new Error(`the global parameters have ${body.length} bytes, not ${4 * this.info.parameters}`);
      }
      report("training");
      await session.loadParametersBuffer(body);
      const before = await evaluateOn(session, feeds);
      await session.train(feeds, { epochs: config.epochs, batchSize: config.batchSize,
        learningRate: config.learningRate, ...(config.proximalMu ? { proximalMu: config.proximalMu } : {}),
        validation: 0, keepBest: false, seed: round, signal: run.stop.signal });
      const after = await evaluateOn(session, feeds);
      local = { loss: after.loss, accuracy: after.accuracy, globalAccuracy: before.accuracy, examples };
      const tensor = await session.getContiguousParameters(true);
      parameters = new Uint8Array(tensor.data.buffer, tensor.data.byteOffset, tensor.data.byteLength);
      if (parameters.length !== 4 * this.info.parameters) throw new Error("the trained parameters changed size");
    } catch (err) {
      if (run.stop.signal.aborted) return null;
      report("failed", null, String(err?.message ?? err));
      return null;
    }
    const metrics = metricsHeader({ "num-examples": examples, loss: local.loss, accuracy: local.accuracy,
      "global-accuracy": local.globalAccuracy });
    let answer;
    try {
      answer = await fetch(this._url("result", run.client, task), { method: "POST", body: parameters,
        headers: { "Content-Type": "application/octet-stream", "X-Metrics": metrics }, signal: run.stop.signal });
    } catch (err) {
      if (run.stop.signal.aborted) return null;
      report("failed", local, `the result did not reach the server: ${err.message}`);
      return null;
    }
    if (answer.status === 410) return this._ended(run);
    if (!answer.ok) {
      report("rejected", local, (await answer.text()).trim() || `HTTP ${answer.status}`);
      return null;
    }
    run.rounds++;
    report("sent", local);
    return null;
  }
}

export { ArtifactError, CheckpointError, ComposeError, DataError, DataTypeError, Federation, FeedError, GPUMemoryError,
  GradientNotRegisteredError, GraphError, HandwritingTask, ImageTask, LearningRateError, LinearLRScheduler,
  ModelDecodeError, NoAdapterError, NominalStateError, NonFiniteError, NonFiniteStateError, NonFiniteStepError,
  NpzError, OnnxtrainError, PersonalizeTask, RunError, TabularTask, Tensor, TrainingSession, UnsupportedOpError,
  WebGPUError, describeModel, env, generateArtifacts, isolate, start };
