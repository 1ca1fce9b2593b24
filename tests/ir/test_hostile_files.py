"""Mutated and hostile files: each case found by the fuzzing campaign of issue 10 gets a typed onnxtrain
error that names the problem, and decoding stays within its stated memory bound."""

import tracemalloc

import flatbuffers
import numpy as np
import onnx
import onnx.defs
import pytest

import onnxtrain.ops  # noqa: F401  (registers the kernels)
from onnxtrain.checkpoint import CheckpointData, CheckpointError, OptimizerGroup, read_checkpoint, write_checkpoint
from onnxtrain.checkpoint import schema as S
from onnxtrain.checkpoint.writer import _optimizer_group, _property_bag, _vector
from onnxtrain.ir import ModelDecodeError, decode_model, encode_model
from onnxtrain.ir.decode import OBJECT_BYTES_PER_FILE_BYTE
from onnxtrain.ir.model import Attribute, AttrType, Graph, Model, Node, Tensor, TensorType, ValueInfo
from onnxtrain.ir.wire import varint_bytes
from onnxtrain.ops.registry import KERNELS
from onnxtrain.runtime import GraphError, RunError, Session
from onnxtrain.runtime.attributes import kernel_attributes, type_name

FLOAT = 1


def vi(name, shape=None):
    return ValueInfo(name, TensorType(FLOAT, shape))


def one_node_model(op, attributes, inputs=("x",), x_shape=None, initializers=()):
    node = Node(op, list(inputs), ["y"], name="n1", attributes={a.name: a for a in attributes})
    graph = Graph(nodes=[node], inputs=[vi("x", x_shape)], outputs=[vi("y")], initializers=list(initializers))
    return Model(graph=graph, opset_imports={"": 17})


def decoded(model):
    return decode_model(encode_model(model))


# ---- checkpoints ---------------------------------------------------------------------------------

def patched_dims_checkpoint(dims):
    """A checkpoint whose one tensor (no data) declares ``dims``: written with a placeholder shape whose
    dims are then overwritten in place."""
    body = write_checkpoint(CheckpointData(trainable={"w": np.zeros((0, 7919, 7), np.float32)}))
    marker = np.array([0, 7919, 7], "<i8").tobytes()
    assert body.count(marker) == 1
    return body.replace(marker, np.array(dims, "<i8").tobytes())


def test_checkpoint_dims_whose_int64_product_wraps_to_zero():
    body = patched_dims_checkpoint([2**32, 2**32, 1])
    with pytest.raises(CheckpointError, match=r"tensor 'w' has 0 bytes of raw_data, but dims \[4294967296, "
                                              r"4294967296, 1\] of float32 need 73786976294838206464"):
        read_checkpoint(body)


def test_checkpoint_dims_product_beyond_2_63_is_named_without_printing_it():
    body = patched_dims_checkpoint([2**62, 2**62, 2**62])
    with pytest.raises(CheckpointError, match=r"need 2\*\*188 or more"):
        read_checkpoint(body)


def _tensor_table(b, name, dims, raw_off):
    name_off = b.CreateString(name)
    dims_off = b.CreateNumpyVector(np.asarray(dims, "<i8"))
    b.StartObject(7)
    b.PrependUOffsetTRelativeSlot(S.TENSOR_NAME, name_off, 0)
    b.PrependUOffsetTRelativeSlot(S.TENSOR_DIMS, dims_off, 0)
    b.PrependInt32Slot(S.TENSOR_DATA_TYPE, 1, 0)
    b.PrependUOffsetTRelativeSlot(S.TENSOR_RAW_DATA, raw_off, 0)
    return b.EndObject()


def _checkpoint(b, trainable, groups=None):
    trainable, frozen = _vector(b, trainable), _vector(b, [])
    b.StartObject(4)
    b.PrependUOffsetTRelativeSlot(S.MODULE_REQUIRES_GRAD, trainable, 0)
    b.PrependUOffsetTRelativeSlot(S.MODULE_FROZEN, frozen, 0)
    module = b.EndObject()
    bag = _property_bag(b, {})
    b.StartObject(4)
    b.PrependInt32Slot(S.CHECKPOINT_VERSION, S.CHECKPOINT_VERSION_SUPPORTED, 0)
    b.PrependUOffsetTRelativeSlot(S.CHECKPOINT_MODULE_STATE, module, 0)
    if groups is not None:
        b.PrependUOffsetTRelativeSlot(S.CHECKPOINT_OPTIMIZER_GROUPS, groups, 0)
    b.PrependUOffsetTRelativeSlot(S.CHECKPOINT_PROPERTY_BAG, bag, 0)
    b.Finish(b.EndObject(), file_identifier=S.FILE_IDENTIFIER)
    return bytes(b.Output())


def peak_bytes(fn, *args):
    tracemalloc.start()
    try:
        fn(*args)
    except Exception as e:  # the error is checked by the caller
        error = e
    else:
        error = None
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return peak, error


def test_optimizer_groups_aliasing_one_table_are_refused_without_growing_memory():
    b = flatbuffers.Builder(1 << 20)
    moments = {"momentum0": np.ones(250_000, np.float32), "momentum1": np.ones(250_000, np.float32)}
    group = _optimizer_group(b, OptimizerGroup(states={"w": moments}), None)
    groups = _vector(b, [group] * 1000)  # 1000 offsets to the one 2 MB group: 2 GB once decoded
    body = _checkpoint(b, [], groups)
    assert len(body) < 2_100_000
    peak, error = peak_bytes(read_checkpoint, body)
    assert isinstance(error, CheckpointError)
    assert "OptimizerGroup table at offset" in str(error) and "referenced more than once" in str(error)
    assert peak < 3 * len(body)


def test_tensors_sharing_one_data_vector_are_refused_without_growing_memory():
    b = flatbuffers.Builder(1 << 20)
    raw = b.CreateNumpyVector(np.zeros(1 << 20, np.uint8))
    tensors = [_tensor_table(b, f"w{i}", [1 << 18], raw) for i in range(500)]  # 500 x 1 MB from one MB
    body = _checkpoint(b, tensors)
    peak, error = peak_bytes(read_checkpoint, body)
    assert isinstance(error, CheckpointError), error
    assert "more than the" in str(error) and "(shared data)" in str(error)
    assert peak < 3 * len(body)


def test_a_real_runtime_checkpoint_reads_within_the_bound():
    data = CheckpointData(trainable={"w": np.ones((300, 300), np.float32)}, properties={"epoch": 3},
                          optimizer_groups=[OptimizerGroup(states={"w": {"momentum0": np.zeros((300, 300), np.float32),
                                                                          "momentum1": np.zeros((300, 300), np.float32)}})])
    body = write_checkpoint(data)
    peak, error = peak_bytes(read_checkpoint, body)
    assert error is None
    assert peak < 1.5 * len(body)


# ---- ONNX decoding -------------------------------------------------------------------------------

def field(number, payload=b""):
    return varint_bytes(number << 3 | 2) + varint_bytes(len(payload)) + payload


def model_bytes(graph=b"", extra=b""):
    return field(7, graph) + b"\x08\x08" + extra


def test_dims_product_with_more_than_4300_digits_gives_a_short_error():
    dims = b"".join(varint_bytes(2**62) for _ in range(700))  # product: 2**43400, 13,000 digits
    tensor = field(1, dims) + b"\x10\x01" + field(8, b"big") + field(9)
    with pytest.raises(ModelDecodeError, match=r"TensorProto 'big': dims \[4611686018427387904, .*\(700 dims\)\] "
                                               r"declare 2\*\*43400 or more values") as e:
        decode_model(model_bytes(field(5, tensor)))
    assert len(str(e.value)) < 400


def test_a_million_empty_nodes_are_refused_at_the_first():
    data = model_bytes(field(1) * 1_000_000)
    assert len(data) > 2_000_000
    peak, error = peak_bytes(decode_model, data)
    assert isinstance(error, ModelDecodeError)
    assert "NodeProto at offset" in str(error) and "has no op_type" in str(error)
    assert peak < 100_000


A = field(4, b"A")
N = 50_000
T = 15_000  # tensors: numpy arrays are slow to trace
FLOODS = {  # the smallest messages of each kind, repeated: the most objects per byte a file can make
    "nodes": model_bytes(field(1, A) * N),
    "graph inputs": model_bytes(field(11) * N),
    "typed value infos": model_bytes(field(13, field(2)) * N),
    "attributes": model_bytes(field(1, A + b"".join(field(5, b"\xa0\x01\x01" + field(1, b"%d" % i))
                                                    for i in range(N)))),
    "subgraphs": model_bytes(field(1, A + field(5, b"\xa0\x01\x0a" + field(11) * N))),
    "functions": model_bytes(b"", field(25) * N),
    "function nodes": model_bytes(b"", field(25, field(7, A) * N)),
    "empty tensors": model_bytes(field(5, b"\x0a\x01\x00\x10\x01") * T),
    "empty raw tensors": model_bytes(field(5, b"\x0a\x01\x00\x10\x01" + field(9)) * T),
    "tensor attributes": model_bytes(field(1, A + field(5, b"\xa0\x01\x09" + field(10, b"\x0a\x01\x00\x10\x01") * T))),
    "type protos": model_bytes(field(1, A + field(5, b"\xa0\x01\x0e" + field(15) * N))),
    "packed ints": model_bytes(field(1, A + field(5, b"\xa0\x01\x07" + field(8, b"\x80\x02" * N)))),
    "node input names": model_bytes(field(1, A + field(1, b"ab") * N)),
}


@pytest.mark.slow
@pytest.mark.parametrize("kind", sorted(FLOODS))
def test_decoding_memory_is_bounded_by_the_file_size(kind):
    """The stated bound: the decoded objects take at most OBJECT_BYTES_PER_FILE_BYTE (100) times the
    file's size plus 2 MiB; floods that would exceed it are refused."""
    data = FLOODS[kind]
    peak, error = peak_bytes(decode_model, data)
    assert error is None or isinstance(error, ModelDecodeError), error
    if error is not None:
        assert "a flood of empty messages" in str(error)
    assert peak <= OBJECT_BYTES_PER_FILE_BYTE * len(data) + (2 << 20), (kind, peak / len(data))


@pytest.mark.slow
def test_subgraph_and_function_floods_are_refused():
    for kind in ("subgraphs", "functions"):
        with pytest.raises(ModelDecodeError, match="more than 100 times its"):
            decode_model(FLOODS[kind])


def test_real_models_are_far_below_the_bound(tmp_path):
    from ort_cases import small_mlp_artifacts
    art = small_mlp_artifacts(tmp_path)
    for name in ("training_model.onnx", "eval_model.onnx", "optimizer_model.onnx"):
        data = (art / name).read_bytes()
        peak, error = peak_bytes(decode_model, data)
        assert error is None
        assert peak < 20 * len(data) + (1 << 20)


# ---- attributes when the plan is built -----------------------------------------------------------

def test_an_attribute_of_the_wrong_type_names_node_op_attribute_and_types():
    model = one_node_model("MaxPool", [Attribute("kernel_shape", AttrType.FLOAT, 2.0)], x_shape=[1, 1, 4, 4])
    with pytest.raises(GraphError, match=r"ai.onnx::MaxPool node 'n1': attribute 'kernel_shape' has type FLOAT, "
                                         r"expected INTS"):
        Session(decoded(model))


def test_a_tensor_attribute_without_a_value():
    model = one_node_model("ConstantOfShape", [Attribute("value", AttrType.TENSOR, None)])
    data = encode_model(model)
    with pytest.raises(GraphError, match=r"ConstantOfShape node 'n1': attribute 'value' is declared TENSOR but "
                                         r"holds no TENSOR value"):
        Session(decode_model(data))


def test_an_int_attribute_whose_file_sets_only_the_type():
    model = one_node_model("Softmax", [Attribute("axis", AttrType.INT, None)])
    with pytest.raises(GraphError, match="attribute 'axis' is declared INT but holds no INT value"):
        Session(decode_model(encode_model(model)))


def test_an_attribute_named_like_an_input_is_not_an_attribute():
    model = one_node_model("Gemm", [Attribute("C", AttrType.FLOAT, 1.0)], inputs=("x", "x"))
    with pytest.raises(GraphError, match="does not support attribute 'C'"):
        Session(model)


def _schema(domain, op, since, until):
    for version in range(until, since - 1, -1):
        try:
            return onnx.defs.get_schema(op, version, domain)
        except onnx.defs.SchemaError:
            continue
    return None


def test_kernel_attribute_types_match_the_onnx_schemas():
    """Every attribute of every kernel with an ONNX schema has the schema's type."""
    checked = 0
    for (domain, op), entries in KERNELS.items():
        if domain not in ("", "ai.onnx.preview.training"):
            continue
        for i, (since, fn) in enumerate(entries):
            until = entries[i + 1][0] - 1 if i + 1 < len(entries) else 21
            schema = _schema(domain, op, since, until)
            if schema is None:
                continue  # ORT's own ops in the default domain (MaxPoolGrad, SparseSoftmaxCrossEntropy, ...)
            for name, kind in kernel_attributes(fn).items():
                spec = schema.attributes.get(name)
                assert spec is not None, f"{op} (since {since}): '{name}' is not an attribute of the schema"
                assert type_name(kind) == onnx.AttributeProto.AttributeType.Name(spec.type), (op, since, name)
                checked += 1
    assert checked > 150


# ---- per-axis attributes against the input's rank ----------------------------------------------

@pytest.mark.parametrize("op,attributes,message", [
    ("MaxPool", {"kernel_shape": [2] * 30}, r"kernel_shape \[2, 2, 2, 2, 2, 2, 2, 2, \.\.\.\] has 30 values, but "
                                             r"the input has 2 spatial axes"),
    ("AveragePool", {"kernel_shape": [2] * 30}, "kernel_shape .* has 30 values"),
    ("MaxPool", {"kernel_shape": [2, 2], "strides": [1] * 25}, "strides .* has 25 values"),
    ("MaxPool", {"kernel_shape": [2, 2], "dilations": [1, 1, 1]}, r"dilations \[1, 1, 1\] has 3 values"),
    ("MaxPool", {"kernel_shape": [2, 2], "pads": [0, 0]}, r"pads \[0, 0\] has 2 values, but the input has 2 "
                                                          r"spatial axes \(4 needed\)"),
    ("MaxPool", {"kernel_shape": [2, 0]}, r"kernel_shape \[2, 0\] holds a value below 1"),
    ("MaxPool", {"kernel_shape": [2, 2], "strides": [0, 1]}, r"strides \[0, 1\] holds a value below 1"),
    ("MaxPool", {"kernel_shape": [9, 2]}, r"kernel_shape \[9, 2\] with dilations \[1, 1\] does not fit "
                                            r"the input's spatial shape \[4, 4\]"),
    ("Conv", {"kernel_shape": [1] * 30}, "kernel_shape .* has 30 values"),
])
def test_per_axis_attributes_longer_than_the_spatial_axes(op, attributes, message):
    attrs = [Attribute(k, AttrType.INTS, v) for k, v in attributes.items()]
    inputs = ("x", "w") if op == "Conv" else ("x",)
    inits = [Tensor("w", np.ones((1, 1, 1, 1), np.float32), FLOAT)] if op == "Conv" else []
    session = Session(decoded(one_node_model(op, attrs, inputs=inputs, x_shape=[1, 1, 4, 4], initializers=inits)))
    with pytest.raises(RunError, match=f"{op} node 'n1' failed .*: ValueError: {message}"):
        session.run([np.ones((1, 1, 4, 4), np.float32)])


def test_conv_transpose_checks_its_per_axis_attributes():
    attrs = [Attribute("strides", AttrType.INTS, [1] * 20)]
    model = one_node_model("ConvTranspose", attrs, inputs=("x", "w"), x_shape=[1, 1, 4, 4],
                           initializers=[Tensor("w", np.ones((1, 1, 2, 2), np.float32), FLOAT)])
    with pytest.raises(RunError, match="strides .* has 20 values"):
        Session(decoded(model)).run([np.ones((1, 1, 4, 4), np.float32)])


def test_max_pool_grad_refuses_a_declared_input_shape_that_does_not_pool_to_dy():
    """dX is sized from the graph's value_info: a mutated declaration must not allocate 4 TB."""
    ints = [Attribute("kernel_shape", AttrType.INTS, [2, 2]), Attribute("strides", AttrType.INTS, [2, 2])]
    node = Node("MaxPoolGrad", ["dy", "idx"], ["dx"], name="g", attributes={a.name: a for a in ints})
    graph = Graph(nodes=[node], inputs=[vi("dy", [1, 1, 2, 2]), ValueInfo("idx", TensorType(7, [1, 1, 2, 2]))],
                  outputs=[vi("dx", [1, 1, 2**20, 2**20])])
    session = Session(decoded(Model(graph=graph, opset_imports={"": 17})))
    dy, idx = np.ones((1, 1, 2, 2), np.float32), np.array([0, 2, 8, 10], np.int64).reshape(1, 1, 2, 2)
    peak, error = peak_bytes(session.run, [dy, idx])
    assert isinstance(error, RunError)
    assert (r"the MaxPool input shape [1, 1, 1048576, 1048576] in the graph's value_info pools to "
            r"[1, 1, 524288, 524288], not to dY's shape [1, 1, 2, 2]") in str(error)
    assert peak < 1 << 20
    graph.outputs = [vi("dx", [1, 1, 4, 4])]
    dx = Session(decoded(Model(graph=graph, opset_imports={"": 17}))).run([dy, idx])[0]
    assert dx.shape == (1, 1, 4, 4) and dx.sum() == 4
