// A thread of onnxtrain's kernel pool (threads.mjs): its own instance of the threaded kernel module over the pool's
// shared memory, with its own stack.  It waits for a job in the control block, runs its part, counts itself done (and
// flags a failure).
const SPIN_MS = 0.05; // spin this long for the next job before sleeping: a training step's ops come in bursts

self.onmessage = async ({ data: { module, memory, index, control, stackTop, entries } }) => {
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
    const [entry, parts, count] = [words[2], words[3], words[4]];
    try {
      if (index < parts) functions[entry](index, parts, ...new Float64Array(memory.buffer, control + 32, count));
    } catch (err) {
      Atomics.store(words, 5, 1);
      console.error(`onnxtrain's kernel thread ${index}: ${entries[entry]} failed: ${err.message || err}`);
    }
    Atomics.add(words, 1, 1);
    Atomics.notify(words, 1);
  }
};
