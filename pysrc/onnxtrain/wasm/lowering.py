"""The context a C kernel's lowering records its work on, and the record: one call of the program executor
(web/kernels/executor.c), whose words are [op id, n, input buffers.., output buffers.., params..]."""
from __future__ import annotations

import struct
from dataclasses import dataclass, field

import numpy as np

from ..runtime.program import Lowering, NotLowered, broadcast_strides, strides  # noqa: F401  (the lowerings' helpers)

INT32 = (-2 ** 31, 2 ** 31)


@dataclass(eq=False)
class Call:
    op: str               # the executor's op name (executor_op_name)
    inputs: list          # Storages read (None: an absent optional input)
    outputs: list         # Storages written
    params: list          # int32 words
    node: object = None   # the graph node it runs (error messages)
    updates: list = field(default_factory=list)   # inputs it also writes, in place
    tensors: list = field(default_factory=list)   # its output Tensors (to name them when memory runs out)
    kernel_call = True

    def storages(self) -> list:
        return [s for s in self.inputs + self.outputs if s is not None]

    def written(self) -> list:
        return [s for s in self.outputs + self.updates if s is not None]

    def words(self, op_ids: dict) -> list:
        indices = [-1 if s is None else s.index for s in self.inputs + self.outputs]
        return [op_ids[self.op], len(indices) + len(self.params), *indices, *self.params]


def word(p) -> int:
    """A parameter as an int32 word: a float (Python or numpy) as its float32 bits, an int or bool as itself."""
    if isinstance(p, (float, np.floating)):
        return struct.unpack("<i", struct.pack("<f", float(p)))[0]
    p = int(p)
    if not INT32[0] <= p < INT32[1]:
        raise NotLowered(f"a parameter ({p}) does not fit in 32 bits")
    return p


class WasmLowering(Lowering):
    """A lowering's context on the wasm provider: ``call`` records one executor call."""

    def call(self, name: str, inputs, outputs, params=(), updates=()) -> None:
        """Call the executor's op ``name`` on ``inputs`` (Tensors, None for an absent one; a known value is
        written into a buffer of its own once), writing ``outputs`` (Tensors made by ``output``), with
        ``params`` (ints and floats); ``updates`` are inputs the op writes in place."""
        words = [word(p) for p in params]
        ins = [None if t is None else self.storage(t) for t in inputs]
        outs = []
        for t in outputs:
            if t is None:
                outs.append(None)
                continue
            if t.storage is None:
                raise ValueError("an executor call writes only into buffers (WasmLowering.output)")
            t.storage.written = True
            outs.append(t.storage)
        ups = [self.storage(t) for t in updates]
        for s in ups:
            s.written = True
        self.records.append(Call(name, ins, outs, words, self.node, ups, [t for t in outputs if t is not None]))

    def live(self, t, what: str) -> None:
        """``t`` must be a buffer an in-place op can write (a fed array, a temporary), not a known value."""
        if t is None or t.storage is None or t.storage.kind == "const":
            raise NotLowered(f"{what} is a value known before the run, which the executor does not update in place")


def f32_only(op: str, *tensors) -> None:
    for t in tensors:
        if t is not None and t.dtype != np.float32:
            raise NotLowered(f"{op}: {t.describe()} (the C kernel takes float32)")

