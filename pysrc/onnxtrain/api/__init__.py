"""The training API, with onnxruntime.training.api's names: CheckpointState, Module, Optimizer, LinearLRScheduler."""
from .checkpoint_state import CheckpointState, Parameter
from .errors import ArtifactError, LearningRateError, NominalStateError, ParameterBufferError
from .lr_scheduler import LinearLRScheduler
from .module import Module
from .optimizer import Optimizer

__all__ = ["ArtifactError", "CheckpointState", "LearningRateError", "LinearLRScheduler", "Module", "NominalStateError",
           "Optimizer", "Parameter", "ParameterBufferError"]
