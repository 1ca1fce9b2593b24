"""The IR -> ModelProto bytes, with the field numbers of onnx.proto (onnx 1.16).

A message decoded from a file is written with the layout it was read with (decode.py), so decoding then
encoding gives the same bytes; one built in code is written in this module's own order.
"""
from __future__ import annotations

import numpy as np

from . import dtypes
from .model import (OPSET_DOMAIN_ABSENT, Attribute, AttrType, Function, Graph, MapType, Model, Node,
                    OptionalType, SequenceType, SparseTensorType, Tensor, TensorType, ValueInfo)
from .proto import TYPED_FIELD
from .wire import LayoutWriter, Writer


def _writer(obj) -> Writer:
    """A Writer in the codec's own order, or one that follows the layout the object was decoded with."""
    return Writer() if obj.layout is None else LayoutWriter(obj.layout)


def encode_entry(key: str, value: str) -> Writer:
    e = Writer()
    e.string(1, key)
    e.string(2, value)
    return e


def _entries(w: Writer, number: int, props: dict) -> None:
    for k, v in props.items():
        w.message(number, encode_entry(k, v))


def encode_opset(domain: str, version: int, omit_domain: bool) -> Writer:
    o = Writer()
    if domain or not omit_domain:
        o.string(1, domain)
    o.varint(2, version)
    return o


def _opsets(w: Writer, number: int, opsets: dict, omit_default_domain: bool = False) -> None:
    for domain, version in opsets.items():
        w.message(number, encode_opset(domain, version, omit_default_domain))


def _str(w: Writer, number: int, obj, attr: str) -> None:
    text = getattr(obj, attr)
    if text or attr in obj.empty_fields:
        w.string(number, text)


def _int(w: Writer, number: int, obj, attr: str) -> None:
    value = getattr(obj, attr)
    if value or attr in obj.empty_fields:
        w.varint(number, value)


def _bytes_list(w: Writer, number: int, items) -> None:
    for s in items:
        w.bytes_(number, s if isinstance(s, (bytes, bytearray)) else str(s).encode("utf-8"))


def _write_typed(w: Writer, data_type: int, flat: np.ndarray) -> None:
    number = TYPED_FIELD[data_type]
    if number == 4:
        w.packed_fixed(4, flat.view("<f4") if data_type == dtypes.COMPLEX64 else flat, "<f4")
    elif number == 10:
        w.packed_fixed(10, flat.view("<f8") if data_type == dtypes.COMPLEX128 else flat, "<f8")
    elif number == 11:
        w.packed_varints(11, flat.astype(np.uint64))
    elif data_type in dtypes.PACKED_4BIT:  # packed bytes; onnx.helper writes int4 pairs as int8
        packed = dtypes.pack_4bit(flat)
        w.packed_varints(5, packed.view(np.int8) if data_type == dtypes.INT4 else packed)
    elif data_type == dtypes.FLOAT16:
        w.packed_varints(5, flat.view("<u2"))
    else:
        w.packed_varints(number, flat)


def _encode_tensor(t: Tensor) -> Writer:
    w = _writer(t)
    data = np.asarray(t.data)
    w.packed_varints(1, data.shape)
    w.varint(2, t.data_type)
    _str(w, 8, t, "name")
    if t.data_type == dtypes.STRING:
        _bytes_list(w, 6, data.ravel())
    else:
        flat = np.ascontiguousarray(data, dtype=dtypes.to_numpy(t.data_type)).ravel()
        if t.typed_storage:
            _write_typed(w, t.data_type, flat)
        elif flat.size or "raw_data" in t.empty_fields:
            w.bytes_(9, (dtypes.pack_4bit(flat) if t.data_type in dtypes.PACKED_4BIT else flat).tobytes())
    _str(w, 12, t, "doc_string")
    if "data_location" in t.empty_fields:
        w.varint(14, 0)
    _entries(w, 16, t.metadata_props)
    return w


def _encode_shape(shape: list, denotations) -> Writer:
    w = Writer()
    for d, den in zip(shape, denotations or [""] * len(shape)):
        dim = Writer()
        if isinstance(d, str):
            dim.string(2, d)
        elif d is not None:
            dim.varint(1, d)
        if den:
            dim.string(3, den)
        w.message(1, dim)
    return w


def encode_type(t) -> Writer:
    w = Writer()
    if isinstance(t, (TensorType, SparseTensorType)):
        if t.elem_type is not None:  # None: a TypeProto with no value case
            inner = Writer()
            if t.elem_type:
                inner.varint(1, t.elem_type)
            if t.shape is not None:
                inner.message(2, _encode_shape(t.shape, getattr(t, "dim_denotations", None)))
            w.message(8 if isinstance(t, SparseTensorType) else 1, inner)
    elif isinstance(t, (SequenceType, OptionalType)):
        inner = Writer()
        if t.elem_type is not None:
            inner.message(1, encode_type(t.elem_type))
        w.message(4 if isinstance(t, SequenceType) else 9, inner)
    elif isinstance(t, MapType):
        inner = Writer()
        inner.varint(1, t.key_type)
        if t.value_type is not None:
            inner.message(2, encode_type(t.value_type))
        w.message(5, inner)
    else:
        raise TypeError(f"not an ONNX type: {t!r}")
    if t.denotation:
        w.string(6, t.denotation)
    return w


def _encode_value_info(vi: ValueInfo) -> Writer:
    w = _writer(vi)
    _str(w, 1, vi, "name")
    if vi.type is not None:
        w.message(2, encode_type(vi.type))
    _str(w, 3, vi, "doc_string")
    _entries(w, 4, vi.metadata_props)
    return w


def _encode_attribute(a: Attribute) -> Writer:
    w = _writer(a)
    w.string(1, a.name)
    _str(w, 13, a, "doc_string")
    v, t = a.value, a.type
    if v is None:
        pass  # a reference (ref_attr_name) without a value
    elif t == AttrType.FLOAT:
        w.float32(2, v)
    elif t == AttrType.INT:
        w.varint(3, v)
    elif t == AttrType.STRING:
        _bytes_list(w, 4, [v])
    elif t == AttrType.TENSOR:
        w.message(5, _encode_tensor(v))
    elif t == AttrType.GRAPH:
        w.message(6, _encode_graph(v))
    elif t == AttrType.SPARSE_TENSOR:
        w.bytes_(22, v)
    elif t == AttrType.TYPE_PROTO:
        w.message(14, encode_type(v))
    elif t == AttrType.FLOATS:
        w.packed_fixed(7, v, "<f4")
    elif t == AttrType.INTS:
        w.packed_varints(8, v)
    elif t == AttrType.STRINGS:
        _bytes_list(w, 9, v)
    elif t == AttrType.TENSORS:
        for x in v:
            w.message(10, _encode_tensor(x))
    elif t == AttrType.GRAPHS:
        for g in v:
            w.message(11, _encode_graph(g))
    elif t == AttrType.SPARSE_TENSORS:
        for s in v:
            w.bytes_(23, s)
    elif t == AttrType.TYPE_PROTOS:
        for x in v:
            w.message(15, encode_type(x))
    if t:
        w.varint(20, t)
    _str(w, 21, a, "ref_attr_name")
    return w


def _encode_node(node: Node) -> Writer:
    w = _writer(node)
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
    w = _writer(g)
    for node in g.nodes:
        w.message(1, _encode_node(node))
    _str(w, 2, g, "name")
    for t in g.initializers:
        w.message(5, _encode_tensor(t))
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
    w = _writer(f)
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
    """ModelProto bytes.  Tensors are written as raw_data (little-endian), STRING tensors as
    string_data, and tensors decoded from typed fields (float_data, int32_data, ...) back to those;
    tensors read from external files are written inline.  Repeated fields keep their order.  Messages
    decoded from a file follow their layout (see the module docstring); ones built in code are written
    in this codec's order, with every repeated scalar packed."""
    w = _writer(model)
    _int(w, 1, model, "ir_version")
    _str(w, 2, model, "producer_name")
    _str(w, 3, model, "producer_version")
    _str(w, 4, model, "domain")
    _int(w, 5, model, "model_version")
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


def encode_tensor(tensor: Tensor) -> bytes:
    """TensorProto bytes (written like the model's tensors, see encode_model)."""
    return _encode_tensor(tensor).getvalue()
