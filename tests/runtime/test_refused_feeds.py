"""Session.run refuses a feed named after a value that is not a graph input (an initializer, an intermediate,
an unknown name), as onnxruntime does, rather than ignoring it."""
import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import onnxruntime as ort
from onnxtrain import ir
from onnxtrain.runtime import FeedError, Session


def add_relu():
    """y = relu(x + b), b an initializer (not an input), h the intermediate."""
    graph = helper.make_graph(
        [helper.make_node("Add", ["x", "b"], ["h"]), helper.make_node("Relu", ["h"], ["y"])], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])],
        initializer=[numpy_helper.from_array(np.ones(2, np.float32), "b")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString()


@pytest.mark.parametrize("name", ["b", "h", "labels"], ids=["initializer", "intermediate", "unknown"])
def test_a_feed_that_is_not_an_input_is_refused_as_onnxruntime_refuses_it(name):
    feeds = {"x": np.zeros(2, np.float32), name: np.full(2, 5, np.float32)}
    with pytest.raises(ort.capi.onnxruntime_pybind11_state.InvalidArgument, match=f"Invalid input name: {name}"):
        ort.InferenceSession(add_relu(), providers=["CPUExecutionProvider"]).run(None, feeds)
    with pytest.raises(FeedError, match=rf"'{name}' is not an input of the graph \(inputs: \['x'\]\)"):
        Session(ir.load(add_relu())).run(feeds)
