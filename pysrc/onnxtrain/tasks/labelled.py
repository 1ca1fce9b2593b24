"""What the personalization tasks share: the user's classes and their samples (each with what the task cached of
it), the run set up on them, and the inference session of that run's current parameters."""
from __future__ import annotations

import hashlib
import io
import json

import numpy as np

from ..api.module import session_on
from ..train.data import DataError
from .checks import check_validation, class_name, show, whole
from .training import inference_model

MAX_CLASSES = 50
SNAPSHOT_VERSION = 1


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

    # ---- snapshots --------------------------------------------------------------------------------------

    def _snapshot(self, ids: list, meta: dict, arrays: dict) -> bytes:
        """.npz bytes of the classes, the samples, the run's setup and checkpoint, ``meta`` and the task's
        ``arrays`` (a row for each of the stored samples ``ids``)."""
        meta = {"version": SNAPSHOT_VERSION, "classes": self.names, "samples": self.sample_list(),
                "next_id": self.next_id, "settings": self.settings, **meta}
        arrays = {"meta": np.frombuffer(json.dumps(meta).encode(), np.uint8), "ids": np.array(ids, np.int64),
                  **arrays}
        if self.training is not None:
            arrays["checkpoint"] = np.frombuffer(self.training.checkpoint(), np.uint8)
        buffer = io.BytesIO()
        np.savez(buffer, **arrays)
        return buffer.getvalue()

    def _read_snapshot(self, snapshot: bytes, what: str, model: tuple) -> tuple:
        """(meta, the task's arrays, the stored samples' ids) of ``_snapshot``'s bytes, checked: its version, its
        ``model`` (meta key, SHA-256, words for it), and that its classes, samples and run agree; meta's
        "checkpoint" is the run's.  DataError names ``what`` it is."""
        key, sha, words = model
        try:
            archive = np.load(io.BytesIO(bytes(snapshot)), allow_pickle=False)
            arrays = {name: archive[name] for name in archive.files}
            meta = json.loads(arrays.pop("meta").tobytes())
            ids = [int(s) for s in arrays.pop("ids").tolist()]
            meta["checkpoint"] = arrays.pop("checkpoint").tobytes() if "checkpoint" in arrays else None
            names, next_id, settings = [str(n) for n in meta["classes"]], int(meta["next_id"]), meta["settings"]
            samples = {int(s): int(c) for s, c in meta["samples"]}
            run_ids = [] if settings is None else [int(s) for s in settings["ids"]]
            run_ok = settings is None or (len(settings["labels"]) == len(run_ids)
                                          and all(0 <= int(c) < len(names) for c in settings["labels"]))
        except Exception as e:
            raise DataError(f"the saved {what} cannot be read ({e})") from None
        if meta.get("version") != SNAPSHOT_VERSION:
            raise DataError(f"the saved {what} is of version {show(meta.get('version'))}; this onnxtrain reads "
                            f"version {SNAPSHOT_VERSION}")
        if meta.get(key) != sha:
            raise DataError(f"the saved {what} was made with another {words}; load it with the {words} it was "
                            f"made with")
        known = set(ids)
        if not run_ok or not known >= set(samples) | set(run_ids) or any(
                not 0 <= c < len(names) for c in samples.values()) or next_id <= max(known, default=0):
            raise DataError(f"the saved {what} cannot be read ({len(ids)} stored samples, {len(samples)} samples, "
                            f"{len(names)} classes)")
        meta.update(classes=names, samples=samples, next_id=next_id)
        return meta, arrays, ids

    def _take_snapshot(self, meta: dict, store: dict) -> None:
        """Take the classes, samples and run of a read snapshot, with the task's ``store`` (this session is
        new)."""
        self.names, self.samples, self.next_id, self.store = meta["classes"], meta["samples"], meta["next_id"], store
        if meta["settings"] is not None:
            self._new_run(meta["settings"], meta.get("checkpoint"))
