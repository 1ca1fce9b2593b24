"""ONNX TensorProto.DataType codes and numpy dtypes.

Types numpy lacks are held as their raw bit patterns: bfloat16 as uint16, the
float8 kinds as uint8, and the 4-bit kinds as one uint8 per element holding
the element's 4 bits (0..15; int4 is not sign-extended).  On the wire the
4-bit kinds are packed two per byte, which ``pack_4bit``/``unpack_4bit`` do.

The numpy dtype of such a type carries its ONNX code in ``dtype.metadata``
(it still equals plain uint8/uint16), so a kernel can tell float8 bits from
uint8 values: ``from_numpy`` reads it.  numpy keeps a dtype's metadata through
views, copies, reshapes and indexing, not through arithmetic.
"""
from __future__ import annotations

from enum import IntEnum

import numpy as np

from .errors import DataTypeError


class DataType(IntEnum):
    """TensorProto.DataType.  Members equal their integer codes, as decoded models hold them."""
    FLOAT = 1
    UINT8 = 2
    INT8 = 3
    UINT16 = 4
    INT16 = 5
    INT32 = 6
    INT64 = 7
    STRING = 8
    BOOL = 9
    FLOAT16 = 10
    DOUBLE = 11
    UINT32 = 12
    UINT64 = 13
    COMPLEX64 = 14
    COMPLEX128 = 15
    BFLOAT16 = 16
    FLOAT8E4M3FN = 17
    FLOAT8E4M3FNUZ = 18
    FLOAT8E5M2 = 19
    FLOAT8E5M2FNUZ = 20
    UINT4 = 21
    INT4 = 22
    FLOAT4E2M1 = 23


(FLOAT, UINT8, INT8, UINT16, INT16, INT32, INT64, STRING, BOOL, FLOAT16, DOUBLE, UINT32, UINT64, COMPLEX64,
 COMPLEX128, BFLOAT16, FLOAT8E4M3FN, FLOAT8E4M3FNUZ, FLOAT8E5M2, FLOAT8E5M2FNUZ, UINT4, INT4, FLOAT4E2M1) = DataType

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
_DTYPES = {k: np.dtype(v) if k in _NATIVE else np.dtype(v, metadata={"onnx": k}) for k, v in _TO_NUMPY.items()}
PACKED_4BIT = (UINT4, INT4, FLOAT4E2M1)
NAMES = {t: t.name.lower() for t in DataType}


def to_numpy(code: int) -> np.dtype:
    """The numpy dtype that holds ONNX data type ``code``."""
    try:
        return _DTYPES[code]
    except KeyError:
        raise DataTypeError(f"unknown ONNX tensor data type {code}") from None


def from_numpy(dtype) -> int:
    """The ONNX data type code of a numpy dtype (a bit-pattern type's dtype from ``to_numpy`` gives that type)."""
    dtype = np.dtype(dtype)
    if dtype.metadata and "onnx" in dtype.metadata:
        return dtype.metadata["onnx"]
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


def unpack_4bit(packed: np.ndarray, count: int, code: int | None = None) -> np.ndarray:
    """``count`` 4-bit values from bytes holding two each, the first in the low bits (with ``code``, in
    that type's tagged dtype)."""
    out = np.empty(2 * packed.size, np.uint8 if code is None else to_numpy(code))
    out[0::2] = packed & 0x0F
    out[1::2] = packed >> 4
    return out[:count]


def pack_4bit(values: np.ndarray) -> np.ndarray:
    """Inverse of ``unpack_4bit``; an odd count leaves the last high half zero."""
    flat = np.ascontiguousarray(values, dtype=np.uint8).ravel() & 0x0F
    if flat.size % 2:
        flat = np.append(flat, np.uint8(0))
    return flat[0::2] | (flat[1::2] << 4)


# ---- bit-pattern types: values <-> bit patterns ----------------------------------------------------------
#
# ``to_bits`` rounds float values to the nearest representable value (ties to even), exactly as onnx's
# helpers (float32_to_bfloat16, float32_to_float8e4m3/e5m2, subbyte.float32_to_4bit_unpacked) and
# onnxruntime's Cast do; ``from_bits`` widens to float32 (int8/uint8 for the 4-bit integers).

# float4e2m1 (opset 23) is not among them: onnx 1.16 and onnxruntime 1.19, the references here, lack it.
BIT_PATTERN_TYPES = (BFLOAT16, FLOAT8E4M3FN, FLOAT8E4M3FNUZ, FLOAT8E5M2, FLOAT8E5M2FNUZ, UINT4, INT4)
FLOAT8_TYPES = (FLOAT8E4M3FN, FLOAT8E4M3FNUZ, FLOAT8E5M2, FLOAT8E5M2FNUZ)


class _Minifloat:
    """An 8-bit float: ``mant`` mantissa bits; float32 biased exponents below ``zero_below``
    round to zero, up to ``normal_from - 1`` are subnormal, then normal with field ``e - normal_from + 1``
    up to ``top``.  ``limit`` is the largest code a rounding may step to, ``max_code`` the largest finite
    magnitude, ``overflow`` the code (without sign) of a value too large when not saturating (None: the
    unsigned NaN 0x80), ``nan`` likewise, ``unsigned_zero`` whether -0 does not exist."""

    def __init__(self, mant, bias, normal_from, top, limit, max_code, overflow, nan, unsigned_zero,
                 fn_quirk=False, round_overflow=None, nan_codes=(), inf_codes=()):
        self.round_overflow = overflow if round_overflow is None else round_overflow
        self.mant, self.bias, self.normal_from, self.top = mant, bias, normal_from, top
        self.zero_below = normal_from - 1 - mant
        self.limit, self.max_code, self.overflow, self.nan = limit, max_code, overflow, nan
        self.unsigned_zero, self.fn_quirk = unsigned_zero, fn_quirk
        self.nan_codes, self.inf_codes = nan_codes, inf_codes
        self._table = None

    def table(self) -> np.ndarray:
        """The float32 value of each of the 256 codes."""
        if self._table is None:
            n_exp = 7 - self.mant
            codes = np.arange(256)
            sign = np.where(codes >> 7, -1.0, 1.0)
            exp = (codes >> self.mant) & ((1 << n_exp) - 1)
            man = codes & ((1 << self.mant) - 1)
            mag = np.where(exp == 0, man * 2.0 ** (1 - self.bias - self.mant),
                           (1 + man / 2.0 ** self.mant) * 2.0 ** (exp - self.bias))
            values = sign * mag
            values[list(self.nan_codes)] = np.nan
            for c in self.inf_codes:
                values[c] = np.inf if c < 0x80 else -np.inf
            self._table = values.astype(np.float32)
        return self._table

    def encode(self, x: np.ndarray, saturate: bool) -> np.ndarray:
        b = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32).astype(np.int64)
        sign = (b >> 24) & 0x80
        e = (b >> 23) & 0xFF
        m = b & 0x7FFFFF
        M = self.mant
        val = np.zeros_like(b)
        # subnormal: d = 0 .. M below the smallest normal exponent
        d = np.clip(self.normal_from - 1 - e, 0, M)
        sub = (e >= self.zero_below) & (e < self.normal_from) & (e != 0)
        v_sub = np.where(d < M, (1 << np.maximum(M - 1 - d, 0)) | (m >> (24 - M + d)), (m > 0).astype(np.int64))
        mask = np.int64(1) << (23 - M + d)
        v_sub = v_sub + ((m & mask != 0) & ((v_sub & 1 != 0) | (m & (mask - 1) != 0)))
        # normal
        ex = e - self.normal_from + 1
        norm = (e >= self.normal_from) & (ex <= self.top)
        v_norm = (ex << M) | (m >> (23 - M))
        if self.fn_quirk:    # onnx and onnxruntime: 480 <= |x| < 496 (the NaN code's range) truncate to 448
            v_norm = np.where(v_norm == 0x7F, 0x7E, v_norm)
        up = ((m >> (22 - M)) & 1 != 0) & (((m >> (23 - M)) & 1 != 0) | (m & ((1 << (22 - M)) - 1) != 0))
        big = up & (v_norm >= self.limit)
        v_norm = np.where(up & (v_norm < self.limit), v_norm + 1, v_norm)
        over_code = self.max_code if saturate else self.overflow
        round_code = self.max_code if saturate else self.round_overflow
        v_norm = np.where(big & (not saturate), -1 if round_code is None else round_code, v_norm)
        val = np.where(sub, v_sub, val)
        val = np.where(norm, v_norm, val)
        val = np.where((ex > self.top) & (e != 255), -1 if over_code is None else over_code, val)
        inf = (b & 0x7FFFFFFF) == 0x7F800000
        nan = (e == 255) & (m != 0)
        val = np.where(inf, -1 if over_code is None else over_code, val)
        val = np.where(nan, -1 if self.nan is None else self.nan, val)
        unsigned_nan = val == -1
        out = val | sign
        if self.unsigned_zero:
            out = np.where(val == 0, 0, out)
        out = np.where(unsigned_nan, 0x80, out)
        return out.astype(np.uint8).reshape(np.shape(x))

    def decode(self, bits: np.ndarray) -> np.ndarray:
        return self.table()[np.asarray(bits, dtype=np.uint8)]


_MINIFLOATS = {
    FLOAT8E4M3FN: _Minifloat(3, 7, 121, 15, 0x7E, 0x7E, 0x7F, 0x7F, False, fn_quirk=True,
                             nan_codes=(0x7F, 0xFF)),
    FLOAT8E4M3FNUZ: _Minifloat(3, 8, 120, 15, 0x7F, 0x7F, None, None, True, nan_codes=(0x80,)),
    # A value that rounds past 57344 without saturation becomes NaN (0x7F), not inf: onnx's helper and
    # onnxruntime both set 0x7C over the 0x7B they hold (their Cast agrees; a larger value gives inf).
    FLOAT8E5M2: _Minifloat(2, 15, 113, 30, 0x7B, 0x7B, 0x7C, 0x7F, False, round_overflow=0x7F,
                           nan_codes=(0x7D, 0x7E, 0x7F, 0xFD, 0xFE, 0xFF), inf_codes=(0x7C, 0xFC)),
    FLOAT8E5M2FNUZ: _Minifloat(2, 16, 112, 31, 0x7F, 0x7F, None, None, True, nan_codes=(0x80,)),
}


def to_bits(code: int, values, saturate: bool = True) -> np.ndarray:
    """The bit patterns of ``values`` as type ``code`` (one of BIT_PATTERN_TYPES), rounded to nearest even.

    ``saturate`` (float8 kinds only, as Cast's attribute) maps out-of-range values and infinities to the
    largest finite value instead of inf/NaN.  bfloat16 given as uint16 and float8 given as uint8 are taken
    to be bit patterns already (onnx stores bfloat16 test data so)."""
    values = np.asarray(values)
    if code == BFLOAT16:
        if values.dtype == np.uint16:
            return values.view(to_numpy(code))
        b = np.ascontiguousarray(values, dtype=np.float32).view(np.uint32)
        rounded = (b + (((b >> 16) & 1) + 0x7FFF)) >> 16
        bits = np.where(np.isnan(values), np.uint32(0x7FC0), rounded).astype(np.uint16).reshape(values.shape)
        return bits.view(to_numpy(code))
    if code in _MINIFLOATS:
        if values.dtype == np.uint8:
            return values.view(to_numpy(code))
        return _MINIFLOATS[code].encode(values, bool(saturate)).view(to_numpy(code))
    if code in (INT4, UINT4):
        lo, hi = (-8, 7) if code == INT4 else (0, 15)
        if values.dtype.kind in "iub":
            v = np.clip(values.astype(np.int64), lo, hi)
        else:
            v = np.rint(np.clip(values.astype(np.float64), lo, hi)).astype(np.int64)
        return (v & 0x0F).astype(to_numpy(code))
    raise DataTypeError(f"{name(code)} is not a bit-pattern type")


def from_bits(code: int, bits) -> np.ndarray:
    """The values of bit patterns ``bits`` of type ``code``: float32, or int8/uint8 for int4/uint4."""
    bits = np.asarray(bits)
    if code == BFLOAT16:
        return (bits.astype(np.uint32) << 16).view(np.float32)
    if code in _MINIFLOATS:
        return _MINIFLOATS[code].decode(bits)
    if code == INT4:
        b = bits.astype(np.int8) & 0x0F
        return np.where(b >= 8, b - 16, b).astype(np.int8)
    if code == UINT4:
        return (bits.astype(np.uint8) & 0x0F)
    raise DataTypeError(f"{name(code)} is not a bit-pattern type")
