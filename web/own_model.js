// "Train your own ONNX model": a forward model (artifacts generated in the page) or ORT's four artifacts,
// trained on a .npz file, exported as a plain ONNX model.
import { registerRunKind } from "./runs.js";
import { TrainingView } from "./training_view.js";
import { $, downloadButton, element, errorShower } from "./ui.js";

const ARTIFACTS = ["training_model.onnx", "eval_model.onnx", "optimizer_model.onnx", "checkpoint"];
let call = null;
let view = null;
let model = null; // the forward model's bytes, while its artifacts are being chosen
let run = null; // what a fresh run starts from: {name, artifacts: {training, evalModel, optimizer, checkpoint}, data}
let fresh = false; // the worker's session is untrained, just loaded from `run`

const showError = errorShower("own-error");
let outputNames = null; // the forward model's output names as they are (a name may hold commas or spaces)

// The outputs to export: the model's own while the field shows them, else the names typed there.
function outputs() {
  const text = $("own-outputs").value;
  return outputNames && text === outputNames.join(", ") ? outputNames : text.split(/[ ,]+/).filter(Boolean);
}
const copies = (artifacts) => Object.fromEntries(Object.entries(artifacts).map(([k, v]) => [k, v.slice(0)]));

async function loadArtifacts(name, artifacts) {
  run = { name, artifacts: copies(artifacts), data: null };
  const describe = await call("load", copies(artifacts));
  fresh = true;
  $("own-data").hidden = false;
  $("own-train").disabled = true;
  $("own-checkpoint").disabled = $("own-artifacts").disabled = false;
  view.startOver();
  $("own-inputs").textContent = `Training inputs: ${describe.train_inputs.join(", ")}. ` +
    `A .npz file needs one array with each of these names (rows along the first axis); a CSV file of numbers ` +
    `works for features and labels (the label column named ${describe.train_inputs.at(-1)}, or else the last). ` +
    `${describe.trainable_parameters} trainable parameters.`;
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
  const info = await call("modelDescribe", { bytes: model.bytes.slice(0) });
  if (info.ops_without_gradient.length) {
    $("own-error").hidden = false;
    $("own-error").textContent = `Note: these ops have no gradient rule, so parameters before them cannot be ` +
      `trained: ${info.ops_without_gradient.join(", ")}`;
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
  const art = await call("generateArtifacts", { model: model.bytes.slice(0), requiresGrad, frozenParams,
    loss: $("own-loss").value, optimizer: $("own-optimizer").value });
  await loadArtifacts(model.name, { training: art["training_model.onnx"], evalModel: art["eval_model.onnx"],
    optimizer: art["optimizer_model.onnx"], checkpoint: art.checkpoint });
}

async function setData(data) {
  const info = await call("dataFile", { bytes: data.bytes.slice(0), name: data.name });
  run.data = data;
  $("own-metrics").textContent = `${info.rows} rows (${info.train_rows} for training, ${info.validation_rows} for validation).`;
  $("own-best-row").hidden = !info.validation_rows; // the best epoch is the one with the lowest validation loss
  $("own-train").disabled = false;
}

const flow = {
  type: "sessionTrain",
  metric: () => null,
  metricValue: () => null,
  summary: (m) => (m.loss === null ? "" : `validation loss ${m.loss.toFixed(4)}`),
  async fresh() {
    if (!fresh) {
      await call("load", copies(run.artifacts));
      await call("dataFile", { bytes: run.data.bytes.slice(0), name: run.data.name });
    }
    fresh = false;
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
    await call("runRestore", { flow: "own", bytes: saved.checkpoint.slice(0), best: saved.bestCheckpoint?.slice(0) ?? null });
    fresh = false;
    $("own-outputs").value = saved.settings.outputs;
    outputNames = saved.settings.outputNames || null;
    view.restored(saved);
  },
});

export function setUpOwnModel(rpc, runtimeReady) {
  call = rpc;
  view = new TrainingView("own", call, flow, ["download", "checkpoint", "artifacts"]);
  $("own-files").addEventListener("change", (e) => runtimeReady.then(() => chooseFiles([...e.target.files])).catch(showError));
  $("own-prepare").onclick = () => prepare().catch(showError);
  $("own-npz").addEventListener("change", async (e) => {
    try {
      const file = e.target.files[0];
      await setData({ bytes: await file.arrayBuffer(), name: file.name });
      view.startOver();
    } catch (err) { showError(err); }
  });
  downloadButton("own-download", () => `${run.name}.onnx`, () => call("exportModel", { outputNames: outputs() }), showError);
  downloadButton("own-checkpoint", "checkpoint", () => call("runCheckpoint", { flow: "own" }), showError);
  downloadButton("own-artifacts", () => `${run.name}-artifacts.zip`, () => call("runArtifacts", { flow: "own" }), showError);
}
