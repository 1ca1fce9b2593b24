// onnxtrain: on-device training in the page with onnxruntime-web 1.19.2's training API (TrainingSession, Tensor,
// env), plus exportModelForInferencing, checkpoints and the learning rate.  The work happens in one module worker
// (engine.mjs, next to this file) that holds every session by handle; this file only converts and forwards.
// build.py also writes onnxtrain.js from this file, a classic script that defines globalThis.onnxtrain.
const LIBRARY_URL = import.meta.url;

// onnxruntime-web's settings, accepted so that code written for it runs; onnxtrain needs none of them.
const env = {
  wasm: { numThreads: 1, simd: true, proxy: false, initTimeout: 0, wasmPaths: undefined, trace: false },
  webgl: {}, webgpu: {}, logLevel: "warning", debug: false, versions: {},
};

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
    if (!Array_) throw new TypeError(`unsupported tensor type ${JSON.stringify(type)}: use one of ${Object.keys(ARRAYS).join(", ")}`);
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
function plainTensor(name, value) {
  const data = value && (value.cpuData ?? value.data);
  if (!value || typeof value.type !== "string" || !ArrayBuffer.isView(data) || !value.dims) {
    throw new TypeError(`feed '${name}' is not a tensor: give a Tensor, or an object with type, data and dims`);
  }
  return { type: value.type, data, dims: Array.from(value.dims, Number) };
}

function tensorOf({ type, dims, data }) {
  const Array_ = ARRAYS[type];
  return new Tensor(type, new Array_(data.buffer, data.byteOffset, data.byteLength / Array_.BYTES_PER_ELEMENT), dims);
}

// The one worker, started with the first session; requests by id.
let engine = null;

function connect() {
  if (engine) return engine;
  const worker = new Worker(new URL("./engine.mjs", LIBRARY_URL), { type: "module" });
  const pending = new Map();
  let nextId = 1;
  worker.onmessage = ({ data }) => {
    const entry = pending.get(data.id);
    if (!entry) return;
    pending.delete(data.id);
    if (data.ok) entry.resolve(data.result); else entry.reject(new Error(data.error));
  };
  worker.onerror = (event) => {
    const error = new Error(`onnxtrain's engine failed to start: ${event.message || "see the console"}`);
    pending.forEach((entry) => entry.reject(error));
    pending.clear();
  };
  const call = (method, handle = null, args = []) => new Promise((resolve, reject) => {
    const id = nextId++;
    pending.set(id, { resolve, reject });
    worker.postMessage({ id, method, handle, args });
  });
  engine = { call, ready: call("ready") };
  return engine;
}

// A model or checkpoint given as a URL (relative to the page), an ArrayBuffer or a Uint8Array.
async function bytesOf(source, what) {
  if (source === undefined || source === null || source === "") return null;
  if (source instanceof Uint8Array) return source;
  if (source instanceof ArrayBuffer) return new Uint8Array(source);
  if (ArrayBuffer.isView(source)) return new Uint8Array(source.buffer, source.byteOffset, source.byteLength);
  if (typeof source === "string" || source instanceof URL) {
    const response = await fetch(source);
    if (!response.ok) throw new Error(`${what} ${source}: HTTP ${response.status}`);
    return new Uint8Array(await response.arrayBuffer());
  }
  throw new TypeError(`${what} must be a URL, an ArrayBuffer or a Uint8Array`);
}

function feedsOf(feeds) {
  if (!feeds || typeof feeds !== "object") throw new TypeError("feeds must be an object of input name -> Tensor");
  return Object.fromEntries(Object.entries(feeds).map(([name, value]) => [name, plainTensor(name, value)]));
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

class TrainingSession {
  constructor(engine_, info) {
    this._engine = engine_;
    this._handle = info.handle;
    this.trainingInputNames = Object.freeze(info.trainingInputNames);
    this.trainingOutputNames = Object.freeze(info.trainingOutputNames);
    this.evalInputNames = Object.freeze(info.evalInputNames);
    this.evalOutputNames = Object.freeze(info.evalOutputNames);
  }

  static async create({ checkpointState, trainModel, evalModel, optimizerModel } = {}, _sessionOptions = {}) {
    if (!checkpointState || !trainModel) throw new TypeError("TrainingSession.create needs checkpointState and trainModel");
    const connection = connect();
    const bytes = await Promise.all([[checkpointState, "checkpointState"], [trainModel, "trainModel"],
      [evalModel, "evalModel"], [optimizerModel, "optimizerModel"]].map(([source, what]) => bytesOf(source, what)));
    await connection.ready;
    return new TrainingSession(connection, await connection.call("create", null, bytes));
  }

  _call(method, ...args) { return this._engine.call(method, this._handle, args); }

  async runTrainStep(feeds, fetchesOrOptions, _options) {
    return tensorsOf(await this._call("run_train_step", feedsOf(feeds), fetchesOf(fetchesOrOptions, this.trainingOutputNames)));
  }

  async runEvalStep(feeds, fetchesOrOptions, _options) {
    return tensorsOf(await this._call("run_eval_step", feedsOf(feeds), fetchesOf(fetchesOrOptions, this.evalOutputNames)));
  }

  async runOptimizerStep(_options) { await this._call("run_optimizer_step"); }

  async lazyResetGrad() { await this._call("lazy_reset_grad"); }

  async getParametersSize(trainableOnly = true) { return this._call("get_parameters_size", Boolean(trainableOnly)); }

  async getContiguousParameters(trainableOnly = true) {
    return tensorOf(await this._call("get_contiguous_parameters", Boolean(trainableOnly)));
  }

  async loadParametersBuffer(buffer, trainableOnly = true) {
    await this._call("load_parameters_buffer", await bytesOf(buffer, "the parameter buffer"), Boolean(trainableOnly));
  }

  // ---- beyond onnxruntime-web -----------------------------------------------------------------------------
  async exportModelForInferencing(outputNames) {
    return this._call("export_model_for_inferencing", Array.from(outputNames, String));
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

  async release() { await this._call("release"); }
}

export { Tensor, TrainingSession, env };
