"""The context a WGSL kernel's lowering records its work on (see registry.py for the lowering contract)."""
from __future__ import annotations

import struct
from dataclasses import dataclass

import numpy as np

from .errors import NotLowered
from .shaders import MAX_PARAMS, WORKGROUP, shader
from .tensors import Storage, Tensor, gpu_type

MAX_GROUPS = 65535   # workgroups per grid dimension (WebGPU's default limit)


@dataclass(eq=False)
class Dispatch:
    source: str          # the WGSL
    inputs: list         # Storages bound read-only, from binding 1
    outputs: list        # Storages bound read-write, after the inputs
    params: bytes        # the parameter block (binding 0)
    groups: tuple        # workgroups in x, y, z
    sizes: list          # bytes bound per input and output


@dataclass(eq=False)
class Copy:
    src: Storage
    dst: Storage
    nbytes: int


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


class Lowering:
    """What a lowering calls: make outputs and views, read values known before the run, record dispatches.
    Records go to ``records``; the compiler keeps them only when the lowering returns."""

    def __init__(self, node, used: tuple, materialize, opset: int | None = None, output_shapes=None):
        self.node = node
        self.opset = opset                # the model's opset of the node's domain (None when unknown)
        self.output_shapes = output_shapes  # per output, the static shape in the graph's value_info, or None
        self._used = used
        self._materialize = materialize   # Tensor -> its Storage (uploads a known value once)
        self.records: list = []

    # -- values -------------------------------------------------------------------------------------

    def used(self, i: int) -> bool:
        """Whether the node's i-th output is read by anything (an omitted output is not)."""
        return i < len(self._used) and self._used[i]

    def output(self, shape, dtype=np.float32) -> Tensor:
        shape = tuple(int(d) for d in shape)
        dtype = np.dtype(dtype)
        gpu_type(dtype)
        return Tensor(shape, dtype, Storage(max(4, 4 * int(np.prod(shape, dtype=np.int64)))))

    def view(self, t: Tensor, shape) -> Tensor:
        """``t`` with another shape of the same size, sharing its buffer (Reshape, Flatten, Squeeze ...)."""
        shape = tuple(int(d) for d in shape)
        if int(np.prod(shape, dtype=np.int64)) != t.size:
            raise ValueError(f"cannot view {t.describe()} as {list(shape)}")
        value = None if t.value is None else t.value.reshape(shape)
        return Tensor(shape, t.dtype, t.storage, value)

    @staticmethod
    def known(array) -> Tensor:
        """A value known before the run (no GPU work until a kernel reads it)."""
        array = np.asarray(array)
        return Tensor(tuple(array.shape), array.dtype, None, array)

    def value(self, t: Tensor | None, what: str):
        """The value of ``t`` known before the run (shapes, axes, constants), or NotLowered when the GPU computes
        it; None for an omitted input."""
        if t is None:
            return None
        if t.value is None:
            raise NotLowered(f"{what} is computed during the step, and the WGSL kernel needs it before")
        return t.value

    # -- work ---------------------------------------------------------------------------------------

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

    def copy(self, src: Tensor, dst: Tensor) -> None:
        """Copy ``src``'s elements into ``dst`` (same size)."""
        if src.size != dst.size:
            raise ValueError(f"cannot copy {src.describe()} into {dst.describe()}")
        dst.storage.written = True
        if src.size:
            self.records.append(Copy(self._materialize(src), dst.storage, 4 * src.size))
