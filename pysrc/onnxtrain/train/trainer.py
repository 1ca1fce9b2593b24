"""Trainer: the epoch loop over a Module and its Optimizer, with batching, validation, the best epoch, a learning-rate
schedule, hooks after each step, and checkpoints a run resumes from exactly (resume.Checkpoints).

Every step is guarded (guard.StepGuard): a step that fails, for bad data, for lack of memory or for a non-finite
loss or update, leaves the run as it was, so the caller can change the batch size or the rate and go on.
"""
from __future__ import annotations

import dataclasses

import numpy as np

from ..api import _internal as api
from ..api.lr_scheduler import linear_factor
from ..api.optimizer import check_learning_rate
from . import data as checks
from .best import BestEpoch
from .guard import StepGuard
from .proximal import ProximalTerm
from .resume import Checkpoints
from .settings import SETTINGS, TrainSettings


def out_of_memory(error: BaseException) -> bool:
    """A MemoryError, or numpy's refusal of an array larger than the address space (wasm32: 2 GiB), anywhere
    in the chain of causes."""
    while error is not None:
        if isinstance(error, MemoryError) or (isinstance(error, ValueError) and "array is too big" in str(error)):
            return True
        error = error.__cause__
    return False


def held_out(n: int, fraction: float) -> int:
    """How many of ``n`` rows ``split`` holds out: none when there are fewer than 10, and always at least one row
    left to train on."""
    fraction = checks.fraction(fraction)
    return min(int(round(n * fraction)), n - 1) if n >= 10 else 0


def split(arrays: list, fraction: float, seed: int) -> tuple:
    """(training arrays, validation arrays or None): a seeded ``fraction`` of the rows held out (``held_out``)."""
    n = len(arrays[0])
    n_val = held_out(n, fraction)
    order = np.random.default_rng(seed).permutation(n)
    val, train = order[:n_val], order[n_val:]
    return [a[train] for a in arrays], ([a[val] for a in arrays] if n_val else None)


class Trainer(Checkpoints):
    """Trains ``module`` with ``optimizer`` on ``data`` (input name -> array, or a list in the training model's
    input order, rows along axis 0), with ``settings`` (TrainSettings' fields, readable as the trainer's
    attributes: ``trainer.epochs``).

    ``validation`` is data of the same form, or a fraction of ``data`` to hold out (seeded by ``seed``).

    ``hooks`` are objects with ``after_step(trainer)``, run after each step that was not undone, and
    ``start(trainer)``, run when the run starts from the parameters as they are (the hook is added, the data is
    set, a checkpoint is loaded).  The setting ``proximal_mu`` > 0 adds one: FedProx's ProximalTerm.
    """

    def __init__(self, module, optimizer, data=None, *, validation=None, seed: int = 0, hooks=(), **settings):
        self.module, self.optimizer = module, optimizer
        self.names = module.train().input_names()
        self.guard = StepGuard(module, optimizer)
        self.best = BestEpoch()
        self.hooks, self._proximal = list(hooks), None
        self.settings = TrainSettings()
        self.configure(**{**vars(self.settings), **settings})
        self.train_data = self.validation_data = None
        self.set_data(data, validation, seed)

    def __getattr__(self, name):
        if name in SETTINGS and "settings" in self.__dict__:
            return getattr(self.settings, name)
        raise AttributeError(f"'Trainer' object has no attribute {name!r}")

    def configure(self, **settings) -> None:
        """Change settings of the run (TrainSettings' fields; ``learning_rate=None`` keeps the rate;
        ``proximal_mu`` anchors the proximal term at the parameters as they are now); they are all checked before
        any changes, and the run's counters stay (the linear schedule counts the run's steps, so it decays over
        ``epochs`` at the batch size it has now)."""
        unknown = sorted(set(settings) - SETTINGS)
        if unknown:
            raise TypeError(f"the trainer has no setting {unknown[0]!r}; the settings are {sorted(SETTINGS)}")
        given = {k: v for k, v in settings.items() if not (k == "learning_rate" and v is None)}
        new = dataclasses.replace(self.settings, **given)
        if new.learning_rate is None and self.optimizer is not None:
            new = dataclasses.replace(new, learning_rate=self.optimizer.get_learning_rate())
        if "keep_best" in settings or "patience" in settings:
            self.best.configure(new.keep_best, new.patience)
        if "check_finite" in settings:
            self.guard.check = new.check_finite
        self.settings = new
        if "proximal_mu" in settings:
            self._set_proximal_term(new.proximal_mu)

    def _set_proximal_term(self, mu: float) -> None:
        """The proximal_mu setting's hook in place of the one before, anchored at the parameters now."""
        if self._proximal is not None:
            self.hooks.remove(self._proximal)
        self._proximal = ProximalTerm(mu) if mu else None
        if self._proximal is not None:
            self._proximal.start(self)
            self.hooks.append(self._proximal)

    def _start_hooks(self) -> None:
        for hook in self.hooks:
            hook.start(self)

    # ---- data ------------------------------------------------------------------------------------------

    def _arrays(self, data, what: str) -> list:
        if isinstance(data, dict):
            missing = [n for n in self.names if n not in data]
            unknown = [n for n in data if n not in self.names]
            if missing or unknown:
                raise checks.DataError(f"the {what} needs arrays named {self.names}; " + "; ".join(
                    p for p in (missing and f"missing {missing}", unknown and f"unknown {unknown}") if p))
            data = [data[n] for n in self.names]
        arrays = [np.asarray(a) for a in data]
        if len(arrays) != len(self.names):
            raise checks.DataError(f"the training model takes {len(self.names)} inputs {self.names}, but "
                                   f"{len(arrays)} {what} arrays came")
        checks.rows(self.names, arrays, what)
        return arrays

    def set_data(self, data, validation=None, seed: int = 0) -> None:
        """New data for a new run: the epoch count, the shuffling and the best-epoch counters start over."""
        seed = checks.seed(seed)
        if data is None:
            train = val = None
        else:
            fraction = isinstance(validation, (float, int)) and not isinstance(validation, bool)
            train = self._arrays(data, "data" if fraction else "training data")
            if fraction:
                train, val = split(train, validation, seed)
            else:
                val = None if validation is None or not len(validation) else \
                    self._arrays(validation, "validation data")
            for what, arrays in (("training data", train), ("validation data", val)):
                if arrays is not None:
                    checks.finite(self.names, arrays, what)
        self.train_data, self.validation_data = train, val
        self.rng = np.random.default_rng(seed)
        self.order, self.position, self.epoch, self.steps = None, 0, 0, 0
        self._epoch_rng = None  # the shuffling state the current epoch's order came from
        self.history = []
        self.best.reset()
        self._start_hooks()

    @property
    def rows(self) -> int:
        return 0 if self.train_data is None else len(self.train_data[0])

    @property
    def steps_per_epoch(self) -> int:
        return -(-self.rows // self.settings.batch_size)

    @property
    def done(self) -> bool:
        return (self.settings.epochs is not None and self.epoch >= self.settings.epochs) or (
            bool(self.history) and self.history[-1]["best"]["stop"])

    # ---- steps -----------------------------------------------------------------------------------------

    def rate(self, step: int = None) -> float:
        """The scheduled learning rate of the run's step ``step`` (0-based; the next step by default)."""
        step = self.steps if step is None else step
        settings = self.settings
        if settings.schedule == "constant" or settings.learning_rate is None:
            return settings.learning_rate
        total = settings.epochs * self.steps_per_epoch
        return settings.learning_rate * linear_factor(step, int(round(settings.warmup * total)), total)

    def step(self, batch_size: int = None, learning_rate: float = None) -> dict:
        """One batch; ``batch_size`` and ``learning_rate`` override the run's for this step.  On an epoch's last
        batch the epoch ends (validation, metrics, best epoch) unless epochs are ended by the caller."""
        size = self.settings.batch_size if batch_size is None else checks.batch_size(batch_size)
        rate = self.rate() if learning_rate is None else check_learning_rate(learning_rate)
        if self.train_data is None:
            raise checks.DataError("there is no training data: give it to Trainer() or set_data first")
        n = self.rows
        order, position, epoch_rng, drawn = self.order, self.position, self._epoch_rng, False
        if order is None:  # a new epoch's order, drawn from the shuffling state that a checkpoint then keeps
            epoch_rng, drawn = self.rng.bit_generator.state, True
            order, position = (self.rng.permutation(n) if self.settings.shuffle else np.arange(n)), 0
        rows = order[position:position + size]
        previous_rate = None if self.optimizer is None else self.optimizer.get_learning_rate()
        if self.optimizer is not None and rate is not None:
            self.optimizer.set_learning_rate(rate)
        try:
            loss = self.guard.step([a[rows] for a in self.train_data], epoch=self.epoch + 1)
        except Exception as e:
            if drawn:
                self.rng.bit_generator.state = epoch_rng
            if previous_rate is not None:
                self.optimizer.set_learning_rate(previous_rate)
            if out_of_memory(e):
                raise MemoryError(f"ran out of memory training a batch of {len(rows)} rows: choose a smaller batch "
                                  f"size (nothing was changed, training can go on)") from e
            raise
        for hook in self.hooks:
            hook.after_step(self)
        self.order, self.position, self._epoch_rng = order, position + len(rows), epoch_rng
        self.steps += 1
        epoch_done = self.position >= n
        if epoch_done:
            self.epoch += 1
            self.order, self.position, self._epoch_rng = None, 0, None
        record = {"epoch": self.epoch, "step": self.steps, "steps_per_epoch": -(-n // size), "epochs": self.epochs,
                  "loss": loss, "learning_rate": rate, "examples": len(rows), "epoch_done": epoch_done,
                  "progress": self.epoch + self.position / n}
        evaluate = self.settings.evaluate
        if epoch_done and self.settings.evaluate_epochs:
            record.update(self.end_epoch(self.validation_loss(), evaluate(self) if evaluate else None))
        record["done"] = self.done
        return record

    def run(self, on_progress=None, should_stop=None) -> list:
        """Steps until ``done`` or ``should_stop()``; ``on_progress(record)`` after each step.  Returns the
        records of the epochs that ended in this call."""
        if self.settings.epochs is None:
            raise ValueError("run() needs a number of epochs; with epochs=None call step() yourself")
        ended = []
        while not self.done and not (should_stop is not None and should_stop()):
            record = self.step()
            if record["epoch_done"]:
                ended.append(record)
            if on_progress is not None:
                on_progress(record)
        return ended

    # ---- validation and the best epoch ---------------------------------------------------------------

    def validation_loss(self, chunk: int = None):
        """The eval model's loss on the validation data (None without it).  With ``chunk``, the data goes through
        ``chunk`` rows at a time and the losses are averaged by rows, which is the same for a loss that is a mean
        over rows, in less memory."""
        if not self.validation_data:
            return None
        module = self.module.eval()
        n = len(self.validation_data[0])
        chunk = int(chunk or n)
        total = 0.0
        try:
            for start in range(0, n, chunk):
                out = module(*[a[start:start + chunk] for a in self.validation_data])
                rows = min(chunk, n - start)
                total += rows * float(np.asarray(out[0] if isinstance(out, tuple) else out).reshape(-1)[0])
        finally:
            self.module.train()
        return total / n

    def _trainable(self, writing: bool = False) -> dict:
        return api.trainable_arrays(self.module, writing)

    def end_epoch(self, validation_loss, metrics: dict = None) -> dict:
        """Record the finished epoch's validation loss (None without validation data) and metrics:
        {"validation_loss", "metrics", "best"}, also appended to ``history``."""
        if self.epoch < 1:
            raise ValueError("end_epoch is for after an epoch: no epoch has finished yet")
        best = self.best.end_epoch(self.epoch, validation_loss, self._trainable())
        record = {"epoch": self.epoch, "validation_loss": validation_loss, "metrics": dict(metrics or {}),
                  "best": best}
        if self.history and self.history[-1]["epoch"] == self.epoch:
            self.history[-1] = record
        else:
            self.history.append(record)
        return {k: record[k] for k in ("validation_loss", "metrics", "best")}

    def use_best(self):
        """Put the best epoch's parameters back (the optimizer state stays); the best epoch, or None when they
        are not held (no validation loss, keep_best off, or not kept)."""
        best = self.best
        if best.best_epoch is None:
            return None
        if best.put_back(self._trainable(writing=True)):
            return best.best_epoch
        current = best.best_epoch == self.epoch and self.order is None
        return best.best_epoch if current else None
