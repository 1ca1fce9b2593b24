"""Field slots of onnxruntime's ORT model format (onnxruntime/core/flatbuffers/schema/ort.fbs), as compiled
into onnxruntime 1.19.2.  A slot is a field's position in its table; a union takes two (its type, then its
value); a deprecated field keeps its slot."""

FILE_IDENTIFIER = b"ORTM"
ORT_VERSION = "6"  # kOrtModelVersion of onnxruntime 1.19.2: what its writer puts in InferenceSession.ort_version

# table InferenceSession
SESSION_ORT_VERSION, SESSION_MODEL, SESSION_STATE_DEPRECATED, SESSION_KERNEL_TYPE_STR_RESOLVER = range(4)
# table Model
(MODEL_IR_VERSION, MODEL_OPSET_IMPORT, MODEL_PRODUCER_NAME, MODEL_PRODUCER_VERSION, MODEL_DOMAIN,
 MODEL_MODEL_VERSION, MODEL_DOC_STRING, MODEL_GRAPH, MODEL_GRAPH_DOC_STRING, MODEL_METADATA_PROPS) = range(10)
# table OperatorSetId
OPSET_DOMAIN, OPSET_VERSION = range(2)
# table StringStringEntry
ENTRY_KEY, ENTRY_VALUE = range(2)
# table Graph
(GRAPH_INITIALIZERS, GRAPH_NODE_ARGS, GRAPH_NODES, GRAPH_MAX_NODE_INDEX, GRAPH_NODE_EDGES, GRAPH_INPUTS,
 GRAPH_OUTPUTS, GRAPH_SPARSE_INITIALIZERS, GRAPH_RUNTIME_OPTIMIZATIONS) = range(9)
# table Node
(NODE_NAME, NODE_DOC_STRING, NODE_DOMAIN, NODE_SINCE_VERSION, NODE_INDEX, NODE_OP_TYPE, NODE_TYPE,
 NODE_EXECUTION_PROVIDER_TYPE, NODE_INPUTS, NODE_OUTPUTS, NODE_ATTRIBUTES, NODE_INPUT_ARG_COUNTS,
 NODE_IMPLICIT_INPUTS) = range(13)
NODE_TYPE_PRIMITIVE = 0
# table NodeEdge; struct EdgeEnd {node_index: uint32; src_arg_index: int32; dst_arg_index: int32}
EDGE_NODE_INDEX, EDGE_INPUT_EDGES, EDGE_OUTPUT_EDGES = range(3)
EDGE_END_FORMAT = "<Iii"
# table ValueInfo
VALUE_NAME, VALUE_DOC_STRING, VALUE_TYPE = range(3)
# table TypeInfo and its union TypeInfoValue
TYPE_DENOTATION, TYPE_VALUE_TYPE, TYPE_VALUE = range(3)
TYPE_TENSOR, TYPE_SEQUENCE, TYPE_MAP = 1, 2, 3
# table TensorTypeAndShape, Shape, Dimension, DimensionValue
TENSOR_TYPE_ELEM_TYPE, TENSOR_TYPE_SHAPE = range(2)
SHAPE_DIM = 0
DIMENSION_VALUE, DIMENSION_DENOTATION = range(2)
DIM_TYPE, DIM_VALUE, DIM_PARAM = range(3)
DIM_UNKNOWN, DIM_KIND_VALUE, DIM_KIND_PARAM = 0, 1, 2
# table SequenceType, MapType
SEQUENCE_ELEM_TYPE = 0
MAP_KEY_TYPE, MAP_VALUE_TYPE = range(2)
# table Tensor
TENSOR_NAME, TENSOR_DOC_STRING, TENSOR_DIMS, TENSOR_DATA_TYPE, TENSOR_RAW_DATA, TENSOR_STRING_DATA = range(6)
# table Attribute; AttributeType has ONNX's numbering, without TYPE_PROTO(S)
(ATTR_NAME, ATTR_DOC_STRING, ATTR_TYPE, ATTR_F, ATTR_I, ATTR_S, ATTR_T, ATTR_G, ATTR_FLOATS, ATTR_INTS,
 ATTR_STRINGS, ATTR_TENSORS, ATTR_GRAPHS) = range(13)
# table KernelTypeStrResolver, OpIdKernelTypeStrArgsEntry, KernelTypeStrArgsEntry, ArgTypeAndIndex
RESOLVER_OP_KERNEL_TYPE_STR_ARGS = 0
OP_ID, OP_KERNEL_TYPE_STR_ARGS = range(2)
KERNEL_TYPE_STR, KERNEL_TYPE_STR_ARGS = range(2)
ARG_TYPE, ARG_INDEX = range(2)
ARG_INPUT, ARG_OUTPUT = 0, 1
