"""The trainer a product uses, on top of the api: guarded steps, the best epoch and early stopping, safe data."""
from .best import BestEpoch
from .data import DataError
from .guard import NonFiniteError, NonFiniteStateError, NonFiniteStepError, StepGuard, bad_values
from .trainer import Trainer

__all__ = ["BestEpoch", "DataError", "NonFiniteError", "NonFiniteStateError", "NonFiniteStepError", "StepGuard",
           "Trainer", "bad_values"]
