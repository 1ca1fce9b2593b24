// onnxtrain: on-device training in the page with onnxruntime-web 1.19.2's training API (TrainingSession, Tensor,
// env), plus exportModelForInferencing, checkpoints, the learning rate and its LinearLRScheduler, an epoch loop
// (session.train) and generateArtifacts; Tasks (whole training flows) and Federation (the page as a client of a
// Flower federation).  The work happens in one module worker (engine.mjs, next to this file) that holds every
// session by handle; the library only converts and forwards.  Its modules are in src/; build.py bundles them with
// esbuild into the shipped onnxtrain.mjs and the classic script onnxtrain.js, which defines globalThis.onnxtrain
// (and globalThis.ort when there is none).
export { AdapterError, ArtifactError, CheckpointError, ComposeError, DataError, DataTypeError, EncoderError, FeedError,
  GPUMemoryError, GradientNotRegisteredError, GraphError, LearningRateError, ModelDecodeError, NoAdapterError,
  NominalStateError, NonFiniteError, NonFiniteStateError, NonFiniteStepError, NpzError, OnnxtrainError, RunError,
  TokenizerError, UnsupportedOpError, WebGPUError, WeightsError } from "./src/errors.mjs";
export { Tensor } from "./src/tensor.mjs";
export { env, start } from "./src/engine_client.mjs";
export { isolate } from "./src/isolation.mjs";
export { LinearLRScheduler, TrainingSession, describeModel, generateArtifacts } from "./src/session.mjs";
export * from "./src/tasks.mjs"; // the task classes (TabularTask, ImageTask, ...): every class it exports
export { Federation } from "./src/federation.mjs";
export { Microphone } from "./src/audio.mjs";
