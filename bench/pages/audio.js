// The audio task's hot path, clips to embeddings, timed in one page against onnxruntime-web 1.19.2 (one thread):
// - the library's AudioTask.addClips of a batch of 16 kHz clips (the log-mel front end, the windows and the
//   backbone, in the engine), each batch's samples removed again;
// - onnxruntime-web on the same clips with the same two models the site ships: melspectrogram.onnx on each clip,
//   openWakeWord's x / 10 + 2, the 76-frame windows every 8 frames, and embedding_model.onnx on them in batches of
//   64, as the task does.
import { AudioTask, start } from "../onnxtrain/onnxtrain.mjs";

ort.env.wasm.numThreads = 1;
ort.env.wasm.wasmPaths = new URL("../bench-vendor/ort/", location.href).href;

const { timeCalls } = window.benchUtil;
const WINDOW = 76, HOP = 8, MELS = 32, BATCH = 64;

// A clip's windows [n, 76, 32, 1] from melspectrogram.onnx's [1, 1, frames, 32].
function windowsOf(mel) {
  const frames = mel.dims[2];
  const n = frames >= WINDOW ? Math.floor((frames - WINDOW) / HOP) + 1 : 0;
  const out = new Float32Array(n * WINDOW * MELS);
  for (let k = 0; k < n; k++) {
    for (let i = 0; i < WINDOW * MELS; i++) out[k * WINDOW * MELS + i] = mel.data[k * HOP * MELS + i] / 10 + 2;
  }
  return [out, n];
}

window.bench = {
  ready: true,
  async run({ clips, seconds, timing }) {
    const samples = Math.round(seconds * 16000);
    const batch = Array.from({ length: clips }, (_, c) => Float32Array.from({ length: samples },
      (_, i) => 0.3 * Math.sin(2 * Math.PI * (200 + 40 * c) * i / 16000) + 0.05 * Math.sin(i * i * 1e-6)));
    const out = {};
    await start();
    const task = await AudioTask.create({ backbone: "../artifacts/speech_embedding/embedding_model.onnx" });
    const first = await task.addClips(batch, 0);
    out.windows = first.windows.reduce((a, b) => a + b, 0);
    for (const id of first.ids) await task.removeSample(id);
    out.ours = await timeCalls(async () => {
      const { ids } = await task.addClips(batch, 0);
      for (const id of ids) await task.removeSample(id);
    }, timing);

    const mel = await ort.InferenceSession.create("../artifacts/speech_embedding/melspectrogram.onnx");
    const embed = await ort.InferenceSession.create("../artifacts/speech_embedding/embedding_model.onnx");
    let windows = 0;
    out.ort = await timeCalls(async () => {
      windows = 0;
      for (const clip of batch) {
        const int16 = Float32Array.from(clip, (x) => x * 32768);
        const spec = (await mel.run({ [mel.inputNames[0]]: new ort.Tensor("float32", int16, [1, samples]) }))[
          mel.outputNames[0]];
        const [data, n] = windowsOf(spec);
        windows += n;
        for (let k = 0; k < n; k += BATCH) {
          const m = Math.min(BATCH, n - k);
          const feed = new ort.Tensor("float32", data.subarray(k * WINDOW * MELS, (k + m) * WINDOW * MELS),
            [m, WINDOW, MELS, 1]);
          await embed.run({ [embed.inputNames[0]]: feed });
        }
      }
    }, timing);
    out.ortWindows = windows;
    return out;
  },
};
