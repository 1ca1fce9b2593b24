"""onnx.proto's field numbers (onnx 1.16): every message's field names, for error messages, and the
TensorProto field that holds each data type's values when raw_data is not used."""
from __future__ import annotations

from . import dtypes

FIELDS = {
    "ModelProto": {1: "ir_version", 2: "producer_name", 3: "producer_version", 4: "domain", 5: "model_version",
                   6: "doc_string", 7: "graph", 8: "opset_import", 14: "metadata_props", 20: "training_info",
                   25: "functions", 26: "configuration"},
    "GraphProto": {1: "node", 2: "name", 5: "initializer", 10: "doc_string", 11: "input", 12: "output",
                   13: "value_info", 14: "quantization_annotation", 15: "sparse_initializer", 16: "metadata_props"},
    "NodeProto": {1: "input", 2: "output", 3: "name", 4: "op_type", 5: "attribute", 6: "doc_string", 7: "domain",
                  8: "overload", 9: "metadata_props"},
    "AttributeProto": {1: "name", 2: "f", 3: "i", 4: "s", 5: "t", 6: "g", 7: "floats", 8: "ints", 9: "strings",
                       10: "tensors", 11: "graphs", 13: "doc_string", 14: "tp", 15: "type_protos", 20: "type",
                       21: "ref_attr_name", 22: "sparse_tensor", 23: "sparse_tensors"},
    "ValueInfoProto": {1: "name", 2: "type", 3: "doc_string", 4: "metadata_props"},
    "TypeProto": {1: "tensor_type", 4: "sequence_type", 5: "map_type", 6: "denotation", 8: "sparse_tensor_type",
                  9: "optional_type"},
    "TypeProto.Tensor": {1: "elem_type", 2: "shape"},
    "TypeProto.SparseTensor": {1: "elem_type", 2: "shape"},
    "TypeProto.Sequence": {1: "elem_type"},
    "TypeProto.Optional": {1: "elem_type"},
    "TypeProto.Map": {1: "key_type", 2: "value_type"},
    "TensorShapeProto": {1: "dim"},
    "TensorShapeProto.Dimension": {1: "dim_value", 2: "dim_param", 3: "denotation"},
    "TensorProto": {1: "dims", 2: "data_type", 3: "segment", 4: "float_data", 5: "int32_data", 6: "string_data",
                    7: "int64_data", 8: "name", 9: "raw_data", 10: "double_data", 11: "uint64_data",
                    12: "doc_string", 13: "external_data", 14: "data_location", 16: "metadata_props"},
    "OperatorSetIdProto": {1: "domain", 2: "version"},
    "StringStringEntryProto": {1: "key", 2: "value"},
    "FunctionProto": {1: "name", 4: "input", 5: "output", 6: "attribute", 7: "node", 8: "doc_string",
                      9: "opset_import", 10: "domain", 11: "attribute_proto", 12: "value_info", 13: "overload",
                      14: "metadata_props"},
}

TYPED_FIELD = {dtypes.FLOAT: 4, dtypes.COMPLEX64: 4, dtypes.DOUBLE: 10, dtypes.COMPLEX128: 10, dtypes.INT64: 7,
               dtypes.UINT32: 11, dtypes.UINT64: 11, dtypes.STRING: 6}
TYPED_FIELD.update((code, 5) for code in dtypes.NAMES if code not in TYPED_FIELD)  # int32_data
