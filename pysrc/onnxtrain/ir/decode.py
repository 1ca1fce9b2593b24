"""ModelProto bytes -> the IR, with the field numbers of onnx.proto (onnx 1.16).

Decoding does not copy tensor payloads: raw_data (and packed float/double
data) become read-only numpy views of the input buffer when their offset is
aligned for the dtype (otherwise an aligned copy).  Callers copy before
mutating.  A bytearray passed in is not copied either, so it must not be
changed while the model is in use.

Decoding then encoding (encode.py) gives the same bytes: each decoded message keeps its
layout (model.py), so fields come back in the order read, repeated scalars
packed or not as they were, and fields this codec does not model verbatim
where they were (also an attribute's value fields of another type than its
own).  Not reproduced: a singular field given twice (the last value wins, as
in protobuf), a repeated scalar split over several packed runs (one run is
written), varints written with redundant bytes, and signalling NaNs in float
attributes (Python floats: they come back quiet).
"""
from __future__ import annotations

import math
import os

import numpy as np

from . import dtypes
from .encode import encode_entry, encode_opset, encode_type
from .errors import ModelDecodeError
from .model import (OPSET_DOMAIN_ABSENT, Attribute, AttrType, Function, Graph, MapType, Model, Node,
                    OptionalType, SequenceType, SparseTensorType, Tensor, TensorType, ValueInfo)
from .proto import FIELDS, TYPED_FIELD
from .wire import (FIXED32, FIXED64, LEN, VARINT, Reader, array_view, fixed32_to_float, read_packed_fixed,
                   read_packed_varints, read_string, to_signed64, varint_bytes)

EXTERNAL = 1  # TensorProto.DataLocation

# The first byte of every ModelProto field key (fields 20, 25, 26 take two bytes).
_MODEL_KEY_BYTES = {0x08, 0x12, 0x1A, 0x22, 0x28, 0x32, 0x3A, 0x42, 0x72, 0xA2, 0xCA, 0xD2}
MAX_DEPTH = 64  # nested graphs / types
# The AttributeProto field of each attribute type's value.
_VALUE_FIELD = {AttrType.FLOAT: 2, AttrType.INT: 3, AttrType.STRING: 4, AttrType.TENSOR: 5, AttrType.GRAPH: 6,
                AttrType.SPARSE_TENSOR: 22, AttrType.TYPE_PROTO: 14, AttrType.FLOATS: 7, AttrType.INTS: 8,
                AttrType.STRINGS: 9, AttrType.TENSORS: 10, AttrType.GRAPHS: 11, AttrType.SPARSE_TENSORS: 23,
                AttrType.TYPE_PROTOS: 15}
# The keys of a TypeProto.Tensor as this codec writes it, by (elem_type set, shape set).
_TENSOR_TYPE_KEYS = {(False, False): [], (True, False): [8], (False, True): [18], (True, True): [8, 18]}

# Decoding takes time and memory linear in the file's size.  The Python objects of the decoded messages
# may take at most OBJECT_BYTES_PER_FILE_BYTE times the file's size (plus 1 MiB); _COST is what one
# message of each kind takes at least on CPython 3.11 (tracemalloc).  Real models stay far below the
# limit (a node has a name, inputs and outputs); a file of a million empty messages does not.
# Tensor payloads are views of the input, or copies no larger than the bytes they come from.
OBJECT_BYTES_PER_FILE_BYTE = 100
_COST = {"GraphProto": 580, "FunctionProto": 600, "NodeProto": 350, "AttributeProto": 120, "ValueInfoProto": 140,
         "TypeProto": 60, "TensorProto": 390}


def _dims_text(dims: list) -> str:
    """dims for an error message, shortened when long."""
    return str(dims) if len(dims) <= 8 else f"[{', '.join(map(str, dims[:8]))}, ... ({len(dims)} dims)]"


class _Decoder:
    def __init__(self, data, base_dir):
        self.buf = memoryview(data).cast("B")
        self.base_dir = None if base_dir is None else os.fspath(base_dir)
        self.depth = 0
        self.budget = OBJECT_BYTES_PER_FILE_BYTE * len(self.buf) + (1 << 20)
        self.odd = False  # see verbatim()
        self.layouts = {}  # one tuple for each distinct layout: most messages of a kind share a few

    def layout(self, r: Reader) -> bytes | tuple:
        layout = r.layout()
        return self.layouts.setdefault(layout, layout)

    def reader(self, span, message) -> Reader:
        return Reader(self.buf, span[0], span[1], message, FIELDS[message])

    def s(self, span, message, field):
        return read_string(self.buf, span, f"{message}.{field}")

    def set_str(self, obj, attr, span, message):
        value = self.s(span, message, attr)
        setattr(obj, attr, value)
        if not value:
            obj.empty_fields |= {attr}

    def raw(self, span):
        return bytes(self.buf[span[0]:span[1]])

    def ints(self, wire, value, what, out: list):
        """A repeated int64 field, packed or not."""
        if wire == LEN:
            out.extend(read_packed_varints(self.buf, value, what).view(np.int64).tolist())
        elif wire == VARINT:
            out.append(to_signed64(value))
        else:
            raise ModelDecodeError(f"{what}: wrong wire type {wire} for an integer field")

    def charge(self, message):
        self.budget -= _COST[message]
        if self.budget < 0:
            raise ModelDecodeError(f"{message}: the file's messages decode into more than "
                                   f"{OBJECT_BYTES_PER_FILE_BYTE} times its {len(self.buf)} bytes of objects "
                                   f"(a flood of empty messages, not a real model)")

    def nest(self, message):
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise ModelDecodeError(f"{message}: nested more than {MAX_DEPTH} levels deep")

    # ---- messages -----------------------------------------------------------------------------

    def model(self, span) -> Model:
        m = Model(graph=None, ir_version=0, opset_imports={})
        r = self.reader(span, "ModelProto")
        for n, w, v in r.fields():
            if n == 1 and w == VARINT:
                m.ir_version = to_signed64(v)
                if not v:
                    m.empty_fields |= {"ir_version"}
            elif n == 2 and w == LEN:
                self.set_str(m, "producer_name", v, "ModelProto")
            elif n == 3 and w == LEN:
                self.set_str(m, "producer_version", v, "ModelProto")
            elif n == 4 and w == LEN:
                self.set_str(m, "domain", v, "ModelProto")
            elif n == 5 and w == VARINT:
                m.model_version = to_signed64(v)
                if not v:
                    m.empty_fields |= {"model_version"}
            elif n == 6 and w == LEN:
                self.set_str(m, "doc_string", v, "ModelProto")
            elif n == 7 and w == LEN:
                m.graph = self.graph(v)
            elif n == 8 and w == LEN:
                domain, version, has_domain = self.opset(v, r, omit_default_domain=True)
                m.opset_imports[domain] = version
                if not has_domain:
                    m.empty_fields |= {OPSET_DOMAIN_ABSENT}
            elif n == 14 and w == LEN:
                self.entry(v, m.metadata_props, r)
            elif n == 20 and w == LEN:
                m.training_info.append(self.raw(v))
            elif n == 25 and w == LEN:
                m.functions.append(self.function(v))
            elif n == 26 and w == LEN:
                m.configuration.append(self.raw(v))
            else:
                r.keep()
        m.layout = self.layout(r)
        if m.graph is None:
            raise ModelDecodeError("ModelProto has no graph (not an ONNX model?)")
        return m

    # Messages without an object of their own (types, shapes, opset and string entries) set ``odd``
    # when the codec's own encoding of what they hold would differ from their bytes (fields it does not
    # model, another order, a default value written out); the owning object's layout then keeps their
    # bytes, written back only while the value still encodes as it did (see wire.LayoutWriter).

    def verbatim(self, r: Reader, encoded: bytes) -> None:
        """The field ``r`` just read is an odd sub-message that encodes (today) as ``encoded``."""
        self.odd = False
        raw = bytes(self.buf[r.at:r.pos])
        if raw != varint_bytes(r.keys[-1]) + varint_bytes(len(encoded)) + encoded:
            r.keys[-1] = (r.keys[-1], encoded, raw)

    def opset(self, span, owner: Reader, omit_default_domain: bool = False):
        domain, version, has_domain = "", 0, False
        r = self.reader(span, "OperatorSetIdProto")
        for n, w, v in r.fields():
            if n == 1 and w == LEN:
                domain, has_domain = self.s(v, "OperatorSetIdProto", "domain"), True
            elif n == 2 and w == VARINT:
                version = to_signed64(v)
            else:
                self.odd = True
        if self.odd or r.keys != [10, 16]:
            self.verbatim(owner, encode_opset(domain, version, omit_default_domain and not has_domain).getvalue())
        return domain, version, has_domain

    def entry(self, span, into: dict, owner: Reader):
        key = value = ""
        r = self.reader(span, "StringStringEntryProto")
        for n, w, v in r.fields():
            if n == 1 and w == LEN:
                key = self.s(v, "StringStringEntryProto", "key")
            elif n == 2 and w == LEN:
                value = self.s(v, "StringStringEntryProto", "value")
            else:
                self.odd = True
        into[key] = value
        if self.odd or r.keys != [10, 18]:
            self.verbatim(owner, encode_entry(key, value).getvalue())

    def graph(self, span) -> Graph:
        self.charge("GraphProto")
        self.nest("GraphProto")
        g = Graph()
        r = self.reader(span, "GraphProto")
        for n, w, v in r.fields():
            if w != LEN:
                r.keep()
            elif n == 1:
                g.nodes.append(self.node(v))
            elif n == 2:
                self.set_str(g, "name", v, "GraphProto")
            elif n == 5:
                g.initializers.append(self.tensor(v))
            elif n == 10:
                self.set_str(g, "doc_string", v, "GraphProto")
            elif n == 11:
                g.inputs.append(self.value_info(v))
            elif n == 12:
                g.outputs.append(self.value_info(v))
            elif n == 13:
                g.value_info.append(self.value_info(v))
            elif n == 14:
                g.quantization_annotation.append(self.raw(v))
            elif n == 15:
                g.sparse_initializers.append(self.raw(v))
            elif n == 16:
                self.entry(v, g.metadata_props, r)
            else:
                r.keep()
        g.layout = self.layout(r)
        self.depth -= 1
        return g

    def node(self, span) -> Node:
        self.charge("NodeProto")
        M = "NodeProto"
        node = Node("", [], [])
        r = self.reader(span, M)
        for n, w, v in r.fields():
            if w != LEN:
                r.keep()
            elif n == 1:
                node.inputs.append(self.s(v, M, "input"))
            elif n == 2:
                node.outputs.append(self.s(v, M, "output"))
            elif n == 3:
                self.set_str(node, "name", v, M)
            elif n == 4:
                self.set_str(node, "op_type", v, M)
            elif n == 5:
                a = self.attribute(v)
                node.attributes[a.name] = a
            elif n == 6:
                self.set_str(node, "doc_string", v, M)
            elif n == 7:
                self.set_str(node, "domain", v, M)
            elif n == 8:
                self.set_str(node, "overload", v, M)
            elif n == 9:
                self.entry(v, node.metadata_props, r)
            else:
                r.keep()
        node.layout = self.layout(r)
        if not node.op_type:
            raise ModelDecodeError(f"{M} at offset {span[0]} has no op_type")
        return node

    def attribute(self, span) -> Attribute:
        self.charge("AttributeProto")
        M = "AttributeProto"
        a = Attribute("", AttrType.UNDEFINED)
        single = {}
        floats, ints, strings, tensors, graphs, sparse, types = [], [], [], [], [], [], []
        r = self.reader(span, M)
        for n, w, v in r.fields():
            if n == 1 and w == LEN:
                self.set_str(a, "name", v, M)
            elif n == 20 and w == VARINT:
                a.type = v
            elif n == 21 and w == LEN:
                self.set_str(a, "ref_attr_name", v, M)
            elif n == 13 and w == LEN:
                self.set_str(a, "doc_string", v, M)
            elif n == 2 and w == FIXED32:
                single[AttrType.FLOAT] = fixed32_to_float(v)
            elif n == 3 and w == VARINT:
                single[AttrType.INT] = to_signed64(v)
            elif n == 4 and w == LEN:
                single[AttrType.STRING] = self.raw(v)
            elif n == 5 and w == LEN:
                single[AttrType.TENSOR] = self.tensor(v)
            elif n == 6 and w == LEN:
                single[AttrType.GRAPH] = self.graph(v)
            elif n == 22 and w == LEN:
                single[AttrType.SPARSE_TENSOR] = self.raw(v)
            elif n == 14 and w == LEN:
                single[AttrType.TYPE_PROTO] = self.type_proto(v)
                if self.odd:
                    self.verbatim(r, encode_type(single[AttrType.TYPE_PROTO]).getvalue())
            elif n == 7 and w == LEN:
                floats.extend(read_packed_fixed(self.buf, v, "<f4", f"{M}.floats").tolist())
            elif n == 7 and w == FIXED32:
                floats.append(fixed32_to_float(v))
            elif n == 8:
                self.ints(w, v, f"{M}.ints", ints)
            elif n == 9 and w == LEN:
                strings.append(self.raw(v))
            elif n == 10 and w == LEN:
                tensors.append(self.tensor(v))
            elif n == 11 and w == LEN:
                graphs.append(self.graph(v))
            elif n == 23 and w == LEN:
                sparse.append(self.raw(v))
            elif n == 15 and w == LEN:
                types.append(self.type_proto(v))
                if self.odd:
                    self.verbatim(r, encode_type(types[-1]).getvalue())
            else:
                r.keep()
        a.layout = self.layout(r)
        plural = {AttrType.FLOATS: floats, AttrType.INTS: ints, AttrType.STRINGS: strings, AttrType.TENSORS: tensors,
                  AttrType.GRAPHS: graphs, AttrType.SPARSE_TENSORS: sparse, AttrType.TYPE_PROTOS: types}
        if a.type in plural:
            a.value = plural[a.type]
        elif a.type in single:
            a.value = single[a.type]
        elif a.type == AttrType.UNDEFINED and not a.ref_attr_name:
            raise ModelDecodeError(f"{M} '{a.name}' has no type")
        # else the value is absent (None): a function-body reference (ref_attr_name) to the caller's value
        if len(single) > (a.type in single) or len(floats) + len(ints) + len(strings) + len(tensors) + len(graphs) + \
                len(sparse) + len(types) != len(plural.get(a.type, ())):
            self.keep_stray_values(a, span, {t for t in single if t != a.type}
                                   | {t for t, v in plural.items() if v and t != a.type})
        return a

    def keep_stray_values(self, a: Attribute, span, kinds: set) -> None:
        """Keep verbatim the value fields of other types than the attribute's (which readers ignore), to be
        written back while the attribute has no value of that field (see wire.LayoutWriter)."""
        numbers = {_VALUE_FIELD[t] for t in kinds}
        layout = list(a.layout)
        r = self.reader(span, "AttributeProto")
        for i, (n, _, _) in enumerate(r.fields()):
            if n in numbers:
                layout[i] = (r.keys[-1], None, bytes(self.buf[r.at:r.pos]))
        a.layout = tuple(layout)

    def value_info(self, span) -> ValueInfo:
        self.charge("ValueInfoProto")
        M = "ValueInfoProto"
        vi = ValueInfo("")
        r = self.reader(span, M)
        for n, w, v in r.fields():
            if w != LEN:
                r.keep()
            elif n == 1:
                self.set_str(vi, "name", v, M)
            elif n == 2:
                vi.type = self.type_proto(v)
                if self.odd:
                    self.verbatim(r, encode_type(vi.type).getvalue())
            elif n == 3:
                self.set_str(vi, "doc_string", v, M)
            elif n == 4:
                self.entry(v, vi.metadata_props, r)
            else:
                r.keep()
        vi.layout = self.layout(r)
        return vi

    def type_proto(self, span):
        self.charge("TypeProto")
        """A TypeProto; one with no value case set becomes TensorType(elem_type=None)."""
        self.nest("TypeProto")
        result, denotation = None, ""
        r = self.reader(span, "TypeProto")
        for n, w, v in r.fields():
            if w != LEN:
                self.odd = True
            elif n == 1:
                result = self.tensor_type(v, TensorType, "TypeProto.Tensor")
            elif n == 8:
                result = self.tensor_type(v, SparseTensorType, "TypeProto.SparseTensor")
            elif n in (4, 9):
                M = "TypeProto.Sequence" if n == 4 else "TypeProto.Optional"
                elem = None
                r2 = self.reader(v, M)
                for n2, w2, v2 in r2.fields():
                    if n2 == 1 and w2 == LEN:
                        elem = self.type_proto(v2)
                    else:
                        self.odd = True
                if r2.keys != ([] if elem is None else [10]):
                    self.odd = True
                result = SequenceType(elem) if n == 4 else OptionalType(elem)
            elif n == 5:
                key, value = 0, None
                r2 = self.reader(v, "TypeProto.Map")
                for n2, w2, v2 in r2.fields():
                    if n2 == 1 and w2 == VARINT:
                        key = v2
                    elif n2 == 2 and w2 == LEN:
                        value = self.type_proto(v2)
                    else:
                        self.odd = True
                if r2.keys != ([8] if value is None else [8, 18]):
                    self.odd = True
                result = MapType(key, value)
            elif n == 6:
                denotation = self.s(v, "TypeProto", "denotation")
            else:
                self.odd = True
        if result is None:
            result = TensorType(None, None)
            if r.keys != ([50] if denotation else []):
                self.odd = True
        elif len(r.keys) != (2 if denotation else 1) or r.keys[-1] != 50 and denotation:
            self.odd = True  # (the value case is checked by the ``len``: any other field makes it longer)
        result.denotation = denotation
        self.depth -= 1
        return result

    def tensor_type(self, span, cls, message):
        t = cls(0, None)
        r = self.reader(span, message)
        for n, w, v in r.fields():
            if n == 1 and w == VARINT:
                t.elem_type = v
            elif n == 2 and w == LEN:
                t.shape, denotations = self.shape(v)
                if any(denotations):
                    if cls is TensorType:
                        t.dim_denotations = denotations
                    else:
                        self.odd = True
            else:
                self.odd = True
        if r.keys != _TENSOR_TYPE_KEYS[bool(t.elem_type), t.shape is not None]:
            self.odd = True  # another order, elem_type 0 written out, a field given twice
        return t

    def shape(self, span):
        dims, denotations = [], []
        r = self.reader(span, "TensorShapeProto")
        for n, w, v in r.fields():
            if n != 1 or w != LEN:
                self.odd = True
                continue
            dim, den = None, ""
            r2 = self.reader(v, "TensorShapeProto.Dimension")
            for n2, w2, v2 in r2.fields():
                if n2 == 1 and w2 == VARINT:
                    dim = to_signed64(v2)
                elif n2 == 2 and w2 == LEN:
                    dim = self.s(v2, "TensorShapeProto.Dimension", "dim_param")
                elif n2 == 3 and w2 == LEN:
                    den = self.s(v2, "TensorShapeProto.Dimension", "denotation")
                else:
                    self.odd = True
            keys = r2.keys
            if den:
                if len(keys) != (dim is not None) + 1 or keys[-1] != 26:
                    self.odd = True  # another order, or both dim_value and dim_param
            elif len(keys) != (dim is not None):
                self.odd = True  # an empty denotation written out, or both dim_value and dim_param
            dims.append(dim)
            denotations.append(den)
        return dims, denotations

    def tensor(self, span) -> Tensor:
        self.charge("TensorProto")
        M = "TensorProto"
        t = Tensor("", None, 0)
        dims, raw, strings, typed, external = [], None, [], {}, {}
        location = None
        r = self.reader(span, M)
        for n, w, v in r.fields():
            if n == 1:
                self.ints(w, v, f"{M}.dims", dims)
            elif n == 2 and w == VARINT:
                t.data_type = v
            elif n == 3:
                raise ModelDecodeError(f"{M}.segment: segmented tensors are not supported")
            elif n == 8 and w == LEN:
                self.set_str(t, "name", v, M)
            elif n == 12 and w == LEN:
                self.set_str(t, "doc_string", v, M)
            elif n == 9 and w == LEN:
                raw = v
            elif n == 6 and w == LEN:
                typed.setdefault(6, [])
                strings.append(self.raw(v))
            elif n == 4 and w == LEN:
                typed.setdefault(4, []).append(read_packed_fixed(self.buf, v, "<f4", f"{M}.float_data"))
            elif n == 4 and w == FIXED32:
                typed.setdefault(4, []).append(np.array([v], "<u4").view("<f4"))  # NaN bits kept
            elif n == 10 and w == LEN:
                typed.setdefault(10, []).append(read_packed_fixed(self.buf, v, "<f8", f"{M}.double_data"))
            elif n == 10 and w == FIXED64:
                typed.setdefault(10, []).append(np.array([v], "<u8").view("<f8"))
            elif n in (5, 7, 11) and w in (LEN, VARINT):
                what = f"{M}.{FIELDS[M][n]}"
                part = read_packed_varints(self.buf, v, what) if w == LEN else np.array([v], np.uint64)
                typed.setdefault(n, []).append(part)
            elif n == 13 and w == LEN:
                self.entry(v, external, r)
            elif n == 14 and w == VARINT:
                location = v
            elif n == 16 and w == LEN:
                self.entry(v, t.metadata_props, r)
            else:
                r.keep()
        t.layout = self.layout(r)
        label = f"{M} '{t.name}'"
        if any(d < 0 for d in dims):
            raise ModelDecodeError(f"{label}: negative dimension in dims {_dims_text(dims)}")
        if t.data_type not in TYPED_FIELD:
            raise ModelDecodeError(f"{label}: unknown data_type {t.data_type}")
        count = math.prod(dims)  # exact: no int64 wrap-around
        if count >= 1 << 63:
            raise ModelDecodeError(f"{label}: dims {_dims_text(dims)} declare 2**{count.bit_length() - 1} or more "
                                   f"values, more than any file can hold")
        dims_text = _dims_text(dims)
        if location == EXTERNAL:
            flat = self.external(label, external, t.data_type, count)
            t.external_data = dict(external)
            # what onnx.load leaves after reading external data: the data inline, data_location DEFAULT
            t.empty_fields |= {"data_location"}
        else:
            if location == 0:
                t.empty_fields |= {"data_location"}
            if raw is not None:
                flat = self.raw_values(label, raw, t.data_type, count)
                if raw[0] == raw[1]:
                    t.empty_fields |= {"raw_data"}
            else:
                flat = self.typed_values(label, t.data_type, typed, strings, count)
                t.typed_storage = bool(typed)
            if flat.size != count:
                raise ModelDecodeError(f"{label}: holds {flat.size} values, but dims {dims_text} need {count}")
        try:
            t.data = flat.reshape(dims)
        except ValueError as e:  # e.g. more dimensions than numpy supports
            raise ModelDecodeError(f"{label}: dims {dims_text}: {e}") from None
        return t

    def raw_values(self, label, span, data_type, count) -> np.ndarray:
        size = span[1] - span[0]
        if data_type == dtypes.STRING:
            raise ModelDecodeError(f"{label}: a string tensor cannot use raw_data")
        if size != dtypes.storage_size(data_type, count):
            raise ModelDecodeError(f"{label}: raw_data has {size} bytes, but {count} {dtypes.name(data_type)} values "
                                   f"need {dtypes.storage_size(data_type, count)}")
        if data_type in dtypes.PACKED_4BIT:
            return dtypes.unpack_4bit(np.frombuffer(self.buf, np.uint8, size, span[0]), count, data_type)
        return array_view(self.buf, span[0], count, dtypes.to_numpy(data_type))

    @staticmethod
    def typed_values(label, data_type, typed, strings, count) -> np.ndarray:
        expected = TYPED_FIELD[data_type]
        wrong = [FIELDS["TensorProto"][n] for n in typed if n != expected]
        if wrong:
            raise ModelDecodeError(f"{label}: a {dtypes.name(data_type)} tensor cannot hold {', '.join(wrong)}")
        dtype = dtypes.to_numpy(data_type)
        if expected == 6:
            values = np.empty(len(strings), dtype=object)
            values[:] = strings
            return values
        parts = typed.get(expected)
        if not parts:
            return np.zeros(0, dtype)
        values = parts[0] if len(parts) == 1 else np.concatenate(parts)
        if data_type in (dtypes.COMPLEX64, dtypes.COMPLEX128):
            if values.size % 2:
                raise ModelDecodeError(f"{label}: odd number of values for (real, imaginary) pairs")
            return values.view(dtype)
        if expected in (4, 10, 11):
            return values.astype(dtype, copy=False)
        # int32_data: sign-extended varints; float16/bfloat16/float8 hold their bit patterns in the low bits
        values = values.view(np.int64)
        if data_type in dtypes.PACKED_4BIT:
            n = count if values.size == dtypes.storage_size(data_type, count) else 2 * values.size
            return dtypes.unpack_4bit(values.astype(np.uint8), n, data_type)
        if data_type == dtypes.FLOAT16:
            return values.astype(np.uint16).view(dtype)
        return values.astype(dtype)

    def external(self, label, info, data_type, count) -> np.ndarray:
        location = info.get("location")
        if not location:
            raise ModelDecodeError(f"{label}: external data without a location")
        if self.base_dir is None:
            raise ModelDecodeError(f"{label} keeps its data in the external file '{location}': load the model from "
                                   f"its path (or pass base_dir), not from bytes")
        if data_type == dtypes.STRING:
            raise ModelDecodeError(f"{label}: a string tensor cannot use external data")
        if os.path.isabs(location) or os.path.normpath(location).split(os.sep)[0] == os.pardir:
            raise ModelDecodeError(f"{label}: external data location '{location}' is outside the model's folder")
        path = os.path.join(self.base_dir, location)
        size = dtypes.storage_size(data_type, count)
        try:
            offset = int(info.get("offset") or 0)
            length = int(info.get("length") or size)
        except ValueError:
            raise ModelDecodeError(f"{label}: external data offset/length are not integers: {info}") from None
        if offset < 0 or length != size:
            raise ModelDecodeError(f"{label}: external data offset {offset}, length {length}, but its dims need "
                                   f"{size} bytes")
        try:
            with open(path, "rb") as f:
                available = os.fstat(f.fileno()).st_size - offset
                if available < size:
                    raise ModelDecodeError(f"{label}: external data file {path} has only {max(available, 0)} bytes "
                                           f"at offset {offset}, {size} needed")
                f.seek(offset)
                data = f.read(size)
        except OSError as e:
            raise ModelDecodeError(f"{label}: cannot read external data file {path}: {e.strerror or e}") from None
        if len(data) != size:
            raise ModelDecodeError(f"{label}: external data file {path} ended early")
        if data_type in dtypes.PACKED_4BIT:
            return dtypes.unpack_4bit(np.frombuffer(data, np.uint8), count, data_type)
        return np.frombuffer(data, dtype=dtypes.to_numpy(data_type), count=count)

    def function(self, span) -> Function:
        self.charge("FunctionProto")
        M = "FunctionProto"
        f = Function("")
        r = self.reader(span, M)
        for n, w, v in r.fields():
            if w != LEN:
                r.keep()
            elif n == 1:
                self.set_str(f, "name", v, M)
            elif n == 4:
                f.inputs.append(self.s(v, M, "input"))
            elif n == 5:
                f.outputs.append(self.s(v, M, "output"))
            elif n == 6:
                f.attributes.append(self.s(v, M, "attribute"))
            elif n == 11:
                f.attribute_protos.append(self.attribute(v))
            elif n == 7:
                f.nodes.append(self.node(v))
            elif n == 8:
                self.set_str(f, "doc_string", v, M)
            elif n == 9:
                domain, version, _ = self.opset(v, r)
                f.opset_imports[domain] = version
            elif n == 10:
                self.set_str(f, "domain", v, M)
            elif n == 13:
                self.set_str(f, "overload", v, M)
            elif n == 12:
                f.value_info.append(self.value_info(v))
            elif n == 14:
                self.entry(v, f.metadata_props, r)
            else:
                r.keep()
        f.layout = self.layout(r)
        return f


def decode_model(data, base_dir: str | None = None) -> Model:
    """Decode ModelProto bytes (bytes, bytearray or memoryview); ``base_dir`` is the folder that
    external tensor data locations are relative to.  Raises ModelDecodeError on malformed input."""
    dec = _Decoder(data, base_dir)
    try:
        return dec.model((0, len(dec.buf)))
    except ModelDecodeError as e:
        if len(dec.buf) and dec.buf[0] in _MODEL_KEY_BYTES:
            raise
        head = bytes(dec.buf[:8]).hex(" ")
        raise ModelDecodeError(f"not an ONNX model (it starts with bytes {head}): {e}") from None
    except RecursionError:
        raise ModelDecodeError("ModelProto: nested too deeply") from None


def decode_tensor(data, base_dir: str | None = None) -> Tensor:
    """Decode TensorProto bytes (e.g. a test data file); see decode_model."""
    dec = _Decoder(data, base_dir)
    try:
        return dec.tensor((0, len(dec.buf)))
    except RecursionError:
        raise ModelDecodeError("TensorProto: nested too deeply") from None
