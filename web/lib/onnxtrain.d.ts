// Type declarations of onnxtrain.mjs (and of globalThis.onnxtrain, which onnxtrain.js defines, and of
// globalThis.ort, which it defines as the same object where no onnxruntime-web did).
// The names and semantics follow onnxruntime-web 1.19.2's training API; what it lacks is marked "Beyond".
// onnxtrain.d.mts is the same file, for TypeScript's resolution of an import of onnxtrain.mjs by its path.
// A classic script (no import) gets both globals from onnxtrain-global.d.ts: see the README's "TypeScript".
// Every byte result is a Uint8Array over an ArrayBuffer of its own (so `new Blob([bytes])` takes it).

/** The classic script's global (a script that is not a module uses `onnxtrain.TrainingSession` and so on; its
 * other global, `ort`, is declared by onnxtrain-global.d.ts). */
export as namespace onnxtrain;

export type TensorType = "float32" | "float64" | "int8" | "int16" | "int32" | "int64" | "uint8" | "uint16"
  | "uint32" | "uint64" | "bool";

export type TensorData = Float32Array | Float64Array | Int8Array | Int16Array | Int32Array | BigInt64Array
  | Uint8Array | Uint16Array | Uint32Array | BigUint64Array;

/** A tensor on the CPU, as onnxruntime-web's Tensor. */
export class Tensor {
  constructor(type: TensorType, data: TensorData | readonly number[] | readonly bigint[], dims?: readonly number[]);
  constructor(data: TensorData | readonly number[] | readonly bigint[], dims?: readonly number[]);
  readonly type: TensorType;
  readonly data: TensorData;
  readonly cpuData: TensorData;
  readonly dims: readonly number[];
  readonly size: number;
  readonly location: "cpu";
  reshape(dims: readonly number[]): Tensor;
  dispose(): void;
}

/** What a feed may be: this library's Tensor, onnxruntime-web's, or any object with type, data and dims. */
export interface TensorLike {
  readonly type: string;
  readonly data: TensorData;
  readonly dims: readonly number[];
}

export type FeedsType = { readonly [name: string]: TensorLike };
export type FetchesType = readonly string[] | { readonly [name: string]: TensorLike | null };
export type ReturnType = { readonly [name: string]: Tensor };

/** A model, checkpoint or file: a URL (a string relative to the page, or a URL), a Response, a Blob (or File), an
 * ArrayBuffer or a Uint8Array. A URL or Response that is not ok rejects with its URL and HTTP status. */
export type URIorBuffer = string | URL | Response | Blob | ArrayBuffer | Uint8Array;

/** An image the tasks take besides RGBA bytes, drawn to RGBA at its natural size; one that is not loaded yet (a
 * video without a frame, a closed bitmap or frame) rejects. */
export type ImageSource = HTMLImageElement | HTMLCanvasElement | OffscreenCanvas | HTMLVideoElement | ImageBitmap |
  VideoFrame | ImageData;

export interface TrainingSessionCreateOptions {
  checkpointState: URIorBuffer;
  trainModel: URIorBuffer;
  evalModel?: URIorBuffer | null;
  optimizerModel?: URIorBuffer | null;
}

/** onnxruntime-web's session options; of them onnxtrain reads only executionProviders. */
export interface SessionOptions {
  /** Tried in order: "webgpu" (where the browser has a WebGPU adapter), "wasm" and "cpu" (the CPU). Without it,
   * "wasm". Asking only for "webgpu" where there is no adapter is an error that names WebGPU. */
  executionProviders?: ReadonlyArray<"webgpu" | "wasm" | "cpu" | { name: "webgpu" | "wasm" | "cpu" }>;
  /** The engine's start, where this session starts it (as start()'s). */
  onProgress?: (progress: StartProgress) => void;
  [option: string]: unknown;
}

export class TrainingSession {
  /** Loads the artifacts into the library's worker (started with the first session); many sessions may live at
   * once. Of onnxruntime-web's session options, executionProviders is read; the others are accepted and
   * ignored. */
  static create(trainingOptions: TrainingSessionCreateOptions, sessionOptions?: SessionOptions): Promise<TrainingSession>;

  /** The execution provider the session runs on: "webgpu", "wasm" or "cpu" (the first of executionProviders
   * that is here). */
  readonly executionProvider: "webgpu" | "wasm" | "cpu";

  readonly trainingInputNames: readonly string[];
  readonly trainingOutputNames: readonly string[];
  readonly evalInputNames: readonly string[];
  readonly evalOutputNames: readonly string[];

  /** Forward and backward; gradients add up until lazyResetGrad(). */
  runTrainStep(feeds: FeedsType, options?: object): Promise<ReturnType>;
  runTrainStep(feeds: FeedsType, fetches: FetchesType, options?: object): Promise<ReturnType>;
  runEvalStep(feeds: FeedsType, options?: object): Promise<ReturnType>;
  runEvalStep(feeds: FeedsType, fetches: FetchesType, options?: object): Promise<ReturnType>;
  /** Resolves at once: the step runs first thing in the session's next request (one round trip a step of the
   * runTrainStep / runOptimizerStep / lazyResetGrad loop), whose results are those of running it now. */
  runOptimizerStep(options?: object): Promise<void>;
  /** As runOptimizerStep: it rides with the next request. */
  lazyResetGrad(): Promise<void>;

  getParametersSize(trainableOnly?: boolean): Promise<number>;
  /** The parameters as one float32 tensor, in the training model's input order. */
  getContiguousParameters(trainableOnly?: boolean): Promise<Tensor>;
  /** Float32 bytes in the layout of getContiguousParameters. */
  loadParametersBuffer(buffer: URIorBuffer, trainableOnly?: boolean): Promise<void>;

  /** Beyond onnxruntime-web: an inference model (ONNX bytes) with the given outputs (a list, or one name). */
  exportModelForInferencing(outputNames: string | readonly string[]): Promise<Uint8Array<ArrayBuffer>>;
  /** onnxruntime-training's checkpoint format, parameters, optimizer state and properties. */
  saveCheckpoint(includeOptimizerState?: boolean): Promise<Uint8Array<ArrayBuffer>>;
  loadCheckpoint(checkpoint: URIorBuffer): Promise<void>;
  /** The user's properties of the checkpoint state, saved with it; a whole number is stored as an int. Names
   * starting with "onnxtrain." are the library's own: kept in the checkpoint, left out here, refused by
   * setProperty. */
  getProperties(): Promise<Record<string, number | string>>;
  setProperty(name: string, value: number | string): Promise<void>;
  setLearningRate(learningRate: number): Promise<void>;
  getLearningRate(): Promise<number>;

  /** Beyond onnxruntime-web: the epoch loop (onnxtrain.train.Trainer in the worker), a chunk of whole steps
   * (about 50 ms) per request. onProgress gets each step's record; an aborted signal rejects with signal.reason
   * (an AbortError DOMException unless abort() was given a reason) after the current chunk, and the session
   * stays at its last whole step. While it runs, every other call on the session rejects with an Error. After
   * any failure the session goes on working, and train() may be called again. */
  train(dataset: Dataset, options?: SessionTrainOptions): Promise<TrainSummary>;

  /** A data file for train(): a .npz with one array per training input (named like them), or a CSV of numbers for
   * a model whose training inputs are features and labels (the label column named like the labels input, else the
   * last). validationRows: the rows train({validation}) holds out for that fraction. */
  readDataset(file: URIorBuffer, fileName?: string, validation?: number):
    Promise<{ dataset: Dataset; rows: number; validationRows: number;
      inputs: Record<string, [number[], string]> }>;

  /** The four artifacts with the run's state as the checkpoint, and a README, as a .zip. */
  artifactsZip(): Promise<Uint8Array<ArrayBuffer>>;

  /** Frees the session in the worker; a second release() resolves, any other call after it rejects. */
  release(): Promise<void>;
}

export interface SessionTrainOptions extends TrainOptions {
  /** Default 0: the shuffling and the validation split. */
  seed?: number;
  /** Default true: a new order of the rows each epoch, drawn from `seed`. */
  shuffle?: boolean;
  /** A fraction in [0, 1) of the dataset's rows held out (seeded), or a dataset of its own. */
  validation?: number | Dataset;
  /** true: the run the last train() left (paused, aborted or done) goes on, on the same dataset, to `epochs` in
   * all; `validation` and `seed` may be given again when they are the run's, a different one rejects. */
  resume?: boolean;
  /** An epoch's checkpoint (a record's `checkpoint`): its run goes on from there, on the same dataset. */
  resumeFrom?: URIorBuffer;
  /** That run's best epoch (a record's `bestCheckpoint`), so keepBest can put it back at the end. */
  resumeBest?: URIorBuffer;
}

/** Each training input's rows along dim 0: input name -> Tensor (this library's, onnxruntime-web's, or any
 * {type, data, dims}). */
export type Dataset = { readonly [inputName: string]: TensorLike };

export interface TrainOptions<M extends object = NoMetrics> {
  /** Default 1; null trains until early stopping (patience) or an abort. */
  epochs?: number | null;
  /** Default 32; the last batch of an epoch holds the rows left. */
  batchSize?: number;
  /** Default: the optimizer's current rate. */
  learningRate?: number;
  /** "linear": LinearLRScheduler's rate over epochs * stepsPerEpoch steps, the first `warmup` fraction warming
   * up from 0. Default "constant". */
  schedule?: "constant" | "linear";
  /** A fraction in [0, 1) of the run's steps; default 0. */
  warmup?: number;
  /** Default true: with a validation loss, a finished run ends with the best epoch's parameters. */
  keepBest?: boolean;
  /** Stop after this many epochs without a lower validation loss; default 0, never. */
  patience?: number;
  /** Default true: a step with a non-finite loss or update is undone and the run fails with an Error. */
  checkFinite?: boolean;
  /** FedProx's proximal term as a proximal step: after each optimizer step every trainable parameter w becomes
   * w - learningRate * proximalMu * (w - w0), w0 its value when the run began. Default 0 (none). */
  proximalMu?: number;
  /** true: each epoch's last record carries `checkpoint` (and `bestCheckpoint` when it is the best so far), and
   * the summary of a finished run the checkpoint it ends with. */
  checkpoints?: boolean;
  onProgress?: (record: TrainProgress<M>) => void;
  /** Called once the run has begun. */
  onStart?: (info: TrainStart) => void;
  signal?: AbortSignal;
}

/** What train()'s onStart is told: the run's rows (validationRows held out of them), its epochs (null: until
 * early stopping) and the epoch it begins at (more than 0 when it goes on). */
export interface TrainStart { rows: number; validationRows: number; stepsPerEpoch: number; epochs: number | null;
  epoch: number }

/** An epoch's metrics (M of the train records) are a task's evaluate(); a TrainingSession's epochs have none. */
export type NoMetrics = { readonly [name: string]: never };

export interface BestEpoch {
  /** The epoch (1-based) with the lowest validation loss so far; null without validation. */
  bestEpoch: number | null;
  bestLoss: number | null;
  epochsWithoutImprovement: number;
  /** Early stopping: patience epochs without a lower validation loss. */
  stop: boolean;
}

export interface EpochRecord<M extends object = NoMetrics> {
  epoch: number;
  /** The mean training loss of the epoch's steps (weighted by their rows); null for an epoch trained before this
   * train() (a resumed run's). */
  loss: number | null;
  /** null without validation data. */
  validationLoss: number | null;
  metrics: M;
  best: BestEpoch & { improved: boolean };
}

/** One step of train(). */
export interface TrainProgress<M extends object = NoMetrics> {
  /** Finished epochs. */
  epoch: number;
  /** Steps done in this run. */
  step: number;
  stepsPerEpoch: number;
  epochs: number | null;
  loss: number;
  learningRate: number;
  /** Rows in this step's batch. */
  examples: number;
  /** Epochs as a number with a fraction. */
  progress: number;
  epochDone: boolean;
  done: boolean;
  /** On an epoch's last step only (validationLoss null without validation data): */
  validationLoss?: number | null;
  metrics?: M;
  best?: BestEpoch & { improved: boolean };
  /** With the checkpoints option: the run's checkpoint at this epoch's end, and the best epoch's when it is this. */
  checkpoint?: Uint8Array<ArrayBuffer>;
  bestCheckpoint?: Uint8Array<ArrayBuffer>;
}

export interface TrainSummary<M extends object = NoMetrics> {
  /** Finished epochs and steps of the run. */
  epochs: number;
  steps: number;
  /** The last epoch's mean training loss (null if no epoch finished). */
  loss: number | null;
  validationLoss: number | null;
  /** restored: the best epoch's parameters were put back (keepBest). */
  best: BestEpoch & { restored: boolean };
  history: EpochRecord<M>[];
  /** With the checkpoints option: the checkpoint the run ends with. */
  checkpoint?: Uint8Array<ArrayBuffer>;
  /** A task's: its evaluate() at the end (after the best epoch's parameters are back). */
  metrics?: M;
}

/** Beyond onnxruntime-web: onnxruntime-training's LinearLRScheduler on a session's optimizer, linear warm-up from
 * 0 to initialLr over warmupStepCount optimizer steps, then linear decay to 0 at totalStepCount. The arguments
 * mean what their names say (onnxruntime-training 1.19.2's Python wrapper swaps the two counts). */
export class LinearLRScheduler {
  /** Sets the rate for the optimizer's current step count. */
  constructor(session: TrainingSession, warmupStepCount: number, totalStepCount: number, initialLr: number);
  /** Resolves once the scheduler is set; rejects with an Error for bad arguments (as every step() then does). */
  readonly ready: Promise<void>;
  /** Sets the session's learning rate for the optimizer's step count; resolves to that rate. */
  step(): Promise<number>;
}

export interface GenerateArtifactsOptions {
  /** The initializers to train (required with an optimizer). */
  requiresGrad?: readonly string[];
  /** Initializers kept in the checkpoint as frozen parameters: not trained, saved with it. */
  frozenParams?: readonly string[];
  /** "CrossEntropyLoss" (default), "MSELoss", "BCEWithLogitsLoss" or "L1Loss"; null: the model's first output is
   * the loss. */
  loss?: "CrossEntropyLoss" | "MSELoss" | "BCEWithLogitsLoss" | "L1Loss" | null;
  /** "AdamW" (default) or "SGD"; null: no optimizer model. */
  optimizer?: "AdamW" | "SGD" | null;
  /** Forward-model outputs the training and eval models also return. */
  additionalOutputNames?: readonly string[];
}

export interface TrainingArtifacts {
  trainModel: Uint8Array<ArrayBuffer>;
  evalModel: Uint8Array<ArrayBuffer>;
  optimizerModel: Uint8Array<ArrayBuffer> | null;
  checkpointState: Uint8Array<ArrayBuffer>;
}

/** Beyond onnxruntime-web: onnxruntime-training's generate_artifacts, in the page. The result goes straight to
 * TrainingSession.create; an unknown parameter name or loss rejects with an Error that says so. */
export function generateArtifacts(forwardModel: URIorBuffer, options?: GenerateArtifactsOptions):
  Promise<TrainingArtifacts>;

/** How the engine's start goes: each file's bytes ("download"; cached: from this browser's Cache Storage), then
 * the phases. */
export type StartProgress =
  | { phase: "download"; file: string; loaded: number; total: number | null; cached: boolean }
  | { phase: "python" | "imports" | "kernels" | "ready" };

/** What the engine runs: numpy's and Python's versions, the SIMD kernels in use (null: numpy's code), the threads
 * they run on (env.wasm.numThreads; more than 1 only on a cross-origin isolated page) and, where that is 1 though
 * more were asked for, why; how Python started (from this browser's memory snapshot, making one, or plainly) and
 * the start's timings in ms. */
export interface EngineInfo { numpy: string; python: string; kernels: string | null; threads: number;
  threadsNote: string | null; start: "restored" | "made" | "plain"; timings: Record<string, number>;
  milliseconds: number }

/** The kinds of task: TabularTask, ImageTask, HandwritingTask, PersonalizeTask, TextTask. */
export type TaskKind = "tabular" | "images" | "handwriting" | "personalize" | "text" | "audio";

/** Starts the engine now (it also starts with the first session or task); what it runs. A failed start rejects
 * with an OnnxtrainError (code "ENGINE") naming the URL that failed; the next call starts again. `tasks`: the
 * kinds of task the page makes, whose code the start imports too (kept in this browser's memory snapshot, so a
 * later visit's first task of a kind imports nothing); only the call that starts the engine takes them, and an
 * unknown kind rejects. */
export function start(options?: { onProgress?: (progress: StartProgress) => void; tasks?: TaskKind[] }):
  Promise<EngineInfo>;

/** Cross-origin isolation (the engine's threads) on a host that cannot send COOP/COEP headers: registers the
 * service worker at `serviceWorker` (a copy of the package's isolation-sw.js at the site's root), which adds them,
 * and reloads the page once it is active. Resolves to `crossOriginIsolated` when the page goes on; never resolves
 * when it reloads. No reload when the page is isolated already, opened with `?isolation=off`, in a frame, without
 * service workers, already controlled, or reloaded once this session; nor when the worker fails to register or
 * install (a warning on the console says which). */
export function isolate(serviceWorker: string | URL, options?: RegistrationOptions): Promise<boolean>;

/** A forward model's inputs, outputs and parameters (initializers), the ops it has without a gradient rule, and a
 * line that says how to call it. */
export function describeModel(model: URIorBuffer): Promise<{
  inputs: { name: string; shape: (number | string)[] | null }[];
  outputs: { name: string; shape: (number | string)[] | null }[];
  parameters: { name: string; shape: number[]; count: number; float: boolean }[];
  opsWithoutGradient: string[]; signature: string | null }>;

/** A task's creation options beyond its data: onnxruntime-web's executionProviders, as TrainingSession.create's. */
export interface TaskOptions { executionProviders?: SessionOptions["executionProviders"] }

/** A whole training flow held in the engine: its data, model and run (the base of TabularTask, ImageTask,
 * HandwritingTask, PersonalizeTask and TextTask; not exported itself). train() is the sessions' epoch loop over the task's own
 * data (each epoch's metrics, M, are the task's evaluate()), to `epochs` in all: a paused run goes on. */
declare class Task<M extends object = NoMetrics> {
  /** The execution provider the task's training runs on (the first of executionProviders that is here). */
  readonly executionProvider: "webgpu" | "wasm" | "cpu";
  train(options?: TrainOptions<M>): Promise<TrainSummary<M>>;
  /** The run's checkpoint (parameters, optimizer state, epoch, the task's settings). */
  checkpoint(): Promise<Uint8Array<ArrayBuffer>>;
  /** Continue a run from a checkpoint of it (and its best epoch's); resolves to its epoch. */
  restore(checkpoint: URIorBuffer, best?: URIorBuffer | null): Promise<number>;
  artifactsZip(): Promise<Uint8Array<ArrayBuffer>>;
  /** One ONNX model with the preprocessing inside, for onnxruntime and onnxruntime-web (every task's; a task's
   * bundle, where it has one, is exportZip()'s). */
  exportModel(): Promise<Uint8Array<ArrayBuffer>>;
  /** How to call the exported model, in a line. */
  signature(): Promise<string>;
  /** Frees the task in the worker; a second release() resolves, any other call after it rejects. */
  release(): Promise<void>;
}

/** A CSV table: the label column predicted from the others (classification or regression). */
export class TabularTask extends Task<TabularMetrics> {
  /** fileName: default a File's name, else "data.csv". */
  static create(csv: URIorBuffer, fileName?: string, options?: TaskOptions): Promise<TabularTask>;
  /** The table's columns, rows and first rows, the label column it suggests (the last) and that column's task. */
  describe(): Promise<TableDescription>;
  detectTask(label: string): Promise<"classification" | "regression">;
  /** A new model and run: the preprocessing, the MLP and its run. `hidden` (required): the hidden layers' sizes,
   * such as [64], [64, 32] or "64, 32" ([]: none, a linear model); at most 16 layers and 20 million parameters.
   * validation: default 0.2 of the rows held out (stratified for classification), seed 0, optimizer "AdamW". The
   * exported model's input contract (columns in order, categories, classes) is JSON in its metadata under
   * "onnxtrain.tabular". */
  setup(settings: { label: string; task: "classification" | "regression"; hidden: number[] | string;
    validation?: number; seed?: number; optimizer?: "AdamW" | "SGD" }): Promise<TabularSetup>;
  /** The validation rows' loss and metrics. */
  evaluate(): Promise<TabularMetrics>;
  /** The validation rows' predictions: class names (classification) or numbers (regression). */
  predictValidation(): Promise<string[] | number[]>;
  /** The exported model's predictions for another CSV with the same feature columns, a page of `limit` rows
   * (default 100) from `offset` (default 0). */
  predictCsv(csv: URIorBuffer, page?: { offset?: number; limit?: number }): Promise<CsvPredictions>;
}

/** What `TabularTask.describe()` resolves to. */
export interface TableDescription {
  columns: { name: string; kind: "numeric" | "categorical"; missing: number; distinct: number;
    /** Numbers float32 cannot hold (inf, 1e39), counted as missing. */
    nonfinite: number }[];
  rows: number;
  /** The first 8 rows' cells, as in the file. */
  preview: string[][];
  /** The last column. */
  suggestedLabel: string;
  /** The suggested label's task. */
  task: "classification" | "regression";
}

/** What `TabularTask.setup()` resolves to. */
export interface TabularSetup {
  /** Model inputs after one-hot encoding. */
  features: number;
  /** The label's classes (empty for regression). */
  classes: string[];
  task: "classification" | "regression";
  trainRows: number;
  validationRows: number;
  /** Rows without a label. */
  droppedRows: number;
  missingCells: number;
  nonfiniteCells: number;
  /** The feature columns by kind. */
  numeric: string[];
  categorical: string[];
  /** Trainable parameters. */
  parameters: number;
}

/** A classifier's metrics on the validation data. */
export type ClassificationMetrics = {
  /** null without validation data. */
  loss: number | null;
  accuracy: number;
  /** Always guessing the most common class. */
  baseline: number;
  /** Rows: the true class; columns: the predicted one. */
  confusion: number[][];
};

/** A regression's metrics on the validation rows. */
export type RegressionMetrics = {
  loss: number | null;
  /** Mean absolute error. */
  mae: number;
  /** Always predicting the mean. */
  baseline: number;
};

export type TabularMetrics = ClassificationMetrics | RegressionMetrics;

/** TabularTask.predictCsv(): a page of the file's rows with their predictions. */
export interface CsvPredictions {
  header: string[];
  rows: string[][];
  /** Class names (classification) or numbers (regression). */
  predictions: string[] | number[];
  /** The predicted class's probability; null for regression. */
  confidence: number[] | null;
  /** The file's data rows. */
  total: number;
  offset: number;
  /** The label column's cells on this page; null when the file has no label column. */
  labels: string[] | null;
  /** The label column's name. */
  label: string;
  /** Over all labelled rows: accuracy (classification) or mean absolute error (regression), else null. */
  accuracy: number | null;
  mae: number | null;
  /** Rows with a label; null when the file has no label column. */
  labelled: number | null;
}

/** Images in classes: a small CNN on size x size RGBA images. */
export class ImageTask extends Task<ClassificationMetrics> {
  static create(images: { pixels: URIorBuffer; count: number; size: number; labels: ArrayLike<number>;
    classes: ArrayLike<string>; validation?: number; seed?: number; optimizer?: "AdamW" | "SGD" } & TaskOptions):
    Promise<ImageTask>;
  /** Files decoded and resized in the page, each labelled by its folder (a File's webkitRelativePath, as
   * <input type=file webkitdirectory> sets it); files that are not images are skipped, and none being an image
   * rejects. `fit`: "stretch" the whole image (default) or take its "centre" square. */
  static decodeImages(files: readonly (File | { path: string; bytes: ArrayBuffer | Uint8Array })[], size: number,
    options?: { fit?: "stretch" | "centre" }): Promise<{
    pixels: Uint8Array<ArrayBuffer>; count: number; size: number; labels: number[]; classes: string[];
    skipped: string[] }>;
  /** The images, their split and the model. */
  info(): Promise<ImageTaskInfo>;
  /** The validation images' loss and metrics. */
  evaluate(): Promise<ClassificationMetrics>;
  /** Class probabilities for one RGBA image of the task's size, or an image stretched to that size. */
  predict(pixels: URIorBuffer | ImageSource): Promise<number[]>;
}

/** What `ImageTask.info()` resolves to. */
export interface ImageTaskInfo {
  images: number;
  train: number;
  validation: number;
  classes: string[];
  /** Images of each class in the training and validation split, in class order. */
  trainPerClass: number[];
  validationPerClass: number[];
  /** The side of the square images. */
  size: number;
  /** Trainable parameters. */
  parameters: number;
}

/** A pretrained classifier of 8x8 drawings (values 0..16), fine-tuned on the user's examples and classes. */
export class HandwritingTask extends Task {
  static create(model: URIorBuffer, replay?: URIorBuffer | null, options?: TaskOptions): Promise<HandwritingTask>;
  static fromSnapshot(snapshot: URIorBuffer, replay?: URIorBuffer | null, options?: TaskOptions):
    Promise<HandwritingTask>;
  classes(): Promise<string[]>;
  predict(pixels: ArrayLike<number>): Promise<number[]>;
  addClass(name: string): Promise<number>;
  /** One drawing of class index `label`; the examples per class name, as counts(). */
  addExample(pixels: ArrayLike<number>, label: number): Promise<Record<string, number>>;
  /** The examples per class name. */
  counts(): Promise<Record<string, number>>;
  snapshot(): Promise<Uint8Array<ArrayBuffer>>;
  fineTune(options?: { headOnly?: boolean; epochs?: number; batchSize?: number; learningRate?: number;
    onProgress?: (record: TrainProgress) => void; signal?: AbortSignal }):
    Promise<TrainSummary & { examples: number }>;
}

/** Progress while a backbone loads: bytes so far (total null when the server does not say), seconds since
 * create() began; stage "ready" once the engine holds it. */
export interface LoadProgress { loaded: number; total: number | null; seconds: number; stage: "download" | "ready" }

/** RGBA bytes of `count` images of width x height. */
export interface ImageSize { width: number; height: number; count?: number }

export interface Prediction { probabilities: number[]; label: number; className: string }

/** PersonalizeTask.evaluate(): on the validation samples, or on the training ones without (loss then null). */
export type PersonalizeMetrics = ClassificationMetrics & { on: "validation" | "train" };

/** A pretrained image backbone (ONNX with outputs `features` and `block`) taught the user's own classes: samples
 * are embedded once when added and cached, the head is trained on the cache, and exportModel() gives one ONNX model
 * from uint8 RGB(A) pixels of any size to `probabilities` and `label` (class names in its metadata). */
export class PersonalizeTask extends Task<PersonalizeMetrics> {
  /** executionProviders as TrainingSession.create's: the embeddings, the head's training and its predictions run
   * on the first that is here (info() says which). */
  static create(backbone: URIorBuffer, options?: { onLoad?: (progress: LoadProgress) => void;
    executionProviders?: SessionOptions["executionProviders"] }): Promise<PersonalizeTask>;
  static fromSnapshot(backbone: URIorBuffer, snapshot: URIorBuffer,
    options?: { onLoad?: (progress: LoadProgress) => void;
      executionProviders?: SessionOptions["executionProviders"] }): Promise<PersonalizeTask>;
  info(): Promise<{ inputSize: number; features: number; blockShape: number[]; backboneBytes: number;
    backboneSha256: string; source: string; loadSeconds: number; executionProvider: "webgpu" | "wasm" | "cpu" }>;
  addClass(name: string): Promise<number>;
  renameClass(index: number, name: string): Promise<void>;
  /** Removes the class and its samples; the classes after it move down one. */
  removeClass(index: number): Promise<void>;
  /** Samples of class `classIndex`; their ids. */
  addSamples(pixels: URIorBuffer | Uint8ClampedArray, size: ImageSize, classIndex: number): Promise<number[]>;
  addSamples(image: ImageSource, classIndex: number): Promise<number[]>;
  removeSample(id: number): Promise<void>;
  classes(): Promise<string[]>;
  /** Samples per class, in class order. */
  counts(): Promise<number[]>;
  samples(): Promise<{ id: number; classIndex: number }[]>;
  /** A new run on all samples (validation: 0, or the share of each class held out). */
  setup(options?: { fineTune?: boolean; validation?: number; seed?: number; optimizer?: "AdamW" | "SGD" }):
    Promise<{ samples: number; train: number; validation: number; classes: string[]; trainPerClass: number[];
      validationPerClass: number[]; fineTune: boolean; parameters: number }>;
  evaluate(): Promise<PersonalizeMetrics>;
  predict(pixels: URIorBuffer | Uint8ClampedArray, size: ImageSize): Promise<Prediction>;
  predict(image: ImageSource): Promise<Prediction>;
  /** Classes, samples with their cached embeddings, and the run, for fromSnapshot. */
  snapshot(): Promise<Uint8Array<ArrayBuffer>>;
}

/** TextTask's creation options: the encoder and tokenizer.json (by default the site's, TextTask.ENCODER and
 * TextTask.TOKENIZER, relative to the page), progress while the encoder loads, executionProviders. */
export interface TextTaskOptions { encoder?: URIorBuffer; tokenizer?: URIorBuffer;
  onLoad?: (progress: LoadProgress) => void; executionProviders?: SessionOptions["executionProviders"] }

/** TextTask.predict(): a text's class probabilities and label; truncated: it had more tokens than the encoder
 * reads, and only its first ones counted. */
export interface TextPrediction { probabilities: number[]; label: number; className: string; truncated: boolean }

/** TextTask.evaluate(): on the validation texts, or on the training ones without (loss then null). */
export type TextMetrics = ClassificationMetrics & { on: "validation" | "train" };

/** A sentence encoder (all-MiniLM-L6-v2) taught the user's own text categories: a head on the frozen encoder's
 * cached embeddings (mode "head"), or LoRA adapters on its attention trained with the head (mode "lora").
 * exportModel() gives one ONNX model (input_ids, attention_mask int64 [N, T] -> probabilities, label; the class
 * names in its metadata), exportZip() a .zip of it with tokenizer.json and README.md. */
export class TextTask extends Task<TextMetrics> {
  static readonly ENCODER: string;
  static readonly TOKENIZER: string;
  static create(options?: TextTaskOptions): Promise<TextTask>;
  static fromSnapshot(snapshot: URIorBuffer, options?: TextTaskOptions): Promise<TextTask>;
  /** hidden: the embedding's size; maxLength: the tokens a text is cut to ([CLS] and [SEP] included). */
  info(): Promise<{ hidden: number; maxLength: number; encoderBytes: number; encoderSha256: string;
    loadSeconds: number; executionProvider: "webgpu" | "wasm" | "cpu" }>;
  addClass(name: string): Promise<number>;
  renameClass(index: number, name: string): Promise<void>;
  /** Removes the class and its texts; the classes after it move down one. */
  removeClass(index: number): Promise<void>;
  /** Texts of class `classIndex`, embedded now; their ids, and the indices of those that were truncated. */
  addTexts(texts: Iterable<string>, classIndex: number): Promise<{ ids: number[]; truncated: number[] }>;
  /** A CSV file's rows (UTF-8 with a header): column `text` as texts, column `label` as their classes. */
  addCsv(csv: URIorBuffer, columns: { text: string; label: string }):
    Promise<{ added: number; classes: string[]; truncated: number }>;
  removeSample(id: number): Promise<void>;
  classes(): Promise<string[]>;
  /** Texts per class, in class order. */
  counts(): Promise<number[]>;
  samples(): Promise<{ id: number; classIndex: number }[]>;
  /** The texts (of class `classIndex`, or all), in the order added. */
  texts(classIndex?: number): Promise<{ id: number; text: string; truncated: boolean }[]>;
  /** A new run on all texts (validation: 0, or the share of each class held out; rank: LoRA's, null for a head). */
  setup(options?: { mode?: "head" | "lora"; rank?: number; validation?: number; seed?: number;
    optimizer?: "AdamW" | "SGD" }): Promise<{ samples: number; train: number; validation: number; classes: string[];
      trainPerClass: number[]; validationPerClass: number[]; mode: "head" | "lora"; rank: number | null;
      parameters: number }>;
  evaluate(): Promise<TextMetrics>;
  predict(text: string): Promise<TextPrediction>;
  predict(texts: Iterable<string>): Promise<TextPrediction[]>;
  /** The .zip to download: model.onnx, tokenizer.json, README.md. */
  exportZip(): Promise<Uint8Array<ArrayBuffer>>;
  /** @deprecated exportModel(): the ONNX model, under the name it had when exportModel() gave the .zip. */
  exportOnnx(): Promise<Uint8Array<ArrayBuffer>>;
  /** Classes, texts with their cached embeddings, and the run, for fromSnapshot. */
  snapshot(): Promise<Uint8Array<ArrayBuffer>>;
}

/** A clip for AudioTask: float32 samples (at options.rate, by default 16 kHz), an AudioBuffer, or a file (WAV, which
 * the engine reads; WebM, Ogg, MP3 and others, which the browser decodes) as a Blob, File, ArrayBuffer or bytes. */
export type AudioClip = Float32Array | AudioBuffer | Blob | ArrayBuffer | Uint8Array;

/** AudioTask's creation options: the backbone (by default the site's, AudioTask.BACKBONE, relative to the page),
 * progress while it loads, executionProviders. */
export interface AudioTaskOptions { backbone?: URIorBuffer; onLoad?: (progress: LoadProgress) => void;
  executionProviders?: SessionOptions["executionProviders"] }

/** AudioTask.addClips(): the clips' sample ids, each clip's windows, and notices (resampled, mixed down, clipped). */
export interface AudioClipsAdded { ids: number[]; windows: number[]; notices: string[] }

/** AudioTask.predict(): a clip's class probabilities (the mean over its windows) and label. */
export interface AudioPrediction { probabilities: number[]; label: number; className: string; notices: string[] }

/** AudioTask.evaluate(): on the validation clips, or on the training ones without (loss then null). */
export type AudioMetrics = ClassificationMetrics & { on: "validation" | "train" };

/** Google's speech_embedding (openWakeWord's embedding_model.onnx) taught the user's own sounds, with a
 * background-noise class (class 0) as Teachable Machine has: clips are cut into 775 ms windows every 80 ms, each
 * embedded once and cached, and a head is trained on them (with fineTune, the backbone's last convolution too).
 * exportModel() gives one ONNX model from 16 kHz float PCM (`pcm` [batch, samples]) to `probabilities` and
 * `label`, the log-mel front end inside, the class names in its metadata. */
export class AudioTask extends Task<AudioMetrics> {
  static readonly BACKBONE: string;
  static readonly BACKGROUND: string;
  static readonly RATE: number;
  static create(options?: AudioTaskOptions): Promise<AudioTask>;
  static fromSnapshot(snapshot: URIorBuffer, options?: AudioTaskOptions): Promise<AudioTask>;
  /** rate: the backbone's sample rate; windowSamples and hopSamples: its window and their stride, in samples. */
  info(): Promise<{ rate: number; windowSamples: number; hopSamples: number; embedding: number;
    backboneBytes: number; backboneSha256: string; loadSeconds: number;
    executionProvider: "webgpu" | "wasm" | "cpu" }>;
  addClass(name: string): Promise<number>;
  renameClass(index: number, name: string): Promise<void>;
  /** Removes the class and its clips; the classes after it move down one. */
  removeClass(index: number): Promise<void>;
  /** Clips of class `classIndex`, embedded now; nothing is added when one is bad. */
  addClips(clips: AudioClip | Iterable<AudioClip>, classIndex: number,
    options?: { rate?: number; names?: Iterable<string> }): Promise<AudioClipsAdded>;
  removeSample(id: number): Promise<void>;
  classes(): Promise<string[]>;
  counts(): Promise<number[]>;
  samples(): Promise<{ id: number; classIndex: number }[]>;
  setup(options?: { fineTune?: boolean; validation?: number; seed?: number; optimizer?: "AdamW" | "SGD" }):
    Promise<{ samples: number; train: number; validation: number; classes: string[]; trainPerClass: number[];
      validationPerClass: number[]; trainWindows: number; fineTune: boolean; parameters: number }>;
  evaluate(): Promise<AudioMetrics>;
  predict(clips: AudioClip[], options?: { rate?: number }): Promise<AudioPrediction[]>;
  predict(clip: AudioClip, options?: { rate?: number }): Promise<AudioPrediction>;
  /** Classes, clips with their cached embeddings, and the run, for fromSnapshot. */
  snapshot(): Promise<Uint8Array<ArrayBuffer>>;
}

/** The microphone at 16 kHz through Web Audio.  open() asks for it (rejecting with a message that says why when it
 * is not allowed or there is none); onLevel is called with each 64 ms block's RMS and peak. */
export class Microphone {
  static open(options?: { onLevel?: (rms: number, peak: number) => void }): Promise<Microphone>;
  readonly rate: number;
  /** The next `seconds` of sound; rejects when the microphone is closed first. */
  record(seconds: number): Promise<Float32Array>;
  /** The last `samples` heard (fewer at the start), oldest first. */
  latest(samples: number): Float32Array;
  close(): Promise<void>;
}

/** Beyond onnxruntime-web: what a federation server's fed/info says (`python -m onnxtrain federate`). */
export interface FederationInfo {
  model: string;
  /** The number of float32 trainable parameters, in getContiguousParameters' order. */
  parameters: number;
  /** Paths relative to the site's root (the folder above the federation's API). */
  artifacts: { trainModel: string; evalModel: string; optimizerModel: string; checkpointState: string };
  rounds: number;
  minClients: number;
  strategy: string;
  localEpochs: number;
  batchSize: number;
  learningRate: number;
  /** Server-side differential privacy, when on. */
  dp: { noiseMultiplier: number; clippingNorm: number } | null;
  /** The training inputs: name -> [dims, type]. */
  inputs: Record<string, [(number | string | null)[], string]>;
  outputs: string[];
  /** How a folder of images becomes the input (size x size, channel-first, values / 255; class i = the folder
   * named classes[i]), or null. */
  image: { size: number; channels: number; classes: string[] } | null;
}

/** fed/status. */
export interface FederationStatus {
  phase: "waiting" | "running" | "done" | "failed";
  /** The round in progress (0 before the first). */
  round: number;
  rounds: number;
  /** Pages connected now. */
  clients: number;
  /** Flower nodes taking part. */
  nodes: number;
  history: { round: number; results: number; failures: number; rejected: string[];
    global: { loss: number; accuracy: number } | null; seconds: number }[];
  /** The initial global model's metrics on the server's held-out data, when it has some. */
  initial?: { loss: number; accuracy: number | null } | null;
  error: string | null;
}

/** A round as this page takes part in it (join's onRound). */
export interface FederationRound {
  round: number;
  /** "training": the global parameters arrived; "sent": the trained ones were accepted; "rejected": the server
   * said no (error: why); "failed": a local step failed and nothing was sent for the round (error: why). */
  phase: "training" | "sent" | "rejected" | "failed";
  /** On the local data: loss and accuracy after training, the received global model's accuracy before. */
  local: { loss: number | null; accuracy: number | null; globalAccuracy: number | null; examples: number } | null;
  error: string | null;
}

export interface FederationJoinOptions {
  session: TrainingSession;
  /** The page's own data: training input name -> rows (session.readDataset gives one). */
  dataset: Dataset;
  onRound?: (round: FederationRound) => void;
  /** fed/status every few seconds while joined. */
  onStatus?: (status: FederationStatus) => void;
  /** Aborting leaves the federation; join() then rejects with signal.reason. */
  signal?: AbortSignal;
}

/** Beyond onnxruntime-web: the page as one client of a Flower federation. Only parameter vectors (raw float32)
 * and empty bodies leave the page; metrics travel as numbers in the X-Metrics header. */
export class Federation {
  /** The federation at baseUrl (relative to the page, default "fed/"); rejects when none runs there. */
  static connect(baseUrl?: string | URL): Promise<Federation>;
  readonly info: FederationInfo;
  /** fed/global.onnx: the current global model for inference, at any round. */
  readonly globalModelUrl: string;
  readonly joined: boolean;
  /** A TrainingSession of the federation's artifacts. */
  session(): Promise<TrainingSession>;
  /** Take part until the run ends (reason "done"), leave() (reason "left") or the signal aborts (rejects). */
  join(options: FederationJoinOptions): Promise<{ reason: "done" | "left"; rounds: number;
    status: FederationStatus | null }>;
  leave(): Promise<void>;
  status(): Promise<FederationStatus>;
}

/** onnxruntime-web's env. wasm.wasmPaths says where the library's files are served, for a bundle that did not copy
 * them: the URL of a folder laid out as the package's, or an object of a file's path there (such as
 * "pyodide/pyodide.asm.wasm") to its URL; set it before the first session. wasm.numThreads: the threads the
 * kernels run on, read when the engine starts (0 or unset: min(4, half the cores rounded up), as onnxruntime-web;
 * 1: no threads); more than 1 needs a cross-origin isolated page. The other settings are accepted and ignored. */
export const env: {
  wasm: { numThreads?: number; simd?: boolean; proxy?: boolean; initTimeout?: number;
    wasmPaths?: string | URL | Record<string, string | URL>; trace?: boolean; [key: string]: unknown };
  webgl: Record<string, unknown>;
  webgpu: Record<string, unknown>;
  logLevel: string;
  debug: boolean;
  versions: Record<string, string>;
};

/** Codes of the errors the engine answers with; see the README's "Errors". */
export type ErrorCode = "DATA" | "NPZ" | "CHECKPOINT" | "MODEL_DECODE" | "DATA_TYPE" | "COMPOSE" | "ARTIFACT"
  | "LEARNING_RATE" | "RUN" | "FEED" | "GRAPH" | "UNSUPPORTED_OP" | "GRADIENT_NOT_REGISTERED" | "NOMINAL_STATE"
  | "NON_FINITE" | "NON_FINITE_STEP" | "NON_FINITE_STATE" | "WEBGPU" | "NO_ADAPTER" | "GPU_MEMORY" | "TOKENIZER"
  | "ENCODER" | "WEIGHTS" | "ADAPTER" | "TYPE"
  | "VALUE" | "KEY" | "INDEX" | "RUNTIME" | "NOT_IMPLEMENTED" | "MEMORY" | "ZERO_DIVISION" | "OVERFLOW"
  | "ARITHMETIC" | "UNICODE" | "LOOKUP" | "ASSERTION" | "OS" | "ATTRIBUTE" | "PYTHON" | "ENGINE";

/** Every failed request to the engine rejects with one: `name` is the Python exception's class name (or the
 * JavaScript error's, code "ENGINE"), `message` its message on one line, `details` the traceback. */
export class OnnxtrainError extends Error {
  constructor(message: string, info?: { name?: string; code?: ErrorCode | string; details?: string });
  code: ErrorCode | string;
  details: string;
}
export class DataError extends OnnxtrainError {}
export class NpzError extends OnnxtrainError {}
export class CheckpointError extends OnnxtrainError {}
export class ModelDecodeError extends OnnxtrainError {}
export class DataTypeError extends OnnxtrainError {}
export class ComposeError extends OnnxtrainError {}
export class ArtifactError extends OnnxtrainError {}
export class LearningRateError extends OnnxtrainError {}
export class RunError extends OnnxtrainError {}
export class FeedError extends OnnxtrainError {}
export class GraphError extends OnnxtrainError {}
export class UnsupportedOpError extends OnnxtrainError {}
export class GradientNotRegisteredError extends OnnxtrainError {}
export class NominalStateError extends OnnxtrainError {}
export class NonFiniteError extends OnnxtrainError {}
export class NonFiniteStepError extends NonFiniteError {}
export class NonFiniteStateError extends NonFiniteError {}
export class WebGPUError extends OnnxtrainError {}
export class NoAdapterError extends WebGPUError {}
export class GPUMemoryError extends WebGPUError {}
export class TokenizerError extends OnnxtrainError {}
export class EncoderError extends OnnxtrainError {}
export class WeightsError extends OnnxtrainError {}
export class AdapterError extends OnnxtrainError {}
