// onnxruntime-web's Tensor on the CPU, and feeds and fetches as the engine takes and gives them.

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
export class Tensor {
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
export function plainTensor(name, value, what = "feed") {
  const data = value && (value.cpuData ?? value.data);
  if (!value || typeof value.type !== "string" || !ArrayBuffer.isView(data) || !value.dims) {
    throw new TypeError(`${what} '${name}' is not a tensor: give a Tensor, or an object with type, data and dims`);
  }
  return { type: value.type, data, dims: Array.from(value.dims, Number) };
}

export function tensorOf({ type, dims, data }) {
  const Array_ = ARRAYS[type];
  return new Tensor(type, new Array_(data.buffer, data.byteOffset, data.byteLength / Array_.BYTES_PER_ELEMENT), dims);
}

export function feedsOf(feeds, what = "feed") {
  if (!feeds || typeof feeds !== "object") throw new TypeError(`${what}s must be an object of input name -> Tensor`);
  return Object.fromEntries(Object.entries(feeds).map(([name, value]) => [name, plainTensor(name, value, what)]));
}

// Feeds as feedsOf gives them, each one's data copied into a buffer of its own, and those buffers: a request moves
// them to the engine (a transfer costs nothing; cloning the caller's arrays, which stay theirs, cost more).
export function movedFeeds(feeds, what = "feed") {
  const plain = feedsOf(feeds, what);
  const transfer = [];
  for (const tensor of Object.values(plain)) {
    tensor.data = tensor.data.slice();
    transfer.push(tensor.data.buffer);
  }
  return [plain, transfer];
}

// onnxruntime-web's fetches: a list of output names, an object whose keys are output names, or run options.
export function fetchesOf(fetchesOrOptions, outputNames) {
  if (Array.isArray(fetchesOrOptions)) return fetchesOrOptions.map(String);
  if (fetchesOrOptions && typeof fetchesOrOptions === "object") {
    const keys = Object.keys(fetchesOrOptions);
    if (keys.length && keys.every((k) => outputNames.includes(k))) return keys;
  }
  return null;
}

export function tensorsOf(result) {
  return Object.fromEntries(Object.entries(result).map(([name, t]) => [name, tensorOf(t)]));
}
