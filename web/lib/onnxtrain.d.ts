// Type declarations of onnxtrain.mjs (and of globalThis.onnxtrain, which onnxtrain.js defines, and of
// globalThis.ort, which it defines as the same object where no onnxruntime-web did).
// The names and semantics follow onnxruntime-web 1.19.2's training API; what it lacks is marked "Beyond".
// onnxtrain.d.mts is the same file, for TypeScript's resolution of an import of onnxtrain.mjs by its path.

/** The classic script's global (a script that is not a module uses `onnxtrain.TrainingSession` and so on). */
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

/** A model or checkpoint: a URL (relative to the page), an ArrayBuffer or a Uint8Array. */
export type URIorBuffer = string | URL | ArrayBuffer | Uint8Array;

export interface TrainingSessionCreateOptions {
  checkpointState: URIorBuffer;
  trainModel: URIorBuffer;
  evalModel?: URIorBuffer | null;
  optimizerModel?: URIorBuffer | null;
}

export class TrainingSession {
  /** Loads the artifacts into the library's worker (started with the first session); many sessions may live at
   * once. The session options of onnxruntime-web are accepted and ignored. */
  static create(trainingOptions: TrainingSessionCreateOptions, sessionOptions?: object): Promise<TrainingSession>;

  readonly trainingInputNames: readonly string[];
  readonly trainingOutputNames: readonly string[];
  readonly evalInputNames: readonly string[];
  readonly evalOutputNames: readonly string[];

  /** Forward and backward; gradients add up until lazyResetGrad(). */
  runTrainStep(feeds: FeedsType, options?: object): Promise<ReturnType>;
  runTrainStep(feeds: FeedsType, fetches: FetchesType, options?: object): Promise<ReturnType>;
  runEvalStep(feeds: FeedsType, options?: object): Promise<ReturnType>;
  runEvalStep(feeds: FeedsType, fetches: FetchesType, options?: object): Promise<ReturnType>;
  runOptimizerStep(options?: object): Promise<void>;
  lazyResetGrad(): Promise<void>;

  getParametersSize(trainableOnly?: boolean): Promise<number>;
  /** The parameters as one float32 tensor, in the training model's input order. */
  getContiguousParameters(trainableOnly?: boolean): Promise<Tensor>;
  /** Float32 bytes in the layout of getContiguousParameters. */
  loadParametersBuffer(buffer: Uint8Array | ArrayBuffer, trainableOnly?: boolean): Promise<void>;

  /** Beyond onnxruntime-web: an inference model (ONNX bytes) with the given outputs. */
  exportModelForInferencing(outputNames: readonly string[]): Promise<Uint8Array>;
  /** onnxruntime-training's checkpoint format, parameters, optimizer state and properties. */
  saveCheckpoint(includeOptimizerState?: boolean): Promise<Uint8Array>;
  loadCheckpoint(checkpoint: URIorBuffer): Promise<void>;
  /** The checkpoint state's properties, saved with it; a whole number is stored as an int. */
  getProperties(): Promise<Record<string, number | string>>;
  setProperty(name: string, value: number | string): Promise<void>;
  setLearningRate(learningRate: number): Promise<void>;
  getLearningRate(): Promise<number>;

  /** Beyond onnxruntime-web: the epoch loop (onnxtrain.train.Trainer in the worker), a chunk of whole steps
   * (about 50 ms) per request. onProgress gets each step's record; an aborted signal rejects with signal.reason
   * (an AbortError DOMException unless abort() was given a reason) after the current chunk, and the session
   * stays at its last whole step. While it runs, every other call on the session rejects with an Error. After
   * any failure the session goes on working, and train() may be called again. */
  train(dataset: Dataset, options?: TrainOptions): Promise<TrainSummary>;

  /** Frees the session in the worker; later calls on it reject. */
  release(): Promise<void>;
}

/** Each training input's rows along dim 0: input name -> Tensor (this library's, onnxruntime-web's, or any
 * {type, data, dims}). */
export type Dataset = { readonly [inputName: string]: TensorLike };

export interface TrainOptions {
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
  /** Default true: a new order of the rows each epoch, drawn from `seed`. */
  shuffle?: boolean;
  /** Default 0: the shuffling and the validation split. */
  seed?: number;
  /** A fraction in [0, 1) of the dataset's rows held out (seeded), or a dataset of its own. */
  validation?: number | Dataset;
  /** Default true: with a validation loss, a finished run ends with the best epoch's parameters. */
  keepBest?: boolean;
  /** Stop after this many epochs without a lower validation loss; default 0, never. */
  patience?: number;
  /** Default true: a step with a non-finite loss or update is undone and the run fails with an Error. */
  checkFinite?: boolean;
  onProgress?: (record: TrainProgress) => void;
  signal?: AbortSignal;
}

export interface BestEpoch {
  /** The epoch (1-based) with the lowest validation loss so far; null without validation. */
  bestEpoch: number | null;
  bestLoss: number | null;
  epochsWithoutImprovement: number;
  /** Early stopping: patience epochs without a lower validation loss. */
  stop: boolean;
}

export interface EpochRecord {
  epoch: number;
  /** The mean training loss of the epoch's steps (weighted by their rows). */
  loss: number;
  validationLoss: number | null;
  metrics: Record<string, number>;
  best: BestEpoch & { improved: boolean };
}

/** One step of train(). */
export interface TrainProgress {
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
  /** On an epoch's last step only: */
  validationLoss?: number | null;
  metrics?: Record<string, number>;
  best?: BestEpoch & { improved: boolean };
}

export interface TrainSummary {
  /** Finished epochs and steps of the run. */
  epochs: number;
  steps: number;
  /** The last epoch's mean training loss (null if no epoch finished). */
  loss: number | null;
  validationLoss: number | null;
  /** restored: the best epoch's parameters were put back (keepBest). */
  best: BestEpoch & { restored: boolean };
  history: EpochRecord[];
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
  trainModel: Uint8Array;
  evalModel: Uint8Array;
  optimizerModel: Uint8Array | null;
  checkpointState: Uint8Array;
}

/** Beyond onnxruntime-web: onnxruntime-training's generate_artifacts, in the page. The result goes straight to
 * TrainingSession.create; an unknown parameter name or loss rejects with an Error that says so. */
export function generateArtifacts(forwardModel: URIorBuffer, options?: GenerateArtifactsOptions):
  Promise<TrainingArtifacts>;

/** onnxruntime-web's env: settings onnxtrain does not need are accepted and ignored. */
export const env: {
  wasm: { numThreads?: number; simd?: boolean; proxy?: boolean; initTimeout?: number;
    wasmPaths?: string | Record<string, string>; trace?: boolean; [key: string]: unknown };
  webgl: Record<string, unknown>;
  webgpu: Record<string, unknown>;
  logLevel: string;
  debug: boolean;
  versions: Record<string, string>;
};
