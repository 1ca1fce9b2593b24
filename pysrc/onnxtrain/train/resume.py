"""Checkpoints of a Trainer's run, and resuming from them exactly: where in the epoch the run is, its shuffling
state, the best-epoch counters and the best epoch's parameters, each checked before anything changes."""
from __future__ import annotations

import dataclasses
import json

import numpy as np

from ..api import CheckpointState, _internal as api
from ..api.checkpoint_state import LEARNING_RATE_PROPERTY
from ..api.optimizer import check_learning_rate
from ..checkpoint import write_checkpoint
from .best import PROPERTY as BEST_PROPERTY, BestEpoch, corrupt, json_property
from .guard import check_finite_state

#: Checkpoint property with where the run is: steps done, the position in the epoch and the shuffling state.
PROPERTY = "onnxtrain.trainer"


def epoch_property(properties: dict) -> int:
    """The checkpoint's ``epoch`` property (0 when absent); ValueError naming it when it is not a count."""
    value = properties.get("epoch", 0)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"the checkpoint's property 'epoch' must be an integer >= 0, got {value!r} "
                         f"({type(value).__name__})")
    return value


class Checkpoints:
    """The Trainer's checkpoint and resume methods (a part of Trainer, on its module, optimizer, counters and
    shuffling state)."""

    def best_checkpoint(self):
        """A checkpoint (no optimizer state) of the kept best parameters, its ``epoch`` the best epoch, or None."""
        best = self.best
        if best.params is None:
            return None
        data = api.to_data(api.state_of(self.module), False)
        properties = dict(data.properties, epoch=best.best_epoch)
        properties[BEST_PROPERTY] = best.to_property()
        data = dataclasses.replace(data, trainable={n: best.params.get(n, a) for n, a in data.trainable.items()},
                                   properties=properties)
        return write_checkpoint(data, None, layout="runtime")

    def checkpoint(self, properties: dict = None) -> bytes:
        """The run so far: parameters, optimizer state, the finished epochs (property ``epoch``), where in the
        epoch the run is, the best-epoch counters and ``properties`` (values that are not int, float or str are
        stored as JSON).  NonFiniteStateError, and nothing written, when a trainable parameter or optimizer state
        is not finite."""
        check_finite_state(self.module, self.optimizer)
        state = api.state_of(self.module)
        props = api.properties(state)
        for key, value in (properties or {}).items():
            props[key] = value if isinstance(value, (int, float, str)) and not isinstance(value, bool) \
                else json.dumps(value)
        props["epoch"] = self.epoch
        props[BEST_PROPERTY] = self.best.to_property()
        props[PROPERTY] = json.dumps({"steps": self.steps, "position": self.position,
                                      "shuffle": self._epoch_rng if self.order is not None
                                      else self.rng.bit_generator.state})
        return CheckpointState.save_checkpoint(state, None, include_optimizer_state=True)

    def restore(self, data, best=None) -> int:
        """Continue a run saved by ``checkpoint`` (same model and data) where it was: its state, its place in the
        epoch and its shuffling, so the steps that follow are those the run would have taken.  With ``best``, the
        bytes of its ``best_checkpoint()``, the best parameters too.  On any error nothing changes."""
        loaded = self.checked_checkpoint(data, "checkpoint")
        props = api.properties(loaded)
        epoch = epoch_property(props)
        tracker = BestEpoch.from_property(props[BEST_PROPERTY]) if BEST_PROPERTY in props else \
            BestEpoch(self.best.keep_best, self.best.patience)
        if best is not None:
            tracker.params = self._best_parameters(best, tracker)
        elif tracker.keep_best and tracker.best_epoch is not None and tracker.best_epoch == epoch:
            tracker.params = self._copied_parameters(loaded)
        where = self._where(props.get(PROPERTY), epoch)
        self._commit(loaded)
        self.epoch, self.steps, self.best = epoch, where["steps"], tracker
        self.settings = dataclasses.replace(self.settings, keep_best=tracker.keep_best, patience=tracker.patience)
        self.history = [h for h in self.history if h["epoch"] <= epoch]
        self.position, self.order, self._epoch_rng = where["position"], None, None
        if where["shuffle"] is not None:
            self.rng.bit_generator.state = where["shuffle"]
        if self.position:  # mid-epoch: draw the epoch's order again, from the state it was drawn from
            self._epoch_rng = where["shuffle"]
            self.order = self.rng.permutation(self.rows) if self.settings.shuffle else np.arange(self.rows)
        return self.epoch

    def _where(self, text, epoch: int) -> dict:
        """The trainer property's fields, checked; a checkpoint without it resumes at the start of an epoch."""
        if text is None:
            return {"steps": epoch * self.steps_per_epoch, "position": 0, "shuffle": None}

        bad = corrupt(PROPERTY)
        fields = json_property(text, PROPERTY)
        for key in ("steps", "position"):
            value = fields.get(key)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise bad(f"'{key}' must be an integer >= 0, got {value!r}")
        if fields["position"] and fields["position"] >= self.rows:
            raise bad(f"it is {fields['position']} rows into an epoch, but the data has {self.rows} rows: "
                      f"it is not from a run on this data")
        shuffle = fields.get("shuffle")
        try:
            np.random.default_rng().bit_generator.state = shuffle
        except (TypeError, ValueError, KeyError) as e:
            raise bad(f"'shuffle' is not a generator state ({e})") from None
        return {"steps": fields["steps"], "position": fields["position"], "shuffle": shuffle}

    def restore_best(self, best) -> int:
        """After ``restore(data)``, the best parameters from the bytes of the run's ``best_checkpoint()``; returns
        the best epoch.  On an error nothing changes."""
        self.best.params = self._best_parameters(best, self.best)
        return self.best.best_epoch

    def _best_parameters(self, data, tracker: BestEpoch) -> dict:
        kept = self.checked_checkpoint(data, "best-epoch checkpoint")
        epoch = epoch_property(api.properties(kept))
        if tracker.best_epoch is None or epoch != tracker.best_epoch or not tracker.keep_best:
            raise ValueError(f"the best-epoch checkpoint is of epoch {epoch}, but the run's best epoch is "
                             f"{tracker.best_epoch} (keep_best {tracker.keep_best}): they are not from the same run")
        return self._copied_parameters(kept)

    def _copied_parameters(self, loaded: CheckpointState) -> dict:
        """Copies of a loaded checkpoint's values of this model's trainable parameters."""
        arrays = api.arrays(loaded)
        return {n: arrays[n].copy() for n in api.trainable_names(self.module)}

    def load_checkpoint(self, data) -> None:
        """Replace parameters and optimizer state with a checkpoint's (same model); the run's counters stay."""
        self._commit(self.checked_checkpoint(data, "checkpoint"))

    def checked_checkpoint(self, data, what: str) -> CheckpointState:
        """A checkpoint's state (from a path or bytes), checked to fit this model before it is used."""
        loaded = CheckpointState.load_checkpoint(data)
        if loaded.is_nominal:
            raise ValueError(f"the {what} is nominal (it holds no parameter values)")
        mine = {n: p.data for n, p in api.state_of(self.module).parameters}
        theirs = {n: p.data for n, p in loaded.parameters}
        if {n: (a.shape, a.dtype) for n, a in mine.items()} != {n: (a.shape, a.dtype) for n, a in theirs.items()}:
            raise ValueError(f"the {what}'s parameters do not match this model's: "
                             f"{sorted(theirs)} vs {sorted(mine)}")
        props, group = api.properties(loaded), api.optimizer_group(loaded)
        if LEARNING_RATE_PROPERTY in props:
            check_learning_rate(props[LEARNING_RATE_PROPERTY], f"{what}'s property '{LEARNING_RATE_PROPERTY}'")
        if group is not None:
            check_learning_rate(group.initial_learning_rate, f"{what}'s initial learning rate")
        return loaded

    def _commit(self, loaded: CheckpointState) -> None:
        api.replace_state(self.module, self.optimizer, loaded)
        self._start_hooks()
