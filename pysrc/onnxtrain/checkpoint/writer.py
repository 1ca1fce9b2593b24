"""Write ORT's on-device training checkpoint with the flatbuffers builder."""
from __future__ import annotations

import os

import flatbuffers
import numpy as np

from .._files import atomic_write
from . import schema as S
from .data import CheckpointData, CheckpointError


class _External:
    """Collects tensor bytes bound for ``<checkpoint>.data``, packed back to back."""

    def __init__(self, min_bytes: int):
        self.parts, self.size, self.min_bytes = [], 0, min_bytes

    def place(self, raw: bytes):
        if len(raw) < self.min_bytes:
            return None
        offset = self.size
        self.parts.append(raw)
        self.size += len(raw)
        return offset


def _tensor(b: flatbuffers.Builder, name: str, array: np.ndarray, nominal: bool, external) -> int:
    code = S.DATA_TYPES.get(array.dtype.newbyteorder("<") if array.dtype.byteorder == ">" else array.dtype)
    if code is None:
        raise CheckpointError(f"tensor '{name}' has dtype {array.dtype}, which a checkpoint cannot store")
    raw = b"" if nominal else np.ascontiguousarray(array, dtype=S.NUMPY_DTYPES[code]).tobytes()
    offset = external.place(raw) if external is not None and not nominal else None
    name_off = b.CreateString(name)
    dims = [] if nominal else list(array.shape)
    if dims:
        dims_off = b.CreateNumpyVector(np.asarray(dims, dtype="<i8"))
    else:  # as ORT writes it: an empty vector needs no 8-byte alignment
        b.StartVector(8, 0, 4)
        dims_off = b.EndVector()
    raw_off = None if offset is not None else b.CreateNumpyVector(np.frombuffer(raw, np.uint8))
    b.StartObject(7)
    b.PrependUOffsetTRelativeSlot(S.TENSOR_NAME, name_off, 0)
    b.PrependUOffsetTRelativeSlot(S.TENSOR_DIMS, dims_off, 0)
    b.PrependInt32Slot(S.TENSOR_DATA_TYPE, code, 0)
    if raw_off is not None:
        b.PrependUOffsetTRelativeSlot(S.TENSOR_RAW_DATA, raw_off, 0)
    if offset is not None:
        b.PrependInt64Slot(S.TENSOR_EXTERNAL_OFFSET, offset, -1)
    return b.EndObject()


def _vector(b: flatbuffers.Builder, offsets: list) -> int:
    b.StartVector(4, len(offsets), 4)
    for off in reversed(offsets):
        b.PrependUOffsetTRelative(off)
    return b.EndVector()


def _tables(b, tensors: dict, nominal, external, sort: bool) -> list:
    items = sorted(tensors.items()) if sort else list(tensors.items())
    return [_tensor(b, n, a, nominal, external) for n, a in items]


def _tensors(b, tensors: dict, nominal, external, sort: bool) -> int:
    return _vector(b, _tables(b, tensors, nominal, external, sort))


def _optimizer_group(b, group, external) -> int:
    states = []
    for pname, moments in sorted(group.states.items()):
        name_off = b.CreateString(pname)
        moms = _tensors(b, moments, False, external, sort=True)
        b.StartObject(2)
        b.PrependUOffsetTRelativeSlot(S.PARAM_STATE_NAME, name_off, 0)
        b.PrependUOffsetTRelativeSlot(S.PARAM_STATE_MOMENTUMS, moms, 0)
        states.append(b.EndObject())
    states_off = _vector(b, states)
    name_off = b.CreateString(group.name)
    b.StartObject(4)
    b.PrependUOffsetTRelativeSlot(S.GROUP_NAME, name_off, 0)
    b.PrependInt64Slot(S.GROUP_STEP, int(group.step), 0)
    b.PrependFloat32Slot(S.GROUP_INITIAL_LR, float(group.initial_learning_rate), 0.0)
    b.PrependUOffsetTRelativeSlot(S.GROUP_STATES, states_off, 0)
    return b.EndObject()


def _property_bag(b, properties: dict) -> int:
    kinds = {int: [], float: [], str: []}
    for name, value in sorted(properties.items()):
        kind = str if isinstance(value, str) else float if isinstance(value, float) else int
        if isinstance(value, bool) or not isinstance(value, (int, float, str)):
            raise CheckpointError(f"property '{name}' must be an int, float or str, not {type(value).__name__}")
        kinds[kind].append((name, value))
    vectors = []
    for kind in (int, float, str):
        tables = []
        for name, value in kinds[kind]:
            name_off = b.CreateString(name)
            value_off = b.CreateString(value) if kind is str else None
            b.StartObject(2)
            b.PrependUOffsetTRelativeSlot(S.PROPERTY_NAME, name_off, 0)
            if kind is int:
                b.PrependInt64Slot(S.PROPERTY_VALUE, value, 0)
            elif kind is float:
                b.PrependFloat32Slot(S.PROPERTY_VALUE, value, 0.0)
            else:
                b.PrependUOffsetTRelativeSlot(S.PROPERTY_VALUE, value_off, 0)
            tables.append(b.EndObject())
        vectors.append(_vector(b, tables))
    b.StartObject(3)
    for slot, off in zip((S.BAG_INTS, S.BAG_FLOATS, S.BAG_STRINGS), vectors):
        b.PrependUOffsetTRelativeSlot(slot, off, 0)
    return b.EndObject()


def encode_checkpoint(data: CheckpointData, layout: str = "runtime", external_data=None):
    """(checkpoint bytes, external data bytes or None).

    layout "runtime" is what CheckpointState.save_checkpoint writes (tensors sorted by name, optimizer
    groups and a property bag always present); "artifact" is what generate_artifacts writes (file
    order, neither optimizer groups nor properties)."""
    if layout not in ("runtime", "artifact"):
        raise ValueError(f"layout must be 'runtime' or 'artifact', not {layout!r}")
    runtime = layout == "runtime"
    if external_data is None:
        total = sum(a.nbytes for a in list(data.trainable.values()) + list(data.frozen.values()))
        total += sum(m.nbytes for g in data.optimizer_groups for ms in g.states.values() for m in ms.values())
        external_data = total > S.EXTERNAL_DATA_THRESHOLD and not data.is_nominal
    external = _External(0 if runtime else S.EXTERNAL_MIN_TENSOR_BYTES) if external_data else None
    b = flatbuffers.Builder(1024)
    # ORT's order: all tensor tables, then the two vectors
    trainable = _tables(b, data.trainable, data.is_nominal, external, sort=runtime)
    frozen = _tables(b, data.frozen, data.is_nominal, external, sort=runtime)
    trainable, frozen = _vector(b, trainable), _vector(b, frozen)
    b.StartObject(4)
    b.PrependUOffsetTRelativeSlot(S.MODULE_REQUIRES_GRAD, trainable, 0)
    b.PrependUOffsetTRelativeSlot(S.MODULE_FROZEN, frozen, 0)
    b.PrependBoolSlot(S.MODULE_IS_NOMINAL, bool(data.is_nominal), False)
    b.PrependBoolSlot(S.MODULE_HAS_EXTERNAL_DATA, external is not None, False)
    module = b.EndObject()
    groups = bag = None
    if runtime:
        groups = _vector(b, [_optimizer_group(b, g, external) for g in data.optimizer_groups])
        bag = _property_bag(b, data.properties)
    b.StartObject(4)
    b.PrependInt32Slot(S.CHECKPOINT_VERSION, S.CHECKPOINT_VERSION_SUPPORTED, 0)
    b.PrependUOffsetTRelativeSlot(S.CHECKPOINT_MODULE_STATE, module, 0)
    if groups is not None:
        b.PrependUOffsetTRelativeSlot(S.CHECKPOINT_OPTIMIZER_GROUPS, groups, 0)
        b.PrependUOffsetTRelativeSlot(S.CHECKPOINT_PROPERTY_BAG, bag, 0)
    b.Finish(b.EndObject(), file_identifier=S.FILE_IDENTIFIER)
    return bytes(b.Output()), (b"".join(external.parts) if external is not None else None)


def write_checkpoint(data: CheckpointData, path=None, *, layout: str = "runtime", external_data=None):
    """Write ``data`` to ``path`` atomically (and ``<path>.data`` for external data), or return the bytes
    when ``path`` is None."""
    body, ext = encode_checkpoint(data, layout, external_data)
    if path is None:
        if ext is not None:
            raise CheckpointError("a checkpoint with external data must be written to a path")
        return body
    path = os.fspath(path)
    if ext is not None:
        atomic_write(path + S.EXTERNAL_DATA_SUFFIX, ext)
    atomic_write(path, body)
    return None
