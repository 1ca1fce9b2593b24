"""The tasks of onnxtrain.tasks (a CSV table, a folder of images, handwriting, personalizing a backbone or the text
encoder) as sessions of the library's registry, next to its TrainingSessions: ``create_task(kind, args)`` makes one,
and a page calls the methods its kind allows (task_kinds.KINDS declares each kind).  Training goes through the same
train() as a TrainingSession's (train_loop.TrainLoop), on the task's own data."""
from __future__ import annotations

import importlib

from ..providers import PROVIDERS, provider_for
from . import task_kinds
from .bridge import signature
from .task_kinds import KINDS
from .train_loop import TRAIN_OPTIONS, Training

#: kind -> how a page makes one: a module (of onnxtrain), the factory's name there and how many of the page's
#: arguments are the factory's (the one after them, if any, is onnxruntime-web's executionProviders).  Each module is
#: imported with the first task of its kind, so that the engine's start imports no task.
FACTORIES = {factory.kind: (kind.module, factory.python, factory.count)
             for kind in KINDS for factory in kind.factories}
#: kind -> the task's own methods (and attributes) a page may call
TASK_METHODS = {kind.kind: kind.python_methods() for kind in KINDS}
#: (kind, method) -> (the TaskSession, the task's result) -> the result as JavaScript takes it, where that is not
#: the task's own
RESULTS = {(kind.kind, method): shape for kind in KINDS for method, shape in (kind.shapes or {}).items()}
#: what every task has (TaskSession's own methods): its run's checkpoints and artifacts, the export, and train()
COMMON = {name for call in task_kinds.COMMON for name in call.python}
#: train()'s options for a task, whose data, split and seed its setup fixed
TASK_TRAIN_OPTIONS = {k: v for k, v in TRAIN_OPTIONS.items() if k not in ("validation", "seed", "shuffle")}


def import_tasks(kinds) -> list[str]:
    """Import the modules of the task kinds ``kinds`` (start()'s ``tasks``, which the engine imports before its
    memory snapshot so that a page's first task of a kind loads none); their names."""
    if isinstance(kinds, str) or not all(isinstance(kind, str) for kind in kinds):
        raise TypeError(f"start's tasks must be a list of task kinds (strings), not {kinds!r}")
    unknown = [kind for kind in kinds if kind not in TASK_METHODS]
    if unknown:
        raise ValueError(f"start's tasks: unknown kind of task {unknown[0]!r}; the kinds are {sorted(TASK_METHODS)}")
    modules = sorted({f"onnxtrain.{FACTORIES[kind][0]}" for kind in kinds})
    for module in modules:
        importlib.import_module(module)
    return modules


class TaskSession(Training):
    """One task of kind ``kind`` made from ``args`` (the factory's, then executionProviders: its training, and a
    personalization's embeddings, run on the first of them that is here); ``call(method, args)`` runs one of its
    kind's methods."""

    def __init__(self, kind: str, args: list):
        if kind not in FACTORIES:
            raise ValueError(f"unknown kind of task {kind!r}; the kinds are {sorted(FACTORIES)}")
        self.kind = kind.removesuffix("_snapshot")
        module, name, count = FACTORIES[kind]
        args = list(args or [])
        if len(args) > count + 1:
            raise TypeError(f"a {self.kind} task takes {count} arguments and executionProviders, not {len(args)}")
        providers = args[count] if len(args) > count else None
        self.provider = provider_for(None if providers is None else [str(p) for p in providers])
        factory = importlib.import_module(f"onnxtrain.{module}")
        for attribute in name.split("."):
            factory = getattr(factory, attribute)
        self.task = factory(*args[:count], device=PROVIDERS[self.provider])
        self.methods = TASK_METHODS[self.kind] | COMMON

    def call(self, method: str, args: list):
        if method not in self.methods:
            raise ValueError(f"a {self.kind} task has no method {method!r}")
        own = getattr(self, method, None)
        if own is not None:
            return own(*args)
        value = getattr(self.task, method)
        result = value(*args) if callable(value) else value
        shape = RESULTS.get((self.kind, method))
        return result if shape is None else shape(self, result)

    # ---- the run: the task's own, or (handwriting) the last fine-tuning's ----------------------------------

    def _training(self):
        """The task's run (tasks.training.Run)."""
        training = self.task.training
        if training is None:
            raise ValueError("set the task up first: it has no run yet")
        return training

    def checkpoint(self) -> bytes:
        """The run so far (parameters, optimizer state, epoch, the task's settings)."""
        return self.task.training.checkpoint() if self.kind == "handwriting" else self.task.checkpoint()

    def restore(self, data, best=None) -> int:
        """Continue a run saved by ``checkpoint`` (``best``: the bytes of its best epoch's checkpoint)."""
        epoch = (self._training() if self.kind == "handwriting" else self.task).restore(data)
        if best is not None:
            self._training().restore_best(best)
        return epoch

    def artifacts_zip(self) -> bytes:
        return self._training().artifacts_zip()

    def export_model(self) -> bytes:
        return self.task.export_model()

    def signature(self) -> str:
        return signature(self.task.export_model())

    # ---- train() ---------------------------------------------------------------------------------------------

    def train_begin(self, options=None) -> dict:
        """Train the task's run up to ``epochs`` epochs in all (a paused run goes on); ``options`` as
        TASK_TRAIN_OPTIONS names them, plus ``checkpoints`` (each epoch's checkpoint in its last record).  At each
        epoch's end the record's metrics are the task's ``evaluate()`` where it has one."""
        if self.loop is not None:
            raise RuntimeError("this task is already training: wait for train() to end, or abort it")
        options = dict(options or {})
        checkpoints = bool(options.pop("checkpoints", False))
        unknown = sorted(set(options) - set(TASK_TRAIN_OPTIONS))
        if unknown:
            raise ValueError(f"a task's train has no option {unknown[0]!r}; the options are "
                             f"{sorted([*TASK_TRAIN_OPTIONS, 'checkpoints'])}")
        trainer = self._training().trainer
        evaluate = getattr(self.task, "evaluate", None)
        trainer.configure(**{TASK_TRAIN_OPTIONS[k]: v for k, v in options.items()}, evaluate_epochs=True,
                          evaluate=None if evaluate is None else (lambda _trainer: evaluate()))
        return self.begun(trainer, self.checkpoint if checkpoints else None)

    def ended(self, summary: dict, finished: bool) -> dict:
        """A finished run also gives the task's metrics now (after the best epoch's parameters are back)."""
        evaluate = getattr(self.task, "evaluate", None)
        if finished and evaluate is not None:
            summary["metrics"] = dict(evaluate())
        return summary
