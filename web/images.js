// "Train on a folder of images": decode in the page, train a small CNN, download a model that takes RGB.
import { ImageTask } from "./onnxtrain/onnxtrain.mjs";
import { registerRunKind } from "./runs.js";
import { showConfusion } from "./tabular.js";
import { TrainingView } from "./training_view.js";
import { $, downloadButton, errorShower, showSignature } from "./ui.js";

let view = null;
let task = null; // the library's ImageTask of `data`
let data = null; // the decoded images: {pixels, count, size, labels, classes, skipped, optimizer, name}
let fresh = false; // the task is untrained, just made from `data`

const showError = errorShower("img-error");

function skippedText(skipped) {
  if (!skipped.length) return "";
  const what = skipped.length === 1 ? "file that is not an image" : "files that are not images";
  return `; skipped ${skipped.length} ${what}: ${skipped.slice(0, 3).join(", ")}${skipped.length > 3 ? ", …" : ""}`;
}

function showInfo(info) {
  $("img-info").textContent = `${info.images} images in ${info.classes.length} classes (${info.classes.join(", ")}), ` +
    `${info.train} for training and ${info.validation} for validation, ${info.size}×${info.size} pixels` +
    `${skippedText(data.skipped)}.`;
  $("img-setup").hidden = false;
  $("img-metrics").textContent = "";
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

// A new task of `data` (the one before it released); its info.
async function makeTask() {
  const next = await ImageTask.create({ ...data, pixels: data.pixels.slice(0), optimizer: data.optimizer || "AdamW" });
  if (task) await task.release();
  task = next;
  return task.info();
}

async function load(found) {
  $("img-error").hidden = true;
  if (!found.length) throw new Error("the folder is empty");
  const files = await Promise.all(found.map(async ({ path, file }) => ({ path, bytes: await file.arrayBuffer() })));
  const decoded = await ImageTask.decodeImages(files, Number($("img-size").value));
  if (decoded.count === 0) throw new Error(`none of the ${files.length} files is an image`);
  data = { ...decoded, optimizer: $("img-optimizer").value,
    name: (files[0].path.split("/").filter(Boolean)[0] || "images") };
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
    return { kind: "images", name: data.name, images: data, settings: { size: data.size } };
  },
};

registerRunKind("images", {
  section: "images",
  describe: (r) => `${r.name}: ${r.images.count} images in ${r.images.classes.length} classes, epoch ${r.epoch}/${r.settings.epochs}`,
  async resume(saved) {
    data = saved.images;
    $("img-optimizer").value = data.optimizer || "AdamW";
    const info = await makeTask();
    await task.restore(saved.checkpoint.slice(0), saved.bestCheckpoint?.slice(0) ?? null);
    fresh = false;
    showInfo(info);
    view.restored(saved);
    await flow.onStop();
  },
});

export function setUpImages(ready) {
  view = new TrainingView("img", flow, ["download", "checkpoint", "artifacts"]);
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
  window.onnxtrainImages = { dropEntries };
  $("img-try").addEventListener("change", async (e) => {
    try {
      const f = e.target.files[0];
      const decoded = await ImageTask.decodeImages([{ path: f.name, bytes: await f.arrayBuffer() }], data.size);
      if (decoded.count === 0) throw new Error(`${f.name} is not an image`);
      const p = await task.predict(decoded.pixels);
      const best = p.indexOf(Math.max(...p));
      $("img-prediction").textContent = `Looks like: ${data.classes[best]} (${(100 * p[best]).toFixed(0)}%)`;
    } catch (err) { showError(err); }
  });
  downloadButton("img-download", () => `${data.name}.onnx`, () => task.exportModel(), showError);
  downloadButton("img-checkpoint", () => `${data.name}.ckpt`, () => task.checkpoint(), showError);
  downloadButton("img-artifacts", () => `${data.name}-artifacts.zip`, () => task.artifactsZip(), showError);
  return () => task;
}
