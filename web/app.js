// The page: talks to the training worker through a small promise-based RPC.
import { setUpDigits } from "./digits.js";
import { setUpImages } from "./images.js";
import { setUpOwnModel } from "./own_model.js";
import { exposeHooks } from "./hooks.js";
import { initRuns } from "./runs.js";
import { setUpTabular } from "./tabular.js";
import { $, download, errorShower } from "./ui.js";

const worker = new Worker(new URL("./worker.mjs", import.meta.url), { type: "module" });
let nextId = 1;
const pending = new Map();

worker.onmessage = (event) => {
  const msg = event.data;
  const entry = pending.get(msg.id);
  if (!entry) return;
  if (msg.type === "progress") { entry.onProgress?.(msg); return; }
  pending.delete(msg.id);
  if (msg.ok) entry.resolve(msg.result); else entry.reject(new Error(msg.error));
};

function call(type, args = {}, { transfer = [], onProgress } = {}) {
  const id = nextId++;
  return new Promise((resolve, reject) => {
    pending.set(id, { resolve, reject, onProgress });
    worker.postMessage({ id, type, ...args }, transfer);
  });
}

const ready = call("init");

// The service worker caches the whole site (18 MB) for repeat and offline visits: it is registered once the
// runtime is up, so that its downloads do not compete with the first start for the CPU.
if ("serviceWorker" in navigator) {
  ready.finally(() => navigator.serviceWorker.register("sw.js")).catch(() => {}); // optional, see sw.js
}
exposeHooks({ call, ready }); // nothing in the site; the test site's copy exposes them
setUpTabular(call, ready);
setUpOwnModel(call, ready);
setUpImages(call, ready);
setUpDigits(call, ready);
initRuns(ready).catch(errorShower("runs-error"));

const showError = errorShower("error");

// Synthetic data: 20 features; the label is the index of the largest of the first five.
function makeBatch(batch, rng) {
  const x = new Float32Array(batch * 20);
  const y = new BigInt64Array(batch);
  for (let i = 0; i < batch; i++) {
    let best = 0;
    for (let j = 0; j < 20; j++) {
      const u = Math.max(rng(), 1e-9), v = rng();
      x[i * 20 + j] = Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * v);
      if (j < 5 && x[i * 20 + j] > x[i * 20 + best]) best = j;
    }
    y[i] = BigInt(best);
  }
  return [{ data: x, shape: [batch, 20], dtype: "float32" }, { data: y, shape: [batch], dtype: "int64" }];
}

function seeded(seed) {
  return () => { seed = (seed * 1664525 + 1013904223) % 4294967296; return seed / 4294967296; };
}

async function loadDemo() {
  const files = ["training_model.onnx", "eval_model.onnx", "optimizer_model.onnx", "checkpoint"];
  const [training, evalModel, optimizer, checkpoint] = await Promise.all(
    files.map(async (f) => (await fetch(`artifacts/mlp/${f}`)).arrayBuffer()));
  return call("load", { training, evalModel, optimizer, checkpoint },
    { transfer: [training, evalModel, optimizer, checkpoint] });
}

async function train() {
  $("error").hidden = true;
  for (const b of ["train", "export", "checkpoint"]) $(b).disabled = true;
  $("cancel").disabled = false;
  try {
    await loadDemo();
    await call("setLearningRate", { lr: Number($("lr").value) });
    const rng = seeded(1);
    const steps = Number($("steps").value), batch = Number($("batch").value);
    const batches = Array.from({ length: steps }, () => makeBatch(batch, rng));
    $("status").textContent = "Training…";
    const result = await call("train", { batches }, {
      transfer: batches.flat().map((input) => input.data.buffer),
      onProgress: (p) => {
        $("progress").value = p.step / p.steps;
        $("metrics").textContent = `step ${p.step}/${p.steps} · loss ${p.loss.toFixed(4)} · ` +
          `${Math.round(p.examplesPerSecond)} examples/s`;
      },
    });
    const evalLoss = (await call("evaluate", { inputs: makeBatch(256, seeded(99)) }))[0].data[0];
    $("status").textContent = result.cancelled ? "Cancelled." : "Trained.";
    $("metrics").textContent += ` · held-out loss ${evalLoss.toFixed(4)}`;
    $("export").disabled = $("checkpoint").disabled = false;
  } catch (err) {
    showError(err);
    $("status").textContent = "Something went wrong; you can try again.";
  } finally {
    $("train").disabled = false;
    $("cancel").disabled = true;
  }
}

$("train").onclick = train;
$("cancel").onclick = () => call("cancel");
$("export").onclick = async () => download(await call("exportModel", { outputNames: ["output"] }), "model.onnx");
$("checkpoint").onclick = async () => download(await call("saveCheckpoint", { includeOptimizerState: true }), "checkpoint");

ready.then((info) => {
  const kernels = info.kernels ? `SIMD kernels (${info.kernels.includes("relaxed") ? "relaxed SIMD" : "SIMD128"})`
    : "numpy kernels only";
  $("status").textContent = `Ready: Python ${info.python.split(" ")[0]}, numpy ${info.numpy}, ${kernels}.`;
  $("train").disabled = false;
}, (err) => { showError(err); $("status").textContent = "The Python runtime failed to start."; });
