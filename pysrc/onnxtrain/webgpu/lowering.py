"""The context a WGSL kernel's lowering records its work on (runtime/program.py has the lowering contract), and
the records: dispatches of a shader and buffer copies."""
from __future__ import annotations

import struct
from dataclasses import dataclass

import numpy as np

from ..runtime.program import Lowering
from .shaders import MAX_PARAMS, WORKGROUP, shader

MAX_GROUPS = 65535   # workgroups per grid dimension (WebGPU's default limit)
PARAMS_ALIGN = 4 * MAX_PARAMS   # a parameter block's bytes: WebGPU's largest minUniformBufferOffsetAlignment


@dataclass(eq=False)
class Dispatch:
    source: str          # the WGSL
    inputs: list         # Storages bound read-only, from binding 1
    outputs: list        # Storages bound read-write, after the inputs
    params: bytes        # the parameter block (binding 0)
    groups: tuple        # workgroups in x, y, z
    sizes: list          # bytes bound per input and output
    kernel_call = True

    def storages(self) -> list:
        return self.inputs + self.outputs

    def written(self) -> list:
        return self.outputs


@dataclass(eq=False)
class Copy:
    src: object          # Storage
    dst: object
    nbytes: int
    kernel_call = False

    def storages(self) -> list:
        return [self.src, self.dst]

    def written(self) -> list:
        return [self.dst]


def pack_params(params) -> bytes:
    """Numbers as 32-bit words: float (and numpy floats) as f32, int and bool as u32 (negative ints as i32)."""
    if len(params) > MAX_PARAMS:
        raise ValueError(f"a dispatch takes at most {MAX_PARAMS} parameters, got {len(params)}")
    words = bytearray()
    for p in params:
        if isinstance(p, (float, np.floating)):
            words += struct.pack("<f", float(p))
        elif isinstance(p, (bool, np.bool_)):
            words += struct.pack("<I", int(p))
        else:
            p = int(p)
            words += struct.pack("<i" if p < 0 else "<I", p)
    return bytes(words)


def param_blocks(program) -> tuple:
    """A program's dispatches' parameter blocks as one buffer's bytes, each at an offset aligned for a uniform
    binding, and those offsets (in dispatch order)."""
    data, offsets = bytearray(), []
    for step in program.steps:
        if isinstance(step, Dispatch):
            offsets.append(len(data))
            data += step.params + bytes(PARAMS_ALIGN - len(step.params))
    return bytes(data) or bytes(PARAMS_ALIGN), offsets


class GPULowering(Lowering):
    """The WGSL lowerings' context: dispatches of shaders over grids of workgroups, and copies."""

    @staticmethod
    def grid(n: int) -> tuple:
        """Workgroups of 256 for ``n`` invocations, spread over x and y (``flat(g, n)`` in WGSL undoes it)."""
        groups = max(1, -(-int(n) // WORKGROUP))
        if groups <= MAX_GROUPS:
            return (groups, 1, 1)
        rows = -(-groups // MAX_GROUPS)
        return (-(-groups // rows), rows, 1)

    def dispatch(self, name: str, inputs, outputs, params=(), grid=(1, 1, 1), **subs) -> None:
        """Run ``shaders/<name>.wgsl`` (with ``subs`` filled in) over ``grid`` workgroups: ``inputs`` bound
        read-only from binding 1, then ``outputs`` read-write, ``params`` in the parameter block."""
        if isinstance(grid, int):
            grid = self.grid(grid)
        ins = [self._materialize(t) for t in inputs]
        outs = []
        for t in outputs:
            if t.storage is None:
                raise ValueError("a dispatch writes only into GPU tensors (Lowering.output)")
            t.storage.written = True
            outs.append(t.storage)
        sizes = [max(4, 4 * t.size) for t in list(inputs) + list(outputs)]
        self.records.append(Dispatch(shader(name, **subs), ins, outs, pack_params(params), tuple(grid), sizes))

    def copy(self, src, dst) -> None:
        """Copy ``src``'s elements into ``dst`` (same size)."""
        if src.size != dst.size:
            raise ValueError(f"cannot copy {src.describe()} into {dst.describe()}")
        dst.storage.written = True
        if src.size:
            self.records.append(Copy(self._materialize(src), dst.storage, 4 * src.size))
