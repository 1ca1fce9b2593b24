// "Train on a folder of images": decode in the page, then either train the head of the pretrained EfficientNet-Lite0
// on the photos' features (the default) or a small CNN from scratch; download a model that takes the images.
import { executionProviders } from "./compute.js";
import { ImageTask, PersonalizeTask } from "./lib/onnxtrain.mjs";
import { registerRunKind } from "./runs.js";
import { TrainingView } from "./training_view.js";
import { $, BACKBONE, BACKBONE_SIZE, downloadButton, errorShower, showConfusion, showSignature } from "./ui.js";

const EMBED_CHUNK = 8; // images per request while the backbone computes their features

let view = null;
let task = null; // the library's task of `data`: an ImageTask, or `pretrained`
let pretrained = null; // the PersonalizeTask that holds the backbone, kept from folder to folder
let data = null; // the decoded images: {pixels, count, size, labels, classes, skipped, optimizer, name, model}
let fresh = false; // the task is untrained, just made from `data`
let runInfo = null; // the pretrained run's setup (what it trains on), kept with its saved run

const showError = errorShower("img-error");

function skippedText(skipped) {
  if (!skipped.length) return "";
  const what = skipped.length === 1 ? "file that is not an image" : "files that are not images";
  return `; skipped ${skipped.length} ${what}: ${skipped.slice(0, 3).join(", ")}${skipped.length > 3 ? ", …" : ""}`;
}

function showInfo(info) {
  const model = data.model === "pretrained" ? "the pretrained EfficientNet-Lite0's features of" : "a CNN from scratch on";
  $("img-info").textContent = `${info.images} images in ${info.classes.length} classes (${info.classes.join(", ")}), ` +
    `${info.train} for training and ${info.validation} for validation, ${model} ${data.size}×${data.size} pixels` +
    `${skippedText(data.skipped)}.`;
  $("img-setup").hidden = false;
  $("img-metrics").textContent = "";
}

function showStatus(text) {
  $("img-info").textContent = text;
  $("img-setup").hidden = true;
}

const megabytes = (n) => `${(n / 1e6).toFixed(1)} MB`;

function showLoad({ loaded, total, seconds, stage }) {
  showStatus(stage === "ready" ? `The backbone is ready (${megabytes(total)} in ${seconds.toFixed(1)} s).`
    : `Loading the pretrained backbone: ${megabytes(loaded)}${total ? ` of ${megabytes(total)}` : ""} ` +
      `(${seconds.toFixed(1)} s)…`);
}

// The files under dropped folders (FileSystemEntry objects), each as {path, file} with its path in the drop.
async function entryFiles(entries) {
  const found = [];
  async function walk(entry, prefix) {
    if (entry.isFile) {
      found.push({ path: prefix + entry.name, file: await new Promise((ok, fail) => entry.file(ok, fail)) });
    } else if (entry.isDirectory) {
      const reader = entry.createReader();
      for (let batch; (batch = await new Promise((ok, fail) => reader.readEntries(ok, fail))).length;) {
        for (const child of batch) await walk(child, `${prefix}${entry.name}/`);
      }
    }
  }
  for (const entry of entries) await walk(entry, "");
  return found;
}

// The backbone's features of every image of `data`, as the classes of `pretrained` (made once).
async function embed() {
  if (!pretrained) {
    pretrained = await PersonalizeTask.create(BACKBONE, { onLoad: showLoad, executionProviders: executionProviders() });
  }
  for (let i = (await pretrained.classes()).length; i > 0; i--) await pretrained.removeClass(i - 1);
  for (const name of data.classes) await pretrained.addClass(name);
  const bytes = data.size * data.size * 4;
  const started = performance.now();
  for (let c = 0, done = 0; c < data.classes.length; c++) {
    const rows = data.labels.flatMap((label, i) => (label === c ? [i] : []));
    for (let k = 0; k < rows.length; k += EMBED_CHUNK) {
      const chunk = rows.slice(k, k + EMBED_CHUNK);
      const pixels = new Uint8Array(chunk.length * bytes);
      chunk.forEach((row, j) => pixels.set(data.pixels.subarray(row * bytes, (row + 1) * bytes), j * bytes));
      await pretrained.addSamples(pixels, { width: data.size, height: data.size, count: chunk.length }, c);
      done += chunk.length;
      const seconds = (performance.now() - started) / 1000;
      showStatus(`The backbone's features: ${done} of ${data.count} images (${(done / seconds).toFixed(1)} images/s)…`);
    }
  }
}

// A new run on `data` (for the CNN a new task, the one before it released); its info.
async function makeTask() {
  if (data.model === "pretrained") {
    const info = await pretrained.setup({ validation: 0.2, seed: 0, optimizer: data.optimizer || "AdamW" });
    if (task && task !== pretrained) await task.release();
    task = pretrained;
    runInfo = { ...info, images: info.samples };
    return runInfo;
  }
  const next = await ImageTask.create({ ...data, pixels: data.pixels.slice(0), optimizer: data.optimizer || "AdamW",
    executionProviders: executionProviders() });
  if (task && task !== pretrained) await task.release();
  task = next;
  return task.info();
}

async function load(found) {
  $("img-error").hidden = true;
  if (!found.length) throw new Error("the folder is empty");
  const files = await Promise.all(found.map(async ({ path, file }) => ({ path, bytes: await file.arrayBuffer() })));
  const model = $("img-model").value;
  const decoded = model === "pretrained" ? await ImageTask.decodeImages(files, BACKBONE_SIZE, { fit: "centre" })
    : await ImageTask.decodeImages(files, Number($("img-size").value));
  data = { ...decoded, model, optimizer: $("img-optimizer").value,
    name: (files[0].path.split("/").filter(Boolean)[0] || "images") };
  if (model === "pretrained") await embed();
  const info = await makeTask();
  fresh = true;
  showInfo(info);
  view.startOver();
}

const flow = {
  unit: "images",
  metric: () => "accuracy",
  metricValue: (m) => m.accuracy,
  summary: (m) => `validation accuracy ${(100 * m.accuracy).toFixed(1)}% (most common class: ${(100 * m.baseline).toFixed(1)}%)`,
  onEpoch: (m) => showConfusion(m, data.classes, "img-confusion"),
  onStop: () => showSignature(task, "img-signature"),
  train: (options) => task.train(options),
  async fresh() {
    if (!fresh || data.optimizer !== $("img-optimizer").value) {
      data.optimizer = $("img-optimizer").value;
      await makeTask();
    }
    fresh = false;
    const run = { kind: "images", name: data.name, settings: { size: data.size } };
    // the pretrained run keeps the features (the snapshot), not the pixels
    return data.model === "pretrained"
      ? { ...run, images: { ...data, pixels: null }, snapshot: await task.snapshot(), info: runInfo }
      : { ...run, images: data };
  },
};

registerRunKind("images", {
  section: "images",
  describe: (r) => `${r.name}: ${r.images.count} images in ${r.images.classes.length} classes, epoch ${r.epoch}/${r.settings.epochs}`,
  async resume(saved) {
    data = saved.images;
    $("img-optimizer").value = data.optimizer || "AdamW";
    $("img-model").value = data.model || "scratch";
    let info;
    if (data.model === "pretrained") {
      const next = await PersonalizeTask.fromSnapshot(BACKBONE, saved.snapshot.slice(0),
        { onLoad: showLoad, executionProviders: executionProviders() });
      for (const old of new Set([task, pretrained])) await old?.release();
      task = pretrained = next;
      info = saved.info;
    } else {
      info = await makeTask();
    }
    await task.restore(saved.checkpoint.slice(0), saved.bestCheckpoint?.slice(0) ?? null);
    fresh = false;
    showInfo(info);
    view.restored(saved);
    await flow.onStop();
  },
});

export function setUpImages(ready) {
  view = new TrainingView("img", flow, { epochs: 10, batch: 16, lr: 0.005, keepBest: true });
  const chosen = (list) => [...list].map((file) => ({ path: file.webkitRelativePath || file.name, file }));
  $("img-folder").addEventListener("change", (e) => ready.then(() => load(chosen(e.target.files))).catch(showError));
  const dropEntries = (entries) => ready.then(async () => load(await entryFiles(entries))).catch(showError);
  const drop = $("img-drop");
  drop.addEventListener("dragover", (e) => { e.preventDefault(); drop.classList.add("over"); });
  drop.addEventListener("dragleave", () => drop.classList.remove("over"));
  drop.addEventListener("drop", (e) => {
    e.preventDefault();
    drop.classList.remove("over");
    return dropEntries([...e.dataTransfer.items].map((item) => item.webkitGetAsEntry()).filter(Boolean));
  });
  const sizeShown = () => { $("img-size-label").style.display = $("img-model").value === "pretrained" ? "none" : ""; };
  $("img-model").addEventListener("change", sizeShown);
  sizeShown();
  $("img-try").addEventListener("change", async (e) => {
    try {
      const f = e.target.files[0];
      const file = [{ path: f.name, bytes: await f.arrayBuffer() }];
      const pretrainedRun = data.model === "pretrained";
      const decoded = await ImageTask.decodeImages(file, data.size, { fit: pretrainedRun ? "centre" : "stretch" });
      const p = pretrainedRun ? (await task.predict(decoded.pixels, { width: data.size, height: data.size })).probabilities
        : await task.predict(decoded.pixels);
      const best = p.indexOf(Math.max(...p));
      $("img-prediction").textContent = `Looks like: ${data.classes[best]} (${(100 * p[best]).toFixed(0)}%)`;
    } catch (err) { showError(err); }
  });
  downloadButton("img-download", () => `${data.name}.onnx`, () => task.exportModel(), showError);
  downloadButton("img-checkpoint", () => `${data.name}.ckpt`, () => task.checkpoint(), showError);
  downloadButton("img-artifacts", () => `${data.name}-artifacts.zip`, () => task.artifactsZip(), showError);
  return { task: () => task, dropEntries }; // dropEntries: for the test hooks, which drop a folder
}
