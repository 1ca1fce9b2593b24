"""The protobuf wire format: a bounds-checked field reader and a writer.

Every length is checked against the bytes that are really left before
anything is sliced or allocated, so corrupt input raises ModelDecodeError
(naming the message, the field and the offset) instead of hanging or
asking for a huge buffer.
"""
from __future__ import annotations

import struct

import numpy as np

from .errors import ModelDecodeError

VARINT, FIXED64, LEN, FIXED32 = 0, 1, 2, 5
_WIRE_NAMES = {3: "start-group", 4: "end-group", 6: "invalid (6)", 7: "invalid (7)"}


class Reader:
    """Iterates over the fields of one message held in ``buf[start:end]``.

    ``names`` maps field numbers to names for error messages.  ``keys`` collects the key (number << 3 |
    wire type) of each field read, in order; ``keep()`` puts the current field's bytes there instead,
    for a field the caller does not model.  That list is the message's layout (see LayoutWriter).
    """

    __slots__ = ("buf", "pos", "end", "message", "names", "keys", "at")

    def __init__(self, buf: memoryview, start: int, end: int, message: str, names: dict | None = None):
        self.buf, self.pos, self.end, self.message, self.names = buf, start, end, message, names or {}
        self.keys = []
        self.at = start  # where the current field's key starts

    def where(self, number: int) -> str:
        """``Message.field`` for error messages."""
        return f"{self.message}.{self.names.get(number, f'<field {number}>')}"

    def varint(self, number: int | None = None) -> int:
        """The varint at ``pos``: the value of field ``number``, or a field key (None)."""
        buf, pos, end = self.buf, self.pos, self.end
        result = shift = 0
        while True:
            if pos >= end:
                what = f"{self.message}: field key" if number is None else self.where(number)
                raise ModelDecodeError(f"{what}: truncated varint at offset {pos}")
            b = buf[pos]
            pos += 1
            result |= (b & 0x7F) << shift
            if b < 0x80:
                break
            shift += 7
            if shift >= 70:
                what = f"{self.message}: field key" if number is None else self.where(number)
                raise ModelDecodeError(f"{what}: varint longer than 10 bytes at offset {self.pos}")
        self.pos = pos
        return result & 0xFFFFFFFFFFFFFFFF

    def fields(self):
        """Yield (field number, wire type, value): an int for VARINT and FIXED32/64, the (start, end)
        span of the payload for LEN."""
        buf, end = self.buf, self.end
        keep_key = self.keys.append
        while self.pos < end:
            key_at = self.at = self.pos
            key = buf[key_at]  # one-byte varints (most keys, lengths and values) are read inline
            if key < 0x80:
                self.pos = key_at + 1
            else:
                key = self.varint()
            keep_key(key)
            number, wire = key >> 3, key & 7
            if number == 0:
                raise ModelDecodeError(f"{self.message}: field number 0 at offset {key_at} (corrupt data, or not "
                                       f"an ONNX model)")
            if wire == VARINT:
                pos = self.pos
                if pos < end and buf[pos] < 0x80:
                    self.pos = pos + 1
                    yield number, wire, buf[pos]
                else:
                    yield number, wire, self.varint(number)
            elif wire == LEN:
                start = self.pos
                if start < end and buf[start] < 0x80:
                    length = buf[start]
                    start = self.pos = start + 1
                else:
                    length = self.varint(number)
                    start = self.pos
                if length > self.end - start:
                    raise ModelDecodeError(f"{self.where(number)}: length {length} exceeds the {self.end - start} "
                                           f"bytes left at offset {start}")
                self.pos = start + length
                yield number, wire, (start, start + length)
            elif wire == FIXED32 or wire == FIXED64:
                size = 4 if wire == FIXED32 else 8
                if size > self.end - self.pos:
                    raise ModelDecodeError(f"{self.where(number)}: {size}-byte value truncated at offset {self.pos}")
                value = int.from_bytes(self.buf[self.pos:self.pos + size], "little")
                self.pos += size
                yield number, wire, value
            else:
                raise ModelDecodeError(f"{self.where(number)}: unsupported wire type {_WIRE_NAMES[wire]} at offset "
                                       f"{key_at} (corrupt data, or not an ONNX model)")


    def keep(self) -> None:
        """Keep the field just read verbatim in the layout (in place of its key)."""
        self.keys[-1] = bytes(self.buf[self.at:self.pos])

    def layout(self) -> bytes | tuple:
        """The keys as bytes when each fits in one (fields 1 to 31, nothing kept verbatim): compact, and
        copied as one atom by copy.deepcopy; else a tuple."""
        try:
            return bytes(self.keys)
        except (TypeError, ValueError):
            return tuple(self.keys)


def to_signed64(v: int) -> int:
    return v - (1 << 64) if v >= 1 << 63 else v


def fixed32_to_float(v: int) -> float:
    return struct.unpack("<f", v.to_bytes(4, "little"))[0]


def read_string(buf: memoryview, span, what: str) -> str:
    try:
        return str(buf[span[0]:span[1]], "utf-8")
    except UnicodeDecodeError as e:
        raise ModelDecodeError(f"{what}: not valid UTF-8 at offset {span[0] + e.start}") from None


def read_packed_varints(buf: memoryview, span, what: str) -> np.ndarray:
    """The varints in ``buf[span]`` as uint64 (view as int64 for signed fields), decoded without a
    per-value Python loop."""
    b = np.frombuffer(buf, np.uint8, span[1] - span[0], span[0])
    if b.size and b[-1] & 0x80:
        raise ModelDecodeError(f"{what}: truncated varint at the end of the packed field at offset {span[0]}")
    ends = np.flatnonzero(b < 0x80)
    starts = np.empty_like(ends)
    starts[:1] = 0
    starts[1:] = ends[:-1] + 1
    lengths = ends - starts + 1
    if lengths.size and lengths.max() > 10:
        at = span[0] + int(starts[np.argmax(lengths > 10)])
        raise ModelDecodeError(f"{what}: varint longer than 10 bytes at offset {at}")
    if b.size == ends.size:  # every value fits in one byte
        return b.astype(np.uint64)
    position = np.arange(b.size) - np.repeat(starts, lengths)
    with np.errstate(over="ignore"):  # bits beyond 64 are dropped, as protobuf does
        parts = (b & 0x7F).astype(np.uint64) << (7 * position).astype(np.uint64)
    return np.bitwise_or.reduceat(parts, starts) if starts.size else parts[:0]


def read_packed_fixed(buf: memoryview, span, dtype: str, what: str) -> np.ndarray:
    """A read-only view of the fixed-size values in ``buf[span]``."""
    size = np.dtype(dtype).itemsize
    if (span[1] - span[0]) % size:
        raise ModelDecodeError(f"{what}: packed length {span[1] - span[0]} is not a multiple of {size}")
    return array_view(buf, span[0], (span[1] - span[0]) // size, np.dtype(dtype))


def array_view(buf: memoryview, offset: int, count: int, dtype: np.dtype) -> np.ndarray:
    """``count`` values of ``dtype`` at ``buf[offset]``: a read-only view of the buffer when that
    address is aligned for the dtype, else an aligned copy.  The caller has checked the bounds."""
    arr = np.frombuffer(buf, dtype=dtype, count=count, offset=offset)
    if not arr.flags.aligned:
        return arr.copy()
    arr.flags.writeable = False
    return arr


# ---- writing ------------------------------------------------------------------------------------

def varint_bytes(v: int) -> bytes:
    if v < 0:
        v += 1 << 64
    if v < 0x80:
        return bytes((v,))
    out = bytearray()
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def encode_varints(values) -> bytes:
    """Packed varint encoding of integers (negative ones as 64-bit two's complement), vectorised."""
    v = np.asarray(values)
    v = v.astype(np.int64).view(np.uint64) if v.dtype.kind != "u" else v.astype(np.uint64)
    v = v.ravel()
    if v.size == 0:
        return b""
    nbytes = np.ones(v.size, np.intp)  # intp: index arithmetic must also work on wasm32
    for k in range(1, 10):
        nbytes += v >= np.uint64(1 << (7 * k))
    ends = np.cumsum(nbytes)
    owner = np.repeat(np.arange(v.size), nbytes)
    position = np.arange(int(ends[-1])) - np.repeat(ends - nbytes, nbytes)
    out = ((v[owner] >> (7 * position).astype(np.uint64)) & np.uint64(0x7F)).astype(np.uint8)
    out[position < nbytes[owner] - 1] |= 0x80
    return out.tobytes()


class Writer:
    """Appends the fields of one message."""

    __slots__ = ("parts",)

    def __init__(self):
        self.parts = []

    def varint(self, number: int, value: int) -> None:
        self.parts.append(varint_bytes(number << 3 | VARINT) + varint_bytes(int(value)))

    def float32(self, number: int, value: float) -> None:
        self.parts.append(varint_bytes(number << 3 | FIXED32) + struct.pack("<f", value))

    def bytes_(self, number: int, data) -> None:
        data = data if isinstance(data, bytes) else bytes(data)
        self.parts.append(varint_bytes(number << 3 | LEN) + varint_bytes(len(data)))
        self.parts.append(data)

    def string(self, number: int, text: str) -> None:
        self.bytes_(number, text.encode("utf-8"))

    def message(self, number: int, sub: "Writer") -> None:
        self.bytes_(number, sub.getvalue())

    def packed_varints(self, number: int, values) -> None:
        """Nothing is written for an empty list (as protobuf does)."""
        if len(values):
            self.bytes_(number, encode_varints(values))

    def packed_fixed(self, number: int, values, dtype: str) -> None:
        if len(values):
            self.bytes_(number, np.ascontiguousarray(values, dtype=dtype).tobytes())

    def getvalue(self) -> bytes:
        return b"".join(self.parts)


class LayoutWriter(Writer):
    """A Writer for a message decoded from a file: ``layout`` is its fields as read (see Reader.keys),
    and the output follows it.  The fields are put in the layout's order (the extra values of a repeated
    field come after its last occurrence there, fields the layout lacks at the end), repeated scalars are
    packed or not as they were, and the kept bytes of unmodelled fields are written where they were.
    The values themselves are always the ones written now: the layout holds no data of modelled fields,
    except fields kept as ``(key, encoded, raw)``: where the field written is ``encoded``, ``raw`` (the
    whole field as read) is written instead; with ``encoded`` None, ``raw`` is written if no field with
    that number is written now."""

    __slots__ = ("keys", "layout")

    def __init__(self, layout: bytes | tuple):
        self.parts = []  # per field: its key and length prefix, then its payload
        self.keys = []
        self.layout = layout

    def _field(self, key: int, head: bytes, payload: bytes = b"") -> None:
        self.keys.append(key)
        self.parts.append((head, payload))

    def varint(self, number: int, value: int) -> None:
        key = number << 3 | VARINT
        self._field(key, varint_bytes(key) + varint_bytes(int(value)))

    def float32(self, number: int, value: float) -> None:
        key = number << 3 | FIXED32
        self._field(key, varint_bytes(key) + struct.pack("<f", value))

    def bytes_(self, number: int, data) -> None:
        data = data if isinstance(data, bytes) else bytes(data)
        key = number << 3 | LEN
        self._field(key, varint_bytes(key) + varint_bytes(len(data)), data)

    def packed_varints(self, number: int, values) -> None:
        key = number << 3 | VARINT
        if key in self.layout:
            head = varint_bytes(key)
            for v in np.asarray(values).ravel().tolist():
                self._field(key, head + varint_bytes(v))
        elif len(values) or number << 3 | LEN in self.layout:
            self.bytes_(number, encode_varints(values))

    def packed_fixed(self, number: int, values, dtype: str) -> None:
        wire = FIXED32 if np.dtype(dtype).itemsize == 4 else FIXED64
        key = number << 3 | wire
        if key in self.layout:
            head = varint_bytes(key)
            data = np.ascontiguousarray(values, dtype=dtype).tobytes()
            size = 4 if wire == FIXED32 else 8
            for i in range(0, len(data), size):
                self._field(key, head + data[i:i + size])
        elif len(values) or number << 3 | LEN in self.layout:
            self.bytes_(number, np.ascontiguousarray(values, dtype=dtype).tobytes())

    def getvalue(self) -> bytes:
        layout, keys, parts = self.layout, self.keys, self.parts
        if len(keys) == len(layout) and keys == list(layout):
            order = parts
        else:
            order = _follow(layout, keys, parts)
        return b"".join([b for part in order for b in part])


def _follow(layout: bytes | tuple, keys: list, parts: list) -> list:
    """``parts`` (one per field, keys ``keys``) in the order of ``layout``."""
    waiting = {}  # field number -> indexes of its parts, in the order written
    for i, k in enumerate(keys):
        waiting.setdefault(k >> 3, []).append(i)
    last = {}
    for j, k in enumerate(layout):
        if k.__class__ is int:
            last[k >> 3] = j
        elif k.__class__ is tuple:
            last[k[0] >> 3] = j
    taken = dict.fromkeys(waiting, 0)
    out = []
    for j, k in enumerate(layout):
        if k.__class__ is bytes:
            out.append((k,))
            continue
        n = (k if k.__class__ is int else k[0]) >> 3
        indexes = waiting.get(n)
        if indexes is None:
            if k.__class__ is tuple and k[1] is None:
                out.append((k[2],))
            continue
        start = taken[n]
        stop = len(indexes) if last[n] == j else start + 1
        if k.__class__ is tuple and start < stop and parts[indexes[start]][1] == k[1]:
            out.append((k[2],))
            start += 1
        out.extend(parts[i] for i in indexes[start:stop])
        taken[n] = stop
    out.extend(parts[i] for i, k in enumerate(keys) if k >> 3 not in last)
    return out
