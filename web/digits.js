// "Teach the digit recogniser your handwriting": a drawing pad, live predictions, new classes, fine-tuning.
import { executionProviders } from "./compute.js";
import { HandwritingTask } from "./lib/onnxtrain.mjs";
import { registerRunKind, saveRun } from "./runs.js";
import { trainingControls } from "./training_view.js";
import { $, downloadButton, errorShower, showSignature } from "./ui.js";

let task = null; // the library's HandwritingTask
let classes = [];
let replay = null; // the original digits, rehearsed while fine-tuning
let runId = null; // the saved run of this page's drawings
let fineTunes = 0;
let stopping = null; // aborts the fine-tuning running now
let loaded = null; // resolves when the pretrained model is in the engine
let drawing = false;
let predicting = false;
let again = false;

// The drawing as scikit-learn's digits: 8x8 grayscale, ink high, values 0..16.
export function pixels() {
  const small = new OffscreenCanvas(8, 8);
  const context = small.getContext("2d", { willReadFrequently: true });
  context.imageSmoothingQuality = "high";
  context.drawImage($("pad"), 0, 0, 8, 8);
  const data = context.getImageData(0, 0, 8, 8).data;
  return Array.from({ length: 64 }, (_, i) => (data[i * 4] / 255) * 16);
}

const showError = errorShower("digit-error");

// The drawings, new classes and fine-tuned model, saved after every change.
async function save() {
  runId = runId || Date.now();
  const snapshot = await task.snapshot();
  const counts = await task.counts();
  await saveRun({ id: runId, kind: "digits", name: "Your handwriting", saved: Date.now(), snapshot, classes,
    examples: Object.values(counts).reduce((a, b) => a + b, 0), fineTunes });
}

const times = (n) => (n === 0 ? "not fine-tuned" : n === 1 ? "fine-tuned once" : `fine-tuned ${n} times`);

function showCounts(counts) {
  $("digit-counts").textContent = "Examples: " + Object.entries(counts).filter(([, n]) => n).map(([c, n]) => `${c}: ${n}`).join(", ");
}

registerRunKind("digits", {
  section: "digits",
  describe: (r) => `${r.name}: ${r.examples} drawings, classes ${r.classes.join(" ")}, ${times(r.fineTunes)}`,
  async resume(saved) {
    await loaded;
    const next = await HandwritingTask.fromSnapshot(saved.snapshot.slice(0), replay.slice(0),
      { executionProviders: executionProviders() });
    await task.release();
    task = next;
    classes = await task.classes();
    runId = saved.id;
    fineTunes = saved.fineTunes;
    fillClasses(0);
    showCounts(await task.counts());
    $("digit-download").disabled = fineTunes === 0;
    if (fineTunes) await showSignature(task, "digit-signature");
    $("digit-metrics").textContent = `Restored ${saved.examples} drawings; the model is ${times(fineTunes)}.`;
  },
});

function fillClasses(selected) {
  $("digit-class").replaceChildren(...classes.map((c, i) => new Option(c, String(i))));
  if (selected !== undefined) $("digit-class").value = String(selected);
}

// Predict the pad as it is; while one prediction runs, the next waits, so the last drawing is always predicted.
async function predict() {
  if (predicting) { again = true; return; }
  predicting = true;
  try {
    const p = await task.predict(pixels());
    const best = p.indexOf(Math.max(...p));
    $("digit-prediction").textContent = `Looks like: ${classes[best]} (${(100 * p[best]).toFixed(0)}%)`;
  } catch (err) { showError(err); } finally {
    predicting = false;
    if (again) { again = false; predict(); }
  }
}

function clearPad() {
  const context = $("pad").getContext("2d");
  context.fillStyle = "#000";
  context.fillRect(0, 0, 200, 200);
  $("digit-prediction").textContent = "Draw a digit";
}

function setUpPad() {
  const pad = $("pad");
  const context = pad.getContext("2d");
  clearPad();
  const at = (e) => { const r = pad.getBoundingClientRect(); return [(e.clientX - r.left) * 200 / r.width, (e.clientY - r.top) * 200 / r.height]; };
  pad.addEventListener("pointerdown", (e) => { drawing = true; context.beginPath(); context.moveTo(...at(e)); });
  pad.addEventListener("pointermove", (e) => {
    if (!drawing) return;
    Object.assign(context, { strokeStyle: "#fff", lineWidth: 22, lineCap: "round", lineJoin: "round" });
    context.lineTo(...at(e));
    context.stroke();
    predict();
  });
  const stop = () => { if (drawing) { drawing = false; predict(); } };
  pad.addEventListener("pointerup", stop);
  pad.addEventListener("pointerleave", stop);
}

export function setUpDigits(ready) {
  // the shared controls; a fine-tuning is one call (no pause, no chart)
  trainingControls("digit", { epochs: 20, batch: 32, lr: 0.01, schedule: false, pause: false, chart: false,
    trainDisabled: true, downloads: { download: "Download model (.onnx)" } });
  setUpPad();
  loaded = ready.then(async () => {
    const [model, replayed] = await Promise.all(["model.onnx", "replay.npz"].map(async (f) =>
      (await fetch(`artifacts/digits/${f}`)).arrayBuffer()));
    replay = replayed.slice(0);
    task = await HandwritingTask.create(model, replayed, { executionProviders: executionProviders() });
    classes = await task.classes();
    fillClasses(0);
    for (const b of ["digit-add", "digit-new-add", "digit-train"]) $(b).disabled = false;
  });
  loaded.catch(showError);
  $("digit-clear").onclick = clearPad;
  $("digit-add").onclick = async () => {
    try {
      showCounts(await task.addExample(pixels(), Number($("digit-class").value)));
      clearPad();
      await save();
    } catch (err) { showError(err); }
  };
  $("digit-new-add").onclick = async () => {
    try {
      const index = await task.addClass($("digit-new").value);
      classes.push($("digit-new").value.trim());
      fillClasses(index);
      $("digit-new").value = "";
      await save();
    } catch (err) { showError(err); }
  };
  $("digit-train").onclick = async () => {
    $("digit-error").hidden = true;
    $("digit-train").disabled = true;
    $("digit-cancel").disabled = false;
    $("digit-metrics").textContent = "Fine-tuning…";
    stopping = new AbortController();
    try {
      const losses = [];
      const r = await task.fineTune({ epochs: Number($("digit-epochs").value),
        batchSize: Number($("digit-batch").value), learningRate: Number($("digit-lr").value),
        headOnly: $("digit-mode").value === "head", signal: stopping.signal,
        onProgress: (p) => { losses.push(p.loss); $("digit-progress").value = p.progress / p.epochs; } });
      $("digit-metrics").textContent = `Fine-tuned on ${r.examples} examples: loss ${losses[0].toFixed(3)} → ` +
        `${losses.at(-1).toFixed(3)}. Draw to try it.`;
      for (const b of ["digit-download", "digit-checkpoint", "digit-artifacts"]) $(b).disabled = false;
      fineTunes += 1;
      await save();
      await showSignature(task, "digit-signature");
    } catch (err) {
      $("digit-metrics").textContent = err?.name === "AbortError" ? "Cancelled; the model is as it was." : "";
      if (err?.name !== "AbortError") showError(err);
    } finally {
      stopping = null;
      $("digit-train").disabled = false;
      $("digit-cancel").disabled = true;
    }
  };
  $("digit-cancel").onclick = () => stopping?.abort();
  downloadButton("digit-download", "digits.onnx", () => task.exportModel(), showError);
  downloadButton("digit-checkpoint", "digits.ckpt", () => task.checkpoint(), showError);
  downloadButton("digit-artifacts", "digits-artifacts.zip", () => task.artifactsZip(), showError);
  return { task: () => task, pixels }; // the drawing's pixels: for the test hooks
}
