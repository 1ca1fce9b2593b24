"""bfloat16, float8 and 4-bit values are held as bit patterns: ops that move or convert them run, an op that
would compute on the bits is refused when the graph is planned, naming the node, the value and its type."""
import numpy as np
import pytest
from onnx import TensorProto, helper

import onnxruntime as ort
from onnxtrain import ir
from onnxtrain.ir import dtypes
from onnxtrain.runtime import Session
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
