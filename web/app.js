// The page: every flow is built on the onnxtrain library (lib/onnxtrain.mjs; in the site, onnxtrain/onnxtrain.mjs),
// as another site's page would be.
import { setUpAudio } from "./audio.js";
import { setUpCamera } from "./camera.js";
import { PROVIDER_NAMES, executionProviders, setUpCompute } from "./compute.js";
import { setUpDigits } from "./digits.js";
import { setUpFederation } from "./federation.js";
import { setUpImages } from "./images.js";
import { setUpOwnModel } from "./own_model.js";
import { exposeHooks } from "./hooks.js";
import { Tensor, TrainingSession, isolate, start } from "./lib/onnxtrain.mjs";
import { initRuns } from "./runs.js";
import { setUpTabular } from "./tabular.js";
import { setUpText } from "./text.js";
import { $, download, errorShower } from "./ui.js";

// The service worker caches the whole site for repeat and offline visits, and adds the COOP/COEP headers that
// give the engine threads.  On a host that sends no such headers, the first visit registers it, waits for its
// cache and reloads once (isolate(); ?isolation=off opts out), so the runtime starts only in the page that stays.
// Otherwise it is registered once the runtime is up, so that its downloads do not compete with the start.  The
// handwriting task is made as soon as the engine is ready (digits.js): its code is imported at start.
const ready = isolate("sw.js").then(() => start({ tasks: ["handwriting"] }));
const compute = setUpCompute();

if ("serviceWorker" in navigator) {
  ready.finally(() => navigator.serviceWorker.register("sw.js")).catch(() => {}); // optional, see sw.js
}
// Each flow: {task() (its current task or session), and what the tests read or drive in it}
const flows = { csv: setUpTabular(ready), own: setUpOwnModel(ready), images: setUpImages(ready),
  digits: setUpDigits(ready), camera: setUpCamera(ready), text: setUpText(ready), audio: setUpAudio(ready),
  fed: setUpFederation(ready) };
exposeHooks({ ready, flows }); // nothing in the site; the test site's copy exposes them
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
  return { input: new Tensor("float32", x, [batch, 20]), labels: new Tensor("int64", y, [batch]) };
}

function seeded(seed) {
  return () => { seed = (seed * 1664525 + 1013904223) % 4294967296; return seed / 4294967296; };
}

// The demo: onnxruntime-web's training loop, step by step, on the artifacts the site ships.
let demo = null;
let cancelled = false;

async function loadDemo() {
  const url = (name) => `artifacts/mlp/${name}`;
  const next = await TrainingSession.create({ checkpointState: url("checkpoint"),
    trainModel: url("training_model.onnx"), evalModel: url("eval_model.onnx"),
    optimizerModel: url("optimizer_model.onnx") }, { executionProviders: executionProviders() });
  if (demo) await demo.release();
  demo = next;
}

async function train() {
  $("error").hidden = true;
  for (const b of ["train", "export", "checkpoint"]) $(b).disabled = true;
  $("cancel").disabled = false;
  cancelled = false;
  try {
    await loadDemo();
    await demo.setLearningRate(Number($("lr").value));
    const rng = seeded(1);
    const steps = Number($("steps").value), batch = Number($("batch").value);
    $("status").textContent = `Training on ${PROVIDER_NAMES[demo.executionProvider]}…`;
    const t0 = performance.now();
    for (let step = 1; step <= steps && !cancelled; step++) {
      const out = await demo.runTrainStep(makeBatch(batch, rng));
      await demo.runOptimizerStep();
      await demo.lazyResetGrad();
      const loss = out[demo.trainingOutputNames[0]].data[0];
      $("progress").value = step / steps;
      $("metrics").textContent = `step ${step}/${steps} · loss ${loss.toFixed(4)} · ` +
        `${Math.round((step * batch) / ((performance.now() - t0) / 1000))} examples/s`;
    }
    const held = await demo.runEvalStep(makeBatch(256, seeded(99)));
    const evalLoss = held[demo.evalOutputNames[0]].data[0];
    $("status").textContent = cancelled ? "Cancelled." : `Trained on ${PROVIDER_NAMES[demo.executionProvider]}.`;
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
$("cancel").onclick = () => { cancelled = true; };
$("export").onclick = async () => download(await demo.exportModelForInferencing(["output"]), "model.onnx");
$("checkpoint").onclick = async () => download(await demo.saveCheckpoint(true), "checkpoint");

Promise.all([ready, compute]).then(([info, provider]) => {
  const kernels = info.kernels ? `SIMD kernels (${info.kernels.includes("relaxed") ? "relaxed SIMD" : "SIMD128"})`
    : "numpy kernels only";
  const threads = info.threads > 1 ? `${info.threads} threads` : "1 thread"
    + (info.threadsNote ? ` (${info.threadsNote})` : "");
  $("status").textContent = `Ready: Python ${info.python.split(" ")[0]}, numpy ${info.numpy}, ${kernels} on `
    + `${threads}; computing on ${PROVIDER_NAMES[provider]}.`;
  $("train").disabled = false;
}, (err) => { showError(err); $("status").textContent = "The Python runtime failed to start."; });
