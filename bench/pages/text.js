// The text task's two hot paths, timed in one page against onnxruntime-web 1.19.2 (one thread):
// - embeddings: the library's TextTask.addTexts of a batch of texts (tokenized and embedded in the engine), and
//   onnxruntime-web's InferenceSession on the same encoder (the site's artifacts/minilm/encoder.onnx) fed the
//   same batches' token ids (tokenized by bench_text.py);
// - the LoRA step: the text task's LoRA artifacts (written by bench_text.py from TextSession.setup("lora")) in the
//   library's TrainingSession and in onnxruntime-web's, the same batches (texts and their categories) in turn,
//   each step runTrainStep, runOptimizerStep and lazyResetGrad;
// - the TextTask's own LoRA run: the first epoch of its train(), and the second.
import { TextTask, TrainingSession, Tensor, start } from "../onnxtrain/onnxtrain.mjs";

ort.env.wasm.numThreads = 1;
ort.env.wasm.wasmPaths = new URL("../bench-vendor/ort/", location.href).href;

const { timeCalls } = window.benchUtil;

// A batch's [input_ids, attention_mask] as tensors of `Kind` (ort.Tensor or the library's Tensor).
const idTensors = (Kind, { ids, mask }) => {
  const shape = [ids.length, ids[0].length];
  const flat = (rows) => BigInt64Array.from(rows.flat(), BigInt);
  return { input_ids: new Kind("int64", flat(ids), shape), attention_mask: new Kind("int64", flat(mask), shape) };
};

// Steps of a TrainingSession (the library's or onnxruntime-web's) on the artifacts in `dir`, on `batches` in turn;
// their times and the first losses.
async function trainSteps(Session, Kind, dir, batches, timing) {
  const url = (name) => new URL(dir + name, location.href).href;
  const t = performance.now();
  const session = await Session.create({ checkpointState: url("checkpoint"), trainModel: url("training_model.onnx"),
    evalModel: url("eval_model.onnx"), optimizerModel: url("optimizer_model.onnx") });
  const createMs = performance.now() - t;
  const feeds = batches.map((batch) => ({ ...idTensors(Kind, batch),
    labels: new Kind("int64", BigInt64Array.from(batch.labels, BigInt), [batch.labels.length]) }));
  let next = 0;
  const losses = [];
  const once = async () => {
    const out = await session.runTrainStep(feeds[next++ % feeds.length]);
    await session.runOptimizerStep();
    await session.lazyResetGrad();
    if (losses.length < 3) losses.push(out[session.trainingOutputNames[0]].data[0]);
  };
  const times = await timeCalls(once, timing);
  await session.release();
  return { times, createMs, losses };
}

window.bench = {
  ready: true,
  async run({ dataUrl, timing }) {
    const data = await (await fetch(dataUrl)).json();
    const dir = new URL(".", new URL(dataUrl, location.href)).href;
    const out = {};
    let t = performance.now();
    await start();
    out.engineMs = performance.now() - t;
    t = performance.now();
    const task = await TextTask.create({ encoder: "../artifacts/minilm/encoder.onnx",
      tokenizer: "../artifacts/minilm/tokenizer.json" });
    out.loadMs = performance.now() - t;
    for (const name of data.classes) await task.addClass(name);
    for (const [index, texts] of data.train.entries()) await task.addTexts(texts, index);
    let next = 0;
    const embedBatch = async () => {
      const { ids } = await task.addTexts(data.batches[next++ % data.batches.length].texts, 0);
      for (const id of ids) await task.removeSample(id);
    };
    out.embedMs = await timeCalls(embedBatch, timing);

    const encoder = await ort.InferenceSession.create("../artifacts/minilm/encoder.onnx",
      { executionProviders: ["wasm"] });
    next = 0;
    out.ortEmbedMs = await timeCalls(async () => {
      const result = await encoder.run(idTensors(ort.Tensor, data.batches[next++ % data.batches.length]),
        ["embedding"]);
      for (const tensor of Object.values(result)) tensor.dispose?.();
    }, timing);
    await encoder.release();
    out.embedTokens = data.batches.map((b) => b.ids[0].length);

    out.ours = await trainSteps(TrainingSession, Tensor, dir, data.batches, timing);
    out.ort = await trainSteps(ort.TrainingSession, ort.Tensor, dir, data.batches, timing);

    await task.setup({ mode: "lora", rank: data.rank, seed: 0 });
    t = performance.now();
    await task.train({ epochs: 1, batchSize: data.batches[0].labels.length, learningRate: 1e-4, keepBest: false });
    out.taskEpochMs = performance.now() - t;
    t = performance.now();
    await task.train({ epochs: 2, batchSize: data.batches[0].labels.length, learningRate: 1e-4, keepBest: false });
    out.taskSecondEpochMs = performance.now() - t;
    await task.release();
    return out;
  },
};
