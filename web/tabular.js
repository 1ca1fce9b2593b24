// The CSV flow of the page: load a file, pick the column to predict, train with a live chart, download.
import { executionProviders } from "./compute.js";
import { TabularTask } from "./lib/onnxtrain.mjs";
import { registerRunKind } from "./runs.js";
import { TrainingView } from "./training_view.js";
import { $, downloadButton, element, errorShower, showConfusion, showSignature, tableOf } from "./ui.js";

let view = null;
let task = null; // the library's TabularTask of the file
let fileName = "data.csv";
let csvBytes = null;
let setup = null; // the task's setup(): task, classes, ...
let loaded = null; // the task's describe(): rows, columns (name, kind, missing, nonfinite), preview

const showError = errorShower("csv-error");

const count = (n) => n.toLocaleString("en-US");
const listed = (columns, key) => columns.filter((c) => c[key]).map((c) => `${c.name} (${count(c[key])})`).join(", ") || "none";

// What the file holds, for the chosen label: the label column is predicted, not one-hot encoded or filled in.
function showInfo() {
  const label = $("csv-label").value;
  const features = loaded.columns.filter((c) => c.name !== label);
  const text = features.filter((c) => c.kind === "categorical").map((c) => c.name);
  const labelColumn = loaded.columns.find((c) => c.name === label);
  const lines = [`${count(loaded.rows)} rows, ${loaded.columns.length} columns; predicting ${label}`,
    `text columns (one-hot encoded): ${text.join(", ") || "none"}`,
    `missing values (filled with the column mean or left as no category): ${listed(features, "missing")}`];
  if (features.some((c) => c.nonfinite)) {
    lines.push(`values that are not finite numbers (inf, NaN or too large; treated as missing): ${listed(features, "nonfinite")}`);
  }
  // a regression drops rows whose label is missing or not finite; a classifier, rows whose label is missing
  const regression = $("csv-task").value === "regression";
  const unlabelled = labelColumn ? (labelColumn.missing || 0) + (regression ? labelColumn.nonfinite || 0 : 0) : 0;
  if (unlabelled) lines.push(`${count(unlabelled)} rows without a usable ${label} value are left out`);
  $("csv-info").textContent = lines.join("; ") + ".";
}

async function load(bytes, name) {
  $("csv-error").hidden = true;
  fileName = name;
  csvBytes = bytes.slice(0);
  const next = await TabularTask.create(bytes, name, { executionProviders: executionProviders() });
  if (task) await task.release();
  task = next;
  const info = await task.describe();
  loaded = info;
  $("csv-label").replaceChildren(...info.columns.map((c) => new Option(c.name, c.name)));
  $("csv-label").value = info.suggestedLabel;
  $("csv-task").value = info.task;
  showInfo();
  $("csv-preview").replaceChildren(tableOf(info.preview, info.columns.map((c) => c.name)));
  $("csv-setup").hidden = false;
  $("csv-try").hidden = true;
  $("csv-try-result").replaceChildren();
  view.startOver();
  $("csv-metrics").textContent = `Loaded ${name}: ${count(info.rows)} rows. Pick the column to predict and press Train.`;
}

// "Try it": one page of predictions for another CSV file, the true label beside each when the file has it.
const PAGE = 100;
let tryBytes = null;

function tryTable(r) {
  const j = r.labels ? r.header.indexOf(r.label) : -1;
  const rest = (row) => row.filter((_, k) => k !== j);
  const classification = r.confidence !== null && r.confidence !== undefined;
  const shown = (v) => (typeof v === "number" ? v.toPrecision(4) : v);
  const rows = r.rows.map((row, i) => {
    const prediction = shown(r.predictions[i]) + (classification ? ` (${(100 * r.confidence[i]).toFixed(0)}%)` : "");
    if (!r.labels) return [prediction, ...rest(row)];
    const truth = String(r.labels[i] ?? "");
    const check = truth === "" ? "" : classification ? (truth === String(r.predictions[i]) ? "yes" : "no")
      : Number.isFinite(Number(truth)) ? Math.abs(Number(truth) - r.predictions[i]).toPrecision(3) : "";
    return [prediction, truth, check, ...rest(row)];
  });
  const header = r.labels ? ["prediction", `true ${r.label}`, classification ? "right?" : "abs. error", ...rest(r.header)]
    : ["prediction", ...r.header];
  return tableOf(rows, header);
}

async function showTry(offset) {
  const r = await task.predictCsv(tryBytes.slice(0), { offset, limit: PAGE });
  const total = r.total ?? r.rows.length;
  const start = r.offset ?? 0;
  let text = total ? `rows ${count(start + 1)}–${count(start + r.rows.length)} of ${count(total)}` : "no rows";
  const everyRow = r.labelled === total || r.labelled === undefined || r.labelled === null;
  const over = everyRow ? `all ${count(total)} rows` : `the ${count(r.labelled)} labelled rows`;
  if (r.accuracy !== null && r.accuracy !== undefined) text += ` · accuracy over ${over}: ${(100 * r.accuracy).toFixed(1)}%`;
  if (r.mae !== null && r.mae !== undefined) text += ` · mean abs. error over ${over}: ${r.mae.toPrecision(4)}`;
  const previous = element("button", { className: "secondary", textContent: "Previous", disabled: start === 0, id: "csv-try-previous" });
  const next = element("button", { className: "secondary", textContent: "Next", disabled: start + r.rows.length >= total, id: "csv-try-next" });
  previous.onclick = () => showTry(Math.max(0, start - PAGE)).catch(showError);
  next.onclick = () => showTry(start + PAGE).catch(showError);
  $("csv-try-result").replaceChildren(element("div", { className: "row" }, element("span", { id: "csv-try-status", textContent: text }),
    previous, next), element("div", { className: "table-scroll" }, tryTable(r)));
}

function modelSettings() {
  return { label: $("csv-label").value, task: $("csv-task").value, hidden: $("csv-hidden").value,
    optimizer: $("csv-optimizer").value };
}

async function setUpModel(s) {
  const hidden = s.hidden.split(/[ ,]+/).filter(Boolean).map(Number);
  setup = await task.setup({ label: s.label, task: s.task, hidden, optimizer: s.optimizer || "AdamW" });
}

const isClassification = () => (setup ? setup.task : $("csv-task").value) === "classification";

const flow = {
  train: (options) => task.train(options),
  metric: () => (isClassification() ? "accuracy" : "mean abs. error"),
  metricValue: (m) => (isClassification() ? m.accuracy : m.mae),
  summary: (m) => "validation " + (isClassification()
    ? `accuracy ${(100 * m.accuracy).toFixed(1)}% (always guessing the most common class: ${(100 * m.baseline).toFixed(1)}%)`
    : `mean abs. error ${m.mae.toPrecision(4)} (predicting the mean: ${m.baseline.toPrecision(4)})`),
  onEpoch: (m) => showConfusion(m, setup.classes, "csv-confusion"),
  onStop: () => {
    $("csv-try").hidden = false;
    return showSignature(task, "csv-signature");
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
    showInfo();
    await setUpModel(saved.settings);
    await task.restore(saved.checkpoint.slice(0), saved.bestCheckpoint?.slice(0) ?? null);
    view.restored(saved);
    await flow.onStop();
  },
});

export function setUpTabular(ready) {
  view = new TrainingView("csv", flow, { epochs: 30, batch: 32, lr: 0.01, keepBest: true });
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
    $("csv-task").value = await task.detectTask($("csv-label").value);
    showInfo();
    view.startOver();
  };
  for (const id of ["csv-task", "csv-hidden", "csv-optimizer"]) $(id).addEventListener("change", () => view.startOver());
  $("csv-task").addEventListener("change", showInfo);
  $("csv-try-file").addEventListener("change", async (e) => {
    try {
      $("csv-error").hidden = true;
      tryBytes = await e.target.files[0].arrayBuffer();
      await showTry(0);
    } catch (err) { showError(err); }
  });
  const base = () => fileName.replace(/\.csv$/i, "");
  downloadButton("csv-download", () => base() + ".onnx", () => task.exportModel(), showError);
  downloadButton("csv-checkpoint", () => base() + ".ckpt", () => task.checkpoint(), showError);
  downloadButton("csv-artifacts", () => base() + "-artifacts.zip", () => task.artifactsZip(), showError);
  ready.then(() => { $("csv-sample").disabled = false; });
  return { task: () => task, setup: () => setup }; // the setup: for the test hooks
}
