// Type declarations of onnxtrain.mjs (and of globalThis.onnxtrain, which onnxtrain.js defines).
// The names and semantics follow onnxruntime-web 1.19.2's training API.

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
  evalModel?: URIorBuffer;
  optimizerModel?: URIorBuffer;
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

  /** Frees the session in the worker; later calls on it reject. */
  release(): Promise<void>;
}

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
