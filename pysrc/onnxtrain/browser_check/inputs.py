"""What both sides train on: the artifact files, the training data cast to the model's input types, and the rows
of each step's batch (in order, cycling, no shuffle)."""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .. import ir
from ..ir.model import TensorType
from ..train.data import DataError, batch_size as checked_batch_size, rows
from ..train.npz import NpzError, load_npz
from .errors import SetupError

TRAINING, EVAL, OPTIMIZER, CHECKPOINT = "training_model.onnx", "eval_model.onnx", "optimizer_model.onnx", "checkpoint"
DEFAULT_BATCH = 32
# numpy dtype -> the tensor type name of onnxruntime-web (and of onnxtrain.mjs)
TENSOR_TYPES = {"float32": "float32", "float64": "float64", "int8": "int8", "int16": "int16", "int32": "int32",
                "int64": "int64", "uint8": "uint8", "uint16": "uint16", "uint32": "uint32", "uint64": "uint64",
                "bool": "bool"}


@dataclass
class Artifacts:
    """The files of one artifact set (eval is None when the set has none)."""
    training: Path
    optimizer: Path
    checkpoint: Path
    eval: Path | None

    def files(self) -> dict:
        """URL name -> path of each file the page loads."""
        named = {TRAINING: self.training, OPTIMIZER: self.optimizer, CHECKPOINT: self.checkpoint, EVAL: self.eval}
        return {name: path for name, path in named.items() if path is not None}


def find_artifacts(directory, prefix: str | None = None) -> Artifacts:
    """The artifact set in ``directory`` (``<prefix>training_model.onnx`` and the rest); the prefix is found when
    there is one set."""
    folder = Path(directory)
    if not folder.is_dir():
        raise SetupError(f"the artifact directory {folder} does not exist" if not folder.exists()
                         else f"{folder} is not a directory: give the folder that holds the training artifacts")
    if prefix is None:
        prefixes = sorted(p.name[:-len(TRAINING)] for p in folder.iterdir() if p.name.endswith(TRAINING))
        if len(prefixes) != 1:
            have = sorted(p.name for p in folder.iterdir())
            raise SetupError(f"{folder} has no {TRAINING} (it has {have})" if not prefixes else
                             f"{folder} holds several artifact sets (prefixes {prefixes}): choose one with --prefix")
        prefix = prefixes[0]
    paths = {name: folder / f"{prefix}{name}" for name in (TRAINING, EVAL, OPTIMIZER, CHECKPOINT)}
    for name in (TRAINING, OPTIMIZER, CHECKPOINT):
        if not paths[name].is_file():
            why = " (browser-check trains, which needs the optimizer model)" if name == OPTIMIZER else ""
            raise SetupError(f"the artifact directory {folder} has no {prefix}{name}{why}")
    return Artifacts(paths[TRAINING], paths[OPTIMIZER], paths[CHECKPOINT],
                     paths[EVAL] if paths[EVAL].is_file() else None)


@dataclass
class Data:
    """The training model's user inputs (in its input order) as arrays of its input types, and the batches."""
    names: list
    arrays: list
    batches: list  # per step, (first row, end row)

    def batch(self, step: int) -> list:
        start, stop = self.batches[step]
        return [a[start:stop] for a in self.arrays]


def input_types(model: ir.Model, names: list) -> dict:
    """name -> (numpy dtype, fixed leading dimension or None) of the model's inputs ``names``."""
    found = {}
    for value in model.graph.inputs:
        if value.name in names and isinstance(value.type, TensorType):
            shape = value.type.shape
            lead = shape[0] if shape and isinstance(shape[0], int) else None
            found[value.name] = (ir.dtypes.to_numpy(value.type.elem_type), lead)
    return found


def _cast(name: str, array: np.ndarray, dtype: np.dtype, source: str) -> np.ndarray:
    if dtype.name not in TENSOR_TYPES:
        raise SetupError(f"the training model's input '{name}' is {dtype.name}, which onnxruntime-web's Tensor "
                         f"cannot carry; browser-check feeds {sorted(TENSOR_TYPES)}")
    if array.dtype != dtype and not np.can_cast(array.dtype, dtype, "same_kind"):
        raise SetupError(f"{source}: array '{name}' is {array.dtype.name}, the training model's input '{name}' is "
                         f"{dtype.name}; save it as {dtype.name}")
    return np.ascontiguousarray(array, dtype=dtype.newbyteorder("<"))


def _read(data, names: list) -> tuple:
    """(name -> array, what to call the data in messages) from a .npz path or a mapping of arrays."""
    if isinstance(data, Mapping):
        missing = [n for n in names if n not in data]
        if missing:
            raise SetupError(f"the data needs arrays named {list(names)} (the training model's inputs); missing "
                             f"{missing} (it has {sorted(data)})")
        return {n: np.asarray(data[n]) for n in names}, "the data"
    source = Path(data)
    try:
        return load_npz(source.read_bytes(), names), str(source)
    except OSError as e:
        raise SetupError(f"cannot read the data file {source}: {e.strerror or e}") from None
    except NpzError as e:
        raise SetupError(f"{source}: {e}") from None


def load_data(data, model: ir.Model, names: list, steps: int, batch_size=None) -> Data:
    """The arrays ``names`` of ``data`` (a .npz file's path, or a mapping of name -> array), cast to the model's
    input types, and ``steps`` batches of ``batch_size`` rows (default: the model's fixed batch dimension, else 32
    or all rows if fewer), cycling over the full batches in order."""
    if not names:
        raise SetupError("the training model has no inputs besides its parameters: browser-check has nothing to feed")
    raw, source = _read(data, names)
    types = input_types(model, names)
    missing = [n for n in names if n not in types]
    if missing:
        raise SetupError(f"the training model's inputs {missing} are not tensors; browser-check feeds tensors")
    arrays = [_cast(n, raw[n], types[n][0], source) for n in names]
    try:
        count = rows(names, arrays, what=f"data in {source}")
        leads = {types[n][1] for n in names} - {None}
        if batch_size is None:
            size = leads.pop() if len(leads) == 1 else min(DEFAULT_BATCH, count)
        else:
            size = checked_batch_size(batch_size)
    except DataError as e:
        raise SetupError(str(e)) from None
    if size > count:
        raise SetupError(f"the batch size {size} is more than the {count} rows of {source}")
    full = count // size
    batches = [((k % full) * size, (k % full + 1) * size) for k in range(steps)]
    return Data(list(names), arrays, batches)
