"""bfloat16, float8 and 4-bit values are held as bit patterns: ops that move or convert them run, an op that
would compute on the bits is refused when the graph is planned, naming the node, the value and its type."""
import os

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import onnxruntime as ort
from onnx_node_data import NODE_DATA, check_node_test, node_tests
from onnxtrain import ir
from onnxtrain.ir import dtypes
from onnxtrain.runtime import Session
from onnxtrain.runtime.feeds import FeedError
from onnxtrain.runtime.plan import GraphError


def model(nodes, inputs, outputs, initializers=()):
    graph = helper.make_graph(nodes, "g", inputs, outputs, initializer=list(initializers))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)], ir_version=10)


def bf16_input(name="x", shape=(2, 3)):
    return helper.make_tensor_value_info(name, TensorProto.BFLOAT16, list(shape))


def f32_output(name="y"):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, None)


@pytest.mark.parametrize("nodes, outputs, wrong", [
    ([helper.make_node("Add", ["x", "x"], ["y"])], [bf16_input("y")], "x"),
    ([helper.make_node("Reshape", ["x", "shape"], ["r"]), helper.make_node("Relu", ["r"], ["y"])],
     [bf16_input("y", (6,))], "r"),
    ([helper.make_node("Cast", ["x"], ["c"], to=TensorProto.FLOAT8E4M3FN),
      helper.make_node("Transpose", ["c"], ["t"]), helper.make_node("Mul", ["t", "t"], ["y"])],
     [helper.make_tensor_value_info("y", TensorProto.FLOAT8E4M3FN, None)], "t"),
], ids=["add", "reshape-relu", "cast-transpose-mul"])
def test_arithmetic_on_bit_patterns_is_refused(nodes, outputs, wrong):
    shape = helper.make_tensor("shape", TensorProto.INT64, [1], [6])
    onnx_model = model(nodes, [bf16_input()], outputs, [shape])
    with pytest.raises(GraphError, match=rf"input '{wrong}' is (bfloat16|float8e4m3fn), which onnxtrain holds as bit "
                                         r"patterns and does not compute \w+ on"):
        Session(ir.load(onnx_model.SerializeToString()))


def test_moving_then_casting_bit_patterns_matches_onnxruntime():
    nodes = [helper.make_node("Transpose", ["x"], ["t"]),
             helper.make_node("Concat", ["t", "t"], ["c"], axis=0),
             helper.make_node("Cast", ["c"], ["y"], to=TensorProto.FLOAT),
             helper.make_node("Add", ["y", "y"], ["z"])]
    onnx_model = model(nodes, [bf16_input()], [helper.make_tensor_value_info("z", TensorProto.FLOAT, None)])
    x = np.random.default_rng(0).standard_normal((2, 3)).astype(np.float32)
    bits = dtypes.to_bits(dtypes.BFLOAT16, x)
    got = Session(ir.load(onnx_model.SerializeToString())).run([bits])[0]
    want = ort.InferenceSession(model([helper.make_node("Cast", ["x"], ["b"], to=TensorProto.BFLOAT16)] + [
        helper.make_node(n.op_type, ["b" if i == "x" else i for i in n.input], n.output,
                         **{a.name: helper.get_attribute_value(a) for a in n.attribute}) for n in nodes],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("z", TensorProto.FLOAT, None)]).SerializeToString(),
        providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    np.testing.assert_array_equal(got, want)


def has_bit_pattern_input(name):
    graph = onnx.load(os.path.join(NODE_DATA, name, "model.onnx")).graph
    return any(vi.type.tensor_type.elem_type in dtypes.BIT_PATTERN_TYPES for vi in graph.input)


FLOAT8 = [TensorProto.FLOAT8E4M3FN, TensorProto.FLOAT8E4M3FNUZ, TensorProto.FLOAT8E5M2, TensorProto.FLOAT8E5M2FNUZ]


def cast_to_float(code, x):
    """Cast(code -> FLOAT) of ``x``: a graph input, or with ``x`` an initializer (raw bits) when given."""
    out = [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)]
    cast = [helper.make_node("Cast", ["x"], ["y"], to=TensorProto.FLOAT)]
    if x is None:
        return model(cast, [helper.make_tensor_value_info("x", code, [None])], out)
    return model(cast, [], out, [helper.make_tensor("x", code, [x.size], x.tobytes(), raw=True)])


@pytest.mark.parametrize("code", FLOAT8 + [TensorProto.BFLOAT16], ids=lambda c: TensorProto.DataType.Name(c))
def test_plain_bit_patterns_fed_are_cast_as_onnxruntime_casts_them(code):
    # every pattern: ORT reads them from an initializer (it refuses a uint8/uint16 feed for these types)
    bits = np.arange(1 << 16, dtype=np.uint16) if code == TensorProto.BFLOAT16 else np.arange(256, dtype=np.uint8)
    want = ort.InferenceSession(cast_to_float(code, bits).SerializeToString(),
                                providers=["CPUExecutionProvider"]).run(None, {})[0]
    got = Session(ir.load(cast_to_float(code, None).SerializeToString())).run({"x": bits})[0]
    np.testing.assert_array_equal(got, want)


BIT_PATTERN_NODE_TESTS = node_tests("test_cast_*", "test_castlike_*", "test_dequantizelinear_*",
                                    "test_quantizelinear_*", excluded=(
                                        # onnx's data truncates to bfloat16 where Cast rounds to nearest even
                                        "test_castlike_FLOAT_to_BFLOAT16", "test_castlike_FLOAT_to_BFLOAT16_expanded"))


@pytest.mark.parametrize("name", [n for n in BIT_PATTERN_NODE_TESTS if has_bit_pattern_input(n)])
def test_onnx_node_tests_fed_plain_bit_patterns(name):
    check_node_test(name, plain_bits=True)


@pytest.mark.parametrize("code, fed, message", [
    (TensorProto.INT4, np.array([3, 16], np.uint8), r"input 'x' is int4: feed one 4-bit pattern \(0\.\.15\) per uint8 "
                                                    r"element, got 16"),
    (TensorProto.FLOAT8E4M3FN, dtypes.to_bits(dtypes.FLOAT8E5M2, np.ones(2, np.float32)),
     "input 'x' is float8e4m3fn, got float8e5m2 bit patterns"),
    (TensorProto.FLOAT8E4M3FN, np.ones(2, np.int8), "input 'x' must have dtype uint8, got int8"),
])
def test_feeds_that_are_not_bit_patterns_of_the_type_are_refused(code, fed, message):
    with pytest.raises(FeedError, match=message):
        Session(ir.load(cast_to_float(code, None).SerializeToString())).run({"x": fed})
