// onnxruntime-web's step loop answered by the engine without Python (onnxtrain.web.fast_steps): a session's
// `runTrainStep` and `runEvalStep`, with the `runOptimizerStep` and `lazyResetGrad` deferred before them, as calls
// of the kernel library's program executor on the addresses Python described after a step it ran.  Python stays
// the authority: a request the description does not fit (other names, types or dims, other fetches, another
// method) goes to Python, which first takes back the counters kept here; so does a step whose program reports bad
// input, which Python then runs again to raise its error.

const DEFERRABLE = new Set(["run_optimizer_step", "lazy_reset_grad"]);

export class FastSteps {
  // `module` is Pyodide's module (its HEAPU8 and the kernel library's exports), `library` the side module's path,
  // `pool` the kernel pool (threads.mjs), if any: a description with `pool` lies in the pool's memory, and its
  // programs run on `threads` of the pool's threads.
  constructor(module, library, pool = null) {
    this.module = module;
    this.library = library;
    this.pool = pool;
    this.sessions = new Map();   // handle -> the description of its step
    this.steps = 0;              // steps answered here, and the milliseconds they took, for the tests and benches
    this.ms = 0;
  }

  get exports() {
    return this.module.LDSO.loadedLibsByName[this.library]?.exports;
  }

  // Keep `description` (a JSON text from Python, or null) for `handle`.
  describe(handle, description) {
    if (description) this.sessions.set(handle, JSON.parse(description));
    else this.sessions.delete(handle);
  }

  // Python is about to act on `handle`: what is kept here for it no longer holds.
  forget(handle) {
    this.sessions.delete(handle);
  }

  // {result} for a request answered here; else {python: [method, args]}, the request Python answers (the one
  // given, or the step alone when the deferred steps before it ran here and the step failed).
  answer(method, handle, args) {
    const t0 = performance.now();
    const asked = { python: [method, args] };
    const step = this.sessions.get(handle);
    if (!step || !this.exports?.run_program || !Array.isArray(args) || (step.pool && !this.pool)) return asked;
    let [deferred, target, [feeds, fetches] = []] = [[], method, args];
    if (method === "deferred_then") {
      if (!Array.isArray(args[0]) || !Array.isArray(args[2]) || !args[0].every((m) => DEFERRABLE.has(m))) {
        return asked;
      }
      [deferred, target, [feeds, fetches] = []] = args;
    }
    const part = target === "run_train_step" ? step.train : target === "run_eval_step" ? step.eval : null;
    if (!part) return asked;
    const outputs = this.fetched(part, fetches);
    if (!outputs || !this.fits(part, feeds)) return asked;
    const counters = new BigInt64Array(this.module.HEAPU8.buffer, step.counters, 2);
    const heap = step.pool ? new Uint8Array(this.pool.memory.buffer) : this.module.HEAPU8;   // the step's memory
    for (const { name, address } of part.inputs) {
      const { data } = feeds[name];
      heap.set(new Uint8Array(data.buffer, data.byteOffset, data.byteLength), address);
    }
    for (const method of deferred) {
      if (method === "lazy_reset_grad") {
        counters[1] = 0n;
        continue;
      }
      new BigInt64Array(heap.buffer, step.step, 1)[0] = counters[0] + 1n;
      if (this.run(step, step.optimizer)) return asked;   // before anything changed: AdamW and SGD report nothing
      if (step.updated === true || (typeof step.updated === "number" && heap[step.updated])) counters[0] += 1n;
    }
    if (part === step.train) heap[step.overwrite] = counters[1] ? 0 : 1;
    if (this.run(step, part.program)) return { python: [target, [feeds, fetches]] };
    if (part === step.train) counters[1] = 1n;
    const result = {};
    for (const { name, type, dims, address, nbytes } of outputs) {
      result[name] = { type, dims, data: heap.slice(address, address + nbytes) };
    }
    this.steps += 1;
    this.ms += performance.now() - t0;
    return { result };
  }

  run(step, program) {
    if (step.pool) return this.pool.runThreads(program.words, program.n, program.table, program.sync, step.threads);
    return this.exports.run_program(program.words, program.n, program.table);
  }

  // The outputs asked for (all with no fetches), or null when one is not an output of the description.
  fetched(part, fetches) {
    if (fetches == null) return part.outputs;
    if (!Array.isArray(fetches)) return null;
    const found = fetches.map((name) => part.outputs.find((o) => o.name === name));
    return found.every(Boolean) ? found : null;
  }

  // Whether `feeds` are exactly the described inputs: the same names, types and dims.
  fits(part, feeds) {
    if (!feeds || typeof feeds !== "object" || Object.keys(feeds).length !== part.inputs.length) return false;
    return part.inputs.every(({ name, type, dims, nbytes }) => {
      const feed = feeds[name];
      return feed && feed.type === type && ArrayBuffer.isView(feed.data) && feed.data.byteLength === nbytes
        && Array.isArray(feed.dims) && feed.dims.length === dims.length && feed.dims.every((d, i) => d === dims[i]);
    });
  }
}
