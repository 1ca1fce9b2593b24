"""The settings of a Trainer's run, in one place: TrainSettings, and the names other callers give them (the
library's camelCase train() options, a federation's kebab-case round config), derived from its fields."""
from __future__ import annotations

import dataclasses
import re
from typing import Callable, Optional

import numpy as np

from ..api.optimizer import check_learning_rate
from . import data as checks

SCHEDULES = ("constant", "linear")

#: A field's metadata for a setting only Python code gives (a callable, or the page's own epoch ending).
_CODE_ONLY = {"option": False}


def flag(name: str, value) -> bool:
    if not isinstance(value, (bool, np.bool_)):
        raise ValueError(f"{name} must be true or false, got {value!r}")
    return bool(value)


def patience(value) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer, float)) or \
            (isinstance(value, float) and not value.is_integer()) or value < 0:
        raise ValueError(f"patience must be an integer >= 0 (0: no early stop), got {value!r}")
    return int(value)


def epochs(value):
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, np.integer, float)) or \
            (isinstance(value, float) and not value.is_integer()) or value < 1:
        raise ValueError(f"epochs must be a whole number >= 1, got {value!r}")
    return int(value)


def proximal_mu(value) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.floating, np.integer)) or \
            not np.isfinite(value) or value < 0:
        raise ValueError(f"proximal_mu must be a finite number >= 0, got {value!r}")
    return float(value)


@dataclasses.dataclass(frozen=True)
class TrainSettings:
    """A run's settings, checked (and made plain Python values) when made: ValueError naming the bad one.

    ``epochs=None`` trains until early stopping or the caller stops.  ``learning_rate=None`` is the optimizer's.
    ``schedule="linear"`` is LinearLRScheduler's rate over ``epochs * steps_per_epoch`` steps, the first
    ``warmup`` fraction of them warming up.  ``keep_best`` and ``patience``: train.best.BestEpoch.
    ``evaluate(trainer) -> dict`` adds metrics at each epoch's end; with ``evaluate_epochs=False`` the caller ends
    epochs itself.  ``proximal_mu`` > 0: FedProx's proximal term (train.proximal.ProximalTerm)."""

    batch_size: int = 32
    epochs: Optional[int] = 1
    learning_rate: Optional[float] = None
    schedule: str = "constant"
    warmup: float = 0.0
    shuffle: bool = True
    keep_best: bool = True
    patience: int = 0
    evaluate: Optional[Callable] = dataclasses.field(default=None, metadata=_CODE_ONLY)
    check_finite: bool = True
    evaluate_epochs: bool = dataclasses.field(default=True, metadata=_CODE_ONLY)
    proximal_mu: float = 0.0

    def __post_init__(self):
        checked = {"batch_size": checks.batch_size(self.batch_size), "epochs": epochs(self.epochs)}
        if self.schedule not in SCHEDULES:
            raise ValueError(f"schedule must be one of {list(SCHEDULES)}, got {self.schedule!r}")
        if self.schedule == "linear" and checked["epochs"] is None:
            raise ValueError("the linear schedule needs a number of epochs to decay over")
        checked["warmup"] = checks.fraction(self.warmup, "warmup fraction")
        checked["proximal_mu"] = proximal_mu(self.proximal_mu)
        for name in ("shuffle", "check_finite", "evaluate_epochs"):
            checked[name] = flag(name, getattr(self, name))
        if self.learning_rate is not None:
            checked["learning_rate"] = check_learning_rate(self.learning_rate)
        checked["keep_best"], checked["patience"] = flag("keep_best", self.keep_best), patience(self.patience)
        for name, value in checked.items():
            object.__setattr__(self, name, value)


#: The settings' names.
SETTINGS = frozenset(f.name for f in dataclasses.fields(TrainSettings))
#: The settings that go with the data, not the run (Trainer() and set_data take them).
DATA_SETTINGS = ("validation", "seed")


def camel(name: str) -> str:
    """A Python name in camelCase, as JavaScript names it."""
    return re.sub(r"_([a-z])", lambda m: m.group(1).upper(), name)


#: The library's train() options (camelCase) -> the Trainer's keyword arguments: the settings a caller outside
#: Python can give, and the data's.
OPTIONS = {camel(name): name for name in
           [*(f.name for f in dataclasses.fields(TrainSettings) if f.metadata.get("option", True)), *DATA_SETTINGS]}

#: The settings a federation's round sets on each client, with the type its config carries them as.
ROUND_SETTINGS = {"epochs": int, "batch_size": int, "learning_rate": float, "proximal_mu": float}


def config_key(name: str) -> str:
    """A setting's key in a federation's config (Flower's kebab-case; a round's epochs are its local-epochs)."""
    return ("local-" if name == "epochs" else "") + name.replace("_", "-")


def round_settings(values, key) -> dict:
    """ROUND_SETTINGS' values from ``values`` (a mapping that names a setting ``key(name)``), as their types;
    proximal_mu, which only FedProx sends, is 0 without it.  KeyError for another that is missing."""
    return {name: kind(values[key(name)] if name != "proximal_mu" or key(name) in values else 0.0)
            for name, kind in ROUND_SETTINGS.items()}
