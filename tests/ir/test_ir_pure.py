"""The model codec on its own, with numpy as the only reference, so that the same tests also run inside Pyodide."""
import re

import numpy as np

from onnxtrain import ir
from onnxtrain.ir.model import Attribute, AttrType, Graph, Model, Node, Tensor, TensorType, ValueInfo

IN_PYODIDE = True  # pure numpy: also run inside Pyodide by tests/browser/test_in_pyodide.py


def small_model():
    w = Tensor("w", np.arange(12, dtype=np.float32).reshape(3, 4), 1)
    idx = Tensor("idx", np.array([2, 0], np.int64), 7)
    nodes = [Node("Gemm", ["x", "w"], ["y"], name="gemm",
                  attributes={"transB": Attribute("transB", AttrType.INT, 1),
                              "alpha": Attribute("alpha", AttrType.FLOAT, 0.5)}),
             Node("Gather", ["y", "idx"], ["z"], attributes={"axis": Attribute("axis", AttrType.INT, 1)})]
    graph = Graph(name="g", nodes=nodes, inputs=[ValueInfo("x", TensorType(1, ["n", 4]))],
                  outputs=[ValueInfo("z", TensorType(1, ["n", 2]))], initializers=[w, idx])
    return Model(graph=graph, opset_imports={"": 17}, producer_name="test", metadata_props={"k": "v"})


def test_ir_encode_decode_round_trip():
    model = small_model()
    data = ir.to_bytes(model)
    back = ir.load(data)
    assert ir.to_bytes(back) == data
    assert back.graph.nodes[0].attr("alpha") == 0.5
    assert back.graph.inputs[0].type.shape == ["n", 4]
    np.testing.assert_array_equal(back.graph.initializers[0].data, model.graph.initializers[0].data)
    assert back.metadata_props == {"k": "v"}


# What a model cut short is refused with: the field whose bytes ran out, or the graph it no longer has.
TRUNCATED = re.compile(r"^ModelProto(\.\w+: (truncated varint|length \d+ exceeds the \d+ bytes left) at offset \d+"
                       r"| has no graph)")


def test_ir_rejects_truncated_bytes():
    """Cut inside a field, a model is refused, naming the field; cut between two fields, it is the shorter model
    (protobuf has no end marker), so it must decode to exactly those bytes and lack what was cut."""
    data = ir.to_bytes(small_model())
    refused = set()
    for cut in range(1, len(data)):
        try:
            back = ir.load(data[:cut])
        except ir.ModelDecodeError as e:
            assert TRUNCATED.match(str(e)), f"cut at {cut}: {e}"
            refused.add(str(e).split(":")[0].split(" ")[0])
            continue
        assert ir.to_bytes(back) == data[:cut], f"cut at {cut}: decoded to other bytes"
        assert back.metadata_props != {"k": "v"}, f"cut at {cut}: decoded as the whole model"
    assert {"ModelProto", "ModelProto.ir_version", "ModelProto.graph", "ModelProto.opset_import",
            "ModelProto.metadata_props"} <= refused
