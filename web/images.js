// "Train on a folder of images": decode in the worker, train a small CNN, download a model that takes RGB.
import { TrainingChart } from "./chart.js";
import { $, download, errorShower } from "./ui.js";
import { showConfusion } from "./tabular.js";

let call = null;
let chart = null;
let lossSum = 0;
let lossCount = 0;
let classes = [];

const showError = errorShower("img-error");

async function load(fileList) {
  $("img-error").hidden = true;
  const files = await Promise.all([...fileList].map(async (f) => ({ path: f.webkitRelativePath || f.name,
    bytes: await f.arrayBuffer() })));
  const info = await call("imagesLoad", { files, size: Number($("img-size").value) },
    { transfer: files.map((f) => f.bytes) });
  classes = info.classes;
  $("img-info").textContent = `${info.images} images in ${info.classes.length} classes (${info.classes.join(", ")}), ` +
    `${info.train} for training and ${info.validation} for validation, ${info.size}×${info.size} pixels` +
    (info.skipped.length ? `; skipped ${info.skipped.length} files that are not images` : "") + ".";
  $("img-setup").hidden = false;
  $("img-metrics").textContent = "";
  $("img-train").textContent = "Train";
  chart.reset();
}

async function train() {
  $("img-error").hidden = true;
  $("img-train").disabled = true;
  $("img-pause").disabled = false;
  try {
    const epochs = Number($("img-epochs").value);
    const result = await call("imagesTrain", { epochs, batchSize: Number($("img-batch").value),
      lr: Number($("img-lr").value), schedule: $("img-schedule").value }, {
      onProgress: (p) => {
        $("img-progress").value = p.epoch / p.epochs;
        lossSum += p.loss; lossCount += 1;
        if (!p.metrics) return;
        chart.add(p.epoch, lossSum / lossCount, p.metrics.loss, p.metrics.accuracy);
        lossSum = lossCount = 0;
        $("img-metrics").textContent = `epoch ${p.epoch}/${p.epochs} · validation accuracy ` +
          `${(100 * p.metrics.accuracy).toFixed(1)}% (most common class: ${(100 * p.metrics.baseline).toFixed(1)}%) · ` +
          `${Math.round(p.examplesPerSecond)} images/s`;
        showConfusion(p.metrics, classes, "img-confusion");
      },
    });
    $("img-metrics").textContent = (result.cancelled ? "Paused. " : "Done. ") + $("img-metrics").textContent;
    $("img-train").textContent = result.cancelled ? "Resume" : "Train";
    $("img-download").disabled = false;
  } catch (err) {
    showError(err);
  } finally {
    $("img-train").disabled = false;
    $("img-pause").disabled = true;
  }
}

export function setUpImages(rpc, ready) {
  call = rpc;
  chart = new TrainingChart($("img-chart"), "accuracy");
  $("img-folder").addEventListener("change", (e) => ready.then(() => load(e.target.files)).catch(showError));
  $("img-train").onclick = train;
  $("img-pause").onclick = () => call("cancel");
  $("img-try").addEventListener("change", async (e) => {
    try {
      const f = e.target.files[0];
      const p = await call("imagesPredict", { file: { path: f.name, bytes: await f.arrayBuffer() } });
      const best = p.indexOf(Math.max(...p));
      $("img-prediction").textContent = `Looks like: ${classes[best]} (${(100 * p[best]).toFixed(0)}%)`;
    } catch (err) { showError(err); }
  });
  $("img-download").onclick = async () => download(await call("imagesExport"), "images.onnx");
}
