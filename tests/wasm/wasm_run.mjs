// Runs calls of the threaded wasm kernel build (web/kernels, standalone: it imports only its memory) for
// test_wasm_build.py: node wasm_run.mjs <module.wasm> <job.json> <blob in> <blob out>.  The blob is copied to the
// first 64-byte aligned address above __heap_base (B); argument ["p", x] is the address B + x, ["i", x] an int,
// ["d", x] a double, ["l", x] an int64; each table [at, [x...]] writes the uint32 addresses B + x at B + at.  The
// blob is written back after the calls, and the calls' results are printed as JSON.
import fs from "node:fs";

const [wasmPath, jobPath, blobIn, blobOut] = process.argv.slice(2);
const job = JSON.parse(fs.readFileSync(jobPath, "utf8"));
const blob = fs.readFileSync(blobIn);
const memory = new WebAssembly.Memory({ initial: 64, maximum: 16384, shared: true });
const { instance } = await WebAssembly.instantiate(fs.readFileSync(wasmPath), { env: { memory } });
const ex = instance.exports;
const base = Math.ceil(ex.__heap_base.value / 64) * 64;
const pages = Math.ceil((base + blob.length) / 65536) - memory.buffer.byteLength / 65536;
if (pages > 0) memory.grow(pages);
new Uint8Array(memory.buffer).set(blob, base);
const view = new DataView(memory.buffer);
for (const [at, offsets] of job.tables) offsets.forEach((x, i) => view.setUint32(base + at + 4 * i, base + x, true));
const results = job.calls.map(({ fn, args }) => {
  const r = ex[fn](...args.map(([kind, x]) => (kind === "p" ? base + x : kind === "l" ? BigInt(x) : x)));
  return typeof r === "bigint" ? Number(r) : r;
});
fs.writeFileSync(blobOut, new Uint8Array(memory.buffer, base, blob.length));
console.log(JSON.stringify(results));
