// Tasks: whole training flows (a CSV table, a folder of images, handwriting, a backbone personalised, text
// categories, sounds).  Each kind's calls are declared in onnxtrain.web.task_kinds, and tests/web/test_task_kinds.py holds
// these classes to it.  Each task owns its data, model and run; train() is the sessions' loop over the task's own data,
// with each epoch's metrics (the task's evaluate()) in its last record.  The page that onnxtrain's app is uses them.
// Each task takes onnxruntime-web's executionProviders among its options, as TrainingSession.create does, and
// says in executionProvider which runs its training (and, for PersonalizeTask, TextTask and AudioTask, its
// embeddings).
import { RATE, clipsOf } from "./audio.mjs";
import { callOf, connect, releaseOf } from "./engine_client.mjs";
import { BYTE_SOURCES, bytesOf, bytesWithProgress, fileName as nameOf, imagesOf, isA, isImage, rgbaOf } from "./inputs.mjs";
import { checkTrainCallbacks, optionsOf, providersOf, trainLoop } from "./session.mjs";

class Task {
  constructor(connection, info) {
    this._engine = connection;
    this._handle = info.handle;
    this.executionProvider = info.executionProvider;
  }

  static async _make(kind, args) {
    const connection = connect();
    await connection.ready;
    return new this(connection, await connection.call("create_task", null, [kind, args]));
  }

  _call(method, ...args) { return callOf(this, "task", method, args); }

  // Train up to `epochs` epochs in all (a paused run goes on): {epochs, batchSize, learningRate, schedule,
  // warmup, keepBest, patience, checkFinite, checkpoints, onProgress, signal}; see trainLoop.
  async train(options = {}) {
    const { onProgress, onStart, signal, ...rest } = options ?? {};
    checkTrainCallbacks(onProgress, signal, onStart);
    return trainLoop((method, ...args) => this._call(method, ...args), [optionsOf(rest, "train")], onProgress, signal,
      onStart);
  }

  async checkpoint() { return this._call("checkpoint"); }

  // Continue a run from its checkpoint (and the best epoch's, from a record's bestCheckpoint); its epoch.
  async restore(checkpoint, best = null) {
    return this._call("restore", await bytesOf(checkpoint, "the checkpoint"),
      await bytesOf(best, "the best checkpoint"));
  }

  // The training artifacts with the run's current state as checkpoint, as a .zip, to go on elsewhere.
  async artifactsZip() { return this._call("artifacts_zip"); }

  // One ONNX model with the preprocessing inside (every task's exportModel; a bundle, where a task has one, is
  // exportZip's).
  async exportModel() { return this._call("export_model"); }

  async signature() { return this._call("signature"); }

  // Frees the task in the engine; a second release() resolves, any other call rejects.
  async release() { return releaseOf(this); }
}

// A CSV table: the label column predicted from the others, with the preprocessing in the exported model.
export class TabularTask extends Task {
  static async create(csv, fileName = nameOf(csv, "data.csv"), { executionProviders } = {}) {
    return this._make("tabular", [await bytesOf(csv, "the CSV file"), String(fileName),
      providersOf({ executionProviders })]);
  }

  async describe() { return this._call("describe"); }

  async detectTask(label) { return this._call("detect_task", String(label)); }

  async setup({ label, task, hidden, validation = 0.2, seed = 0, optimizer = "AdamW" } = {}) {
    return this._call("setup", String(label), task, hidden, validation, seed, optimizer);
  }

  async evaluate() { return this._call("evaluate"); }

  async predictValidation() { return this._call("predict_validation"); }

  // The exported model's predictions for another CSV with the same columns, `limit` rows from `offset`.
  async predictCsv(csv, { offset = 0, limit = 100 } = {}) {
    return this._call("predict_csv", await bytesOf(csv, "the CSV file"), offset, limit);
  }
}

// Images in classes: a small CNN on size x size RGBA pixels, the resize and scaling in the exported model.
export class ImageTask extends Task {
  // pixels: RGBA bytes of `count` images of size x size (decodeImages gives them), labels: class index per image.
  static async create({ pixels, count, size, labels, classes, validation = 0.2, seed = 0, optimizer = "AdamW",
    executionProviders } = {}) {
    for (const [name, value, what] of [["labels", labels, "a class index per image"],
      ["classes", classes, "the class names"]]) {
      if (value == null || typeof value[Symbol.iterator] !== "function" || typeof value === "string") {
        throw new TypeError(`ImageTask.create needs ${name}: ${what} (decodeImages gives them)`);
      }
    }
    return this._make("images", [await bytesOf(pixels, "the pixels"), [count, size], Array.from(labels, Number),
      Array.from(classes, String), validation, seed, optimizer, providersOf({ executionProviders })]);
  }

  // Files ({path, bytes}, or File objects such as <input type=file webkitdirectory> gives, their path the
  // webkitRelativePath) decoded and resized to size x size RGBA, each labelled by its folder; files that are not
  // images are skipped and listed, and none being an image rejects.  `fit`: "stretch" the whole image, or take its
  // "centre" square (what PersonalizeTask's backbone sees).  {pixels, count, size, labels, classes, skipped}
  static async decodeImages(files, size, { fit = "stretch" } = {}) {
    if (fit !== "stretch" && fit !== "centre") throw new TypeError(`fit is "stretch" or "centre", not ${fit}`);
    const canvas = new OffscreenCanvas(size, size);
    const context = canvas.getContext("2d", { willReadFrequently: true });
    context.imageSmoothingQuality = "high";
    const pixels = [];
    const names = [];
    const skipped = [];
    for (const file of files) {
      const isFile = isA(file, "File");
      const path = isFile ? file.webkitRelativePath || file.name : file?.path;
      if (typeof path !== "string") throw new TypeError("decodeImages takes File objects or {path, bytes} objects");
      const parts = path.split("/").filter(Boolean);
      let bitmap;
      try {
        bitmap = await createImageBitmap(isFile ? file : new Blob([file.bytes]));
      } catch {
        skipped.push(path);
        continue;
      }
      context.clearRect(0, 0, size, size);
      const side = Math.min(bitmap.width, bitmap.height);
      if (fit === "centre") {
        context.drawImage(bitmap, (bitmap.width - side) / 2, (bitmap.height - side) / 2, side, side, 0, 0, size, size);
      } else {
        context.drawImage(bitmap, 0, 0, size, size);
      }
      bitmap.close();
      pixels.push(context.getImageData(0, 0, size, size).data);
      names.push(parts.length >= 2 ? parts[parts.length - 2] : "unlabelled");
    }
    if (!pixels.length) {
      const some = skipped.slice(0, 3).map((p) => JSON.stringify(p)).join(", ");
      const n = skipped.length;
      throw new Error(`no image this browser decodes among the ${n} file${n === 1 ? "" : "s"}: ${some}` +
        `${n > 3 ? `, … (${n} skipped)` : ""}`);
    }
    const classes = [...new Set(names)].sort();
    const all = new Uint8Array(pixels.length * size * size * 4);
    pixels.forEach((p, i) => all.set(p, i * size * size * 4));
    return { pixels: all, count: pixels.length, size, labels: names.map((n) => classes.indexOf(n)), classes, skipped };
  }

  async info() { return this._call("info"); }

  async evaluate() { return this._call("evaluate"); }

  // Class probabilities for one image: RGBA bytes of the task's size, or an image (IMAGE_SOURCES) drawn to that size
  // as decodeImages stretches it.
  async predict(pixels) {
    if (isImage(pixels)) {
      this._size ??= await this._call("size");
      return this._call("predict", (await rgbaOf(pixels, "the image", this._size, this._size)).data);
    }
    return this._call("predict", await bytesOf(pixels, "the image"));
  }
}

// A pretrained classifier of 8x8 drawings, fine-tuned on the user's own examples (and classes).
export class HandwritingTask extends Task {
  static async create(model, replay = null, { executionProviders } = {}) {
    return this._make("handwriting", [await bytesOf(model, "the model"), await bytesOf(replay, "the replay data"),
      null, providersOf({ executionProviders })]);
  }

  static async fromSnapshot(snapshot, replay = null, { executionProviders } = {}) {
    return this._make("handwriting_snapshot", [await bytesOf(snapshot, "the snapshot"),
      await bytesOf(replay, "the replay data"), providersOf({ executionProviders })]);
  }

  async classes() { return this._call("classes"); }

  async predict(pixels) { return this._call("predict", Array.from(pixels, Number)); }

  async addClass(name) { return this._call("add_class", String(name)); }

  async addExample(pixels, label) { return this._call("add_example", Array.from(pixels, Number), Number(label)); }

  async counts() { return this._call("counts"); }

  async snapshot() { return this._call("snapshot"); }

  // Fine-tune the head (or the whole model) on the examples: train() between the start and the finish.
  async fineTune({ headOnly = true, epochs = 20, batchSize = 32, learningRate = 0.01, onProgress, signal } = {}) {
    await this._call("start_fine_tune", Boolean(headOnly));
    const summary = await this.train({ epochs, batchSize, learningRate, keepBest: false, onProgress, signal });
    return { ...summary, ...(await this._call("finish_fine_tune")) };
  }
}

// The tasks that learn the user's own classes from samples (PersonalizeTask, TextTask, AudioTask): their classes and
// samples, and the snapshot that keeps both with the cached embeddings.
class ClassesTask extends Task {
  async addClass(name) { return this._call("add_class", String(name)); }

  async renameClass(index, name) { await this._call("rename_class", Number(index), String(name)); }

  // Removes the class and its samples; the classes after it move down one.
  async removeClass(index) { await this._call("remove_class", Number(index)); }

  async removeSample(id) { await this._call("remove_sample", Number(id)); }

  async classes() { return this._call("classes"); }

  // The number of samples of each class, in class order.
  async counts() { return this._call("counts"); }

  // Every sample: [{id, classIndex}], in the order added.
  async samples() {
    return (await this._call("sample_list")).map(([id, classIndex]) => ({ id, classIndex }));
  }

  // Classes, samples (with their cached embeddings) and the run, as bytes for fromSnapshot.
  async snapshot() { return this._call("snapshot"); }
}

// A task of `kind` (Class's) made from a pretrained model, `source` read with progress (onLoad({loaded, total,
// seconds, stage: "download"}) per chunk, then once with stage "ready" when the engine holds it), and the
// factory's other arguments `rest` (or a promise of them); it knows how long the load took (info()'s loadSeconds).
async function withModel(Class, kind, [source, what], rest, onLoad) {
  const started = performance.now();
  connect();
  const [bytes, others] = await Promise.all([bytesWithProgress(source, what, onLoad, started), rest]);
  const task = await Class._make(kind, [bytes, ...others]);
  task._loadSeconds = (performance.now() - started) / 1000;
  onLoad?.({ loaded: bytes.length, total: bytes.length, seconds: task._loadSeconds, stage: "ready" });
  return task;
}

// A pretrained image backbone (ONNX with outputs `features` and `block`, see onnxtrain.tasks.backbone) taught the
// user's own classes: each sample is embedded once when added (in the engine, preprocessing inside one ONNX graph)
// and cached, the head is trained on the cache, and exportModel() gives one ONNX model from uint8 RGB(A) pixels of
// any size to `probabilities` and `label`.
export class PersonalizeTask extends ClassesTask {
  // backbone: a URL (fetched here, onLoad({loaded, total, seconds, stage: "download"}) per chunk), an ArrayBuffer
  // or a Uint8Array.  onLoad is called once more with stage "ready" when the engine holds the backbone.
  // executionProviders as TrainingSession.create's: the embeddings, the head's training and its predictions run
  // on the first that is here.
  static async create(backbone, { onLoad, executionProviders } = {}) {
    return this._load("personalize", backbone, [providersOf({ executionProviders })], onLoad);
  }

  // The task a snapshot() was taken of, on the same backbone (without embedding the samples again).
  static async fromSnapshot(backbone, snapshot, { onLoad, executionProviders } = {}) {
    const bytes = await bytesOf(snapshot, "the snapshot");
    if (!bytes) throw new TypeError("fromSnapshot needs the snapshot's bytes");
    return this._load("personalize_snapshot", backbone, [bytes, providersOf({ executionProviders })], onLoad);
  }

  static async _load(kind, backbone, rest, onLoad) {
    return withModel(this, kind, [backbone, "the backbone"], rest, onLoad);
  }

  // {inputSize, features, blockShape, backboneBytes, backboneSha256, source, loadSeconds}
  async info() { return { ...(await this._call("info")), loadSeconds: this._loadSeconds }; }

  // Samples of class `classIndex`: RGBA bytes of `count` images of width x height, or one image (IMAGE_SOURCES, at
  // its natural size: addSamples(image, classIndex)); their ids.
  async addSamples(pixels, size, classIndex) {
    if (isImage(pixels) && classIndex === undefined) {
      [size, classIndex] = [undefined, size];
    }
    const [bytes, shape] = await imagesOf(pixels, size, "the samples");
    return this._call("add_samples", bytes, shape, Number(classIndex));
  }

  // A new run (the head for the classes there are now, on all samples): {samples, train, validation, classes,
  // trainPerClass, validationPerClass, fineTune, parameters}.  Then train().
  async setup({ fineTune = false, validation = 0, seed = 0, optimizer = "AdamW" } = {}) {
    return this._call("setup", Boolean(fineTune), Number(validation), Number(seed), String(optimizer));
  }

  // Accuracy, baseline and confusion on the validation samples (on the training samples without validation).
  async evaluate() { return this._call("evaluate"); }

  // {probabilities, label, className} of one image: RGBA bytes of width x height, or an image (IMAGE_SOURCES).
  async predict(pixels, size) {
    const [bytes, shape] = await imagesOf(pixels, size, "the image");
    if (shape[0] !== 1) throw new TypeError(`predict takes one image, not ${shape[0]}`);
    return (await this._call("predict", bytes, shape))[0];
  }
}

// The texts a task takes: an array (or iterable) of strings, each sent as it is (the engine refuses one that is not
// a string, naming its index).
function textsOf(texts, what) {
  if (typeof texts === "string" || texts == null || typeof texts[Symbol.iterator] !== "function") {
    throw new TypeError(`${what} must be an array of strings`);
  }
  return Array.from(texts);
}

// A sentence encoder (all-MiniLM-L6-v2 as the site ships it: artifacts/minilm/encoder.onnx and tokenizer.json)
// taught the user's own text categories: a head on the frozen encoder's embeddings (each text embedded once and
// cached), or LoRA adapters on its attention with the head.  Tokenized in the engine by onnxtrain's WordPiece
// tokenizer; exportModel() gives one ONNX model (input_ids, attention_mask -> probabilities, label; LoRA merged),
// exportZip() a .zip of it, its tokenizer.json and a README.
export class TextTask extends ClassesTask {
  // The site's encoder and tokenizer, relative to the page.
  static ENCODER = "artifacts/minilm/encoder.onnx";
  static TOKENIZER = "artifacts/minilm/tokenizer.json";

  // encoder, tokenizer: URLs (relative to the page; fetched here, onLoad({loaded, total, seconds, stage:
  // "download"}) per chunk of the encoder), Responses, Blobs or bytes; by default the site's artifacts/minilm/.
  // onLoad is called once more with stage "ready" when the engine holds the encoder.
  static async create({ encoder = TextTask.ENCODER, tokenizer = TextTask.TOKENIZER, onLoad,
    executionProviders } = {}) {
    return this._load("text", encoder, tokenizer, [providersOf({ executionProviders })], onLoad);
  }

  // The task a snapshot() was taken of, on the same encoder and tokenizer (without embedding the texts again).
  static async fromSnapshot(snapshot, { encoder = TextTask.ENCODER, tokenizer = TextTask.TOKENIZER, onLoad,
    executionProviders } = {}) {
    const bytes = await bytesOf(snapshot, "the snapshot");
    if (!bytes) throw new TypeError("fromSnapshot needs the snapshot's bytes");
    return this._load("text_snapshot", encoder, tokenizer, [bytes, providersOf({ executionProviders })], onLoad);
  }

  static async _load(kind, encoder, tokenizer, rest, onLoad) {
    const vocabulary = bytesOf(tokenizer, "the tokenizer").then((bytes) => {
      if (!bytes) throw new TypeError(`the tokenizer must be ${BYTE_SOURCES}`);
      return [bytes, ...rest];
    });
    return withModel(this, kind, [encoder, "the encoder"], vocabulary, onLoad);
  }

  // {hidden (the embedding's size), maxLength (the tokens a text is cut to), encoderBytes, encoderSha256,
  // loadSeconds, executionProvider}
  async info() { return { ...(await this._call("info")), loadSeconds: this._loadSeconds }; }

  // Texts of class `classIndex`, embedded now: {ids, truncated (the indices of texts longer than the encoder reads,
  // cut to its first tokens)}.
  async addTexts(texts, classIndex) {
    return this._call("add_texts", textsOf(texts, "the texts"), Number(classIndex));
  }

  // The rows of a CSV file (UTF-8, a header row): the column `text` as texts, `label` as their classes (new class
  // names are added): {added, classes, truncated (how many texts were cut)}.
  async addCsv(csv, { text, label } = {}) {
    for (const [name, value] of [["text", text], ["label", label]]) {
      if (typeof value !== "string" || !value) throw new TypeError(`addCsv needs ${name}: the name of a column`);
    }
    return this._call("add_csv", await bytesOf(csv, "the CSV file"), text, label);
  }

  // The texts (of class `classIndex`, or all), in the order added: [{id, text, truncated}].
  async texts(classIndex) {
    const args = classIndex === undefined ? [] : [Number(classIndex)];
    return (await this._call("texts", ...args)).map(([id, text, truncated]) => ({ id, text, truncated }));
  }

  // A new run on all texts: mode "head" (a head on the cached embeddings) or "lora" (rank-`rank` adapters on the
  // encoder's attention, and the head).  Then train().
  async setup({ mode = "head", rank = 8, validation = 0, seed = 0, optimizer = "AdamW" } = {}) {
    if (mode !== "head" && mode !== "lora") throw new TypeError(`mode is "head" or "lora", not ${mode}`);
    return this._call("setup", mode, Number(rank), Number(validation), Number(seed), String(optimizer));
  }

  // Accuracy, baseline and confusion on the validation texts (on the training texts without validation).
  async evaluate() { return this._call("evaluate"); }

  // {probabilities, label, className, truncated} of each text of an array, or of one text (a string).
  async predict(texts) {
    if (typeof texts === "string") return (await this._call("predict", [texts]))[0];
    return this._call("predict", textsOf(texts, "the texts to predict"));
  }

  // The .zip to download: model.onnx, tokenizer.json and README.md.
  async exportZip() { return this._call("export_zip"); }

  // Deprecated: exportModel(), the ONNX model, under the name it had when exportModel() gave the .zip.
  async exportOnnx() { return this._call("export_model"); }

}

// Google's speech_embedding (openWakeWord's embedding_model.onnx, as the site ships it in artifacts/speech_embedding/)
// taught the user's own sounds, with a background-noise class (class 0, "Background Noise") as Teachable Machine has:
// each clip is cut into 775 ms windows every 80 ms, each window embedded once (96 values) and cached, a head trained
// on them (or, with fineTune, the backbone's last convolution too).  exportModel() gives one ONNX model from 16 kHz
// float PCM (`pcm` [batch, samples], -1..1) to `probabilities` and `label`, the log-mel front end inside.
export class AudioTask extends ClassesTask {
  static BACKBONE = "artifacts/speech_embedding/embedding_model.onnx";
  static BACKGROUND = "Background Noise";
  static RATE = RATE;

  // backbone: a URL (relative to the page; fetched here, onLoad({loaded, total, seconds, stage: "download"}) per
  // chunk), a Response, a Blob or bytes; by default the site's.  onLoad once more with stage "ready".
  static async create({ backbone = AudioTask.BACKBONE, onLoad, executionProviders } = {}) {
    return this._load("audio", backbone, [providersOf({ executionProviders })], onLoad);
  }

  // The task a snapshot() was taken of, on the same backbone (without embedding the clips again).
  static async fromSnapshot(snapshot, { backbone = AudioTask.BACKBONE, onLoad, executionProviders } = {}) {
    const bytes = await bytesOf(snapshot, "the snapshot");
    if (!bytes) throw new TypeError("fromSnapshot needs the snapshot's bytes");
    return this._load("audio_snapshot", backbone, [bytes, providersOf({ executionProviders })], onLoad);
  }

  static async _load(kind, backbone, rest, onLoad) {
    return withModel(this, kind, [backbone, "the backbone"], rest, onLoad);
  }

  // {rate, windowSamples, hopSamples, embedding, backboneBytes, backboneSha256, loadSeconds, executionProvider}
  async info() { return { ...(await this._call("info")), loadSeconds: this._loadSeconds }; }

  // Clips of class `classIndex` (one, or an array: CLIP_SOURCES; a Float32Array is at `rate`, by default 16 kHz),
  // embedded now: {ids, windows (each clip's), notices (resampled, mixed down, clipped)}.  `names` name them in
  // messages (by default a File's own name).  Nothing is added when one is bad.
  async addClips(clips, classIndex, { rate = RATE, names } = {}) {
    const [items, named] = await clipsOf(clips, Number(rate), names, "clip");
    return this._call("add_clips", items, Number(classIndex), named);
  }

  // A new run on all clips: {samples, train, validation, classes, trainPerClass, validationPerClass, trainWindows,
  // fineTune, parameters}.  Then train().
  async setup({ fineTune = false, validation = 0, seed = 0, optimizer = "AdamW" } = {}) {
    return this._call("setup", Boolean(fineTune), Number(validation), Number(seed), String(optimizer));
  }

  // Accuracy, baseline and confusion on the validation clips (on the training clips without validation).
  async evaluate() { return this._call("evaluate"); }

  // {probabilities, label, className, notices} of one clip, or of each of an array of clips.
  async predict(clips, { rate = RATE } = {}) {
    const one = !Array.isArray(clips);
    const [items, named] = await clipsOf(clips, Number(rate), null, "clip to predict");
    const out = await this._call("predict", items, named);
    return one ? out[0] : out;
  }
}
