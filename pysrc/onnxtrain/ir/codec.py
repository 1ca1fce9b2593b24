"""ModelProto bytes <-> the IR, field numbers as in onnx.proto (onnx 1.16).

Decoded raw_data arrays are read-only views of the input bytes when the
alignment allows; callers copy before writing into them.
"""
from __future__ import annotations

import os

import numpy as np

from . import dtypes
from .errors import ModelDecodeError
from .model import (Attribute, AttrType, Function, Graph, MapType, Model, Node, OptionalType, SequenceType,
                    SparseTensorType, Tensor, TensorType, ValueInfo)
from .wire import (FIXED32, LEN, VARINT, Reader, Writer, fixed32_to_float, read_packed_fixed,
                   read_packed_varints, read_string, to_signed64)

EXTERNAL = 1
OPSET_DOMAIN_ABSENT = "opset_imports[''].domain absent"  # recorded in Model.empty_fields


class _Decoder:
    def __init__(self, data, base_dir):
        self.buf = memoryview(data).cast("B") if not isinstance(data, memoryview) else data.cast("B")
        self.base_dir = base_dir
        self.depth = 0

    def s(self, span, message, field):
        return read_string(self.buf, span, message, field)

    def set_str(self, obj, attr, span, message):
        value = read_string(self.buf, span, message, attr)
        setattr(obj, attr, value)
        if not value:
            obj.empty_fields.add(attr)

    def raw(self, span):
        return bytes(self.buf[span[0]:span[1]])

    def _ints(self, wire, value, message, field, out):
        if wire == LEN:
            out.extend(read_packed_varints(self.buf, value, message, field))
        elif wire == VARINT:
            out.append(to_signed64(value))
        else:
            raise ModelDecodeError(f"{message}.{field}: wrong wire type {wire}")

    def _enter(self, message):
        self.depth += 1
        if self.depth > 64:
            raise ModelDecodeError(f"{message}: nesting deeper than 64 levels")

    # ---- messages -----------------------------------------------------------------------------

    def model(self, span) -> Model:
        m = Model(graph=None, ir_version=0, opset_imports={})
        for n, w, v in Reader(self.buf, span[0], span[1], "ModelProto").fields():
            if n == 1 and w == VARINT:
                m.ir_version = to_signed64(v)
            elif n == 2 and w == LEN:
                self.set_str(m, "producer_name", v, "ModelProto")
            elif n == 3 and w == LEN:
                self.set_str(m, "producer_version", v, "ModelProto")
            elif n == 4 and w == LEN:
                self.set_str(m, "domain", v, "ModelProto")
            elif n == 5 and w == VARINT:
                m.model_version = to_signed64(v)
            elif n == 6 and w == LEN:
                self.set_str(m, "doc_string", v, "ModelProto")
            elif n == 7 and w == LEN:
                m.graph = self.graph(v)
            elif n == 8 and w == LEN:
                domain, version, has_domain = self.opset(v)
                m.opset_imports[domain] = version
                if not has_domain:
                    m.empty_fields.add(OPSET_DOMAIN_ABSENT)
            elif n == 14 and w == LEN:
                self.entry(v, m.metadata_props, "ModelProto.metadata_props")
            elif n == 20 and w == LEN:
                m.training_info.append(self.raw(v))
            elif n == 25 and w == LEN:
                m.functions.append(self.function(v))
            elif n == 26 and w == LEN:
                m.configuration.append(self.raw(v))
        if m.graph is None:
            raise ModelDecodeError("ModelProto has no graph (not an ONNX model?)")
        return m

    def opset(self, span):
        domain, version, has_domain = "", 0, False
        for n, w, v in Reader(self.buf, span[0], span[1], "OperatorSetIdProto").fields():
            if n == 1 and w == LEN:
                domain, has_domain = self.s(v, "OperatorSetIdProto", "domain"), True
            elif n == 2 and w == VARINT:
                version = to_signed64(v)
        return domain, version, has_domain

    def entry(self, span, into: dict, message: str):
        key = value = ""
        for n, w, v in Reader(self.buf, span[0], span[1], message).fields():
            if n == 1 and w == LEN:
                key = self.s(v, message, "key")
            elif n == 2 and w == LEN:
                value = self.s(v, message, "value")
        into[key] = value

    def graph(self, span) -> Graph:
        self._enter("GraphProto")
        g = Graph()
        for n, w, v in Reader(self.buf, span[0], span[1], "GraphProto").fields():
            if w != LEN:
                continue
            if n == 1:
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
                self.entry(v, g.metadata_props, "GraphProto.metadata_props")
        self.depth -= 1
        return g

    def node(self, span) -> Node:
        node = Node("", [], [])
        for n, w, v in Reader(self.buf, span[0], span[1], "NodeProto").fields():
            if w != LEN:
                continue
            if n == 1:
                node.inputs.append(self.s(v, "NodeProto", "input"))
            elif n == 2:
                node.outputs.append(self.s(v, "NodeProto", "output"))
            elif n == 3:
                self.set_str(node, "name", v, "NodeProto")
            elif n == 4:
                self.set_str(node, "op_type", v, "NodeProto")
            elif n == 5:
                a = self.attribute(v)
                node.attributes[a.name] = a
            elif n == 6:
                self.set_str(node, "doc_string", v, "NodeProto")
            elif n == 7:
                self.set_str(node, "domain", v, "NodeProto")
            elif n == 8:
                self.set_str(node, "overload", v, "NodeProto")
            elif n == 9:
                self.entry(v, node.metadata_props, "NodeProto.metadata_props")
        return node

    def attribute(self, span) -> Attribute:
        M = "AttributeProto"
        a = Attribute("", AttrType.UNDEFINED)
        single = {}
        floats, ints, strings, tensors, graphs, sparse, types = [], [], [], [], [], [], []
        for n, w, v in Reader(self.buf, span[0], span[1], M).fields():
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
            elif n == 7:
                if w == LEN:
                    floats.extend(float(x) for x in read_packed_fixed(self.buf, v, "<f4", M, "floats"))
                elif w == FIXED32:
                    floats.append(fixed32_to_float(v))
            elif n == 8:
                self._ints(w, v, M, "ints", ints)
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
        plural = {AttrType.FLOATS: floats, AttrType.INTS: ints, AttrType.STRINGS: strings, AttrType.TENSORS: tensors,
                  AttrType.GRAPHS: graphs, AttrType.SPARSE_TENSORS: sparse, AttrType.TYPE_PROTOS: types}
        if a.type in plural:
            a.value = plural[a.type]
        elif a.type in single:
            a.value = single[a.type]
        elif a.type == AttrType.UNDEFINED and not a.ref_attr_name:
            raise ModelDecodeError(f"AttributeProto '{a.name}' has no type")
        else:
            a.value = {AttrType.FLOAT: 0.0, AttrType.INT: 0, AttrType.STRING: b""}.get(a.type)
        return a

    def value_info(self, span) -> ValueInfo:
        vi = ValueInfo("")
        for n, w, v in Reader(self.buf, span[0], span[1], "ValueInfoProto").fields():
            if w != LEN:
                continue
            if n == 1:
                self.set_str(vi, "name", v, "ValueInfoProto")
            elif n == 2:
                vi.type = self.type_proto(v)
            elif n == 3:
                self.set_str(vi, "doc_string", v, "ValueInfoProto")
            elif n == 4:
                self.entry(v, vi.metadata_props, "ValueInfoProto.metadata_props")
        return vi

    def type_proto(self, span):
        self._enter("TypeProto")
        result, denotation = None, ""
        for n, w, v in Reader(self.buf, span[0], span[1], "TypeProto").fields():
            if w != LEN:
                continue
            if n == 1:
                result = self.tensor_type(v, TensorType)
            elif n == 8:
                result = self.tensor_type(v, SparseTensorType)
            elif n in (4, 9):
                elem = None
                for n2, w2, v2 in Reader(self.buf, v[0], v[1], "TypeProto.Sequence").fields():
                    if n2 == 1 and w2 == LEN:
                        elem = self.type_proto(v2)
                result = SequenceType(elem) if n == 4 else OptionalType(elem)
            elif n == 5:
                key, value = 0, None
                for n2, w2, v2 in Reader(self.buf, v[0], v[1], "TypeProto.Map").fields():
                    if n2 == 1 and w2 == VARINT:
                        key = v2
                    elif n2 == 2 and w2 == LEN:
                        value = self.type_proto(v2)
                result = MapType(key, value)
            elif n == 6:
                denotation = self.s(v, "TypeProto", "denotation")
        if result is None:
            result = TensorType(0, None)
            result.elem_type = None  # a TypeProto with no value case set
        result.denotation = denotation
        self.depth -= 1
        return result

    def tensor_type(self, span, cls):
        t = cls(0, None)
        for n, w, v in Reader(self.buf, span[0], span[1], "TypeProto.Tensor").fields():
            if n == 1 and w == VARINT:
                t.elem_type = v
            elif n == 2 and w == LEN:
                t.shape, denotations = self.shape(v)
                if cls is TensorType and any(denotations):
                    t.dim_denotations = denotations
        return t

    def shape(self, span):
        dims, denotations = [], []
        for n, w, v in Reader(self.buf, span[0], span[1], "TensorShapeProto").fields():
            if n != 1 or w != LEN:
                continue
            dim, den = None, ""
            for n2, w2, v2 in Reader(self.buf, v[0], v[1], "TensorShapeProto.Dimension").fields():
                if n2 == 1 and w2 == VARINT:
                    dim = to_signed64(v2)
                elif n2 == 2 and w2 == LEN:
                    dim = self.s(v2, "TensorShapeProto.Dimension", "dim_param")
                elif n2 == 3 and w2 == LEN:
                    den = self.s(v2, "TensorShapeProto.Dimension", "denotation")
            dims.append(dim)
            denotations.append(den)
        return dims, denotations

    def tensor(self, span) -> Tensor:
        M = "TensorProto"
        dims, data_type, name, doc = [], 0, "", ""
        name_present = doc_present = False
        raw = None
        typed = {}
        strings = []
        external, location = {}, 0
        metadata = {}
        for n, w, v in Reader(self.buf, span[0], span[1], M).fields():
            if n == 1:
                self._ints(w, v, M, "dims", dims)
            elif n == 2 and w == VARINT:
                data_type = v
            elif n == 3:
                raise ModelDecodeError(f"{M}.segment: segmented tensors are not supported")
            elif n == 8 and w == LEN:
                name, name_present = self.s(v, M, "name"), True
            elif n == 12 and w == LEN:
                doc, doc_present = self.s(v, M, "doc_string"), True
            elif n == 9 and w == LEN:
                raw = v
            elif n == 6 and w == LEN:
                strings.append(self.raw(v))
            elif n == 4:
                part = typed.setdefault(4, [])
                if w == LEN:
                    part.append(read_packed_fixed(self.buf, v, "<f4", M, "float_data"))
                elif w == FIXED32:
                    part.append(np.array([fixed32_to_float(v)], "<f4"))
            elif n == 10:
                part = typed.setdefault(10, [])
                if w == LEN:
                    part.append(read_packed_fixed(self.buf, v, "<f8", M, "double_data"))
                else:
                    part.append(np.frombuffer(v.to_bytes(8, "little"), "<f8"))
            elif n in (5, 7, 11):
                vals = []
                self._ints(w, v, M, {5: "int32_data", 7: "int64_data", 11: "uint64_data"}[n], vals)
                typed.setdefault(n, []).append(vals)
            elif n == 13 and w == LEN:
                self.entry(v, external, f"{M}.external_data")
            elif n == 14 and w == VARINT:
                location = v
            elif n == 16 and w == LEN:
                self.entry(v, metadata, f"{M}.metadata_props")
        if any(d < 0 for d in dims):
            raise ModelDecodeError(f"{M} '{name}': negative dimension in {dims}")
        try:
            dtype = dtypes.to_numpy(data_type)
        except ValueError:
            raise ModelDecodeError(f"{M} '{name}': unknown data_type {data_type}") from None
        count = int(np.prod(dims, dtype=np.int64)) if dims else 1
        shape = tuple(dims)
        if data_type in dtypes.PACKED_4BIT:
            count, shape = (count + 1) // 2, ((count + 1) // 2,)
        if location == EXTERNAL:
            data = self.external(name, external, dtype, count)
            ext = dict(external)
        else:
            ext = None
            if data_type == dtypes.STRING:
                data = np.empty(len(strings), dtype=object)
                data[:] = strings
            elif raw is not None:
                size = raw[1] - raw[0]
                if size != count * dtype.itemsize:
                    raise ModelDecodeError(f"{M} '{name}': raw_data has {size} bytes, but dims {dims} of "
                                           f"{dtypes.name(data_type)} need {count * dtype.itemsize}")
                data = np.frombuffer(self.buf, dtype=dtype, count=count, offset=raw[0])
            else:
                data = self.typed_data(name, data_type, dtype, typed)
            if data.size != count:
                raise ModelDecodeError(f"{M} '{name}': holds {data.size} values, but dims {dims} need {count}")
        if data_type not in dtypes.PACKED_4BIT:
            data = data.reshape(shape)
        tensor = Tensor(name, data, data_type, doc_string=doc, metadata_props=metadata, external_data=ext,
                        typed_storage=raw is None and bool(typed))
        tensor.empty_fields.update(f for f, present in (("name", name_present), ("doc_string", doc_present))
                                   if present and not getattr(tensor, f))
        return tensor

    @staticmethod
    def typed_data(name, data_type, dtype, typed) -> np.ndarray:
        if not typed:
            return np.zeros(0, dtype)
        if 4 in typed:
            values = np.concatenate(typed[4])
        elif 10 in typed:
            values = np.concatenate(typed[10])
        else:
            field = next(iter(typed))
            if field == 11:
                values = np.array([x & 0xFFFFFFFFFFFFFFFF for part in typed[field] for x in part], dtype=np.uint64)
            else:
                values = np.array([x for part in typed[field] for x in part], dtype=np.int64)
        if data_type in (dtypes.FLOAT16, dtypes.BFLOAT16):
            return values.astype(np.uint16).view(dtype)
        if data_type in (dtypes.COMPLEX64, dtypes.COMPLEX128):
            return values.view(dtype)  # float_data/double_data hold (real, imaginary) pairs
        return values.astype(dtype)

    def external(self, name, info, dtype, count) -> np.ndarray:
        location = info.get("location")
        if not location:
            raise ModelDecodeError(f"TensorProto '{name}': external data without a location")
        if self.base_dir is None:
            raise ModelDecodeError(f"TensorProto '{name}' keeps its data in the external file '{location}': load "
                                   f"the model from its path, not from bytes")
        path = os.path.join(self.base_dir, location)
        offset = int(info.get("offset", 0) or 0)
        size = count * dtype.itemsize
        length = int(info.get("length", size) or size)
        if length != size:
            raise ModelDecodeError(f"TensorProto '{name}': external length {length} does not match its "
                                   f"dims ({size} bytes)")
        try:
            with open(path, "rb") as f:
                f.seek(offset)
                data = f.read(size)
        except OSError as e:
            raise ModelDecodeError(f"TensorProto '{name}': cannot read external data file {path}: {e}") from None
        if len(data) != size:
            raise ModelDecodeError(f"TensorProto '{name}': external data file {path} has only {len(data)} bytes "
                                   f"at offset {offset}, {size} needed")
        return np.frombuffer(data, dtype=dtype, count=count)

    def function(self, span) -> Function:
        M = "FunctionProto"
        f = Function("")
        for n, w, v in Reader(self.buf, span[0], span[1], M).fields():
            if w != LEN:
                continue
            if n == 1:
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
                domain, version, _ = self.opset(v)
                f.opset_imports[domain] = version
            elif n == 10:
                self.set_str(f, "domain", v, M)
            elif n == 13:
                self.set_str(f, "overload", v, M)
            elif n == 12:
                f.value_info.append(self.value_info(v))
            elif n == 14:
                self.entry(v, f.metadata_props, f"{M}.metadata_props")
        return f


def decode_model(data, base_dir: str | None = None) -> Model:
    """Decode ModelProto bytes; ``base_dir`` is where external tensor data files live."""
    dec = _Decoder(data, base_dir)
    try:
        return dec.model((0, len(dec.buf)))
    except RecursionError:
        raise ModelDecodeError("ModelProto: nesting too deep") from None


# ---- encoding -----------------------------------------------------------------------------------

def _entries(w: Writer, number: int, props: dict) -> None:
    for k, v in props.items():
        e = Writer()
        e.string(1, k)
        e.string(2, v)
        w.message(number, e)


def _opsets(w: Writer, number: int, opsets: dict, omit_default_domain: bool = False) -> None:
    for domain, version in opsets.items():
        o = Writer()
        if domain or not omit_default_domain:
            o.string(1, domain)
        o.varint(2, version)
        w.message(number, o)


def _str(w: Writer, number: int, obj, attr: str) -> None:
    text = getattr(obj, attr)
    if text or attr in getattr(obj, "empty_fields", ()):
        w.string(number, text)


_TYPED_FIELD = {dtypes.FLOAT: 4, dtypes.COMPLEX64: 4, dtypes.DOUBLE: 10, dtypes.COMPLEX128: 10, dtypes.INT64: 7,
                dtypes.UINT32: 11, dtypes.UINT64: 11, dtypes.INT32: 5, dtypes.INT16: 5, dtypes.INT8: 5,
                dtypes.UINT16: 5, dtypes.UINT8: 5, dtypes.BOOL: 5, dtypes.FLOAT16: 5, dtypes.BFLOAT16: 5}


def _write_typed(w: Writer, data_type: int, data: np.ndarray) -> None:
    number = _TYPED_FIELD[data_type]
    flat = np.ascontiguousarray(data).ravel()
    if number == 4:
        w.packed_floats(4, flat.view("<f4") if data_type == dtypes.COMPLEX64 else flat)
    elif number == 10:
        if flat.size:
            w.bytes_(10, np.ascontiguousarray(flat.view("<f8") if data_type == dtypes.COMPLEX128 else flat,
                                              dtype="<f8").tobytes())
    elif data_type in (dtypes.FLOAT16, dtypes.BFLOAT16):
        w.packed_varints(5, flat.view("<u2"))
    else:
        w.packed_varints(number, flat.astype(np.int64) if number != 11 else flat.astype(np.uint64))


def encode_tensor(t: Tensor) -> Writer:
    w = Writer()
    data = np.asarray(t.data)
    dims = list(data.shape) if t.data_type not in dtypes.PACKED_4BIT else list(t.dims)
    w.packed_varints(1, dims)
    w.varint(2, t.data_type)
    _str(w, 8, t, "name")
    if t.data_type == dtypes.STRING:
        for s in data.ravel():
            w.bytes_(6, s if isinstance(s, (bytes, bytearray)) else str(s).encode("utf-8"))
    elif t.typed_storage and t.data_type in _TYPED_FIELD:
        _write_typed(w, t.data_type, data)
    else:
        w.bytes_(9, np.ascontiguousarray(data, dtype=dtypes.to_numpy(t.data_type)).tobytes())
    _str(w, 12, t, "doc_string")
    _entries(w, 16, t.metadata_props)
    return w


def _encode_type(t) -> Writer:
    w = Writer()
    if isinstance(t, (TensorType, SparseTensorType)):
        inner = Writer()
        if t.elem_type is not None:
            inner.varint(1, t.elem_type)
        if t.shape is not None:
            shape = Writer()
            dens = getattr(t, "dim_denotations", None) or [""] * len(t.shape)
            for d, den in zip(t.shape, dens):
                dim = Writer()
                if isinstance(d, str):
                    dim.string(2, d)
                elif d is not None:
                    dim.varint(1, d)
                if den:
                    dim.string(3, den)
                shape.message(1, dim)
            inner.message(2, shape)
        if t.elem_type is not None or t.shape is not None or isinstance(t, SparseTensorType):
            w.message(8 if isinstance(t, SparseTensorType) else 1, inner)
    elif isinstance(t, (SequenceType, OptionalType)):
        inner = Writer()
        if t.elem_type is not None:
            inner.message(1, _encode_type(t.elem_type))
        w.message(4 if isinstance(t, SequenceType) else 9, inner)
    elif isinstance(t, MapType):
        inner = Writer()
        inner.varint(1, t.key_type)
        if t.value_type is not None:
            inner.message(2, _encode_type(t.value_type))
        w.message(5, inner)
    _str(w, 6, t, "denotation")
    return w


def _encode_value_info(vi: ValueInfo) -> Writer:
    w = Writer()
    _str(w, 1, vi, "name")
    if vi.type is not None:
        w.message(2, _encode_type(vi.type))
    _str(w, 3, vi, "doc_string")
    _entries(w, 4, vi.metadata_props)
    return w


def _encode_attribute(a: Attribute) -> Writer:
    w = Writer()
    w.string(1, a.name)
    _str(w, 13, a, "doc_string")
    v, t = a.value, a.type
    if t == AttrType.FLOAT:
        w.float32(2, v)
    elif t == AttrType.INT:
        w.varint(3, v)
    elif t == AttrType.STRING:
        w.bytes_(4, v if isinstance(v, (bytes, bytearray)) else str(v).encode("utf-8"))
    elif t == AttrType.TENSOR:
        w.message(5, encode_tensor(v))
    elif t == AttrType.GRAPH:
        w.message(6, _encode_graph(v))
    elif t == AttrType.SPARSE_TENSOR:
        w.bytes_(22, v)
    elif t == AttrType.TYPE_PROTO:
        w.message(14, _encode_type(v))
    elif t == AttrType.FLOATS:
        w.packed_floats(7, v)
    elif t == AttrType.INTS:
        w.packed_varints(8, v)
    elif t == AttrType.STRINGS:
        for s in v:
            w.bytes_(9, s if isinstance(s, (bytes, bytearray)) else str(s).encode("utf-8"))
    elif t == AttrType.TENSORS:
        for x in v:
            w.message(10, encode_tensor(x))
    elif t == AttrType.GRAPHS:
        for g in v:
            w.message(11, _encode_graph(g))
    elif t == AttrType.SPARSE_TENSORS:
        for s in v:
            w.bytes_(23, s)
    elif t == AttrType.TYPE_PROTOS:
        for x in v:
            w.message(15, _encode_type(x))
    if t:
        w.varint(20, t)
    _str(w, 21, a, "ref_attr_name")
    return w


def _encode_node(node: Node) -> Writer:
    w = Writer()
    for name in node.inputs:
        w.string(1, name)
    for name in node.outputs:
        w.string(2, name)
    _str(w, 3, node, "name")
    _str(w, 4, node, "op_type")
    for a in node.attributes.values():
        w.message(5, _encode_attribute(a))
    _str(w, 6, node, "doc_string")
    _str(w, 7, node, "domain")
    _str(w, 8, node, "overload")
    _entries(w, 9, node.metadata_props)
    return w


def _encode_graph(g: Graph) -> Writer:
    w = Writer()
    for node in g.nodes:
        w.message(1, _encode_node(node))
    _str(w, 2, g, "name")
    for t in g.initializers:
        w.message(5, encode_tensor(t))
    _str(w, 10, g, "doc_string")
    for number, infos in ((11, g.inputs), (12, g.outputs), (13, g.value_info)):
        for vi in infos:
            w.message(number, _encode_value_info(vi))
    for raw in g.quantization_annotation:
        w.bytes_(14, raw)
    for raw in g.sparse_initializers:
        w.bytes_(15, raw)
    _entries(w, 16, g.metadata_props)
    return w


def _encode_function(f: Function) -> Writer:
    w = Writer()
    _str(w, 1, f, "name")
    for name in f.inputs:
        w.string(4, name)
    for name in f.outputs:
        w.string(5, name)
    for name in f.attributes:
        w.string(6, name)
    for node in f.nodes:
        w.message(7, _encode_node(node))
    _str(w, 8, f, "doc_string")
    _opsets(w, 9, f.opset_imports)
    _str(w, 10, f, "domain")
    for a in f.attribute_protos:
        w.message(11, _encode_attribute(a))
    for vi in f.value_info:
        w.message(12, _encode_value_info(vi))
    _str(w, 13, f, "overload")
    _entries(w, 14, f.metadata_props)
    return w


def encode_model(model: Model) -> bytes:
    """ModelProto bytes; tensors are written as raw_data (STRING tensors as string_data)."""
    w = Writer()
    w.varint(1, model.ir_version)
    _str(w, 2, model, "producer_name")
    _str(w, 3, model, "producer_version")
    _str(w, 4, model, "domain")
    if model.model_version:
        w.varint(5, model.model_version)
    _str(w, 6, model, "doc_string")
    w.message(7, _encode_graph(model.graph))
    _opsets(w, 8, model.opset_imports, OPSET_DOMAIN_ABSENT in model.empty_fields)
    _entries(w, 14, model.metadata_props)
    for raw in model.training_info:
        w.bytes_(20, raw)
    for f in model.functions:
        w.message(25, _encode_function(f))
    for raw in model.configuration:
        w.bytes_(26, raw)
    return w.getvalue()
