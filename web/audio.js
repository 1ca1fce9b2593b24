// "Teach your own sounds": the library's AudioTask on the site's speech backbone, loaded only when this flow starts.
// Classes of clips recorded from the microphone (its level shown while it is on) or added as audio files, a
// background-noise class first; training with the shared TrainingView; live predictions from the microphone while
// not training; the download is the ONNX model from 16 kHz PCM to probabilities and label.
import { PROVIDER_NAMES, executionProviders } from "./compute.js";
import { AudioTask, Microphone } from "./lib/onnxtrain.mjs";
import { registerRunKind } from "./runs.js";
import { TrainingView } from "./training_view.js";
import { $, downloadButton, element, errorShower, showProbabilities, showSignature } from "./ui.js";

const MB = 1e6;
const RECORD_S = 1.5; // one press of Record: a clip this long
const LISTEN_MS = 500; // live predictions: one every this long, on the last 1.5 s heard
const LIVE_SAMPLES = 1.5 * AudioTask.RATE;

let task = null; // the library's AudioTask
let loading = null; // resolves when the backbone is in the engine
let view = null;
let classes = []; // [{name, clips: [id]}], the task's, in its order
let busy = false; // setting up or training: no other call may reach the task
let trained = false; // the run's head fits the classes and has trained at least one epoch
let mic = null; // the open Microphone, while it is on
let recording = 0; // clips being recorded now
let listening = null; // the timer of live predictions
let live = { count: 0, result: null, pcm: null }; // the live predictions so far, for the test hooks

const showError = errorShower("audio-error");

// ---- the backbone -----------------------------------------------------------------------------------------------

function showLoad({ loaded, total, seconds, stage }) {
  if (stage === "ready") return;
  const mb = (n) => (n / MB).toFixed(1);
  $("audio-load-progress").hidden = false;
  if (total) $("audio-load-progress").value = loaded / total;
  $("audio-load-status").textContent = `Downloading the speech model: ${total ? `${mb(loaded)} of ${mb(total)}`
    : mb(loaded)} MB · ${seconds.toFixed(1)} s`;
}

async function showReady() {
  const info = await task.info();
  $("audio-load-progress").hidden = true;
  $("audio-load-status").textContent = `Ready: speech_embedding, loaded in ${info.loadSeconds.toFixed(1)} s; ` +
    `${info.embedding} features every ${(1000 * info.hopSamples / info.rate).toFixed(0)} ms; computing on ` +
    `${PROVIDER_NAMES[info.executionProvider]}.`;
  $("audio-load").hidden = true;
  $("audio-setup").hidden = false;
}

// Load the backbone once (the flow's Start button); the background class and one of the user's.
function load() {
  if (!loading) {
    $("audio-load").disabled = true;
    $("audio-load-status").textContent = "Starting…";
    loading = (async () => {
      task = await AudioTask.create({ onLoad: showLoad, executionProviders: executionProviders() });
      await task.addClass("Class 1");
      await showReady();
      await synced();
    })();
    loading.catch((err) => {
      loading = null;
      $("audio-load").disabled = false;
      $("audio-load-status").textContent = "The speech model did not load; you can try again.";
      showError(err);
    });
  }
  return loading;
}

// ---- the microphone ---------------------------------------------------------------------------------------------

function showLevel(rms) {
  const db = rms > 0 ? 20 * Math.log10(rms) : -100;
  $("audio-level").value = Math.max(0, Math.min(1, (db + 60) / 60));
}

async function micOn() {
  $("audio-mic-message").hidden = true;
  try {
    mic = await Microphone.open({ onLevel: showLevel });
  } catch (err) {
    $("audio-mic-message").textContent = `${err.message}.`;
    $("audio-mic-message").hidden = false;
    return;
  }
  $("audio-mic").textContent = "Stop microphone";
  $("audio-level-row").hidden = false;
  refresh();
  listen();
}

async function micOff() {
  clearTimeout(listening);
  listening = null;
  const closing = mic;
  mic = null;
  $("audio-mic").textContent = "Start microphone";
  $("audio-level-row").hidden = true;
  $("audio-level").value = 0;
  refresh();
  await closing?.close();
}

// ---- classes and clips ------------------------------------------------------------------------------------------

async function synced() {
  const samples = await task.samples();
  classes = (await task.classes()).map((name) => ({ name, clips: [] }));
  for (const s of samples) classes[s.classIndex].clips.push(s.id);
  showClasses();
}

function plural(n, one) { return n === 1 ? `1 ${one}` : `${n} ${one}s`; }

function classCard(cls, index) {
  const background = index === 0 && cls.name === AudioTask.BACKGROUND;
  const name = element("input", { className: "cam-name", value: cls.name, maxLength: 40, readOnly: background });
  name.setAttribute("aria-label", "Class name");
  name.onchange = async () => {
    try {
      await task.renameClass(index, name.value);
      cls.name = name.value = (await task.classes())[index];
    } catch (err) { name.value = cls.name; showError(err); }
  };
  const count = element("span", { className: "cam-count metrics", textContent: plural(cls.clips.length, "clip") });
  const record = element("button", { className: "audio-record", textContent: `Record ${RECORD_S} s`,
    title: background ? "Record the room's sound, without speaking" : "Record one clip of this class" });
  record.onclick = () => recordClip(index).catch(showError);
  const files = element("input", { type: "file", accept: "audio/*,.wav,.webm,.ogg,.mp3", multiple: true,
    hidden: true, className: "audio-files" });
  files.onchange = () => addFiles(index, [...files.files]).catch(showError).finally(() => { files.value = ""; });
  const add = element("label", { className: "link" }, "add audio files", files);
  const row = [name, count, record, add];
  if (!background) {
    const remove = element("button", { className: "secondary cam-remove", textContent: "Remove class",
      title: "Remove this class and its clips" });
    remove.onclick = () => change(() => task.removeClass(index)).catch(showError);
    row.push(remove);
  }
  const chips = cls.clips.map((id, k) => {
    const del = element("button", { textContent: "×", title: "Delete this clip" });
    del.setAttribute("aria-label", `Delete clip ${k + 1}`);
    del.onclick = () => change(() => task.removeSample(id), { classesChanged: false }).catch(showError);
    return element("li", {}, element("span", { textContent: `clip ${k + 1}` }), del);
  });
  const card = element("div", { className: "cam-class audio-class" }, element("div", { className: "row" }, ...row),
    element("ul", { className: "text-examples audio-clips" }, ...chips));
  card.dataset.name = cls.name;
  return card;
}

function showClasses() {
  $("audio-classes").replaceChildren(...classes.map((cls, i) => classCard(cls, i)));
  refresh();
}

// Which controls work now: none that reaches the task while it trains; Record only with the microphone on.
function refresh() {
  for (const control of $("audio-classes").querySelectorAll("button, input")) control.disabled = busy;
  for (const record of $("audio-classes").querySelectorAll(".audio-record")) record.disabled = busy || !mic;
  for (const remove of $("audio-classes").querySelectorAll(".cam-remove")) {
    remove.disabled = busy || classes.length <= 2;
  }
  for (const id of ["audio-add-class", "audio-fine-tune"]) $(id).disabled = busy;
  if (!trained) {
    $("audio-bars").replaceChildren();
    $("audio-live-note").textContent = "Train, then turn the microphone on to see predictions.";
  }
}

async function change(action, { classesChanged = true } = {}) {
  $("audio-error").hidden = true;
  try {
    await action();
  } finally {
    if (classesChanged) trained = false;
    view.startOver();
    await synced();
  }
}

function showNotices(notices) {
  const resampled = notices.filter((n) => n.includes(" was resampled from ")).length;
  const lines = [...notices.filter((n) => !n.includes(" was resampled from ")).map((n) => `${n}.`),
    ...(resampled ? [`${plural(resampled, "clip")} ${resampled === 1 ? "was" : "were"} resampled to 16 kHz.`] : [])];
  $("audio-notice").textContent = lines.join(" ");
  $("audio-notice").hidden = !lines.length;
}

async function recordClip(index) {
  if (!mic) throw new Error("Start the microphone first.");
  recording++;
  try {
    const pcm = await mic.record(RECORD_S);
    await change(async () => showNotices((await task.addClips(pcm, index, { rate: mic?.rate ?? AudioTask.RATE }))
      .notices), { classesChanged: false });
  } finally {
    recording--;
  }
}

async function addFiles(index, files) {
  if (!files.length) return;
  await change(async () => {
    showNotices((await task.addClips(files, index)).notices);
  }, { classesChanged: false });
}

// ---- live predictions -------------------------------------------------------------------------------------------

async function predictLive() {
  if (!mic || !trained || busy) {
    if (mic && trained && busy) $("audio-live-note").textContent = "Predictions go on when training stops.";
    return;
  }
  const pcm = mic.latest(LIVE_SAMPLES);
  if (pcm.length < LIVE_SAMPLES) return;
  const result = await task.predict(pcm);
  live = { count: live.count + 1, result, pcm };
  showProbabilities("audio-bars", result.probabilities, classes.map((c) => c.name));
  $("audio-live-note").textContent = `Hearing: ${result.className}`;
}

function listen() {
  clearTimeout(listening);
  if (!mic) return;
  listening = setTimeout(() => predictLive().catch(showError).finally(listen), LISTEN_MS);
}

// ---- training ---------------------------------------------------------------------------------------------------

function setBusy(value) {
  busy = value;
  refresh();
}

async function exclusive(action) {
  setBusy(true);
  try { return await action(); } finally { setBusy(false); }
}

const flow = {
  unit: "windows",
  metric: () => "accuracy",
  metricValue: (m) => m.accuracy,
  summary: (m) => `accuracy on the clips ${(100 * m.accuracy).toFixed(1)}%`,
  onEpoch: () => { trained = true; },
  onStop: () => showSignature(task, "audio-signature"),
  train: (options) => exclusive(() => task.train(options)),
  async fresh() {
    $("audio-error").hidden = true;
    const settings = { fineTune: $("audio-fine-tune").checked };
    await exclusive(() => task.setup({ ...settings, validation: 0, seed: 0 }));
    trained = false;
    return { kind: "audio", name: `Sounds (${settings.fineTune ? "head and last block" : "head"})`, settings,
      snapshot: await task.snapshot(), classes: classes.map((c) => c.name) };
  },
};

registerRunKind("audio", {
  section: "audio",
  describe: (r) => `${r.name}: ${r.classes.length} classes (${r.classes.join(", ")}), epoch ${r.epoch}/` +
    `${r.settings.epochs}`,
  async resume(saved) {
    if (busy) throw new Error("Training is running; cancel it before resuming a saved run.");
    $("audio-load").disabled = true;
    const next = await AudioTask.fromSnapshot(saved.snapshot.slice(0),
      { onLoad: showLoad, executionProviders: executionProviders() });
    await loading?.catch(() => {});
    if (task) await task.release();
    task = next;
    loading = Promise.resolve();
    await task.restore(saved.checkpoint.slice(0), saved.bestCheckpoint?.slice(0) ?? null);
    $("audio-fine-tune").checked = Boolean(saved.settings.fineTune);
    trained = saved.epoch > 0;
    await showReady();
    await synced();
    view.restored(saved);
    await flow.onStop();
  },
});

// ---- set up -----------------------------------------------------------------------------------------------------

export function setUpAudio(ready) {
  view = new TrainingView("audio", flow, { epochs: 30, batch: 32, lr: 0.01 });
  $("audio-load").onclick = () => ready.then(load).catch(showError);
  $("audio-add-class").onclick = () => change(() => task.addClass(`Class ${classes.length}`)).catch(showError);
  $("audio-mic").onclick = () => (mic ? micOff() : micOn()).catch(showError);
  $("audio-fine-tune").onchange = () => view.startOver();
  downloadButton("audio-download", "sound-classifier.onnx", () => task.exportModel(), showError);
  downloadButton("audio-checkpoint", "sound-classifier.ckpt", () => task.checkpoint(), showError);
  downloadButton("audio-artifacts", "sound-classifier-artifacts.zip", () => task.artifactsZip(), showError);
  return { task: () => task, load, live: () => live, busy: () => busy, recording: () => recording,
    microphone: () => Boolean(mic) }; // for the test hooks
}
