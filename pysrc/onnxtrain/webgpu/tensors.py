"""What the compiler knows of a value: its shape and element type, where it lives on the GPU (a Storage), and its
value when that is known before the step runs (shapes, constants, what only they feed)."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .errors import WebGPUError

F32, I32, U32 = "f32", "i32", "u32"

#: How each ONNX element type is held in a GPU buffer: WGSL has 32-bit scalars only.  int64 is held as i32
#: (values are checked to fit when uploaded), the narrower integers widened to i32, bool as u32 (0 or 1).
GPU_TYPES = {np.dtype(np.float32): F32, np.dtype(np.int64): I32, np.dtype(np.int32): I32,
             np.dtype(np.int16): I32, np.dtype(np.uint16): I32, np.dtype(np.int8): I32, np.dtype(np.uint8): I32,
             np.dtype(np.bool_): U32}


def gpu_type(dtype) -> str:
    dtype = np.dtype(dtype)
    kind = GPU_TYPES.get(dtype)
    if kind is None:
        raise WebGPUError(f"WebGPU holds float32, integer tensors of up to 64 bits (as int32) and bool, not "
                          f"{dtype.name}")
    return kind


@dataclass(eq=False)
class Storage:
    """A GPU buffer as the compiler sees it.  ``kind`` is "temp" (pooled by liveness), "feed" (written from a
    fed array each run), "resident" (a buffer that outlives the run: parameters, gradients, moments) or
    "const" (a value known when compiling, uploaded once)."""
    nbytes: int
    kind: str = "temp"
    value: np.ndarray | None = None      # a const's contents, already in its GPU type
    resident: object = None              # a resident's handle
    written: bool = False                # a dispatch writes into it
    index: int = -1                      # its buffer in the program, set by the allocator


@dataclass(eq=False)
class Tensor:
    """A value of the graph at compile time.  ``storage`` is None while it lives only on the host; ``value``
    is its contents when known before the run."""
    shape: tuple
    dtype: np.dtype
    storage: Storage | None = None
    value: np.ndarray | None = None
    name: str = field(default="", compare=False)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    @property
    def gtype(self) -> str:
        return gpu_type(self.dtype)

    @property
    def rank(self) -> int:
        return len(self.shape)

    def describe(self) -> str:
        return f"{self.dtype.name}{list(self.shape)}"


def to_gpu_array(array: np.ndarray, what: str) -> np.ndarray:
    """``array`` in its GPU type (a contiguous 32-bit array); int64 values must fit in int32."""
    kind = gpu_type(array.dtype)
    if kind == F32:
        return np.ascontiguousarray(array)
    if kind == U32:
        return np.ascontiguousarray(array, dtype=np.uint32)
    if array.dtype == np.int64 and array.size:
        lo, hi = int(array.min()), int(array.max())
        if lo < -2 ** 31 or hi >= 2 ** 31:
            raise WebGPUError(f"{what}: WebGPU holds int64 values as int32, and {lo if lo < -2 ** 31 else hi} "
                              f"does not fit")
    return np.ascontiguousarray(array, dtype=np.int32)


def from_gpu_bytes(data, dtype, shape) -> np.ndarray:
    """A host array of ``dtype`` and ``shape`` from a buffer's bytes (in its GPU type)."""
    dtype = np.dtype(dtype)
    kind = gpu_type(dtype)
    raw = np.frombuffer(data, {F32: np.float32, I32: np.int32, U32: np.uint32}[kind],
                        count=int(np.prod(shape, dtype=np.int64)))
    return raw.astype(dtype).reshape(shape) if kind != F32 else raw.reshape(shape).copy()
