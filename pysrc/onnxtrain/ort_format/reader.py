"""Read an ORT format model (.ort) back into an ir Model, with the fields only the ORT format has."""
from __future__ import annotations

import struct
from dataclasses import dataclass, field

import flatbuffers
import numpy as np
from flatbuffers import number_types as N

from ..ir import dtypes
from ..ir.model import Attribute, AttrType, Graph, MapType, Model, Node, SequenceType, Tensor, TensorType
from ..ir.model import ValueInfo
from . import schema as S
from .errors import OrtFormatError


@dataclass
class OrtFile:
    """An ORT format file: the model, and what the ORT format adds to it (the main graph's)."""
    ort_version: str
    model: Model
    nodes: list = field(default_factory=list)   # per node in file order: a dict of its ORT-only fields
    edges: dict = field(default_factory=dict)   # node index -> (input EdgeEnds, output EdgeEnds)
    max_node_index: int = 0
    resolver: dict = field(default_factory=dict)  # op id -> {kernel type string: [(arg type, index)]}
    runtime_optimizations: int = 0               # how many optimizers have saved records


class _Table:
    """A flatbuffer table read through the flatbuffers package's Table, without generated code."""

    def __init__(self, buf, pos: int):
        self.t = flatbuffers.table.Table(buf, pos)

    def _off(self, slot: int) -> int:
        return self.t.Offset(4 + 2 * slot)

    def scalar(self, slot: int, flags, default=0):
        o = self._off(slot)
        return self.t.Get(flags, o + self.t.Pos) if o else default

    def string(self, slot: int, default: str = "") -> str:
        o = self._off(slot)
        return self.t.String(o + self.t.Pos).decode("utf-8") if o else default

    def raw_string(self, slot: int) -> bytes:
        o = self._off(slot)
        return bytes(self.t.String(o + self.t.Pos)) if o else b""

    def table(self, slot: int):
        o = self._off(slot)
        return _Table(self.t.Bytes, self.t.Indirect(o + self.t.Pos)) if o else None

    def _vector(self, slot: int):
        o = self._off(slot)
        if not o:
            return None, 0
        return self.t.Vector(o), self.t.VectorLen(o)

    def tables(self, slot: int) -> list:
        start, n = self._vector(slot)
        return [_Table(self.t.Bytes, self.t.Indirect(start + 4 * i)) for i in range(n)]

    def strings(self, slot: int, raw: bool = False) -> list:
        start, n = self._vector(slot)
        out = [bytes(self.t.String(start + 4 * i)) for i in range(n)]
        return out if raw else [s.decode("utf-8") for s in out]

    def numbers(self, slot: int, dtype: str) -> np.ndarray:
        start, n = self._vector(slot)
        if start is None:
            return np.zeros(0, dtype)
        return np.frombuffer(self.t.Bytes, dtype, n, start).copy()

    def structs(self, slot: int, fmt: str) -> list:
        start, n = self._vector(slot)
        size = struct.calcsize(fmt)
        return [struct.unpack_from(fmt, self.t.Bytes, start + size * i) for i in range(n)]


def _tensor(t: _Table) -> Tensor:
    name = t.string(S.TENSOR_NAME)
    dims = t.numbers(S.TENSOR_DIMS, "<i8").tolist()
    code = t.scalar(S.TENSOR_DATA_TYPE, N.Int32Flags)
    if code == dtypes.STRING:
        data = np.array(t.strings(S.TENSOR_STRING_DATA, raw=True), dtype=object).reshape(dims)
    else:
        raw = t.numbers(S.TENSOR_RAW_DATA, "u1")
        count = int(np.prod(dims, dtype=np.int64))
        if code in dtypes.PACKED_4BIT:
            data = dtypes.unpack_4bit(raw, count, code)
        else:
            data = raw.view(dtypes.to_numpy(code))
        if data.size != count:
            raise OrtFormatError(f"tensor '{name}': {data.size} elements in raw_data, dims {dims} need {count}")
        data = data.reshape(dims)
    return Tensor(name=name, data=data, data_type=code, doc_string=t.string(S.TENSOR_DOC_STRING))


def _type(t: _Table):
    kind = t.scalar(S.TYPE_VALUE_TYPE, N.Uint8Flags)
    value = t.table(S.TYPE_VALUE)
    denotation = t.string(S.TYPE_DENOTATION)
    if value is None:
        return None
    if kind == S.TYPE_TENSOR:
        shape_t = value.table(S.TENSOR_TYPE_SHAPE)
        shape = None
        if shape_t is not None:
            shape = []
            for d in shape_t.tables(S.SHAPE_DIM):
                v = d.table(S.DIMENSION_VALUE)
                dim_type = 0 if v is None else v.scalar(S.DIM_TYPE, N.Int8Flags)
                shape.append(v.scalar(S.DIM_VALUE, N.Int64Flags) if dim_type == S.DIM_KIND_VALUE
                             else v.string(S.DIM_PARAM) if dim_type == S.DIM_KIND_PARAM else None)
        return TensorType(value.scalar(S.TENSOR_TYPE_ELEM_TYPE, N.Int32Flags), shape, denotation)
    if kind == S.TYPE_SEQUENCE:
        elem = value.table(S.SEQUENCE_ELEM_TYPE)
        return SequenceType(None if elem is None else _type(elem), denotation)
    if kind == S.TYPE_MAP:
        elem = value.table(S.MAP_VALUE_TYPE)
        return MapType(value.scalar(S.MAP_KEY_TYPE, N.Int32Flags), None if elem is None else _type(elem),
                       denotation)
    raise OrtFormatError(f"unknown TypeInfoValue kind {kind}")


def _attribute(a: _Table) -> Attribute:
    t = a.scalar(S.ATTR_TYPE, N.Int32Flags)
    readers = {
        AttrType.FLOAT: lambda: a.scalar(S.ATTR_F, N.Float32Flags, 0.0),
        AttrType.INT: lambda: a.scalar(S.ATTR_I, N.Int64Flags),
        AttrType.STRING: lambda: a.raw_string(S.ATTR_S),
        AttrType.TENSOR: lambda: _tensor(a.table(S.ATTR_T)),
        AttrType.GRAPH: lambda: _graph(a.table(S.ATTR_G))[0],
        AttrType.FLOATS: lambda: a.numbers(S.ATTR_FLOATS, "<f4").tolist(),
        AttrType.INTS: lambda: a.numbers(S.ATTR_INTS, "<i8").tolist(),
        AttrType.STRINGS: lambda: a.strings(S.ATTR_STRINGS, raw=True),
        AttrType.TENSORS: lambda: [_tensor(x) for x in a.tables(S.ATTR_TENSORS)],
        AttrType.GRAPHS: lambda: [_graph(x)[0] for x in a.tables(S.ATTR_GRAPHS)],
    }
    name = a.string(S.ATTR_NAME)
    if t not in readers:
        raise OrtFormatError(f"attribute '{name}' has type {t}, which this reader does not support")
    return Attribute(name=name, type=t, value=readers[t](), doc_string=a.string(S.ATTR_DOC_STRING))


def _graph(g: _Table, outer: set = frozenset()):
    args = {}
    for vi in g.tables(S.GRAPH_NODE_ARGS):
        typ = vi.table(S.VALUE_TYPE)
        args[vi.string(S.VALUE_NAME)] = ValueInfo(vi.string(S.VALUE_NAME), None if typ is None else _type(typ),
                                                 vi.string(S.VALUE_DOC_STRING))
    inputs = g.strings(S.GRAPH_INPUTS)
    outputs = g.strings(S.GRAPH_OUTPUTS)
    initializers = [_tensor(t) for t in g.tables(S.GRAPH_INITIALIZERS)]
    if g.tables(S.GRAPH_SPARSE_INITIALIZERS):
        raise OrtFormatError("sparse initializers are not supported by this reader")
    nodes, extras, implicit = [], [], {}
    for n in g.tables(S.GRAPH_NODES):
        node = Node(op_type=n.string(S.NODE_OP_TYPE), inputs=n.strings(S.NODE_INPUTS),
                    outputs=n.strings(S.NODE_OUTPUTS), name=n.string(S.NODE_NAME), domain=n.string(S.NODE_DOMAIN),
                    doc_string=n.string(S.NODE_DOC_STRING))
        node.attributes = {a.name: a for a in map(_attribute, n.tables(S.NODE_ATTRIBUTES))}
        implicit[id(node)] = n.strings(S.NODE_IMPLICIT_INPUTS)
        nodes.append(node)
        extras.append({"index": n.scalar(S.NODE_INDEX, N.Uint32Flags), "domain": node.domain,
                       "op_type": node.op_type, "since_version": n.scalar(S.NODE_SINCE_VERSION, N.Int32Flags),
                       "type": n.scalar(S.NODE_TYPE, N.Int32Flags),
                       "execution_provider_type": n.string(S.NODE_EXECUTION_PROVIDER_TYPE),
                       "input_arg_counts": n.numbers(S.NODE_INPUT_ARG_COUNTS, "<i4").tolist(),
                       "implicit_inputs": implicit[id(node)]})
    known = set(outer) | set(inputs) | {t.name for t in initializers}
    order = _topological(nodes, known, implicit)
    defined = set(inputs) | {t.name for t in initializers} | set(outputs)
    value_info = [vi for name, vi in args.items() if name not in defined and vi.type is not None and name]
    graph = Graph(nodes=order, inputs=[args.get(n, ValueInfo(n)) for n in inputs],
                  outputs=[args.get(n, ValueInfo(n)) for n in outputs], initializers=initializers,
                  value_info=value_info)
    return graph, extras, g


def _topological(nodes: list, known: set, implicit: dict) -> list:
    ready, order, pending = set(known), [], list(nodes)
    while pending:
        rest = []
        for n in pending:
            needs = [i for i in n.inputs if i] + implicit[id(n)]
            if all(i in ready for i in needs):
                order.append(n)
                ready.update(o for o in n.outputs if o)
            else:
                rest.append(n)
        if len(rest) == len(pending):
            return order + rest  # a cycle or a value from nowhere: left for the runtime to report
        pending = rest
    return order


def read_ort(data) -> OrtFile:
    """The ORT format file ``data`` (bytes) as an OrtFile."""
    data = bytes(data)
    if len(data) < 8 or data[4:8] != S.FILE_IDENTIFIER:
        raise OrtFormatError(f"not an ORT format model (no '{S.FILE_IDENTIFIER.decode()}' file identifier)")
    try:
        root = _Table(data, flatbuffers.encode.Get(N.UOffsetTFlags.packer_type, data, 0))
        m = root.table(S.SESSION_MODEL)
        if m is None:
            raise OrtFormatError("the ORT format file has no model")
        g = m.table(S.MODEL_GRAPH)
        if g is None:
            raise OrtFormatError("the ORT format model has no graph")
        graph, extras, g = _graph(g)
        graph.doc_string = m.string(S.MODEL_GRAPH_DOC_STRING)
        opsets = {o.string(S.OPSET_DOMAIN): o.scalar(S.OPSET_VERSION, N.Int64Flags)
                  for o in m.tables(S.MODEL_OPSET_IMPORT)}
        model = Model(graph=graph, ir_version=m.scalar(S.MODEL_IR_VERSION, N.Int64Flags), opset_imports=opsets,
                      producer_name=m.string(S.MODEL_PRODUCER_NAME),
                      producer_version=m.string(S.MODEL_PRODUCER_VERSION), domain=m.string(S.MODEL_DOMAIN),
                      model_version=m.scalar(S.MODEL_MODEL_VERSION, N.Int64Flags),
                      doc_string=m.string(S.MODEL_DOC_STRING),
                      metadata_props={e.string(S.ENTRY_KEY): e.string(S.ENTRY_VALUE)
                                      for e in m.tables(S.MODEL_METADATA_PROPS)})
        edges = {e.scalar(S.EDGE_NODE_INDEX, N.Uint32Flags): (e.structs(S.EDGE_INPUT_EDGES, S.EDGE_END_FORMAT),
                                                              e.structs(S.EDGE_OUTPUT_EDGES, S.EDGE_END_FORMAT))
                 for e in g.tables(S.GRAPH_NODE_EDGES)}
        resolver = {}
        r = root.table(S.SESSION_KERNEL_TYPE_STR_RESOLVER)
        for entry in ([] if r is None else r.tables(S.RESOLVER_OP_KERNEL_TYPE_STR_ARGS)):
            resolver[entry.string(S.OP_ID)] = {
                k.string(S.KERNEL_TYPE_STR): [(a.scalar(S.ARG_TYPE, N.Int8Flags), a.scalar(S.ARG_INDEX, N.Uint32Flags))
                                              for a in k.tables(S.KERNEL_TYPE_STR_ARGS)]
                for k in entry.tables(S.OP_KERNEL_TYPE_STR_ARGS)}
        opt = g.table(S.GRAPH_RUNTIME_OPTIMIZATIONS)
        return OrtFile(ort_version=root.string(S.SESSION_ORT_VERSION), model=model, nodes=extras, edges=edges,
                       max_node_index=g.scalar(S.GRAPH_MAX_NODE_INDEX, N.Uint32Flags), resolver=resolver,
                       runtime_optimizations=0 if opt is None else len(opt.tables(0)))
    except (IndexError, struct.error, UnicodeDecodeError, ValueError) as e:
        if isinstance(e, OrtFormatError):
            raise
        raise OrtFormatError(f"truncated or corrupt ORT format model: {e}") from None


def decode_ort_model(data) -> Model:
    """The ir Model of the ORT format file ``data``."""
    return read_ort(data).model
