"""The training API, with onnxruntime.training.api's names: CheckpointState, Module, Optimizer, LinearLRScheduler."""
from .checkpoint_state import CheckpointState, NominalStateError, Parameter
from .lr_scheduler import LinearLRScheduler
from .module import Module
from .optimizer import Optimizer

__all__ = ["CheckpointState", "LinearLRScheduler", "Module", "NominalStateError", "Optimizer", "Parameter"]
