"""The protobuf wire format: a bounds-checked field reader and a writer."""
from __future__ import annotations

import struct

import numpy as np

from .errors import ModelDecodeError

VARINT, FIXED64, LEN, FIXED32 = 0, 1, 2, 5
MAX_DEPTH = 64


class Reader:
    """Iterates over the fields of one message in ``buf[start:end]``."""

    __slots__ = ("buf", "pos", "end", "message")

    def __init__(self, buf: memoryview, start: int, end: int, message: str):
        self.buf, self.pos, self.end, self.message = buf, start, end, message

    def _varint(self, field: str) -> int:
        buf, pos, end = self.buf, self.pos, self.end
        result = shift = 0
        while True:
            if pos >= end:
                raise ModelDecodeError(f"{self.message}.{field}: truncated varint at offset {pos}")
            b = buf[pos]
            pos += 1
            result |= (b & 0x7F) << shift
            if b < 0x80:
                break
            shift += 7
            if shift >= 70:
                raise ModelDecodeError(f"{self.message}.{field}: varint longer than 10 bytes at offset {pos}")
        self.pos = pos
        return result

    def fields(self):
        """Yield (field number, wire type, value): an int for VARINT/FIXED*, (start, end) for LEN."""
        while self.pos < self.end:
            key = self._varint("<key>")
            number, wire = key >> 3, key & 7
            if number == 0:
                raise ModelDecodeError(f"{self.message}: field number 0 at offset {self.pos} (not a protobuf message?)")
            if wire == VARINT:
                yield number, wire, self._varint(f"<field {number}>")
            elif wire == LEN:
                length = self._varint(f"<field {number}>")
                start = self.pos
                if length > self.end - start:
                    raise ModelDecodeError(f"{self.message}: field {number} has length {length}, which exceeds the "
                                           f"{self.end - start} bytes left at offset {start}")
                self.pos = start + length
                yield number, wire, (start, start + length)
            elif wire in (FIXED32, FIXED64):
                size = 4 if wire == FIXED32 else 8
                if self.pos + size > self.end:
                    raise ModelDecodeError(f"{self.message}: field {number} truncated at offset {self.pos}")
                value = int.from_bytes(self.buf[self.pos:self.pos + size], "little")
                self.pos += size
                yield number, wire, value
            else:
                raise ModelDecodeError(f"{self.message}: field {number} has unsupported wire type {wire} at "
                                       f"offset {self.pos} (not an ONNX model, or corrupt)")


def to_signed64(v: int) -> int:
    return v - (1 << 64) if v >= 1 << 63 else v


def read_string(buf: memoryview, span, message: str, field: str) -> str:
    try:
        return bytes(buf[span[0]:span[1]]).decode("utf-8")
    except UnicodeDecodeError as e:
        raise ModelDecodeError(f"{message}.{field}: not valid UTF-8 at byte {span[0] + e.start}") from None


def read_packed_varints(buf: memoryview, span, message: str, field: str) -> list:
    r = Reader(buf, span[0], span[1], message)
    out = []
    while r.pos < r.end:
        out.append(to_signed64(r._varint(field)))
    return out


def read_packed_fixed(buf: memoryview, span, dtype: str, message: str, field: str) -> np.ndarray:
    size = np.dtype(dtype).itemsize
    if (span[1] - span[0]) % size:
        raise ModelDecodeError(f"{message}.{field}: packed length {span[1] - span[0]} is not a multiple of {size}")
    return np.frombuffer(buf, dtype=dtype, count=(span[1] - span[0]) // size, offset=span[0])


def fixed32_to_float(v: int) -> float:
    return struct.unpack("<f", v.to_bytes(4, "little"))[0]


# ---- writing ------------------------------------------------------------------------------------

def _varint_bytes(v: int) -> bytes:
    if v < 0:
        v += 1 << 64
    out = bytearray()
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


class Writer:
    """Appends fields to a growing buffer."""

    __slots__ = ("parts",)

    def __init__(self):
        self.parts = []

    def varint(self, number: int, value: int) -> None:
        self.parts.append(_varint_bytes(number << 3 | VARINT) + _varint_bytes(int(value)))

    def float32(self, number: int, value: float) -> None:
        self.parts.append(_varint_bytes(number << 3 | FIXED32) + struct.pack("<f", value))

    def bytes_(self, number: int, data) -> None:
        self.parts.append(_varint_bytes(number << 3 | LEN) + _varint_bytes(len(data)))
        self.parts.append(bytes(data) if not isinstance(data, bytes) else data)

    def string(self, number: int, text: str) -> None:
        self.bytes_(number, text.encode("utf-8"))

    def message(self, number: int, sub: "Writer") -> None:
        self.bytes_(number, sub.getvalue())

    def packed_varints(self, number: int, values) -> None:
        if len(values):
            self.bytes_(number, b"".join(_varint_bytes(int(v)) for v in values))

    def packed_floats(self, number: int, values) -> None:
        if len(values):
            self.bytes_(number, np.asarray(values, dtype="<f4").tobytes())

    def getvalue(self) -> bytes:
        return b"".join(self.parts)
