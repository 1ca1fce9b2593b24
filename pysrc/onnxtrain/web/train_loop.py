"""The library's train(): a Trainer driven from JavaScript in chunks of whole steps, so the page can show progress
and abort between chunks.  Used by every kind of session of the registry (sessions.Session, tasks.TaskSession)."""
from __future__ import annotations

import functools
import time

import numpy as np

from ..train.settings import OPTIONS as TRAIN_OPTIONS, camel  # noqa: F401  (the sessions' train() options)

#: A Python name in camelCase (each record of each step has the same few keys: converted once).
camel_key = functools.lru_cache(maxsize=None)(camel)


def camel_keys(record: dict) -> dict:
    """A task's result for JavaScript: its own keys in camelCase, the values as they are (a class or column name
    used as a key inside them is the user's, and stays)."""
    return {camel_key(k): v for k, v in record.items()}


def camel(value):
    """A record for JavaScript: keys in camelCase (a metric's name as it is), numpy numbers as Python numbers."""
    if isinstance(value, dict):
        return {camel_key(k): (dict(v) if k == "metrics" else camel(v)) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [camel(v) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    return value


class TrainLoop:
    """One train() of ``trainer``.  With ``checkpoint`` (a callable giving the run's checkpoint bytes), each
    epoch's last record carries ``checkpoint``, and ``bestCheckpoint`` when the epoch is the best so far."""

    def __init__(self, trainer, checkpoint=None):
        self.trainer, self.checkpoint = trainer, checkpoint
        self.epoch_losses, self.failure = {}, None

    def steps(self, budget_ms=50) -> dict:
        """Whole steps for about ``budget_ms`` milliseconds (one at least): their progress records, and whether
        the run is done.  A step that fails is reported by the next call, after the records of those before it."""
        trainer = self.trainer
        if self.failure is not None:
            failure, self.failure = self.failure, None
            raise failure
        deadline = time.perf_counter() + float(budget_ms) / 1000
        records = []
        while not trainer.done:
            try:
                record = trainer.step()
            except Exception as e:
                if not records:
                    raise
                self.failure = e
                break
            total = self.epoch_losses.setdefault(record["epoch"] - record["epoch_done"], [0.0, 0])
            total[0] += float(record["loss"]) * record["examples"]
            total[1] += record["examples"]
            if record["epoch_done"] and self.checkpoint is not None:
                record["checkpoint"] = self.checkpoint()
                if record.get("best", {}).get("improved") and trainer.best.params is not None:
                    record["best_checkpoint"] = trainer.best_checkpoint()
            records.append(camel(record))
            if time.perf_counter() >= deadline:
                break
        return {"records": records, "done": trainer.done and self.failure is None}

    def end(self, finished: bool = True) -> dict:
        """The run's summary.  A finished run with keepBest and a validation loss puts the best epoch's parameters
        back (and with ``checkpoint``, gives the checkpoint it ends with); an aborted or failed one (``finished``
        false) leaves the session at its last step."""
        trainer = self.trainer
        restored = trainer.use_best() if finished and trainer.best.keep_best else None
        history = [{**camel(h), "loss": self.epoch_loss(h["epoch"])} for h in trainer.history]
        best = camel(trainer.best.summary())
        del best["improved"]
        summary = {"epochs": trainer.epoch, "steps": trainer.steps,
                   "loss": self.epoch_loss(trainer.epoch) if trainer.epoch else None,
                   "validationLoss": trainer.history[-1]["validation_loss"] if trainer.history else None,
                   "best": {**best, "restored": restored is not None}, "history": history}
        if finished and self.checkpoint is not None:  # the state the run ends with (the best epoch's, if restored)
            summary["checkpoint"] = self.checkpoint()
        return summary

    def epoch_loss(self, epoch: int):
        """The mean training loss of a finished epoch's steps in this train(), weighted by their rows."""
        total, rows = self.epoch_losses.get(epoch - 1, (0.0, 0))
        return total / rows if rows else None


class Training:
    """train_continue and train_end for a session of the registry whose train_begin sets ``self.loop``."""

    loop = None  # the train() going on

    def begun(self, trainer, checkpoint=None) -> dict:
        """Start ``trainer``'s loop (``checkpoint``: see TrainLoop); what train()'s onStart is told."""
        self.loop = TrainLoop(trainer, checkpoint)
        return {"rows": trainer.rows, "stepsPerEpoch": trainer.steps_per_epoch, "epochs": trainer.epochs,
                "epoch": trainer.epoch,
                "validationRows": 0 if trainer.validation_data is None else len(trainer.validation_data[0])}

    def _loop(self) -> TrainLoop:
        if self.loop is None:
            raise RuntimeError("this session is not training: call train() first")
        return self.loop

    def train_continue(self, budget_ms=50) -> dict:
        """Whole steps for about ``budget_ms`` milliseconds (TrainLoop.steps)."""
        return self._loop().steps(budget_ms)

    def train_end(self, finished=True) -> dict:
        """End the run: its summary (TrainLoop.end, then ``ended``)."""
        loop, self.loop = self._loop(), None
        return self.ended(loop.end(bool(finished)), bool(finished))

    def ended(self, summary: dict, finished: bool) -> dict:
        return summary
