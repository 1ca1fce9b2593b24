// onnxtrain's kernel pool: where the page is cross-origin isolated, the SIMD kernels also run on threads.  Pyodide's
// heap cannot be shared, so a second build of web/kernels (threaded: atomics, shared memory) runs in its own shared
// WebAssembly.Memory, instantiated here and in threads - 1 workers (threads_worker.mjs).  Python
// (onnxtrain.ops.simd) calls run(name, descriptor, threads) synchronously: the operands are copied from Pyodide's
// heap into the shared memory, the threads compute the kernel's parts (an entry point taking (part, parts, ...):
// ENTRIES; every output is computed as one thread computes it), and the outputs are copied back.  It answers
// false, having done nothing, when the operands do not fit the memory (2 GiB at most).
import { SPIN_MS, runPart, takePart } from "./threads_worker.mjs";

export const ENTRIES = ["gemm_f32_part", "adamw_f32_part", "sgd_f32_part", "im2col_f32_part", "col2im_f32_part",
  "maxpool_f32_part", "depthwise_f32_part", "depthwise_grad_f32_part", "run_program_part", "run_program_threads"];
const PAGE = 65536;
const MAX_PAGES = 32768; // 2 GiB, the threaded module's --max-memory
const STACK = 1024 * 1024; // build.py's THREADED_LINK stack size
const MAX_ARGS = 28;
const PARTS_PER_THREAD = 3; // parts, so that a thread the system runs late leaves most of its share to the others

// The thread count onnxruntime-web picks for numThreads 0 or undefined.
export const defaultThreads = (cores) => Math.min(4, Math.ceil((cores || 1) / 2));

// The pool: resolves to {threads, forPython} (the module registered for Python).
export async function startPool({ bytes, threads, workerUrl, heap }) {
  const module = await WebAssembly.compile(bytes);
  const memory = new WebAssembly.Memory({ initial: 64, maximum: MAX_PAGES, shared: true });
  const main = (await WebAssembly.instantiate(module, { env: { memory } })).exports;
  const align = (n) => Math.ceil(n / 16) * 16;
  let top = align(main.__heap_base.value);
  const take = (size) => {
    const at = top;
    top = align(top + size);
    return at;
  };
  const control = take(32 + 8 * MAX_ARGS);
  const stacks = Array.from({ length: threads - 1 }, () => take(STACK) + STACK);
  const arena = top;   // programs placed here (onnxtrain.wasm.pool: Python allocates [arena, arena + reserved))
  let reserved = 0;
  const scratch = () => align(arena + reserved);   // the copies of run and runProgram, above what is placed
  // whether the memory holds `end` bytes now (grown if need be; false past its maximum)
  const grow = (end) => {
    if (end <= memory.buffer.byteLength) return true;
    try {
      memory.grow(Math.ceil((end - memory.buffer.byteLength) / PAGE));
      return true;
    } catch {
      return false;
    }
  };
  if (!grow(arena)) throw new RangeError(`${threads} threads' stacks do not fit the kernel pool's memory`);
  const words = new Int32Array(memory.buffer, control, 8);
  const functions = ENTRIES.map((name) => main[name]);
  const workers = await Promise.all(stacks.map((stackTop, i) => new Promise((resolve, reject) => {
    const worker = new Worker(workerUrl, { type: "module", name: `onnxtrain-kernels-${i + 1}` });
    worker.onmessage = () => resolve(worker);
    worker.onerror = (event) => reject(new Error(`${workerUrl}: ${event.message || "did not load"}`));
    worker.postMessage({ module, memory, index: i + 1, control, stackTop, entries: ENTRIES });
  })));
  let job = 0;
  // Job `entry` of `total` parts on `used` threads with `args` (already in the control block), waited for.
  function dispatch(entry, total, args, used) {
    words[2] = entry;
    words[3] = total;
    words[4] = args.length;
    words[7] = used;
    Atomics.store(words, 1, 0);
    job += 1;
    Atomics.store(words, 6, (job & 0xffff) << 16);
    Atomics.store(words, 0, job);
    Atomics.notify(words, 0);
    for (let part; (part = takePart(words, job, total)) >= 0;) {
      runPart(words, functions[entry], part, total, args, ENTRIES[entry]);
    }
    const until = performance.now() + SPIN_MS;
    for (let done; (done = Atomics.load(words, 1)) < total;) {
      if (performance.now() > until) Atomics.wait(words, 1, done);
    }
    if (Atomics.exchange(words, 5, 0)) throw new Error(`onnxtrain's kernel pool: ${ENTRIES[entry]} failed`);
  }
  // descriptor (int32, in Pyodide's heap): buffers, args, then per buffer (address, bytes, mode), per arg (kind,
  // value).  mode 1: copied in, 2: copied out, 3: both, 4 + 16 * width: a table of rows of `width` int32s, each
  // row a size then addresses of this call's buffers (translated to their copies).  kind 0: an int, 1: a float's
  // bits, 2: the address of the copy of buffer `value`.
  function run(name, descriptor, used) {
    const entry = ENTRIES.indexOf(name);
    const heap32 = heap().HEAP32;
    const heap8 = heap().HEAPU8;
    const at = descriptor >> 2;
    const [nbuf, nargs] = [heap32[at], heap32[at + 1]];
    if (entry < 0 || nargs > MAX_ARGS || used > threads) throw new RangeError(`kernel pool: no ${name} of ${nargs} `
      + `arguments on ${used} threads`);
    const places = new Map();
    const copies = [];
    let end = scratch();
    for (let i = 0; i < nbuf; i++) {
      const [from, size, mode] = heap32.subarray(at + 2 + 3 * i, at + 5 + 3 * i);
      copies.push([from, size, mode, end]);
      places.set(from, end);
      end = align(end + size);
    }
    if (!grow(end)) return false;
    const shared8 = new Uint8Array(memory.buffer);
    const shared32 = new Int32Array(memory.buffer);
    for (const [from, size, mode, to] of copies) {
      if (mode & 1 || mode >= 4) shared8.set(heap8.subarray(from, from + size), to);
      if (mode < 4) continue;
      const width = mode >> 4;
      for (let i = to >> 2, row = 0; i < (to + size) >> 2; i++, row = (row + 1) % width) {
        if (row) shared32[i] = places.get(shared32[i]);
      }
    }
    const args = new Float64Array(memory.buffer, control + 32, nargs);
    const bits = new DataView(new ArrayBuffer(4));
    for (let i = 0, p = at + 2 + 3 * nbuf; i < nargs; i++, p += 2) {
      const [kind, value] = [heap32[p], heap32[p + 1]];
      if (kind === 1) bits.setInt32(0, value, true);
      args[i] = kind === 0 ? value : kind === 1 ? bits.getFloat32(0, true) : copies[value][3];
    }
    dispatch(entry, used * PARTS_PER_THREAD, args, used);
    const back8 = heap().HEAPU8;
    for (const [from, size, mode, to] of copies) {
      if (mode & 2 && mode < 4) back8.set(shared8.subarray(to, to + size), from);
    }
    return true;
  }
  // The `n` copies described from heap32[p] as (heap address, offset from `base`, bytes), into the pool's memory;
  // where the next words start.
  function copyIn(heap32, p, n, base) {
    const shared8 = new Uint8Array(memory.buffer);
    const heap8 = heap().HEAPU8;
    for (let i = 0; i < n; i++, p += 3) {
      shared8.set(heap8.subarray(heap32[p], heap32[p] + heap32[p + 2]), base + heap32[p + 1]);
    }
    return p;
  }
  // The `n` copies described from heap32[p] as (offset from `base`, heap address, bytes), out of the pool's memory.
  function copyOut(heap32, p, n, base) {
    const shared8 = new Uint8Array(memory.buffer);
    const heap8 = heap().HEAPU8;
    for (let i = 0; i < n; i++, p += 3) {
      heap8.set(shared8.subarray(base + heap32[p], base + heap32[p] + heap32[p + 2]), heap32[p + 1]);
    }
  }
  // A program run as `parts` sub-batches on the threads (onnxtrain.wasm.batches).  descriptor (int32, in Pyodide's
  // heap): total bytes, parts, copies in, copies out, then the offsets (from the pool's arena) of the program's
  // words, its word count, the parts' pointer tables, their length, the parts' results; per copy in (heap address,
  // offset, bytes), per copy out (offset, heap address, bytes).  The tables hold offsets, -1 for no buffer.
  // Answers -1 when it does not fit the memory, else the first part's nonzero result (1 + the failing record) or 0.
  function runProgram(descriptor, used) {
    const heap32 = heap().HEAP32;
    const at = descriptor >> 2;
    const [total, parts, nIn, nOut, wordsAt, nWords, tablesAt, tableLength, failedAt] = heap32.subarray(at, at + 9);
    if (used > threads) throw new RangeError(`kernel pool: a program on ${used} of ${threads} threads`);
    const base = scratch();
    if (!grow(base + total)) return -1;
    const p = copyIn(heap32, at + 9, nIn, base);
    const tables = new Int32Array(memory.buffer, base + tablesAt, parts * tableLength);
    for (let i = 0; i < tables.length; i++) tables[i] = tables[i] < 0 ? 0 : base + tables[i];
    const failed = new Int32Array(memory.buffer, base + failedAt, parts);
    failed.fill(0);
    const args = new Float64Array(memory.buffer, control + 32, 5);
    args.set([base + wordsAt, nWords, base + tablesAt, tableLength, base + failedAt]);
    dispatch(ENTRIES.indexOf("run_program_part"), parts, args, used);
    copyOut(heap32, p, nOut, base);
    return failed.find((r) => r !== 0) ?? 0;
  }
  // One program run by `used` threads at once, each record split over them or run by one (run_program_threads,
  // bit for bit as run_program), on addresses of this memory: the failing record + 1, or 0.
  const entryThreads = ENTRIES.indexOf("run_program_threads");
  function runThreads(wordsAt, n, table, sync, used) {
    if (used > threads) throw new RangeError(`kernel pool: a program on ${used} of ${threads} threads`);
    const args = new Float64Array(memory.buffer, control + 32, 4);
    args.set([wordsAt, n, table, sync]);
    dispatch(entryThreads, used, args, used);
    return new Int32Array(memory.buffer, sync, 1)[0];
  }
  // Python's placement (onnxtrain.wasm.pool.PageMemory): whether [arena, arena + end) fits (grown if need be).
  function reserve(end) {
    if (end > MAX_PAGES * PAGE - arena || !grow(arena + end)) return false;
    reserved = Math.max(reserved, end);
    return true;
  }
  // descriptor (int32, in Pyodide's heap): copies in, copies out, a program's words, count, table and sync (offsets
  // from the arena) and its threads (0: no run), then per copy in (heap address, offset, bytes), per copy out
  // (offset, heap address, bytes).  The copies in, the run, then (unless it failed) the copies out: its result.
  function exchange(descriptor) {
    const heap32 = heap().HEAP32;
    const at = descriptor >> 2;
    const [nIn, nOut, wordsAt, n, table, sync, used] = heap32.subarray(at, at + 7);
    const p = copyIn(heap32, at + 7, nIn, arena);
    const failed = used ? runThreads(arena + wordsAt, n, arena + table, arena + sync, used) : 0;
    if (failed) return failed;
    copyOut(heap32, p, nOut, arena);
    return 0;
  }
  const forPython = { run, runProgram, threads, base: arena, capacity: MAX_PAGES * PAGE - arena, reserve, exchange };
  return { threads, forPython, memory, runThreads, workers };
}
