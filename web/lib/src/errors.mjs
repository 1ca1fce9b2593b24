// Errors: every failed request to the engine rejects with an OnnxtrainError:
// {name, code, message, details}: the Python exception's class name, a stable code for its class, its one-line
// message and (details) its traceback.  onnxtrain's own Python errors have classes of the same name (instanceof
// works, subclasses as in Python); Python's own (TypeError, ValueError, KeyError, ...) and JavaScript errors in the
// engine (code "ENGINE") are OnnxtrainErrors that keep their name.  Arguments the library checks before sending
// throw JavaScript's TypeError or RangeError as usual.

export class OnnxtrainError extends Error {
  constructor(message, { name = "OnnxtrainError", code = "PYTHON", details = "" } = {}) {
    super(message);
    this.name = name;
    this.code = code;
    this.details = details;
  }
}

// A subclass of OnnxtrainError named `name`, whose errors have `code` unless the engine says another name.
const errorClass = (name, code, Base = OnnxtrainError) => ({ [name]: class extends Base {
  constructor(message, info = {}) { super(message, { name, code, ...info }); }
} })[name];
export const DataError = errorClass("DataError", "DATA");
export const NpzError = errorClass("NpzError", "NPZ");
export const CheckpointError = errorClass("CheckpointError", "CHECKPOINT");
export const ModelDecodeError = errorClass("ModelDecodeError", "MODEL_DECODE");
export const DataTypeError = errorClass("DataTypeError", "DATA_TYPE");
export const ComposeError = errorClass("ComposeError", "COMPOSE");
export const ArtifactError = errorClass("ArtifactError", "ARTIFACT");
export const LearningRateError = errorClass("LearningRateError", "LEARNING_RATE");
export const RunError = errorClass("RunError", "RUN");
export const FeedError = errorClass("FeedError", "FEED");
export const GraphError = errorClass("GraphError", "GRAPH");
export const UnsupportedOpError = errorClass("UnsupportedOpError", "UNSUPPORTED_OP");
export const GradientNotRegisteredError = errorClass("GradientNotRegisteredError", "GRADIENT_NOT_REGISTERED");
export const NominalStateError = errorClass("NominalStateError", "NOMINAL_STATE");
export const NonFiniteError = errorClass("NonFiniteError", "NON_FINITE");
export const NonFiniteStepError = errorClass("NonFiniteStepError", "NON_FINITE_STEP", NonFiniteError);
export const NonFiniteStateError = errorClass("NonFiniteStateError", "NON_FINITE_STATE", NonFiniteError);
export const WebGPUError = errorClass("WebGPUError", "WEBGPU");
export const NoAdapterError = errorClass("NoAdapterError", "NO_ADAPTER", WebGPUError);
export const GPUMemoryError = errorClass("GPUMemoryError", "GPU_MEMORY", WebGPUError);
export const TokenizerError = errorClass("TokenizerError", "TOKENIZER");
export const EncoderError = errorClass("EncoderError", "ENCODER");
export const WeightsError = errorClass("WeightsError", "WEIGHTS");
export const AdapterError = errorClass("AdapterError", "ADAPTER");

// code -> class, for onnxtrain's codes (onnxtrain.web.errors.OWN)
const ERROR_CLASSES = Object.fromEntries([DataError, NpzError, CheckpointError, ModelDecodeError, DataTypeError,
  ComposeError, ArtifactError, LearningRateError, RunError, FeedError, GraphError, UnsupportedOpError,
  GradientNotRegisteredError, NominalStateError, NonFiniteError, NonFiniteStepError, NonFiniteStateError, WebGPUError,
  NoAdapterError, GPUMemoryError, TokenizerError, EncoderError, WeightsError, AdapterError]
  .map((Class) => [new Class("").code, Class]));

// The engine's {name, code, message, details} as an instance of its code's class, named as the engine says.
export function engineError({ name, code, message, details }) {
  const Class = ERROR_CLASSES[code];
  return Class ? new Class(message, { name, code, details }) : new OnnxtrainError(message, { name, code, details });
}
