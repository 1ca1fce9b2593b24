"""The best epoch by validation loss, a copy of its parameters, and early stopping."""
from __future__ import annotations

import json
import math

import numpy as np

from .settings import flag, patience as _patience

#: Checkpoint property that holds the tracker's settings and counters (JSON), so a paused run resumes with them.
PROPERTY = "onnxtrain.best"


def corrupt(name: str):
    """The error for a checkpoint property ``name`` that is not what onnxtrain wrote: bad(why) -> ValueError."""
    return lambda why: ValueError(f"the checkpoint's property '{name}' is corrupt: {why}")


def json_property(text, name: str) -> dict:
    """The JSON object a checkpoint property holds; ValueError naming the property when it holds none."""
    try:
        fields = json.loads(text) if isinstance(text, str) else None
    except ValueError:
        fields = None
    if not isinstance(fields, dict):
        raise corrupt(name)(f"expected a JSON object, got {str(text)[:80]!r}")
    return fields


class BestEpoch:
    """Tracks the epoch with the lowest validation loss and counts the epochs since it.

    With ``keep_best`` it keeps a copy of the trainable parameters of that epoch.  ``patience`` epochs in a row
    without a lower loss make ``stop`` true; patience 0 never stops.  A loss that is not finite never improves."""

    def __init__(self, keep_best: bool = True, patience: int = 0):
        self.keep_best, self.patience = flag("keep_best", keep_best), _patience(patience)
        self.reset()

    def reset(self) -> None:
        self.best_epoch = self.best_loss = self.last_epoch = None
        self.since = 0
        self.params = None  # name -> copy of the best epoch's trainable parameters

    def configure(self, keep_best: bool, patience: int) -> None:
        keep_best, patience = flag("keep_best", keep_best), _patience(patience)
        self.keep_best, self.patience = keep_best, patience
        if not keep_best:
            self.params = None

    def summary(self, improved: bool = False) -> dict:
        return {"best_epoch": self.best_epoch, "best_loss": self.best_loss, "improved": improved,
                "stop": self.patience > 0 and self.since >= self.patience,
                "epochs_without_improvement": self.since}

    def end_epoch(self, epoch: int, loss, params: dict) -> dict:
        """Record ``epoch``'s validation ``loss`` (None: no validation data, nothing tracked); ``params`` are the
        live trainable parameters, copied when the epoch is the best so far.  A second call for the same epoch
        changes nothing."""
        if loss is not None and (isinstance(loss, (bool, np.bool_)) or not isinstance(loss, (int, float, np.number))):
            raise ValueError(f"the validation loss must be a number or None, got {loss!r}")
        if epoch == self.last_epoch:
            return self.summary(self.best_epoch == epoch)
        if loss is None:
            return {**self.summary(), "stop": False}
        loss = float(loss)
        improved = math.isfinite(loss) and (self.best_loss is None or loss < self.best_loss)
        if improved:
            if self.keep_best:
                self._copy(params)
            self.best_epoch, self.best_loss, self.since = int(epoch), loss, 0
        else:
            self.since += 1
        self.last_epoch = int(epoch)
        return self.summary(improved)

    def _copy(self, params: dict) -> None:
        kept = self.params
        if kept is None or kept.keys() != params.keys() or any(kept[n].shape != a.shape for n, a in params.items()):
            self.params = {n: np.array(a, copy=True) for n, a in params.items()}
            return
        for name, array in params.items():
            np.copyto(kept[name], array)

    def put_back(self, live: dict) -> bool:
        """Copy the kept best parameters into ``live`` (name -> array); False when none are kept."""
        if self.params is None:
            return False
        for name, array in self.params.items():
            np.copyto(live[name], array)
        return True

    # ---- as a checkpoint property ------------------------------------------------------------------

    def to_property(self) -> str:
        return json.dumps({"keep_best": self.keep_best, "patience": self.patience, "best_epoch": self.best_epoch,
                           "best_loss": self.best_loss, "epochs_without_improvement": self.since,
                           "last_epoch": self.last_epoch})

    @classmethod
    def from_property(cls, text) -> "BestEpoch":
        """A tracker (without kept parameters) from ``to_property``'s text; ValueError naming the property and
        the field when it is not one."""
        bad = corrupt(PROPERTY)
        fields = json_property(text, PROPERTY)

        def count(key, allow_none):
            value = fields.get(key)
            if value is None and allow_none:
                return None
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise bad(f"'{key}' must be an integer >= 0{' or null' if allow_none else ''}, got {value!r}")
            return value
        try:
            tracker = cls(fields.get("keep_best"), fields.get("patience"))
        except ValueError as e:
            raise bad(str(e)) from None
        tracker.best_epoch, tracker.last_epoch = count("best_epoch", True), count("last_epoch", True)
        tracker.since = count("epochs_without_improvement", False)
        loss = fields.get("best_loss")
        if (loss is None) != (tracker.best_epoch is None) or loss is not None and (
                isinstance(loss, bool) or not isinstance(loss, (int, float)) or not math.isfinite(loss)):
            raise bad(f"'best_loss' must be a finite number when 'best_epoch' is set (and null otherwise), "
                      f"got {loss!r} with best_epoch {tracker.best_epoch!r}")
        tracker.best_loss = None if loss is None else float(loss)
        return tracker
