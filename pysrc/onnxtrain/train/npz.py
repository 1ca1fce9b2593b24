"""Reading the arrays of a .npz file with bounded memory.

Every member is checked before anything is allocated: the header's shape and dtype must account for exactly the
member's size in the zip directory, the members read hold at most MAX_BYTES together, and a compressed member
expands at most BOMB_ALLOWANCE + MAX_RATIO times its compressed size (deflate bombs reach about 1000).  Reading
stops at the size the directory states, and the zip's CRC is checked.  Object (pickled) members are refused.
"""
from __future__ import annotations

import io
import zipfile
import zlib

import numpy as np
from numpy.lib import format as npy

MAX_BYTES = 1 << 30
MAX_RATIO = 200
BOMB_ALLOWANCE = 16 << 20
MAX_HEADER = 10000


class NpzError(ValueError):
    """A .npz file, or one of its members, cannot be read safely."""


def _size_text(n: int) -> str:
    """``n`` bytes in words, with integer arithmetic (n may be far beyond a float)."""
    if n < 1024:
        return f"{n} bytes"
    for power, unit in enumerate(("KiB", "MiB", "GiB", "TiB", "PiB", "EiB"), 1):
        if n < 1024 ** (power + 1):
            return f"{n / 1024 ** power:.1f} {unit}"
    return "more than 1024 EiB"


def _shape_text(shape: tuple) -> str:
    dims = [str(d) if d < 1 << 64 else f"2**{d.bit_length() - 1}+" for d in shape]
    return f"({dims[0]},)" if len(dims) == 1 else f"({', '.join(dims)})"


def _check_entry(info: zipfile.ZipInfo) -> None:
    where = f"member '{info.filename}'"
    if info.flag_bits & 1:
        raise NpzError(f"the .npz {where} is encrypted")
    if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
        raise NpzError(f"the .npz {where} uses zip compression method {info.compress_type}; numpy writes only "
                       f"stored or deflated members")
    if info.compress_type == zipfile.ZIP_DEFLATED and \
            info.file_size > BOMB_ALLOWANCE + MAX_RATIO * info.compress_size:
        raise NpzError(f"the .npz {where} expands from {_size_text(info.compress_size)} to "
                       f"{_size_text(info.file_size)}, more than {MAX_RATIO} times (a deflate bomb?); refused")


def _read_header(f, where: str) -> tuple:
    try:
        version = npy.read_magic(f)
        if version == (1, 0):
            shape, fortran, dtype = npy.read_array_header_1_0(f, max_header_size=MAX_HEADER)
        elif version == (2, 0):
            shape, fortran, dtype = npy.read_array_header_2_0(f, max_header_size=MAX_HEADER)
        else:
            raise NpzError(f"the .npz {where} has .npy format version {version}; only 1.0 and 2.0 hold numbers")
    except NpzError:
        raise
    except (ValueError, TypeError, SyntaxError, EOFError) as e:
        raise NpzError(f"the .npz {where} has no readable .npy header: {e}") from None
    if dtype.hasobject:
        raise NpzError(f"the .npz {where} holds pickled Python objects (dtype {dtype}); only numbers are read")
    if dtype.kind not in "biuf" or dtype.subdtype is not None:
        raise NpzError(f"the .npz {where} has dtype {dtype}; only numbers (bool, int, uint, float) are read")
    if any(d < 0 for d in shape):
        raise NpzError(f"the .npz {where} declares the negative shape {_shape_text(shape)}")
    return shape, fortran, dtype


def _read_member(archive: zipfile.ZipFile, info: zipfile.ZipInfo) -> np.ndarray:
    where = f"member '{info.filename}'"
    with archive.open(info) as f:
        shape, fortran, dtype = _read_header(f, where)
        count = 1
        for d in shape:
            count *= d  # exact: no wraparound for huge dims
        nbytes = count * dtype.itemsize
        left = info.file_size - f.tell()
        if nbytes != left:
            raise NpzError(f"the .npz {where} declares shape {_shape_text(shape)} of {dtype} ({_size_text(nbytes)}) but holds "
                           f"{_size_text(max(left, 0))} of data: truncated or corrupt")
        array = np.empty(count, dtype)
        view = memoryview(array).cast("B")
        done = 0
        while done < nbytes:
            got = f.readinto(view[done:])
            if not got:
                raise NpzError(f"the .npz {where} is truncated: {done} of {nbytes} data bytes")
            done += got
        f.read(1)  # reaching the end checks the CRC
    if not dtype.isnative:
        array = array.astype(dtype.newbyteorder("="))
    return array.reshape(shape[::-1]).T if fortran else array.reshape(shape)


def load_npz(data: bytes, names: list) -> dict:
    """The arrays ``names`` (name -> array) of the .npz file ``data``; NpzError names the member that is wrong."""
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
        infos = archive.infolist()
    except (zipfile.BadZipFile, zipfile.LargeZipFile, ValueError, EOFError, OSError, NotImplementedError) as e:
        raise NpzError(f"the data file is not a readable .npz archive: {e}") from None
    seen = set()
    for info in infos:
        if info.filename in seen:
            raise NpzError(f"the .npz file has more than one member named {info.filename!r}")
        seen.add(info.filename)
    arrays = {i.filename[:-4]: i for i in infos if i.filename.endswith(".npy")}
    missing = [n for n in names if n not in arrays]
    if missing:
        raise NpzError(f"the .npz file needs arrays named {list(names)}; missing {missing} (it has {sorted(arrays)})")
    total = 0
    for name in names:
        _check_entry(arrays[name])
        total += arrays[name].file_size
    if total > MAX_BYTES:
        raise NpzError(f"the .npz arrays {list(names)} hold {_size_text(total)} uncompressed, more than the "
                       f"{_size_text(MAX_BYTES)} that onnxtrain reads from one file")
    out = {}
    for name in names:
        try:
            out[name] = _read_member(archive, arrays[name])
        except NpzError:
            raise
        except (zipfile.BadZipFile, zlib.error, EOFError, OSError, ValueError, NotImplementedError) as e:
            raise NpzError(f"the .npz member '{arrays[name].filename}' is corrupt: {e}") from None
    return out
