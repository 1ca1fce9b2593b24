"""ONNX TensorProto.DataType codes and numpy dtypes.

Types numpy lacks are held as their raw bit patterns: bfloat16 as uint16, the
float8 kinds as uint8, and the 4-bit kinds as one uint8 per element holding
the element's 4 bits (0..15; int4 is not sign-extended).  On the wire the
4-bit kinds are packed two per byte, which ``pack_4bit``/``unpack_4bit`` do.
"""
from __future__ import annotations

import numpy as np

from .errors import DataTypeError

FLOAT, UINT8, INT8, UINT16, INT16, INT32, INT64, STRING, BOOL = 1, 2, 3, 4, 5, 6, 7, 8, 9
FLOAT16, DOUBLE, UINT32, UINT64, COMPLEX64, COMPLEX128, BFLOAT16 = 10, 11, 12, 13, 14, 15, 16
FLOAT8E4M3FN, FLOAT8E4M3FNUZ, FLOAT8E5M2, FLOAT8E5M2FNUZ = 17, 18, 19, 20
UINT4, INT4, FLOAT4E2M1 = 21, 22, 23

_TO_NUMPY = {
    FLOAT: "<f4", UINT8: "u1", INT8: "i1", UINT16: "<u2", INT16: "<i2", INT32: "<i4", INT64: "<i8",
    STRING: "O", BOOL: "?", FLOAT16: "<f2", DOUBLE: "<f8", UINT32: "<u4", UINT64: "<u8",
    COMPLEX64: "<c8", COMPLEX128: "<c16", BFLOAT16: "<u2",
    FLOAT8E4M3FN: "u1", FLOAT8E4M3FNUZ: "u1", FLOAT8E5M2: "u1", FLOAT8E5M2FNUZ: "u1",
    UINT4: "u1", INT4: "u1", FLOAT4E2M1: "u1",
}
# Types whose numpy dtype is their own (the bit-pattern types share uint8/uint16 and map back to those).
_NATIVE = (FLOAT, UINT8, INT8, UINT16, INT16, INT32, INT64, STRING, BOOL, FLOAT16, DOUBLE, UINT32, UINT64,
           COMPLEX64, COMPLEX128)
_FROM_NUMPY = {np.dtype(_TO_NUMPY[k]): k for k in _NATIVE}
PACKED_4BIT = (UINT4, INT4, FLOAT4E2M1)
NAMES = {FLOAT: "float", UINT8: "uint8", INT8: "int8", UINT16: "uint16", INT16: "int16", INT32: "int32",
         INT64: "int64", STRING: "string", BOOL: "bool", FLOAT16: "float16", DOUBLE: "double", UINT32: "uint32",
         UINT64: "uint64", COMPLEX64: "complex64", COMPLEX128: "complex128", BFLOAT16: "bfloat16",
         FLOAT8E4M3FN: "float8e4m3fn", FLOAT8E4M3FNUZ: "float8e4m3fnuz", FLOAT8E5M2: "float8e5m2",
         FLOAT8E5M2FNUZ: "float8e5m2fnuz", UINT4: "uint4", INT4: "int4", FLOAT4E2M1: "float4e2m1"}


def to_numpy(code: int) -> np.dtype:
    """The numpy dtype that holds ONNX data type ``code``."""
    try:
        return np.dtype(_TO_NUMPY[code])
    except KeyError:
        raise DataTypeError(f"unknown ONNX tensor data type {code}") from None


def from_numpy(dtype) -> int:
    """The ONNX data type code of a numpy dtype."""
    dtype = np.dtype(dtype)
    code = _FROM_NUMPY.get(dtype.newbyteorder("<") if dtype.byteorder == ">" else dtype)
    if code is None:
        raise DataTypeError(f"numpy dtype {dtype} has no ONNX tensor data type")
    return code


def name(code: int) -> str:
    return NAMES.get(code, f"type{code}")


def storage_size(code: int, count: int) -> int:
    """Bytes that ``count`` elements of type ``code`` take in raw_data."""
    if code in PACKED_4BIT:
        return (count + 1) // 2
    return count * to_numpy(code).itemsize


def unpack_4bit(packed: np.ndarray, count: int) -> np.ndarray:
    """``count`` 4-bit values from bytes holding two each, the first in the low bits."""
    out = np.empty(2 * packed.size, np.uint8)
    out[0::2] = packed & 0x0F
    out[1::2] = packed >> 4
    return out[:count]


def pack_4bit(values: np.ndarray) -> np.ndarray:
    """Inverse of ``unpack_4bit``; an odd count leaves the last high half zero."""
    flat = np.ascontiguousarray(values, dtype=np.uint8).ravel() & 0x0F
    if flat.size % 2:
        flat = np.append(flat, np.uint8(0))
    return flat[0::2] | (flat[1::2] << 4)
