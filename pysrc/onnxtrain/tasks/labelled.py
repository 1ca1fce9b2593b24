"""What the personalization tasks share: the user's classes and their samples (each with what the task cached of
it), the run set up on them, and the inference session of that run's current parameters."""
from __future__ import annotations

import hashlib

from ..api.module import session_on
from ..train.data import DataError
from .checks import check_validation, class_name, show, whole
from .training import inference_model

MAX_CLASSES = 50


def shown(value) -> str:
    """A number as it is, other values quoted (for messages)."""
    return str(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else show(value)


class LabelledSamples:
    """Classes (``names``), samples (id -> class index) and their cached values (``store``: id -> the task's
    tuple), and the run set up on them (``training``, its ``settings`` with the run's ``ids`` and ``labels``, its
    ``validation`` rows).  ``noun`` names the samples in messages, ``trained`` what a run trains."""

    noun = "samples"
    trained = "model"  # what a run trains, in messages

    def __init__(self, run_factory, device: str):
        self.device = device
        self.make_run = run_factory
        self.names = []          # class names, in label order
        self.samples = {}        # sample id -> class index, in the order added
        self.store = {}          # sample id -> the task's cached values: the samples' and the run's
        self.next_id = 1
        self.training = None     # the run set up last (None before setup, or after the classes changed)
        self.settings = None     # that run's setup, with its samples' "ids" and "labels"
        self.validation = None   # that run's validation rows (inputs..., labels), or None
        self._model_cache = None  # (the run's module and parameters' digest, its inference Session)

    # ---- classes ----------------------------------------------------------------------------------------

    def classes(self) -> list:
        return list(self.names)

    def counts(self) -> list:
        """The number of samples of each class, in class order."""
        counts = [0] * len(self.names)
        for label in self.samples.values():
            counts[label] += 1
        return counts

    def sample_list(self) -> list:
        """[sample id, class index] of every sample, in the order added."""
        return [[i, label] for i, label in self.samples.items()]

    def _index(self, index) -> int:
        i = whole(index, 0, len(self.names) - 1)
        if i is None:
            raise DataError(f"there is no class {shown(index)}; the classes are numbered 0 to {len(self.names) - 1}"
                            if self.names else f"there is no class {shown(index)}: add a class first")
        return i

    def add_class(self, name) -> int:
        """A new class named ``name``; its index.  A run set up before is dropped (its head has other classes)."""
        name = class_name(name, self.names)
        if len(self.names) >= MAX_CLASSES:
            raise DataError(f"there are {len(self.names)} classes already; at most {MAX_CLASSES}")
        self.names.append(name)
        self._drop_run()
        return len(self.names) - 1

    def rename_class(self, index, name) -> None:
        i = self._index(index)
        self.names[i] = class_name(name, self.names[:i] + self.names[i + 1:])

    def remove_class(self, index) -> None:
        """Remove class ``index`` and its samples; the classes after it move down one.  A run is dropped."""
        i = self._index(index)
        del self.names[i]
        self.samples = {s: label - (label > i) for s, label in self.samples.items() if label != i}
        self._drop_run()

    def _drop_run(self) -> None:
        self.training = self.settings = self.validation = self._model_cache = None
        self.store = {s: e for s, e in self.store.items() if s in self.samples}

    # ---- samples ----------------------------------------------------------------------------------------

    def _add(self, cached: list, labels: list) -> list:
        """New samples of classes ``labels`` with the values ``cached``; their ids."""
        ids = list(range(self.next_id, self.next_id + len(cached)))
        for s, values, label in zip(ids, cached, labels):
            self.store[s] = values
            self.samples[s] = label
        self.next_id += len(cached)
        return ids

    def remove_sample(self, sample) -> None:
        s = whole(sample, 1)
        if s is None or s not in self.samples:
            raise DataError(f"there is no sample {shown(sample)}" + ("" if self.samples else " (there are none)"))
        del self.samples[s]
        if self.settings is None or s not in self.settings["ids"]:
            del self.store[s]

    # ---- the run ----------------------------------------------------------------------------------------

    def _setup(self, validation, seed, settings: dict) -> dict:
        """A new run (``_new_run``) of ``settings`` and the checked seed and validation share on the samples
        there are now; what the run trains on."""
        seed = whole(seed, 0)
        if seed is None:
            raise DataError("the seed must be a whole number of 0 or more")
        share = 0.0 if validation in (0, 0.0, None) else check_validation(validation)
        if len(self.names) < 2:
            raise DataError(f"there {'is one class' if self.names else 'are no classes'}; add at least two classes "
                            f"with {self.noun} in each to train")
        empty = [n for n, c in zip(self.names, self.counts()) if c == 0]
        if empty:
            raise DataError(f"the class {show(empty[0])} has no {self.noun}; add some, or remove the class")
        info = self._new_run({**settings, "validation": share, "seed": seed, "ids": list(self.samples),
                              "labels": list(self.samples.values())})
        self.store = {s: e for s, e in self.store.items() if s in self.samples}
        return info

    def _new_run(self, settings: dict, checkpoint: bytes = None) -> dict:
        raise NotImplementedError

    def _run(self):
        if self.training is None:
            raise DataError(f"there is no trained {self.trained}: add classes and {self.noun}, then set up and train")
        return self.training

    @property
    def epoch(self) -> int:
        return self._run().epoch

    def step(self, batch_size: int, learning_rate: float) -> dict:
        return self._run().step(batch_size, learning_rate)

    def _model(self):
        """The run's inference session, made again only when its parameters changed (a live prediction does not
        pay for an export each time)."""
        module = self._run().module
        key = (id(module), hashlib.blake2b(module.get_contiguous_parameters(True), digest_size=16).digest())
        if self._model_cache is None or self._model_cache[0] != key:
            self._model_cache = (key, session_on(inference_model(module), self.device))
        return self._model_cache[1]

    def restore(self, data: bytes) -> int:
        """Continue a saved run of this setup: load its checkpoint; returns its epoch."""
        return self._run().restore(data)

    def artifacts_zip(self) -> bytes:
        """The run's artifacts with its state as their checkpoint (.zip), to go on in onnxruntime-training."""
        return self._run().artifacts_zip()
