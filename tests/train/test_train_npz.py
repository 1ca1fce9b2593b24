"""Reading .npz data: numpy's own files read as np.load reads them; hostile ones refused by name, before any
large allocation."""
import io
import tracemalloc
import zipfile

import numpy as np
import pytest
from numpy.lib import format as npy

from onnxtrain.train.npz import MAX_BYTES, NpzError, load_npz

IN_PYODIDE = True  # pure numpy: also run inside Pyodide by tests/browser/test_in_pyodide.py


def npz(**arrays) -> bytes:
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    return buffer.getvalue()


def member(name: str, header: dict, data: bytes, compress=zipfile.ZIP_STORED, extra=()) -> bytes:
    """A zip with one .npy member made of ``header`` and ``data`` (and ``extra`` (name, bytes) members)."""
    head = io.BytesIO()
    npy.write_array_header_1_0(head, header)
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compress) as archive:
        archive.writestr(name, head.getvalue() + data)
        for other, content in extra:
            archive.writestr(other, content)
    return buffer.getvalue()


def peak_bytes(fn):
    tracemalloc.start()
    try:
        fn()
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    return peak


@pytest.mark.parametrize("compressed", [False, True])
def test_numpys_files_read_as_np_load_reads_them(compressed):
    rng = np.random.default_rng(0)
    arrays = {"x": rng.standard_normal((7, 3)).astype(np.float32), "labels": np.arange(7),
              "fortran": np.asfortranarray(rng.standard_normal((4, 5))), "big_endian": np.arange(6, dtype=">i4"),
              "flags": np.array([True, False]), "empty": np.zeros((0, 3), np.uint8), "scalar": np.float64(2.5)}
    buffer = io.BytesIO()
    (np.savez_compressed if compressed else np.savez)(buffer, **arrays)
    out = load_npz(buffer.getvalue(), list(arrays))
    reference = np.load(io.BytesIO(buffer.getvalue()))
    for name in arrays:
        assert out[name].shape == reference[name].shape and out[name].dtype == reference[name].dtype.newbyteorder("=")
        np.testing.assert_array_equal(out[name], reference[name])
    assert out["big_endian"].dtype.isnative


def test_a_huge_declared_shape_is_refused_before_allocating():
    data = member("x.npy", {"descr": "<f4", "fortran_order": False, "shape": (2 ** 40, 4)}, b"\0" * 64)
    with pytest.raises(NpzError, match=r"member 'x.npy' declares shape \(1099511627776, 4\) of float32 \(16.0 TiB\) "
                                       r"but holds 64 bytes of data: truncated or corrupt"):
        load_npz(data, ["x"])
    huge = member("x.npy", {"descr": "<f8", "fortran_order": False, "shape": (10 ** 2000, 10 ** 2000)}, b"")
    with pytest.raises(NpzError, match="member 'x.npy' declares shape"):
        load_npz(huge, ["x"])
    assert peak_bytes(lambda: pytest.raises(NpzError, load_npz, data, ["x"])) < 1 << 20


def test_a_truncated_member_is_named():
    data = member("labels.npy", {"descr": "<i8", "fortran_order": False, "shape": (10,)}, b"\1" * 72)
    with pytest.raises(NpzError, match=r"member 'labels.npy' declares shape \(10,\) of int64 \(80 bytes\) but holds "
                                       r"72 bytes"):
        load_npz(data, ["labels"])
    with pytest.raises(NpzError, match="member 'labels.npy' has no readable .npy header"):
        load_npz(_raw_member("labels.npy", b"\x93NUMPY\x01\x00\xff"), ["labels"])


def _raw_member(name, content, compress=zipfile.ZIP_STORED):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compress) as archive:
        archive.writestr(name, content)
    return buffer.getvalue()


def test_a_corrupt_member_fails_its_crc_check():
    data = bytearray(npz(x=np.arange(100, dtype=np.float32)))
    offset = data.index(np.arange(100, dtype=np.float32)[50:52].tobytes())
    data[offset] ^= 0xFF
    with pytest.raises(NpzError, match="member 'x.npy' is corrupt: Bad CRC-32"):
        load_npz(bytes(data), ["x"])


def test_pickled_members_are_refused():
    buffer = io.BytesIO()
    np.savez(buffer, x=np.array([{"a": 1}, None], dtype=object))
    with pytest.raises(NpzError, match=r"member 'x.npy' holds pickled Python objects \(dtype object\)"):
        load_npz(buffer.getvalue(), ["x"])
    with pytest.raises(NpzError, match=r"member 's.npy' has dtype <U3; only numbers"):
        load_npz(npz(s=np.array(["abc"])), ["s"])


def test_a_deflate_bomb_is_refused_from_the_zip_directory():
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        with archive.open("x.npy", "w", force_zip64=True) as f:
            head = io.BytesIO()
            npy.write_array_header_1_0(head, {"descr": "<f4", "fortran_order": False, "shape": (64 << 18,)})
            f.write(head.getvalue())
            zeros = bytes(1 << 20)
            for _ in range(64):
                f.write(zeros)
    data = buffer.getvalue()
    assert len(data) < 1 << 20
    with pytest.raises(NpzError, match=r"member 'x.npy' expands from 6\d.\d KiB to 64.0 MiB, more than 200 times "
                                       r"\(a deflate bomb\?\); refused"):
        load_npz(data, ["x"])
    assert peak_bytes(lambda: pytest.raises(NpzError, load_npz, data, ["x"])) < 1 << 20


def test_a_directory_that_understates_a_member_reads_no_more_than_it_states():
    data = bytearray(npz(x=np.zeros(1000, np.float32)))
    # the central directory's uncompressed size of x.npy: 4128 bytes; say 200
    central = data.index(b"PK\x01\x02")
    size = int.from_bytes(data[central + 24:central + 28], "little")
    data[central + 24:central + 28] = (200).to_bytes(4, "little")
    with pytest.raises(NpzError, match="member 'x.npy'"):
        load_npz(bytes(data), ["x"])
    assert size == 4128


def test_the_total_is_capped():
    """Two stored members whose directory entries claim 600 MiB each: refused from the directory alone."""
    claimed = 600 << 20
    data = bytearray(member("x.npy", {"descr": "<f4", "fortran_order": False, "shape": (claimed // 4,)}, b"",
                            extra=[("labels.npy", b"")]))
    for _ in range(2):
        central = data.index(b"PK\x01\x02", data.index(b"PK\x01\x02") + 1 if _ else 0)
        data[central + 20:central + 28] = claimed.to_bytes(4, "little") * 2  # compressed and uncompressed size
    with pytest.raises(NpzError, match=r"the .npz arrays \['x', 'labels'\] hold 1.2 GiB uncompressed, more than the "
                                       r"1.0 GiB that onnxtrain reads from one file"):
        load_npz(bytes(data), ["x", "labels"])
    assert MAX_BYTES == 1 << 30


def test_archives_that_are_not_npz_files():
    with pytest.raises(NpzError, match="the data file is not a readable .npz archive"):
        load_npz(b"PK\x03\x04 not really", ["x"])
    with pytest.raises(NpzError, match=r"needs arrays named \['x', 'y'\]; missing \['y'\] \(it has \['x'\]\)"):
        load_npz(npz(x=np.zeros(2)), ["x", "y"])
    twice = io.BytesIO()
    with zipfile.ZipFile(twice, "w") as archive:
        archive.writestr("x.npy", b"a")
        with pytest.warns(UserWarning, match="Duplicate name"):
            archive.writestr("x.npy", b"b")
    with pytest.raises(NpzError, match="more than one member named 'x.npy'"):
        load_npz(twice.getvalue(), ["x"])
