"""onnxruntime-training 1.19.2's naming contract: the domain of its training ops and the value, input,
node and file names on which its artifacts, its training API and its checkpoints agree.  Artifacts made
by either side load in the other only because both spell these the same way."""
from __future__ import annotations

MS_DOMAIN = "com.microsoft"

# ---- training model ------------------------------------------------------------------------------

GRAD_SUFFIX = "_grad"
GRAD_BUFFER_SUFFIX = GRAD_SUFFIX + ".accumulation.buffer"
GRAD_FLAG_SUFFIX = GRAD_SUFFIX + ".accumulation.out"
LAZY_RESET_GRAD = "lazy_reset_grad"  # bool[1], the training model's last input


def grad(value: str) -> str:
    """The gradient of ``value`` (of a parameter, or of the loss: the seed)."""
    return value + GRAD_SUFFIX


def grad_buffer(param: str) -> str:
    """The training model's input that a parameter's gradient accumulates into."""
    return param + GRAD_BUFFER_SUFFIX


def grad_flag(param: str) -> str:
    """The training model's bool[1] output that says the parameter's gradient was accumulated."""
    return param + GRAD_FLAG_SUFFIX


def buffer_param(name: str):
    """The parameter whose gradient buffer ``name`` is, or None when ``name`` is no gradient buffer."""
    return name[:-len(GRAD_BUFFER_SUFFIX)] if name.endswith(GRAD_BUFFER_SUFFIX) else None


def is_grad_flag(name: str) -> bool:
    return name.endswith(GRAD_FLAG_SUFFIX)


def accumulator_node(output_index: int) -> str:
    """The name of the InPlaceAccumulatorV2 node whose flag is the training model's output ``output_index``."""
    return f"GradientAccumulator{output_index}"


# ---- optimizer model and optimizer state ---------------------------------------------------------

ADAMW, SGD = "AdamWOptimizer", "SGDOptimizerV2"  # the op that tells ORT which algorithm a model runs
LEARNING_RATE, STEP = "learning_rate", "step"
PARAMS, GRADIENTS = "params", "gradients"
FIRST_ORDER_MOMENTS, SECOND_ORDER_MOMENTS = "first_order_moments", "second_order_moments"
#: The optimizer model's inputs, in order, as ORT checks them (SGD is fed first_order_moments but never uses them).
OPTIMIZER_INPUTS = {ADAMW: (LEARNING_RATE, STEP, PARAMS, GRADIENTS, FIRST_ORDER_MOMENTS, SECOND_ORDER_MOMENTS),
                    SGD: (LEARNING_RATE, STEP, PARAMS, GRADIENTS, FIRST_ORDER_MOMENTS)}
MOMENTUM0, MOMENTUM1 = "momentum0", "momentum1"
#: The checkpoint's per-parameter optimizer state, one momentum per moments input.
MOMENTUMS = {ADAMW: (MOMENTUM0, MOMENTUM1), SGD: (MOMENTUM0,)}
OPTIMIZER_GROUP = "group0"

# ---- artifact files ------------------------------------------------------------------------------

TRAINING_MODEL, EVAL_MODEL, OPTIMIZER_MODEL = "training_model.onnx", "eval_model.onnx", "optimizer_model.onnx"
CHECKPOINT, NOMINAL_CHECKPOINT = "checkpoint", "nominal_checkpoint"
