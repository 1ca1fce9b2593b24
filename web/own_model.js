// "Train your own ONNX model": a forward model (artifacts generated in the page) or ORT's four artifacts,
// trained on a .npz file, exported as a plain ONNX model.
import { TrainingSession, describeModel, generateArtifacts } from "./lib/onnxtrain.mjs";
import { registerRunKind } from "./runs.js";
import { TrainingView } from "./training_view.js";
import { $, downloadButton, element, errorShower } from "./ui.js";

const ARTIFACTS = ["training_model.onnx", "eval_model.onnx", "optimizer_model.onnx", "checkpoint"];
const VALIDATION = 0.1; // the fraction of the data's rows held out
let view = null;
let model = null; // the forward model's bytes, while its artifacts are being chosen
let run = null; // what a fresh run starts from: {name, artifacts: {training, evalModel, optimizer, checkpoint}, data}
let session = null; // the library's session of `run`
let dataset = null; // the data file's tensors
let going = {}; // how the next train() starts: {} a new run, {resume: true} the paused one goes on, or a saved
// run's {resumeFrom, resumeBest}
let fresh = false; // the session is untrained, just loaded from `run`

const showError = errorShower("own-error");
let outputNames = null; // the forward model's output names as they are (a name may hold commas or spaces)

// The outputs to export: the model's own while the field shows them, else the names typed there.
function outputs() {
  const text = $("own-outputs").value;
  return outputNames && text === outputNames.join(", ") ? outputNames : text.split(/[ ,]+/).filter(Boolean);
}
const copies = (artifacts) => Object.fromEntries(Object.entries(artifacts).map(([k, v]) => [k, v.slice(0)]));

async function open(artifacts) {
  const next = await TrainingSession.create({ trainModel: artifacts.training.slice(0),
    evalModel: artifacts.evalModel.slice(0), optimizerModel: artifacts.optimizer.slice(0),
    checkpointState: artifacts.checkpoint.slice(0) });
  if (session) await session.release();
  session = next;
}

async function loadArtifacts(name, artifacts) {
  run = { name, artifacts: copies(artifacts), data: null };
  await open(artifacts);
  fresh = true;
  going = {};
  $("own-data").hidden = false;
  $("own-train").disabled = true;
  $("own-checkpoint").disabled = $("own-artifacts").disabled = false;
  view.startOver();
  const inputs = session.trainingInputNames;
  $("own-inputs").textContent = `Training inputs: ${inputs.join(", ")}. ` +
    `A .npz file needs one array with each of these names (rows along the first axis); a CSV file of numbers ` +
    `works for features and labels (the label column named ${inputs.at(-1)}, or else the last). ` +
    `${await session.getParametersSize(true)} trainable parameters.`;
}

async function chooseFiles(files) {
  $("own-error").hidden = true;
  $("own-generate").hidden = $("own-data").hidden = true;
  const byName = Object.fromEntries(files.map((f) => [f.name, f]));
  if (ARTIFACTS.every((n) => byName[n])) {
    const [training, evalModel, optimizer, checkpoint] = await Promise.all(ARTIFACTS.map((n) => byName[n].arrayBuffer()));
    await loadArtifacts("ORT artifacts", { training, evalModel, optimizer, checkpoint });
    return;
  }
  if (files.length !== 1) {
    throw new Error(`choose one forward model (.onnx) or the four artifacts ${ARTIFACTS.join(", ")}`);
  }
  model = { name: files[0].name.replace(/\.onnx$/i, ""), bytes: await files[0].arrayBuffer() };
  const info = await describeModel(model.bytes.slice(0));
  if (info.opsWithoutGradient.length) {
    $("own-error").hidden = false;
    $("own-error").textContent = `Note: these ops have no gradient rule, so parameters before them cannot be ` +
      `trained: ${info.opsWithoutGradient.join(", ")}`;
  }
  const rows = info.parameters.filter((p) => p.float).map((p) => {
    const box = element("input", { type: "checkbox", name: "own-param", value: p.name, checked: true });
    return element("tr", {}, element("td", {}, box), element("td", {}, p.name),
      element("td", {}, p.shape.join(" × ") || "scalar"), element("td", {}, p.count));
  });
  $("own-params").replaceChildren(element("table", {}, element("tr", {}, ...["train", "parameter", "shape", "values"]
    .map((h) => element("th", { textContent: h }))), ...rows));
  $("own-signature").textContent = info.signature ? `The model: ${info.signature}` : "";
  outputNames = info.outputs.map((o) => o.name);
  $("own-outputs").value = outputNames.join(", ");
  $("own-generate").hidden = false;
}

async function prepare() {
  $("own-error").hidden = true;
  const requiresGrad = [...document.querySelectorAll("input[name=own-param]:checked")].map((c) => c.value);
  const frozenParams = [...document.querySelectorAll("input[name=own-param]:not(:checked)")].map((c) => c.value);
  const art = await generateArtifacts(model.bytes.slice(0), { requiresGrad, frozenParams,
    loss: $("own-loss").value, optimizer: $("own-optimizer").value });
  await loadArtifacts(model.name, { training: art.trainModel, evalModel: art.evalModel, optimizer: art.optimizerModel,
    checkpoint: art.checkpointState });
}

async function setData(data) {
  const info = await session.readDataset(data.bytes.slice(0), data.name, VALIDATION);
  dataset = info.dataset;
  run.data = data;
  $("own-metrics").textContent = `${info.rows} rows (${info.rows - info.validationRows} for training, ` +
    `${info.validationRows} for validation).`;
  $("own-best-row").hidden = !info.validationRows; // the best epoch is the one with the lowest validation loss
  $("own-train").disabled = false;
}

const flow = {
  metric: () => null,
  metricValue: () => null,
  summary: (m) => (m.loss === null || m.loss === undefined ? "" : `validation loss ${m.loss.toFixed(4)}`),
  train(options) {
    return session.train(dataset, { ...options, validation: VALIDATION, ...going,
      onStart: () => { going = { resume: true }; } });
  },
  async fresh() {
    if (!fresh) await open(run.artifacts);
    fresh = false;
    going = {};
    return { kind: "own", name: run.name, artifacts: run.artifacts, data: run.data,
      settings: { outputs: $("own-outputs").value, outputNames: outputs() } };
  },
};

registerRunKind("own", {
  section: "own",
  describe: (r) => `${r.name}: your model, epoch ${r.epoch}/${r.settings.epochs}`,
  async resume(saved) {
    await loadArtifacts(saved.name, saved.artifacts);
    await setData(saved.data);
    await session.loadCheckpoint(saved.checkpoint.slice(0)); // the downloads give the saved state at once
    going = { resumeFrom: saved.checkpoint.slice(0),
      ...(saved.bestCheckpoint ? { resumeBest: saved.bestCheckpoint.slice(0) } : {}) };
    fresh = false;
    $("own-outputs").value = saved.settings.outputs;
    outputNames = saved.settings.outputNames || null;
    view.restored(saved);
  },
});

export function setUpOwnModel(runtimeReady) {
  view = new TrainingView("own", flow, { epochs: 10, batch: 32, lr: 0.001, keepBest: "hidden",
    trainDisabled: true });
  $("own-files").addEventListener("change", (e) => runtimeReady.then(() => chooseFiles([...e.target.files])).catch(showError));
  $("own-prepare").onclick = () => prepare().catch(showError);
  $("own-npz").addEventListener("change", async (e) => {
    try {
      const file = e.target.files[0];
      await setData({ bytes: await file.arrayBuffer(), name: file.name });
      view.startOver();
    } catch (err) { showError(err); }
  });
  downloadButton("own-download", () => `${run.name}.onnx`, () => session.exportModelForInferencing(outputs()),
    showError);
  downloadButton("own-checkpoint", "checkpoint", () => session.saveCheckpoint(true), showError);
  downloadButton("own-artifacts", () => `${run.name}-artifacts.zip`, () => session.artifactsZip(), showError);
  return { task: () => session };
}
