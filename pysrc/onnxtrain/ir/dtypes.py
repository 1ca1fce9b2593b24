"""ONNX TensorProto.DataType codes and numpy dtypes.

Types numpy lacks are held as their raw bit patterns: bfloat16 as uint16, the
float8 kinds as uint8, and the 4-bit kinds as packed uint8 pairs.
"""
from __future__ import annotations

import numpy as np

FLOAT, UINT8, INT8, UINT16, INT16, INT32, INT64, STRING, BOOL = 1, 2, 3, 4, 5, 6, 7, 8, 9
FLOAT16, DOUBLE, UINT32, UINT64, COMPLEX64, COMPLEX128, BFLOAT16 = 10, 11, 12, 13, 14, 15, 16

_TO_NUMPY = {
    FLOAT: "<f4", UINT8: "u1", INT8: "i1", UINT16: "<u2", INT16: "<i2", INT32: "<i4", INT64: "<i8",
    STRING: "O", BOOL: "?", FLOAT16: "<f2", DOUBLE: "<f8", UINT32: "<u4", UINT64: "<u8",
    COMPLEX64: "<c8", COMPLEX128: "<c16", BFLOAT16: "<u2",
    17: "u1", 18: "u1", 19: "u1", 20: "u1",  # float8 e4m3fn, e4m3fnuz, e5m2, e5m2fnuz
    21: "u1", 22: "u1", 23: "u1",            # uint4, int4, float4e2m1 (two per byte)
}
_FROM_NUMPY = {np.dtype(v): k for k, v in _TO_NUMPY.items() if k in (FLOAT, UINT8, INT8, UINT16, INT16, INT32, INT64,
                                                                     STRING, BOOL, FLOAT16, DOUBLE, UINT32, UINT64,
                                                                     COMPLEX64, COMPLEX128)}
PACKED_4BIT = (21, 22, 23)
NAMES = {FLOAT: "float", UINT8: "uint8", INT8: "int8", UINT16: "uint16", INT16: "int16", INT32: "int32",
         INT64: "int64", STRING: "string", BOOL: "bool", FLOAT16: "float16", DOUBLE: "double", UINT32: "uint32",
         UINT64: "uint64", COMPLEX64: "complex64", COMPLEX128: "complex128", BFLOAT16: "bfloat16"}


def to_numpy(code: int) -> np.dtype:
    """The numpy dtype that holds ONNX data type ``code``."""
    try:
        return np.dtype(_TO_NUMPY[code])
    except KeyError:
        raise ValueError(f"unknown ONNX tensor data type {code}") from None


def from_numpy(dtype) -> int:
    """The ONNX data type code of a numpy dtype."""
    dtype = np.dtype(dtype)
    code = _FROM_NUMPY.get(dtype.newbyteorder("<") if dtype.byteorder == ">" else dtype)
    if code is None:
        raise ValueError(f"numpy dtype {dtype} has no ONNX tensor data type")
    return code


def name(code: int) -> str:
    return NAMES.get(code, f"type{code}")
