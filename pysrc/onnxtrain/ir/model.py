"""The in-memory ONNX model: plain dataclasses that mirror onnx.proto.

Values are referred to by name, as in ONNX itself.  Tensor payloads are numpy
arrays.  Every field a training artifact uses is modelled; fields this
package does not interpret (training_info, sparse initializers, unknown
future fields) are kept as raw protobuf bytes so that decode -> encode loses
nothing.  ``empty_fields`` records the fields a file set to "" or 0 explicitly
(proto2 keeps their presence), so that they are written back; it is an immutable set (replaced,
never changed in place), so that the many objects without any share one.  ``layout`` is set on
messages decoded from a file: their fields' keys in the order read, and the bytes of fields this
package does not model (see wire.Reader.layout and wire.LayoutWriter), so that the encoder writes the
same bytes back.  It
holds no values of modelled fields, so editing a decoded model never writes stale data; objects built
in code have None and encode in the codec's own order.  All classes have slots: a file can hold
millions of small messages.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional, Union

import numpy as np

#: In Model.empty_fields: the file wrote the default opset import without its domain field.
OPSET_DOMAIN_ABSENT = "opset_imports[''].domain absent"


@dataclass(slots=True)
class Tensor:
    """An ONNX TensorProto.  ``data`` has the tensor's shape.

    ``data_type`` is the ONNX TensorProto.DataType code; for types numpy lacks
    (bfloat16, float8, 4-bit) ``data`` holds the raw bit patterns (uint16/uint8;
    one uint8 per 4-bit element, see ir.dtypes).  STRING tensors hold an object
    array of ``bytes``.  Decoded data may be a read-only view: copy before writing.
    """
    name: str
    data: np.ndarray
    data_type: int
    doc_string: str = ""
    metadata_props: dict = field(default_factory=dict)
    # External data as read from the file (location, offset, length, checksum);
    # ``data`` is already resolved.  Kept so an encoder may write it back out.
    external_data: Optional[dict] = None
    # Decoded from the typed fields (float_data, int64_data, ...) rather than raw_data; the encoder
    # writes it back the same way.
    typed_storage: bool = field(default=False, compare=False, repr=False)
    empty_fields: frozenset = field(default=frozenset(), compare=False, repr=False)
    layout: Union[bytes, tuple, None] = field(default=None, compare=False, repr=False)

    @property
    def dims(self) -> tuple:
        return tuple(self.data.shape)


# ---- types (TypeProto) ---------------------------------------------------------------------------

Dim = Union[int, str, None]  # a fixed size, a symbolic name (dim_param), or unknown


@dataclass(slots=True)
class TensorType:
    elem_type: int  # None only for a decoded TypeProto that has no type set at all
    shape: Optional[list] = None  # None: rank unknown; else one Dim per axis
    denotation: str = ""
    dim_denotations: Optional[list] = None  # per-axis denotation strings, when present


@dataclass(slots=True)
class SparseTensorType:
    elem_type: int
    shape: Optional[list] = None
    denotation: str = ""


@dataclass(slots=True)
class SequenceType:
    elem_type: Optional["Type"]
    denotation: str = ""


@dataclass(slots=True)
class OptionalType:
    elem_type: Optional["Type"]
    denotation: str = ""


@dataclass(slots=True)
class MapType:
    key_type: int
    value_type: Optional["Type"]
    denotation: str = ""


Type = Union[TensorType, SparseTensorType, SequenceType, OptionalType, MapType]


@dataclass(slots=True)
class ValueInfo:
    name: str
    type: Optional[Type] = None
    doc_string: str = ""
    metadata_props: dict = field(default_factory=dict)
    empty_fields: frozenset = field(default=frozenset(), compare=False, repr=False)
    layout: Union[bytes, tuple, None] = field(default=None, compare=False, repr=False)


# ---- attributes and nodes ------------------------------------------------------------------------

class AttrType:
    """AttributeProto.AttributeType codes."""
    UNDEFINED = 0
    FLOAT = 1
    INT = 2
    STRING = 3
    TENSOR = 4
    GRAPH = 5
    SPARSE_TENSOR = 11
    TYPE_PROTO = 13
    FLOATS = 6
    INTS = 7
    STRINGS = 8
    TENSORS = 9
    GRAPHS = 10
    SPARSE_TENSORS = 12
    TYPE_PROTOS = 14


@dataclass(slots=True)
class Attribute:
    """An AttributeProto.  ``value`` by type: FLOAT float, INT int, STRING bytes,
    TENSOR Tensor, GRAPH Graph, TYPE_PROTO Type, SPARSE_TENSOR raw bytes,
    and lists of those for the plural types; None when the file gives no
    value (a function-body reference, ``ref_attr_name``)."""
    name: str
    type: int
    value: Any = None
    ref_attr_name: str = ""
    doc_string: str = ""
    empty_fields: frozenset = field(default=frozenset(), compare=False, repr=False)
    layout: Union[bytes, tuple, None] = field(default=None, compare=False, repr=False)


@dataclass(slots=True)
class Node:
    op_type: str
    inputs: list          # names; "" marks an omitted optional input
    outputs: list         # names; "" marks an omitted optional output
    name: str = ""
    domain: str = ""      # "" and "ai.onnx" both mean the default domain
    attributes: dict = field(default_factory=dict)  # name -> Attribute, in file order
    doc_string: str = ""
    overload: str = ""
    metadata_props: dict = field(default_factory=dict)
    empty_fields: frozenset = field(default=frozenset(), compare=False, repr=False)
    layout: Union[bytes, tuple, None] = field(default=None, compare=False, repr=False)

    def attr(self, name: str, default: Any = None) -> Any:
        a = self.attributes.get(name)
        return default if a is None else a.value


# ---- graphs, functions, models -------------------------------------------------------------------

@dataclass(slots=True)
class Graph:
    name: str = ""
    nodes: list = field(default_factory=list)            # [Node]
    inputs: list = field(default_factory=list)           # [ValueInfo]
    outputs: list = field(default_factory=list)          # [ValueInfo]
    initializers: list = field(default_factory=list)     # [Tensor]
    value_info: list = field(default_factory=list)       # [ValueInfo]
    doc_string: str = ""
    sparse_initializers: list = field(default_factory=list)  # raw SparseTensorProto bytes
    quantization_annotation: list = field(default_factory=list)  # raw TensorAnnotation bytes
    metadata_props: dict = field(default_factory=dict)
    empty_fields: frozenset = field(default=frozenset(), compare=False, repr=False)
    layout: Union[bytes, tuple, None] = field(default=None, compare=False, repr=False)

    def initializer_map(self) -> dict:
        return {t.name: t for t in self.initializers}

    def value_info_map(self) -> dict:
        """Every ValueInfo the graph declares (inputs, outputs, value_info) by name."""
        out = {v.name: v for v in self.value_info}
        out.update({v.name: v for v in self.outputs})
        out.update({v.name: v for v in self.inputs})
        return out


@dataclass(slots=True)
class Function:
    name: str
    domain: str = ""
    inputs: list = field(default_factory=list)       # names
    outputs: list = field(default_factory=list)      # names
    attributes: list = field(default_factory=list)   # attribute names without defaults
    attribute_protos: list = field(default_factory=list)  # [Attribute] with defaults
    nodes: list = field(default_factory=list)
    doc_string: str = ""
    opset_imports: dict = field(default_factory=dict)
    overload: str = ""
    value_info: list = field(default_factory=list)
    metadata_props: dict = field(default_factory=dict)
    empty_fields: frozenset = field(default=frozenset(), compare=False, repr=False)
    layout: Union[bytes, tuple, None] = field(default=None, compare=False, repr=False)


@dataclass(slots=True)
class Model:
    graph: Graph
    ir_version: int = 8
    opset_imports: dict = field(default_factory=lambda: {"": 17})  # domain -> version, file order
    producer_name: str = ""
    producer_version: str = ""
    domain: str = ""
    model_version: int = 0
    doc_string: str = ""
    metadata_props: dict = field(default_factory=dict)
    functions: list = field(default_factory=list)       # [Function]
    training_info: list = field(default_factory=list)   # raw TrainingInfoProto bytes
    configuration: list = field(default_factory=list)   # raw DeviceConfigurationProto bytes
    empty_fields: frozenset = field(default=frozenset(), compare=False, repr=False)
    layout: Union[bytes, tuple, None] = field(default=None, compare=False, repr=False)

    def opset(self, domain: str = "") -> Optional[int]:
        """The imported version of ``domain`` ("" and "ai.onnx" are the same)."""
        if domain in ("", "ai.onnx"):
            return self.opset_imports.get("", self.opset_imports.get("ai.onnx"))
        return self.opset_imports.get(domain)
