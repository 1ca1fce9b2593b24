// "Teach a language model your own text categories": the library's TextTask on the site's MiniLM encoder, loaded
// only when this flow starts.  Examples typed or pasted per class (one per line) or a CSV file's rows; a head on the
// encoder's cached embeddings, or LoRA adapters too; training with the shared TrainingView; live predictions as the
// user types (while not training); the download is a .zip of the ONNX model, tokenizer.json and a README.
import { PROVIDER_NAMES, executionProviders } from "./compute.js";
import { TextTask } from "./lib/onnxtrain.mjs";
import { registerRunKind } from "./runs.js";
import { TrainingView } from "./training_view.js";
import { $, downloadButton, element, errorShower, showProbabilities, showSignature } from "./ui.js";

const MB = 1e6;
const TYPING_MS = 300; // live predictions wait this long after the last key

let task = null; // the library's TextTask
let loading = null; // resolves when the encoder is in the engine
let view = null;
let classes = []; // [{name, texts: [{id, text, truncated}]}], the task's, in its order
let maxLength = 0; // the tokens the encoder reads of a text
let busy = false; // setting up or training: no other call may reach the task
let trained = false; // the run's head fits the classes and has trained at least one epoch
let csv = null; // the CSV file chosen: {name, bytes}
let typing = null; // the timer of the next live prediction
let live = { text: null, result: null }; // the last live prediction, for the test hooks

const showError = errorShower("text-error");

// ---- the encoder ------------------------------------------------------------------------------------------------

function showLoad({ loaded, total, seconds, stage }) {
  if (stage === "ready") return;
  const mb = (n) => (n / MB).toFixed(1);
  $("text-load-progress").hidden = false;
  if (total) $("text-load-progress").value = loaded / total;
  $("text-load-status").textContent = total && loaded === total
    ? `Downloaded the language model: ${mb(total)} MB in ${seconds.toFixed(1)} s; preparing it…`
    : `Downloading the language model: ${total ? `${mb(loaded)} of ${mb(total)}` : mb(loaded)} MB · ` +
      `${seconds.toFixed(1)} s`;
}

async function showReady() {
  const info = await task.info();
  maxLength = info.maxLength;
  $("text-load-progress").hidden = true;
  $("text-load-status").textContent = `Ready: all-MiniLM-L6-v2, loaded in ${info.loadSeconds.toFixed(1)} s; ` +
    `computing on ${PROVIDER_NAMES[info.executionProvider]}.`;
  $("text-load").hidden = true;
  $("text-setup").hidden = false;
}

// Load the encoder once (the flow's Start button); the two first classes.
function load() {
  if (!loading) {
    $("text-load").disabled = true;
    $("text-load-status").textContent = "Starting…";
    loading = (async () => {
      task = await TextTask.create({ onLoad: showLoad, executionProviders: executionProviders() });
      for (const name of ["Class 1", "Class 2"]) await task.addClass(name);
      await showReady();
      await synced();
    })();
    loading.catch((err) => {
      loading = null;
      $("text-load").disabled = false;
      $("text-load-status").textContent = "The language model did not load; you can try again.";
      showError(err);
    });
  }
  return loading;
}

// ---- classes and examples ---------------------------------------------------------------------------------------

// The classes and their texts as the task has them now, shown.
async function synced() {
  const texts = await task.texts();
  const samples = new Map((await task.samples()).map((s) => [s.id, s.classIndex]));
  classes = (await task.classes()).map((name) => ({ name, texts: [] }));
  for (const t of texts) classes[samples.get(t.id)].texts.push(t);
  showClasses();
}

function plural(n, one) { return n === 1 ? `1 ${one}` : `${n} ${one}s`; }

function classCard(cls, index, draft = "") {
  const name = element("input", { className: "cam-name", value: cls.name, maxLength: 40 });
  name.setAttribute("aria-label", "Class name");
  name.onchange = async () => {
    try {
      await task.renameClass(index, name.value);
      cls.name = name.value = (await task.classes())[index];
      name.closest(".text-class").dataset.name = cls.name;
    } catch (err) { name.value = cls.name; showError(err); }
  };
  const remove = element("button", { className: "secondary cam-remove", textContent: "Remove class",
    title: "Remove this class and its examples" });
  remove.onclick = () => change(() => task.removeClass(index)).catch(showError);
  const input = element("textarea", { className: "text-input", rows: 3, placeholder: "One example per line",
    value: draft });
  input.setAttribute("aria-label", `Examples of ${cls.name}`);
  const add = element("button", { className: "secondary text-add", textContent: "Add examples" });
  add.onclick = () => addTyped(index, input).catch(showError);
  const list = element("ul", { className: "text-examples" }, ...cls.texts.map((t) => exampleItem(t)));
  const count = element("span", { className: "cam-count metrics", textContent: plural(cls.texts.length, "example") });
  const card = element("div", { className: "cam-class text-class" },
    element("div", { className: "row" }, name, count, remove), input, element("div", { className: "row" }, add), list);
  card.dataset.name = cls.name;
  return card;
}

function exampleItem(example) {
  const remove = element("button", { textContent: "×", title: "Delete this example" });
  remove.setAttribute("aria-label", "Delete this example");
  remove.onclick = () => change(() => task.removeSample(example.id), { classesChanged: false }).catch(showError);
  const cut = example.truncated ? [element("em", { className: "note", textContent: `cut at ${maxLength} tokens` })] : [];
  return element("li", {}, element("span", { textContent: example.text }), ...cut, remove);
}

// The class cards anew; what was typed in a card and not added yet stays in it.
function showClasses() {
  const drafts = new Map([...$("text-classes").querySelectorAll(".text-class")]
    .map((card) => [card.dataset.name, card.querySelector("textarea").value]));
  $("text-classes").replaceChildren(...classes.map((cls, i) => classCard(cls, i, drafts.get(cls.name))));
  refresh();
}

// Which controls work now: none that reaches the task while it trains; a class can go while there are three.
function refresh() {
  for (const control of $("text-classes").querySelectorAll("button, textarea, input")) control.disabled = busy;
  for (const remove of $("text-classes").querySelectorAll(".cam-remove")) remove.disabled = busy || classes.length <= 2;
  for (const id of ["text-add-class", "text-csv-add", "text-mode", "text-rank"]) $(id).disabled = busy;
  if (!trained) {
    $("text-bars").replaceChildren();
    $("text-live-note").textContent = "Train to see predictions.";
  }
}

// A change of the classes or examples: the next Train starts a new run (on the examples there are then); a change
// of the classes also drops the trained head (no predictions until trained again).
async function change(action, { classesChanged = true } = {}) {
  $("text-error").hidden = true;
  try {
    await action();
  } finally {
    if (classesChanged) trained = false;
    view.startOver();
    await synced();
  }
}

function truncationNotice(n, where) {
  if (!n) return;
  $("text-notice").textContent = `${plural(n, "example")} ${where} ${n === 1 ? "is" : "are"} longer than the ` +
    `language model reads (${maxLength} tokens): only the beginning of each counts.`;
  $("text-notice").hidden = false;
}

// The lines of a class's text box as its examples (empty lines are skipped, and said so).
async function addTyped(index, input) {
  const lines = input.value.split(/\r?\n/);
  const texts = lines.map((line) => line.trim()).filter(Boolean);
  const empty = lines.length - texts.length;
  if (!texts.length) throw new Error("Type at least one example: one per line (empty lines are skipped).");
  $("text-notice").hidden = true;
  let added;
  await change(async () => {
    added = await task.addTexts(texts, index);
    input.value = "";
  }, { classesChanged: false });
  truncationNotice(added.truncated.length, `of ${classes[index].name}`);
  if (empty && !added.truncated.length) {
    $("text-notice").textContent = `Skipped ${plural(empty, "empty line")}.`;
    $("text-notice").hidden = false;
  }
}

// ---- a CSV file -------------------------------------------------------------------------------------------------

// The column names of a CSV file's header row (quoted names may hold commas and quotes).
function csvHeader(text) {
  const names = [];
  let field = "", quoted = false;
  for (let i = text.charCodeAt(0) === 0xfeff ? 1 : 0; i < text.length; i++) {
    const c = text[i];
    if (quoted) {
      if (c !== '"') field += c;
      else if (text[i + 1] === '"') { field += '"'; i++; } else quoted = false;
    } else if (c === '"') quoted = true;
    else if (c === ",") { names.push(field); field = ""; } else if (c === "\n" || c === "\r") break;
    else field += c;
  }
  return [...names, field];
}

function options(select, names, chosen) {
  select.replaceChildren(...names.map((n) => element("option", { value: n, textContent: n })));
  select.value = chosen;
}

// A CSV file chosen: its columns offered as the text and the label column (guessed by name, else the first and
// the last).  A file that is not UTF-8 is refused here, as the engine would.
async function chooseCsv(file) {
  $("text-error").hidden = true;
  $("text-csv-columns").hidden = true;
  const bytes = new Uint8Array(await file.arrayBuffer());
  let header;
  try {
    header = csvHeader(new TextDecoder("utf-8", { fatal: true }).decode(bytes.subarray(0, 1 << 16)));
  } catch {
    throw new Error(`${file.name} is not UTF-8 text: save it as CSV UTF-8`);
  }
  csv = { name: file.name, bytes };
  const find = (words, fallback) => header.find((n) => words.includes(n.trim().toLowerCase())) ?? fallback;
  options($("text-csv-text"), header, find(["text", "texts", "sentence", "message"], header[0]));
  options($("text-csv-label"), header, find(["label", "labels", "class", "category"], header.at(-1)));
  $("text-csv-columns").hidden = false;
}

async function addCsv() {
  if (!csv) return;
  $("text-notice").hidden = true;
  let added;
  await change(async () => {
    added = await task.addCsv(csv.bytes, { text: $("text-csv-text").value, label: $("text-csv-label").value });
  });
  $("text-csv-columns").hidden = true;
  $("text-notice").textContent = `Added ${plural(added.added, "example")} from ${csv.name}.`;
  $("text-notice").hidden = false;
  if (added.truncated) truncationNotice(added.truncated, `from ${csv.name}`);
}

// ---- live predictions -------------------------------------------------------------------------------------------

async function predictTyped() {
  const text = $("text-try").value;
  if (!trained || busy || !text.trim()) {
    if (trained && busy) $("text-live-note").textContent = "Predictions go on when training stops.";
    return;
  }
  const result = await task.predict(text);
  if ($("text-try").value !== text) return; // typed on meanwhile: the next prediction shows
  live = { text, result };
  showProbabilities("text-bars", result.probabilities, classes.map((c) => c.name));
  $("text-live-note").textContent = result.truncated
    ? `This text is longer than the language model reads (${maxLength} tokens): only its beginning counts.` : "";
}

function predictSoon() {
  clearTimeout(typing);
  typing = setTimeout(() => predictTyped().catch(showError), TYPING_MS);
}

// ---- training ---------------------------------------------------------------------------------------------------

function setBusy(value) {
  busy = value;
  refresh();
  if (!value) predictSoon();
}

// The task's call `action` while no other may reach it.
async function exclusive(action) {
  setBusy(true);
  try { return await action(); } finally { setBusy(false); }
}

const mode = () => $("text-mode").value;

const flow = {
  unit: "texts",
  metric: () => "accuracy",
  metricValue: (m) => m.accuracy,
  summary: (m) => `accuracy on the examples ${(100 * m.accuracy).toFixed(1)}%`,
  onEpoch: () => { trained = true; },
  onStop: () => showSignature(task, "text-signature"),
  train: (options) => exclusive(() => task.train(options)),
  async fresh() {
    $("text-error").hidden = true;
    const settings = { mode: mode(), rank: Number($("text-rank").value) };
    await exclusive(() => task.setup({ ...settings, validation: 0, seed: 0 }));
    trained = false;
    return { kind: "text", name: `Text categories (${settings.mode === "lora" ? "LoRA" : "head"})`, settings,
      snapshot: await task.snapshot(), classes: classes.map((c) => c.name) };
  },
};

registerRunKind("text", {
  section: "text",
  describe: (r) => `${r.name}: ${r.classes.length} classes (${r.classes.join(", ")}), epoch ${r.epoch}/` +
    `${r.settings.epochs}`,
  async resume(saved) {
    if (busy) throw new Error("Training is running; cancel it before resuming a saved run.");
    $("text-load").disabled = true;
    const next = await TextTask.fromSnapshot(saved.snapshot.slice(0),
      { onLoad: showLoad, executionProviders: executionProviders() });
    await loading?.catch(() => {});
    if (task) await task.release();
    task = next;
    loading = Promise.resolve();
    await task.restore(saved.checkpoint.slice(0), saved.bestCheckpoint?.slice(0) ?? null);
    $("text-mode").value = saved.settings.mode;
    $("text-rank").value = saved.settings.rank;
    modeShown();
    trained = saved.epoch > 0;
    await showReady();
    await synced();
    view.restored(saved);
    await flow.onStop();
  },
});

function modeShown() { $("text-rank-label").hidden = mode() !== "lora"; }

// each mode's epochs and learning rate, as tests/text/test_few_shot.py measured them
const MODE_DEFAULTS = { head: { epochs: 30, lr: 0.01 }, lora: { epochs: 4, lr: 0.001 } };

// ---- set up -----------------------------------------------------------------------------------------------------

export function setUpText(ready) {
  view = new TrainingView("text", flow, { epochs: 30, batch: 16, lr: 0.01,
    downloads: { download: "Download model (.zip)" } });
  $("text-load").onclick = () => ready.then(load).catch(showError);
  $("text-add-class").onclick = () => change(() => task.addClass(`Class ${classes.length + 1}`)).catch(showError);
  $("text-mode").onchange = () => {
    const defaults = MODE_DEFAULTS[mode()];
    $("text-epochs").value = defaults.epochs;
    $("text-lr").value = defaults.lr;
    modeShown();
    view.startOver();
  };
  $("text-csv").onchange = (e) => {
    const file = e.target.files[0];
    if (file) chooseCsv(file).catch(showError).finally(() => { e.target.value = ""; });
  };
  $("text-csv-add").onclick = () => addCsv().catch(showError);
  const drop = $("text-drop");
  drop.addEventListener("dragover", (e) => { e.preventDefault(); drop.classList.add("over"); });
  drop.addEventListener("dragleave", () => drop.classList.remove("over"));
  drop.addEventListener("drop", (e) => {
    e.preventDefault();
    drop.classList.remove("over");
    const file = e.dataTransfer.files[0];
    if (file) chooseCsv(file).catch(showError);
  });
  $("text-try").addEventListener("input", predictSoon);
  downloadButton("text-download", "text-classifier.zip", () => task.exportZip(), showError);
  downloadButton("text-checkpoint", "text-classifier.ckpt", () => task.checkpoint(), showError);
  downloadButton("text-artifacts", "text-classifier-artifacts.zip", () => task.artifactsZip(), showError);
  return { task: () => task, load, chooseCsv, live: () => live, busy: () => busy }; // for the test hooks
}
