"""Write an ir Model as an ORT format model (.ort) with the flatbuffers builder.

What is written: the model's header fields and opset imports; per graph (and per subgraph of a GRAPH or
GRAPHS attribute) its initializers, a typed NodeArg for every value it names, its nodes with their
attributes of every type, the edges between nodes, and the graph's inputs and outputs; each node with
the schema version it resolves to and its arguments per formal input; and the kernel type-string
resolver of the ops used (onnxruntime 1.19.2 reads it from the file, in its full build too).  What is
not: runtime optimization records, which ORT writes only when asked to save them.  Unlike ORT's
converter, the graph is written as it is, not optimized first.
"""
from __future__ import annotations

import flatbuffers
import numpy as np

from ..ir import dtypes
from ..ir.model import Attribute, AttrType, Graph, MapType, Model, Node, SequenceType, Tensor, TensorType
from ..ir.model import ValueInfo
from . import schema as S
from ..runtime.shapes import infer_types
from .errors import OrtFormatError
from .op_schemas import find_schema


#: the flatbuffers Builder method that writes a table field of each kind
_PREPEND = {"offset": "PrependUOffsetTRelativeSlot", "int64": "PrependInt64Slot", "int32": "PrependInt32Slot",
            "uint32": "PrependUint32Slot", "int8": "PrependInt8Slot", "uint8": "PrependUint8Slot",
            "float32": "PrependFloat32Slot"}


class _Writer:
    def __init__(self, model: Model, types: dict):
        self.b = flatbuffers.Builder(1024)
        self.model = model
        self.types = types  # name -> Type of main-graph values the model does not declare
        self.op_ids = {}    # "domain:op_type:since_version" -> OpSchema, of every node written

    # ---- building blocks ---------------------------------------------------------------------

    def string(self, s):
        return self.b.CreateString(s if isinstance(s, (bytes, bytearray)) else str(s))

    def tables(self, offsets: list) -> int:
        b = self.b
        b.StartVector(4, len(offsets), 4)
        for off in reversed(offsets):
            b.PrependUOffsetTRelative(off)
        return b.EndVector()

    def strings(self, items) -> int:
        return self.tables([self.string(s) for s in items])

    def numbers(self, values, dtype: str) -> int:
        return self.b.CreateNumpyVector(np.asarray(values, dtype=dtype).reshape(-1))

    def table(self, nfields: int, fields: list) -> int:
        """A table from (slot, kind, value) triples; a None value is left out."""
        b = self.b
        b.StartObject(nfields)
        for slot, kind, value in fields:
            if value is not None:
                getattr(b, _PREPEND[kind])(slot, value, 0)
        return b.EndObject()

    def optional_string(self, s):
        return self.string(s) if s else None

    # ---- tensors and types -------------------------------------------------------------------

    def tensor(self, t: Tensor, where: str) -> int:
        data = np.asarray(t.data)
        if t.data_type == dtypes.STRING:
            raw, strings = None, self.strings(
                [s if isinstance(s, (bytes, bytearray)) else str(s).encode("utf-8") for s in data.ravel()])
        else:
            try:
                flat = np.ascontiguousarray(data, dtype=dtypes.to_numpy(t.data_type)).ravel()
            except (KeyError, ValueError, TypeError) as e:
                raise OrtFormatError(f"{where}: tensor '{t.name}' of data type {t.data_type}: {e}") from None
            if t.data_type in dtypes.PACKED_4BIT:
                flat = dtypes.pack_4bit(flat)
            raw, strings = self.b.CreateByteVector(flat.tobytes()), None
        dims = self.numbers(data.shape, "<i8")
        return self.table(6, [(S.TENSOR_NAME, "offset", self.string(t.name)),
                              (S.TENSOR_DOC_STRING, "offset", self.optional_string(t.doc_string)),
                              (S.TENSOR_DIMS, "offset", dims), (S.TENSOR_DATA_TYPE, "int32", t.data_type),
                              (S.TENSOR_RAW_DATA, "offset", raw), (S.TENSOR_STRING_DATA, "offset", strings)])

    def dimension(self, d) -> int:
        if isinstance(d, str):
            value = self.table(3, [(S.DIM_TYPE, "int8", S.DIM_KIND_PARAM),
                                   (S.DIM_PARAM, "offset", self.string(d))])
        elif d is None:
            value = self.table(3, [])
        else:
            value = self.table(3, [(S.DIM_TYPE, "int8", S.DIM_KIND_VALUE), (S.DIM_VALUE, "int64", int(d))])
        return self.table(2, [(S.DIMENSION_VALUE, "offset", value)])

    def type_info(self, t, where: str) -> int:
        if isinstance(t, TensorType):
            shape = None
            if t.shape is not None:
                shape = self.table(1, [(S.SHAPE_DIM, "offset", self.tables([self.dimension(d) for d in t.shape]))])
            value = self.table(2, [(S.TENSOR_TYPE_ELEM_TYPE, "int32", t.elem_type),
                                   (S.TENSOR_TYPE_SHAPE, "offset", shape)])
            kind = S.TYPE_TENSOR
        elif isinstance(t, SequenceType):
            elem = None if t.elem_type is None else self.type_info(t.elem_type, where)
            value, kind = self.table(1, [(S.SEQUENCE_ELEM_TYPE, "offset", elem)]), S.TYPE_SEQUENCE
        elif isinstance(t, MapType):
            elem = None if t.value_type is None else self.type_info(t.value_type, where)
            value = self.table(2, [(S.MAP_KEY_TYPE, "int32", t.key_type), (S.MAP_VALUE_TYPE, "offset", elem)])
            kind = S.TYPE_MAP
        else:
            raise OrtFormatError(f"{where}: the ORT format has no {type(t).__name__} (only tensor, sequence "
                                 f"and map types)")
        return self.table(3, [(S.TYPE_DENOTATION, "offset", self.optional_string(t.denotation)),
                              (S.TYPE_VALUE_TYPE, "uint8", kind), (S.TYPE_VALUE, "offset", value)])

    def value_info(self, name: str, vi, where: str) -> int:
        typ = None if vi is None or vi.type is None else self.type_info(vi.type, f"{where}, value '{name}'")
        doc = None if vi is None else self.optional_string(vi.doc_string)
        return self.table(3, [(S.VALUE_NAME, "offset", self.string(name)), (S.VALUE_DOC_STRING, "offset", doc),
                              (S.VALUE_TYPE, "offset", typ)])

    # ---- attributes and nodes ----------------------------------------------------------------

    def attribute(self, a: Attribute, where: str, outer: set) -> int:
        where = f"{where}, attribute '{a.name}'"
        v, t = a.value, a.type
        fields = []
        if a.ref_attr_name:
            raise OrtFormatError(f"{where}: refers to a function attribute, which the ORT format cannot hold")
        if t == AttrType.FLOAT:
            fields.append((S.ATTR_F, "float32", float(v)))
        elif t == AttrType.INT:
            fields.append((S.ATTR_I, "int64", int(v)))
        elif t == AttrType.STRING:
            fields.append((S.ATTR_S, "offset", self.string(v)))
        elif t == AttrType.TENSOR:
            fields.append((S.ATTR_T, "offset", self.tensor(v, where)))
        elif t == AttrType.GRAPH:
            fields.append((S.ATTR_G, "offset", self.graph(v, where, outer)))
        elif t == AttrType.FLOATS:
            fields.append((S.ATTR_FLOATS, "offset", self.numbers(v, "<f4")))
        elif t == AttrType.INTS:
            fields.append((S.ATTR_INTS, "offset", self.numbers(v, "<i8")))
        elif t == AttrType.STRINGS:
            fields.append((S.ATTR_STRINGS, "offset", self.strings(v)))
        elif t == AttrType.TENSORS:
            fields.append((S.ATTR_TENSORS, "offset", self.tables([self.tensor(x, where) for x in v])))
        elif t == AttrType.GRAPHS:
            fields.append((S.ATTR_GRAPHS, "offset", self.tables([self.graph(g, where, outer) for g in v])))
        else:
            raise OrtFormatError(f"{where}: attribute type {t} cannot be written in the ORT format "
                                 f"(sparse tensors and type protos are not supported)")
        name = self.string(a.name)
        doc = self.optional_string(a.doc_string)
        return self.table(13, [(S.ATTR_NAME, "offset", name), (S.ATTR_DOC_STRING, "offset", doc),
                               (S.ATTR_TYPE, "int32", t)] + fields)

    def node(self, index: int, node: Node, implicit: list, where: str, outer: set) -> int:
        where = f"{where}, node '{node.name or node.op_type}' ({node.op_type})"
        domain = "" if node.domain == "ai.onnx" else node.domain
        opset = self.model.opset(domain)
        if opset is None:
            raise OrtFormatError(f"{where}: the model imports no opset of domain '{domain or 'ai.onnx'}'")
        schema = find_schema(domain, node.op_type, opset)
        if schema is None:
            raise OrtFormatError(f"{where}: onnxtrain knows no schema of {domain or 'ai.onnx'}::{node.op_type} at "
                                 f"opset {opset}, which the ORT format needs (its version and kernel type strings)")
        self.op_ids[f"{domain}:{node.op_type}:{schema.since_version}"] = schema
        attrs = [self.attribute(a, where, outer) for a in node.attributes.values()]
        fields = [(S.NODE_NAME, "offset", self.string(node.name)),
                  (S.NODE_DOC_STRING, "offset", self.optional_string(node.doc_string)),
                  (S.NODE_DOMAIN, "offset", self.string(domain)),
                  (S.NODE_SINCE_VERSION, "int32", schema.since_version), (S.NODE_INDEX, "uint32", index),
                  (S.NODE_OP_TYPE, "offset", self.string(node.op_type)),
                  (S.NODE_TYPE, "int32", S.NODE_TYPE_PRIMITIVE),
                  (S.NODE_EXECUTION_PROVIDER_TYPE, "offset", self.string("")),
                  (S.NODE_INPUTS, "offset", self.strings(node.inputs)),
                  (S.NODE_OUTPUTS, "offset", self.strings(node.outputs)),
                  (S.NODE_ATTRIBUTES, "offset", self.tables(attrs)),
                  (S.NODE_INPUT_ARG_COUNTS, "offset", self.numbers(schema.input_arg_counts(len(node.inputs)), "<i4")),
                  (S.NODE_IMPLICIT_INPUTS, "offset", self.strings(implicit))]
        return self.table(13, fields)

    def edges(self, graph: Graph, implicit: list) -> int:
        producer = {}
        for i, node in enumerate(graph.nodes):
            for j, name in enumerate(node.outputs):
                if name:
                    producer[name] = (i, j)
        ins = [[] for _ in graph.nodes]
        outs = [[] for _ in graph.nodes]
        for i, node in enumerate(graph.nodes):
            for k, name in enumerate(list(node.inputs) + implicit[i]):
                if name in producer:
                    p, j = producer[name]
                    ins[i].append((p, j, k))
                    outs[p].append((i, j, k))
        entries = []
        for i in range(len(graph.nodes)):
            vectors = [self.structs(sorted(ins[i])), self.structs(sorted(outs[i]))]  # ORT's order
            entries.append(self.table(3, [(S.EDGE_NODE_INDEX, "uint32", i), (S.EDGE_INPUT_EDGES, "offset", vectors[0]),
                                          (S.EDGE_OUTPUT_EDGES, "offset", vectors[1])]))
        return self.tables(entries)

    def structs(self, ends: list) -> int:
        b = self.b
        b.StartVector(12, len(ends), 4)
        for node_index, src, dst in reversed(ends):
            b.Prep(4, 12)
            b.PrependInt32(dst)
            b.PrependInt32(src)
            b.PrependUint32(node_index)
        return b.EndVector()

    # ---- graphs and the model ----------------------------------------------------------------

    def graph(self, g: Graph, where: str, outer: set) -> int:
        where = f"{where}, graph '{g.name}'" if g.name else where
        if g.sparse_initializers:
            raise OrtFormatError(f"{where}: sparse initializers are not supported in the ORT format writer")
        implicit = [implicit_inputs(node, outer | defined_names(g)) for node in g.nodes]
        declared = g.value_info_map()
        args = {}  # name -> ValueInfo or None, in order of first mention
        for vi in g.inputs:
            args.setdefault(vi.name, vi)
        for t in g.initializers:
            args.setdefault(t.name, declared.get(t.name) or ValueInfo(t.name, TensorType(t.data_type, list(t.dims))))
        for node, extra in zip(g.nodes, implicit):
            for name in list(node.inputs) + list(node.outputs) + extra:
                args.setdefault(name, declared.get(name))
        for vi in g.outputs:
            args.setdefault(vi.name, vi)
        for name, vi in args.items():
            if (vi is None or vi.type is None) and name:
                if name not in self.types or g is not self.model.graph:
                    raise OrtFormatError(f"{where}: the type of value '{name}' is unknown; the ORT format needs "
                                         f"the type of every value")
                args[name] = ValueInfo(name, self.types[name])
        scope = outer | set(args)
        # sorted by name, to be deterministic (ORT writes its hash map's order)
        inits = self.tables([self.tensor(t, where) for t in sorted(g.initializers, key=lambda t: t.name)])
        node_args = self.tables([self.value_info(n, vi, where) for n, vi in args.items()])
        nodes = self.tables([self.node(i, n, implicit[i], where, scope) for i, n in enumerate(g.nodes)])
        edges = self.edges(g, implicit)
        inputs = self.strings([vi.name for vi in g.inputs])
        outputs = self.strings([vi.name for vi in g.outputs])
        return self.table(9, [(S.GRAPH_INITIALIZERS, "offset", inits), (S.GRAPH_NODE_ARGS, "offset", node_args),
                              (S.GRAPH_NODES, "offset", nodes), (S.GRAPH_MAX_NODE_INDEX, "uint32", len(g.nodes)),
                              (S.GRAPH_NODE_EDGES, "offset", edges), (S.GRAPH_INPUTS, "offset", inputs),
                              (S.GRAPH_OUTPUTS, "offset", outputs)])

    def model_table(self) -> int:
        m = self.model
        graph = self.graph(m.graph, "graph", set())
        opsets = [self.table(2, [(S.OPSET_DOMAIN, "offset", self.string(d)), (S.OPSET_VERSION, "int64", v)])
                  for d, v in m.opset_imports.items()]
        props = [self.table(2, [(S.ENTRY_KEY, "offset", self.string(k)), (S.ENTRY_VALUE, "offset", self.string(v))])
                 for k, v in m.metadata_props.items()]
        fields = [(S.MODEL_IR_VERSION, "int64", m.ir_version), (S.MODEL_OPSET_IMPORT, "offset", self.tables(opsets)),
                  (S.MODEL_PRODUCER_NAME, "offset", self.optional_string(m.producer_name)),
                  (S.MODEL_PRODUCER_VERSION, "offset", self.optional_string(m.producer_version)),
                  (S.MODEL_DOMAIN, "offset", self.optional_string(m.domain)),
                  (S.MODEL_MODEL_VERSION, "int64", m.model_version),
                  (S.MODEL_DOC_STRING, "offset", self.optional_string(m.doc_string)),
                  (S.MODEL_GRAPH, "offset", graph),
                  (S.MODEL_GRAPH_DOC_STRING, "offset", self.optional_string(m.graph.doc_string)),
                  (S.MODEL_METADATA_PROPS, "offset", self.tables(props) if props else None)]
        return self.table(10, fields)

    def resolver(self) -> int:
        entries = []
        for op_id, schema in sorted(self.op_ids.items()):  # sorted: the vectors are keyed
            kinds = []
            for key, args in sorted(schema.kernel_type_str_args().items()):
                pairs = [self.table(2, [(S.ARG_TYPE, "int8", t), (S.ARG_INDEX, "uint32", i)]) for t, i in args]
                kinds.append(self.table(2, [(S.KERNEL_TYPE_STR, "offset", self.string(key)),
                                            (S.KERNEL_TYPE_STR_ARGS, "offset", self.tables(pairs))]))
            entries.append(self.table(2, [(S.OP_ID, "offset", self.string(op_id)),
                                          (S.OP_KERNEL_TYPE_STR_ARGS, "offset", self.tables(kinds))]))
        return self.table(1, [(S.RESOLVER_OP_KERNEL_TYPE_STR_ARGS, "offset", self.tables(entries))])

    def finish(self) -> bytes:
        model = self.model_table()
        resolver = self.resolver()
        version = self.string(S.ORT_VERSION)
        root = self.table(4, [(S.SESSION_ORT_VERSION, "offset", version), (S.SESSION_MODEL, "offset", model),
                              (S.SESSION_KERNEL_TYPE_STR_RESOLVER, "offset", resolver)])
        self.b.Finish(root, file_identifier=S.FILE_IDENTIFIER)
        return bytes(self.b.Output())


def defined_names(g: Graph) -> set:
    """The values ``g`` itself defines: its inputs, initializers and node outputs."""
    names = {vi.name for vi in g.inputs} | {t.name for t in g.initializers}
    names.update(o for n in g.nodes for o in n.outputs if o)
    return names


def _subgraph_uses(g: Graph, found: list, local: set):
    local = local | defined_names(g)
    for node in g.nodes:
        for name in node.inputs:
            if name and name not in local and name not in found:
                found.append(name)
        for a in node.attributes.values():
            for sub in _subgraphs(a):
                _subgraph_uses(sub, found, local)
    for vi in g.outputs:
        if vi.name not in local and vi.name not in found:
            found.append(vi.name)


def _subgraphs(a: Attribute) -> list:
    if a.type == AttrType.GRAPH and a.value is not None:
        return [a.value]
    if a.type == AttrType.GRAPHS and a.value is not None:
        return list(a.value)
    return []


def implicit_inputs(node: Node, visible: set) -> list:
    """The outer-scope values ``node``'s subgraphs read, in order of first use (ORT's implicit inputs)."""
    found = []
    for a in node.attributes.values():
        for sub in _subgraphs(a):
            _subgraph_uses(sub, found, set())
    return [n for n in found if n in visible]


def untyped_values(model: Model) -> list:
    """The main graph's values whose type ``model`` does not declare."""
    g = model.graph
    known = set(g.value_info_map()) | {t.name for t in g.initializers}
    names = []
    for node in g.nodes:
        for name in node.outputs:
            if name and name not in known and name not in names:
                names.append(name)
    return names


def encode_ort_model(model: Model) -> bytes:
    """The ORT format bytes of ``model``.  The types of values the model does not declare come from shape
    inference (runtime.shapes)."""
    missing = untyped_values(model)
    types = infer_types(model, missing) if missing else {}
    return _Writer(model, types).finish()


def _ops(graph: Graph, model: Model, found: set):
    for node in graph.nodes:
        domain = "" if node.domain == "ai.onnx" else node.domain
        schema = find_schema(domain, node.op_type, model.opset(domain) or 0)
        found.add((domain or "ai.onnx", schema.since_version if schema else 0, node.op_type))
        for a in node.attributes.values():
            for sub in _subgraphs(a):
                _ops(sub, model, found)


def required_operators_config(model: Model, ort_path: str) -> str:
    """The ``.required_operators.config`` text that onnxruntime's converter writes beside ``ort_path``
    (the ops a minimal build must include: per domain and schema version, the op types)."""
    found = set()
    _ops(model.graph, model, found)
    lines = ["# Generated from model/s:", f"# - {ort_path}"]
    groups = {}
    for domain, version, op in found:
        groups.setdefault((domain, version), set()).add(op)
    lines += [f"{d};{v};{','.join(sorted(ops))}" for (d, v), ops in sorted(groups.items())]
    return "\n".join(lines) + "\n"
