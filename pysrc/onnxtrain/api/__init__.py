"""The training API, with onnxruntime.training.api's names: CheckpointState, Module, Optimizer, LinearLRScheduler."""
from .checkpoint_state import CheckpointState, NominalStateError, Parameter
from .errors import ArtifactError, LearningRateError
from .lr_scheduler import LinearLRScheduler
from .module import Module
from .optimizer import Optimizer

__all__ = ["ArtifactError", "CheckpointState", "LearningRateError", "LinearLRScheduler", "Module", "NominalStateError",
           "Optimizer", "Parameter"]
