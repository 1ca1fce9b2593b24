"""Kernel: ImageDecoder, for the lossless formats a pure-numpy decoder can read exactly: PNG (8 and 16 bit,
not interlaced), BMP (24 and 32 bit, uncompressed), PNM (P5/P6) and TIFF (uncompressed RGB or grayscale
strips).  JPEG, JPEG 2000 and WebP raise an error naming the format."""
from __future__ import annotations

import struct
import zlib

import numpy as np

from .registry import kernel


def _png_unfilter(raw: bytes, height: int, row_bytes: int, bpp: int) -> np.ndarray:
    data = np.frombuffer(raw, np.uint8)
    if data.size != height * (row_bytes + 1):
        raise ValueError("ImageDecoder: the PNG's image data has the wrong size")
    rows = data.reshape(height, row_bytes + 1)
    out = np.zeros((height, row_bytes), np.uint8)
    prior = np.zeros(row_bytes, np.int32)
    for y in range(height):
        kind, line = rows[y, 0], rows[y, 1:].astype(np.int32)
        if kind == 0:
            cur = line
        elif kind == 2:
            cur = (line + prior) & 0xFF
        elif kind == 1:
            cur = line.copy()
            for c in range(bpp):
                cur[c::bpp] = np.cumsum(line[c::bpp]) & 0xFF
        elif kind in (3, 4):
            cur = np.zeros(row_bytes, np.int32)
            for x in range(0, row_bytes, bpp):
                left = cur[x - bpp:x] if x else np.zeros(bpp, np.int32)
                up = prior[x:x + bpp]
                if kind == 3:
                    pred = (left + up) >> 1
                else:
                    upleft = prior[x - bpp:x] if x else np.zeros(bpp, np.int32)
                    p = left + up - upleft
                    pa, pb, pc = np.abs(p - left), np.abs(p - up), np.abs(p - upleft)
                    pred = np.where((pa <= pb) & (pa <= pc), left, np.where(pb <= pc, up, upleft))
                cur[x:x + bpp] = (line[x:x + bpp] + pred) & 0xFF
        else:
            raise ValueError(f"ImageDecoder: PNG filter type {kind} is not valid")
        out[y] = cur
        prior = cur
    return out


def _png(data: bytes) -> np.ndarray:
    pos, idat, palette, header = 8, [], None, None
    while pos + 8 <= len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        pos += 12 + length
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"PLTE":
            palette = np.frombuffer(body, np.uint8).reshape(-1, 3)
        elif kind == b"IDAT":
            idat.append(body)
        elif kind == b"IEND":
            break
    if header is None:
        raise ValueError("ImageDecoder: the PNG has no IHDR chunk")
    width, height, depth, color, _, _, interlace = header
    channels = {0: 1, 2: 3, 3: 1, 4: 2, 6: 4}.get(color)
    if channels is None or depth not in (8, 16) or (color == 3 and depth != 8) or interlace:
        raise ValueError(f"ImageDecoder: PNG with bit depth {depth}, color type {color} and interlace {interlace} "
                         f"is not supported")
    bpp = channels * depth // 8
    rows = _png_unfilter(zlib.decompress(b"".join(idat)), height, width * bpp, bpp)
    if depth == 16:
        pixels = rows.reshape(height, width, channels, 2)[..., 0]    # the high byte, as an 8-bit decode
    else:
        pixels = rows.reshape(height, width, channels)
    if color == 3:
        if palette is None:
            raise ValueError("ImageDecoder: a palette PNG without PLTE")
        return palette[pixels[..., 0]]
    if color in (0, 4):
        return np.repeat(pixels[..., :1], 3, axis=2)
    return pixels[..., :3]


def _bmp(data: bytes) -> np.ndarray:
    offset = struct.unpack("<I", data[10:14])[0]
    width, height, _, bits, compression = struct.unpack("<iiHHI", data[18:34])
    if bits not in (24, 32) or compression not in (0, 3):
        raise ValueError(f"ImageDecoder: BMP with {bits} bits per pixel and compression {compression} is not "
                         f"supported")
    step = bits // 8
    stride = (width * step + 3) & ~3
    rows = np.frombuffer(data, np.uint8, abs(height) * stride, offset).reshape(abs(height), stride)
    pixels = rows[:, :width * step].reshape(abs(height), width, step)[..., 2::-1]   # BGR(A) -> RGB
    return pixels[::-1] if height > 0 else pixels


def _pnm(data: bytes) -> np.ndarray:
    fields, pos = [], 2
    while len(fields) < 3:
        while data[pos:pos + 1].isspace():
            pos += 1
        if data[pos:pos + 1] == b"#":
            pos = data.index(b"\n", pos) + 1
            continue
        end = pos
        while not data[end:end + 1].isspace():
            end += 1
        fields.append(int(data[pos:end]))
        pos = end
    width, height, maxval = fields
    if maxval != 255:
        raise ValueError(f"ImageDecoder: PNM with maximum value {maxval} is not supported")
    channels = 3 if data[:2] == b"P6" else 1
    pixels = np.frombuffer(data, np.uint8, width * height * channels, pos + 1).reshape(height, width, channels)
    return pixels if channels == 3 else np.repeat(pixels, 3, axis=2)


def _tiff(data: bytes) -> np.ndarray:
    order = "<" if data[:2] == b"II" else ">"
    (ifd,) = struct.unpack(order + "I", data[4:8])
    (count,) = struct.unpack(order + "H", data[ifd:ifd + 2])
    sizes = {1: 1, 2: 1, 3: 2, 4: 4}
    tags = {}
    for i in range(count):
        tag, kind, n = struct.unpack(order + "HHI", data[ifd + 2 + 12 * i:ifd + 10 + 12 * i])
        size = sizes.get(kind, 4) * n
        field = ifd + 10 + 12 * i
        where = field if size <= 4 else struct.unpack(order + "I", data[field:field + 4])[0]
        fmt = {1: "B", 2: "B", 3: "H", 4: "I"}.get(kind, "I")
        tags[tag] = struct.unpack(order + fmt * n, data[where:where + size])
    width, height = tags[256][0], tags[257][0]
    bits = tags.get(258, (1,))
    compression, photometric = tags.get(259, (1,))[0], tags.get(262, (2,))[0]
    samples, planar = tags.get(277, (1,))[0], tags.get(284, (1,))[0]
    if compression != 1 or planar != 1 or any(b != 8 for b in bits) or photometric not in (1, 2):
        raise ValueError(f"ImageDecoder: TIFF with compression {compression}, bits {list(bits)}, photometric "
                         f"{photometric} and planar configuration {planar} is not supported")
    strips = b"".join(data[o:o + c] for o, c in zip(tags[273], tags[279]))
    pixels = np.frombuffer(strips, np.uint8, width * height * samples).reshape(height, width, samples)
    return pixels[..., :3] if samples >= 3 else np.repeat(pixels[..., :1], 3, axis=2)


@kernel("ImageDecoder", since=20)
def ImageDecoder(encoded_stream, *, pixel_format="RGB"):
    if pixel_format not in ("RGB", "BGR", "Grayscale"):
        raise ValueError(f"ImageDecoder: pixel_format '{pixel_format}' is not supported")
    data = np.asarray(encoded_stream, np.uint8).tobytes()
    if data[:8] == b"\x89PNG\r\n\x1a\n":
        rgb = _png(data)
    elif data[:2] == b"BM":
        rgb = _bmp(data)
    elif data[:2] in (b"P5", b"P6"):
        rgb = _pnm(data)
    elif data[:4] in (b"II*\x00", b"MM\x00*"):
        rgb = _tiff(data)
    else:
        kind = ("JPEG" if data[:2] == b"\xff\xd8" else "WebP" if data[8:12] == b"WEBP"
                else "JPEG 2000" if data[4:8] == b"jP  " or data[:4] == b"\xff\x4f\xff\x51" else "this")
        raise ValueError(f"ImageDecoder: decoding {kind} images is not supported (PNG, BMP, PNM and TIFF are)")
    rgb = np.ascontiguousarray(rgb, np.uint8)
    if pixel_format == "BGR":
        return rgb[..., ::-1].copy()
    if pixel_format == "Grayscale":   # ITU-R 601-2 luma with integer rounding, as PIL's convert("L")
        r, g, b = (rgb[..., i].astype(np.int64) for i in range(3))
        return ((r * 19595 + g * 38470 + b * 7471 + 0x8000) >> 16).astype(np.uint8)[..., None]
    return rgb
