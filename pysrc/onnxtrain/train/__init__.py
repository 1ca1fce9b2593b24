"""The trainer a product uses, on top of the api: guarded steps, the best epoch and early stopping, safe data."""
from .best import BestEpoch
from .data import DataError
from .guard import NonFiniteError, NonFiniteStateError, NonFiniteStepError, StepGuard, bad_values
from .settings import TrainSettings
from .trainer import Trainer

__all__ = ["BestEpoch", "DataError", "NonFiniteError", "NonFiniteStateError", "NonFiniteStepError", "StepGuard",
           "TrainSettings", "Trainer", "bad_values"]
