// "Join a federation": this page as one client of a Flower federation that `python3 build.py serve --federate`
// (or `python -m onnxtrain federate`) runs on this site's server.  The page trains the federation's model on the
// user's own CSV file or folder of images; only parameter vectors go to the server (the library's Federation).
import { Federation, ImageTask, Tensor } from "./lib/onnxtrain.mjs";
import uPlot from "./vendor/uPlot.esm.js";
import { $, element, errorShower, tableOf } from "./ui.js";

let ready = null; // the engine's start
let fed = null; // the library's Federation, once fed/info answered
let connecting = null;
let session = null; // the federation's TrainingSession in the engine
let data = null; // {dataset, rows, name, line}: the user's data as the session's training inputs
let joined = null; // AbortController of the running join()
let rounds = new Map(); // round -> {local, phase, error}: what this page did
let history = []; // fed/status's history: the federation's rounds
let chart = null;

const showError = errorShower("fed-error");
const percent = (v) => (v === null || v === undefined ? "–" : `${(100 * v).toFixed(1)}%`);
const number = (v) => (v === null || v === undefined ? "–" : v.toPrecision(4));

function clearError() { $("fed-error").hidden = true; }

// ---- the federation ---------------------------------------------------------------------------------------------

function showNone(err) {
  $("fed-setup").hidden = true;
  const command = element("code", { textContent: "python3 build.py serve --federate" });
  $("fed-none").replaceChildren(
    element("span", { textContent: "No federation is running on this site's server. To start one, run " }), command,
    element("span", { textContent: " in onnxtrain's folder (or `python -m onnxtrain federate --artifacts DIR`) " +
      "and open the address it prints; other browsers join from the same address." }),
    element("span", { className: "fed-detail", textContent: ` (${String(err.message || err)})` }));
  $("fed-none").hidden = false;
  $("fed-retry").hidden = false;
}

function describeInfo(info) {
  const parts = [`Model: ${info.model} (${info.parameters.toLocaleString("en-US")} parameters)`,
    `strategy ${info.strategy}`, `${info.rounds} rounds`, `at least ${info.minClients} clients`,
    `each round ${info.localEpochs} local epoch${info.localEpochs === 1 ? "" : "s"} ` +
      `(batch ${info.batchSize}, learning rate ${info.learningRate})`];
  if (info.dp) {
    parts.push(`server-side differential privacy (noise ${info.dp.noiseMultiplier}, clipping ${info.dp.clippingNorm})`);
  }
  return parts.join(" · ") + ".";
}

function describeInputs(info) {
  const inputs = Object.entries(info.inputs || {})
    .map(([name, [dims, type]]) => `${name} ${type} [${dims.join(", ")}]`);
  const image = info.image
    ? ` Or a folder of images: one subfolder per class (${info.image.classes.join(", ")}), each image scaled to ` +
      `${info.image.size}×${info.image.size}.` : "";
  return `Your data: a CSV file of numbers, one row per example, the label in the column named like the labels ` +
    `input (the model takes ${inputs.join(", ")}).${image}`;
}

async function connect() {
  clearError();
  $("fed-none").hidden = true;
  $("fed-retry").hidden = true;
  $("fed-looking").hidden = false;
  try {
    fed = await Federation.connect("fed/");
  } catch (err) {
    showNone(err);
    return;
  } finally {
    $("fed-looking").hidden = true;
  }
  $("fed-model").textContent = describeInfo(fed.info);
  $("fed-inputs").textContent = describeInputs(fed.info);
  $("fed-folder-label").hidden = !fed.info.image;
  $("fed-global").href = fed.globalModelUrl;
  $("fed-setup").hidden = false;
  showStatus(await fed.status().catch(() => null));
}

// ---- the user's data --------------------------------------------------------------------------------------------

async function federationSession() {
  await ready;
  if (!session) session = await fed.session();
  return session;
}

function classCounts(labels, classes) {
  const counts = new Map();
  for (const label of labels) counts.set(Number(label), (counts.get(Number(label)) || 0) + 1);
  return [...counts.entries()].sort((a, b) => a[0] - b[0])
    .map(([label, n]) => `${classes ? classes[label] : label}: ${n}`).join(", ");
}

async function loadCsv(file) {
  clearError();
  setData(null);
  const s = await federationSession();
  const bytes = await file.arrayBuffer();
  const read = await s.readDataset(bytes, file.name);
  const labels = Object.values(read.dataset).find((t) => t.type === "int64");
  const counts = labels ? ` (examples per class: ${classCounts(labels.data, null)})` : "";
  setData({ dataset: read.dataset, rows: read.rows, name: file.name,
    line: `${file.name}: ${read.rows.toLocaleString("en-US")} rows${counts}. They stay in this page.` });
}

// The training inputs from decoded images: channel-first values / 255 (one channel: the mean of red, green and
// blue), labels by the federation's class list.
function imageDataset(decoded, image, inputs) {
  const { size, channels, classes } = image;
  const [featureName, [featureDims]] = Object.entries(inputs).find(([, [, type]]) => type === "float32");
  const [labelName] = Object.entries(inputs).find(([, [, type]]) => type === "int64");
  const keep = [];
  const skipped = new Set();
  decoded.labels.forEach((label, i) => {
    const name = decoded.classes[label];
    if (classes.includes(name)) keep.push(i); else skipped.add(name);
  });
  const per = channels * size * size;
  const x = new Float32Array(keep.length * per);
  const y = new BigInt64Array(keep.length);
  keep.forEach((i, k) => {
    const rgba = decoded.pixels.subarray(i * size * size * 4, (i + 1) * size * size * 4);
    for (let p = 0; p < size * size; p++) {
      if (channels === 1) {
        x[k * per + p] = (rgba[4 * p] + rgba[4 * p + 1] + rgba[4 * p + 2]) / (3 * 255);
      } else {
        for (let c = 0; c < channels; c++) x[k * per + c * size * size + p] = rgba[4 * p + c] / 255;
      }
    }
    y[k] = BigInt(classes.indexOf(decoded.classes[decoded.labels[i]]));
  });
  const rest = featureDims.slice(1);
  const dims = rest.length === 1 ? [keep.length, per] : [keep.length, channels, size, size];
  if (rest.every((d) => typeof d === "number") && rest.reduce((n, d) => n * d, 1) !== per) {
    throw new Error(`the model's input ${featureName} takes [${rest}] per example, not ${channels}×${size}×${size}`);
  }
  const dataset = { [featureName]: new Tensor("float32", x, dims), [labelName]: new Tensor("int64", y, [keep.length]) };
  return { dataset, rows: keep.length, labels: y, skipped: [...skipped].sort() };
}

async function loadFolder(list) {
  clearError();
  setData(null);
  const files = await Promise.all([...list].map(async (f) => ({ path: f.webkitRelativePath || f.name,
    bytes: await f.arrayBuffer() })));
  if (!files.length) throw new Error("the folder is empty");
  await federationSession();
  const image = fed.info.image;
  const decoded = await ImageTask.decodeImages(files, image.size);
  const made = imageDataset(decoded, image, fed.info.inputs);
  const lines = [];
  if (made.skipped.length) {
    lines.push(`skipped the folders that are not classes of this federation: ${made.skipped.join(", ")}`);
  }
  const notImages = decoded.skipped.length;
  if (notImages) {
    lines.push(`skipped ${notImages} ${notImages === 1 ? "file that is not an image" : "files that are not images"}`);
  }
  if (!made.rows) throw new Error(`none of the images is in a folder named like a class (${image.classes.join(", ")})`);
  const name = files[0].path.split("/").filter(Boolean)[0] || "images";
  setData({ dataset: made.dataset, rows: made.rows, name,
    line: `${name}: ${made.rows} images (per class: ${classCounts(made.labels, image.classes)})` +
      `${lines.length ? "; " + lines.join("; ") : ""}. They stay in this page.` });
}

function setData(next) {
  data = next;
  $("fed-data").textContent = next ? next.line : "";
  $("fed-join").disabled = !next || joined !== null;
}

// ---- taking part ------------------------------------------------------------------------------------------------

function showStatus(status) {
  if (!status) return;
  // round 0: the initial global model, where the server has held-out data to measure it on
  const initial = status.initial ? [{ round: 0, global: status.initial, results: null }] : [];
  history = [...initial, ...(status.history || [])];
  const phases = { waiting: "waiting for clients", running: "running", done: "finished", failed: "failed" };
  const round = status.round ? `round ${status.round} of ${status.rounds}` : `${status.rounds} rounds`;
  $("fed-clients").textContent = `Federation: ${phases[status.phase] || status.phase}, ${round} · ` +
    `${status.clients} page${status.clients === 1 ? "" : "s"} connected, ${status.nodes} Flower ` +
    `node${status.nodes === 1 ? "" : "s"}${status.error ? ` · ${status.error}` : ""}`;
  $("fed-clients").dataset.phase = status.phase;
  $("fed-global").dataset.round = String(history.length ? history[history.length - 1].round : 0);
  showRounds();
}

function onRound(report) {
  rounds.set(report.round, report);
  const what = {
    training: "the global model arrived: training on your data…",
    sent: `sent (on your data: global model ${percent(report.local?.globalAccuracy)}, after local training ` +
      `${percent(report.local?.accuracy)})`,
    rejected: `the server rejected this page's update: ${report.error}`,
    failed: `a local step failed, nothing was sent for this round: ${report.error}`,
  }[report.phase];
  $("fed-round").textContent = `Round ${report.round}: ${what}`;
  $("fed-round").dataset.phase = report.phase;
  $("fed-round").dataset.round = String(report.round);
  showRounds();
}

function showRounds() {
  const all = new Set([...history.map((h) => h.round), ...rounds.keys()]);
  const order = [...all].sort((a, b) => a - b);
  const byRound = new Map(history.map((h) => [h.round, h]));
  const outcome = (h) => (h && h.results !== null
    ? `${h.results} / ${h.failures}${h.rejected?.length ? ` / ${h.rejected.length} rejected` : ""}` : "–");
  const rows = order.map((r) => {
    const h = byRound.get(r), mine = rounds.get(r);
    return [r === 0 ? "0 (start)" : r, percent(h?.global?.accuracy), number(h?.global?.loss),
      percent(mine?.local?.globalAccuracy), percent(mine?.local?.accuracy), number(mine?.local?.loss),
      mine ? mine.phase : "–", outcome(h)];
  });
  $("fed-table").replaceChildren(rows.length ? tableOf(rows, ["round", "global accuracy (server's test set)",
    "global loss", "global model on your data", "after local training", "local loss", "this page",
    "results / failures"]) : "");
  drawChart(order, byRound);
}

function drawChart(order, byRound) {
  const element_ = $("fed-chart");
  if (!order.length) {
    chart?.destroy();
    chart = null;
    return;
  }
  const value = (v) => (v === null || v === undefined ? null : v);
  const mine = (key) => order.map((r) => value(rounds.get(r)?.local?.[key]));
  const data = [order, order.map((r) => value(byRound.get(r)?.global?.accuracy)), mine("globalAccuracy"),
    mine("accuracy")];
  element_.dataset.rounds = String(order.length);
  if (chart) {
    chart.setData(data);
    chart.setLegend({ idx: null });
    return;
  }
  // the legend: the hovered round's values, else the last round's
  const shown = (u, v, series, index) => {
    const value_ = index === null || index === undefined ? u.data[series].at(-1) : v;
    return value_ === null || value_ === undefined ? "–" : `${(100 * value_).toFixed(1)}%`;
  };
  chart = new uPlot({
    width: Math.min(element_.clientWidth || 600, 720), height: 220,
    series: [{ label: "round", value: (u, v, series, index) => String(index === null || index === undefined
      ? u.data[0].at(-1) : v) },
      { label: "global (server's test set)", stroke: "#2857d8", value: shown },
      { label: "global on your data", stroke: "#d8572a", value: shown },
      { label: "after local training", stroke: "#2a9d5c", value: shown }],
    axes: [{ label: "round", incrs: [1, 2, 5, 10, 20, 50, 100] },
      { label: "accuracy", values: (u, ticks) => ticks.map((t) => `${Math.round(100 * t)}%`) }],
    scales: { x: { time: false }, y: { range: [0, 1] } },
  }, data, element_);
  chart.setLegend({ idx: null });
}

async function join() {
  clearError();
  rounds = new Map();
  joined = new AbortController();
  $("fed-join").disabled = true;
  $("fed-leave").disabled = false;
  for (const id of ["fed-csv", "fed-folder"]) $(id).disabled = true;
  $("fed-round").textContent = "Joined: waiting for the next round…";
  $("fed-round").dataset.phase = "joined";
  try {
    const result = await fed.join({ session, dataset: data.dataset, onRound, onStatus: showStatus,
      signal: joined.signal });
    showStatus(result.status);
    $("fed-round").textContent = result.reason === "done"
      ? `The federation finished; this page took part in ${result.rounds} round${result.rounds === 1 ? "" : "s"}.`
      : `You left the federation after ${result.rounds} round${result.rounds === 1 ? "" : "s"}.`;
    $("fed-round").dataset.phase = result.reason;
  } catch (err) {
    if (err?.name === "AbortError") {
      $("fed-round").textContent = "You left the federation.";
      $("fed-round").dataset.phase = "left";
    } else {
      showError(err);
      $("fed-round").textContent = "This page is no longer in the federation.";
      $("fed-round").dataset.phase = "error";
    }
  } finally {
    joined = null;
    $("fed-leave").disabled = true;
    for (const id of ["fed-csv", "fed-folder"]) $(id).disabled = false;
    $("fed-join").disabled = !data;
  }
}

export function setUpFederation(engineReady) {
  ready = engineReady;
  $("fed-panel").addEventListener("toggle", () => {
    if ($("fed-panel").open && !fed && !connecting) connecting = connect().finally(() => { connecting = null; });
  });
  $("fed-retry").onclick = () => { if (!connecting) connecting = connect().finally(() => { connecting = null; }); };
  $("fed-csv").addEventListener("change", (e) => {
    const file = e.target.files[0];
    if (file) loadCsv(file).catch(showError);
  });
  $("fed-folder").addEventListener("change", (e) => loadFolder(e.target.files).catch(showError));
  $("fed-join").onclick = () => join();
  $("fed-leave").onclick = () => joined?.abort();
  return { task: () => session };
}
