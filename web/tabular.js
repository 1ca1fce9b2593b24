// The CSV flow of the page: load a file, pick the column to predict, train with a live chart, download.
import { registerRunKind } from "./runs.js";
import { TrainingView } from "./training_view.js";
import { $, downloadButton, errorShower, showSignature } from "./ui.js";

let call = null;
let view = null;
let fileName = "data.csv";
let csvBytes = null;
let setup = null; // the worker's answer to tabularSetup: task, classes, ...

const showError = errorShower("csv-error");

export function table(rows, header) {
  const esc = (v) => String(v).replace(/[&<>]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;" })[c]);
  const head = header ? `<tr>${header.map((h) => `<th>${esc(h)}</th>`).join("")}</tr>` : "";
  return `<table>${head}${rows.map((r) => `<tr>${r.map((c, i) => (i === 0 && !header ? `<th>${esc(c)}</th>` : `<td>${esc(c)}</td>`)).join("")}</tr>`).join("")}</table>`;
}

export function showConfusion(metrics, classes, target) {
  if (!metrics.confusion) { $(target).innerHTML = ""; return; }
  const rows = metrics.confusion.map((r, i) => [classes[i], ...r]);
  $(target).innerHTML = `<p class="metrics">Confusion matrix (rows: true class, columns: predicted)</p>` +
    table(rows, ["", ...classes]);
}

async function load(bytes, name) {
  $("csv-error").hidden = true;
  fileName = name;
  csvBytes = bytes.slice(0);
  const info = await call("tabularLoad", { bytes, name }, { transfer: [bytes] });
  const label = $("csv-label");
  label.innerHTML = info.columns.map((c) => `<option>${c.name}</option>`).join("");
  label.value = info.suggested_label;
  $("csv-task").value = info.task;
  const missing = info.columns.filter((c) => c.missing).map((c) => `${c.name} (${c.missing})`);
  $("csv-info").textContent = `${info.rows} rows, ${info.columns.length} columns; ` +
    `text columns (one-hot encoded): ${info.columns.filter((c) => c.kind === "categorical").map((c) => c.name).join(", ") || "none"}; ` +
    `missing values (filled with the column mean or left as no category): ${missing.join(", ") || "none"}.`;
  $("csv-preview").innerHTML = table(info.preview, info.columns.map((c) => c.name));
  $("csv-setup").hidden = false;
  view.startOver();
  $("csv-metrics").textContent = `Loaded ${name}: ${info.rows} rows. Pick the column to predict and press Train.`;
}

function modelSettings() {
  return { label: $("csv-label").value, task: $("csv-task").value, hidden: $("csv-hidden").value,
    optimizer: $("csv-optimizer").value };
}

async function setUpModel(s) {
  const hidden = s.hidden.split(/[ ,]+/).filter(Boolean).map(Number);
  setup = await call("tabularSetup", { label: s.label, task: s.task, hidden, optimizer: s.optimizer || "AdamW" });
  window.onnxtrainTabular = setup;
}

const isClassification = () => (setup ? setup.task : $("csv-task").value) === "classification";

const flow = {
  type: "tabularTrain",
  metric: () => (isClassification() ? "accuracy" : "mean abs. error"),
  metricValue: (m) => (isClassification() ? m.accuracy : m.mae),
  summary: (m) => "validation " + (isClassification()
    ? `accuracy ${(100 * m.accuracy).toFixed(1)}% (always guessing the most common class: ${(100 * m.baseline).toFixed(1)}%)`
    : `mean abs. error ${m.mae.toPrecision(4)} (predicting the mean: ${m.baseline.toPrecision(4)})`),
  onEpoch: (m) => showConfusion(m, setup.classes, "csv-confusion"),
  onStop: () => {
    $("csv-try").hidden = false;
    return showSignature(call, "csv", "csv-signature");
  },
  async fresh() {
    const settings = modelSettings();
    await setUpModel(settings);
    return { kind: "csv", name: fileName, csv: csvBytes, settings };
  },
};

registerRunKind("csv", {
  section: "csv",
  describe: (r) => `${r.name}: predict ${r.settings.label}, epoch ${r.epoch}/${r.settings.epochs}`,
  async resume(saved) {
    await load(saved.csv.slice(0), saved.name);
    for (const key of ["label", "task", "hidden"]) $(`csv-${key}`).value = saved.settings[key];
    $("csv-optimizer").value = saved.settings.optimizer || "AdamW";
    await setUpModel(saved.settings);
    await call("runRestore", { flow: "csv", bytes: saved.checkpoint.slice(0) });
    view.restored(saved);
    await flow.onStop();
  },
});

export function setUpTabular(rpc, ready) {
  call = rpc;
  view = new TrainingView("csv", call, flow, ["download", "checkpoint", "artifacts"]);
  const drop = $("drop");
  drop.addEventListener("dragover", (e) => { e.preventDefault(); drop.classList.add("over"); });
  drop.addEventListener("dragleave", () => drop.classList.remove("over"));
  drop.addEventListener("drop", async (e) => {
    e.preventDefault();
    drop.classList.remove("over");
    const file = e.dataTransfer.files[0];
    if (file) await load(await file.arrayBuffer(), file.name).catch(showError);
  });
  $("csv-file").addEventListener("change", async (e) => {
    const file = e.target.files[0];
    if (file) await load(await file.arrayBuffer(), file.name).catch(showError);
  });
  $("csv-sample").onclick = async () => load(await (await fetch("samples/wine.csv")).arrayBuffer(), "wine.csv").catch(showError);
  $("csv-label").onchange = async () => {
    $("csv-task").value = await call("tabularDetect", { label: $("csv-label").value });
    view.startOver();
  };
  for (const id of ["csv-task", "csv-hidden", "csv-optimizer"]) $(id).addEventListener("change", () => view.startOver());
  $("csv-try-file").addEventListener("change", async (e) => {
    try {
      const r = await call("tabularPredictCsv", { bytes: await e.target.files[0].arrayBuffer() });
      const rows = r.rows.map((row, i) => [r.predictions[i] + (r.confidence ? ` (${(100 * r.confidence[i]).toFixed(0)}%)` : ""), ...row]);
      $("csv-try-result").innerHTML = table(rows, ["prediction", ...r.header]);
    } catch (err) { showError(err); }
  });
  const base = () => fileName.replace(/\.csv$/i, "");
  downloadButton("csv-download", () => base() + ".onnx", () => call("tabularExport"), showError);
  downloadButton("csv-checkpoint", () => base() + ".ckpt", () => call("runCheckpoint", { flow: "csv" }), showError);
  downloadButton("csv-artifacts", () => base() + "-artifacts.zip", () => call("runArtifacts", { flow: "csv" }), showError);
  ready.then(() => { $("csv-sample").disabled = false; });
}
