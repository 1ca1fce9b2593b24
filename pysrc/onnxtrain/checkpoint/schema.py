"""Field slots of ort_training_checkpoint.fbs (plus the Tensor table of ort.fbs), as compiled into
onnxruntime-training 1.19.2."""
import numpy as np

FILE_IDENTIFIER = b"ODTC"
CHECKPOINT_VERSION_SUPPORTED = 2
EXTERNAL_DATA_SUFFIX = ".data"
EXTERNAL_DATA_THRESHOLD = 1800 * 1024 * 1024  # ORT switches to external data above this many tensor bytes
EXTERNAL_MIN_TENSOR_BYTES = 64                 # artifact checkpoints keep smaller tensors inline

# table Checkpoint
CHECKPOINT_VERSION, CHECKPOINT_MODULE_STATE, CHECKPOINT_OPTIMIZER_GROUPS, CHECKPOINT_PROPERTY_BAG = 0, 1, 2, 3
# table ModuleState
MODULE_REQUIRES_GRAD, MODULE_FROZEN, MODULE_IS_NOMINAL, MODULE_HAS_EXTERNAL_DATA = 0, 1, 2, 3
# table Tensor
(TENSOR_NAME, TENSOR_DOC, TENSOR_DIMS, TENSOR_DATA_TYPE, TENSOR_RAW_DATA, TENSOR_STRING_DATA,
 TENSOR_EXTERNAL_OFFSET) = range(7)
# table OptimizerGroup
GROUP_NAME, GROUP_STEP, GROUP_INITIAL_LR, GROUP_STATES = 0, 1, 2, 3
# table ParameterOptimizerState
PARAM_STATE_NAME, PARAM_STATE_MOMENTUMS = 0, 1
# table PropertyBag and the three property tables
BAG_INTS, BAG_FLOATS, BAG_STRINGS = 0, 1, 2
PROPERTY_NAME, PROPERTY_VALUE = 0, 1

# TensorDataType uses ONNX's numbering.
NUMPY_DTYPES = {1: np.dtype("<f4"), 2: np.dtype("u1"), 3: np.dtype("i1"), 4: np.dtype("<u2"), 5: np.dtype("<i2"),
                6: np.dtype("<i4"), 7: np.dtype("<i8"), 9: np.dtype("?"), 10: np.dtype("<f2"), 11: np.dtype("<f8"),
                12: np.dtype("<u4"), 13: np.dtype("<u8")}
DATA_TYPES = {dtype: code for code, dtype in NUMPY_DTYPES.items()}
