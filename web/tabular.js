// The CSV flow of the page: load a file, pick the column to predict, train with a live chart, download.
import { $, download, errorShower } from "./ui.js";
import { TrainingChart } from "./chart.js";
import { deleteRun, getRun, listRuns, saveRun } from "./runs.js";

let call = null;
let chart = null;
let paused = false;
let fileName = "data.csv";
let csvBytes = null;
let run = null; // the saved run being trained

const showError = errorShower("csv-error");

function clearError() { $("csv-error").hidden = true; }

export function table(rows, header) {
  const esc = (v) => String(v).replace(/[&<>]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;" })[c]);
  const head = header ? `<tr>${header.map((h) => `<th>${esc(h)}</th>`).join("")}</tr>` : "";
  return `<table>${head}${rows.map((r) => `<tr>${r.map((c, i) => (i === 0 && !header ? `<th>${esc(c)}</th>` : `<td>${esc(c)}</td>`)).join("")}</tr>`).join("")}</table>`;
}

async function load(bytes, name) {
  clearError();
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
  $("csv-metrics").textContent = `Loaded ${name}: ${info.rows} rows. Pick the column to predict and press Train.`;
}

export function showConfusion(metrics, classes, target = "csv-confusion") {
  if (!metrics.confusion) { $(target).innerHTML = ""; return; }
  const rows = metrics.confusion.map((r, i) => [classes[i], ...r]);
  $(target).innerHTML = `<p class="metrics">Confusion matrix (rows: true class, columns: predicted)</p>` +
    table(rows, ["", ...classes]);
}

async function train() {
  clearError();
  for (const b of ["csv-train", "csv-download"]) $(b).disabled = true;
  $("csv-pause").disabled = $("csv-cancel").disabled = false;
  try {
    let setup = window.onnxtrainTabular;
    if (!paused) {
      const hidden = $("csv-hidden").value.split(/[ ,]+/).filter(Boolean).map(Number);
      setup = await call("tabularSetup", { label: $("csv-label").value, task: $("csv-task").value, hidden });
      window.onnxtrainTabular = setup;
      chart.reset(setup.task === "classification" ? "accuracy" : "mean abs. error");
      run = { id: Date.now(), name: fileName, csv: csvBytes, settings: settings(), epoch: 0 };
    }
    paused = false;
    const epochs = Number($("csv-epochs").value);
    const started = performance.now();
    let lossSum = 0, lossCount = 0;
    const result = await call("tabularTrain", { epochs, batchSize: Number($("csv-batch").value),
      lr: Number($("csv-lr").value), schedule: $("csv-schedule").value }, {
      onProgress: (p) => {
        lossSum += p.loss; lossCount += 1;
        const fraction = p.epoch / p.epochs;
        $("csv-progress").value = fraction;
        const eta = fraction > 0 ? ((performance.now() - started) / 1000) * (1 / fraction - 1) : 0;
        if (!p.metrics) return;
        chart.add(p.epoch, lossSum / lossCount, p.metrics.loss,
          setup.task === "classification" ? p.metrics.accuracy : p.metrics.mae);
        lossSum = lossCount = 0;
        const m = setup.task === "classification"
          ? `accuracy ${(100 * p.metrics.accuracy).toFixed(1)}% (always guessing the most common class: ${(100 * p.metrics.baseline).toFixed(1)}%)`
          : `mean abs. error ${p.metrics.mae.toPrecision(4)} (predicting the mean: ${p.metrics.baseline.toPrecision(4)})`;
        $("csv-metrics").textContent = `epoch ${p.epoch}/${p.epochs} · validation ${m} · ` +
          `${Math.round(p.examplesPerSecond)} examples/s · about ${Math.ceil(eta)} s left`;
        showConfusion(p.metrics, setup.classes);
        Object.assign(run, { checkpoint: p.checkpoint, epoch: p.epoch, history: { ...chart.history },
          settings: settings(), metrics: $("csv-metrics").textContent });
        saveRun(run).then(showRuns, showError);
      },
    });
    if (result.cancelled) {
      $("csv-metrics").textContent += paused ? " · paused" : " · cancelled";
    } else {
      $("csv-metrics").textContent = "Done. " + $("csv-metrics").textContent.replace(/ · about \d+ s left/, "");
    }
    $("csv-download").disabled = false;
    $("csv-try").hidden = false;
  } catch (err) {
    showError(err);
    paused = false;
  } finally {
    $("csv-train").disabled = false;
    $("csv-train").textContent = paused ? "Resume" : "Train";
    $("csv-pause").disabled = $("csv-cancel").disabled = true;
  }
}

function settings() {
  return { label: $("csv-label").value, task: $("csv-task").value, hidden: $("csv-hidden").value,
    epochs: $("csv-epochs").value, batch: $("csv-batch").value, lr: $("csv-lr").value,
    schedule: $("csv-schedule").value };
}

async function showRuns() {
  const runs = await listRuns();
  $("runs").hidden = runs.length === 0;
  $("runs-list").innerHTML = "";
  for (const r of runs) {
    const li = document.createElement("li");
    const text = document.createElement("span");
    text.textContent = `${r.name}: predict ${r.settings.label}, epoch ${r.epoch}/${r.settings.epochs}, ` +
      `saved ${new Date(r.id).toLocaleString()}`;
    const resume = Object.assign(document.createElement("button"), { textContent: "Resume", className: "secondary" });
    resume.onclick = () => resumeRun(r.id).catch(showError);
    const remove = Object.assign(document.createElement("button"), { textContent: "Delete", className: "secondary" });
    remove.onclick = async () => { await deleteRun(r.id); showRuns(); };
    li.append(text, resume, remove);
    $("runs-list").append(li);
  }
}

async function resumeRun(id) {
  const saved = await getRun(id);
  await load(saved.csv.slice(0), saved.name);
  const s = saved.settings;
  for (const [key, field] of [["label", "csv-label"], ["task", "csv-task"], ["hidden", "csv-hidden"],
    ["epochs", "csv-epochs"], ["batch", "csv-batch"], ["lr", "csv-lr"], ["schedule", "csv-schedule"]]) {
    $(field).value = s[key];
  }
  const hidden = s.hidden.split(/[ ,]+/).filter(Boolean).map(Number);
  window.onnxtrainTabular = await call("tabularSetup", { label: s.label, task: s.task, hidden });
  await call("tabularRestore", { bytes: saved.checkpoint.slice(0) });
  chart.reset(s.task === "classification" ? "accuracy" : "mean abs. error", saved.history);
  run = saved;
  paused = true;
  $("csv-train").textContent = "Resume";
  $("csv-metrics").textContent = `Restored ${saved.name} at epoch ${saved.epoch}. ${saved.metrics || ""}`;
}

export function setUpTabular(rpc, ready) {
  call = rpc;
  chart = new TrainingChart($("csv-chart"));
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
  $("csv-label").onchange = async () => { $("csv-task").value = await call("tabularDetect", { label: $("csv-label").value }); paused = false; $("csv-train").textContent = "Train"; };
  $("csv-train").onclick = train;
  $("csv-pause").onclick = () => { paused = true; call("cancel"); };
  $("csv-cancel").onclick = () => { paused = false; call("cancel"); };
  $("csv-try-file").addEventListener("change", async (e) => {
    try {
      const r = await call("tabularPredictCsv", { bytes: await e.target.files[0].arrayBuffer() });
      const rows = r.rows.map((row, i) => [r.predictions[i] + (r.confidence ? ` (${(100 * r.confidence[i]).toFixed(0)}%)` : ""), ...row]);
      $("csv-try-result").innerHTML = table(rows, ["prediction", ...r.header]);
    } catch (err) { showError(err); }
  });
  $("csv-download").onclick = async () => download(await call("tabularExport"), fileName.replace(/\.csv$/i, "") + ".onnx");
  ready.then(() => { $("csv-sample").disabled = false; });
  showRuns().catch(showError);
}
