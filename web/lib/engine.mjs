// onnxtrain's engine: a module worker holding Pyodide, numpy, the onnxtrain wheel and every session by handle
// (onnxtrain.web.sessions).  The page's first message, {init: {files, cache, tasks}}, says where the library's files
// are and which tasks' code the start imports (start.mjs); without it they load from beside this file.  build.py
// bundles this module and what it imports into one file.  One request shape for everything: {id, method, handle, args}; the reply is {id, ok: true, result} or
// {id, ok: false, error: {name, code, message, details}} (onnxtrain.web.errors: the exception's class name, a
// stable code, its one-line message and the traceback); {progress} messages report the start.  A failed request
// leaves its session as it was.
import { registerHooks } from "./engine_hooks.mjs";
import { FastSteps } from "./fast_steps.mjs";
import { snapshotSaved, startPython } from "./start.mjs";
import { forPython as webgpu } from "./webgpu.mjs";

let py = null;
let bridge = null;
let registry = null;
let errors = null;
let call = null;
let fast = null;

// Python from a memory snapshot of an earlier visit where the browser has one (start.mjs), then the registry.
async function start(init) {
  const progress = (record) => self.postMessage({ progress: record });
  const started = await startPython({ ...init, progress });
  py = started.py;
  bridge = py.pyimport("onnxtrain.web.bridge");
  registry = py.pyimport("onnxtrain.web.sessions").Registry();
  errors = py.pyimport("onnxtrain.web.errors");
  // The WebGPU host (webgpu.mjs) as a Python module.  Python waits for the GPU with run_sync, which needs the
  // request's Python entered through callPromising (JSPI); requests then run one at a time (below).
  py.registerJsModule("_onnxtrain_webgpu", webgpu);
  call = py._module.jspiSupported ? (...args) => errors.answer.callPromising(registry, ...args)
    : (...args) => errors.answer(registry, ...args);
  fast = started.kernels ? new FastSteps(py._module, `/lib/${started.kernels}`, started.pool) : null;
  return { kernels: started.kernels, threads: started.threads, threadsNote: started.threadsNote,
    start: started.start, timings: started.timings,
    numpy: py.runPython("import numpy; numpy.__version__"), python: py.runPython("import sys; sys.version"),
    milliseconds: started.timings.kernels };
}
let ready = null;
const begin = (init) => {
  ready ??= start(init);
  ready.catch(() => {});
};

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

// A Python value as plain values (fromPython), the proxy destroyed.
function toJs(proxy) {
  return fromPython(proxy, []);
}

// An error thrown in the engine as the reply's {name, code, message, details}: a Python exception raised outside
// errors.answer (converting a request's arguments) from Pyodide's text, one of JavaScript with the code "ENGINE".
function errorOf(err) {
  if (errors && err && typeof err.type === "string") {
    try { return toJs(errors.from_text(err.type, String(err.message))); } catch { /* Python is gone: as below */ }
  }
  const message = String(err?.message ?? err).split(/\s+/).join(" ").trim();
  return { name: typeof err?.name === "string" ? err.name : "Error", code: "ENGINE",
    message: message.length > 300 ? `${message.slice(0, 299)}…` : message, details: String(err?.stack ?? message) };
}

// Requests that the engine answers itself: none in the library; the test site's engine_hooks.mjs adds its own.
const hooks = {};
registerHooks(hooks, { python: () => py, snapshotSaved, fastSteps: () => fast });

// Whether a request Python answered was a train or eval step, after which the engine may run the session's next.
const STEPS = new Set(["run_train_step", "run_eval_step"]);
const stepRequest = (method, args) => STEPS.has(method) || (method === "deferred_then" && STEPS.has(args[1]));

// One request at a time: a request waiting for the GPU must not let another one into Python meanwhile.
let turn = Promise.resolve();
self.onmessage = (event) => {
  if (event.data?.init) {
    self.postMessage({ running: true });
    begin(event.data.init);
    return;
  }
  begin({});
  turn = turn.then(() => answer(event));
};

async function answer(event) {
  let { id, method, handle = null, args = [] } = event.data;
  const made = [];
  let list = null;
  try {
    const info = await ready;
    let result = info;
    if (hooks[method]) {
      result = await hooks[method](...args);
    } else if (method !== "ready") {
      if (fast && handle !== null) {
        const found = fast.answer(method, handle, args);
        if (found.result) {
          const transfer = Object.values(found.result).map((t) => t.data.buffer);
          self.postMessage({ id, ok: true, result: found.result }, transfer);
          return;
        }
        [method, args] = found.python;
        fast.forget(handle);
      }
      list = py.toPy(toPython(args, made));
      const answered = await call(method, handle, list);
      const [ok, value] = [answered.get(0), answered.get(1)];
      answered.destroy();
      if (!ok) {
        self.postMessage({ id, ok: false, error: toJs(value) });
        return;
      }
      const transfer = [];
      result = fromPython(value, transfer);
      if (fast && stepRequest(method, args)) fast.describe(handle, registry.fast_step(handle));
      self.postMessage({ id, ok: true, result }, transfer);
      return;
    }
    self.postMessage({ id, ok: true, result });
  } catch (err) {
    self.postMessage({ id, ok: false, error: errorOf(err) });
  } finally {
    if (list) list.destroy();
    made.forEach((a) => a.destroy());
  }
}
