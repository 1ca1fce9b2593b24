// "Train on a folder of images": decode in the worker, train a small CNN, download a model that takes RGB.
import { registerRunKind } from "./runs.js";
import { showConfusion } from "./tabular.js";
import { TrainingView } from "./training_view.js";
import { $, downloadButton, errorShower } from "./ui.js";

let call = null;
let view = null;
let data = null; // the decoded images: {pixels, count, size, labels, classes, skipped}
let fresh = false; // the worker's session is untrained, just made from `data`

const showError = errorShower("img-error");

function showInfo(info) {
  $("img-info").textContent = `${info.images} images in ${info.classes.length} classes (${info.classes.join(", ")}), ` +
    `${info.train} for training and ${info.validation} for validation, ${info.size}×${info.size} pixels` +
    (data.skipped.length ? `; skipped ${data.skipped.length} files that are not images` : "") + ".";
  $("img-setup").hidden = false;
  $("img-metrics").textContent = "";
}

async function load(fileList) {
  $("img-error").hidden = true;
  const files = await Promise.all([...fileList].map(async (f) => ({ path: f.webkitRelativePath || f.name,
    bytes: await f.arrayBuffer() })));
  const result = await call("imagesLoad", { files, size: Number($("img-size").value) },
    { transfer: files.map((f) => f.bytes) });
  data = { ...result.data, name: (files[0].path.split("/").filter(Boolean)[0] || "images") };
  fresh = true;
  showInfo(result.info);
  view.startOver();
}

const flow = {
  type: "imagesTrain",
  unit: "images",
  metric: () => "accuracy",
  metricValue: (m) => m.accuracy,
  summary: (m) => `validation accuracy ${(100 * m.accuracy).toFixed(1)}% (most common class: ${(100 * m.baseline).toFixed(1)}%)`,
  onEpoch: (m) => showConfusion(m, data.classes, "img-confusion"),
  async fresh() {
    if (!fresh) await call("imagesSetup", { data: { ...data, pixels: data.pixels.slice(0) } });
    fresh = false;
    return { kind: "images", name: data.name, images: data, settings: { size: data.size } };
  },
};

registerRunKind("images", {
  section: "images",
  describe: (r) => `${r.name}: ${r.images.count} images in ${r.images.classes.length} classes, epoch ${r.epoch}/${r.settings.epochs}`,
  async resume(saved) {
    data = saved.images;
    const info = await call("imagesSetup", { data: { ...data, pixels: data.pixels.slice(0) } });
    await call("runRestore", { flow: "images", bytes: saved.checkpoint.slice(0) });
    fresh = false;
    showInfo(info);
    view.restored(saved);
  },
});

export function setUpImages(rpc, ready) {
  call = rpc;
  view = new TrainingView("img", call, flow, ["download", "checkpoint", "artifacts"]);
  $("img-folder").addEventListener("change", (e) => ready.then(() => load(e.target.files)).catch(showError));
  $("img-try").addEventListener("change", async (e) => {
    try {
      const f = e.target.files[0];
      const p = await call("imagesPredict", { file: { path: f.name, bytes: await f.arrayBuffer() } });
      const best = p.indexOf(Math.max(...p));
      $("img-prediction").textContent = `Looks like: ${data.classes[best]} (${(100 * p[best]).toFixed(0)}%)`;
    } catch (err) { showError(err); }
  });
  downloadButton("img-download", () => `${data.name}.onnx`, () => call("imagesExport"), showError);
  downloadButton("img-checkpoint", () => `${data.name}.ckpt`, () => call("runCheckpoint", { flow: "images" }), showError);
  downloadButton("img-artifacts", () => `${data.name}-artifacts.zip`, () => call("runArtifacts", { flow: "images" }), showError);
}
