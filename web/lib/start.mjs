// Starting Python for the library's engine: Pyodide, numpy, the onnxtrain wheel and its SIMD kernels, from the
// library's files (their URLs come from the page: onnxtrain.mjs's FILES, or env.wasm.wasmPaths; a file the page
// did not list is looked for beside this module), from a memory snapshot of an earlier visit where the browser has
// one.  startPython({files, cache, progress, numThreads, tasks}) resolves to {py, timings, kernels, start,
// threads, threadsNote}; snapshotSaved() once the snapshot this visit made is stored.
import { loadPyodide, version as pyodideVersion } from "./pyodide/pyodide.mjs";
import { defaultThreads, startPool } from "./threads.mjs";

// What every start imports before it is ready (and so what a snapshot holds; build.py's START_IMPORTS).
const IMPORTS = "import numpy, onnxtrain.web, onnxtrain.web.sessions";
let py = null;
let tasks = []; // the task kinds whose modules the start imports too (start()'s tasks), sorted, each once

// The tasks' modules imported (onnxtrain.web.task_sessions.import_tasks).  Python's refusal of the list (an unknown
// kind) fails the start with its message rather than a start without a snapshot.
class TasksError extends TypeError {}
function importTasks(timings, t0) {
  if (!tasks.length) return;
  const module = py.pyimport("onnxtrain.web.task_sessions");
  const kinds = py.toPy(tasks);
  try {
    module.import_tasks(kinds);
  } catch (err) {
    if (typeof err.type !== "string") throw err;
    const text = String(err.message).trim();
    const at = text.lastIndexOf(`${err.type}: `);
    throw new TasksError(at < 0 ? text : text.slice(at + err.type.length + 2));
  } finally {
    kinds.destroy();
    module.destroy();
  }
  timings.tasks = performance.now() - t0;
}

// ---- The library's files: each fetched once, kept in this browser's Cache Storage by its sha256 ---------------
let FILES = {}; // path -> {url, bytes, sha256}
let report = () => {}; // progress to the page
let mark = () => {}; // mark(name): the start's timings[name], ms since it began (the first time only)
let fileCache = Promise.resolve(null);
const fetchedFiles = new Map(); // path -> Promise<Uint8Array>
const CACHE_NAME = "onnxtrain-files";
// Pyodide fetches its own files from its indexURL: requests under ROOT are answered from the library's files.
const ROOT = new URL("/.onnxtrain-library/", self.location.href).href;
const INDEX_URL = `${ROOT}pyodide/`;

const hex = (buffer) => Array.from(new Uint8Array(buffer), (b) => b.toString(16).padStart(2, "0")).join("");
const urlOf = (path) => FILES[path]?.url ?? new URL(`./${path}`, import.meta.url).href;
const cacheKey = (path) => {
  const url = new URL(urlOf(path));
  url.searchParams.set("onnxtrain-sha256", FILES[path].sha256);
  return url.href;
};

async function download(path) {
  const url = urlOf(path);
  let response;
  try {
    response = await fetch(url);
  } catch (err) {
    throw new Error(`${url} did not load (${err.message}): it is the library's ${path}; serve the library's files `
      + "there, or say where they are with env.wasm.wasmPaths");
  }
  if (!response.ok) {
    throw new Error(`${url}: HTTP ${response.status}: it is the library's ${path}; serve the library's files there, `
      + "or say where they are with env.wasm.wasmPaths");
  }
  const total = FILES[path]?.bytes || Number(response.headers.get("content-length")) || null;
  const reader = response.body.getReader();
  const chunks = [];
  let size = 0;
  report({ phase: "download", file: path, loaded: 0, total, cached: false });
  for (let read = await reader.read(); !read.done; read = await reader.read()) {
    chunks.push(read.value);
    size += read.value.length;
    report({ phase: "download", file: path, loaded: size, total, cached: false });
  }
  const bytes = new Uint8Array(size);
  chunks.reduce((at, chunk) => (bytes.set(chunk, at), at + chunk.length), 0);
  return bytes;
}

const typeOf = (path) => (path.endsWith(".wasm") ? "application/wasm" : "application/octet-stream");

// The file's response in this browser's cache, if there is one.
async function cached(path) {
  const cache = FILES[path]?.sha256 ? await fileCache : null;
  return cache && await cache.match(cacheKey(path)).catch(() => undefined);
}

async function loadFile(path) {
  const sha256 = FILES[path]?.sha256;
  const hit = await cached(path);
  if (hit) {
    const bytes = new Uint8Array(await hit.arrayBuffer());
    report({ phase: "download", file: path, loaded: bytes.length, total: bytes.length, cached: true });
    return bytes;
  }
  const bytes = await download(path);
  if (sha256 && hex(await crypto.subtle.digest("SHA-256", bytes)) !== sha256) {
    throw new Error(`${urlOf(path)} is not the library's ${path} of this version (its sha256 differs): serve this `
      + "version's files there");
  }
  const cache = sha256 ? await fileCache : null;
  cache?.put(cacheKey(path), new Response(bytes, { headers: { "Content-Type": typeOf(path) } })).catch(() => {});
  return bytes;
}

// A file's bytes, fetched once.
function fileBytes(path) {
  if (!fetchedFiles.has(path)) {
    const bytes = loadFile(path);
    bytes.catch(() => fetchedFiles.delete(path));
    fetchedFiles.set(path, bytes);
  }
  return fetchedFiles.get(path);
}

// Drop what earlier versions left in the cache.
async function pruneCache() {
  const cache = await fileCache;
  if (!cache) return;
  const keep = new Set(Object.keys(FILES).filter((path) => FILES[path].sha256).map(cacheKey));
  for (const request of await cache.keys()) if (!keep.has(request.url)) await cache.delete(request);
}

const realFetch = globalThis.fetch.bind(globalThis);
globalThis.fetch = (input, init) => {
  const url = typeof input === "string" ? input : input instanceof URL ? input.href : input?.url;
  if (!url?.startsWith(ROOT)) return realFetch(input, init);
  const path = url.slice(ROOT.length).split(/[?#]/)[0];
  const bytes = () => fileBytes(path).then((b) => new Response(b, { headers: { "Content-Type": typeOf(path) } }));
  // a file not read yet, from this browser's cache as it is: its body is read only if the caller reads it (Pyodide
  // fetches pyodide.asm.wasm and never reads the response: compileWasm compiles it)
  if (fetchedFiles.has(path)) return bytes();
  return cached(path).then((hit) => hit || bytes());
};

const fetchJson = async (path) => JSON.parse(new TextDecoder().decode(await fileBytes(path)));

// onnxtrain's SIMD kernels (web/kernels), a wasm side module: the build with relaxed SIMD where the engine
// compiles it, else plain SIMD128. Pyodide loads it into its own memory and Python calls it through ctypes
// (onnxtrain.ops.simd); without it every kernel keeps its numpy code.
const KERNELS = ["onnxtrain_kernels_relaxed.so", "onnxtrain_kernels.so"];
async function loadKernels() {
  for (const name of KERNELS) {
    const path = `/lib/${name}`;
    try {
      py.FS.writeFile(path, await fileBytes(`kernels/${name}`));
      await py._module.loadDynamicLibrary(path, { loadAsync: true, global: false, nodelete: true, fs: py.FS });
      py.runPython(`from onnxtrain.ops import simd; simd.load(${JSON.stringify(path)})`);
      return name;
    } catch (err) {
      console.warn(`${name} did not load: ${err.message || err}`);
    }
  }
  console.warn("numpy's kernels stay in use: no SIMD kernel module loaded");
  return null;
}

// The kernel pool (threads.mjs) for `kernels` (the side module in use) at numThreads (onnxruntime-web's setting:
// 0 or undefined picks its default): {threads, threadsNote}, the note saying why there is only one thread where
// more were asked for.
async function loadPool(kernels, numThreads) {
  const asked = numThreads > 0 ? numThreads : defaultThreads(self.navigator?.hardwareConcurrency);
  const one = (why) => {
    if (asked > 1) console.warn(`onnxtrain runs its kernels on 1 thread, not ${asked}: ${why}`);
    return { threads: 1, threadsNote: asked > 1 ? why : null };
  };
  if (asked < 2) return one(null);
  if (!self.crossOriginIsolated) {
    return one("the page is not cross-origin isolated: SharedArrayBuffer needs the headers "
      + "Cross-Origin-Opener-Policy: same-origin and Cross-Origin-Embedder-Policy: require-corp");
  }
  if (!kernels) return one("no SIMD kernel module loaded");
  const name = `onnxtrain_kernels_threads${kernels.includes("relaxed") ? "_relaxed" : ""}.wasm`;
  try {
    const pool = await startPool({ bytes: await fileBytes(`kernels/${name}`), threads: asked,
      workerUrl: urlOf("threads_worker.mjs"), heap: () => py._module });
    py.registerJsModule("_onnxtrain_threads", pool.forPython);
    py.runPython("from onnxtrain.ops import simd; import _onnxtrain_threads; simd.use_pool(_onnxtrain_threads)");
    return { threads: pool.threads, threadsNote: null, pool };
  } catch (err) {
    return one(`the kernel pool did not start (${err.message || err})`);
  }
}

// ---- Start-up from a memory snapshot --------------------------------------------------------------------
// A visit without a snapshot starts Python, imports numpy and onnxtrain.web, then (before the kernel module
// loads) copies Pyodide's wasm memory (`makeMemorySnapshot`) and keeps it in this browser's IndexedDB with the
// files the wheels unpacked to; a later visit puts that memory back (`_loadSnapshot`) instead of starting Python
// and importing.  The snapshot is made in this browser, never shipped; its key (snapshotKey) changes with
// Pyodide, numpy and the site's Python files, and a snapshot with another key is dropped and made again.
// A snapshot holds the wasm memory only, so both paths rebuild what lies outside it identically before Python
// runs: in Pyodide's preRun (after the wasm is instantiated, before the runtime starts or the memory is put
// back) the files go into site-packages and the numpy extension modules that the imports load (PRELOAD) are
// linked in a fixed order, so their memory and function-table slots come out the same (modules that Pyodide's
// loadPackage links once Python runs would be missing from the table after a restore).  What loads later (the
// kernel module, numpy modules imported later) loads afresh on every visit; no snapshot is made if the imports
// linked anything else.  Anything failing falls back to the plain start.
const SNAPSHOT_FORMAT = 1;
const SITE_PACKAGES = "/lib/python3.12/site-packages";
// numpy.random's modules are linked though the start does not import it (onnxtrain makes its generators on first
// use): linked here they compile in parallel with the rest, where its first import would link them one by one.
const PRELOAD = ["_core/_multiarray_umath", "_core/_multiarray_tests", "linalg/_umath_linalg", "random/bit_generator",
  "random/_common", "random/_bounded_integers", "random/_mt19937", "random/_pcg64", "random/_philox",
  "random/_sfc64", "random/_generator", "random/mtrand"]
  .map((name) => `${SITE_PACKAGES}/numpy/${name}.cpython-312-wasm32-emscripten.so`);
// Python compiled by build.py: the standard library as .pyc files, and __pycache__ files for the wheels' modules.
const STDLIB = `${ROOT}wheels/python_stdlib.pyc.zip`;
const PYCACHE = "wheels/site-packages.pyc.zip";
const SNAPSHOTS = (() => { // what the snapshot path needs beyond Pyodide's own needs
  try {
    return new DecompressionStream("deflate-raw") && typeof indexedDB !== "undefined";
  } catch {
    return false;
  }
})();
let saving = null; // the snapshot being stored (after the page is ready)

function snapshotDb(mode, action) {
  return new Promise((resolve, reject) => {
    const open = indexedDB.open("onnxtrain-python", 1);
    open.onupgradeneeded = () => open.result.createObjectStore("snapshot");
    open.onerror = () => reject(open.error);
    open.onsuccess = () => {
      const db = open.result;
      const tx = db.transaction("snapshot", mode);
      const request = action(tx.objectStore("snapshot"));
      tx.oncomplete = () => { db.close(); resolve(request.result); };
      tx.onerror = tx.onabort = () => { db.close(); reject(tx.error); };
    };
  });
}

async function inflate(bytes) {
  const stream = new DecompressionStream("deflate-raw");
  const writer = stream.writable.getWriter();
  writer.write(bytes);
  writer.close();
  const reader = stream.readable.getReader();
  const chunks = [];
  for (let read = await reader.read(); !read.done; read = await reader.read()) chunks.push(read.value);
  if (chunks.length === 1) return chunks[0];
  const out = new Uint8Array(chunks.reduce((n, c) => n + c.length, 0));
  chunks.reduce((offset, c) => (out.set(c, offset), offset + c.length), 0);
  return out;
}

// The files of a wheel (a zip, stored or deflated) as [name, bytes].
async function unzip(bytes) {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let end = bytes.length - 22;
  while (end >= 0 && view.getUint32(end, true) !== 0x06054b50) end--;
  if (end < 0) throw new Error("not a zip file");
  const files = [];
  const decoder = new TextDecoder();
  for (let i = 0, p = view.getUint32(end + 16, true); i < view.getUint16(end + 10, true); i++) {
    if (view.getUint32(p, true) !== 0x02014b50) throw new Error("bad zip directory");
    const method = view.getUint16(p + 10, true);
    const size = view.getUint32(p + 20, true);
    const nameLength = view.getUint16(p + 28, true);
    const name = decoder.decode(bytes.subarray(p + 46, p + 46 + nameLength));
    const local = view.getUint32(p + 42, true);
    const start = local + 30 + view.getUint16(local + 26, true) + view.getUint16(local + 28, true);
    p += 46 + nameLength + view.getUint16(p + 30, true) + view.getUint16(p + 32, true);
    if (name.endsWith("/")) continue;
    if (method !== 0 && method !== 8) throw new Error(`${name}: zip method ${method}`);
    const data = bytes.subarray(start, start + size);
    files.push(method === 0 ? [name, data] : inflate(data).then((inflated) => [name, inflated]));
  }
  return Promise.all(files);
}

// The snapshot's key: its site (Pyodide's version, numpy's hash in Pyodide's lock, wheels.json: the wheels' names
// and "version", build.py's hash of the Python files the worker unpacks; PRELOAD) and the tasks.  No key without a
// "version".  Each list of tasks has a record of its own (recordName); storing one drops those of other sites.
async function snapshotKey() {
  const [names, lock] = await Promise.all(["wheels/wheels.json", "pyodide/pyodide-lock.json"].map(fetchJson));
  const site = names.version && JSON.stringify([SNAPSHOT_FORMAT, pyodideVersion, lock.info, lock.packages.numpy.sha256,
    names, PRELOAD]);
  return { key: site && JSON.stringify([site, tasks]), site, names, lock };
}
const recordName = () => ["python", ...tasks].join(" ");

// numpy's wheel (from Pyodide's folder, checked against its lock), ours and the compiled modules, unpacked.
async function wheelFiles({ names, lock }) {
  const numpy = lock.packages.numpy.file_name;
  const zips = await Promise.all([fileBytes(`pyodide/${numpy}`),
    ...[names.flatbuffers, names.onnxtrain].map((w) => fileBytes(`wheels/${w}`)), fileBytes(PYCACHE)]);
  return (await Promise.all(zips.filter(Boolean).map(unzip))).flat();
}

// Pyodide makes its Emscripten module through globalThis._createPyodideModule (pyodide.asm.js sets it): this
// wraps it to add the preRun step, and to instantiate a pyodide.asm.wasm compiled ahead.
let moduleHooks = null; // { preRun(Module): Promise, wasm: Promise<WebAssembly.Module> | null, fail(err) }
let createModule;
Object.defineProperty(globalThis, "_createPyodideModule", {
  configurable: true,
  set(value) { createModule = value; },
  get() {
    const hooks = moduleHooks;
    if (!createModule || !hooks) return createModule;
    return (settings) => {
      if (hooks.wasm) {
        settings.instantiateWasm = (imports, done) => {
          hooks.wasm.then((module) => WebAssembly.instantiate(module, imports)
            .then((instance) => done(instance, module))).catch(hooks.fail);
          return {};
        };
      }
      // Emscripten runs the preRun list from its end: this step runs after Pyodide's own (the standard library and
      // an empty site-packages are then in place).
      // A failure leaves the module waiting for this step for good (it is dropped) and fails the start at once.
      settings.preRun = [(Module) => {
        Module.addRunDependency("onnxtrain");
        hooks.preRun(Module).then(() => Module.removeRunDependency("onnxtrain"), hooks.fail);
      }, ...settings.preRun];
      return createModule(settings);
    };
  },
});
// Pyodide's Emscripten module, imported from its URL (Pyodide then skips loading it).
let pyodideScript = null;
function pyodideModule() {
  pyodideScript ??= import(urlOf("pyodide/pyodide.asm.js"));
  pyodideScript.then(() => mark("script"), () => {});
  return pyodideScript;
}

// The preRun step: the files into site-packages, then PRELOAD linked one after another (compiled ahead).
function linkWheels(files) {
  const compiled = files.then((list) => new Map(list.filter(([name]) => PRELOAD.includes(`${SITE_PACKAGES}/${name}`))
    .map(([name, bytes]) => [`${SITE_PACKAGES}/${name}`, WebAssembly.compile(bytes)])));
  compiled.catch(() => {});
  return async (Module) => {
    for (const [name, bytes] of await files) {
      const path = `${SITE_PACKAGES}/${name}`;
      Module.FS.mkdirTree(path.slice(0, path.lastIndexOf("/")));
      Module.FS.writeFile(path, bytes, { canOwn: true });
    }
    const modules = await compiled;
    for (const path of PRELOAD) {
      const flags = { loadAsync: true, nodelete: true, allowUndefined: true, global: false };
      if (!modules.has(path)) throw new Error(`${path} is not in numpy's wheel`);
      // what Module.loadDynamicLibrary(path, flags) does, from the compiled module
      const dso = Module.newDSO(path, undefined, "loading");
      dso.global = false;
      dso.exports = await Module.loadWebAssemblyModule(await modules.get(path), flags, path, {});
    }
    Module.reportUndefinedSymbols();
    mark("linked");
  };
}

// pyodide.asm.wasm compiled here: Pyodide's own instantiation only logs a failure, and its start then never ends.
// From this browser's cache it compiles from the cached response itself, which has a URL that the browser can
// keep the compiled code by for the next visit (a response made of bytes has none).  Entries stored before had no
// Content-Type, which compileStreaming needs: those compile from their bytes.
function compileWasm() {
  const path = "pyodide/pyodide.asm.wasm";
  const fromBytes = () => WebAssembly.compileStreaming(fetch(`${ROOT}${path}`));
  const wasm = cached(path).then((hit) => {
    if (hit?.headers.get("Content-Type") !== typeOf(path)) return fromBytes();
    report({ phase: "download", file: path, loaded: FILES[path].bytes, total: FILES[path].bytes, cached: true });
    return WebAssembly.compileStreaming(hit).catch(fromBytes);
  });
  wasm.then(() => mark("compiled"), () => {});
  return wasm;
}

// loadPyodide with the hooks above; it fails as soon as a hook does.
async function loadPyodideWith(hooks, options) {
  const failed = new Promise((resolve, reject) => { hooks.fail = reject; });
  await pyodideModule();
  moduleHooks = hooks;
  try {
    return await Promise.race([loadPyodide({ indexURL: INDEX_URL, stdLibURL: STDLIB, ...options }), failed]);
  } finally {
    moduleHooks = null;
  }
}

async function restoreSnapshot(stored, key, timings, t0) {
  const heap = Promise.all([stored.heap.arrayBuffer(), key]).then(([bytes, { key }]) => {
    if (!key || key !== stored.key) throw new Error("the site changed since the snapshot was made");
    mark("heapRead");
    return bytes;
  });
  const files = stored.files.arrayBuffer().then((buffer) =>
    stored.index.map(([name, offset, length]) => [name, new Uint8Array(buffer, offset, length)]));
  files.catch(() => {});
  // pyodide.asm.wasm compiles meanwhile (Pyodide would compile it only once the snapshot is read)
  py = await loadPyodideWith({ preRun: linkWheels(files), wasm: compileWasm() }, { _loadSnapshot: heap });
  timings.pyodide = performance.now() - t0;
  // After a restore Python's handle on Pyodide's loadedPackages is a new object, and the random generators made
  // at import (the standard library's, numpy's global one if imported) are where the snapshot left them: fresh
  // entropy for them, as a start gives.  onnxtrain makes its generators on first use, never at import.
  py.runPython(`import sys, numpy, pyodide_js, pyodide._package_loader
pyodide._package_loader.loadedPackages = pyodide_js.loadedPackages
for name in ("random", "numpy.random"):
    if name in sys.modules:
        sys.modules[name].seed()
assert int(numpy.arange(4).sum()) == 6`);
  Object.assign(py.loadedPackages, stored.loaded);
  timings.numpy = performance.now() - t0;
  report({ phase: "imports" });
  py.runPython(IMPORTS);
  timings.wheel = performance.now() - t0;
}

async function makeSnapshot(key, timings, t0) {
  if (!(await key).key) throw new Error("wheels.json has no version");
  const files = key.then(wheelFiles);
  files.catch(() => {});
  py = await loadPyodideWith({ preRun: linkWheels(files), wasm: compileWasm() }, {});
  timings.pyodide = performance.now() - t0;
  py.runPython("import numpy");
  timings.numpy = performance.now() - t0;
  report({ phase: "imports" });
  py.runPython(IMPORTS);
  timings.wheel = performance.now() - t0;
  importTasks(timings, t0);
  const extra = Object.keys(py._module.LDSO.loadedLibsByName)
    .filter((name) => name !== "__main__" && !PRELOAD.includes(name));
  if (extra.length) {
    console.warn(`no Python snapshot: the imports loaded ${extra.join(", ")}, which PRELOAD lacks`);
    return;
  }
  // Pyodide checks that the JS objects Python holds are those of a fresh start; one is the loadedPackages object,
  // which must then be empty (Pyodide filled it in from the wheels' dist-info).  Started with `_makeSnapshot`,
  // Pyodide would hand Python globalThis wrapped in proxies that record paths (for JS objects Python holds,
  // which it has none of here), and JS functions called through them throw "Illegal invocation" (fetch, for
  // micropip): so the option is set just for the copy.
  const loaded = { ...py.loadedPackages };
  let heap;
  try {
    for (const name of Object.keys(loaded)) delete py.loadedPackages[name];
    py._api.config._makeSnapshot = true;
    heap = py.makeMemorySnapshot();
  } catch (err) {
    console.warn(`no Python snapshot: ${err.message || err}`);
    return;
  } finally {
    py._api.config._makeSnapshot = false;
    Object.assign(py.loadedPackages, loaded);
  }
  timings.snapshot = performance.now() - t0;
  saving = (async () => {
    await new Promise((resolve) => setTimeout(resolve, 0)); // after the init reply
    const list = await files;
    let offset = 0;
    const index = list.map(([name, bytes]) => [name, (offset += bytes.length) - bytes.length, bytes.length]);
    const { key: made, site } = await key;
    const record = { key: made, site, loaded, index, heap: new Blob([heap]),
      files: new Blob(list.map(([, bytes]) => bytes)) };
    await snapshotDb("readwrite", (store) => {
      store.put(record, recordName());
      const cursor = store.openCursor();
      cursor.onsuccess = () => {
        if (!cursor.result) return;
        if (cursor.result.value.site !== site) cursor.result.delete();
        cursor.result.continue();
      };
      return cursor;
    });
  })().catch((err) => console.warn(`the Python snapshot was not stored: ${err.message || err}`));
}

// Without a snapshot: Pyodide's numpy package and the wheels unpacked by Python.
async function startPlain(timings, t0) {
  const wheels = fetchJson("wheels/wheels.json")
    .then((names) => Promise.all([names.flatbuffers, names.onnxtrain].map((w) => fileBytes(`wheels/${w}`))));
  const pycache = fileBytes(PYCACHE);
  wheels.catch(() => {});
  pycache.catch(() => {});
  py = await loadPyodideWith({ preRun: async () => {}, wasm: compileWasm() }, { packages: ["numpy"] });
  timings.pyodide = performance.now() - t0;
  const sitePackages = py.runPython("import sysconfig; sysconfig.get_paths()['purelib']");
  for (const wheel of await wheels) py.unpackArchive(wheel, "wheel", { extractDir: sitePackages });
  if (await pycache) py.unpackArchive(await pycache, "zip", { extractDir: sitePackages });
  py.runPython("import numpy");
  timings.numpy = performance.now() - t0;
  report({ phase: "imports" });
  py.runPython(IMPORTS);
  timings.wheel = performance.now() - t0;
  importTasks(timings, t0);
}

// The start from this browser's snapshot of an earlier visit, or one that makes the snapshot: "restored" or "made".
async function startWithSnapshot(timings, t0) {
  const key = snapshotKey();
  key.catch(() => {});
  // failing (no IndexedDB): the plain start
  const stored = await snapshotDb("readonly", (store) => store.get(recordName()));
  if (stored) {
    try {
      await restoreSnapshot(stored, key, timings, t0);
      return "restored";
    } catch (err) {
      console.warn(`the Python snapshot was not used: ${err.message || err}`);
      py = null;
      await snapshotDb("readwrite", (store) => store.delete(recordName())).catch(() => {});
    }
  }
  await makeSnapshot(key, timings, t0);
  return "made";
}


// Everything is fetched at once, while Pyodide starts: from a snapshot when the browser has one, else making one;
// the plain start if that fails.  The kernels load last, on every start (they are outside the snapshot).
export async function startPython({ files = {}, cache = true, progress = () => {}, numThreads = 0,
  tasks: kinds = [] } = {}) {
  const t0 = performance.now();
  const timings = {};
  mark = (name) => { timings[name] ??= performance.now() - t0; };
  FILES = files;
  report = progress;
  tasks = [...new Set(kinds)].sort();
  fileCache = cache && typeof caches !== "undefined" ? caches.open(CACHE_NAME).catch(() => null) : Promise.resolve(null);
  fileBytes(`kernels/${KERNELS[0]}`).catch(() => {});
  report({ phase: "python" });
  let start = "plain";
  if (SNAPSHOTS) {
    try {
      start = await startWithSnapshot(timings, t0);
    } catch (err) {
      if (err instanceof TasksError) throw err;
      console.warn(`starting without a snapshot: ${err.message || err}`);
      py = null;
      start = "plain";
    }
  }
  if (!py) await startPlain(timings, t0);
  report({ phase: "kernels" });
  const kernels = await loadKernels();
  const pool = await loadPool(kernels, numThreads);
  timings.kernels = performance.now() - t0;
  pruneCache().catch(() => {});
  return { py, timings, kernels, start, ...pool };
}

// Resolves once the snapshot this visit made is stored (at once without one): whether there was one.
export async function snapshotSaved() {
  await saving;
  return saving !== null;
}
