// "Train your own ONNX model": a forward model (artifacts generated in the page) or ORT's four artifacts,
import { TrainingChart } from "./chart.js";
import { $, download, errorShower } from "./ui.js";
// trained on a .npz file, exported as a plain ONNX model.
const ARTIFACTS = ["training_model.onnx", "eval_model.onnx", "optimizer_model.onnx", "checkpoint"];
let call = null;
let chart = null;
let lossSum = 0;
let lossCount = 0;
let model = null;
let generated = null; // the artifacts made in the page, offered for download

const showError = errorShower("own-error");

async function ready(describe) {
  $("own-data").hidden = false;
  $("own-train").textContent = "Train";
  chart.reset();
  $("own-inputs").textContent = `Training inputs: ${describe.train_inputs.join(", ")}. ` +
    `The .npz file needs one array with each of these names (rows along the first axis). ` +
    `${describe.trainable_parameters} trainable parameters.`;
}

async function chooseFiles(files) {
  $("own-error").hidden = true;
  $("own-generate").hidden = $("own-data").hidden = true;
  const byName = Object.fromEntries(files.map((f) => [f.name, f]));
  generated = null;
  $("own-artifacts").hidden = true;
  if (ARTIFACTS.every((n) => byName[n])) {
    const [training, evalModel, optimizer, checkpoint] = await Promise.all(ARTIFACTS.map((n) => byName[n].arrayBuffer()));
    await ready(await call("load", { training, evalModel, optimizer, checkpoint }));
    return;
  }
  if (files.length !== 1) {
    throw new Error(`choose one forward model (.onnx) or the four artifacts ${ARTIFACTS.join(", ")}`);
  }
  model = await files[0].arrayBuffer();
  const info = await call("modelDescribe", { bytes: model.slice(0) });
  if (info.ops_without_gradient.length) {
    $("own-error").hidden = false;
    $("own-error").textContent = `Note: these ops have no gradient rule, so parameters before them cannot be ` +
      `trained: ${info.ops_without_gradient.join(", ")}`;
  }
  const rows = info.parameters.filter((p) => p.float).map((p) =>
    `<tr><td><input type="checkbox" name="own-param" value="${p.name}" checked></td><td>${p.name}</td>` +
    `<td>${p.shape.join(" × ") || "scalar"}</td><td>${p.count}</td></tr>`);
  $("own-params").innerHTML = `<table><tr><th>train</th><th>parameter</th><th>shape</th><th>values</th></tr>${rows.join("")}</table>`;
  $("own-outputs").value = info.outputs.map((o) => o.name).join(", ");
  $("own-generate").hidden = false;
}

async function prepare() {
  $("own-error").hidden = true;
  const requiresGrad = [...document.querySelectorAll("input[name=own-param]:checked")].map((c) => c.value);
  const frozenParams = [...document.querySelectorAll("input[name=own-param]:not(:checked)")].map((c) => c.value);
  const art = await call("generateArtifacts", { model: model.slice(0), requiresGrad, frozenParams,
    loss: $("own-loss").value, optimizer: $("own-optimizer").value });
  generated = Object.fromEntries(Object.entries(art).map(([k, v]) => [k, v.slice(0)]));
  $("own-artifacts").hidden = false;
  await ready(await call("load", { training: art["training_model.onnx"], evalModel: art["eval_model.onnx"],
    optimizer: art["optimizer_model.onnx"], checkpoint: art.checkpoint }));
}

async function train() {
  $("own-error").hidden = true;
  $("own-train").disabled = true;
  $("own-pause").disabled = false;
  try {
    const epochs = Number($("own-epochs").value);
    const result = await call("sessionTrain", { epochs, batchSize: Number($("own-batch").value),
      lr: Number($("own-lr").value), schedule: $("own-schedule").value }, {
      onProgress: (p) => {
        $("own-progress").value = p.epoch / p.epochs;
        lossSum += p.loss; lossCount += 1;
        if (p.metrics) {
          chart.add(p.epoch, lossSum / lossCount, p.metrics.loss);
          lossSum = lossCount = 0;
        }
        const val = p.metrics && p.metrics.loss !== null ? ` · validation loss ${p.metrics.loss.toFixed(4)}` : "";
        $("own-metrics").textContent = `epoch ${p.epoch}/${p.epochs} · loss ${p.loss.toFixed(4)}${val} · ` +
          `${Math.round(p.examplesPerSecond)} examples/s`;
      },
    });
    $("own-metrics").textContent = (result.cancelled ? "Paused. " : "Done. ") + $("own-metrics").textContent;
    $("own-train").textContent = result.cancelled ? "Resume" : "Train";
    $("own-download").disabled = $("own-checkpoint").disabled = false;
  } catch (err) {
    showError(err);
  } finally {
    $("own-train").disabled = false;
    $("own-pause").disabled = true;
  }
}

export function setUpOwnModel(rpc, runtimeReady) {
  call = rpc;
  chart = new TrainingChart($("own-chart"));
  $("own-files").addEventListener("change", (e) => runtimeReady.then(() => chooseFiles([...e.target.files])).catch(showError));
  $("own-prepare").onclick = () => prepare().catch(showError);
  $("own-npz").addEventListener("change", async (e) => {
    try {
      const info = await call("dataNpz", { bytes: await e.target.files[0].arrayBuffer() });
      $("own-metrics").textContent = `${info.rows} rows (${info.train_rows} for training, ${info.validation_rows} ` +
        `for validation).`;
      $("own-train").disabled = false;
    } catch (err) { showError(err); }
  });
  $("own-train").onclick = train;
  $("own-pause").onclick = () => call("cancel");
  $("own-download").onclick = async () => {
    const names = $("own-outputs").value.split(/[ ,]+/).filter(Boolean);
    try { download(await call("exportModel", { outputNames: names }), "model.onnx"); } catch (err) { showError(err); }
  };
  $("own-artifacts").onclick = () => { for (const name of ARTIFACTS) download(generated[name], name); };
  $("own-checkpoint").onclick = async () => download(await call("saveCheckpoint", { includeOptimizerState: true }), "checkpoint");
}
