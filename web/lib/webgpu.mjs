// The WebGPU host of the engine's worker: runs the Programs that onnxtrain.webgpu compiles (serialized by
// onnxtrain/webgpu/page.py's program_wire) on navigator.gpu.  The engine registers `forPython` as the Python module
// `_onnxtrain_webgpu`; page.py calls it.  A run of a program is one call: its feeds are written, its dispatches
// recorded into the pending command encoder and, when outputs are wanted, submitted once and read back (a Promise
// that Python waits for with pyodide.ffi.run_sync, which needs JSPI and a request entered through callPromising).
//
// As in device.py, commands stay pending until something is read, so a train step and the optimizer step before it
// are one submission; a write while commands are pending goes through a staging buffer copied in order (a
// queue.writeBuffer would overtake them).

const USAGE = () => GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST
  | GPUBufferUsage.UNIFORM;
const PARAMS_ALIGN = 256;
const LIMITS = ["maxStorageBufferBindingSize", "maxBufferSize", "maxStorageBuffersPerShaderStage",
  "maxComputeWorkgroupStorageSize", "maxComputeInvocationsPerWorkgroup"];

let device = null;
let opening = null;
const buffers = new Map(); // handle -> GPUBuffer (programs' buffers and residents alike)
const programs = new Map(); // id -> {segments, feeds, handles, params}
const stages = new Map(); // id -> {staging, sizes, submitted}
let nextId = 1;
let encoder = null;
let pass = null;
let doomed = [];
let errors = [];
export const stats = { calls: 0, submissions: 0 };

const align4 = (n) => Math.ceil(n / 4) * 4;
const bytesOf = (data) => (data instanceof Uint8Array ? data
  : new Uint8Array(data.buffer, data.byteOffset, data.byteLength));

// A Python bytes-like (a PyProxy with getBuffer) or a typed array, lent to `use` as a Uint8Array.
function withBytes(data, use) {
  if (data && typeof data.getBuffer === "function") {
    const view = data.getBuffer("u8");
    try {
      return use(view.data);
    } finally {
      view.release();
    }
  }
  return use(bytesOf(data));
}

async function open() {
  const gpu = globalThis.navigator?.gpu;
  if (!gpu) return { error: "this browser has no navigator.gpu" };
  const adapter = await gpu.requestAdapter({ powerPreference: "high-performance" });
  if (!adapter) return { error: "navigator.gpu.requestAdapter() found no adapter" };
  const requiredLimits = Object.fromEntries(LIMITS.filter((k) => k in adapter.limits)
    .map((k) => [k, adapter.limits[k]]));
  device = await adapter.requestDevice({ requiredLimits });
  device.addEventListener("uncapturederror", (event) => {
    errors.push(event.error.message);
    console.error(`WebGPU: ${event.error.message}`);
  });
  const info = adapter.info ?? {};
  return { vendor: info.vendor ?? "", architecture: info.architecture ?? "", device: info.device ?? "",
    description: info.description ?? "", backend_type: "navigator.gpu",
    limits: Object.fromEntries(LIMITS.map((k) => [k.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`),
      requiredLimits[k]])) };
}

function pendingEncoder() {
  if (!encoder) encoder = device.createCommandEncoder();
  return encoder;
}

function endPass() {
  if (pass) {
    pass.end();
    pass = null;
  }
}

function flush() {
  endPass();
  if (encoder) {
    device.queue.submit([encoder.finish()]);
    encoder = null;
    stats.submissions += 1;
  }
  for (const stage of stages.values()) stage.submitted = true;
  doomed.forEach((b) => b.destroy());
  doomed = [];
}

function newBuffer(nbytes) {
  const handle = nextId++;
  buffers.set(handle, device.createBuffer({ size: Math.max(16, Math.ceil(nbytes / 16) * 16), usage: USAGE() }));
  return handle;
}

// Write [[GPUBuffer, Uint8Array]] at the buffers' starts, in order with the pending commands.
function writeAll(writes) {
  writes = writes.filter(([, bytes]) => bytes.length);
  if (!writes.length) return;
  if (!encoder) {
    for (const [buf, given] of writes) {
      let bytes = given;
      if (bytes.length % 4) {
        bytes = new Uint8Array(align4(given.length));
        bytes.set(given);
      }
      device.queue.writeBuffer(buf, 0, bytes);
    }
    return;
  }
  const total = writes.reduce((n, [, bytes]) => n + align4(bytes.length), 0);
  const staging = device.createBuffer({ size: total, usage: GPUBufferUsage.COPY_SRC, mappedAtCreation: true });
  const mapped = new Uint8Array(staging.getMappedRange());
  let at = 0;
  for (const [, bytes] of writes) {
    mapped.set(bytes, at);
    at += align4(bytes.length);
  }
  staging.unmap();
  endPass();
  at = 0;
  for (const [buf, bytes] of writes) {
    encoder.copyBufferToBuffer(staging, at, buf, 0, align4(bytes.length));
    at += align4(bytes.length);
  }
  doomed.push(staging);
}

// Copy [[GPUBuffer, nbytes]] into one staging buffer after the pending commands (not submitted yet): a stage id.
function stageReads(reads) {
  const sizes = reads.map(([, n]) => align4(Math.max(n, 4)));
  const staging = device.createBuffer({ size: sizes.reduce((a, b) => a + b, 0),
    usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
  endPass();
  const enc = pendingEncoder();
  let at = 0;
  reads.forEach(([buf], i) => {
    enc.copyBufferToBuffer(buf, 0, staging, at, sizes[i]);
    at += sizes[i];
  });
  const id = nextId++;
  stages.set(id, { staging, sizes, submitted: false });
  return id;
}

// The staged bytes, all in one Uint8Array (each read padded to 4 bytes): submits first if still pending.
async function collect(id) {
  const stage = stages.get(id);
  if (!stage.submitted) flush();
  stages.delete(id);
  try {
    await stage.staging.mapAsync(GPUMapMode.READ);
    const out = new Uint8Array(stage.staging.getMappedRange()).slice();
    stage.staging.unmap();
    if (errors.length) throw new Error(`WebGPU: ${errors.splice(0).join("; ")}`);
    return out;
  } finally {
    stage.staging.destroy();
  }
}

function layoutOf(cache, nIn, nOut) {
  const key = `${nIn},${nOut}`;
  if (!cache.has(key)) {
    const entries = [{ binding: 0, visibility: GPUShaderStage.COMPUTE, buffer: { type: "uniform" } }];
    for (let i = 0; i < nIn + nOut; i++) {
      entries.push({ binding: 1 + i, visibility: GPUShaderStage.COMPUTE,
        buffer: { type: i < nIn ? "read-only-storage" : "storage" } });
    }
    cache.set(key, device.createBindGroupLayout({ entries }));
  }
  return cache.get(key);
}

const pipelines = new Map(); // `${nIn},${nOut},${source}` -> GPUComputePipeline
const layouts = new Map();

function pipelineOf(source, nIn, nOut) {
  const key = `${nIn},${nOut},${source}`;
  if (!pipelines.has(key)) {
    const layout = layoutOf(layouts, nIn, nOut);
    pipelines.set(key, device.createComputePipeline({
      layout: device.createPipelineLayout({ bindGroupLayouts: [layout] }),
      compute: { module: device.createShaderModule({ code: source }), entryPoint: "main" },
    }));
  }
  return pipelines.get(key);
}

// A program from program_wire's description (JSON) and bytes (constants, then the parameter blocks): its buffers,
// pipelines and bind groups made once.  Returns [program id, the handles of its buffers (null for residents)].
function program(descJson, blob) {
  const desc = JSON.parse(descJson);
  return withBytes(blob, (bytes) => {
    const handles = desc.buffers.map((b) => b.resident ?? newBuffer(b.nbytes));
    const own = desc.buffers.map((b) => b.resident === undefined);
    const gpuOf = (i) => buffers.get(handles[i]);
    const params = device.createBuffer({ size: Math.max(desc.params[1], PARAMS_ALIGN), usage: USAGE() });
    const writes = desc.buffers
      .map((b, i) => b.const && [gpuOf(i), bytes.subarray(b.const[0], b.const[0] + b.const[1])])
      .filter(Boolean);
    writes.push([params, bytes.subarray(desc.params[0], desc.params[0] + desc.params[1])]);
    writeAll(writes);
    const segments = desc.segments.map((commands) => commands.map((c) => {
      if (c.copy) return { copy: c.copy.slice(0, 2).map(gpuOf), nbytes: align4(c.copy[2]) };
      const [nIn, nOut] = c.io;
      const pipeline = pipelineOf(desc.shaders[c.shader], nIn, nOut);
      const entries = [{ binding: 0, resource: { buffer: params, offset: c.params, size: PARAMS_ALIGN } }];
      c.bind.forEach((b, i) => entries.push({ binding: 1 + i,
        resource: { buffer: gpuOf(b), offset: 0, size: align4(c.sizes[i]) } }));
      const group = device.createBindGroup({ layout: layoutOf(layouts, nIn, nOut), entries });
      return { pipeline, group, groups: c.groups };
    }));
    const id = nextId++;
    programs.set(id, { segments, feeds: desc.feeds.map((f) => f.buffer), handles: handles.filter((_, i) => own[i]),
      params, gpuOf });
    return [id, handles.map((h, i) => (own[i] ? h : null))];
  });
}

function record(commands) {
  for (const c of commands) {
    if (c.copy) {
      endPass();
      pendingEncoder().copyBufferToBuffer(c.copy[0], 0, c.copy[1], 0, c.nbytes);
      continue;
    }
    if (!pass) pass = pendingEncoder().beginComputePass();
    pass.setPipeline(c.pipeline);
    pass.setBindGroup(0, c.group);
    pass.dispatchWorkgroups(...c.groups);
  }
}

// One segment of a program (the whole program when it has no CPU steps): the feeds (segment 0: one blob, each
// feed's bytes at `feedSizes`' running offsets), then its commands.  With `reads` (buffer handles and byte
// counts), they are staged after it: `stage` gives the stage id to collect later, else the bytes (a Promise).
function run(id, segment, feedBlob, feedSizes, readHandles, readSizes, stage) {
  const prog = programs.get(id);
  if (feedBlob) {
    withBytes(feedBlob, (bytes) => {
      let at = 0;
      writeAll(feedSizes.map((n, i) => [prog.gpuOf(prog.feeds[i]), bytes.subarray(at, (at += n))]));
    });
  }
  record(prog.segments[segment]);
  if (!readHandles || !readHandles.length) return null;
  const staged = stageReads(readHandles.map((h, i) => [buffers.get(h), readSizes[i]]));
  return stage ? staged : collect(staged);
}

function releaseProgram(id) {
  const prog = programs.get(id);
  if (!prog) return;
  programs.delete(id);
  for (const h of prog.handles) releaseLater(h);
  if (encoder) doomed.push(prog.params);
  else prog.params.destroy();
}

function release(handle) {
  buffers.get(handle)?.destroy();
  buffers.delete(handle);
}

function releaseLater(handle) {
  const buf = buffers.get(handle);
  buffers.delete(handle);
  if (!buf) return;
  if (encoder) doomed.push(buf);
  else buf.destroy();
}

const counted = (fn) => (...args) => {
  stats.calls += 1;
  return fn(...args);
};

// What Python calls (each call counted in stats.calls; open and stats are not); open and stats give JSON.
export const forPython = {
  open: () => (opening ??= open().then(JSON.stringify).finally(() => { if (!device) opening = null; })),
  buffer: counted(newBuffer),
  write: counted((handle, data) => withBytes(data, (bytes) => writeAll([[buffers.get(handle), bytes]]))),
  read: counted((handles, sizes) => collect(stageReads(handles.map((h, i) => [buffers.get(h), sizes[i]])))),
  stage: counted((handles, sizes) => stageReads(handles.map((h, i) => [buffers.get(h), sizes[i]]))),
  collect: counted(collect),
  copy: counted((src, dst, nbytes) => {
    endPass();
    pendingEncoder().copyBufferToBuffer(buffers.get(src), 0, buffers.get(dst), 0, align4(nbytes));
  }),
  clear: counted((handle, nbytes) => {
    endPass();
    pendingEncoder().clearBuffer(buffers.get(handle), 0, align4(nbytes));
  }),
  program: counted(program),
  run: counted(run),
  releaseProgram: counted(releaseProgram),
  release: counted(release),
  releaseLater: counted(releaseLater),
  flush: counted(flush),
  stats: () => JSON.stringify(stats),
};
