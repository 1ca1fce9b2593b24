"""The protobuf wire layer and the dtype table, checked against what the onnx package serializes."""
import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from onnxtrain.ir import ModelDecodeError, dtypes
from onnxtrain.ir.wire import (FIXED32, FIXED64, LEN, VARINT, LayoutWriter, Reader, Writer, array_view,
                               encode_varints, read_packed_fixed, read_packed_varints, read_string, varint_bytes)

INT64_EDGES = [0, 1, 127, 128, 300, 16383, 16384, 2**31 - 1, 2**31, 2**32, 2**62 + 5, 2**63 - 1, -1, -2, -300,
               -2**31, -2**63]


def fields_of(data: bytes, message="M", names=None):
    buf = memoryview(data)
    return list(Reader(buf, 0, len(buf), message, names).fields())


def packed_payload(proto, number):
    """The payload of the (single) LEN field ``number`` of a serialized message."""
    data = proto.SerializeToString()
    [(start, end)] = [v for n, w, v in fields_of(data) if n == number and w == LEN]
    return data, start, end


def test_packed_varints_match_protobuf():
    tensor = helper.make_tensor("t", TensorProto.INT64, [len(INT64_EDGES)], INT64_EDGES)
    data, start, end = packed_payload(tensor, 7)  # int64_data [packed = true]
    assert encode_varints(np.array(INT64_EDGES, np.int64)) == data[start:end]
    decoded = read_packed_varints(memoryview(data), (start, end), "TensorProto.int64_data")
    assert decoded.dtype == np.uint64 and decoded.view(np.int64).tolist() == INT64_EDGES
    assert b"".join(varint_bytes(v) for v in INT64_EDGES) == data[start:end]


def test_uint64_varints_match_protobuf():
    values = [0, 1, 2**63, 2**64 - 1, 12345678901234]
    tensor = helper.make_tensor("t", TensorProto.UINT64, [len(values)], values)
    data, start, end = packed_payload(tensor, 11)  # uint64_data
    assert encode_varints(np.array(values, np.uint64)) == data[start:end]
    assert read_packed_varints(memoryview(data), (start, end), "x").tolist() == values


def test_one_byte_and_empty_packed_varints():
    buf = memoryview(bytes([5, 0, 127, 1]))
    assert read_packed_varints(buf, (0, 4), "x").tolist() == [5, 0, 127, 1]
    assert read_packed_varints(buf, (4, 4), "x").tolist() == []
    assert encode_varints(np.zeros(0, np.int64)) == b""


def test_fields_of_an_onnx_message():
    node = helper.make_node("Relu", ["x"], ["y"], name="r", alpha=0.5, axis=-3)
    data = node.SerializeToString()
    got = fields_of(data, "NodeProto")
    assert [(n, w) for n, w, _ in got] == [(1, LEN), (2, LEN), (3, LEN), (4, LEN), (5, LEN), (5, LEN)]
    assert [bytes(data[s:e]) for n, w, (s, e) in got[:4]] == [b"x", b"y", b"r", b"Relu"]
    attr = node.attribute[1].SerializeToString()  # axis: name, i = -3 (10-byte varint), type INT
    assert [(n, w, v) for n, w, v in fields_of(attr)][1:] == [(3, VARINT, 2**64 - 3), (20, VARINT, 2)]


def test_writer_output_parses_in_onnx():
    w = Writer()
    w.packed_varints(1, [2, 3])
    w.varint(2, TensorProto.FLOAT)
    w.string(8, "wé")
    w.packed_fixed(4, np.arange(6, dtype=np.float32), "<f4")
    t = TensorProto()
    t.ParseFromString(w.getvalue())
    assert list(t.dims) == [2, 3] and t.name == "wé"
    np.testing.assert_array_equal(numpy_helper.to_array(t), np.arange(6, dtype=np.float32).reshape(2, 3))
    a = Writer()
    a.string(1, "alpha")
    a.float32(2, 0.25)
    a.varint(20, onnx.AttributeProto.FLOAT)
    attr = onnx.AttributeProto()
    attr.ParseFromString(a.getvalue())
    assert attr == helper.make_attribute("alpha", 0.25)


def test_unknown_wire_types_are_skipped_with_their_payloads():
    data = (varint_bytes(99 << 3 | VARINT) + varint_bytes(2**40)
            + varint_bytes(98 << 3 | FIXED64) + bytes(8)
            + varint_bytes(97 << 3 | FIXED32) + bytes([1, 0, 0, 0])
            + varint_bytes(96 << 3 | LEN) + varint_bytes(3) + b"abc")
    # every key takes two bytes
    assert fields_of(data) == [(99, VARINT, 2**40), (98, FIXED64, 0), (97, FIXED32, 1), (96, LEN, (27, 30))]


# ---- layouts ------------------------------------------------------------------------------------

def key(number, wire):
    return number << 3 | wire


def test_reader_records_the_keys_and_keeps_fields_verbatim():
    unknown = varint_bytes(key(99, VARINT)) + varint_bytes(300)
    data = bytes([key(2, LEN), 1]) + b"y" + unknown + bytes([key(1, LEN), 1]) + b"x"
    r = Reader(memoryview(data), 0, len(data), "M")
    for n, w, v in r.fields():
        if n == 99:
            r.keep()
    assert r.layout() == (key(2, LEN), unknown, key(1, LEN))
    known = bytes([key(2, LEN), 1]) + b"y" + bytes([key(1, LEN), 1]) + b"x"
    r = Reader(memoryview(known), 0, len(known), "M")
    list(r.fields())
    assert r.layout() == bytes([key(2, LEN), key(1, LEN)])  # every key in one byte: the compact form


def test_layout_writer_follows_the_layout():
    unknown = varint_bytes(key(99, VARINT)) + varint_bytes(5)
    layout = (key(2, LEN), key(1, LEN), unknown, key(1, LEN), key(4, VARINT))
    w = LayoutWriter(layout)
    for name in ("a", "b", "c"):  # one value more than the layout has: it follows the last one
        w.string(1, name)
    w.string(2, "out")
    w.varint(3, 7)                # not in the layout: at the end
    # field 4 is in the layout but not written now: nothing of it comes back
    plain = Writer()
    for number, text in ((2, "out"), (1, "a")):
        plain.string(number, text)
    expected = plain.getvalue() + unknown
    for number, text in ((1, "b"), (1, "c")):
        tail = Writer()
        tail.string(number, text)
        expected += tail.getvalue()
    assert w.getvalue() == expected + varint_bytes(key(3, VARINT)) + varint_bytes(7)


def test_layout_writer_writes_the_same_fields_in_the_same_order_as_it_read():
    data = (varint_bytes(key(8, LEN)) + bytes([1]) + b"n" + varint_bytes(key(1, VARINT)) + varint_bytes(3)
            + varint_bytes(key(2, VARINT)) + varint_bytes(1) + varint_bytes(key(1, VARINT)) + varint_bytes(2))
    r = Reader(memoryview(data), 0, len(data), "TensorProto")
    list(r.fields())
    w = LayoutWriter(r.layout())
    w.packed_varints(1, [3, 2])  # dims, unpacked as read, and each where it was
    w.varint(2, 1)
    w.string(8, "n")
    assert w.getvalue() == data
    t = TensorProto.FromString(data)
    assert list(t.dims) == [3, 2] and t.name == "n"


@pytest.mark.parametrize("values", [[1, -2, 300], []])
def test_layout_writer_packs_as_the_layout_did(values):
    unpacked = LayoutWriter((key(8, VARINT),))
    unpacked.packed_varints(8, values)
    assert unpacked.getvalue() == b"".join(varint_bytes(key(8, VARINT)) + varint_bytes(v) for v in values)
    packed = LayoutWriter((key(8, LEN),))
    packed.packed_varints(8, values)  # an empty packed field that was there is written again
    assert packed.getvalue() == varint_bytes(key(8, LEN)) + varint_bytes(len(encode_varints(values))) + \
        encode_varints(values)
    floats = np.array(values, np.float32)
    for dtype, wire in (("<f4", FIXED32), ("<f8", FIXED64)):
        w = LayoutWriter((key(7, wire),))
        w.packed_fixed(7, floats, dtype)
        assert w.getvalue() == b"".join(varint_bytes(key(7, wire)) + np.array([v], dtype).tobytes() for v in floats)
    if values:
        attr = onnx.AttributeProto.FromString(unpacked.getvalue() + packed.getvalue())
        assert list(attr.ints) == values * 2


def test_layout_writer_writes_a_kept_sub_message_only_while_it_is_unchanged():
    raw = varint_bytes(key(2, LEN)) + bytes([4]) + varint_bytes(key(9, VARINT)) + bytes([1]) + b"\x10\x01"
    layout = ((key(2, LEN), b"\x10\x01", raw),)  # read as raw, would be written as b"\x10\x01"
    same = LayoutWriter(layout)
    same.bytes_(2, b"\x10\x01")
    assert same.getvalue() == raw
    changed = LayoutWriter(layout)
    changed.bytes_(2, b"\x10\x02")
    assert changed.getvalue() == varint_bytes(key(2, LEN)) + bytes([2]) + b"\x10\x02"


# ---- malformed input ---------------------------------------------------------------------------

def test_lying_length_names_message_field_and_offset():
    data = bytes([8 << 3 | 2, 5]) + b"name!" + bytes([9 << 3 | 2]) + varint_bytes(1_000_000) + bytes(12)
    with pytest.raises(ModelDecodeError) as e:
        fields_of(data, "TensorProto", {8: "name", 9: "raw_data"})
    assert str(e.value) == "TensorProto.raw_data: length 1000000 exceeds the 12 bytes left at offset 11"


def test_length_of_2_to_the_40_does_not_allocate():
    data = bytes([7 << 3 | 2]) + varint_bytes(2**40)
    with pytest.raises(ModelDecodeError, match=f"length {2**40} exceeds the 0 bytes left"):
        fields_of(data, "ModelProto")


@pytest.mark.parametrize("data, message", [
    (bytes([0x08]), "M.<field 1>: truncated varint at offset 1"),
    (bytes([0x08, 0x80]), "M.<field 1>: truncated varint at offset 2"),
    (bytes([0x88]), "M: field key: truncated varint at offset 1"),
    (bytes([0x08]) + bytes([0xFF] * 10) + bytes([1]), "varint longer than 10 bytes"),
    (bytes([0x0D, 1, 2]), "M.<field 1>: 4-byte value truncated at offset 1"),
    (bytes([0x09]) + bytes(7), "M.<field 1>: 8-byte value truncated at offset 1"),
    (bytes([0x0B]), "M.<field 1>: unsupported wire type start-group at offset 0"),
    (bytes([0x0C]), "unsupported wire type end-group"),
    (bytes([0x0E]), "unsupported wire type invalid \\(6\\)"),
    (bytes([0x00, 0x01]), "M: field number 0 at offset 0"),
])
def test_malformed_fields(data, message):
    with pytest.raises(ModelDecodeError, match=message):
        fields_of(data)


def test_malformed_packed_fields_and_strings():
    with pytest.raises(ModelDecodeError, match="T.int64_data: truncated varint at the end"):
        read_packed_varints(memoryview(bytes([1, 0x80])), (0, 2), "T.int64_data")
    with pytest.raises(ModelDecodeError, match="T.ints: varint longer than 10 bytes at offset 1"):
        read_packed_varints(memoryview(bytes([1] + [0x80] * 10 + [1])), (0, 12), "T.ints")
    with pytest.raises(ModelDecodeError, match="T.float_data: packed length 7 is not a multiple of 4"):
        read_packed_fixed(memoryview(bytes(7)), (0, 7), "<f4", "T.float_data")
    with pytest.raises(ModelDecodeError, match="N.name: not valid UTF-8 at offset 2"):
        read_string(memoryview(b"ab\xffc"), (1, 4), "N.name")


def test_array_view_is_a_read_only_view_when_aligned_and_a_copy_otherwise():
    buf = bytearray(np.arange(5, dtype="<f4").tobytes())
    view = array_view(memoryview(buf), 4, 3, np.dtype("<f4"))
    assert np.shares_memory(view, np.frombuffer(buf, np.uint8)) and not view.flags.writeable
    np.testing.assert_array_equal(view, [1, 2, 3])
    unaligned = bytes(1) + bytes(buf)
    copy = array_view(memoryview(unaligned), 5, 3, np.dtype("<f4"))
    assert copy.flags.aligned and copy.flags.writeable
    np.testing.assert_array_equal(copy, [1, 2, 3])


# ---- dtypes ---------------------------------------------------------------------------------------

def test_dtype_codes_match_onnx():
    for code in range(1, 23):
        if code == dtypes.STRING:
            continue
        assert dtypes.name(code) == TensorProto.DataType.Name(code).lower()
        onnx_dtype = helper.tensor_dtype_to_np_dtype(code)
        if code not in (dtypes.BFLOAT16,) and code < dtypes.FLOAT8E4M3FN:
            assert dtypes.to_numpy(code) == onnx_dtype
            assert dtypes.from_numpy(onnx_dtype) == code
    assert dtypes.from_numpy(np.dtype(">f4")) == dtypes.FLOAT
    with pytest.raises(ValueError, match="unknown ONNX tensor data type 99"):
        dtypes.to_numpy(99)
    with pytest.raises(ValueError, match="has no ONNX tensor data type"):
        dtypes.from_numpy(np.dtype("datetime64[s]"))


@pytest.mark.parametrize("count", [0, 1, 2, 7, 8])
def test_4bit_packing_matches_onnx(count):
    values = np.random.default_rng(count).integers(-8, 8, count)
    packed = helper.pack_float32_to_4bit(values.astype(np.float32), signed=True).astype(np.uint8)
    np.testing.assert_array_equal(dtypes.pack_4bit(values.astype(np.uint8)), packed)
    np.testing.assert_array_equal(dtypes.unpack_4bit(packed, count), values.astype(np.uint8) & 0x0F)
    assert dtypes.storage_size(dtypes.INT4, count) == packed.size
