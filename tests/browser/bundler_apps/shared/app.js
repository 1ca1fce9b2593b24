// The sample apps' page (the same for every bundler): the library starts with a progress line, then the page
// trains the MLP whose training artifacts are served beside it on the batches of data.json, one optimizer step
// per batch, and offers the trained model, exported for inference, as a download.
import { start, Tensor, TrainingSession } from "onnxtrain";

const ARTIFACTS = {
  checkpointState: "artifacts/checkpoint",
  trainModel: "artifacts/training_model.onnx",
  evalModel: "artifacts/eval_model.onnx",
  optimizerModel: "artifacts/optimizer_model.onnx",
};

/** @param {string} text */
const show = (text) => {
  const status = document.getElementById("status");
  if (status) status.textContent = text;
};

async function train() {
  /** @type {import("onnxtrain").StartProgress[]} */
  const progress = [];
  await start({
    onProgress: (report) => {
      progress.push(report);
      show(report.phase === "download" ? `loading ${report.file} ${report.loaded} / ${report.total ?? "?"} bytes`
        : `loading: ${report.phase}`);
    },
  });
  const data = await (await fetch("data.json")).json();
  const session = await TrainingSession.create(ARTIFACTS);
  /** @type {number[]} */
  const losses = [];
  for (const { input, labels } of data.batches) {
    const feeds = {
      input: new Tensor("float32", Float32Array.from(input.data), input.dims),
      labels: new Tensor("int64", BigInt64Array.from(labels.data, BigInt), labels.dims),
    };
    const outputs = await session.runTrainStep(feeds);
    const loss = Number(outputs[session.trainingOutputNames[0]].data[0]);
    losses.push(loss);
    await session.runOptimizerStep();
    await session.lazyResetGrad();
    show(`step ${losses.length}: loss ${loss.toFixed(4)}`);
  }
  const model = await session.exportModelForInferencing(["output"]);
  await session.release();
  const link = /** @type {HTMLAnchorElement} */ (document.getElementById("download"));
  link.href = URL.createObjectURL(new Blob([model], { type: "application/octet-stream" }));
  link.hidden = false;
  return { losses, model, progress };
}

// window.appResult: what the page did, for its test
export function run() {
  train().then((result) => Object.assign(window, { appResult: result }), (err) => {
    show(err.message);
    Object.assign(window, { appResult: { error: err.message } });
  });
}
