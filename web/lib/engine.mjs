// onnxtrain's engine: a module worker holding Pyodide, numpy, the onnxtrain wheel and every session by handle
// (onnxtrain.web.sessions).  Everything loads from this folder, relative to this file, so the folder works at any
// path of any static host.  One request shape for everything: {id, method, handle, args}; the reply is
// {id, ok: true, result} or {id, ok: false, error}.  A failed request leaves its session as it was.
import { loadPyodide } from "./pyodide/pyodide.mjs";

const HERE = new URL("./", import.meta.url);
let py = null;
let bridge = null;
let registry = null;

async function fetchBytes(path) {
  const url = new URL(path, HERE);
  const response = await fetch(url);
  if (!response.ok) throw new Error(`${url}: HTTP ${response.status}`);
  return new Uint8Array(await response.arrayBuffer());
}

// onnxtrain's SIMD kernels (a wasm side module): the relaxed-SIMD build where the engine compiles it, else plain
// SIMD128; without either, numpy's kernels stay in use.
const KERNELS = ["onnxtrain_kernels_relaxed.so", "onnxtrain_kernels.so"];
async function loadKernels(files) {
  for (const [i, bytes] of (await files).entries()) {
    if (!bytes) continue;
    const path = `/lib/${KERNELS[i]}`;
    try {
      py.FS.writeFile(path, bytes);
      await py._module.loadDynamicLibrary(path, { loadAsync: true, global: false, nodelete: true, fs: py.FS });
      py.runPython(`from onnxtrain.ops import simd; simd.load(${JSON.stringify(path)})`);
      return KERNELS[i];
    } catch (err) {
      console.warn(`${KERNELS[i]} did not load: ${err.message || err}`);
    }
  }
  return null;
}

// Pyodide with numpy, then the flatbuffers and onnxtrain wheels and their compiled modules, unpacked by Python.
async function start() {
  const t0 = performance.now();
  const names = fetch(new URL("wheels/wheels.json", HERE)).then((r) => r.json());
  const wheels = names.then((n) => Promise.all([n.flatbuffers, n.onnxtrain].map((w) => fetchBytes(`wheels/${w}`))));
  const pycache = fetchBytes("wheels/site-packages.pyc.zip").catch(() => null);
  const kernels = Promise.all(KERNELS.map((name) => fetchBytes(`kernels/${name}`).catch(() => null)));
  wheels.catch(() => {});
  py = await loadPyodide({ indexURL: new URL("pyodide/", HERE).href,
    stdLibURL: new URL("wheels/python_stdlib.pyc.zip", HERE).href, packages: ["numpy"] });
  const sitePackages = py.runPython("import sysconfig; sysconfig.get_paths()['purelib']");
  for (const wheel of await wheels) py.unpackArchive(wheel, "wheel", { extractDir: sitePackages });
  if (await pycache) py.unpackArchive(await pycache, "zip", { extractDir: sitePackages });
  bridge = py.pyimport("onnxtrain.web.bridge");
  registry = py.pyimport("onnxtrain.web.sessions").Registry();
  const kernel = await loadKernels(kernels);
  return { kernels: kernel, numpy: py.runPython("import numpy; numpy.__version__"),
    milliseconds: performance.now() - t0 };
}
const ready = start();
ready.catch(() => {});

const isTensor = (v) => v && typeof v === "object" && typeof v.type === "string" && ArrayBuffer.isView(v.data)
  && Array.isArray(v.dims);

// A numpy array holding a copy of a tensor's data: allocated in Python, filled with one copy into Pyodide's memory.
function pyArray({ type, data, dims }) {
  const bytes = new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
  const made = bridge.new_array(dims, type, bytes.length);
  const array = made.get(0);
  py._module.HEAPU8.set(bytes, made.get(1));
  made.destroy();
  return array;
}

// Request arguments as Python values: tensors become numpy arrays, objects dicts, arrays lists, bytes stay bytes.
function toPython(value, made) {
  if (isTensor(value)) {
    const array = pyArray(value);
    made.push(array);
    return array;
  }
  if (Array.isArray(value)) return value.map((v) => toPython(v, made));
  if (value && typeof value === "object" && !ArrayBuffer.isView(value) && !(value instanceof ArrayBuffer)) {
    return new Map(Object.entries(value).map(([k, v]) => [k, toPython(v, made)]));
  }
  return value;
}

// A Python result as plain values; bytes become Uint8Arrays of their own (copied out of Pyodide's memory), and a
// None inside a dict or list null (as JSON has it; Pyodide gives undefined).
function fromPython(result, transfer) {
  if (!result || typeof result.toJs !== "function") return result;
  const value = result.toJs({ dict_converter: Object.fromEntries });
  result.destroy();
  const own = (v) => {
    if (v === undefined) return null;
    if (v instanceof Uint8Array) {
      const copy = v.slice();
      transfer.push(copy.buffer);
      return copy;
    }
    if (Array.isArray(v)) return v.map(own);
    if (v && typeof v === "object") return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, own(x)]));
    return v;
  };
  return own(value);
}

// A Python exception's own message (its last line, without the traceback and type).
function messageOf(err) {
  const text = String(err && err.message ? err.message : err);
  if (!err || !err.type) return text;
  const at = text.lastIndexOf(`\n${err.type}: `);
  return at < 0 ? text : text.slice(at + err.type.length + 3).trim();
}

self.onmessage = async (event) => {
  const { id, method, handle = null, args = [] } = event.data;
  const made = [];
  let list = null;
  try {
    const info = await ready;
    let result = info;
    if (method !== "ready") {
      list = py.toPy(toPython(args, made));
      const transfer = [];
      result = fromPython(registry.call(method, handle, list), transfer);
      self.postMessage({ id, ok: true, result }, transfer);
      return;
    }
    self.postMessage({ id, ok: true, result });
  } catch (err) {
    self.postMessage({ id, ok: false, error: messageOf(err) });
  } finally {
    if (list) list.destroy();
    made.forEach((a) => a.destroy());
  }
};
