"""How WebGPU holds each element type: WGSL has 32-bit scalars only."""
from __future__ import annotations

import numpy as np

from .errors import WebGPUError

F32, I32, U32 = "f32", "i32", "u32"

#: How each ONNX element type is held in a GPU buffer: int64 is held as i32 (values are checked to fit when
#: uploaded), the narrower integers widened to i32, bool as u32 (0 or 1).
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


def gtype(t) -> str:
    """The WGSL type of a compile-time Tensor's elements."""
    return gpu_type(t.dtype)


def gpu_nbytes(shape, dtype) -> int:
    """The bytes of a GPU buffer holding a tensor of ``shape`` and ``dtype`` (4 per element, at least 4)."""
    gpu_type(dtype)
    return max(4, 4 * int(np.prod(shape, dtype=np.int64)))


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
