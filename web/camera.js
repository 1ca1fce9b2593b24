// "Teach a model with your camera or photos": a pretrained EfficientNet-Lite0 (frozen) embeds each sample once, in
// the engine; a small head learns the user's classes in about a second; live predictions on the camera; one ONNX
// model (preprocessing, backbone and head) to download.  Built on the library's PersonalizeTask only.
import { PROVIDER_NAMES, executionProviders } from "./compute.js";
import { PersonalizeTask } from "./lib/onnxtrain.mjs";
import { registerRunKind, saveRun } from "./runs.js";
import { trainingControls } from "./training_view.js";
import { $, BACKBONE, BACKBONE_SIZE, downloadButton, element, errorShower, showProbabilities } from "./ui.js";

const SIZE = BACKBONE_SIZE; // the frames sent to the task: the centred square of the camera or photo
const THUMB = 56;
const RECORD_MS = 200; // a frame every 200 ms while the record button is held
const KEEP_FED = 12; // the last live frames kept (with what was predicted) for the test hooks
const MB = 1e6;

let task = null; // the library's PersonalizeTask
let loading = null; // resolves when the backbone is in the engine
let classes = []; // [{name, samples: [{id, thumb (a data: URL)}]}], the task's classes in its order
let runId = null;
let trained = null; // what the last training did (a line), or null while the head does not match the classes
let stream = null; // the camera's MediaStream
let recording = null; // {cls, timer, pending: [frames], sending}
let unsent = 0; // frames recorded and not yet added to the task
let sends = Promise.resolve(); // the recorded frames on their way to the task
let liveRun = 0; // the live prediction loop that may run (a new camera stream starts a new one)
let busy = false; // training: no other call may reach the task
let fed = []; // the last live frames: {pixels (RGBA SIZE x SIZE), probabilities, label}
let stopping = null; // AbortController of the running train()
let saving = Promise.resolve();
let dirty = false;

const showError = errorShower("cam-error");

// ---- frames -----------------------------------------------------------------------------------------------------

let frameContext = null; // the canvas frames are cut on

// The centred square of `source` (a video or an image bitmap, `w` x `h`) as RGBA bytes, SIZE x SIZE (what the
// backbone's preprocessing would cut itself); the canvas is cleared first, so a transparent photo never shows the
// frame before it.
function squarePixels(source, w, h) {
  if (!frameContext) {
    frameContext = new OffscreenCanvas(SIZE, SIZE).getContext("2d", { willReadFrequently: true });
    frameContext.imageSmoothingQuality = "high";
  }
  const side = Math.min(w, h);
  frameContext.clearRect(0, 0, SIZE, SIZE);
  frameContext.drawImage(source, (w - side) / 2, (h - side) / 2, side, side, 0, 0, SIZE, SIZE);
  return new Uint8Array(frameContext.getImageData(0, 0, SIZE, SIZE).data.buffer);
}

function videoPixels() {
  const video = $("cam-video");
  return squarePixels(video, video.videoWidth, video.videoHeight);
}

// A small JPEG of RGBA SIZE x SIZE pixels, to show (and keep in the saved run).
function thumbnail(pixels) {
  const big = new OffscreenCanvas(SIZE, SIZE);
  const rgba = new Uint8ClampedArray(pixels.buffer, pixels.byteOffset, SIZE * SIZE * 4);
  big.getContext("2d").putImageData(new ImageData(rgba, SIZE, SIZE), 0, 0);
  const small = document.createElement("canvas");
  small.width = small.height = THUMB;
  const context = small.getContext("2d");
  context.imageSmoothingQuality = "high";
  context.drawImage(big, 0, 0, THUMB, THUMB);
  return small.toDataURL("image/jpeg", 0.85);
}

function joined(frames) {
  const all = new Uint8Array(frames.length * SIZE * SIZE * 4);
  frames.forEach((f, i) => all.set(f, i * SIZE * SIZE * 4));
  return all;
}

// ---- the backbone -----------------------------------------------------------------------------------------------

function showLoad({ loaded, total, seconds, stage }) {
  if (stage === "ready") return;
  if (total && loaded === total) {
    $("cam-load-progress").value = 1;
    $("cam-load-status").textContent = `Downloaded the pretrained model: ${(total / MB).toFixed(1)} MB in ` +
      `${seconds.toFixed(1)} s; preparing it…`;
    return;
  }
  const mb = (n) => (n / MB).toFixed(1);
  const size = total ? `${mb(loaded)} of ${mb(total)} MB` : `${mb(loaded)} MB`;
  $("cam-load-progress").hidden = false;
  if (total) $("cam-load-progress").value = loaded / total;
  $("cam-load-status").textContent = `Downloading the pretrained model: ${size} · ${seconds.toFixed(1)} s`;
}

async function showReady() {
  const info = await task.info();
  $("cam-load-progress").hidden = true;
  $("cam-load-status").textContent = `Ready: EfficientNet-Lite0 (${(info.backboneBytes / MB).toFixed(1)} MB, ` +
    `${info.features} features per image), loaded in ${info.loadSeconds.toFixed(1)} s; computing on ` +
    `${PROVIDER_NAMES[info.executionProvider]}.`;
  $("cam-load").hidden = true;
  $("cam-setup").hidden = false;
  if (!navigator.mediaDevices?.getUserMedia) {
    $("cam-camera").disabled = true;
    showCameraMessage(new Error("no mediaDevices"));
  }
}

// Load the backbone once (the flow's Start button); the two first classes.
function load() {
  if (!loading) {
    $("cam-load").disabled = true;
    $("cam-load-status").textContent = "Starting…";
    loading = (async () => {
      task = await PersonalizeTask.create(BACKBONE, { onLoad: showLoad, executionProviders: executionProviders() });
      for (const name of ["Class 1", "Class 2"]) {
        await task.addClass(name);
        classes.push({ name, samples: [] });
      }
      await showReady();
      showClasses();
    })();
    loading.catch((err) => {
      loading = null;
      $("cam-load").disabled = false;
      $("cam-load-status").textContent = "The pretrained model did not load; you can try again.";
      showError(err);
    });
  }
  return loading;
}

// ---- classes and samples ----------------------------------------------------------------------------------------

let cards = []; // per class, its card's elements: {root, name, count, record, files, remove, thumbs}
let stale = false; // samples changed since the head was trained (the classes did not)

const total = () => classes.reduce((n, c) => n + c.samples.length, 0);

function countText(n) { return n === 1 ? "1 sample" : `${n} samples`; }

function classCard(cls) {
  const at = () => classes.indexOf(cls);
  const name = element("input", { className: "cam-name", value: cls.name, maxLength: 40 });
  name.setAttribute("aria-label", "Class name");
  name.onchange = () => change(async () => {
    await task.renameClass(at(), name.value);
    cls.name = (await task.classes())[at()];
    name.value = cls.name;
  }, { classesChanged: false, samplesChanged: false }).catch((err) => { name.value = cls.name; showError(err); });
  const record = element("button", { className: "cam-record", textContent: "Hold to record" });
  record.addEventListener("pointerdown", (e) => {
    e.preventDefault();
    record.setPointerCapture?.(e.pointerId);
    startRecording(at());
  });
  for (const end of ["pointerup", "pointercancel", "lostpointercapture"]) record.addEventListener(end, stopRecording);
  record.addEventListener("keydown", (e) => {
    if ((e.key === " " || e.key === "Enter") && !e.repeat) startRecording(at());
  });
  record.addEventListener("keyup", stopRecording);
  record.addEventListener("blur", stopRecording);
  const files = element("input", { type: "file", accept: "image/*", multiple: true, className: "cam-files" });
  files.onchange = () => addFiles(cls, [...files.files]).finally(() => { files.value = ""; });
  const remove = element("button", { className: "secondary cam-remove", textContent: "Remove class",
    title: "Remove this class and its samples" });
  remove.onclick = () => change(async () => {
    await task.removeClass(at());
    classes.splice(at(), 1);
  }).catch(showError);
  const count = element("span", { className: "cam-count metrics" });
  const thumbs = element("div", { className: "cam-thumbs" }, ...cls.samples.map((s) => sampleThumb(s, cls)));
  const root = element("div", { className: "cam-class" },
    element("div", { className: "row" }, name, count, remove),
    element("div", { className: "row" }, record, element("label", { className: "cam-add-files" }, "Add images", files)),
    thumbs);
  return { root, name, count, record, files, remove, thumbs };
}

function sampleThumb(sample, cls) {
  const img = element("img", { src: sample.thumb, alt: "", width: THUMB, height: THUMB });
  const remove = element("button", { className: "cam-delete", textContent: "×", title: "Delete this sample" });
  remove.setAttribute("aria-label", "Delete this sample");
  const thumb = element("div", { className: "cam-thumb" }, img, remove);
  remove.onclick = () => change(async () => {
    await task.removeSample(sample.id);
    cls.samples.splice(cls.samples.indexOf(sample), 1);
    thumb.remove();
  }, { classesChanged: false }).catch(showError);
  return thumb;
}

// The class cards anew (after classes were added, removed or restored).
function showClasses() {
  cards = classes.map(classCard);
  $("cam-classes").replaceChildren(...cards.map((c) => c.root));
  refresh();
}

// Counts, and which controls work now (camera on or off, training or not, samples in every class or not).
function refresh() {
  cards.forEach((card, i) => {
    card.count.textContent = countText(classes[i].samples.length);
    card.record.disabled = !stream || busy;
    card.files.disabled = card.name.disabled = busy;
    card.remove.disabled = busy || classes.length <= 2;
    card.root.querySelectorAll(".cam-delete").forEach((b) => { b.disabled = busy; });
  });
  const ready = classes.every((c) => c.samples.length > 0);
  $("cam-train").disabled = busy || !ready;
  $("cam-add-class").disabled = busy;
  $("cam-train-note").textContent = ready ? "" : "Every class needs at least one sample to train.";
  for (const id of ["cam-download", "cam-checkpoint", "cam-artifacts", "cam-try"]) $(id).disabled = busy || !trained;
  $("cam-live-note").textContent = !trained ? "Train to see predictions."
    : stale ? "Samples changed since training: train again to use them." : "";
  if (!trained) $("cam-bars").replaceChildren();
}

// A change of the classes (the head no longer fits them: no predictions until trained again) or of the samples;
// the page shows it and saves the run.
async function change(action, { classesChanged = true, samplesChanged = true } = {}) {
  $("cam-error").hidden = true;
  const before = classes.length;
  try {
    await action();
  } finally {
    if (classesChanged) trained = null;
    if (samplesChanged) stale = Boolean(trained);
    if (classes.length !== before || cards.length !== classes.length) showClasses(); else refresh();
    save();
  }
}

async function addSamples(cls, frames) {
  const ids = await task.addSamples(joined(frames), { width: SIZE, height: SIZE, count: frames.length },
    classes.indexOf(cls));
  const card = cards[classes.indexOf(cls)];
  ids.forEach((id, i) => {
    const sample = { id, thumb: thumbnail(frames[i]) };
    cls.samples.push(sample);
    card?.thumbs.append(sampleThumb(sample, cls));
  });
}

// Photos (any size the browser decodes) as samples of `cls`; files that are not images are named.
async function addFiles(cls, files) {
  const frames = [];
  const skipped = [];
  for (const file of files) {
    try {
      const bitmap = await createImageBitmap(file);
      frames.push(squarePixels(bitmap, bitmap.width, bitmap.height));
      bitmap.close();
    } catch {
      skipped.push(file.name);
    }
  }
  try {
    if (frames.length) await change(() => addSamples(cls, frames), { classesChanged: false });
    if (skipped.length) {
      const what = skipped.length === 1 ? "a file that is not an image" : `${skipped.length} files that are not images`;
      throw new Error(`Skipped ${what}: ${skipped.slice(0, 3).join(", ")}${skipped.length > 3 ? ", …" : ""}`);
    }
  } catch (err) { showError(err); }
}

// ---- the camera -------------------------------------------------------------------------------------------------

function cameraMessage(err) {
  if (!navigator.mediaDevices?.getUserMedia) {
    return "This browser gives the page no camera (it needs a secure page: https or localhost).";
  }
  if (err.name === "NotAllowedError" || err.name === "SecurityError") {
    return "The camera is not allowed: the browser or you declined it.";
  }
  if (err.name === "NotFoundError" || err.name === "OverconstrainedError") return "No camera was found.";
  if (err.name === "NotReadableError") return "The camera is in use by another program.";
  return `The camera did not start (${err.name || "error"}: ${err.message || err}).`;
}

function showCameraMessage(err) {
  $("cam-camera-message").textContent = `${cameraMessage(err)} You can add photos to each class with ` +
    "“Add images” instead, and try a photo; everything else works without a camera.";
  $("cam-camera-message").hidden = false;
}

async function startCamera() {
  $("cam-camera-message").hidden = true;
  $("cam-camera").disabled = true; // until the camera answers
  try {
    if (!navigator.mediaDevices?.getUserMedia) throw new Error("no mediaDevices");
    stream = await navigator.mediaDevices.getUserMedia({ audio: false,
      video: { width: { ideal: 640 }, height: { ideal: 480 }, facingMode: "user" } });
  } catch (err) {
    stream = null;
    showCameraMessage(err);
    return;
  } finally {
    $("cam-camera").disabled = false;
  }
  const video = $("cam-video");
  video.srcObject = stream;
  await video.play();
  $("cam-stage").hidden = false;
  $("cam-camera").textContent = "Stop camera";
  refresh();
  startLive();
}

function stopCamera() {
  stopRecording();
  liveRun += 1;
  stream?.getTracks().forEach((t) => t.stop());
  stream = null;
  $("cam-video").srcObject = null;
  $("cam-camera").textContent = "Start camera";
  $("cam-fps").textContent = "";
  $("cam-stage").hidden = true;
  refresh();
}

// Hold to record: a frame every RECORD_MS, sent to the task in batches as the engine takes them.
function startRecording(index) {
  if (!stream || busy || recording) return;
  $("cam-error").hidden = true;
  const rec = { cls: classes[index], pending: [], sending: null, timer: null };
  recording = rec;
  const grab = () => {
    rec.pending.push(videoPixels());
    unsent += 1;
    sendRecorded(rec);
  };
  grab();
  rec.timer = setInterval(grab, RECORD_MS);
  cards[index]?.record.classList.add("on");
  cards[index]?.record.replaceChildren("Recording…");
}

function stopRecording() {
  if (!recording) return;
  clearInterval(recording.timer);
  recording = null;
  for (const card of cards) {
    card.record.classList.remove("on");
    card.record.replaceChildren("Hold to record");
  }
}

function sendRecorded(rec) {
  if (rec.sending) return;
  sends = rec.sending = (async () => {
    while (rec.pending.length) {
      const frames = rec.pending.splice(0);
      await change(() => addSamples(rec.cls, frames), { classesChanged: false }).catch(showError);
      unsent -= frames.length;
    }
    rec.sending = null;
  })();
}

// ---- predictions ------------------------------------------------------------------------------------------------

function showBars(probabilities) {
  showProbabilities("cam-bars", probabilities, classes.map((c) => c.name));
}

async function predictFrame(pixels) {
  const result = await task.predict(pixels, { width: SIZE, height: SIZE });
  showBars(result.probabilities);
  return result;
}

// Predict the camera's frames one after another while the camera is on and the head fits the classes.
async function startLive() {
  const run = ++liveRun;
  const times = [];
  while (run === liveRun && stream) {
    if (!trained || busy || recording) {
      await new Promise((ok) => setTimeout(ok, 100));
      times.length = 0;
      continue;
    }
    const pixels = videoPixels();
    try {
      const result = await task.predict(pixels, { width: SIZE, height: SIZE });
      if (run !== liveRun) break; // the camera stopped meanwhile
      showBars(result.probabilities);
      fed.push({ pixels, probabilities: result.probabilities, label: result.label });
      if (fed.length > KEEP_FED) fed.shift();
    } catch (err) {
      showError(err);
      await new Promise((ok) => setTimeout(ok, 500));
    }
    times.push(performance.now());
    while (times.length && times[0] < times.at(-1) - 2000) times.shift();
    if (times.length > 1) {
      const fps = (times.length - 1) / ((times.at(-1) - times[0]) / 1000);
      $("cam-fps").textContent = `${fps.toFixed(1)} frames/s`;
    }
  }
}

// ---- training ---------------------------------------------------------------------------------------------------

function setBusy(value) {
  busy = value;
  if (value) stopRecording();
  $("cam-cancel").disabled = !value;
  refresh();
}

async function train() {
  $("cam-error").hidden = true;
  setBusy(true);
  stopping = new AbortController();
  const fineTune = $("cam-fine-tune").checked;
  const epochs = Number($("cam-epochs").value);
  const started = performance.now();
  let examples = 0;
  try {
    await sends; // frames recorded until now are samples too
    await saving; // the engine takes no other call while it trains
    $("cam-metrics").textContent = "Building the head…";
    await task.setup({ fineTune, validation: 0, seed: 0 });
    const result = await task.train({ epochs, batchSize: Number($("cam-batch").value),
      learningRate: Number($("cam-lr").value), signal: stopping.signal,
      onProgress: (p) => {
        examples += p.examples ?? 0;
        $("cam-progress").value = p.progress / p.epochs;
        if (!p.epochDone) return;
        const seconds = (performance.now() - started) / 1000;
        $("cam-metrics").textContent = `epoch ${p.epoch}/${p.epochs} · loss ${p.loss.toFixed(4)} · ` +
          `${Math.round(examples / seconds)} samples/s`;
      } });
    const seconds = (performance.now() - started) / 1000;
    const what = fineTune ? "the head and the last block" : "the head";
    stale = false;
    const fit = await task.evaluate();
    const notes = [...(result?.loss !== undefined ? [`loss ${Number(result.loss).toFixed(4)}`] : []),
      `${(100 * fit.accuracy).toFixed(0)}% of its samples right`];
    trained = `Trained ${what} on ${total()} samples in ${seconds.toFixed(1)} s (${notes.join("; ")}).`;
    $("cam-metrics").textContent = trained;
    $("cam-progress").value = 1;
  } catch (err) {
    if (err?.name === "AbortError") $("cam-metrics").textContent = "Cancelled; the head is not trained.";
    else showError(err);
    trained = null;
  } finally {
    stopping = null;
    setBusy(false);
    save();
  }
}

// ---- saved run --------------------------------------------------------------------------------------------------

function describeRun(r) {
  const names = r.classes.map((c) => c.name).join(", ");
  const n = r.classes.reduce((s, c) => s + c.samples.length, 0);
  const state = r.trained ? "trained" : "not trained";
  return `${r.name}: ${countText(n)} in ${r.classes.length} classes (${names}), ${state}`;
}

// The classes, samples (thumbnails) and the task's snapshot, saved after every change (one save at a time; the last
// change always gets saved).
function save() {
  if (!task) return saving;
  if (dirty) return saving;
  dirty = true;
  saving = saving.then(async () => {
    dirty = false;
    runId = runId || Date.now();
    const snapshot = await task.snapshot();
    await saveRun({ id: runId, kind: "camera", name: "Camera and photos", saved: Date.now(), snapshot,
      classes: classes.map((c) => ({ name: c.name, samples: c.samples.map((s) => ({ ...s })) })), trained,
      settings: { fineTune: $("cam-fine-tune").checked, epochs: $("cam-epochs").value, batch: $("cam-batch").value,
        lr: $("cam-lr").value } });
  }).catch(showError);
  return saving;
}

registerRunKind("camera", {
  section: "camera",
  describe: describeRun,
  async resume(saved) {
    if (busy) throw new Error("Training is running; cancel it before resuming a saved run.");
    $("cam-load").disabled = true;
    const next = await PersonalizeTask.fromSnapshot(BACKBONE, saved.snapshot.slice(0),
      { onLoad: showLoad, executionProviders: executionProviders() });
    const names = await next.classes();
    const counts = await next.counts();
    if (names.length !== saved.classes.length || saved.classes.some((c, i) => counts[i] !== c.samples.length)) {
      await next.release();
      throw new Error("This saved run's samples do not match its snapshot; it cannot be restored.");
    }
    await loading?.catch(() => {});
    if (task) await task.release();
    task = next;
    loading = Promise.resolve();
    classes = saved.classes.map((c, i) => ({ name: names[i], samples: c.samples.map((s) => ({ ...s })) }));
    runId = saved.id;
    trained = saved.trained;
    const s = saved.settings || {};
    $("cam-fine-tune").checked = Boolean(s.fineTune);
    for (const [key, id] of [["epochs", "cam-epochs"], ["batch", "cam-batch"], ["lr", "cam-lr"]]) {
      if (s[key] !== undefined) $(id).value = s[key];
    }
    stale = false;
    await showReady();
    showClasses();
    $("cam-metrics").textContent = `Restored ${countText(total())} in ${classes.length} classes` +
      (trained ? `; ${trained}` : "; not trained yet.");
    $("cam-progress").value = trained ? 1 : 0;
  },
});

function base64(bytes) {
  let text = "";
  for (let i = 0; i < bytes.length; i += 0x8000) text += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(text);
}

// ---- set up -----------------------------------------------------------------------------------------------------

export function setUpCamera(ready) {
  // the shared controls; this flow trains a new head each time (no pause, no chart), in its own train()
  trainingControls("cam", { epochs: 20, batch: 16, lr: 0.001, schedule: false, pause: false, chart: false,
    trainDisabled: true, note: true });
  $("cam-load").onclick = () => ready.then(load).catch(showError);
  $("cam-camera").onclick = () => (stream ? stopCamera() : startCamera().catch(showError));
  $("cam-add-class").onclick = () => change(async () => {
    const name = `Class ${classes.length + 1}`;
    await task.addClass(name);
    classes.push({ name, samples: [] });
  }).catch(showError);
  $("cam-train").onclick = train;
  $("cam-cancel").onclick = () => stopping?.abort();
  $("cam-try").onchange = async (e) => {
    const file = e.target.files[0];
    if (!file) return;
    try {
      const bitmap = await createImageBitmap(file).catch(() => { throw new Error(`${file.name} is not an image`); });
      const pixels = squarePixels(bitmap, bitmap.width, bitmap.height);
      bitmap.close();
      const result = await predictFrame(pixels);
      fed.push({ pixels, probabilities: result.probabilities, label: result.label });
      $("cam-live-note").textContent = `${file.name}: ${classes[result.label]?.name ?? result.className}`;
    } catch (err) { showError(err); } finally { e.target.value = ""; }
  };
  downloadButton("cam-download", "personalized.onnx", () => task.exportModel(), showError);
  downloadButton("cam-checkpoint", "personalized.ckpt", () => task.checkpoint(), showError);
  downloadButton("cam-artifacts", "personalized-artifacts.zip", () => task.artifactsZip(), showError);
  return { // for the test hooks
    task: () => task,
    load,
    // the last frames predicted (RGBA SIZE x SIZE as base64) with the page's probabilities and label
    fed: () => fed.map((f) => ({ ...f, pixels: base64(f.pixels) })),
    fedCount: () => fed.length,
    clearFed: () => { fed = []; },
    unsent: () => unsent,
    classes: () => classes.map((c) => ({ name: c.name, samples: c.samples.map((s) => s.id) })),
    saved: () => saving,
  };
}
