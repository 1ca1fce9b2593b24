// A thread of onnxtrain's kernel pool (threads.mjs, which imports the job protocol from here): its own instance of
// the threaded kernel module over the pool's shared memory, with its own stack.  It waits for a job in the control
// block, then takes the job's parts one by one until none is left; so does the calling thread, and a thread the
// system runs late leaves its parts to the others.
//
// The control block, int32 words: 0 the job's number, 1 its parts done, 2 its entry, 3 its parts, 4 its argument
// count, 5 a part failed, 6 the next part (the job's number's low 16 bits above it), 7 the threads it uses; its
// arguments as float64s from byte 32.
export const SPIN_MS = 1; // spin this long for the next job or its end before sleeping

// The next part of job `job` to compute, or -1 when none is left (or the job is over).
export function takePart(words, job, parts) {
  for (;;) {
    const next = Atomics.load(words, 6);
    if (next >>> 16 !== (job & 0xffff) || (next & 0xffff) >= parts) return -1;
    if (Atomics.compareExchange(words, 6, next, next + 1) === next) return next & 0xffff;
  }
}

// Part `part` of the job, counted done (a failure flagged), the waiting caller woken after the last.
export function runPart(words, fn, part, parts, args, name) {
  try {
    fn(part, parts, ...args);
  } catch (err) {
    Atomics.store(words, 5, 1);
    console.error(`onnxtrain's kernel pool: ${name} failed: ${err.message || err}`);
  }
  if (Atomics.add(words, 1, 1) + 1 === parts) Atomics.notify(words, 1);
}

async function serve({ data: { module, memory, index, control, stackTop, entries } }) {
  const { exports } = await WebAssembly.instantiate(module, { env: { memory } });
  exports.__stack_pointer.value = stackTop;
  const words = new Int32Array(memory.buffer, control, 8);
  const functions = entries.map((name) => exports[name]);
  let seen = Atomics.load(words, 0);
  self.postMessage("ready");
  for (;;) {
    const until = performance.now() + SPIN_MS;
    while (Atomics.load(words, 0) === seen) {
      if (performance.now() > until) Atomics.wait(words, 0, seen);
    }
    seen = Atomics.load(words, 0);
    if (index >= words[7]) continue;
    const [entry, parts, count] = [words[2], words[3], words[4]];
    const args = new Float64Array(memory.buffer, control + 32, count);
    for (let part; (part = takePart(words, seen, parts)) >= 0;) {
      runPart(words, functions[entry], part, parts, args, entries[entry]);
    }
  }
}

// the engine bundles this module for the protocol: only the pool's workers (by name) serve
if (globalThis.WorkerGlobalScope && self.name.startsWith("onnxtrain-kernels-")) self.onmessage = serve;
