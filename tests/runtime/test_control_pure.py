"""Subgraphs in the runtime (If, Loop, Scan, SequenceMap) built with onnxtrain.ir and checked against plain numpy,
so that they also run inside Pyodide."""
import numpy as np

from onnxtrain.ir.model import Attribute, AttrType, Graph, Model, Node, SequenceType, Tensor, TensorType, ValueInfo
from onnxtrain.runtime import Session

IN_PYODIDE = True  # pure numpy: also run inside Pyodide by tests/browser/test_in_pyodide.py
FLOAT, INT64, BOOL = 1, 7, 9


def vi(name, elem=FLOAT, shape=None):
    return ValueInfo(name, TensorType(elem, shape))


def graph_attr(name, graph):
    return Attribute(name, AttrType.GRAPH, graph)


def run(nodes, inputs, outputs, feeds, initializers=()):
    model = Model(graph=Graph(name="g", nodes=nodes, inputs=inputs, outputs=outputs, initializers=list(initializers)),
                  opset_imports={"": 17})
    return Session(model).run(feeds)


def test_if_branches_read_outer_values():
    then = Graph(name="then", nodes=[Node("Mul", ["x", "w"], ["t"])], outputs=[vi("t")])
    other = Graph(name="else", nodes=[Node("Neg", ["x"], ["e"])], outputs=[vi("e")])
    node = Node("If", ["c"], ["y"], attributes={"then_branch": graph_attr("then_branch", then),
                                                 "else_branch": graph_attr("else_branch", other)})
    w = Tensor("w", np.array([2.0, 3.0], np.float32), FLOAT)
    x = np.array([1.5, -1.0], np.float32)
    for c, want in ((True, x * w.data), (False, -x)):
        (y,) = run([node], [vi("c", BOOL, []), vi("x", shape=[2])], [vi("y")], {"c": np.array(c), "x": x}, [w])
        np.testing.assert_array_equal(y, want)


def test_loop_carries_a_value_and_stacks_scan_outputs():
    body = Graph(name="body", nodes=[
        Node("Identity", ["cond_in"], ["cond_out"]),
        Node("Cast", ["i"], ["fi"], attributes={"to": Attribute("to", AttrType.INT, FLOAT)}),
        Node("Mul", ["fi", "step"], ["inc"]),
        Node("Add", ["acc_in", "inc"], ["acc_out"]),
        Node("Identity", ["acc_out"], ["each"])],
        inputs=[vi("i", INT64, []), vi("cond_in", BOOL, []), vi("acc_in", shape=[2])],
        outputs=[vi("cond_out", BOOL, []), vi("acc_out", shape=[2]), vi("each", shape=[2])])
    node = Node("Loop", ["M", "", "acc0"], ["acc", "all"], attributes={"body": graph_attr("body", body)})
    step = np.array([1.0, -2.0], np.float32)
    for trips in (4, 0):
        acc, stacked = run([node], [vi("M", INT64, []), vi("acc0", shape=[2]), vi("step", shape=[2])],
                           [vi("acc", shape=[2]), vi("all", shape=[None, 2])],
                           {"M": np.array(trips, np.int64), "acc0": np.zeros(2, np.float32), "step": step})
        partial = np.cumsum([i * step for i in range(trips)], axis=0).reshape(trips, 2).astype(np.float32)
        np.testing.assert_allclose(stacked, partial)
        np.testing.assert_allclose(acc, partial[-1] if trips else np.zeros(2))


def test_scan_reverses_and_accumulates():
    body = Graph(name="body", nodes=[Node("Add", ["s_in", "x_t"], ["s_out"]), Node("Identity", ["s_out"], ["y_t"])],
                 inputs=[vi("s_in", shape=[3]), vi("x_t", shape=[3])],
                 outputs=[vi("s_out", shape=[3]), vi("y_t", shape=[3])])
    node = Node("Scan", ["s0", "x"], ["s", "ys"], attributes={
        "body": graph_attr("body", body), "num_scan_inputs": Attribute("num_scan_inputs", AttrType.INT, 1),
        "scan_input_directions": Attribute("scan_input_directions", AttrType.INTS, [1])})
    x = np.arange(12, dtype=np.float32).reshape(4, 3)
    s, ys = run([node], [vi("s0", shape=[3]), vi("x", shape=[4, 3])], [vi("s", shape=[3]), vi("ys", shape=[4, 3])],
                {"s0": np.zeros(3, np.float32), "x": x})
    np.testing.assert_array_equal(ys, np.cumsum(x[::-1], axis=0))
    np.testing.assert_array_equal(s, x.sum(axis=0))


def test_sequence_map_over_a_list():
    body = Graph(name="body", nodes=[Node("ReduceSum", ["t", "axes"], ["r"],
                                          attributes={"keepdims": Attribute("keepdims", AttrType.INT, 0)})],
                 inputs=[vi("t", shape=None)], outputs=[vi("r", shape=None)])
    node = Node("SequenceMap", ["seq"], ["sums"], attributes={"body": graph_attr("body", body)})
    axes = Tensor("axes", np.array([0], np.int64), INT64)
    seq = [np.arange(n, dtype=np.float32) for n in (1, 4, 3)]
    (sums,) = run([node], [ValueInfo("seq", SequenceType(TensorType(FLOAT, None)))],
                  [ValueInfo("sums", SequenceType(TensorType(FLOAT, None)))], {"seq": seq}, [axes])
    assert [float(v) for v in sums] == [0.0, 6.0, 3.0]
