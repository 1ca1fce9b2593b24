"""Read ORT's on-device training checkpoint (ort_training_checkpoint.fbs), checking every offset.

The work and memory of a read are linear in the file's size: every table is read at most once (a
table reached through two offsets is an error), and the strings and tensor bytes it materialises may
not add up to more than the file (and its external data file) holds.  ORT's writer never shares a
table or a string, so a real checkpoint always passes both checks.
"""
from __future__ import annotations

import math
import os
import struct

import numpy as np

from . import schema as S
from .data import CheckpointData, CheckpointError, OptimizerGroup


class _Buffer:
    """Bounds-checked access to flatbuffer tables, vectors and strings."""

    def __init__(self, data: bytes, source: str):
        self.data = data
        self.size = len(data)
        self.source = source
        self.tables_seen = set()
        self.spent = 0  # bytes of strings and inline tensor data materialised so far

    def charge(self, nbytes: int, what: str):
        self.spent += nbytes
        if self.spent > self.size:
            self.fail(f"{what}: the strings and tensors read so far take {self.spent} bytes, more than the "
                      f"{self.size}-byte file holds (shared data)")

    def fail(self, what: str):
        raise CheckpointError(f"{self.source}: {what} (truncated or corrupt checkpoint)")

    def _unpack(self, fmt: str, pos: int):
        size = struct.calcsize(fmt)
        if pos < 0 or pos + size > self.size:
            self.fail(f"read of {size} bytes at offset {pos} is past the end of the {self.size}-byte file")
        return struct.unpack_from(fmt, self.data, pos)[0]

    def table(self, pos: int, name: str) -> "_Table":
        if pos in self.tables_seen:
            self.fail(f"{name} table at offset {pos} is referenced more than once")
        self.tables_seen.add(pos)
        vtable = pos - self._unpack("<i", pos)
        vt_size = self._unpack("<H", vtable)
        if vt_size < 4 or vt_size % 2 or vtable + vt_size > self.size:
            self.fail(f"{name} table at offset {pos} has a bad vtable")
        tbl_size = self._unpack("<H", vtable + 2)
        if pos + tbl_size > self.size:
            self.fail(f"{name} table at offset {pos} runs past the end of the file")
        return _Table(self, pos, vtable, vt_size, name)


class _Table:
    def __init__(self, buf: _Buffer, pos: int, vtable: int, vt_size: int, name: str):
        self.buf, self.pos, self.vtable, self.vt_size, self.name = buf, pos, vtable, vt_size, name

    def _field(self, slot: int):
        entry = 4 + 2 * slot
        if entry >= self.vt_size:
            return None
        off = self.buf._unpack("<H", self.vtable + entry)
        return self.pos + off if off else None

    def scalar(self, slot: int, fmt: str, default):
        p = self._field(slot)
        return default if p is None else self.buf._unpack(fmt, p)

    def _target(self, slot: int):
        p = self._field(slot)
        if p is None:
            return None
        return p + self.buf._unpack("<I", p)

    def string(self, slot: int, field: str):
        t = self._target(slot)
        if t is None:
            return None
        n = self.buf._unpack("<I", t)
        if t + 4 + n > self.buf.size:
            self.buf.fail(f"{self.name}.{field}: string of {n} bytes runs past the end of the file")
        self.buf.charge(n, f"{self.name}.{field}")
        try:
            return self.buf.data[t + 4:t + 4 + n].decode("utf-8")
        except UnicodeDecodeError:
            self.buf.fail(f"{self.name}.{field}: not valid UTF-8")

    def vector(self, slot: int, elem_size: int, field: str):
        """(start, count) of a vector field, or None when absent."""
        t = self._target(slot)
        if t is None:
            return None
        n = self.buf._unpack("<I", t)
        if t + 4 + n * elem_size > self.buf.size:
            self.buf.fail(f"{self.name}.{field}: vector of {n} elements runs past the end of the file")
        return t + 4, n

    def tables(self, slot: int, name: str, field: str) -> list:
        v = self.vector(slot, 4, field)
        if v is None:
            return None
        start, n = v
        return [self.buf.table(start + 4 * i + self.buf._unpack("<I", start + 4 * i), name) for i in range(n)]


def _dims_text(dims: list) -> str:
    return str(dims) if len(dims) <= 8 else f"[{', '.join(map(str, dims[:8]))}, ... ({len(dims)} dims)]"


def _tensor(t: _Table, external, source: str):
    name = t.string(S.TENSOR_NAME, "name") or ""
    dims_v = t.vector(S.TENSOR_DIMS, 8, "dims")
    dims = [] if dims_v is None else np.frombuffer(t.buf.data, "<i8", dims_v[1], dims_v[0]).tolist()
    code = t.scalar(S.TENSOR_DATA_TYPE, "<i", 0)
    dtype = S.NUMPY_DTYPES.get(code)
    if dtype is None:
        raise CheckpointError(f"{source}: tensor '{name}' has data type {code}, which onnxtrain cannot hold")
    if any(d < 0 for d in dims):
        raise CheckpointError(f"{source}: tensor '{name}' has negative dims {_dims_text(dims)}")
    if len(dims) > 32:
        raise CheckpointError(f"{source}: tensor '{name}' has {len(dims)} dims; at most 32 are supported")
    count = math.prod(dims)  # exact: dims like [2**32, 2**32] must not wrap around to 0
    nbytes = count * dtype.itemsize
    dims_text = _dims_text(dims)
    raw = t.vector(S.TENSOR_RAW_DATA, 1, "raw_data")
    offset = t.scalar(S.TENSOR_EXTERNAL_OFFSET, "<q", -1)
    if raw is not None and offset < 0:
        start, n = raw
        if n == 0 and not dims:
            return name, np.zeros(0, dtype)  # nominal: name and type only
        if n != nbytes:
            need = nbytes if nbytes.bit_length() <= 128 else f"2**{nbytes.bit_length() - 1} or more"
            raise CheckpointError(f"{source}: tensor '{name}' has {n} bytes of raw_data, but dims {dims_text} of "
                                  f"{dtype} need {need}")
        t.buf.charge(n, f"tensor '{name}'")
        data = np.frombuffer(t.buf.data, dtype, count, start).copy()
    elif offset >= 0:
        data = external(name, offset, nbytes, dtype, count)
    else:
        raise CheckpointError(f"{source}: tensor '{name}' has neither raw data nor an external data offset")
    return name, data.reshape(dims)


def read_checkpoint(source) -> CheckpointData:
    """Read a checkpoint from a path or from its bytes."""
    if isinstance(source, (bytes, bytearray, memoryview)):
        data, path, label = bytes(source), None, "checkpoint bytes"
    else:
        path = os.fspath(source)
        label = path
        try:
            with open(path, "rb") as f:
                data = f.read()
        except OSError as e:
            raise CheckpointError(f"cannot read checkpoint {path}: {e.strerror or e}") from None
    return _parse(data, path, label)


def _describe_foreign(data: bytes) -> str:
    if data[:4] == b"PK\x03\x04":
        return " (it looks like a zip file)"
    if data[:1] == b"\x08":
        return " (it looks like an ONNX model, not a checkpoint)"
    return ""


def _parse(data: bytes, path, label: str) -> CheckpointData:
    if len(data) < 8:
        raise CheckpointError(f"{label}: {len(data)} bytes is too short to be an ONNX Runtime training checkpoint")
    if data[4:8] != S.FILE_IDENTIFIER:
        raise CheckpointError(f"{label}: not an ONNX Runtime training checkpoint: file identifier "
                              f"{data[4:8]!r}, expected {S.FILE_IDENTIFIER!r}{_describe_foreign(data)}")
    buf = _Buffer(data, label)
    root = buf.table(buf._unpack("<I", 0), "Checkpoint")
    version = root.scalar(S.CHECKPOINT_VERSION, "<i", 0)
    if version != S.CHECKPOINT_VERSION_SUPPORTED:
        raise CheckpointError(f"{label}: checkpoint format version {version} is not supported (onnxtrain, like "
                              f"onnxruntime-training 1.19.2, reads version {S.CHECKPOINT_VERSION_SUPPORTED})")
    out = CheckpointData()
    ext_file = None
    ext_spent = [0]

    def external(name, offset, nbytes, dtype, count):
        nonlocal ext_file
        if path is None:
            raise CheckpointError(f"{label}: tensor '{name}' is stored in external data; External data with "
                                  f"loading from buffer is not supported: load the checkpoint from its path")
        if ext_file is None:
            ext_path = path + S.EXTERNAL_DATA_SUFFIX
            try:
                with open(ext_path, "rb") as f:
                    ext_file = f.read()
            except OSError as e:
                raise CheckpointError(f"{label}: cannot read its external data file {ext_path}: "
                                      f"{e.strerror or e}") from None
        if offset + nbytes > len(ext_file):
            end = offset + nbytes if nbytes < 1 << 63 else "beyond 2**63"
            raise CheckpointError(f"{label}: tensor '{name}' needs bytes {offset}..{end} of "
                                  f"{path + S.EXTERNAL_DATA_SUFFIX}, which has {len(ext_file)}")
        ext_spent[0] += nbytes
        if ext_spent[0] > len(ext_file):
            raise CheckpointError(f"{label}: its tensors take more bytes than its external data file "
                                  f"{path + S.EXTERNAL_DATA_SUFFIX} holds ({len(ext_file)}): shared data")
        return np.frombuffer(ext_file, dtype, count, offset).copy()

    module = root._target(S.CHECKPOINT_MODULE_STATE)
    if module is not None:
        ms = buf.table(module, "ModuleState")
        out.is_nominal = bool(ms.scalar(S.MODULE_IS_NOMINAL, "<B", 0))
        out.has_external_data = bool(ms.scalar(S.MODULE_HAS_EXTERNAL_DATA, "<B", 0))
        for slot, target, field in ((S.MODULE_REQUIRES_GRAD, out.trainable, "requires_grad_params"),
                                    (S.MODULE_FROZEN, out.frozen, "frozen_params")):
            tensors = ms.tables(slot, "Tensor", field)
            if tensors is None:
                raise CheckpointError(f"{label}: ModuleState.{field} is missing")
            for t in tensors:
                name, array = _tensor(t, external, label)
                if name in out.trainable or name in out.frozen:
                    raise CheckpointError(f"{label}: parameter '{name}' appears twice")
                target[name] = array
    for g in root.tables(S.CHECKPOINT_OPTIMIZER_GROUPS, "OptimizerGroup", "optimizer_groups") or []:
        group = OptimizerGroup(name=g.string(S.GROUP_NAME, "group_name") or "",
                               step=g.scalar(S.GROUP_STEP, "<q", 0),
                               initial_learning_rate=float(g.scalar(S.GROUP_INITIAL_LR, "<f", 0.0)))
        for ps in g.tables(S.GROUP_STATES, "ParameterOptimizerState", "optimizer_states") or []:
            pname = ps.string(S.PARAM_STATE_NAME, "param_name") or ""
            group.states[pname] = dict(_tensor(t, external, label)
                                       for t in ps.tables(S.PARAM_STATE_MOMENTUMS, "Tensor", "momentums") or [])
        out.optimizer_groups.append(group)
    bag = root._target(S.CHECKPOINT_PROPERTY_BAG)
    if bag is not None:
        pb = buf.table(bag, "PropertyBag")
        for slot, kind, fmt in ((S.BAG_INTS, "IntProperty", "<q"), (S.BAG_FLOATS, "FloatProperty", "<f"),
                                (S.BAG_STRINGS, "StringProperty", None)):
            for p in pb.tables(slot, kind, kind) or []:
                pname = p.string(S.PROPERTY_NAME, "name")
                if pname is None:
                    raise CheckpointError(f"{label}: a {kind} has no name")
                if fmt is None:
                    value = p.string(S.PROPERTY_VALUE, "value")
                    if value is None:
                        raise CheckpointError(f"{label}: string property '{pname}' has no value")
                else:
                    value = p.scalar(S.PROPERTY_VALUE, fmt, 0)
                    value = float(value) if fmt == "<f" else int(value)
                out.properties[pname] = value
    return out
