// The engine: one module worker (engine.mjs, next to the library) that holds every session by handle, started
// with the first session or task, and the requests to it.
import { OnnxtrainError, engineError } from "./errors.mjs";
import { FILES } from "./files.mjs";

// onnxruntime-web's settings, accepted so that code written for it runs.  onnxtrain reads env.wasm.wasmPaths: where
// the library's files are served (a folder's URL, or a map of a file's path in its folder to its URL), for a
// bundle that did not copy them (esbuild's); relative URLs resolve against the page; and env.wasm.numThreads, the
// kernels' threads, read when the engine starts.  The rest is ignored.
export const env = {
  wasm: { numThreads: 0, simd: true, proxy: false, initTimeout: 0, wasmPaths: undefined, trace: false },
  webgl: {}, webgpu: {}, logLevel: "warning", debug: false, versions: {},
};

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

export function connect(onProgress, tasks = []) {
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
  connection.call = (method, handle = null, args = [], transfer = []) => new Promise((resolve, reject) => {
    const id = nextId++;
    pending.set(id, { resolve, reject });
    worker.then((w) => w.postMessage({ id, method, handle, args }, transfer), (err) => {
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

// A session's or task's call of the engine, refused once release() was called; release() twice resolves.
export function callOf(owner, what, method, args, transfer = []) {
  if (owner._releasing) {
    const name = method.replace(/_([a-z])/g, (_, c) => c.toUpperCase());
    return Promise.reject(new OnnxtrainError(`this ${what} was released: ${name}() cannot run; make a new one`,
      { name: "ValueError", code: "VALUE", details: new Error().stack }));  // as the engine answers a lost handle
  }
  return owner._engine.call(method, owner._handle, args, transfer);
}

export function releaseOf(owner) {
  owner._releasing ??= owner._engine.call("release", owner._handle, []).catch((err) => {
    owner._releasing = null;
    throw err;
  });
  return owner._releasing.then(() => {});
}

// Start the engine now rather than with the first session or task: resolves to what it runs (numpy's and
// Python's versions, the SIMD kernels in use or null, how Python started: "restored" from this browser's memory
// snapshot, "made" one, or "plain"; timings in ms).  onProgress({phase, file, loaded, total, cached}) as it goes:
// phase "download" for each file's bytes (cached: from this browser's cache), then "python", "imports",
// "kernels" and "ready".  tasks: the kinds of task the page makes ("tabular", "images", "handwriting",
// "personalize", "text": onnxtrain.web.task_kinds's), whose code the start then imports too (into this browser's memory snapshot, so that a
// later visit's first task of a kind imports nothing); only the start that starts the engine takes them.
export async function start({ onProgress, tasks } = {}) { return connect(onProgress, tasks).ready; }

// One request to the engine by its method name: internal, exported only in the test site (build.py's
// add_test_hooks), whose hooks send their own requests with it.
export function _engineCall(method, ...args) { return connect().call(method, null, args); }
